//! Victim selection and stealing: one round over the other workers, in random order or nearest
//! first (`Victims::Numa`, or a worker's own place first), then the place's mailbox or squad
//! pool, then the pool's queue of work from outside.
//!
//! A steal never stops or signals the victim (see `deque.rs`): the thief claims the oldest public
//! item with one CAS, or finds the public part empty and raises the victim's `wanted` flag.

use crate::deque::Steal;
use crate::job::Work;
use crate::sync::atomic::Ordering;
use crate::worker::WorkerThread;

/// Where the scheduling loop found an item.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Took {
    /// Its own deque.
    Popped,
    /// Another worker's deque.
    Stolen,
    /// The pool's queue of work from outside, or a mailbox (places, squads).
    Injected,
}

impl WorkerThread {
    /// The next number of this worker's random stream.
    #[inline]
    pub(crate) fn next_rand(&self) -> u64 {
        self.thief.next_rand()
    }

    /// One round over all other workers and the injector.
    pub(crate) fn steal_round(&self) -> Option<(Work, Took)> {
        let reg = &*self.core.registry;
        // A thread with a task waiting on it (`leapfrog.rs`) steals until a steal takes a task
        // it may not start, and takes from the pool's queue only what it may start.
        let top = self.seat.waits().top();
        let n = if top.is_some_and(|t| !t.steals) {
            0
        } else {
            reg.stealers.len()
        };
        // With places, a lone worker still has its place's mailbox or squad pool to look in
        // (an inter-socket spawn in a one-worker pool with squads waited there forever).
        if n > 1 || reg.places.is_some() {
            match self.thief.tiers() {
                // Random: every other worker, from a random one on.
                None => {
                    let start = (self.next_rand() % n as u64) as usize;
                    for k in 0..n {
                        let v = (start + k) % n;
                        if v != self.core.index {
                            if let Some(w) = self.steal_from(v) {
                                return Some((w, Took::Stolen));
                            }
                        }
                    }
                }
                // Nearest first: each tier from a random member on. With places, the first tier
                // is the worker's place, followed by its mailbox; the others only with
                // cross-place stealing, followed by the other places' mailboxes.
                Some(tiers) => {
                    for (i, tier) in tiers.iter().enumerate() {
                        if !tier.is_empty() {
                            let start = (self.next_rand() % tier.len() as u64) as usize;
                            for k in 0..tier.len() {
                                let v = tier[(start + k) % tier.len()];
                                if let Some(w) = self.steal_from(v) {
                                    return Some((w, Took::Stolen));
                                }
                            }
                        }
                        if let (0, Some(pl)) = (i, &reg.places) {
                            if let Some(it) = pl.take_own(self.core.index, &|| self.next_rand()) {
                                return Some((Work::decode(it), Took::Injected));
                            }
                        }
                    }
                    if let Some(it) = reg
                        .places
                        .as_ref()
                        .and_then(|pl| pl.take_other(self.core.index))
                    {
                        return Some((Work::decode(it), Took::Injected));
                    }
                }
            }
        }
        match top {
            None => reg.take_injected(),
            Some(t) => reg.take_injected_where(|it| {
                let w = Work::decode(it);
                // SAFETY: the filter runs under the queue's lock: nobody can take the item.
                matches!(w, Work::Task { .. }) && unsafe { w.may_start_under(t) }
            }),
        }
        .map(|it| (Work::decode(it), Took::Injected))
    }

    /// Up to four attempts on victim `v` (a lost race is retried; an empty deque is not).
    pub(crate) fn steal_from(&self, v: usize) -> Option<Work> {
        let reg = &*self.core.registry;
        for _ in 0..4 {
            match reg.stealers[v].steal() {
                Steal::Success(it) => {
                    reg.stats[v].note_stolen();
                    self.thief.stole_from(v);
                    if self.core.promotes {
                        // Oldest-first hand-over: where the victim learned work lies holds for
                        // the computation its work came from (`promote.rs`, "Spawns").
                        // Relaxed: a hint with no data (see `set_shallow_spawns`); a stale level
                        // only means an older lesson.
                        let lesson = reg.lessons[v].load(Ordering::Relaxed);
                        if lesson > self.lessons.shallow() {
                            self.set_shallow_spawns(lesson);
                        }
                    }
                    let w = Work::decode(it);
                    match w {
                        Work::Task {
                            continuation: false,
                            ..
                        } => self.stats().steals_child.bump(),
                        _ => self.stats().steals_cont.bump(),
                    }
                    return Some(w);
                }
                Steal::Retry => self.stats().failed_steals.bump(),
                Steal::Empty => {
                    self.stats().failed_steals.bump();
                    return None;
                }
            }
        }
        None
    }
}
