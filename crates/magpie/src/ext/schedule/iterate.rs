//! The loop an iterative program runs around its schedule (the thesis's §6.4 and §6.5).
//!
//! An iterative program (a stencil sweep, a solver's iterations) runs the same task tree again
//! and again. It keeps its data where it was first touched only if each iteration runs each piece
//! on the same worker as the last, which random stealing does not do. [`Iterate`] runs each
//! iteration as a schedule region and chooses how:
//!
//! 1. The first iteration is **recorded** (plain stealing).
//! 2. The next ones **relax**: they follow the last schedule under
//!    [`Constraint::Relaxed`](super::Constraint::Relaxed), pruned by the chosen percentage
//!    first (so the template keeps only the coarse, level-order prefix of its cuts and idle
//!    workers steal the rest anew). Each relaxed iteration's own schedule is extracted as the
//!    next template.
//! 3. Once two relaxed iterations in a row take the same cuts (same positions on the same
//!    workers; ranks may differ), or after `max_relaxed` of them, the schedule is **stable**
//!    and the iterations **follow** it under [`Constraint::Ordered`](super::Constraint::Ordered):
//!    no random steals, every piece where it ran before; tasks below every cut may coarsen
//!    ([`may_coarsen`](super::may_coarsen)).
//! 4. An ordered iteration that deviates (its program changed shape under it) goes back to
//!    relaxing from the schedule it took.
//!
//! A program whose data should live where it is computed adds a fork/join *initialiser* with
//! the structure of an iteration (§6.4): [`Iterate::place`] runs it. The first call, before any
//! iteration, is recorded and its schedule is the first template (the initialiser's structure
//! matches the kernel's, so the kernel starts from where the data was first touched). Later
//! calls follow the current template under `Ordered`, so the initialiser copies each piece of
//! data into fresh memory on the worker that computes on it now; the program calls it after each
//! relaxed iteration (Relaxed kernel, extract, Ordered initialiser, until stable; then Ordered):
//! the thesis's Fig. 6.3. An iteration made of several phases of the same structure (sweeps
//! over the same rows) runs its first phase with [`run`](Iterate::run) and the others with
//! [`again`](Iterate::again), which follow the same template under the same constraint.
//!
//! Everything an iteration does is reported ([`Step`]), so a program (or a figure) can show
//! how fast the schedule settled, what it costs to keep and how much stays put.

use super::{follow, record, Constraint, Schedule};

/// What [`Iterate`] does with the next iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Record (the first iteration).
    Record,
    /// Follow the last schedule, pruned, under `Relaxed`, and extract the next one.
    Relax,
    /// Follow the stable schedule under `Ordered`.
    Follow,
    /// A fork/join initialiser ([`Iterate::place`]): recorded when there is no template yet,
    /// otherwise following the template under `Ordered`.
    Place,
}

/// One iteration, as [`Iterate::run`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// How it ran.
    pub stage: Stage,
    /// Cuts in the schedule it took.
    pub cuts: usize,
    /// Bytes of that schedule's file.
    pub bytes: usize,
    /// Deviations counted while it ran (`Ordered` only).
    pub deviations: u64,
    /// Of the cuts of the previous iteration's schedule, the share that this iteration ran on
    /// the same worker (1 when the previous one had none; 0 for the first iteration).
    pub same_worker: f64,
}

/// Runs the iterations of an iterative program under a schedule that settles (see the module
/// doc). Call [`run`](Self::run) once per iteration, from inside or outside a pool (outside, the
/// global pool's).
#[derive(Clone, Debug)]
pub struct Iterate {
    prune: u32,
    max_relaxed: usize,
    stage: Stage,
    template: Option<Schedule>,
    relaxed: usize,
    /// How the last [`run`](Iterate::run) ran (what [`again`](Iterate::again) repeats).
    last: Stage,
    steps: Vec<Step>,
}

impl Default for Iterate {
    fn default() -> Iterate {
        Iterate::new(0, 4)
    }
}

impl Iterate {
    /// Relaxed iterations prune their template by `prune` percent (0 keeps every cut; at most
    /// 100), and the schedule is taken as stable after at most `max_relaxed` of them (at least
    /// 1).
    pub fn new(prune: u32, max_relaxed: usize) -> Iterate {
        Iterate {
            prune: prune.min(100),
            max_relaxed: max_relaxed.max(1),
            stage: Stage::Record,
            template: None,
            relaxed: 0,
            last: Stage::Record,
            steps: Vec::new(),
        }
    }

