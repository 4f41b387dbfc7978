//! FJ: SLAW's fork-join microbenchmark (SLAW (Guo et al., IPDPS 2010) §V): a `finish` scope that
//! spawns 1024 near-empty tasks and waits for them, repeated `n` times; the figure of merit is
//! time per task. [`flat`] spawns the tasks in a loop (the SLAW kernel); [`recursive`] spawns them
//! by halving the index range, each task spawning two children until a range holds one task.
//! Each task increments its own counter (a relaxed atomic add), so [`verify`] can check that
//! every task ran exactly once per repetition. Serial twins: [`serial_flat`], [`serial_recursive`];
//! rayon peer: [`rayon_scope`] (chili has no scope/spawn, so it has no FJ).

use crate::harness::{self, answered, Measured, RunError};
use crate::kernel::{self, Def, Kernel};
use crate::kernel::Case;
use crate::workload::Runtime;
use crate::Peer;

use magpie::Scope;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};

/// Tasks per repetition.
pub const TASKS: usize = 1024;
/// Repetitions for `--size ci`.
pub const CI: u64 = 4;
/// Repetitions for `--size default` (about 1e6 tasks per run).
pub const DEFAULT: u64 = 1000;
/// Repetitions for `--size paper` (about 1e6 tasks per run).
pub const PAPER: u64 = 1000;
/// Largest repetition count accepted (the per-task counters are `u32`).
pub const MAX_REPS: u64 = 100_000_000;

/// Fresh per-task counters, all zero.
pub fn new_counters() -> Vec<AtomicU32> {
    (0..TASKS).map(|_| AtomicU32::new(0)).collect()
}

#[inline]
fn task(counter: &AtomicU32) {
    // Relaxed: a count only, read once the scope has returned (which orders it).
    counter.fetch_add(1, Ordering::Relaxed);
}

/// FJ: `reps` times, one scope spawning one task per counter. Call inside `Pool::install`.
pub fn flat(reps: u64, counters: &[AtomicU32]) {
    for _ in 0..reps {
        magpie::scope(|s| {
            for c in counters {
                s.spawn(move |_| task(c));
            }
        });
    }
}

/// Recursive FJ: `reps` times, one scope in which the counter range is halved by spawns down to
/// single tasks. Call inside `Pool::install`.
pub fn recursive(reps: u64, counters: &[AtomicU32]) {
    for _ in 0..reps {
        magpie::scope(|s| split(s, counters));
    }
}

fn split<'s>(s: &Scope<'s>, range: &'s [AtomicU32]) {
    match range {
        [] => {}
        [c] => task(c),
        _ => {
            let (l, r) = range.split_at(range.len() / 2);
            s.spawn(move |s| split(s, l));
            s.spawn(move |s| split(s, r));
        }
    }
}

/// FJ on rayon: `rayon::scope` with `Scope::spawn` per task. Call inside `ThreadPool::install`.
pub fn rayon_scope(reps: u64, counters: &[AtomicU32]) {
    for _ in 0..reps {
        rayon::scope(|s| {
            for c in counters {
                s.spawn(move |_| task(c));
            }
        });
    }
}

/// Serial twin of [`flat`]: the same increments in a loop.
pub fn serial_flat(reps: u64, counts: &mut [u32]) {
    for _ in 0..reps {
        for c in counts.iter_mut() {
            *black_box(c) += 1;
        }
    }
}

/// Serial twin of [`recursive`]: the same halving, by plain recursion.
pub fn serial_recursive(reps: u64, counts: &mut [u32]) {
    fn go(range: &mut [u32]) {
        match range {
            [] => {}
            [c] => *black_box(c) += 1,
            _ => {
                let mid = range.len() / 2;
                let (l, r) = range.split_at_mut(mid);
                go(l);
                go(r);
            }
        }
    }
    for _ in 0..reps {
        go(counts);
    }
}

/// Checks that each of the [`TASKS`] tasks ran exactly `reps` times (and so that
/// `reps * TASKS` tasks ran in all).
pub fn verify(reps: u64, counts: impl IntoIterator<Item = u32>) -> Result<(), String> {
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut first_bad = None;
    for (i, c) in counts.into_iter().enumerate() {
        seen += 1;
        total += c as u64;
        if c as u64 != reps && first_bad.is_none() {
            first_bad = Some((i, c));
        }
    }
    if seen != TASKS {
        return Err(format!("{seen} task counters, expected {TASKS}"));
    }
    match first_bad {
        None => Ok(()),
        Some((i, c)) => Err(format!(
            "task {i} ran {c} times in {reps} repetitions; {total} task executions in all, \
             expected {}",
            reps * TASKS as u64
        )),
    }
}

