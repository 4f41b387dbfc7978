//! The core allocation table file (DWS §3.1, Table 1; §3.4): its layout, its race-free creation,
//! the checks a file must pass before magpie maps it, and the atomic operations on the mapping.
//!
//! # Layout (version 1)
//!
//! All integers are in the machine's native byte order (the table never leaves the machine).
//!
//! ```text
//! offset 0   header, 64 bytes:
//!              0  magic          u64  "magpieCT" (the bytes of u64::from_le_bytes(*b"magpieCT"))
//!              8  version        u32  1
//!             12  header bytes   u32  64
//!             16  core slots     u32  k: the highest online CPU number + 1
//!             20  slot bytes     u32  64
//!             24  program slots  u32  64
//!             28  reserved, zero
//! offset 64  k core slots, 64 bytes each, slot c for the OS's CPU c:
//!              0  owner          u64  0 = free, else the holder's ProgramId
//!              8  heartbeat      u64  the holder's last beat, ms of CLOCK_MONOTONIC
//!             16  reserved, zero
//! then       the program slots, 64 bytes each:
//!              0  id             u64  0 = free, else a registered program's ProgramId
//!              8  heartbeat      u64  its last beat, ms of CLOCK_MONOTONIC
//!             16  reserved, zero
//! ```
//!
//! The file is exactly `64 + (k + programs) * 64` bytes. One slot per cache line keeps one
//! program's beats from slowing another's claims.
//!
//! # Creation
//!
//! No process may ever map a half-written table. The creator writes a complete table to a
//! private temporary file next to the final name (`O_CREAT|O_EXCL`, mode 0600) and then
//! `link()`s it to the final name, which either makes the complete file appear at once or fails
//! with `EEXIST` because another program was first; either way the temporary name is removed and
//! the program opens whatever table is at the final name. The file is never truncated or
//! rewritten afterwards; a reboot (tmpfs) or a person removes it.
//!
//! # The protocol
//!
//! Every change is one atomic operation on one 8-byte word of the mapping: a claim, a release,
//! a beat or a reclaim of one slot, as `slot.rs` describes them and orders them (and loom
//! checks them). A [`CoreTable::snapshot`] reads everything `Relaxed`: a display, whose words
//! are not read at one instant anyway (and whose mapping may be read-only).

use super::slot::Slot;
use super::{home_range, now_ms, ProgramId, STALE_MS, TABLE_ENV};
use std::collections::HashMap;
use std::fmt;
#[cfg(unix)]
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Range;
#[cfg(unix)]
use std::os::fd::AsRawFd;
#[cfg(unix)]
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The first 8 bytes of every core table.
pub const MAGIC: u64 = u64::from_le_bytes(*b"magpieCT");
/// The layout version this magpie reads and writes.
pub const VERSION: u32 = 1;
/// Bytes of the header.
pub const HEADER_BYTES: usize = 64;
/// Bytes of every core slot and program slot.
pub const SLOT_BYTES: usize = 64;
/// Program slots in a table magpie creates: the most programs that can register at once.
pub const PROGRAM_SLOTS: usize = 64;
/// The most core slots a valid table may have.
pub const MAX_CORE_SLOTS: usize = 1 << 16;
/// The most program slots a valid table may have.
pub const MAX_PROGRAM_SLOTS: usize = 1 << 12;

