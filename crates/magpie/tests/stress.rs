//! Stress: at least 10^7 tasks over random shapes (nested scopes, joins, escaping spawns, spawns
//! with per-spawn policies), on 1 to 8 workers under every policy. Every task records its id in a
//! bitmap with an atomic swap, so a task lost shows as a missing bit and a task run twice as a
//! bit already set.

// These exercise the runtime, which is not built under `--cfg loom` (see lib.rs).
#![cfg(not(loom))]

#[path = "support/watchdog.rs"]
mod support;

use magpie::{join, scope, Policy, Pool, Scope};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use support::watchdog;

struct Seen {
    bits: Vec<AtomicU64>,
    next: AtomicUsize,
    dup: AtomicUsize,
}

impl Seen {
    fn new(n: usize) -> Seen {
        Seen {
            bits: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            next: AtomicUsize::new(0),
            dup: AtomicUsize::new(0),
        }
    }
    /// A fresh task id, taken when the task is created.
    fn id(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
    /// Marks task `id` as run.
    fn run(&self, id: usize) {
        let bit = 1u64 << (id % 64);
        if self.bits[id / 64].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
            self.dup.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn check(&self) -> usize {
        let n = self.next.load(Ordering::SeqCst);
        assert_eq!(self.dup.load(Ordering::SeqCst), 0, "a task ran twice");
        let ran: u64 = self
            .bits
            .iter()
            .map(|b| b.load(Ordering::SeqCst).count_ones() as u64)
            .sum();
        assert_eq!(
            ran as usize, n,
            "a task was lost ({} created, {} ran)",
            n, ran
        );
        n
    }
}

/// A small deterministic generator; each task derives its own from its id.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const POLICIES: [Policy; 3] = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];

/// One task of a random shape. `budget` bounds the subtree so every round has a known size order.
fn task<'s>(seen: &'s Seen, s: &Scope<'s>, seed: u64, budget: u32) {
    let id = seen.id();
    seen.run(id);
    if budget == 0 {
        return;
    }
    let r = mix(seed ^ id as u64);
    let half = budget / 2;
    match r % 5 {
        // Escaping spawns into the enclosing scope (terminally strict).
        0 => {
            for k in 0..(1 + r as u32 % 3) {
                let p = POLICIES[((r >> 8) as usize + k as usize) % 3];
                s.spawn_with(p, move |s| task(seen, s, r ^ k as u64, half));
            }
        }
        // A join of two subtrees, each in the same scope.
        1 => {
            join(|| task(seen, s, r ^ 1, half), || task(seen, s, r ^ 2, half));
        }
        // A nested scope that must finish before we go on.
        2 => {
            let inner_done = AtomicUsize::new(0);
            scope(|s2| {
                for k in 0..(2 + r as u32 % 4) {
                    let inner_done = &inner_done;
                    s2.spawn(move |s2| {
                        task(seen, s2, r ^ (k as u64 + 7), half / 2);
                        inner_done.fetch_add(1, Ordering::SeqCst);
                    });
                }
            });
            assert_eq!(inner_done.load(Ordering::SeqCst) as u32, 2 + r as u32 % 4);
        }
        // A plain spawn that itself joins.
        3 => s.spawn(move |s| {
            join(|| task(seen, s, r ^ 3, half), || ());
        }),
        // A leaf with a little work.
        _ => {
            std::hint::black_box(mix(r));
        }
    }
}

#[test]
fn ten_million_tasks_no_loss_no_duplicate() {
    let target: usize = std::env::var("MAGPIE_STRESS_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let mut total = 0usize;
    let mut round = 0u64;
    while total < target {
        for workers in [1, 2, 3, 5, 8] {
            for p in POLICIES {
                let pool = Pool::builder().workers(workers).policy(p).build().unwrap();
                let seen = Seen::new(2_000_000);
                // A round takes seconds, also under ThreadSanitizer: a hang fails the test
                // (aborting the process, naming the round) instead of holding the run up.
                let what = format!("stress round {round} ({workers} workers, {p:?})");
                watchdog(900, &what, || {
                    pool.install(|| {
                        scope(|s| {
                            for k in 0..64u64 {
                                let seen = &seen;
                                s.spawn(move |s| task(seen, s, round * 1000 + k, 4096));
                            }
                        })
                    })
                });
                total += seen.check();
                round += 1;
            }
        }
    }
    eprintln!("stress: {total} tasks checked over {round} rounds");
    assert!(total >= target);
}

/// Spawns that cross scopes: the tasks of inner scopes spawn into the outer scope, and the
/// outer scope's tasks each open an inner scope. So a worker often owes counts to one scope
/// (counts reserved for its spawns, or completions not subtracted yet) while it spawns into
/// another or waits for another. Every scope must return only once every task spawned into it
/// has run, and no task may be lost.
#[test]
fn scopes_end_after_their_tasks_when_spawns_cross_scopes() {
    for p in POLICIES {
        for w in [1, 2, 3, 5] {
            let pool = Pool::builder().workers(w).policy(p).build().unwrap();
            for round in 0..20 {
                let spawned = AtomicUsize::new(0);
                let ran = AtomicUsize::new(0);
                pool.install(|| {
                    scope(|outer| {
                        for i in 0..40usize {
                            spawned.fetch_add(1, Ordering::SeqCst);
                            let (spawned, ran) = (&spawned, &ran);
                            outer.spawn(move |outer| {
                                let inner_ran = AtomicUsize::new(0);
                                let inner_n = i % 7 + 1;
                                scope(|inner| {
                                    for j in 0..inner_n {
                                        let inner_ran = &inner_ran;
                                        inner.spawn(move |_| {
                                            if (i + j + round) % 2 == 0 {
                                                spawned.fetch_add(1, Ordering::SeqCst);
                                                outer.spawn(move |_| {
                                                    ran.fetch_add(1, Ordering::SeqCst);
                                                });
                                            }
                                            inner_ran.fetch_add(1, Ordering::SeqCst);
                                        });
                                    }
                                });
                                assert_eq!(inner_ran.load(Ordering::SeqCst), inner_n);
                                ran.fetch_add(1, Ordering::SeqCst);
                            });
                        }
                    })
                });
                assert_eq!(
                    ran.load(Ordering::SeqCst),
                    spawned.load(Ordering::SeqCst),
                    "{p} x{w}, round {round}"
                );
            }
        }
    }
}

/// Spawns run in place are counted in bulk when a worker settles its credit, which must happen
/// before any completion it signals: so once `install` returns, the spawn counts are exact, on
/// every policy and width, with thieves taking work (more workers than cores) all along.
#[test]
fn spawn_counts_are_exact_once_the_work_is_done() {
    fn fib(n: u64) -> u64 {
        if n < 2 {
            return n;
        }
        let (a, b) = join(|| fib(n - 1), || fib(n - 2));
        a + b
    }
    // fib(n) makes fib(n + 1) - 1 joins: fib(18) 4180, fib(6) 12.
    const EXPECTED: u64 = 4180 + 500 + 500 * 12;
    for p in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
        for w in [2, 3, 5] {
            let pool = Pool::builder().workers(w).policy(p).build().unwrap();
            for round in 0..10 {
                let before = pool.stats();
                let ran = AtomicUsize::new(0);
                let r = pool.install(|| {
                    let (f, _) = join(
                        || fib(18),
                        || {
                            scope(|s| {
                                for _ in 0..500 {
                                    s.spawn(|_| {
                                        assert_eq!(fib(6), 8);
                                        ran.fetch_add(1, Ordering::Relaxed);
                                    });
                                }
                            })
                        },
                    );
                    f
                });
                let d = pool.stats() - before;
                assert_eq!((r, ran.load(Ordering::Relaxed)), (2584, 500));
                assert_eq!(
                    d.spawns_work_first + d.spawns_help_first,
                    EXPECTED + 1,
                    "{p} x{w}, round {round}: {d:?}"
                );
            }
        }
    }
}
