//! An iterative bag of tasks whose costs persist between iterations, the case the thesis's
//! retentive stealing and persistence-based balancers are for (Ch. 5). A fixed set of tasks of
//! very unequal cost is seeded unevenly (rank 0 gets the expensive ones) and run again every
//! iteration, as a simulation's steps would be. Under retentive stealing each rank keeps what
//! it ran, so the work stays where stealing put it; under a persistence-based balancer the
//! ranks measure their tasks, and between iterations the balancer places them by those
//! measurements. Each iteration's results are summed over the ranks and checked against the
//! same sum computed on one rank.
//!
//! ```text
//! cargo build --release -p magpie-dist --features mpi --example bag_of_tasks
//! mpirun -n 3 target/release/examples/bag_of_tasks [ITERATIONS]     # default 4
//! ```

use magpie_dist::collection::{Comm, Entry, Strategy, TaskCollection};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// Tasks in the bag.
const TASKS: u32 = 600;

/// One task: which one it is; its cost follows from it, the same every iteration.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Task {
    id: u32,
}

impl Task {
    /// Units of work: one task in twelve is fifty times heavier.
    fn units(self) -> u64 {
        if self.id.is_multiple_of(12) {
            1000
        } else {
            20
        }
    }

    /// The task's result: a checksum of its units of work (a xorshift per unit, so the work
    /// cannot be skipped).
    fn run(self) -> u64 {
        let mut x = 0x9e37_79b9_7f4a_7c15 ^ u64::from(self.id);
        for _ in 0..self.units() * 200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        x
    }
}

/// The bag's expected sum, on one rank.
fn expected() -> u64 {
    (0..TASKS).fold(0u64, |s, id| s.wrapping_add(Task { id }.run()))
}

/// Runs the bag `iterations` times under `strategy` on the ranks of `comm`; returns, per
/// iteration, the sum of the results over every rank, the tasks run and the efficiency.
fn run_bag<C: Comm<Entry<Task>>>(
    comm: C,
    strategy: Strategy,
    iterations: u32,
) -> Vec<(u64, u64, f64)> {
    let mut tc = TaskCollection::new(comm, strategy);
    let (me, ranks) = (tc.comm().rank() as u32, tc.comm().size() as u32);
    // Uneven on purpose: rank 0 gets every heavy task, the others share the light ones.
    for id in (0..TASKS).filter(|&id| {
        let heavy = id.is_multiple_of(12);
        (heavy && me == 0) || (!heavy && (ranks == 1 || id % (ranks - 1).max(1) + 1 == me))
    }) {
        tc.push(Task { id });
    }
    let mut out = Vec::new();
    for _ in 0..iterations {
        let mut sum = 0u64;
        let report = tc.process(|t, _spawner| sum = sum.wrapping_add(t.run()));
        let total = tc
            .comm()
            .all_gather(sum)
            .into_iter()
            .fold(0u64, u64::wrapping_add);
        out.push((total, report.tasks(), report.efficiency()));
        tc.restore();
    }
    out
}

fn main() -> ExitCode {
    let iterations: u32 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 4,
        Some(Ok(k)) if k > 0 => k,
        _ => {
            eprintln!("usage: bag_of_tasks [ITERATIONS]   (at least 1)");
            return ExitCode::from(2);
        }
    };
    let Some(universe) = magpie_dist::launch::init() else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    use mpi::traits::Communicator;
    let (rank, ranks) = (world.rank(), world.size());
    let want = expected();
    let mut ok = true;
    for strategy in [Strategy::StealRetentive, Strategy::PlbCentralized] {
        // A communicator of its own for each collection (its deques live in an MPI window).
        let comm = magpie_dist::rma::World::new(world.duplicate(), 1 << 10);
        for (i, (sum, tasks, eff)) in run_bag(comm, strategy, iterations).into_iter().enumerate() {
            let good = sum == want && tasks == u64::from(TASKS);
            ok &= good;
            if rank == 0 {
                println!(
                    "bag_of_tasks: {} on {ranks} ranks, iteration {i}: {tasks} tasks, \
                     efficiency {eff:.2}, sum {sum:#x} {}",
                    strategy.name(),
                    if good { "verified" } else { "WRONG" }
                );
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
