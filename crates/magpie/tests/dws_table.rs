//! The core allocation table (DWS §3.1, §3.4; `magpie::dws`): two handles share one table,
//! claims are exclusive under contention, creation is race-free, every kind of bad file is
//! refused with its own error and left alone, and a dead program's slots are reclaimed: a
//! SIGKILLed holder (another process), a holder that panics, a live program whose heartbeat is
//! stale, and a pid that now belongs to another process.
//!
//! No assertion depends on timing: stale heartbeats are written by hand, and reclaims that must
//! free nothing are given the holder's own heartbeat as "now".

// The table is not built under `--cfg loom` (see lib.rs).
#![cfg(not(loom))]

use magpie::dws::{
    home_range, CoreTable, ProgramId, Reclaimed, TableError, HEADER_BYTES, MAGIC, PROGRAM_SLOTS,
    SLOT_BYTES, STALE_MS, VERSION,
};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Core slots of the tables these tests make (any count works; 8 gives contention room on a
/// machine of 2 CPUs).
const K: usize = 8;

#[path = "support/temp_dir.rs"]
mod temp_dir;
use temp_dir::TempDir;

fn me() -> ProgramId {
    ProgramId::me().unwrap()
}

/// An identity no running process has: this process's pid with another start time.
fn dead(n: u64) -> ProgramId {
    let me = me();
    ProgramId::from_parts(me.pid(), me.start_time() as u64 + 1 + n)
}

/// Offset of core `c`'s slot, and of program slot `j` in a table of `k` cores.
fn core_slot(c: usize) -> u64 {
    (HEADER_BYTES + c * SLOT_BYTES) as u64
}
fn program_slot(k: usize, j: usize) -> u64 {
    (HEADER_BYTES + (k + j) * SLOT_BYTES) as u64
}

/// A table header, written by hand from the documented layout.
fn header(magic: u64, version: u32, cores: u32, slot_bytes: u32, programs: u32) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_BYTES];
    b[0..8].copy_from_slice(&magic.to_ne_bytes());
    b[8..12].copy_from_slice(&version.to_ne_bytes());
    b[12..16].copy_from_slice(&(HEADER_BYTES as u32).to_ne_bytes());
    b[16..20].copy_from_slice(&cores.to_ne_bytes());
    b[20..24].copy_from_slice(&slot_bytes.to_ne_bytes());
    b[24..28].copy_from_slice(&programs.to_ne_bytes());
    b
}

/// A whole table file: the header and as many zero bytes as it says.
fn table_bytes(magic: u64, version: u32, cores: u32, slot_bytes: u32, programs: u32) -> Vec<u8> {
    let mut b = header(magic, version, cores, slot_bytes, programs);
    b.resize(
        HEADER_BYTES + (cores as usize + programs as usize) * slot_bytes as usize,
        0,
    );
    b
}

fn good_bytes() -> Vec<u8> {
    table_bytes(
        MAGIC,
        VERSION,
        K as u32,
        SLOT_BYTES as u32,
        PROGRAM_SLOTS as u32,
    )
}

fn write_private(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn write_u64(path: &Path, offset: u64, v: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&v.to_ne_bytes(), offset).unwrap();
}

/// The heartbeat of core `c` as a snapshot sees it.
fn core_beat(t: &CoreTable, c: usize) -> u64 {
    t.snapshot().cores[c].heartbeat_ms
}

#[test]
fn a_new_table_is_private_complete_and_shared_by_two_handles() {
    let dir = TempDir::new("two");
    let path = dir.table();
    let a = CoreTable::open(&path, K).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        meta.len() as usize,
        HEADER_BYTES + (K + PROGRAM_SLOTS) * SLOT_BYTES
    );
    assert_eq!(std::fs::read(&path).unwrap(), good_bytes());
    // Nothing but the table is left in the directory (the temporary file is gone).
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
    let b = CoreTable::open(&path, K).unwrap();
    assert_eq!((a.cores(), b.cores()), (K, K));
    assert_eq!(b.program_slots(), PROGRAM_SLOTS);
    let me = me();
    assert!(a.try_claim(3, me));
    assert_eq!(b.owner(3), Some(me));
    assert_eq!(b.held_by(me), vec![3]);
    assert!(!b.try_claim(3, me));
    assert!(b.release(3, me));
    assert_eq!(a.owner(3), None);
    assert_eq!(a.free_cores(), (0..K).collect::<Vec<_>>());
}

