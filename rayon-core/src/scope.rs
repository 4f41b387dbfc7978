//! Scopes: [`Scope`] is a [`magpie::Scope`] under rayon's names; [`ScopeFifo`] adds rayon's
//! FIFO order.
//!
//! # FIFO order on a LIFO scope
//!
//! A magpie worker runs the tasks it spawned newest first, as rayon's do. A FIFO scope asks
//! that the tasks one thread spawns start in the order it spawned them. The scope keeps one
//! queue of task bodies per worker (and one for threads outside the pool). `spawn_fifo` puts
//! the body at the back of the spawning thread's queue, then spawns an ordinary magpie task
//! that knows only which queue it belongs to: whenever it runs, on whichever worker, it takes
//! the body at the *front* of that queue. Each spawn adds one body and one task, and each task
//! removes one body, so every body runs exactly once; and since tasks take bodies from the front,
//! a thread's bodies start in the order it spawned them, whichever of its tasks runs first.
//!
//! The queues live in the frame of the call that opened the scope, which returns only after
//! every task of the scope has finished; tasks find them through a pointer (see `SendPtr`).

use crate::BroadcastContext;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;

/// A scope: tasks spawned in it may borrow what outlives it, and the call that opened it
/// returns only when they have all finished.
///
/// ```
/// let mut v = vec![0; 4];
/// rayon_core::scope(|s| {
///     for (i, x) in v.iter_mut().enumerate() {
///         s.spawn(move |_| *x = i * i);
///     }
/// });
/// assert_eq!(v, [0, 1, 4, 9]);
/// ```
#[repr(transparent)]
pub struct Scope<'scope> {
    inner: magpie::Scope<'scope>,
}

impl<'scope> Scope<'scope> {
    /// rayon's view of a magpie scope.
    #[inline]
    pub(crate) fn from_magpie<'a>(s: &'a magpie::Scope<'scope>) -> &'a Scope<'scope> {
        // SAFETY: `Scope` is `repr(transparent)` over `magpie::Scope`, so the two have the same
        // layout and the reference may be reinterpreted; the lifetime is kept.
        unsafe { &*(s as *const magpie::Scope<'scope> as *const Scope<'scope>) }
    }

    /// Spawns `body` into the scope.
    #[inline]
    pub fn spawn<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.inner.spawn(move |s| body(Scope::from_magpie(s)))
    }

    /// Runs `body` once on every worker of the scope's pool, as tasks of the scope.
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&Scope<'scope>, BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        self.inner
            .spawn_broadcast(move |s, ctx| body(Scope::from_magpie(s), ctx))
    }
}

impl fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

/// Opens a scope, runs `op` in it, and returns when `op` and every task spawned in the scope
/// have finished; a panic in any of them reaches the caller after that. Outside any pool, it
/// runs in the global pool.
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    crate::on_worker_or_global();
    magpie::scope(|s| op(Scope::from_magpie(s)))
}

/// [`scope`], with `op` run on the calling thread whatever it is (outside any pool, the
/// scope's tasks run in the global pool while the caller waits).
///
/// ```
/// let here = std::rc::Rc::new(1); // not Send: in_place_scope keeps `op` on this thread
/// let mut total = 0;
/// rayon_core::in_place_scope(|s| {
///     s.spawn(|_| total = 41);
///     assert_eq!(*here, 1);
/// });
/// assert_eq!(total + *here, 42);
/// ```
pub fn in_place_scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    crate::on_worker_or_global();
    magpie::in_place_scope(|s| op(Scope::from_magpie(s)))
}

/// A task body waiting in a FIFO scope's queue.
type FifoJob<'scope> = Box<dyn FnOnce(&ScopeFifo<'scope>) + Send + 'scope>;

/// A FIFO scope's queues: one per worker of its pool, and a last one for other threads.
struct Queues<'scope> {
    queues: Box<[Mutex<VecDeque<FifoJob<'scope>>>]>,
}

impl<'scope> Queues<'scope> {
    fn new(workers: usize) -> Queues<'scope> {
        Queues {
            queues: (0..=workers).map(|_| Mutex::new(VecDeque::new())).collect(),
        }
    }

    /// The spawning thread's queue: its worker's, or the last one for a thread that is not a
    /// worker of a pool this large (any queue gives each body exactly one task; only the order
    /// is per queue).
    fn mine(&self) -> usize {
        let other = self.queues.len() - 1;
        magpie::current_thread_index().map_or(other, |i| i.min(other))
    }

    fn push(&self, q: usize, job: FifoJob<'scope>) {
        lock(&self.queues[q]).push_back(job);
    }

    fn pop(&self, q: usize) -> FifoJob<'scope> {
        lock(&self.queues[q])
            .pop_front()
            .expect("a FIFO scope's task finds the body its spawn queued")
    }
}

