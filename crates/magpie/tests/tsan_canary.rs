//! The ThreadSanitizer run's canary (`scripts/tsan.sh`): a program with a data race on purpose,
//! which the sanitizer must report. It shows that the run can fail: that the sanitizer sees
//! memory accessed by tasks on fiber stacks, through a steal, on two worker threads, and that a
//! clean run of the other tests is therefore worth something.
//!
//! Built only with `--cfg magpie_tsan`, and run alone by that script, which expects it to fail
//! with a data race report. The race is undefined behaviour: never run it anywhere else.

#![cfg(all(magpie_tsan, not(loom)))]

use magpie::{join, Policy, Pool};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

/// A cell shared between threads with no synchronisation: the planted bug.
struct Racy(UnsafeCell<u64>);

// SAFETY: none; this is the race the sanitizer has to find (see the module doc).
unsafe impl Sync for Racy {}

impl Racy {
    fn bump(&self) {
        // SAFETY: none (the planted race).
        unsafe { *self.0.get() += 1 }
    }
}

#[test]
fn the_sanitizer_reports_a_race_between_two_join_halves() {
    // Work-first, so the first half runs on the joiner's thread and the second is the one a
    // thief takes (help-first would run the second half first, and its thread could then pop the
    // first one back and run both).
    let pool = Pool::builder()
        .workers(2)
        .policy(Policy::WorkFirst)
        .build()
        .unwrap();
    let cell = Racy(UnsafeCell::new(0));
    // A relaxed flag orders nothing, so the two writes below stay unordered for the sanitizer;
    // it only makes the first half wait until a thief has run the second one. The second half
    // writes before it raises the flag, so the writes never overlap in time: the sanitizer's
    // shadow memory is updated without locks and could miss two accesses made at one moment.
    let stolen = AtomicBool::new(false);
    let (first, second): (ThreadId, ThreadId) = pool.install(|| {
        join(
            || {
                let until = Instant::now() + Duration::from_secs(20);
                while !stolen.load(Ordering::Relaxed) && Instant::now() < until {
                    std::hint::spin_loop();
                }
                cell.bump();
                thread::current().id()
            },
            || {
                cell.bump();
                stolen.store(true, Ordering::Relaxed);
                thread::current().id()
            },
        )
    });
    // If both halves ran on one thread, one after the other, there was no race to see: say so
    // rather than let the script's check pass or fail for the wrong reason.
    assert_ne!(
        first, second,
        "both halves ran on one thread: no race was planted"
    );
}
