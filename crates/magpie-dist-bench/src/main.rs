//! `magpie-dist`: magpie's distributed task collections (Lifflander's thesis, Ch. 5).
//!
//! Commands so far:
//!
//! - `magpie-dist run uts|hf|tce [--tree NAME|SPEC] [--n N] [--strategy S] [--iterations K]
//!   [--transport rma|am] [--ranks P] [--workers W] [--timeline FILE.svg] [--json]`: runs a task collection of the UTS tree (default T1XS), or of the
//!   synthetic hf or tce kernel of size N (default 200), for K iterations (default 3) under
//!   strategy S (default steal; no-balance, steal, steal-retentive,
//!   plb-centralized, plb-hierarchical, plb-centralized+steal, plb-hierarchical+steal), thieves stealing one-sidedly (`rma`, the default) or
//!   by active messages (`am`: the victim answers between its tasks), checking each iteration's node count. Built with the
//!   `mpi` feature it runs on the ranks of `mpirun -n P` (one rank without mpirun); without
//!   it, on `--ranks` threads of this process (default 1). Rank 0 prints a table (or one JSON
//!   object): the kernel, ranks, strategy, result, verified, and per iteration the time, the
//!   efficiency (wall time and CPU time) and the steals attempted and successful per rank
//!   (mean and standard deviation). `--workers W` (hf, tce) gives each rank a magpie pool of W workers that runs
//!   the insides of its larger tasks; `--timeline` writes the first and last iteration's
//!   per-rank utilisation timelines as an SVG.
//! - `magpie-dist simulate hf|tce [--n N] [--ranks P,P,..] [--strategy S,S,..|all]
//!   [--iterations K] [--calibrate RUN.json].. [--model KEY=NS,..] [--timeline DIR] [--json]`
//!   (no MPI): the discrete-event simulator (`magpie_dist_bench::sim`) at each rank count (default
//!   2400 to 38400) and strategy (default steal, steal-retentive), K iterations (default 5) of
//!   the kernel of size N (default 727), printing the same per-iteration figures as `run`
//!   plus the ideal time (total work ÷ ranks). Its cost model is this machine's by default;
//!   `--calibrate` fits it to `run --json` reports, `--model unit_ns=..,attempt_ns=..` sets
//!   costs; `--timeline DIR` writes an SVG per rank count and strategy.
//!
//! - `magpie-dist balance [--ranks P,P,..] [--n N] [--json]` (no MPI): the persistence-based
//!   balancers' quality, max/avg − 1 in percent, and their compute time in this process, over
//!   the thesis's skewed distributions (§5.6.2, Tables 5.1-5.2: the tasks sorted by duration
//!   and dealt round-robin, every n-th rank taking m per round) at each rank count (default
//!   2400, 4800, 9600, 19200, 38400). The tasks are the non-null tasks of the synthetic hf
//!   kernel of size N (default 727: about 213 thousand, HF-Be256's count), their costs as
//!   durations. Both balancers run in one process here: the time is their computation, not a
//!   distributed run's.
//! - `magpie-dist selftest deque [--tasks N]` (needs the `mpi` feature; run it under `mpirun
//!   -n P`): rank 0 pushes N × P tasks into its split deque and runs them; the other ranks
//!   steal with one-sided operations (and steal from each other what they stole), until a
//!   counter on rank 0 says all have run. Rank 0 then checks that every task ran exactly once
//!   (counts and id sums reduced over the ranks) and prints what each rank ran and stole.
//!   Exit 1 if a task was lost or ran twice.
//! - `magpie-dist selftest latency [--tasks N]` (MPI, 2 ranks or more): ranks 0 and 1 bounce a
//!   termination message N times through the collection's transport and rank 0 tries N steals
//!   from rank 1's empty deque; prints the one-way message time and the empty attempt's time,
//!   in nanoseconds, as JSON (the simulator's `message_ns`).
//! - `magpie-dist selftest balance [--tasks N]` (MPI): each rank seeds N tasks of skewed cost and
//!   runs them under each balancer; the placement the ranks get under MPI must equal the one
//!   computed in one process from the same measurements. Exit 1 if not.
//!
//! Bad options exit 2 with a message.

use std::process::ExitCode;

#[path = "cli/simulate.rs"]
mod simulate;

const USAGE: &str = "usage: magpie-dist run uts|hf|tce [options] | simulate hf|tce [options] | \
balance [options] | selftest deque|latency|balance|watchdog   (magpie-dist COMMAND --help)";

/// `magpie-dist --help`.
const HELP: &str = "magpie-dist: magpie's distributed task collections (the magpie_dist library's \
kernels, simulator and balancers; docs/DISTRIBUTED.md)

usage: magpie-dist COMMAND [options]      (magpie-dist COMMAND --help for each)

