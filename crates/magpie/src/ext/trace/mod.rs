//! Steal trees: tracing a pool's schedule at the cost of its steals, not of its tasks.
//!
//! Lifflander's thesis (Ch. 4, "Tracing Work Stealing Schedulers") observes that a work-stealing
//! schedule is fully described by its *working phases*: each worker runs, from one stolen
//! continuation, every step reachable from it except what thieves took, in an order the policy
//! fixes. So it suffices to record, per phase, where its first continuation came from and which
//! of its continuations were stolen, and each steal needs only the level and step of what was
//! taken (Theorems 4.2.8 for help-first, 4.3.3 for work-first). The records are written on the
//! steal path only; a spawn pays nothing beyond counters the worker keeps anyway.
//!
//! magpie adapts the encoding to its own deque (lazy publication, steal-half batches, fibers
//! resumed by their home worker once the last child finished), so the lemmas that let the thesis drop the
//! *path* of a stolen continuation do not hold as stated. Instead every published item carries an
//! [`EventId`]: the phase that published it and the index of its spawn among the *events* (spawns
//! and scope openings) that phase had run, which the worker reads from its spawn counters only
//! when it publishes. A thief records the `EventId` of what it took; a fiber that waited at a sync
//! point and is resumed records the `EventId` of that sync point. The runtime's tests replay a
//! program's structure against these records and recover which worker ran every step
//! (`tests/support/program.rs`).
//!
//! A [`Phase`] here is one working phase: created by a steal, a resumption, or the root of an
//! `install`; a worker can hold several at once (a suspended task's phase goes on when its worker
//! pops the items that phase published), so the time a worker spends in each is recorded as
//! [`Segment`]s, which never overlap on one worker.
//!
//! The trace file ([`Trace::write_to`], [`Trace::read_from`]) is a compact binary format with a
//! versioned header and a checksum; see `file.rs`.

mod file;
#[cfg(not(loom))]
pub(crate) mod hooks;
#[cfg(not(loom))]
pub(crate) mod record;

pub use file::{TraceError, FORMAT_VERSION, MAGIC};

use crate::policy::Policy;
use std::collections::HashMap;

/// A working phase: worker and its index among that worker's phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhaseId {
    /// The worker that ran the phase.
    pub worker: u32,
    /// The phase's index in that worker's list.
    pub index: u32,
}

/// An event of a phase: the `seq`-th spawn or scope opening it ran (counting from 0), and which
/// of the items that event published (`half`: 0, or 1 for the second half of a join whose two
/// halves were both published because the stack bound was reached).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventId {
    /// The phase that ran the event.
    pub phase: PhaseId,
    /// The event's index among the phase's events.
    pub seq: u64,
    /// Which published item of the event (0 or 1).
    pub half: u8,
}

/// What a thief took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// A spawned child (a help-first spawn, or the first half of a help-first join).
    Child,
    /// A continuation: the second half of a work-first join, or a work-first parent's fiber.
    Continuation,
}

/// How a working phase began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The body of the `ordinal`-th [`Pool::install`](crate::Pool::install) from outside the
    /// pool (counting from 0), taken from the pool's queue.
    Root {
        /// Which install.
        ordinal: u64,
    },
    /// Work queued from outside the pool that is not an install's body (a task spawned into a
    /// scope by a plain thread).
    External,
    /// A steal: the item published at `from` (taken directly from the victim, or as part of a
    /// batch the victim handed over). `level` is the frame depth of the spawn in the victim.
    Stolen {
        /// The event that published the item.
        from: EventId,
        /// A child or a continuation.
        taken: Taken,
        /// Frame depth of the spawn in the victim's fiber.
        level: u32,
    },
    /// A task that waited at a sync point (identified by the event that opened its scope or
    /// published its join half) resumed here after its children finished.
    Resumed {
        /// The sync point.
        sync: EventId,
    },
    /// A work-first parent's continuation that its own worker resumed while the child it had
    /// spawned was suspended: a steal from itself, out of the sequential order.
    Early {
        /// The spawn whose continuation it is.
        from: EventId,
    },
}

