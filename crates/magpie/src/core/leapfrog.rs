//! Leapfrogging: what a thread with a waiting task may start.
//!
//! # The problem
//!
//! A task may hold something across a join or a scope: a `MutexGuard`, a `RefCell` borrow, a
//! thread-local's state. Run as plain calls, the code after the sync point gets it back
//! untouched. But a task whose other half was stolen waits at its sync point, and its fiber
//! stays on its thread (a running stack never changes thread). If that thread then started an
//! unrelated task that takes the same lock, the thread would block for good: the waiting task,
//! the only one that can release the lock, can resume only on that thread. With a `RefCell` the
//! unrelated task panics ("already borrowed").
//!
//! # The rule
//!
//! *A thread with a task waiting on it starts only work that descends from its youngest waiting
//! task.* Such work runs, in the sequential order, inside the waiting task's join or scope, so
//! whatever the waiting task holds, a sequential run held it there too: a program that neither
//! deadlocks nor panics when its joins and scopes run as plain calls does neither here, at any
//! worker count. This is leapfrogging (Wagner and Calder), which oneTBB offers as an opt-in
//! (`this_task_arena::isolate`); here it is how every pool waits.
//!
//! The thread's waiting tasks form a stack ([`Waits`]): a task that suspends is pushed; the next
//! one that can suspend on this thread is started under it, so descends from it. A preempted
//! work-first parent is pushed too (its child, which runs first in the sequential order, runs
//! above it). Only the top may resume: a fiber that becomes ready lower down is held until the
//! ones above it have resumed and returned ([`Waits::admit`]). Work the thread may start:
//!
//! - its own deque's items above the top's *floor* (the deque's bottom when its sync point
//!   began: what lies above was pushed by the waiting task's subtree), newest first;
//! - stolen items, and items from the pool's queue and from mailboxes, that descend from the
//!   top (their lineage names its sync point);
//! - everything, when no task waits on it.
//!
//! A stolen or popped item that the thread may not start goes to the pool's queue (it has not
//! started, so any worker may run it).
//!
//! Work *placed* on one worker is exempt: a designated spawn, a broadcast's call, a schedule's
//! donation, a lent thread's root job. Only that worker may run it, so holding it back could
//! deadlock (two workers, each waiting for its own broadcast, each holding the other's call).
//! The guarantee therefore covers `join`, `scope` and its spawns, `install` and the pool's
//! queue, not code that places work on a named worker.
//!
//! # Lineage
//!
//! Every published task frame starts with a pointer to a [`Lineage`] node: `key` names the sync
//! point that waits for the frame (the address of the latch its publisher would suspend on), and
//! `up` is the lineage of the task inside whose run that sync point lies. A join's published half
//! carries a node in its own frame; a scope's spawns share the scope's node. A fiber knows the
//! lineage of the published task it is running (`FiberLocal::lineage`): whoever starts a task
//! sets it and puts the old one back when the task returns. A join that runs in place writes
//! nothing: its halves are part of the task that runs them. The rule's check, "does this item
//! descend from the sync point K", walks the item's chain for K (`job::descends`).
//!
//! The chain errs only one way: a task that descends from K through joins that ran in place
//! (and so left no node) is taken for unrelated. That costs parallelism, never safety, and never
//! progress: the sync point that waits for an item is the first node on its chain, so the
//! thread of that sync point may always run it once it waits (see "Progress").
//!
//! ## Why the chain stays valid
//!
//! A node lives in the frame of a join (its published half's `StackJob`) or of a scope. Such a
//! frame stays alive until everything it published has finished. A task's lineage is read only
//! while its frame has not finished (it is held by a taker, or running), and each node on its
//! chain belongs to a sync point that waits for one of its ancestors, so is alive too. Nodes are
//! written before the frame that points at them is published, and publication (a deque's, a
//! queue's lock) orders those writes before any read by the taker.
//!
//! # Progress
//!
//! The rule never leaves work nobody may run. Every item is needed only by the sync point that
//! waits for it (fork-join: a task waits only for its own subtree), and that sync point is the
//! first node of its lineage, so its thread may always start the item once it waits there. A
//! thread that waits either resumes, or its top is a task above it that waits for its own
//! subtree and resumes without the item. Meanwhile the item is taken and running, or in one of
//! these places:
//!
//! - the pool's queue, where the waiting thread looks for what it may start (and so does its
//!   sleep's re-check);
//! - the deque of the worker that ran its publisher. A join's half lies in its own thread's
//!   deque, which pops it back at the sync point. A scope's spawn lies in the deque of the worker
//!   that ran the task that spawned it, possibly another one than the scope's. That worker runs
//!   on and pops it, or runs out of work: with nothing waiting on it, it runs everything in its
//!   deque before it sleeps; with a task waiting on it, it hands every item it may not start to
//!   the pool's queue before it sleeps (`idle.rs`).
//!
//! No wake-up is lost on the way. An item queued by a worker that may not start it wakes every
//! sleeper. Work that anyone may take wakes first a sleeper whose sleep is not restricted
//! (`Sleep::activate_unrestricted`): only such a sleeper re-checks the other workers' deques.
//!
//! # Bound on threads
//!
//! None is added: the rule restricts what a worker starts and never starts another thread. A
//! worker holds at most one fiber per waiting task on its stack, as before.
//!
//! # Cost
//!
//! A join that runs in place pays nothing. A published join writes its node (two words and the
//! pointer); a scope writes its node once; a heap spawn carries one more word. Starting a
//! published task sets and restores the fiber's lineage. The checks run only on a thread with a
//! task waiting, on what it takes. With `Builder::allow_migration` (an `unsafe` opt-in) a ready
//! fiber may resume on any worker, so no stack is kept and the rule does not apply.

