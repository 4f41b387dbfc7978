//! Drawing per-rank utilisation timelines (the thesis's Fig. 5.12) from what a task collection
//! records (`magpie_dist::timeline`): [`svg`] draws one panel per iteration, the share of ranks
//! running tasks and stealing over time (stacked; the rest idle) and, for up to [`MAX_ROWS`]
//! ranks, one row per rank. Drawn by `magpie_view::chart`, the plotting layer of magpie's other
//! reports.

use magpie_dist::timeline::{utilisation, Spans, State};
use magpie_view::chart::legend::{Legend, Mark};
use magpie_view::chart::svg::{Anchor, Svg, MARK};
use std::fmt::Write;

/// Ranks drawn one row each; more are drawn as the shares alone.
pub const MAX_ROWS: usize = 32;

/// One iteration to draw: its label, every rank's spans, and its wall time.
pub struct Panel<'a> {
    /// E.g. "iteration 0".
    pub label: String,
    /// Per rank.
    pub ranks: &'a [Spans],
    /// The iteration's wall time (the slowest rank's), nanoseconds.
    pub wall_ns: u64,
}

const TASK_COLOUR: &str = "#3b8b4e";
const STEAL_COLOUR: &str = "#e08a1e";
const IDLE_COLOUR: &str = "#d9d9d9";

