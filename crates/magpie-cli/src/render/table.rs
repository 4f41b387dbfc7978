//! The suite's results as text: the table `magpie suite` prints at the end, whose cells the
//! page (html.rs) shows too.

use crate::format::{duration, result_line, times};
use crate::model::{Results, Row, SmallInputInfo};
use magpie_bench::Kernel;
use std::fmt::Write as _;

/// The table's column headings.
pub(crate) const TABLE_HEAD: [&str; 6] = [
    "runtime",
    "workers",
    "median",
    "speedup",
    "vs best peer",
    "note",
];

/// One row of the table: the cells under [`TABLE_HEAD`].
pub(crate) fn table_cells(r: &Row) -> [String; 6] {
    let median = match (r.median_s, r.stopped, r.verified) {
        (_, true, _) => "stopped".into(),
        (Some(m), _, true) => duration(m),
        _ => "FAILED".into(),
    };
    let vs_peer = match (&r.ratio_to_best_peer, &r.best_peer) {
        (Some(_), Some(p)) if r.is_peer() && r.label() == *p => "fastest peer".into(),
        (Some(x), Some(p)) => format!("{x:.2}× {p}"),
        _ => String::new(),
    };
    [
        r.label(),
        r.workers.to_string(),
        median,
        times(r.speedup),
        vs_peer,
        r.error.clone().unwrap_or_default(),
    ]
}

/// A kernel's heading: `fib (n = 20: fib(n))`.
pub(crate) fn kernel_heading(res: &Results, kernel: &str) -> String {
    let n = res.kernel_rows(kernel).next().map_or(0, |r| r.n);
    let meaning = kernel.parse::<Kernel>().map_or("", |k| k.n_meaning());
    format!("{kernel} (n = {n}: {meaning})")
}

/// What a kernel's rows are, where that is not plain: the rayon programs' magpie rows are rayon
/// on magpie's rayon-core, from another build (`rayon_builds.rs`).
pub(crate) fn kernel_note(kernel: &str) -> Option<&'static str> {
    kernel.parse::<Kernel>().ok()?.is_program().then_some(())?;
    Some(
        "a rayon program: magpie's rows are rayon's iterators on magpie's rayon-core, rayon's \
         are rayon on its own; two builds of one source, each timed in a process of its own",
    )
}

/// The table printed at the end (and shown in index.html).
/// The small-input figure as text: µs per call and × the serial twin, per runtime and width.
fn small_input_table(o: &mut String, si: &SmallInputInfo) {
    let f = match (&si.figure, &si.error) {
        (Some(f), _) => f,
        (None, e) => {
            let _ = writeln!(
                o,
                "\nsmall input from outside the pool: failed: {}",
                e.as_deref().unwrap_or("unknown")
            );
            return;
        }
    };
    let _ = writeln!(
        o,
        "\nsmall input from outside the pool: the {}-node tree sum, one entry into the pool per \
         call, medians of {} runs ({}; serial {:.2} µs)",
        f.nodes, f.runs, f.answer, f.serial_us
    );
    let _ = writeln!(
        o,
        "  {:<8} {:>7} {:>10} {:>8}",
        "runtime", "workers", "µs/call", "×serial"
    );
    for r in &f.rows {
        let _ = writeln!(
            o,
            "  {:<8} {:>7} {:>10.2} {:>8.2}",
            r.runtime, r.workers, r.us, r.x_serial
        );
    }
}

