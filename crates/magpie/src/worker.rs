//! Workers: the registry they share, the per-thread dispatcher, fibers, and the scheduling loop.
//!
//! SLAW (Algorithm 1 and Subroutine 1) suspends a task at a sync point whose children are not done,
//! and preempts the parent at a work-first spawn so a thief can take its continuation. Both need the
//! parent's activation frames to be resumable later, possibly on another thread. magpie runs every
//! task on a *fiber* (a stackful coroutine from `corosensei` with its own mmap'd stack and guard
//! page), and each worker thread's own stack is only a small *dispatcher*:
//!
//! ```text
//!  worker thread (native stack): dispatcher loop ── resumes ──▶ fiber (loop fiber running tasks)
//!        ▲                                                         │ yields an Action:
//!        └──────────── SpawnWf(child) · Wait(latch) · Switch(fiber) ◀┘
//! ```
//!
//! * A *loop fiber* runs [`run_loop`]: pop local work, else steal, else sleep. Tasks it finds run
//!   inline on it, nested as plain calls.
//! * `Wait(latch)`: a task at a sync point whose work was taken suspends its fiber. The dispatcher
//!   registers the fiber in the latch (only now, when it is fully suspended) and continues with a
//!   spare loop fiber. The task that sets the latch makes the fiber ready by pushing a `Resume`
//!   item on its own deque (SLAW's "the last child resumes the parent"), where any worker may take
//!   it. A waiting task never blocks its thread, and runs on top of itself only work that it or
//!   its descendants pushed since it last ran here (see `join::SyncMark`).
//! * `SpawnWf(child)`: a work-first scope spawn preempts the parent: the dispatcher starts the child
//!   on a spare fiber, which first publishes the parent's fiber as a continuation, then runs the
//!   child. With nobody stealing, the loop pops the continuation right after the child and resumes
//!   it: the sequential order.
//! * `Switch(fiber)`: a loop fiber popped or stole a `Resume` item; it parks itself as a spare and
//!   the dispatcher resumes the target. (A `Batch` item, several items a victim handed over at
//!   once, is unpacked into the loop's own deque.)
//!
//! Fibers move between threads. Each fiber keeps a [`FiberLocal`] record in its own stack (frame
//! depth, how often it was resumed, stack bounds); the worker points at the record of the fiber it
//! runs. Code on a fiber that finds its record's resume count unchanged knows it has not left its
//! worker, so the `join` fast path looks the worker up once. Anywhere else, code re-reads the
//! current worker after anything that may suspend, through [`current`], which is never inlined,
//! so no thread-local address is cached across a suspension.

use crate::deque::{Deque, Item, Pushed, Steal, Stealer};
use crate::error::Error;
use crate::inbox::Inbox;
use crate::job::{JobRef, Work};
use crate::latch::{CountLatch, Latch};
use crate::policy::{Adaptive, Policy, Thresholds};
use crate::share::Mode;
use crate::sleep::Sleep;
use crate::stats::{Stats, WorkerStats};
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{CachePadded, Mutex};
use crate::trace::record::{Cursor, Recorder, Tag};
use crate::trace::{Origin, Taken};
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Failed steal rounds before a worker goes to sleep (DWS's T_SLEEP, counted in rounds over all
/// victims). Small: an idle pool should cost nothing.
const SPIN_ROUNDS: u32 = 64;
/// Rounds after which an idle worker yields its core between rounds.
const YIELD_AFTER: u32 = 16;
/// Spare loop fibers a worker keeps for reuse.
const MAX_SPARES: usize = 32;
/// In-place joins granted per look at the deque (`WorkerThread::grant_credit`): a steal of the
/// items a worker keeps for thieves is noticed at most this many joins late (a thief that asks,
/// by raising `wanted`, is heard at the next join). A pool's counters are exact once its work
/// has finished.
pub(crate) const CREDIT: u32 = 32;
/// Bytes that must be left on a fiber's stack for a spawn to run its child inline.
pub(crate) const STACK_RESERVE: usize = 64 * 1024;
/// Stack of a worker thread: only the dispatcher runs there.
const THREAD_STACK: usize = 256 * 1024;

/// A pool's settings, validated by the builder.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub workers: usize,
    pub policy: Policy,
    pub thresholds: Thresholds,
    pub stack_size: usize,
    pub max_fibers: usize,
    /// Whether workers time the costs of steals (`Builder::measure_overheads`).
    pub overheads: bool,
    /// Whether a thief's request is answered with a batch (`Builder::steal_half`).
    pub steal_half: bool,
    /// Whether workers record a steal tree (`Builder::trace`).
    pub trace: bool,
    /// The machine as the pool sees it (`Builder::topology`).
    pub topology: crate::topology::Topology,
    /// Whether each worker is pinned to its core of `topology` (`Builder::pin`).
    pub pin: bool,
    /// How thieves pick victims (`Builder::victims`).
    pub victims: crate::topology::Victims,
    /// SLAW's places (`Builder::places`): `Some(cross_steal)` groups workers by socket.
    pub places: Option<bool>,
    /// CAB's squads (`Builder::squads`): places whose mailboxes are inter-socket task pools,
    /// served by each squad's head worker one task at a time.
    pub squads: bool,
    /// Whether `Scope::inter_spawn_at` honours its squad (`Builder::squad_hints`).
    pub squad_hints: bool,
    /// A boundary level that overrides Eq. 4 (`Builder::boundary_level`).
    pub boundary_level: Option<u32>,
    /// Whether leaf tasks' declared accesses are recorded (`Builder::record_leaves`).
    pub record_leaves: bool,
    /// Sleep per MiB a recorded leaf declares (`Builder::pace_leaves`).
    pub leaf_pace: std::time::Duration,
    /// How the pool shares cores with other programs (`Builder::share`).
    pub share: crate::share::Mode,
    /// DWS's T_SLEEP in failed steals (`Builder::share_sleep_after`); `None`: the cores usable.
    pub share_sleep_after: Option<u32>,
    /// DWS's T (`Builder::share_period`).
    pub share_period: std::time::Duration,
    /// The core table file (`Builder::share_table`); `None`: `share::default_path()`.
    pub share_table: Option<std::path::PathBuf>,
    /// Whether a started task's stack may move to another worker (`Builder::allow_migration`,
    /// an `unsafe` opt-in): ready fibers go on the setter's deque and work-first parents are
    /// published as stealable continuations, as in SLAW. Off: every fiber is resumed by its home.
    pub migrate: bool,
}

