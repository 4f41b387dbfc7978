//! The program `scripts/join-instructions.sh` runs under callgrind to count what a join nobody
//! steals costs in instructions: fib(N) without a cutoff, one join per call, on one worker of a
//! pool in which no other worker runs or steals.
//!
//!     join_instructions MODE [N]      (MODE: serial, one, two, two-quiet, two-plain,
//!                                      outside; N: default 20)
//!
//! * `serial`: the serial twin, the baseline.
//! * `one`: a one-worker pool (no thieves: the plain in-place join).
//! * `two`: a two-worker pool with oldest-first hand-over (the default), whose other worker is
//!   held in a blocking wait for the whole run, so that no thief ever asks: the in-place join
//!   that keeps a record of its pending half.
//! * `two-quiet`: the same pool as `two`, its worker having first run fib(N + 5) uncounted, so
//!   that it has gone long without a thief's request and records only its shallowest joins
//!   (`promote.rs`, "Which joins record"): the in-place join that records nothing.
//! * `two-plain`: the same with `oldest_first(false)`.
//! * `outside`: not a join but what a call from outside the pool costs: [`CALLS`] calls, one
//!   after another, of a closure that returns its argument, from a plain thread into a
//!   one-worker pool whose worker sleeps (each runs on the calling thread, in the sleeping
//!   worker's seat). The answer is the sum of the arguments.
//!
//! The counted work is the call to `counted`, which the script names to callgrind with
//! `--toggle-collect`: its inclusive count is the computation alone, on the thread that runs
//! it, without the pool's start, the hand-off into the pool or the idle worker. The answer is
//! checked against the closed form and printed, with the number of joins made.

use std::sync::{Arc, Condvar, Mutex};

fn serial(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    serial(n - 1) + serial(n - 2)
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// The counted computation. Never inlined, so that callgrind can name it.
#[inline(never)]
fn counted(parallel: bool, n: u64) -> u64 {
    if parallel {
        fib(std::hint::black_box(n))
    } else {
        serial(std::hint::black_box(n))
    }
}

/// The calls `outside` makes.
const CALLS: u64 = 1000;

/// The counted calls from outside. Never inlined, so that callgrind can name it.
#[inline(never)]
fn counted_calls(pool: &magpie::Pool) -> u64 {
    let mut sum = 0;
    for i in 0..CALLS {
        sum += pool.install(|| std::hint::black_box(i));
    }
    sum
}

/// `outside`: the counted calls into a one-worker pool, once its worker sleeps.
fn outside() {
    let pool = magpie::Pool::builder()
        .workers(1)
        .build()
        .unwrap_or_else(|e| usage(&format!("cannot build the pool: {e}")));
    let t = std::time::Instant::now();
    while pool.sleeping_workers() < 1 {
        if t.elapsed() > std::time::Duration::from_secs(60) {
            eprintln!("error: the pool's worker never slept");
            std::process::exit(1);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let got = counted_calls(&pool);
    if got != CALLS * (CALLS - 1) / 2 {
        eprintln!(
            "error: the calls summed to {got}, expected {}",
            CALLS * (CALLS - 1) / 2
        );
        std::process::exit(1);
    }
    println!("sum {got}; calls: {CALLS}");
}

fn expected(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn usage(msg: &str) -> ! {
    eprintln!("error: {msg}");
    eprintln!(
        "usage: join_instructions MODE [N]   (MODE: serial, one, two, two-quiet, two-plain, \
         outside; N: 2 to 40)"
    );
    std::process::exit(2);
}

fn main() {
    let mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| usage("MODE is missing"));
    let n = match std::env::args().nth(2).map(|s| s.parse::<u64>()) {
        None => 20,
        Some(Ok(n)) if (2..=40).contains(&n) => n,
        Some(_) => usage("N must be a whole number from 2 to 40"),
    };
    let got = match mode.as_str() {
        "outside" => return outside(),
        "serial" => counted(false, n),
        "one" => {
            let pool = magpie::Pool::builder()
                .workers(1)
                .build()
                .unwrap_or_else(|e| usage(&format!("cannot build the pool: {e}")));
            pool.install(|| counted(true, n))
        }
        "two" => on_one_of_two(true, false, n),
        "two-quiet" => on_one_of_two(true, true, n),
        "two-plain" => on_one_of_two(false, false, n),
        other => usage(&format!("unknown MODE '{other}'")),
    };
    let want = expected(n);
    if got != want {
        eprintln!("error: fib({n}) = {got}, expected {want}");
        std::process::exit(1);
    }
    // fib(n) without a cutoff makes fib(n + 1) - 1 joins (one per call with n >= 2).
    println!("fib({n}) = {got}; joins: {}", expected(n + 1) - 1);
}

/// fib(n) on a two-worker pool whose other worker waits, blocked, until the run is over; with
/// `quiet`, after an uncounted fib(n + 5) on the same worker.
fn on_one_of_two(oldest_first: bool, quiet: bool, n: u64) -> u64 {
    let pool = magpie::Pool::builder()
        .workers(2)
        .oldest_first(oldest_first)
        .build()
        .unwrap_or_else(|e| usage(&format!("cannot build the pool: {e}")));
    // (held, released): the holding task says it holds a worker, then waits for the release.
    let gate = Arc::new((Mutex::new((false, false)), Condvar::new()));
    std::thread::scope(|s| {
        let g = Arc::clone(&gate);
        let pool = &pool;
        s.spawn(move || {
            pool.install(move || {
                let (m, cv) = &*g;
                let mut st = m.lock().unwrap();
                st.0 = true;
                cv.notify_all();
                while !st.1 {
                    st = cv.wait(st).unwrap();
                }
            })
        });
        let (m, cv) = &*gate;
        let mut st = m.lock().unwrap();
        while !st.0 {
            st = cv.wait(st).unwrap();
        }
        drop(st);
        // One worker is held: the other takes this install, and nobody can steal from it.
        let r = pool.install(|| {
            if quiet {
                let warm = fib(std::hint::black_box(n + 5));
                if warm != expected(n + 5) {
                    eprintln!(
                        "error: fib({}) = {warm}, expected {}",
                        n + 5,
                        expected(n + 5)
                    );
                    std::process::exit(1);
                }
            }
            counted(true, n)
        });
        m.lock().unwrap().1 = true;
        cv.notify_all();
        r
    })
}
