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
//! Around this core, other modules add `impl WorkerThread` blocks for their own concern: fibers
//! and spares (`fiber/mod.rs`), stealing (`steal.rs`), oldest-first hand-over (`promote.rs`), the
//! idle path (`idle.rs`), the overhead clocks (`overheads.rs`) and the trace hooks
//! (`trace/hooks.rs`).

use crate::deque::{Deque, Item, Pushed};
use crate::fiber::{Cmd, Fiber, FiberLocal, FiberPtr};
use crate::job::Work;
use crate::latch::CountLatch;
use crate::policy::{Adaptive, Policy, Thresholds};
use crate::registry::Registry;
use crate::stats::WorkerStats;
use crate::sync::atomic::Ordering;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// In-place joins granted per look at the deque (`WorkerThread::grant_credit`): a steal of the
/// items a worker keeps for thieves is noticed at most this many joins late (a thief that asks,
/// by raising `wanted`, is heard at the next join). A pool's counters are exact once its work
/// has finished. At 32, the look and the bulk count every 32 joins were 7% of fib(36) at one
/// worker (perf: `grant_credit` 3.3%, `count_in_place` 3.5%), and the whole join 12% slower
/// than at 256 (74.5 against 65.6 ms).
pub(crate) const CREDIT: u32 = 256;

/// Counts a worker adds to a scope's count at once when a spawn into that scope takes the last
/// count it owed the scope ([`WorkerThread::count_spawned`]).
pub(crate) const SPAWN_RESERVE: usize = 32;

/// A worker's thread-local state. Lives on the worker thread's native stack, read only by its
/// own thread. The compiler orders its fields: a `repr(C)` order with the fields every join and
/// spawn reads first made fj's in-place spawns about 25% slower at one worker (both of its
/// per-process modes, 4.0 to 4.9 ms and 6.9 to 9.0 ms), with the same instructions; this order
/// gives the old times back.
pub(crate) struct WorkerThread {
    /// The running fiber's record.
    pub(crate) fiber: Cell<*const FiberLocal>,
    /// In-place joins this worker may still run before it looks at its deque again: lazy
    /// publication's check, made once per [`CREDIT`] joins instead of on every join.
    pub(crate) credit: Cell<u32>,
    /// `credit` when last granted or counted: `granted - credit` in-place joins ran since and
    /// are not yet in the stats.
    pub(crate) granted: Cell<u32>,
    /// One more than the deepest frame depth counted in `max_frames` by an in-place join (never
    /// above S): an in-place join below it has nothing to update.
    frames_hw: Cell<u32>,
    /// In-place joins and spawns counted by `settle_credit` so far (`ops_done`).
    settled: Cell<u64>,
    /// Oldest-first hand-over for scope spawns (`promote.rs`, "Spawns"): an adaptive spawn at a
    /// spawn-tree level above this publishes its child instead of running it in place. Learned from
    /// in-place children that made work of their own; back to 0 (none) when the worker has
    /// been idle long enough to sleep (`idle.rs`).
    pub(crate) shallow_spawns: Cell<u32>,
    /// What this worker's measured spawns showed, per level (`promote.rs`, "Spawns").
    pub(crate) spawn_sizes: crate::policy::SpawnSizes,
    /// Copies of the pool's settings, read on every spawn.
    pub policy: Policy,
    /// Whether the pool traces (`registry.recorder` is set).
    pub tracing: bool,
    /// Items to keep published before spawns run in place (`join::KEEP`; none in a one-worker
    /// pool, which has no thieves: work from outside arrives through the injector).
    pub keep: isize,
    /// Whether in-place joins record their pending halves and publishing promotes the oldest
    /// (`promote.rs`): a pool with thieves that neither traces nor allows migration, with
    /// `Builder::oldest_first` on.
    pub promotes: bool,
    /// Whether the pool checks for races (`hooks::Structure`): then no credit is granted (so
    /// every join reaches `join_cold`, which takes the checked path) and no spawn runs in
    /// place (so every spawn's child is made by `Scope::task`).
    pub(crate) checks: bool,
    /// `policy` and `promotes` as `join` dispatches on them (one byte).
    pub join_mode: crate::policy::JoinMode,
    /// This worker's counters (an entry of `registry.stats`).
    stats: *const WorkerStats,
    pub deque: Deque,
    pub thresholds: Thresholds,
    pub registry: Arc<Registry>,
    pub index: usize,
    /// What this worker owes the scope counted by `finished_scope`: tasks of it that ran here, and
    /// counts reserved for spawns (`count_spawned`), not yet subtracted from its count.
    /// Consecutive tasks of one scope are thus counted with one atomic instead of one each, and
    /// the count's cache line stays with its spawner.
    finished_scope: Cell<*const CountLatch>,
    finished: Cell<usize>,
    adaptive: Adaptive,
    /// A work-first parent waiting to be made ready by the child's frame.
    pub(crate) pending_cont: Cell<Option<FiberPtr>>,
    /// Ready fibers of this worker made ready by this worker itself (a local delivery, which
    /// needs no lock): taken before the inbox and the deque.
    pub(crate) ready: RefCell<VecDeque<FiberPtr>>,
    /// With `Config::overheads`: when a fiber switch that a victim pays for began (a waiting
    /// task suspending, or a waiting task being resumed); the fiber that runs next adds the time.
    pub(crate) switch_began: Cell<Option<Instant>>,
    pub(crate) rng: Cell<u64>,
    /// The other workers in the order a thief tries them (`steal::victim_tiers`); `None` for
    /// random victims.
    pub(crate) tiers: Option<[Vec<usize>; 3]>,
    /// A work-first parent whose child has just returned on the fiber that ran it: popping its
    /// continuation next is the sequential order, not an early resumption (tracing only).
    pub(crate) serial_cont: Cell<Option<FiberPtr>>,
    // Boxed: a fiber's address goes into latches and deque items, so it must not move.
    #[allow(clippy::vec_box)]
    pub(crate) spares: RefCell<Vec<Box<Fiber>>>,
    /// The victim of this worker's last successful steal.
    pub(crate) last_victim: Cell<usize>,
    /// Fibers of this worker's own thread suspended in a task (kept by the dispatcher): its
    /// seat may be lent only while there are none (`borrowed_seat.rs`).
    pub(crate) suspended: Cell<usize>,
    /// The caller holding this seat, if a thread from outside runs as this worker now
    /// (`borrowed_seat.rs`); null while the worker's own thread runs it.
    pub(crate) guest: Cell<*const Guest>,
}

