//! Where parallel iterators come from: ranges, slices (by reference, by mutable reference, in
//! chunks), vectors (by value), and the conversion traits with rayon's names
//! (`into_par_iter`, `par_iter`, `par_iter_mut`, `par_chunks`, `par_chunks_mut`). All split
//! without `unsafe`: slices with `split_at(_mut)`, vectors with `split_off`.

use super::{IndexedParallelIterator, ParallelIterator};
use std::ops::Range;

/// Something that becomes a parallel iterator (rayon's `IntoParallelIterator`).
pub trait IntoParallelIterator {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// What it yields.
    type Item: Send;
    /// The parallel iterator over `self`.
    fn into_par_iter(self) -> Self::Iter;
}

impl<P: ParallelIterator> IntoParallelIterator for P {
    type Iter = P;
    type Item = P::Item;
    fn into_par_iter(self) -> P {
        self
    }
}

/// `par_iter()`: a parallel iterator over references into a collection.
pub trait IntoParallelRefIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// What it yields (references).
    type Item: Send + 'data;
    /// The parallel iterator over `&self`.
    fn par_iter(&'data self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefIterator<'data> for I
where
    &'data I: IntoParallelIterator,
{
    type Iter = <&'data I as IntoParallelIterator>::Iter;
    type Item = <&'data I as IntoParallelIterator>::Item;
    fn par_iter(&'data self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// `par_iter_mut()`: a parallel iterator over mutable references into a collection.
pub trait IntoParallelRefMutIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// What it yields (mutable references).
    type Item: Send + 'data;
    /// The parallel iterator over `&mut self`.
    fn par_iter_mut(&'data mut self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefMutIterator<'data> for I
where
    &'data mut I: IntoParallelIterator,
{
    type Iter = <&'data mut I as IntoParallelIterator>::Iter;
    type Item = <&'data mut I as IntoParallelIterator>::Item;
    fn par_iter_mut(&'data mut self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// A range of integers, in parallel.
#[derive(Clone, Debug)]
pub struct RangeIter<T> {
    range: Range<T>,
}

/// The integer types whose ranges are parallel iterators. One generic implementation serves
/// them all, so that an unsuffixed literal range (`(0..n).into_par_iter()`) infers its type as
/// it does for a sequential one.
pub trait RangeInteger: Copy + Ord + Send + Sync + 'static {
    /// The range's length.
    #[doc(hidden)]
    fn range_len(r: &Range<Self>) -> usize;
    /// `start + i`.
    #[doc(hidden)]
    fn plus(start: Self, i: usize) -> Self;
}

macro_rules! range_integers {
    ($($t:ty),*) => {$(
        impl RangeInteger for $t {
            fn range_len(r: &Range<$t>) -> usize {
                let n = (r.end as i128 - r.start as i128).max(0);
                usize::try_from(n).expect("a parallel range longer than usize::MAX")
            }
            fn plus(start: $t, i: usize) -> $t {
                (start as i128 + i as i128) as $t
            }
        }
    )*};
}

range_integers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl<T: RangeInteger> ParallelIterator for RangeIter<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Item = T;
    type Seq = Range<T>;
    fn base_len(&self) -> usize {
        T::range_len(&self.range)
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let mid = T::plus(self.range.start, i);
        (
            RangeIter {
                range: self.range.start..mid,
            },
            RangeIter {
                range: mid..self.range.end,
            },
        )
    }
    fn into_seq(self) -> Range<T> {
        self.range
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.base_len())
    }
}

impl<T: RangeInteger> IndexedParallelIterator for RangeIter<T> where Range<T>: Iterator<Item = T> {}

impl<T: RangeInteger> IntoParallelIterator for Range<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Iter = RangeIter<T>;
    type Item = T;
    fn into_par_iter(self) -> RangeIter<T> {
        let start = self.start;
        RangeIter {
            range: start..self.end.max(start),
        }
    }
}

/// An inclusive range is the exclusive range below its end, then the end (which may be the
/// type's largest value, where no exclusive range reaches).
impl<T: RangeInteger> IntoParallelIterator for std::ops::RangeInclusive<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Iter = super::Chain<RangeIter<T>, VecIntoIter<T>>;
    type Item = T;
    fn into_par_iter(self) -> Self::Iter {
        let empty = self.is_empty();
        let (start, end) = self.into_inner();
        match empty {
            true => (start..start).into_par_iter().chain(None),
            false => (start..end).into_par_iter().chain(Some(end)),
        }
    }
}

/// A slice's elements by reference, in parallel.
#[derive(Debug)]
pub struct Iter<'a, T> {
    slice: &'a [T],
}

