//! The cross-thread steps of the leapfrogging rule (`leapfrog.rs`), model-checked with loom.
//!
//! An owner publishes a join's half whose frame carries its lineage node (written before the
//! push), runs its first half, and returns to its sync point. A thief steals the half, reads the
//! node, and either runs it (its youngest waiting task is an ancestor: the node names it) or,
//! when the half does not descend from what it waits for, puts it in the pool's queue. The
//! owner pops its half back, or waits; while it waits, its thread's youngest waiting task is
//! this sync point, so it may take the half from the queue and run it (the half's node names
//! the sync point first). Built only for the loom tests.
//!
//! What the model checks: the half runs exactly once whoever takes it; a thief that may not
//! start it never does; the owner never waits for ever (the half it needs is always either in
//! its deque, run by the thief, or in the queue it looks in while it waits); the thief reads
//! the node only after the owner's write happened-before (loom's cell tracking: writing the
//! node after the push fails here); and the owner reads the result after it was written.

use crate::deque::{Deque, Item, Steal};
use crate::latch::Latch;
use crate::leapfrog::Waits;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::collections::VecDeque;

/// The half's item in the deque.
const HALF: Item = Item(64, 1);
/// The owner's sync point, as its lineage key (a latch's address in the runtime).
const SYNC: usize = 0x1000;
/// An unrelated sync point a restricted thief waits at.
const ELSEWHERE: usize = 0x2000;
/// The owner's fiber, as its waits name it.
const FIBER: usize = 8;

/// The lineage node of the half's frame (`job::Lineage`): the sync point that waits for it and
/// the lineage of the task around that sync point (none here: a root).
struct Node {
    key: usize,
    up: usize,
}

/// The published half's frame: its node, result, run count and latch.
struct Frame {
    node: UnsafeCell<Node>,
    result: UnsafeCell<u64>,
    ran: AtomicUsize,
    latch: Latch,
    /// Set by whoever made the suspended owner ready (`make_ready`).
    woken: AtomicBool,
}

impl Frame {
    fn new() -> Frame {
        Frame {
            node: UnsafeCell::new(Node { key: 0, up: 0 }),
            result: UnsafeCell::new(0),
            ran: AtomicUsize::new(0),
            latch: Latch::new(),
            woken: AtomicBool::new(false),
        }
    }

    /// The owner gives the half its lineage before publishing it (`StackJob::publish_under`).
    fn publish_under(&self, key: usize) {
        self.node.with_mut(|n| unsafe { *n = Node { key, up: 0 } });
    }

    /// Whether the half descends from the sync point `key` (`job::descends`, one node deep).
    fn descends(&self, key: usize) -> bool {
        self.node
            .with(|n| unsafe { (*n).key == key && (*n).up == 0 })
    }

    /// Runs the half and signals its latch, making the owner ready if it waits.
    fn run(&self) {
        // Relaxed: a count of runs, read after the threads are joined.
        self.ran.fetch_add(1, Ordering::Relaxed);
        self.result.with_mut(|r| unsafe { *r = 42 });
        if let Some(w) = self.latch.set() {
            assert_eq!(w, FIBER);
            // Release: the model's `make_ready`; pairs with the Acquire load in `sync`.
            self.woken.store(true, Ordering::Release);
        }
    }
}

/// The pool's queue, where a taker that may not start an item leaves it.
type Queue = Arc<Mutex<VecDeque<Item>>>;

/// A thief whose youngest waiting task is the sync point `waiting_at` (none: nothing waits on
/// its thread): it runs the half only if it may, else queues it.
fn thief(
    d: &Deque,
    f: &Arc<Frame>,
    q: &Queue,
    waiting_at: Option<usize>,
) -> thread::JoinHandle<()> {
    let s = d.stealer();
    let (f, q) = (f.clone(), q.clone());
    thread::spawn(move || {
        for _ in 0..2 {
            match s.steal() {
                Steal::Success(it) => {
                    assert_eq!(it, HALF);
                    match waiting_at {
                        Some(key) if !f.descends(key) => q.lock().unwrap().push_back(it),
                        _ => f.run(),
                    }
                    return;
                }
                Steal::Empty | Steal::Retry => {}
            }
        }
    })
}

/// The owner's return to its sync point: pop the half back, or wait, taking from the queue
/// what its thread may start meanwhile (its waits' top is this sync point).
fn sync(d: &Deque, f: &Frame, q: &Queue, mark: isize) -> u64 {
    if d.bottom() > mark {
        if let Some(it) = d.pop() {
            assert_eq!(it, HALF);
            f.run();
            return f.result.with(|r| unsafe { *r });
        }
    }
    let waits = Waits::new();
    if !f.latch.probe() && f.latch.register(FIBER) {
        waits.suspend(FIBER, SYNC, mark, false);
        let top = waits.top().expect("the owner waits");
        // Acquire: pairs with the Release store in `Frame::run`.
        while !f.woken.load(Ordering::Acquire) {
            let it = {
                let mut q = q.lock().unwrap();
                let i = q.iter().position(|_| top.allows(|key| f.descends(key)));
                i.and_then(|i| q.remove(i))
            };
            match it {
                Some(it) => {
                    assert_eq!(it, HALF);
                    f.run();
                }
                None => thread::yield_now(),
            }
        }
        assert_eq!(waits.resumed(FIBER), None);
    }
    assert!(f.latch.probe());
    f.result.with(|r| unsafe { *r })
}

/// One model: the owner publishes the half, a thief waiting at `waiting_at` races its return.
fn model(waiting_at: Option<usize>) {
    loom::model(move || {
        let d = Deque::new(4);
        let f = Arc::new(Frame::new());
        let q: Queue = Arc::new(Mutex::new(VecDeque::new()));
        let mark = d.bottom();
        f.publish_under(SYNC);
        d.push(HALF);
        let th = thief(&d, &f, &q, waiting_at);
        let r = sync(&d, &f, &q, mark);
        th.join().unwrap();
        assert_eq!(r, 42);
        // Relaxed: the thief was joined, so any bump of its happened before.
        assert_eq!(f.ran.load(Ordering::Relaxed), 1);
        assert!(
            q.lock().unwrap().is_empty(),
            "a queued half was left behind"
        );
    });
}

/// The thief waits at an unrelated sync point: it may not start the half, which reaches the
/// owner through the queue while the owner waits. It runs exactly once, on the owner.
#[test]
fn a_half_a_thief_may_not_start_reaches_its_waiting_owner() {
    model(Some(ELSEWHERE));
}

/// The thief waits at the owner's own sync point (the half descends from it): it may run it.
#[test]
fn a_thief_waiting_at_an_ancestor_runs_the_half() {
    model(Some(SYNC));
}

/// A thief with nothing waiting on its thread runs whatever it steals.
#[test]
fn a_thief_with_nothing_waiting_runs_the_half() {
    model(None);
}
