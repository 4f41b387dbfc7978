//! `index.html` of `magpie corun --out`: one self-contained page (the suite report's CSS, inline
//! SVG drawn with `chart`, no scripts) with the results table and, per mode, a plot of the co-run over time: the
//! cores each program held in the core table (upper panel) and the cores it used, CPU time over
//! wall time (lower panel), as step lines, one colour per program.

use crate::format::count;
use crate::format::{secs, times};
use crate::model::corun::{ModeRow, Report, Sample, Timeline};
use crate::render::style::CSS;
use magpie_view::chart::axis::{multiples, nice_step, tick_label, Scale};
use magpie_view::chart::legend::{Legend, Mark};
use magpie_view::chart::svg::{esc, Anchor, Svg, MARK};
use std::fmt::Write as _;

/// The two programs' colours.
const COLORS: [&str; 2] = ["#1f77b4", "#e8710a"];

const WIDTH: f64 = 960.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 20.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
/// Title and legend.
const TOP: f64 = 74.0;
const PANEL_H: f64 = 150.0;
/// Between the panels: the lower panel's title.
const GAP: f64 = 34.0;
/// The time axis's labels and name.
const BOTTOM: f64 = 46.0;

/// One step of a series: the value over [t0, t1); `None` where it is unknown.
type Step = (f64, f64, Option<f64>);

/// Held cores: each snapshot holds until the next one (the last one until the end).
fn held_steps(samples: &[Sample], who: usize, end: f64) -> Vec<Step> {
    samples
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let t1 = samples.get(k + 1).map_or(end, |n| n.t_s);
            (s.t_s, t1, s.held[who].map(|v| v as f64))
        })
        .collect()
}

/// Used cores: each sample is the mean since the sample before (the first one since go).
fn used_steps(samples: &[Sample], who: usize) -> Vec<Step> {
    let mut t0 = 0.0;
    samples
        .iter()
        .map(|s| {
            let step = (t0, s.t_s, s.used[who]);
            t0 = s.t_s;
            step
        })
        .collect()
}

/// An SVG path of step lines through `steps`, broken where a value is unknown.
fn step_path(steps: &[Step], x: impl Fn(f64) -> f64, y: impl Fn(f64) -> f64) -> String {
    let mut d = String::new();
    let mut joined = false;
    for &(t0, t1, v) in steps {
        match v {
            Some(v) if joined => {
                let _ = write!(d, "V{:.1}H{:.1}", y(v), x(t1));
            }
            Some(v) => {
                let _ = write!(d, "M{:.1},{:.1}H{:.1}", x(t0), y(v), x(t1));
            }
            None => {}
        }
        joined = v.is_some();
    }
    d
}

