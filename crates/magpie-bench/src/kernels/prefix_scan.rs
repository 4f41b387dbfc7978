//! Prefix scan: the inclusive prefix sum of `n` pseudo-random `u64` (wrapping addition), the
//! scan benchmark of Lifflander's thesis, by the two-pass tree algorithm:
//!
//! 1. up-sweep: the array is cut into blocks of `grain` elements (the last may be shorter), and
//!    the range of blocks is halved recursively with `join`; each leaf sums its block, each inner
//!    node adds its children's sums and records them in a tree (a slice in pre-order: a node,
//!    then its left subtree, then its right one, so `split_at_mut` hands each half its subtree);
//! 2. down-sweep: the same recursion again, carrying an offset, the sum of everything before the
//!    range: the left half keeps it, the right half adds the left half's sum from the tree, and
//!    each leaf scans its block in place starting from its offset.
//!
//! Each run scans the array [`PASSES`] times in place (each pass scans the previous pass's
//! output), so that a run lasts long enough without an array of many gigabytes. Wrapping
//! addition of integers is associative, so the result does not depend on the grain or the split.
//! The work is two reads and one write per element per pass against one read and one write for
//! a plain loop, and memory bandwidth bounds the speedup.
//!
//! [`PrefixScan::expected`] is a plain serial loop ([`plain`]) applied [`PASSES`] times.

use crate::kernel::{Def, Kernel};
use crate::common::SplitMix64;
use crate::fork::Fork;
use crate::workload::{self, Info, Workload};

/// Scans of the array in one run.
pub const PASSES: usize = 8;

/// The `n` values to scan: deterministic (SplitMix64), spread over all of `u64`.
pub fn input(n: u64) -> Vec<u64> {
    let mut rng = SplitMix64(0x5343_414e_0000_0000);
    (0..n).map(|_| rng.next_u64()).collect()
}

/// Sums `v` (the blocks `blocks` of `grain` elements, the last maybe shorter) into `tree` (the
/// pre-order tree of the range, `2 * blocks - 1` nodes) and returns the sum.
fn up_sweep<F: Fork>(f: &mut F, v: &[u64], tree: &mut [u64], blocks: usize, grain: usize) -> u64 {
    let (node, rest) = tree.split_first_mut().expect("a node per range");
    *node = if blocks == 1 {
        // For the cache model: the block read.
        magpie::cachemodel::leaf(&[magpie::cachemodel::range_of(v)], &[]);
        v.iter().fold(0, |a: u64, &x| a.wrapping_add(x))
    } else {
        let half = blocks / 2;
        let (lo, hi) = v.split_at(half * grain);
        let (tlo, thi) = rest.split_at_mut(2 * half - 1);
        let (a, b) = f.join(
            |f| up_sweep(f, lo, tlo, half, grain),
            |f| up_sweep(f, hi, thi, blocks - half, grain),
        );
        a.wrapping_add(b)
    };
    *node
}

/// Replaces `v` by its inclusive prefix sums plus `offset`, using the sums in `tree` (as
/// [`up_sweep`] left them).
fn down_sweep<F: Fork>(
    f: &mut F,
    v: &mut [u64],
    tree: &[u64],
    blocks: usize,
    offset: u64,
    grain: usize,
) {
    if blocks == 1 {
        // For the cache model: the block read and written.
        let r = magpie::cachemodel::range_of(v);
        magpie::cachemodel::leaf(std::slice::from_ref(&r), std::slice::from_ref(&r));
        let mut acc = offset;
        for x in v {
            acc = acc.wrapping_add(*x);
            *x = acc;
        }
        return;
    }
    let half = blocks / 2;
    let (lo, hi) = v.split_at_mut(half * grain);
    let (tlo, thi) = tree[1..].split_at(2 * half - 1);
    let left_sum = tlo[0];
    f.join(
        |f| down_sweep(f, lo, tlo, half, offset, grain),
        |f| {
            down_sweep(
                f,
                hi,
                thi,
                blocks - half,
                offset.wrapping_add(left_sum),
                grain,
            )
        },
    );
}

