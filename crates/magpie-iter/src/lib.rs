//! magpie's own parallel iterators, **retired**: rayon itself runs on magpie's scheduler through
//! magpie's `rayon-core/` (one `[patch.crates-io]` line, see docs/RAYON.md), and is what a
//! program should use. This crate keeps them outside magpie's core because the benchmark suite
//! still measures them against rayon's (docs/results/iterators.md, docs/results/rayon.md); the
//! parallel sorts they called moved into magpie as `magpie::sort`.
//!
//! Parallel iterators with rayon's names, on magpie's scheduler (sources, the common adaptors
//! and consumers; see `prelude`).
//!
//! # The model
//!
//! A parallel iterator here is a *splittable sequence*: it has a length in *base positions*
//! (the positions of its source: a range's numbers, a slice's elements), splits at any base
//! position into two parallel iterators that together yield what it would have yielded, in
//! order, and becomes an ordinary [`Iterator`] for a piece one thread runs. Adaptors keep the
//! base positions of their source: `map` yields one item per position, `filter` zero or one.
//! An [`IndexedParallelIterator`] yields exactly one item per base position, so its length is
//! its item count and `enumerate` and `zip` can line items up.
//!
//! # Splitting: lazy, on a thief's request
//!
//! rayon splits a producer into pieces up front (adaptively, more when pieces are stolen).
//! magpie knows when another worker wants work: a thief that finds a worker's published tasks
//! gone raises that worker's *wanted* flag ([`magpie::work_wanted`]). So a consumer runs like
//! this (lazy binary splitting):
//!
//! 1. Split eagerly in halves, with `join`, about log2(workers) times: enough to wake every
//!    sleeping worker and give each a piece.
//! 2. Then run the piece sequentially in chunks of base positions; between chunks, if this
//!    worker's wanted flag is up (someone is hungry) and at least two chunks' worth is left,
//!    split what is left in half with `join`: the right half is published for the thief, the
//!    left continues here. The first chunk is one position, and each chunk that ran in under
//!    50 µs doubles the next, up to 4096: cheap items soon run in full chunks (and stop reading
//!    the clock), while costly ones keep chunks of a few items, so a piece of a handful of
//!    heavy items is still split when another worker runs dry.
//!
//! At one worker nobody is ever hungry, so a fine-grained iterator pays one relaxed load per
//! chunk over the sequential loop; at many, work moves only where a worker asked for it.
//! Partial results are combined in order (left before right), so consumers that need an order
//! (`collect` into a `Vec`) keep it, and the others need only an associative combination, as in
//! rayon.
//!
//! Outside a pool, the consumers run in a scope of the pool `magpie::scope` would use (the
//! global pool, or the pool the thread is lent to).
//!
//! # Use
//!
//! ```
//! use magpie_iter::prelude::*;
//!
//! let v: Vec<u64> = (0..1000).collect();
//! let sum: u64 = v.par_iter().map(|x| x * x).sum();
//! assert_eq!(sum, v.iter().map(|x| x * x).sum());
//! let mut words = vec!["pear", "apple", "fig"];
//! words.par_sort();
//! assert_eq!(words, ["apple", "fig", "pear"]);
//! let pool = magpie::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
//! let n = pool.install(|| (0..100).into_par_iter().filter(|x| x % 3 == 0).count());
//! assert_eq!(n, 34);
//! ```

#![warn(missing_docs)]

pub mod prelude;

/// Parallel views of slices under rayon's module name (`rayon::slice::ParallelSliceMut`).
pub mod slice {
    pub use crate::{
        Chunks, ChunksMut, Fields, FieldsMut, ParallelSlice, ParallelSliceMut, Split, SplitMut,
        Windows,
    };
}

/// Parallel iterators over strings, with rayon's names (`magpie_iter::str` for `rayon::str`).
pub mod str {
    pub use crate::{
        Bytes, CharIndices, Chars, Lines, OffsetCharIndices, ParallelString, Pattern,
        SplitTerminator, SplitWhitespace, StrFields, StrSplit,
    };
}

mod adaptors;
mod consumers;
mod reshape;
mod sources;
mod split;