commands:
  run uts|hf|tce   a task collection of a kernel over MPI ranks (mpirun -n P) or threads
  simulate hf|tce  the same collection at thousands of simulated ranks (no MPI)
  balance          the persistence-based balancers over the thesis's skewed grid (no MPI)
  selftest deque|latency|balance|watchdog   checks of the MPI transport (mpirun)

under mpirun as root, or with more ranks than cores, Open MPI wants
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1";

/// `magpie-dist run --help`.
const RUN_HELP: &str = "usage: magpie-dist run uts|hf|tce [options]
  (built with --features mpi: mpirun -n P magpie-dist run ...; without: --ranks P threads)

Runs a task collection of the kernel for K iterations and checks each iteration's answer.
Rank 0 prints a table (or one JSON object): per iteration the time, the efficiency in wall
time and in CPU time, and the steals tried and won per rank.

options:
  --tree NAME|SPEC    uts: a named tree (T1, T2, T3, T4, T5, T1L, T3L, T1XS, T3XS; default
                      T1XS) or a spec in the reference's flags (\"-t 1 -a 3 -d 6 -b 4 -r 19\")
  --n N               hf, tce: the problem size (default 200; 1 to 10000)
  --strategy S        no-balance, steal (default), steal-retentive, plb-centralized,
                      plb-hierarchical, plb-centralized+steal, plb-hierarchical+steal
                      (a balancer's placement, and stealing within an iteration: the
                      choice for a machine shared with other programs)
  --transport T       rma (one-sided steals, default) or am (active messages)
  --iterations K      default 3 (1 to 10000)
  --ranks P           threads as ranks, in a build without MPI (default 1)
  --workers W         hf, tce: a magpie pool of W workers inside each rank (default 1: none)
  --timeline FILE     write the first and last iteration's utilisation timelines as SVG
                      (checked writable before the run)
  --json              one JSON object instead of the table";

/// `magpie-dist balance --help`.
const BALANCE_HELP: &str = "usage: magpie-dist balance [--ranks P,P,..] [--n N] [--json]

The persistence-based balancers' quality (max/avg - 1, percent) and compute time in this
process, over the thesis's skewed distributions of the hf kernel's tasks at each rank count.

options:
  --ranks P,P,..      rank counts (default 2400,4800,9600,19200,38400)
  --n N               the hf kernel's size (default 727; 2 to 4000)
  --json              JSON instead of the table";

/// `magpie-dist selftest --help`.
const SELFTEST_HELP: &str =
    "usage: mpirun -n P magpie-dist selftest deque|latency|balance [--tasks N]

  deque     rank 0 seeds N x P tasks, the others steal them one-sidedly; every task must run
            exactly once (exit 1 if not)
  latency   (2 ranks or more) the one-way message time and an empty steal attempt's time, ns
  balance   each balancer's placement under MPI must equal the one computed in one process

options:
  --tasks N           default 2000
  --stop-rank R       watchdog: the rank that stops (default 1)";

/// Whether this process is a rank other than 0 of a launcher (mpirun) job: such ranks leave
/// the messages about bad arguments to rank 0, so the user reads each once. Read from the
/// launcher's environment, since the arguments are checked before MPI starts.
fn a_secondary_rank() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .is_some_and(|r| r.trim() != "0")
}

/// Checks before a run that `path` can be written: an existing file that is not a folder and
/// opens for writing, or a new one in an existing folder this process can create files in.
/// Nothing is made, truncated or left behind.
pub(crate) fn check_output_file(path: &std::path::Path, what: &str) -> Result<(), String> {
    let bad = |e: &dyn std::fmt::Display| {
        format!(
            "{what} '{}': {e}; choose a file you can write",
            path.display()
        )
    };
    if path.is_dir() {
        return Err(bad(&"a folder, not a file"));
    }
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| bad(&e));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(bad(&format!("no folder '{}'", dir.display())));
    }
    check_output_dir(&dir, what)
        .map_err(|_| bad(&format!("cannot create files in '{}'", dir.display())))
}

