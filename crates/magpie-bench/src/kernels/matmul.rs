//! Matmul: recursive matrix multiplication C = A × B of `n`×`n` matrices of `f64`, `n` a power of
//! two, with a sequential block size, the grain, of [`THRESHOLD`] by default (SLAW (Guo et al.,
//! IPDPS 2010) Table I, "Matmul", threshold 64). C is divided into quadrants and each quadrant is
//! the sum of two quadrant products (C11 = A11·B11 + A12·B21, and so on): the four products with
//! the first half of the inner dimension run as one round of four independent tasks
//! (`join(join(..), join(..))`), then the four with the second half accumulate into C as a second
//! round. Blocks of side the grain or less are multiplied by a plain i-k-j triple loop.
//!
//! Matrices are flat row-major slices. A and B are read through a shared view (offsets and a row
//! stride); the block of C a call owns is a list of disjoint mutable row slices, so the four
//! quadrants are split off safely (`split_at_mut` on the rows, then on each row), with no `unsafe`.
//!
//! Every entry of C is summed in the same order (k = 0, 1, …, n − 1) whatever runs in parallel,
//! since the second round of a block starts after its first round has finished, and the leaf loop
//! runs k in order too: all versions give bit-for-bit the same C, at every grain (the grain moves
//! where the recursion stops, not the order of the sums; [`verify`] would accept a different
//! rounding anyway). Versions: magpie ([`parallel`], `magpie::join`), the serial twin ([`serial`]),
//! rayon ([`rayon_join`]) and chili ([`chili_join`]), each also with a grain ([`parallel_grain`]
//! and so on); [`verify`] checks a product by Freivalds' method in O(n²).
//!
//! Under the race checker (`magpie::race`, [`race_run`]) each leaf declares what it touches, as
//! `f64`s, one declaration per row: the `m` rows of its A block and of its B block that it
//! reads, and the `m` rows of its C block that it updates (declared as writes: `C += A·B`
//! reads each entry and writes it back). The planted race ([`crate::races::planted`]) is a
//! block bound off by one: a leaf also declares a write of the entry just right of its C
//! block's first row, which belongs to the neighbouring C block, updated in the same round.

use crate::harness::{answered, Measured, RunError};
use crate::kernel::{self, Def, Grain, Kernel};
use crate::kernel::Case;
use crate::workload::{self, Runtime};
use crate::Peer;

use crate::fork::{Chili, Fork, Magpie, Rayon, Serial};

/// `n` for `--size ci`.
pub const CI: u64 = 128;
/// `n` for `--size default`.
pub const DEFAULT: u64 = 1024;
/// `n` for `--size paper`: SLAW Table I multiplies 1500×1500 matrices (threshold 64); the
/// quadrant recursion here needs a power of two, and 2048 is the nearest one above.
pub const PAPER: u64 = 2048;
/// Largest `n` accepted (three 8192×8192 matrices take 1.5 GiB).
pub const MAX_N: u64 = 8192;
/// The default grain: the block side at or below which a block is multiplied serially.
pub const THRESHOLD: usize = 64;

/// Checks `n`: a power of two from 1 to [`MAX_N`]. The error is one line.
pub fn check_n(n: u64) -> Result<(), String> {
    if n.is_power_of_two() && n <= MAX_N {
        Ok(())
    } else {
        Err(format!(
            "invalid n `{n}` for matmul: expected a power of two between 1 and {MAX_N} (matrix side)"
        ))
    }
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1), a multiple of 2^-52.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 52) as f64) - 1.0
    }
}

/// The inputs A and B: `n`×`n`, row-major, deterministic pseudo-random entries in [-1, 1).
pub fn inputs(n: u64) -> (Vec<f64>, Vec<f64>) {
    let len = (n * n) as usize;
    let mut rng = Rng(0x6d61_746d_756c_0001 ^ n);
    let a = (0..len).map(|_| rng.next_f64()).collect();
    let b = (0..len).map(|_| rng.next_f64()).collect();
    (a, b)
}

