//! Steal-tree tracing: reconstruction from the trace alone equals a full enumeration of which
//! worker ran each step, on random async-finish programs under both fixed policies.

use magpie::trace::{Origin, Program, Trace};
use magpie::{Policy, Pool};
use std::sync::atomic::{AtomicU32, Ordering};

/// Runs `p` traced; returns the trace and, for each step, the worker that ran it (recorded by
/// the step itself: the full enumeration).
fn traced_run(p: &Program, workers: usize, policy: Policy, spin: u32) -> (Trace, Vec<u32>) {
    let pool = Pool::builder()
        .workers(workers)
        .policy(policy)
        .trace(true)
        .build()
        .unwrap();
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
