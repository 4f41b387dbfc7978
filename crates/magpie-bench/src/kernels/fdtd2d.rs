//! FDTD-2D: the two-dimensional finite-difference time-domain kernel of PolyBench ("fdtd-2d"),
//! a benchmark of Lifflander's thesis. Three fields live on an `n`×`n` grid: the electric field
//! components `ex`, `ey` and the magnetic field `hz` (a Yee scheme in normalised units). Each of
//! [`STEPS`] time steps first sets the source row and updates the electric field from `hz`, then
//! updates `hz` from the new electric field:
//!
//! ```text
//! ey[0][j] = fict[t]
//! ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i-1][j])                      1 <= i < n
//! ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j-1])                      1 <= j < n
//! hz[i][j] = hz[i][j] - 0.7 * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j])   i, j < n - 1
//! ```
//!
//! (written from PolyBench's description; `fict[t]` is the source value of step t, here `t`, as in
//! PolyBench). The `ey` and `ex` updates only read `hz`, so they form one sweep over the rows: a
//! task owns a band of rows of both `ey` and `ex` (split off with `split_at_mut`) and reads `hz`
//! through a shared slice; the `hz` sweep then owns bands of `hz` rows and reads `ex` and `ey`.
//! Each sweep halves its rows with `join` down to `grain` rows ([`for_row_bands`]), and ends when
//! its root `join` returns — the barrier between the sweeps. All in safe Rust.
//!
//! Every point is computed by the same expression from the same values whatever runs in
//! parallel, so every version is bit-for-bit equal to [`plain`], PolyBench's four loop nests run
//! one after another, which [`Fdtd2d::expected`] computes and the verifier compares with.

use crate::kernel::{Def, Kernel};
use crate::common::{first_bit_difference, for_row_bands, Rows, SplitMix64};
use crate::fork::Fork;
use crate::harness::sum12;
use crate::workload::{self, Info, Workload};

/// Time steps of one run.
pub const STEPS: usize = 100;

/// The three fields, each `n`×`n` and row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Fields {
    /// Grid side.
    pub n: usize,
    /// Electric field, x component.
    pub ex: Vec<f64>,
    /// Electric field, y component.
    pub ey: Vec<f64>,
    /// Magnetic field, z component.
    pub hz: Vec<f64>,
}

/// The initial fields: deterministic pseudo-random values in [0, 1) (SplitMix64), `ex`, then
/// `ey`, then `hz`.
pub fn input(n: usize) -> Fields {
    let mut rng = SplitMix64(0x4644_5444_3244_0000 ^ n as u64);
    let mut next = || rng.next_f64();
    let mut field = || (0..n * n).map(|_| next()).collect::<Vec<f64>>();
    let ex = field();
    let ey = field();
    let hz = field();
    Fields { n, ex, ey, hz }
}

/// The source value of step `t`.
#[inline]
fn fict(t: usize) -> f64 {
    t as f64
}

#[inline]
fn e_update(e: f64, h: f64, h_prev: f64) -> f64 {
    e - 0.5 * (h - h_prev)
}

#[inline]
fn h_update(h: f64, ex_next: f64, ex: f64, ey_next: f64, ey: f64) -> f64 {
    h - 0.7 * (ex_next - ex + ey_next - ey)
}

/// The electric update of step `t` on rows `first..` held by `ey` and `ex` (whole rows, the
/// same ones).
fn e_rows(n: usize, t: usize, first: usize, ey: &mut [f64], ex: &mut [f64], hz: &[f64]) {
    // For the cache model: hz's rows and the one above, and the two fields' own rows.
    let k = ey.len() / n;
    let lo = first.saturating_sub(1) * n;
    magpie::cachemodel::leaf(
        &[
            magpie::cachemodel::range_of(&hz[lo..(first + k) * n]),
            magpie::cachemodel::range_of(ey),
            magpie::cachemodel::range_of(ex),
        ],
        &[
            magpie::cachemodel::range_of(ey),
            magpie::cachemodel::range_of(ex),
        ],
    );
    for (r, (ey_row, ex_row)) in ey
        .chunks_exact_mut(n)
        .zip(ex.chunks_exact_mut(n))
        .enumerate()
    {
        let i = first + r;
        let h_up = (i > 0).then(|| &hz[(i - 1) * n..i * n]);
        e_row(t, ey_row, ex_row, &hz[i * n..(i + 1) * n], h_up);
    }
}

