//! Sort: parallel merge sort of `n` pseudo-random `u64` keys, the "Sort" benchmark of SLAW (Guo
//! et al., IPDPS 2010) Table I, in the family of Cilk's cilksort. The keys come from a splitmix64
//! stream with a fixed seed ([`input`]). The sort recursively sorts the two halves in parallel
//! with `join` down to a grain of [`SORT_CUTOFF`] keys by default (runs of at most the grain are
//! sorted with `slice::sort_unstable`; `--grain` sets it), then merges them; the merge is itself
//! parallel down to [`MERGE_CUTOFF`] elements (fixed, whatever the grain): the larger run is split
//! at its midpoint, the split point of the other run is found by binary search, and the two pairs
//! are merged with `join` into disjoint halves of the output. A scratch buffer of the same length
//! is ping-ponged with the input (each level merges from one into the other), all in safe Rust.
//! Versions: magpie ([`parallel`], `magpie::join`), the serial twin ([`serial`]: the same
//! recursion with the two calls made one after the other), rayon ([`rayon_join`]) and chili
//! ([`chili_join`]), each also with a grain ([`parallel_grain`] and so on); [`verify`] checks the
//! result is sorted and a permutation of the input (the grain changes where the recursion stops,
//! never the result: a sorted permutation is unique).

use crate::harness::{answered, Measured, RunError};
use crate::kernel::{self, Def, Grain, Kernel};
use crate::kernel::Case;
use crate::workload::Runtime;
use crate::Peer;

use crate::fork::{Chili, Fork, Magpie, Rayon, Serial};

/// Keys for `--size ci`.
pub const CI: u64 = 100_000;
/// Keys for `--size default` (about half a second serially here).
pub const DEFAULT: u64 = 10_000_000;
/// Keys for `--size paper`: SLAW Table I's 50,331,648 random integers.
pub const PAPER: u64 = 50_331_648;
/// Largest `n` accepted (the input and the scratch buffer take 16 bytes per key).
pub const MAX_N: u64 = 1_000_000_000;
/// The default grain: runs of at most this many keys are sorted with `slice::sort_unstable`.
pub const SORT_CUTOFF: usize = 4096;
/// Merges producing at most this many keys are sequential (fixed, whatever the grain).
pub const MERGE_CUTOFF: usize = 8192;

/// The seed of the key stream.
const SEED: u64 = 0x5EED_0000_5027;

