//! One kernel's run as the commands take it: the pool from the environment and the options
//! given, the case checked, one run verified.

use crate::failure::Failure;
use magpie_bench::runner;

/// What to do when a kernel gives a wrong answer: it is a bug, in magpie or in the kernel.
pub(crate) const BUG: &str = "this is a bug in magpie or in the kernel: please report it with the \
                       command line and the output above";

/// The pool settings that `bench` and `trace` take alike: the environment (`MAGPIE_*`), then the
/// options given.
pub(crate) fn pool_builder(
    workers: Option<usize>,
    policy: Option<magpie::Policy>,
    stack_size: Option<usize>,
    max_fibers: Option<usize>,
    steal_one: bool,
) -> Result<magpie::Builder, Failure> {
    let mut builder = magpie::Builder::default()
        .from_env()
        .map_err(Failure::from_magpie)?;
    if let Some(w) = workers {
        builder = builder.workers(w);
    }
    if let Some(p) = policy {
        builder = builder.policy(p);
    }
    if let Some(b) = stack_size {
        builder = builder.stack_size(b);
    }
    if let Some(f) = max_fibers {
        builder = builder.max_fibers(f);
    }
    Ok(builder.steal_half(!steal_one))
}

/// The run that `bench` and `trace` take alike: the kernel at `n` (default: its size for
/// `size`), or the uts tree given, checked.
pub(crate) fn case_of(
    kernel: magpie_bench::Kernel,
    n: Option<u64>,
    size: magpie_bench::Size,
    grain: Option<u64>,
    tree: Option<magpie_bench::kernels::uts::Params>,
) -> Result<runner::Case, Failure> {
    if tree.is_some() && n.is_some() {
        return Err(Failure::Usage(
            "give uts either --n (a depth of the T1 family) or --tree, not both".into(),
        ));
    }
    let n = match tree {
        Some(_) => 0,
        None => n.unwrap_or_else(|| kernel.size_n(size)),
    };
    let case = runner::Case {
        kernel,
        n,
        grain,
        tree,
    };
    case.check().map_err(Failure::Usage)?;
    Ok(case)
}

/// Runs `case` once on `pool`, verified; returns the run's wall time. A wrong result is a
/// failure, magpie's stack-limit stop a stop, a bad case bad input.
pub(crate) fn run_once_verified(pool: &magpie::Pool, case: &runner::Case) -> Result<f64, Failure> {
    let m = runner::run_magpie(pool, case, 1).map_err(|e| match e {
        magpie_bench::harness::RunError::Stopped(m) => Failure::Stopped(m),
        magpie_bench::harness::RunError::Setup(m) => Failure::Usage(m),
        e => Failure::Failed(e.to_string()),
    })?;
    if !m.verified {
        return Err(Failure::Failed(format!(
            "{}: verification failed: {}; {BUG}",
            case.kernel.name(),
            m.failure
                .as_deref()
                .unwrap_or("the run returned a wrong result")
        )));
    }
    Ok(m.timing.times_s.first().copied().unwrap_or(0.0))
}
