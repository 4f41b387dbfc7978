//! The rayon programs (mandelbrot, the two sorts, nbody-step, word-count, fine-sum, spmv) as
//! users run them: rayon's own iterators, on magpie's rayon-core for magpie's figure and on
//! rayon's for rayon's.
//!
//! One program cannot link two rayon-cores, so the two figures come from two builds of one
//! source (`rayon-core/compare`), made by `scripts/build-rayon-compare.sh`: `rayon` as is and
//! `magpie` with rayon-core patched to magpie's, in `target/rayon-compare/workspace/` (this
//! workspace's code generation, for a release `magpie`) or `target/rayon-compare/dev/` (debug
//! builds, for a debug `magpie`: the tests'). `scripts/bench.sh` builds the workspace pair
//! before the suite, the test command the dev pair before the tests. Each build answers `--which-core`, so a
//! swapped or stale pair is refused rather than measured under the wrong name.
//!
//! A child process runs one configuration with all its runs: it times and verifies every run
//! against the serial twin (which it computes too), and prints one line per worker count
//! (`kernel workers peer median verified times result`). magpie's policy reaches the child's
//! pools through `MAGPIE_POLICY`, the variable magpie's rayon-core reads when it builds a pool.
//! The worker count is given, so `MAGPIE_WORKERS` and the `RAYON_*` variables never reach the
//! child. The other `MAGPIE_*` variables reach it only for `magpie bench`, whose own pool reads
//! them too; the suite's pools do not, and neither do its children.

use crate::failure::Failure;
use magpie_bench::harness::{Measured, RunError, Timing};
use magpie_bench::runner::{self, BenchConfig, BenchRecord};
use magpie_bench::Kernel;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which of the two builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Core {
    /// rayon on its own rayon-core.
    Rayon,
    /// rayon on magpie's rayon-core.
    Magpie,
}

impl Core {
    fn name(self) -> &'static str {
        match self {
            Core::Rayon => "rayon",
            Core::Magpie => "magpie",
        }
    }
}

/// The pair of builds, found and checked.
#[derive(Clone, Debug)]
pub(crate) struct RayonBuilds {
    rayon: PathBuf,
    magpie: PathBuf,
}

/// What to run for [`RayonBuilds::run`].
pub(crate) struct Run<'a> {
    /// The program.
    pub kernel: Kernel,
    /// Its problem size.
    pub n: u64,
    /// Worker counts, each a rayon pool of that many threads.
    pub workers: &'a [usize],
    /// Timed runs per worker count.
    pub runs: usize,
    /// magpie's policy (for the magpie build; ignored by rayon's).
    pub policy: Option<magpie::Policy>,
    /// Whether this process's `MAGPIE_*` settings (but its worker count and policy) reach the
    /// child.
    pub inherit_settings: bool,
}

/// The folder holding the two builds when none is given: `target/rayon-compare/workspace` for
/// an executable in `target/release`, `target/rayon-compare/dev` for one in `target/debug`.
fn default_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?;
    let pair = if profile_dir.file_name()? == "debug" {
        "dev"
    } else {
        "workspace"
    };
    Some(profile_dir.parent()?.join("rayon-compare").join(pair))
}

impl RayonBuilds {
    /// Finds the two builds in `dir` (default: [`default_dir`]) and checks that each runs rayon
    /// on the core its name says. The error says what is missing and how to build it.
    pub(crate) fn find(dir: Option<&Path>) -> Result<RayonBuilds, String> {
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => default_dir().ok_or("cannot find this executable's folder")?,
        };
        let path = |core: Core| dir.join(core.name());
        let builds = RayonBuilds {
            rayon: path(Core::Rayon),
            magpie: path(Core::Magpie),
        };
        for core in [Core::Rayon, Core::Magpie] {
            let exe = builds.exe(core);
            if !exe.is_file() {
                return Err(format!(
                    "rayon's programs run in two builds of their own, and {} is missing: build \
                     them with `bash scripts/build-rayon-compare.sh` (scripts/bench.sh does; \
                     `--profile dev` for a debug magpie), or name their folder with \
                     --rayon-builds",
                    exe.display()
                ));
            }
            let out = Command::new(exe)
                .arg("--which-core")
                .output()
                .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
            let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !out.status.success() || said != core.name() {
                return Err(format!(
                    "{} should run rayon on {}'s core but says `{said}`: rebuild the pair with \
                     `bash scripts/build-rayon-compare.sh`",
                    exe.display(),
                    core.name()
                ));
            }
        }
        Ok(builds)
    }

    fn exe(&self, core: Core) -> &Path {
        match core {
            Core::Rayon => &self.rayon,
            Core::Magpie => &self.magpie,
        }
    }

    /// Runs `r` on `core` in one child process; one measurement per worker count, in `r.workers`'
    /// order. `Err` when the child could not be started or said nothing usable.
    pub(crate) fn run(
        &self,
        core: Core,
        r: &Run<'_>,
    ) -> Result<Vec<Result<Measured, RunError>>, String> {
        let exe = self.exe(core);
        let workers: Vec<String> = r.workers.iter().map(usize::to_string).collect();
        let mut cmd = Command::new(exe);
        cmd.args([
            r.kernel.name(),
            &workers.join(","),
            &r.runs.to_string(),
            &r.n.to_string(),
        ]);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            let setting = k.starts_with("MAGPIE_") && !r.inherit_settings;
            if setting || k == "MAGPIE_WORKERS" || k == "MAGPIE_POLICY" || k.starts_with("RAYON_") {
                cmd.env_remove(&*k);
            }
        }
        if let (Core::Magpie, Some(p)) = (core, r.policy) {
            cmd.env("MAGPIE_POLICY", p.name());
        }
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() != r.workers.len() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            return Err(format!(
                "rayon on {}'s core ({}): {}{}",
                core.name(),
                out.status,
                last.unwrap_or("no output"),
                if out.status.code() == Some(2) {
                    "; rebuild the pair with `bash scripts/build-rayon-compare.sh`"
                } else {
                    ""
                }
            ));
        }
        lines
            .iter()
            .zip(r.workers)
            .map(|(l, &w)| parse_line(l, r.kernel, w))
            .collect()
    }
}

