//! `magpie locality`: modelled last-level cache misses of one kernel run per victim-selection
//! strategy, on a virtual topology (`magpie::cachemodel`). The pool gets one worker per modelled
//! core (mapped onto the CPUs that exist), records what each leaf task declares it touched, and
//! the records are replayed through one LRU cache per socket. Each strategy runs `--runs` times
//! (verified each time); the run with the median total is reported.

use crate::cli::LocalityArgs;
use crate::Failure;
use magpie::cachemodel::{simulate, Misses};
use magpie::Topology;
use magpie_bench::Kernel;

/// One strategy's result.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub strategy: String,
    /// Total modelled misses (lines), the median run's.
    pub misses: u64,
    pub misses_per_socket: Vec<u64>,
    /// Bytes read from memory in the model (misses × line size).
    pub bytes: u64,
    /// Leaf tasks recorded in that run.
    pub leaves: usize,
    /// Every run's total, in run order.
    pub runs: Vec<u64>,
}

/// How the model runs: the virtual machine, the strategies and the runs of each.
pub struct Settings<'a> {
    pub topology: &'a Topology,
    pub strategies: &'a [(String, crate::cli::Strategy)],
    pub runs: u64,
    pub line: u64,
    pub pace_us_per_mib: u64,
    pub boundary_level: Option<u32>,
    pub policy: Option<magpie::Policy>,
}

/// `--pace-us-per-mib`'s default: a leaf touching the 80 KiB of four rows of a 1024-wide grid
/// sleeps about 160 µs, long enough that 16 workers' leaves overlap on 2 CPUs.
pub const DEFAULT_PACE_US_PER_MIB: u64 = 2000;

/// The kernels that declare their leaves' accesses (the others give the model nothing).
pub const KERNELS: &[Kernel] = &[Kernel::Heat, Kernel::Sor, Kernel::Ge, Kernel::Mergesort];

/// [`KERNELS`] in words.
pub fn kernels_in_words() -> String {
    let names: Vec<&str> = KERNELS.iter().map(|k| k.name()).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "none".into(),
    }
}

/// Runs `case` `m.runs` times per strategy, each run verified, and models each run's misses;
/// one row per strategy, with the median run's misses.
pub fn model(case: &magpie_bench::runner::Case, m: &Settings) -> Result<Vec<Row>, Failure> {
    let topo = m.topology;
    let mut rows = Vec::new();
    for (name, st) in m.strategies {
        let mut results: Vec<(Misses, usize)> = Vec::new();
        for _ in 0..m.runs {
            let pool = crate::bench::pool_builder(Some(topo.cores()), m.policy, None, None, false)?
                .topology(topo.clone())
                .victims(st.victims)
                .places(st.places.is_some())
                .cross_place_steal(st.places == Some(true))
                .squads(st.squads)
                .squad_hints(st.squad_hints)
                .boundary_level(m.boundary_level)
                .record_leaves(true)
                .pace_leaves(std::time::Duration::from_micros(m.pace_us_per_mib))
                .build()
                .map_err(Failure::from_magpie)?;
            crate::bench::run_once_verified(&pool, case)?;
            let leaves = pool.take_leaves();
            if leaves.is_empty() {
                return Err(Failure::Usage(format!(
                    "{} declares no leaf accesses, so there is nothing to model ({} do)",
                    case.kernel.name(),
                    kernels_in_words()
                )));
            }
            results.push((simulate(topo, m.line, &leaves), leaves.len()));
        }
        let runs: Vec<u64> = results.iter().map(|r| r.0.total()).collect();
        let mut order: Vec<usize> = (0..results.len()).collect();
        order.sort_by_key(|&i| runs[i]);
        let (mm, leaves) = &results[order[order.len() / 2]];
        rows.push(Row {
            strategy: name.clone(),
            misses: mm.total(),
            misses_per_socket: mm.per_socket.clone(),
            bytes: mm.bytes(),
            leaves: *leaves,
            runs,
        });
    }
    Ok(rows)
}

pub fn run(a: LocalityArgs) -> Result<(), Failure> {
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
    println!(
        "  {:<10} {:>12} {:>10} {:>8}  per socket",
        "strategy", "misses", "MB", "÷ first"
    );
    for r in &rows {
        println!(
            "  {:<10} {:>12} {:>10.2} {:>8.2}  {:?}",
            r.strategy,
            r.misses,
            r.bytes as f64 / 1e6,
            r.misses as f64 / base,
            r.misses_per_socket
        );
    }
    Ok(())
}
