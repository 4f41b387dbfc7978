//! magpie beyond one machine: distributed task collections, after Lifflander's thesis, Ch. 5.
//!
//! The library a distributed program builds on; it depends on serde and, with the `mpi`
//! feature, on rsmpi, nothing else. The benchmark kernels, the simulator and the `magpie-dist`
//! tool that runs them live beside magpie's benchmark suite (crates/magpie-dist-bench).
//!
//! - [`balance`]: the persistence-based balancers (centralized, hierarchical), as functions from
//!   measured per-rank task loads to a new placement.
//! - [`deque`]: the split deque, lock-free: the owner's local part needs no atomics, thieves
//!   claim the older half of the shared part with one compare-and-swap.
//! - [`termination`]: termination detection by waves over a spanning tree, as a state machine
//!   the transport feeds with messages.
//! - [`collection`]: the task collection (push, process, restore) and its five strategies,
//!   over any [`collection::Comm`]; [`collection::local`] runs ranks as threads.
//! - [`timeline`]: per-rank utilisation timelines (running tasks, stealing, idle).
//! - [`cpu_clock`]: the thread's CPU time, which runs of tasks are clocked in for the
//!   balancers' measurements and the reports' CPU efficiency.
//!
//! With the `mpi` feature (rsmpi over the system's Open MPI; `scripts/install-mpi.sh`):
//!
//! - `launch`: starting MPI with the settings the one-sided operations need.
//! - `rma`: the split deque's memory in an MPI window, so thieves steal with passive-target
//!   one-sided operations; a watchdog ([`watchdog`]) ends a job one of whose ranks stopped.
#![warn(missing_docs)]

pub mod balance;
pub mod collection;
pub mod cpu_clock;
pub mod deque;
#[cfg(feature = "mpi")]
pub mod launch;
#[cfg(feature = "mpi")]
pub mod rma;
mod sync;
pub mod termination;
#[cfg(test)]
mod test_rng;
pub mod timeline;
pub mod watchdog;
