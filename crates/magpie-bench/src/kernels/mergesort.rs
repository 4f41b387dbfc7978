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

use crate::kernel::{Def, Kernel};
use crate::fork::Fork;
use crate::kernels::sort::{self, merge_seq};
use crate::workload::{self, Info, Workload};

/// Sorts a leaf run `src` in place, and copies it into `buf` when `into_buf`.
fn sort_leaf(src: &mut [u64], buf: &mut [u64], into_buf: bool) {
    // For the cache model (`magpie locality`): the run, read and written, and the copy. A
    // thread-local read unless the pool records leaves.
    let run = magpie::cachemodel::range_of(src);
    if into_buf {
        let copy = magpie::cachemodel::range_of(buf);
        magpie::cachemodel::leaf(std::slice::from_ref(&run), &[run.clone(), copy]);
    } else {
        magpie::cachemodel::leaf(std::slice::from_ref(&run), std::slice::from_ref(&run));
    }
    src.sort_unstable();
    if into_buf {
        buf.copy_from_slice(src);
    }
}

/// Merges the sorted halves (cut at `mid`) of `src` into `buf` when `into_buf`, else those of
/// `buf` into `src`.
fn merge_halves(src: &mut [u64], buf: &mut [u64], mid: usize, into_buf: bool) {
    let (from, to): (&[u64], &mut [u64]) = if into_buf { (src, buf) } else { (buf, src) };
    // For the cache model: both halves read, the output written.
    magpie::cachemodel::leaf(
        &[
            magpie::cachemodel::range_of(&from[..mid]),
            magpie::cachemodel::range_of(&from[mid..]),
        ],
        &[magpie::cachemodel::range_of(to)],
    );
    merge_seq(&from[..mid], &from[mid..], to);
}

/// Sorts `src`, using `buf` (same length) as scratch; the result is in `buf` when `into_buf`,
/// else in `src`.
fn sort_rec<F: Fork>(f: &mut F, src: &mut [u64], buf: &mut [u64], into_buf: bool, grain: usize) {
    if src.len() <= grain {
        return sort_leaf(src, buf, into_buf);
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
    merge_halves(src, buf, mid, into_buf);
}

/// The kernel over any [`Fork`]: sorts `v`, the halves in parallel down to `grain` keys. In a
/// magpie pool with places or squads, `run_hinted` instead (the same sort).
pub fn run<F: Fork>(f: &mut F, v: &mut [u64], grain: u64) {
    let mut buf = vec![0u64; v.len()];
    let grain = grain.clamp(1, v.len().max(1) as u64) as usize;
    if f.places() > 1 {
        return run_hinted(v, &mut buf, grain);
    }
    sort_rec(f, v, &mut buf, false, grain);
}

// ---- locality hints -----------------------------------------------------------------------------

/// [`sort_rec`] with locality hints, on magpie in a pool with places (squads have them too): the
/// same halving, with its top `bl` levels split out. The runs at level `bl` (the root is level 1,
/// so up to 2^(bl−1) of them) are sorted by [`sort_rec`] with plain `join`: with CAB's squads,
/// the levels above are inter-socket tasks ([`inter_sort`]) down to [`magpie::bi_tier`]'s
/// boundary level; with SLAW's places, `bl` − 1 halvings give every place at least one run and
/// each place gets one contiguous share of them ([`send_parts`]). Then the merges of the top
/// levels run as in [`sort_rec`] ([`merge_top`]), after all the runs are sorted.
fn run_hinted(v: &mut [u64], buf: &mut [u64], grain: usize) {
    let bl = if magpie::current_squads() {
        // CAB's data size: the keys and the scratch buffer, 16 bytes a key.
        let data = 16 * v.len() as u64;
        let squads = 0..magpie::current_places();
        magpie::bi_tier(data, 2, |s, bl| {
            inter_sort(s, 1, bl, squads, &mut *v, &mut *buf, false, grain);
            bl
        })
    } else {
        let places = magpie::current_places();
        let bl = 1 + places.next_power_of_two().trailing_zeros();
        magpie::scope(|s| send_parts(s, 1, bl, 0, places, &mut *v, &mut *buf, false, grain));
        bl
    };
    merge_top(1, bl, v, buf, false, grain);
}

/// CAB's inter-socket tier: at `level` (< `bl`), halves the run into two inter-socket tasks
/// without merging them ([`merge_top`] does, later), each named for the first of its half of
/// `squads` ([`magpie::Scope::inter_spawn_at`]); at the boundary level, or for a run of at most
/// `grain` keys, sorts it within the squad that took it.
#[allow(clippy::too_many_arguments)]
fn inter_sort<'s>(
    s: &magpie::Scope<'s>,
    level: u32,
    bl: u32,
    squads: std::ops::Range<usize>,
    src: &'s mut [u64],
    buf: &'s mut [u64],
    into_buf: bool,
    grain: usize,
) {
    if level >= bl || src.len() <= grain {
        return sort_rec(&mut crate::fork::Magpie, src, buf, into_buf, grain);
    }
    let mid = src.len() / 2;
    let (s1, s2) = src.split_at_mut(mid);
    let (b1, b2) = buf.split_at_mut(mid);
    let (q1, q2) = crate::common::halve_squads(squads);
    s.inter_spawn_at(q1.start, move |s| {
        inter_sort(s, level + 1, bl, q1, s1, b1, !into_buf, grain)
    });
    s.inter_spawn_at(q2.start, move |s| {
        inter_sort(s, level + 1, bl, q2, s2, b2, !into_buf, grain)
    });
}

