//! What `--dist` measured: magpie-dist's simulated task collections, one row per rank count and
//! strategy.

use serde::{Deserialize, Serialize};

/// One rank count and strategy.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct DistRow {
    /// Simulated ranks.
    pub ranks: usize,
    /// The strategy's name.
    pub strategy: String,
    /// The first iteration's time (the slowest rank's), seconds.
    pub first_s: f64,
    /// The last iteration's.
    pub last_s: f64,
    /// Total work ÷ ranks: the time of a perfect balance, seconds.
    pub ideal_s: f64,
    /// Work ÷ (ranks × time), first and last iteration.
    pub first_efficiency: f64,
    /// The same, last iteration.
    pub last_efficiency: f64,
    /// Steal attempts per rank in the last iteration.
    pub last_attempts_per_rank: f64,
}

/// What `--dist` measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct DistInfo {
    /// hf or tce.
    pub kernel: String,
    /// Its side: n × n tasks.
    pub n: u64,
    /// Iterations per configuration.
    pub iterations: usize,
    /// The rank counts.
    pub ranks: Vec<usize>,
    /// One row per rank count and strategy.
    pub rows: Vec<DistRow>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
    /// The rank timelines, one SVG per strategy (for index.html; not in results.json).
    #[serde(skip)]
    pub timelines: Vec<String>,
}
