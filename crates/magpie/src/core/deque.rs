//! The per-worker work-stealing deque: a *split* deque.
//!
//! SLAW (§III-F) keeps tasks in Chase–Lev deques whose owner end is synchronisation-free; in practice
//! a Chase–Lev `pop` needs a full fence on every call so that it cannot race a thief for the last
//! item, and on fine-grained work (a `join` per few nanoseconds of user code) that fence is most of
//! the cost. Lifflander's thesis (Ch. 5, §5.4) splits the deque in two: a *private* part that only the
//! owner touches and a *public* part that thieves steal from. magpie does the same:
//!
//! ```text
//!   index:   top ............ split ............ bottom
//!            [ public: thieves CAS `top` ][ private: owner only ]
//!            oldest                                     newest
//! ```
//!
//! * `push` writes the slot at `bottom` and bumps the owner-local `bottom`: no fence, no RMW.
//! * `pop` takes from `bottom - 1` while that index is private: no fence, no RMW. Only when the
//!   private part is empty does the owner fall back to a Chase–Lev pop of the public part (a
//!   `SeqCst` fence and, for the last item, a CAS on `top`), counted in `fenced_pops`.
//! * The owner *releases* private items to thieves by moving `split` up (a release store). It does
//!   so when the public part is empty (so the oldest task, the biggest piece of work, is always
//!   stealable) and, by half of the private part, when a thief has raised `wanted` (as one batch
//!   item when there are at least [`BATCH_MIN`], unless built `without_batches`). The deque of a
//!   pool's only worker is built `without_thieves` and releases nothing.
//! * A thief never waits for the owner and never stops it: it reads `top`, then `split`, reads the
//!   slot and claims it with one CAS on `top`. A thief that finds nothing raises `wanted` (once).
//!   `wanted` has a cache line of its own: the owner reads it on every spawn, and thieves write it
//!   only to ask, never on the steals that write `top`.
//!
//! Memory orderings (each stated where used; most uses point to these paragraphs by name):
//! * **Publishing.** Slot contents are published to thieves by `Release` stores of `split`
//!   (every store of it, including the owner's public pop, which moves it down and back; loom
//!   found the relaxed version) and acquired by the thief's `Acquire` load of `split`. Slots are
//!   two `AtomicUsize` accessed `Relaxed`: the owner writes its private part's slots, and reads
//!   back its own writes, with no order needed until a `Release` store of `split` publishes
//!   them; a thief that reads a slot the owner is rewriting (ring wrap-around) reads a stale
//!   value, never a torn one in the language's sense, and its CAS on `top` then fails and the
//!   value is discarded.
//! * **The last item.** Owner public-pop and thief steal follow Chase–Lev: the owner's store of
//!   `split` and the thief's load of `top` are separated by `SeqCst` fences on both sides, so
//!   they cannot both take the last item; the CAS on `top` decides a tie. Every write of `top`
//!   is such a `SeqCst` CAS (a steal, the owner's take of the last item, its batch hand-over);
//!   a CAS that fails only tells its caller that it lost, so its failure ordering is `Relaxed`.
//! * **Growth.** The buffer pointer is published with `Release` before any `split` store that
//!   exposes an index written into it; old buffers are kept until the deque is dropped, so a
//!   thief holding a stale pointer reads valid memory whose slot holds the right item for any
//!   index its CAS can win.
//! * **Reuse.** The owner's read of `top` before a push (`Deque::top`) is `Acquire`: a thief
//!   reads a slot and then moves `top` past it with its CAS, and the owner may rewrite that slot
//!   (after wrap-around) only once it has seen `top` past it; acquiring `top` makes the thief's
//!   read happen before the owner's write, as in Chase–Lev's push (Lê et al.; crossbeam-deque).
//!   A stale `top` is smaller than the true one, which only makes the capacity check and the
//!   empty checks conservative and a release late by one push; what must be exact is decided
//!   by a CAS on `top`. (It was `Relaxed`, which processors honour, since the slot's store
//!   depends on the load, but the language's memory model does not promise. The load compiles
//!   alike on x86, but the compiler may not move later accesses above it: measured, fib(32) at
//!   one worker in a default-profile build 9.6 to 10.0 ms, jacobi at one worker about 4%. A
//!   relaxed load with an `Acquire` fence only on pushes that can reuse a slot was worse where
//!   users build: fib 11.3 ms, out of line or not.)
//! * **Hints.** `wanted` carries no data: thieves raise it and the owner reads and lowers it
//!   `Relaxed`; a stale value only makes a release one push or poll late, or one too many. The
//!   owner's other reads of `top` (outside the fenced part of `pop_public`, and in
//!   `release_batch`, where only a public part found empty matters) are `Relaxed`. The counter
//!   `fenced_pops` and the snapshot `public_len` are `Relaxed`: statistics, estimates.