/// SLAW's places: walks the top levels on the caller and sends each run at level `bl` (or of at
/// most `grain` keys) to be sorted at a place with `Scope::spawn_at`. `part` is the index of the
/// run's first level-`bl` run among the 2^(bl−1); run `j` goes to place `j · places / 2^(bl−1)`,
/// so each place gets one contiguous share of the keys.
#[allow(clippy::too_many_arguments)]
fn send_parts<'s>(
    s: &magpie::Scope<'s>,
    level: u32,
    bl: u32,
    part: usize,
    places: usize,
    src: &'s mut [u64],
    buf: &'s mut [u64],
    into_buf: bool,
    grain: usize,
) {
    if level >= bl || src.len() <= grain {
        let place = (part * places) >> (bl - 1);
        return s.spawn_at(place, move |_| {
            sort_rec(&mut crate::fork::Magpie, src, buf, into_buf, grain)
        });
    }
    let mid = src.len() / 2;
    let (s1, s2) = src.split_at_mut(mid);
    let (b1, b2) = buf.split_at_mut(mid);
    let half = 1 << (bl - level - 1);
    send_parts(s, level + 1, bl, part, places, s1, b1, !into_buf, grain);
    send_parts(
        s,
        level + 1,
        bl,
        part + half,
        places,
        s2,
        b2,
        !into_buf,
        grain,
    );
}

/// The merges of the top `bl` levels, after their runs are sorted: the same tree as
/// [`sort_rec`]'s, the two halves' merges in parallel with `join`, each merge sequential.
fn merge_top(level: u32, bl: u32, src: &mut [u64], buf: &mut [u64], into_buf: bool, grain: usize) {
    if level >= bl || src.len() <= grain {
        return;
    }
    let mid = src.len() / 2;
    {
        let (s1, s2) = src.split_at_mut(mid);
        let (b1, b2) = buf.split_at_mut(mid);
        magpie::join(
            || merge_top(level + 1, bl, s1, b1, !into_buf, grain),
            || merge_top(level + 1, bl, s2, b2, !into_buf, grain),
        );
    }
    merge_halves(src, buf, mid, into_buf);
}

/// The merge-sort workload.
pub struct Mergesort;

