//! `magpie suite --dist hf|tce[:N]`: the distributed task collections of `magpie-dist` (the
//! thesis's Ch. 5) in the suite's report. A synthetic kernel (hf or tce: the costs of the
//! thesis's Hartree-Fock and tensor contraction tasks) runs in `magpie_dist_bench::sim`, the
//! discrete-event simulator of the collection (no MPI needed; its costs are this machine's
//! loopback MPI, `sim::Model::default`), at three rank counts under each strategy (no
//! balancing, stealing, retentive stealing, and the two persistence-based balancers), for a few
//! iterations: the table shows each strategy's first and last iteration, so what retention and
//! the balancers gain after the first iteration shows. The report draws the ranks' timelines of
//! the first and last iteration at the rank count that still draws a row per rank.
//!
//! Real MPI runs are `mpirun -n P magpie-dist run ...` ([docs/DISTRIBUTED.md]).

use crate::cli::DistSpec;
use magpie_bench::Size;
use magpie_dist::collection::Strategy;
use magpie_dist_bench::kernels::Synthetic;
use magpie_dist_bench::sim;
use magpie_dist_bench::timeline_svg::MAX_ROWS;
use magpie_view::chart::esc;
use magpie_view::progress::Progress;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// One rank count and strategy.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct DistRow {
    /// Simulated ranks.
    pub ranks: usize,
    /// The strategy's name.
    pub strategy: String,
    /// The first iteration's time (the slowest rank's), seconds.
    pub first_s: f64,
    /// The last iteration's.
    pub last_s: f64,
    /// Total work ÷ ranks: the time of a perfect balance, seconds.
    pub ideal_s: f64,
    /// Work ÷ (ranks × time), first and last iteration.
    pub first_efficiency: f64,
    /// The same, last iteration.
    pub last_efficiency: f64,
    /// Steal attempts per rank in the last iteration.
    pub last_attempts_per_rank: f64,
}

/// What `--dist` measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct DistInfo {
    /// hf or tce.
    pub kernel: String,
    /// Its side: n × n tasks.
    pub n: u64,
    /// Iterations per configuration.
    pub iterations: usize,
    /// The rank counts.
    pub ranks: Vec<usize>,
    /// One row per rank count and strategy.
    pub rows: Vec<DistRow>,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
    /// The rank timelines, one SVG per strategy (for index.html; not in results.json).
    #[serde(skip)]
    pub timelines: Vec<String>,
}

/// The side and rank counts of a size preset.
fn shape(size: Size) -> (u64, Vec<usize>) {
    match size {
        Size::Ci => (40, vec![4, 16]),
        Size::Default => (200, vec![16, 64, 256]),
        Size::Paper => (727, vec![256, 1024, 4096]),
    }
}

const ITERATIONS: usize = 4;

/// Simulates `spec` at the size's rank counts under every strategy.
pub(crate) fn simulated(spec: DistSpec, size: Size) -> DistInfo {
    let (n0, ranks) = shape(size);
    let n = spec.n.unwrap_or(n0);
    let kernel = if spec.hf {
        Synthetic::Hf(n)
    } else {
        Synthetic::Tce(n)
    };
    let mut info = DistInfo {
        kernel: kernel.name().into(),
        n,
        iterations: ITERATIONS,
        ranks: ranks.clone(),
        rows: vec![],
        error: None,
        timelines: vec![],
    };
    // Timelines at the most ranks that still get a row each.
    let drawn = ranks.iter().copied().filter(|&p| p <= MAX_ROWS).max();
    let mut progress = Progress::new(
        "dist",
        (ranks.len() * Strategy::ALL.len()) as u64,
        "simulations",
    );
    for &p in &ranks {
        for strategy in Strategy::ALL {
            progress.at(&format!("{} {p} ranks {}", kernel.name(), strategy.name()));
            let o = match sim::simulate(sim::Config {
                kernel,
                ranks: p,
                strategy,
                iterations: ITERATIONS,
                model: sim::Model::default(),
                params: Default::default(),
            }) {
                Ok(o) => o,
                Err(e) => {
                    let e = format!("{} at {p} ranks, {}: {e}", kernel.name(), strategy.name());
                    progress.note(&format!("FAILED: {e}"));
                    info.error = Some(e);
                    return info;
                }
            };
            let (first, last) = (&o.iterations[0], &o.iterations[o.iterations.len() - 1]);
            let row = DistRow {
                ranks: p,
                strategy: strategy.name().into(),
                first_s: first.wall_ns() as f64 * 1e-9,
                last_s: last.wall_ns() as f64 * 1e-9,
                ideal_s: o.ideal_ns * 1e-9,
                first_efficiency: first.efficiency(),
                last_efficiency: last.efficiency(),
                last_attempts_per_rank: last.ranks.iter().map(|r| r.steals_attempted).sum::<u64>()
                    as f64
                    / p as f64,
            };
            progress.step(&format!(
                "{} {p} ranks {}: efficiency {:.2} → {:.2}",
                kernel.name(),
                strategy.name(),
                row.first_efficiency,
                row.last_efficiency
            ));
            info.rows.push(row);
            if Some(p) == drawn {
                let title = format!(
                    "{} n={n}, {p} simulated ranks, {}",
                    kernel.name(),
                    strategy.name()
                );
                info.timelines
                    .push(magpie_dist_bench::timeline_svg::first_and_last(
                        &title,
                        &o.iterations,
                    ));
            }
        }
    }
    info
}

