//! The splicing scheduler (the thesis's §7.2, §7.4-7.6), sequential and on magpie's pool.
//!
//! # The program
//!
//! A *phase* is one call of a recursive function (one time step of a stencil): its *calls*
//! form a tree ([`Phase::split`] gives a call's children in program order, none for a *step*,
//! the leaf that does the work), and every call declares its inclusive effect
//! ([`Phase::effect`]). The program a window of phases stands for is: all of phase 0's steps in
//! order, then all of phase 1's, and so on. Each step gets a number in that *program order*.
//!
//! # Spliced execution, sequentially
//!
//! Rather than finishing phase 0 before starting phase 1 (streaming the whole grid through the
//! cache once per phase), the scheduler walks the phases' trees together, the way the thesis's
//! threads keep their call stacks in step: at step position `i`, phase 0's `i`-th step, then
//! phase 1's `i`-th, and so on. A step runs at once if nothing before it in program order that
//! has not run yet interferes with it; otherwise it is *delayed*. What has not run yet, before
//! step `(k, i)`, is:
//!
//! - of each earlier phase `j < k`: its delayed steps, and its *continuation*, every step after
//!   position `i`. The continuation's effect is the effects of the calls to the right of the
//!   path to step `i`, at every level (the right siblings along the path), so it is tested as
//!   a handful of inclusive effects, never step by step, and the user never writes it;
//! - of phase `k` itself: its own delayed steps before `i` (the thesis checks only earlier
//!   phases', which an in-place kernel such as Seidel's breaks).
//!
//! The steps reached and not finished are kept in one *pending* list in program order. After
//! every step that runs, the pending steps are tried again, going on from the one after it
//! round the list, and one that has become runnable runs at once (before anything else is
//! decided, so the decision stays true: the thesis decides and then switches threads first).
//! Each pending step remembers what blocked it (an earlier pending step, or a phase's
//! continuation from a position), and is tried again only once that has changed (the step ran
//! some or all of itself, or the walk moved that phase on); otherwise a wide window's retries
//! would test every delayed step after every step. When nothing pending can run, the walk
//! reaches the next step. At the end of the walk what is pending runs in program order. A step's
//! *interference checks*, the *thread switches* (consecutive steps of different phases), the
//! *delayed* steps, the *dependences* that delayed them and the peak bytes held by delayed steps
//! are counted in [`Stats`].
//!
//! # Step pipelining (§7.6.3)
//!
//! Small steps keep a window's band of rows in the cache, but each costs the scheduler its
//! interference tests and bookkeeping. A phase that slices its steps ([`Phase::slice`]: a
//! block of rows into its first row or two and the rest) lets a step be large and still advance
//! in small parts: a pending step whose *first part* no longer interferes with anything before
//! it runs that part and stays pending with the rest, whose smaller effect may now let a later
//! phase's step run its own first part. Since the list is tried round from the step after the
//! one that ran, the phases' steps take turns a part at a time, each trailing the one before by
//! the rows its stencil reads (the thesis's switch to the next thread after every slice). The
//! whole step's effect stays what the call tree and its continuation tests see; a part is held
//! to its own effect, which must lie inside the step's (checked), and a step's parts share its
//! number in program order and run in order, so its outputs merge as the whole's would. The
//! parts run are counted in [`Stats::slices`]. Pipelining is the walk's: the dependence graph
//! below runs steps whole.
//!
//! # In parallel (§7.5, adapted)
//!
//! The thesis runs one spliced walk per worker over stolen subtrees and makes workers wait on
//! each other's delayed steps. Here the same question the walk asks, "which earlier steps
//! interfere with this one?", is asked once per step up front, with the fast dependence search
//! of §7.6: descend each earlier phase's tree (and the same phase's, left of the step) and skip
//! every call whose inclusive effect does not interfere, so a step's search touches the few
//! calls near it. The answers are the edges of a dependence graph, and magpie's pool runs it:
//! every step is a task whose count of unfinished predecessors reaches zero when the last one
//! finishes, which then spawns it. The first steps are spawned in spliced order, and a finished
//! step's successors are spawned onto its worker's deque (run newest first), so each worker
//! follows a spliced wavefront through the rows its cache holds and thieves take the older,
//! farther ones. Adapted because magpie's tasks cannot be paused mid-call, as the thesis's
//! user-level threads are; a graph of steps needs no pausing, and any order that respects its
//! edges gives the program's results (every interfering pair runs in program order).
//!
//! Results: each step returns an output; a phase's output is its steps' outputs merged in
//! program order ([`Phase::merge`]), whatever order they ran in, so it is the same bits
//! sequentially, spliced, or in parallel.

