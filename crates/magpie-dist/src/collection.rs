//! Task collections (Lifflander's thesis, §5.2 and §5.4): a collective pool of fixed-size tasks
//! that ranks process together, with work stealing between them, and that an iterative program
//! processes again and again.
//!
//! A program makes one collection per rank, seeds it, and processes it; an iterative program
//! restores it and processes it again. Here four ranks run as threads of this process
//! ([`local::Cluster`]); under MPI each rank is a process and its `Comm` is
//! `rma::World::new(launch::init()?.world(), capacity)` (the `mpi` feature; the crate's
//! `examples/` are whole MPI programs):
//!
//! ```
//! use magpie_dist::collection::{local::Cluster, Comm, Strategy, TaskCollection};
//!
//! // Four ranks whose deques hold up to 1024 tasks each; a task is any `Copy` value that
//! // serde can encode (here a number).
//! let ranks = Cluster::ranks::<u32>(4, 1024);
//! let sums: Vec<u64> = std::thread::scope(|s| {
//!     let threads: Vec<_> = ranks
//!         .into_iter()
//!         .map(|comm| {
//!             s.spawn(move || {
//!                 let mut tc = TaskCollection::new(comm, Strategy::StealRetentive);
//!                 if tc.comm().rank() == 0 {
//!                     (0..100).for_each(|t| tc.push(t)); // seed, locally
//!                 }
//!                 let mut total = 0;
//!                 for _ in 0..3 {
//!                     let mut mine = 0u64;
//!                     // Collective: returns on every rank when every task everywhere has run.
//!                     tc.process(|t, spawner| {
//!                         mine += u64::from(t);
//!                         if t < 100 && t % 2 == 0 {
//!                             spawner.spawn(1000 + t); // a child, run here or stolen
//!                         }
//!                     });
//!                     total = tc.comm().all_gather(mine).into_iter().sum::<u64>();
//!                     tc.restore(); // collective: reseed for the next iteration
//!                 }
//!                 total
//!             })
//!         })
//!         .collect();
//!     threads.into_iter().map(|t| t.join().unwrap()).collect()
//! });
//! let expected: u64 = (0..100).sum::<u64>() + (0..100).step_by(2).map(|t| 1000 + t).sum::<u64>();
//! assert!(sums.iter().all(|&t| t == expected));
//! ```
//!
//! A task is plain data (`T: Copy`), so it can be copied between ranks' memories; the closure
//! given to `process` is the thesis's function table. A task may spawn more tasks into its
//! rank's deque through the [`Spawner`]; a task a full deque cannot take runs on this rank
//! (nothing is lost, nothing waits).
//!
//! `process` runs the rank's own tasks newest first; with nothing left it steals the older half
//! of a random victim's shared tasks (strategies that steal), and between attempts it takes part
//! in the termination waves ([`crate::termination`]), which end `process` on every rank once
//! no task is left anywhere. What `restore` reseeds from is the strategy ([`Strategy`]): the
//! original seed, the tasks this rank ran (retentive stealing, §5.4: kept in a list, so two
//! equal tasks stay two), or a persistence-based balancer's placement of every rank's measured
//! tasks (§5.3).
//!
//! **Measurements.** The balancers place tasks by what they cost last time, so a noisy
//! measurement moves tasks for nothing, and on a loaded machine a task's wall time is mostly
//! noise: a rank that waits for a core while in a task makes the task look slower, all its
//! tasks at once, and a balancer that believes it sends that rank's work to the others, where
//! the same happens the next time (two ranks beside another job swapped most of their tasks
//! every iteration that way). So each run of tasks (the tasks a rank runs between two looks for
//! work) is clocked in CPU time as well as wall time ([`crate::cpu_clock`]; a CPU clock read
//! costs about half a microsecond, too much per task), and the seeds' own wall-clock times
//! within the run are made to add up to the run's CPU time: what the run spent outside them
//! (taking tasks, spawned children) is shared out among them, and the whole is scaled by the
//! share of the run the rank had a core for. A task's measured load is then what it cost this
//! rank's CPU, however long the rank waited for a core. Each task's estimate
//! keeps most of the previous one (`Params::memory`: three quarters by default), so one outlier
//! moves nothing far; and a new placement is taken only when it lowers the heaviest rank's load by
//! more than `Params::min_gain` (5%), so a balanced program keeps its placement. Every
//! iteration's report gives both efficiencies, the wall-clock one and the one counted in CPU
//! time ([`IterationReport::cpu_efficiency`]).
//!
//! **Placement and residual stealing.** A persistence-based balancer places the tasks from
//! what they cost last time; it cannot see what happens within the next iteration (the
//! thesis, §5.1: a rank that runs out early waits for the iteration's end). On a machine
//! shared with other programs a rank's speed changes from one moment to the next, so however
//! well the tasks are measured, the placement's ranks do not finish together: beside one busy
//! process on 2 cores, the pure balancers held 0.74-0.93 efficiency where stealing held
//! 0.85-0.98 and the original seeding 0.81-0.93, and the balancers with stealing 0.85-0.98
//! (docs/results/distributed.md). The
//! `+steal` strategies keep the balancer's placement between iterations and let a rank that
//! runs out steal within one, as retentive stealing does: the placement removes most of the
//! steals, stealing removes what the placement could not foresee. Stolen seeds are measured
//! where they ran, but the next placement starts from the last one, not from where the
//! thieves took them: a steal repairs one iteration, and the balancer moves a task only when
//! its estimates say the move pays. The pure balancers stay, as the thesis has them, for
//! dedicated machines and for comparison (`magpie-dist simulate`).
//!
//! The ranks are a [`Comm`]: [`local::Cluster`] runs them as threads of one process (tests,
//! and runs without `mpirun`); the MPI transport implements the same trait.

use crate::balance::{self, Measured, Params};
use crate::cpu_clock::thread_cpu_ns;
use crate::deque::{steal, Full, Memory, Owner, Stolen};
use crate::termination::{Detector, Message};
use crate::timeline::{Spans, State};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// How a collection balances its tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// No stealing; each iteration reseeds the original distribution.
    NoBalance,
    /// Work stealing; each iteration reseeds the original distribution.
    Steal,
    /// Work stealing; each rank reseeds with the tasks it ran (retentive stealing, §5.4).
    StealRetentive,
    /// No stealing; between iterations the centralized balancer places the measured tasks.
    PlbCentralized,
    /// No stealing; between iterations the hierarchical balancer places them.
    PlbHierarchical,
    /// The centralized balancer's placement, and within an iteration a rank that runs out
    /// steals (module doc, "Placement and residual stealing"): for machines shared with other
    /// programs.
    PlbCentralizedSteal,
    /// The hierarchical balancer's placement, with residual stealing.
    PlbHierarchicalSteal,
}

impl Strategy {
    /// Every strategy, in the order the tools list them.
    pub const ALL: [Strategy; 7] = [
        Strategy::NoBalance,
        Strategy::Steal,
        Strategy::StealRetentive,
        Strategy::PlbCentralized,
        Strategy::PlbHierarchical,
        Strategy::PlbCentralizedSteal,
        Strategy::PlbHierarchicalSteal,
    ];

    /// The name the tools use.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::NoBalance => "no-balance",
            Strategy::Steal => "steal",
            Strategy::StealRetentive => "steal-retentive",
            Strategy::PlbCentralized => "plb-centralized",
            Strategy::PlbHierarchical => "plb-hierarchical",
            Strategy::PlbCentralizedSteal => "plb-centralized+steal",
            Strategy::PlbHierarchicalSteal => "plb-hierarchical+steal",
        }
    }

    /// Whether ranks steal under this strategy.
    pub fn steals(self) -> bool {
        matches!(
            self,
            Strategy::Steal
                | Strategy::StealRetentive
                | Strategy::PlbCentralizedSteal
                | Strategy::PlbHierarchicalSteal
        )
    }

    /// Whether a persistence-based balancer places the tasks between iterations (and so
    /// whether the collection's own tasks are timed one by one).
    pub fn places(self) -> bool {
        self.balancer().is_some()
    }

    /// The balancer that places the tasks under this strategy, if any.
    fn balancer(self) -> Option<Balancer> {
        match self {
            Strategy::PlbCentralized | Strategy::PlbCentralizedSteal => Some(balance::centralized),
            Strategy::PlbHierarchical | Strategy::PlbHierarchicalSteal => {
                Some(balance::hierarchical)
            }
            Strategy::NoBalance | Strategy::Steal | Strategy::StealRetentive => None,
        }
    }
}

