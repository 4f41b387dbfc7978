//! LUD: blocked LU decomposition without pivoting of an `n`×`n` diagonally dominant matrix, the
//! "LUD" benchmark of Friendly Barriers (Kumar, Blackburn, Grove, VEE 2014), after Rodinia's
//! `lud`. The matrix is factored in place into a unit lower triangular L (below the diagonal)
//! and an upper triangular U (on and above it), A = L·U, in blocks of side `b` (the grain). Each
//! block step K, over the rows and columns `k0..k1` of the diagonal block, does three phases:
//!
//! 1. **diagonal**: factor the diagonal block in place (plain LU of a `b`×`b` block);
//! 2. **perimeter**, in parallel: the blocks to its right become U (each row minus the earlier
//!    rows of the block times L's multipliers), and the blocks below it become L (each column
//!    minus the earlier columns times U, divided by the diagonal);
//! 3. **interior**, in parallel: every trailing block (I, J) with I, J > K loses L(I, K)·U(K, J).
//!
//! The perimeter's two sides run as one `join`, each side split recursively over its blocks; the
//! interior is split recursively over block rows and then, within one block row, over block
//! columns, down to single blocks. The matrix is row-major; each step splits the rows below the
//! diagonal block off the rest (`split_at_mut`) and cuts every row at the block's edges, so that
//! a task holds exactly the row segments it writes and reads the others through shared slices.
//! All in safe Rust.
//!
//! Every entry `a[i][j]` receives exactly the operations of the unblocked right-looking loop, in
//! the same order: `a[i][j] -= l[i][k] * u[k][j]` for k = 0, 1, … in increasing order, then (below
//! the diagonal) `a[i][j] /= u[j][j]` — blocking only changes which entries are updated between
//! two operations on a given entry, never the operations on it. So every version, at every block
//! size, is bit-for-bit equal to [`plain`], the unblocked k-i-j loop, which [`Lud::expected`]
//! computes and the verifier compares with.
//!
//! The default block side is 64, not Rodinia's 16: Rodinia sizes its blocks for a GPU thread
//! block (and its OpenMP port keeps that), while here a block is one task's work. A 64×64 block
//! of `f64` is 32 KiB (cache-resident), its update is about 2.6 × 10⁵ multiply-subtracts, enough
//! to repay a fork, and a 2048×2048 matrix still has 31² = 961 interior blocks in its first step.

use crate::kernel::{Def, Kernel};
use crate::common::SplitMix64;
use crate::fork::Fork;
use crate::harness::sum12;
use crate::workload::{self, Info, Workload};

/// The input: an `n`×`n` row-major matrix with entries uniform in [-1, 1) (SplitMix64) plus `n`
/// on the diagonal, so it is strictly diagonally dominant by rows and columns and LU without
/// pivoting is stable.
pub fn input(n: usize) -> Vec<f64> {
    let mut rng = SplitMix64(0x4c55_4400_0000_0000 ^ n as u64);
    let mut a: Vec<f64> = (0..n * n).map(|_| rng.next_signed_f64()).collect();
    for i in 0..n {
        a[i * n + i] += n as f64;
    }
    a
}

/// Factors the diagonal block in place: `d` holds its rows, each of the block's width.
fn diagonal(d: &mut [&mut [f64]]) {
    for k in 0..d.len() {
        let (upper, lower) = d.split_at_mut(k + 1);
        let rk = &upper[k];
        for ri in lower.iter_mut() {
            ri[k] /= rk[k];
            let lik = ri[k];
            for (x, &u) in ri[k + 1..].iter_mut().zip(&rk[k + 1..]) {
                *x -= lik * u;
            }
        }
    }
}

/// Splits every row of `rows` at column `at`.
fn split_cols<'a>(
    rows: &'a mut [&mut [f64]],
    at: usize,
) -> (Vec<&'a mut [f64]>, Vec<&'a mut [f64]>) {
    rows.iter_mut().map(|r| r.split_at_mut(at)).unzip()
}