use crate::effect::Effect;
use crate::grids::Memory;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// One call of a recursive function, the unit a window splices (see the module doc).
pub trait Phase: Sync {
    /// What a call is (its arguments: e.g. a block of rows).
    type Node: Clone + Send + Sync;
    /// What calls declare.
    type Effect: Effect;
    /// What steps work on.
    type Memory: Memory<Self::Effect>;
    /// What a step returns.
    type Output: Send;

    /// The phase's top call.
    fn root(&self) -> Self::Node;
    /// The call's inclusive effect: everything its steps may read and write.
    fn effect(&self, node: &Self::Node) -> Self::Effect;
    /// The call's children in program order; none for a step.
    fn split(&self, node: &Self::Node) -> Vec<Self::Node>;
    /// Runs a step with its view of the memory.
    fn step(
        &self,
        node: &Self::Node,
        view: &mut <Self::Memory as Memory<Self::Effect>>::View<'_>,
    ) -> Self::Output;
    /// The output of a phase with no step.
    fn empty(&self) -> Self::Output;
    /// Two outputs, `a` from earlier steps than `b`, as one.
    fn merge(&self, a: Self::Output, b: Self::Output) -> Self::Output;

    /// Step pipelining (§7.6.3): splits step `step` (a step, or what is left of one) into a
    /// first part to run now and the rest, or `None` to run it whole (the default: no
    /// pipelining). Running the parts one after the other, each through [`Phase::step`] with
    /// its own effect, must do what the whole step does, and each part's effect must be
    /// covered by the whole's (the scheduler checks the cover and holds each part to its
    /// effect, as it does steps). [`crate::kernels::Sliced`] slices the grid kernels' blocks
    /// into rows.
    fn slice(&self, step: &Self::Node) -> Option<(Self::Node, Self::Node)> {
        let _ = step;
        None
    }
}

/// What a run did, summed over its windows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Steps run.
    pub steps: u64,
    /// Interference tests made.
    pub checks: u64,
    /// Consecutive steps of different phases (sequential runs).
    pub switches: u64,
    /// Steps delayed (sequential runs).
    pub delayed: u64,
    /// Interferences found: in a sequential run, each delay's cause; in a parallel run, the
    /// dependence graph's edges.
    pub dependences: u64,
    /// The most bytes delayed steps held at once (sequential runs).
    pub peak_delayed_bytes: u64,
    /// Parts of steps run one at a time by step pipelining ([`Phase::slice`]; sequential runs).
    pub slices: u64,
}

impl Stats {
    /// Adds `o`'s counts to these (the peak is the larger of the two).
    fn add(&mut self, o: &Stats) {
        self.steps += o.steps;
        self.checks += o.checks;
        self.switches += o.switches;
        self.delayed += o.delayed;
        self.dependences += o.dependences;
        self.peak_delayed_bytes = self.peak_delayed_bytes.max(o.peak_delayed_bytes);
        self.slices += o.slices;
    }
}

/// How to run a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each phase's steps in program order, one phase after the other: the unspliced program.
    Unspliced,
    /// The spliced walk on the calling thread.
    Spliced,
    /// The dependence graph on the current magpie pool (call inside `Pool::install`).
    Parallel,
    /// The dependence graph on the calling thread, each next step drawn at random among the
    /// runnable ones (xorshift from this seed): any order the graph allows, for tests.
    Random(u64),
}

/// A phase's call tree, built before the window runs.
struct Tree<N, E> {
    nodes: Vec<TNode<N, E>>,
    /// The steps, in program order (node indices).
    leaves: Vec<u32>,
}

struct TNode<N, E> {
    node: N,
    effect: E,
    parent: u32,
    children: std::ops::Range<u32>,
    /// The steps under this call: `leaves[first..end]`.
    first: u32,
    end: u32,
}

const NONE: u32 = u32::MAX;

impl<N: Clone, E: Effect> Tree<N, E> {
    fn build<P: Phase<Node = N, Effect = E>>(p: &P) -> Tree<N, E> {
        let mut t = Tree {
            nodes: Vec::new(),
            leaves: Vec::new(),
        };
        let root = p.root();
        t.nodes.push(TNode {
            effect: p.effect(&root),
            node: root,
            parent: NONE,
            children: 0..0,
            first: 0,
            end: 0,
        });
        t.expand(p, 0);
        t
    }

