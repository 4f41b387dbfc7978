//! GC: graph colouring by constraint search, the graph-colouring benchmark of SLAW (Guo et al.,
//! IPDPS 2010) Table I. A backtracking search counts the proper `k`-colourings of a graph: the
//! vertices are coloured in a fixed order (0, 1, …), and vertex `v` tries, in turn, every colour
//! that none of its already-coloured neighbours has; a branch where some vertex has no colour
//! left dies, and a branch that colours every vertex counts one.
//!
//! The state of a branch is one bit set per colour ([`Classes`]: the vertices coloured `c` so
//! far), and each vertex keeps the bit set of its earlier neighbours, so "may `v` take `c`" is a
//! single `and`. The first `grain` levels of the search fork: at such a vertex the list of
//! admissible colours is split in halves with `join` (each half gets its own copy of the state,
//! a few words), down to single colours; below level `grain` a branch is searched by the plain
//! recursion. A count is a sum of integers, so it is the same whatever the split.
//!
//! The benchmark graph ([`Graph::random`]) is a deterministic random graph (SplitMix64) with a
//! planted 3-colouring, so that it has colourings to count: every vertex gets a hidden colour and
//! is joined, with probability 0.32 each, to the earlier vertices within [`WINDOW`] of it whose
//! hidden colour differs. The search then runs into dead ends all along (it visits from a few to
//! some twenty nodes per colouring found) and the work grows by about 1.3 times per vertex, not
//! smoothly: it depends on how the new vertex is joined. The graph of size `n` is the one of size
//! `n + 1` less its last vertex. Vertex sets are 128-bit masks, so a [`Graph`] has at most 128
//! vertices, far beyond what can be searched; the workload accepts `n` ≤ 90, already about
//! 1.3¹⁶ ≈ 70 times the work of the default size (74), twice over (the run and the plain search
//! of [`Gc::expected`]). Counts are `u64`, which no run that ends overflows.
//!
//! [`Gc::expected`] is an independent plain search ([`plain`]: a colour per vertex and
//! neighbour lists, no masks, no forking); the tests also check both against chromatic
//! polynomials (cycles, complete graphs, trees, empty graphs).

use crate::kernel::{Def, Kernel};
use crate::common::SplitMix64;
use crate::fork::Fork;
use crate::workload::{self, Info, Workload};

/// Colours of the benchmark graph.
pub const COLOURS: usize = 3;
/// The most colours a [`Graph`] may ask for.
pub const MAX_COLOURS: usize = 8;
/// The benchmark graph joins a vertex only to earlier vertices at most this far before it.
pub const WINDOW: usize = 10;
/// Probability, in percent, of an edge between two eligible vertices of the benchmark graph.
const EDGE_PERCENT: u64 = 32;

/// A graph on vertices `0..n` (n ≤ 128) to colour with `k` colours: for each vertex, the bit set
/// of its neighbours that come before it, and its neighbour list (for [`plain`]).
#[derive(Clone, Debug)]
pub struct Graph {
    k: usize,
    before: Vec<u128>,
    neighbours: Vec<Vec<usize>>,
}

impl Graph {
    /// A graph on `n` vertices with the given undirected edges, to colour with `k` colours.
    ///
    /// # Panics
    ///
    /// If `n > 128`, `k` is not in `1..=MAX_COLOURS`, or an edge is a loop or names a vertex
    /// outside `0..n`.
    pub fn new(n: usize, k: usize, edges: &[(usize, usize)]) -> Graph {
        assert!(n <= 128, "at most 128 vertices");
        assert!((1..=MAX_COLOURS).contains(&k), "1 to {MAX_COLOURS} colours");
        let mut before = vec![0u128; n];
        let mut neighbours = vec![Vec::new(); n];
        for &(a, b) in edges {
            assert!(a < n && b < n && a != b, "bad edge ({a}, {b})");
            let (lo, hi) = (a.min(b), a.max(b));
            if before[hi] & (1 << lo) == 0 {
                before[hi] |= 1 << lo;
                neighbours[a].push(b);
                neighbours[b].push(a);
            }
        }
        Graph {
            k,
            before,
            neighbours,
        }
    }

