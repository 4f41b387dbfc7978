//! The runner: measures one kernel on one runtime — the serial twin ([`run_serial`]), a magpie
//! pool ([`run_magpie`], with the pool's counter delta) or a peer ([`run_peer`]) — verifying
//! every run, and [`bench()`], which puts the three together into the [`BenchRecord`] that the
//! CLI prints (as a table or as JSON).

use crate::harness::{self, answered, measure, Measured, RunError};
use crate::{
    fib, fj, heat, jacobi, matmul, nqueens, pdfs, programs, sort, tree_sum, uts, workload, Kernel,
    Peer,
};
use serde::{Deserialize, Serialize};
use std::num::NonZero;
use std::sync::atomic::{AtomicU32, Ordering};

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
    pub tree: Option<uts::Params>,
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
    pub fn uts_params(&self) -> uts::Params {
        self.tree.unwrap_or_else(|| uts::t1_family(self.n))
    }

    /// Checks the knobs against the kernel; the error is one line.
    pub fn check(&self) -> Result<(), String> {
        if self.tree.is_some() && self.kernel != Kernel::Uts {
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

/// A key for [`workload::cached`] values of the UTS tree `p` (its parameters, hashed).
fn uts_key(p: &uts::Params) -> (&'static str, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.to_string().hash(&mut h);
    ("uts-serial-counts", h.finish())
}

/// Verifies UTS counts against the published count of a named tree, or else against the serial
/// twin's counts, computed once (the first time a run needs them) rather than once per run.
struct UtsCheck<'p> {
    p: &'p uts::Params,
    serial: std::cell::OnceCell<uts::Counts>,
}

impl<'p> UtsCheck<'p> {
    fn new(p: &'p uts::Params) -> Self {
        UtsCheck {
            p,
            serial: std::cell::OnceCell::new(),
        }
    }
    fn verify(&self, got: &uts::Counts) -> Result<(), String> {
        if uts::expected_nodes(self.p).is_some() {
            return uts::verify(self.p, got, None);
        }
        let p = self.p;
        let want = *self
            .serial
            .get_or_init(|| *workload::cached(uts_key(p), || uts::serial(p)));
        uts::verify(self.p, got, Some(want.nodes))?;
        if *got == want {
            Ok(())
        } else {
            Err(format!(
                "UTS {}: counted {got:?}, the serial twin {want:?}",
                self.p
            ))
        }
    }

    /// [`Self::verify`], with the counts' answer when they verify.
    fn answer(&self, got: &uts::Counts) -> Result<String, String> {
        answered(self.verify(got), || got.answer())
    }
}

/// The serial twin's heat grid, computed once per measurement: every version computes each point
/// by the same expression, so a run is verified by bit-for-bit equality with it. It is computed
/// at the default grain, whatever the case's: the grain only moves where the rows are split.
fn heat_expected(n: u64) -> Vec<f64> {
    let mut g = heat::input(n);
    heat::serial(n, &mut g);
    g
}

fn heat_check(want: &[f64], got: &[f64]) -> Result<(), String> {
    match want
        .iter()
        .zip(got)
        .position(|(a, b)| a.to_bits() != b.to_bits())
    {
        None if want.len() == got.len() => Ok(()),
        None => Err(format!(
            "heat: {} points, expected {}",
            got.len(),
            want.len()
        )),
        Some(i) => Err(format!(
            "heat: point {i} is {}, the serial twin's is {}",
            got[i], want[i]
        )),
    }
}

/// The serial twin's jacobi grid and residual, computed once per measurement (see
/// [`heat_expected`]). At the default grain whatever the case's: the residual is a maximum, so
/// it does not depend on how the rows are split (no sum whose order the grain would change), and
/// the cache key needs no grain.
fn jacobi_expected(n: u64) -> (Vec<f64>, f64) {
    let mut p = jacobi::input(n);
    let r = jacobi::serial(n, &mut p);
    (p.grid, r)
}

fn jacobi_check(want: &(Vec<f64>, f64), got: &jacobi::Problem, r: f64) -> Result<(), String> {
    if r.to_bits() != want.1.to_bits() {
        return Err(format!(
            "jacobi: residual {r}, the serial twin's is {}",
            want.1
        ));
    }
    heat_check(&want.0, &got.grid).map_err(|e| e.replacen("heat", "jacobi", 1))
}

/// Times a stencil kernel's version (`heat_run` or `jacobi_run`, called with the grid and the
/// grain, `grain` or the kernel's default) against the serial twin's result.
fn measure_stencil(
    kernel: Kernel,
    n: u64,
    grain: Option<u64>,
    runs: usize,
    mut heat_run: impl FnMut(&mut Vec<f64>, usize),
    mut jacobi_run: impl FnMut(&mut jacobi::Problem, usize) -> f64,
) -> Result<Measured, RunError> {
    let grain = grain_or_default(kernel, grain);
    if kernel == Kernel::Heat {
        let want = workload::cached(("heat-expected", n), || heat_expected(n));
        measure(
            runs,
            || heat::input(n),
            |g| heat_run(g, grain),
            |g, ()| answered(heat_check(&want, g), || heat::answer(g)),
        )
    } else {
        let want = workload::cached(("jacobi-expected", n), || jacobi_expected(n));
        measure(
            runs,
            || jacobi::input(n),
            |p| jacobi_run(p, grain),
            |p, r| answered(jacobi_check(&want, p, r), || jacobi::answer(&p.grid, r)),
        )
    }
}

/// Times `sum` over the tree of depth `n`, which is built once (outside the timed region) and
/// kept for the next measurement of the same depth ([`workload::cached`]): only the sum is timed.
fn measure_tree_sum(
    n: u64,
    runs: usize,
    mut sum: impl FnMut(&tree_sum::Node) -> i64,
) -> Result<Measured, RunError> {
    let tree = workload::cached(("tree-sum-tree", n), || tree_sum::build(n));
    let tree: &tree_sum::Node = &tree;
    measure(
        runs,
        || (),
        |_| sum(tree),
        |_, r| answered(tree_sum::verify(n, r), || tree_sum::answer(n, r)),
    )
}

/// The grain a case of a kernel with a default grain runs at: the case's, else the default.
fn grain_or_default(kernel: Kernel, grain: Option<u64>) -> usize {
    grain
        .or(kernel.default_grain())
        .expect("a kernel with a default grain") as usize
}

/// nqueens's grain (rows placed by tasks) as the kernel takes it.
fn nqueens_rows(grain: Option<u64>) -> u32 {
    u32::try_from(grain_or_default(Kernel::NQueens, grain)).unwrap_or(u32::MAX)
}

fn counts_of(counters: &[AtomicU32]) -> Vec<u32> {
    // Relaxed: read after the run has returned, which orders every task's increment.
    counters.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

/// Times the serial twin of `kernel` `runs` times and verifies each result.
pub fn run_serial(case: &Case, runs: usize) -> Result<Measured, RunError> {
    let Case {
        kernel, n, grain, ..
    } = *case;
    case.check().map_err(RunError::Setup)?;
    let rt = workload::Runtime::Serial;
    if let Some(r) = kernel.visit(workload::Measure {
        rt: &rt,
        n,
        grain,
        runs,
    }) {
        return r;
    }
    if let Some(p) = kernel.program() {
        return programs::measure(p, &rt, n, runs);
    }
    match kernel {
        Kernel::Fib => measure(
            runs,
            || (),
            |_| fib::serial(n),
            |_, r| answered(fib::verify(n, r), || fib::answer(n, r)),
        ),
        Kernel::TreeSum => measure_tree_sum(n, runs, tree_sum::serial),
        // The serial twin places no tasks, so nqueens's grain does not apply to it (like fib's).
        Kernel::NQueens => measure(
            runs,
            || (),
            |_| nqueens::serial(n),
            |_, r| answered(nqueens::verify(n, r), || nqueens::answer(r)),
        ),
        Kernel::Uts => {
            let p = case.uts_params();
            let check = UtsCheck::new(&p);
            measure(runs, || (), |_| uts::serial(&p), |_, c| check.answer(&c))
        }
        Kernel::Sort => {
            let g = grain_or_default(kernel, grain);
            measure(
                runs,
                || sort::input(n),
                |v| sort::serial_grain(v, g),
                |v, ()| answered(sort::verify(n, v), || sort::answer(v.iter().copied())),
            )
        }
        Kernel::Heat | Kernel::Jacobi => measure_stencil(
            kernel,
            n,
            grain,
            runs,
            |g, gr| heat::serial_grain(n, g, gr),
            |p, gr| jacobi::serial_grain(n, p, gr),
        ),
        Kernel::Matmul => {
            let (a, b) = workload::cached(("matmul-inputs", n), || matmul::inputs(n))
                .as_ref()
                .clone();
            let len = (n * n) as usize;
            let g = grain_or_default(kernel, grain);
            measure(
                runs,
                || vec![0.0; len],
                |c| matmul::serial_grain(n, &a, &b, c, g),
                |c, ()| answered(matmul::verify(n, &a, &b, c), || matmul::answer(c)),
            )
        }
        Kernel::Fj | Kernel::FjRec => measure(
            runs,
            || vec![0u32; fj::TASKS],
            |c| {
                if kernel == Kernel::Fj {
                    fj::serial_flat(n, c)
                } else {
                    fj::serial_recursive(n, c)
                }
            },
            |c, ()| {
                answered(fj::verify(n, c.iter().copied()), || {
                    fj::answer(c.iter().copied())
                })
            },
        ),
        Kernel::Pdfs => {
            let t = pdfs::Torus::new(n);
            measure(
                runs,
                || vec![pdfs::NONE; t.nodes()],
                |p| pdfs::serial(t, p),
                |p, ()| answered(pdfs::verify(t, p), || pdfs::answer(p.iter().copied())),
            )
        }
        _ => unreachable!("workload kernels are measured above"),
    }
}

/// Times `kernel` on `pool` `runs` times, verifies each result, and records the pool's counter
/// delta over the runs (also when a run stops early, in which case the error is returned).
pub fn run_magpie(pool: &magpie::Pool, case: &Case, runs: usize) -> Result<Measured, RunError> {
    run_magpie_with_stats(pool, case, runs).0
}

/// [`run_magpie`], also returning the counter delta when the measurement stopped early.
pub fn run_magpie_with_stats(
    pool: &magpie::Pool,
    case: &Case,
    runs: usize,
) -> (Result<Measured, RunError>, magpie::Stats) {
    let Case {
        kernel, n, grain, ..
    } = *case;
    if let Err(e) = case.check() {
        return (Err(RunError::Setup(e)), magpie::Stats::default());
    }
    let before = pool.stats();
    let rt = workload::Runtime::Magpie(pool);
    let visited = kernel.visit(workload::Measure {
        rt: &rt,
        n,
        grain,
        runs,
    });
    let r = match kernel {
        _ if visited.is_some() => visited.expect("a workload"),
        _ if kernel.program().is_some() => {
            programs::measure(kernel.program().expect("a program"), &rt, n, runs)
        }
        Kernel::Fib => measure(
            runs,
            || (),
            |_| match grain {
                None => pool.install(|| fib::parallel(n)),
                Some(g) => pool.install(|| fib::parallel_cutoff(n, g)),
            },
            |_, r| answered(fib::verify(n, r), || fib::answer(n, r)),
        ),
        Kernel::TreeSum => measure_tree_sum(n, runs, |t| pool.install(|| tree_sum::parallel(t))),
        Kernel::NQueens => {
            let g = nqueens_rows(grain);
            measure(
                runs,
                || (),
                |_| pool.install(|| nqueens::parallel_grain(n, g)),
                |_, r| answered(nqueens::verify(n, r), || nqueens::answer(r)),
            )
        }
        Kernel::Uts => {
            let p = case.uts_params();
            let check = UtsCheck::new(&p);
            measure(
                runs,
                || (),
                |_| match grain {
                    None => pool.install(|| uts::parallel(&p)),
                    Some(c) => pool.install(|| uts::parallel_chunked(&p, c as usize)),
                },
                |_, c| check.answer(&c),
            )
        }
        Kernel::Sort => {
            let g = grain_or_default(kernel, grain);
            measure(
                runs,
                || sort::input(n),
                |v| pool.install(|| sort::parallel_grain(v, g)),
                |v, ()| answered(sort::verify(n, v), || sort::answer(v.iter().copied())),
            )
        }
        Kernel::Heat | Kernel::Jacobi => measure_stencil(
            kernel,
            n,
            grain,
            runs,
            |g, gr| pool.install(|| heat::parallel_grain(n, g, gr)),
            |p, gr| pool.install(|| jacobi::parallel_grain(n, p, gr)),
        ),
        Kernel::Matmul => {
            let (a, b) = workload::cached(("matmul-inputs", n), || matmul::inputs(n))
                .as_ref()
                .clone();
            let len = (n * n) as usize;
            let g = grain_or_default(kernel, grain);
            measure(
                runs,
                || vec![0.0; len],
                |c| pool.install(|| matmul::parallel_grain(n, &a, &b, c, g)),
                |c, ()| answered(matmul::verify(n, &a, &b, c), || matmul::answer(c)),
            )
        }
        Kernel::Fj | Kernel::FjRec => measure(
            runs,
            fj::new_counters,
            |c| {
                let c = &*c;
                if kernel == Kernel::Fj {
                    pool.install(|| fj::flat(n, c))
                } else {
                    pool.install(|| fj::recursive(n, c))
                }
            },
            |c, ()| answered(fj::verify_atomic(n, c), || fj::answer_atomic(c)),
        ),
        Kernel::Pdfs => {
            let t = pdfs::Torus::new(n);
            measure(
                runs,
                || pdfs::new_parents(t),
                |p| {
                    let p = &*p;
                    pool.install(|| pdfs::parallel(t, p))
                },
                |p, ()| answered(pdfs::verify_atomic(t, p), || pdfs::answer_atomic(p)),
            )
        }
        _ => unreachable!("workload kernels are measured above"),
    };
    let stats = pool.stats() - before;
    (
        r.map(|mut m| {
            m.stats = Some(stats);
            m
        }),
        stats,
    )
}

/// Times a peer runtime's version of `kernel` on a pool of `workers` threads, built for this
/// measurement and dropped after it.
pub fn run_peer(
    peer: Peer,
    case: &Case,
    workers: usize,
    runs: usize,
) -> Result<Measured, RunError> {
    let Case {
        kernel, n, grain, ..
    } = *case;
    case.check().map_err(RunError::Setup)?;
    let unsupported = || {
        Err(RunError::Setup(format!(
            "{peer} has no version of {kernel}"
        )))
    };
    if kernel.info().is_some() && matches!(peer, Peer::RayonJoin | Peer::ChiliJoin) {
        let r;
        let rt = if peer == Peer::RayonJoin {
            r = rayon::ThreadPoolBuilder::new()
                .num_threads(workers)
                .build()
                .map_err(|e| RunError::Setup(e.to_string()))?;
            workload::Runtime::Rayon(&r)
        } else {
            let c = chili::ThreadPool::with_config(chili::Config {
                thread_count: NonZero::new(workers),
                ..Default::default()
            });
            return kernel
                .visit(workload::Measure {
                    rt: &workload::Runtime::Chili(&c),
                    n,
                    grain,
                    runs,
                })
                .expect("a workload");
        };
        return kernel
            .visit(workload::Measure {
                rt: &rt,
                n,
                grain,
                runs,
            })
            .expect("a workload");
    }
    if let Some(p) = kernel.program() {
        if peer != Peer::RayonIter {
            return unsupported();
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .map_err(|e| RunError::Setup(e.to_string()))?;
        return programs::measure(p, &workload::Runtime::Rayon(&pool), n, runs);
    }
    match peer {
        Peer::RayonIter => unsupported(),
        Peer::Tbb | Peer::OpenMp => {
            let native = peer.native().expect("a native peer");
            if !native.kernels().contains(&kernel.name()) {
                return unsupported();
            }
            if grain.is_some() || case.tree.is_some() {
                return Err(RunError::Setup(format!(
                    "the {} program takes no grain or tree: it runs the kernel's default form",
                    native.name()
                )));
            }
            let results = native
                .run(kernel.name(), n, workers, runs)
                .map_err(RunError::Setup)?;
            let failure = results.iter().position(|&(_, ok)| !ok).map(|i| {
                format!(
                    "run {}: the {} program's check failed",
                    i + 1,
                    native.name()
                )
            });
            Ok(Measured {
                timing: harness::Timing {
                    times_s: results.iter().map(|&(t, _)| t).collect(),
                },
                verified: failure.is_none(),
                failure,
                // The C++ programs report whether their check passed, not their answer.
                result: None,
                stats: None,
            })
        }
        Peer::RayonJoin | Peer::RayonScope => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(workers)
                .build()
                .map_err(|e| RunError::Setup(e.to_string()))?;
            match (peer, kernel) {
                (Peer::RayonJoin, Kernel::Fib) => measure(
                    runs,
                    || (),
                    |_| match grain {
                        None => pool.install(|| fib::rayon_join(n)),
                        Some(g) => pool.install(|| fib::rayon_join_cutoff(n, g)),
                    },
                    |_, r| answered(fib::verify(n, r), || fib::answer(n, r)),
                ),
                (Peer::RayonJoin, Kernel::TreeSum) => {
                    measure_tree_sum(n, runs, |t| pool.install(|| tree_sum::rayon_join(t)))
                }
                (Peer::RayonJoin, Kernel::Heat | Kernel::Jacobi) => measure_stencil(
                    kernel,
                    n,
                    grain,
                    runs,
                    |g, gr| pool.install(|| heat::rayon_join_grain(n, g, gr)),
                    |p, gr| pool.install(|| jacobi::rayon_join_grain(n, p, gr)),
                ),
                (Peer::RayonJoin, Kernel::Sort) => {
                    let g = grain_or_default(kernel, grain);
                    measure(
                        runs,
                        || sort::input(n),
                        |v| pool.install(|| sort::rayon_join_grain(v, g)),
                        |v, ()| answered(sort::verify(n, v), || sort::answer(v.iter().copied())),
                    )
                }
                (Peer::RayonJoin, Kernel::Matmul) => {
                    let (a, b) = workload::cached(("matmul-inputs", n), || matmul::inputs(n))
                        .as_ref()
                        .clone();
                    let len = (n * n) as usize;
                    let g = grain_or_default(kernel, grain);
                    measure(
                        runs,
                        || vec![0.0; len],
                        |c| pool.install(|| matmul::rayon_join_grain(n, &a, &b, c, g)),
                        |c, ()| answered(matmul::verify(n, &a, &b, c), || matmul::answer(c)),
                    )
                }
                (Peer::RayonScope, Kernel::Uts) => {
                    let p = case.uts_params();
                    let check = UtsCheck::new(&p);
                    measure(
                        runs,
                        || (),
                        |_| match grain {
                            None => pool.install(|| uts::rayon(&p)),
                            Some(c) => pool.install(|| uts::rayon_chunked(&p, c as usize)),
                        },
                        |_, c| check.answer(&c),
                    )
                }
                (Peer::RayonScope, Kernel::NQueens) => {
                    let g = nqueens_rows(grain);
                    measure(
                        runs,
                        || (),
                        |_| pool.install(|| nqueens::rayon_scope_grain(n, g)),
                        |_, r| answered(nqueens::verify(n, r), || nqueens::answer(r)),
                    )
                }
                (Peer::RayonScope, Kernel::Fj) => measure(
                    runs,
                    fj::new_counters,
                    |c| {
                        let c = &*c;
                        pool.install(|| fj::rayon_scope(n, c))
                    },
                    |c, ()| answered(fj::verify(n, counts_of(c)), || fj::answer_atomic(c)),
                ),
                _ => unsupported(),
            }
        }
        Peer::ChiliJoin => {
            if !matches!(
                kernel,
                Kernel::Fib
                    | Kernel::NQueens
                    | Kernel::Uts
                    | Kernel::Sort
                    | Kernel::Matmul
                    | Kernel::Heat
                    | Kernel::Jacobi
                    | Kernel::TreeSum
            ) {
                return unsupported();
            }
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: NonZero::new(workers),
                ..Default::default()
            });
            let mut scope = pool.scope();
            if matches!(kernel, Kernel::Heat | Kernel::Jacobi) {
                let scope = std::cell::RefCell::new(scope);
                return measure_stencil(
                    kernel,
                    n,
                    grain,
                    runs,
                    |g, gr| heat::chili_join_grain(&mut scope.borrow_mut(), n, g, gr),
                    |p, gr| jacobi::chili_join_grain(&mut scope.borrow_mut(), n, p, gr),
                );
            }
            if kernel == Kernel::TreeSum {
                return measure_tree_sum(n, runs, |t| tree_sum::chili_join(&mut scope, t));
            }
            if kernel == Kernel::Sort {
                let g = grain_or_default(kernel, grain);
                return measure(
                    runs,
                    || sort::input(n),
                    |v| sort::chili_join_grain(&mut scope, v, g),
                    |v, ()| answered(sort::verify(n, v), || sort::answer(v.iter().copied())),
                );
            }
            if kernel == Kernel::Matmul {
                let (a, b) = workload::cached(("matmul-inputs", n), || matmul::inputs(n))
                    .as_ref()
                    .clone();
                let len = (n * n) as usize;
                let g = grain_or_default(kernel, grain);
                return measure(
                    runs,
                    || vec![0.0; len],
                    |c| matmul::chili_join_grain(&mut scope, n, &a, &b, c, g),
                    |c, ()| answered(matmul::verify(n, &a, &b, c), || matmul::answer(c)),
                );
            }
            if kernel == Kernel::Uts && grain.is_some() {
                return Err(RunError::Setup(CHILI_NO_CHUNKED_UTS.into()));
            }
            if kernel == Kernel::Uts {
                let p = case.uts_params();
                let check = UtsCheck::new(&p);
                return measure(
                    runs,
                    || (),
                    |_| uts::chili(&mut scope, &p),
                    |_, c| check.answer(&c),
                );
            }
            if kernel == Kernel::NQueens {
                let g = nqueens_rows(grain);
                return measure(
                    runs,
                    || (),
                    |_| nqueens::chili_join_grain(&mut scope, n, g),
                    |_, r| answered(nqueens::verify(n, r), || nqueens::answer(r)),
                );
            }
            measure(
                runs,
                || (),
                |_| match grain {
                    None => fib::chili_join(&mut scope, n),
                    Some(g) => fib::chili_join_cutoff(&mut scope, n, g),
                },
                |_, r| answered(fib::verify(n, r), || fib::answer(n, r)),
            )
        }
    }
}

