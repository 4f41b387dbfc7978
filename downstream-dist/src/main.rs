//! A user's first task collection, with no MPI: four ranks as threads of this process run a
//! divide-and-conquer sum that spawns as it goes, three iterations under retentive stealing,
//! and every rank checks the total against the formula.

use magpie_dist::collection::{local::Cluster, Comm, Strategy, TaskCollection};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// The numbers `lo..hi`, to be summed.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Range {
    lo: u64,
    hi: u64,
}

fn main() -> ExitCode {
    const N: u64 = 1 << 20;
    let ranks = Cluster::ranks::<Range>(4, 1 << 10);
    let totals: Vec<Vec<u64>> = std::thread::scope(|s| {
        let threads: Vec<_> = ranks
            .into_iter()
            .map(|comm| {
                s.spawn(move || {
                    let mut tc = TaskCollection::new(comm, Strategy::StealRetentive);
                    if tc.comm().rank() == 0 {
                        tc.push(Range { lo: 0, hi: N });
                    }
                    let mut totals = Vec::new();
                    for _ in 0..3 {
                        let mut mine = 0u64;
                        tc.process(|r, spawner| {
                            if r.hi - r.lo <= 1024 {
                                mine += (r.lo..r.hi).sum::<u64>();
                            } else {
                                let mid = (r.lo + r.hi) / 2;
                                spawner.spawn(Range { lo: r.lo, hi: mid });
                                spawner.spawn(Range { lo: mid, hi: r.hi });
                            }
                        });
                        totals.push(tc.comm().all_gather(mine).into_iter().sum());
                        tc.restore();
                    }
                    totals
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("a rank panicked")).collect()
    });
    let want = N * (N - 1) / 2;
    let ok = totals.iter().flatten().all(|&t| t == want);
    println!(
        "magpie-dist downstream: sum of 0..{N} on 4 ranks, 3 iterations: {:?} (expected {want}), {}",
        totals[0],
        if ok { "verified" } else { "WRONG" }
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
