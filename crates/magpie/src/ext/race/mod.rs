//! Determinacy-race detection (Lifflander's thesis §4.5.1, after Raman et al.'s SPD3): two
//! accesses to one location, at least one a write, by tasks that may run in parallel in *some*
//! schedule, whatever schedule this run took.
//!
//! Safe Rust has no data races, but parallel code that splits buffers through raw pointers
//! (and magpie's own kernels, splicing and schedule tests) can; this is the checked mode such
//! code needs. A program declares what its tasks read and write ([`read()`], [`write()`] and their
//! raw-pointer forms); [`check`] runs it on a pool built with
//! [`Builder::check_races`](crate::Builder::check_races), which builds the program's
//! structure tree as it runs ([`dpst`]) and checks each declared access against the location's
//! shadow cell ([`shadow`]). Outside a checked run a declaration costs a thread-local read and
//! a test.
//!
//! ```
//! let pool = magpie::Pool::builder().workers(2).check_races(true).build().unwrap();
//! let mut v = vec![0u64; 64];
//! let ((), report) = magpie::race::check(&pool, || {
//!     let (lo, hi) = v.split_at_mut(32);
//!     magpie::join(
//!         || { magpie::race::write(lo); lo.fill(1) },
//!         || { magpie::race::write(hi); hi.fill(2) },
//!     );
//! })
//! .unwrap();
//! assert!(report.races.is_empty(), "{report}");
//!
//! // The same halves, each also reading the other's first element: a race in every schedule.
//! let p = v.as_ptr() as usize;
//! let ((), report) = magpie::race::check(&pool, || {
//!     magpie::join(
//!         || magpie::race::write_raw(p as *const u64, 1),
//!         || magpie::race::read_raw(p as *const u64, 1),
//!     );
//! })
//! .unwrap();
//! assert_eq!(report.race_count, 1, "{report}");
//! ```
//!
//! # What is modelled
//!
//! `join` (and what is built on it, such as rayon's iterators on magpie's rayon-core), `scope`,
//! `in_place_scope` with their spawns, including those sent to a named worker, place or squad
//! (`spawn_designated`, `spawn_at`, `inter_spawn`; `join_designated` runs as a plain `join` in
//! a pool that checks, since where a half runs changes nothing the checker finds): each task's
//! place in the tree is kept in its fiber's record, so a task that suspends and resumes keeps
//! it. A pool that checks never runs a join or spawn on the join credit (so every one of them
//! reaches the checked paths); its schedule is otherwise the pool's own. Not modelled: tasks
//! started outside [`check`] (their accesses are not checked), fire-and-forget `spawn` (its
//! task is outside the tree, unchecked), and a spawn into an enclosing scope from inside an
//! inner one, which is taken as a spawn into the inner one (the tree has no node for a task
//! that outlives the finish it was started in).
//!
//! # The report
//!
//! Each race names the location and its two accesses: the kind, the step's position in the
//! tree (its path of child indices from the root, and the kinds along it: `F` finish, `A`
//! async, `S` step), the worker that ran it and its working phase (a phase other than the
//! root's began with a steal), and whether this run's schedule overlapped the two steps in
//! time or ran them one after the other (either way the race is there: another schedule can
//! overlap them). [`Report::queries`] and the traversal counts say what the two
//! lowest-common-ancestor searches cost (the thesis's Fig. 4.9).

pub mod dpst;
pub mod shadow;

use crate::hooks::{Ctx, Structure};
use dpst::{Kind, Node, Phase, Search};
use shadow::{Access, Relation, Shadow};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The checker's settings ([`Builder::check_races_with`](crate::Builder::check_races_with)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The lowest-common-ancestor search the checks use.
    pub search: Search,
    /// Also run the other search on every query, check that both answer alike, and count both
    /// searches' traversals (slower; what `magpie race --compare` reports).
    pub compare: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            search: Search::Phases,
            compare: false,
        }
    }
}

/// Races kept in full per run (the rest are counted).
pub const KEPT: usize = 32;

/// One checked run: its shadow memory, its searches, what it found.
struct Run {
    shadow: Shadow,
    relation: Relation,
    races: Mutex<Vec<Race>>,
    race_count: AtomicU64,
    /// Pairs of steps already reported (a race between two steps is one race, however many
    /// locations they share).
    pairs: Mutex<std::collections::HashSet<(u64, u64)>>,
    accesses: AtomicU64,
    steps: AtomicU64,
    phases: AtomicU64,
}