/// A queue's lock; a panic never happens while it is held, but the lock survives one anyway.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A pointer to a FIFO scope's queues, carried by its tasks.
#[derive(Clone, Copy)]
struct SendPtr<'scope>(*const Queues<'scope>);

// SAFETY: `Queues` is `Sync` (mutexes around `Send` bodies), so a pointer to it may be used
// from any thread; and the queues outlive every task that carries one (see `scope_fifo`).
unsafe impl Send for SendPtr<'_> {}
// SAFETY: as for `Send`: the pointer is only read.
unsafe impl Sync for SendPtr<'_> {}

impl<'scope> SendPtr<'scope> {
    /// The FIFO view of magpie scope `s`, whose queues these are.
    fn fifo(self, s: &magpie::Scope<'scope>) -> ScopeFifo<'scope> {
        ScopeFifo {
            scope: s,
            queues: self.0,
        }
    }
}

/// A FIFO scope: as [`Scope`], but the tasks one thread spawns start in the order it spawned
/// them (see the module doc).
///
/// ```
/// use std::sync::Mutex;
///
/// let pool = rayon_core::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let order = Mutex::new(Vec::new());
/// pool.scope_fifo(|s| {
///     for i in 0..5 {
///         let order = &order;
///         s.spawn_fifo(move |_| order.lock().unwrap().push(i));
///     }
/// });
/// assert_eq!(order.into_inner().unwrap(), [0, 1, 2, 3, 4]);
/// ```
pub struct ScopeFifo<'scope> {
    scope: *const magpie::Scope<'scope>,
    queues: *const Queues<'scope>,
}

// SAFETY: a `ScopeFifo` is two pointers to `Sync` values (a magpie scope, and the queues), both
// alive whenever a `&ScopeFifo` can be reached (see `scope_fifo`); it adds no state of its own.
unsafe impl Send for ScopeFifo<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for ScopeFifo<'_> {}

impl<'scope> ScopeFifo<'scope> {
    fn magpie(&self) -> &magpie::Scope<'scope> {
        // SAFETY: a `ScopeFifo` is made only by the scope functions and `spawn_fifo`'s task, on their
        // own stacks, pointing to the scope they run in; it is lent out only by reference for the
        // duration of that body or task, which the scope outlives.
        unsafe { &*self.scope }
    }

    fn queues(&self) -> &Queues<'scope> {
        // SAFETY: the queues live in the frame of the call that opened the scope, which returns only after the scope
        // (and so every body and task that can reach this `ScopeFifo`) has finished.
        unsafe { &*self.queues }
    }

    /// Spawns `body` into the scope, behind the other bodies this thread spawned into it.
    pub fn spawn_fifo<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&ScopeFifo<'scope>) + Send + 'scope,
    {
        let queues = self.queues();
        let q = queues.mine();
        queues.push(q, Box::new(body));
        let ptr = SendPtr(self.queues);
        self.magpie().spawn(move |s| {
            let fifo = ptr.fifo(s);
            fifo.queues().pop(q)(&fifo)
        });
    }

    /// Runs `body` once on every worker of the scope's pool, as tasks of the scope.
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&ScopeFifo<'scope>, BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        let ptr = SendPtr(self.queues);
        self.magpie()
            .spawn_broadcast(move |s, ctx| body(&ptr.fifo(s), ctx));
    }
}

impl fmt::Debug for ScopeFifo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeFifo").finish_non_exhaustive()
    }
}

/// [`scope`] with FIFO order: see [`ScopeFifo`].
pub fn scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
    R: Send,
{
    // The queues are a local of this frame, which `magpie::scope` leaves only after every task
    // of the scope has finished: the pointers to them stay valid while anything can use them.
    let queues = Queues::new(crate::current_num_threads());
    let ptr = SendPtr(&queues);
    magpie::scope(move |s| op(&ptr.fifo(s)))
}

/// [`in_place_scope`] with FIFO order: see [`ScopeFifo`].
pub fn in_place_scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    // As in `scope_fifo`: the queues outlive the scope.
    let queues = Queues::new(crate::current_num_threads());
    let ptr = SendPtr(&queues);
    magpie::in_place_scope(move |s| op(&ptr.fifo(s)))
}

/// [`in_place_scope_fifo`] in `pool`.
pub(crate) fn in_place_scope_fifo_in<'scope, OP, R>(pool: &magpie::ThreadPool, op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    // As in `scope_fifo`: the queues outlive the scope.
    let queues = Queues::new(pool.current_num_threads());
    let ptr = SendPtr(&queues);
    pool.in_place_scope(move |s| op(&ptr.fifo(s)))
}
