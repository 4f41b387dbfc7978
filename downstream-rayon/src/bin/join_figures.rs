//! fib(N) without a cutoff and the sum of a balanced tree of boxed nodes (one join per node),
//! written once with `rayon::join` (which this crate's patch puts on magpie's rayon-core) and
//! once with `magpie::join`, timed in the same run at 1 and 2 workers, alternated round robin.
//! Prints the medians and rayon-on-magpie ÷ magpie: what a rayon user pays for reaching
//! magpie's join through rayon's API. Then the same for a small input entered from outside the
//! pool: a 1,023-node tree, one `install` per sum, in µs and × the serial twin. Every result is
//! checked against the closed form.
//!
//! With a fourth argument, `rayon` or `magpie`, runs that version alone, on the 1-worker pools
//! only, where nothing is stolen and the same arguments run the same instructions: the two
//! runs' instruction counts under callgrind are what a join costs through rayon's API against
//! magpie's own (`scripts/join-figures.sh`, section 3b).
//!
//!     join_figures [N] [DEPTH] [RUNS] [rayon|magpie]      (defaults: 30, 20, 7, both)

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

const USAGE: &str = "join_figures [N] [DEPTH] [RUNS] [rayon|magpie]";

fn arg(i: usize, default: u64, lo: u64, hi: u64, what: &str) -> u64 {
    match std::env::args().nth(i).map(|s| (s.parse::<u64>(), s)) {
        None => default,
        Some((Ok(v), _)) if (lo..=hi).contains(&v) => v,
        Some((_, s)) => {
            eprintln!("error: {what} must be a whole number from {lo} to {hi}, not '{s}'");
            eprintln!("usage: {USAGE}");
            std::process::exit(2);
        }
    }
}

type Run<'a> = Box<dyn Fn() -> u64 + 'a>;

/// Runs one computation, inside the pool: the function callgrind's `--toggle-collect` counts
/// (section 3b of `scripts/join-figures.sh`), on whichever thread runs it, so that only the
/// computations are counted, not the setup or the entry into the pool.
#[inline(never)]
fn counted(f: &dyn Fn() -> u64) -> u64 {
    f()
}

/// Runs every version once to warm up, then `runs` times round robin, checking each result;
/// returns each version's median seconds.
fn round_robin(versions: &[(String, u64, Run)], runs: usize) -> Vec<f64> {
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
    times.iter_mut().map(|t| median(t)).collect()
}

fn main() {
    let n = arg(1, 30, 2, 45, "N");
    let depth = arg(2, 20, 2, 26, "DEPTH") as u32;
    let runs = arg(3, 7, 1, 1000, "RUNS") as usize;
    let only = std::env::args().nth(4);
    if let Some(o) = only.as_deref().filter(|o| !["rayon", "magpie"].contains(o)) {
        eprintln!("error: the fourth argument must be 'rayon' or 'magpie', not '{o}'");
        eprintln!("usage: {USAGE}");
        std::process::exit(2);
    }
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
            Box::new(move || rp.install(|| counted(&|| rayon_fib(n)))),
        ));
        versions.push((
            format!("fib magpie {w}"),
            fib_want,
            Box::new(move || mp.install(|| counted(&|| magpie_fib(n)))),
        ));
        versions.push((
            format!("tree rayon-on-magpie {w}"),
            sum_want,
            Box::new(move || rp.install(|| counted(&|| rayon_sum(t)))),
        ));
        versions.push((
            format!("tree magpie {w}"),
            sum_want,
            Box::new(move || mp.install(|| counted(&|| magpie_sum(t)))),
        ));
    }
    if let Some(o) = only.as_deref() {
        // One version, at 1 worker.
        let v = if o == "rayon" {
            "rayon-on-magpie"
        } else {
            "magpie"
        };
        let keep = [format!("fib {v} 1"), format!("tree {v} 1")];
        versions.retain(|(name, _, _)| keep.contains(name));
    }
    let med = round_robin(&versions, runs);
    if only.is_some() {
        // A join per fib call with n >= 2 (F(n + 1) - 1 of them) and per inner node, in each
        // of the warm-up and the timed runs.
        let joins = (runs as u64 + 1) * (fib_expected(n + 1) - 1 + nodes / 2);
        println!("fib({n}) = {fib_want} and the sum of a {nodes}-node tree = {sum_want}, verified on every run; joins: {joins}");
        for ((name, _, _), m) in versions.iter().zip(&med) {
            println!("  {name:<24} {:>9.2} ms", m * 1e3);
        }
        return;
    }
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

    // A small input entered from outside: a 1,023-node tree, one entry into the pool per sum
    // (`ThreadPool::install` of rayon's API on magpie's rayon-core, and `Pool::install`).
    let small = build(10).expect("depth 10");
    let small_want = 1023 * 1024 / 2;
    const REPS: u64 = 200;
    let s = &small;
    let mut outside: Vec<(String, u64, Run)> = vec![(
        "serial".to_string(),
        REPS * small_want,
        Box::new(move || (0..REPS).map(|_| serial_sum(std::hint::black_box(s))).sum()),
    )];
    for (i, (rp, mp)) in pools.iter().enumerate() {
        let w = i + 1;
        outside.push((
            format!("rayon-on-magpie {w}"),
            REPS * small_want,
            Box::new(move || (0..REPS).map(|_| rp.install(|| rayon_sum(s))).sum()),
        ));
        outside.push((
            format!("magpie {w}"),
            REPS * small_want,
            Box::new(move || (0..REPS).map(|_| mp.install(|| magpie_sum(s))).sum()),
        ));
    }
    let med = round_robin(&outside, runs);
    println!("entered from outside, 1023 nodes, one entry per sum (µs per sum, × serial):");
    for ((name, _, _), m) in outside.iter().zip(&med) {
        let us = m * 1e6 / REPS as f64;
        println!("  {name:<24} {us:>7.2} µs {:>6.1}×", m / med[0]);
    }
    for w in 0..2 {
        println!(
            "{} worker{}: rayon-on-magpie ÷ magpie, entered from outside: {:.2}",
            w + 1,
            if w == 0 { "" } else { "s" },
            med[1 + 2 * w] / med[2 + 2 * w]
        );
    }
}
