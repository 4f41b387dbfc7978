//! Strassen: C = A·B for `n`×`n` matrices of `f64` by Strassen's algorithm (Strassen, Numer.
//! Math. 1969), the "Strassen" benchmark of Lifflander's thesis. A product of side m > [`LEAF`]
//! splits A, B and C into quadrants and forms seven half-size products
//!
//! ```text
//! M1 = (A11 + A22)(B11 + B22)    M5 = (A11 + A12) B22
//! M2 = (A21 + A22) B11           M6 = (A21 − A11)(B11 + B12)
//! M3 = A11 (B12 − B22)           M7 = (A12 − A22)(B21 + B22)
//! M4 = A22 (B21 − B11)
//! C11 = M1 + M4 − M5 + M7        C12 = M3 + M5
//! C21 = M2 + M4                  C22 = M1 − M2 + M3 + M6
//! ```
//!
//! recursively; products of side [`LEAF`] or less use the plain i-k-j loop. So `n` must halve
//! evenly down to [`LEAF`] or less: a power of two times at most [`LEAF`] (1024, 1536 = 48·2⁵ and
//! 2048 are sides; 1000 is not). Powers of two alone would leave no default size between 1024
//! (about 0.2 s here) and 2048 (about 1.4 s). Above `grain` (a
//! matrix side) the seven products run in parallel as nested `join`s (each task forms its own
//! operand sums, then recurses) and the four quadrants of C are assembled as two `join`ed halves;
//! at or below it everything runs in order. Operands are read through strided views of A, B or a
//! task's own sum, each product writes its own slice of a fresh (zeroed) buffer, which the plain
//! loop accumulates into, and C is written by rows split off with `split_at_mut`: safe Rust
//! throughout.
//!
//! The grain only decides what forks: the recursion always stops at [`LEAF`], so every version,
//! at every grain, computes every entry by the same operations and is bit-for-bit equal to the
//! serial one (the tests check this). [`Strassen::expected`] computes C once with the serial twin
//! and [`Strassen::verify`] compares every run with it bit for bit.
//!
//! Strassen's rounding differs from the ordinary product's, so the serial twin cannot be compared
//! with a plain loop bit for bit; [`Strassen::expected`] checks it, once, by Freivalds' method
//! ([`check`]) — for two random vectors r with entries ±1, (C·r)_i against (A·(B·r))_i — within a
//! tolerance built from Higham's error bound for Strassen's method (Accuracy and Stability of
//! Numerical Algorithms, 2nd ed., §23.2.2): |Ĉ − C| ≤ [12^L (n0² + 5 n0) − 5n] u ‖A‖‖B‖ entry by
//! entry (first order), L levels down to side n0, ‖·‖ the largest entry, u = ε/2, and panics if
//! it fails. The bound is a worst case, far above the actual error (at n = 512 the largest
//! difference is about 10⁻⁶ of its tolerance, which is about 10⁻⁶ itself), so this check alone
//! would pass an entry off by less than the tolerance; it catches a real mistake in the
//! algorithm — a wrong sign, a product left out, a quadrant misplaced — which is off by order
//! one, while the runs are held to the serial twin's bits. The tests also compare the serial
//! twin with the naive product within Higham's bound.

use crate::kernel::{Def, Kernel};
use crate::common::{first_bit_difference, SplitMix64};
use crate::fork::{Fork, Serial};
use crate::harness::sum12;
use crate::workload::{self, Info, Workload};

/// The side at or below which a product is computed by the plain loop.
pub const LEAF: usize = 64;

/// The inputs A and B: `n`×`n`, row-major, entries uniform in [-1, 1).
#[derive(Clone, Debug)]
pub struct Inputs {
    /// A.
    pub a: Vec<f64>,
    /// B.
    pub b: Vec<f64>,
}

/// Deterministic pseudo-random inputs of side `n`.
pub fn inputs(n: usize) -> Inputs {
    let mut rng = SplitMix64(0x5354_5241_5353_0000 ^ n as u64);
    let a = (0..n * n).map(|_| rng.next_signed_f64()).collect();
    let b = (0..n * n).map(|_| rng.next_signed_f64()).collect();
    Inputs { a, b }
}

/// A read-only square block of a row-major matrix: the data, its row stride and the block's
/// first entry.
#[derive(Clone, Copy)]
struct View<'a> {
    data: &'a [f64],
    stride: usize,
    at: usize,
}

