//! Running what the tool measures, apart from the commands that ask for it: one kernel's run
//! ([`run`]), the rayon programs' two builds ([`rayon_builds`]), the cache model's runs
//! ([`locality`]) and the simulated task collections ([`dist`]). Nothing here imports a
//! command or a renderer.

pub(crate) mod dist;
pub(crate) mod locality;
pub(crate) mod rayon_builds;
pub(crate) mod run;
