//! What a thief gets: the oldest pending work of its victim (`promote.rs`).
//!
//! The program is a left-deep chain of joins of known shape: `chain(d)` joins `chain(d + 1)`
//! with a leaf of depth `d`, so the leaf of depth `d` is pending while everything deeper runs,
//! and the shallower a pending leaf, the older. Every leaf notes the worker that ran it and when
//! it began. The worker that runs the chain descends it as in-place joins; thieves must be handed
//! the leaves shallowest first: in the order the stolen leaves began, their depths only grow, and
//! the first one stolen is the shallowest the chain has.
//!
//! (Timing is not asserted: only which leaves moved and in what order they began.)

use magpie::{Policy, Pool};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

const DEPTH: usize = 200;

struct Log {
    /// Per depth: the worker that ran the leaf (+1) and the order in which leaves began.
    worker: Vec<AtomicUsize>,
    began: Vec<AtomicU64>,
    clock: AtomicU64,
}

fn leaf(d: usize, log: &Log) -> u64 {
    log.began[d].store(log.clock.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
    log.worker[d].store(
        magpie::worker_index().expect("a leaf off the pool") + 1,
        Ordering::SeqCst,
    );
    // Long enough that the worker running the chain is still on its way when thieves come back.
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(200) {
        std::hint::spin_loop();
    }
    d as u64
}

fn chain(d: usize, log: &Log) -> u64 {
    if d == DEPTH {
        return leaf(d, log);
    }
    let (a, b) = magpie::join(|| chain(d + 1, log), || leaf(d, log));
    a + b
}

/// Runs the chain once; returns the depths of the leaves that ran away from the chain's worker,
/// in the order they began.
fn stolen_depths(pool: &Pool) -> Vec<usize> {
    pool.install(chain_here)
}

/// [`stolen_depths`] on the worker that calls it.
fn chain_here() -> Vec<usize> {
    let log = Log {
        worker: (0..=DEPTH).map(|_| AtomicUsize::new(0)).collect(),
        began: (0..=DEPTH).map(|_| AtomicU64::new(0)).collect(),
        clock: AtomicU64::new(0),
    };
    let (sum, home) = (chain(0, &log), magpie::worker_index().unwrap() + 1);
    assert_eq!(sum, (0..=DEPTH as u64).sum::<u64>(), "the chain's sum");
    let mut stolen: Vec<(u64, usize)> = (0..=DEPTH)
        .filter(|&d| {
            let w = log.worker[d].load(Ordering::SeqCst);
            assert_ne!(w, 0, "leaf {d} did not run");
            w != home
        })
        .map(|d| (log.began[d].load(Ordering::SeqCst), d))
        .collect();
    stolen.sort();
    stolen.into_iter().map(|(_, d)| d).collect()
}

/// One test (the pools would compete for the cores if these ran as two): under each policy
/// that runs joins in place, the stolen leaves begin shallowest first, starting from the
/// shallowest of all; and on the way back up, where the chain makes no more joins, the worker
/// still hands its pending leaves out. Before oldest-first hand-over a thief got the leaves
/// published on the way down (3: the deque's `KEEP`) and nothing after.
#[test]
fn thieves_are_handed_the_shallowest_pending_half_first() {
    for policy in [Policy::Adaptive, Policy::WorkFirst] {
        let pool = Pool::builder()
            .workers(2)
            .policy(policy)
            .oldest_first(true)
            .build()
            .expect("pool");
        let mut runs_with_steals = 0;
        let mut most = 0;
        for _ in 0..5 {
            let depths = stolen_depths(&pool);
            if depths.is_empty() {
                continue;
            }
            runs_with_steals += 1;
            most = most.max(depths.len());
            assert_eq!(
                depths[0], 0,
                "{policy:?}: the first stolen leaf is the shallowest: {depths:?}"
            );
            assert!(
                depths.windows(2).all(|w| w[0] < w[1]),
                "{policy:?}: stolen leaves, in the order they began, are not shallowest first: \
                 {depths:?}"
            );
        }
        assert!(runs_with_steals >= 3, "{policy:?}: too few runs had steals");
        assert!(
            pool.stats().promotions > 0,
            "{policy:?}: nothing was promoted"
        );
        assert!(
            most >= 10,
            "{policy:?}: at most {most} of {} leaves ran on the thief",
            DEPTH + 1
        );
    }
}

/// fib(n) without a cutoff: fine-grained joins, the kind after which a worker nobody asks
/// records only its shallowest joins (`promote.rs`, "Which joins record").
fn fine(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = magpie::join(|| fine(n - 1), || fine(n - 2));
    a + b
}

/// A worker that has gone a long time without a thief's request (75,024 joins while the pool's
/// other worker is held in a blocking wait, so nobody can ask) still hands a thief the
/// shallowest pending half first once one asks, every leaf runs once, and the thief gets work
/// although the chain makes no more joins on its way back up.
#[test]
fn after_a_quiet_spell_thieves_are_still_handed_the_shallowest_half_first() {
    let pool = oldest_first_pool(2);
    let mut runs_with_steals = 0;
    for _ in 0..3 {
        // (held, released), as the holding task sees them.
        let gate = (Mutex::new((false, false)), Condvar::new());
        let depths = std::thread::scope(|s| {
            s.spawn(|| {
                pool.install(|| {
                    let mut st = gate.0.lock().unwrap();
                    st.0 = true;
                    gate.1.notify_all();
                    while !st.1 {
                        st = gate.1.wait(st).unwrap();
                    }
                })
            });
            let mut st = gate.0.lock().unwrap();
            while !st.0 {
                st = gate.1.wait(st).unwrap();
            }
            drop(st);
            pool.install(|| {
                assert_eq!(fine(24), 46_368, "fib(24)");
                gate.0.lock().unwrap().1 = true;
                gate.1.notify_all();
                chain_here()
            })
        });
        if depths.is_empty() {
            continue;
        }
        runs_with_steals += 1;
        assert_eq!(
            depths[0], 0,
            "the first stolen leaf is the shallowest: {depths:?}"
        );
        assert!(
            depths.windows(2).all(|w| w[0] < w[1]),
            "stolen leaves, in the order they began, are not shallowest first: {depths:?}"
        );
    }
    assert!(runs_with_steals >= 1, "no run had steals");
}

/// A tree of joins with scopes and spawns inside, some halves long enough to be promoted while
/// their owner is deep: under oldest-first hand-over every leaf runs exactly once and the sums
/// match the serial ones, at 2 and 3 workers (3 on 2 cores: workers preempted mid-join).
fn mixed(d: u32, hits: &[AtomicUsize], at: usize) -> u64 {
    if d == 0 {
        hits[at].fetch_add(1, Ordering::Relaxed);
        if at.is_multiple_of(64) {
            std::hint::black_box((0..2_000u64).sum::<u64>());
        }
        return at as u64;
    }
    let half = 1usize << (d - 1);
    if d.is_multiple_of(3) {
        let left = AtomicU64::new(0);
        let right = magpie::scope(|s| {
            s.spawn(|_| {
                left.store(mixed(d - 1, hits, at), Ordering::Relaxed);
            });
            mixed(d - 1, hits, at + half)
        });
        return left.load(Ordering::Relaxed) + right;
    }
    let (a, b) = magpie::join(|| mixed(d - 1, hits, at), || mixed(d - 1, hits, at + half));
    a + b
}

#[test]
fn every_leaf_runs_once_under_oldest_first() {
    const D: u32 = 14;
    let n = 1usize << D;
    for workers in [2, 3] {
        let pool = Pool::builder()
            .workers(workers)
            .oldest_first(true)
            .build()
            .expect("pool");
        for _ in 0..20 {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            let sum = pool.install(|| mixed(D, &hits, 0));
            assert_eq!(
                sum,
                (0..n as u64).sum::<u64>(),
                "{workers} workers: the sum"
            );
            for (i, h) in hits.iter().enumerate() {
                assert_eq!(h.load(Ordering::Relaxed), 1, "leaf {i} ran {h:?} times");
            }
        }
    }
}

/// A panic in a half that may have been handed to a thief reaches the join's caller after both
/// halves have finished, and the pool goes on working.
#[test]
fn a_panic_in_a_promoted_half_reaches_the_caller() {
    let pool = Pool::builder()
        .workers(2)
        .oldest_first(true)
        .build()
        .expect("pool");
    for _ in 0..20 {
        let done = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                magpie::join(
                    || {
                        // Deep enough that the worker is asked for work while the right half
                        // waits, so the right half is often the one handed over.
                        let hits: Vec<AtomicUsize> =
                            (0..1 << 12).map(|_| AtomicUsize::new(0)).collect();
                        mixed(12, &hits, 0);
                        done.fetch_add(1, Ordering::SeqCst);
                    },
                    || {
                        std::hint::black_box((0..50_000u64).sum::<u64>());
                        panic!("right half");
                    },
                )
            })
        }));
        let p = r.expect_err("the panic reaches the caller");
        assert_eq!(p.downcast_ref::<&str>(), Some(&"right half"));
        assert_eq!(
            done.load(Ordering::SeqCst),
            1,
            "the left half finished first"
        );
    }
    assert_eq!(pool.install(|| magpie::join(|| 1, || 2)), (1, 2));
}

