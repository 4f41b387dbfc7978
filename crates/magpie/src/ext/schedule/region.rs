//! A region being recorded or followed: the template, cuts, donations and the stall rule.
//!
//! The region's tasks carry their positions in the core (`position.rs`: cursors, specs,
//! tickets); what this module adds is the schedule: a [`RegionPlan`] is the region's
//! [`ScheduleRegion`](crate::hooks::ScheduleRegion), which the core asks where each positioned
//! child goes and tells of each cut, and which the scheduling loop asks for donations.
//!
//! **Policy.** A worker creates its cuts in the order its policy runs a join's halves and a
//! scope's children, so a followed schedule keeps its ranks only if that order is the one
//! recorded. The adaptive policy chooses per spawn from run-time counters; inside a region it
//! spawns work-first (`WorkerThread::decide`), and work-first and help-first follow their own
//! order on every road (in place on the credit, positioned, published).
//!
//! **Tracked positions.** Recording, and following `Relaxed` below every cut, need only each
//! task's position, not a template lookup: such tasks keep the in-place credit and the core
//! numbers their children in its cursor's level words ([`tracked`](RegionPlan::tracked)).
//!
//! **Designations.** A child designated to another worker is donated there whatever the
//! template says, held under its template rank when the template cuts it to that worker too
//! (else unranked, always allowed); a child designated to its own worker is an ordinary child,
//! which the template may cut elsewhere (a thief may have taken it when it was recorded).
//!
//! **Cuts.** A task the core finds running on another worker than the one that created it
//! (`position::run`) is a cut, recorded here with the next rank of its worker. That covers
//! steals (record, relaxed), donations and designations alike.
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
use super::held::UNRANKED;
use super::stall::Stall;
use super::{Cut, Schedule};
use crate::deque::Item;
use crate::hooks::PoolSide;
use crate::job::Tag;
use crate::position::{self, Region};
use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::sync::CachePadded;
use crate::sync::{lock, Mutex};
use crate::sync_point::SyncMark;
use crate::worker::current;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

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

/// The schedule of a region being recorded or followed: the core's
/// [`ScheduleRegion`](crate::hooks::ScheduleRegion) for it.
pub(crate) struct RegionPlan {
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
}

impl RegionPlan {
    fn new(
        mode: RegionMode,
        template: Option<&Schedule>,
        workers: usize,
        root: usize,
    ) -> RegionPlan {
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
        RegionPlan {
            mode,
            workers,
            trie,
            held,
            ranks: (0..workers).map(|_| CachePadded::default()).collect(),
            cuts: Mutex::new(Vec::new()),
            deviations: AtomicU64::new(0),
            stall: Stall::new(workers, root),
            arrivals: AtomicU64::new(0),
        }
    }

    fn taken(&self, root: usize) -> Schedule {
        let cuts = std::mem::take(&mut *lock(&self.cuts));
        Schedule::new(self.workers, root, cuts).expect("a recorded schedule is consistent")
    }
}

/// What the core asks of the region (`hooks.rs`, `position.rs`, the scheduling loop).
impl crate::hooks::ScheduleRegion for RegionPlan {
    fn strict(&self) -> bool {
        self.mode.strict()
    }

    fn ordered(&self) -> bool {
        self.mode == RegionMode::Ordered
    }

    /// Recording, or `Relaxed` below every cut (see the module doc).
    fn tracked(&self, n: Option<u32>) -> bool {
        self.mode == RegionMode::Record || (self.mode == RegionMode::Relaxed && n.is_none())
    }

    fn child(&self, n: Option<u32>, i: u32) -> Option<u32> {
        self.trie.as_ref()?.child(n?, i)
    }

    fn donee(&self, n: Option<u32>, me: usize) -> Option<(usize, u32)> {
        let (w, r) = self.trie.as_ref()?.nodes[n? as usize].cut?;
        (w as usize != me).then_some((w as usize, r))
    }

    fn designated_rank(&self, n: Option<u32>, w: usize) -> u32 {
        match self.trie.as_ref().and_then(|t| t.nodes[n? as usize].cut) {
            Some((cw, r)) if cw as usize == w => r,
            _ => UNRANKED,
        }
    }

