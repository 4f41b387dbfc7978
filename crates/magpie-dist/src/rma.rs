//! The split deque's memory in an MPI window: every rank's deque is one window of the same
//! layout, and thieves work on a victim's deque with passive-target one-sided operations only
//! (no message the victim must answer, no lock anyone holds).
//!
//! Layout of a rank's window (bytes): the `split`/`stail` word at 0, `itail` at 8 (in a 64-bit
//! cell), the rank's heartbeat at 16 (the watchdog's counter, `crate::watchdog`), then
//! `capacity` slots of `size_of::<T>()` bytes. The window is allocated with
//! `MPI_Win_allocate` (Open MPI's `sm` one-sided component needs that, and a 64-bit
//! compare-and-swap crashes under its default component: see [`crate::launch`]) and stays in
//! one `MPI_Win_lock_all` epoch from creation to drop.
//!
//! The [`Memory`] operations, for a window and a target rank:
//!
//! - `word`: an atomic read, as a compare-and-swap of 0 for 0 (which changes nothing):
//!   rsmpi exports no `MPI_NO_OP` to fetch with. The owner reads its own word with an atomic
//!   load of its window's memory instead (shared memory under `sm`; see the SAFETY note).
//! - `swap_word`: `MPI_Compare_and_swap`, then `MPI_Win_flush`. The owner's slot writes before it
//!   are published by an `MPI_Win_sync` first (the unified memory model of `sm` windows).
//! - `itail`, `add_itail`: `MPI_Fetch_and_op` with `MPI_SUM` (of 0 to read).
//! - `write`, `read` on the owner's own window: plain stores and loads of its memory (the local
//!   part needs no communication); `read` of another rank's slot: `MPI_Get`, then flush.

use crate::deque::Memory;
use mpi::ffi;
use mpi::raw::AsRaw;
use std::mem::{size_of, MaybeUninit};
use std::os::raw::c_void;

const WORD: ffi::MPI_Aint = 0;
const ITAIL: ffi::MPI_Aint = 8;
const HEART: ffi::MPI_Aint = 16;
const SLOTS: usize = 24;

/// An MPI window in one `MPI_Win_lock_all` epoch from its allocation to its drop: what
/// [`Window`] and [`Counter`] are made of.
struct Raw {
    win: ffi::MPI_Win,
    base: *mut u8,
    me: i32,
}

impl Raw {
    /// Allocates `bytes(rank)` bytes on each rank (collective over `comm`), zeroes the first
    /// `zeroed` of them, opens the epoch, and waits until every rank has (so no rank reads
    /// another's memory before it is zeroed).
    fn new<C: AsRaw<Raw = ffi::MPI_Comm>>(
        comm: &C,
        bytes: impl FnOnce(i32) -> usize,
        zeroed: usize,
    ) -> Raw {
        let mut base: *mut c_void = std::ptr::null_mut();
        let mut win: MaybeUninit<ffi::MPI_Win> = MaybeUninit::uninit();
        let mut me = 0;
        // SAFETY: plain MPI calls with valid out-pointers; the memory is MPI's until
        // MPI_Win_free (in drop), and at most the allocated bytes are zeroed.
        unsafe {
            check(ffi::MPI_Comm_rank(comm.as_raw(), &mut me), "MPI_Comm_rank");
            let n = bytes(me);
            check(
                ffi::MPI_Win_allocate(
                    n as ffi::MPI_Aint,
                    1,
                    ffi::RSMPI_INFO_NULL,
                    comm.as_raw(),
                    &mut base as *mut *mut c_void as *mut c_void,
                    win.as_mut_ptr(),
                ),
                "MPI_Win_allocate",
            );
            std::ptr::write_bytes(base as *mut u8, 0, zeroed.min(n));
            let win = win.assume_init();
            check(ffi::MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
            check(ffi::MPI_Win_sync(win), "MPI_Win_sync");
            check(ffi::MPI_Barrier(comm.as_raw()), "MPI_Barrier");
            Raw {
                win,
                base: base as *mut u8,
                me,
            }
        }
    }

    fn flush(&self, rank: i32) {
        // SAFETY: the window is in its lock_all epoch.
        check(
            unsafe { ffi::MPI_Win_flush(rank, self.win) },
            "MPI_Win_flush",
        );
    }

    /// `MPI_Fetch_and_op` adding `n` to the 64-bit cell at `disp` of `rank`'s memory; returns
    /// its value before. Flushed.
    fn fetch_add(&self, rank: i32, disp: ffi::MPI_Aint, n: u64) -> u64 {
        let mut old = 0u64;
        // SAFETY: a 64-bit fetch-and-add inside the target's allocation (the callers'
        // offsets), in the epoch; the buffers live across the call and the flush.
        unsafe {
            check(
                ffi::MPI_Fetch_and_op(
                    &n as *const u64 as *const c_void,
                    &mut old as *mut u64 as *mut c_void,
                    ffi::RSMPI_UINT64_T,
                    rank,
                    disp,
                    ffi::RSMPI_SUM,
                    self.win,
                ),
                "MPI_Fetch_and_op",
            );
        }
        self.flush(rank);
        old
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: ends the epoch begun in `new` and frees the window (collective: every rank
        // drops its window at the same point of the program).
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
        }
    }
}

/// One window per rank holding its split deque (see the module doc).
pub struct Window<T> {
    raw: Raw,
    capacity: u32,
    _t: std::marker::PhantomData<T>,
}

/// A window seen from one rank, aimed at one target's deque.
pub struct Target<T> {
    w: std::rc::Rc<Window<T>>,
    rank: i32,
}

fn check(code: i32, what: &str) {
    if code != ffi::MPI_SUCCESS as i32 {
        // MPI's default error handler aborts before this; a handler that returns lands here.
        eprintln!("error: {what} failed (MPI error {code}); aborting the run");
        // SAFETY: MPI_Abort takes the world communicator and ends every rank.
        unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 3) };
    }
}

