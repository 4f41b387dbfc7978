//! Dynamic coarsening (Lifflander's thesis, §6.5) against three fixed grains, on heat and fib.
//!
//!     cargo run --release -p magpie-bench --example coarsening -- [WORKERS] [RUNS] [ITERATIONS] [PRUNE]
//!
//! An iterative program runs its iterations under `schedule::Iterate` (recorded, relaxed until
//! the schedule settles, then followed `Ordered`). With a fixed grain, every task above the grain
//! still spawns, though under `Ordered` nothing below the template's cuts can move. With dynamic
//! coarsening the program starts from the finest grain and uses the `Coarsen` fork, whose joins
//! ask `schedule::may_coarsen()` and run a subtree with no cut below it sequentially, and the
//! kernels ask `Fork::coarse()` to call their sequential code there (fib its plain recursive
//! function, heat one leaf for the band): the grain becomes whatever the settled schedule needs. For each kernel the example times, RUNS times
//! each and interleaved: plain stealing at each grain; the Iterate loop at each fixed grain; and
//! the Iterate loop at the finest grain with coarsening. The figures are the medians of the
//! settled (`Ordered`) iterations' times, and their ratios to the serial twin's iteration (for
//! fib, the plain recursive function), with the settled template's cuts; every run's result is
//! checked against the serial twin's and printed. PRUNE (default 0) is the percentage of cuts
//! the loop prunes from each relaxed iteration's template (§6.5's prune/relax/extract).
//!
//! heat: n = 1024, one iteration = one time step; grains 2, 16 and 128 rows. fib: one iteration
//! = fib(30); grains are cutoffs 4, 12 and 20 (below the cutoff, a plain recursive call).

use magpie::schedule::{Iterate, Stage};
use magpie_bench::fork::{Coarsen, Fork, Magpie, Serial};

use magpie_bench::harness::example_arg as arg;
use magpie_bench::kernels::heat;
use magpie_bench::placement::Program;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn fib<F: Fork>(f: &mut F, n: u64, cutoff: u64) -> u64 {
    // Below the cutoff, or (dynamic coarsening) where the schedule cuts nothing below: the
    // sequential function.
    if n < 2 || n < cutoff || f.coarse() {
        return fib_seq(n);
    }
    let (a, b) = f.join(|f| fib(f, n - 1, cutoff), |f| fib(f, n - 2, cutoff));
    a + b
}

/// How a configuration schedules its iterations.
#[derive(Clone, Copy, PartialEq)]
enum How {
    Plain,
    Iterate,
    Dynamic,
}

/// Runs `iterations` iterations of `step` in `pool` as `how` says; returns the times of the
/// iterations that count: all of them for plain, the `Ordered` ones otherwise.
fn timed(
    pool: &magpie::Pool,
    how: How,
    iterations: usize,
    prune: u32,
    mut step: impl FnMut(usize, How) + Send,
) -> (Vec<f64>, usize) {
    pool.install(|| {
        let mut it = Iterate::new(prune, 3);
        let mut times = Vec::new();
        for i in 0..iterations {
            let stage = it.stage();
            let t = Instant::now();
            match how {
                How::Plain => step(i, how),
                _ => it.run(|| step(i, how)),
            }
            let dt = t.elapsed().as_secs_f64();
            if how == How::Plain || stage == Stage::Follow {
                times.push(dt);
            }
        }
        (times, it.schedule().map_or(0, |s| s.cuts().len()))
    })
}

/// A configuration's settled iterations' times and its templates' cuts (one per run).
type Row = (String, Vec<f64>, Vec<usize>);

/// The seven configurations of a kernel whose grains are `grains` (`unit` names them): plain
/// and the Iterate loop at each grain, and dynamic coarsening from the finest; with their
/// empty rows.
fn configurations<G: Copy + std::fmt::Display>(
    unit: &str,
    grains: [G; 3],
) -> (Vec<(String, G, How)>, Vec<Row>) {
    let c: Vec<(String, G, How)> = grains
        .iter()
        .map(|&g| (format!("plain, {unit} {g}"), g, How::Plain))
        .chain(
            grains
                .iter()
                .map(|&g| (format!("iterate, {unit} {g}"), g, How::Iterate)),
        )
        .chain([(
            format!("dynamic, from {unit} {}", grains[0]),
            grains[0],
            How::Dynamic,
        )])
        .collect();
    let rows = c.iter().map(|c| (c.0.clone(), vec![], vec![])).collect();
    (c, rows)
}

