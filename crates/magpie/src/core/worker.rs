//! Workers: the worker thread's thread-local record ([`WorkerThread`]) and the join credit.
//!
//! A worker's record lives on its thread's native stack (`main_loop::worker_main` builds it) and
//! is published in the thread-local `CURRENT`, read by [`current`]; only its own thread reads it.
//! What the worker runs, and in which order, is the scheduling loop's (`main_loop.rs`).
//!
//! The *join credit* is how a join knows, without looking at its deque, that it may run in place
//! (lazy publication, see `join.rs`): [`WorkerThread::grant_credit`] looks at the deque once and
//! grants [`CREDIT`] in-place joins, [`WorkerThread::settle_credit`] counts them in bulk.
//!
//! # The record and its parts
//!
//! [`WorkerThread`] is built from sub-records, as a tokio worker's `Core` is. The [`Core`] holds
//! what a join or spawn reads: the worker's identity and pool, its deque, counters, running
//! fiber, join credit and a copy of the pool's settings (with the one byte, `join_mode`, that
//! `join` dispatches on). Every other concern has a record of its own, whose fields only the
//! module that defines it touches; the others call its methods:
//!
//! - `owed` (`owed.rs`): what the worker owes the scopes whose tasks ran on it;
//! - `fibers` (`core/fiber/mod.rs`): ready fibers, the parent waiting for its child's frame, spares;
//! - `thief` (`thief.rs`): the random stream, victim order and last victim of its steals;
//! - `lessons` (`policy.rs`): what its measured spawns showed (oldest-first hand-over);
//! - `seat` (this module, beside [`Guest`]): whether its seat may be lent, and to whom it is;
//! - `clock` (`stats.rs`): the victim's clock of `Builder::measure_overheads`.
//!
//! A record's methods touch only the record. Behaviour that needs the whole worker is written
//! as `impl WorkerThread` blocks in the module of its concern: fibers and spares (`core/fiber/mod.rs`),
//! stealing (`steal.rs`), oldest-first hand-over (`promote.rs`), the idle path (`idle.rs`),
//! the overhead clocks (`overheads.rs`) and the tracing hook's call points (`trace_points.rs`). Each record
//! lives in a module the worker imported already or in one that imports nothing of the
//! runtime's (`owed.rs`, `thief.rs`), so the parts add no import circle.

use crate::deque::{Deque, Item, Pushed};
use crate::fiber::FiberLocal;
use crate::job::Work;
use crate::latch::CountLatch;
use crate::leapfrog::Waits;
use crate::owed::Owed;
use crate::policy::{Adaptive, Policy, Thresholds};
use crate::registry::Registry;
use crate::stats::WorkerStats;
use crate::sync::atomic::Ordering;
use std::cell::Cell;
use std::sync::Arc;

/// In-place joins granted per look at the deque (`WorkerThread::grant_credit`): a steal of the
/// items a worker keeps for thieves is noticed at most this many joins late (a thief that asks,
/// by raising `wanted`, is heard at the next join). A pool's counters are exact once its work
/// has finished. At 32, the look and the bulk count every 32 joins were 7% of fib(36) at one
/// worker (perf: `grant_credit` 3.3%, `count_in_place` 3.5%), and the whole join 12% slower
/// than at 256 (74.5 against 65.6 ms).
pub(crate) const CREDIT: u32 = 256;

