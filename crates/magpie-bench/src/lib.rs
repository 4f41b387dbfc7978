//! magpie-bench: the benchmark kernels of the papers magpie implements, each with a serial twin
//! (plain Rust, no runtime), a verifier that checks every run, and `ci` / `default` / `paper`
//! sizes; their peer versions on rayon and chili (the C++ TBB and OpenMP versions are in `peers/`,
//! driven through [`native`]); and a timing harness ([`harness`]) with a runner ([`runner`]) that
//! the `magpie` CLI drives.
//!
//! - SLAW (Guo et al., IPDPS 2010) Table I: fib, fj, fj-rec, pdfs, sor, cg, sort, matmul, lu, gc.
//! - CAB (Chen et al., ICPP 2011) and DWS: nqueens, heat, ge, mergesort, fft, cholesky.
//! - Friendly Barriers: uts, jacobi, cilksort, barnes-hut, lud.
//! - Lifflander's thesis: strassen, nbody, floyd-warshall, fdtd-2d, prefix-scan.
//! - chili's and Spice's published benchmark: tree-sum.
//! - Ordinary rayon programs ([`programs`]): mandelbrot, par-sort-unstable, par-sort-by-key,
//!   nbody-step, word-count, fine-sum, spmv — rayon's iterators, which magpie runs on its own
//!   rayon-core in a second build and rayon on its own ([`Peer::RayonIter`]).
//!
//! The kernels from sor on are [`workload::Workload`]s: written once over [`fork::Fork`], so the
//! serial twin, magpie, rayon and chili run the same code, with a grain parameter. The earlier
//! ones and tree-sum have their versions written out; of them, fib, uts, sort, matmul, heat,
//! jacobi and nqueens take a grain too ([`Kernel::check_grain`]).
//!
//! ```
//! use magpie_bench::{runner::{self, Case}, Kernel, Size};
//! let pool = magpie::Pool::builder().workers(1).build()?;
//! let case = Case::new(Kernel::Fib, Kernel::Fib.size_n(Size::Ci));
//! let m = runner::run_magpie(&pool, &case, 1).unwrap();
//! assert!(m.verified);
//! # Ok::<(), magpie::Error>(())
//! ```

#![warn(missing_docs)]

pub mod barnes_hut;
pub mod cg;
pub mod cholesky;
pub mod cilksort;
pub mod common;
pub mod fdtd2d;
pub mod fft;
pub mod fib;
pub mod fj;
pub mod floyd_warshall;
pub mod fork;
pub mod gc;
pub mod ge;
pub mod harness;
pub mod heat;
pub mod jacobi;
pub mod lu;
pub mod lud;
pub mod matmul;
pub mod mergesort;
pub mod native;
pub mod nbody;
pub mod nqueens;
pub mod pdfs;
pub mod placement;
pub mod prefix_scan;
pub mod programs;
pub mod races;
pub mod runner;
pub mod sor;
pub mod sort;
pub mod spliced;
pub mod strassen;
pub mod tree_sum;
pub mod uts;
pub mod workload;

use std::fmt;
use std::str::FromStr;