/// A task's context: where it is in the tree. Made for a task before it begins (`pending`
/// says where its own node goes), completed when it begins.
struct TaskCtx {
    run: Arc<Run>,
    /// The task's innermost async or finish.
    parent: Arc<Node>,
    /// Its current step (before it began: its maker's step, unused).
    step: Arc<Node>,
    /// Its working phase.
    phase: Arc<Phase>,
    /// The worker that runs it (before it began: the one that made it).
    worker: usize,
    /// Before it began: the reserved index and kind of its own node under `parent`.
    pending: Option<(u32, Kind)>,
    /// The parents to go back to as its scopes close, innermost last.
    scopes: Vec<Arc<Node>>,
}

/// The checker a checked pool holds (`hooks::Structure`).
pub(crate) struct Checker {
    options: Options,
}

impl Checker {
    pub(crate) fn new(options: Options) -> Checker {
        Checker { options }
    }
}

/// The context behind `c`.
///
/// # Safety
///
/// `c` was made by this module (`Box::into_raw` of a `TaskCtx`), not yet freed by
/// `Checker::end`, and is used only by the task it belongs to (the `Structure` contract).
unsafe fn ctx<'a>(c: Ctx) -> &'a mut TaskCtx {
    // SAFETY: the caller's obligation.
    unsafe { &mut *(c.0 as *mut TaskCtx) }
}

fn boxed(t: TaskCtx) -> Ctx {
    Ctx(Box::into_raw(Box::new(t)) as *mut ())
}

impl TaskCtx {
    /// Ends the current step and starts the next one under `parent`.
    fn next_step(&mut self) {
        self.step.close();
        self.step = self.parent.child(Kind::Step, &self.phase);
        // Relaxed: a counter for the report.
        self.run.steps.fetch_add(1, Ordering::Relaxed);
    }

    /// A context for a child task whose node will be at the next index of `under`.
    fn child(&self, under: &Arc<Node>, kind: Kind) -> TaskCtx {
        TaskCtx {
            run: self.run.clone(),
            parent: under.clone(),
            step: self.step.clone(),
            phase: self.phase.clone(),
            worker: self.worker,
            pending: Some((under.reserve(), kind)),
            scopes: Vec::new(),
        }
    }
}

impl Structure for Checker {
    fn join(&self, cur: Ctx) -> (Ctx, Ctx) {
        // SAFETY: `cur` is the running task's context (the core passes its fiber's).
        let t = unsafe { ctx(cur) };
        t.step.close();
        let f = t.parent.child(Kind::Finish, &t.phase);
        let a = t.child(&f, Kind::Async);
        let b = t.child(&f, Kind::Finish);
        (boxed(a), boxed(b))
    }

    fn joined(&self, cur: Ctx) {
        // SAFETY: as in `join`.
        unsafe { ctx(cur) }.next_step();
    }

    fn spawn(&self, cur: Ctx) -> Ctx {
        // SAFETY: as in `join`.
        let t = unsafe { ctx(cur) };
        let child = t.child(&t.parent.clone(), Kind::Async);
        t.next_step();
        boxed(child)
    }

    fn scope_open(&self, cur: Ctx) {
        // SAFETY: as in `join`.
        let t = unsafe { ctx(cur) };
        let f = t.parent.child(Kind::Finish, &t.phase);
        t.scopes.push(std::mem::replace(&mut t.parent, f));
        t.next_step();
    }

    fn scope_close(&self, cur: Ctx) {
        // SAFETY: as in `join`.
        let t = unsafe { ctx(cur) };
        if let Some(p) = t.scopes.pop() {
            t.parent = p;
        }
        t.next_step();
    }

    fn begin(&self, c: Ctx, me: usize) {
        // SAFETY: `c` is the context made for the task that now begins, handed to its runner.
        let t = unsafe { ctx(c) };
        let Some((index, kind)) = t.pending.take() else {
            return;
        };
        if me != t.worker {
            // Run by another worker than its maker's: a thief took it, and a working phase
            // begins (module doc of `dpst`).
            t.phase = Phase::new(me, Some(t.parent.clone()), kind, index);
            // Relaxed: a counter for the report.
            t.run.phases.fetch_add(1, Ordering::Relaxed);
        }
        t.worker = me;
        let own = t.parent.child_at(index, kind, &t.phase);
        t.parent = own;
        t.step = t.parent.child(Kind::Step, &t.phase);
        // Relaxed: a counter for the report.
        t.run.steps.fetch_add(1, Ordering::Relaxed);
    }

