//! The adaptors that reshape the sequence or keep state per sequential piece: `chain`, `rev`,
//! `step_by`, `with_min_len`/`with_max_len`, `flat_map_iter`/`flat_map`, `map_with`/`map_init`
//! and `fold` (one accumulator per sequential piece). Like the plain adaptors (`adaptors.rs`),
//! they split where their source splits.

use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use std::sync::Arc;

/// [`ParallelIterator::chain`]: `a`'s items, then `b`'s.
pub struct Chain<A, B> {
    a: A,
    b: B,
}

impl<A: ParallelIterator, B: ParallelIterator<Item = A::Item>> Chain<A, B> {
    pub(super) fn new(a: A, b: B) -> Self {
        Chain { a, b }
    }
}

impl<A, B> ParallelIterator for Chain<A, B>
where
    A: ParallelIterator,
    B: ParallelIterator<Item = A::Item>,
{
    type Item = A::Item;
    type Seq = std::iter::Chain<A::Seq, B::Seq>;

    fn base_len(&self) -> usize {
        self.a.base_len() + self.b.base_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let n = self.a.base_len();
        if i <= n {
            let (al, ar) = self.a.split_at(i);
            let (bl, br) = self.b.split_at(0);
            (Chain { a: al, b: bl }, Chain { a: ar, b: br })
        } else {
            let (al, ar) = self.a.split_at(n);
            let (bl, br) = self.b.split_at(i - n);
            (Chain { a: al, b: bl }, Chain { a: ar, b: br })
        }
    }
    fn into_seq(self) -> Self::Seq {
        self.a.into_seq().chain(self.b.into_seq())
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.a.opt_len()? + self.b.opt_len()?)
    }
    fn min_len(&self) -> usize {
        self.a.min_len().max(self.b.min_len())
    }
}

impl<A, B> IndexedParallelIterator for Chain<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
}

/// [`IndexedParallelIterator::rev`].
pub struct Rev<P>(P);

impl<P> Rev<P> {
    pub(super) fn new(p: P) -> Self {
        Rev(p)
    }
}

impl<P> ParallelIterator for Rev<P>
where
    P: IndexedParallelIterator,
    P::Seq: DoubleEndedIterator,
{
    type Item = P::Item;
    type Seq = std::iter::Rev<P::Seq>;

    fn base_len(&self) -> usize {
        self.0.base_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let n = self.0.base_len();
        let (l, r) = self.0.split_at(n - i);
        (Rev(r), Rev(l))
    }
    fn into_seq(self) -> Self::Seq {
        self.0.into_seq().rev()
    }
    fn min_len(&self) -> usize {
        self.0.min_len()
    }
    fn max_len(&self) -> usize {
        self.0.max_len()
    }
    fn opt_len(&self) -> Option<usize> {
        self.0.opt_len()
    }
}

impl<P> IndexedParallelIterator for Rev<P>
where
    P: IndexedParallelIterator,
    P::Seq: DoubleEndedIterator,
{
}

/// [`IndexedParallelIterator::step_by`]: every `step`-th item from the first.
pub struct StepBy<P> {
    base: P,
    step: usize,
}

impl<P> StepBy<P> {
    pub(super) fn new(base: P, step: usize) -> Self {
        assert!(step != 0, "step_by: the step must not be zero");
        StepBy { base, step }
    }
}

impl<P: IndexedParallelIterator> ParallelIterator for StepBy<P> {
    type Item = P::Item;
    type Seq = std::iter::StepBy<P::Seq>;

    fn base_len(&self) -> usize {
        self.base.base_len().div_ceil(self.step)
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let at = (i * self.step).min(self.base.base_len());
        let step = self.step;
        let (l, r) = self.base.split_at(at);
        (StepBy { base: l, step }, StepBy { base: r, step })
    }
    fn into_seq(self) -> Self::Seq {
        self.base.into_seq().step_by(self.step)
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len().map(|_| self.base_len())
    }
}

impl<P: IndexedParallelIterator> IndexedParallelIterator for StepBy<P> {}

/// [`ParallelIterator::with_min_len`] and [`ParallelIterator::with_max_len`]: bounds on the
/// pieces the scheduler makes (in base positions).
pub struct Lengths<P> {
    base: P,
    min: usize,
    max: usize,
}

