//! Tracing a run: the steal tree, its file, and a timeline in Perfetto.
//!
//!     cargo run --release -p magpie --example trace_perfetto
//!
//! A pool built with `trace(true)` records which work moved between workers (a steal tree);
//! `Pool::trace()` reads it back. The example runs fib a few times, writes the trace file with
//! `Trace::write_to` (`Builder::trace_to(path)` or `MAGPIE_TRACE=path` would write it when the
//! pool is dropped), reads it back, and checks it against the run: one phase list per worker,
//! one root phase per `install`, and at least as many phases begun by a steal or a resumption as
//! the pool's counters report steals. The library writes only its own binary format; the
//! `magpie` CLI converts it to Perfetto / Chrome JSON with the command the example prints:
//!
//!     cargo run --release -p magpie-cli -- trace export /tmp/magpie-example.mtrace --format perfetto -o /tmp/magpie-example.json
//!
//! Open that JSON at <https://ui.perfetto.dev> ("Open trace file"), or in chrome://tracing: a
//! track per worker, a slice per working phase, a flow arrow per steal.

use magpie::trace::{Origin, Trace};

fn fib(n: u64) -> u64 {
    if n < 20 {
        return if n < 2 { n } else { fib(n - 1) + fib(n - 2) };
    }
    let (a, b) = magpie::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workers = 2;
    let pool = magpie::Pool::builder()
        .workers(workers)
        .trace(true)
        .build()?;
    let installs = 3;
    for _ in 0..installs {
        assert_eq!(pool.install(|| fib(30)), 832_040);
    }
    let trace = pool.trace().expect("the pool traces");
    let stats = pool.stats();
    let steals = stats.steals_child + stats.steals_continuation;

    let dir = std::env::temp_dir();
    let (path, json) = (
        dir.join("magpie-example.mtrace"),
        dir.join("magpie-example.json"),
    );
    trace.write_to(&mut std::fs::File::create(&path)?)?;
    let back = Trace::read_from(&mut std::fs::File::open(&path)?)?;
    assert_eq!(back, trace, "the file reads back as the trace written");

    let phases: Vec<_> = back.phases.iter().flatten().collect();
    let began = |f: fn(&Origin) -> bool| phases.iter().filter(|p| f(&p.origin)).count();
    let roots = began(|o| matches!(o, Origin::Root { .. }));
    let taken = began(|o| matches!(o, Origin::Stolen { .. } | Origin::Resumed { .. }));
    assert_eq!(back.workers(), workers, "one phase list per worker");
    assert_eq!(roots, installs, "one root phase per install");
    assert!(
        taken as u64 >= steals,
        "{taken} phases taken, {steals} steals"
    );

    println!("fib(30) = 832040, {installs} times on {workers} workers");
    let (n, recorded) = (phases.len(), back.steal_count());
    println!(
        "trace: {} workers, {n} phases, {recorded} steals recorded",
        back.workers()
    );
    println!(
        "pool counted {steals} steals; busy ns per worker {:?}",
        back.busy_ns()
    );
    println!("trace file: {}", path.display());
    println!("convert it for https://ui.perfetto.dev with:");
    let (path, json) = (path.display(), json.display());
    println!(
        "  cargo run --release -p magpie-cli -- trace export {path} --format perfetto -o {json}"
    );
    Ok(())
}
