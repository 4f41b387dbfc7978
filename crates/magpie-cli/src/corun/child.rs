//! `magpie corun-child`: one program of a co-run. It builds a pool from the environment
//! (`MAGPIE_SHARE` chooses its sharing mode, `MAGPIE_SHARE_TABLE` its core table), does one
//! verified warm-up run, prints a `ready` line and waits for `go` on stdin. Then it runs the
//! kernel over and over, each run verified as `magpie bench` verifies it, and prints one `run`
//! line per run, flushed at once.
//!
//! Stopping: after `--max-runs` runs, or after the first run that ends once stdin has closed.
//! A parent that dies closes the pipe, so an orphan stops after the run it is in (and one whose
//! stdout is gone stops at its next line). EOF before `go` exits at once, with no timed run.
//! `magpie corun` does not wait for that: it kills both programs at the same moment and discards
//! the runs they were in. A wrong result is an `error:` line and exit 1.

use crate::cli::CorunChildArgs;
use crate::failure::Failure;
use crate::measure::run::{case_of, pool_builder, run_once_verified};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One line of a child's stdout, as JSON (`{"event": "ready", ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Line {
    /// Warmed up; waiting for `go`.
    Ready {
        pid: u32,
        kernel: String,
        n: u64,
        grain: Option<u64>,
        workers: usize,
        /// The sharing mode in force (`Pool::share_mode`): the one asked for, or `off` when the
        /// pool could not use the core table.
        mode: String,
        warmup_s: f64,
    },
    /// One timed, verified run: when it began and ended (milliseconds of `CLOCK_MONOTONIC`,
    /// `magpie::dws::now_ms`, the clock the parent samples with) and the kernel's time.
    Run {
        run: usize,
        start_ms: u64,
        end_ms: u64,
        seconds: f64,
    },
}

/// Prints `line` and flushes it; a closed stdout (the parent is gone) is a failure, so the child
/// stops.
fn emit(line: &Line) -> Result<(), Failure> {
    let text = serde_json::to_string(line)
        .map_err(|e| Failure::Failed(format!("cannot serialize a result line: {e}")))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Failed(format!("cannot write to stdout: {e}")))
}

pub(crate) fn run(a: CorunChildArgs) -> Result<(), Failure> {
    // The size preset does not matter: `n` is given.
    let case = case_of(a.kernel, Some(a.n), magpie_bench::Size::Ci, a.grain, None)?;
    let pool = pool_builder(Some(a.workers), None, None, None, false)?
        .build()
        .map_err(Failure::from_magpie)?;
    let warmup_s = run_once_verified(&pool, &case)?;
    emit(&Line::Ready {
        pid: std::process::id(),
        kernel: a.kernel.name().into(),
        n: case.n,
        grain: case.grain,
        workers: pool.workers(),
        mode: pool.share_mode().name().into(),
        warmup_s,
    })?;

    let mut first = String::new();
    match std::io::stdin().lock().read_line(&mut first) {
        Ok(0) | Err(_) => return Ok(()),
        Ok(_) if first.trim() == "go" => {}
        Ok(_) => {
            return Err(Failure::Usage(format!(
                "expected `go` on stdin, got `{}`",
                first.trim()
            )))
        }
    }
    let closed = Arc::new(AtomicBool::new(false));
    {
        let closed = closed.clone();
        std::thread::spawn(move || {
            // Anything after `go` is ignored; EOF (or a read error) means stop.
            for line in std::io::stdin().lock().lines() {
                if line.is_err() {
                    break;
                }
            }
            // Release: a flag only, read with Acquire below; it carries no data.
            closed.store(true, Ordering::Release);
        });
    }
    for run in 1.. {
        let start_ms = magpie::dws::now_ms();
        let seconds = run_once_verified(&pool, &case)?;
        let end_ms = magpie::dws::now_ms();
        emit(&Line::Run {
            run,
            start_ms,
            end_ms,
            seconds,
        })?;
        // Acquire: pairs with the reader thread's Release above.
        if a.max_runs == Some(run) || closed.load(Ordering::Acquire) {
            break;
        }
    }
    Ok(())
}
