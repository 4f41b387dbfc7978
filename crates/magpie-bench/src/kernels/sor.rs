//! SOR: successive over-relaxation on an `n`×`n` grid, the "SOR" benchmark of SLAW (Guo et al.,
//! IPDPS 2010) Table I (from the Java Grande suite), in its red-black form so that it can run in
//! parallel. The boundary is fixed; each of [`ITERATIONS`] iterations updates every red interior
//! point (`i + j` even), then every black one, in place:
//!
//! ```text
//! u[i][j] = (1 - W) * u[i][j] + W / 4 * (u[i-1][j] + u[i+1][j] + u[i][j-1] + u[i][j+1])
//! ```
//!
//! with `W` = 1.25 (Java Grande's ω). A red point's four neighbours are black and the reverse, so
//! within a half-sweep no point reads one being written, and the result does not depend on the
//! order in which points are updated. The grid is stored as two arrays, one per colour ([`Grid`]),
//! so that a half-sweep writes one colour's rows (split off with `split_at_mut`) while reading the
//! other colour through a shared slice, in safe Rust. Each half-sweep splits the interior rows in
//! halves with `join` down to `grain` rows.
//!
//! [`Sor::expected`] is an independent plain loop over the ordinary row-major grid; every version
//! must equal it bit for bit.

use crate::kernel::{Def, Kernel};
use crate::common::{first_bit_difference, for_row_bands, Rows, SplitMix64};
use crate::fork::Fork;
use crate::harness::sum12;
use crate::workload::{self, Info, Workload};

/// Iterations (red sweep then black sweep) of one run.
pub const ITERATIONS: usize = 50;
/// The relaxation factor ω.
const W: f64 = 1.25;

/// An `n`×`n` grid (n even) split by colour: `red[i * h + k]` is the point `(i, 2k + i % 2)` and
/// `black[i * h + k]` the point `(i, 2k + 1 - i % 2)`, with `h = n / 2`.
#[derive(Clone, Debug)]
pub struct Grid {
    n: usize,
    red: Vec<f64>,
    black: Vec<f64>,
}

impl Grid {
    /// Splits a row-major `n`×`n` grid by colour.
    pub fn from_row_major(n: usize, g: &[f64]) -> Grid {
        let h = n / 2;
        let mut red = vec![0.0; n * h];
        let mut black = vec![0.0; n * h];
        for i in 0..n {
            for k in 0..h {
                red[i * h + k] = g[i * n + 2 * k + i % 2];
                black[i * h + k] = g[i * n + 2 * k + 1 - i % 2];
            }
        }
        Grid { n, red, black }
    }

    /// The grid in row-major order.
    pub fn to_row_major(&self) -> Vec<f64> {
        let (n, h) = (self.n, self.n / 2);
        let mut g = vec![0.0; n * n];
        for i in 0..n {
            for k in 0..h {
                g[i * n + 2 * k + i % 2] = self.red[i * h + k];
                g[i * n + 2 * k + 1 - i % 2] = self.black[i * h + k];
            }
        }
        g
    }
}

/// The initial row-major grid: deterministic pseudo-random values in [0, 1) (SplitMix64), the
/// boundary included (it stays fixed).
pub fn input_row_major(n: usize) -> Vec<f64> {
    let mut rng = SplitMix64(0x534f_5200_0000_0000 ^ n as u64);
    (0..n * n).map(|_| rng.next_f64()).collect()
}

#[inline]
fn relax(c: f64, up: f64, down: f64, left: f64, right: f64) -> f64 {
    (1.0 - W) * c + W * 0.25 * (up + down + left + right)
}

