//! The runner: measures one kernel on one runtime — the serial twin ([`run_serial`]), a magpie
//! pool ([`run_magpie`], with the pool's counter delta) or a peer ([`run_peer`]) — verifying
//! every run, and [`bench()`], which puts the three together into the [`BenchRecord`] that the
//! CLI prints (as a table or as JSON).

use crate::harness::{self, Measured, RunError};
pub use crate::kernel::Case;
use crate::kernel::Runtime;
use crate::{Kernel, Peer};
use serde::{Deserialize, Serialize};
use std::num::NonZero;

/// Times `kernel`'s serial twin `runs` times, verifying each result.
pub fn run_serial(case: &Case, runs: usize) -> Result<Measured, RunError> {
    case.check().map_err(RunError::Setup)?;
    (case.kernel.def().measure)(&Runtime::Serial, case, runs)
}

/// Times `kernel` on `pool` `runs` times, verifies each result, and records the pool's counter
/// delta over the runs (also when a run stops early, in which case the error is returned).
pub fn run_magpie(pool: &magpie::Pool, case: &Case, runs: usize) -> Result<Measured, RunError> {
    run_magpie_with_stats(pool, case, runs).0
}

/// [`run_magpie`], also returning the counter delta when the measurement stopped early.
pub fn run_magpie_with_stats(
    pool: &magpie::Pool,
    case: &Case,
    runs: usize,
) -> (Result<Measured, RunError>, magpie::Stats) {
    if let Err(e) = case.check() {
        return (Err(RunError::Setup(e)), magpie::Stats::default());
    }
    let before = pool.stats();
    let r = (case.kernel.def().measure)(&Runtime::Magpie(pool), case, runs);
    let stats = pool.stats() - before;
    (
        r.map(|mut m| {
            m.stats = Some(stats);
            m
        }),
        stats,
    )
}

/// Times a peer runtime's version of `kernel` on a pool of `workers` threads, built for this
/// measurement and dropped after it.
pub fn run_peer(
    peer: Peer,
    case: &Case,
    workers: usize,
    runs: usize,
) -> Result<Measured, RunError> {
    let kernel = case.kernel;
    case.check().map_err(RunError::Setup)?;
    if !kernel.peers().contains(&peer) {
        return Err(RunError::Setup(format!(
            "{peer} has no version of {kernel}"
        )));
    }
    let n = case.n;
    match peer {
        Peer::Tbb | Peer::OpenMp => {
            let native = peer.native().expect("a native peer");
            if !native.kernels().contains(&kernel.name()) {
                return Err(RunError::Setup(format!(
                    "{peer} has no version of {kernel}"
                )));
            }
            if case.grain.is_some() || case.tree.is_some() {
                return Err(RunError::Setup(format!(
                    "the {} program takes no grain or tree: it runs the kernel's default form",
                    native.name()
                )));
            }
            let results = native
                .run(kernel.name(), n, workers, runs)
                .map_err(RunError::Setup)?;
            let failure = results.iter().position(|&(_, ok)| !ok).map(|i| {
                format!(
                    "run {}: the {} program's check failed",
                    i + 1,
                    native.name()
                )
            });
            Ok(Measured {
                timing: harness::Timing {
                    times_s: results.iter().map(|&(t, _)| t).collect(),
                },
                verified: failure.is_none(),
                failure,
                // The C++ programs report whether their check passed, not their answer.
                result: None,
                stats: None,
            })
        }
        Peer::RayonJoin | Peer::RayonScope | Peer::RayonIter => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(workers)
                .build()
                .map_err(|e| RunError::Setup(e.to_string()))?;
            (kernel.def().measure)(&Runtime::Rayon(&pool), case, runs)
        }
        Peer::ChiliJoin => {
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: NonZero::new(workers),
                ..Default::default()
            });
            (kernel.def().measure)(&Runtime::Chili(&pool), case, runs)
        }
    }
}

/// What `magpie bench` measures.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The kernel.
    pub kernel: Kernel,
    /// Its problem size.
    pub n: u64,
    /// Timed runs of each version.
    pub runs: usize,
    /// Whether to time the serial twin (for `ratio_to_serial`).
    pub serial: bool,
    /// Whether to time the kernel's peers ([`Kernel::peers`]).
    pub peers: bool,
    /// The grain ([`Case::grain`]).
    pub grain: Option<u64>,
    /// The UTS tree ([`Case::tree`]).
    pub tree: Option<crate::kernels::uts::tree::Params>,
}

