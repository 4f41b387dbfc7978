//! The builder: a pool's settings, from code or from the environment, validated, and the
//! assembly of a pool from the core (the registry and its workers) and the features the
//! settings choose (tracing, schedules, DWS core sharing, topology and places, the cache
//! model), each plugged in through its hook (`hooks.rs`). The one module below the pool handle
//! that names every feature: choosing them is its job.

use crate::config::Config;
use crate::error::Error;
use crate::policy::{Policy, Thresholds};
use crate::pool::Pool;
use crate::registry::{Registry, WorkerStart};
use std::sync::Arc;

/// Default bytes of stack per fiber (task stack). Stacks are mapped lazily: only touched pages
/// cost memory.
pub const DEFAULT_STACK_SIZE: usize = 2 << 20;
/// Default cap on fibers alive at once in a pool (each is one stack mapping with a guard page).
pub const DEFAULT_MAX_FIBERS: usize = 8192;

/// The most workers a pool may have.
pub const MAX_WORKERS: usize = 4096;

/// Configures a [`Pool`].
#[derive(Clone, Debug)]
pub struct Builder {
    workers: Option<usize>,
    thread_names: Option<Vec<String>>,
    policy: Policy,
    thresholds: Thresholds,
    stack_size: usize,
    max_fibers: usize,
    measure_overheads: bool,
    steal_half: bool,
    oldest_first: bool,
    trace: bool,
    trace_path: Option<std::path::PathBuf>,
    /// Where `trace_path` came from, for the error that refuses it: `trace_to` or `MAGPIE_TRACE`.
    trace_setting: &'static str,
    topology: Option<crate::topology::Topology>,
    pin: bool,
    record_leaves: bool,
    check_races: Option<crate::race::Options>,
    leaf_pace: std::time::Duration,
    victims: crate::topology::Victims,
    places: bool,
    cross_place_steal: bool,
    squads: bool,
    squad_hints: bool,
    boundary_level: Option<u32>,
    share: crate::dws::Settings,
    migrate: bool,
    use_current_thread: bool,
    trace_cuts: bool,
    replay: Option<Vec<crate::schedule::Schedule>>,
    pub(crate) panic_handler: Option<crate::registry::PanicHandlerRef>,
}

/// How often a sharing pool's coordinator looks at its demand and the core table by default
/// (DWS §3.4: T = 10 ms).
pub const DEFAULT_SHARE_PERIOD: std::time::Duration = std::time::Duration::from_millis(10);

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            thread_names: None,
            policy: Policy::Adaptive,
            thresholds: Thresholds::default(),
            stack_size: DEFAULT_STACK_SIZE,
            max_fibers: DEFAULT_MAX_FIBERS,
            measure_overheads: false,
            steal_half: true,
            oldest_first: true,
            trace: false,
            trace_path: None,
            trace_setting: "trace_to",
            topology: None,
            pin: false,
            record_leaves: false,
            check_races: None,
            leaf_pace: std::time::Duration::ZERO,
            victims: crate::topology::Victims::Random,
            places: false,
            cross_place_steal: false,
            squads: false,
            squad_hints: true,
            boundary_level: None,
            share: crate::dws::Settings {
                mode: crate::dws::SharingMode::Off,
                sleep_after: None,
                period: DEFAULT_SHARE_PERIOD,
                table: None,
            },
            migrate: false,
            use_current_thread: false,
            trace_cuts: false,
            replay: None,
            panic_handler: None,
        }
    }
}

impl Builder {
    /// The workers' thread names, one per worker (rayon's `thread_name`, through
    /// `ThreadPoolBuilder`).
    pub(crate) fn thread_names(mut self, names: Vec<String>) -> Self {
        self.thread_names = Some(names);
        self
    }

    /// The worker count set so far (`None`: the machine's parallelism at `build`).
    pub(crate) fn workers_setting(&self) -> Option<usize> {
        self.workers
    }

    /// What the pool does with a panic of a task spawned with [`spawn`](crate::spawn) or
    /// [`ThreadPool::spawn`](crate::ThreadPool::spawn), which nobody waits for: without a handler the process prints
    /// the panic and aborts, as rayon's does.
    pub fn panic_handler<H>(mut self, h: H) -> Self
    where
        H: Fn(Box<dyn std::any::Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(crate::registry::PanicHandlerRef(Arc::new(h)));
        self
    }

