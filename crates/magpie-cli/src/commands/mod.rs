//! The commands, one file each: its arguments (clap's derive, whose doc comments are its
//! `--help`) and its `run`, which takes them, asks `measure/` for the runs, keeps the results in
//! `model/` and prints or writes them through `render/`.

pub(crate) mod bench;
pub(crate) mod corun;
pub(crate) mod idle;
pub(crate) mod locality;
pub(crate) mod race;
pub(crate) mod report;
pub(crate) mod schedule;
pub(crate) mod share;
pub(crate) mod splice;
pub(crate) mod suite;
pub(crate) mod topology;
pub(crate) mod trace;
