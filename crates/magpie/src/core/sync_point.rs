//! The sync point: where a task waits for work it pushed on its own deque (a join's pushed half,
//! a scope's spawns, a pending half promoted for a thief).
//!
//! A [`SyncMark`] records the deque's bottom and the fiber's resume count when the task pushed.
//! While the fiber has not been suspended since, it is still on the same worker and every item
//! above the mark was pushed by this task or its descendants, so the sync point may pop them:
//! the item it waits for runs inline (the fast path: nobody stole it), anything else is run inline
//! too and the search goes on. When the mark no longer holds, or the item is gone (a thief took
//! it), the task suspends until the thief's latch fires (`fiber::suspend_until_stolen`), so the
//! victim pays for a steal only here, when it returns into the frame a thief touched.

use crate::fiber::FiberLocal;
use crate::job::{JobRef, StackJob, Work};
use crate::worker::{self, WorkerThread};

/// The sync point of a join whose half `pushed` went on the deque when `mark` was taken.
#[inline(always)]
pub(crate) fn sync_pushed<F, R>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    mark: &SyncMark,
    pushed: &StackJob<F, R>,
) -> std::thread::Result<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    // Fast path: this fiber was not suspended since the mark, so it is on the same worker (`wt`
    // is still ours) and the newest item is ours unless a thief took it.
    match mark.holds(fl).then(|| wt.pop_back()).flatten() {
        Some(it) if Work::decode(it).is_job(pushed.as_job_ref()) => pushed.run_inline(),
        Some(it) => {
            wt.core.deque.push(it);
            sync_slow(fl, mark, pushed)
        }
        None => sync_slow(fl, mark, pushed),
    }
}

/// Where a sync point stands: it may pop items pushed after `bottom` only while its fiber has not
/// been suspended since (`resumed` unchanged), because only then is it on the same worker and were
/// all those items pushed by this task or its descendants.
pub(crate) struct SyncMark {
    resumed: u64,
    pub bottom: isize,
}

impl SyncMark {
    #[inline(always)]
    pub(crate) fn new(wt: &WorkerThread, fl: &FiberLocal) -> SyncMark {
        SyncMark {
            resumed: fl.resumed.get(),
            bottom: wt.core.deque.bottom(),
        }
    }
    /// Whether the fiber is still on the worker where the mark was made, with nothing in between.
    #[inline(always)]
    pub(crate) fn holds(&self, fl: &FiberLocal) -> bool {
        self.resumed == fl.resumed.get()
    }
}

/// What one pop at a sync point found.
pub(crate) enum Popped {
    /// The item the caller is waiting for.
    Mine,
    /// Someone else's task, which was run inline; keep going.
    RanOther,
    /// Nothing more may be popped here: suspend.
    Stop,
}

/// Pops one item above `mark`. Runs a task inline unless it is `mine` (then the caller runs it)
/// or it does not descend from the sync point `key` (the latch this sync point waits on): the
/// half of an older join, promoted for a thief while this sync point's task ran, comes after
/// this task in the sequential order and must not run on top of it (`leapfrog.rs`); it goes to
/// the pool's queue, where any worker it is allowed may take it.
pub(crate) fn pop_above(
    fl: &FiberLocal,
    mark: &SyncMark,
    mine: Option<JobRef>,
    key: usize,
) -> Popped {
    if !mark.holds(fl) {
        return Popped::Stop;
    }
    let wt = worker::current().expect("sync point outside a worker");
    if wt.core.deque.bottom() <= mark.bottom {
        return Popped::Stop;
    }
    let Some(it) = wt.core.deque.pop() else {
        return Popped::Stop;
    };
    match Work::decode(it) {
        Work::Task { job, .. } if Some(job) == mine => Popped::Mine,
        Work::Task { job, continuation } => {
            if key != crate::leapfrog::OPEN
                && !fl.in_region()
                // SAFETY: we hold the item, so the frame has not run and its chain is alive.
                && !unsafe { job.descends(key) }
            {
                wt.core
                    .registry
                    .inject_orphan(Work::Task { job, continuation }.encode());
                return Popped::RanOther;
            }
            if wt.stack_full(fl) {
                wt.push(Work::Task { job, continuation });
                return Popped::Stop;
            }
            let depth = fl.depth.get();
            fl.depth.set(depth + 1);
            // The task runs as a stretch of its own on this fiber: its joins and spawns hand on
            // its lineage, and the joins pending below it stay out of its promotions, which
            // must name this task's lineage (`promote.rs`).
            // SAFETY: as above.
            let up = fl.lineage.replace(unsafe { job.lineage() });
            let pending = fl.pending.replace(std::ptr::null());
            if fl.in_region() {
                // SAFETY: popped by the owner: nobody else runs it.
                crate::position::outside_the_waiting_task(fl, || unsafe { job.execute() });
            } else {
                // SAFETY: as above.
                unsafe { job.execute() };
            }
            fl.pending.set(pending);
            fl.lineage.set(up);
            fl.depth.set(depth);
            Popped::RanOther
        }
        w @ (Work::Resume(_) | Work::Batch(_)) => {
            // A ready fiber is the loop's to resume, never to be run on top of a waiting task;
            // a batch is the loop's to unpack.
            wt.push(w);
            Popped::Stop
        }
    }
}

#[cold]
#[inline(never)]
fn sync_slow<F, R>(fl: &FiberLocal, mark: &SyncMark, job: &StackJob<F, R>) -> std::thread::Result<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    // Measuring overheads: the pops here are what the steal cost this victim; the tasks run
    // inline meanwhile are work, so the clock restarts after each.
    let wt = worker::current().expect("sync point outside a worker");
    let key = &job.latch as *const crate::latch::Latch as usize;
    let mut since = wt.overhead_clock();
    loop {
        match pop_above(fl, mark, Some(job.as_job_ref()), key) {
            Popped::Mine => {
                wt.add_victim(since);
                return job.run_inline();
            }
            Popped::RanOther => since = wt.overhead_clock(),
            Popped::Stop => break,
        }
    }
    wt.add_victim(since);
    crate::fiber::suspend_until_stolen(&job.latch, job.tag.get(), Some(mark.bottom));
    job.take_result()
}
