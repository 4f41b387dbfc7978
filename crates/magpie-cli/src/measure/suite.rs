//! The suite's runs: every kernel of a [`Plan`] under each magpie policy at each worker count,
//! with the serial twin and the peers, in interleaved rounds (one run of every runtime per
//! round, see `runner::merge`); PDFS configurations in a child process, so that each one's peak
//! RSS is its own; progress on stderr (a bar on a terminal, else a line per configuration); and
//! the add-ons a plan asks for: traced runs, the cache model, splicing, a co-run, the simulated
//! task collections. `magpie suite` and `magpie report` measure through [`measure_all`].

use crate::failure::Failure;
use crate::format::utc_date;
use crate::model::corun::ProgramPair;
use crate::model::trace::Analysis;
use crate::model::{
    CorunInfo, LocalityInfo, Machine, NotMeasured, Results, Row, SpliceInfo, TraceInfo, Who,
    POLICIES,
};
use indicatif::ProgressBar;
use magpie::dws::SharingMode;
use magpie::trace::Trace;
use magpie::Policy;
use magpie_bench::harness::{Measured, RunError};
use magpie_bench::kernels;
use magpie_bench::runner::{self, BenchRecord};
use magpie_bench::{Kernel, Peer, Size};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What the suite will run.
pub(crate) struct Plan {
    pub(crate) kernels: Vec<Kernel>,
    pub(crate) policies: Vec<Policy>,
    pub(crate) workers: Vec<usize>,
    pub(crate) peers: Vec<Peer>,
    pub(crate) size: Size,
    pub(crate) runs: usize,
    /// Kernels to trace once more at the highest worker count.
    pub(crate) traces: Vec<Kernel>,
    /// What to model under each locality strategy (`--locality`).
    pub(crate) locality: Option<LocalityPlan>,
    /// Run the stencils spliced too (`--splice`).
    pub(crate) splice: bool,
    /// Co-run two programs under every sharing mode (`--corun`).
    pub(crate) corun: Option<ProgramPair>,
    /// Simulate magpie-dist's collections (`--dist`).
    pub(crate) dist: Option<crate::measure::dist::DistSpec>,
    /// Where the two rayon builds are (`--rayon-builds`; default: beside this executable).
    pub(crate) rayon_builds: Option<PathBuf>,
}

/// Kernels to model under each locality strategy, and the virtual machine.
pub(crate) struct LocalityPlan {
    pub(crate) kernels: Vec<Kernel>,
    pub(crate) topology: magpie::Topology,
    /// `--locality-topology` as given.
    pub(crate) spec: String,
}

impl Plan {
    /// The kernels, policies, worker counts and peers given, at `size`, `runs` timed runs
    /// each, without add-ons.
    pub(crate) fn new(
        kernels: Vec<Kernel>,
        policies: Vec<Policy>,
        workers: Vec<usize>,
        peers: Vec<Peer>,
        size: Size,
        runs: usize,
    ) -> Plan {
        Plan {
            kernels,
            policies,
            workers,
            peers,
            size,
            runs,
            traces: vec![],
            locality: None,
            splice: false,
            corun: None,
            dist: None,
            rayon_builds: None,
        }
    }

    /// The policy of the traced runs: adaptive when the suite runs it, else its first policy.
    pub(crate) fn trace_policy(&self) -> Policy {
        if self.policies.contains(&Policy::Adaptive) {
            Policy::Adaptive
        } else {
            self.policies.first().copied().unwrap_or(Policy::Adaptive)
        }
    }

    /// The worker count of the traced runs: the suite's highest.
    pub(crate) fn trace_workers(&self) -> usize {
        self.workers.iter().copied().max().unwrap_or(1)
    }

    fn peers_of(&self, k: Kernel) -> Vec<Peer> {
        k.peers()
            .iter()
            .copied()
            .filter(|p| self.peers.contains(p))
            .collect()
    }

    /// Configurations (rows) and single timed runs in the whole suite.
    fn totals(&self) -> (usize, u64) {
        let mut configs = 0;
        for &k in &self.kernels {
            configs += 1 + self.workers.len() * (self.policies.len() + self.peers_of(k).len());
        }
        (configs, (configs * self.runs) as u64)
    }

