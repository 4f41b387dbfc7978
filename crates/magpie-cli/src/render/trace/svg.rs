//! A trace as one self-contained SVG (no scripts, no external styles; drawn with `chart`): a lane per worker with a
//! rect per segment, coloured by how its phase began; thin lines between lanes for the steals; and
//! under them the utilisation curve, busy workers ÷ workers, in 200 bins over the traced time.
//!
//! The picture stays small whatever the trace's size: within a lane, a segment narrower than half a
//! pixel is drawn as part of the rect before it when it is less than half a pixel from it, and so
//! is a segment of the same phase (so a lane has at most about two rects per pixel); steal lines that would be drawn on the same half pixel between
//! the same two lanes are drawn once. Rects carry a hover title while there are few enough.

use super::color;
use crate::format::count;
use crate::model::trace::{origin_name, Kind};
use magpie::trace::Trace;
use magpie_view::chart::axis::{fmt_ns, multiples, nice_step, tick_label, time_unit};
use magpie_view::chart::legend::{Legend, Mark};
use magpie_view::chart::svg::{Anchor, Svg, MARK};
use std::collections::HashSet;
use std::fmt::Write as _;

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 18.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
/// Title and legend.
const TOP: f64 = 50.0;
const UTIL_H: f64 = 80.0;
const AXIS_H: f64 = 34.0;
/// Bins of the utilisation curve.
pub(crate) const BINS: usize = 200;
/// Rects with a hover title, at most.
const MAX_TITLES: usize = 4000;
/// How a steal line looks, in the legend and in the picture.
const STEAL_STYLE: &str = "stroke=\"#000\" stroke-opacity=\"0.45\" stroke-width=\"0.8\"";
/// Steal lines drawn, at most (after merging those on the same half pixel).
const MAX_STEAL_LINES: usize = 20_000;

/// A lane's height and the gap under it, for `workers` lanes.
fn lane_geometry(workers: usize) -> (f64, f64) {
    let h = (400.0 / workers.max(1) as f64).clamp(3.0, 16.0);
    let gap = if h >= 8.0 { 3.0 } else { 1.0 };
    (h, gap)
}

/// A rect being built in a lane.
struct Run {
    kind: Kind,
    x0: f64,
    x1: f64,
    /// Phase of the first segment, segments merged, busy ns, first start, last end.
    phase: u32,
    segs: usize,
    busy: u64,
    start: u64,
    end: u64,
}

/// Busy fraction of the workers in each of `bins` bins of [t0, t1).
pub(crate) fn utilisation(t: &Trace, t0: u64, t1: u64, bins: usize) -> Vec<f64> {
    let span = t1.saturating_sub(t0).max(1) as f64;
    let bins = bins.max(1);
    let w = span / bins as f64;
    let mut busy = vec![0.0f64; bins];
    for segs in &t.segments {
        for s in segs {
            let a = (s.start_ns.clamp(t0, t1) - t0) as f64;
            let b = (s.end_ns.clamp(t0, t1) - t0) as f64;
            if b <= a {
                continue;
            }
            let first = ((a / w) as usize).min(bins - 1);
            let last = ((b / w) as usize).min(bins - 1);
            for (k, cell) in busy.iter_mut().enumerate().take(last + 1).skip(first) {
                let lo = k as f64 * w;
                let hi = lo + w;
                *cell += (b.min(hi) - a.max(lo)).max(0.0);
            }
        }
    }
    let cap = w * t.workers().max(1) as f64;
    busy.into_iter()
        .map(|x| (x / cap).clamp(0.0, 1.0))
        .collect()
}

