//! `join(a, b)`: spawn-sync of two closures (Cilk's fully strict fork-join), under the pool's policy.
//!
//! * Work-first: `b` (the parent's continuation up to the sync) is pushed for thieves and `a`, the
//!   child, runs now. One worker runs `a` then `b`: the sequential order.
//! * Help-first: `a`, the child, is pushed and the parent continues with `b`; one worker runs `b`
//!   then `a`: the parent reaches its sync point before its child runs.
//!
//! # What a join costs, and the return barrier
//!
//! Friendly Barriers (§4) splits a work-stealing runtime's cost into the *sequential* overhead
//! (what a spawn and its sync cost when nobody steals) and the *dynamic* overhead (what each steal
//! costs, above all what it costs the victim), and makes the victim pay only when it returns into
//! a frame whose work a thief took (§5, the return barrier). A join here takes one of three roads;
//! the first two involve no atomic read-modify-write and no fence.
//!
//! 1. **In place** (the common case). The worker keeps [`KEEP`] items in its deque for thieves
//!    (one, [`KEEP_PROMOTING`](crate::policy::KEEP_PROMOTING), when it promotes its oldest pending
//!    half; none in a one-worker pool) and no thief asked for more, so the join publishes nothing
//!    and runs both halves as plain calls, in the order its policy prescribes (work-first: `a` then
//!    `b`; help-first: `b` then `a`): what a published half popped back unstolen would do, minus
//!    the push and the pop. The worker does not look at its whole deque on each join: it holds a
//!    *credit* of in-place joins (`WorkerThread::grant_credit`), and a join with credit left reads
//!    the thread-local worker, compares its frame depth and credit with two worker-local counters
//!    and the stack pointer with the fiber's limit, and decrements the credit. Every `CREDIT`
//!    joins (and whenever the deque may have changed: a pop, a task started or finished, a
//!    suspension, a thief asking) the worker looks at its deque (a `Relaxed` load of the thieves'
//!    `top`) and counts the joins it ran in bulk (`settle_credit`), which is also what keeps
//!    `Pool::stats` exact once the work is done. A thief that finds nothing asks through the
//!    deque's `wanted` flag (a line thieves write only to ask for work), which a join reads with a
//!    `Relaxed` load: a worker that promotes its oldest pending half reads it as each in-place
//!    join that recorded its pending half returns from its first half (`in_place_pending`; which
//!    joins record: `promote.rs`), and at each look at its deque; one that does not promote reads
//!    it as each join starts; a one-worker pool, where nobody asks, never. So a thief that asks
//!    is heard at the next join, the next return from a recorded first half or at most `CREDIT`
//!    joins later, and so is a steal of the kept items. This is lazy task creation on the split
//!    deque; it bounds the deque of a recursive computation by `KEEP` plus
//!    what thieves ask for.
//! 2. **Published, not stolen.** The push stores the item in the owner's private part (two
//!    `Relaxed` stores and an owner-local index); when the public part is empty it also moves the
//!    split up with a `Release` store, a plain store on x86 and no fence anywhere. At the sync
//!    point the joiner pops the item back: from the private part with plain loads, from the
//!    public part (only items it offered to thieves: the oldest one, or what a thief asked for)
//!    with Chase–Lev's fence, which `Stats::fenced_pops` counts: on fib(36) at 2 workers, 80 to
//!    105 of 24 million joins per run.
//! 3. **Stolen: the return barrier.** A thief takes the oldest public item with one CAS on the
//!    deque's `top`; it never stops, signals or waits for the victim, which goes on running the
//!    inline half unaware. The victim learns of the steal only when it returns to the sync point
//!    of that join (its barrier) and the pop does not give its item back. Only then does it pay:
//!    it runs what it pushed above the item (its own descendants), then suspends its fiber on the
//!    half's [`Latch`](crate::latch::Latch), registering only after it has fully suspended. The
//!    thief, having run the half, swaps the latch to set: if it finds the victim registered, it
//!    makes the victim's fiber ready (`fiber::make_ready`, which hands it to the victim's own
//!    worker); if not, the victim's registration fails and the victim resumes itself. Exactly one of the two happens, the half runs exactly
//!    once, and the victim reads the result after the thief wrote it: `return_barrier_model.rs` checks
//!    this with loom, the thief racing the victim's return for a public half and for a private
//!    one released on request. With `Builder::measure_overheads`, the time from the failed pop to
//!    the suspension, and the switches out of and back into the waiting task, are the victim's
//!    cost of the steal (`Stats::victim_ns`).
//!
//! The joiner never steals unrelated work onto its own stack: a waiting task suspends, and its
//! worker carries on with a fresh fiber (see `core/fiber/mod.rs`).
//!
//! Stack bound (SLAW's stack condition): when the frames on the fiber reach S, or fewer than
//! `STACK_RESERVE` bytes are left, help-first and adaptive joins push *both* halves and suspend, so
//! the halves start on a fresh fiber stack; a forced work-first join stops with
//! [`Error::StackLimit`](crate::Error) instead of overflowing.

