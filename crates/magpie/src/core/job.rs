//! Task frames: what a deque item points at, and how it runs.
//!
//! A deque item is two words. A runnable task is `(data, entry)`: `entry(data)` runs it. A suspended
//! fiber that is ready to continue (a work-first parent's continuation, or a task whose sync point
//! completed) is `(fiber, 0)`; a batch of items handed to a thief at once is `(batch | 1, 0)`. Bit 0 of a task's `data` marks a *continuation* task (the half of a
//! `join` that a work-first spawn leaves for thieves) so steal statistics can tell children from
//! continuations; task frames are at least 8-aligned, so the bit is free.
//!
//! * [`StackJob`]: a `join` half, living in the joining task's stack frame. That frame stays alive
//!   until the job has run: the joiner either pops it back or waits on its latch (suspending its
//!   fiber, so the frame is kept).
//! * [`HeapJob`]: a help-first scope spawn, boxed because it may outlive the spawning frame (with
//!   a tracing tag only in a tracing pool).
//! * The work-first scope spawn's frame lives in the suspended parent's stack; see `scope.rs`.

use crate::deque::Item;
use crate::latch::Latch;
use crate::leapfrog::Top;
use std::any::Any;
use std::cell::Cell;
use std::cell::UnsafeCell;
use std::panic::{self, AssertUnwindSafe};

pub(crate) use crate::hooks::Tag;

pub(crate) type Panic = Box<dyn Any + Send + 'static>;

/// Where a published task frame stands in the task tree, for the leapfrogging rule
/// (`leapfrog.rs`): `key` names the sync point that waits for the frame (the address of the latch
/// its publisher suspends on, if it must), and `up` is the lineage of the task inside whose run
/// that sync point lies (null: a root, from outside the pool). Every task frame starts with a
/// pointer to its lineage (null for none), written before the frame is published; nodes live in
/// frames that outlive every frame below them (see `leapfrog.rs`, "Why the chain stays valid").
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Lineage {
    pub(crate) key: usize,
    pub(crate) up: *const Lineage,
}

impl Lineage {
    /// The node of a frame waited for at the latch `key`, published by a task whose own lineage
    /// is `up`.
    pub(crate) fn new(key: *const Latch, up: *const Lineage) -> Lineage {
        Lineage {
            key: key as usize,
            up,
        }
    }
}

/// Whether the task whose lineage is `l` descends from the sync point `key`: whether `key`
/// names one of the sync points on its chain.
///
/// # Safety
/// `l` is null or the lineage of a task frame that has not finished running (see
/// `leapfrog.rs`: then every node on its chain is alive and was written before the frame was
/// published).
pub(crate) unsafe fn descends(mut l: *const Lineage, key: usize) -> bool {
    // SAFETY: the caller's promise covers `l`, and each node's `up` is the lineage of a task
    // that is still running, because this one, below it, has not finished.
    while let Some(n) = unsafe { l.as_ref() } {
        if n.key == key {
            return true;
        }
        l = n.up;
    }
    false
}

/// A pointer to a runnable task frame and its entry function. Two refs are the same job when they
/// point at the same frame (a frame address names one live job).
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobRef {
    data: *const (),
    entry: unsafe fn(*const ()),
}

// SAFETY: a JobRef is handed between workers by design; each frame type documents why running it
// on another thread is sound (its closure is `Send`).
unsafe impl Send for JobRef {}

impl PartialEq for JobRef {
    fn eq(&self, o: &JobRef) -> bool {
        std::ptr::eq(self.data, o.data)
    }
}

impl JobRef {
    /// # Safety
    /// `data` must stay valid until `entry(data)` has been called once.
    pub(crate) unsafe fn new(data: *const (), entry: unsafe fn(*const ())) -> JobRef {
        JobRef { data, entry }
    }
    /// # Safety
    /// Must be called exactly once per job.
    #[inline]
    pub(crate) unsafe fn execute(self) {
        // SAFETY: `entry` was paired with `data` by `new`, whose caller promised `data` stays
        // valid until this one call; ours promises it is the one call.
        unsafe { (self.entry)(self.data) }
    }

