//! Latches: how a task that waits at a sync point learns that what it waits for is done.
//!
//! SLAW (Algorithm 1, actions 3 and 5) suspends a task at a sync point whose children are not done
//! and has the last child resume it. [`Latch`] is that hand-off in one word: `UNSET`, `SET`, or the
//! address of the suspended waiter. The waiter registers itself only *after* it has fully
//! suspended (the dispatcher does it on the waiter's behalf), so the setter that swaps in `SET`
//! and finds an address owns the waiter and makes it runnable; a waiter that finds `SET` already
//! there resumes itself. Exactly one of the two happens (loom-tested below).
//!
//! [`CountLatch`] is X10/HJ `finish`: a counter of unfinished tasks (the scope's body counts as
//! one) that sets its latch when it reaches zero. [`LockLatch`] is for a thread that is not a
//! worker (the caller of `Pool::install`): it blocks on a condition variable.

use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::{Condvar, Mutex};

const UNSET: usize = 0;
const SET: usize = 1;

/// A one-shot latch whose waiter is a suspended fiber (an opaque, 8-aligned address).
pub(crate) struct Latch {
    state: AtomicUsize,
}

impl Latch {
    pub(crate) fn new() -> Latch {
        Latch {
            state: AtomicUsize::new(UNSET),
        }
    }

    /// Whether the latch is set. Acquire: everything the setter did before `set` is visible.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        // Acquire: pairs with the Release half of `set`'s swap.
        self.state.load(Ordering::Acquire) == SET
    }

    /// Sets the latch. Returns the waiter that had registered, which the caller must make
    /// runnable. The caller must not touch the latch afterwards: once set, its owner may free it.
    #[inline]
    pub(crate) fn set(&self) -> Option<usize> {
        // AcqRel: Release publishes the setter's writes (the job's result) to the waiter;
        // Acquire pairs with `register`'s Release so the waiter's suspended state is visible.
        let prev = self.state.swap(SET, Ordering::AcqRel);
        debug_assert!(prev != SET, "latch set twice");
        (prev > SET).then_some(prev)
    }

    /// Registers a fully suspended waiter. Returns false if the latch was set first, in which case
    /// the caller resumes the waiter itself.
    pub(crate) fn register(&self, waiter: usize) -> bool {
        debug_assert!(waiter > SET && waiter.is_multiple_of(2));
        self.state
            // AcqRel: the Release half publishes the suspended waiter to the setter, whose swap
            // acquires it (the success's Acquire half reads UNSET and takes nothing). Failure
            // Acquire: the latch was set first and the caller resumes the waiter itself, so it
            // must see the setter's writes, as after `probe`.
            .compare_exchange(UNSET, waiter, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// `finish`: counts unfinished tasks; the latch is set when the count drops to zero.
pub(crate) struct CountLatch {
    count: AtomicUsize,
    pub(crate) latch: Latch,
}

impl CountLatch {
    /// Starts at one: the body of the scope is itself an unfinished task.
    pub(crate) fn new() -> CountLatch {
        CountLatch {
            count: AtomicUsize::new(1),
            latch: Latch::new(),
        }
    }

    #[inline]
    pub(crate) fn increment(&self) {
        self.increment_by(1);
    }

    /// Counts `n` tasks at once (a worker reserving counts for its next spawns).
    #[inline]
    pub(crate) fn increment_by(&self, n: usize) {
        // Relaxed: the increment happens-before the decrement of the task it counts (the task is
        // published through the deque or run by the incrementing thread).
        self.count.fetch_add(n, Ordering::Relaxed);
    }

    /// Marks one task finished; returns the waiter to make runnable if this was the last one.
    #[inline]
    pub(crate) fn decrement(&self) -> Option<usize> {
        self.decrement_by(1)
    }

    /// Marks `n` tasks finished at once (a worker's deferred completions).
    #[inline]
    pub(crate) fn decrement_by(&self, n: usize) -> Option<usize> {
        // AcqRel: the last decrementer acquires every other task's writes before setting.
        if self.count.fetch_sub(n, Ordering::AcqRel) == n {
            self.latch.set()
        } else {
            None
        }
    }
}

/// A latch for a blocked OS thread that is not a worker.
pub(crate) struct LockLatch {
    done: Mutex<bool>,
    cv: Condvar,
}

impl LockLatch {
    pub(crate) fn new() -> LockLatch {
        LockLatch {
            done: Mutex::new(false),
            cv: Condvar::new(),
        }
    }
    pub(crate) fn set(&self) {
        let mut g = crate::sync::lock(&self.done);
        *g = true;
        // Notify under the lock: the waiter cannot return (and free us) before we unlock.
        self.cv.notify_all();
    }
    pub(crate) fn wait(&self) {
        let mut g = crate::sync::lock(&self.done);
        while !*g {
            g = match self.cv.wait(g) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Exactly one of {setter gets the waiter, waiter sees SET} happens.
    #[test]
    fn set_vs_register() {
        loom::model(|| {
            let l = Arc::new(Latch::new());
            let l2 = l.clone();
            let setter = thread::spawn(move || l2.set());
            let registered = l.register(8);
            let handed = setter.join().unwrap();
            match (registered, handed) {
                (true, Some(8)) => {}
                (false, None) => assert!(l.probe()),
                other => panic!("lost or doubled wake-up: {other:?}"),
            }
        });
    }

    /// Two children finishing concurrently: exactly one of them sets the latch and gets the waiter.
    #[test]
    fn count_latch_last_one_wakes() {
        loom::model(|| {
            let c = Arc::new(CountLatch::new());
            c.increment();
            c.increment();
            let ths: Vec<_> = (0..2)
                .map(|_| {
                    let c = c.clone();
                    thread::spawn(move || c.decrement())
                })
                .collect();
            // The scope body finishes, then waits.
            let mine = c.decrement();
            let registered = c.latch.register(16);
            let mut handed: Vec<_> = ths.into_iter().filter_map(|t| t.join().unwrap()).collect();
            handed.extend(mine);
            if registered {
                assert_eq!(handed, vec![16]);
            } else {
                assert!(handed.is_empty() && c.latch.probe());
            }
        });
    }

    #[test]
    fn lock_latch_wakes_blocked_thread() {
        loom::model(|| {
            let l = Arc::new(LockLatch::new());
            let l2 = l.clone();
            let t = thread::spawn(move || l2.set());
            l.wait();
            t.join().unwrap();
        });
    }
}
