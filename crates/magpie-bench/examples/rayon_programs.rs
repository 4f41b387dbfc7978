//! Ordinary rayon programs, written once and compiled against both `magpie::prelude` and
//! `rayon::prelude` (a macro instantiates the same source twice): a Mandelbrot image,
//! `par_sort_unstable` and `par_sort_by_key` of millions of keys, an n-body step over
//! `par_iter_mut().zip(..)`, a word count with `fold`/`reduce` into maps, a fine-grained
//! `map().sum()` and a sparse matrix-vector product. Each result is checked against the
//! sequential one (exactly, or to 1e-9 relative for float sums). Prints magpie's time ÷ rayon's
//! per program at 1 and 2 workers (medians of RUNS runs, alternated) and their geometric mean.
//!
//! cargo run --release -p magpie-bench --example rayon_programs -- [SCALE] [RUNS]
//! (SCALE 1 = the default sizes; RUNS default 5)

use std::collections::HashMap;
use std::time::Instant;

/// The inputs, shared by both runtimes.
struct Inputs {
    keys: Vec<u64>,
    pairs: Vec<(u32, u64)>,
    bodies: Vec<[f64; 3]>,
    text: Vec<String>,
    floats: Vec<f64>,
    /// CSR: row starts, column indices, values; and the vector.
    rows: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f64>,
    x: Vec<f64>,
    side: usize,
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn inputs(scale: usize) -> Inputs {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let n = 2_000_000 * scale;
    let keys: Vec<u64> = (0..n).map(|_| xorshift(&mut s)).collect();
    let pairs: Vec<(u32, u64)> = (0..n as u64)
        .map(|i| ((xorshift(&mut s) % 1000) as u32, i))
        .collect();
    let bodies: Vec<[f64; 3]> = (0..1500 * scale)
        .map(|_| [0, 1, 2].map(|_| (xorshift(&mut s) % 10_000) as f64 / 100.0))
        .collect();
    let words = [
        "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "magpie", "rayon",
    ];
    let text: Vec<String> = (0..200_000 * scale)
        .map(|_| {
            (0..8)
                .map(|_| words[(xorshift(&mut s) % 10) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let floats: Vec<f64> = (0..5_000_000 * scale)
        .map(|i| (i % 1000) as f64 * 1e-3)
        .collect();
    let m = 200_000 * scale;
    let (mut rows, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for _ in 0..m {
        for _ in 0..(xorshift(&mut s) % 16 + 1) {
            cols.push((xorshift(&mut s) % m as u64) as usize);
            vals.push((xorshift(&mut s) % 100) as f64 * 0.01);
        }
        rows.push(cols.len());
    }
    let x: Vec<f64> = (0..m).map(|i| (i % 7) as f64).collect();
    Inputs {
        keys,
        pairs,
        bodies,
        text,
        floats,
        rows,
        cols,
        vals,
        x,
        side: 600 * scale.max(1),
    }
}

macro_rules! programs {
    ($m:ident, $krate:ident) => {
        mod $m {
            use super::Inputs;
            use std::collections::HashMap;
            use $krate::prelude::*;

            /// Iterations until escape, per pixel of a side × side image, summed.
            pub fn mandelbrot(inp: &Inputs) -> u64 {
                let side = inp.side;
                (0..side * side)
                    .into_par_iter()
                    .map(|p| super::escape(p, side))
                    .sum()
            }
            pub fn sort_unstable(inp: &Inputs) -> Vec<u64> {
                let mut k = inp.keys.clone();
                k.par_sort_unstable();
                k
            }
            pub fn sort_by_key(inp: &Inputs) -> Vec<(u32, u64)> {
                let mut p = inp.pairs.clone();
                p.par_sort_by_key(|e| e.0);
                p
            }
            /// One step: every body's velocity from every other's pull.
            pub fn nbody(inp: &Inputs) -> Vec<[f64; 3]> {
                let b = &inp.bodies;
                let mut vel = vec![[0.0; 3]; b.len()];
                vel.par_iter_mut().zip(b.par_iter()).for_each(|(v, p)| {
                    for q in b {
                        let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
                        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 0.01;
                        let f = 1.0 / (r2 * r2.sqrt());
                        for k in 0..3 {
                            v[k] += d[k] * f;
                        }
                    }
                });
                vel
            }
            pub fn word_count(inp: &Inputs) -> HashMap<String, usize> {
                inp.text
                    .par_iter()
                    .fold(HashMap::new, |mut m: HashMap<String, usize>, line| {
                        for w in line.split(' ') {
                            *m.entry(w.to_string()).or_insert(0) += 1;
                        }
                        m
                    })
                    .reduce(HashMap::new, |mut a, b| {
                        for (k, v) in b {
                            *a.entry(k).or_insert(0) += v;
                        }
                        a
                    })
            }
            pub fn fine_sum(inp: &Inputs) -> f64 {
                inp.floats.par_iter().map(|x| x * x + 1.0).sum()
            }
            pub fn spmv(inp: &Inputs) -> Vec<f64> {
                (0..inp.rows.len() - 1)
                    .into_par_iter()
                    .map(|r| {
                        (inp.rows[r]..inp.rows[r + 1])
                            .map(|k| inp.vals[k] * inp.x[inp.cols[k]])
                            .sum::<f64>()
                    })
                    .collect()
            }
        }
    };
}

programs!(on_magpie, magpie);
programs!(on_rayon, rayon);

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
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
    // The sequential answers.
    let want_mandel: u64 = (0..inp.side * inp.side).map(|p| escape(p, inp.side)).sum();
    let mut want_keys = inp.keys.clone();
    want_keys.sort_unstable();
    let mut want_pairs = inp.pairs.clone();
    want_pairs.sort_by_key(|e| e.0);
    let want_sum: f64 = inp.floats.iter().map(|x| x * x + 1.0).sum();
    let mut want_words: HashMap<String, usize> = HashMap::new();
    for line in &inp.text {
        for w in line.split(' ') {
            *want_words.entry(w.to_string()).or_insert(0) += 1;
        }
    }
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
        let mut nbody_ref: Option<Vec<[f64; 3]>> = None;
        let mut spmv_ref: Option<Vec<f64>> = None;
        for _ in 0..runs {
            for (i, t) in times.iter_mut().enumerate() {
                for (k, slot) in t.iter_mut().enumerate() {
                    let start = Instant::now();
                    macro_rules! on {
                        ($f:ident) => {
                            if k == 0 {
                                mp.install(|| on_magpie::$f(&inp))
                            } else {
                                rp.install(|| on_rayon::$f(&inp))
                            }
                        };
                    }
                    match i {
                        0 => assert_eq!(on!(mandelbrot), want_mandel),
                        1 => assert_eq!(on!(sort_unstable), want_keys),
                        2 => assert_eq!(on!(sort_by_key), want_pairs),
                        3 => {
                            let v = on!(nbody);
                            // Each body's sum runs in the same order in both: bit-equal.
                            match &nbody_ref {
                                Some(r) => assert!(v == *r),
                                None => nbody_ref = Some(v),
                            }
                        }
                        4 => assert_eq!(on!(word_count), want_words),
                        5 => assert!(close(on!(fine_sum), want_sum)),
                        _ => {
                            let v = on!(spmv);
                            match &spmv_ref {
                                Some(r) => assert!(v == *r),
                                None => spmv_ref = Some(v),
                            }
                        }
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

/// Iterations until pixel `p` of a side × side Mandelbrot image escapes (at most 200).
fn escape(p: usize, side: usize) -> u64 {
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
