//! Termination detection by waves over a spanning tree (Lifflander's thesis, §5.4, after
//! Francez), for a task collection whose ranks steal from each other.
//!
//! A task collection's `process` ends when no rank has a task and none is in flight. No rank
//! can see that alone, so the ranks vote in *waves* over a tree (heap order of arity `k`: rank
//! `r`'s parent is `(r − 1) / k`):
//!
//! 1. The root, once it has nothing to run, starts wave `w`: a `Wave` message goes down the
//!    tree, each rank passing it on to its children.
//! 2. A rank *votes* in wave `w` once it has the wave, every child's vote, and nothing to run
//!    (it is between steal attempts, holding no task and no steal in progress). Its vote is
//!    `yes` if every child voted yes and nobody stole from it since its previous vote (the
//!    count of tasks claimed from its deque has not moved), and goes to its parent.
//! 3. The root, with every child's vote and nothing to run, decides: all yes, and the
//!    collection has terminated (a `Done` message goes down the tree); otherwise it starts wave
//!    `w + 1`.
//!
//! Why a yes wave is right. A rank votes only while it holds no task, and a rank with no task
//! has nothing to steal. Suppose some rank held a task when the root decided. Each rank was
//! empty when it voted, so some rank got work after voting, and the first to do so stole it
//! from a rank that had work then, which had therefore not voted yet (every voter was empty, and
//! this is the first regain). That victim voted later, with a steal since its previous vote:
//! no. So a wave whose votes are all yes saw no work anywhere. Claims are what counts, not
//! finished copies: a thief's claim changes the victim's count at once, and the thief is not
//! idle (cannot vote) until its copy has landed.
//!
//! Messages carry the iteration and the wave, so a late message of an earlier wave or an
//! earlier iteration's `process` is dropped (the thesis leaves this implicit). [`Detector`] is
//! the state machine alone: the transport (MPI messages, or the in-process simulation) carries
//! its messages and calls [`Detector::on_message`] and [`Detector::poll`].

use serde::{Deserialize, Serialize};

/// A termination message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// Wave `wave` of iteration `iteration` starts (down the tree).
    Wave {
        /// The collection's iteration (`process` call).
        iteration: u32,
        /// The wave's number within it.
        wave: u32,
    },
    /// A subtree's vote in a wave (up the tree).
    Vote {
        /// The iteration.
        iteration: u32,
        /// The wave.
        wave: u32,
        /// Whether the subtree saw no steal since its previous vote.
        yes: bool,
    },
    /// The collection has terminated (down the tree).
    Done {
        /// The iteration.
        iteration: u32,
    },
}

/// One rank's termination detector (see the module doc).
#[derive(Clone, Debug)]
pub struct Detector {
    rank: usize,
    ranks: usize,
    arity: usize,
    iteration: u32,
    /// The wave this rank is in (the root: the last it started).
    wave: u32,
    /// Whether this rank has the current wave and has not voted in it yet.
    pending: bool,
    /// Children's votes received in the current wave, and whether all were yes.
    votes: usize,
    all_yes: bool,
    /// The steal count at this rank's previous vote.
    stolen_at_vote: u32,
    done: bool,
    /// Waves the root started (for reports).
    waves: u32,
}

impl Detector {
    /// The detector of `rank` among `ranks` in a tree of arity `arity` (at least 2), for
    /// iteration 0, with `stolen` the deque's current count of claimed tasks.
    pub fn new(rank: usize, ranks: usize, arity: usize, stolen: u32) -> Detector {
        Detector {
            rank,
            ranks: ranks.max(1),
            arity: arity.max(2),
            iteration: 0,
            wave: 0,
            pending: false,
            votes: 0,
            all_yes: true,
            stolen_at_vote: stolen,
            done: false,
            waves: 0,
        }
    }

    /// Starts iteration `iteration` (a new `process`): no wave yet, not done.
    pub fn restart(&mut self, iteration: u32, stolen: u32) {
        *self = Detector {
            iteration,
            ..Detector::new(self.rank, self.ranks, self.arity, stolen)
        };
    }

    /// Whether the collection has terminated (this rank knows it).
    pub fn terminated(&self) -> bool {
        self.done
    }

    /// The waves the root started in this iteration (0 elsewhere).
    pub fn waves(&self) -> u32 {
        self.waves
    }

    fn parent(&self) -> Option<usize> {
        (self.rank > 0).then(|| (self.rank - 1) / self.arity)
    }