impl<T: Copy> Window<T> {
    /// Allocates every rank's deque window (collective over `comm`), `capacity` slots each
    /// (rounded up to a power of two, at least 2).
    pub fn new<C: AsRaw<Raw = ffi::MPI_Comm>>(comm: &C, capacity: usize) -> Window<T> {
        let cap = capacity.clamp(2, 1 << 30).next_power_of_two();
        Window {
            raw: Raw::new(comm, |_| SLOTS + cap * size_of::<T>(), SLOTS),
            capacity: cap as u32,
            _t: std::marker::PhantomData,
        }
    }

    /// Raises this rank's heartbeat (`MPI_Fetch_and_op` on its own cell, flushed).
    fn beat(&self) {
        self.raw.fetch_add(self.raw.me, HEART, 1);
    }

    /// `rank`'s heartbeat (an atomic read: a fetch-and-add of 0).
    fn heartbeat(&self, rank: usize) -> u64 {
        self.raw.fetch_add(rank as i32, HEART, 0)
    }

    /// This window aimed at `rank`'s deque.
    pub fn target(self: &std::rc::Rc<Self>, rank: usize) -> Target<T> {
        Target {
            w: self.clone(),
            rank: rank as i32,
        }
    }
}

// SAFETY: the word at offset 0 and the counters at 8 and 16 are changed only by MPI's atomic
// operations (and read by them or, on the owner's own window under `sm`, by atomic loads; see
// `word`); slots are indexed modulo the power-of-two capacity; every rank's `Target` on a rank
// reaches that rank's one window.
unsafe impl<T: Copy> Memory<T> for Target<T> {
    fn capacity(&self) -> u32 {
        self.w.capacity
    }

    fn word(&self) -> u64 {
        if self.rank == self.w.raw.me {
            // SAFETY: the word is 8-aligned at the start of this rank's window memory (MPI
            // allocates windows aligned at least that far) and lives as long as the window.
            // Under the `sm` one-sided component that `launch::init` selects, windows are
            // shared memory in the unified model and other ranks' MPI atomics on the word are
            // the processor's atomic instructions, so an atomic load here sees them (the owner
            // reads its own word at every push and pop; a one-sided operation on itself would
            // cost a call into MPI each time).
            let w = unsafe { &*(self.w.raw.base as *const std::sync::atomic::AtomicU64) };
            // Acquire: as `Local::word` (the `Memory` trait's ordering for the word).
            return w.load(std::sync::atomic::Ordering::Acquire);
        }
        self.compare_and_swap(0, 0)
    }

    unsafe fn swap_word(&self, old: u64, new: u64) -> bool {
        // SAFETY: MPI_Win_sync on the window of its epoch: publishes the owner's plain slot
        // stores before the swap that may make them visible to thieves.
        check(unsafe { ffi::MPI_Win_sync(self.w.raw.win) }, "MPI_Win_sync");
        self.compare_and_swap(old, new) == old
    }

