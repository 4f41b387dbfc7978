//! What the suite measured, as `results.json` holds it: the machine, one row per kernel, runtime
//! and worker count, the add-ons' outcomes (traces, locality, splicing, co-running, simulated
//! collections, the small-input figure), and the figures derived from the rows (speedup, the best
//! peer). The suite fills it (measure/suite.rs); the text table (render/table.rs), the page
//! (render/html.rs) and the headline ([`headline`]) read it. The add-ons' records are in [`corun`],
//! [`dist`], [`locality`], [`splice`] and [`trace`]; `magpie schedule`'s in
//! [`schedule`](mod@schedule).

pub(crate) mod corun;
pub(crate) mod dist;
pub(crate) mod headline;
pub(crate) mod locality;
pub(crate) mod report;
pub(crate) mod schedule;
pub(crate) mod splice;
pub(crate) mod trace;

use magpie::Policy;
use magpie_bench::harness::{Measured, RunError};
use magpie_bench::kernels;
use magpie_bench::runner::BenchRecord;
use magpie_bench::{Kernel, Peer, Size};
use serde::{Deserialize, Serialize};

/// The three policies, in report order.
pub(crate) const POLICIES: [Policy; 3] = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];

/// The machine the suite ran on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Machine {
    /// Host name, when it can be read.
    pub hostname: Option<String>,
    /// `std::thread::available_parallelism`.
    pub cpus: usize,
    /// Sockets with CPUs this process may use (`magpie::Topology::detect`).
    #[serde(default)]
    pub sockets: usize,
    /// `std::env::consts::OS`.
    pub os: String,
    /// `std::env::consts::ARCH`.
    pub arch: String,
    /// The first `model name` of /proc/cpuinfo, when present.
    pub cpu_model: Option<String>,
    /// This binary's version.
    pub magpie_cli_version: String,
    /// When the suite started, seconds since the Unix epoch (UTC).
    pub unix_time: u64,
    /// The same, as `YYYY-MM-DDTHH:MM:SSZ`.
    pub date_utc: String,
}

/// One measurement: a kernel on one runtime (and policy) at one worker count.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Row {
    /// Kernel name.
    pub kernel: String,
    /// Size preset.
    pub size: String,
    /// Problem size.
    pub n: u64,
    /// `magpie`, `serial`, `rayon` or `chili`.
    pub runtime: String,
    /// A peer's variant (`join`, `scope`); `null` for magpie and serial.
    pub variant: Option<String>,
    /// magpie's policy; `null` for the others.
    pub policy: Option<String>,
    /// Worker threads (1 for serial).
    pub workers: usize,
    /// Timed runs that completed.
    pub runs: usize,
    /// Median wall time of a run, seconds (`null` when no run completed).
    pub median_s: Option<f64>,
    /// Fastest run.
    pub min_s: Option<f64>,
    /// Slowest run.
    pub max_s: Option<f64>,
    /// Every run's time, in run order.
    pub times_s: Vec<f64>,
    /// Whether every run completed and passed its verifier.
    pub verified: bool,
    /// The answer of its first verified run, what a user can compare with a known value
    /// (`BenchRecord::result`); `null` when no run verified or the runtime does not say (the
    /// C++ peers).
    #[serde(default)]
    pub result: Option<String>,
    /// Whether magpie stopped the kernel at its stack limit (an expected outcome, not a failure).
    pub stopped: bool,
    /// Serial median / this median.
    pub speedup: Option<f64>,
    /// This median / the fastest peer's median at the same worker count.
    pub ratio_to_best_peer: Option<f64>,
    /// The fastest peer at the same worker count (`rayon-join`, ...).
    pub best_peer: Option<String>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
    /// magpie's counters over the timed runs (magpie rows only).
    pub stats: Option<magpie::Stats>,
    /// Peak RSS of the child process that ran this configuration, KiB (PDFS only).
    pub peak_rss_kib: Option<u64>,
}

