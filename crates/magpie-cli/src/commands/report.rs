//! `magpie report`: every kernel under every policy at each worker count, with the serial twin
//! and the peers, as a Markdown report (tables per kernel, then derived figures, each with the
//! command that reproduces it). PDFS configurations run in a child process (`magpie bench pdfs
//! ... --json`) so that each one's peak RSS is its own; a work-first PDFS that magpie stops at its
//! stack limit is reported as "stopped", not as a failure.

use crate::args::{parse_runs, parse_size, parse_workers_list, WorkersList};
use crate::failure::Failure;
use crate::model::report::{section_from, Report};
use crate::model::POLICIES;
use clap::Args;
use magpie_bench::Kernel;
use magpie_bench::Size;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Worker counts to measure, comma-separated.
    #[arg(long, default_value = "1,2", value_parser = parse_workers_list)]
    pub workers_list: WorkersList,
    /// Timed runs of each configuration.
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// Size preset: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Where to write the Markdown report (it is also printed on stdout).
    #[arg(long, default_value = "target/magpie-report.md")]
    pub out: PathBuf,
}

pub(crate) fn run(a: ReportArgs) -> Result<(), Failure> {
    // Bad MAGPIE_* variables are bad input here too, though the report sets workers and policy.
    magpie::Builder::default()
        .from_env()
        .map_err(Failure::from_magpie)?;
    let runs = a.runs;
    let started = Instant::now();
    let plan = crate::measure::suite::Plan::new(
        Kernel::ALL.to_vec(),
        POLICIES.to_vec(),
        a.workers_list.0.clone(),
        crate::model::all_peers(),
        a.size,
        runs,
    );
    let (rows, _) = crate::measure::suite::measure_all(&plan, |_, _, _| {})?;

    let sections: Vec<_> = Kernel::ALL
        .iter()
        .map(|&k| section_from(k, k.size_n(a.size), &rows))
        .collect();

    // The idle pool: CPU used over one second by 2 sleeping workers.
    let idle = crate::measure::idle::measure(
        2,
        magpie::dws::SharingMode::Off,
        1.0,
        std::time::Duration::from_millis(100),
    )?;
    eprintln!(
        "[{:>7.1} s] idle pool of 2 workers: {idle:.3}% of one core",
        started.elapsed().as_secs_f64()
    );

    let report = Report {
        workers: a.workers_list.0.clone(),
        runs,
        size: a.size,
        sections,
        idle_pct: idle,
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    let md = crate::render::markdown::report(&report);
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::Failed(format!(
                "cannot create {}: {e}; choose a file you can write with --out",
                dir.display()
            ))
        })?;
    }
    std::fs::write(&a.out, &md).map_err(|e| {
        Failure::Failed(format!(
            "cannot write {}: {e}; choose a file you can write with --out",
            a.out.display()
        ))
    })?;
    print!("{md}");
    eprintln!("report written to {}", a.out.display());

    let failed = report.failed();
    crate::failure::none_failed(&failed)
}
