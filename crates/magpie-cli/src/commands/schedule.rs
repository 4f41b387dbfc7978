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
use clap::{Args, Subcommand};
use magpie::schedule::{self, Constraint, Schedule};
use magpie_bench::runner::Case;
use magpie_bench::Kernel;
use serde_json::json;
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

/// What a recorded schedule's note says: the run it was taken on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Recorded {
    pub kernel: Kernel,
    pub n: u64,
    pub grain: Option<u64>,
    pub tree: Option<String>,
    pub policy: magpie::Policy,
}

impl Recorded {
    /// The note: `kernel=fib n=30 grain=20 policy=work-first` (`tree=` for uts, quoted values
    /// never contain spaces but uts trees, which come last).
    pub(crate) fn note(&self) -> String {
        let mut s = format!("kernel={} n={}", self.kernel.name(), self.n);
        if let Some(g) = self.grain {
            s += &format!(" grain={g}");
        }
        s += &format!(" policy={}", self.policy);
        if let Some(t) = &self.tree {
            s += &format!(" tree={t}");
        }
        s
    }

    /// Parses a note written by [`note`](Self::note).
    pub(crate) fn parse(note: &str) -> Result<Recorded, String> {
        let (head, tree) = match note.find(" tree=") {
            Some(i) => (&note[..i], Some(note[i + 6..].to_string())),
            None => (note, None),
        };
        let (mut kernel, mut n, mut grain, mut policy) = (None, None, None, None);
        for kv in head.split_whitespace() {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("'{kv}' is not key=value"))?;
            match k {
                "kernel" => kernel = Some(v.parse::<Kernel>()?),
                "n" => n = Some(v.parse::<u64>().map_err(|e| format!("n={v}: {e}"))?),
                "grain" => grain = Some(v.parse::<u64>().map_err(|e| format!("grain={v}: {e}"))?),
                "policy" => policy = Some(v.parse::<magpie::Policy>().map_err(|e| e.to_string())?),
                _ => return Err(format!("unknown key '{k}'")),
            }
        }
        Ok(Recorded {
            kernel: kernel.ok_or("no kernel")?,
            n: n.ok_or("no n")?,
            grain,
            tree,
            policy: policy.ok_or("no policy")?,
        })
    }

    fn case(&self) -> Result<Case, Failure> {
        let tree = match &self.tree {
            Some(t) => Some(t.parse().map_err(Failure::Usage)?),
            None => None,
        };
        let case = Case {
            kernel: self.kernel,
            n: if tree.is_some() { 0 } else { self.n },
            grain: self.grain,
            tree,
        };
        case.check().map_err(Failure::Usage)?;
        Ok(case)
    }
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
        tree: case.tree.map(|t| t.to_string()),
        policy: pool.policy(),
    };
    let (run_s, s) =
        pool.install(|| schedule::record(|| crate::measure::run::run_once_verified(&pool, &case)));
    let run_s = run_s?;
    let s = s.with_note(rec.note());
    write(&s, &out)?;
    print(
        &describe(&s, &out, Some(("record", run_s, None))),
        a.json,
        &s,
        false,
    )
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
    let case = rec.case()?;
    let workers = a.workers.unwrap_or(template.workers());
    let builder = crate::measure::run::pool_builder(
        Some(workers),
        Some(a.policy.unwrap_or(rec.policy)),
        a.stack_size,
        a.max_fibers,
        false,
    )?;
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let before = pool.stats().deviations;
    let (run_s, taken) = pool.install(|| {
        schedule::follow(&template, a.constraint, || {
            crate::measure::run::run_once_verified(&pool, &case)
        })
    });
    let run_s = run_s?;
    let deviations = pool.stats().deviations - before;
    let taken = taken.with_note(rec.note());
    if let Some(out) = &a.out {
        write(&taken, out)?;
    }
    let kept = template.remap(workers).kept_in(&taken);
    let mut d = describe(
        &taken,
        a.out
            .as_deref()
            .unwrap_or(Path::new("taken (not written; -o writes it)")),
        Some((a.constraint.name(), run_s, Some((deviations, kept)))),
    );
    d["template"] = json!(a.schedule.display().to_string());
    d["template_cuts"] = json!(template.cuts().len());
    print(&d, a.json, &taken, false)
}

