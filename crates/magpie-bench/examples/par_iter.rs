//! magpie's parallel iterators (`magpie_iter::prelude`) against rayon's and the sequential iterator,
//! on the same programs written once for both (the same source, `use magpie_iter::prelude::*` or
//! `use rayon::prelude::*`), at 1 and 2 workers: a fine-grained `map().sum()` over floats, a
//! `filter().count()`, a `par_iter_mut().for_each()` update, an ordered `collect`, and
//! `uneven`: 64 coarse items whose second half costs 20 times the first (a `map().sum()` whose
//! halves are badly balanced, so a worker must split what it holds when the other runs dry). Each
//! program's result is checked against the sequential one (exactly for integers, to a relative
//! 1e-9 for float sums, whose rounding depends on how they were split). Medians of RUNS runs,
//! alternating the runtimes; "eager" is magpie with `split_eagerly()` (halving down to chunks
//! of 256 up front) against its default lazy splitting.
//!
//! cargo run --release -p magpie-bench --example par_iter -- [N] [RUNS]   (defaults 10000000, 7)

use std::time::Instant;

macro_rules! programs {
    ($m:ident, $krate:ident) => {
        mod $m {
            use $krate::prelude::*;

            pub fn sum(v: &[f64]) -> f64 {
                v.par_iter().map(|x| x * x + 1.0).sum()
            }
            pub fn count(v: &[f64]) -> usize {
                v.par_iter()
                    .filter(|&&x| ((x * 1000.0) as u64).is_multiple_of(3))
                    .count()
            }
            pub fn update(v: &mut [f64]) {
                v.par_iter_mut().for_each(|x| *x = *x * 0.5 + 1.0);
            }
            pub fn collect(n: usize) -> Vec<u64> {
                (0..n as u64)
                    .into_par_iter()
                    .map(|i| i * i % 1_000_003)
                    .collect()
            }
            pub fn uneven() -> u64 {
                (0..64u64).into_par_iter().map(super::coarse).sum()
            }
        }
    };
}

