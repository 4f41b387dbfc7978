//! A task that holds a lock across a sync point must never meet that lock again on its own
//! thread while it waits.
//!
//! The program pattern: many scope spawns, each doing some unlocked busy work, then taking one
//! shared lock and, while still holding it, waiting for two busy halves that do not take the
//! lock. Run as sequential calls the program is correct. On a work-stealing runtime it is correct
//! only if a task waiting at a sync point (its other half was stolen, its nested scope's spawns
//! are still running, or it waits for an `install` into another pool) never starts an unrelated
//! task on its thread: that task would take the same lock, and
//!
//! * with a `Mutex` or an `RwLock` write guard, it blocks the only thread that can resume the
//!   holder (a suspended task resumes on the thread that suspended it): a deadlock;
//! * with a thread-local `RefCell` borrowed across the wait, it panics with "already borrowed"
//!   (this case also takes the shared `Mutex` inside the borrow, to make the waits happen: see
//!   [`Held::RefCell`]).
//!
//! Each case runs the pattern on a pool of 1 to 64 workers, through three ways of waiting with the
//! lock held (a `join`, a nested `scope`, an `install` into a second pool), and checks that every
//! task ran exactly once and that the sums equal the serial computation's. At 1 worker (and at 2,
//! for `join` and nested `scope`) a runtime without the rule seldom or never gets into the
//! deadlock; those sizes check that the rule costs no correctness where nothing is stolen. The
//! halves are shaped so that, with idle thieves, one is likely stolen and the holder then waits
//! a while (see [`half`]); a test at 4 workers or more repeats its run [`ROUNDS`] times.
//!
//! A deadlocked run never returns, so each run goes through a watchdog: the scenario runs on a
//! thread of its own, which reports its outcome (or its panic) on a channel; the test waits for
//! that with a generous timeout and fails with a message saying the run deadlocked if none comes
//! (the stuck threads are left behind: the test fails instead of hanging). The timeout is a hang
//! detector only, not a timing assertion; `MAGPIE_WAITING_TIMEOUT_S` overrides it.
//!
//! rayon-core/tests/waiting.rs runs the same pattern through rayon's `par_iter`.

// These exercise the runtime, which is not built under `--cfg loom` (see lib.rs).
#![cfg(not(loom))]

use magpie::Pool;
use std::cell::RefCell;
use std::hint::black_box;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

/// Scope spawns per run: enough that waiting workers find unrelated spawns to start.
const TASKS: usize = if cfg!(debug_assertions) { 400 } else { 800 };
/// Runs per test at 4 workers or more, each on a fresh pool. Without the rule such a run deadlocks
/// (or panics) nearly always on an idle 2-core machine, but less often when the machine is busy
/// with other work: the holder's thread must find an unrelated task to start while it waits.
/// At 1 and 2 workers a run without the rule seldom gets there (except through `install`), and
/// one run is enough to check the rule costs nothing there. Under ThreadSanitizer (`--cfg
/// magpie_tsan`) one run: the sanitizer checks every access of the run it watches, whatever the
/// interleaving, while the repeats hunt for a deadlock's interleaving, which the plain test run
/// does.
const ROUNDS: usize = if cfg!(magpie_tsan) { 1 } else { 5 };
/// Unlocked busy work at the start of each task, in microseconds.
const OUTER_US: u64 = 30;
/// How long the first half of a task to start gives a thief to start the other, at most, in
/// microseconds (see [`half`]).
const HANDOFF_US: u64 = 100;
/// Busy work of the first half to start, once the other has started, in microseconds.
const FIRST_US: u64 = 20;
/// Busy work of the second half to start, in microseconds.
const SECOND_US: u64 = 200;
/// Workers of the second pool that `install` sends the halves to.
const OTHER_POOL_WORKERS: usize = 2;

/// The lock a task holds while it waits.
#[derive(Clone, Copy, Debug)]
enum Held {
    /// One `Mutex` shared by all tasks.
    Mutex,
    /// One `RwLock` shared by all tasks, held for writing.
    RwLock,
    /// A thread-local `RefCell`, mutably borrowed, and inside the borrow the shared `Mutex`.
    ///
    /// The borrow is what this case checks: an unrelated task started on the waiting thread
    /// finds it taken and panics ("already borrowed") before it reaches the mutex, so the case
    /// fails with a panic where the `Mutex` case deadlocks. The mutex is there for the waits:
    /// with per-thread borrows alone no task ever waits for another, every worker stays busy
    /// and no thief is idle to take a holder's half, so the holder seldom waits (with plain
    /// equal halves a runtime without the rule failed about 1 run in 6 through `join` and none
    /// through a nested scope, on 2 cores). Serialized by the mutex, the workers that queue for
    /// it leave thieves idle, the holder's halves are stolen, and the holder waits.
    RefCell,
}

