//! Data-effect splicing on magpie (Lifflander's thesis, Ch. 7): time tiling decided at run time
//! from declared effects, without a compiler.
//!
//! A time-iterated stencil written as plain divide and conquer streams its whole grid through
//! the cache once per time step. Splicing runs the next steps' calls interleaved with the
//! current one's: each step of a later call runs as soon as the effects it declared no longer
//! conflict with what earlier calls still have to do, so a window of time steps sweeps the grid
//! together, a band of rows at a time.
//!
//! - [`effect`]: effects (what a call reads and writes) as values of the program's own types,
//!   with an interference test; [`effect::Rows`] for row-blocked grids.
//! - [`grids`]: the memory steps work on, through views held to each step's declared effect,
//!   and a shadow checker that every read sees the writer program order says it should.
//! - [`splice`]: phases (one call of the recursive function each), and the scheduler that runs a
//!   window of them unspliced, spliced on one thread, or as a dependence graph on magpie's pool.
//! - [`kernels`]: seidel-2d (in place), blocks of rows, and step pipelining. The benchmark
//!   suite's heat, jacobi and fdtd-2d as phases are in its crate (`magpie_bench::spliced`).
//!
//! ```
//! use magpie_splice::kernels::Seidel;
//! use magpie_splice::splice::{run, Mode};
//! let n = 64;
//! let (mut plain, mut spliced) = (Seidel::grids(n), Seidel::grids(n));
//! Seidel::plain(n, 8, plain.buffer_mut(0)); // PolyBench's loops, in place
//! let (_, stats) = run(&Seidel::phases(n, 8, 4), &mut spliced, 8, Mode::Spliced);
//! assert_eq!(plain.buffer(0), spliced.buffer(0));
//! assert!(stats.switches > 8); // the sweeps were interleaved
//! ```
#![warn(missing_docs)]

pub mod effect;
pub mod grids;
pub mod kernels;
pub mod splice;

pub use effect::{Effect, Rows};
pub use grids::{Grids, Memory, View};
pub use splice::{run, Mode, Phase, Stats};