/// A persistence-based balancer: every rank's measured tasks in, every rank's placed tasks out.
type Balancer = fn(&[Vec<Measured>], Params) -> Vec<Vec<Measured>>;

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Strategy, String> {
        Strategy::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Strategy::ALL.iter().map(|k| k.name()).collect();
                format!("unknown strategy '{s}' (expected {})", names.join(", "))
            })
    }
}

/// A task in a deque, with what the strategies need to know of it.
///
/// `key` names the task's position: a seeded task's comes from its rank and seeding order, a
/// spawned task's from its parent's key and its place among the parent's spawns, so the same
/// program spawns the same keys every iteration whatever the task values are (two equal tasks
/// at two positions have two keys). Retentive stealing of spawned tasks (the steal tree's
/// working phases, §5.7) skips by key.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry<T> {
    /// The task.
    pub task: T,
    /// Its position (see above).
    pub key: u64,
    /// One of this iteration's seeds (seeded by `push`, reseeded by `restore`, or, under
    /// retentive stealing, stolen): what retention and the balancers reseed from.
    pub root: bool,
    /// Spawned by a task at some point (not seeded by `push`).
    pub spawned: bool,
}

/// Idle rounds a rank yields in before it starts to sleep between them.
const IDLE_SPINS: u32 = 32;
/// The first sleep between idle rounds, doubled each round up to `IDLE_DOUBLINGS` times
/// (8 µs to 256 µs: what a wave of termination detection or a thief waits at most per hop).
const IDLE_SLEEP_MIN: std::time::Duration = std::time::Duration::from_micros(8);
const IDLE_DOUBLINGS: u32 = 5;

/// CPU nanoseconds the calling thread used since `since` (a `thread_cpu_ns` reading); 0 without
/// the clock.
fn cpu_since(since: Option<u64>) -> u64 {
    match (since, thread_cpu_ns()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    }
}

/// Makes the measured times of one run of tasks' seeds add up to the CPU time the run used
/// (module doc, "Measurements"): what the run spent outside the seeds' own clocks (taking tasks,
/// the clocks themselves, spawned children) is shared out equally, and the whole is scaled by
/// the share of the run's wall time the rank had a core for (`cpu`: 0 without a CPU clock,
/// then wall time is kept).
fn settle_run<T: Copy>(ran: &mut [(Entry<T>, u64)], wall: u64, cpu: u64) {
    if ran.is_empty() || wall == 0 {
        return;
    }
    let covered: u64 = ran.iter().map(|x| x.1).sum();
    let extra = wall.saturating_sub(covered) as f64 / ran.len() as f64;
    let share = if cpu == 0 {
        1.0
    } else {
        (cpu as f64 / wall as f64).min(1.0)
    };
    for x in ran {
        x.1 = ((x.1 as f64 + extra) * share).round() as u64;
    }
}

/// Hashes an already-mixed key as itself: the skip set's lookups happen at every spawn.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }
}

/// A set of keys (see [`Entry`]).
type Keys = HashSet<u64, std::hash::BuildHasherDefault<KeyHasher>>;

/// The balancers' load estimates by key (see "Measurements").
type Estimates = HashMap<u64, f64, std::hash::BuildHasherDefault<KeyHasher>>;

/// The key of the `i`-th child spawned by the task whose key is `parent` (a bijective mix, so
/// distinct inputs give distinct keys, and positions collide only as 64-bit hashes do).
fn child_key(parent: u64, i: u64) -> u64 {
    let mut z = parent ^ (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How a thief takes tasks from a victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transport {
    /// The thief claims and copies the victim's tasks itself (one-sided operations on the
    /// victim's deque memory); the victim does nothing.
    OneSided,
    /// The thesis's active-message protocol: the thief asks, the victim answers between its
    /// tasks (it looks every few tasks, and at once when idle) with the tasks it claimed from
    /// its own deque for the thief, or with none.
    ActiveMessage,
}

impl Transport {
    /// The name the tools use: `rma` or `am`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::OneSided => "rma",
            Transport::ActiveMessage => "am",
        }
    }
}

impl std::str::FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> Result<Transport, String> {
        match s {
            "rma" => Ok(Transport::OneSided),
            "am" => Ok(Transport::ActiveMessage),
            _ => Err(format!("unknown transport '{s}' (expected rma or am)")),
        }
    }
}

/// A message between ranks of a collection.
#[derive(Clone, Debug, PartialEq)]
pub enum Envelope {
    /// Termination detection's.
    Termination(Message),
    /// Active-message stealing: rank `thief` asks for tasks.
    StealRequest {
        /// Who asks.
        thief: u32,
        /// In which iteration (`process` call): a request of an earlier one gets no task.
        iteration: u32,
    },
    /// The answer: the tasks (JSON of a list of entries; empty: none).
    StealReply {
        /// The request's iteration.
        iteration: u32,
        /// The tasks, encoded.
        tasks: Vec<u8>,
    },
}

/// What a collection needs from the ranks it spans.
///
/// # Safety
///
/// `deque(r)` reaches rank `r`'s deque memory, a different one for each rank, empty until the
/// collection uses it; the collection on this rank is the only owner of `deque(rank())` (one
/// collection per rank and `Comm`), since its owner writes slots without synchronisation.
pub unsafe trait Comm<T: Copy> {
    /// A deque's memory as this rank reaches it.
    type Mem: Memory<T>;
    /// This rank.
    fn rank(&self) -> usize;
    /// Ranks in all.
    fn size(&self) -> usize;
    /// Rank `r`'s deque memory (this rank's own for `r == rank()`), empty when first asked.
    fn deque(&self, r: usize) -> Self::Mem;
    /// Sends a message to rank `to`.
    fn send(&self, to: usize, m: Envelope);
    /// A message for this rank, if one has arrived.
    fn try_recv(&self) -> Option<Envelope>;
    /// Collective: every rank's `mine`, in rank order, on every rank.
    fn all_gather<U>(&self, mine: U) -> Vec<U>
    where
        U: Serialize + DeserializeOwned + Clone + Send + 'static;
    /// Collective: every rank's bytes, in rank order, on every rank. The balancers gather
    /// every task's measurement through here, 16 bytes a task; the default goes through
    /// [`Comm::all_gather`], and a transport that encodes what it gathers (MPI: JSON, three to
    /// four characters a byte) should send the bytes as they are.
    fn all_gather_bytes(&self, mine: Vec<u8>) -> Vec<Vec<u8>> {
        self.all_gather(mine)
    }
    /// Whether another rank has failed (panicked or died), so this one must stop rather than
    /// wait for it; the transport says which, in words. Called while this rank waits.
    fn failed(&self) -> Option<String>;
    /// This rank is working (called between its tasks, every few): a transport with a watchdog
    /// raises its heartbeat (`crate::watchdog`). Nothing by default.
    fn alive(&self) {}
}

/// One rank's figures for one `process`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// Tasks this rank ran.
    pub tasks: u64,
    /// Nanoseconds running tasks (clocked over each run of tasks between steal attempts and
    /// idle spells, so it includes taking tasks from the deque).
    pub task_ns: u64,
    /// Nanoseconds in steal attempts (successful or not).
    pub steal_ns: u64,
    /// Nanoseconds with nothing to run and no steal in progress (termination waves).
    pub idle_ns: u64,
    /// Steal attempts.
    pub steals_attempted: u64,
    /// Steal attempts that took tasks.
    pub steals_successful: u64,
    /// Wall time of the rank's `process`.
    pub wall_ns: u64,
    /// CPU time the rank's thread used in its runs of tasks (the part of `task_ns` it had a
    /// core for; 0 where the platform has no thread CPU clock, `cpu_clock`).
    #[serde(default)]
    pub task_cpu_ns: u64,
    /// CPU time the rank's thread used over its whole `process` (tasks, steals and the polls
    /// of termination waves).
    #[serde(default)]
    pub cpu_ns: u64,
    /// Spawned tasks among the seeds this rank ran: under retentive stealing, the working
    /// phases (subtrees) it keeps for the next iteration, one entry each.
    #[serde(default)]
    pub phases: u64,
    /// What the rank did when, if the collection records it
    /// ([`TaskCollection::with_timeline`]; the simulator always does).
    #[serde(default, skip_serializing_if = "Spans::is_empty")]
    pub timeline: Spans,
}

/// Every rank's figures for one `process` (the same on every rank).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationReport {
    /// The iteration (0 for the first `process`).
    pub iteration: u32,
    /// Per rank.
    pub ranks: Vec<RankReport>,
}

impl IterationReport {
    /// The iteration's wall time: the slowest rank's, nanoseconds.
    pub fn wall_ns(&self) -> u64 {
        self.ranks.iter().map(|r| r.wall_ns).max().unwrap_or(0)
    }

