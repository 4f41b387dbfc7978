//! magpie-bench: the benchmark kernels of the papers magpie implements, each with a serial twin
//! (plain Rust, no runtime), a verifier that checks every run, and `ci` / `default` / `paper`
//! sizes; their peer versions on rayon and chili (the C++ TBB and OpenMP versions are in `peers/`,
//! driven through [`native`]); and a timing harness ([`harness`]) with a runner ([`runner`]) that
//! the `magpie` CLI drives.
//!
//! Each kernel is one file in [`kernels`] that defines a [`Kernel`]: its computation, serial
//! twin, verifier, sizes, peers and facets, and the one function that times it on a runtime
//! ([`kernel::Def`]). The registry (`kernels/mod.rs`) lists them in report order, one line each.
//!
//! The kernels from sor on are [`workload::Workload`]s: written once over [`fork::Fork`], so the
//! serial twin, magpie, rayon and chili run the same code, with a grain parameter. The earlier
//! ones and tree-sum have their versions written out; of them, fib, uts, sort, matmul, heat,
//! jacobi and nqueens take a grain too ([`Kernel::check_grain`]). The ordinary rayon programs
//! ([`kernels::programs`]) run rayon's iterators, which magpie runs on its own rayon-core in a
//! second build and rayon on its own ([`Peer::RayonIter`]).
//!
//! ```
//! use magpie_bench::{kernels::fib, runner::{self, Case}, Size};
//! let pool = magpie::Pool::builder().workers(1).build()?;
//! let case = Case::new(fib::KERNEL, fib::KERNEL.size_n(Size::Ci));
//! let m = runner::run_magpie(&pool, &case, 1).unwrap();
//! assert!(m.verified);
//! # Ok::<(), magpie::Error>(())
//! ```

#![warn(missing_docs)]

pub mod common;
pub mod fork;
pub mod harness;
pub mod kernel;
pub mod kernels;
pub mod native;
pub mod placement;
pub mod races;
pub mod runner;
pub mod spliced;
pub mod workload;

pub use kernel::Kernel;
use std::fmt;
use std::str::FromStr;

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
    /// The ordinary rayon programs ([`programs`](kernels::programs)) on rayon's parallel
    /// iterators: the same source as magpie's, compiled against `rayon::prelude`.
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
    fn sizes_round_trip() {
        for s in [Size::Ci, Size::Default, Size::Paper] {
            assert_eq!(s.name().parse::<Size>().unwrap(), s);
        }
        assert!("huge".parse::<Size>().is_err());
    }
}
