//! Cholesky: recursive Cholesky factorization of a symmetric positive definite `n`×`n` matrix
//! (`n` a power of two), the "Cholesky" benchmark of CAB (Chen et al., ICPP 2011, §V; also in
//! DWS). The matrix is symmetric with random off-diagonal entries in [-1, 1) and each diagonal
//! entry 1 more than its row's sum of |off-diagonal|: strictly diagonally dominant with a positive
//! diagonal, hence SPD.
//!
//! The factor is computed in its upper form A = Uᵀ·U, U written over the upper triangle of the
//! row-major A (the lower triangle is left as it was); L = Uᵀ is the usual lower factor (A = L·Lᵀ),
//! the same numbers read column by column. The upper form keeps every inner loop running along a
//! row. The recursion splits A into quadrants:
//!
//! ```text
//! [A00 A01]    chol(A00)                A00 = U00ᵀ·U00
//! [ ·  A11]    A01 = U00⁻ᵀ·A01          (U01; its column halves in parallel)
//!              A11 -= A01ᵀ·A01          (upper triangle only; in parallel)
//!              chol(A11)
//! ```
//!
//! The triangular solve ([`solve`]) splits its right-hand side into column halves, solved in
//! parallel, each by a solve, an update and a solve. The update of A11 ([`syrk`]) does its two
//! diagonal quadrants and its off-diagonal one ([`gemm_tn`], C -= Aᵀ·B) in parallel, in two rounds
//! (the first and second halves of the inner dimension, in that order). Blocks of side `grain` or
//! less are done by plain loops. Blocks are lists of row slices split with `split_at_mut` and read
//! through shared views ([`lu::Block`](crate::kernels::lu::Block), [`lu::View`](crate::kernels::lu::View)): safe
//! Rust.
//!
//! Every update is subtracted straight into the matrix in the order of its index k: entry (i, j),
//! i ≤ j, ends as `a_ij - u_0i·u_0j - u_1i·u_1j - …` subtracted one k at a time, then divided by
//! `u_ii` (or, on the diagonal, its square root taken) — exactly what the plain right-looking loop
//! ([`plain`]) computes. So the result is bit for bit the same at every grain, on every runtime,
//! and equal to [`plain`] (a test checks it). [`Cholesky::expected`] runs the serial twin (the
//! same recursion on [`Serial`]); [`Cholesky::verify`] compares bits.

use crate::kernel::{Def, Kernel};
use crate::common::{self, SplitMix64};
use crate::fork::{Fork, Serial};
use crate::harness::sum12;
use crate::kernels::lu::{Block, View};
use crate::workload::{self, Info, Workload};

/// The input of size `n`: a symmetric, strictly diagonally dominant row-major matrix with a
/// positive diagonal (SPD). Off-diagonal entries are pseudo-random in [-1, 1) (SplitMix64).
pub fn input(n: usize) -> Vec<f64> {
    let mut rng = SplitMix64(0x4348_4f4c_0000_0000 ^ n as u64);
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let v = rng.next_signed_f64();
            a[i * n + j] = v;
            a[j * n + i] = v;
        }
    }
    for i in 0..n {
        let row = &a[i * n..(i + 1) * n];
        let off: f64 = row.iter().map(|x| x.abs()).sum();
        a[i * n + i] = off + 1.0;
    }
    a
}

/// C -= Aᵀ·B for blocks of one side, by the i-k-j loop.
fn leaf_gemm_tn(c: &mut Block<'_>, a: View<'_>, b: View<'_>) {
    for (i, ci) in c.rows().iter_mut().enumerate() {
        for k in 0..a.side() {
            let aki = a.row(k)[i];
            for (cij, &bkj) in ci.iter_mut().zip(b.row(k)) {
                *cij -= aki * bkj;
            }
        }
    }
}

/// C -= Aᵀ·B for square blocks of one side: the quadrants of C in parallel, in two rounds (the
/// first and second halves of the inner dimension, in that order), down to `grain`.
pub fn gemm_tn<F: Fork>(f: &mut F, c: &mut Block<'_>, a: View<'_>, b: View<'_>, grain: usize) {
    if c.side() <= grain {
        return leaf_gemm_tn(c, a, b);
    }
    let [mut c00, mut c01, mut c10, mut c11] = c.quads();
    for k in 0..2 {
        f.join(
            |f| {
                f.join(
                    |f| gemm_tn(f, &mut c00, a.quad(k, 0), b.quad(k, 0), grain),
                    |f| gemm_tn(f, &mut c01, a.quad(k, 0), b.quad(k, 1), grain),
                )
            },
            |f| {
                f.join(
                    |f| gemm_tn(f, &mut c10, a.quad(k, 1), b.quad(k, 0), grain),
                    |f| gemm_tn(f, &mut c11, a.quad(k, 1), b.quad(k, 1), grain),
                )
            },
        );
    }
}

