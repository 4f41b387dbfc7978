//! Jacobi: [`STEPS`] sweeps of Jacobi iteration for the 2-D Poisson problem −∇²u = f on the unit
//! square, discretised on an `n`×`n` grid of `f64` (mesh width h = 1/(n − 1)) with fixed
//! (Dirichlet) boundary values: the "Jacobi" benchmark of Friendly Barriers (Kumar, Blackburn,
//! Grove, VEE 2014, §6: 1024×1024, 10 steps). Each step computes, for every interior point,
//!
//! `new[i][j] = 0.25 · (old[i−1][j] + old[i+1][j] + old[i][j−1] + old[i][j+1] − h²·f[i][j])`
//!
//! from the previous grid into a second buffer (double buffering; the boundary rows and columns
//! are never written), and the residual of the step: the largest `|new[i][j] − old[i][j]|`.
//!
//! Parallelism is per step: the interior rows are halved recursively with `join` down to the
//! grain, [`GRAIN_ROWS`] rows by default, the output buffer being split into disjoint row ranges
//! with `split_at_mut` while the previous grid and f are shared read-only; each half returns its
//! residual and a join returns the larger of the two. The step ends when its root `join` returns,
//! which is the barrier between steps. All in safe Rust.
//!
//! Every point is computed by the same expression, in the same order of operations, whatever
//! runs in parallel, and the maximum of a set of numbers does not depend on the order it is taken
//! in (nor on how the rows are grouped: the residual is a maximum, not a sum), so all versions
//! give bit-for-bit the same grid and residual, at every grain. Versions: magpie ([`parallel`],
//! `magpie::join`), the serial twin ([`serial`]: the same recursion with the two halves done one
//! after the other), rayon ([`rayon_join`]) and chili ([`chili_join`]), each also with a grain
//! ([`parallel_grain`] and so on); [`verify`] reruns the serial twin and compares bit for bit.

use crate::harness::{answered, Measured, RunError};
use crate::kernel::{self, Def, Grain, Kernel};
use crate::kernel::Case;
use crate::workload::{self, Runtime};
use crate::Peer;

use crate::fork::{Chili, Fork, Magpie, Rayon, Serial};

/// `n` for `--size ci`.
pub const CI: u64 = 128;
/// `n` for `--size default`: 4× the paper's grid (1024² takes ~44 ms serially here), kept small
/// enough for the default suite's 10-minute budget on 2 cores.
pub const DEFAULT: u64 = 2048;
/// `n` for `--size paper` (Friendly Barriers §6: 1024×1024).
pub const PAPER: u64 = 1024;
/// Largest `n` accepted (the grid, its second buffer and f take 6 GiB at this size).
pub const MAX_N: u64 = 16384;
/// Jacobi steps per run (Friendly Barriers §6).
pub const STEPS: usize = 10;
/// The default grain: row ranges of at most this many interior rows are swept serially.
pub const GRAIN_ROWS: usize = 16;

/// Checks `n`: from 3 (one interior point) to [`MAX_N`]. The error is one line.
pub fn check_n(n: u64) -> Result<(), String> {
    if (3..=MAX_N).contains(&n) {
        Ok(())
    } else {
        Err(format!(
            "invalid n `{n}` for jacobi: expected a whole number between 3 and {MAX_N} (grid side)"
        ))
    }
}

/// A Jacobi problem: the grid (boundary values fixed, interior the current iterate) and the
/// right-hand side f, both `n`×`n` row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// The grid u, `n * n` entries; the runs update its interior in place.
    pub grid: Vec<f64>,
    /// The right-hand side f, `n * n` entries (only the interior is used).
    pub f: Vec<f64>,
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

/// The problem for side `n` (deterministic): boundary values pseudo-random in [-1, 1), interior
/// of the grid zero, and f pseudo-random in [-1, 1) on the interior (zero on the boundary).
/// Panics unless `n` passes [`check_n`].
pub fn input(n: u64) -> Problem {
    assert!(check_n(n).is_ok(), "jacobi: n = {n} is out of range");
    let n = n as usize;
    let mut rng = Rng(0x6a61_636f_6269_0001 ^ n as u64);
    // Every value is written here, the zeros too. A `vec![0.0; n * n]` with only its boundary
    // set would leave the interior's pages unmapped: read by the first step, they map the
    // kernel's shared zero page, and the first write to each (the second step, when the buffers
    // have swapped) then faults in the timed run, flushing the TLB of every core the process
    // runs on (at n = 4096, 32 thousand such faults per run).
    let (mut grid, mut f) = (Vec::with_capacity(n * n), Vec::with_capacity(n * n));
    for i in 0..n {
        for j in 0..n {
            let on_boundary = i == 0 || j == 0 || i == n - 1 || j == n - 1;
            let x = rng.next_f64();
            let (g, fx) = if on_boundary { (x, 0.0) } else { (0.0, x) };
            grid.push(g);
            f.push(fx);
        }
    }
    Problem { grid, f }
}