pub use adaptors::{Cloned, Copied, Enumerate, Filter, FilterMap, Inspect, Map, Zip};
pub use consumers::FromParallelIterator;
pub use reshape::{
    Chain, CloneInit, Eager, FlatItems, FlatMap, Fold, InitFn, Lengths, MapState, ParItems, Rev,
    SeqItems, StateInit, StepBy,
};
pub use sources::{
    Chunks, ChunksMut, IntoParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator,
    Iter, IterMut, ParallelExtend, ParallelSlice, ParallelSliceMut, RangeInteger, RangeIter,
    VecIntoIter, Windows,
};
pub use split::{
    Bytes, CharIndices, Chars, Fields, FieldsMut, Lines, OffsetCharIndices, ParallelString,
    Pattern, Split, SplitMut, SplitTerminator, SplitWhitespace, StrFields, StrSplit,
};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The most base positions one worker runs between two looks at its wanted flag. Every chunk
/// clones the closures its adaptors share (`Arc`s, so an atomic increment and decrement on a
/// reference count every worker's pieces share): with chunks of 256 cheap items two workers
/// spent much of a fine-grained loop passing that count's cache line back and forth (the
/// `rayon_programs` example's fine-grained sum at 2 workers: 1.7x rayon's time in some
/// processes, 1.1x with 4096 in the same ones). The time rule below still keeps a costly chunk
/// short.
const CHUNK: usize = 4096;

/// A chunk that takes less than this doubles the next one (up to [`CHUNK`]): long enough that
/// reading the clock is noise, short enough that a thief waits no longer for an answer.
const QUICK: Duration = Duration::from_micros(50);

/// A parallel iterator (see the module doc). The methods marked "plumbing" are what sources
/// and adaptors implement; programs use the others, which have rayon's names and contracts.
///
/// ```
/// use magpie_iter::prelude::*;
///
/// let v: Vec<u32> = (1..=100).collect();
/// assert_eq!(v.par_iter().filter(|&&x| x % 2 == 0).map(|&x| x * x).sum::<u32>(), 171_700);
/// assert_eq!(v.par_iter().copied().reduce(|| 0, u32::max), 100);
/// assert_eq!(v.par_iter().find_first(|&&x| x > 41), Some(&42));
/// assert!(v.par_iter().all(|&x| x > 0) && !v.par_iter().any(|&x| x > 100));
/// let per_piece: Vec<u32> = v.par_iter().fold(|| 0, |a, &x| a + x).collect();
/// assert_eq!(per_piece.iter().sum::<u32>(), 5050);
/// let (even, odd): (Vec<u32>, Vec<u32>) = v.par_iter().partition(|&&x| x % 2 == 0);
/// assert_eq!((even.len(), odd[0]), (50, 1));
/// let squares: Vec<u64> = (0..5u64).into_par_iter().map(|x| x * x).collect();
/// assert_eq!(squares, [0, 1, 4, 9, 16]);
/// let r: Result<(), String> = v.par_iter().try_for_each(|&x| match x {
///     77 => Err("seventy-seven".to_string()),
///     _ => Ok(()),
/// });
/// assert!(r.is_err());
/// ```
pub trait ParallelIterator: Sized + Send {
    /// What it yields.
    type Item: Send;
    /// The sequential iterator of one piece.
    type Seq: Iterator<Item = Self::Item>;

    /// Plumbing: base positions left.
    fn base_len(&self) -> usize;
    /// Plumbing: the first `index` base positions and the rest.
    fn split_at(self, index: usize) -> (Self, Self);
    /// Plumbing: this piece as a sequential iterator.
    fn into_seq(self) -> Self::Seq;
    /// Plumbing: the number of items, when it is known to be one per base position (indexed
    /// sources and the adaptors that keep that); `None` otherwise. `collect` into a `Vec`
    /// writes the items straight into place when it is known.
    fn opt_len(&self) -> Option<usize> {
        None
    }
    /// Plumbing: the fewest base positions a piece may have (`with_min_len`).
    fn min_len(&self) -> usize {
        1
    }
    /// Plumbing: the most base positions a sequential chunk may have (`with_max_len`).
    fn max_len(&self) -> usize {
        usize::MAX
    }
    /// Plumbing: whether to split eagerly down to chunks, up front, instead of lazily
    /// ([`ParallelIterator::split_eagerly`]).
    fn eager(&self) -> bool {
        false
    }

