//! One slot of the core allocation table (`table.rs`): an owner word and a heartbeat word, and
//! the atomic operations every program applies to them. A core slot's owner is the program that
//! holds the core; a program slot's owner is the registered program itself. The same protocol
//! serves both.
//!
//! # The protocol
//!
//! Every change is one atomic operation on one 8-byte word:
//!
//! - **claim** (a hand-over from `from`, 0 for a free slot, to `to`): store the heartbeat, then
//!   compare-and-swap the owner `from` → `to`, then store the heartbeat again. The first store
//!   is what lets a reclaimer that sees `to` as the owner also see a fresh heartbeat, not the
//!   one the previous holder left: without it, a claim could be undone between its CAS and its
//!   heartbeat. (If the CAS fails, the store landed on a slot another program claimed in the
//!   same instant, whose own beat follows; it cannot keep a hung holder alive.) Taking a core
//!   back from the program that borrowed it (DWS §3.3) is the same hand-over with `from` the
//!   borrower.
//! - **release**: CAS `id` → 0. Only the holder's identity can release, so releasing a slot one
//!   no longer holds (because it was reclaimed) does nothing.
//! - **beat**: store the time into the heartbeat of a slot the program holds.
//! - **reclaim**: for a slot whose owner `o` is dead or whose heartbeat is stale, read the
//!   heartbeat again (a changed one means `o` just beat or the slot changed hands: skip it),
//!   then CAS `o` → 0. The CAS fails if the slot was released and claimed by another program
//!   meanwhile, so a reclaim never frees a live program's fresh claim.
//!
//! A program stalled (stopped, swapped out) for longer than the staleness limit may lose its
//! slots this way and finds out by reading the owner; two programs never hold one slot at once,
//! because the owner word is the only record of who holds it.
//!
//! # Orderings
//!
//! Every CAS of an owner word is `AcqRel` when it succeeds: its release half publishes the
//! heartbeat stored before it (**claim**), and its acquire half pairs with the release half of
//! the CAS whose value it replaces, so what that program stored before its CAS happens before
//! what this one stores after. When it fails it is `Relaxed`: the caller only learns that it
//! lost, and uses nothing it read. Every load of an owner word whose value the caller acts on
//! (to beat the slot, judge its heartbeat, report its holder) is `Acquire`, pairing with that
//! release half, so the heartbeat read or stored next is no older than the one stored before
//! the CAS it saw (**reclaim** relies on it). Heartbeats are `Relaxed`: a time, which publishes
//! nothing; a reclaimer reads one twice and acts only on an unchanged, stale one. A load made
//! only to skip a CAS that cannot succeed is `Relaxed`: the CAS decides.
//!
//! The words live in a file mapped into every program's memory (`table.rs`); the operations
//! below take them by reference, so the loom models at the end check the same code on words
//! of their own.

use crate::sync::atomic::{AtomicU64, Ordering};

/// One slot's two words.
#[derive(Clone, Copy)]
pub(crate) struct Slot<'a> {
    pub(crate) owner: &'a AtomicU64,
    pub(crate) beat: &'a AtomicU64,
}