impl<'a> View<'a> {
    fn whole(data: &'a [f64], side: usize) -> View<'a> {
        View {
            data,
            stride: side,
            at: 0,
        }
    }
    /// Quadrant (`qi`, `qj`) of this block, whose side is `2 * h`.
    fn quad(self, h: usize, qi: usize, qj: usize) -> View<'a> {
        View {
            at: self.at + qi * h * self.stride + qj * h,
            ..self
        }
    }
    /// The first `len` entries of row `i`.
    #[inline]
    fn row(self, i: usize, len: usize) -> &'a [f64] {
        let s = self.at + i * self.stride;
        &self.data[s..s + len]
    }
}

/// One side of a product: a quadrant as it is, or the sum or difference of two.
#[derive(Clone, Copy)]
enum Operand<'a> {
    Quad(View<'a>),
    Add(View<'a>, View<'a>),
    Sub(View<'a>, View<'a>),
}

impl<'a> Operand<'a> {
    /// The operand's view: the quadrant itself, or `sum` (what [`Operand::sum`] formed).
    fn view(self, sum: &'a Option<Vec<f64>>, h: usize) -> View<'a> {
        match (self, sum) {
            (Operand::Quad(q), _) => q,
            (_, Some(v)) => View::whole(v, h),
            (_, None) => unreachable!("a sum is formed"),
        }
    }

    /// The operand as a contiguous `h`×`h` matrix (`None` for a plain quadrant).
    fn sum(self, h: usize) -> Option<Vec<f64>> {
        let (x, y, sub) = match self {
            Operand::Quad(_) => return None,
            Operand::Add(x, y) => (x, y, false),
            Operand::Sub(x, y) => (x, y, true),
        };
        let mut out = Vec::with_capacity(h * h);
        for i in 0..h {
            let (xi, yi) = (x.row(i, h), y.row(i, h));
            if sub {
                out.extend(xi.iter().zip(yi).map(|(p, q)| p - q));
            } else {
                out.extend(xi.iter().zip(yi).map(|(p, q)| p + q));
            }
        }
        Some(out)
    }
}

/// `c` (`m`×`m`, contiguous, all zero on entry) += a·b by the i-k-j loop. Each entry is summed
/// over k in order from 0, one rounded product and one rounded addition at a time, as in the
/// textbook loop; the k loop is unrolled by four so that a row of C is loaded and stored a
/// quarter as often.
fn leaf(m: usize, a: View<'_>, b: View<'_>, c: &mut [f64]) {
    for (i, ci) in c.chunks_exact_mut(m).enumerate() {
        let ai = a.row(i, m);
        let mut k = 0;
        while k + 4 <= m {
            let (x0, x1, x2, x3) = (ai[k], ai[k + 1], ai[k + 2], ai[k + 3]);
            let rows = (
                b.row(k, m),
                b.row(k + 1, m),
                b.row(k + 2, m),
                b.row(k + 3, m),
            );
            for ((((cij, &y0), &y1), &y2), &y3) in ci
                .iter_mut()
                .zip(rows.0)
                .zip(rows.1)
                .zip(rows.2)
                .zip(rows.3)
            {
                let mut s = *cij;
                s += x0 * y0;
                s += x1 * y1;
                s += x2 * y2;
                s += x3 * y3;
                *cij = s;
            }
            k += 4;
        }
        for (k, &aik) in ai.iter().enumerate().skip(k) {
            for (cij, &bkj) in ci.iter_mut().zip(b.row(k, m)) {
                *cij += aik * bkj;
            }
        }
    }
}

/// `out` (`h`×`h`) = l·r, forming the operands first.
fn product<F: Fork>(
    f: &mut F,
    h: usize,
    l: Operand<'_>,
    r: Operand<'_>,
    out: &mut [f64],
    grain: usize,
    leaf_side: usize,
) {
    let (ls, rs) = (l.sum(h), r.sum(h));
    let (lv, rv) = (l.view(&ls, h), r.view(&rs, h));
    rec(f, h, lv, rv, out, grain, leaf_side);
}

/// Writes rows `first..first + rows.len() / m` of C (`m`×`m`) from the seven products.
fn assemble(m: usize, first: usize, rows: &mut [f64], p: &[&mut [f64]; 7]) {
    let h = m / 2;
    for (r, row) in rows.chunks_exact_mut(m).enumerate() {
        let i = first + r;
        let (left, right) = row.split_at_mut(h);
        let k = (i % h) * h;
        let q = |t: usize| &p[t][k..k + h];
        if i < h {
            let (m1, m3, m4, m5, m7) = (q(0), q(2), q(3), q(4), q(6));
            for j in 0..h {
                left[j] = m1[j] + m4[j] - m5[j] + m7[j];
                right[j] = m3[j] + m5[j];
            }
        } else {
            let (m1, m2, m3, m4, m6) = (q(0), q(1), q(2), q(3), q(5));
            for j in 0..h {
                left[j] = m2[j] + m4[j];
                right[j] = m1[j] - m2[j] + m3[j] + m6[j];
            }
        }
    }
}

/// `c` (`m`×`m`, contiguous) = a·b by Strassen's recursion down to `leaf_side`, forking above
/// `grain`. When `m` ≤ `leaf_side`, `c` must be zero on entry ([`leaf`] accumulates into it); a
/// larger `c` is overwritten.
fn rec<F: Fork>(
    f: &mut F,
    m: usize,
    a: View<'_>,
    b: View<'_>,
    c: &mut [f64],
    grain: usize,
    leaf_side: usize,
) {
    if m <= leaf_side {
        return leaf(m, a, b, c);
    }
    let h = m / 2;
    let [a11, a12, a21, a22] = [(0, 0), (0, 1), (1, 0), (1, 1)].map(|(i, j)| a.quad(h, i, j));
    let [b11, b12, b21, b22] = [(0, 0), (0, 1), (1, 0), (1, 1)].map(|(i, j)| b.quad(h, i, j));
    use Operand::{Add, Quad, Sub};
    let ops = [
        (Add(a11, a22), Add(b11, b22)),
        (Add(a21, a22), Quad(b11)),
        (Quad(a11), Sub(b12, b22)),
        (Quad(a22), Sub(b21, b11)),
        (Add(a11, a12), Quad(b22)),
        (Sub(a21, a11), Add(b11, b12)),
        (Sub(a12, a22), Add(b21, b22)),
    ];
    // Zeroed once here (for leaves, which accumulate); assemble overwrites inner products.
    let mut buf = vec![0.0; 7 * h * h];
    let mut it = buf.chunks_exact_mut(h * h);
    let mut p: [&mut [f64]; 7] = std::array::from_fn(|_| it.next().expect("seven products"));
    let (g, ls) = (grain, leaf_side);
    if m > grain {
        let [p1, p2, p3, p4, p5, p6, p7] = &mut p;
        let pr =
            |f: &mut F, t: usize, out: &mut [f64]| product(f, h, ops[t].0, ops[t].1, out, g, ls);
        f.join(
            |f| {
                f.join(
                    |f| f.join(|f| pr(f, 0, p1), |f| pr(f, 1, p2)),
                    |f| f.join(|f| pr(f, 2, p3), |f| pr(f, 3, p4)),
                )
            },
            |f| {
                f.join(
                    |f| f.join(|f| pr(f, 4, p5), |f| pr(f, 5, p6)),
                    |f| pr(f, 6, p7),
                )
            },
        );
        let (top, bottom) = c.split_at_mut(h * m);
        let p = &p;
        f.join(|_| assemble(m, 0, top, p), |_| assemble(m, h, bottom, p));
    } else {
        for (t, out) in p.iter_mut().enumerate() {
            product(f, h, ops[t].0, ops[t].1, out, g, ls);
        }
        assemble(m, 0, c, &p);
    }
}

/// C = A·B (`n`×`n`, row-major; C is overwritten) over any [`Fork`], recursing down to
/// `leaf_side` and forking above `grain`.
pub fn multiply<F: Fork>(
    f: &mut F,
    n: usize,
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
    grain: u64,
    leaf_side: usize,
) {
    assert!(
        levels(n, leaf_side).is_some() && [a.len(), b.len(), c.len()] == [n * n; 3],
        "strassen: n = {n} does not halve evenly down to {leaf_side}, or a matrix is not n*n"
    );
    let grain = grain.clamp(1, n as u64) as usize;
    let leaf_side = leaf_side.max(1);
    if n <= leaf_side {
        // The plain loop alone, which accumulates into C.
        c.fill(0.0);
    }
    rec(
        f,
        n,
        View::whole(a, n),
        View::whole(b, n),
        c,
        grain,
        leaf_side,
    );
}

/// Strassen levels above the plain loop for side `n` with plain products at `leaf_side` or less;
/// `None` if halving `n` down to `leaf_side` meets an odd side.
pub fn levels(n: usize, leaf_side: usize) -> Option<u32> {
    let (mut m, mut l) = (n, 0);
    while m > leaf_side.max(1) {
        if m % 2 == 1 {
            return None;
        }
        m /= 2;
        l += 1;
    }
    Some(l)
}

/// What Freivalds' check compares with: per random vector r, A·(B·r); per row, the tolerance.
pub struct Check {
    rs: Vec<Vec<f64>>,
    abr: Vec<Vec<f64>>,
    tol: Vec<f64>,
}

/// Random ±1 vectors of Freivalds' check.
const VECTORS: usize = 2;

/// Prepares Freivalds' check of A·B (`n`×`n`). Row i's tolerance is 2n·E + 8nε·S_i: E is
/// Higham's bound on one entry's error (see the module docs, with u = ε for margin), summed over
/// the n entries of a row of C·r; S_i = Σ_k |A_ik|·‖B_k‖₁ bounds both Σ_j |C_ij| and the scale of
/// A·(B·r)_i, and 8nε·S_i covers the rounding of the two matrix–vector products.
pub fn check(n: usize, a: &[f64], b: &[f64]) -> Check {
    let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(x, y)| x * y).sum::<f64>();
    let max = |m: &[f64]| m.iter().fold(0.0f64, |s, x| s.max(x.abs()));
    let l = levels(n, LEAF).expect("a valid side");
    let entry = if l == 0 {
        0.0
    } else {
        let n0 = (n >> l) as f64;
        (12f64.powi(l as i32) * (n0 * n0 + 5.0 * n0) - 5.0 * n as f64)
            * f64::EPSILON
            * max(a)
            * max(b)
    };
    let b_norm: Vec<f64> = b
        .chunks_exact(n)
        .map(|r| r.iter().map(|x| x.abs()).sum())
        .collect();
    let eps = f64::EPSILON * n as f64;
    let tol = a
        .chunks_exact(n)
        .map(|ai| {
            let s: f64 = ai.iter().zip(&b_norm).map(|(x, y)| x.abs() * y).sum();
            2.0 * n as f64 * entry + 8.0 * eps * s
        })
        .collect();
    let mut rng = SplitMix64(0x4652_4549_5641_4c44);
    let mut rs = Vec::new();
    let mut abr = Vec::new();
    for _ in 0..VECTORS {
        let r: Vec<f64> = (0..n)
            .map(|_| if rng.next_u64() >> 63 == 0 { 1.0 } else { -1.0 })
            .collect();
        let br: Vec<f64> = b.chunks_exact(n).map(|bk| dot(bk, &r)).collect();
        abr.push(a.chunks_exact(n).map(|ai| dot(ai, &br)).collect());
        rs.push(r);
    }
    Check { rs, abr, tol }
}

