//! Oldest-first hand-over: a thief that asks is given the oldest unstarted half of the in-place
//! joins pending on its victim's stack, not the join the victim happens to be making.
//!
//! # Why
//!
//! A join runs in place (both halves as plain calls) while the worker keeps enough published
//! for thieves and none asks for more (lazy publication, `join.rs`). Before this module, a
//! worker that had to publish published *the join it was making now*: once the first items were
//! taken, what thieves got lay deep in the recursion, small, and they came back for more. Cilk
//! and SLAW's work-first steal the oldest continuation; private-deque work stealing (Acar,
//! Charguéraud, Rainey, PPoPP 2013), heartbeat scheduling and chili promote the oldest pending
//! frame. magpie cannot hand over a continuation (a running stack never moves to another
//! thread), but the unstarted half of an in-place join is a closure that has not started, and
//! those are exactly the work the recursion still owes.
//!
//! # The record
//!
//! Each in-place join of a pool with thieves (not traced, not in a schedule region, without
//! migration) that records (see below) keeps a [`PendingJob`] in its own frame: a two-word
//! [`Pending`](crate::fiber::Pending) header and the closure of the half it runs second. It
//! links the header in front of its fiber's list (`FiberLocal::pending`, youngest first) and
//! runs its first half. When that returns, it reads the deque's `wanted` flag through the
//! fiber's record (a thief asked while the first half ran: promote now), unlinks the header
//! and, unless the half was promoted meanwhile (promotion clears the header's promotion
//! function), calls the closure. A join nobody asks for thus writes three words and its closure
//! and reads three back, and keeps nothing but the fiber's record across its first half: the
//! job a thief could run (latch, result slot) is built only when the half is promoted. The join
//! reads the flag there only, not as it starts (`WorkerThread::has_credit`).
//! `scripts/join-instructions.sh` counts what that costs: 52.2 instructions a join above the
//! serial twin's, against 42.3 for a pool without the hand-over, whose join reads the flag as
//! it starts and is reached by the dispatch's third test; without those two, the record's
//! words cost about 13.
//!
//! # Which joins record
//!
//! A record costs stores that a join without one does not make: the header's two words, the
//! closure, the list's head set and set back, about 13 instructions of a join that runs 30 to
//! 50 above its serial twin (and the in-place join is bound by its stores). Yet what a thief
//! is handed is the *oldest* pending half, which lies near the root of the fiber's recursion;
//! the records of deep joins matter only when thieves ask often enough to use up the shallow
//! ones, as on a left-deep chain, where each level's pending half is a leaf that a thief wants.
//!
//! So a worker records every in-place join while thieves ask, and once it has run
//! [`QUIET_OPS`](crate::policy::QUIET_OPS) in-place joins and spawns without a request
//! (counted when it looks at its deque, every `CREDIT` joins or sooner), only those at a frame
//! depth below [`QUIET_RECORDS`](crate::policy::QUIET_RECORDS)
//! (`WorkerThread::records`, one compare of the depth against a word of the worker's core). The
//! first request it hears, at a look or on the way out of a recorded join, has every join
//! record again, and so does an idle spell long enough to sleep (the next computation may be a
//! chain). A join that does not record runs as the plain in-place join does and does not listen
//! for thieves: a request is heard at the next look or the next return from a recorded first
//! half. Records are then as dense as the requests: fib(34) at 2 workers sees a handful of
//! requests per run and records a few levels; a chain's thief asks every few leaves, and every
//! level records. Such a join costs 35.8 instructions above the serial twin's, 6.6 more than a
//! one-worker pool's (`scripts/join-instructions.sh`, `two-quiet`).
//!
//! Whether a join records is decided before its frame is made: `join`'s dispatch compares the
//! depth and goes to one of two instances of the join, the recording one, whose frame holds the
//! record (128 bytes more stack per level), or one with the plain in-place join's frame. When one
//! frame served both, the join that did not record still made the recording frame, and its code
//! lay behind the record's, three more taken jumps per join: fib(32) at 2 workers took 1.11-1.23x
//! the time of a pool built with `oldest_first(false)` in most builds (level in one), although
//! its join ran fewer instructions (34.4 against 42.3). With a frame for each it took 0.89-0.96x
//! in every build measured; the compare in the dispatch costs both joins 3 instructions
//! (docs/results/join-path.md, "A frame for each").
//!
//! What it gives up: a chain that a quiet worker descends before any thief asks has records
//! only at its top levels, and the halves below run on their owner on the way back up, where no
//! join is made that could record them. Thieves get the top levels' halves only
//! (`tests/oldest_first.rs` runs it after 75,024 joins nobody asked for: 2 of the chain's 201
//! leaves stolen when the thief first asked on the way back up, 32 when it asked while the
//! chain still descended, which a look heard). The next chain records every level, as does any
//! computation after the worker has slept.
//!
//! # Promotion
//!
//! When the worker must publish (a thief raised `wanted`, or the deque holds fewer than `KEEP`
//! items: `WorkerThread::grant_credit`, and on the way out of an in-place join whose first
//! half ran while a thief asked), it *promotes* the oldest header that is not promoted yet: it
//! records a sync mark, marks the header, and pushes the half's job, which the deque then
//! releases to thieves as any pushed item. The headers promoted so far are always the oldest
//! ones (promotion takes the oldest, and headers come and go at the young end), so the search
//! walks from the youngest header to the first promoted one.
//!
//! A join that finds no credit and thieves waiting does not publish its own half while older
//! ones are pending: it records its half like any in-place join and promotes at once
//! (`join_cold`), so its own half goes out only when it is the oldest. (Publishing it directly,
//! as a join without the option does, handed a thief the youngest half whenever a thief took
//! what was just promoted and asked again between the promotions and the join's look at the
//! deque: under ThreadSanitizer's slower timing, 3 of 8 runs of `tests/oldest_first.rs`.)
//!
//! # The owner's return (the return barrier)
//!
//! A join whose header was promoted syncs as a published join does (`join::fork`), from the
//! mark taken when it was promoted: if its fiber has not been suspended since, what lies above
//! the mark was pushed by this fiber since (its first half's own published joins, popped by
//! their own syncs, and halves of *older* joins promoted later), so it pops the newest item:
//! its job, unless a thief took it, which it then runs inline. Otherwise it runs what lies
//! above the mark and suspends on the job's latch until the job has run. A published join
//! deeper in the first half can likewise find an older join's half above its own item; its sync
//! runs that half inline before its own (any half may run on any stack, and every join on the
//! way checks the stack bound), and the older join then finds its latch already set.
//!
//! Everything the owner does to a header happens on the owner's thread, while the header's
//! frame is suspended in the call to the first half; thieves only ever see the job, through the
//! deque, under the deque's and the latch's own protocols (`return_barrier_model.rs` checks the race of a
//! thief with the owner's return for a job pushed at any point before the return).
//!
//! # Spawns
//!
//! A scope spawn that runs in place runs its child at once; what its parent still owes is the
//! rest of the parent's loop, which is not a closure and cannot be handed over. The only
//! unstarted spawns are published ones. So for spawns, oldest-first hand-over is a choice of
//! *which* spawns to publish (help-first, into the private part of the deque, where thieves
//! take the oldest first): those near the root of a tree whose work lies below them, as in uts.
//! It must not publish the spawns of a flat loop of small tasks (fj), which gains a thief
//! nothing and costs an allocation each, and which the adaptive policy's steal rate could not
//! tell from uts (docs/RESULTS.md, "uts under each policy").
//!
//! What tells them apart is measured where it happens. A worker publishes its adaptive spawns
//! above a level of the spawn tree (`Lessons::shallow`, 0 at first: none). Some
//! spawns on credit below that level (within [`SHALLOW_MAX`] levels: one in [`SAMPLE`] near the
//! root, one in [`SAMPLE_DEEP`] below [`NEAR_ROOT`]) run in place and count the joins and
//! spawns their child made (`WorkerThread::ops_done`). Once most children measured at a level,
//! and at least `MIN_SAMPLES` of them, made more than [`WORK_BELOW`] (`policy::SpawnSizes`), work
//! lies below spawns at that level, and the worker publishes spawns down to it from then on.
//! Deep children finish first, so the level is learned early in a run. A flat loop of small
//! tasks (fj) or a tree too small to share (fj-rec's 2,047 joins and spawns a round) never
//! teaches it; one big child among many small ones does not either (the first child of each
//! node in a depth-first search, which finds the graph unvisited).
//!
//! A shallow spawn publishes only while its worker's deque holds fewer than [`SHALLOW_QUEUE`]
//! items: thieves take the oldest first, so what they get is still the shallowest spawn
//! published since they last took one, and a tree that is wide for many levels (pdfs, whose
//! first 32 levels all teach) does not publish every spawn of them (1.11x slower at 2 workers
//! when it did).
//!
//! The lesson travels with the work. A published shallow child carries its publisher's level
//! to the worker that runs it (`AtLevel`), and a thief adopts its victim's level with whatever
//! it steals (`Registry::lessons`): the computation is the same, and a thief that had to learn
//! it again from its own samples took most of a run to stop stealing small tasks at 8 workers.
//!
//! A spawn's level is its frame depth, except in a published child, which runs one level below
//! its spawn's wherever and at whatever frame depth it runs (`FiberLocal::level_offset`, set by
//! `AtLevel`); judged by frame depth alone, a child run by the loop or a sync point near the
//! top of a stack looks shallow again, and pdfs published nearly every spawn (2.2x slower).
//!
//! The spawn tests two words inline ([`spawn_may_hand_over`]: above the level, or sampled) and
//! makes the rest of the decision out of line; the spawns it publishes or measures go
//! type-erased to code that serves every closure type (`Scope::publish_shallow` boxed, as a
//! published task is anyway; `Scope::run_measured` through `&mut dyn FnMut`, without an
//! allocation): a second instance of the spawn for such pools made pdfs 1.4x slower at 1 worker
//! in pools *without* the option. The lesson outlasts the gaps between a thief's steals, and is
//! forgotten once the worker has been idle long enough to sleep (`idle.rs`), so one
//! computation's shape does not decide the next one's. (Under ABP sharing, whose idle workers
//! never sleep, it is forgotten after as many idle rounds.)

