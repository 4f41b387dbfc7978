//! Parallel iterators with rayon's names, on magpie's scheduler (first part: sources, the
//! common adaptors and consumers; see `prelude`).
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
//! gone raises that worker's *wanted* flag (the split deque's, see `deque.rs`). So a consumer
//! runs like this (lazy binary splitting):
//!
//! 1. Split eagerly in halves, with `join`, about log2(workers) times: enough to wake every
//!    sleeping worker and give each a piece.
//! 2. Then run the piece sequentially in chunks of base positions; between chunks, if this
//!    worker's wanted flag is up (someone is hungry) and at least two chunks' worth is left,
//!    split what is left in half with `join`: the right half is published for the thief, the
//!    left continues here.
//!
//! At one worker nobody is ever hungry, so a fine-grained iterator pays one relaxed load per
//! chunk over the sequential loop; at many, work moves only where a worker asked for it.
//! Partial results are combined in order (left before right), so consumers that need an order
//! (`collect` into a `Vec`) keep it, and the others need only an associative combination, as in
//! rayon.
//!
//! Outside a pool, the consumers run on the global pool, as `join` does.

mod adaptors;
mod consumers;
mod sources;

pub use adaptors::{Cloned, Copied, Enumerate, Filter, FilterMap, Inspect, Map, Zip};
pub use consumers::FromParallelIterator;
pub use sources::{
    Chunks, ChunksMut, IntoParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator,
    Iter, IterMut, ParallelSlice, ParallelSliceMut, RangeInteger, RangeIter, VecIntoIter,
};

use crate::worker;
use std::sync::atomic::{AtomicBool, Ordering};

/// Base positions one worker runs between two looks at its wanted flag.
const CHUNK: usize = 256;

/// A parallel iterator (see the module doc). The methods marked "plumbing" are what sources
/// and adaptors implement; programs use the others, which have rayon's names and contracts.
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
                    if stop.load(Ordering::Relaxed) {
                        return false;
                    }
                    if pred(x) {
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
                    if stop.load(Ordering::Relaxed) {
                        return None;
                    }
                    if pred(&x) {
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

/// A parallel iterator with exactly one item per base position (see the module doc).
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
    worker::current().is_some_and(|wt| wt.deque.wanted())
}

/// Workers of the pool the caller runs on (1 outside a pool).
fn workers() -> usize {
    worker::current().map_or(1, |wt| wt.registry.config.workers)
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
    if worker::current().is_none() {
        return crate::pool::global().install(|| drive(p, piece, combine, stop));
    }
    let eager = usize::BITS - (workers().max(1) - 1).leading_zeros();
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
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let n = p.base_len();
    if eager > 0 && n >= 2 {
        let (l, r) = p.split_at(n / 2);
        let (a, b) = crate::join(
            || run(l, eager - 1, piece, combine, stop),
            || run(r, eager - 1, piece, combine, stop),
        );
        return both(combine, a, b);
    }
    let mut acc: Option<A> = None;
    loop {
        let n = p.base_len();
        if n == 0 || stopped() {
            return acc;
        }
        if n >= 2 * CHUNK && hungry() {
            let (l, r) = p.split_at(n / 2);
            let (a, b) = crate::join(
                || run(l, 0, piece, combine, stop),
                || run(r, 0, piece, combine, stop),
            );
            return both(combine, both(combine, acc, a), b);
        }
        if n <= CHUNK {
            return both(combine, acc, Some(piece(p.into_seq())));
        }
        let (head, rest) = p.split_at(CHUNK);
        acc = both(combine, acc, Some(piece(head.into_seq())));
        p = rest;
    }
}

#[cfg(test)]
mod tests;