/// The perimeter blocks right of the diagonal block become U: `rows` are the segments of the
/// block's rows to its right (all the same width), `d` the factored diagonal block. Split over
/// blocks of `b` columns.
fn u_perimeter<F: Fork>(f: &mut F, rows: &mut [&mut [f64]], d: &[&mut [f64]], b: usize) {
    let width = rows.first().map_or(0, |r| r.len());
    if width > b {
        let at = width.div_ceil(b) / 2 * b;
        let (mut left, mut right) = split_cols(rows, at);
        f.join(
            |f| u_perimeter(f, &mut left, d, b),
            |f| u_perimeter(f, &mut right, d, b),
        );
        return;
    }
    for k in 0..rows.len() {
        let (upper, lower) = rows.split_at_mut(k + 1);
        let rk = &upper[k];
        for (i, ri) in lower.iter_mut().enumerate() {
            let lik = d[k + 1 + i][k];
            for (x, &u) in ri.iter_mut().zip(rk.iter()) {
                *x -= lik * u;
            }
        }
    }
}

/// The perimeter blocks below the diagonal block become L: `rows` are the segments of the rows
/// below it in its columns, `d` the factored diagonal block. Split over blocks of `b` rows.
fn l_perimeter<F: Fork>(f: &mut F, rows: &mut [&mut [f64]], d: &[&mut [f64]], b: usize) {
    if rows.len() > b {
        let (top, bottom) = rows.split_at_mut(rows.len().div_ceil(b) / 2 * b);
        f.join(
            |f| l_perimeter(f, top, d, b),
            |f| l_perimeter(f, bottom, d, b),
        );
        return;
    }
    for r in rows.iter_mut() {
        for j in 0..r.len() {
            for k in 0..j {
                r[j] -= r[k] * d[k][j];
            }
            r[j] /= d[j][j];
        }
    }
}

/// The interior: `rows` (the trailing rows' segments from column `col0` of the trailing part,
/// all the same width) lose L·U, with `l` their rows' multipliers in the step's columns and `u`
/// the step's U rows over the whole trailing part. Split over block rows, then block columns.
fn interior<F: Fork>(
    f: &mut F,
    rows: &mut [&mut [f64]],
    l: &[&mut [f64]],
    u: &[&mut [f64]],
    col0: usize,
    b: usize,
) {
    let width = rows.first().map_or(0, |r| r.len());
    if rows.len() > b {
        let at = rows.len().div_ceil(b) / 2 * b;
        let (top, bottom) = rows.split_at_mut(at);
        let (l_top, l_bottom) = l.split_at(at);
        f.join(
            |f| interior(f, top, l_top, u, col0, b),
            |f| interior(f, bottom, l_bottom, u, col0, b),
        );
        return;
    }
    if width > b {
        let at = width.div_ceil(b) / 2 * b;
        let (mut left, mut right) = split_cols(rows, at);
        f.join(
            |f| interior(f, &mut left, l, u, col0, b),
            |f| interior(f, &mut right, l, u, col0 + at, b),
        );
        return;
    }
    for (r, li) in rows.iter_mut().zip(l) {
        for (&lik, uk) in li.iter().zip(u) {
            for (x, &ukj) in r.iter_mut().zip(&uk[col0..col0 + width]) {
                *x -= lik * ukj;
            }
        }
    }
}

/// The kernel over any [`Fork`]: factors `a` (`n`×`n`, row-major) in place in blocks of side
/// `grain`.
pub fn run<F: Fork>(f: &mut F, n: usize, a: &mut [f64], grain: u64) {
    let b = grain.clamp(1, n.max(1) as u64) as usize;
    for k0 in (0..n).step_by(b) {
        let k1 = (k0 + b).min(n);
        let (top, bottom) = a.split_at_mut(k1 * n);
        // The block's rows, cut into the diagonal block and the segments to its right.
        let (mut d, mut right): (Vec<&mut [f64]>, Vec<&mut [f64]>) = top[k0 * n..]
            .chunks_exact_mut(n)
            .map(|r| r[k0..].split_at_mut(k1 - k0))
            .unzip();
        // The rows below, cut into their segments in the block's columns and the trailing part.
        let (mut l, mut trailing): (Vec<&mut [f64]>, Vec<&mut [f64]>) = bottom
            .chunks_exact_mut(n)
            .map(|r| r[k0..].split_at_mut(k1 - k0))
            .unzip();
        diagonal(&mut d);
        f.join(
            |f| u_perimeter(f, &mut right, &d, b),
            |f| l_perimeter(f, &mut l, &d, b),
        );
        interior(f, &mut trailing, &l, &right, 0, b);
    }
}

// The plain loop, unblocked right-looking LU (k-i-j) in place, is LU's.
pub use crate::kernels::lu::plain;

/// The LUD workload.
pub struct Lud;

