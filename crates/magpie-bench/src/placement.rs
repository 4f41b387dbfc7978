//! First-touch placement (Lifflander's thesis, §6.4): an iterative kernel keeps each piece of its
//! data on the worker that first touched it, by running its iterations under schedules and
//! re-placing its data with a fork/join initialiser.
//!
//! On a machine with several memory sockets, the operating system puts each page where it was
//! first written. A kernel whose data was initialised by one thread, or by a fork/join
//! initialiser under random stealing, finds most pages on another socket than the worker that
//! later computes on them, and random stealing moves the work again at every iteration. The
//! thesis's answer: give the kernel an initialiser with the kernel's own structure (the same
//! recursion over the same rows or blocks), so that the initialiser's schedule is a template for
//! the kernel and the kernel's schedule a template for the initialiser; then
//!
//! - **relws** (the thesis's Fig. 6.3): record the initialiser; run each iteration under
//!   `Relaxed` on the last schedule (a worker runs its own part first and steals only when it
//!   has none), extract the schedule the iteration took, and run the initialiser again under
//!   `Ordered` on it, copying each piece of data into fresh memory on the worker that now
//!   computes on it; once the schedule is stable, iterate under `Ordered`
//!   ([`magpie::schedule::Iterate`] with its `place` step);
//! - **stows**: record the initialiser and follow its schedule under `Ordered` in every
//!   iteration (no adaptation);
//! - **user**: a user-specified partition (§6.3.2, [`Schedule::halving`]: each worker one
//!   contiguous share of the rows) for the initialiser and every iteration, under `Unordered`;
//! - **plain**: the initialiser and the iterations under plain random stealing (the baseline;
//!   with places or squads in the pool, the row sweeps use them).
//!
//! An iteration of several phases (fdtd-2d's two sweeps, cg's three passes, prefix-scan's up-
//! and down-sweep) runs every phase on the same template: the phases walk the same rows with the
//! same recursion. Each kernel implements [`Program`] in its own module; [`run`] drives one under
//! a [`Strategy`] in a pool, checks the result against the same program run with the serial
//! fork, and reports per iteration what the model and the schedule need: the share of leaves
//! that ran on the same worker as in the previous iteration, the idle share, the schedule's
//! bytes. With [`Builder::record_leaves`](magpie::Builder::record_leaves) the leaves it returns
//! go to [`magpie::cachemodel::simulate`], whose page map counts what was remote.

use crate::common::{for_row_bands, for_row_bands_placed, for_row_bands_tiered, Band};
use crate::fork::{Fork, Magpie, Serial};
use magpie::cachemodel::LeafTask;
use magpie::schedule::{self, Constraint, Iterate, Schedule, Stage};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// An iterative kernel with a fork/join initialiser of its own structure (see the module doc).
pub trait Program: Clone + Send {
    /// The kernel's name.
    fn name(&self) -> &'static str;
    /// Phases of one iteration; every phase has the structure of the initialiser.
    fn phases(&self) -> usize;
    /// Iterations this instance runs.
    fn iterations(&self) -> usize;
    /// The fork/join initialiser: allocates fresh buffers and copies the data into them with
    /// the structure of an iteration, each leaf declared with
    /// [`magpie::cachemodel::first_touch`].
    fn place<F: Fork>(&mut self, f: &mut F);
    /// Phase `p` of iteration `it`.
    fn phase<F: Fork>(&mut self, f: &mut F, it: usize, p: usize);
    /// Compares the result with `twin`'s (the same program run with the serial fork), bit for
    /// bit; the error is one line naming the first difference.
    fn compare(&self, twin: &Self) -> Result<(), String>;
    /// The result in words a user can compare with another run's (a checksum).
    fn answer(&self) -> String;
}

