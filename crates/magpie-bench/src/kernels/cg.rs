//! CG: [`ITERATIONS`] iterations of the conjugate gradient method on a sparse symmetric positive
//! definite `n`×`n` matrix, after the CG kernel of the NAS Parallel Benchmarks (Bailey et al.,
//! NASA RNR-94-007, 1994, kernel CG: 25 CG iterations per outer step, its inner loop). It solves
//! A x = b from x = 0 by the textbook recurrence
//!
//! ```text
//! q = A p;  α = ρ / (p·q);  x += α p;  r -= α q;  ρ' = r·r;  p = r + (ρ'/ρ) p;  ρ = ρ'
//! ```
//!
//! and ends, like NPB, with the explicit residual norm ‖b − A x‖.
//!
//! The matrix is not NPB's (`makea` builds it from sums of random sparse outer products); it is
//! a deterministic random one with exactly [`NONZEROS`] entries per row, stored in CSR with a
//! fixed row length ([`Matrix`]). Its pattern is a circulant graph — position `q` is joined to
//! `q ± d` (mod n) for [`OFFSETS`] random distances `d` — relabelled by a random permutation, so
//! that a row's columns are scattered over the whole vector as in NPB. Each edge has a random
//! weight in (-1, 0] (the same in both rows it appears in, so A is symmetric), and the diagonal is
//! the row's sum of |off-diagonal| plus [`MARGIN`]: A is a weighted graph Laplacian plus
//! `MARGIN`·I, strictly diagonally dominant with a positive diagonal, hence SPD. Its smallest
//! eigenvalue is `MARGIN`, so 25 iterations leave a residual well above rounding: ‖b − A x‖ falls
//! by a factor of 10⁴ to 10⁶ at the sizes used. b has random entries in [-1, 1) (NPB's is all
//! ones, which here would be an eigenvector, solved in one step).
//!
//! Every vector operation walks the rows with one recursive function ([`pass`]): a range of rows
//! is cut into leaf blocks of [`BLOCK`] rows and split in halves by block count, with `join` while
//! the range is longer than `grain` rows and plain calls below; each leaf does its rows in order
//! and returns its partial sum, and the two halves' sums are added. So a dot product is the same
//! tree of additions — in-order sums over fixed blocks, combined by the same halving — whatever
//! the grain or the runtime, and every version gives bit-for-bit the same x and residual. The
//! three passes of an iteration fuse what NPB loops over separately: q = A p with p·q; the two
//! updates with r·r; and the new p.
//!
//! [`Cg::expected`] runs [`plain`], an independent serial CG with plain loops that sums each dot
//! product over the same blocks and combines the block sums by the same halving ([`tree_sum`]);
//! [`Cg::verify`] requires x and the residual norm bit for bit, and the residual to have fallen
//! below [`DROP`] × ‖b‖.

use crate::kernel::{Def, Kernel};
use crate::common::{first_bit_difference, SplitMix64};
use crate::fork::Fork;
use crate::harness::{sig12, sum12};
use crate::workload::{self, Info, Workload};

/// CG iterations of one run (NPB's inner loop).
pub const ITERATIONS: usize = 25;
/// Random distances of the circulant pattern: each row has two entries per distance.
pub const OFFSETS: usize = 7;
/// Entries per row: the diagonal and two per distance.
pub const NONZEROS: usize = 2 * OFFSETS + 1;
/// The diagonal exceeds the row's sum of |off-diagonal| by this much.
pub const MARGIN: f64 = 0.1;
/// Rows per leaf block of every pass: dot products sum each block in order, then combine the
/// blocks' sums pairwise by halving.
pub const BLOCK: usize = 256;
/// A run must end with ‖b − A x‖ below this fraction of ‖b‖.
pub const DROP: f64 = 0.01;

/// The system: a sparse `n`×`n` matrix in CSR with exactly [`NONZEROS`] entries per row (row
/// `i`'s columns, ascending, and values are `cols[i * NONZEROS..][..NONZEROS]` and the same range
/// of `vals`) and the right-hand side `b`.
#[derive(Clone, Debug)]
pub struct Matrix {
    n: usize,
    cols: Vec<u32>,
    vals: Vec<f64>,
    b: Vec<f64>,
}