/// One working phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// How it began.
    pub origin: Origin,
    /// When it began, in nanoseconds since the pool started.
    pub start_ns: u64,
}

/// A stretch of time a worker spent running one of its phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Index of the phase in the worker's list.
    pub phase: u32,
    /// Start, in nanoseconds since the pool started.
    pub start_ns: u64,
    /// End, in nanoseconds since the pool started (`>= start_ns`).
    pub end_ns: u64,
}

/// A recorded schedule: every worker's working phases and the time it spent in each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The pool's policy.
    pub policy: Policy,
    /// Nanoseconds from the pool's start to when the trace was taken.
    pub duration_ns: u64,
    /// Spawns the pool made while tracing (tasks, less the roots), for the storage comparison.
    pub spawns: u64,
    /// Per worker, its phases in the order it began them.
    pub phases: Vec<Vec<Phase>>,
    /// Per worker, its segments in time order.
    pub segments: Vec<Vec<Segment>>,
    /// When the pool named its cuts ([`Builder::trace_cuts`](crate::Builder::trace_cuts)), the
    /// schedule each `install` from a thread that is no pool's worker took, in install order (see
    /// [`Schedule::from_trace`](crate::schedule::Schedule::from_trace)); empty otherwise.
    pub schedules: Vec<crate::schedule::Schedule>,
}

/// What a trace costs to keep, per worker, against the thesis's formulas (§4.4.3) and against
/// storing the worker of every task.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// Bytes of each worker's section of the trace file.
    pub file_bytes: Vec<u64>,
    /// Of those, bytes spent on timestamps (phase starts and segments).
    pub timestamp_bytes: Vec<u64>,
    /// The thesis's b_w for each worker's phases (work-first: v(1+s) + s·m per phase, 4-byte
    /// identifiers), without timestamps.
    pub b_w: Vec<u64>,
    /// The thesis's b_h (help-first: v(1+s) + s·(m+k) per phase).
    pub b_h: Vec<u64>,
    /// Bytes to store the worker of every task (4 per task), per worker (the total split evenly).
    pub enumeration_per_worker: f64,
}

