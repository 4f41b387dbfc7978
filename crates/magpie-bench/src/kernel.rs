//! What a kernel is to the rest of the crate: one [`Def`], a record of plain values and
//! functions that its own file in `kernels/` fills in, and a [`Kernel`], the handle everything
//! else passes around.
//!
//! A kernel's file holds everything about it: the computation, its serial twin, its verifier,
//! its sizes, its peer versions, its facets (the race checker's run, the placed program) and the
//! one function that times it on a runtime ([`Def::measure`]). The registry
//! (`kernels/mod.rs`) lists the kernels in report order, one line each. The runner, the command
//! line and the reports ask a `Kernel` and never match on which kernel it is, so adding a
//! kernel is one file and one line.

use crate::harness::{self, Measured, RunError};
use crate::kernels::uts::tree;
use crate::{placement, races, Peer, Size};
use std::fmt;
use std::hash::{Hash, Hasher};

/// One instance of a kernel: the kernel, its size, and the optional knobs (a grain for the kernels
/// that have one, the tree for UTS).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Case {
    /// The kernel.
    pub kernel: Kernel,
    /// Its problem size (ignored by UTS when `tree` is given).
    pub n: u64,
    /// The grain, for kernels with a grain parameter ([`Kernel::check_grain`]); `None` is the
    /// kernel's default ([`Kernel::default_grain`]; fib and uts: no cutoff).
    pub grain: Option<u64>,
    /// UTS only: the tree to search; `None` is the T1 family at depth `n`.
    pub tree: Option<tree::Params>,
}

impl Case {
    /// `kernel` at size `n` with its default knobs.
    pub fn new(kernel: Kernel, n: u64) -> Case {
        Case {
            kernel,
            n,
            grain: None,
            tree: None,
        }
    }

    /// The UTS tree this case searches.
    pub fn uts_params(&self) -> tree::Params {
        self.tree.unwrap_or_else(|| tree::t1_family(self.n))
    }

    /// Checks the knobs against the kernel; the error is one line.
    pub fn check(&self) -> Result<(), String> {
        if self.tree.is_some() && !self.kernel.def().takes_tree {
            return Err(format!(
                "--tree is for uts only, not {}",
                self.kernel.name()
            ));
        }
        if self.tree.is_none() {
            self.kernel.check_n(self.n)?;
        }
        match self.grain {
            Some(g) => self.kernel.check_grain(g),
            None => Ok(()),
        }
    }
}

/// Where a kernel runs ([`Def::measure`]).
pub enum Runtime<'p> {
    /// The serial twin.
    Serial,
    /// A magpie pool.
    Magpie(&'p magpie::Pool),
    /// A rayon pool.
    Rayon(&'p rayon::ThreadPool),
    /// A chili pool.
    Chili(&'p chili::ThreadPool),
}

impl Runtime<'_> {
    /// The runtime's name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Runtime::Serial => "the serial twin",
            Runtime::Magpie(_) => "magpie",
            Runtime::Rayon(_) => "rayon",
            Runtime::Chili(_) => "chili",
        }
    }
}