/// Updates one row `i` (interior) of colour `mine` from the other colour `other` (the whole
/// array). `row` is colour `mine`'s row `i`; `odd` says whether this colour's point `k` of row `i`
/// sits at column `2k + 1` (otherwise `2k`).
fn update_row(n: usize, i: usize, odd: bool, row: &mut [f64], other: &[f64]) {
    let h = n / 2;
    let up = &other[(i - 1) * h..i * h];
    let mid = &other[i * h..(i + 1) * h];
    let down = &other[(i + 1) * h..(i + 2) * h];
    // Column j = 2k + odd. In the other colour, row i's point at column j - 1 / j + 1 is index
    // k - 1 + odd / k + odd; rows i ± 1 hold column j at index k (their parity is flipped).
    for k in 0..h {
        let j = 2 * k + odd as usize;
        if j == 0 || j == n - 1 {
            continue;
        }
        let (l, r) = if odd { (k, k + 1) } else { (k - 1, k) };
        row[k] = relax(row[k], up[k], down[k], mid[l], mid[r]);
    }
}

/// One half-sweep over the interior rows (whole rows of colour `red`, from row 1), split in
/// halves down to `grain` rows ([`for_row_bands`]).
fn sweep<F: Fork>(f: &mut F, n: usize, red: bool, rows: &mut [f64], other: &[f64], grain: usize) {
    let h = n / 2;
    let body = |first: usize, Rows(rows, _): Rows<'_, f64>| {
        // For the cache model (`magpie locality`): this colour's rows, read and written, and the
        // other colour's rows around them, read. A thread-local read unless the pool records.
        let k = rows.len() / h;
        let band = magpie::cachemodel::range_of(rows);
        magpie::cachemodel::leaf(
            &[
                band.clone(),
                magpie::cachemodel::range_of(&other[(first - 1) * h..(first + k + 1) * h]),
            ],
            &[band],
        );
        for (r, row) in rows.chunks_exact_mut(h).enumerate() {
            let i = first + r;
            // Red points of row i sit at odd columns when i is odd.
            let odd = (i % 2 == 1) == red;
            update_row(n, i, odd, row, other);
        }
    };
    if f.places() > 1 && magpie::current_squads() {
        // CAB: the rows halved across squads down to the boundary level for the whole grid
        // (both colours, n² points).
        let data = (n * n * 8) as u64;
        crate::common::for_row_bands_tiered(Rows(rows, h), 1, grain, data, &body);
    } else if f.places() > 1 {
        // Locality hints (SLAW §IV): a fixed block of rows per place, every sweep.
        crate::common::for_row_bands_placed(Rows(rows, h), 1, grain, &body);
    } else {
        for_row_bands(f, Rows(rows, h), 1, grain, &body);
    }
}

/// The kernel over any [`Fork`].
pub fn run<F: Fork>(f: &mut F, g: &mut Grid, grain: u64) {
    let n = g.n;
    let h = n / 2;
    let grain = grain.clamp(1, n as u64) as usize;
    for _ in 0..ITERATIONS {
        sweep(f, n, true, &mut g.red[h..(n - 1) * h], &g.black, grain);
        sweep(f, n, false, &mut g.black[h..(n - 1) * h], &g.red, grain);
    }
}

/// The plain loop: red-black SOR on a row-major grid, no splitting, no colour arrays.
pub fn plain(n: usize, g: &mut [f64]) {
    for _ in 0..ITERATIONS {
        for colour in [0, 1] {
            for i in 1..n - 1 {
                for j in 1..n - 1 {
                    if (i + j) % 2 == colour {
                        g[i * n + j] = relax(
                            g[i * n + j],
                            g[(i - 1) * n + j],
                            g[(i + 1) * n + j],
                            g[i * n + j - 1],
                            g[i * n + j + 1],
                        );
                    }
                }
            }
        }
    }
}

/// The SOR workload.
pub struct Sor;

