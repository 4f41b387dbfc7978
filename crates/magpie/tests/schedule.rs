//! Schedules as data: recording, exact replay under `Ordered`, the other constraints,
//! designation, templates that do not fit the program, pruning and the file format.

use magpie::schedule::{self, Constraint, Cut, Schedule, ScheduleError};
use magpie::{Policy, Pool};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A random async-finish program: joins, scopes, and several joins in one task.
#[derive(Debug)]
enum Prog {
    Leaf(usize),
    Join(Box<Prog>, Box<Prog>),
    Scope(Vec<Prog>),
    Seq(Vec<Prog>),
    /// A join whose second half is designated to the next worker.
    Away(Box<Prog>, Box<Prog>),
}

#[allow(dead_code)]
#[path = "support/program.rs"]
mod program;
#[path = "support/watchdog.rs"]
mod watchdog;
use program::Rng;
use watchdog::watchdog;

fn gen(rng: &mut Rng, depth: u32, leaves: &mut usize) -> Prog {
    if depth == 0 || rng.below(8) == 0 {
        *leaves += 1;
        return Prog::Leaf(*leaves - 1);
    }
    match rng.below(5) {
        0 => Prog::Scope(
            (0..1 + rng.below(4))
                .map(|_| gen(rng, depth - 1, leaves))
                .collect(),
        ),
        1 => Prog::Seq((0..2).map(|_| gen(rng, depth - 1, leaves)).collect()),
        _ => Prog::Join(
            Box::new(gen(rng, depth - 1, leaves)),
            Box::new(gen(rng, depth - 1, leaves)),
        ),
    }
}

/// Per leaf: the worker that ran it (+1; 0 = not run) and how often it ran.
struct Log {
    worker: Vec<AtomicUsize>,
    runs: Vec<AtomicU32>,
    /// Busy-wait per leaf, so that thieves find work.
    spin: Duration,
    /// Leaves on this worker sleep (a slowed worker), if set.
    slow: Option<usize>,
}

