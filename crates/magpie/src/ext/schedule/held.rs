//! One worker's *held* queue in a schedule region: the donations made to it.
//!
//! A donor (a task that reached a child the template cuts to this worker, or a designated join)
//! puts the child's item here and wakes the worker (`Region::donate`); the worker's scheduling
//! loop takes it after its own ready fibers, inbox and deque (`main_loop.rs`), and its sleep
//! re-check asks [`Held::runnable`]. The protocol with the sleep slots is the inbox's: the donor
//! inserts under the queue's lock, then raises `len` with `SeqCst` and reads the worker's sleep
//! flag; the worker announces its sleep, then reads `len` with `SeqCst`. Either the worker's
//! re-check sees the item or the donor sees the worker asleep and wakes it (`sleep.rs`). The
//! donor then goes on to its sync point and waits for the donated half on its latch exactly as
//! for a stolen one. The loom model below checks the whole handshake: donation, the donee's
//! sleep and wake, the half's latch racing the donor's registration.
//!
//! Items are keyed by (template rank, arrival). Under `Ordered` an item may be taken only when
//! every cut ranked before it on this worker has begun (`order`, `begun`, `next`), or when the
//! region's stall rule forced the lowest one (`forced`, see `region.rs`); an item of a
//! designation is [`UNRANKED`] and always allowed. The queue is unbounded: a donor never waits
//! for room, so donors cannot deadlock in a cycle (the thesis's bounded buffers can).

use crate::deque::Item;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::{lock, Mutex};
use std::collections::BTreeMap;

/// The rank key of a donation the template does not rank (a designation): always allowed.
pub(crate) const UNRANKED: u32 = u32::MAX;

/// One worker's held donations.
pub(crate) struct Held {
    q: Mutex<HeldQ>,
    /// Items in `q` (SeqCst: read by the sleep re-check, as an inbox's length).
    len: AtomicUsize,
}

#[derive(Default)]
struct HeldQ {
    /// Keyed by (template rank, arrival).
    items: BTreeMap<(u32, u64), Item>,
    /// `Ordered`: this worker's template ranks, ascending, and which have begun (or were
    /// skipped by a forced take).
    order: Vec<u32>,
    begun: Vec<bool>,
    /// Index of the first entry of `order` not begun.
    next: usize,
    /// The stall rule forced this worker to take its lowest item.
    forced: bool,
}

impl HeldQ {
    fn allowed(&self, ordered: bool, rank: u32) -> bool {
        !ordered
            || rank == UNRANKED
            || self.forced
            || self.next >= self.order.len()
            || rank <= self.order[self.next]
    }

    /// The key of the item this worker may take now, if any.
    fn takeable(&self, ordered: bool) -> Option<(u32, u64)> {
        let first = *self.items.keys().next()?;
        if self.allowed(ordered, first.0) {
            return Some(first);
        }
        // Unranked items sort last and are always allowed.
        self.items
            .keys()
            .next_back()
            .copied()
            .filter(|k| k.0 == UNRANKED)
    }

    fn begin(&mut self, rank: u32) {
        let at = self.order.partition_point(|&r| r < rank);
        if let Some(i) = (at..self.order.len()).find(|&i| self.order[i] == rank && !self.begun[i]) {
            self.begun[i] = true;
        }
        while self.next < self.order.len() && self.begun[self.next] {
            self.next += 1;
        }
    }

    /// A forced take of `rank`: the cuts ranked before it will not be waited for.
    fn skip_to(&mut self, rank: u32) {
        while self.next < self.order.len() && self.order[self.next] < rank {
            self.begun[self.next] = true;
            self.next += 1;
        }
    }
}

impl Held {
    /// A held queue for a worker whose template ranks (under `Ordered`) are `order`, in any
    /// order; empty when the template gives it none or the region does not keep order.
    pub(crate) fn new(mut order: Vec<u32>) -> Held {
        order.sort_unstable();
        Held {
            q: Mutex::new(HeldQ {
                items: BTreeMap::new(),
                begun: vec![false; order.len()],
                order,
                next: 0,
                forced: false,
            }),
            len: AtomicUsize::new(0),
        }
    }

    /// A donation with template rank `rank` (or [`UNRANKED`]), the `seq`-th of the region.
    /// The caller wakes the worker afterwards.
    pub(crate) fn push(&self, rank: u32, seq: u64, it: Item) {
        lock(&self.q).items.insert((rank, seq), it);
        // SeqCst: the owner's sleep re-check must see the item, or the waker sees the owner
        // asleep.
        self.len.fetch_add(1, Ordering::SeqCst);
    }

    /// An item the worker may run now (`ordered`: the region keeps the template's order).
    pub(crate) fn take(&self, ordered: bool) -> Option<Item> {
        // Relaxed: a hint, as for an inbox; a stale zero is looked at again next round.
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut q = lock(&self.q);
        let key = q.takeable(ordered)?;
        if q.forced {
            q.forced = false;
            q.skip_to(key.0);
        }
        let it = q.items.remove(&key)?;
        // SeqCst: as the increment; the decrement, under the lock, publishes nothing.
        self.len.fetch_sub(1, Ordering::SeqCst);
        Some(it)
    }