    pub(crate) fn command(&self) -> String {
        let join = |v: Vec<String>| v.join(",");
        let mut c = format!(
            "magpie suite --size {} --runs {} --workers {}",
            self.size,
            self.runs,
            join(self.workers.iter().map(|w| w.to_string()).collect())
        );
        if self.kernels.len() != Kernel::ALL.len() {
            let _ = write!(
                c,
                " --kernels {}",
                join(self.kernels.iter().map(|k| k.to_string()).collect())
            );
        }
        if self.policies.len() != POLICIES.len() {
            let _ = write!(
                c,
                " --policies {}",
                join(self.policies.iter().map(|p| p.to_string()).collect())
            );
        }
        let all = crate::model::all_peers();
        if self.peers.is_empty() {
            c.push_str(" --peers none");
        } else if self.peers.len() != all.len() {
            let _ = write!(
                c,
                " --peers {}",
                join(self.peers.iter().map(|p| p.to_string()).collect())
            );
        }
        if !self.traces.is_empty() {
            let _ = write!(
                c,
                " --trace {}",
                join(self.traces.iter().map(|k| k.to_string()).collect())
            );
        }
        if let Some(l) = &self.locality {
            let _ = write!(
                c,
                " --locality {} --locality-topology {}",
                join(l.kernels.iter().map(|k| k.to_string()).collect()),
                l.spec
            );
        }
        if self.splice {
            c.push_str(" --splice");
        }
        if let Some(ProgramPair(x, y)) = &self.corun {
            let _ = write!(c, " --corun {x},{y}");
        }
        if let Some(d) = &self.dist {
            let _ = write!(c, " --dist {d}");
        }
        c
    }
}

pub(crate) fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Progress on stderr: a bar on a terminal, else one line per finished configuration.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    done: usize,
    total: usize,
}

impl Progress {
    fn new(total_configs: usize, total_runs: u64) -> Progress {
        let bar = magpie_view::progress::bar(total_runs, "runs");
        Progress {
            bar,
            started: Instant::now(),
            done: 0,
            total: total_configs,
        }
    }

    fn at(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    fn ran(&self, runs: usize) {
        if let Some(b) = &self.bar {
            b.inc(runs as u64);
        }
    }

    fn finished(&mut self, r: &Row, serial_median: Option<f64>) {
        self.done += 1;
        let outcome = match (r.median_s, &r.error) {
            (_, Some(e)) if r.stopped => e.clone(),
            (_, Some(e)) => format!("FAILED: {e}"),
            (Some(m), None) => match serial_median {
                Some(s) if r.runtime != "serial" => format!("{m:.6} s, {:.2}× serial", s / m),
                _ => format!("{m:.6} s"),
            },
            (None, None) => "no runs".into(),
        };
        let line = format!(
            "[{:>6.1} s] {}/{} {} n={} {} x{}: {outcome}",
            self.started.elapsed().as_secs_f64(),
            self.done,
            self.total,
            r.kernel,
            r.n,
            r.label(),
            r.workers
        );
        match &self.bar {
            None => eprintln!("{line}"),
            Some(b) if r.error.is_some() => b.println(line),
            Some(_) => {}
        }
    }

    fn not_measured(&mut self, kernel: Kernel, peer: Peer, reason: &str) {
        self.not_measured_named(kernel, peer.name(), reason, 1);
    }

    /// `configs` configurations of `runtime` on `kernel` not measured, with why.
    fn not_measured_named(&mut self, kernel: Kernel, runtime: &str, reason: &str, configs: usize) {
        self.done += configs;
        let line = format!(
            "[{:>6.1} s] {}/{} {kernel} {runtime}: not measured: {reason}",
            self.started.elapsed().as_secs_f64(),
            self.done,
            self.total,
        );
        match &self.bar {
            None => eprintln!("{line}"),
            Some(b) => b.println(line),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Measures the given kernels, policies, worker counts and peers exactly as the suite does
/// (rounds, PDFS in child processes, peers that cannot run here listed as not measured), with the
/// suite's progress output. `magpie report` measures through this too.
/// Measures every kernel of the plan in turn; after each one, `finished` gets the kernel and
/// everything measured so far (the suite writes it to `results.partial.json`).
pub(crate) fn measure_all(
    plan: &Plan,
    mut finished: impl FnMut(Kernel, &[Row], &[NotMeasured]),
) -> Result<(Vec<Row>, Vec<NotMeasured>), Failure> {
    let (configs, total_runs) = plan.totals();
    let mut prog = Progress::new(configs, total_runs);
    let mut rows = vec![];
    let mut not_measured = vec![];
    for &k in &plan.kernels {
        match measure_kernel(plan, k, &mut prog, &mut not_measured) {
            Ok(r) => {
                rows.extend(r);
                finished(k, &rows, &not_measured);
            }
            Err(e) => {
                prog.finish();
                return Err(e);
            }
        }
    }
    prog.finish();
    Ok((rows, not_measured))
}

/// One PDFS configuration in a child process (`magpie bench pdfs ... --json`), so that its peak
/// RSS is its own.
fn pdfs_child(row: &mut Row, n: u64, w: usize, p: Policy, runs: usize) {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            row.error = Some(format!("cannot find the magpie executable: {e}"));
            return;
        }
    };
    let out = Command::new(exe)
        .args(["bench", "pdfs", "--n", &n.to_string()])
        .args(["--workers", &w.to_string(), "--policy", p.name()])
        .args(["--runs", &runs.to_string()])
        .args(["--json", "--no-peers", "--no-serial"])
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            row.error = Some(format!("cannot run the child: {e}"));
            return;
        }
    };
    match serde_json::from_slice::<BenchRecord>(&out.stdout) {
        Ok(rec) => row.fill_record(rec),
        Err(_) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            row.error = Some(format!("child {}: {last}", out.status));
        }
    }
}

