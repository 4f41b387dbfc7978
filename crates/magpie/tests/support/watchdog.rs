//! A hang is a test failure: [`watchdog`] aborts the test process when a run does not finish in
//! time, naming it. Test support (included with `#[path]`), not magpie's API.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Runs `f`, aborting the process if it takes longer than `secs` (a hang is a failure).
pub(crate) fn watchdog<R>(secs: u64, what: &str, f: impl FnOnce() -> R) -> R {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let what = what.to_string();
    std::thread::spawn(move || {
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_secs(secs) {
            if d.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("watchdog: {what} did not finish in {secs} s");
        std::process::abort();
    });
    let r = f();
    done.store(true, Ordering::Relaxed);
    r
}