impl<'a, T: Sync> ParallelIterator for Iter<'a, T> {
    type Item = &'a T;
    type Seq = std::slice::Iter<'a, T>;
    fn base_len(&self) -> usize {
        self.slice.len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.slice.split_at(i);
        (Iter { slice: l }, Iter { slice: r })
    }
    fn into_seq(self) -> Self::Seq {
        self.slice.iter()
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.base_len())
    }
}

impl<T: Sync> IndexedParallelIterator for Iter<'_, T> {}

/// A slice's elements by mutable reference, in parallel.
#[derive(Debug)]
pub struct IterMut<'a, T> {
    slice: &'a mut [T],
}

impl<'a, T: Send> ParallelIterator for IterMut<'a, T> {
    type Item = &'a mut T;
    type Seq = std::slice::IterMut<'a, T>;
    fn base_len(&self) -> usize {
        self.slice.len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.slice.split_at_mut(i);
        (IterMut { slice: l }, IterMut { slice: r })
    }
    fn into_seq(self) -> Self::Seq {
        self.slice.iter_mut()
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.base_len())
    }
}

impl<T: Send> IndexedParallelIterator for IterMut<'_, T> {}

/// A vector's elements by value, in parallel (splitting moves the right part to a vector of
/// its own).
#[derive(Debug)]
pub struct VecIntoIter<T> {
    vec: Vec<T>,
}

impl<T: Send> ParallelIterator for VecIntoIter<T> {
    type Item = T;
    type Seq = std::vec::IntoIter<T>;
    fn base_len(&self) -> usize {
        self.vec.len()
    }
    fn split_at(mut self, i: usize) -> (Self, Self) {
        let r = self.vec.split_off(i);
        (self, VecIntoIter { vec: r })
    }
    fn into_seq(self) -> Self::Seq {
        self.vec.into_iter()
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.base_len())
    }
}

impl<T: Send> IndexedParallelIterator for VecIntoIter<T> {}

impl<T: Send> IntoParallelIterator for Vec<T> {
    type Iter = VecIntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> VecIntoIter<T> {
        VecIntoIter { vec: self }
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a [T] {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter { slice: self }
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a Vec<T> {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter { slice: self }
    }
}

impl<'a, T: Sync, const N: usize> IntoParallelIterator for &'a [T; N] {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter { slice: self }
    }
}

impl<'a, T: Send> IntoParallelIterator for &'a mut [T] {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut { slice: self }
    }
}

impl<'a, T: Send> IntoParallelIterator for &'a mut Vec<T> {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut { slice: self }
    }
}

impl<'a, T: Send, const N: usize> IntoParallelIterator for &'a mut [T; N] {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut { slice: self }
    }
}

/// A slice in chunks of `size` elements (the last may be shorter), in parallel.
#[derive(Debug)]
pub struct Chunks<'a, T> {
    slice: &'a [T],
    size: usize,
}

impl<'a, T: Sync> ParallelIterator for Chunks<'a, T> {
    type Item = &'a [T];
    type Seq = std::slice::Chunks<'a, T>;
    fn base_len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.slice.split_at((i * self.size).min(self.slice.len()));
        let size = self.size;
        (Chunks { slice: l, size }, Chunks { slice: r, size })
    }
    fn into_seq(self) -> Self::Seq {
        self.slice.chunks(self.size)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.base_len())
    }
}

impl<T: Sync> IndexedParallelIterator for Chunks<'_, T> {}

/// A mutable slice in chunks of `size` elements, in parallel.
#[derive(Debug)]
pub struct ChunksMut<'a, T> {
    slice: &'a mut [T],
    size: usize,
}

impl<'a, T: Send> ParallelIterator for ChunksMut<'a, T> {
    type Item = &'a mut [T];
    type Seq = std::slice::ChunksMut<'a, T>;
    fn base_len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let at = (i * self.size).min(self.slice.len());
        let size = self.size;
        let (l, r) = self.slice.split_at_mut(at);
        (ChunksMut { slice: l, size }, ChunksMut { slice: r, size })
    }
    fn into_seq(self) -> Self::Seq {
        self.slice.chunks_mut(self.size)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.base_len())
    }
}

