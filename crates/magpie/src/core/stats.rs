//! Counters every run can print: what the scheduler did (SLAW's policies, steals of children and
//! of continuations, suspensions). Each worker owns its counters and bumps them with plain
//! load/store (one writer), so counting costs no atomic read-modify-write on the spawn path.

use crate::sync::atomic::{AtomicU64, Ordering};
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::ops::{Add, Sub};
use std::time::Instant;

/// The victim's clock (`WorkerThread::clock`), used with `Config::overheads` only.
pub(crate) struct Clock {
    /// When a fiber switch that a victim pays for began (a waiting task suspending, or a waiting
    /// task being resumed); the fiber that runs next adds the time.
    switch_began: Cell<Option<Instant>>,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            switch_began: Cell::new(None),
        }
    }

    /// Starts the clock of a switch the victim pays for.
    pub(crate) fn start(&self) {
        self.switch_began.set(Some(Instant::now()));
    }

    /// Stops the clock: when the switch began, if it runs.
    pub(crate) fn take(&self) -> Option<Instant> {
        self.switch_began.take()
    }

    /// When the running switch began, if one does.
    pub(crate) fn started(&self) -> Option<Instant> {
        self.switch_began.get()
    }
}

/// A snapshot of a pool's counters, summed over workers (maxima are maxima over workers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Workers in the pool.
    pub workers: usize,
    /// Spawns (join halves and scope spawns) made work-first.
    pub spawns_work_first: u64,
    /// Spawns made help-first.
    pub spawns_help_first: u64,
    /// Steals of a help-first child.
    pub steals_child: u64,
    /// Steals of a continuation (a work-first parent, or a suspended task made ready).
    pub steals_continuation: u64,
    /// Steal attempts that found nothing (or lost a race).
    pub failed_steals: u64,
    /// Times a task's fiber was suspended (waiting at a sync point, or preempted by a work-first
    /// scope spawn).
    pub suspensions: u64,
    /// Times a suspended fiber was resumed.
    pub resumptions: u64,
    /// Switches of the adaptive policy's heuristic between work-first and help-first.
    pub policy_switches: u64,
    /// Largest number of fresh (spawned, not started) tasks any worker held.
    pub max_fresh: u64,
    /// Largest number of task frames on any worker's stack.
    pub max_frames: u64,
    /// Times a worker went to sleep (announced its sleep: the re-check that follows may still
    /// find work and end it at once).
    pub sleeps: u64,
    /// Fibers (task stacks) created.
    pub fibers_created: u64,
    /// With [`Builder::measure_overheads`](crate::Builder::measure_overheads): nanoseconds
    /// victims spent because a thief took their work: at a sync point that found its work stolen,
    /// the pops until the task suspends, and the fiber switches out of and back into the waiting
    /// task (tasks the victim ran meanwhile are not counted). 0 when not measured.
    #[serde(default)]
    pub victim_ns: u64,
    /// With `measure_overheads`: nanoseconds thieves spent in steal rounds that took something.
    #[serde(default)]
    pub steal_ns: u64,
    /// With `measure_overheads`: nanoseconds thieves spent in steal rounds that found nothing.
    #[serde(default)]
    pub search_ns: u64,
    /// Pops that took an item back from the public part of the owner's deque, where thieves may
    /// race for it, and so paid a fence (see `deque.rs`). Every other spawn and sync costs no
    /// fence and no atomic read-modify-write.
    #[serde(default)]
    pub fenced_pops: u64,
    /// Cuts of a followed schedule's template that a worker stopped waiting for under
    /// [`Constraint::Ordered`](crate::schedule::Constraint::Ordered), because every worker was
    /// idle and the cut had not come (see `magpie::schedule`).
    #[serde(default)]
    pub deviations: u64,
    /// Spare fibers whose dead stack pages were given back to the OS as they were parked: a
    /// worker keeps 32 spares whole and trims those it keeps past them (see `core/fiber/mod.rs`).
    #[serde(default)]
    pub fibers_trimmed: u64,
    /// Unstarted halves of in-place joins handed to thieves, oldest first, when a thief asked or
    /// the deque ran low (see `promote.rs`).
    #[serde(default)]
    pub promotions: u64,
}

impl Sub for Stats {
    type Output = Stats;
    /// The counts between two snapshots; maxima and `workers` are taken from `self`.
    fn sub(self, o: Stats) -> Stats {
        Stats {
            workers: self.workers,
            spawns_work_first: self.spawns_work_first - o.spawns_work_first,
            spawns_help_first: self.spawns_help_first - o.spawns_help_first,
            steals_child: self.steals_child - o.steals_child,
            steals_continuation: self.steals_continuation - o.steals_continuation,
            failed_steals: self.failed_steals - o.failed_steals,
            suspensions: self.suspensions - o.suspensions,
            resumptions: self.resumptions - o.resumptions,
            policy_switches: self.policy_switches - o.policy_switches,
            max_fresh: self.max_fresh,
            max_frames: self.max_frames,
            sleeps: self.sleeps - o.sleeps,
            fibers_created: self.fibers_created - o.fibers_created,
            victim_ns: self.victim_ns - o.victim_ns,
            steal_ns: self.steal_ns - o.steal_ns,
            search_ns: self.search_ns - o.search_ns,
            fenced_pops: self.fenced_pops - o.fenced_pops,
            deviations: self.deviations - o.deviations,
            fibers_trimmed: self.fibers_trimmed - o.fibers_trimmed,
            promotions: self.promotions - o.promotions,
        }
    }
}