impl Matrix {
    /// The matrix of size `n` (`n` ≥ `2 * OFFSETS + 1`, so that the `2 * OFFSETS` neighbours of a
    /// row are distinct).
    pub fn new(n: usize) -> Matrix {
        assert!(n > 2 * OFFSETS && n <= u32::MAX as usize, "cg: n = {n}");
        let mut rng = SplitMix64(0x4347_5350_4d56_0000 ^ n as u64);
        // Distinct distances in 1..=(n - 1) / 2: then q + d and q - d differ mod n, and so do
        // the neighbours through different distances.
        let mut dist: Vec<usize> = Vec::with_capacity(OFFSETS);
        while dist.len() < OFFSETS {
            let d = 1 + rng.below((n as u64 - 1) / 2) as usize;
            if !dist.contains(&d) {
                dist.push(d);
            }
        }
        // node[q]: the row at circulant position q (a Fisher–Yates shuffle); pos its inverse.
        let mut node: Vec<usize> = (0..n).collect();
        for q in (1..n).rev() {
            node.swap(q, rng.below(q as u64 + 1) as usize);
        }
        let mut pos = vec![0; n];
        for (q, &i) in node.iter().enumerate() {
            pos[i] = q;
        }
        // weight[k * n + q]: the edge between positions q and q + dist[k].
        let weight: Vec<f64> = (0..OFFSETS * n).map(|_| -rng.next_f64()).collect();
        let mut cols = Vec::with_capacity(n * NONZEROS);
        let mut vals = Vec::with_capacity(n * NONZEROS);
        let mut row: Vec<(usize, f64)> = Vec::with_capacity(NONZEROS);
        for (i, &q) in pos.iter().enumerate() {
            row.clear();
            for (k, &d) in dist.iter().enumerate() {
                let back = (q + n - d) % n;
                row.push((node[(q + d) % n], weight[k * n + q]));
                row.push((node[back], weight[k * n + back]));
            }
            let diag = row.iter().map(|&(_, v)| v.abs()).sum::<f64>() + MARGIN;
            row.push((i, diag));
            row.sort_by_key(|&(j, _)| j);
            cols.extend(row.iter().map(|&(j, _)| j as u32));
            vals.extend(row.iter().map(|&(_, v)| v));
        }
        let b = (0..n).map(|_| rng.next_signed_f64()).collect();
        Matrix { n, cols, vals, b }
    }

    /// ‖b‖.
    pub fn norm_b(&self) -> f64 {
        self.b.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    /// The size.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Row `i`: (column, value) in ascending column order.
    pub fn row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let r = i * NONZEROS..(i + 1) * NONZEROS;
        self.cols[r.clone()]
            .iter()
            .zip(&self.vals[r])
            .map(|(&j, &v)| (j as usize, v))
    }

    /// Row `i` times `x`, summed in column order from 0.
    #[inline]
    fn row_dot(&self, i: usize, x: &[f64]) -> f64 {
        let r = i * NONZEROS..(i + 1) * NONZEROS;
        let mut s = 0.0;
        for (&j, &v) in self.cols[r.clone()].iter().zip(&self.vals[r]) {
            s += v * x[j as usize];
        }
        s
    }
}

/// Vectors one pass walks together, cut at a row.
pub trait Rows: Send + Sized {
    /// The rows before `mid` and the rest.
    fn split(self, mid: usize) -> (Self, Self);
}

impl Rows for &[f64] {
    fn split(self, mid: usize) -> (Self, Self) {
        self.split_at(mid)
    }
}

impl Rows for &mut [f64] {
    fn split(self, mid: usize) -> (Self, Self) {
        self.split_at_mut(mid)
    }
}

impl<A: Rows, B: Rows> Rows for (A, B) {
    fn split(self, mid: usize) -> (Self, Self) {
        let (a0, a1) = self.0.split(mid);
        let (b0, b1) = self.1.split(mid);
        ((a0, b0), (a1, b1))
    }
}

