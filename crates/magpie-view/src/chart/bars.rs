//! Grouped bar charts: one group per label on the x axis (a worker count, a peer), one bar per
//! series in each group, on a linear axis from 0 or a logarithmic one from 1 (ratios).

use super::axis::{short, Scale};
use super::legend::{text_w, Legend, Mark};
use super::svg::{Anchor, Svg, MARK};

/// One bar of a chart.
#[derive(Clone, Debug, Default)]
pub struct Bar {
    /// Its height in the chart's unit; `None` draws no bar.
    pub value: Option<f64>,
    /// Written upright in place of a bar that has no value (`stopped`, `failed`).
    pub missing: Option<&'static str>,
    /// Hover text.
    pub tip: String,
}

/// A grouped bar chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Drawn at the top left.
    pub title: String,
    /// Along the y axis.
    pub y_label: String,
    /// Labels under the groups.
    pub groups: Vec<String>,
    /// Series: legend name and fill colour (and an optional outline colour).
    pub series: Vec<(String, String, Option<String>)>,
    /// `bars[series][group]`.
    pub bars: Vec<Vec<Bar>>,
    /// A dashed horizontal line at this value, labelled at its right end.
    pub reference: Option<(f64, String)>,
    /// A logarithmic y axis with bars from 1 (for ratios); else linear with bars from 0.
    pub log: bool,
    /// Labels under runs of groups (`1 worker` under the peers measured with 1 worker) and how
    /// many groups each spans; empty for none.
    pub supergroups: Vec<(String, usize)>,
}

const BAR_W: f64 = 28.0;
const BAR_GAP: f64 = 3.0;
const GROUP_GAP: f64 = 28.0;
const LEFT: f64 = 66.0;
const RIGHT: f64 = 54.0;
const PLOT_H: f64 = 240.0;
const TITLE_H: f64 = 34.0;
const VALUE_ROOM: f64 = 18.0;
const BOTTOM: f64 = 40.0;
/// Charts wider than this get narrower gaps between groups.
const MAX_W: f64 = 1080.0;

impl Chart {
    fn legend(&self) -> Legend {
        let mut l = Legend::new(12.0);
        for (name, fill, stroke) in &self.series {
            l.push(name.clone(), Mark::Swatch(fill.clone(), stroke.clone()));
        }
        l
    }

