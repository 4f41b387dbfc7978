//! FFT: the discrete Fourier transform of `n` = 2^k complex points (`n` is the number of
//! points, a power of two), the "FFT" benchmark of CAB (Chen et al., ICPP 2011) and DWS, after
//! Cilk's fft, here as the textbook recursive radix-2 decimation in time:
//!
//! ```text
//! Y[k]       = E[k] + w^k O[k]
//! Y[k + n/2] = E[k] - w^k O[k]        (0 <= k < n/2, w = exp(-2πi / n))
//! ```
//!
//! where `E` and `O` are the transforms of the even- and odd-indexed points. The transform is
//! out of place: `x` is read with a stride (each level doubles it) and `Y` is written into the
//! output, whose first half receives `E` and second half `O` (split with `split_at_mut`), so the
//! butterflies then work in place on the two halves. The two half transforms run in parallel
//! with `join`, and so does the butterfly loop, split in halves down to `grain` butterflies; a
//! transform of at most `grain` points (or 2) runs serially ([`transform_serial`]), with the
//! 2-point transform written out. The twiddle factors `w^k` come from one table for the full
//! size, computed once per measurement ([`twiddles`]): a transform of `m` points reads every
//! `n/m`-th entry.
//!
//! Every version does the same floating-point operations in the same order, whatever the grain
//! (the grain only decides which calls fork), so results are compared bit for bit with the
//! serial twin's, computed once in [`Fft::expected`]. The tests compare the transform with a
//! naive O(n²) DFT at small sizes, within a tolerance, and check that the inverse transform gives
//! back the input.

use crate::kernel::{Def, Kernel};
use crate::common::{self, for_row_bands, SplitMix64};
use crate::fork::Fork;
use crate::harness::sum12;
use crate::workload::{self, Info, Workload};

/// A complex number.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Complex {
    /// The real part.
    pub re: f64,
    /// The imaginary part.
    pub im: f64,
}

impl Complex {
    /// `re + i im`.
    pub const fn new(re: f64, im: f64) -> Complex {
        Complex { re, im }
    }
    /// The complex conjugate.
    pub fn conj(self) -> Complex {
        Complex::new(self.re, -self.im)
    }
}

impl std::ops::Add for Complex {
    type Output = Complex;
    fn add(self, o: Complex) -> Complex {
        Complex::new(self.re + o.re, self.im + o.im)
    }
}

impl std::ops::Sub for Complex {
    type Output = Complex;
    fn sub(self, o: Complex) -> Complex {
        Complex::new(self.re - o.re, self.im - o.im)
    }
}

impl std::ops::Mul for Complex {
    type Output = Complex;
    fn mul(self, o: Complex) -> Complex {
        Complex::new(
            self.re * o.re - self.im * o.im,
            self.re * o.im + self.im * o.re,
        )
    }
}

/// The twiddle factors of an `n`-point transform: `w^k = exp(-2πik / n)` for `k < n/2`.
pub fn twiddles(n: usize) -> Vec<Complex> {
    (0..n / 2)
        .map(|k| {
            let (s, c) = (-2.0 * std::f64::consts::PI * k as f64 / n as f64).sin_cos();
            Complex::new(c, s)
        })
        .collect()
}

/// The `n` input points: real and imaginary parts pseudo-random in [-1, 1) (SplitMix64).
pub fn signal(n: usize) -> Vec<Complex> {
    let mut rng = SplitMix64(0x4646_5400_0000_0000);
    (0..n)
        .map(|_| Complex::new(rng.next_signed_f64(), rng.next_signed_f64()))
        .collect()
}

/// The butterflies `k0..k0 + lo.len()` of a transform whose twiddles are every `step`-th entry of
/// `tw`: `lo` holds `E[k]`, `hi` holds `O[k]`, and both are replaced by `Y[k]` and `Y[k + m/2]`.
fn butterflies(lo: &mut [Complex], hi: &mut [Complex], tw: &[Complex], k0: usize, step: usize) {
    for (k, (a, b)) in lo.iter_mut().zip(hi).enumerate() {
        let t = tw[(k0 + k) * step] * *b;
        let e = *a;
        *a = e + t;
        *b = e - t;
    }
}

