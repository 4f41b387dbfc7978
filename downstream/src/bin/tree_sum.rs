//! The sum of a balanced binary tree of boxed nodes with one join per node (the benchmark chili
//! and Spice publish), as a downstream crate gets it: magpie, chili and rayon at 1 and 2
//! workers against the serial twin, timed in the same run and alternated round robin, so that
//! drifting machine load hits every version alike. Two figures:
//!
//! * **Inside the pool**, per tree size: nanoseconds per node with the sums made inside one
//!   entry into the pool (`Pool::install`, chili's `ThreadPool::scope`), and each runtime ÷
//!   chili.
//! * **Entered from outside**, for the smallest tree: each sum is one entry into the pool from
//!   this thread, as a library that calls a parallel function on a small input does, in µs per
//!   call and × the serial twin; beside them the floor, the same sum with joins that only keep
//!   a frame depth and test the stack (`magpie_downstream::floor`), as any runtime that bounds
//!   its stacks must.
//!
//! Every sum is checked against the closed form; the medians and the ratios are printed, and
//! beside each tree size the time a cache line takes from one thread to another and back,
//! measured before and after that size's runs (`magpie_downstream::round_trip_ns`): a steal
//! pays it a few times, which matters most for the smallest tree at 2 workers, where magpie
//! steals about three halves of a sum that lasts a few µs.
//!
//!     tree_sum [DEPTHS] [RUNS]        (defaults: 10,16,22 and 7; a tree of depth d has 2^d - 1 nodes)

use std::time::Instant;

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

fn serial(n: &Node) -> u64 {
    if let (Some(l), Some(r)) = (n.left.as_deref(), n.right.as_deref()) {
        return n.value + serial(l) + serial(r);
    }
    n.value + n.left.as_deref().map_or(0, serial) + n.right.as_deref().map_or(0, serial)
}

fn magpie_sum(n: &Node) -> u64 {
    if let (Some(l), Some(r)) = (n.left.as_deref(), n.right.as_deref()) {
        let (a, b) = magpie::join(|| magpie_sum(l), || magpie_sum(r));
        return n.value + a + b;
    }
    serial(n)
}

fn rayon_sum(n: &Node) -> u64 {
    if let (Some(l), Some(r)) = (n.left.as_deref(), n.right.as_deref()) {
        let (a, b) = rayon::join(|| rayon_sum(l), || rayon_sum(r));
        return n.value + a + b;
    }
    serial(n)
}

/// The sum with the floor under a join (`magpie_downstream::floor::depth_pair`): a join that
/// keeps a frame depth and tests the stack, and does nothing else; no pool.
fn floor_sum(n: &Node) -> u64 {
    if let (Some(l), Some(r)) = (n.left.as_deref(), n.right.as_deref()) {
        let (a, b) = magpie_downstream::floor::depth_pair(|| floor_sum(l), || floor_sum(r));
        return n.value + a + b;
    }
    serial(n)
}

fn chili_sum(s: &mut chili::Scope<'_>, n: &Node) -> u64 {
    if let (Some(l), Some(r)) = (n.left.as_deref(), n.right.as_deref()) {
        let (a, b) = s.join(|s| chili_sum(s, l), |s| chili_sum(s, r));
        return n.value + a + b;
    }
    serial(n)
}

const USAGE: &str =
    "tree_sum [DEPTHS] [RUNS]   (DEPTHS: comma-separated, 2 to 26; RUNS: at least 1)";

fn usage(msg: &str) -> ! {
    eprintln!("error: {msg}");
    eprintln!("usage: {USAGE}");
    std::process::exit(2);
}

type Run<'a> = Box<dyn Fn(&Node, usize) -> u64 + 'a>;

/// Times each version RUNS times round robin (after one warm-up each); each sample makes
/// `reps` sums and checks every one. Returns the median seconds per sum of each version.
fn measure(versions: &[(&str, Run)], tree: &Node, reps: usize, runs: usize, want: u64) -> Vec<f64> {
    magpie_downstream::round_robin(versions.len(), runs, |i| {
        let (name, f) = &versions[i];
        let t = Instant::now();
        let got = f(tree, reps);
        let s = t.elapsed().as_secs_f64();
        if got != want.wrapping_mul(reps as u64) {
            return Err(format!(
                "{name}: {reps} sums gave {got}, expected {reps} × {want}"
            ));
        }
        Ok(s / reps as f64)
    })
}

