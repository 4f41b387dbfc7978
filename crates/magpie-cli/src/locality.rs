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
use crate::model::locality::Row;
use crate::render::locality::iteration_lines;
use crate::Failure;
use magpie::cachemodel::{simulate, simulate_each, Misses};
use magpie::Topology;
use magpie_bench::Kernel;

/// How the model runs: the virtual machine, the strategies and the runs of each.
pub(crate) struct Settings<'a> {
    pub topology: &'a Topology,
    pub strategies: &'a [(String, crate::cli::Strategy)],
    pub runs: u64,
    pub line: u64,
    pub pace_us_per_mib: u64,
    pub boundary_level: Option<u32>,
    pub policy: Option<magpie::Policy>,
    /// Iterations of a first-touch program (default: the kernel's).
    pub iterations: Option<usize>,
    /// relws's pruning percentage.
    pub prune: u32,
}

/// The kernels that declare their leaves' accesses (the others give the model nothing).
pub(crate) fn kernels() -> Vec<Kernel> {
    Kernel::ALL
        .iter()
        .copied()
        .filter(|k| k.declares_leaves())
        .collect()
}

/// The names of the kernels for which `pick` holds, in report order.
fn names_where(pick: impl Fn(Kernel) -> bool) -> String {
    let names: Vec<&str> = Kernel::ALL
        .iter()
        .copied()
        .filter(|&k| pick(k))
        .map(|k| k.name())
        .collect();
    names.join(", ")
}

/// [`kernels`] in words.
pub(crate) fn kernels_in_words() -> String {
    let names: Vec<&str> = kernels().iter().map(|k| k.name()).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "none".into(),
    }
}

/// One modelled run: the misses, the leaves' count, and for a first-touch program its
/// iterations and answer.
struct Modelled {
    misses: Misses,
    leaves: usize,
    iterations: Vec<magpie_bench::placement::Iteration>,
    answer: Option<String>,
}

/// Runs `case` `m.runs` times per strategy, each run verified, and models each run's misses;
/// one row per strategy, with the median run's misses.
pub(crate) fn model(case: &magpie_bench::runner::Case, m: &Settings) -> Result<Vec<Row>, Failure> {
    use magpie_bench::placement;
    let topo = m.topology;
    let facet = case.kernel.placement();
    let program = facet.is_some();
    let mut rows = Vec::new();
    let mut progress = magpie_view::progress::Progress::new(
        "locality",
        m.strategies.len() as u64 * m.runs,
        "runs",
    );
    for (name, st) in m.strategies {
        if st.follow.is_some() && !program {
            return Err(Failure::Usage(format!(
                "the strategy {name} needs a kernel with a first-touch initialiser ({}), not {}",
                names_where(|k| k.placement().is_some()),
                case.kernel.name()
            )));
        }
        if facet.is_some_and(|f| !f.banded) && (st.places.is_some() || st.squads) {
            return Err(Failure::Usage(format!(
                "the strategy {name} needs a kernel whose phases sweep rows ({}), not {}; leave \
                 it out",
                names_where(|k| k.placement().is_some_and(|f| f.banded)),
                case.kernel.name()
            )));
        }
        let mut results: Vec<Modelled> = Vec::new();
        for run in 0..m.runs {
            progress.at(&format!("{} {name}, run {}", case.kernel.name(), run + 1));
            let pace = std::time::Duration::from_micros(m.pace_us_per_mib);
            let pool = crate::bench::pool_builder(Some(topo.cores()), m.policy, None, None, false)?
                .topology(topo.clone())
                .victims(st.victims)
                .places(st.places.is_some())
                .cross_place_steal(st.places == Some(true))
                .squads(st.squads)
                .squad_hints(st.squad_hints)
                .boundary_level(m.boundary_level)
                .record_leaves(true)
                .pace_leaves(pace)
                .build()
                .map_err(Failure::from_magpie)?;
            let (leaves, mut iterations, answer, spans) = if program {
                use crate::cli::Follow;
                let strategy = match st.follow {
                    None => placement::Strategy::Plain,
                    Some(Follow::Relaxed) => placement::Strategy::Relaxed {
                        prune: m.prune,
                        max_relaxed: 4,
                    },
                    Some(Follow::Ordered) => placement::Strategy::Ordered,
                    Some(Follow::User) => placement::Strategy::User,
                };
                let r = case
                    .kernel
                    .run_placed(&pool, case.n, case.grain, m.iterations, strategy, pace)
                    .map_err(Failure::Failed)?;
                (r.leaves, r.iterations, Some(r.answer), r.spans)
            } else {
                crate::bench::run_once_verified(&pool, case)?;
                (pool.take_leaves(), Vec::new(), None, Vec::new())
            };
            if leaves.is_empty() {
                return Err(Failure::Usage(format!(
                    "{} declares no leaf accesses, so there is nothing to model ({} do)",
                    case.kernel.name(),
                    kernels_in_words()
                )));
            }
            let (misses, each) = if program {
                simulate_each(topo, m.line, &leaves)
            } else {
                (simulate(topo, m.line, &leaves), Vec::new())
            };
            for (it, span) in iterations.iter_mut().zip(&spans) {
                it.misses = each[span.clone()].iter().map(|c| c.misses).sum();
                it.remote_bytes = each[span.clone()].iter().map(|c| c.remote_bytes).sum();
            }
            progress.step(&format!(
                "{} {name}, run {}: {} modelled misses",
                case.kernel.name(),
                run + 1,
                misses.total()
            ));
            results.push(Modelled {
                misses,
                leaves: leaves.len(),
                iterations,
                answer,
            });
        }
        let runs: Vec<u64> = results.iter().map(|r| r.misses.total()).collect();
        let mut order: Vec<usize> = (0..results.len()).collect();
        order.sort_by_key(|&i| runs[i]);
        let r = &results[order[order.len() / 2]];
        let late = &r.iterations[r.iterations.len() / 2..];
        let in_iterations: u64 = r.iterations.iter().map(|i| i.misses).sum();
        rows.push(Row {
            late_misses: late.iter().map(|i| i.misses).sum(),
            late_remote_bytes: late.iter().map(|i| i.remote_bytes).sum(),
            placing_misses: if r.iterations.is_empty() {
                0
            } else {
                r.misses.total().saturating_sub(in_iterations)
            },
            strategy: name.clone(),
            misses: r.misses.total(),
            misses_per_socket: r.misses.per_socket.clone(),
            bytes: r.misses.bytes(),
            leaves: r.leaves,
            runs,
            remote_bytes: r.misses.remote_bytes,
            remote_misses: r.misses.remote_misses,
            iterations: r.iterations.clone(),
            answer: r.answer.clone(),
        });
    }
    Ok(rows)
}

pub(crate) fn run(a: LocalityArgs) -> Result<(), Failure> {
    let topo = Topology::parse(&a.topology).map_err(Failure::from_magpie)?;
    let case = crate::bench::case_of(a.kernel, a.n, a.size, a.grain, None)?;
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