    /// Builds the subtree under node `at` (depth first, so a call's steps are contiguous).
    fn expand<P: Phase<Node = N, Effect = E>>(&mut self, p: &P, at: u32) {
        let first = self.leaves.len() as u32;
        let kids = p.split(&self.nodes[at as usize].node);
        if kids.is_empty() {
            self.leaves.push(at);
        } else {
            let start = self.nodes.len() as u32;
            for k in kids {
                self.nodes.push(TNode {
                    effect: p.effect(&k),
                    node: k,
                    parent: at,
                    children: 0..0,
                    first: 0,
                    end: 0,
                });
            }
            let end = self.nodes.len() as u32;
            for c in start..end {
                // The scheduler skips a call's steps when the call does not interfere: a call
                // that does not cover its children would let interfering steps run together.
                assert!(
                    self.nodes[at as usize]
                        .effect
                        .covers(&self.nodes[c as usize].effect),
                    "a call's effect does not cover its child's: declare every call's effect \
                     inclusive of its steps'"
                );
            }
            self.nodes[at as usize].children = start..end;
            for c in start..end {
                self.expand(p, c);
            }
        }
        let n = &mut self.nodes[at as usize];
        n.first = first;
        n.end = self.leaves.len() as u32;
    }
}

/// A step's place: its phase and its position among the phase's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pos {
    phase: u32,
    leaf: u32,
}

/// Why a pending step could not run when it was last checked (see `Window::find_blocker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocker {
    /// An earlier pending step interferes with it, as that step stood after `ran` parts.
    Pending { pos: Pos, ran: u32 },
    /// Phase `phase`'s continuation from step `from` interferes with it.
    Continuation { phase: u32, from: u32 },
}

/// A step the walk has reached that has not finished: delayed, or run a part at a time.
struct Pending<N, E> {
    pos: Pos,
    /// What is left of the step once parts of it have run (node and effect); `None`: all of it,
    /// the tree's node and effect.
    rest: Option<(N, E)>,
    /// Why it could not run when last checked; `None`: nothing known, check it.
    blocker: Option<Blocker>,
    /// Bytes it holds while it waits (counted in the statistics), 0 while it does not.
    waiting: u64,
}

/// What one attempt to run a pending step did.
enum Tried {
    /// Something before it interferes.
    Blocked,
    /// A part ran; the rest is still pending.
    Part,
    /// The step (or its last part) ran and left the pending list.
    Done,
}

/// One window's state.
struct Window<'w, P: Phase> {
    phases: &'w [P],
    trees: Vec<Tree<P::Node, P::Effect>>,
    /// Each phase's first step number.
    base: Vec<u64>,
    stats: Stats,
}

/// Where the spliced walk stands.
struct Walk<N, E> {
    /// The steps reached and not finished, in program order.
    pending: Vec<Pending<N, E>>,
    /// Per phase, the first step the walk has not reached.
    progress: Vec<u32>,
    counts: Counts,
}

/// The spliced walk's running counts.
struct Counts {
    stats: Stats,
    /// Bytes the waiting steps hold now.
    held: u64,
    /// The phase of the last step or part run (`u32::MAX`: none yet).
    last_phase: u32,
    /// Per step of the window (`Window::index`): parts run so far, or [`FINISHED`]. A blocker
    /// names a pending step with its count when it blocked, and has gone once the count
    /// differs: one load, where looking the step up in the pending list was half the walk's
    /// time (jacobi at n = 512).
    ran: Vec<u32>,
}

/// `Counts::ran` of a step that has finished.
const FINISHED: u32 = u32::MAX;

impl Counts {
    /// Counts a thread switch if a step of `phase` runs next after another phase's.
    fn switch_to(&mut self, phase: u32) {
        if phase != self.last_phase {
            self.stats.switches += u64::from(self.last_phase != u32::MAX);
            self.last_phase = phase;
        }
    }
}

