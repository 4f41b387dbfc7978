//! `magpie-dist simulate`: the discrete-event simulator ([`magpie_dist_bench::sim`]) over a grid of
//! rank counts and strategies, no MPI needed.

use magpie_dist::collection::Strategy;
use magpie_dist_bench::kernels::Synthetic;
use magpie_dist_bench::sim::{self, Model, Sample};
use std::path::PathBuf;
use std::process::ExitCode;

/// `magpie-dist simulate --help`.
pub(crate) const HELP: &str = "usage: magpie-dist simulate hf|tce [options]      (no MPI)

The discrete-event simulator: the real collection (deque, termination detector, victim choice,
balancers) at each rank count and strategy, in simulated time under a cost model; prints the
per-iteration figures `run` prints, plus the ideal time (total work / ranks).

options:
  --n N               the kernel's size (default 727; 2 to 4000)
  --ranks P,P,..      rank counts (default 2400,4800,9600,19200,38400; up to 1000000)
  --strategy S,..|all strategies (default steal,steal-retentive)
  --iterations K      default 5 (1 to 1000)
  --calibrate RUN.json  fit the model to `run --json` reports (repeatable)
  --model KEY=NS,..   set costs: unit_ns, task_ns, attempt_ns, copy_ns, message_ns
  --timeline DIR      write an SVG per rank count and strategy (checked writable first)
  --json              one JSON object per run instead of the table";

/// `simulate`'s options.
pub(crate) struct Args {
    kernel: Synthetic,
    ranks: Vec<usize>,
    strategies: Vec<Strategy>,
    iterations: usize,
    model: Model,
    /// Where the model came from, in words.
    model_from: String,
    timeline: Option<PathBuf>,
    json: bool,
}

fn list<T>(v: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    v.split(',')
        .map(|x| parse(x.trim()))
        .collect::<Option<Vec<T>>>()
        .filter(|l| !l.is_empty())
        .ok_or(format!("{what} '{v}': expected a comma-separated list"))
}

/// A `run --json` report of a synthetic kernel, as calibration samples (one per iteration).
fn samples(path: &str) -> Result<Vec<Sample>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--calibrate '{path}': {e}"))?;
    let bad = |why: &str| {
        format!(
            "--calibrate '{path}': {why} (expected the JSON of `magpie-dist run hf|tce --json`)"
        )
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
    let n = v["tree"]
        .as_str()
        .and_then(|t| t.strip_prefix("n="))
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| bad("no synthetic kernel size"))?;
    let k = match v["kernel"].as_str() {
        Some("hf") => Synthetic::Hf(n),
        Some("tce") => Synthetic::Tce(n),
        _ => return Err(bad("not an hf or tce run")),
    };
    let units: u64 = (0..k.tasks()).map(|id| k.cost(id)).sum();
    let its = v["per_rank"]
        .as_array()
        .ok_or_else(|| bad("no per-rank figures"))?;
    let mut out = Vec::new();
    for it in its {
        let ranks = it["ranks"].as_array().ok_or_else(|| bad("no ranks"))?;
        let sum = |key: &str| -> Result<u64, String> {
            ranks
                .iter()
                .map(|r| r[key].as_u64().ok_or_else(|| bad(&format!("no {key}"))))
                .sum()
        };
        out.push(Sample {
            tasks: sum("tasks")?,
            units,
            task_ns: sum("task_ns")?,
            attempts: sum("steals_attempted")?,
            steal_ns: sum("steal_ns")?,
        });
    }
    Ok(out)
}