/// Why a table file was refused, or could not be opened, created or used. Each message names
/// the file, says what is wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableError {
    /// The operating system refused an operation on the file.
    Io {
        /// The table file.
        path: PathBuf,
        /// What magpie tried (`open`, `create`, `map`, ...).
        action: &'static str,
        /// The operating system's message.
        error: String,
    },
    /// The path names something other than a regular file (a directory, a link, a pipe, ...).
    NotAFile {
        /// The table file.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// The file belongs to another user.
    ForeignOwner {
        /// The table file.
        path: PathBuf,
        /// The file's owner.
        owner: u32,
        /// This process's effective user id.
        me: u32,
    },
    /// The file's mode lets the group or others read or write it.
    Permissions {
        /// The table file.
        path: PathBuf,
        /// The permission bits found.
        mode: u32,
    },
    /// The file is too short to hold a header.
    TooShort {
        /// The table file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
    },
    /// The file does not start with [`MAGIC`]: it is not a core table.
    BadMagic {
        /// The table file.
        path: PathBuf,
        /// The first 8 bytes, as a native-endian number.
        found: u64,
    },
    /// A table of another layout version.
    Version {
        /// The table file.
        path: PathBuf,
        /// The version in its header.
        found: u32,
    },
    /// A header field that no version-1 table has (header or slot size, slot counts).
    Layout {
        /// The table file.
        path: PathBuf,
        /// The field and its value.
        what: String,
    },
    /// The file's size is not what its header says.
    Size {
        /// The table file.
        path: PathBuf,
        /// Its size in bytes.
        found: u64,
        /// The size its header implies.
        expected: u64,
    },
    /// The table has a slot count other than this machine's CPU count.
    Slots {
        /// The table file.
        path: PathBuf,
        /// Core slots in the table.
        found: usize,
        /// Core slots this machine needs.
        expected: usize,
    },
    /// Every program slot is held by a live program.
    Full {
        /// The table file.
        path: PathBuf,
        /// The number of program slots.
        slots: usize,
    },
    /// `/proc` could not say who this program is.
    Proc(String),
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let remove = "remove it (magpie creates a new one)";
        match self {
            TableError::Io {
                path,
                action,
                error,
            } => write!(f, "core table {}: cannot {action} it: {error}", path.display()),
            TableError::NotAFile { path, what } => write!(
                f,
                "core table {} is {what}, not a regular file; remove it or set {TABLE_ENV} to \
                 another path",
                path.display()
            ),
            TableError::ForeignOwner { path, owner, me } => write!(
                f,
                "core table {} belongs to uid {owner}, not to this user (uid {me}); magpie shares \
                 cores only among one user's programs: have it removed, or set {TABLE_ENV} to a \
                 path of your own",
                path.display()
            ),
            TableError::Permissions { path, mode } => write!(
                f,
                "core table {} has mode {mode:04o}, so other users may read or write it; {remove} \
                 with mode 0600",
                path.display()
            ),
            TableError::TooShort { path, size } => write!(
                f,
                "core table {} is {size} bytes, shorter than its {HEADER_BYTES}-byte header \
                 (truncated, or not a core table); {remove}",
                path.display()
            ),
            TableError::BadMagic { path, .. } => write!(
                f,
                "{} is not a magpie core table (it does not begin with \"magpieCT\"); {remove}, or \
                 set {TABLE_ENV} to another path",
                path.display()
            ),
            TableError::Version { path, found } => write!(
                f,
                "core table {} has layout version {found}, this magpie reads version {VERSION}; \
                 {remove} once no magpie program of the other version runs",
                path.display()
            ),
            TableError::Layout { path, what } => write!(
                f,
                "core table {} has {what}, which no version-{VERSION} table has (corrupt); {remove}",
                path.display()
            ),
            TableError::Size {
                path,
                found,
                expected,
            } => write!(
                f,
                "core table {} is {found} bytes but its header says {expected} (truncated or \
                 corrupt); {remove}",
                path.display()
            ),
            TableError::Slots {
                path,
                found,
                expected,
            } => write!(
                f,
                "core table {} has {found} core slots but this machine needs {expected} (one per \
                 CPU number: the table was made for another machine, or when other CPUs were \
                 online); {remove} once no magpie program uses it",
                path.display()
            ),
            TableError::Full { path, slots } => write!(
                f,
                "core table {}: all {slots} program slots are held by live programs",
                path.display()
            ),
            TableError::Proc(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TableError {}

fn io_error(path: &Path, action: &'static str, e: io::Error) -> TableError {
    TableError::Io {
        path: path.to_path_buf(),
        action,
        error: e.to_string(),
    }
}

#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    magic: u64,
    version: u32,
    header_bytes: u32,
    core_slots: u32,
    slot_bytes: u32,
    program_slots: u32,
}

// Elsewhere only `file_bytes` is used: no table file is made or read there (`unsupported`).
#[cfg_attr(not(unix), allow(dead_code))]
impl Header {
    fn new(core_slots: usize) -> Header {
        Header {
            magic: MAGIC,
            version: VERSION,
            header_bytes: HEADER_BYTES as u32,
            core_slots: core_slots as u32,
            slot_bytes: SLOT_BYTES as u32,
            program_slots: PROGRAM_SLOTS as u32,
        }
    }

    fn to_bytes(self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&self.magic.to_ne_bytes());
        b[8..12].copy_from_slice(&self.version.to_ne_bytes());
        b[12..16].copy_from_slice(&self.header_bytes.to_ne_bytes());
        b[16..20].copy_from_slice(&self.core_slots.to_ne_bytes());
        b[20..24].copy_from_slice(&self.slot_bytes.to_ne_bytes());
        b[24..28].copy_from_slice(&self.program_slots.to_ne_bytes());
        b
    }

    fn from_bytes(b: &[u8; HEADER_BYTES]) -> Header {
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&b[0..8]);
        Header {
            magic: u64::from_ne_bytes(magic),
            version: u32_at(8),
            header_bytes: u32_at(12),
            core_slots: u32_at(16),
            slot_bytes: u32_at(20),
            program_slots: u32_at(24),
        }
    }

    /// The file size this header implies.
    fn file_bytes(self) -> u64 {
        self.header_bytes as u64
            + (self.core_slots as u64 + self.program_slots as u64) * self.slot_bytes as u64
    }
}