/// A call a thread from outside runs as a worker, in a seat lent to it while it sleeps
/// (`borrowed_seat.rs`) or as the worker 0 it lent to its pool (`caller_worker.rs`): what
/// decides when the thread may leave. A borrowed seat's `WorkerThread::guest` points at it.
pub(crate) struct Guest {
    /// The thread's fibers suspended in a task (kept by the dispatcher).
    pub(crate) suspended: Cell<usize>,
    /// Whether the call's root job has finished.
    pub(crate) root_done: Cell<bool>,
}

impl Guest {
    pub(crate) fn new() -> Guest {
        Guest {
            suspended: Cell::new(0),
            root_done: Cell::new(false),
        }
    }

    /// Whether nothing of the call is left in the worker: its root job has finished and none
    /// of its fibers is suspended.
    pub(crate) fn done(&self) -> bool {
        self.root_done.get() && self.suspended.get() == 0
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
/// stack-overflow handler (`overflow.rs`), so it reads plain memory only.
pub(crate) fn guard_of_running_fiber() -> Option<(usize, usize)> {
    let wt = CURRENT.with(|c| c.get());
    if wt.is_null() {
        return None;
    }
    // SAFETY: `wt` is this thread's live WorkerThread; its `fiber` is null or the running fiber's
    // record, which lives in that fiber's stack.
    let fl = unsafe { (*wt).fiber.get() };
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
        unsafe { &*self.stats }
    }

    /// The record of the fiber running now. Valid while that fiber runs: a caller that may have
    /// been suspended since must look it up again (or keep using the same record, which travels
    /// with its fiber).
    #[inline(always)]
    pub(crate) fn fiber_local(&self) -> &'static FiberLocal {
        // SAFETY: set by the fiber itself whenever it (re)starts on this worker; the record lives
        // in that fiber's stack for the fiber's whole life.
        unsafe { &*self.fiber.get() }
    }

