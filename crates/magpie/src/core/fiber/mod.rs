//! Fibers: the stacks tasks run on, how a task suspends and how it is made ready again.
//!
//! SLAW (Algorithm 1 and Subroutine 1) suspends a task at a sync point whose children are not
//! done, and preempts the parent at a work-first spawn. Both need the parent's activation frames
//! to be resumable later. magpie runs every task on a *fiber*, a stackful coroutine from
//! `corosensei` with its own mmap'd stack and guard page; each worker thread's own stack holds
//! only a small *dispatcher* (`main_loop::worker_main`):
//!
//! ```text
//!  worker thread (native stack): dispatcher loop ── resumes ──▶ fiber (loop fiber running tasks)
//!        ▲                                                         │ yields an Action:
//!        └──────────── SpawnWf(child) · Wait(latch) · Switch(fiber) ◀┘
//! ```
//!
//! * A *loop fiber* runs the scheduling loop (`main_loop::run_loop`): its own ready fibers and
//!   inbox, then its deque, then steal, then sleep. Tasks it finds run inline on it, nested as
//!   plain calls.
//! * `Wait(latch)`: a task at a sync point whose work was taken suspends its fiber. The dispatcher
//!   registers the fiber in the latch (only now, when it is fully suspended) and continues with a
//!   spare loop fiber. Whoever sets the latch makes the fiber ready ([`make_ready`], SLAW's "the
//!   last child resumes the parent") by handing it to its *home*, the worker whose thread
//!   suspended it: on that worker's ready list if the setter is that worker, else through its
//!   inbox, waking it. A waiting task never blocks its thread, and runs on top of itself only
//!   work that it or its descendants pushed since it last ran (see `sync_point::SyncMark`).
//! * `SpawnWf(child)`: a work-first scope spawn whose stack is full preempts the parent: the
//!   dispatcher starts the child on a spare fiber, which first puts the parent on the worker's
//!   ready list (`WorkerThread::publish_continuation`), then runs the child. The loop resumes the
//!   parent when the child returns or suspends: the sequential order.
//! * `Switch(fiber)`: a loop fiber took a ready fiber; it parks itself as a spare and the
//!   dispatcher resumes the target.
//!
//! **A fiber never changes thread.** Every fiber is created by one worker, parked among that
//! worker's spares, and resumed only by that worker's dispatcher, so the code after a sync point
//! runs on the thread that ran the code before it, and a task may hold values that are not
//! `Send` (an `Rc`, a `MutexGuard`, a `thread_local!` borrow) across one, as on any thread. What
//! moves between threads is only work that has not started: a join half, a spawned child. With
//! `Builder::allow_migration` (an `unsafe` opt-in) ready fibers go on the setter's deque and
//! preempted parents are published as continuations, which any worker may take, as in SLAW.
//!
//! Each fiber keeps a [`FiberLocal`] record in its own stack (frame depth, how often it was
//! resumed, stack bounds); the worker points at the record of the fiber it runs. Code on a fiber
//! that finds its record's resume count unchanged knows nothing else ran on its worker in
//! between, so the `join` fast path looks the worker up once. Anywhere else, code re-reads the
//! current worker after anything that may suspend, through `worker::current`, which is never
//! inlined, so no thread-local address is cached across a suspension (which only matters when
//! migration is allowed).
//!
//! A task whose own recursion overflows its fiber's stack hits the guard page; [`overflow`] turns
//! that fault into a clear message.

#[cfg(unix)]
pub(crate) mod overflow;

/// Elsewhere no handler is installed: a task that overflows its fiber stack still hits the
/// guard page, and the process then ends the platform's way (on Windows with a stack overflow
/// exception, which Rust's runtime may report as the thread's own stack overflowing), without
/// magpie's message.
#[cfg(not(unix))]
pub(crate) mod overflow {
    /// Installs nothing (see the module documentation).
    pub(crate) fn install() {}
}

use crate::error::Error;
use crate::job::{JobRef, Tag, Work};
use crate::latch::Latch;
use crate::registry::Registry;
use crate::sync::atomic::Ordering;
use crate::worker::{current, WorkerThread};
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;