impl Row {
    pub(crate) fn new(kernel: Kernel, size: Size, n: u64, who: Who, workers: usize) -> Row {
        let (runtime, variant, policy) = match who {
            Who::Serial => ("serial", None, None),
            Who::Magpie(p) => ("magpie", None, Some(p.name().to_string())),
            Who::Peer(p) => {
                let (rt, v) = peer_parts(p);
                (rt, v.map(str::to_string), None)
            }
        };
        Row {
            kernel: kernel.name().into(),
            size: size.name().into(),
            n,
            runtime: runtime.into(),
            variant,
            policy,
            workers,
            runs: 0,
            median_s: None,
            min_s: None,
            max_s: None,
            times_s: vec![],
            verified: false,
            result: None,
            stopped: false,
            speedup: None,
            ratio_to_best_peer: None,
            best_peer: None,
            error: None,
            stats: None,
            peak_rss_kib: None,
        }
    }

    /// `serial`, `magpie work-first`, `rayon-join`, ...
    pub(crate) fn label(&self) -> String {
        match (&self.policy, &self.variant) {
            (Some(p), _) => format!("{} {p}", self.runtime),
            (None, Some(v)) => format!("{}-{v}", self.runtime),
            (None, None) => self.runtime.clone(),
        }
    }

    /// Whether this is a peer's row.
    pub(crate) fn is_peer(&self) -> bool {
        self.runtime != "magpie" && self.runtime != "serial"
    }

    /// Failed verification or crashed (a stop at the stack limit is not a failure).
    pub(crate) fn failed(&self) -> bool {
        !self.verified && !self.stopped
    }

    pub(crate) fn fill(&mut self, r: Result<Measured, RunError>) {
        match r {
            Ok(m) => {
                self.set_times(m.timing.times_s);
                self.verified = m.verified && self.median_s.is_some();
                self.result = m.result;
                self.error = match (m.failure, self.median_s) {
                    (Some(f), _) => Some(format!("failed verification: {f}")),
                    (None, None) => Some("no runs".into()),
                    _ => None,
                };
                self.stats = m.stats;
            }
            Err(RunError::Stopped(m)) => {
                self.stopped = true;
                self.error = Some(format!("stopped: {m}"));
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    pub(crate) fn fill_record(&mut self, r: BenchRecord) {
        self.set_times(r.times_s);
        self.stopped = r.stopped;
        self.verified = r.verified && !r.stopped && self.median_s.is_some();
        self.result = r.result;
        self.error = match (r.error, r.stopped, self.verified) {
            (Some(e), true, _) => Some(format!("stopped: {e}")),
            (Some(e), false, _) => Some(e),
            (None, _, false) => Some("the child reported no verified runs".into()),
            (None, _, true) => None,
        };
        self.stats = Some(r.stats);
        self.peak_rss_kib = r.peak_rss_kib;
    }

    pub(crate) fn set_times(&mut self, times: Vec<f64>) {
        let t = magpie_bench::harness::Timing { times_s: times };
        self.median_s = t.median();
        self.min_s = t.min();
        self.max_s = t.max();
        self.runs = t.times_s.len();
        self.times_s = t.times_s;
    }
}

/// A peer that has no version of a kernel.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct NotMeasured {
    /// Kernel name.
    pub kernel: String,
    /// The peer runtime.
    pub runtime: String,
    /// Why.
    pub reason: String,
}

/// Everything the suite measured: `results.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Results {
    /// Where it ran.
    pub machine: Machine,
    /// Size preset.
    pub size: String,
    /// Timed runs of each configuration.
    pub runs: usize,
    /// The command line that reproduces this run.
    pub command: String,
    /// Kernels measured.
    pub kernels: Vec<String>,
    /// Worker counts measured.
    pub workers: Vec<usize>,
    /// magpie policies measured.
    pub policies: Vec<String>,
    /// Peer versions selected.
    pub peers: Vec<String>,
    /// Wall time of the whole suite, seconds.
    pub elapsed_s: f64,
    /// magpie against each peer per worker count (`headline::headline` of the rows); absent
    /// when no peer ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<Headline>,
    /// One row per measurement.
    pub rows: Vec<Row>,
    /// Peers without a faithful version of a kernel.
    pub not_measured: Vec<NotMeasured>,
    /// The traced runs (`--trace`); absent without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traces: Vec<TraceInfo>,
    /// The modelled cache misses per locality strategy (`--locality`); absent without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locality: Vec<LocalityInfo>,
    /// The stencils spliced against unspliced (`--splice`); absent without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub splice: Vec<SpliceInfo>,
    /// Two programs co-running under each sharing mode (`--corun`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corun: Option<CorunInfo>,
    /// magpie-dist's collections, simulated (`--dist`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dist: Option<dist::DistInfo>,
    /// A small input entered from outside the pool, every runtime (with tree-sum); absent
    /// without tree-sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_input: Option<SmallInputInfo>,
}

/// The small-input figure: the 1,023-node tree sum called once per entry into each runtime's
/// pool from a thread outside it (`kernels::tree_sum::small_input`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SmallInputInfo {
    /// The figure; `null` when it failed.
    pub figure: Option<kernels::tree_sum::SmallInput>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
}