/// The SVG: `title` at the top, then the lanes, the steals, the utilisation curve and the axis.
pub(crate) fn timeline(t: &Trace, title: &str) -> String {
    let workers = t.workers();
    let (lane_h, gap) = lane_geometry(workers);
    let lanes_h = workers as f64 * (lane_h + gap);
    let util_top = TOP + lanes_h + 14.0;
    let axis_y = util_top + UTIL_H;
    let height = axis_y + AXIS_H;

    // The traced time: first segment start to last segment end.
    let t0 = t
        .segments
        .iter()
        .filter_map(|s| s.first().map(|g| g.start_ns))
        .min()
        .unwrap_or(0);
    let t1 = t
        .segments
        .iter()
        .filter_map(|s| s.last().map(|g| g.end_ns))
        .max()
        .unwrap_or(t0)
        .max(t0 + 1);
    let span = (t1 - t0) as f64;
    let scale = PLOT_W / span;
    let x = |ns: u64| LEFT + (ns.clamp(t0, t1) - t0) as f64 * scale;
    let lane_y = |w: usize| TOP + w as f64 * (lane_h + gap);

    let mut o = Svg::new(WIDTH, height, title, Some("timeline"));
    o.text(
        LEFT,
        18.0,
        14.0,
        Anchor::Start,
        "font-weight=\"600\"",
        title,
    );
    let mut legend = Legend::new(11.0);
    for k in Kind::ALL {
        legend.push(k.label(), Mark::Swatch(color(k).to_string(), None));
    }
    legend.push("steal", Mark::Line(STEAL_STYLE.to_string()));
    legend.draw(&mut o, LEFT, 28.0, PLOT_W);

    // Time ticks: gridlines through lanes and curve, labels under the curve.
    let (uname, per) = time_unit(span);
    let step = nice_step(span / per, 8.0);
    let ticks = multiples(span / per, step);
    for &v in &ticks {
        let tx = LEFT + v * per * scale;
        o.line(tx, TOP, tx, axis_y, "stroke=\"#e6e8eb\" stroke-width=\"1\"");
    }

    // Lanes.
    let segments: usize = t.segments.iter().map(Vec::len).sum();
    let mut runs_by_lane: Vec<Vec<Run>> = Vec::with_capacity(workers);
    for (w, segs) in t.segments.iter().enumerate() {
        let mut runs: Vec<Run> = vec![];
        for s in segs {
            let kind = t.phases[w]
                .get(s.phase as usize)
                .map_or(Kind::External, |p| Kind::of(&p.origin));
            let (x0, x1) = (x(s.start_ns), x(s.end_ns));
            if let Some(r) = runs.last_mut() {
                // Close to the rect before and too narrow to see, or the same phase going on.
                let close = x0 - r.x1 < 0.5;
                if close && (x1 - x0 < 0.5 || (r.kind == kind && r.phase == s.phase)) {
                    r.x1 = r.x1.max(x1);
                    r.segs += 1;
                    r.busy = r.busy.saturating_add(s.end_ns - s.start_ns);
                    r.end = s.end_ns;
                    continue;
                }
            }
            runs.push(Run {
                kind,
                x0,
                x1,
                phase: s.phase,
                segs: 1,
                busy: s.end_ns - s.start_ns,
                start: s.start_ns,
                end: s.end_ns,
            });
        }
        runs_by_lane.push(runs);
    }
    let rects: usize = runs_by_lane.iter().map(Vec::len).sum();
    let titles = rects <= MAX_TITLES;
    for (w, runs) in runs_by_lane.iter().enumerate() {
        let y = lane_y(w);
        o.open_group(&format!("class=\"lane\" data-worker=\"{w}\""));
        o.rect(LEFT, y, PLOT_W, lane_h, "fill=\"#f1f2f4\"");
        let every = (9.0 / (lane_h + gap)).ceil().max(1.0) as usize;
        if w % every == 0 {
            let fs = (lane_h + gap).clamp(7.0, 11.0).round();
            o.text(
                LEFT - 6.0,
                y + lane_h / 2.0,
                fs,
                Anchor::End,
                "dominant-baseline=\"central\"",
                &format!("worker {w}"),
            );
        }
        for r in runs {
            let width = (r.x1 - r.x0).max(0.5);
            // A white edge shows where one phase gives way to the next, on rects wide enough.
            let edge = if width >= 3.0 {
                " stroke=\"#fff\" stroke-width=\"0.5\""
            } else {
                ""
            };
            let style = format!("{MARK} fill=\"{}\"{edge}", color(r.kind));
            if titles {
                let what = t.phases[w]
                    .get(r.phase as usize)
                    .map_or_else(|| "?".to_string(), |p| origin_name(&p.origin));
                let more = if r.segs > 1 {
                    format!(" and {} more segment(s)", r.segs - 1)
                } else {
                    String::new()
                };
                let tip = format!(
                    "worker {w}, phase {}: {what}{more}; busy {}, {} – {}",
                    r.phase,
                    fmt_ns(r.busy as f64),
                    fmt_ns((r.start.max(t0) - t0) as f64),
                    fmt_ns((r.end.max(t0) - t0) as f64)
                );
                o.rect_tip(r.x0, y, width, lane_h, &style, &tip);
            } else {
                o.rect(r.x0, y, width, lane_h, &style);
            }
        }
        o.close_group();
    }

    // Steals: from the victim's lane to the thief's, when the thief began.
    let mut drawn: HashSet<(u32, u32, i64)> = HashSet::new();
    let mut skipped = 0usize;
    let steals = t.steals();
    o.open_group(&format!("class=\"steals\" {STEAL_STYLE}"));
    for (victim, thief) in &steals {
        let Some(p) = t.phase(*thief) else { continue };
        let (vw, tw) = (victim.worker as usize, thief.worker as usize);
        if vw >= workers || tw >= workers {
            continue;
        }
        let sx = x(p.start_ns);
        if !drawn.insert((victim.worker, thief.worker, (sx * 2.0).round() as i64)) {
            continue;
        }
        if drawn.len() > MAX_STEAL_LINES {
            skipped += 1;
            continue;
        }
        o.line(
            sx,
            lane_y(vw) + lane_h / 2.0,
            sx,
            lane_y(tw) + lane_h / 2.0,
            "",
        );
    }
    o.close_group();

    // Utilisation.
    let util = utilisation(t, t0, t1, BINS);
    let uy = |u: f64| util_top + UTIL_H * (1.0 - u);
    o.rect(
        LEFT,
        util_top,
        PLOT_W,
        UTIL_H,
        "fill=\"none\" stroke=\"#c9ced6\"",
    );
    for (u, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
        o.text(
            LEFT - 6.0,
            uy(u),
            10.0,
            Anchor::End,
            "dominant-baseline=\"central\"",
            label,
        );
    }
    let bw = PLOT_W / util.len() as f64;
    let mut d = format!("M{LEFT:.2},{:.2}", uy(0.0));
    for (k, &u) in util.iter().enumerate() {
        let _ = write!(
            d,
            " L{:.2},{:.2} L{:.2},{:.2}",
            LEFT + k as f64 * bw,
            uy(u),
            LEFT + (k + 1) as f64 * bw,
            uy(u)
        );
    }
    let _ = write!(d, " L{:.2},{:.2} Z", LEFT + PLOT_W, uy(0.0));
    o.path(
        &d,
        "class=\"utilisation mark\" fill=\"#4c78a8\" fill-opacity=\"0.35\" stroke=\"#4c78a8\" \
         stroke-width=\"1\"",
    );
    let busy: u64 = t.busy_ns().iter().sum();
    let mean = (busy as f64 / (span * workers.max(1) as f64)).min(1.0);
    o.line(
        LEFT,
        uy(mean),
        LEFT + PLOT_W,
        uy(mean),
        "stroke=\"#4c78a8\" stroke-dasharray=\"4 3\"",
    );
    o.text(
        LEFT,
        util_top - 4.0,
        10.0,
        Anchor::Start,
        "fill=\"#2b4a6e\"",
        &format!(
            "utilisation (busy workers ÷ {workers}), mean {:.0}%",
            mean * 100.0
        ),
    );

    // Axis labels.
    for &v in &ticks {
        o.text(
            LEFT + v * per * scale,
            axis_y + 13.0,
            10.0,
            Anchor::Middle,
            "",
            &tick_label(v, step),
        );
    }
    let note = if skipped > 0 {
        format!(", {skipped} steal lines not drawn")
    } else {
        String::new()
    };
    o.text(
        LEFT + PLOT_W / 2.0,
        axis_y + 28.0,
        10.0,
        Anchor::Middle,
        "fill=\"#555\"",
        &format!(
            "time since the first segment ({uname}); {} in {}, {}{note}",
            count(segments, "segment"),
            count(rects, "rect"),
            count(steals.len(), "steal")
        ),
    );
    let mut svg = o.finish();
    svg.push('\n');
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use magpie::trace::{Origin, Phase, Segment};

    fn busy_trace(workers: usize, segs_per_worker: u64) -> Trace {
        Trace {
            policy: magpie::Policy::Adaptive,
            duration_ns: segs_per_worker * 100,
            spawns: 0,
            phases: (0..workers)
                .map(|w| {
                    vec![
                        Phase {
                            origin: Origin::Root { ordinal: w as u64 },
                            start_ns: 0,
                        },
                        Phase {
                            origin: Origin::External,
                            start_ns: 0,
                        },
                    ]
                })
                .collect(),
            // Alternating kinds, 60 ns busy in every 100.
            schedules: vec![],
            segments: (0..workers)
                .map(|_| {
                    (0..segs_per_worker)
                        .map(|k| Segment {
                            phase: (k % 2) as u32,
                            start_ns: k * 100,
                            end_ns: k * 100 + 60,
                        })
                        .collect()
                })
                .collect(),
        }
    }

    #[test]
    fn small_traces_get_a_rect_per_segment_and_a_lane_per_worker() {
        let t = busy_trace(3, 10);
        let svg = timeline(&t, "a <test>");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"lane\"").count(), 3);
        assert_eq!(svg.matches("<title>").count(), 30);
        assert!(svg.contains("a &lt;test&gt;"));
        // 60 ns busy in every 100 on each worker.
        let u = utilisation(&t, 0, 1000, 10);
        assert!(u.iter().all(|&x| (x - 0.6).abs() < 1e-9), "{u:?}");
    }

    #[test]
    fn large_traces_stay_small() {
        // 200,000 segments per worker: far more than pixels.
        let t = busy_trace(4, 200_000);
        let svg = timeline(&t, "big");
        let rects = svg.matches("<rect").count();
        assert!(rects < 4 * 2 * 1000, "{rects} rects");
        assert!(svg.len() < 100_000, "{} bytes", svg.len());
        let u = utilisation(&t, 0, 20_000_000, BINS);
        assert_eq!(u.len(), BINS);
        assert!(u.iter().all(|&x| (x - 0.6).abs() < 0.01), "{u:?}");
    }
}
