//! The return barrier of `join` (see the module doc of `join.rs`), model-checked with loom: a
//! published half, a thief that may steal it at any moment, and the joiner's return to its sync
//! point (pop it back, or wait on the half's latch). The fiber suspension is modelled by the
//! joiner registering a token in the latch and spinning until the thief hands it back, which is
//! what the dispatcher and `make_ready` do. Built only for the loom tests.
//!
//! What the model checks: the half runs exactly once whoever wins, the joiner never waits for a
//! wake-up that was already given (or misses one), and the joiner reads the half's result only
//! after the thief's write to it happened-before (loom's cell tracking; setting the latch before
//! writing the result fails here). What it cannot check: loom does not model store buffering, so
//! the `SeqCst` fences of the public pop and the steal (removing them passes here and in the
//! deque's own loom tests) rest on the Chase–Lev argument written in `deque.rs`.

use crate::deque::{Deque, Item, Steal};
use crate::latch::Latch;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The half's frame: its result, how often it ran, and its latch. Also the donated half of
/// `ext/schedule/held.rs`'s model, whose donee finishes it as a thief does.
pub(crate) struct Frame {
    result: UnsafeCell<u64>,
    pub(crate) ran: AtomicUsize,
    latch: Latch,
    /// Set by whoever made the suspended joiner ready (`make_ready`).
    woken: AtomicBool,
}

const HALF: Item = Item(64, 1);
const OTHER: Item = Item(128, 1);
const WAITER: usize = 8;

impl Frame {
    pub(crate) fn new() -> Frame {
        Frame {
            result: UnsafeCell::new(0),
            ran: AtomicUsize::new(0),
            latch: Latch::new(),
            woken: AtomicBool::new(false),
        }
    }
    /// The half's body, run by whoever took it.
    pub(crate) fn run(&self) {
        // Relaxed: a count of runs, read after the threads are joined.
        self.ran.fetch_add(1, Ordering::Relaxed);
        self.result.with_mut(|r| unsafe { *r = 42 });
    }
    /// What a thief does after running a stolen half: set the latch and, if the joiner had
    /// suspended on it, make it ready.
    pub(crate) fn finish_stolen(&self) {
        if let Some(w) = self.latch.set() {
            assert_eq!(w, WAITER);
            // Release: the model's `make_ready`; pairs with the Acquire spin in `wait`.
            self.woken.store(true, Ordering::Release);
        }
    }
    /// The joiner at its sync point when the half was not popped back: suspend until the
    /// thief is done (or find it done already), then read the result.
    pub(crate) fn wait(&self) -> u64 {
        if !self.latch.probe() && self.latch.register(WAITER) {
            // Acquire: pairs with the Release store in `finish_stolen`, as a resumed fiber
            // is ordered after its `make_ready`.
            while !self.woken.load(Ordering::Acquire) {
                thread::yield_now();
            }
        }
        assert!(self.latch.probe());
        self.result.with(|r| unsafe { *r })
    }
}

/// A thief taking whatever it can in `tries` attempts, running the half if it gets it.
fn thief(d: &Deque, f: &Arc<Frame>, tries: usize) -> thread::JoinHandle<()> {
    let s = d.stealer();
    let f = f.clone();
    thread::spawn(move || {
        for _ in 0..tries {
            match s.steal() {
                Steal::Success(HALF) => {
                    f.run();
                    f.finish_stolen();
                    return;
                }
                Steal::Success(_) => {}
                Steal::Empty | Steal::Retry => {}
            }
        }
    })
}

/// The joiner's return: pop back what was pushed since `mark` (the deque's bottom before the
/// half was pushed), run the half if it is there, else wait for the thief.
fn sync(d: &Deque, f: &Frame, mark: isize) -> u64 {
    loop {
        if d.bottom() <= mark {
            return f.wait();
        }
        match d.pop() {
            Some(HALF) => {
                f.run();
                return f.result.with(|r| unsafe { *r });
            }
            // Work pushed above the half (by the inline half's descendants): run it, go on.
            Some(_) => continue,
            None => return f.wait(),
        }
    }
}

/// The half is the only item, so it was released at once: the thief's steal races the
/// joiner's fenced pop for it, and then the latch's set races the joiner's registration.
/// The half runs exactly once, and the joiner reads its result after it was written.
#[test]
fn thief_races_the_joiners_return_for_a_public_half() {
    loom::model(|| {
        let d = Deque::new(4);
        let f = Arc::new(Frame::new());
        let mark = d.bottom();
        d.push(HALF);
        let th = thief(&d, &f, 1);
        let r = sync(&d, &f, mark);
        th.join().unwrap();
        assert_eq!(r, 42);
        // Relaxed: the thief was joined, so any bump of its happened before.
        assert_eq!(f.ran.load(Ordering::Relaxed), 1);
    });
}

/// The half sits in the private part under an older public item: the joiner pops it back
/// without a fence unless a thief asked (`wanted`) and the joiner's next push released it;
/// either way it runs exactly once.
#[test]
fn a_private_half_is_released_only_on_request() {
    loom::model(|| {
        let d = Deque::new(4);
        let f = Arc::new(Frame::new());
        d.push(OTHER); // released at once: the oldest item
        let mark = d.bottom();
        d.push(HALF); // private
        let th = thief(&d, &f, 3);
        // The inline half spawns once more, which answers a thief's request if one came.
        d.push(Item(192, 1));
        let r = sync(&d, &f, mark);
        th.join().unwrap();
        assert_eq!(r, 42);
        // Relaxed: the thief was joined, so any bump of its happened before.
        assert_eq!(f.ran.load(Ordering::Relaxed), 1);
    });
}

/// Oldest-first hand-over (`promote.rs`): the owner pushes a pending half only when a thief has
/// asked, at any point while the first half runs (here, on the way out of it), and then syncs
/// with it from a mark taken just before the push. The thief's request, the promotion, the
/// steal, the owner's pop and the latch all race: the half runs exactly once, on whichever side
/// got it, and the owner reads its result after it was written.
#[test]
fn a_half_promoted_on_request_races_the_owners_return() {
    loom::model(|| {
        let d = Deque::new(4);
        let f = Arc::new(Frame::new());
        let th = thief(&d, &f, 2);
        // The first half runs; on its way out the owner looks for a request.
        let r = if d.wanted() {
            let mark = d.bottom();
            d.push(HALF);
            sync(&d, &f, mark)
        } else {
            f.run();
            f.result.with(|r| unsafe { *r })
        };
        th.join().unwrap();
        assert_eq!(r, 42);
        // Relaxed: the thief was joined, so any bump of its happened before.
        assert_eq!(f.ran.load(Ordering::Relaxed), 1);
    });
}
