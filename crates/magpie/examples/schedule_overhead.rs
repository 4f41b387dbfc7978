//! What recording and following a schedule cost on fib, against plain stealing in the same run.
//!
//!     cargo run --release -p magpie --example schedule_overhead -- [N] [CUTOFF] [WORKERS] [RUNS]
//!
//! Times fib(N) (sequential below CUTOFF; 0 for none) RUNS times each: plain, recorded, and
//! followed under each constraint on the schedule recorded first; prints the medians, their
//! ratios to plain, the cuts and the deviations. Every run's answer is checked against the
//! serial fib(N), which is printed.

use magpie::schedule::{self, Constraint};
use std::time::Instant;

fn fib_serial(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_serial(n - 1) + fib_serial(n - 2)
    }
}

fn fib(n: u64, cutoff: u64) -> u64 {
    if n < 2 {
        return n;
    }
    if n < cutoff {
        return fib_serial(n);
    }
    let (a, b) = magpie::join(|| fib(n - 1, cutoff), || fib(n - 2, cutoff));
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
    let pool = magpie::Pool::builder()
        .workers(workers)
        .build()
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        });
    let want = fib_serial(n);
    println!("fib({n}) = {want}, cutoff {cutoff}, {workers} workers, {runs} runs");
    let (_, template) = pool.install(|| schedule::record(|| fib(n, cutoff)));
    let check = |got: u64| assert_eq!(got, want, "wrong answer");
    let mut rows: Vec<(&str, Vec<f64>, usize)> = Vec::new();
    let modes: [(&str, Option<Constraint>, bool); 5] = [
        ("plain", None, false),
        ("record", None, true),
        ("ordered", Some(Constraint::Ordered), false),
        ("unordered", Some(Constraint::Unordered), false),
        ("relaxed", Some(Constraint::Relaxed), false),
    ];
    for (name, _, _) in modes {
        rows.push((name, Vec::new(), 0));
    }
    let dev0 = pool.stats().deviations;
    // Interleaved, so drifting machine load hits every mode alike.
    for _ in 0..runs {
        for (i, (_, c, rec)) in modes.iter().enumerate() {
            let t = Instant::now();
            let cuts = match (c, rec) {
                (None, false) => {
                    check(pool.install(|| fib(n, cutoff)));
                    0
                }
                (None, true) => {
                    let (r, s) = pool.install(|| schedule::record(|| fib(n, cutoff)));
                    check(r);
                    s.cuts().len()
                }
                (Some(c), _) => {
                    let (r, s) =
                        pool.install(|| schedule::follow(&template, *c, || fib(n, cutoff)));
                    check(r);
                    s.cuts().len()
                }
            };
            rows[i].1.push(t.elapsed().as_secs_f64());
            rows[i].2 = cuts;
        }
    }
    let plain = median(rows[0].1.clone());
    println!("| mode | median s | ÷ plain | cuts (last run) |");
    println!("|---|---|---|---|");
    for (name, times, cuts) in rows {
        let m = median(times);
        println!("| {name} | {m:.6} | {:.3} | {cuts} |", m / plain);
    }
    println!(
        "template: {} cuts, {} bytes; deviations: {}",
        template.cuts().len(),
        template.bytes(),
        pool.stats().deviations - dev0
    );
}
