//! Schedules as data: record where a region of a program's work moved between workers, store it,
//! edit it, and follow it on a later run (Lifflander's thesis, §4.4.2 and Ch. 6).
//!
//! # Cuts and positions
//!
//! Every task of a region has a *position*: the path of child indices from the region's root
//! task. A task's children are numbered in the order it creates them: a `join(a, b)` gives `a`
//! the next index and `b` the one after; a scope spawn takes the next index. The code after a
//! sync point belongs to the task that reached it, and since a started task never changes
//! thread (see `core/fiber/mod.rs`) a task runs on one worker from start to end.
//!
//! A task that runs on another worker than its parent is a *cut*: the places in the spawn tree
//! where work moved. A [`Schedule`] is the set of a region's cuts, each with the worker that ran
//! it and its *rank* (its place among the cuts that worker began, counting from 0), and the
//! worker that ran the root. Every other task ran on its parent's worker, so the cuts say where
//! every task ran, and the schedule grows with the steals, not with the tasks. Positions are
//! counted from the root, so pruning a cut or an extra steal does not rename the others.
//!
//! # Recording and following
//!
//! [`record`] runs a region and returns the schedule it took. [`follow`] runs a region under a
//! [`Constraint`] on a schedule (a *template*) and returns the schedule it took, which an
//! iterative program keeps for its next iteration. Following works by *donation*: when a task
//! reaches a child that the template cuts to another worker, it hands that child (a closure that
//! has not started) to that worker and wakes it; the donor goes on with the rest and, at the
//! sync point, waits for the donated child like for a stolen one. So the code after a sync whose
//! child was donated runs where the code before it ran, as everywhere in magpie.
//!
//! * [`Constraint::Ordered`] (StOWS): no random steals; each worker runs the cuts donated to it
//!   in the template's rank order. When every worker is idle and the cut a worker waits for has
//!   not come (the program is not the template's shape: Rule 6.3.1 lets a recorded cut not
//!   happen), the waiting cut with the lowest rank runs anyway and is counted in
//!   [`Stats::deviations`](crate::Stats::deviations); the worker then takes the later ones in order.
//! * [`Constraint::Unordered`] (StUWS): no random steals; each worker runs the cuts donated to it
//!   in any order (lowest rank first when several wait).
//! * [`Constraint::Relaxed`] (RelWS): donated work first; a worker with none steals at random,
//!   and what it steals is followed below as the template says.
//!
//! Under the two strict constraints a task with no cut below it runs its whole subtree where it
//! is, as plain calls; [`may_coarsen`] tells it so, so it may call a sequential kernel instead of
//! spawning (§6.5). Under the template, a task deeper than every cut runs with its cut; a cut
//! the program never reaches is skipped (a counted deviation under `Ordered` only if a worker
//! had to stop waiting for it); a template worker the pool does not have is taken modulo the
//! pool's size. The template's root worker and the worker that runs the region's root swap
//! roles, so a region followed from another worker keeps its shape.
//!
//! # Designation
//!
//! [`join_designated`](crate::join_designated) and
//! [`Scope::spawn_designated`](crate::Scope::spawn_designated) donate a child to a chosen worker
//! (§6.3.2), inside a region or not; recording such a program gives its template.
//!
//! Regions do not nest: one pool records or follows one region at a time.
//!
//! # What a region holds
//!
//! A region is a `finish` for every task created in it: [`record`] and [`follow`] return only
//! when the closure has returned and every task it created has finished, including tasks it
//! spawned into a scope opened *outside* the region (that scope waits for them too, but the
//! region does not end before them: their cuts belong to its schedule). Every task made by
//! `join`, scope spawns (into any enclosing scope, from any nested call), `join_designated` and
//! `Scope::spawn_designated` is positioned, and under `Ordered` each of them runs on the worker
//! the template says: the leaf-to-worker map of a follow is the recorded one. What `Ordered`
//! cannot always keep is the *order* in which a worker begins its cuts: a worker's own
//! continuations resume when their stolen halves finish, which depends on timing the template
//! does not hold, so a follow can reach a state where every worker waits for a cut ranked
//! before one it holds; the stall rule then runs the held one early and counts a deviation.
//! Inside a region, `Scope::spawn_at` and `Scope::inter_spawn` are ordinary spawns (the
//! template, not a mailbox, says where work runs). Not part of a region, neither recorded nor
//! followed: work sent to the pool rather than spawned in a task (`magpie::spawn`,
//! `spawn_fifo`, `broadcast`, an `install` into another pool, a `Scope::spawn` made from a
//! thread that is not one of the pool's workers), and the continuations a pool built with the
//! `unsafe` `Builder::allow_migration` lets thieves take.
//!
//! # Iterative programs
//!
//! [`Iterate`] runs an iterative program's iterations as regions: record, then follow
//! `Relaxed` (pruned) and extract until the schedule settles, then follow it `Ordered` (the
//! thesis's §6.4 and §6.5 loop; `iterate.rs`).