/// The terminal's lines.
pub(crate) fn table(d: &DistInfo) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\ndistributed task collections, simulated (magpie-dist's simulator, this machine's MPI \
         costs): {} n={} ({} tasks), {} iterations; efficiency = work ÷ (ranks × time)",
        d.kernel,
        d.n,
        d.n * d.n,
        d.iterations
    );
    if let Some(e) = &d.error {
        let _ = writeln!(o, "  failed: {e}");
    }
    let _ = writeln!(
        o,
        "  {:>6} {:<22} {:>10} {:>10} {:>10} {:>7} {:>7} {:>10}",
        "ranks", "strategy", "first ms", "last ms", "ideal ms", "eff 1st", "eff last", "tries/rank"
    );
    for r in &d.rows {
        let [ranks, strategy, first, last, ideal, eff_first, eff_last, tries] = cells(r);
        let _ = writeln!(
            o,
            "  {ranks:>6} {strategy:<22} {first:>10} {last:>10} {ideal:>10} {eff_first:>7} \
             {eff_last:>7} {tries:>10}"
        );
    }
    o
}

/// A row's values as the table and the report show them: ranks, strategy, the first, last and
/// ideal iteration in ms, the first and last efficiency, steal tries per rank.
fn cells(r: &DistRow) -> [String; 8] {
    [
        r.ranks.to_string(),
        r.strategy.clone(),
        format!("{:.3}", r.first_s * 1e3),
        format!("{:.3}", r.last_s * 1e3),
        format!("{:.3}", r.ideal_s * 1e3),
        format!("{:.3}", r.first_efficiency),
        format!("{:.3}", r.last_efficiency),
        format!("{:.1}", r.last_attempts_per_rank),
    ]
}

/// The report's section.
pub(crate) fn section(d: &DistInfo) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<section id=\"dist\">\n<h2>Distributed task collections <small>{} n={} ({} tasks), \
         simulated at {} ranks, {} iterations each (magpie-dist)</small></h2>\n<p \
         class=\"note\">magpie-dist's discrete-event simulator runs the collection with this \
         machine's loopback MPI costs. Efficiency = work ÷ (ranks × the slowest rank's time); \
         retentive stealing and the persistence-based balancers should gain from the first \
         iteration to the last. Real runs: <code>mpirun -n P magpie-dist run …</code>.</p>",
        esc(&d.kernel),
        d.n,
        d.n * d.n,
        d.ranks
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        d.iterations
    );
    if let Some(e) = &d.error {
        let _ = writeln!(o, "<p class=\"note\">Failed: {}.</p>", esc(e));
    }
    let _ = writeln!(
        o,
        "<table>\n<thead><tr><th class=\"num\">ranks</th><th>strategy</th><th class=\"num\">first \
         ms</th><th class=\"num\">last ms</th><th class=\"num\">ideal ms</th><th \
         class=\"num\">efficiency, first</th><th class=\"num\">efficiency, last</th><th \
         class=\"num\">steal tries per rank, last</th></tr></thead>\n<tbody>"
    );
    for r in &d.rows {
        o.push_str("<tr>");
        for (i, c) in cells(r).iter().enumerate() {
            // The strategy is the one text column; the rest are numbers.
            let class = if i == 1 { "" } else { " class=\"num\"" };
            let _ = write!(o, "<td{class}>{}</td>", esc(c));
        }
        o.push_str("</tr>\n");
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    if !d.timelines.is_empty() {
        let _ = writeln!(
            o,
            "<h3>The ranks over the first and last iteration</h3>\n<div class=\"charts\">"
        );
        for svg in &d.timelines {
            let _ = writeln!(o, "<figure>{svg}</figure>");
        }
        let _ = writeln!(o, "</div>");
    }
    o.push_str("</section>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_at_every_rank_count_with_timelines_where_rows_fit() {
        let d = simulated(
            DistSpec {
                hf: true,
                n: Some(12),
            },
            Size::Ci,
        );
        assert_eq!(d.error, None);
        assert_eq!(d.rows.len(), 2 * Strategy::ALL.len());
        for r in &d.rows {
            assert!(
                r.first_s > 0.0 && r.last_s > 0.0 && r.ideal_s > 0.0,
                "{r:?}"
            );
            assert!(r.ideal_s <= r.last_s * (1.0 + 1e-9), "{r:?}");
            assert!((0.0..=1.0 + 1e-9).contains(&r.last_efficiency), "{r:?}");
        }
        // 16 ranks still get a row each: a timeline per strategy there.
        assert_eq!(d.timelines.len(), Strategy::ALL.len());
        let html = section(&d);
        assert_eq!(html.matches("<svg").count(), Strategy::ALL.len());
        assert!(html.contains("steal-retentive") && table(&d).contains("plb-hierarchical"));
    }
}