    /// Number of worker threads (default: the machine's available parallelism).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }
    /// Spawning policy for `join` and `Scope::spawn` (default: [`Policy::Adaptive`]).
    pub fn policy(mut self, p: Policy) -> Self {
        self.policy = p;
        self
    }
    /// S: task frames on a worker's stack at which spawns turn help-first (default 256).
    pub fn stack_threshold(mut self, frames: u32) -> Self {
        self.thresholds.stack = frames;
        self
    }
    /// F: fresh tasks a worker may own before spawns turn work-first (default 128).
    pub fn fresh_threshold(mut self, tasks: u32) -> Self {
        self.thresholds.fresh = tasks;
        self
    }
    /// INT: spawns between re-evaluations of the steal-rate heuristic (default 64).
    pub fn interval(mut self, spawns: u32) -> Self {
        self.thresholds.interval = spawns;
        self
    }
    /// Bytes of stack per fiber (default 2 MiB; at least 64 KiB, at most 1 GiB).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }
    /// Most fibers alive at once (default 8192); a work-first spawn past it stops with
    /// [`Error::StackLimit`].
    pub fn max_fibers(mut self, n: usize) -> Self {
        self.max_fibers = n;
        self
    }

    /// Times what steals cost (off by default): the victims' time at sync points whose work a
    /// thief took, and the thieves' time in steal rounds, reported in
    /// [`Stats::victim_ns`](crate::Stats::victim_ns), [`Stats::steal_ns`](crate::Stats::steal_ns)
    /// and [`Stats::search_ns`](crate::Stats::search_ns). It adds clock readings on the
    /// steal and sync slow paths only; spawns and unstolen syncs are unchanged.
    pub fn measure_overheads(mut self, on: bool) -> Self {
        self.measure_overheads = on;
        self
    }

    /// Whether a thief that asks a worker holding many unpublished tasks gets half of them in one
    /// steal (default: on). The worker answers a thief's request (`wanted`) by handing over the
    /// older half of its private part, when it holds at least 8 items, as one batch that the thief
    /// unpacks into its own deque; off, it publishes the same half and each steal takes one item.
    /// Either way the victim is never stopped: it answers at its next spawn or sync.
    pub fn steal_half(mut self, on: bool) -> Self {
        self.steal_half = on;
        self
    }

    /// Whether a worker that must publish work for thieves hands over the oldest work it has
    /// (see `promote.rs`; on by default): the oldest unstarted half of the in-place joins
    /// pending on its stack, rather than the join it is making when a thief asks, which lies
    /// deepest in the recursion; and, for adaptive scope spawns, the children of spawns near the
    /// root of a tree whose work lies below them (learned as it runs). At 2 workers it takes a
    /// left-deep chain of joins (`examples/chain.rs` in magpie-bench) from about 1.35x the
    /// serial time to about 0.65x, and uts from about 190 times help-first's steals to about as
    /// many. What it costs: an in-place join keeps a record of its pending half (every join
    /// while thieves ask, only the top levels once they have been quiet for a while), and a
    /// join that does not record runs in the plain join's frame, so fib without a cutoff, the
    /// finest-grained join there is, runs at 2 workers in 0.89-0.96x the time it takes with
    /// the hand-over off (on a 2-core AMD EPYC: docs/results/join-path.md, "A frame for
    /// each"); a join that records runs 10 instructions more than one with it off. Every
    /// adaptive spawn tests two words more, which costs the finest-grained spawn kernels (fj,
    /// fj-rec, pdfs) up to 1.05-1.13x there; the suite's other kernels are level
    /// (docs/RESULTS.md, "Oldest-first hand-over"). At 1 worker nothing changes.
    /// `oldest_first(false)`, or `MAGPIE_OLDEST_FIRST=off` in the environment,
    /// publishes the join being made, as before. Pools of one worker, and pools that trace or
    /// allow migration, publish the join being made either way; so do schedule regions' tasks.
    pub fn oldest_first(mut self, on: bool) -> Self {
        self.oldest_first = on;
        self
    }

