//! The machine a pool runs on: sockets, their cores, each socket's last-level cache, NUMA nodes.
//!
//! CAB (§III-A) groups workers by socket and sizes its boundary level from the sockets' count and
//! their shared last-level cache; SLAW's places (§IV) map workers to groups of cores. Both need
//! this picture. [`Topology::detect`] reads it from Linux (sysfs), keeping only the CPUs the
//! process may run on (its affinity mask) and no more of them than its cgroup CPU quota pays for.
//! With the `hwloc` cargo feature it asks the hwloc library instead
//! (`Topology::detect_hwloc`), restricted the same way, and falls back to sysfs when hwloc
//! cannot load the machine's topology; [`Topology::detector`] says which one answered.
//! [`Topology::parse`] builds a *virtual* topology, `SOCKETSxCORES:LLC` (`4x4:6MiB`), for tests
//! and experiments; its cores are mapped onto the CPUs that exist, round robin, so a 4×4 machine
//! can be modelled on 2 cores (the cache model needs no more).

use crate::error::Error;
use std::fmt;
use std::path::Path;

/// How a thief picks its victims.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Victims {
    /// Every other worker, in a random order (the default).
    #[default]
    Random,
    /// Nearest first: the workers on the same socket (the same last-level cache), then those on
    /// the same NUMA node, then the rest; random within each.
    Numa,
}

impl std::str::FromStr for Victims {
    type Err = String;
    fn from_str(s: &str) -> Result<Victims, String> {
        match s {
            "random" => Ok(Victims::Random),
            "numa" => Ok(Victims::Numa),
            _ => Err(format!(
                "unknown victim selection `{s}`: expected random or numa"
            )),
        }
    }
}

/// One core: the operating system's CPU number it runs on (for a virtual topology, the CPU it is
/// mapped to) and its NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    /// The CPU number (as in `/sys/devices/system/cpu/cpuN`).
    pub cpu: usize,
    /// The NUMA node of the CPU.
    pub numa_node: usize,
}

/// One socket: its cores and the last-level cache they share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Socket {
    /// The cores, in CPU order.
    pub cores: Vec<Core>,
    /// Bytes of the last-level cache the socket's cores share (0 when unknown).
    pub llc_bytes: u64,
}

/// The machine's sockets and cores, as detected or as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// The sockets, each with at least one core.
    pub sockets: Vec<Socket>,
    /// Whether this topology was given (`parse`) rather than detected.
    pub is_virtual: bool,
    /// What detected the CPUs: for a virtual topology, the machine's CPUs its cores are mapped
    /// onto.
    pub detector: Detector,
}

/// What [`Topology::detect`] read the machine from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Detector {
    /// Linux's sysfs (`/sys/devices/system`): [`Topology::detect_sysfs`].
    Sysfs,
    /// The hwloc library (the `hwloc` cargo feature): `Topology::detect_hwloc`.
    Hwloc,
    /// Neither: no sysfs CPU list (or none of its CPUs allowed), so one socket of
    /// `available_parallelism` cores, numbered from 0, with an unknown cache.
    Fallback,
}

impl fmt::Display for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Detector::Sysfs => "sysfs",
            Detector::Hwloc => "hwloc",
            Detector::Fallback => "fallback",
        })
    }
}

impl Topology {
    /// The topology of this machine as far as this process may use it: its sockets, their CPUs
    /// and last-level caches and the CPUs' NUMA nodes, restricted to the process's affinity mask
    /// (the calling thread's, as `sched_getaffinity` reports it) and to as many CPUs as its cgroup
    /// CPU quota allows (rounded up, the lowest-numbered first).
    ///
    /// Without the `hwloc` feature this is [`detect_sysfs`](Self::detect_sysfs). With it, this
    /// is `detect_hwloc`, or `detect_sysfs` if hwloc fails; it never panics.
    /// [`detector`](Self::detector) says which one answered.
    pub fn detect() -> Topology {
        #[cfg(feature = "hwloc")]
        if let Ok(t) = Topology::detect_hwloc() {
            return t;
        }
        Topology::detect_sysfs()
    }

    /// [`detect`](Self::detect) from sysfs: the sockets by `physical_package_id`, each socket's
    /// last-level cache (the largest highest-level data or unified cache of its CPUs) and the
    /// NUMA nodes from `node/nodeN/cpulist`. Without sysfs (or with none of its CPUs allowed),
    /// one socket of `available_parallelism` cores with an unknown cache
    /// ([`Detector::Fallback`]).
    pub fn detect_sysfs() -> Topology {
        let allowed = affinity();
        let quota = cgroup_quota(Path::new("/"));
        Topology::detect_from(Path::new("/sys/devices/system"), allowed.as_deref(), quota)
    }