/// A worker's thread-local state. Lives on the worker thread's native stack, read only by its
/// own thread. It is built from sub-records, each owned by one module: the [`Core`] that every
/// join and spawn reads (this module's), and one record for each concern around it, whose
/// fields only its module touches.
pub(crate) struct WorkerThread {
    /// What the join and spawn paths read: the worker's identity, deque, counters, running
    /// fiber, credit and the pool's settings.
    pub(crate) core: Core,
    /// What the worker owes the scopes whose tasks ran here (`owed.rs`).
    pub(crate) owed: Owed,
    /// Fibers made ready here, the parent waiting for its child's frame, and spares
    /// (`core/fiber/mod.rs`).
    pub(crate) fibers: crate::fiber::Fibers,
    /// The thief's state: its random stream, victim order and last victim (`thief.rs`).
    pub(crate) thief: crate::thief::Thief,
    /// What the worker learned of its spawns (`promote.rs`, "Spawns").
    pub(crate) lessons: crate::policy::Lessons,
    /// Whether the worker's seat may be lent, and to whom it is (`borrowed_seat.rs`).
    pub(crate) seat: Seat,
    /// The victim's clock for `Builder::measure_overheads` (`overheads.rs`).
    pub(crate) clock: crate::stats::Clock,
}

/// The part of a worker that the join and spawn paths read. The compiler orders its fields: a
/// `repr(C)` order with the fields every join and spawn reads first made fj's in-place spawns
/// about 25% slower at one worker (both of its per-process modes, 4.0 to 4.9 ms and 6.9 to 9.0
/// ms), with the same instructions; this order gives the old times back.
pub(crate) struct Core {
    /// The running fiber's record.
    pub(crate) fiber: Cell<*const FiberLocal>,
    /// The join credit: in-place joins this worker may still run before it looks at its deque.
    credit: Credit,
    /// `policy` and `promotes` as `join` dispatches on them (one byte).
    pub join_mode: crate::policy::JoinMode,
    /// Copies of the pool's settings, read on every spawn.
    pub policy: Policy,
    /// Whether the pool traces (`registry.recorder` is set).
    pub tracing: bool,
    /// Items to keep published before joins and spawns run in place (`policy::KEEP`, or
    /// `policy::KEEP_PROMOTING` when the pool promotes; none in a one-worker pool, which has no
    /// thieves: work from outside arrives through the injector).
    pub keep: isize,
    /// Whether in-place joins record their pending halves and publishing promotes the oldest
    /// (`promote.rs`): a pool with thieves that neither traces nor allows migration, with
    /// `Builder::oldest_first` on.
    pub promotes: bool,
    /// Whether the pool checks for races (`hooks::Structure`): then no credit is granted (so
    /// every join reaches `join_cold`, which takes the checked path) and no spawn runs in
    /// place (so every spawn's child is made by `Scope::task`).
    pub(crate) checks: bool,
    /// This worker's counters (an entry of `registry.stats`).
    stats: *const WorkerStats,
    pub deque: Deque,
    pub thresholds: Thresholds,
    pub registry: Arc<Registry>,
    pub index: usize,
    adaptive: Adaptive,
}

/// The join credit (module doc): in-place joins a worker may still run before it looks at its
/// deque again, made once per [`CREDIT`] joins instead of on every join.
struct Credit {
    /// In-place joins left.
    left: Cell<u32>,
    /// `left` when last granted or counted: `granted - left` in-place joins ran since and are
    /// not yet in the stats.
    granted: Cell<u32>,
    /// One more than the deepest frame depth counted in `max_frames` by an in-place join (never
    /// above S): an in-place join below it has nothing to update.
    frames_hw: Cell<u32>,
    /// In-place joins and spawns counted by `settle_credit` so far (`ops_done`).
    settled: Cell<u64>,
    /// In a pool that promotes, an in-place join at a frame depth below this records its
    /// pending half (`promote.rs`, "Which joins record"); `u32::MAX` while thieves ask.
    records_below: Cell<u32>,
    /// `settled` (in-place joins and spawns counted) when a thief last asked this worker for
    /// work, or it last went to sleep.
    asked_at: Cell<u64>,
}

