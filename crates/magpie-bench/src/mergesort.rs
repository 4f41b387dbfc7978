//! Mergesort: top-down merge sort of `n` pseudo-random `u64` keys, the "Mergesort" benchmark of
//! CAB (Chen et al., ICPP 2011). The two halves of a run are sorted in parallel with `join`,
//! recursively, down to runs of `grain` keys (sorted with `slice::sort_unstable`); then the two
//! sorted halves are merged by one sequential loop ([`sort::merge_seq`]). That sequential merge
//! is what sets this kernel apart from [`sort`], whose merge is itself split with `join`: here
//! the top merge alone touches all `n` keys on one worker, so the span is linear in `n` (the
//! merges on one root-to-leaf path add up to about `2n` keys) and the parallelism is only
//! logarithmic in `n`.
//!
//! A scratch buffer of the same length is ping-ponged with the keys, all in safe Rust: a level
//! that must leave its result in the buffer has its halves sorted in place and merges them into
//! the buffer, and the reverse, so no level copies back. The keys are [`sort::input`], the same
//! as `sort`'s and `cilksort`'s, so the three sorts can be compared on one input.
//!
//! [`Mergesort::expected`] is the input sorted by `slice::sort_unstable`; a run must equal it
//! key for key, which shows both that it is sorted and that it is a permutation of the input.

use crate::fork::Fork;
use crate::sort::{self, merge_seq};
use crate::workload::{Info, Workload};

/// Sorts `src`, using `buf` (same length) as scratch; the result is in `buf` when `into_buf`,
/// else in `src`.
fn sort_rec<F: Fork>(f: &mut F, src: &mut [u64], buf: &mut [u64], into_buf: bool, grain: usize) {
    if src.len() <= grain {
        src.sort_unstable();
        if into_buf {
            buf.copy_from_slice(src);
        }
        return;
    }
    let mid = src.len() / 2;
    {
        let (s1, s2) = src.split_at_mut(mid);
        let (b1, b2) = buf.split_at_mut(mid);
        f.join(
            |f| sort_rec(f, s1, b1, !into_buf, grain),
            |f| sort_rec(f, s2, b2, !into_buf, grain),
        );
    }
    if into_buf {
        merge_seq(&src[..mid], &src[mid..], buf);
    } else {
        merge_seq(&buf[..mid], &buf[mid..], src);
    }
}

/// The kernel over any [`Fork`]: sorts `v`, the halves in parallel down to `grain` keys.
pub fn run<F: Fork>(f: &mut F, v: &mut [u64], grain: u64) {
    let mut buf = vec![0u64; v.len()];
    let grain = grain.clamp(1, v.len().max(1) as u64) as usize;
    sort_rec(f, v, &mut buf, false, grain);
}

/// The merge-sort workload.
pub struct Mergesort;

impl Workload for Mergesort {
    const INFO: Info = Info {
        name: "mergesort",
        source: "CAB (Chen et al., ICPP 2011) Mergesort: parallel halves, sequential merge",
        n_meaning: "keys",
        ci: 200_000,
        default: 12_000_000,
        // CAB's input size is not recorded here; this is `sort`'s paper size (1.2 GB in all).
        paper: sort::PAPER,
        min_n: 1,
        max_n: sort::MAX_N,
        grain: 4096,
        grain_meaning: "keys sorted by one sort_unstable",
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
    fn verify(n: u64, _: &(), want: &Vec<u64>, got: &Vec<u64>, _: ()) -> Result<(), String> {
        check_sorted("mergesort", n, want, got)
    }
}

/// The expected result of the sorts of [`sort::input`] (mergesort's and cilksort's): the input
/// sorted by `slice::sort_unstable`.
pub(crate) fn sorted_input(n: u64) -> Vec<u64> {
    let mut v = sort::input(n);
    v.sort_unstable();
    v
}

/// Compares a sort's result with the sorted input, key for key; the error names the first key
/// that differs.
pub(crate) fn check_sorted(name: &str, n: u64, want: &[u64], got: &[u64]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{name}({n}): {} keys, expected {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{name}({n}): key {i} is {}, the sorted input has {} there",
            got[i], want[i]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Magpie, Serial};

    #[test]
    fn every_version_sorts() {
        crate::workload::check_everywhere::<Mergesort>(&[1, 2, 3, 1000, 20_000], &[1, 7, 4096]);
    }

    #[test]
    fn awkward_inputs_sort() {
        let n = 10_000u64;
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        let inputs: [Vec<u64>; 4] = [
            vec![42; n as usize],
            (0..n).collect(),
            (0..n).rev().collect(),
            sort::input(n).into_iter().map(|x| x % 3).collect(),
        ];
        for keys in inputs {
            let mut want = keys.clone();
            want.sort();
            for grain in [1, 5, 64] {
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
        let want = Mergesort::expected(n, &());
        let mut v = Mergesort::input(n, &());
        // Unsorted: the input itself.
        assert!(Mergesort::verify(n, &(), &want, &v, ()).is_err());
        run(&mut Serial, &mut v, 16);
        assert_eq!(Mergesort::verify(n, &(), &want, &v, ()), Ok(()));
        // Sorted but not a permutation: a key replaced by its neighbour.
        v[500] = v[499];
        let e = Mergesort::verify(n, &(), &want, &v, ()).unwrap_err();
        assert!(e.contains("key 500"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        v.pop();
        let e = Mergesort::verify(n, &(), &want, &v, ()).unwrap_err();
        assert!(e.contains("999 keys"), "{e}");
    }
}