    /// The benchmark graph on `n` vertices (see the module docs), with [`COLOURS`] colours.
    pub fn random(n: usize) -> Graph {
        let mut rng = SplitMix64(0x4743_0000_0000_0000);
        let mut hidden = Vec::with_capacity(n);
        let mut edges = Vec::new();
        for v in 0..n {
            hidden.push(rng.next_u64() % COLOURS as u64);
            for u in v.saturating_sub(WINDOW)..v {
                if (rng.next_u64() >> 32) % 100 < EDGE_PERCENT && hidden[u] != hidden[v] {
                    edges.push((u, v));
                }
            }
        }
        Graph::new(n, COLOURS, &edges)
    }

    /// The number of vertices.
    pub fn vertices(&self) -> usize {
        self.before.len()
    }

    /// The number of edges.
    pub fn edges(&self) -> usize {
        self.before.iter().map(|m| m.count_ones() as usize).sum()
    }
}

/// The state of a branch: `classes[c]` is the set of vertices coloured `c` so far.
pub type Classes = [u128; MAX_COLOURS];

/// The colourings of vertices `v..` given the colours of `0..v`: the plain backtracking search,
/// undoing each choice on the way back.
fn count(g: &Graph, classes: &mut Classes, v: usize) -> u64 {
    if v == g.before.len() {
        return 1;
    }
    let mut total = 0;
    for c in 0..g.k {
        if classes[c] & g.before[v] == 0 {
            classes[c] |= 1 << v;
            total += count(g, classes, v + 1);
            classes[c] &= !(1 << v);
        }
    }
    total
}

/// The colourings of vertices `v..` given `classes`, forking over the admissible colours of the
/// vertices before `depth`.
fn search<F: Fork>(f: &mut F, g: &Graph, mut classes: Classes, v: usize, depth: usize) -> u64 {
    if v >= depth {
        return count(g, &mut classes, v);
    }
    let mut colours = [0u8; MAX_COLOURS];
    let mut len = 0;
    for (c, class) in classes.iter().enumerate().take(g.k) {
        if class & g.before[v] == 0 {
            colours[len] = c as u8;
            len += 1;
        }
    }
    branches(f, g, &classes, v, &colours[..len], depth)
}

/// The colourings with vertex `v` taking one of `colours`, split in halves with `join`.
fn branches<F: Fork>(
    f: &mut F,
    g: &Graph,
    classes: &Classes,
    v: usize,
    colours: &[u8],
    depth: usize,
) -> u64 {
    match colours {
        [] => 0,
        &[c] => {
            let mut next = *classes;
            next[c as usize] |= 1 << v;
            search(f, g, next, v + 1, depth)
        }
        _ => {
            let (a, b) = colours.split_at(colours.len() / 2);
            let (x, y) = f.join(
                |f| branches(f, g, classes, v, a, depth),
                |f| branches(f, g, classes, v, b, depth),
            );
            x + y
        }
    }
}

/// The kernel over any [`Fork`]: the number of proper colourings of `g`, forking over the
/// branches of the first `grain` vertices.
pub fn run<F: Fork>(f: &mut F, g: &Graph, grain: u64) -> u64 {
    let n = g.vertices();
    search(f, g, [0; MAX_COLOURS], 0, grain.min(n as u64) as usize)
}

/// The plain search: a colour per vertex, each checked against its coloured neighbours' colours
/// in the neighbour lists; no masks, no forking.
pub fn plain(g: &Graph) -> u64 {
    fn go(g: &Graph, colour: &mut [usize], v: usize) -> u64 {
        if v == colour.len() {
            return 1;
        }
        let mut total = 0;
        for c in 0..g.k {
            if g.neighbours[v].iter().all(|&u| u > v || colour[u] != c) {
                colour[v] = c;
                total += go(g, colour, v + 1);
            }
        }
        total
    }
    go(g, &mut vec![0; g.vertices()], 0)
}

/// The graph-colouring workload.
pub struct Gc;