use crate::sync::atomic::{
    fence, AtomicBool, AtomicIsize, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};
use crate::sync::CachePadded;
use std::cell::Cell;
use std::sync::Arc;

/// What a deque holds: two machine words, opaque to the deque (the runtime packs a job pointer and
/// its entry function, or a suspended fiber, into them), except for batches, which the deque makes
/// itself: `(address | 1, 0)` of a boxed slice of items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item(pub usize, pub usize);

/// Private items needed before a thief's request is answered with a batch.
pub(crate) const BATCH_MIN: isize = 8;

impl Item {
    fn batch(items: *mut Box<[Item]>) -> Item {
        Item(items as usize | 1, 0)
    }
    /// If this item is a batch, takes ownership of its items. Whoever popped or stole the batch
    /// item calls this exactly once.
    pub(crate) fn take_batch(self) -> Option<Box<[Item]>> {
        if self.1 == 0 && self.0 & 1 == 1 {
            // SAFETY: made by `Item::batch` from a leaked box; the item was taken once.
            Some(*unsafe { Box::from_raw((self.0 & !1) as *mut Box<[Item]>) })
        } else {
            None
        }
    }
}

struct Buffer {
    mask: usize,
    slots: Box<[[AtomicUsize; 2]]>,
}

impl Buffer {
    fn alloc(cap: usize) -> *mut Buffer {
        debug_assert!(cap.is_power_of_two());
        let slots = (0..cap)
            .map(|_| [AtomicUsize::new(0), AtomicUsize::new(0)])
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Box::into_raw(Box::new(Buffer {
            mask: cap - 1,
            slots,
        }))
    }
    fn cap(&self) -> usize {
        self.mask + 1
    }
    fn write(&self, i: isize, it: Item) {
        let s = &self.slots[i as usize & self.mask];
        // Relaxed: used by `grow` on a buffer not yet shared (module doc, "Growth").
        s[0].store(it.0, Ordering::Relaxed);
        s[1].store(it.1, Ordering::Relaxed);
    }
    fn read(&self, i: isize) -> Item {
        let s = &self.slots[i as usize & self.mask];
        // Relaxed: a thief's read is ordered by its Acquire load of `split`; the owner reads its
        // own writes (module doc, "Publishing").
        Item(s[0].load(Ordering::Relaxed), s[1].load(Ordering::Relaxed))
    }
}

/// Fields written by thieves (and read by the owner), on their own cache line.
struct ThiefSide {
    top: AtomicIsize,
}

/// Fields written by the owner and read by thieves, on their own cache line.
struct OwnerSide {
    split: AtomicIsize,
    buffer: AtomicPtr<Buffer>,
    /// Pops of the public part (each pays a fence); written by the owner only, read for stats.
    fenced_pops: AtomicU64,
}

struct Inner {
    thief: CachePadded<ThiefSide>,
    owner: CachePadded<OwnerSide>,
    /// Raised by a thief that found the public part empty; the owner releases private work when it
    /// sees it and lowers it. On a line of its own: the owner reads it on every join and spawn
    /// (`WorkerThread::has_credit`), and thieves write it only to ask, not on every steal as
    /// they write `top`.
    wanted: CachePadded<AtomicBool>,
    /// Buffers replaced by growth; freed with the deque. Only the owner appends.
    retired: crate::sync::Mutex<Vec<usize>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: `Inner` is dropped when the owner and every stealer are gone, so no thread can
        // hold a pointer into any buffer; each was created by `Buffer::alloc` and is freed once.
        unsafe {
            // Relaxed: the last `Arc<Inner>` is going, so every other handle's accesses happen
            // before this (the `Arc`'s own release and acquire).
            drop(Box::from_raw(self.owner.buffer.load(Ordering::Relaxed)));
            for b in crate::sync::lock(&self.retired).drain(..) {
                drop(Box::from_raw(b as *mut Buffer));
            }
        }
    }
}