/// The four versions of a kernel written out per runtime, timed on `rt`: `runs` runs, each on
/// an input `setup` builds (untimed) and checked by `check`, which gives the run's answer. On a
/// magpie or rayon pool, `parallel` or `rayon` runs inside the pool's `install`; on a chili pool,
/// `chili` runs with the pool's scope.
#[allow(clippy::too_many_arguments)]
pub fn measure_versions<S: Send, T: Send>(
    rt: &Runtime<'_>,
    runs: usize,
    setup: impl FnMut() -> S,
    serial: impl FnMut(&mut S) -> T,
    parallel: impl Fn(&mut S) -> T + Sync,
    rayon: impl Fn(&mut S) -> T + Sync,
    mut chili: impl FnMut(&mut chili::Scope<'_>, &mut S) -> T,
    check: impl FnMut(&S, T) -> Result<String, String>,
) -> Result<Measured, RunError> {
    match rt {
        Runtime::Serial => harness::measure(runs, setup, serial, check),
        Runtime::Magpie(pool) => {
            harness::measure(runs, setup, |s| pool.install(|| parallel(s)), check)
        }
        Runtime::Rayon(pool) => harness::measure(runs, setup, |s| pool.install(|| rayon(s)), check),
        Runtime::Chili(pool) => {
            let mut scope = pool.scope();
            harness::measure(runs, setup, |s| chili(&mut scope, s), check)
        }
    }
}

/// A kernel's record: filled in by its file in `kernels/`, read through [`Kernel`].
#[derive(Debug)]
pub struct Def {
    /// The name on the command line and in reports.
    pub name: &'static str,
    /// What `n` means.
    pub n_meaning: &'static str,
    /// `n` for `--size ci`, `default` and `paper`.
    pub sizes: [u64; 3],
    /// The smallest `n` accepted.
    pub min_n: u64,
    /// The largest `n` accepted.
    pub max_n: u64,
    /// What else `n` must be, once in range (a power of two, say); the error is one line.
    pub check_n: Option<fn(u64) -> Result<(), String>>,
    /// The grain, for the kernels that take one.
    pub grain: Option<Grain>,
    /// Tasks one run executes per unit of `n`, for the kernels whose figure of merit is time per
    /// task.
    pub tasks_per_n: Option<u64>,
    /// Peer runtimes measured for this kernel (the C++ ones need `scripts/build-peers.sh`).
    pub peers: &'static [Peer],
    /// Peers that have no faithful version of this kernel, with the reason.
    pub unavailable_peers: &'static [(&'static str, &'static str)],
    /// The kernel under the race checker, if its leaves declare their accesses.
    pub race: Option<races::Facet>,
    /// The kernel as a placed iterative program, if it is one.
    pub placement: Option<placement::Facet>,
    /// Whether its leaves declare the data they touch (`magpie::leaf`), which gives the cache
    /// model (`magpie locality`) something to model.
    pub declares_leaves: bool,
    /// Whether the kernel is written once over [`Fork`](crate::fork::Fork), as a
    /// [`Workload`](crate::workload::Workload), whose own module tests it on every runtime.
    pub workload: bool,
    /// Whether the kernel is one of the ordinary rayon programs, which magpie runs on its own
    /// rayon-core from a second build (`kernels/programs.rs`).
    pub rayon_program: bool,
    /// Whether the kernel searches a tree given with `--tree` (uts).
    pub takes_tree: bool,
    /// Peers whose version takes no grain, with the reason.
    pub peers_without_grain: &'static [(Peer, &'static str)],
    /// Times `runs` runs of a case (which passed [`Case::check`]) on a runtime, verifying each:
    /// the serial twin, a magpie pool, or the kernel's version on a rayon or chili pool (the
    /// one its [`peers`](Def::peers) names).
    pub measure: fn(&Runtime<'_>, &Case, usize) -> Result<Measured, RunError>,
}

/// A kernel's grain parameter (the papers' cutoff).
#[derive(Clone, Copy, Debug)]
pub struct Grain {
    /// The default grain; `None` is no cutoff (a task per node: fib and uts).
    pub default: Option<u64>,
    /// The largest grain accepted (the smallest is 1); `None` for no bound.
    pub max: Option<u64>,
    /// What the grain means.
    pub meaning: &'static str,
    /// What else a grain must be, once in range; the error is one line.
    pub check: Option<fn(u64) -> Result<(), String>>,
}

/// The record a kernel's [`Def`] starts from (`..kernel::NONE`): `n` from 1, no further check
/// of it, no grain, no peers, no facets. Its `measure` refuses every case, and its name and
/// sizes are empty: a kernel always sets its own.
pub const NONE: Def = Def {
    name: "",
    n_meaning: "",
    sizes: [1, 1, 1],
    min_n: 1,
    max_n: 1,
    check_n: None,
    grain: None,
    tasks_per_n: None,
    peers: &[],
    unavailable_peers: &[],
    race: None,
    placement: None,
    declares_leaves: false,
    workload: false,
    rayon_program: false,
    takes_tree: false,
    peers_without_grain: &[],
    measure: |_, _, _| Err(RunError::Setup("no kernel".into())),
};

/// The error of a runtime that has no version of a kernel (its `measure` on a runtime its
/// peers do not name).
pub fn no_version(kernel: Kernel, rt: &Runtime<'_>) -> RunError {
    RunError::Setup(format!("{} has no version of {kernel}", rt.name()))
}

