//! Heat: 2-D heat diffusion by the explicit five-point stencil, the "heat" benchmark of CAB (Chen
//! et al., ICPP 2011, §V). The grid is `n`×`n` `f64`, row-major; its boundary (first and last row
//! and column) is held fixed and every interior point is updated, for [`STEPS`] time steps, from
//! the previous grid:
//!
//! ```text
//! new[i][j] = old[i][j] + K * (old[i-1][j] + old[i+1][j] + old[i][j-1] + old[i][j+1] - 4 * old[i][j])
//! ```
//!
//! with `K` = 0.1 (stable: the explicit scheme needs `K` ≤ 1/4). Two buffers are ping-ponged: a
//! step reads the old grid through a shared slice and writes the new one. The parallelism is per
//! step: the interior rows are split in halves recursively with `join` down to the grain,
//! [`GRAIN_ROWS`] rows by default, and each half writes its own rows of the new grid (split off
//! with `split_at_mut`), all in safe Rust. The steps are separated by the joins themselves: a step
//! starts after the previous one has returned.
//!
//! Every point is computed by the same expression from the same old values in every version (Rust
//! does not contract `a * b + c` into a fused multiply-add), and nothing is summed across tasks, so
//! all versions give bit-for-bit the same grid, at every grain. Versions: magpie ([`parallel`],
//! `magpie::join`), the serial twin ([`serial`]: the same recursion with the two halves done one
//! after the other), rayon ([`rayon_join`]) and chili ([`chili_join`]), each also with a grain
//! ([`parallel_grain`] and so on); [`verify`] compares a grid bit-for-bit with the serial twin's,
//! which it computes.
//!
//! Under the race checker (`magpie::race`, [`race_run`]) each leaf declares what it touches:
//! it reads the old rows `first - 1..first + k + 1` (its `k` rows and their two neighbours) and
//! writes its `k` rows of the new grid, one declaration each, as `f64`s. The planted race
//! ([`crate::races::planted`]) is a block bound off by one: a leaf declares that it also writes
//! the row after its block, the first row of its neighbour's block in the same step.

use crate::harness::{answered, Measured, RunError};
use crate::kernel::{self, Def, Grain, Kernel};
use crate::kernel::Case;
use crate::workload::{self, Runtime};
use crate::Peer;

use crate::fork::{Chili, Fork, Magpie, Rayon, Serial};

/// `n` (grid side) for `--size ci`.
pub const CI: u64 = 128;
/// `n` for `--size default` (about 0.6 s serially here, release build).
pub const DEFAULT: u64 = 4096;
/// `n` for `--size paper` (this crate's paper-style size, about 2.2 s serially here; not a figure
/// from the paper).
pub const PAPER: u64 = 8192;
/// Largest `n` accepted (two 16384×16384 grids take 4 GiB).
pub const MAX_N: u64 = 16384;
/// Time steps of one run.
pub const STEPS: usize = 20;
/// The default grain: row blocks of at most this many rows are updated by one task (at
/// [`DEFAULT`], 8 rows of 4096 points take roughly 25–60 µs here, warm or cold in cache).
pub const GRAIN_ROWS: usize = 8;

/// The diffusion constant of the stencil (the explicit scheme is stable for `K` ≤ 1/4).
const K: f64 = 0.1;
/// The temperature of the hot edge (row 0); the other edges are 0.
const HOT: f64 = 100.0;

