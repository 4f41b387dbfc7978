//! Barnes–Hut: a two-dimensional gravitational simulation of `n` bodies with the Barnes–Hut
//! approximation (Barnes and Hut, Nature 1986), the "BarnesHut" benchmark of Friendly Barriers
//! (Kumar, Blackburn, Grove, VEE 2014). Units have G = 1 and the force is softened with
//! [`SOFTENING2`] = ε²: a body at distance d (a vector) from a mass m is pulled with acceleration
//! m·d / (|d|² + ε²)^{3/2}. Each of [`STEPS`] steps
//!
//! 1. builds a quadtree over the bodies ([`Tree::build`], serially): the root is the bodies'
//!    bounding square, a square holding more than one body is split into its four quadrants
//!    (children in the order SW, SE, NW, NE; empty ones omitted) down to one body per leaf (or
//!    [`MAX_DEPTH`] levels, where coincident bodies share a leaf), and every inner node gets its
//!    total mass and centre of mass, summed over its children in order;
//! 2. computes every body's acceleration by walking the tree depth-first from the root, children
//!    in order ([`Tree::acceleration`]): a cell of side s whose centre of mass is at distance d
//!    is taken as one mass when s < θ·d ([`THETA`] = 0.5), and opened otherwise; a leaf's bodies
//!    act one by one (the body itself excluded);
//! 3. moves every body by a symplectic Euler step of [`DT`]: `v += a·dt; x += v·dt`.
//!
//! Steps 2 and 3 are the parallel part: the bodies are halved recursively with `join` down to
//! `grain` bodies, each task owning its bodies' positions and velocities (split off with
//! `split_at_mut`) while every task reads the tree through a shared reference. The tree keeps its
//! own copy of each body's position and mass, so a task may move its bodies while others still
//! walk the tree. All in safe Rust. (θ = 0.5 < 1/√2 also means that a cell holding the body
//! itself is always opened.)
//!
//! Every body's walk visits the same cells in the same order, whatever runs in parallel, so every
//! version is bit-for-bit equal to [`plain`] (the same steps as plain loops over the same tree),
//! which [`BarnesHut::expected`] computes and the verifier compares with. The tests check the
//! approximation against direct summation.

use crate::kernel::{Def, Kernel};
use crate::common::{first_bit_difference, for_row_bands, SplitMix64};
use crate::fork::Fork;
use crate::harness::{abs_sum12, sum12};
use crate::workload::{self, Info, Workload};

/// Steps of one run.
pub const STEPS: usize = 3;
/// The opening parameter θ.
pub const THETA: f64 = 0.5;
/// The time step.
pub const DT: f64 = 1e-3;
/// The softening length squared, ε².
pub const SOFTENING2: f64 = 1e-4;
/// The deepest level of the tree: bodies closer than the root's side / 2^`MAX_DEPTH` share a
/// leaf.
pub const MAX_DEPTH: usize = 48;

/// The bodies: positions, velocities and masses, one entry per body.
#[derive(Clone, Debug, PartialEq)]
pub struct Bodies {
    /// Positions.
    pub pos: Vec<[f64; 2]>,
    /// Velocities.
    pub vel: Vec<[f64; 2]>,
    /// Masses.
    pub mass: Vec<f64>,
}

/// The initial bodies (SplitMix64): each belongs to one of eight clusters centred uniformly in
/// [-1, 1)², at a distance from its centre of 0.3·u² (u uniform in [0, 1), so the clusters are
/// dense in the middle) in a uniform direction; velocities uniform in [-0.05, 0.05)²; masses in
/// [0.5, 1.5) / n (the total is about 1).
pub fn input(n: usize) -> Bodies {
    let mut rng = SplitMix64(0x4248_5554_0000_0000 ^ n as u64);
    let mut unit = || rng.next_f64();
    let centres: Vec<[f64; 2]> = (0..8)
        .map(|_| [2.0 * unit() - 1.0, 2.0 * unit() - 1.0])
        .collect();
    let mut b = Bodies {
        pos: Vec::with_capacity(n),
        vel: Vec::with_capacity(n),
        mass: Vec::with_capacity(n),
    };
    for _ in 0..n {
        let c = centres[(unit() * 8.0) as usize];
        let u = unit();
        let r = 0.3 * u * u;
        let phi = std::f64::consts::TAU * unit();
        b.pos.push([c[0] + r * phi.cos(), c[1] + r * phi.sin()]);
        b.vel.push([0.1 * (unit() - 0.5), 0.1 * (unit() - 0.5)]);
        b.mass.push((0.5 + unit()) / n as f64);
    }
    b
}

/// A body as the tree holds it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    pos: [f64; 2],
    mass: f64,
    id: usize,
}