/// What `magpie bench` measures.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The kernel.
    pub kernel: Kernel,
    /// Its problem size.
    pub n: u64,
    /// Timed runs of each version.
    pub runs: usize,
    /// Whether to time the serial twin (for `ratio_to_serial`).
    pub serial: bool,
    /// Whether to time the kernel's peers ([`Kernel::peers`]).
    pub peers: bool,
    /// The grain ([`Case::grain`]).
    pub grain: Option<u64>,
    /// The UTS tree ([`Case::tree`]).
    pub tree: Option<uts::Params>,
}

/// One peer's line in a [`BenchRecord`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerRecord {
    /// `rayon-join`, `rayon-scope`, `chili-join`.
    pub name: String,
    /// Median wall time of a run, seconds.
    pub median_s: Option<f64>,
    /// Fastest run, seconds.
    pub min_s: Option<f64>,
    /// Slowest run, seconds.
    pub max_s: Option<f64>,
    /// `median_s / serial_median_s`.
    pub ratio_to_serial: Option<f64>,
    /// For FJ: `median_s` per task, nanoseconds.
    pub per_task_ns: Option<f64>,
    /// Whether every run verified.
    pub verified: bool,
    /// The peer's answer ([`BenchRecord::result`]); `null` for the C++ peers, whose programs
    /// report only whether their check passed.
    #[serde(default)]
    pub result: Option<String>,
    /// Why the peer's runs failed, if they did.
    pub error: Option<String>,
}