    fn end(&self, c: Ctx) {
        // SAFETY: `c` was made by `boxed` and this is its task's end, after which nothing
        // uses it (the core drops it from the fiber's record).
        let t = unsafe { Box::from_raw(c.0 as *mut TaskCtx) };
        t.step.close();
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The running task's context, if it is a checked task (null otherwise).
#[inline]
fn current() -> Ctx {
    match crate::worker::current() {
        Some(wt) => Ctx(wt.fiber_local().checked.get()),
        None => Ctx(std::ptr::null_mut()),
    }
}

/// Declares that the running task reads every element of `data`. Checked in a [`check`]ed
/// run; elsewhere it costs a thread-local read and a test.
#[inline]
pub fn read<T>(data: &[T]) {
    read_raw(data.as_ptr(), data.len())
}

/// Declares that the running task writes every element of `data` (pass `&*slice` for a
/// `&mut` slice, before or after writing it: the order within a step does not matter).
#[inline]
pub fn write<T>(data: &[T]) {
    write_raw(data.as_ptr(), data.len())
}

/// [`read()`] of `len` elements from `p` (the memory is not touched: any pointer may be
/// declared).
#[inline]
pub fn read_raw<T>(p: *const T, len: usize) {
    let c = current();
    if !c.0.is_null() {
        declare(c, p as usize, std::mem::size_of::<T>(), len, Access::Read);
    }
}

/// [`write()`] of `len` elements from `p` (the memory is not touched).
#[inline]
pub fn write_raw<T>(p: *const T, len: usize) {
    let c = current();
    if !c.0.is_null() {
        declare(c, p as usize, std::mem::size_of::<T>(), len, Access::Write);
    }
}

/// Whether the running task is checked (a kernel whose declarations cost something to
/// compute computes them only then).
pub fn checking() -> bool {
    !current().0.is_null()
}

/// Checks `len` accesses of `size` bytes each from `base` by the task whose context is `c`.
#[cold]
#[inline(never)]
fn declare(c: Ctx, base: usize, size: usize, len: usize, access: Access) {
    // SAFETY: `c` is the running task's context, non-null (`worker::run_in` set it on this
    // fiber for the task's extent); only this task uses it, and not past this call.
    let t = unsafe { ctx(c) };
    let size = size.max(1);
    let run = &t.run;
    // Relaxed: a counter for the report.
    run.accesses.fetch_add(len as u64, Ordering::Relaxed);
    for i in 0..len {
        let addr = base.wrapping_add(i * size);
        if let Some(c) = run.shadow.access(addr, &t.step, access, &run.relation) {
            record(run, c);
        }
    }
}

fn record(run: &Run, c: shadow::Conflict) {
    let (a, b) = (&c.earlier.0, &c.later.0);
    let key = (a.id.min(b.id), a.id.max(b.id));
    if !run
        .pairs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key)
    {
        return;
    }
    // Relaxed: a counter, read after the run.
    run.race_count.fetch_add(1, Ordering::Relaxed);
    let mut races = run.races.lock().unwrap_or_else(|e| e.into_inner());
    if races.len() < KEPT {
        races.push(Race::of(&c));
    }
}

/// One access of a race, as the report names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// Read or write.
    pub access: Access,
    /// The step's path of child indices from the root.
    pub path: Vec<u32>,
    /// The kinds along the path (`F`, `A`, `S`).
    pub shape: String,
    /// The worker that ran the step.
    pub worker: usize,
    /// Its working phase's number, and whether that phase began with a steal.
    pub phase: (u64, bool),
    /// When the step began and ended, in nanoseconds (see `dpst::now`).
    pub span: (u64, Option<u64>),
}

impl Site {
    fn of(step: &Node, access: Access) -> Site {
        Site {
            access,
            path: step.path(),
            shape: step.shape(),
            worker: step.phase.worker,
            phase: (step.phase.id, step.phase.above.is_some()),
            span: (step.start, step.end()),
        }
    }
}

/// Two accesses to one location, at least one a write, by steps that may run in parallel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// The location's address.
    pub addr: usize,
    /// The access recorded first.
    pub first: Site,
    /// The access that found it.
    pub second: Site,
}

impl Race {
    fn of(c: &shadow::Conflict) -> Race {
        Race {
            addr: c.addr,
            first: Site::of(&c.earlier.0, c.earlier.1),
            second: Site::of(&c.later.0, c.later.1),
        }
    }

    /// Whether this run's schedule overlapped the two steps in time (filled in when the run
    /// has ended; a step still open then counts as running to the end).
    pub fn overlapped(&self) -> bool {
        let end = |s: &Site| s.span.1.unwrap_or(u64::MAX);
        self.first.span.0 < end(&self.second) && self.second.span.0 < end(&self.first)
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path: Vec<String> = self.path.iter().map(|i| i.to_string()).collect();
        write!(
            f,
            "{} by step {} ({}) on worker {}, phase {}{}",
            match self.access {
                Access::Read => "read",
                Access::Write => "write",
            },
            path.join("."),
            self.shape,
            self.worker,
            self.phase.0,
            if self.phase.1 {
                " (began with a steal)"
            } else {
                " (the root's)"
            },
        )
    }
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "race at {:#x}: {}; then {}; this run {}",
            self.addr,
            self.first,
            self.second,
            if self.overlapped() {
                "ran them at the same time"
            } else {
                "ran them one after the other (another schedule can overlap them)"
            }
        )
    }
}

