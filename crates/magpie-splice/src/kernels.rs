//! A stencil as phases: seidel-2d, in place, the case where a phase depends on itself; the
//! blocks of rows every row-blocked stencil is split into; and step pipelining for any of them.
//! (The benchmark suite's heat, jacobi and fdtd-2d as phases, whose row updates are the suite's
//! own functions, are in the suite's crate: `magpie_bench::spliced`.)
//!
//! A phase is one time step over the grid's rows, split in halves down to `grain` rows; a step
//! updates its block row by row. Every call declares the rows it reads and writes ([`Rows`]), a
//! block of rows `lo..hi` of a stencil reading `lo − 1..hi + 1`.

use crate::effect::Rows;
use crate::grids::{Grids, View};
use crate::splice::Phase;
use std::ops::Range;

/// A block of rows.
pub type Block = Range<usize>;

/// The halves of `b`, or none when it has at most `grain` rows: how a stencil's phase splits
/// its blocks.
pub fn halves(b: &Block, grain: usize) -> Vec<Block> {
    if b.len() <= grain.max(1) {
        return Vec::new();
    }
    let mid = b.start + b.len() / 2;
    vec![b.start..mid, mid..b.end]
}

/// Step pipelining for the grid kernels (the thesis's §7.6.3): `phase`'s steps, blocks of
/// rows, run `rows` rows at a time, each part a block of its own. Every kernel here updates a
/// block row by row, top to bottom, so its parts one after the other do what the block does,
/// and a part's effect (its rows and their neighbours) lies inside the block's. A step of many
/// rows is then one leaf for the scheduler (one set of interference tests against the call
/// tree), while the window's phases still advance a few rows each in turn and keep their band
/// of rows small. `rows` 0 runs the steps whole.
pub struct Sliced<P> {
    /// The phase whose steps are sliced.
    pub phase: P,
    /// Rows per part (0: no slicing).
    pub rows: usize,
}

impl<P> Sliced<P> {
    /// Each of `phases` with its steps sliced into parts of `rows` rows.
    pub fn all(phases: Vec<P>, rows: usize) -> Vec<Sliced<P>> {
        phases
            .into_iter()
            .map(|phase| Sliced { phase, rows })
            .collect()
    }
}

impl<P: Phase<Node = Block>> Phase for Sliced<P> {
    type Node = Block;
    type Effect = P::Effect;
    type Memory = P::Memory;
    type Output = P::Output;

    fn root(&self) -> Block {
        self.phase.root()
    }
    fn effect(&self, b: &Block) -> P::Effect {
        self.phase.effect(b)
    }
    fn split(&self, b: &Block) -> Vec<Block> {
        self.phase.split(b)
    }
    fn step(
        &self,
        b: &Block,
        view: &mut <P::Memory as crate::grids::Memory<P::Effect>>::View<'_>,
    ) -> P::Output {
        self.phase.step(b, view)
    }
    fn empty(&self) -> P::Output {
        self.phase.empty()
    }
    fn merge(&self, a: P::Output, b: P::Output) -> P::Output {
        self.phase.merge(a, b)
    }
    fn slice(&self, b: &Block) -> Option<(Block, Block)> {
        if self.rows == 0 || b.len() <= self.rows {
            return None;
        }
        let cut = b.start + self.rows;
        Some((b.start..cut, cut..b.end))
    }
}

/// Seidel-2d (PolyBench), in place on buffer 0: every interior point becomes the mean of the
/// 3×3 block around it, rows top to bottom and each row left to right, so a point sees its
/// upper and left neighbours' new values and the others' old ones.
pub struct Seidel {
    /// Grid side.
    pub n: usize,
    /// The time step (all steps are alike; kept for messages).
    pub t: usize,
    /// Rows per step.
    pub grain: usize,
}

impl Seidel {
    /// A deterministic grid of side `n`.
    pub fn grids(n: usize) -> Grids {
        let g = (0..n * n)
            .map(|k| ((k * 7 + 3) % 101) as f64 / 101.0 + if k < n { 2.0 } else { 0.0 })
            .collect();
        Grids::new(vec![(n, g)])
    }

    /// `steps` phases of side `n`.
    pub fn phases(n: usize, steps: usize, grain: usize) -> Vec<Seidel> {
        (0..steps).map(|t| Seidel { n, t, grain }).collect()
    }

    /// The plain loops (PolyBench's), `steps` sweeps on `g` (row-major, side `n`).
    pub fn plain(n: usize, steps: usize, g: &mut [f64]) {
        for _ in 0..steps {
            for i in 1..n - 1 {
                let (above, rest) = g.split_at_mut(i * n);
                let (row, below) = rest.split_at_mut(n);
                seidel_row(&above[(i - 1) * n..], row, &below[..n]);
            }
        }
    }
}

/// One Seidel row in place: `row` from `up` (already this sweep's) and `down` (the last's).
#[inline]
fn seidel_row(up: &[f64], row: &mut [f64], down: &[f64]) {
    let n = row.len();
    for j in 1..n - 1 {
        row[j] = (up[j - 1]
            + up[j]
            + up[j + 1]
            + row[j - 1]
            + row[j]
            + row[j + 1]
            + down[j - 1]
            + down[j]
            + down[j + 1])
            / 9.0;
    }
}

impl Phase for Seidel {
    type Node = Block;
    type Effect = Rows;
    type Memory = Grids;
    type Output = ();

    fn root(&self) -> Block {
        1..self.n - 1
    }
    fn effect(&self, b: &Block) -> Rows {
        Rows::new()
            .read(0, b.start - 1..b.end + 1)
            .write(0, b.clone())
    }
    fn split(&self, b: &Block) -> Vec<Block> {
        halves(b, self.grain)
    }
    fn step(&self, b: &Block, v: &mut View<'_>) {
        for r in b.clone() {
            let ([row], [up, down]) = v.rows([(0, r)], [(0, r - 1), (0, r + 1)]);
            seidel_row(up, row, down);
        }
    }
    fn empty(&self) {}
    fn merge(&self, _: (), _: ()) {}
}