/// The splitmix64 stream of `n` keys from [`SEED`].
fn keys(n: u64) -> impl Iterator<Item = u64> {
    let mut state = SEED;
    (0..n).map(move |_| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// The `n` keys to sort: deterministic, uniformly spread over `u64`.
pub fn input(n: u64) -> Vec<u64> {
    keys(n).collect()
}

/// Merges the sorted runs `a` and `b` into `out` (`out.len() == a.len() + b.len()`). The loop
/// selects without a data-dependent branch (random keys would mispredict half the time).
pub fn merge_seq(a: &[u64], b: &[u64], out: &mut [u64]) {
    debug_assert_eq!(a.len() + b.len(), out.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let take_b = y < x;
        out[i + j] = if take_b { y } else { x };
        j += take_b as usize;
        i += !take_b as usize;
    }
    let k = i + j;
    out[k..k + a.len() - i].copy_from_slice(&a[i..]);
    out[k + a.len() - i..].copy_from_slice(&b[j..]);
}

/// The split of a large merge: `(ia, ib)` such that `a[..ia]` and `b[..ib]` hold keys no larger
/// than those of `a[ia..]` and `b[ib..]`, with `a` the longer run cut at its midpoint. Returns
/// the runs in (longer, shorter) order with the cut points.
#[inline]
fn merge_split<'a>(a: &'a [u64], b: &'a [u64]) -> (&'a [u64], &'a [u64], usize, usize) {
    let (a, b) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let ia = a.len() / 2;
    let pivot = a[ia];
    let ib = b.partition_point(|&x| x < pivot);
    (a, b, ia, ib)
}

/// Sorts a leaf run of `src`, leaving the result in `buf` when `into_buf`.
#[inline]
fn sort_leaf(src: &mut [u64], buf: &mut [u64], into_buf: bool) {
    src.sort_unstable();
    if into_buf {
        buf.copy_from_slice(src);
    }
}

// ---- the sort, once, for every `Fork` -----------------------------------------------------------

/// Merges the sorted runs `a` and `b` into `out` (`out.len() == a.len() + b.len()`) in parallel:
/// the longer run is cut at its midpoint, the other at that key by binary search, and the two
/// pairs are merged with `join`, down to [`MERGE_CUTOFF`] keys.
pub fn merge_rec<F: Fork>(f: &mut F, a: &[u64], b: &[u64], out: &mut [u64]) {
    if out.len() <= MERGE_CUTOFF {
        return merge_seq(a, b, out);
    }
    let (a, b, ia, ib) = merge_split(a, b);
    let (lo, hi) = out.split_at_mut(ia + ib);
    f.join(
        |f| merge_rec(f, &a[..ia], &b[..ib], lo),
        |f| merge_rec(f, &a[ia..], &b[ib..], hi),
    );
}

/// Sorts `src` (with `buf` as scratch of the same length), runs of at most `grain` keys (at
/// least 1) with `sort_unstable`; the result is in `buf` when `into_buf`, else in `src`.
fn sort_rec<F: Fork>(f: &mut F, grain: usize, src: &mut [u64], buf: &mut [u64], into_buf: bool) {
    if src.len() <= grain {
        return sort_leaf(src, buf, into_buf);
    }
    let mid = src.len() / 2;
    {
        let (s1, s2) = src.split_at_mut(mid);
        let (b1, b2) = buf.split_at_mut(mid);
        f.join(
            |f| sort_rec(f, grain, s1, b1, !into_buf),
            |f| sort_rec(f, grain, s2, b2, !into_buf),
        );
    }
    if into_buf {
        merge_rec(f, &src[..mid], &src[mid..], buf);
    } else {
        merge_rec(f, &buf[..mid], &buf[mid..], src);
    }
}

/// The grain as a leaf size: at least 1 (a grain of 0 would split one-key runs forever).
fn leaf_keys(grain: usize) -> usize {
    grain.max(1)
}

fn sort_with<F: Fork>(mut f: F, v: &mut [u64], grain: usize) {
    let mut buf = vec![0u64; v.len()];
    sort_rec(&mut f, leaf_keys(grain), v, &mut buf, false);
}

/// The serial twin: the same merge sort (same cutoffs, same parallel-shaped merge) with the two
/// halves of every split done one after the other, no runtime.
pub fn serial(v: &mut [u64]) {
    serial_grain(v, SORT_CUTOFF)
}

/// [`serial`] with runs of at most `grain` keys (0 counts as 1) sorted by `sort_unstable`.
pub fn serial_grain(v: &mut [u64], grain: usize) {
    sort_with(Serial, v, grain)
}

/// Sorts `v` with `magpie::join` for both the recursive sort and the merge. Call inside
/// `Pool::install`.
pub fn parallel(v: &mut [u64]) {
    parallel_grain(v, SORT_CUTOFF)
}

/// [`parallel`] with runs of at most `grain` keys (0 counts as 1) sorted by `sort_unstable`.
pub fn parallel_grain(v: &mut [u64], grain: usize) {
    sort_with(Magpie, v, grain)
}

/// The same merge sort with `rayon::join`. Call inside `rayon::ThreadPool::install`.
pub fn rayon_join(v: &mut [u64]) {
    rayon_join_grain(v, SORT_CUTOFF)
}

/// [`rayon_join`] with runs of at most `grain` keys (0 counts as 1) sorted by `sort_unstable`.
pub fn rayon_join_grain(v: &mut [u64], grain: usize) {
    sort_with(Rayon, v, grain)
}

// ---- chili --------------------------------------------------------------------------------------

/// The same merge sort with `chili::Scope::join`.
pub fn chili_join(s: &mut chili::Scope<'_>, v: &mut [u64]) {
    chili_join_grain(s, v, SORT_CUTOFF)
}

/// [`chili_join`] with runs of at most `grain` keys (0 counts as 1) sorted by `sort_unstable`.
pub fn chili_join_grain(s: &mut chili::Scope<'_>, v: &mut [u64], grain: usize) {
    sort_with(Chili::new(s), v, grain)
}

// ---- verification ------------------------------------------------------------------------------

/// Order-independent digest of a multiset of keys: count, wrapping sum, xor, wrapping sum of
/// squares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Digest {
    len: u64,
    sum: u64,
    xor: u64,
    sum_sq: u64,
}

