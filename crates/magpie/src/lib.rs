//! magpie: a work-stealing task-parallel runtime.
//!
//! `join` and `scope` work like rayon's; the spawning policy is SLAW's: work-first, help-first, or
//! adaptive per spawn with bounded stack and heap.
//!
//! ```
//! let pool = magpie::Pool::builder().workers(2).policy(magpie::Policy::Adaptive).build()?;
//! fn fib(n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
//!     a + b
//! }
//! let total = pool.install(|| {
//!     let mut seen = vec![0u64; 8];
//!     magpie::scope(|s| {
//!         for (i, slot) in seen.iter_mut().enumerate() {
//!             s.spawn(move |_| *slot = fib(i as u64 + 10));
//!         }
//!     });
//!     seen.iter().sum::<u64>()
//! });
//! assert_eq!(total, (10..18).map(|n| { let (mut a, mut b) = (0u64, 1u64); for _ in 0..n { (a, b) = (b, a + b); } a }).sum::<u64>());
//! println!("{:?}", pool.stats());
//! # Ok::<(), magpie::Error>(())
//! ```
//!
//! See docs/DESIGN.md for the design: split deques, fibers for suspended tasks and work-first
//! continuations, and the sleep protocol.
//!
//! # What the compiler checks, and what magpie adds
//!
//! A closure given to [`join`] or [`Scope::spawn`] may run on another worker thread, so it
//! must be `Send`, and so must what it returns; a value that is not `Send` cannot go in:
//!
//! ```compile_fail,E0277
//! let rc = std::rc::Rc::new(1);
//! magpie::join(move || *rc + 1, || 2);
//! ```
//!
//! ```compile_fail,E0277
//! magpie::join(|| std::rc::Rc::new(1), || 2);
//! ```
//!
//! ```compile_fail,E0277
//! let rc = std::rc::Rc::new(1);
//! magpie::scope(|s| s.spawn(move |_| drop(rc)));
//! ```
//!
//! A spawned task may borrow only what outlives its scope: not a local of the body, nor of the
//! loop that spawns it:
//!
//! ```compile_fail
//! let mut out = Vec::new();
//! magpie::scope(|s| {
//!     let local = 5;
//!     s.spawn(|_| out.push(&local));
//! });
//! ```
//!
//! ```compile_fail,E0373
//! magpie::scope(|s| {
//!     for i in 0..3 {
//!         s.spawn(|_| println!("{i}"));
//!     }
//! });
//! ```
//!
//! The compiler does not look at the locals *inside* a closure: a task may make an `Rc`, or
//! borrow a `thread_local!`, and hold it across a nested `join` or `scope`. magpie makes that
//! sound by never moving a stack that has started running to another thread: a task suspended
//! at a sync point is resumed by the worker that suspended it, and thieves take only closures
//! that have not started. The code after a sync point runs on the thread that ran the code
//! before it ([`Builder::allow_migration`] is the `unsafe` opt-out):
//!
//! ```
//! use std::rc::Rc;
//! let pool = magpie::Pool::builder().workers(4).build()?;
//! fn sum(v: &[u64]) -> u64 {
//!     if v.len() < 64 { return v.iter().sum(); }
//!     let here = Rc::new(std::thread::current().id());   // not Send, held across the join
//!     let (l, r) = v.split_at(v.len() / 2);
//!     let (a, b) = magpie::join(|| sum(l), || sum(r));
//!     assert_eq!(*here, std::thread::current().id());
//!     a + b
//! }
//! let v: Vec<u64> = (0..100_000).collect();
//! assert_eq!(pool.install(|| sum(&v)), 100_000 * 99_999 / 2);
//! # Ok::<(), magpie::Error>(())
//! ```

#![warn(missing_docs)]
// Every unsafe operation sits in its own `unsafe` block with the argument for it, also inside
// an `unsafe fn` (whose contract is the caller's side of that argument): the workspace's lints
// deny both lapses (Cargo.toml, `[workspace.lints]`).
// Under `--cfg loom` only the model-checked structures are built (for their loom tests); the
// runtime that uses them is not, so they look unused there.
#![cfg_attr(loom, allow(dead_code))]

