//! Async-finish programs as data, and the reconstruction of a traced schedule (Lifflander's
//! thesis, §4.4.2, adapted to magpie's records).
//!
//! [`Program`] describes a program's shape: steps, `async` (a scope spawn into the innermost
//! enclosing `finish`, or the scope of the task that spawned the current one), `finish` (a
//! scope) and `join`. [`Program::run`] runs it on the current pool. [`Trace::reconstruct`] takes
//! the trace of such a run and the program, and says which worker ran each step.
//!
//! Reconstruction replays the program sequentially, in the order a worker runs its own work
//! under the trace's policy (work-first: a spawned child before its parent's continuation;
//! help-first: a child is pushed and the parent goes on; a sync point pops what was pushed above
//! it, newest first), and keeps for every working phase the count of events it has run. Each
//! event gets the `EventId` the runtime gave it, so:
//! * an item published at an event that a thief's phase names in its origin runs in that phase,
//!   and the parent's work-first continuation likewise;
//! * a sync point named by a `Resumed` phase continues in that phase;
//! * any other pushed item runs in the phase that pushed it, and the code after a sync point in
//!   the phase whose fiber reached it.
//!
//! Every record of the trace that belongs to the install must be used exactly once, and every step
//! must be assigned once; otherwise the trace is not of this program and reconstruction fails.
//!
//! A `join` whose halves spawn into an enclosing scope is outside what a trace determines under
//! help-first: run in place, the join leaves those spawns for the scope; published, its sync
//! point runs the ones newer than its own half first, and the trace does not say which happened.
//! [`Program::random`] keeps a join's spawns in scopes of its own halves.
//! Reconstruction needs a fixed policy: under `Adaptive` the order of a worker's own work depends
//! on decisions the trace does not record (it still identifies every steal). Under `WorkFirst`
//! it models SLAW's continuation stealing, so the pool must be built with
//! `Builder::allow_migration(true)`: without migration a work-first scope spawn that a thief
//! asks for publishes its child instead, a decision the trace does not record either.
//!
//! This is test support (the runtime's tests include it with `#[path]`), not magpie's API.

use magpie::trace::{EventId, Origin, PhaseId, Trace};
use magpie::Policy;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// One operation of a task's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A step, numbered from 0 across the program.
    Step(u32),
    /// `async`: spawn a task with this body into the enclosing scope.
    Spawn(Vec<Op>),
    /// `finish`: run the body in a new scope and wait for everything spawned into it.
    Finish(Vec<Op>),
    /// `join(a, b)`.
    Join(Vec<Op>, Vec<Op>),
}

/// An async-finish program: the body of its root task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Program {
    /// The root task's body.
    pub body: Vec<Op>,
    /// Number of steps (numbered `0..steps`).
    pub steps: u32,
}

/// Why a trace could not be reconstructed against a program.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum ReconstructError {
    /// The trace was recorded under `Adaptive`.
    AdaptivePolicy,
    /// The trace has no phase for that install.
    NoRoot(u64),
    /// The trace's records do not fit the program's structure.
    Mismatch(String),
}

impl fmt::Display for ReconstructError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReconstructError::AdaptivePolicy => write!(
                f,
                "reconstruction needs a fixed policy; this trace was recorded under adaptive"
            ),
            ReconstructError::NoRoot(k) => write!(f, "the trace has no install number {k}"),
            ReconstructError::Mismatch(why) => {
                write!(f, "the trace does not match the program: {why}")
            }
        }
    }
}

impl std::error::Error for ReconstructError {}

