//! What `magpie splice` measured: the spliced and unspliced runs of one stencil, and the
//! splicing scheduler's statistics.

use serde::{Deserialize, Serialize};

/// One `magpie splice` measurement, as the JSON and the suite report it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub kernel: String,
    pub n: usize,
    pub steps: usize,
    pub window: usize,
    pub grain: usize,
    /// Rows per part under step pipelining (0: whole steps).
    #[serde(default)]
    pub slice: usize,
    pub workers: usize,
    pub runs: usize,
    pub spliced_median_s: f64,
    pub unspliced_median_s: f64,
    /// rayon running the suite's unspliced recursion (only with the suite's step count).
    pub rayon_median_s: Option<f64>,
    /// Unspliced ÷ spliced.
    pub speedup: f64,
    pub verified: bool,
    /// A checksum of every buffer's bits.
    pub result: String,
    pub stats: StatsOut,
}

/// The scheduler's statistics of the last spliced run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StatsOut {
    pub steps: u64,
    pub checks: u64,
    pub switches: u64,
    pub delayed: u64,
    pub dependences: u64,
    pub peak_delayed_bytes: u64,
    /// Parts run under step pipelining.
    #[serde(default)]
    pub slices: u64,
}