use crate::error::Error;
use crate::fiber::{FiberLocal, STACK_RESERVE};
use crate::job::{StackJob, Work};
use crate::policy::{JoinMode, Policy};
use crate::promote::PendingJob;
use crate::sync_point::{sync_pushed, SyncMark};
use crate::worker::{self, WorkerThread};
use std::panic::{self, AssertUnwindSafe};

/// Runs `a` and `b`, potentially in parallel, and returns both results. A panic in either reaches
/// the caller after both have finished. Outside any pool, runs on the global pool.
///
/// Code after `join` returns runs on the OS thread that ran the code before it: when a thief took
/// the other half, the joiner's fiber waits, and its own worker resumes it once that half is done
/// (unless the pool was built with the `unsafe` [`Builder::allow_migration`]).
///
/// [`Builder::allow_migration`]: crate::Builder::allow_migration
// Never inlined: it reads the thread-local worker pointer inline, once, at entry (see
// `worker::current_at_entry`). It only dispatches, by tail calls: each in-place order gets a frame
// of its own (see `join_in`).
#[inline(never)]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match worker::current_at_entry() {
        Some(wt) => join_on(wt, a, b),
        None => join_global(a, b),
    }
}

/// [`join`], except that a call from outside every pool runs `outside(a, b)` instead of joining
/// on the global pool. For a library built on magpie that must prepare something before work
/// from a plain thread starts (rayon-core builds the global pool with rayon's settings): on a
/// worker it is `join`, with the same one test of the thread's worker, so the library's join
/// costs what magpie's does. A wrapper that made that test itself before calling `join` paid it
/// twice, and the caller's recursive function, one test larger, was no longer inlined into the
/// join's closures: fib without a cutoff through rayon-core took 1.26-1.32x `join`'s time at 1
/// worker (docs/results/join-path.md).
///
/// ```
/// let pool = magpie::Pool::builder().workers(2).build().unwrap();
/// let inside = pool.install(|| magpie::join_or_else(|| 1, || 2, |_, _| unreachable!()));
/// assert_eq!(inside, (1, 2));
/// let outside = magpie::join_or_else(|| 1, || 2, |a, b| (a() * 10, b() * 10));
/// assert_eq!(outside, (10, 20));
/// ```
#[inline(never)]
pub fn join_or_else<A, B, RA, RB, O>(a: A, b: B, outside: O) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
    O: FnOnce(A, B) -> (RA, RB),
{
    match worker::current_at_entry() {
        Some(wt) => join_on(wt, a, b),
        None => join_outside(outside, a, b),
    }
}

#[cold]
#[inline(never)]
fn join_outside<A, B, RA, RB, O: FnOnce(A, B) -> (RA, RB)>(outside: O, a: A, b: B) -> (RA, RB) {
    outside(a, b)
}

