//! Topology as a pool sees it: the default is the detected machine, a virtual one can be given,
//! and pinned workers run on their core's CPU.

use magpie::{Pool, Topology};
use std::sync::Mutex;

/// The CPUs the calling thread may run on, from `/proc/thread-self/status`.
fn my_cpus() -> String {
    let s = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn default_topology_is_the_detected_machine() {
    let pool = Pool::builder().workers(2).build().unwrap();
    assert_eq!(pool.topology(), &Topology::detect());
    assert!(!pool.topology().is_virtual);
    assert!(pool.topology().cores() >= 1);
}

#[test]
fn pinned_workers_run_on_their_cores() {
    let topo = Topology::parse("2x2:4MiB").unwrap();
    let pool = Pool::builder()
        .workers(4)
        .topology(topo.clone())
        .pin(true)
        .build()
        .unwrap();
    assert_eq!(pool.topology(), &topo);
    let seen = Mutex::new(Vec::new());
    pool.install(|| {
        magpie::scope(|s| {
            for _ in 0..64 {
                s.spawn_with(magpie::Policy::HelpFirst, |_| {
                    let w = magpie::worker_index().unwrap();
                    seen.lock().unwrap().push((w, my_cpus()));
                    std::thread::sleep(std::time::Duration::from_micros(200));
                });
            }
        })
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 64);
    for (w, cpus) in seen {
        assert_eq!(cpus, topo.core_of_worker(w).cpu.to_string(), "worker {w}");
    }
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[test]
fn numa_victims_lose_nothing() {
    for spec in ["2x2:1MiB", "4x1:1MiB", "1x4:1MiB"] {
        let pool = Pool::builder()
            .workers(4)
            .topology(Topology::parse(spec).unwrap())
            .victims(magpie::Victims::Numa)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| fib(25)), 75025);
        let done = std::sync::atomic::AtomicUsize::new(0);
        pool.install(|| {
            magpie::scope(|s| {
                for _ in 0..2000 {
                    s.spawn_with(magpie::Policy::HelpFirst, |_| {
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    });
                }
            })
        });
        assert_eq!(done.into_inner(), 2000, "{spec}");
    }
}

#[test]
fn leaves_are_recorded_with_their_workers() {
    use magpie::cachemodel::{leaf, range_of};
    let data = vec![0u64; 4096];
    let pool = Pool::builder()
        .workers(2)
        .record_leaves(true)
        .build()
        .unwrap();
    let seen = Mutex::new(Vec::new());
    pool.install(|| {
        magpie::scope(|s| {
            for chunk in data.chunks(64) {
                let seen = &seen;
                s.spawn(move |_| {
                    leaf(&[range_of(chunk)], &[]);
                    seen.lock()
                        .unwrap()
                        .push((range_of(chunk).start, magpie::worker_index().unwrap()));
                });
            }
        })
    });
    let mut leaves = pool.take_leaves();
    assert_eq!(leaves.len(), 64);
    assert!(pool.take_leaves().is_empty(), "taken once");
    leaves.sort_by_key(|l| l.reads[0].start);
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    for (l, (start, w)) in leaves.iter().zip(&seen) {
        assert_eq!((l.reads[0].start, l.worker), (*start, *w));
        assert_eq!(l.reads[0].end - l.reads[0].start, 64 * 8);
    }
    // A pool that does not record keeps nothing.
    let quiet = Pool::builder().workers(2).build().unwrap();
    let r = 0..64u64;
    quiet.install(|| leaf(std::slice::from_ref(&r), &[]));
    assert!(quiet.take_leaves().is_empty());
}

#[test]
fn tasks_sent_to_a_place_run_there() {
    // 60 tasks sent to each place of a 2×2 pool without cross-place stealing, while both of
    // place 1's workers are kept busy: the place-1 tasks wait for them, never run on place 0.
    let pool = Pool::builder()
        .workers(4)
        .topology(Topology::parse("2x2:1MiB").unwrap())
        .places(true)
        .build()
        .unwrap();
    assert_eq!(pool.places(), 2);
    let seen = Mutex::new(Vec::new());
    pool.install(|| {
        magpie::scope(|s| {
            for _ in 0..2 {
                s.spawn_at(1, |_| {
                    std::thread::sleep(std::time::Duration::from_millis(150))
                });
            }
            for p in [0, 1] {
                for _ in 0..60 {
                    let seen = &seen;
                    s.spawn_at(p, move |_| {
                        seen.lock()
                            .unwrap()
                            .push((p, magpie::place_index().unwrap()));
                        std::thread::sleep(std::time::Duration::from_micros(300));
                    });
                }
            }
        })
    });
    let runs = seen.into_inner().unwrap();
    assert_eq!(runs.len(), 120);
    for (asked, ran) in runs {
        assert_eq!(asked, ran);
    }
}

/// What `cross_place_stealing_lets_an_idle_place_help` shares between its tasks.
struct Helping {
    helped: std::sync::atomic::AtomicBool,
    seen: Mutex<Vec<(usize, usize)>>,
    deadline: std::time::Instant,
}

/// Sends 60 tasks to each of places 0 and 1 from a worker of place 0 (moving there first), so
/// the place-1 tasks go through place 1's mailbox and none runs inline in the spawner. A place-1
/// task that runs on place 1 waits until some place-1 task has run on place 0, or the deadline.
fn send_from_place_0<'s>(s: &magpie::Scope<'s>, h: &'s Helping) {
    use std::sync::atomic::Ordering::SeqCst;
    if magpie::place_index() != Some(0) {
        return s.spawn_at(0, move |s| send_from_place_0(s, h));
    }
    for p in [0, 1] {
        for _ in 0..60 {
            s.spawn_at(p, move |_| {
                let at = magpie::place_index().unwrap();
                h.seen.lock().unwrap().push((p, at));
                if p == 1 && at == 0 {
                    h.helped.store(true, SeqCst);
                }
                while p == 1
                    && at == 1
                    && !h.helped.load(SeqCst)
                    && std::time::Instant::now() < h.deadline
                {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
            });
        }
    }
}

#[test]
fn cross_place_stealing_lets_an_idle_place_help() {
    // Place 1's two workers are soon both held by place-1 tasks that wait for help, and only
    // place 0's idle workers, stealing across places, can give it. No timing decides the
    // outcome: without cross-place steals the 10 s deadline passes and the assertion fails.
    let pool = Pool::builder()
        .workers(4)
        .topology(Topology::parse("2x2:1MiB").unwrap())
        .places(true)
        .cross_place_steal(true)
        .build()
        .unwrap();
    let h = Helping {
        helped: Default::default(),
        seen: Mutex::new(Vec::new()),
        deadline: std::time::Instant::now() + std::time::Duration::from_secs(10),
    };
    pool.install(|| magpie::scope(|s| send_from_place_0(s, &h)));
    let runs = h.seen.into_inner().unwrap();
    assert_eq!(runs.len(), 120);
    assert!(
        runs.iter().any(|&(asked, ran)| asked == 1 && ran == 0),
        "no place-1 task ran on place 0"
    );
}

#[test]
fn spawn_at_without_places_is_a_plain_spawn() {
    let pool = Pool::builder().workers(2).build().unwrap();
    assert_eq!(pool.places(), 1);
    let n = std::sync::atomic::AtomicUsize::new(0);
    pool.install(|| {
        assert_eq!(magpie::place_index(), None);
        magpie::scope(|s| {
            for p in 0..100 {
                s.spawn_at(p, |_| {
                    n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                });
            }
        })
    });
    assert_eq!(n.into_inner(), 100);
}

#[test]
fn cab_squads_run_one_inter_socket_task_at_a_time_on_their_heads() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let topo = Topology::parse("2x2:1MiB").unwrap();
    let pool = Pool::builder()
        .workers(4)
        .topology(topo.clone())
        .squads(true)
        .build()
        .unwrap();
    let running = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let (done, intra) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let heads = Mutex::new(Vec::new());
    pool.install(|| {
        magpie::scope(|s| {
            for _ in 0..40 {
                s.inter_spawn(|s| {
                    let sq = magpie::place_index().unwrap();
                    heads.lock().unwrap().push(magpie::worker_index().unwrap());
                    assert_eq!(
                        running[sq].fetch_add(1, SeqCst),
                        0,
                        "two inter tasks in squad {sq}"
                    );
                    // Intra-socket work, shared within the squad.
                    for _ in 0..8 {
                        s.spawn(|_| {
                            intra.fetch_add(1, SeqCst);
                            std::thread::sleep(std::time::Duration::from_micros(200));
                        });
                    }
                    std::thread::sleep(std::time::Duration::from_micros(300));
                    running[sq].fetch_sub(1, SeqCst);
                    done.fetch_add(1, SeqCst);
                });
            }
        })
    });
    assert_eq!(done.into_inner(), 40);
    assert_eq!(intra.into_inner(), 320);
    // Only each squad's head (its first worker) takes inter-socket tasks.
    for w in heads.into_inner().unwrap() {
        assert!(w == 0 || w == 2, "worker {w} took an inter-socket task");
    }
}

