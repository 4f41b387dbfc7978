//! A lent worker: the thread that builds a pool as the pool's worker 0
//! (`Builder::use_current_thread`, rayon's `ThreadPoolBuilder::use_current_thread`).
//!
//! Every other worker is a thread that runs the dispatcher (`main_loop.rs`) from its start to the
//! pool's end. The lending thread cannot: `build` must return to it, and it goes on running its
//! own code. So worker 0 exists in two states.
//!
//! * **Outside.** The thread runs its own code on its own stack. Its `WorkerThread` is kept in
//!   the thread-local `LENT`, not in `CURRENT`: this thread is not running as a worker, and code
//!   that finds a worker in `CURRENT` assumes it runs on one of the worker's fibers. Its deque is
//!   empty (see leaving, below), so thieves miss nothing; items delivered to its inbox (its
//!   share of a broadcast) wait there. Nobody wakes it: it never sleeps in the pool's sleep
//!   slots, so `Sleep::notify_one` never picks it.
//! * **Inside.** A call the thread makes outside any worker (`Pool::install` on this pool;
//!   `join`, `scope`, `in_place_scope`, `spawn`, `broadcast`, `yield_now`, ... which use this
//!   pool instead of the global one while the thread is lent) *enters*: the call becomes a root
//!   job in worker 0's inbox, `CURRENT` is set, and the thread runs the dispatcher, exactly as a
//!   worker thread does. The loop fiber takes the root job first (inbox before deque), and the
//!   call runs on a fiber of worker 0, on this thread; while it waits at a join the worker
//!   steals and runs other work as any worker does.
//!
//! **Leaving.** The loop fiber goes back to the caller (`run_loop` returns `Leave`: the fiber
//! parks as a spare of worker 0, where the next call starts, and the dispatcher returns) when it
//! finds no work of its own (ready fibers, inbox, deque: all empty, and no deferred
//! completions) and `Seat::may_leave` holds: the root job has finished, and no fiber of this
//! worker is suspended in a task (the dispatcher counts them). A suspended
//! fiber may only be resumed by its home worker (migration is refused with this setting), so
//! leaving with one would strand it; an item left in the deque could be one thieves cannot see
//! (lazy publication keeps the newest private). With neither, nothing of the pool needs this
//! thread until it enters again. The root job runs only on this thread (only worker 0 takes
//! from its inbox, and worker 0 runs only here), so neither it nor its result needs `Send`.
//!
//! **Closing.** A pool dropped on another thread must not stop its workers while this thread
//! is inside: a worker that exits with a fiber suspended strands that fiber, and a root job
//! could wait for it forever. `LentState` is a Dekker pair: the entering thread stores `inside`
//! and then, past a `SeqCst` fence, reads `closing`; the dropping thread stores `closing` and
//! then, past a fence, waits until `inside` reads false. Either the thread sees `closing` and does not enter (the call
//! then runs on the global pool, and the thread stops being lent), or the drop sees `inside` and
//! waits for the call to return (`closing.rs`, model-checked). A pool dropped on the lent thread itself first enters once to
//! help with its spawned tasks (in a one-worker pool nobody else runs them), then stops lending.

use crate::deque::Deque;
use crate::error::Error;
use crate::job::RootJob;
use crate::registry::Registry;
use crate::worker::{self, Guest, WorkerThread};
use std::cell::RefCell;
use std::panic;
use std::sync::Arc;

pub(crate) mod closing;

/// Worker 0 of a pool, kept by the thread lent to it while it is outside.
struct Lent {
    /// Boxed: `CURRENT` points at it while the thread is inside.
    wt: Box<WorkerThread>,
    /// The current entry's call (its suspended fibers, whether its root job has finished).
    call: Guest,
}

impl Drop for Lent {
    fn drop(&mut self) {
        // The spares are parked in their scheduling loops; each must unwind with its worker
        // current. Only ever dropped outside, where `CURRENT` is null; restored all the same.
        let before = worker::current().map_or(std::ptr::null(), |w| w as *const WorkerThread);
        worker::set_current(&*self.wt);
        self.wt.exit_spares();
        worker::set_current(before);
    }
}