impl<'w, P: Phase> Window<'w, P> {
    fn new(phases: &'w [P], seq: u64) -> Window<'w, P> {
        let trees: Vec<_> = phases.iter().map(Tree::build).collect();
        let mut base = Vec::with_capacity(trees.len());
        let mut at = seq;
        for t in &trees {
            base.push(at);
            at += t.leaves.len() as u64;
        }
        Window {
            phases,
            trees,
            base,
            stats: Stats::default(),
        }
    }

    fn steps(&self) -> u64 {
        self.trees.iter().map(|t| t.leaves.len() as u64).sum()
    }

    fn effect(&self, p: Pos) -> &P::Effect {
        let t = &self.trees[p.phase as usize];
        &t.nodes[t.leaves[p.leaf as usize] as usize].effect
    }

    fn seq(&self, p: Pos) -> u64 {
        self.base[p.phase as usize] + p.leaf as u64
    }

    /// Step `p`'s call: its node and effect.
    fn leaf(&self, p: Pos) -> &TNode<P::Node, P::Effect> {
        let t = &self.trees[p.phase as usize];
        &t.nodes[t.leaves[p.leaf as usize] as usize]
    }

    /// Runs step `p` with its view and returns its output.
    fn run(&self, mem: &P::Memory, p: Pos) -> P::Output {
        let n = self.leaf(p);
        self.run_part(mem, p, &n.node, &n.effect)
    }

    /// Runs `node`, step `p` or a part of it (step pipelining), with a view of `effect`, which
    /// covers it.
    fn run_part(&self, mem: &P::Memory, p: Pos, node: &P::Node, effect: &P::Effect) -> P::Output {
        // SAFETY: every caller runs a step only when no step that interferes with it is
        // running, and interfering steps in program order (sequential runs: one step or part
        // at a time, delayed while an earlier one interferes, a step's parts in order;
        // parallel runs: after every earlier interfering step, by the graph's edges).
        let mut view = unsafe { mem.view(effect, self.seq(p)) };
        self.phases[p.phase as usize].step(node, &mut view)
    }

    /// What is left of pending step `d`: its node and effect.
    fn remaining<'a>(&'a self, d: &'a Pending<P::Node, P::Effect>) -> (&'a P::Node, &'a P::Effect) {
        match &d.rest {
            Some((n, e)) => (n, e),
            None => {
                let n = self.leaf(d.pos);
                (&n.node, &n.effect)
            }
        }
    }

    /// Whether the steps of phase `j` from position `from` on (its continuation: the steps the
    /// walk has not reached) interfere with `e`: step `from` and the calls right of the path to
    /// it, at every level. Counts its interference tests in `checks`.
    fn continuation_interferes(
        &self,
        j: usize,
        from: u32,
        e: &P::Effect,
        checks: &mut u64,
    ) -> bool {
        let t = &self.trees[j];
        let Some(&first) = t.leaves.get(from as usize) else {
            return false;
        };
        let mut at = first;
        *checks += 1;
        let mut hit = t.nodes[at as usize].effect.interferes(e);
        while !hit && t.nodes[at as usize].parent != NONE {
            let parent = &t.nodes[t.nodes[at as usize].parent as usize];
            for s in at + 1..parent.children.end {
                *checks += 1;
                if t.nodes[s as usize].effect.interferes(e) {
                    hit = true;
                    break;
                }
            }
            if hit {
                break;
            }
            at = t.nodes[at as usize].parent;
        }
        hit
    }

    /// What keeps step `p` (a part of it, of effect `e`) from running now, or `None` if
    /// nothing does: a pending step before it whose remaining effect interferes (`pending` is
    /// in program order), or an earlier phase `j` whose continuation (from `progress[j]`, the
    /// first step of phase `j` the walk has not reached) interferes. `ran` is `Counts::ran`.
    fn find_blocker(
        &self,
        p: Pos,
        e: &P::Effect,
        pending: &[Pending<P::Node, P::Effect>],
        progress: &[u32],
        ran: &[u32],
        checks: &mut u64,
    ) -> Option<Blocker> {
        for d in pending {
            if d.pos >= p {
                break;
            }
            *checks += 1;
            if self.remaining(d).1.interferes(e) {
                return Some(Blocker::Pending {
                    pos: d.pos,
                    ran: ran[self.index(d.pos)],
                });
            }
        }
        (0..p.phase as usize)
            .find(|&j| {
                #[cfg(test)]
                if tests::SKIP_PREVIOUS_CONTINUATION.with(|m| m.get()) && j + 1 == p.phase as usize
                {
                    return false;
                }
                self.continuation_interferes(j, progress[j], e, checks)
            })
            .map(|j| Blocker::Continuation {
                phase: j as u32,
                from: progress[j],
            })
    }

    /// Whether what blocked a pending step has gone: the blocking step finished or ran another
    /// part since, or the walk moved the blocking phase on. Until then, checking again would
    /// find the same answer.
    fn gone(&self, b: Blocker, counts: &Counts, progress: &[u32]) -> bool {
        match b {
            Blocker::Pending { pos, ran } => counts.ran[self.index(pos)] != ran,
            Blocker::Continuation { phase, from } => progress[phase as usize] != from,
        }
    }

    /// Keeps what a part of step `p` produced, merged with what its earlier parts did.
    fn store(&self, outs: &mut [Option<P::Output>], p: Pos, out: P::Output) {
        let slot = &mut outs[self.index(p)];
        *slot = Some(match slot.take() {
            Some(before) => self.phases[p.phase as usize].merge(before, out),
            None => out,
        });
    }