mod file;
pub(crate) mod held;
mod iterate;
pub(crate) mod region;
mod stall;

pub use file::{ScheduleError, FORMAT_VERSION, MAGIC};
pub use iterate::{Iterate, Stage, Step};
pub use region::{follow, may_coarsen, record};

use std::collections::BTreeMap;

/// How closely [`follow`] keeps to its template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Constraint {
    /// StOWS: the template's workers in the template's order, no random steals.
    Ordered,
    /// StUWS: the template's workers in any order, no random steals.
    Unordered,
    /// RelWS: the template's workers first; idle workers steal at random.
    Relaxed,
}

impl Constraint {
    /// The name the CLI uses: `ordered`, `unordered` or `relaxed`.
    pub fn name(self) -> &'static str {
        match self {
            Constraint::Ordered => "ordered",
            Constraint::Unordered => "unordered",
            Constraint::Relaxed => "relaxed",
        }
    }
}

impl std::str::FromStr for Constraint {
    type Err = String;
    fn from_str(s: &str) -> Result<Constraint, String> {
        match s {
            "ordered" | "stows" => Ok(Constraint::Ordered),
            "unordered" | "stuws" => Ok(Constraint::Unordered),
            "relaxed" | "relws" => Ok(Constraint::Relaxed),
            _ => Err(format!(
                "unknown constraint '{s}' (expected ordered, unordered or relaxed)"
            )),
        }
    }
}

/// One cut: a task that ran on another worker than its parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cut {
    /// Its position: child indices from the region's root (never empty).
    pub path: Vec<u32>,
    /// The worker that ran it.
    pub worker: u32,
    /// Its place among the cuts that worker began (from 0).
    pub rank: u32,
}

/// A region's schedule: where its work moved (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    workers: u32,
    root: u32,
    /// Sorted by path.
    cuts: Vec<Cut>,
    /// What the schedule is of, in the recorder's words (see [`Schedule::note`]).
    note: String,
}

/// Worker `w` of a run whose root ran on `t`, seen from a run whose root ran on `a`: the two
/// roots' workers swap roles, every other worker stays (how `follow` maps a template, and how
/// two runs' schedules are compared).
pub(crate) fn swap_roots(w: usize, t: usize, a: usize) -> usize {
    match w {
        _ if w == t => a,
        _ if w == a => t,
        _ => w,
    }
}

impl Schedule {
    /// A schedule from its parts: `workers` workers, the root on `root_worker`, and `cuts` (in
    /// any order). Checks that every worker index is below `workers`, that paths are non-empty
    /// and distinct, and that no worker has two cuts of one rank.
    pub fn new(
        workers: usize,
        root_worker: usize,
        cuts: Vec<Cut>,
    ) -> Result<Schedule, ScheduleError> {
        let bad = |why: String| Err(ScheduleError::Invalid(why));
        if workers == 0 || workers > u32::MAX as usize {
            return bad(format!("{workers} workers"));
        }
        if root_worker >= workers {
            return bad(format!("root worker {root_worker} of {workers} workers"));
        }
        let mut cuts = cuts;
        cuts.sort();
        let mut ranks = std::collections::HashSet::new();
        for (i, c) in cuts.iter().enumerate() {
            if c.path.is_empty() {
                return bad("a cut with an empty path (the root is not a cut)".into());
            }
            if i > 0 && cuts[i - 1].path == c.path {
                return bad(format!("two cuts at path {:?}", c.path));
            }
            if c.worker as usize >= workers {
                return bad(format!("a cut on worker {} of {workers} workers", c.worker));
            }
            if !ranks.insert((c.worker, c.rank)) {
                return bad(format!(
                    "two cuts of rank {} on worker {}",
                    c.rank, c.worker
                ));
            }
        }
        Ok(Schedule {
            workers: workers as u32,
            root: root_worker as u32,
            cuts,
            note: String::new(),
        })
    }