/// Checks `n`: from 3 (one interior point) to [`MAX_N`]. The error is one line.
pub fn check_n(n: u64) -> Result<(), String> {
    if (3..=MAX_N).contains(&n) {
        Ok(())
    } else {
        Err(format!(
            "invalid n `{n}` for heat: expected a whole number between 3 and {MAX_N} (grid side)"
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
    /// Uniform in [0, 1), a multiple of 2^-53.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// The initial `n`×`n` grid, row-major: row 0 is hot (100), the other boundary points are 0 and
/// the interior is deterministic pseudo-random in [0, 1). Panics unless `n` passes [`check_n`].
pub fn input(n: u64) -> Vec<f64> {
    assert!(
        check_n(n).is_ok(),
        "heat: n = {n} is not between 3 and {MAX_N}"
    );
    let n = n as usize;
    let mut rng = Rng(0x6865_6174_0000_0001 ^ n as u64);
    let mut grid = vec![0.0; n * n];
    grid[..n].fill(HOT);
    for row in grid[n..(n - 1) * n].chunks_exact_mut(n) {
        for x in &mut row[1..n - 1] {
            *x = rng.next_f64();
        }
    }
    grid
}

/// Updates the interior points of one row: `out` from `mid` and its neighbours `up` and `down`
/// (all of length `n`). `out`'s first and last points (boundary) are left alone. (Public for
/// the spliced heat of `magpie-splice`, which must compute the same bits.)
#[inline]
pub fn update_row(up: &[f64], mid: &[f64], down: &[f64], out: &mut [f64]) {
    let n = mid.len();
    let (up, down, out) = (&up[..n], &down[..n], &mut out[..n]);
    for j in 1..n - 1 {
        let c = mid[j];
        out[j] = c + K * (up[j] + down[j] + mid[j - 1] + mid[j + 1] - 4.0 * c);
    }
}

/// Updates rows `first..first + out.len() / n` of the new grid (`out`, whole rows) from `old`.
///
/// In a checked run (`magpie::race::checking()`) it declares the old rows it reads (its own
/// and the one above and below) and the new rows it writes (whole rows, as `out` is, boundary
/// columns included: no task writes those, and the old grid is another buffer); with the race planted
/// ([`crate::races::planted`]) it also declares a write of the new grid's row just after its
/// block, as a leaf whose bound is one row too far would make, when that row is interior (the
/// first row of the next leaf's block, written by that leaf in the same step). The planted
/// write is declared only: the row is not touched.
fn update_rows(old: &[f64], n: usize, first: usize, out: &mut [f64]) {
    let k = out.len() / n;
    let reads = &old[(first - 1) * n..(first + k + 1) * n];
    // For the cache model (`magpie locality`): the old rows read, the new rows written. A
    // thread-local read unless the pool records leaves.
    magpie::cachemodel::leaf(
        &[magpie::cachemodel::range_of(reads)],
        &[magpie::cachemodel::range_of(out)],
    );
    if magpie::race::checking() {
        magpie::race::read(reads);
        magpie::race::write(out);
        if crate::races::planted() && first + k < n - 1 {
            magpie::race::write_raw(out.as_ptr_range().end, n);
        }
    }
    for (r, row) in out.chunks_exact_mut(n).enumerate() {
        let i = first + r;
        update_row(
            &old[(i - 1) * n..i * n],
            &old[i * n..(i + 1) * n],
            &old[(i + 1) * n..(i + 2) * n],
            row,
        );
    }
}

/// Checks the arguments and returns `n` and the second buffer (a copy of the grid, so its
/// boundary holds the fixed values too).
fn prepare(n: u64, grid: &[f64]) -> (usize, Vec<f64>) {
    assert!(
        check_n(n).is_ok(),
        "heat: n = {n} is not between 3 and {MAX_N}"
    );
    let n = n as usize;
    assert!(
        grid.len() == n * n,
        "heat: the grid must have n * n = {} points, got {}",
        n * n,
        grid.len()
    );
    (n, grid.to_vec())
}

// ---- the kernel, once, for every `Fork` ---------------------------------------------------------

/// One step for the rows `first..` that `out` covers, split in halves down to `grain` rows (at
/// least 1).
fn step_rec<F: Fork>(
    f: &mut F,
    grain: usize,
    old: &[f64],
    n: usize,
    first: usize,
    out: &mut [f64],
) {
    let rows = out.len() / n;
    if rows <= grain {
        return update_rows(old, n, first, out);
    }
    let half = rows / 2;
    let (lo, hi) = out.split_at_mut(half * n);
    f.join(
        |f| step_rec(f, grain, old, n, first, lo),
        |f| step_rec(f, grain, old, n, first + half, hi),
    );
}

fn run_with<F: Fork>(mut f: F, n: u64, grid: &mut Vec<f64>, grain: usize) {
    let (n, mut next) = prepare(n, grid);
    for _ in 0..STEPS {
        step_rec(&mut f, grain.max(1), grid, n, 1, &mut next[n..(n - 1) * n]);
        std::mem::swap(grid, &mut next);
    }
}

/// The serial twin: [`STEPS`] steps on `grid` (`n`×`n`, row-major; the result replaces it) by the
/// same row splitting, without a runtime. Panics unless `n` passes [`check_n`] and `grid` has
/// `n * n` points.
pub fn serial(n: u64, grid: &mut Vec<f64>) {
    serial_grain(n, grid, GRAIN_ROWS)
}

/// [`serial`] with the rows split down to `grain` rows (0 counts as 1); the same grid whatever
/// the grain.
pub fn serial_grain(n: u64, grid: &mut Vec<f64>, grain: usize) {
    run_with(Serial, n, grid, grain)
}

/// [`STEPS`] steps with `magpie::join` splitting the rows of each step. Call inside
/// `Pool::install`. Same arguments and result as [`serial`].
pub fn parallel(n: u64, grid: &mut Vec<f64>) {
    parallel_grain(n, grid, GRAIN_ROWS)
}

/// [`parallel`] with tasks of at most `grain` rows (0 counts as 1). In a pool with places, each
/// step sends one contiguous block of rows to each place (the same block every step, so a
/// place's cache keeps its rows), with the same result.
pub fn parallel_grain(n: u64, grid: &mut Vec<f64>, grain: usize) {
    let squads = magpie::current_squads();
    if Magpie.places() <= 1 && !squads {
        return run_with(Magpie, n, grid, grain);
    }
    let (n, mut next) = prepare(n, grid);
    // CAB's data size: the two grids.
    let data = 2 * (n * n * 8) as u64;
    for _ in 0..STEPS {
        let old: &[f64] = grid;
        let band = crate::common::Rows(&mut next[n..(n - 1) * n], n);
        let body = |first, crate::common::Rows(out, _): crate::common::Rows<'_, f64>| {
            step_rec(&mut Magpie, grain.max(1), old, n, first, out)
        };
        if squads {
            crate::common::for_row_bands_tiered(band, 1, usize::MAX, data, &body);
        } else {
            crate::common::for_row_bands_placed(band, 1, usize::MAX, &body);
        }
        std::mem::swap(grid, &mut next);
    }
}

/// The same computation with `rayon::join`. Call inside a rayon pool's `install`.
pub fn rayon_join(n: u64, grid: &mut Vec<f64>) {
    rayon_join_grain(n, grid, GRAIN_ROWS)
}

/// [`rayon_join`] with tasks of at most `grain` rows (0 counts as 1).
pub fn rayon_join_grain(n: u64, grid: &mut Vec<f64>, grain: usize) {
    run_with(Rayon, n, grid, grain)
}

// ---- chili --------------------------------------------------------------------------------------

/// The same computation with `chili::Scope::join`.
pub fn chili_join(s: &mut chili::Scope<'_>, n: u64, grid: &mut Vec<f64>) {
    chili_join_grain(s, n, grid, GRAIN_ROWS)
}

/// [`chili_join`] with tasks of at most `grain` rows (0 counts as 1).
pub fn chili_join_grain(s: &mut chili::Scope<'_>, n: u64, grid: &mut Vec<f64>, grain: usize) {
    run_with(Chili::new(s), n, grid, grain)
}

// ---- first-touch placement ---------------------------------------------------------------------

/// Heat as an iterative [`Program`](crate::placement::Program) (first-touch placement, §6.4):
/// [`input`]`(n)` and `steps` time steps (each one phase, the rows swept as [`parallel`]
/// sweeps them), and an initialiser that copies both grids into fresh memory with the same
/// sweep over the interior rows.
#[derive(Clone, Debug)]
pub struct Placed {
    n: usize,
    grain: usize,
    steps: usize,
    grid: Vec<f64>,
    next: Vec<f64>,
}

impl Placed {
    /// `n` as [`check_n`] wants, leaves of at most `grain` rows (0 counts as 1), `steps` steps
    /// ([`STEPS`] is a benchmark run's).
    pub fn new(n: u64, grain: usize, steps: usize) -> Result<Placed, String> {
        check_n(n)?;
        let grid = input(n);
        let (n, next) = prepare(n, &grid);
        Ok(Placed {
            n,
            grain: grain.max(1),
            steps,
            grid,
            next,
        })
    }

    /// The grid after the steps run so far.
    pub fn grid(&self) -> &[f64] {
        &self.grid
    }
}

/// This kernel as a placed iterative program ([`crate::placement`]).
pub const PLACEMENT: crate::placement::Facet = crate::placement::Facet {
    iterations: |_| STEPS,
    banded: true,
    run: |pool, n, grain, iterations, strategy, pace| {
        crate::placement::run(
            pool,
            &Placed::new(n, grain as usize, iterations)?,
            strategy,
            pace,
        )
    },
};

impl crate::placement::Program for Placed {
    fn name(&self) -> &'static str {
        "heat"
    }
    fn phases(&self) -> usize {
        1
    }
    fn iterations(&self) -> usize {
        self.steps
    }

    fn place<F: Fork>(&mut self, f: &mut F) {
        let n = self.n;
        // Zeroed allocations: the pages stay untouched until the leaves write them.
        let (mut grid, mut next) = (vec![0.0; n * n], vec![0.0; n * n]);
        let (old, old_next) = (&self.grid[..], &self.next[..]);
        let band = (
            crate::common::Rows(&mut grid[n..(n - 1) * n], n),
            crate::common::Rows(&mut next[n..(n - 1) * n], n),
        );
        let data = 2 * (n * n * 8) as u64;
        crate::placement::sweep(f, band, 1, self.grain, data, &|first,
                                                                (
            crate::common::Rows(g, _),
            crate::common::Rows(x, _),
        )| {
            let rows = first * n..first * n + g.len();
            magpie::cachemodel::first_touch(
                &[
                    magpie::cachemodel::range_of(&old[rows.clone()]),
                    magpie::cachemodel::range_of(&old_next[rows.clone()]),
                ],
                &[
                    magpie::cachemodel::range_of(g),
                    magpie::cachemodel::range_of(x),
                ],
            );
            g.copy_from_slice(&old[rows.clone()]);
            x.copy_from_slice(&old_next[rows]);
        });
        // The boundary rows, which no step writes.
        for r in [0, n - 1] {
            grid[r * n..(r + 1) * n].copy_from_slice(&old[r * n..(r + 1) * n]);
            next[r * n..(r + 1) * n].copy_from_slice(&old_next[r * n..(r + 1) * n]);
        }
        (self.grid, self.next) = (grid, next);
    }

    fn phase<F: Fork>(&mut self, f: &mut F, _it: usize, _p: usize) {
        let n = self.n;
        let old: &[f64] = &self.grid;
        let band = crate::common::Rows(&mut self.next[n..(n - 1) * n], n);
        let data = 2 * (n * n * 8) as u64;
        crate::placement::sweep(f, band, 1, self.grain, data, &|first,
                                                                crate::common::Rows(
            out,
            _,
        )| {
            update_rows(old, n, first, out)
        });
        std::mem::swap(&mut self.grid, &mut self.next);
    }

    fn compare(&self, twin: &Placed) -> Result<(), String> {
        match crate::common::first_bit_difference(&self.grid, &twin.grid) {
            None => Ok(()),
            Some(k) => Err(format!(
                "heat({}): point ({}, {}) differs from the serial twin's",
                self.n,
                k / self.n,
                k % self.n
            )),
        }
    }

    fn answer(&self) -> String {
        format!("sum {:.9e}", self.grid.iter().sum::<f64>())
    }
}

/// A run's answer: the sum of the final grid, to 12 significant digits.
pub fn answer(grid: &[f64]) -> String {
    format!("sum {}", crate::harness::sum12(grid))
}

/// Checks `got` against the serial twin run on [`input`]`(n)`, bit for bit (every version computes
/// each point by the same expression from the same values, so any difference is an error). Costs
/// one serial run. The error is one line and names the first differing point.
pub fn verify(n: u64, got: &[f64]) -> Result<(), String> {
    check_n(n)?;
    let side = n as usize;
    if got.len() != side * side {
        return Err(format!(
            "heat({n}): expected n * n = {} points, got {}",
            side * side,
            got.len()
        ));
    }
    let mut want = input(n);
    serial(n, &mut want);
    match got
        .iter()
        .zip(&want)
        .position(|(x, y)| x.to_bits() != y.to_bits())
    {
        None => Ok(()),
        Some(k) => Err(format!(
            "heat({n}): point ({}, {}) is {:e}, the serial twin gives {:e}",
            k / side,
            k % side,
            got[k],
            want[k]
        )),
    }
}

/// This kernel under the race checker ([`crate::races`]).
pub const RACE: crate::races::Facet = crate::races::Facet {
    name: "heat",
    default_n: 64,
    run: race_run,
};

/// Heat under the race checker (`crate::races`): [`parallel`] (magpie, the default grain of
/// [`GRAIN_ROWS`] rows) on [`input`]`(n)` in the current pool, its grid checked bit for bit
/// against the serial twin's ([`verify`]). Returns the [`answer`] line, or one line: an invalid
/// `n` or the first point that differs. The twin runs on a thread of its own, outside the
/// pool, so that its leaves are not checked (in a checked run they would add their accesses to
/// the report, all in the root's last step).
pub fn race_run(n: u64) -> Result<String, String> {
    check_n(n)?;
    let mut grid = input(n);
    parallel(n, &mut grid);
    std::thread::scope(|s| s.spawn(|| verify(n, &grid)).join())
        .unwrap_or_else(|_| Err(format!("heat({n}): the serial twin panicked")))?;
    Ok(answer(&grid))
}

static DEF: Def = Def {
    name: "heat",
    n_meaning: "grid side",
    sizes: [CI, DEFAULT, PAPER],
    min_n: 3,
    max_n: MAX_N,
    grain: Some(Grain {
        default: Some(GRAIN_ROWS as u64),
        max: Some(MAX_N),
        meaning: "rows updated by one task in each step",
        check: None,
    }),
    peers: &[Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
    race: Some(RACE),
    placement: Some(PLACEMENT),
    declares_leaves: true,
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times the steps on `rt` at the case's grain, each run checked bit for bit against the serial
/// twin's grid, computed once per measurement: every version computes each point by the same
/// expression. The twin runs at the default grain, whatever the case's: the grain only moves
/// where the rows are split.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let n = case.n;
    let g = case.grain.map_or(GRAIN_ROWS, |g| g as usize);
    let want = workload::cached(("heat-expected", n), || {
        let mut grid = input(n);
        serial(n, &mut grid);
        grid
    });
    kernel::measure_versions(
        rt,
        runs,
        || input(n),
        |grid| serial_grain(n, grid, g),
        |grid| parallel_grain(n, grid, g),
        |grid| rayon_join_grain(n, grid, g),
        |s, grid| chili_join_grain(s, n, grid, g),
        |grid, ()| answered(same_bits("heat", &want, grid), || answer(grid)),
    )
}

/// Whether the grid `got` is `want` bit for bit; the error names `kernel` and the first point
/// that differs.
pub(crate) fn same_bits(kernel: &str, want: &[f64], got: &[f64]) -> Result<(), String> {
    match want
        .iter()
        .zip(got)
        .position(|(a, b)| a.to_bits() != b.to_bits())
    {
        None if want.len() == got.len() => Ok(()),
        None => Err(format!(
            "{kernel}: {} points, expected {}",
            got.len(),
            want.len()
        )),
        Some(i) => Err(format!(
            "{kernel}: point {i} is {}, the serial twin's is {}",
            got[i], want[i]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes tested: CI and a small odd side whose interior (35 rows) splits unevenly.
    const SIZES: [u64; 2] = [CI, 37];

    fn serial_result(n: u64) -> Vec<f64> {
        let mut g = input(n);
        serial(n, &mut g);
        g
    }

    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn serial_matches_plain_loop_and_keeps_boundary() {
        for n in [3, 4, 37, CI] {
            let got = serial_result(n);
            assert_eq!(verify(n, &got), Ok(()), "n = {n}");
            // A plain double-buffered loop, no splitting.
            let s = n as usize;
            let mut a = input(n);
            let mut b = a.clone();
            for _ in 0..STEPS {
                for i in 1..s - 1 {
                    for j in 1..s - 1 {
                        let c = a[i * s + j];
                        b[i * s + j] = c + K
                            * (a[(i - 1) * s + j]
                                + a[(i + 1) * s + j]
                                + a[i * s + j - 1]
                                + a[i * s + j + 1]
                                - 4.0 * c);
                    }
                }
                std::mem::swap(&mut a, &mut b);
            }
            assert!(same_bits(&got, &a), "n = {n}");
            // The boundary is unchanged; the interior changed and stays within [0, HOT].
            let init = input(n);
            for i in 0..s {
                for j in 0..s {
                    let k = i * s + j;
                    if i == 0 || j == 0 || i == s - 1 || j == s - 1 {
                        assert_eq!(got[k].to_bits(), init[k].to_bits(), "n = {n}, ({i}, {j})");
                    } else {
                        assert!((0.0..=HOT).contains(&got[k]), "n = {n}, ({i}, {j})");
                    }
                }
            }
            assert_ne!(got, init);
        }
    }

    #[test]
    fn places_and_squads_give_the_same_bits() {
        for (name, pool) in crate::common::locality_pools() {
            for n in SIZES {
                let mut g = input(n);
                pool.install(|| parallel(n, &mut g));
                assert!(same_bits(&g, &serial_result(n)), "n = {n}, {name}");
            }
        }
    }

    #[test]
    fn leaves_declare_exactly_the_rows_they_touch() {
        // The cache model's input: every step writes each interior row once and reads it and
        // its two neighbours, so the declared bytes add up exactly.
        let n = 64u64;
        let pool = magpie::Pool::builder()
            .workers(2)
            .record_leaves(true)
            .build()
            .unwrap();
        let mut g = input(n);
        pool.install(|| parallel(n, &mut g));
        let leaves = pool.take_leaves();
        assert!(!leaves.is_empty());
        let len = |r: &std::ops::Range<u64>| r.end - r.start;
        let row = n * 8;
        let written: u64 = leaves.iter().flat_map(|l| &l.writes).map(len).sum();
        assert_eq!(written, STEPS as u64 * (n - 2) * row);
        // Each leaf of k rows reads k + 2 rows.
        for l in &leaves {
            assert_eq!(len(&l.reads[0]), len(&l.writes[0]) + 2 * row);
        }
    }

    #[test]
    fn parallel_equals_serial_under_every_policy_and_width() {
        for n in SIZES {
            let want = serial_result(n);
            for p in [
                magpie::Policy::WorkFirst,
                magpie::Policy::HelpFirst,
                magpie::Policy::Adaptive,
            ] {
                for w in [1, 2] {
                    let pool = magpie::Pool::builder()
                        .workers(w)
                        .policy(p)
                        .build()
                        .unwrap();
                    let mut g = input(n);
                    pool.install(|| parallel(n, &mut g));
                    assert!(
                        same_bits(&g, &want),
                        "n = {n}, {p:?}, {w} workers: not bit-for-bit equal to serial"
                    );
                }
            }
        }
    }

    #[test]
    fn peers_equal_serial() {
        for n in SIZES {
            let want = serial_result(n);
            for w in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                let mut g = input(n);
                pool.install(|| rayon_join(n, &mut g));
                assert!(same_bits(&g, &want), "rayon, n = {n}, {w} threads");
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                let mut g = input(n);
                chili_join(&mut pool.scope(), n, &mut g);
                assert!(same_bits(&g, &want), "chili, n = {n}, {w} threads");
            }
        }
    }

    #[test]
    fn every_version_gives_the_same_bits_at_other_grains() {
        // 35 interior rows: grain 1 and 2 split them unevenly; 35 and more is one task a step.
        let n = 37;
        let want = serial_result(n);
        for grain in [0, 1, 2, 5, 35, usize::MAX] {
            let ok = |what: &str, g: &[f64]| {
                assert!(same_bits(g, &want), "{what}, grain {grain}");
                assert_eq!(verify(n, g), Ok(()), "{what}, grain {grain}");
            };
            let mut g = input(n);
            serial_grain(n, &mut g, grain);
            ok("serial", &g);
            for w in [1, 2] {
                let pool = magpie::Pool::builder().workers(w).build().unwrap();
                let mut g = input(n);
                pool.install(|| parallel_grain(n, &mut g, grain));
                ok(&format!("magpie x{w}"), &g);
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                let mut g = input(n);
                pool.install(|| rayon_join_grain(n, &mut g, grain));
                ok(&format!("rayon x{w}"), &g);
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                let mut g = input(n);
                chili_join_grain(&mut pool.scope(), n, &mut g, grain);
                ok(&format!("chili x{w}"), &g);
            }
        }
    }

    #[test]
    fn wrong_grids_are_rejected() {
        let good = serial_result(CI);
        for (k, delta) in [(0, 1.0), (77 * 128 + 5, 1e-12), (good.len() - 1, -1e-3)] {
            let mut bad = good.clone();
            bad[k] += delta;
            let e = verify(CI, &bad).unwrap_err();
            assert!(e.contains(&format!("({}, {})", k / 128, k % 128)), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let mut bad = good.clone();
        bad[300] = f64::NAN;
        assert!(verify(CI, &bad).is_err());
        assert!(verify(CI, &good[1..]).is_err());
        // The initial grid (no steps) is not the result.
        assert!(verify(CI, &input(CI)).is_err());
    }

    #[test]
    fn race_checker_finds_no_race_unless_planted() {
        // 32 interior rows: four leaves of 8 rows a step.
        let n = 34;
        let want = answer(&serial_result(n));
        crate::races::assert_clean_and_planted_found(RACE, n, &want);
        assert!(race_run(2).unwrap_err().contains("between 3"));
    }

    #[test]
    fn n_is_checked() {
        for n in [0, 1, 2, MAX_N + 1, u64::MAX] {
            assert!(check_n(n).unwrap_err().contains("between 3"), "n = {n}");
            assert!(verify(n, &[]).is_err());
        }
        for n in [3, CI, DEFAULT, PAPER, MAX_N] {
            assert_eq!(check_n(n), Ok(()), "n = {n}");
        }
    }

    #[test]
    fn input_is_deterministic() {
        let g = input(37);
        assert_eq!(g, input(37));
        assert!(g[..37].iter().all(|&x| x == HOT));
        assert!(g[37..].iter().all(|x| (0.0..1.0).contains(x)));
    }
}