impl<T: Send> IndexedParallelIterator for ChunksMut<'_, T> {}

/// Parallel views of a slice (rayon's `ParallelSlice`).
///
/// ```
/// use magpie_iter::prelude::*;
///
/// let v = [1, 2, 0, 3, 4, 0, 5];
/// let sums: Vec<i32> = v.par_chunks(3).map(|c| c.iter().sum()).collect();
/// assert_eq!(sums, [3, 7, 5]);
/// let rising = v.par_windows(2).filter(|w| w[0] < w[1]).count();
/// assert_eq!(rising, 4);
/// let runs: Vec<&[i32]> = v.par_split(|&x| x == 0).collect();
/// assert_eq!(runs, [&[1, 2][..], &[3, 4], &[5]]);
/// ```
pub trait ParallelSlice<T: Sync> {
    /// The slice.
    fn as_parallel_slice(&self) -> &[T];

    /// The slice in chunks of `chunk_size` elements (the last may be shorter). Panics if
    /// `chunk_size` is 0, as rayon's does.
    fn par_chunks(&self, chunk_size: usize) -> Chunks<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        Chunks {
            slice: self.as_parallel_slice(),
            size: chunk_size,
        }
    }

    /// The subslices between the elements `separator` accepts (as `slice::split`: empty ones
    /// included).
    fn par_split<P>(&self, separator: P) -> super::split::Split<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        super::split::Split::new(self.as_parallel_slice(), separator)
    }

    /// The slice's overlapping windows of `window_size` elements. Panics if it is 0.
    fn par_windows(&self, window_size: usize) -> Windows<'_, T> {
        assert!(window_size != 0, "window_size must not be zero");
        Windows {
            slice: self.as_parallel_slice(),
            size: window_size,
        }
    }
}

impl<T: Sync> ParallelSlice<T> for [T] {
    fn as_parallel_slice(&self) -> &[T] {
        self
    }
}

/// Parallel views of a mutable slice (rayon's `ParallelSliceMut`).
///
/// ```
/// use magpie_iter::prelude::*;
///
/// let mut people = vec![("ann", 31), ("bob", 25), ("cid", 31), ("dee", 25)];
/// people.par_sort_by_key(|p| p.1); // stable: ties keep their order
/// assert_eq!(people, [("bob", 25), ("dee", 25), ("ann", 31), ("cid", 31)]);
/// let mut v = vec![5, 3, 9, 1];
/// v.par_sort_unstable();
/// assert_eq!(v, [1, 3, 5, 9]);
/// v.par_chunks_mut(2).for_each(|c| c.reverse());
/// assert_eq!(v, [3, 1, 9, 5]);
/// ```
pub trait ParallelSliceMut<T: Send> {
    /// The slice.
    fn as_parallel_slice_mut(&mut self) -> &mut [T];

    /// The slice in mutable chunks of `chunk_size` elements. Panics if `chunk_size` is 0.
    fn par_chunks_mut(&mut self, chunk_size: usize) -> ChunksMut<'_, T> {
        assert!(chunk_size != 0, "chunk_size must not be zero");
        ChunksMut {
            slice: self.as_parallel_slice_mut(),
            size: chunk_size,
        }
    }

    /// The mutable subslices between the elements `separator` accepts (as `slice::split_mut`).
    fn par_split_mut<P>(&mut self, separator: P) -> super::split::SplitMut<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        super::split::SplitMut::new(self.as_parallel_slice_mut(), separator)
    }

    /// Sorts the slice, stably (equal elements keep their order).
    fn par_sort(&mut self)
    where
        T: Ord,
    {
        self.par_sort_by(T::cmp)
    }

    /// Sorts the slice by `cmp`, stably.
    fn par_sort_by<F>(&mut self, cmp: F)
    where
        F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
    {
        magpie::sort::par_sort_by(self.as_parallel_slice_mut(), cmp)
    }

    /// Sorts the slice by the key `f` gives, stably.
    fn par_sort_by_key<K: Ord, F>(&mut self, f: F)
    where
        F: Fn(&T) -> K + Sync,
    {
        self.par_sort_by(|a, b| f(a).cmp(&f(b)))
    }

    /// Sorts the slice (equal elements in any order).
    fn par_sort_unstable(&mut self)
    where
        T: Ord,
    {
        self.par_sort_unstable_by(T::cmp)
    }

    /// Sorts the slice by `cmp` (equal elements in any order).
    fn par_sort_unstable_by<F>(&mut self, cmp: F)
    where
        F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
    {
        magpie::sort::par_sort_unstable_by(self.as_parallel_slice_mut(), cmp)
    }

    /// Sorts the slice by the key `f` gives (equal keys in any order).
    fn par_sort_unstable_by_key<K: Ord, F>(&mut self, f: F)
    where
        F: Fn(&T) -> K + Sync,
    {
        self.par_sort_unstable_by(|a, b| f(a).cmp(&f(b)))
    }
}