impl Digest {
    fn of(keys: impl Iterator<Item = u64>) -> Digest {
        keys.fold(Digest::default(), |d, x| Digest {
            len: d.len + 1,
            sum: d.sum.wrapping_add(x),
            xor: d.xor ^ x,
            sum_sq: d.sum_sq.wrapping_add(x.wrapping_mul(x)),
        })
    }
}

/// The answer of a sort, given its output in order: `sorted, N keys, checksum 0x…`, where the
/// checksum is Σ (i + 1) · key_i mod 2^64 over the output (i from 0), so that it depends on the
/// order of the keys as well as on the keys. The sorts of the same keys answer alike.
pub fn answer(sorted: impl IntoIterator<Item = u64>) -> String {
    let (n, sum) = sorted.into_iter().fold((0u64, 0u64), |(i, s), k| {
        (i + 1, s.wrapping_add((i + 1).wrapping_mul(k)))
    });
    format!("sorted, {n} keys, checksum {sum:#018x}")
}

/// Checks that `v` is sorted and is a permutation of `input(n)` (by length and an
/// order-independent checksum of the keys, recomputed from the key stream).
pub fn verify(n: u64, v: &[u64]) -> Result<(), String> {
    if v.len() as u64 != n {
        return Err(format!("sort({n}): got {} keys, expected {n}", v.len()));
    }
    if let Some(i) = v.windows(2).position(|w| w[0] > w[1]) {
        return Err(format!(
            "sort({n}): not sorted at index {i}: {} > {}",
            v[i],
            v[i + 1]
        ));
    }
    let want = Digest::of(keys(n));
    let got = Digest::of(v.iter().copied());
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "sort({n}): sorted, but not a permutation of the input (checksum {:#x}/{:#x}/{:#x}, \
             expected {:#x}/{:#x}/{:#x})",
            got.sum, got.xor, got.sum_sq, want.sum, want.xor, want.sum_sq
        ))
    }
}

