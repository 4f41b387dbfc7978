//! The dynamic program structure tree (DPST; Raman et al., PLDI 2012, as Lifflander's thesis
//! §4.5.1 summarises it) and its two lowest-common-ancestor searches.
//!
//! # The tree
//!
//! A checked program's run is a tree of three kinds of node. *Finish* nodes stand for a region
//! that waits for everything started in it (a `scope`, a `join`, the checked call's root);
//! *async* nodes for a task that may run beside what follows it (a join's first half, a
//! spawned task); *steps* are the leaves: the stretches of one task's code between two of its
//! forks, joins or spawns, where its memory accesses happen. A node's children are in program
//! order (each child knows its index among its siblings). Two steps *may happen in parallel*
//! if and only if, at their lowest common ancestor `L`, the child of `L` on the left one's path
//! (the one with the smaller index) is an async node: then the left one's task may still be
//! running when the right one starts. Otherwise everything on the left path finished (a
//! finish, or a step of `L`'s own task) before the right path began.
//!
//! A `join(a, b)` in a task whose innermost async or finish is `P` adds to `P` a finish `F`,
//! and to `F` an async node for `a` (index 0) and a finish node for `b` (index 1); the task
//! goes on in a new step of `P` after `F`. Wrapping `b` in a finish of its own changes no
//! answer (`b`'s tasks all end before the join returns, and its nodes keep their order) and
//! gives each half a node that is the root of everything it creates, which the phases below
//! need. `scope(body)` adds a finish whose first child is the body's next step; a spawn adds
//! an async node to the spawning task's innermost node and splits its step in two.
//!
//! # Built without locks
//!
//! Each node is created by the task that runs below its parent, which is the only task that
//! adds children to that parent at any time: a join reserves its halves' indices before
//! publishing them, so the thief that runs a half creates the half's node at the index the
//! joiner set aside. The child counter is an atomic only so that this hand-over needs no other
//! fence. Nodes point to their parents (an `Arc`), never to their children: a node lives while
//! a running task's context or a shadow-memory cell needs it or one of its descendants.
//!
//! # Working phases and the steal tree (thesis §4.5.1)
//!
//! Every node records the *working phase* it was created in: a task that a thief took begins a
//! new phase on the thief, whose *initial* node is the task's own async or finish node; every
//! other task inherits its creator's phase. So every node of a phase lies in the subtree of the
//! phase's initial node, and a phase is what the steal tree calls a working phase: a stolen
//! task's subtree less what was stolen from it. For two nodes in different phases, the one
//! whose phase's initial node is deeper (either, if equally deep) cannot have the other in its
//! initial node's subtree, so their lowest common ancestor is also the lowest common ancestor
//! of the other node and the parent of that initial node. [`Search::Phases`] jumps so, from
//! phase to phase, until both nodes are in one phase, and walks parent by parent from there
//! ([`Search::Plain`] walks parent by parent all the way). Both count the edges they follow
//! (a jump counts one), which is what the thesis's Fig. 4.9 compares.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// A node's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Waits for everything started below it.
    Finish,
    /// A task that may run beside what follows it.
    Async,
    /// A stretch of one task's code (a leaf).
    Step,
}

/// A working phase (see the module doc).
#[derive(Debug)]
pub struct Phase {
    /// Its number, unique in the process (the root phase of a tree included).
    pub id: u64,
    /// The worker that ran it.
    pub worker: usize,
    /// Its initial node's depth.
    pub depth: u32,
    /// Its initial node's kind and index among its siblings.
    pub init: (Kind, u32),
    /// Its initial node's parent; `None` for a tree's root phase, whose initial node is the
    /// root.
    pub above: Option<Arc<Node>>,
}

/// A node of the tree.
#[derive(Debug)]
pub struct Node {
    /// Its number, unique in the process.
    pub id: u64,
    /// Its kind.
    pub kind: Kind,
    /// Its parent (`None`: the root).
    pub parent: Option<Arc<Node>>,
    /// Edges from the root.
    pub depth: u32,
    /// Its index among its parent's children (program order).
    pub index: u32,
    /// The working phase it was created in.
    pub phase: Arc<Phase>,
    /// When it was created, in nanoseconds since the process's first node.
    pub start: u64,
    /// A step: when its task went on to its next step or ended (`u64::MAX` until then).
    end: AtomicU64,
    /// Children created or reserved so far.
    children: AtomicU32,
}

