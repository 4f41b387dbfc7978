//! The SVG writer: an `<svg>` element with a white background, built element by element.
//!
//! Geometry is written with at most two decimals. Style arguments (`fill="#fff" stroke=...`)
//! are attribute text that the chart code writes itself; anything that comes from data (titles,
//! labels, hover tips) is passed as text and escaped here.

use std::fmt::Write as _;

/// The font stack of every chart: the system's UI font, DejaVu Sans where there is none.
pub const FONT: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif";

/// The class of every element that shows data (a bar, a segment, a curve), as opposed to
/// axes, grids, labels and legends: `scripts/check-report.sh` fails a chart that has none of
/// them with a size in the rendered page, a chart that draws nothing.
pub const MARK: &str = "class=\"mark\"";

/// Escapes text for HTML and SVG content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Text anchors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on the point.
    Middle,
    /// The text ends at the point.
    End,
}

impl Anchor {
    fn attr(self) -> &'static str {
        match self {
            Anchor::Start => "",
            Anchor::Middle => " text-anchor=\"middle\"",
            Anchor::End => " text-anchor=\"end\"",
        }
    }
}

/// An SVG document being written.
pub struct Svg {
    out: String,
}

impl Svg {
    /// An `<svg>` of `width` × `height` pixels (with `class` when given; `label` is its
    /// accessible name), on a white background.
    pub fn new(width: f64, height: f64, label: &str, class: Option<&str>) -> Svg {
        let mut out = String::new();
        let class = class.map_or(String::new(), |c| format!(" class=\"{}\"", esc(c)));
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\"{class} width=\"{width:.0}\" \
             height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" \
             aria-label=\"{}\" font-family=\"{FONT}\">\n<rect x=\"0\" y=\"0\" width=\"{width:.0}\" \
             height=\"{height:.0}\" fill=\"#fff\"/>",
            esc(label)
        );
        Svg { out }
    }

    /// A rectangle; `style` is its other attributes.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" {style}/>"
        );
    }

    /// A rectangle with a hover tip.
    pub fn rect_tip(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str, tip: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" {style}><title>{}</title></rect>",
            esc(tip)
        );
    }

    /// Text at (`x`, `y`), the baseline's left end, centre or right end by `anchor`.
    pub fn text(&mut self, x: f64, y: f64, size: f64, anchor: Anchor, style: &str, s: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\"{} {style}>{}</text>",
            anchor.attr(),
            esc(s)
        );
    }

    /// Text turned to read upwards, with its anchor point at (`x`, `y`).
    pub fn upright_text(
        &mut self,
        x: f64,
        y: f64,
        size: f64,
        anchor: Anchor,
        style: &str,
        s: &str,
    ) {
        let _ = writeln!(
            self.out,
            "<text transform=\"translate({x:.1} {y:.1}) rotate(-90)\" font-size=\"{size}\"{} \
             {style}>{}</text>",
            anchor.attr(),
            esc(s)
        );
    }

    /// A chart's title at the top left.
    pub fn title(&mut self, x: f64, y: f64, s: &str) {
        self.text(
            x,
            y,
            15.0,
            Anchor::Start,
            "font-weight=\"600\" fill=\"#222\"",
            s,
        );
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
        let _ = writeln!(
            self.out,
            "<line x1=\"{x1:.2}\" y1=\"{y1:.2}\" x2=\"{x2:.2}\" y2=\"{y2:.2}\" {style}/>"
        );
    }

    /// A path with data `d` (built by the chart code from numbers).
    pub fn path(&mut self, d: &str, style: &str) {
        let _ = writeln!(self.out, "<path d=\"{d}\" {style}/>");
    }

    /// Opens a group with the given attributes; `close_group` ends it.
    pub fn open_group(&mut self, attrs: &str) {
        let _ = writeln!(self.out, "<g {attrs}>");
    }

    /// Opens a group that carries a hover tip for everything in it.
    pub fn open_group_tip(&mut self, tip: &str) {
        let _ = writeln!(self.out, "<g><title>{}</title>", esc(tip));
    }

    /// Ends the innermost open group.
    pub fn close_group(&mut self) {
        self.out.push_str("</g>\n");
    }

    /// The finished `<svg>` element.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_elements_close() {
        assert_eq!(
            esc("a<b & \"c\" 'd'"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;"
        );
        let mut s = Svg::new(100.0, 50.0, "a <chart>", Some("c"));
        s.rect_tip(1.0, 2.0, 3.0, 4.0, "fill=\"#000\"", "x < y");
        s.text(5.0, 6.0, 11.0, Anchor::End, "", "</svg>");
        s.open_group_tip("tip");
        s.line(0.0, 0.0, 1.0, 1.0, "stroke=\"#000\"");
        s.close_group();
        let out = s.finish();
        assert!(out.starts_with("<svg xmlns") && out.ends_with("</svg>"));
        assert_eq!(out.matches("</svg>").count(), 1);
        assert!(out.contains("aria-label=\"a &lt;chart&gt;\"") && out.contains("class=\"c\""));
        assert!(out.contains("<title>x &lt; y</title>"));
        assert!(out.contains("text-anchor=\"end\" >&lt;/svg&gt;</text>"));
    }
}
