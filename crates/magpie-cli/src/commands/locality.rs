//! `magpie locality`: modelled last-level cache misses of one kernel run per victim-selection
//! strategy, on a virtual topology (`magpie::cachemodel`). The pool gets one worker per modelled
//! core (mapped onto the CPUs that exist), records what each leaf task declares it touched, and
//! the records are replayed through one LRU cache per socket. Each strategy runs `--runs` times
//! (verified each time); the run with the median total is reported.
//!
//! The kernels with a first-touch initialiser (`magpie_bench::placement`: heat, fdtd-2d,
//! floyd-warshall, cg, prefix-scan) run as programs under every strategy: their data is placed
//! by a fork/join initialiser (under the strategy's schedule, or plain stealing), then their
//! iterations run; the model's page map counts the bytes each socket reads from another's
//! memory, and each iteration reports the share of leaves that stayed on their worker, the idle
//! share and the schedule's bytes. The strategies `relws`, `stows` and `user` are theirs.

use crate::args::{parse_kernel, parse_policy, parse_size};
use crate::failure::Failure;
use crate::measure::locality::parse_strategies;
use crate::measure::locality::Strategies;
use crate::measure::locality::DEFAULT_PACE_US_PER_MIB;
use crate::measure::locality::DEFAULT_STRATEGIES;
use crate::measure::locality::{model, Settings};
use crate::render::locality::iteration_lines;
use clap::Args;
use magpie::Topology;
use magpie_bench::Kernel;
use magpie_bench::Size;

#[derive(Args, Debug)]
pub(crate) struct LocalityArgs {
    /// The kernel (one whose leaf tasks declare their accesses: heat, fdtd-2d, floyd-warshall,
    /// cg, prefix-scan, sor, ge, mergesort).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    /// Problem size (default: from --size).
    #[arg(long)]
    pub n: Option<u64>,
    /// ci, default or paper: the size used when --n is not given.
    #[arg(long, default_value = "ci", value_parser = parse_size)]
    pub size: Size,
    /// The kernel's grain (default: the kernel's).
    #[arg(long)]
    pub grain: Option<u64>,
    /// Spawning policy (default: the pool's, adaptive).
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<magpie::Policy>,
    /// The modelled machine, SOCKETSxCORES:LLC; the pool gets one worker per core.
    #[arg(long, default_value = "4x4:6MiB")]
    pub topology: String,
    /// Strategies to compare, comma-separated: random (victims at random), numa (nearest
    /// victims first), places (SLAW's places, one per socket, with the kernel's hints; no
    /// cross-place stealing), places-cross (the same with cross-place stealing), cab (CAB's
    /// squads, the work split across squads down to Eq. 4's boundary level, each inter-socket
    /// task sent to the squad it names), cab-paper (the same, each inter-socket task left in its
    /// spawner's squad's pool, as in CAB's paper); for the kernels with a first-touch
    /// initialiser (heat, fdtd-2d, floyd-warshall, cg, prefix-scan) also relws (the thesis's
    /// §6.4 loop: Relaxed iterations re-placing the data until the schedule is stable, then
    /// Ordered), stows (the initialiser's schedule followed Ordered) and user (a user-specified
    /// halving partition, Unordered).
    #[arg(long, default_value = DEFAULT_STRATEGIES, value_parser = parse_strategies)]
    pub strategies: Strategies,
    /// For the kernels with a first-touch initialiser: iterations to run (default: the
    /// kernel's; floyd-warshall's is n).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub iterations: Option<u64>,
    /// With relws: percent of the template's cuts pruned before each relaxed iteration.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub prune: u32,
    /// With cab: use this boundary level instead of Eq. 4's (to sweep it).
    #[arg(long)]
    pub boundary_level: Option<u32>,
    /// Cache line size in bytes.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub line: u64,
    /// Runs per strategy; the misses reported are the median run's.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=101))]
    pub runs: u64,
    /// Each leaf also holds its worker, asleep, this many microseconds per MiB it touches, so
    /// that all the modelled cores' workers run side by side even on a machine with fewer cores
    /// (0: not at all; then the schedule is whatever the real cores allowed).
    #[arg(long, default_value_t = DEFAULT_PACE_US_PER_MIB, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub pace_us_per_mib: u64,
    /// One JSON array, one object per strategy, instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: LocalityArgs) -> Result<(), Failure> {
    let topo = Topology::parse(&a.topology).map_err(Failure::from_magpie)?;
    let case = crate::measure::run::case_of(a.kernel, a.n, a.size, a.grain, None)?;
    let rows = model(
        &case,
        &Settings {
            topology: &topo,
            strategies: &a.strategies.0,
            runs: a.runs,
            line: a.line,
            pace_us_per_mib: a.pace_us_per_mib,
            boundary_level: a.boundary_level,
            policy: a.policy,
            iterations: a.iterations.map(|i| i as usize),
            prune: a.prune,
        },
    )?;
    if a.json {
        let s = serde_json::to_string_pretty(&rows)
            .map_err(|e| Failure::Failed(format!("cannot serialize the rows: {e}")))?;
        println!("{s}");
        return Ok(());
    }
    println!(
        "{} n={} on a virtual {} ({} workers), {}-byte lines; modelled last-level misses, median of {} run(s):",
        a.kernel.name(),
        case.n,
        a.topology,
        topo.cores(),
        a.line,
        a.runs
    );
    let base = rows.first().map_or(1, |r| r.misses.max(1)) as f64;
    let remote_base = rows.first().map_or(1, |r| r.remote_bytes.max(1)) as f64;
    println!(
        "  {:<12} {:>12} {:>10} {:>8} {:>11} {:>8}  per socket",
        "strategy", "misses", "MB", "÷ first", "remote MB", "÷ first"
    );
    for r in &rows {
        println!(
            "  {:<12} {:>12} {:>10.2} {:>8.2} {:>11.2} {:>8.2}  {:?}",
            r.strategy,
            r.misses,
            r.bytes as f64 / 1e6,
            r.misses as f64 / base,
            r.remote_bytes as f64 / 1e6,
            r.remote_bytes as f64 / remote_base,
            r.misses_per_socket
        );
    }
    if rows.iter().any(|r| !r.iterations.is_empty()) {
        let late = rows.first().map_or(1, |r| r.late_misses.max(1)) as f64;
        let late_remote = rows.first().map_or(1, |r| r.late_remote_bytes.max(1)) as f64;
        println!(
            "the second half of the iterations (after a schedule settles), and the initialiser's \
             misses (placing and re-placing the data):"
        );
        println!(
            "  {:<12} {:>12} {:>8} {:>11} {:>8} {:>14}",
            "strategy", "misses", "÷ first", "remote MB", "÷ first", "placing misses"
        );
        for r in &rows {
            println!(
                "  {:<12} {:>12} {:>8.2} {:>11.2} {:>8.2} {:>14}",
                r.strategy,
                r.late_misses,
                r.late_misses as f64 / late,
                r.late_remote_bytes as f64 / 1e6,
                r.late_remote_bytes as f64 / late_remote,
                r.placing_misses
            );
        }
        if let Some(a) = rows.iter().find_map(|r| r.answer.as_ref()) {
            println!("result: {a} (every run checked against the serial twin)");
        }
        println!(
            "per iteration (the median run's; same%: leaves on the worker that ran them the \
             iteration before; idle%: of the workers' time, outside paced leaves; re-placed: the \
             initialiser ran after it):"
        );
        for r in &rows {
            for l in iteration_lines(r, 10) {
                println!("{l}");
            }
        }
    }
    Ok(())
}