    /// Step `p`'s place among the window's steps (its output's, and its entry in `Counts::ran`).
    fn index(&self, p: Pos) -> usize {
        (self.seq(p) - self.base[0]) as usize
    }

    /// Tries to run pending step `pending[at]`: the whole of what is left of it, or, when its
    /// phase slices it ([`Phase::slice`]), the first part. Runs it if nothing before it in
    /// program order interferes; otherwise records the blocker and counts a delay.
    fn try_run(
        &self,
        walk: &mut Walk<P::Node, P::Effect>,
        mem: &P::Memory,
        outs: &mut [Option<P::Output>],
        at: usize,
    ) -> Tried {
        let Walk {
            pending,
            progress,
            counts,
        } = walk;
        if let Some(b) = pending[at].blocker {
            if !self.gone(b, counts, progress) {
                return Tried::Blocked;
            }
        }
        let d = &pending[at];
        let p = d.pos;
        let phase = &self.phases[p.phase as usize];
        let (node, effect) = self.remaining(d);
        let part = phase.slice(node).map(|(first, rest)| {
            let fe = phase.effect(&first);
            assert!(
                effect.covers(&fe),
                "a step's slice is not covered by the step's effect: declare each part's \
                 effect inside the step's"
            );
            (first, fe, rest)
        });
        let e = part.as_ref().map_or(effect, |(_, fe, _)| fe);
        let mut checks = 0;
        let blocker = self.find_blocker(p, e, &pending[..at], progress, &counts.ran, &mut checks);
        counts.stats.checks += checks;
        if let Some(b) = blocker {
            let held = (std::mem::size_of::<Pos>()
                + std::mem::size_of::<P::Node>()
                + effect.bytes()) as u64;
            let d = &mut pending[at];
            d.blocker = Some(b);
            if d.waiting == 0 {
                d.waiting = held;
                counts.stats.delayed += 1;
                counts.stats.dependences += 1;
                counts.held += held;
                counts.stats.peak_delayed_bytes = counts.stats.peak_delayed_bytes.max(counts.held);
            }
            return Tried::Blocked;
        }
        counts.switch_to(p.phase);
        let sliced = d.rest.is_some() || part.is_some();
        let (out, rest) = match part {
            Some((first, fe, rest)) => (self.run_part(mem, p, &first, &fe), Some(rest)),
            None => (self.run_part(mem, p, node, effect), None),
        };
        counts.stats.slices += u64::from(sliced);
        self.store(outs, p, out);
        let d = &mut pending[at];
        counts.held -= d.waiting;
        d.waiting = 0;
        match rest {
            Some(rest) => {
                let re = phase.effect(&rest);
                d.rest = Some((rest, re));
                counts.ran[self.index(p)] += 1;
                d.blocker = None;
                Tried::Part
            }
            None => {
                pending.remove(at);
                counts.ran[self.index(p)] = FINISHED;
                counts.stats.steps += 1;
                Tried::Done
            }
        }
    }

    /// Runs pending steps, and parts of them, while any can run, starting with `pending[at]`.
    /// After a part runs, the next pending step has its turn, round the list in program order:
    /// so the phases' pipelined steps advance a part each in turn (the thesis's switch to the
    /// next thread after each slice). When no pending step can run, the walk goes on.
    fn drain(
        &self,
        walk: &mut Walk<P::Node, P::Effect>,
        mem: &P::Memory,
        outs: &mut [Option<P::Output>],
        mut at: usize,
    ) {
        // Consecutive steps found blocked: a whole round of them means none can run.
        let mut blocked = 0;
        while blocked < walk.pending.len() {
            if at >= walk.pending.len() {
                at = 0;
            }
            match self.try_run(walk, mem, outs, at) {
                Tried::Blocked => {
                    blocked += 1;
                    at += 1;
                }
                Tried::Part => {
                    blocked = 0;
                    at += 1;
                }
                // The next step has moved into `at`.
                Tried::Done => blocked = 0,
            }
        }
    }