static DEF: Def = workload::def::<Lud>();
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Lud {
    const INFO: Info = Info {
        name: "lud",
        // The paper's section and table were not at hand when this was written.
        source: "Friendly Barriers (Kumar et al., VEE 2014) LUD, after Rodinia lud",
        n_meaning: "matrix side (any n; the last block may be partial)",
        ci: 256,
        default: 1664,
        // The paper's matrix size was not at hand: 2048 stands in.
        paper: 2048,
        min_n: 1,
        max_n: 8192,
        grain: 64,
        grain_meaning: "block side (a task factors or updates one block)",
    };
    type Shared = ();
    type Input = Vec<f64>;
    type Output = ();
    type Expected = Vec<f64>;

    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Vec<f64> {
        input(n as usize)
    }
    fn run<F: Fork>(f: &mut F, n: u64, grain: u64, _: &(), a: &mut Vec<f64>) {
        run(f, n as usize, a, grain)
    }
    fn expected(n: u64, _: &()) -> Vec<f64> {
        let mut a = input(n as usize);
        plain(n as usize, &mut a);
        a
    }
    fn answer(_: u64, _: &(), a: &Vec<f64>, _: &()) -> String {
        format!("sum {}", sum12(a))
    }
    fn verify(n: u64, _: &(), want: &Vec<f64>, got: &Vec<f64>, _: ()) -> Result<(), String> {
        crate::kernels::lu::compare_with("lud", n as usize, want, got, "the unblocked loop")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;

    #[test]
    fn every_version_matches_the_unblocked_loop() {
        // Blocks of one entry on small matrices only: they make a task per entry.
        crate::workload::check_everywhere::<Lud>(&[1, 2, 5, 20], &[1, 3]);
        crate::workload::check_everywhere::<Lud>(&[37, 70], &[4, 16, 64]);
    }

    /// Checks L·U = A entry by entry within the backward-error bound of LU (Higham, Accuracy and
    /// Stability of Numerical Algorithms, Thm 9.3): |A − L·U| ≤ γ_n |L|·|U|, γ_n = nε/(1 − nε).
    fn assert_lu_reproduces_a(n: usize, lu: &[f64], a: &[f64]) {
        let gamma = n as f64 * f64::EPSILON / (1.0 - n as f64 * f64::EPSILON);
        for i in 0..n {
            for j in 0..n {
                let (mut sum, mut abs) = (0.0, 0.0);
                for k in 0..=i.min(j) {
                    let l = if k == i { 1.0 } else { lu[i * n + k] };
                    let u = lu[k * n + j];
                    sum += l * u;
                    abs += (l * u).abs();
                }
                let err = (sum - a[i * n + j]).abs();
                // The product is summed here in floating point too: twice the bound.
                assert!(
                    err <= 2.0 * gamma * abs,
                    "n = {n}: (L·U)({i}, {j}) = {sum}, A = {}, error {err:e} > {:e}",
                    a[i * n + j],
                    2.0 * gamma * abs
                );
            }
        }
    }

    #[test]
    fn l_times_u_is_a() {
        for (n, b) in [(1, 1), (9, 2), (64, 16), (100, 32), (150, 64)] {
            let a = input(n);
            let mut lu = a.clone();
            run(&mut Serial, n, &mut lu, b);
            assert_lu_reproduces_a(n, &lu, &a);
        }
    }

    #[test]
    fn block_size_does_not_change_the_bits() {
        let n = 90;
        let mut want = input(n);
        plain(n, &mut want);
        for b in [1, 2, 7, 16, 45, 64, 89, 90, 1000] {
            let mut a = input(n);
            run(&mut Serial, n, &mut a, b);
            assert!(
                a.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                "block {b}"
            );
        }
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 40;
        let want = Lud::expected(n, &());
        let mut a = Lud::input(n, &());
        run(&mut Serial, n as usize, &mut a, 8);
        assert_eq!(Lud::verify(n, &(), &want, &a, ()), Ok(()));
        a[17 * 40 + 3] = f64::from_bits(a[17 * 40 + 3].to_bits() ^ 1);
        let e = Lud::verify(n, &(), &want, &a, ()).unwrap_err();
        assert!(e.contains("(17, 3)") && !e.contains('\n'), "{e}");
        // The input is not the result.
        assert!(Lud::verify(n, &(), &want, &Lud::input(n, &()), ()).is_err());
    }
}