impl Log {
    fn new(leaves: usize, spin: Duration) -> Log {
        Log {
            worker: (0..leaves).map(|_| AtomicUsize::new(0)).collect(),
            runs: (0..leaves).map(|_| AtomicU32::new(0)).collect(),
            spin,
            slow: None,
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

fn run(p: &Prog, log: &Log) -> u64 {
    match p {
        Prog::Leaf(id) => {
            let w = magpie::worker_index().expect("a leaf outside a worker");
            log.worker[*id].store(w + 1, Ordering::Relaxed);
            log.runs[*id].fetch_add(1, Ordering::Relaxed);
            if log.slow == Some(w) {
                std::thread::sleep(Duration::from_micros(200));
            }
            let t = std::time::Instant::now();
            while t.elapsed() < log.spin {
                std::hint::spin_loop();
            }
            *id as u64 + 1
        }
        Prog::Join(a, b) => {
            let (x, y) = magpie::join(|| run(a, log), || run(b, log));
            x + y
        }
        Prog::Scope(cs) => {
            let sum = AtomicUsize::new(0);
            magpie::scope(|s| {
                for c in cs {
                    let sum = &sum;
                    s.spawn(move |_| {
                        sum.fetch_add(run(c, log) as usize, Ordering::Relaxed);
                    });
                }
            });
            sum.into_inner() as u64
        }
        Prog::Seq(cs) => cs.iter().map(|c| run(c, log)).sum(),
        Prog::Away(a, b) => {
            let w = magpie::worker_index().expect("a join outside a worker");
            // Taken modulo the pool's size.
            let (x, y) = magpie::join_designated(w + 1, || run(a, log), || run(b, log));
            x + y
        }
    }
}

/// A leaf→worker map (workers + 1, 0 for none) as seen from a run whose root ran on worker `b`
/// when the root ran on `a`: the two swap roles, as `follow` swaps them.
fn swap_roots(map: &[usize], a: usize, b: usize) -> Vec<usize> {
    let (a, b) = (a + 1, b + 1);
    map.iter()
        .map(|&w| match w {
            _ if w == a => b,
            _ if w == b => a,
            _ => w,
        })
        .collect()
}

/// Whether follows under `Ordered` must (almost always) need no stall rule. A worker's
/// continuations resume when their stolen halves finish, so a follow can reach a stall the
/// template does not hold, and the stall rule then counts a deviation, as the schedule docs
/// allow: at native speed rarely (about one run of `ordered_replays_a_recorded_schedule_exactly`
/// in 15 met one, among its 60 programs), under ThreadSanitizer's slowdown (`--cfg magpie_tsan`,
/// scripts/tsan.sh) often. The tests check exactly what holds whatever the timing; the share of
/// exact follows is checked at native speed only, with room to spare (at most one in ten may
/// deviate).
const EXACT: bool = !cfg!(magpie_tsan);

/// Fails if more than one follow in ten of `total` deviated (at native speed only, see
/// [`EXACT`]).
fn mostly_exact(what: &str, deviated: usize, total: usize) {
    println!("{what}: {deviated} of {total} follows deviated");
    if EXACT {
        assert!(
            deviated * 10 <= total,
            "{what}: {deviated} of {total} follows deviated"
        );
    }
}

fn expected(leaves: usize) -> u64 {
    (1..=leaves as u64).sum()
}

fn pool(workers: usize, policy: Policy) -> Pool {
    Pool::builder()
        .workers(workers)
        .policy(policy)
        .build()
        .expect("pool")
}

#[test]
fn ordered_replays_a_recorded_schedule_exactly() {
    let mut replayed = 0;
    let mut deviated = 0;
    let mut with_cuts = 0;
    for workers in [1, 2, 3, 4, 8] {
        for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            for seed in 1..=4u64 {
                let mut rng = Rng(seed * 7919 + workers as u64);
                let mut leaves = 0;
                let prog = gen(&mut rng, 9, &mut leaves);
                let p = pool(workers, policy);
                let what = format!("{workers} workers, {policy:?}, seed {seed}");
                watchdog(60, &what, || {
                    let log = Log::new(leaves, Duration::from_micros(20));
                    let (sum, recorded) = p.install(|| schedule::record(|| run(&prog, &log)));
                    assert_eq!(sum, expected(leaves), "{what}");
                    assert!(log.each_ran_once(), "{what}");
                    for (id, w) in log.map().iter().enumerate() {
                        assert_ne!(*w, 0, "{what}: leaf {id} not run");
                    }
                    let first = log.map();
                    let before = p.stats().deviations;
                    let log2 = Log::new(leaves, Duration::from_micros(20));
                    let (sum2, followed) = p.install(|| {
                        schedule::follow(&recorded, Constraint::Ordered, || run(&prog, &log2))
                    });
                    assert_eq!(sum2, expected(leaves), "{what}");
                    assert!(log2.each_ran_once(), "{what}");
                    let deviations = p.stats().deviations - before;
                    if deviations > 0 {
                        // The order changed (see `EXACT`): counted below.
                        deviated += 1;
                    } else if recorded.root_worker() == followed.root_worker() {
                        assert_eq!(log2.map(), first, "{what}: step to worker map");
                        assert_eq!(followed, recorded, "{what}: re-recorded schedule");
                    } else {
                        // The root ran on another worker: the two swap roles.
                        let swapped =
                            swap_roots(&first, recorded.root_worker(), followed.root_worker());
                        assert_eq!(log2.map(), swapped, "{what}: step to worker map");
                        assert_eq!(followed.cuts().len(), recorded.cuts().len(), "{what}");
                    }
                    replayed += 1;
                    if !recorded.cuts().is_empty() {
                        with_cuts += 1;
                    }
                    if workers == 1 {
                        assert!(recorded.cuts().is_empty(), "{what}: one worker, no cut");
                    }
                });
            }
        }
    }
    println!("replayed {replayed} programs, {with_cuts} of them with cuts");
    mostly_exact("ordered replays", deviated, replayed);
    assert!(with_cuts >= 10, "too few programs had steals: {with_cuts}");
}

/// A comb `depth` levels deep: each level joins (or scope-spawns) a leaf with the rest, so the
/// in-place tasks below a recorded task run far deeper than a cursor tracks (`LEVELS`).
fn comb(rng: &mut Rng, depth: u32, leaves: &mut usize) -> Prog {
    *leaves += 1;
    let leaf = Prog::Leaf(*leaves - 1);
    if depth == 0 {
        return leaf;
    }
    let rest = comb(rng, depth - 1, leaves);
    match rng.below(3) {
        // Far below anything a cursor tracks, a designation makes a cut whatever the timing.
        _ if depth == 100 => Prog::Away(Box::new(leaf), Box::new(rest)),
        0 => Prog::Scope(vec![leaf, rest]),
        _ => Prog::Join(Box::new(leaf), Box::new(rest)),
    }
}

#[test]
fn deep_programs_record_and_replay_exactly() {
    let mut deepest = 0;
    for workers in [2, 4] {
        for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            let mut rng = Rng(workers as u64 * 31 + policy as u64);
            let mut leaves = 0;
            let prog = comb(&mut rng, 300, &mut leaves);
            // Forced work-first nests all 300 levels on one fiber's stack. A level whose join
            // is published (which thieves that ask at every level make happen, as on a loaded
            // machine) takes about 13 KB of it in a debug build, several times that under
            // ThreadSanitizer (`scripts/tsan.sh`): the default 2 MiB held only about 147 such
            // levels (a clean StackLimit error, not an overflow), so this test, which is about
            // replay and not about the stack bound, asks for 8 MiB in every build.
            let p = Pool::builder()
                .workers(workers)
                .policy(policy)
                .stack_size(8 << 20)
                .build()
                .expect("pool");
            let what = format!("comb of 300, {workers} workers, {policy:?}");
            watchdog(60, &what, || {
                let log = Log::new(leaves, Duration::from_micros(20));
                let (sum, recorded) = p.install(|| schedule::record(|| run(&prog, &log)));
                assert_eq!(sum, expected(leaves), "{what}");
                assert!(log.each_ran_once(), "{what}");
                assert!(recorded.depth() <= 301, "{what}: a cut below the program");
                deepest = deepest.max(recorded.depth());
                let log2 = Log::new(leaves, Duration::from_micros(20));
                let before = p.stats().deviations;
                let (sum2, followed) = p.install(|| {
                    schedule::follow(&recorded, Constraint::Ordered, || run(&prog, &log2))
                });
                assert_eq!(sum2, expected(leaves), "{what}");
                assert!(log2.each_ran_once(), "{what}");
                // The designation names "the next worker" from wherever its parent runs, so
                // it is the template's only when the root runs where it did (when the roots'
                // workers swap roles, it may name another worker: a counted deviation).
                let deviations = p.stats().deviations - before;
                if recorded.root_worker() == followed.root_worker() {
                    if EXACT {
                        assert_eq!(deviations, 0, "{what}: deviations");
                    }
                    if deviations == 0 {
                        assert_eq!(log2.map(), log.map(), "{what}: step to worker map");
                        assert_eq!(followed, recorded, "{what}: re-recorded schedule");
                    }
                }
            });
        }
    }
    println!("deepest cut: {deepest} levels");
    assert!(
        deepest > 64,
        "no cut deeper than a cursor tracks: {deepest}"
    );
}

/// A chain `left` levels deep, each level reached by another road (the first half of a join,
/// the second half, the second of two scope spawns), the other side of each level a leaf. At
/// the bottom it lets the spinner go and designates a half to the spinner's worker `other`.
fn ladder(level: u32, left: u32, go: &AtomicBool, other: usize) -> u64 {
    if left == 0 {
        go.store(true, Ordering::Release);
        let (x, y) = magpie::join_designated(other, || 1, || 1);
        return x + y;
    }
    let next = || ladder(level + 1, left - 1, go, other);
    match level % 3 {
        0 => {
            let (x, y) = magpie::join(next, || 1);
            x + y
        }
        1 => {
            let (x, y) = magpie::join(|| 1, next);
            x + y
        }
        _ => {
            let sum = AtomicU64::new(0);
            magpie::scope(|s| {
                s.spawn(|_| {
                    sum.fetch_add(1, Ordering::Relaxed);
                });
                s.spawn(|_| {
                    sum.fetch_add(next(), Ordering::Relaxed);
                });
            });
            sum.into_inner()
        }
    }
}

/// The child index of the ladder's next level at `level` (see `ladder`).
fn ladder_index(level: u32) -> u32 {
    [0, 1, 1][level as usize % 3]
}

#[test]
fn tasks_run_in_place_are_named_by_their_place_in_the_spawn_tree() {
    // One worker spins while the other runs the ladder, so nobody steals from the ladder: past
    // the items it keeps for thieves its joins and spawns run in place on the credit, and its
    // positions are those the tracked paths keep (crossing cursors every `LEVELS` levels). The
    // designated half at the bottom is a cut whatever the timing, and its path must name the
    // ladder's levels by their child indices, as the positioned paths would.
    const DEPTH: u32 = 150;
    for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
        let p = pool(2, policy);
        let what = format!("{policy:?}");
        watchdog(60, &what, || {
            let go = AtomicBool::new(false);
            let other = AtomicUsize::new(usize::MAX);
            let (((), sum), recorded) = p.install(|| {
                schedule::record(|| {
                    magpie::join(
                        || {
                            while !go.load(Ordering::Acquire) {
                                std::hint::spin_loop();
                            }
                        },
                        || {
                            let o = 1 - magpie::worker_index().unwrap();
                            other.store(o, Ordering::Relaxed);
                            ladder(0, DEPTH, &go, o)
                        },
                    )
                })
            });
            assert_eq!(sum, DEPTH as u64 + 2, "{what}");
            let mut want = vec![1];
            want.extend((0..DEPTH).map(ladder_index));
            want.push(1);
            let other = other.load(Ordering::Relaxed) as u32;
            assert!(
                recorded
                    .cuts()
                    .iter()
                    .any(|c| c.path == want && c.worker == other),
                "{what}: no cut at the designated half's place; deepest cuts: {:?}",
                recorded
                    .cuts()
                    .iter()
                    .filter(|c| c.path.len() > 8)
                    .map(|c| (&c.path, c.worker))
                    .collect::<Vec<_>>()
            );
        });
    }
}

