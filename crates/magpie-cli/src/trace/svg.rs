//! A trace as one self-contained SVG (no scripts, no external styles): a lane per worker with a
//! rect per segment, coloured by how its phase began; thin lines between lanes for the steals; and
//! under them the utilisation curve, busy workers ÷ workers, in 200 bins over the traced time.
//!
//! The picture stays small whatever the trace's size: within a lane, a segment narrower than half a
//! pixel is drawn as part of the rect before it when it is less than half a pixel from it, and so
//! is a segment of the same phase (so a lane has at most about two rects per pixel); steal lines that would be drawn on the same half pixel between
//! the same two lanes are drawn once. Rects carry a hover title while there are few enough.

use super::{count, origin_name, Kind};
use crate::html::{esc, nice_step};
use magpie::trace::Trace;
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
pub const BINS: usize = 200;
/// Rects with a hover title, at most.
const MAX_TITLES: usize = 4000;
/// Steal lines drawn, at most (after merging those on the same half pixel).
const MAX_STEAL_LINES: usize = 20_000;

/// A lane's height and the gap under it, for `workers` lanes.
fn lane_geometry(workers: usize) -> (f64, f64) {
    let h = (400.0 / workers.max(1) as f64).clamp(3.0, 16.0);
    let gap = if h >= 8.0 { 3.0 } else { 1.0 };
    (h, gap)
}

/// A time span's unit for the axis: (name, nanoseconds per unit).
fn unit(span_ns: f64) -> (&'static str, f64) {
    if span_ns < 2e3 {
        ("ns", 1.0)
    } else if span_ns < 2e6 {
        ("µs", 1e3)
    } else if span_ns < 2e9 {
        ("ms", 1e6)
    } else {
        ("s", 1e9)
    }
}