    /// A user-specified schedule (§6.3.2) for a region whose tasks halve their work with one
    /// `join` each (left half, right half), as a recursive loop over rows or blocks does: the
    /// `2^d` subtrees at depth `d = ⌈log₂ workers⌉` go to the workers in order, subtree `i` to
    /// worker `i × workers / 2^d`, so each worker gets one contiguous share of the work and
    /// worker 0 the first (the root's). Each right half whose first subtree belongs to another
    /// worker than its parent's is a cut of rank 0 on it (or the next rank when a worker gets
    /// several, which happens only when `workers` is not a power of two). A region with more
    /// or fewer levels, or with other work at the root, still runs under it (see
    /// [`follow`]).
    pub fn halving(workers: usize) -> Schedule {
        let workers = workers.clamp(1, 1 << 16);
        let depth = workers.next_power_of_two().trailing_zeros();
        let leaves = 1usize << depth;
        let owner = |first_leaf: usize| (first_leaf * workers / leaves) as u32;
        let mut cuts = Vec::new();
        // Every node is (path, first subtree index, subtrees under it); a right child starts
        // halfway through its parent's subtrees.
        let mut stack = vec![(Vec::<u32>::new(), 0usize, leaves)];
        while let Some((path, first, span)) = stack.pop() {
            if span == 1 {
                continue;
            }
            let half = span / 2;
            let mut right = path.clone();
            right.push(1);
            if owner(first + half) != owner(first) {
                cuts.push(Cut {
                    path: right.clone(),
                    worker: owner(first + half),
                    rank: 0,
                });
            }
            let mut left = path;
            left.push(0);
            stack.push((left, first, half));
            stack.push((right, first + half, half));
        }
        // A worker's cuts in the order of their first subtrees (left to right).
        let first_subtree =
            |c: &Cut| c.path.iter().fold(0, |a, &b| a * 2 + b) << (depth as usize - c.path.len());
        Schedule::renumbered(workers as u32, 0, cuts, |c| (first_subtree(c), 0))
            .with_note(format!("halving workers={workers}"))
    }

    /// A free-form note stored with the schedule: what program and input it was recorded on
    /// (`magpie schedule record` writes the kernel and its options here, and `follow` reads
    /// them back). Empty unless set with [`with_note`](Self::with_note); kept by `prune` and
    /// `remap`.
    pub fn note(&self) -> &str {
        &self.note
    }

    /// The schedule with `note` as its note.
    pub fn with_note(mut self, note: impl Into<String>) -> Schedule {
        self.note = note.into();
        self
    }

    /// The cuts, sorted by path.
    pub fn cuts(&self) -> &[Cut] {
        &self.cuts
    }

    /// Workers of the pool the schedule was taken on (or remapped to).
    pub fn workers(&self) -> usize {
        self.workers as usize
    }

    /// The worker that ran the region's root.
    pub fn root_worker(&self) -> usize {
        self.root as usize
    }

    /// The longest cut path (0 without cuts).
    pub fn depth(&self) -> usize {
        self.cuts.iter().map(|c| c.path.len()).max().unwrap_or(0)
    }

    /// Bytes of the schedule's file.
    pub fn bytes(&self) -> usize {
        self.to_bytes().len()
    }