impl Check {
    /// Checks C by Freivalds' method; the error is one line.
    pub fn verify(&self, n: usize, c: &[f64]) -> Result<(), String> {
        if c.len() != n * n {
            return Err(format!(
                "strassen({n}): C has {} entries, expected {}",
                c.len(),
                n * n
            ));
        }
        for (r, abr) in self.rs.iter().zip(&self.abr) {
            for (i, ci) in c.chunks_exact(n).enumerate() {
                let got: f64 = ci.iter().zip(r).map(|(x, y)| x * y).sum();
                let err = (got - abr[i]).abs();
                // NaN fails too.
                if err.is_nan() || err > self.tol[i] {
                    return Err(format!(
                        "strassen({n}): row {i} of C fails Freivalds' check: (C·r)_{i} = {got}, \
                         (A·(B·r))_{i} = {}, difference {err:e} above tolerance {:e}",
                        abr[i], self.tol[i]
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The Strassen workload.
pub struct Strassen;

static DEF: Def = workload::def::<Strassen>();
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Strassen {
    const INFO: Info = Info {
        name: "strassen",
        // The thesis's section and table were not at hand when this was written.
        source: "Lifflander's thesis (Strassen)",
        n_meaning: "matrix side, a power of two times at most 64 (the plain loop's side)",
        ci: 256,
        default: 1536,
        // The thesis's matrix size was not at hand: 2048 stands in.
        paper: 2048,
        min_n: 1,
        max_n: 8192,
        grain: 128,
        grain_meaning: "matrix side at or below which the seven products run in order",
    };
    type Shared = Inputs;
    type Input = Vec<f64>;
    type Output = ();
    type Expected = Vec<f64>;

    fn check_n(n: u64) -> Result<(), String> {
        let i = Self::INFO;
        if (i.min_n..=i.max_n).contains(&n) && levels(n as usize, LEAF).is_some() {
            Ok(())
        } else {
            Err(format!(
                "invalid n `{n}` for strassen: expected a power of two times at most {LEAF} \
                 (such as 1024 or 1536) between {} and {} (matrix side)",
                i.min_n, i.max_n
            ))
        }
    }
    fn shared(n: u64) -> Inputs {
        inputs(n as usize)
    }
    fn input(n: u64, _: &Inputs) -> Vec<f64> {
        vec![f64::NAN; (n * n) as usize]
    }
    fn run<F: Fork>(f: &mut F, n: u64, grain: u64, ab: &Inputs, c: &mut Vec<f64>) {
        multiply(f, n as usize, &ab.a, &ab.b, c, grain, LEAF)
    }
    /// The serial twin's C, checked by Freivalds' method.
    ///
    /// # Panics
    ///
    /// If the serial twin's C fails Freivalds' check: the algorithm itself is wrong.
    fn expected(n: u64, ab: &Inputs) -> Vec<f64> {
        let n = n as usize;
        let mut c = vec![0.0; n * n];
        multiply(&mut Serial, n, &ab.a, &ab.b, &mut c, Self::INFO.grain, LEAF);
        if let Err(e) = check(n, &ab.a, &ab.b).verify(n, &c) {
            panic!("the serial twin's product is wrong, no run can be verified: {e}");
        }
        c
    }
    fn answer(_: u64, _: &Inputs, c: &Vec<f64>, _: &()) -> String {
        format!("sum {}", sum12(c))
    }
    fn verify(n: u64, _: &Inputs, want: &Vec<f64>, c: &Vec<f64>, _: ()) -> Result<(), String> {
        let n = n as usize;
        if c.len() != want.len() {
            return Err(format!(
                "strassen({n}): C has {} entries, expected {}",
                c.len(),
                want.len()
            ));
        }
        match first_bit_difference(c, want) {
            None => Ok(()),
            Some(k) => Err(format!(
                "strassen({n}): C({}, {}) is {:e}, the serial twin gives {:e}",
                k / n,
                k % n,
                c[k],
                want[k]
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Magpie, Rayon, Serial};

    fn naive(n: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; n * n];
        for i in 0..n {
            for k in 0..n {
                for j in 0..n {
                    c[i * n + j] += a[i * n + k] * b[k * n + j];
                }
            }
        }
        c
    }

    fn strassen(n: usize, grain: u64, leaf_side: usize) -> Vec<f64> {
        let ab = inputs(n);
        let mut c = vec![f64::NAN; n * n];
        multiply(&mut Serial, n, &ab.a, &ab.b, &mut c, grain, leaf_side);
        c
    }

    fn same_bits(x: &[f64], y: &[f64]) -> bool {
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
    }

    #[test]
    fn every_version_verifies() {
        crate::workload::check_everywhere::<Strassen>(&[1, 2, 32, 96, 128], &[1, 64, 128]);
    }

    #[test]
    fn close_to_the_naive_product() {
        // Several Strassen levels at small sizes with small leaves, and the real leaf.
        for (n, leaf_side) in [
            (2, 1),
            (16, 1),
            (64, 4),
            (80, 8),
            (128, 8),
            (96, LEAF),
            (128, LEAF),
            (LEAF, LEAF),
            (8, 8),
        ] {
            let ab = inputs(n);
            let want = naive(n, &ab.a, &ab.b);
            let got = strassen(n, 1, leaf_side);
            // Higham's entrywise bound for these levels (u = ε) plus the naive product's own
            // rounding (n ε times Σ_k |a_ik| |b_kj| <= n: entries are below 1).
            let l = levels(n, leaf_side).unwrap() as i32;
            let n0 = (n >> l) as f64;
            let bound = (12f64.powi(l) * (n0 * n0 + 5.0 * n0)) * f64::EPSILON
                + (n * n) as f64 * f64::EPSILON;
            for (k, (x, y)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (x - y).abs() <= bound,
                    "n = {n}, leaf {leaf_side}: C({}, {}) = {x}, naive {y}, bound {bound:e}",
                    k / n,
                    k % n
                );
            }
            if l == 0 {
                // The plain loop alone: the textbook loop's bits.
                assert!(same_bits(&got, &want), "n = {n}, leaf {leaf_side}");
            } else if n >= 16 {
                // Strassen's rounding is not the naive loop's (on more than a few entries).
                assert!(!same_bits(&got, &want), "n = {n}, leaf {leaf_side}");
            }
        }
    }

    #[test]
    fn grain_and_runtime_do_not_change_the_bits() {
        let n = 64;
        let ab = inputs(n);
        let want = strassen(n, 1, 4);
        for g in [2, 8, 16, 64] {
            assert!(same_bits(&strassen(n, g, 4), &want), "grain {g}");
        }
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        let mut c = vec![f64::NAN; n * n];
        pool.install(|| multiply(&mut Magpie, n, &ab.a, &ab.b, &mut c, 8, 4));
        assert!(same_bits(&c, &want), "magpie");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut c = vec![f64::NAN; n * n];
        pool.install(|| multiply(&mut Rayon, n, &ab.a, &ab.b, &mut c, 8, 4));
        assert!(same_bits(&c, &want), "rayon");
    }

    #[test]
    fn runs_must_match_the_serial_twin_bit_for_bit() {
        let n = 128;
        let ab = Strassen::shared(n);
        let want = Strassen::expected(n, &ab);
        assert!(same_bits(&want, &strassen(n as usize, 1, LEAF)));
        let mut c = Strassen::input(n, &ab);
        assert!(
            Strassen::verify(n, &ab, &want, &c, ()).is_err(),
            "the NaN input"
        );
        Strassen::run(&mut Serial, n, 32, &ab, &mut c);
        assert_eq!(Strassen::verify(n, &ab, &want, &c, ()), Ok(()));
        // One bit off, far inside Freivalds' tolerance.
        c[77 * 128 + 5] = f64::from_bits(c[77 * 128 + 5].to_bits() ^ 1);
        let e = Strassen::verify(n, &ab, &want, &c, ()).unwrap_err();
        assert!(e.contains("C(77, 5)") && !e.contains('\n'), "{e}");
        assert!(check(n as usize, &ab.a, &ab.b)
            .verify(n as usize, &c)
            .is_ok());
        let e = Strassen::verify(n, &ab, &want, &c[1..].to_vec(), ()).unwrap_err();
        assert!(e.contains("16383 entries"), "{e}");
        // The leaf alone (n <= LEAF) starts from a NaN-filled C too.
        let ab = Strassen::shared(48);
        let want = Strassen::expected(48, &ab);
        let mut c = Strassen::input(48, &ab);
        Strassen::run(&mut Serial, 48, 1, &ab, &mut c);
        assert_eq!(Strassen::verify(48, &ab, &want, &c, ()), Ok(()));
    }

    #[test]
    fn wrong_products_are_rejected() {
        let n = 128;
        let ab = inputs(n);
        let chk = check(n, &ab.a, &ab.b);
        let c = strassen(n, 64, LEAF);
        assert_eq!(chk.verify(n, &c), Ok(()));
        for (idx, delta) in [(0, 1.0), (77 * 128 + 5, 1e-6), (c.len() - 1, -1e-3)] {
            let mut bad = c.clone();
            bad[idx] += delta;
            let e = chk.verify(n, &bad).unwrap_err();
            assert!(
                e.contains(&format!("row {}", idx / n)) && !e.contains('\n'),
                "{e}"
            );
        }
        let mut bad = c.clone();
        bad[300] = f64::NAN;
        assert!(chk.verify(n, &bad).is_err());
        assert!(chk.verify(n, &c[1..]).is_err());
        // A·B is not B·A.
        let mut ba = vec![0.0; n * n];
        multiply(&mut Serial, n, &ab.b, &ab.a, &mut ba, 64, LEAF);
        assert!(chk.verify(n, &ba).is_err());
        for n in [130, 1000, 8193] {
            let e = Strassen::check_n(n).unwrap_err();
            assert!(e.contains("power of two times at most 64"), "{e}");
        }
        for n in [1, 63, 96, 1024, 1536, 8192] {
            assert_eq!(Strassen::check_n(n), Ok(()), "n = {n}");
        }
    }
}