/// How [`run`] schedules the initialiser and the iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Plain random stealing (or the pool's places or squads), no schedule.
    Plain,
    /// The §6.4 loop: `Relaxed` iterations, each followed by an `Ordered` initialiser, until
    /// the schedule is stable; then `Ordered`. Relaxed templates are pruned by `prune` percent;
    /// at most `max_relaxed` relaxed iterations.
    Relaxed {
        /// Percent of the template's cuts pruned before each relaxed iteration.
        prune: u32,
        /// Relaxed iterations at most before the schedule is taken as stable.
        max_relaxed: usize,
    },
    /// The initialiser's recorded schedule, followed `Ordered` by every iteration.
    Ordered,
    /// [`Schedule::halving`] for the pool's workers, followed `Unordered` by the initialiser
    /// and every iteration.
    User,
}

/// One iteration as [`run`] saw it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Iteration {
    /// How it ran: `plain`, `record`, `relax`, `follow` (Ordered), `unordered`.
    pub stage: String,
    /// Whether the initialiser ran after it (re-placing the data).
    pub placed_after: bool,
    /// Leaf tasks recorded (0 unless the pool records leaves).
    pub leaves: usize,
    /// Of its leaves, the share that ran on the same worker as the same leaf in the previous
    /// iteration (0 for the first; needs recorded leaves).
    pub same_worker: f64,
    /// 1 − (paced leaf time) / (workers × wall time): the share of the workers' time not spent
    /// in leaves (needs paced recorded leaves; 0 otherwise).
    pub idle: f64,
    /// Bytes of the schedule it took (0 under `plain`).
    pub schedule_bytes: usize,
    /// Cuts of that schedule.
    pub cuts: usize,
    /// Ordered deviations counted while it ran.
    pub deviations: u64,
    /// Wall time, nanoseconds.
    pub wall_ns: u64,
    /// Modelled last-level misses of its leaves (filled in by the model, which replays
    /// [`Report::leaves`]; 0 from [`run`]).
    #[serde(default)]
    pub misses: u64,
    /// Modelled remote bytes of its leaves (as `misses`).
    #[serde(default)]
    pub remote_bytes: u64,
}

/// What [`run`] returns.
#[derive(Clone, Debug)]
pub struct Report {
    /// Per iteration.
    pub iterations: Vec<Iteration>,
    /// Every recorded leaf, initialisers' included, in the pool's clock.
    pub leaves: Vec<LeafTask>,
    /// Per iteration, the indices of its leaves in `leaves` (the initialisers' are the rest).
    pub spans: Vec<std::ops::Range<usize>>,
    /// The result in words.
    pub answer: String,
    /// Wall time of the whole run (initialisers included), nanoseconds.
    pub wall_ns: u64,
}

/// Sweeps `band` (rows `first..`) with `body` on its leaves of at most `grain` rows, halving
/// with `f.join`; with magpie in a pool with places or squads, by SLAW's places or CAB's
/// tiers (`data_bytes` is CAB's data size). The phases and initialisers of the row kernels go
/// through here, so every one of them has the same recursion.
pub fn sweep<F: Fork, B: Band>(
    f: &mut F,
    band: B,
    first: usize,
    grain: usize,
    data_bytes: u64,
    body: &(impl Fn(usize, B) + Sync),
) {
    if f.squads() {
        for_row_bands_tiered(band, first, grain, data_bytes, body)
    } else if f.places() > 1 {
        for_row_bands_placed(band, first, grain, body)
    } else {
        for_row_bands(f, band, first, grain, body)
    }
}

/// The pace of a leaf: what [`magpie::Builder::pace_leaves`] makes it sleep.
fn paced(l: &LeafTask, per_mib: Duration) -> Duration {
    let len = |r: &std::ops::Range<u64>| r.end.saturating_sub(r.start);
    let bytes: u64 = l.reads.iter().chain(&l.writes).map(len).sum();
    per_mib.mul_f64(bytes as f64 / (1u64 << 20) as f64)
}

