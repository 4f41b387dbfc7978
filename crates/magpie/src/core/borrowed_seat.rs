//! A borrowed seat: a call made from outside the pool runs on the calling thread, in the seat of
//! a worker that sleeps.
//!
//! Handing a call to a worker costs a wake-up and a wait on both sides: tens of microseconds on
//! a loaded machine, where a small input's whole work may take one or two. When a worker of the
//! pool sleeps with nothing of its own in flight, its seat (its deque, inbox, index and record)
//! is idle, and the caller's thread can fill it: the caller becomes that worker for the length
//! of the call, runs the call on a fiber of its own, and gives the seat back before it returns.
//! Nobody is woken unless the call publishes work that a thief takes (the worker's ordinary
//! wake-ups), so a small input costs what its joins cost.
//!
//! **Taking the seat.** A worker going to sleep marks its sleep *lendable* when no fiber of its
//! thread is suspended in a task (the dispatcher counts them in the seat's `Waits`):
//! then its deque, ready list and work-first parent are empty, and nothing in any latch or
//! inbox will ever ask its thread to resume a fiber. The caller takes the seat with one CAS on
//! the worker's sleep slot (`Sleep::lend`, in `sleep.rs`, which also states the states and the
//! handshake). From that CAS until the seat is given back, the worker's thread stays blocked in
//! its wait: nothing ends it but `ACTIVE`, which only a wake-up after the give-back can store.
//! The thread's record (`Registry::seats`) is therefore touched by one thread at a time: the
//! CAS acquires the sleeper's announcement, which followed everything the worker wrote, and the
//! give-back's store releases everything the guest wrote to the next wake-up's CAS. The record
//! is `!Sync`; it is shared by turns, never at once.
//!
//! **Running as the worker.** The guest keeps the worker's own fibers aside (its spare stacks
//! ran on the worker's thread, and a stack never runs on two threads) and puts in its own: the
//! spares its thread kept from its last call into the same pool (re-homed to this seat), or
//! none. New fibers are made on its thread, from stacks its thread keeps (`core/fiber/mod.rs`,
//! `stack_cache`). The call goes into the seat's inbox as a root job, and the guest runs the
//! dispatcher as a worker thread does: it runs what the seat's deque and inbox hold, steals
//! while a join waits, and sleeps in the seat's slot (`Sleep::sleep_lent`) when idle. Anything
//! delivered to the seat while the guest holds it (a broadcast call, a designated spawn, the
//! resumption of the guest's own waiting fiber) is the seat's work, run by the guest.
//!
//! **Leaving.** As a thread lent to its pool (`caller_worker.rs`), the guest leaves when it finds
//! no work of its own, its root job has finished and none of its fibers is suspended: nothing
//! of it is left in the seat. It keeps its spare fibers for its thread's next call (a call into
//! another pool, or the thread's exit, ends them), puts the worker's back, and gives the
//! seat back as if the worker had just announced its sleep: a re-check that wakes the worker if
//! anything arrived for it meanwhile (`Sleep::give_back`). A schedule region that began while
//! the guest was inside keeps work for the worker where the re-check does not look, so then the
//! worker's thread is woken to take up the region's protocol itself. The pool cannot stop
//! meanwhile: the call holds the pool, and a lent seat's thread waits for the give-back even at
//! shutdown.
//!
//! **Where it applies.** A plain pool: no trace, no race checker, no core sharing, no places or
//! squads, no pinned workers, no migration, no thread lent with `use_current_thread` (its
//! worker 0 is the caller's already), no threads the user named (`thread_name`) or started
//! (`build_with`), whose identity a call may look for, and no schedule region in progress. Elsewhere, and when
//! no worker sleeps lendably, the call goes to the workers as before.

use crate::fiber::{Cmd, Fiber};
use crate::job::RootJob;
use crate::registry::Registry;
use crate::worker::{self, Guest, WorkerThread};
use std::cell::RefCell;
use std::panic;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The spare fibers a thread kept from its last call in a borrowed seat, for its next call into
/// the same pool: a call that suspends many tasks at once (a left-deep chain of joins under
/// help-first) would otherwise make them all again each time. They ran only on this thread.
struct KeptSpares {
    /// Their pool, kept alive while they are: a fiber counts itself out of its registry when
    /// it ends.
    reg: Arc<Registry>,
    #[allow(clippy::vec_box)]
    spares: Vec<Box<Fiber>>,
}

impl Drop for KeptSpares {
    fn drop(&mut self) {
        // Before `reg` is dropped, after this.
        end(&mut self.spares);
    }
}

/// Pools a thread keeps spares for: a thread that calls into a few pools in turn reuses each
/// one's; the least recently used pool's end when a further pool is entered.
const KEPT_POOLS: usize = 4;

thread_local! {
    /// Least recently used first.
    static KEPT: RefCell<Vec<KeptSpares>> = const { RefCell::new(Vec::new()) };
}

/// Ends fibers parked in their scheduling loop, which returns at `Exit` without touching a
/// worker (`main_loop::fiber_main`), so this may run at the thread's exit. Their pool must be
/// alive: a fiber counts itself out of its registry as it ends.
#[allow(clippy::vec_box)]
fn end(spares: &mut Vec<Box<Fiber>>) {
    if spares.is_empty() {
        return;
    }
    for mut f in spares.drain(..) {
        let _ = f.co.resume(Cmd::Exit);
    }
}

