//! A model of last-level caches, to show locality on machines that have one socket and no cache
//! counters.
//!
//! CAB (§II, Fig. 2; §V, Table IV) argues that random stealing scatters tasks that share data
//! across sockets, so each socket's shared last-level cache reads more from memory. The model
//! replays what leaf tasks touched through M socket caches: each [`LeafTask`] names the worker
//! that ran it, when it started, and the byte ranges it read and wrote. Each worker belongs to a
//! socket of a [`Topology`]; each socket has one LRU cache of its `llc_bytes`, in lines of
//! `line_bytes`. A task's accesses go to its socket's cache in the order the tasks started
//! (sockets do not share caches, so only the order within a socket matters, and a socket runs its
//! tasks in start order). A line not in the cache is a miss and is brought in, evicting the least
//! recently used line when the cache is full. A write also invalidates the line in every other
//! socket's cache (coherence), so a later read there misses.
//!
//! # First-touch pages
//!
//! On a NUMA machine an operating system's first-touch policy puts a page of memory on the socket
//! whose core touched it first, and every later access from another socket crosses the
//! interconnect. The model keeps a virtual page map of [`PAGE_BYTES`] pages: a page belongs to the
//! socket of the first leaf that touches it, except that a leaf declared with [`first_touch`] (a
//! fork/join initialiser writing freshly allocated memory) takes the pages it writes whoever held
//! those addresses before (the allocator may hand the same addresses out again). Every byte a
//! leaf declares on a page of another socket counts as a remote byte ([`Misses::remote_bytes`]),
//! and every missed line on such a page as a remote miss ([`Misses::remote_misses`]). When two
//! initialiser leaves on different sockets write the same page (a page straddling their blocks),
//! the later one takes it; only a block's two edge pages can be shared.

use crate::topology::Topology;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// What one leaf task touched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafTask {
    /// The worker that ran it.
    pub worker: usize,
    /// When it started (any clock; only the order matters).
    pub start: u64,
    /// Byte ranges read, in order.
    pub reads: Vec<Range<u64>>,
    /// Byte ranges written, after the reads.
    pub writes: Vec<Range<u64>>,
    /// Whether the writes first-touch freshly allocated memory ([`first_touch`]): their pages
    /// move to this task's socket.
    pub fresh: bool,
}

/// The size of a page of the virtual first-touch map (see the module doc).
pub const PAGE_BYTES: u64 = 4096;

/// Declares what the running leaf task touches: the byte ranges it reads and writes (see
/// [`range_of`]). Recorded, with the worker and the time, when the current pool was built with
/// [`Builder::record_leaves`](crate::Builder::record_leaves); otherwise (or outside a pool) it
/// costs a thread-local read.
pub fn leaf(reads: &[Range<u64>], writes: &[Range<u64>]) {
    let Some(wt) = crate::worker::current() else {
        return;
    };
    if let Some(log) = wt.core.registry.extensions.get::<LeafLog>() {
        log.record(wt.core.index, reads, writes, false);
    }
}

/// Declares a leaf of a fork/join *initialiser*: like [`leaf`], and its `writes` are the first
/// touch of freshly allocated memory, so in the model their pages are placed on the socket of
/// the worker that runs it (the operating system's first-touch policy; see the module doc).
pub fn first_touch(reads: &[Range<u64>], writes: &[Range<u64>]) {
    let Some(wt) = crate::worker::current() else {
        return;
    };
    if let Some(log) = wt.core.registry.extensions.get::<LeafLog>() {
        log.record(wt.core.index, reads, writes, true);
    }
}

/// Whether the current pool records leaves: a kernel whose declarations cost something to
/// compute (a sparse kernel's scattered reads) computes them only then.
pub fn recording() -> bool {
    crate::worker::current()
        .is_some_and(|wt| wt.core.registry.extensions.get::<LeafLog>().is_some())
}

impl crate::Pool {
    /// The leaf tasks recorded so far ([`Builder::record_leaves`](crate::Builder::record_leaves)), taken out of the pool, in no
    /// particular order (each carries its worker and start time). Empty when not recording.
    pub fn take_leaves(&self) -> Vec<crate::cachemodel::LeafTask> {
        self.registry()
            .extensions
            .get::<LeafLog>()
            .map_or_else(Vec::new, |l| l.take())
    }
}

/// A pool's record of its leaf tasks: the hook the runtime keeps for the cache model, and all
/// the state the model needs from it (per worker, the leaves it ran; the pool's clock; the pace).
pub(crate) struct LeafLog {
    per_worker: Vec<crate::sync::CachePadded<std::sync::Mutex<Vec<LeafTask>>>>,
    /// When the pool started (the clock of recorded leaves).
    epoch: std::time::Instant,
    /// Sleep per MiB a recorded leaf declares (`Builder::pace_leaves`).
    pace: std::time::Duration,
}

