//! The pool handle: `install`, the global pool, and what a user reads of a pool. Built by
//! `builder.rs`.

use crate::error::Error;
use crate::hooks::{EndHook, InstallHook};
use crate::job::{JobRef, RunOnce, StackJob, Tag, Work};
use crate::latch::LockLatch;
use crate::policy::Policy;
use crate::registry::Registry;
use crate::stats::Stats;
use crate::worker;
use crate::Builder;
use std::panic;
use std::sync::{Arc, OnceLock};

/// A set of worker threads running tasks. Dropping it stops the workers.
pub struct Pool {
    pub(crate) registry: Arc<Registry>,
    /// How installs from a plain thread run, when a feature runs them (`hooks.rs`).
    pub(crate) installs: Option<Arc<dyn InstallHook>>,
    /// What a feature does as the pool ends (`hooks.rs`).
    pub(crate) ending: Option<EndHook>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.registry.config.workers)
            .field("policy", &self.registry.config.policy)
            .finish()
    }
}

impl Pool {
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Tasks spawned on this pool without waiting ([`crate::spawn`], [`crate::ThreadPool::spawn`])
    /// that have not finished yet: dropping the pool waits for them.
    pub fn pending_spawns(&self) -> usize {
        self.registry.spawns.outstanding()
    }

    /// A builder with the defaults.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Worker threads in the pool.
    pub fn workers(&self) -> usize {
        self.registry.config.workers
    }

    /// Whether thieves take half of a victim's unpublished tasks at once ([`Builder::steal_half`]).
    pub fn steals_half(&self) -> bool {
        self.registry.config.steal_half
    }

    /// Whether the pool times what steals cost ([`Builder::measure_overheads`]).
    pub fn measures_overheads(&self) -> bool {
        self.registry.config.overheads
    }

    /// Whether a task's running stack may move to another worker thread
    /// ([`Builder::allow_migration`]).
    pub fn allows_migration(&self) -> bool {
        self.registry.config.migrate
    }

    /// The pool's spawning policy.
    pub fn policy(&self) -> Policy {
        self.registry.config.policy
    }

    /// The pool's counters so far.
    pub fn stats(&self) -> Stats {
        self.registry.stats()
    }

    /// Workers asleep right now (idle workers sleep after a bounded number of failed steals).
    pub fn sleeping_workers(&self) -> usize {
        self.registry.sleeping()
    }