/// A worker's fibers other than the one running (`WorkerThread::fibers`).
pub(crate) struct Fibers {
    /// A work-first parent waiting to be made ready by the child's frame.
    pending_cont: Cell<Option<FiberPtr>>,
    /// Ready fibers of this worker made ready by this worker itself (a local delivery, which
    /// needs no lock): taken before the inbox and the deque.
    ready: RefCell<VecDeque<FiberPtr>>,
    /// Fibers kept for reuse. Boxed: a fiber's address goes into latches and deque items, so
    /// it must not move.
    #[allow(clippy::vec_box)]
    spares: RefCell<Vec<Box<Fiber>>>,
    /// A work-first parent whose child has just returned on the fiber that ran it: popping its
    /// continuation next is the sequential order, not an early resumption (tracing only).
    serial_cont: Cell<Option<FiberPtr>>,
}

impl Fibers {
    pub(crate) fn new() -> Fibers {
        Fibers {
            pending_cont: Cell::new(None),
            ready: RefCell::new(VecDeque::new()),
            spares: RefCell::new(Vec::new()),
            serial_cont: Cell::new(None),
        }
    }

    /// Sets the work-first parent that the child's frame makes ready
    /// (`WorkerThread::publish_continuation`).
    pub(crate) fn set_pending_cont(&self, f: FiberPtr) {
        self.pending_cont.set(Some(f));
    }

    /// Marks `f`, a work-first parent whose child has just returned on the fiber that ran it,
    /// as the sequential order's next step (tracing only).
    pub(crate) fn set_serial_cont(&self, f: FiberPtr) {
        self.serial_cont.set(Some(f));
    }

    /// Takes the mark `set_serial_cont` left, if any.
    pub(crate) fn take_serial_cont(&self) -> Option<FiberPtr> {
        self.serial_cont.take()
    }

    /// Puts `f`, a ready fiber of this worker, first on its ready list.
    pub(crate) fn make_ready_here(&self, f: FiberPtr) {
        self.ready.borrow_mut().push_front(f);
    }

    /// Whether a fiber made ready here waits to run.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.borrow().is_empty()
    }

    /// Whether nothing of this worker's fibers waits: none ready, no parent pending.
    pub(crate) fn none_waiting(&self) -> bool {
        !self.has_ready() && self.pending_cont.get().is_none()
    }

    /// Puts `spares` in place of the worker's spare fibers and returns those.
    #[allow(clippy::vec_box)]
    pub(crate) fn swap_spares(&self, spares: Vec<Box<Fiber>>) -> Vec<Box<Fiber>> {
        std::mem::replace(&mut *self.spares.borrow_mut(), spares)
    }
}

/// Spare loop fibers a worker keeps whole for reuse.
const MAX_SPARES: usize = 32;

/// Spare loop fibers a worker keeps in all, at most: those past [`MAX_SPARES`] are trimmed when
/// parked ([`WorkerThread::park`]).
///
/// A program that suspends many tasks at once on one worker (a left-deep chain of joins whose
/// leaves thieves take: docs/RESULTS.md, "A left-deep chain of joins") needs as many fibers
/// again each time; with 32 spares it mapped and unmapped hundreds of stacks a run. A spare is
/// kept only when a fiber is parked, so a worker never keeps more spares than it had fibers at
/// once. Trimming gives the stack's dead pages back to the OS (see [`Fiber::trim`]), so a
/// trimmed spare holds only the pages of its own few frames. Spares count towards the pool's
/// `max_fibers`, so a worker keeps no more than its share of half of that.
const MAX_TRIMMED_SPARES: usize = 1024;

/// Bytes below a parked fiber's last recorded frame that trimming leaves alone: the frames of
/// the switch itself (`Yielder::suspend`), which lie below the mark.
const TRIM_MARGIN: usize = 16 * 1024;

/// Stacks of finished fibers kept by the thread that dropped them, for the next fiber it makes.
///
/// A fiber whose coroutine has returned has no frames left on its stack, so the stack is plain
/// memory: it may serve a new coroutine on any thread. Workers keep whole fibers as spares
/// ([`WorkerThread::park`]); what ends here is the loop fiber of a call that runs its work on
/// the calling thread (`caller_worker.rs`, `borrowed_seat.rs`), which returns when the call
/// leaves the pool. Without the cache every such call mapped a stack, protected its guard page
/// and unmapped it again: three system calls, most of the cost of a call on a small input.
mod stack_cache {
    use corosensei::stack::DefaultStack;
    use std::cell::RefCell;

