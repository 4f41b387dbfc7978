//! Splitting at separators: `par_split` of slices and strings, and the string iterators built
//! on it (`par_lines`, `par_split_whitespace`, `par_split_terminator`), with `par_chars`,
//! `par_char_indices` and `par_bytes` (rayon's `ParallelString`).
//!
//! # Pieces end at separators
//!
//! A field is what lies between two separators (or an end of the input). A piece here is a
//! run of whole fields: the input between two separators that were cut out, so the pieces'
//! fields, in order, are the input's fields. Splitting a piece at base position `i` looks for
//! the first separator at or after `i` (a string rounds `i` to a character boundary first):
//! the left piece is what precedes it, the right piece what follows, and the separator itself
//! belongs to neither. Splitting a piece with no separator after `i` leaves it whole and gives
//! an empty right piece (no fields, not one empty field: the flag `fields` tells the two
//! apart). The search costs at most one field's length per split, so a piece is split where
//! the lazy scheduler asks (see the module doc of `iter`), not cut into fields up front.
//!
//! A piece's own fields are then the standard library's `split` of it. Only the piece that
//! reaches the end of the input (`last`) knows whether the input's final field is really a
//! field: `split_terminator` drops an empty final field, and `lines` keeps a `\r` on a final
//! line that no `\n` ends. Pieces before it end at a cut-out separator, so their final field
//! is a real one, terminated like the others.

use super::{IndexedParallelIterator, ParallelIterator};
use std::sync::Arc;

/// A piece of a slice split at the elements `pred` accepts (see the module doc).
pub struct Split<'a, T, P> {
    slice: &'a [T],
    fields: bool,
    pred: Arc<P>,
}

impl<'a, T, P> Split<'a, T, P> {
    pub(super) fn new(slice: &'a [T], pred: P) -> Self {
        Split {
            slice,
            fields: true,
            pred: Arc::new(pred),
        }
    }
}

/// The first separator at or after `i` in `v`.
fn separator_after<T>(v: &[T], i: usize, pred: impl Fn(&T) -> bool) -> Option<usize> {
    v.get(i..)?.iter().position(pred).map(|p| i + p)
}

impl<'a, T: Sync, P: Fn(&T) -> bool + Sync + Send> ParallelIterator for Split<'a, T, P> {
    type Item = &'a [T];
    type Seq = Fields<'a, T, P>;

    fn base_len(&self) -> usize {
        // One position past the end: a piece of no elements still holds one (empty) field.
        if self.fields {
            self.slice.len() + 1
        } else {
            0
        }
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let empty = |pred| Split {
            slice: &[],
            fields: false,
            pred,
        };
        match separator_after(self.slice, i, &*self.pred) {
            Some(s) if self.fields => (
                Split {
                    slice: &self.slice[..s],
                    fields: true,
                    pred: self.pred.clone(),
                },
                Split {
                    slice: &self.slice[s + 1..],
                    fields: true,
                    pred: self.pred,
                },
            ),
            _ => {
                let pred = self.pred.clone();
                (self, empty(pred))
            }
        }
    }
    fn into_seq(self) -> Self::Seq {
        Fields {
            rest: self.fields.then_some(self.slice),
            pred: self.pred,
        }
    }
}

/// A piece of a mutable slice split at the elements `pred` accepts (see the module doc).
pub struct SplitMut<'a, T, P> {
    slice: &'a mut [T],
    fields: bool,
    pred: Arc<P>,
}

impl<'a, T, P> SplitMut<'a, T, P> {
    pub(super) fn new(slice: &'a mut [T], pred: P) -> Self {
        SplitMut {
            slice,
            fields: true,
            pred: Arc::new(pred),
        }
    }
}

impl<'a, T: Send, P: Fn(&T) -> bool + Sync + Send> ParallelIterator for SplitMut<'a, T, P> {
    type Item = &'a mut [T];
    type Seq = FieldsMut<'a, T, P>;

