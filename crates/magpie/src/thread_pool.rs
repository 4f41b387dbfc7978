//! Pools and tasks with rayon's names: [`ThreadPoolBuilder`], [`ThreadPool`] and the free
//! functions [`spawn`], [`current_num_threads`], [`current_thread_index`], [`broadcast`],
//! [`yield_now`] and [`in_place_scope`](crate::in_place_scope). They are views of magpie's [`Pool`] and [`Builder`], not a second
//! runtime: [`ThreadPoolBuilder::magpie`] reaches every magpie setting (policies, places,
//! squads, sharing), and [`ThreadPool::as_pool`] the pool itself.
//!
//! # Fire-and-forget tasks
//!
//! [`spawn`] queues a `'static` task on the pool the caller runs on (or the global pool) and
//! returns at once. The pool counts such tasks until they finish, and dropping a
//! [`ThreadPool`] (or [`Pool`]) waits for them, so none is lost. A task that panics goes to the
//! pool's panic handler ([`ThreadPoolBuilder::panic_handler`]); without one, as in rayon, the
//! process prints the panic and aborts, since nobody could otherwise learn of it.

use crate::error::Error;
use crate::job::{HeapJob, Tag, Work};
use crate::registry::{PanicHandler, PanicHandlerRef, Registry};
use crate::{worker, Builder, Pool};
use std::any::Any;
use std::sync::Arc;

/// Queues `f` on `reg`'s pool (see the module doc).
fn spawn_on(reg: &Arc<Registry>, f: impl FnOnce() + Send + 'static) {
    spawn_to(reg, None, f)
}

/// Queues `f` on `reg`'s pool, for worker `to` only if given (through its inbox).
fn spawn_to(reg: &Arc<Registry>, to: Option<usize>, f: impl FnOnce() + Send + 'static) {
    reg.spawns.begin();
    let r = reg.clone();
    let task = move || {
        // What this worker owes a scope (completions, counts reserved for spawns) is paid before
        // a task of no scope starts: the task may run long or block, and the scope must not
        // wait for it.
        if let Some(wt) = worker::current() {
            wt.flush_finished();
        }
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            match r.spawns.handler.get() {
                Some(h) => h(p),
                None => {
                    eprintln!(
                        "magpie: a spawned task panicked and the pool has no panic handler \
                         (ThreadPoolBuilder::panic_handler); aborting"
                    );
                    std::process::abort();
                }
            }
        }
        r.spawns.end();
    };
    let tag = reg.config.trace.then_some(Tag::NONE);
    let it = Work::Task {
        job: HeapJob::into_job_ref(task, tag, std::ptr::null()),
        continuation: false,
    }
    .encode();
    match to {
        Some(w) => reg.deliver(w, it),
        None => reg.inject(it),
    }
}

/// The registry of the pool the caller runs on, or the global pool's.
fn current_registry() -> Arc<Registry> {
    match worker::current() {
        Some(wt) => wt.core.registry.clone(),
        None => crate::caller_worker::registry()
            .unwrap_or_else(|| crate::pool::global().registry().clone()),
    }
}

/// Runs `f` on the pool the caller runs on (outside any pool, the global pool), without waiting
/// for it (see the module doc).
///
/// ```
/// use std::sync::mpsc::channel;
///
/// let (tx, rx) = channel();
/// for i in 0..4 {
///     let tx = tx.clone();
///     magpie::spawn(move || tx.send(i * i).unwrap());
/// }
/// let mut got: Vec<i32> = rx.iter().take(4).collect();
/// got.sort();
/// assert_eq!(got, [0, 1, 4, 9]);
/// ```
pub fn spawn<F: FnOnce() + Send + 'static>(f: F) {
    spawn_on(&current_registry(), f)
}

/// Worker threads of the pool the caller runs on (outside any pool, of the global pool).
pub fn current_num_threads() -> usize {
    match worker::current() {
        Some(wt) => wt.core.registry.config.workers,
        None => crate::caller_worker::registry()
            .map_or_else(|| crate::pool::global().workers(), |r| r.config.workers),
    }
}

