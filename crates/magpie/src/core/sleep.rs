//! How an idle worker sleeps instead of spinning, and how it is woken (DWS §3.1 and Algorithm 1:
//! a worker sleeps after a bounded number of failed steals): one protocol for every pool, with
//! or without core sharing.
//!
//! Each worker has a slot of its own (a state, a mutex and a condition variable), so a producer
//! can wake either *some* sleeper (work anyone may take: [`Sleep::notify_one`]) or *one given*
//! worker (an item delivered to its inbox, which only it may take: [`Sleep::wake`]).
//!
//! Waking a worker has two parts: choosing it, and obtaining a core for it. In a pool of its own
//! the second part is free (`hold` is `|| true`). Under DWS (`ext/dws/runtime.rs`) a worker runs
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
//! **A seat lent to a caller** (`borrowed_seat.rs`). A worker that sleeps with nothing of its
//! own in flight (no task suspended on its thread) announces its sleep *lendable*
//! (`ASLEEP_LENDABLE`, which wakers treat as `ASLEEP`). A thread from outside the pool may then
//! take its seat: one CAS from `ASLEEP_LENDABLE` to `LENT`, which no waker can win at the same
//! time, takes the sleeper out of the count. The worker's thread stays in its wait, which ends
//! only at `ACTIVE`: while its seat is lent, nobody can wake it, and at shutdown it waits for
//! the seat to come back (and, leaving, takes its slot out of the sleep with a CAS, so no guest
//! takes the seat of a running thread). The guest runs as that worker and sleeps in the same
//! slot when it finds nothing (`LENT_ASLEEP`, woken back to `LENT` by any waker, on a condition
//! variable of its own, so that the seat's thread is not woken with it). When it
//! leaves it gives the seat back as the worker would have gone to sleep: it stores
//! `ASLEEP_LENDABLE`, fences, re-checks for work and wakes the worker if it finds some.
//!
//! ```text
//!   ASLEEP_LENDABLE ──lend(): CAS──▶ LENT ◀──────────── activate(): CAS ───┐
//!     ▲                               │  └── sleep_lent() ──▶ LENT_ASLEEP ───┘
//!     └────────── give_back() ────────┘
//! ```
//!
//! No wake-up is lost. The sleeper's announcement and re-check and the waker's publication and
//! read are Dekker's handshake: each side stores, fences, then loads what the other stored, so
//! one of the two sees the other (the re-check sees the work, or the waker sees `ASLEEP`). The
//! sleeper reads its state under the lock it waits with, and the waker notifies under that lock
//! after storing `ACTIVE`, so a notify cannot fall between the sleeper's last check and its
//! wait. A waker that loses the CAS to another waker leaves the wake-up to that one. A waker
//! whose core cannot be had leaves the worker asleep: DWS's coordinator looks again every
//! period and, for a worker with a delivery only it can run, after two periods wakes it without
//! a core (`ext/dws/runtime.rs`), so nothing waits forever. Waking more than needed is harmless:
//! the woken worker steals, fails a few rounds and sleeps again. The loom models below check
//! these claims, for both kinds of `hold`.

use crate::sync::atomic::{fence, AtomicBool, AtomicU8, AtomicUsize, Ordering};
use crate::sync::{lock, CachePadded, Condvar, Mutex};

const ACTIVE: u8 = 0;
const ASLEEP: u8 = 1;
/// A waker chose this sleeper and is obtaining its core.
const WAKING: u8 = 2;
/// A thread from outside holds this sleeper's seat and runs as its worker; the worker's own
/// thread stays asleep.
const LENT: u8 = 3;
/// The guest holding this seat sleeps, its own thread in the same wait.
const LENT_ASLEEP: u8 = 4;
/// Asleep, with nothing of the worker's own in flight: its seat may be lent.
const ASLEEP_LENDABLE: u8 = 5;
/// Asleep with a task waiting on its thread: its re-check looked only for what that task lets
/// it start (`leapfrog.rs`), not at the deques, so work anyone may take wakes it last.
const ASLEEP_RESTRICTED: u8 = 6;

