//! The ThreadSanitizer run's canary (`scripts/tsan.sh`): a program with a data race on purpose,
//! which the sanitizer must report. It shows that the run can fail: that the sanitizer sees
//! memory accessed by tasks on fiber stacks, through a steal, on two worker threads, and that a
//! clean run of the other tests is therefore worth something.
//!
//! Built only with `--cfg magpie_tsan`, and run alone by that script, which expects it to fail
//! with a data race report. The race is undefined behaviour: never run it anywhere else.

#![cfg(all(magpie_tsan, not(loom)))]

use magpie::{join, Pool};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
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
    let pool = Pool::builder().workers(2).build().unwrap();
    let cell = Racy(UnsafeCell::new(0));
    // A relaxed flag orders nothing, so the two writes below stay unordered for the sanitizer;
    // it only makes the first half wait until a thief runs the second one.
    let stolen = AtomicBool::new(false);
    let ran_apart = pool.install(|| {
        let (apart, ()) = join(
            || {
                let until = Instant::now() + Duration::from_secs(20);
                while !stolen.load(Ordering::Relaxed) && Instant::now() < until {
                    std::hint::spin_loop();
                }
                cell.bump();
                stolen.load(Ordering::Relaxed)
            },
            || {
                stolen.store(true, Ordering::Relaxed);
                cell.bump();
            },
        );
        apart
    });
    // If no thief took the second half within the wait, the halves ran one after the other on
    // one thread and there was no race to see: say so rather than let the script's check pass
    // or fail for the wrong reason.
    assert!(
        ran_apart,
        "the second half was never stolen: no race was planted"
    );
}
