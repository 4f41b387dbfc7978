//! Kernels written once: a [`Workload`] states its sizes, builds its input, runs over any
//! [`Fork`] (the serial twin is the same code on [`Serial`]) and verifies a result; [`measure`]
//! times it on any runtime — the serial twin, a magpie pool, rayon or chili — so a kernel needs no
//! per-runtime code beyond its one generic `run`.
//!
//! The grain (the papers' cutoff) decides where the recursion stops forking, never the order of
//! the arithmetic, wherever a kernel can arrange that: its results are then bit-for-bit the same
//! on every runtime and at every grain, and verifiers compare bits. Kernels whose arithmetic
//! cannot be kept in one order say so and verify within a stated tolerance.

use crate::fork::{Chili, Fork, Magpie, Rayon, Serial};
use crate::harness::{self, Measured, RunError};
pub use crate::kernel::Runtime;
use crate::kernel::{self, Case, Def, Grain};
use crate::Peer;

/// What the command line and the reports need to know about a kernel.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    /// The name on the command line and in reports.
    pub name: &'static str,
    /// The paper (and its table or section) the kernel comes from.
    pub source: &'static str,
    /// What `n` means.
    pub n_meaning: &'static str,
    /// `n` for `--size ci` (well under a second serially).
    pub ci: u64,
    /// `n` for `--size default` (about 0.5–2 s serially on a 2-core machine).
    pub default: u64,
    /// `n` for `--size paper` (the paper's size where it fits in memory).
    pub paper: u64,
    /// The smallest `n` accepted.
    pub min_n: u64,
    /// The largest `n` accepted.
    pub max_n: u64,
    /// The default grain.
    pub grain: u64,
    /// What the grain means (the cutoff below which the kernel stops forking).
    pub grain_meaning: &'static str,
}

/// A benchmark kernel written once over [`Fork`].
pub trait Workload {
    /// Names, sizes and the default grain.
    const INFO: Info;
    /// Read-only data every run uses (a matrix, a graph), built once per measurement.
    type Shared: Send + Sync + 'static;
    /// What one run works on and may change (built before each run, untimed).
    type Input: Send;
    /// What one run returns.
    type Output: Send;
    /// What [`Workload::verify`] compares against, computed once per measurement (untimed).
    type Expected: Send + Sync + 'static;

    /// Checks `n`; the error is one line. The default accepts `min_n..=max_n`.
    fn check_n(n: u64) -> Result<(), String> {
        let i = Self::INFO;
        if (i.min_n..=i.max_n).contains(&n) {
            Ok(())
        } else {
            Err(format!(
                "invalid n `{n}` for {}: expected a whole number between {} and {} ({})",
                i.name, i.min_n, i.max_n, i.n_meaning
            ))
        }
    }
    /// Checks a grain; the error is one line. The default accepts any grain from 1.
    fn check_grain(grain: u64) -> Result<(), String> {
        if grain >= 1 {
            Ok(())
        } else {
            Err(format!(
                "invalid grain `{grain}` for {}: expected a whole number from 1 ({})",
                Self::INFO.name,
                Self::INFO.grain_meaning
            ))
        }
    }
    /// Builds the read-only data for size `n` (which passed [`Workload::check_n`]).
    fn shared(n: u64) -> Self::Shared;
    /// Builds one run's input.
    fn input(n: u64, shared: &Self::Shared) -> Self::Input;
    /// The kernel: runs on `f`, forking down to `grain`.
    fn run<F: Fork>(
        f: &mut F,
        n: u64,
        grain: u64,
        shared: &Self::Shared,
        input: &mut Self::Input,
    ) -> Self::Output;
    /// What a correct run gives: usually the serial twin's result, or a known answer.
    fn expected(n: u64, shared: &Self::Shared) -> Self::Expected;
    /// One run's answer (`input` as the run left it, and its output), in a few words a user can
    /// compare with a known value: a count, or a checksum of the result (floats to 12 significant
    /// digits, [`harness::sig12`]). Every version that verifies gives the same answer.
    fn answer(n: u64, shared: &Self::Shared, input: &Self::Input, out: &Self::Output) -> String;
    /// Checks one run's result (`input` as the run left it, and its output); the error is one
    /// line and says what differs.
    fn verify(
        n: u64,
        shared: &Self::Shared,
        want: &Self::Expected,
        input: &Self::Input,
        out: Self::Output,
    ) -> Result<(), String>;
}

/// Times `runs` runs of `W` at size `n` and grain `grain` on `rt`, verifying each one.
pub fn measure<W: Workload>(
    rt: &Runtime<'_>,
    n: u64,
    grain: u64,
    runs: usize,
) -> Result<Measured, RunError> {
    W::check_n(n).map_err(RunError::Setup)?;
    W::check_grain(grain).map_err(RunError::Setup)?;
    let prepared = cached((W::INFO.name, n), || {
        let shared = W::shared(n);
        let want = W::expected(n, &shared);
        (shared, want)
    });
    let (shared, want) = &*prepared;
    let sh = shared;
    let setup = || W::input(n, sh);
    // The answer is taken before `verify`, which consumes the output, and kept when it verifies.
    let check = |i: &W::Input, o: W::Output| {
        let answer = W::answer(n, sh, i, &o);
        W::verify(n, sh, want, i, o).map(|()| answer)
    };
    match rt {
        Runtime::Serial => {
            harness::measure(runs, setup, |i| W::run(&mut Serial, n, grain, sh, i), check)
        }
        Runtime::Magpie(pool) => harness::measure(
            runs,
            setup,
            |i| pool.install(|| W::run(&mut Magpie, n, grain, sh, i)),
            check,
        ),
        Runtime::Rayon(pool) => harness::measure(
            runs,
            setup,
            |i| pool.install(|| W::run(&mut Rayon, n, grain, sh, i)),
            check,
        ),
        Runtime::Chili(pool) => {
            let mut scope = pool.scope();
            harness::measure(
                runs,
                setup,
                |i| W::run(&mut Chili::new(&mut scope), n, grain, sh, i),
                check,
            )
        }
    }
}