/// The index of the worker running the caller, in `0..current_num_threads()`; `None` outside a
/// pool. A thread lent to a live pool as its worker 0 (`Builder::use_current_thread`) is `Some(0)`
/// between its calls too, as in rayon.
///
/// ```
/// let pool = magpie::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// assert_eq!(magpie::current_thread_index(), None);
/// let i = pool.install(magpie::current_thread_index).unwrap();
/// assert!(i < 2 && pool.install(magpie::current_num_threads) == 2);
/// ```
#[inline]
pub fn current_thread_index() -> Option<usize> {
    crate::worker_index()
}

/// Where a [`broadcast`] closure runs (rayon's `BroadcastContext`).
#[derive(Debug)]
pub struct BroadcastContext<'a> {
    index: usize,
    num_threads: usize,
    _pool: std::marker::PhantomData<&'a ()>,
}

impl BroadcastContext<'_> {
    /// The index of the worker running this call, in `0..num_threads()`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The pool's worker threads: how many calls the broadcast makes.
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

/// Runs `op` once on every worker thread of the pool the caller runs on (outside any pool, of
/// the global pool) and returns the results in worker order: `result[i]` came from worker `i`.
/// Each call but the caller's own goes to its worker's inbox (the mechanism that resumes a
/// task on its home worker), so it runs on that thread and no other; a busy worker runs it when
/// its current task finishes or waits. A panic in any call reaches the caller after all have
/// ended.
///
/// ```
/// let pool = magpie::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// let ids = pool.broadcast(|ctx| (ctx.index(), std::thread::current().id()));
/// assert_eq!(ids.len(), 3);
/// assert!(ids.iter().enumerate().all(|(i, (j, _))| i == *j));
/// assert!(ids[0].1 != ids[1].1 && ids[1].1 != ids[2].1);
/// ```
pub fn broadcast<OP, R>(op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    if worker::current().is_none() {
        return crate::pool::outside(|| broadcast_here(&op));
    }
    broadcast_here(&op)
}

fn broadcast_here<OP, R>(op: &OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    let wt = worker::current().expect("a broadcast runs on a worker");
    let (me, n) = (wt.core.index, wt.core.registry.config.workers);
    let call = move |i: usize| {
        debug_assert_eq!(
            crate::worker_index(),
            Some(i),
            "broadcast call off its worker"
        );
        op(BroadcastContext {
            index: i,
            num_threads: n,
            _pool: std::marker::PhantomData,
        })
    };
    let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
    crate::scope(|s| {
        let mut mine = None;
        for (i, slot) in out.iter_mut().enumerate() {
            if i == me {
                mine = Some(slot);
            } else {
                s.spawn_designated(i, move |_| *slot = Some(call(i)));
            }
        }
        // The scope's body runs on the caller's worker, which the loop above did not leave.
        if let Some(slot) = mine {
            *slot = Some(call(me));
        }
    });
    out.into_iter()
        .map(|r| r.expect("every worker ran its broadcast call"))
        .collect()
}

/// What [`yield_now`] did (rayon's `Yield`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Yield {
    /// It ran a task.
    Executed,
    /// It found no task to run.
    Idle,
}

/// Lets the pool's other work go ahead of the caller: on a worker, steals one task that has not
/// started from another worker and runs it on this thread before returning
/// (`Some(Yield::Executed)`), or returns `Some(Yield::Idle)` if there was none; `None` outside a
/// pool. Unlike rayon's it does not take from the caller's own deque (the joins the caller is
/// inside take their halves back themselves), and under tracing or a schedule region it runs
/// nothing (their records assume tasks start from the scheduling loop).
///
/// ```
/// use magpie::{yield_now, Yield};
///
/// assert_eq!(yield_now(), None);
/// let pool = magpie::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(pool.install(yield_now), Some(Yield::Idle));
/// ```
pub fn yield_now() -> Option<Yield> {
    if worker::current().is_none() {
        // A thread lent to a pool (`Builder::use_current_thread`) enters it to steal one.
        return crate::caller_worker::run(yield_now).ok().flatten();
    }
    Some(match crate::main_loop::run_one_stolen() {
        true => Yield::Executed,
        false => Yield::Idle,
    })
}

