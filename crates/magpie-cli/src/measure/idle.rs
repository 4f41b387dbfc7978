//! What an idle pool burns: the CPU time of a process's threads, read to the nanosecond from
//! `/proc/<pid>/task/*/schedstat`, and an idle pool's share of one core over a stretch of time
//! after a short job (`magpie idle`, the report's idle figure; `magpie corun` samples other
//! processes with [`tasks_cpu_ns`]).

use crate::failure::Failure;
use std::time::{Duration, Instant};

/// CPU time used so far by every thread of the process whose `/proc` directory is `proc` (e.g.
/// `/proc/self`, `/proc/1234`), in nanoseconds: the sum of the first field of each thread's
/// `task/*/schedstat`, which the scheduler keeps to the nanosecond (`utime`/`stime` in `stat`
/// count whole clock ticks, 10 ms, too coarse for `magpie corun`'s 20 ms samples).
pub(crate) fn tasks_cpu_ns(proc: &std::path::Path) -> std::io::Result<u64> {
    let mut total = 0u64;
    for task in std::fs::read_dir(proc.join("task"))?.flatten() {
        // A thread may exit between listing and reading: skip it.
        if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
            total += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Ok(total)
}

/// CPU time used so far by every thread of this process, in nanoseconds.
fn process_cpu_ns() -> Result<u64, Failure> {
    tasks_cpu_ns(std::path::Path::new("/proc/self"))
        .map_err(|e| Failure::Failed(format!("cannot read /proc/self/task: {e}")))
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// The measurement: CPU used by an idle pool of `workers` over `seconds`, as a percentage of one
/// core, after a short job and a settling pause of `settle`.
pub(crate) fn measure(
    workers: usize,
    share: magpie::dws::SharingMode,
    seconds: f64,
    settle: Duration,
) -> Result<f64, Failure> {
    let pool = magpie::Pool::builder()
        .workers(workers)
        .share(share)
        .build()
        .map_err(Failure::from_magpie)?;
    if pool.share_mode() != share {
        return Err(Failure::Failed(format!(
            "the pool could not share cores under {share} (see the warning above)"
        )));
    }
    if pool.install(|| fib(25)) != 75025 {
        return Err(Failure::Failed(format!(
            "fib(25) gave a wrong answer; {}",
            crate::measure::run::BUG
        )));
    }
    std::thread::sleep(settle);
    let before = process_cpu_ns()?;
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let cpu = process_cpu_ns()?.saturating_sub(before);
    let wall = start.elapsed().as_nanos() as f64;
    drop(pool);
    Ok(100.0 * cpu as f64 / wall)
}
