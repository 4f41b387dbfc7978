//! A discrete-event simulator of task collections at thousands of ranks (Lifflander's thesis,
//! §5.6, drawn on paper): the same split deque, termination detector, victim choice and
//! balancers as a real run, with time taken from a cost model instead of a clock.
//!
//! # What runs, and what is modelled
//!
//! Every virtual rank has a real [`Owner`] over a [`Local`] memory, a real
//! [`Detector`], the collection's own xorshift victim choice ([`collection::victim`]) and, between
//! iterations, the collection's own reseeding ([`collection::placement`] for the balancers). A
//! steal is the real [`steal`] against the victim's real deque, so steal-half, the
//! release and acquire of shared tasks and the claimed-task counts that termination reads are
//! the real protocol's. What the simulator adds is *when*: one event queue in simulated
//! nanoseconds, events at equal times in the order they were made, so a run is deterministic.
//!
//! - A task costs `task_ns + units × unit_ns` ([`Model`]), its units from the synthetic
//!   kernel's cost function (the same as a real run's), so its cost persists across iterations.
//! - A steal attempt takes `attempt_ns`: the claim (the compare-and-swap on the victim's word)
//!   happens at half of it, against the victim's deque as it is then, and the thief learns the
//!   result at the end; stolen tasks arrive `copy_ns` each later still. The claim and the copy
//!   of a real steal are separate operations; here they happen at the claim's instant, with the
//!   copy's time charged to the thief before it may run them.
//! - A termination message arrives `message_ns` after it is sent, and is handled on arrival,
//!   also by a rank that is running a task (a real rank looks between tasks).
//! - Iterations start together on every rank at time 0; the balancers' own time and the
//!   collectives between iterations are not modelled (the thesis leaves them out of its
//!   efficiency figures too).
//!
//! Not modelled: network topology, contention and bandwidth limits (every message and steal
//! takes its fixed time, however many are in flight to one rank), operating-system noise,
//! caches, and tasks whose cost varies between iterations. The model is calibrated
//! ([`Model::calibrate`]) from real runs' reports at 2-4 ranks on this machine's loopback, whose
//! latencies are far below a network's; [`Model`]'s fields can be set to a network's instead.
//!
//! Each iteration checks itself: every task ran exactly once, every rank's detector
//! terminated, and no thief received tasks after it learned the collection had ended.

use crate::kernels::Synthetic;
use magpie_dist::balance::Params;
use magpie_dist::collection::{self, Entry, IterationReport, RankReport, Strategy};
use magpie_dist::deque::{steal, Full, Local, Owner, Stolen};
use magpie_dist::termination::{Detector, Message};
use magpie_dist::timeline::State;
use serde::{Deserialize, Serialize};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// The simulator's costs, nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// One unit of a synthetic task's cost.
    pub unit_ns: f64,
    /// A task's fixed cost (taking it from the deque and calling it); a null task's whole cost.
    pub task_ns: f64,
    /// A steal attempt's round trip, found empty or not.
    pub attempt_ns: f64,
    /// Copying one stolen task to the thief.
    pub copy_ns: f64,
    /// A termination message's one-way latency.
    pub message_ns: f64,
}

impl Default for Model {
    /// This machine's loopback (2 cores, Open MPI 4.1.4 with `osc=sm`): `unit_ns` and
    /// `attempt_ns` fitted by [`Model::calibrate`] to `mpirun -n 2 magpie-dist run hf|tce --n 200
    /// --strategy steal|steal-retentive --iterations 10 --json` (one rank per core; at 4 ranks
    /// the cores are shared and a unit takes twice as long); `message_ns` is half the round
    /// trip `mpirun -n 2 magpie-dist selftest latency` measured. `task_ns` and `copy_ns` are
    /// assumed: those runs cannot tell a task's fixed cost from its units (the fit puts it
    /// within noise of 0), and a steal's copy is one `MPI_Get` of 16-byte tasks.
    fn default() -> Model {
        Model {
            unit_ns: 413.0,
            task_ns: 60.0,
            attempt_ns: 346.0,
            copy_ns: 10.0,
            message_ns: 510.0,
        }
    }
}