/// A tree of scope spawns in one scope, as uts makes (branching 4, 8 levels): big enough that
/// its workers learn to publish their top levels (`promote.rs`, "Spawns"), so published
/// children run at their own tree level wherever they run.
fn spawn_tree<'s>(s: &magpie::Scope<'s>, level: u32, at: usize, seen: &'s [AtomicUsize]) {
    seen[at].fetch_add(1, Ordering::Relaxed);
    if level == 8 {
        return;
    }
    for c in 0..4 {
        s.spawn(move |s| spawn_tree(s, level + 1, at * 4 + c + 1, seen));
    }
}

/// A pool of `workers` with oldest-first hand-over on.
fn oldest_first_pool(workers: usize) -> Pool {
    Pool::builder()
        .workers(workers)
        .oldest_first(true)
        .build()
        .expect("pool")
}

/// One zeroed visit count per node of [`spawn_tree`]'s tree.
fn tree_counts() -> Vec<AtomicUsize> {
    let nodes = (0..=8).map(|l| 4usize.pow(l)).sum::<usize>();
    (0..nodes).map(|_| AtomicUsize::new(0)).collect()
}

/// Every node is visited exactly once, at 2 and 3 workers.
#[test]
fn every_spawn_of_a_tree_runs_once_under_oldest_first() {
    for workers in [2, 3] {
        let pool = oldest_first_pool(workers);
        for _ in 0..10 {
            let seen = tree_counts();
            pool.install(|| magpie::scope(|s| spawn_tree(s, 0, 0, &seen)));
            for (i, n) in seen.iter().enumerate() {
                assert_eq!(n.load(Ordering::Relaxed), 1, "node {i} ran {n:?} times");
            }
        }
    }
}

/// A schedule region keeps what it creates under oldest-first hand-over too: a spawn tree big
/// enough to teach workers outside a region to publish, spawned from a recorded region into a
/// scope opened outside it, has run completely when `record` returns. (Region tasks publish
/// only through the region's own paths, which give each child a ticket on the region;
/// `promote::probe_spawn` leaves their spawns alone.)
#[test]
fn a_recorded_region_waits_for_its_spawn_tree_under_oldest_first() {
    for workers in [2, 3] {
        let pool = oldest_first_pool(workers);
        for _ in 0..5 {
            let seen = tree_counts();
            pool.install(|| {
                magpie::scope(|s| {
                    let _ = magpie::schedule::record(|| spawn_tree(s, 0, 0, &seen));
                    for (i, n) in seen.iter().enumerate() {
                        assert_eq!(
                            n.load(Ordering::Relaxed),
                            1,
                            "{workers} workers: node {i} had run {n:?} times when record returned"
                        );
                    }
                })
            });
        }
    }
}
