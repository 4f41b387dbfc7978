//! Idle workers sleep instead of spinning (DWS §3.1 and Algorithm 1: a worker sleeps after a bounded
//! number of failed steals), and wake promptly when work appears.
//!
//! The protocol is Dekker's handshake between a sleeper and a producer of work:
//!
//! * sleeper: under the lock, `sleepers += 1`, `fence(SeqCst)`, then re-check for work; only if
//!   there is none does it wait on the condition variable (which releases the lock atomically).
//! * producer: publish the work (a `split` store, an injector push), `fence(SeqCst)`, then read
//!   `sleepers`; if non-zero, take the lock and notify one.
//!
//! Either the sleeper's re-check sees the work, or the producer's read sees the sleeper; and because
//! the sleeper holds the lock from its re-check until it is inside `wait`, a producer's notify cannot
//! fall between them. No wake-up is lost (loom-tested below). Waking more than needed is harmless:
//! the woken worker steals, fails a few rounds and sleeps again.

use crate::sync::atomic::{fence, AtomicUsize, Ordering};
use crate::sync::{Condvar, Mutex};

pub(crate) struct Sleep {
    lock: Mutex<()>,
    cv: Condvar,
    sleepers: AtomicUsize,
}

impl Sleep {
    pub(crate) fn new() -> Sleep {
        Sleep {
            lock: Mutex::new(()),
            cv: Condvar::new(),
            sleepers: AtomicUsize::new(0),
        }
    }

    /// Workers asleep right now.
    pub(crate) fn sleepers(&self) -> usize {
        self.sleepers.load(Ordering::Relaxed)
    }

    /// Puts the calling worker to sleep unless `has_work` (evaluated after announcing the sleep)
    /// finds something; `asleep` runs just before it waits. Returns whether it actually slept.
    pub(crate) fn sleep(&self, has_work: impl Fn() -> bool, asleep: impl FnOnce()) -> bool {
        let g = crate::sync::lock(&self.lock);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // SeqCst fence: orders the announcement before the re-check, whatever orderings the
        // re-check's loads use (pairs with the producer's fence in `notify_one`).
        fence(Ordering::SeqCst);
        if has_work() {
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        asleep();
        let g = match self.cv.wait(g) {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(g);
        true
    }

    /// Called by a producer after publishing work: wakes one sleeper if there is any.
    #[inline]
    pub(crate) fn notify_one(&self) {
        // SeqCst fence: orders the producer's publication before its read of `sleepers`
        // (pairs with the sleeper's SeqCst increment before its re-check).
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = crate::sync::lock(&self.lock);
            self.cv.notify_one();
        }
    }

    /// Wakes everyone (shutdown).
    pub(crate) fn notify_all(&self) {
        fence(Ordering::SeqCst);
        let _g = crate::sync::lock(&self.lock);
        self.cv.notify_all();
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
            let s = Arc::new(Sleep::new());
            let work = Arc::new(AtomicBool::new(false));
            let (s2, w2) = (s.clone(), work.clone());
            let sleeper = thread::spawn(move || {
                while !w2.load(Ordering::SeqCst) {
                    s2.sleep(|| w2.load(Ordering::SeqCst), || {});
                }
            });
            work.store(true, Ordering::SeqCst);
            s.notify_one();
            sleeper.join().unwrap();
        });
    }
}
