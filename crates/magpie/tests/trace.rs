//! Steal-tree tracing: reconstruction from the trace alone equals a full enumeration of which
//! worker ran each step, on random async-finish programs under both fixed policies.

#[path = "support/program.rs"]
mod program;

use magpie::trace::{Origin, Trace};
use magpie::{Policy, Pool};
use program::{Program, Reconstruct, ReconstructError};
use std::sync::atomic::{AtomicU32, Ordering};

/// A tracing pool. Under `WorkFirst` it opts in to migration: reconstruction models SLAW's
/// continuation stealing (a stolen work-first parent, a resumption wherever the last child
/// finished), which is what these tests check the trace against.
fn traced_pool(workers: usize, policy: Policy) -> Pool {
    let b = Pool::builder().workers(workers).policy(policy).trace(true);
    // SAFETY: the programs these pools run (`Program::run`, fib) hold nothing that is not `Send`
    // across a sync point and do not rely on their thread's identity.
    let b = unsafe { b.allow_migration(policy == Policy::WorkFirst) };
    b.build().unwrap()
}

/// Runs `p` traced; returns the trace and, for each step, the worker that ran it (recorded by
/// the step itself: the full enumeration).
fn traced_run(p: &Program, workers: usize, policy: Policy, spin: u32) -> (Trace, Vec<u32>) {
    let pool = traced_pool(workers, policy);
    let seen: Vec<AtomicU32> = (0..p.steps).map(|_| AtomicU32::new(u32::MAX)).collect();
    pool.install(|| {
        p.run(&|i| {
            let w = magpie::worker_index().expect("steps run on workers") as u32;
            let prev = seen[i as usize].swap(w, Ordering::Relaxed);
            assert_eq!(prev, u32::MAX, "step {i} ran twice");
            // Uneven work so that thieves find something.
            let mut x = i as u64;
            for _ in 0..(spin * (1 + i % 7)) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        })
    });
    let t = pool.trace().expect("tracing was on");
    let truth = seen.into_iter().map(|a| a.into_inner()).collect();
    (t, truth)
}

#[test]
fn reconstruction_equals_enumeration_on_random_programs() {
    let mut checked = 0;
    let mut steals = 0;
    for policy in [Policy::WorkFirst, Policy::HelpFirst] {
        for workers in [1, 2, 3, 4, 8] {
            for seed in 0..12u64 {
                let p = Program::random(seed * 7919 + workers as u64, 60 + 20 * seed as u32, 6);
                let (t, truth) = traced_run(&p, workers, policy, 2000);
                let got = t.reconstruct(&p, 0).unwrap_or_else(|e| {
                    panic!("{policy:?}, {workers} workers, seed {seed}: {e}\n{t:#?}")
                });
                assert_eq!(
                    got, truth,
                    "{policy:?}, {workers} workers, seed {seed}: reconstruction differs"
                );
                // The trace survives its file format unchanged.
                assert_eq!(Trace::from_bytes(&t.to_bytes()).unwrap(), t);
                checked += 1;
                steals += t.steal_count();
            }
        }
    }
    assert!(checked == 120);
    // With several workers and uneven steps, thieves must have taken something.
    assert!(steals > 0, "no steals at all: the test exercised nothing");
}