    /// Stacks a thread keeps: a call suspended at a few joins at once needs a few.
    const KEEP: usize = 8;

    thread_local! {
        /// Each stack with the size it was asked for.
        static STACKS: RefCell<Vec<(usize, DefaultStack)>> = const { RefCell::new(Vec::new()) };
    }

    /// A kept stack made for `size`, if this thread has one.
    pub(super) fn take(size: usize) -> Option<DefaultStack> {
        STACKS
            .try_with(|s| {
                let mut s = s.borrow_mut();
                let i = s.iter().rposition(|(n, _)| *n == size)?;
                Some(s.swap_remove(i).1)
            })
            .ok()
            .flatten()
    }

    /// Keeps `stack`, made for `size` and whose coroutine has returned, for this thread's next
    /// fiber, or unmaps it.
    pub(super) fn give(size: usize, stack: DefaultStack) {
        let _ = STACKS.try_with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < KEEP {
                s.push((size, stack));
            }
        });
    }
}

/// Bytes that must be left on a fiber's stack for a spawn to run its child inline.
pub(crate) const STACK_RESERVE: usize = 64 * 1024;

pub(crate) type Co = Coroutine<Cmd, Action, (), DefaultStack>;

/// What the dispatcher tells a fiber when it resumes it.
pub(crate) enum Cmd {
    /// To a loop fiber: run this job first (a work-first child, with the parent's fiber to publish
    /// as a continuation and the parent's frame depth), then run the scheduling loop.
    Run(Option<(JobRef, FiberPtr, u32)>),
    /// To a suspended task: carry on.
    Continue,
    /// To a spare loop fiber: return (the pool is shutting down or has spares to spare).
    Exit,
}

/// What a fiber asks of the dispatcher when it yields.
pub(crate) enum Action {
    /// A work-first child, and the tag of the spawn (the parent's continuation's identity).
    SpawnWf(JobRef, Tag),
    /// Wait on a latch at the sync point named by the tag. The floor is the deque's bottom when
    /// the sync point began (`SyncMark::bottom`): what lies above it was pushed by the waiting
    /// task's subtree (`leapfrog.rs`); none: the bottom as the fiber suspends. The key names
    /// the sync point in the lineage of the work it waits for (`job::Lineage::key`).
    Wait(*const Latch, Tag, Option<isize>, usize),
    /// Resume this ready fiber (the loop fiber that found it parks itself).
    Switch(FiberPtr),
    /// A lent thread goes back to its caller (`caller_worker.rs`, `borrowed_seat.rs`): the loop
    /// fiber parks itself as a spare, and the dispatcher returns.
    Leave,
}

/// A stackful coroutine with its own stack, owned by whoever holds the box: the dispatcher while it
/// runs, a latch while it waits, a deque item while it is ready.
pub(crate) struct Fiber {
    /// Taken out only when the fiber is dropped (see [`stack_cache`]).
    pub(crate) co: std::mem::ManuallyDrop<Co>,
    /// Lowest address of the stack's mapping (its guard page starts here). Read only by
    /// [`Fiber::trim`], which does nothing off Unix.
    #[cfg_attr(not(unix), allow(dead_code))]
    guard_low: usize,
    pub(crate) registry: *const Registry,
    /// The worker that created the fiber and the only one that resumes it (unless the pool
    /// allows migration): its thread is the one the fiber's stack runs on.
    pub(crate) home: usize,
    /// Set when the fiber suspended waiting at a sync point (and cleared when it is resumed), so
    /// that the switch back into it is counted as a victim's cost when overheads are measured.
    pub(crate) waited: Cell<bool>,
    /// When tracing: the event at which the fiber was published (a work-first continuation) or
    /// the sync point at which it suspended, and which of the two (`at_sync`).
    pub(crate) tag: Cell<Tag>,
    pub(crate) at_sync: Cell<bool>,
}

/// A fiber handed around as a typed pointer: by a latch that holds its waiter, an inbox or a
/// deque item that holds a ready fiber, the dispatcher that resumes it. Whoever holds the pointer
/// owns the `Box<Fiber>` it came from; exactly one holder turns it back into the box.
///
/// `Fiber` is not `Send` (`corosensei`'s `Coroutine` is not, since its stack may hold anything),
/// and a `FiberPtr` is only an address: crossing threads as one gives no access to the fiber.
/// Only its home worker's dispatcher resumes it ([`make_ready`]); with `Builder::allow_migration`
/// any worker may, on the caller's promise.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct FiberPtr(std::ptr::NonNull<Fiber>);

