//! Tree sum: the sum of a balanced binary tree of boxed nodes with a fork-join at every inner
//! node and no sequential cutoff, the benchmark that chili (`benches/overhead.rs`) and Spice
//! publish. Each join does almost no work besides following two pointers, so the kernel measures
//! the per-join cost on a memory-bound tree walk. `n` is the tree's depth: a full tree of
//! 2^n - 1 nodes (depth 1 is a lone leaf), built once per size outside the timed region (the
//! runner caches it) and only summed in it. The nodes hold 1..=2^n - 1 (heap order: the root 1,
//! the children of `i` are `2i` and `2i + 1`), so [`verify`] checks a sum against N(N+1)/2. A
//! leaf returns its value without joining, as in Spice; chili's benchmark also joins at the
//! leaves, over their empty children. Versions: magpie ([`parallel`], `magpie::join`), the
//! serial twin ([`serial`]), rayon ([`rayon_join`]) and chili ([`chili_join`]).
//!
//! The nodes are allocated in level order (in the order of their values), unlike chili's benchmark,
//! which allocates them depth-first with the children before their parent. The versions do not walk
//! the tree in the same order: magpie, rayon and the serial twin run a join's first closure (the
//! left subtree) on the calling thread first, chili runs the second (the right subtree) first. Over
//! a depth-first layout one of those orders reads memory as one sequential stream and the other
//! does not: on chili's layout at depth 22 (on a 2-core test machine), the serial recursion took
//! 30 ms right-first and 66 ms left-first, and chili at 1 thread was twice as fast as the serial
//! twin. In level order the two walks are mirror images (each level read as its own stream,
//! forwards or backwards), so their times agree (19 and 18 ms there) and the comparison measures
//! the joins, not the layout.

use crate::harness::{answered, Measured, RunError};
use crate::kernel::{self, Def, Kernel};
use crate::kernel::Case;
use crate::workload::{self, Runtime};
use crate::Peer;

/// `n` (depth) for `--size ci`: 1,023 nodes.
pub const CI: u64 = 10;
/// `n` (depth) for `--size default`: 4,194,303 nodes.
pub const DEFAULT: u64 = 22;
/// `n` (depth) for `--size paper`: 16,777,215 nodes, chili's larger size.
pub const PAPER: u64 = 24;
/// Largest `n` accepted: 2^28 - 1 nodes already take about 8 GiB of boxed nodes.
pub const MAX_N: u64 = 28;

/// A tree node, boxed as in chili's and Spice's benchmark.
pub struct Node {
    /// The node's value.
    pub value: i64,
    /// The left subtree.
    pub left: Option<Box<Node>>,
    /// The right subtree.
    pub right: Option<Box<Node>>,
}

/// The nodes of a full tree of depth `n`: 2^n - 1.
pub fn nodes(n: u64) -> u64 {
    (1u64 << n) - 1
}

/// The full tree of depth `n` (at least 1), its nodes holding 1..=2^n - 1 in heap order (the
/// children of `i` are `2i` and `2i + 1`) and allocated in that order, level by level (see the
/// module's documentation for why).
pub fn build(n: u64) -> Box<Node> {
    assert!((1..=MAX_N).contains(&n), "tree depth {n} out of range");
    // Every level's nodes, allocated top-down, then linked bottom-up (moving a box moves no node).
    let mut levels: Vec<Vec<Box<Node>>> = (0..n)
        .map(|d| {
            let first = 1i64 << d;
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
    let mut below = levels.pop().expect("n >= 1");
    while let Some(mut level) = levels.pop() {
        let mut children = below.into_iter();
        for parent in &mut level {
            parent.left = children.next();
            parent.right = children.next();
        }
        below = level;
    }
    below.pop().expect("one root")
}

/// The tree's sum with `magpie::join` at every inner node. Call inside `Pool::install`.
pub fn parallel(node: &Node) -> i64 {
    if node.left.is_none() && node.right.is_none() {
        return node.value;
    }
    let (a, b) = magpie::join(
        || node.left.as_deref().map_or(0, parallel),
        || node.right.as_deref().map_or(0, parallel),
    );
    node.value + a + b
}

/// The serial twin: the same recursion, no runtime.
pub fn serial(node: &Node) -> i64 {
    let a = node.left.as_deref().map_or(0, serial);
    let b = node.right.as_deref().map_or(0, serial);
    node.value + a + b
}

/// The tree's sum with `rayon::join` at every inner node. Call inside
/// `rayon::ThreadPool::install`.
pub fn rayon_join(node: &Node) -> i64 {
    if node.left.is_none() && node.right.is_none() {
        return node.value;
    }
    let (a, b) = rayon::join(
        || node.left.as_deref().map_or(0, rayon_join),
        || node.right.as_deref().map_or(0, rayon_join),
    );
    node.value + a + b
}

/// The tree's sum with `chili::Scope::join` at every inner node.
pub fn chili_join(s: &mut chili::Scope<'_>, node: &Node) -> i64 {
    if node.left.is_none() && node.right.is_none() {
        return node.value;
    }
    let (a, b) = s.join(
        |s| node.left.as_deref().map_or(0, |l| chili_join(s, l)),
        |s| node.right.as_deref().map_or(0, |r| chili_join(s, r)),
    );
    node.value + a + b
}

/// The known sum of the tree of depth `n`: 1 + 2 + ... + N = N(N+1)/2, N = 2^n - 1.
pub fn expected(n: u64) -> i64 {
    let count = nodes(n) as i64;
    count * (count + 1) / 2
}

/// A run's answer: `sum of N nodes = value`.
pub fn answer(n: u64, got: i64) -> String {
    format!("sum of {} nodes = {got}", nodes(n))
}

/// Checks a computed sum of the tree of depth `n`.
pub fn verify(n: u64, got: i64) -> Result<(), String> {
    let want = expected(n);
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "tree-sum of depth {n} ({} nodes) = {got}, expected {want}",
            nodes(n)
        ))
    }
}