fn fmt_ns(ns: f64) -> String {
    let (u, per) = unit(ns);
    format!("{:.3} {u}", ns / per)
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
pub fn utilisation(t: &Trace, t0: u64, t1: u64, bins: usize) -> Vec<f64> {
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
pub fn timeline(t: &Trace, title: &str) -> String {
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

    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"{WIDTH}\" \
         height=\"{height:.0}\" viewBox=\"0 0 {WIDTH} {height:.0}\" \
         font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif\">"
    );
    let _ = writeln!(
        o,
        "<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height:.0}\" fill=\"#fff\"/>\n\
         <text x=\"{LEFT}\" y=\"18\" font-size=\"14\" font-weight=\"600\">{}</text>",
        esc(title)
    );
    // Legend.
    let mut lx = LEFT;
    for k in Kind::ALL {
        let _ = writeln!(
            o,
            "<rect x=\"{lx:.1}\" y=\"28\" width=\"11\" height=\"11\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"38\" font-size=\"11\">{}</text>",
            k.color(),
            lx + 15.0,
            k.label()
        );
        lx += 15.0 + k.label().len() as f64 * 6.2 + 14.0;
    }
    let _ = writeln!(
        o,
        "<line x1=\"{lx:.1}\" y1=\"33.5\" x2=\"{:.1}\" y2=\"33.5\" stroke=\"#000\" \
         stroke-opacity=\"0.45\" stroke-width=\"0.8\"/><text x=\"{:.1}\" y=\"38\" \
         font-size=\"11\">steal</text>",
        lx + 14.0,
        lx + 18.0
    );

    // Time ticks: gridlines through lanes and curve, labels under the curve.
    let (uname, per) = unit(span);
    let step = nice_step(span / per, 8.0);
    let mut ticks = vec![];
    let mut v = 0.0;
    while v <= span / per + 1e-9 {
        ticks.push(v);
        v += step;
    }
    for &v in &ticks {
        let tx = LEFT + v * per * scale;
        let _ = writeln!(
            o,
            "<line x1=\"{tx:.1}\" y1=\"{TOP}\" x2=\"{tx:.1}\" y2=\"{axis_y:.1}\" stroke=\"#e6e8eb\" \
             stroke-width=\"1\"/>"
        );
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
        let _ = writeln!(o, "<g class=\"lane\" data-worker=\"{w}\">");
        let _ = writeln!(
            o,
            "<rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{PLOT_W}\" height=\"{lane_h:.1}\" \
             fill=\"#f1f2f4\"/>"
        );
        let every = (9.0 / (lane_h + gap)).ceil().max(1.0) as usize;
        if w % every == 0 {
            let fs = (lane_h + gap).clamp(7.0, 11.0);
            let _ = writeln!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{fs:.0}\" text-anchor=\"end\" \
                 dominant-baseline=\"central\">worker {w}</text>",
                LEFT - 6.0,
                y + lane_h / 2.0
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
            let _ = write!(
                o,
                "<rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{width:.2}\" height=\"{lane_h:.1}\" \
                 fill=\"{}\"{edge}",
                r.x0,
                r.kind.color()
            );
            if titles {
                let what = t.phases[w]
                    .get(r.phase as usize)
                    .map_or_else(|| "?".to_string(), |p| origin_name(&p.origin));
                let more = if r.segs > 1 {
                    format!(" and {} more segment(s)", r.segs - 1)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    o,
                    "><title>worker {w}, phase {}: {}{more}; busy {}, {} – {}</title></rect>",
                    r.phase,
                    esc(&what),
                    fmt_ns(r.busy as f64),
                    fmt_ns((r.start.max(t0) - t0) as f64),
                    fmt_ns((r.end.max(t0) - t0) as f64)
                );
            } else {
                let _ = writeln!(o, "/>");
            }
        }
        let _ = writeln!(o, "</g>");
    }

    // Steals: from the victim's lane to the thief's, when the thief began.
    let mut drawn: HashSet<(u32, u32, i64)> = HashSet::new();
    let mut skipped = 0usize;
    let steals = t.steals();
    let _ = writeln!(
        o,
        "<g class=\"steals\" stroke=\"#000\" stroke-opacity=\"0.45\" stroke-width=\"0.8\">"
    );
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
        let _ = writeln!(
            o,
            "<line x1=\"{sx:.2}\" y1=\"{:.1}\" x2=\"{sx:.2}\" y2=\"{:.1}\"/>",
            lane_y(vw) + lane_h / 2.0,
            lane_y(tw) + lane_h / 2.0
        );
    }
    let _ = writeln!(o, "</g>");

    // Utilisation.
    let util = utilisation(t, t0, t1, BINS);
    let uy = |u: f64| util_top + UTIL_H * (1.0 - u);
    let _ = writeln!(
        o,
        "<rect x=\"{LEFT}\" y=\"{util_top:.1}\" width=\"{PLOT_W}\" height=\"{UTIL_H}\" \
         fill=\"none\" stroke=\"#c9ced6\"/>"
    );
    for (u, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" \
             dominant-baseline=\"central\">{label}</text>",
            LEFT - 6.0,
            uy(u)
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
    let _ = writeln!(
        o,
        "<path class=\"utilisation\" d=\"{d}\" fill=\"#4c78a8\" fill-opacity=\"0.35\" \
         stroke=\"#4c78a8\" stroke-width=\"1\"/>"
    );
    let busy: u64 = t.busy_ns().iter().sum();
    let mean = busy as f64 / (span * workers.max(1) as f64);
    let _ = writeln!(
        o,
        "<line x1=\"{LEFT}\" y1=\"{my:.1}\" x2=\"{:.1}\" y2=\"{my:.1}\" stroke=\"#4c78a8\" \
         stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" \
         fill=\"#2b4a6e\">utilisation (busy workers ÷ {workers}), mean {:.0}%</text>",
        LEFT + PLOT_W,
        LEFT,
        util_top - 4.0,
        mean.min(1.0) * 100.0,
        my = uy(mean.min(1.0)),
    );

    // Axis labels.
    for &v in &ticks {
        let tx = LEFT + v * per * scale;
        let decimals = if step >= 1.0 {
            0
        } else {
            (-step.log10()).ceil() as usize
        };
        let _ = writeln!(
            o,
            "<text x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{v:.decimals$}</text>",
            axis_y + 13.0
        );
    }
    let note = if skipped > 0 {
        format!(", {skipped} steal lines not drawn")
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555\">\
         time since the first segment ({uname}); {} in {}, {}{note}</text>",
        LEFT + PLOT_W / 2.0,
        axis_y + 28.0,
        count(segments, "segment"),
        count(rects, "rect"),
        count(steals.len(), "steal")
    );
    o.push_str("</svg>\n");
    o
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