/// Runs one task delivered to the calling worker, if there is one: a task only this worker may
/// run (a broadcast call, a designated spawn, an install sent to it) that has not started.
/// `Some(Yield::Executed)` if it ran one, `Some(Yield::Idle)` if there was none, `None` outside
/// a pool. rayon's `yield_local` takes from the worker's own deque; magpie's holds the other
/// halves of the joins the caller is inside, which those joins take back themselves, so the
/// local work it runs is what was delivered to it. Under tracing or a schedule region it runs
/// nothing, as [`yield_now`].
///
/// ```
/// use magpie::{yield_local, Yield};
///
/// assert_eq!(yield_local(), None);
/// let pool = magpie::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(pool.install(yield_local), Some(Yield::Idle));
/// ```
pub fn yield_local() -> Option<Yield> {
    if worker::current().is_none() {
        // A thread lent to a pool (`Builder::use_current_thread`) enters it: entering runs
        // what was delivered to it first.
        let had = crate::caller_worker::has_pending()?;
        return crate::caller_worker::run(|| ()).ok().map(|()| {
            if had {
                Yield::Executed
            } else {
                Yield::Idle
            }
        });
    }
    Some(match crate::main_loop::run_one_delivered() {
        true => Yield::Executed,
        false => Yield::Idle,
    })
}

/// Whether the calling worker has tasks queued that it has not started (its deque, its inbox
/// or fibers ready to resume); `None` outside a pool (rayon's `current_thread_has_pending_tasks`).
///
/// ```
/// assert_eq!(magpie::current_thread_has_pending_tasks(), None);
/// let pool = magpie::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(pool.install(magpie::current_thread_has_pending_tasks), Some(false));
/// ```
pub fn current_thread_has_pending_tasks() -> Option<bool> {
    match worker::current() {
        Some(wt) => Some(wt.has_pending()),
        None => crate::caller_worker::has_pending(),
    }
}

/// Runs `op` once on every worker of the pool the caller runs on (outside any pool, of the
/// global pool) without waiting for the calls: rayon's `spawn_broadcast`. Each call goes to its
/// worker's inbox; the pool counts them as [`spawn`]ed tasks (dropping the pool waits for them,
/// a panic goes to the panic handler).
///
/// ```
/// use std::sync::mpsc::channel;
///
/// let pool = magpie::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// let (tx, rx) = channel();
/// pool.spawn_broadcast(move |ctx| tx.send(ctx.index()).unwrap());
/// let mut got: Vec<usize> = rx.iter().take(3).collect();
/// got.sort();
/// assert_eq!(got, [0, 1, 2]);
/// ```
pub fn spawn_broadcast<OP>(op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    spawn_broadcast_on(&current_registry(), op)
}

fn spawn_broadcast_on<OP>(reg: &Arc<Registry>, op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    let n = reg.config.workers;
    let op = Arc::new(op);
    for i in 0..n {
        let op = op.clone();
        spawn_to(reg, Some(i), move || {
            op(BroadcastContext {
                index: i,
                num_threads: n,
                _pool: std::marker::PhantomData,
            })
        });
    }
}

impl<'scope> crate::Scope<'scope> {
    /// Runs `body` once on every worker of the scope's pool, as tasks of this scope (the scope
    /// waits for them): rayon's `Scope::spawn_broadcast`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = magpie::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    /// let seen = AtomicUsize::new(0);
    /// pool.scope(|s| s.spawn_broadcast(|_, ctx| {
    ///     seen.fetch_or(1 << ctx.index(), Ordering::Relaxed);
    /// }));
    /// assert_eq!(seen.into_inner(), 0b1111);
    /// ```
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&crate::Scope<'scope>, BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        if !self.on_own_worker() {
            // Designations name this pool's workers: make them from one of its workers.
            return self.spawn(move |s| s.spawn_broadcast(body));
        }
        let n = self.workers();
        let body = Arc::new(body);
        for i in 0..n {
            let body = body.clone();
            self.spawn_to(i, true, move |s| {
                body(
                    s,
                    BroadcastContext {
                        index: i,
                        num_threads: n,
                        _pool: std::marker::PhantomData,
                    },
                )
            });
        }
    }
}