/// The depth of the small input: 1,023 nodes, about a microsecond or two of serial work.
pub const SMALL: u64 = CI;

/// One runtime's time for one call on the small input from outside its pool.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SmallInputRow {
    /// `magpie`, `rayon` or `chili`.
    pub runtime: String,
    /// The pool's threads.
    pub workers: usize,
    /// Median microseconds per call.
    pub us: f64,
    /// `us` ÷ the serial twin's.
    pub x_serial: f64,
}

/// A library's parallel function called on a small input from a thread outside any pool: the
/// tree of [`SMALL`] levels summed once per entry into the pool (`Pool::install`, rayon's
/// `ThreadPool::install`, chili's `ThreadPool::scope`), against the serial twin.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SmallInput {
    /// Nodes in the tree.
    pub nodes: u64,
    /// The sum every call returned (checked against N(N+1)/2).
    pub answer: String,
    /// Median microseconds per serial call.
    pub serial_us: f64,
    /// Timed runs of each version.
    pub runs: usize,
    /// Every runtime at every worker count.
    pub rows: Vec<SmallInputRow>,
}

/// Measures [`SmallInput`] at each of `workers`: each version makes a batch of calls per run
/// (every sum checked), the versions alternated round robin `runs` times so that drifting load
/// hits all alike; the figure is the median per call.
pub fn small_input(workers: &[usize], runs: usize) -> Result<SmallInput, String> {
    let runs = runs.max(1);
    let tree = build(SMALL);
    let want = expected(SMALL);
    // About 10 ms of serial work per batch.
    let calls = 5000usize;
    type Call<'a> = Box<dyn Fn(&Node) -> i64 + 'a>;
    let mut versions: Vec<(String, usize, Call)> = vec![(
        "serial".into(),
        0,
        Box::new(|t| serial(std::hint::black_box(t))),
    )];
    for &w in workers {
        let m = magpie::Pool::builder()
            .workers(w)
            .build()
            .map_err(|e| format!("cannot build a magpie pool of {w}: {e}"))?;
        versions.push((
            "magpie".into(),
            w,
            Box::new(move |t| m.install(|| parallel(t))),
        ));
        let r = rayon::ThreadPoolBuilder::new()
            .num_threads(w)
            .build()
            .map_err(|e| format!("cannot build a rayon pool of {w}: {e}"))?;
        versions.push((
            "rayon".into(),
            w,
            Box::new(move |t| r.install(|| rayon_join(t))),
        ));
        let c = chili::ThreadPool::with_config(chili::Config {
            thread_count: std::num::NonZero::new(w),
            ..Default::default()
        });
        versions.push((
            "chili".into(),
            w,
            Box::new(move |t| chili_join(&mut c.scope(), t)),
        ));
    }
    let mut times: Vec<Vec<f64>> = vec![vec![]; versions.len()];
    for round in 0..=runs {
        for (i, (name, w, call)) in versions.iter().enumerate() {
            let t0 = std::time::Instant::now();
            let mut sum = 0i64;
            for _ in 0..calls {
                sum = sum.wrapping_add(call(&tree));
            }
            let us = t0.elapsed().as_secs_f64() * 1e6 / calls as f64;
            if sum != want.wrapping_mul(calls as i64) {
                return Err(format!(
                    "{name} at {w} workers: {calls} sums of the small tree gave {sum}, \
                     expected {calls} × {want}"
                ));
            }
            // The first round warms every version up and is not counted.
            if round > 0 {
                times[i].push(us);
            }
        }
    }
    let median = |v: &[f64]| {
        crate::harness::Timing {
            times_s: v.to_vec(),
        }
        .median()
        .unwrap_or(f64::NAN)
    };
    let serial_us = median(&times[0]);
    let rows = versions
        .iter()
        .zip(&times)
        .skip(1)
        .map(|((name, w, _), t)| {
            let us = median(t);
            SmallInputRow {
                runtime: name.clone(),
                workers: *w,
                us,
                x_serial: us / serial_us,
            }
        })
        .collect();
    Ok(SmallInput {
        nodes: nodes(SMALL),
        answer: answer(SMALL, want),
        serial_us,
        runs,
        rows,
    })
}