/// What every worker of one pool shares.
pub(crate) struct Registry {
    pub config: Config,
    stealers: Vec<Stealer>,
    pub stats: Vec<CachePadded<WorkerStats>>,
    injector: Mutex<VecDeque<Item>>,
    injected: AtomicUsize,
    /// Per worker, items only that worker may take (see `inbox.rs`).
    inboxes: Vec<CachePadded<Inbox>>,
    pub sleep: Sleep,
    terminate: AtomicBool,
    live_fibers: AtomicUsize,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The steal tree being recorded, when the pool traces.
    pub recorder: Option<Recorder>,
    /// Per worker, the leaf tasks recorded by `cachemodel::leaf`, when the pool records them.
    pub leaves: Option<Vec<CachePadded<Mutex<Vec<crate::cachemodel::LeafTask>>>>>,
    /// When the pool started (the clock of recorded leaves).
    pub epoch: Instant,
    /// SLAW's places, when the pool has them.
    pub places: Option<Places>,
    /// Core sharing with other programs (`Mode::Dws`, `Mode::Ep`), when the table could be used.
    pub sharing: Option<crate::share::runtime::Sharing>,
}

/// SLAW §IV: workers grouped into places (one per socket of the topology that has workers), each
/// with a mailbox for tasks sent to it from elsewhere. An idle worker looks in its own deque, then
/// the deques of its place, then its place's mailbox; with `cross_steal`, only then at other
/// places' deques and mailboxes (SLAW's stated future work; off by default, as in SLAW).
pub(crate) struct Places {
    /// The place of each worker.
    pub of_worker: Vec<usize>,
    /// The workers of each place.
    pub workers: Vec<Vec<usize>>,
    mailboxes: Vec<CachePadded<Mutex<VecDeque<Item>>>>,
    /// Items in all mailboxes (a hint for sleepers).
    mail: AtomicUsize,
    pub cross_steal: bool,
    /// CAB (§III-A, Algorithm I): the places are squads, their mailboxes the inter-socket task
    /// pools, taken only by each squad's head worker (its first), and only while the squad runs
    /// no other inter-socket task (`busy`).
    pub squads: bool,
    busy: Vec<AtomicBool>,
    /// CAB with squad hints (`Builder::squad_hints`): a head takes another squad's inter-socket
    /// task only while that squad is busy, since an idle squad's head takes its own soon; the
    /// task then runs on the socket it was named for.
    hints: bool,
}

impl Places {
    fn new(
        topology: &crate::topology::Topology,
        workers: usize,
        cross_steal: bool,
        squads: bool,
        hints: bool,
    ) -> Places {
        let mut sockets: Vec<usize> = Vec::new();
        let mut of_worker = Vec::with_capacity(workers);
        for w in 0..workers {
            let s = topology.socket_of(w);
            let p = match sockets.iter().position(|&x| x == s) {
                Some(p) => p,
                None => {
                    sockets.push(s);
                    sockets.len() - 1
                }
            };
            of_worker.push(p);
        }
        let mut ws = vec![Vec::new(); sockets.len()];
        for (w, &p) in of_worker.iter().enumerate() {
            ws[p].push(w);
        }
        Places {
            of_worker,
            mailboxes: (0..sockets.len()).map(|_| Default::default()).collect(),
            workers: ws,
            mail: AtomicUsize::new(0),
            cross_steal,
            squads,
            busy: (0..sockets.len()).map(|_| AtomicBool::new(false)).collect(),
            hints,
        }
    }

    /// CAB: squad `p` finished its inter-socket task.
    pub(crate) fn set_idle(&self, p: usize) {
        self.busy[p].store(false, Ordering::SeqCst);
    }

    /// CAB, Algorithm I steps 4-6(b): worker `me`, if it is its squad's head and the squad runs
    /// no inter-socket task, takes one from its squad's pool, else from another squad's (from a
    /// random one on; with hints, only from a busy squad's), and marks its squad busy.
    fn take_inter(&self, me: usize, start: usize) -> Option<Item> {
        let p = self.of_worker[me];
        if self.workers[p][0] != me || self.busy[p].load(Ordering::SeqCst) {
            return None;
        }
        let n = self.count();
        for k in 0..n {
            let q = if k == 0 { p } else { (p + start + k) % n };
            if k > 0 && (q == p || (self.hints && !self.busy[q].load(Ordering::SeqCst))) {
                continue;
            }
            if let Some(it) = self.take(q) {
                self.busy[p].store(true, Ordering::SeqCst);
                return Some(it);
            }
        }
        None
    }

    pub(crate) fn count(&self) -> usize {
        self.workers.len()
    }

    /// Sends `it` to place `p`'s mailbox.
    pub(crate) fn send(&self, p: usize, it: Item) {
        crate::sync::lock(&self.mailboxes[p]).push_back(it);
        self.mail.fetch_add(1, Ordering::SeqCst);
    }

    fn take(&self, p: usize) -> Option<Item> {
        if self.mail.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let it = crate::sync::lock(&self.mailboxes[p]).pop_front();
        if it.is_some() {
            self.mail.fetch_sub(1, Ordering::SeqCst);
        }
        it
    }

    fn has_mail(&self, p: usize) -> bool {
        self.mail.load(Ordering::SeqCst) > 0 && !crate::sync::lock(&self.mailboxes[p]).is_empty()
    }
}

impl Registry {
    pub(crate) fn new(config: Config) -> Result<Arc<Registry>, Error> {
        crate::overflow::install();
        let n = config.workers;
        let deques: Vec<Deque> = (0..n)
            .map(|_| match n {
                1 => Deque::new(256).without_thieves(),
                _ if !config.steal_half => Deque::new(256).without_batches(),
                _ => Deque::new(256),
            })
            .collect();
        let reg = Arc::new(Registry {
            stealers: deques.iter().map(|d| d.stealer()).collect(),
            stats: (0..n).map(|_| CachePadded::default()).collect(),
            injector: Mutex::new(VecDeque::new()),
            injected: AtomicUsize::new(0),
            inboxes: (0..n).map(|_| CachePadded::default()).collect(),
            sleep: Sleep::new(n),
            terminate: AtomicBool::new(false),
            live_fibers: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
            recorder: config.trace.then(|| Recorder::new(n)),
            leaves: config
                .record_leaves
                .then(|| (0..n).map(|_| Default::default()).collect()),
            places: config.places.map(|cross| {
                Places::new(
                    &config.topology,
                    n,
                    cross,
                    config.squads,
                    config.squad_hints,
                )
            }),
            epoch: Instant::now(),
            sharing: crate::share::runtime::Sharing::start(&config),
            config,
        });
        for (index, deque) in deques.into_iter().enumerate() {
            let r = reg.clone();
            reg.start_thread(format!("magpie-{index}"), move || {
                worker_main(r, index, deque)
            })?;
        }
        if reg.sharing.is_some() {
            let r = reg.clone();
            reg.start_thread("magpie-coordinator".into(), move || {
                if let Some(s) = &r.sharing {
                    s.coordinate(|| r.queued(), |w| !r.inboxes[w].is_empty());
                }
            })?;
        }
        Ok(reg)
    }

