//! Co-running programs (DWS, Chen et al., §3.1 and §3.4): the *core allocation table* that
//! magpie programs running side by side on one machine share, so that each core runs the
//! workers of one program at a time.
//!
//! The table (Table 1 of the paper) says which program holds which core. DWS maps it into shared
//! memory with `mmap()`: the first program creates it, later ones map the same file. Here it is
//! one file per user, mode 0600 ([`default_path`]), holding a versioned header, one slot per
//! core (indexed by the operating system's CPU number) and a fixed number of program slots in
//! which running programs register themselves. [`CoreTable`] maps it and offers the operations
//! the workers and the coordinator need: claim and release a core, beat, count the live
//! programs and split the cores between them ([`home_range`]), and reclaim what dead or silent
//! programs left behind ([`CoreTable::reclaim_stale`]).
//!
//! A program is known by its [`ProgramId`]: its pid and its start time, so a pid the kernel has
//! given to a new process is not taken for the old owner. A program that exits, panics or is
//! killed with SIGKILL holds its cores only until another program calls `reclaim_stale`, which
//! frees every slot whose owner is gone or has not beaten for [`STALE_MS`]. Every update is one
//! atomic operation on the mapped memory; see `slot.rs` for the protocol, `table.rs` for the
//! layout.
//!
//! Linux only: liveness is read from `/proc/<pid>/stat`, the CPU count from sysfs.

pub(crate) mod runtime;
mod slot;
mod table;

pub use table::{
    CoreEntry, CoreTable, ProgramEntry, Reclaimed, Snapshot, TableError, HEADER_BYTES, MAGIC,
    MAX_CORE_SLOTS, MAX_PROGRAM_SLOTS, PROGRAM_SLOTS, SLOT_BYTES, VERSION,
};

#[cfg(unix)]
use std::ffi::OsString;
use std::fmt;
use std::ops::Range;
#[cfg(unix)]
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

/// A slot whose owner has not beaten for longer than this many milliseconds is stale, and
/// [`CoreTable::reclaim_stale`] frees it. A program that shares cores beats well within it
/// (every few tens of milliseconds) so that only a dead, hung or stopped program loses its cores.
pub const STALE_MS: u64 = 1000;

/// The environment variable that names the table file, overriding [`default_path`]'s choice.
pub const TABLE_ENV: &str = "MAGPIE_SHARE_TABLE";

/// The environment variable that chooses a pool's [`SharingMode`] (`Builder::from_env`).
pub const MODE_ENV: &str = "MAGPIE_SHARE";

/// What a pool asked of core sharing (`Builder::share` and the settings beside it), for
/// `runtime::Sharing::start`.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub mode: SharingMode,
    /// DWS's T_SLEEP in failed steals (`Builder::share_sleep_after`); `None`: the cores usable.
    pub sleep_after: Option<u32>,
    /// DWS's T (`Builder::share_period`).
    pub period: Duration,
    /// The core table file (`Builder::share_table`); `None`: [`default_path`].
    pub table: Option<PathBuf>,
}

impl Settings {
    /// The pool's sharing hook, when `mode` uses the table and the table can be used (else a
    /// warning on stderr says why the pool runs without sharing).
    pub(crate) fn start(&self, workers: usize) -> Option<Box<dyn crate::hooks::CoreSharing>> {
        runtime::Sharing::start(self, workers)
            .map(|s| Box::new(s) as Box<dyn crate::hooks::CoreSharing>)
    }
}

impl crate::Pool {
    /// The sharing mode in force: the one asked for, or [`SharingMode::Off`] when it needed the
    /// core table and the table could not be used.
    pub fn share_mode(&self) -> SharingMode {
        let reg = self.registry();
        match reg
            .sharing
            .as_ref()
            .and_then(|s| s.as_any().downcast_ref::<runtime::Sharing>())
        {
            Some(s) => s.mode,
            None if reg.config.never_block => SharingMode::Abp,
            None => SharingMode::Off,
        }
    }
}

/// How a pool shares the machine's cores with other programs (`Builder::share`,
/// `MAGPIE_SHARE`). The three sharing modes are DWS and the two baselines of its §4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SharingMode {
    /// No sharing: every worker may run on every core; an idle worker spins a few rounds, then
    /// sleeps until work is published.
    Off,
    /// Demand-aware work stealing: each worker belongs to one core and runs only while its
    /// program holds that core in the table; a worker that fails `T_SLEEP` steals in a row gives
    /// its core back and sleeps; a coordinator thread wakes workers on free cores, then on the
    /// program's own cores that others borrowed, as queued work demands.
    Dws,
    /// Time sharing with ABP's yielding thieves: an idle worker yields its core after every
    /// failed round of steals and never blocks.
    Abp,
    /// Equal partition: the cores are split evenly between the live programs of the table, and
    /// each program's workers are pinned to its share, whatever its demand.
    Ep,
}

impl SharingMode {
    /// Every mode, in the order `magpie corun` reports them.
    pub const ALL: [SharingMode; 4] = [
        SharingMode::Dws,
        SharingMode::Abp,
        SharingMode::Ep,
        SharingMode::Off,
    ];