/// Sweeps the interior rows `first..first + out.len() / n` of the grid: reads `old` (the whole
/// grid) and `f`, writes the interior columns of those rows into `out`, and returns the largest
/// change.
fn sweep_rows(n: usize, h2: f64, old: &[f64], f: &[f64], first: usize, out: &mut [f64]) -> f64 {
    let mut residual = 0.0f64;
    for (k, out_row) in out.chunks_exact_mut(n).enumerate() {
        let i = first + k;
        let up = &old[(i - 1) * n..i * n];
        let mid = &old[i * n..(i + 1) * n];
        let down = &old[(i + 1) * n..(i + 2) * n];
        let f_row = &f[i * n..(i + 1) * n];
        residual = residual.max(sweep_row(h2, up, mid, down, f_row, out_row));
    }
    residual
}

/// Sweeps one interior row: `out`'s interior columns from the old rows `up`, `mid`, `down` and
/// `f`'s row; returns the row's largest change. (Public for the spliced Jacobi of
/// `magpie-splice`, which must compute the same bits.)
///
/// The largest change is kept in `LANES` running maxima, one per column modulo `LANES`,
/// combined at the end of the row. With one, every point waited for the previous point's
/// maximum (a compare and a select on one register), and that chain, not memory, set the
/// sweep's speed. The result is the same bits: the changes are absolute values (never -0.0), a
/// maximum of such values does not depend on the order they are taken in, and `if d > r` keeps
/// `r` on a NaN as `f64::max` does.
#[inline]
pub fn sweep_row(
    h2: f64,
    up: &[f64],
    mid: &[f64],
    down: &[f64],
    f_row: &[f64],
    out: &mut [f64],
) -> f64 {
    let n = mid.len();
    // Equal lengths let the compiler drop the bounds checks below.
    let (up, down, f_row, out) = (&up[..n], &down[..n], &f_row[..n], &mut out[..n]);
    let mut lanes = [0.0f64; LANES];
    let point = |j: usize, out: &mut [f64]| {
        let new = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1] - h2 * f_row[j]);
        out[j] = new;
        (new - mid[j]).abs()
    };
    let mut j = 1;
    while j + LANES < n {
        for (l, lane) in lanes.iter_mut().enumerate() {
            let d = point(j + l, out);
            if d > *lane {
                *lane = d;
            }
        }
        j += LANES;
    }
    while j < n - 1 {
        let d = point(j, out);
        if d > lanes[0] {
            lanes[0] = d;
        }
        j += 1;
    }
    lanes.iter().fold(0.0f64, |r, &l| r.max(l))
}

/// Running maxima of one row's sweep ([`sweep_row`]).
const LANES: usize = 4;

/// What every task of one step reads: the side `n`, h², the previous grid, f, and the grain
/// (rows swept by one task, at least 1).
#[derive(Clone, Copy)]
struct Step<'a> {
    n: usize,
    h2: f64,
    old: &'a [f64],
    f: &'a [f64],
    grain: usize,
}

impl Step<'_> {
    /// Sweeps the interior rows `first..first + out.len() / n` in one task ([`sweep_rows`]).
    fn sweep(self, first: usize, out: &mut [f64]) -> f64 {
        sweep_rows(self.n, self.h2, self.old, self.f, first, out)
    }
}

/// One step over the interior rows `first..first + out.len() / n`, halved with `join` down to
/// the grain.
fn step_rec<F: Fork>(fk: &mut F, st: Step<'_>, first: usize, out: &mut [f64]) -> f64 {
    let rows = out.len() / st.n;
    if rows <= st.grain {
        return st.sweep(first, out);
    }
    let half = rows / 2;
    let (lo, hi) = out.split_at_mut(half * st.n);
    let (a, b) = fk.join(
        |fk| step_rec(fk, st, first, lo),
        |fk| step_rec(fk, st, first + half, hi),
    );
    a.max(b)
}

/// Checks the arguments and returns `n`, h² and the second buffer (a copy of the grid, so its
/// boundary is already in place).
fn prepare(n: u64, p: &Problem) -> (usize, f64, Vec<f64>) {
    assert!(check_n(n).is_ok(), "jacobi: n = {n} is out of range");
    let n = n as usize;
    assert!(
        p.grid.len() == n * n && p.f.len() == n * n,
        "jacobi: grid and f must have n * n = {} entries",
        n * n
    );
    let h = 1.0 / (n - 1) as f64;
    (n, h * h, p.grid.clone())
}

