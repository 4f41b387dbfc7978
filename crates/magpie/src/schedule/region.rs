//! A region being recorded or followed: positions, cuts, donations and the stall rule.
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
//! (`join::join_positioned`, `Scope::spawn_positioned`). A task that needs only its position
//! (recording, or `Relaxed` below every cut) keeps the credit: its in-place joins and spawns
//! number their children in the cursor's level arrays ([`RegionCursor`]), a few stores each, and a
//! position is spelled out only for a child that is published or donated. Under the strict
//! constraints a task below every cut gets no cursor at all: it runs as plain calls, on credit.
//!
//! **Policy.** A worker creates its cuts in the order its policy runs a join's halves and a
//! scope's children, so a followed schedule keeps its ranks only if that order is the one
//! recorded. The adaptive policy chooses per spawn from run-time counters; inside a region it
//! spawns work-first (`WorkerThread::decide`), and work-first and help-first follow their own
//! order on every road (in place on the credit, positioned, published).
//!
//! **Tickets.** Every task of the region holds a [`Ticket`] from the moment its spec is made
//! until it has finished: the region's `live` count, which starts at one for the region's body.
//! A task without a cursor (strict, below every cut; recording in a one-worker pool) makes no
//! specs, so its heap spawns take tickets of their own (`Ticket::for_spawn`, through the fiber's
//! `uncounted`). When the body returns, the region gives up its own count and waits for the rest
//! at a sync point like a scope's: a task of the region may have spawned into a scope opened
//! outside it, which the body does not wait for, and the region must not end (nor free what its
//! tasks point to) before such a task has run.
//!
//! **Designations.** A child designated to another worker is donated there whatever the
//! template says, held under its template rank when the template cuts it to that worker too
//! (else unranked, always allowed); a child designated to its own worker is an ordinary child,
//! which the template may cut elsewhere (a thief may have taken it when it was recorded).
//!
//! **Cuts.** [`run`] compares the worker it runs on with the worker that created the task; if
//! they differ the task is a cut, recorded with the next rank of its worker. That covers steals
//! (record, relaxed), donations and designations alike.
//!
//! **Donations.** A child the template cuts to another worker is donated: the item goes into
//! that worker's *held* queue in this region, keyed by the child's template rank, and the worker
//! is woken (`Registry::wake_worker`). The scheduling loop takes held items after its own ready
//! fibers, inbox and deque, and before it would steal; under the strict constraints it never
//! steals. Held queues are unbounded, so a donor never waits for room (the thesis's bounded
//! buffers can deadlock in a cycle of donors).
//!
//! **Order and stalls.** Under `Ordered` a worker may take a held item only when every cut the
//! template ranks before it on that worker has begun. A recorded cut may never come (the program
//! is shallower than the template, or has another shape), so a worker waiting for one could wait
//! forever: the thesis's wait loop does. Here every worker that finds nothing registers as idle
//! under the region's stall lock, and the last one to do so checks whether anything is still in
//! flight (an injected job, an inbox item, an allowed held item). If nothing is, no running task
//! is left to donate the awaited cut, and the held item with the lowest rank is *forced*: its
//! worker takes it, the cuts ranked before it count as skipped, and `Stats::deviations` counts
//! one. A worker leaves the idle set at the top of each round, before it takes anything, so an
//! item is never both in flight and unseen by the check. Every worker but the one running the
//! region's root starts in the idle set, since a worker asleep when the region began passes
//! through no round until something wakes it. But a worker that began a round before the region
//! did may be holding an item it stole from the region's root, about to give it back (strict
//! constraints never move work by stealing): so the check gives no verdict until every worker
//! has begun a round in the region; it wakes those that have not, and each comes back through
//! the check when it finds nothing. (A worker busy with work from before the region counts as
//! idle once it has begun a round: it can only make the check fire early, a counted deviation,
//! never miss a stall.)