/// One real run's per-iteration totals, what [`Model::calibrate`] fits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Tasks run, over the ranks.
    pub tasks: u64,
    /// Their cost units (the kernel's cost function summed over them).
    pub units: u64,
    /// Nanoseconds running tasks, over the ranks.
    pub task_ns: u64,
    /// Steal attempts, over the ranks.
    pub attempts: u64,
    /// Nanoseconds in them.
    pub steal_ns: u64,
}

impl Model {
    /// Fits `unit_ns` and `task_ns` to real runs' task time (least squares of `task time =
    /// units × unit_ns + tasks × task_ns` over the samples; with samples of one kernel only,
    /// whose units and tasks are proportional, `task_ns` keeps `self`'s value and `unit_ns`
    /// takes the rest), and `attempt_ns` to their steal time per attempt. The other fields stay.
    /// `None` without a sample with tasks.
    pub fn calibrate(self, samples: &[Sample]) -> Option<Model> {
        let (mut suu, mut sut, mut stt, mut suy, mut sty) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for s in samples.iter().filter(|s| s.tasks > 0) {
            let (u, t, y) = (s.units as f64, s.tasks as f64, s.task_ns as f64);
            suu += u * u;
            sut += u * t;
            stt += t * t;
            suy += u * y;
            sty += t * y;
        }
        if stt == 0.0 {
            return None;
        }
        let det = suu * stt - sut * sut;
        let mut m = self;
        let fitted = (det.abs() > 1e-9 * suu * stt).then(|| {
            let unit = (suy * stt - sty * sut) / det;
            let task = (suu * sty - sut * suy) / det;
            (unit, task)
        });
        match fitted {
            Some((unit, task)) if unit > 0.0 && task >= 0.0 => {
                m.unit_ns = unit;
                m.task_ns = task;
            }
            _ => {
                let rest: f64 = samples
                    .iter()
                    .map(|s| s.task_ns as f64 - s.tasks as f64 * self.task_ns)
                    .sum();
                let units: u64 = samples.iter().map(|s| s.units).sum();
                if units > 0 && rest > 0.0 {
                    m.unit_ns = rest / units as f64;
                }
            }
        }
        let attempts: u64 = samples.iter().map(|s| s.attempts).sum();
        if attempts > 0 {
            m.attempt_ns = samples.iter().map(|s| s.steal_ns).sum::<u64>() as f64 / attempts as f64;
        }
        Some(m)
    }

    fn cost(&self, units: u64) -> u64 {
        (self.task_ns + units as f64 * self.unit_ns)
            .round()
            .max(1.0) as u64
    }
}

/// What to simulate.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The kernel (its tasks and their costs).
    pub kernel: Synthetic,
    /// Virtual ranks.
    pub ranks: usize,
    /// The strategy.
    pub strategy: Strategy,
    /// Iterations.
    pub iterations: usize,
    /// The costs.
    pub model: Model,
    /// The balancers' constants and the termination tree's arity.
    pub params: Params,
}

/// A simulation's outcome: per iteration, every rank's figures as a real run reports them
/// (times are simulated nanoseconds); the timelines of the first and last iteration only.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// The kernel's name.
    pub kernel: String,
    /// Virtual ranks.
    pub ranks: usize,
    /// The strategy's name.
    pub strategy: String,
    /// The cost model.
    pub model: Model,
    /// Per iteration.
    pub iterations: Vec<IterationReport>,
    /// Total work ÷ ranks per iteration (the ideal time, nanoseconds).
    pub ideal_ns: f64,
    /// Events simulated.
    pub events: u64,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The rank takes its next task, or looks for one.
    Step(u32),
    /// A thief's claim reaches its victim's deque.
    Claim { thief: u32, victim: u32 },
    /// A thief's stolen tasks have arrived.
    Arrive(u32),
    /// A thief learns its attempt found nothing.
    Fail(u32),
    /// A termination message arrives.
    Msg { to: u32, m: Message },
}

struct Item {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Item {
    fn eq(&self, o: &Item) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Item) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Item) -> Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