fn bench(a: ScheduleBenchArgs) -> Result<(), Failure> {
    let builder = a.opts.pool()?;
    let case = a.opts.case(a.kernel)?;
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let once = || crate::measure::run::run_once_verified(&pool, &case);
    // The template: record, then relax until the schedule settles (at most 4 relaxed runs), on
    // a pool that also clocks the time its workers spend looking for work; each iteration is
    // reported (the convergence of the loop).
    let clocked = a
        .opts
        .pool()?
        .measure_overheads(true)
        .build()
        .map_err(Failure::from_magpie)?;
    let mut it = schedule::Iterate::new(a.prune, 4);
    let mut iterations = Vec::new();
    for _ in 0..a.iterations {
        let before = clocked.stats().search_ns;
        let t = std::time::Instant::now();
        clocked.install(|| it.run(|| crate::measure::run::run_once_verified(&clocked, &case)))?;
        let secs = t.elapsed().as_secs_f64();
        let step = it.steps().last().expect("a step").clone();
        iterations.push(json!({
            "stage": format!("{:?}", step.stage).to_lowercase(), "cuts": step.cuts,
            "bytes": step.bytes, "same_worker": step.same_worker, "deviations": step.deviations,
            "run_s": secs, "search_s": (clocked.stats().search_ns - before) as f64 * 1e-9,
        }));
    }
    drop(clocked);
    let template = it.schedule().expect("an iteration ran").clone();
    let modes: [(&str, Option<Option<Constraint>>); 5] = [
        ("plain", None),
        ("record", Some(None)),
        ("ordered", Some(Some(Constraint::Ordered))),
        ("unordered", Some(Some(Constraint::Unordered))),
        ("relaxed", Some(Some(Constraint::Relaxed))),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut deviations = vec![0u64; modes.len()];
    for _ in 0..a.runs {
        for (i, (_, m)) in modes.iter().enumerate() {
            let before = pool.stats().deviations;
            let t = std::time::Instant::now();
            match m {
                None => pool.install(once)?,
                Some(None) => pool.install(|| schedule::record(once)).0?,
                Some(Some(c)) => pool.install(|| schedule::follow(&template, *c, once)).0?,
            };
            times[i].push(t.elapsed().as_secs_f64());
            deviations[i] += pool.stats().deviations - before;
        }
    }
    let median = |v: &[f64]| {
        magpie_bench::harness::Timing {
            times_s: v.to_vec(),
        }
        .median()
        .unwrap_or(f64::NAN)
    };
    let plain = median(&times[0]);
    let rows: Vec<serde_json::Value> = modes
        .iter()
        .zip(&times)
        .zip(&deviations)
        .map(|(((name, _), t), d)| {
            json!({"mode": name, "median_s": median(t), "ratio": median(t) / plain,
                   "deviations": d})
        })
        .collect();
    let d = json!({
        "kernel": a.kernel.name(), "n": case.n, "grain": case.grain,
        "workers": pool.workers(), "policy": pool.policy().to_string(), "runs": a.runs,
        "verified": true, "template_cuts": template.cuts().len(),
        "template_bytes": template.bytes(), "modes": rows, "iterations": iterations,
    });
    if a.json {
        println!("{d}");
        return Ok(());
    }
    println!(
        "{} n={} ({}, {}), {} runs each, interleaved, every run verified; template: {} cuts, {} bytes",
        a.kernel.name(),
        case.n,
        crate::format::count(pool.workers(), "worker"),
        pool.policy(),
        a.runs,
        template.cuts().len(),
        template.bytes()
    );
    println!("the record/relax/follow loop (searching: seconds workers spent looking for work):");
    println!("| iteration | stage | cuts | bytes | cuts kept on their worker | s | searching s |");
    println!("|---|---|---|---|---|---|---|");
    for (i, r) in d["iterations"].as_array().into_iter().flatten().enumerate() {
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.4} | {:.4} |",
            i + 1,
            r["stage"].as_str().unwrap_or(""),
            r["cuts"],
            r["bytes"],
            r["same_worker"].as_f64().unwrap_or(f64::NAN),
            r["run_s"].as_f64().unwrap_or(f64::NAN),
            r["search_s"].as_f64().unwrap_or(f64::NAN),
        );
    }
    println!("| mode | median s | ÷ plain | deviations |");
    println!("|---|---|---|---|");
    for r in d["modes"].as_array().into_iter().flatten() {
        println!(
            "| {} | {:.6} | {:.3} | {} |",
            r["mode"].as_str().unwrap_or(""),
            r["median_s"].as_f64().unwrap_or(f64::NAN),
            r["ratio"].as_f64().unwrap_or(f64::NAN),
            r["deviations"]
        );
    }
    Ok(())
}