    /// Splits in halves with `join` all the way down to chunks of 4096 base positions before
    /// running any, instead of splitting when a thief asks (the module doc): the strategy lazy
    /// splitting is measured against; no reason to use it otherwise.
    fn split_eagerly(self) -> Eager<Self> {
        Eager::new(self)
    }

    /// `self`'s items, then `other`'s.
    fn chain<C>(self, other: C) -> Chain<Self, C::Iter>
    where
        C: IntoParallelIterator<Item = Self::Item>,
    {
        Chain::new(self, other.into_par_iter())
    }

    /// Applies `f` to every item and yields the items of the (sequential) iterators it returns.
    fn flat_map_iter<F, U>(self, f: F) -> FlatMap<Self, SeqItems<F>>
    where
        F: Fn(Self::Item) -> U + Sync + Send,
        U: IntoIterator,
        U::Item: Send,
    {
        FlatMap::new(self, SeqItems(f))
    }

    /// Applies `f` to every item and yields the items of the parallel iterators it returns
    /// (each run sequentially, inside the piece that holds its outer item).
    fn flat_map<F, U>(self, f: F) -> FlatMap<Self, ParItems<F>>
    where
        F: Fn(Self::Item) -> U + Sync + Send,
        U: IntoParallelIterator,
    {
        FlatMap::new(self, ParItems(f))
    }

    /// `f` with a mutable state per piece, each a clone of `init`.
    fn map_with<F, T, R>(self, init: T, f: F) -> MapState<Self, CloneInit<T>, F>
    where
        F: Fn(&mut T, Self::Item) -> R + Sync + Send,
        T: Clone + Send + Sync,
        R: Send,
    {
        MapState::new(self, CloneInit(init), f)
    }

    /// `f` with a mutable state per piece, each made by `init`.
    fn map_init<I, F, T, R>(self, init: I, f: F) -> MapState<Self, InitFn<I>, F>
    where
        I: Fn() -> T + Sync + Send,
        F: Fn(&mut T, Self::Item) -> R + Sync + Send,
        R: Send,
    {
        MapState::new(self, InitFn(init), f)
    }

    /// [`ParallelIterator::for_each`] with a per-piece clone of `init`.
    fn for_each_with<F, T>(self, init: T, f: F)
    where
        F: Fn(&mut T, Self::Item) + Sync + Send,
        T: Clone + Send + Sync,
    {
        self.map_with(init, f).for_each(|()| ())
    }

    /// [`ParallelIterator::for_each`] with a per-piece state made by `init`.
    fn for_each_init<I, F, T>(self, init: I, f: F)
    where
        I: Fn() -> T + Sync + Send,
        F: Fn(&mut T, Self::Item) + Sync + Send,
    {
        self.map_init(init, f).for_each(|()| ())
    }

    /// Folds each sequential piece into an accumulator starting at `identity()`: a parallel
    /// iterator of the accumulators (how many there are is the scheduler's choice, as in rayon).
    fn fold<T, ID, F>(self, identity: ID, f: F) -> Fold<Self, ID, F>
    where
        ID: Fn() -> T + Sync + Send,
        F: Fn(T, Self::Item) -> T + Sync + Send,
        T: Send,
    {
        Fold::new(self, identity, f)
    }

    /// Pieces of at least `min` base positions (fewer splits for cheap items).
    fn with_min_len(self, min: usize) -> Lengths<Self> {
        Lengths::new(self, min.max(1), usize::MAX)
    }

    /// Sequential chunks of at most `max` base positions (more chances to split for costly
    /// items).
    fn with_max_len(self, max: usize) -> Lengths<Self> {
        Lengths::new(self, 1, max.max(1))
    }