impl Args {
    pub(crate) fn parse(args: &[String]) -> Result<Args, String> {
        let kernel = match args.first().map(String::as_str) {
            Some(k @ ("hf" | "tce")) => k,
            Some(k) => {
                return Err(format!(
                    "unknown kernel '{k}' for simulate (expected hf or tce)"
                ))
            }
            None => return Err("simulate needs a kernel (hf or tce)".into()),
        };
        let mut n = 727u64;
        let mut a = Args {
            kernel: Synthetic::Hf(n),
            ranks: vec![2400, 4800, 9600, 19200, 38400],
            strategies: vec![Strategy::Steal, Strategy::StealRetentive],
            iterations: 5,
            model: Model::default(),
            model_from: "built-in (this machine's loopback)".into(),
            timeline: None,
            json: false,
        };
        let mut calibrate = Vec::new();
        let mut sets = Vec::new();
        let mut it = args[1..].iter();
        while let Some(o) = it.next() {
            let mut value = || it.next().ok_or(format!("{o} needs a value"));
            match o.as_str() {
                "--n" => {
                    let v = value()?;
                    n = v
                        .parse::<u64>()
                        .ok()
                        .filter(|n| (2..=4000).contains(n))
                        .ok_or(format!("--n '{v}': expected a whole number from 2 to 4000"))?;
                }
                "--ranks" => {
                    a.ranks = list(value()?, "--ranks", |x| {
                        x.parse::<usize>()
                            .ok()
                            .filter(|p| (1..=1_000_000).contains(p))
                    })
                    .map_err(|e| format!("{e} of rank counts from 1 to 1000000"))?;
                }
                "--strategy" => {
                    let v = value()?;
                    a.strategies = if v == "all" {
                        Strategy::ALL.to_vec()
                    } else {
                        v.split(',')
                            .map(|s| s.trim().parse::<Strategy>())
                            .collect::<Result<_, _>>()?
                    };
                }
                "--iterations" => {
                    let v = value()?;
                    a.iterations = v
                        .parse::<usize>()
                        .ok()
                        .filter(|k| (1..=1000).contains(k))
                        .ok_or(format!(
                            "--iterations '{v}': expected a whole number from 1 to 1000"
                        ))?;
                }
                "--calibrate" => calibrate.push(value()?.clone()),
                "--model" => sets.push(value()?.clone()),
                "--timeline" => {
                    let dir = PathBuf::from(value()?);
                    crate::check_output_dir(&dir, "--timeline")?;
                    a.timeline = Some(dir);
                }
                "--json" => a.json = true,
                other => return Err(format!("unknown option '{other}' for simulate")),
            }
        }
        a.kernel = match kernel {
            "hf" => Synthetic::Hf(n),
            _ => Synthetic::Tce(n),
        };
        if !calibrate.is_empty() {
            let mut all = Vec::new();
            for path in &calibrate {
                all.extend(samples(path)?);
            }
            a.model = a
                .model
                .calibrate(&all)
                .ok_or("--calibrate: the reports ran no task")?;
            a.model_from = format!("calibrated from {}", calibrate.join(", "));
        }
        for set in &sets {
            for kv in set.split(',') {
                let (key, v) = kv
                    .split_once('=')
                    .ok_or(format!("--model '{kv}': expected KEY=NANOSECONDS"))?;
                let ns = v
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or(format!(
                        "--model '{kv}': '{v}' is not a number of nanoseconds"
                    ))?;
                let field = match key {
                    "unit_ns" => &mut a.model.unit_ns,
                    "task_ns" => &mut a.model.task_ns,
                    "attempt_ns" => &mut a.model.attempt_ns,
                    "copy_ns" => &mut a.model.copy_ns,
                    "message_ns" => &mut a.model.message_ns,
                    _ => {
                        return Err(format!(
                            "--model: unknown cost '{key}' (expected unit_ns, task_ns, \
                             attempt_ns, copy_ns or message_ns)"
                        ))
                    }
                };
                *field = ns;
            }
            a.model_from.push_str(&format!(", with {set}"));
        }
        Ok(a)
    }
}

