//! Spawning policies: work-first, help-first, and SLAW's adaptive ADP(S, F, INT)
//! (SLAW §II-A, §III-A, Algorithm 1 rule a).
//!
//! * **Work-first**: the spawning worker runs the child at once; thieves can take the parent's
//!   continuation. With one worker the execution order is the sequential program's.
//! * **Help-first**: the child is published for thieves; the parent continues to its sync point.
//! * **Adaptive** (per worker, per spawn): (i) if the frames on the worker's stack are ≥ S, help-first
//!   (*stack condition*, a hard bound); (ii) else if the fresh tasks it owns are ≥ F, work-first
//!   (*fresh-task condition*); (iii) else the steal-rate heuristic, re-evaluated every INT spawns and
//!   starting with help-first: help-first for the next interval if any task was stolen from this
//!   worker during the last one, work-first otherwise. SLAW's text compares the steals in an
//!   interval with INT; since each steal takes one task spawned in the interval that comparison can
//!   never hold, so magpie takes the stated intent (the estimated probability that a new task is
//!   stolen, steals / INT, is non-zero) as the rule.
//!
//! How a decision is carried out differs from SLAW where magpie's costs differ. A spawn runs in place
//! (a sequential call, as in SLAW's work-first) when the worker already keeps enough published work
//! and no thief asks for more (lazy publication, see `join.rs`): a `join` half under every policy
//! (in that policy's order), a work-first scope spawn, and any adaptive spawn the stack condition
//! allows, since the heuristic decides how to publish when a thief asks, not whether to publish
//! work nobody asked for. Where a spawn cannot run in place, an adaptive spawn that the heuristic
//! made work-first publishes the child: preempting the parent costs a fiber switch in magpie,
//! publishing the child only a push, and SLAW chose work-first precisely to avoid context switches.
//! The stack and fresh-task conditions are carried out as stated (the fresh-task condition with a
//! real, preempting work-first spawn), and the fixed policies always follow their own semantics.

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::fmt;
use std::str::FromStr;

/// How a spawn treats the child and the parent's continuation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Policy {
    /// Run the child now; the continuation is stealable.
    WorkFirst,
    /// Publish the child; the parent continues.
    HelpFirst,
    /// SLAW's ADP(S, F, INT), chosen per spawn.
    Adaptive,
}

impl Policy {
    /// The spelling used by `MAGPIE_POLICY`, the CLI and reports.
    pub fn name(self) -> &'static str {
        match self {
            Policy::WorkFirst => "work-first",
            Policy::HelpFirst => "help-first",
            Policy::Adaptive => "adaptive",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Policy, Error> {
        match s {
            "work-first" | "wf" => Ok(Policy::WorkFirst),
            "help-first" | "hf" => Ok(Policy::HelpFirst),
            "adaptive" | "adp" => Ok(Policy::Adaptive),
            _ => Err(Error::config(
                "policy",
                s,
                "one of work-first, help-first, adaptive",
            )),
        }
    }
}

/// The adaptive thresholds (SLAW Table II defaults).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Thresholds {
    /// S: frames on a worker's stack at which spawning turns help-first.
    pub stack: u32,
    /// F: fresh tasks owned at which spawning turns work-first.
    pub fresh: u32,
    /// INT: spawns between re-evaluations of the steal-rate heuristic.
    pub interval: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            stack: 256,
            fresh: 128,
            interval: 64,
        }
    }
}

/// Per-worker state of the steal-rate heuristic. Owner-only (plain cells: read on every spawn).
#[derive(Debug)]
pub(crate) struct Adaptive {
    work_first: Cell<bool>,
    spawns: Cell<u32>,
    stolen_at_eval: Cell<u64>,
}

impl Adaptive {
    pub(crate) fn new() -> Adaptive {
        // SLAW starts with help-first: steals are frequent at the beginning.
        Adaptive {
            work_first: Cell::new(false),
            spawns: Cell::new(0),
            stolen_at_eval: Cell::new(0),
        }
    }