/// How a task waits for its halves while it holds the lock.
#[derive(Clone, Copy, Debug)]
enum Route {
    /// `magpie::join` of the two halves.
    Join,
    /// A nested `magpie::scope` that spawns the two halves.
    Scope,
    /// `install` into a second pool, which joins the two halves.
    Install,
}

thread_local! {
    static CELL: RefCell<u64> = const { RefCell::new(0) };
}

/// Spins for `us` microseconds on arithmetic the compiler cannot drop (never sleeps).
fn busy(us: u64, seed: u64) -> u64 {
    let end = Instant::now() + Duration::from_micros(us);
    let mut x = seed | 1;
    loop {
        for _ in 0..32 {
            x = black_box(
                x.wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407),
            );
        }
        if Instant::now() >= end {
            return x;
        }
    }
}

/// What half `h` (0 or 1) of task `i` returns: the busy work does not change it.
fn value(i: usize, h: u64) -> u64 {
    (i as u64) * 3 + h + 1
}

/// Half `h` of task `i`: busy work without the lock. `started` counts the task's halves that
/// have started.
///
/// The first half to start waits (spinning, at most [`HANDOFF_US`]) until the other has started
/// too, then works [`FIRST_US`]; the second works [`SECOND_US`]. Run as sequential calls that is
/// only a delay. In parallel it makes the steal the bug needs likely and its window wide: a
/// thief on a 2-core machine gets time to take the pending half, and the holder, done first,
/// then waits at the sync point for about `SECOND_US`, long enough for its thread to start an
/// unrelated task if the runtime lets it. With plain equal halves the holder seldom waits at all
/// there (magpie publishes a pushed half only when its deque runs low or a thief asks), and
/// whether a run deadlocks depends mostly on what else the machine is running.
fn half(i: usize, h: u64, started: &AtomicU32) -> u64 {
    let seed = i as u64 * 2 + h;
    if started.fetch_add(1, Ordering::AcqRel) == 0 {
        let end = Instant::now() + Duration::from_micros(HANDOFF_US);
        while started.load(Ordering::Acquire) < 2 && Instant::now() < end {
            std::hint::spin_loop();
        }
        black_box(busy(FIRST_US, seed));
    } else {
        black_box(busy(SECOND_US, seed));
    }
    value(i, h)
}

/// The serial computation's sum of all halves.
fn expected_sum(tasks: usize) -> u64 {
    (0..tasks).map(|i| value(i, 0) + value(i, 1)).sum()
}

/// What every task shares.
struct Shared {
    mutex: Mutex<u64>,
    rwlock: RwLock<u64>,
    /// Runs of each task.
    ran: Vec<AtomicU32>,
    /// Tasks finished.
    count: AtomicUsize,
    /// Sum of all halves, added after the lock is released.
    sum: AtomicU64,
}

/// Runs `f` on the value `lock` guards, holding the lock (or the borrow) throughout.
fn held<R>(shared: &Shared, lock: Held, f: impl FnOnce(&mut u64) -> R) -> R {
    match lock {
        Held::Mutex => {
            let mut g = shared.mutex.lock().unwrap();
            f(&mut g)
        }
        Held::RwLock => {
            let mut g = shared.rwlock.write().unwrap();
            f(&mut g)
        }
        Held::RefCell => CELL.with(|c| {
            let mut b = c.borrow_mut();
            // The shared lock, taken inside the borrow: see `Held::RefCell`.
            let _serial = shared.mutex.lock().unwrap();
            f(&mut b)
        }),
    }
}

/// Waits for the two halves of task `i` by `route`.
fn halves(route: Route, i: usize, other: Option<&Pool>) -> (u64, u64) {
    let started = &AtomicU32::new(0);
    match route {
        Route::Join => magpie::join(|| half(i, 0, started), || half(i, 1, started)),
        Route::Scope => {
            let (mut a, mut b) = (0, 0);
            magpie::scope(|s| {
                s.spawn(|_| a = half(i, 0, started));
                s.spawn(|_| b = half(i, 1, started));
            });
            (a, b)
        }
        Route::Install => other
            .expect("a second pool for the install route")
            .install(|| magpie::join(|| half(i, 0, started), || half(i, 1, started))),
    }
}