/// One worker's place to sleep.
struct Slot {
    state: AtomicU8,
    /// Where a guest holding this worker's seat waits (`sleep_lent`), under the same lock: apart
    /// from `cv`, so that waking the guest does not wake the seat's own thread.
    guest_cv: Condvar,
    /// Whether the worker's next sleep is announced lendable (`ASLEEP_LENDABLE`); read only by
    /// its own thread.
    lendable: AtomicBool,
    /// Whether the worker's next sleep is announced restricted (`ASLEEP_RESTRICTED`); read only
    /// by its own thread.
    restricted: AtomicBool,
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
                        guest_cv: Condvar::new(),
                        lendable: AtomicBool::new(false),
                        restricted: AtomicBool::new(false),
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
        matches!(
            self.slots[w].state.load(Ordering::SeqCst),
            ASLEEP | ASLEEP_LENDABLE | ASLEEP_RESTRICTED | LENT_ASLEEP
        )
    }

    /// Whether worker `w`'s next sleep may lend its seat (see the module doc). Called by the
    /// worker before [`sleep`](Sleep::sleep).
    #[inline]
    pub(crate) fn set_lendable(&self, w: usize, on: bool) {
        // Relaxed: read only by the worker's own thread, in `sleep`.
        self.slots[w].lendable.store(on, Ordering::Relaxed);
    }

    /// Whether worker `w`'s next sleep is restricted to what a task waiting on its thread lets
    /// it start (`ASLEEP_RESTRICTED`). Called by the worker before [`sleep`](Sleep::sleep).
    #[inline]
    pub(crate) fn set_restricted(&self, w: usize, on: bool) {
        // Relaxed: read only by the worker's own thread, in `sleep`.
        self.slots[w].restricted.store(on, Ordering::Relaxed);
    }

    /// Takes sleeping worker `w`'s seat for a thread from outside, if `w` sleeps and lent it;
    /// true if taken. Its thread stays asleep until [`give_back`](Sleep::give_back).
    pub(crate) fn lend(&self, w: usize) -> bool {
        let slot = &self.slots[w];
        // SeqCst: as every access to the state. A successful CAS reads the sleeper's
        // announcement (or the last guest's give-back), after which nothing of the worker
        // changes until the seat is given back.
        if slot.state.load(Ordering::SeqCst) != ASLEEP_LENDABLE
            || slot
                .state
                .compare_exchange(ASLEEP_LENDABLE, LENT, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
        {
            return false;
        }
        // SeqCst: as every write of the count.
        self.asleep.fetch_sub(1, Ordering::SeqCst);
        true
    }

    /// The guest holding `w`'s seat sleeps until a waker wakes it (the sleeper's side of the
    /// handshake, as in [`sleep`](Sleep::sleep), with `LENT_ASLEEP` for `ASLEEP`).
    pub(crate) fn sleep_lent(&self, w: usize, has_work: impl Fn() -> bool) {
        let slot = &self.slots[w];
        if self.announce(w, LENT_ASLEEP, has_work, always) {
            return;
        }
        let mut g = lock(&slot.lock);
        // SeqCst: read under the lock the waker notifies under.
        while slot.state.load(Ordering::SeqCst) != LENT {
            g = match slot.guest_cv.wait(g) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
    }

    /// The guest gives `w`'s seat back: `w` sleeps again as if it had just announced its sleep,
    /// and is woken if `has_work()` finds work or `done()` (the pool's shutdown) holds.
    pub(crate) fn give_back(&self, w: usize, has_work: impl Fn() -> bool, done: impl Fn() -> bool) {
        // The announcement is also what the worker's thread reads to leave its wait, after the
        // guest's last touch of its seat.
        if self.announce(w, ASLEEP_LENDABLE, has_work, always) {
            return;
        }
        if done() {
            let slot = &self.slots[w];
            // Shutdown notified every slot while the seat was lent; the worker's thread saw
            // `LENT` and waited on. Now it may leave.
            let _g = lock(&slot.lock);
            slot.cv.notify_all();
        }
    }

    /// The sleeper's side of the handshake (module doc): announces slot `w` asleep in state
    /// `asleep`, counts it, fences, and re-checks for work; true if the re-check found some and
    /// woke the slot again (with `hold`), so the caller must not wait.
    fn announce(
        &self,
        w: usize,
        asleep: u8,
        has_work: impl Fn() -> bool,
        hold: impl FnOnce() -> bool,
    ) -> bool {
        // SeqCst: the announcement, state and count (see the module doc); these two lines.
        self.slots[w].state.store(asleep, Ordering::SeqCst);
        self.asleep.fetch_add(1, Ordering::SeqCst);
        // SeqCst fence: orders the announcement before the re-check, whatever orderings the
        // re-check's loads use; pairs with the waker's fence in `wake` and `notify_*` (and the
        // producers' fences before they read the count).
        fence(Ordering::SeqCst);
        has_work() && self.activate(w, hold)
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
        // Relaxed: this thread's own choice (`set_lendable`).
        let asleep = if slot.lendable.load(Ordering::Relaxed) {
            ASLEEP_LENDABLE
        } else if slot.restricted.load(Ordering::Relaxed) {
            ASLEEP_RESTRICTED
        } else {
            ASLEEP
        };
        if self.announce(w, asleep, has_work, hold) {
            return false;
        }
        let mut g = lock(&slot.lock);
        loop {
            // SeqCst: as every access to the state; read under the lock the waker notifies under.
            let st = slot.state.load(Ordering::SeqCst);
            if st == ACTIVE {
                break;
            }
            if done() {
                match st {
                    // Leaving at shutdown, the worker takes its slot out of the sleep first, so
                    // that no guest can take its seat once it runs again.
                    ASLEEP | ASLEEP_LENDABLE | ASLEEP_RESTRICTED => {
                        // SeqCst: as every access to the state and the count; the CAS loses
                        // to a guest's `lend` or a waker's claim, and then the loop looks again.
                        if slot
                            .state
                            .compare_exchange(st, ACTIVE, Ordering::SeqCst, Ordering::SeqCst)
                            .is_ok()
                        {
                            // SeqCst: as every write of the count.
                            self.asleep.fetch_sub(1, Ordering::SeqCst);
                            break;
                        }
                        continue;
                    }
                    // A lent seat is not left until the guest has given it back.
                    LENT | LENT_ASLEEP => {}
                    // A waker holds it and will store `ACTIVE`.
                    _ => break,
                }
            }
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
        self.activate_if(w, true, hold)
    }

    /// [`activate`](Sleep::activate), but only a sleeper whose sleep is not restricted
    /// (`ASLEEP_RESTRICTED`): the first choice of a producer of work anyone may take, since only
    /// such a sleeper's re-check looked at the deques. The restriction is read in the same
    /// state word the claim takes, so it is the current sleep's.
    pub(crate) fn activate_unrestricted(&self, w: usize, hold: impl FnOnce() -> bool) -> bool {
        self.activate_if(w, false, hold)
    }

    fn activate_if(&self, w: usize, restricted_too: bool, hold: impl FnOnce() -> bool) -> bool {
        let slot = &self.slots[w];
        // SeqCst, the load and both CASes: one CAS decides which waker owns this wake-up,
        // ordered with every other access to the state; a failure only says another waker (or
        // a guest taking the seat) holds it or it is awake.
        let asleep = slot.state.load(Ordering::SeqCst);
        if asleep == LENT_ASLEEP {
            // The guest in this seat sleeps: wake it, on its own condition variable, not the
            // seat's own thread. SeqCst: as above.
            if slot
                .state
                .compare_exchange(LENT_ASLEEP, LENT, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                return false;
            }
            // SeqCst: as every write of the count.
            self.asleep.fetch_sub(1, Ordering::SeqCst);
            let _g = lock(&slot.lock);
            slot.guest_cv.notify_one();
            return true;
        }
        let claimable = match asleep {
            ASLEEP | ASLEEP_LENDABLE => true,
            ASLEEP_RESTRICTED => restricted_too,
            _ => false,
        };
        // SeqCst: the claim, as above.
        if !claimable
            || slot
                .state
                .compare_exchange(asleep, WAKING, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
        {
            return false;
        }
        if !hold() {
            // SeqCst: hands the sleeper back to later wakers (and guests).
            slot.state.store(asleep, Ordering::SeqCst);
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
        // Sleepers whose re-check looked at the deques first, then the others (which look only
        // for what a task waiting on their thread lets them start, and may find none of it).
        for restricted_too in [false, true] {
            for k in 0..n {
                if self.activate_if((start + k) % n, restricted_too, always) {
                    return;
                }
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

    /// Work anyone may take, with one sleeper restricted by a waiting task (its re-check never
    /// sees the work) and one that may take it: the second always ends up with the work. Woken
    /// in the wrong order, the restricted one would go back to sleep and the other would be
    /// left asleep with the work (loom reports the deadlock).
    #[test]
    fn work_anyone_may_take_wakes_an_unrestricted_sleeper_first() {
        // Every interleaving with up to 2 preemptions (three threads: more does not finish).
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let s = Arc::new(Sleep::new(2));
            let work = Arc::new(AtomicBool::new(false));
            let stop = Arc::new(AtomicBool::new(false));
            let (s0, st0) = (s.clone(), stop.clone());
            let restricted = thread::spawn(move || {
                s0.set_restricted(0, true);
                while !st0.load(Ordering::SeqCst) {
                    s0.sleep(0, || st0.load(Ordering::SeqCst), always, || false);
                }
            });
            let (s1, w1) = (s.clone(), work.clone());
            let free = thread::spawn(move || {
                while !w1.load(Ordering::SeqCst) {
                    s1.sleep(1, || w1.load(Ordering::SeqCst), always, || false);
                }
            });
            work.store(true, Ordering::SeqCst);
            s.notify_one();
            free.join().unwrap();
            stop.store(true, Ordering::SeqCst);
            s.notify_all();
            restricted.join().unwrap();
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
    /// A worker sleeping with its seat lendable; a thread from outside takes the seat if it can,
    /// and while it holds it an item arrives for the worker (with its wake-up, which finds the
    /// seat lent). The guest gives the seat back: the worker always ends up awake with the item,
    /// and never runs while the guest holds its seat. Without a guest, the item's own wake-up
    /// reaches the worker.
    #[test]
    fn a_lent_seat_comes_back_and_what_arrived_meanwhile_wakes_its_worker() {
        loom::model(|| {
            let s = Arc::new(Sleep::new(1));
            let item = Arc::new(AtomicBool::new(false));
            let lent = Arc::new(AtomicBool::new(false));
            let worker = {
                let (s, item, lent) = (s.clone(), item.clone(), lent.clone());
                thread::spawn(move || {
                    while !item.load(Ordering::SeqCst) {
                        s.set_lendable(0, true);
                        s.sleep(0, || item.load(Ordering::SeqCst), always, || false);
                        assert!(!lent.load(Ordering::SeqCst), "woke while its seat was lent");
                    }
                })
            };
            if s.lend(0) {
                lent.store(true, Ordering::SeqCst);
                item.store(true, Ordering::SeqCst);
                assert!(!s.wake(0, always), "a lent seat's thread was woken");
                lent.store(false, Ordering::SeqCst);
                s.give_back(0, || item.load(Ordering::SeqCst), || false);
            } else {
                item.store(true, Ordering::SeqCst);
                s.wake(0, always);
            }
            worker.join().unwrap();
            assert_eq!(s.sleepers(), 0);
        });
    }

    /// A guest holding a lent seat sleeps there; a producer's wake-up reaches the guest, and the
    /// seat's own thread sleeps on until the guest gives the seat back.
    #[test]
    fn a_guest_asleep_in_a_lent_seat_is_woken_and_the_seats_thread_is_not() {
        // Three threads: every interleaving with up to 2 preemptions.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let s = Arc::new(Sleep::new(1));
            let lent = Arc::new(AtomicBool::new(false));
            let stop = Arc::new(AtomicBool::new(false));
            // The seat's thread, asleep with its seat lendable (as it announced it).
            s.set_lendable(0, true);
            s.slots[0].state.store(ASLEEP_LENDABLE, Ordering::SeqCst);
            s.asleep.fetch_add(1, Ordering::SeqCst);
            let worker = {
                let (s, lent, stop) = (s.clone(), lent.clone(), stop.clone());
                thread::spawn(move || {
                    let mut g = lock(&s.slots[0].lock);
                    while s.slots[0].state.load(Ordering::SeqCst) != ACTIVE {
                        g = s.slots[0].cv.wait(g).unwrap();
                    }
                    drop(g);
                    assert!(!lent.load(Ordering::SeqCst), "woke while its seat was lent");
                    while !stop.load(Ordering::SeqCst) {
                        s.set_lendable(0, true);
                        s.sleep(0, || stop.load(Ordering::SeqCst), always, || false);
                    }
                })
            };
            assert!(s.lend(0), "the seat was lendable and nobody else took it");
            lent.store(true, Ordering::SeqCst);
            let work = Arc::new(AtomicBool::new(false));
            let producer = {
                let (s, work) = (s.clone(), work.clone());
                thread::spawn(move || {
                    work.store(true, Ordering::SeqCst);
                    s.wake(0, always);
                })
            };
            while !work.load(Ordering::SeqCst) {
                s.sleep_lent(0, || work.load(Ordering::SeqCst));
            }
            producer.join().unwrap();
            lent.store(false, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
            s.give_back(0, || stop.load(Ordering::SeqCst), || false);
            worker.join().unwrap();
        });
    }

    /// Shutdown while a seat may be lent: the seat's thread leaves its sleep only once the seat
    /// is back, and once it has left, no guest can take the seat. (The thread that shuts the
    /// pool down is the guest too, which keeps the model to two threads.)
    #[test]
    fn a_lent_seat_is_not_left_at_shutdown_before_it_comes_back() {
        // Every interleaving with up to 3 preemptions.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let s = Arc::new(Sleep::new(1));
            let lent = Arc::new(AtomicBool::new(false));
            let stop = Arc::new(AtomicBool::new(false));
            let worker = {
                let (s, lent, stop) = (s.clone(), lent.clone(), stop.clone());
                thread::spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        s.set_lendable(0, true);
                        s.sleep(
                            0,
                            || stop.load(Ordering::SeqCst),
                            always,
                            || stop.load(Ordering::SeqCst),
                        );
                        assert!(!lent.load(Ordering::SeqCst), "ran while its seat was lent");
                    }
                })
            };
            stop.store(true, Ordering::SeqCst);
            if s.lend(0) {
                lent.store(true, Ordering::SeqCst);
                lent.store(false, Ordering::SeqCst);
                s.give_back(
                    0,
                    || stop.load(Ordering::SeqCst),
                    || stop.load(Ordering::SeqCst),
                );
            }
            s.notify_all();
            worker.join().unwrap();
        });
    }
}