/// The dispatch of a join on worker `wt`, by tail calls. One byte says the in-place order,
/// whether oldest-first hand-over (`promote.rs`) is on, and whether the pool has thieves; each
/// combination has an instance of its own: a pool without hand-over runs the plain join's
/// frame, and a one-worker pool's never reads the thieves' request flag. With hand-over, whether
/// the join records its pending half (`WorkerThread::records`) picks one of two instances more:
/// the recording join's frame holds the record, the other's is the plain join's (`promote.rs`,
/// "Which joins record").
#[inline(always)]
fn join_on<A, B, RA, RB>(wt: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    // Tested bit by bit, the default modes first (an adaptive or work-first pool with one
    // worker, then with thieves and hand-over), each with one test and a conditional jump: a
    // `match`, or compares of the whole byte, became a jump table or a search over the byte's
    // values, which put another compare before the first mode's.
    let mode = wt.core.join_mode as u8;
    if mode == 0 {
        join_in::<false, false, true, false, A, B, RA, RB>(a, b, wt)
    } else if mode & JoinMode::UNCOMMON == 0 {
        if wt.records(wt.fiber_local().depth.get()) {
            join_in::<false, true, false, true, A, B, RA, RB>(a, b, wt)
        } else {
            join_in::<false, true, false, false, A, B, RA, RB>(a, b, wt)
        }
    } else if mode & JoinMode::HELP_FIRST == 0 {
        join_in::<false, false, false, false, A, B, RA, RB>(a, b, wt)
    } else if mode & JoinMode::PROMOTING != 0 {
        if wt.records(wt.fiber_local().depth.get()) {
            join_in::<true, true, false, true, A, B, RA, RB>(a, b, wt)
        } else {
            join_in::<true, true, false, false, A, B, RA, RB>(a, b, wt)
        }
    } else if mode & JoinMode::THIEVES != 0 {
        join_in::<true, false, false, false, A, B, RA, RB>(a, b, wt)
    } else {
        join_in::<true, false, true, false, A, B, RA, RB>(a, b, wt)
    }
}

#[cold]
#[inline(never)]
fn join_global<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    crate::pool::outside(|| join(a, b))
}

/// A join on worker `wt`, whose in-place halves run in help-first order (`b`, then `a`) if
/// `HF`, else work-first (`a`, then `b`; also the adaptive policy's in-place order); with
/// `PROMOTE`, oldest-first hand-over is on, and with `RECORD` as well, the half run second is
/// recorded for it; with `SOLO` (a one-worker pool), no thief's request is listened for.
///
/// Every join goes through this frame, so what it costs is what a join costs: the in-place join
/// (fib without cutoff) is bound by its stores, and the registers this function saves on entry
/// are stores. Only values that outlive a call take such a register, so the frame keeps few: the
/// fiber's record, the depth, and the half that runs second (one order per frame, hence `HF`:
/// with both orders in one frame both halves outlived a call). The look at the deque when the
/// credit runs out is out of line (`join_cold`), and the tracked path looks its level word up
/// again after a call rather than keeping it. With the look, both orders and the kept word in
/// one frame, `join` saved five registers; this frame saves three (`join` itself only
/// dispatches, with no frame), and fib(36) without cutoff runs 4-5% faster at 1 and 2 workers,
/// cilksort 3-5% (docs/RESULTS.md, "The runtime core"). Keeping the work-first order in `join`'s
/// own frame and sending help-first to another measured 10% faster for work-first and 12%
/// slower for help-first: the help-first path then paid `join`'s saves and restores on top of
/// its own frame's.
#[inline(never)]
fn join_in<
    const HF: bool,
    const PROMOTE: bool,
    const SOLO: bool,
    const RECORD: bool,
    A,
    B,
    RA,
    RB,
