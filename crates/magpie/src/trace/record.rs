//! The runtime side of tracing: tags on published items and each worker's log.
//!
//! A [`Tag`] names an item's [`EventId`](super::EventId) (and the spawn's frame depth). Task
//! frames that go on a deque (`StackJob`, `HeapJob`, the install job) keep it as their first
//! field, so a thief reads it through the item's data pointer; a fiber keeps the tag of the event
//! at which it was published or suspended. Tags are written only when the pool traces, and only
//! where an item is published or a fiber suspends: a spawn that runs in place writes nothing.
//!
//! Each worker appends to its own [`Log`] behind a mutex that only it takes while the pool runs
//! (uncontended), and [`Recorder::snapshot`] takes when the trace is read.

use super::{EventId, Origin, Phase, PhaseId, Segment, Trace};
pub(crate) use crate::job::Tag;
use crate::policy::Policy;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::Mutex;
use std::cell::Cell;
use std::time::Instant;

/// What a [`Tag`]'s two words mean: `a`: 0 for no tag, `u64::MAX` for an install's root (then
/// `b` is its ordinal), otherwise `(worker + 1) << 48 | phase index << 16 | level`; `b`:
/// `seq << 1 | half`. The type is the core's (`job.rs`: the slot every published frame starts
/// with); its meaning is the trace's, here.
impl Tag {
    pub(crate) fn root(ordinal: u64) -> Tag {
        Tag {
            a: u64::MAX,
            b: ordinal,
        }
    }

    fn new(worker: usize, phase: u32, level: u32, seq: u64, half: u8) -> Tag {
        Tag {
            a: (worker as u64 + 1) << 48 | (phase as u64) << 16 | level.min(0xffff) as u64,
            b: seq << 1 | half as u64,
        }
    }

    /// The same event's other published item (the second half of a deep join).
    pub(crate) fn second(self) -> Tag {
        if self.a == 0 || self.a == u64::MAX {
            return self;
        }
        Tag {
            a: self.a,
            b: self.b | 1,
        }
    }

    pub(crate) fn root_ordinal(self) -> Option<u64> {
        (self.a == u64::MAX).then_some(self.b)
    }

    fn worker(self) -> Option<usize> {
        (self.a != 0 && self.a != u64::MAX).then(|| (self.a >> 48) as usize - 1)
    }

    fn phase_index(self) -> u32 {
        (self.a >> 16) as u32
    }

    pub(crate) fn level(self) -> u32 {
        (self.a & 0xffff) as u32
    }

    /// The event this tag names, if it names one.
    pub(crate) fn event(self) -> Option<EventId> {
        Some(EventId {
            phase: PhaseId {
                worker: self.worker()? as u32,
                index: self.phase_index(),
            },
            seq: self.b >> 1,
            half: (self.b & 1) as u8,
        })
    }
}

/// One worker's records.
#[derive(Default)]
pub(crate) struct Log {
    phases: Vec<Phase>,
    /// Events each phase has run, saved when the worker leaves it.
    events: Vec<u64>,
    segments: Vec<Segment>,
    /// The segment being run: (phase, start).
    open: Option<(u32, u64)>,
}

/// A pool's tracing state.
pub(crate) struct Recorder {
    epoch: Instant,
    logs: Vec<crate::sync::CachePadded<Mutex<Log>>>,
    installs: AtomicU64,
}

impl Recorder {
    pub(crate) fn new(workers: usize) -> Recorder {
        Recorder {
            epoch: Instant::now(),
            logs: (0..workers).map(|_| Default::default()).collect(),
            installs: AtomicU64::new(0),
        }
    }