    /// The chart as one `<svg>` element, sized in pixels for its content.
    pub fn svg(&self) -> String {
        let g = self.groups.len().max(1) as f64;
        let s = self.series.len().max(1) as f64;
        let group_w = s * BAR_W + (s - 1.0) * BAR_GAP;
        // Each group's slot is wide enough for its bars and for its label.
        let label_w = self
            .groups
            .iter()
            .map(|l| text_w(l, 12.0) + 12.0)
            .fold(0.0, f64::max);
        // Narrower gaps between groups where the chart would not fit a page (down to what the
        // labels need).
        let fit = (MAX_W - LEFT - RIGHT) / g - group_w;
        let gap = GROUP_GAP.min(fit).max(12.0);
        let legend = self.legend();
        let title_w = text_w(&self.title, 15.0) * 1.05 + 24.0;
        let plot_w = (g * (group_w + gap).max(label_w))
            .max(360.0)
            .max(title_w - LEFT - RIGHT)
            .max(legend.widest() - LEFT - RIGHT + 24.0);
        let width = (LEFT + plot_w + RIGHT).ceil();
        let legend_w = width - 24.0;
        let top = TITLE_H + legend.height(legend_w) + VALUE_ROOM;
        let base = top + PLOT_H;
        let bottom = if self.supergroups.is_empty() {
            BOTTOM
        } else {
            BOTTOM + 20.0
        };
        let height = (base + bottom).ceil();

        let values = || {
            self.bars
                .iter()
                .flatten()
                .filter_map(|b| b.value)
                .filter(|v| v.is_finite() && *v > 0.0)
        };
        let vmax = values()
            .chain(self.reference.as_ref().map(|r| r.0))
            .fold(0.0, f64::max);
        let scale = if self.log {
            let vmin = values().fold(1.0, f64::min);
            // Room under the bottom of the range for the labels of bars that hang down to it.
            Scale::log(vmin, vmax, base - 16.0, top)
        } else {
            Scale::linear(vmax, 5.0, base, top)
        };
        let y = |v: f64| scale.y(v);

        let mut o = Svg::new(width, height, &self.title, None);
        o.title(12.0, 22.0, &self.title);
        legend.draw(&mut o, 12.0, TITLE_H, legend_w);
        scale.draw(&mut o, LEFT, LEFT + plot_w, 11.0);
        o.line(
            LEFT,
            base,
            LEFT + plot_w,
            base,
            "stroke=\"#888\" stroke-width=\"1\"",
        );
        o.upright_text(
            16.0,
            top + PLOT_H / 2.0,
            12.0,
            Anchor::Middle,
            "fill=\"#444\"",
            &self.y_label,
        );
        // Bars, group by group.
        let slot = plot_w / g;
        for (gi, label) in self.groups.iter().enumerate() {
            let gx = LEFT + slot * gi as f64 + (slot - group_w) / 2.0;
            for (si, (_, fill, stroke)) in self.series.iter().enumerate() {
                let Some(bar) = self.bars.get(si).and_then(|b| b.get(gi)) else {
                    continue;
                };
                let bx = gx + si as f64 * (BAR_W + BAR_GAP);
                let cx = bx + BAR_W / 2.0;
                match (bar.value, bar.missing) {
                    (Some(v), _) if v.is_finite() && v > 0.0 => {
                        let (y0, y1) = (y(scale.origin()), y(v));
                        let h = (y0 - y1).abs().max(1.0);
                        let up = v >= scale.origin();
                        let (rect_y, label_y) = if up {
                            (y0 - h, y1 - 4.0)
                        } else {
                            (y0, y1 + 13.0)
                        };
                        let stroke = stroke.as_ref().map_or(String::new(), |s| {
                            format!(" stroke=\"{s}\" stroke-width=\"1\"")
                        });
                        o.rect_tip(
                            bx,
                            rect_y,
                            BAR_W,
                            h,
                            &format!("{MARK} fill=\"{fill}\"{stroke}"),
                            &bar.tip,
                        );
                        o.text(
                            cx,
                            label_y,
                            11.0,
                            Anchor::Middle,
                            "fill=\"#222\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\"",
                            &short(v),
                        );
                    }
                    (_, Some(word)) => {
                        o.open_group_tip(&bar.tip);
                        o.rect(
                            bx,
                            base - 60.0,
                            BAR_W,
                            60.0,
                            &format!(
                                "{MARK} fill=\"none\" stroke=\"{fill}\" stroke-dasharray=\"3 3\""
                            ),
                        );
                        o.upright_text(
                            cx + 4.0,
                            base - 6.0,
                            11.0,
                            Anchor::Start,
                            "fill=\"#666\"",
                            word,
                        );
                        o.close_group();
                    }
                    _ => {}
                }
            }
            o.text(
                LEFT + slot * (gi as f64 + 0.5),
                base + 18.0,
                12.0,
                Anchor::Middle,
                "fill=\"#333\"",
                label,
            );
        }
        // Supergroups: a label centred under their groups, separated by thin rules.
        let mut first = 0;
        for (i, (label, count)) in self.supergroups.iter().enumerate() {
            let x0 = LEFT + slot * first as f64;
            let x1 = LEFT + slot * (first + count) as f64;
            if i > 0 {
                o.line(
                    x0,
                    top,
                    x0,
                    base + 42.0,
                    "stroke=\"#c8c8c8\" stroke-width=\"1\"",
                );
            }
            o.text(
                (x0 + x1) / 2.0,
                base + 38.0,
                12.0,
                Anchor::Middle,
                "font-weight=\"600\" fill=\"#333\"",
                label,
            );
            first += count;
        }
        if let Some((v, label)) = &self.reference {
            let ry = y(*v);
            o.line(
                LEFT,
                ry,
                LEFT + plot_w,
                ry,
                "stroke=\"#444\" stroke-width=\"1.2\" stroke-dasharray=\"5 4\"",
            );
            o.text(
                LEFT + plot_w + 5.0,
                ry + 4.0,
                11.0,
                Anchor::Start,
                "fill=\"#444\"",
                label,
            );
        }
        o.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_draws_bars_ticks_and_legend() {
        let chart = Chart {
            title: "t".into(),
            y_label: "y".into(),
            groups: vec!["1 worker".into(), "2 workers".into()],
            series: (0..8)
                .map(|i| (format!("series {i}"), "#123456".to_string(), None))
                .collect(),
            bars: (0..8)
                .map(|i| {
                    vec![
                        Bar {
                            value: Some(i as f64 + 0.5),
                            missing: None,
                            tip: "x".into(),
                        },
                        Bar {
                            value: None,
                            missing: Some("stopped"),
                            tip: "s".into(),
                        },
                    ]
                })
                .collect(),
            reference: Some((1.0, "serial".into())),
            log: false,
            supergroups: vec![],
        };
        let svg = chart.svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches(">series ").count(), 8);
        assert_eq!(svg.matches(">stopped</text>").count(), 8);
        assert_eq!(svg.matches("<title>x</title></rect>").count(), 8);
        assert!(svg.contains(">7.50</text>") && svg.contains(">serial</text>"));
    }
}