static DEF: Def = workload::def::<Gc>();
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for Gc {
    const INFO: Info = Info {
        name: "gc",
        source: "SLAW Table I (graph colouring), counting the 3-colourings of a random graph",
        n_meaning: "vertices of the benchmark graph (the work grows about 1.3 times per vertex)",
        ci: 48,
        default: 74,
        // SLAW's input (CLIQUE_10 with 10 colours) needs more colours than this search supports
        // (MAX_COLOURS); the paper preset is the default size.
        paper: 74,
        min_n: 1,
        // 1.3^16 ≈ 70 times the default's work (and as much again for `expected`); more vertices
        // would not finish.
        max_n: 90,
        grain: 16,
        grain_meaning: "levels (vertices) of the search whose branches fork",
    };
    type Shared = Graph;
    type Input = ();
    type Output = u64;
    type Expected = u64;

    fn shared(n: u64) -> Graph {
        Graph::random(n as usize)
    }
    fn input(_: u64, _: &Graph) {}
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, g: &Graph, _: &mut ()) -> u64 {
        run(f, g, grain)
    }
    fn expected(_: u64, g: &Graph) -> u64 {
        plain(g)
    }
    fn answer(_: u64, _: &Graph, _: &(), count: &u64) -> String {
        format!("{count} colourings")
    }
    fn verify(n: u64, _: &Graph, want: &u64, _: &(), got: u64) -> Result<(), String> {
        if got == *want {
            Ok(())
        } else {
            Err(format!(
                "gc({n}): counted {got} colourings, the plain search counts {want}"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Magpie, Serial};

    #[test]
    fn every_version_matches_the_plain_search() {
        crate::workload::check_everywhere::<Gc>(&[1, 9, 40], &[1, 4, 64]);
    }

    /// Checks the plain search and the kernel (serial and on magpie, several grains) on `g`.
    fn counts(g: &Graph, want: u64, what: &str) {
        assert_eq!(plain(g), want, "plain, {what}");
        let pool = magpie::Pool::builder().workers(2).build().unwrap();
        for grain in [1, 3, 64] {
            assert_eq!(run(&mut Serial, g, grain), want, "serial, {what}");
            assert_eq!(
                pool.install(|| run(&mut Magpie, g, grain)),
                want,
                "magpie grain {grain}, {what}"
            );
        }
    }

    #[test]
    fn counts_match_chromatic_polynomials() {
        for k in 1..=4u64 {
            for n in 1..=9usize {
                let what = format!("k = {k}, n = {n}");
                let ku = k as usize;
                // No edges: k^n.
                counts(
                    &Graph::new(n, ku, &[]),
                    k.pow(n as u32),
                    &format!("empty, {what}"),
                );
                // A tree (each vertex joined to a pseudo-random earlier one): k (k-1)^(n-1).
                let mut rng = SplitMix64(7);
                let tree: Vec<_> = (1..n)
                    .map(|v| ((rng.next_u64() % v as u64) as usize, v))
                    .collect();
                let want = k * (k - 1).pow(n as u32 - 1);
                counts(&Graph::new(n, ku, &tree), want, &format!("tree, {what}"));
                // The complete graph: k (k-1) ... (k-n+1).
                let all: Vec<_> = (0..n).flat_map(|b| (0..b).map(move |a| (a, b))).collect();
                let want = (0..n as u64).map(|i| k.saturating_sub(i)).product();
                counts(&Graph::new(n, ku, &all), want, &format!("complete, {what}"));
                // The cycle C_n (n >= 3): (k-1)^n + (-1)^n (k-1).
                if n >= 3 {
                    let mut cycle: Vec<_> = (1..n).map(|v| (v - 1, v)).collect();
                    cycle.push((n - 1, 0));
                    let (p, q) = ((k - 1).pow(n as u32), k - 1);
                    let want = if n % 2 == 0 { p + q } else { p - q };
                    counts(&Graph::new(n, ku, &cycle), want, &format!("cycle, {what}"));
                }
            }
        }
    }

    #[test]
    fn benchmark_graph_is_a_prefix_family_with_colourings() {
        let big = Graph::random(30);
        let small = Graph::random(20);
        assert_eq!(small.before[..], big.before[..20]);
        assert!(big.edges() > 30, "{} edges", big.edges());
        // The planted colouring and its 3! renamings are among the colourings.
        let c = plain(&big);
        assert!(c >= 6 && c.is_multiple_of(6), "{c}");
        assert_eq!(run(&mut Serial, &big, 8), c);
    }

    #[test]
    fn wrong_results_and_sizes_are_rejected() {
        let g = Gc::shared(12);
        let want = Gc::expected(12, &g);
        assert_eq!(Gc::verify(12, &g, &want, &(), want), Ok(()));
        let e = Gc::verify(12, &g, &want, &(), want + 6).unwrap_err();
        assert!(e.contains(&format!("counted {}", want + 6)), "{e}");
        assert!(!e.contains('\n'));
        assert!(Gc::check_n(91).unwrap_err().contains("between 1 and 90"));
        assert!(Gc::check_n(129).is_err());
    }
}