/// One peer's line in a [`BenchRecord`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerRecord {
    /// `rayon-join`, `rayon-scope`, `chili-join`.
    pub name: String,
    /// Median wall time of a run, seconds.
    pub median_s: Option<f64>,
    /// Fastest run, seconds.
    pub min_s: Option<f64>,
    /// Slowest run, seconds.
    pub max_s: Option<f64>,
    /// `median_s / serial_median_s`.
    pub ratio_to_serial: Option<f64>,
    /// For FJ: `median_s` per task, nanoseconds.
    pub per_task_ns: Option<f64>,
    /// Whether every run verified.
    pub verified: bool,
    /// The peer's answer ([`BenchRecord::result`]); `null` for the C++ peers, whose programs
    /// report only whether their check passed.
    #[serde(default)]
    pub result: Option<String>,
    /// Why the peer's runs failed, if they did.
    pub error: Option<String>,
}

/// A peer that has no version of the kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    /// The runtime.
    pub name: String,
    /// Why it is not measured.
    pub reason: String,
}

/// Everything `magpie bench` measured; its JSON form is the CLI's `--json` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// Kernel name.
    pub kernel: String,
    /// Problem size.
    pub n: u64,
    /// The grain, when one was given (`null`: the kernel's default).
    #[serde(default)]
    pub grain: Option<u64>,
    /// UTS: the tree's parameters, when a tree was given instead of `n`.
    #[serde(default)]
    pub tree: Option<String>,
    /// magpie's spawning policy.
    pub policy: String,
    /// Workers (magpie's, and each peer's thread count).
    pub workers: usize,
    /// Timed runs of each version.
    pub runs: usize,
    /// magpie: median wall time of a run, seconds (`null` when the kernel stopped).
    pub median_s: Option<f64>,
    /// magpie: fastest run.
    pub min_s: Option<f64>,
    /// magpie: slowest run.
    pub max_s: Option<f64>,
    /// magpie: every run's time, in run order.
    pub times_s: Vec<f64>,
    /// Serial twin: median (`null` when not timed).
    pub serial_median_s: Option<f64>,
    /// Serial twin: fastest run.
    pub serial_min_s: Option<f64>,
    /// Serial twin: slowest run.
    pub serial_max_s: Option<f64>,
    /// `median_s / serial_median_s`.
    pub ratio_to_serial: Option<f64>,
    /// Tasks per run (FJ kernels).
    pub tasks_per_run: Option<u64>,
    /// magpie `median_s` per task, nanoseconds (FJ kernels).
    pub per_task_ns: Option<f64>,
    /// Whether every timed run (serial, magpie, peers) passed its verifier.
    pub verified: bool,
    /// The kernel's answer, what a user can compare with a known value: fib(n)'s value, the
    /// solutions counted, a tree's node count, a checksum of the output (floats to 12
    /// significant digits). magpie's first verified run's; the serial twin's when magpie has no
    /// verified run; `null` when neither has.
    #[serde(default)]
    pub result: Option<String>,
    /// The serial twin's answer (`null` when it was not timed or did not verify); equal to
    /// `result` when both verified, but for fine-sum, whose float sum is verified within 1e-9.
    #[serde(default)]
    pub serial_result: Option<String>,
    /// `true` when magpie stopped the kernel at its stack limit (work-first spawning).
    pub stopped: bool,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
    /// magpie's counters over the timed runs (after − before).
    pub stats: magpie::Stats,
    /// Peer measurements, same workers, `n` and runs.
    pub peers: Vec<PeerRecord>,
    /// Peers without a version of this kernel.
    pub peers_unavailable: Vec<Unavailable>,
    /// Peak resident set size of the process, KiB (filled in by the CLI at the end).
    pub peak_rss_kib: Option<u64>,
    /// What steals cost, when the pool measured it ([`magpie::Builder::measure_overheads`]).
    #[serde(default)]
    pub overheads: Option<Overheads>,
    /// Whether magpie's thieves took half of a victim's unpublished tasks per steal
    /// ([`magpie::Builder::steal_half`], the default) rather than one item.
    #[serde(default = "yes")]
    pub steal_half: bool,
}

fn yes() -> bool {
    true
}