struct Rank {
    own: Owner<Entry<u64>, Local<Entry<u64>>>,
    overflow: Vec<Entry<u64>>,
    det: Detector,
    rng: u64,
    rep: RankReport,
    /// The collection's own tasks run this iteration, with their cost.
    ran: Vec<(u64, u64)>,
    incoming: Vec<Entry<u64>>,
    /// When the steal attempt in flight began.
    attempt: Option<u64>,
    /// Idle with no event of its own pending: only a message wakes it.
    waiting: bool,
    done: bool,
}

impl Rank {
    fn add(&mut self, e: Entry<u64>) {
        if let Err(Full(e)) = self.own.push(e) {
            self.overflow.push(e);
        }
    }
}

struct Sim {
    cfg: Config,
    ranks: Vec<Rank>,
    queue: BinaryHeap<Reverse<Item>>,
    seq: u64,
    now: u64,
    events: u64,
    /// Per task id, whether it ran this iteration.
    seen: Vec<bool>,
    steals: bool,
    /// Spans are kept for this iteration.
    record: bool,
    /// Under the balancers with stealing, every rank's tasks as the last placement put them
    /// (the seed until the first): what the next placement starts from.
    placed: Option<Vec<Vec<u64>>>,
}

impl Sim {
    fn at(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse(Item {
            at,
            seq: self.seq,
            ev,
        }));
    }

    fn send(&mut self, out: Vec<(usize, Message)>) {
        let at = self.now + self.cfg.model.message_ns.round() as u64;
        for (to, m) in out {
            self.at(at, Ev::Msg { to: to as u32, m });
        }
    }

    fn span(&mut self, r: usize, from: u64, state: State) {
        if self.record {
            let now = self.now;
            self.ranks[r].rep.timeline.add(from, now, state);
        }
    }

    fn finish(&mut self, r: usize) {
        // A rank that learns of termination mid-attempt stops stealing then.
        self.end_attempt(r);
        let now = self.now;
        let n = &mut self.ranks[r];
        n.done = true;
        n.waiting = false;
        n.rep.wall_ns = now;
    }

    /// The rank has nothing to run and no steal in flight: it polls its detector.
    fn idle(&mut self, r: usize) {
        let n = &mut self.ranks[r];
        let out = n.det.poll(true, n.own.stolen());
        let done = n.det.terminated();
        self.send(out);
        if done {
            self.finish(r);
        } else {
            self.ranks[r].waiting = true;
        }
    }

    fn step(&mut self, r: usize) -> Result<(), String> {
        let n = &mut self.ranks[r];
        if let Some(e) = n.overflow.pop().or_else(|| n.own.pop()) {
            let seen = &mut self.seen[e.task as usize];
            if *seen {
                return Err(format!("task {} ran twice", e.task));
            }
            *seen = true;
            let cost = self.cfg.model.cost(self.cfg.kernel.cost(e.task));
            n.rep.tasks += 1;
            n.rep.task_ns += cost;
            // Simulated ranks never wait for a core: their CPU time is their time.
            n.rep.task_cpu_ns += cost;
            if e.root {
                n.ran.push((e.task, cost));
            }
            let (from, to) = (self.now, self.now + cost);
            if self.record {
                n.rep.timeline.add(from, to, State::Task);
            }
            self.at(to, Ev::Step(r as u32));
        } else if self.steals {
            n.rep.steals_attempted += 1;
            n.attempt = Some(self.now);
            let v = collection::victim(&mut n.rng, r, self.cfg.ranks);
            let at = self.now + (self.cfg.model.attempt_ns / 2.0).round() as u64;
            self.at(
                at,
                Ev::Claim {
                    thief: r as u32,
                    victim: v as u32,
                },
            );
        } else {
            self.idle(r);
        }
        Ok(())
    }

    fn end_attempt(&mut self, t: usize) {
        if let Some(from) = self.ranks[t].attempt.take() {
            self.ranks[t].rep.steal_ns += self.now - from;
            self.span(t, from, State::Steal);
        }
    }

    fn handle(&mut self, ev: Ev) -> Result<(), String> {
        let half = (self.cfg.model.attempt_ns / 2.0).round() as u64;
        match ev {
            Ev::Step(r) => self.step(r as usize)?,
            Ev::Claim { thief, victim } => {
                let got = steal(self.ranks[victim as usize].own.memory(), 4);
                let t = thief as usize;
                match got {
                    Stolen::Tasks(ts) => {
                        if self.ranks[t].done {
                            return Err(format!(
                                "rank {t} stole {} tasks after the collection ended",
                                ts.len()
                            ));
                        }
                        let copy = (ts.len() as f64 * self.cfg.model.copy_ns).round() as u64;
                        self.ranks[t].rep.steals_successful += 1;
                        self.ranks[t].incoming = ts;
                        self.at(self.now + half + copy, Ev::Arrive(thief));
                    }
                    // One thread: no other claim races this one.
                    Stolen::Empty | Stolen::Contended => self.at(self.now + half, Ev::Fail(thief)),
                }
            }
            Ev::Arrive(t) => {
                let t = t as usize;
                self.end_attempt(t);
                let n = &mut self.ranks[t];
                for e in std::mem::take(&mut n.incoming) {
                    n.add(e);
                }
                self.step(t)?;
            }
            Ev::Fail(t) => {
                let t = t as usize;
                self.end_attempt(t);
                if self.ranks[t].done {
                    return Ok(());
                }
                let n = &mut self.ranks[t];
                let out = n.det.poll(true, n.own.stolen());
                let done = n.det.terminated();
                self.send(out);
                if done {
                    self.finish(t);
                } else {
                    self.step(t)?;
                }
            }
            Ev::Msg { to, m } => {
                let r = to as usize;
                let out = self.ranks[r].det.on_message(m);
                self.send(out);
                let n = &self.ranks[r];
                if n.det.terminated() && !n.done {
                    // A rank mid-steal learns it here too; its attempt's end is dropped.
                    self.finish(r);
                } else if n.waiting {
                    self.idle(r);
                }
            }
        }
        Ok(())
    }

    /// One iteration from the ranks' current seeds.
    fn iteration(&mut self, it: u32) -> Result<IterationReport, String> {
        self.seen.iter_mut().for_each(|s| *s = false);
        for n in &mut self.ranks {
            n.det.restart(it, n.own.stolen());
            n.rep = RankReport::default();
            n.ran.clear();
            n.waiting = false;
            n.done = false;
        }
        self.now = 0;
        for r in 0..self.ranks.len() {
            self.at(0, Ev::Step(r as u32));
        }
        while let Some(Reverse(item)) = self.queue.pop() {
            self.now = item.at;
            self.events += 1;
            self.handle(item.ev)?;
        }
        if let Some(r) = self.ranks.iter().position(|n| !n.done) {
            return Err(format!(
                "iteration {it}: rank {r} never learned of termination"
            ));
        }
        if let Some(id) = self.seen.iter().position(|s| !s) {
            return Err(format!("iteration {it}: task {id} never ran"));
        }
        for n in &mut self.ranks {
            n.rep.idle_ns = n.rep.wall_ns - (n.rep.task_ns + n.rep.steal_ns).min(n.rep.wall_ns);
        }
        Ok(IterationReport {
            iteration: it,
            ranks: self.ranks.iter().map(|n| n.rep.clone()).collect(),
        })
    }

    /// Reseeds every rank for the next iteration as `TaskCollection::restore` does.
    fn restore(&mut self, seed: &[Vec<u64>]) {
        let ran: Vec<Vec<(u64, u64)>> = self
            .ranks
            .iter_mut()
            .map(|n| std::mem::take(&mut n.ran))
            .collect();
        let next: Vec<Vec<u64>> = match self.cfg.strategy {
            Strategy::NoBalance | Strategy::Steal => seed.to_vec(),
            Strategy::StealRetentive => ran
                .into_iter()
                .map(|ts| ts.into_iter().map(|(t, _)| t).collect())
                .collect(),
            Strategy::PlbCentralized | Strategy::PlbHierarchical => {
                collection::placement(self.cfg.strategy, self.cfg.params, &ran)
            }
            Strategy::PlbCentralizedSteal | Strategy::PlbHierarchicalSteal => {
                // A stolen task goes back to its placement; its time, measured where it ran,
                // is its load (the collection's `rebalance`).
                let mut ns = vec![0u64; self.seen.len()];
                for &(t, d) in ran.iter().flatten() {
                    ns[t as usize] = d;
                }
                let placed = self.placed.take().unwrap_or_else(|| seed.to_vec());
                let loads: Vec<Vec<(u64, u64)>> = placed
                    .iter()
                    .map(|ts| ts.iter().map(|&t| (t, ns[t as usize])).collect())
                    .collect();
                let next = collection::placement(self.cfg.strategy, self.cfg.params, &loads);
                self.placed = Some(next.clone());
                next
            }
        };
        for (n, ts) in self.ranks.iter_mut().zip(next) {
            for t in ts {
                n.add(Entry {
                    task: t,
                    key: t,
                    root: true,
                    spawned: false,
                });
            }
        }
    }
}

