//! The trace file: `MAGIC`, a little-endian `u32` format version, the file's total length as a
//! little-endian `u64`, a body of LEB128 varints, and a
//! trailing little-endian `u64` FNV-1a checksum of everything before it.
//!
//! Body: policy (0 work-first, 1 help-first, 2 adaptive), duration, spawns, worker count; then one
//! section per worker: its byte length, its phases (origin, start as a delta from the previous
//! phase's start) and its segments (phase, start as a delta from the previous segment's end,
//! length). Reading checks the magic, the version, the checksum, every length against the bytes
//! left, and every reference (a phase named by an origin or a segment must exist; segments must be
//! in time order and must not overlap), so a truncated, corrupted or foreign file is an error,
//! never a panic or a huge allocation.

use super::{EventId, Origin, Phase, PhaseId, Segment, Taken, Trace};
use crate::policy::Policy;
use std::fmt;
use std::io::{Read, Write};

/// The first bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"MGPTRACE";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Magic, version and total length.
const HEADER: usize = 20;

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

fn put(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
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
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        put(&mut out, policy_code(self.policy));
        put(&mut out, self.duration_ns);
        put(&mut out, self.spawns);
        put(&mut out, self.phases.len() as u64);
        for (p, s) in self.phases.iter().zip(&self.segments) {
            let (b, _) = section(p, s);
            put(&mut out, b.len() as u64);
            out.extend_from_slice(&b);
        }
        let total = (out.len() + 8) as u64;
        out[12..HEADER].copy_from_slice(&total.to_le_bytes());
        let h = fnv(&out);
        out.extend_from_slice(&h.to_le_bytes());
        out
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
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            // A prefix of the magic is a truncated trace, not a foreign file.
            if !bytes.is_empty() && MAGIC.starts_with(bytes) {
                return Err(TraceError::Truncated);
            }
            return Err(TraceError::NotATrace);
        }
        if bytes.len() < 12 {
            return Err(TraceError::Truncated);
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version != FORMAT_VERSION {
            return Err(TraceError::Version { found: version });
        }
        if bytes.len() < HEADER + 8 {
            return Err(TraceError::Truncated);
        }
        let total = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
        if (bytes.len() as u64) < total {
            return Err(TraceError::Truncated);
        }
        if bytes.len() as u64 > total {
            return Err(TraceError::Corrupt(format!(
                "{} bytes after the end the header declares",
                bytes.len() as u64 - total
            )));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        if fnv(body) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
            return Err(TraceError::Corrupt("checksum mismatch".into()));
        }
        let mut r = Reader {
            b: &body[HEADER..],
            at: 0,
        };
        let t = r.trace().map_err(|e| match e {
            // The declared length and the checksum held, so a short read is a bad count.
            TraceError::Truncated => TraceError::Corrupt("a count runs past the end".into()),
            e => e,
        })?;
        if r.at != r.b.len() {
            return Err(TraceError::Corrupt("bytes after the last section".into()));
        }
        validate(&t)?;
        Ok(t)
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, TraceError> {
        let b = *self.b.get(self.at).ok_or(TraceError::Truncated)?;
        self.at += 1;
        Ok(b)
    }
    fn var(&mut self) -> Result<u64, TraceError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = (b & 0x7f) as u64;
            if shift == 63 && part > 1 {
                return Err(TraceError::Corrupt(
                    "a number does not fit in 64 bits".into(),
                ));
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(TraceError::Corrupt(
            "a number does not fit in 64 bits".into(),
        ))
    }
    fn u32(&mut self, what: &str) -> Result<u32, TraceError> {
        let v = self.var()?;
        u32::try_from(v).map_err(|_| TraceError::Corrupt(format!("{what} {v} is out of range")))
    }
    /// A count of items each taking at least `min` bytes: bounded by what is left.
    fn count(&mut self, what: &str, min: usize) -> Result<usize, TraceError> {
        let n = self.var()?;
        let left = (self.b.len() - self.at) / min.max(1);
        if n > left as u64 {
            return Err(TraceError::Corrupt(format!(
                "{what} count {n} exceeds what the file holds"
            )));
        }
        Ok(n as usize)
    }
    fn event(&mut self) -> Result<EventId, TraceError> {
        let worker = self.u32("worker")?;
        let index = self.u32("phase index")?;
        let s = self.var()?;
        Ok(EventId {
            phase: PhaseId { worker, index },
            seq: s >> 1,
            half: (s & 1) as u8,
        })
    }
    fn trace(&mut self) -> Result<Trace, TraceError> {
        let policy = match self.var()? {
            0 => Policy::WorkFirst,
            1 => Policy::HelpFirst,
            2 => Policy::Adaptive,
            p => return Err(TraceError::Corrupt(format!("unknown policy code {p}"))),
        };
        let duration_ns = self.var()?;
        let spawns = self.var()?;
        let workers = self.count("worker", 3)?;
        let mut phases = Vec::with_capacity(workers);
        let mut segments = Vec::with_capacity(workers);
        for _ in 0..workers {
            let len = self.count("section byte", 1)?;
            let end = self.at + len;
            let np = self.count("phase", 2)?;
            let mut ps = Vec::with_capacity(np);
            let mut prev = 0u64;
            for _ in 0..np {
                let origin = match self.byte()? {
                    0 => Origin::Root {
                        ordinal: self.var()?,
                    },
                    1 => Origin::External,
                    k @ (2 | 3) => {
                        let from = self.event()?;
                        let level = self.u32("level")?;
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
                        sync: self.event()?,
                    },
                    5 => Origin::Early {
                        from: self.event()?,
                    },
                    k => return Err(TraceError::Corrupt(format!("unknown phase origin {k}"))),
                };
                let start_ns = prev.wrapping_add(self.var()?);
                prev = start_ns;
                ps.push(Phase { origin, start_ns });
            }
            let ns = self.count("segment", 3)?;
            let mut ss = Vec::with_capacity(ns);
            let mut prev_end = 0u64;
            for _ in 0..ns {
                let phase = self.u32("segment phase")?;
                let start_ns = prev_end
                    .checked_add(self.var()?)
                    .ok_or_else(|| TraceError::Corrupt("a time overflows".into()))?;
                let end_ns = start_ns
                    .checked_add(self.var()?)
                    .ok_or_else(|| TraceError::Corrupt("a time overflows".into()))?;
                prev_end = end_ns;
                ss.push(Segment {
                    phase,
                    start_ns,
                    end_ns,
                });
            }
            if self.at != end {
                return Err(TraceError::Corrupt(
                    "a worker's section has the wrong length".into(),
                ));
            }
            phases.push(ps);
            segments.push(ss);
        }
        Ok(Trace {
            policy,
            duration_ns,
            spawns,
            phases,
            segments,
        })
    }
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