    /// Total task time ÷ (ranks × the longest rank's wall time): 1 when every rank computed
    /// all the time. Task time is wall time, so a rank that waited for a core while in its
    /// tasks (other jobs on its cores, more ranks than cores) still counts as computing: see
    /// [`cpu_efficiency`](Self::cpu_efficiency).
    pub fn efficiency(&self) -> f64 {
        self.share(|r| r.task_ns)
    }

    /// Total CPU time in tasks ÷ (ranks × the longest rank's wall time): the share of the
    /// ranks' time they computed with a core. Four ranks on two free cores are at most 0.5
    /// here however busy their tasks keep them. 0 where the platform has no thread CPU clock.
    pub fn cpu_efficiency(&self) -> f64 {
        self.share(|r| r.task_cpu_ns)
    }

    fn share(&self, part: impl Fn(&RankReport) -> u64) -> f64 {
        let work: u64 = self.ranks.iter().map(part).sum();
        let wall = self.wall_ns();
        if wall == 0 {
            return 0.0;
        }
        work as f64 / (self.ranks.len() as f64 * wall as f64)
    }

    /// Tasks run over all ranks.
    pub fn tasks(&self) -> u64 {
        self.ranks.iter().map(|r| r.tasks).sum()
    }
}

/// Where a running task puts the tasks it spawns.
pub struct Spawner<'a, T: Copy, M: Memory<Entry<T>>> {
    own: &'a mut Owner<Entry<T>, M>,
    overflow: &'a mut Vec<Entry<T>>,
    /// The running task's key, and how many children it has spawned.
    parent: u64,
    spawned: u64,
    /// Keys another rank runs this iteration (retained working phases).
    skip: &'a Keys,
}

impl<T: Copy, M: Memory<Entry<T>>> Spawner<'_, T, M> {
    /// Adds `t` to this rank's tasks (run here, or stolen); never waits and never drops it.
    /// Under retentive stealing a child that a rank stole in the previous iteration is that
    /// rank's to run now (it was reseeded there), so it is not added here.
    pub fn spawn(&mut self, t: T) {
        let key = child_key(self.parent, self.spawned);
        self.spawned += 1;
        if !self.skip.is_empty() && self.skip.contains(&key) {
            return;
        }
        let e = Entry {
            task: t,
            key,
            root: false,
            spawned: true,
        };
        if let Err(Full(e)) = self.own.push(e) {
            self.overflow.push(e);
        }
    }
}

/// A task collection on one rank (see the module doc).
pub struct TaskCollection<T: Copy, C: Comm<Entry<T>>> {
    comm: C,
    own: Owner<Entry<T>, C::Mem>,
    strategy: Strategy,
    /// The tasks `push` seeded (what `restore` reseeds under the non-retentive strategies).
    seed: Vec<Entry<T>>,
    /// Under the balancers with stealing, this rank's seeds as the last placement put them
    /// (the pushed ones until the first): what the next placement starts from.
    base: Vec<Entry<T>>,
    /// Tasks a full deque gave back; run before the deque's.
    overflow: Vec<Entry<T>>,
    /// This iteration's seeds that this rank ran in the last `process`, with their time.
    ran: Vec<(Entry<T>, u64)>,
    /// Keys of spawned tasks that some rank holds as a seed this iteration (see `Spawner`).
    skip: Keys,
    iteration: u32,
    arity: usize,
    params: Params,
    rng: u64,
    transport: Transport,
    /// Active messages: when this rank's outstanding steal request went out.
    awaiting: Option<Instant>,
    /// Whether `process` records the rank's timeline.
    timeline: bool,
    /// Under the balancers, each of the collection's tasks' load estimate by key, the same on
    /// every rank (each computes it from the same gathered measurements; see "Measurements").
    estimates: Estimates,
    /// When the current `process` began (the timeline's zero).
    started: Instant,
}

