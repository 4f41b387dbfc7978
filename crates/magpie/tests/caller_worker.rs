//! A pool whose worker 0 is the thread that built it (`Builder::use_current_thread`): calls
//! made on that thread run on it as worker 0, nothing is lost or run twice, and the thread stops
//! being lent when the pool is dropped, wherever that happens.

use magpie::{Builder, Error, Pool};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

fn lent(workers: usize) -> Pool {
    Builder::default()
        .workers(workers)
        .use_current_thread(true)
        .build()
        .expect("a lent pool")
}

/// fib by `join`, counting every leaf: joins deep enough that thieves take halves from worker 0
/// and worker 0's fibers wait for them.
fn fib(n: u64, leaves: &AtomicUsize) -> u64 {
    if n < 2 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1, leaves), || fib(n - 2, leaves));
    a + b
}

#[test]
fn calls_run_on_the_lending_thread_as_worker_0() {
    // Each test runs on a thread of its own, which is what gets lent.
    let pool = lent(3);
    let here = thread::current().id();
    assert_eq!(magpie::current_thread_index(), Some(0));
    assert_eq!(magpie::current_num_threads(), 3);
    let (index, id) = pool.install(|| (magpie::current_thread_index(), thread::current().id()));
    assert_eq!((index, id), (Some(0), here));
    for round in 0..20 {
        let leaves = AtomicUsize::new(0);
        let r = pool.install(|| fib(22, &leaves));
        assert_eq!(r, 17711, "round {round}");
        assert_eq!(
            leaves.load(Ordering::Relaxed),
            28657,
            "round {round}: leaves lost or doubled"
        );
        // Outside again between calls.
        assert_eq!(magpie::current_thread_index(), Some(0));
        assert_eq!(magpie::current_thread_has_pending_tasks(), Some(false));
    }
    // Free functions use the pool the thread is lent to, not the global pool.
    let leaves = AtomicUsize::new(0);
    let (a, b) = magpie::join(|| fib(18, &leaves), magpie::current_num_threads);
    assert_eq!((a, b), (2584, 3));
    let mut parts = vec![0u64; 64];
    magpie::scope(|s| {
        for (i, p) in parts.iter_mut().enumerate() {
            s.spawn(move |_| *p = i as u64 * 3);
        }
    });
    assert_eq!(parts.iter().sum::<u64>(), 3 * 63 * 64 / 2);
    drop(pool);
    assert_eq!(
        magpie::current_thread_index(),
        None,
        "still lent after the drop"
    );
}

#[test]
fn a_body_that_is_not_send_stays_on_the_lending_thread() {
    let pool = lent(2);
    let here = std::rc::Rc::new(thread::current().id());
    let mut sums = [0u64; 8];
    pool.in_place_scope(|s| {
        assert_eq!(*here, thread::current().id());
        for (i, p) in sums.iter_mut().enumerate() {
            s.spawn(move |_| *p = (1..=i as u64).sum());
        }
    });
    assert_eq!(sums, [0, 1, 3, 6, 10, 15, 21, 28]);
    magpie::in_place_scope(|_| assert_eq!(*here, thread::current().id()));
}

#[test]
fn a_broadcast_reaches_worker_0_on_the_lending_thread() {
    let pool = magpie::ThreadPool::from(lent(3));
    let here = thread::current().id();
    let got = pool.broadcast(|ctx| (ctx.index(), thread::current().id()));
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], (0, here));
    assert!(got[1..].iter().all(|&(_, id)| id != here));
    // From the free function too.
    assert_eq!(magpie::broadcast(|ctx| ctx.index()), vec![0, 1, 2]);
}

