//! End-to-end tests of `magpie schedule`: a recorded run writes a file the library reads back,
//! naming its kernel; following it under each constraint verifies the kernel and, under the
//! strict ones, keeps every cut on its worker; a schedule file that cannot be used is bad input
//! (exit 2, one line naming the file and the problem), never a panic.

use magpie::schedule::{Cut, Schedule};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn magpie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_magpie"))
        .args(args)
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY")
        .env_remove("MAGPIE_TRACE")
        .output()
        .expect("run magpie")
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"))
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("schedule-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

#[test]
fn record_follow_and_show_agree_with_the_file() {
    let dir = scratch("cycle");
    for (kernel, policy) in [("heat", "help-first"), ("fib", "work-first")] {
        let file = dir.join(format!("{kernel}.msched"));
        let rec = json(&magpie(&[
            "schedule",
            "record",
            kernel,
            "--size",
            "ci",
            "--workers",
            "2",
            "--policy",
            policy,
            "-o",
            s(&file),
            "--json",
        ]));
        assert_eq!(rec["verified"], true);
        let sched = Schedule::from_bytes(&std::fs::read(&file).unwrap()).expect("library reads it");
        assert_eq!(rec["cuts"].as_u64(), Some(sched.cuts().len() as u64));
        assert_eq!(rec["bytes"].as_u64(), Some(sched.bytes() as u64));
        assert!(
            sched.note().starts_with(&format!("kernel={kernel} ")),
            "{}",
            sched.note()
        );
        assert!(
            sched.note().contains(&format!("policy={policy}")),
            "{}",
            sched.note()
        );
        let shown = json(&magpie(&["schedule", "show", s(&file), "--json"]));
        assert_eq!(
            shown["cut_list"].as_array().unwrap().len(),
            sched.cuts().len()
        );
        assert_eq!(shown["note"].as_str(), Some(sched.note()));
        for c in ["ordered", "unordered", "relaxed"] {
            let next = dir.join(format!("{kernel}-{c}.msched"));
            let f = json(&magpie(&[
                "schedule",
                "follow",
                s(&file),
                "--constraint",
                c,
                "-o",
                s(&next),
                "--json",
            ]));
            assert_eq!(f["verified"], true, "{kernel} {c}");
            assert_eq!(f["template_cuts"].as_u64(), Some(sched.cuts().len() as u64));
            let taken = Schedule::from_bytes(&std::fs::read(&next).unwrap()).unwrap();
            assert_eq!(
                taken.note(),
                sched.note(),
                "the taken schedule keeps the note"
            );
            if c != "relaxed" {
                // No random steals: every cut the template names ran on its worker (the
                // program is the same, so every recorded cut is reached).
                assert_eq!(
                    f["template_cuts_on_their_worker"].as_f64(),
                    Some(1.0),
                    "{kernel} {c}: {f}"
                );
                assert_eq!(taken.cuts().len(), sched.cuts().len(), "{kernel} {c}");
            }
        }
    }
}

#[test]
fn bad_schedule_files_exit_2_with_one_line_naming_the_problem() {
    let dir = scratch("bad");
    let good = Schedule::new(
        2,
        0,
        vec![Cut {
            path: vec![1, 0],
            worker: 1,
            rank: 0,
        }],
    )
    .unwrap()
    .with_note("kernel=fib n=10 policy=adaptive");
    let bytes = good.to_bytes();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x5a;
    let mut version = bytes.clone();
    version[8..12].copy_from_slice(&99u32.to_le_bytes());
    let no_note = Schedule::new(1, 0, vec![]).unwrap().to_bytes();
    let foreign = good
        .clone()
        .with_note("kernel=teapot n=1 policy=adaptive")
        .to_bytes();
    let cases: Vec<(&str, Vec<u8>, &str, bool)> = vec![
        (
            "truncated",
            bytes[..bytes.len() - 3].to_vec(),
            "truncated",
            true,
        ),
        ("flipped", flipped, "corrupted", true),
        ("version", version, "version 99", true),
        (
            "text",
            b"not a schedule\n".to_vec(),
            "not a magpie schedule",
            true,
        ),
        ("empty", vec![], "not a magpie schedule", true),
        // Readable, but nothing says which kernel to follow it on.
        ("no-note", no_note, "which kernel", false),
        ("foreign", foreign, "which kernel", false),
    ];
    let check = |args: &[&str], needle: &str, name: &str| {
        let o = magpie(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err} lacks {needle}");
        assert!(err.contains(name), "{args:?}: {err} does not name the file");
        assert!(o.stdout.is_empty(), "{args:?}");
    };
    for (name, b, needle, unreadable) in &cases {
        let p = dir.join(format!("{name}.msched"));
        std::fs::write(&p, b).unwrap();
        let file = format!("{name}.msched");
        check(
            &["schedule", "follow", s(&p), "--constraint", "ordered"],
            needle,
            &file,
        );
        if *unreadable {
            check(&["schedule", "show", s(&p)], needle, &file);
        }
    }
    let missing = dir.join("missing.msched");
    check(
        &["schedule", "show", s(&missing)],
        "cannot read",
        "missing.msched",
    );
    let o = magpie(&[
        "schedule",
        "follow",
        s(&missing),
        "--constraint",
        "sideways",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown constraint"));
}

#[test]
fn bench_times_every_mode_on_a_settled_template() {
    let o = magpie(&[
        "schedule",
        "bench",
        "fdtd-2d",
        "--size",
        "ci",
        "--workers",
        "2",
        "--runs",
        "2",
        "--json",
    ]);
    let d = json(&o);
    assert_eq!(d["verified"], true);
    let modes: Vec<&str> = d["modes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mode"].as_str().unwrap())
        .collect();
    assert_eq!(
        modes,
        ["plain", "record", "ordered", "unordered", "relaxed"]
    );
    assert_eq!(d["modes"][0]["ratio"].as_f64(), Some(1.0));
    for m in d["modes"].as_array().unwrap() {
        assert!(m["median_s"].as_f64().unwrap() > 0.0, "{m}");
    }
    let o = magpie(&["schedule", "bench", "fib", "--runs", "0"]);
    assert_eq!(o.status.code(), Some(2));
}
