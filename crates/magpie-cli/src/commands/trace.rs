//! `magpie trace`: steal-tree traces (Lifflander's thesis, Ch. 4; the data model is
//! `magpie::trace`).
//!
//! - `magpie trace <kernel> -o run.mtrace` runs the kernel once on a pool that traces, verified
//!   as `magpie bench` verifies (a wrong result is an error and writes nothing), writes the trace
//!   file and prints a summary: workers, phases, steals, the storage per worker against the
//!   thesis's formulas and against storing the worker of every task, and the work and span of the
//!   steal tree.
//! - `magpie trace export run.mtrace --format perfetto|csv|svg` converts a trace file
//!   ([`perfetto`], [`csv`], [`svg`]).
//! - `magpie trace summary run.mtrace` prints the summary of a trace file.
//!
//! A trace file that cannot be read (missing, truncated, corrupted, of another format version, or
//! not a trace) is bad input: one `error:` line naming the file and the problem, exit code 2.

use crate::args::{kernels_help, parse_kernel, RunOptions};
use crate::failure::Failure;
use crate::measure::trace::{traced_run, write_trace};
use crate::model::trace::{analyse as analyse_trace, csv, Analysis, RunInfo, Summary, BURDEN_US};
use crate::render::trace::{perfetto, summary, svg, title};
use clap::{Args, Subcommand};
use magpie::trace::Trace;
use magpie_bench::Kernel;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `magpie trace`: either a kernel to run traced, or one of the commands that read a trace file.
#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_long_help = trace_help()
)]
pub(crate) struct TraceArgs {
    #[command(subcommand)]
    pub action: Option<TraceAction>,
    #[command(flatten)]
    pub run: TraceRunArgs,
}

fn trace_help() -> String {
    format!(
        "Examples:\n  \
         magpie trace fib --size ci --workers 2 -o fib.mtrace\n  \
         magpie trace export fib.mtrace --format perfetto -o fib.json   (open in ui.perfetto.dev)\n  \
         magpie trace export fib.mtrace --format csv                    (work, span, parallelism)\n  \
         magpie trace export fib.mtrace --format svg -o fib.svg         (per-worker timeline)\n  \
         magpie trace summary fib.mtrace\n\n{}",
        kernels_help()
    )
}

/// The commands that read a trace file.
#[derive(Subcommand, Debug)]
pub(crate) enum TraceAction {
    /// Convert a trace file: Perfetto / chrome://tracing JSON, Cilkscale-style CSV (work, span,
    /// parallelism per install region) or an SVG timeline with a utilisation curve.
    Export(ExportArgs),
    /// Print a trace file's summary (workers, phases, steals, storage per worker).
    Summary(SummaryArgs),
}