    /// [`detect_sysfs`](Self::detect_sysfs) from a sysfs tree at `root` (`root/cpu/cpuN/...`,
    /// `root/node/nodeN/cpulist`), with the CPUs the process may use (`None`: all online) and a
    /// CPU quota in cores.
    pub fn detect_from(root: &Path, allowed: Option<&[usize]>, quota: Option<f64>) -> Topology {
        let online = read(&root.join("cpu/online"))
            .and_then(|s| parse_cpu_list(&s))
            .unwrap_or_default();
        let cpus = restrict(online, allowed, quota);
        if cpus.is_empty() {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            return Topology {
                sockets: vec![Socket {
                    cores: (0..n).map(|cpu| Core { cpu, numa_node: 0 }).collect(),
                    llc_bytes: 0,
                }],
                is_virtual: false,
                detector: Detector::Fallback,
            };
        }
        let numa = numa_nodes(root);
        let sockets = group_into_sockets(&cpus, |cpu| {
            let dir = root.join(format!("cpu/cpu{cpu}"));
            let pkg = read(&dir.join("topology/physical_package_id"))
                .and_then(|s| s.trim().parse::<u64>().ok())
                .unwrap_or(0);
            let node = numa
                .iter()
                .find(|(_, cs)| cs.contains(&cpu))
                .map_or(0, |(n, _)| *n);
            (pkg, last_level_cache(&dir), node)
        });
        Topology {
            sockets,
            is_virtual: false,
            detector: Detector::Sysfs,
        }
    }

    /// [`detect`](Self::detect) with the hwloc library (v2): its packages are the sockets, its
    /// PUs (logical processors, as sysfs's CPUs) the cores, each socket's last-level cache the
    /// largest highest-level data or unified cache above its PUs, and a PU's NUMA node the
    /// lowest-numbered NUMA node whose CPU set holds it; restricted to the affinity mask and
    /// cgroup CPU quota exactly as [`detect_sysfs`](Self::detect_sysfs) is. hwloc is asked to
    /// keep what the cgroup's cpuset disallows, as sysfs shows it; the affinity mask (which the
    /// cpuset bounds) then restricts it. hwloc's own environment variables apply
    /// (`HWLOC_COMPONENTS`, `HWLOC_XMLFILE` with `HWLOC_THISSYSTEM=1`, ...).
    ///
    /// An error ([`Error::Os`]) when hwloc cannot load the topology, loads one that is not this
    /// machine's (an XML file or synthetic description not marked `HWLOC_THISSYSTEM=1`) or sees
    /// none of the allowed CPUs; [`detect`](Self::detect) then falls back to sysfs. Loading
    /// takes a few milliseconds (sysfs: a fraction of one); `detect` runs once per pool built.
    #[cfg(feature = "hwloc")]
    pub fn detect_hwloc() -> Result<Topology, Error> {
        let allowed = affinity();
        let quota = cgroup_quota(Path::new("/"));
        Topology::detect_hwloc_with(allowed.as_deref(), quota)
    }

    /// [`detect_hwloc`](Self::detect_hwloc) with the CPUs the process may use (`None`: all that
    /// hwloc sees) and a CPU quota in cores given, as [`detect_from`](Self::detect_from) takes
    /// them.
    #[cfg(feature = "hwloc")]
    pub fn detect_hwloc_with(
        allowed: Option<&[usize]>,
        quota: Option<f64>,
    ) -> Result<Topology, Error> {
        hwloc::detect(allowed, quota)
    }

