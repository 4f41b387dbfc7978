//! GE: Gaussian elimination solving A x = b for an `n`×`n` matrix, the "GE" benchmark of CAB
//! (Chen et al., ICPP 2011, §V). A is strictly diagonally dominant by rows
//! ([`lu::dominant_matrix`](crate::kernels::lu::dominant_matrix)), so elimination without pivoting is
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

use crate::kernel::{Def, Kernel};
use crate::common::{first_bit_difference, for_row_bands, Rows, SplitMix64};
use crate::fork::Fork;
use crate::harness::sum12;
use crate::workload::{self, Info, Workload};

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
    /// The system of size `n`: A from [`lu::dominant_matrix`](crate::kernels::lu::dominant_matrix), x_true
    /// pseudo-random in [-1, 1) (SplitMix64), b = A·x_true summed in column order.
    pub fn new(n: usize) -> System {
        let a = crate::kernels::lu::dominant_matrix(n, 0x4745_0000_0000_0000);
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

/// Rows of one record for the cache model: [`eliminate`] declares its rows in chunks of at most
/// this many (the default grain, so a default task is one record), each row's touched part a
/// range of its own, from a fixed array on the stack.
const LEAF_ROWS: usize = 16;

/// Eliminates column `k` from the rows `rows` (whole rows of A) and their entries `b` of the
/// right-hand side, given the pivot row `pivot` and its `bk`.
fn eliminate(n: usize, k: usize, pivot: &[f64], bk: f64, rows: &mut [f64], b: &mut [f64]) {
    for (rows, b) in rows.chunks_mut(LEAF_ROWS * n).zip(b.chunks_mut(LEAF_ROWS)) {
        // For the cache model (`magpie locality`): the pivot row from column k, read; each row
        // from column k and its entry of b, read and written (columns before k are not touched).
        // A thread-local read unless the pool records leaves. The ranges are computed from the
        // rows' addresses, branch-free, into an array on the stack: row r's part at index r (those
        // past the chunk's last row are computed but not declared), then b's entries and the
        // pivot's part after the last row.
        let count = rows.len() / n;
        let (base, row_bytes, skip) = (rows.as_ptr() as u64, 8 * n as u64, 8 * k as u64);
        let mut ranges: [std::ops::Range<u64>; LEAF_ROWS + 2] = std::array::from_fn(|r| {
            let start = base + r as u64 * row_bytes;
            start + skip..start + row_bytes
        });
        ranges[count] = magpie::cachemodel::range_of(b);
        ranges[count + 1] = magpie::cachemodel::range_of(&pivot[k..]);
        magpie::cachemodel::leaf(&ranges[..count + 2], &ranges[..count + 1]);
        for (row, bi) in rows.chunks_exact_mut(n).zip(b.iter_mut()) {
            let m = row[k] / pivot[k];
            row[k] = 0.0;
            for (x, &y) in row[k + 1..].iter_mut().zip(&pivot[k + 1..]) {
                *x -= m * y;
            }
            *bi -= m * bk;
        }
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
/// In a magpie pool with places or squads, `run_hinted` instead: the same bits.
pub fn run<F: Fork>(f: &mut F, n: usize, w: &mut Work, grain: u64) -> Vec<f64> {
    let grain = grain.clamp(1, n.max(1) as u64) as usize;
    if f.places() > 1 {
        return run_hinted(n, w, grain);
    }
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

/// [`run`] with locality hints, on magpie in a pool with places (squads have them too). The
/// rows below each pivot go, with CAB's squads, to inter-socket tasks halved down to the boundary
/// level ([`for_row_bands_tiered`](crate::common::for_row_bands_tiered)); with SLAW's places, in
/// one contiguous block per place
/// ([`for_row_bands_placed`](crate::common::for_row_bands_placed)). A place's block moves down by
/// less than a row a step (the rows below the pivot shrink by one), so a row stays at one place
/// for many steps and changes place at most places − 1 times. Each row is computed as in [`run`].
fn run_hinted(n: usize, w: &mut Work, grain: usize) -> Vec<f64> {
    let squads = magpie::current_squads();
    for k in 0..n.saturating_sub(1) {
        let (done, rows) = w.a.split_at_mut((k + 1) * n);
        let (b_done, b) = w.b.split_at_mut(k + 1);
        let (pivot, bk) = (&done[k * n..], b_done[k]);
        let band = (Rows(rows, n), b);
        let body = |_, (Rows(rows, _), b): (Rows<'_, f64>, &mut [f64])| {
            eliminate(n, k, pivot, bk, rows, b)
        };
        if squads {
            // CAB's data size: what this step updates, the (n − k − 1) × (n − k) entries of A
            // below and right of the pivot (the boundary level shrinks with it).
            let data = ((n - k - 1) * (n - k) * 8) as u64;
            crate::common::for_row_bands_tiered(band, k + 1, grain, data, &body);
        } else {
            crate::common::for_row_bands_placed(band, k + 1, grain, &body);
        }
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

static DEF: Def = Def {
    declares_leaves: true,
    ..workload::def::<Ge>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

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
    fn answer(_: u64, _: &System, _: &Work, x: &Vec<f64>) -> String {
        format!("x sum {}", sum12(x))
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
    fn places_and_squads_give_the_same_bits() {
        // With SLAW's places each step's rows go to places in contiguous blocks, with CAB's
        // squads they are halved across squads: the same x as the plain loop.
        for (name, pool) in crate::common::locality_pools() {
            for (n, grain) in [(1, 1), (3, 1), (37, 2), (150, 4), (150, 1000)] {
                let s = Ge::shared(n);
                let want = Ge::expected(n, &s);
                let mut w = Ge::input(n, &s);
                let x = pool.install(|| run(&mut crate::fork::Magpie, n as usize, &mut w, grain));
                assert_eq!(
                    Ge::verify(n, &s, &want, &w, x),
                    Ok(()),
                    "n = {n}, grain {grain}, {name}"
                );
            }
        }
    }

    #[test]
    fn leaves_declare_exactly_the_entries_they_touch() {
        // The cache model's input: at pivot k, each of the n - k - 1 rows below it has its
        // columns k.. (n - k entries) and its entry of b read and written, and the pivot row's
        // columns k.. read, whatever the strategy. So the written bytes add up to
        // 8 Σ_{m=1}^{n-1} m (m + 2) = 8 ((n - 1) n (2n - 1) / 6 + (n - 1) n).
        let (n, grain) = (70usize, 5);
        let want = 8 * ((n - 1) * n * (2 * n - 1) / 6 + (n - 1) * n) as u64;
        let len = |r: &std::ops::Range<u64>| r.end - r.start;
        for (name, pool) in crate::common::recording_pools() {
            let s = Ge::shared(n as u64);
            let mut w = Ge::input(n as u64, &s);
            pool.install(|| run(&mut crate::fork::Magpie, n, &mut w, grain));
            let leaves = pool.take_leaves();
            let written: u64 = leaves.iter().flat_map(|l| &l.writes).map(len).sum();
            assert_eq!(written, want, "{name}");
            for l in &leaves {
                // Rows of one width, then b's entries, one per row; the reads are those and
                // then the pivot's part, as wide as each row's.
                let (rows, b) = l.writes.split_at(l.writes.len() - 1);
                assert!(!rows.is_empty() && rows.len() as u64 <= grain, "{name}");
                let width = len(&rows[0]);
                assert!(rows.iter().all(|r| len(r) == width), "{name}");
                assert_eq!(len(&b[0]), 8 * rows.len() as u64, "{name}");
                let (pivot, reads) = l.reads.split_last().unwrap();
                assert_eq!(len(pivot), width, "{name}");
                assert_eq!(reads, &l.writes[..], "{name}");
                if name == "places" {
                    // Two places, no cross-place stealing: the first half (rounded down) of the
                    // rows below pivot k ran at place 0, the rest at place 1.
                    let k = n - (width / 8) as usize;
                    let row = (rows[0].start - w.a.as_ptr() as u64) as usize / 8 / n;
                    let place = usize::from(row - (k + 1) >= (n - k - 1) / 2);
                    assert_eq!(
                        pool.topology().socket_of(l.worker),
                        place,
                        "row {row}, k {k}"
                    );
                }
            }
        }
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
