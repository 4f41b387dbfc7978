//! A legend: one mark and name per series, flowed left to right into rows that fit a width.

use super::svg::{Anchor, Svg};

/// How a series is marked.
#[derive(Clone, Debug)]
pub enum Mark {
    /// A filled square (bars, rects), with an optional outline colour.
    Swatch(String, Option<String>),
    /// A short line (lines, steps), with its stroke attributes.
    Line(String),
}

/// The legend of a chart.
#[derive(Clone, Debug, Default)]
pub struct Legend {
    /// Names and marks, in order.
    pub items: Vec<(String, Mark)>,
    /// Font size of the names.
    pub size: f64,
}

/// Rough advance of one character at the given font size (sans-serif, mixed text).
pub fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.58
}

impl Legend {
    /// An empty legend whose names are `size` pixels high.
    pub fn new(size: f64) -> Legend {
        Legend {
            items: vec![],
            size,
        }
    }

    /// Adds a series.
    pub fn push(&mut self, name: impl Into<String>, mark: Mark) {
        self.items.push((name.into(), mark));
    }

    fn mark_w(&self, mark: &Mark) -> f64 {
        match mark {
            Mark::Swatch(..) => self.size,
            Mark::Line(_) => 18.0,
        }
    }

    /// The width of one item: mark, gap, name, spacing.
    pub fn item_w(&self, i: usize) -> f64 {
        let (name, mark) = &self.items[i];
        self.mark_w(mark) + 6.0 + text_w(name, self.size) + 18.0
    }

    /// The widest item.
    pub fn widest(&self) -> f64 {
        (0..self.items.len())
            .map(|i| self.item_w(i))
            .fold(0.0, f64::max)
    }

    /// The items' indices in rows no wider than `width` (an item wider than that gets a row).
    pub fn rows(&self, width: f64) -> Vec<Vec<usize>> {
        let mut rows: Vec<Vec<usize>> = vec![vec![]];
        let mut x = 0.0;
        for i in 0..self.items.len() {
            let w = self.item_w(i);
            if x + w > width && !rows.last().is_some_and(|r| r.is_empty()) {
                rows.push(vec![]);
                x = 0.0;
            }
            rows.last_mut().expect("a row").push(i);
            x += w;
        }
        rows
    }

    /// The row height.
    pub fn row_h(&self) -> f64 {
        self.size + 8.0
    }

    /// Its height when flowed into `width`.
    pub fn height(&self, width: f64) -> f64 {
        self.rows(width).len() as f64 * self.row_h()
    }

    /// Draws it with its top left at (`x`, `y`), flowed into `width`.
    pub fn draw(&self, svg: &mut Svg, x: f64, y: f64, width: f64) {
        for (r, row) in self.rows(width).iter().enumerate() {
            let ly = y + r as f64 * self.row_h();
            let mut lx = x;
            for &i in row {
                let (name, mark) = &self.items[i];
                match mark {
                    Mark::Swatch(fill, stroke) => {
                        let stroke = stroke.as_ref().map_or(String::new(), |s| {
                            format!(" stroke=\"{s}\" stroke-width=\"1\"")
                        });
                        svg.rect(
                            lx,
                            ly,
                            self.size,
                            self.size,
                            &format!("rx=\"2\" fill=\"{fill}\"{stroke}"),
                        );
                    }
                    Mark::Line(style) => {
                        let my = ly + self.size / 2.0;
                        svg.line(lx, my, lx + 18.0, my, style);
                    }
                }
                svg.text(
                    lx + self.mark_w(mark) + 6.0,
                    ly + self.size * 0.88,
                    self.size,
                    Anchor::Start,
                    "fill=\"#333\"",
                    name,
                );
                lx += self.item_w(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_flow_into_rows() {
        let mut l = Legend::new(12.0);
        for i in 0..6 {
            l.push(format!("series {i}"), Mark::Swatch("#000".into(), None));
        }
        let one = l.item_w(0);
        assert_eq!(l.rows(one * 6.0).len(), 1);
        assert_eq!(l.rows(one * 2.5), [vec![0, 1], vec![2, 3], vec![4, 5]]);
        // Narrower than one item: one item per row, never an empty row.
        assert_eq!(l.rows(1.0).len(), 6);
        assert_eq!(l.height(one * 2.5), 3.0 * l.row_h());
        let mut svg = Svg::new(400.0, 100.0, "legend", None);
        l.draw(&mut svg, 0.0, 0.0, 400.0);
        assert_eq!(svg.finish().matches(">series ").count(), 6);
    }
}