#[test]
fn boundary_level_follows_eq_4_in_a_pool_with_squads() {
    let topo = Topology::parse("4x4:6MiB").unwrap();
    let with = |over: Option<u32>| {
        Pool::builder()
            .workers(16)
            .topology(topo.clone())
            .squads(true)
            .boundary_level(over)
            .build()
            .unwrap()
    };
    assert_eq!(
        with(None).install(|| magpie::boundary_level(16 << 20, 2)),
        3
    );
    assert_eq!(
        with(Some(5)).install(|| magpie::boundary_level(16 << 20, 2)),
        5
    );
    let plain = Pool::builder().workers(2).build().unwrap();
    assert_eq!(plain.install(|| magpie::boundary_level(16 << 20, 2)), 0);
    assert_eq!(magpie::boundary_level(16 << 20, 2), 0, "outside a pool");
    // bi_tier hands the body its level and waits for its inter-socket tasks.
    let n = std::sync::atomic::AtomicUsize::new(0);
    let bl = with(None).install(|| {
        magpie::bi_tier(16 << 20, 2, |s, bl| {
            for _ in 0..10 {
                s.inter_spawn(|_| {
                    n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                });
            }
            bl
        })
    });
    assert_eq!((bl, n.into_inner()), (3, 10));
}

/// Two squads of one worker each. Squad 0's head, busy with an inter-socket task, fills the
/// pools with tasks named alternately for squad 0 and squad 1, and stays busy until they are
/// done, so squad 1's head runs them all, one at a time, its own pool first: the order shows
/// which pool each task went to.
fn inter_spawn_at_order(hints: bool) -> Vec<usize> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    let pool = Pool::builder()
        .workers(2)
        .topology(Topology::parse("2x1:1MiB").unwrap())
        .squads(true)
        .squad_hints(hints)
        .build()
        .unwrap();
    let both = std::sync::Barrier::new(2);
    let (spawned, done) = (AtomicBool::new(false), AtomicUsize::new(0));
    let order = Mutex::new(Vec::new());
    let (both, spawned, done, order_ref) = (&both, &spawned, &done, &order);
    pool.install(|| {
        magpie::scope(|s| {
            for _ in 0..2 {
                s.inter_spawn(move |s| {
                    both.wait();
                    if magpie::place_index() == Some(0) {
                        for i in 0..20 {
                            s.inter_spawn_at(i % 2, move |_| {
                                assert_eq!(magpie::place_index(), Some(1));
                                order_ref.lock().unwrap().push(i % 2);
                                done.fetch_add(1, SeqCst);
                            });
                        }
                        spawned.store(true, SeqCst);
                        while done.load(SeqCst) < 20 {
                            std::thread::sleep(std::time::Duration::from_micros(100));
                        }
                    } else {
                        while !spawned.load(SeqCst) {
                            std::thread::sleep(std::time::Duration::from_micros(100));
                        }
                    }
                });
            }
        })
    });
    order.into_inner().unwrap()
}

