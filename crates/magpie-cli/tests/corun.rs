//! `magpie corun`: the JSON rows and the report folder of a short co-run, the table, bad input
//! and a failing program (one `error:` line, non-zero exit, no child left running), and the
//! child's stop protocol (`magpie corun-child`). No assertion depends on timing or on which
//! mode wins.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn magpie() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_magpie"));
    c.env_remove("MAGPIE_SHARE")
        .env_remove("MAGPIE_SHARE_TABLE")
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY");
    c
}

#[path = "../../magpie/tests/support/temp_dir.rs"]
mod temp_dir;
use temp_dir::TempDir;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit `code`, exactly one `error:` line on stderr, nothing on stdout.
fn assert_error(o: &Output, code: i32, words: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(words), "{err}");
    assert!(o.stdout.is_empty(), "{}", stdout(o));
}

/// The processes still running with `marker` in their environment: a corun's children carry
/// their core table's path, which lies under the corun's TMPDIR.
fn running_with(marker: &Path) -> Vec<u32> {
    let marker = marker.to_string_lossy().into_owned();
    let mut v = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        if String::from_utf8_lossy(&env).contains(&marker) {
            v.push(pid);
        }
    }
    v
}

fn assert_program(p: &serde_json::Value, kernel: &str, min_runs: u64) {
    assert_eq!(p["kernel"], kernel, "{p}");
    assert!(p["n"].as_u64().unwrap() > 0, "{p}");
    let solo = p["solo_s"].as_f64().unwrap();
    let corun = p["corun_s"].as_f64().unwrap();
    assert!(solo > 0.0 && corun > 0.0, "{p}");
    assert!(p["solo_median_s"].as_f64().unwrap() > 0.0, "{p}");
    assert!(p["corun_median_s"].as_f64().unwrap() > 0.0, "{p}");
    assert_eq!(p["solo_runs"], 2, "{p}");
    assert!(p["runs"].as_u64().unwrap() >= min_runs, "{p}");
    let baseline = p["baseline_s"].as_f64().unwrap();
    assert!(baseline > 0.0, "{p}");
    let slowdown = p["slowdown"].as_f64().unwrap();
    assert!(
        (slowdown - corun / baseline).abs() <= 1e-9 * slowdown,
        "{p}"
    );
}

#[test]
fn corun_reports_each_mode_and_writes_the_plots() {
    let tmp = TempDir::new("run");
    let out = tmp.0.join("report");
    // corun's private directory goes under TMPDIR: it must be gone afterwards.
    let private = tmp.0.join("tmp");
    std::fs::create_dir(&private).unwrap();
    let o = magpie()
        .args(["corun", "fib", "fj", "--size", "ci", "--mode", "off,dws"])
        .args(["--runs", "2", "--solo-runs", "2", "--json", "--out"])
        .arg(&out)
        .env("TMPDIR", &private)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&o)));
    let rows = rows.as_array().expect("one JSON array");
    assert_eq!(rows.len(), 2);
    for (row, mode) in rows.iter().zip(["off", "dws"]) {
        assert_eq!(row["mode"], mode, "{row}");
        assert_eq!(row["workers"], 2, "{row}");
        assert_program(&row["a"], "fib", 2);
        assert_program(&row["b"], "fj", 2);
        let sum = row["a"]["slowdown"].as_f64().unwrap() + row["b"]["slowdown"].as_f64().unwrap();
        let combined = row["combined_slowdown"].as_f64().unwrap();
        assert!((combined - sum).abs() <= 1e-9 * sum, "{row}");
        assert!(row["corun_wall_s"].as_f64().unwrap() > 0.0, "{row}");
    }
    // One baseline for every mode: the programs alone under off, which is also off's solo time.
    for p in ["a", "b"] {
        let off = &rows[0][p];
        assert_eq!(off["baseline_s"], off["solo_s"], "{off}");
        assert_eq!(rows[1][p]["baseline_s"], off["baseline_s"], "{}", rows[1]);
    }
    assert_eq!(
        std::fs::read_dir(&private).unwrap().count(),
        0,
        "corun left its private directory behind"
    );
    assert_eq!(
        running_with(&private),
        Vec::<u32>::new(),
        "corun left a child running"
    );

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert_eq!(html.matches("<svg").count(), 2, "one plot per mode");
    assert!(html.contains("cores held") && html.contains("cores used"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("corun.json")).unwrap()).unwrap();
    assert_eq!(report["rows"].as_array().unwrap(), rows);
    let timelines = report["timelines"].as_array().unwrap();
    assert_eq!(timelines.len(), 2);
    for t in timelines {
        let samples = t["samples"].as_array().unwrap();
        assert!(!samples.is_empty(), "{t}");
        for s in samples {
            assert!(s["t_s"].as_f64().unwrap() >= 0.0, "{s}");
            // Held: a count (or null where the table could not be read); used: ≥ 0 or null.
            for i in 0..2 {
                assert!(s["held"][i].is_u64() || s["held"][i].is_null(), "{s}");
                assert!(s["used"][i].as_f64().is_none_or(|u| u >= 0.0), "{s}");
            }
        }
    }
}