    /// Whether the worker has an item it may run now (the sleep re-check).
    pub(crate) fn runnable(&self, ordered: bool) -> bool {
        // SeqCst: for the sleep re-check, after the worker's fence (module doc); the lock then
        // shows the items and whether one is allowed or forced. (The DWS coordinator's periodic
        // look through `Registry::has_delivered` needs only a recent value.)
        self.len.load(Ordering::SeqCst) > 0 && lock(&self.q).takeable(ordered).is_some()
    }

    /// The cut of template rank `rank` began on this worker (`Ordered`).
    pub(crate) fn begin(&self, rank: u32) {
        lock(&self.q).begin(rank);
    }

    /// For the stall rule: `Err(())` when this worker can run something (an allowed item, or a
    /// forced take pending); else the key of its lowest held item, if any.
    pub(crate) fn stalled(&self) -> Result<Option<(u32, u64)>, ()> {
        let q = lock(&self.q);
        if q.forced || q.takeable(true).is_some() {
            return Err(());
        }
        Ok(q.items.keys().next().copied())
    }

    /// The stall rule: the worker's next take is its lowest item, whatever its rank.
    pub(crate) fn force(&self) {
        lock(&self.q).forced = true;
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    // The donated half, its latch and the donor's suspension are modelled as in the join's
    // model: the donee finishes the half as a thief does.
    use crate::return_barrier_model::Frame;
    use crate::sleep::Sleep;
    use loom::sync::Arc;
    use loom::thread;

    /// The donee's loop: take a held item, else sleep until woken (the sleep re-check asks
    /// `runnable`), until it has run `n` items.
    fn donee(held: &Held, sleep: &Sleep, halves: &[Arc<Frame>], n: usize, ordered: bool) {
        let mut done = 0;
        while done < n {
            match held.take(ordered) {
                Some(it) => {
                    let half = &halves[it.0 as usize];
                    half.run();
                    half.finish_stolen();
                    done += 1;
                }
                None => {
                    sleep.sleep(1, || held.runnable(ordered), crate::sleep::always, || false);
                }
            }
        }
    }

    /// A donor hands a half to worker 1 and goes straight to its sync point, while worker 1
    /// may be taking, re-checking or asleep: the half runs exactly once, worker 1 is never left
    /// asleep with it (loom reports the deadlock), and the donor reads the half's result after
    /// it was written, whether it registered on the latch or found it set.
    #[test]
    fn a_donation_races_the_donees_sleep_and_the_donors_sync() {
        loom::model(|| {
            let held = Arc::new(Held::new(vec![]));
            let sleep = Arc::new(Sleep::new(2));
            let halves = vec![Arc::new(Frame::new())];
            let w1 = {
                let (held, sleep, halves) = (held.clone(), sleep.clone(), halves.clone());
                thread::spawn(move || donee(&held, &sleep, &halves, 1, false))
            };
            held.push(UNRANKED, 0, Item(0, 0));
            sleep.notify_worker(1);
            assert_eq!(halves[0].wait(), 42);
            w1.join().unwrap();
            assert_eq!(halves[0].ran.load(Ordering::Relaxed), 1);
            assert!(held.take(false).is_none());
        });
    }

    /// One donor hands worker 1 the cuts of template ranks 1 then 0 under `Ordered`, while
    /// worker 1 takes, re-checks or sleeps: it takes rank 0 first although rank 1 came first
    /// (rank 1 is not allowed until rank 0 has begun), and never sleeps with an allowed item.
    #[test]
    fn ordered_donations_are_taken_in_rank_order() {
        // Every interleaving with up to 3 preemptions: the sleeper's loop with the three-state
        // sleep slot makes the unbounded search run for many minutes.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let held = Arc::new(Held::new(vec![1, 0]));
            let sleep = Arc::new(Sleep::new(2));
            let w1 = {
                let (held, sleep) = (held.clone(), sleep.clone());
                thread::spawn(move || {
                    let mut order = Vec::new();
                    while order.len() < 2 {
                        match held.take(true) {
                            Some(it) => {
                                held.begin(it.0 as u32);
                                order.push(it.0);
                            }
                            None => {
                                sleep.sleep(
                                    1,
                                    || held.runnable(true),
                                    crate::sleep::always,
                                    || false,
                                );
                            }
                        }
                    }
                    order
                })
            };
            held.push(1, 0, Item(1, 0));
            sleep.notify_worker(1);
            held.push(0, 1, Item(0, 0));
            sleep.notify_worker(1);
            assert_eq!(w1.join().unwrap(), vec![0, 1]);
            assert!(held.take(true).is_none());
        });
    }
}
