//! A task's stack never changes OS thread behind safe code (home-affine resumption).
//!
//! Every task below holds values that are not `Send` on its own stack (an `Rc<ThreadId>` made
//! where it runs) and the address of a thread-local, across every kind of sync point magpie has:
//! the end of a `join`, a `join` nested in a half, a scope spawn (under every policy, including
//! a forced work-first one, the spawn that used to publish the parent's running stack), and the
//! end of a scope. After each point it compares them with the thread it runs on now. Leaves spin
//! for a few microseconds so that thieves keep stealing. Every configuration asserts that steals
//! did happen, and the test as a whole that suspended tasks were resumed, so it exercises the
//! paths where a stack could move. Any move is counted and fails the test.
//!
//! `cargo test -p magpie --test home -- --nocapture` prints what each configuration covered.
//! A configuration that has not finished after [`HANG_AFTER`] ends the test process with a
//! message naming it, so a deadlock fails the run instead of hanging it.

#[path = "support/temp_dir.rs"]
mod temp_dir;

use magpie::{join, scope, Policy, Pool, Scope};
use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;
use temp_dir::TempDir;

thread_local! {
    static SLOT: Cell<u8> = const { Cell::new(0) };
}

/// The current thread's id, looked up afresh (never inlined, so no address is cached across a
/// sync point by the compiler).
#[inline(never)]
fn thread_id() -> ThreadId {
    black_box(std::thread::current().id())
}

/// The address of this thread's `SLOT`: differs from thread to thread.
#[inline(never)]
fn slot_addr() -> usize {
    black_box(SLOT.with(|s| s as *const Cell<u8> as usize))
}

#[derive(Default)]
struct Probe {
    points: AtomicU64,
    moved: AtomicU64,
}

/// What a task holds across a sync point: an `Rc` (not `Send`) and a thread-local's address.
struct Held {
    thread: Rc<ThreadId>,
    slot: usize,
}

impl Held {
    fn here() -> Held {
        Held {
            thread: Rc::new(thread_id()),
            slot: slot_addr(),
        }
    }

    /// One sync point passed: still on the thread where `self` was made?
    fn check(&self, p: &Probe) {
        p.points.fetch_add(1, Relaxed);
        if *self.thread != thread_id() || self.slot != slot_addr() {
            p.moved.fetch_add(1, Relaxed);
        }
    }
}

fn leaf(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x);
    1
}

/// A tree of joins, nested joins, scope spawns (some forced work-first, some help-first) and
/// scope ends, `depth` levels deep; returns how many leaves it ran.
fn node(p: &Probe, depth: u32, seed: u64) -> u64 {
    let held = Held::here();
    if depth == 0 {
        return leaf(seed);
    }
    let (a, b) = join(
        || node(p, depth - 1, seed * 3 + 1),
        || {
            let inner = Held::here();
            let (x, y) = join(|| node(p, depth - 1, seed * 5 + 2), || leaf(seed));
            inner.check(p);
            x + y
        },
    );
    held.check(p);
    let spawned = AtomicU64::new(0);
    scope(|s| {
        let body = Held::here();
        for (i, policy) in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive]
            .into_iter()
            .enumerate()
        {
            let spawned = &spawned;
            s.spawn_with(policy, move |s: &Scope<'_>| {
                let task = Held::here();
                if depth > 1 {
                    spawned.fetch_add(node(p, depth - 2, seed * 7 + i as u64), Relaxed);
                }
                s.spawn_with(Policy::WorkFirst, move |_| {
                    spawned.fetch_add(leaf(seed + i as u64), Relaxed);
                });
                task.check(p);
            });
            body.check(p);
        }
    });
    held.check(p);
    a + b + spawned.into_inner()
}

/// Leaves of `node(_, depth, _)`, computed serially.
fn expected(depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let join_part = expected(depth - 1) * 2 + 1;
    let spawned = 3 * (if depth > 1 { expected(depth - 2) } else { 0 } + 1);
    join_part + spawned
}

/// Depth of each tree: about 44,000 leaves and 100,000 sync points.
const DEPTH: u32 = 9;

struct Covered {
    points: u64,
    steals: u64,
    resumptions: u64,
}

/// How long one configuration may take before it counts as hung: far above what any takes,
/// even under ThreadSanitizer on two cores. A hang detector, not a timing assertion.
const HANG_AFTER: Duration = Duration::from_secs(300);

/// While alive, watches one configuration: if it is not dropped within [`HANG_AFTER`], says
/// which configuration hung and ends the process with a failure.
struct Deadline {
    done: Option<Sender<()>>,
    watcher: Option<JoinHandle<()>>,
}