/// A benchmark kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Fib with `join` at every level (no cutoff).
    Fib,
    /// FJ: 1024 tasks spawned in a loop into one scope, repeated `n` times.
    Fj,
    /// FJ with the 1024 tasks spawned by recursive halving, repeated `n` times.
    FjRec,
    /// Parallel depth-first search: a spanning tree of an `n`×`n` torus.
    Pdfs,
    /// N-Queens: the solutions on an `n`×`n` board.
    NQueens,
    /// Unbalanced Tree Search on the T1 family of trees, depth `n` (n = 10 is T1).
    Uts,
    /// Parallel merge sort of `n` random keys.
    Sort,
    /// Recursive `n`×`n` matrix multiplication (blocks of 64 by default).
    Matmul,
    /// 2-D heat diffusion, five-point stencil, on an `n`×`n` grid.
    Heat,
    /// Jacobi iteration on an `n`×`n` grid, 10 steps.
    Jacobi,
    /// Red-black successive over-relaxation ([`sor`]).
    Sor,
    /// Graph colouring: the proper 3-colourings of a random graph, by backtracking ([`gc`]).
    Gc,
    /// Merge sort of `n` random keys, halves in parallel, sequential merge ([`mergesort`]).
    Mergesort,
    /// Cilk's cilksort of `n` random keys: 4-way split, quicksort leaves, parallel merges
    /// ([`cilksort`]).
    Cilksort,
    /// Inclusive prefix sum of `n` `u64`, two-pass tree scan ([`prefix_scan`]).
    PrefixScan,
    /// Recursive radix-2 FFT of `n` complex points ([`fft`]).
    Fft,
    /// Conjugate gradient, 25 iterations on a sparse SPD matrix, NPB-CG-like ([`cg`]).
    Cg,
    /// Recursive LU decomposition without pivoting, blocks of 64 ([`lu`]).
    Lu,
    /// Gaussian elimination solving A x = b, rows below each pivot in parallel ([`ge`]).
    Ge,
    /// Recursive Cholesky factorization of an SPD matrix, blocks of 64 ([`cholesky`]).
    Cholesky,
    /// Floyd–Warshall all-pairs shortest paths ([`floyd_warshall`]).
    FloydWarshall,
    /// The PolyBench FDTD-2D stencil ([`fdtd2d`]).
    Fdtd2d,
    /// Direct O(n²) gravitational N-body simulation, leapfrog steps ([`nbody`]).
    NBody,
    /// Blocked LU decomposition without pivoting ([`lud`]).
    Lud,
    /// Two-dimensional Barnes–Hut gravitational simulation ([`barnes_hut`]).
    BarnesHut,
    /// Strassen matrix multiplication, the seven products in parallel ([`strassen`]).
    Strassen,
    /// The sum of a full binary tree of boxed nodes, depth `n`, `join` at every inner node
    /// ([`tree_sum`]).
    TreeSum,
    /// The sum of an `n`×`n` Mandelbrot image's escape iterations, `into_par_iter().map().sum()`
    /// ([`programs`]).
    Mandelbrot,
    /// `par_sort_unstable` of `n` random keys ([`programs`]).
    ParSortUnstable,
    /// The stable `par_sort_by_key` of `n` pairs ([`programs`]).
    ParSortByKey,
    /// One direct n-body step over `par_iter_mut().zip(par_iter())` ([`programs`]).
    NBodyStep,
    /// A word count, `fold` into maps and `reduce` ([`programs`]).
    WordCount,
    /// A fine-grained `map().sum()` of `n` floats ([`programs`]).
    FineSum,
    /// A sparse matrix-vector product, one row per item ([`programs`]).
    Spmv,
}

impl Kernel {
    /// Every kernel, in report order.
    pub const ALL: [Kernel; 34] = [
        Kernel::Fib,
        Kernel::Fj,
        Kernel::FjRec,
        Kernel::Pdfs,
        Kernel::Sor,
        Kernel::Cg,
        Kernel::Sort,
        Kernel::Matmul,
        Kernel::Lu,
        Kernel::Gc,
        Kernel::NQueens,
        Kernel::Heat,
        Kernel::Ge,
        Kernel::Mergesort,
        Kernel::Fft,
        Kernel::Cholesky,
        Kernel::Uts,
        Kernel::Jacobi,
        Kernel::Cilksort,
        Kernel::BarnesHut,
        Kernel::Lud,
        Kernel::Strassen,
        Kernel::NBody,
        Kernel::FloydWarshall,
        Kernel::Fdtd2d,
        Kernel::PrefixScan,
        Kernel::TreeSum,
        Kernel::Mandelbrot,
        Kernel::ParSortUnstable,
        Kernel::ParSortByKey,
        Kernel::NBodyStep,
        Kernel::WordCount,
        Kernel::FineSum,
        Kernel::Spmv,
    ];

    /// The kernel under the race checker ([`races::Facet`]), if its leaves declare their
    /// accesses: heat, matmul, nbody, lu and nqueens, each with a planted race.
    pub fn race(self) -> Option<races::Facet> {
        Some(match self {
            Kernel::Heat => heat::RACE,
            Kernel::Matmul => matmul::RACE,
            Kernel::NBody => nbody::RACE,
            Kernel::Lu => lu::RACE,
            Kernel::NQueens => nqueens::RACE,
            _ => return None,
        })
    }

