//! Floyd–Warshall: all-pairs shortest paths on a dense weighted digraph of `n` vertices, the
//! "FW" benchmark of Lifflander's thesis. Distances are `u32`; a missing edge is [`INF`]. For
//! each intermediate vertex k in order, every pair (i, j) is relaxed:
//!
//! ```text
//! d[i][j] = min(d[i][j], d[i][k] + d[k][j])
//! ```
//!
//! Weights are positive, so `d[k][k]` stays 0 and, during step k, row k and column k do not
//! change. Each step therefore reads a copy of row k (taken before the step) and updates the rows
//! independently: the rows are halved recursively with `join` down to `grain` rows, each half a
//! `split_at_mut` of the matrix, in safe Rust. The step ends when its root `join` returns, which
//! is the barrier between steps.
//!
//! [`INF`] is `u32::MAX / 2`, so `d[i][k] + d[k][j]` never overflows (both are at most [`INF`])
//! and a sum through a missing edge is at least [`INF`], never less than `d[i][j]` unless
//! `d[i][j]` is itself larger than [`INF`], which it never is. The arithmetic is on integers, so
//! every version gives exactly the same matrix; [`FloydWarshall::expected`] is the textbook triple
//! loop (k, i, j) on the matrix in place, and the verifier compares every entry.

use crate::kernel::{Def, Kernel};
use crate::common::{for_row_bands, Rows, SplitMix64};
use crate::fork::Fork;
use crate::workload::{self, Info, Workload};

/// The distance of a missing edge (and of an unreachable pair).
pub const INF: u32 = u32::MAX / 2;
/// The largest edge weight; weights are 1..=`MAX_WEIGHT`.
pub const MAX_WEIGHT: u32 = 1000;
/// An ordered pair (i, j), i ≠ j, has an edge with probability 1 / `SPARSITY`.
const SPARSITY: u64 = 8;

/// The input: the `n`×`n` row-major weight matrix of a deterministic random digraph in which each
/// ordered pair of distinct vertices has an edge with probability 1 / `sparsity` (weight uniform
/// in 1..=[`MAX_WEIGHT`]), [`INF`] for a missing edge and 0 on the diagonal.
pub fn graph(n: usize, sparsity: u64, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64(0x4657_0000_0000_0000 ^ seed);
    let mut d = vec![INF; n * n];
    for i in 0..n {
        for j in 0..n {
            let r = rng.next_u64();
            if i == j {
                d[i * n + j] = 0;
            } else if (r >> 32).is_multiple_of(sparsity) {
                d[i * n + j] = 1 + (r as u32) % MAX_WEIGHT;
            }
        }
    }
    d
}

/// Relaxes `row` (row i, whose entry k is `row[k]`) through vertex k, whose row is `rk`.
#[inline]
fn relax_row(row: &mut [u32], k: usize, rk: &[u32]) {
    let dik = row[k];
    for (dij, &dkj) in row.iter_mut().zip(rk) {
        *dij = (*dij).min(dik + dkj);
    }
}

/// Relaxes the whole rows `rows` through vertex k, whose row (copied) is `rk`.
fn relax_rows(n: usize, rows: &mut [u32], k: usize, rk: &[u32]) {
    // For the cache model: the rows and row k's copy read, the rows written.
    magpie::cachemodel::leaf(
        &[
            magpie::cachemodel::range_of(rows),
            magpie::cachemodel::range_of(rk),
        ],
        &[magpie::cachemodel::range_of(rows)],
    );
    for row in rows.chunks_exact_mut(n) {
        relax_row(row, k, rk);
    }
}

/// The kernel over any [`Fork`]: `d` (`n`×`n`, row-major) becomes the shortest distances. Each
/// step relaxes the rows through k, split in halves down to `grain` rows ([`for_row_bands`]).
pub fn run<F: Fork>(f: &mut F, n: usize, d: &mut [u32], grain: u64) {
    let grain = grain.clamp(1, n as u64) as usize;
    let mut rk = vec![0; n];
    for k in 0..n {
        rk.copy_from_slice(&d[k * n..(k + 1) * n]);
        let rk = &rk[..];
        for_row_bands(f, Rows(d, n), 0, grain, &|_, Rows(rows, _)| {
            relax_rows(n, rows, k, rk)
        });
    }
}

/// The plain loop: the textbook k-i-j triple loop on the matrix in place.
pub fn plain(n: usize, d: &mut [u32]) {
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                let via = d[i * n + k] + d[k * n + j];
                if via < d[i * n + j] {
                    d[i * n + j] = via;
                }
            }
        }
    }
}

