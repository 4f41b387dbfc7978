//! `join(a, b)`: spawn-sync of two closures (Cilk's fully strict fork-join), under the pool's policy.
//!
//! * Work-first: `b` (the parent's continuation up to the sync) is pushed for thieves and `a`, the
//!   child, runs now. One worker runs `a` then `b`: the sequential order.
//! * Help-first: `a`, the child, is pushed and the parent continues with `b`; one worker runs `b`
//!   then `a`: the parent reaches its sync point before its child runs.
//!
//! At the sync point the joiner pops its pushed half back if nobody took it (the common case: a plain
//! call, no fence). If a thief took it, the joiner suspends its fiber until the thief finishes (see
//! `worker.rs`); it never steals unrelated work onto its own stack.
//!
//! Stack bound (SLAW's stack condition): when the frames on the fiber reach S, or fewer than
//! `STACK_RESERVE` bytes are left, help-first and adaptive joins push *both* halves and suspend, so
//! the halves start on a fresh fiber stack; a forced work-first join stops with
//! [`Error::StackLimit`](crate::Error) instead of overflowing.

use crate::error::Error;
use crate::job::{StackJob, Work};
use crate::policy::Policy;
use crate::worker::{self, WorkerThread, STACK_RESERVE};
use std::panic::{self, AssertUnwindSafe};

/// Runs `a` and `b`, potentially in parallel, and returns both results. A panic in either reaches
/// the caller after both have finished. Outside any pool, runs on the global pool.
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match worker::current() {
        Some(wt) => join_in(wt, a, b),
        None => crate::pool::global().install(|| join(a, b)),
    }
}

#[inline]
fn join_in<A, B, RA, RB>(wt: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let policy = wt.registry.config.policy;
    if wt.stack_full() {
        return join_deep(wt, policy, a, b);
    }
    let wf = wt.decide(policy);
    wt.count_spawn(wf);
    if wf {
        let job = StackJob::new(b);
        fork(wt, &job, a, true)
    } else {
        let job = StackJob::new(a);
        let (rb, ra) = fork(wt, &job, b, false);
        (ra, rb)
    }
}

/// Pushes `pushed`, runs `inline`, then syncs with `pushed`. `pushed` is borrowed: a pushed frame
/// must not move until it has run.
#[inline]
fn fork<FP, RP, FI, RI>(
    wt: &WorkerThread,
    pushed: &StackJob<FP, RP>,
    inline: FI,
    continuation: bool,
) -> (RI, RP)
where
    FP: FnOnce() -> RP + Send,
    FI: FnOnce() -> RI,
    RP: Send,
{
    let mark = SyncMark::new(wt);
    wt.push(Work::Task {
        job: pushed.as_job_ref(),
        continuation,
    });
    wt.depth.set(wt.depth.get() + 1);
    let ri = panic::catch_unwind(AssertUnwindSafe(inline));
    // `inline` may have suspended: we may be on another worker now.
    let wt = worker::current().expect("join resumed outside a worker");
    wt.depth.set(wt.depth.get() - 1);
    let rp = sync_one(wt, &mark, pushed);
    match (ri, rp) {
        (Ok(ri), Ok(rp)) => (ri, rp),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
    }
}

/// Where a sync point stands on its worker: it may pop items pushed after `bottom` only if the
/// same worker is still running the same fiber without a break (`epoch` unchanged), because only
/// then were all those items pushed by this task or its descendants.
pub(crate) struct SyncMark {
    worker: *const WorkerThread,
    epoch: u64,
    pub bottom: isize,
}