static DEF: Def = Def {
    declares_leaves: true,
    ..workload::def::<Sor>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Sor {
    const INFO: Info = Info {
        name: "sor",
        source: "SLAW Table I (Java Grande SOR), red-black",
        n_meaning: "grid side, even",
        ci: 256,
        default: 2000,
        paper: 2000,
        min_n: 4,
        max_n: 16384,
        grain: 16,
        grain_meaning: "rows updated by one task",
    };
    type Shared = ();
    type Input = Grid;
    type Output = ();
    type Expected = Vec<f64>;

    fn check_n(n: u64) -> Result<(), String> {
        let i = Self::INFO;
        if (i.min_n..=i.max_n).contains(&n) && n.is_multiple_of(2) {
            Ok(())
        } else {
            Err(format!(
                "invalid n `{n}` for sor: expected an even number between {} and {} (grid side)",
                i.min_n, i.max_n
            ))
        }
    }
    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Grid {
        let n = n as usize;
        Grid::from_row_major(n, &input_row_major(n))
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, _: &(), g: &mut Grid) {
        run(f, g, grain)
    }
    fn expected(n: u64, _: &()) -> Vec<f64> {
        let n = n as usize;
        let mut g = input_row_major(n);
        plain(n, &mut g);
        g
    }
    fn answer(_: u64, _: &(), g: &Grid, _: &()) -> String {
        format!("sum {}", sum12(&g.to_row_major()))
    }
    fn verify(n: u64, _: &(), want: &Vec<f64>, got: &Grid, _: ()) -> Result<(), String> {
        let got = got.to_row_major();
        let n = n as usize;
        match first_bit_difference(&got, want) {
            None => Ok(()),
            Some(_) if got.len() != want.len() => Err(format!(
                "sor({n}): {} points, expected {}",
                got.len(),
                want.len()
            )),
            Some(k) => Err(format!(
                "sor({n}): point ({}, {}) is {:e}, the plain loop gives {:e}",
                k / n,
                k % n,
                got[k],
                want[k]
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;

    #[test]
    fn every_version_matches_the_plain_loop() {
        crate::workload::check_everywhere::<Sor>(&[4, 38, Sor::INFO.ci], &[1, 5, 16]);
    }

    #[test]
    fn places_and_squads_give_the_same_bits() {
        // With SLAW's places the rows go to places in fixed blocks, with CAB's squads they are
        // halved across squads: the same result.
        for (name, pool) in crate::common::locality_pools() {
            for n in [38u64, Sor::INFO.ci] {
                let want = Sor::expected(n, &());
                let mut g = Sor::input(n, &());
                pool.install(|| run(&mut crate::fork::Magpie, &mut g, 4));
                assert_eq!(
                    Sor::verify(n, &(), &want, &g, ()),
                    Ok(()),
                    "n = {n}, {name}"
                );
            }
        }
    }

    #[test]
    fn colour_split_round_trips_and_changes_interior_only() {
        let n = 10;
        let g0 = input_row_major(n);
        assert_eq!(Grid::from_row_major(n, &g0).to_row_major(), g0);
        let mut g = Grid::from_row_major(n, &g0);
        run(&mut Serial, &mut g, 2);
        let g1 = g.to_row_major();
        for i in 0..n {
            for j in 0..n {
                let edge = i == 0 || j == 0 || i == n - 1 || j == n - 1;
                assert_eq!(edge, g1[i * n + j] == g0[i * n + j], "({i}, {j})");
            }
        }
    }

    #[test]
    fn wrong_results_and_sizes_are_rejected() {
        let n = 38;
        let want = Sor::expected(n, &());
        let mut g = Sor::input(n, &());
        run(&mut Serial, &mut g, 4);
        assert_eq!(Sor::verify(n, &(), &want, &g, ()), Ok(()));
        g.black[3 * 19 + 4] += 1e-13;
        let e = Sor::verify(n, &(), &want, &g, ()).unwrap_err();
        assert!(e.contains("(3, 8)"), "{e}");
        // No iterations is not the result.
        assert!(Sor::verify(n, &(), &want, &Sor::input(n, &()), ()).is_err());
        assert!(Sor::check_n(37).unwrap_err().contains("even"));
    }
}
