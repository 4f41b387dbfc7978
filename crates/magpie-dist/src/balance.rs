//! Persistence-based load balancers (Lifflander's thesis, §5.3).
//!
//! An iterative program whose tasks cost about as much in one iteration as in the last can be
//! balanced from measurements: each rank times the tasks it ran, and before the next iteration
//! the tasks are placed again so that every rank's measured load is near the average. Both
//! balancers here move only what overloaded ranks give up, shortest tasks first, so a balanced
//! program keeps its placement (and its data locality).
//!
//! # Centralized (Alg. 1)
//!
//! 1. The average load `avg` over the ranks (a sum reduction).
//! 2. Each rank whose load is above `C × avg` gives up its shortest tasks, one at a time, until
//!    its load is at most `C × avg`.
//! 3. One rank (the root) gathers the given-up tasks and every rank's remaining load, and
//!    assigns the longest task to the least-loaded rank, adding the task's load to that rank
//!    before the next choice, until no task is left (the thesis's pseudocode never adds the
//!    load, so every task would go to the same rank).
//!
//! # Hierarchical (Alg. 2)
//!
//! The ranks form a tree of arity `k` in heap order: rank `r`'s children are `k·r + 1 ..= k·r
//! + k`, so every rank is a node and its subtree holds itself and its descendants.
//!
//! 1. As in the centralized scheme, each rank above `C × avg` sets its shortest tasks aside.
//! 2. **Up the tree** (children before parents): a rank gathers its own set-aside tasks and
//!    what its children's subtrees could not place. It gives them, longest first, to the member
//!    with the least *average* load among itself and its child subtrees (a subtree's load
//!    divided by its size), as long as that member's average is below `D × avg`; a task given
//!    to a child subtree is marked for it. What is left goes up with the subtree's total load
//!    and size.
//! 3. **At the root**, the tasks left over (every member is at `D × avg` or above) are given
//!    out the same way with no threshold, so no task is left unplaced (the pseudocode stops at
//!    the root's children and never says what happens to these).
//! 4. **Down the tree**: the tasks marked for a subtree go to its root rank, which gives them
//!    out the same way among itself and its child subtrees, with no threshold (they were
//!    assigned to this subtree as a whole), until every task sits on one rank.
//!
//! Tasks move from donor to receiver directly in a real run; here the functions compute the
//! placement, which both the in-process tools and the MPI run use.
//!
//! ```
//! use magpie_dist::balance::{centralized, hierarchical, imbalance, Measured, Params};
//!
//! // Three ranks; rank 0 measured all the heavy tasks last iteration.
//! let task = |id, load| Measured { id, load };
//! let ranks = vec![
//!     vec![task(0, 5.0), task(1, 5.0), task(2, 5.0), task(3, 1.0)],
//!     vec![task(4, 1.0), task(5, 1.0)],
//!     vec![task(6, 1.0)],
//! ];
//! assert!(imbalance(&ranks) > 1.0);
//! for placed in [centralized(&ranks, Params::default()), hierarchical(&ranks, Params::default())] {
//!     // Every task is placed exactly once, and the heaviest rank is now near the average.
//!     let mut ids: Vec<u64> = placed.iter().flatten().map(|t| t.id).collect();
//!     ids.sort();
//!     assert_eq!(ids, (0..7).collect::<Vec<u64>>());
//!     assert!(imbalance(&placed) < 0.3, "{placed:?}");
//! }
//! ```

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// A task as the balancer sees it: its name and its measured load (any unit, e.g. seconds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The task's identity (what the program reseeds from).
    pub id: u64,
    /// Its measured cost.
    pub load: f64,
}