static DEF: Def = Def {
    declares_leaves: true,
    ..workload::def::<Mergesort>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

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
    fn answer(_: u64, _: &(), v: &Vec<u64>, _: &()) -> String {
        sort::answer(v.iter().copied())
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
    use magpie::cachemodel::LeafTask;

    #[test]
    fn every_version_sorts() {
        crate::workload::check_everywhere::<Mergesort>(&[1, 2, 3, 1000, 20_000], &[1, 7, 4096]);
    }

    #[test]
    fn places_and_squads_give_the_same_bits() {
        // With SLAW's places the top runs go to places in contiguous shares, with CAB's squads
        // they are halved by inter-socket tasks: the same sorted keys. Three places take the
        // uneven share (four runs over three places).
        let mut pools = crate::common::locality_pools();
        let three = magpie::Pool::builder()
            .workers(3)
            .topology(magpie::Topology::parse("3x1:64KiB").unwrap())
            .places(true)
            .build()
            .unwrap();
        pools.push(("places-3", three));
        for (name, pool) in pools {
            for n in [1u64, 2, 3, 1000, 20_001] {
                let want = Mergesort::expected(n, &());
                for grain in [1, 64, 4096] {
                    let mut v = Mergesort::input(n, &());
                    pool.install(|| run(&mut Magpie, &mut v, grain));
                    assert_eq!(
                        Mergesort::verify(n, &(), &want, &v, ()),
                        Ok(()),
                        "n = {n}, grain {grain}, {name}"
                    );
                }
            }
        }
    }

    #[test]
    fn leaves_declare_exactly_the_keys_they_touch() {
        // The cache model's input, for n = grain · 2^levels keys: each level of merges reads and
        // writes all n keys; the leaf runs are sorted in place (read and written) and, when the
        // levels are odd, also copied into the scratch buffer. Whatever the strategy, as the
        // halving is the same.
        let grain = 64u64;
        let len = |r: &std::ops::Range<u64>| r.end - r.start;
        for levels in [3u64, 4] {
            let n = grain << levels;
            let written = 8 * n * (levels + 1 + levels % 2);
            let read = 8 * n * (levels + 1);
            for (name, pool) in crate::common::recording_pools() {
                let mut v = Mergesort::input(n, &());
                pool.install(|| run(&mut Magpie, &mut v, grain));
                assert_eq!(v, Mergesort::expected(n, &()), "{name}");
                let leaves = pool.take_leaves();
                let sum = |f: fn(&LeafTask) -> &Vec<std::ops::Range<u64>>| -> u64 {
                    leaves.iter().flat_map(f).map(len).sum()
                };
                assert_eq!(sum(|l| &l.writes), written, "{name}, {levels} levels");
                assert_eq!(sum(|l| &l.reads), read, "{name}, {levels} levels");
                // Sorts: 2^levels leaf runs. Merges: 2^levels − 1, each reading two adjacent
                // halves as long as what it writes.
                let (merges, sorts): (Vec<&LeafTask>, Vec<_>) =
                    leaves.iter().partition(|l| l.reads.len() == 2);
                if name == "places" {
                    // Two places, no cross-place stealing: the runs of the first half of the
                    // keys were sorted at place 0, the others at place 1.
                    for l in &sorts {
                        let key = (l.reads[0].start - v.as_ptr() as u64) / 8;
                        let place = (2 * key / n) as usize;
                        assert_eq!(pool.topology().socket_of(l.worker), place, "key {key}");
                    }
                }
                assert_eq!(sorts.len() as u64, 1 << levels, "{name}");
                assert_eq!(merges.len() as u64, (1 << levels) - 1, "{name}");
                for m in merges {
                    assert_eq!(m.reads[0].end, m.reads[1].start, "{name}");
                    assert_eq!(len(&m.reads[0]), len(&m.reads[1]), "{name}");
                    assert_eq!(len(&m.reads[0]) * 2, len(&m.writes[0]), "{name}");
                }
            }
        }
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