/// A peer that has no version of the kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    /// The runtime.
    pub name: String,
    /// Why it is not measured.
    pub reason: String,
}

/// Everything `magpie bench` measured; its JSON form is the CLI's `--json` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// Kernel name.
    pub kernel: String,
    /// Problem size.
    pub n: u64,
    /// The grain, when one was given (`null`: the kernel's default).
    #[serde(default)]
    pub grain: Option<u64>,
    /// UTS: the tree's parameters, when a tree was given instead of `n`.
    #[serde(default)]
    pub tree: Option<String>,
    /// magpie's spawning policy.
    pub policy: String,
    /// Workers (magpie's, and each peer's thread count).
    pub workers: usize,
    /// Timed runs of each version.
    pub runs: usize,
    /// magpie: median wall time of a run, seconds (`null` when the kernel stopped).
    pub median_s: Option<f64>,
    /// magpie: fastest run.
    pub min_s: Option<f64>,
    /// magpie: slowest run.
    pub max_s: Option<f64>,
    /// magpie: every run's time, in run order.
    pub times_s: Vec<f64>,
    /// Serial twin: median (`null` when not timed).
    pub serial_median_s: Option<f64>,
    /// Serial twin: fastest run.
    pub serial_min_s: Option<f64>,
    /// Serial twin: slowest run.
    pub serial_max_s: Option<f64>,
    /// `median_s / serial_median_s`.
    pub ratio_to_serial: Option<f64>,
    /// Tasks per run (FJ kernels).
    pub tasks_per_run: Option<u64>,
    /// magpie `median_s` per task, nanoseconds (FJ kernels).
    pub per_task_ns: Option<f64>,
    /// Whether every timed run (serial, magpie, peers) passed its verifier.
    pub verified: bool,
    /// The kernel's answer, what a user can compare with a known value: fib(n)'s value, the
    /// solutions counted, a tree's node count, a checksum of the output (floats to 12
    /// significant digits). magpie's first verified run's; the serial twin's when magpie has no
    /// verified run; `null` when neither has.
    #[serde(default)]
    pub result: Option<String>,
    /// The serial twin's answer (`null` when it was not timed or did not verify); equal to
    /// `result` when both verified, but for fine-sum, whose float sum is verified within 1e-9.
    #[serde(default)]
    pub serial_result: Option<String>,
    /// `true` when magpie stopped the kernel at its stack limit (work-first spawning).
    pub stopped: bool,
    /// What went wrong, in one line; `null` when nothing did.
    pub error: Option<String>,
    /// magpie's counters over the timed runs (after − before).
    pub stats: magpie::Stats,
    /// Peer measurements, same workers, `n` and runs.
    pub peers: Vec<PeerRecord>,
    /// Peers without a version of this kernel.
    pub peers_unavailable: Vec<Unavailable>,
    /// Peak resident set size of the process, KiB (filled in by the CLI at the end).
    pub peak_rss_kib: Option<u64>,
    /// What steals cost, when the pool measured it ([`magpie::Builder::measure_overheads`]).
    #[serde(default)]
    pub overheads: Option<Overheads>,
    /// Whether magpie's thieves took half of a victim's unpublished tasks per steal
    /// ([`magpie::Builder::steal_half`], the default) rather than one item.
    #[serde(default = "yes")]
    pub steal_half: bool,
}

