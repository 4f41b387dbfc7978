//! `magpie bench`: one kernel, one magpie configuration, its serial twin and its peers; a table
//! or one JSON object (with the process's peak RSS, which `magpie report` reads from a child).

use crate::args::{
    kernels_help, parse_kernel, parse_max_fibers, parse_policy, parse_runs, parse_size,
    parse_stack_size, parse_tree, parse_workers,
};
use crate::failure::Failure;
use crate::measure::run::{case_of, pool_builder, BUG};
use clap::Args;
use magpie_bench::harness::peak_rss_kib;
use magpie_bench::kernels;
use magpie_bench::runner::{self, BenchConfig, BenchRecord};
use magpie_bench::Kernel;
use magpie_bench::Size;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_long_help = kernels_help())]
pub(crate) struct BenchArgs {
    /// CAB's squads, one per socket of the machine (on one socket: plain work stealing through
    /// the squad code, to measure its overhead).
    #[arg(long)]
    pub squads: bool,
    /// The kernel (`--help` lists them all).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    /// Problem size (`--help` says what it means for each kernel; default: from --size).
    #[arg(long)]
    pub n: Option<u64>,
    /// Worker threads (default: MAGPIE_WORKERS, else available parallelism).
    #[arg(long, value_parser = parse_workers)]
    pub workers: Option<usize>,
    /// work-first, help-first or adaptive (default: MAGPIE_POLICY, else adaptive).
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<magpie::Policy>,
    /// Timed runs of each version.
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// Print exactly one JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Size preset for n: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Time the peers too (the default, for fib and fj).
    #[arg(long, overrides_with = "no_peers")]
    pub peers: bool,
    /// Do not time the peers.
    #[arg(long, overrides_with = "peers")]
    pub no_peers: bool,
    /// Do not time the serial twin (no ratio to serial).
    #[arg(long)]
    pub no_serial: bool,
    /// Most fibers (task stacks) alive at once in magpie's pool [magpie's default: 8192].
    #[arg(long, value_parser = parse_max_fibers)]
    pub max_fibers: Option<usize>,
    /// Bytes of stack per fiber in magpie's pool [magpie's default: 2 MiB; 65536 to 1073741824].
    #[arg(long, value_parser = parse_stack_size)]
    pub stack_size: Option<usize>,
    /// The grain (cutoff) for kernels that have one: fib (below fib(G) serial; default: no
    /// cutoff), uts (chunks of G nodes; default: a task per node) and the others that `--help`
    /// lists with a default grain.
    #[arg(long)]
    pub grain: Option<u64>,
    /// Time what steals cost (magpie's `measure_overheads`): the victims' time lost to steals and
    /// the thieves' time per steal, as shares of workers × run time.
    #[arg(long)]
    pub overheads: bool,
    /// magpie's thieves take one item per steal instead of half of a victim's unpublished tasks
    /// (magpie's `steal_half(false)`), to measure what batches do.
    #[arg(long)]
    pub steal_one: bool,
    /// uts only: a named tree (T1, T3, T1L, T3L, T1XS, T3XS) or the standard parameters in
    /// quotes, e.g. "-t 1 -a 3 -d 10 -b 4 -r 19" [default: the T1 family at depth n].
    #[arg(long, value_parser = parse_tree, allow_hyphen_values = true)]
    pub tree: Option<kernels::uts::Params>,
    /// The folder of the two builds that run the rayon programs, `magpie` (rayon on magpie's
    /// rayon-core) and `rayon` (on its own), made by scripts/build-rayon-compare.sh [default:
    /// target/rayon-compare/workspace, or .../dev for a debug magpie].
    #[arg(long, value_name = "DIR")]
    pub rayon_builds: Option<PathBuf>,
}

pub(crate) fn run(a: BenchArgs) -> Result<(), Failure> {
    let builder = pool_builder(a.workers, a.policy, a.stack_size, a.max_fibers, a.steal_one)?
        .measure_overheads(a.overheads)
        .squads(a.squads);
    let case = case_of(a.kernel, a.n, a.size, a.grain, a.tree)?;
    let n = case.n;
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let cfg = BenchConfig {
        kernel: a.kernel,
        n,
        runs: a.runs,
        serial: !a.no_serial,
        peers: !a.no_peers,
        grain: a.grain,
        tree: a.tree,
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
        ("--steal-one", a.steal_one),
        ("--max-fibers", a.max_fibers.is_some()),
        ("--stack-size", a.stack_size.is_some()),
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
