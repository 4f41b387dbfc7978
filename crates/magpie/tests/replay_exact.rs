//! Ordered replay is exact for every program built from the task constructs: a property test.
//!
//! Programs come from a small grammar over `join`, `scope`, scope spawns (into the innermost
//! enclosing scope, which may have been opened by an ancestor task or outside the region),
//! nested calls, `join_designated` and `Scope::spawn_designated`, with a random depth, fan-out,
//! mix of constructs and leaf cost. Each is recorded (`schedule::record`), then followed under
//! `Constraint::Ordered` in the same install, so the root runs on the same worker both times,
//! and the two runs are compared leaf by leaf (the worker that ran each leaf) and schedule by
//! schedule (the followed run re-records the template exactly: the same cuts on the same
//! workers in the same order). `Builder::replay` gets the same check, each replayed install
//! starting on the worker its recording started on.
//!
//! The target is every replay exact. A follow may depart from its template only through the
//! stall rule, and then `Stats::deviations` counts it; a departure it does not count fails the
//! test.

use magpie::schedule::{self, Constraint, Cut, Schedule};
use magpie::{Policy, Pool, Scope};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

#[allow(dead_code)]
#[path = "support/program.rs"]
mod program;
#[path = "support/watchdog.rs"]
mod watchdog;
use program::Rng;
use watchdog::watchdog;

/// One operation of a task's body.
#[derive(Debug)]
enum Op {
    /// A leaf: notes its worker, then runs `cost` steps of arithmetic.
    Leaf(usize, u32),
    /// `join(a, b)`; both halves see the enclosing scope, so they may spawn into it.
    Join(Vec<Op>, Vec<Op>),
    /// `scope(|s| body)`: the body's spawns go into the new scope.
    Finish(Vec<Op>),
    /// A spawn into the enclosing scope; the child's spawns go there too.
    Spawn(Vec<Op>),
    /// A nested call: the body runs in the same task, with the same scope.
    Call(Vec<Op>),
    /// `join_designated(here + k, a, b)`.
    JoinTo(usize, Vec<Op>, Vec<Op>),
    /// `s.spawn_designated(here + k, body)`.
    SpawnTo(usize, Vec<Op>),
}

/// How often each construct is chosen (per program, so the mix varies) and the sizes.
struct Shape {
    /// Weights of Join, Finish, Spawn, Call, JoinTo, SpawnTo.
    weights: [u64; 6],
    fan_out: u64,
    max_cost: u32,
}

struct Gen<'a> {
    rng: &'a mut Rng,
    shape: Shape,
    leaves: usize,
}

impl Gen<'_> {
    fn body(&mut self, depth: u32) -> Vec<Op> {
        let n = 1 + self.rng.below(self.shape.fan_out);
        (0..n).map(|_| self.op(depth)).collect()
    }

    fn op(&mut self, depth: u32) -> Op {
        if depth == 0 || self.rng.below(5) == 0 {
            self.leaves += 1;
            let cost = self.rng.below(self.shape.max_cost as u64 + 1) as u32;
            return Op::Leaf(self.leaves - 1, cost);
        }
        let total: u64 = self.shape.weights.iter().sum();
        let mut pick = self.rng.below(total);
        let mut kind = 0;
        while pick >= self.shape.weights[kind] {
            pick -= self.shape.weights[kind];
            kind += 1;
        }
        let d = depth - 1;
        match kind {
            0 => Op::Join(self.body(d), self.body(d)),
            1 => Op::Finish(self.body(d)),
            2 => Op::Spawn(self.body(d)),
            3 => Op::Call(self.body(d)),
            4 => Op::JoinTo(1 + self.rng.below(7) as usize, self.body(d), self.body(d)),
            _ => Op::SpawnTo(1 + self.rng.below(7) as usize, self.body(d)),
        }
    }
}

/// A random program (its root task's body) and its number of leaves.
fn program(seed: u64) -> (Vec<Op>, usize) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut weights = [0u64; 6];
    for w in weights.iter_mut() {
        *w = rng.below(4);
    }
    // At least one construct that creates tasks.
    weights[rng.below(3) as usize] += 2;
    let shape = Shape {
        weights,
        fan_out: 2 + rng.below(3),
        max_cost: [200, 2_000, 20_000][rng.below(3) as usize],
    };
    let depth = 4 + rng.below(3) as u32;
    let mut g = Gen {
        rng: &mut rng,
        shape,
        leaves: 0,
    };
    let body = g.body(depth);
    let leaves = g.leaves;
    (body, leaves)
}

