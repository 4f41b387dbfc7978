//! `magpie suite` (also what `magpie` alone runs): every kernel under each magpie policy at each
//! worker count, with the serial twin and the peers, measured in interleaved rounds like `magpie
//! report` (one run of every runtime per round, see `runner::merge`); PDFS configurations run in
//! a child process so that each one's peak RSS is its own. While it runs, a progress bar (or, when
//! stderr is not a terminal, one line per finished configuration); at the end a table (or
//! results.json with `--json`) and a report folder with `results.json` and `index.html`. Until
//! then the folder's `results.partial.json` holds every kernel finished so far, in the same
//! format, so a suite stopped part-way loses only the kernel it was measuring. With
//! `--trace`, the kernels it names run once more, traced, at the suite's highest worker count, and
//! index.html shows their timelines (the trace files go to `traces/` in the report folder).

use crate::cli::{self, SuiteArgs};
use crate::format::{duration, result_line, times, utc_date};
use crate::trace;
use crate::Failure;
use indicatif::ProgressBar;
use magpie::dws::SharingMode;
use magpie::Policy;
use magpie_bench::harness::{Measured, RunError};
use magpie_bench::runner::{self, BenchRecord};
use magpie_bench::{Kernel, Peer, Size};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

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
    fn new(kernel: Kernel, size: Size, n: u64, who: Who, workers: usize) -> Row {
        let (runtime, variant, policy) = match who {
            Who::Serial => ("serial", None, None),
            Who::Magpie(p) => ("magpie", None, Some(p.name().to_string())),
            Who::Peer(p) => {
                let (rt, v) = cli::peer_parts(p);
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

    fn fill(&mut self, r: Result<Measured, RunError>) {
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

    fn fill_record(&mut self, r: BenchRecord) {
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

    fn set_times(&mut self, times: Vec<f64>) {
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

/// The file in the report folder that holds what a suite has measured so far, kernel by kernel,
/// until `results.json` is written.
pub(crate) const PARTIAL: &str = "results.partial.json";

/// Writes `res` to `path` whole or not at all (a temporary file, then a rename), so a reader or
/// a stop never sees half a file. A failure is said and the suite goes on: the partial file is
/// a safeguard, and the run's own results are still to come.
fn write_partial(path: &Path, res: &Results) {
    let tmp = path.with_extension("json.tmp");
    let written = serde_json::to_string_pretty(res)
        .map_err(|e| e.to_string())
        .and_then(|j| std::fs::write(&tmp, j).map_err(|e| e.to_string()))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!(
            "magpie: cannot write {}: {e}; the suite goes on",
            path.display()
        );
    }
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
    pub headline: Option<crate::headline::Headline>,
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
    pub dist: Option<crate::dist::DistInfo>,
    /// A small input entered from outside the pool, every runtime (with tree-sum); absent
    /// without tree-sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_input: Option<SmallInputInfo>,
}

/// The small-input figure: the 1,023-node tree sum called once per entry into each runtime's
/// pool from a thread outside it (`magpie_bench::tree_sum::small_input`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SmallInputInfo {
    /// The figure; `null` when it failed.
    pub figure: Option<magpie_bench::tree_sum::SmallInput>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
}

impl Results {
    /// What `plan` measured of `kernels` in `elapsed_s`: its rows and the peers it could not
    /// measure, with the headline (which reads only the rows, workers and policies), and none of
    /// the add-ons (traces, locality, splice, co-run, dist).
    fn measured(
        machine: Machine,
        plan: &Plan,
        kernels: Vec<String>,
        elapsed_s: f64,
        rows: Vec<Row>,
        not_measured: Vec<NotMeasured>,
    ) -> Results {
        let mut res = Results {
            machine,
            size: plan.size.name().into(),
            runs: plan.runs,
            command: plan.command(),
            kernels,
            workers: plan.workers.clone(),
            policies: plan.policies.iter().map(|p| p.name().into()).collect(),
            peers: plan.peers.iter().map(|p| p.name().into()).collect(),
            elapsed_s,
            headline: None,
            rows,
            not_measured,
            traces: vec![],
            locality: vec![],
            splice: vec![],
            corun: None,
            dist: None,
            small_input: None,
        };
        res.headline = crate::headline::headline(&res);
        res
    }
}

/// Two programs co-running under each sharing mode (`magpie suite --corun`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CorunInfo {
    /// What `magpie corun --out` writes to corun.json; `null` when it failed.
    pub report: Option<crate::corun::Report>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
}

/// `magpie corun A B` under every mode, each program with `workers` workers and the suite's
/// size and runs (and at least a second of co-running).
fn corunning(pair: cli::ProgramPair, workers: usize, size: Size, runs: usize) -> CorunInfo {
    let args = cli::CorunArgs {
        a: pair.0,
        b: pair.1,
        mode: cli::ModeList(vec![
            SharingMode::Dws,
            SharingMode::Abp,
            SharingMode::Ep,
            SharingMode::Off,
        ]),
        size,
        workers,
        solo_runs: runs,
        runs,
        min_seconds: 1.0,
        sample_ms: 20,
        timeout: 600.0,
        json: false,
        out: None,
    };
    match crate::corun::measure(&args) {
        Ok(mut r) => {
            // The command that repeats this co-run on its own.
            r.command = format!(
                "magpie corun {} {} --size {} --workers {workers} --solo-runs {runs} --runs \
                 {runs} --min-seconds 1",
                pair.0,
                pair.1,
                size.name()
            );
            CorunInfo {
                report: Some(r),
                error: None,
            }
        }
        Err(e) => CorunInfo {
            report: None,
            error: Some(e.message().to_string()),
        },
    }
}

/// A stencil spliced against the same steps unspliced (`magpie suite --splice`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SpliceInfo {
    /// Kernel name.
    pub kernel: String,
    /// Workers.
    pub workers: usize,
    /// What `magpie splice --json` reports; `null` when it failed.
    pub outcome: Option<crate::splice::Outcome>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
}

/// Runs each stencil of `kernels` spliced and unspliced at each worker count.
fn spliced(kernels: &[Kernel], workers: &[usize], size: Size, runs: usize) -> Vec<SpliceInfo> {
    let mut out = Vec::new();
    for &k in kernels {
        if !["heat", "jacobi", "fdtd-2d"].contains(&k.name()) {
            continue;
        }
        for &w in workers {
            let a = cli::SpliceArgs {
                kernel: k.name().into(),
                n: k.size_n(size) as usize,
                steps: None,
                window: 8,
                grain: None,
                slice: 0,
                workers: w,
                runs,
                json: true,
                only: None,
            };
            let (outcome, error) = match crate::splice::outcome(&a) {
                Ok(o) => (Some(o), None),
                Err(e) => (None, Some(e.message().to_string())),
            };
            out.push(SpliceInfo {
                kernel: k.name().into(),
                workers: w,
                outcome,
                error,
            });
        }
    }
    out
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
    pub rows: Vec<crate::locality::Row>,
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
enum Who {
    Serial,
    Magpie(Policy),
    Peer(Peer),
}

/// What the suite will run.
struct Plan {
    kernels: Vec<Kernel>,
    policies: Vec<Policy>,
    workers: Vec<usize>,
    peers: Vec<Peer>,
    size: Size,
    runs: usize,
    /// Kernels to trace once more at the highest worker count.
    traces: Vec<Kernel>,
    /// What to model under each locality strategy (`--locality`).
    locality: Option<LocalityPlan>,
    /// Run the stencils spliced too (`--splice`).
    splice: bool,
    /// Co-run two programs under every sharing mode (`--corun`).
    corun: Option<cli::ProgramPair>,
    /// Simulate magpie-dist's collections (`--dist`).
    dist: Option<cli::DistSpec>,
    /// Where the two rayon builds are (`--rayon-builds`; default: beside this executable).
    rayon_builds: Option<PathBuf>,
}

/// Kernels to model under each locality strategy, and the virtual machine.
struct LocalityPlan {
    kernels: Vec<Kernel>,
    topology: magpie::Topology,
    /// `--locality-topology` as given.
    spec: String,
}

impl Plan {
    fn from_args(a: &SuiteArgs) -> Result<Plan, Failure> {
        let cpus = available_cpus();
        let workers = match &a.workers {
            Some(w) => w.0.clone(),
            None if cpus > 1 => vec![1, cpus],
            None => vec![1],
        };
        let mut plan = Plan {
            kernels: match &a.kernels {
                Some(k) => Kernel::ALL
                    .into_iter()
                    .filter(|x| k.0.contains(x))
                    .collect(),
                None => Kernel::ALL.to_vec(),
            },
            policies: match &a.policies {
                Some(p) => POLICIES.into_iter().filter(|x| p.0.contains(x)).collect(),
                None => POLICIES.to_vec(),
            },
            workers,
            peers: match &a.peers {
                Some(p) => p.0.clone(),
                None => cli::all_peers(),
            },
            size: a.size,
            runs: a.runs,
            traces: vec![],
            locality: None,
            splice: a.splice,
            corun: a.corun,
            dist: a.dist,
            rayon_builds: a.rayon_builds.clone(),
        };
        // A co-run program that cannot be built fails now, not after the suite.
        if let Some(cli::ProgramPair(x, y)) = &a.corun {
            for p in [x, y] {
                crate::bench::case_of(p.kernel, p.n, a.size, p.grain, None)
                    .map_err(|e| Failure::Usage(format!("--corun {p}: {}", e.message())))?;
            }
        }
        if let Some(t) = &a.trace {
            for &k in &t.0 {
                if !plan.kernels.contains(&k) {
                    return Err(Failure::Usage(format!(
                        "--trace names {k}, which --kernels leaves out: trace only kernels the \
                         suite runs"
                    )));
                }
            }
            plan.traces = plan
                .kernels
                .iter()
                .copied()
                .filter(|k| t.0.contains(k))
                .collect();
        }
        if let Some(l) = &a.locality {
            for &k in &l.0 {
                if !plan.kernels.contains(&k) {
                    return Err(Failure::Usage(format!(
                        "--locality names {k}, which --kernels leaves out: model only kernels \
                         the suite runs"
                    )));
                }
                if !crate::locality::KERNELS.contains(&k) {
                    return Err(Failure::Usage(format!(
                        "--locality names {k}, which declares no leaf accesses: only {} can be \
                         modelled",
                        crate::locality::kernels_in_words()
                    )));
                }
            }
            plan.locality = Some(LocalityPlan {
                kernels: plan
                    .kernels
                    .iter()
                    .copied()
                    .filter(|k| l.0.contains(k))
                    .collect(),
                topology: magpie::Topology::parse(&a.locality_topology).map_err(|e| {
                    Failure::Usage(format!("--locality-topology {}: {e}", a.locality_topology))
                })?,
                spec: a.locality_topology.clone(),
            });
        }
        Ok(plan)
    }

    /// The policy of the traced runs: adaptive when the suite runs it, else its first policy.
    fn trace_policy(&self) -> Policy {
        if self.policies.contains(&Policy::Adaptive) {
            Policy::Adaptive
        } else {
            self.policies.first().copied().unwrap_or(Policy::Adaptive)
        }
    }

    /// The worker count of the traced runs: the suite's highest.
    fn trace_workers(&self) -> usize {
        self.workers.iter().copied().max().unwrap_or(1)
    }

    fn peers_of(&self, k: Kernel) -> Vec<Peer> {
        k.peers()
            .iter()
            .copied()
            .filter(|p| self.peers.contains(p))
            .collect()
    }

    /// Configurations (rows) and single timed runs in the whole suite.
    fn totals(&self) -> (usize, u64) {
        let mut configs = 0;
        for &k in &self.kernels {
            configs += 1 + self.workers.len() * (self.policies.len() + self.peers_of(k).len());
        }
        (configs, (configs * self.runs) as u64)
    }

    fn command(&self) -> String {
        let join = |v: Vec<String>| v.join(",");
        let mut c = format!(
            "magpie suite --size {} --runs {} --workers {}",
            self.size,
            self.runs,
            join(self.workers.iter().map(|w| w.to_string()).collect())
        );
        if self.kernels.len() != Kernel::ALL.len() {
            let _ = write!(
                c,
                " --kernels {}",
                join(self.kernels.iter().map(|k| k.to_string()).collect())
            );
        }
        if self.policies.len() != POLICIES.len() {
            let _ = write!(
                c,
                " --policies {}",
                join(self.policies.iter().map(|p| p.to_string()).collect())
            );
        }
        let all = cli::all_peers();
        if self.peers.is_empty() {
            c.push_str(" --peers none");
        } else if self.peers.len() != all.len() {
            let _ = write!(
                c,
                " --peers {}",
                join(self.peers.iter().map(|p| p.to_string()).collect())
            );
        }
        if !self.traces.is_empty() {
            let _ = write!(
                c,
                " --trace {}",
                join(self.traces.iter().map(|k| k.to_string()).collect())
            );
        }
        if let Some(l) = &self.locality {
            let _ = write!(
                c,
                " --locality {} --locality-topology {}",
                join(l.kernels.iter().map(|k| k.to_string()).collect()),
                l.spec
            );
        }
        if self.splice {
            c.push_str(" --splice");
        }
        if let Some(cli::ProgramPair(x, y)) = &self.corun {
            let _ = write!(c, " --corun {x},{y}");
        }
        if let Some(d) = &self.dist {
            let _ = write!(c, " --dist {d}");
        }
        c
    }
}

fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Progress on stderr: a bar on a terminal, else one line per finished configuration.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    done: usize,
    total: usize,
}

impl Progress {
    fn new(total_configs: usize, total_runs: u64) -> Progress {
        let bar = magpie_view::progress::bar(total_runs, "runs");
        Progress {
            bar,
            started: Instant::now(),
            done: 0,
            total: total_configs,
        }
    }

    fn at(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    fn ran(&self, runs: usize) {
        if let Some(b) = &self.bar {
            b.inc(runs as u64);
        }
    }

    fn finished(&mut self, r: &Row, serial_median: Option<f64>) {
        self.done += 1;
        let outcome = match (r.median_s, &r.error) {
            (_, Some(e)) if r.stopped => e.clone(),
            (_, Some(e)) => format!("FAILED: {e}"),
            (Some(m), None) => match serial_median {
                Some(s) if r.runtime != "serial" => format!("{m:.6} s, {:.2}× serial", s / m),
                _ => format!("{m:.6} s"),
            },
            (None, None) => "no runs".into(),
        };
        let line = format!(
            "[{:>6.1} s] {}/{} {} n={} {} x{}: {outcome}",
            self.started.elapsed().as_secs_f64(),
            self.done,
            self.total,
            r.kernel,
            r.n,
            r.label(),
            r.workers
        );
        match &self.bar {
            None => eprintln!("{line}"),
            Some(b) if r.error.is_some() => b.println(line),
            Some(_) => {}
        }
    }

    fn not_measured(&mut self, kernel: Kernel, peer: Peer, reason: &str) {
        self.not_measured_named(kernel, peer.name(), reason, 1);
    }

    /// `configs` configurations of `runtime` on `kernel` not measured, with why.
    fn not_measured_named(&mut self, kernel: Kernel, runtime: &str, reason: &str, configs: usize) {
        self.done += configs;
        let line = format!(
            "[{:>6.1} s] {}/{} {kernel} {runtime}: not measured: {reason}",
            self.started.elapsed().as_secs_f64(),
            self.done,
            self.total,
        );
        match &self.bar {
            None => eprintln!("{line}"),
            Some(b) => b.println(line),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Measures the given kernels, policies, worker counts and peers exactly as the suite does
/// (rounds, PDFS in child processes, peers that cannot run here listed as not measured), with the
/// suite's progress output. `magpie report` measures through this too.
/// Measures every kernel of the plan in turn; after each one, `finished` gets the kernel and
/// everything measured so far (the suite writes it to `results.partial.json`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure_all(
    kernels: Vec<Kernel>,
    policies: Vec<Policy>,
    workers: Vec<usize>,
    peers: Vec<Peer>,
    size: Size,
    runs: usize,
    rayon_builds: Option<PathBuf>,
    mut finished: impl FnMut(Kernel, &[Row], &[NotMeasured]),
) -> Result<(Vec<Row>, Vec<NotMeasured>), Failure> {
    let plan = Plan {
        kernels,
        policies,
        workers,
        peers,
        size,
        runs,
        traces: vec![],
        locality: None,
        splice: false,
        corun: None,
        dist: None,
        rayon_builds,
    };
    let (configs, total_runs) = plan.totals();
    let mut prog = Progress::new(configs, total_runs);
    let mut rows = vec![];
    let mut not_measured = vec![];
    for &k in &plan.kernels {
        match measure_kernel(&plan, k, &mut prog, &mut not_measured) {
            Ok(r) => {
                rows.extend(r);
                finished(k, &rows, &not_measured);
            }
            Err(e) => {
                prog.finish();
                return Err(e);
            }
        }
    }
    prog.finish();
    Ok((rows, not_measured))
}

/// One PDFS configuration in a child process (`magpie bench pdfs ... --json`), so that its peak
/// RSS is its own.
fn pdfs_child(row: &mut Row, n: u64, w: usize, p: Policy, runs: usize) {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            row.error = Some(format!("cannot find the magpie executable: {e}"));
            return;
        }
    };
    let out = Command::new(exe)
        .args(["bench", "pdfs", "--n", &n.to_string()])
        .args(["--workers", &w.to_string(), "--policy", p.name()])
        .args(["--runs", &runs.to_string()])
        .args(["--json", "--no-peers", "--no-serial"])
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            row.error = Some(format!("cannot run the child: {e}"));
            return;
        }
    };
    match serde_json::from_slice::<BenchRecord>(&out.stdout) {
        Ok(rec) => row.fill_record(rec),
        Err(_) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            row.error = Some(format!("child {}: {last}", out.status));
        }
    }
}

