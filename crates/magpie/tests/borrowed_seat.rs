//! Calls from outside a pool that run on the calling thread, in the seat of a worker that sleeps
//! (`borrowed_seat.rs`): they run as that worker, lose and repeat nothing, hand work to the
//! other workers, and give the seat back however they end, with any number of callers at once.

#[path = "support/watchdog.rs"]
mod support;

use magpie::{Builder, Pool};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};
use support::watchdog;

fn pool(workers: usize) -> Pool {
    Builder::default().workers(workers).build().expect("a pool")
}

/// Waits until every worker of `pool` sleeps (idle workers sleep after a bounded number of
/// failed steals); false if they do not within 20 s.
fn all_asleep(pool: &Pool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        if pool.sleeping_workers() == pool.workers() {
            return true;
        }
        thread::sleep(Duration::from_millis(2));
    }
    false
}

/// fib by `join`, counting every leaf.
fn fib(n: u64, leaves: &AtomicUsize) -> u64 {
    if n < 2 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1, leaves), || fib(n - 2, leaves));
    a + b
}

#[test]
fn a_call_from_outside_runs_on_the_caller_as_a_sleeping_worker() {
    watchdog(120, "a call in a borrowed seat", || {
        for workers in [1, 2, 3] {
            let pool = pool(workers);
            assert!(all_asleep(&pool), "{workers} workers never all slept");
            let here = thread::current().id();
            let leaves = AtomicUsize::new(0);
            let (id, index, n, r) = pool.install(|| {
                (
                    thread::current().id(),
                    magpie::current_thread_index(),
                    magpie::current_num_threads(),
                    fib(16, &leaves),
                )
            });
            assert_eq!(id, here, "{workers} workers: not run on the calling thread");
            assert!(index.is_some_and(|i| i < workers), "index {index:?}");
            assert_eq!((n, r), (workers, 987));
            assert_eq!(
                leaves.load(Ordering::Relaxed),
                1597,
                "leaves lost or doubled"
            );
            assert_eq!(
                magpie::current_thread_index(),
                None,
                "still a worker after the call"
            );
            // The seat is given back: its worker counts as asleep again.
            assert!(
                all_asleep(&pool),
                "{workers} workers: a seat was not given back"
            );
            // A broadcast reaches every worker, each call on a thread of its own.
            let mut ids = pool.install(|| magpie::broadcast(|_| thread::current().id()));
            ids.sort_by_key(|id| format!("{id:?}"));
            ids.dedup();
            assert_eq!(ids.len(), workers, "two broadcast calls on one thread");
        }
    });
}

#[test]
fn pools_whose_threads_the_user_named_run_calls_on_those_threads() {
    watchdog(60, "a named pool", || {
        let pool = magpie::ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("named #{i}"))
            .build()
            .expect("a pool");
        assert!(all_asleep(pool.as_pool()));
        let name = pool.install(|| thread::current().name().map(String::from));
        assert!(name.is_some_and(|n| n.starts_with("named #")));
    });
}

#[test]
fn work_the_caller_publishes_reaches_a_sleeping_worker() {
    // The first half waits until the second has started on another thread: the call finishes
    // only if a sleeping worker is woken and takes the second half from the borrowed seat.
    watchdog(120, "a half only another worker can run", || {
        let pool = pool(2);
        for round in 0..50 {
            assert!(all_asleep(&pool), "round {round}");
            let here = thread::current().id();
            let started = AtomicBool::new(false);
            let (a, b) = pool.install(|| {
                magpie::join(
                    || {
                        while !started.load(Ordering::Acquire) {
                            thread::yield_now();
                        }
                        thread::current().id()
                    },
                    || {
                        started.store(true, Ordering::Release);
                        thread::current().id()
                    },
                )
            });
            assert_eq!(a, here, "round {round}: the first half left the caller");
            assert_ne!(b, here, "round {round}: the second half ran on the caller");
        }
    });
}

#[test]
fn a_panic_in_a_borrowed_seat_reaches_the_caller_and_the_seat_comes_back() {
    watchdog(60, "a panic in a borrowed seat", || {
        let pool = pool(2);
        for _ in 0..20 {
            assert!(all_asleep(&pool));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| {
                    let leaves = AtomicUsize::new(0);
                    magpie::join(|| fib(12, &leaves), || panic!("boom"))
                })
            }));
            let msg = r.expect_err("the panic reaches the caller");
            assert_eq!(msg.downcast_ref::<&str>(), Some(&"boom"));
            let leaves = AtomicUsize::new(0);
            assert_eq!(pool.install(|| fib(14, &leaves)), 377);
            assert_eq!(leaves.load(Ordering::Relaxed), 610);
        }
    });
}