#[test]
fn a_held_core_cannot_be_claimed_or_released_by_another_program() {
    let dir = TempDir::new("claim");
    let t = CoreTable::open(&dir.table(), K).unwrap();
    let (p, q) = (me(), dead(0));
    assert!(t.try_claim(0, p));
    assert!(!t.try_claim(0, q));
    assert!(!t.release(0, q));
    assert_eq!(t.owner(0), Some(p));
    assert!(t.release(0, p));
    assert!(!t.release(0, p));
    assert!(t.try_claim(0, q));
    assert_eq!(t.owner(0), Some(q));
    assert!(t.try_claim(1, p) && t.try_claim(2, p));
    assert_eq!(t.held_by(p), vec![1, 2]);
    assert_eq!(t.beat(p), 2);
    assert_eq!(t.release_all(p), 2);
    assert_eq!(t.free_cores(), (1..K).collect::<Vec<_>>());
}

#[test]
fn concurrent_claims_never_give_a_core_two_holders() {
    // Few cores and many tight rounds, so that threads on different CPUs often see the same
    // core freed at the same instant and race for it.
    const CORES: usize = 3;
    const THREADS: usize = 6;
    const ITERS: usize = 200_000;
    let dir = TempDir::new("stress");
    // Two mappings of the one file: half the threads use each.
    let handles = [
        CoreTable::open(&dir.table(), CORES).unwrap(),
        CoreTable::open(&dir.table(), CORES).unwrap(),
    ];
    let holders: Vec<AtomicUsize> = (0..CORES).map(|_| AtomicUsize::new(0)).collect();
    let worst = AtomicUsize::new(0);
    let claims = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (t, holders, worst, claims) = (&handles[th % 2], &holders, &worst, &claims);
            s.spawn(move || {
                let id = ProgramId::from_parts(1_000_000 + th as u32, th as u64);
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ th as u64;
                for i in 0..ITERS {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let c = (x % CORES as u64) as usize;
                    if t.try_claim(c, id) {
                        let n = holders[c].fetch_add(1, Ordering::SeqCst) + 1;
                        worst.fetch_max(n, Ordering::SeqCst);
                        let owner = t.owner(c);
                        holders[c].fetch_sub(1, Ordering::SeqCst);
                        assert_eq!(owner, Some(id), "thread {th} lost core {c}");
                        assert!(t.release(c, id), "thread {th} lost core {c}");
                        claims.fetch_add(1, Ordering::Relaxed);
                    } else {
                        assert!(!t.release(c, id), "released a core it did not hold");
                    }
                    if i % 64 == 0 {
                        t.beat(id);
                    }
                }
            });
        }
    });
    assert_eq!(worst.load(Ordering::SeqCst), 1, "a core had two holders");
    assert!(claims.load(Ordering::Relaxed) > 0);
    assert_eq!(handles[0].free_cores().len(), CORES);
}

#[test]
fn programs_racing_to_create_the_table_all_map_one_complete_table() {
    for round in 0..20 {
        let dir = TempDir::new(&format!("race{round}"));
        let path = dir.table();
        let barrier = std::sync::Barrier::new(6);
        let tables: Vec<CoreTable> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        CoreTable::open(&path, K)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap().expect("every racer opens the table"))
                .collect()
        });
        let id = dead(round);
        assert!(tables[0].try_claim(5, id));
        assert!(tables.iter().all(|t| t.owner(5) == Some(id)));
        assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
    }
}

/// Opens `path` (which must stay as it is) and returns the refusal; `inspect` refuses it alike.
fn refused(path: &Path) -> TableError {
    let before = std::fs::symlink_metadata(path).ok().map(|m| m.len());
    let bytes = std::fs::read(path).ok();
    let e = CoreTable::open(path, K).expect_err("the file must be refused");
    assert_eq!(
        CoreTable::inspect(path, K).expect_err("inspect refuses it"),
        e
    );
    assert_eq!(
        std::fs::read(path).ok(),
        bytes,
        "a refused file is left alone"
    );
    assert_eq!(
        std::fs::symlink_metadata(path).ok().map(|m| m.len()),
        before
    );
    let msg = e.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    e
}

