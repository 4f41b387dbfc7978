//! What the downstream programs share: timing several versions of one computation round robin,
//! so that drifting machine load hits every version alike, with every result checked.

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Runs each of `versions` versions once as a warm-up, then `runs` times, round robin:
/// `run(i)` runs version `i` and returns the seconds to count, or what was wrong with its result,
/// which this prints before exiting with status 1. Returns each version's median.
pub fn round_robin(
    versions: usize,
    runs: usize,
    mut run: impl FnMut(usize) -> Result<f64, String>,
) -> Vec<f64> {
    let mut times = vec![Vec::with_capacity(runs); versions];
    for round in 0..=runs {
        for (i, t) in times.iter_mut().enumerate() {
            match run(i) {
                Ok(s) if round > 0 => t.push(s),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("error: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    times.iter_mut().map(|t| median(t)).collect()
}

/// A pool of 1 and one of 2 workers of each runtime the programs compare.
pub struct Pools {
    pub magpie1: magpie::Pool,
    pub magpie2: magpie::Pool,
    pub rayon1: rayon::ThreadPool,
    pub rayon2: rayon::ThreadPool,
    pub chili1: chili::ThreadPool,
    pub chili2: chili::ThreadPool,
}

impl Pools {
    pub fn new() -> Pools {
        let magpie = |w| {
            magpie::Pool::builder()
                .workers(w)
                .build()
                .expect("magpie pool")
        };
        let rayon = |w| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .expect("rayon pool")
        };
        // chili's thread count includes the calling thread.
        let chili = |w| {
            chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            })
        };
        Pools {
            magpie1: magpie(1),
            magpie2: magpie(2),
            rayon1: rayon(1),
            rayon2: rayon(2),
            chili1: chili(1),
            chili2: chili(2),
        }
    }
}

impl Default for Pools {
    fn default() -> Self {
        Pools::new()
    }
}

/// The time, in ns, for a cache line to go from this thread to another and back (a flag
/// ping-ponged 20,000 times between this thread and a new one, once that one runs); `None` on
/// a machine with one CPU, where the two would only take turns. On a shared virtual machine it
/// follows where the hypervisor put the two virtual CPUs (on one machine of this project's it
/// moved between about 30, 85 and 400-800 ns within one run), and a steal pays it a few times.
pub fn round_trip_ns() -> Option<f64> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    use std::sync::atomic::{AtomicU64, Ordering};
    const N: u64 = 20_000;
    let flag = std::sync::Arc::new(AtomicU64::new(0));
    let other = flag.clone();
    // The other thread says it runs (1), then answers each even value with the next odd one.
    let t = std::thread::spawn(move || {
        other.store(1, Ordering::Release);
        for i in 1..=N {
            while other.load(Ordering::Acquire) != 2 * i {
                std::hint::spin_loop();
            }
            other.store(2 * i + 1, Ordering::Release);
        }
    });
    while flag.load(Ordering::Acquire) != 1 {
        std::hint::spin_loop();
    }
    let start = std::time::Instant::now();
    for i in 1..=N {
        flag.store(2 * i, Ordering::Release);
        while flag.load(Ordering::Acquire) != 2 * i + 1 {
            std::hint::spin_loop();
        }
    }
    let ns = start.elapsed().as_secs_f64() * 1e9 / N as f64;
    t.join().expect("the ping-pong thread");
    Some(ns)
}

/// fib(n) by iteration: the known answer.
pub fn fib_expected(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// The whole-number argument `i` (from 1), `default` when absent; a value outside `lo..=hi`, or
/// not a number, is an error that names `what` and prints `usage`, with exit status 2.
pub fn arg(i: usize, default: u64, lo: u64, hi: u64, what: &str, usage: &str) -> u64 {
    match std::env::args().nth(i).map(|s| (s.parse::<u64>(), s)) {
        None => default,
        Some((Ok(v), _)) if (lo..=hi).contains(&v) => v,
        Some((_, s)) => {
            eprintln!("error: {what} must be a whole number from {lo} to {hi}, not '{s}'");
            eprintln!("usage: {usage}");
            std::process::exit(2);
        }
    }
}

/// Joins that do less than a runtime's: the floor under a join per call, for the programs that
/// set a runtime against it (`join_floor`, `tree_sum`). Each is a function of its own, as a
/// runtime's join is, and runs both halves on the calling thread.
///
/// * [`call_pair`](floor::call_pair) only calls its two halves: the floor of any join that is a
///   call.
/// * [`unwind_pair`](floor::unwind_pair) also runs the second half when the first panics, as
///   every join must (a panic in a half reaches the caller after both halves ran).
/// * [`depth_pair`](floor::depth_pair) also keeps a frame depth in a thread-local cell and
///   tests the stack pointer against a limit, as a runtime that bounds its stacks or its deques
///   must.
pub mod floor {
    use std::cell::Cell;
    use std::panic::{self, AssertUnwindSafe};

    thread_local! {
        static DEPTH: Cell<u32> = const { Cell::new(0) };
        static LIMIT: Cell<usize> = const { Cell::new(0) };
    }

    /// Sets this thread's stack limit for [`depth_pair`] far below its stack, so that the test
    /// is made on every join and never taken.
    pub fn set_stack_limit() {
        LIMIT.with(|c| c.set(4096));
    }

    #[inline(never)]
    pub fn call_pair<A: FnOnce() -> RA, B: FnOnce() -> RB, RA, RB>(a: A, b: B) -> (RA, RB) {
        (a(), b())
    }

    #[cold]
    #[inline(never)]
    fn second_after_panic<B: FnOnce() -> RB, RB, RA>(
        b: B,
        p: Box<dyn std::any::Any + Send>,
    ) -> (RA, RB) {
        let _ = panic::catch_unwind(AssertUnwindSafe(b));
        panic::resume_unwind(p)
    }

    #[inline(never)]
    pub fn unwind_pair<A: FnOnce() -> RA, B: FnOnce() -> RB, RA, RB>(a: A, b: B) -> (RA, RB) {
        match panic::catch_unwind(AssertUnwindSafe(a)) {
            Ok(ra) => (ra, b()),
            Err(p) => second_after_panic(b, p),
        }
    }

    #[inline(never)]
    pub fn depth_pair<A: FnOnce() -> RA, B: FnOnce() -> RB, RA, RB>(a: A, b: B) -> (RA, RB) {
        let here = 0u8;
        if (std::ptr::addr_of!(here) as usize) < LIMIT.with(Cell::get) {
            panic!("out of stack");
        }
        let d = DEPTH.with(Cell::get);
        DEPTH.with(|c| c.set(d + 1));
        let r = match panic::catch_unwind(AssertUnwindSafe(a)) {
            Ok(ra) => (ra, b()),
            Err(p) => second_after_panic(b, p),
        };
        DEPTH.with(|c| c.set(d));
        r
    }
}
