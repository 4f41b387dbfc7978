//! What a join per call can cost at the least: fib(n) without a cutoff, the serial twin against
//! joins that do less and less of what a runtime's join must do, and against magpie and chili at
//! one worker. Every version runs in the same process, round robin, each result checked against
//! the closed form.
//!
//! * `call pair`: a join that is a function of its own (not inlined into the caller) and does
//!   nothing but call its two halves: the floor of any runtime whose join is a call.
//! * `+ unwind`: the same, with the second half run also when the first panics, as every join
//!   must (a panic in a half reaches the caller after both halves ran).
//! * `+ depth`: the same, keeping a frame depth in a thread-local cell, as a runtime that bounds
//!   its stacks or its deques must, and testing the stack pointer against a limit.
//!
//! A user's crate built with cargo's default release profile, like the other programs here.
//!
//!     join_floor [N] [RUNS]        (defaults: 34, 7)

use magpie_downstream::floor::{call_pair, depth_pair, unwind_pair};
use std::time::Instant;

fn serial(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    serial(n - 1) + serial(n - 2)
}

fn fib_pair(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = call_pair(|| fib_pair(n - 1), || fib_pair(n - 2));
    a + b
}

fn fib_unwind(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = unwind_pair(|| fib_unwind(n - 1), || fib_unwind(n - 2));
    a + b
}

fn fib_depth(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = depth_pair(|| fib_depth(n - 1), || fib_depth(n - 2));
    a + b
}

fn magpie_fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| magpie_fib(n - 1), || magpie_fib(n - 2));
    a + b
}

fn chili_fib(s: &mut chili::Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| chili_fib(s, n - 1), |s| chili_fib(s, n - 2));
    a + b
}

fn main() {
    let usage = "join_floor [N] [RUNS]";
    let n = magpie_downstream::arg(1, 34, 1, 60, "N", usage);
    let runs = magpie_downstream::arg(2, 7, 1, 1_000_000, "RUNS", usage) as usize;
    let want = magpie_downstream::fib_expected(n);
    magpie_downstream::floor::set_stack_limit();
    let pools = magpie_downstream::Pools::new();
    let (magpie1, chili1) = (&pools.magpie1, &pools.chili1);
    type Run<'a> = Box<dyn Fn() -> u64 + 'a>;
    let n = std::hint::black_box(n);
    let versions: Vec<(&str, Run)> = vec![
        ("serial", Box::new(|| serial(n))),
        ("call pair", Box::new(|| fib_pair(n))),
        ("+ unwind", Box::new(|| fib_unwind(n))),
        ("+ depth", Box::new(|| fib_depth(n))),
        ("magpie 1", Box::new(|| magpie1.install(|| magpie_fib(n)))),
        (
            "chili 1",
            Box::new(|| chili1.scope().join(|s| chili_fib(s, n), |_| 0).0),
        ),
    ];
    let med = magpie_downstream::round_robin(versions.len(), runs, |i| {
        let (name, f) = &versions[i];
        let t = Instant::now();
        let got = f();
        let s = t.elapsed().as_secs_f64();
        if got != want {
            return Err(format!("{name}: fib({n}) = {got}, expected {want}"));
        }
        Ok(s)
    });
    println!("fib({n}) = {want}, verified on every run; medians of {runs} runs, × serial");
    for ((name, _), m) in versions.iter().zip(&med) {
        println!("  {name:<10} {:>9.1} ms {:>6.2}×", m * 1e3, m / med[0]);
    }
}