    fn children(&self) -> impl Iterator<Item = usize> {
        let (first, n) = (self.arity * self.rank + 1, self.ranks);
        (first..first + self.arity).filter(move |&c| c < n)
    }

    fn start_wave(&mut self, out: &mut Vec<(usize, Message)>) {
        self.wave += 1;
        self.waves += 1;
        self.pending = true;
        self.votes = 0;
        self.all_yes = true;
        let m = Message::Wave {
            iteration: self.iteration,
            wave: self.wave,
        };
        out.extend(self.children().map(|c| (c, m)));
    }

    /// A message arrived; returns the messages to send, `(destination rank, message)`.
    pub fn on_message(&mut self, m: Message) -> Vec<(usize, Message)> {
        let mut out = Vec::new();
        match m {
            Message::Wave { iteration, wave } if iteration == self.iteration && !self.done => {
                self.wave = wave;
                self.pending = true;
                self.votes = 0;
                self.all_yes = true;
                out.extend(self.children().map(|c| (c, m)));
            }
            Message::Vote {
                iteration,
                wave,
                yes,
            } if iteration == self.iteration && wave == self.wave && self.pending => {
                self.votes += 1;
                self.all_yes &= yes;
            }
            Message::Done { iteration } if iteration == self.iteration && !self.done => {
                self.done = true;
                out.extend(self.children().map(|c| (c, m)));
            }
            // Stale: an earlier wave or iteration.
            _ => {}
        }
        out
    }