/// A read-only square block of a row-major matrix: its top-left corner and the matrix's row stride.
#[derive(Clone, Copy)]
struct View<'a> {
    data: &'a [f64],
    stride: usize,
    row: usize,
    col: usize,
}

impl<'a> View<'a> {
    fn whole(data: &'a [f64], n: usize) -> View<'a> {
        View {
            data,
            stride: n,
            row: 0,
            col: 0,
        }
    }
    /// Quadrant (`qi`, `qj`) of this block, whose side is `2 * h`.
    #[inline]
    fn quad(self, h: usize, qi: usize, qj: usize) -> View<'a> {
        View {
            row: self.row + qi * h,
            col: self.col + qj * h,
            ..self
        }
    }
    /// The first `len` entries of row `i` of this block.
    #[inline]
    fn row(self, i: usize, len: usize) -> &'a [f64] {
        let start = (self.row + i) * self.stride + self.col;
        &self.data[start..start + len]
    }
}

/// The C block a call owns: its rows, each a disjoint mutable slice as long as the block is wide.
type Rows<'a> = Vec<&'a mut [f64]>;

/// Splits a square block of side `2 * h` into its quadrants [C11, C12, C21, C22].
fn quadrants<'b>(c: &'b mut [&mut [f64]], h: usize) -> [Rows<'b>; 4] {
    let (top, bottom) = c.split_at_mut(h);
    let mut q: [Rows<'b>; 4] = std::array::from_fn(|_| Vec::with_capacity(h));
    for row in top.iter_mut() {
        let (left, right) = row.split_at_mut(h);
        q[0].push(left);
        q[1].push(right);
    }
    for row in bottom.iter_mut() {
        let (left, right) = row.split_at_mut(h);
        q[2].push(left);
        q[3].push(right);
    }
    q
}

/// C += A·B for blocks of side `m` by the i-k-j loop.
fn leaf(m: usize, a: View<'_>, b: View<'_>, c: &mut [&mut [f64]]) {
    if magpie::race::checking() {
        declare_leaf(m, a, b, c);
    }
    for (i, ci) in c.iter_mut().enumerate() {
        for (k, &aik) in a.row(i, m).iter().enumerate() {
            for (cij, &bkj) in ci.iter_mut().zip(b.row(k, m)) {
                *cij += aik * bkj;
            }
        }
    }
}

/// A leaf's accesses, for the race checker: the rows of A's and B's blocks read, the rows of
/// C's block written. With the race planted ([`crate::races::planted`]) the leaf also declares
/// a write of the entry right of its block's first row (its j loop run one column too far),
/// when that entry is in C (the block is not in C's last block column): an entry of the next
/// block to the right, which the leaves under the same round of the nearest common quadrant
/// split update beside this one. Declared only; the entry is not touched.
fn declare_leaf(m: usize, a: View<'_>, b: View<'_>, c: &[&mut [f64]]) {
    for i in 0..m {
        magpie::race::read(a.row(i, m));
        magpie::race::read(b.row(i, m));
    }
    for ci in c {
        magpie::race::write(ci);
    }
    // B's block columns are C's (the block of C is `a.row..` × `b.col..`).
    if crate::races::planted() && b.col + m < b.stride {
        magpie::race::write_raw(c[0].as_ptr_range().end, 1);
    }
}

/// Checks the arguments, zeroes C and returns `n` and C's rows.
fn prepare<'c>(n: u64, a: &[f64], b: &[f64], c: &'c mut [f64]) -> (usize, Rows<'c>) {
    assert!(check_n(n).is_ok(), "matmul: n = {n} is not a power of two");
    let n = n as usize;
    assert!(
        a.len() == n * n && b.len() == n * n && c.len() == n * n,
        "matmul: matrices must have n * n = {} entries",
        n * n
    );
    c.fill(0.0);
    (n, c.chunks_mut(n).collect())
}