    /// The worker that runs the task at `path`: that of its deepest cut, or the root's.
    pub fn worker_of(&self, path: &[u32]) -> usize {
        (0..=path.len())
            .rev()
            .find_map(|n| {
                self.cuts
                    .binary_search_by(|c| c.path.as_slice().cmp(&path[..n]))
                    .ok()
                    .map(|i| self.cuts[i].worker as usize)
            })
            .unwrap_or(self.root as usize)
    }

    /// Keeps the first `100 - percent` percent of the cuts in level order (shallowest first,
    /// then by path), so every kept cut's ancestor cuts are kept: `prune(0)` keeps every cut,
    /// `prune(100)` none. Ranks are renumbered per worker, keeping their order. The work under a
    /// pruned cut runs with its nearest kept ancestor.
    pub fn prune(&self, percent: u32) -> Schedule {
        let percent = percent.min(100) as usize;
        let n = self.cuts.len();
        let keep = n - (n * percent).div_ceil(100);
        let mut order: Vec<&Cut> = self.cuts.iter().collect();
        order.sort_by(|a, b| a.path.len().cmp(&b.path.len()).then(a.path.cmp(&b.path)));
        let kept: Vec<Cut> = order[..keep].iter().map(|c| (*c).clone()).collect();
        Schedule::renumbered(self.workers, self.root, kept, |c| (c.rank, c.worker))
            .with_note(self.note.clone())
    }

    /// The schedule for a pool of `workers` workers: worker `w` becomes `w % workers`; the cuts
    /// of workers merged into one are ordered by their old rank (then old worker).
    pub fn remap(&self, workers: usize) -> Schedule {
        let n = workers.clamp(1, u32::MAX as usize) as u32;
        let cuts = self
            .cuts
            .iter()
            .map(|c| Cut {
                worker: c.worker % n,
                ..c.clone()
            })
            .collect();
        // `renumbered` orders by the key computed on the remapped cut, whose rank is still the
        // old one; the old worker breaks ties.
        let old: BTreeMap<&[u32], u32> = self
            .cuts
            .iter()
            .map(|c| (c.path.as_slice(), c.worker))
            .collect();
        let key = |c: &Cut| (c.rank, old.get(c.path.as_slice()).copied().unwrap_or(0));
        Schedule::renumbered(n, self.root % n, cuts, key).with_note(self.note.clone())
    }

    /// `cuts` with each worker's ranks renumbered 0.. in the order of `key`.
    fn renumbered(
        workers: u32,
        root: u32,
        mut cuts: Vec<Cut>,
        key: impl Fn(&Cut) -> (u32, u32),
    ) -> Schedule {
        let mut by_worker: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, c) in cuts.iter().enumerate() {
            by_worker.entry(c.worker).or_default().push(i);
        }
        for idx in by_worker.values_mut() {
            idx.sort_by_key(|&i| key(&cuts[i]));
            for (r, &i) in idx.iter().enumerate() {
                cuts[i].rank = r as u32;
            }
        }
        cuts.sort();
        Schedule {
            workers,
            root,
            cuts,
            note: String::new(),
        }
    }

    /// The share of this schedule's cuts that ran on the same worker in `next` (1 when this one
    /// has none): how much of the work stayed put from one run to the next. When the two runs'
    /// roots ran on different workers, those two workers swap roles, as when following.
    pub fn kept_in(&self, next: &Schedule) -> f64 {
        if self.cuts.is_empty() {
            return 1.0;
        }
        let (t, a) = (self.root_worker(), next.root_worker());
        let same = self
            .cuts
            .iter()
            .filter(|c| next.worker_of(&c.path) == swap_roots(c.worker as usize, t, a))
            .count();
        same as f64 / self.cuts.len() as f64
    }

    /// Each worker's cuts in rank order, as paths.
    pub fn per_worker(&self) -> Vec<Vec<&[u32]>> {
        let mut v: Vec<Vec<(u32, &[u32])>> = vec![Vec::new(); self.workers as usize];
        for c in &self.cuts {
            v[c.worker as usize].push((c.rank, &c.path));
        }
        v.into_iter()
            .map(|mut w| {
                w.sort();
                w.into_iter().map(|(_, p)| p).collect()
            })
            .collect()
    }
}