    /// Runs `f` on every item until one returns an error (`Err` or `None`), which is returned
    /// (some error, if several items fail, as in rayon); the others may or may not have run.
    fn try_for_each<F, R>(self, f: F) -> R
    where
        F: Fn(Self::Item) -> R + Sync + Send,
        R: TryUnit + Send,
    {
        let stop = AtomicBool::new(false);
        drive(
            self,
            &|it: Self::Seq| {
                for x in it {
                    // Relaxed: a hint to stop early; the result travels through the join.
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = f(x);
                    if r.failed() {
                        // Relaxed: as above.
                        stop.store(true, Ordering::Relaxed);
                        return r;
                    }
                }
                R::ok()
            },
            &|a: R, b: R| if a.failed() { a } else { b },
            Some(&stop),
        )
        .unwrap_or_else(R::ok)
    }

    /// The first item (in the iterator's order) for which `pred` holds.
    fn find_first<F>(self, pred: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item) -> bool + Sync + Send,
    {
        drive(
            self,
            &|mut it: Self::Seq| it.find(|x| pred(x)),
            &|a, b| a.or(b),
            None,
        )
        .flatten()
    }

    /// Splits the pairs into two collections (in order, for ordered ones).
    fn unzip<A, B, FromA, FromB>(self) -> (FromA, FromB)
    where
        Self: ParallelIterator<Item = (A, B)>,
        A: Send,
        B: Send,
        FromA: Default + Extend<A> + IntoIterator + Extend<FromA::Item> + Send,
        FromB: Default + Extend<B> + IntoIterator + Extend<FromB::Item> + Send,
    {
        drive(
            self,
            &|it: Self::Seq| {
                let mut out = (FromA::default(), FromB::default());
                out.extend(it);
                out
            },
            &|mut a: (FromA, FromB), b: (FromA, FromB)| {
                a.0.extend(b.0);
                a.1.extend(b.1);
                a
            },
            None,
        )
        .unwrap_or_default()
    }