/// One line of the child's output: `kernel workers peer median verified times result`.
fn parse_line(
    line: &str,
    kernel: Kernel,
    workers: usize,
) -> Result<Result<Measured, RunError>, String> {
    let bad = || format!("a line the rayon build should not print: `{line}`");
    let mut f = line.split(' ');
    let (Some(k), Some(w), Some(_peer), Some(_median), Some(ok), Some(times)) =
        (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Err(bad());
    };
    let result = f.collect::<Vec<_>>().join(" ");
    if k != kernel.name() || w.parse::<usize>().ok() != Some(workers) {
        return Err(bad());
    }
    if let Some(e) = result.strip_prefix("error: ") {
        return Ok(Err(RunError::Panicked(e.to_string())));
    }
    let verified = match ok {
        "true" => true,
        "false" => false,
        _ => return Err(bad()),
    };
    let times_s = if times == "-" {
        vec![]
    } else {
        times
            .split(',')
            .map(|t| t.parse::<f64>().map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()?
    };
    Ok(Ok(Measured {
        timing: Timing { times_s },
        verified,
        failure: (!verified).then(|| format!("rayon's build reported `{result}`")),
        result: (verified && result != "-").then_some(result),
        stats: None,
    }))
}

/// One of the rayon programs benched as `magpie bench` benches a kernel: magpie's figure is
/// rayon's iterators on magpie's rayon-core and rayon's is rayon on its own, each from its build
/// in `builds` (default: beside this executable, see [`RayonBuilds::find`]), one child process
/// each with all the runs (a child per run would time only first runs, in a cold process); the
/// serial twin runs here. `pool` gives the policy and the worker count.
pub(crate) fn bench_program(
    cfg: &BenchConfig,
    pool: &magpie::Pool,
    builds: Option<&Path>,
) -> Result<BenchRecord, Failure> {
    let builds = RayonBuilds::find(builds).map_err(Failure::Usage)?;
    let workers = pool.workers();
    let measure = |core: Core| -> Result<Measured, RunError> {
        let run = Run {
            kernel: cfg.kernel,
            n: cfg.n,
            workers: &[workers],
            runs: cfg.runs,
            policy: Some(pool.policy()),
            inherit_settings: true,
        };
        match builds.run(core, &run) {
            Ok(mut r) => r.remove(0),
            Err(e) => Err(RunError::Panicked(e)),
        }
    };
    let on_magpie = measure(Core::Magpie);
    let on_rayon = (cfg.peers && cfg.kernel.peers().contains(&magpie_bench::Peer::RayonIter))
        .then(|| measure(Core::Rayon));
    // The children's runs, handed out one per round as `runner::bench_with` asks for them.
    let nth = |r: &Result<Measured, RunError>, i: usize| match r {
        Ok(m) => Ok(Measured {
            timing: Timing {
                times_s: m.timing.times_s.get(i).copied().into_iter().collect(),
            },
            ..m.clone()
        }),
        Err(e) => Err(e.clone()),
    };
    let (mut i_magpie, mut i_rayon) = (0, 0);
    Ok(runner::bench_with(
        cfg,
        pool,
        &mut |_| {
            i_magpie += 1;
            (nth(&on_magpie, i_magpie - 1), magpie::Stats::default())
        },
        &mut |peer, case, w| match (peer, &on_rayon) {
            (magpie_bench::Peer::RayonIter, Some(r)) => {
                i_rayon += 1;
                nth(r, i_rayon - 1)
            }
            _ => runner::run_peer(peer, case, w, 1),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use magpie_bench::kernels;

    #[test]
    fn lines_parse_into_measurements() {
        let m = parse_line(
            "fine-sum 2 rayon-iter 0.5 true 0.4,0.5,0.6 sum 1.5e9",
            kernels::programs::FINE_SUM,
            2,
        )
        .unwrap()
        .unwrap();
        assert_eq!(m.timing.times_s, [0.4, 0.5, 0.6]);
        assert!(m.verified);
        assert_eq!(m.result.as_deref(), Some("sum 1.5e9"));
        let failed = parse_line(
            "fine-sum 2 rayon-iter 0.5 false 0.5 -",
            kernels::programs::FINE_SUM,
            2,
        )
        .unwrap()
        .unwrap();
        assert!(!failed.verified && failed.failure.is_some() && failed.result.is_none());
        let err = parse_line(
            "fine-sum 1 rayon-iter NaN false - error: it broke",
            kernels::programs::FINE_SUM,
            1,
        )
        .unwrap();
        assert_eq!(err.unwrap_err(), RunError::Panicked("it broke".into()));
        // Another kernel, another worker count, or a short line is refused.
        assert!(parse_line(
            "spmv 2 rayon-iter 0.5 true 0.5 x",
            kernels::programs::FINE_SUM,
            2
        )
        .is_err());
        assert!(parse_line(
            "fine-sum 1 rayon-iter 0.5 true 0.5 x",
            kernels::programs::FINE_SUM,
            2
        )
        .is_err());
        assert!(parse_line("fine-sum 2 rayon-iter 0.5", kernels::programs::FINE_SUM, 2).is_err());
        assert!(parse_line(
            "fine-sum 2 rayon-iter 0.5 yes 0.5 x",
            kernels::programs::FINE_SUM,
            2
        )
        .is_err());
    }
}
