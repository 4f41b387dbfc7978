//! The split deque (Lifflander's thesis, §5.4), without locks.
//!
//! Each rank keeps its tasks in a bounded ring of fixed-size slots. The tasks between `split`
//! and `head` are *local*: only the owner touches them, with plain reads and writes, no fence
//! and no atomic operation. The tasks between `stail` and `split` are *shared*: thieves may
//! take them. Thieves take the oldest shared tasks (from `stail`); the owner pushes and pops the
//! newest (at `head`).
//!
//! ```text
//!   ctail        stail           split            head
//!     | in flight  |    shared     |     local      |   free ...
//! ```
//!
//! # The protocol
//!
//! Positions are counters that only grow, taken modulo 2^32 (all arithmetic wraps), and a slot
//! is `counter mod capacity` with a power-of-two capacity, so "full" and "empty" are never
//! ambiguous: the ring holds `head − ctail` slots (the thesis's `full()` could not tell).
//!
//! `split` and `stail` live together in one 64-bit word, and every change to either is a
//! compare-and-swap of that word. So a thief never holds anything another rank could wait on
//! (the thesis takes a lock, which a preempted thief would keep):
//!
//! - **steal** (thief): read the word; if `split − stail` is 0, there is nothing; otherwise
//!   claim the older half, `n = ⌈(split − stail) / 2⌉` tasks, by swapping in `stail + n`. If
//!   the swap fails the word changed (another thief, or the owner moved `split`): read again.
//!   Having claimed them, copy the `n` slots, then add `n` to `itail`.
//! - **release** (owner, after a push or a pop that left the shared part empty): move half of
//!   the local tasks to the shared part, by swapping in `split + ⌊local / 2⌋`.
//! - **acquire** (owner, when its local part is empty): take `max(⌊shared / 2⌋, 1)` of the
//!   newest shared tasks back (the thesis writes `min`, which takes one at most), by swapping
//!   in `split − m`. If the shared part is empty the deque is empty.
//! - **push** (owner): write the slot at `head`, `head + 1`. The ring is full when `head −
//!   ctail` is the capacity. Slots below `stail` are free once every claimed copy has finished,
//!   which is when `itail` (the count of tasks copied out), read first, equals `stail` (the
//!   count of tasks claimed), read after; then the owner moves `ctail` up to `stail`. A push into a full ring returns the
//!   task to the caller instead of waiting (the thesis spins, and two full ranks stealing from
//!   each other would wait forever); the task collection then runs it at once.
//! - **pop** (owner): if the local part is empty, acquire; then take the slot at `head − 1`.
//!
//! Why it is safe: a slot is written only by the owner at `head`, which is at least `ctail`
//! slots past any slot a thief may still be copying (a claimed slot is below `stail`, and the
//! owner does not reuse it until `itail` shows the copy done). A thief reads only slots it
//! claimed, below the `split` it read in the same word, and the owner published those slots
//! before the swap that put them there (release, paired with the thief's acquire). The owner
//! reads and writes `[split, head)` alone: thieves only ever raise `stail`, never past `split`,
//! and only the owner moves `split`.
//!
//! [`Memory`] is where the word, `itail` and the slots live: [`Local`] is memory of this
//! process (atomics), and the MPI transport keeps the same layout in an RMA window, with the
//! swap as `MPI_Compare_and_swap`, the add as `MPI_Fetch_and_op` and the copy as `MPI_Get`.

use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell};
use std::mem::MaybeUninit;

