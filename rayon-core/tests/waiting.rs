//! rayon's parallel iterators on magpie: a task that holds a lock across a nested parallel
//! iterator must never meet that lock again on its own thread while it waits.
//!
//! The program: `(0..N).into_par_iter().for_each(..)` where each item does unlocked busy work,
//! then takes one shared `Mutex` and, holding it, sums a nested `(0..K).into_par_iter()` of busy
//! pieces that do not take the lock. Run sequentially it is correct. The nested iterator is a tree
//! of joins: when a thief takes part of it, the holder waits at a sync point, and if its thread
//! starts an unrelated item meanwhile, that item blocks on the mutex the waiting holder owns (a
//! suspended task resumes only on its own thread): a deadlock. The rule that prevents it: a
//! waiting task's thread starts only work from the waiting task's own subtree.
//!
//! Each case runs on a `ThreadPool` of 1 to 64 threads and checks that every item ran exactly once
//! and that the sum equals the serial computation's. The pieces are shaped so that a thief likely
//! takes one and the holder then waits a while (see [`piece`]), and a test at 4 threads or more
//! repeats its run [`ROUNDS`] times, each on a fresh pool.
//!
//! A deadlocked run never returns, so each run goes through a watchdog: the program runs on a
//! thread of its own that reports its outcome (or its panic) on a channel, and the test fails
//! with a message saying the run deadlocked if nothing comes within a generous timeout (the stuck
//! threads are left behind). The timeout is a hang detector, not a timing assertion;
//! `MAGPIE_WAITING_TIMEOUT_S` overrides it.
//!
//! crates/magpie/tests/waiting.rs runs the same pattern through magpie's `join`, `scope` and
//! `install`, with a `Mutex`, an `RwLock` and a thread-local `RefCell`.

use rayon::prelude::*;
use std::hint::black_box;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Items of the outer parallel iterator. Short runs, many of them ([`ROUNDS`]): per second of
/// testing, 100 items a run found the deadlock more often than 200 or 800.
const ITEMS: usize = 100;
/// Runs per test at 4 threads or more, each on a fresh pool. Without the rule a run at 4, 16 or
/// 64 threads deadlocks only one time in 5 to 50 on a 2-core machine (least often at 4 threads,
/// and when the machine is busy with other work), so a test needs many runs to fail reliably.
/// At 1 and 2 threads, where a run without the rule seldom gets into the deadlock, one run
/// checks that the rule costs nothing.
const ROUNDS: usize = 120;
/// Unlocked busy work of each item, in microseconds.
const OUTER_US: u64 = 30;
/// Pieces of the nested parallel iterator, summed while the lock is held: its two halves.
const PIECES: usize = 2;
/// How long the first piece to start gives a thief to start the other, at most, in
/// microseconds (see [`piece`]).
const HANDOFF_US: u64 = 100;
/// Busy work of the first piece to start, once the other has started, in microseconds.
const FIRST_US: u64 = 20;
/// Busy work of the second piece to start, in microseconds.
const SECOND_US: u64 = 200;

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

/// What piece `p` of item `i` returns: the busy work does not change it.
fn value(i: usize, p: usize) -> u64 {
    (i * PIECES + p) as u64 + 1
}

/// Piece `p` of item `i`: busy work without the lock. `started` counts the item's pieces that
/// have started.
///
/// The first piece to start waits (spinning, at most [`HANDOFF_US`]) until the other has
/// started too, then works [`FIRST_US`]; the second works [`SECOND_US`]. Run sequentially that
/// is only a delay. In parallel it makes the steal the bug needs likely and its window wide: a
/// thief gets time to take the other half of the nested iterator's join, and the holder, done
/// first, then waits at the sync point long enough for its thread to start an unrelated item if
/// the runtime lets it. With equal pieces the holder seldom waits on a 2-core machine, and
/// whether a run deadlocks depends mostly on what else the machine is running.
fn piece(i: usize, p: usize, started: &AtomicU32) -> u64 {
    let seed = (i * PIECES + p) as u64;
    if started.fetch_add(1, Ordering::AcqRel) == 0 {
        let end = Instant::now() + Duration::from_micros(HANDOFF_US);
        while started.load(Ordering::Acquire) < 2 && Instant::now() < end {
            std::hint::spin_loop();
        }
        black_box(busy(FIRST_US, seed));
    } else {
        black_box(busy(SECOND_US, seed));
    }
    value(i, p)
}

/// What a run leaves, checked by the test.
#[derive(Debug)]
struct Outcome {
    /// Items that did not run exactly once: (item, runs).
    not_once: Vec<(usize, u32)>,
    /// Items finished.
    count: u64,
    /// The sum the mutex guards.
    guarded: u64,
}

fn scenario(threads: usize, items: usize) -> Outcome {
    let pool = rayon_core::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let lock = Mutex::new(0u64);
    let ran: Vec<AtomicU32> = (0..items).map(|_| AtomicU32::new(0)).collect();
    let count = AtomicU64::new(0);
    pool.install(|| {
        (0..items).into_par_iter().for_each(|i| {
            black_box(busy(OUTER_US, i as u64));
            let mut g = lock.lock().unwrap();
            let started = AtomicU32::new(0);
            let s: u64 = (0..PIECES)
                .into_par_iter()
                .map(|p| piece(i, p, &started))
                .sum();
            *g += s;
            drop(g);
            ran[i].fetch_add(1, Ordering::Relaxed);
            count.fetch_add(1, Ordering::Relaxed);
        })
    });
    Outcome {
        not_once: ran
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.load(Ordering::SeqCst)))
            .filter(|&(_, r)| r != 1)
            .collect(),
        count: count.load(Ordering::SeqCst),
        guarded: lock.into_inner().unwrap(),
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
        Ok(Err(msg)) => panic!("{what}: the run panicked: {msg}"),
        Err(RecvTimeoutError::Timeout) => panic!(
            "{what}: deadlocked: the run did not finish within {} s (a waiting thread started an \
             unrelated item that blocks on the mutex its waiting task holds?)",
            limit.as_secs()
        ),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("{what}: the scenario's thread ended without reporting")
        }
    }
}

fn check(threads: usize) {
    let want: u64 = (0..ITEMS)
        .flat_map(|i| (0..PIECES).map(move |p| value(i, p)))
        .sum();
    let rounds = if threads >= 4 { ROUNDS } else { 1 };
    for round in 1..=rounds {
        let what = format!(
            "Mutex held across a nested par_iter at {threads} threads, {ITEMS} items, run {round} \
             of {rounds}"
        );
        let out = watchdog(&what, move || scenario(threads, ITEMS));
        assert_eq!(out.count, ITEMS as u64, "{what}: items finished");
        assert!(
            out.not_once.is_empty(),
            "{what}: items that did not run exactly once (item, runs): {:?}",
            &out.not_once[..out.not_once.len().min(20)]
        );
        assert_eq!(out.guarded, want, "{what}: the sum the mutex guards");
    }
}

#[test]
fn mutex_held_across_nested_par_iter_never_deadlocks_at_1_thread() {
    check(1);
}

#[test]
fn mutex_held_across_nested_par_iter_never_deadlocks_at_2_threads() {
    check(2);
}

#[test]
fn mutex_held_across_nested_par_iter_never_deadlocks_at_4_threads() {
    check(4);
}

#[test]
fn mutex_held_across_nested_par_iter_never_deadlocks_at_16_threads() {
    check(16);
}

#[test]
fn mutex_held_across_nested_par_iter_never_deadlocks_at_64_threads() {
    check(64);
}
