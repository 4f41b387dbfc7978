//! Donation: a join whose halves go where a schedule or the user says.
//!
//! A donated half is a closure that has not started. It goes to its worker as an ordinary task
//! item: into that worker's held queue when a schedule region is active (through the region's
//! `ScheduleRegion::donate`, `ext/schedule/region.rs`), else into its inbox (`Registry::deliver`);
//! either way the worker is woken. The donor runs the other half here, then waits at the sync point on the donated half's latch exactly as for a half a thief
//! took: its fiber suspends, and the worker that finishes the half hands the fiber back to the
//! donor's own worker. A donated half is never popped back, so a donor whose donee is slow
//! waits; that is what the strict constraints ask for, and what `Relaxed` avoids by stealing.

use crate::fiber::FiberLocal;
use crate::job::{JobRef, StackJob, Work};
use crate::join::{in_place_at, join_lazily_published};
use crate::position::{self, Region, RegionCursor};
use crate::worker::{current, WorkerThread};
use std::panic;

/// A join in a region task whose fiber has a cursor: number the halves, wrap each in its
/// position, and run, publish or donate them as the region and its template say.
pub(crate) fn join_positioned<A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    cur: &RegionCursor,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    join_positioned_to(wt, fl, cur, None, a, b)
}

/// As [`join_positioned`], with `b` designated to a worker (`designated`: worker) whatever the
/// template says.
fn join_positioned_to<A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    cur: &RegionCursor,
    designated: Option<usize>,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let k = cur.take(2);
    let region = cur.region();
    let rules = region.rules();
    let (na, nb) = (rules.child(cur.node(), k), rules.child(cur.node(), k + 1));
    let da = rules.donee(na, wt.core.index);
    let db = match designated {
        Some(w) if w != wt.core.index => Some((w, rules.designated_rank(nb, w))),
        // Designated to this worker: an ordinary child, which a thief may have taken when it
        // was recorded, so the template says where it goes.
        _ => rules.donee(nb, wt.core.index),
    };
    let (sa, sb) = (cur.join_child(k, na), cur.join_child(k + 1, nb));
    let wa = move || position::run(sa, a);
    let wb = move || position::run(sb, b);
    match (da, db) {
        (None, None) if region.strict() && fl.has_reserve() => in_place_at(wt, fl, wa, wb),
        (None, None) => join_lazily_published(wt, fl, wa, wb),
        (da, db) => donating(wt, fl, Some(region), da, db, wa, wb),
    }
}

/// Runs the halves not donated here, donates the others (`Some((worker, rank))`), and waits for
/// them.
fn donating<A, B, RA, RB>(
    wt: &WorkerThread,
    fl: &FiberLocal,
    region: Option<&Region>,
    da: Option<(usize, u32)>,
    db: Option<(usize, u32)>,
    a: A,
    b: B,
) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let depth = fl.depth.get();
    let (ta, tb) = wt.trace_tags(depth);
    let ja = StackJob::tagged(a, ta);
    let jb = StackJob::tagged(b, tb);
    let send = |job: JobRef, (w, rank): (usize, u32)| {
        let it = Work::Task {
            job,
            continuation: false,
        }
        .encode();
        match region {
            Some(r) => r.rules().donate(&*wt.core.registry, w, rank, it),
            None => wt.core.registry.deliver(w, it),
        }
    };
    wt.count_spawn(false);
    let floor = Some(wt.core.deque.bottom());
    ja.publish_under(fl.lineage.get());
    jb.publish_under(fl.lineage.get());
    if let Some(to) = da {
        send(ja.as_job_ref(), to);
    }
    if let Some(to) = db {
        send(jb.as_job_ref(), to);
    }
    fl.depth.set(depth + 1);
    let ra = da.is_none().then(|| ja.run_inline());
    let rb = db.is_none().then(|| jb.run_inline());
    fl.depth.set(depth);
    // The donated halves run elsewhere; wait for them as for stolen ones (the fiber suspends and
    // its own worker resumes it).
    let ra = ra.unwrap_or_else(|| {
        crate::fiber::suspend_until_stolen(&ja.latch, ja.tag.get(), floor);
        ja.take_result()
    });
    let rb = rb.unwrap_or_else(|| {
        crate::fiber::suspend_until_stolen(&jb.latch, jb.tag.get(), floor);
        jb.take_result()
    });
    match (ra, rb) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
    }
}

/// Runs `a` here and `b` on worker `worker` (modulo the pool's size), and returns both results,
/// as [`join`](crate::join) does: the user-specified schedule of the thesis's §6.3.2
/// (`designateAfterNextSpawn`). `b` is donated even if the pool's policy would have kept it, and
/// even inside a region following a template that says otherwise; recording such a program
/// (`schedule::record`) gives its template. When `worker` is the caller's own, or the pool
/// checks for races ([`Builder::check_races`](crate::Builder::check_races)), this is `join`.
/// Outside any pool, runs on the global pool.
///
/// The caller waits for `b` at the end as for a stolen half: its fiber suspends, and its own
/// worker resumes it, so the code after `join_designated` runs on the thread that ran the code
/// before it.
pub fn join_designated<A, B, RA, RB>(worker: usize, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let Some(wt) = current() else {
        return crate::pool::outside(|| join_designated(worker, a, b));
    };
    let w = worker % wt.core.registry.config.workers;
    let fl = wt.fiber_local();
    if let Some(cur) = fl.cursor() {
        return cur.at(fl.depth.get(), |cur| {
            join_positioned_to(wt, fl, cur, Some(w), a, b)
        });
    }
    // A pool that checks for races runs it as the join it is (`race`): where a half runs
    // changes nothing of what the checker finds, and a join is what its tree models.
    if w == wt.core.index || wt.core.checks {
        return crate::join(a, b);
    }
    // No region: the half goes to the worker's inbox, where items have no rank.
    donating(wt, fl, None, None, Some((w, 0)), a, b)
}
