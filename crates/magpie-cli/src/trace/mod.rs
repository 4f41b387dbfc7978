//! `magpie trace`: steal-tree traces (Lifflander's thesis, Ch. 4; the data model is
//! `magpie::trace`).
//!
//! - `magpie trace <kernel> -o run.mtrace` runs the kernel once on a pool that traces, verified
//!   as `magpie bench` verifies (a wrong result is an error and writes nothing), writes the trace
//!   file and prints a summary: workers, phases, steals, the storage per worker against the
//!   thesis's formulas and against storing the worker of every task, and the work and span of the
//!   steal tree.
//! - `magpie trace export run.mtrace --format perfetto|csv|svg` converts a trace file
//!   ([`perfetto`], [`analysis`], [`svg`]).
//! - `magpie trace summary run.mtrace` prints the summary of a trace file.
//!
//! A trace file that cannot be read (missing, truncated, corrupted, of another format version, or
//! not a trace) is bad input: one `error:` line naming the file and the problem, exit code 2.

pub(crate) mod analysis;
pub(crate) mod perfetto;
pub(crate) mod svg;

use crate::cli::{ExportArgs, Format, SummaryArgs, TraceAction, TraceArgs, TraceRunArgs};
use crate::failure::Failure;
use crate::render::format::count;
use magpie::trace::{Origin, Taken, Trace};
use magpie_bench::runner::Case;
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// How a phase began, as the timeline colours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Root,
    External,
    StolenChild,
    StolenContinuation,
    Resumed,
    Early,
}

impl Kind {
    /// In legend order.
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Root,
        Kind::StolenChild,
        Kind::StolenContinuation,
        Kind::Resumed,
        Kind::Early,
        Kind::External,
    ];

    pub(crate) fn of(o: &Origin) -> Kind {
        match o {
            Origin::Root { .. } => Kind::Root,
            Origin::External => Kind::External,
            Origin::Stolen {
                taken: Taken::Child,
                ..
            } => Kind::StolenChild,
            Origin::Stolen {
                taken: Taken::Continuation,
                ..
            } => Kind::StolenContinuation,
            Origin::Resumed { .. } => Kind::Resumed,
            Origin::Early { .. } => Kind::Early,
        }
    }

    pub(crate) fn color(self) -> &'static str {
        match self {
            Kind::Root => "#1f77b4",
            Kind::StolenChild => "#2ca02c",
            Kind::StolenContinuation => "#ff7f0e",
            Kind::Resumed => "#9467bd",
            Kind::Early => "#8c564b",
            Kind::External => "#7f7f7f",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Root => "root",
            Kind::StolenChild => "stolen child",
            Kind::StolenContinuation => "stolen continuation",
            Kind::Resumed => "resumed",
            Kind::Early => "early",
            Kind::External => "external",
        }
    }
}

fn taken_word(t: Taken) -> &'static str {
    match t {
        Taken::Child => "child",
        Taken::Continuation => "continuation",
    }
}

/// A phase's origin in words: `root`, `stolen from w1 (child, level 3)`, `resumed`, `early`,
/// `external`.
pub(crate) fn origin_name(o: &Origin) -> String {
    match *o {
        Origin::Root { .. } => "root".into(),
        Origin::External => "external".into(),
        Origin::Stolen { from, taken, level } => format!(
            "stolen from w{} ({}, level {level})",
            from.phase.worker,
            taken_word(taken)
        ),
        Origin::Resumed { .. } => "resumed".into(),
        Origin::Early { .. } => "early".into(),
    }
}