/// One pass over `len` rows starting at row `first` (a multiple of [`BLOCK`]): `leaf(first,
/// rows)` does a block of at most [`BLOCK`] rows and returns its partial sum; longer ranges are
/// split after half their blocks, with `join` while longer than `grain` rows, and the two halves'
/// sums added. The tree of additions depends on `len` only.
pub fn pass<F, R, L>(f: &mut F, first: usize, len: usize, rows: R, grain: usize, leaf: &L) -> f64
where
    F: Fork,
    R: Rows,
    L: Fn(usize, R) -> f64 + Sync,
{
    if len <= BLOCK {
        return leaf(first, rows);
    }
    let mid = len.div_ceil(BLOCK) / 2 * BLOCK;
    let (lo, hi) = rows.split(mid);
    let (a, b) = if len > grain {
        f.join(
            |f| pass(f, first, mid, lo, grain, leaf),
            |f| pass(f, first + mid, len - mid, hi, grain, leaf),
        )
    } else {
        (
            pass(f, first, mid, lo, grain, leaf),
            pass(f, first + mid, len - mid, hi, grain, leaf),
        )
    };
    a + b
}

/// One run's vectors: the iterate `x`, the residual `r`, the direction `p` and `q = A p`.
#[derive(Clone, Debug)]
pub struct Vectors {
    /// The iterate (the solution when the run is done).
    pub x: Vec<f64>,
    r: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
}

impl Vectors {
    /// The start: x = 0, r = p = b.
    pub fn start(a: &Matrix) -> Vectors {
        Vectors {
            x: vec![0.0; a.n],
            r: a.b.clone(),
            p: a.b.clone(),
            q: vec![0.0; a.n],
        }
    }
}

/// The leaf of q = A p and p·q: rows `first..` of q (`q`, with p's same rows `p`) from all of
/// p (`p_all`); returns the block's p·q. Declares, for the cache model, the matrix rows, p's
/// scattered entries (by line, computed only while leaves are recorded) and the q rows.
fn leaf_ap(a: &Matrix, first: usize, q: &mut [f64], p: &[f64], p_all: &[f64]) -> f64 {
    if magpie::cachemodel::recording() {
        let rows = first * NONZEROS..(first + q.len()) * NONZEROS;
        let base = p_all.as_ptr() as u64;
        let mut lines: Vec<u64> = a.cols[rows.clone()]
            .iter()
            .map(|&j| (base + 8 * j as u64) / 64)
            .collect();
        lines.sort_unstable();
        lines.dedup();
        let mut reads = vec![
            magpie::cachemodel::range_of(&a.cols[rows.clone()]),
            magpie::cachemodel::range_of(&a.vals[rows]),
            magpie::cachemodel::range_of(p),
        ];
        // Consecutive lines as one range (after the three contiguous ranges).
        let fixed = reads.len();
        for l in lines {
            let n = reads.len();
            if n > fixed && reads[n - 1].end == l * 64 {
                reads[n - 1].end += 64;
            } else {
                reads.push(l * 64..(l + 1) * 64);
            }
        }
        magpie::cachemodel::leaf(&reads, &[magpie::cachemodel::range_of(q)]);
    }
    let mut s = 0.0;
    for (k, (qi, &pi)) in q.iter_mut().zip(p).enumerate() {
        *qi = a.row_dot(first + k, p_all);
        s += pi * *qi;
    }
    s
}

/// The leaf of x += α p, r -= α q and r·r, on the same rows of the four vectors.
fn leaf_update(alpha: f64, x: &mut [f64], r: &mut [f64], p: &[f64], q: &[f64]) -> f64 {
    use magpie::cachemodel::range_of as rg;
    magpie::cachemodel::leaf(&[rg(x), rg(r), rg(p), rg(q)], &[rg(x), rg(r)]);
    let mut s = 0.0;
    for (((xi, ri), &pi), &qi) in x.iter_mut().zip(r.iter_mut()).zip(p).zip(q) {
        *xi += alpha * pi;
        *ri -= alpha * qi;
        s += *ri * *ri;
    }
    s
}

