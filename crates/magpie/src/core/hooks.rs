//! Hooks: how the features around the scheduler reach into it without the scheduler naming them.
//!
//! The core (pool, registry, worker, scheduling loop, deque, job, latch, join, scope, fibers,
//! inbox, sleep, policy, positions, donation) knows of a feature only through a trait declared here. The builder,
//! which knows every feature, makes the feature's object and hands it to the registry; the
//! core calls it at the points the trait names. A pool that uses no feature holds `None` and
//! pays one test of that `Option` where the hook would be called, only on the paths named
//! below, never on a join or spawn that runs in place (the race checker's [`Structure`] is
//! the one whose test a spawn without the join credit pays).
//!
//! * [`CoreSharing`]: programs side by side share the machine's cores (DWS and EP, `dws/`).
//!   Called when a worker starts, on the idle path (a worker that finds nothing to run), when
//!   work is published to sleepers (`Registry::wake`, `Registry::wake_worker`), by the pool's
//!   coordinator thread, and at shutdown.
//! * [`ScheduleRegion`]: a constrained schedule in force over the pool (a region recorded or
//!   followed, `ext/schedule/region.rs`), held in the registry's [`RegionSlot`] while it runs.
//!   Called by the scheduling loop once per round while a region is in force (where it takes
//!   donations, whether it may steal, the stall rule's idle set); without one, a round pays
//!   one relaxed load. Also called by a region's positioned tasks (`position.rs`), where each
//!   child goes and which tasks are cuts: only by tasks of a region, whose fiber says so, so a
//!   join or spawn outside one pays the test of that fiber word and nothing more. The plan sees
//!   the pool only as a [`PoolSide`]: a worker to wake, and whether work waits outside it.
//! * [`Mailboxes`]: workers grouped in places, each place with a mailbox (SLAW's places,
//!   CAB's squads; `places.rs`). Called on the steal path after a worker's nearest victims
//!   (only in a pool that has places: without, the victims are untiered or NUMA-tiered and the
//!   hook is never reached), by the sleep re-check, by the DWS coordinator's estimate, and when
//!   work is published to sleepers.
//! * [`InstallHook`] and [`EndHook`]: the pool handle's installs from a plain thread, run as
//!   schedule regions when the pool records or follows them (`Builder::trace_cuts`,
//!   `Builder::replay`), and the pool's end, when the trace file is written. Called once per
//!   such install and once at the end.
//! * [`Structure`]: the program's fork/join structure as it unfolds (the race checker's tree,
//!   `race/`), held in the extensions as a [`StructureHook`]. A pool that has one never grants
//!   the join credit, so every join reaches the out-of-line `join_cold` and every spawn
//!   `Scope::spawn_checked` (boxed, out of line); both make the child's context there, and a
//!   scope tells the hook of its start and end. A pool without one pays a test of the
//!   worker's `checks` flag in `join_cold`, in a spawn without the credit, and at a scope's
//!   start and end; nothing on a join or spawn on the credit, and its tasks carry nothing.
//!   (The child's context first rode on every published task: 16 bytes and a thread-local
//!   read, which made pdfs 1.10-1.15x slower in a pool without the checker.)
//! * [`Extensions`]: state a feature keeps per pool that the core never reads (the cache
//!   model's leaf log, the topology, the trace recorder). The builder puts it in; the feature
//!   finds its own by type. An empty store costs a feature one length test.
//!
//! * [`Tracing`]: the steal tree recorded as the program runs (`trace/`), held in the
//!   extensions as a [`TracingHook`]. Called where a worker publishes a frame (its [`Tag`]), opens
//!   a scope, takes an item, finds nothing, or goes back to a phase, and where an install from a
//!   plain thread starts a root: always behind the worker's `tracing` flag
//!   (`core/trace_points.rs`), so a pool that does not trace pays one branch there and no call.

use crate::deque::Item;
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::{lock, Mutex};
use std::any::Any;
use std::sync::Arc;