/// A phase and its origin's details, as JSON fields.
pub(crate) fn origin_args(phase: u32, o: &Origin) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::json;
    let mut m = serde_json::Map::new();
    m.insert("phase".into(), json!(phase));
    let event = |m: &mut serde_json::Map<String, serde_json::Value>,
                 prefix: &str,
                 e: magpie::trace::EventId| {
        m.insert(format!("{prefix}_worker"), json!(e.phase.worker));
        m.insert(format!("{prefix}_phase"), json!(e.phase.index));
        m.insert("event".into(), json!(e.seq));
        m.insert("half".into(), json!(e.half));
    };
    match *o {
        Origin::Root { ordinal } => {
            m.insert("origin".into(), json!("root"));
            m.insert("install".into(), json!(ordinal));
        }
        Origin::External => {
            m.insert("origin".into(), json!("external"));
        }
        Origin::Stolen { from, taken, level } => {
            m.insert("origin".into(), json!("stolen"));
            event(&mut m, "victim", from);
            m.insert("taken".into(), json!(taken_word(taken)));
            m.insert("level".into(), json!(level));
        }
        Origin::Resumed { sync } => {
            m.insert("origin".into(), json!("resumed"));
            event(&mut m, "sync", sync);
        }
        Origin::Early { from } => {
            m.insert("origin".into(), json!("early"));
            event(&mut m, "from", from);
        }
    }
    m
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
fn analyse(t: &Trace, path: &Path, burden_us: f64) -> Result<analysis::Analysis, Failure> {
    analysis::analyse(t, (burden_us * 1e3).round() as u64).map_err(|e| {
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
        Format::Csv => analysis::csv(&an),
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

/// The timeline's title: what, workers, policy, phases, steals, parallelism.
pub(crate) fn title(what: &str, t: &Trace, an: &analysis::Analysis) -> String {
    format!(
        "{what}: {} ({}), {}, {}, parallelism {}",
        count(t.workers(), "worker"),
        t.policy,
        count(t.phases.iter().map(Vec::len).sum::<usize>(), "phase"),
        count(t.steal_count(), "steal"),
        an.overall
            .parallelism()
            .map_or("–".into(), |p| format!("{p:.2}"))
    )
}

/// What a traced run was, for its summary.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunInfo {
    pub kernel: String,
    pub n: u64,
    pub grain: Option<u64>,
    pub tree: Option<String>,
    pub verified: bool,
    /// Wall time of the run, seconds.
    pub run_s: f64,
}

/// One worker's storage (or the total, `worker` null).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct WorkerStorage {
    pub worker: Option<usize>,
    pub phases: usize,
    /// Bytes of the worker's section of the trace file.
    pub file_bytes: u64,
    /// Of those, timestamps.
    pub timestamp_bytes: u64,
    /// The thesis's b_w (work-first) for the worker's phases, without timestamps.
    pub b_w: u64,
    /// The thesis's b_h (help-first).
    pub b_h: u64,
    /// Storing the worker of every task instead: 4 bytes per task, split evenly over workers.
    pub enumeration_bytes: f64,
    /// enumeration_bytes / file_bytes.
    pub enumeration_over_file: Option<f64>,
}

/// `magpie trace`'s summary (also `--json`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Summary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunInfo>,
    /// The trace file.
    pub file: String,
    /// Its size in bytes (the sections plus header, counts and checksum).
    pub file_bytes: u64,
    pub policy: String,
    pub workers: usize,
    pub phases: usize,
    pub steals: usize,
    /// Spawns while tracing.
    pub spawns: u64,
    /// From the pool's start to when the trace was taken, seconds.
    pub duration_s: f64,
    /// Busy time of every worker, seconds (the sum of the segments).
    pub busy_s: Vec<f64>,
    /// The steal tree's work, span and parallelism overall (see `trace export --format csv`).
    pub work_s: f64,
    pub span_s: f64,
    pub parallelism: Option<f64>,
    pub burdened_span_s: f64,
    pub burdened_parallelism: Option<f64>,
    /// The burden per steal edge, µs.
    pub burden_us: f64,
    pub storage: Vec<WorkerStorage>,
    pub storage_total: WorkerStorage,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Summary {
    pub(crate) fn new(
        t: &Trace,
        file: &Path,
        an: &analysis::Analysis,
        run: Option<RunInfo>,
    ) -> Summary {
        let st = t.storage();
        let file_bytes = t.to_bytes().len() as u64;
        let ratio = |e: f64, f: u64| (f > 0).then(|| e / f as f64);
        let storage: Vec<WorkerStorage> = (0..t.workers())
            .map(|w| {
                let f = st.file_bytes.get(w).copied().unwrap_or(0);
                WorkerStorage {
                    worker: Some(w),
                    phases: t.phases[w].len(),
                    file_bytes: f,
                    timestamp_bytes: st.timestamp_bytes.get(w).copied().unwrap_or(0),
                    b_w: st.b_w.get(w).copied().unwrap_or(0),
                    b_h: st.b_h.get(w).copied().unwrap_or(0),
                    enumeration_bytes: st.enumeration_per_worker,
                    enumeration_over_file: ratio(st.enumeration_per_worker, f),
                }
            })
            .collect();
        let f: u64 = storage.iter().map(|s| s.file_bytes).sum();
        let e = st.enumeration_per_worker * t.workers() as f64;
        let storage_total = WorkerStorage {
            worker: None,
            phases: storage.iter().map(|s| s.phases).sum(),
            file_bytes: f,
            timestamp_bytes: storage.iter().map(|s| s.timestamp_bytes).sum(),
            b_w: storage.iter().map(|s| s.b_w).sum(),
            b_h: storage.iter().map(|s| s.b_h).sum(),
            enumeration_bytes: e,
            enumeration_over_file: ratio(e, f),
        };
        let o = &an.overall;
        Summary {
            run,
            file: file.display().to_string(),
            file_bytes,
            policy: t.policy.name().into(),
            workers: t.workers(),
            phases: storage_total.phases,
            steals: t.steal_count(),
            spawns: t.spawns,
            duration_s: secs(t.duration_ns),
            busy_s: t.busy_ns().into_iter().map(secs).collect(),
            work_s: secs(o.work_ns),
            span_s: secs(o.span_ns),
            parallelism: o.parallelism(),
            burdened_span_s: secs(o.burdened_span_ns),
            burdened_parallelism: o.burdened_parallelism(),
            burden_us: crate::cli::BURDEN_US,
            storage,
            storage_total,
        }
    }

    /// The summary as text.
    pub(crate) fn text(&self) -> String {
        let mut o = String::new();
        if let Some(r) = &self.run {
            let what = match (&r.tree, r.grain) {
                (Some(t), _) => format!("tree {t}"),
                (None, Some(g)) => format!("n={} grain={g}", r.n),
                (None, None) => format!("n={}", r.n),
            };
            let _ = writeln!(
                o,
                "{} {what} on {} ({}): {}, {:.6} s",
                r.kernel,
                count(self.workers, "worker"),
                self.policy,
                if r.verified {
                    "verified"
                } else {
                    "NOT verified"
                },
                r.run_s
            );
        }
        let _ = writeln!(
            o,
            "trace {}: {:.3} KB; {}, {}, {}, {}",
            self.file,
            self.file_bytes as f64 / 1e3,
            count(self.workers, "worker"),
            count(self.phases, "phase"),
            count(self.steals, "steal"),
            count(self.spawns as usize, "spawn")
        );
        let busy: f64 = self.busy_s.iter().sum();
        let num = |x: Option<f64>| x.map_or("–".into(), |x| format!("{x:.2}"));
        let _ = writeln!(
            o,
            "busy {} of {} workers × {}; steal tree: work {}, span {}, parallelism {} \
             (burdened by {} µs per steal: span {}, parallelism {})",
            crate::render::format::duration(busy),
            self.workers,
            crate::render::format::duration(self.duration_s),
            crate::render::format::duration(self.work_s),
            crate::render::format::duration(self.span_s),
            num(self.parallelism),
            self.burden_us,
            crate::render::format::duration(self.burdened_span_s),
            num(self.burdened_parallelism)
        );
        let _ = writeln!(
            o,
            "storage per worker (KB = 1000 bytes; b_w, b_h: the thesis's formulas, without \
             timestamps; enumeration: 4 bytes per task, split evenly):"
        );
        let head = [
            "worker",
            "phases",
            "file KB",
            "timestamps KB",
            "b_w KB",
            "b_h KB",
            "enumeration KB",
            "enumeration / file",
        ];
        let kb = |b: f64| format!("{:.3}", b / 1e3);
        let mut rows: Vec<[String; 8]> = vec![head.map(String::from)];
        for s in self.storage.iter().chain([&self.storage_total]) {
            rows.push([
                s.worker.map_or("total".into(), |w| w.to_string()),
                s.phases.to_string(),
                kb(s.file_bytes as f64),
                kb(s.timestamp_bytes as f64),
                kb(s.b_w as f64),
                kb(s.b_h as f64),
                kb(s.enumeration_bytes),
                s.enumeration_over_file
                    .map_or("–".into(), |r| format!("{r:.1}×")),
            ]);
        }
        let mut width = [0usize; 8];
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        for r in &rows {
            let mut line = String::new();
            for (c, w) in r.iter().zip(width) {
                let _ = write!(line, "  {c:>w$}");
            }
            let _ = writeln!(o, "{line}");
        }
        o
    }
}

fn print_summary(s: &Summary, json: bool) -> Result<(), Failure> {
    let text = if json {
        let j = serde_json::to_string(s)
            .map_err(|e| Failure::Failed(format!("cannot serialize the summary: {e}")))?;
        format!("{j}\n")
    } else {
        s.text()
    };
    write_out(None, &text)
}

fn summary_of_file(a: SummaryArgs) -> Result<(), Failure> {
    let t = read(&a.trace)?;
    let an = analyse(&t, &a.trace, crate::cli::BURDEN_US)?;
    print_summary(&Summary::new(&t, &a.trace, &an, None), a.json)
}

/// Runs `case` once on `pool`, which must trace, verified; returns the trace and the run's wall
/// time. A wrong result is a failure, magpie's stack-limit stop a stop, a bad case bad input.
pub(crate) fn traced_run(pool: &magpie::Pool, case: &Case) -> Result<(Trace, f64), Failure> {
    let run_s = crate::measure::run::run_once_verified(pool, case)?;
    let t = pool
        .trace()
        .ok_or_else(|| Failure::Failed("the pool did not record a trace".into()))?;
    Ok((t, run_s))
}

/// Writes a trace file.
pub(crate) fn write_trace(t: &Trace, path: &Path) -> Result<(), Failure> {
    std::fs::write(path, t.to_bytes()).map_err(|e| {
        Failure::Failed(format!(
            "cannot write the trace {}: {e}; choose a file you can write with --out",
            path.display()
        ))
    })
}

fn run_kernel(a: TraceRunArgs) -> Result<(), Failure> {
    let kernel = a
        .kernel
        .ok_or_else(|| Failure::Usage("missing the kernel to trace".into()))?;
    let builder = crate::bench::run_pool(&a.opts)?.trace(true);
    let case = crate::bench::run_case(kernel, &a.opts)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.mtrace", kernel.name())));
    let pool = builder.build().map_err(Failure::from_magpie)?;
    let (t, run_s) = traced_run(&pool, &case)?;
    drop(pool);
    write_trace(&t, &out)?;
    let an = analyse(&t, &out, crate::cli::BURDEN_US)?;
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
