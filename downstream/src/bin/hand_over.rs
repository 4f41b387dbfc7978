//! What oldest-first hand-over's record costs the finest-grained joins: fib(N) without a cutoff
//! at 2 workers, on a pool with the hand-over (the default) and on one built with
//! `oldest_first(false)`, alternated round robin in one process. Every result is checked against
//! the closed form; prints the medians and on ÷ off.
//!
//!     hand_over [N] [RUNS]        (defaults: 32, 15)

use std::time::Instant;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn main() {
    let usage = "hand_over [N] [RUNS]";
    let n = magpie_downstream::arg(1, 32, 2, 45, "N", usage);
    let runs = magpie_downstream::arg(2, 15, 1, 1000, "RUNS", usage) as usize;
    let want = magpie_downstream::fib_expected(n);
    let pool = |on| {
        magpie::Pool::builder()
            .workers(2)
            .oldest_first(on)
            .build()
            .expect("magpie pool")
    };
    let pools = [pool(true), pool(false)];
    let med = magpie_downstream::round_robin(2, runs, |i| {
        let t = Instant::now();
        let got = pools[i].install(|| fib(n));
        let s = t.elapsed().as_secs_f64();
        if got != want {
            return Err(format!("fib({n}) = {got}, expected {want}"));
        }
        Ok(s)
    });
    println!(
        "fib({n}) = {want} at 2 workers, verified on every run; medians of {runs} runs: hand-over on {:.2} ms, off {:.2} ms, on ÷ off {:.3}",
        med[0] * 1e3,
        med[1] * 1e3,
        med[0] / med[1]
    );
}