/// A `MAP_SHARED` mapping of a whole table file.
#[cfg(unix)]
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory shared with other processes; every access to it goes
// through atomic operations (`Mapping::word`), so any thread may use it.
#[cfg(unix)]
unsafe impl Send for Mapping {}
// SAFETY: as for Send.
#[cfg(unix)]
unsafe impl Sync for Mapping {}

#[cfg(unix)]
impl Mapping {
    fn new(path: &Path, file: &File, len: usize, writable: bool) -> Result<Mapping, TableError> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh mapping chosen by the kernel (no address hint), of a file descriptor
        // that is open for the duration of the call; the result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io_error(path, "map", io::Error::last_os_error()));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// The 8-byte word at `offset` as an atomic.
    fn word(&self, offset: usize) -> &AtomicU64 {
        assert!(offset.is_multiple_of(8) && offset + 8 <= self.len);
        // SAFETY:
        // - In bounds: checked above, against the length of the mapping, which is the size the
        //   validated header gives; the counts that produce offsets come from that same header,
        //   read once before mapping, never again from the shared memory.
        // - Aligned: mmap returns a page-aligned address and `offset` is a multiple of 8.
        // - Alive: the returned reference borrows `self`, and the mapping is unmapped only when
        //   `self` drops. The file behind it never shrinks while programs use it (magpie never
        //   truncates a table; only a person with this user's rights could, and the kernel
        //   would then raise SIGBUS rather than let the access read other memory).
        // - Only atomic access: every process that maps the table reaches its words through
        //   this function; the only non-atomic writes are the creator's, to a private temporary
        //   file before any other process can map it. A read-only mapping (`CoreTable::inspect`)
        //   is only ever loaded from with Relaxed loads of 8 bytes, which std guarantees do not
        //   write.
        unsafe { AtomicU64::from_ptr(self.ptr.add(offset).cast::<u64>()) }
    }
}

#[cfg(unix)]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are those mmap returned, and no reference into the mapping
        // outlives `self` (see `word`).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Opens the file at `path` without following a symbolic link and without blocking (on a pipe
/// someone put there), for reading and, if `write`, writing.
#[cfg(unix)]
fn open_file(path: &Path, write: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// The error for a failed open of an existing path: links, directories and other users' files
/// get their own messages.
#[cfg(unix)]
fn open_error(path: &Path, e: io::Error) -> TableError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => TableError::NotAFile {
            path: path.to_path_buf(),
            what: "a symbolic link",
        },
        Some(libc::EISDIR) => TableError::NotAFile {
            path: path.to_path_buf(),
            what: "a directory",
        },
        Some(libc::EACCES) | Some(libc::EPERM) => match std::fs::symlink_metadata(path) {
            Ok(m) if m.uid() != euid() => TableError::ForeignOwner {
                path: path.to_path_buf(),
                owner: m.uid(),
                me: euid(),
            },
            _ => io_error(path, "open", e),
        },
        _ => io_error(path, "open", e),
    }
}

