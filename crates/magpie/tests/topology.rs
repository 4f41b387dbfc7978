//! Topology as a pool sees it: the default is the detected machine, a virtual one can be given,
//! and pinned workers run on their core's CPU.

use magpie::{Pool, Topology};
use std::sync::Mutex;

/// The CPUs the calling thread may run on, from `/proc/thread-self/status`.
fn my_cpus() -> String {
    let s = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn default_topology_is_the_detected_machine() {
    let pool = Pool::builder().workers(2).build().unwrap();
    assert_eq!(pool.topology(), &Topology::detect());
    assert!(!pool.topology().is_virtual);
    assert!(pool.topology().cores() >= 1);
}

#[test]
fn pinned_workers_run_on_their_cores() {
    let topo = Topology::parse("2x2:4MiB").unwrap();
    let pool = Pool::builder()
        .workers(4)
        .topology(topo.clone())
        .pin(true)
        .build()
        .unwrap();
    assert_eq!(pool.topology(), &topo);
    let seen = Mutex::new(Vec::new());
    pool.install(|| {
        magpie::scope(|s| {
            for _ in 0..64 {
                s.spawn_with(magpie::Policy::HelpFirst, |_| {
                    let w = magpie::worker_index().unwrap();
                    seen.lock().unwrap().push((w, my_cpus()));
                    std::thread::sleep(std::time::Duration::from_micros(200));
                });
            }
        })
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 64);
    for (w, cpus) in seen {
        assert_eq!(cpus, topo.core_of_worker(w).cpu.to_string(), "worker {w}");
    }
}
