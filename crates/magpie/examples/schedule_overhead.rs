//! What recording and following a schedule cost on fib, against plain stealing in the same run.
//!
//!     cargo run --release -p magpie --example schedule_overhead -- [N] [CUTOFF] [WORKERS] [RUNS] [SLOW]
//!
//! Times fib(N) (sequential below CUTOFF; 0 for none) RUNS times each, interleaved: plain,
//! recorded, and followed under each constraint on three templates: the schedule of one recorded
//! run; the schedule `schedule::Iterate` settles on (recorded, then relaxed until stable); and
//! the schedule of one recorded run of fib(N-6), a smaller input. Prints the medians, their
//! ratios to plain, the cuts of the last run and the deviations. With SLOW = 1, worker 1 is a
//! slowed worker: every sequential leaf it runs is computed three times (adaptability). Every
//! run's answer is checked against the serial fib(N), which is printed.

use magpie::schedule::{self, Constraint};
use std::time::Instant;

fn fib_serial(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_serial(n - 1) + fib_serial(n - 2)
    }
}

fn fib(n: u64, cutoff: u64, slow: bool) -> u64 {
    if n < 2 {
        return n;
    }
    if n < cutoff {
        if slow && magpie::worker_index() == Some(1) {
            // The slowed worker: the same leaf three times, each result checked.
            let a = fib_serial(std::hint::black_box(n));
            let b = fib_serial(std::hint::black_box(n));
            assert_eq!(a, b);
        }
        return fib_serial(n);
    }
    let (a, b) = magpie::join(|| fib(n - 1, cutoff, slow), || fib(n - 2, cutoff, slow));
    a + b
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn arg(i: usize, default: u64) -> u64 {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("error: argument {i} ('{s}') is not a number");
            std::process::exit(2)
        }),
    }
}

fn main() {
    let n = arg(1, 32);
    let cutoff = arg(2, 0);
    let workers = arg(3, 2).max(1) as usize;
    let runs = arg(4, 7).max(1) as usize;
    let slow = arg(5, 0) != 0;
    let pool = magpie::Pool::builder()
        .workers(workers)
        .build()
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        });
    let want = fib_serial(n);
    println!(
        "fib({n}) = {want}, cutoff {cutoff}, {workers} workers, {runs} runs{}",
        if slow { ", worker 1 slowed 3x" } else { "" }
    );
    let check = |got: u64| assert_eq!(got, want, "wrong answer");
    let (_, once) = pool.install(|| schedule::record(|| fib(n, cutoff, slow)));
    let mut it = schedule::Iterate::new(0, 4);
    for _ in 0..6 {
        check(pool.install(|| it.run(|| fib(n, cutoff, slow))));
    }
    let settled = it.schedule().expect("iterated").clone();
    let (_, smaller) = pool.install(|| schedule::record(|| fib(n.saturating_sub(6), cutoff, slow)));
    let templates = [
        ("one run", &once),
        ("settled", &settled),
        ("fib(n-6)", &smaller),
    ];
    // (name, constraint and template index when following, whether recording)
    type Mode = (String, Option<(Constraint, usize)>, bool);
    let mut modes: Vec<Mode> = vec![("plain".into(), None, false), ("record".into(), None, true)];
    for (ti, (tn, _)) in templates.iter().enumerate() {
        for c in [
            Constraint::Ordered,
            Constraint::Unordered,
            Constraint::Relaxed,
        ] {
            modes.push((format!("{} on {tn}", c.name()), Some((c, ti)), false));
        }
    }
    let mut rows: Vec<(Vec<f64>, usize, u64)> = modes.iter().map(|_| (Vec::new(), 0, 0)).collect();
    // Interleaved, so drifting machine load hits every mode alike.
    for _ in 0..runs {
        for (i, (_, c, rec)) in modes.iter().enumerate() {
            let dev = pool.stats().deviations;
            let t = Instant::now();
            let cuts = match (c, rec) {
                (None, false) => {
                    check(pool.install(|| fib(n, cutoff, slow)));
                    0
                }
                (None, true) => {
                    let (r, s) = pool.install(|| schedule::record(|| fib(n, cutoff, slow)));
                    check(r);
                    s.cuts().len()
                }
                (Some((c, ti)), _) => {
                    let tpl = templates[*ti].1;
                    let (r, s) =
                        pool.install(|| schedule::follow(tpl, *c, || fib(n, cutoff, slow)));
                    check(r);
                    s.cuts().len()
                }
            };
            rows[i].0.push(t.elapsed().as_secs_f64());
            rows[i].1 = cuts;
            rows[i].2 += pool.stats().deviations - dev;
        }
    }
    let plain = median(rows[0].0.clone());
    println!("| mode | median s | ÷ plain | cuts (last run) | deviations (all runs) |");
    println!("|---|---|---|---|---|");
    for ((name, _, _), (times, cuts, dev)) in modes.iter().zip(rows) {
        let m = median(times);
        println!("| {name} | {m:.6} | {:.3} | {cuts} | {dev} |", m / plain);
    }
    for (tn, t) in templates {
        println!(
            "template {tn}: {} cuts, {} bytes",
            t.cuts().len(),
            t.bytes()
        );
    }
    let stages: Vec<String> = it
        .steps()
        .iter()
        .map(|s| format!("{:?} {} cuts {:.2} kept", s.stage, s.cuts, s.same_worker))
        .collect();
    println!("iterations: {}", stages.join("; "));
}
