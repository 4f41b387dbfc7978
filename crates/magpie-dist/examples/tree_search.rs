//! An irregular tree search that spawns as it goes: the N-queens problem as a task collection
//! over MPI ranks. Each task is a partial board; running it spawns one task per safe square on
//! the next row, so the tree's shape is known only as it is searched, and idle ranks steal
//! the older half of a busy rank's tasks. Every rank counts the complete boards it found; the
//! counts are summed over the ranks and checked against the known answer.
//!
//! ```text
//! cargo build --release -p magpie-dist --features mpi --example tree_search
//! mpirun -n 3 target/release/examples/tree_search [N]        # N from 4 to 14, default 10
//! ```
//!
//! (As root, or with more ranks than cores, Open MPI wants `OMPI_ALLOW_RUN_AS_ROOT=1
//! OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` and `OMPI_MCA_rmaps_base_oversubscribe=1` in the
//! environment; see docs/DISTRIBUTED.md.)

use magpie_dist::collection::{Comm, Entry, Strategy, TaskCollection};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// A partial board: queens on rows `0..row`, as the columns and the two diagonals they attack.
/// Plain data (`Copy`, serialisable), so a thief on another rank can take it.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Board {
    n: u8,
    row: u8,
    cols: u32,
    diag: u32,
    anti: u32,
}

/// Solutions of N-queens for N = 0..=14 (OEIS A000170), to check the answer.
const KNOWN: [u64; 15] = [
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596,
];

/// Searches the N-queens tree on the ranks of `comm`; every rank returns the total number of
/// solutions.
fn solutions<C: Comm<Entry<Board>>>(comm: C, n: u8) -> u64 {
    let mut tc = TaskCollection::new(comm, Strategy::Steal);
    if tc.comm().rank() == 0 {
        tc.push(Board {
            n,
            row: 0,
            cols: 0,
            diag: 0,
            anti: 0,
        });
    }
    let mut found = 0u64;
    tc.process(|b, spawner| {
        if b.row == b.n {
            found += 1;
            return;
        }
        let full = (1u32 << b.n) - 1;
        let mut free = full & !(b.cols | b.diag | b.anti);
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free &= free - 1;
            spawner.spawn(Board {
                n: b.n,
                row: b.row + 1,
                cols: b.cols | bit,
                diag: ((b.diag | bit) << 1) & full,
                anti: (b.anti | bit) >> 1,
            });
        }
    });
    tc.comm().all_gather(found).into_iter().sum()
}

fn main() -> ExitCode {
    let n: u8 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 10,
        Some(Ok(n)) if (4..=14).contains(&n) => n,
        _ => {
            eprintln!("usage: tree_search [N]   (N from 4 to 14)");
            return ExitCode::from(2);
        }
    };
    let Some(universe) = magpie_dist::launch::init() else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let (rank, ranks) = {
        use mpi::traits::Communicator;
        (world.rank(), world.size())
    };
    // Each rank's deque holds up to 4096 boards; a task a full deque cannot take runs on the
    // rank that spawned it, so the capacity bounds memory, not the search.
    let comm = magpie_dist::rma::World::new(world, 1 << 12);
    let total = solutions(comm, n);
    let expected = KNOWN[n as usize];
    if rank == 0 {
        let verdict = if total == expected {
            "verified"
        } else {
            "WRONG"
        };
        println!(
            "tree_search: {n}-queens on {ranks} ranks: {total} solutions (known: {expected}), {verdict}"
        );
    }
    if total == expected {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
