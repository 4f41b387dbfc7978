//! `magpie bench`: one kernel, one magpie configuration, its serial twin and its peers; a table
//! or one JSON object (with the process's peak RSS, which `magpie report` reads from a child).

use crate::cli::BenchArgs;
use crate::failure::Failure;
use crate::measure::run::{case_of, pool_builder, BUG};
use crate::render::format::{nanos, result_line, secs, times};
use magpie_bench::harness::peak_rss_kib;
use magpie_bench::runner::{self, BenchConfig, BenchRecord};

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

/// The pool `RunOptions` describe.
pub(crate) fn run_pool(o: &crate::cli::RunOptions) -> Result<magpie::Builder, Failure> {
    pool_builder(o.workers, o.policy, o.stack_size, o.max_fibers, o.steal_one)
}

/// The run of `kernel` that `RunOptions` describe.
pub(crate) fn run_case(
    kernel: magpie_bench::Kernel,
    o: &crate::cli::RunOptions,
) -> Result<runner::Case, Failure> {
    case_of(kernel, o.n, o.size, o.grain, o.tree)
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
