//! fib(N) without a cutoff and the sum of a balanced tree of boxed nodes (one join per node),
//! written once with `rayon::join` (which this crate's patch puts on magpie's rayon-core) and
//! once with `magpie::join`, timed in the same run at 1 and 2 workers, alternated round robin.
//! Prints the medians and rayon-on-magpie ÷ magpie: what a rayon user pays for reaching
//! magpie's join through rayon's API. Every result is checked against the closed form.
//!
//!     join_figures [N] [DEPTH] [RUNS]      (defaults: 30, 20, 7)

use std::time::Instant;

fn rayon_fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| rayon_fib(n - 1), || rayon_fib(n - 2));
    a + b
}

fn magpie_fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| magpie_fib(n - 1), || magpie_fib(n - 2));
    a + b
}

struct Node {
    value: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}

/// A full tree of `depth` levels whose nodes hold 1..=2^depth - 1 in heap order (the children
/// of `i` are `2i` and `2i + 1`), allocated in that order, level by level. Every runtime walks
/// the same tree; in this layout a left-first walk and a right-first one (chili runs a join's
/// second closure first) read memory as mirror images, so neither order is favoured by where
/// the allocator put the nodes.
fn build(depth: u32) -> Option<Box<Node>> {
    let mut levels: Vec<Vec<Box<Node>>> = (0..depth)
        .map(|d| {
            let first = 1u64 << d;
            (first..2 * first)
                .map(|value| {
                    Box::new(Node {
                        value,
                        left: None,
                        right: None,
                    })
                })
                .collect()
        })
        .collect();
    let mut below = levels.pop()?;
    while let Some(mut level) = levels.pop() {
        let mut children = below.into_iter();
        for parent in &mut level {
            parent.left = children.next();
            parent.right = children.next();
        }
        below = level;
    }
    below.pop()
}

fn serial_sum(n: &Node) -> u64 {
    n.value + n.left.as_deref().map_or(0, serial_sum) + n.right.as_deref().map_or(0, serial_sum)
}

fn rayon_sum(n: &Node) -> u64 {
    if let (Some(l), Some(r)) = (n.left.as_deref(), n.right.as_deref()) {
        let (a, b) = rayon::join(|| rayon_sum(l), || rayon_sum(r));
        return n.value + a + b;
    }
    serial_sum(n)
}

fn magpie_sum(n: &Node) -> u64 {
    if let (Some(l), Some(r)) = (n.left.as_deref(), n.right.as_deref()) {
        let (a, b) = magpie::join(|| magpie_sum(l), || magpie_sum(r));
        return n.value + a + b;
    }
    serial_sum(n)
}

fn fib_expected(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn arg(i: usize, default: u64, lo: u64, hi: u64, what: &str) -> u64 {
    match std::env::args().nth(i).map(|s| (s.parse::<u64>(), s)) {
        None => default,
        Some((Ok(v), _)) if (lo..=hi).contains(&v) => v,
        Some((_, s)) => {
            eprintln!("error: {what} must be a whole number from {lo} to {hi}, not '{s}'");
            eprintln!("usage: join_figures [N] [DEPTH] [RUNS]");
            std::process::exit(2);
        }
    }
}

type Run<'a> = Box<dyn Fn() -> u64 + 'a>;

fn main() {
    let n = arg(1, 30, 2, 45, "N");
    let depth = arg(2, 20, 2, 26, "DEPTH") as u32;
    let runs = arg(3, 7, 1, 1000, "RUNS") as usize;
    let tree = build(depth).expect("depth >= 2");
    let nodes = (1u64 << depth) - 1;
    let (fib_want, sum_want) = (fib_expected(n), nodes * (nodes + 1) / 2);
    let pools: Vec<(rayon::ThreadPool, magpie::Pool)> = [1, 2]
        .iter()
        .map(|&w| {
            (
                rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .expect("rayon pool on magpie"),
                magpie::Pool::builder()
                    .workers(w)
                    .build()
                    .expect("magpie pool"),
            )
        })
        .collect();
    let mut versions: Vec<(String, u64, Run)> = Vec::new();
    for (i, (rp, mp)) in pools.iter().enumerate() {
        let w = i + 1;
        let t = &tree;
        versions.push((
            format!("fib rayon-on-magpie {w}"),
            fib_want,
            Box::new(move || rp.install(|| rayon_fib(n))),
        ));
        versions.push((
            format!("fib magpie {w}"),
            fib_want,
            Box::new(move || mp.install(|| magpie_fib(n))),
        ));
        versions.push((
            format!("tree rayon-on-magpie {w}"),
            sum_want,
            Box::new(move || rp.install(|| rayon_sum(t))),
        ));
        versions.push((
            format!("tree magpie {w}"),
            sum_want,
            Box::new(move || mp.install(|| magpie_sum(t))),
        ));
    }
    let mut times = vec![Vec::with_capacity(runs); versions.len()];
    for round in 0..=runs {
        for (i, (name, want, f)) in versions.iter().enumerate() {
            let t = Instant::now();
            let got = f();
            let s = t.elapsed().as_secs_f64();
            if got != *want {
                eprintln!("error: {name}: got {got}, expected {want}");
                std::process::exit(1);
            }
            if round > 0 {
                times[i].push(s);
            }
        }
    }
    let med: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    println!("fib({n}) = {fib_want} and the sum of a {nodes}-node tree = {sum_want}, verified on every run; medians of {runs} runs");
    for ((name, _, _), m) in versions.iter().zip(&med) {
        println!("  {name:<24} {:>9.2} ms", m * 1e3);
    }
    for (w, c) in med.chunks(4).enumerate() {
        println!(
            "{} worker{}: rayon-on-magpie ÷ magpie: fib {:.2}, tree sum {:.2}",
            w + 1,
            if w == 0 { "" } else { "s" },
            c[0] / c[1],
            c[2] / c[3]
        );
    }
}