/// A call a thread from outside runs as a worker, in a seat lent to it while it sleeps
/// (`borrowed_seat.rs`) or as the worker 0 it lent to its pool (`caller_worker.rs`): what
/// decides when the thread may leave. `Seat::call` points at it while the call runs, and a
/// borrowed seat's `Seat::guest` too.
pub(crate) struct Guest {
    /// The thread's fibers suspended in a task (kept by the dispatcher).
    pub(crate) waits: Waits,
    /// Whether the call's root job has finished.
    pub(crate) root_done: Cell<bool>,
}

impl Guest {
    pub(crate) fn new() -> Guest {
        Guest {
            waits: Waits::new(),
            root_done: Cell::new(false),
        }
    }

    /// Whether nothing of the call is left in the worker: its root job has finished and none
    /// of its fibers is suspended.
    pub(crate) fn done(&self) -> bool {
        self.root_done.get() && self.waits.suspended() == 0
    }
}

/// A worker's side of the lending of its seat (`WorkerThread::seat`, `borrowed_seat.rs`).
pub(crate) struct Seat {
    /// Fibers of this worker's own thread suspended in a task (kept by the dispatcher): its
    /// seat may be lent only while there are none.
    own: Waits,
    /// The waiting tasks of the dispatcher running as this worker now: `own`, or a guest's
    /// (null until the worker's own dispatcher starts).
    active: Cell<*const Waits>,
    /// The caller holding this seat, if a thread from outside runs as this worker now; null
    /// while the worker's own thread runs it.
    guest: Cell<*const Guest>,
    /// The call of a thread from outside running as this worker now, which leaves once the call
    /// is done: a borrowed seat's guest, or the call the lent worker 0 entered for
    /// (`caller_worker.rs`). Null while the worker's own thread runs it.
    call: Cell<*const Guest>,
}

impl Seat {
    pub(crate) fn new() -> Seat {
        Seat {
            own: Waits::new(),
            active: Cell::new(std::ptr::null()),
            guest: Cell::new(std::ptr::null()),
            call: Cell::new(std::ptr::null()),
        }
    }

    /// The worker's own thread's waiting tasks, kept by its dispatcher.
    pub(crate) fn own_waits(&self) -> &Waits {
        &self.own
    }

    /// The waiting tasks of the thread running as this worker now (`leapfrog.rs`).
    #[inline]
    pub(crate) fn waits(&self) -> &Waits {
        // SAFETY: `active` is null or points at the `Waits` of the dispatcher running as this
        // worker (`main_loop::dispatch` sets it and puts the old one back before returning),
        // which outlives the dispatch; only that thread reads it.
        unsafe { self.active.get().as_ref() }.unwrap_or(&self.own)
    }

    /// Makes `w` the active waits (a dispatcher starting on this worker); returns the old one.
    pub(crate) fn set_waits(&self, w: *const Waits) -> *const Waits {
        self.active.replace(w)
    }

    /// Whether the seat may be lent now: the pool lends seats (`lends`) and none of the
    /// worker's own fibers is suspended.
    pub(crate) fn lendable(&self, lends: bool) -> bool {
        lends && self.own.suspended() == 0
    }

    /// Hands the seat to `guest` (null: back to the worker's own thread).
    pub(crate) fn set_guest(&self, guest: *const Guest) {
        self.guest.set(guest);
    }

    /// Whether a thread from outside holds the seat now.
    pub(crate) fn is_lent(&self) -> bool {
        !self.guest.get().is_null()
    }

    /// Runs `call`, a thread from outside's, as this worker until `leave` (which must come
    /// before `call` ends); null: none.
    pub(crate) fn enter_call(&self, call: *const Guest) {
        self.call.set(call);
    }

    /// Whether a thread from outside runs as this worker and may go back to its caller (the
    /// dispatcher found no work of its own): its call's root job has finished and none of its
    /// fibers is suspended (`caller_worker.rs` and `borrowed_seat.rs`, "Leaving").
    pub(crate) fn may_leave(&self) -> bool {
        let c = self.call.get();
        // SAFETY: a non-null `call` points at the `Guest` of the frame that entered the call
        // (`caller_worker::enter`, `borrowed_seat::run_in`), which clears it before that frame
        // ends; only the entering thread runs this worker meanwhile.
        !c.is_null() && unsafe { (*c).done() }
    }
}

