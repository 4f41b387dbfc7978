//! UTS, the Unbalanced Tree Search benchmark of Olivier et al., UTS: An Unbalanced Tree Search
//! Benchmark (LCPC 2006), also one of the work-stealing benchmarks of Kumar, Blackburn and Grove,
//! Friendly Barriers: Efficient Work-Stealing With Return Barriers (VEE 2014). The tree is never
//! stored: each node is a 20-byte SHA-1 state, a child's state is the hash of its parent's state
//! followed by the child's index, and the number of children is drawn from the node's state, so
//! the whole tree (and its size) follows from a handful of parameters, and any node can be
//! expanded by any worker. Node counts match the reference implementation exactly (the sample
//! trees of [`NAMED`] carry its published sizes).
//!
//! Tree types (`-t`): binomial (the root has `b` children, every other node `m` children with
//! probability `q`, else none), geometric (a geometric number of children with expected value
//! `b_i`, where `b_i` follows the shape function `-a` of the depth and the depth parameter `-d`),
//! hybrid (geometric above depth `f * d`, binomial below), and balanced (`b` children down to depth
//! `d`). Versions: magpie ([`parallel`]: one `magpie::scope`, every child spawned into it), the
//! serial twin ([`serial`]: an explicit-stack depth-first search), rayon ([`rayon()`]: the same
//! spawn tree in a `rayon::scope`) and chili ([`chili()`]: fork-join over each node's children);
//! [`verify`] checks counts against the published size or the serial twin.
//!
//! ```
//! use magpie_bench::kernels::uts;
//! let p = uts::named("T1XS").unwrap();
//! let pool = magpie::Pool::builder().workers(2).build()?;
//! let got = pool.install(|| uts::parallel(&p));
//! assert_eq!(got, uts::serial(&p));
//! assert_eq!(uts::verify(&p, &got, None), Ok(()));
//! # Ok::<(), magpie::Error>(())
//! ```

use crate::harness::{self, answered, Measured, RunError};
use crate::kernel::{self, Def, Grain, Kernel};
use crate::kernel::Case;
use crate::workload::{self, Runtime};
use crate::Peer;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub mod tree;
pub use tree::{expected_nodes, named, t1_family, Params, Shape, Tree, MAX_CHILDREN, NAMED};

impl Params {
    /// Children of `node` (the reference's `uts_numChildren`).
    #[inline]
    pub fn num_children(&self, node: &Node) -> u32 {
        let h = node.height;
        let n: f64 = match self.tree {
            Tree::Binomial if h == 0 => self.b.floor(),
            Tree::Binomial => self.binomial(node),
            Tree::Geometric => self.geometric(node),
            Tree::Hybrid if f64::from(h) < self.shift * f64::from(self.depth) => {
                self.geometric(node)
            }
            Tree::Hybrid => self.binomial(node),
            Tree::Balanced if h < self.depth => self.b.trunc(),
            Tree::Balanced => 0.0,
        };
        let cap = match self.tree {
            // Only the binomial root may exceed MAX_CHILDREN; balanced trees are never capped.
            Tree::Binomial if h == 0 => self.b.ceil(),
            Tree::Balanced => f64::from(u32::MAX),
            _ => f64::from(MAX_CHILDREN),
        };
        // A negative or undefined count (possible only at the edges of the parameter space, e.g.
        // `-d 0` with a linear shape) is a leaf, as it is in the reference.
        if n.is_nan() || n <= 0.0 {
            0
        } else {
            n.min(cap) as u32
        }
    }

    #[inline]
    fn binomial(&self, node: &Node) -> f64 {
        if to_prob(node.rand()) < self.q {
            f64::from(self.m)
        } else {
            0.0
        }
    }