/// Simulates `cfg`: rank `r` is seeded with the `r`-th contiguous range of task ids, as a real
/// run of the synthetic kernels is; then `cfg.iterations` iterations, reseeded between them as
/// the strategy says. An error is one line: a broken invariant (see the module doc).
pub fn simulate(cfg: Config) -> Result<Outcome, String> {
    let p = cfg.ranks.max(1);
    let n = cfg.kernel.tasks();
    // Room for about twice a rank's share; a deque that fills spills into the rank's overflow
    // list, as a real collection's does.
    let capacity = ((2 * n).div_ceil(p as u64) as usize).clamp(16, 1 << 16);
    let arity = cfg.params.arity.max(2);
    let ranks = (0..p)
        .map(|r| Rank {
            // SAFETY: a new, empty memory, owned by this rank alone; thieves only steal through
            // `deque::steal`, and one thread runs the whole simulation.
            own: unsafe { Owner::new(Local::new(capacity)) },
            overflow: Vec::new(),
            det: Detector::new(r, p, arity, 0),
            rng: 0x9e37_79b9_7f4a_7c15 ^ (r as u64 + 1).wrapping_mul(0xbf58_476d),
            rep: RankReport::default(),
            ran: Vec::new(),
            incoming: Vec::new(),
            attempt: None,
            waiting: false,
            done: false,
        })
        .collect();
    let mut sim = Sim {
        cfg: Config { ranks: p, ..cfg },
        ranks,
        queue: BinaryHeap::new(),
        seq: 0,
        now: 0,
        events: 0,
        seen: vec![false; n as usize],
        steals: cfg.strategy.steals() && p > 1,
        record: true,
        placed: None,
    };
    let seed: Vec<Vec<u64>> = (0..p as u64)
        .map(|r| (r * n / p as u64..(r + 1) * n / p as u64).collect())
        .collect();
    for (rank, ts) in sim.ranks.iter_mut().zip(&seed) {
        for &t in ts {
            rank.add(Entry {
                task: t,
                key: t,
                root: true,
                spawned: false,
            });
        }
    }
    let mut iterations = Vec::new();
    for it in 0..cfg.iterations.max(1) {
        sim.record = it == 0 || it + 1 == cfg.iterations.max(1);
        iterations.push(sim.iteration(it as u32)?);
        sim.restore(&seed);
    }
    let work: u64 = (0..n).map(|id| cfg.model.cost(cfg.kernel.cost(id))).sum();
    Ok(Outcome {
        kernel: cfg.kernel.name().into(),
        ranks: p,
        strategy: cfg.strategy.name().into(),
        model: cfg.model,
        iterations,
        ideal_ns: work as f64 / p as f64,
        events: sim.events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kernel: Synthetic, ranks: usize, strategy: Strategy, iterations: usize) -> Config {
        Config {
            kernel,
            ranks,
            strategy,
            iterations,
            model: Model::default(),
            params: Params::default(),
        }
    }

    /// Every strategy at several rank counts: every task runs once per iteration (the
    /// simulator checks that itself and errs otherwise), every rank terminates, the reports
    /// add up, and ranks that do not steal never try.
    #[test]
    fn every_strategy_runs_every_task_once_and_terminates() {
        for k in [Synthetic::Hf(40), Synthetic::Tce(30)] {
            for strategy in Strategy::ALL {
                for ranks in [1, 2, 5, 64] {
                    let o = simulate(cfg(k, ranks, strategy, 3)).unwrap();
                    assert_eq!(o.iterations.len(), 3);
                    for rep in &o.iterations {
                        assert_eq!(rep.tasks(), k.tasks(), "{k:?} {strategy:?} {ranks}");
                        let e = rep.efficiency();
                        assert!(e > 0.0 && e <= 1.0, "{e}");
                        if !strategy.steals() || ranks == 1 {
                            assert!(rep.ranks.iter().all(|r| r.steals_attempted == 0));
                        }
                        for r in &rep.ranks {
                            assert!(r.task_ns + r.steal_ns <= r.wall_ns);
                        }
                    }
                }
            }
        }
    }

    /// The same configuration gives the same outcome: the simulator is deterministic.
    #[test]
    fn a_simulation_is_deterministic() {
        let c = cfg(Synthetic::Hf(30), 17, Strategy::StealRetentive, 3);
        let (a, b) = (simulate(c).unwrap(), simulate(c).unwrap());
        assert_eq!(a.iterations, b.iterations);
        assert_eq!(a.events, b.events);
    }

    /// Stealing balances what the contiguous seeding skews: with stealing, the slowest rank's
    /// time is within a few tasks of the ideal, without it far above; retention keeps the
    /// tasks each rank ran, so the next iteration needs fewer successful steals.
    #[test]
    fn stealing_balances_and_retention_keeps_the_balance() {
        let k = Synthetic::Hf(60);
        let none = simulate(cfg(k, 16, Strategy::NoBalance, 1)).unwrap();
        let steal = simulate(cfg(k, 16, Strategy::Steal, 1)).unwrap();
        assert!(steal.iterations[0].efficiency() > none.iterations[0].efficiency());
        let ret = simulate(cfg(k, 16, Strategy::StealRetentive, 4)).unwrap();
        let won =
            |rep: &IterationReport| -> u64 { rep.ranks.iter().map(|r| r.steals_successful).sum() };
        assert!(won(&ret.iterations[3]) < won(&ret.iterations[0]));
        // The balancers place the measured tasks: after one iteration the slowest rank's task
        // time is within 10% of the average.
        for s in [Strategy::PlbCentralized, Strategy::PlbHierarchical] {
            let o = simulate(cfg(k, 16, s, 2)).unwrap();
            let rep = &o.iterations[1];
            let max = rep.ranks.iter().map(|r| r.task_ns).max().unwrap() as f64;
            let avg = rep.ranks.iter().map(|r| r.task_ns).sum::<u64>() as f64 / 16.0;
            assert!(max / avg < 1.1, "{s:?}: {}", max / avg);
        }
    }

    /// Calibration recovers the costs that made the samples, and keeps `task_ns` when one
    /// kernel's samples cannot tell it from `unit_ns`.
    #[test]
    fn calibration_fits_the_samples() {
        let truth = |tasks: u64, units: u64| Sample {
            tasks,
            units,
            task_ns: tasks * 50 + units * 300,
            attempts: 10,
            steal_ns: 4_000,
        };
        let m = Model::default()
            .calibrate(&[truth(100, 1000), truth(400, 1000)])
            .unwrap();
        assert!((m.unit_ns - 300.0).abs() < 1e-6 && (m.task_ns - 50.0).abs() < 1e-6);
        assert!((m.attempt_ns - 400.0).abs() < 1e-9);
        let one = Model::default().calibrate(&[truth(100, 1000)]).unwrap();
        assert_eq!(one.task_ns, Model::default().task_ns);
        assert!(Model::default().calibrate(&[]).is_none());
    }

    /// The timelines of the first and last iteration are kept, and add up to each rank's
    /// task and steal time.
    #[test]
    fn timelines_match_the_reported_times() {
        let o = simulate(cfg(Synthetic::Tce(24), 8, Strategy::Steal, 3)).unwrap();
        for (i, rep) in o.iterations.iter().enumerate() {
            for r in &rep.ranks {
                if i == 1 {
                    assert!(r.timeline.is_empty());
                } else {
                    assert_eq!(r.timeline.total(State::Task), r.task_ns);
                    assert!(r.timeline.total(State::Steal) <= r.steal_ns);
                }
            }
        }
    }
}