/// C -= Aᵀ·A on the upper triangle of C (diagonal included), by the i-k-j loop.
fn leaf_syrk(c: &mut Block<'_>, a: View<'_>) {
    for (i, ci) in c.rows().iter_mut().enumerate() {
        for k in 0..a.side() {
            let ak = a.row(k);
            let aki = ak[i];
            for (cij, &akj) in ci[i..].iter_mut().zip(&ak[i..]) {
                *cij -= aki * akj;
            }
        }
    }
}

/// C -= Aᵀ·A on the upper triangle of C: its two diagonal quadrants and its top-right one in
/// parallel, in two rounds (the halves of the inner dimension, in order), down to `grain`.
pub fn syrk<F: Fork>(f: &mut F, c: &mut Block<'_>, a: View<'_>, grain: usize) {
    if c.side() <= grain {
        return leaf_syrk(c, a);
    }
    let [mut c00, mut c01, _, mut c11] = c.quads();
    for k in 0..2 {
        f.join(
            |f| {
                f.join(
                    |f| syrk(f, &mut c00, a.quad(k, 0), grain),
                    |f| syrk(f, &mut c11, a.quad(k, 1), grain),
                )
            },
            |f| gemm_tn(f, &mut c01, a.quad(k, 0), a.quad(k, 1), grain),
        );
    }
}

/// B = U⁻ᵀ·B in place (U upper triangular, read from `u`): row k of B divided by u_kk once the
/// rows above are done, then its multiples subtracted from the rows below, in k order.
fn leaf_solve(u: View<'_>, b: &mut Block<'_>) {
    let rows = b.rows();
    for k in 0..rows.len() {
        let uk = u.row(k);
        let (done, below) = rows.split_at_mut(k + 1);
        let bk = &mut done[k];
        for x in bk.iter_mut() {
            *x /= uk[k];
        }
        for (bi, &uki) in below.iter_mut().zip(&uk[k + 1..]) {
            for (x, &y) in bi.iter_mut().zip(bk.iter()) {
                *x -= uki * y;
            }
        }
    }
}

/// B = U⁻ᵀ·B in place (U upper triangular, read from `u`): the column halves of B in parallel,
/// each solved with U's top-left quadrant, updated by its top-right one and solved with its
/// bottom-right one, down to `grain`.
pub fn solve<F: Fork>(f: &mut F, u: View<'_>, b: &mut Block<'_>, grain: usize) {
    if b.side() <= grain {
        return leaf_solve(u, b);
    }
    let [mut b00, mut b01, mut b10, mut b11] = b.quads();
    let column = |f: &mut F, top: &mut Block<'_>, bottom: &mut Block<'_>| {
        solve(f, u.quad(0, 0), top, grain);
        gemm_tn(f, bottom, u.quad(0, 1), top.view(), grain);
        solve(f, u.quad(1, 1), bottom, grain);
    };
    f.join(
        |f| column(f, &mut b00, &mut b10),
        |f| column(f, &mut b01, &mut b11),
    );
}

/// Cholesky of a block by the right-looking loop on its upper triangle: for each k, the square
/// root of the pivot, row k divided by it, then the trailing upper triangle updated.
fn leaf_cholesky(a: &mut Block<'_>) {
    let rows = a.rows();
    for k in 0..rows.len() {
        let (done, below) = rows.split_at_mut(k + 1);
        let ak = &mut done[k];
        ak[k] = ak[k].sqrt();
        let d = ak[k];
        for x in ak[k + 1..].iter_mut() {
            *x /= d;
        }
        for (ii, ai) in below.iter_mut().enumerate() {
            let i = k + 1 + ii;
            let aki = ak[i];
            for (x, &y) in ai[i..].iter_mut().zip(&ak[i..]) {
                *x -= aki * y;
            }
        }
    }
}

/// Cholesky of a block in place (upper triangle): the recursion of the module docs, down to
/// `grain`.
pub fn cholesky<F: Fork>(f: &mut F, a: &mut Block<'_>, grain: usize) {
    if a.side() <= grain {
        return leaf_cholesky(a);
    }
    let [mut a00, mut a01, _, mut a11] = a.quads();
    cholesky(f, &mut a00, grain);
    solve(f, a00.view(), &mut a01, grain);
    syrk(f, &mut a11, a01.view(), grain);
    cholesky(f, &mut a11, grain);
}

/// The kernel over any [`Fork`]: the Cholesky factor U (A = Uᵀ·U) of the `n`×`n` row-major `a`,
/// written over its upper triangle; blocks of side `grain` or less done serially.
pub fn run<F: Fork>(f: &mut F, n: usize, a: &mut [f64], grain: u64) {
    let grain = grain.clamp(1, n.max(1) as u64) as usize;
    cholesky(f, &mut Block::whole(a, n), grain);
}