/// The transform of the points `x[0], x[stride], x[2 stride], …` (as many as `y` is long, a power
/// of two) into `y`, serially; `tw` is the twiddle table of the full size, whose every
/// `stride`-th entry this size uses.
pub fn transform_serial(x: &[Complex], stride: usize, y: &mut [Complex], tw: &[Complex]) {
    match y.len() {
        1 => y[0] = x[0],
        2 => {
            let (a, b) = (x[0], x[stride]);
            y[0] = a + b;
            y[1] = a - b;
        }
        m => {
            let (lo, hi) = y.split_at_mut(m / 2);
            transform_serial(x, 2 * stride, lo, tw);
            transform_serial(&x[stride..], 2 * stride, hi, tw);
            butterflies(lo, hi, tw, 0, stride);
        }
    }
}

/// [`transform_serial`] with the half transforms forked down to `grain` points and the
/// butterflies split in halves down to `grain` ([`for_row_bands`]: butterfly k is row k).
fn transform<F: Fork>(
    f: &mut F,
    x: &[Complex],
    stride: usize,
    y: &mut [Complex],
    tw: &[Complex],
    grain: usize,
) {
    let m = y.len();
    if m <= grain.max(2) {
        return transform_serial(x, stride, y, tw);
    }
    let (lo, hi) = y.split_at_mut(m / 2);
    f.join(
        |f| transform(f, x, 2 * stride, lo, tw, grain),
        |f| transform(f, &x[stride..], 2 * stride, hi, tw, grain),
    );
    for_row_bands(f, (lo, hi), 0, grain, &|k0, (lo, hi)| {
        butterflies(lo, hi, tw, k0, stride)
    });
}

/// One run's data: the input points and the output buffer (same length).
#[derive(Clone, Debug)]
pub struct Signal {
    /// The input points.
    pub x: Vec<Complex>,
    /// The transform (written by the run).
    pub y: Vec<Complex>,
}

/// The kernel over any [`Fork`]: the transform of `s.x` into `s.y`; `tw` is [`twiddles`] of
/// their length.
pub fn run<F: Fork>(f: &mut F, s: &mut Signal, tw: &[Complex], grain: u64) {
    let grain = grain.min(s.y.len() as u64) as usize;
    transform(f, &s.x, 1, &mut s.y, tw, grain);
}

/// The FFT workload.
pub struct Fft;