/// The interior rows of a buffer: rows 1..n − 1.
fn interior(n: usize, buf: &mut [f64]) -> &mut [f64] {
    &mut buf[n..(n - 1) * n]
}

/// Runs `steps` Jacobi steps on `p` in place, splitting the rows down to `grain` (0 counts as
/// 1), and returns the last step's residual (0 when `steps` is 0).
pub(crate) fn run_steps<F: Fork>(
    mut fk: F,
    n: u64,
    p: &mut Problem,
    steps: usize,
    grain: usize,
) -> f64 {
    let (n, h2, mut next) = prepare(n, p);
    let mut residual = 0.0;
    for _ in 0..steps {
        let st = Step {
            n,
            h2,
            old: &p.grid,
            f: &p.f,
            grain: grain.max(1),
        };
        residual = step_rec(&mut fk, st, 1, interior(n, &mut next));
        std::mem::swap(&mut p.grid, &mut next);
    }
    residual
}

/// The serial twin: [`STEPS`] Jacobi steps on `p` in place (`n`×`n`; panics unless `n` passes
/// [`check_n`] and the grid and f have `n * n` entries), by the same row halving without a
/// runtime. Returns the last step's residual, the largest change of a point.
pub fn serial(n: u64, p: &mut Problem) -> f64 {
    serial_grain(n, p, GRAIN_ROWS)
}

/// [`serial`] with the rows halved down to `grain` rows (0 counts as 1); the same grid and
/// residual whatever the grain.
pub fn serial_grain(n: u64, p: &mut Problem, grain: usize) -> f64 {
    run_steps(Serial, n, p, STEPS, grain)
}

/// [`STEPS`] Jacobi steps with `magpie::join` over halves of the rows. Call inside
/// `Pool::install`. Same arguments and result as [`serial`].
pub fn parallel(n: u64, p: &mut Problem) -> f64 {
    parallel_grain(n, p, GRAIN_ROWS)
}

/// [`parallel`] with tasks of at most `grain` rows (0 counts as 1).
pub fn parallel_grain(n: u64, p: &mut Problem, grain: usize) -> f64 {
    run_steps(Magpie, n, p, STEPS, grain)
}

/// The same computation with `rayon::join`. Call inside a rayon pool's `install`.
pub fn rayon_join(n: u64, p: &mut Problem) -> f64 {
    rayon_join_grain(n, p, GRAIN_ROWS)
}

/// [`rayon_join`] with tasks of at most `grain` rows (0 counts as 1).
pub fn rayon_join_grain(n: u64, p: &mut Problem, grain: usize) -> f64 {
    run_steps(Rayon, n, p, STEPS, grain)
}

/// The same computation with `chili::Scope::join`.
pub fn chili_join(s: &mut chili::Scope<'_>, n: u64, p: &mut Problem) -> f64 {
    chili_join_grain(s, n, p, GRAIN_ROWS)
}

/// [`chili_join`] with tasks of at most `grain` rows (0 counts as 1).
pub fn chili_join_grain(s: &mut chili::Scope<'_>, n: u64, p: &mut Problem, grain: usize) -> f64 {
    run_steps(Chili::new(s), n, p, STEPS, grain)
}

/// A run's answer: the last step's residual and the sum of the final grid, to 12 significant
/// digits.
pub fn answer(grid: &[f64], residual: f64) -> String {
    use crate::harness::{sig12, sum12};
    format!("residual {}, sum {}", sig12(residual), sum12(grid))
}

/// Checks a run's grid and residual against the serial twin, run here on [`input`]`(n)`. The
/// comparison is bit for bit: every point is computed by the same expression in every version,
/// and the residual is a maximum, which does not depend on the order the halves are combined
/// in. The error is one line.
pub fn verify(n: u64, got_grid: &[f64], got_residual: f64) -> Result<(), String> {
    check_n(n)?;
    let side = n as usize;
    if got_grid.len() != side * side {
        return Err(format!(
            "jacobi({n}): expected n * n = {} grid entries, got {}",
            side * side,
            got_grid.len()
        ));
    }
    let mut want = input(n);
    let want_residual = serial(n, &mut want);
    if let Some(idx) =
        (0..got_grid.len()).find(|&k| got_grid[k].to_bits() != want.grid[k].to_bits())
    {
        return Err(format!(
            "jacobi({n}): grid[{}][{}] = {:e}, the serial twin gives {:e}",
            idx / side,
            idx % side,
            got_grid[idx],
            want.grid[idx]
        ));
    }
    if got_residual.to_bits() != want_residual.to_bits() {
        return Err(format!(
            "jacobi({n}): residual {got_residual:e}, the serial twin gives {want_residual:e}"
        ));
    }
    Ok(())
}

