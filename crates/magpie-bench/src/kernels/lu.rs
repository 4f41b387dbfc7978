//! LU: recursive LU decomposition without pivoting of an `n`×`n` matrix (`n` a power of two), the
//! "LU" benchmark of SLAW (Guo et al., IPDPS 2010) Table I ("LU, recursive, block 64", after
//! Cilk's `lu`). A = L·U with L unit lower triangular and U upper triangular, both written over A
//! in place. The matrix is strictly diagonally dominant by rows (random off-diagonal entries in
//! [-1, 1), the diagonal one more than the row's sum of their magnitudes), so every leading block
//! is nonsingular and no pivoting is needed.
//!
//! The recursion splits A into quadrants:
//!
//! ```text
//! [A00 A01]    lu(A00)                          A00 = L00·U00
//! [A10 A11]    A01 = L00⁻¹·A01  ‖  A10 = A10·U00⁻¹   (in parallel: U01 and L10)
//!              A11 -= A10·A01                    (the Schur complement, in parallel)
//!              lu(A11)
//! ```
//!
//! The two triangular solves ([`upper_solve`], [`lower_solve`]) are themselves recursive: their
//! two independent halves (column halves of U01, row halves of L10) run in parallel, each a solve,
//! a Schur-style update and a solve. The update C -= A·B ([`schur`]) splits C into quadrants and
//! runs their four products with the first half of the inner dimension as one round of four tasks,
//! then those with the second half as a second round. Blocks of side `grain` or less are done by
//! plain loops.
//!
//! Blocks are lists of disjoint mutable row slices ([`Block`]), split into quadrants with
//! `split_at_mut`, and read through shared views ([`View`]): safe Rust throughout.
//!
//! Every update is subtracted straight into the matrix, and the recursion applies the updates of
//! an entry in the order of their index k: entry (i, j) ends as `a_ij - l_i0·u_0j - l_i1·u_1j - …`
//! subtracted one k at a time, then (below the diagonal) divided by `u_jj` — exactly what the plain
//! right-looking loop ([`plain`]) computes. So the result is bit for bit the same at every grain,
//! on every runtime, and equal to [`plain`] (a test checks it). [`Lu::expected`] runs the serial
//! twin (the same recursion on [`Serial`]); [`Lu::verify`] compares bits.
//!
//! Under the race checker ([`race_run`], `magpie::race`), each leaf declares what it reads and
//! writes, one row segment of a block at a time (a block is a strided view of the matrix's rows,
//! so one declaration per row it touches): `leaf_schur` writes C's rows and reads A's and B's;
//! `leaf_upper_solve` reads the strict lower part of L (row r up to column r), reads B's first
//! row and writes the others; `leaf_lower_solve` reads the upper part of U (row k from column
//! k) and writes B's rows; `leaf_lu` reads the block's first row and writes the others. The
//! declarations are computed only in a checked run; elsewhere a leaf pays one test. The planted
//! race ([`crate::races`]) is a row bound off by one in the Schur-complement update, the bug of
//! pointer-and-stride code such as Cilk's `lu`: each C block's update also runs over the row
//! just below the block, the top row of the block its sibling task updates in the same round.

use crate::kernel::{Def, Kernel};
use crate::common::{self, SplitMix64};
use crate::fork::{Fork, Serial};
use crate::harness::sum12;
use crate::workload::{self, Info, Workload};

/// A deterministic `n`×`n` row-major matrix, strictly diagonally dominant by rows: off-diagonal
/// entries pseudo-random in [-1, 1), each diagonal entry 1 more than its row's sum of
/// |off-diagonal|. `seed` picks the kernel's stream.
pub fn dominant_matrix(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64(seed ^ n as u64);
    let mut a: Vec<f64> = (0..n * n).map(|_| rng.next_signed_f64()).collect();
    for (i, row) in a.chunks_exact_mut(n.max(1)).enumerate() {
        let off: f64 = row
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, x)| x.abs())
            .sum();
        row[i] = off + 1.0;
    }
    a
}

/// The input of size `n`.
pub fn input(n: usize) -> Vec<f64> {
    dominant_matrix(n, 0x4c55_0000_0000_0000)
}