    #[inline]
    fn geometric(&self, node: &Node) -> f64 {
        let (b, d, h) = (self.b, f64::from(self.depth), node.height);
        let i = f64::from(h);
        // The expected branching factor at this depth; the expressions keep the reference's
        // operation order, so the counts agree to the last rounding.
        let b_i = if h == 0 {
            b
        } else {
            match self.shape {
                Shape::Linear => b * (1.0 - i / d),
                Shape::ExpDec => b * i.powf(-b.ln() / d.ln()),
                Shape::Cyclic if u64::from(h) > 5 * u64::from(self.depth) => 0.0,
                Shape::Cyclic => b.powf((2.0 * std::f64::consts::PI * i / d).sin()),
                Shape::Fixed if h < self.depth => b,
                Shape::Fixed => 0.0,
            }
        };
        // A geometric variable with mean b_i has success probability p = 1 / (1 + b_i); invert
        // its distribution function at the node's uniform draw.
        let p = 1.0 / (1.0 + b_i);
        let u = to_prob(node.rand());
        ((1.0 - u).ln() / (1.0 - p).ln()).floor()
    }
}


// ---------------------------------------------------------------------------------------------
// The splittable random number generator: SHA-1 over a 20-byte state (the reference's "BRG"
// generator). Every message is at most 24 bytes, so each hash is one padded 64-byte block through
// the sha1 crate's compression function.

/// SHA-1's initial hash value (FIPS 180-4, 5.3.1).
const SHA1_IV: [u32; 5] = [
    0x6745_2301,
    0xEFCD_AB89,
    0x98BA_DCFE,
    0x1032_5476,
    0xC3D2_E1F0,
];

/// SHA-1 of a message of at most 55 bytes (one block once padded).
#[inline]
fn sha1_one_block(msg: &[u8]) -> [u8; 20] {
    debug_assert!(msg.len() <= 55);
    let mut block = [0u8; 64];
    block[..msg.len()].copy_from_slice(msg);
    block[msg.len()] = 0x80;
    block[56..].copy_from_slice(&(msg.len() as u64 * 8).to_be_bytes());
    let mut h = SHA1_IV;
    let block = sha1::digest::generic_array::GenericArray::from_slice(&block);
    sha1::compress(&mut h, std::slice::from_ref(block));
    let mut out = [0u8; 20];
    for (o, w) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}

/// A node: its generator state and its depth (the root is at 0). Plain data, so other runtimes
/// (magpie-dist's task collections) can carry nodes as tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    state: [u8; 20],
    height: u32,
}

impl Node {
    /// The node's depth (the root's is 0).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The node as 24 bytes (state, then depth little-endian), to carry it elsewhere.
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[..20].copy_from_slice(&self.state);
        b[20..].copy_from_slice(&self.height.to_le_bytes());
        b
    }

    /// The node [`to_bytes`](Self::to_bytes) gave.
    pub fn from_bytes(b: [u8; 24]) -> Node {
        let mut state = [0u8; 20];
        state.copy_from_slice(&b[..20]);
        Node {
            state,
            height: u32::from_le_bytes([b[20], b[21], b[22], b[23]]),
        }
    }

    /// The root: the hash of 16 zero bytes followed by the seed, big-endian.
    pub fn root(p: &Params) -> Node {
        let mut msg = [0u8; 20];
        msg[16..].copy_from_slice(&p.seed.to_be_bytes());
        Node {
            state: sha1_one_block(&msg),
            height: 0,
        }
    }

    /// Child `i`: the hash of this state followed by `i`, big-endian; hashed `p.granularity`
    /// times (each time the same), as the reference's compute granularity does.
    #[inline]
    pub fn child(&self, i: u32, p: &Params) -> Node {
        let mut msg = [0u8; 24];
        msg[..20].copy_from_slice(&self.state);
        msg[20..].copy_from_slice(&i.to_be_bytes());
        let mut state = sha1_one_block(&msg);
        for _ in 1..p.granularity {
            state = sha1_one_block(std::hint::black_box(&msg));
        }
        Node {
            state,
            height: self.height + 1,
        }
    }

    /// The node's random draw: the state's last four bytes, big-endian, as a 31-bit integer.
    #[inline]
    fn rand(&self) -> u32 {
        let s = &self.state;
        u32::from_be_bytes([s[16], s[17], s[18], s[19]]) & 0x7FFF_FFFF
    }
}

