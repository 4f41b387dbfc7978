//! fib(n) with no cutoff, as a downstream crate gets it: magpie at 1 and 2 workers against the
//! serial twin, rayon and chili, timed in the same run, alternating so that drifting machine load
//! hits every version alike; and magpie recording its schedule (`schedule::record`) and following
//! a recorded one (`Relaxed`, `Ordered`), against plain magpie. Every result is checked against
//! the closed form; the medians and the ratios are printed.
//!
//!     magpie-downstream [N] [RUNS]        (defaults: 36, 7)

use std::time::Instant;

fn serial(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    serial(n - 1) + serial(n - 2)
}

fn magpie_fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = magpie::join(|| magpie_fib(n - 1), || magpie_fib(n - 2));
    a + b
}

fn rayon_fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| rayon_fib(n - 1), || rayon_fib(n - 2));
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
    let usage = "magpie-downstream [N] [RUNS]";
    let n = magpie_downstream::arg(1, 36, 1, 60, "N", usage);
    let runs = magpie_downstream::arg(2, 7, 1, 1_000_000, "RUNS", usage) as usize;
    let want = magpie_downstream::fib_expected(n);
    let magpie_downstream::Pools {
        magpie1,
        magpie2,
        rayon1,
        rayon2,
        chili1,
        chili2,
    } = magpie_downstream::Pools::new();
    use magpie::schedule::{self, Constraint};
    let (_, template) = magpie2.install(|| schedule::record(|| magpie_fib(n)));
    type Run<'a> = Box<dyn Fn() -> u64 + 'a>;
    let versions: Vec<(&str, Run)> = vec![
        ("serial", Box::new(|| serial(std::hint::black_box(n)))),
        ("magpie 1", Box::new(|| magpie1.install(|| magpie_fib(n)))),
        ("magpie 2", Box::new(|| magpie2.install(|| magpie_fib(n)))),
        ("rayon 1", Box::new(|| rayon1.install(|| rayon_fib(n)))),
        ("rayon 2", Box::new(|| rayon2.install(|| rayon_fib(n)))),
        (
            "chili 1",
            Box::new(|| chili1.scope().join(|s| chili_fib(s, n), |_| 0).0),
        ),
        (
            "chili 2",
            Box::new(|| chili2.scope().join(|s| chili_fib(s, n), |_| 0).0),
        ),
        (
            "record 1",
            Box::new(|| magpie1.install(|| schedule::record(|| magpie_fib(n)).0)),
        ),
        (
            "record 2",
            Box::new(|| magpie2.install(|| schedule::record(|| magpie_fib(n)).0)),
        ),
        (
            "relaxed 2",
            Box::new(|| {
                magpie2.install(|| {
                    schedule::follow(&template, Constraint::Relaxed, || magpie_fib(n)).0
                })
            }),
        ),
        (
            "ordered 2",
            Box::new(|| {
                magpie2.install(|| {
                    schedule::follow(&template, Constraint::Ordered, || magpie_fib(n)).0
                })
            }),
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
    println!("fib({n}) = {want}, verified on every run; medians of {runs} runs");
    for ((name, _), m) in versions.iter().zip(&med) {
        println!("  {name:<9} {:>9.1} ms", m * 1e3);
    }
    let (ser, m1, m2, r1, r2, c1, c2) = (med[0], med[1], med[2], med[3], med[4], med[5], med[6]);
    println!(
        "1 worker ÷ serial:  magpie {:.2}  rayon {:.2}  chili {:.2}",
        m1 / ser,
        r1 / ser,
        c1 / ser
    );
    println!(
        "serial ÷ 2 workers: magpie {:.2}  rayon {:.2}  chili {:.2}",
        ser / m2,
        ser / r2,
        ser / c2
    );
    println!("magpie 2 workers ÷ rayon 2 workers: {:.2}", m2 / r2);
    println!(
        "schedules ÷ plain magpie: record 1 w {:.2}, record 2 w {:.2}, relaxed 2 w {:.2}, ordered 2 w {:.2} (template: {} cuts)",
        med[7] / m1,
        med[8] / m2,
        med[9] / m2,
        med[10] / m2,
        template.cuts().len()
    );
}
