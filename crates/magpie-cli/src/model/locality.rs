//! What `magpie locality` modelled: one row per scheduling strategy, its cache misses and, for a
//! first-touch program, its iterations.

/// One strategy's result.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Row {
    pub strategy: String,
    /// Total modelled misses (lines), the median run's.
    pub misses: u64,
    pub misses_per_socket: Vec<u64>,
    /// Bytes read from memory in the model (misses × line size).
    pub bytes: u64,
    /// Leaf tasks recorded in that run.
    pub leaves: usize,
    /// Every run's total, in run order.
    pub runs: Vec<u64>,
    /// Bytes declared on pages of another socket (the model's first-touch page map), the median
    /// run's.
    #[serde(default)]
    pub remote_bytes: u64,
    /// Missed lines on pages of another socket, the median run's.
    #[serde(default)]
    pub remote_misses: u64,
    /// For a kernel with a first-touch initialiser: the median run's iterations.
    #[serde(default)]
    pub iterations: Vec<magpie_bench::placement::Iteration>,
    /// For a kernel with a first-touch initialiser: the result, in words.
    #[serde(default)]
    pub answer: Option<String>,
    /// For a kernel with a first-touch initialiser: the misses of the second half of its
    /// iterations (once a schedule has settled), the median run's.
    #[serde(default)]
    pub late_misses: u64,
    /// The same for remote bytes.
    #[serde(default)]
    pub late_remote_bytes: u64,
    /// Misses of the initialiser's runs (placing and re-placing the data).
    #[serde(default)]
    pub placing_misses: u64,
}