/// The plain right-looking loop on the upper triangle (no blocks, no recursion), in place.
pub fn plain(n: usize, a: &mut [f64]) {
    for k in 0..n {
        a[k * n + k] = a[k * n + k].sqrt();
        for j in k + 1..n {
            a[k * n + j] /= a[k * n + k];
        }
        for i in k + 1..n {
            for j in i..n {
                a[i * n + j] -= a[k * n + i] * a[k * n + j];
            }
        }
    }
}

/// The Cholesky workload.
pub struct Cholesky;

static DEF: Def = workload::def::<Cholesky>();
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Cholesky {
    const INFO: Info = Info {
        name: "cholesky",
        source: "CAB (Chen et al., ICPP 2011) §V and DWS, Cholesky; recursive",
        n_meaning: "matrix side, a power of two",
        ci: 256,
        // About 0.5 s serially here (release build).
        default: 2048,
        // CAB's matrix side is not known here, so this is the default size (a 2048×2048 matrix
        // takes 32 MiB; 8192, the largest, 512 MiB).
        paper: 2048,
        min_n: 1,
        max_n: 8192,
        grain: 64,
        grain_meaning: "block side done serially",
    };
    type Shared = ();
    type Input = Vec<f64>;
    type Output = ();
    type Expected = Vec<f64>;

    fn check_n(n: u64) -> Result<(), String> {
        let i = Self::INFO;
        common::check_power_of_two(i.name, n, i.min_n, i.max_n, "matrix side")
    }
    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Vec<f64> {
        input(n as usize)
    }
    fn run<F: Fork>(f: &mut F, n: u64, grain: u64, _: &(), a: &mut Vec<f64>) {
        run(f, n as usize, a, grain)
    }
    fn expected(n: u64, _: &()) -> Vec<f64> {
        let n = n as usize;
        let mut a = input(n);
        run(&mut Serial, n, &mut a, Self::INFO.grain);
        a
    }
    fn answer(_: u64, _: &(), a: &Vec<f64>, _: &()) -> String {
        format!("sum {}", sum12(a))
    }
    fn verify(n: u64, _: &(), want: &Vec<f64>, got: &Vec<f64>, _: ()) -> Result<(), String> {
        crate::kernels::lu::compare("cholesky", n as usize, want, got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_matches_the_serial_twin() {
        crate::workload::check_everywhere::<Cholesky>(&[1, 2, 32, 128], &[8, 64]);
        // Blocks of one entry: slow in a debug build, so small sizes only.
        crate::workload::check_everywhere::<Cholesky>(&[2, 32], &[1]);
    }

    #[test]
    fn recursion_equals_the_plain_loop_bit_for_bit() {
        for n in [1, 2, 4, 32, 128] {
            let mut want = input(n);
            plain(n, &mut want);
            for grain in [1, 3, 8, 64, 1000] {
                let mut a = input(n);
                run(&mut Serial, n, &mut a, grain);
                assert_eq!(
                    crate::kernels::lu::compare("cholesky", n, &want, &a),
                    Ok(()),
                    "grain {grain}"
                );
            }
        }
    }

    #[test]
    fn l_times_l_transposed_is_a() {
        // |(L·Lᵀ − A)_ij| ≤ γ_{n+1} (|L|·|Lᵀ|)_ij with γ_m = mε/(1 − mε) (Higham, Thm 10.3); the
        // test allows twice that. L = Uᵀ: l_ik = u_ki.
        let n = 128;
        let a0 = input(n);
        let mut a = a0.clone();
        run(&mut Serial, n, &mut a, 16);
        let m = (n + 1) as f64 * f64::EPSILON;
        let gamma = m / (1.0 - m);
        for i in 0..n {
            for j in i..n {
                let (mut s, mut bound) = (0.0, 0.0);
                for k in 0..=i {
                    let p = a[k * n + i] * a[k * n + j];
                    s += p;
                    bound += p.abs();
                }
                let err = (s - a0[i * n + j]).abs();
                assert!(
                    err <= 2.0 * gamma * bound,
                    "({i}, {j}): {err:e} > {bound:e}"
                );
            }
        }
        // The lower triangle is left as it was.
        for i in 0..n {
            for j in 0..i {
                assert_eq!(a[i * n + j].to_bits(), a0[i * n + j].to_bits());
            }
        }
    }

    #[test]
    fn wrong_results_and_sizes_are_rejected() {
        let n = 64;
        let want = Cholesky::expected(n, &());
        let mut a = Cholesky::input(n, &());
        run(&mut Serial, 64, &mut a, 8);
        assert_eq!(Cholesky::verify(n, &(), &want, &a, ()), Ok(()));
        a[7 * 64 + 40] -= 1e-14;
        let e = Cholesky::verify(n, &(), &want, &a, ()).unwrap_err();
        assert!(e.contains("(7, 40)") && !e.contains('\n'), "{e}");
        assert!(Cholesky::verify(n, &(), &want, &Cholesky::input(n, &()), ()).is_err());
        assert!(Cholesky::check_n(48).unwrap_err().contains("power of two"));
    }
}