#[path = "core/deque.rs"]
pub(crate) mod deque;
#[path = "core/inbox.rs"]
pub(crate) mod inbox;
#[path = "core/latch.rs"]
pub(crate) mod latch;
#[cfg(all(test, loom))]
#[path = "core/return_barrier_model.rs"]
mod return_barrier_model;
#[path = "core/sleep.rs"]
pub(crate) mod sleep;
#[path = "core/sync.rs"]
pub(crate) mod sync;

#[cfg(not(loom))]
#[path = "core/borrowed_seat.rs"]
mod borrowed_seat;
#[cfg(not(loom))]
mod builder;
#[cfg(not(loom))]
#[path = "ext/cachemodel.rs"]
pub mod cachemodel;
#[cfg(not(loom))]
#[path = "core/caller_worker/mod.rs"]
mod caller_worker;
// Under loom only a lent worker's closing protocol is built from `caller_worker`, for its
// model test.
#[cfg(not(loom))]
#[path = "core/config.rs"]
mod config;
#[cfg(not(loom))]
mod container;
#[cfg(not(loom))]
#[path = "core/donate.rs"]
mod donate;
#[cfg(not(loom))]
#[path = "ext/dws/mod.rs"]
pub mod dws;
#[cfg(not(loom))]
#[path = "core/error.rs"]
mod error;
#[cfg(not(loom))]
#[path = "core/fiber/mod.rs"]
mod fiber;
#[cfg(not(loom))]
#[path = "core/hooks.rs"]
mod hooks;
#[cfg(not(loom))]
#[path = "core/idle.rs"]
mod idle;
#[cfg(not(loom))]
#[path = "core/job.rs"]
mod job;
#[cfg(not(loom))]
#[path = "core/join.rs"]
mod join;
#[path = "core/leapfrog.rs"]
mod leapfrog;
#[cfg(all(test, loom))]
#[path = "core/leapfrog_model.rs"]
mod leapfrog_model;
#[cfg(loom)]
#[path = "core/caller_worker/closing.rs"]
mod lent_closing;
#[cfg(not(loom))]
#[path = "core/main_loop.rs"]
mod main_loop;
#[cfg(not(loom))]
#[path = "core/overheads.rs"]
mod overheads;
#[cfg(not(loom))]
#[path = "core/owed.rs"]
mod owed;
#[cfg(not(loom))]
#[path = "ext/places.rs"]
mod places;
#[cfg(not(loom))]
#[path = "core/policy.rs"]
mod policy;
#[cfg(not(loom))]
mod pool;
#[cfg(not(loom))]
#[path = "core/position.rs"]
mod position;
#[cfg(not(loom))]
#[path = "core/promote.rs"]
mod promote;
#[cfg(not(loom))]
#[path = "ext/race/mod.rs"]
pub mod race;
#[cfg(not(loom))]
#[path = "core/registry.rs"]
mod registry;
#[cfg(not(loom))]
#[path = "ext/schedule/mod.rs"]
pub mod schedule;
#[cfg(not(loom))]
#[path = "core/scope.rs"]
mod scope;
// Under loom, DWS's core table slot protocol is built from `dws`, for its model tests.
#[cfg(loom)]
#[path = "ext/dws/slot.rs"]
mod slot;
// Likewise a schedule region's held queue (donations), for its model tests.
#[cfg(loom)]
#[path = "ext/schedule/held.rs"]
mod held;
#[cfg(not(loom))]
pub mod sort;
// And a schedule region's stall rule, for its model test.
#[cfg(loom)]
#[path = "ext/schedule/stall.rs"]
mod stall;
#[cfg(not(loom))]
#[path = "core/stats.rs"]
mod stats;
#[cfg(not(loom))]
#[path = "core/steal.rs"]
mod steal;
#[cfg(not(loom))]
#[path = "core/sync_point.rs"]
mod sync_point;
#[cfg(not(loom))]
#[path = "core/thief.rs"]
mod thief;
#[cfg(not(loom))]
pub mod thread_pool;
#[cfg(not(loom))]
#[path = "core/trace_points.rs"]
mod trace_points;