/// The kernel over any [`Fork`]: scans `v` in place [`PASSES`] times, in blocks of `grain`.
pub fn run<F: Fork>(f: &mut F, v: &mut [u64], grain: u64) {
    if v.is_empty() {
        return;
    }
    let grain = grain.clamp(1, v.len() as u64) as usize;
    let blocks = v.len().div_ceil(grain);
    let mut tree = vec![0u64; 2 * blocks - 1];
    for _ in 0..PASSES {
        up_sweep(f, v, &mut tree, blocks, grain);
        down_sweep(f, v, &tree, blocks, 0, grain);
    }
}

/// Copies `from` into `to` (the same length) by the sweeps' recursion over `blocks` blocks of
/// `grain`: the first-touch initialiser's.
fn copy_blocks<F: Fork>(f: &mut F, from: &[u64], to: &mut [u64], blocks: usize, grain: usize) {
    if blocks == 1 {
        magpie::cachemodel::first_touch(
            &[magpie::cachemodel::range_of(from)],
            &[magpie::cachemodel::range_of(to)],
        );
        return to.copy_from_slice(from);
    }
    let half = blocks / 2;
    let (flo, fhi) = from.split_at(half * grain);
    let (tlo, thi) = to.split_at_mut(half * grain);
    f.join(
        |f| copy_blocks(f, flo, tlo, half, grain),
        |f| copy_blocks(f, fhi, thi, blocks - half, grain),
    );
}

/// Prefix scan as an iterative [`Program`](crate::placement::Program) (first-touch placement,
/// §6.4): [`input`]`(n)` scanned `passes` times, each pass two phases (the up-sweep and the
/// down-sweep, the same recursion over the blocks), and an initialiser that copies the array
/// into fresh memory with that recursion. (The thesis's scan is not iterative; this one scans
/// [`PASSES`] times per run, so it is.)
#[derive(Clone, Debug)]
pub struct Placed {
    v: Vec<u64>,
    tree: Vec<u64>,
    grain: usize,
    blocks: usize,
    passes: usize,
}

impl Placed {
    /// `n` values (at least 1) in blocks of `grain`, `passes` scans.
    pub fn new(n: u64, grain: u64, passes: usize) -> Result<Placed, String> {
        if n == 0 {
            return Err("prefix-scan: n = 0: nothing to scan".into());
        }
        let grain = grain.clamp(1, n) as usize;
        let blocks = (n as usize).div_ceil(grain);
        Ok(Placed {
            v: input(n),
            tree: vec![0; 2 * blocks - 1],
            grain,
            blocks,
            passes,
        })
    }
}

/// This kernel as a placed iterative program ([`crate::placement`]).
pub const PLACEMENT: crate::placement::Facet = crate::placement::Facet {
    iterations: |_| PASSES,
    banded: false,
    run: |pool, n, grain, iterations, strategy, pace| {
        crate::placement::run(pool, &Placed::new(n, grain, iterations)?, strategy, pace)
    },
};

impl crate::placement::Program for Placed {
    fn name(&self) -> &'static str {
        "prefix-scan"
    }
    fn phases(&self) -> usize {
        2
    }
    fn iterations(&self) -> usize {
        self.passes
    }

    fn place<F: Fork>(&mut self, f: &mut F) {
        let mut v = vec![0u64; self.v.len()];
        copy_blocks(f, &self.v, &mut v, self.blocks, self.grain);
        self.v = v;
    }

    fn phase<F: Fork>(&mut self, f: &mut F, _it: usize, p: usize) {
        if p == 0 {
            up_sweep(f, &self.v, &mut self.tree, self.blocks, self.grain);
        } else {
            down_sweep(f, &mut self.v, &self.tree, self.blocks, 0, self.grain);
        }
    }

    fn compare(&self, twin: &Placed) -> Result<(), String> {
        match self.v.iter().zip(&twin.v).position(|(a, b)| a != b) {
            None => Ok(()),
            Some(k) => Err(format!(
                "prefix-scan({}): v[{k}] is {}, the serial twin's {}",
                self.v.len(),
                self.v[k],
                twin.v[k]
            )),
        }
    }

    fn answer(&self) -> String {
        format!("last {}", self.v.last().copied().unwrap_or(0))
    }
}

/// One plain inclusive scan, in place.
pub fn plain(v: &mut [u64]) {
    let mut acc = 0u64;
    for x in v {
        acc = acc.wrapping_add(*x);
        *x = acc;
    }
}

/// The prefix-scan workload.
pub struct PrefixScan;

