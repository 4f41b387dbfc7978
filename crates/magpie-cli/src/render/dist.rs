//! The simulated task collections (`--dist`) as the terminal's table and the report's section.

use crate::model::dist::{DistInfo, DistRow};
use magpie_view::chart::esc;
use std::fmt::Write as _;

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