static DEF: Def = Def {
    name: "sort",
    n_meaning: "keys",
    sizes: [CI, DEFAULT, PAPER],
    max_n: MAX_N,
    grain: Some(Grain {
        default: Some(SORT_CUTOFF as u64),
        max: Some(MAX_N),
        meaning: "keys sorted by one sort_unstable",
        check: None,
    }),
    peers: &[Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times the sort on `rt` at the case's grain.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let n = case.n;
    let g = case.grain.map_or(SORT_CUTOFF, |g| g as usize);
    kernel::measure_versions(
        rt,
        runs,
        || input(n),
        |v| serial_grain(v, g),
        |v| parallel_grain(v, g),
        |v| rayon_join_grain(v, g),
        |s, v| chili_join_grain(s, v, g),
        |v, ()| answered(verify(n, v), || answer(v.iter().copied())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs every version on a copy of `keys` and checks each against `slice::sort`.
    fn all_versions_sort(keys: &[u64]) {
        let mut want = keys.to_vec();
        want.sort();
        let mut v = keys.to_vec();
        serial(&mut v);
        assert_eq!(v, want, "serial, len {}", keys.len());
        for w in [1, 2] {
            for p in [
                magpie::Policy::WorkFirst,
                magpie::Policy::HelpFirst,
                magpie::Policy::Adaptive,
            ] {
                let pool = magpie::Pool::builder()
                    .workers(w)
                    .policy(p)
                    .build()
                    .unwrap();
                let mut v = keys.to_vec();
                pool.install(|| parallel(&mut v));
                assert_eq!(v, want, "magpie {p} x{w}, len {}", keys.len());
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            let mut v = keys.to_vec();
            pool.install(|| rayon_join(&mut v));
            assert_eq!(v, want, "rayon x{w}, len {}", keys.len());
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            });
            let mut v = keys.to_vec();
            chili_join(&mut pool.scope(), &mut v);
            assert_eq!(v, want, "chili x{w}, len {}", keys.len());
        }
    }

    #[test]
    fn input_is_deterministic() {
        assert_eq!(input(1000), input(1000));
        assert_eq!(input(10)[..], input(1000)[..10]);
        assert_ne!(input(2)[0], input(2)[1]);
    }

    #[test]
    fn serial_twin_verifies() {
        let mut v = input(CI);
        serial(&mut v);
        assert_eq!(verify(CI, &v), Ok(()));
    }

    #[test]
    fn magpie_verifies_under_every_policy_and_width() {
        for w in [1, 2] {
            for p in [
                magpie::Policy::WorkFirst,
                magpie::Policy::HelpFirst,
                magpie::Policy::Adaptive,
            ] {
                let pool = magpie::Pool::builder()
                    .workers(w)
                    .policy(p)
                    .build()
                    .unwrap();
                let mut v = input(CI);
                pool.install(|| parallel(&mut v));
                assert_eq!(verify(CI, &v), Ok(()), "{p} x{w}");
            }
        }
    }

    #[test]
    fn peers_verify() {
        for w in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            let mut v = input(CI);
            pool.install(|| rayon_join(&mut v));
            assert_eq!(verify(CI, &v), Ok(()), "rayon x{w}");
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            });
            let mut v = input(CI);
            chili_join(&mut pool.scope(), &mut v);
            assert_eq!(verify(CI, &v), Ok(()), "chili x{w}");
        }
    }

    #[test]
    fn every_version_verifies_at_other_grains() {
        // Past MERGE_CUTOFF, so the parallel merge runs under every grain; 0 counts as 1.
        let n = 3 * MERGE_CUTOFF as u64 + 17;
        for grain in [0, 1, 2, 1000, n as usize, usize::MAX] {
            let ok = |what: &str, v: &[u64]| {
                assert_eq!(verify(n, v), Ok(()), "{what}, grain {grain}");
            };
            let mut v = input(n);
            serial_grain(&mut v, grain);
            ok("serial", &v);
            for w in [1, 2] {
                let pool = magpie::Pool::builder().workers(w).build().unwrap();
                let mut v = input(n);
                pool.install(|| parallel_grain(&mut v, grain));
                ok(&format!("magpie x{w}"), &v);
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                let mut v = input(n);
                pool.install(|| rayon_join_grain(&mut v, grain));
                ok(&format!("rayon x{w}"), &v);
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                let mut v = input(n);
                chili_join_grain(&mut pool.scope(), &mut v, grain);
                ok(&format!("chili x{w}"), &v);
            }
        }
    }

    #[test]
    fn edge_cases_sort() {
        for n in 0..=3 {
            all_versions_sort(&input(n));
            let mut v = input(n);
            serial(&mut v);
            assert_eq!(verify(n, &v), Ok(()), "n = {n}");
        }
        // Past both cutoffs, so the recursive sort and the parallel merge both run.
        let n = 3 * MERGE_CUTOFF + 17;
        all_versions_sort(&vec![42; n]);
        let ascending: Vec<u64> = (0..n as u64).collect();
        all_versions_sort(&ascending);
        let descending: Vec<u64> = (0..n as u64).rev().collect();
        all_versions_sort(&descending);
        // Few distinct keys: long runs of equal keys straddle the merge split points.
        let few: Vec<u64> = input(n as u64).into_iter().map(|x| x % 3).collect();
        all_versions_sort(&few);
    }

    #[test]
    fn merge_split_and_merge_agree_with_sort() {
        let a: Vec<u64> = (0..20_000u64).map(|x| x * 2).collect();
        let mut b: Vec<u64> = (0..5_000u64).map(|x| x * 7 % 40_000).collect();
        b.sort_unstable();
        let mut out = vec![0; a.len() + b.len()];
        merge_rec(&mut Serial, &a, &b, &mut out);
        let mut want = [&a[..], &b[..]].concat();
        want.sort_unstable();
        assert_eq!(out, want);
        let (long, _, ia, ib) = merge_split(&b, &a);
        assert_eq!(long.len(), a.len());
        assert!(a[..ia].iter().chain(&b[..ib]).all(|&x| x < a[ia]));
        assert!(b[ib..].iter().all(|&x| x >= a[ia]));
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 1000;
        let mut v = input(n);
        let e = verify(n, &v).unwrap_err();
        assert!(e.contains("not sorted"), "{e}");
        v.sort_unstable();
        assert_eq!(verify(n, &v), Ok(()));
        // Sorted, right length, but one key replaced by a duplicate of its neighbour.
        let mut w = v.clone();
        w[500] = w[499];
        let e = verify(n, &w).unwrap_err();
        assert!(e.contains("not a permutation"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        // Sorted, but a key missing.
        let e = verify(n, &v[1..]).unwrap_err();
        assert!(e.contains("999 keys"), "{e}");
        assert!(verify(0, &[]).is_ok());
        assert!(verify(1, &[0]).is_err());
    }
}