/// One task: unlocked busy work, then the halves waited for with the lock held.
fn task(i: usize, lock: Held, route: Route, shared: &Shared, other: Option<&Pool>) {
    black_box(busy(OUTER_US, i as u64));
    let pair = held(shared, lock, |guarded| {
        let (a, b) = halves(route, i, other);
        *guarded += a + b;
        a + b
    });
    shared.sum.fetch_add(pair, Ordering::Relaxed);
    shared.ran[i].fetch_add(1, Ordering::Relaxed);
    shared.count.fetch_add(1, Ordering::Relaxed);
}

/// What a run leaves, checked by the test.
#[derive(Debug)]
struct Outcome {
    count: usize,
    /// Tasks that did not run exactly once: (task, runs).
    not_once: Vec<(usize, u32)>,
    sum: u64,
    /// The value the shared lock guards (`None` for the thread-local `RefCell`).
    guarded: Option<u64>,
}

/// The scenario: `tasks` scope spawns on a pool of `workers`.
fn scenario(lock: Held, route: Route, workers: usize, tasks: usize) -> Outcome {
    let pool = Pool::builder().workers(workers).build().unwrap();
    let other = matches!(route, Route::Install)
        .then(|| Pool::builder().workers(OTHER_POOL_WORKERS).build().unwrap());
    let shared = Shared {
        mutex: Mutex::new(0),
        rwlock: RwLock::new(0),
        ran: (0..tasks).map(|_| AtomicU32::new(0)).collect(),
        count: AtomicUsize::new(0),
        sum: AtomicU64::new(0),
    };
    pool.install(|| {
        let (shared, other) = (&shared, other.as_ref());
        magpie::scope(|s| {
            for i in 0..tasks {
                s.spawn(move |_| task(i, lock, route, shared, other));
            }
        })
    });
    let not_once = shared
        .ran
        .iter()
        .enumerate()
        .map(|(i, r)| (i, r.load(Ordering::SeqCst)))
        .filter(|&(_, r)| r != 1)
        .collect();
    Outcome {
        count: shared.count.load(Ordering::SeqCst),
        not_once,
        sum: shared.sum.load(Ordering::SeqCst),
        guarded: match lock {
            Held::Mutex => Some(shared.mutex.into_inner().unwrap()),
            Held::RwLock => Some(shared.rwlock.into_inner().unwrap()),
            Held::RefCell => None,
        },
    }
}

/// How long the watchdog waits for a run before calling it deadlocked.
fn timeout() -> Duration {
    let default = if cfg!(debug_assertions) { 180 } else { 60 };
    let s = std::env::var("MAGPIE_WAITING_TIMEOUT_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Duration::from_secs(s)
}

fn message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `f` on a thread of its own and returns its result; panics if `f` panics (with its
/// message) or has not returned within [`timeout`] (a deadlock: its threads are left stuck).
fn watchdog<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name(format!("waiting: {what}"))
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(f)).map_err(|p| message(&*p));
            let _ = tx.send(r);
        })
        .expect("a thread for the scenario");
    let limit = timeout();
    match rx.recv_timeout(limit) {
        Ok(Ok(r)) => r,
        Ok(Err(msg)) => panic!(
            "{what}: the run panicked (a waiting worker started an unrelated task that met the \
             held borrow or lock?): {msg}"
        ),
        Err(RecvTimeoutError::Timeout) => panic!(
            "{what}: deadlocked: the run did not finish within {} s (a waiting worker started an \
             unrelated task that blocks on the lock its waiting task holds?)",
            limit.as_secs()
        ),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("{what}: the scenario's thread ended without reporting")
        }
    }
}

fn check(lock: Held, route: Route, workers: usize) {
    let want = expected_sum(TASKS);
    let rounds = if workers >= 4 { ROUNDS } else { 1 };
    for round in 1..=rounds {
        let what = format!(
            "{lock:?} held across {route:?} at {workers} workers, {TASKS} tasks, run {round} of \
             {rounds}"
        );
        let out = watchdog(&what, move || scenario(lock, route, workers, TASKS));
        assert_eq!(out.count, TASKS, "{what}: tasks finished");
        assert!(
            out.not_once.is_empty(),
            "{what}: tasks that did not run exactly once (task, runs): {:?}",
            &out.not_once[..out.not_once.len().min(20)]
        );
        assert_eq!(out.sum, want, "{what}: sum of the halves");
        if let Some(g) = out.guarded {
            assert_eq!(g, want, "{what}: the value the lock guards");
        }
    }
}