    /// Records the schedule as a steal tree (off by default): each worker's working phases, where
    /// each came from and when it ran, written on the steal path only (see [`crate::trace`]).
    /// Read it with [`Pool::trace`].
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// The machine the pool places its workers on (default: [`Topology::detect`]); a virtual
    /// topology ([`Topology::parse`]) models sockets and caches this machine lacks.
    ///
    /// [`Topology::detect`]: crate::Topology::detect
    /// [`Topology::parse`]: crate::Topology::parse
    pub fn topology(mut self, t: crate::topology::Topology) -> Self {
        self.topology = Some(t);
        self
    }

    /// Records what each leaf task declares it touches ([`cachemodel::leaf`]), for the cache
    /// model (off by default); read them with [`Pool::take_leaves`].
    ///
    /// [`cachemodel::leaf`]: crate::cachemodel::leaf
    pub fn record_leaves(mut self, on: bool) -> Self {
        self.record_leaves = on;
        self
    }

    /// Builds a pool that can run checked programs ([`race::check`](crate::race::check)):
    /// determinacy-race detection, with the default [`race::Options`](crate::race::Options)
    /// (off by default). Such a pool runs no join or spawn on the join credit, so every one is
    /// published and its checks are made; programs it runs outside `race::check` are not
    /// checked but pay that too. Not with `trace_cuts` or `replay`, whose positioned tasks
    /// the checker does not model.
    pub fn check_races(mut self, on: bool) -> Self {
        self.check_races = on.then(Default::default);
        self
    }

    /// [`check_races`](Self::check_races) with the given options (which search, and whether
    /// to compare both).
    pub fn check_races_with(mut self, options: crate::race::Options) -> Self {
        self.check_races = Some(options);
        self
    }

    /// While leaves are recorded: each recorded leaf also holds its worker, asleep, for
    /// `per_mib` for every MiB it declares (zero, the default: not at all). A modelled machine
    /// with more cores than the real one then still runs its workers side by side: without it,
    /// a 16-worker pool on 2 cores runs most leaves on whichever workers hold a core, and the
    /// model sees a schedule no 16-core machine would run.
    pub fn pace_leaves(mut self, per_mib: std::time::Duration) -> Self {
        self.leaf_pace = per_mib;
        self
    }

    /// How thieves pick victims (default [`Victims::Random`](crate::Victims)); `Victims::Numa`
    /// tries the workers of the thief's own socket first, then its NUMA node, then the rest.
    pub fn victims(mut self, v: crate::topology::Victims) -> Self {
        self.victims = v;
        self
    }

    /// Groups the workers into SLAW's places, one per socket of the topology (off by default):
    /// [`Scope::spawn_at`](crate::Scope::spawn_at) sends a task to a place's mailbox, and an idle
    /// worker looks in its own deque, then its place's deques, then its place's mailbox. Workers
    /// steal from other places only with [`cross_place_steal`](Self::cross_place_steal).
    pub fn places(mut self, on: bool) -> Self {
        self.places = on;
        self
    }

    /// With places: a worker whose whole place has no work may steal from other places' deques
    /// and mailboxes (SLAW's future work; off by default, as in SLAW, where cross-place steals
    /// were disabled to keep caches from being polluted).
    pub fn cross_place_steal(mut self, on: bool) -> Self {
        self.cross_place_steal = on;
        self
    }

    /// CAB (off by default): the workers form one squad per socket, each with an inter-socket
    /// task pool that [`Scope::inter_spawn`](crate::Scope::inter_spawn) fills and that only the
    /// squad's head worker takes from, one task at a time; workers steal only within their
    /// squad. [`bi_tier`](crate::bi_tier) splits a computation at the boundary level of Eq. 4.
    pub fn squads(mut self, on: bool) -> Self {
        self.squads = on;
        self
    }

    /// With squads: whether [`Scope::inter_spawn_at`](crate::Scope::inter_spawn_at) sends a task
    /// to the squad it names (on by default). Off, every inter-socket task goes to its spawner's
    /// squad's pool, as in CAB's paper, and which squad runs which part of the data is left to
    /// chance; on, a program that splits the same data the same way every step (a stencil's
    /// time steps) finds each part on the socket whose cache last held it.
    pub fn squad_hints(mut self, on: bool) -> Self {
        self.squad_hints = on;
        self
    }