static DEF: Def = Def {
    name: "jacobi",
    n_meaning: "grid side",
    sizes: [CI, DEFAULT, PAPER],
    min_n: 3,
    max_n: MAX_N,
    grain: Some(Grain {
        default: Some(GRAIN_ROWS as u64),
        max: Some(MAX_N),
        meaning: "rows swept by one task in each step",
        check: None,
    }),
    peers: &[Peer::RayonJoin, Peer::ChiliJoin],
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times the sweeps on `rt` at the case's grain, each run checked bit for bit against the
/// serial twin's grid and residual, computed once per measurement at the default grain: the
/// residual is a maximum, so it does not depend on how the rows are split (no sum whose order
/// the grain would change), and the cache key needs no grain.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let n = case.n;
    let g = case.grain.map_or(GRAIN_ROWS, |g| g as usize);
    let want = workload::cached(("jacobi-expected", n), || {
        let mut p = input(n);
        let r = serial(n, &mut p);
        (p.grid, r)
    });
    kernel::measure_versions(
        rt,
        runs,
        || input(n),
        |p| serial_grain(n, p, g),
        |p| parallel_grain(n, p, g),
        |p| rayon_join_grain(n, p, g),
        |s, p| chili_join_grain(s, n, p, g),
        |p, r| {
            let verdict = if r.to_bits() != want.1.to_bits() {
                Err(format!(
                    "jacobi: residual {r}, the serial twin's is {}",
                    want.1
                ))
            } else {
                crate::kernels::heat::same_bits("jacobi", &want.0, &p.grid)
            };
            answered(verdict, || answer(&p.grid, r))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `run` on a fresh problem of side `n`; returns the grid and the residual.
    fn solve(n: u64, run: impl FnOnce(&mut Problem) -> f64) -> (Vec<f64>, f64) {
        let mut p = input(n);
        let r = run(&mut p);
        (p.grid, r)
    }

    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn serial_matches_plain_loop_and_verifies() {
        for n in [3, 4, 37, CI] {
            let (grid, r) = solve(n, |p| serial(n, p));
            assert_eq!(verify(n, &grid, r), Ok(()), "n = {n}");
            // The textbook double-buffered loop nest.
            let side = n as usize;
            let p = input(n);
            let h = 1.0 / (side - 1) as f64;
            let (mut old, mut new) = (p.grid.clone(), p.grid.clone());
            let mut res = 0.0f64;
            for _ in 0..STEPS {
                res = 0.0;
                for i in 1..side - 1 {
                    for j in 1..side - 1 {
                        let at = |i: usize, j: usize| old[i * side + j];
                        let v = 0.25
                            * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1)
                                - h * h * p.f[i * side + j]);
                        res = res.max((v - at(i, j)).abs());
                        new[i * side + j] = v;
                    }
                }
                std::mem::swap(&mut old, &mut new);
            }
            assert!(same_bits(&grid, &old), "n = {n}");
            assert_eq!(r.to_bits(), res.to_bits(), "n = {n}");
            // n = 3 has one interior point, which is exact after the first step.
            assert!(
                r.is_finite() && (r > 0.0 || (n == 3 && r == 0.0)),
                "n = {n}: residual {r}"
            );
            // The boundary is untouched.
            for k in 0..side {
                for idx in [k, k * side, k * side + side - 1, (side - 1) * side + k] {
                    assert_eq!(grid[idx].to_bits(), p.grid[idx].to_bits());
                }
            }
        }
    }

    #[test]
    fn parallel_equals_serial_under_every_policy_and_width() {
        for n in [37, CI] {
            let (want, want_r) = solve(n, |p| serial(n, p));
            for pol in [
                magpie::Policy::WorkFirst,
                magpie::Policy::HelpFirst,
                magpie::Policy::Adaptive,
            ] {
                for w in [1, 2] {
                    let pool = magpie::Pool::builder()
                        .workers(w)
                        .policy(pol)
                        .build()
                        .unwrap();
                    let (grid, r) = solve(n, |p| pool.install(|| parallel(n, p)));
                    assert!(
                        same_bits(&grid, &want) && r.to_bits() == want_r.to_bits(),
                        "n = {n}, {pol:?}, {w} workers: not bit-for-bit equal to serial"
                    );
                }
            }
            assert_eq!(verify(n, &want, want_r), Ok(()));
        }
    }

    #[test]
    fn peers_equal_serial() {
        for n in [37, CI] {
            let (want, want_r) = solve(n, |p| serial(n, p));
            for w in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                let (grid, r) = solve(n, |p| pool.install(|| rayon_join(n, p)));
                assert!(same_bits(&grid, &want), "rayon, n = {n}, {w} threads");
                assert_eq!(r.to_bits(), want_r.to_bits(), "rayon, n = {n}, {w} threads");
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                let (grid, r) = solve(n, |p| chili_join(&mut pool.scope(), n, p));
                assert!(same_bits(&grid, &want), "chili, n = {n}, {w} threads");
                assert_eq!(r.to_bits(), want_r.to_bits(), "chili, n = {n}, {w} threads");
            }
        }
    }

    #[test]
    fn every_version_gives_the_same_bits_at_other_grains() {
        // 35 interior rows: grain 1 and 2 split them unevenly, so the residual's maximum is taken
        // over other groupings than the default's; 35 and more is one task a step.
        let n = 37;
        let (want, want_r) = solve(n, |p| serial(n, p));
        for grain in [0, 1, 2, 5, 35, usize::MAX] {
            let ok = |what: &str, (grid, r): (Vec<f64>, f64)| {
                assert!(same_bits(&grid, &want), "{what}, grain {grain}");
                assert_eq!(r.to_bits(), want_r.to_bits(), "{what}, grain {grain}");
            };
            ok("serial", solve(n, |p| serial_grain(n, p, grain)));
            for w in [1, 2] {
                let pool = magpie::Pool::builder().workers(w).build().unwrap();
                let got = solve(n, |p| pool.install(|| parallel_grain(n, p, grain)));
                ok(&format!("magpie x{w}"), got);
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                let got = solve(n, |p| pool.install(|| rayon_join_grain(n, p, grain)));
                ok(&format!("rayon x{w}"), got);
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                let got = solve(n, |p| chili_join_grain(&mut pool.scope(), n, p, grain));
                ok(&format!("chili x{w}"), got);
            }
        }
    }

    #[test]
    fn wrong_results_are_rejected() {
        let (grid, r) = solve(CI, |p| serial(CI, p));
        assert_eq!(verify(CI, &grid, r), Ok(()));
        let side = CI as usize;
        for (i, j) in [(1, 1), (64, 77), (side - 2, side - 2), (0, 5)] {
            let mut bad = grid.clone();
            bad[i * side + j] = f64::from_bits(bad[i * side + j].to_bits() ^ 1);
            let e = verify(CI, &bad, r).unwrap_err();
            assert!(e.contains(&format!("grid[{i}][{j}]")), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = verify(CI, &grid, r * 1.000_001).unwrap_err();
        assert!(e.contains("residual"), "{e}");
        assert!(verify(CI, &grid, f64::NAN).is_err());
        assert!(verify(CI, &grid[1..], r).is_err());
        assert!(verify(2, &grid[..4], r).is_err());
        // The input itself (no steps) is not the answer.
        assert!(verify(CI, &input(CI).grid, r).is_err());
    }

    #[test]
    fn residual_decreases_over_steps() {
        // One step at a time gives the same iterates as `STEPS` steps at once.
        let mut p = input(CI);
        let residuals: Vec<f64> = (0..STEPS)
            .map(|_| run_steps(Serial, CI, &mut p, 1, GRAIN_ROWS))
            .collect();
        let (grid, r) = solve(CI, |p| serial(CI, p));
        assert!(same_bits(&p.grid, &grid));
        assert_eq!(residuals[STEPS - 1].to_bits(), r.to_bits());
        // Jacobi's iteration matrix has ∞-norm at most 1, so the max change never grows.
        for w in residuals.windows(2) {
            assert!(w[1] <= w[0], "{residuals:?}");
        }
        assert!(residuals[STEPS - 1] < residuals[0], "{residuals:?}");
        assert_eq!(run_steps(Serial, CI, &mut input(CI), 0, GRAIN_ROWS), 0.0);
    }

    #[test]
    fn n_is_checked() {
        for n in [0, 1, 2, MAX_N + 1, u64::MAX] {
            let e = check_n(n).unwrap_err();
            assert!(e.contains("between 3 and"), "{e}");
        }
        for n in [3, 37, CI, DEFAULT, PAPER, MAX_N] {
            assert_eq!(check_n(n), Ok(()), "n = {n}");
        }
    }
}