/// A xorshift generator, for random programs (here and in other tests).
pub(crate) struct Rng(pub u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

impl Program {
    /// A random program with about `size` operations and nesting up to `depth`, from `seed`.
    /// Every spawn is inside a `finish`.
    pub(crate) fn random(seed: u64, size: u32, depth: u32) -> Program {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut steps = 0;
        let mut budget = size as i64;
        let body = vec![
            Op::Step(take(&mut steps)),
            Op::Finish(gen(&mut rng, &mut steps, &mut budget, depth, true)),
            Op::Step(take(&mut steps)),
        ];
        Program { body, steps }
    }

    /// Runs the program on the current pool (inside `Pool::install`; elsewhere on the global
    /// pool), calling `step(i)` for each step.
    pub(crate) fn run(&self, step: &(dyn Fn(u32) + Sync)) {
        magpie::scope(|s| run_ops(&self.body, s, step));
    }
}

fn take(steps: &mut u32) -> u32 {
    *steps += 1;
    *steps - 1
}

fn gen(rng: &mut Rng, steps: &mut u32, budget: &mut i64, depth: u32, in_finish: bool) -> Vec<Op> {
    let mut ops = vec![Op::Step(take(steps))];
    let n = 1 + rng.below(4);
    for _ in 0..n {
        *budget -= 1;
        if *budget <= 0 || depth == 0 {
            ops.push(Op::Step(take(steps)));
            continue;
        }
        match rng.below(10) {
            0..=3 if in_finish => ops.push(Op::Spawn(gen(rng, steps, budget, depth - 1, true))),
            4..=5 => ops.push(Op::Finish(gen(rng, steps, budget, depth - 1, true))),
            6..=7 => {
                // A join's halves spawn only into scopes of their own (see the module doc).
                let a = gen(rng, steps, budget, depth - 1, false);
                let b = gen(rng, steps, budget, depth - 1, false);
                ops.push(Op::Join(a, b));
            }
            _ => ops.push(Op::Step(take(steps))),
        }
    }
    ops
}

/// Runs `ops` with `s` as the scope that `Spawn`s go into (the innermost enclosing one).
fn run_ops<'s>(ops: &'s [Op], s: &magpie::Scope<'s>, step: &'s (dyn Fn(u32) + Sync)) {
    for op in ops {
        match op {
            Op::Step(i) => step(*i),
            Op::Spawn(body) => s.spawn(move |s2| run_ops(body, s2, step)),
            Op::Finish(body) => magpie::scope(|s2| run_ops(body, s2, step)),
            Op::Join(a, b) => {
                magpie::join(|| run_ops(a, s, step), || run_ops(b, s, step));
            }
        }
    }
}

struct Pending<'p> {
    body: &'p [Op],
    tag: EventId,
}

struct Replay<'p> {
    policy: Policy,
    cuts: HashMap<EventId, PhaseId>,
    resumed: HashMap<EventId, PhaseId>,
    used: HashSet<EventId>,
    seq: HashMap<PhaseId, u64>,
    reached: HashSet<PhaseId>,
    pending: Vec<Pending<'p>>,
    out: Vec<Option<u32>>,
}

impl<'p> Replay<'p> {
    fn event(&mut self, cur: PhaseId) -> EventId {
        self.reached.insert(cur);
        let s = self.seq.entry(cur).or_insert(0);
        *s += 1;

        EventId {
            phase: cur,
            seq: *s - 1,
            half: 0,
        }
    }

    fn cut(&mut self, e: EventId) -> Option<PhaseId> {
        let p = self.cuts.get(&e).copied();
        if p.is_some() {
            self.used.insert(e);
        }
        p
    }

    fn exec(&mut self, ops: &'p [Op], mut cur: PhaseId) -> Result<PhaseId, ReconstructError> {
        self.reached.insert(cur);
        for op in ops {
            match op {
                Op::Step(i) => {
                    let slot = self.out.get_mut(*i as usize).ok_or_else(|| {
                        ReconstructError::Mismatch(format!("step {i} is out of range"))
                    })?;
                    if slot.is_some() {
                        return Err(ReconstructError::Mismatch(format!(
                            "step {i} would run twice"
                        )));
                    }
                    *slot = Some(cur.worker);
                }
                Op::Spawn(body) => {
                    let e = self.event(cur);
                    if self.policy == Policy::HelpFirst {
                        self.pending.push(Pending { body, tag: e });
                    } else {
                        let end = self.exec(body, cur)?;
                        cur = self.cut(e).unwrap_or(end);
                    }
                }
                Op::Finish(body) => {
                    let e = self.event(cur);
                    let mark = self.pending.len();
                    let end = self.exec(body, cur)?;
                    cur = self.sync(mark, cur, end, e, false)?;
                }
                Op::Join(a, b) => {
                    let e = self.event(cur);
                    let mark = self.pending.len();
                    let (pushed, inline) = if self.policy == Policy::HelpFirst {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    self.pending.push(Pending {
                        body: pushed,
                        tag: e,
                    });
                    let end = self.exec(inline, cur)?;
                    cur = self.sync(mark, cur, end, e, true)?;
                }
            }
        }
        Ok(cur)
    }

    /// A sync point whose mark was made at `mark` by a fiber then in phase `at_mark`, reached by
    /// that fiber in phase `fiber`.
    fn sync(
        &mut self,
        mark: usize,
        at_mark: PhaseId,
        mut fiber: PhaseId,
        e: EventId,
        join: bool,
    ) -> Result<PhaseId, ReconstructError> {
        while self.pending.len() > mark {
            let p = self.pending.pop().expect("above the mark");
            // A join's sync point stops once it has its own half (what its halves spawned into
            // an enclosing scope stays for that scope's sync); a scope's runs everything.
            let own_half = join && p.tag == e;
            if let Some(thief) = self.cut(p.tag) {
                self.exec(p.body, thief)?;
            } else if own_half {
                // A join's own half, run in the join's phase: popped at the sync point, by the
                // worker's loop once the fiber waits there (a waiting task's worker starts
                // nothing else of it sooner), or in place after a first half that suspended,
                // which goes back to the join's phase (`join::join_traced`). The fiber goes on
                // where the half ended, unless it waited (a `Resumed` record, below).
                fiber = self.exec(p.body, p.tag.phase)?;
            } else if fiber == at_mark && p.tag.phase == at_mark {
                // Popped at the sync point and run on the waiting fiber.
                fiber = self.exec(p.body, at_mark)?;
            } else {
                // The fiber moved on (it suspended, or a thief pushed the item): the loop of
                // the worker that pushed it runs it, in the phase that pushed it.
                self.exec(p.body, p.tag.phase)?;
            }
            if own_half {
                break;
            }
        }
        match self.resumed.get(&e) {
            Some(&p) => {
                self.used.insert(e);
                Ok(p)
            }
            None => Ok(fiber),
        }
    }
}

/// Reconstruction of a trace against a program (a trait, since `Trace` is the runtime's type).
pub(crate) trait Reconstruct {
    /// Which worker ran each step of install `ordinal` of `program`, from the trace alone.
    fn reconstruct(&self, program: &Program, ordinal: u64) -> Result<Vec<u32>, ReconstructError>;
    /// [`reconstruct`](Self::reconstruct) of a trace whose only install ran `program`: every
    /// steal and resumption record must then be used, not only those of phases it reached.
    fn reconstruct_sole(&self, program: &Program) -> Result<Vec<u32>, ReconstructError>;
}

impl Reconstruct for Trace {
    /// Which worker ran each step of `program`, traced as the `ordinal`-th install (counting
    /// from 0) of a pool that ran it with [`Program::run`]. See the module doc of `program.rs`.
    fn reconstruct(&self, program: &Program, ordinal: u64) -> Result<Vec<u32>, ReconstructError> {
        replay(self, program, ordinal, false)
    }