/// Why a pool could not be built (rayon's `ThreadPoolBuildError`).
#[derive(Debug)]
pub struct ThreadPoolBuildError(String);

impl std::fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ThreadPoolBuildError {}

impl From<Error> for ThreadPoolBuildError {
    fn from(e: Error) -> Self {
        ThreadPoolBuildError(e.to_string())
    }
}

/// Builds a [`ThreadPool`] (rayon's names, magpie's [`Builder`] underneath).
///
/// ```
/// use magpie::{Policy, ThreadPoolBuilder};
///
/// let pool = ThreadPoolBuilder::new()
///     .num_threads(2)
///     .thread_name(|i| format!("crunch-{i}"))
///     .magpie(|b| b.policy(Policy::HelpFirst)) // any of magpie's own settings
///     .build()
///     .unwrap();
/// let name = pool.install(|| std::thread::current().name().map(String::from));
/// assert!(name.unwrap().starts_with("crunch-"));
/// assert_eq!(pool.as_pool().policy(), Policy::HelpFirst);
/// ```
pub struct ThreadPoolBuilder {
    builder: Builder,
    num_threads: usize,
    thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    panic_handler: Option<Arc<PanicHandler>>,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        ThreadPoolBuilder::new()
    }
}

impl ThreadPoolBuilder {
    /// A builder with magpie's defaults; `MAGPIE_*` environment variables apply at `build` to
    /// what the builder does not set.
    pub fn new() -> Self {
        ThreadPoolBuilder {
            builder: Builder::default(),
            num_threads: 0,
            thread_name: None,
            panic_handler: None,
        }
    }

    /// Worker threads; 0 (the default) is `MAGPIE_WORKERS` or the machine's parallelism.
    pub fn num_threads(mut self, n: usize) -> Self {
        self.num_threads = n;
        self
    }

    /// Names worker `i`'s thread `f(i)`.
    pub fn thread_name<F: FnMut(usize) -> String + 'static>(mut self, f: F) -> Self {
        self.thread_name = Some(Box::new(f));
        self
    }

    /// The stack size of the pool's tasks (magpie runs tasks on stacks of their own, so this is
    /// what rayon's worker-thread stack size governs: how deep a task may recurse).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.builder = self.builder.stack_size(bytes);
        self
    }

    /// What the pool does with a panic of a [`spawn`]ed task (without one: print and abort).
    pub fn panic_handler<H>(mut self, h: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(Arc::new(h));
        self
    }

    /// Any of magpie's own settings: `builder.magpie(|b| b.policy(Policy::HelpFirst))`.
    pub fn magpie(mut self, f: impl FnOnce(Builder) -> Builder) -> Self {
        self.builder = f(self.builder);
        self
    }

    fn into_pool(self) -> Result<Pool, ThreadPoolBuildError> {
        let mut b = self.builder.from_env()?;
        if self.num_threads > 0 {
            b = b.workers(self.num_threads);
        }
        if let Some(mut name) = self.thread_name {
            let n = b
                .workers_setting()
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            b = b.thread_names((0..n).map(&mut name).collect());
        }
        if let Some(h) = self.panic_handler {
            b.panic_handler = Some(PanicHandlerRef(h));
        }
        Ok(b.build()?)
    }

    /// The pool.
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        Ok(ThreadPool {
            pool: self.into_pool()?,
        })
    }

    /// Makes this the global pool (the one `join`, `scope`, `spawn` and the parallel iterators
    /// use outside any pool). An error if the global pool exists already, as in rayon: once
    /// anything has used it, or after an earlier `build_global`.
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        if crate::pool::global_exists() {
            return Err(ThreadPoolBuildError(
                "the global thread pool has already been initialized".into(),
            ));
        }
        let pool = self.into_pool()?;
        crate::pool::set_global(pool).map_err(|_| {
            ThreadPoolBuildError("the global thread pool has already been initialized".into())
        })
    }
}

