//! Cilksort: the sort of the Cilk distribution (cilksort), as used by Friendly Barriers, on `n`
//! pseudo-random `u64` keys ([`sort::input`], the same keys as `sort` and `mergesort`). A run of
//! more than `grain` keys is cut into four quarters, which are sorted in parallel (two nested
//! `join`s), recursively; then the two pairs of sorted quarters are merged in parallel into a
//! temporary buffer, and the two halves in the buffer are merged back into the array. A run of at
//! most `grain` keys is sorted by a sequential quicksort of its own ([`quicksort`]: the median of
//! three as pivot, Hoare's partition, recursion on the smaller side and a loop on the larger)
//! which hands runs of at most [`INSERTION`] keys to an insertion sort. Every merge is Cilk's
//! cilkmerge, which [`sort::merge_rec`] already is: the longer run is cut at its midpoint, the
//! other is cut at that key by binary search, and the two pairs are merged with `join`, down to
//! merges of [`sort::MERGE_CUTOFF`] keys (a fixed cutoff; the grain only sets the quicksort
//! leaves).
//!
//! How it differs from [`sort`]: `sort` splits a run in two, not four, sorts its leaves with
//! `slice::sort_unstable` rather than a hand-written quicksort, and ping-pongs one buffer
//! between levels, while cilksort merges each level out to the buffer and back (two merge passes
//! per level of four-way split). Both use the same parallel merge.
//!
//! [`Cilksort::expected`] is the input sorted by `slice::sort_unstable`; a run must equal it key
//! for key (sorted, and a permutation of the input).

use crate::kernel::{Def, Kernel};
use crate::fork::Fork;
use crate::kernels::mergesort::{check_sorted, sorted_input};
use crate::kernels::sort::{self, merge_rec};
use crate::workload::{self, Info, Workload};

/// Runs of at most this many keys are finished by insertion sort inside [`quicksort`] (Cilk's
/// `INSERTIONSIZE`).
pub const INSERTION: usize = 20;

