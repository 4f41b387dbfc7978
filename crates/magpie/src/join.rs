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
//! Lazy publication: when the worker's deque already holds [`KEEP`] items for thieves and no thief
//! has asked for more, a join publishes nothing and runs both halves in place, in the order its
//! policy prescribes (work-first: `a` then `b`; help-first: `b` then `a`): exactly what happens when
//! a pushed half is popped back unstolen, minus the push and the pop. The items kept are the
//! oldest, so the work a thief can take is the biggest there is; when one is taken, or a thief
//! raises `wanted`, the next joins publish again. This is lazy task creation on top of the split
//! deque; it bounds the deque of a recursive computation by `KEEP` (plus what thieves ask for).
//! A one-worker pool keeps nothing: it has no thieves.
//!
//! Stack bound (SLAW's stack condition): when the frames on the fiber reach S, or fewer than
//! `STACK_RESERVE` bytes are left, help-first and adaptive joins push *both* halves and suspend, so
//! the halves start on a fresh fiber stack; a forced work-first join stops with
//! [`Error::StackLimit`](crate::Error) instead of overflowing.

use crate::error::Error;
use crate::job::{JobRef, StackJob, Work};
use crate::policy::Policy;
use crate::worker::{self, FiberLocal, WorkerThread, STACK_RESERVE};
use std::panic::{self, AssertUnwindSafe};

/// Runs `a` and `b`, potentially in parallel, and returns both results. A panic in either reaches
/// the caller after both have finished. Outside any pool, runs on the global pool.
///
/// Code after `join` returns may run on a different OS thread than the code before it (when a
/// thief took the other half, the joiner's fiber resumes wherever that half finished).
// Never inlined: it reads the thread-local worker pointer inline, once, at entry (see
// `worker::current_at_entry`).
#[inline(never)]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match worker::current_at_entry() {
        Some(wt) => join_in(wt, a, b),
        None => join_global(a, b),
    }
}

#[cold]
#[inline(never)]
fn join_global<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    crate::pool::global().install(|| join(a, b))
}

/// Items a worker of a pool with thieves keeps published before spawns start running in place
/// (`WorkerThread::keep`).
pub(crate) const KEEP: isize = 3;