use crate::fiber::{FiberLocal, Pending};
use crate::job::{StackJob, Work};
use crate::policy::{Policy, SHALLOW_MAX};
use crate::sync_point::SyncMark;
use crate::worker::WorkerThread;
use std::cell::{Cell, UnsafeCell};
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic;

/// A pending join's header with the half it runs second. The half waits as a bare closure; the
/// job a thief can run is built from it only when it is promoted, so a join nobody asks for
/// writes the header and the closure and nothing else. `repr(C)` with the header first, so a
/// header's address is the whole record's.
///
/// The owner holds the record by shared reference while promotion (on the same thread, deeper
/// in the same stack) writes the half's job and mark through the header's pointer, and a thief
/// runs the job through its `JobRef`: every field written after the record is made is in an
/// `UnsafeCell`, and nothing reads a field while another writes it (see `promote`).
#[repr(C)]
pub(crate) struct PendingJob<F, R> {
    head: Pending,
    /// The half, until it runs inline or moves into `job` (promotion).
    func: UnsafeCell<ManuallyDrop<F>>,
    /// Written by promotion, with `mark`; initialized exactly when `head.promote` is `None`.
    job: UnsafeCell<MaybeUninit<StackJob<F, R>>>,
    mark: UnsafeCell<MaybeUninit<SyncMark>>,
}