#[test]
fn unordered_and_relaxed_follow_the_template() {
    let mut rng = Rng(4242);
    let mut leaves = 0;
    let prog = gen(&mut rng, 10, &mut leaves);
    let p = pool(3, Policy::Adaptive);
    watchdog(60, "unordered/relaxed", || {
        let log = Log::new(leaves, Duration::from_micros(20));
        let (_, recorded) = p.install(|| schedule::record(|| run(&prog, &log)));
        for c in [Constraint::Unordered, Constraint::Relaxed] {
            let log2 = Log::new(leaves, Duration::from_micros(20));
            let (sum, followed) =
                p.install(|| schedule::follow(&recorded, c, || run(&prog, &log2)));
            assert_eq!(sum, expected(leaves), "{c:?}");
            assert!(log2.each_ran_once(), "{c:?}");
            if c == Constraint::Unordered && recorded.root_worker() == followed.root_worker() {
                // Same workers, perhaps another order.
                assert_eq!(log2.map(), log.map(), "{c:?}: step to worker map");
                let mut a: Vec<(Vec<u32>, u32)> = recorded
                    .cuts()
                    .iter()
                    .map(|c| (c.path.clone(), c.worker))
                    .collect();
                let mut b: Vec<(Vec<u32>, u32)> = followed
                    .cuts()
                    .iter()
                    .map(|c| (c.path.clone(), c.worker))
                    .collect();
                a.sort();
                b.sort();
                assert_eq!(a, b);
            }
        }
    });
}