/// A leaf's name across iterations: its phase and where its first range starts relative to the
/// phase's lowest first range (buffers are swapped and re-placed between iterations, but a
/// leaf's offset in them stays).
fn keyed(phase_leaves: &[(usize, Vec<LeafTask>)]) -> HashMap<(usize, u64), usize> {
    let mut m = HashMap::new();
    for (p, leaves) in phase_leaves {
        let first = |l: &LeafTask| l.writes.first().or(l.reads.first()).map(|r| r.start);
        let base = leaves.iter().filter_map(first).min().unwrap_or(0);
        for l in leaves {
            if let Some(s) = first(l) {
                m.insert((*p, s - base), l.worker);
            }
        }
    }
    m
}

/// Runs `prog` in `pool` under `strategy`: the initialiser, then its iterations, as the module
/// doc says; then checks the result against the same program run with the serial fork. `pace`
/// is the pool's leaf pace (for the idle share). An error (a result that differs from the serial
/// twin's) is one line.
pub fn run<P: Program>(
    pool: &magpie::Pool,
    prog: &P,
    strategy: Strategy,
    pace: Duration,
) -> Result<Report, String> {
    let mut twin = prog.clone();
    let mut prog = prog.clone();
    let workers = pool.workers();
    let start = Instant::now();
    // Leaves recorded before this run are not its own.
    drop(pool.take_leaves());
    let mut leaves = Vec::new();
    let all = &mut leaves;
    let mut spans = Vec::new();
    let mut previous: Option<HashMap<(usize, u64), usize>> = None;
    let mut iterate = match strategy {
        Strategy::Relaxed { prune, max_relaxed } => Some(Iterate::new(prune, max_relaxed)),
        _ => None,
    };
    // One install for the whole program: every region's root then runs on the same worker (a
    // started task never changes thread), so a template's root worker is the same worker in
    // every iteration and following it keeps every piece of work where it ran before.
    let rows = pool.install(|| {
        let user = Schedule::halving(workers);
        // The initialiser.
        let template = match (strategy, &mut iterate) {
            (Strategy::Relaxed { .. }, Some(it)) => {
                it.place(|| prog.place(&mut Magpie));
                None
            }
            (Strategy::Ordered, _) => Some(schedule::record(|| prog.place(&mut Magpie)).1),
            (Strategy::User, _) => {
                schedule::follow(&user, Constraint::Unordered, || prog.place(&mut Magpie));
                Some(user.clone())
            }
            _ => {
                prog.place(&mut Magpie);
                None
            }
        };
        all.extend(pool.take_leaves());
        let devs = || pool.stats().deviations;
        let mut rows = Vec::new();
        for it in 0..prog.iterations() {
            let t0 = Instant::now();
            let d0 = devs();
            let mut phase_leaves = Vec::new();
            let mut stage = "plain".to_string();
            let (mut bytes, mut cuts) = (0, 0);
            let mut place_after = false;
            for p in 0..prog.phases() {
                let prog = &mut prog;
                let run = |prog: &mut P| prog.phase(&mut Magpie, it, p);
                match (strategy, &mut iterate, &template) {
                    (Strategy::Relaxed { .. }, Some(iter), _) => {
                        if p == 0 {
                            let s = iter.stage();
                            stage = match s {
                                Stage::Record => "record",
                                Stage::Relax => "relax",
                                _ => "follow",
                            }
                            .into();
                            place_after = s == Stage::Relax;
                            iter.run(|| run(prog));
                            if let Some(t) = iter.schedule() {
                                (bytes, cuts) = (t.bytes(), t.cuts().len());
                            }
                        } else {
                            iter.again(|| run(prog));
                        }
                    }
                    (Strategy::Ordered, _, Some(t)) => {
                        stage = "follow".into();
                        let taken = schedule::follow(t, Constraint::Ordered, || run(prog)).1;
                        (bytes, cuts) = (taken.bytes(), taken.cuts().len());
                    }
                    (Strategy::User, _, Some(t)) => {
                        stage = "unordered".into();
                        let taken = schedule::follow(t, Constraint::Unordered, || run(prog)).1;
                        (bytes, cuts) = (taken.bytes(), taken.cuts().len());
                    }
                    _ => run(prog),
                }
                phase_leaves.push((p, pool.take_leaves()));
            }
            let wall = t0.elapsed();
            let busy: Duration = phase_leaves
                .iter()
                .flat_map(|(_, l)| l)
                .map(|l| paced(l, pace))
                .sum();
            let idle = if pace.is_zero() || wall.is_zero() {
                0.0
            } else {
                (1.0 - busy.as_secs_f64() / (workers as f64 * wall.as_secs_f64())).max(0.0)
            };
            let now = keyed(&phase_leaves);
            let same_worker = match &previous {
                Some(prev) if !now.is_empty() => {
                    let same = now.iter().filter(|(k, w)| prev.get(k) == Some(w)).count();
                    same as f64 / now.len() as f64
                }
                _ => 0.0,
            };
            let leaves: usize = phase_leaves.iter().map(|(_, l)| l.len()).sum();
            spans.push(all.len()..all.len() + leaves);
            for (_, l) in phase_leaves {
                all.extend(l);
            }
            previous = Some(now);
            if place_after {
                if let Some(iter) = &mut iterate {
                    iter.place(|| prog.place(&mut Magpie));
                    all.extend(pool.take_leaves());
                }
            }
            rows.push(Iteration {
                stage,
                placed_after: place_after,
                leaves,
                same_worker,
                idle,
                schedule_bytes: bytes,
                cuts,
                deviations: devs().saturating_sub(d0),
                wall_ns: wall.as_nanos() as u64,
                misses: 0,
                remote_bytes: 0,
            });
        }
        rows
    });
    let wall_ns = start.elapsed().as_nanos() as u64;
    // The serial twin: the same program, the same iterations, the serial fork.
    twin.place(&mut Serial);
    for it in 0..twin.iterations() {
        for p in 0..twin.phases() {
            twin.phase(&mut Serial, it, p);
        }
    }
    prog.compare(&twin)?;
    Ok(Report {
        iterations: rows,
        leaves,
        spans,
        answer: prog.answer(),
        wall_ns,
    })
}

