//! The race checker on small programs whose races are known: found whatever the schedule (at
//! 1, 2 and 4 workers), none where the program is ordered, and both searches agreeing.

use magpie::race::{self, dpst::Search, Options};
use magpie::{join, scope, Pool};

fn pool(workers: usize, search: Search) -> Pool {
    Pool::builder()
        .workers(workers)
        .check_races_with(Options {
            search,
            compare: true,
        })
        .build()
        .unwrap()
}

/// A raw pointer that tasks may share (the programs below declare accesses; most never touch
/// the memory).
#[derive(Clone, Copy)]
struct At(usize);

impl At {
    fn of(v: &[u64]) -> At {
        At(v.as_ptr() as usize)
    }
    fn p(self, i: usize) -> *const u64 {
        (self.0 + 8 * i) as *const u64
    }
}

fn workers() -> [usize; 3] {
    [1, 2, 4]
}

#[test]
fn disjoint_halves_are_clean_and_overlapping_ones_race() {
    let v = vec![0u64; 64];
    let at = At::of(&v);
    for w in workers() {
        for search in [Search::Plain, Search::Phases] {
            let pool = pool(w, search);
            let ((), clean) = race::check(&pool, || {
                join(
                    || race::write_raw(at.p(0), 32),
                    || race::write_raw(at.p(32), 32),
                );
            })
            .unwrap();
            assert_eq!(clean.race_count, 0, "{w} workers: {clean}");
            assert_eq!(clean.accesses, 64);
            let ((), dirty) = race::check(&pool, || {
                join(
                    || race::write_raw(at.p(0), 33),
                    || race::write_raw(at.p(32), 32),
                );
            })
            .unwrap();
            assert_eq!(dirty.race_count, 1, "{w} workers: {dirty}");
            let r = &dirty.races[0];
            assert_eq!(r.addr, at.p(32) as usize);
            assert_eq!(r.first.access, race::shadow::Access::Write);
            let text = r.to_string();
            assert!(text.contains("write by step"), "{text}");
        }
    }
}

#[test]
fn reads_beside_reads_are_clean_and_a_write_beside_them_races() {
    let v = vec![0u64; 4];
    let at = At::of(&v);
    for w in workers() {
        let pool = pool(w, Search::Phases);
        // Many readers in parallel, then a write after the join: clean.
        let ((), clean) = race::check(&pool, || {
            scope(|s| {
                for _ in 0..8 {
                    s.spawn(move |_| race::read_raw(at.p(0), 4));
                }
            });
            race::write_raw(at.p(0), 4);
        })
        .unwrap();
        assert_eq!(clean.race_count, 0, "{clean}");
        // A write in one of eight parallel tasks, the others reading: it races with readers,
        // whichever of them ran first.
        let ((), dirty) = race::check(&pool, || {
            scope(|s| {
                for i in 0..8 {
                    s.spawn(move |_| match i {
                        5 => race::write_raw(at.p(1), 1),
                        _ => race::read_raw(at.p(1), 1),
                    });
                }
            });
        })
        .unwrap();
        assert!(dirty.race_count >= 1, "{w} workers: {dirty}");
    }
}

#[test]
fn a_spawn_races_with_its_spawner_s_later_steps_only() {
    let v = vec![0u64; 4];
    let at = At::of(&v);
    for w in workers() {
        let pool = pool(w, Search::Phases);
        let ((), clean) = race::check(&pool, || {
            scope(|s| {
                race::write_raw(at.p(0), 1); // before the spawn: ordered
                s.spawn(move |_| race::write_raw(at.p(0), 1));
            });
            race::read_raw(at.p(0), 1); // after the scope: ordered
        })
        .unwrap();
        assert_eq!(clean.race_count, 0, "{clean}");
        let ((), dirty) = race::check(&pool, || {
            scope(|s| {
                s.spawn(move |_| race::write_raw(at.p(0), 1));
                race::read_raw(at.p(0), 1); // beside the spawned task
            });
        })
        .unwrap();
        assert_eq!(dirty.race_count, 1, "{dirty}");
        // Nested: a task spawned by a spawned task, against the outer body.
        let ((), nested) = race::check(&pool, || {
            scope(|s| {
                s.spawn(move |s| {
                    s.spawn(move |_| race::write_raw(at.p(2), 1));
                });
                race::write_raw(at.p(2), 1);
            });
        })
        .unwrap();
        assert_eq!(nested.race_count, 1, "{nested}");
    }
}

/// A recursive divide and conquer whose leaves write their own elements, and a planted
/// overlap at one leaf: found at every worker count, by both searches, with the same answer.
#[test]
fn a_recursive_program_s_planted_race_is_found_whatever_the_schedule() {
    fn rec(at: At, lo: usize, hi: usize, plant: Option<usize>) {
        if hi - lo <= 4 {
            let extra = usize::from(plant == Some(lo) && hi < 1024);
            race::write_raw(at.p(lo), hi - lo + extra);
            return;
        }
        let mid = (lo + hi) / 2;
        join(|| rec(at, lo, mid, plant), || rec(at, mid, hi, plant));
    }
    let v = vec![0u64; 1024];
    let at = At::of(&v);
    for w in workers() {
        let pool = pool(w, Search::Phases);
        let ((), clean) = race::check(&pool, || rec(at, 0, 1024, None)).unwrap();
        assert_eq!(clean.race_count, 0, "{clean}");
        let ((), dirty) = race::check(&pool, || rec(at, 0, 1024, Some(508))).unwrap();
        assert_eq!(dirty.race_count, 1, "{w} workers: {dirty}");
        let (p, q) = (
            dirty.plain_traversals.unwrap(),
            dirty.phase_traversals.unwrap(),
        );
        assert!(
            q <= p,
            "the phase search followed more edges ({q}) than the plain one ({p})"
        );
        if w == 1 {
            assert_eq!(dirty.stolen_phases, 0);
            assert!(!dirty.races[0].overlapped(), "one worker overlaps nothing");
        }
    }
}