impl<T, C> TaskCollection<T, C>
where
    T: Copy + Send + Serialize + DeserializeOwned + 'static,
    C: Comm<Entry<T>>,
{
    /// A collection on the ranks of `comm` (collective in spirit: every rank makes one), with
    /// the deque memory `comm` gives and the strategy.
    pub fn new(comm: C, strategy: Strategy) -> TaskCollection<T, C> {
        // SAFETY: `Comm`'s contract: this rank's deque memory is empty and this collection is
        // its only owner.
        let own = unsafe { Owner::new(comm.deque(comm.rank())) };
        let rng = 0x9e37_79b9_7f4a_7c15 ^ (comm.rank() as u64 + 1).wrapping_mul(0xbf58_476d);
        TaskCollection {
            comm,
            own,
            strategy,
            seed: Vec::new(),
            base: Vec::new(),
            overflow: Vec::new(),
            ran: Vec::new(),
            skip: Keys::default(),
            iteration: 0,
            arity: 3,
            params: Params::default(),
            rng,
            transport: Transport::OneSided,
            awaiting: None,
            timeline: false,
            estimates: Estimates::default(),
            started: Instant::now(),
        }
    }

    /// Records, in each [`RankReport::timeline`], when the rank ran tasks, stole and idled
    /// (two clock reads per run of tasks and per steal attempt, which `process` takes anyway).
    pub fn with_timeline(mut self, on: bool) -> Self {
        self.timeline = on;
        self
    }

    /// How thieves take tasks (one-sided by default).
    pub fn with_transport(mut self, t: Transport) -> Self {
        self.transport = t;
        self
    }

    /// The balancers' constants (C, D, arity; the thesis's 1.003, 1.003, 3 by default); the
    /// arity is also the termination tree's.
    pub fn with_params(mut self, p: Params) -> Self {
        self.params = p;
        self.arity = p.arity.max(2);
        self
    }

    /// The ranks.
    pub fn comm(&self) -> &C {
        &self.comm
    }

    /// Seeds `t` on this rank (a local operation).
    pub fn push(&mut self, t: T) {
        let at = (self.comm.rank() as u64) << 40 | self.seed.len() as u64;
        let e = Entry {
            task: t,
            key: child_key(0x5eed, at),
            root: true,
            spawned: false,
        };
        self.seed.push(e);
        if self.strategy.places() && self.strategy.steals() {
            self.base.push(e);
        }
        self.add_entry(e);
    }

    /// Adds tasks this rank stole. Under retentive stealing they become this rank's seeds, so
    /// it keeps them (a spawned one with its whole subtree: the steal tree's working phase,
    /// §5.7) for the next iteration.
    fn take_stolen(&mut self, e: Entry<T>) {
        let root = e.root || self.strategy == Strategy::StealRetentive;
        self.add_entry(Entry { root, ..e });
    }

    fn add_entry(&mut self, e: Entry<T>) {
        if let Err(Full(e)) = self.own.push(e) {
            self.overflow.push(e);
        }
    }

    fn next_victim(&mut self) -> usize {
        victim(&mut self.rng, self.comm.rank(), self.comm.size())
    }

    /// Records `[from, now)` in `state` on the timeline, if it is on.
    fn span(&self, r: &mut RankReport, from: Instant, state: State) {
        if self.timeline {
            let ns = |t: Instant| t.duration_since(self.started).as_nanos() as u64;
            r.timeline.add(ns(from), ns(Instant::now()), state);
        }
    }

    /// Handles every message that has arrived: termination's, steal requests (answered at
    /// once from this rank's own deque) and the answer to this rank's request.
    fn pump(&mut self, det: &mut Detector, r: &mut RankReport) {
        self.comm.alive();
        while let Some(m) = self.comm.try_recv() {
            match m {
                Envelope::Termination(m) => {
                    for (to, out) in det.on_message(m) {
                        self.comm.send(to, Envelope::Termination(out));
                    }
                }
                Envelope::StealRequest { thief, iteration } => {
                    let me = self.comm.rank();
                    let tasks = match iteration == self.iteration {
                        true => match steal(&self.comm.deque(me), 4) {
                            Stolen::Tasks(ts) => ts,
                            _ => Vec::new(),
                        },
                        // Of another iteration than this rank's: an ended one's thief no longer
                        // waits (tasks sent now could arrive after it voted), and a later one's
                        // thief gets its tasks when this rank is there too.
                        false => Vec::new(),
                    };
                    let tasks = serde_json::to_vec(&tasks).expect("tasks serialise");
                    self.comm
                        .send(thief as usize, Envelope::StealReply { iteration, tasks });
                }
                Envelope::StealReply { iteration, tasks } => {
                    // Only this iteration's answer is the one awaited (one request is out at a
                    // time); an answer to a request of an ended iteration carries no task.
                    if iteration != self.iteration {
                        continue;
                    }
                    let Some(t0) = self.awaiting.take() else {
                        continue;
                    };
                    r.steal_ns += t0.elapsed().as_nanos() as u64;
                    self.span(r, t0, State::Steal);
                    let ts: Vec<Entry<T>> =
                        serde_json::from_slice(&tasks).expect("a steal reply deserialises");
                    if !ts.is_empty() {
                        r.steals_successful += 1;
                    }
                    for e in ts {
                        self.take_stolen(e);
                    }
                }
            }
        }
    }

    /// Runs every task of the collection, on every rank, until none is left anywhere
    /// (collective); `f(task, spawner)` runs one task. Returns every rank's figures.
    pub fn process<F>(&mut self, mut f: F) -> IterationReport
    where
        F: FnMut(T, &mut Spawner<'_, T, C::Mem>),
    {
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        self.started = start;
        let mut r = RankReport::default();
        let mut det = Detector::new(self.comm.rank(), self.comm.size(), self.arity, 0);
        det.restart(self.iteration, self.own.stolen());
        self.ran.clear();
        let steals = self.strategy.steals() && self.comm.size() > 1;
        let mut since_pump = 0u32;
        let mut idle_since: Option<Instant> = None;
        // Time in tasks is clocked per run of tasks, not per task (two clock reads per task
        // would cost as much as a small task); the balancers need each of the collection's
        // own tasks' time, so under them those are clocked one by one.
        let per_task = self.strategy.places();
        let mut busy_since: Option<(Instant, Option<u64>)> = None;
        // Where the current run of tasks' seeds begin in `ran` (see `settle_run`).
        let mut run_from = 0;
        // Rounds in a row that found no task (the idle back-off below).
        let mut idle_rounds = 0u32;
        loop {
            since_pump += 1;
            if since_pump >= 16 {
                since_pump = 0;
                self.pump(&mut det, &mut r);
            }
            if let Some(e) = self.overflow.pop().or_else(|| self.own.pop()) {
                if let Some(s) = idle_since.take() {
                    r.idle_ns += s.elapsed().as_nanos() as u64;
                    self.span(&mut r, s, State::Idle);
                }
                idle_rounds = 0;
                if busy_since.is_none() {
                    busy_since = Some((Instant::now(), thread_cpu_ns()));
                    run_from = self.ran.len();
                }
                let t0 = (per_task && e.root).then(Instant::now);
                f(
                    e.task,
                    &mut Spawner {
                        own: &mut self.own,
                        overflow: &mut self.overflow,
                        parent: e.key,
                        spawned: 0,
                        skip: &self.skip,
                    },
                );
                r.tasks += 1;
                if e.root {
                    let ns = t0.map_or(0, |t| t.elapsed().as_nanos() as u64);
                    self.ran.push((e, ns));
                    r.phases += u64::from(e.spawned);
                }
                continue;
            }
            if let Some((b, cpu)) = busy_since.take() {
                let (wall, cpu) = (b.elapsed().as_nanos() as u64, cpu_since(cpu));
                r.task_ns += wall;
                r.task_cpu_ns += cpu;
                if per_task {
                    settle_run(&mut self.ran[run_from..], wall, cpu);
                }
                self.span(&mut r, b, State::Task);
            }
            // A steal attempt ends an idle spell (the polls between attempts).
            if steals && (self.transport == Transport::OneSided || self.awaiting.is_none()) {
                if let Some(s) = idle_since.take() {
                    r.idle_ns += s.elapsed().as_nanos() as u64;
                    self.span(&mut r, s, State::Idle);
                }
            }
            if steals && self.transport == Transport::OneSided {
                let victim = self.next_victim();
                let t0 = Instant::now();
                r.steals_attempted += 1;
                let got = steal(&self.comm.deque(victim), 4);
                r.steal_ns += t0.elapsed().as_nanos() as u64;
                self.span(&mut r, t0, State::Steal);
                if let Stolen::Tasks(ts) = got {
                    r.steals_successful += 1;
                    for e in ts {
                        self.take_stolen(e);
                    }
                    continue;
                }
            } else if steals {
                // Active messages: ask one victim, and until it answers keep answering others
                // (this rank is not idle meanwhile: its request may bring tasks).
                if self.awaiting.is_none() {
                    let victim = self.next_victim();
                    r.steals_attempted += 1;
                    self.awaiting = Some(Instant::now());
                    let thief = self.comm.rank() as u32;
                    let iteration = self.iteration;
                    self.comm
                        .send(victim, Envelope::StealRequest { thief, iteration });
                }
                self.pump(&mut det, &mut r);
                if det.terminated() {
                    // The collection ended while this rank's request was out (it had voted
                    // before asking, and the victim, with nothing, may have left without
                    // answering). A late answer carries no task: the victim answers requests
                    // of an ended iteration with none.
                    self.awaiting = None;
                    break;
                }
                if self.awaiting.is_some() {
                    if let Some(why) = self.comm.failed() {
                        panic!("magpie-dist: rank {} stops: {why}", self.comm.rank());
                    }
                    std::hint::spin_loop();
                    continue;
                }
                if !self.overflow.is_empty() || !self.own.is_empty() {
                    continue;
                }
            }
            idle_since.get_or_insert_with(Instant::now);
            if let Some(why) = self.comm.failed() {
                panic!("magpie-dist: rank {} stops: {why}", self.comm.rank());
            }
            self.pump(&mut det, &mut r);
            if !self.overflow.is_empty() || !self.own.is_empty() {
                continue;
            }
            for (to, m) in det.poll(true, self.own.stolen()) {
                self.comm.send(to, Envelope::Termination(m));
            }
            if det.terminated() {
                break;
            }
            // Nothing here, nothing stolen: yield, and after a while sleep, doubling up to
            // `IDLE_SLEEP_MAX`, so an idle rank leaves its core to ranks with work (ranks
            // outnumbering cores, other jobs). Spinning, idle ranks took nine tenths of the CPU
            // from the one rank with work at 3 ranks on 2 loaded cores.
            idle_rounds += 1;
            match idle_rounds.checked_sub(IDLE_SPINS) {
                None => std::thread::yield_now(),
                Some(k) => std::thread::sleep(IDLE_SLEEP_MIN * (1 << k.min(IDLE_DOUBLINGS))),
            }
        }
        if let Some(s) = idle_since {
            r.idle_ns += s.elapsed().as_nanos() as u64;
            self.span(&mut r, s, State::Idle);
        }
        r.wall_ns = start.elapsed().as_nanos() as u64;
        r.cpu_ns = cpu_since(cpu_start);
        let ranks = self.comm.all_gather(r);
        let report = IterationReport {
            iteration: self.iteration,
            ranks,
        };
        self.iteration += 1;
        report
    }

    /// The seeds this rank ran in the last `process`, with each one's measured time in
    /// nanoseconds (CPU time where the platform has the clock, else wall time; measured under
    /// the balancers' strategies only, 0 otherwise): what `restore` reseeds from.
    pub fn last_ran(&self) -> impl Iterator<Item = (T, u64)> + '_ {
        self.ran.iter().map(|&(e, ns)| (e.task, ns))
    }

    /// Reseeds this rank for the next `process` as the strategy says (collective: the
    /// balancers gather every rank's measured tasks, retentive stealing every rank's retained
    /// spawned tasks' keys).
    ///
    /// Under retentive stealing a rank keeps every seed it ran: its own, and what it stole,
    /// which for a recursive program is a spawned task standing for its whole subtree (the
    /// steal tree's working phase, §5.7). Every rank learns the keys of the spawned ones, and
    /// whoever spawns one of them next time leaves it to the rank that holds it, so each
    /// subtree runs once, where it ran last, and stealing goes on from there. The program must
    /// spawn the same children in the same order each iteration (what makes retention worth
    /// having at all); what each rank keeps is one entry per working phase, not every task.
    pub fn restore(&mut self) {
        let ran = std::mem::take(&mut self.ran);
        self.skip.clear();
        let next: Vec<Entry<T>> = match self.strategy {
            Strategy::NoBalance | Strategy::Steal => self.seed.clone(),
            Strategy::StealRetentive => {
                let next: Vec<Entry<T>> = ran.into_iter().map(|(e, _)| e).collect();
                let mine: Vec<u64> = next.iter().filter(|e| e.spawned).map(|e| e.key).collect();
                let all: Vec<Vec<u64>> = self.comm.all_gather(mine);
                self.skip = all.into_iter().flatten().collect();
                next
            }
            Strategy::PlbCentralized
            | Strategy::PlbHierarchical
            | Strategy::PlbCentralizedSteal
            | Strategy::PlbHierarchicalSteal => self.rebalance(ran),
        };
        for e in next {
            self.add_entry(Entry { root: true, ..e });
        }
    }

    /// A persistence-based balancer's reseeding (collective): this rank's next seeds, from
    /// `ran`, its seeds of the last `process` with their measured times.
    ///
    /// What is placed again is, for the pure balancers, the tasks where they ran (which is
    /// where they were placed: nothing is stolen), and for the balancers with stealing, the
    /// last placement (`base`): a task stolen in one iteration goes back to where the
    /// balancer put it, and its measurement, taken where it ran, updates its estimate. Placing
    /// again from where tasks ran after steals, as this first did, moved about half of hf's
    /// tasks every iteration at 3 ranks: the thieves had taken their victims' oldest tasks
    /// by the thousand, and the balancer sent the cheap ones back and forth; from the last
    /// placement a task moves only when the estimates say the move gains (`Params::min_gain`).
    ///
    /// Every rank gathers every task's key and time, and under stealing every rank's placed
    /// keys (16 and 8 bytes a task, as they are), computes the same estimates and the same
    /// placement from them (so the ranks agree without another message), and then only the
    /// tasks that change rank travel, as entries, in a second gather that every rank skips
    /// when nothing moves. Gathering every entry as JSON, as this first did, took 9-18 ms an
    /// iteration at 3 ranks with 7,500 tasks each.
    fn rebalance(&mut self, ran: Vec<(Entry<T>, u64)>) -> Vec<Entry<T>> {
        let me = self.comm.rank();
        let residual = self.strategy.steals();
        let mut bytes = Vec::with_capacity(8 + 16 * ran.len() + 8 * self.base.len());
        bytes.extend_from_slice(&(ran.len() as u64).to_le_bytes());
        for (e, ns) in &ran {
            bytes.extend_from_slice(&e.key.to_le_bytes());
            bytes.extend_from_slice(&ns.to_le_bytes());
        }
        if residual {
            for e in &self.base {
                bytes.extend_from_slice(&e.key.to_le_bytes());
            }
        }
        let words = |b: &[u8]| -> Vec<u64> {
            b.chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                .collect()
        };
        let gathered: Vec<Vec<u64>> = self
            .comm
            .all_gather_bytes(bytes)
            .iter()
            .map(|b| words(b))
            .collect();
        // Each rank's measurements, (key, time), and the rest of its words: its placed keys.
        let split = |w: &Vec<u64>| (w[0] as usize * 2 + 1).min(w.len());
        let mut measured: Vec<Vec<(u64, u64)>> = gathered
            .iter()
            .map(|w| {
                w[1..split(w)]
                    .chunks_exact(2)
                    .map(|p| (p[0], p[1]))
                    .collect()
            })
            .collect();
        estimate(
            &mut self.estimates,
            self.params.memory,
            &mut measured,
            |&k| k,
        );
        let (mine, loads) = if residual {
            let estimates = &self.estimates;
            let loads: Vec<Vec<(u64, u64)>> = gathered
                .iter()
                .map(|w| {
                    w[split(w)..]
                        .iter()
                        .map(|k| (*k, estimates.get(k).map_or(0, |l| l.round() as u64)))
                        .collect()
                })
                .collect();
            (std::mem::take(&mut self.base), loads)
        } else {
            (
                ran.into_iter().map(|(e, _)| e).collect::<Vec<_>>(),
                measured,
            )
        };
        let placed = place(self.strategy, self.params, &loads);
        let moves = placed
            .iter()
            .enumerate()
            .any(|(r, ids)| ids.iter().any(|&(from, _)| from != r));
        let mut arrived: HashMap<(usize, usize), Entry<T>> = HashMap::new();
        if moves {
            // (rank, index in this rank's list, entry) of each task this rank gives away.
            let mine = &mine;
            let leaving: Vec<(u32, u32, Entry<T>)> = placed
                .iter()
                .enumerate()
                .filter(|&(r, _)| r != me)
                .flat_map(|(r, ids)| {
                    ids.iter()
                        .filter(|&&(from, _)| from == me)
                        .map(move |&(_, i)| (r as u32, i as u32, mine[i]))
                })
                .collect();
            for (from, sent) in self.comm.all_gather(leaving).into_iter().enumerate() {
                for (to, i, e) in sent {
                    if to as usize == me {
                        arrived.insert((from, i as usize), e);
                    }
                }
            }
        }
        let next: Vec<Entry<T>> = placed[me]
            .iter()
            .map(|&(from, i)| match from == me {
                true => mine[i],
                false => arrived[&(from, i)],
            })
            .collect();
        if residual {
            self.base = next.clone();
        }
        next
    }
}

