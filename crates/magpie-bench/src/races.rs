//! The suite's kernels under the race checker (`magpie::race`; Lifflander's thesis §4.5.1,
//! §4.6.4): the kernels that share buffers declare what their leaves read and write, and each
//! has a *planted* race, a bug of the kind such code has (a block bound off by one, a shared
//! slot where each task should have its own), which the checker must find whatever the
//! schedule.
//!
//! A planted race is declared, not performed: the leaf declares the access the buggy code
//! would make, and does what the correct code does. Performing it would be a data race in
//! the test itself (undefined behaviour), and the checker sees declarations only, so it sees
//! exactly what it would see of the bug. Each kernel's answer is checked against its serial
//! twin on every run, planted or not.
//!
//! The plant is one switch for the whole suite ([`planted`]), read by a leaf only inside a
//! checked run (behind `magpie::race::checking()`); [`check`] holds a lock while it runs, so
//! checked runs of this module never see each other's switch.

use magpie::race::{self, Options, Report};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A kernel's facet under the race checker: its checked run, and the size it is checked at.
/// Each kernel that declares its accesses defines one (`heat::RACE`, ...), and the kernel
/// registry hands it out (`Kernel::race`), so this module names no kernel.
#[derive(Clone, Copy, Debug)]
pub struct Facet {
    /// The kernel's name, as the tools write it.
    pub name: &'static str,
    /// The size it is checked at by default: small, as every access is checked (about a second
    /// or less at one worker here).
    pub default_n: u64,
    /// Its checked run: the answer line for size `n`, checked against its serial twin.
    pub run: fn(u64) -> Result<String, String>,
}

static PLANT: AtomicBool = AtomicBool::new(false);
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Whether the running checked run plants its kernel's race (read by the kernels' leaves,
/// only when `magpie::race::checking()`).
pub fn planted() -> bool {
    // Relaxed: set before the checked run's install and reset after it; the install's
    // hand-over to the pool orders the store before every leaf's load.
    PLANT.load(Ordering::Relaxed)
}

/// The median over `runs` of the time the same run takes on a pool of `workers` that does
/// not check (its declarations cost a test each): what the checker's slowdown is measured
/// against. The answer is checked each time.
pub fn time_unchecked(kernel: Facet, n: u64, workers: usize, runs: usize) -> Result<f64, String> {
    let run = kernel.run;
    let pool = magpie::Pool::builder()
        .workers(workers)
        .build()
        .map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let t0 = std::time::Instant::now();
        pool.install(|| run(n))?;
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Runs `kernel` of size `n` on a fresh pool of `workers` workers that checks races with
/// `options`, planting its race if `plant`; returns the kernel's answer line (checked
/// against its serial twin) and the checker's report. Errors: a bad size, a wrong answer, a
/// pool that could not be built.
pub fn check(
    kernel: Facet,
    n: u64,
    workers: usize,
    plant: bool,
    options: Options,
) -> Result<(String, Report), String> {
    check_timed(kernel, n, workers, plant, options).map(|(answer, report, _)| (answer, report))
}

/// [`check`], also timed: the checked run's seconds (the pool built before the clock starts).
pub fn check_timed(
    kernel: Facet,
    n: u64,
    workers: usize,
    plant: bool,
    options: Options,
) -> Result<(String, Report, f64), String> {
    let run = kernel.run;
    let pool = magpie::Pool::builder()
        .workers(workers)
        .check_races_with(options)
        .build()
        .map_err(|e| e.to_string())?;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Relaxed: see `planted` (the install below orders it before every leaf).
    PLANT.store(plant, Ordering::Relaxed);
    let t0 = std::time::Instant::now();
    let out = race::check(&pool, || run(n));
    let secs = t0.elapsed().as_secs_f64();
    // Relaxed: the run has ended (its install returned); the next one orders its own store.
    PLANT.store(false, Ordering::Relaxed);
    let (answer, report) = out.map_err(|e| e.to_string())?;
    Ok((answer?, report, secs))
}

/// For the kernels' tests: `kernel` of size `n` at 1, 2 and 4 workers answers `want` as
/// written and planted, declares accesses, is clean as written, and its planted race is found.
#[cfg(test)]
pub(crate) fn assert_clean_and_planted_found(kernel: Facet, n: u64, want: &str) {
    for workers in [1, 2, 4] {
        for plant in [false, true] {
            let what = format!("{}({n}), {workers} workers, planted {plant}", kernel.name);
            let (got, report) = check(kernel, n, workers, plant, Options::default()).unwrap();
            assert_eq!(got, want, "{what}");
            assert!(report.accesses > 0, "{what}: {report}");
            if plant {
                assert!(report.race_count >= 1, "{what}: {report}");
            } else {
                assert_eq!(report.race_count, 0, "{what}: {report}");
            }
        }
    }
}