    /// The kernel as a placed iterative program (first-touch initialiser, schedules), if it is
    /// one: heat, fdtd-2d, floyd-warshall, cg and prefix-scan.
    pub fn placement(self) -> Option<placement::Facet> {
        Some(match self {
            Kernel::Heat => heat::PLACEMENT,
            Kernel::Fdtd2d => fdtd2d::PLACEMENT,
            Kernel::FloydWarshall => floyd_warshall::PLACEMENT,
            Kernel::Cg => cg::PLACEMENT,
            Kernel::PrefixScan => prefix_scan::PLACEMENT,
            _ => return None,
        })
    }

    /// [`placement::run`] on the kernel's program at size `n`, with `grain` (default: the
    /// kernel's) and `iterations` (default: the facet's). A kernel that is not a placed program,
    /// or a bad size, is an error naming what to do.
    pub fn run_placed(
        self,
        pool: &magpie::Pool,
        n: u64,
        grain: Option<u64>,
        iterations: Option<usize>,
        strategy: placement::Strategy,
        pace: std::time::Duration,
    ) -> Result<placement::Report, String> {
        let Some(f) = self.placement() else {
            let with: Vec<&str> = Kernel::ALL
                .into_iter()
                .filter(|k| k.placement().is_some())
                .map(Kernel::name)
                .collect();
            return Err(format!(
                "{} has no first-touch initialiser (these do: {})",
                self.name(),
                with.join(", ")
            ));
        };
        self.check_n(n)?;
        let grain = grain.or(self.default_grain()).unwrap_or(1);
        let iterations = iterations.unwrap_or_else(|| (f.iterations)(n));
        (f.run)(pool, n, grain, iterations, strategy, pace)
    }

    /// The ordinary rayon program this kernel runs ([`programs`]), for those kernels (`None` for
    /// the others).
    pub fn program(self) -> Option<programs::Program> {
        use programs::Program;
        Some(match self {
            Kernel::Mandelbrot => Program::Mandelbrot,
            Kernel::ParSortUnstable => Program::SortUnstable,
            Kernel::ParSortByKey => Program::SortByKey,
            Kernel::NBodyStep => Program::NBodyStep,
            Kernel::WordCount => Program::WordCount,
            Kernel::FineSum => Program::FineSum,
            Kernel::Spmv => Program::Spmv,
            _ => return None,
        })
    }

    /// Calls `v` with this kernel's [`Workload`](workload::Workload), for the kernels written as
    /// one (`None` for the others).
    pub fn visit<V: workload::Visitor>(self, v: V) -> Option<V::Out> {
        Some(match self {
            Kernel::Sor => v.visit::<sor::Sor>(),
            Kernel::Gc => v.visit::<gc::Gc>(),
            Kernel::Mergesort => v.visit::<mergesort::Mergesort>(),
            Kernel::Cilksort => v.visit::<cilksort::Cilksort>(),
            Kernel::PrefixScan => v.visit::<prefix_scan::PrefixScan>(),
            Kernel::Fft => v.visit::<fft::Fft>(),
            Kernel::Cg => v.visit::<cg::Cg>(),
            Kernel::Lu => v.visit::<lu::Lu>(),
            Kernel::Ge => v.visit::<ge::Ge>(),
            Kernel::Cholesky => v.visit::<cholesky::Cholesky>(),
            Kernel::FloydWarshall => v.visit::<floyd_warshall::FloydWarshall>(),
            Kernel::Fdtd2d => v.visit::<fdtd2d::Fdtd2d>(),
            Kernel::NBody => v.visit::<nbody::NBody>(),
            Kernel::Lud => v.visit::<lud::Lud>(),
            Kernel::BarnesHut => v.visit::<barnes_hut::BarnesHut>(),
            Kernel::Strassen => v.visit::<strassen::Strassen>(),
            _ => return None,
        })
    }

    /// Names and sizes of a kernel written as a [`Workload`](workload::Workload).
    pub fn info(self) -> Option<workload::Info> {
        self.visit(workload::GetInfo)
    }