    fn reconstruct_sole(&self, program: &Program) -> Result<Vec<u32>, ReconstructError> {
        replay(self, program, 0, true)
    }
}

/// Reconstruction; `sole`: the trace holds this one install, so every record must be used.
fn replay(
    t: &Trace,
    program: &Program,
    ordinal: u64,
    sole: bool,
) -> Result<Vec<u32>, ReconstructError> {
    let this = t;
    {
        if this.policy == Policy::Adaptive {
            return Err(ReconstructError::AdaptivePolicy);
        }
        let mut root = None;
        let mut cuts = HashMap::new();
        let mut resumed = HashMap::new();
        for (w, ps) in this.phases.iter().enumerate() {
            for (i, p) in ps.iter().enumerate() {
                let id = PhaseId {
                    worker: w as u32,
                    index: i as u32,
                };
                let dup = match p.origin {
                    Origin::Root { ordinal: k } if k == ordinal => root.replace(id).is_some(),
                    Origin::Stolen { from, .. } | Origin::Early { from } => {
                        cuts.insert(from, id).is_some()
                    }
                    Origin::Resumed { sync } => resumed.insert(sync, id).is_some(),
                    _ => false,
                };
                if dup {
                    return Err(ReconstructError::Mismatch(format!(
                        "two phases claim the origin of phase {i} of worker {w}"
                    )));
                }
            }
        }
        let root = root.ok_or(ReconstructError::NoRoot(ordinal))?;
        let mut r = Replay {
            policy: this.policy,
            cuts,
            resumed,
            used: HashSet::new(),
            seq: HashMap::new(),
            reached: HashSet::new(),
            pending: Vec::new(),
            out: vec![None; program.steps as usize],
        };
        // `Program::run` wraps the body in a scope: the root's first event.
        let e = r.event(root);
        let end = r.exec(&program.body, root)?;
        r.sync(0, root, end, e, false)?;
        // Every record naming an event of a phase this install reached must have been used.
        for (e, p) in r.cuts.iter().chain(r.resumed.iter()) {
            if (sole || r.reached.contains(&e.phase)) && !r.used.contains(e) {
                return Err(ReconstructError::Mismatch(format!(
                    "phase {} of worker {} took event {} of phase {} of worker {}, which the \
                     program never published",
                    p.index, p.worker, e.seq, e.phase.index, e.phase.worker
                )));
            }
        }
        r.out
            .iter()
            .enumerate()
            .map(|(i, w)| {
                w.ok_or_else(|| ReconstructError::Mismatch(format!("step {i} never ran")))
            })
            .collect()
    }
}
