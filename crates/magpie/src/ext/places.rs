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
use crate::hooks::Mailboxes;
use crate::job::{Tag, Work};
use crate::policy::Policy;
use crate::registry::Registry;
use crate::scope::{scope, Scope, SendPtr};
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{CachePadded, Mutex};
use crate::topology::Topology;
use crate::worker;
use std::any::Any;
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
    /// The places of the pool `reg` belongs to, if it has them.
    fn of(reg: &Registry) -> Option<&Places> {
        reg.places.as_ref()?.as_any().downcast_ref()
    }

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
/// The core's view of the places (`hooks.rs`).
impl Mailboxes for Places {
    fn count(&self) -> usize {
        self.workers.len()
    }

    fn place_of(&self, w: usize) -> usize {
        self.of_worker[w]
    }

    fn victim_tiers(&self, me: usize, workers: usize) -> [Vec<usize>; 3] {
        let mine = self.of_worker[me];
        let (near, far): (Vec<usize>, Vec<usize>) = (0..workers)
            .filter(|&w| w != me)
            .partition(|&w| self.of_worker[w] == mine);
        [
            near,
            Vec::new(),
            if self.cross_steal { far } else { Vec::new() },
        ]
    }

    fn take_own(&self, me: usize, rand: &dyn Fn() -> u64) -> Option<Item> {
        if self.squads {
            self.take_inter(me, rand() as usize)
        } else {
            self.take(self.of_worker[me])
        }
    }

    fn take_other(&self, me: usize) -> Option<Item> {
        if !self.cross_steal {
            return None;
        }
        let mine = self.of_worker[me];
        (0..self.count())
            .filter(|&p| p != mine)
            .find_map(|p| self.take(p))
    }

    fn has_visible_work(&self, me: usize, public: &dyn Fn(usize) -> bool) -> bool {
        let p = self.of_worker[me];
        if self.squads {
            self.workers[p].iter().any(|&w| public(w))
                || (self.workers[p][0] == me
                    // SeqCst: as every access to `busy` (module doc, "Counts and flags").
                    && !self.busy[p].load(Ordering::SeqCst)
                    && (0..self.count()).any(|q| self.has_mail(q)))
        } else if !self.cross_steal {
            self.has_mail(p) || self.workers[p].iter().any(|&w| public(w))
        } else {
            (0..self.count()).any(|q| self.has_mail(q)) || (0..self.of_worker.len()).any(public)
        }
    }

    fn queued(&self) -> usize {
        // Relaxed: an estimate for the DWS coordinator, read once a period; no data.
        self.mail.load(Ordering::Relaxed)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The spawns that send work to a place's mailbox.
impl<'scope> Scope<'scope> {
    /// Spawns `f` at place `place` (SLAW §IV; modulo the pool's number of places): a task for
    /// another place goes to that place's mailbox, where only that place's workers take it
    /// (unless the pool allows cross-place stealing); a task for the spawner's own place, or any
    /// spawn in a pool without places, is an ordinary [`spawn`](Self::spawn).
    pub fn spawn_at<F>(&self, place: usize, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let reg = self.registry();
        let Some(pl) = Places::of(reg) else {
            return self.spawn(f);
        };
        let p = place % pl.count();
        // Inside a schedule region the region says where work runs (its positions name every
        // task, and a strict constraint forbids work to move but by donation): an ordinary spawn.
        if place_index() == Some(p) || reg.region.active() {
            return self.spawn(f);
        }
        // A help-first spawn of the spawning worker, if it is one (a tracing event like any).
        let tag = worker::current().map(|wt| {
            let tag = wt.trace_tag(wt.fiber_local().depth.get());
            wt.count_spawn(false);
            tag
        });
        self.count.increment();
        let job = self.job(f, reg.config.trace.then(|| tag.unwrap_or(Tag::NONE)));
        pl.send(
            p,
            Work::Task {
                job,
                continuation: false,
            }
            .encode(),
        );
        reg.wake();
    }

    /// CAB's inter-socket spawn (§III-C): in a pool with squads ([`Builder::squads`]), `f` goes
    /// help-first into the spawning worker's squad's inter-socket pool, from which a squad's head
    /// worker takes it when that squad runs no other inter-socket task; while it runs, its
    /// squad's workers share its intra-socket spawns. Elsewhere, a help-first spawn.
    ///
    /// [`Builder::squads`]: crate::Builder::squads
    pub fn inter_spawn<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.inter_spawn_to(None, f)
    }

    /// [`inter_spawn`](Self::inter_spawn) into squad `squad`'s pool (modulo the number of
    /// squads) instead of the spawner's, unless the pool was built with
    /// [`Builder::squad_hints`]`(false)`. A squad's head still takes from other squads' pools
    /// when its own is empty, so the hint places work without idling anyone. A program that cuts
    /// its data the same way every step and names the same squad for the same part keeps each
    /// part in one socket's cache from step to step.
    ///
    /// [`Builder::squad_hints`]: crate::Builder::squad_hints
    pub fn inter_spawn_at<F>(&self, squad: usize, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.inter_spawn_to(Some(squad), f)
    }

    fn inter_spawn_to<F>(&self, squad: Option<usize>, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let reg = self.registry();
        // Inside a schedule region, as in `spawn_at`: an ordinary (help-first) spawn.
        let Some(pl) = Places::of(reg).filter(|pl| pl.squads && !reg.region.active()) else {
            return self.spawn_with(Policy::HelpFirst, f);
        };
        let home = match squad {
            Some(q) if reg.config.squad_hints => q % pl.count(),
            _ => place_index().unwrap_or(0),
        };
        let tag = worker::current().map(|wt| {
            let tag = wt.trace_tag(wt.fiber_local().depth.get());
            wt.count_spawn(false);
            tag
        });
        self.count.increment();
        let sp = SendPtr(reg as *const Registry);
        let task = move |s: &Scope<'scope>| {
            /// Frees the squad that runs the task when it ends, even by a panic.
            struct Done(*const Registry, usize);
            impl Drop for Done {
                fn drop(&mut self) {
                    // SAFETY: the registry outlives every task of its pools.
                    let reg = unsafe { &*self.0 };
                    if let Some(pl) = Places::of(reg) {
                        pl.set_idle(self.1);
                        // The squad's head may have gone to sleep while the squad was busy
                        // (its sleep re-check ignores the inter-socket pools then): wake it to
                        // look again. `set_idle`'s SeqCst store, then the wake's fence and read
                        // of the head's flag, against the head's announcement, fence and
                        // re-check: the sleep protocol's handshake (sleep.rs).
                        reg.wake_worker(pl.workers[self.1][0]);
                    }
                }
            }
            let sp = sp;
            let _done = Done(sp.0, place_index().unwrap_or(0));
            f(s)
        };
        let job = self.job(task, reg.config.trace.then(|| tag.unwrap_or(Tag::NONE)));
        pl.send(
            home,
            Work::Task {
                job,
                continuation: false,
            }
            .encode(),
        );
        reg.wake();
    }
}

