//! The trace file: magpie's container (`container.rs`: magic, version, length, LEB128 body, FNV-1a
//! checksum) with `MAGIC` and `FORMAT_VERSION`.
//!
//! Body: policy (0 work-first, 1 help-first, 2 adaptive), duration, spawns, worker count; then one
//! section per worker: its byte length, its phases (origin, start as a delta from the previous
//! phase's start) and its segments (phase, start as a delta from the previous segment's end,
//! length). Reading checks the magic, the version, the checksum, every length against the bytes
//! left, and every reference (a phase named by an origin or a segment must exist; segments must be
//! in time order and must not overlap), so a truncated, corrupted or foreign file is an error,
//! never a panic or a huge allocation.

use super::{EventId, Origin, Phase, PhaseId, Segment, Taken, Trace};
use crate::container::{self, put, FrameError, Reader};
use crate::policy::Policy;
use std::fmt;
use std::io::{Read, Write};

/// The first bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"MGPTRACE";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 2;

/// Why a trace file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceError {
    /// The file does not start with [`MAGIC`].
    NotATrace,
    /// The file has another format version.
    Version {
        /// The version in the file.
        found: u32,
    },
    /// The file ends early.
    Truncated,
    /// The checksum does not match, or a value is out of range.
    Corrupt(String),
    /// Reading or writing failed.
    Io(String),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::NotATrace => write!(
                f,
                "not a magpie trace (the file does not start with MGPTRACE)"
            ),
            TraceError::Version { found } => write!(
                f,
                "trace format version {found}, but this magpie reads version {FORMAT_VERSION}"
            ),
            TraceError::Truncated => write!(f, "the trace file is truncated"),
            TraceError::Corrupt(why) => write!(f, "the trace file is corrupted: {why}"),
            TraceError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TraceError {}

impl From<FrameError> for TraceError {
    fn from(e: FrameError) -> TraceError {
        match e {
            FrameError::Foreign => TraceError::NotATrace,
            FrameError::Version(found) => TraceError::Version { found },
            FrameError::Truncated => TraceError::Truncated,
            FrameError::Corrupt(why) => TraceError::Corrupt(why),
        }
    }
}

fn policy_code(p: Policy) -> u64 {
    match p {
        Policy::WorkFirst => 0,
        Policy::HelpFirst => 1,
        Policy::Adaptive => 2,
    }
}

fn put_event(out: &mut Vec<u8>, e: EventId) {
    put(out, e.phase.worker as u64);
    put(out, e.phase.index as u64);
    put(out, e.seq << 1 | (e.half & 1) as u64);
}

/// Encodes one worker's section; returns its bytes and how many of them are timestamps.
fn section(phases: &[Phase], segments: &[Segment]) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    let mut ts = 0u64;
    put(&mut out, phases.len() as u64);
    let mut prev = 0u64;
    for p in phases {
        match p.origin {
            Origin::Root { ordinal } => {
                out.push(0);
                put(&mut out, ordinal);
            }
            Origin::External => out.push(1),
            Origin::Stolen { from, taken, level } => {
                out.push(match taken {
                    Taken::Child => 2,
                    Taken::Continuation => 3,
                });
                put_event(&mut out, from);
                put(&mut out, level as u64);
            }
            Origin::Resumed { sync } => {
                out.push(4);
                put_event(&mut out, sync);
            }
            Origin::Early { from } => {
                out.push(5);
                put_event(&mut out, from);
            }
        }
        let n = out.len();
        put(&mut out, p.start_ns.wrapping_sub(prev));
        ts += (out.len() - n) as u64;
        prev = p.start_ns;
    }
    put(&mut out, segments.len() as u64);
    let mut prev_end = 0u64;
    for s in segments {
        put(&mut out, s.phase as u64);
        let n = out.len();
        put(&mut out, s.start_ns.saturating_sub(prev_end));
        put(&mut out, s.end_ns - s.start_ns);
        ts += (out.len() - n) as u64;
        prev_end = s.end_ns;
    }
    (out, ts)
}

/// (section bytes, timestamp bytes) per worker.
pub(super) fn section_sizes(t: &Trace) -> Vec<(u64, u64)> {
    t.phases
        .iter()
        .zip(&t.segments)
        .map(|(p, s)| {
            let (b, ts) = section(p, s);
            (b.len() as u64, ts)
        })
        .collect()
}

impl Trace {
    /// Encodes the trace in the file format.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = container::begin(MAGIC, FORMAT_VERSION);
        put(&mut out, policy_code(self.policy));
        put(&mut out, self.duration_ns);
        put(&mut out, self.spawns);
        put(&mut out, self.phases.len() as u64);
        for (p, s) in self.phases.iter().zip(&self.segments) {
            let (b, _) = section(p, s);
            put(&mut out, b.len() as u64);
            out.extend_from_slice(&b);
        }
        put(&mut out, self.schedules.len() as u64);
        for sc in &self.schedules {
            let b = sc.to_bytes();
            put(&mut out, b.len() as u64);
            out.extend_from_slice(&b);
        }
        container::finish(out)
    }

    /// Writes the trace file.
    pub fn write_to(&self, w: &mut impl Write) -> Result<(), TraceError> {
        w.write_all(&self.to_bytes())
            .map_err(|e| TraceError::Io(format!("cannot write the trace: {e}")))
    }

    /// Reads a trace file.
    pub fn read_from(r: &mut impl Read) -> Result<Trace, TraceError> {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes)
            .map_err(|e| TraceError::Io(format!("cannot read the trace: {e}")))?;
        Trace::from_bytes(&bytes)
    }

    /// Decodes the file format, checking everything (see the module doc).
    pub fn from_bytes(bytes: &[u8]) -> Result<Trace, TraceError> {
        let mut r = container::open(bytes, MAGIC, FORMAT_VERSION)?;
        let t = read_trace(&mut r)?;
        if !r.at_end() {
            return Err(TraceError::Corrupt("bytes after the last section".into()));
        }
        validate(&t)?;
        Ok(t)
    }
}

