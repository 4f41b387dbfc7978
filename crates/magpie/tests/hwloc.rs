//! The `hwloc` feature: on this machine hwloc's topology is sysfs's, restricted the same way by
//! an affinity mask and a CPU quota, and `Topology::detect` falls back to sysfs when hwloc
//! cannot load a topology of this machine. (`cargo test -p magpie --features hwloc --test hwloc`;
//! without the feature this file is empty.)
#![cfg(feature = "hwloc")]

use magpie::{Detector, Topology};
use std::path::Path;
use std::process::Command;

/// Each socket's CPUs with their NUMA nodes, and its last-level cache.
fn shape(t: &Topology) -> Vec<(Vec<(usize, usize)>, u64)> {
    t.sockets
        .iter()
        .map(|s| {
            let cores = s.cores.iter().map(|c| (c.cpu, c.numa_node)).collect();
            (cores, s.llc_bytes)
        })
        .collect()
}

/// Whether sysfs describes this machine (otherwise there is nothing to compare hwloc with).
fn have_sysfs() -> bool {
    let t = Topology::detect_sysfs();
    if t.detector != Detector::Sysfs {
        eprintln!("skipping: no sysfs topology here ({t})");
        return false;
    }
    true
}

/// The calling thread's affinity mask.
fn affinity() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set the kernel fills; we pass its exact size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Restricts the calling thread to `cpus`.
fn set_affinity(cpus: &[usize]) {
    // SAFETY: as above; the set is initialised before the call reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "sched_setaffinity({cpus:?})"
        );
    }
}

#[test]
fn hwloc_sees_the_machine_sysfs_sees() {
    if !have_sysfs() {
        return;
    }
    let hw = Topology::detect_hwloc().expect("hwloc loads this machine's topology");
    let fs = Topology::detect_sysfs();
    assert_eq!(
        (hw.detector, fs.detector),
        (Detector::Hwloc, Detector::Sysfs)
    );
    assert!(!hw.is_virtual);
    // Same sockets, same CPUs on each, same NUMA nodes; the same last-level cache sizes too,
    // since hwloc's Linux backend reads them from the same sysfs cache files.
    assert_eq!(shape(&hw), shape(&fs), "hwloc:\n{hw}sysfs:\n{fs}");
    // With the feature, detect() is hwloc's answer, and pools get it.
    assert_eq!(Topology::detect(), hw);
    let pool = magpie::Pool::builder().workers(2).build().unwrap();
    assert_eq!(pool.topology().detector, Detector::Hwloc);
    assert!(format!("{hw}").starts_with("detected topology (hwloc): "));
    // A virtual topology is mapped onto the CPUs hwloc found.
    assert_eq!(
        Topology::parse("2x2:1MiB").unwrap().detector,
        Detector::Hwloc
    );
}

#[test]
fn hwloc_and_sysfs_shrink_alike_under_an_affinity_mask() {
    if !have_sysfs() {
        return;
    }
    // In a thread of its own: the mask is the calling thread's, and detect reads that one.
    std::thread::spawn(|| {
        let all = affinity();
        assert_eq!(Topology::detect_hwloc().unwrap().cores(), all.len());
        let mut masks: Vec<Vec<usize>> = all.iter().map(|&c| vec![c]).collect();
        // Every other allowed CPU, and all but the first.
        masks.push(all.iter().copied().step_by(2).collect());
        if all.len() > 1 {
            masks.push(all[1..].to_vec());
        }
        for mask in masks {
            set_affinity(&mask);
            assert_eq!(affinity(), mask);
            let hw = Topology::detect_hwloc().unwrap();
            let fs = Topology::detect_sysfs();
            assert_eq!(shape(&hw), shape(&fs), "mask {mask:?}");
            let cpus: Vec<usize> = hw
                .sockets
                .iter()
                .flat_map(|s| s.cores.iter().map(|c| c.cpu))
                .collect();
            assert_eq!(cpus, mask, "hwloc keeps exactly the mask's CPUs");
            assert_eq!(Topology::detect(), hw);
        }
        set_affinity(&all);
    })
    .join()
    .unwrap();
}

#[test]
fn hwloc_and_sysfs_agree_on_any_cpu_list_and_quota() {
    if !have_sysfs() {
        return;
    }
    let all = affinity();
    let sys = Path::new("/sys/devices/system");
    let odd: Vec<usize> = all.iter().copied().filter(|c| c % 2 == 1).collect();
    let lists: [Option<&[usize]>; 4] = [None, Some(&all), Some(&all[..1]), Some(&odd)];
    for allowed in lists {
        for quota in [None, Some(0.1), Some(1.0), Some(1.5), Some(1000.0)] {
            let fs = Topology::detect_from(sys, allowed, quota);
            match Topology::detect_hwloc_with(allowed, quota) {
                Ok(hw) => assert_eq!(shape(&hw), shape(&fs), "{allowed:?} {quota:?}"),
                // Only when no CPU is left, where sysfs's answer is its fallback.
                Err(e) => assert_eq!(fs.detector, Detector::Fallback, "{e}"),
            }
        }
    }
    assert!(Topology::detect_hwloc_with(Some(&[usize::MAX - 1]), None)
        .unwrap_err()
        .to_string()
        .contains("none of its"));
}

/// Runs test `name` of this binary again in a child process with `env` set, and checks that it
/// ran and passed there.
fn in_child(name: &str, env: &[(&str, &str)]) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("MAGPIE_HWLOC_TEST_CHILD", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name} with {env:?}:\n{text}");
    assert!(text.contains("1 passed"), "{name} did not run:\n{text}");
}

fn is_child() -> bool {
    std::env::var_os("MAGPIE_HWLOC_TEST_CHILD").is_some()
}

/// In a child where hwloc cannot load or describes another machine: detect falls back to sysfs.
#[test]
fn detect_falls_back_to_sysfs_when_hwloc_fails() {
    if !is_child() {
        // No discovery component at all: hwloc_topology_load fails.
        in_child(
            "detect_falls_back_to_sysfs_when_hwloc_fails",
            &[("HWLOC_COMPONENTS", "stop")],
        );
        // A synthetic machine loads, but it is not this one.
        in_child(
            "detect_falls_back_to_sysfs_when_hwloc_fails",
            &[("HWLOC_SYNTHETIC", "pack:4 core:4 pu:1")],
        );
        return;
    }
    let e = Topology::detect_hwloc().unwrap_err().to_string();
    assert!(e.contains("hwloc"), "{e}");
    eprintln!("hwloc failed as planned: {e}");
    let t = Topology::detect();
    assert_eq!(t, Topology::detect_sysfs());
    assert_ne!(t.detector, Detector::Hwloc);
    let pool = magpie::Pool::builder().workers(2).build().unwrap();
    assert_eq!(pool.topology(), &t);
}
