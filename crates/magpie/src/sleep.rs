//! How an idle worker sleeps instead of spinning, and how it is woken (DWS §3.1 and Algorithm 1:
//! a worker sleeps after a bounded number of failed steals): one protocol for every pool, with
//! or without core sharing.
//!
//! Each worker has a slot of its own (a state, a mutex and a condition variable), so a producer
//! can wake either *some* sleeper (work anyone may take: [`Sleep::notify_one`]) or *one given*
//! worker (an item delivered to its inbox, which only it may take: [`Sleep::wake`]).
//!
//! Waking a worker has two parts: choosing it, and obtaining a core for it. In a pool of its own
//! the second part is free (`hold` is `|| true`). Under DWS (`dws/runtime.rs`) a worker runs
//! only while its program holds a core for it, so `hold` claims one in the core table and may
//! fail. A slot goes through three states:
//!
//! ```text
//!            sleep()                 activate(): CAS              hold() succeeded
//!   ACTIVE ───────────▶ ASLEEP ──────────────────────▶ WAKING ─────────────────────▶ ACTIVE
//!                          ▲                               │ hold() failed
//!                          └───────────────────────────────┘
//! ```
//!
//! * **Sleeper.** The worker announces its sleep (`ASLEEP`, the count of sleepers up, `SeqCst`),
//!   fences (`SeqCst`), and re-checks for work (its inbox, the deques it may steal from, the
//!   pool's queue, the pool's shutdown flag); if it finds some it tries to wake itself like any
//!   waker would. Only then does it wait on its condition variable, until its state is `ACTIVE`
//!   (or `done()`: the pool shuts down).
//! * **Waker** (a producer of work, a deliverer to the worker's inbox, DWS's coordinator). It
//!   publishes the work, fences (`SeqCst`), and reads the sleeper's state (or first the count,
//!   to learn whether anyone sleeps). It claims a sleeper with one CAS from `ASLEEP` to
//!   `WAKING`, so two wakers never both obtain a core for it. Holding `WAKING`, it calls `hold`;
//!   if that fails it puts the sleeper back to `ASLEEP`, and the sleeper sleeps on; if it
//!   succeeds it stores `ACTIVE` and notifies under the slot's lock.
//!
//! No wake-up is lost. The sleeper's announcement and re-check and the waker's publication and
//! read are Dekker's handshake: each side stores, fences, then loads what the other stored, so
//! one of the two sees the other (the re-check sees the work, or the waker sees `ASLEEP`). The
//! sleeper reads its state under the lock it waits with, and the waker notifies under that lock
//! after storing `ACTIVE`, so a notify cannot fall between the sleeper's last check and its
//! wait. A waker that loses the CAS to another waker leaves the wake-up to that one. A waker
//! whose core cannot be had leaves the worker asleep: DWS's coordinator looks again every
//! period and, for a worker with a delivery only it can run, after two periods wakes it without
//! a core (`dws/runtime.rs`), so nothing waits forever. Waking more than needed is harmless:
//! the woken worker steals, fails a few rounds and sleeps again. The loom models below check
//! these claims, for both kinds of `hold`.

use crate::sync::atomic::{fence, AtomicU8, AtomicUsize, Ordering};
use crate::sync::{lock, CachePadded, Condvar, Mutex};

const ACTIVE: u8 = 0;
const ASLEEP: u8 = 1;
/// A waker chose this sleeper and is obtaining its core.
const WAKING: u8 = 2;

/// One worker's place to sleep.
struct Slot {
    state: AtomicU8,
    lock: Mutex<()>,
    cv: Condvar,
}

/// The sleep slots of one pool's workers.
pub(crate) struct Sleep {
    slots: Vec<CachePadded<Slot>>,
    /// Workers asleep or being woken.
    asleep: AtomicUsize,
    /// Where `notify_one`'s search for a sleeper starts (spreads wake-ups over the workers).
    next: AtomicUsize,
}

/// The `hold` of a pool that does not share cores: a woken worker always has its core.
#[inline]
pub(crate) fn always() -> bool {
    true
}

impl Sleep {
    /// `workers` slots, every worker active.
    pub(crate) fn new(workers: usize) -> Sleep {
        Sleep {
            slots: (0..workers)
                .map(|_| {
                    CachePadded(Slot {
                        state: AtomicU8::new(ACTIVE),
                        lock: Mutex::new(()),
                        cv: Condvar::new(),
                    })
                })
                .collect(),
            asleep: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
        }
    }

    /// Workers asleep (or being woken) now.
    #[inline]
    pub(crate) fn sleepers(&self) -> usize {
        // SeqCst: read by DWS's coordinator and by producers after their fence (the handshake).
        self.asleep.load(Ordering::SeqCst)
    }

    /// Whether worker `w` is asleep and no waker holds it.
    #[inline]
    pub(crate) fn is_asleep(&self, w: usize) -> bool {
        // SeqCst: the waker's side of the handshake (after its fence).
        self.slots[w].state.load(Ordering::SeqCst) == ASLEEP
    }