thread_local! {
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(std::ptr::null()) };
}

/// The worker running the caller, if any. Never inlined: a task's fiber may suspend on one
/// worker's thread and resume on another's (with migration allowed), and an inlined read could
/// let the compiler reuse the thread-local's address from before the suspension; a call reads it
/// afresh. [`current_at_entry`] is the one exception.
#[inline(never)]
pub(crate) fn current() -> Option<&'static WorkerThread> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: the pointer is set by `worker_main` for the lifetime of its thread and cleared before
    // the `WorkerThread` is dropped. Callers do not keep the reference across a suspension.
    unsafe { p.as_ref() }
}

/// The guard region (guard page and slack) of the fiber running on this thread, if any; for the
/// stack-overflow handler (`overflow.rs`, Unix only), so it reads plain memory only.
#[cfg(unix)]
pub(crate) fn guard_of_running_fiber() -> Option<(usize, usize)> {
    let wt = CURRENT.with(|c| c.get());
    if wt.is_null() {
        return None;
    }
    // SAFETY: `wt` is this thread's live WorkerThread; its `fiber` is null or the running fiber's
    // record, which lives in that fiber's stack.
    let fl = unsafe { (*wt).core.fiber.get() };
    if fl.is_null() {
        return None;
    }
    // SAFETY: as above.
    let fl = unsafe { &*fl };
    Some((fl.guard_low, fl.stack_limit))
}

/// [`current`], inlined. Only for the first statement of a function that is itself never inlined
/// and reads no other thread-local after code that may suspend (`join` is the one user): within
/// one function the compiler may reuse a thread-local address computed earlier, which is only
/// wrong if the fiber moved to another thread in between.
#[inline(always)]
pub(crate) fn current_at_entry() -> Option<&'static WorkerThread> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: as in `current`.
    unsafe { p.as_ref() }
}

impl WorkerThread {
    #[inline(always)]
    pub(crate) fn stats(&self) -> &WorkerStats {
        // SAFETY: points at this worker's entry of `registry.stats`, which lives as long as the
        // registry, which `self` keeps alive.
        unsafe { &*self.core.stats }
    }

