//! `magpie schedule`: schedules as data (Lifflander's thesis, Ch. 6; the data model is
//! `magpie::schedule`).
//!
//! - `magpie schedule record <kernel> -o k.msched` runs the kernel once as a recorded region,
//!   verified as `magpie bench` verifies (a wrong result is an error and writes nothing), and
//!   writes the schedule it took. The schedule's note names the kernel and its options, so the
//!   file alone says what it is a schedule of.
//! - `magpie schedule follow k.msched --constraint ordered|unordered|relaxed` runs that kernel
//!   again (verified) following the schedule, and prints what it followed: cuts, deviations,
//!   and the share of the template's cuts that ran on their recorded worker. `-o` writes the
//!   schedule actually taken, the template of a next iteration.
//! - `magpie schedule bench <kernel> --runs R` measures what following costs: plain stealing,
//!   recording, and each constraint on the schedule `schedule::Iterate` settled on, R runs each,
//!   interleaved, every run verified; medians and their ratios to plain.
//! - `magpie schedule show k.msched` prints a schedule file: workers, root, cuts per worker,
//!   depth, bytes, note, and the cuts (`--json` for one object).
//!
//! A schedule file that cannot be read (missing, truncated, corrupted, of another format
//! version, not a schedule) or one whose note names no kernel is bad input: one `error:` line
//! naming the file and the problem, exit code 2.

use crate::args::{
    parse_kernel, parse_max_fibers, parse_policy, parse_stack_size, parse_workers, RunOptions,
};
use crate::failure::Failure;
use crate::measure::schedule::{self as measure, CostPlan};
use crate::model::schedule::{Followed, Recorded, Run};
use crate::render::schedule::{cost_text, describe, text};
use clap::{Args, Subcommand};
use magpie::schedule::Schedule;
use magpie_bench::Kernel;
use std::path::{Path, PathBuf};