/// Two programs co-running under each sharing mode (`magpie suite --corun`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CorunInfo {
    /// What `magpie corun --out` writes to corun.json; `null` when it failed.
    pub report: Option<corun::Report>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
}

/// A stencil spliced against the same steps unspliced (`magpie suite --splice`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SpliceInfo {
    /// Kernel name.
    pub kernel: String,
    /// Workers.
    pub workers: usize,
    /// What `magpie splice --json` reports; `null` when it failed.
    pub outcome: Option<splice::Outcome>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
}

/// One kernel's modelled cache misses under each locality strategy (`magpie suite --locality`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LocalityInfo {
    /// Kernel name.
    pub kernel: String,
    /// Problem size.
    pub n: u64,
    /// The virtual machine modelled, SOCKETSxCORES:LLC; one worker per core.
    pub topology: String,
    /// Runs per strategy (the median run's misses are reported).
    pub runs: u64,
    /// One row per strategy, in the order run.
    pub rows: Vec<locality::Row>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
}

/// One traced run of a kernel (`magpie suite --trace`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TraceInfo {
    /// Kernel name.
    pub kernel: String,
    /// Problem size.
    pub n: u64,
    /// Worker threads (the suite's highest count).
    pub workers: usize,
    /// magpie's policy.
    pub policy: String,
    /// The trace file, relative to the report folder (`null` when the run failed).
    pub file: Option<String>,
    /// Wall time of the traced run, seconds.
    pub run_s: Option<f64>,
    /// Working phases recorded.
    pub phases: usize,
    /// Steals recorded.
    pub steals: usize,
    /// The steal tree's work, span and parallelism (see `magpie trace export --format csv`).
    pub work_s: Option<f64>,
    pub span_s: Option<f64>,
    pub parallelism: Option<f64>,
    /// Whether magpie stopped the run at its stack limit (an expected outcome, not a failure).
    #[serde(default)]
    pub stopped: bool,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
    /// The timeline, for index.html (not in results.json).
    #[serde(skip)]
    pub svg: Option<String>,
}

impl TraceInfo {
    /// Failed verification or crashed (a stop at the stack limit is not a failure).
    pub(crate) fn failed(&self) -> bool {
        self.error.is_some() && !self.stopped
    }
}

/// A kernel's answer, from its rows: magpie's (the first magpie row that has one), else the
/// serial twin's, else a peer's; `None` when no row verified a run. Rows that verified answer
/// alike (each was checked against the serial twin or a known answer).
pub(crate) fn kernel_answer<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Option<&'a str> {
    let answered: Vec<&Row> = rows.into_iter().filter(|r| r.result.is_some()).collect();
    ["magpie", "serial"]
        .iter()
        .find_map(|rt| answered.iter().find(|r| r.runtime == *rt))
        .or(answered.first())
        .and_then(|r| r.result.as_deref())
}

/// Who ran a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Who {
    Serial,
    Magpie(Policy),
    Peer(Peer),
}

