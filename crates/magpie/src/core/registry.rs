//! The registry: what the workers of one pool share.
//!
//! The thief ends of the workers' deques, the pool's queue of work from outside its workers (an
//! `install` from a plain thread, a scope spawn from a thread that holds a `&Scope`), each
//! worker's inbox (work only that worker may run, see `inbox.rs`), the sleep slots, the counters,
//! SLAW's places or CAB's squads, the core-sharing state of DWS and EP, the trace recorder, and
//! the threads themselves. A pool owns its registry through an `Arc`; each worker thread holds
//! another, so the registry outlives every task, fiber and worker of the pool.
//!
//! Producers of work wake sleepers through the registry: [`Registry::wake`] for work any worker
//! (of the right place) may take, [`Registry::deliver`] for an item that only one worker may
//! take.

use crate::config::Config;
use crate::deque::{Deque, Item, Stealer};
use crate::error::Error;
use crate::hooks::{CoreSharing, Mailboxes};
use crate::inbox::Inbox;
use crate::sleep::Sleep;
use crate::stats::{Stats, WorkerStats};
use crate::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use crate::sync::{CachePadded, Mutex};
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

/// Stack of a worker thread: only the dispatcher runs there.
const THREAD_STACK: usize = 256 * 1024;

/// What every worker of one pool shares.
pub(crate) struct Registry {
    pub config: Config,
    pub(crate) stealers: Vec<Stealer>,
    pub stats: Vec<CachePadded<WorkerStats>>,
    pub(crate) injector: Mutex<VecDeque<Item>>,
    pub(crate) injected: AtomicUsize,
    /// Per worker, items only that worker may take (see `inbox.rs`).
    pub(crate) inboxes: Vec<CachePadded<Inbox>>,
    /// Per worker, the spawn-tree level down to which it publishes adaptive spawns under
    /// oldest-first hand-over (`promote.rs`, "Spawns"): its thieves adopt it with what they take.
    pub(crate) lessons: Vec<CachePadded<AtomicU32>>,
    pub sleep: Sleep,
    pub(crate) terminate: AtomicBool,
    pub(crate) live_fibers: AtomicUsize,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
    /// State the pool keeps for its features (`hooks.rs`), never read by the core.
    pub(crate) extensions: crate::hooks::Extensions,
    /// SLAW's places or CAB's squads, when the pool has them (`places.rs`).
    pub(crate) places: Option<Box<dyn Mailboxes>>,
    /// Core sharing with other programs (`SharingMode::Dws`, `SharingMode::Ep`), when the table could be used.
    pub(crate) sharing: Option<Box<dyn CoreSharing>>,
    /// The schedule region being recorded or followed, if any (`ext/schedule/region.rs`).
    pub(crate) region: crate::hooks::RegionSlot,
    /// Fire-and-forget tasks (`thread_pool::spawn`) not yet finished, and their panic handler.
    pub(crate) spawns: Spawns,
    /// Whether the thread lent as worker 0 (`caller_worker.rs`) is inside the pool now, and
    /// whether the pool is closing to it.
    pub(crate) lent: crate::caller_worker::closing::LentState,
    /// Per worker, its record (a `WorkerThread`) while its thread runs it (null before and
    /// after), for a caller that takes the seat of a sleeping worker (`borrowed_seat.rs`).
    /// Untyped, so that the registry, which the record points to, does not name it.
    pub(crate) seats: Vec<std::sync::atomic::AtomicPtr<()>>,
    /// Whether a caller from outside may take a sleeping worker's seat (`borrowed_seat.rs`):
    /// a plain pool, with none of the features that tie a worker to its thread or watch every
    /// task start, whose threads the user neither named nor started.
    pub(crate) lends_seats: bool,
}

/// One worker of a pool being built, handed to the thread-start function of
/// [`Builder::build_with`](crate::Builder::build_with): the thread that calls [`run`](Self::run)
/// becomes that worker until the pool stops.
pub struct WorkerStart {
    index: usize,
    run: Box<dyn FnOnce() + Send>,
}

