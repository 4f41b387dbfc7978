//! The idle path: what a worker does when it finds nothing to run (SLAW's Subroutine 1 ends
//! here; DWS's Algorithm 1 decides when it sleeps).
//!
//! * Without core sharing: a few failed rounds spinning, then yielding the core between rounds,
//!   then sleep (`sleep.rs`) until a producer wakes it.
//! * ABP (`Config::never_block`, `dws::SharingMode::Abp`): yield the core after every failed
//!   round, never block.
//! * DWS (a `hooks::CoreSharing` that sleeps workers, `dws/runtime.rs`): after T_SLEEP failed
//!   steal attempts in a row, give the core back in the core table and sleep until the program
//!   may use a core for this worker; a worker whose core its home program took back sleeps at
//!   once.
//!
//! Before any of these the loop has looked at the worker's own ready fibers and inbox, its
//! deque, and its victims; the sleep protocol's re-check looks at the inbox again, so an item
//! delivered to a worker on its way to sleep is never stranded.

use crate::hooks::CoreSharing;
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
            if self.seat.is_lent() {
                // A caller holding this seat sleeps in the seat's slot, as a guest.
                reg.sleep
                    .sleep_lent(self.core.index, || reg.has_visible_work(self.core.index));
                return false;
            }
            // With nothing of its own thread in flight, the seat may be lent while it sleeps.
            reg.sleep
                .set_lendable(self.core.index, self.seat.lendable(reg.lends_seats));
            // With a task waiting on this thread, only what it may start wakes it
            // (`leapfrog.rs`): its own fibers and deliveries, or a queued descendant. Another
            // worker's deque is not looked at: a descendant left there is run by its owner, at
            // the latest when its sync point comes.
            let me = self.core.index;
            let _ = match self.seat.waits().top() {
                None => reg.sleep.sleep(
                    me,
                    || reg.has_visible_work(me),
                    crate::sleep::always,
                    || false,
                ),
                Some(top) => reg.sleep.sleep(
                    me,
                    || {
                        // SeqCst: the sleep protocol's re-check, as in `has_visible_work`.
                        reg.terminate.load(Ordering::SeqCst)
                            || reg.has_delivered(me)
                            || reg.has_injected_where(|it| {
                                let w = crate::job::Work::decode(it);
                                // SAFETY: the filter runs under the queue's lock: nobody can
                                // take the item meanwhile.
                                matches!(w, crate::job::Work::Task { .. })
                                    && unsafe { w.may_start_under(top) }
                            })
                            || reg
                                .places
                                .as_ref()
                                .is_some_and(|pl| pl.has_visible_work(me, &|_| false))
                    },
                    crate::sleep::always,
                    || false,
                ),
            };
        }
        false
    }

    /// Idle long enough to sleep, the computation whose spawns taught this worker where work
    /// lies is likely over (`promote.rs`, "Spawns"): the next one learns afresh.
    fn forget_where_work_lies(&self) {
        self.set_shallow_spawns(0);
        self.lessons.forget_sizes();
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
        let reg = &*self.core.registry;
        self.stats().sleeps.bump();
        s.sleep(
            self.core.index,
            &|| reg.has_visible_work(self.core.index),
            // SeqCst: as every access to `terminate` on the sleep paths.
            &|| reg.terminate.load(Ordering::SeqCst),
        );
    }
}
