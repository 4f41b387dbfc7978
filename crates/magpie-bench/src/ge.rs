//! GE: Gaussian elimination solving A x = b for an `n`×`n` matrix, the "GE" benchmark of CAB
//! (Chen et al., ICPP 2011, §V). A is strictly diagonally dominant by rows
//! ([`lu::dominant_matrix`](crate::lu::dominant_matrix)), so elimination without pivoting is
//! stable and every pivot is nonzero; b = A·x_true for a known random x_true.
//!
//! Forward elimination runs the pivots one after the other; at pivot k every row i below it is
//! updated independently,
//!
//! ```text
//! m = a_ik / a_kk;   a_ij -= m · a_kj  (j > k);   b_i -= m · b_k
//! ```
//!
//! so each step splits the rows below the pivot in halves with `join` down to `grain` rows (split
//! off with `split_at_mut`, the pivot row read through a shared slice; safe Rust). The steps are
//! separated by the joins themselves. Back substitution, x_i = (b_i − Σ_{j>i} a_ij·x_j) / a_ii
//! summed in j order, is serial: it is O(n²) against elimination's O(n³), and each x_i needs the
//! one before.
//!
//! Every entry is computed by the same expressions in the same order whatever runs in parallel,
//! so all versions give bit-for-bit the same x. [`Ge::expected`] runs [`plain`], an independent
//! triple loop; [`Ge::verify`] compares x with it bit for bit and with x_true within [`TOLERANCE`].

use crate::common::{first_bit_difference, for_row_bands, Rows, SplitMix64};
use crate::fork::Fork;
use crate::workload::{Info, Workload};

/// Largest |x_i − x_true_i| a solution may show: the system is well conditioned (strict diagonal
/// dominance by a margin of 1 with entries in [-1, 1)), and the errors measured up to n = 2048
/// stay below 1e-14, so this leaves a wide margin while catching any real mistake.
pub const TOLERANCE: f64 = 1e-10;

/// The system A x = b and the solution it was built from.
#[derive(Clone, Debug)]
pub struct System {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    x_true: Vec<f64>,
}

impl System {
    /// The system of size `n`: A from [`lu::dominant_matrix`](crate::lu::dominant_matrix), x_true
    /// pseudo-random in [-1, 1) (SplitMix64), b = A·x_true summed in column order.
    pub fn new(n: usize) -> System {
        let a = crate::lu::dominant_matrix(n, 0x4745_0000_0000_0000);
        let mut rng = SplitMix64(0x4745_7874_7275_6500 ^ n as u64);
        let x_true: Vec<f64> = (0..n).map(|_| rng.next_signed_f64()).collect();
        let b = a
            .chunks_exact(n.max(1))
            .map(|row| row.iter().zip(&x_true).map(|(aij, xj)| aij * xj).sum())
            .collect();
        System { n, a, b, x_true }
    }

    /// The known solution.
    pub fn x_true(&self) -> &[f64] {
        &self.x_true
    }
}

/// One run's copy of A and b, which elimination overwrites.
#[derive(Clone, Debug)]
pub struct Work {
    a: Vec<f64>,
    b: Vec<f64>,
}

/// Eliminates column `k` from the rows `rows` (whole rows of A) and their entries `b` of the
/// right-hand side, given the pivot row `pivot` and its `bk`.
fn eliminate(n: usize, k: usize, pivot: &[f64], bk: f64, rows: &mut [f64], b: &mut [f64]) {
    for (row, bi) in rows.chunks_exact_mut(n).zip(b.iter_mut()) {
        let m = row[k] / pivot[k];
        row[k] = 0.0;
        for (x, &y) in row[k + 1..].iter_mut().zip(&pivot[k + 1..]) {
            *x -= m * y;
        }
        *bi -= m * bk;
    }
}

/// Back substitution on the upper triangular system left by elimination.
fn back_substitute(n: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let row = &a[i * n..(i + 1) * n];
        let mut s = b[i];
        for (aij, xj) in row[i + 1..].iter().zip(&x[i + 1..]) {
            s -= aij * xj;
        }
        x[i] = s / row[i];
    }
    x
}

/// The kernel over any [`Fork`]: forward elimination, the rows below each pivot split in halves
/// down to `grain` rows ([`for_row_bands`]), then back substitution; returns x.
pub fn run<F: Fork>(f: &mut F, n: usize, w: &mut Work, grain: u64) -> Vec<f64> {
    let grain = grain.clamp(1, n.max(1) as u64) as usize;
    for k in 0..n.saturating_sub(1) {
        let (done, rows) = w.a.split_at_mut((k + 1) * n);
        let (b_done, b) = w.b.split_at_mut(k + 1);
        let (pivot, bk) = (&done[k * n..], b_done[k]);
        let band = (Rows(rows, n), b);
        for_row_bands(f, band, k + 1, grain, &|_, (Rows(rows, _), b)| {
            eliminate(n, k, pivot, bk, rows, b)
        });
    }
    back_substitute(n, &w.a, &w.b)
}