/// A coarse item: about 20 µs of work for the first 32, 400 µs for the rest; a checksum.
fn coarse(i: u64) -> u64 {
    let iters = if i < 32 { 20_000 } else { 400_000 };
    let mut x = i + 1;
    for _ in 0..iters {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x % 1000
}

programs!(on_magpie, magpie_iter);
programs!(on_rayon, rayon);

/// The same programs on magpie with eager splitting (down to chunks up front), to measure lazy
/// splitting against.
mod on_magpie_eager {
    use magpie_iter::prelude::*;

    pub fn sum(v: &[f64]) -> f64 {
        v.par_iter().map(|x| x * x + 1.0).split_eagerly().sum()
    }
    pub fn count(v: &[f64]) -> usize {
        v.par_iter()
            .filter(|&&x| ((x * 1000.0) as u64).is_multiple_of(3))
            .split_eagerly()
            .count()
    }
    pub fn update(v: &mut [f64]) {
        v.par_iter_mut()
            .split_eagerly()
            .for_each(|x| *x = *x * 0.5 + 1.0);
    }
    pub fn collect(n: usize) -> Vec<u64> {
        (0..n as u64)
            .into_par_iter()
            .map(|i| i * i % 1_000_003)
            .split_eagerly()
            .collect()
    }
    pub fn uneven() -> u64 {
        (0..64u64)
            .into_par_iter()
            .map(super::coarse)
            .split_eagerly()
            .sum()
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args
        .first()
        .map_or(10_000_000, |a| a.parse().expect("N: a number"));
    let runs: usize = args
        .get(1)
        .map_or(7, |a| a.parse().expect("RUNS: a number"));
    let v: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 * 0.001).collect();
    let want_sum: f64 = v.iter().map(|x| x * x + 1.0).sum();
    let want_count = v
        .iter()
        .filter(|&&x| ((x * 1000.0) as u64).is_multiple_of(3))
        .count();
    let want_collect: Vec<u64> = (0..n as u64).map(|i| i * i % 1_000_003).collect();
    let want_uneven: u64 = (0..64u64).map(coarse).sum();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    println!("n = {n}, {runs} runs; time ÷ sequential, and magpie ÷ rayon");
    println!(
        "{:<9} {:>7} {:>12} {:>12} {:>12} {:>12} {:>14}",
        "program", "workers", "sequential s", "magpie s", "eager s", "rayon s", "magpie÷rayon"
    );
    for workers in [1, 2] {
        let mp = magpie::Pool::builder().workers(workers).build().unwrap();
        let rp = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .unwrap();
        let mut rows: Vec<(&str, [Vec<f64>; 4])> = ["sum", "count", "update", "collect", "uneven"]
            .iter()
            .map(|&p| (p, [Vec::new(), Vec::new(), Vec::new(), Vec::new()]))
            .collect();
        for _ in 0..runs {
            for (name, times) in rows.iter_mut() {
                for (k, t) in times.iter_mut().enumerate() {
                    let mut w = v.clone();
                    let start = Instant::now();
                    match (*name, k) {
                        ("sum", 0) => assert!(close(v.iter().map(|x| x * x + 1.0).sum(), want_sum)),
                        ("sum", 1) => assert!(close(mp.install(|| on_magpie::sum(&v)), want_sum)),
                        ("sum", 3) => {
                            assert!(close(mp.install(|| on_magpie_eager::sum(&v)), want_sum))
                        }
                        ("sum", _) => assert!(close(rp.install(|| on_rayon::sum(&v)), want_sum)),
                        ("count", 0) => assert_eq!(
                            v.iter()
                                .filter(|&&x| ((x * 1000.0) as u64).is_multiple_of(3))
                                .count(),
                            want_count
                        ),
                        ("count", 1) => assert_eq!(mp.install(|| on_magpie::count(&v)), want_count),
                        ("count", 3) => {
                            assert_eq!(mp.install(|| on_magpie_eager::count(&v)), want_count)
                        }
                        ("count", _) => assert_eq!(rp.install(|| on_rayon::count(&v)), want_count),
                        ("update", 0) => w.iter_mut().for_each(|x| *x = *x * 0.5 + 1.0),
                        ("update", 1) => mp.install(|| on_magpie::update(&mut w)),
                        ("update", 3) => mp.install(|| on_magpie_eager::update(&mut w)),
                        ("update", _) => rp.install(|| on_rayon::update(&mut w)),
                        ("uneven", 0) => {
                            assert_eq!((0..64u64).map(coarse).sum::<u64>(), want_uneven)
                        }
                        ("uneven", 1) => assert_eq!(mp.install(on_magpie::uneven), want_uneven),
                        ("uneven", 3) => {
                            assert_eq!(mp.install(on_magpie_eager::uneven), want_uneven)
                        }
                        ("uneven", _) => assert_eq!(rp.install(on_rayon::uneven), want_uneven),
                        (_, 0) => assert_eq!(
                            (0..n as u64).map(|i| i * i % 1_000_003).collect::<Vec<_>>(),
                            want_collect
                        ),
                        (_, 1) => assert_eq!(mp.install(|| on_magpie::collect(n)), want_collect),
                        (_, 3) => {
                            assert_eq!(mp.install(|| on_magpie_eager::collect(n)), want_collect)
                        }
                        (_, _) => assert_eq!(rp.install(|| on_rayon::collect(n)), want_collect),
                    }
                    t.push(start.elapsed().as_secs_f64());
                    if *name == "update" {
                        assert!(w.iter().zip(&v).all(|(a, b)| *a == *b * 0.5 + 1.0));
                    }
                }
            }
        }
        for (name, times) in rows {
            let [s, m, r, e] = times.map(median);
            println!(
                "{name:<9} {workers:>7} {s:>12.4} {m:>12.4} {e:>12.4} {r:>12.4} {:>14.2}   (magpie ÷ sequential {:.2}, lazy ÷ eager {:.2})",
                m / r,
                m / s,
                m / e
            );
        }
    }
    println!("every result checked against the sequential iterator's");
}
