//! Running what the tool measures, apart from the commands that ask for it: the suite's runs
//! ([`suite`]), one kernel's run ([`run`]), a traced run ([`trace`]), the rayon programs' two
//! builds ([`rayon_builds`]), the cache model's runs ([`locality`]), the simulated task collections
//! ([`dist`]), a splicing run ([`splice`]), runs under a schedule ([`schedule`](mod@schedule)), a
//! co-run of two programs ([`corun`]) and an idle pool's CPU ([`idle`]). Each takes options of its
//! own, not a command's arguments, and nothing here imports a command or a renderer.

pub(crate) mod corun;
pub(crate) mod dist;
pub(crate) mod idle;
pub(crate) mod locality;
pub(crate) mod rayon_builds;
pub(crate) mod run;
pub(crate) mod schedule;
pub(crate) mod splice;
pub(crate) mod suite;
pub(crate) mod trace;
