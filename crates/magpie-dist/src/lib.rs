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
#![warn(missing_docs)]

pub mod balance;
pub mod deque;
mod sync;
pub mod termination;