/// `magpie schedule`: record, follow and show schedules.
#[derive(Args, Debug)]
#[command(
    arg_required_else_help = true,
    after_long_help = "Examples:\n  \
        magpie schedule record heat --size ci --workers 2 -o heat.msched\n  \
        magpie schedule follow heat.msched --constraint relaxed -o heat2.msched\n  \
        magpie schedule show heat.msched --json"
)]
pub(crate) struct ScheduleArgs {
    #[command(subcommand)]
    pub action: ScheduleAction,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ScheduleAction {
    /// Run a kernel once as a recorded region (verified) and write the schedule it took.
    Record(ScheduleRecordArgs),
    /// Run the kernel a schedule file was recorded on again, following it (verified); print the
    /// deviations and the share of its cuts that ran on their recorded worker.
    Follow(ScheduleFollowArgs),
    /// Print a schedule file: workers, cuts per worker, depth, bytes, note and every cut.
    Show(ScheduleShowArgs),
    /// What following costs on a kernel: plain stealing, recording, and each constraint on the
    /// schedule the record/relax loop settled on; medians of interleaved verified runs.
    Bench(ScheduleBenchArgs),
}

/// `magpie schedule bench <kernel>`.
#[derive(Args, Debug)]
pub(crate) struct ScheduleBenchArgs {
    /// The kernel (`magpie bench --help` lists them all).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    #[command(flatten)]
    pub opts: RunOptions,
    /// Runs per mode (at least 1).
    #[arg(long, default_value = "7", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Iterations of the record/relax/follow loop that settles the template (each reported).
    #[arg(long, default_value = "10", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub iterations: u32,
    /// Percent of the cuts the relaxed iterations prune from their template (0 to 100).
    #[arg(long, default_value = "0", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub prune: u32,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `magpie schedule record <kernel>`.
#[derive(Args, Debug)]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub(crate) struct ScheduleRecordArgs {
    /// The kernel (`magpie bench --help` lists them all).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    /// Where to write the schedule [default: <kernel>.msched].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub opts: RunOptions,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `magpie schedule follow <file>`.
#[derive(Args, Debug)]
pub(crate) struct ScheduleFollowArgs {
    /// A schedule file written by `magpie schedule record` (or by `follow -o`).
    pub schedule: PathBuf,
    /// ordered (StOWS), unordered (StUWS) or relaxed (RelWS).
    #[arg(long, value_parser = parse_constraint)]
    pub constraint: magpie::schedule::Constraint,
    /// Worker threads [default: the schedule's; other counts follow it remapped].
    #[arg(long, value_parser = parse_workers)]
    pub workers: Option<usize>,
    /// Spawning policy [default: the one recorded].
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<magpie::Policy>,
    /// Write the schedule this run took here (the template of a next iteration).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Most fibers (task stacks) alive at once [magpie's default: 8192].
    #[arg(long, value_parser = parse_max_fibers)]
    pub max_fibers: Option<usize>,
    /// Bytes of stack per fiber [magpie's default: 2 MiB].
    #[arg(long, value_parser = parse_stack_size)]
    pub stack_size: Option<usize>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `magpie schedule show <file>`.
#[derive(Args, Debug)]
pub(crate) struct ScheduleShowArgs {
    /// A schedule file.
    pub schedule: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_constraint(s: &str) -> Result<magpie::schedule::Constraint, String> {
    s.parse()
}

pub(crate) fn run(a: ScheduleArgs) -> Result<(), Failure> {
    match a.action {
        ScheduleAction::Record(r) => record(r),
        ScheduleAction::Follow(f) => follow(f),
        ScheduleAction::Show(s) => show(s),
        ScheduleAction::Bench(b) => bench(b),
    }
}

/// Reads a schedule file; anything wrong with it is bad input naming the file.
pub(crate) fn read(path: &Path) -> Result<Schedule, Failure> {
    let bytes = std::fs::read(path).map_err(|e| {
        Failure::Usage(format!(
            "cannot read the schedule {}: {e}; `magpie schedule record KERNEL --out FILE` \
             records one",
            path.display()
        ))
    })?;
    Schedule::from_bytes(&bytes).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))
}

fn write(s: &Schedule, path: &Path) -> Result<(), Failure> {
    std::fs::write(path, s.to_bytes())
        .map_err(|e| Failure::Failed(format!("cannot write the schedule {}: {e}", path.display())))
}

fn record(a: ScheduleRecordArgs) -> Result<(), Failure> {
    let builder = a.opts.pool()?;
    let case = a.opts.case(a.kernel)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.msched", a.kernel.name())));
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let rec = Recorded {
        kernel: a.kernel,
        n: case.n,
        grain: case.grain,
        tree: case.tree.as_ref().map(|t| t.to_string()),
        policy: pool.policy(),
    };
    let (run_s, taken) = measure::record(&pool, &case)?;
    let taken = taken.with_note(rec.note());
    write(&taken, &out)?;
    let run = Run {
        mode: "record",
        run_s,
        followed: None,
    };
    show_one(&taken, &out, Some(&run), a.json, false);
    Ok(())
}

fn follow(a: ScheduleFollowArgs) -> Result<(), Failure> {
    let template = read(&a.schedule)?;
    let rec = Recorded::parse(template.note()).map_err(|e| {
        Failure::Usage(format!(
            "{}: the schedule does not say which kernel it was recorded on ({e}); \
             record it with `magpie schedule record`",
            a.schedule.display()
        ))
    })?;
    let case = rec.case().map_err(Failure::Usage)?;
    let workers = a.workers.unwrap_or(template.workers());
    let builder = crate::measure::run::pool_builder(
        Some(workers),
        Some(a.policy.unwrap_or(rec.policy)),
        a.stack_size,
        a.max_fibers,
        false,
    )?;
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let (run_s, taken, deviations) = measure::follow(&pool, &case, &template, a.constraint)?;
    let taken = taken.with_note(rec.note());
    if let Some(out) = &a.out {
        write(&taken, out)?;
    }
    let run = Run {
        mode: a.constraint.name(),
        run_s,
        followed: Some(Followed {
            template: a.schedule.display().to_string(),
            template_cuts: template.cuts().len(),
            deviations,
            kept: template.remap(workers).kept_in(&taken),
        }),
    };
    let file = a
        .out
        .as_deref()
        .unwrap_or(Path::new("taken (not written; -o writes it)"));
    show_one(&taken, file, Some(&run), a.json, false);
    Ok(())
}

fn bench(a: ScheduleBenchArgs) -> Result<(), Failure> {
    let pool = a.opts.pool()?.build().map_err(Failure::from_magpie)?;
    let clocked = a
        .opts
        .pool()?
        .measure_overheads(true)
        .build()
        .map_err(Failure::from_magpie)?;
    let plan = CostPlan {
        case: a.opts.case(a.kernel)?,
        iterations: a.iterations,
        prune: a.prune,
        runs: a.runs,
    };
    let cost = measure::cost(&pool, clocked, &plan)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&cost).expect("the cost is plain data")
        );
    } else {
        print!("{}", cost_text(&cost));
    }
    Ok(())
}

fn show(a: ScheduleShowArgs) -> Result<(), Failure> {
    let s = read(&a.schedule)?;
    show_one(&s, &a.schedule, None, a.json, true);
    Ok(())
}

/// Prints a schedule and what the run that took it did, as JSON or as text.
fn show_one(s: &Schedule, file: &Path, run: Option<&Run>, as_json: bool, list: bool) {
    if as_json {
        println!("{}", describe(s, file, run));
    } else {
        print!("{}", text(s, file, run, list));
    }
}