    /// Decides one adaptive spawn. `stolen` is the running count of tasks stolen from this worker.
    /// Returns (work_first, switched).
    #[inline(always)]
    pub(crate) fn decide(
        &self,
        t: &Thresholds,
        depth: u32,
        fresh: usize,
        stolen: impl FnOnce() -> u64,
    ) -> (bool, bool) {
        if depth >= t.stack {
            return (false, false);
        }
        if fresh >= t.fresh as usize {
            return (true, false);
        }
        let n = self.spawns.get() + 1;
        if n < t.interval {
            self.spawns.set(n);
            return (self.work_first.get(), false);
        }
        self.evaluate(stolen())
    }

    /// Counts `n` spawns towards the interval without deciding them (spawns that ran in place,
    /// counted in bulk); returns whether the re-evaluation they triggered switched the policy.
    /// The re-evaluation happens at the first count that reaches INT, so at most `n - 1` spawns
    /// late.
    #[inline]
    pub(crate) fn tick_by(&self, t: &Thresholds, n: u32, stolen: impl FnOnce() -> u64) -> bool {
        let k = self.spawns.get().saturating_add(n);
        if k < t.interval {
            self.spawns.set(k);
            return false;
        }
        self.evaluate(stolen()).1
    }

    /// The heuristic proper, every INT spawns.
    #[cold]
    fn evaluate(&self, stolen_now: u64) -> (bool, bool) {
        self.spawns.set(0);
        let wf = stolen_now == self.stolen_at_eval.get();
        self.stolen_at_eval.set(stolen_now);
        let switched = wf != self.work_first.get();
        self.work_first.set(wf);
        (wf, switched)
    }
}

/// How a worker's joins run in place: the policy's order (help-first: `b` first), whether the
/// pending half is recorded for oldest-first hand-over (`Core::promotes`), and whether the pool
/// has thieves at all. A one-worker pool's joins skip the test for a thief's request (the deque's
/// `wanted` flag, which only another worker of the pool sets) on every join.
///
/// The two default modes (a one-worker pool, and a pool with thieves and hand-over, both in
/// work-first order, the adaptive policy's in-place order) are each told apart from the rest by
/// one test: 0 and [`UNCOMMON`](Self::UNCOMMON) clear.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum JoinMode {
    SoloWorkFirstOrder = 0,
    WorkFirstPromoting = JoinMode::THIEVES | JoinMode::PROMOTING,
    SoloHelpFirstOrder = JoinMode::UNCOMMON | JoinMode::HELP_FIRST,
    WorkFirstOrder = JoinMode::UNCOMMON | JoinMode::THIEVES,
    HelpFirstOrder = JoinMode::UNCOMMON | JoinMode::THIEVES | JoinMode::HELP_FIRST,
    HelpFirstPromoting =
        JoinMode::UNCOMMON | JoinMode::THIEVES | JoinMode::HELP_FIRST | JoinMode::PROMOTING,
}

impl JoinMode {
    /// The bit of every mode but the two defaults.
    pub(crate) const UNCOMMON: u8 = 1;
    /// The bit of a mode whose in-place halves run in help-first order.
    pub(crate) const HELP_FIRST: u8 = 2;
    /// The bit of a mode that records pending halves for oldest-first hand-over.
    pub(crate) const PROMOTING: u8 = 4;
    /// The bit of a pool with more than one worker, whose joins listen for a thief's request.
    pub(crate) const THIEVES: u8 = 8;

    /// The mode of a worker of a pool of `workers` workers (`promotes` only with more than one).
    pub(crate) fn of(policy: Policy, promotes: bool, workers: usize) -> JoinMode {
        match (policy == Policy::HelpFirst, promotes, workers > 1) {
            (false, false, false) => JoinMode::SoloWorkFirstOrder,
            (true, false, false) => JoinMode::SoloHelpFirstOrder,
            (false, false, true) => JoinMode::WorkFirstOrder,
            (true, false, true) => JoinMode::HelpFirstOrder,
            (false, true, _) => JoinMode::WorkFirstPromoting,
            (true, true, _) => JoinMode::HelpFirstPromoting,
        }
    }
}

/// Items a worker of a pool with thieves keeps published before spawns start running in place
/// (`Core::keep`), when it does not promote pending halves: the joins it publishes are the ones
/// it makes now, so it keeps a few, the oldest of which thieves take first.
pub(crate) const KEEP: isize = 3;