/// A read-only square block: rows `rows`, columns `col..col + side` of each.
#[derive(Clone, Copy)]
pub struct View<'a> {
    rows: &'a [&'a mut [f64]],
    col: usize,
    side: usize,
}

impl<'a> View<'a> {
    /// The block's side.
    pub fn side(self) -> usize {
        self.side
    }
    /// Row `i` of the block.
    #[inline]
    pub fn row(self, i: usize) -> &'a [f64] {
        &self.rows[i][self.col..self.col + self.side]
    }
    /// Quadrant (`qi`, `qj`) (each 0 or 1) of this block, whose side must be even.
    pub fn quad(self, qi: usize, qj: usize) -> View<'a> {
        let h = self.side / 2;
        View {
            rows: &self.rows[qi * h..(qi + 1) * h],
            col: self.col + qj * h,
            side: h,
        }
    }
}

/// A square block that may be written: its rows, disjoint mutable slices as long as the block is
/// wide.
pub struct Block<'a> {
    rows: Vec<&'a mut [f64]>,
}

impl<'a> Block<'a> {
    /// The whole `n`×`n` row-major matrix `a`.
    pub fn whole(a: &'a mut [f64], n: usize) -> Block<'a> {
        assert_eq!(a.len(), n * n, "a square matrix of side {n}");
        Block {
            rows: a.chunks_exact_mut(n.max(1)).collect(),
        }
    }
    /// The block's side.
    pub fn side(&self) -> usize {
        self.rows.len()
    }
    /// The block, read-only.
    pub fn view(&self) -> View<'_> {
        View {
            rows: &self.rows,
            col: 0,
            side: self.side(),
        }
    }
    /// The rows, to be written.
    pub fn rows(&mut self) -> &mut [&'a mut [f64]] {
        &mut self.rows
    }
    /// The quadrants [top-left, top-right, bottom-left, bottom-right] (the side must be even).
    pub fn quads(&mut self) -> [Block<'_>; 4] {
        let h = self.side() / 2;
        let mut q: [Block<'_>; 4] = std::array::from_fn(|_| Block {
            rows: Vec::with_capacity(h),
        });
        for (i, row) in self.rows.iter_mut().enumerate() {
            let (left, right) = row.split_at_mut(h);
            let top = if i < h { 0 } else { 2 };
            q[top].rows.push(left);
            q[top + 1].rows.push(right);
        }
        q
    }
}

/// C -= A·B for blocks of one side, by the i-k-j loop.
///
/// Declares (in a checked run) a write of each of C's rows and a read of each of A's and B's.
/// Planted, it also declares a write of the row just below C at C's columns (the update loop's
/// row bound off by one: `0..=side`), which is the top row of the block below, updated by a
/// sibling task of the same round (or, below the matrix's last row, memory the run never
/// touches). Only declared: the leaf updates C alone.
fn leaf_schur(c: &mut Block<'_>, a: View<'_>, b: View<'_>) {
    if magpie::race::checking() {
        for ci in &c.rows {
            magpie::race::write(&ci[..]);
        }
        for i in 0..a.side() {
            magpie::race::read(a.row(i));
            magpie::race::read(b.row(i));
        }
        if crate::races::planted() && c.side() >= 2 {
            // The matrix's row stride, from the block's first two rows; the row past the last
            // is one stride on (declared, never formed into a slice nor touched).
            let f = std::mem::size_of::<f64>();
            let stride = (c.rows[1].as_ptr() as usize - c.rows[0].as_ptr() as usize) / f;
            let last = c.rows[c.side() - 1].as_ptr();
            magpie::race::write_raw(last.wrapping_add(stride), c.side());
        }
    }
    for (i, ci) in c.rows().iter_mut().enumerate() {
        for (k, &aik) in a.row(i).iter().enumerate() {
            for (cij, &bkj) in ci.iter_mut().zip(b.row(k)) {
                *cij -= aik * bkj;
            }
        }
    }
}