fn yes() -> bool {
    true
}

/// What steals cost over magpie's timed runs, as shares of the workers' total time (workers ×
/// the summed wall time of the runs), like Friendly Barriers' Fig. 5 and 7.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overheads {
    /// Victims' time lost to steals ([`magpie::Stats::victim_ns`]), seconds.
    pub victim_s: f64,
    /// `victim_s` ÷ (workers × run time).
    pub victim_share: f64,
    /// Thieves' time in steal rounds that took something, seconds.
    pub steal_s: f64,
    /// `steal_s` ÷ (workers × run time).
    pub steal_share: f64,
    /// Thieves' time in steal rounds that found nothing (idle searching), seconds.
    pub search_s: f64,
    /// `search_s` ÷ (workers × run time).
    pub search_share: f64,
    /// Successful steals.
    pub steals: u64,
    /// Mean thief time per successful steal round, nanoseconds.
    pub ns_per_steal: Option<f64>,
}

impl Overheads {
    /// From a pool's counters over runs that took `times_s` on `workers` workers.
    pub fn new(s: &magpie::Stats, times_s: &[f64], workers: usize) -> Overheads {
        let total = times_s.iter().sum::<f64>() * workers as f64;
        let share = |ns: u64| {
            if total > 0.0 {
                ns as f64 * 1e-9 / total
            } else {
                0.0
            }
        };
        let steals = s.steals_child + s.steals_continuation;
        Overheads {
            victim_s: s.victim_ns as f64 * 1e-9,
            victim_share: share(s.victim_ns),
            steal_s: s.steal_ns as f64 * 1e-9,
            steal_share: share(s.steal_ns),
            search_s: s.search_ns as f64 * 1e-9,
            search_share: share(s.search_ns),
            steals,
            ns_per_steal: (steals > 0).then(|| s.steal_ns as f64 / steals as f64),
        }
    }
}