impl Deadline {
    fn new(what: &str) -> Deadline {
        let (done, rx) = channel::<()>();
        let what = what.to_string();
        let watcher = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(HANG_AFTER) {
                eprintln!(
                    "{what}: not finished after {} s: the pool deadlocked",
                    HANG_AFTER.as_secs()
                );
                std::process::exit(101);
            }
        });
        Deadline {
            done: Some(done),
            watcher: Some(watcher),
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        // Dropping the sender ends the watcher's wait at once.
        drop(self.done.take());
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

/// Runs the tree in `pool` a few times; asserts the answer, that no stack moved, and that
/// thieves stole.
fn run(what: &str, pool: &Pool) -> Covered {
    let _deadline = Deadline::new(what);
    let p = Probe::default();
    let before = pool.stats();
    for round in 0..3 {
        let leaves = pool.install(|| node(&p, DEPTH, round));
        assert_eq!(leaves, expected(DEPTH), "{what}: wrong answer");
        // Under ThreadSanitizer (about 20 times slower) one round with a steal is enough: the
        // sanitizer checks every access of the run it watches; the repeats are for the plain run.
        let st = pool.stats() - before;
        if cfg!(magpie_tsan) && st.steals_child + st.steals_continuation > 0 {
            break;
        }
    }
    let st = pool.stats() - before;
    let c = Covered {
        points: p.points.load(Relaxed),
        steals: st.steals_child + st.steals_continuation,
        resumptions: st.resumptions,
    };
    assert_eq!(
        p.moved.load(Relaxed),
        0,
        "{what}: a task's stack changed thread at {} of {} sync points",
        p.moved.load(Relaxed),
        c.points
    );
    assert!(
        c.steals > 0,
        "{what}: no steal happened, nothing was tested"
    );
    println!(
        "{what}: {} sync points, {} steals, {} resumptions, 0 moved",
        c.points, c.steals, c.resumptions
    );
    c
}

fn total(cs: impl IntoIterator<Item = Covered>) {
    let (mut points, mut steals, mut res) = (0, 0, 0);
    for c in cs {
        points += c.points;
        steals += c.steals;
        res += c.resumptions;
    }
    println!("total: {points} sync points, {steals} steals, {res} resumptions, 0 moved");
    assert!(
        res > 0,
        "no suspended task was resumed: the resumption path was not tested"
    );
}

#[test]
fn stacks_stay_on_their_thread_under_every_policy_and_width() {
    let mut covered = Vec::new();
    for workers in [2, 3, 5, 8] {
        for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            let pool = Pool::builder()
                .workers(workers)
                .policy(policy)
                .build()
                .unwrap();
            covered.push(run(&format!("{policy} at {workers} workers"), &pool));
        }
    }
    total(covered);
}

#[test]
fn stacks_stay_on_their_thread_with_places_squads_tracing_and_one_item_steals() {
    let topo = magpie::Topology::parse("2x2:1MiB").unwrap();
    let mut covered = Vec::new();
    for policy in [Policy::WorkFirst, Policy::Adaptive] {
        let base = || {
            Pool::builder()
                .workers(4)
                .policy(policy)
                .topology(topo.clone())
        };
        let pools = [
            ("places", base().places(true).cross_place_steal(true)),
            ("squads", base().squads(true)),
            ("tracing", base().trace(true)),
            ("one-item steals", base().steal_half(false)),
            ("overheads", base().measure_overheads(true)),
        ];
        for (what, b) in pools {
            let pool = b.build().unwrap();
            covered.push(run(&format!("{policy}, {what}"), &pool));
        }
    }
    total(covered);
}

#[test]
fn stacks_stay_on_their_thread_under_every_sharing_mode() {
    let mut covered = Vec::new();
    for mode in ["dws", "abp", "ep", "off"] {
        let dir = TempDir::new("home");
        let pool = Pool::builder()
            .workers(3)
            .policy(Policy::WorkFirst)
            .share(mode.parse().unwrap())
            .share_table(dir.table())
            .build()
            .unwrap();
        covered.push(run(&format!("share {mode}"), &pool));
    }
    total(covered);
}

#[test]
fn migration_when_allowed_still_gives_right_answers() {
    // The closures here hold nothing that is not `Send` across a sync point: the promise
    // `allow_migration` asks for. Counted, not asserted: whether a stack moves depends on timing.
    fn fib(n: u64) -> u64 {
        if n < 2 {
            return n;
        }
        let (a, b) = join(|| fib(n - 1), || fib(n - 2));
        a + b
    }
    for workers in [2, 3, 5] {
        for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            // SAFETY: no task below holds a value that is not `Send`, or relies on its thread's
            // identity, across a spawn or sync point.
            let pool = unsafe {
                Pool::builder()
                    .workers(workers)
                    .policy(policy)
                    .allow_migration(true)
            }
            .build()
            .unwrap();
            assert!(pool.allows_migration());
            let done = AtomicU64::new(0);
            let r = pool.install(|| {
                scope(|s| {
                    for i in 0..64u64 {
                        let done = &done;
                        s.spawn(move |s| {
                            s.spawn(move |_| {
                                done.fetch_add(fib(12 + i % 5), Relaxed);
                            });
                            done.fetch_add(1, Relaxed);
                        });
                    }
                });
                fib(24)
            });
            assert_eq!(r, 46368, "{policy} at {workers}");
            let want: u64 = (0..64u64)
                .map(|i| [144u64, 233, 377, 610, 987][(i % 5) as usize] + 1)
                .sum();
            assert_eq!(done.into_inner(), want, "{policy} at {workers}");
        }
    }
}