    fn base_len(&self) -> usize {
        if self.fields {
            self.slice.len() + 1
        } else {
            0
        }
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        match separator_after(self.slice, i, &*self.pred) {
            Some(s) if self.fields => {
                let (l, r) = self.slice.split_at_mut(s);
                (
                    SplitMut {
                        slice: l,
                        fields: true,
                        pred: self.pred.clone(),
                    },
                    SplitMut {
                        slice: &mut r[1..],
                        fields: true,
                        pred: self.pred,
                    },
                )
            }
            _ => {
                let pred = self.pred.clone();
                (
                    self,
                    SplitMut {
                        slice: &mut [],
                        fields: false,
                        pred,
                    },
                )
            }
        }
    }
    fn into_seq(self) -> Self::Seq {
        FieldsMut {
            rest: self.fields.then_some(self.slice),
            pred: self.pred,
        }
    }
}

/// The fields of one piece of a [`Split`], in order (`None` once the last is out; an empty
/// piece starts there).
pub struct Fields<'a, T, P> {
    rest: Option<&'a [T]>,
    pred: Arc<P>,
}

impl<'a, T, P: Fn(&T) -> bool> Iterator for Fields<'a, T, P> {
    type Item = &'a [T];
    fn next(&mut self) -> Option<&'a [T]> {
        let r = self.rest?;
        match r.iter().position(&*self.pred) {
            Some(s) => {
                self.rest = Some(&r[s + 1..]);
                Some(&r[..s])
            }
            None => self.rest.take(),
        }
    }
}

/// The fields of one piece of a [`SplitMut`].
pub struct FieldsMut<'a, T, P> {
    rest: Option<&'a mut [T]>,
    pred: Arc<P>,
}

impl<'a, T, P: Fn(&T) -> bool> Iterator for FieldsMut<'a, T, P> {
    type Item = &'a mut [T];
    fn next(&mut self) -> Option<&'a mut [T]> {
        let r = self.rest.take()?;
        match r.iter().position(&*self.pred) {
            Some(s) => {
                let (field, after) = r.split_at_mut(s);
                self.rest = Some(&mut after[1..]);
                Some(field)
            }
            None => Some(r),
        }
    }
}

/// What separates a string's fields: a `char`, a slice or array of `char`s (any of them), or a
/// closure that accepts the separating `char`s (rayon's `Pattern`).
pub trait Pattern: Sync + Send {
    /// The first separator in `s`: where it starts and how many bytes it takes.
    fn find_in(&self, s: &str) -> Option<(usize, usize)>;
}

impl Pattern for char {
    fn find_in(&self, s: &str) -> Option<(usize, usize)> {
        s.find(*self).map(|p| (p, self.len_utf8()))
    }
}

/// The byte length of the `char` that starts at `p` in `s`.
fn char_len_at(s: &str, p: usize) -> usize {
    s[p..].chars().next().map_or(0, char::len_utf8)
}

impl Pattern for &[char] {
    fn find_in(&self, s: &str) -> Option<(usize, usize)> {
        s.find(*self).map(|p| (p, char_len_at(s, p)))
    }
}

impl<const N: usize> Pattern for [char; N] {
    fn find_in(&self, s: &str) -> Option<(usize, usize)> {
        s.find(&self[..]).map(|p| (p, char_len_at(s, p)))
    }
}

impl<const N: usize> Pattern for &[char; N] {
    fn find_in(&self, s: &str) -> Option<(usize, usize)> {
        s.find(&self[..]).map(|p| (p, char_len_at(s, p)))
    }
}

impl<F: Fn(char) -> bool + Sync + Send> Pattern for F {
    fn find_in(&self, s: &str) -> Option<(usize, usize)> {
        s.find(self).map(|p| (p, char_len_at(s, p)))
    }
}

/// `i` moved forward to the next character boundary of `s` (or its end).
fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

/// How a string piece's fields are read (see the module doc).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Every field.
    Split,
    /// An empty final field of the input is no field.
    Terminator,
    /// As `Terminator`, and a `\r` before a field's `\n` is cut off.
    Lines,
}

/// A piece of a string split at a [`Pattern`] (`par_split`, `par_split_terminator`,
/// `par_lines`; see the module doc).
pub struct StrSplit<'a, P> {
    s: &'a str,
    fields: bool,
    last: bool,
    mode: Mode,
    pat: Arc<P>,
}

