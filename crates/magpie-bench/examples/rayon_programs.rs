//! Ordinary rayon programs, written once and compiled against both `magpie_iter::prelude` and
//! `rayon::prelude` (a macro instantiates the same source twice): a Mandelbrot image,
//! `par_sort_unstable` and `par_sort_by_key` of millions of keys, an n-body step over
//! `par_iter_mut().zip(..)`, a word count with `fold`/`reduce` into maps, a fine-grained
//! `map().sum()` and a sparse matrix-vector product. Each result is checked against the
//! sequential one (exactly, or to 1e-9 relative for float sums). Prints magpie's time ÷ rayon's
//! per program at 1 and 2 workers (medians of RUNS runs, alternated, each runtime first in every
//! other round) and their geometric mean.
//! The programs live in `magpie_bench::programs` (one source, two preludes), where `magpie
//! bench` and `magpie suite` run them too, as kernels with rayon as their peer.
//!
//! cargo run --release -p magpie-bench --example rayon_programs -- [SCALE] [RUNS]
//! (SCALE 1 = the default sizes; RUNS default 5)

use magpie_bench::programs::{self, close, on_magpie, on_rayon, serial};
use std::time::Instant;

/// The inputs, shared by both runtimes.
struct Inputs {
    keys: Vec<u64>,
    pairs: Vec<(u32, u64)>,
    bodies: Vec<[f64; 3]>,
    text: Vec<String>,
    floats: Vec<f64>,
    csr: programs::Csr,
    side: usize,
}

fn inputs(scale: usize) -> Inputs {
    Inputs {
        keys: programs::keys(2_000_000 * scale),
        pairs: programs::pairs(2_000_000 * scale),
        bodies: programs::bodies(1500 * scale),
        text: programs::text(200_000 * scale),
        floats: programs::floats(5_000_000 * scale),
        csr: programs::csr(200_000 * scale),
        side: 600 * scale.max(1),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scale: usize = args
        .first()
        .map_or(1, |a| a.parse().expect("SCALE: a number"));
    let runs: usize = args
        .get(1)
        .map_or(5, |a| a.parse().expect("RUNS: a number"));
    let inp = inputs(scale);
    // The sequential answers: the serial twins.
    let want_mandel = serial::mandelbrot(inp.side);
    let mut want_keys = inp.keys.clone();
    serial::sort_unstable(&mut want_keys);
    let mut want_pairs = inp.pairs.clone();
    serial::sort_by_key(&mut want_pairs);
    let want_nbody = serial::nbody(&inp.bodies);
    let want_words = serial::word_count(&inp.text);
    let want_sum = serial::fine_sum(&inp.floats);
    let want_spmv = serial::spmv(&inp.csr);
    println!("scale {scale}, {runs} runs: magpie ÷ rayon, medians; every result checked");
    println!(
        "{:<14} {:>8} {:>12} {:>12} {:>10}",
        "program", "workers", "magpie s", "rayon s", "÷"
    );
    for workers in [1, 2] {
        let mp = magpie::Pool::builder().workers(workers).build().unwrap();
        let rp = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .unwrap();
        let names = [
            "mandelbrot",
            "sort_unstable",
            "sort_by_key",
            "nbody",
            "word_count",
            "fine_sum",
            "spmv",
        ];
        let mut times: Vec<[Vec<f64>; 2]> =
            names.iter().map(|_| [Vec::new(), Vec::new()]).collect();
        for round in 0..runs {
            for (i, t) in times.iter_mut().enumerate() {
                // Which runtime goes first alternates by round, so each runs as often right
                // after the other's previous program (whose pool may still be winding down
                // onto sleep) as after its own. In one fixed order, spmv at 2 workers ran
                // 1.1-1.3x rayon's time here, and 0.65-0.98x when run alone in either order.
                let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
                for k in order {
                    let slot = &mut t[k];
                    let start = Instant::now();
                    macro_rules! on {
                        ($f:ident($($arg:expr),*)) => {
                            if k == 0 {
                                mp.install(|| on_magpie::$f($($arg),*))
                            } else {
                                rp.install(|| on_rayon::$f($($arg),*))
                            }
                        };
                    }
                    match i {
                        0 => assert_eq!(on!(mandelbrot(inp.side)), want_mandel),
                        1 => {
                            // The copy is part of the timed program, as in the rayon original.
                            let mut v = inp.keys.clone();
                            on!(sort_unstable(&mut v));
                            assert!(v == want_keys);
                        }
                        2 => {
                            let mut v = inp.pairs.clone();
                            on!(sort_by_key(&mut v));
                            assert!(v == want_pairs);
                        }
                        // Each body's sum runs in the same order in every version: bit-equal.
                        3 => assert!(on!(nbody(&inp.bodies)) == want_nbody),
                        4 => assert_eq!(on!(word_count(&inp.text)), want_words),
                        5 => assert!(close(on!(fine_sum(&inp.floats)), want_sum)),
                        // Each row likewise.
                        _ => assert!(on!(spmv(&inp.csr)) == want_spmv),
                    }
                    slot.push(start.elapsed().as_secs_f64());
                }
            }
        }
        let mut logs = 0.0;
        for (name, t) in names.iter().zip(times) {
            let [m, r] = t.map(median);
            logs += (m / r).ln();
            println!(
                "{name:<14} {workers:>8} {m:>12.4} {r:>12.4} {:>10.2}",
                m / r
            );
        }
        println!(
            "{:<14} {workers:>8} {:>12} {:>12} {:>10.2}",
            "geometric mean",
            "",
            "",
            (logs / names.len() as f64).exp()
        );
    }
}