/// Checks before a run that files can be created in folder `dir` (made if missing): creates
/// and removes a probe file of this process's own name.
pub(crate) fn check_output_dir(dir: &std::path::Path, what: &str) -> Result<(), String> {
    let bad = |e: &dyn std::fmt::Display| {
        format!(
            "{what} '{}': {e}; choose a folder you can write",
            dir.display()
        )
    };
    std::fs::create_dir_all(dir).map_err(|e| bad(&e))?;
    let probe = dir.join(format!(".magpie-dist-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| bad(&e))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Lets a closed pipe end the process quietly, as it ends other command-line tools (`magpie
/// ... | head`), instead of `println!` panicking on the write error: Rust starts programs with
/// SIGPIPE ignored.
fn default_sigpipe() {
    // SAFETY: restores the default disposition of one signal before any thread is started; no
    // handler runs Rust code.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    default_sigpipe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let help = args.iter().any(|a| a == "-h" || a == "--help");
    match args.first().map(String::as_str) {
        Some("-h" | "--help") => {
            println!("{HELP}");
            ExitCode::SUCCESS
        }
        Some("run") if help => {
            println!("{RUN_HELP}");
            ExitCode::SUCCESS
        }
        Some("simulate") if help => {
            println!("{}", simulate::HELP);
            ExitCode::SUCCESS
        }
        Some("balance") if help => {
            println!("{BALANCE_HELP}");
            ExitCode::SUCCESS
        }
        Some("selftest") if help => {
            println!("{SELFTEST_HELP}");
            ExitCode::SUCCESS
        }
        Some("balance") => match parse_balance(&args[1..]) {
            Ok((ranks, n, json)) => balance(&ranks, n, json),
            Err(e) => usage_error(&e),
        },
        Some("simulate") => match simulate::Args::parse(&args[1..]) {
            Ok(a) => simulate::run(a),
            Err(e) => usage_error(&e),
        },
        Some("run") => match RunArgs::parse(&args[1..]) {
            Ok(a) => run(a),
            Err(e) => usage_error(&e),
        },
        Some("selftest") => match args.get(1).map(String::as_str) {
            Some("deque") => match parse_tasks(&args[2..]) {
                Ok(n) => selftest_deque(n),
                Err(e) => usage_error(&e),
            },
            Some("latency") => match parse_tasks(&args[2..]) {
                Ok(n) => selftest_latency(n),
                Err(e) => usage_error(&e),
            },
            Some("balance") => match parse_tasks(&args[2..]) {
                Ok(n) => selftest_balance(n),
                Err(e) => usage_error(&e),
            },
            Some("watchdog") => match parse_stop_rank(&args[2..]) {
                Ok(r) => selftest_watchdog(r),
                Err(e) => usage_error(&e),
            },
            Some(other) => usage_error(&format!(
                "unknown selftest '{other}' (expected deque, latency, balance or watchdog)"
            )),
            None => usage_error("selftest needs a name (deque, latency, balance or watchdog)"),
        },
        Some(other) => usage_error(&format!("unknown command '{other}'")),
        None => usage_error("no command given"),
    }
}

fn parse_balance(args: &[String]) -> Result<(Vec<usize>, u64, bool), String> {
    let mut ranks = vec![2400, 4800, 9600, 19200, 38400];
    let (mut n, mut json) = (727u64, false);
    let mut it = args.iter();
    while let Some(o) = it.next() {
        match o.as_str() {
            "--ranks" => {
                let v = it.next().ok_or("--ranks needs a value")?;
                ranks = v
                    .split(',')
                    .map(|x| {
                        x.trim()
                            .parse::<usize>()
                            .ok()
                            .filter(|p| (1..=1_000_000).contains(p))
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!(
                        "--ranks '{v}': expected rank counts from 1 to 1000000, comma-separated"
                    ))?;
            }
            "--n" => {
                let v = it.next().ok_or("--n needs a value")?;
                n = v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (2..=4000).contains(n))
                    .ok_or(format!("--n '{v}': expected a whole number from 2 to 4000"))?;
            }
            "--json" => json = true,
            other => return Err(format!("unknown option '{other}' for balance")),
        }
    }
    Ok((ranks, n, json))
}

/// `balance`: the balancers over the skew grid (see the crate doc of this binary).
fn balance(ranks: &[usize], n: u64, json: bool) -> ExitCode {
    use magpie_dist::balance::{centralized, hierarchical, imbalance, skewed, Params};
    let k = magpie_dist_bench::kernels::Synthetic::Hf(n);
    let loads: Vec<f64> = (0..k.tasks())
        .map(|id| k.cost(id) as f64)
        .filter(|&c| c > 0.0)
        .collect();
    let grid = [
        (1, 1),
        (2, 2),
        (2, 4),
        (2, 8),
        (4, 2),
        (4, 4),
        (4, 8),
        (8, 2),
        (8, 4),
        (8, 8),
    ];
    let mut rows = Vec::new();
    for &(gn, gm) in &grid {
        for &p in ranks {
            let d = skewed(&loads, p, gn, gm);
            let t = std::time::Instant::now();
            let c = centralized(&d, Params::default());
            let c_s = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let h = hierarchical(&d, Params::default());
            let h_s = t.elapsed().as_secs_f64();
            rows.push(serde_json::json!({
                "n": gn, "m": gm, "ranks": p, "before_pct": 100.0 * imbalance(&d),
                "centralized_pct": 100.0 * imbalance(&c), "hierarchical_pct": 100.0 * imbalance(&h),
                "centralized_s": c_s, "hierarchical_s": h_s,
            }));
        }
    }
    if json {
        println!(
            "{}",
            serde_json::json!({"tasks": loads.len(), "params": {"c": 1.003, "d": 1.003, "arity": 3}, "rows": rows})
        );
        return ExitCode::SUCCESS;
    }
    println!(
        "{} tasks (the non-null tasks of hf n={n}); quality = max/avg - 1 in percent, before / \
         centralized / hierarchical; time = the balancer's computation in this process",
        loads.len()
    );
    println!(
        "  {:>2} {:>2} {:>7} {:>9} {:>12} {:>13} {:>8} {:>8}",
        "n", "m", "ranks", "before %", "central. %", "hierarch. %", "C s", "H s"
    );
    for r in &rows {
        println!(
            "  {:>2} {:>2} {:>7} {:>9.1} {:>12.2} {:>13.2} {:>8.3} {:>8.3}",
            r["n"],
            r["m"],
            r["ranks"],
            r["before_pct"].as_f64().unwrap_or(0.0),
            r["centralized_pct"].as_f64().unwrap_or(0.0),
            r["hierarchical_pct"].as_f64().unwrap_or(0.0),
            r["centralized_s"].as_f64().unwrap_or(0.0),
            r["hierarchical_s"].as_f64().unwrap_or(0.0),
        );
    }
    ExitCode::SUCCESS
}

/// `run`'s options.
struct RunArgs {
    /// `None`: uts; otherwise the synthetic kernel.
    synthetic: Option<magpie_dist_bench::kernels::Synthetic>,
    tree: magpie_bench::kernels::uts::Params,
    tree_name: String,
    strategy: magpie_dist::collection::Strategy,
    transport: magpie_dist::collection::Transport,
    iterations: usize,
    ranks: usize,
    workers: usize,
    timeline: Option<std::path::PathBuf>,
    json: bool,
}

impl RunArgs {
    fn parse(args: &[String]) -> Result<RunArgs, String> {
        use magpie_dist_bench::kernels::Synthetic;
        let kernel = match args.first().map(String::as_str) {
            Some(k @ ("uts" | "hf" | "tce")) => k,
            Some(k) => return Err(format!("unknown kernel '{k}' (expected uts, hf or tce)")),
            None => return Err("run needs a kernel (uts, hf or tce)".into()),
        };
        let mut n = 200u64;
        let mut a = RunArgs {
            synthetic: None,
            tree: magpie_bench::kernels::uts::named("T1XS").expect("T1XS is a named tree"),
            tree_name: "T1XS".into(),
            strategy: magpie_dist::collection::Strategy::Steal,
            transport: magpie_dist::collection::Transport::OneSided,
            iterations: 3,
            ranks: 1,
            workers: 1,
            timeline: None,
            json: false,
        };
        let mut it = args[1..].iter();
        let number = |v: Option<&String>, what: &str, max: usize| -> Result<usize, String> {
            let v = v.ok_or(format!("{what} needs a value"))?;
            v.parse::<usize>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or(format!(
                    "{what} '{v}': expected a whole number from 1 to {max}"
                ))
        };
        while let Some(o) = it.next() {
            match o.as_str() {
                "--tree" => {
                    let v = it.next().ok_or("--tree needs a value")?;
                    a.tree = match magpie_bench::kernels::uts::named(v) {
                        Some(p) => p,
                        None => magpie_bench::kernels::uts::Params::parse(v).map_err(|e| {
                            let names: Vec<&str> = magpie_bench::kernels::uts::NAMED
                                .iter()
                                .map(|t| t.0)
                                .collect();
                            format!(
                                "--tree '{v}': not a named tree ({}) nor a tree spec: {e}",
                                names.join(", ")
                            )
                        })?,
                    };
                    a.tree_name = v.clone();
                }
                "--transport" => {
                    let v = it.next().ok_or("--transport needs a value")?;
                    a.transport = v.parse()?;
                }
                "--strategy" => {
                    let v = it.next().ok_or("--strategy needs a value")?;
                    a.strategy = v.parse()?;
                }
                "--iterations" => a.iterations = number(it.next(), "--iterations", 10_000)?,
                "--n" if kernel != "uts" => n = number(it.next(), "--n", 10_000)? as u64,
                "--ranks" => a.ranks = number(it.next(), "--ranks", 1024)?,
                "--workers" if kernel != "uts" => a.workers = number(it.next(), "--workers", 1024)?,
                "--timeline" => {
                    let v = it.next().ok_or("--timeline needs a file")?;
                    let path = std::path::PathBuf::from(v);
                    check_output_file(&path, "--timeline")?;
                    a.timeline = Some(path);
                }
                "--json" => a.json = true,
                other => return Err(format!("unknown option '{other}' for {kernel}")),
            }
        }
        a.synthetic = match kernel {
            "hf" => Some(Synthetic::Hf(n)),
            "tce" => Some(Synthetic::Tce(n)),
            _ => None,
        };
        Ok(a)
    }
}

impl RunArgs {
    fn options(&self) -> magpie_dist_bench::kernels::Options {
        magpie_dist_bench::kernels::Options {
            strategy: self.strategy,
            transport: self.transport,
            iterations: self.iterations,
            timeline: self.timeline.is_some(),
            workers: self.workers,
            progress: true,
        }
    }

    /// Writes the timelines of the first and last iteration, if asked (rank 0's job).
    fn write_timeline(&self, o: &magpie_dist_bench::kernels::Outcome) -> Result<(), String> {
        let Some(path) = &self.timeline else {
            return Ok(());
        };
        let title = format!(
            "{} {} on {} rank(s), {}, {} steals",
            o.kernel,
            self.label(),
            o.ranks,
            o.strategy,
            o.transport
        );
        std::fs::write(
            path,
            magpie_dist_bench::timeline_svg::first_and_last(&title, &o.iterations),
        )
        .map_err(|e| {
            format!(
                "--timeline '{}': {e}; choose a file you can write",
                path.display()
            )
        })
    }

    /// What ran, in words: the tree, or the synthetic kernel's size.
    fn label(&self) -> String {
        match self.synthetic {
            Some(k) => format!("n={}", (k.tasks() as f64).sqrt() as u64),
            None => self.tree_name.clone(),
        }
    }
}

/// Mean and (population) standard deviation.
fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var.sqrt())
}

/// One iteration's figures over the ranks: time (the slowest rank's), efficiency in wall time and
/// in CPU time, tasks, and steals attempted and successful per rank (mean and standard
/// deviation).
fn iteration_summary(r: &magpie_dist::collection::IterationReport) -> serde_json::Value {
    let wall = r.wall_ns() as f64 * 1e-9;
    let att: Vec<f64> = r.ranks.iter().map(|x| x.steals_attempted as f64).collect();
    let suc: Vec<f64> = r.ranks.iter().map(|x| x.steals_successful as f64).collect();
    let (am, asd) = mean_std(&att);
    let (sm, ssd) = mean_std(&suc);
    let phases: Vec<f64> = r.ranks.iter().map(|x| x.phases as f64).collect();
    serde_json::json!({
        "iteration": r.iteration, "time_s": wall, "efficiency": r.efficiency(),
        "cpu_efficiency": r.cpu_efficiency(),
        "tasks": r.tasks(), "phases": mean_std(&phases).0,
        "steals_attempted": {"mean": am, "std": asd},
        "steals_successful": {"mean": sm, "std": ssd},
    })
}

/// Prints an outcome (rank 0's job).
fn print(o: &magpie_dist_bench::kernels::Outcome, tree: &str, json: bool) {
    let per_it: Vec<serde_json::Value> = o.iterations.iter().map(iteration_summary).collect();
    if json {
        let v = serde_json::json!({
            "kernel": o.kernel, "tree": tree, "ranks": o.ranks, "strategy": o.strategy,
            "transport": o.transport, "workers": o.workers,
            "result": o.result, "verified": o.verified, "iterations": per_it,
            "per_rank": o.iterations,
        });
        println!("{v}");
        return;
    }
    println!(
        "{} {tree} on {} rank(s){}, strategy {}, transport {}: {} (verified)",
        o.kernel,
        o.ranks,
        match o.workers {
            1 => String::new(),
            w => format!(" of {w} workers each"),
        },
        o.strategy,
        o.transport,
        o.result
    );
    println!(
        "  {:>4} {:>10} {:>10} {:>10} {:>18} {:>18}",
        "it", "time s", "efficiency", "cpu eff.", "steals tried/rank", "steals won/rank"
    );
    for v in &per_it {
        println!(
            "  {:>4} {:>10.4} {:>10.3} {:>10.3} {:>10.1} ± {:<5.1} {:>10.1} ± {:<5.1}",
            v["iteration"],
            v["time_s"].as_f64().unwrap_or(0.0),
            v["efficiency"].as_f64().unwrap_or(0.0),
            v["cpu_efficiency"].as_f64().unwrap_or(0.0),
            v["steals_attempted"]["mean"].as_f64().unwrap_or(0.0),
            v["steals_attempted"]["std"].as_f64().unwrap_or(0.0),
            v["steals_successful"]["mean"].as_f64().unwrap_or(0.0),
            v["steals_successful"]["std"].as_f64().unwrap_or(0.0),
        );
    }
}

#[cfg(feature = "mpi")]
fn run(a: RunArgs) -> ExitCode {
    use mpi::traits::Communicator;
    if a.ranks != 1 {
        return usage_error(
            "--ranks is for builds without MPI; under MPI, mpirun -n sets the ranks",
        );
    }
    let Some(universe) = magpie_dist::launch::init() else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::from(3);
    };
    let world = universe.world();
    let me = world.rank();
    let outcome = match a.synthetic {
        Some(k) => {
            let comm = magpie_dist::rma::World::new(world, 1 << 16);
            magpie_dist_bench::kernels::synthetic(comm, k, a.options())
        }
        None => {
            let comm = magpie_dist::rma::World::new(world, 1 << 14);
            magpie_dist_bench::kernels::uts(comm, &a.tree, a.options())
        }
    };
    match outcome {
        Ok(o) => {
            if me == 0 {
                print(&o, &a.label(), a.json);
                if let Err(e) = a.write_timeline(&o) {
                    eprintln!("error: {e}");
                    return ExitCode::from(1);
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: rank {me}: {e}; {BUG}");
            ExitCode::from(1)
        }
    }
}

#[cfg(not(feature = "mpi"))]
fn run(a: RunArgs) -> ExitCode {
    use magpie_dist::collection::local::Cluster;
    let (tree, o) = (a.tree, a.options());
    let hs: Vec<_> = match a.synthetic {
        Some(s) => Cluster::ranks::<u64>(a.ranks, 1 << 16)
            .into_iter()
            .map(|r| std::thread::spawn(move || magpie_dist_bench::kernels::synthetic(r, s, o)))
            .collect(),
        None => Cluster::ranks::<[u8; 24]>(a.ranks, 1 << 14)
            .into_iter()
            .map(|r| std::thread::spawn(move || magpie_dist_bench::kernels::uts(r, &tree, o)))
            .collect(),
    };
    let outcomes: Vec<_> = hs.into_iter().map(|h| h.join()).collect();
    match outcomes.into_iter().next() {
        Some(Ok(Ok(o))) => {
            print(&o, &a.label(), a.json);
            if let Err(e) = a.write_timeline(&o) {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Some(Ok(Err(e))) => {
            eprintln!("error: {e}; {BUG}");
            ExitCode::from(1)
        }
        _ => {
            eprintln!("error: a rank failed; {BUG}");
            ExitCode::from(1)
        }
    }
}

/// What to do when a run's answer is wrong or an invariant breaks: it is a bug.
const BUG: &str = "this is a bug in magpie-dist: please report it with the command line and \
                   the output above";

/// Bad arguments: the message (once per job under mpirun) and exit code 2.
fn usage_error(e: &str) -> ExitCode {
    if !a_secondary_rank() {
        eprintln!("error: {e}\n{USAGE}");
    }
    ExitCode::from(2)
}

fn parse_tasks(args: &[String]) -> Result<u64, String> {
    let mut n = 2000;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--tasks" => {
                let v = it.next().ok_or("--tasks needs a value")?;
                n = v
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| (1..=10_000_000).contains(&n))
                    .ok_or(format!(
                        "--tasks '{v}': expected a whole number from 1 to 10000000"
                    ))?;
            }
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    Ok(n)
}

#[cfg(not(feature = "mpi"))]
fn selftest_deque(_: u64) -> ExitCode {
    eprintln!(
        "error: this magpie-dist was built without MPI; build it with `cargo build --release -p \
         magpie-dist --features mpi` (scripts/install-mpi.sh installs Open MPI)"
    );
    ExitCode::from(2)
}

#[cfg(not(feature = "mpi"))]
fn selftest_latency(_: u64) -> ExitCode {
    selftest_deque(0)
}

#[cfg(not(feature = "mpi"))]
fn selftest_balance(_: u64) -> ExitCode {
    selftest_deque(0)
}

#[cfg(not(feature = "mpi"))]
fn selftest_watchdog(_: usize) -> ExitCode {
    selftest_deque(0)
}

fn parse_stop_rank(args: &[String]) -> Result<usize, String> {
    match args {
        [] => Ok(1),
        [o, v] if o == "--stop-rank" => v
            .parse()
            .map_err(|_| format!("--stop-rank '{v}': expected a rank number")),
        [o] if o == "--stop-rank" => Err("--stop-rank needs a value".into()),
        [o, ..] => Err(format!("unknown option '{o}' for selftest watchdog")),
    }
}

/// `selftest watchdog`: the ranks run a collection round after round; after the first, rank
/// `stop` stops itself (SIGSTOP), as a hung node would. The watchdog must end the job with one
/// message naming it (`MAGPIE_DIST_WATCHDOG` sets the limit); exit 1 if the rounds ever end.
#[cfg(feature = "mpi")]
fn selftest_watchdog(stop: usize) -> ExitCode {
    use magpie_dist::collection::{Comm, Entry, Strategy, TaskCollection};
    let Some(universe) = magpie_dist::launch::init() else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::from(3);
    };
    let world = universe.world();
    let (me, ranks) = {
        use mpi::traits::Communicator;
        (world.rank() as usize, world.size() as usize)
    };
    if stop >= ranks {
        if me == 0 {
            eprintln!(
                "error: --stop-rank {stop}: the job has ranks 0 to {}",
                ranks - 1
            );
        }
        return ExitCode::from(2);
    }
    let comm = magpie_dist::rma::World::<Entry<u64>>::new(world, 1 << 10);
    let mut tc = TaskCollection::new(comm, Strategy::Steal);
    (0..200u64).for_each(|t| tc.push(t + 1000 * me as u64));
    for round in 0..100_000 {
        if round == 1 && me == stop {
            eprintln!("selftest watchdog: rank {me} stops itself (SIGSTOP)");
            // SAFETY: raises a signal on this process; SIGSTOP runs no handler.
            unsafe { libc::raise(libc::SIGSTOP) };
        }
        let mut x = 0u64;
        tc.process(|t, _| {
            for i in 0..2000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(t ^ i));
            }
        });
        tc.restore();
        if round == 0 && tc.comm().rank() == 0 {
            eprintln!("selftest watchdog: round 0 done on {ranks} ranks");
        }
    }
    eprintln!("error: rank {me}: 100000 rounds ran and the watchdog never ended the job");
    ExitCode::from(1)
}