    /// Starts one of the pool's threads, named `name`; if the OS refuses, stops those already
    /// started and says which one could not start.
    fn start_thread(&self, name: String, f: impl FnOnce() + Send + 'static) -> Result<(), Error> {
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

    /// Queues work from outside the pool's workers (a blocked caller of `install`, or a fiber of
    /// this pool made ready by a worker of another pool).
    pub(crate) fn inject(&self, it: Item) {
        crate::sync::lock(&self.injector).push_back(it);
        self.injected.fetch_add(1, Ordering::SeqCst);
        self.wake();
    }

    fn take_injected(&self) -> Option<Item> {
        if self.injected.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut q = crate::sync::lock(&self.injector);
        let it = q.pop_front();
        if it.is_some() {
            self.injected.fetch_sub(1, Ordering::SeqCst);
        }
        it
    }

    /// Whether worker `me` could find work now: the pool's queue, or a deque or mailbox it may
    /// take from (with places and no cross-place stealing, only its own place's).
    fn has_visible_work(&self, me: usize) -> bool {
        if self.terminate.load(Ordering::SeqCst)
            || self.injected.load(Ordering::SeqCst) > 0
            || !self.inboxes[me].is_empty()
        {
            return true;
        }
        match &self.places {
            Some(pl) if pl.squads => {
                let p = pl.of_worker[me];
                pl.workers[p].iter().any(|&w| self.stealers[w].has_public())
                    || (pl.workers[p][0] == me
                        && !pl.busy[p].load(Ordering::SeqCst)
                        && (0..pl.count()).any(|q| pl.has_mail(q)))
            }
            Some(pl) if !pl.cross_steal => {
                let p = pl.of_worker[me];
                pl.has_mail(p) || pl.workers[p].iter().any(|&w| self.stealers[w].has_public())
            }
            Some(pl) => {
                (0..pl.count()).any(|p| pl.has_mail(p))
                    || self.stealers.iter().any(|s| s.has_public())
            }
            None => self.stealers.iter().any(|s| s.has_public()),
        }
    }

    /// Tasks queued in the pool now, where any worker may take them (DWS's `N_b`): the public
    /// parts of the deques, the pool's queue and the mailboxes.
    fn queued(&self) -> usize {
        let mail = self
            .places
            .as_ref()
            .map_or(0, |p| p.mail.load(Ordering::Relaxed));
        self.stealers.iter().map(|s| s.public_len()).sum::<usize>()
            + self.injected.load(Ordering::Relaxed)
            + mail
    }

    /// Wakes a sleeper after publishing work. With several places, every sleeper: the one woken
    /// must be able to take the work, and only a worker of the right place may. Under DWS, a
    /// sleeper on a core the program may use without taking it from anyone.
    pub(crate) fn wake(&self) {
        if let Some(s) = self.sharing.as_ref().filter(|s| s.mode == Mode::Dws) {
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
    /// coordinator, never left asleep with items in its inbox (see `share/runtime.rs`).
    fn wake_worker(&self, w: usize) {
        match self.sharing.as_ref().filter(|s| s.mode == Mode::Dws) {
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

    /// The sharing mode in force: `off` when a mode that needs the table could not use it.
    pub(crate) fn share_mode(&self) -> Mode {
        match (self.config.share, &self.sharing) {
            (Mode::Dws | Mode::Ep, None) => Mode::Off,
            (m, _) => m,
        }
    }

    /// Workers asleep now (exposed for tests of the idle protocol).
    pub(crate) fn sleeping(&self) -> usize {
        self.sleep.sleepers() + self.sharing.as_ref().map_or(0, |s| s.sleepers())
    }
}

type Co = Coroutine<Cmd, Action, (), DefaultStack>;

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
    /// Wait on a latch at the sync point named by the tag.
    Wait(*const Latch, Tag),
    /// Resume this ready fiber (the loop fiber that found it parks itself).
    Switch(FiberPtr),
}

/// A stackful coroutine with its own stack, owned by whoever holds the box: the dispatcher while it
/// runs, a latch while it waits, a deque item while it is ready.
pub(crate) struct Fiber {
    co: Co,
    registry: *const Registry,
    /// The worker that created the fiber and the only one that resumes it (unless the pool
    /// allows migration): its thread is the one the fiber's stack runs on.
    home: usize,
    /// Set when the fiber suspended waiting at a sync point (and cleared when it is resumed), so
    /// that the switch back into it is counted as a victim's cost when overheads are measured.
    waited: Cell<bool>,
    /// When tracing: the event at which the fiber was published (a work-first continuation) or
    /// the sync point at which it suspended, and which of the two (`at_sync`).
    tag: Cell<Tag>,
    at_sync: Cell<bool>,
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
    fn from_box(f: Box<Fiber>) -> FiberPtr {
        FiberPtr(std::ptr::NonNull::from(Box::leak(f)))
    }

    /// # Safety
    /// The pointer came from `from_box` and no other holder turns it back into the box.
    unsafe fn into_box(self) -> Box<Fiber> {
        // SAFETY: by the caller's contract, the box is ours alone.
        unsafe { Box::from_raw(self.0.as_ptr()) }
    }

    /// The fiber's shared fields.
    ///
    /// # Safety
    /// The fiber is alive: it is suspended and its box has not been turned back yet.
    unsafe fn get<'a>(self) -> &'a Fiber {
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
        // SAFETY: the registry outlives its fibers (fibers are dropped by its worker threads).
        unsafe { &*self.registry }
            .live_fibers
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// A fiber's own state, in its own stack (so it travels with the fiber).
pub(crate) struct FiberLocal {
    yielder: *const Yielder<Cmd, Action>,
    /// Lowest usable stack address.
    stack_limit: usize,
    /// Lowest address of the stack's mapping: its guard page starts here.
    guard_low: usize,
    /// Task frames on this fiber's logical stack (SLAW's on-stack frames).
    pub depth: Cell<u32>,
    /// Bumped each time the fiber is resumed after a suspension. A sync point that sees the same
    /// count as when it pushed knows that nothing else ran on its worker in between, so the items
    /// pushed since are its own descendants and the worker is the same.
    pub resumed: Cell<u64>,
}

impl FiberLocal {
    /// Whether at least `STACK_RESERVE` bytes are left below the caller's frame: `stack_left() >=
    /// STACK_RESERVE` as one add and one compare (on the spawn fast path, the subtraction with
    /// saturation cost fib(36) 7% at one worker).
    #[inline(always)]
    pub(crate) fn has_reserve(&self) -> bool {
        let here = 0u8;
        std::ptr::addr_of!(here) as usize >= self.stack_limit + STACK_RESERVE
    }

    /// Bytes left on this fiber's stack below the caller's frame.
    #[inline(always)]
    pub(crate) fn stack_left(&self) -> usize {
        let here = 0u8;
        (std::ptr::addr_of!(here) as usize).saturating_sub(self.stack_limit)
    }
}

/// A worker's thread-local state. Lives on the worker thread's native stack.
pub(crate) struct WorkerThread {
    pub index: usize,
    pub registry: Arc<Registry>,
    pub deque: Deque,
    /// The running fiber's record.
    fiber: Cell<*const FiberLocal>,
    /// This worker's counters (an entry of `registry.stats`).
    stats: *const WorkerStats,
    /// Copies of the pool's settings, read on every spawn.
    pub policy: Policy,
    pub thresholds: Thresholds,
    /// Items to keep published before spawns run in place (`join::KEEP`; none in a one-worker
    /// pool, which has no thieves: work from outside arrives through the injector).
    pub keep: isize,
    /// In-place joins this worker may still run before it looks at its deque again: lazy
    /// publication's check, made once per [`CREDIT`] joins instead of on every join.
    credit: Cell<u32>,
    /// `credit` when last granted or counted: `granted - credit` in-place joins ran since and
    /// are not yet in the stats.
    granted: Cell<u32>,
    /// One more than the deepest frame depth counted in `max_frames` by an in-place join (never
    /// above S): an in-place join below it has nothing to update.
    frames_hw: Cell<u32>,
    /// A work-first parent waiting to be published by the child's frame.
    pending_cont: Cell<Option<FiberPtr>>,
    /// Ready fibers of this worker made ready by this worker itself (a local delivery, which
    /// needs no lock): taken before the inbox and the deque.
    ready: RefCell<VecDeque<FiberPtr>>,
    /// Deferred completions: `finished` tasks of the scope counted by `finished_scope` ran here and
    /// are not yet subtracted from its count. Consecutive tasks of one scope are thus counted with
    /// one atomic instead of one each, and the count's cache line stays with its spawner.
    finished_scope: Cell<*const CountLatch>,
    finished: Cell<usize>,
    adaptive: Adaptive,
    /// With `Config::overheads`: when a fiber switch that a victim pays for began (a waiting
    /// task suspending, or a waiting task being resumed); the fiber that runs next adds the time.
    switch_began: Cell<Option<Instant>>,
    rng: Cell<u64>,
    /// Whether the pool traces (`registry.recorder` is set).
    pub tracing: bool,
    /// Where this worker is in its trace log.
    cursor: Cursor,
    /// With `Victims::Numa`: the other workers by distance (same socket, same NUMA node, the
    /// rest); `None` for random victims.
    tiers: Option<[Vec<usize>; 3]>,
    /// A work-first parent whose child has just returned on the fiber that ran it: popping its
    /// continuation next is the sequential order, not an early resumption (tracing only).
    serial_cont: Cell<Option<FiberPtr>>,
    // Boxed: a fiber's address goes into latches and deque items, so it must not move.
    #[allow(clippy::vec_box)]
    spares: RefCell<Vec<Box<Fiber>>>,
}

thread_local! {
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(std::ptr::null()) };
}

/// The worker running the caller, if any. Never inlined: see the module doc.
#[inline(never)]
pub(crate) fn current() -> Option<&'static WorkerThread> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: the pointer is set by `worker_main` for the lifetime of its thread and cleared before
    // the `WorkerThread` is dropped. Callers do not keep the reference across a suspension.
    unsafe { p.as_ref() }
}

/// The guard region (guard page and slack) of the fiber running on this thread, if any; for the
/// stack-overflow handler (`overflow.rs`), so it reads plain memory only.
pub(crate) fn guard_of_running_fiber() -> Option<(usize, usize)> {
    let wt = CURRENT.with(|c| c.get());
    if wt.is_null() {
        return None;
    }
    // SAFETY: `wt` is this thread's live WorkerThread; its `fiber` is null or the running fiber's
    // record, which lives in that fiber's stack.
    let fl = unsafe { (*wt).fiber.get() };
    if fl.is_null() {
        return None;
    }
    // SAFETY: as above.
    let fl = unsafe { &*fl };
    Some((fl.guard_low, fl.stack_limit))
}

/// [`current`], inlined. Only for the first statement of a function that is itself never inlined
/// and reads no other thread-local after code that may suspend (`join` is the one user): within
/// one function the compiler may reuse a thread-local address computed earlier, which is only
/// wrong if the fiber moved to another thread in between.
#[inline(always)]
pub(crate) fn current_at_entry() -> Option<&'static WorkerThread> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: as in `current`.
    unsafe { p.as_ref() }
}

impl WorkerThread {
    #[inline(always)]
    pub(crate) fn stats(&self) -> &WorkerStats {
        // SAFETY: points at this worker's entry of `registry.stats`, which lives as long as the
        // registry, which `self` keeps alive.
        unsafe { &*self.stats }
    }

    /// The record of the fiber running now. Valid while that fiber runs: a caller that may have
    /// been suspended since must look it up again (or keep using the same record, which travels
    /// with its fiber).
    #[inline(always)]
    pub(crate) fn fiber_local(&self) -> &'static FiberLocal {
        // SAFETY: set by the fiber itself whenever it (re)starts on this worker; the record lives
        // in that fiber's stack for the fiber's whole life.
        unsafe { &*self.fiber.get() }
    }

    /// Pops the newest item at a sync point that may take its own pushed half back. The deque
    /// shrinks, so the join credit is settled: the next join looks at the deque again.
    #[inline(always)]
    pub(crate) fn pop_back(&self) -> Option<Item> {
        self.settle_credit();
        self.deque.pop()
    }

    /// Pushes work on this worker's deque, waking a sleeper if it became visible to thieves.
    #[inline(always)]
    pub(crate) fn push(&self, w: Work) {
        let t = self.deque.top();
        self.push_with_top(w, t);
    }

    /// `push` with a freshly read `top` (see `Deque::push_with_top`).
    #[inline(always)]
    pub(crate) fn push_with_top(&self, w: Work, t: isize) {
        let len = (self.deque.bottom() - t + 1) as u64;
        if self.deque.push_with_top(w.encode(), t) == Pushed::Released {
            self.registry.wake();
        }
        self.stats().max_fresh.max(len);
    }

    /// Decides one spawn at frame depth `depth` with `fresh` tasks in the deque: true for
    /// work-first. The caller counts the spawn ([`count_spawn`](Self::count_spawn)) once it knows
    /// how the spawn is carried out.
    #[inline(always)]
    pub(crate) fn decide(&self, requested: Policy, depth: u32, fresh: isize) -> bool {
        self.stats().max_frames.max(depth as u64 + 1);
        match requested {
            Policy::WorkFirst => true,
            Policy::HelpFirst => false,
            Policy::Adaptive => self.decide_adaptive(depth, fresh),
        }
    }

    /// Counts one spawn as carried out: work-first (the child ran first, in place or on a fresh
    /// fiber) or help-first (the child was published).
    #[inline(always)]
    pub(crate) fn count_spawn(&self, work_first: bool) {
        if work_first {
            self.stats().spawns_wf.bump()
        } else {
            self.stats().spawns_hf.bump()
        }
    }

    /// Records that a task of the scope counted by `count` finished here; the count is subtracted
    /// later, by `flush_finished`.
    #[inline]
    pub(crate) fn defer_finish(&self, count: &CountLatch) {
        if !std::ptr::eq(self.finished_scope.get(), count) {
            self.flush_finished();
            self.finished_scope.set(count);
        }
        self.finished.set(self.finished.get() + 1);
    }

    /// Subtracts the deferred completions from their scope's count (making its waiter ready if
    /// they were the last). Called before this worker starts anything that is not another task of
    /// the same scope, looks for work elsewhere, sleeps or suspends, so a scope's completion is
    /// never held up by a worker doing something else. Returns whether a waiter became ready.
    #[inline]
    pub(crate) fn flush_finished(&self) -> bool {
        self.settle_credit();
        let n = self.finished.replace(0);
        if n == 0 {
            return false;
        }
        let count = self.finished_scope.replace(std::ptr::null());
        // SAFETY: the scope cannot end (and free its count) while these completions are
        // outstanding: its count stays above zero until they are subtracted, here.
        match unsafe { &*count }.decrement_by(n) {
            Some(w) => {
                make_ready(w);
                true
            }
            None => false,
        }
    }

    /// Flushes deferred completions unless they belong to the scope counted by `count`.
    #[inline]
    pub(crate) fn flush_finished_unless(&self, count: &CountLatch) {
        if !std::ptr::eq(self.finished_scope.get(), count) {
            self.flush_finished();
        }
    }

    /// Whether a `join` at frame depth `depth` may run in place without looking at its deque:
    /// the worker has credit left from its last look, no thief is asking for work (`wanted`, on
    /// a line thieves write only to ask), and the depth is below the deepest frame it has already
    /// counted (so `max_frames` and the stack condition S need no update). The caller then spends
    /// one credit ([`spend_credit`](Self::spend_credit)). The credit bounds how long a steal of
    /// the kept items goes unnoticed; `wanted` makes a thief that found nothing heard at once,
    /// however rare the spawns (nqueens spawns only in its top rows, between long searches).
    #[inline(always)]
    pub(crate) fn has_credit(&self, depth: u32) -> bool {
        self.credit.get() != 0 && depth < self.frames_hw.get() && !self.deque.wanted()
    }

    /// Spends one credit: the in-place join is counted at the next
    /// [`settle_credit`](Self::settle_credit).
    #[inline(always)]
    pub(crate) fn spend_credit(&self) {
        self.credit.set(self.credit.get() - 1);
    }

    /// The look behind the credit: whether a `join` at frame depth `depth` may run in place
    /// (lazy publication: the deque keeps `keep` items for thieves, no thief asked for more, and
    /// the stack condition allows another frame). If so, grants [`CREDIT`] in-place joins; if not,
    /// none, so the next join looks again.
    #[cold]
    #[inline(never)]
    pub(crate) fn grant_credit(&self, depth: u32) -> bool {
        self.settle_credit();
        let fresh = self.deque.bottom() - self.deque.top();
        let ok = fresh >= self.keep && !self.deque.wanted() && depth < self.thresholds.stack;
        if !ok {
            return false;
        }
        if depth >= self.frames_hw.get() {
            self.frames_hw.set(depth + 1);
            self.stats().max_frames.max(depth as u64 + 1);
        }
        self.credit.set(CREDIT);
        self.granted.set(CREDIT);
        true
    }

    /// Counts the in-place joins run on the credit (as spawns of the pool's policy: work-first
    /// for Adaptive, whose in-place joins run in work-first order; and towards the adaptive
    /// heuristic's interval) and withdraws what is left, so the next join looks at the deque.
    /// Called wherever the deque may have changed under the credit (the worker popped back
    /// published work, or turns to another task) and before anything that lets another thread
    /// see this worker's work as finished (a latch set, a scope's count decremented), so
    /// `Pool::stats` after `install` counts every spawn.
    #[inline]
    pub(crate) fn settle_credit(&self) {
        let n = self.granted.get() - self.credit.get();
        self.credit.set(0);
        self.granted.set(0);
        if n != 0 {
            self.count_in_place(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn count_in_place(&self, n: u32) {
        if self.policy == Policy::HelpFirst {
            self.stats().spawns_hf.add(n as u64);
        } else {
            self.stats().spawns_wf.add(n as u64);
        }
        if self.policy == Policy::Adaptive
            && self
                .adaptive
                .tick_by(&self.thresholds, n, || self.stats().stolen_from())
        {
            self.stats().policy_switches.bump();
        }
    }

    #[inline(always)]
    fn decide_adaptive(&self, depth: u32, fresh: isize) -> bool {
        let (wf, switched) =
            self.adaptive
                .decide(&self.thresholds, depth, fresh.max(0) as usize, || {
                    self.stats().stolen_from()
                });
        if switched {
            self.stats().policy_switches.bump();
        }
        wf
    }

    /// Whether the stack condition holds for the running fiber: S frames, or too few bytes left.
    #[inline(always)]
    pub(crate) fn stack_full(&self, fl: &FiberLocal) -> bool {
        fl.depth.get() >= self.thresholds.stack || !fl.has_reserve()
    }

    /// Spawns and scope openings this worker has run (scopes are counted only when tracing): the
    /// event count tracing numbers a phase's events by (exact at any time: in-place joins not yet
    /// settled are `granted - credit`).
    #[inline]
    pub(crate) fn event_count(&self) -> u64 {
        let st = self.stats();
        st.spawns_wf.get()
            + st.spawns_hf.get()
            + st.scopes.get()
            + (self.granted.get() - self.credit.get()) as u64
    }

    /// The tag of the event about to run at frame depth `level` (none unless the pool traces).
    /// The check is inline; the tag is computed out of line, so that the spawn functions whose
    /// publishing branches call this keep a small fast path when tracing is off.
    #[inline(always)]
    pub(crate) fn trace_tag(&self, level: u32) -> Tag {
        if !self.tracing {
            return Tag::NONE;
        }
        self.trace_tag_now(level)
    }

    #[cold]
    #[inline(never)]
    fn trace_tag_now(&self, level: u32) -> Tag {
        self.cursor.tag(self.index, self.event_count(), level)
    }

    /// Tracing: a scope opens at frame depth `level`; returns the tag of its opening event,
    /// which names its sync point. Scope openings are events only when tracing.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_scope_open(&self, level: u32) -> Tag {
        let tag = self.trace_tag_now(level);
        self.stats().scopes.bump();
        tag
    }

    fn recorder(&self) -> &Recorder {
        self.registry
            .recorder
            .as_ref()
            .expect("tracing without a recorder")
    }

    /// Tracing: the worker found no work of its own.
    fn trace_idle(&self) {
        self.cursor
            .idle(self.recorder(), self.index, self.event_count());
    }

    /// Tracing: the worker took `w`; start or resume the phase it belongs to.
    fn trace_take(&self, w: Work, took: Took) {
        let rec = self.recorder();
        let count = self.event_count();
        let serial = self.serial_cont.take();
        let me = self.index;
        let origin = |tag: Tag, taken: Taken| match (tag.root_ordinal(), tag.event()) {
            (Some(ordinal), _) => Origin::Root { ordinal },
            (None, Some(from)) => Origin::Stolen {
                from,
                taken,
                level: tag.level(),
            },
            (None, None) => Origin::External,
        };
        match w {
            Work::Task { job, continuation } => {
                // SAFETY: in a tracing pool every task frame that goes on a deque starts with its
                // tag (see `JobRef::tag`).
                let tag = unsafe { job.tag() };
                let taken = if continuation {
                    Taken::Continuation
                } else {
                    Taken::Child
                };
                match self.cursor.own_phase(me, tag) {
                    Some(idx) if took == Took::Popped => self.cursor.switch_to(rec, me, count, idx),
                    // Stolen, queued from outside, or moved here in a batch from a victim.
                    _ => self.cursor.begin(rec, me, count, origin(tag, taken)),
                }
            }
            Work::Resume(f) => {
                // SAFETY: a ready fiber's box stays alive until it is resumed; only the worker
                // that took its item reads it.
                let fb = unsafe { f.get() };
                let tag = fb.tag.get();
                let own = self
                    .cursor
                    .own_phase(me, tag)
                    .filter(|_| took == Took::Popped);
                let o = if fb.at_sync.get() {
                    tag.event()
                        .map_or(Origin::External, |sync| Origin::Resumed { sync })
                } else if serial == Some(f) && took == Took::Popped {
                    // The child returned on the fiber that now pops its parent: the parent goes
                    // on in the phase the child ended in, as if the spawn had run in place.
                    return;
                } else if let (Some(_), Some(from)) = (own, tag.event()) {
                    Origin::Early { from }
                } else {
                    origin(tag, Taken::Continuation)
                };
                self.cursor.begin(rec, me, count, o);
            }
            Work::Batch(_) => {}
        }
    }

    /// Whether a work-first scope spawn may take one more fiber.
    pub(crate) fn fiber_limit_reached(&self) -> bool {
        self.registry.live_fibers.load(Ordering::Relaxed) >= self.registry.config.max_fibers
    }

    /// Makes the pending work-first parent ready (called by the child's frame after it has
    /// taken its closure out of the parent's stack): on this worker's own ready list, so only
    /// this worker resumes it, or, when the pool allows migration, on its deque as a
    /// continuation thieves may steal.
    pub(crate) fn publish_continuation(&self) {
        if let Some(c) = self.pending_cont.take() {
            if self.registry.config.migrate {
                self.push(Work::Resume(c));
            } else {
                self.ready.borrow_mut().push_back(c);
            }
        }
    }

    /// The next fiber or item only this worker may run: its own ready list, then its inbox.
    #[inline]
    fn take_own(&self) -> Option<Work> {
        if let Some(f) = self.ready.borrow_mut().pop_front() {
            return Some(Work::Resume(f));
        }
        self.registry.inboxes[self.index].pop().map(Work::decode)
    }

    /// The pool's DWS state, when it shares cores under DWS.
    #[inline]
    fn dws(&self) -> Option<&crate::share::runtime::Sharing> {
        self.registry
            .sharing
            .as_ref()
            .filter(|s| s.mode == Mode::Dws)
    }

    /// DWS: gives the worker's core back and sleeps until the program may use a core for it.
    fn dws_sleep(&self, s: &crate::share::runtime::Sharing) {
        let reg = &*self.registry;
        self.stats().sleeps.bump();
        s.sleep(
            self.index,
            || reg.has_visible_work(self.index),
            || reg.terminate.load(Ordering::SeqCst),
        );
    }

    fn next_rand(&self) -> u64 {
        // xorshift64*
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A steal round, timed when the pool measures overheads: what was found, and where.
    fn steal(&self) -> Option<(Work, Took)> {
        if !self.registry.config.overheads {
            return self.steal_round();
        }
        let t = Instant::now();
        let w = self.steal_round();
        let ns = t.elapsed().as_nanos() as u64;
        match w {
            Some(_) => self.stats().steal_ns.add(ns),
            None => self.stats().search_ns.add(ns),
        }
        w
    }

    /// Starts timing a fiber switch that a victim pays for (with `Config::overheads`).
    #[inline]
    pub(crate) fn victim_switch_begins(&self) {
        if self.registry.config.overheads {
            self.switch_began.set(Some(Instant::now()));
        }
    }

    /// Ends the timing begun by [`victim_switch_begins`](Self::victim_switch_begins), if any: called
    /// by whatever fiber runs next on this worker.
    #[inline]
    pub(crate) fn switch_landed(&self) {
        if let Some(t) = self.switch_began.take() {
            self.stats().victim_ns.add(t.elapsed().as_nanos() as u64);
        }
    }

    /// Whether a victim's switch is being timed.
    #[inline]
    fn switch_began_is_set(&self) -> bool {
        let t = self.switch_began.get();
        t.is_some()
    }

    /// Adds victim time measured at a sync point.
    #[inline]
    pub(crate) fn add_victim(&self, since: Option<Instant>) {
        if let Some(t) = since {
            self.stats().victim_ns.add(t.elapsed().as_nanos() as u64);
        }
    }

    /// A clock reading when the pool measures overheads.
    #[inline]
    pub(crate) fn overhead_clock(&self) -> Option<Instant> {
        self.registry.config.overheads.then(Instant::now)
    }

    /// One round over all other workers and the injector.
    fn steal_round(&self) -> Option<(Work, Took)> {
        let reg = &*self.registry;
        let n = reg.stealers.len();
        if n > 1 {
            match &self.tiers {
                // Random: every other worker, from a random one on.
                None => {
                    let start = (self.next_rand() % n as u64) as usize;
                    for k in 0..n {
                        let v = (start + k) % n;
                        if v != self.index {
                            if let Some(w) = self.steal_from(v) {
                                return Some((w, Took::Stolen));
                            }
                        }
                    }
                }
                // Nearest first: each tier from a random member on. With places, the first tier
                // is the worker's place, followed by its mailbox; the others only with
                // cross-place stealing, followed by the other places' mailboxes.
                Some(tiers) => {
                    for (i, tier) in tiers.iter().enumerate() {
                        if !tier.is_empty() {
                            let start = (self.next_rand() % tier.len() as u64) as usize;
                            for k in 0..tier.len() {
                                let v = tier[(start + k) % tier.len()];
                                if let Some(w) = self.steal_from(v) {
                                    return Some((w, Took::Stolen));
                                }
                            }
                        }
                        if let (0, Some(pl)) = (i, &reg.places) {
                            let it = if pl.squads {
                                let start = self.next_rand() as usize;
                                pl.take_inter(self.index, start)
                            } else {
                                pl.take(pl.of_worker[self.index])
                            };
                            if let Some(it) = it {
                                return Some((Work::decode(it), Took::Injected));
                            }
                        }
                    }
                    if let Some(pl) = reg.places.as_ref().filter(|pl| pl.cross_steal) {
                        let mine = pl.of_worker[self.index];
                        for p in (0..pl.count()).filter(|&p| p != mine) {
                            if let Some(it) = pl.take(p) {
                                return Some((Work::decode(it), Took::Injected));
                            }
                        }
                    }
                }
            }
        }
        reg.take_injected()
            .map(|it| (Work::decode(it), Took::Injected))
    }

    /// Up to four attempts on victim `v` (a lost race is retried; an empty deque is not).
    fn steal_from(&self, v: usize) -> Option<Work> {
        let reg = &*self.registry;
        for _ in 0..4 {
            match reg.stealers[v].steal() {
                Steal::Success(it) => {
                    reg.stats[v].note_stolen();
                    let w = Work::decode(it);
                    match w {
                        Work::Task {
                            continuation: false,
                            ..
                        } => self.stats().steals_child.bump(),
                        _ => self.stats().steals_cont.bump(),
                    }
                    return Some(w);
                }
                Steal::Retry => self.stats().failed_steals.bump(),
                Steal::Empty => {
                    self.stats().failed_steals.bump();
                    return None;
                }
            }
        }
        None
    }

    fn take_fiber(&self) -> Box<Fiber> {
        if let Some(f) = self.spares.borrow_mut().pop() {
            return f;
        }
        match Fiber::new(&self.registry, self.index) {
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

    fn park(&self, mut f: Box<Fiber>) {
        let mut s = self.spares.borrow_mut();
        if s.len() < MAX_SPARES {
            s.push(f);
        } else {
            drop(s);
            let r = f.co.resume(Cmd::Exit);
            debug_assert!(matches!(r, CoroutineResult::Return(())));
        }
    }
}

impl Fiber {
    fn new(reg: &Arc<Registry>, home: usize) -> Result<Box<Fiber>, Error> {
        let stack = DefaultStack::new(reg.config.stack_size)
            .map_err(|e| Error::Os(format!("cannot map a fiber stack: {e}")))?;
        // The limit includes the guard page; keep one more page of slack.
        let guard_low = stack.limit().get();
        let limit = guard_low + 2 * 4096;
        let co = Co::with_stack(stack, move |y: &Yielder<Cmd, Action>, first: Cmd| {
            fiber_main(y, first, guard_low, limit)
        });
        reg.live_fibers.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(Fiber {
            co,
            registry: Arc::as_ptr(reg),
            home,
            waited: Cell::new(false),
            tag: Cell::new(Tag::NONE),
            at_sync: Cell::new(false),
        }))
    }
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
    wt.fiber.set(fl);
    wt.switch_landed();
    cmd
}

/// Waits at a sync point without popping anything: returns at once if the latch is set, otherwise
/// suspends the fiber until the latch's setter makes it ready.
pub(crate) fn suspend_until(latch: &Latch, tag: Tag) {
    if !latch.probe() {
        suspend(Action::Wait(latch, tag));
        debug_assert!(latch.probe());
    }
}

/// [`suspend_until`] at a sync point whose work a thief took: when the pool measures overheads,
/// the switch out of the task and the later switch back into it are counted as the victim's.
pub(crate) fn suspend_until_stolen(latch: &Latch, tag: Tag) {
    if !latch.probe() {
        if let Some(wt) = current() {
            wt.victim_switch_begins();
        }
        suspend(Action::Wait(latch, tag));
        debug_assert!(latch.probe());
    }
}

/// Makes a suspended fiber runnable; `waiter` is the word a latch handed to its setter.
///
/// The fiber goes home: to the ready list of the worker that suspended it, if that is the
/// caller, or else to that worker's inbox, waking it. Only its home resumes it, so the code after
/// a sync point runs on the thread that ran the code before it. With `Builder::allow_migration`
/// it goes on the caller's deque instead (or its own pool's queue), where any worker may take it.
pub(crate) fn make_ready(waiter: usize) {
    // SAFETY: a latch's waiter word is only ever the address of a fiber the dispatcher
    // registered (`FiberPtr::addr`), and the setter that got it back now owns it.
    let fiber = unsafe { FiberPtr::from_addr(waiter) };
    // SAFETY: the fiber is suspended and ours; we read two plain fields.
    let (reg, home) = unsafe { (fiber.get().registry, fiber.get().home) };
    // SAFETY: the registry outlives its fibers.
    let registry = unsafe { &*reg };
    let wt = current().filter(|wt| Arc::as_ptr(&wt.registry) == reg);
    if registry.config.migrate {
        match wt {
            Some(wt) => wt.push(Work::Resume(fiber)),
            None => registry.inject(Work::Resume(fiber).encode()),
        }
        return;
    }
    match wt {
        Some(wt) if wt.index == home => wt.ready.borrow_mut().push_back(fiber),
        _ => registry.deliver(home, Work::Resume(fiber).encode()),
    }
}

/// Where the scheduling loop found an item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Took {
    /// Its own deque.
    Popped,
    /// Another worker's deque.
    Stolen,
    /// The pool's queue of work from outside, or a mailbox (places, squads).
    Injected,
}

enum LoopExit {
    Exit,
    Switch(FiberPtr),
}

/// The body of every loop fiber.
fn fiber_main(y: &Yielder<Cmd, Action>, first: Cmd, guard_low: usize, stack_limit: usize) {
    let fl = FiberLocal {
        yielder: y,
        stack_limit,
        guard_low,
        depth: Cell::new(0),
        resumed: Cell::new(0),
    };
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut cmd = first;
        loop {
            let wt = current().expect("fiber outside a worker");
            wt.fiber.set(&fl);
            wt.switch_landed();
            match cmd {
                Cmd::Exit => return,
                Cmd::Continue => unreachable!("loop fiber resumed as a task"),
                Cmd::Run(None) => fl.depth.set(0),
                Cmd::Run(Some((job, cont, depth))) => {
                    wt.pending_cont.set(Some(cont));
                    fl.depth.set(depth + 1);
                    // SAFETY: the dispatcher hands each work-first child to exactly one fiber.
                    unsafe { job.execute() };
                    fl.depth.set(0);
                    // The child returned here: its parent's continuation, if this worker pops it
                    // next, runs in the sequential order.
                    let wt = current().expect("fiber outside a worker");
                    if wt.tracing {
                        wt.serial_cont.set(Some(cont));
                    }
                }
            }
            match run_loop(&fl) {
                LoopExit::Exit => return,
                LoopExit::Switch(target) => {
                    cmd = y.suspend(Action::Switch(target));
                    fl.resumed.set(fl.resumed.get() + 1);
                }
            }
        }
    }));
    if r.is_err() {
        eprintln!("magpie: fatal: a worker's scheduling loop panicked (a bug in magpie)");
        std::process::abort();
    }
}

/// Subroutine 1 (idle): own work first, then steal, then sleep. Runs found tasks inline.
fn run_loop(fl: &FiberLocal) -> LoopExit {
    let mut idle: u32 = 0;
    loop {
        let wt = current().expect("loop outside a worker");
        // Fibers and items only this worker may run come first: a ready fiber is a task that
        // already holds a stack, and nobody else can take it.
        let found = match wt.take_own().or_else(|| wt.deque.pop().map(Work::decode)) {
            Some(w) => Some((w, Took::Popped)),
            // Completions deferred here may be what a waiter needs; and they may make one ready.
            None if wt.flush_finished() => continue,
            None => {
                if let Some(s) = wt.dws() {
                    // The core's home program took it back: stop here, the deque is empty.
                    if s.lost_core(wt.index) {
                        idle = 0;
                        wt.dws_sleep(s);
                        continue;
                    }
                }
                if wt.tracing {
                    wt.trace_idle();
                }
                wt.steal()
            }
        };
        if wt.tracing {
            if let Some((w, took)) = found {
                wt.trace_take(w, took);
            }
        }
        match found.map(|f| f.0) {
            Some(Work::Resume(f)) => {
                wt.flush_finished();
                // SAFETY: a ready fiber's box stays alive until it is resumed, and only the
                // worker that took its `Resume` item touches it.
                if unsafe { f.get() }.waited.replace(false) {
                    wt.victim_switch_begins();
                }
                return LoopExit::Switch(f);
            }
            Some(Work::Batch(it)) => {
                // Oldest first, so the oldest end up where thieves steal.
                for &item in it.take_batch().expect("batch item").iter() {
                    wt.push(Work::decode(item));
                }
            }
            Some(Work::Task { job, .. }) => {
                idle = 0;
                fl.depth.set(1);
                // SAFETY: an item popped or stolen is run exactly once, by whoever took it.
                unsafe { job.execute() };
                fl.depth.set(0);
                // The job may have suspended and this fiber may now run on another worker.
                let wt = current().expect("loop outside a worker");
                if wt.deque.poll_wanted() {
                    wt.registry.wake();
                }
            }
            None => {
                if wt.registry.terminate.load(Ordering::Acquire) {
                    return LoopExit::Exit;
                }
                if wt.registry.config.share == Mode::Abp {
                    // ABP: a thief that found nothing yields its core, and never blocks.
                    std::thread::yield_now();
                    continue;
                }
                if let Some(s) = wt.dws() {
                    // Algorithm 1: failed steal attempts in a row, one per victim tried.
                    idle += (wt.registry.config.workers as u32 - 1).max(1);
                    if idle > s.sleep_after {
                        idle = 0;
                        wt.dws_sleep(s);
                    } else {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                idle += 1;
                if idle < SPIN_ROUNDS {
                    if idle > YIELD_AFTER {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                } else {
                    idle = 0;
                    let reg = &wt.registry;
                    reg.sleep.sleep(
                        wt.index,
                        || reg.has_visible_work(wt.index),
                        || wt.stats().sleeps.bump(),
                    );
                }
            }
        }
    }
}

/// Pins the calling thread to one CPU. A refusal (the CPU left the affinity mask since the
/// topology was read) leaves the thread where it was: pinning is a placement hint, never a reason
/// to fail.
fn pin_to(cpu: usize) {
    if cpu >= libc::CPU_SETSIZE as usize {
        return;
    }
    // SAFETY: `set` is a plain bit set of the size we pass; 0 names the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// A worker thread: sets up its `WorkerThread` and runs the dispatcher until shutdown.
fn worker_main(registry: Arc<Registry>, index: usize, deque: Deque) {
    if let Some(s) = &registry.sharing {
        s.worker_started(index);
    } else if registry.config.pin {
        pin_to(registry.config.topology.core_of_worker(index).cpu);
    }
    let registry_traces = registry.recorder.is_some();
    let tiers = match &registry.places {
        // Places: the worker's own place, then (with cross-place stealing) everyone else.
        Some(pl) => {
            let mine = pl.of_worker[index];
            let (near, far): (Vec<usize>, Vec<usize>) = (0..registry.config.workers)
                .filter(|&w| w != index)
                .partition(|&w| pl.of_worker[w] == mine);
            Some([
                near,
                Vec::new(),
                if pl.cross_steal { far } else { Vec::new() },
            ])
        }
        None => (registry.config.victims == crate::topology::Victims::Numa).then(|| {
            registry
                .config
                .topology
                .victim_tiers(index, registry.config.workers)
        }),
    };
    let wt = WorkerThread {
        index,
        policy: registry.config.policy,
        thresholds: registry.config.thresholds,
        keep: if registry.config.workers > 1 {
            crate::join::KEEP
        } else {
            0
        },
        stats: &*registry.stats[index] as *const WorkerStats,
        registry,
        deque,
        fiber: Cell::new(std::ptr::null()),
        credit: Cell::new(0),
        granted: Cell::new(0),
        frames_hw: Cell::new(0),
        pending_cont: Cell::new(None),
        ready: RefCell::new(VecDeque::new()),
        finished_scope: Cell::new(std::ptr::null()),
        finished: Cell::new(0),
        adaptive: Adaptive::new(),
        switch_began: Cell::new(None),
        rng: Cell::new(
            0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407),
        ),
        spares: RefCell::new(Vec::new()),
        tracing: registry_traces,
        cursor: Cursor::new(),
        tiers,
        serial_cont: Cell::new(None),
    };
    CURRENT.with(|c| c.set(&wt));
    if let Some(s) = wt.dws() {
        if s.starts_asleep(index) {
            wt.dws_sleep(s);
        }
    }
    let mut next = (wt.take_fiber(), Cmd::Run(None));
    loop {
        let (mut f, cmd) = next;
        next = match f.co.resume(cmd) {
            CoroutineResult::Yield(Action::SpawnWf(child, tag)) => {
                wt.stats().suspensions.bump();
                f.tag.set(tag);
                f.at_sync.set(false);
                // The preempted parent's record is still the worker's current one.
                let depth = wt.fiber_local().depth.get();
                let g = wt.take_fiber();
                (g, Cmd::Run(Some((child, FiberPtr::from_box(f), depth))))
            }
            CoroutineResult::Yield(Action::Wait(latch, tag)) => {
                f.tag.set(tag);
                f.at_sync.set(true);
                // Take the next fiber first: once registered, `f` may be resumed elsewhere.
                let g = wt.take_fiber();
                // Counted as a victim's switch back in only if its switch out was.
                f.waited.set(wt.switch_began_is_set());
                let p = FiberPtr::from_box(f);
                // SAFETY: the latch lives in the suspended fiber's frame, which cannot be resumed
                // (and so cannot free it) before it is registered or we resume it ourselves.
                if unsafe { &*latch }.register(p.addr()) {
                    wt.stats().suspensions.bump();
                    (g, Cmd::Run(None))
                } else {
                    wt.park(g);
                    // SAFETY: not registered, so we still own the fiber.
                    (unsafe { p.into_box() }, Cmd::Continue)
                }
            }
            CoroutineResult::Yield(Action::Switch(target)) => {
                wt.park(f);
                wt.stats().resumptions.bump();
                // SAFETY: `target` came out of a `Resume` item, which owned the fiber.
                (unsafe { target.into_box() }, Cmd::Continue)
            }
            CoroutineResult::Return(()) => break,
        };
    }
    for mut f in wt.spares.borrow_mut().drain(..) {
        let _ = f.co.resume(Cmd::Exit);
    }
    CURRENT.with(|c| c.set(std::ptr::null()));
}
