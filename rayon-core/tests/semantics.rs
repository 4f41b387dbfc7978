//! rayon-core's documented behaviour, as magpie's rayon-core gives it: what rayon's own suite
//! does not pin down, or pins down only on rayon's internals.

use rayon_core::{FnContext, ThreadPoolBuilder};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn pool(n: usize) -> rayon_core::ThreadPool {
    ThreadPoolBuilder::new().num_threads(n).build().unwrap()
}

#[test]
fn join_context_says_when_the_second_closure_was_stolen() {
    let pool = pool(2);
    let (mut stolen, mut inline) = (0, 0);
    for _ in 0..200 {
        let (a, (b, b_thread, caller)) = pool.install(|| {
            let caller = std::thread::current().id();
            let waited = AtomicBool::new(false);
            rayon_core::join_context(
                |ctx: FnContext| {
                    // Give a thief time to take the second closure.
                    let t = Instant::now();
                    while !waited.load(Ordering::Acquire) && t.elapsed() < Duration::from_millis(2)
                    {
                        std::hint::spin_loop();
                    }
                    ctx.migrated()
                },
                |ctx: FnContext| {
                    waited.store(true, Ordering::Release);
                    (ctx.migrated(), std::thread::current().id(), caller)
                },
            )
        });
        assert!(!a, "the first closure runs where join_context was called");
        assert_eq!(b, b_thread != caller, "migrated() is whether it moved");
        if b {
            stolen += 1;
        } else {
            inline += 1;
        }
    }
    assert!(
        stolen + inline == 200 && stolen > 0,
        "a thief never took the second closure"
    );
}

#[test]
fn a_fifo_scope_starts_one_threads_spawns_in_spawn_order() {
    for n in [1, 2, 4] {
        let pool = pool(n);
        for _ in 0..20 {
            let order = Mutex::new(Vec::new());
            pool.scope_fifo(|s| {
                for i in 0..64 {
                    let order = &order;
                    s.spawn_fifo(move |_| order.lock().unwrap().push(i));
                }
            });
            let order = order.into_inner().unwrap();
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(
                sorted,
                (0..64).collect::<Vec<_>>(),
                "each body exactly once"
            );
            if n == 1 {
                assert_eq!(order, sorted, "one thread: spawn order");
            }
        }
        // Nested FIFO spawns and broadcasts in a FIFO scope all run, each once.
        let count = AtomicUsize::new(0);
        pool.in_place_scope_fifo(|s| {
            for _ in 0..10 {
                s.spawn_fifo(|s| {
                    count.fetch_add(1, Ordering::Relaxed);
                    s.spawn_fifo(|_| {
                        count.fetch_add(100, Ordering::Relaxed);
                    });
                });
            }
            s.spawn_broadcast(|_, ctx| {
                assert_eq!(rayon_core::current_thread_index(), Some(ctx.index()));
                count.fetch_add(10_000, Ordering::Relaxed);
            });
        });
        assert_eq!(count.into_inner(), 10 * 101 + 10_000 * n);
    }
}

#[test]
fn dropping_a_pool_returns_before_its_spawned_tasks_finish() {
    let pool = pool(2);
    let (go_tx, go_rx) = channel::<()>();
    let (done_tx, done_rx) = channel();
    pool.spawn(move || {
        go_rx.recv().unwrap();
        done_tx.send("ran after the drop").unwrap();
    });
    drop(pool); // rayon's drop does not wait: the task above still waits for `go`.
    go_tx.send(()).unwrap();
    assert_eq!(done_rx.recv().unwrap(), "ran after the drop");
}