/// This thread's kept spares for `reg`'s pool, re-homed to seat `w` (none if it has none). The
/// pool's entry stays, emptied, for [`keep`] to fill again, and becomes the most recently used.
#[allow(clippy::vec_box)]
fn take_kept(reg: &Arc<Registry>, w: usize) -> Vec<Box<Fiber>> {
    let mut spares = KEPT
        .try_with(|k| {
            let mut k = k.borrow_mut();
            let i = k.iter().rposition(|s| Arc::ptr_eq(&s.reg, reg))?;
            let last = k.len() - 1;
            if i != last {
                let e = k.remove(i);
                k.push(e);
            }
            Some(std::mem::take(&mut k[last].spares))
        })
        .ok()
        .flatten()
        .unwrap_or_default();
    for f in &mut spares {
        f.home = w;
    }
    spares
}

/// Keeps `spares` of `reg`'s pool for this thread's next call into it (or ends them if the
/// thread is exiting). The pool's entry, which `take_kept` left, takes them back in place: a
/// new entry for every call (a count on the pool's `Arc` taken and one dropped, the old entry
/// ended) cost a small call from outside the pool about 190 instructions.
#[allow(clippy::vec_box)]
fn keep(reg: &Arc<Registry>, spares: Vec<Box<Fiber>>) {
    /// Whatever does not reach the thread's list is ended, while the caller holds the pool.
    struct Ending(Vec<Box<Fiber>>);
    impl Drop for Ending {
        fn drop(&mut self) {
            end(&mut self.0);
        }
    }
    let mut spares = Ending(spares);
    // At the thread's exit the closure does not run, and `spares` keeps the fibers.
    let _ = KEPT.try_with(|cell| {
        let evicted = {
            let mut kept = cell.borrow_mut();
            match kept.iter_mut().rev().find(|s| Arc::ptr_eq(&s.reg, reg)) {
                // What the entry still held (nothing, unless a bug) is ended below.
                Some(e) => {
                    std::mem::swap(&mut e.spares, &mut spares.0);
                    None
                }
                None => {
                    kept.push(KeptSpares {
                        reg: reg.clone(),
                        spares: std::mem::take(&mut spares.0),
                    });
                    (kept.len() > KEPT_POOLS).then(|| kept.remove(0))
                }
            }
        };
        // Ended after the borrow is released.
        drop(evicted);
    });
    drop(spares);
}

/// Runs `op` on the calling thread in the seat of a sleeping worker of `reg`'s pool, and
/// returns its result (a panic in it resumes here); hands `op` back if the pool does not lend
/// seats or no worker sleeps lendably. The caller is a thread outside every pool.
pub(crate) fn run_in<R, OP: FnOnce() -> R>(reg: &Arc<Registry>, op: OP) -> Result<R, OP> {
    if !reg.lends_seats || reg.region.get().is_some() {
        return Err(op);
    }
    debug_assert!(worker::current().is_none(), "a guest is a plain thread");
    let Some(w) = (0..reg.config.workers).find(|&w| reg.sleep.lend(w)) else {
        return Err(op);
    };
    // Acquire: pairs with the worker's store of its record (its sleep's announcement, which the
    // CAS in `lend` read, came later on its thread anyway).
    let p = reg.seats[w].load(Ordering::Acquire);
    // SAFETY: the seat was lent, so its thread sleeps inside its dispatcher with its record
    // published (it clears it only after leaving its sleep, which it cannot do before the
    // give-back below), and nobody else touches the record until then (module doc).
    let wt: &WorkerThread = unsafe { &*(p as *const WorkerThread) };
    let guest = Guest::new();
    let own_fiber = wt.core.fiber.get();
    let own_spares = wt.fibers.swap_spares(take_kept(reg, w));
    wt.seat.set_guest(&guest);
    wt.seat.enter_call(&guest);
    let job = RootJob::new(op, &guest.root_done);
    // SAFETY: `job` stays on this frame until the dispatcher below has returned, which it does
    // only after the job has run (`Seat::may_leave`); only this thread runs the seat meanwhile.
    reg.inboxes[w].push(unsafe { job.item() });
    worker::set_current(wt);
    crate::main_loop::dispatch(wt, &guest.waits);
    worker::set_current(std::ptr::null());
    debug_assert!(wt.fibers.none_waiting());
    wt.settle_credit();
    wt.seat.enter_call(std::ptr::null());
    wt.seat.set_guest(std::ptr::null());
    wt.core.fiber.set(own_fiber);
    let mine = wt.fibers.swap_spares(own_spares);
    reg.sleep.give_back(
        w,
        || reg.has_visible_work(w),
        // SeqCst: as every read of the flag on the sleep paths.
        || reg.terminate.load(Ordering::SeqCst),
    );
    // A schedule region holds work for particular workers outside the deques and inboxes, which
    // the give-back's re-check does not see, and its wake-ups of this worker found the seat
    // lent. The worker's own thread takes up the region's protocol from its loop (its idle set,
    // its held items), so it is woken whenever a region is in progress as the guest leaves.
    if reg.region.get().is_some() {
        reg.sleep.activate(w, crate::sleep::always);
    }
    // After the give-back: ending spares of another pool kept before must not hold the seat.
    keep(reg, mine);
    // SAFETY: the dispatcher returned, which `Seat::may_leave` allows only after the job's one run.
    match unsafe { job.take_result() } {
        Ok(r) => Ok(r),
        Err(p) => panic::resume_unwind(p),
    }
}