/// The owner's end. Not `Sync`: exactly one thread (the worker that owns it) pushes and pops.
pub(crate) struct Deque {
    inner: Arc<Inner>,
    /// Owner-local copies: only the owner writes `bottom` and `split`.
    bottom: Cell<isize>,
    split: Cell<isize>,
    buffer: Cell<*mut Buffer>,
    /// The current buffer's slots and mask, cached so a push or pop is one indexed access.
    slots: Cell<*const [AtomicUsize; 2]>,
    mask: Cell<usize>,
    /// A deque nobody steals from (the only worker of a pool): nothing is ever released, so
    /// every pop is private.
    solo: bool,
    /// Whether a thief's request may be answered with a batch ([`Item::batch`]).
    batches: bool,
}

// SAFETY: the owner handle may be moved to the thread that will own it; it is never shared
// (`Deque` is not `Sync`), and every field reached through `inner` is atomic.
unsafe impl Send for Deque {}

/// A thief's handle to someone else's deque.
#[derive(Clone)]
pub(crate) struct Stealer {
    inner: Arc<Inner>,
}

/// The outcome of one steal attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Steal {
    /// The public part was empty.
    Empty,
    /// Another thief (or the owner) won the race for the item; trying again may succeed.
    Retry,
    Success(Item),
}

/// What `push` did besides storing the item: whether it published work to thieves (the caller
/// then wakes a sleeping worker if there is one).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Pushed {
    Private,
    Released,
}

impl Deque {
    pub(crate) fn new(cap: usize) -> Deque {
        let cap = cap.max(2).next_power_of_two();
        let buf = Buffer::alloc(cap);
        Deque {
            inner: Arc::new(Inner {
                thief: CachePadded(ThiefSide {
                    top: AtomicIsize::new(0),
                }),
                wanted: CachePadded(AtomicBool::new(false)),
                owner: CachePadded(OwnerSide {
                    split: AtomicIsize::new(0),
                    buffer: AtomicPtr::new(buf),
                    fenced_pops: AtomicU64::new(0),
                }),
                retired: crate::sync::Mutex::new(Vec::new()),
            }),
            bottom: Cell::new(0),
            split: Cell::new(0),
            buffer: Cell::new(buf),
            // SAFETY: `buf` was just allocated.
            slots: Cell::new(unsafe { (*buf).slots.as_ptr() }),
            mask: Cell::new(cap - 1),
            solo: false,
            batches: true,
        }
    }

    /// A deque that answers a thief's request by publishing half of its private part, never
    /// with a batch: every steal takes one item (`Builder::steal_half(false)`).
    pub(crate) fn without_batches(mut self) -> Deque {
        self.batches = false;
        self
    }

    /// A deque for the only worker of a pool: it never releases work to thieves (there are
    /// none), so its pops never need a fence.
    pub(crate) fn without_thieves(mut self) -> Deque {
        self.solo = true;
        self
    }

    #[inline(always)]
    fn slot(&self, i: isize) -> &[AtomicUsize; 2] {
        // SAFETY: `slots` points at the current buffer's `mask + 1` slots, and the index is masked.
        unsafe { &*self.slots.get().add(i as usize & self.mask.get()) }
    }

    pub(crate) fn stealer(&self) -> Stealer {
        Stealer {
            inner: self.inner.clone(),
        }
    }

    fn buf(&self) -> &Buffer {
        // SAFETY: the owner's cached pointer is the current buffer, freed only when `Inner` drops.
        unsafe { &*self.buffer.get() }
    }

    /// The thieves' end index, as the owner reads it before pushing: possibly stale (smaller),
    /// never larger than true.
    #[inline(always)]
    pub(crate) fn top(&self) -> isize {
        // Acquire: thieves' reads of the slots below it happen before the owner reuses them
        // (module doc, "Reuse"); a stale value is smaller, which every use tolerates.
        self.inner.thief.top.load(Ordering::Acquire)
    }

    /// Items in the deque (private and public), as the owner sees it; a thief may be taking one.
    pub(crate) fn len(&self) -> usize {
        (self.bottom.get() - self.top()).max(0) as usize
    }

    /// Whether a thief found the public part empty and asked for work.
    #[inline(always)]
    pub(crate) fn wanted(&self) -> bool {
        // Relaxed: a request carries no data (module doc, "Hints").
        self.inner.wanted.load(Ordering::Relaxed)
    }