    fn itail(&self) -> u32 {
        self.fetch_add_itail(0)
    }

    unsafe fn add_itail(&self, n: u32) {
        self.fetch_add_itail(n);
    }

    unsafe fn write(&self, i: u32, t: T) {
        assert_eq!(self.rank, self.w.raw.me, "only the owner writes its slots");
        let at = SLOTS + (i & (self.w.capacity - 1)) as usize * size_of::<T>();
        // SAFETY: the caller's contract (no reader of this slot now); the slot lies inside the
        // window's allocation; the write may be unaligned.
        unsafe { std::ptr::write_unaligned(self.w.raw.base.add(at) as *mut T, t) };
    }

    unsafe fn read(&self, i: u32) -> T {
        let at = SLOTS + (i & (self.w.capacity - 1)) as usize * size_of::<T>();
        if self.rank == self.w.raw.me {
            // SAFETY: the caller's contract; inside the allocation; unaligned read.
            return unsafe { std::ptr::read_unaligned(self.w.raw.base.add(at) as *const T) };
        }
        let mut t = MaybeUninit::<T>::uninit();
        // SAFETY: MPI_Get of the slot's bytes into `t` (as bytes), completed by the flush
        // before `t` is read. The bytes are a `T` the owner wrote (the caller's contract: a
        // claimed slot), of the same type in the same program on every rank.
        unsafe {
            check(
                ffi::MPI_Get(
                    t.as_mut_ptr() as *mut c_void,
                    size_of::<T>() as i32,
                    ffi::RSMPI_UINT8_T,
                    self.rank,
                    at as ffi::MPI_Aint,
                    size_of::<T>() as i32,
                    ffi::RSMPI_UINT8_T,
                    self.w.raw.win,
                ),
                "MPI_Get",
            );
            self.w.raw.flush(self.rank);
            t.assume_init()
        }
    }
}

impl<T: Copy> Target<T> {
    /// `MPI_Compare_and_swap` of the target's word: `new` if it is `compare`; returns what it
    /// was. Flushed.
    fn compare_and_swap(&self, compare: u64, new: u64) -> u64 {
        let mut old = 0u64;
        // SAFETY: a 64-bit compare-and-swap at offset 0 of the target's window, in the window's
        // epoch; the buffers live across the call and the flush that completes it.
        unsafe {
            check(
                ffi::MPI_Compare_and_swap(
                    &new as *const u64 as *const c_void,
                    &compare as *const u64 as *const c_void,
                    &mut old as *mut u64 as *mut c_void,
                    ffi::RSMPI_UINT64_T,
                    self.rank,
                    WORD,
                    self.w.raw.win,
                ),
                "MPI_Compare_and_swap",
            );
        }
        self.w.raw.flush(self.rank);
        old
    }

    fn fetch_add_itail(&self, n: u32) -> u32 {
        (self.w.raw.fetch_add(self.rank, ITAIL, n as u64) as u32).wrapping_add(n)
    }
}

/// A 64-bit counter in rank 0's memory that every rank adds to and reads with one-sided
/// operations (the self-test's count of tasks run, which tells thieves when to stop).
pub struct Counter {
    raw: Raw,
}

impl Counter {
    /// Allocates the counter, 0 (collective over `comm`): 8 bytes on rank 0, none elsewhere.
    pub fn new<C: AsRaw<Raw = ffi::MPI_Comm>>(comm: &C) -> Counter {
        Counter {
            raw: Raw::new(comm, |me| if me == 0 { 8 } else { 0 }, 8),
        }
    }

    /// Adds `n`; returns the value after.
    pub fn add(&self, n: u64) -> u64 {
        self.raw.fetch_add(0, 0, n) + n
    }
}

/// The ranks of `MPI_COMM_WORLD` as a task collection's [`Comm`](crate::collection::Comm): the
/// deques in one [`Window`], termination and active-message stealing as tagged point-to-point
/// messages (the only point-to-point traffic on the communicator), gathers as
/// `MPI_Allgatherv` of the values' JSON. A rank that dies ends the job (MPI's default error
/// handler, and `mpirun` kills the others when one exits with an error); a rank that stops
/// without dying is named by the watchdog (`crate::watchdog`), which ends the job: while a
/// rank waits (for work, for termination, for the others at a gather) it checks the others'
/// heartbeats, and before each gather the ranks meet in a barrier it can watch.
pub struct World<T> {
    world: mpi::topology::SimpleCommunicator,
    win: std::rc::Rc<Window<T>>,
    watch: std::cell::RefCell<crate::watchdog::Watch>,
}