/// The value `make` builds for `key`, kept for the next call with the same key: the suite
/// measures one run at a time, and an input or an expected result that costs a serial run must not
/// be rebuilt for each. One value is kept (the last key's), so memory holds one kernel's data.
pub fn cached<T: Send + Sync + 'static>(
    key: (&'static str, u64),
    make: impl FnOnce() -> T,
) -> std::sync::Arc<T> {
    use std::any::Any;
    use std::sync::{Arc, Mutex};
    type Entry = ((&'static str, u64), Arc<dyn Any + Send + Sync>);
    static LAST: Mutex<Option<Entry>> = Mutex::new(None);
    let hit = {
        let last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        match &*last {
            Some((k, v)) if *k == key => v.clone().downcast::<T>().ok(),
            _ => None,
        }
    };
    if let Some(v) = hit {
        return v;
    }
    // Drop the old value before building the new one, so that two never take memory at once.
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = None;
    let v = Arc::new(make());
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, v.clone()));
    v
}

/// A workload's kernel record ([`Def`]): its names and sizes from [`Workload::INFO`], its
/// checks, and [`measure`] on the case's runtime. rayon and chili run the same code, so both are
/// its peers.
pub const fn def<W: Workload>() -> Def {
    let i = W::INFO;
    Def {
        name: i.name,
        n_meaning: i.n_meaning,
        sizes: [i.ci, i.default, i.paper],
        min_n: i.min_n,
        max_n: i.max_n,
        check_n: Some(W::check_n),
        grain: Some(Grain {
            default: Some(i.grain),
            max: None,
            meaning: i.grain_meaning,
            check: Some(W::check_grain),
        }),
        peers: &[Peer::RayonJoin, Peer::ChiliJoin],
        workload: true,
        measure: measure_case::<W>,
        ..kernel::NONE
    }
}

/// [`measure`] of a case, at its grain or the workload's default.
fn measure_case<W: Workload>(
    rt: &Runtime<'_>,
    case: &Case,
    runs: usize,
) -> Result<Measured, RunError> {
    measure::<W>(rt, case.n, case.grain.unwrap_or(W::INFO.grain), runs)
}

/// Test support: runs `W` at each size in `sizes` and a few grains on the serial twin, on magpie
/// under every policy at 1 and 2 workers, on rayon and on chili at 1 and 2 threads, and asserts
/// that every run verifies; also that the sizes' presets pass `check_n` and that 0 and
/// `max_n + 1` do not.
#[cfg(test)]
pub(crate) fn check_everywhere<W: Workload>(sizes: &[u64], grains: &[u64]) {
    let i = W::INFO;
    for n in [i.ci, i.default, i.paper, i.min_n, i.max_n] {
        assert_eq!(W::check_n(n), Ok(()), "{}: n = {n}", i.name);
    }
    for n in [i.min_n.wrapping_sub(1), i.max_n + 1] {
        let e = W::check_n(n).unwrap_err();
        assert!(e.contains(i.name) && !e.contains('\n'), "{e}");
    }
    assert!(W::check_grain(0).is_err());
    assert_eq!(W::check_grain(i.grain), Ok(()));
    // Every version verifies, and answers as the serial twin does.
    let mut answer = None;
    let mut ok = |what: &str, n: u64, g: u64, r: Result<Measured, RunError>| match r {
        Ok(m) => {
            assert!(
                m.verified,
                "{} n={n} grain={g} {what}: {:?}",
                i.name, m.failure
            );
            let got = m.result.expect("a verified run answers");
            assert!(!got.is_empty(), "{} n={n} {what}: an empty answer", i.name);
            if what == "serial" {
                answer = Some(got);
            } else {
                assert_eq!(
                    Some(&got),
                    answer.as_ref(),
                    "{} n={n} grain={g} {what}",
                    i.name
                );
            }
        }
        Err(e) => panic!("{} n={n} grain={g} {what}: {e}", i.name),
    };
    for &n in sizes {
        for &g in grains {
            ok("serial", n, g, measure::<W>(&Runtime::Serial, n, g, 1));
            for p in [
                magpie::Policy::WorkFirst,
                magpie::Policy::HelpFirst,
                magpie::Policy::Adaptive,
            ] {
                for w in [1, 2] {
                    let pool = magpie::Pool::builder()
                        .workers(w)
                        .policy(p)
                        .build()
                        .unwrap();
                    let what = format!("magpie {p:?} {w}w");
                    ok(&what, n, g, measure::<W>(&Runtime::Magpie(&pool), n, g, 2));
                }
            }
            for w in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .unwrap();
                ok("rayon", n, g, measure::<W>(&Runtime::Rayon(&pool), n, g, 1));
                let pool = chili::ThreadPool::with_config(chili::Config {
                    thread_count: std::num::NonZero::new(w),
                    ..Default::default()
                });
                ok("chili", n, g, measure::<W>(&Runtime::Chili(&pool), n, g, 1));
            }
        }
    }
}