/// No child in this quadrant.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Bodies `start..end` of [`Tree::entries`].
    Leaf { start: u32, end: u32 },
    /// Children by quadrant (SW, SE, NW, NE), [`NONE`] where empty.
    Inner { children: [u32; 4] },
}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// The square's side.
    side: f64,
    /// Total mass.
    mass: f64,
    /// Centre of mass.
    com: [f64; 2],
    kind: Kind,
}

/// A quadtree over the bodies' positions at one moment.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    /// The bodies in tree order (each leaf's bodies are a range).
    entries: Vec<Entry>,
}

/// The acceleration of a body at `p` from a mass `m` at `q`, added to `a`.
#[inline]
fn pull(a: &mut [f64; 2], p: [f64; 2], q: [f64; 2], m: f64) {
    let d = [q[0] - p[0], q[1] - p[1]];
    let r2 = d[0] * d[0] + d[1] * d[1] + SOFTENING2;
    let s = m / (r2 * r2.sqrt());
    a[0] += d[0] * s;
    a[1] += d[1] * s;
}

impl Tree {
    /// Builds the tree over `pos` and `mass` (one entry per body; at least one body).
    pub fn build(pos: &[[f64; 2]], mass: &[f64]) -> Tree {
        let mut entries: Vec<Entry> = pos
            .iter()
            .zip(mass)
            .enumerate()
            .map(|(id, (&pos, &mass))| Entry { pos, mass, id })
            .collect();
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for e in &entries {
            for k in 0..2 {
                lo[k] = lo[k].min(e.pos[k]);
                hi[k] = hi[k].max(e.pos[k]);
            }
        }
        let side = (hi[0] - lo[0]).max(hi[1] - lo[1]);
        let centre = [lo[0] + side / 2.0, lo[1] + side / 2.0];
        let mut tree = Tree {
            nodes: Vec::with_capacity(2 * entries.len()),
            entries: Vec::new(),
        };
        let mut scratch = entries.clone();
        tree.node(&mut entries, &mut scratch, 0, centre, side, 0);
        tree.entries = entries;
        tree
    }

    /// Builds the node for `es` (which start at `start` in the final entry order), a square of
    /// side `side` centred at `centre`; returns its index. `scratch` is as long as `es`.
    fn node(
        &mut self,
        es: &mut [Entry],
        scratch: &mut [Entry],
        start: usize,
        centre: [f64; 2],
        side: f64,
        depth: usize,
    ) -> u32 {
        let index = self.nodes.len();
        if es.len() <= 1 || depth == MAX_DEPTH {
            let mass: f64 = es.iter().map(|e| e.mass).sum();
            let mut com = [0.0; 2];
            for e in es.iter() {
                com[0] += e.mass * e.pos[0];
                com[1] += e.mass * e.pos[1];
            }
            self.nodes.push(Node {
                side,
                mass,
                com: [com[0] / mass, com[1] / mass],
                kind: Kind::Leaf {
                    start: start as u32,
                    end: (start + es.len()) as u32,
                },
            });
            return index as u32;
        }
        self.nodes.push(Node {
            side,
            mass: 0.0,
            com: [0.0; 2],
            kind: Kind::Inner {
                children: [NONE; 4],
            },
        });
        // A stable partition by quadrant, through `scratch`.
        let quadrant =
            |e: &Entry| (e.pos[0] >= centre[0]) as usize + 2 * (e.pos[1] >= centre[1]) as usize;
        let mut count = [0; 4];
        for e in es.iter() {
            count[quadrant(e)] += 1;
        }
        let mut at = [
            0,
            count[0],
            count[0] + count[1],
            count[0] + count[1] + count[2],
        ];
        let bounds = at;
        for e in es.iter() {
            let q = quadrant(e);
            scratch[at[q]] = *e;
            at[q] += 1;
        }
        es.copy_from_slice(scratch);
        let mut children = [NONE; 4];
        let (mut mass, mut com) = (0.0, [0.0; 2]);
        for q in 0..4 {
            if count[q] == 0 {
                continue;
            }
            let r = bounds[q]..bounds[q] + count[q];
            let quarter = side / 4.0;
            let c = [
                centre[0] + if q % 2 == 1 { quarter } else { -quarter },
                centre[1] + if q / 2 == 1 { quarter } else { -quarter },
            ];
            let child = self.node(
                &mut es[r.clone()],
                &mut scratch[r],
                start + bounds[q],
                c,
                side / 2.0,
                depth + 1,
            );
            children[q] = child;
            let ch = self.nodes[child as usize];
            mass += ch.mass;
            com[0] += ch.mass * ch.com[0];
            com[1] += ch.mass * ch.com[1];
        }
        let node = &mut self.nodes[index];
        node.mass = mass;
        node.com = [com[0] / mass, com[1] / mass];
        node.kind = Kind::Inner { children };
        index as u32
    }