/// Checks an open table file: a regular file of this user's, private, of this layout and
/// version, as long as its header says, with `core_slots` core slots. Never panics, whatever the
/// file holds.
#[cfg(unix)]
fn validate(path: &Path, file: &File, core_slots: usize) -> Result<Header, TableError> {
    let p = || path.to_path_buf();
    let m = file.metadata().map_err(|e| io_error(path, "stat", e))?;
    let ft = m.file_type();
    if !ft.is_file() {
        let what = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a pipe"
        } else if ft.is_socket() {
            "a socket"
        } else if ft.is_block_device() || ft.is_char_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(TableError::NotAFile { path: p(), what });
    }
    if m.uid() != euid() {
        return Err(TableError::ForeignOwner {
            path: p(),
            owner: m.uid(),
            me: euid(),
        });
    }
    let mode = m.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(TableError::Permissions { path: p(), mode });
    }
    if m.len() < HEADER_BYTES as u64 {
        return Err(TableError::TooShort {
            path: p(),
            size: m.len(),
        });
    }
    let mut b = [0u8; HEADER_BYTES];
    file.read_exact_at(&mut b, 0)
        .map_err(|e| io_error(path, "read", e))?;
    let h = Header::from_bytes(&b);
    if h.magic != MAGIC {
        return Err(TableError::BadMagic {
            path: p(),
            found: h.magic,
        });
    }
    if h.version != VERSION {
        return Err(TableError::Version {
            path: p(),
            found: h.version,
        });
    }
    let layout = |what: String| Err(TableError::Layout { path: p(), what });
    if h.header_bytes as usize != HEADER_BYTES {
        return layout(format!("a header of {} bytes", h.header_bytes));
    }
    if h.slot_bytes as usize != SLOT_BYTES {
        return layout(format!("slots of {} bytes", h.slot_bytes));
    }
    if h.core_slots == 0 || h.core_slots as usize > MAX_CORE_SLOTS {
        return layout(format!("{} core slots", h.core_slots));
    }
    if h.program_slots == 0 || h.program_slots as usize > MAX_PROGRAM_SLOTS {
        return layout(format!("{} program slots", h.program_slots));
    }
    if m.len() != h.file_bytes() {
        return Err(TableError::Size {
            path: p(),
            found: m.len(),
            expected: h.file_bytes(),
        });
    }
    if h.core_slots as usize != core_slots {
        return Err(TableError::Slots {
            path: p(),
            found: h.core_slots as usize,
            expected: core_slots,
        });
    }
    Ok(h)
}

/// Writes a complete table with `core_slots` core slots to a temporary file beside `path` and
/// links it to `path`. Returns `Ok` both when this call made the table and when another program
/// made one first (`EEXIST`): the caller opens whatever is there.
#[cfg(unix)]
fn create(path: &Path, core_slots: usize) -> Result<(), TableError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Some(name) = path.file_name() else {
        return Err(io_error(
            path,
            "create",
            io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
        ));
    };
    let mut tmp_name = name.to_os_string();
    tmp_name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        // Relaxed: only a number unique in this process is needed, which the RMW gives.
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = path.with_file_name(tmp_name);
    let h = Header::new(core_slots);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(|e| io_error(path, "create", e))?;
    let written = (|| {
        // The umask can only have removed bits; set exactly 0600 anyway.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        file.set_len(h.file_bytes())?; // zero-filled: every slot free
        file.write_all_at(&h.to_bytes(), 0)?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_error(path, "create", e)),
    }
}

/// Elsewhere the table is not built: core sharing between programs needs Linux (the builder
/// refuses every sharing mode but `off` there). These twins of the file code above make every
/// way to a `CoreTable` fail with an `io::ErrorKind::Unsupported` error that says so, as a
/// `TableError::Io`; none panics. A `Mapping` cannot exist, so neither can a `CoreTable`.
#[cfg(not(unix))]
mod unsupported {
    use super::{io_error, Header, TableError};
    use std::fs::File;
    use std::io;
    use std::path::Path;
    use std::sync::atomic::AtomicU64;

