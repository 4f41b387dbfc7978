//! What the tool writes: the suite's text table ([`table`]) and report page ([`html`], with
//! [`style`]'s sheet), `magpie bench`'s table ([`bench`](mod@bench)), `magpie report`'s Markdown
//! ([`markdown`]), the co-run report's page ([`corun`]), a trace's timeline, Perfetto JSON and
//! summary ([`trace`]) and the add-ons' tables ([`dist`], [`locality`]), and a schedule with its
//! run ([`schedule`](mod@schedule)). A renderer reads only the results ([`crate::model`]), writes
//! each figure as [`crate::format`] does, and draws nothing from the commands or from what measured
//! them.

pub(crate) mod bench;
pub(crate) mod corun;
pub(crate) mod dist;
pub(crate) mod html;
pub(crate) mod locality;
pub(crate) mod markdown;
pub(crate) mod schedule;
pub(crate) mod style;
pub(crate) mod table;
pub(crate) mod trace;