/// Measures one kernel at every worker count of the plan; the serial twin joins the rounds of the
/// first worker count. Rows come out serial first, then per worker count magpie's policies and the
/// peers.
/// A peer that cannot be set up here (e.g. a native peer whose program is not built) is listed in
/// `not_measured` instead of as a failed row.
fn measure_kernel(
    plan: &Plan,
    kernel: Kernel,
    prog: &mut Progress,
    not_measured: &mut Vec<NotMeasured>,
) -> Result<Vec<Row>, Failure> {
    if kernel.program().is_some() {
        return Ok(measure_program(plan, kernel, prog, not_measured));
    }
    let n = kernel.size_n(plan.size);
    let runs = plan.runs;
    let peers = plan.peers_of(kernel);
    let mut rows = vec![];
    let mut serial_median = None;
    for (i, &w) in plan.workers.iter().enumerate() {
        let mut serial_acc = None;
        let mut group = vec![];
        let mut skipped = vec![];
        if kernel == Kernel::Pdfs {
            if i == 0 {
                for round in 1..=runs {
                    prog.at(&format!("{kernel} serial, round {round}/{runs}"));
                    if !runner::failed(&serial_acc) {
                        runner::merge(
                            &mut serial_acc,
                            runner::run_serial(&runner::Case::new(kernel, n), 1),
                        );
                    }
                    prog.ran(1);
                }
            }
            for &p in &plan.policies {
                prog.at(&format!("{kernel} magpie {p} x{w} (child process)"));
                let mut row = Row::new(kernel, plan.size, n, Who::Magpie(p), w);
                pdfs_child(&mut row, n, w, p, runs);
                prog.ran(runs);
                group.push(row);
            }
        } else {
            let pools = plan
                .policies
                .iter()
                .map(|&p| magpie::Pool::builder().workers(w).policy(p).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(Failure::from_magpie)?;
            let mut accs: Vec<_> = pools.iter().map(|_| None).collect();
            let mut peer_accs: Vec<_> = peers.iter().map(|_| None).collect();
            // Rounds: one run of every runtime per round, so that drift in the machine's speed
            // falls on every runtime alike.
            for round in 1..=runs {
                prog.at(&format!("{kernel} x{w}, round {round}/{runs}"));
                if i == 0 {
                    if !runner::failed(&serial_acc) {
                        runner::merge(
                            &mut serial_acc,
                            runner::run_serial(&runner::Case::new(kernel, n), 1),
                        );
                    }
                    prog.ran(1);
                }
                for (acc, pool) in accs.iter_mut().zip(&pools) {
                    if !runner::failed(acc) {
                        runner::merge(
                            acc,
                            runner::run_magpie(pool, &runner::Case::new(kernel, n), 1),
                        );
                    }
                    prog.ran(1);
                }
                for (acc, &peer) in peer_accs.iter_mut().zip(&peers) {
                    if !runner::failed(acc) {
                        runner::merge(
                            acc,
                            runner::run_peer(peer, &runner::Case::new(kernel, n), w, 1),
                        );
                    }
                    prog.ran(1);
                }
            }
            for (acc, &p) in accs.into_iter().zip(&plan.policies) {
                let mut row = Row::new(kernel, plan.size, n, Who::Magpie(p), w);
                row.fill(acc.expect("runs >= 1"));
                group.push(row);
            }
            for (acc, &peer) in peer_accs.into_iter().zip(&peers) {
                match acc.expect("runs >= 1") {
                    Err(RunError::Setup(reason)) => {
                        skipped.push((peer, reason.clone()));
                        if !not_measured
                            .iter()
                            .any(|x| x.kernel == kernel.name() && x.runtime == peer.name())
                        {
                            not_measured.push(NotMeasured {
                                kernel: kernel.name().into(),
                                runtime: peer.name().into(),
                                reason,
                            });
                        }
                    }
                    r => {
                        let mut row = Row::new(kernel, plan.size, n, Who::Peer(peer), w);
                        row.fill(r);
                        group.push(row);
                    }
                }
            }
        }
        if let Some(acc) = serial_acc {
            let mut row = Row::new(kernel, plan.size, n, Who::Serial, 1);
            row.fill(acc);
            serial_median = row.median_s;
            prog.finished(&row, serial_median);
            rows.push(row);
        }
        for row in group {
            prog.finished(&row, serial_median);
            rows.push(row);
        }
        for (peer, reason) in skipped {
            prog.not_measured(kernel, peer, &reason);
        }
    }
    Ok(rows)
}

/// Measures one of the rayon programs: the serial twin here, round by round; magpie (each policy)
/// and rayon in the two rayon builds (`rayon_builds.rs`), one child process per runtime and
/// policy with all its runs at every worker count. Rows come out as `measure_kernel`'s do. If
/// the builds cannot be found, magpie and rayon are listed as not measured, with why and how to
/// build them.
fn measure_program(
    plan: &Plan,
    kernel: Kernel,
    prog: &mut Progress,
    not_measured: &mut Vec<NotMeasured>,
) -> Vec<Row> {
    use crate::rayon_builds::{Core, RayonBuilds, Run};
    let n = kernel.size_n(plan.size);
    let runs = plan.runs;
    let peers = plan.peers_of(kernel);
    let mut rows = vec![];
    let mut serial_acc = None;
    for round in 1..=runs {
        prog.at(&format!("{kernel} serial, round {round}/{runs}"));
        if !runner::failed(&serial_acc) {
            runner::merge(
                &mut serial_acc,
                runner::run_serial(&runner::Case::new(kernel, n), 1),
            );
        }
        prog.ran(1);
    }
    let mut serial = Row::new(kernel, plan.size, n, Who::Serial, 1);
    serial.fill(serial_acc.expect("runs >= 1"));
    let serial_median = serial.median_s;
    prog.finished(&serial, serial_median);
    rows.push(serial);
    let builds = match RayonBuilds::find(plan.rayon_builds.as_deref()) {
        Ok(b) => b,
        Err(reason) => {
            let mut who: Vec<(String, usize)> = vec![("magpie".into(), plan.policies.len())];
            who.extend(peers.iter().map(|p| (p.name().to_string(), 1)));
            for (runtime, configs) in who {
                prog.not_measured_named(kernel, &runtime, &reason, configs * plan.workers.len());
                not_measured.push(NotMeasured {
                    kernel: kernel.name().into(),
                    runtime,
                    reason: reason.clone(),
                });
            }
            prog.ran(plan.workers.len() * (plan.policies.len() + peers.len()) * runs);
            return rows;
        }
    };
    // Each runtime's rows at every worker count: (who, one result per worker count).
    let mut measured: Vec<(Who, Vec<Result<Measured, RunError>>)> = vec![];
    let who_list = plan
        .policies
        .iter()
        .map(|&p| (Who::Magpie(p), Core::Magpie, Some(p)))
        .chain(peers.iter().map(|&p| (Who::Peer(p), Core::Rayon, None)));
    for (who, core, policy) in who_list {
        let name = match who {
            Who::Magpie(p) => format!("magpie {p} (rayon on magpie's rayon-core)"),
            _ => "rayon (its own rayon-core)".to_string(),
        };
        prog.at(&format!("{kernel} {name}, a child process"));
        let run = Run {
            kernel,
            n,
            workers: &plan.workers,
            runs,
            policy,
            inherit_settings: false,
        };
        let results = match builds.run(core, &run) {
            Ok(r) => r,
            Err(e) => plan
                .workers
                .iter()
                .map(|_| Err(RunError::Panicked(e.clone())))
                .collect(),
        };
        prog.ran(plan.workers.len() * runs);
        measured.push((who, results));
    }
    for (i, &w) in plan.workers.iter().enumerate() {
        for (who, results) in &measured {
            let mut row = Row::new(kernel, plan.size, n, *who, w);
            row.fill(results[i].clone());
            prog.finished(&row, serial_median);
            rows.push(row);
        }
    }
    rows
}

/// Models each kernel of `l`'s cache misses under each strategy, as `magpie locality` does at
/// its defaults. A failure is recorded, not returned.
fn modelled(
    l: &LocalityPlan,
    size: Size,
    runs: u64,
    strategies: &cli::Strategies,
) -> Vec<LocalityInfo> {
    let settings = crate::locality::Settings {
        topology: &l.topology,
        strategies: &strategies.0,
        runs,
        line: 64,
        pace_us_per_mib: cli::DEFAULT_PACE_US_PER_MIB,
        boundary_level: None,
        policy: None,
        iterations: None,
        prune: 0,
    };
    l.kernels
        .iter()
        .map(|&k| {
            let n = k.size_n(size);
            // A kernel with a first-touch initialiser is also modelled under the schedules
            // (relws, stows, user); places and squads only where its phases sweep rows.
            let own;
            let settings = if let Some(facet) = k.placement() {
                let mut v: Vec<(String, cli::Strategy)> = strategies
                    .0
                    .iter()
                    .filter(|(_, st)| facet.banded || (st.places.is_none() && !st.squads))
                    .cloned()
                    .collect();
                for (name, st) in cli::schedule_strategies().0 {
                    if !v.iter().any(|(n, _)| *n == name) {
                        v.push((name, st));
                    }
                }
                own = v;
                crate::locality::Settings {
                    strategies: &own,
                    ..settings
                }
            } else {
                crate::locality::Settings { ..settings }
            };
            let strategies = settings.strategies;
            eprintln!(
                "modelling {k} n={n} on a virtual {} under {} strategies, {runs} run(s) each",
                l.spec,
                strategies.len()
            );
            let (rows, error) = match crate::locality::model(&runner::Case::new(k, n), &settings) {
                Ok(rows) => (rows, None),
                Err(f) => (vec![], Some(f.message().to_string())),
            };
            LocalityInfo {
                kernel: k.name().into(),
                n,
                topology: l.spec.clone(),
                runs,
                rows,
                error,
            }
        })
        .collect()
}

/// Runs `kernel` once more on a pool of `workers` that traces, verified; writes the trace to
/// `<out>/traces/<kernel>.mtrace` and draws its timeline. A failure is recorded, not returned.
fn traced(kernel: Kernel, n: u64, workers: usize, policy: Policy, out: &Path) -> TraceInfo {
    eprintln!("tracing {kernel} n={n} magpie {policy} x{workers}");
    let mut info = TraceInfo {
        kernel: kernel.name().into(),
        n,
        workers,
        policy: policy.name().into(),
        file: None,
        run_s: None,
        phases: 0,
        steals: 0,
        work_s: None,
        span_s: None,
        parallelism: None,
        stopped: false,
        error: None,
        svg: None,
    };
    let taken = magpie::Pool::builder()
        .workers(workers)
        .policy(policy)
        .trace(true)
        .build()
        .map_err(Failure::from_magpie)
        .and_then(|pool| trace::traced_run(&pool, &runner::Case::new(kernel, n)));
    let (t, run_s) = match taken {
        Ok(x) => x,
        Err(f) => {
            info.stopped = matches!(f, Failure::Stopped(_));
            info.error = Some(f.message().to_string());
            return info;
        }
    };
    info.run_s = Some(run_s);
    info.phases = t.phases.iter().map(Vec::len).sum();
    info.steals = t.steal_count();
    let file = format!("traces/{}.mtrace", kernel.name());
    if let Err(f) = trace::write_trace(&t, &out.join(&file)) {
        info.error = Some(f.message().to_string());
        return info;
    }
    info.file = Some(file);
    let burden = (cli::BURDEN_US * 1e3) as u64;
    match trace::analysis::analyse(&t, burden) {
        Ok(an) => {
            let o = &an.overall;
            info.work_s = Some(o.work_ns as f64 / 1e9);
            info.span_s = Some(o.span_ns as f64 / 1e9);
            info.parallelism = o.parallelism();
            let what = format!("{kernel} (n = {n})");
            info.svg = Some(trace::svg::timeline(&t, &trace::title(&what, &t, &an)));
        }
        Err(e) => info.error = Some(format!("the trace does not form a tree: {e}")),
    }
    info
}

/// Fills in each row's speedup over its kernel's serial twin and its ratio to the fastest peer at
/// the same worker count.
fn derive(rows: &mut [Row]) {
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

fn machine() -> Machine {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let hostname = read("/proc/sys/kernel/hostname")
        .or_else(|| read("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()));
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == "model name")
            .map(|(_, v)| v.trim().to_string())
    });
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Machine {
        hostname,
        cpus: available_cpus(),
        sockets: magpie::Topology::detect().sockets.len(),
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        cpu_model,
        magpie_cli_version: env!("CARGO_PKG_VERSION").into(),
        unix_time,
        date_utc: utc_date(unix_time),
    }
}

/// The table's column headings.
pub(crate) const TABLE_HEAD: [&str; 6] = [
    "runtime",
    "workers",
    "median",
    "speedup",
    "vs best peer",
    "note",
];

/// One row of the table: the cells under [`TABLE_HEAD`].
pub(crate) fn table_cells(r: &Row) -> [String; 6] {
    let median = match (r.median_s, r.stopped, r.verified) {
        (_, true, _) => "stopped".into(),
        (Some(m), _, true) => duration(m),
        _ => "FAILED".into(),
    };
    let vs_peer = match (&r.ratio_to_best_peer, &r.best_peer) {
        (Some(_), Some(p)) if r.is_peer() && r.label() == *p => "fastest peer".into(),
        (Some(x), Some(p)) => format!("{x:.2}× {p}"),
        _ => String::new(),
    };
    [
        r.label(),
        r.workers.to_string(),
        median,
        times(r.speedup),
        vs_peer,
        r.error.clone().unwrap_or_default(),
    ]
}

/// A kernel's heading: `fib (n = 20: fib(n))`.
pub(crate) fn kernel_heading(res: &Results, kernel: &str) -> String {
    let n = res.kernel_rows(kernel).next().map_or(0, |r| r.n);
    let meaning = kernel.parse::<Kernel>().map_or("", |k| k.n_meaning());
    format!("{kernel} (n = {n}: {meaning})")
}

/// What a kernel's rows are, where that is not plain: the rayon programs' magpie rows are rayon
/// on magpie's rayon-core, from another build (`rayon_builds.rs`).
pub(crate) fn kernel_note(kernel: &str) -> Option<&'static str> {
    kernel.parse::<Kernel>().ok()?.program()?;
    Some(
        "a rayon program: magpie's rows are rayon's iterators on magpie's rayon-core, rayon's \
         are rayon on its own; two builds of one source, each timed in a process of its own",
    )
}