/// Measures one kernel at every worker count of the plan; the serial twin joins the rounds of the
/// first worker count. Rows come out serial first, then per worker count magpie's policies and the
/// peers.
/// A peer that cannot be set up here (e.g. a native peer whose program is not built) is listed in
/// `not_measured` instead of as a failed row.
fn measure_kernel(
    plan: &Plan,
    kernel: Kernel,
    prog: &mut Progress,
    not_measured: &mut Vec<NotMeasured>,
) -> Result<Vec<Row>, Failure> {
    if kernel.is_program() {
        return Ok(measure_program(plan, kernel, prog, not_measured));
    }
    let n = kernel.size_n(plan.size);
    let runs = plan.runs;
    let peers = plan.peers_of(kernel);
    let mut rows = vec![];
    let mut serial_median = None;
    for (i, &w) in plan.workers.iter().enumerate() {
        let mut serial_acc = None;
        let mut group = vec![];
        let mut skipped = vec![];
        if kernel == kernels::pdfs::KERNEL {
            if i == 0 {
                for round in 1..=runs {
                    prog.at(&format!("{kernel} serial, round {round}/{runs}"));
                    if !runner::failed(&serial_acc) {
                        runner::merge(
                            &mut serial_acc,
                            runner::run_serial(&runner::Case::new(kernel, n), 1),
                        );
                    }
                    prog.ran(1);
                }
            }
            for &p in &plan.policies {
                prog.at(&format!("{kernel} magpie {p} x{w} (child process)"));
                let mut row = Row::new(kernel, plan.size, n, Who::Magpie(p), w);
                pdfs_child(&mut row, n, w, p, runs);
                prog.ran(runs);
                group.push(row);
            }
        } else {
            let pools = plan
                .policies
                .iter()
                .map(|&p| magpie::Pool::builder().workers(w).policy(p).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(Failure::from_magpie)?;
            let mut accs: Vec<_> = pools.iter().map(|_| None).collect();
            let mut peer_accs: Vec<_> = peers.iter().map(|_| None).collect();
            // Rounds: one run of every runtime per round, so that drift in the machine's speed
            // falls on every runtime alike.
            for round in 1..=runs {
                prog.at(&format!("{kernel} x{w}, round {round}/{runs}"));
                if i == 0 {
                    if !runner::failed(&serial_acc) {
                        runner::merge(
                            &mut serial_acc,
                            runner::run_serial(&runner::Case::new(kernel, n), 1),
                        );
                    }
                    prog.ran(1);
                }
                for (acc, pool) in accs.iter_mut().zip(&pools) {
                    if !runner::failed(acc) {
                        runner::merge(
                            acc,
                            runner::run_magpie(pool, &runner::Case::new(kernel, n), 1),
                        );
                    }
                    prog.ran(1);
                }
                for (acc, &peer) in peer_accs.iter_mut().zip(&peers) {
                    if !runner::failed(acc) {
                        runner::merge(
                            acc,
                            runner::run_peer(peer, &runner::Case::new(kernel, n), w, 1),
                        );
                    }
                    prog.ran(1);
                }
            }
            for (acc, &p) in accs.into_iter().zip(&plan.policies) {
                let mut row = Row::new(kernel, plan.size, n, Who::Magpie(p), w);
                row.fill(acc.expect("runs >= 1"));
                group.push(row);
            }
            for (acc, &peer) in peer_accs.into_iter().zip(&peers) {
                match acc.expect("runs >= 1") {
                    Err(RunError::Setup(reason)) => {
                        skipped.push((peer, reason.clone()));
                        if !not_measured
                            .iter()
                            .any(|x| x.kernel == kernel.name() && x.runtime == peer.name())
                        {
                            not_measured.push(NotMeasured {
                                kernel: kernel.name().into(),
                                runtime: peer.name().into(),
                                reason,
                            });
                        }
                    }
                    r => {
                        let mut row = Row::new(kernel, plan.size, n, Who::Peer(peer), w);
                        row.fill(r);
                        group.push(row);
                    }
                }
            }
        }
        if let Some(acc) = serial_acc {
            let mut row = Row::new(kernel, plan.size, n, Who::Serial, 1);
            row.fill(acc);
            serial_median = row.median_s;
            prog.finished(&row, serial_median);
            rows.push(row);
        }
        for row in group {
            prog.finished(&row, serial_median);
            rows.push(row);
        }
        for (peer, reason) in skipped {
            prog.not_measured(kernel, peer, &reason);
        }
    }
    Ok(rows)
}

/// Measures one of the rayon programs: the serial twin here, round by round; magpie (each policy)
/// and rayon in the two rayon builds (`rayon_builds.rs`), one child process per runtime and
/// policy with all its runs at every worker count. Rows come out as `measure_kernel`'s do. If
/// the builds cannot be found, magpie and rayon are listed as not measured, with why and how to
/// build them.
fn measure_program(
    plan: &Plan,
    kernel: Kernel,
    prog: &mut Progress,
    not_measured: &mut Vec<NotMeasured>,
) -> Vec<Row> {
    use crate::measure::rayon_builds::{Core, RayonBuilds, Run};
    let n = kernel.size_n(plan.size);
    let runs = plan.runs;
    let peers = plan.peers_of(kernel);
    let mut rows = vec![];
    let mut serial_acc = None;
    for round in 1..=runs {
        prog.at(&format!("{kernel} serial, round {round}/{runs}"));
        if !runner::failed(&serial_acc) {
            runner::merge(
                &mut serial_acc,
                runner::run_serial(&runner::Case::new(kernel, n), 1),
            );
        }
        prog.ran(1);
    }
    let mut serial = Row::new(kernel, plan.size, n, Who::Serial, 1);
    serial.fill(serial_acc.expect("runs >= 1"));
    let serial_median = serial.median_s;
    prog.finished(&serial, serial_median);
    rows.push(serial);
    let builds = match RayonBuilds::find(plan.rayon_builds.as_deref()) {
        Ok(b) => b,
        Err(reason) => {
            let mut who: Vec<(String, usize)> = vec![("magpie".into(), plan.policies.len())];
            who.extend(peers.iter().map(|p| (p.name().to_string(), 1)));
            for (runtime, configs) in who {
                prog.not_measured_named(kernel, &runtime, &reason, configs * plan.workers.len());
                not_measured.push(NotMeasured {
                    kernel: kernel.name().into(),
                    runtime,
                    reason: reason.clone(),
                });
            }
            prog.ran(plan.workers.len() * (plan.policies.len() + peers.len()) * runs);
            return rows;
        }
    };
    // Each runtime's rows at every worker count: (who, one result per worker count).
    let mut measured: Vec<(Who, Vec<Result<Measured, RunError>>)> = vec![];
    let who_list = plan
        .policies
        .iter()
        .map(|&p| (Who::Magpie(p), Core::Magpie, Some(p)))
        .chain(peers.iter().map(|&p| (Who::Peer(p), Core::Rayon, None)));
    for (who, core, policy) in who_list {
        let name = match who {
            Who::Magpie(p) => format!("magpie {p} (rayon on magpie's rayon-core)"),
            _ => "rayon (its own rayon-core)".to_string(),
        };
        prog.at(&format!("{kernel} {name}, a child process"));
        let run = Run {
            kernel,
            n,
            workers: &plan.workers,
            runs,
            policy,
            inherit_settings: false,
        };
        let results = match builds.run(core, &run) {
            Ok(r) => r,
            Err(e) => plan
                .workers
                .iter()
                .map(|_| Err(RunError::Panicked(e.clone())))
                .collect(),
        };
        prog.ran(plan.workers.len() * runs);
        measured.push((who, results));
    }
    for (i, &w) in plan.workers.iter().enumerate() {
        for (who, results) in &measured {
            let mut row = Row::new(kernel, plan.size, n, *who, w);
            row.fill(results[i].clone());
            prog.finished(&row, serial_median);
            rows.push(row);
        }
    }
    rows
}

/// Models each kernel of `l`'s cache misses under each strategy, as `magpie locality` does at
/// its defaults. A failure is recorded, not returned.
pub(crate) fn modelled(
    l: &LocalityPlan,
    size: Size,
    runs: u64,
    strategies: &crate::measure::locality::Strategies,
) -> Vec<LocalityInfo> {
    let settings = crate::measure::locality::Settings {
        topology: &l.topology,
        strategies: &strategies.0,
        runs,
        line: 64,
        pace_us_per_mib: crate::measure::locality::DEFAULT_PACE_US_PER_MIB,
        boundary_level: None,
        policy: None,
        iterations: None,
        prune: 0,
    };
    l.kernels
        .iter()
        .map(|&k| {
            let n = k.size_n(size);
            // A kernel with a first-touch initialiser is also modelled under the schedules
            // (relws, stows, user); places and squads only where its phases sweep rows.
            let own;
            let settings = if let Some(facet) = k.placement() {
                let mut v: Vec<(String, crate::measure::locality::Strategy)> = strategies
                    .0
                    .iter()
                    .filter(|(_, st)| facet.banded || (st.places.is_none() && !st.squads))
                    .cloned()
                    .collect();
                for (name, st) in crate::measure::locality::schedule_strategies().0 {
                    if !v.iter().any(|(n, _)| *n == name) {
                        v.push((name, st));
                    }
                }
                own = v;
                crate::measure::locality::Settings {
                    strategies: &own,
                    ..settings
                }
            } else {
                crate::measure::locality::Settings { ..settings }
            };
            let strategies = settings.strategies;
            eprintln!(
                "modelling {k} n={n} on a virtual {} under {} strategies, {runs} run(s) each",
                l.spec,
                strategies.len()
            );
            let (rows, error) =
                match crate::measure::locality::model(&runner::Case::new(k, n), &settings) {
                    Ok(rows) => (rows, None),
                    Err(f) => (vec![], Some(f.message().to_string())),
                };
            LocalityInfo {
                kernel: k.name().into(),
                n,
                topology: l.spec.clone(),
                runs,
                rows,
                error,
            }
        })
        .collect()
}

/// Runs `kernel` once more on a pool of `workers` that traces, verified; writes the trace to
/// `<out>/traces/<kernel>.mtrace` and analyses its steal tree. A failure is recorded in the
/// record, not returned; the trace and its analysis come back when there are both, for the
/// timeline.
pub(crate) fn traced(
    kernel: Kernel,
    n: u64,
    workers: usize,
    policy: Policy,
    out: &Path,
) -> (TraceInfo, Option<(Trace, Analysis)>) {
    eprintln!("tracing {kernel} n={n} magpie {policy} x{workers}");
    let mut info = TraceInfo {
        kernel: kernel.name().into(),
        n,
        workers,
        policy: policy.name().into(),
        file: None,
        run_s: None,
        phases: 0,
        steals: 0,
        work_s: None,
        span_s: None,
        parallelism: None,
        stopped: false,
        error: None,
        svg: None,
    };
    let taken = magpie::Pool::builder()
        .workers(workers)
        .policy(policy)
        .trace(true)
        .build()
        .map_err(Failure::from_magpie)
        .and_then(|pool| crate::measure::trace::traced_run(&pool, &runner::Case::new(kernel, n)));
    let (t, run_s) = match taken {
        Ok(x) => x,
        Err(f) => {
            info.stopped = matches!(f, Failure::Stopped(_));
            info.error = Some(f.message().to_string());
            return (info, None);
        }
    };
    info.run_s = Some(run_s);
    info.phases = t.phases.iter().map(Vec::len).sum();
    info.steals = t.steal_count();
    let file = format!("traces/{}.mtrace", kernel.name());
    if let Err(f) = crate::measure::trace::write_trace(&t, &out.join(&file)) {
        info.error = Some(f.message().to_string());
        return (info, None);
    }
    info.file = Some(file);
    let burden = (crate::model::trace::BURDEN_US * 1e3) as u64;
    match crate::model::trace::analyse(&t, burden) {
        Ok(an) => {
            let o = &an.overall;
            info.work_s = Some(o.work_ns as f64 / 1e9);
            info.span_s = Some(o.span_ns as f64 / 1e9);
            info.parallelism = o.parallelism();
            (info, Some((t, an)))
        }
        Err(e) => {
            info.error = Some(format!("the trace does not form a tree: {e}"));
            (info, None)
        }
    }
}

pub(crate) fn machine() -> Machine {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let hostname = read("/proc/sys/kernel/hostname")
        .or_else(|| read("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()));
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == "model name")
            .map(|(_, v)| v.trim().to_string())
    });
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Machine {
        hostname,
        cpus: available_cpus(),
        sockets: magpie::Topology::detect().sockets.len(),
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        cpu_model,
        magpie_cli_version: env!("CARGO_PKG_VERSION").into(),
        unix_time,
        date_utc: utc_date(unix_time),
    }
}