/// Floyd–Warshall as an iterative [`Program`](crate::placement::Program) (first-touch
/// placement, §6.4): the workload's graph on `n` vertices and its first `steps` steps (k = 0,
/// 1, ...; `n` steps finish it), each one phase over the rows, and an initialiser that copies
/// the matrix into fresh memory with the same sweep.
#[derive(Clone, Debug)]
pub struct Placed {
    n: usize,
    d: Vec<u32>,
    grain: usize,
    steps: usize,
}

impl Placed {
    /// The graph of `n` vertices (at least 1), leaves of at most `grain` rows, the first
    /// `steps` steps (at most `n`).
    pub fn new(n: usize, grain: u64, steps: usize) -> Result<Placed, String> {
        if n == 0 {
            return Err("floyd-warshall: n = 0: the graph needs a vertex".into());
        }
        Ok(Placed {
            n,
            d: FloydWarshall::input_matrix(n as u64),
            grain: grain.clamp(1, n as u64) as usize,
            steps: steps.min(n),
        })
    }
}

/// This kernel as a placed iterative program ([`crate::placement`]).
pub const PLACEMENT: crate::placement::Facet = crate::placement::Facet {
    iterations: |n| n as usize,
    banded: true,
    run: |pool, n, grain, iterations, strategy, pace| {
        crate::placement::run(
            pool,
            &Placed::new(n as usize, grain, iterations)?,
            strategy,
            pace,
        )
    },
};

impl crate::placement::Program for Placed {
    fn name(&self) -> &'static str {
        "floyd-warshall"
    }
    fn phases(&self) -> usize {
        1
    }
    fn iterations(&self) -> usize {
        self.steps
    }

    fn place<F: Fork>(&mut self, f: &mut F) {
        let n = self.n;
        let mut d = vec![0u32; n * n];
        let old = &self.d[..];
        let data = (n * n * 4) as u64;
        crate::placement::sweep(f, Rows(&mut d[..], n), 0, self.grain, data, &|first,
                                                                               Rows(
            rows,
            _,
        )| {
            let from = &old[first * n..first * n + rows.len()];
            magpie::cachemodel::first_touch(
                &[magpie::cachemodel::range_of(from)],
                &[magpie::cachemodel::range_of(rows)],
            );
            rows.copy_from_slice(from);
        });
        self.d = d;
    }

    fn phase<F: Fork>(&mut self, f: &mut F, k: usize, _p: usize) {
        let n = self.n;
        let rk = self.d[k * n..(k + 1) * n].to_vec();
        let rk = &rk[..];
        let data = (n * n * 4) as u64;
        crate::placement::sweep(
            f,
            Rows(&mut self.d[..], n),
            0,
            self.grain,
            data,
            &|_, Rows(rows, _)| relax_rows(n, rows, k, rk),
        );
    }

    fn compare(&self, twin: &Placed) -> Result<(), String> {
        match self.d.iter().zip(&twin.d).position(|(a, b)| a != b) {
            None => Ok(()),
            Some(k) => Err(format!(
                "floyd-warshall({}): d[{}][{}] is {}, the serial twin's {}",
                self.n,
                k / self.n,
                k % self.n,
                self.d[k],
                twin.d[k]
            )),
        }
    }

    fn answer(&self) -> String {
        distances_answer(&self.d)
    }
}

/// The answer of a distance matrix: how many distances are finite (below [`INF`]), and their sum.
pub fn distances_answer(d: &[u32]) -> String {
    let (count, sum) = d
        .iter()
        .filter(|&&x| x < INF)
        .fold((0u64, 0u64), |(c, s), &x| (c + 1, s + u64::from(x)));
    format!("{count} finite distances, sum {sum}")
}

/// The Floyd–Warshall workload.
pub struct FloydWarshall;

impl FloydWarshall {
    fn input_matrix(n: u64) -> Vec<u32> {
        graph(n as usize, SPARSITY, n)
    }
}