/// C -= A·B for square blocks of one side: the quadrants of C in parallel, in two rounds (the
/// first and second halves of the inner dimension, in that order), down to `grain`.
pub fn schur<F: Fork>(f: &mut F, c: &mut Block<'_>, a: View<'_>, b: View<'_>, grain: usize) {
    if c.side() <= grain {
        return leaf_schur(c, a, b);
    }
    let [mut c00, mut c01, mut c10, mut c11] = c.quads();
    for k in 0..2 {
        f.join(
            |f| {
                f.join(
                    |f| schur(f, &mut c00, a.quad(0, k), b.quad(k, 0), grain),
                    |f| schur(f, &mut c01, a.quad(0, k), b.quad(k, 1), grain),
                )
            },
            |f| {
                f.join(
                    |f| schur(f, &mut c10, a.quad(1, k), b.quad(k, 0), grain),
                    |f| schur(f, &mut c11, a.quad(1, k), b.quad(k, 1), grain),
                )
            },
        );
    }
}

/// B = L⁻¹·B in place, L unit lower triangular (its strict lower part read from `l`): forward
/// substitution, row k's multiples subtracted from the rows below in k order.
///
/// Declares (in a checked run) a read of row r of L up to column r (its strict lower part: the
/// unit diagonal is not stored there), a read of B's first row (whose multiples are subtracted
/// from the others; it is left as it is) and a write of each of B's other rows.
fn leaf_upper_solve(l: View<'_>, b: &mut Block<'_>) {
    if magpie::race::checking() && b.side() >= 2 {
        for r in 1..b.side() {
            magpie::race::read(&l.row(r)[..r]);
        }
        magpie::race::read(&b.rows[0][..]);
        for bi in &b.rows[1..] {
            magpie::race::write(&bi[..]);
        }
    }
    let rows = b.rows();
    for k in 0..rows.len() {
        let (done, below) = rows.split_at_mut(k + 1);
        let bk = &done[k];
        for (i, bi) in below.iter_mut().enumerate() {
            let lik = l.row(k + 1 + i)[k];
            for (x, &y) in bi.iter_mut().zip(bk.iter()) {
                *x -= lik * y;
            }
        }
    }
}

/// B = L⁻¹·B in place (L unit lower triangular, read from `l`): the column halves of B in
/// parallel, each solved with L's top-left quadrant, updated by its bottom-left one and solved
/// with its bottom-right one, down to `grain`.
pub fn upper_solve<F: Fork>(f: &mut F, l: View<'_>, b: &mut Block<'_>, grain: usize) {
    if b.side() <= grain {
        return leaf_upper_solve(l, b);
    }
    let [mut b00, mut b01, mut b10, mut b11] = b.quads();
    let column = |f: &mut F, top: &mut Block<'_>, bottom: &mut Block<'_>| {
        upper_solve(f, l.quad(0, 0), top, grain);
        schur(f, bottom, l.quad(1, 0), top.view(), grain);
        upper_solve(f, l.quad(1, 1), bottom, grain);
    };
    f.join(
        |f| column(f, &mut b00, &mut b10),
        |f| column(f, &mut b01, &mut b11),
    );
}

/// B = B·U⁻¹ in place, U upper triangular (read from `u`): each row by column k in order, divided
/// by u_kk and then its multiples of U's row k subtracted from the later columns.
///
/// Declares (in a checked run) a read of row k of U from column k on (its upper part, diagonal
/// included) and a write of each of B's rows.
fn leaf_lower_solve(u: View<'_>, b: &mut Block<'_>) {
    if magpie::race::checking() {
        for k in 0..u.side() {
            magpie::race::read(&u.row(k)[k..]);
        }
        for bi in &b.rows {
            magpie::race::write(&bi[..]);
        }
    }
    for bi in b.rows().iter_mut() {
        for k in 0..bi.len() {
            bi[k] /= u.row(k)[k];
            let x = bi[k];
            for (y, &ukj) in bi[k + 1..].iter_mut().zip(&u.row(k)[k + 1..]) {
                *y -= x * ukj;
            }
        }
    }
}

/// B = B·U⁻¹ in place (U upper triangular, read from `u`): the row halves of B in parallel, each
/// solved with U's top-left quadrant, updated by its top-right one and solved with its
/// bottom-right one, down to `grain`.
pub fn lower_solve<F: Fork>(f: &mut F, u: View<'_>, b: &mut Block<'_>, grain: usize) {
    if b.side() <= grain {
        return leaf_lower_solve(u, b);
    }
    let [mut b00, mut b01, mut b10, mut b11] = b.quads();
    let row = |f: &mut F, left: &mut Block<'_>, right: &mut Block<'_>| {
        lower_solve(f, u.quad(0, 0), left, grain);
        schur(f, right, left.view(), u.quad(0, 1), grain);
        lower_solve(f, u.quad(1, 1), right, grain);
    };
    f.join(
        |f| row(f, &mut b00, &mut b01),
        |f| row(f, &mut b10, &mut b11),
    );
}