    /// The tracing tag of the frame.
    ///
    /// # Safety
    /// The frame must be a live `StackJob`, install job or, in a tracing pool, a `HeapJob`
    /// boxed with a tag (all `repr(C)` with the tag second, after the lineage pointer, written
    /// before the frame was published). Only a tracing pool reads tags.
    pub(crate) unsafe fn tag(self) -> Tag {
        // SAFETY: by the caller's contract the frame is live and holds its tag one word in.
        unsafe { *((self.data as *const u8).add(std::mem::size_of::<usize>()) as *const Tag) }
    }

    /// The frame's lineage (`leapfrog.rs`): null when it has none.
    ///
    /// # Safety
    /// The frame has not finished running (a taker holds its item, or it is running): every
    /// task frame is `repr(C)` with its lineage pointer first, written before it was published.
    pub(crate) unsafe fn lineage(self) -> *const Lineage {
        // SAFETY: by the caller's contract the frame is live and starts with the pointer.
        unsafe { *(self.data as *const *const Lineage) }
    }

    /// Whether this task descends from the sync point `key` (see [`descends`]).
    ///
    /// # Safety
    /// As [`lineage`](Self::lineage).
    pub(crate) unsafe fn descends(self, key: usize) -> bool {
        // SAFETY: the caller's promise: the frame, and so its chain, is alive.
        unsafe { descends(self.lineage(), key) }
    }
}

/// What a deque item is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    Task {
        job: JobRef,
        continuation: bool,
    },
    /// A suspended fiber ready to go on (see `fiber::FiberPtr`).
    Resume(crate::fiber::FiberPtr),
    /// Items handed to a thief at once (see `Deque::release_batch`); unpack with
    /// `Item::take_batch`.
    Batch(Item),
}

impl Work {
    /// Whether a thread whose youngest waiting task is `top` may start this item
    /// (`leapfrog.rs`): a task if it descends from the top's sync point; a ready fiber or a
    /// batch always (the fiber is checked by `Waits::admit`, a batch item by item).
    ///
    /// # Safety
    /// The caller holds the item (taken from a queue, not yet run), or it sits in a queue
    /// whose lock the caller holds: a task's frame is alive.
    pub(crate) unsafe fn may_start_under(self, top: Top) -> bool {
        match self {
            // SAFETY: the caller's promise: the frame has not run, so its chain is alive.
            Work::Task { job, .. } => top.allows(|key| unsafe { job.descends(key) }),
            Work::Resume(_) | Work::Batch(_) => true,
        }
    }

    /// Whether this item is the task `job`.
    #[inline(always)]
    pub(crate) fn is_job(self, job: JobRef) -> bool {
        matches!(self, Work::Task { job: j, .. } if j == job)
    }

    #[inline(always)]
    pub(crate) fn encode(self) -> Item {
        match self {
            Work::Task { job, continuation } => Item(
                job.data as usize | continuation as usize,
                job.entry as usize,
            ),
            Work::Resume(f) => Item(f.addr(), 0),
            Work::Batch(it) => it,
        }
    }
    #[inline(always)]
    pub(crate) fn decode(it: Item) -> Work {
        if it.1 == 0 {
            if it.0 & 1 == 1 {
                Work::Batch(it)
            } else {
                // SAFETY: a second word of zero with bit 0 clear is only written by `encode`
                // from a `Resume`; the item owned the fiber, and its taker now does.
                Work::Resume(unsafe { crate::fiber::FiberPtr::from_addr(it.0) })
            }
        } else {
            // SAFETY: non-zero second words are only ever written by `encode` from a real entry fn.
            let entry: unsafe fn(*const ()) = unsafe { std::mem::transmute(it.1) };
            Work::Task {
                job: JobRef {
                    data: (it.0 & !1) as *const (),
                    entry,
                },
                continuation: it.0 & 1 == 1,
            }
        }
    }
}

pub(crate) enum JobResult<R> {
    None,
    Ok(R),
    Panic(Panic),
}

/// A closure that runs once, on whichever worker takes its frame, and keeps its result (or its
/// panic) for the frame's owner: the body of every job frame that someone waits on (a `join`
/// half, an `install` from outside, a lent worker's call). Each frame adds its own signal (a
/// latch, a lock latch, a flag) and its own trampoline, which calls [`run`](Self::run) and then
/// signals.
///
/// The protocol: the owner makes it with the closure and publishes the frame; exactly one runner
/// calls `run` (or the owner itself calls `run_inline`, having taken its item back before anyone
/// else did); the owner reads the result with `take_result` only after the runner's signal.
/// Until then only the runner touches the two cells, so they need no synchronisation of their
/// own: the signal carries the happens-before.
#[repr(C)]
pub(crate) struct RunOnce<F, R> {
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
}