    /// Worker `w` sleeps until a waker activates it, or until `done()` (the pool's shutdown).
    /// Unless `has_work()`, evaluated after the sleep is announced, finds work and `hold()`
    /// obtains the core again: then it returns at once. True if it waited. Under DWS the caller
    /// has given up its core.
    pub(crate) fn sleep(
        &self,
        w: usize,
        has_work: impl Fn() -> bool,
        hold: impl FnOnce() -> bool,
        done: impl Fn() -> bool,
    ) -> bool {
        let slot = &self.slots[w];
        // SeqCst: the announcement, state and count (see the module doc); these two lines.
        slot.state.store(ASLEEP, Ordering::SeqCst);
        self.asleep.fetch_add(1, Ordering::SeqCst);
        // SeqCst fence: orders the announcement before the re-check, whatever orderings the
        // re-check's loads use; pairs with the waker's fence in `wake` and `notify_*` (and the
        // producers' fences before they read the count).
        fence(Ordering::SeqCst);
        if has_work() && self.activate(w, hold) {
            return false;
        }
        let mut g = lock(&slot.lock);
        // SeqCst: as every access to the state; read under the lock the waker notifies under.
        while slot.state.load(Ordering::SeqCst) != ACTIVE && !done() {
            g = match slot.cv.wait(g) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
        true
    }

    /// Wakes sleeper `w` if it is asleep, no other waker holds it, and `hold()` obtains its
    /// core; true if it was woken here.
    pub(crate) fn activate(&self, w: usize, hold: impl FnOnce() -> bool) -> bool {
        let slot = &self.slots[w];
        if slot
            .state
            // SeqCst both ways: one CAS decides which waker owns this wake-up, ordered with
            // every other access to the state; a failure only says another waker holds it or
            // it is awake.
            .compare_exchange(ASLEEP, WAKING, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return false;
        }
        if !hold() {
            // SeqCst: hands the sleeper back to later wakers.
            slot.state.store(ASLEEP, Ordering::SeqCst);
            return false;
        }
        // SeqCst: as every write of the count, which producers read after their fence; the
        // decrement publishes nothing (a waker that still counts this sleeper finds it ACTIVE).
        self.asleep.fetch_sub(1, Ordering::SeqCst);
        // SeqCst: the sleeper reads it under the lock taken below.
        slot.state.store(ACTIVE, Ordering::SeqCst);
        let _g = lock(&slot.lock);
        slot.cv.notify_one();
        true
    }

    /// A producer published work only `w` may take (or delivered an item to `w`'s inbox):
    /// fences, then wakes `w` with `hold` if it sleeps. True if it was woken here.
    #[inline]
    pub(crate) fn wake(&self, w: usize, hold: impl FnOnce() -> bool) -> bool {
        // SeqCst fence: the producer's side of the handshake, between its publication and its
        // read of the state.
        fence(Ordering::SeqCst);
        self.is_asleep(w) && self.activate(w, hold)
    }

    /// [`wake`](Sleep::wake) in a pool that does not share cores.
    #[inline]
    pub(crate) fn notify_worker(&self, w: usize) {
        self.wake(w, always);
    }

    /// A producer published work anyone may take, in a pool that does not share cores: wakes
    /// one sleeper, if any.
    #[inline]
    pub(crate) fn notify_one(&self) {
        // SeqCst fence: orders the producer's publication before its read of the count and the
        // states (pairs with the sleeper's fence after its announcement).
        fence(Ordering::SeqCst);
        if self.sleepers() > 0 {
            self.notify_one_slow();
        }
    }

    #[cold]
    fn notify_one_slow(&self) {
        let n = self.slots.len();
        // Relaxed: only spreads wake-ups; any start is correct.
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for k in 0..n {
            if self.activate((start + k) % n, always) {
                return;
            }
        }
    }

    /// Wakes every sleeper of a pool that does not share cores (shutdown; work only some
    /// workers may take, with places).
    pub(crate) fn notify_all(&self) {
        // SeqCst fence: as in `notify_one`, between the publication (the shutdown flag, or
        // work for one place) and the reads of the states.
        fence(Ordering::SeqCst);
        for w in 0..self.slots.len() {
            self.activate(w, always);
        }
    }

    /// Shutdown under DWS, where activating needs a core: wakes every sleeper so that it sees
    /// `done()`, which the caller made true first.
    pub(crate) fn wake_all_for_shutdown(&self) {
        for slot in &self.slots {
            let _g = lock(&slot.lock);
            slot.cv.notify_all();
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::AtomicBool;
    use loom::sync::Arc;
    use loom::thread;

    /// A pool of its own: a worker that finds no work goes to sleep while a producer publishes
    /// one item: the worker always ends up with the item (a lost wake-up would leave it asleep,
    /// and loom reports the deadlock).
    #[test]
    fn no_lost_wakeup() {
        loom::model(|| {
            let s = Arc::new(Sleep::new(1));
            let work = Arc::new(AtomicBool::new(false));
            let (s2, w2) = (s.clone(), work.clone());
            let sleeper = thread::spawn(move || {
                while !w2.load(Ordering::SeqCst) {
                    s2.sleep(0, || w2.load(Ordering::SeqCst), always, || false);
                }
            });
            work.store(true, Ordering::SeqCst);
            s.notify_one();
            sleeper.join().unwrap();
            assert_eq!(s.sleepers(), 0, "a woken worker is still counted asleep");
        });
    }

    /// Work for worker 1 only: the producer wakes worker 1, never leaves it asleep.
    #[test]
    fn a_targeted_wakeup_reaches_its_worker() {
        loom::model(|| {
            let s = Arc::new(Sleep::new(2));
            let mine = Arc::new(AtomicBool::new(false));
            let (s1, m1) = (s.clone(), mine.clone());
            let w1 = thread::spawn(move || {
                while !m1.load(Ordering::SeqCst) {
                    s1.sleep(1, || m1.load(Ordering::SeqCst), always, || false);
                }
            });
            mine.store(true, Ordering::SeqCst);
            s.wake(1, always);
            w1.join().unwrap();
        });
    }

    /// Shutdown of a pool of its own: two workers on their way to sleep, the flag set and every
    /// sleeper woken: both leave (the flag is part of their re-check).
    #[test]
    fn shutdown_wakes_every_sleeper() {
        // Three threads: bounding preemptions keeps the search finite (every interleaving with
        // up to 3 preemptions).
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let s = Arc::new(Sleep::new(2));
            let stop = Arc::new(AtomicBool::new(false));
            let workers: Vec<_> = (0..2)
                .map(|w| {
                    let (s, stop) = (s.clone(), stop.clone());
                    thread::spawn(move || {
                        while !stop.load(Ordering::SeqCst) {
                            s.sleep(w, || stop.load(Ordering::SeqCst), always, || false);
                        }
                    })
                })
                .collect();
            stop.store(true, Ordering::SeqCst);
            s.notify_all();
            for w in workers {
                w.join().unwrap();
            }
        });
    }

    /// DWS: a worker runs until it has taken a delivery; it sleeps when it finds none. A
    /// deliverer delivers and wakes it on a free core. The worker always gets the delivery (a
    /// lost wake-up leaves it asleep, which loom reports as a deadlock), and the core is
    /// obtained once.
    #[test]
    fn a_delivery_wakes_its_sleeper() {
        loom::model(|| {
            let s = Arc::new(Sleep::new(1));
            let item = Arc::new(AtomicBool::new(false));
            let holds = Arc::new(AtomicUsize::new(0));
            let worker = {
                let (s, item, holds) = (s.clone(), item.clone(), holds.clone());
                thread::spawn(move || {
                    while !item.load(Ordering::SeqCst) {
                        s.sleep(
                            0,
                            || item.load(Ordering::SeqCst),
                            || {
                                holds.fetch_add(1, Ordering::SeqCst);
                                true
                            },
                            || false,
                        );
                    }
                })
            };
            item.store(true, Ordering::SeqCst);
            s.wake(0, || {
                holds.fetch_add(1, Ordering::SeqCst);
                true
            });
            worker.join().unwrap();
            assert!(
                holds.load(Ordering::SeqCst) <= 1,
                "two wakers obtained a core"
            );
            assert!(!s.is_asleep(0));
        });
    }

    /// DWS, its core cannot be had: the deliverer's wake-up and the worker's own re-check both
    /// fail to obtain it, and the worker sleeps. The coordinator, looking each period for
    /// sleepers with a delivery, wakes it without a core (the guest rule): it still gets the
    /// delivery.
    #[test]
    fn a_sleeper_without_a_core_is_woken_as_a_guest() {
        // The coordinator polls, as the real one does every period; bounding preemptions keeps
        // loom's search of its loop finite (every interleaving with up to 3 preemptions).
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let s = Arc::new(Sleep::new(1));
            let item = Arc::new(AtomicBool::new(false));
            let finished = Arc::new(AtomicBool::new(false));
            let worker = {
                let (s, item, finished) = (s.clone(), item.clone(), finished.clone());
                thread::spawn(move || {
                    while !item.load(Ordering::SeqCst) {
                        s.sleep(0, || item.load(Ordering::SeqCst), || false, || false);
                    }
                    finished.store(true, Ordering::SeqCst);
                })
            };
            let coordinator = {
                let (s, item, finished) = (s.clone(), item.clone(), finished.clone());
                thread::spawn(move || {
                    while !finished.load(Ordering::SeqCst) {
                        if item.load(Ordering::SeqCst) && s.activate(0, always) {
                            return;
                        }
                        thread::yield_now();
                    }
                })
            };
            item.store(true, Ordering::SeqCst);
            s.wake(0, || false);
            worker.join().unwrap();
            coordinator.join().unwrap();
        });
    }
}