/// C += A·B for blocks of side `m`, by quadrants down to blocks of side `grain` (at least 1).
fn rec<F: Fork>(f: &mut F, grain: usize, m: usize, a: View<'_>, b: View<'_>, c: &mut [&mut [f64]]) {
    if m <= grain {
        return leaf(m, a, b, c);
    }
    let h = m / 2;
    let [mut c11, mut c12, mut c21, mut c22] = quadrants(c, h);
    // Round k: the four quadrant products with the k-th half of the inner dimension.
    for k in 0..2 {
        f.join(
            |f| {
                f.join(
                    |f| rec(f, grain, h, a.quad(h, 0, k), b.quad(h, k, 0), &mut c11),
                    |f| rec(f, grain, h, a.quad(h, 0, k), b.quad(h, k, 1), &mut c12),
                )
            },
            |f| {
                f.join(
                    |f| rec(f, grain, h, a.quad(h, 1, k), b.quad(h, k, 0), &mut c21),
                    |f| rec(f, grain, h, a.quad(h, 1, k), b.quad(h, k, 1), &mut c22),
                )
            },
        );
    }
}

fn multiply_with<F: Fork>(mut f: F, n: u64, a: &[f64], b: &[f64], c: &mut [f64], grain: usize) {
    let (n, mut rows) = prepare(n, a, b, c);
    let (a, b) = (View::whole(a, n), View::whole(b, n));
    rec(&mut f, grain.max(1), n, a, b, &mut rows);
}

/// The serial twin: C = A·B (C is overwritten) by the same recursive blocking, without a runtime.
/// Matrices are `n`×`n` row-major; panics unless `n` passes [`check_n`] and each slice has `n * n`
/// entries.
pub fn serial(n: u64, a: &[f64], b: &[f64], c: &mut [f64]) {
    serial_grain(n, a, b, c, THRESHOLD)
}

/// [`serial`] with blocks of side at most `grain` (0 counts as 1) multiplied by the plain loop.
pub fn serial_grain(n: u64, a: &[f64], b: &[f64], c: &mut [f64], grain: usize) {
    multiply_with(Serial, n, a, b, c, grain)
}

/// C = A·B with `magpie::join`: two rounds of four quadrant products per level. Call inside
/// `Pool::install`. Same arguments and result as [`serial`].
pub fn parallel(n: u64, a: &[f64], b: &[f64], c: &mut [f64]) {
    parallel_grain(n, a, b, c, THRESHOLD)
}

/// [`parallel`] with blocks of side at most `grain` (0 counts as 1) multiplied by the plain loop.
pub fn parallel_grain(n: u64, a: &[f64], b: &[f64], c: &mut [f64], grain: usize) {
    multiply_with(Magpie, n, a, b, c, grain)
}

/// The same computation with `rayon::join`. Call inside a rayon pool's `install`.
pub fn rayon_join(n: u64, a: &[f64], b: &[f64], c: &mut [f64]) {
    rayon_join_grain(n, a, b, c, THRESHOLD)
}

/// [`rayon_join`] with blocks of side at most `grain` (0 counts as 1) multiplied by the plain
/// loop.
pub fn rayon_join_grain(n: u64, a: &[f64], b: &[f64], c: &mut [f64], grain: usize) {
    multiply_with(Rayon, n, a, b, c, grain)
}

/// The same computation with `chili::Scope::join`.
pub fn chili_join(s: &mut chili::Scope<'_>, n: u64, a: &[f64], b: &[f64], c: &mut [f64]) {
    chili_join_grain(s, n, a, b, c, THRESHOLD)
}

/// [`chili_join`] with blocks of side at most `grain` (0 counts as 1) multiplied by the plain
/// loop.
pub fn chili_join_grain(
    s: &mut chili::Scope<'_>,
    n: u64,
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
    grain: usize,
) {
    multiply_with(Chili::new(s), n, a, b, c, grain)
}

/// The grain [`race_run`] multiplies at: blocks of side `n / 8` (at least 1), three levels of
/// quadrants at any `n` from 8 (512 leaves; at [`THRESHOLD`] a small matrix would be a single
/// leaf, with nothing in parallel to check).
fn race_grain(n: u64) -> usize {
    (n / 8).max(1) as usize
}

/// This kernel under the race checker ([`crate::races`]).
pub const RACE: crate::races::Facet = crate::races::Facet {
    name: "matmul",
    default_n: 64,
    run: race_run,
};

