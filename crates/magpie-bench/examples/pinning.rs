//! Whether a woken worker runs at once: a short parallel loop (a sum of 200,000 items of about
//! 2.5 ns each, split in halves by `join` down to 4,096 items, about 0.5 ms serially) right after
//! a serial stretch of the same length,
//! during which both pools' workers go to sleep. At 2 workers the loop should take about half
//! the serial time. On this development VM it often took the whole serial time instead, for magpie
//! and rayon alike: the worker that wakes its sleeping peer for the published half keeps running,
//! and the scheduler queues the woken thread behind it on the same CPU (an affine wake-up) rather
//! than on the idle one, so the halves run one after the other. With `Builder::pin(true)`
//! each worker has a CPU of its own, and the woken worker starts there.
//!
//! Prints, per pool, the median and 90th percentile of the loop's time over ROUNDS rounds
//! (magpie unpinned, magpie pinned, rayon, alternating), and checks every sum against the serial
//! one.
//!
//! cargo run --release -p magpie-bench --example pinning -- [ROUNDS]   (default 300)

use std::time::Instant;

fn work(i: usize) -> f64 {
    let mut x = i as f64;
    for _ in 0..8 {
        x = x * 1.000_000_1 + 0.5;
    }
    x
}

/// A `join` of two halves that return floats: magpie's or rayon's.
type Join = dyn Fn(&Half, &Half) -> (f64, f64) + Sync;
type Half<'a> = dyn Fn() -> f64 + Sync + 'a;

/// The sum of `work(i)` over `lo..hi`, split in halves by `join` (magpie's or rayon's) down to
/// 4,096 items.
fn sum(lo: usize, hi: usize, join: &Join) -> f64 {
    if hi - lo <= 4096 {
        return (lo..hi).map(work).sum();
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = join(&|| sum(lo, mid, join), &|| sum(mid, hi, join));
    a + b
}

fn quantile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p) as usize]
}

fn main() {
    let rounds: usize = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 300,
        Some(Ok(r)) if r > 0 => r,
        Some(_) => {
            eprintln!("error: ROUNDS must be a whole number ≥ 1 (e.g. 300)");
            std::process::exit(2);
        }
    };
    let n = 200_000usize;
    let serial = || (0..n).map(work).sum::<f64>();
    let want = serial();
    let close = |x: f64| (x - want).abs() <= 1e-9 * want.abs();
    let pools = [
        ("magpie", magpie::Pool::builder().workers(2).build()),
        (
            "magpie pinned",
            magpie::Pool::builder().workers(2).pin(true).build(),
        ),
    ];
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a rayon pool of 2 threads");
    let mut times: Vec<Vec<f64>> = vec![vec![]; 3];
    for _ in 0..rounds {
        for (k, (name, pool)) in pools.iter().enumerate() {
            let pool = pool.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
            std::hint::black_box(serial());
            let t = Instant::now();
            let got = pool.install(|| sum(0, n, &|a, b| magpie::join(a, b)));
            times[k].push(t.elapsed().as_secs_f64() * 1e6);
            assert!(close(got), "{name}: sum {got} against the serial {want}");
        }
        std::hint::black_box(serial());
        let t = Instant::now();
        let got = rayon.install(|| sum(0, n, &|a, b| rayon::join(a, b)));
        times[2].push(t.elapsed().as_secs_f64() * 1e6);
        assert!(close(got), "rayon: sum {got} against the serial {want}");
    }
    let t = Instant::now();
    std::hint::black_box(serial());
    let serial_us = t.elapsed().as_secs_f64() * 1e6;
    println!(
        "sum of {n} items = {want:.6e} (every parallel sum checked); serial {serial_us:.0} µs"
    );
    for (name, v) in ["magpie", "magpie pinned", "rayon"].iter().zip(times) {
        println!(
            "{name:<14} median {:>5.0} µs, 90th percentile {:>5.0} µs",
            quantile(v.clone(), 0.5),
            quantile(v, 0.9)
        );
    }
}
