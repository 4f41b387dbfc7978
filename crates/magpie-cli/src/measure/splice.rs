//! One splicing run (Lifflander's thesis, Ch. 7): a stencil's time steps spliced against the
//! same steps one after another, and rayon running the suite's unspliced recursion, every
//! spliced run's buffers checked bit for bit against the unspliced run's. `magpie splice` and
//! `magpie suite --splice` ask for one with a [`Splice`].

use crate::failure::Failure;
use crate::model::splice::{Outcome, StatsOut};
use magpie_bench::kernels;
use magpie_bench::spliced::{Fdtd, Heat, Jacobi};
use magpie_splice::kernels::{Seidel, Sliced};
use magpie_splice::splice::{run as splice_run, Mode, Phase};
use magpie_splice::{Grids, Rows, Stats};
use std::time::Instant;

/// A splicing run (see `magpie splice --help` for each field).
pub(crate) struct Splice {
    /// heat, jacobi, fdtd-2d or seidel-2d.
    pub kernel: String,
    /// Grid side.
    pub n: usize,
    /// Time steps (default: the suite's for the kernel).
    pub steps: Option<usize>,
    /// Time steps spliced together.
    pub window: usize,
    /// Rows per step (default: 8192 / n, at least 2).
    pub grain: Option<usize>,
    /// Rows per part of a pipelined step (0: whole steps).
    pub slice: usize,
    /// Workers: 1 runs the spliced walk, more the dependence graph on a pool.
    pub workers: usize,
    /// Timed runs of each version.
    pub runs: usize,
    /// One version only, once: spliced, unspliced or setup.
    pub only: Option<String>,
}