    /// The error of every table operation here.
    fn needs_linux() -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "sharing cores between programs needs Linux",
        )
    }

    /// Never made: [`Mapping::new`] always fails.
    pub(super) struct Mapping(std::convert::Infallible);

    impl Mapping {
        /// Fails: there is no shared table to map.
        pub(super) fn new(
            path: &Path,
            _file: &File,
            _len: usize,
            _writable: bool,
        ) -> Result<Mapping, TableError> {
            Err(io_error(path, "map", needs_linux()))
        }

        /// Cannot be called: no `Mapping` exists.
        pub(super) fn word(&self, _offset: usize) -> &AtomicU64 {
            match self.0 {}
        }
    }

    /// Fails with the `Unsupported` error, so no table file is ever opened or created.
    pub(super) fn open_file(_path: &Path, _write: bool) -> io::Result<File> {
        Err(needs_linux())
    }

    /// The failed open as it is: no errno to tell links, directories or owners apart here.
    pub(super) fn open_error(path: &Path, e: io::Error) -> TableError {
        io_error(path, "open", e)
    }

    /// Refuses every file (none is ever opened: see [`open_file`]).
    pub(super) fn validate(
        path: &Path,
        _file: &File,
        _core_slots: usize,
    ) -> Result<Header, TableError> {
        Err(io_error(path, "open", needs_linux()))
    }

    /// Creates nothing and fails with the `Unsupported` error.
    pub(super) fn create(path: &Path, _core_slots: usize) -> Result<(), TableError> {
        Err(io_error(path, "create", needs_linux()))
    }
}

#[cfg(not(unix))]
use unsupported::{create, open_error, open_file, validate, Mapping};

/// Slots freed by one [`CoreTable::reclaim_stale`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Core slots freed.
    pub cores: usize,
    /// Program slots freed.
    pub programs: usize,
}

/// One core slot as [`CoreTable::snapshot`] saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreEntry {
    /// The core (the OS's CPU number).
    pub core: usize,
    /// The owner word as stored: 0 when free.
    pub raw_owner: u64,
    /// The holder, if the core is held.
    pub owner: Option<ProgramId>,
    /// The heartbeat (ms of `CLOCK_MONOTONIC`; meaningless while the core is free).
    pub heartbeat_ms: u64,
    /// Whether the holder runs ([`ProgramId::is_alive`]); false for a free core.
    pub alive: bool,
    /// Whether [`CoreTable::reclaim_stale`] would free the slot now.
    pub stale: bool,
}

/// One registered program as [`CoreTable::snapshot`] saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramEntry {
    /// Its program slot.
    pub slot: usize,
    /// The identity stored (`raw_id` when it is not a valid one).
    pub id: Option<ProgramId>,
    /// The id word as stored.
    pub raw_id: u64,
    /// Its heartbeat (ms of `CLOCK_MONOTONIC`).
    pub heartbeat_ms: u64,
    /// Whether it runs ([`ProgramId::is_alive`]).
    pub alive: bool,
    /// Whether [`CoreTable::reclaim_stale`] would free the slot now.
    pub stale: bool,
    /// The cores it holds.
    pub cores: Vec<usize>,
}

/// The whole table at one moment (each word read once; the words are not read at one instant),
/// for `magpie share status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The table file.
    pub path: PathBuf,
    /// Its layout version.
    pub version: u32,
    /// `CLOCK_MONOTONIC` in ms when the snapshot was taken, to age the heartbeats against.
    pub now_ms: u64,
    /// Every core slot, in CPU order.
    pub cores: Vec<CoreEntry>,
    /// How many program slots the table has.
    pub program_slots: usize,
    /// The occupied program slots, in slot order.
    pub programs: Vec<ProgramEntry>,
}

/// Whether a slot held by a program that is `alive` (or not) and last beat at `beat` is stale at
/// `now`: its holder is dead, its heartbeat is more than [`STALE_MS`] old, or its heartbeat lies
/// more than [`STALE_MS`] in the future (a corrupt value, which would otherwise never age).
fn stale(alive: bool, beat: u64, now: u64) -> bool {
    !alive || now.saturating_sub(beat) > STALE_MS || beat.saturating_sub(now) > STALE_MS
}

/// A mapped core allocation table (see the module documentation for the layout and protocol).
///
/// One handle per program is the intended use; its threads share it (`CoreTable` is `Sync`).
/// Dropping a handle through which this program claimed a core or registered releases every
/// core this program holds and unregisters it.
pub struct CoreTable {
    map: Mapping,
    path: PathBuf,
    cores: usize,
    programs: usize,
    me: ProgramId,
    /// Whether this handle claimed or registered as `me` (then its drop cleans up after `me`).
    used: AtomicBool,
}