    /// A virtual topology from `SOCKETSxCORES:LLC` (`4x4:6MiB`: 4 sockets of 4 cores, each
    /// socket with a 6 MiB last-level cache; sizes take B, KiB, MiB, GiB, KB, MB or GB). Its
    /// cores are mapped round robin onto the CPUs this process may use; socket `s` is NUMA node
    /// `s`.
    pub fn parse(spec: &str) -> Result<Topology, Error> {
        let bad = || {
            Error::config(
                "topology",
                spec,
                "SOCKETSxCORES:LLC with whole numbers ≥ 1 and a cache size, e.g. 4x4:6MiB",
            )
        };
        let (shape, llc) = spec.trim().split_once(':').ok_or_else(bad)?;
        let (s, c) = shape.split_once(['x', 'X']).ok_or_else(bad)?;
        let sockets: usize = s.trim().parse().map_err(|_| bad())?;
        let cores: usize = c.trim().parse().map_err(|_| bad())?;
        let llc_bytes = parse_size(llc).ok_or_else(bad)?;
        if sockets == 0 || cores == 0 || llc_bytes == 0 || sockets * cores > 4096 {
            return Err(bad());
        }
        let real = Topology::detect();
        let cpus: Vec<usize> = real
            .sockets
            .iter()
            .flat_map(|s| s.cores.iter().map(|c| c.cpu))
            .collect();
        Ok(Topology {
            sockets: (0..sockets)
                .map(|s| Socket {
                    cores: (0..cores)
                        .map(|c| Core {
                            cpu: cpus[(s * cores + c) % cpus.len()],
                            numa_node: s,
                        })
                        .collect(),
                    llc_bytes,
                })
                .collect(),
            is_virtual: true,
            detector: real.detector,
        })
    }

    /// Number of cores over all sockets.
    pub fn cores(&self) -> usize {
        self.sockets.iter().map(|s| s.cores.len()).sum()
    }

    /// The socket of core `i`, cores numbered socket by socket.
    pub fn socket_of(&self, i: usize) -> usize {
        let mut i = i % self.cores().max(1);
        for (s, sock) in self.sockets.iter().enumerate() {
            if i < sock.cores.len() {
                return s;
            }
            i -= sock.cores.len();
        }
        0
    }

    /// The core that worker `w` of a pool runs on: workers fill the cores in order, wrapping
    /// round when there are more workers than cores.
    pub fn core_of_worker(&self, w: usize) -> &Core {
        let mut i = w % self.cores().max(1);
        for sock in &self.sockets {
            if i < sock.cores.len() {
                return &sock.cores[i];
            }
            i -= sock.cores.len();
        }
        &self.sockets[0].cores[0]
    }
}

impl Topology {
    /// For worker `me` of a pool of `workers`: the other workers on the same socket, those on
    /// the same NUMA node but another socket, and the rest (worker `w` on core `w`, wrapping).
    pub fn victim_tiers(&self, me: usize, workers: usize) -> [Vec<usize>; 3] {
        crate::registry::tiers_by_distance(me, &self.locations(workers))
    }

    /// Each of `workers` workers' `(socket, NUMA node)` (worker `w` on core `w`, wrapping).
    pub(crate) fn locations(&self, workers: usize) -> Vec<(usize, usize)> {
        (0..workers)
            .map(|w| (self.socket_of(w), self.core_of_worker(w).numa_node))
            .collect()
    }
}

impl Topology {
    /// CAB's boundary level, Eq. 4: `max(⌈log_B M + 1⌉, ⌈log_B(S_d/S_c) + 1⌉)` for M sockets with
    /// S_c bytes of last-level cache each (the first socket's; an unknown size drops that term),
    /// data of `data_bytes` (S_d) split `branching` (B, at least 2) ways per level: the smallest
    /// level L ≥ 1 with B^(L-1) ≥ M and S_d ≤ S_c · B^(L-1), computed in integers. One socket
    /// has no inter-socket tier: 0.
    pub fn boundary_level(&self, data_bytes: u64, branching: u32) -> u32 {
        let m = self.sockets.len() as u128;
        if m <= 1 {
            return 0;
        }
        let b = branching.max(2) as u128;
        let sc = self.sockets[0].llc_bytes as u128;
        let (mut level, mut tasks) = (1u32, 1u128);
        while tasks < m || (sc > 0 && (data_bytes as u128) > sc * tasks) {
            level += 1;
            tasks *= b;
        }
        level
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_virtual {
            write!(f, "virtual topology")?;
        } else {
            write!(f, "detected topology ({})", self.detector)?;
        }
        writeln!(
            f,
            ": {} socket(s), {} core(s)",
            self.sockets.len(),
            self.cores()
        )?;
        for (i, s) in self.sockets.iter().enumerate() {
            let cpus: Vec<String> = s.cores.iter().map(|c| c.cpu.to_string()).collect();
            let nodes: std::collections::BTreeSet<usize> =
                s.cores.iter().map(|c| c.numa_node).collect();
            writeln!(
                f,
                "  socket {i}: {} core(s) on CPUs {}; last-level cache {}; NUMA node(s) {:?}",
                s.cores.len(),
                cpus.join(","),
                if s.llc_bytes == 0 {
                    "unknown".to_string()
                } else {
                    format_size(s.llc_bytes)
                },
                nodes
            )?;
        }
        Ok(())
    }
}