    /// The address of the `wanted` flag, for a reader that holds it instead of the deque (a
    /// fiber's record: `FiberLocal::thief_asked`). It stays valid as long as the deque: the flag
    /// lives in the shared part, which the deque's owner keeps alive.
    #[inline(always)]
    pub(crate) fn wanted_flag(&self) -> *const AtomicBool {
        &self.inner.wanted.0
    }

    /// The owner-side index the next push will use; a sync point remembers it to know which items
    /// were pushed after it.
    #[inline(always)]
    pub(crate) fn bottom(&self) -> isize {
        self.bottom.get()
    }

    /// Pushes at the owner's end. Publishes work to thieves when the public part is empty or a
    /// thief asked for work.
    #[inline(always)]
    pub(crate) fn push(&self, it: Item) -> Pushed {
        self.push_with_top(it, self.top())
    }

    /// `push` with a `top` the caller has just read (`Relaxed`; a stale, smaller value only makes
    /// the capacity check conservative and the release decision late by one push).
    #[inline(always)]
    pub(crate) fn push_with_top(&self, it: Item, t: isize) -> Pushed {
        let b = self.bottom.get();
        if b - t > self.mask.get() as isize {
            self.grow(t, b);
        }
        let s = self.slot(b);
        // Relaxed: a private slot, published later by a Release store of `split` (module doc,
        // "Publishing").
        s[0].store(it.0, Ordering::Relaxed);
        s[1].store(it.1, Ordering::Relaxed);
        self.bottom.set(b + 1);
        // Relaxed: `wanted` is a hint (module doc, "Hints").
        if (t >= self.split.get() || self.inner.wanted.load(Ordering::Relaxed)) && !self.solo {
            self.release();
            Pushed::Released
        } else {
            Pushed::Private
        }
    }

    #[cold]
    fn grow(&self, t: isize, b: isize) {
        let old = self.buf();
        let new = Buffer::alloc(old.cap() * 2);
        // SAFETY: `new` was just allocated and is not yet shared.
        let newr = unsafe { &*new };
        for i in t..b {
            newr.write(i, old.read(i));
        }
        // Release: a thief that acquires a later `split` sees the copied slots through `new`.
        self.inner.owner.buffer.store(new, Ordering::Release);
        crate::sync::lock(&self.inner.retired).push(self.buffer.get() as usize);
        self.buffer.set(new);
        self.slots.set(newr.slots.as_ptr());
        self.mask.set(newr.mask);
    }

    /// Moves the split up: by one item when nobody asked (the oldest private task becomes
    /// stealable), by half of the private part (at least one) when a thief raised `wanted`. When
    /// a thief asked, the public part is empty and there are at least [`BATCH_MIN`] private items,
    /// the half is handed over as one [`Item::batch`] instead, so one steal carries it all.
    #[cold]
    #[inline(never)]
    fn release(&self) {
        let s = self.split.get();
        let priv_len = self.bottom.get() - s;
        if priv_len <= 0 {
            return;
        }
        // Relaxed: a hint (module doc, "Hints").
        let wanted = self.inner.wanted.load(Ordering::Relaxed);
        if wanted
            && self.batches
            && priv_len >= BATCH_MIN
            && self.release_batch(s, (priv_len / 2) as usize)
        {
            return;
        }
        let n = if wanted { (priv_len + 1) / 2 } else { 1 };
        self.split.set(s + n);
        // Release: publishes the slots written by earlier pushes to thieves that acquire `split`.
        self.inner.owner.split.store(s + n, Ordering::Release);
        if wanted {
            // Relaxed: lowering the hint publishes nothing (module doc, "Hints").
            self.inner.wanted.store(false, Ordering::Relaxed);
        }
    }