macro_rules! cases {
    ($($name:ident: $lock:ident, $route:ident, $workers:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check(Held::$lock, Route::$route, $workers);
            }
        )*
    };
}

cases! {
    mutex_held_across_join_never_deadlocks_at_1_worker: Mutex, Join, 1;
    mutex_held_across_join_never_deadlocks_at_2_workers: Mutex, Join, 2;
    mutex_held_across_join_never_deadlocks_at_4_workers: Mutex, Join, 4;
    mutex_held_across_join_never_deadlocks_at_16_workers: Mutex, Join, 16;
    mutex_held_across_join_never_deadlocks_at_64_workers: Mutex, Join, 64;
    mutex_held_across_nested_scope_never_deadlocks_at_1_worker: Mutex, Scope, 1;
    mutex_held_across_nested_scope_never_deadlocks_at_2_workers: Mutex, Scope, 2;
    mutex_held_across_nested_scope_never_deadlocks_at_4_workers: Mutex, Scope, 4;
    mutex_held_across_nested_scope_never_deadlocks_at_16_workers: Mutex, Scope, 16;
    mutex_held_across_nested_scope_never_deadlocks_at_64_workers: Mutex, Scope, 64;
    mutex_held_across_install_into_other_pool_never_deadlocks_at_1_worker: Mutex, Install, 1;
    mutex_held_across_install_into_other_pool_never_deadlocks_at_2_workers: Mutex, Install, 2;
    mutex_held_across_install_into_other_pool_never_deadlocks_at_4_workers: Mutex, Install, 4;
    mutex_held_across_install_into_other_pool_never_deadlocks_at_16_workers: Mutex, Install, 16;
    mutex_held_across_install_into_other_pool_never_deadlocks_at_64_workers: Mutex, Install, 64;

    rwlock_write_held_across_join_never_deadlocks_at_1_worker: RwLock, Join, 1;
    rwlock_write_held_across_join_never_deadlocks_at_2_workers: RwLock, Join, 2;
    rwlock_write_held_across_join_never_deadlocks_at_4_workers: RwLock, Join, 4;
    rwlock_write_held_across_join_never_deadlocks_at_16_workers: RwLock, Join, 16;
    rwlock_write_held_across_join_never_deadlocks_at_64_workers: RwLock, Join, 64;
    rwlock_write_held_across_nested_scope_never_deadlocks_at_1_worker: RwLock, Scope, 1;
    rwlock_write_held_across_nested_scope_never_deadlocks_at_2_workers: RwLock, Scope, 2;
    rwlock_write_held_across_nested_scope_never_deadlocks_at_4_workers: RwLock, Scope, 4;
    rwlock_write_held_across_nested_scope_never_deadlocks_at_16_workers: RwLock, Scope, 16;
    rwlock_write_held_across_nested_scope_never_deadlocks_at_64_workers: RwLock, Scope, 64;
    rwlock_write_held_across_install_into_other_pool_never_deadlocks_at_1_worker: RwLock, Install, 1;
    rwlock_write_held_across_install_into_other_pool_never_deadlocks_at_2_workers: RwLock, Install, 2;
    rwlock_write_held_across_install_into_other_pool_never_deadlocks_at_4_workers: RwLock, Install, 4;
    rwlock_write_held_across_install_into_other_pool_never_deadlocks_at_16_workers: RwLock, Install, 16;
    rwlock_write_held_across_install_into_other_pool_never_deadlocks_at_64_workers: RwLock, Install, 64;

    refcell_borrow_held_across_join_never_panics_at_1_worker: RefCell, Join, 1;
    refcell_borrow_held_across_join_never_panics_at_2_workers: RefCell, Join, 2;
    refcell_borrow_held_across_join_never_panics_at_4_workers: RefCell, Join, 4;
    refcell_borrow_held_across_join_never_panics_at_16_workers: RefCell, Join, 16;
    refcell_borrow_held_across_join_never_panics_at_64_workers: RefCell, Join, 64;
    refcell_borrow_held_across_nested_scope_never_panics_at_1_worker: RefCell, Scope, 1;
    refcell_borrow_held_across_nested_scope_never_panics_at_2_workers: RefCell, Scope, 2;
    refcell_borrow_held_across_nested_scope_never_panics_at_4_workers: RefCell, Scope, 4;
    refcell_borrow_held_across_nested_scope_never_panics_at_16_workers: RefCell, Scope, 16;
    refcell_borrow_held_across_nested_scope_never_panics_at_64_workers: RefCell, Scope, 64;
    refcell_borrow_held_across_install_into_other_pool_never_panics_at_1_worker: RefCell, Install, 1;
    refcell_borrow_held_across_install_into_other_pool_never_panics_at_2_workers: RefCell, Install, 2;
    refcell_borrow_held_across_install_into_other_pool_never_panics_at_4_workers: RefCell, Install, 4;
    refcell_borrow_held_across_install_into_other_pool_never_panics_at_16_workers: RefCell, Install, 16;
    refcell_borrow_held_across_install_into_other_pool_never_panics_at_64_workers: RefCell, Install, 64;
}

