//! A traced run: one kernel run once on a pool that traces, verified as `magpie bench` verifies,
//! and its trace file written (`magpie trace KERNEL`, `magpie suite --trace`).

use crate::failure::Failure;
use magpie::trace::Trace;
use magpie_bench::runner::Case;
use std::path::Path;

/// Runs `case` once on `pool`, which must trace, verified; returns the trace and the run's wall
/// time. A wrong result is a failure, magpie's stack-limit stop a stop, a bad case bad input.
pub(crate) fn traced_run(pool: &magpie::Pool, case: &Case) -> Result<(Trace, f64), Failure> {
    let run_s = crate::measure::run::run_once_verified(pool, case)?;
    let t = pool
        .trace()
        .ok_or_else(|| Failure::Failed("the pool did not record a trace".into()))?;
    Ok((t, run_s))
}

/// Writes a trace file.
pub(crate) fn write_trace(t: &Trace, path: &Path) -> Result<(), Failure> {
    std::fs::write(path, t.to_bytes()).map_err(|e| {
        Failure::Failed(format!(
            "cannot write the trace {}: {e}; choose a file you can write with --out",
            path.display()
        ))
    })
}