impl SyncMark {
    #[inline]
    pub(crate) fn new(wt: &WorkerThread) -> SyncMark {
        SyncMark {
            worker: wt,
            epoch: wt.epoch.get(),
            bottom: wt.deque.bottom(),
        }
    }
    #[inline]
    pub(crate) fn holds(&self, wt: &WorkerThread) -> bool {
        std::ptr::eq(self.worker, wt) && self.epoch == wt.epoch.get()
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

/// Pops one item above `mark`. Runs a task inline unless it is `mine` (then the caller runs it).
#[inline]
pub(crate) fn pop_above(mark: &SyncMark, mine: Option<crate::job::JobRef>) -> Popped {
    let wt = match worker::current() {
        Some(wt) if mark.holds(wt) && wt.deque.bottom() > mark.bottom => wt,
        _ => return Popped::Stop,
    };
    let Some(it) = wt.deque.pop() else {
        return Popped::Stop;
    };
    match Work::decode(it) {
        Work::Task { job, .. } if Some(job) == mine => Popped::Mine,
        Work::Task { job, continuation } => {
            if wt.stack_full() {
                wt.push(Work::Task { job, continuation });
                return Popped::Stop;
            }
            wt.depth.set(wt.depth.get() + 1);
            // SAFETY: popped by the owner: nobody else runs it.
            unsafe { job.execute() };
            if let Some(wt) = worker::current() {
                wt.depth.set(wt.depth.get() - 1);
            }
            Popped::RanOther
        }
        w @ Work::Resume(_) => {
            // A ready fiber is the loop's to resume, never to be run on top of a waiting task.
            wt.push(w);
            Popped::Stop
        }
    }
}

#[inline]
fn sync_one<F, R>(wt: &WorkerThread, mark: &SyncMark, job: &StackJob<F, R>) -> std::thread::Result<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    // Fast path: the newest item is ours and still private.
    if mark.holds(wt) && wt.deque.bottom() > mark.bottom {
        if let Some(it) = wt.deque.pop() {
            if let Work::Task { job: j, .. } = Work::decode(it) {
                if j == job.as_job_ref() {
                    return run_popped(wt, job);
                }
            }
            // Not ours (an escaped spawn of an enclosing scope, or a ready fiber): put it back and
            // take the general path.
            wt.push(Work::decode(it));
        }
    }
    loop {
        match pop_above(mark, Some(job.as_job_ref())) {
            Popped::Mine => {
                let wt = worker::current().expect("join outside a worker");
                return run_popped(wt, job);
            }
            Popped::RanOther => continue,
            Popped::Stop => break,
        }
    }
    worker::suspend_until(&job.latch);
    job.take_result()
}

#[inline]
fn run_popped<F, R>(wt: &WorkerThread, job: &StackJob<F, R>) -> std::thread::Result<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    wt.depth.set(wt.depth.get() + 1);
    let r = job.run_inline();
    if let Some(wt) = worker::current() {
        wt.depth.set(wt.depth.get() - 1);
    }
    r
}

/// The stack condition holds: never nest. Both halves are pushed and the joiner suspends, so they
/// start on a loop fiber's fresh stack.
#[cold]
fn join_deep<A, B, RA, RB>(wt: &WorkerThread, policy: Policy, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if policy == Policy::WorkFirst && wt.stack_left() < STACK_RESERVE {
        panic::panic_any(Error::StackLimit {
            what: format!(
                "work-first join at frame depth {} with {} bytes of fiber stack left",
                wt.depth.get(),
                wt.stack_left()
            ),
            limit: format!("{} bytes per fiber stack", wt.registry.config.stack_size),
        });
    }
    if policy == Policy::WorkFirst {
        // Forced work-first below the byte limit: nest as usual.
        wt.count_spawn(true);
        let job = StackJob::new(b);
        return fork(wt, &job, a, true);
    }
    wt.count_spawn(false);
    wt.stats().max_frames.max(wt.depth.get() as u64);
    let ja = StackJob::new(a);
    let jb = StackJob::new(b);
    wt.push(Work::Task {
        job: ja.as_job_ref(),
        continuation: false,
    });
    wt.push(Work::Task {
        job: jb.as_job_ref(),
        continuation: false,
    });
    worker::suspend_until(&jb.latch);
    worker::suspend_until(&ja.latch);
    match (ja.take_result(), jb.take_result()) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
    }
}