/// A 31-bit draw as a probability in [0, 1).
#[inline]
fn to_prob(r: u32) -> f64 {
    f64::from(r) / 2_147_483_648.0
}

// ---------------------------------------------------------------------------------------------

/// What a search counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Nodes in the tree, the root included.
    pub nodes: u64,
    /// Nodes without children.
    pub leaves: u64,
    /// Depth of the deepest node (the root is at 0).
    pub max_depth: u32,
}

impl Counts {
    /// A search's answer: `N nodes, L leaves, depth D`.
    pub fn answer(&self) -> String {
        format!(
            "{} nodes, {} leaves, depth {}",
            self.nodes, self.leaves, self.max_depth
        )
    }
}

impl Counts {
    fn one(height: u32, leaf: bool) -> Counts {
        Counts {
            nodes: 1,
            leaves: u64::from(leaf),
            max_depth: height,
        }
    }

    fn merge(self, o: Counts) -> Counts {
        Counts {
            nodes: self.nodes + o.nodes,
            leaves: self.leaves + o.leaves,
            max_depth: self.max_depth.max(o.max_depth),
        }
    }
}

/// The serial twin: depth-first search with an explicit stack (no recursion: T3L is 17,844 deep).
pub fn serial(p: &Params) -> Counts {
    let mut c = Counts::default();
    let mut stack = vec![Node::root(p)];
    while let Some(node) = stack.pop() {
        let n = p.num_children(&node);
        c = c.merge(Counts::one(node.height, n == 0));
        stack.extend((0..n).map(|i| node.child(i, p)));
    }
    c
}

/// Per-thread counters for the spawn-based searches, a cache line pair each so that workers do
/// not share lines. A task adds its node to its worker's stripe; the sum is exact.
struct Tally {
    stripes: Box<[Stripe]>,
}

/// Stripes: more than any pool used here has workers; beyond that, workers share stripes (still
/// exact, since the counters are atomic).
const STRIPES: usize = 64;

#[derive(Default)]
#[repr(align(128))]
struct Stripe {
    nodes: AtomicU64,
    leaves: AtomicU64,
    max_depth: AtomicU32,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }

    #[inline]
    fn add(&self, thread: Option<usize>, height: u32, leaf: bool) {
        let s = &self.stripes[thread.unwrap_or(0) % STRIPES];
        // Relaxed, all four: counts and a maximum, read by `total` after the search's scope
        // has returned, which orders them; nothing else is published through them.
        s.nodes.fetch_add(1, Ordering::Relaxed);
        if leaf {
            // Relaxed: as above.
            s.leaves.fetch_add(1, Ordering::Relaxed);
        }
        // Relaxed: as above.
        if height > s.max_depth.load(Ordering::Relaxed) {
            // Relaxed: as above.
            s.max_depth.fetch_max(height, Ordering::Relaxed);
        }
    }

    /// Adds a task's counts.
    fn add_counts(&self, thread: Option<usize>, c: Counts) {
        let s = &self.stripes[thread.unwrap_or(0) % STRIPES];
        // Relaxed, these three: as in `add`.
        s.nodes.fetch_add(c.nodes, Ordering::Relaxed);
        s.leaves.fetch_add(c.leaves, Ordering::Relaxed);
        s.max_depth.fetch_max(c.max_depth, Ordering::Relaxed);
    }

    /// The totals; call after the search's scope has returned.
    fn total(&self) -> Counts {
        self.stripes.iter().fold(Counts::default(), |c, s| {
            c.merge(Counts {
                // Relaxed, these three: the scope's return ordered every task's additions.
                nodes: s.nodes.load(Ordering::Relaxed),
                leaves: s.leaves.load(Ordering::Relaxed),
                max_depth: s.max_depth.load(Ordering::Relaxed),
            })
        })
    }
}

/// The search on magpie: one `magpie::scope` for the whole tree; visiting a node counts it and
/// spawns a visit of each child into the scope, so the spawns nest as deep as the tree (T3L:
/// 17,844 levels, which completes under every policy at the default fiber size). Counts go to
/// per-worker counters, summed when the scope has finished. Call inside `Pool::install`.
pub fn parallel(p: &Params) -> Counts {
    let tally = Tally::new();
    let root = Node::root(p);
    magpie::scope(|s| visit_magpie(s, p, &tally, root));
    tally.total()
}