/// LU of a block by the right-looking loop: for each k, the column below the pivot divided by it,
/// then the trailing rows updated.
///
/// Declares (in a checked run) a read of the block's first row (U's first row, left as it is)
/// and a write of each of its other rows.
fn leaf_lu(a: &mut Block<'_>) {
    if magpie::race::checking() && a.side() >= 2 {
        magpie::race::read(&a.rows[0][..]);
        for ai in &a.rows[1..] {
            magpie::race::write(&ai[..]);
        }
    }
    let rows = a.rows();
    for k in 0..rows.len() {
        let (done, below) = rows.split_at_mut(k + 1);
        let ak = &done[k];
        for ai in below.iter_mut() {
            ai[k] /= ak[k];
            let lik = ai[k];
            for (x, &y) in ai[k + 1..].iter_mut().zip(&ak[k + 1..]) {
                *x -= lik * y;
            }
        }
    }
}

/// LU of a block in place: the recursion of the module docs, down to `grain`.
pub fn lu<F: Fork>(f: &mut F, a: &mut Block<'_>, grain: usize) {
    if a.side() <= grain {
        return leaf_lu(a);
    }
    let [mut a00, mut a01, mut a10, mut a11] = a.quads();
    lu(f, &mut a00, grain);
    let a00 = a00.view();
    f.join(
        |f| upper_solve(f, a00, &mut a01, grain),
        |f| lower_solve(f, a00, &mut a10, grain),
    );
    schur(f, &mut a11, a10.view(), a01.view(), grain);
    lu(f, &mut a11, grain);
}

/// The kernel over any [`Fork`]: LU of the `n`×`n` row-major `a` in place, blocks of side `grain`
/// or less done serially.
pub fn run<F: Fork>(f: &mut F, n: usize, a: &mut [f64], grain: u64) {
    let grain = grain.clamp(1, n.max(1) as u64) as usize;
    lu(f, &mut Block::whole(a, n), grain);
}

/// The plain right-looking loop (no blocks, no recursion), in place.
pub fn plain(n: usize, a: &mut [f64]) {
    for k in 0..n {
        for i in k + 1..n {
            a[i * n + k] /= a[k * n + k];
            let lik = a[i * n + k];
            for j in k + 1..n {
                a[i * n + j] -= lik * a[k * n + j];
            }
        }
    }
}

/// The LU workload.
pub struct Lu;

static DEF: Def = Def {
    race: Some(RACE),
    ..workload::def::<Lu>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Lu {
    const INFO: Info = Info {
        name: "lu",
        source: "SLAW Table I (LU, recursive, block 64; after Cilk's lu)",
        n_meaning: "matrix side, a power of two",
        ci: 256,
        // About 0.9 s serially here (release build); 1024 takes 0.12 s.
        default: 2048,
        // SLAW's table gives the block (64); its matrix side is not known here, so this is the
        // default size (a 2048×2048 matrix takes 32 MiB; 8192, the largest, 512 MiB and about
        // 10^12 flops, run twice with the reference).
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
        compare("lu", n as usize, want, got)
    }
}

/// Compares two `n`×`n` row-major results bit for bit, `want` being the serial twin's; the error
/// names the first entry that differs.
pub(crate) fn compare(name: &str, n: usize, want: &[f64], got: &[f64]) -> Result<(), String> {
    compare_with(name, n, want, got, "the serial twin")
}

/// [`compare`] with `want` computed by `reference` (named in the error, as in "the plain loop").
pub(crate) fn compare_with(
    name: &str,
    n: usize,
    want: &[f64],
    got: &[f64],
    reference: &str,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{name}({n}): {} entries, expected {}",
            got.len(),
            want.len()
        ));
    }
    match common::first_bit_difference(got, want) {
        None => Ok(()),
        Some(k) => Err(format!(
            "{name}({n}): entry ({}, {}) is {:e}, {reference} gives {:e}",
            k / n,
            k % n,
            got[k],
            want[k]
        )),
    }
}

