//! The kernels a task collection runs, each with its answer checked on every run.
//!
//! - `uts`: the Unbalanced Tree Search trees of the benchmark suite (`magpie_bench::kernels::uts`), a
//!   node per task (its 24-byte generator state), children spawned into the rank's deque; the
//!   node, leaf and depth counts are gathered over the ranks and checked against the published
//!   count or the serial search.
//! - `hf` and `tce`: synthetic iterative kernels after the thesis's two applications (§5.5.1),
//!   flat collections whose task costs are skewed and the same in every iteration, so that
//!   retention and the persistence-based balancers have something to learn. A task is its id;
//!   it runs `cost(id)` units of a fixed integer mix (a unit is 256 xorshift steps, a few
//!   hundred nanoseconds) and adds the result to a wrapping sum, which the ranks' sums, added, must
//!   equal the serial twin's, in every iteration.
//!   - `hf` (Hartree–Fock-like): `n × n` pair tasks (i, j) over `n` shells; a pair is screened
//!     out (a null task of cost 0) when the product of its shells' pseudo-random magnitudes is
//!     below a threshold, as Schwarz screening drops most pairs; the others cost more for
//!     heavier shells (1 to 64 units per shell pair).
//!   - `tce` (tensor-contraction-like): block pairs (a, b) over `n` blocks of pseudo-random
//!     sizes 4 to 32, nonzero unless symmetry forbids them (a + b ≡ 0 mod 3); a block pair costs
//!     the product of its sizes, in units.
//!
//!   Ranks are seeded with contiguous ranges of ids, so the heavy shells and blocks make some
//!   ranks far busier than others.

use magpie_bench::kernels::uts;
use magpie_dist::collection::{Comm, Entry, IterationReport, Strategy, TaskCollection, Transport};
use serde::{Deserialize, Serialize};

/// How a kernel runs on its ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The collection's strategy.
    pub strategy: Strategy,
    /// How thieves steal.
    pub transport: Transport,
    /// Iterations (`process` calls).
    pub iterations: usize,
    /// Record every rank's timeline ([`magpie_dist::timeline`]).
    pub timeline: bool,
    /// Workers of the magpie pool each rank runs its tasks' insides on (1: none, the rank's
    /// own thread runs them). Only the synthetic kernels' tasks have insides to split.
    pub workers: usize,
    /// Rank 0 shows the iterations' progress on stderr (`magpie_view::progress`: a bar on a
    /// terminal, a line per iteration otherwise).
    pub progress: bool,
}

/// Rank 0's progress over the iterations, when asked for.
fn iteration_progress(o: &Options, rank: usize) -> Option<magpie_view::progress::Progress> {
    (o.progress && rank == 0)
        .then(|| magpie_view::progress::Progress::new("run", o.iterations as u64, "iterations"))
}

impl Options {
    /// `iterations` iterations under `strategy`, one-sided steals, no timeline, no pool.
    pub fn new(strategy: Strategy, iterations: usize) -> Options {
        Options {
            strategy,
            transport: Transport::OneSided,
            iterations,
            timeline: false,
            workers: 1,
            progress: false,
        }
    }

    /// With thieves stealing by `t`.
    pub fn transport(self, t: Transport) -> Options {
        Options {
            transport: t,
            ..self
        }
    }
}

/// One run of a kernel over several iterations.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// The kernel's name.
    pub kernel: String,
    /// Ranks.
    pub ranks: usize,
    /// The strategy's name.
    pub strategy: String,
    /// How thieves stole: `rma` or `am`.
    pub transport: String,
    /// Workers of each rank's pool (1: none).
    pub workers: usize,
    /// The answer, in words (e.g. the node count), from the last iteration.
    pub result: String,
    /// Whether every iteration's answer was checked and right.
    pub verified: bool,
    /// Per iteration, every rank's figures.
    pub iterations: Vec<IterationReport>,
}

