//! magpie beyond one machine: distributed task collections, after Lifflander's thesis, Ch. 5.
//!
//! This crate holds the parts of the distributed runtime that are plain algorithms, usable
//! in-process and by the MPI transport alike:
//!
//! - [`balance`]: the persistence-based balancers (centralized, hierarchical), as functions from
//!   measured per-rank task loads to a new placement.
//! - [`deque`]: the split deque, lock-free: the owner's local part needs no atomics, thieves
//!   claim the older half of the shared part with one compare-and-swap.
//! - [`termination`]: termination detection by waves over a spanning tree, as a state machine
//!   the transport feeds with messages.
//! - [`collection`]: the task collection (push, process, restore) and its five strategies,
//!   over any [`collection::Comm`]; [`collection::local`] runs ranks as threads.
//! - [`kernels`]: what a collection runs, each answer checked: uts, and the synthetic iterative
//!   hf and tce.
//! - [`sim`]: the same collection at thousands of virtual ranks, in simulated time: the real
//!   deque, detector, victim choice and balancers under a calibrated cost model.
//! - [`timeline`]: per-rank utilisation timelines (running tasks, stealing, idle) and their SVG.
//!
//! With the `mpi` feature (rsmpi over the system's Open MPI; `scripts/install-mpi.sh`):
//!
//! - `launch`: starting MPI with the settings the one-sided operations need.
//! - `rma`: the split deque's memory in an MPI window, so thieves steal with passive-target
//!   one-sided operations.
#![warn(missing_docs)]

pub mod balance;
pub mod collection;
pub mod deque;
#[cfg(not(loom))]
pub mod kernels;
#[cfg(feature = "mpi")]
pub mod launch;
#[cfg(feature = "mpi")]
pub mod rma;
#[cfg(not(loom))]
pub mod sim;
mod sync;
pub mod termination;
#[cfg(test)]
mod test_rng;
pub mod timeline;