    /// How the next iteration will run.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// The schedule the last iteration took (the next one's template), if any ran.
    pub fn schedule(&self) -> Option<&Schedule> {
        self.template.as_ref()
    }

    /// Every iteration so far.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Runs one iteration `f` as the stage says, and moves to the next stage.
    ///
    /// # Panics
    ///
    /// As [`record`]: if the pool already records or follows a region.
    pub fn run<R, F>(&mut self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        let stage = self.stage;
        let before = deviations();
        let (r, taken) = match (&self.template, stage) {
            (Some(t), Stage::Relax) => follow(&t.prune(self.prune), Constraint::Relaxed, f),
            (Some(t), Stage::Follow) => follow(t, Constraint::Ordered, f),
            _ => record(f),
        };
        self.last = stage;
        let deviations = deviations().saturating_sub(before);
        let same_worker = match &self.template {
            None => 0.0,
            Some(prev) => prev.kept_in(&taken),
        };
        let same_cuts = self
            .template
            .as_ref()
            .is_some_and(|p| cut_set(p) == cut_set(&taken));
        self.stage = match stage {
            Stage::Record => Stage::Relax,
            Stage::Relax => {
                self.relaxed += 1;
                if (same_cuts && self.relaxed >= 2) || self.relaxed >= self.max_relaxed {
                    Stage::Follow
                } else {
                    Stage::Relax
                }
            }
            Stage::Follow if deviations > 0 => {
                self.relaxed = 0;
                Stage::Relax
            }
            Stage::Follow | Stage::Place => Stage::Follow,
        };
        self.steps.push(Step {
            stage,
            cuts: taken.cuts().len(),
            bytes: taken.bytes(),
            deviations,
            same_worker,
        });
        // Under `Follow` the template stays the stable schedule; otherwise the one just taken
        // is the next template (the extraction step).
        if stage != Stage::Follow || deviations > 0 {
            self.template = Some(taken);
        }
        r
    }

    /// Runs the program's fork/join initialiser `f` (see the module doc): recorded, its
    /// schedule becoming the first template, when no iteration or initialiser ran yet;
    /// otherwise following the current template under `Ordered`, the template unchanged. Either
    /// way the next [`run`](Self::run) relaxes from the template unless the schedule is already
    /// stable. Reported as a [`Stage::Place`] step.
    ///
    /// # Panics
    ///
    /// As [`record`].
    pub fn place<R, F>(&mut self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        let before = deviations();
        let (r, taken) = match &self.template {
            Some(t) => follow(t, Constraint::Ordered, f),
            None => record(f),
        };
        let same_worker = self.template.as_ref().map_or(0.0, |t| t.kept_in(&taken));
        self.steps.push(Step {
            stage: Stage::Place,
            cuts: taken.cuts().len(),
            bytes: taken.bytes(),
            deviations: deviations().saturating_sub(before),
            same_worker,
        });
        if self.template.is_none() {
            self.template = Some(taken);
            self.stage = Stage::Relax;
        }
        r
    }

    /// Runs `f`, another phase of the iteration the last [`run`](Self::run) began, as that
    /// phase ran: recorded, or following the current template `Relaxed` (pruned) or `Ordered`.
    /// The template and the stage do not change; deviations are added to the last step.
    /// Before any `run`, it records, as the first iteration does.
    ///
    /// # Panics
    ///
    /// As [`record`].
    pub fn again<R, F>(&mut self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        let before = deviations();
        let r = match (&self.template, self.last) {
            (Some(t), Stage::Relax) => follow(&t.prune(self.prune), Constraint::Relaxed, f).0,
            (Some(t), Stage::Follow) => follow(t, Constraint::Ordered, f).0,
            _ => record(f).0,
        };
        if let Some(s) = self.steps.last_mut() {
            s.deviations += deviations().saturating_sub(before);
        }
        r
    }
}

/// The calling pool's deviations so far (the global pool's outside any).
fn deviations() -> u64 {
    match crate::worker::current() {
        Some(wt) => wt.core.registry.stats().deviations,
        None => crate::pool::global().stats().deviations,
    }
}

/// The cuts as (position, worker), ignoring ranks.
fn cut_set(s: &Schedule) -> Vec<(&[u32], u32)> {
    let mut v: Vec<_> = s
        .cuts()
        .iter()
        .map(|c| (c.path.as_slice(), c.worker))
        .collect();
    v.sort_unstable();
    v
}