/// Runs UTS tree `p` on the ranks of `comm` as `o` says (`o.workers` is not used: a node is
/// too small to split), a rank's deque holding `comm`'s capacity; every iteration's counts are
/// checked. An error is one line (a wrong count).
pub fn uts<C: Comm<Entry<[u8; 24]>>>(
    comm: C,
    p: &uts::Params,
    o: Options,
) -> Result<Outcome, String> {
    let Options {
        strategy,
        transport,
        iterations,
        ..
    } = o;
    let expected = uts::expected_nodes(p);
    let mut tc = TaskCollection::new(comm, strategy)
        .with_transport(transport)
        .with_timeline(o.timeline);
    let ranks = tc.comm().size();
    if tc.comm().rank() == 0 {
        tc.push(uts::Node::root(p).to_bytes());
    }
    let mut reports = Vec::new();
    let mut result = String::new();
    let mut progress = iteration_progress(&o, tc.comm().rank());
    for it in 0..iterations {
        let mut c = uts::Counts::default();
        let rep = tc.process(|t, s| {
            let node = uts::Node::from_bytes(t);
            let n = p.num_children(&node);
            c.nodes += 1;
            c.leaves += u64::from(n == 0);
            c.max_depth = c.max_depth.max(node.height());
            for i in 0..n {
                s.spawn(node.child(i, p).to_bytes());
            }
        });
        let all: Vec<(u64, u64, u32)> = tc.comm().all_gather((c.nodes, c.leaves, c.max_depth));
        let total = uts::Counts {
            nodes: all.iter().map(|a| a.0).sum(),
            leaves: all.iter().map(|a| a.1).sum(),
            max_depth: all.iter().map(|a| a.2).max().unwrap_or(0),
        };
        uts::verify(p, &total, expected).map_err(|e| format!("iteration {it}: {e}"))?;
        result = format!(
            "{} nodes, {} leaves, depth {}",
            total.nodes, total.leaves, total.max_depth
        );
        if let Some(pr) = &mut progress {
            pr.step(&format!("iteration {it}: {result} (verified)"));
        }
        reports.push(rep);
        tc.restore();
    }
    Ok(Outcome {
        kernel: "uts".into(),
        ranks,
        strategy: strategy.name().into(),
        transport: transport.name().into(),
        workers: 1,
        result,
        verified: true,
        iterations: reports,
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use magpie_dist::collection::local::Cluster;

    #[test]
    fn synthetic_kernels_check_out_under_every_strategy_and_are_skewed() {
        for k in [Synthetic::Hf(24), Synthetic::Tce(20)] {
            let costs: Vec<u64> = (0..k.tasks()).map(|id| k.cost(id)).collect();
            let nulls = costs.iter().filter(|&&c| c == 0).count();
            assert!(
                nulls > 0 && nulls < costs.len(),
                "{k:?}: {nulls} null tasks"
            );
            assert!(
                costs.iter().max() > costs.iter().filter(|&&c| c > 0).min(),
                "{k:?}"
            );
            for strategy in Strategy::ALL {
                let hs: Vec<_> = Cluster::ranks::<u64>(3, 256)
                    .into_iter()
                    .map(|r| {
                        std::thread::spawn(move || {
                            let o = Options::new(strategy, 3).transport(Transport::ActiveMessage);
                            synthetic(r, k, Options { workers: 2, ..o })
                        })
                    })
                    .collect();
                for h in hs {
                    let o = h.join().unwrap().unwrap();
                    assert!(o.verified);
                    assert_eq!(o.iterations.len(), 3);
                }
            }
        }
    }

    #[test]
    fn uts_counts_match_the_serial_search_on_threads() {
        let p = uts::Params::parse("-t 1 -a 3 -b 4 -r 19 -d 7").unwrap();
        let want = uts::serial(&p);
        for strategy in Strategy::ALL {
            for ranks in [1, 3] {
                let hs: Vec<_> = Cluster::ranks::<[u8; 24]>(ranks, 256)
                    .into_iter()
                    .map(|r| std::thread::spawn(move || uts(r, &p, Options::new(strategy, 2))))
                    .collect();
                for h in hs {
                    let o = h.join().unwrap().unwrap();
                    assert!(
                        o.result.starts_with(&format!("{} nodes", want.nodes)),
                        "{o:?}"
                    );
                    assert_eq!(o.iterations.len(), 2);
                    assert_eq!(o.iterations[1].tasks(), want.nodes);
                }
            }
        }
    }
}

/// A flat synthetic kernel: how many tasks, and each one's cost in units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synthetic {
    /// HF-like over `n` shells.
    Hf(u64),
    /// TCE-like over `n` blocks.
    Tce(u64),
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Synthetic {
    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            Synthetic::Hf(_) => "hf",
            Synthetic::Tce(_) => "tce",
        }
    }

    /// Tasks in the collection.
    pub fn tasks(self) -> u64 {
        match self {
            Synthetic::Hf(n) | Synthetic::Tce(n) => n * n,
        }
    }

    /// Task `id`'s cost in units (0: a null task).
    pub fn cost(self, id: u64) -> u64 {
        match self {
            Synthetic::Hf(n) => {
                let (i, j) = (id / n, id % n);
                // A shell's magnitude in [0, 1) and weight 1..=8, both from its index.
                let mag = |s: u64| (mix(s) >> 11) as f64 / (1u64 << 53) as f64;
                let weight = |s: u64| 1 + mix(s ^ 0x5555) % 8;
                if mag(i) * mag(j) < 0.25 {
                    0
                } else {
                    weight(i) * weight(j)
                }
            }
            Synthetic::Tce(n) => {
                let (a, b) = (id / n, id % n);
                let size = |x: u64| 4 + mix(x ^ 0x7ce) % 29;
                if (a + b) % 3 == 0 {
                    0
                } else {
                    size(a) * size(b) / 4
                }
            }
        }
    }

    /// Runs task `id`: its cost in units of the integer mix; returns the value it adds.
    pub fn run(self, id: u64) -> u64 {
        Self::units(id, 0, self.cost(id))
    }

    /// Task `id`'s units `from..to`: each is 256 xorshift steps from its own start, and the
    /// task's value is their wrapping sum, so the units can run in any order or in parallel.
    fn units(id: u64, from: u64, to: u64) -> u64 {
        let mut sum = 0u64;
        for u in from..to {
            let mut x = (id ^ 0x2545_f491_4f6c_dd1d).wrapping_add(u.wrapping_mul(0x9e37_79b9));
            for _ in 0..256 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            sum = sum.wrapping_add(x);
        }
        std::hint::black_box(sum)
    }

    /// [`Synthetic::run`] with the task's units split by `magpie::join` (down to 4 units a
    /// piece) over the pool the caller is in: the same value.
    pub fn run_parallel(self, id: u64) -> u64 {
        fn split(id: u64, from: u64, to: u64) -> u64 {
            if to - from <= 4 {
                return Synthetic::units(id, from, to);
            }
            let mid = from + (to - from) / 2;
            let (a, b) = magpie::join(|| split(id, from, mid), || split(id, mid, to));
            a.wrapping_add(b)
        }
        split(id, 0, self.cost(id))
    }

    /// The serial twin: every task's value, summed (wrapping; the order does not matter).
    pub fn serial(self) -> u64 {
        (0..self.tasks()).fold(0u64, |s, id| s.wrapping_add(self.run(id)))
    }
}