/// Matmul under the race checker (`crate::races`): [`parallel_grain`] (magpie) with blocks of
/// side `n / 8` (at least 1: three levels of quadrants, where the default grain would leave a
/// small matrix one leaf) on [`inputs`]`(n)` in the current pool, its C checked by [`verify`] and
/// bit for bit against the serial twin's at the same grain. Returns the [`answer`] line, or one
/// line: an invalid `n`, a failed check or the first entry that differs. The checks run on a
/// thread of their own, outside the pool, so that the twin's leaves are not checked (in a
/// checked run they would add their accesses to the report, all in the root's last step).
pub fn race_run(n: u64) -> Result<String, String> {
    check_n(n)?;
    let side = n as usize;
    let (a, b) = inputs(n);
    let mut c = vec![f64::NAN; side * side];
    let grain = race_grain(n);
    parallel_grain(n, &a, &b, &mut c, grain);
    let twin = || {
        verify(n, &a, &b, &c)?;
        let mut want = vec![f64::NAN; side * side];
        serial_grain(n, &a, &b, &mut want, grain);
        match crate::common::first_bit_difference(&c, &want) {
            None => Ok(()),
            Some(k) => Err(format!(
                "matmul({n}): C[{}][{}] is {:e}, the serial twin gives {:e}",
                k / side,
                k % side,
                c[k],
                want[k]
            )),
        }
    };
    std::thread::scope(|s| s.spawn(twin).join())
        .unwrap_or_else(|_| Err(format!("matmul({n}): the serial twin panicked")))?;
    Ok(answer(&c))
}

fn row_slices(m: &[f64], n: usize) -> Vec<&[f64]> {
    m.chunks_exact(n).collect()
}

/// Random ±1 vectors Freivalds' check multiplies by.
const FREIVALDS_VECTORS: u64 = 2;

/// A run's answer: the sum of C's entries, to 12 significant digits.
pub fn answer(c: &[f64]) -> String {
    format!("sum {}", crate::harness::sum12(c))
}

/// Checks C = A·B by Freivalds' method: for a few deterministic random vectors r with entries ±1,
/// compares A·(B·r) with C·r row by row, in O(n²) per vector. The tolerance of row i is a bound on
/// the rounding error of sequential summation, 4·n·ε·(Σ_k |A_ik|·‖B_k‖₁ + Σ_j |C_ij|), so any
/// entry of C off by more than that is caught (r's entries are ±1). The error is one line.
pub fn verify(n: u64, a: &[f64], b: &[f64], c: &[f64]) -> Result<(), String> {
    check_n(n)?;
    let n = n as usize;
    if a.len() != n * n || b.len() != n * n || c.len() != n * n {
        return Err(format!(
            "matmul({n}): expected n * n = {} entries, got A {}, B {}, C {}",
            n * n,
            a.len(),
            b.len(),
            c.len()
        ));
    }
    let (a, b, c) = (row_slices(a, n), row_slices(b, n), row_slices(c, n));
    // ‖B_k‖₁ and Σ_k |A_ik|·‖B_k‖₁ + Σ_j |C_ij|: the scale of row i's error.
    let b_norm: Vec<f64> = b.iter().map(|r| r.iter().map(|x| x.abs()).sum()).collect();
    let tol: Vec<f64> = a
        .iter()
        .zip(&c)
        .map(|(ai, ci)| {
            let ab: f64 = ai.iter().zip(&b_norm).map(|(x, s)| x.abs() * s).sum();
            let cc: f64 = ci.iter().map(|x| x.abs()).sum();
            4.0 * n as f64 * f64::EPSILON * (ab + cc)
        })
        .collect();
    let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(x, y)| x * y).sum::<f64>();
    let mut rng = Rng(0x6672_6569_7661_6c64);
    for _ in 0..FREIVALDS_VECTORS {
        let r: Vec<f64> = (0..n)
            .map(|_| if rng.next_u64() >> 63 == 0 { 1.0 } else { -1.0 })
            .collect();
        let br: Vec<f64> = b.iter().map(|bk| dot(bk, &r)).collect();
        for (i, ((ai, ci), tol)) in a.iter().zip(&c).zip(&tol).enumerate() {
            let want = dot(ai, &br);
            let got = dot(ci, &r);
            let err = (got - want).abs();
            // NaN (in C or from overflow) fails too.
            if err.is_nan() || err > *tol {
                return Err(format!(
                    "matmul({n}): row {i} of C fails Freivalds' check: (C·r)_{i} = {got}, \
                     (A·(B·r))_{i} = {want}, difference {err:e} above tolerance {tol:e}"
                ));
            }
        }
    }
    Ok(())
}