/// `6MiB`-style text for a byte count.
pub fn format_size(b: u64) -> String {
    match b {
        _ if b >= 1 << 30 && b.is_multiple_of(1 << 30) => format!("{}GiB", b >> 30),
        _ if b >= 1 << 20 && b.is_multiple_of(1 << 20) => format!("{}MiB", b >> 20),
        _ if b >= 1 << 10 && b.is_multiple_of(1 << 10) => format!("{}KiB", b >> 10),
        _ => format!("{b}B"),
    }
}

/// Parses `6MiB`, `512 KiB`, `32MB`, `1048576` (bytes).
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// The CPUs of `online` the process may use, in ascending order: those in `allowed` (`None`:
/// all), then only as many as a CPU quota of `quota` cores pays for (rounded up, at least one).
fn restrict(mut online: Vec<usize>, allowed: Option<&[usize]>, quota: Option<f64>) -> Vec<usize> {
    online.sort_unstable();
    online.dedup();
    online.retain(|c| allowed.is_none_or(|a| a.contains(c)));
    if let Some(q) = quota {
        online.truncate((q.ceil() as usize).max(1));
    }
    online
}

/// Sockets from `cpus`, given each CPU's package (any key that tells packages apart), the
/// bytes of its last-level cache and its NUMA node: sockets in order of their first CPU, each
/// with the largest cache its CPUs report.
fn group_into_sockets(
    cpus: &[usize],
    mut place: impl FnMut(usize) -> (u64, u64, usize),
) -> Vec<Socket> {
    let mut ids: Vec<u64> = Vec::new();
    let mut sockets: Vec<Socket> = Vec::new();
    for &cpu in cpus {
        let (pkg, llc, numa_node) = place(cpu);
        let i = match ids.iter().position(|&p| p == pkg) {
            Some(i) => i,
            None => {
                ids.push(pkg);
                sockets.push(Socket {
                    cores: Vec::new(),
                    llc_bytes: 0,
                });
                ids.len() - 1
            }
        };
        let s = &mut sockets[i];
        s.llc_bytes = s.llc_bytes.max(llc);
        s.cores.push(Core { cpu, numa_node });
    }
    sockets
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

/// Parses a kernel CPU list (`0-3,8,10-11`).
pub(crate) fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                v.extend(a..=b);
            }
            None => v.push(part.parse().ok()?),
        }
    }
    Some(v)
}

/// Bytes of the highest-level unified (or data) cache of a CPU, from its `cache/indexN`.
fn last_level_cache(cpu_dir: &Path) -> u64 {
    let mut best = (0u32, 0u64);
    for i in 0..16 {
        let d = cpu_dir.join(format!("cache/index{i}"));
        let Some(level) = read(&d.join("level")).and_then(|s| s.trim().parse::<u32>().ok()) else {
            continue;
        };
        if read(&d.join("type")).is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let size = read(&d.join("size"))
            .and_then(|s| parse_size(&s))
            .unwrap_or(0);
        if level > best.0 || (level == best.0 && size > best.1) {
            best = (level, size);
        }
    }
    best.1
}

/// NUMA nodes and their CPUs, from `root/node/nodeN/cpulist`.
fn numa_nodes(root: &Path) -> Vec<(usize, Vec<usize>)> {
    let Ok(entries) = std::fs::read_dir(root.join("node")) else {
        return Vec::new();
    };
    let mut v: Vec<(usize, Vec<usize>)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let n: usize = e.file_name().to_str()?.strip_prefix("node")?.parse().ok()?;
            let cpus = read(&e.path().join("cpulist")).and_then(|s| parse_cpu_list(&s))?;
            Some((n, cpus))
        })
        .collect();
    v.sort();
    v
}

/// The CPUs this process may run on (its affinity mask), if the kernel says. Linux only: other
/// systems have no sysfs either, and the topology falls back to `available_parallelism`.
#[cfg(not(target_os = "linux"))]
fn affinity() -> Option<Vec<usize>> {
    None
}

/// The CPUs this process may run on (its affinity mask), if the kernel says.
#[cfg(target_os = "linux")]
fn affinity() -> Option<Vec<usize>> {
    // SAFETY: `set` is a plain bit set the kernel fills; we pass its exact size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect(),
        )
    }
}