#[test]
fn relaxed_completes_with_a_slowed_worker() {
    let mut rng = Rng(99);
    let mut leaves = 0;
    let prog = gen(&mut rng, 9, &mut leaves);
    let p = pool(2, Policy::Adaptive);
    watchdog(60, "relaxed with a slow worker", || {
        let log = Log::new(leaves, Duration::from_micros(10));
        let (_, recorded) = p.install(|| schedule::record(|| run(&prog, &log)));
        for c in [
            Constraint::Relaxed,
            Constraint::Ordered,
            Constraint::Unordered,
        ] {
            let mut log2 = Log::new(leaves, Duration::from_micros(10));
            log2.slow = Some(1);
            let (sum, _) = p.install(|| schedule::follow(&recorded, c, || run(&prog, &log2)));
            assert_eq!(sum, expected(leaves), "{c:?}");
            assert!(log2.each_ran_once(), "{c:?}");
        }
    });
}

#[test]
fn templates_of_another_shape_never_hang() {
    // A deep program's schedule followed by shallower and different programs, and random
    // adversarial schedules: bad positions, workers beyond the pool, both halves donated.
    let mut rng = Rng(7);
    let mut deep_leaves = 0;
    let deep = gen(&mut rng, 12, &mut deep_leaves);
    let p = pool(3, Policy::Adaptive);
    let log = Log::new(deep_leaves, Duration::from_micros(10));
    let (_, deep_schedule) = p.install(|| schedule::record(|| run(&deep, &log)));
    let mut templates = vec![deep_schedule];
    for seed in 0..6u64 {
        let mut r = Rng(seed + 100);
        let cuts: Vec<Cut> = (0..40)
            .map(|i| Cut {
                path: (0..1 + r.below(6)).map(|_| r.below(4) as u32).collect(),
                worker: r.below(7) as u32,
                rank: i,
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        let cuts: Vec<Cut> = cuts
            .into_iter()
            .filter(|c| seen.insert(c.path.clone()))
            .collect();
        templates.push(Schedule::new(7, r.below(7) as usize, cuts).expect("valid schedule"));
    }
    let mut deviations = 0;
    for (t, template) in templates.iter().enumerate() {
        for seed in [3u64, 5, 11] {
            let mut rng = Rng(seed);
            let mut leaves = 0;
            let prog = gen(&mut rng, 7, &mut leaves);
            for c in [
                Constraint::Ordered,
                Constraint::Unordered,
                Constraint::Relaxed,
            ] {
                let what = format!("template {t}, program {seed}, {c:?}");
                watchdog(60, &what, || {
                    let log = Log::new(leaves, Duration::from_micros(5));
                    let before = p.stats().deviations;
                    let (sum, _) = p.install(|| schedule::follow(template, c, || run(&prog, &log)));
                    assert_eq!(sum, expected(leaves), "{what}");
                    assert!(log.each_ran_once(), "{what}: a step ran twice or never");
                    deviations += p.stats().deviations - before;
                });
            }
        }
    }
    println!("deviations counted over the mismatched templates: {deviations}");
}

#[test]
fn designated_children_run_on_their_worker_and_the_joiner_stays_home() {
    let p = pool(4, Policy::Adaptive);
    watchdog(60, "designation", || {
        p.install(|| {
            for round in 0..50usize {
                let me = magpie::worker_index().unwrap();
                let home = std::thread::current().id();
                let target = round % 4;
                let (a, b) = magpie::join_designated(
                    target,
                    || magpie::worker_index().unwrap(),
                    || magpie::worker_index().unwrap(),
                );
                if target != me {
                    // Designated elsewhere: `a` runs here (when `target` is this worker, this
                    // is a plain join, whose halves thieves may take).
                    assert_eq!(a, me);
                    assert_eq!(b, target);
                }
                assert_eq!(std::thread::current().id(), home);
                let ran = AtomicUsize::new(usize::MAX);
                magpie::scope(|s| {
                    s.spawn_designated(target + 1, |_| {
                        ran.store(magpie::worker_index().unwrap(), Ordering::Relaxed)
                    })
                });
                if (target + 1) % 4 != me {
                    assert_eq!(ran.load(Ordering::Relaxed), (target + 1) % 4);
                }
                assert_eq!(std::thread::current().id(), home);
            }
        });
    });
}

/// A user-specified schedule: the leaves of a binary tree of depth 3, leaf `i` designated to
/// worker `first + i` (mod 8), where `first` is the worker running the root. A task runs on
/// worker `first`, so it never designates its own worker.
fn designated_tree(depth: u32, first: usize, log: &Log, id: usize) -> u64 {
    if depth == 0 {
        return run(&Prog::Leaf(id), log);
    }
    let w = (first + (1 << (depth - 1))) % 8;
    let (x, y) = magpie::join_designated(
        w,
        || designated_tree(depth - 1, first, log, 2 * id),
        || designated_tree(depth - 1, w, log, 2 * id + 1),
    );
    x + y
}

#[test]
fn recording_a_designated_program_gives_its_template() {
    let p = pool(8, Policy::Adaptive);
    watchdog(60, "designated template", || {
        let log = Log::new(8, Duration::ZERO);
        let (sum, s) = p.install(|| {
            schedule::record(|| designated_tree(3, magpie::worker_index().unwrap(), &log, 0))
        });
        assert_eq!(sum, (1..=8).sum::<u64>());
        let r = s.root_worker();
        for (i, w) in log.map().iter().enumerate() {
            assert_eq!(*w - 1, (r + i) % 8, "leaf {i}");
        }
        assert!(s.cuts().len() >= 7, "{:?}", s.cuts());
        // Following it with plain joins puts every leaf where the designation did.
        let plain = |depth: u32| {
            fn go(depth: u32, log: &Log, id: usize) -> u64 {
                if depth == 0 {
                    return run(&Prog::Leaf(id), log);
                }
                let (x, y) = magpie::join(
                    || go(depth - 1, log, 2 * id),
                    || go(depth - 1, log, 2 * id + 1),
                );
                x + y
            }
            let log2 = Log::new(8, Duration::ZERO);
            let (sum, f) =
                p.install(|| schedule::follow(&s, Constraint::Ordered, || go(depth, &log2, 0)));
            (sum, log2.map(), f.root_worker())
        };
        let (sum2, map2, root2) = plain(3);
        assert_eq!(sum2, sum);
        // The template's root worker and the follower's swap roles.
        assert_eq!(map2, swap_roots(&log.map(), s.root_worker(), root2));
    });
}

#[test]
fn coarsening_is_allowed_only_below_every_cut_of_a_strict_template() {
    let p = pool(2, Policy::Adaptive);
    let mut rng = Rng(5);
    let mut leaves = 0;
    let prog = gen(&mut rng, 8, &mut leaves);
    let log = Log::new(leaves, Duration::from_micros(20));
    let (_, s) = p.install(|| schedule::record(|| run(&prog, &log)));
    assert!(!magpie::schedule::may_coarsen());
    let none = s.prune(100);
    assert!(none.cuts().is_empty());
    let (inside, _) = p.install(|| {
        assert!(!schedule::may_coarsen());
        schedule::follow(&none, Constraint::Ordered, || {
            magpie::join(schedule::may_coarsen, schedule::may_coarsen)
        })
    });
    assert_eq!(inside, (true, true));
    let (relaxed, _) = p.install(|| {
        schedule::follow(&none, Constraint::Relaxed, || {
            magpie::join(schedule::may_coarsen, schedule::may_coarsen)
        })
    });
    assert_eq!(relaxed, (false, false));
    // With a template that cuts the root's second child, the root may not coarsen; the first
    // child (no cut below it) may.
    let cut = Schedule::new(
        2,
        0,
        vec![Cut {
            path: vec![1],
            worker: 1,
            rank: 0,
        }],
    )
    .unwrap();
    let (r, _) = p.install(|| {
        schedule::follow(&cut, Constraint::Ordered, || {
            let root = schedule::may_coarsen();
            let (a, b) = magpie::join(schedule::may_coarsen, magpie::worker_index);
            (root, a, b.is_some())
        })
    });
    assert_eq!(r, (false, true, true));
}

#[test]
fn prune_keeps_a_level_order_prefix_with_its_ancestors() {
    let cuts: Vec<Cut> = [
        (vec![1], 1, 0),
        (vec![1, 1], 2, 0),
        (vec![0, 1], 3, 0),
        (vec![1, 1, 1], 3, 1),
        (vec![1, 0, 1], 2, 1),
        (vec![0, 1, 0, 1], 1, 1),
    ]
    .into_iter()
    .map(|(path, worker, rank)| Cut { path, worker, rank })
    .collect();
    let s = Schedule::new(4, 0, cuts).unwrap();
    assert_eq!(s.prune(0), s);
    assert!(s.prune(100).cuts().is_empty());
    for percent in 0..=100 {
        let p = s.prune(percent);
        for c in p.cuts() {
            for a in s.cuts() {
                if a.path.len() < c.path.len() && c.path.starts_with(&a.path) {
                    assert!(
                        p.cuts().iter().any(|k| k.path == a.path),
                        "prune({percent}) dropped ancestor {:?} of {:?}",
                        a.path,
                        c.path
                    );
                }
            }
        }
        // Ranks stay dense and in the old order per worker.
        for (w, paths) in p.per_worker().iter().enumerate() {
            let old: Vec<&[u32]> = s.per_worker()[w]
                .iter()
                .copied()
                .filter(|q| paths.contains(q))
                .collect();
            assert_eq!(&old, paths);
        }
    }
    assert_eq!(s.prune(50).cuts().len(), 3);
    let r = s.remap(2);
    assert_eq!(r.workers(), 2);
    assert!(r.cuts().iter().all(|c| c.worker < 2));
    assert_eq!(r.cuts().len(), s.cuts().len());
    assert_eq!(s.worker_of(&[1, 1, 0]), 2);
    assert_eq!(s.worker_of(&[0, 0]), 0);
}

#[test]
fn schedule_files_round_trip_and_bad_files_are_clear_errors() {
    let p = pool(3, Policy::Adaptive);
    let mut rng = Rng(31);
    let mut leaves = 0;
    let prog = gen(&mut rng, 9, &mut leaves);
    let log = Log::new(leaves, Duration::from_micros(20));
    let (_, s) = p.install(|| schedule::record(|| run(&prog, &log)));
    let bytes = s.to_bytes();
    assert_eq!(Schedule::from_bytes(&bytes).unwrap(), s);
    let mut buf = Vec::new();
    s.write_to(&mut buf).unwrap();
    assert_eq!(Schedule::read_from(&mut buf.as_slice()).unwrap(), s);
    assert_eq!(bytes.len(), s.bytes());

    assert!(matches!(
        Schedule::from_bytes(b"hello, world, not a schedule"),
        Err(ScheduleError::NotASchedule)
    ));
    assert!(matches!(
        Schedule::from_bytes(&bytes[..bytes.len() - 3]),
        Err(ScheduleError::Truncated)
    ));
    let mut v = bytes.clone();
    v[8] = 9;
    assert_eq!(
        Schedule::from_bytes(&v),
        Err(ScheduleError::Version { found: 9 })
    );
    for at in 20..bytes.len() {
        let mut d = bytes.clone();
        d[at] ^= 0x41;
        assert!(
            matches!(Schedule::from_bytes(&d), Err(ScheduleError::Corrupt(_))),
            "byte {at}"
        );
    }
    // A schedule whose parts contradict each other is refused when built.
    assert!(matches!(
        Schedule::new(
            2,
            0,
            vec![Cut {
                path: vec![0],
                worker: 5,
                rank: 0
            }]
        ),
        Err(ScheduleError::Invalid(_))
    ));
    assert!(matches!(
        Schedule::new(
            2,
            0,
            vec![Cut {
                path: vec![],
                worker: 1,
                rank: 0
            }]
        ),
        Err(ScheduleError::Invalid(_))
    ));
    let e = ScheduleError::Version { found: 9 }.to_string();
    assert!(e.contains("version 9"), "{e}");
}

/// A region's tasks may spawn into a scope opened outside it; the region is still a `finish`
/// for them: `record` and `follow` return only after those spawns (and theirs) have run, their
/// cuts are in the schedule, and a strict follow keeps them where the template says (before,
/// the region ended with its root, and its tasks ran on after it, anywhere, with its freed
/// bookkeeping).
#[test]
fn a_region_waits_for_what_it_spawned_into_an_outer_scope() {
    fn fan<'s>(s: &magpie::Scope<'s>, depth: u32, log: &'s Log, id: usize) {
        if depth == 0 {
            run(&Prog::Leaf(id), log);
            return;
        }
        for c in 0..3 {
            s.spawn(move |s| fan(s, depth - 1, log, id * 3 + c));
        }
    }
    let leaves = 3usize.pow(5);
    for workers in [1, 2, 4] {
        for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            let p = pool(workers, policy);
            let what = format!("{workers} workers, {policy:?}");
            watchdog(60, &what, || {
                let log = Log::new(leaves, Duration::from_micros(20));
                let log2 = Log::new(leaves, Duration::from_micros(20));
                p.install(|| {
                    let mut done_at_end = 0;
                    let mut recorded = None;
                    magpie::scope(|s| {
                        let (_, taken) = schedule::record(|| fan(s, 5, &log, 0));
                        done_at_end = log.map().iter().filter(|w| **w != 0).count();
                        recorded = Some(taken);
                    });
                    assert_eq!(done_at_end, leaves, "{what}: record returned early");
                    assert!(log.each_ran_once(), "{what}");
                    let recorded = recorded.unwrap();
                    let before = p.stats().deviations;
                    let mut followed = None;
                    magpie::scope(|s| {
                        let (_, taken) = schedule::follow(&recorded, Constraint::Ordered, || {
                            fan(s, 5, &log2, 0)
                        });
                        done_at_end = log2.map().iter().filter(|w| **w != 0).count();
                        followed = Some(taken);
                    });
                    assert_eq!(done_at_end, leaves, "{what}: follow returned early");
                    assert!(log2.each_ran_once(), "{what}");
                    assert_eq!(log2.map(), log.map(), "{what}: step to worker map");
                    if p.stats().deviations == before {
                        assert_eq!(followed.unwrap(), recorded, "{what}: re-recorded schedule");
                    }
                });
            });
        }
    }
}