static DEF: Def = Def {
    declares_leaves: true,
    placement: Some(PLACEMENT),
    ..workload::def::<FloydWarshall>()
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

impl Workload for FloydWarshall {
    const INFO: Info = Info {
        name: "floyd-warshall",
        // The thesis's section and table were not at hand when this was written.
        source: "Lifflander's thesis (FW benchmark)",
        n_meaning: "vertices (dense n*n distance matrix, 1/8 of the edges present)",
        ci: 192,
        default: 1280,
        // The thesis's graph size was not at hand: 4096 vertices (a 64 MiB matrix) stands in.
        paper: 4096,
        min_n: 1,
        // n^3 relaxations, twice (the run and the plain loop of `expected`): 8192 is about 260
        // times the default's work, minutes serially; 32768 would take hours.
        max_n: 8192,
        grain: 16,
        grain_meaning: "rows relaxed by one task in each step",
    };
    type Shared = ();
    type Input = Vec<u32>;
    type Output = ();
    type Expected = Vec<u32>;

    fn shared(_: u64) {}
    fn input(n: u64, _: &()) -> Vec<u32> {
        Self::input_matrix(n)
    }
    fn run<F: Fork>(f: &mut F, n: u64, grain: u64, _: &(), d: &mut Vec<u32>) {
        run(f, n as usize, d, grain)
    }
    fn expected(n: u64, _: &()) -> Vec<u32> {
        let mut d = Self::input_matrix(n);
        plain(n as usize, &mut d);
        d
    }
    fn answer(_: u64, _: &(), d: &Vec<u32>, _: &()) -> String {
        distances_answer(d)
    }
    fn verify(n: u64, _: &(), want: &Vec<u32>, got: &Vec<u32>, _: ()) -> Result<(), String> {
        let n = n as usize;
        if got.len() != want.len() {
            return Err(format!(
                "floyd-warshall({n}): {} entries, expected {}",
                got.len(),
                want.len()
            ));
        }
        match got.iter().zip(want).position(|(a, b)| a != b) {
            None => Ok(()),
            Some(p) => Err(format!(
                "floyd-warshall({n}): distance ({}, {}) is {}, the plain loop gives {}",
                p / n,
                p % n,
                got[p],
                want[p]
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Serial;

    /// Dijkstra's algorithm from `s` on the dense matrix (O(n²)), an independent check.
    fn dijkstra(n: usize, w: &[u32], s: usize) -> Vec<u32> {
        let mut dist = vec![INF; n];
        let mut done = vec![false; n];
        dist[s] = 0;
        for _ in 0..n {
            let Some(u) = (0..n).filter(|&v| !done[v]).min_by_key(|&v| dist[v]) else {
                break;
            };
            if dist[u] == INF {
                break;
            }
            done[u] = true;
            for v in 0..n {
                let e = w[u * n + v];
                if e != INF && dist[u] + e < dist[v] {
                    dist[v] = dist[u] + e;
                }
            }
        }
        dist
    }

    #[test]
    fn every_version_matches_the_plain_loop() {
        crate::workload::check_everywhere::<FloydWarshall>(&[1, 5, 48], &[1, 3, 16]);
    }

    #[test]
    fn distances_match_dijkstra() {
        // Dense, sparse (many unreachable pairs) and very sparse graphs.
        for (n, sparsity, seed) in [(40, 2, 1), (60, 8, 2), (50, 40, 3), (7, 3, 4)] {
            let w = graph(n, sparsity, seed);
            let mut d = w.clone();
            run(&mut Serial, n, &mut d, 4);
            let mut unreachable = 0;
            for s in 0..n {
                let want = dijkstra(n, &w, s);
                assert_eq!(&d[s * n..(s + 1) * n], &want[..], "n = {n}, source {s}");
                unreachable += want.iter().filter(|&&x| x == INF).count();
            }
            if sparsity == 40 {
                assert!(
                    unreachable > 0,
                    "the very sparse graph has unreachable pairs"
                );
            }
        }
    }

    #[test]
    fn wrong_results_are_rejected() {
        let n = 30;
        let want = FloydWarshall::expected(n, &());
        let mut d = FloydWarshall::input(n, &());
        run(&mut Serial, n as usize, &mut d, 2);
        assert_eq!(FloydWarshall::verify(n, &(), &want, &d, ()), Ok(()));
        d[7 * 30 + 11] += 1;
        let e = FloydWarshall::verify(n, &(), &want, &d, ()).unwrap_err();
        assert!(e.contains("(7, 11)") && !e.contains('\n'), "{e}");
        // The input is not the result.
        let input = FloydWarshall::input(n, &());
        assert!(FloydWarshall::verify(n, &(), &want, &input, ()).is_err());
        assert!(FloydWarshall::verify(n, &(), &want, &d[1..].to_vec(), ()).is_err());
    }
}
