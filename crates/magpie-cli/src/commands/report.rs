//! `magpie report`: every kernel under every policy at each worker count, with the serial twin
//! and the peers, as a Markdown report (tables per kernel, then derived figures, each with the
//! command that reproduces it). PDFS configurations run in a child process (`magpie bench pdfs
//! ... --json`) so that each one's peak RSS is its own; a work-first PDFS that magpie stops at its
//! stack limit is reported as "stopped", not as a failure.

use crate::args::{parse_runs, parse_size, parse_workers_list, WorkersList};
use crate::failure::Failure;
use crate::format::{nanos, result_line, secs, times};
use clap::Args;
use magpie::Policy;
use magpie_bench::kernels;
use magpie_bench::Size;
use magpie_bench::{Kernel, Peer};
use std::fmt::Write;
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

const POLICIES: [Policy; 3] = [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive];

/// How one configuration went.
#[derive(Clone, Debug)]
enum Outcome {
    Done {
        median: f64,
        min: f64,
        max: f64,
        stats: Option<magpie::Stats>,
        peak_rss_kib: Option<u64>,
    },
    /// magpie stopped the kernel at its stack limit (an expected outcome for work-first PDFS).
    Stopped(String),
    /// Failed verification or crashed.
    Failed(String),
}

impl Outcome {
    fn median(&self) -> Option<f64> {
        match self {
            Outcome::Done { median, .. } => Some(*median),
            _ => None,
        }
    }

    fn is_failure(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }

    fn describe(&self) -> String {
        match self {
            Outcome::Done { median, .. } => format!("{median:.6} s"),
            Outcome::Stopped(m) => format!("stopped: {m}"),
            Outcome::Failed(m) => format!("FAILED: {m}"),
        }
    }
}

/// Who ran a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runtime {
    Magpie(Policy),
    Peer(Peer),
}

impl Runtime {
    fn label(self) -> String {
        match self {
            Runtime::Magpie(p) => format!("magpie {p}"),
            Runtime::Peer(p) => p.name().to_string(),
        }
    }
}

struct Row {
    runtime: Runtime,
    workers: usize,
    outcome: Outcome,
}

struct Section {
    kernel: Kernel,
    n: u64,
    /// The kernel's answer (`suite::kernel_answer`).
    result: Option<String>,
    serial: Outcome,
    rows: Vec<Row>,
}

impl Section {
    fn get(&self, rt: Runtime, w: usize) -> Option<&Outcome> {
        self.rows
            .iter()
            .find(|r| r.runtime == rt && r.workers == w)
            .map(|r| &r.outcome)
    }
    fn median(&self, rt: Runtime, w: usize) -> Option<f64> {
        self.get(rt, w)?.median()
    }
}

/// The command that reproduces magpie's figure for one configuration (peers are timed in the
/// same run, with the same workers, n and runs).
fn bench_cmd(k: Kernel, n: u64, w: usize, p: Policy, runs: usize) -> String {
    format!("magpie bench {k} --n {n} --workers {w} --policy {p} --runs {runs}")
}

fn policies_cmd(k: Kernel, n: u64, w: usize, ps: &[Policy], runs: usize) -> String {
    let ps = ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(" ");
    format!(
        "for p in {ps}; do magpie bench {k} --n {n} --workers {w} --policy $p --runs {runs}; done"
    )
}

fn workers_word(w: usize) -> String {
    if w == 1 {
        "1 worker".into()
    } else {
        format!("{w} workers")
    }
}

/// A measurement of the suite as one of the report's outcomes.
fn outcome_of(r: &crate::model::Row) -> Outcome {
    match (&r.error, r.median_s, r.min_s, r.max_s) {
        (Some(e), ..) if r.stopped => Outcome::Stopped(e.clone()),
        (Some(e), ..) => Outcome::Failed(e.clone()),
        (None, Some(median), Some(min), Some(max)) if r.verified => Outcome::Done {
            median,
            min,
            max,
            stats: r.stats,
            peak_rss_kib: r.peak_rss_kib,
        },
        _ => Outcome::Failed("failed verification".into()),
    }
}

/// The report's section of one kernel, from the suite's rows.
fn section_from(kernel: Kernel, n: u64, rows: &[crate::model::Row]) -> Section {
    let mine = rows.iter().filter(|r| r.kernel == kernel.name());
    let mut serial = Outcome::Failed("the serial twin did not run".into());
    let mut out = vec![];
    for r in mine {
        let runtime = match (r.runtime.as_str(), &r.policy) {
            ("serial", _) => {
                serial = outcome_of(r);
                continue;
            }
            ("magpie", Some(p)) => match p.parse::<Policy>() {
                Ok(p) => Runtime::Magpie(p),
                Err(_) => continue,
            },
            (rt, _) => match crate::model::all_peers()
                .into_iter()
                .find(|&p| crate::model::peer_parts(p) == (rt, r.variant.as_deref()))
            {
                Some(p) => Runtime::Peer(p),
                None => continue,
            },
        };
        out.push(Row {
            runtime,
            workers: r.workers,
            outcome: outcome_of(r),
        });
    }
    let result = crate::model::kernel_answer(rows.iter().filter(|r| r.kernel == kernel.name()))
        .map(str::to_string);
    Section {
        kernel,
        n,
        result,
        serial,
        rows: out,
    }
}

