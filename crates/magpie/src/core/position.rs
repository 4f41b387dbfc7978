//! Positioned tasks: each task of a region knows where it stands in the region's spawn tree,
//! so that a schedule can name it (a cut recorded, a template followed).
//!
//! This is the core's half of a schedule region; the schedule's half (the template, held
//! queues, the stall rule, the cuts taken) is a [`ScheduleRegion`] that `ext/schedule/region.rs`
//! makes, and the core asks it where each positioned child goes. A pool without a region pays
//! one test of the fiber's `pos` on its join path and of `region_task` on its spawn path.
//!
//! **Positions.** While a region runs, every task of it runs inside [`run`], which keeps the
//! task's position in a [`RegionCursor`] on the task's own stack and points the fiber's
//! `FiberLocal::pos` at it. A `join` or scope spawn made by a task whose fiber has a cursor takes
//! its child indices from the cursor and wraps each child in [`run`] with a [`Spec`]: the parent's
//! position, the child's index, the worker that created it and the child's node in the template.
//! A join child keeps a pointer to its parent's position, which lives on the parent's stack and
//! outlives the child (a join waits for both halves); a scope child may outlive the task that
//! spawned it, so it gets the parent's path as a shared linked list ([`Link`]), built once per
//! spawning task. Paths are only spelled out when a cut is recorded, so recording costs a
//! wrapper per published task and one path per steal.
//!
//! A task that must look its children up in the template (following, above the deepest cut)
//! gets no in-place credit (`WorkerThread::grant_credit`), and [`run`] settles the credit
//! whenever it sets or restores a cursor, so such a task always reaches the positioned paths
//! (`donate::join_positioned`, `Scope::spawn_positioned`). A task that needs only its position
//! (the rules' [`tracked`](ScheduleRegion::tracked): recording, or `Relaxed` below every cut)
//! keeps the credit: its in-place joins and spawns number their children in the cursor's level
//! arrays ([`RegionCursor`]), a few stores each, and a position is spelled out only for a child
//! that is published or donated. Under the strict constraints a task below every cut gets no
//! cursor at all: it runs as plain calls, on credit.
//!
//! **Cuts.** [`run`] compares the worker it runs on with the worker that created the task; if
//! they differ the task is a cut, handed to the rules ([`ScheduleRegion::cut`]) with its path.
//! That covers steals (record, relaxed), donations and designations alike.
//!
//! **Tickets.** Every task of the region holds a [`Ticket`] from the moment its spec is made
//! until it has finished: the region's `live` count, which starts at one for the region's body.
//! A task without a cursor (strict, below every cut; recording in a one-worker pool) makes no
//! specs, so its heap spawns take tickets of their own (`Ticket::for_spawn`, through the fiber's
//! `uncounted`). When the body returns, the region gives up its own count and waits for the rest
//! at a sync point like a scope's: a task of the region may have spawned into a scope opened
//! outside it, which the body does not wait for, and the region must not end (nor free what its
//! tasks point to) before such a task has run.

use crate::fiber::FiberLocal;
use crate::hooks::ScheduleRegion;
use crate::latch::CountLatch;
use crate::worker::current;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// A region as the core knows it: the rules its schedule gives (where children go, what is
/// recorded) and its tasks not yet finished. Made by the schedule (`ext/schedule/region.rs`), which
/// keeps it alive and in place (its tasks' tickets and positions hold its address) until
/// [`live`](Self::live) reaches zero: a local of the region's frame, which waits for that.
pub(crate) struct Region {
    rules: Arc<dyn ScheduleRegion>,
    /// `rules.strict()`, read once: no random steals, work moves only by donation.
    strict: bool,
    /// The region's tasks not yet finished, plus one for the region's body (see [`Ticket`]):
    /// the region ends only when it reaches zero.
    live: CountLatch,
}

impl Region {
    /// A region under `rules`, its body counted in [`live`](Self::live).
    pub(crate) fn new(rules: Arc<dyn ScheduleRegion>) -> Region {
        Region {
            strict: rules.strict(),
            rules,
            live: CountLatch::new(),
        }
    }