    /// The grain of a kernel written out per runtime rather than as a workload, where it has one:
    /// its default (the fixed cutoff the kernel had before it took a grain; none for fib and uts,
    /// which default to no cutoff), the largest grain accepted (the smallest is 1) and what it
    /// means.
    fn written_out_grain(self) -> Option<(Option<u64>, u64, &'static str)> {
        Some(match self {
            Kernel::Fib => (None, fib::MAX_N, "below fib(grain) the recursion is serial"),
            Kernel::Uts => (None, 1 << 20, "nodes per released chunk"),
            Kernel::Sort => (
                Some(sort::SORT_CUTOFF as u64),
                sort::MAX_N,
                "keys sorted by one sort_unstable",
            ),
            Kernel::Matmul => (
                Some(matmul::THRESHOLD as u64),
                matmul::MAX_N,
                "block side multiplied by the plain loop",
            ),
            Kernel::Heat => (
                Some(heat::GRAIN_ROWS as u64),
                heat::MAX_N,
                "rows updated by one task in each step",
            ),
            Kernel::Jacobi => (
                Some(jacobi::GRAIN_ROWS as u64),
                jacobi::MAX_N,
                "rows swept by one task in each step",
            ),
            Kernel::NQueens => (
                Some(nqueens::PAR_ROWS as u64),
                nqueens::MAX_N,
                "rows of the board placed by tasks before the search turns serial",
            ),
            _ => return None,
        })
    }

    /// The default grain of a kernel that has one: a workload's, or the fixed cutoff a kernel
    /// written out per runtime had before it took a grain (`None` for the kernels without a grain
    /// parameter, and for fib and uts, whose default is no cutoff: a task per node).
    pub fn default_grain(self) -> Option<u64> {
        self.info()
            .map(|i| i.grain)
            .or_else(|| self.written_out_grain().and_then(|g| g.0))
    }

