//! A left-deep chain of joins: `chain(n) = join(|| chain(n - 1), || leaf(n))`, N levels deep,
//! each leaf a few microseconds of arithmetic. Its parallelism is all in the leaves, which wait
//! on the recursion's way back up. rayon publishes every leaf and reaches about 2x at 2 workers;
//! magpie took 2.5-2.9x the serial time until its workers kept trimmed spare fibers, about 1.04x
//! after that, and about 0.65x since a worker asked for work hands over its oldest pending join
//! half (docs/RESULTS.md, "A left-deep chain of joins"): this example measures it.
//!
//! Times the serial twin, magpie under each policy and rayon, at 1 and 2 workers, ROUNDS rounds
//! each (alternating), and prints the medians, each one's ratio to the serial twin and magpie's
//! pool statistics. Every run's sum is checked against the serial one, which is printed.
//!
//! cargo run --release -p magpie-bench --example chain -- [N] [LEAF] [ROUNDS]
//! (defaults: 2000 levels, 5000 steps a leaf, 11 rounds)

use magpie::Policy;
use magpie_bench::harness::{example_arg as arg, Timing};
use std::time::Instant;

fn leaf(i: u64, steps: u64) -> u64 {
    let mut x = i;
    for _ in 0..steps {
        x = std::hint::black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x >> 60
}

fn serial(n: u64, steps: u64) -> u64 {
    (0..=n).map(|i| leaf(i, steps)).sum()
}

fn magpie_chain(n: u64, steps: u64) -> u64 {
    if n == 0 {
        return leaf(0, steps);
    }
    let (a, b) = magpie::join(|| magpie_chain(n - 1, steps), || leaf(n, steps));
    a + b
}

fn rayon_chain(n: u64, steps: u64) -> u64 {
    if n == 0 {
        return leaf(0, steps);
    }
    let (a, b) = rayon::join(|| rayon_chain(n - 1, steps), || leaf(n, steps));
    a + b
}

fn main() {
    let n: u64 = arg(1, 2000);
    let steps: u64 = arg(2, 5000);
    let rounds = arg::<usize>(3, 11).max(1);
    let median = |times_s: Vec<f64>| Timing { times_s }.median().expect("at least one round");
    let want = serial(n, steps);
    println!("chain of {n} joins, leaves of {steps} steps; serial sum {want}");

    // A forced work-first chain nests every join on one fiber's stack, so one deeper than that
    // stack holds stops with magpie's stack-limit error: keep that panic's report quiet and say
    // so in the table instead.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if magpie::Error::from_panic(info.payload()).is_none() {
            default_hook(info);
        }
    }));
    let time = |f: &dyn Fn() -> u64| -> Option<f64> {
        let t = Instant::now();
        let got = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(got) => got,
            Err(p) if magpie::Error::from_panic(&*p).is_some() => return None,
            Err(p) => std::panic::resume_unwind(p),
        };
        let s = t.elapsed().as_secs_f64();
        if got != want {
            eprintln!("error: a run summed {got}, the serial twin {want}");
            std::process::exit(1);
        }
        Some(s)
    };
    // Each policy as built by default (with oldest-first hand-over: a worker asked for work
    // hands over its oldest pending join half), and the adaptive default without it
    // (`Builder::oldest_first(false)`: it publishes the join it is making), in one run.
    let configs = [
        (Policy::WorkFirst, true),
        (Policy::HelpFirst, true),
        (Policy::Adaptive, false),
        (Policy::Adaptive, true),
    ];
    for workers in [1, 2] {
        let pools: Vec<magpie::Pool> = configs
            .iter()
            .map(|&(p, oldest)| {
                magpie::Pool::builder()
                    .workers(workers)
                    .policy(p)
                    .oldest_first(oldest)
                    .build()
                    .unwrap()
            })
            .collect();
        let rayon_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .unwrap();
        let mut ser = Vec::new();
        let mut mag = vec![Vec::new(); pools.len()];
        let mut ray = Vec::new();
        for _ in 0..rounds {
            ser.extend(time(&|| serial(n, steps)));
            for (pool, ts) in pools.iter().zip(&mut mag) {
                ts.push(time(&|| pool.install(|| magpie_chain(n, steps))));
            }
            ray.extend(time(&|| rayon_pool.install(|| rayon_chain(n, steps))));
        }
        let s = median(ser);
        println!("{workers} worker(s): serial twin {s:.4} s");
        for ((&(p, oldest), ts), pool) in configs.iter().zip(mag).zip(&pools) {
            let name = if oldest {
                p.to_string()
            } else {
                format!("{p}, newest-first")
            };
            let Some(ts) = ts.into_iter().collect::<Option<Vec<f64>>>() else {
                println!(
                    "  magpie {name:<22} stopped at its stack limit (a forced work-first chain)"
                );
                continue;
            };
            let m = median(ts);
            let st = pool.stats();
            println!(
                "  magpie {name:<22} {m:.4} s  {:.2}x serial  (steals {}, promotions {}, suspensions {}, fibers created {}, trimmed {})",
                m / s,
                st.steals_child + st.steals_continuation,
                st.promotions,
                st.suspensions,
                st.fibers_created,
                st.fibers_trimmed
            );
        }
        let r = median(ray);
        println!(
            "  rayon                         {r:.4} s  {:.2}x serial",
            r / s
        );
    }
}