/// [`ParallelString::par_split_terminator`]'s iterator.
pub type SplitTerminator<'a, P> = StrSplit<'a, P>;

/// [`ParallelString::par_lines`]'s iterator.
pub type Lines<'a> = StrSplit<'a, char>;

impl<'a, P: Pattern> ParallelIterator for StrSplit<'a, P> {
    type Item = &'a str;
    type Seq = StrFields<'a, P>;

    fn base_len(&self) -> usize {
        if self.fields {
            self.s.len() + 1
        } else {
            0
        }
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let b = ceil_boundary(self.s, i);
        match self.pat.find_in(&self.s[b..]) {
            Some((p, len)) if self.fields => (
                StrSplit {
                    s: &self.s[..b + p],
                    last: false,
                    pat: self.pat.clone(),
                    ..self
                },
                StrSplit {
                    s: &self.s[b + p + len..],
                    ..self
                },
            ),
            _ => {
                let empty = StrSplit {
                    s: "",
                    fields: false,
                    pat: self.pat.clone(),
                    ..self
                };
                (self, empty)
            }
        }
    }
    fn into_seq(self) -> Self::Seq {
        StrFields {
            rest: self.fields.then_some(self.s),
            last: self.last,
            mode: self.mode,
            pat: self.pat,
        }
    }
}

/// The fields of one piece of a [`StrSplit`], in order.
pub struct StrFields<'a, P> {
    rest: Option<&'a str>,
    last: bool,
    mode: Mode,
    pat: Arc<P>,
}

impl<'a, P: Pattern> Iterator for StrFields<'a, P> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        let r = self.rest?;
        let (field, ended) = match self.pat.find_in(r) {
            Some((p, len)) => {
                self.rest = Some(&r[p + len..]);
                (&r[..p], true)
            }
            None => {
                self.rest = None;
                // A piece before the last ends at a separator that was cut out.
                (r, !self.last)
            }
        };
        match self.mode {
            Mode::Split => Some(field),
            _ if !ended && field.is_empty() => None,
            Mode::Lines if ended => Some(field.strip_suffix('\r').unwrap_or(field)),
            _ => Some(field),
        }
    }
}

/// A piece of a string's whitespace-separated words ([`ParallelString::par_split_whitespace`]).
pub struct SplitWhitespace<'a> {
    s: &'a str,
}

impl<'a> ParallelIterator for SplitWhitespace<'a> {
    type Item = &'a str;
    type Seq = std::str::SplitWhitespace<'a>;

    fn base_len(&self) -> usize {
        self.s.len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        // A cut at whitespace never splits a word; runs of it give no empty words anyway.
        let b = ceil_boundary(self.s, i);
        match self.s[b..].find(char::is_whitespace) {
            Some(p) => (
                SplitWhitespace {
                    s: &self.s[..b + p],
                },
                SplitWhitespace {
                    s: &self.s[b + p..],
                },
            ),
            None => (self, SplitWhitespace { s: "" }),
        }
    }
    fn into_seq(self) -> Self::Seq {
        self.s.split_whitespace()
    }
}

/// A string's `char`s in parallel ([`ParallelString::par_chars`]).
pub struct Chars<'a> {
    s: &'a str,
}

impl<'a> ParallelIterator for Chars<'a> {
    type Item = char;
    type Seq = std::str::Chars<'a>;

    fn base_len(&self) -> usize {
        self.s.len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.s.split_at(ceil_boundary(self.s, i));
        (Chars { s: l }, Chars { s: r })
    }
    fn into_seq(self) -> Self::Seq {
        self.s.chars()
    }
}

/// A string's `char`s with their byte offsets ([`ParallelString::par_char_indices`]).
pub struct CharIndices<'a> {
    s: &'a str,
    offset: usize,
}

impl<'a> ParallelIterator for CharIndices<'a> {
    type Item = (usize, char);
    type Seq = OffsetCharIndices<'a>;