#[test]
fn accesses_outside_a_checked_run_cost_nothing_and_an_unchecked_pool_is_refused() {
    // Outside any pool, and in a plain pool: nothing happens.
    race::write(&[1u8, 2, 3]);
    let plain = Pool::builder().workers(2).build().unwrap();
    plain.install(|| race::write(&[1u8]));
    assert!(!race::checking());
    let e = race::check(&plain, || ()).unwrap_err().to_string();
    assert!(e.contains("check_races"), "{e}");
    // A checked pool runs unchecked programs too (their accesses unchecked).
    let p = pool(2, Search::Plain);
    let v = p.install(|| {
        let (a, b) = join(|| 1, || 2);
        a + b
    });
    assert_eq!(v, 3);
    let (inside, _) = race::check(&p, race::checking).unwrap();
    assert!(inside);
}

#[test]
fn check_races_is_refused_with_schedule_regions() {
    let e = match Pool::builder()
        .workers(2)
        .check_races(true)
        .trace_cuts(true)
        .build()
    {
        Ok(_) => panic!("check_races with trace_cuts was accepted"),
        Err(e) => e,
    };
    assert!(e.to_string().contains("check_races"), "{e}");
}

#[test]
fn a_panicking_half_caught_by_its_joiner_leaves_the_tree_whole() {
    let v = vec![0u64; 4];
    let at = At::of(&v);
    for w in workers() {
        let pool = pool(w, Search::Phases);
        let ((), report) = race::check(&pool, || {
            let caught = std::panic::catch_unwind(|| {
                join(
                    move || {
                        race::write_raw(at.p(0), 1);
                        panic!("a half fails")
                    },
                    move || race::write_raw(at.p(1), 1),
                )
            });
            assert!(caught.is_err());
            // After the join, ordered with both halves; then a race planted after it.
            race::write_raw(at.p(0), 2);
            join(
                move || race::write_raw(at.p(3), 1),
                move || race::write_raw(at.p(3), 1),
            );
        })
        .unwrap();
        assert_eq!(report.race_count, 1, "{w} workers: {report}");
        assert_eq!(report.races[0].addr, at.p(3) as usize);
    }
}

/// Work sent to a named worker, place or squad is checked as the spawn or join it is: a
/// designated child races with its siblings and the scope's other tasks, and is ordered
/// before what follows its scope, in pools with places and squads too.
#[test]
fn designated_and_placed_work_is_checked_like_any_spawn() {
    let v = vec![0u64; 4];
    let at = At::of(&v);
    for w in workers() {
        for (places, squads) in [(false, false), (true, false), (true, true)] {
            let pool = Pool::builder()
                .workers(w)
                .places(places)
                .squads(squads)
                .check_races(true)
                .build()
                .unwrap();
            let what = format!("{w} workers, places {places}, squads {squads}");
            // Each kind of spawn beside a plain spawn writing the same word: one race each.
            let ((), raced) = race::check(&pool, || {
                scope(|s| {
                    s.spawn_designated(w - 1, move |_| race::write_raw(at.p(0), 1));
                    s.spawn(move |_| race::write_raw(at.p(0), 1));
                });
                scope(|s| {
                    s.spawn_at(1, move |_| race::write_raw(at.p(1), 1));
                    s.spawn(move |_| race::write_raw(at.p(1), 1));
                });
                scope(|s| {
                    s.inter_spawn(move |_| race::write_raw(at.p(2), 1));
                    s.spawn(move |_| race::write_raw(at.p(2), 1));
                });
                magpie::join_designated(
                    w - 1,
                    move || race::write_raw(at.p(3), 1),
                    move || race::write_raw(at.p(3), 1),
                );
            })
            .unwrap();
            assert_eq!(raced.race_count, 4, "{what}: {raced}");
            let mut addrs: Vec<usize> = raced.races.iter().map(|r| r.addr).collect();
            addrs.sort_unstable();
            assert_eq!(addrs, (0..4).map(|i| at.p(i) as usize).collect::<Vec<_>>());
            // The same children on disjoint words, each word written again after its scope
            // or join: clean.
            let ((), clean) = race::check(&pool, || {
                scope(|s| {
                    s.spawn_designated(w - 1, move |_| race::write_raw(at.p(0), 1));
                    s.spawn_at(1, move |_| race::write_raw(at.p(1), 1));
                    s.inter_spawn(move |_| race::write_raw(at.p(2), 1));
                });
                magpie::join_designated(
                    w - 1,
                    move || race::write_raw(at.p(3), 1),
                    move || race::read_raw(at.p(0), 3),
                );
                race::write_raw(at.p(0), 4);
            })
            .unwrap();
            assert_eq!(clean.race_count, 0, "{what}: {clean}");
        }
    }
}