/// A pool whose workers hold cores in a table shared with other programs (`ext/dws/runtime.rs`).
/// Under DWS the pool's idle workers give their cores back and sleep here rather than in the
/// pool's own sleep slots ([`sleeps_workers`](Self::sleeps_workers)); under EP the hook only
/// pins the workers to the program's share of the cores.
pub(crate) trait CoreSharing: Send + Sync + 'static {
    /// Whether idle workers sleep through this hook (DWS) rather than in the pool's sleep slots.
    fn sleeps_workers(&self) -> bool;
    /// Worker `w`'s thread has started: pins it where the table places it.
    fn worker_started(&self, w: usize);
    /// Whether worker `w` starts asleep (its core belongs to another program's share).
    fn starts_asleep(&self, w: usize) -> bool;
    /// Failed steal attempts in a row after which an idle worker gives its core back
    /// (DWS's T_SLEEP).
    fn sleep_after(&self) -> u32;
    /// Whether the core worker `w` holds was taken back by its home program.
    fn lost_core(&self, w: usize) -> bool;
    /// Gives worker `w`'s core back and sleeps until the program may use a core for it and
    /// `has_work` holds, or `done` does (shutdown). `restricted`: a task waits on the worker's
    /// thread, and `has_work` looks only for what it may start (`Sleep::set_restricted`).
    fn sleep(
        &self,
        w: usize,
        restricted: bool,
        has_work: &dyn Fn() -> bool,
        done: &dyn Fn() -> bool,
    );
    /// Work was published: wakes a sleeper on a core the program may use without taking it.
    fn wake_for_work(&self);
    /// Worker `w` has an item only it may run: wakes it when a core allows, never leaving it
    /// asleep with the item.
    fn wake_worker(&self, w: usize);
    /// Workers asleep in this hook now.
    fn sleepers(&self) -> usize;
    /// The coordinator thread's body until shutdown: `queued` estimates the work waiting,
    /// `delivered(w)` says whether worker `w` has items only it may run.
    fn coordinate(&self, queued: &dyn Fn() -> usize, delivered: &dyn Fn(usize) -> bool);
    /// Stops the coordinator and wakes every sleeper (the pool is shutting down).
    fn shutdown(&self);
    /// The feature's own type, for its accessors on `Pool` (`ext/dws/mod.rs`).
    fn as_any(&self) -> &dyn Any;
}

/// A constrained schedule over the pool's workers (StOWS, StUWS, RelWS; `ext/schedule/region.rs`):
/// what the scheduling loop asks of it each round while it is in force, and what the region's
/// positioned tasks ask of it (`position.rs`). Template nodes are the schedule's own numbers,
/// which the core carries in each task's position without reading them.
pub(crate) trait ScheduleRegion: Send + Sync + 'static {
    /// Whether work moves between workers only by donation: the loop must not steal.
    fn strict(&self) -> bool;
    /// Whether donations are taken in the template's order, under the stall rule.
    fn ordered(&self) -> bool;
    /// Whether a task at template node `n` needs only its position, not a template lookup, so
    /// that its in-place joins and spawns keep the worker's credit (a tracked cursor).
    fn tracked(&self, n: Option<u32>) -> bool;
    /// The template node of child `i` of the task at node `n`.
    fn child(&self, n: Option<u32>, i: u32) -> Option<u32>;
    /// Where the child at node `n` must go when created on worker `me`: its worker and template
    /// rank when the template cuts it to another worker.
    fn donee(&self, n: Option<u32>, me: usize) -> Option<(usize, u32)>;
    /// The rank a child at node `n` designated to worker `w` is held under: its template rank
    /// when the template has it cut to `w` too (so `Ordered` runs it in its recorded turn), else
    /// the rank held items take out of the template's order (always allowed).
    fn designated_rank(&self, n: Option<u32>, w: usize) -> u32;
    /// Hands `it` to worker `w` under rank `rank` (a `donee`'s or `designated_rank`'s) and
    /// wakes it.
    fn donate(&self, pool: &dyn PoolSide, w: usize, rank: u32, it: Item);
    /// A task at template node `n` begins on worker `me` (under `Ordered`, its rank there has
    /// begun).
    fn begin(&self, n: Option<u32>, me: usize);
    /// A task at `path` from the region's root began on worker `me`, not the worker that made
    /// it: a cut, recorded with that worker's next rank.
    fn cut(&self, path: Vec<u32>, me: usize);
    /// A donation worker `w` may take now.
    fn take(&self, w: usize) -> Option<Item>;
    /// Whether worker `w` has a donation it may take now.
    fn runnable(&self, w: usize) -> bool;
    /// Worker `w` found nothing this round (`ordered`: it joins the stall rule's idle set).
    fn idle_enter(&self, pool: &dyn PoolSide, w: usize);
    /// Worker `w` starts a round (`ordered`: it leaves the idle set before it takes anything).
    fn idle_leave(&self, w: usize);
}