static DEF: Def = Def {
    name: "tree-sum",
    n_meaning: "tree depth (2^n - 1 nodes)",
    sizes: [CI, DEFAULT, PAPER],
    max_n: MAX_N,
    peers: &[Peer::RayonJoin, Peer::ChiliJoin],
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times the sum on `rt`. The tree is built once (outside the timed region) and kept for the
/// next measurement of the same depth ([`workload::cached`]): only the sum is timed.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let n = case.n;
    let tree = workload::cached(("tree-sum-tree", n), || build(n));
    let tree: &Node = &tree;
    kernel::measure_versions(
        rt,
        runs,
        || (),
        |_| serial(tree),
        |_| parallel(tree),
        |_| rayon_join(tree),
        |s, _| chili_join(s, tree),
        |_, r| answered(verify(n, r), || answer(n, r)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The magpie version under every policy and width is checked by
    // `runner::tests::every_kernel_policy_and_width_verifies`.
    #[test]
    fn serial_twin_verifies() {
        for n in [1, 2, 3, CI] {
            assert_eq!(verify(n, serial(&build(n))), Ok(()), "depth {n}");
        }
    }

    #[test]
    fn the_tree_is_full_and_in_heap_order() {
        // Every node's children are 2i and 2i + 1, and every leaf is at depth n.
        fn check(node: &Node, depth: u64, n: u64) -> u64 {
            match (&node.left, &node.right) {
                (None, None) => {
                    assert_eq!(depth, n, "a leaf above the bottom: {}", node.value);
                    1
                }
                (Some(l), Some(r)) => {
                    assert_eq!((l.value, r.value), (2 * node.value, 2 * node.value + 1));
                    1 + check(l, depth + 1, n) + check(r, depth + 1, n)
                }
                _ => panic!("node {} has one child", node.value),
            }
        }
        for n in [1, 2, 5, CI] {
            let t = build(n);
            assert_eq!(t.value, 1);
            assert_eq!(check(&t, 1, n), nodes(n));
        }
    }

    #[test]
    fn the_small_input_figure_has_every_runtime_at_every_width() {
        let f = small_input(&[1, 2], 1).expect("every sum checks");
        assert_eq!(f.nodes, 1023);
        assert_eq!(f.answer, "sum of 1023 nodes = 523776");
        let got: Vec<(&str, usize)> = f
            .rows
            .iter()
            .map(|r| (r.runtime.as_str(), r.workers))
            .collect();
        assert_eq!(
            got,
            [
                ("magpie", 1),
                ("rayon", 1),
                ("chili", 1),
                ("magpie", 2),
                ("rayon", 2),
                ("chili", 2)
            ]
        );
        assert!(f.serial_us > 0.0 && f.rows.iter().all(|r| r.us > 0.0 && r.x_serial > 0.0));
    }

    #[test]
    fn peers_verify() {
        let tree = build(CI);
        for w in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            assert_eq!(verify(CI, pool.install(|| rayon_join(&tree))), Ok(()));
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            });
            assert_eq!(verify(CI, chili_join(&mut pool.scope(), &tree)), Ok(()));
        }
    }

    #[test]
    fn magpie_verifies() {
        let tree = build(CI);
        for w in [1, 2] {
            let pool = magpie::Pool::builder().workers(w).build().unwrap();
            assert_eq!(verify(CI, pool.install(|| parallel(&tree))), Ok(()));
        }
    }

    #[test]
    fn wrong_values_are_rejected() {
        assert_eq!((nodes(1), nodes(3), nodes(CI)), (1, 7, 1023));
        assert_eq!(expected(1), 1);
        assert_eq!(expected(3), 28);
        assert_eq!(expected(CI), 523_776);
        let e = verify(CI, 523_775).unwrap_err();
        assert!(e.contains("523776"), "{e}");
        assert!(verify(2, 5).is_err());
        // A tree that lost a leaf, or counted one twice, does not verify.
        let mut t = build(3);
        t.left.as_mut().unwrap().left = None;
        assert!(verify(3, serial(&t)).is_err());
    }
}