    /// The name `MAGPIE_SHARE` and the CLI use.
    pub fn name(self) -> &'static str {
        match self {
            SharingMode::Off => "off",
            SharingMode::Dws => "dws",
            SharingMode::Abp => "abp",
            SharingMode::Ep => "ep",
        }
    }
}

impl fmt::Display for SharingMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SharingMode {
    type Err = String;
    fn from_str(s: &str) -> Result<SharingMode, String> {
        SharingMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown sharing mode `{s}`: expected one of dws, abp, ep, off"))
    }
}

/// A running program: its pid and the low 32 bits of its start time (clock ticks since boot,
/// field 22 of `/proc/<pid>/stat`), packed as `pid << 32 | start`. The packed value is never 0
/// (a pid is at least 1), which leaves 0 to mean "free" in the table.
///
/// The start time tells a reused pid from the program that held it first: a new process with
/// the same pid started later. Two processes would only be confused if the same pid came back
/// exactly 2^32 ticks (497 days at 100 Hz) later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProgramId(u64);

impl ProgramId {
    /// This process.
    pub fn me() -> Result<ProgramId, TableError> {
        let pid = std::process::id();
        match proc_stat(pid) {
            Ok((_, start)) => Ok(ProgramId::from_parts(pid, start)),
            Err(e) => Err(TableError::Proc(format!(
                "cannot read /proc/{pid}/stat for this program's start time: {e}"
            ))),
        }
    }

    /// The process with this pid now, if there is one.
    pub fn of(pid: u32) -> Option<ProgramId> {
        proc_stat(pid)
            .ok()
            .map(|(_, start)| ProgramId::from_parts(pid, start))
    }

    /// The identity of pid `pid` started at `start_ticks` clock ticks after boot (only the low
    /// 32 bits are kept). `pid` must not be 0.
    pub fn from_parts(pid: u32, start_ticks: u64) -> ProgramId {
        assert!(pid != 0, "a program's pid is never 0");
        ProgramId(((pid as u64) << 32) | (start_ticks & 0xffff_ffff))
    }

    /// The packed value as stored in the table.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// The identity stored as `v` in the table; `None` for 0 (a free slot) and for values with
    /// a pid of 0 (never written by magpie).
    pub fn from_u64(v: u64) -> Option<ProgramId> {
        (v >> 32 != 0).then_some(ProgramId(v))
    }

    /// The process id.
    pub fn pid(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The low 32 bits of the process's start time, in clock ticks after boot.
    pub fn start_time(self) -> u32 {
        self.0 as u32
    }

    /// Whether this program still runs: a process with its pid exists, started at its start
    /// time, and is not a zombie (a killed process its parent has not yet waited for holds no
    /// cores). If `/proc` cannot tell (it refuses the read), the program is taken to be alive,
    /// and only its heartbeat can make it stale.
    pub fn is_alive(self) -> bool {
        match proc_stat(self.pid()) {
            Ok((state, start)) => {
                start & 0xffff_ffff == self.start_time() as u64 && state != 'Z' && state != 'X'
            }
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        }
    }
}

impl fmt::Display for ProgramId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} (start {})", self.pid(), self.start_time())
    }
}

/// The state (field 3) and start time (field 22) of process `pid`, from `/proc/<pid>/stat`.
#[cfg(unix)]
fn proc_stat(pid: u32) -> std::io::Result<(char, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&s).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("unexpected /proc/{pid}/stat: {s:?}"),
        )
    })
}

/// Elsewhere there is no `/proc`: fails with an [`std::io::ErrorKind::Unsupported`] error, so
/// [`ProgramId::me`] says core sharing needs Linux, [`ProgramId::of`] finds no process and
/// [`ProgramId::is_alive`] takes every program to be alive (as when `/proc` refuses the read).
#[cfg(not(unix))]
fn proc_stat(_pid: u32) -> std::io::Result<(char, u64)> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no /proc here: sharing cores between programs needs Linux",
    ))
}

/// Parses a `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so the fields are counted from the last `)`.
#[cfg(unix)]
fn parse_stat(s: &str) -> Option<(char, u64)> {
    let rest = &s[s.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields 4..=21 lie between the state and the start time.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// Milliseconds of `CLOCK_MONOTONIC`, the clock of every heartbeat in the table.
///
/// It is one clock for the whole system, so the heartbeats of different programs compare; it
/// never jumps when someone sets the time; and it stops while the machine is suspended, so a
/// resume does not make every live program's heartbeat look a suspension old at once (as
/// `CLOCK_BOOTTIME` would, freeing every core in the table).
#[cfg(unix)]
pub fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Elsewhere (no `CLOCK_MONOTONIC`, and no core table: sharing cores needs Linux) milliseconds
/// of the wall clock since the Unix epoch, `SystemTime`: one clock for the whole system, so
/// values taken by different programs still compare, but it jumps when someone sets the time.
/// A clock before the epoch reads 0.
#[cfg(not(unix))]
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The number of core slots the table has on this machine: the highest online CPU number plus
/// one (from `/sys/devices/system/cpu/online`), so a slot's index is the CPU's number; without
/// sysfs, `available_parallelism`.
pub fn cpu_slots() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| crate::topology::parse_cpu_list(&s))
        .and_then(|cpus| cpus.into_iter().max())
        .map(|max| max + 1)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Where the table lives: `MAGPIE_SHARE_TABLE` if set; else `$XDG_RUNTIME_DIR/magpie-cores` when
/// that is a directory this user owns; else `/dev/shm/magpie-cores-<uid>`. Both defaults are
/// memory-backed (tmpfs) and private to the user, and neither survives a reboot, which clears
/// any table left by a crash.
#[cfg(unix)]
pub fn default_path() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    path_from(
        std::env::var_os(TABLE_ENV),
        std::env::var_os("XDG_RUNTIME_DIR"),
        euid,
    )
}