/// The table printed at the end (and shown in index.html).
/// The small-input figure as text: µs per call and × the serial twin, per runtime and width.
fn small_input_table(o: &mut String, si: &SmallInputInfo) {
    let f = match (&si.figure, &si.error) {
        (Some(f), _) => f,
        (None, e) => {
            let _ = writeln!(
                o,
                "\nsmall input from outside the pool: failed: {}",
                e.as_deref().unwrap_or("unknown")
            );
            return;
        }
    };
    let _ = writeln!(
        o,
        "\nsmall input from outside the pool: the {}-node tree sum, one entry into the pool per \
         call, medians of {} runs ({}; serial {:.2} µs)",
        f.nodes, f.runs, f.answer, f.serial_us
    );
    let _ = writeln!(
        o,
        "  {:<8} {:>7} {:>10} {:>8}",
        "runtime", "workers", "µs/call", "×serial"
    );
    for r in &f.rows {
        let _ = writeln!(
            o,
            "  {:<8} {:>7} {:>10.2} {:>8.2}",
            r.runtime, r.workers, r.us, r.x_serial
        );
    }
}

pub(crate) fn table(res: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "magpie suite: size {}, {} timed run{} per configuration, workers {}; {} CPUs{}; {:.1} s",
        res.size,
        res.runs,
        if res.runs == 1 { "" } else { "s" },
        res.workers
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>()
            .join(","),
        res.machine.cpus,
        res.machine
            .cpu_model
            .as_deref()
            .map_or(String::new(), |m| format!(" ({m})")),
        res.elapsed_s
    );
    let _ = writeln!(
        o,
        "speedup = serial median / median (higher is better); vs best peer = median / the \
         fastest peer's median at the same workers (below 1: faster)"
    );
    for k in &res.kernels {
        let _ = writeln!(o, "\n{}", kernel_heading(res, k));
        if let Some(note) = kernel_note(k) {
            let _ = writeln!(o, "  {note}");
        }
        let _ = writeln!(o, "  {}", result_line(res.kernel_result(k)));
        let rows: Vec<[String; 6]> = res.kernel_rows(k).map(table_cells).collect();
        let mut width = TABLE_HEAD.map(|h| h.chars().count());
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut line = |cells: [&str; 6]| {
            let mut s = String::from(" ");
            for (i, (c, w)) in cells.iter().zip(width).enumerate() {
                let pad = w - c.chars().count();
                match i {
                    0 | 5 => {
                        s.push_str(c);
                        s.push_str(&" ".repeat(pad));
                    }
                    _ => {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                }
                s.push_str("  ");
            }
            let _ = writeln!(o, "{}", s.trim_end());
        };
        line(TABLE_HEAD);
        for r in &rows {
            line(r.each_ref().map(String::as_str));
        }
        for nm in res.not_measured.iter().filter(|x| x.kernel == *k) {
            let _ = writeln!(o, "  not measured: {}: {}", nm.runtime, nm.reason);
        }
    }
    if let Some(si) = &res.small_input {
        small_input_table(&mut o, si);
    }
    if !res.splice.is_empty() {
        let _ = writeln!(
            o,
            "\nspliced stencils (magpie splice, window 8): unspliced ÷ spliced time, every \
             spliced grid checked bit for bit against the unspliced one"
        );
        for s in &res.splice {
            match (&s.outcome, &s.error) {
                (Some(x), _) => {
                    let _ = writeln!(
                        o,
                        "  {:<8} x{}  n={} steps={} grain={}  spliced {}  unspliced {}  {:.2}×{}",
                        s.kernel,
                        s.workers,
                        x.n,
                        x.steps,
                        x.grain,
                        duration(x.spliced_median_s),
                        duration(x.unspliced_median_s),
                        x.speedup,
                        x.rayon_median_s
                            .map_or(String::new(), |r| format!("  rayon {}", duration(r)))
                    );
                }
                (None, e) => {
                    let _ = writeln!(
                        o,
                        "  {:<8} x{}  failed: {}",
                        s.kernel,
                        s.workers,
                        e.as_deref().unwrap_or("unknown")
                    );
                }
            }
        }
    }
    for l in &res.locality {
        let _ = writeln!(
            o,
            "\n{} locality (n = {}): modelled last-level misses on a virtual {}, median of {} \
             run(s); a model, not timings (this machine has {} socket(s))",
            l.kernel, l.n, l.topology, l.runs, res.machine.sockets
        );
        if let Some(e) = &l.error {
            let _ = writeln!(o, "  not modelled: {e}");
            continue;
        }
        let base = l.rows.first().map_or(1, |r| r.misses.max(1)) as f64;
        let remote_base = l.rows.first().map_or(1, |r| r.remote_bytes.max(1)) as f64;
        for r in &l.rows {
            let _ = writeln!(
                o,
                "  {:<13} {:>12} lines  {:>6.2}× {}   remote {:>9.2} MB  {:>6.2}×",
                r.strategy,
                r.misses,
                r.misses as f64 / base,
                l.rows.first().map_or("", |f| &f.strategy),
                r.remote_bytes as f64 / 1e6,
                r.remote_bytes as f64 / remote_base,
            );
        }
        for r in l.rows.iter().filter(|r| !r.iterations.is_empty()) {
            for line in crate::locality::iteration_lines(r, 10) {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    if let Some(c) = &res.corun {
        let _ = writeln!(o, "\nco-run (magpie corun, every sharing mode):");
        match (&c.report, &c.error) {
            (Some(r), _) => o.push_str(&crate::corun::table(r)),
            (None, e) => {
                let _ = writeln!(o, "  failed: {}", e.as_deref().unwrap_or("unknown"));
            }
        }
    }
    if let Some(d) = &res.dist {
        o.push_str(&crate::dist::table(d));
    }
    // Last, where a terminal leaves it in view: the headline.
    if let Some(h) = crate::headline::headline(res) {
        let _ = write!(o, "\n{}", crate::headline::text(&h));
    }
    o
}

pub(crate) fn run(a: SuiteArgs) -> Result<(), Failure> {
    // Bad MAGPIE_* variables are bad input here too, though the suite sets workers and policy.
    magpie::Builder::default()
        .from_env()
        .map_err(Failure::from_magpie)?;
    let plan = Plan::from_args(&a)?;
    // A report folder that cannot be made fails now, not after the suite.
    std::fs::create_dir_all(&a.out).map_err(|e| {
        Failure::Usage(format!(
            "cannot create {}: {e}; choose a folder you can write with --out",
            a.out.display()
        ))
    })?;
    let machine = machine();
    let started = Instant::now();
    // What is measured so far, rewritten after each kernel: a suite stopped part-way (Ctrl-C, a
    // time limit) leaves every kernel it finished, in results.json's format, rows and headline.
    let partial = a.out.join(PARTIAL);
    let mut done: Vec<String> = Vec::new();
    let (mut rows, mut not_measured) = measure_all(
        plan.kernels.clone(),
        plan.policies.clone(),
        plan.workers.clone(),
        plan.peers.clone(),
        plan.size,
        plan.runs,
        plan.rayon_builds.clone(),
        |k, rows, nm| {
            done.push(k.name().into());
            let mut rows = rows.to_vec();
            derive(&mut rows);
            let res = Results::measured(
                machine.clone(),
                &plan,
                done.clone(),
                started.elapsed().as_secs_f64(),
                rows,
                nm.to_vec(),
            );
            write_partial(&partial, &res);
        },
    )?;
    derive(&mut rows);
    // Peers with no faithful version of a kernel (the kernel's own list), after those that
    // could not be set up here.
    for &k in &plan.kernels {
        for (name, reason) in k.unavailable_peers() {
            if plan.peers.iter().any(|&p| cli::peer_parts(p).0 == *name) {
                not_measured.push(NotMeasured {
                    kernel: k.name().into(),
                    runtime: name.to_string(),
                    reason: reason.to_string(),
                });
            }
        }
    }
    let traces = if plan.traces.is_empty() {
        vec![]
    } else {
        let dir = a.out.join("traces");
        std::fs::create_dir_all(&dir).map_err(|e| {
            Failure::Failed(format!(
                "cannot create {}: {e}; choose a folder you can write with --out",
                dir.display()
            ))
        })?;
        plan.traces
            .iter()
            .map(|&k| {
                traced(
                    k,
                    k.size_n(plan.size),
                    plan.trace_workers(),
                    plan.trace_policy(),
                    &a.out,
                )
            })
            .collect()
    };
    let locality = plan.locality.as_ref().map_or_else(Vec::new, |l| {
        modelled(l, plan.size, plan.runs as u64, &cli::default_strategies())
    });
    let splice = if a.splice {
        spliced(&plan.kernels, &plan.workers, plan.size, plan.runs)
    } else {
        Vec::new()
    };
    let corun = plan
        .corun
        .map(|p| corunning(p, plan.trace_workers(), plan.size, plan.runs));
    let dist = plan.dist.map(|d| crate::dist::simulated(d, plan.size));
    let small_input = plan.kernels.contains(&Kernel::TreeSum).then(|| {
        eprintln!("small input: the 1,023-node tree sum entered from outside each pool");
        match magpie_bench::tree_sum::small_input(&plan.workers, plan.runs) {
            Ok(f) => SmallInputInfo {
                figure: Some(f),
                error: None,
            },
            Err(e) => SmallInputInfo {
                figure: None,
                error: Some(e),
            },
        }
    });
    let res = Results {
        small_input,
        traces,
        locality,
        splice,
        corun,
        dist,
        ..Results::measured(
            machine,
            &plan,
            plan.kernels.iter().map(|k| k.name().into()).collect(),
            started.elapsed().as_secs_f64(),
            rows,
            not_measured,
        )
    };

    let json = serde_json::to_string_pretty(&res)
        .map_err(|e| Failure::Failed(format!("cannot serialize the results: {e}")))?;
    let write = |name: &str, text: &str| {
        let p = a.out.join(name);
        std::fs::write(&p, text).map_err(|e| {
            Failure::Failed(format!(
                "cannot write {}: {e}; choose a folder you can write with --out",
                p.display()
            ))
        })
    };
    write("results.json", &json)?;
    write("index.html", &crate::html::page(&res))?;
    // results.json has it all now.
    let _ = std::fs::remove_file(&partial);
    if a.json {
        println!("{json}");
    } else {
        print!("{}", table(&res));
    }
    eprintln!(
        "report written to {} (index.html, results.json)",
        a.out.display()
    );

    let failed: Vec<String> = res
        .rows
        .iter()
        .filter(|r| r.failed())
        .map(|r| format!("{} {} x{}", r.kernel, r.label(), r.workers))
        .chain(
            res.traces
                .iter()
                .filter(|t| t.failed())
                .map(|t| format!("{} traced run x{}", t.kernel, t.workers)),
        )
        .chain(
            res.locality
                .iter()
                .filter(|l| l.error.is_some())
                .map(|l| format!("{} locality model", l.kernel)),
        )
        .chain(
            res.splice
                .iter()
                .filter(|s| s.error.is_some())
                .map(|s| format!("{} spliced x{}", s.kernel, s.workers)),
        )
        .chain(
            res.corun
                .iter()
                .filter(|c| c.error.is_some())
                .map(|_| "the co-run".to_string()),
        )
        .chain(
            res.small_input
                .iter()
                .filter(|c| c.error.is_some())
                .map(|_| "the small-input figure".to_string()),
        )
        .chain(
            res.dist
                .iter()
                .filter(|d| d.error.is_some())
                .map(|_| "the distributed simulation".to_string()),
        )
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Failed(format!(
            "{} configuration(s) failed (see the report): {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedup_and_best_peer() {
        let mk = |who, w, m: f64| {
            let mut r = Row::new(Kernel::Fib, Size::Ci, 20, who, w);
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