    /// Overrides the boundary level that [`bi_tier`](crate::bi_tier) computes by CAB's Eq. 4
    /// (for experiments that sweep it).
    pub fn boundary_level(mut self, level: Option<u32>) -> Self {
        self.boundary_level = level;
        self
    }

    /// Pins worker `w` to the CPU of the topology's `w`-th core (off by default).
    pub fn pin(mut self, on: bool) -> Self {
        self.pin = on;
        self
    }

    /// How the pool shares the machine's cores with other programs (DWS; see
    /// [`dws::SharingMode`](crate::dws::SharingMode)). Default: `SharingMode::Off`. A sharing
    /// mode that needs the core table (`dws`, `ep`) and cannot open it (refused, or not
    /// writable) warns once on stderr and runs as `off`: [`Pool::share_mode`] says which mode is
    /// in force.
    pub fn share(mut self, mode: crate::dws::SharingMode) -> Self {
        self.share.mode = mode;
        self
    }

    /// Under `SharingMode::Dws`: a worker gives its core back and sleeps after this many failed
    /// steal attempts in a row (DWS's T_SLEEP; default: the number of cores the pool may use, as
    /// the paper advises). At least 1.
    pub fn share_sleep_after(mut self, failed_steals: u32) -> Self {
        self.share.sleep_after = Some(failed_steals);
        self
    }

    /// Under `SharingMode::Dws` and `SharingMode::Ep`: how often the coordinator runs (DWS's T;
    /// default [`DEFAULT_SHARE_PERIOD`], 10 ms). Between 1 ms and 1 s, so heartbeats stay well
    /// within the table's staleness limit.
    pub fn share_period(mut self, period: std::time::Duration) -> Self {
        self.share.period = period;
        self
    }

    /// Under `SharingMode::Dws` and `SharingMode::Ep`: the core table file to use instead of
    /// [`dws::default_path`](crate::dws::default_path)'s (which `MAGPIE_SHARE_TABLE`
    /// overrides). Programs share cores only with programs that use the same file.
    pub fn share_table(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.share.table = Some(path.into());
        self
    }

    /// Lets a task's running stack move to another worker thread (off by default): SLAW's
    /// continuation stealing. A work-first scope spawn that cannot run its child in place
    /// publishes the parent's suspended stack for thieves, and a task suspended at a sync point
    /// is resumed by whichever worker takes it, not by the worker that suspended it. Off, a stack
    /// that has started running user code is only ever resumed on its own thread, and thieves
    /// take only closures that have not started (join halves and spawned children).
    ///
    /// # Safety
    ///
    /// With migration on, the code after any `join`, `scope`, `Scope::spawn` (and the other
    /// spawns) or sync point in code this pool runs may continue on a different OS thread than
    /// the code before it, with every local it holds. Rust checks `Send` for the closures given
    /// to magpie, not for the locals on their stacks. The caller promises that no code the pool
    /// runs holds a value that is not `Send` (an `Rc`, a `MutexGuard`, a `RefCell` borrow of a
    /// `thread_local!`, a raw pointer into thread-local storage) across such a point, and that
    /// none relies on the identity of its thread across one (thread-locals, thread ids, locks
    /// that must be released by the thread that took them). Breaking the promise is undefined
    /// behaviour.
    pub unsafe fn allow_migration(mut self, on: bool) -> Self {
        self.migrate = on;
        self
    }

    /// Makes the calling thread the pool's worker 0 instead of starting a thread for it
    /// (rayon's `ThreadPoolBuilder::use_current_thread`; see `caller_worker.rs`). The thread is
    /// lent, not taken: `build` returns, and the thread works for the pool only while it is
    /// inside one of its calls (`install`, `join`, `scope`, `broadcast`, ... made from this
    /// thread outside any pool, which now use this pool instead of the global one), running
    /// other tasks too while that call waits, and leaving once the call's own work is done.
    /// Between calls, work that only worker 0 may run (its share of a `broadcast`) waits for the
    /// next call. The thread stops being the pool's when the pool is dropped.
    ///
    /// `build` fails if the calling thread is already a worker of a pool, or lent to one that
    /// is live; and with the settings that need every worker in its scheduling loop all the time
    /// (core sharing, places or squads, tracing or schedules, migration, pinning).
    ///
    /// ```
    /// let pool = magpie::Pool::builder().workers(2).use_current_thread(true).build().unwrap();
    /// assert_eq!(magpie::current_thread_index(), Some(0)); // lent, between calls
    /// let here = std::thread::current().id();
    /// let (a, b) = pool.install(|| {
    ///     assert_eq!(std::thread::current().id(), here); // the call runs on this thread
    ///     magpie::join(|| 1 + 1, || 2 + 2)
    /// });
    /// assert_eq!((a, b), (2, 4));
    /// drop(pool);
    /// assert_eq!(magpie::current_thread_index(), None);
    /// ```
    pub fn use_current_thread(mut self, on: bool) -> Self {
        self.use_current_thread = on;
        self
    }