impl WorkerStart {
    /// The worker's index in its pool, `0..workers`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The least native stack the worker's thread needs: tasks run on stacks of their own
    /// (`Builder::stack_size`), so this is the scheduling loop's.
    pub fn min_stack_size(&self) -> usize {
        THREAD_STACK
    }

    /// Runs the worker on the calling thread; returns when the pool has stopped.
    pub fn run(self) {
        (self.run)()
    }
}

impl std::fmt::Debug for WorkerStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerStart")
            .field("index", &self.index)
            .finish()
    }
}

impl Registry {
    /// The pool's program-structure hook (the race checker), if it has one.
    pub(crate) fn structure(&self) -> Option<&dyn crate::hooks::Structure> {
        self.extensions
            .get::<crate::hooks::StructureHook>()
            .map(|h| &*h.0)
    }

    /// The pool's tracing hook (the steal tree's recorder), if it traces.
    pub(crate) fn tracer(&self) -> Option<&dyn crate::hooks::Tracing> {
        self.extensions
            .get::<crate::hooks::TracingHook>()
            .map(|h| &*h.0)
    }

    /// The tag of an install's root sent from a plain thread: the next root of the trace, or
    /// none unless the pool traces.
    pub(crate) fn install_tag(&self) -> crate::hooks::Tag {
        self.tracer()
            .map_or(crate::hooks::Tag::NONE, |t| t.next_root())
    }

    /// The tiers of victims worker `index` tries in order: with places, its own place, then (with
    /// cross-place stealing) everyone else; with `Victims::Numa`, its socket, its NUMA node, the
    /// rest; `None` for random victims.
    pub(crate) fn victim_tiers(&self, index: usize) -> Option<[Vec<usize>; 3]> {
        match &self.places {
            Some(pl) => Some(pl.victim_tiers(index, self.config.workers)),
            None => self
                .config
                .numa_locations
                .as_ref()
                .map(|at| tiers_by_distance(index, at)),
        }
    }