use std::cell::{Cell, RefCell};

/// The key of a wait that restricts nothing but the order in which waiting fibers resume: a
/// schedule region's end, which also waits for what its tasks spawned into enclosing scopes,
/// and every wait while a region runs, whose template decides where work runs.
pub(crate) const OPEN: usize = usize::MAX;

/// A task waiting on this thread: its fiber (`FiberPtr::addr`), the sync point it waits at
/// (`key`: 0 for a preempted work-first parent, which waits for nothing, only its turn), and
/// the floor of the deque when that sync point began.
struct Wait {
    fiber: usize,
    key: usize,
    floor: isize,
    /// Set once a steal under this task took one it may not start: the thread steals no more
    /// until the stack changes.
    no_steals: Cell<bool>,
}

/// The waiting tasks of one thread's dispatcher (a worker's own thread, or a caller running as
/// a worker), youngest last, and the ready fibers that wait for their turn. Fibers are kept by
/// address (`FiberPtr::addr`), which this record never turns back into a fiber.
pub(crate) struct Waits {
    /// Fibers suspended in a task: a lent worker may leave, and a seat be lent, only when none
    /// is. Counted apart from `stack` because with migration nothing is kept there.
    suspended: Cell<usize>,
    stack: RefCell<Vec<Wait>>,
    /// Fibers made ready while a younger task waited above them.
    held: RefCell<Vec<usize>>,
}

/// What the top of the stack allows.
#[derive(Clone, Copy)]
pub(crate) struct Top {
    /// The sync point whose descendants may start.
    key: usize,
    /// Own deque items at or above this index may be popped.
    pub(crate) floor: isize,
    /// Whether the thread may still steal from other deques under it.
    pub(crate) steals: bool,
}

impl Top {
    /// Whether a task may start under the top, given `descends(key)`: whether the task's
    /// lineage names the sync point `key` (`job::Work::may_start_under`).
    #[inline]
    pub(crate) fn allows(self, descends: impl FnOnce(usize) -> bool) -> bool {
        self.key == OPEN || (self.key != 0 && descends(self.key))
    }
}

impl Waits {
    pub(crate) fn new() -> Waits {
        Waits {
            suspended: Cell::new(0),
            stack: RefCell::new(Vec::new()),
            held: RefCell::new(Vec::new()),
        }
    }

    /// The count of fibers suspended in a task.
    pub(crate) fn suspended(&self) -> usize {
        self.suspended.get()
    }

    /// A fiber suspended in a task: counted, and, unless fibers migrate, pushed with the sync
    /// point it waits at (`key`, 0 for none) and its deque floor.
    pub(crate) fn suspend(&self, fiber: usize, key: usize, floor: isize, migrate: bool) {
        self.suspended.set(self.suspended.get().wrapping_add(1));
        if !migrate {
            self.stack.borrow_mut().push(Wait {
                fiber,
                key,
                floor,
                no_steals: Cell::new(false),
            });
        }
    }

    /// The youngest waiting task, if any: what this thread may start.
    #[inline]
    pub(crate) fn top(&self) -> Option<Top> {
        self.stack.borrow().last().map(|w| Top {
            key: w.key,
            floor: if w.key == OPEN { isize::MIN } else { w.floor },
            steals: !w.no_steals.get(),
        })
    }

    /// A steal under the top took a task it may not start: no more steals under it.
    pub(crate) fn stop_stealing(&self) {
        if let Some(w) = self.stack.borrow().last() {
            w.no_steals.set(true);
        }
    }

    /// Whether the ready fiber `f` may resume now: it is the top, or not kept here. If not, it
    /// is held until it is.
    pub(crate) fn admit(&self, f: usize) -> bool {
        let stack = self.stack.borrow();
        match stack.last() {
            Some(w) if w.fiber != f && stack.iter().any(|w| w.fiber == f) => {
                self.held.borrow_mut().push(f);
                false
            }
            _ => true,
        }
    }

    /// The fiber `f` resumes: it leaves the count and the stack. Returns the fiber now on top
    /// if it was held ready.
    pub(crate) fn resumed(&self, f: usize) -> Option<usize> {
        self.suspended.set(self.suspended.get().wrapping_sub(1));
        let mut stack = self.stack.borrow_mut();
        if stack.last().is_some_and(|w| w.fiber == f) {
            stack.pop();
        } else if let Some(i) = stack.iter().rposition(|w| w.fiber == f) {
            // Not the top: only a fiber resumed by a path that bypasses `admit`, which none
            // does; kept consistent anyway.
            stack.remove(i);
        }
        stack.last().map(|w| w.fiber).and_then(|top| {
            let mut held = self.held.borrow_mut();
            let i = held.iter().position(|&h| h == top)?;
            Some(held.swap_remove(i))
        })
    }
}