static DEF: Def = Def {
    declares_leaves: true,
    placement: Some(PLACEMENT),
    ..workload::def::<PrefixScan>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for PrefixScan {
    const INFO: Info = Info {
        name: "prefix-scan",
        source: "Lifflander's thesis (prefix scan), two-pass tree scan",
        n_meaning: "u64 elements, scanned 8 times per run",
        ci: 1 << 20,
        default: 1 << 25,
        // The thesis's size is not recorded here; this preset takes 4 GiB (input and expected).
        paper: 1 << 28,
        min_n: 1,
        // Input and expected take 16 bytes per element: 16 GiB here.
        max_n: 1 << 30,
        grain: 1 << 15,
        grain_meaning: "elements summed and scanned by one task",
    };
    type Shared = ();
    type Input = Vec<u64>;
    type Output = ();
    type Expected = Vec<u64>;

    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Vec<u64> {
        input(n)
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, _: &(), v: &mut Vec<u64>) {
        run(f, v, grain)
    }
    fn expected(n: u64, _: &()) -> Vec<u64> {
        let mut v = input(n);
        for _ in 0..PASSES {
            plain(&mut v);
        }
        v
    }
    fn answer(_: u64, _: &(), v: &Vec<u64>, _: &()) -> String {
        format!("last {}", v.last().copied().unwrap_or(0))
    }
    fn verify(n: u64, _: &(), want: &Vec<u64>, got: &Vec<u64>, _: ()) -> Result<(), String> {
        if got.len() != want.len() {
            return Err(format!(
                "prefix-scan({n}): {} elements, expected {}",
                got.len(),
                want.len()
            ));
        }
        match got.iter().zip(want).position(|(a, b)| a != b) {
            None => Ok(()),
            Some(i) => Err(format!(
                "prefix-scan({n}): element {i} is {:#x}, the plain scan gives {:#x}",
                got[i], want[i]
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Magpie, Serial};

    #[test]
    fn every_version_matches_the_plain_scan() {
        // Fine grains on small arrays only: grain 1 forks twice per element per pass.
        crate::workload::check_everywhere::<PrefixScan>(&[1, 2, 7, 300], &[1, 3, 64]);
        crate::workload::check_everywhere::<PrefixScan>(&[50_000], &[4096]);
    }

    #[test]
    fn one_pass_is_the_prefix_sum() {
        // Small values, no wrapping: compare one up/down sweep with the sums written out.
        let n = 37;
        let v: Vec<u64> = (1..=n).collect();
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        for grain in [1, 2, 5, 36, 37, 100] {
            let grain_u = grain.min(n as usize);
            let blocks = (n as usize).div_ceil(grain_u);
            let mut tree = vec![0; 2 * blocks - 1];
            let mut w = v.clone();
            let total = up_sweep(&mut Serial, &w, &mut tree, blocks, grain_u);
            assert_eq!(total, n * (n + 1) / 2, "grain {grain}");
            assert_eq!(tree[0], total);
            pool.install(|| down_sweep(&mut Magpie, &mut w, &tree, blocks, 0, grain_u));
            let want: Vec<u64> = (1..=n).map(|k| k * (k + 1) / 2).collect();
            assert_eq!(w, want, "grain {grain}");
        }
    }

    #[test]
    fn sums_wrap() {
        let mut v = vec![u64::MAX, 2, u64::MAX];
        plain(&mut v);
        assert_eq!(v, [u64::MAX, 1, 0]);
        let mut w = vec![u64::MAX, 2, u64::MAX];
        let mut tree = vec![0; 5];
        up_sweep(&mut Serial, &w, &mut tree, 3, 1);
        down_sweep(&mut Serial, &mut w, &tree, 3, 0, 1);
        assert_eq!(w, [u64::MAX, 1, 0]);
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 1000;
        let want = PrefixScan::expected(n, &());
        let mut v = PrefixScan::input(n, &());
        assert!(PrefixScan::verify(n, &(), &want, &v, ()).is_err());
        run(&mut Serial, &mut v, 64);
        assert_eq!(PrefixScan::verify(n, &(), &want, &v, ()), Ok(()));
        v[700] ^= 1;
        let e = PrefixScan::verify(n, &(), &want, &v, ()).unwrap_err();
        assert!(e.contains("element 700"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        v.pop();
        let e = PrefixScan::verify(n, &(), &want, &v, ()).unwrap_err();
        assert!(e.contains("999 elements"), "{e}");
    }
}
