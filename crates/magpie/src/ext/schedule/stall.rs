//! The stall rule of an `Ordered` schedule region: who is idle, and when a held item must be
//! forced (see `region.rs`, "Order and stalls", for why a region can stall at all).
//!
//! Every worker that finds nothing to run *enters* the idle set; every worker *leaves* it at the
//! top of each scheduling round, before it takes anything. The last worker to enter, finding the
//! whole pool idle and nothing in flight, gives the verdict: a stall, and the caller forces the
//! lowest-ranked held item. Until every worker has begun a round inside the region (`seen`), no
//! verdict is given: a worker that began its round before the region did may still be holding
//! an item it stole from the region's root, about to give it back; those workers are woken
//! instead, and each comes back through `enter` when it finds nothing.
//!
//! The set, its count and `seen` live under one lock, and the verdict is given (and the
//! caller's forcing done) while it is held, so two workers cannot both force. Each worker also
//! keeps its own two entries as *hints* in atomics, read without the lock on the hot path of
//! `leave`: only that worker writes its entries once the region is published (the root's
//! initial values are written before), so its own `Relaxed` reads see its own last writes
//! (program order), and the lock orders everything else. A worker that is not idle and has been
//! seen leaves without the lock.
//!
//! Why no stall is missed: a worker leaves the set before it takes anything, so work in flight
//! is either on a worker outside the set (the count is short) or visible to the check (the
//! caller's `in_flight`). The last one to enter sees the count full; the loom model below checks
//! that, however two workers interleave, one of them forces the held item once both have gone
//! idle with nothing in flight.

use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::{lock, CachePadded, Mutex};

/// The idle set under the region's stall lock.
struct Set {
    idle: Vec<bool>,
    count: usize,
    /// Which workers have begun a round since the region began.
    seen: Vec<bool>,
}

/// The stall rule's state for one region of `workers` workers.
pub(crate) struct Stall {
    set: Mutex<Set>,
    /// `set.idle`, for its own worker to read without the lock (see the module doc).
    idle_hint: Vec<CachePadded<AtomicBool>>,
    /// `set.seen`, likewise.
    seen_hint: Vec<CachePadded<AtomicBool>>,
}

impl Stall {
    /// The rule for a region whose root runs on worker `root`. Every other worker starts idle
    /// and unseen: one asleep since before the region began registers nowhere until it is
    /// woken, and must not keep the check from firing.
    pub(crate) fn new(workers: usize, root: usize) -> Stall {
        Stall {
            set: Mutex::new(Set {
                idle: (0..workers).map(|w| w != root).collect(),
                count: workers - 1,
                seen: (0..workers).map(|w| w == root).collect(),
            }),
            idle_hint: (0..workers)
                .map(|w| CachePadded(AtomicBool::new(w != root)))
                .collect(),
            seen_hint: (0..workers)
                .map(|w| CachePadded(AtomicBool::new(w == root)))
                .collect(),
        }
    }

    /// Worker `me` found nothing to run. If now every worker is idle and `in_flight` says
    /// nothing is on its way (an injected job, an inbox item), either wakes the workers not yet
    /// seen in the region (`wake`) or, when all have been, calls `stalled`, under the lock.
    pub(crate) fn enter(
        &self,
        me: usize,
        in_flight: impl FnOnce() -> bool,
        mut wake: impl FnMut(usize),
        stalled: impl FnOnce(),
    ) {
        let mut set = lock(&self.set);
        if !set.idle[me] {
            set.idle[me] = true;
            set.count += 1;
            // Relaxed: read only by this worker (module doc).
            self.idle_hint[me].store(true, Ordering::Relaxed);
        }
        if set.count < set.idle.len() || in_flight() {
            return;
        }
        if set.seen.iter().any(|s| !s) {
            for (w, _) in set.seen.iter().enumerate().filter(|(_, s)| !**s) {
                wake(w);
            }
            return;
        }
        stalled();
    }

    /// Worker `me` begins a round: it leaves the idle set, and is seen in the region.
    pub(crate) fn leave(&self, me: usize) {
        // Relaxed: only this worker changes its own entries (module doc).
        if !self.idle_hint[me].load(Ordering::Relaxed) && self.seen_hint[me].load(Ordering::Relaxed)
        {
            return;
        }
        let mut set = lock(&self.set);
        set.seen[me] = true;
        // Relaxed: as above.
        self.seen_hint[me].store(true, Ordering::Relaxed);
        if set.idle[me] {
            set.idle[me] = false;
            set.count -= 1;
        }
        // Relaxed: as above.
        self.idle_hint[me].store(false, Ordering::Relaxed);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::AtomicUsize;
    use loom::sync::Arc;
    use loom::thread;

    /// Two workers of a region rooted on worker 0, one held item for worker 1 that waits for a
    /// cut that never comes, nothing in flight. Each worker runs rounds: leave the set, take
    /// the item if it was forced to it, else enter the set. The verdict does what the region's
    /// does: it forces the item if it is still waiting (a forced item not yet taken means its
    /// worker can run something: no stall). However they interleave, once both have finished
    /// their rounds the item has been forced, and exactly once.
    #[test]
    fn a_stall_is_forced_once_when_every_worker_is_idle() {
        const WAITING: usize = 0;
        const FORCED: usize = 1;
        const TAKEN: usize = 2;
        loom::model(|| {
            let stall = Arc::new(Stall::new(2, 0));
            let item = Arc::new(AtomicUsize::new(WAITING));
            let forces = Arc::new(AtomicUsize::new(0));
            let workers: Vec<_> = (0..2)
                .map(|me| {
                    let (stall, item, forces) = (stall.clone(), item.clone(), forces.clone());
                    thread::spawn(move || {
                        for _ in 0..2 {
                            stall.leave(me);
                            if me == 1
                                && item
                                    .compare_exchange(
                                        FORCED,
                                        TAKEN,
                                        Ordering::SeqCst,
                                        Ordering::SeqCst,
                                    )
                                    .is_ok()
                            {
                                return;
                            }
                            stall.enter(
                                me,
                                || false,
                                |_| {},
                                || {
                                    if item.load(Ordering::SeqCst) == WAITING {
                                        item.store(FORCED, Ordering::SeqCst);
                                        forces.fetch_add(1, Ordering::SeqCst);
                                    }
                                },
                            );
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
            assert_eq!(
                forces.load(Ordering::SeqCst),
                1,
                "a stall missed or forced twice"
            );
        });
    }
}