impl Slot<'_> {
    /// The owner (0: free), read to act on (beat, judge, report).
    #[inline]
    pub(crate) fn owner(&self) -> u64 {
        // Acquire: "Orderings" above.
        self.owner.load(Ordering::Acquire)
    }

    /// **claim**: hands the slot from `from` (0: free) to `to`; true if it did. `now` gives the
    /// time for each heartbeat store.
    pub(crate) fn hand_over(&self, from: u64, to: u64, now: impl Fn() -> u64) -> bool {
        // Relaxed: only skips a CAS that cannot succeed; the CAS decides.
        if self.owner.load(Ordering::Relaxed) != from {
            return false;
        }
        // Relaxed: published by the CAS's release half ("Orderings").
        self.beat.store(now(), Ordering::Relaxed);
        let won = self
            .owner
            // AcqRel, failure Relaxed: "Orderings".
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if won {
            // Relaxed: a heartbeat ("Orderings").
            self.beat.store(now(), Ordering::Relaxed);
        }
        won
    }

    /// **release**: frees the slot if `id` holds it; true if it did.
    pub(crate) fn release(&self, id: u64) -> bool {
        self.owner
            // AcqRel, failure Relaxed: "Orderings".
            .compare_exchange(id, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// **beat**: stores `now` as the heartbeat if `id` holds the slot; true if it does.
    pub(crate) fn beat_if_held(&self, id: u64, now: u64) -> bool {
        if self.owner() != id {
            return false;
        }
        // Relaxed: a heartbeat ("Orderings").
        self.beat.store(now, Ordering::Relaxed);
        true
    }

    /// The owner and its heartbeat, read as a reclaim reads them: `None` if the slot is free.
    pub(crate) fn owner_and_beat(&self) -> Option<(u64, u64)> {
        let o = self.owner();
        // Relaxed: a heartbeat, no older than the one stored before the claim that wrote `o`
        // (the Acquire load above; "Orderings").
        (o != 0).then(|| (o, self.beat.load(Ordering::Relaxed)))
    }

    /// **reclaim**: frees the slot if `stale(owner, heartbeat)` and the heartbeat does not
    /// change between two reads; true if it did.
    pub(crate) fn reclaim(&self, mut stale: impl FnMut(u64, u64) -> bool) -> bool {
        let Some((o, b)) = self.owner_and_beat() else {
            return false;
        };
        // Relaxed: the second read only sees whether the heartbeat changed ("Orderings").
        if !stale(o, b) || self.beat.load(Ordering::Relaxed) != b {
            return false;
        }
        self.owner
            // AcqRel, failure Relaxed: "Orderings"; what matters here is that it fails if the
            // word changed since `o` was read.
            .compare_exchange(o, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A heartbeat older than this (in the models' own time) is stale.
    const LIMIT: u64 = 10;
    /// The time now, for every program in the models.
    const NOW: u64 = 100;

    fn words(owner: u64, beat: u64) -> Arc<[AtomicU64; 2]> {
        Arc::new([AtomicU64::new(owner), AtomicU64::new(beat)])
    }

    fn slot(w: &[AtomicU64; 2]) -> Slot<'_> {
        Slot {
            owner: &w[0],
            beat: &w[1],
        }
    }

    fn stale(_owner: u64, beat: u64) -> bool {
        NOW - beat > LIMIT
    }

    /// Two programs claim one free slot: exactly one wins, and the slot is the winner's.
    #[test]
    fn one_of_two_claims_wins() {
        loom::model(|| {
            let w = words(0, 0);
            let other = {
                let w = w.clone();
                thread::spawn(move || slot(&w).hand_over(0, 2, || NOW))
            };
            let mine = slot(&w).hand_over(0, 1, || NOW);
            let theirs = other.join().unwrap();
            assert!(mine != theirs, "both or neither claim won");
            assert_eq!(slot(&w).owner(), if mine { 1 } else { 2 });
        });
    }

    /// A free slot whose heartbeat its last holder left long ago: a program claims it while
    /// another program reclaims stale slots. The reclaim never undoes the fresh claim, because
    /// a reclaimer that sees the new owner sees the heartbeat stored before the claim's CAS.
    #[test]
    fn a_reclaim_never_undoes_a_fresh_claim() {
        loom::model(|| {
            let w = words(0, 0);
            let reclaimer = {
                let w = w.clone();
                thread::spawn(move || slot(&w).reclaim(stale))
            };
            let claimed = slot(&w).hand_over(0, 1, || NOW);
            let reclaimed = reclaimer.join().unwrap();
            assert!(claimed);
            assert!(!reclaimed, "a fresh claim was reclaimed");
            assert_eq!(slot(&w).owner(), 1);
        });
    }

    /// A silent holder's stale slot: the holder releases it and a third program claims it while
    /// a reclaimer judges the old holder stale. The reclaim frees the old holder's slot or
    /// nothing, never the new holder's claim.
    #[test]
    fn a_reclaim_frees_only_the_holder_it_judged() {
        loom::model(|| {
            let w = words(1, 0);
            let reclaimer = {
                let w = w.clone();
                thread::spawn(move || slot(&w).reclaim(stale))
            };
            let released = slot(&w).release(1);
            let claimed = slot(&w).hand_over(0, 2, || NOW);
            let reclaimed = reclaimer.join().unwrap();
            assert!(released != reclaimed, "the slot was freed twice, or never");
            assert_eq!(slot(&w).owner(), if claimed { 2 } else { 0 });
        });
    }

    /// A program takes back its core (2) from the borrower (1) while the borrower releases it:
    /// one of the two succeeds, and the slot ends with the program or free accordingly.
    #[test]
    fn a_take_back_races_the_borrowers_release() {
        loom::model(|| {
            let w = words(1, NOW);
            let borrower = {
                let w = w.clone();
                thread::spawn(move || slot(&w).release(1))
            };
            let taken = slot(&w).hand_over(1, 2, || NOW);
            let released = borrower.join().unwrap();
            assert!(
                taken != released,
                "both or neither of take-back and release won"
            );
            assert_eq!(slot(&w).owner(), if taken { 2 } else { 0 });
        });
    }
}