    /// Pops the newest item at a sync point that may take its own pushed half back. The deque
    /// shrinks, so the join credit is settled: the next join looks at the deque again.
    #[inline(always)]
    pub(crate) fn pop_back(&self) -> Option<Item> {
        self.settle_credit();
        self.deque.pop()
    }

    /// Pushes work on this worker's deque, waking a sleeper if it became visible to thieves.
    #[inline(always)]
    pub(crate) fn push(&self, w: Work) {
        let t = self.deque.top();
        self.push_with_top(w, t);
    }

    /// `push` with a freshly read `top` (see `Deque::push_with_top`).
    #[inline(always)]
    pub(crate) fn push_with_top(&self, w: Work, t: isize) {
        let len = (self.deque.bottom() - t + 1) as u64;
        if self.deque.push_with_top(w.encode(), t) == Pushed::Released {
            self.registry.wake();
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
            // reproduce: there Adaptive spawns work-first (`schedule/region.rs`).
            Policy::Adaptive if self.registry.region.active() => true,
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
    /// later, by `flush_finished`.
    #[inline]
    pub(crate) fn defer_finish(&self, count: &CountLatch) {
        if !std::ptr::eq(self.finished_scope.get(), count) {
            self.flush_finished();
            self.finished_scope.set(count);
        }
        self.finished.set(self.finished.get() + 1);
    }

    /// Counts one more task of the scope whose count is `count`, spawned by this worker, mostly
    /// without touching the shared count. What the worker owes a scope (`finished`: completions
    /// of its tasks that ran here, and counts reserved, not yet subtracted) can pay for a spawn
    /// into that scope: the spawn takes one over instead of adding to the count, and when it
    /// takes the last one it adds [`SPAWN_RESERVE`] at once and owes those. So the shared count
    /// is always the scope's unfinished tasks plus what workers owe it: it stays above zero
    /// until the last task is done and every worker has paid, and reaches zero through a
    /// decrement as before.
    ///
    /// Only a worker that already owes the scope reserves, so reserving adds no new state: a
    /// worker owes a scope only after running that scope's tasks (or while waiting for it), and
    /// pays before it starts anything else, sleeps, steals or suspends (`flush_finished`). So
    /// the counts it reserves are paid by the same flushes that pay its completions, and hold
    /// the scope up no longer than they did. A worker owing nothing adds one, as before.
    ///
    /// Without this, pdfs's 3 million heap spawns at 2 workers each made a locked add on the one
    /// line both workers' spawns and flushes write. Out of line: inlined into every spawn, it
    /// made fj at 2 workers 15-60% slower (its loop spawns 1024 tasks in a row and never owes),
    /// and the call costs pdfs nothing measurable.
    #[inline(never)]
    pub(crate) fn count_spawned(&self, count: &CountLatch) {
        let n = self.finished.get();
        if n != 0 && std::ptr::eq(self.finished_scope.get(), count) {
            if n == 1 {
                count.increment_by(SPAWN_RESERVE);
                self.finished.set(SPAWN_RESERVE);
            } else {
                self.finished.set(n - 1);
            }
        } else {
            count.increment();
        }
    }

    /// Subtracts the deferred completions from their scope's count (making its waiter ready if
    /// they were the last). Called before this worker starts anything that is not another task of
    /// the same scope, looks for work elsewhere, sleeps or suspends, so a scope's completion is
    /// never held up by a worker doing something else. Returns whether a waiter became ready.
    #[inline]
    pub(crate) fn flush_finished(&self) -> bool {
        self.settle_credit();
        let n = self.finished.replace(0);
        if n == 0 {
            return false;
        }
        let count = self.finished_scope.replace(std::ptr::null());
        // SAFETY: the scope cannot end (and free its count) while these completions are
        // outstanding: its count stays above zero until they are subtracted, here.
        match unsafe { &*count }.decrement_by(n) {
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
        if !std::ptr::eq(self.finished_scope.get(), count) {
            self.flush_finished();
        }
    }

    /// Whether a `join` at frame depth `depth` may run in place without looking at its deque:
    /// the worker has credit left from its last look, no thief is asking for work (`wanted`, on
    /// a line thieves write only to ask), and the depth is below the deepest frame it has already
    /// counted (so `max_frames` and the stack condition S need no update). The caller then spends
    /// one credit ([`spend_credit`](Self::spend_credit)). The credit bounds how long a steal of
    /// the kept items goes unnoticed; `wanted` makes a thief that found nothing heard at once,
    /// however rare the spawns (nqueens spawns only in its top rows, between long searches).
    #[inline(always)]
    pub(crate) fn has_credit(&self, depth: u32) -> bool {
        self.credit.get() != 0 && depth < self.frames_hw.get() && !self.deque.wanted()
    }

    /// Spends one credit: the in-place join is counted at the next
    /// [`settle_credit`](Self::settle_credit).
    #[inline(always)]
    pub(crate) fn spend_credit(&self) {
        self.credit.set(self.credit.get() - 1);
    }

    /// The look behind the credit: whether a `join` at frame depth `depth` may run in place
    /// (lazy publication: the deque keeps `keep` items for thieves, no thief asked for more, and
    /// the stack condition allows another frame). If so, grants [`CREDIT`] in-place joins; if not,
    /// none, so the next join looks again.
    #[cold]
    #[inline(never)]
    pub(crate) fn grant_credit(&self, depth: u32) -> bool {
        self.settle_credit();
        if self.checks {
            // A checked pool: every join and spawn must reach the checked paths.
            return false;
        }
        if self.fiber_local().cursor().is_some_and(|c| !c.tracked()) {
            // A region task whose joins must be positioned one by one (it looks them up in a
            // template): no credit, so every join and spawn reaches the positioned paths
            // (`position.rs`). Below a tracked cursor the in-place paths keep positions.
            return false;
        }
        if self.promotes && !self.fiber_local().pending.get().is_null() {
            self.promote_for_thieves();
        }
        if !self.may_run_in_place(depth, self.deque.top()) {
            return false;
        }
        if depth >= self.frames_hw.get() {
            self.frames_hw.set(depth + 1);
            self.stats().max_frames.max(depth as u64 + 1);
        }
        self.credit.set(CREDIT);
        self.granted.set(CREDIT);
        true
    }

    /// Publishes adaptive spawns down to spawn-tree level `level` from now on (`promote.rs`,
    /// "Spawns"; 0: none), and tells thieves so.
    pub(crate) fn set_shallow_spawns(&self, level: u32) {
        self.shallow_spawns.set(level);
        // Relaxed: a hint a thief adopts with what it steals; no data is published by it.
        self.registry.lessons[self.index].store(level, crate::sync::atomic::Ordering::Relaxed);
    }

    /// In-place joins and spawns this worker has run on its credit so far, counted or not.
    #[inline(always)]
    pub(crate) fn ops_done(&self) -> u64 {
        self.settled.get() + (self.granted.get() - self.credit.get()) as u64
    }

    /// Lazy publication's test: the deque (whose thieves' end was read as `top`) keeps `keep`
    /// items for thieves, none asked for more, and the stack condition allows a frame at depth
    /// `depth`. What the credit stands for, and what region tasks, which get none, ask directly.
    #[inline]
    pub(crate) fn may_run_in_place(&self, depth: u32, top: isize) -> bool {
        self.deque.bottom() - top >= self.keep
            && !self.deque.wanted()
            && depth < self.thresholds.stack
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
        let n = self.granted.get() - self.credit.get();
        self.credit.set(0);
        self.granted.set(0);
        self.settled.set(self.settled.get() + n as u64);
        if n != 0 {
            self.count_in_place(n);
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn count_in_place(&self, n: u32) {
        if self.policy == Policy::HelpFirst {
            self.stats().spawns_hf.add(n as u64);
        } else {
            self.stats().spawns_wf.add(n as u64);
        }
        if self.policy == Policy::Adaptive
            && self
                .adaptive
                .tick_by(&self.thresholds, n, || self.stats().stolen_from())
        {
            self.stats().policy_switches.bump();
        }
    }

    #[inline(always)]
    fn decide_adaptive(&self, depth: u32, fresh: isize) -> bool {
        let (wf, switched) =
            self.adaptive
                .decide(&self.thresholds, depth, fresh.max(0) as usize, || {
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
        fl.depth.get() >= self.thresholds.stack || !fl.has_reserve()
    }

    /// Whether a work-first scope spawn may take one more fiber.
    pub(crate) fn fiber_limit_reached(&self) -> bool {
        // Relaxed: a soft limit; a stale count only misses the fibers made or freed meanwhile.
        self.registry.live_fibers.load(Ordering::Relaxed) >= self.registry.config.max_fibers
    }

    /// Makes the pending work-first parent ready (called by the child's frame after it has
    /// taken its closure out of the parent's stack): on this worker's own ready list, so only
    /// this worker resumes it, or, when the pool allows migration, on its deque as a
    /// continuation thieves may steal.
    pub(crate) fn publish_continuation(&self) {
        if let Some(c) = self.pending_cont.take() {
            if self.registry.config.migrate {
                self.push(Work::Resume(c));
            } else {
                self.ready.borrow_mut().push_back(c);
            }
        }
    }

    /// The next fiber or item only this worker may run: its own ready list, then its inbox.
    #[inline]
    pub(crate) fn take_own(&self) -> Option<Work> {
        if let Some(f) = self.ready.borrow_mut().pop_front() {
            return Some(Work::Resume(f));
        }
        self.registry.inboxes[self.index].pop().map(Work::decode)
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
            index,
            policy: registry.config.policy,
            thresholds,
            keep: if checks {
                isize::MAX
            } else if registry.config.workers > 1 {
                crate::policy::KEEP
            } else {
                0
            },
            promotes,
            checks,
            join_mode: crate::policy::JoinMode::of(registry.config.policy, promotes),
            stats: &*registry.stats[index] as *const WorkerStats,
            registry,
            deque,
            fiber: Cell::new(std::ptr::null()),
            credit: Cell::new(0),
            granted: Cell::new(0),
            frames_hw: Cell::new(0),
            settled: Cell::new(0),
            shallow_spawns: Cell::new(0),
            spawn_sizes: crate::policy::SpawnSizes::new(),
            pending_cont: Cell::new(None),
            ready: RefCell::new(VecDeque::new()),
            finished_scope: Cell::new(std::ptr::null()),
            finished: Cell::new(0),
            adaptive: Adaptive::new(),
            switch_began: Cell::new(None),
            rng: Cell::new(
                0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
            ),
            spares: RefCell::new(Vec::new()),
            last_victim: Cell::new(0),
            suspended: Cell::new(0),
            guest: Cell::new(std::ptr::null()),
            tracing: registry_traces,
            tiers,
            serial_cont: Cell::new(None),
        }
    }

    /// Ends this worker's spare fibers, each unwinding its scheduling loop. Called on the
    /// worker's thread with `self` current, once nothing will run on this worker again.
    pub(crate) fn exit_spares(&self) {
        for mut f in self.spares.borrow_mut().drain(..) {
            let _ = f.co.resume(Cmd::Exit);
        }
    }
}

/// Sets thread `tid`'s (0: the caller's) affinity to `cpus`. A refusal (a CPU left the affinity
/// mask since the topology was read) leaves it where it was: placement is a hint, never a reason
/// to fail.
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
    if !wt.checks {
        return None;
    }
    let cur = wt.fiber_local().checked.get();
    if cur.is_null() {
        return None;
    }
    Some(wt.registry.structure()?.spawn(crate::hooks::Ctx(cur)))
}

/// Runs `f`, a task whose context is `c` (`hooks::Structure`), as the running task of
/// whichever fiber and worker run it: the fiber's context is `c` from the structure's `begin`
/// to its `end` (also when `f` unwinds), and what it was is put back after. A task begins and
/// ends on one fiber (a suspended fiber resumes only where it ran), so the contexts of the
/// tasks of one fiber nest.
pub(crate) fn run_in<R>(c: crate::hooks::Ctx, f: impl FnOnce() -> R) -> R {
    let wt = current().expect("a checked task runs on a worker of its pool");
    let s = wt
        .registry
        .structure()
        .expect("a checked task runs in a checked pool");
    let fl = wt.fiber_local();
    let prev = fl.checked.replace(c.0);
    s.begin(c, wt.index);
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
