//! `magpie corun`: two programs co-running, the experiment of DWS (Chen et al.) §4. Each program
//! is this binary in a process of its own (`magpie corun-child`, see [`child`]) running one
//! kernel over and over on a pool whose sharing mode is set by `MAGPIE_SHARE`. For each mode, each
//! program first runs alone; then both run side by side, each repeatedly, so their runs overlap
//! completely (the paper's Fig. 3), until each has completed `--runs` runs and `--min-seconds`
//! have passed; both are then killed at once and the runs they were in are discarded. A program's
//! co-run time is the mean of its counted runs (Eq. 2), its slowdown that over its mean alone.
//!
//! Every phase has a fresh core table of its own in a private directory (mode 0700) that corun
//! creates and removes, named by `MAGPIE_SHARE_TABLE`, so neither a table left by other programs
//! nor the cores a killed child still holds carry into the next phase. While co-running, corun
//! samples the cores each program holds in that table and the cores it uses (CPU time over wall
//! time); `--out` writes them to `corun.json` and plots them in `index.html`
//! ([`render::corun`](crate::render::corun)).
//!
//! The children are guards (`measure::corun`'s `Child`): whatever path the command leaves by
//! (success, an error, a panic), every child is killed and reaped, and the directory removed.

pub(crate) mod child;

use crate::args::{
    kernels_help, parse_min_seconds, parse_program, parse_runs, parse_seconds, parse_size,
    parse_workers, push_new,
};
use crate::failure::Failure;
use crate::measure::corun::{measure, Plan};
use crate::model::corun::ProgramSpec;
use crate::model::corun::{Report, WHO};
use crate::render::corun::table;
use clap::Args;
use magpie_bench::Size;
use std::path::{Path, PathBuf};

/// Sharing modes, in the order given, without repeats.
#[derive(Clone, Debug)]
pub(crate) struct ModeList(pub Vec<magpie::dws::SharingMode>);

fn parse_mode_list(s: &str) -> Result<ModeList, String> {
    let mut v = vec![];
    for m in s.split(',') {
        push_new(&mut v, m.parse::<magpie::dws::SharingMode>()?);
    }
    Ok(ModeList(v))
}

fn corun_help() -> String {
    format!(
        "Method (DWS §4, Fig. 3): for each mode, each program first runs alone for --solo-runs \
         runs; then both start together, each running its kernel over and over, until each has \
         completed at least --runs runs and at least --min-seconds have passed; then both are \
         killed at once, and the run each was in the middle of is discarded. Every counted run \
         thus ran while the other program was running too.\n\n\
         Each program is this binary in a process of its own (`magpie corun-child`), on a pool \
         of --workers workers built as `magpie bench` builds one (the MAGPIE_* variables apply), \
         with MAGPIE_SHARE set to the mode and MAGPIE_SHARE_TABLE to a fresh core table in a \
         private directory that corun creates (mode 0700) and removes at the end, so a table \
         left by other programs plays no part. Each run's result is verified; before its timed \
         runs each program does one verified warm-up run, untimed.\n\n\
         Columns: solo s = the mean time of a run alone; co-run s = the mean time of a run while \
         co-running (T_i of the paper's Eq. 2); runs = the runs counted co-running; slower = \
         co-run s ÷ solo s (`slowdown` in --json); combined = the sum of both programs' \
         slowdowns (2.00× = no interference).\n\n\
         While co-running, every --sample-ms corun records the cores each program holds in the \
         core table (only dws and ep hold cores) and the cores it uses (CPU time of all its \
         threads from /proc/<pid>/task/*/schedstat over wall time); --out DIR writes them with \
         the results to DIR/corun.json and plots them in DIR/index.html.\n\n\
         Example:\n  magpie corun fib::15 sort --mode dws,off --out corun-report\n\n{}",
        kernels_help()
    )
}

/// `magpie corun`.
#[derive(Args, Debug)]
#[command(after_long_help = corun_help())]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub(crate) struct CorunArgs {
    /// The first program: KERNEL[:N[:GRAIN]], e.g. fib, fib:30, fib:30:15 or fib::15 (N from
    /// --size; `--help` lists the kernels, what N means and their grains).
    #[arg(value_parser = parse_program)]
    pub a: ProgramSpec,
    /// The second program, the same way.
    #[arg(value_parser = parse_program)]
    pub b: ProgramSpec,
    /// Sharing modes to compare, comma-separated: dws, abp, ep, off.
    #[arg(long, default_value = "dws,abp,ep,off", value_parser = parse_mode_list)]
    pub mode: ModeList,
    /// Size preset for the N not given: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Worker threads of each program's pool.
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Runs of each program alone, per mode (their mean is solo s).
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub solo_runs: usize,
    /// The co-run lasts until each program has completed at least this many runs ...
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// ... and at least this many seconds have passed since both started.
    #[arg(long, default_value_t = 1.0, value_parser = parse_min_seconds)]
    pub min_seconds: f64,
    /// Milliseconds between two samples of the cores held and used.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub sample_ms: u64,
    /// A phase (a program alone, or the co-run) that takes longer than this many seconds is
    /// stopped and reported as an error.
    #[arg(long, default_value_t = 600.0, value_parser = parse_seconds)]
    pub timeout: f64,
    /// Print one JSON array, one object per mode, instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write DIR/corun.json (the results and the samples) and DIR/index.html (a plot per mode)
    /// [default: no report folder].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl CorunArgs {
    /// The co-run these arguments ask for (their output options aside).
    fn plan(&self) -> Plan {
        Plan {
            a: self.a,
            b: self.b,
            modes: self.mode.0.clone(),
            size: self.size,
            workers: self.workers,
            solo_runs: self.solo_runs,
            runs: self.runs,
            min_seconds: self.min_seconds,
            sample_ms: self.sample_ms,
            timeout: self.timeout,
        }
    }
}

pub(crate) fn run(a: CorunArgs) -> Result<(), Failure> {
    // A report folder that cannot be made fails now, not after the experiment.
    if let Some(out) = &a.out {
        std::fs::create_dir_all(out).map_err(|e| {
            Failure::Failed(format!(
                "cannot create {}: {e}; choose a folder you can write with --out",
                out.display()
            ))
        })?;
    }
    let report = measure(&a.plan())?;
    if a.json {
        let json = serde_json::to_string_pretty(&report.rows)
            .map_err(|e| Failure::Failed(format!("cannot serialize the results: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", table(&report));
    }
    if let Some(out) = &a.out {
        write_report(out, &report)?;
        eprintln!(
            "report written to {} (index.html, corun.json)",
            out.display()
        );
    }
    Ok(())
}

fn write_report(out: &Path, report: &Report) -> Result<(), Failure> {
    let json = serde_json::to_string_pretty(report)
        .map_err(|e| Failure::Failed(format!("cannot serialize the report: {e}")))?;
    for (name, text) in [
        ("corun.json", json),
        ("index.html", crate::render::corun::page(report, &WHO)),
    ] {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| {
            Failure::Failed(format!(
                "cannot write {}: {e}; choose a folder you can write with --out",
                p.display()
            ))
        })?;
    }
    Ok(())
}