/// Sorts `v` by straight insertion.
fn insertion_sort(v: &mut [u64]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Hoare's partition of `v` (at least 3 keys) around the median of its first, middle and last
/// keys: returns `s` in `1..v.len()` with every key of `v[..s]` ≤ every key of `v[s..]`.
fn partition(v: &mut [u64]) -> usize {
    let (lo, mid, hi) = (0, (v.len() - 1) / 2, v.len() - 1);
    // Order the three samples in place: v[lo] <= v[mid] <= v[hi], so that the ends stop both
    // scans below and the pivot (the lower middle key) is neither the largest nor the smallest.
    if v[mid] < v[lo] {
        v.swap(mid, lo);
    }
    if v[hi] < v[mid] {
        v.swap(hi, mid);
        if v[mid] < v[lo] {
            v.swap(mid, lo);
        }
    }
    let pivot = v[mid];
    let (mut i, mut j) = (lo, hi);
    loop {
        while v[i] < pivot {
            i += 1;
        }
        while v[j] > pivot {
            j -= 1;
        }
        if i >= j {
            return j + 1;
        }
        v.swap(i, j);
        i += 1;
        j -= 1;
    }
}

/// The sequential quicksort of the leaves.
pub fn quicksort(mut v: &mut [u64]) {
    while v.len() > INSERTION {
        let s = partition(v);
        let (lo, hi) = std::mem::take(&mut v).split_at_mut(s);
        if lo.len() < hi.len() {
            quicksort(lo);
            v = hi;
        } else {
            quicksort(hi);
            v = lo;
        }
    }
    insertion_sort(v);
}

/// Sorts `v` with `tmp` (same length) as scratch: four quarters in parallel, then the two merges
/// into `tmp` in parallel, then the merge back into `v`.
fn cilksort<F: Fork>(f: &mut F, v: &mut [u64], tmp: &mut [u64], grain: usize) {
    if v.len() <= grain || v.len() < 4 {
        return quicksort(v);
    }
    let q = v.len() / 4;
    {
        let (ab, cd) = v.split_at_mut(2 * q);
        let (a, b) = ab.split_at_mut(q);
        let (c, d) = cd.split_at_mut(q);
        let (tab, tcd) = tmp.split_at_mut(2 * q);
        let (ta, tb) = tab.split_at_mut(q);
        let (tc, td) = tcd.split_at_mut(q);
        f.join(
            |f| f.join(|f| cilksort(f, a, ta, grain), |f| cilksort(f, b, tb, grain)),
            |f| f.join(|f| cilksort(f, c, tc, grain), |f| cilksort(f, d, td, grain)),
        );
    }
    {
        let (ab, cd) = v.split_at(2 * q);
        let (tab, tcd) = tmp.split_at_mut(2 * q);
        f.join(
            |f| merge_rec(f, &ab[..q], &ab[q..], tab),
            |f| merge_rec(f, &cd[..q], &cd[q..], tcd),
        );
    }
    merge_rec(f, &tmp[..2 * q], &tmp[2 * q..], v);
}

/// The kernel over any [`Fork`]: sorts `v`, splitting runs of more than `grain` keys.
pub fn run<F: Fork>(f: &mut F, v: &mut [u64], grain: u64) {
    let mut tmp = vec![0u64; v.len()];
    let grain = grain.min(v.len() as u64) as usize;
    cilksort(f, v, &mut tmp, grain);
}

/// The cilksort workload.
pub struct Cilksort;

static DEF: Def = workload::def::<Cilksort>();
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Cilksort {
    const INFO: Info = Info {
        name: "cilksort",
        source: "Friendly Barriers (Cilk's cilksort): 4-way split, quicksort leaves, cilkmerge",
        n_meaning: "keys",
        ci: 200_000,
        default: 6_000_000,
        // The paper's input size is not recorded here; this is `sort`'s paper size (1.2 GB in
        // all).
        paper: sort::PAPER,
        min_n: 1,
        max_n: sort::MAX_N,
        grain: 2048,
        grain_meaning: "keys sorted by one sequential quicksort",
    };
    type Shared = ();
    type Input = Vec<u64>;
    type Output = ();
    type Expected = Vec<u64>;

    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Vec<u64> {
        sort::input(n)
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, _: &(), v: &mut Vec<u64>) {
        run(f, v, grain)
    }
    fn expected(n: u64, _: &()) -> Vec<u64> {
        sorted_input(n)
    }
    fn answer(_: u64, _: &(), v: &Vec<u64>, _: &()) -> String {
        sort::answer(v.iter().copied())
    }
    fn verify(n: u64, _: &(), want: &Vec<u64>, got: &Vec<u64>, _: ()) -> Result<(), String> {
        check_sorted("cilksort", n, want, got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Magpie, Serial};

    #[test]
    fn every_version_sorts() {
        crate::workload::check_everywhere::<Cilksort>(&[1, 2, 5, 1000, 40_000], &[1, 7, 2048]);
    }

    /// Awkward inputs of length `n`: constant, ascending, descending, few distinct, random.
    fn awkward(n: u64) -> [Vec<u64>; 5] {
        [
            vec![42; n as usize],
            (0..n).collect(),
            (0..n).rev().collect(),
            sort::input(n).into_iter().map(|x| x % 3).collect(),
            sort::input(n),
        ]
    }

    #[test]
    fn quicksort_sorts() {
        for n in (0..70).chain([1000, 4321]) {
            for keys in awkward(n) {
                let mut want = keys.clone();
                want.sort();
                let mut v = keys;
                quicksort(&mut v);
                assert_eq!(v, want, "n = {n}");
            }
        }
    }

    #[test]
    fn partition_splits_and_makes_progress() {
        for n in 3..200 {
            for mut v in awkward(n) {
                let s = partition(&mut v);
                assert!((1..v.len()).contains(&s), "n = {n}: split {s}");
                let left = v[..s].iter().max().unwrap();
                let right = v[s..].iter().min().unwrap();
                assert!(left <= right, "n = {n}: {left} > {right}");
            }
        }
    }

    #[test]
    fn awkward_inputs_sort() {
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        for keys in awkward(3 * sort::MERGE_CUTOFF as u64 + 17) {
            let mut want = keys.clone();
            want.sort();
            for grain in [1, 50, 4096] {
                let mut v = keys.clone();
                run(&mut Serial, &mut v, grain);
                assert_eq!(v, want, "serial, grain {grain}");
                let mut v = keys.clone();
                pool.install(|| run(&mut Magpie, &mut v, grain));
                assert_eq!(v, want, "magpie, grain {grain}");
            }
        }
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 1000;
        let want = Cilksort::expected(n, &());
        let mut v = Cilksort::input(n, &());
        assert!(Cilksort::verify(n, &(), &want, &v, ()).is_err());
        run(&mut Serial, &mut v, 16);
        assert_eq!(Cilksort::verify(n, &(), &want, &v, ()), Ok(()));
        v[10] = v[11];
        let e = Cilksort::verify(n, &(), &want, &v, ()).unwrap_err();
        assert!(e.contains("cilksort(1000): key 10"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
