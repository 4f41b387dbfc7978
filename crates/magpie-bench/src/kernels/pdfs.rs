//! PDFS: SLAW's parallel depth-first search (SLAW (Guo et al., IPDPS 2010) §V), building a
//! spanning tree of a 2-D torus of side `n` (`n*n` nodes, four neighbours each, with wraparound).
//! [`parallel`] runs in one `magpie::scope`: visiting `v` claims each unclaimed neighbour `u` by a
//! compare-and-swap of `parent[u]` from [`NONE`] to `v` and spawns a visit of `u`. Every claim
//! nests a spawn, so the spawn tree is as deep as the search: work-first spawning needs a pending
//! continuation per level and is expected to stop with `magpie::Error::StackLimit` at the default
//! size. The serial twin [`serial`] is an iterative DFS with an explicit stack; [`verify`] checks
//! that a parent array is a spanning tree of the torus rooted at node 0, in O(N).

use crate::harness::{self, answered, Measured, RunError};
use crate::kernel::{self, Def, Kernel};
use crate::kernel::Case;
use crate::workload::Runtime;

use magpie::Scope;
use std::sync::atomic::{AtomicU32, Ordering};

/// Torus side for `--size ci` (4096 nodes).
pub const CI: u64 = 64;
/// Torus side for `--size default` (4M nodes).
pub const DEFAULT: u64 = 2000;
/// Torus side for `--size paper` (4M nodes).
pub const PAPER: u64 = 2000;
/// Largest side accepted (2^28 nodes; node ids are `u32`).
pub const MAX_SIDE: u64 = 16384;
/// The parent of a node not reached yet.
pub const NONE: u32 = u32::MAX;
/// The root of the search (its parent is itself).
pub const ROOT: u32 = 0;

/// A 2-D torus of side `side`; node `v` sits at row `v / side`, column `v % side`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Torus {
    side: u32,
}

impl Torus {
    /// A torus of side `side` (1 ..= [`MAX_SIDE`]).
    pub fn new(side: u64) -> Torus {
        assert!(
            (1..=MAX_SIDE).contains(&side),
            "torus side {side} out of range"
        );
        Torus { side: side as u32 }
    }

    /// Nodes in the torus.
    pub fn nodes(self) -> usize {
        self.side as usize * self.side as usize
    }

    /// The four neighbours of `v` (left, right, up, down; with wraparound, so on small tori some
    /// coincide).
    #[inline]
    pub fn neighbours(self, v: u32) -> [u32; 4] {
        let n = self.side;
        let (row, col) = (v / n, v % n);
        let at = |r: u32, c: u32| r * n + c;
        [
            at(row, if col == 0 { n - 1 } else { col - 1 }),
            at(row, if col + 1 == n { 0 } else { col + 1 }),
            at(if row == 0 { n - 1 } else { row - 1 }, col),
            at(if row + 1 == n { 0 } else { row + 1 }, col),
        ]
    }
}

/// A fresh parent array for the parallel search: every node [`NONE`].
pub fn new_parents(t: Torus) -> Vec<AtomicU32> {
    (0..t.nodes()).map(|_| AtomicU32::new(NONE)).collect()
}

/// The parallel search from [`ROOT`]. Call inside `Pool::install`, on a fresh parent array.
pub fn parallel(t: Torus, parents: &[AtomicU32]) {
    assert_eq!(parents.len(), t.nodes());
    // Relaxed: before the scope starts its tasks, which the spawn orders after this.
    parents[ROOT as usize].store(ROOT, Ordering::Relaxed);
    magpie::scope(|s| visit(s, t, parents, ROOT));
}

fn visit<'s>(s: &Scope<'s>, t: Torus, parents: &'s [AtomicU32], v: u32) {
    for u in t.neighbours(v) {
        let p = &parents[u as usize];
        // Test before the compare-and-swap: most neighbours are already claimed. Relaxed: the
        // claim's exchange decides who owns `u`, and nothing else is published through it (the
        // task that claims it visits it; the array is read after the scope has returned).
        if p.load(Ordering::Relaxed) == NONE
            && p.compare_exchange(NONE, v, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            s.spawn(move |s| visit(s, t, parents, u));
        }
    }
}

/// The serial twin: depth-first search with an explicit stack (no recursion: the search can be
/// millions of nodes deep). `parents` must be all [`NONE`].
pub fn serial(t: Torus, parents: &mut [u32]) {
    assert_eq!(parents.len(), t.nodes());
    parents[ROOT as usize] = ROOT;
    let mut stack = vec![ROOT];
    while let Some(v) = stack.pop() {
        for u in t.neighbours(v) {
            if parents[u as usize] == NONE {
                parents[u as usize] = v;
                stack.push(u);
            }
        }
    }
}

/// Checks that `parents` is a spanning tree of `t` rooted at [`ROOT`]: every node has a parent,
/// each parent edge is a torus edge, and following parents from any node reaches the root
/// without a cycle. O(N) time.
pub fn verify(t: Torus, parents: &[u32]) -> Result<(), String> {
    check(t, parents.len(), |v| parents[v])
}

/// A run's answer: the vertices reached (those with a parent; the root is its own), of all.
pub fn answer(parents: impl IntoIterator<Item = u32>) -> String {
    let (reached, all) = parents
        .into_iter()
        .fold((0u64, 0u64), |(r, a), p| (r + u64::from(p != NONE), a + 1));
    format!("{reached} of {all} vertices reached")
}

/// [`answer`] on the atomic parent array of [`parallel`].
pub fn answer_atomic(parents: &[AtomicU32]) -> String {
    // Relaxed: called after the search's scope returned, which orders every claim.
    answer(parents.iter().map(|p| p.load(Ordering::Relaxed)))
}