/// The plot of one mode's co-run.
fn plot(t: &Timeline, wall_s: f64, labels: [&str; 2], cpus: usize) -> String {
    let end = t
        .samples
        .last()
        .map_or(wall_s, |s| s.t_s.max(wall_s))
        .max(1e-3);
    let series: Vec<[Vec<Step>; 2]> = (0..2)
        .map(|w| [held_steps(&t.samples, w, end), used_steps(&t.samples, w)])
        .collect();
    let top_value = series
        .iter()
        .flatten()
        .flatten()
        .filter_map(|s| s.2)
        .fold(cpus as f64, f64::max);
    let ystep = nice_step(top_value, 4.0).max(1.0);
    let ymax = (top_value / ystep).ceil().max(1.0) * ystep;
    let xstep = nice_step(end, 8.0);
    let xticks = multiples(end, xstep);
    let height = TOP + 2.0 * PANEL_H + GAP + BOTTOM;
    let x = |s: f64| LEFT + s.clamp(0.0, end) / end * PLOT_W;
    let line_style = |w: usize| {
        format!(
            "fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" stroke-opacity=\"0.85\"",
            COLORS[w]
        )
    };

    let title = format!(
        "{}: the cores each program held and used while co-running",
        t.mode
    );
    let mut o = Svg::new(WIDTH, height, &title, None);
    o.text(
        LEFT,
        20.0,
        14.0,
        Anchor::Start,
        "font-weight=\"600\"",
        &title,
    );
    let mut legend = Legend::new(12.0);
    for (w, label) in labels.iter().enumerate() {
        legend.push(
            format!("{label}, pid {}", t.pids[w]),
            Mark::Line(line_style(w).replace("fill=\"none\" ", "")),
        );
    }
    legend.draw(&mut o, LEFT, 30.0, PLOT_W);

    let panels = [
        (TOP, "cores held in the core table"),
        (TOP + PANEL_H + GAP, "cores used: CPU time ÷ wall time"),
    ];
    for (p, &(top, panel_title)) in panels.iter().enumerate() {
        let base = top + PANEL_H;
        let scale = Scale::linear_to(ymax, ystep, base, top);
        let y = |v: f64| scale.y(v);
        o.text(
            LEFT,
            top - 6.0,
            12.0,
            Anchor::Start,
            "fill=\"#444\"",
            panel_title,
        );
        scale.draw(&mut o, LEFT, LEFT + PLOT_W, 11.0);
        for &s in &xticks {
            o.line(x(s), top, x(s), base, "stroke=\"#e6e8eb\"");
        }
        // The machine's CPUs, for scale.
        o.line(
            LEFT,
            y(cpus as f64),
            LEFT + PLOT_W,
            y(cpus as f64),
            "stroke=\"#888\" stroke-dasharray=\"4 3\"",
        );
        o.text(
            LEFT + PLOT_W - 2.0,
            y(cpus as f64) - 3.0,
            10.0,
            Anchor::End,
            "fill=\"#666\"",
            &format!("{cpus} CPUs"),
        );
        o.upright_text(
            LEFT - 40.0,
            top + PANEL_H / 2.0,
            11.0,
            Anchor::Middle,
            "",
            "cores",
        );
        for (w, s) in series.iter().enumerate() {
            let d = step_path(&s[p], x, y);
            if !d.is_empty() {
                o.path(&d, &format!("{MARK} {}", line_style(w)));
            }
        }
        o.rect(LEFT, top, PLOT_W, PANEL_H, "fill=\"none\" stroke=\"#aaa\"");
    }
    // The time axis, under the lower panel.
    let base = TOP + 2.0 * PANEL_H + GAP;
    for &s in &xticks {
        o.text(
            x(s),
            base + 16.0,
            11.0,
            Anchor::Middle,
            "",
            &tick_label(s, xstep),
        );
    }
    o.text(
        LEFT + PLOT_W / 2.0,
        base + 36.0,
        12.0,
        Anchor::Middle,
        "",
        "seconds since both programs started",
    );
    o.finish()
}

fn row_cells(r: &ModeRow) -> String {
    let mut o = format!("<td>{}</td>", esc(&r.mode));
    for p in [&r.a, &r.b] {
        let _ = write!(
            o,
            "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td>",
            secs(Some(p.solo_s)),
            secs(Some(p.corun_s)),
            p.runs,
            times(Some(p.slowdown))
        );
    }
    let _ = write!(
        o,
        "<td class=\"num\">{}</td>",
        times(Some(r.combined_slowdown))
    );
    o
}

/// The programs' labels in the plots: "a: fib n=20".
fn labels(r: &Report, who: &[&str; 2]) -> Vec<String> {
    match r.rows.first() {
        Some(row) => [&row.a, &row.b]
            .iter()
            .zip(who)
            .map(|(p, w)| {
                let grain = p.grain.map_or(String::new(), |g| format!(" grain={g}"));
                format!("{w}: {} n={}{grain}", p.kernel, p.n)
            })
            .collect(),
        None => who.iter().map(|w| w.to_string()).collect(),
    }
}

/// The method in one paragraph, and what the plots show.
const METHOD: &str = "DWS §4's method: each program runs alone, then both run side by side, \
     each over and over so their runs overlap fully (Fig. 3); a program's co-run time is the mean \
     of its runs that completed while co-running (Eq. 2). slower = co-run ÷ solo; combined = the \
     sum of both (2.00× = no interference). Cores held: the cores the core table gives each \
     program's pid (only dws and ep take cores). Cores used: each program's CPU time over wall \
     time between two samples, from /proc/&lt;pid&gt;/task/*/schedstat.";

