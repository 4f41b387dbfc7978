//! Native peers: the fib, fj, nqueens, uts, sort, matmul and heat kernels on two C++ task
//! runtimes, Intel oneTBB (`tbb::task_group`) and OpenMP tasks (GCC's libgomp: `task`,
//! `taskwait`, `taskgroup`), so that magpie can be measured side by side with the runtimes the
//! magpie issue names, not only with the Rust peers (rayon, chili).
//!
//! The peers are separate C++ programs (sources in `peers/` at the workspace root), built by
//! `scripts/build-peers.sh` into `target/peers/tbb_kernels` and `target/peers/omp_kernels`. Each
//! mirrors the Rust kernel exactly: the same input, the same decomposition and the same check.
//!
//! - fib: one spawn per call, no cutoff; checked against the iteration.
//! - fj: 1024 tasks per repetition into one scope, each bumping its own counter; the counters are
//!   checked.
//! - nqueens: tasks for the first [`PAR_ROWS`](crate::kernels::nqueens::PAR_ROWS) rows; checked against
//!   the known counts.
//! - uts: the T1 family ([`uts::t1_family`](crate::kernels::uts::t1_family)), one scope with a task per
//!   node, on the program's own SHA-1 (on the x86 SHA extensions where the CPU has them, as the
//!   Rust sha1 crate); the counts are checked against T1's known ones at depth 10, else against
//!   the program's serial count (computed once per process), and equal the Rust serial twin's.
//! - sort: the same splitmix64 keys, merge sort with `join` down to
//!   [`SORT_CUTOFF`](crate::kernels::sort::SORT_CUTOFF) and parallel merges down to
//!   [`MERGE_CUTOFF`](crate::kernels::sort::MERGE_CUTOFF); checked against `std::sort` of the input.
//! - matmul: the same inputs, the same quadrant recursion with blocks of
//!   [`THRESHOLD`](crate::kernels::matmul::THRESHOLD); checked by Freivalds' method as
//!   [`matmul::verify`](crate::kernels::matmul::verify); bit for bit the Rust product.
//! - heat: the same grid, [`STEPS`](crate::kernels::heat::STEPS) steps with rows split by `join` down to
//!   [`GRAIN_ROWS`](crate::kernels::heat::GRAIN_ROWS); checked bit for bit against the program's serial
//!   run (computed once per process), which is bit for bit the Rust serial twin's.
//!
//! A `join(a, b)` is a `task_group` into which `b` is `run` while `a` runs on the caller (TBB), or
//! a `task` for `b`, `a`, then `taskwait` (OpenMP). Each program verifies every run itself and
//! prints one line per run, `time_s=<seconds> verified=<1|0>`; [`Native::run`] starts the
//! program as a child process and parses those lines. With `MAGPIE_PEERS_REPORT=1` in its
//! environment a program also prints what each run computed on stderr (`report run=<k>
//! nodes=.. leaves=.. max_depth=..` for uts, `report run=<k> fnv1a=<hex>` for sort, matmul and
//! heat: FNV-1a over the result's 64-bit words), which the tests compare with the Rust kernels.
//!
//! ```no_run
//! use magpie_bench::native::Native;
//! if Native::Tbb.available() {
//!     for (secs, verified) in Native::Tbb.run("fib", 30, 2, 3)? {
//!         println!("{secs:.6} s, verified: {verified}");
//!     }
//! }
//! # Ok::<(), String>(())
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

/// The kernels every native peer implements (named as [`Kernel::name`](crate::Kernel::name)).
pub const KERNELS: &[&str] = &["fib", "fj", "nqueens", "uts", "sort", "matmul", "heat"];

/// What to tell a user whose peer binaries are missing.
const BUILD_HINT: &str = "run scripts/build-peers.sh to build the TBB and OpenMP peers";