/// The leaf of p = r + β p.
fn leaf_direction(beta: f64, p: &mut [f64], r: &[f64]) -> f64 {
    use magpie::cachemodel::range_of as rg;
    magpie::cachemodel::leaf(&[rg(p), rg(r)], &[rg(p)]);
    for (pi, &ri) in p.iter_mut().zip(r) {
        *pi = ri + beta * *pi;
    }
    0.0
}

/// The kernel over any [`Fork`]: [`ITERATIONS`] CG iterations from `v`, which must be
/// [`Vectors::start`]; returns ‖b − A x‖.
pub fn run<F: Fork>(f: &mut F, a: &Matrix, v: &mut Vectors, grain: u64) -> f64 {
    let n = a.n;
    let grain = grain.clamp(1, n as u64) as usize;
    let Vectors { x, r, p, q } = v;
    let mut rho = pass(f, 0, n, &r[..], grain, &|_, r: &[f64]| {
        r.iter().fold(0.0, |s, &ri| s + ri * ri)
    });
    for _ in 0..ITERATIONS {
        // q = A p, and p·q: a leaf writes its rows of q and reads all of p.
        let p_all: &[f64] = p;
        let pq = pass(f, 0, n, (&mut q[..], p_all), grain, &|first, (q, p)| {
            leaf_ap(a, first, q, p, p_all)
        });
        let alpha = rho / pq;
        // x += α p, r -= α q, and r·r.
        let rr = pass(
            f,
            0,
            n,
            ((&mut x[..], &mut r[..]), (&p[..], &q[..])),
            grain,
            &|_, ((x, r), (p, q))| leaf_update(alpha, x, r, p, q),
        );
        let beta = rr / rho;
        rho = rr;
        // p = r + β p.
        pass(f, 0, n, (&mut p[..], &r[..]), grain, &|_, (p, r)| {
            leaf_direction(beta, p, r)
        });
    }
    residual(f, a, x, grain)
}

/// ‖b − A x‖, by a pass.
fn residual<F: Fork>(f: &mut F, a: &Matrix, x: &[f64], grain: usize) -> f64 {
    let d2 = pass(f, 0, a.n, x, grain, &|first, xb: &[f64]| {
        let mut s = 0.0;
        for k in 0..xb.len() {
            let d = a.b[first + k] - a.row_dot(first + k, x);
            s += d * d;
        }
        s
    });
    d2.sqrt()
}

/// A matrix's rows as one pass walks them: `NONZEROS` columns and values per row.
struct Csr<'a>(&'a mut [u32], &'a mut [f64]);

impl Rows for Csr<'_> {
    fn split(self, mid: usize) -> (Self, Self) {
        let (c0, c1) = self.0.split_at_mut(mid * NONZEROS);
        let (v0, v1) = self.1.split_at_mut(mid * NONZEROS);
        (Csr(c0, v0), Csr(c1, v1))
    }
}

/// CG as an iterative [`Program`](crate::placement::Program) (first-touch placement, §6.4): the
/// workload's matrix of order `n` and `iterations` CG iterations (each three phases: the three
/// passes of [`run`]), and an initialiser that copies the matrix rows and the four vectors into
/// fresh memory with a pass's structure.
#[derive(Clone, Debug)]
pub struct Placed {
    a: Matrix,
    v: Vectors,
    grain: usize,
    iterations: usize,
    rho: f64,
    alpha: f64,
    beta: f64,
}

impl Placed {
    /// The matrix of order `n` (at least `2 * OFFSETS + 1`), passes forking above `grain` rows,
    /// `iterations` iterations ([`ITERATIONS`] is a benchmark run's).
    pub fn new(n: usize, grain: u64, iterations: usize) -> Result<Placed, String> {
        if n <= 2 * OFFSETS || n > u32::MAX as usize {
            return Err(format!(
                "cg: n = {n}: the order must be between {} and {}",
                2 * OFFSETS + 1,
                u32::MAX
            ));
        }
        let a = Matrix::new(n);
        let v = Vectors::start(&a);
        let rho = pass(
            &mut crate::fork::Serial,
            0,
            n,
            &v.r[..],
            n,
            &|_, r: &[f64]| r.iter().fold(0.0, |s, &ri| s + ri * ri),
        );
        Ok(Placed {
            a,
            v,
            grain: grain.clamp(1, n as u64) as usize,
            iterations,
            rho,
            alpha: 0.0,
            beta: 0.0,
        })
    }
}