impl LeafLog {
    pub(crate) fn new(workers: usize, pace: std::time::Duration) -> LeafLog {
        LeafLog {
            per_worker: (0..workers).map(|_| Default::default()).collect(),
            epoch: std::time::Instant::now(),
            pace,
        }
    }

    /// Records a leaf that worker `w` runs now, then holds it for the pace.
    fn record(&self, w: usize, reads: &[Range<u64>], writes: &[Range<u64>], fresh: bool) {
        let t = LeafTask {
            worker: w,
            start: self.epoch.elapsed().as_nanos() as u64,
            reads: reads.to_vec(),
            writes: writes.to_vec(),
            fresh,
        };
        crate::sync::lock(&self.per_worker[w]).push(t);
        if !self.pace.is_zero() {
            let len = |r: &Range<u64>| r.end.saturating_sub(r.start);
            let bytes: u64 = reads.iter().chain(writes).map(len).sum();
            std::thread::sleep(self.pace.mul_f64(bytes as f64 / (1u64 << 20) as f64));
        }
    }

    /// Takes every leaf recorded so far, in no particular order.
    pub(crate) fn take(&self) -> Vec<LeafTask> {
        let mut v = Vec::new();
        for l in &self.per_worker {
            v.append(&mut crate::sync::lock(l));
        }
        v
    }
}

/// The byte range a slice occupies.
pub fn range_of<T>(s: &[T]) -> Range<u64> {
    let start = s.as_ptr() as u64;
    start..start + std::mem::size_of_val(s) as u64
}

/// Modelled misses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misses {
    /// Lines missed in each socket's cache.
    pub per_socket: Vec<u64>,
    /// The line size used.
    pub line_bytes: u64,
    /// Bytes the leaves declared on pages of another socket than their worker's.
    pub remote_bytes: u64,
    /// Missed lines on pages of another socket than the missing one's.
    pub remote_misses: u64,
}

impl Misses {
    /// Lines missed over all sockets.
    pub fn total(&self) -> u64 {
        self.per_socket.iter().sum()
    }
    /// Bytes read from memory over all sockets (missed lines × line size).
    pub fn bytes(&self) -> u64 {
        self.total() * self.line_bytes
    }
}

/// The virtual first-touch page map: page → socket.
struct Pages {
    owner: HashMap<u64, usize>,
}

impl Pages {
    /// Places the pages `r` covers on socket `s`, whoever held them.
    fn place(&mut self, r: &Range<u64>, s: usize) {
        for p in r.start / PAGE_BYTES..r.end.div_ceil(PAGE_BYTES) {
            self.owner.insert(p, s);
        }
    }

    /// Socket `s` touches `r`: pages nobody touched become `s`'s; returns the bytes of `r` on
    /// other sockets' pages.
    fn touch(&mut self, r: &Range<u64>, s: usize) -> u64 {
        let mut remote = 0;
        for p in r.start / PAGE_BYTES..r.end.div_ceil(PAGE_BYTES) {
            if *self.owner.entry(p).or_insert(s) != s {
                let lo = r.start.max(p * PAGE_BYTES);
                let hi = r.end.min((p + 1) * PAGE_BYTES);
                remote += hi.saturating_sub(lo);
            }
        }
        remote
    }

    fn remote(&self, byte: u64, s: usize) -> bool {
        self.owner
            .get(&(byte / PAGE_BYTES))
            .is_some_and(|&o| o != s)
    }
}

/// One socket's LRU cache of lines.
struct Lru {
    capacity: usize,
    clock: u64,
    /// line → last use.
    at: HashMap<u64, u64>,
    /// last use → line (the oldest first).
    order: BTreeMap<u64, u64>,
}