    /// The tag of the next install from outside the pool.
    pub(crate) fn next_root(&self) -> Tag {
        // Relaxed: only a unique number is needed, which the RMW gives.
        Tag::root(self.installs.fetch_add(1, Ordering::Relaxed))
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The trace so far; a segment still running ends now.
    pub(crate) fn snapshot(
        &self,
        policy: Policy,
        spawns: u64,
        schedules: Vec<crate::schedule::Schedule>,
    ) -> Trace {
        let now = self.now();
        let mut phases = Vec::new();
        let mut segments = Vec::new();
        for l in &self.logs {
            let l = crate::sync::lock(l);
            phases.push(l.phases.clone());
            let mut s = l.segments.clone();
            if let Some((phase, start)) = l.open {
                s.push(Segment {
                    phase,
                    start_ns: start,
                    end_ns: now.max(start),
                });
            }
            segments.push(s);
        }
        Trace {
            policy,
            duration_ns: now,
            spawns,
            phases,
            segments,
            schedules,
        }
    }
}

/// A worker's place in its log: the phase it runs and where that phase's event count starts.
pub(crate) struct LogCursor {
    /// The phase being run (`u32::MAX` before the first).
    cur: Cell<u32>,
    /// The worker's event count when the current phase's count was 0.
    base: Cell<u64>,
    /// Whether a segment is open.
    open: Cell<bool>,
}

impl LogCursor {
    pub(crate) fn new() -> LogCursor {
        LogCursor {
            cur: Cell::new(u32::MAX),
            base: Cell::new(0),
            open: Cell::new(false),
        }
    }

    /// The tag of an event about to run, at frame depth `level`, given the worker's event count.
    #[inline]
    pub(crate) fn tag(&self, worker: usize, count: u64, level: u32) -> Tag {
        let cur = self.cur.get();
        if cur == u32::MAX {
            return Tag::NONE;
        }
        Tag::new(worker, cur, level, count - self.base.get(), 0)
    }

    /// Whether `tag` names a phase of this worker, and which.
    #[inline]
    pub(crate) fn own_phase(&self, worker: usize, tag: Tag) -> Option<u32> {
        (tag.worker() == Some(worker)).then(|| tag.phase_index())
    }

    /// Starts a new phase with `origin`.
    pub(crate) fn begin(&self, rec: &Recorder, worker: usize, count: u64, origin: Origin) {
        let now = rec.now();
        let mut l = crate::sync::lock(&rec.logs[worker]);
        self.close(&mut l, count, now);
        let idx = l.phases.len() as u32;
        l.phases.push(Phase {
            origin,
            start_ns: now,
        });
        l.events.push(0);
        l.open = Some((idx, now));
        self.cur.set(idx);
        self.base.set(count);
        self.open.set(true);
    }

    /// Goes back to running phase `idx` of this worker (it popped an item that phase published).
    #[inline]
    pub(crate) fn switch_to(&self, rec: &Recorder, worker: usize, count: u64, idx: u32) {
        if idx == self.cur.get() && self.open.get() {
            return;
        }
        self.switch_slow(rec, worker, count, idx);
    }

    #[cold]
    fn switch_slow(&self, rec: &Recorder, worker: usize, count: u64, idx: u32) {
        let now = rec.now();
        let mut l = crate::sync::lock(&rec.logs[worker]);
        if idx as usize >= l.phases.len() {
            return;
        }
        self.close(&mut l, count, now);
        l.open = Some((idx, now));
        self.base.set(count - l.events[idx as usize]);
        self.cur.set(idx);
        self.open.set(true);
    }

    /// The worker found nothing of its own: the current segment ends.
    #[inline]
    pub(crate) fn idle(&self, rec: &Recorder, worker: usize, count: u64) {
        if self.open.get() {
            let now = rec.now();
            let mut l = crate::sync::lock(&rec.logs[worker]);
            self.close(&mut l, count, now);
        }
    }

    fn close(&self, l: &mut Log, count: u64, now: u64) {
        let cur = self.cur.get();
        if cur != u32::MAX {
            l.events[cur as usize] = count - self.base.get();
        }
        if let Some((phase, start)) = l.open.take() {
            l.segments.push(Segment {
                phase,
                start_ns: start,
                end_ns: now.max(start),
            });
        }
        self.open.set(false);
    }
}