/// This kernel as a placed iterative program ([`crate::placement`]).
pub const PLACEMENT: crate::placement::Facet = crate::placement::Facet {
    iterations: |_| ITERATIONS,
    banded: false,
    run: |pool, n, grain, iterations, strategy, pace| {
        crate::placement::run(
            pool,
            &Placed::new(n as usize, grain, iterations)?,
            strategy,
            pace,
        )
    },
};

impl crate::placement::Program for Placed {
    fn name(&self) -> &'static str {
        "cg"
    }
    fn phases(&self) -> usize {
        3
    }
    fn iterations(&self) -> usize {
        self.iterations
    }

    fn place<F: Fork>(&mut self, f: &mut F) {
        let n = self.a.n;
        let fresh = || vec![0.0; n];
        let (mut cols, mut vals) = (vec![0u32; n * NONZEROS], vec![0.0; n * NONZEROS]);
        let (mut x, mut r, mut p, mut q) = (fresh(), fresh(), fresh(), fresh());
        let (a, v) = (&self.a, &self.v);
        let rows = (
            Csr(&mut cols, &mut vals),
            ((&mut x[..], &mut r[..]), (&mut p[..], &mut q[..])),
        );
        pass(f, 0, n, rows, self.grain, &|first,
                                          (
            Csr(c, vl),
            ((x, r), (p, q)),
        )| {
            let k = x.len();
            let m = first * NONZEROS..(first + k) * NONZEROS;
            use magpie::cachemodel::range_of as rg;
            magpie::cachemodel::first_touch(
                &[
                    rg(&a.cols[m.clone()]),
                    rg(&a.vals[m.clone()]),
                    rg(&v.x[first..first + k]),
                    rg(&v.r[first..first + k]),
                    rg(&v.p[first..first + k]),
                    rg(&v.q[first..first + k]),
                ],
                &[rg(c), rg(vl), rg(x), rg(r), rg(p), rg(q)],
            );
            c.copy_from_slice(&a.cols[m.clone()]);
            vl.copy_from_slice(&a.vals[m]);
            x.copy_from_slice(&v.x[first..first + k]);
            r.copy_from_slice(&v.r[first..first + k]);
            p.copy_from_slice(&v.p[first..first + k]);
            q.copy_from_slice(&v.q[first..first + k]);
            0.0
        });
        (self.a.cols, self.a.vals) = (cols, vals);
        self.v = Vectors { x, r, p, q };
    }

    fn phase<F: Fork>(&mut self, f: &mut F, _it: usize, phase: usize) {
        let (n, grain, a) = (self.a.n, self.grain, &self.a);
        let Vectors { x, r, p, q } = &mut self.v;
        match phase {
            0 => {
                let p_all: &[f64] = p;
                let pq = pass(f, 0, n, (&mut q[..], p_all), grain, &|first, (q, p)| {
                    leaf_ap(a, first, q, p, p_all)
                });
                self.alpha = self.rho / pq;
            }
            1 => {
                let alpha = self.alpha;
                let rr = pass(
                    f,
                    0,
                    n,
                    ((&mut x[..], &mut r[..]), (&p[..], &q[..])),
                    grain,
                    &|_, ((x, r), (p, q))| leaf_update(alpha, x, r, p, q),
                );
                self.beta = rr / self.rho;
                self.rho = rr;
            }
            _ => {
                let beta = self.beta;
                pass(f, 0, n, (&mut p[..], &r[..]), grain, &|_, (p, r)| {
                    leaf_direction(beta, p, r)
                });
            }
        }
    }

    fn compare(&self, twin: &Placed) -> Result<(), String> {
        match first_bit_difference(&self.v.x, &twin.v.x) {
            None => Ok(()),
            Some(i) => Err(format!(
                "cg({}): x[{i}] is {:e}, the serial twin's {:e}",
                self.a.n, self.v.x[i], twin.v.x[i]
            )),
        }
    }

    fn answer(&self) -> String {
        let res = residual(&mut crate::fork::Serial, &self.a, &self.v.x, self.a.n);
        format!("residual {res:.9e}")
    }
}