impl<F: FnOnce() -> R, R> RunOnce<F, R> {
    pub(crate) fn new(f: F) -> Self {
        RunOnce {
            func: UnsafeCell::new(Some(f)),
            result: UnsafeCell::new(JobResult::None),
        }
    }

    /// Runs the closure as a task taken from a queue, catching a panic into the result. Settles
    /// the running worker's deferred scope completions first (they may be what the closure
    /// waits for) and its in-place joins after (the owner may read the stats once signalled).
    ///
    /// # Safety
    /// Called once per frame, by the one runner, before the owner reads the result; the frame
    /// stays alive until the runner signals.
    pub(crate) unsafe fn run(&self) {
        if let Some(wt) = crate::worker::current() {
            wt.flush_finished();
        }
        // SAFETY: the caller's promise: the one run, so nobody else touches `func` or `result`
        // until the signal, which comes after this returns.
        let f = unsafe { (*self.func.get()).take() }.expect("a job run twice");
        let r = match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(r) => JobResult::Ok(r),
            Err(p) => JobResult::Panic(p),
        };
        // SAFETY: as above.
        unsafe { *self.result.get() = r };
        // The task may have moved to another worker: settle that one's in-place joins.
        if let Some(wt) = crate::worker::current() {
            wt.settle_credit();
        }
    }

    /// Runs the closure on its owner, which took its own item back before anyone else did.
    ///
    /// # Safety
    /// Nobody else has run, or will run, this frame.
    #[inline(always)]
    pub(crate) unsafe fn run_inline(&self) -> std::thread::Result<R> {
        // SAFETY: the caller's promise: this is the one run.
        let f = unsafe { (*self.func.get()).take() }.expect("a job run twice");
        panic::catch_unwind(AssertUnwindSafe(f))
    }

    /// The result, once the runner has signalled.
    ///
    /// # Safety
    /// The runner's signal has been observed (it happens after `run` wrote the result).
    pub(crate) unsafe fn take_result(&self) -> std::thread::Result<R> {
        // SAFETY: the caller's promise: the runner has finished writing and touches it no more.
        match std::mem::replace(unsafe { &mut *self.result.get() }, JobResult::None) {
            JobResult::Ok(r) => Ok(r),
            JobResult::Panic(p) => Err(p),
            JobResult::None => unreachable!("a job's result taken before it ran"),
        }
    }
}

/// One half of a `join`, in the joiner's stack frame.
#[repr(C, align(8))]
pub(crate) struct StackJob<F, R> {
    /// Its lineage (first, see `JobRef::lineage`): `node` once published, else null.
    lineage: Cell<*const Lineage>,
    /// Tracing: the event that published it (second, see `JobRef::tag`).
    pub(crate) tag: Cell<Tag>,
    /// The node `lineage` points at once the job is published ([`publish_under`]).
    ///
    /// [`publish_under`]: Self::publish_under
    node: Cell<Lineage>,
    once: RunOnce<F, R>,
    pub(crate) latch: Latch,
}

impl<F: FnOnce() -> R + Send, R: Send> StackJob<F, R> {
    pub(crate) fn new(f: F) -> Self {
        Self::tagged(f, Tag::NONE)
    }

    /// A job published at the event `tag` names (tracing).
    pub(crate) fn tagged(f: F, tag: Tag) -> Self {
        StackJob {
            lineage: Cell::new(std::ptr::null()),
            tag: Cell::new(tag),
            node: Cell::new(Lineage {
                key: 0,
                up: std::ptr::null(),
            }),
            once: RunOnce::new(f),
            latch: Latch::new(),
        }
    }

    /// Gives the job its lineage before it is published: waited for at its own latch, by a
    /// task whose lineage is `up`. The job must not move afterwards (it is used by reference
    /// only, as for `as_job_ref`).
    #[inline]
    pub(crate) fn publish_under(&self, up: *const Lineage) {
        self.node.set(Lineage::new(&self.latch, up));
        self.lineage.set(self.node.as_ptr());
    }

