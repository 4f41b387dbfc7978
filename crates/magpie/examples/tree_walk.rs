//! Walking a tree with `magpie::scope`, where the spawned tasks borrow from `main`'s stack.
//!
//!     cargo run --release -p magpie --example tree_walk
//!
//! The tree is a `Vec<Node>` whose nodes name their children by index. The walk spawns a task
//! per child into one scope; every task borrows the `&[Node]` slice and a `Totals` (two
//! `AtomicU64` counters) that live in `main`'s frame, with no `Arc` and no `'static` bound:
//! `scope` returns only once every task spawned into it (also by other tasks) has finished. The
//! node count and the sum of the values are checked against a serial walk; the program panics
//! if they differ.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

struct Node {
    value: u64,
    children: Vec<usize>,
}

/// Nodes visited and the sum of their values.
#[derive(Default)]
struct Totals {
    count: AtomicU64,
    sum: AtomicU64,
}

/// A random recursive tree: node `i > 0` hangs under a pseudo-random earlier node.
fn build_tree(n: usize) -> Vec<Node> {
    let value = |i: usize| (i as u64 * 2_654_435_761) % 1000;
    let mut nodes: Vec<Node> = (0..n)
        .map(|i| Node {
            value: value(i),
            children: vec![],
        })
        .collect();
    for i in 1..n {
        let parent = ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) as usize % i;
        nodes[parent].children.push(i);
    }
    nodes
}

/// Visits node `i` and spawns a task for each child into the same scope `s`.
fn walk<'s>(s: &magpie::Scope<'s>, nodes: &'s [Node], i: usize, totals: &'s Totals) {
    totals.count.fetch_add(1, Relaxed);
    totals.sum.fetch_add(nodes[i].value, Relaxed);
    for &c in &nodes[i].children {
        s.spawn(move |s| walk(s, nodes, c, totals));
    }
}

fn serial(nodes: &[Node], i: usize) -> (u64, u64) {
    nodes[i]
        .children
        .iter()
        .fold((1, nodes[i].value), |(n, v), &c| {
            let (cn, cv) = serial(nodes, c);
            (n + cn, v + cv)
        })
}

fn main() -> Result<(), magpie::Error> {
    let nodes = build_tree(200_000);
    // Lives on main's stack; the tasks borrow it (and `nodes`).
    let totals = Totals::default();

    let pool = magpie::Pool::builder().build()?;
    pool.install(|| magpie::scope(|s| walk(s, &nodes, 0, &totals)));

    let (count, sum) = (totals.count.into_inner(), totals.sum.into_inner());
    let (want_count, want_sum) = serial(&nodes, 0);
    println!("parallel: {count} nodes, sum {sum}");
    println!("serial:   {want_count} nodes, sum {want_sum}");
    assert_eq!(
        (count, sum),
        (want_count, want_sum),
        "parallel walk disagrees with serial"
    );
    assert_eq!(count, nodes.len() as u64, "not every node was visited");
    Ok(())
}