fn read_event(r: &mut Reader) -> Result<EventId, FrameError> {
    let worker = r.u32("worker")?;
    let index = r.u32("phase index")?;
    let s = r.var()?;
    Ok(EventId {
        phase: PhaseId { worker, index },
        seq: s >> 1,
        half: (s & 1) as u8,
    })
}

fn read_trace(r: &mut Reader) -> Result<Trace, TraceError> {
    let policy = match r.var()? {
        0 => Policy::WorkFirst,
        1 => Policy::HelpFirst,
        2 => Policy::Adaptive,
        p => return Err(TraceError::Corrupt(format!("unknown policy code {p}"))),
    };
    let duration_ns = r.var()?;
    let spawns = r.var()?;
    let workers = r.count("worker", 3)?;
    let mut phases = Vec::with_capacity(workers);
    let mut segments = Vec::with_capacity(workers);
    for _ in 0..workers {
        let len = r.count("section byte", 1)?;
        let end = r.at + len;
        let np = r.count("phase", 2)?;
        let mut ps = Vec::with_capacity(np);
        let mut prev = 0u64;
        for _ in 0..np {
            let origin = match r.byte()? {
                0 => Origin::Root { ordinal: r.var()? },
                1 => Origin::External,
                k @ (2 | 3) => {
                    let from = read_event(r)?;
                    let level = r.u32("level")?;
                    Origin::Stolen {
                        from,
                        taken: if k == 2 {
                            Taken::Child
                        } else {
                            Taken::Continuation
                        },
                        level,
                    }
                }
                4 => Origin::Resumed {
                    sync: read_event(r)?,
                },
                5 => Origin::Early {
                    from: read_event(r)?,
                },
                k => return Err(TraceError::Corrupt(format!("unknown phase origin {k}"))),
            };
            let start_ns = prev.wrapping_add(r.var()?);
            prev = start_ns;
            ps.push(Phase { origin, start_ns });
        }
        let ns = r.count("segment", 3)?;
        let mut ss = Vec::with_capacity(ns);
        let mut prev_end = 0u64;
        for _ in 0..ns {
            let phase = r.u32("segment phase")?;
            let start_ns = prev_end
                .checked_add(r.var()?)
                .ok_or_else(|| TraceError::Corrupt("a time overflows".into()))?;
            let end_ns = start_ns
                .checked_add(r.var()?)
                .ok_or_else(|| TraceError::Corrupt("a time overflows".into()))?;
            prev_end = end_ns;
            ss.push(Segment {
                phase,
                start_ns,
                end_ns,
            });
        }
        if r.at != end {
            return Err(TraceError::Corrupt(
                "a worker's section has the wrong length".into(),
            ));
        }
        phases.push(ps);
        segments.push(ss);
    }
    let n = r.count("schedule", 8)?;
    let mut schedules = Vec::with_capacity(n);
    for i in 0..n {
        let len = r.count("schedule byte", 1)?;
        let mut b = Vec::with_capacity(len);
        for _ in 0..len {
            b.push(r.byte()?);
        }
        let sc = crate::schedule::Schedule::from_bytes(&b)
            .map_err(|e| TraceError::Corrupt(format!("the schedule of install {i}: {e}")))?;
        if sc.workers() != workers {
            return Err(TraceError::Corrupt(format!(
                "the schedule of install {i} has {} workers, the trace {workers}",
                sc.workers()
            )));
        }
        schedules.push(sc);
    }
    Ok(Trace {
        policy,
        duration_ns,
        spawns,
        phases,
        segments,
        schedules,
    })
}

/// Checks the references inside a decoded trace.
fn validate(t: &Trace) -> Result<(), TraceError> {
    let exists = |p: PhaseId| t.phase(p).is_some();
    for (w, ps) in t.phases.iter().enumerate() {
        for (i, p) in ps.iter().enumerate() {
            let named = match p.origin {
                Origin::Stolen { from, .. } | Origin::Early { from } => Some(from.phase),
                Origin::Resumed { sync } => Some(sync.phase),
                Origin::Root { .. } | Origin::External => None,
            };
            if let Some(q) = named {
                if !exists(q) {
                    return Err(TraceError::Corrupt(format!(
                        "phase {i} of worker {w} names phase {} of worker {}, which does not exist",
                        q.index, q.worker
                    )));
                }
            }
        }
        for s in &t.segments[w] {
            if s.phase as usize >= ps.len() {
                return Err(TraceError::Corrupt(format!(
                    "a segment of worker {w} names phase {}, which does not exist",
                    s.phase
                )));
            }
        }
    }
    Ok(())
}
