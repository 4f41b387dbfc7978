//! `magpie`: the command-line front end of the magpie benchmarks. `magpie bench` times one
//! kernel (SLAW (Guo et al., IPDPS 2010) §V: Fib, FJ, PDFS) on magpie, its serial twin and its
//! peers, and prints a table or one JSON object; `magpie suite` (what `magpie` alone runs) runs
//! every kernel under every policy at 1 and all workers with the peers, prints a table and writes
//! a report folder (results.json, index.html with SVG charts); `magpie report` runs every kernel
//! under every policy and worker count and writes a Markdown report; `magpie idle` measures the
//! CPU an idle pool uses; `magpie trace` runs a kernel once with steal-tree tracing and writes the
//! trace file, and `magpie trace export` turns one into Perfetto JSON, Cilkscale-style CSV or an
//! SVG timeline; `magpie race` runs a kernel under the race checker (exit 3: a race found);
//! `magpie share status` shows the core allocation table co-running magpie
//! programs share (DWS §3.1); `magpie corun` runs two kernels side by side as separate
//! processes under each sharing mode and reports each one's slowdown (DWS §4). Exit codes: 0
//! success, 1 a run failed verification (or crashed), 2 bad input (a trace file that cannot be
//! read, or a core table magpie refuses, included), 3 magpie stopped the kernel at its stack
//! limit (for `corun`: the code its failing program exited with).

mod bench;
// The doc comments in `cli` are the commands' `--help` text, written for a terminal: `<kernel>`
// and `[N:GRAIN]` there are placeholders, not HTML tags or links.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
mod cli;
mod corun;
mod failure;
mod idle;
mod locality;
mod measure;
mod model;
mod race;
mod render;
mod report;
mod schedule;
mod share;
mod splice;
mod suite;
mod trace;

use clap::Parser;
use failure::Failure;
use std::process::ExitCode;

/// Keeps magpie's stack-limit stops (panics carrying a `magpie::Error`) off stderr: the command
/// reports them as one `error:` line. Other panics keep the default report.
fn quiet_magpie_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if magpie::Error::from_panic(info.payload()).is_none() {
            default(info)
        }
    }));
}

/// Clap's error as one line: the text up to the first blank line, lines joined.
fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    if line.starts_with("error:") {
        line
    } else {
        format!("error: {line}")
    }
}

/// Lets a closed pipe end the process quietly, as it ends other command-line tools (`magpie
/// ... | head`), instead of `println!` panicking on the write error: Rust starts programs with
/// SIGPIPE ignored.
fn default_sigpipe() {
    // SAFETY: restores the default disposition of one signal before any thread is started; no
    // handler runs Rust code.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    default_sigpipe();
    quiet_magpie_panics();
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    ExitCode::SUCCESS
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    eprintln!("error: missing command: expected `suite`, `bench`, `report`, `idle` or `trace` (see `magpie --help`)");
                    ExitCode::from(2)
                }
                _ => {
                    eprintln!("{}", one_line(&e.to_string()));
                    ExitCode::from(2)
                }
            };
        }
    };
    // `magpie` alone is `magpie suite` with its defaults.
    let command = args.command.unwrap_or_else(cli::Command::default_suite);
    let r = match command {
        cli::Command::Suite(a) => suite::run(a),
        cli::Command::Bench(a) => bench::run(a),
        cli::Command::Report(a) => report::run(a),
        cli::Command::Idle(a) => idle::run(a),
        cli::Command::Trace(a) => trace::run(a),
        cli::Command::Schedule(a) => schedule::run(a),
        cli::Command::Topology(a) => topology(a),
        cli::Command::Locality(a) => locality::run(a),
        cli::Command::Share(a) => share::run(a),
        cli::Command::Corun(a) => corun::run(a),
        cli::Command::Splice(a) => splice::run(a),
        cli::Command::Race(a) => race::run(a),
        cli::Command::CorunChild(a) => corun::child::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message());
            ExitCode::from(f.code())
        }
    }
}

/// `magpie topology`: the detected machine, or the virtual topology given or in MAGPIE_TOPOLOGY.
fn topology(a: cli::TopologyArgs) -> Result<(), Failure> {
    let spec = a
        .virtual_topology
        .or_else(|| std::env::var("MAGPIE_TOPOLOGY").ok());
    let t = match spec {
        Some(s) => magpie::Topology::parse(&s).map_err(Failure::from_magpie)?,
        None => magpie::Topology::detect(),
    };
    if a.json {
        let sockets: Vec<serde_json::Value> = t
            .sockets
            .iter()
            .map(|s| {
                serde_json::json!({
                    "cpus": s.cores.iter().map(|c| c.cpu).collect::<Vec<_>>(),
                    "numa_nodes": s.cores.iter().map(|c| c.numa_node).collect::<Vec<_>>(),
                    "llc_bytes": s.llc_bytes,
                })
            })
            .collect();
        let v = serde_json::json!({
            "virtual": t.is_virtual,
            "detector": t.detector.to_string(),
            "sockets": sockets,
            "cores": t.cores(),
        });
        println!("{v}");
    } else {
        print!("{t}");
    }
    Ok(())
}