    /// Traces (as [`trace`](Self::trace)) and also names the trace's cuts: every
    /// [`install`](Pool::install) from a thread that is no pool's worker runs as a recorded
    /// schedule region
    /// ([`schedule::record`](crate::schedule::record)), and the trace keeps the schedule each
    /// one took ([`Trace::schedules`](crate::trace::Trace::schedules),
    /// [`Schedule::from_trace`](crate::schedule::Schedule::from_trace)), which
    /// [`replay`](Self::replay) follows. Recording costs a few stores per in-place join (see the
    /// schedule figures in docs/RESULTS.md). Installs from outside then run one at a time, and their work
    /// may not record or follow regions of its own (regions do not nest).
    pub fn trace_cuts(mut self, on: bool) -> Self {
        self.trace_cuts = on;
        if on {
            self.trace = true;
        }
        self
    }

    /// Replays a trace taken with [`trace_cuts`](Self::trace_cuts): the `i`-th
    /// [`install`](Pool::install) from a thread that is no pool's worker follows the schedule of the trace's
    /// `i`-th install under [`Constraint::Ordered`](crate::schedule::Constraint::Ordered)
    /// (installs past the trace's run as usual). Sets the trace's worker count and policy, which
    /// later builder calls may change (other worker counts follow the schedules remapped).
    /// Each replayed install starts on the worker its recorded one started on. Running the same
    /// program again on the pool runs every recorded cut, and so every task, on its recorded
    /// worker, in its recorded order unless the stall rule had to run one early
    /// ([`Stats::deviations`](crate::Stats::deviations) counts each such departure): with
    /// `trace_cuts` on as well, the replay's trace names the same cuts. `build` fails if the
    /// trace names no cuts. The limits of `trace_cuts` apply.
    pub fn replay(mut self, trace: &crate::trace::Trace) -> Self {
        self.workers = Some(trace.workers());
        self.policy = trace.policy;
        self.replay = Some(trace.schedules.clone());
        self
    }

    /// Traces, and writes the trace file to `path` when the pool is dropped (what
    /// `MAGPIE_TRACE=path` does).
    pub fn trace_to(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.trace = true;
        self.trace_path = Some(path.into());
        self
    }

    /// Applies `MAGPIE_WORKERS`, `MAGPIE_POLICY`, `MAGPIE_SHARE` (dws, abp, ep or off),
    /// `MAGPIE_TOPOLOGY` (a virtual topology, `4x4:6MiB`), `MAGPIE_OLDEST_FIRST` (on or off,
    /// [`oldest_first`](Self::oldest_first)) and `MAGPIE_TRACE` (a path: trace, and write the
    /// trace file there when the pool is dropped) if they are set; a value magpie cannot use is
    /// an error naming the variable.
    pub fn from_env(self) -> Result<Self, Error> {
        self.with_vars(|k| std::env::var_os(k))
    }