/// What steals cost over magpie's timed runs, as shares of the workers' total time (workers ×
/// the summed wall time of the runs), like Friendly Barriers' Fig. 5 and 7.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overheads {
    /// Victims' time lost to steals ([`magpie::Stats::victim_ns`]), seconds.
    pub victim_s: f64,
    /// `victim_s` ÷ (workers × run time).
    pub victim_share: f64,
    /// Thieves' time in steal rounds that took something, seconds.
    pub steal_s: f64,
    /// `steal_s` ÷ (workers × run time).
    pub steal_share: f64,
    /// Thieves' time in steal rounds that found nothing (idle searching), seconds.
    pub search_s: f64,
    /// `search_s` ÷ (workers × run time).
    pub search_share: f64,
    /// Successful steals.
    pub steals: u64,
    /// Mean thief time per successful steal round, nanoseconds.
    pub ns_per_steal: Option<f64>,
}

impl Overheads {
    /// From a pool's counters over runs that took `times_s` on `workers` workers.
    pub fn new(s: &magpie::Stats, times_s: &[f64], workers: usize) -> Overheads {
        let total = times_s.iter().sum::<f64>() * workers as f64;
        let share = |ns: u64| {
            if total > 0.0 {
                ns as f64 * 1e-9 / total
            } else {
                0.0
            }
        };
        let steals = s.steals_child + s.steals_continuation;
        Overheads {
            victim_s: s.victim_ns as f64 * 1e-9,
            victim_share: share(s.victim_ns),
            steal_s: s.steal_ns as f64 * 1e-9,
            steal_share: share(s.steal_ns),
            search_s: s.search_ns as f64 * 1e-9,
            search_share: share(s.search_ns),
            steals,
            ns_per_steal: (steals > 0).then(|| s.steal_ns as f64 / steals as f64),
        }
    }
}

impl BenchRecord {
    /// The record as one pretty-printed JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a bench record serializes")
    }
}

/// Keys every `magpie bench --json` object has (the list, plus the ratio, the peak RSS
/// and the answer).
pub const REQUIRED_KEYS: [&str; 14] = [
    "kernel",
    "n",
    "policy",
    "workers",
    "runs",
    "median_s",
    "min_s",
    "max_s",
    "serial_median_s",
    "verified",
    "result",
    "stats",
    "ratio_to_serial",
    "peak_rss_kib",
];

/// Whether a series of rounds has ended in an error.
pub fn failed(acc: &Option<Result<Measured, RunError>>) -> bool {
    matches!(acc, Some(Err(_)))
}