    fn donate(&self, pool: &dyn PoolSide, w: usize, rank: u32, it: Item) {
        // Relaxed: only a unique arrival number (the RMW gives that); the item itself is
        // published by the held queue's lock.
        let seq = self.arrivals.fetch_add(1, Ordering::Relaxed);
        self.held[w].push(rank, seq, it);
        pool.wake_worker(w);
    }

    /// A held item worker `me` may run now.
    fn take(&self, me: usize) -> Option<Item> {
        self.held[me].take(self.mode == RegionMode::Ordered)
    }

    /// Whether worker `me` has a held item it may run now (the sleep re-check).
    fn runnable(&self, me: usize) -> bool {
        self.held[me].runnable(self.mode == RegionMode::Ordered)
    }

    fn begin(&self, n: Option<u32>, me: usize) {
        if self.mode != RegionMode::Ordered {
            return;
        }
        let cut = self.trie.as_ref().and_then(|t| t.nodes[n? as usize].cut);
        if let Some((w, r)) = cut.filter(|c| c.0 as usize == me) {
            self.held[w as usize].begin(r);
        }
    }

    fn cut(&self, path: Vec<u32>, me: usize) {
        // Relaxed: worker `me`'s own counter, bumped only by `me`; the cut is published by the
        // `cuts` lock.
        let rank = self.ranks[me].fetch_add(1, Ordering::Relaxed);
        lock(&self.cuts).push(Cut {
            path,
            worker: me as u32,
            rank,
        });
    }

    /// `Ordered`: worker `me` found nothing to run. If every worker now has, and nothing is in
    /// flight, force the lowest-ranked held item (see the module doc and `stall.rs`).
    fn idle_enter(&self, pool: &dyn PoolSide, me: usize) {
        self.stall.enter(
            me,
            // The check needs no more than a recent value: a delivery it misses only makes it
            // force early (a counted deviation), never miss a stall (module doc, "Order and
            // stalls").
            || pool.queued_outside(),
            |w| pool.wake_worker(w),
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
                    pool.wake_worker(w);
                }
            },
        );
    }

    /// `Ordered`: worker `me` looks for work again.
    fn idle_leave(&self, me: usize) {
        self.stall.leave(me);
    }
}

fn run_region<R, F>(mode: RegionMode, template: Option<&Schedule>, f: F) -> (R, Schedule)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    if current().is_none() {
        // Entered from outside the pool: the root starts on the template's root worker, so the
        // workers keep their roles and each leaf runs where it was recorded, in every
        // iteration of a program that follows the same template again and again.
        let pool = crate::pool::global();
        let home = template.map(|t| t.root_worker() % pool.registry().config.workers);
        return pool.install_at(home, move || run_region_here(mode, template, f));
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
    let reg = wt.core.registry.clone();
    let me = wt.core.index;
    let plan = Arc::new(RegionPlan::new(mode, template, reg.config.workers, me));
    if !reg.region.begin(plan.clone()) {
        panic!(
            "magpie: schedule regions do not nest: this pool is already recording or following one"
        );
    }
    // The core's side of the region, which its tasks' tickets point to: it stays in this frame
    // until the count of its tasks has reached zero below.
    let region = Region::new(plan.clone());
    let spec = region.root(me, template.map(|_| 0));
    let fl = wt.fiber_local();
    let mark = SyncMark::new(wt, fl);
    let r = panic::catch_unwind(AssertUnwindSafe(|| position::run(spec, f)));
    // The body is done; tasks it spawned into scopes opened outside the region may not be
    // (see `position::Ticket`): the region ends when they have finished too.
    if let Some(w) = region.live().decrement() {
        crate::fiber::make_ready(w);
    }
    crate::scope::wait_for_count(region.live(), fl, &mark, Tag::NONE, false);
    reg.region.end();
    if let Some(wt) = current() {
        wt.stats()
            .deviations
            // Relaxed: a statistic, and exact here: a verdict bumps it under the stall lock,
            // which the forced worker takes to leave the idle set before it takes the item, and
            // the region's count (waited for above) counted that item's task.
            .add(plan.deviations.load(Ordering::Relaxed));
    }
    let taken = plan.taken(me);
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
    current().is_some_and(|wt| wt.fiber_local().uncounted().is_some_and(|r| r.strict()))
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