impl From<Pool> for ThreadPool {
    fn from(pool: Pool) -> ThreadPool {
        ThreadPool { pool }
    }
}

/// A pool with rayon's method names (a [`Pool`] underneath: [`ThreadPool::as_pool`]).
///
/// ```
/// let pool = magpie::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// let mut keys: Vec<u64> = (0..10_000u64).rev().collect();
/// pool.install(|| magpie::sort::par_sort_unstable(&mut keys));
/// assert_eq!(keys[..3], [0, 1, 2]);
/// let (a, b) = pool.join(|| 6 * 7, || "done");
/// assert_eq!((a, b), (42, "done"));
/// assert_eq!(pool.current_num_threads(), 3);
/// ```
pub struct ThreadPool {
    pool: Pool,
}

impl ThreadPool {
    /// Runs `op` on one of the pool's workers and returns its result (see [`Pool::install`]).
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.pool.install(op)
    }

    /// [`crate::join`] on this pool.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.pool.install(|| crate::join(a, b))
    }

    /// [`crate::scope`] on this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.pool.install(|| crate::scope(op))
    }

    /// [`Pool::in_place_scope`]: a scope of this pool whose body runs on the calling thread.
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::Scope<'scope>) -> R,
    {
        self.pool.in_place_scope(op)
    }

    /// Runs `f` on this pool without waiting for it (see the module doc).
    pub fn spawn<F: FnOnce() + Send + 'static>(&self, f: F) {
        spawn_on(self.pool.registry(), f)
    }

    /// The pool's worker threads.
    pub fn current_num_threads(&self) -> usize {
        self.pool.workers()
    }

    /// The index of the worker running the caller if it is one of this pool's.
    pub fn current_thread_index(&self) -> Option<usize> {
        match worker::current() {
            Some(wt) => {
                Some(wt.core.index).filter(|_| Arc::ptr_eq(&wt.core.registry, self.pool.registry()))
            }
            None => crate::caller_worker::lent_to(self.pool.registry()).then_some(0),
        }
    }

    /// [`broadcast`] on this pool: `op` once on each of its workers, results in worker order.
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        self.pool.install(|| broadcast_here(&op))
    }

    /// [`spawn_broadcast`] on this pool.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        spawn_broadcast_on(self.pool.registry(), op)
    }

    /// The magpie pool underneath.
    pub fn as_pool(&self) -> &Pool {
        &self.pool
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Mutex;

    #[test]
    fn a_pool_with_rayons_names_runs_joins_scopes_and_names_its_threads() {
        let pool = ThreadPoolBuilder::new()
            .num_threads(3)
            .thread_name(|i| format!("worker #{i}"))
            .magpie(|b| b.policy(crate::Policy::HelpFirst))
            .build()
            .unwrap();
        assert_eq!(pool.current_num_threads(), 3);
        assert_eq!(pool.as_pool().policy(), crate::Policy::HelpFirst);
        let (a, b) = pool.join(|| 1 + 1, || "two");
        assert_eq!((a, b), (2, "two"));
        let mut v = vec![0; 4];
        pool.scope(|s| {
            for (i, x) in v.iter_mut().enumerate() {
                s.spawn(move |_| *x = i * 10);
            }
        });
        assert_eq!(v, [0, 10, 20, 30]);
        let (name, index, n) = pool.install(|| {
            (
                std::thread::current().name().map(String::from),
                pool.current_thread_index(),
                current_num_threads(),
            )
        });
        assert!(name.unwrap().starts_with("worker #"));
        assert!(index.is_some_and(|i| i < 3) && n == 3);
        assert_eq!(pool.current_thread_index(), None, "not from outside");
    }

    #[test]
    fn spawned_tasks_all_run_and_the_pool_waits_for_them() {
        let ran = Arc::new(AtomicU64::new(0));
        {
            let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            for _ in 0..1000 {
                let ran = ran.clone();
                pool.spawn(move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
            }
            // From inside the pool, the free `spawn` uses this pool too, and tasks may spawn.
            let r = ran.clone();
            pool.install(move || {
                spawn(move || {
                    for _ in 0..10 {
                        let r = r.clone();
                        spawn(move || {
                            r.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                })
            });
        } // the drop waits
        assert_eq!(ran.load(Ordering::Relaxed), 1010);
    }

    #[test]
    fn a_spawned_panic_goes_to_the_panic_handler_and_the_pool_lives_on() {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = seen.clone();
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .panic_handler(move |p| {
                let msg = p.downcast_ref::<&str>().copied().unwrap_or("?").to_string();
                s.lock().unwrap().push(msg);
            })
            .build()
            .unwrap();
        pool.spawn(|| panic!("spawned and failed"));
        drop(pool);
        assert_eq!(*seen.lock().unwrap(), ["spawned and failed"]);
    }

    #[test]
    fn bad_settings_are_errors() {
        let e = ThreadPoolBuilder::new()
            .stack_size(1)
            .build()
            .err()
            .unwrap();
        assert!(e.to_string().contains("stack_size"), "{e}");
        assert!(ThreadPoolBuilder::new().num_threads(5000).build().is_err());
    }

    #[test]
    fn broadcast_runs_once_on_every_worker_in_worker_order() {
        use crate::Policy;
        for n in [1, 2, 3, 8] {
            for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(n)
                    .magpie(|b| b.policy(policy))
                    .build()
                    .unwrap();
                let check = |got: Vec<(usize, usize, Option<usize>, std::thread::ThreadId)>| {
                    assert_eq!(got.len(), n);
                    let mut threads = std::collections::HashSet::new();
                    for (i, (index, threads_seen, on, id)) in got.into_iter().enumerate() {
                        assert_eq!((index, threads_seen, on), (i, n, Some(i)), "{policy:?}");
                        assert!(threads.insert(id), "two calls on one thread");
                    }
                };
                let op = |ctx: BroadcastContext<'_>| {
                    (
                        ctx.index(),
                        ctx.num_threads(),
                        current_thread_index(),
                        std::thread::current().id(),
                    )
                };
                // From outside the pool, and from tasks inside it while others are busy.
                check(pool.broadcast(op));
                let mut all = vec![Vec::new(); 6];
                pool.scope(|s| {
                    for slot in all.iter_mut() {
                        s.spawn(move |_| *slot = broadcast(op));
                    }
                });
                all.into_iter().for_each(check);
                // A panic in one call reaches the caller; the pool lives on.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.broadcast(|ctx| assert!(ctx.index() + 1 != n, "last worker fails"))
                }));
                assert!(r.is_err());
                check(pool.broadcast(op));
            }
        }
    }

    #[test]
    fn yield_now_runs_a_task_another_worker_cannot() {
        use crate::Policy;
        use std::sync::atomic::AtomicBool;
        assert_eq!(yield_now(), None);
        let one = ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(one.install(yield_now), Some(Yield::Idle));
        // Worker X spawns the yielding task, which worker Y takes; then X spawns one more task
        // and spins without running anything, so only Y's `yield_now` can run it.
        let pool = ThreadPoolBuilder::new()
            .num_threads(2)
            .magpie(|b| b.policy(Policy::HelpFirst))
            .build()
            .unwrap();
        for _ in 0..20 {
            let (started, done) = (AtomicBool::new(false), AtomicBool::new(false));
            let executed = AtomicUsize::new(0);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let wait = |flag: &AtomicBool| {
                while !flag.load(Ordering::Acquire) {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "yield_now never ran it"
                    );
                    std::hint::spin_loop();
                }
            };
            pool.scope(|s| {
                s.spawn(|_| {
                    started.store(true, Ordering::Release);
                    while !done.load(Ordering::Acquire) {
                        if yield_now() == Some(Yield::Executed) {
                            executed.fetch_add(1, Ordering::Relaxed);
                        }
                        assert!(
                            std::time::Instant::now() < deadline,
                            "yield_now never ran it"
                        );
                    }
                });
                wait(&started);
                s.spawn(|_| done.store(true, Ordering::Release));
                wait(&done);
            });
            assert_eq!(executed.load(Ordering::Relaxed), 1);
        }
    }

    #[test]
    fn yield_local_runs_a_task_delivered_to_its_worker() {
        use std::sync::atomic::AtomicBool;
        let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for _ in 0..20 {
            let (spinning, done) = (AtomicUsize::new(usize::MAX), AtomicBool::new(false));
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            pool.scope(|s| {
                // One task spins on its worker, running only what yield_local gives it; the
                // caller then designates a task to that worker, which only yield_local can run.
                s.spawn(|_| {
                    spinning.store(current_thread_index().unwrap(), Ordering::Release);
                    let mut ran = 0;
                    while !done.load(Ordering::Acquire) {
                        if yield_local() == Some(Yield::Executed) {
                            ran += 1;
                        }
                        assert!(std::time::Instant::now() < deadline, "never delivered");
                    }
                    assert_eq!(ran, 1);
                });
                let w = loop {
                    match spinning.load(Ordering::Acquire) {
                        usize::MAX => std::hint::spin_loop(),
                        w => break w,
                    }
                    assert!(std::time::Instant::now() < deadline, "never started");
                };
                if current_thread_index() == Some(w) {
                    // The spinner was run in place here, so it has finished: nothing to test.
                    done.store(true, Ordering::Release);
                    return;
                }
                s.spawn_designated(w, |_| done.store(true, Ordering::Release));
            });
        }
    }

    #[test]
    fn spawn_broadcast_runs_once_on_each_worker_and_the_drop_waits() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        {
            let pool = ThreadPoolBuilder::new().num_threads(3).build().unwrap();
            let s = seen.clone();
            pool.spawn_broadcast(move |ctx| {
                assert_eq!(current_thread_index(), Some(ctx.index()));
                s.lock().unwrap().push((ctx.index(), ctx.num_threads()));
            });
        }
        let mut got = seen.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, [(0, 3), (1, 3), (2, 3)]);
    }

    #[test]
    fn a_pool_dropped_by_its_own_task_still_runs_what_was_spawned() {
        let (tx, rx) = std::sync::mpsc::channel();
        let pool = Arc::new(ThreadPoolBuilder::new().num_threads(2).build().unwrap());
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let mine = pool.clone();
        let t = tx.clone();
        pool.spawn(move || {
            go_rx.recv().unwrap();
            // The last owner: this drop is the pool's, on one of its own workers.
            mine.spawn(move || t.send("spawned before the drop").unwrap());
            drop(mine);
            tx.send("dropped").unwrap();
        });
        drop(pool);
        go_tx.send(()).unwrap();
        let mut got: Vec<&str> = rx.iter().take(2).collect();
        got.sort();
        assert_eq!(got, ["dropped", "spawned before the drop"]);
    }

    #[test]
    fn build_with_starts_workers_on_the_callers_threads() {
        let mut indices = Vec::new();
        let mut handles = Vec::new();
        let pool = crate::Pool::builder()
            .workers(3)
            .build_with(|w| {
                indices.push(w.index());
                assert!(w.min_stack_size() > 0);
                handles.push(std::thread::Builder::new().spawn(move || w.run())?);
                Ok(())
            })
            .unwrap();
        assert_eq!(indices, [0, 1, 2]);
        assert_eq!(pool.install(|| crate::join(|| 1, || 2)), (1, 2));
        drop(pool);
        for h in handles {
            h.join().unwrap();
        }
        // A start function's error fails the build, naming the worker.
        let mut n = 0;
        let e = crate::Pool::builder()
            .workers(2)
            .build_with(|w| {
                n += 1;
                if w.index() == 1 {
                    return Err(std::io::Error::other("no more threads"));
                }
                std::thread::spawn(move || w.run());
                Ok(())
            })
            .unwrap_err();
        assert_eq!(n, 2);
        assert!(
            e.to_string().contains("worker 1") && e.to_string().contains("no more threads"),
            "{e}"
        );
    }
}