impl BenchRecord {
    /// The record as one pretty-printed JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a bench record serializes")
    }
}

/// Keys every `magpie bench --json` object has (the list, plus the ratio, the peak RSS
/// and the answer).
pub const REQUIRED_KEYS: [&str; 14] = [
    "kernel",
    "n",
    "policy",
    "workers",
    "runs",
    "median_s",
    "min_s",
    "max_s",
    "serial_median_s",
    "verified",
    "result",
    "stats",
    "ratio_to_serial",
    "peak_rss_kib",
];

/// Whether a series of rounds has ended in an error.
pub fn failed(acc: &Option<Result<Measured, RunError>>) -> bool {
    matches!(acc, Some(Err(_)))
}

/// Adds one round's measurement to the runs so far (times, verification, counters); an error
/// ends the series. Benchmarks run in rounds, one run of each runtime per round, so that drift in
/// a shared machine's speed falls on every runtime alike.
pub fn merge(acc: &mut Option<Result<Measured, RunError>>, next: Result<Measured, RunError>) {
    match (acc.as_mut(), next) {
        (None, next) => *acc = Some(next),
        (Some(Ok(m)), Ok(n)) => {
            m.timing.times_s.extend(n.timing.times_s);
            m.verified &= n.verified;
            if m.failure.is_none() {
                m.failure = n.failure;
            }
            if m.result.is_none() {
                m.result = n.result;
            }
            m.stats = match (m.stats, n.stats) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        (Some(Ok(_)), Err(e)) => *acc = Some(Err(e)),
        (Some(Err(_)), _) => {}
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn per_task(kernel: Kernel, n: u64, median: Option<f64>) -> Option<f64> {
    Some(median? / kernel.tasks_per_run(n)? as f64 * 1e9)
}

/// Why chili has no chunked UTS: `run_peer` refuses it, and `bench` lists chili as not measured.
const CHILI_NO_CHUNKED_UTS: &str =
    "chili has only join, so no chunked UTS (one spawn per chunk needs a scope)";

/// Why `peer` cannot run the kernel as `cfg` asks, if it cannot: it is not built here, or it has
/// no form of the asked grain or tree.
fn peer_unavailable(peer: Peer, cfg: &BenchConfig) -> Option<String> {
    if let Some(why) = peer.unavailable_reason() {
        return Some(why);
    }
    if (cfg.grain.is_some() || cfg.tree.is_some()) && peer.native().is_some() {
        return Some(
            "the C++ program takes no grain or tree: it runs the kernel's default form".into(),
        );
    }
    if peer == Peer::ChiliJoin && cfg.kernel == Kernel::Uts && cfg.grain.is_some() {
        return Some(CHILI_NO_CHUNKED_UTS.into());
    }
    None
}

/// Measures, round by round, the serial twin (if asked), `kernel` on `pool`, and each peer with
/// the pool's worker count. Stops after magpie when magpie's runs failed to run to the end.
pub fn bench(cfg: &BenchConfig, pool: magpie::Pool) -> BenchRecord {
    let p = &pool;
    bench_with(
        cfg,
        &pool,
        &mut |case| run_magpie_with_stats(p, case, 1),
        &mut |peer, case, workers| run_peer(peer, case, workers, 1),
    )
}

/// One run of magpie, verified, with the pool's counters over it.
pub type MagpieRun = (Result<Measured, RunError>, magpie::Stats);

/// [`bench()`], with magpie's run and a peer's run (one run each, verified) made by `magpie` and
/// `peer_run`: for a kernel that runs in another build (the rayon programs, which magpie runs as
/// rayon on magpie's rayon-core). `pool` gives the policy, the workers and the pool's settings
/// the record names.
pub fn bench_with(
    cfg: &BenchConfig,
    pool: &magpie::Pool,
    magpie: &mut dyn FnMut(&Case) -> MagpieRun,
    peer_run: &mut dyn FnMut(Peer, &Case, usize) -> Result<Measured, RunError>,
) -> BenchRecord {
    let BenchConfig {
        kernel, n, runs, ..
    } = *cfg;
    let case = Case {
        kernel,
        n,
        grain: cfg.grain,
        tree: cfg.tree,
    };
    let workers = pool.workers();
    let measured = pool.measures_overheads();
    let steal_half = pool.steals_half();
    let mut errors: Vec<String> = vec![];
    let mut verified = true;
    // Peers that cannot run here (C++ peers not built, or without a form of what was asked) are
    // listed as not measured, with why.
    let mut unavailable: Vec<Unavailable> = vec![];
    let peer_list: Vec<Peer> = if cfg.peers {
        kernel
            .peers()
            .iter()
            .copied()
            .filter(|&p| match peer_unavailable(p, cfg) {
                None => true,
                Some(reason) => {
                    unavailable.push(Unavailable {
                        name: p.name().to_string(),
                        reason,
                    });
                    false
                }
            })
            .collect()
    } else {
        vec![]
    };

    // Rounds: one run of each runtime per round, so that drift in the machine's speed (these are
    // shared machines) falls on every runtime alike instead of on whichever ran in a slow stretch.
    let mut serial_acc: Option<Result<Measured, RunError>> = None;
    let mut magpie_acc: Option<Result<Measured, RunError>> = None;
    let mut stats = magpie::Stats::default();
    let mut peer_acc: Vec<Option<Result<Measured, RunError>>> =
        peer_list.iter().map(|_| None).collect();
    for _ in 0..runs {
        if cfg.serial && !failed(&serial_acc) {
            merge(&mut serial_acc, run_serial(&case, 1));
        }
        if !failed(&magpie_acc) {
            let (r, s) = magpie(&case);
            stats = stats + s;
            merge(&mut magpie_acc, r);
        }
        if failed(&magpie_acc) {
            break;
        }
        for (acc, &peer) in peer_acc.iter_mut().zip(&peer_list) {
            if !failed(acc) {
                merge(acc, peer_run(peer, &case, workers));
            }
        }
    }

    let mut serial_result = None;
    let serial = match serial_acc {
        None => None,
        Some(Ok(m)) => {
            if let Some(f) = &m.failure {
                verified = false;
                errors.push(format!("serial twin failed verification: {f}"));
            }
            serial_result = m.result;
            Some(m.timing)
        }
        Some(Err(e)) => {
            verified = false;
            errors.push(format!("serial twin: {e}"));
            None
        }
    };
    let serial_median = serial.as_ref().and_then(|t| t.median());

    let policy = pool.policy().to_string();
    let mut stopped = false;
    let mut result = None;
    let timing = match magpie_acc.expect("at least one run") {
        Ok(m) => {
            if let Some(f) = &m.failure {
                verified = false;
                errors.push(format!("magpie failed verification: {f}"));
            }
            result = m.result;
            Some(m.timing)
        }
        Err(e) => {
            verified = false;
            stopped = matches!(e, RunError::Stopped(_));
            errors.push(match e {
                RunError::Stopped(m) => m,
                other => other.to_string(),
            });
            None
        }
    };
    let median = timing.as_ref().and_then(|t| t.median());

    let mut peers = vec![];
    for (acc, &peer) in peer_acc.into_iter().zip(&peer_list) {
        let Some(acc) = acc else { continue };
        let rec = match acc {
            Ok(m) => {
                if let Some(f) = &m.failure {
                    verified = false;
                    errors.push(format!("{peer} failed verification: {f}"));
                }
                let med = m.timing.median();
                PeerRecord {
                    name: peer.name().into(),
                    median_s: med,
                    min_s: m.timing.min(),
                    max_s: m.timing.max(),
                    ratio_to_serial: ratio(med, serial_median),
                    per_task_ns: per_task(kernel, n, med),
                    verified: m.verified,
                    result: m.result,
                    error: m.failure.map(|f| format!("failed verification: {f}")),
                }
            }
            Err(e) => {
                verified = false;
                errors.push(format!("{peer}: {e}"));
                PeerRecord {
                    name: peer.name().into(),
                    median_s: None,
                    min_s: None,
                    max_s: None,
                    ratio_to_serial: None,
                    per_task_ns: None,
                    verified: false,
                    result: None,
                    error: Some(e.to_string()),
                }
            }
        };
        peers.push(rec);
    }

    let times_s = timing
        .as_ref()
        .map(|t| t.times_s.clone())
        .unwrap_or_default();
    let overheads = measured.then(|| Overheads::new(&stats, &times_s, workers));
    BenchRecord {
        kernel: kernel.name().into(),
        n,
        grain: cfg.grain,
        tree: cfg.tree.map(|t| t.to_string()),
        policy,
        workers,
        runs,
        median_s: median,
        min_s: timing.as_ref().and_then(|t| t.min()),
        max_s: timing.as_ref().and_then(|t| t.max()),
        times_s,
        serial_median_s: serial_median,
        serial_min_s: serial.as_ref().and_then(|t| t.min()),
        serial_max_s: serial.as_ref().and_then(|t| t.max()),
        ratio_to_serial: ratio(median, serial_median),
        tasks_per_run: kernel.tasks_per_run(n),
        per_task_ns: per_task(kernel, n, median),
        verified,
        result: result.or_else(|| serial_result.clone()),
        serial_result,
        stopped,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        stats,
        peers,
        peers_unavailable: kernel
            .unavailable_peers()
            .iter()
            .map(|(name, reason)| Unavailable {
                name: name.to_string(),
                reason: reason.to_string(),
            })
            .chain(unavailable)
            .collect(),
        peak_rss_kib: harness::peak_rss_kib(),
        overheads,
        steal_half,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Size;
    use magpie::{Policy, Pool};

    const POLICIES: [Policy; 3] = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];

    /// Whether `got` is the serial twin's answer `want`: the same words, but for fine-sum, whose
    /// float sum is verified within 1e-9 (its last printed digits may differ).
    fn same_answer(k: Kernel, got: &Option<String>, want: &str) -> bool {
        let Some(got) = got else { return false };
        if k != Kernel::FineSum {
            return got == want;
        }
        let num = |s: &str| s.trim_start_matches("sum ").parse::<f64>().unwrap();
        programs::close(num(got), num(want))
    }

    #[test]
    fn every_kernel_policy_and_width_verifies() {
        for k in Kernel::ALL {
            let case = Case::new(k, k.size_n(Size::Ci));
            let s = run_serial(&case, 1).unwrap();
            assert!(s.verified, "{k} serial: {:?}", s.failure);
            // Every kernel answers, and magpie answers as the serial twin does.
            let answer = s.result.expect("a verified run answers");
            assert!(
                !answer.is_empty() && !answer.contains('\n'),
                "{k}: {answer:?}"
            );
            // The programs reach magpie through rayon-core, in another build (magpie-cli runs it);
            // here a magpie pool refuses them, saying how to build it.
            if k.program().is_some() {
                let pool = Pool::builder().workers(2).build().unwrap();
                let e = run_magpie(&pool, &case, 1).unwrap_err();
                assert!(
                    matches!(e, RunError::Setup(ref m) if m.contains("build-rayon-compare.sh")),
                    "{k}: {e}"
                );
                continue;
            }
            // Workloads test every policy and width in their own modules; here, the runner's path.
            let (policies, widths) = if k.info().is_some() {
                (&POLICIES[2..], &[2][..])
            } else {
                (&POLICIES[..], &[1, 2][..])
            };
            for &p in policies {
                for &w in widths {
                    let pool = Pool::builder().workers(w).policy(p).build().unwrap();
                    let m = run_magpie(&pool, &case, 2).unwrap();
                    assert!(m.verified, "{k} {p} x{w}: {:?}", m.failure);
                    assert!(
                        same_answer(k, &m.result, &answer),
                        "{k} {p} x{w}: {:?}, the serial twin {answer:?}",
                        m.result
                    );
                    assert_eq!(m.timing.times_s.len(), 2);
                    let st = m.stats.unwrap();
                    assert!(st.spawns_work_first + st.spawns_help_first > 0, "{k} {p}");
                }
            }
        }
    }

    /// The answers of kernels with a known one: fib(20), the tree sum of depth 10 (1 + ... +
    /// 1023), the 8-queens solutions, the T1XS tree (the T1 family at depth 6), FJ's tasks, the
    /// torus's vertices, the word count's words; on the serial twin and on magpie alike (the word
    /// count, a rayon program, on rayon: magpie runs it from another build).
    #[test]
    fn kernels_answer_known_values() {
        let pool = Pool::builder().workers(2).build().unwrap();
        let fj_ci = fj::CI * fj::TASKS as u64;
        let pdfs_nodes = pdfs::CI * pdfs::CI;
        for (kernel, n, want) in [
            (Kernel::Fib, 20, "fib(20) = 6765".to_string()),
            (Kernel::TreeSum, 10, "sum of 1023 nodes = 523776".into()),
            (Kernel::NQueens, 8, "92 solutions".into()),
            (Kernel::NQueens, 10, "724 solutions".into()),
            (Kernel::Uts, 6, "16000 nodes, ".into()),
            (Kernel::Fj, fj::CI, format!("{fj_ci} tasks run")),
            (Kernel::FjRec, fj::CI, format!("{fj_ci} tasks run")),
            (
                Kernel::Pdfs,
                pdfs::CI,
                format!("{pdfs_nodes} of {pdfs_nodes} vertices reached"),
            ),
            // 8 words a line, from a ten-word vocabulary.
            (
                Kernel::WordCount,
                100,
                "10 distinct words, 800 in all".into(),
            ),
            (
                Kernel::Sort,
                3,
                sort::answer({
                    let mut v = sort::input(3);
                    v.sort_unstable();
                    v
                }),
            ),
        ] {
            let case = Case::new(kernel, n);
            let parallel = if kernel.program().is_some() {
                run_peer(Peer::RayonIter, &case, 2, 1)
            } else {
                run_magpie(&pool, &case, 1)
            };
            for m in [run_serial(&case, 1), parallel] {
                let got = m.unwrap().result.unwrap();
                assert!(
                    got.starts_with(&want),
                    "{kernel} {n}: {got}, expected {want}"
                );
            }
        }
        assert_eq!(
            sort::answer([3, 5]),
            "sorted, 2 keys, checksum 0x000000000000000d"
        );
    }

    #[test]
    fn peers_verify_and_others_are_refused() {
        for k in Kernel::ALL {
            let case = Case::new(k, k.size_n(Size::Ci));
            let answer = run_serial(&case, 1).unwrap().result.unwrap();
            for &peer in k.peers() {
                if let Some(why) = peer.unavailable_reason() {
                    eprintln!("skipped {peer} on {k}: {why}");
                    continue;
                }
                let widths = if k.info().is_some() || k.program().is_some() {
                    &[2][..]
                } else {
                    &[1, 2]
                };
                for &w in widths {
                    let m = run_peer(peer, &case, w, 1).unwrap();
                    assert!(m.verified, "{peer} {k} x{w}");
                    // The Rust peers answer as the serial twin does; the C++ ones do not say.
                    if peer.native().is_none() {
                        assert!(same_answer(k, &m.result, &answer), "{peer} {k} x{w}");
                    } else {
                        assert_eq!(m.result, None);
                    }
                }
            }
        }
        assert!(matches!(
            run_peer(Peer::ChiliJoin, &Case::new(Kernel::Fj, 1), 1, 1),
            Err(RunError::Setup(_))
        ));
        assert!(matches!(
            run_peer(Peer::RayonScope, &Case::new(Kernel::Pdfs, 1), 1, 1),
            Err(RunError::Setup(_))
        ));
        // rayon's parallel iterators run the programs only, and the programs have no other peer.
        assert!(matches!(
            run_peer(Peer::RayonIter, &Case::new(Kernel::Fib, 10), 1, 1),
            Err(RunError::Setup(_))
        ));
        for peer in [Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb] {
            assert!(matches!(
                run_peer(peer, &Case::new(Kernel::Spmv, 10), 1, 1),
                Err(RunError::Setup(_))
            ));
        }
    }

    #[test]
    fn grains_and_trees_reach_the_kernels() {
        // fib with a cutoff, on every runtime.
        let case = Case {
            grain: Some(12),
            ..Case::new(Kernel::Fib, 22)
        };
        let pool = Pool::builder().workers(2).build().unwrap();
        assert!(run_serial(&case, 1).unwrap().verified);
        let m = run_magpie(&pool, &case, 1).unwrap();
        assert!(m.verified);
        // fib(22) with fib(12) and below serial: far fewer spawns than the ~28,000 without.
        let st = m.stats.unwrap();
        assert!(st.spawns_work_first + st.spawns_help_first < 1000, "{st:?}");
        for peer in [Peer::RayonJoin, Peer::ChiliJoin] {
            assert!(run_peer(peer, &case, 2, 1).unwrap().verified, "{peer}");
        }
        // The C++ programs take no grain: a setup error (listed as not measured), not a wrong run.
        let e = run_peer(Peer::Tbb, &case, 2, 1).unwrap_err();
        assert!(matches!(e, RunError::Setup(_)), "{e}");
        // A workload's grain.
        let case = Case {
            grain: Some(3),
            ..Case::new(Kernel::Sor, 64)
        };
        assert!(run_magpie(&pool, &case, 1).unwrap().verified);
        // The grains of the kernels written out per runtime, on every runtime; magpie's spawn
        // count shows the grain was used (these grains fork more than the defaults).
        let spawns = |case: &Case| {
            let m = run_magpie(&pool, case, 1).unwrap();
            assert!(m.verified, "{} grain {:?}", case.kernel, case.grain);
            let st = m.stats.unwrap();
            st.spawns_work_first + st.spawns_help_first
        };
        for case in [
            Case {
                grain: Some(2),
                ..Case::new(Kernel::Sort, 20_000)
            },
            Case {
                grain: Some(8),
                ..Case::new(Kernel::Matmul, 64)
            },
            Case {
                grain: Some(1),
                ..Case::new(Kernel::Heat, 37)
            },
            Case {
                grain: Some(1),
                ..Case::new(Kernel::Jacobi, 37)
            },
            Case {
                grain: Some(8),
                ..Case::new(Kernel::NQueens, 9)
            },
        ] {
            let k = case.kernel;
            assert!(run_serial(&case, 1).unwrap().verified, "{k}");
            let default = Case {
                grain: None,
                ..case
            };
            assert!(spawns(&case) > spawns(&default), "{k}");
            for &peer in k.peers() {
                if peer.native().is_none() {
                    assert!(run_peer(peer, &case, 2, 1).unwrap().verified, "{k} {peer}");
                }
            }
        }
        // A named UTS tree instead of the T1 family; n is then ignored.
        let case = Case {
            tree: Some(uts::named("T3XS").unwrap()),
            ..Case::new(Kernel::Uts, 0)
        };
        assert!(run_serial(&case, 1).unwrap().verified);
        assert!(run_magpie(&pool, &case, 1).unwrap().verified);
        assert!(run_peer(Peer::ChiliJoin, &case, 2, 1).unwrap().verified);
        // UTS in chunks (the reference's chunk size): magpie and rayon; chili has no scope.
        let case = Case {
            grain: Some(4),
            ..case
        };
        assert!(run_magpie(&pool, &case, 1).unwrap().verified);
        assert!(run_peer(Peer::RayonScope, &case, 2, 1).unwrap().verified);
        let e = run_peer(Peer::ChiliJoin, &case, 2, 1).unwrap_err();
        assert!(matches!(e, RunError::Setup(_)), "{e}");
        // Knobs that do not fit the kernel are refused with one line.
        for (case, what) in [
            (
                Case {
                    grain: Some(0),
                    ..Case::new(Kernel::Fib, 20)
                },
                "grain",
            ),
            (
                Case {
                    grain: Some(0),
                    ..Case::new(Kernel::Sor, 64)
                },
                "grain",
            ),
            (
                Case {
                    grain: Some(4),
                    ..Case::new(Kernel::Pdfs, 8)
                },
                "no grain",
            ),
            (
                Case {
                    grain: Some(17),
                    ..Case::new(Kernel::NQueens, 8)
                },
                "grain",
            ),
            (
                Case {
                    grain: Some(0),
                    ..Case::new(Kernel::Matmul, 64)
                },
                "grain",
            ),
            (
                Case {
                    tree: Some(uts::named("T1XS").unwrap()),
                    ..Case::new(Kernel::Fib, 20)
                },
                "--tree",
            ),
        ] {
            let e = run_magpie(&pool, &case, 1).unwrap_err().to_string();
            assert!(e.contains(what) && !e.contains('\n'), "{e}");
            assert!(run_serial(&case, 1).is_err());
        }
    }

    #[test]
    fn a_peer_without_the_asked_form_is_listed_as_not_measured_not_failed() {
        // Chunked UTS needs a scope; chili has only join. `magpie bench uts --grain G` used to
        // fail verification over it, which stopped scripts that asked for chunked UTS.
        let pool = Pool::builder().workers(2).build().unwrap();
        let cfg = BenchConfig {
            kernel: Kernel::Uts,
            n: 6,
            runs: 1,
            serial: true,
            peers: true,
            grain: Some(32),
            tree: None,
        };
        let r = bench(&cfg, pool);
        assert!(r.verified && r.error.is_none(), "{r:?}");
        assert!(
            r.peers.iter().all(|p| p.name != "chili-join"),
            "{:?}",
            r.peers
        );
        let chili = r.peers_unavailable.iter().find(|u| u.name == "chili-join");
        assert!(
            chili.is_some_and(|u| u.reason.contains("no chunked UTS")),
            "{r:?}"
        );
        assert!(r
            .peers
            .iter()
            .any(|p| p.name == "rayon-scope" && p.verified));
    }

    #[test]
    fn bench_record_has_everything() {
        let pool = Pool::builder().workers(2).build().unwrap();
        let cfg = BenchConfig {
            kernel: Kernel::Fj,
            n: fj::CI,
            runs: 3,
            serial: true,
            peers: true,
            grain: None,
            tree: None,
        };
        let r = bench(&cfg, pool);
        assert!(r.verified && r.error.is_none() && !r.stopped, "{r:?}");
        assert_eq!(r.times_s.len(), 3);
        // The answer: magpie's, the serial twin's and the Rust peers' alike.
        let tasks = format!("{} tasks run", fj::CI * 1024);
        assert_eq!(r.result.as_deref(), Some(tasks.as_str()));
        assert_eq!(r.serial_result, r.result);
        assert_eq!(r.peers[0].result, r.result);
        assert!(r.median_s.is_some() && r.serial_median_s.is_some() && r.ratio_to_serial.is_some());
        assert_eq!(r.tasks_per_run, Some(fj::CI * 1024));
        // Every peer is either measured or listed as not measured (chili has no scope; the C++
        // peers are listed when not built), never silently dropped.
        assert_eq!(r.peers[0].name, "rayon-scope");
        let mut all: Vec<&str> = r.peers.iter().map(|p| p.name.as_str()).collect();
        all.extend(r.peers_unavailable.iter().map(|u| u.name.as_str()));
        all.sort_unstable();
        assert_eq!(
            all,
            ["chili", "openmp-task", "rayon-scope", "tbb-task-group"]
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        for key in REQUIRED_KEYS.iter().copied().chain(["peers"]) {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert!(v["stats"].is_object());
        // The CLI's report reads children's records back.
        let back: BenchRecord = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(
            (back.stats, back.verified, back.peers.len()),
            (r.stats, true, r.peers.len())
        );
        assert_eq!(v["result"], tasks.as_str());
        // Records written before the answers were recorded still load, without one.
        let mut old = v.clone();
        let o = old.as_object_mut().unwrap();
        o.remove("result");
        o.remove("serial_result");
        for p in o["peers"].as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("result");
        }
        let back: BenchRecord = serde_json::from_value(old).unwrap();
        assert_eq!((back.result, back.peers[0].result.clone()), (None, None));
    }

    #[test]
    fn stack_limit_is_a_stop_not_a_crash() {
        let pool = Pool::builder()
            .workers(1)
            .policy(Policy::WorkFirst)
            .max_fibers(16)
            // 64 KiB stacks: no child can run in place, so every spawn takes a fiber.
            .stack_size(64 << 10)
            .build()
            .unwrap();
        let cfg = BenchConfig {
            kernel: Kernel::Pdfs,
            n: pdfs::CI,
            runs: 1,
            serial: false,
            peers: true,
            grain: None,
            tree: None,
        };
        let r = bench(&cfg, pool);
        assert!(r.stopped && !r.verified, "{r:?}");
        assert!(r.error.as_deref().unwrap().contains("stack limit"));
        assert!(r.median_s.is_none());
        // Neither magpie nor (untimed) the serial twin answered.
        assert_eq!((r.result, r.serial_result), (None, None));
        // With the serial twin timed, its answer is the record's.
        let pool = Pool::builder()
            .workers(1)
            .policy(Policy::WorkFirst)
            .max_fibers(16)
            .stack_size(64 << 10)
            .build()
            .unwrap();
        let r = bench(
            &BenchConfig {
                serial: true,
                peers: false,
                ..cfg
            },
            pool,
        );
        assert!(r.stopped && r.serial_result.is_some(), "{r:?}");
        assert_eq!(r.result, r.serial_result);
    }
}
