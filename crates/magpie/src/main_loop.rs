//! The scheduling loop: what a worker thread runs, and what runs on every loop fiber.
//!
//! Each worker thread runs [`worker_main`]: it builds its `WorkerThread` on its native stack,
//! publishes it as the thread's current worker, and runs the *dispatcher* ([`dispatch`]), which
//! resumes fibers and carries out what they ask when they yield (see `fiber/mod.rs`). Every task
//! runs on a fiber; a *loop fiber* runs [`fiber_main`] and, between tasks, `run_loop`, SLAW's
//! Subroutine 1:
//!
//! 1. the worker's own ready fibers, then its inbox (work only it may run: `inbox.rs`);
//! 2. its own deque, newest first;
//! 3. a steal round (`steal.rs`);
//! 4. the idle path (`idle.rs`): spin, yield, sleep, or under DWS give the core back.
//!
//! The registry starts threads on [`worker_main`] and fibers start on [`fiber_main`]; neither
//! module names this one: the pool hands both entry points in when it builds the registry
//! (`Registry::new`, `WorkerThread::take_fiber`), so the loop sits above the records it drives.

use crate::deque::Deque;
use crate::fiber::{Action, Cmd, FiberLocal, FiberPtr};
use crate::job::Work;
use crate::registry::Registry;
use crate::steal::Took;
use crate::worker::{current, set_current, WorkerThread};
use corosensei::{CoroutineResult, Yielder};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

enum LoopExit {
    Exit,
    Switch(FiberPtr),
}

/// The body of every loop fiber.
pub(crate) fn fiber_main(
    y: &Yielder<Cmd, Action>,
    first: Cmd,
    guard_low: usize,
    stack_limit: usize,
) {
    let fl = FiberLocal {
        yielder: y,
        stack_limit,
        reserve_limit: stack_limit + crate::fiber::STACK_RESERVE,
        guard_low,
        depth: Cell::new(0),
        resumed: Cell::new(0),
        pos: Cell::new(std::ptr::null()),
        region_task: Cell::new(crate::position::At::NONE),
        pending: Cell::new(std::ptr::null()),
        level_offset: Cell::new(0),
        track: Cell::new(crate::position::Track::NONE),
        parked_at: Cell::new(0),
        checked: Cell::new(std::ptr::null_mut()),
        wanted: Cell::new(std::ptr::null()),
    };
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut cmd = first;
        loop {
            // An exit touches no worker: a caller's kept spares end at its thread's exit, when
            // no worker is current (`borrowed_seat.rs`).
            if matches!(cmd, Cmd::Exit) {
                return;
            }
            let wt = current().expect("fiber outside a worker");
            wt.core.fiber.set(&fl);
            fl.wanted.set(wt.core.deque.wanted_flag());
            wt.switch_landed();
            match cmd {
                Cmd::Exit => return,
                Cmd::Continue => unreachable!("loop fiber resumed as a task"),
                Cmd::Run(None) => fl.depth.set(0),
                Cmd::Run(Some((job, cont, depth))) => {
                    wt.fibers.set_pending_cont(cont);
                    fl.depth.set(depth + 1);
                    // SAFETY: the dispatcher hands each work-first child to exactly one fiber.
                    unsafe { job.execute() };
                    fl.depth.set(0);
                    // The child returned here: its parent's continuation, if this worker pops it
                    // next, runs in the sequential order.
                    let wt = current().expect("fiber outside a worker");
                    if wt.core.tracing {
                        wt.fibers.set_serial_cont(cont);
                    }
                }
            }
            match run_loop(&fl) {
                LoopExit::Exit => return,
                LoopExit::Switch(target) => {
                    // Parked from here: every task's frame has returned, and what stays live
                    // lies above this local but for the switch's own frames (`park` trims the
                    // rest if this fiber becomes a trimmed spare).
                    let here = 0u8;
                    fl.parked_at
                        .set(std::hint::black_box(std::ptr::addr_of!(here)) as usize);
                    cmd = y.suspend(Action::Switch(target));
                    fl.resumed.set(fl.resumed.get() + 1);
                }
            }
        }
    }));
    if r.is_err() {
        eprintln!("magpie: fatal: a worker's scheduling loop panicked (a bug in magpie)");
        std::process::abort();
    }
}

