//! `magpie share status`: no table yet (exit 0, and none is created), a table with claims (text
//! and JSON list them), and a table magpie refuses (one `error:` line, exit 2).

use magpie::dws::{cpu_slots, CoreTable, ProgramId};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn magpie(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_magpie"));
    c.args(args).env_remove("MAGPIE_SHARE_TABLE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run magpie")
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

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

#[test]
fn status_without_a_table_says_so_and_creates_none() {
    let dir = TempDir::new("none");
    let path = dir.0.join("cores");
    let p = path.to_str().unwrap();
    let o = magpie(&["share", "status", "--table", p], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("no core table at {p}")),
        "{}",
        stdout(&o)
    );
    let o = magpie(&["share", "status", "--table", p, "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["exists"], false);
    assert_eq!(v["path"], p);
    // MAGPIE_SHARE_TABLE names the default table.
    let o = magpie(&["share", "status"], &[("MAGPIE_SHARE_TABLE", &path)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(p), "{}", stdout(&o));
    assert!(!path.exists(), "status must not create the table");
}

#[test]
fn status_lists_the_programs_and_their_cores() {
    let dir = TempDir::new("claims");
    let path = dir.0.join("cores");
    let p = path.to_str().unwrap();
    let k = cpu_slots();
    let table = CoreTable::open(&path, k).unwrap();
    let me = ProgramId::me().unwrap();
    assert!(table.try_claim(0, me));
    table.register(me).unwrap();
    // On a machine with a second CPU, a core held by a program that is gone (a reused pid).
    let ghost = ProgramId::from_parts(me.pid(), me.start_time() as u64 ^ 1);
    if k > 1 {
        assert!(table.try_claim(k - 1, ghost));
    }
    let before = std::fs::read(&path).unwrap();

    let o = magpie(&["share", "status", "--table", p], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("core table {p}: version 1, {k} cores")),
        "{out}"
    );
    assert!(out.contains("programs: 1 registered"), "{out}");
    assert!(
        out.contains(&format!("{me}: heartbeat")) && out.contains("alive, cores 0"),
        "{out}"
    );
    assert!(out.contains(&format!("    0: {me}, heartbeat")), "{out}");
    if k > 1 {
        assert!(out.contains(&format!("{ghost}, heartbeat")), "{out}");
        assert!(out.contains("dead"), "{out}");
    }

    let o = magpie(&["share", "status", "--table", p, "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["exists"], true);
    assert_eq!(v["path"], p);
    assert_eq!(v["version"], 1);
    assert_eq!(v["core_slots"], k);
    assert_eq!(v["program_slots"], magpie::dws::PROGRAM_SLOTS);
    assert_eq!(v["stale_ms"], magpie::dws::STALE_MS);
    let progs = v["programs"].as_array().unwrap();
    assert_eq!(progs.len(), 1);
    assert_eq!(progs[0]["pid"], me.pid());
    assert_eq!(progs[0]["start_time"], me.start_time());
    assert_eq!(progs[0]["alive"], true);
    assert_eq!(progs[0]["cores"], serde_json::json!([0]));
    assert!(progs[0]["heartbeat_age_ms"].is_u64());
    let cores = v["cores"].as_array().unwrap();
    assert_eq!(cores.len(), k);
    assert_eq!(cores[0]["owner"]["pid"], me.pid());
    assert_eq!(cores[0]["alive"], true);
    assert!(cores[0]["heartbeat_age_ms"].is_u64());
    if k > 1 {
        assert_eq!(cores[k - 1]["owner"]["pid"], me.pid());
        assert_eq!(cores[k - 1]["alive"], false);
        assert_eq!(cores[k - 1]["stale"], true);
    }
    for c in &cores[1..k.saturating_sub(1).max(1)] {
        assert!(c["owner"].is_null(), "{c}");
    }
    // Status only reads: not a byte changed (the ghost's core is not reclaimed).
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Runs status on the file at `path` and checks it is refused: exit 2, one `error:` line naming
/// the file, nothing on stdout.
fn assert_refused(path: &Path, words: &str) {
    for json in [false, true] {
        let mut args = vec!["share", "status", "--table", path.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let o = magpie(&args, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains(words), "{err}");
        assert!(o.stdout.is_empty(), "{}", stdout(&o));
    }
}

#[test]
fn status_refuses_a_bad_table() {
    let dir = TempDir::new("bad");
    let path = dir.0.join("cores");
    std::fs::write(
        &path,
        b"this is not a core table, just some bytes that are long enough....",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_refused(&path, "is not a magpie core table");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_refused(&path, "mode 0644");
}

#[test]
fn share_without_an_action_is_bad_input() {
    let o = magpie(&["share"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
}
