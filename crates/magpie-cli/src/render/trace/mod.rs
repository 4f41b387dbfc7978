//! A trace drawn and written: the per-worker timeline as SVG ([`svg`]), Chrome trace-event JSON
//! for Perfetto ([`perfetto`]), the summary as text, the timeline's title and its colours.

pub(crate) mod perfetto;
pub(crate) mod svg;

use crate::format::count;
use crate::model::trace::{Analysis, Kind, Summary};
use magpie::trace::Trace;
use std::fmt::Write as _;

/// The timeline's title: what, workers, policy, phases, steals, parallelism.
pub(crate) fn title(what: &str, t: &Trace, an: &Analysis) -> String {
    format!(
        "{what}: {} ({}), {}, {}, parallelism {}",
        count(t.workers(), "worker"),
        t.policy,
        count(t.phases.iter().map(Vec::len).sum::<usize>(), "phase"),
        count(t.steal_count(), "steal"),
        an.overall
            .parallelism()
            .map_or("–".into(), |p| format!("{p:.2}"))
    )
}

/// A phase's colour on the timeline, by how it began.
pub(crate) fn color(k: Kind) -> &'static str {
    match k {
        Kind::Root => "#1f77b4",
        Kind::StolenChild => "#2ca02c",
        Kind::StolenContinuation => "#ff7f0e",
        Kind::Resumed => "#9467bd",
        Kind::Early => "#8c564b",
        Kind::External => "#7f7f7f",
    }
}

/// `magpie trace`'s summary as text.
pub(crate) fn summary(s: &Summary) -> String {
    let mut o = String::new();
    if let Some(r) = &s.run {
        let what = match (&r.tree, r.grain) {
            (Some(t), _) => format!("tree {t}"),
            (None, Some(g)) => format!("n={} grain={g}", r.n),
            (None, None) => format!("n={}", r.n),
        };
        let _ = writeln!(
            o,
            "{} {what} on {} ({}): {}, {:.6} s",
            r.kernel,
            count(s.workers, "worker"),
            s.policy,
            if r.verified {
                "verified"
            } else {
                "NOT verified"
            },
            r.run_s
        );
    }
    let _ = writeln!(
        o,
        "trace {}: {:.3} KB; {}, {}, {}, {}",
        s.file,
        s.file_bytes as f64 / 1e3,
        count(s.workers, "worker"),
        count(s.phases, "phase"),
        count(s.steals, "steal"),
        count(s.spawns as usize, "spawn")
    );
    let busy: f64 = s.busy_s.iter().sum();
    let num = |x: Option<f64>| x.map_or("–".into(), |x| format!("{x:.2}"));
    let _ = writeln!(
        o,
        "busy {} of {} workers × {}; steal tree: work {}, span {}, parallelism {} \
         (burdened by {} µs per steal: span {}, parallelism {})",
        crate::format::duration(busy),
        s.workers,
        crate::format::duration(s.duration_s),
        crate::format::duration(s.work_s),
        crate::format::duration(s.span_s),
        num(s.parallelism),
        s.burden_us,
        crate::format::duration(s.burdened_span_s),
        num(s.burdened_parallelism)
    );
    let _ = writeln!(
        o,
        "storage per worker (KB = 1000 bytes; b_w, b_h: the thesis's formulas, without \
         timestamps; enumeration: 4 bytes per task, split evenly):"
    );
    let head = [
        "worker",
        "phases",
        "file KB",
        "timestamps KB",
        "b_w KB",
        "b_h KB",
        "enumeration KB",
        "enumeration / file",
    ];
    let kb = |b: f64| format!("{:.3}", b / 1e3);
    let mut rows: Vec<[String; 8]> = vec![head.map(String::from)];
    for s in s.storage.iter().chain([&s.storage_total]) {
        rows.push([
            s.worker.map_or("total".into(), |w| w.to_string()),
            s.phases.to_string(),
            kb(s.file_bytes as f64),
            kb(s.timestamp_bytes as f64),
            kb(s.b_w as f64),
            kb(s.b_h as f64),
            kb(s.enumeration_bytes),
            s.enumeration_over_file
                .map_or("–".into(), |r| format!("{r:.1}×")),
        ]);
    }
    let mut width = [0usize; 8];
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in &rows {
        let mut line = String::new();
        for (c, w) in r.iter().zip(width) {
            let _ = write!(line, "  {c:>w$}");
        }
        let _ = writeln!(o, "{line}");
    }
    o
}
