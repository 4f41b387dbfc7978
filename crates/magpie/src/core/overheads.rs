//! Friendly Barriers (§4, §6) measures a work-stealing runtime's *dynamic* overhead apart from
//! its sequential one: what each steal costs the thief (its steal rounds) and the victim (the
//! work at the sync point whose half was taken, and the fiber switches out of and back into the
//! waiting task). With `Builder::measure_overheads` the worker times exactly those moments into
//! `Stats::{steal_ns, search_ns, victim_ns}`; without it every method here is a branch on a
//! setting and nothing is read from the clock. Spawns and unstolen syncs are never timed.

use crate::job::Work;
use crate::steal::Took;
use crate::worker::WorkerThread;
use std::time::Instant;

impl WorkerThread {
    /// A steal round, timed when the pool measures overheads: what was found, and where.
    pub(crate) fn steal(&self) -> Option<(Work, Took)> {
        if !self.core.registry.config.overheads {
            return self.steal_round();
        }
        let t = Instant::now();
        let w = self.steal_round();
        let ns = t.elapsed().as_nanos() as u64;
        match w {
            Some(_) => self.stats().steal_ns.add(ns),
            None => self.stats().search_ns.add(ns),
        }
        w
    }

    /// Starts timing a fiber switch that a victim pays for (with `Config::overheads`).
    #[inline]
    pub(crate) fn victim_switch_begins(&self) {
        if self.core.registry.config.overheads {
            self.clock.start();
        }
    }

    /// Ends the timing begun by [`victim_switch_begins`](Self::victim_switch_begins), if any: called
    /// by whatever fiber runs next on this worker.
    #[inline]
    pub(crate) fn switch_landed(&self) {
        if let Some(t) = self.clock.take() {
            self.stats().victim_ns.add(t.elapsed().as_nanos() as u64);
        }
    }

    /// Whether a victim's switch is being timed.
    #[inline]
    pub(crate) fn switch_began_is_set(&self) -> bool {
        let t = self.clock.started();
        t.is_some()
    }

    /// Adds victim time measured at a sync point.
    #[inline]
    pub(crate) fn add_victim(&self, since: Option<Instant>) {
        if let Some(t) = since {
            self.stats().victim_ns.add(t.elapsed().as_nanos() as u64);
        }
    }

    /// A clock reading when the pool measures overheads.
    #[inline]
    pub(crate) fn overhead_clock(&self) -> Option<Instant> {
        self.core.registry.config.overheads.then(Instant::now)
    }
}