/// A program in a compact form, for a failure's message: `L3` a leaf, `J(a|b)` a join, `F[..]` a
/// scope, `S[..]` a spawn, `C[..]` a call, `J>k(a|b)` and `S>k[..]` designations.
fn show(body: &[Op]) -> String {
    let list = |b: &[Op]| {
        b.iter()
            .map(|o| show(std::slice::from_ref(o)))
            .collect::<Vec<_>>()
    };
    body.iter()
        .map(|op| match op {
            Op::Leaf(id, _) => format!("L{id}"),
            Op::Join(a, b) => format!("J({}|{})", list(a).join(" "), list(b).join(" ")),
            Op::Finish(b) => format!("F[{}]", list(b).join(" ")),
            Op::Spawn(b) => format!("S[{}]", list(b).join(" ")),
            Op::Call(b) => format!("C[{}]", list(b).join(" ")),
            Op::JoinTo(k, a, b) => format!("J>{k}({}|{})", list(a).join(" "), list(b).join(" ")),
            Op::SpawnTo(k, b) => format!("S>{k}[{}]", list(b).join(" ")),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Per leaf: the worker that ran it (+1; 0 = not run) and how often it ran.
struct Log {
    worker: Vec<AtomicUsize>,
    runs: Vec<AtomicU32>,
}

impl Log {
    fn new(leaves: usize) -> Log {
        Log {
            worker: (0..leaves).map(|_| AtomicUsize::new(0)).collect(),
            runs: (0..leaves).map(|_| AtomicU32::new(0)).collect(),
        }
    }
    fn map(&self) -> Vec<usize> {
        self.worker
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect()
    }
    fn each_ran_once(&self) -> bool {
        self.runs.iter().all(|r| r.load(Ordering::Relaxed) == 1)
    }
}

fn here() -> usize {
    magpie::worker_index().expect("a task outside a worker")
}

/// Runs `body` with `s` as the enclosing scope, adding each leaf's value (its id + 1) to `sum`.
fn run<'s>(body: &'s [Op], s: &Scope<'s>, log: &'s Log, sum: &'s AtomicUsize) {
    for op in body {
        match op {
            Op::Leaf(id, cost) => {
                log.worker[*id].store(here() + 1, Ordering::Relaxed);
                log.runs[*id].fetch_add(1, Ordering::Relaxed);
                let mut x = *id as u64;
                for _ in 0..*cost {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                }
                std::hint::black_box(x);
                sum.fetch_add(*id + 1, Ordering::Relaxed);
            }
            Op::Join(a, b) => {
                magpie::join(|| run(a, s, log, sum), || run(b, s, log, sum));
            }
            Op::Finish(b) => magpie::scope(|s2| run(b, s2, log, sum)),
            Op::Spawn(b) => s.spawn(move |s| run(b, s, log, sum)),
            Op::Call(b) => run(b, s, log, sum),
            Op::JoinTo(k, a, b) => {
                magpie::join_designated(here() + k, || run(a, s, log, sum), || run(b, s, log, sum));
            }
            Op::SpawnTo(k, b) => s.spawn_designated(here() + k, move |s| run(b, s, log, sum)),
        }
    }
}

/// Runs the program once: its root in a scope opened inside the region (`outer` false), or
/// with a scope opened outside it (`outer` true: the region's tasks spawn into a scope that
/// outlives the region's root). `region` runs the closure it is given as a region (a record or
/// a follow), or as it is inside an install that is one (`Builder::replay`).
fn run_program<S, F>(body: &[Op], leaves: usize, outer: bool, region: F) -> (Vec<usize>, S)
where
    F: FnOnce(&(dyn Fn() + Sync)) -> S + Send,
    S: Send,
{
    let log = Log::new(leaves);
    let sum = AtomicUsize::new(0);
    let taken = if outer {
        let mut taken = None;
        magpie::scope(|s| taken = Some(region(&|| run(body, s, &log, &sum))));
        taken.expect("the region ran")
    } else {
        region(&|| magpie::scope(|s| run(body, s, &log, &sum)))
    };
    assert!(log.each_ran_once(), "a leaf did not run exactly once");
    assert_eq!(
        sum.into_inner(),
        leaves * (leaves + 1) / 2,
        "the program's sum"
    );
    (log.map(), taken)
}

const POLICIES: [Policy; 3] = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];

/// What a set of replays came to.
#[derive(Default)]
struct Tally {
    replays: usize,
    with_cuts: usize,
    /// Replays that re-recorded their template exactly: the same cuts on the same workers, begun
    /// in the same order.
    exact: usize,
    /// Replays whose order departed from the template's, each departure counted.
    reordered: usize,
    deviations: u64,
}

impl Tally {
    /// One replay: `rec` and `fol` are the leaf maps and schedules of the recording and the
    /// replay, `dev` the deviations the replay counted. Every leaf must run on its recorded
    /// worker and every recorded cut must be a cut again, on its worker; only the order in which
    /// a worker begins its cuts may differ, and then only with a counted deviation.
    fn add(
        &mut self,
        what: &str,
        body: &[Op],
        rec: &(Vec<usize>, Schedule),
        fol: &(Vec<usize>, Schedule),
        dev: u64,
    ) {
        self.replays += 1;
        self.deviations += dev;
        if !rec.1.cuts().is_empty() {
            self.with_cuts += 1;
        }
        let unranked = |s: &Schedule| -> Vec<(Vec<u32>, u32)> {
            s.cuts()
                .iter()
                .map(|c| (c.path.clone(), c.worker))
                .collect()
        };
        let moved: Vec<usize> = (0..rec.0.len()).filter(|&i| rec.0[i] != fol.0[i]).collect();
        if !moved.is_empty() || unranked(&rec.1) != unranked(&fol.1) {
            let only = |a: &Schedule, b: &Schedule| -> Vec<Cut> {
                a.cuts()
                    .iter()
                    .filter(|c| !b.cuts().contains(c))
                    .cloned()
                    .collect()
            };
            panic!(
                "{what}: an Ordered replay ran work elsewhere than recorded ({dev} deviations \
                 counted): leaves {moved:?} of {} moved (worker + 1 recorded, followed: {:?})\n \
                 cuts only recorded {:?}\n cuts only followed {:?}\n program {}",
                rec.0.len(),
                moved
                    .iter()
                    .map(|&i| (rec.0[i], fol.0[i]))
                    .collect::<Vec<_>>(),
                only(&rec.1, &fol.1),
                only(&fol.1, &rec.1),
                show(body),
            );
        }
        if rec.1 == fol.1 {
            self.exact += 1;
        } else {
            assert!(
                dev > 0,
                "{what}: the replay began its cuts in another order than recorded without a \
                 counted deviation\n recorded {:?}\n followed {:?}\n program {}",
                rec.1.per_worker(),
                fol.1.per_worker(),
                show(body)
            );
            self.reordered += 1;
        }
    }

    fn report(&self, what: &str) {
        println!(
            "{what}: {} replays ({} with cuts), every leaf on its recorded worker in all; \
             {} in the recorded order, {} reordered with {} counted deviations, 0 uncounted",
            self.replays, self.with_cuts, self.exact, self.reordered, self.deviations
        );
        assert!(
            self.with_cuts * 2 >= self.replays,
            "too few programs had steals to replay: {} of {}",
            self.with_cuts,
            self.replays
        );
    }
}

#[test]
fn ordered_follows_of_random_programs_are_exact() {
    let mut tally = Tally::default();
    for workers in 2..=8 {
        for policy in POLICIES {
            let pool = Pool::builder()
                .workers(workers)
                .policy(policy)
                .build()
                .expect("pool");
            for seed in 1..=6u64 {
                let seed = seed * 1_000 + workers as u64 * 10 + policy as u64;
                let (body, leaves) = program(seed);
                let outer = seed.is_multiple_of(2);
                let what = format!("{workers} workers, {policy:?}, program {seed}");
                watchdog(120, &what, || {
                    let before = pool.stats().deviations;
                    let (rec, fol) = pool.install(|| {
                        let rec = run_program(&body, leaves, outer, |f| schedule::record(f).1);
                        let t = &rec.1;
                        let fol = run_program(&body, leaves, outer, |f| {
                            schedule::follow(t, Constraint::Ordered, f).1
                        });
                        (rec, fol)
                    });
                    tally.add(&what, &body, &rec, &fol, pool.stats().deviations - before);
                });
            }
        }
    }
    tally.report("schedule::follow under Ordered, 2-8 workers");
}

#[test]
fn replayed_traces_of_random_programs_are_exact() {
    let mut tally = Tally::default();
    for workers in 2..=8 {
        for policy in POLICIES {
            let seed = 7_000 + workers as u64 * 10 + policy as u64;
            let progs: Vec<(Vec<Op>, usize)> = (0..2).map(|i| program(seed + i)).collect();
            let what = format!("{workers} workers, {policy:?}, programs {seed}+");
            watchdog(120, &what, || {
                let traced = Pool::builder()
                    .workers(workers)
                    .policy(policy)
                    .trace_cuts(true)
                    .build()
                    .expect("pool");
                // Each program once per install (each install is a region), with the leaf map
                // and the deviations that install counted.
                let run_all = |pool: &Pool| -> Vec<(Vec<usize>, u64)> {
                    progs
                        .iter()
                        .enumerate()
                        .map(|(i, (body, leaves))| {
                            let before = pool.stats().deviations;
                            let outer = i % 2 == 1;
                            let map = pool
                                .install(|| run_program(body, *leaves, outer, |f| f()))
                                .0;
                            (map, pool.stats().deviations - before)
                        })
                        .collect()
                };
                let recorded = run_all(&traced);
                let trace = traced.trace().expect("a trace");
                drop(traced);
                let back = magpie::trace::Trace::from_bytes(&trace.to_bytes()).expect("read");
                let schedules = Schedule::from_trace(&back).expect("the trace names its cuts");
                let replay = Pool::builder()
                    .replay(&back)
                    .trace_cuts(true)
                    .build()
                    .expect("replay pool");
                let followed = run_all(&replay);
                let again = Schedule::from_trace(&replay.trace().unwrap()).unwrap();
                for i in 0..progs.len() {
                    let rec = (recorded[i].0.clone(), schedules[i].clone());
                    let fol = (followed[i].0.clone(), again[i].clone());
                    let what = format!("{what}, install {i}");
                    tally.add(&what, &progs[i].0, &rec, &fol, followed[i].1);
                }
            });
        }
    }
    tally.report("Builder::replay, 2-8 workers");
}