impl crate::Pool {
    /// Number of places ([`Builder::places`](crate::Builder::places)); 1 when the pool has none.
    pub fn places(&self) -> usize {
        self.registry().places.as_ref().map_or(1, |p| p.count())
    }
}

// The places and squads of the pool the caller runs in, as the public API asks for them (re-
// exported by lib.rs).

/// The place of the worker running the caller, if it runs on a worker of a pool with places
/// ([`Builder::places`](crate::Builder::places)).
pub fn place_index() -> Option<usize> {
    let w = worker::current()?;
    w.core
        .registry
        .places
        .as_ref()
        .map(|p| p.place_of(w.core.index))
}

/// CAB's boundary level (Eq. 4) for a divide-and-conquer computation over `data_bytes` that
/// splits its data `branching` ways at each level, on the topology of the pool the caller runs
/// in: the smallest level whose tasks number at least one per socket and each fit one socket's
/// last-level cache; 0 on one socket (no inter-socket tier) or outside a pool with squads.
/// [`Builder::boundary_level`](crate::Builder::boundary_level) overrides it.
pub fn boundary_level(data_bytes: u64, branching: u32) -> u32 {
    let Some(w) = worker::current() else {
        return 0;
    };
    let c = &w.core.registry.config;
    if !c.squads {
        return 0;
    }
    let topology = w.core.registry.extensions.get::<Topology>();
    c.boundary_level
        .unwrap_or_else(|| topology.map_or(0, |t| t.boundary_level(data_bytes, branching)))
}

/// Whether the caller runs in a pool with CAB's squads ([`Builder::squads`](crate::Builder::squads)).
pub fn current_squads() -> bool {
    worker::current().is_some_and(|w| w.core.registry.config.squads)
}

/// CAB's bi-tier computation: runs `body(scope, BL)` in a new scope, with BL the
/// [`boundary_level`] for `data_bytes` split `branching` ways per level. The body is the task at
/// level 1; tasks it and its descendants create with [`Scope::inter_spawn`](crate::Scope::inter_spawn) above level BL are
/// the inter-socket tier, and each task at level BL runs its own work (joins, spawns) within
/// its squad.
pub fn bi_tier<'scope, R, F>(data_bytes: u64, branching: u32, body: F) -> R
where
    F: FnOnce(&Scope<'scope>, u32) -> R + Send,
    R: Send,
{
    let bl = boundary_level(data_bytes, branching);
    scope(move |s| body(s, bl))
}

/// Number of places of the pool the caller runs in: 1 outside a pool or in a pool without places.
pub fn current_places() -> usize {
    worker::current()
        .and_then(|w| w.core.registry.places.as_ref().map(|p| p.count()))
        .unwrap_or(1)
}