/// The balancers' constants: `c` (a rank gives up tasks while above `c × avg`), `d` (a node
/// gives tasks to members below `d × avg`), `arity` (of the hierarchical tree), as the thesis
/// has them (1.003, 1.003 and 3); and two that make a real run's balancing settle on noisy
/// measurements (see `collection`'s "Measurements" and [`worth_moving`]): `min_gain` and
/// `memory`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// The overload threshold.
    pub c: f64,
    /// The underload threshold of the hierarchical scheme.
    pub d: f64,
    /// The hierarchical tree's arity (at least 2).
    pub arity: usize,
    /// A new placement is taken only if it lowers the heaviest rank's load by more than this
    /// share of it (0.05: 5%); otherwise every task stays where it is.
    pub min_gain: f64,
    /// How much of a task's previous load estimate its next one keeps (0: the last
    /// measurement alone; 0.75, the default: a quarter of the new measurement, so an estimate
    /// averages about the last four and one outlier moves it a quarter of the way).
    pub memory: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            c: 1.003,
            d: 1.003,
            arity: 3,
            min_gain: 0.05,
            memory: 0.75,
        }
    }
}

/// The total load of `tasks`.
pub fn load(tasks: &[Measured]) -> f64 {
    tasks.iter().map(|t| t.load).sum()
}

/// The heaviest rank's load.
pub fn heaviest(ranks: &[Vec<Measured>]) -> f64 {
    ranks.iter().map(|r| load(r)).fold(0.0, f64::max)
}

/// Whether moving from placement `now` to `next` is worth it: it lowers the heaviest rank's
/// load by more than `min_gain` of it. Measurements are noisy (a task measured twice rarely
/// costs the same), and the thesis's thresholds (`c`, `d`: 0.3%) move tasks for differences
/// that noise alone makes; a move also costs its tasks' data and caches. So a placement whose
/// expected gain is within the noise keeps every task where it is.
pub fn worth_moving(now: &[Vec<Measured>], next: &[Vec<Measured>], min_gain: f64) -> bool {
    heaviest(next) < (1.0 - min_gain) * heaviest(now)
}

/// `max / avg − 1` over the ranks' loads: 0 is perfect balance.
pub fn imbalance(ranks: &[Vec<Measured>]) -> f64 {
    if ranks.is_empty() {
        return 0.0;
    }
    let avg = ranks.iter().map(|r| load(r)).sum::<f64>() / ranks.len() as f64;
    let max = heaviest(ranks);
    if avg > 0.0 {
        max / avg - 1.0
    } else {
        0.0
    }
}

fn by_load(a: &Measured, b: &Measured) -> Ordering {
    a.load.total_cmp(&b.load).then(a.id.cmp(&b.id))
}