pub(crate) fn table(res: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "magpie suite: size {}, {} timed run{} per configuration, workers {}; {} CPUs{}; {:.1} s",
        res.size,
        res.runs,
        if res.runs == 1 { "" } else { "s" },
        res.workers
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>()
            .join(","),
        res.machine.cpus,
        res.machine
            .cpu_model
            .as_deref()
            .map_or(String::new(), |m| format!(" ({m})")),
        res.elapsed_s
    );
    let _ = writeln!(
        o,
        "speedup = serial median / median (higher is better); vs best peer = median / the \
         fastest peer's median at the same workers (below 1: faster)"
    );
    for k in &res.kernels {
        let _ = writeln!(o, "\n{}", kernel_heading(res, k));
        if let Some(note) = kernel_note(k) {
            let _ = writeln!(o, "  {note}");
        }
        let _ = writeln!(o, "  {}", result_line(res.kernel_result(k)));
        let rows: Vec<[String; 6]> = res.kernel_rows(k).map(table_cells).collect();
        let mut width = TABLE_HEAD.map(|h| h.chars().count());
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut line = |cells: [&str; 6]| {
            let mut s = String::from(" ");
            for (i, (c, w)) in cells.iter().zip(width).enumerate() {
                let pad = w - c.chars().count();
                match i {
                    0 | 5 => {
                        s.push_str(c);
                        s.push_str(&" ".repeat(pad));
                    }
                    _ => {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                }
                s.push_str("  ");
            }
            let _ = writeln!(o, "{}", s.trim_end());
        };
        line(TABLE_HEAD);
        for r in &rows {
            line(r.each_ref().map(String::as_str));
        }
        for nm in res.not_measured.iter().filter(|x| x.kernel == *k) {
            let _ = writeln!(o, "  not measured: {}: {}", nm.runtime, nm.reason);
        }
    }
    if let Some(si) = &res.small_input {
        small_input_table(&mut o, si);
    }
    if !res.splice.is_empty() {
        let _ = writeln!(
            o,
            "\nspliced stencils (magpie splice, window 8): unspliced ÷ spliced time, every \
             spliced grid checked bit for bit against the unspliced one"
        );
        for s in &res.splice {
            match (&s.outcome, &s.error) {
                (Some(x), _) => {
                    let _ = writeln!(
                        o,
                        "  {:<8} x{}  n={} steps={} grain={}  spliced {}  unspliced {}  {:.2}×{}",
                        s.kernel,
                        s.workers,
                        x.n,
                        x.steps,
                        x.grain,
                        duration(x.spliced_median_s),
                        duration(x.unspliced_median_s),
                        x.speedup,
                        x.rayon_median_s
                            .map_or(String::new(), |r| format!("  rayon {}", duration(r)))
                    );
                }
                (None, e) => {
                    let _ = writeln!(
                        o,
                        "  {:<8} x{}  failed: {}",
                        s.kernel,
                        s.workers,
                        e.as_deref().unwrap_or("unknown")
                    );
                }
            }
        }
    }
    for l in &res.locality {
        let _ = writeln!(
            o,
            "\n{} locality (n = {}): modelled last-level misses on a virtual {}, median of {} \
             run(s); a model, not timings (this machine has {} socket(s))",
            l.kernel, l.n, l.topology, l.runs, res.machine.sockets
        );
        if let Some(e) = &l.error {
            let _ = writeln!(o, "  not modelled: {e}");
            continue;
        }
        let base = l.rows.first().map_or(1, |r| r.misses.max(1)) as f64;
        let remote_base = l.rows.first().map_or(1, |r| r.remote_bytes.max(1)) as f64;
        for r in &l.rows {
            let _ = writeln!(
                o,
                "  {:<13} {:>12} lines  {:>6.2}× {}   remote {:>9.2} MB  {:>6.2}×",
                r.strategy,
                r.misses,
                r.misses as f64 / base,
                l.rows.first().map_or("", |f| &f.strategy),
                r.remote_bytes as f64 / 1e6,
                r.remote_bytes as f64 / remote_base,
            );
        }
        for r in l.rows.iter().filter(|r| !r.iterations.is_empty()) {
            for line in crate::render::locality::iteration_lines(r, 10) {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    if let Some(c) = &res.corun {
        let _ = writeln!(o, "\nco-run (magpie corun, every sharing mode):");
        match (&c.report, &c.error) {
            (Some(r), _) => o.push_str(&crate::render::corun::table(r)),
            (None, e) => {
                let _ = writeln!(o, "  failed: {}", e.as_deref().unwrap_or("unknown"));
            }
        }
    }
    if let Some(d) = &res.dist {
        o.push_str(&crate::render::dist::table(d));
    }
    // Last, where a terminal leaves it in view: the headline.
    if let Some(h) = crate::model::headline::headline(res) {
        let _ = write!(o, "\n{}", crate::model::headline::text(&h));
    }
    o
}
