//! The schedule file: magpie's container (`container.rs`: magic, version, length, LEB128 body,
//! FNV-1a checksum) with [`MAGIC`] and [`FORMAT_VERSION`].
//!
//! Body: worker count, root worker, the note (length and UTF-8 bytes), cut count, then per cut
//! its worker, rank, path length and path. Paths come sorted, so each is stored as the length of the prefix it shares with the
//! previous one and the rest. Reading checks the container, bounds every count by the bytes
//! left, and checks the decoded schedule as [`Schedule::new`] does, so a damaged, truncated or
//! foreign file, or one of another version, is an error, never a panic or a huge allocation.

use super::{Cut, Schedule};
use crate::container::{self, put, FrameError, Reader};
use std::fmt;
use std::io::{Read, Write};

/// The first bytes of every schedule file.
pub const MAGIC: &[u8; 8] = b"MGPSCHED";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 2;

/// Why a schedule could not be read, written or built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The file does not start with [`MAGIC`].
    NotASchedule,
    /// The file has another format version.
    Version {
        /// The version in the file.
        found: u32,
    },
    /// The file ends early.
    Truncated,
    /// The checksum does not match, or a value is out of range.
    Corrupt(String),
    /// The schedule's parts contradict each other (see [`Schedule::new`]).
    Invalid(String),
    /// Reading or writing failed.
    Io(String),
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::NotASchedule => write!(
                f,
                "not a magpie schedule (the file does not start with MGPSCHED)"
            ),
            ScheduleError::Version { found } => write!(
                f,
                "schedule format version {found}, but this magpie reads version {FORMAT_VERSION}"
            ),
            ScheduleError::Truncated => write!(f, "the schedule file is truncated"),
            ScheduleError::Corrupt(why) => write!(f, "the schedule file is corrupted: {why}"),
            ScheduleError::Invalid(why) => write!(f, "not a valid schedule: {why}"),
            ScheduleError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ScheduleError {}

impl From<FrameError> for ScheduleError {
    fn from(e: FrameError) -> ScheduleError {
        match e {
            FrameError::Foreign => ScheduleError::NotASchedule,
            FrameError::Version(found) => ScheduleError::Version { found },
            FrameError::Truncated => ScheduleError::Truncated,
            FrameError::Corrupt(why) => ScheduleError::Corrupt(why),
        }
    }
}

impl Schedule {
    /// Encodes the schedule in the file format.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = container::begin(MAGIC, FORMAT_VERSION);
        put(&mut out, self.workers as u64);
        put(&mut out, self.root as u64);
        put(&mut out, self.note.len() as u64);
        out.extend_from_slice(self.note.as_bytes());
        put(&mut out, self.cuts.len() as u64);
        let mut prev: &[u32] = &[];
        for c in &self.cuts {
            let shared = prev.iter().zip(&c.path).take_while(|(a, b)| a == b).count();
            put(&mut out, c.worker as u64);
            put(&mut out, c.rank as u64);
            put(&mut out, shared as u64);
            put(&mut out, (c.path.len() - shared) as u64);
            for &i in &c.path[shared..] {
                put(&mut out, i as u64);
            }
            prev = &c.path;
        }
        container::finish(out)
    }

    /// Writes the schedule file.
    pub fn write_to(&self, w: &mut impl Write) -> Result<(), ScheduleError> {
        w.write_all(&self.to_bytes())
            .map_err(|e| ScheduleError::Io(format!("cannot write the schedule: {e}")))
    }

    /// Reads a schedule file.
    pub fn read_from(r: &mut impl Read) -> Result<Schedule, ScheduleError> {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes)
            .map_err(|e| ScheduleError::Io(format!("cannot read the schedule: {e}")))?;
        Schedule::from_bytes(&bytes)
    }

    /// Decodes the file format, checking everything (see the module doc).
    pub fn from_bytes(bytes: &[u8]) -> Result<Schedule, ScheduleError> {
        let mut r = container::open(bytes, MAGIC, FORMAT_VERSION)?;
        let s = read(&mut r)?;
        if !r.at_end() {
            return Err(ScheduleError::Corrupt("bytes after the last cut".into()));
        }
        Ok(s)
    }
}

fn read(r: &mut Reader) -> Result<Schedule, ScheduleError> {
    let workers = r.u32("worker count")? as usize;
    let root = r.u32("root worker")? as usize;
    let len = r.count("note byte", 1)?;
    let mut note = Vec::with_capacity(len);
    for _ in 0..len {
        note.push(r.byte()?);
    }
    let note = String::from_utf8(note)
        .map_err(|_| ScheduleError::Corrupt("the note is not UTF-8".into()))?;
    let n = r.count("cut", 4)?;
    let mut cuts = Vec::with_capacity(n);
    let mut prev: Vec<u32> = Vec::new();
    for _ in 0..n {
        let worker = r.u32("worker")?;
        let rank = r.u32("rank")?;
        let shared = r.var()?;
        if shared > prev.len() as u64 {
            return Err(ScheduleError::Corrupt(format!(
                "a path shares {shared} indices with a previous path of {}",
                prev.len()
            )));
        }
        let more = r.count("path index", 1)?;
        let mut path = prev[..shared as usize].to_vec();
        for _ in 0..more {
            path.push(r.u32("path index")?);
        }
        if path <= prev {
            return Err(ScheduleError::Corrupt("cut paths are not in order".into()));
        }
        prev.clone_from(&path);
        cuts.push(Cut { path, worker, rank });
    }
    Ok(Schedule::new(workers, root, cuts)?.with_note(note))
}