    fn spliced(&mut self, mem: &P::Memory, outs: &mut [Option<P::Output>]) {
        let mut walk = Walk {
            pending: Vec::new(),
            progress: vec![0u32; self.trees.len()],
            counts: Counts {
                stats: Stats::default(),
                held: 0,
                last_phase: u32::MAX,
                ran: vec![0; self.steps() as usize],
            },
        };
        let longest = self.trees.iter().map(|t| t.leaves.len()).max().unwrap_or(0);
        for i in 0..longest as u32 {
            for k in 0..self.trees.len() as u32 {
                if i as usize >= self.trees[k as usize].leaves.len() {
                    continue;
                }
                let p = Pos { phase: k, leaf: i };
                walk.progress[k as usize] = i + 1;
                let at = walk.pending.partition_point(|d| d.pos < p);
                walk.pending.insert(
                    at,
                    Pending {
                        pos: p,
                        rest: None,
                        blocker: None,
                        waiting: 0,
                    },
                );
                self.drain(&mut walk, mem, outs, at);
            }
        }
        // What is left runs in program order, each step whole; every step before each has run
        // by then.
        let Walk {
            pending,
            mut counts,
            ..
        } = walk;
        for d in pending {
            counts.switch_to(d.pos.phase);
            let (node, effect) = self.remaining(&d);
            let out = self.run_part(mem, d.pos, node, effect);
            counts.stats.slices += u64::from(d.rest.is_some());
            self.store(outs, d.pos, out);
            counts.stats.steps += 1;
        }
        self.stats.add(&counts.stats);
    }

    fn unspliced(&mut self, mem: &P::Memory, outs: &mut [Option<P::Output>]) {
        let mut at = 0;
        for k in 0..self.trees.len() as u32 {
            for i in 0..self.trees[k as usize].leaves.len() as u32 {
                outs[at] = Some(self.run(mem, Pos { phase: k, leaf: i }));
                at += 1;
                self.stats.steps += 1;
            }
            self.stats.switches += u64::from(k > 0);
        }
    }

    /// Every step that comes before `p` in program order and interferes with it, found by
    /// descending each phase's tree through the calls whose inclusive effect interferes.
    fn predecessors(&self, p: Pos, out: &mut Vec<u32>, checks: &mut u64) {
        let e = self.effect(p);
        for j in 0..=p.phase as usize {
            let t = &self.trees[j];
            // In phase `p`'s own tree only the steps left of `p` come before it.
            let limit = if j == p.phase as usize {
                p.leaf
            } else {
                t.leaves.len() as u32
            };
            let mut stack = vec![0u32];
            while let Some(n) = stack.pop() {
                let node = &t.nodes[n as usize];
                if node.first >= limit {
                    continue;
                }
                *checks += 1;
                if !node.effect.interferes(e) {
                    continue;
                }
                if node.children.is_empty() {
                    out.push((self.base[j] - self.base[0]) as u32 + node.first);
                } else {
                    stack.extend(node.children.clone().rev());
                }
            }
        }
    }

    /// Every step's position, its successors and its count of predecessors.
    fn graph(&mut self) -> (Vec<Pos>, Vec<Vec<u32>>, Vec<AtomicU32>) {
        let n = self.steps() as usize;
        let pos: Vec<Pos> = (0..self.trees.len() as u32)
            .flat_map(|k| {
                (0..self.trees[k as usize].leaves.len() as u32)
                    .map(move |i| Pos { phase: k, leaf: i })
            })
            .collect();
        let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
        let preds: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        let mut found = Vec::new();
        let mut checks = 0;
        for (s, &p) in pos.iter().enumerate() {
            found.clear();
            self.predecessors(p, &mut found, &mut checks);
            // Relaxed: built on this thread before any step runs; the counts reach the
            // parallel run's tasks through the spawns that start them.
            preds[s].store(found.len() as u32, Ordering::Relaxed);
            for &q in &found {
                succs[q as usize].push(s as u32);
            }
            self.stats.dependences += found.len() as u64;
        }
        self.stats.checks += checks;
        (pos, succs, preds)
    }