/// The tags of the collection's messages: termination, steal requests and their answers.
const TERMINATION: i32 = 77;
const STEAL_REQUEST: i32 = 78;
const STEAL_REPLY: i32 = 79;

impl<T: Copy> World<T> {
    /// The world's ranks with deques of `capacity` tasks (collective), watched with the limit
    /// `MAGPIE_DIST_WATCHDOG` sets (default 60 s; a value that is not whole seconds is said on
    /// stderr and the default kept).
    pub fn new(world: mpi::topology::SimpleCommunicator, capacity: usize) -> World<T> {
        use mpi::traits::Communicator;
        let win = std::rc::Rc::new(Window::new(&world, capacity));
        let limit = crate::watchdog::limit_from_env().unwrap_or_else(|e| {
            if world.rank() == 0 {
                eprintln!("warning: {e}; the watchdog keeps its default limit");
            }
            Some(crate::watchdog::DEFAULT_LIMIT)
        });
        let (me, n) = (world.rank() as usize, world.size() as usize);
        let watch = crate::watchdog::Watch::new(me, n, limit, std::time::Instant::now());
        World {
            world,
            win,
            watch: std::cell::RefCell::new(watch),
        }
    }

    /// The same ranks with the watchdog's limit set here (`None`: no watchdog).
    pub fn with_watchdog(self, limit: Option<std::time::Duration>) -> World<T> {
        use mpi::traits::Communicator;
        let (me, n) = (self.world.rank() as usize, self.world.size() as usize);
        *self.watch.borrow_mut() =
            crate::watchdog::Watch::new(me, n, limit, std::time::Instant::now());
        self
    }

    /// Raises this rank's heartbeat when due (at most every `watchdog::BEAT`).
    fn beat(&self) {
        if self.watch.borrow_mut().beat_due(std::time::Instant::now()) {
            self.win.beat();
        }
    }

    /// The watchdog's check while this rank waits: beats, and if another rank has been silent
    /// past the limit, says so and ends the job (`MPI_Abort`: every rank ends, the silent one
    /// included).
    fn watch(&self) {
        self.beat();
        let now = std::time::Instant::now();
        let silent = self.watch.borrow_mut().look(now, |r| self.win.heartbeat(r));
        if let Some((r, quiet)) = silent {
            use mpi::traits::Communicator;
            eprintln!(
                "error: magpie-dist: rank {r} has made no progress for {:.1} s (stopped, or \
                 stuck in one task); rank {} ends the job (the watchdog's limit, \
                 MAGPIE_DIST_WATCHDOG, is {} s)",
                quiet.as_secs_f64(),
                self.world.rank(),
                self.watch.borrow().limit().map_or(0, |l| l.as_secs())
            );
            // SAFETY: ends every rank of the communicator's job; called from the thread that
            // makes this rank's MPI calls (MPI is initialised `Funneled`).
            unsafe { ffi::MPI_Abort(self.world.as_raw(), 4) };
        }
    }

    /// Waits in a barrier that it can watch (`MPI_Ibarrier`, tested until done): the ranks
    /// meet before a gather, so a silent rank is named rather than waited for in a blocking
    /// collective.
    fn watched_barrier(&self) {
        if self.watch.borrow().limit().is_none() {
            return;
        }
        let mut req: MaybeUninit<ffi::MPI_Request> = MaybeUninit::uninit();
        // SAFETY: a non-blocking barrier on this rank's communicator, with a valid out-pointer
        // for its request, which MPI_Test below completes (and frees) before it is dropped.
        let mut req = unsafe {
            check(
                ffi::MPI_Ibarrier(self.world.as_raw(), req.as_mut_ptr()),
                "MPI_Ibarrier",
            );
            req.assume_init()
        };
        loop {
            let mut done = 0;
            // SAFETY: tests the request started above; `done` and the status are valid
            // out-pointers (the status is ignored).
            unsafe {
                check(
                    ffi::MPI_Test(&mut req, &mut done, ffi::RSMPI_STATUS_IGNORE),
                    "MPI_Test",
                );
            }
            if done != 0 {
                return;
            }
            self.watch();
            std::thread::yield_now();
        }
    }

    /// The communicator.
    pub fn communicator(&self) -> &mpi::topology::SimpleCommunicator {
        &self.world
    }
}