impl fmt::Debug for CoreTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoreTable")
            .field("path", &self.path)
            .field("cores", &self.cores)
            .field("programs", &self.programs)
            .field("me", &self.me)
            .finish()
    }
}

impl CoreTable {
    /// Opens this user's table at [`default_path`](super::default_path), with one core slot per
    /// CPU number ([`cpu_slots`](super::cpu_slots)), creating it if no program has yet.
    pub fn open_default() -> Result<CoreTable, TableError> {
        CoreTable::open(&super::default_path(), super::cpu_slots())
    }

    /// Opens the table at `path`, which must have `core_slots` core slots, creating it (complete,
    /// mode 0600) if there is none. A file that is not a valid table of this user's is refused
    /// with the reason, and left as it is.
    pub fn open(path: &Path, core_slots: usize) -> Result<CoreTable, TableError> {
        if core_slots == 0 || core_slots > MAX_CORE_SLOTS {
            return Err(TableError::Layout {
                path: path.to_path_buf(),
                what: format!("{core_slots} core slots requested"),
            });
        }
        let me = ProgramId::me()?;
        // Open, or create and open. Only a person removing the file between our link and our
        // open sends us round again.
        for _ in 0..4 {
            match open_file(path, true) {
                Ok(file) => {
                    let h = validate(path, &file, core_slots)?;
                    let map = Mapping::new(path, &file, h.file_bytes() as usize, true)?;
                    return Ok(CoreTable {
                        map,
                        path: path.to_path_buf(),
                        cores: h.core_slots as usize,
                        programs: h.program_slots as usize,
                        me,
                        used: AtomicBool::new(false),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => create(path, core_slots)?,
                Err(e) => return Err(open_error(path, e)),
            }
        }
        Err(io_error(
            path,
            "open",
            io::Error::new(io::ErrorKind::NotFound, "it kept disappearing"),
        ))
    }

    /// Reads the table at `path` without creating or changing anything: `Ok(None)` if there is
    /// none, its snapshot if it is valid with `core_slots` core slots, the reason otherwise.
    pub fn inspect(path: &Path, core_slots: usize) -> Result<Option<Snapshot>, TableError> {
        let file = match open_file(path, false) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(open_error(path, e)),
        };
        let h = validate(path, &file, core_slots)?;
        let map = Mapping::new(path, &file, h.file_bytes() as usize, false)?;
        Ok(Some(snapshot_of(
            &map,
            path,
            h.core_slots as usize,
            h.program_slots as usize,
        )))
    }

    /// The table file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of core slots (CPU numbers 0 to `cores() - 1`).
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// The number of program slots.
    pub fn program_slots(&self) -> usize {
        self.programs
    }

    /// This program, as it was when the table was opened.
    pub fn me(&self) -> ProgramId {
        self.me
    }

    fn core_word(&self, core: usize, field: usize) -> &AtomicU64 {
        assert!(
            core < self.cores,
            "core {core} out of range: the table has {} core slots",
            self.cores
        );
        self.map.word(HEADER_BYTES + core * SLOT_BYTES + field)
    }

    fn program_word(&self, slot: usize, field: usize) -> &AtomicU64 {
        assert!(slot < self.programs);
        self.map
            .word(HEADER_BYTES + (self.cores + slot) * SLOT_BYTES + field)
    }

    fn core_slot(&self, core: usize) -> Slot<'_> {
        Slot {
            owner: self.core_word(core, 0),
            beat: self.core_word(core, 8),
        }
    }

    fn program_slot(&self, j: usize) -> Slot<'_> {
        Slot {
            owner: self.program_word(j, 0),
            beat: self.program_word(j, 8),
        }
    }

    /// Who holds `core`, if anyone. Panics if `core >= cores()`.
    pub fn owner(&self, core: usize) -> Option<ProgramId> {
        ProgramId::from_u64(self.core_slot(core).owner())
    }

    /// The cores no program holds.
    pub fn free_cores(&self) -> Vec<usize> {
        (0..self.cores)
            .filter(|&c| self.core_slot(c).owner() == 0)
            .collect()
    }