    /// The schedule's rules.
    #[inline]
    pub(crate) fn rules(&self) -> &dyn ScheduleRegion {
        &*self.rules
    }

    /// Whether work moves between workers only by donation.
    #[inline]
    pub(crate) fn strict(&self) -> bool {
        self.strict
    }

    /// The region's unfinished tasks, plus one for its body until the body gives it up.
    pub(crate) fn live(&self) -> &CountLatch {
        &self.live
    }

    /// The spec of the region's root task, made on worker `me` at template node `node`.
    pub(crate) fn root(&self, me: usize, node: Option<u32>) -> Spec {
        Spec {
            parent: Parent::Root,
            index: 0,
            parent_worker: me as u32,
            node,
            ticket: Ticket::new(self),
        }
    }
}

/// A path as a shared list, for children that may outlive their parent's frame.
struct Link {
    parent: Option<Arc<Link>>,
    index: u32,
}

/// Where a task's parent's position is.
enum Parent {
    /// The task is the region's root.
    Root,
    /// On the parent's stack, which outlives this task (a join child).
    Stack(*const Pos),
    /// The parent's path (a scope child); `None` for the root's.
    Heap(Option<Arc<Link>>),
}

/// A task's position (see the module doc). Read by its children, on any worker.
pub(crate) struct Pos {
    parent: Parent,
    index: u32,
    worker: u32,
    node: Option<u32>,
    region: *const Region,
    link: OnceLock<Option<Arc<Link>>>,
}

// SAFETY: a `Pos` is never changed after it is made, except `link`, a `OnceLock`. Its raw
// pointers are read only: the parent's `Pos` outlives it (a join waits for both halves), and the
// region outlives every task of it (`run_region` ends it after its root returns, and every task
// of a region finishes before its root does).
unsafe impl Sync for Pos {}

impl Pos {
    /// The path from the region's root.
    fn path(&self) -> Vec<u32> {
        let mut rev = Vec::new();
        let mut p = self;
        loop {
            match &p.parent {
                Parent::Root => break,
                Parent::Stack(q) => {
                    rev.push(p.index);
                    // SAFETY: the parent's position outlives its children (see `Sync`).
                    p = unsafe { &**q };
                }
                Parent::Heap(l) => {
                    rev.push(p.index);
                    let mut l = l.as_deref();
                    while let Some(x) = l {
                        rev.push(x.index);
                        l = x.parent.as_deref();
                    }
                    break;
                }
            }
        }
        rev.reverse();
        rev
    }

    /// The path as a shared list, built once.
    fn link(&self) -> Option<Arc<Link>> {
        self.link
            .get_or_init(|| {
                let parent = match &self.parent {
                    Parent::Root => return None,
                    // SAFETY: as in `path`.
                    Parent::Stack(q) => unsafe { &**q }.link(),
                    Parent::Heap(l) => l.clone(),
                };
                Some(Arc::new(Link {
                    parent,
                    index: self.index,
                }))
            })
            .clone()
    }
}

/// What a tracked cursor keeps of the in-place task at one level (see [`RegionCursor`]). Both halves
/// in one 8-byte word, so entering a child is one store of a constant.
#[derive(Default)]
#[repr(C, align(8))]
pub(crate) struct Word {
    back: Cell<u32>,
    next: Cell<u32>,
}

/// Relative frame levels a cursor tracks for the tasks run in place below it (see [`RegionCursor`]).
pub(crate) const LEVELS: usize = 64;