impl Add for Stats {
    type Output = Stats;
    /// Counts summed over two windows; maxima and `workers` are the larger of the two.
    fn add(self, o: Stats) -> Stats {
        Stats {
            workers: self.workers.max(o.workers),
            spawns_work_first: self.spawns_work_first + o.spawns_work_first,
            spawns_help_first: self.spawns_help_first + o.spawns_help_first,
            steals_child: self.steals_child + o.steals_child,
            steals_continuation: self.steals_continuation + o.steals_continuation,
            failed_steals: self.failed_steals + o.failed_steals,
            suspensions: self.suspensions + o.suspensions,
            resumptions: self.resumptions + o.resumptions,
            policy_switches: self.policy_switches + o.policy_switches,
            max_fresh: self.max_fresh.max(o.max_fresh),
            max_frames: self.max_frames.max(o.max_frames),
            sleeps: self.sleeps + o.sleeps,
            fibers_created: self.fibers_created + o.fibers_created,
            victim_ns: self.victim_ns + o.victim_ns,
            steal_ns: self.steal_ns + o.steal_ns,
            search_ns: self.search_ns + o.search_ns,
            fenced_pops: self.fenced_pops + o.fenced_pops,
            deviations: self.deviations + o.deviations,
            fibers_trimmed: self.fibers_trimmed + o.fibers_trimmed,
            promotions: self.promotions + o.promotions,
        }
    }
}

/// One counter with a single writer.
#[derive(Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub(crate) fn bump(&self) {
        self.add(1)
    }
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.0
            // Relaxed: a statistic with one writer (its worker), so a plain load and store
            // lose nothing; readers take a snapshot (`Pool::stats`) that orders nothing.
            .store(self.0.load(Ordering::Relaxed) + n, Ordering::Relaxed)
    }
    #[inline]
    pub(crate) fn max(&self, v: u64) {
        // Relaxed: as in `add`.
        if v > self.0.load(Ordering::Relaxed) {
            self.0.store(v, Ordering::Relaxed)
        }
    }
    pub(crate) fn get(&self) -> u64 {
        // Relaxed: a snapshot of a statistic (see `add`).
        self.0.load(Ordering::Relaxed)
    }
}

/// A worker's counters. All single-writer (the worker), except `stolen_from`, which thieves
/// increment with an atomic add on the steal path.
#[derive(Default)]
pub(crate) struct WorkerStats {
    pub spawns_wf: Counter,
    pub spawns_hf: Counter,
    pub steals_child: Counter,
    pub steals_cont: Counter,
    pub failed_steals: Counter,
    pub suspensions: Counter,
    pub resumptions: Counter,
    pub policy_switches: Counter,
    pub max_fresh: Counter,
    pub max_frames: Counter,
    pub sleeps: Counter,
    pub fibers_created: Counter,
    /// Scopes opened while tracing (events of the steal tree; not in `Stats`).
    pub scopes: Counter,
    pub victim_ns: Counter,
    pub steal_ns: Counter,
    pub search_ns: Counter,
    pub deviations: Counter,
    pub fibers_trimmed: Counter,
    pub promotions: Counter,
    pub stolen_from: AtomicU64,
}

impl WorkerStats {
    pub(crate) fn stolen_from(&self) -> u64 {
        // Relaxed: a snapshot of a statistic.
        self.stolen_from.load(Ordering::Relaxed)
    }
    pub(crate) fn note_stolen(&self) {
        // Relaxed: a statistic; an RMW, as several thieves bump it, and it orders nothing.
        self.stolen_from.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn add_to(&self, s: &mut Stats) {
        s.spawns_work_first += self.spawns_wf.get();
        s.spawns_help_first += self.spawns_hf.get();
        s.steals_child += self.steals_child.get();
        s.steals_continuation += self.steals_cont.get();
        s.failed_steals += self.failed_steals.get();
        s.suspensions += self.suspensions.get();
        s.resumptions += self.resumptions.get();
        s.policy_switches += self.policy_switches.get();
        s.max_fresh = s.max_fresh.max(self.max_fresh.get());
        s.max_frames = s.max_frames.max(self.max_frames.get());
        s.sleeps += self.sleeps.get();
        s.fibers_created += self.fibers_created.get();
        s.victim_ns += self.victim_ns.get();
        s.steal_ns += self.steal_ns.get();
        s.search_ns += self.search_ns.get();
        s.deviations += self.deviations.get();
        s.fibers_trimmed += self.fibers_trimmed.get();
        s.promotions += self.promotions.get();
    }
}
