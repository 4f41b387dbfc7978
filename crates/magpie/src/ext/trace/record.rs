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
use crate::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use crate::sync::Mutex;
use std::time::Instant;

/// What a [`Tag`]'s two words mean: `a`: 0 for no tag, `u64::MAX` for an install's root (then
/// `b` is its ordinal), otherwise `(worker + 1) << 48 | phase index << 16 | level`; `b`:
/// `seq << 1 | half`. The type is the core's (`hooks.rs`: the slot every published frame starts
/// with); its meaning is the trace's, here, in a trait that only the trace's modules import.
pub(crate) trait Meaning: Copy {
    /// The same event's other published item (the second half of a deep join).
    fn second(self) -> Tag;
    /// The ordinal of the install whose root this tag names, if it names one.
    fn root_ordinal(self) -> Option<u64>;
    /// The worker that published the item, if a worker did.
    fn worker(self) -> Option<usize>;
    /// The index of the publishing worker's phase.
    fn phase_index(self) -> u32;
    /// The frame depth of the spawn.
    fn level(self) -> u32;
    /// The event this tag names, if it names one.
    fn event(self) -> Option<EventId>;
}

/// The tag of the root of install number `ordinal`.
fn root(ordinal: u64) -> Tag {
    Tag {
        a: u64::MAX,
        b: ordinal,
    }
}

/// The tag of half `half` of event `seq` of worker `worker`'s phase `phase`, at depth `level`.
fn tag_of(worker: usize, phase: u32, level: u32, seq: u64, half: u8) -> Tag {
    Tag {
        a: (worker as u64 + 1) << 48 | (phase as u64) << 16 | level.min(0xffff) as u64,
        b: seq << 1 | half as u64,
    }
}

impl Meaning for Tag {
    fn second(self) -> Tag {
        if self.a == 0 || self.a == u64::MAX {
            return self;
        }
        Tag {
            a: self.a,
            b: self.b | 1,
        }
    }

    fn root_ordinal(self) -> Option<u64> {
        (self.a == u64::MAX).then_some(self.b)
    }

    fn worker(self) -> Option<usize> {
        (self.a != 0 && self.a != u64::MAX).then(|| (self.a >> 48) as usize - 1)
    }

    fn phase_index(self) -> u32 {
        (self.a >> 16) as u32
    }

    fn level(self) -> u32 {
        (self.a & 0xffff) as u32
    }

    fn event(self) -> Option<EventId> {
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
    /// Per worker, its place in its log (written by that worker only).
    cursors: Vec<crate::sync::CachePadded<LogCursor>>,
    installs: AtomicU64,
}

impl Recorder {
    pub(crate) fn new(workers: usize) -> Recorder {
        Recorder {
            epoch: Instant::now(),
            logs: (0..workers).map(|_| Default::default()).collect(),
            cursors: (0..workers)
                .map(|_| crate::sync::CachePadded(LogCursor::new()))
                .collect(),
            installs: AtomicU64::new(0),
        }
    }

    /// Worker `w`'s place in its log; only worker `w` may use it.
    #[inline]
    pub(crate) fn cursor(&self, w: usize) -> &LogCursor {
        &self.cursors[w]
    }

    /// The tag of the next install from outside the pool.
    pub(crate) fn next_root(&self) -> Tag {
        // Relaxed: only a unique number is needed, which the RMW gives.
        root(self.installs.fetch_add(1, Ordering::Relaxed))
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
/// Kept by the recorder, one per worker, and read and written only by that worker's thread: its
/// atomics are `Relaxed` throughout (this protocol's one rule: a single thread's own state, which
/// the recorder holds only so that the worker's record names nothing of tracing; no other thread
/// reads them, so no ordering is needed).
pub(crate) struct LogCursor {
    /// The phase being run (`u32::MAX` before the first).
    cur: AtomicU32,
    /// The worker's event count when the current phase's count was 0.
    base: AtomicU64,
    /// Whether a segment is open.
    open: AtomicBool,
}

/// Shorthands for the cursor's single-thread atomics (see `LogCursor`).
fn get32(a: &AtomicU32) -> u32 {
    // Relaxed: one thread's own state (`LogCursor`).
    a.load(Ordering::Relaxed)
}
fn set32(a: &AtomicU32, v: u32) {
    // Relaxed: as in `get32`.
    a.store(v, Ordering::Relaxed)
}
fn get64(a: &AtomicU64) -> u64 {
    // Relaxed: as in `get32`.
    a.load(Ordering::Relaxed)
}
fn set64(a: &AtomicU64, v: u64) {
    // Relaxed: as in `get32`.
    a.store(v, Ordering::Relaxed)
}
fn get_b(a: &AtomicBool) -> bool {
    // Relaxed: as in `get32`.
    a.load(Ordering::Relaxed)
}
fn set_b(a: &AtomicBool, v: bool) {
    // Relaxed: as in `get32`.
    a.store(v, Ordering::Relaxed)
}

impl LogCursor {
    pub(crate) fn new() -> LogCursor {
        LogCursor {
            cur: AtomicU32::new(u32::MAX),
            base: AtomicU64::new(0),
            open: AtomicBool::new(false),
        }
    }

    /// The tag of an event about to run, at frame depth `level`, given the worker's event count.
    #[inline]
    pub(crate) fn tag(&self, worker: usize, count: u64, level: u32) -> Tag {
        let cur = get32(&self.cur);
        if cur == u32::MAX {
            return Tag::NONE;
        }
        tag_of(worker, cur, level, count - get64(&self.base), 0)
    }

    /// Whether `tag` names a phase of this worker, and which.
    #[inline]
    pub(crate) fn own_phase(&self, worker: usize, tag: Tag) -> Option<u32> {
        (tag.worker() == Some(worker)).then(|| tag.phase_index())
    }

    /// The phase this cursor's worker runs now (`u32::MAX` before its first).
    pub(crate) fn phase(&self) -> u32 {
        get32(&self.cur)
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
        set32(&self.cur, idx);
        set64(&self.base, count);
        set_b(&self.open, true);
    }

    /// Goes back to running phase `idx` of this worker (it popped an item that phase published).
    #[inline]
    pub(crate) fn switch_to(&self, rec: &Recorder, worker: usize, count: u64, idx: u32) {
        if idx == get32(&self.cur) && get_b(&self.open) {
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
        set64(&self.base, count - l.events[idx as usize]);
        set32(&self.cur, idx);
        set_b(&self.open, true);
    }

    /// The worker found nothing of its own: the current segment ends.
    #[inline]
    pub(crate) fn idle(&self, rec: &Recorder, worker: usize, count: u64) {
        if get_b(&self.open) {
            let now = rec.now();
            let mut l = crate::sync::lock(&rec.logs[worker]);
            self.close(&mut l, count, now);
        }
    }

    fn close(&self, l: &mut Log, count: u64, now: u64) {
        let cur = get32(&self.cur);
        if cur != u32::MAX {
            l.events[cur as usize] = count - get64(&self.base);
        }
        if let Some((phase, start)) = l.open.take() {
            l.segments.push(Segment {
                phase,
                start_ns: start,
                end_ns: now.max(start),
            });
        }
        set_b(&self.open, false);
    }
}