fn encode(m: crate::termination::Message) -> [u32; 4] {
    use crate::termination::Message::*;
    match m {
        Wave { iteration, wave } => [0, iteration, wave, 0],
        Vote {
            iteration,
            wave,
            yes,
        } => [1, iteration, wave, yes as u32],
        Done { iteration } => [2, iteration, 0, 0],
    }
}

fn decode(b: [u32; 4]) -> Option<crate::termination::Message> {
    use crate::termination::Message::*;
    Some(match b[0] {
        0 => Wave {
            iteration: b[1],
            wave: b[2],
        },
        1 => Vote {
            iteration: b[1],
            wave: b[2],
            yes: b[3] != 0,
        },
        2 => Done { iteration: b[1] },
        _ => return None,
    })
}

// SAFETY: rank r's deque is its part of the one window `World::new` allocated; a `World` holds
// its window alone and a collection takes the `World` by value, so this rank's deque has one
// owner.
unsafe impl<T: Copy> crate::collection::Comm<T> for World<T> {
    type Mem = Target<T>;
    fn rank(&self) -> usize {
        use mpi::traits::Communicator;
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        use mpi::traits::Communicator;
        self.world.size() as usize
    }
    fn deque(&self, r: usize) -> Target<T> {
        self.win.target(r)
    }
    fn send(&self, to: usize, m: crate::collection::Envelope) {
        use crate::collection::Envelope;
        use mpi::traits::{Communicator, Destination};
        let p = self.world.process_at_rank(to as i32);
        match m {
            Envelope::Termination(m) => p.send_with_tag(&encode(m)[..], TERMINATION),
            Envelope::StealRequest { thief, iteration } => {
                p.send_with_tag(&[thief, iteration][..], STEAL_REQUEST)
            }
            Envelope::StealReply { iteration, tasks } => {
                let mut b = iteration.to_le_bytes().to_vec();
                b.extend_from_slice(&tasks);
                p.send_with_tag(&b[..], STEAL_REPLY)
            }
        }
    }
    fn try_recv(&self) -> Option<crate::collection::Envelope> {
        use crate::collection::Envelope;
        use mpi::traits::{Communicator, Source};
        let (msg, status) = self.world.any_process().immediate_matched_probe()?;
        match status.tag() {
            TERMINATION => {
                let mut b = [0u32; 4];
                msg.matched_receive_into(&mut b[..]);
                decode(b).map(Envelope::Termination)
            }
            STEAL_REQUEST => {
                let mut b = [0u32; 2];
                msg.matched_receive_into(&mut b[..]);
                Some(Envelope::StealRequest {
                    thief: b[0],
                    iteration: b[1],
                })
            }
            _ => {
                use mpi::traits::Equivalence;
                let n = status.count(u8::equivalent_datatype()).max(0) as usize;
                let mut b = vec![0u8; n];
                msg.matched_receive_into(&mut b[..]);
                let iteration = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                Some(Envelope::StealReply {
                    iteration,
                    tasks: b[4..].to_vec(),
                })
            }
        }
    }
    fn all_gather<U>(&self, mine: U) -> Vec<U>
    where
        U: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + 'static,
    {
        let bytes = serde_json::to_vec(&mine).expect("a gathered value serialises");
        self.all_gather_bytes(bytes)
            .iter()
            .map(|b| serde_json::from_slice(b).expect("a gathered value deserialises"))
            .collect()
    }
    fn all_gather_bytes(&self, bytes: Vec<u8>) -> Vec<Vec<u8>> {
        use mpi::datatype::PartitionMut;
        use mpi::traits::{Communicator, CommunicatorCollectives};
        self.watched_barrier();
        let n = self.world.size() as usize;
        let mut counts = vec![0i32; n];
        self.world
            .all_gather_into(&(bytes.len() as i32), &mut counts[..]);
        let displs: Vec<i32> = counts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let mut all = vec![0u8; counts.iter().map(|&c| c as usize).sum()];
        {
            let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            self.world.all_gather_varcount_into(&bytes[..], &mut part);
        }
        (0..n)
            .map(|r| {
                let at = displs[r] as usize;
                all[at..at + counts[r] as usize].to_vec()
            })
            .collect()
    }
    fn failed(&self) -> Option<String> {
        // Called while this rank waits: the watchdog ends the job itself if another rank is
        // silent (see `watch`); a rank that died has ended it already.
        self.watch();
        None
    }
    fn alive(&self) {
        self.beat();
    }
}