/// A running task's position and the index its next child gets. Lives on the task's stack.
///
/// **In-place tasks below a cursor.** A cursor whose task needs no template lookups (recording,
/// or following `Relaxed` below every cut) is *tracked*: its joins and spawns may run in place
/// on the worker's credit like plain ones (`join::join_tracked`, the scope's in-place spawn),
/// and the cursor keeps the positions of those in-place tasks in a small array indexed by the
/// frame level relative to its own task (`FiberLocal::depth - base`). The [`Word`] of the
/// in-place task at level `l` holds the index its next child gets (`next`) and, for `l >= 1`,
/// how far the task's own index lies behind its parent's `next` (`back`). While a child runs in
/// place its parent is inside the join or spawn that made it, whose indices it took all at
/// once, so the parent's `next` stays put and the child's index is `next(l - 1) - back(l)`: a
/// join takes two indices and enters its halves with `back` 2 and 1, an in-place scope spawn
/// takes one and enters its child with `back` 1. So entering a child stores a constant (its
/// `back`, and `next` 0), and taking indices is one add to the parent's `next`: no word's value
/// waits on another word's load. (Storing the child's index itself on entry, read from its
/// parent's `next`, chained each level's load to its parent's: with the words reached through
/// the cursor rather than the fiber's record (`Track`), recording cost fib(36) without cutoff
/// 1.27x plain at 1 and 2 workers; this layout, 1.15x at 2 workers.) Entering an in-place child
/// at level `l` writes the word of level `l`, so the words at and below the running level
/// always belong to the tasks on the fiber's stack. A task below a cursor only runs in place
/// through these paths, or through [`run`], which sets a cursor of its own: so the running
/// level is the number of in-place frames above the cursor's task.
/// Only when such a task must publish, donate or spawn onto the heap is its position spelled
/// out ([`RegionCursor::at`]), as a list shared with its children.
pub(crate) struct RegionCursor {
    pos: Pos,
    /// `FiberLocal::depth` when the cursor's task began.
    base: u32,
    /// Joins below it may run in place on the credit (see above).
    tracked: bool,
    levels: [Word; LEVELS],
}

impl RegionCursor {
    fn new(pos: Pos, base: u32, tracked: bool) -> RegionCursor {
        RegionCursor {
            pos,
            base,
            tracked,
            levels: std::array::from_fn(|_| Word::default()),
        }
    }

    /// The region.
    pub(crate) fn region(&self) -> &Region {
        // SAFETY: the region outlives its tasks (see `Pos`).
        unsafe { &*self.pos.region }
    }

    /// Whether in-place joins and spawns may run below this cursor on the worker's credit.
    #[inline(always)]
    pub(crate) fn tracked(&self) -> bool {
        self.tracked
    }

    /// What the fiber keeps of this cursor for the in-place paths: its level words, if tracked.
    /// Valid while the cursor stays where it is (it is installed only by [`run`], whose frame
    /// holds it until the fiber's record is reset).
    fn track(&self) -> Track {
        if !self.tracked {
            return Track::NONE;
        }
        Track {
            base: self.base,
            words: self.levels.as_ptr().wrapping_sub(self.base as usize),
        }
    }

    /// The index of the in-place task at level `l >= 1` (see above).
    fn index_at(&self, l: usize) -> u32 {
        let next = self.levels[l - 1].next.get();
        next.wrapping_sub(self.levels[l].back.get())
    }

    /// The template node of this task.
    pub(crate) fn node(&self) -> Option<u32> {
        self.pos.node
    }

    /// Takes `n` child indices; returns the first.
    pub(crate) fn take(&self, n: u32) -> u32 {
        let k = self.levels[0].next.get();
        self.levels[0].next.set(k.wrapping_add(n));
        k
    }

    /// Calls `f` with the cursor of the task running at frame depth `depth`: this one at its own
    /// level, or else a cursor made for the in-place task running there, whose position is
    /// spelled out as a shared list; the children `f` numbers on it are counted back here.
    pub(crate) fn at<R>(&self, depth: u32, f: impl FnOnce(&RegionCursor) -> R) -> R {
        let l = depth.wrapping_sub(self.base) as usize;
        debug_assert!(l < LEVELS, "an in-place task below its cursor's range");
        if l == 0 || l >= LEVELS {
            return f(self);
        }
        let mut parent = self.pos.link();
        for i in 1..l {
            parent = Some(Arc::new(Link {
                parent,
                index: self.index_at(i),
            }));
        }
        let pos = Pos {
            parent: Parent::Heap(parent),
            index: self.index_at(l),
            worker: self.pos.worker,
            node: None,
            region: self.pos.region,
            link: OnceLock::new(),
        };
        let here = RegionCursor::new(pos, depth, false);
        here.levels[0].next.set(self.levels[l].next.get());
        let r = f(&here);
        self.levels[l].next.set(here.levels[0].next.get());
        r
    }