fn report(name: &str, serial: f64, rows: &[Row]) {
    println!("{name}: serial twin {:.3} ms per iteration", serial * 1e3);
    println!(
        "  {:<28} {:>10} {:>9} {:>14}",
        "configuration", "ms/iter", "÷ serial", "template cuts"
    );
    for (what, t, cuts) in rows {
        if t.is_empty() {
            println!("  {what:<28} (never settled)");
            continue;
        }
        let m = median(t.clone());
        let cuts = if what.starts_with("plain") {
            "-".to_string()
        } else {
            median(cuts.iter().map(|&c| c as f64).collect()).to_string()
        };
        println!(
            "  {what:<28} {:>10.3} {:>9.3} {cuts:>14}",
            m * 1e3,
            m / serial
        );
    }
}

fn main() {
    let workers = arg(1, 2).max(1);
    let runs = arg(2, 5).max(1);
    let iterations = arg(3, 12).max(4);
    let prune = arg(4, 0).min(100) as u32;
    let pool = magpie::Pool::builder()
        .workers(workers)
        .build()
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        });
    println!("{workers} workers, {runs} runs, {iterations} iterations per run, prune {prune}%");

    // heat.
    let n = 1024u64;
    let grains = [2usize, 16, 128];
    let mut want = heat::Placed::new(n, n as usize, iterations).unwrap();
    let t = Instant::now();
    for i in 0..iterations {
        want.phase(&mut Serial, i, 0);
    }
    let serial = t.elapsed().as_secs_f64() / iterations as f64;
    let (configs, mut rows) = configurations("grain", grains);
    for _ in 0..runs {
        for (k, (what, grain, how)) in configs.iter().enumerate() {
            let mut prog = heat::Placed::new(n, *grain, iterations).unwrap();
            let (times, cuts) = timed(&pool, *how, iterations, prune, |i, how| {
                if how == How::Dynamic {
                    prog.phase(&mut Coarsen::default(), i, 0)
                } else {
                    prog.phase(&mut Magpie, i, 0)
                }
            });
            if let Err(e) = prog.compare(&want) {
                eprintln!("error: heat, {what}: {e}");
                std::process::exit(1);
            }
            rows[k].1.extend(times);
            rows[k].2.push(cuts);
        }
    }
    report(
        &format!("heat n={n} ({}; verified every run)", want.answer()),
        serial,
        &rows,
    );

    // fib.
    let fib_n = 30u64;
    let cutoffs = [4u64, 12, 20];
    let expect = fib_seq(fib_n);
    let t = Instant::now();
    for _ in 0..iterations {
        assert_eq!(fib_seq(std::hint::black_box(fib_n)), expect);
    }
    let serial = t.elapsed().as_secs_f64() / iterations as f64;
    let (configs, mut rows) = configurations("cutoff", cutoffs);
    for _ in 0..runs {
        for (k, (what, cutoff, how)) in configs.iter().enumerate() {
            let bad = std::sync::atomic::AtomicBool::new(false);
            let (times, cuts) = timed(&pool, *how, iterations, prune, |_, how| {
                let r = if how == How::Dynamic {
                    fib(&mut Coarsen::default(), fib_n, *cutoff)
                } else {
                    fib(&mut Magpie, fib_n, *cutoff)
                };
                if r != expect {
                    bad.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            });
            if bad.into_inner() {
                eprintln!("error: fib({fib_n}), {what}: not {expect}");
                std::process::exit(1);
            }
            rows[k].1.extend(times);
            rows[k].2.push(cuts);
        }
    }
    report(
        &format!("fib({fib_n}) = {expect} (verified every iteration)"),
        serial,
        &rows,
    );
}
