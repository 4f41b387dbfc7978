//! A first-touch program's iterations as lines of text.

use crate::model::locality::Row;

/// The per-iteration table of a first-touch program's row (at most `max` iterations, then a
/// line on the rest).
pub(crate) fn iteration_lines(r: &Row, max: usize) -> Vec<String> {
    let mut v = vec![format!(
        "  {}: {:>4} {:<9} {:>6} {:>6} {:>7} {:>5} {:>4} {:>10} {:>9}",
        r.strategy,
        "it",
        "stage",
        "same%",
        "idle%",
        "sched B",
        "cuts",
        "dev",
        "misses",
        "remote MB"
    )];
    let pad = " ".repeat(r.strategy.len() + 2);
    for (i, it) in r.iterations.iter().enumerate().take(max) {
        v.push(format!(
            "  {pad}{:>4} {:<9} {:>6.1} {:>6.1} {:>7} {:>5} {:>4} {:>10} {:>9.2}{}",
            i,
            it.stage,
            100.0 * it.same_worker,
            100.0 * it.idle,
            it.schedule_bytes,
            it.cuts,
            it.deviations,
            it.misses,
            it.remote_bytes as f64 / 1e6,
            if it.placed_after { "  re-placed" } else { "" }
        ));
    }
    let rest = &r.iterations[r.iterations.len().min(max)..];
    if !rest.is_empty() {
        let mean = |f: &dyn Fn(&magpie_bench::placement::Iteration) -> f64| {
            rest.iter().map(f).sum::<f64>() / rest.len() as f64
        };
        v.push(format!(
            "  {pad}and {} more: mean same {:.1}%, idle {:.1}%",
            rest.len(),
            100.0 * mean(&|i| i.same_worker),
            100.0 * mean(&|i| i.idle)
        ));
    }
    v
}