static IDS: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    // Relaxed: a unique number, nothing published with it.
    IDS.fetch_add(1, Ordering::Relaxed)
}

/// Nanoseconds since the first call in this process.
pub fn now() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

impl Phase {
    /// A new phase run by `worker` whose initial node will be the child at `index`, of kind
    /// `kind`, of `above` (or the root of a tree, when `above` is `None`).
    pub fn new(worker: usize, above: Option<Arc<Node>>, kind: Kind, index: u32) -> Arc<Phase> {
        Arc::new(Phase {
            id: next_id(),
            worker,
            depth: above.as_ref().map_or(0, |a| a.depth + 1),
            init: (kind, index),
            above,
        })
    }
}

impl Node {
    /// The root of a new tree (a finish), in a new root phase run by `worker`.
    pub fn root(worker: usize) -> Arc<Node> {
        let phase = Phase::new(worker, None, Kind::Finish, 0);
        Arc::new(Node {
            id: next_id(),
            kind: Kind::Finish,
            parent: None,
            depth: 0,
            index: 0,
            phase,
            start: now(),
            end: AtomicU64::new(u64::MAX),
            children: AtomicU32::new(0),
        })
    }

    /// Sets aside the index of this node's next child (for a child another task will create,
    /// [`Node::child_at`]).
    pub fn reserve(&self) -> u32 {
        // Relaxed: only the task below this node reserves (module doc); the child made at the
        // index reaches its creator through the publication of the task that holds it.
        self.children.fetch_add(1, Ordering::Relaxed)
    }

    /// A new child of `kind` at this node's next index, in `phase`.
    pub fn child(self: &Arc<Node>, kind: Kind, phase: &Arc<Phase>) -> Arc<Node> {
        let index = self.reserve();
        self.child_at(index, kind, phase)
    }

    /// A new child of `kind` at a reserved `index`, in `phase`.
    pub fn child_at(self: &Arc<Node>, index: u32, kind: Kind, phase: &Arc<Phase>) -> Arc<Node> {
        debug_assert!(self.kind != Kind::Step, "a step has no children");
        Arc::new(Node {
            id: next_id(),
            kind,
            parent: Some(self.clone()),
            depth: self.depth + 1,
            index,
            phase: phase.clone(),
            start: now(),
            end: AtomicU64::new(u64::MAX),
            children: AtomicU32::new(0),
        })
    }

    /// Marks this step ended (its task went on to another step, or ended).
    pub fn close(&self) {
        // Relaxed: read only for the report, after the checked run has ended (its join
        // orders every write before it).
        self.end.store(now(), Ordering::Relaxed);
    }

    /// When this step ended, if it did.
    pub fn end(&self) -> Option<u64> {
        // Relaxed: see `close`.
        Some(self.end.load(Ordering::Relaxed)).filter(|&e| e != u64::MAX)
    }

    /// The indices from the root's child down to this node: the node's name in the tree
    /// (empty for the root).
    pub fn path(&self) -> Vec<u32> {
        let mut path = Vec::with_capacity(self.depth as usize);
        let mut at = self;
        while let Some(p) = &at.parent {
            path.push(at.index);
            at = p;
        }
        path.reverse();
        path
    }

    /// The kinds along [`path`](Self::path), for a report: `F`, `A` or `S` per level.
    pub fn shape(&self) -> String {
        let mut kinds = Vec::with_capacity(self.depth as usize);
        let mut at = self;
        while let Some(p) = &at.parent {
            kinds.push(match at.kind {
                Kind::Finish => 'F',
                Kind::Async => 'A',
                Kind::Step => 'S',
            });
            at = p;
        }
        kinds.iter().rev().collect()
    }
}

impl Drop for Node {
    /// Drops a chain of parents that only this node kept alive one by one, not by recursion
    /// (a deep tree would otherwise take as deep a native stack to drop).
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(p) = next {
            match Arc::try_unwrap(p) {
                Ok(mut node) => next = node.parent.take(),
                Err(_) => break,
            }
        }
    }
}