    /// The acceleration of body `id` at `p`, walking the tree with opening parameter `theta`.
    pub fn acceleration(&self, p: [f64; 2], id: usize, theta: f64) -> [f64; 2] {
        let mut a = [0.0; 2];
        self.walk(0, p, id, theta * theta, &mut a);
        a
    }

    fn walk(&self, node: u32, p: [f64; 2], id: usize, theta2: f64, a: &mut [f64; 2]) {
        let nd = &self.nodes[node as usize];
        match nd.kind {
            Kind::Leaf { start, end } => {
                for e in &self.entries[start as usize..end as usize] {
                    if e.id != id {
                        pull(a, p, e.pos, e.mass);
                    }
                }
            }
            Kind::Inner { children } => {
                let d = [nd.com[0] - p[0], nd.com[1] - p[1]];
                if nd.side * nd.side < theta2 * (d[0] * d[0] + d[1] * d[1]) {
                    pull(a, p, nd.com, nd.mass);
                } else {
                    for c in children {
                        if c != NONE {
                            self.walk(c, p, id, theta2, a);
                        }
                    }
                }
            }
        }
    }
}

/// Moves one body: `v += a·dt; x += v·dt`.
#[inline]
fn advance(x: &mut [f64; 2], v: &mut [f64; 2], a: [f64; 2]) {
    for k in 0..2 {
        v[k] += a[k] * DT;
        x[k] += v[k] * DT;
    }
}

/// Forces and moves for all bodies, split in halves down to `grain` bodies ([`for_row_bands`]).
fn forces<F: Fork>(
    f: &mut F,
    tree: &Tree,
    pos: &mut [[f64; 2]],
    vel: &mut [[f64; 2]],
    grain: usize,
) {
    for_row_bands(f, (pos, vel), 0, grain, &|first, (pos, vel)| {
        for (k, (x, v)) in pos.iter_mut().zip(vel).enumerate() {
            let a = tree.acceleration(*x, first + k, THETA);
            advance(x, v, a);
        }
    });
}

/// The kernel over any [`Fork`]: [`STEPS`] steps.
pub fn run<F: Fork>(f: &mut F, b: &mut Bodies, grain: u64) {
    if b.pos.is_empty() {
        return;
    }
    let grain = grain.max(1) as usize;
    for _ in 0..STEPS {
        let tree = Tree::build(&b.pos, &b.mass);
        forces(f, &tree, &mut b.pos, &mut b.vel, grain);
    }
}

/// The plain loops: the same steps, body after body.
pub fn plain(b: &mut Bodies) {
    if b.pos.is_empty() {
        return;
    }
    for _ in 0..STEPS {
        let tree = Tree::build(&b.pos, &b.mass);
        for i in 0..b.pos.len() {
            let a = tree.acceleration(b.pos[i], i, THETA);
            advance(&mut b.pos[i], &mut b.vel[i], a);
        }
    }
}

/// The Barnes–Hut workload.
pub struct BarnesHut;