/// The results table and one plot per mode, headed by `level` (`h2` on its own page, `h3` in
/// the suite's).
pub(crate) fn body(r: &Report, who: &[&str; 2], level: &str) -> String {
    let labels = labels(r, who);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<table>\n<tr><th>mode</th>{}<th class=\"num\">combined</th></tr>",
        who.iter()
            .map(|w| format!(
                "<th class=\"num\">{w} solo s</th><th class=\"num\">{w} co-run s</th>\
                 <th class=\"num\">{w} runs</th><th class=\"num\">{w} slower</th>"
            ))
            .collect::<String>()
    );
    for row in &r.rows {
        let _ = writeln!(o, "<tr>{}</tr>", row_cells(row));
    }
    let _ = writeln!(o, "</table>");
    // One timeline per row, in the same order.
    for (t, row) in r.timelines.iter().zip(&r.rows) {
        let _ = writeln!(
            o,
            "<{level}>{} <small>co-run of {:.2} s, {} samples</small></{level}>\n\
             <div class=\"charts\"><figure>{}</figure></div>",
            esc(&t.mode),
            row.corun_wall_s,
            t.samples.len(),
            plot(t, row.corun_wall_s, [&labels[0], &labels[1]], r.cpus)
        );
    }
    o
}

/// What the co-run was: the command, the programs, the runs and the machine.
pub(crate) fn meta(r: &Report, who: &[&str; 2]) -> String {
    let meta = [
        ("command", format!("<code>{}</code>", esc(&r.command))),
        ("programs", esc(&labels(r, who).join(" · "))),
        (
            "each",
            format!(
                "{}; alone {}; co-running until each has ≥ {} and ≥ {} s",
                count(r.workers, "worker"),
                count(r.solo_runs, "run"),
                count(r.runs, "run"),
                r.min_seconds
            ),
        ),
        (
            "machine",
            format!(
                "{} CPUs available; a sample every {} ms",
                r.cpus, r.sample_ms
            ),
        ),
    ];
    let mut o = String::from("<dl class=\"meta\">\n");
    for (k, v) in meta {
        let _ = writeln!(o, "<dt>{k}</dt><dd>{v}</dd>");
    }
    o.push_str("</dl>\n");
    let _ = writeln!(o, "<p class=\"note\">{METHOD}</p>");
    o
}

/// The whole page of `magpie corun --out`. `who` names the two programs ("a", "b").
pub(crate) fn page(r: &Report, who: &[&str; 2]) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>magpie corun</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <h1>magpie corun</h1>\n{}<section>\n<h2>Results</h2>\n{}</section>\n</body>\n</html>\n",
        meta(r, who),
        body(r, who, "h2")
    )
}

/// The table: the two programs, then one line per mode.
pub(crate) fn table(r: &Report) -> String {
    let rows = &r.rows;
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} and {}, {} each; alone {} each, co-running until each has ≥ {} and ≥ {} s\n",
        r.programs[0],
        r.programs[1],
        count(r.workers, "worker"),
        count(r.solo_runs, "run"),
        count(r.runs, "run"),
        r.min_seconds
    );
    let _ = writeln!(
        o,
        "{:<6} {:>10} {:>10} {:>6} {:>9}   {:>10} {:>10} {:>6} {:>9}   {:>8}",
        "mode",
        "a solo s",
        "a co-run s",
        "a runs",
        "a slower",
        "b solo s",
        "b co-run s",
        "b runs",
        "b slower",
        "combined"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "{:<6} {:>10} {:>10} {:>6} {:>9}   {:>10} {:>10} {:>6} {:>9}   {:>8}",
            r.mode,
            secs(Some(r.a.solo_s)),
            secs(Some(r.a.corun_s)),
            r.a.runs,
            times(Some(r.a.slowdown)),
            secs(Some(r.b.solo_s)),
            secs(Some(r.b.corun_s)),
            r.b.runs,
            times(Some(r.b.slowdown)),
            times(Some(r.combined_slowdown))
        );
    }
    let _ = writeln!(
        o,
        "\nsolo s, co-run s: mean seconds of a run alone (under that mode) and co-running; \
         slower = co-run s ÷ the run alone under off (one baseline for every mode); \
         combined = a's + b's (2.00× = no interference)"
    );
    o
}