#[test]
#[should_panic(expected = "do not nest")]
fn regions_do_not_nest() {
    let p = pool(2, Policy::Adaptive);
    p.install(|| schedule::record(|| schedule::record(|| 1)));
}

#[test]
fn a_trace_that_names_its_cuts_replays_exactly() {
    let mut exact = 0;
    let mut with_cuts = 0;
    let mut total = 0;
    for workers in [2, 3, 4] {
        for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
            for seed in 1..=3u64 {
                let mut rng = Rng(seed * 104_729 + workers as u64);
                let mut leaves = 0;
                let progs: Vec<Prog> = (0..2).map(|_| gen(&mut rng, 8, &mut leaves)).collect();
                let what = format!("{workers} workers, {policy:?}, seed {seed}");
                watchdog(60, &what, || {
                    let traced = Pool::builder()
                        .workers(workers)
                        .policy(policy)
                        .trace_cuts(true)
                        .build()
                        .expect("pool");
                    let log = Log::new(leaves, Duration::from_micros(20));
                    for p in &progs {
                        traced.install(|| run(p, &log));
                    }
                    let trace = traced.trace().expect("a trace");
                    drop(traced);
                    // The cuts travel in the trace file.
                    let back = magpie::trace::Trace::from_bytes(&trace.to_bytes()).expect("read");
                    assert_eq!(back.schedules, trace.schedules, "{what}");
                    let recorded = Schedule::from_trace(&back).expect("the trace names its cuts");
                    assert_eq!(recorded.len(), 2, "{what}: one schedule per install");
                    let replay = Pool::builder()
                        .replay(&back)
                        .trace_cuts(true)
                        .build()
                        .expect("replay pool");
                    assert_eq!(replay.workers(), workers);
                    let log2 = Log::new(leaves, Duration::from_micros(20));
                    let before = replay.stats().deviations;
                    for p in &progs {
                        replay.install(|| run(p, &log2));
                    }
                    assert!(log2.each_ran_once(), "{what}");
                    let again = Schedule::from_trace(&replay.trace().unwrap()).unwrap();
                    total += 1;
                    if recorded.iter().any(|s| !s.cuts().is_empty()) {
                        with_cuts += 1;
                    }
                    let same_roots = recorded
                        .iter()
                        .zip(&again)
                        .all(|(a, b)| a.root_worker() == b.root_worker());
                    if replay.stats().deviations == before && same_roots {
                        // Re-tracing the replay names the same cuts, and every step ran where
                        // it ran before.
                        assert_eq!(again, recorded, "{what}: the replay's cuts");
                        assert_eq!(log2.map(), log.map(), "{what}: step to worker map");
                        exact += 1;
                    } else if replay.stats().deviations == before {
                        for (a, b) in recorded.iter().zip(&again) {
                            assert_eq!(a.cuts().len(), b.cuts().len(), "{what}");
                        }
                        exact += 1;
                    }
                });
            }
        }
    }
    println!("replayed {exact} of {total} traced runs with 0 deviations, {with_cuts} with cuts");
    mostly_exact("replays of traces", total - exact, total);
    assert!(with_cuts >= 5, "too few runs had steals: {with_cuts}");
}