thread_local! {
    static LENT: RefCell<Option<Lent>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's lent worker if it is outside and lent to a live pool. A worker
/// whose pool is closing is let go here (outside, so nothing borrows it).
fn with_lent<T>(f: impl FnOnce(&Lent) -> T) -> Option<T> {
    if worker::current().is_some() {
        return None;
    }
    LENT.try_with(|cell| {
        let closed = cell
            .borrow()
            .as_ref()
            .is_some_and(|l| l.wt.core.registry.lent.is_closing());
        if closed {
            // Taken out before it drops: its drop runs fibers, which must find `LENT` free.
            let stale = cell.borrow_mut().take();
            drop(stale);
        }
        cell.borrow().as_ref().map(f)
    })
    .ok()
    .flatten()
}

/// `Builder::build` with `use_current_thread`: refused on a worker, and on a thread already
/// lent to a live pool.
pub(crate) fn may_lend() -> Result<(), Error> {
    if worker::current().is_some() || with_lent(|_| ()).is_some() {
        return Err(Error::CurrentThreadInPool);
    }
    Ok(())
}

/// Makes the calling thread worker 0 of `registry`, which owns `deque`; outside until it enters.
pub(crate) fn lend(registry: &Arc<Registry>, deque: Deque) {
    let lent = Lent {
        wt: Box::new(WorkerThread::new(registry.clone(), 0, deque)),
        call: Guest::new(),
    };
    LENT.with(|cell| {
        let old = cell.borrow_mut().replace(lent);
        drop(old);
    });
}

/// Whether this thread is outside and lent to `registry`'s pool.
pub(crate) fn lent_to(registry: &Registry) -> bool {
    with_lent(|l| std::ptr::eq(&*l.wt.core.registry, registry)).unwrap_or(false)
}

/// The pool this thread is lent to, if it is outside and the pool is live.
pub(crate) fn registry() -> Option<Arc<Registry>> {
    with_lent(|l| l.wt.core.registry.clone())
}

/// Whether this thread's lent worker holds work it has not started (only delivered work can
/// wait for it outside), if it is outside and lent to a live pool.
pub(crate) fn has_pending() -> Option<bool> {
    with_lent(|l| l.wt.has_pending())
}

/// Runs `op` inside the pool this thread is lent to, as its worker 0, and returns its result
/// (a panic in it resumes here); hands `op` back if the thread is not outside and lent to a
/// live pool.
pub(crate) fn run<R, OP: FnOnce() -> R>(op: OP) -> Result<R, OP> {
    let mut op = Some(op);
    let r = with_lent(|l| enter(l, &mut op));
    match r.flatten() {
        Some(r) => Ok(r),
        None => Err(op
            .take()
            .expect("a call that did not enter keeps its closure")),
    }
}

/// [`run`], only if the pool this thread is lent to is `registry`'s.
pub(crate) fn run_in<R, OP: FnOnce() -> R>(registry: &Registry, op: OP) -> Result<R, OP> {
    if lent_to(registry) {
        run(op)
    } else {
        Err(op)
    }
}

/// Enters `l`'s pool for `op` (module doc, "Inside"); `None`, leaving `op` in place, when the
/// pool is closing.
fn enter<R, OP: FnOnce() -> R>(l: &Lent, op: &mut Option<OP>) -> Option<R> {
    let reg = &l.wt.core.registry;
    if !reg.lent.try_enter() {
        return None;
    }
    // Taken only once `try_enter` has let us in: from here on the call runs, and `exit`
    // below is always reached (a panic of the call is caught by the root job).
    let job = RootJob::new(op.take().expect("a call enters once"), &l.call.root_done);
    l.call.root_done.set(false);
    // Only worker 0 takes from its inbox, and it is not running: no wake-up is needed.
    // SAFETY: `job` lives on this frame until the dispatcher below has returned, which it does
    // only after the root job has run (`Seat::may_leave`); only this thread runs worker 0.
    reg.inboxes[0].push(unsafe { job.item() });
    worker::set_current(&*l.wt);
    l.wt.seat.enter_call(&l.call);
    crate::main_loop::dispatch(&l.wt, &l.call.waits);
    l.wt.seat.enter_call(std::ptr::null());
    worker::set_current(std::ptr::null());
    reg.lent.exit();
    // SAFETY: the dispatcher returned, which `Seat::may_leave` allows only after the root job's
    // one run has finished.
    match unsafe { job.take_result() } {
        Ok(r) => Some(r),
        Err(p) => panic::resume_unwind(p),
    }
}

/// The drop of `registry`'s pool, on the thread lent to it (elsewhere, nothing): enter once to
/// help until the pool's spawned tasks have finished (they may need worker 0: in a one-worker
/// pool nobody else runs them), then stop lending.
pub(crate) fn give_back(registry: &Registry) {
    if !lent_to(registry) {
        return;
    }
    let _ = run(|| {
        while registry.spawns.outstanding() != 0 {
            if !crate::main_loop::run_one_delivered() && !crate::main_loop::run_one_stolen() {
                std::thread::yield_now();
            }
        }
    });
    // Outside, so `inside` is false: this returns at once.
    registry.lent.close(|| {});
    // Outside, so nothing borrows it; taken out before it drops (see `with_lent`).
    let stale = LENT
        .try_with(|cell| cell.borrow_mut().take())
        .ok()
        .flatten();
    drop(stale);
}

/// The drop of `registry`'s pool, once its spawned tasks have finished: if it has a lent
/// worker, no call of that thread may enter from now on, and none is inside once this returns
/// (module doc, "Closing").
pub(crate) fn close(registry: &Registry) {
    if registry.config.lent {
        registry
            .lent
            .close(|| std::thread::sleep(std::time::Duration::from_micros(200)));
    }
}