impl FiberPtr {
    pub(crate) fn from_box(f: Box<Fiber>) -> FiberPtr {
        FiberPtr(std::ptr::NonNull::from(Box::leak(f)))
    }

    /// # Safety
    /// The pointer came from `from_box` and no other holder turns it back into the box.
    pub(crate) unsafe fn into_box(self) -> Box<Fiber> {
        // SAFETY: by the caller's contract, the box is ours alone.
        unsafe { Box::from_raw(self.0.as_ptr()) }
    }

    /// The fiber's shared fields.
    ///
    /// # Safety
    /// The fiber is alive: it is suspended and its box has not been turned back yet.
    pub(crate) unsafe fn get<'a>(self) -> &'a Fiber {
        // SAFETY: by the caller's contract the box is alive; only `Cell`s are read through it,
        // by the one thread that holds the pointer.
        unsafe { self.0.as_ref() }
    }

    /// The address, for a latch's waiter word or a deque item (fibers are 8-aligned).
    pub(crate) fn addr(self) -> usize {
        self.0.as_ptr() as usize
    }

    /// # Safety
    /// `a` is the [`addr`](Self::addr) of a live `FiberPtr`, whose ownership the caller now takes.
    pub(crate) unsafe fn from_addr(a: usize) -> FiberPtr {
        // SAFETY: the address of a box is never null.
        FiberPtr(unsafe { std::ptr::NonNull::new_unchecked(a as *mut Fiber) })
    }
}