/// Tasks of fewer units than this run on the rank's own thread even with a pool: handing one
/// to the pool costs about as much as a few units.
const POOL_MIN_UNITS: u64 = 16;

/// Runs `k` on the ranks of `comm` as `o` says: rank `r` is seeded with the `r`-th contiguous
/// range of ids; every iteration's sum, added over the ranks, is checked against the serial
/// twin's. With `o.workers > 1` each rank builds a magpie pool of that many workers and runs the
/// units of its tasks of at least 16 units on it (the rank's own thread, which makes every MPI
/// call, waits meanwhile). An error is one line.
pub fn synthetic<C: Comm<Entry<u64>>>(
    comm: C,
    k: Synthetic,
    o: Options,
) -> Result<Outcome, String> {
    let Options {
        strategy,
        transport,
        iterations,
        ..
    } = o;
    let pool = match o.workers {
        0 | 1 => None,
        w => Some(
            magpie::Pool::builder()
                .workers(w)
                .build()
                .map_err(|e| format!("a pool of {w} workers: {e}"))?,
        ),
    };
    let run = |id: u64| match &pool {
        Some(p) if k.cost(id) >= POOL_MIN_UNITS => p.install(|| k.run_parallel(id)),
        _ => k.run(id),
    };
    let want = k.serial();
    let mut tc = TaskCollection::new(comm, strategy)
        .with_transport(transport)
        .with_timeline(o.timeline);
    let (me, ranks) = (tc.comm().rank() as u64, tc.comm().size() as u64);
    let n = k.tasks();
    for id in me * n / ranks..(me + 1) * n / ranks {
        tc.push(id);
    }
    let mut reports = Vec::new();
    let mut progress = iteration_progress(&o, me as usize);
    for it in 0..iterations {
        let mut sum = 0u64;
        let rep = tc.process(|id, _| sum = sum.wrapping_add(run(id)));
        let all: Vec<u64> = tc.comm().all_gather(sum);
        let got = all.iter().fold(0u64, |a, &b| a.wrapping_add(b));
        if got != want || rep.tasks() != n {
            return Err(format!(
                "{} iteration {it}: {} tasks ran (expected {n}), checksum {got:#x} (the serial \
                 twin's is {want:#x})",
                k.name(),
                rep.tasks()
            ));
        }
        if let Some(pr) = &mut progress {
            pr.step(&format!(
                "iteration {it}: {n} tasks, checksum {got:#x} (verified)"
            ));
        }
        reports.push(rep);
        tc.restore();
    }
    Ok(Outcome {
        kernel: k.name().into(),
        ranks: ranks as usize,
        strategy: strategy.name().into(),
        transport: transport.name().into(),
        workers: o.workers.max(1),
        result: format!("{n} tasks, checksum {want:#018x}"),
        verified: true,
        iterations: reports,
    })
}