impl Trace {
    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.phases.len()
    }

    /// The phase with this id, if the trace has it.
    pub fn phase(&self, id: PhaseId) -> Option<&Phase> {
        self.phases.get(id.worker as usize)?.get(id.index as usize)
    }

    /// Every steal (origin `Stolen`) as (victim phase, thief phase), in the thieves' time order.
    pub fn steals(&self) -> Vec<(PhaseId, PhaseId)> {
        let mut v: Vec<(u64, PhaseId, PhaseId)> = Vec::new();
        for (w, ps) in self.phases.iter().enumerate() {
            for (i, p) in ps.iter().enumerate() {
                if let Origin::Stolen { from, .. } = p.origin {
                    let thief = PhaseId {
                        worker: w as u32,
                        index: i as u32,
                    };
                    v.push((p.start_ns, from.phase, thief));
                }
            }
        }
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|(_, a, b)| (a, b)).collect()
    }

    /// The thieves of each phase, in the order they stole from it (the thesis's `thieves` list).
    pub fn thieves(&self) -> HashMap<PhaseId, Vec<PhaseId>> {
        let mut m: HashMap<PhaseId, Vec<PhaseId>> = HashMap::new();
        for (victim, thief) in self.steals() {
            m.entry(victim).or_default().push(thief);
        }
        m
    }

    /// Number of steals recorded (items taken by another phase, batches counted per item).
    pub fn steal_count(&self) -> usize {
        self.phases
            .iter()
            .flatten()
            .filter(|p| matches!(p.origin, Origin::Stolen { .. }))
            .count()
    }

    /// Busy nanoseconds of each worker (the sum of its segments).
    pub fn busy_ns(&self) -> Vec<u64> {
        self.segments
            .iter()
            .map(|s| s.iter().map(|g| g.end_ns - g.start_ns).sum())
            .collect()
    }

    /// The storage figures for this trace.
    pub fn storage(&self) -> Storage {
        let sections = file::section_sizes(self);
        let (v, m, k) = (4u64, 4u64, 4u64);
        let mut steals_from: HashMap<PhaseId, u64> = HashMap::new();
        for (victim, _) in self.steals() {
            *steals_from.entry(victim).or_default() += 1;
        }
        let mut b_w = Vec::new();
        let mut b_h = Vec::new();
        for (w, ps) in self.phases.iter().enumerate() {
            let (mut bw, mut bh) = (0, 0);
            for i in 0..ps.len() {
                let s = steals_from
                    .get(&PhaseId {
                        worker: w as u32,
                        index: i as u32,
                    })
                    .copied()
                    .unwrap_or(0);
                bw += v * (1 + s) + s * m;
                bh += v * (1 + s) + s * (m + k);
            }
            b_w.push(bw);
            b_h.push(bh);
        }
        let tasks = self.spawns + self.root_count() as u64;
        Storage {
            file_bytes: sections.iter().map(|s| s.0).collect(),
            timestamp_bytes: sections.iter().map(|s| s.1).collect(),
            b_w,
            b_h,
            enumeration_per_worker: (tasks * 4) as f64 / self.workers().max(1) as f64,
        }
    }

    fn root_count(&self) -> usize {
        self.phases
            .iter()
            .flatten()
            .filter(|p| matches!(p.origin, Origin::Root { .. } | Origin::External))
            .count()
    }
}

/// Schedules are read from a trace here, where the trace is known: a schedule names no trace.
impl crate::schedule::Schedule {
    /// The schedules a trace names: one per [`install`](crate::Pool::install) from outside the
    /// pool, in order, when the pool was built with
    /// [`Builder::trace_cuts`](crate::Builder::trace_cuts). A trace taken without it names no
    /// cuts (its steal tree numbers spawns per working phase, not positions from a region's
    /// root), which is an error.
    pub fn from_trace(
        trace: &Trace,
    ) -> Result<Vec<crate::schedule::Schedule>, crate::schedule::ScheduleError> {
        if trace.schedules.is_empty() {
            return Err(crate::schedule::ScheduleError::Invalid(
                "the trace names no cuts (take it with Builder::trace_cuts)".into(),
            ));
        }
        Ok(trace.schedules.clone())
    }
}

impl crate::Pool {
    /// The steal tree recorded so far, if the pool traces ([`Builder::trace`]). Exact for every
    /// `install` that has returned.
    ///
    /// [`Builder::trace`]: crate::Builder::trace
    pub fn trace(&self) -> Option<Trace> {
        let reg = self.registry();
        let rec = reg
            .tracer()?
            .as_any()
            .downcast_ref::<record::Recorder>()
            .expect("a pool's tracing hook is the trace's recorder");
        let st = reg.stats();
        let schedules = reg
            .extensions
            .get::<std::sync::Arc<crate::schedule::region::Regions>>()
            .map_or_else(Vec::new, |r| r.taken());
        Some(rec.snapshot(
            reg.config.policy,
            st.spawns_work_first + st.spawns_help_first,
            schedules,
        ))
    }
}

/// Writes `pool`'s trace to `path`: the end hook of a pool built with `Builder::trace_to` or
/// `MAGPIE_TRACE`. A failure is reported on stderr (the program's own work is done and must not
/// be lost to it).
pub(crate) fn write_file(pool: &crate::Pool, path: &std::path::Path) {
    if let Some(t) = pool.trace() {
        let written = std::fs::File::create(path)
            .map_err(|e| e.to_string())
            .and_then(|mut f| t.write_to(&mut f).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("magpie: cannot write the trace to {}: {e}", path.display());
        }
    }
}