    /// Hands the `k` oldest private items (indices `s .. s+k`, where `s` is the split) to thieves
    /// as one batch. The batch goes in the slot of the last of them, `s+k-1`; the slots below it
    /// become dead, and the owner moves `top` over them. That is safe because the public part is
    /// empty (`top == split`): no thief can take anything until `split` moves, which we do last,
    /// so nobody else can be moving `top`. The items left private keep their indices. Returns
    /// false (nothing done) if the public part is not empty.
    fn release_batch(&self, s: isize, k: usize) -> bool {
        // Relaxed: `top <= split == s`, and a stale `top` is smaller: reading `s` means the
        // public part is empty; anything else only gives up (module doc, "Hints").
        if self.inner.thief.top.load(Ordering::Relaxed) != s {
            return false;
        }
        let items: Box<[Item]> = (0..k as isize)
            .map(|i| {
                let sl = self.slot(s + i);
                // Relaxed: private slots, the owner's own writes (module doc, "Publishing").
                Item(sl[0].load(Ordering::Relaxed), sl[1].load(Ordering::Relaxed))
            })
            .collect();
        let last = s + k as isize - 1;
        // The CAS cannot fail: top == split == s and no thief can move top while they are equal.
        // SeqCst, like every write of top, so the Chase–Lev argument in `pop_public` still holds.
        if self
            .inner
            .thief
            .top
            // SeqCst, failure Relaxed: as every CAS of `top` (module doc, "The last item").
            .compare_exchange(s, last, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        let b = Item::batch(Box::into_raw(Box::new(items)));
        let sl = self.slot(last);
        // Relaxed: published by the Release store of `split` below (module doc, "Publishing").
        sl[0].store(b.0, Ordering::Relaxed);
        sl[1].store(b.1, Ordering::Relaxed);
        self.split.set(last + 1);
        // Release: publishes the batch (its box and its slot) to thieves that acquire `split`.
        self.inner.owner.split.store(last + 1, Ordering::Release);
        // Relaxed: lowering the hint publishes nothing (module doc, "Hints").
        self.inner.wanted.store(false, Ordering::Relaxed);
        true
    }

    /// Releases private work if a thief asked for it; called at points where the owner polls
    /// (pops). Returns whether anything was published.
    #[inline(always)]
    pub(crate) fn poll_wanted(&self) -> bool {
        // Relaxed: a hint (module doc, "Hints").
        if self.inner.wanted.load(Ordering::Relaxed) && self.bottom.get() > self.split.get() {
            self.release();
            true
        } else {
            false
        }
    }

    /// Pops the newest item, if any (private part first, without synchronisation).
    #[inline(always)]
    pub(crate) fn pop(&self) -> Option<Item> {
        let b = self.bottom.get() - 1;
        if b >= self.split.get() {
            self.bottom.set(b);
            let s = self.slot(b);
            // Relaxed: a private slot, the owner's own write (module doc, "Publishing").
            return Some(Item(
                s[0].load(Ordering::Relaxed),
                s[1].load(Ordering::Relaxed),
            ));
        }
        self.pop_public()
    }

    /// Chase–Lev pop of the public part, where `split` plays the role of Chase–Lev's bottom.
    #[cold]
    fn pop_public(&self) -> Option<Item> {
        let b = self.split.get() - 1;
        // Cheap early-out: Relaxed read; if even a stale top says empty, it is empty (top only grows).
        if self.inner.thief.top.load(Ordering::Relaxed) > b {
            return None;
        }
        let n = &self.inner.owner.fenced_pops;
        // Relaxed: a statistic with one writer, this owner (module doc, "Hints").
        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // Release, like every store of `split`: a thief that acquires any value of `split` must
        // see the slots below it (a Relaxed store here would start no release sequence).
        self.inner.owner.split.store(b, Ordering::Release);
        self.split.set(b);
        self.bottom.set(b);
        // SeqCst fence: orders our `split` store before our `top` load, pairing with the fence in
        // `steal` between its `top` load and `split` load (Dekker-style), so we and a thief cannot
        // both believe the last item is theirs without meeting at the CAS below.
        fence(Ordering::SeqCst);
        // Relaxed: the fence above orders it, as in Chase–Lev (module doc, "The last item").
        let t = self.inner.thief.top.load(Ordering::Relaxed);
        if t < b {
            return Some(self.buf().read(b));
        }
        let it = self.buf().read(b);
        let won = t == b
            && self
                .inner
                .thief
                .top
                // SeqCst, failure Relaxed: as every CAS of `top` (module doc, "The last item").
                .compare_exchange(t, t + 1, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok();
        // The deque is empty now either way: top == split == bottom == b + 1. Release, like
        // every store of `split` (module doc, "Publishing").
        self.inner.owner.split.store(b + 1, Ordering::Release);
        self.split.set(b + 1);
        self.bottom.set(b + 1);
        if won {
            Some(it)
        } else {
            None
        }
    }
}

impl Stealer {
    /// Tries to take the oldest public item. Never blocks, never waits for the owner.
    pub(crate) fn steal(&self) -> Steal {
        let i = &self.inner;
        // Acquire: pairs with the release half of the CAS that last moved `top`, so the `split`
        // read below is no older than the one that CAS was made against (as in Chase–Lev).
        let t = i.thief.top.load(Ordering::Acquire);
        // SeqCst fence: pairs with the owner's fence in `pop_public` (see there).
        fence(Ordering::SeqCst);
        // Acquire: makes the slots below `split` (written before the owner's Release store) visible.
        let s = i.owner.split.load(Ordering::Acquire);
        if t >= s {
            // Ask once: read first so a waiting thief does not keep invalidating the owner's line.
            // Relaxed: a request carries no data (module doc, "Hints").
            if !i.wanted.load(Ordering::Relaxed) {
                i.wanted.store(true, Ordering::Relaxed);
            }
            return Steal::Empty;
        }
        // Acquire: pairs with the Release in `grow`.
        let buf = i.owner.buffer.load(Ordering::Acquire);
        // SAFETY: buffers are freed only when `Inner` drops, and we hold an `Arc<Inner>`.
        let it = unsafe { (*buf).read(t) };
        match i
            .thief
            .top
            // SeqCst: decides the race for the item; failure Relaxed: a lost race returns Retry
            // (module doc, "The last item").
            .compare_exchange(t, t + 1, Ordering::SeqCst, Ordering::Relaxed)
        {
            Ok(_) => Steal::Success(it),
            Err(_) => Steal::Retry,
        }
    }

    /// Pops of the owner that took an item back from the public part (and paid a fence).
    pub(crate) fn fenced_pops(&self) -> u64 {
        // Relaxed: a statistic (module doc, "Hints").
        self.inner.owner.fenced_pops.load(Ordering::Relaxed)
    }

    /// Items in the public part now (a snapshot: thieves and the owner may be taking some).
    pub(crate) fn public_len(&self) -> usize {
        let i = &self.inner;
        // Relaxed: a snapshot, an estimate for the DWS coordinator (module doc, "Hints").
        let t = i.thief.top.load(Ordering::Relaxed);
        (i.owner.split.load(Ordering::Relaxed) - t).max(0) as usize
    }

    /// Whether the public part looks non-empty (a hint for the sleep protocol's re-check).
    pub(crate) fn has_public(&self) -> bool {
        let i = &self.inner;
        // SeqCst: read only by the sleep re-check, after the sleeper's fence, which pairs with
        // the producer's fence after its Release store of `split` (sleep.rs module doc).
        i.thief.top.load(Ordering::SeqCst) < i.owner.split.load(Ordering::SeqCst)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lifo_for_owner_fifo_for_thief() {
        let d = Deque::new(2);
        for i in 1..=10 {
            d.push(Item(i, 1));
        }
        let s = d.stealer();
        // The oldest item was released on the first push (public part was empty).
        assert_eq!(s.steal(), Steal::Success(Item(1, 1)));
        assert_eq!(d.pop(), Some(Item(10, 1)));
        assert_eq!(d.pop(), Some(Item(9, 1)));
        let mut rest = vec![];
        while let Some(Item(x, _)) = d.pop() {
            rest.push(x);
        }
        assert_eq!(rest, vec![8, 7, 6, 5, 4, 3, 2]);
        assert_eq!(s.steal(), Steal::Empty);
        assert_eq!(d.len(), 0);
        // The private items came back without a fence; an item released to thieves (the public
        // part was empty) comes back through the fenced pop.
        assert_eq!(s.fenced_pops(), 0);
        assert_eq!(d.push(Item(11, 1)), Pushed::Released);
        assert_eq!(d.pop(), Some(Item(11, 1)));
        assert_eq!(s.fenced_pops(), 1);
    }

    #[test]
    fn without_batches_a_request_publishes_half_and_steals_take_one() {
        for batches in [true, false] {
            let d = match batches {
                true => Deque::new(16),
                false => Deque::new(16).without_batches(),
            };
            let s = d.stealer();
            for i in 1..=10 {
                d.push(Item(i * 2, 1)); // item 2 released at once, the rest private
            }
            assert_eq!(s.steal(), Steal::Success(Item(2, 1)));
            assert_eq!(s.steal(), Steal::Empty); // raises wanted
            d.push(Item(22, 1)); // answers: 10 private items, half of them go
            let Steal::Success(it) = s.steal() else {
                panic!("nothing released")
            };
            match it.take_batch() {
                Some(b) => {
                    assert!(batches);
                    let got: Vec<_> = b.iter().map(|i| i.0).collect();
                    assert_eq!(got, vec![4, 6, 8, 10, 12]);
                }
                None => {
                    assert!(!batches);
                    assert_eq!(it, Item(4, 1));
                    for x in [6, 8, 10, 12] {
                        assert_eq!(s.steal(), Steal::Success(Item(x, 1)));
                    }
                }
            }
            let mut rest = vec![];
            while let Some(Item(x, _)) = d.pop() {
                rest.push(x);
            }
            assert_eq!(rest, vec![22, 20, 18, 16, 14], "batches {batches}");
        }
    }

    #[test]
    fn a_deque_without_thieves_keeps_everything_private() {
        let d = Deque::new(2).without_thieves();
        let s = d.stealer();
        for i in 1..=10 {
            assert_eq!(d.push(Item(i, 1)), Pushed::Private);
        }
        assert_eq!(s.steal(), Steal::Empty);
        let mut got = vec![];
        while let Some(Item(x, _)) = d.pop() {
            got.push(x);
        }
        assert_eq!(got, (1..=10).rev().collect::<Vec<_>>());
        assert_eq!(s.fenced_pops(), 0);
    }

    #[test]
    fn wanted_releases_half() {
        let d = Deque::new(64);
        let s = d.stealer();
        d.push(Item(0, 1)); // released: public empty
        for i in 1..7 {
            d.push(Item(i, 1)); // private, fewer than BATCH_MIN
        }
        assert_eq!(s.steal(), Steal::Success(Item(0, 1)));
        assert_eq!(s.steal(), Steal::Empty); // raises wanted
        assert!(d.poll_wanted());
        let mut got = vec![];
        while let Steal::Success(Item(x, _)) = s.steal() {
            got.push(x);
        }
        assert_eq!(got, vec![1, 2, 3]);
    }

    #[test]
    fn wanted_with_many_private_items_hands_over_a_batch() {
        let d = Deque::new(4);
        let s = d.stealer();
        for i in 0..20 {
            d.push(Item(i * 2, 1));
        }
        assert_eq!(s.steal(), Steal::Success(Item(0, 1)));
        assert_eq!(s.steal(), Steal::Empty);
        d.push(Item(40, 1));
        let Steal::Success(b) = s.steal() else {
            panic!("no batch")
        };
        let b: Vec<usize> = b
            .take_batch()
            .expect("a batch")
            .iter()
            .map(|i| i.0)
            .collect();
        assert_eq!(b, (1..11).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(s.steal(), Steal::Empty);
        let mut rest = vec![];
        while let Some(it) = d.pop() {
            assert!(it.take_batch().is_none());
            rest.push(it.0);
        }
        assert_eq!(rest, (11..21).rev().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(d.len(), 0);
    }

    #[test]
    fn concurrent_no_loss_no_duplicate() {
        use std::sync::atomic::AtomicBool;
        const N: usize = 200_000;
        let d = Deque::new(4);
        let stop = Arc::new(AtomicBool::new(false));
        let thieves: Vec<_> = (0..3)
            .map(|_| {
                let s = d.stealer();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut got = vec![];
                    loop {
                        match s.steal() {
                            Steal::Success(it) => match it.take_batch() {
                                Some(b) => got.extend(b.iter().map(|i| i.0)),
                                None => got.push(it.0),
                            },
                            Steal::Retry => {}
                            Steal::Empty => {
                                if stop.load(Ordering::SeqCst) {
                                    break;
                                }
                                std::hint::spin_loop();
                            }
                        }
                    }
                    got
                })
            })
            .collect();
        let mut mine = vec![];
        for i in 0..N {
            d.push(Item(i + 1, 7));
            if i % 3 == 0 {
                if let Some(it) = d.pop() {
                    match it.take_batch() {
                        Some(b) => mine.extend(b.iter().map(|i| i.0)),
                        None => mine.push(it.0),
                    }
                }
            }
        }
        while let Some(it) = d.pop() {
            match it.take_batch() {
                Some(b) => mine.extend(b.iter().map(|i| i.0)),
                None => mine.push(it.0),
            }
        }
        stop.store(true, Ordering::SeqCst);
        for t in thieves {
            mine.extend(t.join().unwrap());
        }
        mine.sort_unstable();
        assert_eq!(mine.len(), N, "lost or duplicated items");
        assert!(mine.iter().enumerate().all(|(i, &x)| x == i + 1));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::thread;

    /// Owner pushes, pops and grows (capacity 2) while a thief steals: every item is taken exactly
    /// once, whatever the interleaving.
    #[test]
    fn owner_vs_thief_exactly_once() {
        loom::model(|| {
            let d = Deque::new(2);
            let s = d.stealer();
            let th = thread::spawn(move || {
                let mut got = vec![];
                for _ in 0..2 {
                    if let Steal::Success(it) = s.steal() {
                        got.push(it.0);
                    }
                }
                got
            });
            let mut mine = vec![];
            d.push(Item(1, 1));
            d.push(Item(2, 1));
            d.push(Item(3, 1));
            while let Some(it) = d.pop() {
                mine.push(it.0);
            }
            let theirs = th.join().unwrap();
            let mut all = mine.clone();
            all.extend(theirs.iter().copied());
            all.sort_unstable();
            assert_eq!(all, vec![1, 2, 3], "owner {mine:?} thief {theirs:?}");
        });
    }

    /// The race for the last public item: owner's public pop against a thief's steal.
    #[test]
    fn last_item_race() {
        loom::model(|| {
            let d = Deque::new(2);
            d.push(Item(9, 1)); // released at once: the public part was empty
            let s = d.stealer();
            let th = thread::spawn(move || match s.steal() {
                Steal::Success(it) => Some(it.0),
                _ => None,
            });
            let mine = d.pop().map(|it| it.0);
            let theirs = th.join().unwrap();
            assert!(mine.is_some() != theirs.is_some(), "{mine:?} {theirs:?}");
        });
    }

    /// A thief's request answered with a batch, racing a second thief and the owner's pops: every
    /// item is taken exactly once, through the batch or on its own.
    #[test]
    fn batch_release_exactly_once() {
        loom::model(|| {
            let d = Deque::new(16);
            for i in 1..=9 {
                d.push(Item(i * 2, 1)); // item 1 released at once, 2..=9 private
            }
            let s = d.stealer();
            assert_eq!(s.steal(), Steal::Success(Item(2, 1)));
            assert_eq!(s.steal(), Steal::Empty); // raises wanted
            d.push(Item(20, 1)); // release: a batch of the 4 oldest private items
            let ths: Vec<_> = (0..2)
                .map(|_| {
                    let s = d.stealer();
                    thread::spawn(move || {
                        let mut got = vec![];
                        if let Steal::Success(it) = s.steal() {
                            match it.take_batch() {
                                Some(b) => got.extend(b.iter().map(|i| i.0)),
                                None => got.push(it.0),
                            }
                        }
                        got
                    })
                })
                .collect();
            let mut all = vec![2];
            while let Some(it) = d.pop() {
                match it.take_batch() {
                    Some(b) => all.extend(b.iter().map(|i| i.0)),
                    None => all.push(it.0),
                }
            }
            for t in ths {
                all.extend(t.join().unwrap());
            }
            all.sort_unstable();
            assert_eq!(all, (1..=10).map(|i| i * 2).collect::<Vec<_>>());
        });
    }

    /// Two thieves and a `wanted` release: no item is taken twice or lost.
    #[test]
    fn two_thieves_with_release() {
        loom::model(|| {
            let d = Deque::new(4);
            d.push(Item(1, 1));
            d.push(Item(2, 1));
            let ths: Vec<_> = (0..2)
                .map(|_| {
                    let s = d.stealer();
                    thread::spawn(move || match s.steal() {
                        Steal::Success(it) => vec![it.0],
                        _ => vec![],
                    })
                })
                .collect();
            d.poll_wanted();
            let mut all = vec![];
            while let Some(it) = d.pop() {
                all.push(it.0);
            }
            for t in ths {
                all.extend(t.join().unwrap());
            }
            all.sort_unstable();
            assert_eq!(all, vec![1, 2]);
        });
    }
}