/// A random victim for rank `me` of `p` (at least 2): any rank but `me`, uniformly, from the
/// xorshift state `rng`.
pub fn victim(rng: &mut u64, me: usize, p: usize) -> usize {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let k = (*rng % (p as u64 - 1)) as usize;
    (me + 1 + k) % p
}

/// Replaces each measured time in `all` by the task's load estimate, which keeps `memory`
/// (from 0 to 1) of its previous one in `estimates` (by the task's key, `key`), and records the
/// new ones (module doc, "Measurements").
fn estimate<X>(
    estimates: &mut Estimates,
    memory: f64,
    all: &mut [Vec<(X, u64)>],
    key: impl Fn(&X) -> u64,
) {
    let m = memory.clamp(0.0, 1.0);
    for (x, ns) in all.iter_mut().flatten() {
        let est = estimates
            .entry(key(x))
            .and_modify(|prev| *prev = m * *prev + (1.0 - m) * *ns as f64)
            .or_insert(*ns as f64);
        *ns = est.round() as u64;
    }
}

/// A persistence-based balancer's next seeds: `ran[r]` is what rank `r` ran of the
/// collection's own tasks with each one's measured time; the result is every rank's tasks for
/// the next iteration. `strategy` is `PlbCentralized` or `PlbHierarchical` (any other keeps
/// each rank's tasks where they ran). The balancer's placement is taken only if it is worth
/// moving to ([`balance::worth_moving`] with `params.min_gain`); otherwise every task stays.
/// `restore` and the simulator both place through here.
pub fn placement<T: Copy>(
    strategy: Strategy,
    params: Params,
    ran: &[Vec<(T, u64)>],
) -> Vec<Vec<T>> {
    place(strategy, params, ran)
        .iter()
        .map(|ids| ids.iter().map(|&(r, i)| ran[r][i].0).collect())
        .collect()
}

/// [`placement`] naming each task by where it is in `ran`: `(rank, index)`.
fn place<X>(strategy: Strategy, params: Params, ran: &[Vec<(X, u64)>]) -> Vec<Vec<(usize, usize)>> {
    // Name each task by (rank, index) packed in the id.
    let measured: Vec<Vec<Measured>> = ran
        .iter()
        .enumerate()
        .map(|(r, ts)| {
            ts.iter()
                .enumerate()
                .map(|(i, &(_, ns))| Measured {
                    id: (r as u64) << 40 | i as u64,
                    load: ns as f64,
                })
                .collect()
        })
        .collect();
    let placed = match strategy.balancer() {
        // A placement that gains too little to be told from measurement noise is not taken.
        Some(balancer) => match balancer(&measured, params) {
            placed if balance::worth_moving(&measured, &placed, params.min_gain) => placed,
            _ => measured,
        },
        None => measured,
    };
    placed
        .iter()
        .map(|ms| {
            ms.iter()
                .map(|m| ((m.id >> 40) as usize, (m.id & ((1 << 40) - 1)) as usize))
                .collect()
        })
        .collect()
}