#[test]
fn bad_files_are_refused_each_with_its_reason() {
    let dir = TempDir::new("bad");
    let path = dir.table();
    let case = |bytes: Vec<u8>| {
        write_private(&path, &bytes);
        refused(&path)
    };

    let mut b = good_bytes();
    b[0..8].copy_from_slice(b"notatabl");
    let e = case(b);
    assert!(matches!(e, TableError::BadMagic { .. }), "{e:?}");
    assert!(e.to_string().contains("remove it"), "{e}");

    let e = case(table_bytes(MAGIC, 2, K as u32, 64, 64));
    assert!(matches!(e, TableError::Version { found: 2, .. }), "{e:?}");

    let full = good_bytes();
    let e = case(full[..full.len() - SLOT_BYTES].to_vec());
    let expected = full.len() as u64;
    let found = expected - SLOT_BYTES as u64;
    assert!(
        matches!(e, TableError::Size { found: f, expected: x, .. } if f == found && x == expected),
        "{e:?}"
    );

    let e = case(full[..10].to_vec());
    assert!(matches!(e, TableError::TooShort { size: 10, .. }), "{e:?}");
    let e = case(Vec::new());
    assert!(matches!(e, TableError::TooShort { size: 0, .. }), "{e:?}");

    let e = case(table_bytes(MAGIC, VERSION, 4, 64, 64));
    assert!(
        matches!(
            e,
            TableError::Slots {
                found: 4,
                expected: K,
                ..
            }
        ),
        "{e:?}"
    );

    let e = case(table_bytes(MAGIC, VERSION, K as u32, 32, 64));
    assert!(matches!(e, TableError::Layout { .. }), "{e:?}");
    let e = case(table_bytes(MAGIC, VERSION, K as u32, 64, 0));
    assert!(matches!(e, TableError::Layout { .. }), "{e:?}");
    // A header claiming a huge table is refused from the header, before any size is trusted.
    let e = case(header(MAGIC, VERSION, u32::MAX, 64, 64));
    assert!(matches!(e, TableError::Layout { .. }), "{e:?}");
}

#[test]
fn a_table_others_may_read_is_refused() {
    let dir = TempDir::new("mode");
    let path = dir.table();
    write_private(&path, &good_bytes());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let e = refused(&path);
    assert!(
        matches!(e, TableError::Permissions { mode: 0o640, .. }),
        "{e:?}"
    );
}