#[test]
fn many_callers_at_once_lose_and_repeat_nothing() {
    watchdog(300, "many callers at once", || {
        for workers in [1, 2, 4] {
            let other = Arc::new(pool(2));
            let pool = Arc::new(pool(workers));
            let callers = 6;
            let start = Arc::new(Barrier::new(callers));
            let handles: Vec<_> = (0..callers)
                .map(|c| {
                    let (pool, other, start) = (pool.clone(), other.clone(), start.clone());
                    thread::spawn(move || {
                        start.wait();
                        for round in 0..150 {
                            let leaves = AtomicUsize::new(0);
                            let r = pool.install(|| fib(13 + (round % 4) as u64, &leaves));
                            let n = 13 + (round % 4) as u64;
                            assert_eq!(r, fib_closed(n), "caller {c} round {round}");
                            assert_eq!(leaves.load(Ordering::Relaxed) as u64, fib_closed(n + 1));
                            // Spawns into a scope, each exactly once.
                            let hits: Vec<AtomicUsize> =
                                (0..40).map(|_| AtomicUsize::new(0)).collect();
                            pool.install(|| {
                                magpie::scope(|s| {
                                    for h in &hits {
                                        s.spawn(move |_| {
                                            h.fetch_add(1, Ordering::Relaxed);
                                        });
                                    }
                                })
                            });
                            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                            // A broadcast: one call per worker, in worker order.
                            let at = pool.install(|| {
                                magpie::broadcast(|ctx| {
                                    (ctx.index(), magpie::current_thread_index())
                                })
                            });
                            assert_eq!(at.len(), workers);
                            assert!(at
                                .iter()
                                .enumerate()
                                .all(|(i, &(j, k))| i == j && k == Some(i)));
                            // A call into a second pool from inside the first.
                            let inner = pool.install(|| other.install(magpie::current_num_threads));
                            assert_eq!(inner, 2);
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("a caller panicked");
            }
            assert_eq!(magpie::current_thread_index(), None);
            drop(pool);
        }
    });
}

/// Pools made and dropped while calls from outside come and go stop every worker.
#[test]
fn pools_dropped_after_calls_from_outside_stop() {
    watchdog(120, "dropping pools after borrowed calls", || {
        for round in 0..40 {
            let pool = Arc::new(pool(1 + round % 3));
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    let pool = pool.clone();
                    thread::spawn(move || {
                        let leaves = AtomicUsize::new(0);
                        pool.install(|| fib(10, &leaves))
                    })
                })
                .collect();
            for h in handles {
                assert_eq!(h.join().unwrap(), 55);
            }
            drop(pool);
        }
    });
}

/// `magpie::join` from a plain thread (the global pool) gives the right answer, call after call.
#[test]
fn joins_from_plain_threads_on_the_global_pool() {
    watchdog(120, "joins from plain threads", || {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                thread::spawn(|| {
                    for _ in 0..200 {
                        let leaves = AtomicUsize::new(0);
                        assert_eq!(fib(12, &leaves), 144);
                        assert_eq!(leaves.load(Ordering::Relaxed), 233);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a caller panicked");
        }
    });
}

fn fib_closed(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// A thread keeps its spare fibers for its next call into the same pool. Kept spares of a pool
/// that has been dropped, of pools past the few a thread keeps, and at the thread's exit all end
/// cleanly; the calls that suspend many tasks (which need spares) stay right throughout.
#[test]
fn kept_spares_outlive_their_pools_and_end_with_their_thread() {
    /// A left-deep chain of joins: every right half is taken by the other worker while the
    /// caller waits, so the caller's tasks suspend and need fibers.
    fn chain(n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let (a, b) = magpie::join(|| chain(n - 1), || n);
        a + b
    }
    watchdog(120, "kept spares", || {
        thread::spawn(|| {
            for round in 0..3 {
                // More pools than a thread keeps spares for, each entered twice in turn.
                let pools: Vec<Pool> = (0..6).map(|_| pool(2)).collect();
                for _ in 0..2 {
                    for p in &pools {
                        assert!(all_asleep(p), "round {round}");
                        assert_eq!(p.install(|| chain(300)), 300 * 301 / 2);
                    }
                }
                // Dropped while this thread still keeps spares of some of them.
                drop(pools);
            }
            let last = pool(2);
            assert_eq!(last.install(|| chain(200)), 200 * 201 / 2);
        })
        .join()
        .expect("the caller thread");
    });
}

/// Calls from outside, one after another, start on the fiber the caller's thread kept from its
/// last call: the loop fiber parks as the caller leaves, and no call makes and ends a fiber of
/// its own.
#[test]
fn calls_one_after_another_reuse_the_callers_fiber() {
    watchdog(120, "fibers of calls in a borrowed seat", || {
        thread::spawn(|| {
            let pool = pool(1);
            assert!(all_asleep(&pool));
            let here = thread::current().id();
            assert_eq!(pool.install(|| thread::current().id()), here);
            let before = pool.stats().fibers_created;
            let mut in_seat = 0;
            for i in 0..200u64 {
                assert!(all_asleep(&pool), "call {i}");
                let leaves = AtomicUsize::new(0);
                let (id, r) = pool.install(|| (thread::current().id(), fib(10, &leaves)));
                assert_eq!((r, leaves.load(Ordering::Relaxed)), (55, 89), "call {i}");
                in_seat += usize::from(id == here);
            }
            assert_eq!(
                in_seat, 200,
                "calls did not run in the sleeping worker's seat"
            );
            let made = pool.stats().fibers_created - before;
            assert_eq!(made, 0, "200 calls made {made} fibers");
        })
        .join()
        .expect("the caller thread");
    });
}
