//! Shadow memory: per declared location, the step that last wrote it and two steps that bound
//! the reads since (Raman et al.'s SPD3 scheme, as Lifflander's thesis §4.5.1 summarises it).
//!
//! A location is the address of one declared element (`race::read`/`race::write` declare every
//! element of a slice). For each, the cell keeps `w`, the last writer, and `r1`, `r2`, two
//! readers such that every read since `w` lies, in the tree, below the lowest common ancestor
//! of `r1` and `r2` (or is `r1` itself when `r2` is empty). Then:
//!
//! * a **write** by step `s` races with an earlier access if `w`, `r1` or `r2` may happen in
//!   parallel with `s` (any read parallel with `s` is below `lca(r1, r2)`, and so is one of
//!   them, or is ordered with `s` as they are); `s` becomes `w`;
//! * a **read** by `s` races if `w` may happen in parallel with `s`. Then, if `s` is ordered
//!   after both readers, it replaces them (`r1 = s`, no `r2`): every earlier read happened
//!   before it. If it may run beside both, the readers' subtree grows only if `s` lies outside
//!   it: when `lca(r1, s)` or `lca(r2, s)` is above `lca(r1, r2)`, `s` takes `r1`'s place, so
//!   the pair spans the wider subtree. If it runs beside one of them only, the pair already
//!   bounds it. With one reader, `s` becomes the second if it may run beside it, else the
//!   first.
//!
//! Each cell is updated under its shard's lock, so the check and the update of one location are
//! one atomic step; cells of different shards are independent. The relation between steps is
//! asked of a [`Relation`], which counts what its searches cost.

use super::dpst::{relate, Node, Related, Search};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How an access used its location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read it.
    Read,
    /// Wrote it.
    Write,
}

/// Two accesses to one location by steps that may happen in parallel, one of them a write.
#[derive(Clone, Debug)]
pub struct Conflict {
    /// The location's address.
    pub addr: usize,
    /// The earlier access recorded in the cell: its step and kind.
    pub earlier: (Arc<Node>, Access),
    /// The access that found the conflict.
    pub later: (Arc<Node>, Access),
}

/// One location's cell.
#[derive(Default)]
struct Cell {
    w: Option<Arc<Node>>,
    r1: Option<Arc<Node>>,
    r2: Option<Arc<Node>>,
}

/// Asks whether two steps may happen in parallel, with the chosen search, counting the
/// searches and the edges they follow; with `compare`, runs the other search too, checks that
/// both give one answer, and counts its edges apart (the thesis's Fig. 4.9 from one run).
pub struct Relation {
    search: Search,
    compare: bool,
    /// Searches made.
    pub queries: AtomicU64,
    /// Edges the plain search followed (when it ran).
    pub plain: AtomicU64,
    /// Edges the phase search followed (when it ran).
    pub phases: AtomicU64,
}

impl Relation {
    /// A relation that searches with `search`, and with both if `compare`.
    pub fn new(search: Search, compare: bool) -> Relation {
        Relation {
            search,
            compare,
            queries: AtomicU64::new(0),
            plain: AtomicU64::new(0),
            phases: AtomicU64::new(0),
        }
    }

    fn run(&self, a: &Node, b: &Node, search: Search) -> Related {
        let r = relate(a, b, search);
        let counter = match search {
            Search::Plain => &self.plain,
            Search::Phases => &self.phases,
        };
        // Relaxed: counters, read after the checked run has ended.
        counter.fetch_add(r.traversals, Ordering::Relaxed);
        r
    }

    /// The relation of `a` and `b`.
    pub fn relate(&self, a: &Node, b: &Node) -> Related {
        // Relaxed: a counter, as above.
        self.queries.fetch_add(1, Ordering::Relaxed);
        let r = self.run(a, b, self.search);
        if self.compare {
            let other = match self.search {
                Search::Plain => Search::Phases,
                Search::Phases => Search::Plain,
            };
            let o = self.run(a, b, other);
            assert_eq!(
                (r.lca, r.parallel),
                (o.lca, o.parallel),
                "magpie::race: the plain and the phase search disagree on steps {} and {}",
                a.id,
                b.id
            );
        }
        r
    }

    /// Whether `a` and `b` may happen in parallel.
    pub fn parallel(&self, a: &Node, b: &Node) -> bool {
        self.relate(a, b).parallel
    }
}

/// The shadow memory of one checked run.
pub struct Shadow {
    shards: Box<[Mutex<HashMap<usize, Cell>>]>,
}

impl Default for Shadow {
    fn default() -> Shadow {
        Shadow::new()
    }
}

const SHARDS: usize = 64;