/// Where a split deque's shared state and slots live (see the module doc).
///
/// # Safety
///
/// [`Owner`] and [`steal`] read slots because of what this memory says, so an implementation
/// must be what the module doc describes: `word`/`swap_word` one 64-bit atomic cell (acquire
/// loads, a compare-and-swap with acquire and release), `itail`/`add_itail` one atomic
/// counter (acquire, release), `capacity` a constant power of two of at least 2, and
/// `read`/`write` slots indexed modulo the capacity, every handle on the same deque reaching
/// the same cells and slots.
pub unsafe trait Memory<T: Copy> {
    /// The ring's capacity (a power of two).
    fn capacity(&self) -> u32;
    /// The `split`/`stail` word (acquire).
    fn word(&self) -> u64;
    /// Swaps `new` in if the word is `old` (acquire and release); whether it did.
    ///
    /// # Safety
    ///
    /// Only the protocol changes the word: the owner's release and acquire, a thief's claim
    /// (a word forged elsewhere would send readers to slots nobody wrote).
    unsafe fn swap_word(&self, old: u64, new: u64) -> bool;
    /// `itail`, the count of tasks thieves finished copying out (acquire).
    fn itail(&self) -> u32;
    /// Adds `n` to `itail` (release: after the copy).
    ///
    /// # Safety
    ///
    /// Only a thief that claimed `n` tasks and finished copying them adds (an early add lets
    /// the owner overwrite slots being copied).
    unsafe fn add_itail(&self, n: u32);
    /// Writes `t` into slot `i`.
    ///
    /// # Safety
    ///
    /// Only the owner writes, and only a slot no thief may be reading (at `head`, with
    /// `head − ctail` below the capacity).
    unsafe fn write(&self, i: u32, t: T);
    /// Reads slot `i`.
    ///
    /// # Safety
    ///
    /// The slot holds a task written before the caller's last acquire of the word (the owner's
    /// local part, or a range the thief claimed), and nobody writes it meanwhile.
    unsafe fn read(&self, i: u32) -> T;
}

/// `split` in the high half of the word, `stail` in the low half.
pub fn pack(split: u32, stail: u32) -> u64 {
    (split as u64) << 32 | stail as u64
}

/// The word's `(split, stail)`.
pub fn unpack(w: u64) -> (u32, u32) {
    ((w >> 32) as u32, w as u32)
}

