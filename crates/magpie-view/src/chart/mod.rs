//! The one plotting layer of every page magpie writes (`magpie suite`, `magpie trace --svg`,
//! `magpie corun --out`): charts as inline SVG, with no scripts and no external files, so a
//! report is one file that any browser shows.
//!
//! - [`svg`]: the writer. Every element goes through it, and every piece of text it is given is
//!   escaped there, once. Elements that show data carry the class [`svg::MARK`].
//! - [`axis`]: value axes (linear, or logarithmic for ratios) with round ticks, time axes with a
//!   unit chosen from the span, and the short number formats of labels.
//! - [`legend`]: swatches or line marks with names, flowed into rows that fit the chart.
//! - [`bars`]: grouped bar charts (the suite's speedups and ratios).
//!
//! The timeline of a trace (`trace::svg`: a lane per worker over time) and the co-run plots
//! (`corun::html`: step lines in panels over time) are drawn with the same writer, axes and
//! legend.

pub mod axis;
pub mod bars;
pub mod legend;
pub mod svg;

pub use bars::{Bar, Chart};
pub use svg::{esc, Svg};