/// The pool as a schedule region's hooks see it: a worker to wake, and whether work waits
/// outside the region's held queues. The registry is the one implementation; the hooks name
/// this rather than the registry, which names them.
pub(crate) trait PoolSide {
    /// Wakes worker `w` if it sleeps (`Registry::wake_worker`).
    fn wake_worker(&self, w: usize);
    /// Whether an install from outside or a delivery to a worker's inbox waits (SeqCst loads,
    /// as the sleep re-check reads them).
    fn queued_outside(&self) -> bool;
}

/// The label a published task frame carries as its first field, and a fiber as it suspends:
/// two words the core copies and never interprets. The [`Tracing`] hook makes them when the pool
/// traces (`ext/trace/record.rs` says what they mean); elsewhere they stay [`Tag::NONE`], and a
/// task that runs in place writes none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Tag {
    pub(crate) a: u64,
    pub(crate) b: u64,
}

impl Tag {
    /// No label: the pool does not trace, or the frame has no event of its own.
    pub(crate) const NONE: Tag = Tag { a: 0, b: 0 };
}

/// A pool that records its steal tree (`ext/trace/`). Each worker's events are numbered by the
/// worker's own count of spawns and scope openings (`events`, which the core keeps), and each
/// worker runs one phase of the tree at a time.
pub(crate) trait Tracing: Send + Sync + 'static {
    /// The tag of the event worker `me` is about to publish, its event number `events`, at
    /// frame depth `level`.
    fn tag(&self, me: usize, events: u64, level: u32) -> Tag;
    /// The tags of the two items of one event, which publishes both halves of a join (a join
    /// at the stack bound, or one whose halves are donated).
    fn tags(&self, me: usize, events: u64, level: u32) -> (Tag, Tag);
    /// The phase worker `me` runs now, for [`back_to`](Self::back_to).
    fn phase(&self, me: usize) -> u32;
    /// Worker `me` goes back to running its phase `phase`, at event number `events`.
    fn back_to(&self, me: usize, events: u64, phase: u32);
    /// Worker `me` found no work, at event number `events`.
    fn idle(&self, me: usize, events: u64);
    /// Worker `me` took `it`, at event number `events`: popped from its own deque if `popped`
    /// (else stolen, queued from outside, or moved in a batch); `serial` when `it` is the fiber
    /// a child just returned on, popped by the worker that ran the child, so the parent goes on
    /// in the child's phase.
    fn took(&self, me: usize, events: u64, it: Item, popped: bool, serial: bool);
    /// The tag of the root of an install sent from a plain thread.
    fn next_root(&self) -> Tag;
    /// The feature's own type, for its readers (`Pool::trace`).
    fn as_any(&self) -> &dyn Any;
}

/// How a pool holds its [`Tracing`] among its extensions.
pub(crate) struct TracingHook(pub(crate) Arc<dyn Tracing>);