impl Drop for Fiber {
    fn drop(&mut self) {
        // SAFETY: `co` is taken once, here, and the fiber is not used again.
        let co = unsafe { std::mem::ManuallyDrop::take(&mut self.co) };
        // SAFETY: the registry outlives its fibers (fibers are dropped by its worker threads).
        let reg = unsafe { &*self.registry };
        if co.done() {
            stack_cache::give(reg.config.stack_size, co.into_stack());
        }
        reg.live_fibers
            // Relaxed: a count for a soft limit (`fiber_limit_reached`); it publishes nothing.
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// A fiber's own state, in its own stack (so it travels with the fiber).
///
/// Aligned to two cache lines, so that nothing else on the stack shares its lines: it sits in
/// the frame of `main_loop::fiber_main`, just above the frames of the tasks the scheduling loop
/// runs, whose join halves and latches thieves write, while its owner writes `depth` on every
/// join. Unaligned, adding 16 bytes to it (`837dff0`) made fj at 2 workers 1.5-1.8x slower
/// (medians of eight alternating processes: 0.042 s against 0.028 s before it and 0.027 s
/// aligned).
#[repr(align(128))]
pub(crate) struct FiberLocal {
    pub(crate) yielder: *const Yielder<Cmd, Action>,
    /// Lowest usable stack address.
    pub(crate) stack_limit: usize,
    /// `stack_limit + STACK_RESERVE`: the lowest address a join's frame may lie at and still
    /// leave the reserve below it (`has_reserve` compares with it directly).
    pub(crate) reserve_limit: usize,
    /// Lowest address of the stack's mapping: its guard page starts here.
    #[cfg_attr(not(unix), allow(dead_code))] // read only by the Unix overflow handler
    pub(crate) guard_low: usize,
    /// Task frames on this fiber's logical stack (SLAW's on-stack frames).
    pub depth: Cell<u32>,
    /// Bumped each time the fiber is resumed after a suspension. A sync point that sees the same
    /// count as when it pushed knows that nothing else ran on its worker in between, so the items
    /// pushed since are its own descendants and the worker is the same.
    pub resumed: Cell<u64>,
    /// The position of the region task running on this fiber, when its joins and spawns must
    /// be positioned (`position.rs`); null otherwise. What joins and in-place spawns test.
    pub(crate) pos: Cell<*const crate::position::RegionCursor>,
    /// What the schedule region knows of the task running on this fiber
    /// (`position::At`): nothing (zero: not a region task), its cursor (`pos`), or the
    /// region of a region task without a cursor, whose published spawns hold the region open.
    /// What a spawn that cannot run on the credit tests, once for both.
    pub(crate) region_task: Cell<crate::position::At>,
    /// The tracked cursor's level words, as `position::Track` (unused otherwise).
    pub(crate) track: Cell<crate::position::Track>,
    /// The youngest pending in-place join on this fiber whose unstarted half may be handed to
    /// a thief (`promote.rs`); null when none.
    pub(crate) pending: Cell<*const Pending>,
    /// The running task's level in its spawn tree minus its frame depth (`promote.rs`,
    /// "Spawns"): 0 unless the task was published as a shallow spawn.
    pub(crate) level_offset: Cell<i32>,
    /// The address of a local in the scheduling loop's frame, set as the fiber parks itself to
    /// switch to a ready fiber: every live frame of the parked fiber lies above it, except the
    /// switch's own, within [`TRIM_MARGIN`] below it ([`WorkerThread::park`]).
    pub(crate) parked_at: Cell<usize>,
    /// The race checker's context of the task running on this fiber (`hooks::Structure`);
    /// null when the pool does not check or the task began outside a checked call.
    pub(crate) checked: Cell<*mut ()>,
    /// The `wanted` flag of the deque of the worker running this fiber (`Deque::wanted_flag`),
    /// set whenever the fiber starts a task or resumes: read by the in-place join that records
    /// its pending half (`join::in_place_pending`), which then need not keep its worker in a
    /// register across the first half.
    pub(crate) wanted: Cell<*const crate::sync::atomic::AtomicBool>,
    /// The lineage of the published task running on this fiber (`leapfrog.rs`), which its
    /// joins and scopes hand to what they publish: set by whoever starts a published task
    /// here and put back when it returns; null for a root.
    pub(crate) lineage: Cell<*const crate::job::Lineage>,
}

impl FiberLocal {
    /// Whether the task running on this fiber belongs to a schedule region (one test of a word
    /// against zero: what a spawn that cannot run on the credit pays for regions).
    #[inline(always)]
    pub(crate) fn in_region(&self) -> bool {
        !self.region_task.get().is_none()
    }

    /// The cursor of the region task running on this fiber, if its work must be positioned.
    #[inline]
    pub(crate) fn cursor(&self) -> Option<&crate::position::RegionCursor> {
        // SAFETY: `pos` is set by `position::run` to a cursor in the frame of the task
        // running on this fiber, and reset before that frame ends.
        unsafe { self.pos.get().as_ref() }
    }

    /// The region of the task running on this fiber, if it is a region task without a cursor.
    #[inline]
    pub(crate) fn uncounted(&self) -> Option<&crate::position::Region> {
        // SAFETY: `region_task` is set by `position::run` (and `Ticket::run`) for the
        // task running on this fiber, and put back before that task's frame ends.
        unsafe { self.region_task.get().uncounted() }
    }

    /// The level word of the in-place task running at frame depth `depth` below the tracked
    /// cursor of this fiber's region task, if there is one with a level below it left
    /// (`position::Track::at`). Read from the fiber's own record rather than through
    /// the cursor: one dependent load fewer on every tracked join.
    #[inline(always)]
    pub(crate) fn level(&self, depth: u32) -> Option<crate::position::Level> {
        self.track.get().at(depth)
    }

    /// [`level`](Self::level) once more, without its range check.
    ///
    /// # Safety
    ///
    /// The caller's frame got `Some` from `level(depth)` on this fiber, and the cursor it came
    /// from is still installed (see `Track::again`).
    #[inline(always)]
    pub(crate) unsafe fn level_again(&self, depth: u32) -> crate::position::Level {
        // SAFETY: the caller's obligation, as `Track::again` states it.
        unsafe { self.track.get().again(depth) }
    }
}

impl FiberLocal {
    /// Whether a thief has asked this fiber's worker for work (its deque's `wanted` flag).
    #[inline(always)]
    pub(crate) fn thief_asked(&self) -> bool {
        // SAFETY: `wanted` is set to the flag of the deque of the worker running this fiber
        // whenever the fiber starts a task (`main_loop::fiber_main`) or resumes (`suspend`), so
        // while a task runs it is its worker's, and a worker's deque outlives every task it
        // runs.
        let flag = unsafe { &*self.wanted.get() };
        // Relaxed: a request carries no data (deque.rs, "Hints").
        flag.load(crate::sync::atomic::Ordering::Relaxed)
    }

    /// Whether at least `STACK_RESERVE` bytes are left below the caller's frame: `stack_left() >=
    /// STACK_RESERVE` as one compare with a bound computed when the fiber started (on the spawn
    /// fast path, the subtraction with saturation cost fib(36) 7% at one worker, and the add of
    /// the reserve two instructions a join).
    #[inline(always)]
    pub(crate) fn has_reserve(&self) -> bool {
        let here = 0u8;
        std::ptr::addr_of!(here) as usize >= self.reserve_limit
    }

    /// Bytes left on this fiber's stack below the caller's frame.
    #[inline(always)]
    pub(crate) fn stack_left(&self) -> usize {
        let here = 0u8;
        (std::ptr::addr_of!(here) as usize).saturating_sub(self.stack_limit)
    }
}

/// The header of a pending in-place join, in the join's frame: the links of a fiber's chain of
/// pending joins ([`FiberLocal::pending`]). Oldest-first hand-over (`promote.rs`) writes and
/// reads it; it is declared here, with the chain it forms, so the fiber's record names no
/// module above it.
pub(crate) struct Pending {
    /// The next older pending join on the same fiber (null for none).
    pub(crate) link: Cell<*const Pending>,
    /// Pushes the half (`this` is the header's own address); `None` once
    /// `promote::promote_oldest` has pushed it for thieves. A join nobody asks for thus tests
    /// the word it wrote, and unlinks itself with the link as it is, no flag to mask off.
    pub(crate) promote: Cell<Option<PromoteFn>>,
}

/// How a [`Pending`] header's half is pushed for thieves.
pub(crate) type PromoteFn = unsafe fn(this: *const Pending, wt: &WorkerThread, fl: &FiberLocal);

/// What a new fiber's stack runs: the yielder, the first command, the stack's guard address and
/// its usable limit (`main_loop::fiber_main`).
pub(crate) type FiberEntry = fn(&Yielder<Cmd, Action>, Cmd, usize, usize);

impl Fiber {
    /// A fiber of worker `home` whose stack will run `entry` (`main_loop::fiber_main`, handed in
    /// so this module does not name the loop above it) from its first resumption.
    pub(crate) fn new(
        reg: &Arc<Registry>,
        home: usize,
        entry: FiberEntry,
    ) -> Result<Box<Fiber>, Error> {
        let stack = match stack_cache::take(reg.config.stack_size) {
            Some(s) => s,
            None => DefaultStack::new(reg.config.stack_size)
                .map_err(|e| Error::Os(format!("cannot map a fiber stack: {e}")))?,
        };
        // The limit includes the guard page; keep one more page of slack.
        let guard_low = stack.limit().get();
        let limit = guard_low + 2 * 4096;
        let co = Co::with_stack(stack, move |y: &Yielder<Cmd, Action>, first: Cmd| {
            entry(y, first, guard_low, limit)
        });
        // Relaxed: a count for a soft limit (`fiber_limit_reached`); it publishes nothing.
        reg.live_fibers.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(Fiber {
            co: std::mem::ManuallyDrop::new(co),
            guard_low,
            registry: Arc::as_ptr(reg),
            home,
            waited: Cell::new(false),
            tag: Cell::new(Tag::NONE),
            at_sync: Cell::new(false),
        }))
    }
}

impl WorkerThread {
    /// Makes the pending work-first parent ready (called by the child's frame after it has
    /// taken its closure out of the parent's stack): on this worker's own ready list, so only
    /// this worker resumes it, or, when the pool allows migration, on its deque as a
    /// continuation thieves may steal.
    pub(crate) fn publish_continuation(&self) {
        if let Some(c) = self.fibers.pending_cont.take() {
            if self.core.registry.config.migrate {
                self.push(Work::Resume(c));
            } else {
                self.fibers.ready.borrow_mut().push_back(c);
            }
        }
    }