>(
    a: A,
    b: B,
    wt: &WorkerThread,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let fl = wt.fiber_local();
    let depth = fl.depth.get();
    if !wt.has_credit(depth, !SOLO && !PROMOTE) {
        return join_cold::<HF, PROMOTE, A, B, RA, RB>(wt, fl, a, b);
    }
    in_place_or_publish::<HF, PROMOTE, A, B, RA, RB>(wt, fl, depth, RECORD, a, b)
}

/// A join without credit left: looks at the deque (`WorkerThread::grant_credit`), then runs in
/// place or publishes. Out of line so that nothing in `join_in`'s frame has to outlive the call
/// to `grant_credit`.
#[inline(never)]
fn join_cold<const HF: bool, const PROMOTE: bool, A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if wt.core.checks {
        return join_checked(wt, fl, a, b);
    }
    if wt.core.tracing && fl.cursor().is_none() {
        return join_traced::<HF, A, B, RA, RB>(wt, fl, a, b);
    }
    let depth = fl.depth.get();
    if wt.grant_credit(depth) {
        let record = PROMOTE && wt.records(depth);
        return in_place_or_publish::<HF, PROMOTE, A, B, RA, RB>(wt, fl, depth, record, a, b);
    }
    if PROMOTE && fl.cursor().is_none() && fl.has_reserve() && depth < wt.core.thresholds.stack {
        // Thieves want work (or took what `grant_credit` promoted for them), but older halves
        // may still be pending on this fiber: publishing this join's own half would hand the
        // youngest out first. It waits in line instead, and what thieves get is promoted
        // oldest first (which is this half only when no older one is left). Counted as the
        // in-place joins on credit are.
        wt.count_in_place(1);
        return if HF {
            let (rb, ra) = in_place_pending(wt, fl, depth, true, b, a);
            (ra, rb)
        } else {
            in_place_pending(wt, fl, depth, true, a, b)
        };
    }
    join_publish(wt, fl, wt.core.deque.top(), a, b)
}

/// A join in a pool that traces (outside a schedule region's positioned tasks, which keep
/// their own paths). A tracing pool grants no credit, so each join comes here and decides alone.
///
/// The trace numbers a join's second half among the events of the join's phase, where a
/// published half runs: popped back by its joiner, or by the joiner's worker once the joiner
/// waits at its sync point (a waiting task's worker starts nothing else of it sooner:
/// `leapfrog.rs`), which goes back to the phase that published it. An in-place join runs its
/// second half on the joining fiber; if the first half suspended meanwhile, the worker has
/// moved on to other phases, so it goes back to the join's phase first
/// ([`WorkerThread::trace_back_to`]): either way the half's events are counted where the trace
/// says, and reconstruction need not know which way the join went. With migration allowed the
/// fiber may come back on another worker, which cannot go back to this one's phase: every join
/// publishes there.
#[cold]
#[inline(never)]
fn join_traced<const HF: bool, A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let depth = fl.depth.get();
    let top = wt.core.deque.top();
    if wt.core.registry.config.migrate || !fl.has_reserve() || !wt.may_run_in_place(depth, top) {
        return join_publish(wt, fl, top, a, b);
    }
    wt.count_in_place(1);
    let phase = wt.trace_phase();
    let resumed = fl.resumed.get();
    // The second half, once the first has returned to this fiber.
    let back = || {
        if fl.resumed.get() != resumed {
            if let Some(wt) = worker::current() {
                wt.trace_back_to(phase);
            }
        }
    };
    fl.depth.set(depth + 1);
    let r = if HF {
        let (rb, ra) = in_place(b, || {
            back();
            a()
        });
        (ra, rb)
    } else {
        in_place(a, || {
            back();
            b()
        })
    };
    fl.depth.set(depth);
    r
}