/// A kernel's placement facet: how the benchmark runs it as a [`Program`]. Each kernel that is
/// one defines it (`heat::PLACEMENT`, ...), and the kernel registry hands it out
/// (`Kernel::placement`), so this module names no kernel.
#[derive(Clone, Copy, Debug)]
pub struct Facet {
    /// The iterations a benchmark run does at size `n`.
    pub iterations: fn(u64) -> usize,
    /// Whether its phases sweep rows (so places and squads apply to them).
    pub banded: bool,
    /// [`run`] on the kernel's program at size `n`, grain `grain` and `iterations`; a bad size
    /// or grain is an error naming what to do.
    pub run: RunPlaced,
}

/// [`Facet::run`]: the pool, size `n`, grain, iterations, strategy and leaf pace.
pub type RunPlaced =
    fn(&magpie::Pool, u64, u64, usize, Strategy, Duration) -> Result<Report, String>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every strategy gives the serial twin's bits, and the report has a row per iteration.
    pub(crate) fn check_all<P: Program>(prog: &P) {
        for workers in [1, 3] {
            let pool = magpie::Pool::builder()
                .workers(workers)
                .record_leaves(true)
                .build()
                .unwrap();
            for s in [
                Strategy::Plain,
                Strategy::Relaxed {
                    prune: 0,
                    max_relaxed: 2,
                },
                Strategy::Ordered,
                Strategy::User,
            ] {
                let r = run(&pool, prog, s, Duration::ZERO)
                    .unwrap_or_else(|e| panic!("{} {s:?} x{workers}: {e}", prog.name()));
                assert_eq!(r.iterations.len(), prog.iterations());
                assert!(!r.leaves.is_empty(), "{} {s:?}", prog.name());
                // The initialiser's leaves are the fresh ones.
                assert!(r.leaves.iter().any(|l| l.fresh), "{} {s:?}", prog.name());
                if workers == 1 && prog.iterations() > 1 {
                    // One worker runs every leaf: all stay put.
                    assert_eq!(r.iterations[1].same_worker, 1.0, "{}", prog.name());
                }
            }
        }
    }

    #[test]
    fn heat_under_every_strategy() {
        check_all(&crate::kernels::heat::Placed::new(37, 4, 5).unwrap());
    }

    #[test]
    fn fdtd_floyd_cg_and_prefix_under_every_strategy() {
        check_all(&crate::kernels::fdtd2d::Placed::new(23, 3, 4).unwrap());
        check_all(&crate::kernels::floyd_warshall::Placed::new(40, 4, 6).unwrap());
        check_all(&crate::kernels::cg::Placed::new(3000, 300, 3).unwrap());
        check_all(&crate::kernels::prefix_scan::Placed::new(5000, 100, 3).unwrap());
    }

    #[test]
    fn programs_run_to_the_end_give_the_kernels_answers() {
        use crate::fork::Serial;
        // The full iteration counts equal the benchmark kernels' serial results.
        let mut h = crate::kernels::heat::Placed::new(37, 4, crate::kernels::heat::STEPS).unwrap();
        let mut g =
            crate::kernels::fdtd2d::Placed::new(23, 3, crate::kernels::fdtd2d::STEPS).unwrap();
        let mut d = crate::kernels::floyd_warshall::Placed::new(40, 4, 40).unwrap();
        let mut s = crate::kernels::prefix_scan::Placed::new(
            5000,
            100,
            crate::kernels::prefix_scan::PASSES,
        )
        .unwrap();
        fn all<P: Program>(p: &mut P) {
            p.place(&mut Serial);
            for it in 0..p.iterations() {
                for ph in 0..p.phases() {
                    p.phase(&mut Serial, it, ph);
                }
            }
        }
        all(&mut h);
        assert_eq!(crate::kernels::heat::verify(37, h.grid()), Ok(()));
        all(&mut g);
        all(&mut d);
        all(&mut s);
        let mut want = crate::kernels::fdtd2d::input(23);
        crate::kernels::fdtd2d::plain(&mut want);
        assert!(g
            .answer()
            .contains(&format!("{:.9e}", want.hz.iter().sum::<f64>())));
        let mut dw = crate::kernels::floyd_warshall::graph(40, 8, 40);
        crate::kernels::floyd_warshall::plain(40, &mut dw);
        let finite = dw
            .iter()
            .filter(|&&x| x < crate::kernels::floyd_warshall::INF)
            .count();
        assert!(
            d.answer().starts_with(&format!("{finite} finite")),
            "{}",
            d.answer()
        );
        let mut v = crate::kernels::prefix_scan::input(5000);
        for _ in 0..crate::kernels::prefix_scan::PASSES {
            crate::kernels::prefix_scan::plain(&mut v);
        }
        assert_eq!(s.answer(), format!("last {}", v[4999]));
    }

    #[test]
    fn the_relaxed_loop_places_after_relaxing_and_settles() {
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        let prog = crate::kernels::heat::Placed::new(64, 4, 8).unwrap();
        let r = run(
            &pool,
            &prog,
            Strategy::Relaxed {
                prune: 0,
                max_relaxed: 3,
            },
            Duration::ZERO,
        )
        .unwrap();
        let stages: Vec<&str> = r.iterations.iter().map(|i| i.stage.as_str()).collect();
        // The initialiser was recorded, so the first iteration relaxes; at most 3 relax.
        assert_eq!(stages[0], "relax", "{stages:?}");
        let relaxed = stages.iter().filter(|s| **s == "relax").count();
        assert!((1..=3).contains(&relaxed), "{stages:?}");
        assert!(
            stages[relaxed..].iter().all(|s| *s == "follow"),
            "{stages:?}"
        );
        for i in &r.iterations {
            assert_eq!(i.placed_after, i.stage == "relax");
        }
    }
}