    /// Called when this rank has nothing to run (`idle`: no task, no steal in progress) or
    /// periodically; `stolen` is its deque's current count of claimed tasks. Votes, decides or
    /// starts a wave when it is time; returns the messages to send.
    pub fn poll(&mut self, idle: bool, stolen: u32) -> Vec<(usize, Message)> {
        let mut out = Vec::new();
        if self.done || !idle {
            return out;
        }
        let root = self.rank == 0;
        if root && !self.pending {
            self.start_wave(&mut out);
        }
        if !self.pending || self.votes < self.children().count() {
            return out;
        }
        let yes = self.all_yes && stolen == self.stolen_at_vote;
        self.stolen_at_vote = stolen;
        self.pending = false;
        match self.parent() {
            Some(p) => out.push((
                p,
                Message::Vote {
                    iteration: self.iteration,
                    wave: self.wave,
                    yes,
                },
            )),
            None if yes => {
                self.done = true;
                let m = Message::Done {
                    iteration: self.iteration,
                };
                out.extend(self.children().map(|c| (c, m)));
            }
            None => self.start_wave(&mut out),
        }
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::deque::{steal, Local, Memory, Owner, Stolen};
    use std::collections::VecDeque;

    use crate::test_rng::Rng;

    /// A task: its depth; it spawns two children while the depth is above 0.
    type Task = u32;

    /// One random run of a task collection in simulation: ranks run tasks (each spawns two
    /// children down to depth 0), steal in two steps (claim, then the copy lands later),
    /// exchange termination messages with random delays, and poll their detectors. Checks that
    /// no rank learns of termination while any task exists anywhere, that every rank learns of
    /// it eventually, and that every task ran exactly once (by counting).
    fn simulate(seed: u64, ranks: usize, arity: usize, iterations: u32) {
        let mut rng = Rng(seed | 1);
        let mut owners: Vec<Owner<Task, Local<Task>>> = (0..ranks)
            // SAFETY: a new, empty memory for each owner.
            .map(|_| unsafe { Owner::new(Local::new(64)) })
            .collect();
        let mut det: Vec<Detector> = (0..ranks)
            .map(|r| Detector::new(r, ranks, arity, 0))
            .collect();
        for iteration in 0..iterations {
            // Seed: some ranks get a tree; the count of tasks the trees hold.
            let mut expected = 0u64;
            for (r, o) in owners.iter_mut().enumerate() {
                det[r].restart(iteration, o.stolen());
                if rng.below(3) == 0 || r == 0 {
                    let depth = 3 + rng.below(4) as u32;
                    o.push(depth).unwrap();
                    expected += (1u64 << (depth + 1)) - 1;
                }
            }
            let mut ran = 0u64;
            // Per rank: a steal whose copy has not landed (the tasks, and when it lands).
            let mut landing: Vec<Option<Vec<Task>>> = vec![None; ranks];
            let mut extra: Vec<Vec<Task>> = vec![Vec::new(); ranks];
            let mut wire: VecDeque<(usize, Message)> = VecDeque::new();
            let mut steps = 0u64;
            while !det.iter().all(|d| d.terminated()) {
                steps += 1;
                assert!(steps < 2_000_000, "seed {seed}: no termination");
                let r = rng.below(ranks);
                match rng.below(4) {
                    // Run a task (tasks a full ring handed back first).
                    0 | 1 => {
                        if let Some(t) = extra[r].pop().or_else(|| owners[r].pop()) {
                            ran += 1;
                            if t > 0 {
                                for _ in 0..2 {
                                    if let Err(crate::deque::Full(c)) = owners[r].push(t - 1) {
                                        extra[r].push(c);
                                    }
                                }
                            }
                        } else if let Some(ts) = landing[r].take() {
                            // The copy lands.
                            for t in ts {
                                if let Err(crate::deque::Full(c)) = owners[r].push(t) {
                                    extra[r].push(c);
                                }
                            }
                        } else if ranks > 1 {
                            // Idle: try a steal (the claim; the copy lands later).
                            let v = (r + 1 + rng.below(ranks - 1)) % ranks;
                            if let Stolen::Tasks(ts) = steal(owners[v].memory(), 1) {
                                landing[r] = Some(ts);
                            }
                        }
                    }
                    // Deliver a message (not always the oldest: delays vary).
                    2 => {
                        if !wire.is_empty() {
                            let i = rng.below(wire.len().min(3));
                            let (to, m) = wire.remove(i).unwrap();
                            for out in det[to].on_message(m) {
                                wire.push_back(out);
                            }
                        }
                    }
                    // Poll the detector.
                    _ => {
                        let idle = owners[r].local_len() == 0
                            && extra[r].is_empty()
                            && landing[r].is_none()
                            && owners[r].memory().word() >> 32
                                == owners[r].memory().word() & 0xffff_ffff;
                        let stolen = owners[r].stolen();
                        for out in det[r].poll(idle, stolen) {
                            wire.push_back(out);
                        }
                    }
                }
                if let Some(d) = det.iter().position(|d| d.terminated()) {
                    // Nobody may know of termination while a task exists.
                    let left: usize = (0..ranks)
                        .map(|k| {
                            let mut n = extra[k].len();
                            n += landing[k].as_ref().map_or(0, |l| l.len());
                            let w = owners[k].memory().word();
                            let (split, stail) = crate::deque::unpack(w);
                            n + owners[k].local_len() as usize + split.wrapping_sub(stail) as usize
                        })
                        .sum();
                    assert_eq!(left, 0, "seed {seed}: rank {d} saw termination early");
                }
            }
            assert_eq!(ran, expected, "seed {seed}, iteration {iteration}");
        }
    }

    #[test]
    fn no_rank_learns_of_termination_while_work_exists() {
        for seed in 1..=150u64 {
            let ranks = 1 + (seed as usize % 9);
            let arity = 2 + seed as usize % 3;
            simulate(seed.wrapping_mul(0x2545_f491_4f6c_dd1d), ranks, arity, 3);
        }
    }

    #[test]
    fn stale_messages_are_dropped() {
        let mut d = Detector::new(1, 3, 2, 0);
        d.restart(2, 0);
        // A wave of iteration 1 arrives late: ignored.
        assert!(d
            .on_message(Message::Wave {
                iteration: 1,
                wave: 1
            })
            .is_empty());
        assert!(d.poll(true, 0).is_empty());
        // The current one is answered, once idle.
        d.on_message(Message::Wave {
            iteration: 2,
            wave: 4,
        });
        assert!(d.poll(false, 0).is_empty());
        assert_eq!(
            d.poll(true, 0),
            vec![(
                0,
                Message::Vote {
                    iteration: 2,
                    wave: 4,
                    yes: true
                }
            )]
        );
        // A steal since the last vote makes the next vote no.
        d.on_message(Message::Wave {
            iteration: 2,
            wave: 5,
        });
        assert_eq!(
            d.poll(true, 3),
            vec![(
                0,
                Message::Vote {
                    iteration: 2,
                    wave: 5,
                    yes: false
                }
            )]
        );
        assert!(!d.terminated());
        d.on_message(Message::Done { iteration: 1 });
        assert!(!d.terminated());
        d.on_message(Message::Done { iteration: 2 });
        assert!(d.terminated());
    }

    #[test]
    fn one_rank_terminates_at_its_first_idle_poll() {
        let mut d = Detector::new(0, 1, 3, 0);
        assert!(d.poll(false, 0).is_empty());
        assert!(!d.terminated());
        assert!(d.poll(true, 0).is_empty());
        assert!(d.terminated());
        assert_eq!(d.waves(), 1);
    }
}