/// What a checked run found, and what checking cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The first [`KEPT`] races (one per pair of steps), in the order found.
    pub races: Vec<Race>,
    /// All races found (pairs of steps).
    pub race_count: u64,
    /// Element accesses declared.
    pub accesses: u64,
    /// Locations with a shadow cell at the end.
    pub locations: usize,
    /// Steps the tree had.
    pub steps: u64,
    /// Working phases that began with a steal.
    pub stolen_phases: u64,
    /// The search the checks used.
    pub search: Search,
    /// Lowest-common-ancestor queries.
    pub queries: u64,
    /// Edges the plain search followed (when it ran: its own search, or `compare`).
    pub plain_traversals: Option<u64>,
    /// Edges the phase search followed (when it ran).
    pub phase_traversals: Option<u64>,
}

impl Report {
    /// The share of the plain search's traversals the phase search saved, when both ran.
    pub fn saved(&self) -> Option<f64> {
        match (self.plain_traversals, self.phase_traversals) {
            (Some(p), Some(q)) if p > 0 => Some(1.0 - q as f64 / p as f64),
            _ => None,
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} race(s); {} accesses to {} locations by {} steps, {} phase(s) begun by steals",
            self.race_count, self.accesses, self.locations, self.steps, self.stolen_phases
        )?;
        for r in &self.races {
            writeln!(f, "  {r}")?;
        }
        if self.race_count > self.races.len() as u64 {
            writeln!(
                f,
                "  ... and {} more",
                self.race_count - self.races.len() as u64
            )?;
        }
        Ok(())
    }
}

/// Runs `op` on `pool` as a checked program: every join, scope and spawn under it builds the
/// program's tree, and every access it declares ([`read()`], [`write()`]) is checked. Returns
/// `op`'s result and the report. The pool must have been built with
/// [`Builder::check_races`](crate::Builder::check_races) (else the error says so); checked
/// runs of one pool may overlap, each with its own tree and shadow memory.
pub fn check<R, OP>(pool: &crate::Pool, op: OP) -> Result<(R, Report), crate::Error>
where
    OP: FnOnce() -> R + Send,
    R: Send,
{
    let checker = pool
        .registry()
        .structure()
        .and_then(|s| s.as_any().downcast_ref::<Checker>());
    let options = match checker {
        Some(c) => c.options,
        None => {
            return Err(crate::Error::Config {
                setting: "race::check".into(),
                value: "a pool built without check_races".into(),
                expected: "a pool built with Builder::check_races(true)".into(),
            })
        }
    };
    let run = Arc::new(Run {
        shadow: Shadow::new(),
        relation: Relation::new(options.search, options.compare),
        races: Mutex::new(Vec::new()),
        race_count: AtomicU64::new(0),
        pairs: Mutex::new(Default::default()),
        accesses: AtomicU64::new(0),
        steps: AtomicU64::new(0),
        phases: AtomicU64::new(0),
    });
    let r = pool.install(|| {
        let me = crate::worker::current().map_or(0, |w| w.core.index);
        let root = Node::root(me);
        let t = TaskCtx {
            run: run.clone(),
            phase: root.phase.clone(),
            step: root.clone(),
            parent: root.clone(),
            worker: me,
            pending: Some((root.reserve(), Kind::Finish)),
            scopes: Vec::new(),
        };
        crate::worker::run_in(boxed(t), op)
    });
    let run = Arc::try_unwrap(run)
        .unwrap_or_else(|_| panic!("magpie::race::check: a task of the checked run outlived it"));
    let (plain, phases) = (
        run.relation.plain.into_inner(),
        run.relation.phases.into_inner(),
    );
    let ran = |s: Search| options.search == s || options.compare;
    Ok((
        r,
        Report {
            races: run.races.into_inner().unwrap_or_else(|e| e.into_inner()),
            race_count: run.race_count.into_inner(),
            accesses: run.accesses.into_inner(),
            locations: run.shadow.locations(),
            steps: run.steps.into_inner(),
            stolen_phases: run.phases.into_inner(),
            search: options.search,
            queries: run.relation.queries.into_inner(),
            plain_traversals: ran(Search::Plain).then_some(plain),
            phase_traversals: ran(Search::Phases).then_some(phases),
        },
    ))
}