impl Shadow {
    /// An empty shadow memory.
    pub fn new() -> Shadow {
        Shadow {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, addr: usize) -> &Mutex<HashMap<usize, Cell>> {
        // Neighbouring elements go to different shards (multiplicative hashing of the address).
        let h = (addr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
        &self.shards[h as usize % SHARDS]
    }

    /// Locations with a cell.
    pub fn locations(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    /// Step `s` accesses `addr`: checks the cell and updates it (module doc). Returns the
    /// first conflict found, if any.
    pub fn access(
        &self,
        addr: usize,
        s: &Arc<Node>,
        access: Access,
        rel: &Relation,
    ) -> Option<Conflict> {
        // A poisoned shard only means a check panicked (the searches' self-check); the cells
        // are whole, as each update is a few assignments after the checks.
        let mut shard = self.shard(addr).lock().unwrap_or_else(|e| e.into_inner());
        let cell = shard.entry(addr).or_default();
        let conflict = |earlier: &Arc<Node>, kind: Access| Conflict {
            addr,
            earlier: (earlier.clone(), kind),
            later: (s.clone(), access),
        };
        let mut found = None;
        if let Some(w) = &cell.w {
            if !Arc::ptr_eq(w, s) && rel.parallel(w, s) {
                found = Some(conflict(w, Access::Write));
            }
        }
        match access {
            Access::Write => {
                for r in [&cell.r1, &cell.r2].into_iter().flatten() {
                    if found.is_none() && !Arc::ptr_eq(r, s) && rel.parallel(r, s) {
                        found = Some(conflict(r, Access::Read));
                    }
                }
                cell.w = Some(s.clone());
            }
            Access::Read => match (&cell.r1, &cell.r2) {
                (None, _) => cell.r1 = Some(s.clone()),
                (Some(r1), None) => {
                    if Arc::ptr_eq(r1, s) {
                    } else if rel.parallel(r1, s) {
                        cell.r2 = Some(s.clone());
                    } else {
                        cell.r1 = Some(s.clone());
                    }
                }
                (Some(r1), Some(r2)) => {
                    if Arc::ptr_eq(r1, s) || Arc::ptr_eq(r2, s) {
                        // Already a bound.
                    } else {
                        let p1 = rel.relate(r1, s);
                        let p2 = rel.relate(r2, s);
                        if !p1.parallel && !p2.parallel {
                            cell.r1 = Some(s.clone());
                            cell.r2 = None;
                        } else if p1.parallel && p2.parallel {
                            let l12 = rel.relate(r1, r2).lca;
                            if above(l12, p1.lca, r1) || above(l12, p2.lca, r2) {
                                cell.r1 = Some(s.clone());
                            }
                        }
                    }
                }
            },
        }
        found
    }
}

/// Whether the node with id `candidate`, an ancestor of `from` (an `lca` with `from`), lies
/// strictly above the node with id `lca12`, also an ancestor of `from`: walks up from `from`
/// and sees which it meets first.
fn above(lca12: u64, candidate: u64, from: &Node) -> bool {
    if lca12 == candidate {
        return false;
    }
    let mut at = from;
    loop {
        if at.id == lca12 {
            return true; // met lca12 first: the candidate is above it
        }
        if at.id == candidate {
            return false;
        }
        match at.parent.as_deref() {
            Some(p) => at = p,
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::dpst::Kind;
    use super::*;

    fn rel() -> Relation {
        Relation::new(Search::Phases, true)
    }

    #[test]
    fn parallel_writes_conflict_and_ordered_ones_do_not() {
        let root = Node::root(0);
        let s0 = root.child(Kind::Step, &root.phase);
        let f = root.child(Kind::Finish, &root.phase);
        let a = f.child(Kind::Async, &f.phase);
        let sa = a.child(Kind::Step, &a.phase);
        let b = f.child(Kind::Finish, &f.phase);
        let sb = b.child(Kind::Step, &b.phase);
        let s1 = root.child(Kind::Step, &root.phase);
        let (m, r) = (Shadow::new(), rel());
        assert!(m.access(8, &s0, Access::Write, &r).is_none());
        assert!(m.access(8, &sa, Access::Write, &r).is_none());
        let c = m.access(8, &sb, Access::Write, &r).expect("sa and sb race");
        assert_eq!((c.earlier.0.id, c.later.0.id), (sa.id, sb.id));
        assert!(m.access(8, &s1, Access::Write, &r).is_none());
        // Parallel reads are fine; a write beside them is not.
        assert!(m.access(16, &sa, Access::Read, &r).is_none());
        assert!(m.access(16, &sb, Access::Read, &r).is_none());
        assert!(m.access(16, &s1, Access::Write, &r).is_none());
        assert!(m.access(24, &sa, Access::Read, &r).is_none());
        let c = m
            .access(24, &sb, Access::Write, &r)
            .expect("a read and a write race");
        assert_eq!(c.earlier.1, Access::Read);
        assert_eq!(m.locations(), 3);
    }

    #[test]
    fn the_two_readers_keep_a_read_that_a_later_write_races_with() {
        // finish { async { r_a }; async { r_b }; async { r_c } } where r_c is read last, and a
        // write in a fourth async must still see a reader it races with.
        let root = Node::root(0);
        let f = root.child(Kind::Finish, &root.phase);
        let steps: Vec<_> = (0..4)
            .map(|_| {
                let a = f.child(Kind::Async, &f.phase);
                a.child(Kind::Step, &a.phase)
            })
            .collect();
        let (m, r) = (Shadow::new(), rel());
        for s in &steps[..3] {
            assert!(m.access(0, s, Access::Read, &r).is_none());
        }
        assert!(m.access(0, &steps[3], Access::Write, &r).is_some());
        assert!(r.queries.load(Ordering::Relaxed) > 0);
    }
}