    /// The next fiber or item only this worker may run: its own ready list, then its inbox.
    #[inline]
    pub(crate) fn take_own(&self) -> Option<Work> {
        if let Some(f) = self.fibers.ready.borrow_mut().pop_front() {
            return Some(Work::Resume(f));
        }
        self.core.registry.inboxes[self.core.index]
            .pop()
            .map(Work::decode)
    }
    /// Ends this worker's spare fibers, each unwinding its scheduling loop. Called on the
    /// worker's thread with `self` current, once nothing will run on this worker again.
    pub(crate) fn exit_spares(&self) {
        for mut f in self.fibers.spares.borrow_mut().drain(..) {
            let _ = f.co.resume(Cmd::Exit);
        }
    }
    /// A spare fiber of this worker, or a new one whose stack runs `entry`.
    pub(crate) fn take_fiber(&self, entry: FiberEntry) -> Box<Fiber> {
        if let Some(f) = self.fibers.spares.borrow_mut().pop() {
            return f;
        }
        match Fiber::new(&self.core.registry, self.core.index, entry) {
            Ok(f) => {
                self.stats().fibers_created.bump();
                f
            }
            Err(e) => {
                // The OS refused a stack while a task waits: nothing sensible can continue.
                eprintln!("magpie: fatal: {e}");
                std::process::abort();
            }
        }
    }

