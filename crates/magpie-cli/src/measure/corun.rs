//! Running a co-run (DWS §4): each program as this binary in a process of its own (`magpie
//! corun-child`), alone and then side by side under each sharing mode, with a fresh core table
//! per phase in a private directory; the cores each program holds and uses sampled while they
//! co-run. `magpie corun` and `magpie suite --corun` ask for one with a [`Plan`].

use crate::failure::Failure;
use crate::format::count;
use crate::format::{secs, times};
use crate::measure::run::case_of;
use crate::model::corun::{mean, ModeRow, ProgramRow, ProgramSpec, Report, Sample, Timeline, WHO};
use magpie::dws::{CoreTable, SharingMode};
use magpie_bench::runner::Case;
use magpie_bench::Size;
use magpie_view::progress::Progress;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// A co-run to measure: the two programs, the sharing modes in the order given, and how long each
/// phase runs (see `magpie corun --help`).
pub(crate) struct Plan {
    pub a: ProgramSpec,
    pub b: ProgramSpec,
    pub modes: Vec<SharingMode>,
    /// The size preset for a program's N not given.
    pub size: Size,
    /// Workers of each program's pool.
    pub workers: usize,
    /// Runs of each program alone, per mode.
    pub solo_runs: usize,
    /// The co-run lasts until each program has completed this many runs ...
    pub runs: usize,
    /// ... and this many seconds have passed.
    pub min_seconds: f64,
    /// Milliseconds between two samples of the cores held and used.
    pub sample_ms: u64,
    /// Seconds after which a phase is stopped and reported as an error.
    pub timeout: f64,
}

/// One line of a child's stdout, as JSON (`{"event": "ready", ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Line {
    /// Warmed up; waiting for `go`.
    Ready {
        pid: u32,
        kernel: String,
        n: u64,
        grain: Option<u64>,
        workers: usize,
        /// The sharing mode in force (`Pool::share_mode`): the one asked for, or `off` when the
        /// pool could not use the core table.
        mode: String,
        warmup_s: f64,
    },
    /// One timed, verified run: when it began and ended (milliseconds of `CLOCK_MONOTONIC`,
    /// `magpie::dws::now_ms`, the clock the parent samples with) and the kernel's time.
    Run {
        run: usize,
        start_ms: u64,
        end_ms: u64,
        seconds: f64,
    },
}

/// One of the two programs: its run, and how messages name it.
struct Program {
    case: Case,
    /// "a (fib n=30 grain=15)".
    label: String,
}

impl Program {
    fn new(i: usize, spec: ProgramSpec, size: magpie_bench::Size) -> Result<Program, Failure> {
        let case = case_of(spec.kernel, spec.n, size, spec.grain, None)?;
        Ok(Program {
            label: format!("{} ({})", WHO[i], describe(&case)),
            case,
        })
    }
}

/// "fib n=30 grain=15".
fn describe(c: &Case) -> String {
    let grain = c.grain.map_or(String::new(), |g| format!(" grain={g}"));
    format!("{} n={}{grain}", c.kernel.name(), c.n)
}

/// A directory only this user may enter, made fresh for one `magpie corun` and removed (with
/// the core tables and stderr files in it) on drop.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new() -> Result<PrivateDir, Failure> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let base = std::env::temp_dir();
        let cannot = |e: std::io::Error| {
            Failure::Failed(format!(
                "cannot create a private directory in {}: {e}",
                base.display()
            ))
        };
        for k in 0.. {
            let p = base.join(format!("magpie-corun-{}-{k}", std::process::id()));
            // `create` fails on an existing path, so the directory is ours and new.
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => {
                    let dir = PrivateDir(p);
                    // Whatever the umask.
                    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o700))
                        .map_err(cannot)?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && k < 100 => {}
                Err(e) => return Err(cannot(e)),
            }
        }
        unreachable!("the loop returns")
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a child's stdout reader reports, tagged with the child's index.
enum Event {
    Line(usize, Line),
    /// A line that is not a result line.
    Bad(usize, String),
    /// Stdout closed: the child exited (or was killed).
    Eof(usize),
}