/// A join in a pool that checks for races (`hooks::Structure`): the halves run in contexts of
/// their own, made before they are published, and the joiner goes on in a new one after.
/// A task outside a checked call (no context) joins as any other.
#[cold]
#[inline(never)]
fn join_checked<A, B, RA, RB>(wt: &WorkerThread, fl: &FiberLocal, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let (cur, Some(s)) = (fl.checked.get(), wt.core.registry.structure()) else {
        return join_publish(wt, fl, wt.core.deque.top(), a, b);
    };
    if cur.is_null() {
        return join_publish(wt, fl, wt.core.deque.top(), a, b);
    }
    let cur = crate::hooks::Ctx(cur);
    let (ca, cb) = s.join(cur);
    /// Tells the structure the join has ended, also when a half's panic unwinds through it
    /// (a caller that catches the panic goes on after the join).
    struct Joined<'a>(&'a dyn crate::hooks::Structure, crate::hooks::Ctx);
    impl Drop for Joined<'_> {
        fn drop(&mut self) {
            self.0.joined(self.1);
        }
    }
    // The joiner resumes only on the fiber it began on, whose context `cur` stays.
    let _joined = Joined(s, cur);
    join_publish(
        wt,
        fl,
        wt.core.deque.top(),
        move || crate::worker::run_in(ca, a),
        move || crate::worker::run_in(cb, b),
    )
}

/// The join with credit: in place if the stack allows (tracked in a region), else published.
/// With `PROMOTE`, `record` says whether its pending half is recorded (`WorkerThread::records`,
/// read by the dispatch that chose the frame, or again after a look at the deque).
#[inline(always)]
fn in_place_or_publish<const HF: bool, const PROMOTE: bool, A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    depth: u32,
    record: bool,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if fl.has_reserve() {
        // In place: nothing published, nothing to pop back, nothing counted until the credit is
        // settled (see `WorkerThread::settle_credit`). Under Adaptive an in-place join is a
        // sequential call (work-first order); the heuristic's choice applies to what is
        // published.
        if fl.cursor().is_some() {
            // Credit under a cursor: a tracked region task (see `position.rs`). With hand-over
            // the join's start did not listen for thieves (`has_credit`), and a tracked join has
            // no first half to listen after: it listens here, and answers as every join did.
            if PROMOTE && wt.core.deque.wanted() {
                return join_cold::<HF, PROMOTE, A, B, RA, RB>(wt, fl, a, b);
            }
            return join_tracked(wt, fl, depth, HF, a, b);
        }
        wt.spend_credit();
        if PROMOTE && record {
            // The half run second waits where a thief can be handed it (`promote.rs`); a join
            // below the depth that records, after a long time without a request, runs as in a
            // pool without the hand-over ("Which joins record").
            return if HF {
                let (rb, ra) = in_place_pending(wt, fl, depth, false, b, a);
                (ra, rb)
            } else {
                in_place_pending(wt, fl, depth, false, a, b)
            };
        }
        return in_place_in_order::<HF, A, B, RA, RB>(fl, depth, a, b);
    }
    join_publish(wt, fl, wt.core.deque.top(), a, b)
}

/// Where a join's halves lie behind their parent's next child index once the join took both
/// (`position::Level::enter_child`): `a` is the first, `b` the second, whatever order
/// the policy runs them in.
const FIRST: u32 = 2;
const SECOND: u32 = 1;

