//! Pools that share cores with other programs (DWS, Chen et al.; `Builder::share`): every mode
//! computes the right answers; under DWS an idle pool sleeps and holds no core, a pool never runs
//! on a core another program holds and has not released, takes back its own home core from a
//! program that borrowed it, and never starves; a SIGKILLed holder's cores are reclaimed; a
//! table it cannot use leaves the pool running without sharing; EP keeps a pool on its share.
//!
//! The "other program" is a real process (`sleep`) whose identity the test writes into the
//! table and keeps beating, so the pool sees a live co-runner. Where the machine has one CPU the
//! tests that need two cores say so and return. No assertion depends on timing; waits for the
//! coordinator are bounded by generous deadlines and fail with what they saw.

#![cfg(not(loom))]

use magpie::dws::{cpu_slots, CoreTable, ProgramId, SharingMode};
use magpie::Pool;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/temp_dir.rs"]
mod temp_dir;
use temp_dir::TempDir;

/// Another program: a `sleep` process, registered in the table under its own identity and kept
/// beating by a thread until dropped (then killed and reaped).
struct Other {
    child: Child,
    id: ProgramId,
    stop: Arc<AtomicBool>,
    beater: Option<std::thread::JoinHandle<()>>,
}

impl Other {
    fn start(table: &Path) -> Other {
        let child = Command::new("sleep").arg("600").spawn().unwrap();
        let id = ProgramId::of(child.id()).expect("the child runs");
        let t = CoreTable::open(table, cpu_slots()).unwrap();
        t.register(id).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let path = table.to_path_buf();
        let beater = std::thread::spawn(move || {
            let t = CoreTable::open(&path, cpu_slots()).unwrap();
            while !s.load(Ordering::SeqCst) {
                t.beat(id);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Other {
            child,
            id,
            stop,
            beater: Some(beater),
        }
    }
}

impl Drop for Other {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(b) = self.beater.take() {
            let _ = b.join();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (bounded) until `cond` holds; panics with `what` otherwise.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A job of 2^depth leaves, each busy for a few microseconds; counts the leaves that ran on
/// each CPU (by `sched_getcpu`) and returns the number of leaves.
fn leaves(depth: u32, on_cpu: &[AtomicUsize]) -> u64 {
    if depth == 0 {
        let mut x = 0u64;
        for i in 0..2000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        std::hint::black_box(x);
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 && (cpu as usize) < on_cpu.len() {
            on_cpu[cpu as usize].fetch_add(1, Ordering::Relaxed);
        }
        return 1;
    }
    let (a, b) = magpie::join(|| leaves(depth - 1, on_cpu), || leaves(depth - 1, on_cpu));
    a + b
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn counters() -> Vec<AtomicUsize> {
    (0..cpu_slots()).map(|_| AtomicUsize::new(0)).collect()
}

fn pool(mode: SharingMode, table: &Path, workers: usize) -> Pool {
    Pool::builder()
        .workers(workers)
        .share(mode)
        .share_table(table)
        .build()
        .unwrap()
}

/// The machine's CPUs this process may use, if there are at least two (the multi-program tests
/// need one core for each program).
fn two_cpus() -> Option<Vec<usize>> {
    let t = magpie::Topology::detect();
    let cpus: Vec<usize> = t
        .sockets
        .iter()
        .flat_map(|s| s.cores.iter().map(|c| c.cpu))
        .collect();
    if cpus.len() < 2 {
        eprintln!("skipped: this test needs two CPUs, the process may use {cpus:?}");
        return None;
    }
    Some(cpus)
}

#[test]
fn every_mode_computes_the_right_answers() {
    let dir = TempDir::new("answers");
    for mode in SharingMode::ALL {
        for workers in [1, 2, 5] {
            let p = pool(mode, &dir.table(), workers);
            assert_eq!(p.share_mode(), mode);
            for _ in 0..3 {
                assert_eq!(
                    p.install(|| fib(22)),
                    17711,
                    "{mode} with {workers} workers"
                );
            }
            let c = counters();
            assert_eq!(p.install(|| leaves(10, &c)), 1024, "{mode}");
            assert_eq!(
                c.iter().map(|x| x.load(Ordering::Relaxed)).sum::<usize>(),
                1024
            );
        }
    }
}

#[test]
fn modes_parse_from_the_environment_names() {
    for m in SharingMode::ALL {
        assert_eq!(m.name().parse::<SharingMode>(), Ok(m));
        assert_eq!(m.name().to_uppercase().parse::<SharingMode>(), Ok(m));
    }
    let e = "cilk".parse::<SharingMode>().unwrap_err();
    assert!(e.contains("dws, abp, ep, off"), "{e}");
}

#[test]
fn an_idle_dws_pool_sleeps_and_holds_no_core() {
    let dir = TempDir::new("idle");
    let p = pool(SharingMode::Dws, &dir.table(), 2);
    let t = CoreTable::open(&dir.table(), cpu_slots()).unwrap();
    let me = ProgramId::me().unwrap();
    // While it runs, the worker running the job holds its core.
    let held = p.install(|| t.held_by(me));
    assert!(!held.is_empty(), "a running DWS pool holds its core");
    assert_eq!(p.install(|| fib(20)), 6765);
    wait_for("both workers asleep with no core held", || {
        p.sleeping_workers() == 2 && t.held_by(me).is_empty()
    });
    // Still registered (alive, beating), so others count it in the split.
    assert!(t.live_programs().contains(&me));
    drop(p);
    assert!(
        !t.live_programs().contains(&me),
        "a dropped pool unregisters"
    );
}

#[test]
fn abp_workers_yield_but_never_sleep() {
    let dir = TempDir::new("abp");
    let p = pool(SharingMode::Abp, &dir.table(), 2);
    assert_eq!(p.install(|| fib(20)), 6765);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(p.sleeping_workers(), 0);
    // ABP does not use the table at all.
    let t = CoreTable::open(&dir.table(), cpu_slots()).unwrap();
    assert!(t.live_programs().is_empty());
}

#[test]
fn dws_never_runs_on_a_core_another_program_holds() {
    let Some(_) = two_cpus() else { return };
    let dir = TempDir::new("held");
    let other = Other::start(&dir.table());
    let t = CoreTable::open(&dir.table(), cpu_slots()).unwrap();
    let p = pool(SharingMode::Dws, &dir.table(), 2);
    let me = ProgramId::me().unwrap();
    // Let the pool settle into the split (it holds its home core, maybe) and fall asleep, then
    // the other program takes every core the pool does not hold.
    wait_for("the pool asleep", || p.sleeping_workers() == 2);
    let theirs: Vec<usize> = (0..t.cores())
        .filter(|&c| t.owner(c) != Some(me) && t.try_claim(c, other.id))
        .collect();
    let others_home = t.home_cores(other.id).unwrap();
    let c = counters();
    for _ in 0..5 {
        assert_eq!(p.install(|| leaves(12, &c)), 4096);
    }
    // Of the cores it took, those of its own share stay the other program's (the pool may
    // take back only its own share) and the pool never ran there.
    for &cpu in theirs.iter().filter(|&c| others_home.contains(c)) {
        assert_eq!(
            t.owner(cpu),
            Some(other.id),
            "the other program keeps cpu {cpu}"
        );
        assert_eq!(
            c[cpu].load(Ordering::Relaxed),
            0,
            "a leaf ran on cpu {cpu}, which the other program holds in its own share"
        );
    }
    assert!(theirs.iter().any(|c| others_home.contains(c)));
}

#[test]
fn dws_takes_back_its_home_core_from_a_borrower() {
    let Some(_) = two_cpus() else { return };
    let dir = TempDir::new("takeback");
    let other = Other::start(&dir.table());
    let t = CoreTable::open(&dir.table(), cpu_slots()).unwrap();
    let p = pool(SharingMode::Dws, &dir.table(), 2);
    let me = ProgramId::me().unwrap();
    let home = t.home_cores(me).unwrap();
    assert!(
        !home.is_empty(),
        "two programs on two or more cores each get one"
    );
    wait_for("the pool asleep", || p.sleeping_workers() == 2);
    // The other program borrows every core, the pool's home included.
    for c in 0..t.cores() {
        if !t.try_claim(c, other.id) {
            let o = t.owner(c).unwrap();
            assert!(t.take_over(c, o, other.id));
        }
    }
    let c = counters();
    let held = p.install(|| {
        assert_eq!(leaves(12, &c), 4096);
        t.held_by(me)
    });
    assert!(
        !held.is_empty() && held.iter().all(|c| home.contains(c)),
        "{held:?}"
    );
    // The pool ran, and only on cores of its own share.
    let ran: Vec<usize> = (0..c.len())
        .filter(|&i| c[i].load(Ordering::Relaxed) > 0)
        .collect();
    assert!(!ran.is_empty());
    for cpu in ran {
        assert!(
            home.contains(&cpu),
            "ran on cpu {cpu}, outside its share {home:?}"
        );
    }
    for cpu in (0..t.cores()).filter(|c| !home.contains(c)) {
        assert_eq!(
            t.owner(cpu),
            Some(other.id),
            "cpu {cpu} was not the pool's to take"
        );
    }
}

#[test]
fn dws_without_any_core_to_take_still_finishes_its_work() {
    let Some(_) = two_cpus() else { return };
    let dir = TempDir::new("starve");
    // As many other programs as cores: the pool's share may be empty, and they hold every core.
    let others: Vec<Other> = (0..cpu_slots())
        .map(|_| Other::start(&dir.table()))
        .collect();
    let t = CoreTable::open(&dir.table(), cpu_slots()).unwrap();
    let p = pool(SharingMode::Dws, &dir.table(), 2);
    let me = ProgramId::me().unwrap();
    wait_for("the pool asleep", || p.sleeping_workers() == 2);
    for (c, o) in (0..t.cores()).zip(others.iter().cycle()) {
        if !t.try_claim(c, o.id) {
            let holder = t.owner(c).unwrap();
            assert!(t.take_over(c, holder, o.id));
        }
    }
    // On a thread, so that a starving pool fails the test instead of hanging it.
    let p = Arc::new(p);
    let (tx, rx) = std::sync::mpsc::channel();
    let q = p.clone();
    std::thread::spawn(move || {
        let c = counters();
        let _ = tx.send((q.install(|| fib(22)), q.install(|| leaves(10, &c))));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(r) => assert_eq!(r, (17711, 1024)),
        Err(_) => panic!("the pool starved: no result within 60 s"),
    }
    let home = t.home_cores(me).unwrap();
    for cpu in (0..t.cores()).filter(|c| !home.contains(c)) {
        assert_ne!(
            t.owner(cpu),
            Some(me),
            "cpu {cpu} is not in the pool's share"
        );
    }
}

#[test]
fn dws_reclaims_the_cores_of_a_killed_holder() {
    let Some(_) = two_cpus() else { return };
    let dir = TempDir::new("killed");
    let mut child = Command::new("sleep").arg("600").spawn().unwrap();
    let dead = ProgramId::of(child.id()).unwrap();
    let t = CoreTable::open(&dir.table(), cpu_slots()).unwrap();
    t.register(dead).unwrap();
    for c in 0..t.cores() {
        assert!(t.try_claim(c, dead));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let p = pool(SharingMode::Dws, &dir.table(), 2);
    let me = ProgramId::me().unwrap();
    wait_for("the killed holder's cores reclaimed", || {
        t.held_by(dead).is_empty() && !t.live_programs().contains(&dead)
    });
    let held = p.install(|| {
        let c = counters();
        assert_eq!(leaves(10, &c), 1024);
        t.held_by(me)
    });
    assert!(!held.is_empty(), "the pool runs on a reclaimed core");
}

#[test]
fn a_table_the_pool_cannot_use_leaves_it_running_without_sharing() {
    let dir = TempDir::new("bad");
    std::fs::write(dir.table(), vec![0u8; 4096]).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.table(), std::fs::Permissions::from_mode(0o600)).unwrap();
    for mode in [SharingMode::Dws, SharingMode::Ep] {
        let p = pool(mode, &dir.table(), 2);
        assert_eq!(p.share_mode(), SharingMode::Off, "{mode} falls back to off");
        assert_eq!(p.install(|| fib(20)), 6765);
    }
    assert_eq!(
        std::fs::read(dir.table()).unwrap(),
        vec![0u8; 4096],
        "left alone"
    );
    // ABP needs no table.
    let p = pool(SharingMode::Abp, &dir.table(), 2);
    assert_eq!(p.share_mode(), SharingMode::Abp);
}

#[test]
fn ep_keeps_the_pool_on_its_share() {
    let Some(_) = two_cpus() else { return };
    let dir = TempDir::new("ep");
    let other = Other::start(&dir.table());
    let t = CoreTable::open(&dir.table(), cpu_slots()).unwrap();
    let p = pool(SharingMode::Ep, &dir.table(), 2);
    let me = ProgramId::me().unwrap();
    let home = t.home_cores(me).unwrap();
    wait_for("the pool holding exactly its share", || {
        t.held_by(me) == home.clone().collect::<Vec<_>>()
    });
    let c = counters();
    for _ in 0..3 {
        assert_eq!(p.install(|| leaves(12, &c)), 4096);
    }
    for cpu in (0..c.len()).filter(|i| !home.contains(i)) {
        assert_eq!(c[cpu].load(Ordering::Relaxed), 0, "a leaf ran on cpu {cpu}");
    }
    // When the other program goes, EP splits the cores again: the pool gets them all.
    drop(other);
    wait_for("the pool holding every core", || {
        t.held_by(me).len() == t.cores()
    });
}

#[test]
fn dws_claims_only_cores_of_the_affinity_mask() {
    let Some(cpus) = two_cpus() else { return };
    let dir = TempDir::new("mask");
    let only = *cpus.last().unwrap();
    let table = dir.table();
    // On a thread of its own, restricted to one CPU before the pool is built: the pool (whose
    // threads inherit the mask) reads the mask as its machine, and the test's other threads keep
    // theirs.
    let (held, on_cpu) = std::thread::spawn(move || {
        // SAFETY: a plain bit set of the size passed; 0 names the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(only, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
        }
        let p = pool(SharingMode::Dws, &table, 2);
        let t = CoreTable::open(&table, cpu_slots()).unwrap();
        let me = ProgramId::me().unwrap();
        let c = counters();
        let held = p.install(|| {
            assert_eq!(leaves(11, &c), 2048);
            t.held_by(me)
        });
        (held, c)
    })
    .join()
    .unwrap();
    assert_eq!(held, vec![only], "the pool holds only the CPU of its mask");
    for (cpu, n) in on_cpu.iter().enumerate() {
        if cpu != only {
            assert_eq!(n.load(Ordering::Relaxed), 0, "a leaf ran on cpu {cpu}");
        }
    }
}