    /// What the grain means, for the kernels that take one.
    pub fn grain_meaning(self) -> Option<&'static str> {
        self.info()
            .map(|i| i.grain_meaning)
            .or_else(|| self.written_out_grain().map(|g| g.2))
    }

    /// Checks a grain for this kernel; the error is one line.
    pub fn check_grain(self, grain: u64) -> Result<(), String> {
        if let Some((_, max, meaning)) = self.written_out_grain() {
            return if (1..=max).contains(&grain) {
                Ok(())
            } else {
                Err(format!(
                    "invalid grain `{grain}` for {}: expected a whole number between 1 and \
                     {max} ({meaning})",
                    self.name()
                ))
            };
        }
        self.visit(workload::CheckGrain(grain)).unwrap_or_else(|| {
            Err(format!(
                "{} has no grain parameter (`magpie bench --help` lists each kernel's grain)",
                self.name()
            ))
        })
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        if let Some(i) = self.info() {
            return i.name;
        }
        if let Some(p) = self.program() {
            return p.name();
        }
        match self {
            Kernel::Fib => "fib",
            Kernel::Fj => "fj",
            Kernel::FjRec => "fj-rec",
            Kernel::Pdfs => "pdfs",
            Kernel::NQueens => "nqueens",
            Kernel::Uts => "uts",
            Kernel::Sort => "sort",
            Kernel::Matmul => "matmul",
            Kernel::Heat => "heat",
            Kernel::Jacobi => "jacobi",
            Kernel::TreeSum => "tree-sum",
            _ => unreachable!("a workload kernel"),
        }
    }

    /// What `n` means for this kernel.
    pub fn n_meaning(self) -> &'static str {
        if let Some(i) = self.info() {
            return i.n_meaning;
        }
        if let Some(p) = self.program() {
            return p.n_meaning();
        }
        match self {
            Kernel::Fib => "fib(n)",
            Kernel::Fj | Kernel::FjRec => "repetitions of 1024 tasks",
            Kernel::Pdfs => "torus side (n*n nodes)",
            Kernel::NQueens => "board side",
            Kernel::Uts => "depth of the T1 tree family: -t 1 -a 3 -b 4 -r 19 -d n; 10 is T1",
            Kernel::Sort => "keys",
            Kernel::Matmul => "matrix side, a power of two",
            Kernel::Heat | Kernel::Jacobi => "grid side",
            Kernel::TreeSum => "tree depth (2^n - 1 nodes)",
            _ => unreachable!("a workload kernel"),
        }
    }

    /// The problem size `n` for a size preset.
    pub fn size_n(self, size: Size) -> u64 {
        let (ci, default, paper) = match self {
            _ if self.info().is_some() => {
                let i = self.info().expect("a workload");
                (i.ci, i.default, i.paper)
            }
            _ if self.program().is_some() => self.program().expect("a program").sizes(),
            Kernel::Fib => (fib::CI, fib::DEFAULT, fib::PAPER),
            Kernel::Fj | Kernel::FjRec => (fj::CI, fj::DEFAULT, fj::PAPER),
            Kernel::Pdfs => (pdfs::CI, pdfs::DEFAULT, pdfs::PAPER),
            Kernel::NQueens => (nqueens::CI, nqueens::DEFAULT, nqueens::PAPER),
            Kernel::Uts => (6, 10, 13),
            Kernel::Sort => (sort::CI, sort::DEFAULT, sort::PAPER),
            Kernel::Matmul => (matmul::CI, matmul::DEFAULT, matmul::PAPER),
            Kernel::Heat => (heat::CI, heat::DEFAULT, heat::PAPER),
            Kernel::Jacobi => (jacobi::CI, jacobi::DEFAULT, jacobi::PAPER),
            Kernel::TreeSum => (tree_sum::CI, tree_sum::DEFAULT, tree_sum::PAPER),
            _ => unreachable!("a workload kernel"),
        };
        match size {
            Size::Ci => ci,
            Size::Default => default,
            Size::Paper => paper,
        }
    }

    /// The largest `n` this kernel accepts.
    pub fn max_n(self) -> u64 {
        if let Some(i) = self.info() {
            return i.max_n;
        }
        if let Some(p) = self.program() {
            return p.max_n();
        }
        match self {
            Kernel::Fib => fib::MAX_N,
            Kernel::Fj | Kernel::FjRec => fj::MAX_REPS,
            Kernel::Pdfs => pdfs::MAX_SIDE,
            Kernel::NQueens => nqueens::MAX_N,
            Kernel::Uts => 14,
            Kernel::Sort => sort::MAX_N,
            Kernel::Matmul => matmul::MAX_N,
            Kernel::Heat => heat::MAX_N,
            Kernel::Jacobi => jacobi::MAX_N,
            Kernel::TreeSum => tree_sum::MAX_N,
            _ => unreachable!("a workload kernel"),
        }
    }

    /// Checks `n` for this kernel; the error is one line.
    pub fn check_n(self, n: u64) -> Result<(), String> {
        if let Some(r) = self.visit(workload::CheckN(n)) {
            return r;
        }
        match self {
            Kernel::Matmul if (1..=self.max_n()).contains(&n) => return matmul::check_n(n),
            Kernel::Heat => return heat::check_n(n),
            Kernel::Jacobi => return jacobi::check_n(n),
            _ => {}
        }
        if (1..=self.max_n()).contains(&n) {
            Ok(())
        } else {
            Err(format!(
                "invalid n `{n}` for {}: expected a whole number between 1 and {} ({})",
                self.name(),
                self.max_n(),
                self.n_meaning()
            ))
        }
    }

    /// Tasks one run executes, for the kernels whose figure of merit is time per task.
    pub fn tasks_per_run(self, n: u64) -> Option<u64> {
        match self {
            Kernel::Fj | Kernel::FjRec => Some(n * fj::TASKS as u64),
            _ => None,
        }
    }

    /// Peer runtimes measured for this kernel (see [`Peer::unavailable_reason`] for the C++ ones,
    /// which need `scripts/build-peers.sh`).
    pub fn peers(self) -> &'static [Peer] {
        match self {
            Kernel::Fib => &[Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
            Kernel::Fj => &[Peer::RayonScope, Peer::Tbb, Peer::OpenMp],
            Kernel::NQueens => &[Peer::RayonScope, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
            Kernel::Uts => &[Peer::RayonScope, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
            Kernel::Sort | Kernel::Matmul | Kernel::Heat => {
                &[Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp]
            }
            Kernel::Jacobi | Kernel::TreeSum => &[Peer::RayonJoin, Peer::ChiliJoin],
            Kernel::FjRec | Kernel::Pdfs => &[],
            // The same program source compiled against rayon's prelude.
            _ if self.program().is_some() => &[Peer::RayonIter],
            // Every workload is written once over `Fork`, so rayon and chili run the same code.
            _ => &[Peer::RayonJoin, Peer::ChiliJoin],
        }
    }

    /// Peers that have no faithful version of this kernel, with the reason.
    pub fn unavailable_peers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kernel::Fj => &[(
                "chili",
                "chili has only join (no scope/spawn); a join-split of the 1024 tasks would be a \
                 different kernel",
            )],
            _ if self.program().is_some() => &[
                (
                    "chili",
                    "chili has only join, no parallel iterators: the program is written on \
                     rayon's prelude",
                ),
                (
                    "tbb",
                    "no C++ version: the program is written on rayon's prelude",
                ),
                (
                    "openmp",
                    "no C++ version: the program is written on rayon's prelude",
                ),
            ],
            _ => &[],
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kernel {
    type Err = String;
    fn from_str(s: &str) -> Result<Kernel, String> {
        Kernel::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
                format!("unknown kernel `{s}`: expected one of {}", names.join(", "))
            })
    }
}

