//! What magpie's command-line tools (`magpie`, `magpie-dist`) show a user, in one place so that
//! every report looks and behaves the same:
//!
//! - [`chart`]: the one plotting layer of every HTML report (the suite's bar charts, trace
//!   timelines, co-run plots, the distributed runs' rank timelines), as inline SVG.
//! - [`progress`]: progress of a long command on stderr: a bar with an estimate of the time left
//!   on a terminal, one plain line per finished step otherwise (logs, CI).

#![warn(missing_docs)]

pub mod chart;
pub mod progress;