    /// A pool's registry, with its workers started (by `spawn` if given, else on threads of
    /// magpie's own), each running `worker_main` (the scheduling loop's entry,
    /// `main_loop::worker_main`, handed in so the registry does not name the loop). With
    /// `config.lent`, worker 0 gets no thread: its deque is returned for the calling thread
    /// (`caller_worker.rs`).
    pub(crate) fn new(
        config: Config,
        worker_main: fn(Arc<Registry>, usize, Deque),
        sharing: Option<Box<dyn CoreSharing>>,
        extensions: crate::hooks::Extensions,
        places: Option<Box<dyn Mailboxes>>,
        mut spawn: Option<&mut dyn FnMut(WorkerStart) -> std::io::Result<()>>,
    ) -> Result<(Arc<Registry>, Option<Deque>), Error> {
        let n = config.workers;
        let deques: Vec<Deque> = (0..n)
            .map(|_| match n {
                1 => Deque::new(256).without_thieves(),
                _ if !config.steal_half => Deque::new(256).without_batches(),
                _ => Deque::new(256),
            })
            .collect();
        let lends_seats = !config.trace
            && !config.never_block
            && !config.migrate
            && !config.lent
            && config.pin_cpus.is_none()
            // Threads the user named or started are ones the user may look for in the call.
            && config.thread_names.is_none()
            && spawn.is_none()
            && sharing.is_none()
            && places.is_none()
            && extensions
                .get::<crate::hooks::StructureHook>()
                .is_none();
        let reg = Arc::new(Registry {
            seats: (0..n)
                .map(|_| std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            lends_seats,
            stealers: deques.iter().map(|d| d.stealer()).collect(),
            stats: (0..n).map(|_| CachePadded::default()).collect(),
            injector: Mutex::new(VecDeque::new()),
            injected: AtomicUsize::new(0),
            inboxes: (0..n).map(|_| CachePadded::default()).collect(),
            lessons: (0..n).map(|_| CachePadded::default()).collect(),
            sleep: Sleep::new(n),
            terminate: AtomicBool::new(false),
            live_fibers: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
            extensions,
            places,
            sharing,
            region: Default::default(),
            spawns: Default::default(),
            lent: Default::default(),
            config,
        });
        let mut lent = None;
        for (index, deque) in deques.into_iter().enumerate() {
            if index == 0 && reg.config.lent {
                lent = Some(deque);
                continue;
            }
            let r = reg.clone();
            let name = match &reg.config.thread_names {
                Some(names) => names[index].clone(),
                None => format!("magpie-{index}"),
            };
            let run = move || worker_main(r, index, deque);
            match spawn.as_mut() {
                None => reg.start_thread(name, run)?,
                Some(spawn) => {
                    let start = WorkerStart {
                        index,
                        run: Box::new(run),
                    };
                    if let Err(e) = spawn(start) {
                        reg.shutdown();
                        return Err(Error::Os(format!("cannot start worker {index}: {e}")));
                    }
                }
            }
        }
        if reg.sharing.is_some() {
            let r = reg.clone();
            reg.start_thread("magpie-coordinator".into(), move || {
                if let Some(s) = &r.sharing {
                    s.coordinate(&|| r.queued(), &|w| r.has_delivered(w));
                }
            })?;
        }
        Ok((reg, lent))
    }

    /// Starts one of the pool's threads, named `name`; if the OS refuses, stops those already
    /// started and says which one could not start.
    pub(crate) fn start_thread(
        &self,
        name: String,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<(), Error> {
        match std::thread::Builder::new()
            .name(name.clone())
            .stack_size(THREAD_STACK)
            .spawn(f)
        {
            Ok(h) => {
                crate::sync::lock(&self.threads).push(h);
                Ok(())
            }
            Err(e) => {
                self.shutdown();
                Err(Error::Os(format!("cannot start thread {name}: {e}")))
            }
        }
    }

    /// Stops the workers and waits for them. Called when the pool is dropped, after every
    /// `install` returned, so there is no work left.
    pub(crate) fn shutdown(&self) {
        // SeqCst: the flag is what the sleepers' re-checks look for, published before
        // `notify_all`'s fence (sleep.rs module doc); the flag carries no data.
        self.terminate.store(true, Ordering::SeqCst);
        self.sleep.notify_all();
        if let Some(s) = &self.sharing {
            s.shutdown();
        }
        let hs: Vec<_> = crate::sync::lock(&self.threads).drain(..).collect();
        for h in hs {
            let _ = h.join();
        }
    }

    /// Queues work from outside the pool's workers, for any of them to take: a blocked caller's
    /// `install`, a task spawned from a plain thread, or (only with `Builder::allow_migration`) a
    /// fiber of this pool made ready by a thread that is not one of its workers.
    pub(crate) fn inject(&self, it: Item) {
        let mut q = crate::sync::lock(&self.injector);
        q.push_back(it);
        // SeqCst: the sleep protocol's publication, before `wake`'s fence (sleep.rs module doc);
        // the lock orders the item itself. Counted under the lock, so a taker (which counts
        // down under it) never takes the item before it is counted: the count never wraps.
        self.injected.fetch_add(1, Ordering::SeqCst);
        drop(q);
        self.wake();
    }

    /// Queues an item that a worker took but may not start (`leapfrog.rs`), and wakes every
    /// sleeper: only some workers may start it (the worker of the sync point that waits for it
    /// always may, once it waits there), and one wake-up could reach only workers that may not,
    /// which would sleep again and leave it there.
    pub(crate) fn inject_orphan(&self, it: Item) {
        self.inject(it);
        match self.sharing.as_ref().filter(|s| s.sleeps_workers()) {
            // Under DWS the workers sleep in the sharing hook's slots, each woken on a core the
            // program may use (or, failing that, by its coordinator, which sees the queue).
            Some(s) => (0..self.config.workers).for_each(|w| s.wake_worker(w)),
            None => self.sleep.notify_all(),
        }
    }

    /// The oldest item of the pool's queue that `may` accepts (`leapfrog.rs`: a thread with a
    /// task waiting on it), read under the queue's lock.
    pub(crate) fn take_injected_where(&self, may: impl Fn(Item) -> bool) -> Option<Item> {
        // Relaxed: a hint, as in `take_injected`.
        if self.injected.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut q = crate::sync::lock(&self.injector);
        let i = q.iter().position(|&it| may(it))?;
        let it = q.remove(i);
        // SeqCst: as in `take_injected`.
        self.injected.fetch_sub(1, Ordering::SeqCst);
        it
    }

    /// Whether the pool's queue holds an item `may` accepts: the sleep re-check of a thread with
    /// a task waiting on it (`leapfrog.rs`), which may start only some of them.
    pub(crate) fn has_injected_where(&self, may: impl Fn(Item) -> bool) -> bool {
        // SeqCst: the sleep protocol's re-check, as in `has_visible_work`; the lock orders the
        // items themselves.
        self.injected.load(Ordering::SeqCst) > 0
            && crate::sync::lock(&self.injector).iter().any(|&it| may(it))
    }

    pub(crate) fn take_injected(&self) -> Option<Item> {
        // Relaxed: a hint; the lock orders the items, and a stale zero is looked at again on the
        // next round (and by the sleep re-check, which reads it SeqCst).
        if self.injected.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut q = crate::sync::lock(&self.injector);
        let it = q.pop_front();
        if it.is_some() {
            // SeqCst: as the increment; the decrement publishes nothing (the lock orders the
            // items), so no more is needed.
            self.injected.fetch_sub(1, Ordering::SeqCst);
        }
        it
    }

    /// Whether worker `me` has work only it may run: its inbox, or a donation of the schedule
    /// region it may take now.
    pub(crate) fn has_delivered(&self, me: usize) -> bool {
        !self.inboxes[me].is_empty() || self.region.get().is_some_and(|r| r.runnable(me))
    }

    /// Whether worker `me` could find work now: the pool's queue, work delivered to it, or a
    /// deque or mailbox it may take from (with places and no cross-place stealing, only its own
    /// place's; under a strict schedule constraint, none: it does not steal).
    pub(crate) fn has_visible_work(&self, me: usize) -> bool {
        // SeqCst: the sleep protocol's re-check (sleep.rs module doc), the only caller: these
        // loads, and those of the helpers below, come after the sleeper's fence and see what a
        // producer published before its own.
        if self.terminate.load(Ordering::SeqCst)
            || self.injected.load(Ordering::SeqCst) > 0
            || self.has_delivered(me)
        {
            return true;
        }
        if self.region.get().is_some_and(|r| r.strict()) {
            return false;
        }
        match &self.places {
            Some(pl) => pl.has_visible_work(me, &|w| self.stealers[w].has_public()),
            None => self.stealers.iter().any(|s| s.has_public()),
        }
    }

    /// Tasks queued in the pool now, where any worker may take them (DWS's `N_b`): the public
    /// parts of the deques, the pool's queue and the mailboxes.
    pub(crate) fn queued(&self) -> usize {
        let mail = self.places.as_ref().map_or(0, |p| p.queued());
        self.stealers.iter().map(|s| s.public_len()).sum::<usize>()
            // Relaxed: an estimate for the DWS coordinator, read once a period; no data.
            + self.injected.load(Ordering::Relaxed)
            + mail
    }

    /// Wakes a sleeper after publishing work. With several places, every sleeper: the one woken
    /// must be able to take the work, and only a worker of the right place may. Under DWS, a
    /// sleeper on a core the program may use without taking it from anyone.
    pub(crate) fn wake(&self) {
        if let Some(s) = self.sharing.as_ref().filter(|s| s.sleeps_workers()) {
            s.wake_for_work();
        } else if self.places.as_ref().is_some_and(|p| p.count() > 1) {
            self.sleep.notify_all();
        } else {
            self.sleep.notify_one();
        }
    }

    /// Delivers `it` to worker `w`'s inbox and wakes `w` (from any thread). Only `w` takes it.
    pub(crate) fn deliver(&self, w: usize, it: Item) {
        self.inboxes[w].push(it);
        self.wake_worker(w);
    }

    /// Wakes worker `w` if it sleeps: under DWS on a core it may use, or later by the
    /// coordinator, never left asleep with items in its inbox (see `ext/dws/runtime.rs`).
    pub(crate) fn wake_worker(&self, w: usize) {
        match self.sharing.as_ref().filter(|s| s.sleeps_workers()) {
            Some(s) => s.wake_worker(w),
            None => self.sleep.notify_worker(w),
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut s = Stats {
            workers: self.config.workers,
            ..Stats::default()
        };
        for w in &self.stats {
            w.add_to(&mut s);
        }
        s.fenced_pops = self.stealers.iter().map(|d| d.fenced_pops()).sum();
        s
    }

    /// Workers asleep now (exposed for tests of the idle protocol).
    pub(crate) fn sleeping(&self) -> usize {
        self.sleep.sleepers() + self.sharing.as_ref().map_or(0, |s| s.sleepers())
    }
}
/// Worker `me`'s victims nearest first, given each worker's `(socket, NUMA node)`: the others on
/// its socket, those on its NUMA node but another socket, the rest (`Victims::Numa`; also
/// `Topology::victim_tiers`).
pub(crate) fn tiers_by_distance(me: usize, at: &[(usize, usize)]) -> [Vec<usize>; 3] {
    let mut t: [Vec<usize>; 3] = Default::default();
    for v in (0..at.len()).filter(|&v| v != me) {
        let tier = if at[v].0 == at[me].0 {
            0
        } else if at[v].1 == at[me].1 {
            1
        } else {
            2
        };
        t[tier].push(v);
    }
    t
}

/// What a pool does with a panic of a spawned task (`thread_pool::spawn`).
pub(crate) type PanicHandler = dyn Fn(Box<dyn Any + Send>) + Send + Sync;

/// A panic handler as a [`Builder`] holds it (cloned with the builder).
#[derive(Clone)]
pub(crate) struct PanicHandlerRef(pub(crate) Arc<PanicHandler>);

impl std::fmt::Debug for PanicHandlerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PanicHandler")
    }
}

/// A registry's fire-and-forget tasks: how many are queued or running, and the panic handler.
#[derive(Default)]
pub(crate) struct Spawns {
    outstanding: AtomicUsize,
    pub(crate) handler: OnceLock<Arc<PanicHandler>>,
}

impl Spawns {
    /// Counts a task about to be queued.
    pub(crate) fn begin(&self) {
        // AcqRel (Relaxed would do): the increment comes before the task is queued, so the task's
        // decrement follows it in the count's order, and no reader ordered after this spawn reads
        // 0 before that decrement; the Acquire loads pair with the decrements, not with this.
        self.outstanding.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a task finished (after its last effect).
    pub(crate) fn end(&self) {
        // Release: the task's effects happen before the drop that sees the count reach 0.
        self.outstanding.fetch_sub(1, Ordering::AcqRel);
    }

    /// Spawned tasks queued or running.
    pub(crate) fn outstanding(&self) -> usize {
        // Acquire: pairs with the tasks' decrements, so a caller that reads 0 sees their effects.
        self.outstanding.load(Ordering::Acquire)
    }

    /// Waits until every spawned task has finished (called when the pool is dropped, from
    /// outside its workers: the workers run the tasks meanwhile).
    pub(crate) fn wait_all(&self) {
        // Acquire: as in `outstanding`: the pool's drop, once this reads 0, sees every task's
        // effects.
        while self.outstanding.load(Ordering::Acquire) != 0 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

impl crate::hooks::PoolSide for Registry {
    fn wake_worker(&self, w: usize) {
        Registry::wake_worker(self, w);
    }

    fn queued_outside(&self) -> bool {
        // SeqCst: as the sleep re-check reads `injected`.
        self.injected.load(Ordering::SeqCst) > 0 || self.inboxes.iter().any(|i| !i.is_empty())
    }
}
