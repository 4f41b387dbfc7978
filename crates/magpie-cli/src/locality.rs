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

use crate::cli::LocalityArgs;
use crate::failure::Failure;
use crate::measure::locality::{model, Settings};
use crate::render::locality::iteration_lines;
use magpie::Topology;

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
