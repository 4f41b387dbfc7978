//! The binary container of magpie's files (traces, schedules): eight bytes of magic, a
//! little-endian `u32` format version, the file's total length as a little-endian `u64`, a body
//! of LEB128 varints, and a trailing little-endian `u64` FNV-1a checksum of everything before it.
//!
//! [`open`] checks the magic, the version, the declared length and the checksum before anything
//! in the body is read, and [`Reader`] bounds every count by the bytes left, so a truncated,
//! corrupted or foreign file is an error, never a panic or a huge allocation. Each file kind
//! turns a [`FrameError`] into its own error type.

/// Magic, version and total length.
const HEADER: usize = 20;

/// Why a file could not be opened or its body read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// The file does not start with the expected magic.
    Foreign,
    /// The file has another format version.
    Version(u32),
    /// The file ends early.
    Truncated,
    /// The checksum does not match, or a value is out of range.
    Corrupt(String),
}

/// Appends `v` as an LEB128 varint.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
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

/// A new file: its header, with the length to be filled in by [`finish`].
pub(crate) fn begin(magic: &[u8; 8], version: u32) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out
}

/// Fills in the length and appends the checksum.
pub(crate) fn finish(mut out: Vec<u8>) -> Vec<u8> {
    let total = (out.len() + 8) as u64;
    out[12..HEADER].copy_from_slice(&total.to_le_bytes());
    let h = fnv(&out);
    out.extend_from_slice(&h.to_le_bytes());
    out
}

/// Checks the container and returns a reader over its body.
pub(crate) fn open<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    version: u32,
) -> Result<Reader<'a>, FrameError> {
    if bytes.len() < magic.len() || &bytes[..magic.len()] != magic {
        // A prefix of the magic is a truncated file, not a foreign one.
        if !bytes.is_empty() && magic.starts_with(bytes) {
            return Err(FrameError::Truncated);
        }
        return Err(FrameError::Foreign);
    }
    if bytes.len() < 12 {
        return Err(FrameError::Truncated);
    }
    let found = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if found != version {
        return Err(FrameError::Version(found));
    }
    if bytes.len() < HEADER + 8 {
        return Err(FrameError::Truncated);
    }
    let total = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    if (bytes.len() as u64) < total {
        return Err(FrameError::Truncated);
    }
    if bytes.len() as u64 > total {
        return Err(FrameError::Corrupt(format!(
            "{} bytes after the end the header declares",
            bytes.len() as u64 - total
        )));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if fnv(body) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
        return Err(FrameError::Corrupt("checksum mismatch".into()));
    }
    Ok(Reader {
        b: &body[HEADER..],
        at: 0,
    })
}

/// Reads a checked body. The declared length and the checksum held, so a read past the end is
/// a bad count inside the body: reported as corruption.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    pub(crate) at: usize,
}

impl Reader<'_> {
    pub(crate) fn byte(&mut self) -> Result<u8, FrameError> {
        let b = *self
            .b
            .get(self.at)
            .ok_or_else(|| FrameError::Corrupt("a count runs past the end".into()))?;
        self.at += 1;
        Ok(b)
    }

    pub(crate) fn var(&mut self) -> Result<u64, FrameError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = (b & 0x7f) as u64;
            if shift == 63 && part > 1 {
                break;
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(FrameError::Corrupt(
            "a number does not fit in 64 bits".into(),
        ))
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, FrameError> {
        let v = self.var()?;
        u32::try_from(v).map_err(|_| FrameError::Corrupt(format!("{what} {v} is out of range")))
    }

    /// A count of items each taking at least `min` bytes: bounded by what is left.
    pub(crate) fn count(&mut self, what: &str, min: usize) -> Result<usize, FrameError> {
        let n = self.var()?;
        let left = (self.b.len() - self.at) / min.max(1);
        if n > left as u64 {
            return Err(FrameError::Corrupt(format!(
                "{what} count {n} exceeds what the file holds"
            )));
        }
        Ok(n as usize)
    }

    /// Whether the whole body was read.
    pub(crate) fn at_end(&self) -> bool {
        self.at == self.b.len()
    }
}