    /// The record of the fiber running now. Valid while that fiber runs: a caller that may have
    /// been suspended since must look it up again (or keep using the same record, which travels
    /// with its fiber).
    #[inline(always)]
    pub(crate) fn fiber_local(&self) -> &'static FiberLocal {
        // SAFETY: set by the fiber itself whenever it (re)starts on this worker; the record lives
        // in that fiber's stack for the fiber's whole life.
        unsafe { &*self.core.fiber.get() }
    }

    /// Pops the newest item at a sync point that may take its own pushed half back. The deque
    /// shrinks, so the join credit is settled: the next join looks at the deque again.
    #[inline(always)]
    pub(crate) fn pop_back(&self) -> Option<Item> {
        self.settle_credit();
        self.core.deque.pop()
    }

    /// Pushes work on this worker's deque, waking a sleeper if it became visible to thieves.
    #[inline(always)]
    pub(crate) fn push(&self, w: Work) {
        let t = self.core.deque.top();
        self.push_with_top(w, t);
    }

    /// `push` with a freshly read `top` (see `Deque::push_with_top`).
    #[inline(always)]
    pub(crate) fn push_with_top(&self, w: Work, t: isize) {
        let len = (self.core.deque.bottom() - t + 1) as u64;
        if self.core.deque.push_with_top(w.encode(), t) == Pushed::Released {
            self.core.registry.wake();
        }
        self.stats().max_fresh.max(len);
    }

    /// Decides one spawn at frame depth `depth` with `fresh` tasks in the deque: true for
    /// work-first. The caller counts the spawn ([`count_spawn`](Self::count_spawn)) once it knows
    /// how the spawn is carried out.
    #[inline(always)]
    pub(crate) fn decide(&self, requested: Policy, depth: u32, fresh: isize) -> bool {
        self.stats().max_frames.max(depth as u64 + 1);
        match requested {
            Policy::WorkFirst => true,
            Policy::HelpFirst => false,
            // In a schedule region the adaptive choice would make the order in which a worker
            // creates its cuts depend on run-time counters, which a followed schedule cannot
            // reproduce: there Adaptive spawns work-first (`ext/schedule/region.rs`).
            Policy::Adaptive if self.core.registry.region.active() => true,
            Policy::Adaptive => self.decide_adaptive(depth, fresh),
        }
    }

    /// Counts one spawn as carried out: work-first (the child ran first, in place or on a fresh
    /// fiber) or help-first (the child was published).
    #[inline(always)]
    pub(crate) fn count_spawn(&self, work_first: bool) {
        if work_first {
            self.stats().spawns_wf.bump()
        } else {
            self.stats().spawns_hf.bump()
        }
    }

    /// Records that a task of the scope counted by `count` finished here; the count is subtracted
    /// later, by `flush_finished` (`owed.rs`).
    #[inline]
    pub(crate) fn defer_finish(&self, count: &CountLatch) {
        if !self.owed.is_to(count) {
            self.flush_finished();
        }
        self.owed.add_finished(count);
    }

    /// Counts one more task of the scope counted by `count`, spawned by this worker
    /// ([`Owed::count_spawned`]).
    #[inline(always)]
    pub(crate) fn count_spawned(&self, count: &CountLatch) {
        self.owed.count_spawned(count);
    }

    /// Subtracts the deferred completions from their scope's count (making its waiter ready if
    /// they were the last). Called before this worker starts anything that is not another task of
    /// the same scope, looks for work elsewhere, sleeps or suspends, so a scope's completion is
    /// never held up by a worker doing something else. Returns whether a waiter became ready.
    #[inline]
    pub(crate) fn flush_finished(&self) -> bool {
        self.settle_credit();
        match self.owed.pay() {
            Some(w) => {
                crate::fiber::make_ready(w);
                true
            }
            None => false,
        }
    }

    /// Flushes deferred completions unless they belong to the scope counted by `count`.
    #[inline]
    pub(crate) fn flush_finished_unless(&self, count: &CountLatch) {
        if !self.owed.is_to(count) {
            self.flush_finished();
        }
    }

    /// Whether a `join` at frame depth `depth` may run in place without looking at its deque:
    /// the worker has credit left from its last look, no thief is asking for work (`wanted`, on
    /// a line thieves write only to ask; read only if `listens`), and the depth is below the
    /// deepest frame it has already counted (so `max_frames` and the stack condition S need no
    /// update). The caller then spends
    /// one credit ([`spend_credit`](Self::spend_credit)). The credit bounds how long a steal of
    /// the kept items goes unnoticed; `wanted` makes a thief that found nothing heard at once,
    /// however rare the spawns (nqueens spawns only in its top rows, between long searches).
    ///
    /// Without `listens` the flag is not read here: in a one-worker pool nobody sets it, and a
    /// join that records its pending half for oldest-first hand-over reads it on the way out of
    /// its first half instead (`join::in_place_pending`; a tracked region task's join, which
    /// records nothing, before it runs in place), where a request is answered by promoting the
    /// oldest pending half, which is what this test would lead to as well. A request raised
    /// while such a join descends is then answered when the innermost first half returns rather
    /// than at the next join.
    #[inline(always)]
    pub(crate) fn has_credit(&self, depth: u32, listens: bool) -> bool {
        let c = &self.core.credit;
        c.left.get() != 0 && depth < c.frames_hw.get() && !(listens && self.core.deque.wanted())
    }

    /// Spends one credit: the in-place join is counted at the next
    /// [`settle_credit`](Self::settle_credit).
    #[inline(always)]
    pub(crate) fn spend_credit(&self) {
        let c = &self.core.credit;
        c.left.set(c.left.get() - 1);
    }

    /// The look behind the credit: whether a `join` at frame depth `depth` may run in place
    /// (lazy publication: the deque keeps `keep` items for thieves, no thief asked for more, and
    /// the stack condition allows another frame). If so, grants [`CREDIT`] in-place joins; if not,
    /// none, so the next join looks again.
    #[cold]
    #[inline(never)]
    pub(crate) fn grant_credit(&self, depth: u32) -> bool {
        self.settle_credit();
        if self.core.checks {
            // A checked pool: every join and spawn must reach the checked paths.
            return false;
        }
        if self.core.tracing && self.fiber_local().cursor().is_none() {
            // A tracing pool: each join decides alone (`join::join_traced`), and spawns
            // publish, as the trace's reconstruction assumes.
            return false;
        }
        if self.fiber_local().cursor().is_some_and(|c| !c.tracked()) {
            // A region task whose joins must be positioned one by one (it looks them up in a
            // template): no credit, so every join and spawn reaches the positioned paths
            // (`position.rs`). Below a tracked cursor the in-place paths keep positions.
            return false;
        }
        if self.core.promotes {
            self.count_look_for_records();
            if !self.fiber_local().pending.get().is_null() {
                self.promote_for_thieves();
            }
        }
        if !self.may_run_in_place(depth, self.core.deque.top()) {
            return false;
        }
        let c = &self.core.credit;
        if depth >= c.frames_hw.get() {
            c.frames_hw.set(depth + 1);
            self.stats().max_frames.max(depth as u64 + 1);
        }
        c.left.set(CREDIT);
        c.granted.set(CREDIT);
        true
    }

    /// In-place joins and spawns this worker has run on its credit so far, counted or not.
    #[inline(always)]
    pub(crate) fn ops_done(&self) -> u64 {
        self.core.credit.settled.get() + self.unsettled() as u64
    }

    /// In-place joins run on the credit since it was last settled, not yet in the stats.
    #[inline(always)]
    pub(crate) fn unsettled(&self) -> u32 {
        let c = &self.core.credit;
        c.granted.get() - c.left.get()
    }

    /// Whether an in-place join at frame depth `depth` of a pool that promotes records its
    /// pending half (`promote.rs`, "Which joins record").
    #[inline(always)]
    pub(crate) fn records(&self, depth: u32) -> bool {
        depth < self.core.credit.records_below.get()
    }

    /// Every in-place join records its pending half again: a thief asked this worker for work,
    /// or the worker was idle long enough to sleep (the next computation starts afresh).
    #[inline]
    pub(crate) fn record_every_join(&self) {
        let c = &self.core.credit;
        c.asked_at.set(c.settled.get());
        c.records_below.set(u32::MAX);
    }

    /// Called at each look at the deque in a pool that promotes, once the credit is settled:
    /// hears a thief's request, or, once [`QUIET_OPS`](crate::policy::QUIET_OPS) in-place
    /// joins and spawns have run since the last one, lets only the joins above
    /// [`QUIET_RECORDS`](crate::policy::QUIET_RECORDS) record.
    fn count_look_for_records(&self) {
        if self.core.deque.wanted() {
            return self.record_every_join();
        }
        let c = &self.core.credit;
        if c.settled.get() - c.asked_at.get() >= crate::policy::QUIET_OPS {
            c.records_below.set(crate::policy::QUIET_RECORDS);
        }
    }

    /// In-place joins left on the credit (a cheap pseudo-random sample for `promote.rs`).
    #[inline(always)]
    pub(crate) fn credit_left(&self) -> u32 {
        self.core.credit.left.get()
    }

    /// Lazy publication's test: the deque (whose thieves' end was read as `top`) keeps `keep`
    /// items for thieves, none asked for more, and the stack condition allows a frame at depth
    /// `depth`. What the credit stands for, and what region tasks, which get none, ask directly.
    #[inline]
    pub(crate) fn may_run_in_place(&self, depth: u32, top: isize) -> bool {
        self.core.deque.bottom() - top >= self.core.keep
            && !self.core.deque.wanted()
            && depth < self.core.thresholds.stack
    }

    /// Counts the in-place joins run on the credit (as spawns of the pool's policy: work-first
    /// for Adaptive, whose in-place joins run in work-first order; and towards the adaptive
    /// heuristic's interval) and withdraws what is left, so the next join looks at the deque.
    /// Called wherever the deque may have changed under the credit (the worker popped back
    /// published work, or turns to another task) and before anything that lets another thread
    /// see this worker's work as finished (a latch set, a scope's count decremented), so
    /// `Pool::stats` after `install` counts every spawn.
    #[inline]
    pub(crate) fn settle_credit(&self) {
        let c = &self.core.credit;
        let n = c.granted.get() - c.left.get();
        c.left.set(0);
        c.granted.set(0);
        c.settled.set(c.settled.get() + n as u64);
        if n != 0 {
            self.count_in_place(n);
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn count_in_place(&self, n: u32) {
        if self.core.policy == Policy::HelpFirst {
            self.stats().spawns_hf.add(n as u64);
        } else {
            self.stats().spawns_wf.add(n as u64);
        }
        if self.core.policy == Policy::Adaptive
            && self
                .core
                .adaptive
                .tick_by(&self.core.thresholds, n, || self.stats().stolen_from())
        {
            self.stats().policy_switches.bump();
        }
    }

    #[inline(always)]
    fn decide_adaptive(&self, depth: u32, fresh: isize) -> bool {
        let (wf, switched) =
            self.core
                .adaptive
                .decide(&self.core.thresholds, depth, fresh.max(0) as usize, || {
                    self.stats().stolen_from()
                });
        if switched {
            self.stats().policy_switches.bump();
        }
        wf
    }

    /// Whether the stack condition holds for the running fiber: S frames, or too few bytes left.
    #[inline(always)]
    pub(crate) fn stack_full(&self, fl: &FiberLocal) -> bool {
        fl.depth.get() >= self.core.thresholds.stack || !fl.has_reserve()
    }

    /// Whether a work-first scope spawn may take one more fiber.
    pub(crate) fn fiber_limit_reached(&self) -> bool {
        // Relaxed: a soft limit; a stale count only misses the fibers made or freed meanwhile.
        self.core.registry.live_fibers.load(Ordering::Relaxed)
            >= self.core.registry.config.max_fibers
    }
}

/// Makes `wt` the worker running on this thread (null: none). Whoever sets it keeps the
/// `WorkerThread` alive, and on this thread, until it clears it again.
pub(crate) fn set_current(wt: *const WorkerThread) {
    CURRENT.with(|c| c.set(wt));
}

impl WorkerThread {
    /// Worker `index` of `registry`, owning `deque`, before it has run anything.
    pub(crate) fn new(registry: Arc<Registry>, index: usize, deque: Deque) -> WorkerThread {
        let registry_traces = registry.config.trace;
        let checks = registry.structure().is_some();
        let promotes = registry.config.workers > 1
            && registry.config.oldest_first
            && !registry_traces
            && !registry.config.migrate
            && !checks;
        let tiers = registry.victim_tiers(index);
        // A pool that checks for races runs no spawn in place (neither with thieves satisfied
        // nor at the fresh-task bound), so that every spawn is published through
        // `Scope::task`, where the child's context is made: the spawn path tests nothing for
        // it.
        let mut thresholds = registry.config.thresholds;
        if checks {
            thresholds.fresh = u32::MAX;
        }
        WorkerThread {
            core: Core {
                index,
                policy: registry.config.policy,
                thresholds,
                keep: if checks {
                    isize::MAX
                } else if registry.config.workers > 1 && promotes {
                    crate::policy::KEEP_PROMOTING
                } else if registry.config.workers > 1 {
                    crate::policy::KEEP
                } else {
                    0
                },
                promotes,
                checks,
                join_mode: crate::policy::JoinMode::of(
                    registry.config.policy,
                    promotes,
                    registry.config.workers,
                ),
                stats: &*registry.stats[index] as *const WorkerStats,
                tracing: registry_traces,
                registry,
                deque,
                fiber: Cell::new(std::ptr::null()),
                credit: Credit {
                    left: Cell::new(0),
                    granted: Cell::new(0),
                    frames_hw: Cell::new(0),
                    settled: Cell::new(0),
                    records_below: Cell::new(u32::MAX),
                    asked_at: Cell::new(0),
                },
                adaptive: Adaptive::new(),
            },
            owed: Owed::new(),
            fibers: crate::fiber::Fibers::new(),
            thief: crate::thief::Thief::new(index, tiers),
            lessons: crate::policy::Lessons::new(),
            seat: Seat::new(),
            clock: crate::stats::Clock::new(),
        }
    }
}

/// Sets thread `tid`'s (0: the caller's) affinity to `cpus`: on Linux only; elsewhere threads
/// are not pinned (placement is a hint there too).
#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_thread(_tid: i32, _cpus: &[usize]) {}

/// Sets thread `tid`'s (0: the caller's) affinity to `cpus`. A refusal (a CPU left the affinity
/// mask since the topology was read) leaves it where it was: placement is a hint, never a reason
/// to fail.
#[cfg(target_os = "linux")]
pub(crate) fn pin_thread(tid: i32, cpus: &[usize]) {
    // SAFETY: `set` is a plain bit set of the size we pass; CPU_SET is given only indices below
    // CPU_SETSIZE; sched_setaffinity reads `set` and changes no memory of ours.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The context of a child the running task spawns, made in the running task's own
/// (`hooks::Structure::spawn`), when the pool checks for races and the task is checked.
pub(crate) fn checked_child() -> Option<crate::hooks::Ctx> {
    let wt = current()?;
    if !wt.core.checks {
        return None;
    }
    let cur = wt.fiber_local().checked.get();
    if cur.is_null() {
        return None;
    }
    Some(wt.core.registry.structure()?.spawn(crate::hooks::Ctx(cur)))
}

/// Runs `f`, a task whose context is `c` (`hooks::Structure`), as the running task of
/// whichever fiber and worker run it: the fiber's context is `c` from the structure's `begin`
/// to its `end` (also when `f` unwinds), and what it was is put back after. A task begins and
/// ends on one fiber (a suspended fiber resumes only where it ran), so the contexts of the
/// tasks of one fiber nest.
pub(crate) fn run_in<R>(c: crate::hooks::Ctx, f: impl FnOnce() -> R) -> R {
    let wt = current().expect("a checked task runs on a worker of its pool");
    let s = wt
        .core
        .registry
        .structure()
        .expect("a checked task runs in a checked pool");
    let fl = wt.fiber_local();
    let prev = fl.checked.replace(c.0);
    s.begin(c, wt.core.index);
    /// Ends the task and puts the fiber's context back, on return or unwind.
    struct Back<'a> {
        s: &'a dyn crate::hooks::Structure,
        fl: &'a crate::fiber::FiberLocal,
        c: crate::hooks::Ctx,
        prev: *mut (),
    }
    impl Drop for Back<'_> {
        fn drop(&mut self) {
            self.s.end(self.c);
            self.fl.checked.set(self.prev);
        }
    }
    let _back = Back { s, fl, c, prev };
    f()
}