impl<T: Send> ParallelSliceMut<T> for [T] {
    fn as_parallel_slice_mut(&mut self) -> &mut [T] {
        self
    }
}

/// A slice's overlapping windows of `size` elements, in parallel.
#[derive(Debug)]
pub struct Windows<'a, T> {
    slice: &'a [T],
    size: usize,
}

impl<'a, T: Sync> ParallelIterator for Windows<'a, T> {
    type Item = &'a [T];
    type Seq = std::slice::Windows<'a, T>;
    fn base_len(&self) -> usize {
        (self.slice.len() + 1).saturating_sub(self.size)
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let size = self.size;
        let left = &self.slice[..(i + size - 1).min(self.slice.len())];
        let right = &self.slice[i.min(self.slice.len())..];
        (
            Windows { slice: left, size },
            Windows { slice: right, size },
        )
    }
    fn into_seq(self) -> Self::Seq {
        self.slice.windows(self.size)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.base_len())
    }
}

impl<T: Sync> IndexedParallelIterator for Windows<'_, T> {}

impl<T: Send> IntoParallelIterator for Option<T> {
    type Iter = VecIntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> VecIntoIter<T> {
        VecIntoIter {
            vec: self.into_iter().collect(),
        }
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a Option<T> {
    type Iter = Iter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Iter<'a, T> {
        Iter {
            slice: self.as_slice(),
        }
    }
}

/// Maps and sets iterate in parallel over their items gathered into a vector first (their
/// own iterators cannot split), in their own iteration order.
macro_rules! gathered {
    ($($(#[$doc:meta])* [$($g:tt)*] $owned:ty, $item:ty, $by_ref:ty, $ref_item:ty;)*) => {$(
        $(#[$doc])*
        impl<$($g)*> IntoParallelIterator for $owned {
            type Iter = VecIntoIter<$item>;
            type Item = $item;
            fn into_par_iter(self) -> VecIntoIter<$item> {
                VecIntoIter { vec: self.into_iter().collect() }
            }
        }

        impl<'a, $($g)*> IntoParallelIterator for &'a $owned
        where
            $ref_item: Send,
        {
            type Iter = VecIntoIter<$ref_item>;
            type Item = $ref_item;
            fn into_par_iter(self) -> VecIntoIter<$ref_item> {
                VecIntoIter { vec: <$by_ref>::into_iter(self).collect() }
            }
        }
    )*};
}

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

gathered! {
    [K: Send, V: Send, S] HashMap<K, V, S>, (K, V), &'a HashMap<K, V, S>, (&'a K, &'a V);
    [T: Send, S] HashSet<T, S>, T, &'a HashSet<T, S>, &'a T;
    [K: Send, V: Send] BTreeMap<K, V>, (K, V), &'a BTreeMap<K, V>, (&'a K, &'a V);
    [T: Send] BTreeSet<T>, T, &'a BTreeSet<T>, &'a T;
}

/// Adds a parallel iterator's items to a collection (rayon's `ParallelExtend`).
///
/// ```
/// use magpie_iter::prelude::*;
///
/// let mut v = vec![0];
/// v.par_extend((1..4).into_par_iter().map(|x| x * 10));
/// assert_eq!(v, [0, 10, 20, 30]);
/// ```
pub trait ParallelExtend<T: Send> {
    /// Adds `items`, in order for ordered collections.
    fn par_extend<I: IntoParallelIterator<Item = T>>(&mut self, items: I);
}

impl<T: Send> ParallelExtend<T> for Vec<T> {
    fn par_extend<I: IntoParallelIterator<Item = T>>(&mut self, items: I) {
        let mut more: Vec<T> = items.into_par_iter().collect();
        self.append(&mut more);
    }
}