fn read_lines(who: usize, out: ChildStdout, tx: Sender<Event>) {
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        let ev = match serde_json::from_str::<Line>(&line) {
            Ok(l) => Event::Line(who, l),
            Err(_) => Event::Bad(who, line),
        };
        if tx.send(ev).is_err() {
            return;
        }
    }
    let _ = tx.send(Event::Eof(who));
}

/// What every phase's children share.
struct Setup<'a> {
    exe: PathBuf,
    dir: &'a Path,
    workers: usize,
    timeout: Duration,
}

/// A running `magpie corun-child`, killed and reaped when dropped.
struct Child {
    label: String,
    proc: std::process::Child,
    stdin: Option<ChildStdin>,
    stderr: PathBuf,
    reaped: Option<ExitStatus>,
}

impl Child {
    /// Starts program `who` as the phase's child number `slot` under `mode`, with the core
    /// table `table`; its stdout lines go to `tx` (tagged `slot`), its stderr to a file beside
    /// the table.
    fn start(
        s: &Setup,
        slot: usize,
        (who, p): (usize, &Program),
        mode: SharingMode,
        table: &Path,
        max_runs: Option<usize>,
        tx: Sender<Event>,
    ) -> Result<Child, Failure> {
        let stderr = table.with_extension(format!("{}.stderr", WHO[who]));
        let err_file = File::create(&stderr)
            .map_err(|e| Failure::Failed(format!("cannot create {}: {e}", stderr.display())))?;
        let mut cmd = Command::new(&s.exe);
        cmd.arg("corun-child")
            .arg(p.case.kernel.name())
            .args(["--n", &p.case.n.to_string()])
            .args(["--workers", &s.workers.to_string()]);
        if let Some(g) = p.case.grain {
            cmd.args(["--grain", &g.to_string()]);
        }
        if let Some(r) = max_runs {
            cmd.args(["--max-runs", &r.to_string()]);
        }
        cmd.env(magpie::dws::MODE_ENV, mode.name())
            .env(magpie::dws::TABLE_ENV, table)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err_file);
        let mut proc = cmd.spawn().map_err(|e| {
            Failure::Failed(format!(
                "cannot start {} ({}): {e}",
                p.label,
                s.exe.display()
            ))
        })?;
        let stdin = proc.stdin.take();
        let out = proc.stdout.take().expect("stdout is piped");
        std::thread::spawn(move || read_lines(slot, out, tx));
        Ok(Child {
            label: p.label.clone(),
            proc,
            stdin,
            stderr,
            reaped: None,
        })
    }

    fn pid(&self) -> u32 {
        self.proc.id()
    }

    /// Tells the child to start its timed runs.
    fn go(&mut self) -> Result<(), Failure> {
        let sent = match self.stdin.as_mut() {
            Some(i) => writeln!(i, "go").and_then(|()| i.flush()).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            Err(self.failure("exited before its timed runs"))
        }
    }

    /// Sends SIGKILL, unless the child has been reaped already.
    fn signal_kill(&mut self) {
        if self.reaped.is_none() {
            let _ = self.proc.kill();
        }
    }

    /// Kills the child (if it still runs) and reaps it.
    fn kill(&mut self) {
        self.signal_kill();
        if self.reaped.is_none() {
            self.reaped = self.proc.wait().ok();
        }
        self.stdin = None;
    }

    /// The last line the child wrote on stderr, without its `error: `.
    fn last_said(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.stderr).ok()?;
        let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
        Some(line.trim().trim_start_matches("error: ").to_string())
    }

    /// Kills the child for breaking the protocol (`what` it did).
    fn broke(&mut self, what: &str) -> Failure {
        self.kill();
        Failure::Failed(format!("{}: {what}", self.label))
    }

    /// Its exit status, once its stdout has closed: waits a moment for it to exit, then kills it.
    fn status(&mut self) -> Option<ExitStatus> {
        let patience = Instant::now() + Duration::from_secs(2);
        while self.reaped.is_none() && Instant::now() < patience {
            match self.proc.try_wait() {
                Ok(Some(st)) => self.reaped = Some(st),
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
        self.kill();
        self.reaped
    }

    /// Why the child stopped early: its `error:` line (the last line on its stderr), classed by
    /// its exit code as the commands' own are; `otherwise` when it exited 0 or said nothing.
    fn failure(&mut self, otherwise: &str) -> Failure {
        let status = self.status();
        let what = match status {
            Some(st) if !st.success() => self
                .last_said()
                .unwrap_or_else(|| format!("exited with {st}")),
            _ => otherwise.to_string(),
        };
        let msg = format!("{}: {what}", self.label);
        match status.and_then(|s| s.code()) {
            Some(2) => Failure::Usage(msg),
            Some(3) => Failure::Stopped(msg),
            _ => Failure::Failed(msg),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Samples the two co-running children.
struct Sampler {
    t0: Instant,
    table: PathBuf,
    slots: usize,
    pids: [u32; 2],
    /// The last CPU reading of each child: when, and its nanoseconds.
    last: [Option<(Instant, u64)>; 2],
}

impl Sampler {
    fn new(t0: Instant, table: &Path, pids: [u32; 2]) -> Sampler {
        let mut s = Sampler {
            t0,
            table: table.to_path_buf(),
            slots: magpie::dws::cpu_slots(),
            pids,
            last: [None; 2],
        };
        s.used();
        s
    }

    fn used(&mut self) -> [Option<f64>; 2] {
        let mut used = [None; 2];
        for (i, &pid) in self.pids.iter().enumerate() {
            let now = Instant::now();
            let cpu = crate::measure::idle::tasks_cpu_ns(Path::new(&format!("/proc/{pid}"))).ok();
            let before = std::mem::replace(&mut self.last[i], cpu.map(|c| (now, c)));
            if let (Some((t, c0)), Some(c1)) = (before, cpu) {
                let wall = now.duration_since(t).as_nanos() as f64;
                used[i] = (wall > 0.0).then(|| c1.saturating_sub(c0) as f64 / wall);
            }
        }
        used
    }

    fn held(&self) -> [Option<usize>; 2] {
        match CoreTable::inspect(&self.table, self.slots) {
            // No table (yet): nobody holds a core.
            Ok(None) => [Some(0); 2],
            Ok(Some(snap)) => self.pids.map(|pid| {
                Some(
                    snap.cores
                        .iter()
                        .filter(|c| c.owner.is_some_and(|o| o.pid() == pid))
                        .count(),
                )
            }),
            Err(_) => [None; 2],
        }
    }

    fn sample(&mut self) -> Sample {
        let held = self.held();
        let used = self.used();
        Sample {
            t_s: self.t0.elapsed().as_secs_f64(),
            held,
            used,
        }
    }
}

/// What one phase measured.
struct Measured {
    /// Each child's completed runs: the kernel's seconds.
    runs: Vec<Vec<f64>>,
    pids: Vec<u32>,
    samples: Vec<Sample>,
    /// Seconds from go to the stop.
    wall_s: f64,
}

/// How a phase ends.
#[derive(Clone, Copy)]
enum Until {
    /// Alone: the child exits by itself after this many runs.
    Exits(usize),
    /// Co-running: each child has `runs` runs and `min` has passed; then both are killed. The
    /// cores held and used are sampled `every` so often.
    Runs {
        runs: usize,
        min: Duration,
        every: Duration,
    },
}

/// Runs `progs` side by side under `mode` with a fresh core table named `tag` until `until`.
fn phase(
    s: &Setup,
    mode: SharingMode,
    progs: &[(usize, &Program)],
    tag: &str,
    until: Until,
) -> Result<Measured, Failure> {
    let table = s.dir.join(format!("cores-{mode}-{tag}"));
    let deadline = Instant::now() + s.timeout;
    let timed_out = || {
        let what = match progs {
            [(_, p)] => format!("{} alone", p.label),
            _ => "the co-run".into(),
        };
        Failure::Failed(format!(
            "{mode}: {what} was not done after {} s; raise --timeout, or give smaller \
             programs (KERNEL:N)",
            s.timeout.as_secs_f64()
        ))
    };
    let max_runs = match until {
        Until::Exits(r) => Some(r),
        Until::Runs { .. } => None,
    };
    let (tx, rx) = mpsc::channel();
    let mut kids = progs
        .iter()
        .enumerate()
        .map(|(slot, &prog)| Child::start(s, slot, prog, mode, &table, max_runs, tx.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    drop(tx);
    let recv = |rx: &Receiver<Event>, until: Instant| {
        rx.recv_timeout(until.saturating_duration_since(Instant::now()))
    };

    // Every child warms up, then says it is ready and which mode its pool runs in.
    let mut ready = vec![false; kids.len()];
    while !ready.iter().all(|&r| r) {
        match recv(&rx, deadline) {
            Ok(Event::Line(i, Line::Ready { mode: m, .. })) => {
                if m != mode.name() {
                    let why = kids[i]
                        .last_said()
                        .map_or(String::new(), |w| format!(" ({w})"));
                    return Err(
                        kids[i].broke(&format!("its pool runs in mode {m}, not {mode}{why}"))
                    );
                }
                ready[i] = true;
            }
            Ok(Event::Line(i, Line::Run { .. })) => {
                return Err(kids[i].broke("ran before it was told to go"))
            }
            Ok(Event::Bad(i, l)) => return Err(kids[i].broke(&not_a_result(&l))),
            Ok(Event::Eof(i)) => return Err(kids[i].failure("exited before it was ready")),
            Err(RecvTimeoutError::Timeout) => return Err(timed_out()),
            Err(RecvTimeoutError::Disconnected) => return Err(lost()),
        }
    }

    let go = Instant::now();
    for k in &mut kids {
        k.go()?;
    }
    let pids: Vec<u32> = kids.iter().map(Child::pid).collect();
    let mut sampler = match (until, pids.as_slice()) {
        (Until::Runs { every, .. }, &[a, b]) => Some((Sampler::new(go, &table, [a, b]), every)),
        _ => None,
    };
    let mut next_sample = go + sampler.as_ref().map_or(Duration::ZERO, |s| s.1);
    let mut samples = vec![];
    let mut runs: Vec<Vec<f64>> = vec![vec![]; kids.len()];
    let mut exited = vec![false; kids.len()];
    loop {
        let done = match until {
            Until::Exits(_) => exited.iter().all(|&e| e),
            Until::Runs { runs: r, min, .. } => {
                runs.iter().all(|v| v.len() >= r) && go.elapsed() >= min
            }
        };
        if done {
            break;
        }
        // Checked here, not on a quiet channel only: one program may print runs all along
        // while the other hangs.
        if Instant::now() >= deadline {
            return Err(timed_out());
        }
        if let Some((sm, every)) = sampler.as_mut() {
            if Instant::now() >= next_sample {
                samples.push(sm.sample());
                next_sample = (next_sample + *every).max(Instant::now());
            }
        }
        let wake = match sampler {
            Some(_) => next_sample.min(deadline),
            None => deadline,
        };
        match recv(&rx, wake) {
            Ok(Event::Line(i, Line::Run { seconds, .. })) => runs[i].push(seconds),
            Ok(Event::Line(i, Line::Ready { .. })) => {
                return Err(kids[i].broke("said it was ready twice"))
            }
            Ok(Event::Bad(i, l)) => return Err(kids[i].broke(&not_a_result(&l))),
            Ok(Event::Eof(i)) => match until {
                Until::Exits(r)
                    if runs[i].len() == r && kids[i].status().is_some_and(|s| s.success()) =>
                {
                    exited[i] = true
                }
                _ => return Err(kids[i].failure("exited before it was stopped")),
            },
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(lost()),
        }
    }
    let wall_s = go.elapsed().as_secs_f64();
    // Stop every child at once; the runs they were in never print. What they printed before
    // the stop is still in the pipes: read it to the end.
    for k in &mut kids {
        k.signal_kill();
    }
    for k in &mut kids {
        k.kill();
    }
    let patience = Instant::now() + Duration::from_secs(5);
    let mut open = exited.iter().filter(|&&e| !e).count();
    while open > 0 {
        match recv(&rx, patience) {
            Ok(Event::Line(i, Line::Run { seconds, .. })) => runs[i].push(seconds),
            Ok(Event::Eof(_)) => open -= 1,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(Measured {
        runs,
        pids,
        samples,
        wall_s,
    })
}

/// Every reader ends with an `Eof`, and each `Eof` ends the phase or a child's part in it, so
/// the channel cannot close under a phase that still waits.
fn lost() -> Failure {
    Failure::Failed("lost the programs' output before they ended".into())
}

fn not_a_result(line: &str) -> String {
    format!("printed `{line}`, not a result line")
}

/// Runs the co-run `a` plans, with progress on stderr.
pub(crate) fn measure(a: &Plan) -> Result<Report, Failure> {
    let progs = [Program::new(0, a.a, a.size)?, Program::new(1, a.b, a.size)?];
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Failed(format!("cannot find the magpie executable: {e}")))?;
    let dir = PrivateDir::new()?;
    let setup = Setup {
        exe,
        dir: &dir.0,
        workers: a.workers,
        timeout: Duration::from_secs_f64(a.timeout),
    };
    let every = Duration::from_millis(a.sample_ms);
    let mut rows = vec![];
    let mut timelines = vec![];
    // The phases: both programs alone under off (the baseline), then per mode both alone (but
    // for off, whose baseline that is) and the co-run.
    let phases = 2 + a
        .modes
        .iter()
        .map(|&m| if m == SharingMode::Off { 1 } else { 3 })
        .sum::<u64>();
    let progress = std::cell::RefCell::new(Progress::new("corun", phases, "phases"));
    // Each program alone under `mode`, `a.solo_runs` runs.
    let alone = |mode: SharingMode| -> Result<Vec<Vec<f64>>, Failure> {
        let mut solo = vec![];
        for (i, p) in progs.iter().enumerate() {
            let what = format!("{mode}: {} alone, {}", p.label, count(a.solo_runs, "run"));
            progress.borrow().at(&what);
            let m = phase(
                &setup,
                mode,
                &[(i, p)],
                &format!("solo-{}", WHO[i]),
                Until::Exits(a.solo_runs),
            )?;
            progress.borrow_mut().step(&format!(
                "{what}: mean {}",
                secs(Some(mean(&m.runs.concat())))
            ));
            solo.extend(m.runs);
        }
        Ok(solo)
    };
    // Every mode's slowdowns are against the programs alone under `off`, as the paper's are
    // against one non-interference time (§4.1): a mode that also changes a program's time alone
    // is not charged or credited for that in its co-run figure.
    let baseline = alone(SharingMode::Off)?;
    for &mode in &a.modes {
        let solo = if mode == SharingMode::Off {
            baseline.clone()
        } else {
            alone(mode)?
        };
        let what = format!(
            "{mode}: co-running, ≥ {} runs each and ≥ {} s",
            a.runs, a.min_seconds
        );
        progress.borrow().at(&what);
        let co = phase(
            &setup,
            mode,
            &[(0, &progs[0]), (1, &progs[1])],
            "corun",
            Until::Runs {
                runs: a.runs,
                min: Duration::from_secs_f64(a.min_seconds),
                every,
            },
        )?;
        let row = |i: usize| ProgramRow::new(&progs[i].case, &solo[i], &baseline[i], &co.runs[i]);
        let (ra, rb) = (row(0), row(1));
        progress.borrow_mut().step(&format!(
            "{what}: {:.1} s, a {} and b {} slower",
            co.wall_s,
            times(Some(ra.slowdown)),
            times(Some(rb.slowdown))
        ));
        rows.push(ModeRow {
            mode: mode.name().into(),
            workers: a.workers,
            combined_slowdown: ra.slowdown + rb.slowdown,
            a: ra,
            b: rb,
            corun_wall_s: co.wall_s,
        });
        timelines.push(Timeline {
            mode: mode.name().into(),
            pids: [co.pids[0], co.pids[1]],
            samples: co.samples,
        });
    }
    drop(dir);
    progress.borrow().finish();
    Ok(Report {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        programs: [progs[0].label.clone(), progs[1].label.clone()],
        size: a.size.name().into(),
        workers: a.workers,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        solo_runs: a.solo_runs,
        runs: a.runs,
        min_seconds: a.min_seconds,
        sample_ms: a.sample_ms,
        rows,
        timelines,
    })
}
