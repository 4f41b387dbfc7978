//! Axes: where a value goes on the page, and which round values get a tick and a label.

/// A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks up to `max`.
pub fn nice_step(max: f64, target: f64) -> f64 {
    let raw = max / target;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// The multiples of `step` from 0 to `max` (a hair past it, so rounding does not drop the last).
pub fn multiples(max: f64, step: f64) -> Vec<f64> {
    let n = (max / step + 1e-9).floor().max(0.0) as usize;
    (0..=n).map(|k| k as f64 * step).collect()
}

/// A tick's label with as many decimals as the step needs.
pub fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    format!("{v:.decimals$}")
}

/// A value on a bar in at most four characters up to 999: `.054` below 0.1, then two decimals
/// below 10, one below 100, none above.
pub fn short(v: f64) -> String {
    if v < 0.0995 {
        let t = format!("{v:.3}");
        t.strip_prefix('0').unwrap_or(&t).to_string()
    } else if v < 9.995 {
        format!("{v:.2}")
    } else if v < 99.95 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// A time span's unit for an axis: (name, nanoseconds per unit).
pub fn time_unit(span_ns: f64) -> (&'static str, f64) {
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

/// Nanoseconds in the unit `time_unit` picks for them, three decimals.
pub fn fmt_ns(ns: f64) -> String {
    let (u, per) = time_unit(ns);
    format!("{:.3} {u}", ns / per)
}

/// A vertical value axis: where values go and the ticks.
pub struct Scale {
    /// Logarithmic (ratios) rather than linear.
    pub log: bool,
    /// The value at the bottom of the axis.
    pub lo: f64,
    /// The value at the top.
    pub hi: f64,
    /// The pixel row of `lo`.
    pub y_lo: f64,
    /// The pixel row of `hi`.
    pub y_hi: f64,
    /// The ticks: value and label.
    pub ticks: Vec<(f64, String)>,
}

impl Scale {
    /// From 0 to a round value above `vmax`, about `target` ticks.
    pub fn linear(vmax: f64, target: f64, y_lo: f64, y_hi: f64) -> Scale {
        let vmax = if vmax > 0.0 { vmax } else { 1.0 };
        let step = nice_step(vmax * 1.08, target);
        let hi = ((vmax * 1.08) / step).ceil() * step;
        Scale::linear_to(hi, step, y_lo, y_hi)
    }

    /// From 0 to `hi`, a tick every `step`.
    pub fn linear_to(hi: f64, step: f64, y_lo: f64, y_hi: f64) -> Scale {
        let ticks = multiples(hi, step)
            .into_iter()
            .map(|v| (v, tick_label(v, step)))
            .collect();
        Scale {
            log: false,
            lo: 0.0,
            hi,
            y_lo,
            y_hi,
            ticks,
        }
    }

    /// Logarithmic, from below `vmin` to above `vmax`, and at least from 0.5 to 2; ticks at
    /// the 1-2-5 values inside (only the powers of ten when there would be too many).
    pub fn log(vmin: f64, vmax: f64, y_lo: f64, y_hi: f64) -> Scale {
        let lo = (vmin / 1.25).min(0.5);
        let hi = (vmax * 1.25).max(2.0);
        let mut ticks: Vec<(f64, i32)> = vec![];
        let mut e = lo.log10().floor() as i32;
        while 10f64.powi(e) <= hi {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powi(e);
                if (lo..=hi).contains(&v) {
                    ticks.push((v, e));
                }
            }
            e += 1;
        }
        if ticks.len() > 10 {
            ticks.retain(|&(v, e)| (v / 10f64.powi(e) - 1.0).abs() < 1e-9);
        }
        Scale {
            log: true,
            lo,
            hi,
            y_lo,
            y_hi,
            ticks: ticks
                .into_iter()
                .map(|(v, e)| {
                    let decimals = (-e).max(0) as usize;
                    (v, format!("{v:.decimals$}"))
                })
                .collect(),
        }
    }

    /// The pixel row of `v` (clamped to the axis).
    pub fn y(&self, v: f64) -> f64 {
        let f = if self.log {
            let v = v.clamp(self.lo, self.hi);
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo)
        };
        self.y_lo - f * (self.y_lo - self.y_hi)
    }

    /// Where bars start: 1 on a logarithmic axis (ratios), else 0.
    pub fn origin(&self) -> f64 {
        if self.log {
            1.0
        } else {
            0.0
        }
    }

    /// Gridlines across [`x0`, `x1`] and the tick labels left of `x0`.
    pub fn draw(&self, svg: &mut super::Svg, x0: f64, x1: f64, size: f64) {
        for (v, label) in &self.ticks {
            let ty = self.y(*v);
            svg.line(x0, ty, x1, ty, "stroke=\"#e6e6e6\" stroke-width=\"1\"");
            svg.text(
                x0 - 6.0,
                ty + size * 0.36,
                size,
                super::svg::Anchor::End,
                "fill=\"#555\"",
                label,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_labels() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(1.3, 5.0), 0.5);
        assert_eq!(multiples(1.0, 0.25), [0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(multiples(0.3, 0.1).len(), 4);
        assert_eq!(short(1.234), "1.23");
        assert_eq!(short(0.0543), ".054");
        assert_eq!(short(0.0996), "0.10");
        assert_eq!(short(12.34), "12.3");
        assert_eq!(short(123.4), "123");
        assert_eq!(tick_label(0.5, 0.5), "0.5");
        assert_eq!(tick_label(4.0, 2.0), "4");
        assert_eq!(time_unit(1.5e6), ("µs", 1e3));
        assert_eq!(fmt_ns(2.5e9), "2.500 s");
        let labels = |s: Scale| s.ticks.into_iter().map(|t| t.1).collect::<Vec<_>>();
        assert_eq!(labels(Scale::log(0.9, 1.1, 100.0, 0.0)), ["0.5", "1", "2"]);
        assert_eq!(labels(Scale::log(0.3, 1.1, 100.0, 0.0)), ["0.5", "1", "2"]);
        assert_eq!(
            labels(Scale::log(0.03, 21.0, 100.0, 0.0)),
            ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20"]
        );
        assert_eq!(
            labels(Scale::log(0.002, 300.0, 100.0, 0.0)),
            ["0.01", "0.1", "1", "10", "100"]
        );
        let lin = Scale::linear(2.2, 5.0, 100.0, 0.0);
        assert_eq!(labels(lin), ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]);
        let lin = Scale::linear(2.2, 5.0, 100.0, 0.0);
        assert_eq!((lin.y(0.0), lin.y(2.5), lin.y(9.0)), (100.0, 0.0, 0.0));
    }
}