    /// The cores `id` holds.
    pub fn held_by(&self, id: ProgramId) -> Vec<usize> {
        (0..self.cores)
            .filter(|&c| self.core_slot(c).owner() == id.as_u64())
            .collect()
    }

    /// Hands `slot` from `from` (0: free) to `id` (`slot.rs`, **claim**); true if it did.
    fn hand_over(&self, slot: Slot<'_>, from: u64, id: ProgramId) -> bool {
        let won = slot.hand_over(from, id.as_u64(), now_ms);
        if won && id == self.me {
            // Relaxed: read only by this handle's drop, which has `&mut self`.
            self.used.store(true, Ordering::Relaxed);
        }
        won
    }

    /// Claims `core` for `id` if it is free; true if `id` now holds it (false also when `id`
    /// already held it). Panics if `core >= cores()`.
    pub fn try_claim(&self, core: usize, id: ProgramId) -> bool {
        self.hand_over(self.core_slot(core), 0, id)
    }

    /// Takes `core` from `from` for `id` (DWS §3.3's second case: a program takes back one of
    /// its own cores that another program borrowed); true if `id` now holds it. Fails, leaving the
    /// slot's holder alone, if the core is no longer `from`'s. Panics if `core >= cores()`.
    pub fn take_over(&self, core: usize, from: ProgramId, id: ProgramId) -> bool {
        self.hand_over(self.core_slot(core), from.as_u64(), id)
    }

    /// Gives `core` back if `id` holds it; true if it did. Panics if `core >= cores()`.
    pub fn release(&self, core: usize, id: ProgramId) -> bool {
        self.core_slot(core).release(id.as_u64())
    }

    /// Gives back every core `id` holds; returns how many.
    pub fn release_all(&self, id: ProgramId) -> usize {
        (0..self.cores).filter(|&c| self.release(c, id)).count()
    }

    /// Records that `id` is alive now: the heartbeat of its program slot and of every core it
    /// holds. Returns the number of cores it holds. A program that shares cores beats well
    /// within [`STALE_MS`].
    pub fn beat(&self, id: ProgramId) -> usize {
        let now = now_ms();
        for j in 0..self.programs {
            self.program_slot(j).beat_if_held(id.as_u64(), now);
        }
        (0..self.cores)
            .filter(|&c| self.core_slot(c).beat_if_held(id.as_u64(), now))
            .count()
    }

    /// Registers `id` as a running program in a free program slot (beating its slot if it is
    /// registered already); returns the slot. When every slot is taken, frees the stale ones
    /// first ([`reclaim_stale`](Self::reclaim_stale)); [`TableError::Full`] if none was.
    pub fn register(&self, id: ProgramId) -> Result<usize, TableError> {
        if let Some(j) = self.program_slot_of(id) {
            self.program_slot(j).beat_if_held(id.as_u64(), now_ms());
            return Ok(j);
        }
        for attempt in 0..2 {
            for j in 0..self.programs {
                if self.hand_over(self.program_slot(j), 0, id) {
                    return Ok(j);
                }
            }
            if attempt == 0 && self.reclaim_stale(now_ms()).programs == 0 {
                break;
            }
        }
        Err(TableError::Full {
            path: self.path.clone(),
            slots: self.programs,
        })
    }

    fn program_slot_of(&self, id: ProgramId) -> Option<usize> {
        (0..self.programs).find(|&j| self.program_slot(j).owner() == id.as_u64())
    }

    /// Frees `id`'s program slot; true if it had one.
    pub fn unregister(&self, id: ProgramId) -> bool {
        let mut any = false;
        for j in 0..self.programs {
            any |= self.program_slot(j).release(id.as_u64());
        }
        any
    }