    /// Keeps `f` as a spare, or ends it when the worker has all the spares it may keep.
    ///
    /// `parked_at` is the fiber's [`FiberLocal::parked_at`] when it parked itself from the
    /// scheduling loop (its tasks' frames have all returned), and `None` for a fiber that never
    /// ran or is parked where it was when taken. Past [`MAX_SPARES`] such a fiber is trimmed.
    pub(crate) fn park(&self, mut f: Box<Fiber>, parked_at: Option<usize>) {
        let mut s = self.fibers.spares.borrow_mut();
        if s.len() < MAX_SPARES {
            s.push(f);
        } else if s.len() < self.most_spares() {
            if let Some(mark) = parked_at {
                // SAFETY: `mark` is the fiber's own `parked_at`, recorded in its scheduling
                // loop just before it parked: its live frames lie above `mark - TRIM_MARGIN`.
                unsafe { f.trim(mark.saturating_sub(TRIM_MARGIN)) };
                self.stats().fibers_trimmed.bump();
            }
            s.push(f);
        } else {
            drop(s);
            let r = f.co.resume(Cmd::Exit);
            debug_assert!(matches!(r, CoroutineResult::Return(())));
        }
    }
}

impl WorkerThread {
    /// The spares this worker may keep: [`MAX_TRIMMED_SPARES`], but no more than its share of
    /// half the pool's `max_fibers` (spares are live fibers, and a work-first spawn that needs a
    /// fresh one must not find the budget taken by spares), and never fewer than [`MAX_SPARES`].
    fn most_spares(&self) -> usize {
        let c = &self.core.registry.config;
        (c.max_fibers / (2 * c.workers.max(1))).clamp(MAX_SPARES, MAX_TRIMMED_SPARES)
    }
}

impl Fiber {
    /// Gives the pages of this fiber's stack below `below` back to the OS (`MADV_DONTNEED`): they
    /// stay mapped, and read as zeros when next touched. Used on spares, whose tasks' frames
    /// have returned, so that a spare holds only the pages of the frames it still has.
    ///
    /// # Safety
    ///
    /// The fiber is suspended, and no live frame of it, nor anything a live reference points
    /// to, lies in its stack below `below`.
    #[cfg(unix)]
    unsafe fn trim(&mut self, below: usize) {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let start = self.guard_low + page; // above the guard page
        let end = below & !(page - 1);
        if end > start {
            // SAFETY: [start, end) is inside this fiber's own stack mapping, above its guard
            // page, page-aligned; by the caller's obligation nothing live is there, and an
            // anonymous private mapping's pages read as zeros after `MADV_DONTNEED` (on Linux;
            // macOS may leave their old contents), so the fiber's later frames find ordinary
            // stack there.
            let r = unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED)
            };
            debug_assert_eq!(r, 0, "madvise of a spare's stack failed");
        }
    }

    /// Elsewhere a no-op: there is no `madvise`, and the stack's pages stay committed, so a
    /// spare keeps the pages its earlier tasks touched until its stack is freed.
    ///
    /// # Safety
    ///
    /// As on Unix (nothing is done, so nothing can go wrong).
    #[cfg(not(unix))]
    unsafe fn trim(&mut self, _below: usize) {}
}

