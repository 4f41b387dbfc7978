//! DWS's sleeping workers: how a worker gives up its core and sleeps, and how it is woken on one.
//!
//! Under DWS a worker runs only while its program holds a core for it (`runtime.rs`), so waking
//! a worker has two parts: choosing it, and obtaining a core for it. Each worker's slot goes
//! through three states:
//!
//! ```text
//!            sleep()                 activate(): CAS              hold() succeeded
//!   ACTIVE ───────────▶ ASLEEP ──────────────────────▶ WAKING ─────────────────────▶ ACTIVE
//!                          ▲                               │ hold() failed
//!                          └───────────────────────────────┘
//! ```
//!
//! * The worker announces its sleep (`ASLEEP`, the count of sleepers up, `SeqCst`), fences, and
//!   re-checks for work; if it finds some it tries to wake itself like any waker would. Only
//!   then does it wait on its condition variable, until its state is `ACTIVE` (or the pool shuts
//!   down).
//! * A waker (a producer of work, a deliverer to the worker's inbox, the coordinator) claims the
//!   sleeper with one CAS from `ASLEEP` to `WAKING`, so two wakers never both obtain a core for
//!   it. Holding `WAKING`, it tries to obtain the core (`hold`, which may claim it in the core
//!   table). If that fails it puts the sleeper back to `ASLEEP`, and the sleeper sleeps on; if it
//!   succeeds it stores `ACTIVE` and notifies under the slot's lock.
//!
//! No wake-up is lost: a producer publishes its work, fences, then reads the state; the sleeper
//! announces, fences, then reads the work (Dekker's handshake, as in `sleep.rs`), so one of the
//! two sees the other. The sleeper reads its state under the lock it waits with, and the waker
//! notifies under that lock after storing `ACTIVE`, so a notify cannot fall between the
//! sleeper's last check and its wait. A waker that loses the CAS to another waker, or whose core
//! cannot be had, leaves the worker asleep: the coordinator looks again every period and, for a
//! worker with a delivery that only it can run, after two periods wakes it without a core
//! (`runtime.rs`), so nothing waits forever. The loom models below check these claims.

use crate::sync::atomic::{fence, AtomicU8, AtomicUsize, Ordering};
use crate::sync::{lock, CachePadded, Condvar, Mutex};

const ACTIVE: u8 = 0;
const ASLEEP: u8 = 1;
/// A waker chose this sleeper and is obtaining its core.
const WAKING: u8 = 2;

struct Slot {
    state: AtomicU8,
    lock: Mutex<()>,
    cv: Condvar,
}

/// The sleep slots of one pool's workers under DWS.
pub(crate) struct Sleepers {
    slots: Vec<CachePadded<Slot>>,
    asleep: AtomicUsize,
}

impl Sleepers {
    /// `workers` slots, every worker active.
    pub(crate) fn new(workers: usize) -> Sleepers {
        Sleepers {
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
        }
    }

    /// Workers asleep (or being woken) now.
    pub(crate) fn count(&self) -> usize {
        // SeqCst: read by the coordinator and by producers after their fence (the handshake).
        self.asleep.load(Ordering::SeqCst)
    }

    /// Whether worker `w` is asleep and no waker holds it.
    pub(crate) fn is_asleep(&self, w: usize) -> bool {
        // SeqCst: the waker's side of the handshake (after its fence).
        self.slots[w].state.load(Ordering::SeqCst) == ASLEEP
    }

    /// Worker `w` sleeps until a waker activates it, or until `done()` (the pool's shutdown).
    /// Unless `has_work()`, evaluated after the sleep is announced, finds work and `hold()`
    /// obtains the core again: then it returns at once. The caller has given up its core.
    pub(crate) fn sleep(
        &self,
        w: usize,
        has_work: impl Fn() -> bool,
        hold: impl FnOnce() -> bool,
        done: impl Fn() -> bool,
    ) {
        let slot = &self.slots[w];
        // SeqCst: the announcement, state and count (see the module doc); these two lines.
        slot.state.store(ASLEEP, Ordering::SeqCst);
        self.asleep.fetch_add(1, Ordering::SeqCst);
        // SeqCst fence: orders the announcement before the re-check; pairs with the waker's
        // fence in `wake` (and the producers' fences before they read the count).
        fence(Ordering::SeqCst);
        if has_work() && self.activate(w, hold) {
            return;
        }
        let mut g = lock(&slot.lock);
        // SeqCst: as every access to the state; read under the lock the waker notifies under.
        while slot.state.load(Ordering::SeqCst) != ACTIVE && !done() {
            g = match slot.cv.wait(g) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
    }

    /// Wakes sleeper `w` if it is asleep, no other waker holds it, and `hold()` obtains its
    /// core; true if it was woken here.
    pub(crate) fn activate(&self, w: usize, hold: impl FnOnce() -> bool) -> bool {
        let slot = &self.slots[w];
        // SeqCst: one CAS decides which waker owns this wake-up.
        if slot
            .state
            // SeqCst both ways: as every access to the state; a failure only says another
            // waker holds it or it is awake.
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

    /// A producer published work (or delivered an item to `w`): fences, then wakes `w` with
    /// `hold` if it sleeps. True if it was woken here.
    pub(crate) fn wake(&self, w: usize, hold: impl FnOnce() -> bool) -> bool {
        // SeqCst fence: the producer's side of the handshake, between its publication and its
        // read of the state.
        fence(Ordering::SeqCst);
        self.is_asleep(w) && self.activate(w, hold)
    }

    /// Shutdown: wakes every sleeper so that it sees `done()`.
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

    /// A worker runs until it has taken a delivery; it sleeps when it finds none. A deliverer
    /// delivers and wakes it on a free core. The worker always gets the delivery (a lost wake-up
    /// leaves it asleep, which loom reports as a deadlock), and the core is obtained once.
    #[test]
    fn a_delivery_wakes_its_sleeper() {
        loom::model(|| {
            let s = Arc::new(Sleepers::new(1));
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

    /// Its core cannot be had: the deliverer's wake-up and the worker's own re-check both fail
    /// to obtain it, and the worker sleeps. The coordinator, looking each period for sleepers
    /// with a delivery, wakes it without a core (the guest rule): it still gets the delivery.
    #[test]
    fn a_sleeper_without_a_core_is_woken_as_a_guest() {
        // The coordinator polls, as the real one does every period; bounding preemptions keeps
        // loom's search of its loop finite (every interleaving with up to 3 preemptions).
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let s = Arc::new(Sleepers::new(1));
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
                        if item.load(Ordering::SeqCst) && s.activate(0, || true) {
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