fn visit_magpie<'s>(s: &magpie::Scope<'s>, p: &'s Params, tally: &'s Tally, node: Node) {
    let n = p.num_children(&node);
    tally.add(magpie::worker_index(), node.height, n == 0);
    for i in 0..n {
        let child = node.child(i, p);
        s.spawn(move |s| visit_magpie(s, p, tally, child));
    }
}

/// The search in chunks, as the reference UTS implementation does with its chunk size (`-c`):
/// a task searches depth-first with its own stack of nodes, and whenever that stack holds
/// `2 * chunk` nodes it spawns a task with the `chunk` oldest ones (nearest the root, so the
/// likeliest to be large subtrees). A spawn then costs once per `chunk` nodes rather than once per
/// node, and counts go to the tally once per task. The counts are exact and the same as
/// [`serial`]'s. Call inside `Pool::install`; `chunk` ≥ 1.
pub fn parallel_chunked(p: &Params, chunk: usize) -> Counts {
    let tally = Tally::new();
    let chunk = chunk.max(1);
    magpie::scope(|s| explore_magpie(s, p, &tally, vec![Node::root(p)], chunk));
    tally.total()
}

/// Searches from `stack` until it is empty, releasing chunks with `release`; returns the counts.
#[inline]
fn explore(
    p: &Params,
    mut stack: Vec<Node>,
    chunk: usize,
    mut release: impl FnMut(Vec<Node>),
) -> Counts {
    let mut c = Counts::default();
    while let Some(node) = stack.pop() {
        let n = p.num_children(&node);
        c = c.merge(Counts::one(node.height, n == 0));
        stack.extend((0..n).map(|i| node.child(i, p)));
        if stack.len() >= 2 * chunk {
            release(stack.drain(..chunk).collect());
        }
    }
    c
}

fn explore_magpie<'s>(
    s: &magpie::Scope<'s>,
    p: &'s Params,
    tally: &'s Tally,
    stack: Vec<Node>,
    chunk: usize,
) {
    let c = explore(p, stack, chunk, |part| {
        s.spawn(move |s| explore_magpie(s, p, tally, part, chunk))
    });
    tally.add_counts(magpie::worker_index(), c);
}

/// [`parallel_chunked`] on rayon: one `rayon::scope`, a `spawn` per released chunk. Call inside
/// `rayon::ThreadPool::install`.
pub fn rayon_chunked(p: &Params, chunk: usize) -> Counts {
    let tally = Tally::new();
    let chunk = chunk.max(1);
    ::rayon::scope(|s| explore_rayon(s, p, &tally, vec![Node::root(p)], chunk));
    tally.total()
}

fn explore_rayon<'s>(
    s: &::rayon::Scope<'s>,
    p: &'s Params,
    tally: &'s Tally,
    stack: Vec<Node>,
    chunk: usize,
) {
    let c = explore(p, stack, chunk, |part| {
        s.spawn(move |s| explore_rayon(s, p, tally, part, chunk))
    });
    tally.add_counts(::rayon::current_thread_index(), c);
}

/// The same spawn tree on rayon: one `rayon::scope`, a `spawn` per child. Call inside
/// `rayon::ThreadPool::install`.
pub fn rayon(p: &Params) -> Counts {
    let tally = Tally::new();
    let root = Node::root(p);
    ::rayon::scope(|s| visit_rayon(s, p, &tally, root));
    tally.total()
}

fn visit_rayon<'s>(s: &::rayon::Scope<'s>, p: &'s Params, tally: &'s Tally, node: Node) {
    let n = p.num_children(&node);
    tally.add(::rayon::current_thread_index(), node.height, n == 0);
    for i in 0..n {
        let child = node.child(i, p);
        s.spawn(move |s| visit_rayon(s, p, tally, child));
    }
}