/// One round of `thread_pool::yield_now` on the worker running the caller: steals one task that
/// has not started from another worker and runs it here, inline on the caller's stack, as the
/// scheduling loop runs what it finds. Returns whether it ran one.
///
/// It only steals (the caller's own deque holds the other halves of the joins it is inside,
/// which those joins take back themselves), and it runs nothing under tracing or a schedule
/// region, whose records assume that tasks start from the scheduling loop. Anything else a
/// steal can bring (a batch, a fiber or a continuation that a pool allowing migration
/// published) goes onto this worker's deque, where the loop finds it: nothing is lost.
pub(crate) fn run_one_stolen() -> bool {
    let Some(wt) = current() else {
        return false;
    };
    if wt.core.tracing || wt.core.registry.region.get().is_some() {
        return false;
    }
    match wt.steal() {
        Some((
            Work::Task {
                job,
                continuation: false,
            },
            _,
        )) => {
            // SAFETY: a stolen item is run exactly once, by whoever took it.
            let wt = unsafe { run_here(wt, job) };
            if wt.core.deque.poll_wanted() {
                wt.core.registry.wake();
            }
            true
        }
        Some((Work::Batch(it), _)) => {
            for &item in it.take_batch().expect("batch item").iter() {
                wt.push(Work::decode(item));
            }
            false
        }
        Some((w, _)) => {
            wt.push(w);
            false
        }
        None => false,
    }
}

/// Runs `job`, a task that has not started, on the calling fiber as the root of a new task tree
/// (`yield_now`, `yield_local`), and returns the worker the fiber is on afterwards: the task may
/// have suspended the fiber, which resumes only on its home worker (or anywhere with migration
/// allowed), so the worker is read again.
///
/// # Safety
/// `job` is run exactly once: the caller took it from a queue and nobody else will run it.
unsafe fn run_here(wt: &WorkerThread, job: crate::job::JobRef) -> &'static WorkerThread {
    let depth = wt.fiber_local().depth.replace(1);
    // SAFETY: the caller's promise: this is the job's one run.
    unsafe { job.execute() };
    let wt = current().expect("a task run in place returned off any worker");
    wt.fiber_local().depth.set(depth);
    wt
}

/// `yield_local`: runs one task from the calling worker's inbox (one that only it may run and
/// that has not started) on the caller's fiber, as [`run_one_stolen`] runs a stolen one. An
/// item of another kind (a fiber to resume) goes back to the inbox, behind what arrived since:
/// the loop resumes it; nothing is lost. Under tracing or a schedule region it runs nothing.
pub(crate) fn run_one_delivered() -> bool {
    let Some(wt) = current() else {
        return false;
    };
    if wt.core.tracing || wt.core.registry.region.get().is_some() {
        return false;
    }
    match wt.core.registry.inboxes[wt.core.index]
        .pop()
        .map(Work::decode)
    {
        Some(Work::Task {
            job,
            continuation: false,
        }) => {
            // SAFETY: an item taken from the inbox is run exactly once, by the worker that took it.
            unsafe { run_here(wt, job) };
            true
        }
        Some(w) => {
            wt.core.registry.deliver(wt.core.index, w.encode());
            false
        }
        None => false,
    }
}

impl WorkerThread {
    /// Whether this worker holds work it has not started: its deque, its inbox or ready fibers.
    pub(crate) fn has_pending(&self) -> bool {
        self.core.deque.len() > 0
            || self.fibers.has_ready()
            || !self.core.registry.inboxes[self.core.index].is_empty()
    }
}