use super::held::Held;
use super::stall::Stall;
use super::{Cut, Schedule};
use crate::deque::Item;
use crate::fiber::FiberLocal;
use crate::job::Tag;
use crate::latch::CountLatch;
use crate::registry::Registry;
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::sync::CachePadded;
use crate::sync::{lock, Mutex};
use crate::sync_point::SyncMark;
use crate::worker::current;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// What the region does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegionMode {
    Record,
    Ordered,
    Unordered,
    Relaxed,
}

impl RegionMode {
    /// No random steals: work moves only by donation.
    pub(crate) fn strict(self) -> bool {
        matches!(self, RegionMode::Ordered | RegionMode::Unordered)
    }
}

/// The template as a trie of positions; node 0 is the root.
struct Trie {
    nodes: Vec<Node>,
}

#[derive(Default)]
struct Node {
    /// (child index, node), sorted by index.
    children: Vec<(u32, u32)>,
    /// When this position is a cut: its worker (in this pool) and template rank.
    cut: Option<(u32, u32)>,
}

impl Trie {
    fn build(s: &Schedule, worker: impl Fn(u32) -> u32) -> Trie {
        let mut nodes = vec![Node::default()];
        for c in s.cuts() {
            let mut n = 0usize;
            for &i in &c.path {
                n = match nodes[n].children.binary_search_by_key(&i, |x| x.0) {
                    Ok(j) => nodes[n].children[j].1 as usize,
                    Err(j) => {
                        let id = nodes.len();
                        nodes.push(Node::default());
                        nodes[n].children.insert(j, (i, id as u32));
                        id
                    }
                };
            }
            nodes[n].cut = Some((worker(c.worker), c.rank));
        }
        Trie { nodes }
    }

    fn child(&self, n: u32, i: u32) -> Option<u32> {
        let ch = &self.nodes[n as usize].children;
        ch.binary_search_by_key(&i, |x| x.0).ok().map(|j| ch[j].1)
    }
}

/// A region being recorded or followed.
pub(crate) struct Region {
    pub(crate) mode: RegionMode,
    workers: usize,
    trie: Option<Trie>,
    held: Vec<CachePadded<Held>>,
    /// Per worker, the rank its next cut gets in the schedule being taken.
    ranks: Vec<CachePadded<AtomicU32>>,
    cuts: Mutex<Vec<Cut>>,
    deviations: AtomicU64,
    /// The stall rule (`stall.rs`), under `Ordered`.
    stall: Stall,
    arrivals: AtomicU64,
    /// The region's tasks not yet finished, plus one for the region's body (see [`Ticket`]):
    /// the region ends only when it reaches zero.
    live: CountLatch,
}

impl Region {
    fn new(mode: RegionMode, template: Option<&Schedule>, workers: usize, root: usize) -> Region {
        let n = workers as u32;
        let trie = template.map(|s| {
            let t = s.root_worker() % workers;
            // The template's root worker and the actual one swap roles; workers the pool does
            // not have are taken modulo its size.
            Trie::build(s, |w| super::swap_roots((w % n) as usize, t, root) as u32)
        });
        let mut orders: Vec<Vec<u32>> = vec![Vec::new(); workers];
        if let (Some(t), RegionMode::Ordered) = (&trie, mode) {
            for node in &t.nodes {
                if let Some((w, r)) = node.cut {
                    orders[w as usize].push(r);
                }
            }
        }
        let held = orders
            .into_iter()
            .map(|o| CachePadded(Held::new(o)))
            .collect();
        Region {
            mode,
            workers,
            trie,
            held,
            ranks: (0..workers).map(|_| CachePadded::default()).collect(),
            cuts: Mutex::new(Vec::new()),
            deviations: AtomicU64::new(0),
            stall: Stall::new(workers, root),
            arrivals: AtomicU64::new(0),
            live: CountLatch::new(),
        }
    }

    /// The template node of child `i` of the task at node `n`.
    pub(crate) fn child(&self, n: Option<u32>, i: u32) -> Option<u32> {
        self.trie.as_ref()?.child(n?, i)
    }

