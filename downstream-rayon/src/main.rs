//! rayon and ndarray as a user's program uses them, on magpie's rayon-core: the source names
//! only rayon and ndarray; `Cargo.toml`'s patch puts them on magpie. Every parallel result is
//! checked against its sequential twin, and every parallel closure checks that it runs on one of
//! magpie's workers (`magpie::current_thread_index()` is `Some` only there). Prints the answers;
//! exits 1 if any check fails.
//!
//!   magpie-downstream-rayon [N]      (the matrix side; default 512)

use ndarray::parallel::prelude::*;
use ndarray::{Array2, Axis, Zip};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Parallel closures that ran off magpie's workers.
static OFF_MAGPIE: AtomicUsize = AtomicUsize::new(0);

fn on_magpie() {
    if magpie::current_thread_index().is_none() {
        OFF_MAGPIE.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {
    let n = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 512,
        Some(Ok(n)) if (2..=8192).contains(&n) => n,
        Some(_) => {
            eprintln!("usage: magpie-downstream-rayon [N]   (N: the matrix side, 2 to 8192)");
            std::process::exit(2);
        }
    };
    let mut failed = Vec::new();
    let mut check = |what: &str, ok: bool| {
        if !ok {
            failed.push(what.to_string());
        }
    };

    // rayon's iterators, on the global pool (RAYON_NUM_THREADS counts).
    let sum: u64 = (0..1_000_000u64)
        .into_par_iter()
        .map(|i| {
            on_magpie();
            i * i % 1009
        })
        .sum();
    let serial: u64 = (0..1_000_000u64).map(|i| i * i % 1009).sum();
    check("rayon sum", sum == serial);
    println!("rayon: sum of i*i mod 1009 over 0..1e6 = {sum} (serial {serial})");

    let mut keys: Vec<u64> = (0..500_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    keys.par_sort_unstable();
    check("rayon par_sort_unstable", keys == sorted);
    let words = ["magpie", "rayon", "ndarray", "steal"];
    let counts = (0..200_000usize)
        .into_par_iter()
        .fold(
            || [0usize; 4],
            |mut c, i| {
                on_magpie();
                c[i * 7 % 4] += words[i * 7 % 4].len();
                c
            },
        )
        .reduce(
            || [0; 4],
            |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]],
        );
    check(
        "rayon fold/reduce",
        counts == [300_000, 250_000, 350_000, 250_000],
    );
    println!(
        "rayon: sorted {} keys; letter counts {counts:?}",
        keys.len()
    );

    // ndarray's parallel methods, in a pool of 2 built with rayon's builder.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("ndarray-{i}"))
        .build()
        .expect("a pool of 2");
    let a = Array2::from_shape_fn((n, n), |(i, j)| ((i * 31 + j * 17) % 101) as f64 / 101.0);
    let b = Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 53) as f64 / 53.0);
    let (c, row_sums, mapped) = pool.install(|| {
        let mut c = Array2::<f64>::zeros((n, n));
        Zip::from(&mut c).and(&a).and(&b).par_for_each(|c, &a, &b| {
            on_magpie();
            *c = a.mul_add(b, 1.0);
        });
        let row_sums: Vec<f64> = a
            .axis_iter(Axis(0))
            .into_par_iter()
            .map(|row| {
                on_magpie();
                row.sum()
            })
            .collect();
        let mut mapped = b.clone();
        mapped.par_map_inplace(|x| {
            on_magpie();
            *x = x.sqrt() * 2.0;
        });
        (c, row_sums, mapped)
    });
    let mut c_serial = Array2::<f64>::zeros((n, n));
    Zip::from(&mut c_serial)
        .and(&a)
        .and(&b)
        .for_each(|c, &a, &b| *c = a.mul_add(b, 1.0));
    check("ndarray Zip::par_for_each", c == c_serial);
    let sums_serial: Vec<f64> = a.axis_iter(Axis(0)).map(|row| row.sum()).collect();
    check(
        "ndarray axis_iter().into_par_iter()",
        row_sums == sums_serial,
    );
    check(
        "ndarray par_map_inplace",
        mapped == b.mapv(|x| x.sqrt() * 2.0),
    );
    println!(
        "ndarray ({n}x{n}, pool of 2): sum of a*b+1 = {:.6}, sum of row sums = {:.6}, sum of 2*sqrt(b) = {:.6}",
        c.sum(),
        row_sums.iter().sum::<f64>(),
        mapped.sum()
    );

    let off = OFF_MAGPIE.load(Ordering::Relaxed);
    check("every parallel closure ran on a magpie worker", off == 0);
    println!("parallel closures that ran off magpie's workers: {off}");
    if failed.is_empty() {
        println!("all checks passed: rayon and ndarray ran on magpie");
    } else {
        eprintln!("failed: {}", failed.join(", "));
        std::process::exit(1);
    }
}
