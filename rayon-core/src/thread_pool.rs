//! [`ThreadPool`]: a [`magpie::ThreadPool`] with rayon's methods and rayon's drop.
//!
//! Dropping a rayon pool does not wait for the tasks spawned on it: they still run, and the
//! threads end after them. magpie's pool waits in its drop instead, so when tasks are still
//! pending, this pool hands the magpie pool to a thread of its own that waits there. Without
//! pending tasks the drop stops the workers at once (magpie's drop handles the case of a pool
//! dropped by one of its own tasks).

use crate::scope::{Scope, ScopeFifo};
use crate::{BroadcastContext, Yield};
use std::fmt;

/// A pool of worker threads, run by magpie's scheduler.
///
/// ```
/// let pool = rayon_core::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// assert_eq!(pool.current_num_threads(), 3);
/// let (a, b) = pool.join(|| 6 * 7, || pool.current_thread_index().is_some());
/// assert_eq!((a, b), (42, true));
/// ```
pub struct ThreadPool {
    /// `None` only while being dropped.
    inner: Option<magpie::ThreadPool>,
}

impl ThreadPool {
    pub(crate) fn from_pool(pool: magpie::Pool) -> ThreadPool {
        ThreadPool {
            inner: Some(pool.into()),
        }
    }

    #[inline]
    fn inner(&self) -> &magpie::ThreadPool {
        self.inner.as_ref().expect("a pool is whole until dropped")
    }

    /// Whether the caller is one of this pool's workers.
    fn is_current(&self) -> bool {
        self.inner().current_thread_index().is_some()
    }

    /// rayon's older constructor.
    #[deprecated(note = "use `ThreadPoolBuilder::build`")]
    #[allow(deprecated)]
    pub fn new(
        configuration: crate::Configuration,
    ) -> Result<ThreadPool, Box<dyn std::error::Error>> {
        configuration.build()
    }

    /// Runs `op` on one of this pool's workers and returns its result; inside it, `join`,
    /// `scope`, `spawn` and the parallel iterators use this pool. A panic in `op` resumes here.
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.inner().install(op)
    }

    /// Runs `op` once on every worker of this pool; results in worker order.
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        self.inner().broadcast(op)
    }

    /// The pool's worker threads.
    pub fn current_num_threads(&self) -> usize {
        self.inner().current_num_threads()
    }

    /// The index of the worker running the caller, if it is one of this pool's.
    pub fn current_thread_index(&self) -> Option<usize> {
        self.inner().current_thread_index()
    }

    /// Whether the calling worker of this pool has queued work it has not started; `None` if
    /// the caller is not one of this pool's workers.
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        self.is_current()
            .then(magpie::current_thread_has_pending_tasks)
            .flatten()
    }

    /// [`join`](crate::join) in this pool.
    pub fn join<A, B, RA, RB>(&self, oper_a: A, oper_b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.install(|| crate::join(oper_a, oper_b))
    }

    /// [`scope`](crate::scope) in this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| crate::scope(op))
    }

    /// [`scope_fifo`](crate::scope_fifo) in this pool.
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| crate::scope_fifo(op))
    }

    /// A scope of this pool whose body runs on the calling thread (see
    /// [`in_place_scope`](crate::in_place_scope)).
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        self.inner().in_place_scope(|s| op(Scope::from_magpie(s)))
    }

    /// A FIFO scope of this pool whose body runs on the calling thread.
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R,
    {
        crate::scope::in_place_scope_fifo_in(self.inner(), op)
    }

    /// Runs `op` in this pool without waiting for it; see [`spawn`](crate::spawn).
    pub fn spawn<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.inner().spawn(op)
    }

    /// [`spawn`](Self::spawn) in FIFO order (this pool's queue is FIFO).
    pub fn spawn_fifo<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.inner().spawn(op)
    }

    /// Runs `op` once on every worker of this pool without waiting.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        self.inner().spawn_broadcast(op)
    }

    /// [`yield_now`](crate::yield_now) if the caller is one of this pool's workers, else `None`.
    pub fn yield_now(&self) -> Option<Yield> {
        self.is_current().then(magpie::yield_now).flatten()
    }

    /// [`yield_local`](crate::yield_local) if the caller is one of this pool's workers, else
    /// `None`.
    pub fn yield_local(&self) -> Option<Yield> {
        self.is_current().then(magpie::yield_local).flatten()
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        let Some(pool) = self.inner.take() else {
            return;
        };
        if pool.as_pool().pending_spawns() == 0 {
            drop(pool);
            return;
        }
        // Tasks still pending: rayon's drop returns at once and lets them run. magpie's waits
        // for them, so it happens on a thread of its own.
        let waiter = std::thread::Builder::new()
            .name("rayon-core-drop".into())
            .spawn(move || drop(pool));
        if let Err(e) = waiter {
            // No thread for it: the tasks still run, and this drop waits for them instead.
            eprintln!("rayon-core (magpie): cannot start a thread to drop a pool ({e}); waiting for its spawned tasks here");
        }
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("num_threads", &self.current_num_threads())
            .field("pool", self.inner().as_pool())
            .finish()
    }
}