/// The process's cgroup CPU quota in cores, if it has one: cgroup v2 `cpu.max` (`QUOTA PERIOD`)
/// or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, for the cgroup `/proc/self/cgroup` names,
/// under `root/sys/fs/cgroup`.
fn cgroup_quota(root: &Path) -> Option<f64> {
    let groups = read(&root.join("proc/self/cgroup"))?;
    let base = root.join("sys/fs/cgroup");
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if ctrl.is_empty() {
            if let Some(q) = read(&base.join(path).join("cpu.max")).and_then(|s| quota_v2(&s)) {
                return Some(q);
            }
        } else if ctrl.split(',').any(|c| c == "cpu") {
            let dir = base.join("cpu").join(path);
            let q = read(&dir.join("cpu.cfs_quota_us")).and_then(|s| s.trim().parse::<i64>().ok());
            let p = read(&dir.join("cpu.cfs_period_us")).and_then(|s| s.trim().parse::<i64>().ok());
            if let (Some(q), Some(p)) = (q, p) {
                if q > 0 && p > 0 {
                    return Some(q as f64 / p as f64);
                }
            }
        }
    }
    None
}

/// `cpu.max`: `max PERIOD` (no quota) or `QUOTA PERIOD`.
fn quota_v2(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let q: f64 = it.next()?.parse().ok()?;
    let p: f64 = it.next()?.parse().ok()?;
    (q > 0.0 && p > 0.0).then(|| q / p)
}

/// [`Topology::detect_hwloc`]: hwloc's view of the machine, through the `hwlocality` bindings.
#[cfg(feature = "hwloc")]
mod hwloc {
    use super::{group_into_sockets, restrict, Detector, Error, Topology};
    use hwlocality::object::attributes::ObjectAttributes;
    use hwlocality::object::types::ObjectType;
    use hwlocality::object::TopologyObject;
    use hwlocality::topology::builder::BuildFlags;
    use std::collections::BTreeMap;

    /// Loads this machine's topology and reads it as [`Topology::detect_hwloc_with`] says.
    /// hwlocality `expect`s a few invariants of hwloc's answers; a broken one is an error here,
    /// not a panic that leaves `detect`.
    pub(super) fn detect(allowed: Option<&[usize]>, quota: Option<f64>) -> Result<Topology, Error> {
        let run = || {
            let hw = load(hwlocality::Topology::builder())?;
            if !hw.is_this_system() {
                return Err(Error::Os(
                    "hwloc: its topology is not this machine's (HWLOC_XMLFILE or \
                     HWLOC_SYNTHETIC without HWLOC_THISSYSTEM=1?)"
                        .to_string(),
                ));
            }
            from_hwloc(&hw, allowed, quota)
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| Err(Error::Os("hwloc: the bindings panicked".to_string())))
    }

    /// Builds a topology, keeping what the cgroup's cpuset disallows (sysfs shows it too; the
    /// affinity mask restricts the CPUs later).
    pub(super) fn load(
        builder: hwlocality::topology::builder::TopologyBuilder,
    ) -> Result<hwlocality::Topology, Error> {
        let err = |e: &dyn std::fmt::Display| Error::Os(format!("hwloc: {e}"));
        builder
            .with_flags(BuildFlags::INCLUDE_DISALLOWED)
            .map_err(|e| err(&e))?
            .build()
            .map_err(|e| err(&e))
    }

    /// The sockets of a loaded hwloc topology, its PUs restricted as [`restrict`] does.
    pub(super) fn from_hwloc(
        hw: &hwlocality::Topology,
        allowed: Option<&[usize]>,
        quota: Option<f64>,
    ) -> Result<Topology, Error> {
        // The PUs by OS index (sysfs's CPU number).
        let pus: BTreeMap<usize, &TopologyObject> = hw
            .objects_with_type(ObjectType::PU)
            .filter_map(|pu| Some((pu.os_index()?, pu)))
            .collect();
        let cpus = restrict(pus.keys().copied().collect(), allowed, quota);
        if cpus.is_empty() {
            return Err(Error::Os(format!(
                "hwloc: none of its {} PU(s) is among the CPUs this process may use",
                pus.len()
            )));
        }
        // NUMA nodes by OS index, lowest first, with the CPUs near them.
        let mut nodes: Vec<(usize, &TopologyObject)> = hw
            .objects_with_type(ObjectType::NUMANode)
            .filter_map(|n| Some((n.os_index()?, n)))
            .collect();
        nodes.sort_by_key(|&(i, _)| i);
        let sockets = group_into_sockets(&cpus, |cpu| {
            let pu = pus[&cpu];
            // No package object (some platforms): all PUs on one socket, as sysfs's default
            // package id 0 puts them.
            let pkg = pu
                .first_ancestor_with_type(ObjectType::Package)
                .map_or(0, |p| p.global_persistent_index());
            let node = nodes
                .iter()
                .find(|(_, n)| n.cpuset().is_some_and(|set| set.is_set(cpu)))
                .map_or(0, |&(i, _)| i);
            (pkg, last_level_cache(pu), node)
        });
        Ok(Topology {
            sockets,
            is_virtual: false,
            detector: Detector::Hwloc,
        })
    }