static DEF: Def = workload::def::<Fft>();
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Fft {
    const INFO: Info = Info {
        name: "fft",
        source: "CAB (Chen et al., ICPP 2011) and DWS FFT (Cilk's fft), recursive radix 2",
        n_meaning: "points, a power of two",
        ci: 1 << 16,
        default: 1 << 22,
        // The papers' size is not recorded here; 2^26 points take 3.5 GiB (input, output,
        // expected and twiddles).
        paper: 1 << 26,
        min_n: 1,
        max_n: 1 << 27,
        grain: 2048,
        grain_meaning: "points of a transform run serially, and butterflies per task",
    };
    type Shared = Vec<Complex>;
    type Input = Signal;
    type Output = ();
    type Expected = Vec<Complex>;

    fn check_n(n: u64) -> Result<(), String> {
        let i = Self::INFO;
        common::check_power_of_two(i.name, n, i.min_n, i.max_n, "points")
    }
    fn shared(n: u64) -> Vec<Complex> {
        twiddles(n as usize)
    }
    fn input(n: u64, _: &Vec<Complex>) -> Signal {
        let n = n as usize;
        Signal {
            x: signal(n),
            y: vec![Complex::default(); n],
        }
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, tw: &Vec<Complex>, s: &mut Signal) {
        run(f, s, tw, grain)
    }
    fn expected(n: u64, tw: &Vec<Complex>) -> Vec<Complex> {
        let x = signal(n as usize);
        let mut y = vec![Complex::default(); n as usize];
        transform_serial(&x, 1, &mut y, tw);
        y
    }
    fn answer(_: u64, _: &Vec<Complex>, s: &Signal, _: &()) -> String {
        let re: Vec<f64> = s.y.iter().map(|c| c.re).collect();
        let im: Vec<f64> = s.y.iter().map(|c| c.im).collect();
        format!("sum re {}, im {}", sum12(&re), sum12(&im))
    }
    fn verify(
        n: u64,
        _: &Vec<Complex>,
        want: &Vec<Complex>,
        got: &Signal,
        _: (),
    ) -> Result<(), String> {
        let same = |a: &Complex, b: &Complex| {
            a.re.to_bits() == b.re.to_bits() && a.im.to_bits() == b.im.to_bits()
        };
        if got.y.len() != want.len() {
            return Err(format!(
                "fft({n}): {} points, expected {}",
                got.y.len(),
                want.len()
            ));
        }
        match got.y.iter().zip(want).position(|(a, b)| !same(a, b)) {
            None => Ok(()),
            Some(k) => Err(format!(
                "fft({n}): point {k} is {:e}{:+e}i, the serial twin gives {:e}{:+e}i",
                got.y[k].re, got.y[k].im, want[k].re, want[k].im
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Magpie, Serial};

    #[test]
    fn every_version_matches_the_serial_twin() {
        crate::workload::check_everywhere::<Fft>(&[1, 2, 4, 64, 2048], &[1, 3, 64]);
    }

    /// The naive O(n²) DFT.
    fn dft(x: &[Complex]) -> Vec<Complex> {
        let n = x.len();
        (0..n)
            .map(|k| {
                x.iter()
                    .enumerate()
                    .fold(Complex::default(), |acc, (j, &v)| {
                        // Reduce j k mod n first, so that the angle stays accurate.
                        let a = -2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                        let (s, c) = a.sin_cos();
                        acc + v * Complex::new(c, s)
                    })
            })
            .collect()
    }

    fn max_diff(a: &[Complex], b: &[Complex]) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(p, q)| (p.re - q.re).abs().max((p.im - q.im).abs()))
            .fold(0.0, f64::max)
    }

    /// The transform of `x` at grain `grain`, serially and on magpie (which must agree bitwise).
    fn fft(x: &[Complex], grain: u64, pool: &magpie::Pool) -> Vec<Complex> {
        let tw = twiddles(x.len());
        let new = || Signal {
            x: x.to_vec(),
            y: vec![Complex::default(); x.len()],
        };
        let mut s = new();
        run(&mut Serial, &mut s, &tw, grain);
        let mut p = new();
        pool.install(|| run(&mut Magpie, &mut p, &tw, grain));
        let bits = |v: &[Complex]| -> Vec<(u64, u64)> {
            v.iter().map(|c| (c.re.to_bits(), c.im.to_bits())).collect()
        };
        assert_eq!(bits(&s.y), bits(&p.y), "n = {}, grain {grain}", x.len());
        s.y
    }

    #[test]
    fn matches_the_naive_dft() {
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        for log in 0..=9 {
            let n = 1 << log;
            let x = signal(n);
            let want = dft(&x);
            for grain in [1, 4, 1024] {
                let d = max_diff(&fft(&x, grain, &pool), &want);
                assert!(d < 1e-10, "n = {n}, grain {grain}: off by {d:e}");
            }
        }
    }

    #[test]
    fn inverse_round_trips_and_known_transforms() {
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        let n = 1 << 12;
        let x = signal(n);
        let y = fft(&x, 16, &pool);
        // The inverse: conj(fft(conj(y))) / n.
        let conj: Vec<Complex> = y.iter().map(|c| c.conj()).collect();
        let back: Vec<Complex> = fft(&conj, 16, &pool)
            .iter()
            .map(|c| Complex::new(c.re / n as f64, -c.im / n as f64))
            .collect();
        let d = max_diff(&back, &x);
        assert!(d < 1e-12, "round trip off by {d:e}");
        // An impulse transforms to all ones; a constant to n at 0 and zeros elsewhere.
        let mut impulse = vec![Complex::default(); 64];
        impulse[0] = Complex::new(1.0, 0.0);
        let ones = vec![Complex::new(1.0, 0.0); 64];
        assert_eq!(max_diff(&fft(&impulse, 4, &pool), &ones), 0.0);
        let mut spike = vec![Complex::default(); 64];
        spike[0] = Complex::new(64.0, 0.0);
        assert!(max_diff(&fft(&ones, 4, &pool), &spike) < 1e-12);
    }

    #[test]
    fn wrong_results_and_sizes_are_rejected() {
        let n = 256;
        let tw = Fft::shared(n);
        let want = Fft::expected(n, &tw);
        let mut s = Fft::input(n, &tw);
        assert!(Fft::verify(n, &tw, &want, &s, ()).is_err());
        run(&mut Serial, &mut s, &tw, 8);
        assert_eq!(Fft::verify(n, &tw, &want, &s, ()), Ok(()));
        s.y[77].im = f64::from_bits(s.y[77].im.to_bits() ^ 1);
        let e = Fft::verify(n, &tw, &want, &s, ()).unwrap_err();
        assert!(e.contains("point 77"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        for bad in [0, 3, 96, (1 << 27) + 1, 1 << 28] {
            let e = Fft::check_n(bad).unwrap_err();
            assert!(e.contains("power of two"), "{e}");
        }
    }
}