/// A C++ peer runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Native {
    /// Intel oneTBB, `tbb::task_group` (`run` + `wait`) in a `tbb::task_arena` of the given width.
    Tbb,
    /// OpenMP tasks under GCC's libgomp: one `parallel` + `single` region per run, `task` with
    /// `taskwait` (fib, and the joins of sort, matmul and heat) or `taskgroup` (fj, nqueens, uts).
    OpenMp,
}

impl Native {
    /// Both peers.
    pub const ALL: [Native; 2] = [Native::Tbb, Native::OpenMp];

    /// The peer's name: "tbb" or "openmp".
    pub fn name(self) -> &'static str {
        match self {
            Native::Tbb => "tbb",
            Native::OpenMp => "openmp",
        }
    }

    /// The file name of the peer's program in `target/peers`: "tbb_kernels" or "omp_kernels".
    pub fn binary_name(self) -> &'static str {
        match self {
            Native::Tbb => "tbb_kernels",
            Native::OpenMp => "omp_kernels",
        }
    }

    /// Where `scripts/build-peers.sh` puts the peer's program: `target/peers/<binary_name>` in
    /// this workspace.
    pub fn binary(self) -> PathBuf {
        peers_dir().join(self.binary_name())
    }

    /// Whether the peer's program has been built (the file exists and, on Unix, is executable).
    pub fn available(self) -> bool {
        is_executable(&self.binary())
    }

    /// The peers whose programs are built, for tests that run them: prints a note on stderr for
    /// each one that is not (its checks are skipped, so machines without TBB still pass).
    pub fn built() -> Vec<Native> {
        Native::ALL
            .into_iter()
            .filter(|p| {
                let ok = p.available();
                if !ok {
                    eprintln!(
                        "skipped: {} peer not built ({} missing; run scripts/build-peers.sh)",
                        p.name(),
                        p.binary().display()
                    );
                }
                ok
            })
            .collect()
    }

    /// The kernels the peer implements: fib, fj, nqueens, uts, sort, matmul and heat.
    pub fn kernels(self) -> &'static [&'static str] {
        KERNELS
    }

    /// Runs `kernel` (one of [`kernels`](Native::kernels)) of size `n` (as the Rust kernel's `n`)
    /// `runs` times on `threads` workers, in a child process. Returns each run's wall time in
    /// seconds and whether the program verified its result. A run that failed its check comes
    /// back as `(time, false)`; an error means the program could not run or misbehaved: it is
    /// missing (build it with `scripts/build-peers.sh`), rejected the arguments, crashed, or
    /// printed something other than its result lines.
    pub fn run(
        self,
        kernel: &str,
        n: u64,
        threads: usize,
        runs: usize,
    ) -> Result<Vec<(f64, bool)>, String> {
        run_binary(&self.binary(), kernel, n, threads, runs)
            .map_err(|e| format!("{} peer: {e}", self.name()))
    }
}

impl std::fmt::Display for Native {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Native {
    type Err = String;

    fn from_str(s: &str) -> Result<Native, String> {
        match s.to_ascii_lowercase().as_str() {
            "tbb" => Ok(Native::Tbb),
            "openmp" | "omp" => Ok(Native::OpenMp),
            _ => Err(format!(
                "unknown native peer '{s}' (expected tbb or openmp)"
            )),
        }
    }
}

/// `target/peers` of this workspace (two levels above this crate's manifest).
fn peers_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match manifest.ancestors().nth(2) {
        Some(root) => root.join("target").join("peers"),
        None => manifest.join("../../target/peers"),
    }
}

fn is_executable(path: &Path) -> bool {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                true
            }
        }
        _ => false,
    }
}