/// The block side [`race_run`] does serially: small, so that a checked matrix of side 64 has
/// 8×8 blocks and every level of the recursion forks.
pub const RACE_GRAIN: u64 = 8;

/// This kernel under the race checker ([`crate::races`]).
pub const RACE: crate::races::Facet = crate::races::Facet {
    name: "lu",
    default_n: 64,
    run: race_run,
};

/// lu under the race checker ([`crate::races`]): LU of the `n`×`n` input on the current pool
/// (`magpie::join`, blocks of side [`RACE_GRAIN`]), its leaves declaring their row segments,
/// checked bit for bit against the serial twin. The twin runs on a thread of its own, outside
/// the checked run, so that the report counts the kernel's accesses only. Returns the answer
/// line; the error (an invalid `n`, a wrong result) is one line.
pub fn race_run(n: u64) -> Result<String, String> {
    Lu::check_n(n)?;
    let side = n as usize;
    let mut a = input(side);
    run(&mut crate::fork::Magpie, side, &mut a, RACE_GRAIN);
    let want = std::thread::scope(|s| {
        s.spawn(|| Lu::expected(n, &()))
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    Lu::verify(n, &(), &want, &a, ())?;
    Ok(Lu::answer(n, &(), &a, &()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_matches_the_serial_twin() {
        crate::workload::check_everywhere::<Lu>(&[1, 2, 32, 128], &[8, 64]);
        // Blocks of one entry: slow in a debug build, so small sizes only.
        crate::workload::check_everywhere::<Lu>(&[2, 32], &[1]);
    }

    #[test]
    fn recursion_equals_the_plain_loop_bit_for_bit() {
        for n in [1, 2, 4, 32, 128] {
            let mut want = input(n);
            plain(n, &mut want);
            for grain in [1, 3, 8, 64, 1000] {
                let mut a = input(n);
                run(&mut Serial, n, &mut a, grain);
                assert_eq!(compare("lu", n, &want, &a), Ok(()), "grain {grain}");
            }
        }
    }

    #[test]
    fn l_times_u_is_a() {
        // |(L·U − A)_ij| ≤ γ_n (|L|·|U|)_ij with γ_n = nε/(1 − nε) (Higham, Thm 9.3); the test
        // allows twice that.
        let n = 128;
        let a0 = input(n);
        let mut a = a0.clone();
        run(&mut Serial, n, &mut a, 16);
        let gamma = n as f64 * f64::EPSILON / (1.0 - n as f64 * f64::EPSILON);
        for i in 0..n {
            for j in 0..n {
                let (mut s, mut bound) = (0.0, 0.0);
                for k in 0..=i.min(j) {
                    let l = if k == i { 1.0 } else { a[i * n + k] };
                    let u = a[k * n + j];
                    s += l * u;
                    bound += (l * u).abs();
                }
                let err = (s - a0[i * n + j]).abs();
                assert!(
                    err <= 2.0 * gamma * bound,
                    "({i}, {j}): {err:e} > {bound:e}"
                );
            }
        }
    }

    #[test]
    fn wrong_results_and_sizes_are_rejected() {
        let n = 64;
        let want = Lu::expected(n, &());
        let mut a = Lu::input(n, &());
        run(&mut Serial, 64, &mut a, 8);
        assert_eq!(Lu::verify(n, &(), &want, &a, ()), Ok(()));
        a[5 * 64 + 9] += 1e-14;
        let e = Lu::verify(n, &(), &want, &a, ()).unwrap_err();
        assert!(e.contains("(5, 9)") && !e.contains('\n'), "{e}");
        assert!(Lu::verify(n, &(), &want, &Lu::input(n, &()), ()).is_err());
        assert!(Lu::check_n(96).unwrap_err().contains("power of two"));
    }

    #[test]
    fn race_checker_finds_no_race_unless_planted() {
        // 32×32 in blocks of 8: every recursion forks, down to leaves of side 8.
        let n = 32;
        let want = Lu::answer(n, &(), &Lu::expected(n, &()), &());
        crate::races::assert_clean_and_planted_found(RACE, n, &want);
        assert!(race_run(96).unwrap_err().contains("power of two"));
    }
}