/// Runs the grid and prints it; writes the timelines when asked.
pub(crate) fn run(a: Args) -> ExitCode {
    let k = a.kernel;
    let nonnull = (0..k.tasks()).filter(|&id| k.cost(id) > 0).count();
    let m = a.model;
    if let Some(dir) = &a.timeline {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!(
                "error: --timeline '{}': {e}; choose a folder you can write",
                dir.display()
            );
            return ExitCode::from(2);
        }
    }
    if !a.json {
        println!(
            "{} n={} ({} tasks, {nonnull} non-null), simulated; model ({}): unit {:.0} ns, task \
             {:.0} ns, steal attempt {:.0} ns, copy {:.0} ns/task, message {:.0} ns",
            k.name(),
            (k.tasks() as f64).sqrt() as u64,
            k.tasks(),
            a.model_from,
            m.unit_ns,
            m.task_ns,
            m.attempt_ns,
            m.copy_ns,
            m.message_ns
        );
        println!(
            "  {:>7} {:<17} {:>3} {:>10} {:>10} {:>6} {:>17} {:>15}",
            "ranks",
            "strategy",
            "it",
            "time ms",
            "ideal ms",
            "eff",
            "steals tried/rank",
            "won/rank"
        );
    }
    let mut rows = Vec::new();
    let mut progress = magpie_view::progress::Progress::new(
        "simulate",
        (a.ranks.len() * a.strategies.len()) as u64,
        "configurations",
    );
    for &p in &a.ranks {
        for &strategy in &a.strategies {
            progress.at(&format!("{} ranks, {}", p, strategy.name()));
            let cfg = sim::Config {
                kernel: k,
                ranks: p,
                strategy,
                iterations: a.iterations,
                model: m,
                params: Default::default(),
            };
            let t = std::time::Instant::now();
            let o = match sim::simulate(cfg) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("error: {} at {p} ranks, {}: {e}", k.name(), strategy.name());
                    return ExitCode::from(1);
                }
            };
            let secs = t.elapsed().as_secs_f64();
            progress.step(&format!(
                "{p} ranks, {}: {} iterations simulated in {secs:.1} s",
                strategy.name(),
                o.iterations.len()
            ));
            let its: Vec<serde_json::Value> =
                o.iterations.iter().map(super::iteration_summary).collect();
            if !a.json {
                for v in &its {
                    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
                    println!(
                        "  {:>7} {:<17} {:>3} {:>10.3} {:>10.3} {:>6.3} {:>9.1} ± {:<5.1} {:>7.2} ± {:<5.2}",
                        p,
                        strategy.name(),
                        v["iteration"],
                        f(&v["time_s"]) * 1e3,
                        o.ideal_ns * 1e-6,
                        f(&v["efficiency"]),
                        f(&v["steals_attempted"]["mean"]),
                        f(&v["steals_attempted"]["std"]),
                        f(&v["steals_successful"]["mean"]),
                        f(&v["steals_successful"]["std"]),
                    );
                }
            }
            if let Some(dir) = &a.timeline {
                let title = format!(
                    "{} n={}, {p} simulated ranks, {}",
                    k.name(),
                    (k.tasks() as f64).sqrt() as u64,
                    strategy.name()
                );
                let path = dir.join(format!("{}-{}-{p}.svg", k.name(), strategy.name()));
                if let Err(e) = std::fs::write(
                    &path,
                    magpie_dist_bench::timeline_svg::first_and_last(&title, &o.iterations),
                ) {
                    eprintln!(
                        "error: --timeline: writing '{}': {e}; choose a folder you can write",
                        path.display()
                    );
                    return ExitCode::from(1);
                }
            }
            rows.push(serde_json::json!({
                "ranks": p, "strategy": strategy.name(), "ideal_s": o.ideal_ns * 1e-9,
                "events": o.events, "simulation_s": secs, "iterations": its,
            }));
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "kernel": k.name(), "n": (k.tasks() as f64).sqrt() as u64, "tasks": k.tasks(),
                "non_null": nonnull, "model": m, "model_from": a.model_from,
                "verified": true, "rows": rows,
            })
        );
    }
    ExitCode::SUCCESS
}