#[test]
fn traces_without_cuts_cannot_be_replayed() {
    let p = Pool::builder().workers(2).trace(true).build().unwrap();
    p.install(|| magpie::join(|| 1, || 2));
    let t = p.trace().unwrap();
    assert!(t.schedules.is_empty());
    let e = Schedule::from_trace(&t).unwrap_err();
    assert!(e.to_string().contains("names no cuts"), "{e}");
    let e = Pool::builder().replay(&t).build().unwrap_err();
    assert!(e.to_string().contains("trace_cuts"), "{e}");
}

#[test]
fn iterations_settle_from_recording_through_relaxed_to_ordered() {
    for (workers, policy, prune) in [
        (2, Policy::WorkFirst, 0),
        (3, Policy::HelpFirst, 30),
        (4, Policy::WorkFirst, 50),
    ] {
        let mut rng = Rng(workers as u64 * 7 + prune as u64);
        let mut leaves = 0;
        let prog = gen(&mut rng, 8, &mut leaves);
        let p = pool(workers, policy);
        let what = format!("{workers} workers, {policy:?}, prune {prune}");
        watchdog(60, &what, || {
            let mut it = schedule::Iterate::new(prune, 3);
            for i in 0..8 {
                let log = Log::new(leaves, Duration::from_micros(10));
                let sum = p.install(|| it.run(|| run(&prog, &log)));
                assert_eq!(sum, expected(leaves), "{what}: iteration {i}");
                assert!(log.each_ran_once(), "{what}: iteration {i}");
            }
            let stages: Vec<schedule::Stage> = it.steps().iter().map(|s| s.stage).collect();
            assert_eq!(stages[0], schedule::Stage::Record, "{what}");
            assert_eq!(stages[1], schedule::Stage::Relax, "{what}");
            // At most 3 relaxed iterations before following (then back only on a deviation).
            let first_follow = stages
                .iter()
                .position(|s| *s == schedule::Stage::Follow)
                .unwrap_or_else(|| panic!("{what}: never followed: {stages:?}"));
            assert!(first_follow <= 4, "{what}: {stages:?}");
            for s in it.steps() {
                if s.stage == schedule::Stage::Follow && s.deviations == 0 {
                    // No random steals: every cut of the stable schedule stayed on its worker.
                    assert_eq!(s.same_worker, 1.0, "{what}: {:?}", it.steps());
                }
            }
            assert!(it.schedule().is_some());
        });
    }
}

