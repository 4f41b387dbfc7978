//! Fib: the naive doubly recursive Fibonacci with a fork-join at every level and no sequential
//! cutoff, so nearly all of its time is spawn and sync overhead (SLAW (Guo et al., IPDPS 2010)
//! §V). Versions: magpie ([`parallel`], `magpie::join`), the serial twin ([`serial`]), rayon
//! ([`rayon_join`]) and chili ([`chili_join`]); [`verify`] checks a result against the closed
//! iteration.

use crate::harness::{answered, Measured, RunError};
use crate::kernel::{self, Def, Grain, Kernel};
use crate::kernel::Case;
use crate::workload::Runtime;
use crate::Peer;

/// `n` for `--size ci`.
pub const CI: u64 = 20;
/// `n` for `--size default`.
pub const DEFAULT: u64 = 36;
/// `n` for `--size paper`.
pub const PAPER: u64 = 35;
/// Largest `n` accepted (fib(60) already takes hours without a cutoff).
pub const MAX_N: u64 = 60;

/// fib(n) with `magpie::join` at every level. Call inside `Pool::install`.
pub fn parallel(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| parallel(n - 1), || parallel(n - 2));
    a + b
}

/// fib(n) with `magpie::join` down to fib(`cutoff`), below which the recursion is serial.
pub fn parallel_cutoff(n: u64, cutoff: u64) -> u64 {
    if n < cutoff.max(2) {
        return serial(n);
    }
    let (a, b) = magpie::join(
        || parallel_cutoff(n - 1, cutoff),
        || parallel_cutoff(n - 2, cutoff),
    );
    a + b
}

/// The serial twin: the same recursion, no runtime, compiled as a plain Rust program would be
/// (the harness hides `n` from the optimiser at the call; inside, LLVM may optimise the recursion
/// as it would for any user, which is the baseline a user compares against).
pub fn serial(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    serial(n - 1) + serial(n - 2)
}

/// fib(n) with `rayon::join` at every level. Call inside `rayon::ThreadPool::install`.
pub fn rayon_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| rayon_join(n - 1), || rayon_join(n - 2));
    a + b
}

/// fib(n) with `rayon::join` down to fib(`cutoff`).
pub fn rayon_join_cutoff(n: u64, cutoff: u64) -> u64 {
    if n < cutoff.max(2) {
        return serial(n);
    }
    let (a, b) = rayon::join(
        || rayon_join_cutoff(n - 1, cutoff),
        || rayon_join_cutoff(n - 2, cutoff),
    );
    a + b
}

/// fib(n) with `chili::Scope::join` down to fib(`cutoff`).
pub fn chili_join_cutoff(s: &mut chili::Scope<'_>, n: u64, cutoff: u64) -> u64 {
    if n < cutoff.max(2) {
        return serial(n);
    }
    let (a, b) = s.join(
        |s| chili_join_cutoff(s, n - 1, cutoff),
        |s| chili_join_cutoff(s, n - 2, cutoff),
    );
    a + b
}

/// fib(n) with `chili::Scope::join` at every level.
pub fn chili_join(s: &mut chili::Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| chili_join(s, n - 1), |s| chili_join(s, n - 2));
    a + b
}

/// fib(n) by iteration: the known answer.
pub fn expected(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// A run's answer: `fib(n) = value`.
pub fn answer(n: u64, got: u64) -> String {
    format!("fib({n}) = {got}")
}

/// Checks a computed fib(n).
pub fn verify(n: u64, got: u64) -> Result<(), String> {
    let want = expected(n);
    if got == want {
        Ok(())
    } else {
        Err(format!("fib({n}) = {got}, expected {want}"))
    }
}

const N_MEANING: &str = "fib(n)";

static DEF: Def = Def {
    name: "fib",
    n_meaning: N_MEANING,
    sizes: [CI, DEFAULT, PAPER],
    max_n: MAX_N,
    grain: Some(Grain {
        default: None,
        max: Some(MAX_N),
        meaning: "below fib(grain) the recursion is serial",
        check: None,
    }),
    peers: &[Peer::RayonJoin, Peer::ChiliJoin, Peer::Tbb, Peer::OpenMp],
    measure,
    ..kernel::NONE
};
/// The kernel, as the registry lists it.
pub const KERNEL: Kernel = Kernel::new(&DEF);

/// Times fib on `rt`: a join at every level, or serial below the case's grain.
fn measure(rt: &Runtime<'_>, case: &Case, runs: usize) -> Result<Measured, RunError> {
    let (n, grain) = (case.n, case.grain);
    kernel::measure_versions(
        rt,
        runs,
        || (),
        // The serial twin places no tasks, so the grain does not apply to it.
        |_| serial(n),
        |_| grain.map_or_else(|| parallel(n), |g| parallel_cutoff(n, g)),
        |_| grain.map_or_else(|| rayon_join(n), |g| rayon_join_cutoff(n, g)),
        |s, _| match grain {
            None => chili_join(s, n),
            Some(g) => chili_join_cutoff(s, n, g),
        },
        |_, r| answered(verify(n, r), || answer(n, r)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The magpie versions under every policy and width are checked by
    // `runner::tests::every_kernel_policy_and_width_verifies`.
    #[test]
    fn serial_twin_verifies() {
        assert_eq!(verify(CI, serial(CI)), Ok(()));
    }
    #[test]
    fn peers_verify() {
        for w in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            assert_eq!(verify(CI, pool.install(|| rayon_join(CI))), Ok(()));
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            });
            assert_eq!(verify(CI, chili_join(&mut pool.scope(), CI)), Ok(()));
        }
    }

    #[test]
    fn wrong_values_are_rejected() {
        assert_eq!(expected(0), 0);
        assert_eq!(expected(1), 1);
        assert_eq!(expected(20), 6765);
        let e = verify(20, 6764).unwrap_err();
        assert!(e.contains("6765"), "{e}");
        assert!(verify(2, 2).is_err());
    }
}