impl<F: FnOnce() -> R + Send, R: Send> PendingJob<F, R> {
    /// A record for `f`, the half to run second; not linked yet. Dropped without
    /// [`finish`](Self::finish), it leaks `f` (it never drops the half itself).
    #[inline(always)]
    pub(crate) fn new(f: F) -> Self {
        PendingJob {
            head: Pending {
                link: Cell::new(std::ptr::null()),
                promote: Cell::new(Some(Self::promote)),
            },
            func: UnsafeCell::new(ManuallyDrop::new(f)),
            job: UnsafeCell::new(MaybeUninit::uninit()),
            mark: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Links the record in front of `fl`'s pending list.
    ///
    /// # Safety
    ///
    /// `fl` is the running fiber's. The caller calls [`finish`](Self::finish) on the same
    /// fiber before the record's frame ends, with no unwinding in between, and does not move
    /// the record in between: until then the list holds its address.
    #[inline(always)]
    pub(crate) unsafe fn enter(&self, fl: &FiberLocal) {
        self.head.link.set(fl.pending.get());
        // The whole record's address (not the header field's), so `promote` may reach all of it.
        fl.pending.set(self as *const Self as *const Pending);
    }

    /// The first half has returned on the fiber that entered the record: unlinks it and runs the
    /// second half inline, or, if it was promoted, syncs with it as a published half
    /// (`sync_point::sync_pushed`). A panic in the half goes on from here.
    ///
    /// # Safety
    ///
    /// Called once, after [`enter`](Self::enter), on the fiber that entered the record, with
    /// every record entered after this one finished.
    #[inline(always)]
    pub(crate) unsafe fn finish(&self, fl: &FiberLocal) -> R {
        fl.pending.set(self.head.link.get());
        if self.head.promote.get().is_some() {
            // SAFETY: not promoted, so `func` still holds the half; it is taken once (the
            // caller's obligation) and nothing else can reach the record now that it is
            // unlinked.
            let f = unsafe { ManuallyDrop::take(&mut *self.func.get()) };
            return f();
        }
        // SAFETY: promoted, and finished once (the caller's obligation).
        match unsafe { self.finish_promoted(fl) } {
            Ok(r) => r,
            Err(p) => panic::resume_unwind(p),
        }
    }

    /// The owner's side of a promoted half: syncs with its job from the mark taken at
    /// promotion.
    ///
    /// # Safety
    ///
    /// The record was promoted, and this is its one `finish`.
    #[inline(never)]
    unsafe fn finish_promoted(&self, fl: &FiberLocal) -> std::thread::Result<R> {
        // The fiber runs on a worker (it entered the record there and never migrates: pools
        // that promote do not allow migration).
        let wt = crate::worker::current().expect("a promoted half is finished on a worker");
        // SAFETY: promoted, so `promote` wrote `job` and `mark` before pushing the job; the
        // owner only reads them (the thief reaches the job only through its `JobRef`, whose
        // fields are cells). The sync consumes the job (run inline, or its result taken after
        // its latch is set, after which no thief touches it), and then it is dropped, once.
        unsafe {
            let job = (*self.job.get()).assume_init_ref();
            let r =
                crate::sync_point::sync_pushed(wt, fl, (*self.mark.get()).assume_init_ref(), job);
            (*self.job.get()).assume_init_drop();
            r
        }
    }

    /// # Safety
    ///
    /// `this` is the header of a live, linked `PendingJob<F, R>` of the fiber `fl` belongs to,
    /// not promoted yet, and the caller runs on that fiber's worker.
    unsafe fn promote(this: *const Pending, wt: &WorkerThread, fl: &FiberLocal) {
        // SAFETY: `this` is the record's address (`enter`), and the caller's obligation says the
        // record is alive, of this type and not promoted, so `func` holds the half. Its owner is
        // suspended in the call to its first half (we run on its fiber, deeper in the same
        // stack), so nobody reads `func`, `job` or `mark` while they are written here, and the
        // job is pushed (made visible to thieves) only once it is whole.
        unsafe {
            let me = &*(this as *const Self);
            let f = ManuallyDrop::take(&mut *me.func.get());
            let job = (*me.job.get()).write(StackJob::new(f));
            // The pending list holds only joins of the task that started this fiber's current
            // stretch (a sync point that runs another task here hides the list: `sync_point.rs`),
            // so the fiber's lineage is this join's too.
            job.publish_under(fl.lineage.get());
            (*me.mark.get()).write(SyncMark::new(wt, fl));
            me.head.promote.set(None);
            wt.stats().promotions.bump();
            wt.push(Work::Task {
                job: job.as_job_ref(),
                continuation: false,
            });
        }
    }
}

/// Promotes the oldest pending join of the running fiber that is not promoted yet; returns
/// whether there was one.
pub(crate) fn promote_oldest(wt: &WorkerThread, fl: &FiberLocal) -> bool {
    let mut p = fl.pending.get();
    let mut oldest: *const Pending = std::ptr::null();
    let mut promote = None;
    // SAFETY: every linked header lives in the frame of a join on this fiber that has not
    // unlinked it yet (`enter`/`finish`), so it is alive while we run on the fiber.
    while let Some(h) = unsafe { p.as_ref() } {
        let Some(f) = h.promote.get() else {
            // The promoted ones are the oldest: none older is unpromoted.
            break;
        };
        oldest = p;
        promote = Some(f);
        p = h.link.get();
    }
    match promote {
        Some(f) => {
            // SAFETY: `oldest` is a live, linked, unpromoted header of this fiber (the walk
            // above), we run on its worker, and `f` is the function its record was made with,
            // for its own type.
            unsafe { f(oldest, wt, fl) };
            true
        }
        None => false,
    }
}

impl WorkerThread {
    /// Publishes adaptive spawns down to spawn-tree level `level` from now on (`promote.rs`,
    /// "Spawns"; 0: none), and tells thieves so.
    pub(crate) fn set_shallow_spawns(&self, level: u32) {
        self.lessons.set_shallow(level);
        // Relaxed: a hint a thief adopts with what it steals; no data is published by it.
        self.core.registry.lessons[self.core.index]
            .store(level, crate::sync::atomic::Ordering::Relaxed);
    }

    /// Oldest-first hand-over (`promote.rs`): while a thief asks or the deque keeps fewer than
    /// `keep` items, promotes the oldest pending in-place join half of the running fiber, if
    /// any. Not inside a schedule region, whose tasks are positioned.
    ///
    /// Never unwinds: it runs while the fiber's pending list holds the addresses of records in
    /// frames that an unwind would end without unlinking them, so a panic in here (a deque that
    /// cannot grow) aborts the process.
    #[cold]
    pub(crate) fn promote_for_thieves(&self) {
        struct AbortOnUnwind;
        impl Drop for AbortOnUnwind {
            fn drop(&mut self) {
                eprintln!("magpie: a panic while handing pending work to thieves; aborting");
                std::process::abort();
            }
        }
        let guard = AbortOnUnwind;
        self.promote_oldest_for_thieves();
        std::mem::forget(guard);
    }

    fn promote_oldest_for_thieves(&self) {
        let fl = self.fiber_local();
        if fl.in_region() {
            return;
        }
        // A thief that asked found the deque empty: refill it to twice `KEEP`, so that thieves
        // do not run dry again before this worker next looks. Unasked, keep `keep` (one): each
        // kept half that nobody takes comes back to this worker at its sync and is replaced by
        // the next oldest, so what is kept unasked is paid for again and again (`KEEP_PROMOTING`).
        // Asked, it refills as it did when it kept three: with two, loops split by joins
        // (jacobi, word-count) were 6-12% slower at 2 workers in one of two runs of the suite.
        let want = if self.core.deque.wanted() {
            2 * crate::policy::KEEP
        } else {
            self.core.keep
        };
        while self.core.deque.bottom() - self.core.deque.top() < want && promote_oldest(self, fl) {}
    }
}

/// Joins and spawns an in-place spawn's child must make for the spawns beside it to be worth
/// publishing (see "Spawns" in the module doc).
pub(crate) const WORK_BELOW: u64 = 1024;

/// The spawn-tree level of a spawn made at frame depth `depth` on the fiber `fl` belongs to:
/// the frame depth, corrected for a task published as a shallow spawn (which may run at any
/// depth).
#[inline(always)]
pub(crate) fn level(fl: &FiberLocal, depth: u32) -> u32 {
    // The offset is at least minus the depth a shallow child started at, and depth only grows
    // inside the child, so the sum is never negative.
    (depth as i32).wrapping_add(fl.level_offset.get()) as u32
}

/// Runs a published shallow spawn's child at its spawn-tree level; restores the running
/// fiber's level when dropped (also on unwinding).
pub(crate) struct AtLevel {
    fl: *const FiberLocal,
    old: i32,
}

impl AtLevel {
    /// Enters a published shallow child at `level`, on the worker that runs it. `shallow` is
    /// the level its publisher published down to: the worker that runs the child (a thief, as
    /// a rule) publishes down to it too, having been handed the lesson with the work it was
    /// learned from, rather than learning it again from its own samples.
    pub(crate) fn enter(level: u32, shallow: u32) -> AtLevel {
        let wt = crate::worker::current().expect("a scope task runs on a worker");
        if shallow > wt.lessons.shallow() {
            wt.set_shallow_spawns(shallow);
        }
        let fl = wt.fiber_local();
        let old = fl
            .level_offset
            .replace(level as i32 - fl.depth.get() as i32);
        AtLevel { fl, old }
    }
}

impl Drop for AtLevel {
    fn drop(&mut self) {
        // SAFETY: `enter` took the running fiber's local. Only a pool with oldest-first
        // hand-over publishes a task with a level, and such a pool never moves a running task
        // to another fiber or thread (no migration), so the fiber is still the one running,
        // and its local alive, when the task's frame ends.
        unsafe { &*self.fl }.level_offset.set(self.old);
    }
}

/// Items a worker's deque may hold before a shallow spawn runs in place after all (see
/// [`probe_spawn`]).
const SHALLOW_QUEUE: usize = 16;

/// One in this many adaptive spawns on credit below the publishing level is measured, within
/// [`NEAR_ROOT`] levels of the root; deeper, one in [`SAMPLE_DEEP`]. A measured spawn costs an
/// out-of-line call and a type-erased one (when it cost an allocation too, one spawn in 16 at
/// every level made fj-rec 1.19x slower at 2 workers); near the root, where the few spawns that
/// teach the level are, sampling stays dense, so that a tree like uts is learned early in a run
/// (one in 32 there left uts at 2 workers with 2-9 times help-first's steals, against 1-3).
const SAMPLE: u32 = 16;
const SAMPLE_DEEP: u32 = 128;
const NEAR_ROOT: u32 = 8;

const _: () = assert!(
    SAMPLE.is_power_of_two() && SAMPLE_DEEP.is_power_of_two() && SAMPLE <= SAMPLE_DEEP,
    "sampling by masks: SAMPLE must divide SAMPLE_DEEP"
);

/// Whether the spawn at `level`, with the worker's credit at `credit`, is one of the measured.
/// Powers of two, tested by masks, the test every spawn makes first: a remainder by a divisor
/// chosen by level compiled to a division on every spawn, and made fj-rec 1.07x slower at 2
/// workers.
#[inline(always)]
fn sampled(level: u32, credit: u32) -> bool {
    credit & (SAMPLE - 1) == 0
        && level < SHALLOW_MAX
        && (level < NEAR_ROOT || credit & (SAMPLE_DEEP - 1) == 0)
}

/// What oldest-first hand-over makes of one adaptive spawn on credit ([`probe_spawn`]):
/// publish its child, run it in place and measure it, or just run it in place.
#[derive(Clone, Copy)]
pub(crate) struct Probe {
    /// The joins and spawns this worker had run before the child (a measured spawn), or one of
    /// the markers [`PLAIN`] and [`PUBLISH`].
    before: u64,
    /// The spawn's level in its spawn tree.
    level: u32,
}

const PLAIN: u64 = u64::MAX;
const PUBLISH: u64 = u64::MAX - 1;

impl Probe {
    /// A spawn that just runs in place.
    pub(crate) const NONE: Probe = Probe {
        before: PLAIN,
        level: 0,
    };
    #[inline(always)]
    pub(crate) fn publishes(self) -> bool {
        self.before == PUBLISH
    }
    /// The level a published child runs at: one below its spawn's.
    #[inline(always)]
    pub(crate) fn child_level(self) -> u32 {
        self.level + 1
    }
    #[inline(always)]
    pub(crate) fn measures(self) -> bool {
        self.before < PUBLISH
    }
}

/// Whether a spawn on credit at frame depth `depth` may be published or measured
/// ([`probe_spawn`] decides): it lies above the publishing level, or it is the one in
/// [`SAMPLE`] within [`SHALLOW_MAX`] levels. Inline, so that the other spawns pay two compares
/// and no call.
#[inline(always)]
pub(crate) fn spawn_may_hand_over(wt: &WorkerThread, fl: &FiberLocal, depth: u32) -> bool {
    let level = level(fl, depth);
    level < wt.lessons.shallow() || sampled(level, wt.credit_left())
}

/// Oldest-first hand-over's choice for a spawn on credit at frame depth `depth` (see "Spawns"
/// in the module doc): above the publishing level an adaptive spawn publishes its child; below
/// it (within [`SHALLOW_MAX`]), one in [`SAMPLE`] is measured. Out of line and not generic, so
/// that the spawn's own code stays as it is without the option.
#[cold]
#[inline(never)]
pub(crate) fn probe_spawn(wt: &WorkerThread, fl: &FiberLocal, depth: u32, policy: Policy) -> Probe {
    if policy != Policy::Adaptive || fl.in_region() {
        // A schedule region's task publishes only through the region's own paths, which give
        // the child a ticket on the region (`position.rs`); it runs its spawns in place.
        return Probe::NONE;
    }
    let level = level(fl, depth);
    if level < wt.lessons.shallow() {
        // Shallow enough to publish, but only while the deque is short (see "Spawns" in the
        // module doc).
        if wt.core.deque.len() < SHALLOW_QUEUE {
            return Probe {
                before: PUBLISH,
                level,
            };
        }
        return Probe::NONE;
    }
    if sampled(level, wt.credit_left()) {
        return Probe {
            before: wt.ops_done(),
            level,
        };
    }
    Probe::NONE
}

/// A measured spawn's child has returned: counts it at its level; once most children measured
/// at that level made more than [`WORK_BELOW`] joins and spawns, spawns down to that level
/// publish from now on.
#[cold]
#[inline(never)]
pub(crate) fn after_measured_spawn(wt: &WorkerThread, probe: Probe) {
    // The spawn's own credit is in the count: more than WORK_BELOW.
    let big = wt.ops_done() - probe.before > WORK_BELOW;
    if wt.lessons.add_size(probe.level, big) {
        let d = probe.level + 1;
        if d > wt.lessons.shallow() {
            wt.set_shallow_spawns(d);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_denser_near_the_root_and_stops_at_the_shallow_bound() {
        let near = (0..1024).filter(|&c| sampled(1, c)).count();
        let deep = (0..1024).filter(|&c| sampled(NEAR_ROOT, c)).count();
        assert_eq!(near, 1024 / SAMPLE as usize);
        assert_eq!(deep, 1024 / SAMPLE_DEEP as usize);
        assert!((0..1024).all(|c| !sampled(SHALLOW_MAX, c)));
    }
}