    /// Where the child at node `n` must go when created on worker `me`: its worker and template
    /// rank when the template cuts it to another worker.
    pub(crate) fn donee(&self, n: Option<u32>, me: usize) -> Option<(usize, u32)> {
        let (w, r) = self.trie.as_ref()?.nodes[n? as usize].cut?;
        (w as usize != me).then_some((w as usize, r))
    }

    /// The rank a child at node `n` designated to worker `w` is held under: its template rank
    /// when the template has it cut to `w` too (so `Ordered` runs it in its recorded turn), else
    /// [`UNRANKED`](super::held::UNRANKED) (always allowed).
    pub(crate) fn designated_rank(&self, n: Option<u32>, w: usize) -> u32 {
        match self.trie.as_ref().and_then(|t| t.nodes[n? as usize].cut) {
            Some((cw, r)) if cw as usize == w => r,
            _ => super::held::UNRANKED,
        }
    }

    /// Hands `it` to worker `w` (rank `rank`, or [`UNRANKED`](super::held::UNRANKED)) and
    /// wakes it.
    pub(crate) fn donate(&self, reg: &Registry, w: usize, rank: u32, it: Item) {
        // Relaxed: only a unique arrival number (the RMW gives that); the item itself is
        // published by the held queue's lock.
        let seq = self.arrivals.fetch_add(1, Ordering::Relaxed);
        self.held[w].push(rank, seq, it);
        reg.wake_worker(w);
    }

    /// A held item worker `me` may run now.
    pub(crate) fn take(&self, me: usize) -> Option<Item> {
        self.held[me].take(self.mode == RegionMode::Ordered)
    }

    /// Whether worker `me` has a held item it may run now (the sleep re-check).
    pub(crate) fn runnable(&self, me: usize) -> bool {
        self.held[me].runnable(self.mode == RegionMode::Ordered)
    }

    /// A task at template node `n` begins on worker `me`: under `Ordered`, its rank there has
    /// begun.
    fn begin(&self, n: Option<u32>, me: usize) {
        if self.mode != RegionMode::Ordered {
            return;
        }
        let cut = self.trie.as_ref().and_then(|t| t.nodes[n? as usize].cut);
        if let Some((w, r)) = cut.filter(|c| c.0 as usize == me) {
            self.held[w as usize].begin(r);
        }
    }

    fn note_cut(&self, pos: &Pos, me: usize) {
        // Relaxed: worker `me`'s own counter, bumped only by `me`; the cut is published by the
        // `cuts` lock.
        let rank = self.ranks[me].fetch_add(1, Ordering::Relaxed);
        let path = pos.path();
        lock(&self.cuts).push(Cut {
            path,
            worker: me as u32,
            rank,
        });
    }

    /// `Ordered`: worker `me` found nothing to run. If every worker now has, and nothing is in
    /// flight, force the lowest-ranked held item (see the module doc and `stall.rs`).
    pub(crate) fn idle_enter(&self, reg: &Registry, me: usize) {
        self.stall.enter(
            me,
            // SeqCst: as the sleep re-check reads `injected`; the check needs no more than a
            // recent value: a delivery it misses only makes it force early (a counted
            // deviation), never miss a stall (module doc, "Order and stalls").
            || reg.injected.load(Ordering::SeqCst) > 0 || reg.inboxes.iter().any(|i| !i.is_empty()),
            |w| reg.wake_worker(w),
            || {
                let mut lowest: Option<((u32, u64), usize)> = None;
                for (w, h) in self.held.iter().enumerate() {
                    match h.stalled() {
                        // That worker can run something: no stall.
                        Err(()) => return,
                        Ok(Some(k)) if lowest.is_none_or(|(l, _)| k < l) => lowest = Some((k, w)),
                        Ok(_) => {}
                    }
                }
                if let Some((_, w)) = lowest {
                    self.held[w].force();
                    // Relaxed: a statistic, read when the region ends (`run_region_here`).
                    self.deviations.fetch_add(1, Ordering::Relaxed);
                    reg.wake_worker(w);
                }
            },
        );
    }