/// `docs/RAYON.md`, the page on moving from rayon, whose examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/RAYON.md")]
pub struct RayonMigrationPage;

/// The README, whose example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct Readme;

#[cfg(not(loom))]
#[path = "ext/topology.rs"]
pub mod topology;
#[cfg(not(loom))]
#[path = "ext/trace/mod.rs"]
pub mod trace;
#[cfg(not(loom))]
#[path = "core/worker.rs"]
mod worker;

#[cfg(not(loom))]
pub use builder::{
    Builder, DEFAULT_MAX_FIBERS, DEFAULT_SHARE_PERIOD, DEFAULT_STACK_SIZE, MAX_WORKERS,
};
#[cfg(not(loom))]
pub use donate::join_designated;
#[cfg(not(loom))]
pub use error::Error;
#[cfg(not(loom))]
pub use join::{join, join_or_else};
#[cfg(not(loom))]
pub use places::{bi_tier, boundary_level, current_places, current_squads, place_index};
#[cfg(not(loom))]
pub use policy::Policy;
#[cfg(not(loom))]
pub use pool::{global_pool, global_pool_exists, set_global_pool, Pool};
#[cfg(not(loom))]
pub use registry::WorkerStart;
#[cfg(not(loom))]
pub use scope::{in_place_scope, scope, Scope};
#[cfg(not(loom))]
pub use stats::Stats;
#[cfg(not(loom))]
pub use thread_pool::{
    broadcast, current_num_threads, current_thread_has_pending_tasks, current_thread_index, spawn,
    spawn_broadcast, yield_local, yield_now, BroadcastContext, ThreadPool, ThreadPoolBuildError,
    ThreadPoolBuilder, Yield,
};
#[cfg(not(loom))]
pub use topology::{Detector, Topology, Victims};

/// Whether the caller runs on one of a pool's workers, inside a task. A thread lent to a pool
/// (`Builder::use_current_thread`) is not, between its calls, though
/// [`current_thread_index`] says `Some(0)` there.
#[cfg(not(loom))]
#[inline]
pub fn on_worker() -> bool {
    // Inlined (a thread-local load in the caller): the answer is read at once, never kept across
    // a suspension, so the reuse of a thread-local address `current_at_entry` warns of cannot
    // matter (and a fiber never changes threads anyway).
    worker::current_at_entry().is_some()
}

/// Whether a thief has asked the calling worker for work since it last published some: a hint
/// for code that splits its work lazily (split now, and the thief takes the other half; see the
/// split deque's *wanted* flag in docs/DESIGN.md). Always `false` off a worker, and on a pool of
/// one worker. One relaxed load.
#[cfg(not(loom))]
#[inline]
pub fn work_wanted() -> bool {
    worker::current().is_some_and(|wt| wt.core.deque.wanted())
}

/// The index of the worker running the caller, if the caller runs on a worker; `Some(0)` also
/// on a thread lent to a live pool as its worker 0 (`Builder::use_current_thread`), between
/// its calls.
#[cfg(not(loom))]
#[inline]
pub fn worker_index() -> Option<usize> {
    // Inlined for rayon-core/, which asks on every join: as in `on_worker`.
    match worker::current_at_entry() {
        Some(w) => Some(w.core.index),
        None => lent_index(),
    }
}

/// `worker_index` off a worker: `Some(0)` on a thread lent to a live pool.
#[cfg(not(loom))]
#[cold]
#[inline(never)]
fn lent_index() -> Option<usize> {
    caller_worker::registry().map(|_| 0)
}