impl Lru {
    fn new(capacity: usize) -> Lru {
        Lru {
            capacity,
            clock: 0,
            at: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// Touches `line`; returns whether it missed.
    fn touch(&mut self, line: u64) -> bool {
        self.clock += 1;
        let hit = match self.at.insert(line, self.clock) {
            Some(old) => {
                self.order.remove(&old);
                true
            }
            None => false,
        };
        self.order.insert(self.clock, line);
        if self.at.len() > self.capacity {
            if let Some((_, victim)) = self.order.pop_first() {
                self.at.remove(&victim);
            }
        }
        !hit
    }

    fn invalidate(&mut self, line: u64) {
        if let Some(t) = self.at.remove(&line) {
            self.order.remove(&t);
        }
    }
}

/// Replays `tasks` through the last-level caches of `topology` (worker `w` on the socket of the
/// topology's `w`-th core), with lines of `line_bytes`.
pub fn simulate(topology: &Topology, line_bytes: u64, tasks: &[LeafTask]) -> Misses {
    simulate_each(topology, line_bytes, tasks).0
}

/// What one task cost in [`simulate_each`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskCost {
    /// Lines it missed.
    pub misses: u64,
    /// Bytes it declared on other sockets' pages.
    pub remote_bytes: u64,
}

/// [`simulate`], with each task's own share, in the order of `tasks` (so a program can add up
/// its iterations' shares).
pub fn simulate_each(
    topology: &Topology,
    line_bytes: u64,
    tasks: &[LeafTask],
) -> (Misses, Vec<TaskCost>) {
    let line_bytes = line_bytes.max(1);
    let mut caches: Vec<Lru> = topology
        .sockets
        .iter()
        .map(|s| Lru::new(((s.llc_bytes / line_bytes) as usize).max(1)))
        .collect();
    let mut misses = vec![0u64; caches.len()];
    let mut pages = Pages {
        owner: HashMap::new(),
    };
    let (mut remote_bytes, mut remote_misses) = (0, 0);
    let mut each = vec![TaskCost::default(); tasks.len()];
    let mut order: Vec<(usize, &LeafTask)> = tasks.iter().enumerate().collect();
    order.sort_by_key(|(_, t)| (t.start, t.worker));
    let lines = |r: &Range<u64>| {
        let first = r.start / line_bytes;
        let end = r.end.div_ceil(line_bytes);
        first..end.max(first)
    };
    for (i, t) in order {
        let s = topology.socket_of(t.worker);
        let cost = &mut each[i];
        if t.fresh {
            for r in &t.writes {
                pages.place(r, s);
            }
        }
        for r in t.reads.iter().chain(&t.writes) {
            cost.remote_bytes += pages.touch(r, s);
        }
        remote_bytes += cost.remote_bytes;
        for r in &t.reads {
            for l in lines(r) {
                if caches[s].touch(l) {
                    misses[s] += 1;
                    cost.misses += 1;
                    remote_misses += u64::from(pages.remote(l * line_bytes, s));
                }
            }
        }
        for r in &t.writes {
            for l in lines(r) {
                if caches[s].touch(l) {
                    misses[s] += 1;
                    cost.misses += 1;
                    remote_misses += u64::from(pages.remote(l * line_bytes, s));
                }
                for (o, c) in caches.iter_mut().enumerate() {
                    if o != s {
                        c.invalidate(l);
                    }
                }
            }
        }
    }
    (
        Misses {
            per_socket: misses,
            line_bytes,
            remote_bytes,
            remote_misses,
        },
        each,
    )
}

#[cfg(test)]
// A task's accesses are lists of ranges; here each reads or writes one range.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    /// CAB's Fig. 2: a 10×10 grid of doubles (80-byte rows), four leaf tasks each updating two
    /// rows and reading those and their neighbours (T4: rows 0-3, T5: 2-5, T6: 4-7, T7: 6-9), on
    /// two sockets of two cores with 480-byte caches.
    fn heat_leaves(placement: [usize; 4]) -> Vec<LeafTask> {
        (0..4)
            .map(|i| LeafTask {
                worker: placement[i as usize],
                start: 0,
                reads: vec![(2 * i * 80)..((2 * i + 4) * 80)],
                writes: vec![],
                fresh: false,
            })
            .collect()
    }

    #[test]
    fn cab_figure_2() {
        let t = Topology::parse("2x2:480B").unwrap();
        // (a): T4, T5 on socket 0 (workers 0, 1), T6, T7 on socket 1: six rows per socket.
        let a = simulate(&t, 8, &heat_leaves([0, 1, 2, 3]));
        assert_eq!(
            a.per_socket.iter().map(|m| m * 8).collect::<Vec<_>>(),
            vec![480, 480]
        );
        assert_eq!(a.bytes(), 960);
        // (b): T4, T6 on socket 0, T5, T7 on socket 1: eight rows per socket, 2 × 4 × 10 × 8 =
        // 640 bytes (the paper prints 680, a slip: its own total, 2 × 680 = 1280, is 2 × 640).
        let b = simulate(&t, 8, &heat_leaves([0, 2, 1, 3]));
        assert_eq!(
            b.per_socket.iter().map(|m| m * 8).collect::<Vec<_>>(),
            vec![640, 640]
        );
        assert_eq!(b.bytes(), 1280);
    }