impl Results {
    /// What `plan` measured of `kernels` in `elapsed_s`: its rows and the peers it could not
    /// measure, with the headline (which reads only the rows, workers and policies), and none of
    /// the add-ons (traces, locality, splice, co-run, dist).
    pub(crate) fn measured(
        machine: Machine,
        plan: &Plan,
        kernels: Vec<String>,
        elapsed_s: f64,
        rows: Vec<Row>,
        not_measured: Vec<NotMeasured>,
    ) -> Results {
        let mut res = Results {
            machine,
            size: plan.size.name().into(),
            runs: plan.runs,
            command: plan.command(),
            kernels,
            workers: plan.workers.clone(),
            policies: plan.policies.iter().map(|p| p.name().into()).collect(),
            peers: plan.peers.iter().map(|p| p.name().into()).collect(),
            elapsed_s,
            headline: None,
            rows,
            not_measured,
            traces: vec![],
            locality: vec![],
            splice: vec![],
            corun: None,
            dist: None,
            small_input: None,
        };
        res.headline = crate::model::headline::headline(&res);
        res
    }
}

/// `magpie corun A B` under every mode, each program with `workers` workers and the suite's
/// size and runs (and at least a second of co-running).
pub(crate) fn corunning(pair: ProgramPair, workers: usize, size: Size, runs: usize) -> CorunInfo {
    let plan = crate::measure::corun::Plan {
        a: pair.0,
        b: pair.1,
        modes: vec![
            SharingMode::Dws,
            SharingMode::Abp,
            SharingMode::Ep,
            SharingMode::Off,
        ],
        size,
        workers,
        solo_runs: runs,
        runs,
        min_seconds: 1.0,
        sample_ms: 20,
        timeout: 600.0,
    };
    match crate::measure::corun::measure(&plan) {
        Ok(mut r) => {
            // The command that repeats this co-run on its own.
            r.command = format!(
                "magpie corun {} {} --size {} --workers {workers} --solo-runs {runs} --runs \
                 {runs} --min-seconds 1",
                pair.0,
                pair.1,
                size.name()
            );
            CorunInfo {
                report: Some(r),
                error: None,
            }
        }
        Err(e) => CorunInfo {
            report: None,
            error: Some(e.message().to_string()),
        },
    }
}

/// Runs each stencil of `kernels` spliced and unspliced at each worker count.
pub(crate) fn spliced(
    kernels: &[Kernel],
    workers: &[usize],
    size: Size,
    runs: usize,
) -> Vec<SpliceInfo> {
    let mut out = Vec::new();
    for &k in kernels {
        if !["heat", "jacobi", "fdtd-2d"].contains(&k.name()) {
            continue;
        }
        for &w in workers {
            let a = crate::measure::splice::Splice {
                kernel: k.name().into(),
                n: k.size_n(size) as usize,
                steps: None,
                window: 8,
                grain: None,
                slice: 0,
                workers: w,
                runs,
                only: None,
            };
            let (outcome, error) = match crate::measure::splice::outcome(&a) {
                Ok(o) => (Some(o), None),
                Err(e) => (None, Some(e.message().to_string())),
            };
            out.push(SpliceInfo {
                kernel: k.name().into(),
                workers: w,
                outcome,
                error,
            });
        }
    }
    out
}