/// The same when the worker promotes (`promote.rs`): what it publishes is always its oldest
/// pending half, and a thief that finds nothing asks for more (and is then given up to twice
/// `KEEP`). One item is what a join whose first half runs long needs for its second half to be
/// taken meanwhile. Each kept item is taken back by its owner when nobody steals it and replaced
/// by the next oldest: with three kept, a worker with an idle thief beside it promoted about one
/// join in three of a small tree (176 of 511 joins per sum of a 1,023-node tree), which cost a
/// 2-worker pool twice the tree's time at 1 worker (docs/results/join-path.md).
pub(crate) const KEEP_PROMOTING: isize = 1;

/// In-place joins and spawns without a thief's request after which a worker records only the
/// joins above [`QUIET_RECORDS`] (`promote.rs`, "Which joins record"): tens of microseconds of
/// the finest-grained ones.
pub(crate) const QUIET_OPS: u64 = 1 << 14;

/// The frame depth above which in-place joins still record their pending halves once thieves
/// have been quiet (`promote.rs`, "Which joins record"): on a balanced recursion a half pending
/// at depth 7 is 1/256 of the work, still worth a thief's steal, and nearly every join lies
/// deeper.
pub(crate) const QUIET_RECORDS: u32 = 8;

/// The deepest frame depth below which spawns publish (see "Spawns" in `promote.rs`): it
/// bounds the tasks published for a deep, narrow search to this many levels per fiber.
pub(crate) const SHALLOW_MAX: u32 = 32;

/// What a worker learned of its spawns (`WorkerThread::lessons`; `promote.rs`, "Spawns").
pub(crate) struct Lessons {
    /// An adaptive spawn at a spawn-tree level above this publishes its child instead of
    /// running it in place. Learned from in-place children that made work of their own; back
    /// to 0 (none) when the worker has been idle long enough to sleep (`idle.rs`).
    shallow: Cell<u32>,
    /// What this worker's measured spawns showed, per level.
    sizes: SpawnSizes,
}

impl Lessons {
    pub(crate) fn new() -> Lessons {
        Lessons {
            shallow: Cell::new(0),
            sizes: SpawnSizes::new(),
        }
    }

    /// The spawn-tree level above which adaptive spawns publish their children (0: none).
    #[inline(always)]
    pub(crate) fn shallow(&self) -> u32 {
        self.shallow.get()
    }

    /// Publishes adaptive spawns down to spawn-tree level `level` from now on (0: none).
    pub(crate) fn set_shallow(&self, level: u32) {
        self.shallow.set(level);
    }

    /// Whether `big` more of the measured spawns at `level` showed work of their own; see
    /// [`SpawnSizes::add`].
    pub(crate) fn add_size(&self, level: u32, big: bool) -> bool {
        self.sizes.add(level, big)
    }

    /// Forgets what the measured spawns showed (the worker was idle long enough to sleep).
    pub(crate) fn forget_sizes(&self) {
        self.sizes.clear();
    }
}

/// What the measured spawns of one worker showed, per spawn-tree level within [`SHALLOW_MAX`]:
/// how many were measured and how many of their children made more than `promote::WORK_BELOW`.
pub(crate) struct SpawnSizes {
    measured: [Cell<u16>; SHALLOW_MAX as usize],
    big: [Cell<u16>; SHALLOW_MAX as usize],
}

impl SpawnSizes {
    pub(crate) fn new() -> SpawnSizes {
        SpawnSizes {
            measured: std::array::from_fn(|_| Cell::new(0)),
            big: std::array::from_fn(|_| Cell::new(0)),
        }
    }

    /// Forgets every level's samples (the worker idled long enough to sleep).
    pub(crate) fn clear(&self) {
        for c in self.measured.iter().chain(self.big.iter()) {
            c.set(0);
        }
    }

    /// Counts one measured child at `level`; returns whether most children measured there,
    /// and at least [`MIN_SAMPLES`] of them, were big.
    pub(crate) fn add(&self, level: u32, big: bool) -> bool {
        let (m, b) = (&self.measured[level as usize], &self.big[level as usize]);
        m.set(m.get().saturating_add(1));
        if big {
            b.set(b.get().saturating_add(1));
        }
        m.get() >= MIN_SAMPLES && 2 * u32::from(b.get()) > u32::from(m.get())
    }
}