/// The in-place join of a region task below a tracked cursor: as the plain one, with the halves'
/// positions kept in the cursor (`RegionCursor`'s doc in `position.rs`). A task too many levels
/// below its cursor publishes instead, which gives its halves cursors of their own. `in_place`'s
/// sequence is written out here rather than called with wrapped halves: wrapping each half in a
/// closure that enters its level cost recording on fib(32) 1.55x plain, this 1.36x.
#[inline(always)]
fn join_tracked<A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    depth: u32,
    help_first: bool,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let Some(lv) = fl.level(depth) else {
        return join_publish(wt, fl, wt.core.deque.top(), a, b);
    };
    wt.spend_credit();
    lv.take(2);
    fl.depth.set(depth + 1);
    // After the first half the level word is looked up again rather than kept: kept, its
    // address would take one more callee-saved register, which `join` would push and pop on
    // every join, tracked or not.
    let again = || {
        // SAFETY: this frame got `Some` from `fl.level(depth)` above, and the first half,
        // whatever it ran, left the fiber's track as it found it (only `position::run`
        // changes it, and restores it before returning or unwinding).
        unsafe { fl.level_again(depth) }
    };
    let r = if help_first {
        lv.enter_child(SECOND);
        match panic::catch_unwind(AssertUnwindSafe(b)) {
            Ok(rb) => {
                again().enter_child(FIRST);
                (a(), rb)
            }
            Err(p) => {
                again().enter_child(FIRST);
                let (rb, ra) = finish_after_panic(a, p);
                (ra, rb)
            }
        }
    } else {
        lv.enter_child(FIRST);
        match panic::catch_unwind(AssertUnwindSafe(a)) {
            Ok(ra) => {
                again().enter_child(SECOND);
                (ra, b())
            }
            Err(p) => {
                again().enter_child(SECOND);
                finish_after_panic(b, p)
            }
        }
    };
    fl.depth.set(depth);
    r
}

/// An in-place join in a pool with thieves: runs `first` with `second` recorded as pending on
/// the fiber, so that a worker asked for work hands `second` over if it is the oldest pending
/// half (`promote.rs`); then runs `second` inline, or, if it was handed over, syncs with it as
/// with a published half. Checks for a thief's request on the way out, which is what lets a
/// recursion that makes no more joins (the leaves of a left-deep chain, on the way back up)
/// still hand out its pending halves, and is the only place a join with credit listens for one:
/// a request raised as the recursion descends is answered as soon as the innermost first half
/// returns, by the same promotion of the oldest pending half that a test at the join's start
/// would have led to, and the test at the start (four instructions) is saved on every join.
/// With `promote_now`, promotes for thieves right after recording `second` (a join that found
/// thieves waiting).
#[inline(always)]
fn in_place_pending<X, Y, RX, RY>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    depth: u32,
    promote_now: bool,
    first: X,
    second: Y,
) -> (RX, RY)
where
    X: FnOnce() -> RX,
    Y: FnOnce() -> RY + Send,
    RY: Send,
{
    let rec = PendingJob::new(second);
    // SAFETY: `fl` is the running fiber's; `rec` stays in this frame, and nothing between here
    // and `finish` unwinds (`first` runs under `catch_unwind`, and `promote_for_thieves` aborts
    // rather than unwind). Records entered by `first` were finished when it returned.
    unsafe { rec.enter(fl) };
    if promote_now {
        wt.promote_for_thieves();
    }
    fl.depth.set(depth + 1);
    // After `first` only the fiber's record is used (the flag through it, the worker looked up
    // again on the cold paths): a worker kept across the call took one more saved register.
    let r = match panic::catch_unwind(AssertUnwindSafe(first)) {
        Ok(rx) => {
            if fl.thief_asked() {
                promote_on_the_way_out();
            }
            // SAFETY: as above; this is `rec`'s one `finish`.
            (rx, unsafe { rec.finish(fl) })
        }
        // SAFETY: as above; the cold path makes `rec`'s one `finish`.
        Err(p) => unsafe { finish_pending_after_panic(fl, &rec, p) },
    };
    fl.depth.set(depth);
    r
}

/// A thief asked while the first half of an in-place join ran: hands it the oldest pending half,
/// and has every join record its pending half again.
#[cold]
#[inline(never)]
fn promote_on_the_way_out() {
    if let Some(wt) = worker::current() {
        wt.record_every_join();
        wt.promote_for_thieves();
    }
}

/// `in_place_pending`'s first half panicked: its second half still runs (or its thief is
/// waited for) before the panic goes on, as in [`in_place`].
///
/// # Safety
///
/// As [`PendingJob::finish`].
#[cold]
#[inline(never)]
unsafe fn finish_pending_after_panic<F, R, RX>(
    fl: &FiberLocal,
    rec: &PendingJob<F, R>,
    p: crate::job::Panic,
) -> (RX, R)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    // SAFETY: the caller's obligation.
    let _ = panic::catch_unwind(AssertUnwindSafe(|| unsafe { rec.finish(fl) }));
    panic::resume_unwind(p)
}

