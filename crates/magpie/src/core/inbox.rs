//! The inbox: delivering an item to one chosen worker.
//!
//! A deque is for work *anyone* may run: its owner pops it and thieves steal it. Some work may run
//! on one worker only. The first kind is a suspended fiber that has started running user code:
//! its stack holds the user's locals (an `Rc`, a `MutexGuard`, a `RefCell` borrow of a
//! `thread_local!`), which Rust lets a closure keep across a `join` or a `scope` because it checks
//! `Send` only at the closure's boundary. Such a fiber must be resumed by the worker thread that
//! suspended it, its *home*. The second kind, for the issues after this one, is work that a
//! schedule or a constrained stealing rule donates to a chosen worker.
//!
//! So every worker has an inbox: multi-producer (any thread may deliver), single-consumer (only
//! its worker takes), unbounded (a delivery never fails or waits for room, so a latch setter never
//! blocks on a busy home) and first in, first out. Delivery is [`Inbox::push`] followed by a
//! wake-up of that one worker (`Registry::deliver`); the worker looks at its inbox before its own
//! deque and before it steals, and before it goes to sleep (the sleep protocol's re-check reads
//! [`Inbox::is_empty`]), so an item delivered to a sleeping worker is never stranded.
//!
//! The items sit in a `VecDeque` under a mutex. Deliveries are rare next to spawns (one per
//! resumption of a task whose work was stolen), so a lock held for a push or a pop is cheap and
//! keeps the structure obviously right; `len` lets the owner look without taking the lock.
//!
//! Orderings: the mutex orders an item's contents between the producer and the consumer. `len`
//! is only a hint on the owner's fast path (`Relaxed`: a stale zero makes the owner look again at
//! its next round); the sleep protocol does not rely on it being fresh, because a producer
//! increments it `SeqCst` and then fences before it reads whether the owner sleeps, and the owner
//! re-checks it `SeqCst` after announcing its sleep (Dekker's handshake, see `sleep.rs`).

use crate::deque::Item;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::Mutex;
use std::collections::VecDeque;

/// One worker's inbox (see the module doc).
#[derive(Default)]
pub(crate) struct Inbox {
    items: Mutex<VecDeque<Item>>,
    len: AtomicUsize,
}

impl Inbox {
    /// Delivers `it` (any thread). The caller then wakes the owner.
    pub(crate) fn push(&self, it: Item) {
        crate::sync::lock(&self.items).push_back(it);
        // SeqCst: the owner's sleep re-check must see this delivery or the producer must see
        // the owner asleep (see the module doc); the lock alone orders the item itself.
        self.len.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes the oldest item (the owner only).
    #[inline]
    pub(crate) fn pop(&self) -> Option<Item> {
        // Relaxed: a hint; a stale zero is looked at again on the owner's next round.
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.pop_locked()
    }

    #[cold]
    fn pop_locked(&self) -> Option<Item> {
        let it = crate::sync::lock(&self.items).pop_front();
        if it.is_some() {
            // Relaxed: the count is only a hint for the owner, the one decrementer; the items
            // are ordered by the lock.
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        it
    }

    /// Whether nothing waits here; `SeqCst` for the sleep protocol's re-check.
    pub(crate) fn is_empty(&self) -> bool {
        // SeqCst: the sleep re-check's read, after the owner's fence (module doc, "Orderings");
        // other callers (the DWS coordinator, a region's stall check) need only a recent value.
        self.len.load(Ordering::SeqCst) == 0
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sleep::Sleep;
    use loom::sync::Arc;
    use loom::thread;

    /// A producer delivers two items to worker 0 of a two-worker sleep protocol while it runs
    /// its loop (take from the inbox, else sleep): it gets both, in order, and never sleeps
    /// through a delivery (loom reports the deadlock if it did).
    #[test]
    fn deliveries_reach_a_sleeping_owner() {
        // Every interleaving with up to 3 preemptions: the sleeper's loop with the three-state
        // sleep slot makes the unbounded search run for many minutes.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let inbox = Arc::new(Inbox::default());
            let sleep = Arc::new(Sleep::new(2));
            let producer = {
                let (inbox, sleep) = (inbox.clone(), sleep.clone());
                thread::spawn(move || {
                    for a in [8, 24] {
                        inbox.push(Item(a, 0));
                        sleep.notify_worker(0);
                    }
                })
            };
            let mut got = Vec::new();
            while got.len() < 2 {
                match inbox.pop() {
                    Some(it) => got.push(it.0),
                    None => {
                        sleep.sleep(0, || !inbox.is_empty(), crate::sleep::always, || false);
                    }
                }
            }
            producer.join().unwrap();
            assert_eq!(got, vec![8, 24]);
            assert!(inbox.pop().is_none());
        });
    }
}