    fn base_len(&self) -> usize {
        self.s.len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let b = ceil_boundary(self.s, i);
        let (l, r) = self.s.split_at(b);
        (
            CharIndices {
                s: l,
                offset: self.offset,
            },
            CharIndices {
                s: r,
                offset: self.offset + b,
            },
        )
    }
    fn into_seq(self) -> Self::Seq {
        OffsetCharIndices {
            it: self.s.char_indices(),
            offset: self.offset,
        }
    }
}

/// One piece of [`CharIndices`]: the piece's `char_indices` moved to the string's offsets.
pub struct OffsetCharIndices<'a> {
    it: std::str::CharIndices<'a>,
    offset: usize,
}

impl Iterator for OffsetCharIndices<'_> {
    type Item = (usize, char);
    fn next(&mut self) -> Option<(usize, char)> {
        self.it.next().map(|(i, c)| (i + self.offset, c))
    }
}

/// A string's bytes in parallel ([`ParallelString::par_bytes`]; indexed).
pub struct Bytes<'a> {
    b: &'a [u8],
}

impl<'a> ParallelIterator for Bytes<'a> {
    type Item = u8;
    type Seq = std::iter::Copied<std::slice::Iter<'a, u8>>;

    fn base_len(&self) -> usize {
        self.b.len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.b.split_at(i);
        (Bytes { b: l }, Bytes { b: r })
    }
    fn into_seq(self) -> Self::Seq {
        self.b.iter().copied()
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.b.len())
    }
}

impl IndexedParallelIterator for Bytes<'_> {}

/// Parallel views of a string (rayon's `ParallelString`). Every iterator yields what the
/// standard library's method of the same name without `par_` yields, in the same order.
///
/// ```
/// use magpie_iter::prelude::*;
///
/// let text = "the quick\r\nbrown fox\n\njumps";
/// let lines: Vec<&str> = text.par_lines().collect();
/// assert_eq!(lines, text.lines().collect::<Vec<_>>());
/// assert_eq!(text.par_split_whitespace().count(), 5);
/// let fields: Vec<&str> = "a,b,,c".par_split(',').collect();
/// assert_eq!(fields, ["a", "b", "", "c"]);
/// ```
pub trait ParallelString {
    /// The string.
    fn as_parallel_string(&self) -> &str;

    /// The `char`s.
    fn par_chars(&self) -> Chars<'_> {
        Chars {
            s: self.as_parallel_string(),
        }
    }

    /// The `char`s with their byte offsets.
    fn par_char_indices(&self) -> CharIndices<'_> {
        CharIndices {
            s: self.as_parallel_string(),
            offset: 0,
        }
    }

    /// The bytes.
    fn par_bytes(&self) -> Bytes<'_> {
        Bytes {
            b: self.as_parallel_string().as_bytes(),
        }
    }

    /// The fields between separators (`str::split`; empty fields included).
    fn par_split<P: Pattern>(&self, separator: P) -> StrSplit<'_, P> {
        str_split(self.as_parallel_string(), separator, Mode::Split)
    }

    /// The fields each ended by a terminator, the last one optionally (`str::split_terminator`:
    /// an empty final field is none).
    fn par_split_terminator<P: Pattern>(&self, terminator: P) -> SplitTerminator<'_, P> {
        str_split(self.as_parallel_string(), terminator, Mode::Terminator)
    }

    /// The lines, without their `\n` or `\r\n` (`str::lines`).
    fn par_lines(&self) -> Lines<'_> {
        str_split(self.as_parallel_string(), '\n', Mode::Lines)
    }

    /// The words between runs of whitespace (`str::split_whitespace`).
    fn par_split_whitespace(&self) -> SplitWhitespace<'_> {
        SplitWhitespace {
            s: self.as_parallel_string(),
        }
    }
}

fn str_split<P: Pattern>(s: &str, pat: P, mode: Mode) -> StrSplit<'_, P> {
    StrSplit {
        s,
        fields: true,
        last: true,
        mode,
        pat: Arc::new(pat),
    }
}

impl ParallelString for str {
    fn as_parallel_string(&self) -> &str {
        self
    }
}
