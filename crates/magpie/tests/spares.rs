//! Spare fibers past the 32 a worker keeps whole are trimmed (their dead stack pages given back
//! to the OS) and reused.
//!
//! A left-deep chain of joins whose leaves thieves take suspends many fibers on one worker at
//! once: at each level on the way back up, the leaf may still be running elsewhere. When they
//! are resumed, the loop fibers they switch from come back as spares, past the 32 kept whole,
//! so they are trimmed, then reused by the next rounds in the same pool. A trim that reached a
//! live frame would corrupt a sum or crash the test. Every round's sum is checked against the
//! serial one; `cargo test -p magpie --test spares -- --nocapture` prints what each pool did.

// These exercise the runtime, which is not built under `--cfg loom` (see lib.rs).
#![cfg(not(loom))]

use magpie::{join, Policy, Pool};
use std::hint::black_box;

/// A leaf of a few microseconds' arithmetic.
fn leaf(i: u64) -> u64 {
    let mut x = i;
    for _ in 0..400 {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x >> 60
}

fn chain(n: u64) -> u64 {
    if n == 0 {
        return leaf(0);
    }
    let (a, b) = join(|| chain(n - 1), || leaf(n));
    a + b
}

#[test]
fn left_deep_chains_reuse_trimmed_spares_and_keep_their_sums() {
    const N: u64 = 600;
    let want: u64 = (0..=N).map(leaf).sum();
    for (workers, policy) in [
        (2, Policy::HelpFirst),
        (2, Policy::Adaptive),
        (4, Policy::Adaptive),
    ] {
        let pool = Pool::builder()
            .workers(workers)
            .policy(policy)
            .build()
            .unwrap();
        for round in 0..15 {
            assert_eq!(
                pool.install(|| chain(N)),
                want,
                "round {round}, {workers} workers, {policy}"
            );
        }
        let s = pool.stats();
        println!(
            "{workers} workers, {policy}: {} steals, {} suspensions, {} fibers created, {} trimmed",
            s.steals_child + s.steals_continuation,
            s.suspensions,
            s.fibers_created,
            s.fibers_trimmed
        );
    }
}