    /// Bytes of the highest-level data or unified CPU cache above a PU (0 when unknown), as
    /// sysfs's `last_level_cache` picks it: highest level first, then largest.
    fn last_level_cache(pu: &TopologyObject) -> u64 {
        let mut best = (0usize, 0u64);
        for obj in pu.ancestors() {
            if !obj.object_type().is_cpu_data_cache() {
                continue;
            }
            if let Some(ObjectAttributes::Cache(c)) = obj.attributes() {
                let size = c.size().map_or(0, |s| s.get());
                if c.depth() > best.0 || (c.depth() == best.0 && size > best.1) {
                    best = (c.depth(), size);
                }
            }
        }
        best.1
    }
}

impl crate::Pool {
    /// The machine as the pool sees it ([`Builder::topology`](crate::Builder::topology)).
    pub fn topology(&self) -> &Topology {
        self.registry()
            .extensions
            .get::<Topology>()
            .expect("the builder gives every pool its topology")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A fake sysfs: 2 sockets × 2 cores (CPUs 0,1 on package 0 with 8 MiB L3; 2,3 on package 1
    /// with 16 MiB), NUMA nodes 0 and 1.
    fn fake(root: &Path) {
        write(root, "cpu/online", "0-3\n");
        for cpu in 0..4 {
            let pkg = cpu / 2;
            let d = format!("cpu/cpu{cpu}");
            write(
                root,
                &format!("{d}/topology/physical_package_id"),
                &format!("{pkg}\n"),
            );
            for (i, (level, ty, size)) in [
                (1, "Data", "48K"),
                (1, "Instruction", "32K"),
                (2, "Unified", "2048K"),
            ]
            .iter()
            .chain([(3, "Unified", if pkg == 0 { "8192K" } else { "16384K" })].iter())
            .enumerate()
            {
                write(
                    root,
                    &format!("{d}/cache/index{i}/level"),
                    &format!("{level}\n"),
                );
                write(
                    root,
                    &format!("{d}/cache/index{i}/type"),
                    &format!("{ty}\n"),
                );
                write(
                    root,
                    &format!("{d}/cache/index{i}/size"),
                    &format!("{size}\n"),
                );
            }
        }
        write(root, "node/node0/cpulist", "0-1\n");
        write(root, "node/node1/cpulist", "2-3\n");
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("magpie-topo-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn sysfs_sockets_caches_and_nodes() {
        let root = scratch("full");
        fake(&root);
        let t = Topology::detect_from(&root, None, None);
        assert_eq!(t.sockets.len(), 2);
        assert_eq!(t.sockets[0].llc_bytes, 8 << 20);
        assert_eq!(t.sockets[1].llc_bytes, 16 << 20);
        let cpus: Vec<Vec<usize>> = t
            .sockets
            .iter()
            .map(|s| s.cores.iter().map(|c| c.cpu).collect())
            .collect();
        assert_eq!(cpus, vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(t.sockets[1].cores[0].numa_node, 1);
        assert_eq!(t.socket_of(3), 1);
        assert_eq!(t.core_of_worker(5).cpu, 1);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn affinity_and_quota_restrict_the_cpus() {
        let root = scratch("restricted");
        fake(&root);
        let t = Topology::detect_from(&root, Some(&[1, 2, 3]), None);
        assert_eq!(t.cores(), 3);
        assert_eq!(t.sockets[0].cores.len(), 1);
        let t = Topology::detect_from(&root, Some(&[1, 2, 3]), Some(1.5));
        assert_eq!(t.cores(), 2);
        let t = Topology::detect_from(&root, None, Some(0.2));
        assert_eq!(t.cores(), 1);
        // No sysfs at all: one socket of what the standard library sees.
        let t = Topology::detect_from(&root.join("nothing"), None, None);
        assert_eq!(t.sockets.len(), 1);
        assert!(t.cores() >= 1);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn cgroup_quotas_v1_and_v2() {
        let root = scratch("cgroup");
        write(&root, "proc/self/cgroup", "0::/job\n");
        write(&root, "sys/fs/cgroup/job/cpu.max", "150000 100000\n");
        assert_eq!(cgroup_quota(&root), Some(1.5));
        write(&root, "sys/fs/cgroup/job/cpu.max", "max 100000\n");
        assert_eq!(cgroup_quota(&root), None);
        write(&root, "proc/self/cgroup", "3:cpu,cpuacct:/box\n");
        write(&root, "sys/fs/cgroup/cpu/box/cpu.cfs_quota_us", "300000\n");
        write(&root, "sys/fs/cgroup/cpu/box/cpu.cfs_period_us", "100000\n");
        assert_eq!(cgroup_quota(&root), Some(3.0));
        write(&root, "sys/fs/cgroup/cpu/box/cpu.cfs_quota_us", "-1\n");
        assert_eq!(cgroup_quota(&root), None);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn virtual_topologies_parse_and_map_onto_real_cpus() {
        let t = Topology::parse("4x4:6MiB").unwrap();
        assert!(t.is_virtual);
        assert_eq!((t.sockets.len(), t.cores()), (4, 16));
        assert!(t.sockets.iter().all(|s| s.llc_bytes == 6 << 20));
        let real = Topology::detect().cores();
        assert!(t.sockets.iter().flat_map(|s| &s.cores).all(|c| {
            Topology::detect()
                .sockets
                .iter()
                .flat_map(|s| &s.cores)
                .any(|r| r.cpu == c.cpu)
        }));
        assert!(real >= 1);
        assert_eq!(
            Topology::parse("2X8:512KiB").unwrap().sockets[1].llc_bytes,
            512 << 10
        );
        assert_eq!(
            Topology::parse("1x2:32MB").unwrap().sockets[0].llc_bytes,
            32_000_000
        );
        assert_eq!(format_size(6 << 20), "6MiB");
        for bad in [
            "",
            "4x4",
            "4x:6MiB",
            "0x4:6MiB",
            "4x0:1MiB",
            "4x4:0",
            "4x4:6PiB",
            "x4:1M",
            "65x65:1MiB",
        ] {
            let e = Topology::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("topology") && e.contains("4x4:6MiB"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn numa_victims_are_tiered_by_socket_then_node() {
        let root = scratch("tiers");
        fake(&root);
        let t = Topology::detect_from(&root, None, None);
        // Worker 0 on socket 0 (node 0): worker 1 shares its socket; 2 and 3 are remote.
        assert_eq!(t.victim_tiers(0, 4), [vec![1], vec![], vec![2, 3]]);
        // Six workers wrap onto four cores: 4 and 5 sit on socket 0 again.
        assert_eq!(t.victim_tiers(0, 6), [vec![1, 4, 5], vec![], vec![2, 3]]);
        let v = Topology::parse("2x2:1MiB").unwrap();
        assert_eq!(v.victim_tiers(3, 4), [vec![2], vec![], vec![0, 1]]);
        assert_eq!("numa".parse::<Victims>(), Ok(Victims::Numa));
        assert!("nearest"
            .parse::<Victims>()
            .unwrap_err()
            .contains("random or numa"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn boundary_level_is_eq_4() {
        let t = Topology::parse("4x4:6MiB").unwrap();
        // M = 4, B = 2: log2 4 + 1 = 3; 16 MiB over 6 MiB: log2 2.67 + 1 = 2.4, so 3.
        assert_eq!(t.boundary_level(16 << 20, 2), 3);
        // 96 MiB of data: 96/6 = 16 = 2^4, so log2 16 + 1 = 5.
        assert_eq!(t.boundary_level(96 << 20, 2), 5);
        // One byte more needs one more level.
        assert_eq!(t.boundary_level((96 << 20) + 1, 2), 6);
        // Small data: the socket count decides.
        assert_eq!(t.boundary_level(1 << 10, 2), 3);
        assert_eq!(t.boundary_level(1 << 10, 4), 2);
        // One socket: no inter-socket tier.
        assert_eq!(
            Topology::parse("1x8:6MiB")
                .unwrap()
                .boundary_level(1 << 30, 2),
            0
        );
        // The formula itself, in floating point, on a grid of cases.
        for sockets in [2u64, 3, 4, 8] {
            for b in [2u32, 3, 4] {
                for mib in [1u64, 5, 6, 7, 40, 1000] {
                    let t = Topology::parse(&format!("{sockets}x2:6MiB")).unwrap();
                    let (m, sd, sc) = (sockets as f64, (mib << 20) as f64, (6u64 << 20) as f64);
                    let lb = |x: f64| x.ln() / (b as f64).ln();
                    let eq4 = ((lb(m) + 1.0 - 1e-9).ceil()).max((lb(sd / sc) + 1.0 - 1e-9).ceil());
                    assert_eq!(
                        t.boundary_level(mib << 20, b),
                        (eq4 as u32).max(1),
                        "{sockets} {b} {mib}"
                    );
                }
            }
        }
    }

    /// hwloc's synthetic topology of [`fake`]'s machine (with a 16 MiB L3 on both packages:
    /// a synthetic level's attributes are the same for all its objects).
    #[cfg(feature = "hwloc")]
    fn synthetic(description: &str) -> hwlocality::Topology {
        hwloc::load(
            hwlocality::Topology::builder()
                .from_synthetic(description)
                .unwrap(),
        )
        .unwrap()
    }

    #[cfg(feature = "hwloc")]
    #[test]
    fn hwloc_reads_sockets_caches_and_nodes_and_restricts_like_sysfs() {
        let hw = synthetic("pack:2 numa:1 l3:1(size=16MiB) l2:2(size=2MiB) core:1 pu:1");
        let root = scratch("hwloc");
        fake(&root);
        let shape = |t: &Topology| -> Vec<Vec<(usize, usize)>> {
            t.sockets
                .iter()
                .map(|s| s.cores.iter().map(|c| (c.cpu, c.numa_node)).collect())
                .collect()
        };
        let cases: [(Option<&[usize]>, Option<f64>); 6] = [
            (None, None),
            (Some(&[1, 2, 3]), None),
            (Some(&[1, 2, 3]), Some(1.5)),
            (None, Some(0.2)),
            (Some(&[2, 3, 7]), None),
            (Some(&[0]), Some(8.0)),
        ];
        for (allowed, quota) in cases {
            let t = hwloc::from_hwloc(&hw, allowed, quota).unwrap();
            let s = Topology::detect_from(&root, allowed, quota);
            assert_eq!(shape(&t), shape(&s), "{allowed:?} {quota:?}");
            assert_eq!(t.detector, Detector::Hwloc);
            assert!(t.sockets.iter().all(|s| s.llc_bytes == 16 << 20));
        }
        let t = hwloc::from_hwloc(&hw, None, None).unwrap();
        assert_eq!(shape(&t), vec![vec![(0, 0), (1, 0)], vec![(2, 1), (3, 1)]]);
        assert!(hwloc::from_hwloc(&hw, Some(&[4, 5]), None)
            .unwrap_err()
            .to_string()
            .contains("none of its 4 PU(s)"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[cfg(feature = "hwloc")]
    #[test]
    fn hwloc_without_packages_or_caches_gives_one_socket_and_smt_threads_are_cores() {
        // No package level and no cache: one socket (sysfs's package id 0 for all), unknown LLC.
        let t = hwloc::from_hwloc(&synthetic("core:3 pu:1"), None, None).unwrap();
        assert_eq!(
            (t.sockets.len(), t.cores(), t.sockets[0].llc_bytes),
            (1, 3, 0)
        );
        // Two hardware threads per core: each is a core of its own, as sysfs's CPUs are.
        let t = hwloc::from_hwloc(&synthetic("pack:1 l3:1(size=4MiB) core:2 pu:2"), None, None)
            .unwrap();
        let cpus: Vec<usize> = t.sockets[0].cores.iter().map(|c| c.cpu).collect();
        assert_eq!((cpus, t.sockets[0].llc_bytes), (vec![0, 1, 2, 3], 4 << 20));
        // The last level wins over a larger lower level (as sysfs's highest index does).
        let t = hwloc::from_hwloc(
            &synthetic("pack:1 l3:1(size=1MiB) l2:1(size=8MiB) core:1 pu:1"),
            None,
            None,
        )
        .unwrap();
        assert_eq!(t.sockets[0].llc_bytes, 1 << 20);
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list(""), Some(vec![]));
    }
}