/// Suspends the current fiber with `action` and returns what it was resumed with, possibly on
/// another thread. On resumption the fiber counts the resumption and points its (possibly new)
/// worker at its record.
#[inline(never)]
pub(crate) fn suspend(action: Action) -> Cmd {
    let wt = current().expect("magpie: suspend outside a worker");
    wt.flush_finished();
    let fl = wt.fiber_local();
    // SAFETY: the yielder lives in this fiber's stack, which is the stack we are running on.
    let cmd = unsafe { &*fl.yielder }.suspend(action);
    fl.resumed.set(fl.resumed.get() + 1);
    let wt = current().expect("magpie: resumed outside a worker");
    wt.core.fiber.set(fl);
    fl.wanted.set(wt.core.deque.wanted_flag());
    wt.switch_landed();
    cmd
}

/// Waits at a sync point without popping anything: returns at once if the latch is set, otherwise
/// suspends the fiber until the latch's setter makes it ready.
/// `floor` is the deque's bottom when the sync point began, if it pushed work, and `key` the
/// sync point's name in the lineage of what it waits for (see [`Action::Wait`]).
pub(crate) fn suspend_until(latch: &Latch, tag: Tag, floor: Option<isize>, key: usize) {
    if !latch.probe() {
        suspend(Action::Wait(latch, tag, floor, key));
        debug_assert!(latch.probe());
    }
}

/// [`suspend_until`] at a sync point whose work a thief took: when the pool measures overheads,
/// the switch out of the task and the later switch back into it are counted as the victim's.
pub(crate) fn suspend_until_stolen(latch: &Latch, tag: Tag, floor: Option<isize>) {
    suspend_until_keyed(latch, tag, floor, latch as *const Latch as usize);
}

/// [`suspend_until_stolen`] at a sync point named `key` in the lineage of what it waits for.
pub(crate) fn suspend_until_keyed(latch: &Latch, tag: Tag, floor: Option<isize>, key: usize) {
    if !latch.probe() {
        if let Some(wt) = current() {
            wt.victim_switch_begins();
        }
        suspend(Action::Wait(latch, tag, floor, key));
        debug_assert!(latch.probe());
    }
}

/// Makes a suspended fiber runnable; `waiter` is the word a latch handed to its setter.
///
/// The fiber goes home: to the ready list of the worker that suspended it, if that is the
/// caller, or else to that worker's inbox, waking it. Only its home resumes it, so the code after
/// a sync point runs on the thread that ran the code before it. With `Builder::allow_migration`
/// it goes on the caller's deque instead (or its own pool's queue), where any worker may take it.
///
/// A caller that is not a worker of the fiber's pool (a worker of another pool, which ran the
/// fiber's install into that pool, or a plain thread) holds a reference count on the pool's
/// registry from before it hands the fiber over until it has woken the worker. Without it the
/// fiber could be taken, finish its install, and the pool be dropped and freed while the caller
/// is still between the hand-over and the wake-up (the inbox's count, the sleep state): a
/// worker of the pool itself needs none, because a pool is freed only after its workers have
/// been joined.
pub(crate) fn make_ready(waiter: usize) {
    // SAFETY: a latch's waiter word is only ever the address of a fiber the dispatcher
    // registered (`FiberPtr::addr`), and the setter that got it back now owns it.
    let fiber = unsafe { FiberPtr::from_addr(waiter) };
    // SAFETY: the fiber is suspended and ours; we read two plain fields.
    let (reg, home) = unsafe { (fiber.get().registry, fiber.get().home) };
    match current().filter(|wt| Arc::as_ptr(&wt.core.registry) == reg) {
        Some(wt) if wt.core.registry.config.migrate => wt.push(Work::Resume(fiber)),
        Some(wt) if wt.core.index == home => wt.fibers.ready.borrow_mut().push_back(fiber),
        Some(wt) => wt.core.registry.deliver(home, Work::Resume(fiber).encode()),
        None => {
            // SAFETY: `reg` is `Arc::as_ptr` of the registry that made the fiber (`Fiber::new`),
            // and that registry is alive while the fiber is suspended and not yet handed over:
            // the install the fiber runs under has not returned, so its pool is not dropped.
            // Incrementing the count then rebuilding one `Arc` from the pointer gives this thread
            // a count of its own, released when `registry` goes out of scope.
            let registry = unsafe {
                Arc::increment_strong_count(reg);
                Arc::from_raw(reg)
            };
            if registry.config.migrate {
                registry.inject(Work::Resume(fiber).encode());
            } else {
                registry.deliver(home, Work::Resume(fiber).encode());
            }
        }
    }
}