/// Workers grouped in places, each with a mailbox of tasks sent to it (SLAW §IV; CAB's squads,
/// whose mailboxes are inter-socket task pools; `places.rs`). The registry holds one when the
/// pool was built with places or squads; the public API that sends to a mailbox
/// (`Scope::spawn_at`, `Scope::inter_spawn`) is the feature's own.
pub(crate) trait Mailboxes: Send + Sync + 'static {
    /// Number of places.
    fn count(&self) -> usize;
    /// The place of worker `w`.
    fn place_of(&self, w: usize) -> usize;
    /// The tiers of victims worker `me` of `workers` tries in order: its own place, then (with
    /// cross-place stealing) everyone else.
    fn victim_tiers(&self, me: usize, workers: usize) -> [Vec<usize>; 3];
    /// Mail worker `me` may take once its own place's deques are empty (`rand` gives a random
    /// number, for a squad's head to pick another squad's pool from).
    fn take_own(&self, me: usize, rand: &dyn Fn() -> u64) -> Option<Item>;
    /// Mail of other places worker `me` may take once every victim tier is empty (cross-place
    /// stealing only).
    fn take_other(&self, me: usize) -> Option<Item>;
    /// The sleep re-check of worker `me` (SeqCst loads, after the sleeper's fence): whether it
    /// could take mail, or steal from a deque it may steal from (`public(w)`: whether worker
    /// `w`'s deque has public items).
    fn has_visible_work(&self, me: usize, public: &dyn Fn(usize) -> bool) -> bool;
    /// Items in all mailboxes (an estimate).
    fn queued(&self) -> usize;
    /// The feature's own type, for its spawns (`places.rs`).
    fn as_any(&self) -> &dyn Any;
}

/// The fork/join structure of a checked program (`race/`): told of every join, spawn and scope
/// of a task that has a context, and of each such task's beginning and end, so that the
/// feature can keep the task's place in its tree. A context is the feature's own (a pointer
/// to a record the feature made and frees in [`end`](Self::end)); the core keeps the running
/// task's in its fiber's record (`FiberLocal::checked`) and hands it back.
pub(crate) trait Structure: Send + Sync + 'static {
    /// A join in the task whose context is `cur`: the contexts of its two halves, not begun.
    fn join(&self, cur: Ctx) -> (Ctx, Ctx);
    /// The join's halves have both finished: the joiner goes on.
    fn joined(&self, cur: Ctx);
    /// A spawn by the task whose context is `cur`: the child's context, not begun.
    fn spawn(&self, cur: Ctx) -> Ctx;
    /// A scope opens in the task whose context is `cur`, which runs its body.
    fn scope_open(&self, cur: Ctx);
    /// The scope that task opened last has ended (its body and spawns have finished).
    fn scope_close(&self, cur: Ctx);
    /// The task whose context is `c` begins on worker `me`.
    fn begin(&self, c: Ctx, me: usize);
    /// The task whose context is `c` has ended (returned or unwound); `c` is freed.
    fn end(&self, c: Ctx);
    /// The feature's own type, for its entry points (`race::check`).
    fn as_any(&self) -> &dyn Any;
}

/// A task's context in a [`Structure`]: the feature's pointer, which the core only carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ctx(pub(crate) *mut ());

// SAFETY: a context belongs to one task at a time (the feature's `Structure` doc): it is made
// for a task and handed, inside the task's closure, to whichever worker runs it; the task's
// publication orders the maker's writes before the runner's reads.
unsafe impl Send for Ctx {}

/// How a pool holds its [`Structure`] among its extensions.
pub(crate) struct StructureHook(pub(crate) Arc<dyn Structure>);

/// The pool's schedule region, if one is being recorded or followed (`Registry::region`).
#[derive(Default)]
pub(crate) struct RegionSlot {
    active: AtomicBool,
    cur: Mutex<Option<Arc<dyn ScheduleRegion>>>,
}

impl RegionSlot {
    /// The active region (one relaxed load when there is none).
    #[inline]
    pub(crate) fn get(&self) -> Option<Arc<dyn ScheduleRegion>> {
        // Relaxed: a hint; a worker that misses a region that just began takes its donations
        // at its next round (a donation wakes it, and the wake-up orders the flag).
        if !self.active.load(Ordering::Relaxed) {
            return None;
        }
        lock(&self.cur).clone()
    }