impl<P: ParallelIterator> Lengths<P> {
    pub(super) fn new(base: P, min: usize, max: usize) -> Self {
        let (min, max) = (min.max(base.min_len()), max.min(base.max_len()));
        Lengths { base, min, max }
    }
}

impl<P: ParallelIterator> ParallelIterator for Lengths<P> {
    type Item = P::Item;
    type Seq = P::Seq;

    fn base_len(&self) -> usize {
        self.base.base_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (min, max) = (self.min, self.max);
        let (l, r) = self.base.split_at(i);
        (Lengths { base: l, min, max }, Lengths { base: r, min, max })
    }
    fn into_seq(self) -> P::Seq {
        self.base.into_seq()
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
    fn min_len(&self) -> usize {
        self.min
    }
    fn max_len(&self) -> usize {
        self.max
    }
}

impl<P: IndexedParallelIterator> IndexedParallelIterator for Lengths<P> {}

/// [`ParallelIterator::flat_map_iter`] and [`ParallelIterator::flat_map`] (whose inner parallel
/// iterators run sequentially within the outer item's piece).
pub struct FlatMap<P, F> {
    base: P,
    f: Arc<F>,
}

impl<P, F> FlatMap<P, F> {
    pub(super) fn new(base: P, f: F) -> Self {
        FlatMap {
            base,
            f: Arc::new(f),
        }
    }
}

/// Turns a flat-mapped item into its sequential iterator.
pub trait FlatItems<T> {
    /// The items, in order.
    type Iter: Iterator;
    /// Them.
    fn flat_items(&self, item: T) -> Self::Iter;
}

/// `flat_map_iter`'s closure.
pub struct SeqItems<F>(pub(super) F);
/// `flat_map`'s closure.
pub struct ParItems<F>(pub(super) F);

impl<T, F: Fn(T) -> U, U: IntoIterator> FlatItems<T> for SeqItems<F> {
    type Iter = U::IntoIter;
    fn flat_items(&self, item: T) -> U::IntoIter {
        (self.0)(item).into_iter()
    }
}

impl<T, F: Fn(T) -> U, U: IntoParallelIterator> FlatItems<T> for ParItems<F> {
    type Iter = <U::Iter as ParallelIterator>::Seq;
    fn flat_items(&self, item: T) -> Self::Iter {
        (self.0)(item).into_par_iter().into_seq()
    }
}

impl<P, G> ParallelIterator for FlatMap<P, G>
where
    P: ParallelIterator,
    G: FlatItems<P::Item> + Sync + Send,
    <G::Iter as Iterator>::Item: Send,
{
    type Item = <G::Iter as Iterator>::Item;
    type Seq = FlatSeq<P::Seq, G>;

    fn base_len(&self) -> usize {
        self.base.base_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(i);
        (
            FlatMap {
                base: l,
                f: self.f.clone(),
            },
            FlatMap { base: r, f: self.f },
        )
    }
    fn into_seq(self) -> Self::Seq {
        FlatSeq {
            it: self.base.into_seq(),
            g: self.f,
            inner: None,
        }
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
    }
    fn max_len(&self) -> usize {
        self.base.max_len()
    }
}

/// The sequential iterator of one piece of a [`FlatMap`].
pub struct FlatSeq<I: Iterator, G: FlatItems<I::Item>> {
    it: I,
    g: Arc<G>,
    inner: Option<G::Iter>,
}

impl<I: Iterator, G: FlatItems<I::Item>> Iterator for FlatSeq<I, G> {
    type Item = <G::Iter as Iterator>::Item;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(x) = self.inner.as_mut().and_then(Iterator::next) {
                return Some(x);
            }
            let outer = self.it.next()?;
            self.inner = Some(self.g.flat_items(outer));
        }
    }
}

/// Makes the per-piece state of [`MapState`].
pub trait StateInit {
    /// The state.
    type State;
    /// A new one.
    fn make(&self) -> Self::State;
}

/// `map_with`'s state: a clone of a value.
pub struct CloneInit<T>(pub(super) T);

impl<T: Clone> StateInit for CloneInit<T> {
    type State = T;
    fn make(&self) -> T {
        self.0.clone()
    }
}

/// `map_init`'s state: what a closure returns.
pub struct InitFn<I>(pub(super) I);

impl<I: Fn() -> S, S> StateInit for InitFn<I> {
    type State = S;
    fn make(&self) -> S {
        (self.0)()
    }
}