#[test]
fn another_users_table_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a file to another user needs root");
        return;
    }
    let dir = TempDir::new("owner");
    let path = dir.table();
    write_private(&path, &good_bytes());
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    let e = refused(&path);
    assert!(
        matches!(
            e,
            TableError::ForeignOwner {
                owner: 65534,
                me: 0,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_directory_or_a_link_at_the_path_is_refused() {
    let dir = TempDir::new("notfile");
    let path = dir.table();
    std::fs::create_dir(&path).unwrap();
    let e = refused(&path);
    assert!(
        matches!(
            e,
            TableError::NotAFile {
                what: "a directory",
                ..
            }
        ),
        "{e:?}"
    );
    std::fs::remove_dir(&path).unwrap();
    let real = dir.0.join("real");
    write_private(&real, &good_bytes());
    std::os::unix::fs::symlink(&real, &path).unwrap();
    let e = refused(&path);
    assert!(
        matches!(
            e,
            TableError::NotAFile {
                what: "a symbolic link",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn inspect_reads_without_creating() {
    let dir = TempDir::new("inspect");
    let path = dir.table();
    assert_eq!(CoreTable::inspect(&path, K).unwrap(), None);
    assert!(!path.exists(), "inspect must not create the table");
    let t = CoreTable::open(&path, K).unwrap();
    let me = me();
    assert!(t.try_claim(2, me) && t.try_claim(6, me));
    t.register(me).unwrap();
    let s = CoreTable::inspect(&path, K).unwrap().unwrap();
    assert_eq!(s.version, VERSION);
    assert_eq!(s.cores.len(), K);
    assert_eq!(s.program_slots, PROGRAM_SLOTS);
    assert_eq!(s.cores[2].owner, Some(me));
    assert!(s.cores[2].alive);
    assert_eq!(s.cores[1].owner, None);
    assert_eq!(s.cores[1].raw_owner, 0);
    assert_eq!(s.programs.len(), 1);
    assert_eq!(s.programs[0].id, Some(me));
    assert_eq!(s.programs[0].cores, vec![2, 6]);
    assert!(s.programs[0].alive);
}

#[test]
fn dropping_a_handle_releases_its_programs_cores() {
    let dir = TempDir::new("drop");
    let path = dir.table();
    let me = me();
    let watcher = CoreTable::open(&path, K).unwrap();
    {
        let t = CoreTable::open(&path, K).unwrap();
        assert!(t.try_claim(1, me) && t.try_claim(4, me));
        t.register(me).unwrap();
        assert_eq!(watcher.live_programs(), vec![me]);
    }
    assert_eq!(watcher.held_by(me), Vec::<usize>::new());
    assert_eq!(watcher.live_programs(), Vec::<ProgramId>::new());
    // A handle that never claimed leaves the program's cores alone when it drops.
    let holder = CoreTable::open(&path, K).unwrap();
    assert!(holder.try_claim(0, me));
    drop(CoreTable::open(&path, K).unwrap());
    assert_eq!(watcher.owner(0), Some(me));
    drop(holder);
    assert_eq!(watcher.owner(0), None);
}

#[test]
fn a_live_program_with_a_stale_heartbeat_is_reclaimed() {
    let dir = TempDir::new("stale");
    let path = dir.table();
    let t = CoreTable::open(&path, K).unwrap();
    let me = me();
    assert!(t.try_claim(1, me) && t.try_claim(3, me));
    let slot = t.register(me).unwrap();
    let beat = core_beat(&t, 1);
    // Alive and beating: nothing to reclaim at the time of its own heartbeat.
    assert_eq!(t.reclaim_stale(beat), Reclaimed::default());
    // Its core 1 and its program slot last beat at time 0, written by hand: stale.
    write_u64(&path, core_slot(1) + 8, 0);
    write_u64(&path, program_slot(K, slot) + 8, 0);
    let now = beat.max(STALE_MS + 1);
    assert_eq!(
        t.reclaim_stale(now),
        Reclaimed {
            cores: 1,
            programs: 1
        }
    );
    assert_eq!(t.owner(1), None);
    assert_eq!(t.owner(3), Some(me));
    assert_eq!(t.live_programs(), Vec::<ProgramId>::new());
    // A heartbeat far in the future (corrupt) does not keep a slot forever.
    write_u64(&path, core_slot(3) + 8, u64::MAX);
    assert_eq!(t.reclaim_stale(now).cores, 1);
    assert_eq!(t.owner(3), None);
}

#[test]
fn a_reused_pid_is_a_dead_program() {
    let dir = TempDir::new("reused");
    let t = CoreTable::open(&dir.table(), K).unwrap();
    let me = me();
    let ghost = ProgramId::from_parts(me.pid(), me.start_time() as u64 ^ 1);
    assert!(!ghost.is_alive());
    assert!(t.try_claim(0, ghost) && t.try_claim(7, ghost));
    t.register(ghost).unwrap();
    assert!(t.try_claim(5, me));
    // At its own heartbeat's time, so only liveness can free it.
    let now = core_beat(&t, 0);
    assert_eq!(
        t.reclaim_stale(now),
        Reclaimed {
            cores: 2,
            programs: 1
        }
    );
    assert_eq!((t.owner(0), t.owner(7), t.owner(5)), (None, None, Some(me)));
    // A garbage owner word (pid 0, never written by magpie) never blocks a core either.
    write_u64(&dir.table(), core_slot(2), 12345);
    assert_eq!(t.owner(2), None);
    assert!(!t.try_claim(2, me));
    assert_eq!(t.reclaim_stale(now).cores, 1);
    assert!(t.try_claim(2, me));
}

#[test]
fn live_programs_split_the_cores_evenly() {
    let dir = TempDir::new("split");
    let t = CoreTable::open(&dir.table(), K).unwrap();
    let me = me();
    t.register(me).unwrap();
    assert_eq!(t.home_cores(me), Some(0..K));
    let mut sleeper = Kill(
        Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("spawn sleep"),
    );
    let other = ProgramId::of(sleeper.0.id()).unwrap();
    t.register(other).unwrap();
    t.register(dead(0)).unwrap(); // registered but dead: not counted
    let live = t.live_programs();
    let mut expected = vec![me, other];
    expected.sort();
    assert_eq!(live, expected);
    let i = live.iter().position(|&p| p == me).unwrap();
    assert_eq!(t.home_cores(me), Some(home_range(i, 2, K)));
    assert_eq!(t.home_cores(other), Some(home_range(1 - i, 2, K)));
    assert_eq!(t.home_cores(dead(0)), None);
    sleeper.0.kill().unwrap();
    sleeper.0.wait().unwrap();
    assert_eq!(t.live_programs(), vec![me]);
}

#[test]
fn registering_when_full_frees_dead_programs_slots() {
    let dir = TempDir::new("full");
    let t = CoreTable::open(&dir.table(), K).unwrap();
    for n in 0..PROGRAM_SLOTS as u64 {
        t.register(dead(n)).unwrap();
    }
    let slot = t.register(me()).unwrap();
    assert!(slot < PROGRAM_SLOTS);
    assert_eq!(t.register(me()).unwrap(), slot);
    assert!(t.unregister(me()));
    assert!(!t.unregister(me()));
}

/// Kills and reaps a child process when dropped, so a failing test leaves none behind.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the holder prints once it holds its cores.
const READY: &str = "magpie-share-holder-ready";

/// The environment variable that turns `holder_child_process` into a holder of the table it names.
const HOLD_ENV: &str = "MAGPIE_SHARE_TEST_HOLD";

/// Not a test on its own (it returns at once): re-executed by the tests below with
/// `MAGPIE_SHARE_TEST_HOLD=<mode>:<table path>`, it claims cores 2 and 5 and registers, prints
/// [`READY`], then sleeps (mode `sleep`, to be SIGKILLed) or panics (mode `panic`).
#[test]
fn holder_child_process() {
    let Ok(spec) = std::env::var(HOLD_ENV) else {
        return;
    };
    let (mode, path) = spec.split_once(':').unwrap();
    let t = CoreTable::open(Path::new(path), K).unwrap();
    let me = me();
    assert!(t.try_claim(2, me) && t.try_claim(5, me));
    t.register(me).unwrap();
    // libtest may already have written "test holder_child_process ... " on this line.
    println!("\n{READY}");
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    match mode {
        "panic" => panic!("the holder panics with its cores claimed"),
        _ => std::thread::sleep(std::time::Duration::from_secs(60)),
    }
}

/// Starts `holder_child_process` in `mode` on the table at `path` and waits for its [`READY`].
fn start_holder(mode: &str, path: &Path) -> Kill {
    let mut child = Kill(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "holder_child_process",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(HOLD_ENV, format!("{mode}:{}", path.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let out = BufReader::new(child.0.stdout.take().unwrap());
    for line in out.lines() {
        if line.unwrap().trim() == READY {
            return child;
        }
    }
    panic!("the holder exited without saying ready");
}

#[test]
fn a_sigkilled_holders_cores_and_slot_are_reclaimed() {
    let dir = TempDir::new("sigkill");
    let path = dir.table();
    let t = CoreTable::open(&path, K).unwrap();
    let mut child = start_holder("sleep", &path);
    let pid = child.0.id();
    let holder = ProgramId::of(pid).unwrap();
    assert_eq!(t.owner(2), Some(holder));
    assert_eq!(t.owner(5), Some(holder));
    assert_eq!(t.live_programs(), vec![holder]);
    // At the holder's own heartbeat's time only liveness can free anything.
    let now = core_beat(&t, 2);
    assert_eq!(t.reclaim_stale(now), Reclaimed::default());

    child.0.kill().unwrap(); // SIGKILL: no destructor runs
                             // Wait until it is a zombie, without reaping it: a zombie holds nothing.
                             // SAFETY: `info` is a valid siginfo_t to write; the pid is our child's.
    let rc = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT)
    };
    assert_eq!(rc, 0);
    assert!(!holder.is_alive());
    assert_eq!(t.owner(2), Some(holder), "nothing cleaned up on SIGKILL");
    assert_eq!(
        t.reclaim_stale(now),
        Reclaimed {
            cores: 2,
            programs: 1
        }
    );
    assert_eq!(t.free_cores().len(), K);
    assert!(t.live_programs().is_empty());
    let status = child.0.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

#[test]
fn a_holder_that_panics_releases_its_cores_as_it_unwinds() {
    let dir = TempDir::new("panic");
    let path = dir.table();
    let t = CoreTable::open(&path, K).unwrap();
    let mut child = start_holder("panic", &path);
    let status = child.0.wait().unwrap();
    assert!(!status.success(), "the holder's test must have failed");
    // No reclaim: the holder's own drop gave everything back.
    assert_eq!(t.free_cores().len(), K);
    assert!(t.snapshot().programs.is_empty());
}