/// Runs `first` then `second` as plain calls. If `first` panics, `second` still runs before the
/// panic goes on (the first panic wins); a panic in `second` goes on as it is. Whoever catches
/// it resets the frame depth (every catch site sets the depth it saved).
#[inline(always)]
fn in_place<X, Y, RX, RY>(first: X, second: Y) -> (RX, RY)
where
    X: FnOnce() -> RX,
    Y: FnOnce() -> RY,
{
    match panic::catch_unwind(AssertUnwindSafe(first)) {
        Ok(rx) => (rx, second()),
        Err(p) => finish_after_panic(second, p),
    }
}

#[cold]
#[inline(never)]
fn finish_after_panic<Y: FnOnce() -> RY, RY, RX>(second: Y, p: crate::job::Panic) -> (RX, RY) {
    let _ = panic::catch_unwind(AssertUnwindSafe(second));
    panic::resume_unwind(p)
}

/// The join that publishes one half; or, in a schedule region whose task must position its
/// children, the positioned join (no credit is granted there, so every such join comes here).
/// Cold: the in-place join is the common case, and without the hint the branch to this call
/// was laid out as the fall-through of `join_in`'s stack test, so every in-place join took a
/// jump (fib(36) without a cutoff 7-8% slower at 1 worker after an unrelated change).
#[cold]
#[inline(never)]
fn join_publish<A, B, RA, RB>(wt: &WorkerThread, fl: &FiberLocal, t: isize, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if let Some(cur) = fl.cursor() {
        return cur.at(fl.depth.get(), |cur| {
            crate::donate::join_positioned(wt, fl, cur, a, b)
        });
    }
    join_publish_plain(wt, fl, t, a, b)
}

/// A join of two closures that carry their own positions (or need none) in a region: in place
/// when the worker keeps enough published for thieves and none asked for more (lazy
/// publication, without the credit), else published as any join.
pub(crate) fn join_lazily_published<A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let depth = fl.depth.get();
    let t = wt.core.deque.top();
    if wt.may_run_in_place(depth, t) && fl.has_reserve() {
        wt.count_spawn(wt.core.policy != Policy::HelpFirst);
        return in_place_at(wt, fl, a, b);
    }
    join_publish_plain(wt, fl, t, a, b)
}

