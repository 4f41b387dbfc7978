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

use crate::args::{parse_kernel, parse_runs, parse_workers};
use crate::failure::Failure;
use crate::measure::corun::Line;
use crate::measure::run::{case_of, pool_builder, run_once_verified};
use clap::Args;
use magpie_bench::Kernel;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `magpie corun-child`: one program of a co-run (see `corun::child`).
#[derive(Args, Debug)]
pub(crate) struct CorunChildArgs {
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    #[arg(long)]
    pub n: u64,
    #[arg(long)]
    pub grain: Option<u64>,
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Exit after this many timed runs (default: run until stdin closes).
    #[arg(long, value_parser = parse_runs)]
    pub max_runs: Option<usize>,
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
