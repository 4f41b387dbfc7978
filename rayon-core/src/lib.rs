//! rayon-core 1.13's public API, run by magpie's scheduler.
//!
//! rayon's parallel iterators, and every crate that uses rayon inside, reach their thread pool
//! only through rayon-core's public API: `join`, `join_context`, scopes, `spawn`, broadcasts,
//! pools and their builder. This crate implements that API on magpie, so that one line in a
//! program's `Cargo.toml` puts all of them on magpie's workers:
//!
//! ```toml
//! [patch.crates-io]
//! rayon-core = { path = "/path/to/magpie/rayon-core" }
//! ```
//!
//! # How each piece maps onto magpie
//!
//! * [`join`] is [`magpie::join`]. [`join_context`] tells its second closure whether it
//!   *migrated*: whether it runs on another worker than the one that called `join_context`
//!   (a thief took it); rayon's iterators split their work again when that happens. Called
//!   from outside any pool, the join runs in the global pool, and both closures count as
//!   migrated (rayon's "injected").
//! * A pool is a [`magpie::Pool`]. [`ThreadPoolBuilder`] maps rayon's settings onto magpie's
//!   [`magpie::Builder`]: the thread count (`num_threads`, then `RAYON_NUM_THREADS`, then
//!   magpie's `MAGPIE_WORKERS` and the machine's parallelism), the stack size (magpie runs each
//!   task on a stack of its own, so this is the stack every task gets), the panic handler; and
//!   it starts the workers on threads of its own making through
//!   [`magpie::Builder::build_with`], which is how the spawn handler, the thread names and the
//!   start and exit handlers reach them. Every other `MAGPIE_*` variable still applies.
//! * [`Scope`] is a [`magpie::Scope`] seen through rayon's names. [`ScopeFifo`] adds rayon's
//!   FIFO order on top of it (see the `scope` module).
//! * [`spawn`] and [`spawn_fifo`] queue the task in the pool's queue, which workers take from
//!   in the order tasks arrived: both are FIFO.
//! * The global pool is magpie's global pool. Whichever entry of this crate first needs it
//!   builds it with rayon's defaults (so `RAYON_NUM_THREADS` counts), unless
//!   [`ThreadPoolBuilder::build_global`] was called first.
//!
//! # Where it differs from rayon-core
//!
//! * A thread given to a pool with [`ThreadPoolBuilder::use_current_thread`] stops being its
//!   worker 0 when the pool is dropped (rayon's stays registered to the dropped pool).
//! * [`yield_local`] runs a task delivered to the calling worker (a broadcast call, say), not
//!   one from its deque: magpie's deque holds the other halves of the joins the caller is
//!   inside, which only those joins take back.
//! * `breadth_first` is accepted and has no effect (it is deprecated in rayon too).
//! * A stack overflow in a task is reported by magpie's guard-page handler, which names the
//!   task's stack, before the process aborts (rayon's thread dies of the signal).

#![warn(missing_docs)]

mod builder;
mod scope;
mod thread_pool;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

#[allow(deprecated)]
pub use builder::{initialize, Configuration};
pub use builder::{ThreadBuilder, ThreadPoolBuildError, ThreadPoolBuilder};
pub use magpie::{
    current_thread_has_pending_tasks, current_thread_index, yield_local, yield_now,
    BroadcastContext, Yield,
};
pub use scope::{in_place_scope, in_place_scope_fifo, scope, scope_fifo, Scope, ScopeFifo};
pub use thread_pool::ThreadPool;

/// Makes sure the global pool exists before a call from outside any pool uses it, built with
/// rayon's defaults (`RAYON_NUM_THREADS` counts) unless the program built it already.
fn ensure_global() {
    // Relaxed: a hint that saves the builder's work; the pool itself is published by magpie's
    // `OnceLock`, which every user reads with acquire.
    static READY: AtomicBool = AtomicBool::new(false);
    if READY.load(Ordering::Relaxed) {
        return;
    }
    match ThreadPoolBuilder::new().build_global() {
        Ok(()) => {}
        Err(e) if e.is_already_initialized() => {}
        Err(e) => panic!("The global thread pool has not been initialized.: {e}"),
    }
    READY.store(true, Ordering::Relaxed);
}

/// Whether the caller is one of some pool's workers; if not, the global pool is made ready for
/// the call.
#[inline]
fn on_worker_or_global() -> Option<usize> {
    let me = magpie::current_thread_index();
    if me.is_none() {
        ensure_global();
    }
    me
}

/// The most threads a pool may have: magpie's limit. A larger `num_threads` (or
/// `RAYON_NUM_THREADS`) is reduced to it, as rayon does with its own.
pub fn max_num_threads() -> usize {
    magpie::MAX_WORKERS
}

