//! The closing protocol of a lent worker (see `core/caller_worker/mod.rs`, "Closing"): a pool must
//! not stop its workers while the thread lent to it is inside, and that thread must not enter
//! once the pool is stopping.
//!
//! Two flags, a Dekker pair, as in the sleep protocol (`sleep.rs`):
//!
//! * entering thread: store `inside = true`, a `SeqCst` fence, then read `closing`; if set,
//!   store `inside = false` and do not enter; else run inside, and store `inside = false` when
//!   back out;
//! * dropping thread: store `closing = true`, a `SeqCst` fence, then wait until `inside` reads
//!   false.
//!
//! The two fences are ordered one way or the other. If the entering thread's comes first, the
//! dropper's read of `inside` sees its store (or the later exit), and it waits for the exit;
//! if the dropper's comes first, the entering thread's read of `closing` sees `true`, and it
//! does not enter. Both forbid the one bad outcome: an entry that runs while the dropper has
//! gone on to stop the workers. (`SeqCst` stores and loads alone would do in the C++ model;
//! loom checks only the fenced form, which costs nothing that matters on a path taken once per
//! call from outside.) Loom checks it below.

use crate::sync::atomic::{fence, AtomicBool, Ordering};

/// The two flags, in the pool's registry.
#[derive(Default)]
pub(crate) struct LentState {
    /// The lent thread is inside the pool.
    inside: AtomicBool,
    /// The pool is being dropped: the lent thread may not enter any more.
    closing: AtomicBool,
}

impl LentState {
    /// The entering thread's half: `true` if it may enter (it must call [`exit`](Self::exit)
    /// when back out), `false` if the pool is closing.
    pub(crate) fn try_enter(&self) -> bool {
        // SeqCst store, SeqCst fence, SeqCst load: the protocol's half (module doc).
        self.inside.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.closing.load(Ordering::SeqCst) {
            self.inside.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// The entering thread is back out.
    pub(crate) fn exit(&self) {
        // SeqCst (Release would do): the dropper, once it reads this, may stop the workers;
        // everything this thread did inside happens before.
        self.inside.store(false, Ordering::SeqCst);
    }

    /// Whether the pool is closing (the lent thread then stops being lent).
    pub(crate) fn is_closing(&self) -> bool {
        // Only a hint (a stale `false` is caught by `try_enter`'s fenced read); SeqCst as the
        // protocol's other accesses.
        self.closing.load(Ordering::SeqCst)
    }

    /// The dropping thread's half: no entry from now on, and none in progress once this
    /// returns. `pause` is called between looks while one is in progress.
    pub(crate) fn close(&self, mut pause: impl FnMut()) {
        // SeqCst store, SeqCst fence, SeqCst load: the protocol's other half (module doc).
        self.closing.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        while self.inside.load(Ordering::SeqCst) {
            pause();
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::AtomicUsize;
    use loom::sync::Arc;
    use loom::thread;

    /// The lent thread tries to enter twice while another thread drops the pool. An entry that
    /// goes ahead marks itself running and clears the mark before it leaves; the dropper, once
    /// `close` returns, must never see the mark (it would stop the workers under a running
    /// entry), and no entry may begin after it.
    #[test]
    fn no_entry_runs_after_close_returns() {
        loom::model(|| {
            let s = Arc::new(LentState::default());
            let running = Arc::new(AtomicUsize::new(0));
            let stopped = Arc::new(AtomicBool::new(false));
            let lent = {
                let (s, running, stopped) = (s.clone(), running.clone(), stopped.clone());
                thread::spawn(move || {
                    for _ in 0..2 {
                        if s.try_enter() {
                            running.fetch_add(1, Ordering::SeqCst);
                            assert!(!stopped.load(Ordering::SeqCst), "entered a stopped pool");
                            running.fetch_sub(1, Ordering::SeqCst);
                            s.exit();
                        }
                    }
                })
            };
            s.close(thread::yield_now);
            assert_eq!(
                running.load(Ordering::SeqCst),
                0,
                "closed under a running entry"
            );
            stopped.store(true, Ordering::SeqCst);
            lent.join().unwrap();
        });
    }
}