#[test]
fn inter_spawn_at_fills_the_named_squads_pool_unless_hints_are_off() {
    let want: Vec<usize> = (0..20)
        .map(|i| usize::from(i >= 10))
        .map(|x| 1 - x)
        .collect();
    assert_eq!(inter_spawn_at_order(true), want, "squad 1's own pool first");
    let spawn_order: Vec<usize> = (0..20).map(|i| i % 2).collect();
    assert_eq!(
        inter_spawn_at_order(false),
        spawn_order,
        "all in the spawner's pool, in spawn order"
    );
}

#[test]
fn with_squad_hints_an_idle_squads_task_waits_for_its_own_head() {
    // Three squads of one worker. In each round, squad 0 names one task for squad 1, then one
    // for squad 2, and waits for both in a scope of the round's own. Squad 2's head, idle, finds
    // squad 1's task first, but squad 1 runs no inter-socket task, so the task is left to squad
    // 1's own head. (The round's scope ends only after each task has freed its squad: a task
    // that had only counted itself done could still hold its squad busy, and the next round's
    // task for it would then be fair game for squad 2.)
    let pool = Pool::builder()
        .workers(3)
        .topology(Topology::parse("3x1:1MiB").unwrap())
        .squads(true)
        .build()
        .unwrap();
    let ran = Mutex::new(Vec::new());
    let ran_ref = &ran;
    pool.install(|| {
        magpie::scope(|s| {
            s.inter_spawn_at(0, move |_| {
                assert_eq!(magpie::place_index(), Some(0));
                for _round in 1..=20 {
                    magpie::scope(|r| {
                        for sq in [1, 2] {
                            r.inter_spawn_at(sq, move |_| {
                                let at = magpie::place_index().unwrap();
                                ran_ref.lock().unwrap().push((sq, at));
                            });
                        }
                    });
                }
            });
        })
    });
    let ran = ran.into_inner().unwrap();
    assert_eq!(ran.len(), 40);
    for (named, at) in ran {
        assert_eq!(
            named, at,
            "a task named for squad {named} ran on squad {at}"
        );
    }
}

/// A pool of one worker with places and squads: that worker is its squad's head and its
/// place's only member, so what goes to its squad's pool or its mailbox is its to take (the
/// steal round looked there only with another worker to steal from, and an inter-socket
/// spawn waited forever).
#[test]
fn a_lone_worker_takes_its_own_squads_and_mailboxs_tasks() {
    for squads in [false, true] {
        let pool = Pool::builder()
            .workers(1)
            .places(true)
            .squads(squads)
            .build()
            .unwrap();
        let ran = std::sync::atomic::AtomicUsize::new(0);
        pool.install(|| {
            magpie::scope(|s| {
                for _ in 0..3 {
                    s.inter_spawn(|s| {
                        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        s.inter_spawn(|_| {
                            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        });
                    });
                    s.spawn_at(7, |_| {
                        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    });
                }
            })
        });
        assert_eq!(ran.into_inner(), 9, "squads {squads}");
    }
}
