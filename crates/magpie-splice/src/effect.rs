//! Effects: what a call or a step reads and writes (the thesis's §7.3), as values a program's
//! own types define.
//!
//! An effect type says when two effects *interfere*: when running the two pieces of code they
//! describe in the other order could change what either reads or leaves behind. That is the
//! only question the splicing scheduler asks of an effect. The effect of a call is *inclusive*:
//! it covers every step the call will run, so one test against a call's effect stands for tests
//! against all of its steps (the hierarchical check of §7.6). A continuation's effect (what is
//! left of a phase after some position) is never written by the user: the scheduler forms it
//! from the effects of the calls still to come.
//!
//! [`Rows`] is the effect of the grid kernels: sets of rows of numbered buffers, read or
//! written, as half-open ranges. Two half-open ranges overlap when each starts before the other
//! ends; neighbouring blocks (one ending where the next starts) do not, and an empty range
//! overlaps nothing (the thesis's walkthrough compares with `<=` and calls neighbours
//! conflicting).

use std::ops::Range;

/// What a piece of code reads and writes, as the scheduler sees it.
pub trait Effect: Send + Sync {
    /// Whether running the code of `self` and of `other` in the other order could change what
    /// either reads or what they leave behind: one writes what the other reads or writes.
    /// Must be symmetric.
    fn interferes(&self, other: &Self) -> bool;

    /// Whether `self` includes `inner`: everything `inner` reads or writes, `self` declares
    /// the same way (a write covers a read). The scheduler checks that every call covers its
    /// children, since it skips a call's steps when the call's effect does not interfere.
    fn covers(&self, inner: &Self) -> bool;

    /// Bytes the effect takes while a step holding it waits (for the statistics).
    fn bytes(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// Whether two half-open ranges share an element.
pub fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < a.end && b.start < b.end && a.start < b.end && b.start < a.end
}

/// Rows `rows` of buffer `buf`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// The buffer's index in its [`crate::Grids`].
    pub buf: usize,
    /// The rows, half-open.
    pub rows: Range<usize>,
}

impl Span {
    /// Rows `rows` of buffer `buf`.
    pub fn new(buf: usize, rows: Range<usize>) -> Span {
        Span { buf, rows }
    }

    fn meets(&self, o: &Span) -> bool {
        self.buf == o.buf && overlaps(&self.rows, &o.rows)
    }

    fn contains(&self, buf: usize, row: usize) -> bool {
        self.buf == buf && self.rows.contains(&row)
    }
}

/// Rows of buffers read and written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// Read.
    pub reads: Vec<Span>,
    /// Written.
    pub writes: Vec<Span>,
}

impl Rows {
    /// No rows.
    pub fn new() -> Rows {
        Rows::default()
    }

    /// Also reads rows `rows` of buffer `buf`.
    pub fn read(mut self, buf: usize, rows: Range<usize>) -> Rows {
        self.reads.push(Span::new(buf, rows));
        self
    }

    /// Also writes rows `rows` of buffer `buf`.
    pub fn write(mut self, buf: usize, rows: Range<usize>) -> Rows {
        self.writes.push(Span::new(buf, rows));
        self
    }

    /// Whether row `row` of buffer `buf` is declared read.
    pub fn reads_row(&self, buf: usize, row: usize) -> bool {
        self.reads.iter().any(|s| s.contains(buf, row))
    }

    /// Whether row `row` of buffer `buf` is declared written.
    pub fn writes_row(&self, buf: usize, row: usize) -> bool {
        self.writes.iter().any(|s| s.contains(buf, row))
    }
}

/// Whether the union of `outer`'s spans of buffer `s.buf` contains all of `s`'s rows.
fn covered(outer: &[&Span], s: &Span) -> bool {
    let mut spans: Vec<&Range<usize>> = outer
        .iter()
        .filter(|o| o.buf == s.buf && o.rows.start < o.rows.end)
        .map(|o| &o.rows)
        .collect();
    spans.sort_by_key(|r| r.start);
    let mut at = s.rows.start;
    for r in spans {
        if at >= s.rows.end {
            break;
        }
        if r.start > at {
            return false;
        }
        at = at.max(r.end);
    }
    at >= s.rows.end
}

impl Effect for Rows {
    fn covers(&self, inner: &Rows) -> bool {
        let readable: Vec<&Span> = self.reads.iter().chain(&self.writes).collect();
        let writable: Vec<&Span> = self.writes.iter().collect();
        inner.reads.iter().all(|s| covered(&readable, s))
            && inner.writes.iter().all(|s| covered(&writable, s))
    }

    fn interferes(&self, o: &Rows) -> bool {
        let hits = |w: &[Span], x: &[Span]| w.iter().any(|a| x.iter().any(|b| a.meets(b)));
        hits(&self.writes, &o.reads)
            || hits(&self.writes, &o.writes)
            || hits(&o.writes, &self.reads)
    }

    fn bytes(&self) -> usize {
        std::mem::size_of::<Rows>()
            + (self.reads.len() + self.writes.len()) * std::mem::size_of::<Span>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_open_ranges_overlap_only_when_they_share_an_element() {
        assert!(overlaps(&(0..4), &(3..5)));
        assert!(!overlaps(&(0..4), &(4..8)), "neighbours do not overlap");
        assert!(!overlaps(&(4..8), &(0..4)));
        assert!(
            !overlaps(&(2..2), &(0..8)),
            "an empty range overlaps nothing"
        );
        assert!(!overlaps(&(0..8), &(5..5)));
        assert!(overlaps(&(0..8), &(2..3)), "containment");
        for a in 0..6 {
            for b in a..7 {
                for c in 0..6 {
                    for d in c..7 {
                        let brute = (a..b).any(|x| (c..d).contains(&x));
                        assert_eq!(overlaps(&(a..b), &(c..d)), brute, "{a}..{b} {c}..{d}");
                        assert_eq!(overlaps(&(a..b), &(c..d)), overlaps(&(c..d), &(a..b)));
                    }
                }
            }
        }
    }

    #[test]
    fn rows_interfere_on_a_write_to_a_shared_row_of_one_buffer() {
        let r = |rows| Rows::new().read(0, rows);
        let w = |rows| Rows::new().write(0, rows);
        assert!(!r(0..4).interferes(&r(0..4)), "reads never interfere");
        assert!(w(0..4).interferes(&r(3..6)));
        assert!(r(3..6).interferes(&w(0..4)), "symmetric");
        assert!(w(0..4).interferes(&w(2..3)));
        assert!(!w(0..4).interferes(&r(4..6)), "neighbouring blocks");
        assert!(
            !w(0..4).interferes(&Rows::new().read(1, 0..4)),
            "another buffer"
        );
        assert!(!w(0..0).interferes(&w(0..9)), "empty");
    }

    #[test]
    fn covering_is_containment_in_the_union_of_spans() {
        let outer = Rows::new().read(0, 0..4).read(0, 4..8).write(1, 2..6);
        assert!(outer.covers(&Rows::new().read(0, 1..7)), "across two spans");
        assert!(
            outer.covers(&Rows::new().read(1, 3..4)),
            "a write covers a read"
        );
        assert!(
            !outer.covers(&Rows::new().write(0, 1..2)),
            "a read does not cover a write"
        );
        assert!(!outer.covers(&Rows::new().read(0, 7..9)), "past the end");
        assert!(
            !Rows::new()
                .read(0, 0..3)
                .read(0, 4..8)
                .covers(&Rows::new().read(0, 2..5)),
            "a gap"
        );
        assert!(outer.covers(&Rows::new().read(3, 5..5)), "empty");
    }
}