/// The plain triple loop: elimination and back substitution on copies of A and b.
pub fn plain(s: &System) -> Vec<f64> {
    let n = s.n;
    let mut a = s.a.clone();
    let mut b = s.b.clone();
    for k in 0..n {
        for i in k + 1..n {
            let m = a[i * n + k] / a[k * n + k];
            a[i * n + k] = 0.0;
            for j in k + 1..n {
                a[i * n + j] -= m * a[k * n + j];
            }
            b[i] -= m * b[k];
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let mut s = b[i];
        for j in i + 1..n {
            s -= a[i * n + j] * x[j];
        }
        x[i] = s / a[i * n + i];
    }
    x
}

/// The GE workload.
pub struct Ge;

impl Workload for Ge {
    const INFO: Info = Info {
        name: "ge",
        source: "CAB (Chen et al., ICPP 2011) §V, GE",
        n_meaning: "matrix side",
        ci: 256,
        // About 0.6 s serially here (release build).
        default: 1536,
        // This crate's paper-style size (CAB's matrix side is not known here).
        paper: 2048,
        min_n: 1,
        // n^3/3 multiply-subtracts, twice (the run and `expected`): 8192 is about 150 times the
        // default's work, a few minutes serially; 32768 would take hours.
        max_n: 8192,
        grain: 16,
        grain_meaning: "rows below the pivot updated by one task",
    };
    type Shared = System;
    type Input = Work;
    type Output = Vec<f64>;
    type Expected = Vec<f64>;

    fn shared(n: u64) -> System {
        System::new(n as usize)
    }
    fn input(_: u64, s: &System) -> Work {
        Work {
            a: s.a.clone(),
            b: s.b.clone(),
        }
    }
    fn run<F: Fork>(f: &mut F, n: u64, grain: u64, _: &System, w: &mut Work) -> Vec<f64> {
        run(f, n as usize, w, grain)
    }
    fn expected(_: u64, s: &System) -> Vec<f64> {
        plain(s)
    }
    fn verify(n: u64, s: &System, want: &Vec<f64>, _: &Work, x: Vec<f64>) -> Result<(), String> {
        if x.len() != want.len() {
            return Err(format!(
                "ge({n}): x has {} entries, expected {}",
                x.len(),
                want.len()
            ));
        }
        if let Some(i) = first_bit_difference(&x, want) {
            return Err(format!(
                "ge({n}): x[{i}] is {:e}, the plain loop gives {:e}",
                x[i], want[i]
            ));
        }
        // NaN fails too.
        if let Some(i) = x
            .iter()
            .zip(&s.x_true)
            .position(|(a, b)| (a - b).abs().is_nan() || (a - b).abs() > TOLERANCE)
        {
            return Err(format!(
                "ge({n}): x[{i}] is {:e}, the known solution is {:e} (tolerance {TOLERANCE:e})",
                x[i], s.x_true[i]
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
    fn every_version_matches_the_plain_loop() {
        crate::workload::check_everywhere::<Ge>(&[1, 2, 37, 150], &[1, 7, 1000]);
    }

    #[test]
    fn solution_is_close_to_the_known_one() {
        for n in [1, 10, 300] {
            let s = System::new(n);
            let mut w = Ge::input(n as u64, &s);
            let x = run(&mut Serial, n, &mut w, 4);
            let err = x
                .iter()
                .zip(s.x_true())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-14, "n = {n}: {err:e}");
            assert!(s.x_true().iter().all(|x| (-1.0..1.0).contains(x)));
        }
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 50;
        let s = Ge::shared(n);
        let want = Ge::expected(n, &s);
        let mut w = Ge::input(n, &s);
        let x = run(&mut Serial, n as usize, &mut w, 3);
        assert_eq!(Ge::verify(n, &s, &want, &w, x.clone()), Ok(()));
        let mut bad = x.clone();
        bad[17] += 1e-15;
        let e = Ge::verify(n, &s, &want, &w, bad).unwrap_err();
        assert!(e.contains("x[17]") && e.contains("plain"), "{e}");
        // Equal to a wrong reference but far from the known solution.
        let mut far = x.clone();
        far[3] += 1.0;
        let e = Ge::verify(n, &s, &far, &w, far.clone()).unwrap_err();
        assert!(
            e.contains("x[3]") && e.contains("known") && !e.contains('\n'),
            "{e}"
        );
        assert!(Ge::verify(n, &s, &want, &w, x[1..].to_vec()).is_err());
    }
}