    /// The spec of child `index` at template node `node`, for a child that its parent waits
    /// for before its frame ends (a join half).
    pub(crate) fn join_child(&self, index: u32, node: Option<u32>) -> Spec {
        Spec {
            parent: Parent::Stack(&self.pos),
            index,
            parent_worker: self.pos.worker,
            node,
            ticket: Ticket::new(self.region()),
        }
    }

    /// The spec of child `index` for a child that may outlive its parent's frame (a scope
    /// spawn).
    pub(crate) fn scope_child(&self, index: u32, node: Option<u32>) -> Spec {
        Spec {
            parent: Parent::Heap(self.pos.link()),
            index,
            parent_worker: self.pos.worker,
            node,
            ticket: Ticket::new(self.region()),
        }
    }
}

/// A tracked cursor's level words as its fiber keeps them (`FiberLocal::track`): the frame
/// depth of the cursor's task, and the address its words would start at if they were indexed by
/// absolute depth (`levels` minus `base` words; formed with wrapping arithmetic and never read
/// outside `levels`).
#[derive(Clone, Copy)]
pub(crate) struct Track {
    base: u32,
    words: *const Word,
}

impl Track {
    /// No tracked cursor: no depth has a level ([`at`](Self::at)'s one compare fails for all).
    pub(crate) const NONE: Track = Track {
        base: 1 << 31,
        words: std::ptr::null(),
    };

    /// The level word of the in-place task at frame depth `depth`, if it lies within the
    /// cursor's levels with one left below it for its children.
    #[inline(always)]
    pub(crate) fn at(self, depth: u32) -> Option<Level> {
        let l = depth.wrapping_sub(self.base) as usize;
        // The address is formed from `depth`, already in a register, not from `l`, so the
        // word's load waits on one load of the fiber's record only.
        (l + 1 < LEVELS).then(|| Level(self.words.wrapping_add(depth as usize)))
    }

    /// [`at`](Self::at) for a depth it already gave a level for, without the range check.
    ///
    /// # Safety
    ///
    /// `at(depth)` on the same track (the same installed cursor) returned `Some`. That holds for
    /// the frame that got `Some` reading the fiber's track again after a call: only [`run`]
    /// changes the track, and it puts the old one back before its frame returns or unwinds.
    #[inline(always)]
    pub(crate) unsafe fn again(self, depth: u32) -> Level {
        Level(self.words.wrapping_add(depth as usize))
    }
}

/// The level word of the in-place task at some level of a tracked cursor, from [`Track::at`]:
/// where its index lies behind its parent's next, and the index its own next child gets (see
/// [`RegionCursor`]). Valid while that cursor is installed, which outlasts every in-place frame below
/// it.
#[derive(Clone, Copy)]
pub(crate) struct Level(*const Word);

impl Level {
    /// The task creates `n` children, which take the next `n` indices.
    #[inline(always)]
    pub(crate) fn take(self, n: u32) {
        // SAFETY: `Track::at` gave a word of the installed cursor's `levels` (level `l` with
        // `l + 1 < LEVELS`); the cursor outlives this frame and only this fiber touches it.
        let next = unsafe { &(*self.0).next };
        next.set(next.get().wrapping_add(n));
    }

    /// One of the children just taken begins in place, one level below: the one `back` indices
    /// behind the task's next (so of two taken, 2 is the first and 1 the second).
    #[inline(always)]
    pub(crate) fn enter_child(self, back: u32) {
        // SAFETY: as in `take`, for level `l + 1 < LEVELS` (also for a word from `Track::again`,
        // which gives the word `at` gave that frame).
        let child = unsafe { &*self.0.add(1) };
        child.back.set(back);
        child.next.set(0);
    }
}

