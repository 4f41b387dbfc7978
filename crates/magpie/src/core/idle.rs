//! The idle path: what a worker does when it finds nothing to run (SLAW's Subroutine 1 ends
//! here; DWS's Algorithm 1 decides when it sleeps).
//!
//! * Without core sharing: a few failed rounds spinning, then yielding the core between rounds,
//!   then sleep (`sleep.rs`) until a producer wakes it.
//! * ABP (`Config::never_block`, `dws::SharingMode::Abp`): yield the core after every failed
//!   round, never block.
//! * DWS (a `hooks::CoreSharing` that sleeps workers, `ext/dws/runtime.rs`): after T_SLEEP failed
//!   steal attempts in a row, give the core back in the core table and sleep until the program
//!   may use a core for this worker; a worker whose core its home program took back sleeps at
//!   once.
//!
//! Before any of these the loop has looked at the worker's own ready fibers and inbox, its
//! deque, and its victims; the sleep protocol's re-check looks at the inbox again, so an item
//! delivered to a worker on its way to sleep is never stranded.

use crate::hooks::CoreSharing;
use crate::job::Work;
use crate::sync::atomic::Ordering;
use crate::worker::WorkerThread;

/// Failed steal rounds before a worker goes to sleep (DWS's T_SLEEP, counted in rounds over all
/// victims). Small: an idle pool should cost nothing.
const SPIN_ROUNDS: u32 = 64;

/// Rounds after which an idle worker yields its core between rounds.
const YIELD_AFTER: u32 = 16;

