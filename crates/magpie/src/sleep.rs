//! Idle workers sleep instead of spinning (DWS §3.1 and Algorithm 1: a worker sleeps after a bounded
//! number of failed steals), and wake promptly when work appears.
//!
//! Each worker has a slot of its own (a flag, a mutex and a condition variable), so a producer can
//! wake either *some* sleeper (work anyone may take: [`Sleep::notify_one`]) or *one given* worker
//! (an item delivered to its inbox, which only it may take: [`Sleep::notify_worker`]). The
//! protocol is Dekker's handshake between a sleeper and a producer of work:
//!
//! * sleeper `w`: under its slot's lock, `asleep[w] = true` and `sleepers += 1` (`SeqCst`), a
//!   `SeqCst` fence, then re-check for work (its inbox, the deques it may steal from, the pool's
//!   queue); only if there is none does it wait on its condition variable (which releases the
//!   lock atomically), until a waker has cleared `asleep[w]`.
//! * producer: publish the work (a `split` store, an injector or inbox push), a `SeqCst` fence,
//!   then read the flag of the worker it means to wake (or `sleepers`, then each flag, to find
//!   one); if it is set, take that slot's lock, clear the flag and notify.
//!
//! Either the sleeper's re-check sees the work, or the producer's read sees the flag; and because
//! the sleeper holds its lock from its announcement until it is inside `wait`, a producer's notify
//! cannot fall between its re-check and its wait. No wake-up is lost (loom-tested below and in
//! `inbox.rs`). Waking more than needed is harmless: the woken worker steals, fails a few rounds
//! and sleeps again.

use crate::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::sync::{CachePadded, Condvar, Mutex};

/// One worker's place to sleep.
struct Slot {
    /// Set by the sleeper under `lock`, cleared by whoever wakes it (also under `lock`).
    asleep: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
}

pub(crate) struct Sleep {
    slots: Vec<CachePadded<Slot>>,
    sleepers: AtomicUsize,
    /// Where `notify_one`'s search for a sleeper starts (spreads wake-ups over the workers).
    next: AtomicUsize,
}

impl Sleep {
    /// The sleep slots of `workers` workers.
    pub(crate) fn new(workers: usize) -> Sleep {
        Sleep {
            slots: (0..workers)
                .map(|_| {
                    CachePadded(Slot {
                        asleep: AtomicBool::new(false),
                        lock: Mutex::new(()),
                        cv: Condvar::new(),
                    })
                })
                .collect(),
            sleepers: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
        }
    }

    /// Workers asleep right now.
    pub(crate) fn sleepers(&self) -> usize {
        // Relaxed: a snapshot for statistics and tests.
        self.sleepers.load(Ordering::Relaxed)
    }

    /// Puts worker `w` to sleep unless `has_work` (evaluated after announcing the sleep) finds
    /// something; `asleep` runs just before it waits. Returns whether it actually slept.
    pub(crate) fn sleep(
        &self,
        w: usize,
        has_work: impl Fn() -> bool,
        asleep: impl FnOnce(),
    ) -> bool {
        let slot = &self.slots[w];
        let mut g = crate::sync::lock(&slot.lock);
        // SeqCst: the announcement (flag and count) is one side of the handshake (see the
        // module doc); these two lines.
        slot.asleep.store(true, Ordering::SeqCst);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // SeqCst fence: orders the announcement before the re-check, whatever orderings the
        // re-check's loads use (pairs with the producer's fence in `notify_*`).
        fence(Ordering::SeqCst);
        let slept = if has_work() {
            // SeqCst: as the announcement it withdraws.
            slot.asleep.store(false, Ordering::SeqCst);
            false
        } else {
            asleep();
            // SeqCst: a waker clears the flag under the lock, which we hold whenever we read it.
            while slot.asleep.load(Ordering::SeqCst) {
                g = match slot.cv.wait(g) {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
            }
            true
        };
        // SeqCst: as every write of the count; the decrement publishes nothing (a producer
        // that still counts this worker only finds its flag clear).
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(g);
        slept
    }

    /// Clears worker `w`'s flag and notifies it, if it is asleep. The caller has fenced.
    fn wake(&self, w: usize) -> bool {
        let slot = &self.slots[w];
        // SeqCst: the producer's side of the handshake (after its fence).
        if !slot.asleep.load(Ordering::SeqCst) {
            return false;
        }
        let _g = crate::sync::lock(&slot.lock);
        // SeqCst: under the lock, so the sleeper is inside `wait` (or gone) when we clear it.
        if slot.asleep.swap(false, Ordering::SeqCst) {
            slot.cv.notify_one();
            true
        } else {
            false
        }
    }

    /// Called by a producer after publishing work anyone may take: wakes one sleeper, if any.
    #[inline]
    pub(crate) fn notify_one(&self) {
        // SeqCst fence: orders the producer's publication before its read of `sleepers` and the
        // flags (pairs with the sleeper's fence after its announcement).
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.notify_one_slow();
        }
    }

    #[cold]
    fn notify_one_slow(&self) {
        let n = self.slots.len();
        // Relaxed: only spreads wake-ups; any start is correct.
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for k in 0..n {
            if self.wake((start + k) % n) {
                return;
            }
        }
    }

    /// Called by a producer after delivering work to worker `w`'s inbox: wakes `w` if it sleeps.
    #[inline]
    pub(crate) fn notify_worker(&self, w: usize) {
        // SeqCst fence: as in `notify_one`, for the one flag that matters.
        fence(Ordering::SeqCst);
        self.wake(w);
    }

    /// Wakes everyone (shutdown; work only some workers may take, with places).
    pub(crate) fn notify_all(&self) {
        // SeqCst fence: as in `notify_one`, between the publication (the shutdown flag, or
        // work for one place) and the reads of the flags.
        fence(Ordering::SeqCst);
        for w in 0..self.slots.len() {
            self.wake(w);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::AtomicBool;
    use loom::sync::Arc;
    use loom::thread;

    /// A worker that finds no work goes to sleep while a producer publishes one item: the worker
    /// always ends up with the item (a lost wake-up would leave it asleep and loom reports the
    /// deadlock).
    #[test]
    fn no_lost_wakeup() {
        loom::model(|| {
            let s = Arc::new(Sleep::new(1));
            let work = Arc::new(AtomicBool::new(false));
            let (s2, w2) = (s.clone(), work.clone());
            let sleeper = thread::spawn(move || {
                while !w2.load(Ordering::SeqCst) {
                    s2.sleep(0, || w2.load(Ordering::SeqCst), || {});
                }
            });
            work.store(true, Ordering::SeqCst);
            s.notify_one();
            sleeper.join().unwrap();
        });
    }

    /// Work for worker 1 only: the producer wakes worker 1, never leaves it asleep, whatever
    /// worker 0 does meanwhile (here it sleeps and is woken by shutdown).
    #[test]
    fn a_targeted_wakeup_reaches_its_worker() {
        loom::model(|| {
            let s = Arc::new(Sleep::new(2));
            let mine = Arc::new(AtomicBool::new(false));
            let (s1, m1) = (s.clone(), mine.clone());
            let w1 = thread::spawn(move || {
                while !m1.load(Ordering::SeqCst) {
                    s1.sleep(1, || m1.load(Ordering::SeqCst), || {});
                }
            });
            mine.store(true, Ordering::SeqCst);
            s.notify_worker(1);
            w1.join().unwrap();
        });
    }
}
