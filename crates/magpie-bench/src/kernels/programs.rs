//! Ordinary rayon programs, written once on `rayon::prelude` ([`on_rayon`]). The serial twins
//! ([`serial`]) are the same programs on std's sequential iterators (`iter()` for `par_iter()`,
//! `sort_unstable` for `par_sort_unstable`, ...).
//!
//! - `mandelbrot`: the iterations until escape (at most 200) of every pixel of an `n`×`n` image,
//!   summed (`into_par_iter().map().sum()` over the pixels).
//! - `par-sort-unstable`: `par_sort_unstable` of `n` random `u64` keys.
//! - `par-sort-by-key`: the stable `par_sort_by_key` of `n` pairs on keys in 0..1000.
//! - `nbody-step`: one step of direct n-body over `par_iter_mut().zip(par_iter())`: every body's
//!   velocity from every other body's pull.
//! - `word-count`: a word count of `n` lines of eight words, `fold` into maps then `reduce`.
//! - `fine-sum`: a fine-grained `map().sum()` of `n` floats.
//! - `spmv`: a sparse matrix-vector product, `n` rows of 1–16 nonzeros each, one row per item.
//!
//! Every run's result is checked against the serial twin's: exactly for the integers, the sorts
//! and the word counts; bit for bit for the n-body velocities and the spmv rows (each is summed in
//! the same order by every version); within 1e-9 relative for the float sum, whose additions the
//! parallel versions group differently.
//!
//! magpie runs these programs the way its users do: rayon's own iterators on magpie's rayon-core
//! (the patch line in the README). One program cannot link two rayon-cores, so that takes a
//! second build of the same source. `scripts/build-rayon-compare.sh` builds `rayon-core/compare`
//! twice, with and without the patch, and `magpie bench` and `magpie suite` run both builds for
//! magpie's figure and for rayon's ([`crate::Peer::RayonIter`]). In this crate's own build a
//! rayon pool is rayon on its own core, and a magpie pool has no version of these programs
//! ([`measure`] says so).

use crate::kernel::{self, Def, Kernel};
use crate::Peer;

use crate::harness::{self, abs_sum12, answered, sig12, sum12, Measured, RunError};
use crate::workload::{cached, Runtime};
use std::collections::HashMap;

/// One of the programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// Escape iterations of an `n`×`n` Mandelbrot image, summed.
    Mandelbrot,
    /// `par_sort_unstable` of `n` random keys.
    SortUnstable,
    /// `par_sort_by_key` of `n` (key, index) pairs.
    SortByKey,
    /// One direct n-body step of `n` bodies.
    NBodyStep,
    /// A word count of `n` lines.
    WordCount,
    /// `map().sum()` of `n` floats.
    FineSum,
    /// Sparse matrix-vector product with `n` rows.
    Spmv,
}

impl Program {
    /// Every program, in report order.
    pub const ALL: [Program; 7] = [
        Program::Mandelbrot,
        Program::SortUnstable,
        Program::SortByKey,
        Program::NBodyStep,
        Program::WordCount,
        Program::FineSum,
        Program::Spmv,
    ];