/// The electric update of step `t` on one row: `ey`'s and `ex`'s row from `hz`'s row `h` and
/// the one above it (`None` for row 0, whose `ey` takes the source value). (Public for the
/// spliced FDTD of `magpie-splice`, which must compute the same bits.)
#[inline]
pub fn e_row(t: usize, ey_row: &mut [f64], ex_row: &mut [f64], h: &[f64], h_up: Option<&[f64]>) {
    match h_up {
        None => ey_row.fill(fict(t)),
        Some(h_up) => {
            for ((e, &h), &hp) in ey_row.iter_mut().zip(h).zip(h_up) {
                *e = e_update(*e, h, hp);
            }
        }
    }
    for j in 1..h.len() {
        ex_row[j] = e_update(ex_row[j], h[j], h[j - 1]);
    }
}

/// The magnetic update on rows `first..` held by `hz` (whole rows; none is the last row).
fn h_rows(n: usize, first: usize, hz: &mut [f64], ex: &[f64], ey: &[f64]) {
    // For the cache model: ex's rows, ey's rows and the one below, hz's own rows.
    let k = hz.len() / n;
    magpie::cachemodel::leaf(
        &[
            magpie::cachemodel::range_of(&ex[first * n..(first + k) * n]),
            magpie::cachemodel::range_of(&ey[first * n..(first + k + 1) * n]),
            magpie::cachemodel::range_of(hz),
        ],
        &[magpie::cachemodel::range_of(hz)],
    );
    for (r, h_row) in hz.chunks_exact_mut(n).enumerate() {
        let i = first + r;
        let x = &ex[i * n..(i + 1) * n];
        let y = &ey[i * n..(i + 1) * n];
        let y_down = &ey[(i + 1) * n..(i + 2) * n];
        h_row_update(h_row, x, y, y_down);
    }
}

/// The magnetic update on one row (not the last): `hz`'s row from `ex`'s and `ey`'s rows and
/// `ey`'s next row. (Public for the spliced FDTD of `magpie-splice`.)
#[inline]
pub fn h_row_update(h_row: &mut [f64], x: &[f64], y: &[f64], y_down: &[f64]) {
    for j in 0..h_row.len() - 1 {
        h_row[j] = h_update(h_row[j], x[j + 1], x[j], y_down[j], y[j]);
    }
}

/// The kernel over any [`Fork`]: [`STEPS`] time steps on `g`, each sweep's rows split in halves
/// down to `grain` rows ([`for_row_bands`]).
pub fn run<F: Fork>(f: &mut F, g: &mut Fields, grain: u64) {
    let n = g.n;
    let grain = grain.clamp(1, n as u64) as usize;
    let Fields { ex, ey, hz, .. } = g;
    for t in 0..STEPS {
        let hz_all: &[f64] = hz;
        let e_band = (Rows(&mut ey[..], n), Rows(&mut ex[..], n));
        for_row_bands(f, e_band, 0, grain, &|first, (Rows(ey, _), Rows(ex, _))| {
            e_rows(n, t, first, ey, ex, hz_all)
        });
        // hz's last row is never updated.
        let (ex_all, ey_all): (&[f64], &[f64]) = (ex, ey);
        let h_band = Rows(&mut hz[..(n - 1) * n], n);
        for_row_bands(f, h_band, 0, grain, &|first, Rows(hz, _)| {
            h_rows(n, first, hz, ex_all, ey_all)
        });
    }
}

/// The plain loops: PolyBench's four loop nests per step, no splitting.
pub fn plain(g: &mut Fields) {
    let n = g.n;
    let (ex, ey, hz) = (&mut g.ex, &mut g.ey, &mut g.hz);
    for t in 0..STEPS {
        ey[..n].fill(fict(t));
        for i in 1..n {
            for j in 0..n {
                ey[i * n + j] = e_update(ey[i * n + j], hz[i * n + j], hz[(i - 1) * n + j]);
            }
        }
        for i in 0..n {
            for j in 1..n {
                ex[i * n + j] = e_update(ex[i * n + j], hz[i * n + j], hz[i * n + j - 1]);
            }
        }
        for i in 0..n.saturating_sub(1) {
            for j in 0..n - 1 {
                hz[i * n + j] = h_update(
                    hz[i * n + j],
                    ex[i * n + j + 1],
                    ex[i * n + j],
                    ey[(i + 1) * n + j],
                    ey[i * n + j],
                );
            }
        }
    }
}

