//! `magpie bench`: one kernel, one magpie configuration, its serial twin and its peers; a table
//! or one JSON object (with the process's peak RSS, which `magpie report` reads from a child).

use crate::args::{
    kernels_help, parse_kernel, parse_max_fibers, parse_policy, parse_runs, parse_size,
    parse_stack_size, parse_tree, parse_workers,
};
use crate::failure::Failure;
use crate::format::{nanos, result_line, secs, times};
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

/// magpie's counters in one line.
pub(crate) fn stats_line(s: &magpie::Stats) -> String {
    format!(
        "spawns {} work-first + {} help-first; steals {} child + {} continuation ({} failed); \
         fenced pops {}; suspensions {}; policy switches {}; max fresh {}; max frames {}; \
         fibers created {} ({} spares trimmed); sleeps {}",
        s.spawns_work_first,
        s.spawns_help_first,
        s.steals_child,
        s.steals_continuation,
        s.failed_steals,
        s.fenced_pops,
        s.suspensions,
        s.policy_switches,
        s.max_fresh,
        s.max_frames,
        s.fibers_created,
        s.fibers_trimmed,
        s.sleeps
    )
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
        print!("{}", table(&rec));
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

/// `bench` for one of the rayon programs: magpie's figure is rayon's iterators on magpie's
/// rayon-core and rayon's is rayon on its own, each from its build (`rayon_builds.rs`), one child
/// process each with all the runs (a child per run would time only first runs, in a cold
/// process); the serial twin runs here. The pool gives the policy and the worker count; options
/// that only magpie's own pool takes are refused, since the child's pool is built by rayon.
fn bench_program(
    a: &BenchArgs,
    cfg: &BenchConfig,
    pool: &magpie::Pool,
) -> Result<BenchRecord, Failure> {
    use crate::measure::rayon_builds::{Core, RayonBuilds, Run};
    use magpie_bench::harness::{Measured, RunError, Timing};
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
    let builds = RayonBuilds::find(a.rayon_builds.as_deref()).map_err(Failure::Usage)?;
    let workers = pool.workers();
    let measure = |core: Core| -> Result<Measured, RunError> {
        let run = Run {
            kernel: cfg.kernel,
            n: cfg.n,
            workers: &[workers],
            runs: cfg.runs,
            policy: Some(pool.policy()),
            inherit_settings: true,
        };
        match builds.run(core, &run) {
            Ok(mut r) => r.remove(0),
            Err(e) => Err(RunError::Panicked(e)),
        }
    };
    let on_magpie = measure(Core::Magpie);
    let on_rayon = (cfg.peers && a.kernel.peers().contains(&magpie_bench::Peer::RayonIter))
        .then(|| measure(Core::Rayon));
    // The children's runs, handed out one per round as `runner::bench_with` asks for them.
    let nth = |r: &Result<Measured, RunError>, i: usize| match r {
        Ok(m) => Ok(Measured {
            timing: Timing {
                times_s: m.timing.times_s.get(i).copied().into_iter().collect(),
            },
            ..m.clone()
        }),
        Err(e) => Err(e.clone()),
    };
    let (mut i_magpie, mut i_rayon) = (0, 0);
    Ok(runner::bench_with(
        cfg,
        pool,
        &mut |_| {
            i_magpie += 1;
            (nth(&on_magpie, i_magpie - 1), magpie::Stats::default())
        },
        &mut |peer, case, w| match (peer, &on_rayon) {
            (magpie_bench::Peer::RayonIter, Some(r)) => {
                i_rayon += 1;
                nth(r, i_rayon - 1)
            }
            _ => runner::run_peer(peer, case, w, 1),
        },
    ))
}

/// Whether `kernel` names one of the rayon programs.
fn is_program(kernel: &str) -> bool {
    kernel
        .parse::<magpie_bench::Kernel>()
        .is_ok_and(|k| k.is_program())
}

fn table(r: &BenchRecord) -> String {
    use std::fmt::Write;
    let fj = r.tasks_per_run.is_some();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} {}{} workers={} policy={}{} runs={}\n",
        r.kernel,
        match &r.tree {
            Some(t) => format!("tree {t}"),
            None => format!("n={}", r.n),
        },
        r.grain.map_or(String::new(), |g| format!(" grain={g}")),
        r.workers,
        r.policy,
        if r.steal_half { "" } else { " steals=one" },
        r.runs
    );
    let _ = write!(
        o,
        "{:<20} {:>12} {:>12} {:>12} {:>10}",
        "runtime", "median s", "min s", "max s", "÷ serial"
    );
    let _ = writeln!(
        o,
        "{}",
        if fj {
            format!(" {:>10}", "ns/task")
        } else {
            String::new()
        }
    );
    let mut line = |name: &str, med, min, max, ratio, per_task: Option<f64>| {
        let _ = write!(
            o,
            "{:<20} {:>12} {:>12} {:>12} {:>10}",
            name,
            secs(med),
            secs(min),
            secs(max),
            times(ratio)
        );
        let _ = writeln!(
            o,
            "{}",
            if fj {
                format!(" {:>10}", nanos(per_task))
            } else {
                String::new()
            }
        );
    };
    if r.serial_median_s.is_some() {
        let per = r
            .tasks_per_run
            .and_then(|t| Some(r.serial_median_s? / t as f64 * 1e9));
        line(
            "serial twin",
            r.serial_median_s,
            r.serial_min_s,
            r.serial_max_s,
            Some(1.0),
            per,
        );
    }
    line(
        &format!("magpie {}", r.policy),
        r.median_s,
        r.min_s,
        r.max_s,
        r.ratio_to_serial,
        r.per_task_ns,
    );
    for p in &r.peers {
        line(
            &p.name,
            p.median_s,
            p.min_s,
            p.max_s,
            p.ratio_to_serial,
            p.per_task_ns,
        );
    }
    let _ = writeln!(o);
    for u in &r.peers_unavailable {
        let _ = writeln!(o, "not measured: {}: {}", u.name, u.reason);
    }
    if is_program(&r.kernel) {
        let _ = writeln!(
            o,
            "magpie stats: none (a rayon program runs in the process of its rayon build)"
        );
    } else {
        let _ = writeln!(o, "magpie stats: {}", stats_line(&r.stats));
    }
    if let Some(h) = &r.overheads {
        let _ = writeln!(
            o,
            "overheads (share of {} workers × run time): victims lost {:.3}% ({:.6} s) to steals; \
             thieves spent {:.3}% stealing ({} steals, {} per steal) and {:.3}% searching",
            r.workers,
            h.victim_share * 100.0,
            h.victim_s,
            h.steal_share * 100.0,
            h.steals,
            h.ns_per_steal.map_or("–".into(), |x| format!("{x:.0} ns")),
            h.search_share * 100.0
        );
    }
    if let Some(k) = r.peak_rss_kib {
        let _ = writeln!(o, "peak RSS: {k} KiB");
    }
    let _ = writeln!(o, "verified: {}", if r.verified { "yes" } else { "NO" });
    let _ = writeln!(o, "{}", result_line(r.result.as_deref()));
    // The serial twin's answer only where it differs (fine-sum's float sum is verified within
    // 1e-9, so its last digits may; any other difference comes with a verification failure).
    if let Some(s) = r
        .serial_result
        .as_ref()
        .filter(|s| Some(*s) != r.result.as_ref())
    {
        let _ = writeln!(o, "serial twin's result: {s}");
    }
    if let Some(e) = &r.error {
        let _ = writeln!(o, "error: {e}");
    }
    o
}