/// A benchmark kernel: a handle on its [`Def`]. Two handles are equal when they name the same
/// kernel.
#[derive(Clone, Copy)]
pub struct Kernel(&'static Def);

impl Kernel {
    /// The handle on `def` (each kernel's file makes its own).
    pub const fn new(def: &'static Def) -> Kernel {
        Kernel(def)
    }

    /// The kernel's record.
    pub fn def(self) -> &'static Def {
        self.0
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What `n` means for this kernel.
    pub fn n_meaning(self) -> &'static str {
        self.0.n_meaning
    }

    /// The problem size `n` for a size preset.
    pub fn size_n(self, size: Size) -> u64 {
        self.0.sizes[match size {
            Size::Ci => 0,
            Size::Default => 1,
            Size::Paper => 2,
        }]
    }

    /// The largest `n` this kernel accepts.
    pub fn max_n(self) -> u64 {
        self.0.max_n
    }

    /// Checks `n` for this kernel; the error is one line.
    pub fn check_n(self, n: u64) -> Result<(), String> {
        let d = self.0;
        if !(d.min_n..=d.max_n).contains(&n) {
            return Err(format!(
                "invalid n `{n}` for {}: expected a whole number between {} and {} ({})",
                d.name, d.min_n, d.max_n, d.n_meaning
            ));
        }
        d.check_n.map_or(Ok(()), |check| check(n))
    }

    /// The default grain of a kernel that has one (`None` for the kernels without a grain
    /// parameter, and for fib and uts, whose default is no cutoff: a task per node).
    pub fn default_grain(self) -> Option<u64> {
        self.0.grain.and_then(|g| g.default)
    }

    /// What the grain means, for the kernels that take one.
    pub fn grain_meaning(self) -> Option<&'static str> {
        self.0.grain.map(|g| g.meaning)
    }

    /// Checks a grain for this kernel; the error is one line.
    pub fn check_grain(self, grain: u64) -> Result<(), String> {
        let Some(g) = self.0.grain else {
            return Err(format!(
                "{} has no grain parameter (`magpie bench --help` lists each kernel's grain)",
                self.name()
            ));
        };
        let expected = match g.max {
            Some(max) if (1..=max).contains(&grain) => None,
            Some(max) => Some(format!("a whole number between 1 and {max}")),
            None if grain >= 1 => None,
            None => Some("a whole number from 1".to_string()),
        };
        if let Some(e) = expected {
            return Err(format!(
                "invalid grain `{grain}` for {}: expected {e} ({})",
                self.name(),
                g.meaning
            ));
        }
        g.check.map_or(Ok(()), |check| check(grain))
    }

    /// Tasks one run executes, for the kernels whose figure of merit is time per task.
    pub fn tasks_per_run(self, n: u64) -> Option<u64> {
        self.0.tasks_per_n.map(|t| t * n)
    }

    /// Peer runtimes measured for this kernel (see [`Peer::unavailable_reason`] for the C++ ones,
    /// which need `scripts/build-peers.sh`).
    pub fn peers(self) -> &'static [Peer] {
        self.0.peers
    }

    /// Peers that have no faithful version of this kernel, with the reason.
    pub fn unavailable_peers(self) -> &'static [(&'static str, &'static str)] {
        self.0.unavailable_peers
    }

    /// The kernel under the race checker ([`races::Facet`]), if its leaves declare their
    /// accesses: heat, matmul, nbody, lu and nqueens, each with a planted race.
    pub fn race(self) -> Option<races::Facet> {
        self.0.race
    }

    /// The kernel as a placed iterative program (first-touch initialiser, schedules), if it is
    /// one: heat, fdtd-2d, floyd-warshall, cg and prefix-scan.
    pub fn placement(self) -> Option<placement::Facet> {
        self.0.placement
    }

    /// Whether its leaves declare the data they touch, for the cache model.
    pub fn declares_leaves(self) -> bool {
        self.0.declares_leaves
    }

    /// Whether the kernel is one of the ordinary rayon programs
    /// ([`programs`](crate::kernels::programs)), which magpie runs on its own rayon-core from a
    /// second build.
    pub fn is_program(self) -> bool {
        self.0.rayon_program
    }
}

impl PartialEq for Kernel {
    fn eq(&self, other: &Kernel) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Kernel {}

impl Hash for Kernel {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.name.hash(h)
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({})", self.name())
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &k in Kernel::ALL {
            assert_eq!(k.name().parse::<Kernel>().unwrap(), k);
            for s in [Size::Ci, Size::Default, Size::Paper] {
                assert!(k.check_n(k.size_n(s)).is_ok(), "{k} at {s}");
            }
        }
        assert!("fibo".parse::<Kernel>().unwrap_err().contains("fj-rec"));
        let mut names: Vec<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Kernel::ALL.len(), "two kernels share a name");
    }

    #[test]
    fn n_is_checked() {
        for &k in Kernel::ALL {
            assert!(k.check_n(0).is_err(), "{k}");
            assert!(k.check_n(k.max_n() + 1).is_err(), "{k}");
            assert!(k.check_n(k.size_n(Size::Ci)).is_ok(), "{k}");
        }
        // The stencils need an interior: n >= 3.
        for k in ["heat", "jacobi"] {
            let k: Kernel = k.parse().unwrap();
            assert!(k.check_n(2).is_err() && k.check_n(3).is_ok());
        }
    }

    #[test]
    fn grains_are_checked() {
        for &k in Kernel::ALL {
            match k.def().grain {
                Some(g) => {
                    assert!(k.check_grain(0).is_err(), "{k}");
                    if let Some(d) = g.default {
                        assert_eq!(k.check_grain(d), Ok(()), "{k}");
                    }
                }
                None => assert!(k.check_grain(1).unwrap_err().contains("no grain")),
            }
        }
    }
}