    /// Splits the items by `pred` into two collections (those that hold first).
    fn partition<A, B, P>(self, pred: P) -> (A, B)
    where
        A: Default + Extend<Self::Item> + IntoIterator + Extend<A::Item> + Send,
        B: Default + Extend<Self::Item> + IntoIterator + Extend<B::Item> + Send,
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        drive(
            self,
            &|it: Self::Seq| {
                let (mut a, mut b) = (A::default(), B::default());
                for x in it {
                    if pred(&x) {
                        a.extend(Some(x));
                    } else {
                        b.extend(Some(x));
                    }
                }
                (a, b)
            },
            &|mut l: (A, B), r: (A, B)| {
                l.0.extend(r.0);
                l.1.extend(r.1);
                l
            },
            None,
        )
        .unwrap_or_default()
    }

    /// Applies `f` to every item.
    fn map<R, F>(self, f: F) -> Map<Self, F>
    where
        F: Fn(Self::Item) -> R + Sync + Send,
        R: Send,
    {
        Map::new(self, f)
    }

    /// Keeps the items for which `pred` holds.
    fn filter<F>(self, pred: F) -> Filter<Self, F>
    where
        F: Fn(&Self::Item) -> bool + Sync + Send,
    {
        Filter::new(self, pred)
    }

    /// Applies `f` and keeps the `Some` values.
    fn filter_map<R, F>(self, f: F) -> FilterMap<Self, F>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        FilterMap::new(self, f)
    }

    /// Calls `f` on every item as it passes.
    fn inspect<F>(self, f: F) -> Inspect<Self, F>
    where
        F: Fn(&Self::Item) + Sync + Send,
    {
        Inspect::new(self, f)
    }

    /// Copies the items out of references.
    fn copied<'a, T>(self) -> Copied<Self>
    where
        T: 'a + Copy + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Copied::new(self)
    }

    /// Clones the items out of references.
    fn cloned<'a, T>(self) -> Cloned<Self>
    where
        T: 'a + Clone + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Cloned::new(self)
    }

    /// Runs `f` on every item, in parallel.
    fn for_each<F>(self, f: F)
    where
        F: Fn(Self::Item) + Sync + Send,
    {
        drive(self, &|it: Self::Seq| it.for_each(&f), &|(), ()| (), None);
    }

    /// How many items.
    fn count(self) -> usize {
        drive(self, &|it: Self::Seq| it.count(), &|a, b| a + b, None).unwrap_or(0)
    }

    /// The sum of the items (partial sums are added in order, left to right; floating-point
    /// sums may round differently from the sequential one, as in rayon).
    fn sum<S>(self) -> S
    where
        S: Send + std::iter::Sum<Self::Item> + std::iter::Sum<S>,
    {
        drive(
            self,
            &|it: Self::Seq| it.sum::<S>(),
            &|a, b| [a, b].into_iter().sum(),
            None,
        )
        .unwrap_or_else(|| std::iter::empty::<Self::Item>().sum())
    }

    /// The product of the items.
    fn product<P>(self) -> P
    where
        P: Send + std::iter::Product<Self::Item> + std::iter::Product<P>,
    {
        drive(
            self,
            &|it: Self::Seq| it.product::<P>(),
            &|a, b| [a, b].into_iter().product(),
            None,
        )
        .unwrap_or_else(|| std::iter::empty::<Self::Item>().product())
    }

    /// Combines the items with `op`, starting every piece from `identity()` (which `op` must
    /// leave unchanged, and `op` be associative, as in rayon).
    fn reduce<ID, OP>(self, identity: ID, op: OP) -> Self::Item
    where
        ID: Fn() -> Self::Item + Sync + Send,
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        drive(self, &|it: Self::Seq| it.fold(identity(), &op), &op, None).unwrap_or_else(identity)
    }

    /// Combines the items with `op`; `None` if there are none.
    fn reduce_with<OP>(self, op: OP) -> Option<Self::Item>
    where
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        drive(
            self,
            &|it: Self::Seq| it.reduce(&op),
            &|a, b| match (a, b) {
                (Some(a), Some(b)) => Some(op(a, b)),
                (a, b) => a.or(b),
            },
            None,
        )
        .flatten()
    }

    /// The least item (the first of equal ones is not guaranteed, as in rayon).
    fn min(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.reduce_with(std::cmp::min)
    }

    /// The greatest item.
    fn max(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.reduce_with(std::cmp::max)
    }

    /// The least item by `cmp` (the first of equal ones: pieces combine left to right).
    fn min_by<F>(self, cmp: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> std::cmp::Ordering + Sync + Send,
    {
        self.reduce_with(|a, b| match cmp(&b, &a) {
            std::cmp::Ordering::Less => b,
            _ => a,
        })
    }

    /// The greatest item by `cmp` (the last of equal ones).
    fn max_by<F>(self, cmp: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> std::cmp::Ordering + Sync + Send,
    {
        self.reduce_with(|a, b| match cmp(&b, &a) {
            std::cmp::Ordering::Less => a,
            _ => b,
        })
    }

    /// The items of the items (each a parallel iterator or a collection that becomes one),
    /// flattened in order; like `flat_map`, each inner iterator runs within its outer item's
    /// piece.
    fn flatten(self) -> FlatMap<Self, ParItems<impl Fn(Self::Item) -> Self::Item + Sync + Send>>
    where
        Self::Item: IntoParallelIterator,
    {
        FlatMap::new(self, ParItems(|x| x))
    }

    /// Calls `f` on a mutable reference to every item as it passes, then yields the item.
    fn update<F>(self, f: F) -> Map<Self, impl Fn(Self::Item) -> Self::Item + Sync + Send>
    where
        F: Fn(&mut Self::Item) + Sync + Send,
    {
        self.map(move |mut x| {
            f(&mut x);
            x
        })
    }

    /// The item with the least key.
    fn min_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        self.map(|x| (f(&x), x))
            .reduce_with(|a, b| if b.0 < a.0 { b } else { a })
            .map(|(_, x)| x)
    }

    /// The item with the greatest key.
    fn max_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        self.map(|x| (f(&x), x))
            .reduce_with(|a, b| if b.0 >= a.0 { b } else { a })
            .map(|(_, x)| x)
    }

    /// Whether `pred` holds for some item (stops early once one is found).
    fn any<F>(self, pred: F) -> bool
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        let stop = AtomicBool::new(false);
        drive(
            self,
            &|it: Self::Seq| {
                for x in it {
                    // Relaxed: a hint to stop early; the result travels through the join.
                    if stop.load(Ordering::Relaxed) {
                        return false;
                    }
                    if pred(x) {
                        // Relaxed: as above.
                        stop.store(true, Ordering::Relaxed);
                        return true;
                    }
                }
                false
            },
            &|a, b| a || b,
            Some(&stop),
        )
        .unwrap_or(false)
    }

    /// Whether `pred` holds for every item (stops early at the first that fails).
    fn all<F>(self, pred: F) -> bool
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        !self.any(|x| !pred(x))
    }

    /// Some item for which `pred` holds, if any (not necessarily the first; stops early).
    fn find_any<F>(self, pred: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item) -> bool + Sync + Send,
    {
        let stop = AtomicBool::new(false);
        drive(
            self,
            &|it: Self::Seq| {
                for x in it {
                    // Relaxed: a hint to stop early; the result travels through the join.
                    if stop.load(Ordering::Relaxed) {
                        return None;
                    }
                    if pred(&x) {
                        // Relaxed: as above.
                        stop.store(true, Ordering::Relaxed);
                        return Some(x);
                    }
                }
                None
            },
            &|a, b| a.or(b),
            Some(&stop),
        )
        .flatten()
    }

    /// Collects the items, in order where the collection keeps one (`Vec`).
    fn collect<C>(self) -> C
    where
        C: FromParallelIterator<Self::Item>,
    {
        C::from_par_iter(self)
    }
}