    fn random(&mut self, mem: &P::Memory, outs: &mut [Option<P::Output>], seed: u64) {
        let (pos, succs, preds) = self.graph();
        // Relaxed here and below: the random order runs on this one thread.
        let mut ready: Vec<u32> = (0..pos.len() as u32)
            .filter(|&s| preds[s as usize].load(Ordering::Relaxed) == 0)
            .collect();
        let mut rng = seed | 1;
        while !ready.is_empty() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let s = ready.swap_remove((rng % ready.len() as u64) as usize);
            outs[s as usize] = Some(self.run(mem, pos[s as usize]));
            self.stats.steps += 1;
            for &t in &succs[s as usize] {
                // Relaxed: this one thread (see `ready` above).
                if preds[t as usize].fetch_sub(1, Ordering::Relaxed) == 1 {
                    ready.push(t);
                }
            }
        }
    }

    fn parallel(&mut self, mem: &P::Memory, outs: &mut [Option<P::Output>]) {
        let (pos, succs, preds) = self.graph();
        let n = pos.len();
        // The first steps, in spliced order (position, then phase), spawned in reverse so the
        // earliest is on top of the deque.
        // Relaxed: read on this thread before any step is spawned.
        let mut first: Vec<u32> = (0..n as u32)
            .filter(|&s| preds[s as usize].load(Ordering::Relaxed) == 0)
            .collect();
        first.sort_by_key(|&s| (pos[s as usize].leaf, pos[s as usize].phase));
        let slots: Vec<Mutex<Option<P::Output>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let g = Graph {
            w: &*self,
            mem,
            pos: &pos,
            succs: &succs,
            preds: &preds,
            slots: &slots,
        };
        magpie::scope(|sc| {
            for &s in first.iter().rev() {
                let g = &g;
                sc.spawn(move |sc| g.run_from(sc, s));
            }
        });
        for (o, s) in outs.iter_mut().zip(slots) {
            *o = s.into_inner().unwrap_or_else(|e| e.into_inner());
        }
        self.stats.steps += n as u64;
    }
}

/// The dependence graph of a parallel window.
struct Graph<'g, 'w, P: Phase> {
    w: &'g Window<'w, P>,
    mem: &'g P::Memory,
    pos: &'g [Pos],
    succs: &'g [Vec<u32>],
    /// Unfinished predecessors per step.
    preds: &'g [AtomicU32],
    slots: &'g [Mutex<Option<P::Output>>],
}

impl<'g, P: Phase> Graph<'g, '_, P> {
    fn run_from<'s>(&'s self, sc: &magpie::Scope<'s>, s: u32)
    where
        'g: 's,
    {
        let out = self.w.run(self.mem, self.pos[s as usize]);
        *self.slots[s as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(out);
        for &t in self.succs[s as usize].iter().rev() {
            // AcqRel: the step's writes happen before a successor that sees the count reach 0.
            if self.preds[t as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
                sc.spawn(move |sc| self.run_from(sc, t));
            }
        }
    }
}