impl WorkerThread {
    /// One step of the idle path after a round that found nothing (`rounds` counts such rounds
    /// in a row; the caller resets it when it finds work). True when the pool is shutting down
    /// and the loop must exit.
    pub(crate) fn idle(&self, rounds: &mut u32) -> bool {
        // Acquire: pairs with the SeqCst store in `Registry::shutdown`; the flag carries no data,
        // so this only needs to see it eventually (the sleep re-checks read it SeqCst).
        if self.core.registry.terminate.load(Ordering::Acquire) {
            return true;
        }
        if self.core.registry.config.never_block {
            // ABP: a thief that found nothing yields its core, and never blocks.
            *rounds += 1;
            if *rounds >= SPIN_ROUNDS {
                *rounds = 0;
                self.forget_where_work_lies();
                self.shed_what_it_may_not_start();
            }
            std::thread::yield_now();
            return false;
        }
        if let Some(s) = self.dws() {
            // Algorithm 1: failed steal attempts in a row, one per victim tried.
            *rounds += (self.core.registry.config.workers as u32 - 1).max(1);
            if *rounds > s.sleep_after() {
                *rounds = 0;
                self.forget_where_work_lies();
                self.dws_sleep(s);
            } else {
                std::hint::spin_loop();
            }
            return false;
        }
        *rounds += 1;
        if *rounds < SPIN_ROUNDS {
            if *rounds > YIELD_AFTER {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        } else {
            *rounds = 0;
            self.forget_where_work_lies();
            let reg = &self.core.registry;
            // The pool's shutdown flag is part of the re-check, and shutdown wakes every
            // sleeper: nothing else ends a sleep (`done` is never true).
            self.stats().sleeps.bump();
            // A thread with a task waiting on it hands what it may not start to the pool's queue
            // first, where any worker may take it: a guest in a borrowed seat as much as the
            // seat's own worker. Left in its deque's private part, such an item would be seen
            // by nobody while the thread sleeps.
            self.shed_what_it_may_not_start();
            if self.seat.is_lent() {
                // A caller holding this seat sleeps in the seat's slot, as a guest.
                reg.sleep
                    .sleep_lent(self.core.index, || reg.has_visible_work(self.core.index));
                return false;
            }
            // With nothing of its own thread in flight, the seat may be lent while it sleeps.
            reg.sleep
                .set_lendable(self.core.index, self.seat.lendable(reg.lends_seats));
            let me = self.core.index;
            let top = self.seat.waits().top();
            reg.sleep.set_restricted(me, self.sleeps_restricted(top));
            let _ = reg
                .sleep
                .sleep(me, || self.may_wake(top), crate::sleep::always, || false);
        }
        false
    }

    /// Whether this worker's sleep is announced restricted (`Sleep::activate_unrestricted`): a
    /// task waits on its thread and limits what it may start. Not in a schedule region, whose
    /// waits limit only the order of resumption (`leapfrog::OPEN`) and whose template places
    /// the work: there every sleeper is woken in the usual turn.
    fn sleeps_restricted(&self, top: Option<crate::leapfrog::Top>) -> bool {
        top.is_some_and(|t| !t.allows(|_| false)) && self.core.registry.region.get().is_none()
    }

    /// The sleep's re-check (SeqCst loads, as `has_visible_work`): whether anything this worker
    /// may start is there. With a task waiting on this thread (`top`), only what that task lets
    /// it start counts (`leapfrog.rs`): its own fibers and deliveries, or a queued descendant.
    /// Another worker's deque is not looked at: its owner runs what it may start there, and
    /// queues the rest before it sleeps (`shed_what_it_may_not_start`). Such a sleep is
    /// announced restricted, so that producers of work anyone may take wake other sleepers
    /// first (`Sleep::activate_unrestricted`).
    fn may_wake(&self, top: Option<crate::leapfrog::Top>) -> bool {
        let reg = &*self.core.registry;
        let me = self.core.index;
        let Some(top) = top else {
            return reg.has_visible_work(me);
        };
        // SeqCst: the sleep protocol's re-check, as in `has_visible_work`.
        reg.terminate.load(Ordering::SeqCst)
            || reg.has_delivered(me)
            || reg.has_injected_where(|it| {
                let w = Work::decode(it);
                // SAFETY: the filter runs under the queue's lock: nobody can take the item
                // meanwhile.
                matches!(w, Work::Task { .. }) && unsafe { w.may_start_under(top) }
            })
            || reg
                .places
                .as_ref()
                .is_some_and(|pl| pl.has_visible_work(me, &|_| false))
    }

    /// Before a thread with a task waiting on it sleeps (or, under ABP, after each stretch of
    /// failed rounds): every item left in its deque goes to the pool's queue (`leapfrog.rs`,
    /// "Progress"). The thread found nothing there that it may start, so what is left are items
    /// of the tasks suspended under its top. One of them may be needed by a sync point on
    /// another thread, a scope's spawn made by a task that ran here, and left here it could
    /// wait forever: the items may still be private (published only when a thief asks), and a
    /// waiting thread that had a steal refused steals no more. Queued, each is taken by a worker
    /// that may start it, the waiting scope's thread at the latest. A ready fiber of this
    /// thread's goes to its inbox instead, where only it takes it.
    fn shed_what_it_may_not_start(&self) {
        // In a schedule region the template says where each task runs: its items stay put
        // (its waits restrict nothing but the order of resumption, `leapfrog::OPEN`).
        if self.core.registry.region.get().is_some() {
            return;
        }
        match self.seat.waits().top() {
            // Nothing waits here (so the deque is empty), or nothing is restricted (a
            // schedule region's wait, which may start anything).
            None => return,
            Some(top) if top.allows(|_| false) => return,
            Some(_) => {}
        }
        while let Some(it) = self.core.deque.pop() {
            self.shed(it);
        }
    }

    /// One item of [`shed_what_it_may_not_start`](Self::shed_what_it_may_not_start): a task to
    /// the pool's queue, a ready fiber to this worker's inbox, a batch item by item.
    fn shed(&self, it: crate::deque::Item) {
        let reg = &*self.core.registry;
        match Work::decode(it) {
            Work::Task { .. } => reg.inject_orphan(it),
            Work::Resume(_) => reg.deliver(self.core.index, it),
            Work::Batch(b) => {
                for &i in b.take_batch().expect("batch item").iter() {
                    self.shed(i);
                }
            }
        }
    }

    /// Idle long enough to sleep, the computation whose spawns taught this worker where work
    /// lies is likely over (`promote.rs`, "Spawns" and "Which joins record"): the next one
    /// learns afresh.
    fn forget_where_work_lies(&self) {
        self.set_shallow_spawns(0);
        self.lessons.forget_sizes();
        self.record_every_join();
    }

    /// DWS: if the core this worker holds was taken back by its home program, give it up and
    /// sleep (the caller's own work is done: its deque is empty). True if it slept.
    pub(crate) fn sleep_if_core_lost(&self) -> bool {
        match self.dws() {
            Some(s) if s.lost_core(self.core.index) => {
                self.dws_sleep(s);
                true
            }
            _ => false,
        }
    }

    /// The pool's core sharing hook, when its idle workers give their cores back (DWS).
    #[inline]
    pub(crate) fn dws(&self) -> Option<&dyn CoreSharing> {
        self.core
            .registry
            .sharing
            .as_deref()
            .filter(|s| s.sleeps_workers())
    }

    /// DWS: gives the worker's core back and sleeps until the program may use a core for it.
    pub(crate) fn dws_sleep(&self, s: &dyn CoreSharing) {
        self.shed_what_it_may_not_start();
        let reg = &*self.core.registry;
        self.stats().sleeps.bump();
        let top = self.seat.waits().top();
        s.sleep(
            self.core.index,
            self.sleeps_restricted(top),
            &|| self.may_wake(top),
            // SeqCst: as every access to `terminate` on the sleep paths.
            &|| reg.terminate.load(Ordering::SeqCst),
        );
    }
}
