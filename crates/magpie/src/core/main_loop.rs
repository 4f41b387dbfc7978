//! The scheduling loop: what a worker thread runs, and what runs on every loop fiber.
//!
//! Each worker thread runs [`worker_main`]: it builds its `WorkerThread` on its native stack,
//! publishes it as the thread's current worker, and runs the *dispatcher* ([`dispatch`]), which
//! resumes fibers and carries out what they ask when they yield (see `core/fiber/mod.rs`). Every task
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
use crate::leapfrog::{Top, Waits};
use crate::registry::Registry;
use crate::steal::Took;
use crate::worker::{current, set_current, WorkerThread};
use corosensei::{CoroutineResult, Yielder};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

enum LoopExit {
    /// The pool shuts down: the loop fiber returns.
    Exit,
    /// A lent thread leaves: the loop fiber parks, a spare for the thread's next call.
    Leave,
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
        lineage: Cell::new(std::ptr::null()),
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
                    // SAFETY: the child's frame lives in its suspended parent's stack.
                    fl.lineage.set(unsafe { job.lineage() });
                    // SAFETY: the dispatcher hands each work-first child to exactly one fiber.
                    unsafe { job.execute() };
                    fl.lineage.set(std::ptr::null());
                    fl.depth.set(0);
                    // The child returned here: its parent's continuation, if this worker pops it
                    // next, runs in the sequential order.
                    let wt = current().expect("fiber outside a worker");
                    if wt.core.tracing {
                        wt.fibers.set_serial_cont(cont);
                    }
                }
            }
            let action = match run_loop(&fl) {
                LoopExit::Exit => return,
                LoopExit::Leave => Action::Leave,
                LoopExit::Switch(target) => Action::Switch(target),
            };
            // Parked from here: every task's frame has returned, and what stays live lies above
            // this local but for the switch's own frames (`park` trims the rest if this fiber
            // becomes a trimmed spare). A lent thread's fiber parks here too as the thread
            // leaves, so its next call starts on it instead of on a new fiber: making one and
            // ending it was a third of what a small call from outside the pool cost.
            let here = 0u8;
            fl.parked_at
                .set(std::hint::black_box(std::ptr::addr_of!(here)) as usize);
            cmd = y.suspend(action);
            fl.resumed.set(fl.resumed.get() + 1);
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
    // Nor while a task waits on this thread: what it stole could be unrelated (`leapfrog.rs`).
    if wt.core.tracing || wt.core.registry.region.get().is_some() || wt.seat.waits().top().is_some()
    {
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
    let fl = wt.fiber_local();
    let depth = fl.depth.replace(1);
    // A root of its own: its joins and spawns name its lineage, and the joins pending below it
    // stay out of its promotions (as at a sync point: `sync_point::pop_above`).
    // SAFETY: the caller took the item: its frame is alive.
    let up = fl.lineage.replace(unsafe { job.lineage() });
    let pending = fl.pending.replace(std::ptr::null());
    // SAFETY: the caller's promise: this is the job's one run.
    unsafe { job.execute() };
    fl.pending.set(pending);
    fl.lineage.set(up);
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
    if wt.core.tracing || wt.core.registry.region.get().is_some() || wt.seat.waits().top().is_some()
    {
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
    /// What this worker may start of its own under the waiting task `top` (`leapfrog.rs`): a
    /// ready fiber if it is the top's, an item delivered to it (work placed on this worker,
    /// which only it may run), or its deque's newest item above the top's floor if it descends
    /// from the top (else it goes to the pool's queue, for a worker it is allowed).
    fn next_own_under(&self, top: Top) -> Option<Work> {
        let waits = self.seat.waits();
        while let Some(w) = self.take_own() {
            match w {
                Work::Resume(f) if !waits.admit(f.addr()) => {}
                w => return Some(w),
            }
        }
        while self.core.deque.bottom() > top.floor {
            match self.core.deque.pop().map(Work::decode)? {
                Work::Resume(f) if !waits.admit(f.addr()) => {}
                // SAFETY: we hold the item: it has not run.
                w if !unsafe { w.may_start_under(top) } => {
                    self.core.registry.inject_orphan(w.encode())
                }
                w => return Some(w),
            }
        }
        None
    }

    /// Whether this worker may start `w`, taken by a steal round or from a schedule region,
    /// under the waiting task `top` (`leapfrog.rs`). A task it may not start goes to the pool's
    /// queue, where another worker may take it; a stolen one also ends this worker's stealing
    /// under `top`, which would mostly take more such tasks (the oldest items of a deque). A
    /// region's donation is placed on this worker and runs here. A batch is unpacked here.
    fn admit_taken(&self, top: Top, w: Work, took: Took) -> Option<(Work, Took)> {
        let waits = self.seat.waits();
        match w {
            Work::Batch(it) => {
                for &item in it.take_batch().expect("batch item").iter() {
                    let w = Work::decode(item);
                    // SAFETY: we hold the batch's items: none has run.
                    match unsafe { w.may_start_under(top) } {
                        true => self.push(w),
                        false => self.core.registry.inject_orphan(item),
                    }
                }
                None
            }
            // SAFETY: we hold the item: it has not run.
            w if !unsafe { w.may_start_under(top) } => {
                match took {
                    _ if self.core.registry.region.get().is_some() => return Some((w, took)),
                    Took::Stolen => {
                        waits.stop_stealing();
                        self.core.registry.inject_orphan(w.encode());
                    }
                    _ => self.core.registry.inject_orphan(w.encode()),
                }
                None
            }
            w => Some((w, took)),
        }
    }

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
        // stall check's idle set before it looks for anything (see `ext/schedule/region.rs`).
        let region = wt.core.registry.region.get();
        let ordered = region.as_ref().filter(|r| r.ordered());
        if let Some(r) = ordered {
            r.idle_leave(wt.core.index);
        }
        // Fibers and items only this worker may run come first: a ready fiber is a task that
        // already holds a stack, and nobody else can take it.
        // A thread with a task waiting on it starts only that task's descendants
        // (`leapfrog.rs`); `next_own` and `admit_taken` apply the rule.
        let top = wt.seat.waits().top();
        let own = match top {
            None => wt
                .take_own()
                .or_else(|| wt.core.deque.pop().map(Work::decode)),
            Some(top) => wt.next_own_under(top),
        };
        let found = match own {
            Some(w) => Some((w, Took::Popped)),
            // Completions deferred here may be what a waiter needs; and they may make one ready.
            None if wt.flush_finished() => continue,
            // A thread from outside running as this worker (the worker 0 it lent to the pool,
            // or a sleeping worker's seat it holds) goes back to its caller once its call has
            // returned and nothing of it is left here.
            None if wt.seat.may_leave() => return LoopExit::Leave,
            None => {
                if wt.sleep_if_core_lost() {
                    idle = 0;
                    continue;
                }
                if wt.core.tracing {
                    wt.trace_idle();
                }
                let found = match &region {
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
                };
                match (found, top) {
                    (Some((w, took)), Some(top)) => wt.admit_taken(top, w, took),
                    (found, _) => found,
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
                // SAFETY: we hold the item, so its frame is alive (`JobRef::lineage`).
                fl.lineage.set(unsafe { job.lineage() });
                // SAFETY: an item popped or stolen is run exactly once, by whoever took it.
                unsafe { job.execute() };
                fl.lineage.set(std::ptr::null());
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
                    r.idle_enter(&*wt.core.registry, wt.core.index);
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
    dispatch(&wt, wt.seat.own_waits());
    wt.exit_spares();
    // No guest holds the seat: a lent seat's thread does not leave its sleep at shutdown
    // until the seat is given back, and takes it out of the sleep as it leaves (`sleep.rs`).
    // Release: as the store above; nobody reads the null but a bug.
    wt.core.registry.seats[index].store(std::ptr::null_mut(), std::sync::atomic::Ordering::Release);
    set_current(std::ptr::null());
}

/// The dispatcher: resumes fibers and carries out what they ask when they yield, until the
/// loop fiber it runs returns (at shutdown) or parks itself as a lent thread leaves
/// (`caller_worker.rs`, `borrowed_seat.rs`).
/// `waits` keeps this thread's fibers that are suspended in a task (waiting at a join or
/// scope, or a work-first parent behind its child), which decide what the thread may start
/// (`leapfrog.rs`); a lent worker may leave only when none is. The count wraps: with migration
/// allowed (never for a lent worker) a fiber may suspend on one worker and resume on another,
/// and nobody reads those workers' counts.
/// Runs with `wt` current on this thread.
pub(crate) fn dispatch(wt: &WorkerThread, waits: &Waits) {
    let outer = wt.seat.set_waits(waits);
    let migrate = wt.core.registry.config.migrate;
    let mut next = (wt.take_fiber(fiber_main), Cmd::Run(None));
    loop {
        let (mut f, cmd) = next;
        next = match f.co.resume(cmd) {
            CoroutineResult::Yield(Action::SpawnWf(child, tag)) => {
                wt.stats().suspensions.bump();
                f.tag.set(tag);
                f.at_sync.set(false);
                // The preempted parent's record is still the worker's current one.
                let depth = wt.fiber_local().depth.get();
                let g = wt.take_fiber(fiber_main);
                let parent = FiberPtr::from_box(f);
                // The parent waits for its turn: its child runs first, above it.
                waits.suspend(parent.addr(), 0, wt.core.deque.bottom(), migrate);
                (g, Cmd::Run(Some((child, parent, depth))))
            }
            CoroutineResult::Yield(Action::Wait(latch, tag, floor, key)) => {
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
                    let floor = floor.unwrap_or_else(|| wt.core.deque.bottom());
                    // In a schedule region the template decides where work runs: waits there
                    // restrict only the order of resumption (`leapfrog.rs`).
                    let key = match wt.core.registry.region.get() {
                        Some(_) => crate::leapfrog::OPEN,
                        None => key,
                    };
                    waits.suspend(p.addr(), key, floor, migrate);
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
                // `target` was suspended in a task, by one of the two arms above. The fiber now
                // on top may go on if it was held ready (`leapfrog.rs`).
                if let Some(h) = waits.resumed(target.addr()) {
                    // SAFETY: `h` is the address of a fiber this thread suspended, made ready
                    // and held (`Waits::admit`): the held entry owned it, and now we do.
                    wt.fibers.make_ready_here(unsafe { FiberPtr::from_addr(h) });
                }
                // SAFETY: `target` came out of a `Resume` item, which owned the fiber.
                (unsafe { target.into_box() }, Cmd::Continue)
            }
            CoroutineResult::Yield(Action::Leave) => {
                // The thread leaves; the fiber, parked in its loop, is a spare of the seat, which
                // the thread takes with it (`borrowed_seat::keep`) or finds in its lent worker's
                // record at its next call.
                let parked_at = wt.fiber_local().parked_at.get();
                wt.park(f, Some(parked_at));
                break;
            }
            CoroutineResult::Return(()) => break,
        };
    }
    wt.seat.set_waits(outer);
}