/// A run's answer: the tasks run, summed over the per-task counters.
pub fn answer(counts: impl IntoIterator<Item = u32>) -> String {
    let total: u64 = counts.into_iter().map(u64::from).sum();
    format!("{total} tasks run")
}

/// [`answer`] on atomic counters.
pub fn answer_atomic(counters: &[AtomicU32]) -> String {
    // Relaxed: called after the run's scope returned, which orders every task's increment.
    answer(counters.iter().map(|c| c.load(Ordering::Relaxed)))
}

/// [`verify`] on atomic counters.
pub fn verify_atomic(reps: u64, counters: &[AtomicU32]) -> Result<(), String> {
    // Relaxed: as in `answer_atomic`.
    verify(reps, counters.iter().map(|c| c.load(Ordering::Relaxed)))
}

const N_MEANING: &str = "repetitions of 1024 tasks";

static FLAT: Def = Def {
    name: "fj",
    n_meaning: N_MEANING,
    sizes: [CI, DEFAULT, PAPER],
    max_n: MAX_REPS,
    tasks_per_n: Some(TASKS as u64),
    peers: &[Peer::RayonScope, Peer::Tbb, Peer::OpenMp],
    unavailable_peers: &[(
        "chili",
        "chili has only join (no scope/spawn); a join-split of the 1024 tasks would be a \
         different kernel",
    )],
    measure: |rt, case, runs| measure(rt, case, runs, false),
    ..kernel::NONE
};
static RECURSIVE: Def = Def {
    name: "fj-rec",
    measure: |rt, case, runs| measure(rt, case, runs, true),
    peers: &[],
    unavailable_peers: &[],
    ..FLAT
};
/// FJ, the tasks spawned in a loop, as the registry lists it.
pub const FJ: Kernel = Kernel::new(&FLAT);
/// FJ, the tasks spawned by recursive halving, as the registry lists it.
pub const FJ_REC: Kernel = Kernel::new(&RECURSIVE);

/// Times FJ (`halving`: the recursive form) on `rt`.
fn measure(
    rt: &Runtime<'_>,
    case: &Case,
    runs: usize,
    halving: bool,
) -> Result<Measured, RunError> {
    let n = case.n;
    match rt {
        Runtime::Serial => harness::measure(
            runs,
            || vec![0u32; TASKS],
            |c| {
                if halving {
                    serial_recursive(n, c)
                } else {
                    serial_flat(n, c)
                }
            },
            |c, ()| answered(verify(n, c.iter().copied()), || answer(c.iter().copied())),
        ),
        Runtime::Magpie(pool) => harness::measure(
            runs,
            new_counters,
            |c| {
                let c = &*c;
                if halving {
                    pool.install(|| recursive(n, c))
                } else {
                    pool.install(|| flat(n, c))
                }
            },
            |c, ()| answered(verify_atomic(n, c), || answer_atomic(c)),
        ),
        Runtime::Rayon(pool) if !halving => harness::measure(
            runs,
            new_counters,
            |c| {
                let c = &*c;
                pool.install(|| rayon_scope(n, c))
            },
            |c, ()| answered(verify(n, counts_of(c)), || answer_atomic(c)),
        ),
        _ => Err(kernel::no_version(case.kernel, rt)),
    }
}

fn counts_of(counters: &[AtomicU32]) -> Vec<u32> {
    // Relaxed: read after the run has returned, which orders every task's increment.
    counters.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_twins_and_rayon_verify() {
        let mut c = vec![0u32; TASKS];
        serial_flat(CI, &mut c);
        assert_eq!(verify(CI, c), Ok(()));
        let mut c = vec![0u32; TASKS];
        serial_recursive(CI, &mut c);
        assert_eq!(verify(CI, c), Ok(()));
        for w in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            let c = new_counters();
            pool.install(|| rayon_scope(CI, &c));
            assert_eq!(verify_atomic(CI, &c), Ok(()));
        }
    }

    #[test]
    fn wrong_counts_are_rejected() {
        let mut c = vec![3u32; TASKS];
        assert!(verify(3, c.clone()).is_ok());
        c[17] = 2;
        let e = verify(3, c.clone()).unwrap_err();
        assert!(e.contains("task 17 ran 2 times"), "{e}");
        // A task run twice in one repetition and skipped in another still shows.
        c[17] = 3;
        c[5] = 4;
        c[6] = 2;
        assert!(verify(3, c).is_err());
        assert!(verify(3, vec![3u32; TASKS - 1]).is_err());
        assert!(verify(0, vec![0u32; TASKS]).is_ok());
    }
}