#[inline(always)]
fn join_in<A, B, RA, RB>(wt: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let fl = wt.fiber_local();
    let depth = fl.depth.get();
    let t = wt.deque.top();
    let fresh = wt.deque.bottom() - t;
    if fresh >= wt.keep
        && !wt.deque.wanted()
        && depth < wt.thresholds.stack
        && fl.stack_left() >= STACK_RESERVE
    {
        // In place: nothing published, nothing to pop back. Under Adaptive an in-place join is a
        // sequential call (work-first order); the heuristic's choice applies to what is published
        // (it still counts this spawn towards its interval).
        let wf = match wt.policy {
            Policy::Adaptive => wt.decide_in_place(depth),
            p => {
                let wf = wt.decide(p, depth, fresh);
                wt.count_spawn(wf);
                wf
            }
        };
        fl.depth.set(depth + 1);
        let r = if wf {
            let ra = panic::catch_unwind(AssertUnwindSafe(a));
            (ra, panic::catch_unwind(AssertUnwindSafe(b)))
        } else {
            let rb = panic::catch_unwind(AssertUnwindSafe(b));
            (panic::catch_unwind(AssertUnwindSafe(a)), rb)
        };
        fl.depth.set(depth);
        return match r {
            (Ok(ra), Ok(rb)) => (ra, rb),
            (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
        };
    }
    join_publish(wt, fl, t, a, b)
}

/// The join that publishes one half.
#[inline(never)]
fn join_publish<A, B, RA, RB>(wt: &WorkerThread, fl: &FiberLocal, t: isize, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if wt.stack_full(fl) {
        return join_deep(wt, a, b);
    }
    let depth = fl.depth.get();
    let wf = wt.decide(wt.policy, depth, wt.deque.bottom() - t);
    wt.count_spawn(wf);
    if wf {
        let job = StackJob::new(b);
        fork(wt, fl, t, &job, a, true)
    } else {
        let job = StackJob::new(a);
        let (rb, ra) = fork(wt, fl, t, &job, b, false);
        (ra, rb)
    }
}

/// Pushes `pushed`, runs `inline`, then syncs with `pushed`. `pushed` is borrowed: a pushed frame
/// must not move until it has run.
#[inline(always)]
fn fork<FP, RP, FI, RI>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    top: isize,
    pushed: &StackJob<FP, RP>,
    inline: FI,
    continuation: bool,
) -> (RI, RP)
where
    FP: FnOnce() -> RP + Send,
    FI: FnOnce() -> RI,
    RP: Send,
{
    let mark = SyncMark::new(wt, fl);
    let job = pushed.as_job_ref();
    wt.push_with_top(Work::Task { job, continuation }, top);
    let depth = fl.depth.get();
    fl.depth.set(depth + 1);
    let ri = panic::catch_unwind(AssertUnwindSafe(inline));
    // Fast path: this fiber was never suspended, so it is on the same worker (`wt` is still
    // ours) and the newest item is ours unless a thief took it.
    let rp = match mark.holds(fl).then(|| wt.deque.pop()).flatten() {
        Some(it) if Work::decode(it).is_job(job) => pushed.run_inline(),
        Some(it) => {
            wt.deque.push(it);
            sync_slow(fl, &mark, pushed)
        }
        None => sync_slow(fl, &mark, pushed),
    };
    fl.depth.set(depth);
    match (ri, rp) {
        (Ok(ri), Ok(rp)) => (ri, rp),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
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
            bottom: wt.deque.bottom(),
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

/// Pops one item above `mark`. Runs a task inline unless it is `mine` (then the caller runs it).
pub(crate) fn pop_above(fl: &FiberLocal, mark: &SyncMark, mine: Option<JobRef>) -> Popped {
    if !mark.holds(fl) {
        return Popped::Stop;
    }
    let wt = worker::current().expect("sync point outside a worker");
    if wt.deque.bottom() <= mark.bottom {
        return Popped::Stop;
    }
    let Some(it) = wt.deque.pop() else {
        return Popped::Stop;
    };
    match Work::decode(it) {
        Work::Task { job, .. } if Some(job) == mine => Popped::Mine,
        Work::Task { job, continuation } => {
            if wt.stack_full(fl) {
                wt.push(Work::Task { job, continuation });
                return Popped::Stop;
            }
            let depth = fl.depth.get();
            fl.depth.set(depth + 1);
            // SAFETY: popped by the owner: nobody else runs it.
            unsafe { job.execute() };
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
    let mut since = wt.overhead_clock();
    loop {
        match pop_above(fl, mark, Some(job.as_job_ref())) {
            Popped::Mine => {
                wt.add_victim(since);
                return job.run_inline();
            }
            Popped::RanOther => since = wt.overhead_clock(),
            Popped::Stop => break,
        }
    }
    wt.add_victim(since);
    worker::suspend_until_stolen(&job.latch);
    job.take_result()
}

/// The stack condition holds: never nest. Both halves are pushed and the joiner suspends, so they
/// start on a loop fiber's fresh stack. A forced work-first join nests until the bytes run out,
/// then stops with a clear error.
#[cold]
#[inline(never)]
fn join_deep<A, B, RA, RB>(wt: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let fl = wt.fiber_local();
    let depth = fl.depth.get();
    if wt.policy == Policy::WorkFirst {
        if fl.stack_left() < STACK_RESERVE {
            panic::panic_any(Error::StackLimit {
                what: format!(
                    "work-first join at frame depth {depth} with {} bytes of fiber stack left",
                    fl.stack_left()
                ),
                limit: format!("{} bytes per fiber stack", wt.registry.config.stack_size),
            });
        }
        wt.decide(Policy::WorkFirst, depth, 0);
        wt.count_spawn(true);
        let job = StackJob::new(b);
        return fork(wt, fl, wt.deque.top(), &job, a, true);
    }
    wt.decide(Policy::HelpFirst, depth, 0);
    wt.count_spawn(false);
    let ja = StackJob::new(a);
    let jb = StackJob::new(b);
    for j in [ja.as_job_ref(), jb.as_job_ref()] {
        wt.push(Work::Task {
            job: j,
            continuation: false,
        });
    }
    worker::suspend_until(&jb.latch);
    worker::suspend_until(&ja.latch);
    match (ja.take_result(), jb.take_result()) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
    }
}
