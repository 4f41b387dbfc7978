//! `magpie locality`: modelled last-level cache misses of one kernel run per victim-selection
//! strategy, on a virtual topology (`magpie::cachemodel`). The pool gets one worker per modelled
//! core (mapped onto the CPUs that exist), records what each leaf task declares it touched, and
//! the records are replayed through one LRU cache per socket. Each strategy runs `--runs` times
//! (verified each time); the run with the median total is reported.

use crate::cli::LocalityArgs;
use crate::Failure;
use magpie::cachemodel::{simulate, Misses};
use magpie::Topology;

/// One strategy's result.
#[derive(serde::Serialize)]
struct Row {
    strategy: String,
    /// Total modelled misses (lines), the median run's.
    misses: u64,
    misses_per_socket: Vec<u64>,
    /// Bytes read from memory in the model (misses × line size).
    bytes: u64,
    /// Leaf tasks recorded in that run.
    leaves: usize,
    /// Every run's total, in run order.
    runs: Vec<u64>,
}

pub fn run(a: LocalityArgs) -> Result<(), Failure> {
    let topo = Topology::parse(&a.topology).map_err(Failure::from_magpie)?;
    let case = crate::bench::case_of(a.kernel, a.n, a.size, a.grain, None)?;
    let mut rows = Vec::new();
    for (name, st) in &a.strategies.0 {
        let mut results: Vec<(Misses, usize)> = Vec::new();
        for _ in 0..a.runs {
            let pool = crate::bench::pool_builder(Some(topo.cores()), a.policy, None, None, false)?
                .topology(topo.clone())
                .victims(st.victims)
                .places(st.places.is_some())
                .cross_place_steal(st.places == Some(true))
                .squads(st.squads)
                .boundary_level(a.boundary_level)
                .record_leaves(true)
                .build()
                .map_err(Failure::from_magpie)?;
            crate::bench::run_once_verified(&pool, &case)?;
            let leaves = pool.take_leaves();
            if leaves.is_empty() {
                return Err(Failure::Usage(format!(
                    "{} declares no leaf accesses, so there is nothing to model \
                     (heat, sor, ge and mergesort do)",
                    a.kernel.name()
                )));
            }
            results.push((simulate(&topo, a.line, &leaves), leaves.len()));
        }
        let runs: Vec<u64> = results.iter().map(|r| r.0.total()).collect();
        let mut order: Vec<usize> = (0..results.len()).collect();
        order.sort_by_key(|&i| runs[i]);
        let (m, leaves) = &results[order[order.len() / 2]];
        rows.push(Row {
            strategy: name.clone(),
            misses: m.total(),
            misses_per_socket: m.per_socket.clone(),
            bytes: m.bytes(),
            leaves: *leaves,
            runs,
        });
    }
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