    /// Runs `op` on a worker of this pool and returns its result; `join` and `scope` inside it use
    /// this pool. A panic in `op` (or in any task it waits for) resumes in the caller; the pool
    /// stays usable.
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        if let Some(h) = &self.installs {
            // Only from a plain thread: one that blocks here can wait for its turn, where a
            // worker of another pool must not block its thread (its suspended fibers need it).
            if worker::current().is_none() {
                return self.install_through(&**h, op);
            }
        }
        self.install_plain(op)
    }

    /// An install from a plain thread that the feature's hook runs (see `InstallHook`): `op`
    /// and the result travel type-erased, in slots on this frame.
    fn install_through<OP, R>(&self, h: &dyn InstallHook, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        let mut op = Some(op);
        let mut r = None;
        h.install(
            &|home: Option<usize>, body: crate::hooks::Body<'_>| self.install_on(home, body),
            &mut || r = Some((op.take().expect("an install runs its body once"))()),
        );
        r.expect("an install hook runs the install it is given")
    }

    fn install_plain<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.install_on(None, op)
    }

    /// [`install_on`](Self::install_on), for a schedule region entered from outside the pool.
    pub(crate) fn install_at<OP, R>(&self, home: Option<usize>, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        if self.installs.is_some() {
            // A pool whose installs are regions already (`Builder::replay`, `trace_cuts`)
            // places them itself.
            return self.install(op);
        }
        self.install_on(home, op)
    }

    /// [`install_plain`](Self::install_plain); from a plain thread, on worker `home` if given
    /// (through its inbox), else on whichever worker takes it first.
    fn install_on<OP, R>(&self, home: Option<usize>, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        match worker::current() {
            Some(wt) if Arc::ptr_eq(&wt.core.registry, &self.registry) => op(),
            Some(_) => {
                // A worker of another pool: suspend its fiber rather than block its thread.
                // No tag: in this pool's trace, work from another pool is `External`.
                let job = StackJob::new(op);
                // Its lineage goes on across pools: work the job sends back into the pool of
                // the waiting worker (an install) descends from this sync point, and that worker
                // may run it while it waits (`leapfrog.rs`).
                let fl = worker::current()
                    .expect("a worker of another pool")
                    .fiber_local();
                job.publish_under(fl.lineage.get());
                self.registry.inject(
                    Work::Task {
                        job: job.as_job_ref(),
                        continuation: false,
                    }
                    .encode(),
                );
                // Waiting for another pool, this worker starts only what the job sends back
                // into its own pool (`leapfrog.rs`).
                let key = &job.latch as *const crate::latch::Latch as usize;
                crate::fiber::suspend_until(&job.latch, Tag::NONE, None, key);
                match job.take_result() {
                    Ok(r) => r,
                    Err(p) => panic::resume_unwind(p),
                }
            }
            None => {
                let op = match crate::caller_worker::run_in(&self.registry, op) {
                    Ok(r) => return r,
                    Err(op) => op,
                };
                // A sleeping worker's seat, taken by this thread for the call: no hand-off.
                let op = match home {
                    None => match crate::borrowed_seat::run_in(&self.registry, op) {
                        Ok(r) => return r,
                        Err(op) => op,
                    },
                    Some(_) => op,
                };
                let job = BlockingJob {
                    lineage: std::ptr::null(),
                    tag: self.registry.install_tag(),
                    once: RunOnce::new(op),
                    done: LockLatch::new(),
                };
                let it = Work::Task {
                    job: job.as_job_ref(),
                    continuation: false,
                }
                .encode();
                match home {
                    Some(w) => self.registry.deliver(w, it),
                    None => self.registry.inject(it),
                }
                job.done.wait();
                // SAFETY: `done` is set, after the job's one run.
                match unsafe { job.once.take_result() } {
                    Ok(r) => r,
                    Err(p) => panic::resume_unwind(p),
                }
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Dropped by a task of its own (a spawned task that owned the pool): waiting here for
        // the spawned tasks would wait for this one, and the workers cannot be joined from one
        // of them. A thread of its own finishes the drop once this task has returned.
        if worker::current().is_some_and(|wt| Arc::ptr_eq(&wt.core.registry, &self.registry)) {
            let rest = Pool {
                registry: self.registry.clone(),
                installs: self.installs.take(),
                ending: self.ending.take(),
            };
            let started = std::thread::Builder::new()
                .name("magpie-drop".into())
                .spawn(move || drop(rest));
            if let Err(e) = started {
                // Nothing is lost: the spawned tasks still run; only the workers stay.
                eprintln!(
                    "magpie: cannot start a thread to stop a pool dropped by its own task: {e}"
                );
            }
            return;
        }
        // Dropped on the thread lent to it as worker 0: that thread helps with the spawned
        // tasks, then stops being lent (`caller_worker.rs`).
        crate::caller_worker::give_back(&self.registry);
        // Tasks spawned with `spawn` (fire and forget) still run: the pool waits for them.
        self.registry.spawns.wait_all();
        // A lent thread elsewhere: no call of it may still be inside when the workers stop.
        crate::caller_worker::close(&self.registry);
        self.end_hook();
        self.registry.shutdown();
    }
}

/// Whether the global pool has been made (by [`global_pool`], by anything that used it, or by
/// [`set_global_pool`]).
pub fn global_pool_exists() -> bool {
    global_exists()
}

/// Makes `pool` the global pool (the one used outside any pool), unless one exists already:
/// then `pool` is handed back. The global pool is never dropped.
pub fn set_global_pool(pool: Pool) -> Result<(), Pool> {
    set_global(pool)
}

impl Pool {
    /// Runs the feature's end hook, if any (the trace file: `trace_to`, `MAGPIE_TRACE`).
    fn end_hook(&self) {
        if let Some(end) = &self.ending {
            end(self);
        }
    }
}

/// The job of a caller that is not a worker: it blocks on a lock latch.
#[repr(C, align(8))]
struct BlockingJob<F, R> {
    /// None: an install from outside is a root (first, see `JobRef::lineage`).
    lineage: *const crate::job::Lineage,
    /// Tracing: which install this is (second, see `JobRef::tag`).
    tag: Tag,
    once: RunOnce<F, R>,
    done: LockLatch,
}

impl<F: FnOnce() -> R + Send, R: Send> BlockingJob<F, R> {
    fn as_job_ref(&self) -> JobRef {
        // SAFETY: the caller blocks until `done` is set, keeping `self` alive.
        unsafe { JobRef::new(self as *const Self as *const (), Self::entry) }
    }

    /// # Safety
    /// `data` came from `as_job_ref`, and this is the job's one run.
    unsafe fn entry(data: *const ()) {
        // SAFETY: `data` came from `as_job_ref`; the blocked caller keeps the job alive.
        let this = unsafe { &*(data as *const Self) };
        // SAFETY: the caller's promise: the one run; `done` is set only after it.
        unsafe { this.once.run() };
        this.done.set();
    }
}

static GLOBAL: OnceLock<Pool> = OnceLock::new();

/// The global pool, created on first use from `MAGPIE_WORKERS`, `MAGPIE_POLICY` and
/// `MAGPIE_TRACE` (its trace file is written when the process exits normally). A bad value is
/// reported here as an error; the free functions panic with that message.
pub fn global_pool() -> Result<&'static Pool, Error> {
    if let Some(p) = GLOBAL.get() {
        return Ok(p);
    }
    let pool = Builder::default().from_env()?.build()?;
    let traced = pool.ending.is_some();
    // Another thread may have won the race; then our pool is dropped (its workers stop).
    if GLOBAL.set(pool).is_ok() && traced {
        // The global pool is never dropped: write its trace (MAGPIE_TRACE) when the process exits.
        extern "C" fn write_global_trace() {
            if let Some(p) = GLOBAL.get() {
                p.end_hook();
            }
        }
        // SAFETY: registers a plain function with no arguments; it only reads the global pool.
        unsafe { libc::atexit(write_global_trace) };
    }
    Ok(GLOBAL.get().expect("global pool set"))
}

/// Whether the global pool has been made.
pub(crate) fn global_exists() -> bool {
    GLOBAL.get().is_some()
}

/// Makes `pool` the global pool, unless one exists already (then it is handed back).
pub(crate) fn set_global(pool: Pool) -> Result<(), Pool> {
    GLOBAL.set(pool)
}

/// Runs `op` where a call made outside any worker runs: on the pool the calling thread is lent
/// to, as its worker 0 (`Builder::use_current_thread`), else on the global pool.
///
/// Out of line and cold: the call hands `op` to another thread (microseconds), and inlined into
/// `scope` or `join` its install paths made the hot code around them larger and moved it, which
/// cost fj 1.18x at 1 worker for the same instructions (docs/results/core.md).
#[cold]
#[inline(never)]
pub(crate) fn outside<OP, R>(op: OP) -> R
where
    OP: FnOnce() -> R + Send,
    R: Send,
{
    match crate::caller_worker::run(op) {
        Ok(r) => r,
        Err(op) => global().install(op),
    }
}

pub(crate) fn global() -> &'static Pool {
    match global_pool() {
        Ok(p) => p,
        Err(e) => panic!("magpie: cannot start the global pool: {e}"),
    }
}