    /// `Ordered`: worker `me` looks for work again.
    pub(crate) fn idle_leave(&self, me: usize) {
        self.stall.leave(me);
    }

    fn taken(&self, root: usize) -> Schedule {
        let cuts = std::mem::take(&mut *lock(&self.cuts));
        Schedule::new(self.workers, root, cuts).expect("a recorded schedule is consistent")
    }
}

/// The core's view of a region (`hooks.rs`): each call is the inherent method's.
impl crate::hooks::ScheduleRegion for Region {
    fn strict(&self) -> bool {
        self.mode.strict()
    }
    fn ordered(&self) -> bool {
        self.mode == RegionMode::Ordered
    }
    fn take(&self, w: usize) -> Option<Item> {
        Region::take(self, w)
    }
    fn runnable(&self, w: usize) -> bool {
        Region::runnable(self, w)
    }
    fn idle_enter(&self, reg: &Registry, w: usize) {
        Region::idle_enter(self, reg, w)
    }
    fn idle_leave(&self, w: usize) {
        Region::idle_leave(self, w)
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
    let me = wt.index;
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
    if me != parent_worker as usize {
        region.note_cut(&pos, me);
    }
    region.begin(node, me);
    let strict = region.mode.strict();
    let tracked =
        region.mode == RegionMode::Record || (region.mode == RegionMode::Relaxed && node.is_none());
    let cursor = RegionCursor::new(pos, wt.fiber_local().depth.get(), tracked);
    let fl = wt.fiber_local();
    // Positions are needed to look a task up in the template (`node`), or to name the cuts
    // below it, except under a strict constraint below every cut (nothing below is cut) and
    // in a one-worker pool where no template is looked up (no task runs on another worker
    // than its parent's, so nothing below can be a cut: recording there costs nothing).
    let alone = tracked && wt.registry.config.workers == 1;
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

fn run_region<R, F>(mode: RegionMode, template: Option<&Schedule>, f: F) -> (R, Schedule)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    if current().is_none() {
        return crate::pool::global().install(move || run_region_here(mode, template, f));
    }
    run_region_here(mode, template, f)
}

/// A region of the current worker's pool (the caller is on a worker).
fn run_region_here<R, F>(mode: RegionMode, template: Option<&Schedule>, f: F) -> (R, Schedule)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let wt = current().expect("magpie: a schedule region outside a worker");
    let reg = wt.registry.clone();
    let me = wt.index;
    let region = Arc::new(Region::new(mode, template, reg.config.workers, me));
    if !reg.region.begin(region.clone()) {
        panic!(
            "magpie: schedule regions do not nest: this pool is already recording or following one"
        );
    }
    let spec = Spec {
        parent: Parent::Root,
        index: 0,
        parent_worker: me as u32,
        node: template.map(|_| 0),
        ticket: Ticket::new(&region),
    };
    let fl = wt.fiber_local();
    let mark = SyncMark::new(wt, fl);
    let r = panic::catch_unwind(AssertUnwindSafe(|| run(spec, f)));
    // The body is done; tasks it spawned into scopes opened outside the region may not be
    // (see `Ticket`): the region ends when they have finished too.
    if let Some(w) = region.live.decrement() {
        crate::fiber::make_ready(w);
    }
    crate::scope::wait_for_count(&region.live, fl, &mark, Tag::NONE);
    reg.region.end();
    if let Some(wt) = current() {
        wt.stats()
            .deviations
            // Relaxed: a statistic, and exact here: a verdict bumps it under the stall lock,
            // which the forced worker takes to leave the idle set before it takes the item, and
            // the region's count (waited for above) counted that item's task.
            .add(region.deviations.load(Ordering::Relaxed));
    }
    let taken = region.taken(me);
    match r {
        Ok(r) => (r, taken),
        Err(p) => panic::resume_unwind(p),
    }
}