#[test]
fn corun_prints_a_table_by_default() {
    let o = magpie()
        .args(["corun", "fib::10", "uts", "--size", "ci", "--mode", "abp"])
        .args(["--runs", "1", "--solo-runs", "2", "--min-seconds", "0"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("a (fib n=20 grain=10) and b (uts n=6), 2 workers each"),
        "{out}"
    );
    assert!(
        out.contains("a solo s") && out.contains("combined"),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("abp ")).count(),
        1,
        "{out}"
    );
}

#[test]
fn bad_input_is_one_error_line() {
    for (args, words) in [
        (
            &["fib", "fj", "--mode", "dws,fast"][..],
            "unknown sharing mode `fast`",
        ),
        (&["fib", "nope"][..], "unknown kernel `nope`"),
        (&["fib:x", "fj"][..], "bad size `x`"),
        (&["fib", "fj", "--runs", "0"][..], "runs ≥ 1"),
        (&["fib", "fj", "--solo-runs", "0"][..], "runs ≥ 1"),
        (&["fib:1000", "fj"][..], "invalid n `1000` for fib"),
    ] {
        let o = magpie().arg("corun").args(args).output().unwrap();
        assert_error(&o, 2, words);
    }
}

#[test]
fn a_failing_program_is_an_error() {
    // Both children build their pools from the environment: a bad MAGPIE_POLICY stops the
    // first one before it is ready.
    let o = magpie()
        .args(["corun", "fib", "fj", "--size", "ci", "--mode", "off"])
        .env("MAGPIE_POLICY", "sideways")
        .output()
        .unwrap();
    assert_error(&o, 2, "a (fib n=20): invalid MAGPIE_POLICY `sideways`");
}

#[test]
fn a_phase_past_its_timeout_is_an_error_and_its_child_is_killed() {
    // The warm-up run of fib(42) at 2 workers takes far longer than 0.2 s; corun must kill it.
    let tmp = TempDir::new("timeout");
    let o = magpie()
        .args(["corun", "fib:42", "fj", "--size", "ci", "--timeout", "0.2"])
        .env("TMPDIR", &tmp.0)
        .output()
        .unwrap();
    assert_error(&o, 1, "a (fib n=42) alone was not done after 0.2 s");
    assert_eq!(
        running_with(&tmp.0),
        Vec::<u32>::new(),
        "corun left a child running"
    );
    assert_eq!(std::fs::read_dir(&tmp.0).unwrap().count(), 0);
}

/// Runs `magpie corun-child fib` with `input` on stdin, closed at once or (`keep_open`) only
/// once the child has exited, and returns its output and its parsed lines.
fn child(extra: &[&str], input: &str, keep_open: bool) -> (Output, Vec<serde_json::Value>) {
    let mut c = magpie()
        .args(["corun-child", "fib", "--n", "12", "--workers", "2"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    let mut held = None;
    if keep_open {
        held = Some(stdin);
    } else {
        drop(stdin);
    }
    let mut out = vec![];
    c.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let mut o = c.wait_with_output().unwrap();
    drop(held);
    o.stdout = out;
    let lines = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    (o, lines)
}

fn assert_ready(l: &serde_json::Value) {
    assert_eq!(l["event"], "ready", "{l}");
    assert_eq!(l["kernel"], "fib", "{l}");
    assert_eq!(l["n"], 12, "{l}");
    assert_eq!(l["workers"], 2, "{l}");
    assert_eq!(l["mode"], "off", "{l}");
    assert!(l["pid"].as_u64().unwrap() > 0, "{l}");
}

fn assert_runs(lines: &[serde_json::Value]) {
    for (k, l) in lines.iter().enumerate() {
        assert_eq!(l["event"], "run", "{l}");
        assert_eq!(l["run"], k + 1, "{l}");
        assert!(l["end_ms"].as_u64().unwrap() >= l["start_ms"].as_u64().unwrap());
        assert!(l["seconds"].as_f64().unwrap() >= 0.0, "{l}");
    }
}

#[test]
fn the_child_stops_when_stdin_closes() {
    // Closed before `go` (a parent that died at once): warm-up only, no timed run, exit 0.
    let (o, lines) = child(&[], "", false);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lines.len(), 1, "{}", stdout(&o));
    assert_ready(&lines[0]);

    // `go`, then closed (a parent that died while the programs ran): it stops after a run.
    let (o, lines) = child(&[], "go\n", false);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ready(&lines[0]);
    assert!(lines.len() >= 2, "{}", stdout(&o));
    assert_runs(&lines[1..]);

    // --max-runs with stdin open (as corun runs a program alone): exactly that many runs.
    let (o, lines) = child(&["--max-runs", "3"], "go\n", true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(lines.len(), 4, "{}", stdout(&o));
    assert_runs(&lines[1..]);

    // Anything but `go` is refused.
    let (o, _) = child(&[], "start\n", false);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: expected `go`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_child_refuses_its_sharing_mode_from_a_bad_environment() {
    let o = magpie()
        .args(["corun-child", "fib", "--n", "12"])
        .env("MAGPIE_SHARE", "sometimes")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_error(&o, 2, "MAGPIE_SHARE");
}
