//! `magpie bench`: one kernel, one magpie configuration, its serial twin and its peers; a table
//! or one JSON object (with the process's peak RSS, which `magpie report` reads from a child).

use crate::args::{kernels_help, parse_kernel, parse_runs, RunOptions};
use crate::failure::Failure;
use crate::measure::run::BUG;
use clap::Args;
use magpie_bench::harness::peak_rss_kib;
use magpie_bench::runner::{self, BenchConfig, BenchRecord};
use magpie_bench::Kernel;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_long_help = kernels_help())]
pub(crate) struct BenchArgs {
    /// The kernel (`--help` lists them all).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    #[command(flatten)]
    pub opts: RunOptions,
    /// Timed runs of each version.
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// Print exactly one JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Time the peers too (the default, for fib and fj).
    #[arg(long, overrides_with = "no_peers")]
    pub peers: bool,
    /// Do not time the peers.
    #[arg(long, overrides_with = "peers")]
    pub no_peers: bool,
    /// Do not time the serial twin (no ratio to serial).
    #[arg(long)]
    pub no_serial: bool,
    /// Time what steals cost (magpie's `measure_overheads`): the victims' time lost to steals and
    /// the thieves' time per steal, as shares of workers × run time.
    #[arg(long)]
    pub overheads: bool,
    /// CAB's squads, one per socket of the machine (on one socket: plain work stealing through
    /// the squad code, to measure its overhead).
    #[arg(long)]
    pub squads: bool,
    /// The folder of the two builds that run the rayon programs, `magpie` (rayon on magpie's
    /// rayon-core) and `rayon` (on its own), made by scripts/build-rayon-compare.sh [default:
    /// target/rayon-compare/workspace, or .../dev for a debug magpie].
    #[arg(long, value_name = "DIR")]
    pub rayon_builds: Option<PathBuf>,
}

pub(crate) fn run(a: BenchArgs) -> Result<(), Failure> {
    let builder = a
        .opts
        .pool()?
        .measure_overheads(a.overheads)
        .squads(a.squads);
    let case = a.opts.case(a.kernel)?;
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let cfg = BenchConfig {
        kernel: a.kernel,
        n: case.n,
        runs: a.runs,
        serial: !a.no_serial,
        peers: !a.no_peers,
        grain: case.grain,
        tree: case.tree,
    };
    let mut rec = if a.kernel.is_program() {
        bench_program(&a, &cfg, &pool)?
    } else {
        runner::bench(&cfg, pool)
    };
    rec.peak_rss_kib = peak_rss_kib();
    if a.json {
        println!("{}", rec.to_json());
    } else {
        print!("{}", crate::render::bench::table(&rec));
    }
    match (&rec.error, rec.stopped, rec.verified) {
        (Some(e), true, _) => Err(Failure::Stopped(e.clone())),
        (e, false, false) => Err(Failure::Failed(format!(
            "verification failed: {}; {BUG}",
            e.as_deref().unwrap_or("a run returned a wrong result")
        ))),
        _ => Ok(()),
    }
}

/// `bench` for one of the rayon programs (`measure::rayon_builds::bench_program`). The pool
/// gives the policy and the worker count; options that only magpie's own pool takes are
/// refused, since the child's pool is built by rayon.
fn bench_program(
    a: &BenchArgs,
    cfg: &BenchConfig,
    pool: &magpie::Pool,
) -> Result<BenchRecord, Failure> {
    let own_pool_only = [
        ("--squads", a.squads),
        ("--overheads", a.overheads),
        ("--steal-one", a.opts.steal_one),
        ("--max-fibers", a.opts.max_fibers.is_some()),
        ("--stack-size", a.opts.stack_size.is_some()),
    ];
    if let Some((opt, _)) = own_pool_only.iter().find(|(_, set)| *set) {
        return Err(Failure::Usage(format!(
            "{opt} is not available for {}: it is a rayon program, which runs in rayon's pool \
             on magpie's rayon-core (set MAGPIE_* variables instead)",
            a.kernel
        )));
    }
    crate::measure::rayon_builds::bench_program(cfg, pool, a.rayon_builds.as_deref())
}