fn main() {
    let depths: Vec<u32> = match std::env::args().nth(1) {
        None => vec![10, 16, 22],
        Some(s) => s
            .split(',')
            .map(|d| match d.parse::<u32>() {
                Ok(d) if (2..=26).contains(&d) => d,
                _ => usage(&format!(
                    "a depth must be a whole number from 2 to 26, not '{d}'"
                )),
            })
            .collect(),
    };
    let runs = magpie_downstream::arg(2, 7, 1, 1_000_000, "RUNS", USAGE) as usize;
    magpie_downstream::floor::set_stack_limit();
    let magpie_downstream::Pools {
        magpie1,
        magpie2,
        rayon1,
        rayon2,
        chili1,
        chili2,
    } = magpie_downstream::Pools::new();

    println!(
        "tree sum, one join per node; medians of {runs} runs; every sum checked against N(N+1)/2"
    );
    println!("inside the pool, ns per node:");
    println!(
        "  {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}   {:>14} {:>14}   round trip ns",
        "nodes",
        "serial",
        "magpie1",
        "chili1",
        "rayon1",
        "magpie2",
        "chili2",
        "rayon2",
        "magpie÷chili 1",
        "magpie÷chili 2"
    );
    for &d in &depths {
        let tree = build(d).expect("a tree of depth >= 2");
        let nodes = (1u64 << d) - 1;
        let want = nodes * (nodes + 1) / 2;
        assert_eq!(serial(&tree), want, "the serial twin");
        // About 4 million nodes' work per sample.
        let reps = ((1usize << 22) / nodes as usize).max(1);
        let versions: Vec<(&str, Run)> = vec![
            (
                "serial",
                Box::new(|t, r| (0..r).map(|_| serial(std::hint::black_box(t))).sum()),
            ),
            (
                "magpie 1",
                Box::new(|t, r| magpie1.install(|| (0..r).map(|_| magpie_sum(t)).sum())),
            ),
            (
                "chili 1",
                Box::new(|t, r| {
                    let mut s = chili1.scope();
                    (0..r).map(|_| chili_sum(&mut s, t)).sum()
                }),
            ),
            (
                "rayon 1",
                Box::new(|t, r| rayon1.install(|| (0..r).map(|_| rayon_sum(t)).sum())),
            ),
            (
                "magpie 2",
                Box::new(|t, r| magpie2.install(|| (0..r).map(|_| magpie_sum(t)).sum())),
            ),
            (
                "chili 2",
                Box::new(|t, r| {
                    let mut s = chili2.scope();
                    (0..r).map(|_| chili_sum(&mut s, t)).sum()
                }),
            ),
            (
                "rayon 2",
                Box::new(|t, r| rayon2.install(|| (0..r).map(|_| rayon_sum(t)).sum())),
            ),
        ];
        let round_trip = || match magpie_downstream::round_trip_ns() {
            Some(ns) => format!("{ns:.0}"),
            None => "-".to_string(),
        };
        let before = round_trip();
        let m = measure(&versions, &tree, reps, runs, want);
        let after = round_trip();
        let ns: Vec<f64> = m.iter().map(|s| s * 1e9 / nodes as f64).collect();
        println!(
            "  {:>9} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2}   {:>14.2} {:>14.2}   {before} / {after}",
            nodes,
            ns[0],
            ns[1],
            ns[2],
            ns[3],
            ns[4],
            ns[5],
            ns[6],
            ns[1] / ns[2],
            ns[4] / ns[5]
        );
    }

    // Entered from outside: one entry into the pool per sum.
    let d = depths[0];
    let tree = build(d).expect("a tree of depth >= 2");
    let nodes = (1u64 << d) - 1;
    let want = nodes * (nodes + 1) / 2;
    let reps = 200;
    let versions: Vec<(&str, Run)> = vec![
        (
            "serial",
            Box::new(|t, r| (0..r).map(|_| serial(std::hint::black_box(t))).sum()),
        ),
        ("floor", Box::new(|t, r| (0..r).map(|_| floor_sum(t)).sum())),
        (
            "magpie 1",
            Box::new(|t, r| (0..r).map(|_| magpie1.install(|| magpie_sum(t))).sum()),
        ),
        (
            "magpie 2",
            Box::new(|t, r| (0..r).map(|_| magpie2.install(|| magpie_sum(t))).sum()),
        ),
        (
            "chili 1",
            Box::new(|t, r| (0..r).map(|_| chili_sum(&mut chili1.scope(), t)).sum()),
        ),
        (
            "chili 2",
            Box::new(|t, r| (0..r).map(|_| chili_sum(&mut chili2.scope(), t)).sum()),
        ),
        (
            "rayon 1",
            Box::new(|t, r| (0..r).map(|_| rayon1.install(|| rayon_sum(t))).sum()),
        ),
        (
            "rayon 2",
            Box::new(|t, r| (0..r).map(|_| rayon2.install(|| rayon_sum(t))).sum()),
        ),
    ];
    let m = measure(&versions, &tree, reps, runs, want);
    println!("entered from outside, {nodes} nodes, one entry per sum (µs per sum, × serial;");
    println!("floor: joins that only keep a depth and test the stack, on this thread, no pool):");
    for ((name, _), s) in versions.iter().zip(&m) {
        println!("  {name:<9} {:>8.2} µs {:>7.1}×", s * 1e6, s / m[0]);
    }
}