/// FDTD-2D as an iterative [`Program`](crate::placement::Program) (first-touch placement,
/// §6.4): [`input`]`(n)` and `steps` time steps, each two phases (the electric sweep over the
/// `n` rows, the magnetic one over the first `n - 1`), and an initialiser that copies the three
/// fields into fresh memory with the electric sweep's structure.
#[derive(Clone, Debug)]
pub struct Placed {
    g: Fields,
    grain: usize,
    steps: usize,
}

impl Placed {
    /// A grid of side `n` (at least 2), leaves of at most `grain` rows, `steps` steps.
    pub fn new(n: usize, grain: u64, steps: usize) -> Result<Placed, String> {
        if n < 2 {
            return Err(format!("fdtd-2d: n = {n}: the grid needs at least 2 rows"));
        }
        Ok(Placed {
            g: input(n),
            grain: grain.clamp(1, n as u64) as usize,
            steps,
        })
    }
}

/// This kernel as a placed iterative program ([`crate::placement`]).
pub const PLACEMENT: crate::placement::Facet = crate::placement::Facet {
    iterations: |_| STEPS,
    banded: true,
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
        "fdtd-2d"
    }
    fn phases(&self) -> usize {
        2
    }
    fn iterations(&self) -> usize {
        self.steps
    }

    fn place<F: Fork>(&mut self, f: &mut F) {
        let n = self.g.n;
        let fresh = || vec![0.0; n * n];
        let (mut ex, mut ey, mut hz) = (fresh(), fresh(), fresh());
        let old = &self.g;
        let band = (
            (Rows(&mut ey[..], n), Rows(&mut ex[..], n)),
            Rows(&mut hz[..], n),
        );
        let data = 3 * (n * n * 8) as u64;
        crate::placement::sweep(f, band, 0, self.grain, data, &|first,
                                                                (
            (Rows(ey, _), Rows(ex, _)),
            Rows(hz, _),
        )| {
            let rows = first * n..first * n + ey.len();
            let r = magpie::cachemodel::range_of;
            magpie::cachemodel::first_touch(
                &[
                    r(&old.ey[rows.clone()]),
                    r(&old.ex[rows.clone()]),
                    r(&old.hz[rows.clone()]),
                ],
                &[r(ey), r(ex), r(hz)],
            );
            ey.copy_from_slice(&old.ey[rows.clone()]);
            ex.copy_from_slice(&old.ex[rows.clone()]);
            hz.copy_from_slice(&old.hz[rows]);
        });
        self.g = Fields { n, ex, ey, hz };
    }

    fn phase<F: Fork>(&mut self, f: &mut F, t: usize, p: usize) {
        let n = self.g.n;
        let Fields { ex, ey, hz, .. } = &mut self.g;
        let data = 3 * (n * n * 8) as u64;
        if p == 0 {
            let hz_all: &[f64] = hz;
            let band = (Rows(&mut ey[..], n), Rows(&mut ex[..], n));
            crate::placement::sweep(f, band, 0, self.grain, data, &|first,
                                                                    (
                Rows(ey, _),
                Rows(ex, _),
            )| {
                e_rows(n, t, first, ey, ex, hz_all)
            });
        } else {
            let (ex_all, ey_all): (&[f64], &[f64]) = (ex, ey);
            let band = Rows(&mut hz[..(n - 1) * n], n);
            crate::placement::sweep(f, band, 0, self.grain, data, &|first, Rows(hz, _)| {
                h_rows(n, first, hz, ex_all, ey_all)
            });
        }
    }

    fn compare(&self, twin: &Placed) -> Result<(), String> {
        match first_difference(&self.g, &twin.g) {
            None => Ok(()),
            Some((field, k, a, b)) => Err(format!(
                "fdtd-2d({}): {field}[{k}] is {a:e}, the serial twin's {b:e}",
                self.g.n
            )),
        }
    }

    fn answer(&self) -> String {
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        format!("hz sum {:.9e}", sum(&self.g.hz))
    }
}

/// The first point where two fields (of the same length) differ in their bits: the field's name,
/// the index, the two values.
fn first_difference(got: &Fields, want: &Fields) -> Option<(&'static str, usize, f64, f64)> {
    [
        ("ex", &got.ex, &want.ex),
        ("ey", &got.ey, &want.ey),
        ("hz", &got.hz, &want.hz),
    ]
    .into_iter()
    .find_map(|(name, a, b)| first_bit_difference(a, b).map(|k| (name, k, a[k], b[k])))
}

/// The FDTD-2D workload.
pub struct Fdtd2d;