/// `magpie trace <kernel>`: one traced run.
#[derive(Args, Debug)]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub(crate) struct TraceRunArgs {
    /// The kernel (`magpie bench --help` lists them all).
    #[arg(value_parser = parse_kernel, required = true)]
    pub kernel: Option<Kernel>,
    /// Where to write the trace file [default: <kernel>.mtrace].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub opts: RunOptions,
    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `magpie trace export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Chrome trace-event JSON for Perfetto and chrome://tracing.
    Perfetto,
    /// OpenCilk Cilkscale's CSV columns.
    Csv,
    /// A hand-drawn SVG timeline.
    Svg,
}

fn parse_format(s: &str) -> Result<Format, String> {
    match s.trim() {
        "perfetto" | "json" | "chrome" => Ok(Format::Perfetto),
        "csv" | "cilkscale" => Ok(Format::Csv),
        "svg" => Ok(Format::Svg),
        other => Err(format!(
            "unknown format `{other}`: expected perfetto, csv or svg"
        )),
    }
}

fn parse_burden(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=1e6).contains(&x) => Ok(x),
        _ => Err("expected a burden in microseconds between 0 and 1000000".into()),
    }
}

/// `magpie trace export`.
#[derive(Args, Debug)]
#[command(
    after_long_help = "The csv columns are OpenCilk Cilkscale's, one row per install \
    region (install-N) and an overall row with an empty tag. work = the time workers spent running \
    the region's phases. span = the heaviest path through the observed steal tree, each phase a \
    serial strand weighing its busy time, a thief's path counting its victim's busy time up to \
    the steal: an estimate at the granularity of phases that depends on the schedule, not \
    Cilkscale's per-task DAG span. burdened span = the same path plus --burden-us (default 15 \
    µs) per steal edge on it, an estimate of what a migration costs. parallelism = work / span."
)]
pub(crate) struct ExportArgs {
    /// The trace file (written by `magpie trace <kernel>` or by a pool with MAGPIE_TRACE set).
    pub trace: PathBuf,
    /// perfetto (Chrome trace-event JSON: one track per worker, a slice per segment, a flow
    /// arrow per steal), csv (Cilkscale's columns: work, span, parallelism, burdened span and
    /// burdened parallelism per install region and overall) or svg (per-worker timeline and
    /// utilisation curve).
    #[arg(long, default_value = "perfetto", value_parser = parse_format)]
    pub format: Format,
    /// Where to write it [default: stdout].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// csv only: the burden added to the span for each steal edge on a path, in microseconds
    /// (an estimate of what migrating a task to another worker costs; Cilkscale's burden is of
    /// the same order).
    #[arg(long, default_value_t = BURDEN_US, value_parser = parse_burden)]
    pub burden_us: f64,
}

/// `magpie trace summary`.
#[derive(Args, Debug)]
pub(crate) struct SummaryArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: TraceArgs) -> Result<(), Failure> {
    match a.action {
        Some(TraceAction::Export(e)) => export(e),
        Some(TraceAction::Summary(s)) => summary_of_file(s),
        None => run_kernel(a.run),
    }
}

/// Reads a trace file; anything wrong with it is bad input naming the file.
pub(crate) fn read(path: &Path) -> Result<Trace, Failure> {
    let bytes = std::fs::read(path).map_err(|e| {
        Failure::Usage(format!(
            "cannot read the trace {}: {e}; `magpie trace KERNEL --out FILE` records one",
            path.display()
        ))
    })?;
    Trace::from_bytes(&bytes).map_err(|e| {
        Failure::Usage(format!(
            "{}: {e}; record it again with `magpie trace KERNEL --out FILE`",
            path.display()
        ))
    })
}

/// The steal tree's regions, or bad input naming the file when its origins do not form a tree.
fn analyse(t: &Trace, path: &Path, burden_us: f64) -> Result<Analysis, Failure> {
    analyse_trace(t, (burden_us * 1e3).round() as u64).map_err(|e| {
        Failure::Usage(format!(
            "{}: the trace file is corrupted: {e}; record it again with `magpie trace KERNEL \
             --out FILE`",
            path.display()
        ))
    })
}

/// Writes `text` to `out`, or to stdout when `out` is absent or `-`.
fn write_out(out: Option<&Path>, text: &str) -> Result<(), Failure> {
    match out {
        Some(p) if p != Path::new("-") => std::fs::write(p, text).map_err(|e| {
            Failure::Failed(format!(
                "cannot write {}: {e}; choose a file you can write with --out",
                p.display()
            ))
        }),
        _ => {
            let mut so = std::io::stdout().lock();
            so.write_all(text.as_bytes())
                .and_then(|()| so.flush())
                .map_err(|e| Failure::Failed(format!("cannot write to stdout: {e}")))
        }
    }
}

fn export(a: ExportArgs) -> Result<(), Failure> {
    let t = read(&a.trace)?;
    // Checked for every format: a trace whose origins loop is corrupted whatever is drawn.
    let an = analyse(&t, &a.trace, a.burden_us)?;
    let text = match a.format {
        Format::Perfetto => perfetto::export(&t),
        Format::Csv => csv(&an),
        Format::Svg => {
            let name = a.trace.file_name().map_or_else(
                || a.trace.display().to_string(),
                |n| n.to_string_lossy().into(),
            );
            svg::timeline(&t, &title(&name, &t, &an))
        }
    };
    write_out(a.out.as_deref(), &text)
}

fn print_summary(s: &Summary, json: bool) -> Result<(), Failure> {
    let text = if json {
        let j = serde_json::to_string(s)
            .map_err(|e| Failure::Failed(format!("cannot serialize the summary: {e}")))?;
        format!("{j}\n")
    } else {
        summary(s)
    };
    write_out(None, &text)
}

fn summary_of_file(a: SummaryArgs) -> Result<(), Failure> {
    let t = read(&a.trace)?;
    let an = analyse(&t, &a.trace, BURDEN_US)?;
    print_summary(&Summary::new(&t, &a.trace, &an, None), a.json)
}

fn run_kernel(a: TraceRunArgs) -> Result<(), Failure> {
    let kernel = a
        .kernel
        .ok_or_else(|| Failure::Usage("missing the kernel to trace".into()))?;
    let builder = a.opts.pool()?.trace(true);
    let case = a.opts.case(kernel)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.mtrace", kernel.name())));
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let (t, run_s) = traced_run(&pool, &case)?;
    drop(pool);
    write_trace(&t, &out)?;
    let an = analyse(&t, &out, BURDEN_US)?;
    let info = RunInfo {
        kernel: kernel.name().into(),
        n: case.n,
        grain: a.opts.grain,
        tree: a.opts.tree.map(|p| p.to_string()),
        verified: true,
        run_s,
    };
    print_summary(&Summary::new(&t, &out, &an, Some(info)), a.json)
}
