//! The adaptors: each wraps a parallel iterator, splits where it splits, and adapts its pieces'
//! sequential iterators. The closures are shared between the pieces through an `Arc` (one
//! reference-count change per split, none per item).

use super::{IndexedParallelIterator, ParallelIterator};
use std::sync::Arc;

/// An adaptor that wraps its base with a shared closure and adapts each piece's sequential
/// iterator with the sequential type `$seq` (`$seq { it, f }`): everything but the closure's
/// bound, the item and the sequential type is the same for all of them. `indexed` ones yield
/// one item per base position, so they keep the base's length and are indexed when it is.
macro_rules! closure_adaptor {
    (
        $(#[$doc:meta])*
        $name:ident<P, F $(, $g:ident)*>, where [$($bound:tt)*],
        item: $item:ty, seq: $seq:ident<$k:literal>, indexed: $indexed:ident
    ) => {
        $(#[$doc])*
        pub struct $name<P, F> {
            base: P,
            f: Arc<F>,
        }

        impl<P, F> $name<P, F> {
            pub(super) fn new(base: P, f: F) -> Self {
                $name {
                    base,
                    f: Arc::new(f),
                }
            }
        }

        impl<P, F $(, $g)*> ParallelIterator for $name<P, F>
        where
            P: ParallelIterator,
            $($bound)*
        {
            type Item = $item;
            type Seq = $seq<P::Seq, F, $k>;

            fn base_len(&self) -> usize {
                self.base.base_len()
            }
            fn opt_len(&self) -> Option<usize> {
                closure_adaptor!(@opt_len $indexed, self)
            }
            fn split_at(self, i: usize) -> (Self, Self) {
                let (l, r) = self.base.split_at(i);
                (
                    $name {
                        base: l,
                        f: self.f.clone(),
                    },
                    $name { base: r, f: self.f },
                )
            }
            fn into_seq(self) -> Self::Seq {
                $seq {
                    it: self.base.into_seq(),
                    f: self.f,
                }
            }
            fn min_len(&self) -> usize {
                self.base.min_len()
            }
            fn max_len(&self) -> usize {
                self.base.max_len()
            }
        }

        closure_adaptor!(@indexed $indexed, $name<P, F $(, $g)*>, [$($bound)*]);
    };
    (@opt_len indexed, $self:ident) => {
        $self.base.opt_len()
    };
    (@opt_len unindexed, $self:ident) => {
        None
    };
    (@indexed indexed, $name:ident<P, F $(, $g:ident)*>, [$($bound:tt)*]) => {
        impl<P, F $(, $g)*> IndexedParallelIterator for $name<P, F>
        where
            P: IndexedParallelIterator,
            $($bound)*
        {
        }
    };
    (@indexed unindexed, $name:ident<P, F $(, $g:ident)*>, [$($bound:tt)*]) => {};
}

closure_adaptor! {
    /// [`ParallelIterator::map`].
    Map<P, F, R>, where [F: Fn(P::Item) -> R + Sync + Send, R: Send,],
    item: R, seq: MapSeq<false>, indexed: indexed
}

closure_adaptor! {
    /// [`ParallelIterator::filter_map`].
    FilterMap<P, F, R>, where [F: Fn(P::Item) -> Option<R> + Sync + Send, R: Send,],
    item: R, seq: MapSeq<true>, indexed: unindexed
}

closure_adaptor! {
    /// [`ParallelIterator::filter`].
    Filter<P, F>, where [F: Fn(&P::Item) -> bool + Sync + Send,],
    item: P::Item, seq: PredSeq<false>, indexed: unindexed
}

closure_adaptor! {
    /// [`ParallelIterator::inspect`].
    Inspect<P, F>, where [F: Fn(&P::Item) + Sync + Send,],
    item: P::Item, seq: PredSeq<true>, indexed: indexed
}

/// The sequential iterator of one piece of a [`Map`] (or, with `FILTER`, a [`FilterMap`]).
pub struct MapSeq<I, F, const FILTER: bool> {
    it: I,
    f: Arc<F>,
}

impl<I: Iterator, F: Fn(I::Item) -> R, R> Iterator for MapSeq<I, F, false> {
    type Item = R;
    #[inline]
    fn next(&mut self) -> Option<R> {
        self.it.next().map(&*self.f)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.it.size_hint()
    }
}

// From the back too, so that `rev` (and `zip` of reversed pieces) works on mapped iterators.
impl<I: DoubleEndedIterator, F: Fn(I::Item) -> R, R> DoubleEndedIterator for MapSeq<I, F, false> {
    #[inline]
    fn next_back(&mut self) -> Option<R> {
        self.it.next_back().map(&*self.f)
    }
}

impl<I: ExactSizeIterator, F: Fn(I::Item) -> R, R> ExactSizeIterator for MapSeq<I, F, false> {}

impl<I: Iterator, F: Fn(I::Item) -> Option<R>, R> Iterator for MapSeq<I, F, true> {
    type Item = R;
    #[inline]
    fn next(&mut self) -> Option<R> {
        self.it.find_map(&*self.f)
    }
}

/// The sequential iterator of one piece of a [`Filter`] or an [`Inspect`].
pub struct PredSeq<I, F, const KEEP_ALL: bool> {
    it: I,
    f: Arc<F>,
}

impl<I: Iterator, F: Fn(&I::Item) -> bool> Iterator for PredSeq<I, F, false> {
    type Item = I::Item;
    #[inline]
    fn next(&mut self) -> Option<I::Item> {
        let f = &*self.f;
        self.it.find(|x| f(x))
    }
}

impl<I: Iterator, F: Fn(&I::Item)> Iterator for PredSeq<I, F, true> {
    type Item = I::Item;
    #[inline]
    fn next(&mut self) -> Option<I::Item> {
        let x = self.it.next()?;
        (self.f)(&x);
        Some(x)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.it.size_hint()
    }
}

impl<I: DoubleEndedIterator, F: Fn(&I::Item)> DoubleEndedIterator for PredSeq<I, F, true> {
    #[inline]
    fn next_back(&mut self) -> Option<I::Item> {
        let x = self.it.next_back()?;
        (self.f)(&x);
        Some(x)
    }
}

impl<I: ExactSizeIterator, F: Fn(&I::Item)> ExactSizeIterator for PredSeq<I, F, true> {}

/// Declares the adaptor that turns references into owned items (`copied`, `cloned`): its
/// type `$name`, which needs `T: $bound`, and its sequential iterator `std::iter::$name`.
macro_rules! owned_items {
    ($(#[$doc:meta])* $name:ident, $bound:ident, $method:ident) => {
        $(#[$doc])*
        pub struct $name<P>(P);

        impl<P> $name<P> {
            pub(super) fn new(p: P) -> Self {
                $name(p)
            }
        }

        impl<'a, T, P> ParallelIterator for $name<P>
        where
            T: 'a + $bound + Send + Sync,
            P: ParallelIterator<Item = &'a T>,
        {
            type Item = T;
            type Seq = std::iter::$name<P::Seq>;

            fn base_len(&self) -> usize {
                self.0.base_len()
            }
            fn split_at(self, i: usize) -> (Self, Self) {
                let (l, r) = self.0.split_at(i);
                ($name(l), $name(r))
            }
            fn into_seq(self) -> Self::Seq {
                self.0.into_seq().$method()
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

        impl<'a, T, P> IndexedParallelIterator for $name<P>
        where
            T: 'a + $bound + Send + Sync,
            P: IndexedParallelIterator<Item = &'a T>,
        {
        }
    };
}

owned_items!(
    /// [`ParallelIterator::copied`].
    Copied,
    Copy,
    copied
);
owned_items!(
    /// [`ParallelIterator::cloned`].
    Cloned,
    Clone,
    cloned
);

/// [`IndexedParallelIterator::enumerate`].
pub struct Enumerate<P> {
    base: P,
    /// The index of the first item.
    offset: usize,
}

impl<P> Enumerate<P> {
    pub(super) fn new(base: P) -> Self {
        Enumerate { base, offset: 0 }
    }
}

/// The sequential iterator of one piece of an [`Enumerate`].
pub struct EnumerateSeq<I> {
    it: I,
    at: usize,
}

impl<I: Iterator> Iterator for EnumerateSeq<I> {
    type Item = (usize, I::Item);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let x = self.it.next()?;
        let i = self.at;
        self.at += 1;
        Some((i, x))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.it.size_hint()
    }
}

// The last item's index is the first one's plus the items left after it.
impl<I: DoubleEndedIterator + ExactSizeIterator> DoubleEndedIterator for EnumerateSeq<I> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        let x = self.it.next_back()?;
        Some((self.at + self.it.len(), x))
    }
}

impl<I: ExactSizeIterator> ExactSizeIterator for EnumerateSeq<I> {}

impl<P: IndexedParallelIterator> ParallelIterator for Enumerate<P> {
    type Item = (usize, P::Item);
    type Seq = EnumerateSeq<P::Seq>;

    fn base_len(&self) -> usize {
        self.base.base_len()
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(i);
        (
            Enumerate {
                base: l,
                offset: self.offset,
            },
            Enumerate {
                base: r,
                offset: self.offset + i,
            },
        )
    }
    fn into_seq(self) -> Self::Seq {
        EnumerateSeq {
            it: self.base.into_seq(),
            at: self.offset,
        }
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
    }
    fn max_len(&self) -> usize {
        self.base.max_len()
    }
}

impl<P: IndexedParallelIterator> IndexedParallelIterator for Enumerate<P> {}

/// [`IndexedParallelIterator::zip`]: as long as the shorter of the two.
pub struct Zip<A, B> {
    a: A,
    b: B,
}

impl<A: IndexedParallelIterator, B: IndexedParallelIterator> Zip<A, B> {
    pub(super) fn new(a: A, b: B) -> Self {
        // Cut both to the shorter length, so that their base positions line up.
        let n = a.base_len().min(b.base_len());
        let a = if a.base_len() > n { a.split_at(n).0 } else { a };
        let b = if b.base_len() > n { b.split_at(n).0 } else { b };
        Zip { a, b }
    }
}

impl<A: IndexedParallelIterator, B: IndexedParallelIterator> ParallelIterator for Zip<A, B> {
    type Item = (A::Item, B::Item);
    type Seq = std::iter::Zip<A::Seq, B::Seq>;

    fn base_len(&self) -> usize {
        self.a.base_len()
    }
    fn opt_len(&self) -> Option<usize> {
        self.a
            .opt_len()
            .and(self.b.opt_len())
            .map(|_| self.a.base_len())
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (al, ar) = self.a.split_at(i);
        let (bl, br) = self.b.split_at(i);
        (Zip { a: al, b: bl }, Zip { a: ar, b: br })
    }
    fn into_seq(self) -> Self::Seq {
        self.a.into_seq().zip(self.b.into_seq())
    }
    fn min_len(&self) -> usize {
        self.a.min_len().max(self.b.min_len())
    }
    fn max_len(&self) -> usize {
        self.a.max_len().min(self.b.max_len())
    }
}

impl<A: IndexedParallelIterator, B: IndexedParallelIterator> IndexedParallelIterator for Zip<A, B> {}