    /// Frees every core slot and program slot whose holder is dead (its process is gone, is a
    /// zombie, or its pid now belongs to a process started at another time) or whose heartbeat
    /// is stale at `now` (ms of `CLOCK_MONOTONIC`, normally [`now_ms`]): more than
    /// [`STALE_MS`] old. Each slot is freed by a CAS from the holder seen, so a slot released
    /// and claimed again meanwhile is left alone. Any program may call it; DWS's coordinators
    /// call it as they look for free cores.
    pub fn reclaim_stale(&self, now: u64) -> Reclaimed {
        let mut alive: HashMap<u64, bool> = HashMap::new();
        let mut is_alive = |raw: u64| {
            *alive
                .entry(raw)
                .or_insert_with(|| ProgramId::from_u64(raw).is_some_and(ProgramId::is_alive))
        };
        let mut stale_at_now = |o: u64, beat: u64| stale(is_alive(o), beat, now);
        let mut r = Reclaimed::default();
        for c in 0..self.cores {
            if self.core_slot(c).reclaim(&mut stale_at_now) {
                r.cores += 1;
            }
        }
        for j in 0..self.programs {
            if self.program_slot(j).reclaim(&mut stale_at_now) {
                r.programs += 1;
            }
        }
        r
    }

    /// The registered programs that run and beat (not stale now), in [`ProgramId`] order: the
    /// `m` of DWS's initial split.
    pub fn live_programs(&self) -> Vec<ProgramId> {
        let now = now_ms();
        let mut v: Vec<ProgramId> = (0..self.programs)
            .filter_map(|j| {
                // Read as a reclaim reads them, so a program that has just registered does not
                // look stale (`slot.rs`, "Orderings").
                let (id, beat) = self.program_slot(j).owner_and_beat()?;
                let id = ProgramId::from_u64(id)?;
                (!stale(id.is_alive(), beat, now)).then_some(id)
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// `id`'s share of the cores under DWS's initial even split ([`home_range`]) among the
    /// [`live_programs`](Self::live_programs); `None` if `id` is not one of them (not
    /// registered, or stale).
    pub fn home_cores(&self, id: ProgramId) -> Option<Range<usize>> {
        let live = self.live_programs();
        let i = live.iter().position(|&p| p == id)?;
        Some(home_range(i, live.len(), self.cores))
    }

    /// The whole table, for `magpie share status`.
    pub fn snapshot(&self) -> Snapshot {
        snapshot_of(&self.map, &self.path, self.cores, self.programs)
    }
}

impl Drop for CoreTable {
    fn drop(&mut self) {
        // Relaxed: `&mut self`: every store to it happened before.
        if self.used.load(Ordering::Relaxed) {
            self.release_all(self.me);
            self.unregister(self.me);
        }
    }
}

/// Reads every slot of a table with `cores` core slots and `programs` program slots, with
/// Relaxed loads only (the mapping may be read-only).
fn snapshot_of(map: &Mapping, path: &Path, cores: usize, programs: usize) -> Snapshot {
    let now = now_ms();
    let load = |slot: usize, field: usize| {
        map.word(HEADER_BYTES + slot * SLOT_BYTES + field)
            // Relaxed: a display (module doc, "The protocol").
            .load(Ordering::Relaxed)
    };
    let mut alive: HashMap<u64, bool> = HashMap::new();
    let mut is_alive = |raw: u64| {
        *alive
            .entry(raw)
            .or_insert_with(|| ProgramId::from_u64(raw).is_some_and(ProgramId::is_alive))
    };
    let cores: Vec<CoreEntry> = (0..cores)
        .map(|c| {
            let raw = load(c, 0);
            let beat = load(c, 8);
            let alive = raw != 0 && is_alive(raw);
            CoreEntry {
                core: c,
                raw_owner: raw,
                owner: ProgramId::from_u64(raw),
                heartbeat_ms: beat,
                alive,
                stale: raw != 0 && stale(alive, beat, now),
            }
        })
        .collect();
    let programs_seen = (0..programs)
        .filter_map(|j| {
            let raw = load(cores.len() + j, 0);
            if raw == 0 {
                return None;
            }
            let beat = load(cores.len() + j, 8);
            let alive = is_alive(raw);
            Some(ProgramEntry {
                slot: j,
                id: ProgramId::from_u64(raw),
                raw_id: raw,
                heartbeat_ms: beat,
                alive,
                stale: stale(alive, beat, now),
                cores: cores
                    .iter()
                    .filter(|c| c.raw_owner == raw)
                    .map(|c| c.core)
                    .collect(),
            })
        })
        .collect();
    Snapshot {
        path: path.to_path_buf(),
        version: VERSION,
        now_ms: now,
        cores,
        program_slots: programs,
        programs: programs_seen,
    }
}