#[test]
fn one_worker_has_one_phase_per_install() {
    let p = Program::random(3, 200, 6);
    let (t, truth) = traced_run(&p, 1, Policy::WorkFirst, 0);
    assert_eq!(t.phases[0].len(), 1);
    assert_eq!(t.phases[0][0].origin, Origin::Root { ordinal: 0 });
    assert_eq!(t.reconstruct(&p, 0).unwrap(), truth);
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn traced_fib(workers: usize, policy: Policy, n: u64) -> (Trace, magpie::Stats) {
    let pool = traced_pool(workers, policy);
    assert_eq!(pool.install(|| fib(n)), fib_serial(n));
    (pool.trace().unwrap(), pool.stats())
}

fn fib_serial(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// Checks what every trace must satisfy: origins name phases that exist, segments are in time
/// order and never overlap, one root per install.
fn check_shape(t: &Trace, installs: u64) {
    let mut roots = Vec::new();
    for (w, ps) in t.phases.iter().enumerate() {
        for p in ps {
            match p.origin {
                Origin::Root { ordinal } => roots.push(ordinal),
                Origin::Stolen { from, .. } | Origin::Early { from } => {
                    assert!(t.phase(from.phase).is_some(), "worker {w}: {p:?}")
                }
                Origin::Resumed { sync } => assert!(t.phase(sync.phase).is_some()),
                Origin::External => {}
            }
        }
        let segs = &t.segments[w];
        for s in segs {
            assert!(s.start_ns <= s.end_ns && (s.phase as usize) < ps.len());
        }
        for pair in segs.windows(2) {
            assert!(pair[0].end_ns <= pair[1].start_ns, "worker {w}: {pair:?}");
        }
    }
    roots.sort();
    assert_eq!(roots, (0..installs).collect::<Vec<_>>());
}

#[test]
fn adaptive_traces_identify_every_steal_but_are_not_reconstructed() {
    let (t, st) = traced_fib(3, Policy::Adaptive, 24);
    check_shape(&t, 1);
    // Every steal the pool counted started a phase that names what it took (a batch is one
    // steal of several items, so phases can only outnumber steals).
    let taken = t
        .phases
        .iter()
        .flatten()
        .filter(|p| matches!(p.origin, Origin::Stolen { .. } | Origin::Resumed { .. }))
        .count() as u64;
    assert!(
        taken >= st.steals_child + st.steals_continuation,
        "{taken} {st:?}"
    );
    let p = Program::random(1, 50, 4);
    assert_eq!(
        t.reconstruct(&p, 0).unwrap_err(),
        ReconstructError::AdaptivePolicy
    );
}

#[test]
fn traces_of_fixed_policies_have_a_sound_shape() {
    for policy in [Policy::WorkFirst, Policy::HelpFirst] {
        for workers in [2, 4] {
            let (t, _) = traced_fib(workers, policy, 22);
            check_shape(&t, 1);
        }
    }
}

#[test]
fn one_worker_storage_does_not_grow_with_tasks() {
    let (small, s1) = traced_fib(1, Policy::WorkFirst, 12);
    let (big, s2) = traced_fib(1, Policy::WorkFirst, 24);
    assert!(s2.spawns_work_first > 100 * s1.spawns_work_first);
    let (a, b) = (small.storage(), big.storage());
    // One phase and one segment either way; only the varints of times and counts grow.
    assert_eq!(small.phases[0].len(), big.phases[0].len());
    assert!(b.file_bytes[0] <= a.file_bytes[0] + 8, "{a:?} {b:?}");
    assert!(b.enumeration_per_worker > 100.0 * a.enumeration_per_worker);
}

#[test]
fn trace_to_writes_a_readable_file_when_the_pool_is_dropped() {
    let dir = std::env::temp_dir().join(format!("magpie-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.mtrace");
    let shape;
    {
        let pool = Pool::builder()
            .workers(2)
            .policy(Policy::WorkFirst)
            .trace_to(&path)
            .build()
            .unwrap();
        for _ in 0..3 {
            assert_eq!(pool.install(|| fib(20)), 6765);
        }
        shape = pool.trace().unwrap().phases.len();
    }
    let t = Trace::read_from(&mut std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!(t.workers(), shape);
    check_shape(&t, 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_trace_files_are_clean_errors() {
    use magpie::trace::TraceError;
    let (t, _) = traced_fib(2, Policy::HelpFirst, 18);
    let bytes = t.to_bytes();
    assert_eq!(Trace::from_bytes(&bytes).unwrap(), t);
    // Every truncation is an error, never a panic.
    for n in 0..bytes.len() {
        let e = Trace::from_bytes(&bytes[..n]).unwrap_err();
        assert!(
            matches!(e, TraceError::Truncated | TraceError::NotATrace),
            "cut at {n}: {e}"
        );
    }
    // Every flipped byte past the magic is an error.
    for i in 8..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        assert!(Trace::from_bytes(&b).is_err(), "flip at {i}");
    }
    let mut v = bytes.clone();
    v[8..12].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(
        Trace::from_bytes(&v).unwrap_err(),
        TraceError::Version { found: 7 }
    );
    assert!(Trace::from_bytes(&v)
        .unwrap_err()
        .to_string()
        .contains("version 7"));
    assert_eq!(
        Trace::from_bytes(b"{\"traceEvents\": []}").unwrap_err(),
        TraceError::NotATrace
    );
    let mut long = bytes.clone();
    long.push(0);
    assert!(matches!(
        Trace::from_bytes(&long).unwrap_err(),
        TraceError::Corrupt(_)
    ));
}

/// Random programs traced under contention (steps long enough that thieves take work in the
/// middle of joins and scopes, and first halves suspend while their second halves wait):
/// reconstruction from the trace alone must still equal the enumeration, and every steal and
/// resumption record must be used. `STRESS_PROGRAMS` (default 240), `STRESS_SEED` (default:
/// from the clock, printed) and `STRESS_POLICY` (`wf` or `hf`; default both) make it a longer
/// stress run: `STRESS_PROGRAMS=20000 cargo test --release --test trace contention`.
#[test]
fn reconstruction_holds_under_contention() {
    let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<u64>().ok());
    let programs = env("STRESS_PROGRAMS").unwrap_or(240);
    let base = env("STRESS_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    let only: Option<Policy> = match std::env::var("STRESS_POLICY").as_deref() {
        Ok("wf") => Some(Policy::WorkFirst),
        Ok("hf") => Some(Policy::HelpFirst),
        _ => None,
    };
    eprintln!("contention: {programs} programs from seed {base} (STRESS_SEED to repeat)");
    let mut rng = program::Rng(base | 1);
    let mut steals = 0usize;
    let mut resumptions = 0usize;
    for n in 0..programs {
        let seed = rng.next();
        let policy = only.unwrap_or(if n % 2 == 0 {
            Policy::WorkFirst
        } else {
            Policy::HelpFirst
        });
        let workers = [2usize, 3, 4, 8][rng.below(4) as usize];
        let size = 40 + rng.below(260) as u32;
        let p = Program::random(seed, size, 6);
        let (t, truth) = traced_run(&p, workers, policy, 20_000);
        steals += t.steal_count();
        resumptions += t
            .phases
            .iter()
            .flatten()
            .filter(|ph| matches!(ph.origin, Origin::Resumed { .. }))
            .count();
        let what = format!("program {n}: {policy:?}, {workers} workers, seed {seed}, size {size}");
        let got = t
            .reconstruct_sole(&p)
            .unwrap_or_else(|e| panic!("{what}: {e}\nprogram: {p:?}\n{t:#?}"));
        if got != truth {
            let bad: Vec<(usize, u32, u32)> = (0..truth.len())
                .filter(|&i| got[i] != truth[i])
                .map(|i| (i, truth[i], got[i]))
                .collect();
            panic!("{what}: (step, ran on, reconstructed) differ: {bad:?}\nprogram: {p:?}\n{t:#?}");
        }
    }
    eprintln!("contention: {programs} programs exact, {steals} steals, {resumptions} resumptions");
    assert!(
        steals > 0 && resumptions > 0,
        "no contention: the test exercised nothing"
    );
}