/// [`verify`] on the atomic parent array of [`parallel`].
pub fn verify_atomic(t: Torus, parents: &[AtomicU32]) -> Result<(), String> {
    // Relaxed: as in `answer_atomic`.
    check(t, parents.len(), |v| parents[v].load(Ordering::Relaxed))
}

fn check(t: Torus, len: usize, parent: impl Fn(usize) -> u32) -> Result<(), String> {
    let nodes = t.nodes();
    if len != nodes {
        return Err(format!("{len} parents for a torus of {nodes} nodes"));
    }
    let root = ROOT as usize;
    if parent(root) != ROOT {
        return Err(format!(
            "the root's parent is {}, expected itself",
            parent(root)
        ));
    }
    for v in 0..nodes {
        let p = parent(v);
        if v == root {
            continue;
        }
        if p == NONE {
            return Err(format!("node {v} was not reached"));
        }
        if !t.neighbours(v as u32).contains(&p) {
            return Err(format!("parent edge {v} -> {p} is not a torus edge"));
        }
    }
    // Acyclic: walk up from every node until a node known to reach the root; a walk that meets
    // itself is a cycle. Each node is walked over once.
    const UNKNOWN: u8 = 0;
    const ON_PATH: u8 = 1;
    const REACHES_ROOT: u8 = 2;
    let mut state = vec![UNKNOWN; nodes];
    state[root] = REACHES_ROOT;
    let mut path = Vec::new();
    for v in 0..nodes {
        let mut u = v;
        while state[u] == UNKNOWN {
            state[u] = ON_PATH;
            path.push(u);
            u = parent(u) as usize;
        }
        if state[u] == ON_PATH {
            return Err(format!(
                "the parents starting at node {v} form a cycle through node {u}, never reaching \
                 the root"
            ));
        }
        for x in path.drain(..) {
            state[x] = REACHES_ROOT;
        }
    }
    Ok(())
}

static DEF: Def = Def {
    name: "pdfs",
    n_meaning: "torus side (n*n nodes)",
    sizes: [CI, DEFAULT, PAPER],
    max_n: MAX_SIDE,
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times the search on `rt` (the serial twin or magpie: no peer has a version).
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let t = Torus::new(case.n);
    match rt {
        Runtime::Serial => harness::measure(
            runs,
            || vec![NONE; t.nodes()],
            |p| serial(t, p),
            |p, ()| answered(verify(t, p), || answer(p.iter().copied())),
        ),
        Runtime::Magpie(pool) => harness::measure(
            runs,
            || new_parents(t),
            |p| {
                let p = &*p;
                pool.install(|| parallel(t, p))
            },
            |p, ()| answered(verify_atomic(t, p), || answer_atomic(p)),
        ),
        _ => Err(kernel::no_version(case.kernel, rt)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magpie::{Policy, Pool};

    fn serial_tree(side: u64) -> (Torus, Vec<u32>) {
        let t = Torus::new(side);
        let mut p = vec![NONE; t.nodes()];
        serial(t, &mut p);
        (t, p)
    }

    #[test]
    fn neighbours_wrap() {
        let t = Torus::new(4);
        assert_eq!(t.neighbours(0), [3, 1, 12, 4]);
        assert_eq!(t.neighbours(15), [14, 12, 11, 3]);
        assert_eq!(Torus::new(1).neighbours(0), [0; 4]);
    }

    #[test]
    fn serial_twin_verifies_on_all_small_sides() {
        for side in [1, 2, 3, 5, CI] {
            let (t, p) = serial_tree(side);
            assert_eq!(verify(t, &p), Ok(()), "side {side}");
        }
    }

    #[test]
    fn corrupted_trees_are_rejected() {
        let (t, good) = serial_tree(16);
        let v = 37usize;
        let neighbours = t.neighbours(v as u32);

        let mut p = good.clone();
        p[v] = NONE;
        assert!(verify(t, &p).unwrap_err().contains("not reached"));

        let mut p = good.clone();
        p[v] = 200; // not adjacent to 37 on a 16x16 torus
        assert!(!neighbours.contains(&200));
        assert!(verify(t, &p).unwrap_err().contains("not a torus edge"));

        let mut p = good.clone();
        p[0] = 1;
        assert!(verify(t, &p).unwrap_err().contains("root"));

        // A two-cycle between adjacent nodes, both otherwise valid edges.
        let mut p = good.clone();
        let (a, b) = (40usize, 41usize);
        p[a] = b as u32;
        p[b] = a as u32;
        assert!(verify(t, &p).unwrap_err().contains("cycle"));

        // A longer cycle around a 2x2 square.
        let mut p = good.clone();
        p[17] = 18;
        p[18] = 34;
        p[34] = 33;
        p[33] = 17;
        assert!(verify(t, &p).unwrap_err().contains("cycle"));

        assert!(verify(t, &good[1..]).is_err());
        assert_eq!(verify(t, &good), Ok(()));
    }

    #[test]
    fn work_first_stops_with_stack_limit_when_fibers_run_out() {
        let t = Torus::new(CI);
        let pool = Pool::builder()
            .workers(1)
            .policy(Policy::WorkFirst)
            .max_fibers(16)
            // 64 KiB stacks: no child can run in place, so every spawn takes a fiber.
            .stack_size(64 << 10)
            .build()
            .unwrap();
        let parents = new_parents(t);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| parallel(t, &parents))
        }));
        let payload = r.expect_err("a 4096-deep work-first search on 16 small fibers must stop");
        assert!(matches!(
            magpie::Error::from_panic(&*payload),
            Some(magpie::Error::StackLimit { .. })
        ));
    }
}
