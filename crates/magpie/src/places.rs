//! SLAW's places and CAB's squads: workers grouped by socket, each group with a mailbox.
//!
//! A place's mailbox holds tasks sent to it from elsewhere (`Scope::spawn_at`); an idle worker
//! looks there after the deques of its own place. CAB's squads are places whose mailboxes are
//! inter-socket task pools, served one task at a time by each squad's head worker
//! (`Scope::inter_spawn`).
//!
//! **Counts and flags.** `mail` counts the items in all mailboxes, a hint like the registry's
//! `injected`: a sender pushes under the mailbox's lock, then raises the count `SeqCst` and wakes
//! sleepers (the publication of the sleep protocol, `sleep.rs`), and a sleeper's re-check reads
//! it `SeqCst` after its fence. The lock orders the items themselves, so a taker's first look is
//! `Relaxed` (a stale zero is looked at again on its next round, and by the sleep re-check), and
//! its decrement, under the lock, publishes nothing. `busy` carries no data either: a squad's
//! head sets it when it takes an inter-socket task, and whoever ends that task clears it; every
//! access is `SeqCst` because the head's sleep re-check reads it, but no fence and wake follow
//! the clearing store, so a head asleep while its squad was busy learns that it is free only
//! when something else wakes it (normally the head itself ran the task, and clears the flag
//! before it looks at its pool again).

use crate::deque::Item;
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{CachePadded, Mutex};
use std::collections::VecDeque;

/// SLAW §IV: workers grouped into places (one per socket of the topology that has workers), each
/// with a mailbox for tasks sent to it from elsewhere. An idle worker looks in its own deque, then
/// the deques of its place, then its place's mailbox; with `cross_steal`, only then at other
/// places' deques and mailboxes (SLAW's stated future work; off by default, as in SLAW).
pub(crate) struct Places {
    /// The place of each worker.
    pub of_worker: Vec<usize>,
    /// The workers of each place.
    pub workers: Vec<Vec<usize>>,
    pub(crate) mailboxes: Vec<CachePadded<Mutex<VecDeque<Item>>>>,
    /// Items in all mailboxes (a hint for sleepers).
    pub(crate) mail: AtomicUsize,
    pub cross_steal: bool,
    /// CAB (§III-A, Algorithm I): the places are squads, their mailboxes the inter-socket task
    /// pools, taken only by each squad's head worker (its first), and only while the squad runs
    /// no other inter-socket task (`busy`).
    pub squads: bool,
    pub(crate) busy: Vec<AtomicBool>,
    /// CAB with squad hints (`Builder::squad_hints`): a head takes another squad's inter-socket
    /// task only while that squad is busy, since an idle squad's head takes its own soon; the
    /// task then runs on the socket it was named for.
    pub(crate) hints: bool,
}

impl Places {
    pub(crate) fn new(
        topology: &crate::topology::Topology,
        workers: usize,
        cross_steal: bool,
        squads: bool,
        hints: bool,
    ) -> Places {
        let mut sockets: Vec<usize> = Vec::new();
        let mut of_worker = Vec::with_capacity(workers);
        for w in 0..workers {
            let s = topology.socket_of(w);
            let p = match sockets.iter().position(|&x| x == s) {
                Some(p) => p,
                None => {
                    sockets.push(s);
                    sockets.len() - 1
                }
            };
            of_worker.push(p);
        }
        let mut ws = vec![Vec::new(); sockets.len()];
        for (w, &p) in of_worker.iter().enumerate() {
            ws[p].push(w);
        }
        Places {
            of_worker,
            mailboxes: (0..sockets.len()).map(|_| Default::default()).collect(),
            workers: ws,
            mail: AtomicUsize::new(0),
            cross_steal,
            squads,
            busy: (0..sockets.len()).map(|_| AtomicBool::new(false)).collect(),
            hints,
        }
    }

    /// CAB: squad `p` finished its inter-socket task.
    pub(crate) fn set_idle(&self, p: usize) {
        // SeqCst: as every access to `busy` (module doc, "Counts and flags").
        self.busy[p].store(false, Ordering::SeqCst);
    }

    /// CAB, Algorithm I steps 4-6(b): worker `me`, if it is its squad's head and the squad runs
    /// no inter-socket task, takes one from its squad's pool, else from another squad's (from a
    /// random one on; with hints, only from a busy squad's), and marks its squad busy.
    pub(crate) fn take_inter(&self, me: usize, start: usize) -> Option<Item> {
        let p = self.of_worker[me];
        // SeqCst: as every access to `busy` (module doc, "Counts and flags"); a stale `true`
        // only makes the head wait a round.
        if self.workers[p][0] != me || self.busy[p].load(Ordering::SeqCst) {
            return None;
        }
        let n = self.count();
        for k in 0..n {
            let q = if k == 0 { p } else { (p + start + k) % n };
            // SeqCst: as every access to `busy`; here only a hint (a stale value picks another
            // pool or skips this one for a round).
            if k > 0 && (q == p || (self.hints && !self.busy[q].load(Ordering::SeqCst))) {
                continue;
            }
            if let Some(it) = self.take(q) {
                // SeqCst: as every access to `busy` (module doc, "Counts and flags").
                self.busy[p].store(true, Ordering::SeqCst);
                return Some(it);
            }
        }
        None
    }

    pub(crate) fn count(&self) -> usize {
        self.workers.len()
    }

    /// Sends `it` to place `p`'s mailbox.
    pub(crate) fn send(&self, p: usize, it: Item) {
        let mut q = crate::sync::lock(&self.mailboxes[p]);
        q.push_back(it);
        // SeqCst: the sleep protocol's publication (module doc, "Counts and flags"); the caller
        // wakes sleepers next. Counted under the lock, so a taker (which counts down under it)
        // never takes the item before it is counted: the count never wraps.
        self.mail.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn take(&self, p: usize) -> Option<Item> {
        // Relaxed: a hint; the lock orders the items (module doc, "Counts and flags").
        if self.mail.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let it = crate::sync::lock(&self.mailboxes[p]).pop_front();
        if it.is_some() {
            // SeqCst: as the increment; the decrement publishes nothing (module doc, "Counts and
            // flags").
            self.mail.fetch_sub(1, Ordering::SeqCst);
        }
        it
    }

    pub(crate) fn has_mail(&self, p: usize) -> bool {
        // SeqCst: the sleep re-check's read, after the sleeper's fence (module doc, "Counts and
        // flags"); the lock then shows the items themselves.
        self.mail.load(Ordering::SeqCst) > 0 && !crate::sync::lock(&self.mailboxes[p]).is_empty()
    }
}
impl crate::Pool {
    /// Number of places ([`Builder::places`](crate::Builder::places)); 1 when the pool has none.
    pub fn places(&self) -> usize {
        self.registry().places.as_ref().map_or(1, |p| p.count())
    }
}