/// Which lowest-common-ancestor search to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// Parent by parent (Raman et al.).
    Plain,
    /// Phase by phase, then parent by parent (the thesis's `subtreeLCA`).
    Phases,
}

/// What a search found for two nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Related {
    /// Their lowest common ancestor's id.
    pub lca: u64,
    /// Whether they may happen in parallel.
    pub parallel: bool,
    /// Edges followed (a phase jump counts one).
    pub traversals: u64,
}

/// One side of a search: where it is, and the kind and index of the child of that node it
/// came up from (none while it is still at the node it started from).
struct Side<'a> {
    at: &'a Node,
    from: Option<(Kind, u32)>,
}

impl<'a> Side<'a> {
    fn up(&mut self) {
        let parent = self
            .at
            .parent
            .as_deref()
            .expect("two nodes of one tree meet below its root");
        self.from = Some((self.at.kind, self.at.index));
        self.at = parent;
    }

    fn jump(&mut self) {
        let phase: &'a Phase = &self.at.phase;
        let above = phase
            .above
            .as_deref()
            .expect("a root phase is never the deeper one");
        self.from = Some(phase.init);
        self.at = above;
    }
}

/// The lowest common ancestor of `a` and `b` (nodes of one tree), whether they may happen in
/// parallel, and the edges the search followed. A node is never parallel with itself or with
/// its ancestors.
pub fn relate(a: &Node, b: &Node, search: Search) -> Related {
    let mut x = Side { at: a, from: None };
    let mut y = Side { at: b, from: None };
    let mut traversals = 0;
    if search == Search::Phases {
        while !Arc::ptr_eq(&x.at.phase, &y.at.phase) {
            if x.at.phase.depth >= y.at.phase.depth {
                x.jump();
            } else {
                y.jump();
            }
            traversals += 1;
        }
    }
    while !std::ptr::eq(x.at, y.at) {
        if x.at.depth > y.at.depth {
            x.up();
            traversals += 1;
        } else if y.at.depth > x.at.depth {
            y.up();
            traversals += 1;
        } else {
            x.up();
            y.up();
            traversals += 2;
        }
    }
    let parallel = match (x.from, y.from) {
        (Some((kx, ix)), Some((ky, iy))) => {
            let left = if ix < iy { kx } else { ky };
            left == Kind::Async
        }
        // One is the other's ancestor (or the same node).
        _ => false,
    };
    Related {
        lca: x.at.id,
        parallel,
        traversals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree made by hand, one task running it all on worker 0 unless a node is given a new
    /// phase.
    struct Tree {
        root: Arc<Node>,
    }

    impl Tree {
        fn new() -> Tree {
            Tree {
                root: Node::root(0),
            }
        }
        fn add(&self, parent: &Arc<Node>, kind: Kind) -> Arc<Node> {
            parent.child(kind, &parent.phase)
        }
        /// A child that begins a new phase (a stolen task's node) run by `worker`.
        fn stolen(&self, parent: &Arc<Node>, kind: Kind, worker: usize) -> Arc<Node> {
            let index = parent.reserve();
            let phase = Phase::new(worker, Some(parent.clone()), kind, index);
            parent.child_at(index, kind, &phase)
        }
    }

    fn both(a: &Node, b: &Node) -> bool {
        let p = relate(a, b, Search::Plain);
        let q = relate(a, b, Search::Phases);
        assert_eq!(
            (p.lca, p.parallel),
            (q.lca, q.parallel),
            "the searches disagree"
        );
        assert_eq!(
            relate(b, a, Search::Plain).parallel,
            p.parallel,
            "not symmetric"
        );
        p.parallel
    }

    #[test]
    fn a_join_s_halves_are_parallel_and_the_steps_around_it_are_not() {
        // s0; join(a: sa, b: sb); s1
        let t = Tree::new();
        let s0 = t.add(&t.root, Kind::Step);
        let f = t.add(&t.root, Kind::Finish);
        let a = t.add(&f, Kind::Async);
        let sa = t.add(&a, Kind::Step);
        let b = t.add(&f, Kind::Finish);
        let sb = t.add(&b, Kind::Step);
        let s1 = t.add(&t.root, Kind::Step);
        assert!(both(&sa, &sb));
        assert!(!both(&s0, &sa) && !both(&s0, &sb));
        assert!(!both(&sa, &s1) && !both(&sb, &s1));
        assert!(!both(&s0, &s1));
        assert!(!both(&sa, &sa));
        assert_eq!(relate(&sa, &sb, Search::Plain).lca, f.id);
        assert_eq!(sb.path(), vec![1, 1, 0]);
        assert_eq!(sb.shape(), "FFS");
    }

    #[test]
    fn a_spawn_runs_beside_its_spawner_s_later_steps_but_not_its_earlier_ones() {
        // finish { s0; async { sa }; s1; async { sc }; s2 }; s3
        let t = Tree::new();
        let f = t.add(&t.root, Kind::Finish);
        let s0 = t.add(&f, Kind::Step);
        let a = t.add(&f, Kind::Async);
        let sa = t.add(&a, Kind::Step);
        let s1 = t.add(&f, Kind::Step);
        let c = t.add(&f, Kind::Async);
        let sc = t.add(&c, Kind::Step);
        let s2 = t.add(&f, Kind::Step);
        let s3 = t.add(&t.root, Kind::Step);
        assert!(!both(&s0, &sa));
        assert!(both(&sa, &s1) && both(&sa, &s2) && both(&sa, &sc));
        assert!(both(&sc, &s2) && !both(&s1, &sc));
        assert!(!both(&sa, &s3) && !both(&sc, &s3));
    }

    #[test]
    fn the_phase_search_follows_steals_and_saves_traversals_on_deep_trees() {
        // A deep left spine of joins on worker 0; worker 1 stole the right half near the
        // top and went deep too.
        let t = Tree::new();
        let f = t.add(&t.root, Kind::Finish);
        let a = t.add(&f, Kind::Async);
        let stolen = t.stolen(&f, Kind::Finish, 1);
        let (mut left, mut right) = (a.clone(), stolen.clone());
        for _ in 0..20 {
            let fl = t.add(&left, Kind::Finish);
            left = t.add(&fl, Kind::Async);
            let fr = t.add(&right, Kind::Finish);
            right = t.add(&fr, Kind::Async);
        }
        let sl = t.add(&left, Kind::Step);
        let sr = t.add(&right, Kind::Step);
        let plain = relate(&sl, &sr, Search::Plain);
        let phases = relate(&sl, &sr, Search::Phases);
        assert!(plain.parallel && phases.parallel);
        assert_eq!(plain.lca, f.id);
        assert_eq!(phases.lca, f.id);
        assert!(phases.traversals < plain.traversals, "{phases:?} {plain:?}");
    }

    #[test]
    fn a_steal_from_a_stolen_task_jumps_twice() {
        // Worker 1 stole b from the root join; worker 2 stole from inside b.
        let t = Tree::new();
        let f = t.add(&t.root, Kind::Finish);
        let a = t.add(&f, Kind::Async);
        let sa = t.add(&a, Kind::Step);
        let b = t.stolen(&f, Kind::Finish, 1);
        let s_b = t.add(&b, Kind::Step);
        let fb = t.add(&b, Kind::Finish);
        let ab = t.add(&fb, Kind::Async);
        let sab = t.add(&ab, Kind::Step);
        let bb = t.stolen(&fb, Kind::Finish, 2);
        let sbb = t.add(&bb, Kind::Step);
        assert!(both(&sab, &sbb));
        assert!(both(&sa, &sbb));
        assert!(!both(&s_b, &sbb));
        let r = relate(&sa, &sbb, Search::Phases);
        assert_eq!(r.lca, f.id);
    }

    #[test]
    fn a_deep_chain_drops_without_a_deep_stack() {
        let t = Tree::new();
        let mut at = t.add(&t.root, Kind::Finish);
        for _ in 0..1_000_000 {
            at = t.add(&at, Kind::Finish);
        }
        drop(t);
        drop(at);
    }

    /// A small random async-finish program, built as a DPST, with the brute-force answer:
    /// each step's set of steps that may run beside it, from the program's own semantics.
    mod random_programs {
        use super::*;

        /// A program: a list of statements per block.
        #[derive(Debug)]
        enum Stmt {
            Step,
            Async(Vec<Stmt>),
            Finish(Vec<Stmt>),
        }

        struct Rng(u64);
        impl Rng {
            fn below(&mut self, n: u64) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 % n
            }
        }

        fn block(rng: &mut Rng, depth: u32) -> Vec<Stmt> {
            let n = 1 + rng.below(4);
            (0..n)
                .map(|_| match (depth, rng.below(3)) {
                    (0, _) | (_, 0) => Stmt::Step,
                    (_, 1) => Stmt::Async(block(rng, depth - 1)),
                    _ => Stmt::Finish(block(rng, depth - 1)),
                })
                .collect()
        }

        /// What the brute force keeps while building: the next worker number, the asyncs
        /// started and not yet waited for, each async's steps, and every step with the asyncs
        /// open when it ran and the asyncs it lies in.
        #[derive(Default)]
        struct Built {
            worker: usize,
            open: Vec<usize>,
            asyncs: Vec<Vec<usize>>,
            steps: Vec<(Arc<Node>, Vec<usize>, Vec<usize>)>,
        }

        /// Builds the DPST of `stmts` under `parent`, simulating the program's serial order
        /// for the brute force: a step runs beside every step of an async that was started
        /// before it and not yet waited for by a finish that ended before it.
        fn build(
            stmts: &[Stmt],
            parent: &Arc<Node>,
            rng: &mut Rng,
            b: &mut Built,
            inside: &[usize],
        ) {
            for s in stmts {
                match s {
                    Stmt::Step => {
                        let node = parent.child(Kind::Step, &parent.phase);
                        let id = b.steps.len();
                        for &a in inside {
                            b.asyncs[a].push(id);
                        }
                        b.steps.push((node, b.open.clone(), inside.to_vec()));
                    }
                    Stmt::Async(body) | Stmt::Finish(body) => {
                        let kind = if matches!(s, Stmt::Async(_)) {
                            Kind::Async
                        } else {
                            Kind::Finish
                        };
                        // Now and then the node is a stolen task's: a new phase.
                        let node = if rng.below(3) == 0 {
                            b.worker += 1;
                            let index = parent.reserve();
                            let phase = Phase::new(b.worker, Some(parent.clone()), kind, index);
                            parent.child_at(index, kind, &phase)
                        } else {
                            parent.child(kind, &parent.phase)
                        };
                        if kind == Kind::Async {
                            let a = b.asyncs.len();
                            b.asyncs.push(Vec::new());
                            let mut inner: Vec<usize> = inside.to_vec();
                            inner.push(a);
                            build(body, &node, rng, b, &inner);
                            b.open.push(a);
                        } else {
                            let before = b.open.len();
                            build(body, &node, rng, b, inside);
                            b.open.truncate(before);
                        }
                    }
                }
            }
        }

        #[test]
        fn may_happen_in_parallel_agrees_with_the_program_s_semantics() {
            let mut rng = Rng(0x5eed_1234_abcd_ef01);
            let mut checked = 0;
            for _ in 0..300 {
                let program = block(&mut rng, 4);
                let root = Node::root(0);
                let mut b = Built::default();
                build(&program, &root, &mut rng, &mut b, &[]);
                let (asyncs, steps) = (&b.asyncs, &b.steps);
                // Step j (after i in serial order) may run beside step i iff i lies in an
                // async that was still open when j ran, and j is not inside that same async.
                for j in 0..steps.len() {
                    for i in 0..j {
                        let (_, open_j, inside_j) = &steps[j];
                        let want = open_j
                            .iter()
                            .any(|&a| asyncs[a].contains(&i) && !inside_j.contains(&a));
                        assert_eq!(
                            both(&steps[i].0, &steps[j].0),
                            want,
                            "{program:?}: steps {i}, {j}"
                        );
                        checked += 1;
                    }
                }
            }
            assert!(checked > 1000, "only {checked} pairs");
        }
    }
}