/// Subroutine 1 (idle): own work first, then steal, then sleep. Runs found tasks inline.
fn run_loop(fl: &FiberLocal) -> LoopExit {
    let mut idle: u32 = 0;
    loop {
        let wt = current().expect("loop outside a worker");
        // A schedule region: donations are taken after this worker's own work and before
        // stealing, which the strict constraints forbid; under `Ordered` the worker leaves the
        // stall check's idle set before it looks for anything (see `schedule/region.rs`).
        let region = wt.core.registry.region.get();
        let ordered = region.as_ref().filter(|r| r.ordered());
        if let Some(r) = ordered {
            r.idle_leave(wt.core.index);
        }
        // Fibers and items only this worker may run come first: a ready fiber is a task that
        // already holds a stack, and nobody else can take it.
        let found = match wt
            .take_own()
            .or_else(|| wt.core.deque.pop().map(Work::decode))
        {
            Some(w) => Some((w, Took::Popped)),
            // Completions deferred here may be what a waiter needs; and they may make one ready.
            None if wt.flush_finished() => continue,
            // A worker lent by the thread that built the pool goes back to its caller once the
            // call it entered for has returned and nothing of it is left here.
            None if wt.core.index == 0
                && wt.core.registry.config.lent
                && crate::caller_worker::may_leave(wt) =>
            {
                return LoopExit::Exit
            }
            // So does a caller holding a sleeping worker's seat (`borrowed_seat.rs`).
            None if crate::borrowed_seat::may_leave(wt) => return LoopExit::Exit,
            None => {
                if wt.sleep_if_core_lost() {
                    idle = 0;
                    continue;
                }
                if wt.core.tracing {
                    wt.trace_idle();
                }
                match &region {
                    Some(r) if r.strict() => match r.take(wt.core.index) {
                        Some(it) => Some((Work::decode(it), Took::Injected)),
                        None => wt
                            .core
                            .registry
                            .take_injected()
                            .map(|it| (Work::decode(it), Took::Injected)),
                    },
                    _ => match region.as_ref().and_then(|r| r.take(wt.core.index)) {
                        Some(it) => Some((Work::decode(it), Took::Injected)),
                        None => match wt.steal() {
                            // A strict region began after this round read the slot (none, or
                            // one that has ended since), and what was stolen may be its work,
                            // which must not move: the victim gets it back.
                            Some((w, Took::Stolen)) if wt.core.registry.region.strict_now() => {
                                wt.core.registry.deliver(wt.thief.last_victim(), w.encode());
                                continue;
                            }
                            found => found,
                        },
                    },
                }
            }
        };
        if wt.core.tracing {
            if let Some((w, took)) = found {
                wt.trace_take(w, took);
            }
        }
        match found.map(|f| f.0) {
            Some(Work::Resume(f)) => {
                wt.flush_finished();
                // SAFETY: a ready fiber's box stays alive until it is resumed, and only the
                // worker that took its `Resume` item touches it.
                if unsafe { f.get() }.waited.replace(false) {
                    wt.victim_switch_begins();
                }
                return LoopExit::Switch(f);
            }
            Some(Work::Batch(it)) => {
                // Oldest first, so the oldest end up where thieves steal.
                for &item in it.take_batch().expect("batch item").iter() {
                    wt.push(Work::decode(item));
                }
            }
            Some(Work::Task { job, .. }) => {
                idle = 0;
                fl.depth.set(1);
                fl.level_offset.set(0);
                // SAFETY: an item popped or stolen is run exactly once, by whoever took it.
                unsafe { job.execute() };
                fl.depth.set(0);
                // The job may have suspended; re-read the worker (with migration allowed, this
                // fiber may now run on another one).
                let wt = current().expect("loop outside a worker");
                if wt.core.deque.poll_wanted() {
                    wt.core.registry.wake();
                }
            }
            None => {
                if let Some(r) = ordered {
                    r.idle_enter(&wt.core.registry, wt.core.index);
                }
                drop(region);
                if wt.idle(&mut idle) {
                    return LoopExit::Exit;
                }
            }
        }
    }
}