/// What `try_for_each`'s closure returns: `Result<(), E>` or `Option<()>`.
pub trait TryUnit {
    /// Success.
    fn ok() -> Self;
    /// Whether this is a failure (`Err` or `None`).
    fn failed(&self) -> bool;
}

impl<E> TryUnit for Result<(), E> {
    fn ok() -> Self {
        Ok(())
    }
    fn failed(&self) -> bool {
        self.is_err()
    }
}

impl TryUnit for Option<()> {
    fn ok() -> Self {
        Some(())
    }
    fn failed(&self) -> bool {
        self.is_none()
    }
}

/// A parallel iterator with exactly one item per base position (see the module doc).
///
/// ```
/// use magpie_iter::prelude::*;
///
/// let a = [10, 20, 30, 40];
/// let b = vec![1, 2, 3, 4];
/// let zipped: Vec<i32> = a.par_iter().zip(&b).map(|(x, y)| x + y).collect();
/// assert_eq!(zipped, [11, 22, 33, 44]);
/// let back: Vec<(usize, &i32)> = a.par_iter().enumerate().rev().step_by(2).collect();
/// assert_eq!(back, [(3, &40), (1, &20)]);
/// assert_eq!(a.par_iter().skip(1).take(2).copied().sum::<i32>(), 50);
/// assert_eq!(a.par_iter().position_first(|&x| x >= 25), Some(2));
/// ```
pub trait IndexedParallelIterator: ParallelIterator {
    /// Items left.
    fn len(&self) -> usize {
        self.base_len()
    }

    /// Whether no item is left.
    fn is_empty(&self) -> bool {
        self.base_len() == 0
    }

    /// Pairs each item with its index.
    fn enumerate(self) -> Enumerate<Self> {
        Enumerate::new(self)
    }

    /// The items in reverse order.
    fn rev(self) -> Rev<Self>
    where
        Self::Seq: DoubleEndedIterator,
    {
        Rev::new(self)
    }

    /// Every `step`-th item, from the first. Panics if `step` is 0.
    fn step_by(self, step: usize) -> StepBy<Self> {
        StepBy::new(self, step)
    }

    /// The first `n` items.
    fn take(self, n: usize) -> Self {
        let n = n.min(self.base_len());
        self.split_at(n).0
    }

    /// All but the first `n` items.
    fn skip(self, n: usize) -> Self {
        let n = n.min(self.base_len());
        self.split_at(n).1
    }