/// [`ParallelIterator::map_with`] and [`ParallelIterator::map_init`]: `f` with a per-piece
/// state (a clone of a value, or what `init` returns).
pub struct MapState<P, I, F> {
    base: P,
    init: Arc<I>,
    f: Arc<F>,
}

impl<P, I, F> MapState<P, I, F> {
    pub(super) fn new(base: P, init: I, f: F) -> Self {
        MapState {
            base,
            init: Arc::new(init),
            f: Arc::new(f),
        }
    }
}

/// The sequential iterator of one piece of a [`MapState`].
pub struct MapStateSeq<It, S, F> {
    it: It,
    state: S,
    f: Arc<F>,
}

impl<It: Iterator, S, F: Fn(&mut S, It::Item) -> R, R> Iterator for MapStateSeq<It, S, F> {
    type Item = R;
    fn next(&mut self) -> Option<R> {
        let x = self.it.next()?;
        Some((self.f)(&mut self.state, x))
    }
}

impl<P, I, F, R> ParallelIterator for MapState<P, I, F>
where
    P: ParallelIterator,
    I: StateInit + Sync + Send,
    F: Fn(&mut I::State, P::Item) -> R + Sync + Send,
    R: Send,
{
    type Item = R;
    type Seq = MapStateSeq<P::Seq, I::State, F>;

    fn base_len(&self) -> usize {
        self.base.base_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(i);
        (
            MapState {
                base: l,
                init: self.init.clone(),
                f: self.f.clone(),
            },
            MapState {
                base: r,
                init: self.init,
                f: self.f,
            },
        )
    }
    fn into_seq(self) -> Self::Seq {
        MapStateSeq {
            it: self.base.into_seq(),
            state: self.init.make(),
            f: self.f,
        }
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
    }
    fn max_len(&self) -> usize {
        self.base.max_len()
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<P, I, F, R> IndexedParallelIterator for MapState<P, I, F>
where
    P: IndexedParallelIterator,
    I: StateInit + Sync + Send,
    F: Fn(&mut I::State, P::Item) -> R + Sync + Send,
    R: Send,
{
}

/// [`ParallelIterator::fold`]: one accumulator per sequential piece.
pub struct Fold<P, ID, F> {
    base: P,
    identity: Arc<ID>,
    f: Arc<F>,
}

impl<P, ID, F> Fold<P, ID, F> {
    pub(super) fn new(base: P, identity: ID, f: F) -> Self {
        Fold {
            base,
            identity: Arc::new(identity),
            f: Arc::new(f),
        }
    }
}

impl<P, ID, F, T> ParallelIterator for Fold<P, ID, F>
where
    P: ParallelIterator,
    ID: Fn() -> T + Sync + Send,
    F: Fn(T, P::Item) -> T + Sync + Send,
    T: Send,
{
    type Item = T;
    type Seq = std::iter::Once<T>;

    fn base_len(&self) -> usize {
        self.base.base_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(i);
        (
            Fold {
                base: l,
                identity: self.identity.clone(),
                f: self.f.clone(),
            },
            Fold {
                base: r,
                identity: self.identity,
                f: self.f,
            },
        )
    }
    fn into_seq(self) -> Self::Seq {
        let f = &*self.f;
        std::iter::once(self.base.into_seq().fold((self.identity)(), f))
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
    }
    fn max_len(&self) -> usize {
        self.base.max_len()
    }
}

/// [`ParallelIterator::split_eagerly`].
pub struct Eager<P>(P);

impl<P> Eager<P> {
    pub(super) fn new(p: P) -> Self {
        Eager(p)
    }
}

impl<P: ParallelIterator> ParallelIterator for Eager<P> {
    type Item = P::Item;
    type Seq = P::Seq;

    fn base_len(&self) -> usize {
        self.0.base_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.0.split_at(i);
        (Eager(l), Eager(r))
    }
    fn into_seq(self) -> P::Seq {
        self.0.into_seq()
    }
    fn opt_len(&self) -> Option<usize> {
        self.0.opt_len()
    }
    fn min_len(&self) -> usize {
        self.0.min_len()
    }
    fn max_len(&self) -> usize {
        self.0.max_len()
    }
    fn eager(&self) -> bool {
        true
    }
}

impl<P: IndexedParallelIterator> IndexedParallelIterator for Eager<P> {}