/// Runs `phases` in windows of `window` phases (the last may be shorter) as `mode` says, on
/// `mem`; returns each phase's output and the statistics. A window of 1 is the unspliced
/// program: on one thread, step for step; in parallel, each phase's steps as a graph on the
/// pool, one phase after the other (the fork-join program).
pub fn run<P: Phase>(
    phases: &[P],
    mem: &mut P::Memory,
    window: usize,
    mode: Mode,
) -> (Vec<P::Output>, Stats) {
    let window = window.max(1);
    let mut outputs = Vec::with_capacity(phases.len());
    let mut stats = Stats::default();
    let mut seq = 0u64;
    for chunk in phases.chunks(window) {
        let mut w = Window::new(chunk, seq);
        // The shadow checker's plan (a no-op unless the memory checks).
        for (k, t) in w.trees.iter().enumerate() {
            for (i, &l) in t.leaves.iter().enumerate() {
                mem.plan(w.base[k] + i as u64, &t.nodes[l as usize].effect);
            }
        }
        let n = w.steps() as usize;
        let mut outs: Vec<Option<P::Output>> = (0..n).map(|_| None).collect();
        let mem: &P::Memory = mem;
        match mode {
            // One phase on one thread: nothing to splice.
            Mode::Spliced | Mode::Random(_) if chunk.len() == 1 => w.unspliced(mem, &mut outs),
            Mode::Unspliced => w.unspliced(mem, &mut outs),
            Mode::Spliced => w.spliced(mem, &mut outs),
            Mode::Parallel => w.parallel(mem, &mut outs),
            Mode::Random(seed) => w.random(mem, &mut outs, seed),
        }
        let mut it = outs.into_iter();
        for (k, t) in w.trees.iter().enumerate() {
            let p = &chunk[k];
            let mut acc = p.empty();
            for _ in 0..t.leaves.len() {
                let o = it.next().flatten().expect("every step ran");
                acc = p.merge(acc, o);
            }
            outputs.push(acc);
        }
        seq += n as u64;
        stats.add(&w.stats);
    }
    (outputs, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::Rows;
    use crate::grids::{Grids, View};
    use crate::kernels::{halves, Block, Seidel, Sliced};
    use std::cell::Cell;

    /// A ping-pong stencil: step `t` reads buffer `t % 2` and writes each interior point of
    /// buffer `(t + 1) % 2` as the mean of the three rows around it (the case where a phase
    /// depends on the one before it through another buffer).
    struct Blur {
        n: usize,
        t: usize,
        grain: usize,
    }

    impl Blur {
        fn grids(n: usize) -> Grids {
            let g: Vec<f64> = (0..n * n).map(|k| ((k * 5 + 1) % 17) as f64).collect();
            Grids::new(vec![(n, g.clone()), (n, g)])
        }
        fn phases(n: usize, steps: usize, grain: usize) -> Vec<Blur> {
            (0..steps).map(|t| Blur { n, t, grain }).collect()
        }
    }

    impl Phase for Blur {
        type Node = Block;
        type Effect = Rows;
        type Memory = Grids;
        type Output = ();
        fn root(&self) -> Block {
            1..self.n - 1
        }
        fn effect(&self, b: &Block) -> Rows {
            Rows::new()
                .read(self.t % 2, b.start - 1..b.end + 1)
                .write((self.t + 1) % 2, b.clone())
        }
        fn split(&self, b: &Block) -> Vec<Block> {
            halves(b, self.grain)
        }
        fn step(&self, b: &Block, v: &mut View<'_>) {
            let (src, dst) = (self.t % 2, (self.t + 1) % 2);
            for r in b.clone() {
                let ([out], [up, mid, down]) =
                    v.rows([(dst, r)], [(src, r - 1), (src, r), (src, r + 1)]);
                for j in 1..out.len() - 1 {
                    out[j] = (up[j] + mid[j] + down[j]) / 3.0;
                }
            }
        }
        fn empty(&self) {}
        fn merge(&self, _: (), _: ()) {}
    }

    thread_local! {
        /// A planted scheduler bug: the walk ignores the previous phase's continuation.
        pub(super) static SKIP_PREVIOUS_CONTINUATION: Cell<bool> = const { Cell::new(false) };
    }

    /// The spliced walk (whole steps and in parts) and random graph orders against the
    /// unspliced run, small enough for Miri (`scripts/test.sh` runs this module under it: the
    /// views' raw-pointer slices and the walk, checked for undefined behaviour).
    #[test]
    fn small_spliced_runs_match_the_unspliced_one() {
        let n = 7;
        for window in [2, 3] {
            let phases = Seidel::phases(n, 3, 1);
            let mut want = Seidel::grids(n).check();
            run(&phases, &mut want, 1, Mode::Unspliced);
            for mode in [Mode::Spliced, Mode::Random(9)] {
                let mut got = Seidel::grids(n).check();
                run(&phases, &mut got, window, mode);
                assert_eq!(got.buffer(0), want.buffer(0), "seidel {window} {mode:?}");
            }
            let phases = Blur::phases(n, 3, 2);
            let mut want = Blur::grids(n).check();
            run(&phases, &mut want, 1, Mode::Unspliced);
            let mut got = Blur::grids(n).check();
            run(&phases, &mut got, window, Mode::Spliced);
            assert_eq!(got.buffer(1), want.buffer(1), "ping-pong {window}");
            // Step pipelining: the same steps in parts of one row.
            let sliced = Sliced::all(Seidel::phases(n, 3, 3), 1);
            let mut want = Seidel::grids(n).check();
            run(&Seidel::phases(n, 3, 3), &mut want, 1, Mode::Unspliced);
            let mut got = Seidel::grids(n).check();
            let (_, stats) = run(&sliced, &mut got, window, Mode::Spliced);
            assert_eq!(got.buffer(0), want.buffer(0), "sliced seidel {window}");
            assert!(stats.slices > stats.steps);
        }
    }

    /// Mutation test of the scheduler: with the previous phase's continuation ignored, a step
    /// of Seidel's next sweep overwrites rows the current sweep has still to read. The shadow
    /// checker names the read that saw the wrong writer; without the planted bug the same run
    /// passes it and matches the plain loops.
    #[test]
    fn the_shadow_checker_catches_a_planted_scheduler_bug() {
        let n = 20;
        let phases = Seidel::phases(n, 4, 2);
        let mut ok = Seidel::grids(n).check();
        run(&phases, &mut ok, 4, Mode::Spliced);
        let mut want = Seidel::grids(n);
        Seidel::plain(n, 4, want.buffer_mut(0));
        assert_eq!(ok.buffer(0), want.buffer(0));
        SKIP_PREVIOUS_CONTINUATION.with(|m| m.set(true));
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut g = Seidel::grids(n).check();
            run(&phases, &mut g, 4, Mode::Spliced);
        }));
        SKIP_PREVIOUS_CONTINUATION.with(|m| m.set(false));
        let err = err.expect_err("the planted bug must be caught");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.starts_with("shadow check: step"), "{msg}");
    }
}