/// A split deque's memory in this process.
pub struct Local<T> {
    word: AtomicU64,
    itail: AtomicU32,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: the slots are accessed as the protocol in the module doc says (one writer, readers of
// claimed or owned slots only, ordered by the word's acquire and release), and `T: Send` is
// what crosses threads.
unsafe impl<T: Send> Sync for Local<T> {}
// SAFETY: as above: the deque only moves `T`s, which are `Send`.
unsafe impl<T: Send> Send for Local<T> {}

impl<T: Copy> Local<T> {
    /// An empty deque of at least `capacity` slots (rounded up to a power of two, at least 2).
    pub fn new(capacity: usize) -> Local<T> {
        let cap = capacity.clamp(2, 1 << 31).next_power_of_two();
        Local {
            word: AtomicU64::new(0),
            itail: AtomicU32::new(0),
            slots: (0..cap)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        }
    }
}

// SAFETY: one AtomicU64 word and one AtomicU32 counter with the orderings the trait names, a
// power-of-two slot array indexed modulo its length, shared by every handle (through `Arc`).
unsafe impl<T: Copy> Memory<T> for Local<T> {
    fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }
    fn word(&self) -> u64 {
        // Acquire, AcqRel, Release below: the orderings the `Memory` trait names, which the
        // protocol in the module doc relies on (a claim's exchange orders the claimed slots'
        // reads; `itail`'s Release publishes a thief's finished copies to the owner).
        self.word.load(Ordering::Acquire)
    }
    unsafe fn swap_word(&self, old: u64, new: u64) -> bool {
        // AcqRel/Acquire: the trait's ordering for a claim (see `word`).
        self.word
            .compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
    fn itail(&self) -> u32 {
        // Acquire: pairs with `add_itail`'s Release (see `word`).
        self.itail.load(Ordering::Acquire)
    }
    unsafe fn add_itail(&self, n: u32) {
        // Release: publishes the thief's finished copies (see `word`).
        self.itail.fetch_add(n, Ordering::Release);
    }
    unsafe fn write(&self, i: u32, t: T) {
        let slot = &self.slots[(i & (self.capacity() - 1)) as usize];
        // SAFETY: the caller's contract: nobody else reads or writes this slot now.
        slot.with_mut(|p| unsafe { (*p).write(t) });
    }
    unsafe fn read(&self, i: u32) -> T {
        let slot = &self.slots[(i & (self.capacity() - 1)) as usize];
        // SAFETY: the caller's contract: the slot was written (so initialised) and is not being
        // written.
        slot.with(|p| unsafe { (*p).assume_init_read() })
    }
}

/// A full ring: the task the push could not take.
#[derive(Debug, PartialEq, Eq)]
pub struct Full<T>(pub T);

/// The owner's side of a split deque: its private counters and the memory.
pub struct Owner<T: Copy, M: Memory<T>> {
    mem: M,
    head: u32,
    ctail: u32,
    /// The owner's copy of `split` (only it moves `split`).
    split: u32,
    _t: std::marker::PhantomData<T>,
}

impl<T: Copy, M: Memory<T>> Owner<T, M> {
    /// The owner of an empty deque in `mem`.
    ///
    /// # Safety
    ///
    /// `mem` is empty (its word and `itail` are 0, as a new [`Local`] or window is), and no
    /// other `Owner` uses the same memory, now or later: the owner writes its slots with no
    /// synchronisation, which two owners would race on.
    pub unsafe fn new(mem: M) -> Owner<T, M> {
        Owner {
            mem,
            head: 0,
            ctail: 0,
            split: 0,
            _t: std::marker::PhantomData,
        }
    }

    /// The memory (for thieves in this process, or the transport).
    pub fn memory(&self) -> &M {
        &self.mem
    }

    /// Tasks in the local part.
    pub fn local_len(&self) -> u32 {
        self.head.wrapping_sub(self.split)
    }

    /// Whether the deque holds no task, local or shared (reads the shared word).
    pub fn is_empty(&self) -> bool {
        let (split, stail) = unpack(self.mem.word());
        self.local_len() == 0 && split == stail
    }

    /// Pushes `t` at the head; a full ring gives it back.
    pub fn push(&mut self, t: T) -> Result<(), Full<T>> {
        if self.head.wrapping_sub(self.ctail) >= self.mem.capacity() {
            // Reclaim the slots below `stail` if no copy out of them is in flight. `itail` is
            // read first: it counts copies of claims made before it was read, and `stail`, read
            // after, counts at least those claims, so the two are equal only if no copy was in
            // flight and nothing was claimed in between. (Read the other way round, a later
            // claim's finished copy could make up for an earlier one still in flight.)
            let copied = self.mem.itail();
            let (_, stail) = unpack(self.mem.word());
            if copied == stail {
                self.ctail = stail;
            }
            if self.head.wrapping_sub(self.ctail) >= self.mem.capacity() {
                return Err(Full(t));
            }
        }
        // SAFETY: `head − ctail` is below the capacity, so no thief reads this slot (module
        // doc), and only the owner writes.
        unsafe { self.mem.write(self.head, t) };
        self.head = self.head.wrapping_add(1);
        self.release_if_shared_empty();
        Ok(())
    }

    /// Pops the newest task, taking some back from the shared part when the local part is
    /// empty; `None` when the deque is empty.
    pub fn pop(&mut self) -> Option<T> {
        if self.head == self.split && !self.acquire() {
            return None;
        }
        self.head = self.head.wrapping_sub(1);
        // SAFETY: the slot is in the local part, which only the owner touches; it wrote it.
        let t = unsafe { self.mem.read(self.head) };
        self.release_if_shared_empty();
        Some(t)
    }

    /// Moves half the local tasks to the shared part when the shared part is empty.
    fn release_if_shared_empty(&mut self) {
        let half = self.local_len() / 2;
        if half == 0 {
            return;
        }
        loop {
            let w = self.mem.word();
            let (split, stail) = unpack(w);
            debug_assert_eq!(split, self.split);
            if split != stail {
                return;
            }
            // SAFETY: the protocol's release, by the deque's one owner.
            if unsafe { self.mem.swap_word(w, pack(split.wrapping_add(half), stail)) } {
                self.split = split.wrapping_add(half);
                return;
            }
        }
    }

    /// Takes back `max(⌊shared / 2⌋, 1)` of the newest shared tasks; false if there are none.
    fn acquire(&mut self) -> bool {
        loop {
            let w = self.mem.word();
            let (split, stail) = unpack(w);
            let shared = split.wrapping_sub(stail);
            if shared == 0 {
                return false;
            }
            let m = (shared / 2).max(1);
            // SAFETY: the protocol's acquire, by the deque's one owner.
            if unsafe { self.mem.swap_word(w, pack(split.wrapping_sub(m), stail)) } {
                self.split = split.wrapping_sub(m);
                return true;
            }
        }
    }

    /// How many tasks thieves have claimed from this deque so far (for termination: a rank
    /// was stolen from since it last looked when this grew).
    pub fn stolen(&self) -> u32 {
        unpack(self.mem.word()).1
    }
}

/// What a steal attempt found.
#[derive(Debug, PartialEq, Eq)]
pub enum Stolen<T> {
    /// The older half of the shared tasks, oldest first.
    Tasks(Vec<T>),
    /// Nothing was shared.
    Empty,
    /// The word kept changing under the thief (`tries` swaps failed); try another victim.
    Contended,
}

/// Steals the older half of `mem`'s shared tasks (see the module doc), retrying a failed swap
/// at most `tries` times.
pub fn steal<T: Copy, M: Memory<T>>(mem: &M, tries: u32) -> Stolen<T> {
    for _ in 0..tries.max(1) {
        let w = mem.word();
        let (split, stail) = unpack(w);
        let shared = split.wrapping_sub(stail);
        if shared == 0 {
            return Stolen::Empty;
        }
        let n = shared.div_ceil(2);
        // SAFETY: the protocol's claim of `n` shared tasks.
        if unsafe { mem.swap_word(w, pack(split, stail.wrapping_add(n))) } {
            let tasks = (0..n)
                // SAFETY: the swap claimed slots `stail..stail + n`, below the `split` it read;
                // the owner wrote them before publishing that split, and does not reuse them
                // until `itail` counts this copy.
                .map(|k| unsafe { mem.read(stail.wrapping_add(k)) })
                .collect();
            // SAFETY: this thief claimed `n` tasks and has copied them.
            unsafe { mem.add_itail(n) };
            return Stolen::Tasks(tasks);
        }
    }
    Stolen::Contended
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use crate::test_rng::Rng;

    /// Random sequences of pushes, pops and steals (a steal's claim and its copy apart, so
    /// copies are in flight while the owner pushes) against a model: the remaining tasks as a
    /// set. A pop returns the newest remaining task, a steal the oldest ones; nothing is lost
    /// or returned twice, and a push into a full ring hands the task back.
    #[test]
    fn matches_a_model_under_random_interleavings() {
        for seed in 1..=200u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let cap = 1usize << (1 + seed % 4);
            // SAFETY: a new, empty `Local`, owned by this one `Owner`.
            let mut o: Owner<u64, Local<u64>> = unsafe { Owner::new(Local::new(cap)) };
            let mut model = BTreeSet::new();
            let mut next = 0u64;
            let mut seen = BTreeSet::new();
            for _ in 0..400 {
                match rng.next() % 3 {
                    0 => match o.push(next) {
                        Ok(()) => {
                            model.insert(next);
                            next += 1;
                        }
                        Err(Full(t)) => {
                            assert_eq!(t, next);
                            // Full really means `capacity` tasks or copies held.
                            assert!(model.len() <= cap, "seed {seed}");
                        }
                    },
                    1 => {
                        let got = o.pop();
                        assert_eq!(got, model.iter().next_back().copied(), "seed {seed}");
                        if let Some(t) = got {
                            model.remove(&t);
                            assert!(seen.insert(t));
                        }
                    }
                    _ => match steal(o.memory(), 1) {
                        Stolen::Tasks(ts) => {
                            for t in ts {
                                assert_eq!(model.iter().next().copied(), Some(t), "seed {seed}");
                                model.remove(&t);
                                assert!(seen.insert(t));
                            }
                        }
                        Stolen::Empty => {}
                        Stolen::Contended => unreachable!("one thread"),
                    },
                }
            }
            while let Some(t) = o.pop() {
                assert!(model.remove(&t));
                assert!(seen.insert(t));
            }
            assert!(model.is_empty(), "seed {seed}: {model:?} left");
            assert_eq!(seen.len() as u64, next, "seed {seed}");
        }
    }

    #[test]
    fn wraps_around_the_counters() {
        // Start every counter near 2^32, so they wrap during the test.
        // SAFETY: a new, empty `Local`, owned by this one `Owner`.
        let mut o: Owner<u32, Local<u32>> = unsafe { Owner::new(Local::new(4)) };
        let start = u32::MAX - 5;
        o.head = start;
        o.ctail = start;
        o.split = start;
        o.mem.word.store(pack(start, start), Ordering::Relaxed);
        o.mem.itail.store(start, Ordering::Relaxed);
        let mut seen = Vec::new();
        for round in 0..20u32 {
            for k in 0..3 {
                o.push(round * 10 + k).unwrap();
            }
            if let Stolen::Tasks(t) = steal(o.memory(), 1) {
                seen.extend(t);
            }
            while let Some(t) = o.pop() {
                seen.push(t);
            }
        }
        seen.sort();
        let want: Vec<u32> = (0..20)
            .flat_map(|r| (0..3).map(move |k| r * 10 + k))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_full_ring_hands_the_task_back_until_copies_finish() {
        // SAFETY: a new, empty `Local`, owned by this one `Owner`.
        let mut o: Owner<u8, Local<u8>> = unsafe { Owner::new(Local::new(2)) };
        o.push(1).unwrap();
        o.push(2).unwrap();
        assert_eq!(o.push(3), Err(Full(3)));
        // A thief claims the shared task; until its copy is counted the slot stays taken.
        let (split, stail) = unpack(o.memory().word());
        assert_eq!(split.wrapping_sub(stail), 1);
        // SAFETY: a claim of one shared task, as a thief's, in a single-threaded test.
        let claimed = unsafe {
            o.memory()
                .swap_word(pack(split, stail), pack(split, stail + 1))
        };
        assert!(claimed);
        assert_eq!(o.pop(), Some(2));
        o.push(4).unwrap();
        assert_eq!(o.push(5), Err(Full(5)));
        // SAFETY: the claimed task's copy is done (the test reads nothing).
        unsafe { o.memory().add_itail(1) };
        assert_eq!(o.push(5), Ok(()));
    }

    /// Threads stealing while the owner pushes and pops: every task is run exactly once.
    #[test]
    fn stress_with_thieves_on_threads() {
        for _ in 0..20 {
            // SAFETY: a new, empty `Local`, owned by this one `Owner` (the thieves only steal).
            let o: Owner<u64, Arc<Local<u64>>> = unsafe { Owner::new(Arc::new(Local::new(64))) };
            let mem = o.memory().clone();
            let total = 20_000u64;
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let thieves: Vec<_> = (0..3)
                .map(|_| {
                    let mem = mem.clone();
                    let done = done.clone();
                    std::thread::spawn(move || {
                        let mut got = Vec::new();
                        while !done.load(std::sync::atomic::Ordering::Acquire) {
                            if let Stolen::Tasks(t) = steal(&*mem, 4) {
                                got.extend(t);
                            }
                        }
                        got
                    })
                })
                .collect();
            let mut o = o;
            let mut mine = Vec::new();
            let mut next = 0;
            while next < total {
                // A full ring hands the task back: the owner runs it at once.
                if let Err(Full(t)) = o.push(next) {
                    mine.push(t);
                }
                next += 1;
                if next % 3 == 0 {
                    mine.extend(o.pop());
                }
            }
            while let Some(t) = o.pop() {
                mine.push(t);
            }
            done.store(true, std::sync::atomic::Ordering::Release);
            for h in thieves {
                mine.extend(h.join().unwrap());
            }
            mine.sort();
            let wrong = mine.iter().enumerate().find(|(i, t)| *i as u64 != **t);
            assert!(
                mine.len() as u64 == total && wrong.is_none(),
                "{} tasks taken of {total}; first wrong: {wrong:?}",
                mine.len()
            );
        }
    }
}

// SAFETY: every clone reaches the one `M`, which meets the contract.
unsafe impl<T: Copy, M: Memory<T>> Memory<T> for std::sync::Arc<M> {
    fn capacity(&self) -> u32 {
        (**self).capacity()
    }
    fn word(&self) -> u64 {
        (**self).word()
    }
    unsafe fn swap_word(&self, old: u64, new: u64) -> bool {
        // SAFETY: the caller's contract, passed on.
        unsafe { (**self).swap_word(old, new) }
    }
    fn itail(&self) -> u32 {
        (**self).itail()
    }
    unsafe fn add_itail(&self, n: u32) {
        // SAFETY: the caller's contract, passed on.
        unsafe { (**self).add_itail(n) }
    }
    unsafe fn write(&self, i: u32, t: T) {
        // SAFETY: the caller's contract, passed on.
        unsafe { (**self).write(i, t) }
    }
    unsafe fn read(&self, i: u32) -> T {
        // SAFETY: the caller's contract, passed on.
        unsafe { (**self).read(i) }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::thread;
    // std's Arc: the memory is shared by value, and loom checks its atomics and cells.
    use std::sync::Arc;

    /// The owner pushes three tasks and pops until empty while a thief steals once: every task
    /// is taken exactly once, in every interleaving.
    #[test]
    fn owner_and_thief_take_each_task_once() {
        loom::model(|| {
            let o: Owner<u32, Arc<Local<u32>>> = unsafe { Owner::new(Arc::new(Local::new(4))) };
            let mem = o.memory().clone();
            let thief = thread::spawn(move || match steal(&*mem, 2) {
                Stolen::Tasks(t) => t,
                _ => Vec::new(),
            });
            let mut o = o;
            let mut got = Vec::new();
            for t in 0..3 {
                o.push(t).unwrap();
            }
            while let Some(t) = o.pop() {
                got.push(t);
            }
            got.extend(thief.join().unwrap());
            got.sort();
            assert_eq!(got, vec![0, 1, 2]);
        });
    }

    /// Two thieves racing each other and the owner's acquire.
    #[test]
    fn two_thieves_and_the_owner() {
        loom::model(|| {
            let o: Owner<u32, Arc<Local<u32>>> = unsafe { Owner::new(Arc::new(Local::new(4))) };
            let mut o = o;
            for t in 0..4 {
                o.push(t).unwrap();
            }
            let thieves: Vec<_> = (0..2)
                .map(|_| {
                    let mem = o.memory().clone();
                    thread::spawn(move || match steal(&*mem, 1) {
                        Stolen::Tasks(t) => t,
                        _ => Vec::new(),
                    })
                })
                .collect();
            let mut got = Vec::new();
            while let Some(t) = o.pop() {
                got.push(t);
            }
            for h in thieves {
                got.extend(h.join().unwrap());
            }
            got.sort();
            assert_eq!(got, vec![0, 1, 2, 3]);
        });
    }

    /// A full ring: the owner reuses a slot only after the thief's copy out of it is counted
    /// (loom reports a data race on the slot otherwise), and a task it cannot push comes back.
    #[test]
    fn slots_are_reused_only_after_copies() {
        loom::model(|| {
            let mut o: Owner<u32, Arc<Local<u32>>> = unsafe { Owner::new(Arc::new(Local::new(2))) };
            o.push(0).unwrap();
            o.push(1).unwrap();
            let mem = o.memory().clone();
            let thief = thread::spawn(move || match steal(&*mem, 1) {
                Stolen::Tasks(t) => t,
                _ => Vec::new(),
            });
            let mut got = Vec::new();
            got.extend(o.pop());
            for t in [2, 3] {
                // Full: the caller runs it at once.
                if let Err(Full(t)) = o.push(t) {
                    got.push(t);
                }
            }
            while let Some(t) = o.pop() {
                got.push(t);
            }
            got.extend(thief.join().unwrap());
            got.sort();
            assert_eq!(got, vec![0, 1, 2, 3]);
        });
    }
}