#[test]
fn spawned_tasks_run_elsewhere_or_when_the_thread_comes_in() {
    // Two workers: the other one runs a spawn while this thread blocks outside the pool.
    let pool = magpie::ThreadPool::from(lent(2));
    let (tx, rx) = mpsc::channel();
    pool.spawn(move || tx.send(magpie::current_thread_index()).unwrap());
    assert_eq!(rx.recv().unwrap(), Some(1));

    // One worker, this thread: spawns wait for it, and `yield_now` or the drop runs them.
    let pool1 = {
        drop(pool);
        magpie::ThreadPool::from(lent(1))
    };
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let ran = ran.clone();
        pool1.spawn(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }
    while ran.load(Ordering::SeqCst) < 3 {
        assert!(magpie::yield_now().is_some());
    }
    for _ in 0..10 {
        let ran = ran.clone();
        magpie::spawn(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }
    drop(pool1); // runs the rest here, then stops lending
    assert_eq!(
        ran.load(Ordering::SeqCst),
        20,
        "a spawned task was lost or run twice"
    );
    assert_eq!(magpie::current_thread_index(), None);
}

#[test]
fn lending_twice_or_from_a_worker_is_refused_and_so_are_settings_that_need_every_worker() {
    let pool = lent(2);
    let again = Builder::default()
        .workers(2)
        .use_current_thread(true)
        .build();
    assert_eq!(again.unwrap_err(), Error::CurrentThreadInPool);
    let inside = pool.install(|| {
        Builder::default()
            .workers(2)
            .use_current_thread(true)
            .build()
    });
    assert_eq!(inside.unwrap_err(), Error::CurrentThreadInPool);
    drop(pool);
    // Once the pool is gone, the thread may be lent again.
    let pool = lent(2);
    drop(pool);
    let e = Builder::default()
        .workers(2)
        .trace(true)
        .use_current_thread(true)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("trace"), "{e}");
    let e = Builder::default()
        .workers(2)
        .squads(true)
        .use_current_thread(true)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("places"), "{e}");
}

#[test]
fn a_panic_reaches_the_caller_and_the_pool_stays_usable() {
    let pool = lent(2);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.install(|| magpie::join(|| panic!("boom"), || 1))
    }));
    assert!(r.is_err());
    let leaves = AtomicUsize::new(0);
    assert_eq!(pool.install(|| fib(20, &leaves)), 6765);
}

#[test]
fn a_pool_dropped_on_another_thread_waits_for_a_call_inside_and_lets_the_thread_go() {
    let (tx, rx) = mpsc::channel::<Pool>();
    let dropper = thread::spawn(move || {
        let pool = rx.recv().unwrap();
        thread::sleep(std::time::Duration::from_millis(20));
        drop(pool);
    });
    tx.send(lent(2)).unwrap();
    // Free-function calls keep entering the pool while it is dropped elsewhere; each one
    // either runs inside it or, once it is closing, on the global pool. None is lost.
    let mut total = 0u64;
    let mut rounds = 0;
    while magpie::current_thread_index() == Some(0) || rounds < 10 {
        let leaves = AtomicUsize::new(0);
        total += magpie::join(|| fib(16, &leaves), || 1).0;
        assert_eq!(leaves.load(Ordering::Relaxed), 1597);
        rounds += 1;
    }
    assert_eq!(total, 987 * rounds);
    dropper.join().unwrap();
    assert_eq!(magpie::current_thread_index(), None);
}

#[test]
fn a_lending_thread_that_ends_leaves_a_pool_that_still_drops() {
    let (tx, rx) = mpsc::channel::<Pool>();
    thread::spawn(move || {
        let pool = lent(2);
        let leaves = AtomicUsize::new(0);
        assert_eq!(pool.install(|| fib(20, &leaves)), 6765);
        tx.send(pool).unwrap();
    })
    .join()
    .unwrap();
    let pool = rx.recv().unwrap();
    // Worker 1 still runs work given from outside.
    assert_eq!(pool.install(magpie::current_thread_index), Some(1));
    drop(pool);
}

/// Calls one after another start on the fiber the lent thread parked as it left the last one:
/// none makes and ends a fiber of its own.
#[test]
fn calls_one_after_another_reuse_the_lent_threads_fiber() {
    let pool = lent(1);
    assert_eq!(pool.install(|| 1), 1);
    let before = pool.stats().fibers_created;
    for i in 0..200 {
        let leaves = AtomicUsize::new(0);
        assert_eq!(pool.install(|| fib(10, &leaves)), 55, "call {i}");
        assert_eq!(leaves.load(Ordering::Relaxed), 89, "call {i}");
    }
    let made = pool.stats().fibers_created - before;
    assert_eq!(made, 0, "200 calls made {made} fibers");
}