/// What a wrapped child carries to wherever it runs.
pub(crate) struct Spec {
    parent: Parent,
    index: u32,
    parent_worker: u32,
    node: Option<u32>,
    ticket: Ticket,
}

// SAFETY: a spec's pointers are the parent's position and the region (in its ticket), both
// `Sync` and both outliving the child (see `Pos` and `Ticket`); the `Arc<Link>` is `Send`.
unsafe impl Send for Spec {}

/// What a fiber's record says of the region task running on it (`FiberLocal::region_task`), in
/// one word so that a spawn that cannot run on the credit tests it against zero once: zero when
/// the task is not a region's, else the address of the task's [`RegionCursor`] (also in
/// `FiberLocal::pos`, which joins test), or the address of its [`Region`] with bit 0 set when it
/// has no cursor (both are at least 8-byte aligned).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct At(usize);

impl At {
    /// Not a region task.
    pub(crate) const NONE: At = At(0);

    fn of_cursor(c: &RegionCursor) -> At {
        At(c as *const RegionCursor as usize)
    }

    fn of_uncounted(r: &Region) -> At {
        At(r as *const Region as usize | 1)
    }

    #[inline(always)]
    pub(crate) fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The region of a task without a cursor, if this names one.
    ///
    /// # Safety
    ///
    /// This was read from the record of the fiber the caller runs on, and the task that set it
    /// is still running (`run` and `Ticket::run` put the old value back before it ends), so it
    /// holds a ticket on the region for as long as the caller borrows the record.
    #[inline]
    pub(crate) unsafe fn uncounted<'a>(self) -> Option<&'a Region> {
        // SAFETY: the caller's obligation; a tagged word is a region's address with bit 0 set.
        (self.0 & 1 == 1).then(|| unsafe { &*((self.0 & !1) as *const Region) })
    }
}

/// Runs `f`, an item popped at a sync point of the task running on `fl` and run inline on its
/// fiber (`sync_point::pop_above`), as the task of its own that it is: with none of the waiting
/// task's region record (its cursor would otherwise number the item's children as its own). A
/// region task the item is sets its own record (`run`, `Ticket::run`).
#[cold]
#[inline(never)]
pub(crate) fn outside_the_waiting_task(fl: &FiberLocal, f: impl FnOnce()) {
    /// Puts the waiting task's record back, also when `f` unwinds.
    struct Restore<'a>(&'a FiberLocal, *const RegionCursor, At, Track);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            self.0.pos.set(self.1);
            self.0.region_task.set(self.2);
            self.0.track.set(self.3);
        }
    }
    let _restore = Restore(
        fl,
        fl.pos.replace(std::ptr::null()),
        fl.region_task.replace(At::NONE),
        fl.track.replace(Track::NONE),
    );
    f()
}

/// A region task's claim on its region, from the moment its spec is made until the task has
/// finished (or its closure was dropped unrun): the region counts it in `live` and does not end,
/// nor free itself, until every ticket is gone.
///
/// A region's tasks need not finish before its root does: a task of the region may spawn into
/// a scope that was opened outside it (`scope(|s| record(|| s.spawn(..)))`), and that scope,
/// not the root, waits for the spawn. Every such task still holds the region's address (in its
/// spec, then in its position), and its cuts belong to the region's schedule, so the region's
/// end waits for the count to reach zero (`run_region_here`): a region is a `finish` for
/// everything created in it.
pub(crate) struct Ticket(NonNull<Region>);

// SAFETY: a ticket only reaches its region's `live` count, an atomic, and the region outlives
// it wherever it is dropped.
unsafe impl Send for Ticket {}

impl Ticket {
    fn new(region: &Region) -> Ticket {
        region.live.increment();
        Ticket(NonNull::from(region))
    }