    /// The kernel's name on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Program::Mandelbrot => "mandelbrot",
            Program::SortUnstable => "par-sort-unstable",
            Program::SortByKey => "par-sort-by-key",
            Program::NBodyStep => "nbody-step",
            Program::WordCount => "word-count",
            Program::FineSum => "fine-sum",
            Program::Spmv => "spmv",
        }
    }

    /// What `n` means.
    pub const fn n_meaning(self) -> &'static str {
        match self {
            Program::Mandelbrot => "image side (n*n pixels, at most 200 iterations each)",
            Program::SortUnstable => "random u64 keys (par_sort_unstable)",
            Program::SortByKey => "(key < 1000, index) pairs (stable par_sort_by_key)",
            Program::NBodyStep => "bodies (one O(n^2) step, par_iter_mut().zip())",
            Program::WordCount => "lines of 8 words (fold into maps, reduce)",
            Program::FineSum => "floats (map(x*x+1).sum())",
            Program::Spmv => "matrix rows and columns (1-16 nonzeros per row)",
        }
    }

    /// `n` for the `ci`, `default` and `paper` sizes. `ci` takes milliseconds in a debug build;
    /// `default` about 0.1–0.4 s serially in a release build on a 2-core machine (fine-sum, which
    /// only streams memory, 25 ms on its 160 MB); `paper` is the `rayon_programs` example's
    /// scale 1, the inputs of the figures in docs/RESULTS.md.
    pub const fn sizes(self) -> (u64, u64, u64) {
        match self {
            Program::Mandelbrot => (48, 1_500, 600),
            Program::SortUnstable => (20_000, 10_000_000, 2_000_000),
            Program::SortByKey => (20_000, 8_000_000, 2_000_000),
            Program::NBodyStep => (96, 10_000, 1_500),
            Program::WordCount => (1_000, 1_000_000, 200_000),
            Program::FineSum => (50_000, 20_000_000, 5_000_000),
            Program::Spmv => (2_000, 2_000_000, 200_000),
        }
    }

    /// The largest `n` accepted (the smallest is 1).
    pub const fn max_n(self) -> u64 {
        match self {
            Program::Mandelbrot => 1 << 15,
            Program::SortUnstable | Program::SortByKey => 1 << 30,
            Program::NBodyStep => 1 << 17,
            Program::WordCount => 1 << 26,
            Program::FineSum => 1 << 31,
            Program::Spmv => 1 << 27,
        }
    }
}

/// A sparse matrix in CSR form and the vector it multiplies.
#[derive(Clone, Debug)]
pub struct Csr {
    /// Row `r`'s nonzeros are `cols[rows[r]..rows[r + 1]]` and `vals[..]`.
    pub rows: Vec<usize>,
    /// Column of each nonzero.
    pub cols: Vec<usize>,
    /// Value of each nonzero.
    pub vals: Vec<f64>,
    /// The vector.
    pub x: Vec<f64>,
}

/// Counts per word.
pub type Counts = HashMap<String, usize>;