static DEF: Def = Def {
    name: "matmul",
    n_meaning: "matrix side, a power of two",
    sizes: [CI, DEFAULT, PAPER],
    max_n: MAX_N,
    check_n: Some(check_n),
    grain: Some(Grain {
        default: Some(THRESHOLD as u64),
        max: Some(MAX_N),
        meaning: "block side multiplied by the plain loop",
        check: None,
    }),
    peers: &[Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
    race: Some(RACE),
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times the product on `rt` at the case's grain; the inputs are built once per size.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let n = case.n;
    let (a, b) = workload::cached(("matmul-inputs", n), || inputs(n))
        .as_ref()
        .clone();
    let (a, b) = (&a[..], &b[..]);
    let len = (n * n) as usize;
    let g = case.grain.map_or(THRESHOLD, |g| g as usize);
    kernel::measure_versions(
        rt,
        runs,
        || vec![0.0; len],
        |c| serial_grain(n, a, b, c, g),
        |c| parallel_grain(n, a, b, c, g),
        |c| rayon_join_grain(n, a, b, c, g),
        |s, c| chili_join_grain(s, n, a, b, c, g),
        |c, ()| answered(verify(n, a, b, c), || answer(c)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(
        n: u64,
        f: impl FnOnce(&[f64], &[f64], &mut [f64]),
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (a, b) = inputs(n);
        let mut c = vec![f64::NAN; (n * n) as usize];
        f(&a, &b, &mut c);
        (a, b, c)
    }

    #[test]
    fn serial_matches_naive_loop_and_verifies() {
        for n in [1, 2, 64, CI] {
            let (a, b, c) = product(n, |a, b, c| serial(n, a, b, c));
            assert_eq!(verify(n, &a, &b, &c), Ok(()), "n = {n}");
            // The recursion sums every entry in k order, like the plain i-k-j loop.
            let n = n as usize;
            let mut naive = vec![0.0; n * n];
            for i in 0..n {
                for k in 0..n {
                    for j in 0..n {
                        naive[i * n + j] += a[i * n + k] * b[k * n + j];
                    }
                }
            }
            assert!(c
                .iter()
                .zip(&naive)
                .all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }

    #[test]
    fn parallel_equals_serial_under_every_policy_and_width() {
        for n in [64, CI, 256] {
            let (a, b, want) = product(n, |a, b, c| serial(n, a, b, c));
            assert_eq!(verify(n, &a, &b, &want), Ok(()), "n = {n}");
            for p in [
                magpie::Policy::WorkFirst,
                magpie::Policy::HelpFirst,
                magpie::Policy::Adaptive,
            ] {
                for w in [1, 2] {
                    // The largest size in one configuration only: debug builds are slow.
                    if n == 256 && (p != magpie::Policy::Adaptive || w != 2) {
                        continue;
                    }
                    let pool = magpie::Pool::builder()
                        .workers(w)
                        .policy(p)
                        .build()
                        .unwrap();
                    let mut c = vec![f64::NAN; (n * n) as usize];
                    pool.install(|| parallel(n, &a, &b, &mut c));
                    assert_eq!(verify(n, &a, &b, &c), Ok(()), "n = {n}, {p:?}, {w} workers");
                    assert!(
                        c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                        "n = {n}, {p:?}, {w} workers: not bit-for-bit equal to serial"
                    );
                }
            }
        }
    }

    #[test]
    fn peers_verify() {
        let (a, b, want) = product(CI, |a, b, c| serial(CI, a, b, c));
        for w in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            let mut c = vec![f64::NAN; want.len()];
            pool.install(|| rayon_join(CI, &a, &b, &mut c));
            assert_eq!(verify(CI, &a, &b, &c), Ok(()));
            assert!(c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()));
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            });
            let mut c = vec![f64::NAN; want.len()];
            chili_join(&mut pool.scope(), CI, &a, &b, &mut c);
            assert_eq!(verify(CI, &a, &b, &c), Ok(()));
            assert!(c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }

    #[test]
    fn every_version_gives_the_same_bits_at_other_grains() {
        // The grain moves where the recursion stops, not the order of each entry's sum. n = 32
        // with grain 1 recurses to 1×1 blocks (about 37,000 calls), cheap in a debug build.
        let n = 32;
        let (a, b, want) = product(n, |a, b, c| serial(n, a, b, c));
        for grain in [0, 1, 2, 5, n as usize, usize::MAX] {
            let ok = |what: &str, c: &[f64]| {
                assert_eq!(verify(n, &a, &b, c), Ok(()), "{what}, grain {grain}");
                assert!(
                    c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{what}, grain {grain}: not bit-for-bit the default grain's product"
                );
            };
            let mut c = vec![f64::NAN; want.len()];
            serial_grain(n, &a, &b, &mut c, grain);
            ok("serial", &c);
            for w in [1, 2] {
                let pool = magpie::Pool::builder().workers(w).build().unwrap();
                let mut c = vec![f64::NAN; want.len()];
                pool.install(|| parallel_grain(n, &a, &b, &mut c, grain));
                ok(&format!("magpie x{w}"), &c);
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                let mut c = vec![f64::NAN; want.len()];
                pool.install(|| rayon_join_grain(n, &a, &b, &mut c, grain));
                ok(&format!("rayon x{w}"), &c);
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                let mut c = vec![f64::NAN; want.len()];
                chili_join_grain(&mut pool.scope(), n, &a, &b, &mut c, grain);
                ok(&format!("chili x{w}"), &c);
            }
        }
    }

    #[test]
    fn wrong_products_are_rejected() {
        let (a, b, c) = product(CI, |a, b, c| serial(CI, a, b, c));
        for (idx, delta) in [(0, 1.0), (77 * 128 + 5, 1e-6), (c.len() - 1, -1e-3)] {
            let mut bad = c.clone();
            bad[idx] += delta;
            let e = verify(CI, &a, &b, &bad).unwrap_err();
            assert!(e.contains(&format!("row {}", idx / 128)), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let mut bad = c.clone();
        bad[300] = f64::NAN;
        assert!(verify(CI, &a, &b, &bad).is_err());
        assert!(verify(CI, &a, &b, &c[1..]).is_err());
        assert!(verify(CI, &b, &a, &c).is_err());
    }

    #[test]
    fn race_checker_finds_no_race_unless_planted() {
        // n = 16 at grain 2: three levels of quadrants, 512 leaves.
        let n = 16;
        let (_, _, want) = product(n, |a, b, c| serial(n, a, b, c));
        let want = answer(&want);
        crate::races::assert_clean_and_planted_found(RACE, n, &want);
        assert!(race_run(12).unwrap_err().contains("power of two"));
    }

    #[test]
    fn n_is_checked() {
        for n in [0, 3, 100, 96, 1000, MAX_N + 1, 2 * MAX_N, u64::MAX] {
            let e = check_n(n).unwrap_err();
            assert!(e.contains("power of two"), "{e}");
        }
        for n in [1, 2, 64, CI, DEFAULT, PAPER, MAX_N] {
            assert_eq!(check_n(n), Ok(()), "n = {n}");
        }
    }

    #[test]
    fn inputs_are_deterministic_and_in_range() {
        let (a, b) = inputs(64);
        assert_eq!(inputs(64), (a.clone(), b.clone()));
        assert!(a.iter().chain(&b).all(|x| (-1.0..1.0).contains(x)));
        assert_ne!(a, b);
    }
}