/// Step 1 of both schemes: rank `tasks` gives up its shortest tasks while its load is above
/// `limit`; returns what it gave up. Its remaining tasks keep their order.
fn shed(tasks: &mut Vec<Measured>, limit: f64) -> Vec<Measured> {
    let mut total = load(tasks);
    if total <= limit {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by(|&i, &j| by_load(&tasks[i], &tasks[j]));
    let mut gone = vec![false; tasks.len()];
    for i in order {
        if total <= limit {
            break;
        }
        gone[i] = true;
        total -= tasks[i].load;
    }
    let mut shed = Vec::new();
    let mut kept = Vec::new();
    for (t, g) in tasks.drain(..).zip(gone) {
        if g {
            shed.push(t)
        } else {
            kept.push(t)
        }
    }
    *tasks = kept;
    shed
}

/// Gives `pool` out, longest first, each to the member with the least `load / size` (ties to
/// the lowest index), adding its load there; with `limit`, only while that least average is
/// below it. Returns, per task given, (member, task), and the tasks left. A min-heap of the
/// members (as the thesis's Alg. 1 keeps) makes it O(tasks · log members).
fn greedy(
    mut pool: Vec<Measured>,
    members: &mut [(f64, usize)],
    limit: Option<f64>,
) -> (Vec<(usize, Measured)>, Vec<Measured>) {
    use std::collections::BinaryHeap;
    /// A member in the heap: its average load and index, least first.
    #[derive(PartialEq)]
    struct Least(f64, usize);
    impl Eq for Least {}
    impl PartialOrd for Least {
        fn partial_cmp(&self, o: &Least) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Least {
        fn cmp(&self, o: &Least) -> Ordering {
            // Reversed: BinaryHeap pops the greatest, and we want the least average (then the
            // lowest index).
            o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
        }
    }
    let avg = |m: &(f64, usize)| m.0 / m.1.max(1) as f64;
    let mut heap: BinaryHeap<Least> = members
        .iter()
        .enumerate()
        .map(|(i, m)| Least(avg(m), i))
        .collect();
    pool.sort_by(|a, b| by_load(b, a));
    let mut given = Vec::new();
    let mut left = Vec::new();
    for t in pool {
        match heap.peek() {
            Some(Least(a, _)) if limit.is_none_or(|l| *a < l) => {
                let Least(_, i) = heap.pop().expect("peeked");
                members[i].0 += t.load;
                heap.push(Least(avg(&members[i]), i));
                given.push((i, t));
            }
            _ => left.push(t),
        }
    }
    (given, left)
}

/// The centralized balancer (Alg. 1, see the module doc): the new placement of `ranks`' tasks.
/// Every task ends up on exactly one rank.
pub fn centralized(ranks: &[Vec<Measured>], p: Params) -> Vec<Vec<Measured>> {
    let n = ranks.len();
    if n == 0 {
        return Vec::new();
    }
    let avg = ranks.iter().map(|r| load(r)).sum::<f64>() / n as f64;
    let mut out: Vec<Vec<Measured>> = ranks.to_vec();
    let mut pool = Vec::new();
    for r in &mut out {
        pool.extend(shed(r, p.c * avg));
    }
    let mut members: Vec<(f64, usize)> = out.iter().map(|r| (load(r), 1)).collect();
    let (given, left) = greedy(pool, &mut members, None);
    debug_assert!(left.is_empty());
    for (i, t) in given {
        out[i].push(t);
    }
    out
}

/// The hierarchical balancer (Alg. 2 with its missing steps, see the module doc): the new
/// placement of `ranks`' tasks. Every task ends up on exactly one rank.
pub fn hierarchical(ranks: &[Vec<Measured>], p: Params) -> Vec<Vec<Measured>> {
    let n = ranks.len();
    if n == 0 {
        return Vec::new();
    }
    let k = p.arity.max(2);
    let avg = ranks.iter().map(|r| load(r)).sum::<f64>() / n as f64;
    let mut out: Vec<Vec<Measured>> = ranks.to_vec();
    let children = |r: usize| (k * r + 1..=k * r + k).filter(move |&c| c < n);
    // Per rank: the tasks it set aside (step 1).
    let mut pool: Vec<Vec<Measured>> = out.iter_mut().map(|r| shed(r, p.c * avg)).collect();
    // Per rank: its subtree's load and size after the up-sweep, and the tasks marked for each
    // subtree (given to it as a whole, to be placed on the way down).
    let mut sub_load = vec![0.0; n];
    let mut sub_size = vec![0usize; n];
    let mut marked: Vec<Vec<Measured>> = vec![Vec::new(); n];
    // Up the tree: children have higher indices than their parent, so descending order visits
    // every child before its parent.
    for r in (0..n).rev() {
        let kids: Vec<usize> = children(r).collect();
        let mut tasks = std::mem::take(&mut pool[r]);
        for &c in &kids {
            tasks.append(&mut pool[c]);
        }
        // Members: the rank itself, then its child subtrees.
        let mut members: Vec<(f64, usize)> = std::iter::once((load(&out[r]), 1))
            .chain(kids.iter().map(|&c| (sub_load[c], sub_size[c])))
            .collect();
        let limit = if r == 0 { None } else { Some(p.d * avg) };
        let (given, left) = greedy(tasks, &mut members, limit);
        for (m, t) in given {
            if m == 0 {
                out[r].push(t);
            } else {
                marked[kids[m - 1]].push(t);
            }
        }
        pool[r] = left;
        sub_load[r] = members.iter().map(|m| m.0).sum();
        sub_size[r] = 1 + kids.iter().map(|&c| sub_size[c]).sum::<usize>();
    }
    debug_assert!(pool[0].is_empty());
    // Down the tree: parents before children.
    for r in 0..n {
        let tasks = std::mem::take(&mut marked[r]);
        if tasks.is_empty() {
            continue;
        }
        let kids: Vec<usize> = children(r).collect();
        let mut members: Vec<(f64, usize)> = std::iter::once((load(&out[r]), 1))
            .chain(
                kids.iter()
                    .map(|&c| (subtree_load(&out, &marked, c, k), sub_size[c])),
            )
            .collect();
        let (given, _) = greedy(tasks, &mut members, None);
        for (m, t) in given {
            if m == 0 {
                out[r].push(t);
            } else {
                marked[kids[m - 1]].push(t);
            }
        }
    }
    out
}

/// The load now held in the subtree of `r` (placed, or marked for a subtree below).
fn subtree_load(out: &[Vec<Measured>], marked: &[Vec<Measured>], r: usize, k: usize) -> f64 {
    let mut total = load(&out[r]) + load(&marked[r]);
    for c in (k * r + 1..=k * r + k).filter(|&c| c < out.len()) {
        total += subtree_load(out, marked, c, k);
    }
    total
}

/// The thesis's skewed distributions (§5.6.2): `loads` sorted by duration, longest first, dealt
/// round-robin to `ranks` ranks, every `n`-th rank (ranks 0, n, 2n, ...) taking `m` tasks per
/// round instead of one. Task ids are the indices into `loads`.
pub fn skewed(loads: &[f64], ranks: usize, n: usize, m: usize) -> Vec<Vec<Measured>> {
    let ranks = ranks.max(1);
    let (n, m) = (n.max(1), m.max(1));
    let mut order: Vec<usize> = (0..loads.len()).collect();
    order.sort_by(|&a, &b| loads[b].total_cmp(&loads[a]).then(a.cmp(&b)));
    let mut out = vec![Vec::new(); ranks];
    let mut next = order.into_iter();
    'deal: loop {
        for (r, rank) in out.iter_mut().enumerate() {
            let take = if r % n == 0 { m } else { 1 };
            for _ in 0..take {
                match next.next() {
                    Some(i) => rank.push(Measured {
                        id: i as u64,
                        load: loads[i],
                    }),
                    None => break 'deal,
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::Rng;

    fn instance(rng: &mut Rng, ranks: usize, tasks: usize, skew: bool) -> Vec<Vec<Measured>> {
        let mut v = vec![Vec::new(); ranks];
        for id in 0..tasks as u64 {
            let load = 1.0 + (rng.next() % 100) as f64;
            // Skewed: most tasks start on rank 0.
            let r = if skew && !rng.next().is_multiple_of(4) {
                0
            } else {
                (rng.next() % ranks as u64) as usize
            };
            v[r].push(Measured { id, load });
        }
        v
    }

    fn ids(p: &[Vec<Measured>]) -> Vec<u64> {
        let mut v: Vec<u64> = p.iter().flatten().map(|t| t.id).collect();
        v.sort();
        v
    }

    /// The best makespan by brute force (every assignment of every task).
    fn optimal(tasks: &[Measured], ranks: usize) -> f64 {
        fn go(tasks: &[Measured], loads: &mut Vec<f64>, best: &mut f64) {
            let Some((t, rest)) = tasks.split_first() else {
                *best = best.min(loads.iter().cloned().fold(0.0, f64::max));
                return;
            };
            for r in 0..loads.len() {
                loads[r] += t.load;
                if loads[r] < *best {
                    go(rest, loads, best);
                }
                loads[r] -= t.load;
            }
        }
        let mut best = f64::INFINITY;
        go(tasks, &mut vec![0.0; ranks], &mut best);
        best
    }

    #[test]
    fn every_task_is_placed_once_and_no_rank_gets_worse_than_the_worst() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for ranks in [1, 2, 3, 4, 7, 13, 40] {
            for skew in [false, true] {
                let inst = instance(&mut rng, ranks, 10 * ranks + 3, skew);
                let before = heaviest(&inst);
                for (name, out) in [
                    ("centralized", centralized(&inst, Params::default())),
                    ("hierarchical", hierarchical(&inst, Params::default())),
                    (
                        "hierarchical, arity 2",
                        hierarchical(
                            &inst,
                            Params {
                                arity: 2,
                                ..Params::default()
                            },
                        ),
                    ),
                ] {
                    assert_eq!(out.len(), ranks, "{name}");
                    assert_eq!(ids(&out), ids(&inst), "{name}: tasks lost or doubled");
                    assert!(heaviest(&out) <= before + 1e-9, "{name}: worse than before");
                    if skew && ranks > 1 {
                        assert!(
                            imbalance(&out) < imbalance(&inst),
                            "{name}, {ranks} ranks: {} vs {}",
                            imbalance(&out),
                            imbalance(&inst)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn against_the_optimal_placement_on_small_instances() {
        let mut rng = Rng(42);
        for trial in 0..60 {
            let ranks = 2 + trial % 3;
            let tasks = 5 + trial % 4;
            let mut inst = vec![Vec::new(); ranks];
            // Everything starts on rank 0: the centralized balancer is then the longest
            // processing time rule, within 4/3 of the optimum.
            for id in 0..tasks as u64 {
                inst[0].push(Measured {
                    id,
                    load: 1.0 + (rng.next() % 50) as f64,
                });
            }
            let opt = optimal(&inst[0], ranks);
            let c = centralized(
                &inst,
                Params {
                    c: 1.0,
                    ..Params::default()
                },
            );
            let bound = (4.0 / 3.0 - 1.0 / (3.0 * ranks as f64)) * opt;
            assert!(
                heaviest(&c) <= bound + 1e-9,
                "trial {trial}: {} > {bound}",
                heaviest(&c)
            );
            assert!(heaviest(&c) >= opt - 1e-9);
            let h = hierarchical(
                &inst,
                Params {
                    c: 1.0,
                    d: 1.0,
                    arity: 3,
                    ..Params::default()
                },
            );
            assert!(heaviest(&h) >= opt - 1e-9);
            assert!(heaviest(&h) < heaviest(&inst), "trial {trial}");
        }
    }

    #[test]
    fn balanced_ranks_keep_their_tasks() {
        let inst: Vec<Vec<Measured>> = (0..6)
            .map(|r| {
                (0..4)
                    .map(|i| Measured {
                        id: r * 10 + i,
                        load: 2.5,
                    })
                    .collect()
            })
            .collect();
        assert_eq!(centralized(&inst, Params::default()), inst);
        assert_eq!(hierarchical(&inst, Params::default()), inst);
    }

    #[test]
    fn a_placed_task_adds_to_its_rank() {
        // Two equal tasks given up by rank 0 must not both go to the same idle rank when two
        // ranks are idle (the thesis's Alg. 1 never adds a placed task's load).
        let inst = vec![
            vec![
                Measured { id: 0, load: 10.0 },
                Measured { id: 1, load: 10.0 },
                Measured { id: 2, load: 10.0 },
            ],
            vec![],
            vec![],
        ];
        let c = centralized(&inst, Params::default());
        assert!(c.iter().all(|r| r.len() == 1), "{c:?}");
        let h = hierarchical(&inst, Params::default());
        assert!(h.iter().all(|r| r.len() == 1), "{h:?}");
    }

    #[test]
    fn skewed_deals_every_nth_rank_m_tasks() {
        let loads: Vec<f64> = (0..20).map(|i| i as f64).collect();
        let d = skewed(&loads, 4, 2, 3);
        // Rounds of 3 + 1 + 3 + 1 = 8 tasks, longest first.
        assert_eq!(
            d[0].iter().map(|t| t.id).collect::<Vec<_>>(),
            vec![19, 18, 17, 11, 10, 9, 3, 2, 1]
        );
        assert_eq!(
            d[1].iter().map(|t| t.id).collect::<Vec<_>>(),
            vec![16, 8, 0]
        );
        assert_eq!(d.iter().map(|r| r.len()).sum::<usize>(), 20);
        // n = m = 1 is plain round-robin.
        let d = skewed(&loads, 4, 1, 1);
        assert!(d.iter().all(|r| r.len() == 5));
        for p in [
            centralized(&d, Params::default()),
            hierarchical(&d, Params::default()),
        ] {
            assert_eq!(ids(&p), (0..20).collect::<Vec<u64>>());
        }
    }

    #[test]
    fn empty_and_single_rank_inputs() {
        assert!(centralized(&[], Params::default()).is_empty());
        assert!(hierarchical(&[], Params::default()).is_empty());
        let one = vec![vec![Measured { id: 7, load: 1.0 }]];
        assert_eq!(centralized(&one, Params::default()), one);
        assert_eq!(hierarchical(&one, Params::default()), one);
        assert_eq!(imbalance(&[vec![], vec![]]), 0.0);
    }
}