    /// [`publish_under`](Self::publish_under), naming the sync point `key` instead of the
    /// job's own latch: for the two halves of a join that waits for both at once.
    pub(crate) fn publish_keyed(&self, key: *const Latch, up: *const Lineage) {
        self.node.set(Lineage::new(key, up));
        self.lineage.set(self.node.as_ptr());
    }

    pub(crate) fn as_job_ref(&self) -> JobRef {
        // SAFETY: the joiner keeps `self` alive until the job ran (see the module doc).
        unsafe { JobRef::new(self as *const Self as *const (), Self::entry) }
    }

    /// Entry point when the job runs away from its joiner (stolen, or run by a loop fiber).
    ///
    /// # Safety
    /// `data` came from `as_job_ref`, and this is the job's one run.
    unsafe fn entry(data: *const ()) {
        // SAFETY: `data` came from `as_job_ref`, and the joiner keeps the frame alive until the
        // latch is set.
        let this = unsafe { &*(data as *const Self) };
        // SAFETY: the caller's promise: the one run; the latch is set only after it.
        unsafe { this.once.run() };
        if let Some(w) = this.latch.set() {
            crate::fiber::make_ready(w);
        }
    }

    /// Runs the job on the joiner itself (popped back before anyone took it).
    #[inline(always)]
    pub(crate) fn run_inline(&self) -> std::thread::Result<R> {
        // SAFETY: the item was popped by the owner, so no other thread has or will run it.
        unsafe { self.once.run_inline() }
    }

    /// Takes the result once the latch is set. The job must not have moved since it was pushed
    /// (it is only ever used by reference after `as_job_ref`).
    pub(crate) fn take_result(&self) -> std::thread::Result<R> {
        debug_assert!(self.latch.probe());
        // SAFETY: the latch is set, so the job's runner has finished writing the result.
        unsafe { self.once.take_result() }
    }
}

/// The root job of a call from a thread outside the pool that runs as a worker: the caller's
/// closure, run on the caller's thread by the worker 0 it lent (`caller_worker.rs`) or in the
/// seat of a sleeping worker it borrowed (`borrowed_seat.rs`).
#[repr(C, align(8))]
pub(crate) struct RootJob<'a, F, R> {
    /// None: the entry is a root (first, see `JobRef::lineage`).
    lineage: *const Lineage,
    /// Second, as in every job that may be asked for its tag (never read: tracing is refused).
    tag: Tag,
    once: RunOnce<F, R>,
    done: &'a Cell<bool>,
}

impl<'a, F: FnOnce() -> R, R> RootJob<'a, F, R> {
    /// The job of `op`, which sets `done` once it has run.
    pub(crate) fn new(op: F, done: &'a Cell<bool>) -> Self {
        RootJob {
            lineage: std::ptr::null(),
            tag: Tag::NONE,
            once: RunOnce::new(op),
            done,
        }
    }

    /// The job's item, for the inbox of the worker that runs it.
    ///
    /// # Safety
    /// The job stays where it is until it has run, and only the calling thread runs it.
    pub(crate) unsafe fn item(&self) -> Item {
        Work::Task {
            // SAFETY: the caller's promise keeps `self` alive and in place for the run.
            job: unsafe { JobRef::new(self as *const Self as *const (), RootJob::<F, R>::entry) },
            continuation: false,
        }
        .encode()
    }

    /// The closure's result (a panic in it as `Err`).
    ///
    /// # Safety
    /// The job has run (`done` is set).
    pub(crate) unsafe fn take_result(&self) -> std::thread::Result<R> {
        // SAFETY: the caller's promise: the one run has finished.
        unsafe { self.once.take_result() }
    }

    /// # Safety
    /// `data` points at a live `RootJob<F, R>`, and this is its one run, on the thread that
    /// made it.
    unsafe fn entry(data: *const ()) {
        // SAFETY: the caller's promise; the caller keeps the job alive until the dispatcher it
        // runs has returned, which is after this.
        let this = unsafe { &*(data as *const Self) };
        // SAFETY: the one run; the caller reads the result only after the dispatcher has
        // returned, which `done` allows only after this.
        unsafe { this.once.run() };
        this.done.set(true);
    }
}