/// A halving recursion `depth` levels deep whose leaves note their worker in `log`; leaf `i` is
/// the `i`-th from the left.
fn halving_tree(depth: u32, first: usize, log: &Mutex<Vec<(usize, usize)>>) {
    if depth == 0 {
        std::thread::sleep(Duration::from_micros(200));
        log.lock()
            .unwrap()
            .push((first, magpie::worker_index().unwrap()));
        return;
    }
    let half = 1 << (depth - 1);
    magpie::join(
        || halving_tree(depth - 1, first, log),
        || halving_tree(depth - 1, first + half, log),
    );
}

#[test]
fn halving_gives_each_worker_one_contiguous_share() {
    let cuts = |s: &Schedule| -> Vec<(Vec<u32>, u32)> {
        s.cuts()
            .iter()
            .map(|c| (c.path.clone(), c.worker))
            .collect()
    };
    assert!(Schedule::halving(1).cuts().is_empty());
    assert_eq!(
        cuts(&Schedule::halving(4)),
        vec![(vec![0, 1], 1), (vec![1], 2), (vec![1, 1], 3)]
    );
    // 3 workers over 4 subtrees: 0, 0, 1, 2.
    assert_eq!(
        cuts(&Schedule::halving(3)),
        vec![(vec![1], 1), (vec![1, 1], 2)]
    );
    for workers in [2, 3, 4, 5, 8] {
        let s = Schedule::halving(workers);
        assert_eq!(s.workers(), workers);
        for constraint in [Constraint::Ordered, Constraint::Unordered] {
            let p = pool(workers, Policy::WorkFirst);
            let what = format!("{workers} workers, {constraint:?}");
            let log = Mutex::new(Vec::new());
            let depth = 5;
            watchdog(60, &what, || {
                p.install(|| schedule::follow(&s, constraint, || halving_tree(depth, 0, &log)))
            });
            let mut by_leaf = log.into_inner().unwrap();
            by_leaf.sort();
            assert_eq!(by_leaf.len(), 1 << depth, "{what}");
            // Worker shares are contiguous runs of leaves, in worker order from the root's,
            // and every worker has one.
            let seq: Vec<usize> = by_leaf.iter().map(|&(_, w)| w).collect();
            let mut runs: Vec<usize> = seq.clone();
            runs.dedup();
            assert_eq!(runs.len(), workers, "{what}: {seq:?}");
            let mut distinct = runs.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), workers, "{what}: {seq:?}");
        }
    }
}