pub(crate) fn run(a: ReportArgs) -> Result<(), Failure> {
    // Bad MAGPIE_* variables are bad input here too, though the report sets workers and policy.
    magpie::Builder::default()
        .from_env()
        .map_err(Failure::from_magpie)?;
    let workers = a.workers_list.0.clone();
    let runs = a.runs;
    let started = Instant::now();
    let plan = crate::measure::suite::Plan::new(
        Kernel::ALL.to_vec(),
        POLICIES.to_vec(),
        workers,
        crate::model::all_peers(),
        a.size,
        runs,
    );
    let (rows, _) = crate::measure::suite::measure_all(&plan, |_, _, _| {})?;

    let sections: Vec<Section> = Kernel::ALL
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

    let md = render(&a, &sections, idle, started.elapsed().as_secs_f64());
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

    let failed: Vec<String> = sections
        .iter()
        .flat_map(|s| {
            let serial = s
                .serial
                .is_failure()
                .then(|| format!("{} serial twin", s.kernel));
            serial.into_iter().chain(
                s.rows
                    .iter()
                    .filter(|r| r.outcome.is_failure())
                    .map(move |r| format!("{} {} x{}", s.kernel, r.runtime.label(), r.workers)),
            )
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Failed(format!(
            "{} configuration(s) failed (see the report): {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}

fn render(a: &ReportArgs, sections: &[Section], idle_pct: f64, elapsed: f64) -> String {
    let runs = a.runs;
    let wl = a
        .workers_list
        .0
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut o = String::new();
    let _ = writeln!(o, "# magpie report\n");
    let _ = writeln!(
        o,
        "Generated by `magpie report --workers-list {wl} --runs {runs} --size {}` in {elapsed:.0} s \
         on a machine with {} available CPUs (magpie-cli {}).\n",
        a.size,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        o,
        "Kernels after SLAW (Guo et al., IPDPS 2010) §V. Times are wall-clock seconds per run over \
         {runs} runs (median, min, max); every run was verified against its serial twin or known \
         answer. Ratio to serial = median / the serial twin's median. Peers run with the same \
         worker count, n and runs. Scheduler counters are magpie's, summed over the {runs} runs: \
         spawns work-first/help-first, steals child+continuation.\n"
    );

    for s in sections {
        let fj = s.kernel.tasks_per_run(s.n).is_some();
        let pdfs = s.kernel == kernels::pdfs::KERNEL;
        let _ = writeln!(
            o,
            "## {} (n = {}: {})\n",
            s.kernel,
            s.n,
            s.kernel.n_meaning()
        );
        let _ = writeln!(
            o,
            "{}\n",
            match &s.result {
                Some(a) => format!("result: `{a}`"),
                None => result_line(None),
            }
        );
        let mut head = vec![
            "runtime / policy",
            "workers",
            "median s",
            "min s",
            "max s",
            "ratio to serial",
        ];
        if fj {
            head.push("ns per task");
        }
        if pdfs {
            head.push("peak RSS KiB");
        }
        head.push("scheduler");
        let _ = writeln!(o, "| {} |", head.join(" | "));
        let _ = writeln!(o, "|{}", "---|".repeat(head.len()));
        let serial_median = s.serial.median();
        let mut row = |label: &str, w: String, out: &Outcome| {
            let mut cells = vec![label.to_string(), w];
            match out {
                Outcome::Done {
                    median,
                    min,
                    max,
                    stats,
                    peak_rss_kib,
                } => {
                    cells.push(secs(Some(*median)));
                    cells.push(secs(Some(*min)));
                    cells.push(secs(Some(*max)));
                    cells.push(times(serial_median.map(|sm| median / sm)));
                    if fj {
                        let per = s.kernel.tasks_per_run(s.n).map(|t| median / t as f64 * 1e9);
                        cells.push(nanos(per));
                    }
                    if pdfs {
                        cells.push(peak_rss_kib.map_or("–".into(), |k| k.to_string()));
                    }
                    cells.push(stats.map_or("–".into(), |st| {
                        format!(
                            "wf {} / hf {}; steals {}+{}",
                            st.spawns_work_first,
                            st.spawns_help_first,
                            st.steals_child,
                            st.steals_continuation
                        )
                    }));
                }
                other => {
                    cells.push(other.describe().replace('|', "\\|"));
                    while cells.len() < head.len() {
                        cells.push(String::new());
                    }
                }
            }
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        };
        row("serial twin", "–".into(), &s.serial);
        for r in &s.rows {
            row(&r.runtime.label(), r.workers.to_string(), &r.outcome);
        }
        let _ = writeln!(o);
        for (name, reason) in s.kernel.unavailable_peers() {
            let _ = writeln!(o, "Not measured: {name} — {reason}.\n");
        }
        for p in s.kernel.peers() {
            if let Some(reason) = p.unavailable_reason() {
                let _ = writeln!(o, "Not measured: {p} — {reason}.\n");
            }
        }
        if pdfs {
            let _ = writeln!(
                o,
                "Each PDFS configuration ran in its own process: `magpie bench pdfs --n {} \
                 --workers W --policy P --runs {runs} --json --no-peers --no-serial`; peak RSS is \
                 that process's VmHWM (parallel runs plus verification; the parent array alone is \
                 4 bytes per node). A work-first stop at the stack limit is an expected outcome.\n",
                s.n
            );
        }
    }

    let _ = writeln!(o, "## Derived figures\n");
    let find = |k: Kernel| sections.iter().find(|s| s.kernel == k);
    let ws = &a.workers_list.0;
    let pct = |a: f64, b: f64| (a / b - 1.0) * 100.0;

    if let Some(s) = find(kernels::fib::KERNEL) {
        if ws.contains(&1) {
            for p in POLICIES {
                let fig = match (s.median(Runtime::Magpie(p), 1), s.serial.median()) {
                    (Some(m), Some(sm)) => {
                        format!("{:.2}× the serial twin ({m:.6} s vs {sm:.6} s)", m / sm)
                    }
                    _ => "n/a".into(),
                };
                let _ = writeln!(
                    o,
                    "- fib, 1 worker, magpie {p}: {fig} — `{}`",
                    bench_cmd(kernels::fib::KERNEL, s.n, 1, p, runs)
                );
            }
        }
        for &w in ws {
            for p in POLICIES {
                let fig = match (
                    s.median(Runtime::Magpie(p), w),
                    s.median(Runtime::Peer(Peer::RayonJoin), w),
                ) {
                    (Some(m), Some(r)) => {
                        format!("{:.2}× rayon-join's time ({m:.6} s vs {r:.6} s)", m / r)
                    }
                    _ => "n/a".into(),
                };
                let _ = writeln!(
                    o,
                    "- fib, {}, magpie {p}: {fig} — `{}`",
                    workers_word(w),
                    bench_cmd(kernels::fib::KERNEL, s.n, w, p, runs)
                );
            }
        }
    }
    if let Some(s) = find(kernels::fj::FJ) {
        let tasks = s.kernel.tasks_per_run(s.n).unwrap_or(1) as f64;
        for &w in ws {
            let rayon = s
                .median(Runtime::Peer(Peer::RayonScope), w)
                .map(|r| r / tasks * 1e9);
            for p in POLICIES {
                let fig = match (
                    s.median(Runtime::Magpie(p), w).map(|m| m / tasks * 1e9),
                    rayon,
                ) {
                    (Some(m), Some(r)) => format!(
                        "{m:.1} ns per task; rayon-scope {r:.1} ns per task; ratio {:.2}",
                        m / r
                    ),
                    (Some(m), None) => format!("{m:.1} ns per task; rayon-scope n/a"),
                    _ => "n/a".into(),
                };
                let _ = writeln!(
                    o,
                    "- FJ, {}, magpie {p}: {fig} — `{}`",
                    workers_word(w),
                    bench_cmd(kernels::fj::FJ, s.n, w, p, runs)
                );
            }
        }
    }
    for s in sections {
        for &w in ws {
            let med = |p| s.median(Runtime::Magpie(p), w);
            let best = [Policy::WorkFirst, Policy::HelpFirst]
                .into_iter()
                .filter_map(|p| Some((p, med(p)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let fig = match (med(Policy::Adaptive), best) {
                (Some(adp), Some((bp, bm))) => format!(
                    "{:+.1}% vs the best fixed policy ({bp}, {bm:.6} s; adaptive {adp:.6} s)",
                    pct(adp, bm)
                ),
                _ => "n/a".into(),
            };
            let _ = writeln!(
                o,
                "- {}, {}, adaptive vs best fixed: {fig} — `{}`",
                s.kernel,
                workers_word(w),
                policies_cmd(s.kernel, s.n, w, &POLICIES, runs)
            );
        }
    }
    for k in [kernels::fib::KERNEL, kernels::fj::FJ] {
        let Some(s) = find(k) else { continue };
        for &w in ws {
            let fig = match (
                s.median(Runtime::Magpie(Policy::WorkFirst), w),
                s.median(Runtime::Magpie(Policy::HelpFirst), w),
            ) {
                (Some(wf), Some(hf)) => format!("{:.2} ({wf:.6} s / {hf:.6} s)", wf / hf),
                _ => "n/a".into(),
            };
            let _ = writeln!(
                o,
                "- {k}, {}, work-first / help-first time: {fig} — `{}`",
                workers_word(w),
                policies_cmd(k, s.n, w, &[Policy::WorkFirst, Policy::HelpFirst], runs)
            );
        }
    }
    let _ = writeln!(
        o,
        "- Idle pool of 2 workers, CPU over 1 s: {idle_pct:.3}% of one core (target < 5%) — `magpie idle --workers 2 --seconds 1`"
    );
    o
}