/// A help-first scope spawn: a heap-allocated closure that does its own accounting.
///
/// On Linux, task frames are allocated from mimalloc, whatever the program's global allocator
/// (on other systems from the system allocator, so that no C compiler is needed): a spawned
/// task is usually freed by another thread than the one that allocated it (the thief), and
/// mimalloc's per-page free lists make that cross-thread free cheap where glibc's malloc takes
/// arena locks (measured on fj at 2 workers: see docs/DESIGN.md, "Choices a measurement made").
/// Built with `--cfg magpie_tsan` (the ThreadSanitizer run, `scripts/tsan.sh`), they come from
/// the system allocator instead: mimalloc's C code is not instrumented, so ThreadSanitizer would
/// not see a frame freed by one thread happen before its memory is handed out again to another,
/// and would report the reuse as a race.
///
/// The frame starts with its lineage: a scope's spawns point at the scope's node
/// (`Scope::lineage`), a pool's detached spawns have none.
#[repr(C)]
pub(crate) struct HeapJob<F> {
    lineage: *const Lineage,
    f: F,
}

/// A [`HeapJob`] of a tracing pool: the same with its tag second (see `JobRef::tag`). Kept apart
/// so an untraced task frame is no bigger than its closure and lineage: help-first kernels hold
/// hundreds of thousands of them (pdfs: 16 more bytes each cost it 7% at 1 worker).
#[repr(C)]
struct TracedHeapJob<F> {
    lineage: *const Lineage,
    tag: Tag,
    f: F,
}

/// The allocator of task frames (see [`HeapJob`]).
#[cfg(all(target_os = "linux", not(magpie_tsan)))]
const FRAMES: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(any(not(target_os = "linux"), magpie_tsan))]
const FRAMES: std::alloc::System = std::alloc::System;

/// Moves `v` into a fresh allocation of the frames' allocator.
fn boxed<T>(v: T) -> *mut T {
    let layout = std::alloc::Layout::new::<T>();
    let p = if layout.size() == 0 {
        std::ptr::NonNull::<T>::dangling().as_ptr()
    } else {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::GlobalAlloc::alloc(&FRAMES, layout) };
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        p as *mut T
    };
    // SAFETY: `p` is valid for writes of one `T`.
    unsafe { p.write(v) };
    p
}

/// Moves the value out of an allocation made by [`boxed`] and frees it.
///
/// # Safety
/// `p` came from `boxed::<T>` and is unboxed once.
unsafe fn unboxed<T>(p: *mut T) -> T {
    // SAFETY: by the caller's contract `p` holds a `T` written by `boxed`, read once.
    let v = unsafe { p.read() };
    let layout = std::alloc::Layout::new::<T>();
    if layout.size() != 0 {
        // SAFETY: `boxed` allocated `p` from `FRAMES` with this layout; freed once.
        unsafe { std::alloc::GlobalAlloc::dealloc(&FRAMES, p as *mut u8, layout) };
    }
    v
}

impl<F: FnOnce() + Send> HeapJob<F> {
    /// Boxes `f` as a task frame of lineage `lineage` (null for none, or a node that outlives
    /// the task: `leapfrog.rs`); with `tag` (a tracing pool) the frame holds it too.
    pub(crate) fn into_job_ref(f: F, tag: Option<Tag>, lineage: *const Lineage) -> JobRef {
        match tag {
            // SAFETY: the frame is read back once, by the entry function of its own type.
            None => unsafe { JobRef::new(boxed(HeapJob { lineage, f }) as *const (), Self::entry) },
            // SAFETY: as above.
            Some(tag) => unsafe {
                JobRef::new(
                    boxed(TracedHeapJob { lineage, tag, f }) as *const (),
                    Self::traced_entry,
                )
            },
        }
    }
    /// # Safety
    /// `data` came from `into_job_ref` without a tag, and this is the job's one run.
    unsafe fn entry(data: *const ()) {
        // SAFETY: `data` came from `into_job_ref` without a tag; the job runs once.
        (unsafe { unboxed(data as *mut HeapJob<F>) }.f)()
    }
    /// # Safety
    /// `data` came from `into_job_ref` with a tag, and this is the job's one run.
    unsafe fn traced_entry(data: *const ()) {
        // SAFETY: `data` came from `into_job_ref` with a tag; the job runs once.
        (unsafe { unboxed(data as *mut TracedHeapJob<F>) }.f)()
    }
}
