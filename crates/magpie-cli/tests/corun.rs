//! `magpie corun-child`, one program of `magpie corun`: its stop protocol (stdin closed before
//! or after `go`, `--max-runs`) and its result lines. No assertion depends on timing.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

fn magpie() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_magpie"));
    c.env_remove("MAGPIE_SHARE")
        .env_remove("MAGPIE_SHARE_TABLE")
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY");
    c
}

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