#[test]
fn iterate_places_with_the_initialisers_schedule_then_follows_it() {
    let p = pool(3, Policy::WorkFirst);
    watchdog(60, "place", || {
        let mut it = schedule::Iterate::new(0, 2);
        let log = Mutex::new(Vec::new());
        // The initialiser is recorded and becomes the first template: the first iteration
        // relaxes from it.
        p.install(|| it.place(|| halving_tree(4, 0, &log)));
        assert_eq!(it.steps()[0].stage, schedule::Stage::Place);
        assert_eq!(it.stage(), schedule::Stage::Relax);
        let init = it.schedule().cloned().unwrap();
        let (mut placed, mut deviated) = (0, 0);
        for _ in 0..5 {
            let was = it.stage();
            p.install(|| it.run(|| halving_tree(4, 0, &log)));
            // A second phase of the iteration, as the first ran.
            p.install(|| it.again(|| halving_tree(4, 0, &log)));
            if was == schedule::Stage::Relax {
                // The initialiser follows the schedule just taken, under Ordered, and keeps it.
                let t = it.schedule().cloned().unwrap();
                p.install(|| it.place(|| halving_tree(4, 0, &log)));
                assert_eq!(it.schedule(), Some(&t));
                let last = it.steps().last().unwrap();
                assert_eq!(last.stage, schedule::Stage::Place);
                placed += 1;
                if last.deviations == 0 {
                    assert_eq!(last.same_worker, 1.0, "{:?}", it.steps());
                } else {
                    deviated += 1;
                }
            }
        }
        // A placement follows under Ordered, which can meet a stall its template does not hold
        // (see `EXACT`): at native speed, about one run of this test in a hundred met one.
        println!("placements: {deviated} of {placed} deviated");
        if EXACT {
            assert!(deviated <= 1, "{deviated} of {placed} placements deviated");
        }
        assert_eq!(it.stage(), schedule::Stage::Follow, "{:?}", it.steps());
        // Every leaf of every run ran once: 1 initialiser + 2 placements at most + 10 phases.
        let n = log.lock().unwrap().len();
        assert_eq!(n % 16, 0);
        assert!(n >= 16 * 11, "{n}");
        let _ = init;
    });
}

/// A follow entered from outside every pool (the global pool) starts its root on the template's
/// root worker, so no two workers swap roles: in every iteration of a program that follows the
/// same template, each leaf runs on the worker that ran it when the template was recorded, as
/// StOWS's locality needs. (From inside a pool, a follow's root is wherever the caller runs,
/// and the template's root worker and that one swap roles: `ordered_replays_...` above.)
#[test]
fn follows_from_outside_keep_every_leaf_on_its_recorded_worker_in_every_iteration() {
    let mut rng = Rng(4242);
    let mut leaves = 0;
    let prog = gen(&mut rng, 9, &mut leaves);
    let workers = magpie::global_pool().unwrap().workers();
    watchdog(120, "follows from outside", || {
        let log = Log::new(leaves, Duration::from_micros(20));
        // Recorded with its root on the last worker, where an install from outside would not
        // start it (a plain thread's install runs on a seat it borrows, or the first taker).
        let root = workers - 1;
        let mut out = None;
        magpie::global_pool().unwrap().install(|| {
            magpie::scope(|s| {
                let (out, log, prog) = (&mut out, &log, &prog);
                s.spawn_designated(root, move |_| {
                    *out = Some(schedule::record(|| run(prog, log)))
                });
            })
        });
        let (sum, recorded) = out.expect("the recording ran");
        assert_eq!(recorded.root_worker(), root);
        assert_eq!(sum, expected(leaves));
        assert!(log.each_ran_once());
        let first = log.map();
        for iteration in 0..6 {
            let log2 = Log::new(leaves, Duration::from_micros(20));
            let (sum2, followed) =
                schedule::follow(&recorded, Constraint::Ordered, || run(&prog, &log2));
            assert_eq!(sum2, expected(leaves), "iteration {iteration}");
            assert!(log2.each_ran_once(), "iteration {iteration}");
            assert_eq!(
                followed.root_worker(),
                recorded.root_worker() % workers,
                "iteration {iteration}: the root started elsewhere"
            );
            assert_eq!(
                log2.map(),
                first,
                "iteration {iteration}: a leaf ran off its recorded worker"
            );
        }
    });
}
