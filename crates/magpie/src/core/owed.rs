//! What a worker owes the scopes whose tasks ran on it: completions counted here and
//! subtracted from the scope's shared count in one atomic, and counts reserved for its spawns.
//!
//! A scope's count is shared by every worker that spawns into it or runs its tasks. Touching it
//! once per task puts one cache line under every worker's spawns and completions. Instead a
//! worker keeps a debt to one scope at a time ([`Owed`]): the tasks of that scope that finished
//! here (`WorkerThread::defer_finish`), and counts it reserved in advance for its own spawns
//! into that scope ([`Owed::count_spawned`]). It pays the debt
//! (`WorkerThread::flush_finished`) before it starts anything else, looks for work, sleeps or
//! suspends, so a scope's completion is never held up by a worker doing something else.

use crate::latch::CountLatch;
use std::cell::Cell;

/// Counts a worker adds to a scope's count at once when a spawn into that scope takes the last
/// count it owed the scope ([`Owed::count_spawned`]).
pub(crate) const SPAWN_RESERVE: usize = 32;

/// A worker's debt to one scope (module doc). The scope's count stays above zero while the
/// debt is unpaid (what is owed is part of it), so the scope, and its count, outlive the debt.
pub(crate) struct Owed {
    /// The count of the scope owed; null when nothing is owed.
    scope: Cell<*const CountLatch>,
    /// What is owed: tasks of the scope that ran here, and counts reserved for spawns
    /// (`count_spawned`), not yet subtracted from its count.
    n: Cell<usize>,
}

impl Owed {
    pub(crate) fn new() -> Owed {
        Owed {
            scope: Cell::new(std::ptr::null()),
            n: Cell::new(0),
        }
    }

    /// Whether the debt, if any, is to the scope counted by `count`.
    #[inline(always)]
    pub(crate) fn is_to(&self, count: &CountLatch) -> bool {
        std::ptr::eq(self.scope.get(), count)
    }

    /// Records that a task of the scope counted by `count` finished here. The debt must be
    /// to that scope, or paid (`pay`).
    #[inline(always)]
    pub(crate) fn add_finished(&self, count: &CountLatch) {
        debug_assert!(self.is_to(count) || self.n.get() == 0);
        self.scope.set(count);
        self.n.set(self.n.get() + 1);
    }

    /// Counts one more task of the scope whose count is `count`, spawned by this worker, mostly
    /// without touching the shared count. What the worker owes a scope (completions of its
    /// tasks that ran here, and counts reserved, not yet subtracted) can pay for a spawn into
    /// that scope: the spawn takes one over instead of adding to the count, and when it takes
    /// the last one it adds [`SPAWN_RESERVE`] at once and owes those. So the shared count is
    /// always the scope's unfinished tasks plus what workers owe it: it stays above zero until
    /// the last task is done and every worker has paid, and reaches zero through a decrement as
    /// before.
    ///
    /// Only a worker that already owes the scope reserves, so reserving adds no new state: a
    /// worker owes a scope only after running that scope's tasks (or while waiting for it), and
    /// pays before it starts anything else, sleeps, steals or suspends. So the counts it
    /// reserves are paid by the same payments as its completions, and hold the scope up no
    /// longer than they did. A worker owing nothing adds one, as before.
    ///
    /// Without this, pdfs's 3 million heap spawns at 2 workers each made a locked add on the one
    /// line both workers' spawns and flushes write. Out of line: inlined into every spawn, it
    /// made fj at 2 workers 15-60% slower (its loop spawns 1024 tasks in a row and never owes),
    /// and the call costs pdfs nothing measurable.
    #[inline(never)]
    pub(crate) fn count_spawned(&self, count: &CountLatch) {
        let n = self.n.get();
        if n != 0 && self.is_to(count) {
            if n == 1 {
                count.increment_by(SPAWN_RESERVE);
                self.n.set(SPAWN_RESERVE);
            } else {
                self.n.set(n - 1);
            }
        } else {
            count.increment();
        }
    }

    /// Pays the debt: subtracts it from its scope's count. Returns `Some(waiter)` when that
    /// made the count reach zero with a waiter registered, for the caller to make ready.
    #[inline]
    pub(crate) fn pay(&self) -> Option<usize> {
        let n = self.n.replace(0);
        if n == 0 {
            return None;
        }
        let count = self.scope.replace(std::ptr::null());
        // SAFETY: the scope cannot end (and free its count) while this debt is outstanding: its
        // count stays above zero until the debt is subtracted, here (type doc).
        unsafe { &*count }.decrement_by(n)
    }
}