/// Elsewhere (no user ids, no `/dev/shm`, and no core sharing, which needs Linux):
/// `MAGPIE_SHARE_TABLE` if set, else `magpie-cores` in the temporary directory
/// (`std::env::temp_dir`). Only a name: no table is opened there.
#[cfg(not(unix))]
pub fn default_path() -> PathBuf {
    match std::env::var_os(TABLE_ENV).filter(|t| !t.is_empty()) {
        Some(t) => PathBuf::from(t),
        None => std::env::temp_dir().join("magpie-cores"),
    }
}

/// [`default_path`] from the values of `MAGPIE_SHARE_TABLE`, `XDG_RUNTIME_DIR` and the user id.
#[cfg(unix)]
fn path_from(table: Option<OsString>, xdg: Option<OsString>, euid: u32) -> PathBuf {
    if let Some(t) = table.filter(|t| !t.is_empty()) {
        return PathBuf::from(t);
    }
    if let Some(dir) = xdg.filter(|d| !d.is_empty()).map(PathBuf::from) {
        use std::os::unix::fs::MetadataExt;
        if std::fs::metadata(&dir).is_ok_and(|m| m.is_dir() && m.uid() == euid) {
            return dir.join("magpie-cores");
        }
    }
    Path::new("/dev/shm").join(format!("magpie-cores-{euid}"))
}

/// DWS's initial even split (§3.1): of `k` cores shared by `m` programs, program `i` (0-based,
/// in the order of their [`ProgramId`]s) gets the adjacent cores `[i*k/m, (i+1)*k/m)`. The
/// ranges cover `0..k` without overlap; with more programs than cores some are empty. With no
/// programs (`m == 0`) the whole range is returned.
pub fn home_range(i: usize, m: usize, k: usize) -> Range<usize> {
    if m == 0 {
        return 0..k;
    }
    let i = i.min(m - 1);
    i * k / m..(i + 1) * k / m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 \
                    987654 10000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0";
        assert_eq!(parse_stat(line), Some(('S', 987654)));
        assert_eq!(parse_stat("12 (x) Z 1 2"), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn my_identity_is_alive_and_a_changed_start_time_is_not() {
        let me = ProgramId::me().unwrap();
        assert_eq!(me.pid(), std::process::id());
        assert!(me.is_alive());
        assert_eq!(ProgramId::of(me.pid()), Some(me));
        let reused = ProgramId::from_parts(me.pid(), me.start_time() as u64 + 1);
        assert!(!reused.is_alive());
        assert_eq!(ProgramId::from_u64(me.as_u64()), Some(me));
        assert_eq!(ProgramId::from_u64(0), None);
    }

    #[test]
    #[cfg(unix)]
    fn the_path_prefers_the_variable_then_an_owned_runtime_dir_then_dev_shm() {
        let dir = std::env::temp_dir();
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(&dir).unwrap().uid();
        assert_eq!(
            path_from(Some("/x/t".into()), Some(dir.clone().into()), owner),
            PathBuf::from("/x/t")
        );
        assert_eq!(
            path_from(Some("".into()), Some(dir.clone().into()), owner),
            dir.join("magpie-cores")
        );
        // A runtime dir someone else owns, or none, falls back to /dev/shm.
        assert_eq!(
            path_from(None, Some(dir.into()), owner + 1),
            PathBuf::from(format!("/dev/shm/magpie-cores-{}", owner + 1))
        );
        assert_eq!(
            path_from(None, None, 7),
            PathBuf::from("/dev/shm/magpie-cores-7")
        );
    }

    #[test]
    fn home_ranges_split_the_cores_evenly_and_cover_them() {
        assert_eq!(home_range(0, 1, 8), 0..8);
        assert_eq!(home_range(1, 2, 8), 4..8);
        assert_eq!(home_range(0, 3, 8), 0..2);
        assert_eq!(home_range(1, 3, 8), 2..5);
        assert_eq!(home_range(2, 3, 8), 5..8);
        assert_eq!(home_range(0, 0, 4), 0..4);
        for k in 1..20 {
            for m in 1..25 {
                let mut next = 0;
                for i in 0..m {
                    let r = home_range(i, m, k);
                    assert_eq!(r.start, next, "k={k} m={m} i={i}");
                    assert!(r.len() == k / m || r.len() == k / m + 1);
                    next = r.end;
                }
                assert_eq!(next, k);
            }
        }
    }
}