/// Fills in each row's speedup over its kernel's serial twin and its ratio to the fastest peer at
/// the same worker count.
pub(crate) fn derive(rows: &mut [Row]) {
    let snapshot: Vec<Row> = rows.to_vec();
    for r in rows.iter_mut() {
        let serial = snapshot
            .iter()
            .find(|s| s.kernel == r.kernel && s.runtime == "serial")
            .and_then(|s| s.median_s);
        r.speedup = match (serial, r.median_s) {
            (Some(s), Some(m)) if m > 0.0 => Some(s / m),
            _ => None,
        };
        if r.runtime == "serial" {
            continue;
        }
        let best = snapshot
            .iter()
            .filter(|p| p.kernel == r.kernel && p.workers == r.workers && p.is_peer())
            .filter_map(|p| Some((p.label(), p.median_s?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some((name, b)), Some(m)) = (best, r.median_s) {
            if b > 0.0 {
                r.ratio_to_best_peer = Some(m / b);
                r.best_peer = Some(name);
            }
        }
    }
}

impl Results {
    /// The rows of one kernel, in measurement order.
    pub(crate) fn kernel_rows<'a>(&'a self, kernel: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.kernel == kernel)
    }

    /// One kernel's answer ([`kernel_answer`] of its rows).
    pub(crate) fn kernel_result<'a>(&'a self, kernel: &'a str) -> Option<&'a str> {
        kernel_answer(self.kernel_rows(kernel))
    }
}

/// magpie against one peer at one worker count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Versus {
    /// Worker count.
    pub workers: usize,
    /// Peer runtime: `rayon`, `chili`, `tbb`, `openmp`.
    pub peer: String,
    /// Kernels both ran with a verified median.
    pub kernels: usize,
    /// Geometric mean over those kernels of magpie's time ÷ the peer's (below 1: magpie faster).
    pub geomean: f64,
    /// The kernels where magpie's time ÷ the peer's is above 1, with the ratio, largest first.
    pub behind: Vec<(String, f64)>,
}

/// The headline of a suite run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Headline {
    /// The magpie policy compared.
    pub policy: String,
    /// One entry per worker count and peer, worker counts ascending, peers in suite order.
    pub versus: Vec<Versus>,
}

/// A peer's runtime (`rayon`, `chili`) and variant (`join`, `scope`, `iter`), from its name.
pub(crate) fn peer_parts(p: Peer) -> (&'static str, Option<&'static str>) {
    match p.name().split_once('-') {
        Some((runtime, variant)) => (runtime, Some(variant)),
        None => (p.name(), None),
    }
}

/// Every peer version some kernel has, in kernel order.
pub(crate) fn all_peers() -> Vec<Peer> {
    let mut v = vec![];
    for k in Kernel::ALL {
        for &p in k.peers() {
            if !v.contains(&p) {
                v.push(p);
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::result_line;
    use crate::render::table::table_cells;

    #[test]
    fn speedup_and_best_peer() {
        let mk = |who, w, m: f64| {
            let mut r = Row::new(kernels::fib::KERNEL, Size::Ci, 20, who, w);
            r.set_times(vec![m]);
            r.verified = true;
            r
        };
        let mut rows = vec![
            mk(Who::Serial, 1, 4.0),
            mk(Who::Magpie(Policy::Adaptive), 2, 2.0),
            mk(Who::Peer(Peer::RayonJoin), 2, 1.0),
            mk(Who::Peer(Peer::ChiliJoin), 2, 0.5),
        ];
        derive(&mut rows);
        assert_eq!(rows[0].speedup, Some(1.0));
        assert_eq!(rows[0].ratio_to_best_peer, None);
        assert_eq!(rows[1].speedup, Some(2.0));
        assert_eq!(rows[1].ratio_to_best_peer, Some(4.0));
        assert_eq!(rows[1].best_peer.as_deref(), Some("chili-join"));
        assert_eq!(rows[2].runtime, "rayon");
        assert_eq!(rows[2].variant.as_deref(), Some("join"));
        assert_eq!(table_cells(&rows[3])[4], "fastest peer");

        // A kernel's answer: magpie's, else the serial twin's, else a peer's.
        assert_eq!(kernel_answer(&rows), None);
        assert_eq!(result_line(None), "result: – (no run verified)");
        rows[2].result = Some("peer".into());
        assert_eq!(kernel_answer(&rows), Some("peer"));
        rows[0].result = Some("serial".into());
        assert_eq!(kernel_answer(&rows), Some("serial"));
        rows[1].result = Some("magpie".into());
        assert_eq!(kernel_answer(&rows), Some("magpie"));
        assert_eq!(result_line(kernel_answer(&rows)), "result: magpie");
    }
}