/// The worker threads of the pool the caller runs on; outside any pool, of the global pool.
pub fn current_num_threads() -> usize {
    on_worker_or_global();
    magpie::current_num_threads()
}

/// What [`join_context`] tells each of its closures.
#[derive(Debug)]
pub struct FnContext {
    migrated: bool,
    /// Not `Send`: the answer is about the thread the closure started on.
    _not_send: PhantomData<*mut ()>,
}

impl FnContext {
    #[inline]
    fn new(migrated: bool) -> FnContext {
        FnContext {
            migrated,
            _not_send: PhantomData,
        }
    }

    /// Whether the closure runs on another thread than the one that called [`join_context`]:
    /// a thief took it, or the call came from outside the pool.
    #[inline]
    pub fn migrated(&self) -> bool {
        self.migrated
    }
}

/// Runs `oper_a` and `oper_b`, potentially in parallel, and returns both results; see
/// [`magpie::join`]. A panic in either reaches the caller once both have finished. Outside any
/// pool, the join runs in the global pool and the caller blocks until it is done.
///
/// ```
/// let (a, b) = rayon_core::join(|| (1..=10).sum::<u32>(), || "ten");
/// assert_eq!((a, b), (55, "ten"));
/// ```
#[inline]
pub fn join<A, B, RA, RB>(oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    // On a worker, magpie's join with its one test; from outside, the global pool is made
    // ready (with rayon's settings) first.
    magpie::join_or_else(oper_a, oper_b, |a, b| {
        on_worker_or_global();
        magpie::join(a, b)
    })
}

/// [`join`], where each closure learns whether it migrated ([`FnContext::migrated`]).
///
/// ```
/// let pool = rayon_core::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let (a, _) = pool.install(|| rayon_core::join_context(|ctx| ctx.migrated(), |_| ()));
/// assert!(!a, "the first closure runs where join_context was called");
/// let (a, _) = rayon_core::join_context(|ctx| ctx.migrated(), |_| ());
/// assert!(a, "from outside any pool, both closures run in the global pool");
/// ```
#[inline]
pub fn join_context<A, B, RA, RB>(oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    match on_worker_or_global() {
        Some(me) => join_context_on(me, false, oper_a, oper_b),
        None => magpie::global_pool()
            .expect("the global pool was made ready above")
            .install(|| {
                let me = magpie::current_thread_index().expect("install runs on a worker");
                join_context_on(me, true, oper_a, oper_b)
            }),
    }
}

/// `join_context` on worker `me`; `injected`: the call came from outside the pool.
#[inline]
fn join_context_on<A, B, RA, RB>(me: usize, injected: bool, oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    magpie::join(
        // magpie runs the first closure on the calling fiber, which never leaves its thread.
        move || oper_a(FnContext::new(injected)),
        move || {
            let migrated = injected || magpie::current_thread_index() != Some(me);
            oper_b(FnContext::new(migrated))
        },
    )
}

/// Runs `func` in the pool the caller runs on (outside any pool, the global pool) without
/// waiting for it. A panic in it goes to the pool's panic handler; without one the process
/// aborts, as in rayon.
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// rayon_core::spawn(move || tx.send(6 * 7).unwrap());
/// assert_eq!(rx.recv().unwrap(), 42);
/// ```
pub fn spawn<F>(func: F)
where
    F: FnOnce() + Send + 'static,
{
    on_worker_or_global();
    magpie::spawn(func)
}

/// [`spawn`], in FIFO order: tasks spawned this way start in the order they were spawned (they
/// go through the pool's queue, which is FIFO; so do [`spawn`]'s).
///
/// ```
/// let pool = rayon_core::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// for i in 0..5 {
///     let tx = tx.clone();
///     pool.spawn_fifo(move || tx.send(i).unwrap());
/// }
/// assert_eq!(rx.iter().take(5).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
/// ```
pub fn spawn_fifo<F>(func: F)
where
    F: FnOnce() + Send + 'static,
{
    spawn(func)
}

/// Runs `op` once on every worker of the pool the caller runs on (outside any pool, of the
/// global pool) and returns the results in worker order; see [`magpie::broadcast`].
///
/// ```
/// let pool = rayon_core::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// let got = pool.install(|| rayon_core::broadcast(|ctx| ctx.index() * 10));
/// assert_eq!(got, [0, 10, 20]);
/// ```
pub fn broadcast<OP, R>(op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    on_worker_or_global();
    magpie::broadcast(op)
}

/// Runs `op` once on every worker of the pool the caller runs on (outside any pool, of the
/// global pool) without waiting; see [`magpie::spawn_broadcast`].
pub fn spawn_broadcast<OP>(op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    on_worker_or_global();
    magpie::spawn_broadcast(op)
}
