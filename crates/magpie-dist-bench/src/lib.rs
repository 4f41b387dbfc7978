//! What magpie-dist is measured with, beside magpie's benchmark suite: the kernels a task
//! collection runs (each answer checked), the simulator that runs the same collection at
//! thousands of virtual ranks, and the utilisation timelines drawn as SVG. The `magpie-dist`
//! tool (`src/main.rs`) runs them; the library itself is `magpie_dist`.
//!
//! - [`kernels`]: uts, and the synthetic iterative hf and tce.
//! - [`sim`]: the same collection at thousands of virtual ranks, in simulated time: the real
//!   deque, detector, victim choice and balancers under a calibrated cost model.
//! - [`timeline_svg`]: per-rank utilisation timelines (running tasks, stealing, idle) as SVG.
#![warn(missing_docs)]

pub mod kernels;
pub mod sim;
pub mod timeline_svg;