    /// The index of some item for which `pred` holds.
    fn position_any<F>(self, pred: F) -> Option<usize>
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(&pred)
            .enumerate()
            .find_any(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// The index of the first item for which `pred` holds.
    fn position_first<F>(self, pred: F) -> Option<usize>
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(&pred)
            .enumerate()
            .find_first(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// Collects into `target`, replacing what it held, in order (`target` keeps its allocation
    /// when it is large enough).
    fn collect_into_vec(self, target: &mut Vec<Self::Item>) {
        target.clear();
        target.par_extend(self);
    }

    /// Pairs the items with `other`'s, as far as the shorter goes.
    fn zip<Z>(self, other: Z) -> Zip<Self, Z::Iter>
    where
        Z: IntoParallelIterator,
        Z::Iter: IndexedParallelIterator,
    {
        Zip::new(self, other.into_par_iter())
    }
}

/// Whether the worker running the caller has been asked for work by a thief.
fn hungry() -> bool {
    magpie::work_wanted()
}

/// Workers of the pool the caller runs on (1 outside a pool).
fn workers() -> usize {
    match magpie::current_thread_index() {
        Some(_) => magpie::current_num_threads(),
        None => 1,
    }
}

/// Runs `p` (see the module doc): each sequential piece through `piece`, the pieces' results
/// combined in order with `combine`; `None` if `p` is empty. `stop`, once set, ends the run
/// early (what is left is skipped).
fn drive<P, A, F, C>(p: P, piece: &F, combine: &C, stop: Option<&AtomicBool>) -> Option<A>
where
    P: ParallelIterator,
    A: Send,
    F: Fn(P::Seq) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    if !magpie::on_worker() {
        // The pool `scope` would use: the global pool, or the one this thread is lent to.
        return magpie::scope(|_| drive(p, piece, combine, stop));
    }
    let eager = match p.eager() {
        true => u32::MAX,
        false => usize::BITS - (workers().max(1) - 1).leading_zeros(),
    };
    run(p, eager, piece, combine, stop)
}

fn both<A, C: Fn(A, A) -> A>(combine: &C, a: Option<A>, b: Option<A>) -> Option<A> {
    match (a, b) {
        (Some(a), Some(b)) => Some(combine(a, b)),
        (a, b) => a.or(b),
    }
}

fn run<P, A, F, C>(
    mut p: P,
    eager: u32,
    piece: &F,
    combine: &C,
    stop: Option<&AtomicBool>,
) -> Option<A>
where
    P: ParallelIterator,
    A: Send,
    F: Fn(P::Seq) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    // Relaxed: a hint to skip what is left; results travel through the joins.
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let (min, chunk) = (p.min_len().max(1), CHUNK.min(p.max_len()).max(1));
    let n = p.base_len();
    if eager > 0 && n >= 2 * min && (eager != u32::MAX || n >= 2 * chunk) {
        let (l, r) = p.split_at(n / 2);
        // Eager splitting (`u32::MAX`) goes on down to chunks; the first log2(workers) levels
        // count down.
        let next = if eager == u32::MAX { eager } else { eager - 1 };
        let (a, b) = magpie::join(
            || run(l, next, piece, combine, stop),
            || run(r, next, piece, combine, stop),
        );
        return both(combine, a, b);
    }
    // The chunk grows from one base position, doubling while a chunk takes less than `QUICK`,
    // up to `chunk`; the clock is read only while it grows. Cheap items reach full chunks after
    // a few hundred positions and pay nothing more; costly ones keep small chunks, so a thief's
    // request is heard after a few items, and a piece of only a few of them can still be split.
    // Eager splitting (the baseline lazy splitting is measured against) starts at full chunks,
    // as it always did.
    let mut step = if eager == u32::MAX { chunk } else { 1 };
    let mut growing = step < chunk;
    let mut acc: Option<A> = None;
    loop {
        let n = p.base_len();
        if n == 0 || stopped() {
            return acc;
        }
        if n >= 2 * step.max(min) && hungry() {
            let (l, r) = p.split_at(n / 2);
            let (a, b) = magpie::join(
                || run(l, 0, piece, combine, stop),
                || run(r, 0, piece, combine, stop),
            );
            return both(combine, both(combine, acc, a), b);
        }
        if n <= step {
            return both(combine, acc, Some(piece(p.into_seq())));
        }
        let began = growing.then(Instant::now);
        let (head, rest) = p.split_at(step);
        acc = both(combine, acc, Some(piece(head.into_seq())));
        p = rest;
        if let Some(t) = began {
            if t.elapsed() < QUICK {
                step = (step * 2).min(chunk);
                growing = step < chunk;
            }
        }
    }
}

#[cfg(test)]
mod tests;