/// [`record`] (`template: None`) or [`follow`] under `Ordered`, for a caller on a worker (the
/// pool's own regions: `Builder::trace_cuts`, `Builder::replay`).
pub(crate) fn region_here<R, F>(template: Option<&Schedule>, f: F) -> (R, Schedule)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    match template {
        Some(t) => run_region_here(RegionMode::Ordered, Some(t), f),
        None => run_region_here(RegionMode::Record, None, f),
    }
}

/// Runs `f` as a region of the current pool (or of the global pool, from outside any) and
/// returns its result and the schedule it took.
///
/// # Panics
///
/// If the pool is already recording or following a region (regions do not nest); a panic in
/// `f` goes on after the region has ended.
pub fn record<R, F>(f: F) -> (R, Schedule)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    run_region(RegionMode::Record, None, f)
}

/// Runs `f` as a region following `template` under `constraint` (see the module doc) and
/// returns its result and the schedule it actually took. Never hangs on a template that does
/// not fit the program; see the module doc for what happens then.
///
/// # Panics
///
/// As [`record`].
pub fn follow<R, F>(template: &Schedule, constraint: super::Constraint, f: F) -> (R, Schedule)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let mode = match constraint {
        super::Constraint::Ordered => RegionMode::Ordered,
        super::Constraint::Unordered => RegionMode::Unordered,
        super::Constraint::Relaxed => RegionMode::Relaxed,
    };
    run_region(mode, Some(template), f)
}

/// Whether the calling task runs under a strict constraint ([`Constraint::Ordered`] or
/// [`Constraint::Unordered`](super::Constraint::Unordered)) with no cut of the template below
/// it, so that everything it spawns will run on this worker anyway: it may run a sequential
/// kernel instead of spawning (dynamic coarsening, §6.5). False anywhere else.
///
/// [`Constraint::Ordered`]: super::Constraint::Ordered
pub fn may_coarsen() -> bool {
    current().is_some_and(|wt| {
        wt.fiber_local()
            .uncounted()
            .is_some_and(|r| r.mode.strict())
    })
}
/// A pool whose installs from a plain thread are regions (`Builder::trace_cuts`,
/// `Builder::replay`): one at a time, each recorded or following the next template. The pool's
/// install hook, and an extension (`hooks.rs`) where `Pool::trace` finds the schedules taken.
pub(crate) struct Regions {
    pub(crate) record: bool,
    pub(crate) replay: Vec<Schedule>,
    /// The pool's workers (a replayed install starts on its template's root worker).
    pub(crate) workers: usize,
    /// The schedules the installs took, in order (kept when `record`).
    pub(crate) taken: Mutex<Vec<Schedule>>,
    /// The next install's ordinal; held while an install runs, so they run one at a time.
    pub(crate) turn: Mutex<usize>,
}

impl Regions {
    /// The schedules the installs took so far, in order (a recording pool's).
    pub(crate) fn taken(&self) -> Vec<Schedule> {
        lock(&self.taken).clone()
    }
}

impl crate::hooks::InstallHook for Regions {
    fn install(&self, run_on: crate::hooks::RunOn<'_>, op: crate::hooks::Body<'_>) {
        let mut turn = lock(&self.turn);
        let i = *turn;
        *turn += 1;
        let template = self.replay.get(i);
        let region = template.is_some() || self.record;
        // A replayed install starts on the worker the recorded one ran on, so the schedule is
        // followed as it was taken, without swapping workers (designations name workers).
        let home = template.map(|t| t.root_worker() % self.workers);
        let mut taken = None;
        run_on(home, &mut || {
            if region {
                let ((), s) = region_here(template, &mut *op);
                taken = Some(s);
            } else {
                op()
            }
        });
        if let (true, Some(s)) = (self.record, taken) {
            lock(&self.taken).push(s);
        }
        drop(turn);
    }
}