#[test]
fn start_and_exit_handlers_run_on_every_thread_with_its_name() {
    let started = Arc::new(Mutex::new(Vec::new()));
    let exited = Arc::new(AtomicUsize::new(0));
    let (s, e) = (started.clone(), exited.clone());
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .thread_name(|i| format!("named-{i}"))
        .start_handler(move |i| {
            let name = std::thread::current().name().map(String::from);
            s.lock().unwrap().push((i, name));
        })
        .exit_handler(move |_| {
            e.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let names = pool.broadcast(|_| std::thread::current().name().map(String::from));
    assert_eq!(
        names,
        [
            Some("named-0".into()),
            Some("named-1".into()),
            Some("named-2".into())
        ]
    );
    let mut got = started.lock().unwrap().clone();
    got.sort();
    assert_eq!(
        got,
        [
            (0, names[0].clone()),
            (1, names[1].clone()),
            (2, names[2].clone())
        ]
    );
    drop(pool);
    let t = Instant::now();
    while exited.load(Ordering::SeqCst) < 3 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "exit handlers did not all run"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_spawn_handler_error_fails_the_build() {
    let e = ThreadPoolBuilder::new()
        .num_threads(2)
        .spawn_handler(|t| {
            if t.index() == 1 {
                return Err(std::io::Error::other("out of threads"));
            }
            std::thread::spawn(move || t.run());
            Ok(())
        })
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("out of threads"), "{e}");
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn use_current_thread_makes_the_caller_worker_0_until_the_pool_is_dropped() {
    // From inside a pool, rayon's own message.
    let e = pool(1).install(|| {
        ThreadPoolBuilder::new()
            .use_current_thread()
            .build()
            .unwrap_err()
    });
    assert_eq!(
        e.to_string(),
        "The current thread is already part of another thread pool."
    );
    let spawned = Arc::new(AtomicUsize::new(0));
    let s = spawned.clone();
    let pool = ThreadPoolBuilder::new()
        .num_threads(3)
        .use_current_thread()
        .spawn_handler(move |t| {
            assert_ne!(t.index(), 0, "worker 0 is the calling thread");
            s.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || t.run());
            Ok(())
        })
        .build()
        .unwrap();
    assert_eq!(spawned.load(Ordering::SeqCst), 2);
    assert_eq!(rayon_core::current_thread_index(), Some(0));
    assert_eq!(pool.current_thread_index(), Some(0));
    let here = std::thread::current().id();
    // join_context from the lent thread: the first closure runs here, as worker 0, and
    // `migrated()` is exact for the second.
    let (a, b) = rayon_core::join_context(
        |c| (c.migrated(), std::thread::current().id()),
        |c| (c.migrated(), rayon_core::current_thread_index()),
    );
    assert_eq!(a, (false, here));
    assert_eq!(
        b.0,
        b.1 != Some(0),
        "migrated() disagrees with where it ran"
    );
    // A scope's tasks all run, on whichever workers.
    let count = AtomicUsize::new(0);
    pool.scope(|s| {
        for _ in 0..100 {
            s.spawn(|_| {
                count.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    assert_eq!(count.load(Ordering::SeqCst), 100);
    drop(pool);
    assert_eq!(rayon_core::current_thread_index(), None);
}

#[test]
fn panics_reach_the_caller_or_the_panic_handler() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .panic_handler(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.scope(|s| {
            s.spawn(|_| panic!("in a scope"));
        })
    }));
    assert!(r.is_err());
    pool.spawn_broadcast(|_| panic!("in a broadcast"));
    pool.spawn(|| panic!("in a spawn"));
    drop(pool);
    let t = Instant::now();
    while seen.load(Ordering::SeqCst) < 3 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the handler saw {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn in_place_scope_keeps_its_body_on_the_calling_thread() {
    let pool = pool(2);
    let here = std::rc::Rc::new(std::thread::current().id());
    let total = AtomicUsize::new(0);
    pool.in_place_scope(|s| {
        assert_eq!(*here, std::thread::current().id());
        for i in 0..100 {
            let total = &total;
            s.spawn(move |_| {
                assert!(rayon_core::current_thread_index().is_some());
                total.fetch_add(i, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(total.into_inner(), 4950);
}

#[test]
fn build_scoped_threads_may_borrow_and_are_gone_afterwards() {
    let counter = AtomicUsize::new(0);
    let threads = Mutex::new(Vec::new());
    let r = ThreadPoolBuilder::new()
        .num_threads(3)
        .build_scoped(
            |t| {
                threads.lock().unwrap().push(std::thread::current().id());
                t.run()
            },
            |pool| {
                pool.install(|| {
                    rayon_core::scope(|s| {
                        for _ in 0..30 {
                            s.spawn(|_| {
                                counter.fetch_add(1, Ordering::Relaxed);
                            });
                        }
                    })
                });
                pool.current_num_threads()
            },
        )
        .unwrap();
    assert_eq!((r, counter.into_inner()), (3, 30));
    assert_eq!(threads.into_inner().unwrap().len(), 3);
}

/// Calls `pool.install` until one runs on the calling thread (in a sleeping worker's seat);
/// false if none does within 20 s. Idle workers sleep after a bounded number of failed steals.
fn runs_on_caller_eventually(pool: &rayon_core::ThreadPool) -> bool {
    let here = std::thread::current().id();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        let (id, sum) = pool.install(|| {
            let (a, b) = rayon_core::join(|| 20, || 22);
            (std::thread::current().id(), a + b)
        });
        assert_eq!(sum, 42);
        if id == here {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

#[test]
fn a_call_from_outside_a_default_pool_runs_on_the_caller_once_a_worker_sleeps() {
    for n in [1, 2] {
        let pool = pool(n);
        assert!(
            runs_on_caller_eventually(&pool),
            "{n} workers: no install ran on the calling thread"
        );
        // In the seat it runs as one of the pool's workers.
        let index = pool.install(rayon_core::current_thread_index);
        assert!(index.is_some_and(|i| i < n), "index {index:?}");
    }
}

#[test]
fn a_pool_with_named_threads_or_a_start_handler_runs_every_call_on_its_own_threads() {
    thread_local! {
        static STARTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    let named = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("own-{i}"))
        .build()
        .unwrap();
    let handled = ThreadPoolBuilder::new()
        .num_threads(2)
        .start_handler(|_| STARTED.with(|s| s.set(true)))
        .build()
        .unwrap();
    // The workers sleep between calls, which is when a default pool lends a seat.
    for _ in 0..50 {
        let name = named.install(|| std::thread::current().name().map(String::from));
        assert!(
            name.as_deref().is_some_and(|n| n.starts_with("own-")),
            "{name:?}"
        );
        assert!(
            handled.install(|| STARTED.with(|s| s.get())),
            "a call ran on a thread the start handler did not run on"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}
