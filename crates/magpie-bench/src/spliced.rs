//! The suite's heat, jacobi and fdtd-2d as phases of data-effect splicing (`magpie_splice`):
//! their row updates are the suite's own functions, so a spliced run computes the suite's bits.
//! A phase is one time step (fdtd-2d: one half step, electric or magnetic) over the grid's
//! rows, split in halves down to `grain` rows; a step updates its block row by row, and every
//! call declares the rows it reads and writes ([`Rows`]).

use magpie_splice::kernels::{halves, Block};
use magpie_splice::{Grids, Phase, Rows, View};

/// Heat (the suite's `heat`): buffers 0 and 1 ping-pong; step `t` reads buffer `t % 2` and
/// writes buffer `(t + 1) % 2`, interior rows `1..n − 1`.
pub struct Heat {
    /// Grid side.
    pub n: usize,
    /// The time step.
    pub t: usize,
    /// Rows per step.
    pub grain: usize,
}

impl Heat {
    /// The two buffers, both holding the suite's initial grid (so both hold the boundary).
    pub fn grids(n: usize) -> Grids {
        let g = crate::kernels::heat::input(n as u64);
        Grids::new(vec![(n, g.clone()), (n, g)])
    }

    /// `steps` phases of side `n`.
    pub fn phases(n: usize, steps: usize, grain: usize) -> Vec<Heat> {
        (0..steps).map(|t| Heat { n, t, grain }).collect()
    }
}

impl Phase for Heat {
    type Node = Block;
    type Effect = Rows;
    type Memory = Grids;
    type Output = ();

    fn root(&self) -> Block {
        1..self.n - 1
    }
    fn effect(&self, b: &Block) -> Rows {
        Rows::new()
            .read(self.t % 2, b.start - 1..b.end + 1)
            .write((self.t + 1) % 2, b.clone())
    }
    fn split(&self, b: &Block) -> Vec<Block> {
        halves(b, self.grain)
    }
    fn step(&self, b: &Block, v: &mut View<'_>) {
        let (src, dst) = (self.t % 2, (self.t + 1) % 2);
        for r in b.clone() {
            let ([out], [up, mid, down]) =
                v.rows([(dst, r)], [(src, r - 1), (src, r), (src, r + 1)]);
            crate::kernels::heat::update_row(up, mid, down, out);
        }
    }
    fn empty(&self) {}
    fn merge(&self, _: (), _: ()) {}
}

/// Jacobi (the suite's `jacobi`): buffers 0 and 1 ping-pong the grid, buffer 2 is f; a phase's
/// output is its residual (the largest change; merged by `max`).
pub struct Jacobi {
    /// Grid side.
    pub n: usize,
    /// The time step.
    pub t: usize,
    /// Rows per step.
    pub grain: usize,
}

impl Jacobi {
    /// The suite's problem: the grid twice and f.
    pub fn grids(n: usize) -> Grids {
        let p = crate::kernels::jacobi::input(n as u64);
        Grids::new(vec![(n, p.grid.clone()), (n, p.grid), (n, p.f)])
    }

    /// `steps` phases of side `n`.
    pub fn phases(n: usize, steps: usize, grain: usize) -> Vec<Jacobi> {
        (0..steps).map(|t| Jacobi { n, t, grain }).collect()
    }

    fn h2(&self) -> f64 {
        let h = 1.0 / (self.n - 1) as f64;
        h * h
    }
}

impl Phase for Jacobi {
    type Node = Block;
    type Effect = Rows;
    type Memory = Grids;
    type Output = f64;

    fn root(&self) -> Block {
        1..self.n - 1
    }
    fn effect(&self, b: &Block) -> Rows {
        Rows::new()
            .read(self.t % 2, b.start - 1..b.end + 1)
            .read(2, b.clone())
            .write((self.t + 1) % 2, b.clone())
    }
    fn split(&self, b: &Block) -> Vec<Block> {
        halves(b, self.grain)
    }
    fn step(&self, b: &Block, v: &mut View<'_>) -> f64 {
        let (src, dst, h2) = (self.t % 2, (self.t + 1) % 2, self.h2());
        let mut res = 0.0f64;
        for r in b.clone() {
            let ([out], [up, mid, down, f]) =
                v.rows([(dst, r)], [(src, r - 1), (src, r), (src, r + 1), (2, r)]);
            res = res.max(crate::kernels::jacobi::sweep_row(h2, up, mid, down, f, out));
        }
        res
    }
    fn empty(&self) -> f64 {
        0.0
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a.max(b)
    }
}

/// Buffers of fdtd-2d.
const EY: usize = 0;
const EX: usize = 1;
const HZ: usize = 2;

/// Fdtd-2d (the suite's `fdtd-2d`): phase `2t` is step `t`'s electric update (`ey` and `ex` of
/// rows `0..n` from `hz`), phase `2t + 1` its magnetic update (`hz` of rows `0..n − 1` from
/// `ex` and `ey`). Buffers: 0 `ey`, 1 `ex`, 2 `hz`.
pub struct Fdtd {
    /// Grid side.
    pub n: usize,
    /// The phase: `2t` electric, `2t + 1` magnetic, of step `t`.
    pub phase: usize,
    /// Rows per step.
    pub grain: usize,
}

impl Fdtd {
    /// The suite's initial fields.
    pub fn grids(n: usize) -> Grids {
        let f = crate::kernels::fdtd2d::input(n);
        Grids::new(vec![(n, f.ey), (n, f.ex), (n, f.hz)])
    }

    /// The phases of `steps` time steps (two each).
    pub fn phases(n: usize, steps: usize, grain: usize) -> Vec<Fdtd> {
        (0..2 * steps)
            .map(|phase| Fdtd { n, phase, grain })
            .collect()
    }

    fn electric(&self) -> bool {
        self.phase.is_multiple_of(2)
    }
}

impl Phase for Fdtd {
    type Node = Block;
    type Effect = Rows;
    type Memory = Grids;
    type Output = ();

    fn root(&self) -> Block {
        if self.electric() {
            0..self.n
        } else {
            0..self.n - 1
        }
    }
    fn effect(&self, b: &Block) -> Rows {
        if self.electric() {
            Rows::new()
                .read(HZ, b.start.saturating_sub(1)..b.end)
                .read(EY, b.clone())
                .read(EX, b.clone())
                .write(EY, b.clone())
                .write(EX, b.clone())
        } else {
            Rows::new()
                .read(EX, b.clone())
                .read(EY, b.start..b.end + 1)
                .read(HZ, b.clone())
                .write(HZ, b.clone())
        }
    }
    fn split(&self, b: &Block) -> Vec<Block> {
        halves(b, self.grain)
    }
    fn step(&self, b: &Block, v: &mut View<'_>) {
        let t = self.phase / 2;
        for r in b.clone() {
            if self.electric() {
                if r == 0 {
                    let ([ey, ex], [h]) = v.rows([(EY, 0), (EX, 0)], [(HZ, 0)]);
                    crate::kernels::fdtd2d::e_row(t, ey, ex, h, None);
                } else {
                    let ([ey, ex], [h, h_up]) = v.rows([(EY, r), (EX, r)], [(HZ, r), (HZ, r - 1)]);
                    crate::kernels::fdtd2d::e_row(t, ey, ex, h, Some(h_up));
                }
            } else {
                let ([h], [x, y, y_down]) = v.rows([(HZ, r)], [(EX, r), (EY, r), (EY, r + 1)]);
                crate::kernels::fdtd2d::h_row_update(h, x, y, y_down);
            }
        }
    }
    fn empty(&self) {}
    fn merge(&self, _: (), _: ()) {}
}