/// Measured children a level needs before its spawns may publish: one big child among
/// thousands of small ones (the first child of a node in a depth-first search, which finds the
/// graph unvisited) says little about its level.
const MIN_SAMPLES: u16 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_modes_are_told_apart_by_the_dispatch_tests() {
        use JoinMode as M;
        let all = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];
        let mut seen = Vec::new();
        for policy in all {
            for (promotes, workers) in [(false, 1), (false, 2), (true, 2)] {
                let m = M::of(policy, promotes, workers);
                let b = m as u8;
                // The bits say what the mode's join does.
                assert_eq!(b & M::HELP_FIRST != 0, policy == Policy::HelpFirst, "{m:?}");
                assert_eq!(b & M::PROMOTING != 0, promotes, "{m:?}");
                assert_eq!(b & M::THIEVES != 0, workers > 1, "{m:?}");
                // The two defaults, and only they, are found by the dispatch's first two tests.
                let default = policy != Policy::HelpFirst && (promotes || workers == 1);
                assert_eq!(b == 0 || b & M::UNCOMMON == 0, default, "{m:?}");
                seen.push(b);
            }
        }
        assert_eq!(M::of(Policy::Adaptive, false, 1) as u8, 0);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 6, "six distinct modes");
    }

    #[test]
    fn a_level_teaches_once_most_of_at_least_two_samples_were_big() {
        let s = SpawnSizes::new();
        // One big child alone says little about its level.
        assert!(!s.add(3, true));
        // Two of two.
        assert!(s.add(3, true));
        // Another level keeps its own counts: one big of two is no majority, two of three is.
        assert!(!s.add(5, true));
        assert!(!s.add(5, false));
        assert!(s.add(5, true));
        // Small children outvote big ones again.
        assert!(!s.add(5, false));
        assert!(!s.add(5, false));
    }

    #[test]
    fn cleared_sizes_learn_afresh() {
        let s = SpawnSizes::new();
        assert!(!s.add(0, true));
        assert!(s.add(0, true));
        s.clear();
        assert!(!s.add(0, true));
    }

    #[test]
    fn parse_and_print() {
        for p in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            assert_eq!(p.name().parse::<Policy>().unwrap(), p);
        }
        let e = "fast".parse::<Policy>().unwrap_err();
        assert!(e.to_string().contains("work-first, help-first, adaptive"));
    }

    #[test]
    fn adaptive_rules_in_order() {
        let t = Thresholds {
            stack: 4,
            fresh: 3,
            interval: 2,
        };
        let a = Adaptive::new();
        // Stack condition beats fresh-task condition.
        assert_eq!(a.decide(&t, 4, 10, || 0), (false, false));
        // Fresh-task condition.
        assert_eq!(a.decide(&t, 0, 3, || 0), (true, false));
        // Heuristic: starts help-first; after INT spawns with no steal, switches to work-first.
        assert_eq!(a.decide(&t, 0, 0, || 0), (false, false));
        assert_eq!(a.decide(&t, 0, 0, || 0), (true, true));
        assert_eq!(a.decide(&t, 0, 0, || 0), (true, false));
        // A steal during the interval switches back to help-first.
        assert_eq!(a.decide(&t, 0, 0, || 1), (false, true));
    }

    #[test]
    fn ticks_in_bulk_reach_the_interval() {
        let t = Thresholds {
            stack: 4,
            fresh: 3,
            interval: 10,
        };
        let a = Adaptive::new();
        // Nine spawns counted in bulk: no evaluation yet.
        assert!(!a.tick_by(&t, 9, || 0));
        assert!(!a.work_first.get());
        // The tenth evaluates: no steal, so work-first.
        assert!(a.tick_by(&t, 1, || 0));
        assert!(a.work_first.get());
        // A bulk count past the interval evaluates once; a steal switches back.
        assert!(a.tick_by(&t, 25, || 3));
        assert!(!a.work_first.get());
        assert_eq!(a.spawns.get(), 0);
        // Fewer spawns than a huge interval never evaluate.
        let never = Thresholds {
            interval: u32::MAX,
            ..t
        };
        assert!(!a.tick_by(&never, u32::MAX - 1, || 0));
        assert!(!a.tick_by(&never, 0, || 0));
    }
}