/// A xorshift64 stream from `seed`.
fn stream(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// `n` random keys.
pub fn keys(n: usize) -> Vec<u64> {
    let mut r = stream(0x9e37_79b9_7f4a_7c15);
    (0..n).map(|_| r()).collect()
}

/// `n` pairs (a key below 1000, the pair's index): a stable sort on the key keeps the indices of
/// equal keys ascending.
pub fn pairs(n: usize) -> Vec<(u32, u64)> {
    let mut r = stream(0x2545_f491_4f6c_dd1d);
    (0..n as u64).map(|i| ((r() % 1000) as u32, i)).collect()
}

/// `n` bodies at random positions in a 100-wide cube.
pub fn bodies(n: usize) -> Vec<[f64; 3]> {
    let mut r = stream(0x6a09_e667_f3bc_c909);
    (0..n)
        .map(|_| [0, 1, 2].map(|_| (r() % 10_000) as f64 / 100.0))
        .collect()
}

/// `n` lines of eight words from a ten-word vocabulary.
pub fn text(n: usize) -> Vec<String> {
    let words = [
        "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "magpie", "rayon",
    ];
    let mut r = stream(0xbb67_ae85_84ca_a73b);
    (0..n)
        .map(|_| {
            (0..8)
                .map(|_| words[(r() % 10) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// `n` floats in [0, 1).
pub fn floats(n: usize) -> Vec<f64> {
    (0..n).map(|i| (i % 1000) as f64 * 1e-3).collect()
}

/// An `n`×`n` sparse matrix with 1–16 nonzeros per row at random columns, and a vector.
pub fn csr(n: usize) -> Csr {
    let mut r = stream(0x3c6e_f372_fe94_f82b);
    let (mut rows, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for _ in 0..n {
        for _ in 0..(r() % 16 + 1) {
            cols.push((r() % n as u64) as usize);
            vals.push((r() % 100) as f64 * 0.01);
        }
        rows.push(cols.len());
    }
    let x = (0..n).map(|i| (i % 7) as f64).collect();
    Csr {
        rows,
        cols,
        vals,
        x,
    }
}

/// Iterations until pixel `p` of a side × side Mandelbrot image escapes (at most 200).
pub fn escape(p: usize, side: usize) -> u64 {
    let (cx, cy) = (
        (p % side) as f64 / side as f64 * 3.0 - 2.0,
        (p / side) as f64 / side as f64 * 2.0 - 1.0,
    );
    let (mut x, mut y, mut i) = (0.0f64, 0.0f64, 0u64);
    while i < 200 && x * x + y * y <= 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        i += 1;
    }
    i
}

/// Body `p`'s velocity after one step: the pull of every body of `b` (itself adds nothing).
pub fn pull(v: &mut [f64; 3], p: &[f64; 3], b: &[[f64; 3]]) {
    for q in b {
        let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 0.01;
        let f = 1.0 / (r2 * r2.sqrt());
        for k in 0..3 {
            v[k] += d[k] * f;
        }
    }
}

/// Counts `line`'s words into `m`.
pub fn count_words(mut m: Counts, line: impl AsRef<str>) -> Counts {
    for w in line.as_ref().split(' ') {
        *m.entry(w.to_string()).or_insert(0) += 1;
    }
    m
}

/// Row `r` of A · x.
pub fn row(a: &Csr, r: usize) -> f64 {
    (a.rows[r]..a.rows[r + 1])
        .map(|k| a.vals[k] * a.x[a.cols[k]])
        .sum()
}

/// The programs on `rayon::prelude`. Run in a rayon pool's `install`, they are rayon on its own
/// core, or rayon on magpie's in a build that patches rayon-core to magpie's.
pub mod on_rayon {
    use super::{count_words, escape, pull, row, Counts, Csr};
    use rayon::prelude::*;
    use std::collections::HashMap;

    /// Iterations until escape, per pixel of a side × side image, summed.
    pub fn mandelbrot(side: usize) -> u64 {
        (0..side * side)
            .into_par_iter()
            .map(|p| escape(p, side))
            .sum()
    }

    /// Sorts the keys in place, unstably.
    pub fn sort_unstable(keys: &mut [u64]) {
        keys.par_sort_unstable();
    }

    /// Sorts the pairs by their first element, stably.
    pub fn sort_by_key(pairs: &mut [(u32, u64)]) {
        pairs.par_sort_by_key(|e| e.0);
    }

    /// One step: every body's velocity from every other's pull.
    pub fn nbody(b: &[[f64; 3]]) -> Vec<[f64; 3]> {
        let mut vel = vec![[0.0; 3]; b.len()];
        vel.par_iter_mut()
            .zip(b.par_iter())
            .for_each(|(v, p)| pull(v, p, b));
        vel
    }

    /// How often each word occurs.
    pub fn word_count(text: &[String]) -> Counts {
        text.par_iter()
            .fold(HashMap::new, count_words)
            .reduce(HashMap::new, |mut a, b| {
                for (k, v) in b {
                    *a.entry(k).or_insert(0) += v;
                }
                a
            })
    }

    /// The sum of x² + 1.
    pub fn fine_sum(floats: &[f64]) -> f64 {
        floats.par_iter().map(|x| x * x + 1.0).sum()
    }

    /// A · x, one row per item.
    pub fn spmv(a: &Csr) -> Vec<f64> {
        (0..a.rows.len() - 1)
            .into_par_iter()
            .map(|r| row(a, r))
            .collect()
    }
}

/// The serial twins: the same programs on std's sequential iterators.
pub mod serial {
    use super::{count_words, escape, pull, row, Counts, Csr};
    use std::collections::HashMap;

    /// Iterations until escape, per pixel of a side × side image, summed.
    pub fn mandelbrot(side: usize) -> u64 {
        (0..side * side).map(|p| escape(p, side)).sum()
    }

    /// Sorts the keys in place, unstably.
    pub fn sort_unstable(keys: &mut [u64]) {
        keys.sort_unstable();
    }

    /// Sorts the pairs by their first element, stably.
    pub fn sort_by_key(pairs: &mut [(u32, u64)]) {
        pairs.sort_by_key(|e| e.0);
    }

    /// One step: every body's velocity from every other's pull.
    pub fn nbody(b: &[[f64; 3]]) -> Vec<[f64; 3]> {
        let mut vel = vec![[0.0; 3]; b.len()];
        vel.iter_mut()
            .zip(b.iter())
            .for_each(|(v, p)| pull(v, p, b));
        vel
    }

    /// How often each word occurs.
    pub fn word_count(text: &[String]) -> Counts {
        text.iter().fold(HashMap::new(), count_words)
    }

    /// The sum of x² + 1.
    pub fn fine_sum(floats: &[f64]) -> f64 {
        floats.iter().map(|x| x * x + 1.0).sum()
    }

    /// A · x, one row per item.
    pub fn spmv(a: &Csr) -> Vec<f64> {
        (0..a.rows.len() - 1).map(|r| row(a, r)).collect()
    }
}

/// Whether two float sums agree to 1e-9, relative (absolute below 1).
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// The first place `got` differs from the serial twin's `want`, as one line.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} items, the serial twin has {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: item {i} is {:?}, the serial twin's is {:?}",
            got[i], want[i]
        )),
    }
}

/// Floats compared bit for bit (each is summed in the same order as the serial twin's).
fn same_bits(what: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    same(what, &bits(got), &bits(want)).map_err(|_| {
        let i = got
            .iter()
            .zip(want)
            .position(|(a, b)| a.to_bits() != b.to_bits())
            .unwrap_or(0);
        match (got.get(i), want.get(i)) {
            (Some(g), Some(w)) if got.len() == want.len() => {
                format!("{what}: value {i} is {g:e}, the serial twin's is {w:e} (not bit-equal)")
            }
            _ => format!(
                "{what}: {} values, the serial twin has {}",
                got.len(),
                want.len()
            ),
        }
    })
}

/// Times `runs` runs of program `p` at size `n` on `rt` (the serial twin, or the program in a
/// rayon pool; a magpie or chili pool is refused with why), each checked
/// against the serial twin's result. The input and that result are built once (untimed) and
/// kept for the next measurement of the same program and size ([`cached`]); a sort's fresh copy
/// of the input is made before each run, untimed.
pub fn measure(p: Program, rt: &Runtime<'_>, n: u64, runs: usize) -> Result<Measured, RunError> {
    if !(1..=p.max_n()).contains(&n) {
        return Err(RunError::Setup(format!(
            "invalid n `{n}` for {}: expected a whole number between 1 and {} ({})",
            p.name(),
            p.max_n(),
            p.n_meaning()
        )));
    }
    if let Runtime::Magpie(_) = rt {
        return Err(RunError::Setup(format!(
            "{} is a rayon program: magpie runs it as rayon's iterators on magpie's rayon-core, \
             a build of its own (scripts/build-rayon-compare.sh)",
            p.name()
        )));
    }
    if let Runtime::Chili(_) = rt {
        return Err(RunError::Setup(format!(
            "chili has no version of {}: it has only join, no parallel iterators",
            p.name()
        )));
    }
    let len = n as usize;
    // The same program on the runtime asked for.
    macro_rules! on {
        ($f:ident($($arg:expr),*)) => {
            match rt {
                Runtime::Serial => serial::$f($($arg),*),
                Runtime::Magpie(_) => unreachable!("refused above"),
                Runtime::Rayon(pool) => pool.install(|| on_rayon::$f($($arg),*)),
                Runtime::Chili(_) => unreachable!("refused above"),
            }
        };
    }
    // One cache entry per program and size: the input and the serial twin's result together.
    let key = (p.name(), n);
    match p {
        Program::Mandelbrot => {
            let want = *cached(key, || serial::mandelbrot(len));
            harness::measure(
                runs,
                || (),
                |_| on!(mandelbrot(len)),
                |_, got| {
                    (got == want)
                        .then(|| format!("{got} iterations"))
                        .ok_or_else(|| {
                            format!("mandelbrot: {got} iterations, the serial twin {want}")
                        })
                },
            )
        }
        Program::SortUnstable => {
            let d = cached(key, || {
                let k = keys(len);
                let mut s = k.clone();
                serial::sort_unstable(&mut s);
                (k, s)
            });
            harness::measure(
                runs,
                || d.0.clone(),
                |v| on!(sort_unstable(v)),
                |v, ()| {
                    answered(same("par_sort_unstable", v, &d.1), || {
                        crate::kernels::sort::answer(v.iter().copied())
                    })
                },
            )
        }
        Program::SortByKey => {
            let d = cached(key, || {
                let k = pairs(len);
                let mut s = k.clone();
                serial::sort_by_key(&mut s);
                (k, s)
            });
            harness::measure(
                runs,
                || d.0.clone(),
                |v| on!(sort_by_key(v)),
                |v, ()| {
                    // Each (key, index) pair as one number, key · 2^32 + index (n < 2^32).
                    answered(same("par_sort_by_key", v, &d.1), || {
                        crate::kernels::sort::answer(v.iter().map(|&(k, i)| (u64::from(k) << 32) + i))
                    })
                },
            )
        }
        Program::NBodyStep => {
            let d = cached(key, || {
                let b = bodies(len);
                let v = serial::nbody(&b);
                (b, v)
            });
            let b = &d.0;
            harness::measure(
                runs,
                || (),
                |_| on!(nbody(b)),
                |_, got| {
                    let v = got.as_flattened();
                    answered(
                        same_bits("nbody-step velocities", v, d.1.as_flattened()),
                        // The plain sum cancels to about 0 (the pulls are pairwise opposite).
                        || format!("velocity abs sum {}", abs_sum12(v)),
                    )
                },
            )
        }
        Program::WordCount => {
            let d = cached(key, || {
                let t = text(len);
                let c = serial::word_count(&t);
                (t, c)
            });
            let t = &d.0;
            harness::measure(
                runs,
                || (),
                |_| on!(word_count(t)),
                |_, got| {
                    if got == d.1 {
                        let total: usize = got.values().sum();
                        return Ok(format!("{} distinct words, {total} in all", got.len()));
                    }
                    let mut words: Vec<&String> = got.keys().chain(d.1.keys()).collect();
                    words.sort_unstable();
                    let w = words
                        .into_iter()
                        .find(|w| got.get(*w) != d.1.get(*w))
                        .expect("the maps differ somewhere");
                    Err(format!(
                        "word-count: `{w}` counted {:?}, the serial twin {:?}",
                        got.get(w),
                        d.1.get(w)
                    ))
                },
            )
        }
        Program::FineSum => {
            let d = cached(key, || {
                let f = floats(len);
                let s = serial::fine_sum(&f);
                (f, s)
            });
            let f = &d.0;
            harness::measure(
                runs,
                || (),
                |_| on!(fine_sum(f)),
                |_, got| {
                    close(got, d.1)
                        .then(|| format!("sum {}", sig12(got)))
                        .ok_or_else(|| {
                            format!("fine-sum: {got:e}, the serial twin {:e} (beyond 1e-9)", d.1)
                        })
                },
            )
        }
        Program::Spmv => {
            let d = cached(key, || {
                let a = csr(len);
                let y = serial::spmv(&a);
                (a, y)
            });
            let a = &d.0;
            harness::measure(
                runs,
                || (),
                |_| on!(spmv(a)),
                |_, got| {
                    answered(same_bits("spmv rows", &got, &d.1), || {
                        format!("y sum {}", sum12(&got))
                    })
                },
            )
        }
    }
}

/// A program's kernel record: its names and sizes from [`Program`], rayon's iterators as its
/// one peer, and [`measure`] of the case's program.
const fn def(p: Program) -> Def {
    let (ci, default, paper) = p.sizes();
    Def {
        name: p.name(),
        n_meaning: p.n_meaning(),
        sizes: [ci, default, paper],
        max_n: p.max_n(),
        peers: &[Peer::RayonIter],
        unavailable_peers: &[
            (
                "chili",
                "chili has only join, no parallel iterators: the program is written on \
                 rayon's prelude",
            ),
            (
                "tbb",
                "no C++ version: the program is written on rayon's prelude",
            ),
            (
                "openmp",
                "no C++ version: the program is written on rayon's prelude",
            ),
        ],
        rayon_program: true,
        measure: |rt, case, runs| {
            let name = case.kernel.name();
            let p = Program::ALL.into_iter().find(|p| p.name() == name);
            measure(p.expect("a program's kernel"), rt, case.n, runs)
        },
        ..kernel::NONE
    }
}

static DEFS: [Def; 7] = [
    def(Program::Mandelbrot),
    def(Program::SortUnstable),
    def(Program::SortByKey),
    def(Program::NBodyStep),
    def(Program::WordCount),
    def(Program::FineSum),
    def(Program::Spmv),
];
/// mandelbrot, as the registry lists it.
pub const MANDELBROT: Kernel = Kernel::new(&DEFS[0]);
/// par-sort-unstable, as the registry lists it.
pub const PAR_SORT_UNSTABLE: Kernel = Kernel::new(&DEFS[1]);
/// par-sort-by-key, as the registry lists it.
pub const PAR_SORT_BY_KEY: Kernel = Kernel::new(&DEFS[2]);
/// nbody-step, as the registry lists it.
pub const NBODY_STEP: Kernel = Kernel::new(&DEFS[3]);
/// word-count, as the registry lists it.
pub const WORD_COUNT: Kernel = Kernel::new(&DEFS[4]);
/// fine-sum, as the registry lists it.
pub const FINE_SUM: Kernel = Kernel::new(&DEFS[5]);
/// spmv, as the registry lists it.
pub const SPMV: Kernel = Kernel::new(&DEFS[6]);

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(what: &str, r: Result<Measured, RunError>) {
        match r {
            Ok(m) => assert!(m.verified, "{what}: {:?}", m.failure),
            Err(e) => panic!("{what}: {e}"),
        }
    }

    /// Every program at its ci size on the serial twin, on magpie under every policy at 1 and 2
    /// workers, and on rayon at 1 and 2 threads, each checked against the serial twin; chili and a
    /// magpie pool (these programs reach magpie through rayon-core, in another build) are refused
    /// with one line.
    #[test]
    fn every_program_verifies_everywhere() {
        let magpie = magpie::Pool::builder().workers(2).build().unwrap();
        let rayons: Vec<_> = [1, 2]
            .map(|w| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap()
            })
            .into();
        let chili = chili::ThreadPool::new();
        for p in Program::ALL {
            let n = p.sizes().0;
            ok(p.name(), measure(p, &Runtime::Serial, n, 1));
            for pool in &rayons {
                ok(p.name(), measure(p, &Runtime::Rayon(pool), n, 1));
            }
            for (rt, says) in [
                (Runtime::Chili(&chili), "parallel iterators"),
                (Runtime::Magpie(&magpie), "build-rayon-compare.sh"),
            ] {
                let e = measure(p, &rt, n, 1).unwrap_err();
                assert!(
                    matches!(e, RunError::Setup(ref m) if !m.contains('\n') && m.contains(says)),
                    "{e}"
                );
            }
            for bad in [0, p.max_n() + 1] {
                let e = measure(p, &Runtime::Serial, bad, 1).unwrap_err();
                assert!(e.to_string().contains(p.name()), "{e}");
            }
        }
    }

    /// The checks catch a wrong result: a sort that leaves two keys swapped, a float off in its
    /// last bit, a sum off by more than 1e-9.
    #[test]
    fn checks_catch_wrong_results() {
        let mut k = keys(100);
        serial::sort_unstable(&mut k);
        let mut bad = k.clone();
        bad.swap(3, 4);
        assert!(same("sort", &k, &k).is_ok());
        assert!(same("sort", &bad, &k).unwrap_err().contains("item 3"));
        let a = vec![1.0f64, 2.0, 3.0];
        let mut b = a.clone();
        b[2] = f64::from_bits(b[2].to_bits() + 1);
        assert!(same_bits("v", &a, &a).is_ok());
        assert!(same_bits("v", &b, &a).unwrap_err().contains("value 2"));
        assert!(close(1e6 + 1e-4, 1e6) && !close(1e6 + 1e-2, 1e6));
        // The stable sort keeps equal keys' indices ascending.
        let mut p = pairs(5000);
        serial::sort_by_key(&mut p);
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0 || w[0].1 < w[1].1));
        // The inputs' sizes.
        let a = csr(50);
        assert_eq!((a.rows.len(), a.x.len()), (51, 50));
        assert_eq!(text(3).len(), 3);
        assert_eq!(serial::word_count(&text(10)).values().sum::<usize>(), 80);
    }
}