/// [`Native::run`] on the program at `binary`: runs `<binary> <kernel> <n> <threads> <runs>` and
/// parses its output. An error names the program; a missing one says to run
/// `scripts/build-peers.sh`.
pub fn run_binary(
    binary: &Path,
    kernel: &str,
    n: u64,
    threads: usize,
    runs: usize,
) -> Result<Vec<(f64, bool)>, String> {
    if !KERNELS.contains(&kernel) {
        return Err(format!(
            "unknown kernel '{kernel}' (the native peers have {})",
            KERNELS.join(", ")
        ));
    }
    if threads == 0 || runs == 0 {
        return Err(format!(
            "threads and runs must be at least 1 (got {threads} threads, {runs} runs)"
        ));
    }
    if !binary.is_file() {
        return Err(format!("{} not found: {BUILD_HINT}", binary.display()));
    }
    let out = Command::new(binary)
        .args([
            kernel.to_string(),
            n.to_string(),
            threads.to_string(),
            runs.to_string(),
        ])
        .output()
        .map_err(|e| format!("cannot start {}: {e} ({BUILD_HINT})", binary.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    interpret(out.status.code(), &stdout, &stderr, runs).map_err(|e| {
        format!(
            "{} {kernel} {n} {threads} {runs}: {e} (exit: {})",
            binary.display(),
            out.status
        )
    })
}

/// Parses one result line, `time_s=<seconds> verified=<1|0>`.
fn parse_line(line: &str) -> Option<(f64, bool)> {
    let mut fields = line.split_whitespace();
    let time = fields.next()?.strip_prefix("time_s=")?;
    let verified = fields.next()?.strip_prefix("verified=")?;
    if fields.next().is_some() {
        return None;
    }
    let time: f64 = time.parse().ok()?;
    if !time.is_finite() || time < 0.0 {
        return None;
    }
    let verified = match verified {
        "1" => true,
        "0" => false,
        _ => return None,
    };
    Some((time, verified))
}

/// Turns a finished program's exit code (`None`: killed by a signal) and output into the runs.
/// Exit 0 must come with `runs` verified lines; exit 1 with `runs` lines of which at least one
/// failed its check (those runs come back unverified); anything else is an error carrying the
/// program's stderr.
fn interpret(
    code: Option<i32>,
    stdout: &str,
    stderr: &str,
    runs: usize,
) -> Result<Vec<(f64, bool)>, String> {
    let stderr = stderr.trim();
    let with_stderr = |msg: String| {
        if stderr.is_empty() {
            msg
        } else {
            format!("{msg}; stderr: {stderr}")
        }
    };
    let mut results = Vec::with_capacity(runs);
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match parse_line(line) {
            Some(r) => results.push(r),
            None => {
                let shown: String = line.chars().take(200).collect();
                return Err(with_stderr(format!(
                    "unexpected output line {shown:?} (expected `time_s=<seconds> verified=<1|0>`)"
                )));
            }
        }
    }
    let failed = results.iter().filter(|r| !r.1).count();
    match code {
        Some(0) | Some(1) if results.len() != runs => Err(with_stderr(format!(
            "printed {} result lines for {runs} runs",
            results.len()
        ))),
        Some(0) if failed == 0 => Ok(results),
        Some(0) => Err(with_stderr(format!(
            "exited 0 but reported {failed} unverified runs"
        ))),
        Some(1) if failed > 0 => Ok(results),
        Some(2) => Err(with_stderr("rejected its arguments".to_string())),
        Some(c) => Err(with_stderr(format!("failed with exit status {c}"))),
        None => Err(with_stderr("was killed by a signal".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert_eq!(Native::Tbb.name(), "tbb");
        assert_eq!(Native::OpenMp.name(), "openmp");
        assert_eq!("openmp".parse::<Native>(), Ok(Native::OpenMp));
        assert_eq!("TBB".parse::<Native>(), Ok(Native::Tbb));
        assert!("cilk".parse::<Native>().is_err());
        assert!(Native::Tbb.binary().ends_with("target/peers/tbb_kernels"));
        assert!(Native::OpenMp
            .binary()
            .ends_with("target/peers/omp_kernels"));
        assert_eq!(Native::OpenMp.kernels(), KERNELS);
        for k in KERNELS {
            let kernel: crate::Kernel = k.parse().unwrap();
            assert!(kernel.peers().contains(&crate::Peer::Tbb), "{k}");
            assert!(kernel.peers().contains(&crate::Peer::OpenMp), "{k}");
        }
    }

    #[test]
    fn result_lines_parse() {
        assert_eq!(
            parse_line("time_s=0.125000000 verified=1"),
            Some((0.125, true))
        );
        assert_eq!(parse_line("time_s=2 verified=0"), Some((2.0, false)));
        for bad in [
            "",
            "time_s=1",
            "verified=1 time_s=1",
            "time_s=x verified=1",
            "time_s=-1 verified=1",
            "time_s=inf verified=1",
            "time_s=1 verified=2",
            "time_s=1 verified=1 extra",
        ] {
            assert_eq!(parse_line(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn exit_status_and_output_are_checked() {
        let two = "time_s=0.5 verified=1\ntime_s=0.25 verified=1\n";
        assert_eq!(
            interpret(Some(0), two, "", 2),
            Ok(vec![(0.5, true), (0.25, true)])
        );
        // A failed check: the run comes back unverified.
        let failed = "time_s=0.5 verified=1\ntime_s=0.25 verified=0\n";
        assert_eq!(
            interpret(Some(1), failed, "run 2: fib(20) = 1", 2),
            Ok(vec![(0.5, true), (0.25, false)])
        );
        // Too few lines, inconsistent status, garbage, bad arguments, a crash.
        assert!(interpret(Some(0), "time_s=0.5 verified=1\n", "", 2)
            .unwrap_err()
            .contains("1 result lines for 2 runs"));
        assert!(interpret(Some(0), failed, "", 2).is_err());
        assert!(interpret(Some(1), two, "", 2).is_err());
        let e = interpret(Some(0), "hello\n", "", 1).unwrap_err();
        assert!(e.contains("unexpected output line \"hello\""), "{e}");
        let e = interpret(Some(2), "", "bad n '99'", 1).unwrap_err();
        assert!(
            e.contains("rejected its arguments") && e.contains("bad n '99'"),
            "{e}"
        );
        assert!(interpret(Some(134), two, "", 2)
            .unwrap_err()
            .contains("exit status 134"));
        assert!(interpret(None, "", "", 1).unwrap_err().contains("signal"));
    }

    // ---- the programs themselves (skipped where scripts/build-peers.sh has not built them) ----

    /// Runs `peer`'s program with `MAGPIE_PEERS_REPORT=1` (and `env`), checks that its result
    /// lines still parse and that every run verified, and returns each run's report: the
    /// `key=value` fields of its `report run=<k> ...` line on stderr.
    fn reports(
        peer: Native,
        kernel: &str,
        n: u64,
        threads: usize,
        runs: usize,
        env: &[(&str, &str)],
    ) -> Vec<std::collections::HashMap<String, String>> {
        let out = Command::new(peer.binary())
            .args([
                kernel.to_string(),
                n.to_string(),
                threads.to_string(),
                runs.to_string(),
            ])
            .env("MAGPIE_PEERS_REPORT", "1")
            .envs(env.iter().copied())
            .output()
            .unwrap_or_else(|e| panic!("{peer}: cannot start: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = format!("{peer} {kernel} n={n} threads={threads}");
        let results = interpret(out.status.code(), &stdout, &stderr, runs)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(results.iter().all(|r| r.1), "{what}: {stderr}");
        let reports: Vec<_> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("report "))
            .map(|l| {
                l.split_whitespace()
                    .filter_map(|f| f.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .collect();
        assert_eq!(reports.len(), runs, "{what}: {stderr}");
        reports
    }

    /// FNV-1a over 64-bit words, as the programs' reports print it.
    fn fnv1a(words: impl IntoIterator<Item = u64>) -> String {
        let h = words.into_iter().fold(0xCBF2_9CE4_8422_2325_u64, |h, w| {
            (h ^ w).wrapping_mul(0x0000_0100_0000_01B3)
        });
        format!("{h:016x}")
    }

    #[test]
    fn uts_counts_equal_the_rust_serial_twin() {
        for peer in Native::built() {
            for depth in [1, 3, 6, 7] {
                let want = crate::kernels::uts::serial(&crate::kernels::uts::t1_family(depth));
                // The SHA extensions where the CPU has them, and the portable SHA-1.
                for env in [&[][..], &[("MAGPIE_PEERS_SHA1", "portable")][..]] {
                    for threads in [1, 2] {
                        for r in reports(peer, "uts", depth, threads, 2, env) {
                            let what = format!("{peer} uts depth {depth} x{threads} {env:?}");
                            assert_eq!(r["nodes"], want.nodes.to_string(), "{what}");
                            assert_eq!(r["leaves"], want.leaves.to_string(), "{what}");
                            assert_eq!(r["max_depth"], want.max_depth.to_string(), "{what}");
                            if !env.is_empty() {
                                assert_eq!(r["sha1"], "portable", "{what}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn t1_counts_the_programs_check_against_are_the_rust_serial_twins() {
        // At depth 10 (T1) the programs check the published node count and the leaves and depth
        // they hold as constants; those must be the Rust serial twin's counts.
        let peers = Native::built();
        if peers.is_empty() {
            return;
        }
        let want = crate::kernels::uts::serial(&crate::kernels::uts::t1_family(10));
        assert_eq!(
            Some(want.nodes),
            crate::kernels::uts::expected_nodes(&crate::kernels::uts::t1_family(10))
        );
        for peer in peers {
            for r in reports(peer, "uts", 10, 2, 1, &[]) {
                assert_eq!(r["nodes"], want.nodes.to_string(), "{peer}");
                assert_eq!(r["leaves"], want.leaves.to_string(), "{peer}");
                assert_eq!(r["max_depth"], want.max_depth.to_string(), "{peer}");
            }
        }
    }

    #[test]
    fn sort_matmul_heat_results_equal_the_rust_kernels_bit_for_bit() {
        let n = 3 * crate::kernels::sort::MERGE_CUTOFF as u64 + 17;
        let mut keys = crate::kernels::sort::input(n);
        crate::kernels::sort::serial(&mut keys);
        let sort_want = fnv1a(keys);
        let mut matmul_want = vec![];
        for side in [64, 128] {
            let (a, b) = crate::kernels::matmul::inputs(side);
            let mut c = vec![0.0; a.len()];
            crate::kernels::matmul::serial(side, &a, &b, &mut c);
            matmul_want.push((side, fnv1a(c.iter().map(|x| x.to_bits()))));
        }
        let mut heat_want = vec![];
        for side in [37, 128] {
            let mut g = crate::kernels::heat::input(side);
            crate::kernels::heat::serial(side, &mut g);
            heat_want.push((side, fnv1a(g.iter().map(|x| x.to_bits()))));
        }
        for peer in Native::built() {
            for threads in [1, 2] {
                for r in reports(peer, "sort", n, threads, 1, &[]) {
                    assert_eq!(r["fnv1a"], sort_want, "{peer} sort x{threads}");
                }
                for (side, want) in &matmul_want {
                    for r in reports(peer, "matmul", *side, threads, 1, &[]) {
                        assert_eq!(&r["fnv1a"], want, "{peer} matmul {side} x{threads}");
                    }
                }
                for (side, want) in &heat_want {
                    for r in reports(peer, "heat", *side, threads, 1, &[]) {
                        assert_eq!(&r["fnv1a"], want, "{peer} heat {side} x{threads}");
                    }
                }
            }
        }
    }

    #[test]
    fn sizes_the_rust_kernels_reject_are_rejected() {
        for peer in Native::built() {
            for (kernel, n) in [
                ("uts", 0),
                ("uts", 15),
                ("sort", 0),
                ("matmul", 0),
                ("matmul", 96),
                ("matmul", 16384),
                ("heat", 2),
                ("heat", 16385),
            ] {
                let e = peer.run(kernel, n, 1, 1).unwrap_err();
                assert!(
                    e.contains("rejected its arguments"),
                    "{peer} {kernel} {n}: {e}"
                );
                assert!(e.contains("bad n"), "{peer} {kernel} {n}: {e}");
            }
        }
    }
}
