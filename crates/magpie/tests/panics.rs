//! A panic in any task reaches the caller of the enclosing `join`, `scope` or `install` after the
//! scope's other tasks have finished, and the pool stays usable.

// These exercise the runtime, which is not built under `--cfg loom` (see lib.rs).
#![cfg(not(loom))]

use magpie::{join, scope, Policy, Pool};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

const POLICIES: [Policy; 3] = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];

fn quiet() {
    // Keep the expected panics out of the test output.
    if std::env::var_os("MAGPIE_TEST_LOUD").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
}

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

fn busy(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| busy(n - 1), || busy(n - 2));
    a + b
}

#[test]
fn panic_in_join_half_reaches_caller_and_pool_survives() {
    quiet();
    for p in POLICIES {
        for w in [1, 2, 4] {
            let pool = Pool::builder().workers(w).policy(p).build().unwrap();
            for side in 0..2 {
                let other_done = AtomicUsize::new(0);
                let r = catch_unwind(AssertUnwindSafe(|| {
                    pool.install(|| {
                        join(
                            || {
                                if side == 0 {
                                    panic!("left");
                                }
                                busy(15);
                                other_done.fetch_add(1, Ordering::SeqCst);
                            },
                            || {
                                if side == 1 {
                                    panic!("right");
                                }
                                busy(15);
                                other_done.fetch_add(1, Ordering::SeqCst);
                            },
                        )
                    })
                }));
                let msg = message(r.unwrap_err());
                assert_eq!(msg, if side == 0 { "left" } else { "right" }, "{p} x{w}");
                // The other half ran to completion before the panic reached us.
                assert_eq!(other_done.load(Ordering::SeqCst), 1, "{p} x{w}");
            }
            assert_eq!(
                pool.install(|| busy(18)),
                2584,
                "pool unusable after panic: {p} x{w}"
            );
        }
    }
}

#[test]
fn panic_deep_in_recursion_reaches_install() {
    quiet();
    for p in POLICIES {
        let pool = Pool::builder().workers(2).policy(p).build().unwrap();
        fn boom(n: u64) -> u64 {
            if n == 3 {
                panic!("deep");
            }
            if n < 2 {
                return n;
            }
            let (a, b) = join(|| boom(n - 1), || boom(n - 2));
            a + b
        }
        let r = catch_unwind(AssertUnwindSafe(|| pool.install(|| boom(20))));
        assert_eq!(message(r.unwrap_err()), "deep");
        assert_eq!(pool.install(|| busy(16)), 987);
    }
}

#[test]
fn panic_in_scope_task_waits_for_siblings() {
    quiet();
    for p in POLICIES {
        for w in [1, 2, 3] {
            let pool = Pool::builder().workers(w).policy(p).build().unwrap();
            let finished = AtomicUsize::new(0);
            let r = catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| {
                    scope(|s| {
                        for i in 0..64 {
                            let finished = &finished;
                            s.spawn(move |s| {
                                if i == 17 {
                                    panic!("task 17");
                                }
                                // Nested spawns of siblings must finish too.
                                s.spawn(move |_| {
                                    busy(10);
                                    finished.fetch_add(1, Ordering::SeqCst);
                                });
                                busy(10);
                                finished.fetch_add(1, Ordering::SeqCst);
                            });
                        }
                    })
                })
            }));
            assert_eq!(message(r.unwrap_err()), "task 17", "{p} x{w}");
            assert_eq!(finished.load(Ordering::SeqCst), 63 * 2, "{p} x{w}");
            assert_eq!(pool.install(|| busy(15)), 610);
        }
    }
}

#[test]
fn panic_in_scope_body_waits_for_spawned_tasks() {
    quiet();
    for p in POLICIES {
        let pool = Pool::builder().workers(2).policy(p).build().unwrap();
        let finished = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| {
                scope(|s| {
                    for _ in 0..10 {
                        s.spawn(|_| {
                            busy(12);
                            finished.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    panic!("body");
                })
            })
        }));
        assert_eq!(message(r.unwrap_err()), "body");
        assert_eq!(finished.load(Ordering::SeqCst), 10);
    }
}

#[test]
fn panic_from_global_pool_functions() {
    quiet();
    let r = catch_unwind(|| join(|| 1, || -> i32 { panic!("global") }));
    assert_eq!(message(r.unwrap_err()), "global");
    assert_eq!(busy(12), 144);
}

#[test]
fn work_first_stack_limit_is_a_clean_error() {
    quiet();
    // A work-first scope spawn chain that needs more fibers than the cap stops with
    // Error::StackLimit. With 64 KiB fiber stacks no child can run in place (that needs 64 KiB
    // left), so every spawn preempts its parent onto a new fiber.
    let pool = Pool::builder()
        .workers(1)
        .policy(Policy::WorkFirst)
        .max_fibers(64)
        .stack_size(64 << 10)
        .build()
        .unwrap();
    fn chain(s: &magpie::Scope<'_>, n: u32) {
        if n > 0 {
            s.spawn(move |s| chain(s, n - 1));
        }
    }
    let r = catch_unwind(AssertUnwindSafe(|| {
        pool.install(|| scope(|s| chain(s, 10_000)))
    }));
    let p = r.unwrap_err();
    let e = magpie::Error::from_panic(&*p).expect("a magpie::Error payload");
    assert!(matches!(e, magpie::Error::StackLimit { .. }));
    assert!(e.to_string().contains("stack limit"), "{e}");
    // The same shape under adaptive completes (the stack condition turns spawns help-first).
    let pool = Pool::builder()
        .workers(1)
        .policy(Policy::Adaptive)
        .max_fibers(64)
        .stack_threshold(16)
        .build()
        .unwrap();
    pool.install(|| scope(|s| chain(s, 10_000)));
    assert!(pool.stats().max_frames <= 17);
    // With room to run children in place, the same work-first chain completes.
    let pool = Pool::builder()
        .workers(1)
        .policy(Policy::WorkFirst)
        .max_fibers(64)
        .build()
        .unwrap();
    pool.install(|| scope(|s| chain(s, 10_000)));
}

#[test]
fn deep_join_recursion_does_not_overflow() {
    // 100k nested joins: far beyond one fiber stack if each frame nested; the stack condition
    // moves the halves to fresh fibers instead.
    fn down(n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let (a, _) = join(|| down(n - 1), || ());
        a + 1
    }
    for p in [Policy::HelpFirst, Policy::Adaptive] {
        let pool = Pool::builder()
            .workers(2)
            .policy(p)
            .stack_size(256 << 10)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| down(100_000)), 100_000, "{p}");
    }
    // Forced work-first: a clean stack-limit error, never a segfault.
    quiet();
    let pool = Pool::builder()
        .workers(1)
        .policy(Policy::WorkFirst)
        .stack_size(256 << 10)
        .build()
        .unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| pool.install(|| down(1_000_000))));
    let p = r.unwrap_err();
    assert!(matches!(
        magpie::Error::from_panic(&*p),
        Some(magpie::Error::StackLimit { .. })
    ));
}