    pub(crate) fn with_vars(
        mut self,
        get: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, Error> {
        let text = |k: &str| -> Result<Option<String>, Error> {
            match get(k) {
                None => Ok(None),
                Some(v) => v
                    .into_string()
                    .map(|s| Some(s.trim().to_string()))
                    .map_err(|v| Error::config(k, v.to_string_lossy(), "UTF-8 text")),
            }
        };
        if let Some(v) = text("MAGPIE_WORKERS")? {
            match v.parse::<usize>() {
                Ok(n) if n >= 1 => self.workers = Some(n),
                _ => return Err(Error::config("MAGPIE_WORKERS", v, "a whole number ≥ 1")),
            }
        }
        if let Some(v) = text("MAGPIE_TOPOLOGY")? {
            let t = crate::topology::Topology::parse(&v).map_err(|_| {
                Error::config(
                    "MAGPIE_TOPOLOGY",
                    &v,
                    "SOCKETSxCORES:LLC with whole numbers ≥ 1 and a cache size, e.g. 4x4:6MiB",
                )
            })?;
            self.topology = Some(t);
        }
        if let Some(v) = text("MAGPIE_TRACE")? {
            if v.is_empty() {
                return Err(Error::config("MAGPIE_TRACE", v, "a file path"));
            }
            self = self.trace_to(v);
            self.trace_setting = "MAGPIE_TRACE";
        }
        if let Some(v) = text(crate::dws::MODE_ENV)? {
            self.share.mode = v
                .parse::<crate::dws::SharingMode>()
                .map_err(|_| Error::config(crate::dws::MODE_ENV, &v, "one of dws, abp, ep, off"))?;
        }
        if let Some(v) = text("MAGPIE_OLDEST_FIRST")? {
            self.oldest_first = match v.as_str() {
                "1" | "on" | "true" => true,
                "0" | "off" | "false" => false,
                _ => {
                    return Err(Error::config(
                        "MAGPIE_OLDEST_FIRST",
                        v,
                        "on or off (1 or 0)",
                    ))
                }
            };
        }
        if let Some(v) = text("MAGPIE_POLICY")? {
            self.policy = v.parse::<Policy>().map_err(|_| {
                Error::config(
                    "MAGPIE_POLICY",
                    v,
                    "one of work-first, help-first, adaptive",
                )
            })?;
        }
        Ok(self)
    }

    /// Starts the pool's workers on threads of magpie's own.
    pub fn build(self) -> Result<Pool, Error> {
        self.build_on(None)
    }

    /// Starts the pool's workers on threads the caller makes: `spawn` is called once per worker,
    /// in index order, during this call, with what that worker's thread must run
    /// ([`WorkerStart::run`]); it returns once the thread is started (or the start has been
    /// arranged: the pool's calls wait until the worker runs). An error from `spawn` stops the
    /// workers already started and is returned. Such threads are not joined when the pool is
    /// dropped: each ends once it has seen the pool stop (rayon's `spawn_handler`, whose
    /// threads may be scoped ones that the caller joins).
    ///
    /// ```
    /// let mut handles = Vec::new();
    /// let pool = magpie::Pool::builder()
    ///     .workers(2)
    ///     .build_with(|w| {
    ///         let name = format!("mine-{}", w.index());
    ///         handles.push(std::thread::Builder::new().name(name).spawn(move || w.run())?);
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// let name = pool.install(|| std::thread::current().name().map(String::from));
    /// assert!(name.unwrap().starts_with("mine-"));
    /// drop(pool);
    /// for h in handles {
    ///     h.join().unwrap(); // each worker's thread ends once the pool has stopped
    /// }
    /// ```
    pub fn build_with<S>(self, mut spawn: S) -> Result<Pool, Error>
    where
        S: FnMut(WorkerStart) -> std::io::Result<()>,
    {
        self.build_on(Some(&mut spawn))
    }

    fn build_on(
        self,
        spawn: Option<&mut dyn FnMut(WorkerStart) -> std::io::Result<()>>,
    ) -> Result<Pool, Error> {
        let workers = match self.workers {
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(Error::config("workers", workers, "between 1 and 4096"));
        }
        if self.thresholds.interval == 0 {
            return Err(Error::config("interval", 0, "at least 1 spawn"));
        }
        if !(64 << 10..=1 << 30).contains(&self.stack_size) {
            return Err(Error::config(
                "stack_size",
                self.stack_size,
                "between 65536 and 1073741824 bytes",
            ));
        }
        if self.max_fibers < 2 * workers {
            return Err(Error::config(
                "max_fibers",
                self.max_fibers,
                "at least twice the number of workers",
            ));
        }
        if self.replay.as_ref().is_some_and(|r| r.is_empty()) {
            return Err(Error::config(
                "replay",
                "a trace that names no cuts",
                "a trace taken with Builder::trace_cuts",
            ));
        }
        if self.share.sleep_after == Some(0) {
            return Err(Error::config(
                "share_sleep_after",
                0,
                "at least 1 failed steal",
            ));
        }
        let ms = self.share.period.as_secs_f64() * 1e3;
        if !(1.0..=1000.0).contains(&ms) {
            return Err(Error::config(
                "share_period",
                format!("{ms} ms"),
                "between 1 ms and 1000 ms",
            ));
        }
        if cfg!(not(target_os = "linux")) && self.share.mode != crate::dws::SharingMode::Off {
            // The core table lives in /dev/shm, liveness comes from /proc, and a worker holds
            // its core by its affinity: Linux's.
            return Err(Error::config(
                "share",
                self.share.mode,
                "off: sharing cores between programs needs Linux",
            ));
        }
        if let Some(path) = &self.trace_path {
            // The file is written when the pool is dropped, after the program's work: a path
            // this program cannot write is refused now rather than found out then. Opened to
            // append, so an existing file is left as it is until the trace replaces it.
            let open = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path);
            if let Err(e) = open {
                return Err(Error::config(
                    self.trace_setting,
                    path.display(),
                    &format!("a file this program can write ({e})"),
                ));
            }
        }
        if let Some(names) = &self.thread_names {
            if names.len() < workers {
                return Err(Error::config(
                    "thread_names",
                    names.len(),
                    "a name for every worker",
                ));
            }
        }
        if self.check_races.is_some() && (self.trace_cuts || self.replay.is_some()) {
            return Err(Error::config(
                "check_races",
                "with trace_cuts or replay",
                "a pool that neither records nor follows schedule regions (the checker does not model their positioned tasks)",
            ));
        }
        if self.use_current_thread {
            let refused = [
                (self.share.mode != crate::dws::SharingMode::Off, "share"),
                (self.places || self.squads, "places"),
                (
                    self.trace || self.trace_cuts || self.replay.is_some() || self.record_leaves,
                    "trace",
                ),
                (self.migrate, "allow_migration"),
                (self.pin, "pin"),
            ];
            if let Some((_, setting)) = refused.iter().find(|(on, _)| *on) {
                return Err(Error::config(
                    setting,
                    "on",
                    "off with use_current_thread: it needs every worker in its scheduling loop \
                     all the time",
                ));
            }
            crate::caller_worker::may_lend()?;
        }
        let topology = self
            .topology
            .unwrap_or_else(crate::topology::Topology::detect);
        let regions = (self.trace_cuts || self.replay.is_some()).then(|| {
            Arc::new(crate::schedule::region::Regions {
                record: self.trace_cuts,
                replay: self.replay.unwrap_or_default(),
                workers,
                taken: Default::default(),
                turn: Default::default(),
            })
        });
        let places = (self.places || self.squads).then(|| {
            Box::new(crate::places::Places::new(
                &topology,
                workers,
                self.cross_place_steal && !self.squads,
                self.squads,
                self.squad_hints,
            )) as Box<dyn crate::hooks::Mailboxes>
        });
        // A fiber's stack overflow must be reported, not crash silently, before any worker runs.
        crate::fiber::overflow::install();
        let (registry, lent) = Registry::new(
            Config {
                workers,
                thread_names: self.thread_names,
                policy: self.policy,
                thresholds: self.thresholds,
                stack_size: self.stack_size,
                max_fibers: self.max_fibers,
                overheads: self.measure_overheads,
                steal_half: self.steal_half,
                oldest_first: self.oldest_first,
                trace: self.trace,
                pin_cpus: self.pin.then(|| {
                    (0..workers)
                        .map(|w| topology.core_of_worker(w).cpu)
                        .collect()
                }),
                numa_locations: (self.victims == crate::topology::Victims::Numa)
                    .then(|| topology.locations(workers)),
                squads: self.squads,
                squad_hints: self.squad_hints,
                boundary_level: self.boundary_level,
                never_block: self.share.mode == crate::dws::SharingMode::Abp,
                migrate: self.migrate,
                lent: self.use_current_thread,
            },
            crate::main_loop::worker_main,
            self.share.start(workers),
            crate::hooks::Extensions::default()
                .with(
                    self.record_leaves
                        .then(|| crate::cachemodel::LeafLog::new(workers, self.leaf_pace)),
                )
                .with(self.trace.then(|| {
                    crate::hooks::TracingHook(std::sync::Arc::new(
                        crate::trace::record::Recorder::new(workers),
                    ))
                }))
                .with(Some(topology))
                .with(regions.clone())
                .with(self.check_races.map(|o| {
                    crate::hooks::StructureHook(std::sync::Arc::new(crate::race::Checker::new(o)))
                })),
            places,
            spawn,
        )?;
        if let Some(deque) = lent {
            crate::caller_worker::lend(&registry, deque);
        }
        if let Some(h) = self.panic_handler {
            // A new registry: nothing set its handler before.
            let _ = registry.spawns.handler.set(h.0);
        }
        Ok(Pool {
            registry,
            installs: regions.map(|r| r as Arc<dyn crate::hooks::InstallHook>),
            ending: self.trace_path.map(|path| {
                Box::new(move |p: &Pool| crate::trace::write_file(p, &path))
                    as crate::hooks::EndHook
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into())
    }

    #[test]
    fn env_values_parse() {
        let b = Builder::default()
            .with_vars(vars(&[
                ("MAGPIE_WORKERS", "3"),
                ("MAGPIE_POLICY", "help-first"),
                ("MAGPIE_SHARE", " DWS "),
            ]))
            .unwrap();
        assert_eq!(b.workers, Some(3));
        assert_eq!(b.policy, Policy::HelpFirst);
        assert_eq!(b.share.mode, crate::dws::SharingMode::Dws);
        assert_eq!(Builder::default().share.mode, crate::dws::SharingMode::Off);
        assert!(!b.trace);
        let b = Builder::default()
            .with_vars(vars(&[("MAGPIE_TRACE", "/tmp/run.mtrace")]))
            .unwrap();
        assert!(b.trace);
        assert_eq!(b.trace_path, Some("/tmp/run.mtrace".into()));
        let b = Builder::default()
            .with_vars(vars(&[("MAGPIE_TOPOLOGY", "2x3:1MiB")]))
            .unwrap();
        let t = b.topology.unwrap();
        assert!(t.is_virtual);
        assert_eq!((t.sockets.len(), t.cores()), (2, 6));
    }

    #[test]
    fn bad_env_values_name_the_variable() {
        for (k, v) in [
            ("MAGPIE_WORKERS", "zero"),
            ("MAGPIE_WORKERS", "0"),
            ("MAGPIE_WORKERS", "-2"),
            ("MAGPIE_POLICY", "fastest"),
            ("MAGPIE_TRACE", ""),
            ("MAGPIE_TOPOLOGY", "4x4"),
            ("MAGPIE_SHARE", "cilk"),
        ] {
            let pairs: &'static [(&str, &str)] = Box::leak(vec![(k, v)].into_boxed_slice());
            let e = Builder::default().with_vars(vars(pairs)).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(k) && msg.contains(v), "{msg}");
        }
    }

    #[test]
    fn a_trace_file_that_cannot_be_written_is_refused_when_the_pool_is_built() {
        const PATH: &str = "/nonexistent-magpie-dir/run.mtrace";
        let path = PATH;
        let e = Builder::default()
            .with_vars(vars(&[("MAGPIE_TRACE", PATH)]))
            .unwrap()
            .build()
            .unwrap_err()
            .to_string();
        assert!(e.contains("MAGPIE_TRACE") && e.contains(path), "{e}");
        let e = Pool::builder()
            .trace_to(path)
            .build()
            .unwrap_err()
            .to_string();
        assert!(e.contains("trace_to") && e.contains(path), "{e}");
    }

    #[test]
    fn bad_builder_values_are_errors() {
        assert!(Pool::builder().workers(0).build().is_err());
        assert!(Pool::builder().interval(0).build().is_err());
        assert!(Pool::builder().stack_size(1000).build().is_err());
        assert!(Pool::builder().workers(4).max_fibers(3).build().is_err());
        assert!(Pool::builder().share_sleep_after(0).build().is_err());
        for ms in [0, 1001] {
            let p = std::time::Duration::from_millis(ms);
            assert!(Pool::builder().share_period(p).build().is_err(), "{ms} ms");
        }
    }
}
