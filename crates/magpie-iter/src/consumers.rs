//! `collect`: building collections from parallel iterators (rayon's `FromParallelIterator`).
//! Each piece collects sequentially; the pieces are joined in order (left before right), so a
//! `Vec` or a `String` comes out in the sequential order.

use super::{drive, ParallelIterator};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};
use std::mem::MaybeUninit;

/// A collection a parallel iterator can be collected into.
///
/// ```
/// use magpie_iter::prelude::*;
/// use std::collections::{BTreeMap, HashSet};
///
/// let words = ["fig", "pear", "fig", "plum"];
/// let lengths: BTreeMap<&str, usize> = words.par_iter().map(|w| (*w, w.len())).collect();
/// assert_eq!(lengths["pear"], 4);
/// let distinct: HashSet<&str> = words.par_iter().copied().collect();
/// assert_eq!(distinct.len(), 3);
/// let joined: String = words.par_iter().copied().collect();
/// assert_eq!(joined, "figpearfigplum");
/// let (firsts, lens): (Vec<char>, Vec<usize>) =
///     words.par_iter().map(|w| (w.chars().next().unwrap(), w.len())).unzip();
/// assert_eq!((firsts, lens), (vec!['f', 'p', 'f', 'p'], vec![3, 4, 3, 4]));
/// ```
pub trait FromParallelIterator<T: Send>: Sized {
    /// Collects `p`.
    fn from_par_iter<P: ParallelIterator<Item = T>>(p: P) -> Self;
}

/// Collects `p`'s pieces with `FromIterator`, joining them with `join` (left, right).
fn pieces<P, C>(p: P, join: &(impl Fn(C, C) -> C + Sync)) -> C
where
    P: ParallelIterator,
    C: FromIterator<P::Item> + Default + Send,
{
    drive(p, &|it: P::Seq| it.collect::<C>(), join, None).unwrap_or_default()
}

impl<T: Send> FromParallelIterator<T> for Vec<T> {
    /// In the iterator's order. With a known length (an indexed iterator), every piece writes
    /// its items straight into their places in the result; otherwise the pieces' vectors are
    /// appended left to right.
    fn from_par_iter<P: ParallelIterator<Item = T>>(p: P) -> Self {
        if let Some(n) = p.opt_len() {
            return collect_in_place(p, n);
        }
        pieces(p, &|mut a: Vec<T>, mut b: Vec<T>| {
            a.append(&mut b);
            a
        })
    }
}

/// `p` paired with the slots its items go to: split at the same positions (one item per base
/// position, which `opt_len` promised and the count below checks).
struct WithSlots<'a, P, T> {
    base: P,
    slots: &'a mut [MaybeUninit<T>],
}

impl<'a, P: ParallelIterator<Item = T>, T: Send> ParallelIterator for WithSlots<'a, P, T> {
    type Item = (&'a mut MaybeUninit<T>, T);
    type Seq = std::iter::Zip<std::slice::IterMut<'a, MaybeUninit<T>>, P::Seq>;

    fn base_len(&self) -> usize {
        self.base.base_len().min(self.slots.len())
    }
    fn split_at(self, i: usize) -> (Self, Self) {
        let (bl, br) = self.base.split_at(i);
        let (sl, sr) = self.slots.split_at_mut(i);
        (
            WithSlots {
                base: bl,
                slots: sl,
            },
            WithSlots {
                base: br,
                slots: sr,
            },
        )
    }
    fn into_seq(self) -> Self::Seq {
        self.slots.iter_mut().zip(self.base.into_seq())
    }
}

/// Collects `p`, whose length is `n`, by writing each item into its slot.
fn collect_in_place<P: ParallelIterator<Item = T>, T: Send>(p: P, n: usize) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(n);
    let written = drive(
        WithSlots {
            base: p,
            slots: &mut out.spare_capacity_mut()[..n],
        },
        &|it: std::iter::Zip<std::slice::IterMut<'_, MaybeUninit<T>>, P::Seq>| {
            it.map(|(slot, x)| {
                slot.write(x);
            })
            .count()
        },
        &|a, b| a + b,
        None,
    )
    .unwrap_or(0);
    assert_eq!(
        written, n,
        "a parallel iterator yielded {written} items where its length promised {n}"
    );
    // Every piece writes a prefix of its own slots, one item each, and the pieces' slots are
    // disjoint and cover the first `n` of `out`'s spare capacity; so `n` writes in all means
    // every one of those slots was written once.
    // SAFETY: the first `n` elements of the buffer are initialised (above) and `n` is within the
    // capacity `out` was made with.
    unsafe { out.set_len(n) };
    out
}

impl FromParallelIterator<char> for String {
    fn from_par_iter<P: ParallelIterator<Item = char>>(p: P) -> Self {
        pieces(p, &|mut a: String, b: String| {
            a.push_str(&b);
            a
        })
    }
}

impl<'a> FromParallelIterator<&'a str> for String {
    fn from_par_iter<P: ParallelIterator<Item = &'a str>>(p: P) -> Self {
        pieces(p, &|mut a: String, b: String| {
            a.push_str(&b);
            a
        })
    }
}

impl FromParallelIterator<String> for String {
    fn from_par_iter<P: ParallelIterator<Item = String>>(p: P) -> Self {
        pieces(p, &|mut a: String, b: String| {
            a.push_str(&b);
            a
        })
    }
}

impl<K, V, S> FromParallelIterator<(K, V)> for HashMap<K, V, S>
where
    K: Eq + Hash + Send,
    V: Send,
    S: BuildHasher + Default + Send,
{
    /// Later items win over earlier ones with the same key, as in the sequential `collect`.
    fn from_par_iter<P: ParallelIterator<Item = (K, V)>>(p: P) -> Self {
        pieces(p, &|mut a: HashMap<K, V, S>, b: HashMap<K, V, S>| {
            a.extend(b);
            a
        })
    }
}

impl<T, S> FromParallelIterator<T> for HashSet<T, S>
where
    T: Eq + Hash + Send,
    S: BuildHasher + Default + Send,
{
    fn from_par_iter<P: ParallelIterator<Item = T>>(p: P) -> Self {
        pieces(p, &|mut a: HashSet<T, S>, b: HashSet<T, S>| {
            a.extend(b);
            a
        })
    }
}

impl<K: Ord + Send, V: Send> FromParallelIterator<(K, V)> for BTreeMap<K, V> {
    /// Later items win over earlier ones with the same key, as in the sequential `collect`.
    fn from_par_iter<P: ParallelIterator<Item = (K, V)>>(p: P) -> Self {
        pieces(p, &|mut a: BTreeMap<K, V>, mut b: BTreeMap<K, V>| {
            a.append(&mut b);
            a
        })
    }
}

impl<T: Ord + Send> FromParallelIterator<T> for BTreeSet<T> {
    fn from_par_iter<P: ParallelIterator<Item = T>>(p: P) -> Self {
        pieces(p, &|mut a: BTreeSet<T>, mut b: BTreeSet<T>| {
            a.append(&mut b);
            a
        })
    }
}