/// A worker thread: sets up its `WorkerThread` and runs the dispatcher until shutdown.
pub(crate) fn worker_main(registry: Arc<Registry>, index: usize, deque: Deque) {
    if let Some(s) = &registry.sharing {
        s.worker_started(index);
    } else if let Some(cpus) = &registry.config.pin_cpus {
        crate::worker::pin_thread(0, &[cpus[index]]);
    }
    let wt = WorkerThread::new(registry, index, deque);
    set_current(&wt);
    // Release: a guest that takes this seat reads the record after its CAS on the sleep slot,
    // which this thread's later announcement of its sleep publishes anyway.
    wt.core.registry.seats[index].store(
        &wt as *const WorkerThread as *mut (),
        std::sync::atomic::Ordering::Release,
    );
    if let Some(s) = wt.dws() {
        if s.starts_asleep(index) {
            wt.dws_sleep(s);
        }
    }
    // The count of suspended fibers tells the idle path whether the seat may be lent.
    dispatch(&wt, wt.seat.suspended());
    wt.exit_spares();
    // No guest holds the seat: a lent seat's thread does not leave its sleep at shutdown
    // until the seat is given back, and takes it out of the sleep as it leaves (`sleep.rs`).
    // Release: as the store above; nobody reads the null but a bug.
    wt.core.registry.seats[index].store(std::ptr::null_mut(), std::sync::atomic::Ordering::Release);
    set_current(std::ptr::null());
}

/// The dispatcher: resumes fibers and carries out what they ask when they yield, until the
/// loop fiber it runs returns (at shutdown, or when a lent worker leaves: `caller_worker.rs`).
/// `suspended` counts this worker's fibers that are suspended in a task (waiting at a join or
/// scope, or a work-first parent behind its child): a lent worker may leave only when none is.
/// The count wraps: with migration allowed (never for a lent worker) a fiber may suspend on one
/// worker and resume on another, and nobody reads those workers' counts.
/// Runs with `wt` current on this thread.
pub(crate) fn dispatch(wt: &WorkerThread, suspended: &Cell<usize>) {
    let mut next = (wt.take_fiber(fiber_main), Cmd::Run(None));
    loop {
        let (mut f, cmd) = next;
        next = match f.co.resume(cmd) {
            CoroutineResult::Yield(Action::SpawnWf(child, tag)) => {
                wt.stats().suspensions.bump();
                suspended.set(suspended.get().wrapping_add(1));
                f.tag.set(tag);
                f.at_sync.set(false);
                // The preempted parent's record is still the worker's current one.
                let depth = wt.fiber_local().depth.get();
                let g = wt.take_fiber(fiber_main);
                (g, Cmd::Run(Some((child, FiberPtr::from_box(f), depth))))
            }
            CoroutineResult::Yield(Action::Wait(latch, tag)) => {
                f.tag.set(tag);
                f.at_sync.set(true);
                // Take the next fiber first: once registered, `f` may be resumed elsewhere.
                let g = wt.take_fiber(fiber_main);
                // Counted as a victim's switch back in only if its switch out was.
                f.waited.set(wt.switch_began_is_set());
                let p = FiberPtr::from_box(f);
                // SAFETY: the latch lives in the suspended fiber's frame, which cannot be resumed
                // (and so cannot free it) before it is registered or we resume it ourselves.
                if unsafe { &*latch }.register(p.addr()) {
                    wt.stats().suspensions.bump();
                    suspended.set(suspended.get().wrapping_add(1));
                    (g, Cmd::Run(None))
                } else {
                    wt.park(g, None);
                    // SAFETY: not registered, so we still own the fiber.
                    (unsafe { p.into_box() }, Cmd::Continue)
                }
            }
            CoroutineResult::Yield(Action::Switch(target)) => {
                // The record is still `f`'s: it set it last, as it landed.
                let parked_at = wt.fiber_local().parked_at.get();
                wt.park(f, Some(parked_at));
                wt.stats().resumptions.bump();
                // `target` was suspended in a task, by one of the two arms above.
                suspended.set(suspended.get().wrapping_sub(1));
                // SAFETY: `target` came out of a `Resume` item, which owned the fiber.
                (unsafe { target.into_box() }, Cmd::Continue)
            }
            CoroutineResult::Return(()) => break,
        };
    }
}