static DEF: Def = Def {
    declares_leaves: true,
    placement: Some(PLACEMENT),
    ..workload::def::<Fdtd2d>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Fdtd2d {
    const INFO: Info = Info {
        name: "fdtd-2d",
        // The thesis's section and table were not at hand when this was written.
        source: "Lifflander's thesis (PolyBench fdtd-2d)",
        n_meaning: "grid side (ex, ey, hz are n*n), 100 time steps",
        ci: 160,
        default: 1408,
        // The thesis's grid was not at hand: 2000 (3 fields of 32 MiB) stands in, the order of
        // PolyBench's largest data sets.
        paper: 2000,
        min_n: 1,
        // Three fields of n^2 f64 per copy, and three copies (the input, the run's, `expected`):
        // 4.5 GiB at 8192, about 34 times the default's work; 32768 would need 72 GiB.
        max_n: 8192,
        grain: 16,
        grain_meaning: "rows updated by one task in each sweep",
    };
    type Shared = ();
    type Input = Fields;
    type Output = ();
    type Expected = Fields;

    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Fields {
        input(n as usize)
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, _: &(), g: &mut Fields) {
        run(f, g, grain)
    }
    fn expected(n: u64, _: &()) -> Fields {
        let mut g = input(n as usize);
        plain(&mut g);
        g
    }
    fn answer(_: u64, _: &(), g: &Fields, _: &()) -> String {
        format!(
            "ex sum {}, ey sum {}, hz sum {}",
            sum12(&g.ex),
            sum12(&g.ey),
            sum12(&g.hz)
        )
    }
    fn verify(n: u64, _: &(), want: &Fields, got: &Fields, _: ()) -> Result<(), String> {
        let len = want.ex.len();
        if got.n != want.n || [&got.ex, &got.ey, &got.hz].iter().any(|v| v.len() != len) {
            return Err(format!(
                "fdtd-2d({n}): fields of side {} with {}/{}/{} points, expected {len} each",
                got.n,
                got.ex.len(),
                got.ey.len(),
                got.hz.len()
            ));
        }
        match first_difference(got, want) {
            None => Ok(()),
            Some((name, k, a, b)) => {
                let n = want.n;
                Err(format!(
                    "fdtd-2d({n}): {name} at ({}, {}) is {a:e}, the plain loops give {b:e}",
                    k / n,
                    k % n
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;

    #[test]
    fn every_version_matches_the_plain_loops() {
        crate::workload::check_everywhere::<Fdtd2d>(&[1, 2, 7, 40], &[1, 3, 16]);
    }

    #[test]
    fn fields_stay_finite_and_boundaries_follow_the_scheme() {
        let n = 24;
        let g0 = input(n);
        let mut g = g0.clone();
        run(&mut Serial, &mut g, 4);
        assert!(g.ex.iter().chain(&g.ey).chain(&g.hz).all(|x| x.is_finite()));
        for j in 0..n {
            // The source row holds the last step's value; ex's first column and hz's last row
            // and column are never written.
            assert_eq!(g.ey[j], fict(STEPS - 1));
            assert_eq!(g.ex[j * n], g0.ex[j * n]);
            assert_eq!(g.hz[(n - 1) * n + j], g0.hz[(n - 1) * n + j]);
            assert_eq!(g.hz[j * n + n - 1], g0.hz[j * n + n - 1]);
        }
        // Everything else moved.
        assert_ne!(g.hz[n + 1], g0.hz[n + 1]);
        assert_ne!(g.ex[n + 1], g0.ex[n + 1]);
        assert_ne!(g.ey[n + 1], g0.ey[n + 1]);
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 20;
        let want = Fdtd2d::expected(n, &());
        let mut g = Fdtd2d::input(n, &());
        run(&mut Serial, &mut g, 3);
        assert_eq!(Fdtd2d::verify(n, &(), &want, &g, ()), Ok(()));
        for (k, field) in [(0, "ex"), (1, "ey"), (2, "hz")] {
            let mut bad = g.clone();
            let v = match k {
                0 => &mut bad.ex,
                1 => &mut bad.ey,
                _ => &mut bad.hz,
            };
            v[5 * 20 + 9] = f64::from_bits(v[5 * 20 + 9].to_bits() ^ 1);
            let e = Fdtd2d::verify(n, &(), &want, &bad, ()).unwrap_err();
            assert!(e.contains(field) && e.contains("(5, 9)"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        // No steps is not the result.
        assert!(Fdtd2d::verify(n, &(), &want, &Fdtd2d::input(n, &()), ()).is_err());
    }
}
