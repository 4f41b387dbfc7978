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

mod args;
mod cli;
// The doc comments on the commands' arguments are their `--help` text, written for a terminal:
// `<kernel>` and `[N:GRAIN]` there are placeholders, not HTML tags or links; the arguments that
// use them allow rustdoc's link and tag lints, and nothing else does.
mod commands;
mod failure;
mod format;
mod measure;
mod model;
mod render;

use clap::Parser;
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
    let r = command.run();
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message());
            ExitCode::from(f.code())
        }
    }
}