/// Adds block sums pairwise by halving: the tree [`pass`] builds.
pub fn tree_sum(s: &[f64]) -> f64 {
    if s.len() == 1 {
        return s[0];
    }
    let (lo, hi) = s.split_at(s.len() / 2);
    tree_sum(lo) + tree_sum(hi)
}

/// Σ term(i) over `0..n`: in order within each block of [`BLOCK`] rows, the blocks' sums by
/// [`tree_sum`].
fn block_sum(n: usize, term: impl FnMut(usize) -> f64) -> f64 {
    let mut term = term;
    let sums: Vec<f64> = (0..n)
        .step_by(BLOCK)
        .map(|b| (b..n.min(b + BLOCK)).fold(0.0, |s, i| s + term(i)))
        .collect();
    tree_sum(&sums)
}

/// The plain serial CG: plain loops, dot products summed over the same blocks as [`pass`] and
/// combined by [`tree_sum`]. Returns x and ‖b − A x‖.
pub fn plain(a: &Matrix) -> (Vec<f64>, f64) {
    let n = a.n;
    let b = &a.b;
    let mut x = vec![0.0; n];
    let mut r = b.clone();
    let mut p = b.clone();
    let mut q = vec![0.0; n];
    let mut rho = block_sum(n, |i| r[i] * r[i]);
    for _ in 0..ITERATIONS {
        for (i, qi) in q.iter_mut().enumerate() {
            *qi = a.row_dot(i, &p);
        }
        let alpha = rho / block_sum(n, |i| p[i] * q[i]);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        let rr = block_sum(n, |i| r[i] * r[i]);
        let beta = rr / rho;
        rho = rr;
        for i in 0..n {
            p[i] = r[i] + beta * p[i];
        }
    }
    let resid = block_sum(n, |i| {
        let d = b[i] - a.row_dot(i, &x);
        d * d
    })
    .sqrt();
    (x, resid)
}

/// The CG workload.
pub struct Cg;