fn show(a: ScheduleShowArgs) -> Result<(), Failure> {
    let s = read(&a.schedule)?;
    print(&describe(&s, &a.schedule, None), a.json, &s, true)
}

/// What a run that took a schedule did: its mode, seconds, and when it followed a template,
/// the deviations and the share of the template's cuts on their worker.
type RunOf<'a> = Option<(&'a str, f64, Option<(u64, f64)>)>;

/// A schedule and, for a run, what it did, as one JSON object (which the text form prints).
fn describe(s: &Schedule, file: &Path, run: RunOf<'_>) -> serde_json::Value {
    let per_worker: Vec<usize> = s.per_worker().iter().map(Vec::len).collect();
    let mut d = json!({
        "file": file.display().to_string(),
        "workers": s.workers(),
        "root_worker": s.root_worker(),
        "cuts": s.cuts().len(),
        "cuts_per_worker": per_worker,
        "depth": s.depth(),
        "bytes": s.bytes(),
        "note": s.note(),
        "cut_list": s.cuts().iter().map(|c| json!({
            "path": c.path, "worker": c.worker, "rank": c.rank,
        })).collect::<Vec<_>>(),
    });
    if let Some((mode, run_s, followed)) = run {
        d["mode"] = json!(mode);
        d["verified"] = json!(true);
        d["run_s"] = json!(run_s);
        if let Some((deviations, kept)) = followed {
            d["deviations"] = json!(deviations);
            d["template_cuts_on_their_worker"] = json!(kept);
        }
    }
    d
}

fn print(d: &serde_json::Value, as_json: bool, s: &Schedule, list: bool) -> Result<(), Failure> {
    if as_json {
        println!("{d}");
        return Ok(());
    }
    let mut t = String::new();
    if let Some(mode) = d["mode"].as_str() {
        t += &format!(
            "{mode}: {} ({}), verified, {:.6} s\n",
            d["note"].as_str().unwrap_or(""),
            crate::format::count(s.workers(), "worker"),
            d["run_s"].as_f64().unwrap_or(0.0),
        );
    }
    if let Some(dev) = d["deviations"].as_u64() {
        t += &format!(
            "followed {} ({} cuts): {} deviations, {:.1}% of its cuts on their worker\n",
            d["template"].as_str().unwrap_or(""),
            d["template_cuts"],
            dev,
            100.0 * d["template_cuts_on_their_worker"].as_f64().unwrap_or(0.0),
        );
    }
    t += &format!(
        "{}: {} workers, root on w{}, {} cuts (per worker {:?}), depth {}, {} bytes\n",
        d["file"].as_str().unwrap_or(""),
        s.workers(),
        s.root_worker(),
        s.cuts().len(),
        s.per_worker().iter().map(Vec::len).collect::<Vec<_>>(),
        s.depth(),
        s.bytes(),
    );
    if d.get("mode").is_none() {
        t += &format!(
            "note: {}\n",
            if s.note().is_empty() {
                "(none)"
            } else {
                s.note()
            }
        );
    }
    if list {
        for c in s.cuts() {
            t += &format!("  w{} rank {:>3}  {:?}\n", c.worker, c.rank, c.path);
        }
    }
    print!("{t}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_round_trip_and_bad_notes_are_errors() {
        let r = Recorded {
            kernel: magpie_bench::kernels::fib::KERNEL,
            n: 30,
            grain: Some(20),
            tree: None,
            policy: magpie::Policy::HelpFirst,
        };
        assert_eq!(Recorded::parse(&r.note()), Ok(r));
        assert!(Recorded::parse("").is_err());
        assert!(Recorded::parse("kernel=nope n=3 policy=adaptive").is_err());
        assert!(Recorded::parse("kernel=fib n=x policy=adaptive").is_err());
        assert!(Recorded::parse("kernel=fib n=3").is_err());
        assert!(Recorded::parse("kernel=fib n=3 policy=adaptive colour=red").is_err());
    }
}