/// Depth of each tree in the stranded-spawn stress below (about 11,000 leaves).
const TREE_DEPTH: u32 = 8;

/// Leaves of [`spawning_tree`]`(depth)`, computed serially.
fn tree_leaves(depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let spawned = 3 * (if depth > 1 { tree_leaves(depth - 2) } else { 0 } + 1);
    2 * tree_leaves(depth - 1) + 1 + spawned
}

/// A tree of joins (one of them nested in a half), then a scope whose spawns each run a smaller
/// tree and spawn once more into that same scope from wherever they run. Such a spawn lies in
/// the deque of the worker that ran its spawner, often under a join that worker then waits at,
/// while the scope's end waits on another thread. Returns how many leaves ran.
fn spawning_tree(depth: u32, seed: u64) -> u64 {
    if depth == 0 {
        black_box(busy(1, seed));
        return 1;
    }
    let (a, b) = magpie::join(
        || spawning_tree(depth - 1, seed * 3 + 1),
        || {
            let (x, y) = magpie::join(
                || spawning_tree(depth - 1, seed * 5 + 2),
                || {
                    black_box(busy(1, seed));
                    1
                },
            );
            x + y
        },
    );
    let spawned = AtomicU64::new(0);
    magpie::scope(|s| {
        for (i, policy) in [
            magpie::Policy::WorkFirst,
            magpie::Policy::HelpFirst,
            magpie::Policy::Adaptive,
        ]
        .into_iter()
        .enumerate()
        {
            let spawned = &spawned;
            s.spawn_with(policy, move |s| {
                if depth > 1 {
                    let n = spawning_tree(depth - 2, seed * 7 + i as u64);
                    spawned.fetch_add(n, Ordering::Relaxed);
                }
                s.spawn_with(magpie::Policy::WorkFirst, move |_| {
                    black_box(busy(1, seed + i as u64));
                    spawned.fetch_add(1, Ordering::Relaxed);
                });
            });
        }
    });
    a + b + spawned.into_inner()
}

/// A spawn left in a waiting worker's deque is never stranded there. Such a spawn may be what
/// a scope's end on another thread waits for, while the worker, which may not start it, has
/// nothing else to do. It either runs the spawn or, before it sleeps, hands it to the pool's
/// queue, where the scope's thread takes it. Without that hand-over this test deadlocked (every
/// worker asleep) in about one run in thirty. Under two policies, with steals of one item and of
/// half a deque.
#[test]
fn spawns_left_under_a_waiting_join_are_never_stranded() {
    // Under ThreadSanitizer, fewer: as for `ROUNDS`.
    let rounds = if cfg!(magpie_tsan) {
        3
    } else if cfg!(debug_assertions) {
        12
    } else {
        40
    };
    for workers in [3, 5] {
        for policy in [magpie::Policy::WorkFirst, magpie::Policy::Adaptive] {
            for steal_half in [true, false] {
                let what = format!("{policy} at {workers} workers, steal_half {steal_half}");
                let label = what.clone();
                watchdog(&what, move || {
                    let pool = Pool::builder()
                        .workers(workers)
                        .policy(policy)
                        .steal_half(steal_half)
                        .build()
                        .unwrap();
                    for round in 0..rounds {
                        let leaves = pool.install(|| spawning_tree(TREE_DEPTH, round));
                        assert_eq!(leaves, tree_leaves(TREE_DEPTH), "{label}: wrong answer");
                    }
                });
            }
        }
    }
}