static DEF: Def = Def {
    declares_leaves: true,
    placement: Some(PLACEMENT),
    ..workload::def::<Cg>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Cg {
    const INFO: Info = Info {
        name: "cg",
        source: "SLAW Table I (CG.A, NPB 3.0 kernel CG): 25 CG iterations",
        n_meaning: "matrix order (rows), 15 nonzeros per row",
        ci: 16_384,
        default: 300_000,
        // CG.A, SLAW's input: NPB class A's order. NPB's matrix has about 8 times as many nonzeros
        // per row as this one, so this is less work than the paper's run at the same order.
        paper: 14_000,
        min_n: 2 * OFFSETS as u64 + 1,
        // About 230 bytes per row (the matrix, the run's vectors, the expected x): 2^23 rows take
        // 2 GB; 25 iterations over them, twice (the run and `expected`), take a minute or so.
        max_n: 1 << 23,
        grain: 4096,
        grain_meaning: "rows below which a pass stops forking",
    };
    type Shared = Matrix;
    type Input = Vectors;
    type Output = f64;
    type Expected = (Vec<f64>, f64);

    fn shared(n: u64) -> Matrix {
        Matrix::new(n as usize)
    }
    fn input(_: u64, a: &Matrix) -> Vectors {
        Vectors::start(a)
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, a: &Matrix, v: &mut Vectors) -> f64 {
        run(f, a, v, grain)
    }
    fn expected(_: u64, a: &Matrix) -> (Vec<f64>, f64) {
        plain(a)
    }
    fn answer(_: u64, _: &Matrix, v: &Vectors, res: &f64) -> String {
        format!("residual {}, x sum {}", sig12(*res), sum12(&v.x))
    }
    fn verify(
        n: u64,
        a: &Matrix,
        (want_x, want_res): &(Vec<f64>, f64),
        got: &Vectors,
        res: f64,
    ) -> Result<(), String> {
        if got.x.len() != want_x.len() {
            return Err(format!(
                "cg({n}): x has {} entries, expected {}",
                got.x.len(),
                want_x.len()
            ));
        }
        if let Some(i) = first_bit_difference(&got.x, want_x) {
            return Err(format!(
                "cg({n}): x[{i}] is {:e}, the plain serial CG gives {:e}",
                got.x[i], want_x[i]
            ));
        }
        if res.to_bits() != want_res.to_bits() {
            return Err(format!(
                "cg({n}): residual norm {res:e}, the plain serial CG gives {want_res:e}"
            ));
        }
        let limit = DROP * a.norm_b();
        if res.is_nan() || res >= limit {
            return Err(format!(
                "cg({n}): the residual norm did not fall: ‖b − A x‖ = {res:e}, above {DROP} × ‖b‖ \
                 = {limit:e}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;

    #[test]
    fn every_version_matches_the_plain_cg() {
        crate::workload::check_everywhere::<Cg>(&[15, 1000, 3000], &[1, 300, 1024, 1 << 20]);
    }

    #[test]
    fn matrix_is_symmetric_and_diagonally_dominant() {
        for n in [15, 16, 101, 1000] {
            let a = Matrix::new(n);
            let mut entries = std::collections::HashMap::new();
            for i in 0..n {
                let row: Vec<_> = a.row(i).collect();
                assert_eq!(row.len(), NONZEROS);
                assert!(
                    row.windows(2).all(|w| w[0].0 < w[1].0),
                    "row {i} not sorted"
                );
                let diag = row.iter().find(|&&(j, _)| j == i).unwrap().1;
                let off: f64 = row
                    .iter()
                    .filter(|&&(j, _)| j != i)
                    .map(|e| e.1.abs())
                    .sum();
                assert!(diag > off, "row {i}");
                for (j, v) in row {
                    entries.insert((i, j), v);
                }
            }
            for (&(i, j), &v) in &entries {
                assert_eq!(entries.get(&(j, i)), Some(&v), "n={n} ({i}, {j})");
            }
        }
    }

    #[test]
    fn residual_falls_and_matches_its_recomputation() {
        let n = 5000;
        let a = Matrix::new(n);
        let mut v = Vectors::start(&a);
        let res = run(&mut Serial, &a, &mut v, 64);
        // Recompute ‖b − A x‖ by a plain sequential sum: equal up to rounding.
        let direct = (0..n)
            .map(|i| (a.b[i] - a.row_dot(i, &v.x)).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((res - direct).abs() <= 1e-12 * direct, "{res} vs {direct}");
        let norm_b = a.norm_b();
        assert!(res < DROP * norm_b && res > 1e-10 * norm_b, "{res}");
    }

    #[test]
    fn wrong_results_and_sizes_are_rejected() {
        let n = 1000;
        let a = Cg::shared(n);
        let want = Cg::expected(n, &a);
        let mut v = Cg::input(n, &a);
        let res = run(&mut Serial, &a, &mut v, 100);
        assert_eq!(Cg::verify(n, &a, &want, &v, res), Ok(()));
        let e = Cg::verify(n, &a, &want, &v, res * (1.0 + 1e-15)).unwrap_err();
        assert!(e.contains("residual norm"), "{e}");
        v.x[417] += 1e-14;
        let e = Cg::verify(n, &a, &want, &v, res).unwrap_err();
        assert!(e.contains("x[417]") && !e.contains('\n'), "{e}");
        // The untouched start is not the result.
        assert!(Cg::verify(n, &a, &want, &Cg::input(n, &a), res).is_err());
        // A residual that did not fall is rejected even when it matches.
        let stuck = (want.0.clone(), 1.0);
        let mut v = Cg::input(n, &a);
        v.x.clone_from(&want.0);
        let e = Cg::verify(n, &a, &stuck, &v, 1.0).unwrap_err();
        assert!(e.contains("did not fall"), "{e}");
        assert!(Cg::check_n(14).unwrap_err().contains("cg"));
    }
}