/// A problem-size preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    /// Tiny: for tests (debug builds finish in milliseconds).
    Ci,
    /// The default for measurements.
    Default,
    /// The sizes this crate uses for paper-style runs.
    Paper,
}

impl Size {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Size::Ci => "ci",
            Size::Default => "default",
            Size::Paper => "paper",
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Size, String> {
        match s {
            "ci" => Ok(Size::Ci),
            "default" => Ok(Size::Default),
            "paper" => Ok(Size::Paper),
            _ => Err(format!(
                "unknown size `{s}`: expected one of ci, default, paper"
            )),
        }
    }
}

/// A peer runtime's version of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// Fib, sort, matmul, heat, jacobi and tree-sum on `rayon::join`.
    RayonJoin,
    /// FJ, nqueens and UTS on `rayon::scope` + `Scope::spawn`.
    RayonScope,
    /// The ordinary rayon programs ([`programs`]) on rayon's parallel iterators: the same source
    /// as magpie's, compiled against `rayon::prelude`.
    RayonIter,
    /// Fib, nqueens, UTS, sort, matmul, heat, jacobi and tree-sum on `chili::Scope::join`.
    ChiliJoin,
    /// Fib, FJ, nqueens, UTS, sort, matmul and heat on Intel oneTBB's `task_group` (C++,
    /// `peers/`; see [`native`]).
    Tbb,
    /// Fib, FJ, nqueens, UTS, sort, matmul and heat on OpenMP tasks (GCC's libgomp, `peers/`;
    /// see [`native`]).
    OpenMp,
}

impl Peer {
    /// The name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Peer::RayonJoin => "rayon-join",
            Peer::RayonScope => "rayon-scope",
            Peer::RayonIter => "rayon-iter",
            Peer::ChiliJoin => "chili-join",
            Peer::Tbb => "tbb-task-group",
            Peer::OpenMp => "openmp-task",
        }
    }

    /// The C++ program behind a native peer.
    pub fn native(self) -> Option<native::Native> {
        match self {
            Peer::Tbb => Some(native::Native::Tbb),
            Peer::OpenMp => Some(native::Native::OpenMp),
            _ => None,
        }
    }

    /// Why this peer cannot be measured on this machine, if it cannot: the C++ peers need their
    /// programs built (`scripts/build-peers.sh`, which installs TBB when missing). Callers list
    /// such peers as not measured, with this reason, rather than as failures.
    pub fn unavailable_reason(self) -> Option<String> {
        let n = self.native()?;
        (!n.available()).then(|| {
            format!(
                "{} is not built here ({} missing): run scripts/build-peers.sh",
                n.name(),
                n.binary().display()
            )
        })
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in Kernel::ALL {
            assert_eq!(k.name().parse::<Kernel>().unwrap(), k);
            for s in [Size::Ci, Size::Default, Size::Paper] {
                assert!(k.check_n(k.size_n(s)).is_ok());
            }
        }
        assert!("fibo".parse::<Kernel>().unwrap_err().contains("fj-rec"));
        for s in [Size::Ci, Size::Default, Size::Paper] {
            assert_eq!(s.name().parse::<Size>().unwrap(), s);
        }
        assert!("huge".parse::<Size>().is_err());
    }

    #[test]
    fn n_is_checked() {
        for k in Kernel::ALL {
            assert!(k.check_n(0).is_err());
            assert!(k.check_n(k.max_n() + 1).is_err());
            assert!(k.check_n(k.size_n(Size::Ci)).is_ok());
        }
        // The stencils need an interior: n >= 3.
        for k in [Kernel::Heat, Kernel::Jacobi] {
            assert!(k.check_n(2).is_err() && k.check_n(3).is_ok());
        }
    }
}