/// The search on chili, which has only `join`: a node's children are split in halves with
/// `join` down to single children, and counts come back up the joins. The recursion runs on the
/// caller's and chili's thread stacks, a few joins per tree level: T3 fits in 2 MiB stacks, but
/// T3L needs far more (a 1 GiB calling thread and `RUST_MIN_STACK=1073741824` for chili's
/// workers suffice).
pub fn chili(s: &mut ::chili::Scope<'_>, p: &Params) -> Counts {
    visit_chili(s, p, Node::root(p))
}

fn visit_chili(s: &mut ::chili::Scope<'_>, p: &Params, node: Node) -> Counts {
    let n = p.num_children(&node);
    let c = Counts::one(node.height, n == 0);
    if n == 0 {
        return c;
    }
    c.merge(children_chili(s, p, &node, 0, n))
}

fn children_chili(s: &mut ::chili::Scope<'_>, p: &Params, node: &Node, lo: u32, hi: u32) -> Counts {
    if hi - lo == 1 {
        return visit_chili(s, p, node.child(lo, p));
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = s.join(
        |s| children_chili(s, p, node, lo, mid),
        |s| children_chili(s, p, node, mid, hi),
    );
    a.merge(b)
}

/// Checks the counts of a search of `p`: against `expected_nodes` when given, else against the
/// published count if `p` is one of [`NAMED`], else against the serial twin (all three counts;
/// this runs [`serial`]). Counts that cannot belong to any tree are rejected in every case.
pub fn verify(p: &Params, got: &Counts, expected_nodes: Option<u64>) -> Result<(), String> {
    if got.nodes == 0 {
        return Err(format!("UTS {p}: no nodes counted (the root is a node)"));
    }
    if got.leaves == 0 || got.leaves > got.nodes {
        return Err(format!(
            "UTS {p}: {} leaves for {} nodes",
            got.leaves, got.nodes
        ));
    }
    if u64::from(got.max_depth) >= got.nodes {
        return Err(format!(
            "UTS {p}: depth {} with only {} nodes",
            got.max_depth, got.nodes
        ));
    }
    match expected_nodes.or_else(|| self::expected_nodes(p)) {
        Some(want) if got.nodes == want => Ok(()),
        Some(want) => Err(format!("UTS {p}: {} nodes, expected {want}", got.nodes)),
        None => {
            let want = serial(p);
            if *got == want {
                Ok(())
            } else {
                Err(format!(
                    "UTS {p}: counted {got:?}, the serial search counts {want:?}"
                ))
            }
        }
    }
}

const N_MEANING: &str = "depth of the T1 tree family: -t 1 -a 3 -b 4 -r 19 -d n; 10 is T1";

static DEF: Def = Def {
    name: "uts",
    n_meaning: N_MEANING,
    sizes: [6, 10, 13],
    max_n: 14,
    grain: Some(Grain {
        default: None,
        max: Some(1 << 20),
        meaning: "nodes per released chunk",
        check: None,
    }),
    peers: &[Peer::RayonScope, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
    takes_tree: true,
    peers_without_grain: &[(Peer::ChiliJoin, CHILI_NO_CHUNKED)],
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Why chili cannot run a case with a grain.
pub const CHILI_NO_CHUNKED: &str =
    "chili has only join, so no chunked UTS (one spawn per chunk needs a scope)";

/// Times the search of the case's tree on `rt`: a task per node, or chunks of the case's grain.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let p = case.uts_params();
    let grain = case.grain;
    let counts = Check::new(&p);
    let check = |_: &(), c: Counts| counts.answer(&c);
    match rt {
        Runtime::Serial => harness::measure(runs, || (), |_| serial(&p), check),
        Runtime::Magpie(pool) => harness::measure(
            runs,
            || (),
            |_| match grain {
                None => pool.install(|| parallel(&p)),
                Some(c) => pool.install(|| parallel_chunked(&p, c as usize)),
            },
            check,
        ),
        Runtime::Rayon(pool) => harness::measure(
            runs,
            || (),
            |_| match grain {
                None => pool.install(|| rayon(&p)),
                Some(c) => pool.install(|| rayon_chunked(&p, c as usize)),
            },
            check,
        ),
        Runtime::Chili(_) if grain.is_some() => Err(RunError::Setup(CHILI_NO_CHUNKED.into())),
        Runtime::Chili(pool) => {
            let mut scope = pool.scope();
            harness::measure(runs, || (), |_| chili(&mut scope, &p), check)
        }
    }
}

/// Verifies counts against the published count of a named tree, or else against the serial
/// twin's counts, computed once (the first time a run needs them) rather than once per run, and
/// kept for the next measurement of the same tree ([`workload::cached`]).
struct Check<'p> {
    p: &'p Params,
    serial: std::cell::OnceCell<Counts>,
}

impl<'p> Check<'p> {
    fn new(p: &'p Params) -> Self {
        Check {
            p,
            serial: std::cell::OnceCell::new(),
        }
    }

    fn verify(&self, got: &Counts) -> Result<(), String> {
        if expected_nodes(self.p).is_some() {
            return verify(self.p, got, None);
        }
        let p = self.p;
        let want = *self.serial.get_or_init(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            p.to_string().hash(&mut h);
            *workload::cached(("uts-serial-counts", h.finish()), || serial(p))
        });
        verify(self.p, got, Some(want.nodes))?;
        if *got == want {
            Ok(())
        } else {
            Err(format!(
                "UTS {}: counted {got:?}, the serial twin {want:?}",
                self.p
            ))
        }
    }

    /// [`Self::verify`], with the counts' answer when they verify.
    fn answer(&self, got: &Counts) -> Result<String, String> {
        answered(self.verify(got), || got.answer())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha1::{Digest, Sha1};

    #[test]
    fn chunked_search_counts_exactly() {
        for name in ["T1XS", "T3XS"] {
            let p = named(name).unwrap();
            let want = serial(&p);
            for chunk in [1, 2, 7, 64] {
                for policy in [
                    magpie::Policy::WorkFirst,
                    magpie::Policy::HelpFirst,
                    magpie::Policy::Adaptive,
                ] {
                    for w in [1, 2] {
                        let pool = magpie::Pool::builder()
                            .workers(w)
                            .policy(policy)
                            .build()
                            .unwrap();
                        let got = pool.install(|| parallel_chunked(&p, chunk));
                        assert_eq!(got, want, "{name} chunk {chunk} {policy:?} x{w}");
                    }
                }
                let pool = ::rayon::ThreadPoolBuilder::new()
                    .num_threads(2)
                    .build()
                    .unwrap();
                let got = pool.install(|| rayon_chunked(&p, chunk));
                assert_eq!(got, want, "{name} chunk {chunk} rayon");
            }
        }
    }

    #[test]
    fn one_block_sha1_matches_the_sha1_crate() {
        assert_eq!(
            sha1_one_block(b"abc"),
            <[u8; 20]>::from(Sha1::digest(b"abc"))
        );
        let mut msg = [0u8; 55];
        for len in 0..=55 {
            for (i, b) in msg.iter_mut().enumerate() {
                *b = (i * 37 + len) as u8;
            }
            let want: [u8; 20] = Sha1::digest(&msg[..len]).into();
            assert_eq!(sha1_one_block(&msg[..len]), want, "length {len}");
        }
    }

    #[test]
    fn spawn_hashes_state_then_big_endian_index() {
        let p = Params::default();
        let root = Node::root(&p);
        let mut h = Sha1::new();
        h.update([0u8; 16]);
        h.update(0u32.to_be_bytes());
        assert_eq!(root.state, <[u8; 20]>::from(h.finalize()));
        let mut h = Sha1::new();
        h.update(root.state);
        h.update(258u32.to_be_bytes());
        let c = root.child(258, &p);
        assert_eq!(c.state, <[u8; 20]>::from(h.finalize()));
        assert_eq!(c.height, 1);
        assert_eq!(
            c,
            root.child(
                258,
                &Params {
                    granularity: 3,
                    ..p
                }
            )
        );
        let r = u32::from_be_bytes(c.state[16..].try_into().unwrap()) & 0x7FFF_FFFF;
        assert_eq!(c.rand(), r);
    }

    #[test]
    fn balanced_trees_are_complete() {
        let p = Params::parse("-t 3 -b 3 -d 4").unwrap();
        let want = Counts {
            nodes: 1 + 3 + 9 + 27 + 81,
            leaves: 81,
            max_depth: 4,
        };
        assert_eq!(serial(&p), want);
        assert_eq!(verify(&p, &want, None), Ok(()));
        let p = Params::parse("-t 3 -b 250 -d 1").unwrap(); // not capped at MAX_CHILDREN
        assert_eq!(serial(&p).nodes, 251);
    }

    #[test]
    fn binomial_root_has_b_children() {
        // q = 0: every node below the root is a leaf.
        let p = Params::parse("-t 0 -b 2000 -q 0 -m 8 -r 42").unwrap();
        let c = serial(&p);
        assert_eq!((c.nodes, c.leaves, c.max_depth), (2001, 2000, 1));
        let p = Params::parse("-t 0 -b 3.7 -q 0").unwrap();
        assert_eq!(serial(&p).nodes, 4);
    }

    #[test]
    fn geometric_shapes_follow_the_depth_limit() {
        // Fixed and linear shapes stop at depth d.
        for a in [0, 3] {
            let p = Params::parse(&format!("-t 1 -a {a} -d 5 -b 4 -r 3")).unwrap();
            assert!(serial(&p).max_depth <= 5, "shape {a}");
        }
        // d = 0: the root still draws with b (as in the reference), its children are leaves.
        for a in [0, 3] {
            let p = Params::parse(&format!("-t 1 -a {a} -d 0 -b 4 -r 19")).unwrap();
            let c = serial(&p);
            assert_eq!((c.nodes, c.leaves, c.max_depth), (6, 5, 1), "shape {a}");
        }
    }

    #[test]
    fn display_parses_back() {
        for &(name, args, _) in NAMED {
            let p = Params::parse(args).unwrap();
            assert_eq!(Params::parse(&p.to_string()), Ok(p), "{name}");
            assert_eq!(named(name), Some(p));
        }
        let p = Params::parse("-t 2 -a 1 -d 9 -b 3.5 -q 0.2 -m 3 -f 0.25 -r 7 -g 4").unwrap();
        assert_eq!(
            p.to_string(),
            "-t 2 -a 1 -d 9 -b 3.5 -q 0.2 -m 3 -f 0.25 -r 7 -g 4"
        );
        assert_eq!(p.to_string().parse::<Params>(), Ok(p));
    }

    #[test]
    fn expected_nodes_ignores_granularity_and_unused_flags() {
        let t3 = Params::parse("-t 0 -b 2000 -q 0.124875 -m 8 -r 42 -g 5 -d 3 -a 2").unwrap();
        assert_eq!(expected_nodes(&t3), Some(4_112_897));
        let other = Params::parse("-t 0 -b 2000 -q 0.124875 -m 8 -r 43").unwrap();
        assert_eq!(expected_nodes(&other), None);
    }

    #[test]
    fn verify_rejects_impossible_and_wrong_counts() {
        let p = named("T1XS").unwrap();
        let good = serial(&p);
        assert_eq!(verify(&p, &good, None), Ok(()));
        assert_eq!(verify(&p, &good, Some(good.nodes)), Ok(()));
        let e = verify(&p, &good, Some(good.nodes + 1)).unwrap_err();
        assert!(e.contains("expected"), "{e}");
        let off = Counts {
            nodes: good.nodes - 1,
            ..good
        };
        assert!(verify(&p, &off, None).is_err());
        let q = Params { depth: 5, ..p }; // not a named tree: checked against the serial twin
        let c = serial(&q);
        assert_eq!(verify(&q, &c, None), Ok(()));
        let shallow = Counts {
            max_depth: c.max_depth - 1,
            ..c
        };
        assert!(verify(&q, &shallow, None).unwrap_err().contains("serial"));
        assert!(verify(&p, &Counts::default(), None).is_err());
        let bad = Counts {
            leaves: good.nodes + 1,
            ..good
        };
        assert!(verify(&p, &bad, None).unwrap_err().contains("leaves"));
    }
}