/// Adds one round's measurement to the runs so far (times, verification, counters); an error
/// ends the series. Benchmarks run in rounds, one run of each runtime per round, so that drift in
/// a shared machine's speed falls on every runtime alike.
pub fn merge(acc: &mut Option<Result<Measured, RunError>>, next: Result<Measured, RunError>) {
    match (acc.as_mut(), next) {
        (None, next) => *acc = Some(next),
        (Some(Ok(m)), Ok(n)) => {
            m.timing.times_s.extend(n.timing.times_s);
            m.verified &= n.verified;
            if m.failure.is_none() {
                m.failure = n.failure;
            }
            if m.result.is_none() {
                m.result = n.result;
            }
            m.stats = match (m.stats, n.stats) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        (Some(Ok(_)), Err(e)) => *acc = Some(Err(e)),
        (Some(Err(_)), _) => {}
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn per_task(kernel: Kernel, n: u64, median: Option<f64>) -> Option<f64> {
    Some(median? / kernel.tasks_per_run(n)? as f64 * 1e9)
}

/// Why chili has no chunked UTS: `run_peer` refuses it, and `bench` lists chili as not measured.
/// Why `peer` cannot run the kernel as `cfg` asks, if it cannot: it is not built here, or it has
/// no form of the asked grain or tree.
fn peer_unavailable(peer: Peer, cfg: &BenchConfig) -> Option<String> {
    if let Some(why) = peer.unavailable_reason() {
        return Some(why);
    }
    if (cfg.grain.is_some() || cfg.tree.is_some()) && peer.native().is_some() {
        return Some(
            "the C++ program takes no grain or tree: it runs the kernel's default form".into(),
        );
    }
    if cfg.grain.is_some() {
        let without = cfg.kernel.def().peers_without_grain;
        if let Some(&(_, why)) = without.iter().find(|&&(p, _)| p == peer) {
            return Some(why.into());
        }
    }
    None
}

/// Measures, round by round, the serial twin (if asked), `kernel` on `pool`, and each peer with
/// the pool's worker count. Stops after magpie when magpie's runs failed to run to the end.
pub fn bench(cfg: &BenchConfig, pool: magpie::Pool) -> BenchRecord {
    let p = &pool;
    bench_with(
        cfg,
        &pool,
        &mut |case| run_magpie_with_stats(p, case, 1),
        &mut |peer, case, workers| run_peer(peer, case, workers, 1),
    )
}

/// One run of magpie, verified, with the pool's counters over it.
pub type MagpieRun = (Result<Measured, RunError>, magpie::Stats);

/// [`bench()`], with magpie's run and a peer's run (one run each, verified) made by `magpie` and
/// `peer_run`: for a kernel that runs in another build (the rayon programs, which magpie runs as
/// rayon on magpie's rayon-core). `pool` gives the policy, the workers and the pool's settings
/// the record names.
pub fn bench_with(
    cfg: &BenchConfig,
    pool: &magpie::Pool,
    magpie: &mut dyn FnMut(&Case) -> MagpieRun,
    peer_run: &mut dyn FnMut(Peer, &Case, usize) -> Result<Measured, RunError>,
) -> BenchRecord {
    let BenchConfig {
        kernel, n, runs, ..
    } = *cfg;
    let case = Case {
        kernel,
        n,
        grain: cfg.grain,
        tree: cfg.tree,
    };
    let workers = pool.workers();
    let measured = pool.measures_overheads();
    let steal_half = pool.steals_half();
    let mut errors: Vec<String> = vec![];
    let mut verified = true;
    // Peers that cannot run here (C++ peers not built, or without a form of what was asked) are
    // listed as not measured, with why.
    let mut unavailable: Vec<Unavailable> = vec![];
    let peer_list: Vec<Peer> = if cfg.peers {
        kernel
            .peers()
            .iter()
            .copied()
            .filter(|&p| match peer_unavailable(p, cfg) {
                None => true,
                Some(reason) => {
                    unavailable.push(Unavailable {
                        name: p.name().to_string(),
                        reason,
                    });
                    false
                }
            })
            .collect()
    } else {
        vec![]
    };

    // Rounds: one run of each runtime per round, so that drift in the machine's speed (these are
    // shared machines) falls on every runtime alike instead of on whichever ran in a slow stretch.
    let mut serial_acc: Option<Result<Measured, RunError>> = None;
    let mut magpie_acc: Option<Result<Measured, RunError>> = None;
    let mut stats = magpie::Stats::default();
    let mut peer_acc: Vec<Option<Result<Measured, RunError>>> =
        peer_list.iter().map(|_| None).collect();
    for _ in 0..runs {
        if cfg.serial && !failed(&serial_acc) {
            merge(&mut serial_acc, run_serial(&case, 1));
        }
        if !failed(&magpie_acc) {
            let (r, s) = magpie(&case);
            stats = stats + s;
            merge(&mut magpie_acc, r);
        }
        if failed(&magpie_acc) {
            break;
        }
        for (acc, &peer) in peer_acc.iter_mut().zip(&peer_list) {
            if !failed(acc) {
                merge(acc, peer_run(peer, &case, workers));
            }
        }
    }

    let mut serial_result = None;
    let serial = match serial_acc {
        None => None,
        Some(Ok(m)) => {
            if let Some(f) = &m.failure {
                verified = false;
                errors.push(format!("serial twin failed verification: {f}"));
            }
            serial_result = m.result;
            Some(m.timing)
        }
        Some(Err(e)) => {
            verified = false;
            errors.push(format!("serial twin: {e}"));
            None
        }
    };
    let serial_median = serial.as_ref().and_then(|t| t.median());

    let policy = pool.policy().to_string();
    let mut stopped = false;
    let mut result = None;
    let timing = match magpie_acc.expect("at least one run") {
        Ok(m) => {
            if let Some(f) = &m.failure {
                verified = false;
                errors.push(format!("magpie failed verification: {f}"));
            }
            result = m.result;
            Some(m.timing)
        }
        Err(e) => {
            verified = false;
            stopped = matches!(e, RunError::Stopped(_));
            errors.push(match e {
                RunError::Stopped(m) => m,
                other => other.to_string(),
            });
            None
        }
    };
    let median = timing.as_ref().and_then(|t| t.median());

    let mut peers = vec![];
    for (acc, &peer) in peer_acc.into_iter().zip(&peer_list) {
        let Some(acc) = acc else { continue };
        let rec = match acc {
            Ok(m) => {
                if let Some(f) = &m.failure {
                    verified = false;
                    errors.push(format!("{peer} failed verification: {f}"));
                }
                let med = m.timing.median();
                PeerRecord {
                    name: peer.name().into(),
                    median_s: med,
                    min_s: m.timing.min(),
                    max_s: m.timing.max(),
                    ratio_to_serial: ratio(med, serial_median),
                    per_task_ns: per_task(kernel, n, med),
                    verified: m.verified,
                    result: m.result,
                    error: m.failure.map(|f| format!("failed verification: {f}")),
                }
            }
            Err(e) => {
                verified = false;
                errors.push(format!("{peer}: {e}"));
                PeerRecord {
                    name: peer.name().into(),
                    median_s: None,
                    min_s: None,
                    max_s: None,
                    ratio_to_serial: None,
                    per_task_ns: None,
                    verified: false,
                    result: None,
                    error: Some(e.to_string()),
                }
            }
        };
        peers.push(rec);
    }

    let times_s = timing
        .as_ref()
        .map(|t| t.times_s.clone())
        .unwrap_or_default();
    let overheads = measured.then(|| Overheads::new(&stats, &times_s, workers));
    BenchRecord {
        kernel: kernel.name().into(),
        n,
        grain: cfg.grain,
        tree: cfg.tree.map(|t| t.to_string()),
        policy,
        workers,
        runs,
        median_s: median,
        min_s: timing.as_ref().and_then(|t| t.min()),
        max_s: timing.as_ref().and_then(|t| t.max()),
        times_s,
        serial_median_s: serial_median,
        serial_min_s: serial.as_ref().and_then(|t| t.min()),
        serial_max_s: serial.as_ref().and_then(|t| t.max()),
        ratio_to_serial: ratio(median, serial_median),
        tasks_per_run: kernel.tasks_per_run(n),
        per_task_ns: per_task(kernel, n, median),
        verified,
        result: result.or_else(|| serial_result.clone()),
        serial_result,
        stopped,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        stats,
        peers,
        peers_unavailable: kernel
            .unavailable_peers()
            .iter()
            .map(|(name, reason)| Unavailable {
                name: name.to_string(),
                reason: reason.to_string(),
            })
            .chain(unavailable)
            .collect(),
        peak_rss_kib: harness::peak_rss_kib(),
        overheads,
        steal_half,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::*;
    use crate::Size;
    use magpie::{Policy, Pool};

    const POLICIES: [Policy; 3] = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];

    /// Whether `got` is the serial twin's answer `want`: the same words, but for fine-sum, whose
    /// float sum is verified within 1e-9 (its last printed digits may differ).
    fn same_answer(k: Kernel, got: &Option<String>, want: &str) -> bool {
        let Some(got) = got else { return false };
        if k != programs::FINE_SUM {
            return got == want;
        }
        let num = |s: &str| s.trim_start_matches("sum ").parse::<f64>().unwrap();
        programs::close(num(got), num(want))
    }

    #[test]
    fn every_kernel_policy_and_width_verifies() {
        for &k in Kernel::ALL {
            let case = Case::new(k, k.size_n(Size::Ci));
            let s = run_serial(&case, 1).unwrap();
            assert!(s.verified, "{k} serial: {:?}", s.failure);
            // Every kernel answers, and magpie answers as the serial twin does.
            let answer = s.result.expect("a verified run answers");
            assert!(
                !answer.is_empty() && !answer.contains('\n'),
                "{k}: {answer:?}"
            );
            // The programs reach magpie through rayon-core, in another build (magpie-cli runs it);
            // here a magpie pool refuses them, saying how to build it.
            if k.is_program() {
                let pool = Pool::builder().workers(2).build().unwrap();
                let e = run_magpie(&pool, &case, 1).unwrap_err();
                assert!(
                    matches!(e, RunError::Setup(ref m) if m.contains("build-rayon-compare.sh")),
                    "{k}: {e}"
                );
                continue;
            }
            // Workloads test every policy and width in their own modules; here, the runner's path.
            let (policies, widths) = if k.def().workload {
                (&POLICIES[2..], &[2][..])
            } else {
                (&POLICIES[..], &[1, 2][..])
            };
            for &p in policies {
                for &w in widths {
                    let pool = Pool::builder().workers(w).policy(p).build().unwrap();
                    let m = run_magpie(&pool, &case, 2).unwrap();
                    assert!(m.verified, "{k} {p} x{w}: {:?}", m.failure);
                    assert!(
                        same_answer(k, &m.result, &answer),
                        "{k} {p} x{w}: {:?}, the serial twin {answer:?}",
                        m.result
                    );
                    assert_eq!(m.timing.times_s.len(), 2);
                    let st = m.stats.unwrap();
                    assert!(st.spawns_work_first + st.spawns_help_first > 0, "{k} {p}");
                }
            }
        }
    }

    /// The answers of kernels with a known one: fib(20), the tree sum of depth 10 (1 + ... +
    /// 1023), the 8-queens solutions, the T1XS tree (the T1 family at depth 6), FJ's tasks, the
    /// torus's vertices, the word count's words; on the serial twin and on magpie alike (the word
    /// count, a rayon program, on rayon: magpie runs it from another build).
    #[test]
    fn kernels_answer_known_values() {
        let pool = Pool::builder().workers(2).build().unwrap();
        let fj_ci = fj::CI * fj::TASKS as u64;
        let pdfs_nodes = pdfs::CI * pdfs::CI;
        for (kernel, n, want) in [
            (fib::KERNEL, 20, "fib(20) = 6765".to_string()),
            (tree_sum::KERNEL, 10, "sum of 1023 nodes = 523776".into()),
            (nqueens::KERNEL, 8, "92 solutions".into()),
            (nqueens::KERNEL, 10, "724 solutions".into()),
            (uts::KERNEL, 6, "16000 nodes, ".into()),
            (fj::FJ, fj::CI, format!("{fj_ci} tasks run")),
            (fj::FJ_REC, fj::CI, format!("{fj_ci} tasks run")),
            (
                pdfs::KERNEL,
                pdfs::CI,
                format!("{pdfs_nodes} of {pdfs_nodes} vertices reached"),
            ),
            // 8 words a line, from a ten-word vocabulary.
            (
                programs::WORD_COUNT,
                100,
                "10 distinct words, 800 in all".into(),
            ),
            (
                sort::KERNEL,
                3,
                sort::answer({
                    let mut v = sort::input(3);
                    v.sort_unstable();
                    v
                }),
            ),
        ] {
            let case = Case::new(kernel, n);
            let parallel = if kernel.is_program() {
                run_peer(Peer::RayonIter, &case, 2, 1)
            } else {
                run_magpie(&pool, &case, 1)
            };
            for m in [run_serial(&case, 1), parallel] {
                let got = m.unwrap().result.unwrap();
                assert!(
                    got.starts_with(&want),
                    "{kernel} {n}: {got}, expected {want}"
                );
            }
        }
        assert_eq!(
            sort::answer([3, 5]),
            "sorted, 2 keys, checksum 0x000000000000000d"
        );
    }

    #[test]
    fn peers_verify_and_others_are_refused() {
        for &k in Kernel::ALL {
            let case = Case::new(k, k.size_n(Size::Ci));
            let answer = run_serial(&case, 1).unwrap().result.unwrap();
            for &peer in k.peers() {
                if let Some(why) = peer.unavailable_reason() {
                    eprintln!("skipped {peer} on {k}: {why}");
                    continue;
                }
                let widths = if k.def().workload || k.is_program() {
                    &[2][..]
                } else {
                    &[1, 2]
                };
                for &w in widths {
                    let m = run_peer(peer, &case, w, 1).unwrap();
                    assert!(m.verified, "{peer} {k} x{w}");
                    // The Rust peers answer as the serial twin does; the C++ ones do not say.
                    if peer.native().is_none() {
                        assert!(same_answer(k, &m.result, &answer), "{peer} {k} x{w}");
                    } else {
                        assert_eq!(m.result, None);
                    }
                }
            }
        }
        assert!(matches!(
            run_peer(Peer::ChiliJoin, &Case::new(fj::FJ, 1), 1, 1),
            Err(RunError::Setup(_))
        ));
        assert!(matches!(
            run_peer(Peer::RayonScope, &Case::new(pdfs::KERNEL, 1), 1, 1),
            Err(RunError::Setup(_))
        ));
        // rayon's parallel iterators run the programs only, and the programs have no other peer.
        assert!(matches!(
            run_peer(Peer::RayonIter, &Case::new(fib::KERNEL, 10), 1, 1),
            Err(RunError::Setup(_))
        ));
        for peer in [Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb] {
            assert!(matches!(
                run_peer(peer, &Case::new(programs::SPMV, 10), 1, 1),
                Err(RunError::Setup(_))
            ));
        }
    }

    #[test]
    fn grains_and_trees_reach_the_kernels() {
        // fib with a cutoff, on every runtime.
        let case = Case {
            grain: Some(12),
            ..Case::new(fib::KERNEL, 22)
        };
        let pool = Pool::builder().workers(2).build().unwrap();
        assert!(run_serial(&case, 1).unwrap().verified);
        let m = run_magpie(&pool, &case, 1).unwrap();
        assert!(m.verified);
        // fib(22) with fib(12) and below serial: far fewer spawns than the ~28,000 without.
        let st = m.stats.unwrap();
        assert!(st.spawns_work_first + st.spawns_help_first < 1000, "{st:?}");
        for peer in [Peer::RayonJoin, Peer::ChiliJoin] {
            assert!(run_peer(peer, &case, 2, 1).unwrap().verified, "{peer}");
        }
        // The C++ programs take no grain: a setup error (listed as not measured), not a wrong run.
        let e = run_peer(Peer::Tbb, &case, 2, 1).unwrap_err();
        assert!(matches!(e, RunError::Setup(_)), "{e}");
        // A workload's grain.
        let case = Case {
            grain: Some(3),
            ..Case::new(sor::KERNEL, 64)
        };
        assert!(run_magpie(&pool, &case, 1).unwrap().verified);
        // The grains of the kernels written out per runtime, on every runtime; magpie's spawn
        // count shows the grain was used (these grains fork more than the defaults).
        let spawns = |case: &Case| {
            let m = run_magpie(&pool, case, 1).unwrap();
            assert!(m.verified, "{} grain {:?}", case.kernel, case.grain);
            let st = m.stats.unwrap();
            st.spawns_work_first + st.spawns_help_first
        };
        for case in [
            Case {
                grain: Some(2),
                ..Case::new(sort::KERNEL, 20_000)
            },
            Case {
                grain: Some(8),
                ..Case::new(matmul::KERNEL, 64)
            },
            Case {
                grain: Some(1),
                ..Case::new(heat::KERNEL, 37)
            },
            Case {
                grain: Some(1),
                ..Case::new(jacobi::KERNEL, 37)
            },
            Case {
                grain: Some(8),
                ..Case::new(nqueens::KERNEL, 9)
            },
        ] {
            let k = case.kernel;
            assert!(run_serial(&case, 1).unwrap().verified, "{k}");
            let default = Case {
                grain: None,
                ..case
            };
            assert!(spawns(&case) > spawns(&default), "{k}");
            for &peer in k.peers() {
                if peer.native().is_none() {
                    assert!(run_peer(peer, &case, 2, 1).unwrap().verified, "{k} {peer}");
                }
            }
        }
        // A named UTS tree instead of the T1 family; n is then ignored.
        let case = Case {
            tree: Some(uts::named("T3XS").unwrap()),
            ..Case::new(uts::KERNEL, 0)
        };
        assert!(run_serial(&case, 1).unwrap().verified);
        assert!(run_magpie(&pool, &case, 1).unwrap().verified);
        assert!(run_peer(Peer::ChiliJoin, &case, 2, 1).unwrap().verified);
        // UTS in chunks (the reference's chunk size): magpie and rayon; chili has no scope.
        let case = Case {
            grain: Some(4),
            ..case
        };
        assert!(run_magpie(&pool, &case, 1).unwrap().verified);
        assert!(run_peer(Peer::RayonScope, &case, 2, 1).unwrap().verified);
        let e = run_peer(Peer::ChiliJoin, &case, 2, 1).unwrap_err();
        assert!(matches!(e, RunError::Setup(_)), "{e}");
        // Knobs that do not fit the kernel are refused with one line.
        for (case, what) in [
            (
                Case {
                    grain: Some(0),
                    ..Case::new(fib::KERNEL, 20)
                },
                "grain",
            ),
            (
                Case {
                    grain: Some(0),
                    ..Case::new(sor::KERNEL, 64)
                },
                "grain",
            ),
            (
                Case {
                    grain: Some(4),
                    ..Case::new(pdfs::KERNEL, 8)
                },
                "no grain",
            ),
            (
                Case {
                    grain: Some(17),
                    ..Case::new(nqueens::KERNEL, 8)
                },
                "grain",
            ),
            (
                Case {
                    grain: Some(0),
                    ..Case::new(matmul::KERNEL, 64)
                },
                "grain",
            ),
            (
                Case {
                    tree: Some(uts::named("T1XS").unwrap()),
                    ..Case::new(fib::KERNEL, 20)
                },
                "--tree",
            ),
        ] {
            let e = run_magpie(&pool, &case, 1).unwrap_err().to_string();
            assert!(e.contains(what) && !e.contains('\n'), "{e}");
            assert!(run_serial(&case, 1).is_err());
        }
    }

    #[test]
    fn a_peer_without_the_asked_form_is_listed_as_not_measured_not_failed() {
        // Chunked UTS needs a scope; chili has only join. `magpie bench uts --grain G` used to
        // fail verification over it, which stopped scripts that asked for chunked UTS.
        let pool = Pool::builder().workers(2).build().unwrap();
        let cfg = BenchConfig {
            kernel: uts::KERNEL,
            n: 6,
            runs: 1,
            serial: true,
            peers: true,
            grain: Some(32),
            tree: None,
        };
        let r = bench(&cfg, pool);
        assert!(r.verified && r.error.is_none(), "{r:?}");
        assert!(
            r.peers.iter().all(|p| p.name != "chili-join"),
            "{:?}",
            r.peers
        );
        let chili = r.peers_unavailable.iter().find(|u| u.name == "chili-join");
        assert!(
            chili.is_some_and(|u| u.reason.contains("no chunked UTS")),
            "{r:?}"
        );
        assert!(r
            .peers
            .iter()
            .any(|p| p.name == "rayon-scope" && p.verified));
    }

    #[test]
    fn bench_record_has_everything() {
        let pool = Pool::builder().workers(2).build().unwrap();
        let cfg = BenchConfig {
            kernel: fj::FJ,
            n: fj::CI,
            runs: 3,
            serial: true,
            peers: true,
            grain: None,
            tree: None,
        };
        let r = bench(&cfg, pool);
        assert!(r.verified && r.error.is_none() && !r.stopped, "{r:?}");
        assert_eq!(r.times_s.len(), 3);
        // The answer: magpie's, the serial twin's and the Rust peers' alike.
        let tasks = format!("{} tasks run", fj::CI * 1024);
        assert_eq!(r.result.as_deref(), Some(tasks.as_str()));
        assert_eq!(r.serial_result, r.result);
        assert_eq!(r.peers[0].result, r.result);
        assert!(r.median_s.is_some() && r.serial_median_s.is_some() && r.ratio_to_serial.is_some());
        assert_eq!(r.tasks_per_run, Some(fj::CI * 1024));
        // Every peer is either measured or listed as not measured (chili has no scope; the C++
        // peers are listed when not built), never silently dropped.
        assert_eq!(r.peers[0].name, "rayon-scope");
        let mut all: Vec<&str> = r.peers.iter().map(|p| p.name.as_str()).collect();
        all.extend(r.peers_unavailable.iter().map(|u| u.name.as_str()));
        all.sort_unstable();
        assert_eq!(
            all,
            ["chili", "openmp-task", "rayon-scope", "tbb-task-group"]
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        for key in REQUIRED_KEYS.iter().copied().chain(["peers"]) {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert!(v["stats"].is_object());
        // The CLI's report reads children's records back.
        let back: BenchRecord = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(
            (back.stats, back.verified, back.peers.len()),
            (r.stats, true, r.peers.len())
        );
        assert_eq!(v["result"], tasks.as_str());
        // Records written before the answers were recorded still load, without one.
        let mut old = v.clone();
        let o = old.as_object_mut().unwrap();
        o.remove("result");
        o.remove("serial_result");
        for p in o["peers"].as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("result");
        }
        let back: BenchRecord = serde_json::from_value(old).unwrap();
        assert_eq!((back.result, back.peers[0].result.clone()), (None, None));
    }

    #[test]
    fn stack_limit_is_a_stop_not_a_crash() {
        let pool = Pool::builder()
            .workers(1)
            .policy(Policy::WorkFirst)
            .max_fibers(16)
            // 64 KiB stacks: no child can run in place, so every spawn takes a fiber.
            .stack_size(64 << 10)
            .build()
            .unwrap();
        let cfg = BenchConfig {
            kernel: pdfs::KERNEL,
            n: pdfs::CI,
            runs: 1,
            serial: false,
            peers: true,
            grain: None,
            tree: None,
        };
        let r = bench(&cfg, pool);
        assert!(r.stopped && !r.verified, "{r:?}");
        assert!(r.error.as_deref().unwrap().contains("stack limit"));
        assert!(r.median_s.is_none());
        // Neither magpie nor (untimed) the serial twin answered.
        assert_eq!((r.result, r.serial_result), (None, None));
        // With the serial twin timed, its answer is the record's.
        let pool = Pool::builder()
            .workers(1)
            .policy(Policy::WorkFirst)
            .max_fibers(16)
            .stack_size(64 << 10)
            .build()
            .unwrap();
        let r = bench(
            &BenchConfig {
                serial: true,
                peers: false,
                ..cfg
            },
            pool,
        );
        assert!(r.stopped && r.serial_result.is_some(), "{r:?}");
        assert_eq!(r.result, r.serial_result);
    }
}