static DEF: Def = workload::def::<BarnesHut>();
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for BarnesHut {
    const INFO: Info = Info {
        name: "barnes-hut",
        // The paper's section and table were not at hand when this was written.
        source: "Friendly Barriers (Kumar et al., VEE 2014) BarnesHut, 2-D",
        n_meaning: "bodies (2-D, theta 0.5, 3 steps)",
        ci: 4000,
        default: 50_000,
        // The paper's body count was not at hand: 10^6 stands in.
        paper: 1_000_000,
        min_n: 1,
        max_n: 1 << 22,
        grain: 64,
        grain_meaning: "bodies whose forces one task computes",
    };
    type Shared = ();
    type Input = Bodies;
    type Output = ();
    type Expected = Bodies;

    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Bodies {
        input(n as usize)
    }
    fn run<F: Fork>(f: &mut F, _: u64, grain: u64, _: &(), b: &mut Bodies) {
        run(f, b, grain)
    }
    fn expected(n: u64, _: &()) -> Bodies {
        let mut b = input(n as usize);
        plain(&mut b);
        b
    }
    fn answer(_: u64, _: &(), b: &Bodies, _: &()) -> String {
        format!(
            "position sum {}, velocity abs sum {}",
            sum12(b.pos.as_flattened()),
            abs_sum12(b.vel.as_flattened())
        )
    }
    fn verify(n: u64, _: &(), want: &Bodies, got: &Bodies, _: ()) -> Result<(), String> {
        let len = want.pos.len();
        if [got.pos.len(), got.vel.len(), got.mass.len()] != [len; 3] {
            return Err(format!(
                "barnes-hut({n}): {}/{}/{} positions/velocities/masses, expected {len}",
                got.pos.len(),
                got.vel.len(),
                got.mass.len()
            ));
        }
        for (what, g, w) in [
            ("position", &got.pos, &want.pos),
            ("velocity", &got.vel, &want.vel),
        ] {
            if let Some(k) = first_bit_difference(g.as_flattened(), w.as_flattened()) {
                let i = k / 2;
                return Err(format!(
                    "barnes-hut({n}): body {i}'s {what} is {:?}, the plain loops give {:?}",
                    g[i], w[i]
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;

    /// Direct summation: every other body, in index order.
    fn direct(b: &Bodies, i: usize) -> [f64; 2] {
        let mut a = [0.0; 2];
        for (j, (&q, &m)) in b.pos.iter().zip(&b.mass).enumerate() {
            if j != i {
                pull(&mut a, b.pos[i], q, m);
            }
        }
        a
    }

    fn norm(a: [f64; 2]) -> f64 {
        (a[0] * a[0] + a[1] * a[1]).sqrt()
    }

    #[test]
    fn every_version_matches_the_plain_loops() {
        crate::workload::check_everywhere::<BarnesHut>(&[1, 2, 3, 50, 300], &[1, 7, 64]);
    }

    #[test]
    fn approximation_is_close_to_direct_summation() {
        let b = input(3000);
        let tree = Tree::build(&b.pos, &b.mass);
        let exact: Vec<[f64; 2]> = (0..b.pos.len()).map(|i| direct(&b, i)).collect();
        let rms = (exact.iter().map(|&a| norm(a).powi(2)).sum::<f64>() / exact.len() as f64).sqrt();
        // The relative RMS error over all bodies and the worst error relative to the RMS
        // acceleration, at opening parameter `theta`.
        let errors = |theta: f64| {
            let (mut err2, mut sum2, mut worst) = (0.0, 0.0, 0.0f64);
            for (i, &want) in exact.iter().enumerate() {
                let got = tree.acceleration(b.pos[i], i, theta);
                let d = norm([got[0] - want[0], got[1] - want[1]]);
                err2 += d * d;
                sum2 += norm(want).powi(2);
                worst = worst.max(d / rms);
            }
            ((err2 / sum2).sqrt(), worst)
        };
        // θ = 0 opens every cell: direct summation in another order.
        let (rel, worst) = errors(0.0);
        assert!(
            rel < 1e-14 && worst < 1e-13,
            "θ = 0: {rel:e}, worst {worst:e}"
        );
        // Monopole cells at θ = 0.5: about 0.6 % overall and 3 % of the RMS at worst here.
        let (rel, worst) = errors(THETA);
        assert!(rel < 1e-2, "relative RMS error {rel:e}");
        assert!(
            worst < 6e-2,
            "worst error {worst:e} of the RMS acceleration"
        );
        // The error shrinks with θ (roughly as θ²).
        let (rel_small, _) = errors(THETA / 2.0);
        assert!(rel_small < rel / 3.0, "θ/2: {rel_small:e}, θ: {rel:e}");
    }

    #[test]
    fn tree_holds_every_body_once_and_coincident_bodies_share_a_leaf() {
        let mut b = input(500);
        // Three bodies at one point: they must end in one leaf at the deepest level.
        b.pos[7] = b.pos[3];
        b.pos[11] = b.pos[3];
        let tree = Tree::build(&b.pos, &b.mass);
        let mut ids: Vec<usize> = tree.entries.iter().map(|e| e.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..500).collect::<Vec<_>>());
        let root = tree.nodes[0];
        let total: f64 = b.mass.iter().sum();
        assert!((root.mass - total).abs() <= 1e-12 * total);
        let shared = tree.nodes.iter().any(|nd| match nd.kind {
            Kind::Leaf { start, end } => {
                let mut v: Vec<usize> = tree.entries[start as usize..end as usize]
                    .iter()
                    .map(|e| e.id)
                    .collect();
                v.sort_unstable();
                v == [3, 7, 11]
            }
            Kind::Inner { .. } => false,
        });
        assert!(shared);
        // The coincident bodies do not pull each other to infinity.
        let mut b2 = b.clone();
        run(&mut Serial, &mut b2, 16);
        assert!(b2
            .pos
            .iter()
            .chain(&b2.vel)
            .all(|p| p[0].is_finite() && p[1].is_finite()));
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 200;
        let want = BarnesHut::expected(n, &());
        let mut b = BarnesHut::input(n, &());
        run(&mut Serial, &mut b, 9);
        assert_eq!(BarnesHut::verify(n, &(), &want, &b, ()), Ok(()));
        let mut bad = b.clone();
        bad.vel[42][1] = f64::from_bits(bad.vel[42][1].to_bits() ^ 1);
        let e = BarnesHut::verify(n, &(), &want, &bad, ()).unwrap_err();
        assert!(e.contains("body 42's velocity") && !e.contains('\n'), "{e}");
        // No steps is not the result.
        assert!(BarnesHut::verify(n, &(), &want, &BarnesHut::input(n, &()), ()).is_err());
    }
}