impl Splice {
    /// The grain: given, or 8192 / n rows, at least 2.
    fn grain(&self) -> usize {
        self.grain.unwrap_or((8192 / self.n).max(2))
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A checksum of every buffer's bits, for the answer a user can compare.
fn checksum(g: &mut Grids) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in 0..g.buffers() {
        for x in g.buffer(b) {
            h = (h ^ x.to_bits()).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

struct Measured {
    spliced: Vec<f64>,
    unspliced: Vec<f64>,
    rayon: Vec<f64>,
    stats: Stats,
    checksum: u64,
}

/// Times the versions `a.runs` times each, alternating; checks every spliced run's buffers
/// against the unspliced run's.
fn measure<P>(
    a: &Splice,
    pool: &magpie::Pool,
    grids: &dyn Fn() -> Grids,
    phases: &[P],
    rayon: Option<&dyn Fn() -> f64>,
) -> Result<Measured, Failure>
where
    P: Phase<Effect = Rows, Memory = Grids> + Sync,
    P::Output: Send,
{
    let mode = if a.workers == 1 {
        Mode::Spliced
    } else {
        Mode::Parallel
    };
    // Unspliced: the same steps one phase after another (on the pool, each phase's steps as
    // a graph, when there are several workers).
    let plain_mode = if a.workers == 1 {
        Mode::Unspliced
    } else {
        Mode::Parallel
    };
    let mut m = Measured {
        spliced: Vec::new(),
        unspliced: Vec::new(),
        rayon: Vec::new(),
        stats: Stats::default(),
        checksum: 0,
    };
    if let Some(only) = &a.only {
        let (window, mode) = match only.as_str() {
            "spliced" => (a.window, mode),
            _ => (1, plain_mode),
        };
        let mut g = grids();
        let t = Instant::now();
        let (_, stats) = match only.as_str() {
            "setup" => (Vec::new(), Stats::default()),
            _ => pool.install(|| splice_run(phases, &mut g, window, mode)),
        };
        let secs = t.elapsed().as_secs_f64();
        m.spliced.push(secs);
        m.unspliced.push(secs);
        m.stats = stats;
        m.checksum = checksum(&mut g);
        return Ok(m);
    }
    for _ in 0..a.runs {
        let mut plain = grids();
        let t = Instant::now();
        pool.install(|| splice_run(phases, &mut plain, 1, plain_mode));
        m.unspliced.push(t.elapsed().as_secs_f64());
        let mut spliced = grids();
        let t = Instant::now();
        let (_, stats) = pool.install(|| splice_run(phases, &mut spliced, a.window, mode));
        m.spliced.push(t.elapsed().as_secs_f64());
        m.stats = stats;
        for b in 0..plain.buffers() {
            let same = plain
                .buffer(b)
                .iter()
                .zip(spliced.buffer(b))
                .all(|(x, y)| x.to_bits() == y.to_bits());
            if !same {
                return Err(Failure::Failed(format!(
                    "{}: the spliced run's buffer {b} differs from the unspliced run's",
                    a.kernel
                )));
            }
        }
        m.checksum = checksum(&mut spliced);
        if let Some(r) = rayon {
            m.rayon.push(r());
        }
    }
    Ok(m)
}

/// Measures what `a` asks for (see `run`); an error is one line.
pub(crate) fn outcome(a: &Splice) -> Result<Outcome, Failure> {
    if a.slice > 0 && a.workers > 1 {
        return Err(Failure::Usage(format!(
            "--slice pipelines the spliced walk of one worker; with --workers {} the dependence \
             graph runs whole steps (leave --slice out, or use --workers 1)",
            a.workers
        )));
    }
    let pool = magpie::Pool::builder()
        .workers(a.workers)
        .build()
        .map_err(Failure::from_magpie)?;
    let rayon_pool = rayon_pool(a.workers)?;
    let (n, g) = (a.n, a.grain());
    let timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let (m, steps) = match a.kernel.as_str() {
        "heat" => {
            let steps = a.steps.unwrap_or(kernels::heat::STEPS);
            let rayon = || {
                let mut grid = kernels::heat::input(n as u64);
                timed(&mut || {
                    rayon_pool.install(|| kernels::heat::rayon_join_grain(n as u64, &mut grid, g))
                })
            };
            let suite = steps == kernels::heat::STEPS;
            let m = measure(
                a,
                &pool,
                &|| Heat::grids(n),
                &Sliced::all(Heat::phases(n, steps, g), a.slice),
                suite.then_some(&rayon as &dyn Fn() -> f64),
            )?;
            (m, steps)
        }
        "jacobi" => {
            let steps = a.steps.unwrap_or(kernels::jacobi::STEPS);
            let rayon = || {
                let mut p = kernels::jacobi::input(n as u64);
                timed(&mut || {
                    rayon_pool.install(|| {
                        kernels::jacobi::rayon_join_grain(n as u64, &mut p, g);
                    })
                })
            };
            let suite = steps == kernels::jacobi::STEPS;
            let m = measure(
                a,
                &pool,
                &|| Jacobi::grids(n),
                &Sliced::all(Jacobi::phases(n, steps, g), a.slice),
                suite.then_some(&rayon as &dyn Fn() -> f64),
            )?;
            (m, steps)
        }
        "fdtd-2d" => {
            let steps = a.steps.unwrap_or(kernels::fdtd2d::STEPS);
            let rayon = || {
                let mut f = kernels::fdtd2d::input(n);
                timed(&mut || {
                    rayon_pool.install(|| {
                        kernels::fdtd2d::run(&mut magpie_bench::fork::Rayon, &mut f, g as u64)
                    })
                })
            };
            let suite = steps == kernels::fdtd2d::STEPS;
            let m = measure(
                a,
                &pool,
                &|| Fdtd::grids(n),
                &Sliced::all(Fdtd::phases(n, steps, g), a.slice),
                suite.then_some(&rayon as &dyn Fn() -> f64),
            )?;
            (m, steps)
        }
        _ => {
            let steps = a.steps.unwrap_or(20);
            let m = measure(
                a,
                &pool,
                &|| Seidel::grids(n),
                &Sliced::all(Seidel::phases(n, steps, g), a.slice),
                None,
            )?;
            (m, steps)
        }
    };
    let Measured {
        mut spliced,
        mut unspliced,
        mut rayon,
        stats,
        checksum,
    } = m;
    let (s, u) = (median(&mut spliced), median(&mut unspliced));
    Ok(Outcome {
        kernel: a.kernel.clone(),
        n,
        steps,
        window: a.window,
        grain: g,
        slice: a.slice,
        workers: a.workers,
        runs: a.runs,
        spliced_median_s: s,
        unspliced_median_s: u,
        rayon_median_s: (!rayon.is_empty()).then(|| median(&mut rayon)),
        speedup: u / s,
        verified: a.only.is_none(),
        result: format!("{checksum:#018x}"),
        stats: StatsOut {
            steps: stats.steps,
            checks: stats.checks,
            switches: stats.switches,
            delayed: stats.delayed,
            dependences: stats.dependences,
            peak_delayed_bytes: stats.peak_delayed_bytes,
            slices: stats.slices,
        },
    })
}

fn rayon_pool(workers: usize) -> Result<rayon::ThreadPool, Failure> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .map_err(|e| Failure::Failed(format!("a rayon pool of {workers}: {e}")))
}