    /// Whether a region is active (a hint: one relaxed load).
    #[inline]
    pub(crate) fn active(&self) -> bool {
        // Relaxed: a hint, as in `get`.
        self.active.load(Ordering::Relaxed)
    }

    /// Whether a strict region is active, read after a steal: SeqCst, so a thief that took an
    /// item its victim pushed after the region began sees the region (the item's publication
    /// comes after `begin`'s store in the victim's order, and the steal synchronises with it).
    pub(crate) fn strict_now(&self) -> bool {
        // SeqCst: see above; happens-before through the steal is what makes the flag visible.
        self.active.load(Ordering::SeqCst) && lock(&self.cur).as_ref().is_some_and(|r| r.strict())
    }

    /// Makes `r` the pool's region; false if one is in force already.
    pub(crate) fn begin(&self, r: Arc<dyn ScheduleRegion>) -> bool {
        let mut cur = lock(&self.cur);
        if cur.is_some() {
            return false;
        }
        *cur = Some(r);
        // SeqCst (more than its readers need): the flag carries no data (the region is
        // published by `cur`'s lock), and the reader that must see it, `strict_now` after a
        // steal, is ordered after this store by the steal's synchronisation with the push
        // (see there).
        self.active.store(true, Ordering::SeqCst);
        true
    }

    /// Ends the region in force.
    pub(crate) fn end(&self) {
        let mut cur = lock(&self.cur);
        *cur = None;
        // SeqCst: as in `begin`; a reader that still sees `true` finds `None` under the lock.
        self.active.store(false, Ordering::SeqCst);
    }
}

/// A pool whose installs from a plain thread a feature runs its own way: one schedule region
/// per install, recorded or following the next template (`ext/schedule/region.rs`).
pub(crate) trait InstallHook: Send + Sync + 'static {
    /// Runs `op`, an install from a plain thread, by calling `run_on(home, body)` once: the
    /// pool's own install of `body`, on worker `home` if given, where `body` calls `op` once
    /// inside whatever the feature wraps around it.
    fn install(&self, run_on: RunOn<'_>, op: Body<'_>);
}

/// An install's body, type-erased: called once.
pub(crate) type Body<'a> = &'a mut (dyn FnMut() + Send);

/// The pool's own install of a body, on worker `home` if given (`InstallHook::install`).
pub(crate) type RunOn<'a> = &'a dyn Fn(Option<usize>, Body<'_>);

/// What a feature does as its pool ends (dropped, or the global pool at the process's exit):
/// the trace file is written (`ext/trace/mod.rs`).
pub(crate) type EndHook = Box<dyn Fn(&crate::Pool) + Send + Sync>;

/// Per-pool state of the features that chose to keep some (see the module doc): one value per
/// type, found by type. The core stores it for the pool's lifetime and never looks inside.
#[derive(Default)]
pub(crate) struct Extensions(Vec<Box<dyn Any + Send + Sync>>);

impl Extensions {
    /// Adds `value`, if any, replacing a value of the same type.
    pub(crate) fn with<T: Any + Send + Sync>(mut self, value: Option<T>) -> Self {
        if let Some(v) = value {
            self.0.retain(|b| !b.is::<T>());
            self.0.push(Box::new(v));
        }
        self
    }

    /// The value of type `T`, if the pool has one.
    #[inline]
    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.0.iter().find_map(|b| b.downcast_ref::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_is_found_as_put_and_replaced_by_its_own_kind_only() {
        let e = Extensions::default()
            .with(Some(1u32))
            .with(None::<String>)
            .with(Some("a".to_string()));
        assert_eq!(e.get::<u32>(), Some(&1));
        assert_eq!(e.get::<String>().map(String::as_str), Some("a"));
        assert_eq!(e.get::<u64>(), None);
        let e = e.with(Some(2u32));
        assert_eq!(e.get::<u32>(), Some(&2));
        assert_eq!(e.get::<String>().map(String::as_str), Some("a"));
    }
}