    #[test]
    fn lru_evicts_the_least_recently_used_line() {
        let t = Topology::parse("1x1:256B").unwrap();
        let task = |start, r: Range<u64>| LeafTask {
            worker: 0,
            start,
            reads: vec![r],
            writes: vec![],
            fresh: false,
        };
        // 4 lines of 64 bytes fit; reading 5 evicts line 0, so line 0 misses again but line 4
        // (used last) does not.
        let m = simulate(
            &t,
            64,
            &[task(0, 0..320), task(1, 0..64), task(2, 256..320)],
        );
        assert_eq!(m.total(), 5 + 1);
        // A hit refreshes a line: after touching line 0 again, line 1 is the oldest.
        let m = simulate(
            &t,
            64,
            &[
                task(0, 0..256),
                task(1, 0..64),
                task(2, 256..320),
                task(3, 0..64),
            ],
        );
        assert_eq!(m.total(), 4 + 1);
    }

    #[test]
    fn a_write_invalidates_other_sockets_copies() {
        let t = Topology::parse("2x1:1KiB").unwrap();
        let read = |w, start| LeafTask {
            worker: w,
            start,
            reads: vec![0..64],
            writes: vec![],
            fresh: false,
        };
        let write = LeafTask {
            worker: 1,
            start: 1,
            reads: vec![],
            writes: vec![0..64],
            fresh: false,
        };
        // Socket 0 reads, socket 1 writes (a miss there), socket 0 reads again: a miss.
        let m = simulate(&t, 64, &[read(0, 0), write.clone(), read(0, 2)]);
        assert_eq!(m.per_socket, vec![2, 1]);
        // Without the write, the second read hits.
        let m = simulate(&t, 64, &[read(0, 0), read(0, 2)]);
        assert_eq!(m.per_socket, vec![1, 0]);
        // Partial lines count whole: bytes 60..70 span lines 0 and 1.
        let m = simulate(
            &t,
            64,
            &[LeafTask {
                worker: 0,
                start: 0,
                reads: vec![60..70],
                writes: vec![],
                fresh: false,
            }],
        );
        assert_eq!(m.total(), 2);
    }

    #[test]
    fn pages_belong_to_their_first_toucher_and_fresh_writes_move_them() {
        let t = Topology::parse("2x1:1MiB").unwrap();
        let leaf = |w, start, reads: Vec<Range<u64>>, writes: Vec<Range<u64>>, fresh| LeafTask {
            worker: w,
            start,
            reads,
            writes,
            fresh,
        };
        let page = PAGE_BYTES;
        // Socket 0 touches two pages first; socket 1 then reads 100 bytes of the second page and
        // 50 of a new one (its own): 100 remote bytes, and its 2 missed lines on that page
        // (100 bytes from the page's start span two 64-byte lines) are remote.
        let m = simulate(
            &t,
            64,
            &[
                leaf(0, 0, vec![0..2 * page], vec![], false),
                leaf(
                    1,
                    1,
                    vec![page..page + 100, 2 * page..2 * page + 50],
                    vec![],
                    false,
                ),
            ],
        );
        assert_eq!(m.remote_bytes, 100);
        assert_eq!(m.remote_misses, 2);
        // Each task's share, in input order.
        let (_, each) = simulate_each(
            &t,
            64,
            &[
                leaf(
                    1,
                    1,
                    vec![page..page + 100, 2 * page..2 * page + 50],
                    vec![],
                    false,
                ),
                leaf(0, 0, vec![0..2 * page], vec![], false),
            ],
        );
        assert_eq!(each[0].remote_bytes, 100);
        assert_eq!(each[0].misses, 3);
        assert_eq!(each[1].misses, 2 * page / 64);
        assert_eq!(each[1].remote_bytes, 0);
        // A fresh write by socket 1 moves the first page to it: socket 0's later read of it is
        // remote, socket 1's is not.
        let m = simulate(
            &t,
            64,
            &[
                leaf(0, 0, vec![0..page], vec![], false),
                leaf(1, 1, vec![], vec![0..page], true),
                leaf(0, 2, vec![0..64], vec![], false),
                leaf(1, 3, vec![64..128], vec![], false),
            ],
        );
        assert_eq!(m.remote_bytes, 64);
        // Without `fresh`, the write itself is the remote access and the page stays.
        let m = simulate(
            &t,
            64,
            &[
                leaf(0, 0, vec![0..page], vec![], false),
                leaf(1, 1, vec![], vec![0..page], false),
                leaf(0, 2, vec![0..64], vec![], false),
            ],
        );
        assert_eq!(m.remote_bytes, page);
    }
}