/// `selftest balance`: the balancers under MPI place exactly as in one process. Each rank
/// seeds N tasks whose costs are skewed (rank r's task i spins `1 + (r·7 + i) mod 13` times 20
/// µs, rank 0's doubled), runs them under `plb-centralized`, then `plb-hierarchical`: after
/// each strategy's first iteration rank 0 gathers every rank's measured tasks and computes the
/// placement in-process (`collection::placement`), and the second iteration's tasks per rank,
/// gathered, must be exactly that placement.
#[cfg(feature = "mpi")]
fn selftest_balance(n: u64) -> ExitCode {
    use magpie_dist::collection::{placement, Comm, Entry, Strategy, TaskCollection};
    let Some(universe) = magpie_dist::launch::init() else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::from(3);
    };
    let world = universe.world();
    let mut ok = true;
    for strategy in [Strategy::PlbCentralized, Strategy::PlbHierarchical] {
        let comm: magpie_dist::rma::World<Entry<u64>> =
            magpie_dist::rma::World::new(mpi::topology::Communicator::duplicate(&world), 1 << 12);
        let (me, p) = (comm.rank() as u64, comm.size());
        let mut tc = TaskCollection::new(comm, strategy);
        for i in 0..n {
            tc.push(me << 32 | i);
        }
        let spin = |id: u64| {
            let (r, i) = (id >> 32, id & 0xffff_ffff);
            let units = (1 + (r * 7 + i) % 13) * if r == 0 { 2 } else { 1 };
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_micros(20 * units) {
                std::hint::spin_loop();
            }
        };
        tc.process(|id, _| spin(id));
        let measured: Vec<(u64, u64)> = tc.last_ran().collect();
        let all = tc.comm().all_gather(measured);
        let want = placement(strategy, Default::default(), &all);
        tc.restore();
        let mut mine = Vec::new();
        tc.process(|id, _| mine.push(id));
        let mut got = tc.comm().all_gather(mine);
        let mut want = want;
        for v in got.iter_mut().chain(want.iter_mut()) {
            v.sort_unstable();
        }
        if me == 0 {
            let moved = (0..p)
                .map(|r| got[r].iter().filter(|&&id| id >> 32 != r as u64).count())
                .sum::<usize>();
            let same = got == want;
            println!(
                "{}: {p} ranks, {} tasks, {moved} moved by the balancer; placement {} the \
                 in-process one",
                strategy.name(),
                n * p as u64,
                if same { "equals" } else { "DIFFERS FROM" }
            );
            ok &= same;
        }
    }
    if world_rank_is_0(&world) {
        if ok {
            println!("ok: both balancers placed as in one process");
        } else {
            eprintln!("error: a balancer placed differently under MPI; {BUG}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

#[cfg(feature = "mpi")]
fn world_rank_is_0(w: &mpi::topology::SimpleCommunicator) -> bool {
    mpi::topology::Communicator::rank(w) == 0
}

/// `selftest latency`: what the simulator's model needs that a run's report does not show.
/// Ranks 0 and 1 bounce a termination message `n` times through the collection's own transport
/// (half the round trip is the one-way latency), then rank 0 tries `n` steals from rank 1's
/// empty deque. Rank 0 prints both in nanoseconds, as JSON.
#[cfg(feature = "mpi")]
fn selftest_latency(n: u64) -> ExitCode {
    use magpie_dist::collection::{Comm, Entry, Envelope};
    use magpie_dist::deque::{steal, Stolen};
    use magpie_dist::termination::Message;
    let Some(universe) = magpie_dist::launch::init() else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::from(3);
    };
    let comm: magpie_dist::rma::World<Entry<u64>> =
        magpie_dist::rma::World::new(universe.world(), 256);
    if comm.size() < 2 {
        eprintln!("error: selftest latency needs 2 ranks or more (mpirun -n 2)");
        return ExitCode::from(2);
    }
    let me = comm.rank();
    let m = Envelope::Termination(Message::Done { iteration: 0 });
    let recv = || loop {
        if let Some(got) = comm.try_recv() {
            break got;
        }
    };
    comm.all_gather(());
    let t = std::time::Instant::now();
    for _ in 0..n {
        match me {
            0 => {
                comm.send(1, m.clone());
                recv();
            }
            1 => {
                recv();
                comm.send(0, m.clone());
            }
            _ => {}
        }
    }
    let message_ns = t.elapsed().as_nanos() as f64 / n as f64 / 2.0;
    comm.all_gather(());
    let mut ok = true;
    let t = std::time::Instant::now();
    if me == 0 {
        for _ in 0..n {
            ok &= matches!(steal(&comm.deque(1), 4), Stolen::Empty);
        }
    }
    let attempt_ns = t.elapsed().as_nanos() as f64 / n as f64;
    comm.all_gather(());
    if me == 0 {
        if !ok {
            eprintln!("error: a steal from an empty deque found something; {BUG}");
            return ExitCode::from(1);
        }
        println!(
            "{}",
            serde_json::json!({"ranks": comm.size(), "round_trips": n, "message_ns": message_ns,
                               "empty_attempt_ns": attempt_ns})
        );
    }
    ExitCode::SUCCESS
}

#[cfg(feature = "mpi")]
fn selftest_deque(n: u64) -> ExitCode {
    use magpie_dist::deque::{steal, Full, Owner, Stolen};
    use magpie_dist::rma::{Counter, Window};
    use mpi::collective::SystemOperation;
    use mpi::traits::*;

    let Some(universe) = magpie_dist::launch::init() else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::from(3);
    };
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let win: std::rc::Rc<Window<u64>> = std::rc::Rc::new(Window::new(&world, 256));
    let done = Counter::new(&world);
    let want = n * p as u64;
    // Rank 0 holds every task at first: the others only get work by stealing.
    let seeded = if me == 0 { want } else { 0 };
    // SAFETY: the window was just allocated (empty), and this is its one owner on this rank.
    let mut owner = unsafe { Owner::new(win.target(me)) };
    let (mut ran, mut sum, mut stolen_tasks, mut steals) = (0u64, 0u64, 0u64, 0u64);
    // A task: its id; running it takes about 20 µs, so the others have time to steal.
    let mut run = |t: u64| {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_micros(20) {
            std::hint::spin_loop();
        }
        ran += 1;
        sum = sum.wrapping_add(t);
        done.add(1);
    };
    let mut next = 0u64;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ me as u64;
    loop {
        while next < seeded && owner.local_len() < 64 {
            let id = next;
            if let Err(Full(t)) = owner.push(id) {
                run(t);
            }
            next += 1;
        }
        if let Some(t) = owner.pop() {
            run(t);
            continue;
        }
        if next < seeded {
            continue;
        }
        // Nothing of its own left: steal, trying every other rank once from a random one.
        let mut found = false;
        if p > 1 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let first = (rng % (p as u64 - 1)) as usize;
            for k in 0..p - 1 {
                let v = (me + 1 + (first + k) % (p - 1)) % p;
                if let Stolen::Tasks(ts) = steal(&win.target(v), 8) {
                    steals += 1;
                    stolen_tasks += ts.len() as u64;
                    for t in ts {
                        run(t);
                    }
                    found = true;
                    break;
                }
            }
        }
        // Stop once every task has run (tasks in flight are counted when they run).
        if !found && done.add(0) >= want {
            break;
        }
    }
    let (mut total, mut total_sum) = (0u64, 0u64);
    world.all_reduce_into(&ran, &mut total, SystemOperation::sum());
    world.all_reduce_into(&sum, &mut total_sum, SystemOperation::sum());
    let mut per_rank = vec![0u64; if me == 0 { 3 * p } else { 0 }];
    let mine = [ran, steals, stolen_tasks];
    if me == 0 {
        world
            .process_at_rank(0)
            .gather_into_root(&mine[..], &mut per_rank[..]);
    } else {
        world.process_at_rank(0).gather_into(&mine[..]);
    }
    // The windows go last, together on every rank (freeing them is collective): the deque's
    // when its last handle (the owner's) goes.
    drop(done);
    drop(win);
    drop(owner);
    let want_sum = (0..want).fold(0u64, |a, t| a.wrapping_add(t));
    if me == 0 {
        println!(
            "{p} ranks, {want} tasks seeded on rank 0: {total} run (expected {want}), id sum \
             {total_sum} (expected {want_sum})"
        );
        for r in 0..p {
            println!(
                "  rank {r}: ran {}, {} steals took {} tasks",
                per_rank[3 * r],
                per_rank[3 * r + 1],
                per_rank[3 * r + 2]
            );
        }
    }
    if total == want && total_sum == want_sum {
        if me == 0 {
            println!("ok: every task ran exactly once");
        }
        ExitCode::SUCCESS
    } else {
        if me == 0 {
            eprintln!("error: tasks were lost or ran twice; {BUG}");
        }
        ExitCode::from(1)
    }
}