/// Ranks as threads of this process.
pub mod local {
    use super::*;
    use crate::deque::Local;
    use std::any::Any;
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Condvar, Mutex};

    /// Sentinel of `Shared::failed`: no rank has failed.
    const NONE: usize = usize::MAX;

    struct Shared<T> {
        deques: Vec<Arc<Local<T>>>,
        inbox: Vec<Mutex<VecDeque<Envelope>>>,
        /// A barrier that gives up when a rank fails: (generation, ranks arrived).
        barrier: (Mutex<(u64, usize)>, Condvar),
        slots: Mutex<Vec<Option<Box<dyn Any + Send>>>>,
        /// The first rank that failed, or `NONE`.
        failed: AtomicUsize,
    }

    impl<T> Shared<T> {
        fn wait(&self, me: usize) {
            let (m, cv) = &self.barrier;
            let mut g = lock(m);
            let gen = g.0;
            g.1 += 1;
            if g.1 == self.deques.len() {
                *g = (gen + 1, 0);
                cv.notify_all();
                return;
            }
            while g.0 == gen {
                // Acquire: pairs with the failing rank's AcqRel exchange (`Rank::drop`); only the
                // rank number is read, so this only needs to see it eventually (every 20 ms).
                let failed = self.failed.load(Ordering::Acquire);
                if failed != NONE {
                    drop(g);
                    panic!("magpie-dist: rank {me} stops: rank {failed} failed");
                }
                g = cv
                    .wait_timeout(g, std::time::Duration::from_millis(20))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }

    /// P ranks in one process: [`Cluster::ranks`] gives each thread its [`Rank`].
    pub struct Cluster;

    impl Cluster {
        /// `ranks` ranks whose deques hold `capacity` tasks each, for a collection of `T`s.
        pub fn ranks<T: Copy + Send + 'static>(
            ranks: usize,
            capacity: usize,
        ) -> Vec<Rank<Entry<T>>> {
            let n = ranks.max(1);
            let shared = Arc::new(Shared {
                deques: (0..n).map(|_| Arc::new(Local::new(capacity))).collect(),
                inbox: (0..n).map(|_| Mutex::new(VecDeque::new())).collect(),
                barrier: (Mutex::new((0, 0)), Condvar::new()),
                slots: Mutex::new((0..n).map(|_| None).collect()),
                failed: AtomicUsize::new(NONE),
            });
            (0..n)
                .map(|rank| Rank {
                    rank,
                    shared: shared.clone(),
                })
                .collect()
        }
    }

    /// One rank of a [`Cluster`].
    pub struct Rank<T> {
        rank: usize,
        shared: Arc<Shared<T>>,
    }

    impl<T> Rank<T> {
        /// This rank's index.
        pub fn index(&self) -> usize {
            self.rank
        }
    }

    impl<T> Drop for Rank<T> {
        fn drop(&mut self) {
            // A rank dropped while its thread panics has failed: the others stop instead of
            // waiting for it.
            if std::thread::panicking() {
                // AcqRel/Acquire: the first failing rank's number wins and is what the others
                // read (Acquire in `wait` and `failed`); a later failure leaves it.
                let _ = self.shared.failed.compare_exchange(
                    NONE,
                    self.rank,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                self.shared.barrier.1.notify_all();
            }
        }
    }

    fn lock<U>(m: &Mutex<U>) -> std::sync::MutexGuard<'_, U> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    // SAFETY: each rank index has its own new `Local`, and `Cluster::ranks` makes one `Rank` per
    // index, which cannot be cloned: a collection takes it by value.
    unsafe impl<T: Copy + Send + 'static> Comm<T> for Rank<T> {
        type Mem = Arc<Local<T>>;
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.shared.deques.len()
        }
        fn deque(&self, r: usize) -> Arc<Local<T>> {
            self.shared.deques[r].clone()
        }
        fn send(&self, to: usize, m: Envelope) {
            lock(&self.shared.inbox[to]).push_back(m);
        }
        fn try_recv(&self) -> Option<Envelope> {
            lock(&self.shared.inbox[self.rank]).pop_front()
        }
        fn all_gather<U>(&self, mine: U) -> Vec<U>
        where
            U: Serialize + DeserializeOwned + Clone + Send + 'static,
        {
            lock(&self.shared.slots)[self.rank] = Some(Box::new(mine));
            self.shared.wait(self.rank);
            let all: Vec<U> = lock(&self.shared.slots)
                .iter()
                .map(|s| {
                    s.as_ref()
                        .and_then(|b| b.downcast_ref::<U>())
                        .expect("every rank gathers the same type")
                        .clone()
                })
                .collect();
            // Everyone has read before anyone writes the next gather.
            self.shared.wait(self.rank);
            all
        }
        fn failed(&self) -> Option<String> {
            // Acquire: pairs with the failing rank's exchange in `Rank::drop`.
            match self.shared.failed.load(Ordering::Acquire) {
                NONE => None,
                r => Some(format!("rank {r} failed")),
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::local::Cluster;
    use super::*;

    /// A task of a binary tree: its depth; it spawns two children above depth 0. `cost` spins
    /// that many microseconds, more for tasks of rank 0's first subtree (skew).
    #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    struct Node {
        depth: u32,
        heavy: bool,
    }

    fn spin(us: u64) {
        let t = Instant::now();
        while t.elapsed().as_micros() < us as u128 {
            std::hint::spin_loop();
        }
    }

    /// Every strategy at 1-4 ranks, 4 iterations: every task of every iteration runs exactly
    /// once (counted over the ranks), and the reports agree on every rank.
    #[test]
    fn a_runs_seeds_add_up_to_the_cpu_time_it_used() {
        let e = |t: u32| Entry {
            task: t,
            key: u64::from(t),
            root: true,
            spawned: false,
        };
        // Three seeds clocked 10, 20 and 30 ns in a run of 90 ns wall, 45 ns CPU: the 30 ns
        // outside their clocks shared out, then halved (the rank had a core half the time).
        let mut ran = vec![(e(0), 10), (e(1), 20), (e(2), 30)];
        settle_run(&mut ran, 90, 45);
        assert_eq!(
            ran.iter().map(|x| x.1).collect::<Vec<_>>(),
            vec![10, 15, 20]
        );
        // Without a CPU clock the wall time is kept; an empty run changes nothing.
        let mut ran = vec![(e(0), 10), (e(1), 20), (e(2), 30)];
        settle_run(&mut ran, 90, 0);
        assert_eq!(ran.iter().map(|x| x.1).sum::<u64>(), 90);
        settle_run(&mut ran[..0], 90, 45);
    }

    #[test]
    fn cpu_efficiency_counts_only_the_time_tasks_had_a_core() {
        // Two ranks whose tasks wait (sleep) rather than compute: busy by the wall clock,
        // idle by the CPU clock, as ranks that wait for a core are.
        if crate::cpu_clock::thread_cpu_ns().is_none() {
            return; // no CPU clock here: the figure is 0 and there is nothing to compare
        }
        let reports: Vec<IterationReport> = std::thread::scope(|s| {
            let threads: Vec<_> = Cluster::ranks::<u32>(2, 64)
                .into_iter()
                .map(|comm| {
                    s.spawn(move || {
                        let mut tc = TaskCollection::new(comm, Strategy::NoBalance);
                        (0..10).for_each(|t| tc.push(t));
                        tc.process(|_, _| std::thread::sleep(std::time::Duration::from_millis(3)))
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let r = &reports[0];
        assert_eq!(r.tasks(), 20);
        assert!(r.efficiency() > 0.5, "{r:?}");
        assert!(r.cpu_efficiency() < 0.25 * r.efficiency(), "{r:?}");
        for rank in &r.ranks {
            assert!(rank.task_cpu_ns <= rank.cpu_ns, "{rank:?}");
        }
    }

    /// Rank 0 seeds every task: under a pure balancer rank 1 idles through the first
    /// iteration and gets its share only from the placement; under the same balancer with
    /// residual stealing it steals from the start, and the placement keeps both ranks busy.
    #[test]
    fn the_balancers_with_stealing_steal_and_still_place() {
        for strategy in [
            Strategy::PlbCentralized,
            Strategy::PlbHierarchical,
            Strategy::PlbCentralizedSteal,
            Strategy::PlbHierarchicalSteal,
        ] {
            // Under stealing, rank 0's first-iteration tasks wait (up to a generous bound,
            // never needed on a working machine) until rank 1 has run one, so that the test
            // does not depend on which thread the system runs first.
            let rank1_ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let handles: Vec<_> = Cluster::ranks::<u32>(2, 128)
                .into_iter()
                .map(|rank| {
                    let rank1_ran = rank1_ran.clone();
                    std::thread::spawn(move || {
                        let mut tc = TaskCollection::new(rank, strategy);
                        let me = tc.comm().rank();
                        if me == 0 {
                            (0..40).for_each(|t| tc.push(t));
                        }
                        let mut out = Vec::new();
                        for it in 0..3 {
                            let mut sum = 0u64;
                            let rep = tc.process(|t, _| {
                                use std::sync::atomic::Ordering::{Acquire, Release};
                                if me == 1 {
                                    rank1_ran.store(true, Release);
                                } else if it == 0 && strategy.steals() {
                                    let t0 = Instant::now();
                                    while !rank1_ran.load(Acquire) && t0.elapsed().as_secs() < 30 {
                                        std::thread::yield_now();
                                    }
                                }
                                spin(50);
                                sum += u64::from(t);
                            });
                            let total: u64 = tc.comm().all_gather(sum).into_iter().sum();
                            out.push((rep, total, tc.last_ran().count()));
                            tc.restore();
                        }
                        out
                    })
                })
                .collect();
            let all: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            for (it, (rep, total, _)) in all[0].iter().enumerate() {
                assert_eq!(*total, (0..40).sum::<u64>(), "{strategy:?}, iteration {it}");
                assert_eq!(rep.tasks(), 40, "{strategy:?}, iteration {it}");
            }
            let stole = all[0][0].0.ranks[1].steals_successful;
            if strategy.steals() {
                assert!(stole > 0, "{strategy:?}: rank 1 never stole");
            } else {
                assert_eq!(stole, 0, "{strategy:?}");
            }
            // After the first placement both ranks run seeds of their own.
            for (r, runs) in all.iter().enumerate() {
                assert!(
                    runs[1].2 > 0,
                    "{strategy:?}: rank {r} ran no seed in iteration 1"
                );
            }
        }
    }

    /// Under a balancer with stealing, a task stolen in one iteration goes back to where the
    /// placement put it: each iteration rank 1 steals from rank 0 (rank 0 waits, before it
    /// starts, until rank 1 has run one of its tasks), and with a placement that never pays
    /// (`min_gain` unreachable) each rank is reseeded with exactly its own tasks again. (The
    /// balancer first placed again from where the tasks ran, so the stolen ones stayed with
    /// the thief, and under noise half of hf's tasks moved every iteration.)
    #[test]
    fn stolen_tasks_go_back_to_their_placement() {
        for strategy in [
            Strategy::PlbCentralizedSteal,
            Strategy::PlbHierarchicalSteal,
        ] {
            let stolen_ran = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
            let params = Params {
                min_gain: f64::INFINITY,
                ..Params::default()
            };
            let handles: Vec<_> = Cluster::ranks::<u32>(2, 256)
                .into_iter()
                .map(|rank| {
                    let stolen_ran = stolen_ran.clone();
                    std::thread::spawn(move || {
                        use std::sync::atomic::Ordering::{Acquire, Release};
                        let mut tc = TaskCollection::new(rank, strategy).with_params(params);
                        let me = tc.comm().rank() as u32;
                        (0..40).for_each(|t| tc.push(me * 1000 + t));
                        let mut out = Vec::new();
                        for it in 1..=4u32 {
                            if me == 0 {
                                // Rank 1 runs its own tasks, then steals from this rank's
                                // deque, seeded and waiting (bounded, never reached on a
                                // working machine).
                                let t0 = Instant::now();
                                while stolen_ran.load(Acquire) < it && t0.elapsed().as_secs() < 30 {
                                    std::thread::yield_now();
                                }
                            }
                            let mut stole = 0;
                            let rep = tc.process(|t, _| {
                                if me == 1 && t < 1000 {
                                    stole += 1;
                                    if stole == 1 {
                                        stolen_ran.store(it, Release);
                                    }
                                }
                                spin(20);
                            });
                            assert_eq!(rep.tasks(), 80);
                            let ran: Vec<u32> = tc.last_ran().map(|(t, _)| t).collect();
                            tc.restore();
                            // This rank's seeds: its deque, emptied and refilled as it was
                            // (newest first out, so back in reverse), while no rank runs (the
                            // gather after it keeps the others from stealing meanwhile).
                            let mut taken = Vec::new();
                            while let Some(e) = tc.own.pop() {
                                taken.push(e);
                            }
                            let mut seeds: Vec<u32> = taken.iter().map(|e| e.task).collect();
                            taken.into_iter().rev().for_each(|e| tc.add_entry(e));
                            tc.comm().all_gather(0u8);
                            seeds.sort_unstable();
                            out.push((stole, ran, seeds));
                        }
                        out
                    })
                })
                .collect();
            let all: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            for (it, (stole, ran, seeds)) in all[1].iter().enumerate() {
                assert!(
                    *stole > 0,
                    "{strategy:?}, iteration {it}: rank 1 stole nothing"
                );
                assert!(ran.iter().any(|&t| t < 1000), "{strategy:?}: {ran:?}");
                assert_eq!(
                    *seeds,
                    (1000..1040).collect::<Vec<u32>>(),
                    "{strategy:?}, {it}"
                );
            }
            for (it, (_, _, seeds)) in all[0].iter().enumerate() {
                assert_eq!(*seeds, (0..40).collect::<Vec<u32>>(), "{strategy:?}, {it}");
            }
        }
    }

    #[test]
    fn every_task_runs_once_under_every_strategy() {
        for transport in [Transport::OneSided, Transport::ActiveMessage] {
            every_task_runs_once(transport);
        }
    }

    fn every_task_runs_once(transport: Transport) {
        for strategy in Strategy::ALL {
            for ranks in [1, 2, 3, 4] {
                let handles: Vec<_> = Cluster::ranks::<Node>(ranks, 64)
                    .into_iter()
                    .map(|rank| {
                        std::thread::spawn(move || {
                            let me = rank.index();
                            let mut tc =
                                TaskCollection::new(rank, strategy).with_transport(transport);
                            // Rank 0 seeds two deep trees (one heavy); the others one small tree.
                            if me == 0 {
                                tc.push(Node {
                                    depth: 7,
                                    heavy: true,
                                });
                                tc.push(Node {
                                    depth: 7,
                                    heavy: false,
                                });
                            } else {
                                tc.push(Node {
                                    depth: 3,
                                    heavy: false,
                                });
                            }
                            let mut reports = Vec::new();
                            for _ in 0..4 {
                                let rep = tc.process(|t, s| {
                                    spin(if t.heavy { 20 } else { 5 });
                                    if t.depth > 0 {
                                        for _ in 0..2 {
                                            s.spawn(Node {
                                                depth: t.depth - 1,
                                                heavy: t.heavy,
                                            });
                                        }
                                    }
                                });
                                reports.push(rep);
                                tc.restore();
                            }
                            reports
                        })
                    })
                    .collect();
                let all: Vec<Vec<IterationReport>> =
                    handles.into_iter().map(|h| h.join().unwrap()).collect();
                let tree = |d: u32| (1u64 << (d + 1)) - 1;
                let want = 2 * tree(7) + (ranks as u64 - 1) * tree(3);
                for it in 0..4 {
                    let rep = &all[0][it];
                    assert_eq!(
                        rep.tasks(),
                        want,
                        "{strategy:?}, {ranks} ranks, iteration {it}"
                    );
                    for other in &all[1..] {
                        assert_eq!(&other[it], rep, "reports differ between ranks");
                    }
                    let e = rep.efficiency();
                    assert!((0.0..=1.0).contains(&e), "{e}");
                    if !strategy.steals() {
                        assert!(rep.ranks.iter().all(|r| r.steals_attempted == 0));
                    }
                }
                if strategy == Strategy::NoBalance && ranks > 1 {
                    // Without stealing, rank 0 runs its two trees every iteration.
                    assert_eq!(all[0][0].ranks[0].tasks, 2 * tree(7));
                }
            }
        }
    }

    /// Rank 0's first task waits until rank 1 has run a task, which rank 1 can only have stolen
    /// (it seeds none): stealing moves tasks, the thief's report counts it, and retention keeps
    /// the stolen task on the thief.
    #[test]
    fn an_idle_rank_steals_and_retains_what_it_ran() {
        // One-sided only: rank 0's task waits for rank 1 to have stolen, and under active
        // messages rank 0 answers only between tasks (rank 1's request would wait for ever).
        steals_and_retains(Transport::OneSided);
    }

    fn steals_and_retains(transport: Transport) {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let ran_on_1 = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = Cluster::ranks::<u32>(2, 64)
            .into_iter()
            .map(|rank| {
                let flag = ran_on_1.clone();
                std::thread::spawn(move || {
                    let me = rank.index();
                    let mut tc = TaskCollection::new(rank, Strategy::StealRetentive)
                        .with_transport(transport);
                    if me == 0 {
                        for t in 0..10 {
                            tc.push(t);
                        }
                    }
                    let mut mine = Vec::new();
                    let rep = tc.process(|t, _| {
                        mine.push(t);
                        if me == 1 {
                            flag.store(true, Ordering::Release);
                        } else {
                            let start = Instant::now();
                            while !flag.load(Ordering::Acquire) {
                                assert!(start.elapsed().as_secs() < 30, "rank 1 never stole");
                                std::thread::yield_now();
                            }
                        }
                    });
                    tc.restore();
                    let mut again = Vec::new();
                    // Retained: each rank runs again what it ran, with nothing to steal for
                    // rank 1 unless rank 0 shares (it may); every task runs once either way.
                    let rep2 = tc.process(|t, _| again.push(t));
                    (mine, rep, again, rep2)
                })
            })
            .collect();
        let out: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(!out[1].0.is_empty(), "rank 1 ran nothing");
        assert!(out[1].1.ranks[1].steals_successful > 0);
        let mut all: Vec<u32> = out.iter().flat_map(|o| o.0.clone()).collect();
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        let mut again: Vec<u32> = out.iter().flat_map(|o| o.2.clone()).collect();
        again.sort();
        assert_eq!(again, (0..10).collect::<Vec<_>>());
        assert_eq!(out[0].3.tasks(), 10);
    }

    /// Retentive stealing of a recursive collection (the steal tree's working phases, §5.7):
    /// rank 0 seeds one tree whose tasks repeat values (every node at a depth is equal), and its
    /// first task waits until another rank has run a task, so that rank steals spawned
    /// subtrees. Those are the thieves' to run in the following iterations (rank 0 skips them
    /// by position), and every iteration runs the whole tree exactly once.
    #[test]
    fn retention_keeps_stolen_subtrees_where_they_ran() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let depth = 9u32;
        let size = (1u64 << (depth + 1)) - 1;
        for ranks in [2, 3] {
            let ran_elsewhere = Arc::new(AtomicBool::new(false));
            let handles: Vec<_> = Cluster::ranks::<u32>(ranks, 64)
                .into_iter()
                .map(|rank| {
                    let flag = ran_elsewhere.clone();
                    std::thread::spawn(move || {
                        let me = rank.index();
                        let mut tc = TaskCollection::new(rank, Strategy::StealRetentive);
                        if me == 0 {
                            tc.push(depth);
                        }
                        let mut reports = Vec::new();
                        for it in 0..5 {
                            let mut first = it == 0 && me == 0;
                            let rep = tc.process(|d, s| {
                                if me != 0 {
                                    flag.store(true, Ordering::Release);
                                }
                                spin(2);
                                if d > 0 {
                                    s.spawn(d - 1);
                                    s.spawn(d - 1);
                                }
                                // The root, having spawned, waits for a thief to run a child.
                                if std::mem::take(&mut first) {
                                    let start = Instant::now();
                                    while !flag.load(Ordering::Acquire) {
                                        assert!(start.elapsed().as_secs() < 30, "no steal");
                                        std::thread::yield_now();
                                    }
                                }
                            });
                            reports.push(rep);
                            tc.restore();
                        }
                        reports
                    })
                })
                .collect();
            let all: Vec<Vec<IterationReport>> =
                handles.into_iter().map(|h| h.join().unwrap()).collect();
            let reps = &all[0];
            for (it, rep) in reps.iter().enumerate() {
                assert_eq!(rep.tasks(), size, "{ranks} ranks, iteration {it}");
            }
            // The thieves stole spawned subtrees in iteration 0 and kept them as their phases.
            let thieves = &reps[0].ranks[1..];
            assert!(
                thieves.iter().map(|r| r.phases).sum::<u64>() > 0,
                "{thieves:?}"
            );
            assert!(thieves.iter().map(|r| r.steals_successful).sum::<u64>() > 0);
        }
    }

    /// A rank whose task panics makes every other rank stop with an error, never wait forever.
    #[test]
    fn a_panicking_rank_stops_the_others() {
        let handles: Vec<_> = Cluster::ranks::<u32>(3, 16)
            .into_iter()
            .map(|rank| {
                std::thread::spawn(move || {
                    let me = rank.index();
                    let mut tc = TaskCollection::new(rank, Strategy::Steal);
                    for t in 0..5 {
                        tc.push(t + 10 * me as u32);
                    }
                    tc.process(|t, _| {
                        if t == 21 {
                            panic!("task 21 fails");
                        }
                    })
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        assert!(results.iter().all(|r| r.is_err()), "every rank must stop");
        let msg = |r: &std::thread::Result<IterationReport>| {
            let e = r.as_ref().unwrap_err();
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        };
        assert!(results.iter().any(|r| msg(r).contains("task 21 fails")));
        assert!(results.iter().any(|r| msg(r).contains("failed")));
    }

    #[test]
    fn strategies_parse_and_name_themselves() {
        for s in Strategy::ALL {
            assert_eq!(s.name().parse::<Strategy>(), Ok(s));
        }
        assert!("steal-some"
            .parse::<Strategy>()
            .unwrap_err()
            .contains("expected no-balance"));
    }

    /// Drives the balancers' reseeding (estimates, then placement) for `iterations` with
    /// measurements of the true `cost` distorted by `noise`; returns the tasks moved in each
    /// iteration and the true imbalance (max / avg − 1) after each.
    fn balance_noisily(
        strategy: Strategy,
        params: Params,
        start: Vec<Vec<Entry<u32>>>,
        cost: impl Fn(u32) -> f64,
        mut noise: impl FnMut(usize) -> f64,
        iterations: usize,
    ) -> Vec<(usize, f64)> {
        let mut estimates = Estimates::default();
        let mut now = start;
        let mut out = Vec::new();
        for _ in 0..iterations {
            let mut all: Vec<Vec<(Entry<u32>, u64)>> = now
                .iter()
                .enumerate()
                .map(|(r, ts)| {
                    ts.iter()
                        .map(|e| (*e, (cost(e.task) * noise(r)).round() as u64))
                        .collect()
                })
                .collect();
            estimate(&mut estimates, params.memory, &mut all, |e| e.key);
            let next = placement(strategy, params, &all);
            let rank_of = |placed: &[Vec<Entry<u32>>], t: u32| {
                placed.iter().position(|ts| ts.iter().any(|e| e.task == t))
            };
            let moved = (0..now.iter().map(Vec::len).sum::<usize>() as u32)
                .filter(|&t| rank_of(&now, t) != rank_of(&next, t))
                .count();
            let loads: Vec<f64> = next
                .iter()
                .map(|ts| ts.iter().map(|e| cost(e.task)).sum())
                .collect();
            let avg = loads.iter().sum::<f64>() / loads.len() as f64;
            out.push((moved, loads.iter().cloned().fold(0.0, f64::max) / avg - 1.0));
            now = next;
        }
        out
    }

    /// Measurement noise: each measurement off by up to 30% either way, one in fifty three
    /// times too long; the same sequence each time it is made.
    fn noisy() -> impl FnMut(usize) -> f64 {
        let mut rng = crate::test_rng::Rng(7);
        move |_| {
            let j = 0.7 + 0.6 * (rng.next() % 1000) as f64 / 1000.0;
            if rng.next().is_multiple_of(50) {
                3.0 * j
            } else {
                j
            }
        }
    }

    #[test]
    fn noisy_measurements_move_few_tasks_and_keep_the_balance() {
        let (ranks, tasks) = (4usize, 400u32);
        // Costs from 1 to 100, heavy ones every seventh task.
        let cost = |t: u32| {
            if t.is_multiple_of(7) {
                100.0
            } else {
                1.0 + f64::from(t % 13)
            }
        };
        let entry = |t: u32| Entry {
            task: t,
            key: u64::from(t) * 0x9e37_79b9 + 1,
            root: true,
            spawned: false,
        };
        // Skewed to begin with: rank 0 holds every heavy task.
        let mut start = vec![Vec::new(); ranks];
        for t in 0..tasks {
            let r = if t.is_multiple_of(7) {
                0
            } else {
                1 + t as usize % (ranks - 1)
            };
            start[r].push(entry(t));
        }
        for strategy in [Strategy::PlbCentralized, Strategy::PlbHierarchical] {
            // A rank descheduled mid-task, among other noise (see `noisy`).
            let noise = noisy();
            let steps =
                balance_noisily(strategy, Params::default(), start.clone(), cost, noise, 12);
            let name = strategy.name();
            // The first placement fixes the skew...
            assert!(steps[0].0 > 0 && steps[0].1 < 0.15, "{name}: {steps:?}");
            // ...then the estimates settle: from the third iteration on at most one placement
            // moves tasks (the one the averaged estimates show is still worth it), and the
            // last six move none; the true balance stays within 15% throughout.
            let later: Vec<usize> = steps.iter().skip(2).map(|s| s.0).collect();
            assert!(
                later.iter().filter(|&&m| m > 0).count() <= 1,
                "{name}: {steps:?}"
            );
            assert!(
                later.iter().rev().take(6).all(|&m| m == 0),
                "{name}: {steps:?}"
            );
            assert!(steps.iter().all(|s| s.1 < 0.15), "{name}: {steps:?}");
            // The same measurements with neither the estimates' memory nor the gain threshold.
            let noise = noisy();
            let thesis = Params {
                min_gain: 0.0,
                memory: 0.0,
                ..Params::default()
            };
            let raw = balance_noisily(strategy, thesis, start.clone(), cost, noise, 12);
            let churn = |s: &[(usize, f64)]| s.iter().skip(2).map(|x| x.0).sum::<usize>();
            assert!(
                churn(&raw) > 2 * churn(&steps).max(1),
                "{name}: {raw:?} vs {steps:?}"
            );
        }
    }
}