/// Runs `a` and `b` in place one frame deeper, in the order of the pool's policy (help-first:
/// `b` then `a`), as the in-place join on credit does: a schedule recorded on one road and
/// followed on the other sees its cuts created in the same order.
pub(crate) fn in_place_at<A, B, RA, RB>(wt: &WorkerThread, fl: &FiberLocal, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB,
{
    let depth = fl.depth.get();
    if wt.core.policy == Policy::HelpFirst {
        in_place_in_order::<true, A, B, RA, RB>(fl, depth, a, b)
    } else {
        in_place_in_order::<false, A, B, RA, RB>(fl, depth, a, b)
    }
}

/// Runs `a` and `b` in place one frame below `depth`, `b` first if `HF`: what every in-place
/// join does once it has decided to run in place (on the credit, or without it in a region).
#[inline(always)]
fn in_place_in_order<const HF: bool, A, B, RA, RB>(
    fl: &FiberLocal,
    depth: u32,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB,
{
    fl.depth.set(depth + 1);
    let r = if HF {
        let (rb, ra) = in_place(b, a);
        (ra, rb)
    } else {
        in_place(a, b)
    };
    fl.depth.set(depth);
    r
}

fn join_publish_plain<A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    t: isize,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if wt.stack_full(fl) {
        return join_deep(wt, a, b);
    }
    let depth = fl.depth.get();
    // With oldest-first hand-over the adaptive policy does not choose how a join publishes: a
    // join publishes only when no pending half is left to promote, and then its second half,
    // the work its parent would have run next, as work-first does (`promote.rs`). Help-first
    // here gave a thief the rest of a left-deep chain and made its owner wait for it at every
    // level.
    let policy = match wt.core.policy {
        Policy::Adaptive if wt.core.promotes => Policy::WorkFirst,
        p => p,
    };
    let wf = wt.decide(policy, depth, wt.core.deque.bottom() - t);
    let tag = wt.trace_tag(depth);
    wt.count_spawn(wf);
    if wf {
        let job = StackJob::tagged(b, tag);
        fork(wt, fl, t, &job, a, true)
    } else {
        let job = StackJob::tagged(a, tag);
        let (rb, ra) = fork(wt, fl, t, &job, b, false);
        (ra, rb)
    }
}

/// Pushes `pushed`, runs `inline`, then syncs with `pushed`. `pushed` is borrowed: a pushed frame
/// must not move until it has run.
#[inline(always)]
fn fork<FP, RP, FI, RI>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    top: isize,
    pushed: &StackJob<FP, RP>,
    inline: FI,
    continuation: bool,
) -> (RI, RP)
where
    FP: FnOnce() -> RP + Send,
    FI: FnOnce() -> RI,
    RP: Send,
{
    let mark = SyncMark::new(wt, fl);
    pushed.publish_under(fl.lineage.get());
    let job = pushed.as_job_ref();
    wt.push_with_top(Work::Task { job, continuation }, top);
    let depth = fl.depth.get();
    fl.depth.set(depth + 1);
    let ri = panic::catch_unwind(AssertUnwindSafe(inline));
    let rp = sync_pushed(wt, fl, &mark, pushed);
    fl.depth.set(depth);
    match (ri, rp) {
        (Ok(ri), Ok(rp)) => (ri, rp),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
    }
}

/// The stack condition holds: never nest. Both halves are pushed and the joiner suspends, so they
/// start on a loop fiber's fresh stack. A forced work-first join nests until the bytes run out,
/// then stops with a clear error.
#[cold]
#[inline(never)]
fn join_deep<A, B, RA, RB>(wt: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let fl = wt.fiber_local();
    let depth = fl.depth.get();
    if wt.core.policy == Policy::WorkFirst {
        if fl.stack_left() < STACK_RESERVE {
            panic::panic_any(Error::StackLimit {
                what: format!(
                    "work-first join at frame depth {depth} with {} bytes of fiber stack left",
                    fl.stack_left()
                ),
                limit: format!(
                    "{} bytes per fiber stack",
                    wt.core.registry.config.stack_size
                ),
            });
        }
        wt.decide(Policy::WorkFirst, depth, 0);
        let tag = wt.trace_tag(depth);
        wt.count_spawn(true);
        let job = StackJob::tagged(b, tag);
        return fork(wt, fl, wt.core.deque.top(), &job, a, true);
    }
    wt.decide(Policy::HelpFirst, depth, 0);
    let (ta, tb) = wt.trace_tags(depth);
    wt.count_spawn(false);
    let ja = StackJob::tagged(a, ta);
    let jb = StackJob::tagged(b, tb);
    // One sync point waits for both halves: both are named by `jb`'s latch in their lineage,
    // and the joiner names it while it waits for either (`leapfrog.rs`).
    let key = &jb.latch as *const crate::latch::Latch;
    ja.publish_keyed(key, fl.lineage.get());
    jb.publish_keyed(key, fl.lineage.get());
    let floor = Some(wt.core.deque.bottom());
    for j in [ja.as_job_ref(), jb.as_job_ref()] {
        wt.push(Work::Task {
            job: j,
            continuation: false,
        });
    }
    crate::fiber::suspend_until(&jb.latch, jb.tag.get(), floor, key as usize);
    crate::fiber::suspend_until(&ja.latch, ja.tag.get(), floor, key as usize);
    match (ja.take_result(), jb.take_result()) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
    }
}
