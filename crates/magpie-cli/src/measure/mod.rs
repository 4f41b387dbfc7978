//! Running what the tool measures, apart from the commands that ask for it: the rayon
//! programs' two builds ([`rayon_builds`]).

pub(crate) mod rayon_builds;