    /// A ticket for a heap task (a scope spawn that may outlive its spawner) made by the task
    /// running on `fl`, if that task belongs to a region but has no cursor, so that its children
    /// are not wrapped in a [`Spec`]: without one, a child spawned into a scope opened outside
    /// the region could run after the region ended, anywhere.
    #[inline]
    pub(crate) fn for_spawn(fl: &FiberLocal) -> Option<Ticket> {
        fl.uncounted().map(Ticket::new)
    }

    /// Runs `f`, a heap task that took this ticket from [`for_spawn`](Self::for_spawn), as a
    /// task of the region without a cursor, as its spawner was: its own heap spawns take tickets
    /// too. The ticket is given up when `f` has returned or unwound.
    pub(crate) fn run<R>(self, f: impl FnOnce() -> R) -> R {
        /// Puts the fiber's `region_task` back, then gives up the ticket (field order).
        struct Restore<'a> {
            fl: &'a FiberLocal,
            saved: At,
            _ticket: Ticket,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.fl.region_task.set(self.saved);
            }
        }
        let wt = current().expect("magpie: a region's task outside a worker");
        // A task runs on one fiber from start to end, so the record is the same at the end.
        let fl = wt.fiber_local();
        // SAFETY: the region outlives this ticket (counted in `live`), which outlives the task.
        let region = unsafe { self.0.as_ref() };
        let _restore = Restore {
            fl,
            saved: fl.region_task.replace(At::of_uncounted(region)),
            _ticket: self,
        };
        f()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // SAFETY: this ticket is counted in `live`, and the region is not freed before `live`
        // reaches zero; after the decrement below this ticket touches it no more (the latch's
        // setter, if it is the last, only hands over the waiter the latch returned).
        let live = unsafe { &self.0.as_ref().live };
        if let Some(w) = live.decrement() {
            crate::fiber::make_ready(w);
        }
    }
}

/// Runs `f` as the task `spec` describes (see the module doc).
pub(crate) fn run<R>(spec: Spec, f: impl FnOnce() -> R) -> R {
    let wt = current().expect("magpie: a region's task outside a worker");
    let me = wt.core.index;
    let Spec {
        parent,
        index,
        parent_worker,
        node,
        ticket,
    } = spec;
    // SAFETY: the region outlives its tasks' tickets (see `Ticket`), and `ticket` is dropped
    // only when this function returns or unwinds, after every use of `region` and `pos`.
    let region = unsafe { ticket.0.as_ref() };
    let pos = Pos {
        parent,
        index,
        worker: me as u32,
        node,
        region: ticket.0.as_ptr(),
        link: OnceLock::new(),
    };
    let rules = region.rules();
    if me != parent_worker as usize {
        rules.cut(pos.path(), me);
    }
    rules.begin(node, me);
    let strict = region.strict;
    let tracked = rules.tracked(node);
    let cursor = RegionCursor::new(pos, wt.fiber_local().depth.get(), tracked);
    let fl = wt.fiber_local();
    // Positions are needed to look a task up in the template (`node`), or to name the cuts
    // below it, except under a strict constraint below every cut (nothing below is cut) and
    // in a one-worker pool where no template is looked up (no task runs on another worker
    // than its parent's, so nothing below can be a cut: recording there costs nothing).
    let alone = tracked && wt.core.registry.config.workers == 1;
    let positioned = (!strict || node.is_some()) && !alone;
    // Without a cursor the task is still the region's: its heap spawns take tickets.
    let saved_pos = fl.pos.replace(if positioned {
        &cursor
    } else {
        std::ptr::null()
    });
    let saved = fl.region_task.replace(if positioned {
        At::of_cursor(&cursor)
    } else {
        At::of_uncounted(region)
    });
    let saved_track = fl.track.replace(if positioned {
        cursor.track()
    } else {
        Track::NONE
    });
    wt.settle_credit();
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    fl.pos.set(saved_pos);
    fl.region_task.set(saved);
    fl.track.set(saved_track);
    if let Some(wt) = current() {
        wt.settle_credit();
    }
    match r {
        Ok(r) => r,
        Err(p) => panic::resume_unwind(p),
    }
}