/// An SVG of the panels, one under the other, titled `title`: per panel, the shares of ranks
/// running tasks and stealing over time, and a row per rank when there are at most
/// [`MAX_ROWS`] of them. Each panel's time axis is its own iteration's. Drawn with
/// `magpie_view::chart`, the plotting layer of magpie's other reports.
pub fn svg(title: &str, panels: &[Panel<'_>]) -> String {
    const W: f64 = 760.0;
    const LEFT: f64 = 60.0;
    const PLOT_W: f64 = W - LEFT - 20.0;
    const SHARE_H: f64 = 110.0;
    const ROW_H: f64 = 8.0;
    const BINS: usize = 200;
    let heights: Vec<f64> = panels
        .iter()
        .map(|p| {
            let rows = if p.ranks.len() <= MAX_ROWS {
                p.ranks.len() as f64 * ROW_H + 10.0
            } else {
                0.0
            };
            30.0 + SHARE_H + 30.0 + rows
        })
        .collect();
    let h = 60.0 + heights.iter().sum::<f64>();
    let mut s = Svg::new(W, h, title, Some("rank-timeline"));
    s.text(
        LEFT,
        20.0,
        14.0,
        Anchor::Start,
        "font-weight=\"600\"",
        title,
    );
    let mut legend = Legend::new(11.0);
    for (name, colour) in [
        ("running tasks", TASK_COLOUR),
        ("stealing", STEAL_COLOUR),
        ("idle", IDLE_COLOUR),
    ] {
        legend.push(name, Mark::Swatch(colour.to_string(), None));
    }
    legend.draw(&mut s, LEFT, 30.0, PLOT_W);
    let mut y = 60.0;
    for (p, ph) in panels.iter().zip(&heights) {
        let u = utilisation(p.ranks, p.wall_ns, BINS);
        let ms = p.wall_ns as f64 * 1e-6;
        let busy = u.task.iter().sum::<f64>() / BINS as f64;
        s.text(
            LEFT,
            y + 12.0,
            11.0,
            Anchor::Start,
            "",
            &format!(
                "{} — {} ranks, {:.3} ms, {:.0}% of rank-time running tasks",
                p.label,
                p.ranks.len(),
                ms,
                busy * 100.0
            ),
        );
        let top = y + 20.0;
        s.rect(
            LEFT,
            top,
            PLOT_W,
            SHARE_H,
            &format!("fill=\"{IDLE_COLOUR}\""),
        );
        // Stacked areas: tasks from the bottom, stealing above them.
        let bx = |i: usize| LEFT + PLOT_W * i as f64 / BINS as f64;
        let sy = |share: f64| top + SHARE_H * (1.0 - share);
        let area = |lo: &dyn Fn(usize) -> f64, hi: &dyn Fn(usize) -> f64| {
            let mut d = format!("M{:.1},{:.1}", bx(0), sy(hi(0)));
            for i in 0..BINS {
                let _ = write!(
                    d,
                    " L{:.1},{:.1} L{:.1},{:.1}",
                    bx(i),
                    sy(hi(i)),
                    bx(i + 1),
                    sy(hi(i))
                );
            }
            for i in (0..BINS).rev() {
                let _ = write!(
                    d,
                    " L{:.1},{:.1} L{:.1},{:.1}",
                    bx(i + 1),
                    sy(lo(i)),
                    bx(i),
                    sy(lo(i))
                );
            }
            d.push_str(" Z");
            d
        };
        let task = area(&|_| 0.0, &|i| u.task[i]);
        let steal = area(&|i| u.task[i], &|i| (u.task[i] + u.steal[i]).min(1.0));
        s.path(&task, &format!("{MARK} fill=\"{TASK_COLOUR}\""));
        s.path(&steal, &format!("{MARK} fill=\"{STEAL_COLOUR}\""));
        for (frac, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
            s.text(LEFT - 4.0, sy(frac) + 4.0, 11.0, Anchor::End, "", label);
        }
        let axis = top + SHARE_H + 14.0;
        for k in 0..=4 {
            let anchor = match k {
                0 => Anchor::Start,
                4 => Anchor::End,
                _ => Anchor::Middle,
            };
            s.text(
                LEFT + PLOT_W * k as f64 / 4.0,
                axis,
                11.0,
                anchor,
                "",
                &format!("{:.3} ms", ms * k as f64 / 4.0),
            );
        }
        if p.ranks.len() <= MAX_ROWS {
            let rows_top = axis + 10.0;
            let scale = PLOT_W / p.wall_ns.max(1) as f64;
            for (r, spans) in p.ranks.iter().enumerate() {
                let ry = rows_top + r as f64 * ROW_H;
                s.rect(
                    LEFT,
                    ry,
                    PLOT_W,
                    ROW_H - 1.0,
                    &format!("fill=\"{IDLE_COLOUR}\""),
                );
                s.text(
                    LEFT - 4.0,
                    ry + ROW_H - 1.0,
                    8.0,
                    Anchor::End,
                    "",
                    &r.to_string(),
                );
                for sp in &spans.0 {
                    let colour = match sp.state {
                        State::Task => TASK_COLOUR,
                        State::Steal => STEAL_COLOUR,
                        State::Idle => continue,
                    };
                    let x = LEFT + sp.start_ns.min(p.wall_ns) as f64 * scale;
                    let w = ((sp.end_ns.min(p.wall_ns) - sp.start_ns.min(p.wall_ns)) as f64
                        * scale)
                        .max(0.5);
                    s.rect(x, ry, w, ROW_H - 1.0, &format!("{MARK} fill=\"{colour}\""));
                }
            }
        }
        y += ph;
    }
    let mut out = s.finish();
    out.push('\n');
    out
}

/// [`svg`] of a run's first and last iteration (one panel when it ran one), each rank's spans
/// as it recorded them.
pub fn first_and_last(
    title: &str,
    iterations: &[magpie_dist::collection::IterationReport],
) -> String {
    let drawn: Vec<&magpie_dist::collection::IterationReport> = match iterations {
        [] => vec![],
        [only] => vec![only],
        [first, .., last] => vec![first, last],
    };
    let spans: Vec<Vec<Spans>> = drawn
        .iter()
        .map(|r| r.ranks.iter().map(|x| x.timeline.clone()).collect())
        .collect();
    let panels: Vec<Panel<'_>> = drawn
        .iter()
        .zip(&spans)
        .map(|(r, s)| Panel {
            label: format!("iteration {}", r.iteration),
            ranks: s,
            wall_ns: r.wall_ns(),
        })
        .collect();
    svg(title, &panels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use magpie_dist::timeline::Span;

    #[test]
    fn the_svg_has_a_panel_per_iteration_and_rows_for_few_ranks() {
        let r = vec![
            Spans(vec![Span {
                start_ns: 0,
                end_ns: 10,
                state: State::Task,
            }]);
            3
        ];
        let out = svg(
            "hf <steal>",
            &[
                Panel {
                    label: "iteration 0".into(),
                    ranks: &r,
                    wall_ns: 20,
                },
                Panel {
                    label: "iteration 9".into(),
                    ranks: &r,
                    wall_ns: 20,
                },
            ],
        );
        assert!(out.starts_with("<svg") && out.trim_end().ends_with("</svg>"));
        assert!(out.contains("hf &lt;steal&gt;"));
        assert!(out.contains("iteration 9"));
        assert_eq!(
            out.matches(r#"font-size="8""#).count(),
            6,
            "a row label per rank"
        );
        assert!(out.contains("50% of rank-time running tasks"));
        // Per panel two shares and a rect per rank, all data marks.
        assert_eq!(out.matches(r#"class="mark""#).count(), 2 * (2 + 3));
    }

    #[test]
    fn a_run_draws_its_first_and_last_iteration() {
        use magpie_dist::collection::{IterationReport, RankReport};
        let it = |i: u32| IterationReport {
            iteration: i,
            ranks: vec![
                RankReport {
                    wall_ns: 100,
                    timeline: Spans(vec![Span {
                        start_ns: 0,
                        end_ns: 50,
                        state: State::Task,
                    }]),
                    ..Default::default()
                };
                2
            ],
        };
        let panels = |n: u32| {
            let its: Vec<IterationReport> = (0..n).map(it).collect();
            first_and_last("t", &its).matches("— 2 ranks").count()
        };
        assert_eq!((panels(0), panels(1), panels(2), panels(5)), (0, 1, 2, 2));
        let its: Vec<IterationReport> = (0..5).map(it).collect();
        let out = first_and_last("t", &its);
        assert!(out.contains("iteration 0 —") && out.contains("iteration 4 —"));
        assert!(!out.contains("iteration 2 —"));
    }
}
