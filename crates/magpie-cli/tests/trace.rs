//! End-to-end tests of `magpie trace`: a traced run writes a file the library reads back; its
//! Perfetto JSON, Cilkscale CSV and SVG exports are well formed and agree with the trace; a trace
//! file that cannot be read is bad input (exit 2, one line naming the problem), never a panic.

use magpie::trace::{EventId, Origin, Phase, PhaseId, Segment, Taken, Trace};
use std::collections::HashMap;
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

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

/// A fresh, empty folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Runs `magpie trace <args> -o <file> --json`; returns the trace read back and the summary.
fn traced(args: &[&str], file: &Path) -> (Trace, serde_json::Value) {
    let mut all = vec!["trace"];
    all.extend_from_slice(args);
    all.extend(["-o", s(file), "--json"]);
    let out = ok(&magpie(&all));
    let summary: serde_json::Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("the summary is not one JSON object ({e}): {out}"));
    let bytes = std::fs::read(file).expect("the trace file was written");
    let t = Trace::from_bytes(&bytes).expect("the library reads the trace file");
    assert_eq!(summary["file_bytes"].as_u64(), Some(bytes.len() as u64));
    (t, summary)
}

#[test]
fn trace_fib_writes_a_file_the_library_reads() {
    let dir = scratch("fib");
    let file = dir.join("fib.mtrace");
    let (t, v) = traced(&["fib", "--size", "ci", "--workers", "2"], &file);
    assert_eq!(t.workers(), 2);
    assert_eq!(v["run"]["kernel"], "fib");
    assert_eq!(v["run"]["n"], 20);
    assert_eq!(v["run"]["verified"], true);
    assert_eq!(v["workers"], 2);
    assert_eq!(v["policy"], "adaptive");
    assert_eq!(
        v["phases"].as_u64(),
        Some(t.phases.iter().map(Vec::len).sum::<usize>() as u64)
    );
    assert_eq!(v["steals"].as_u64(), Some(t.steal_count() as u64));
    // One install, and the spawns of fib(20) counted.
    assert!(v["spawns"].as_u64().unwrap() > 1000, "{v}");
    let roots = t.phases.iter().flatten();
    assert_eq!(
        roots
            .filter(|p| matches!(p.origin, Origin::Root { .. }))
            .count(),
        1
    );
    // The storage line per worker: the library's figures, and enumeration ÷ file.
    let st = t.storage();
    let per = v["storage"].as_array().unwrap();
    assert_eq!(per.len(), 2);
    for (w, row) in per.iter().enumerate() {
        assert_eq!(row["file_bytes"].as_u64(), Some(st.file_bytes[w]));
        assert_eq!(row["timestamp_bytes"].as_u64(), Some(st.timestamp_bytes[w]));
        assert_eq!(row["b_w"].as_u64(), Some(st.b_w[w]));
        assert_eq!(row["b_h"].as_u64(), Some(st.b_h[w]));
        assert_eq!(
            row["enumeration_bytes"].as_f64(),
            Some(st.enumeration_per_worker)
        );
        let r = row["enumeration_over_file"].as_f64().unwrap();
        assert!((r - st.enumeration_per_worker / st.file_bytes[w] as f64).abs() < 1e-9);
    }

    // The text summary, and `trace summary` reading the file back.
    let text = ok(&magpie(&[
        "trace",
        "fib",
        "--size",
        "ci",
        "--workers",
        "2",
        "-o",
        s(&file),
    ]));
    for needle in [
        "fib n=20 on 2 workers (adaptive): verified",
        "b_w KB",
        "enumeration / file",
        "total",
    ] {
        assert!(text.contains(needle), "summary lacks {needle}:\n{text}");
    }
    let text = ok(&magpie(&["trace", "summary", s(&file)]));
    assert!(
        text.contains("2 workers") && text.contains("storage per worker"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The exports of one trace, checked against it.
fn check_exports(t: &Trace, file: &Path, dir: &Path) {
    let workers = t.workers();
    let steals = t.steal_count();

    // Perfetto: pid 1, a named track per worker, X slices that never overlap within a track,
    // and an s/f flow pair per steal.
    let json_path = dir.join("run.json");
    ok(&magpie(&[
        "trace",
        "export",
        s(file),
        "--format",
        "perfetto",
        "-o",
        s(&json_path),
    ]));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).expect("valid JSON");
    let ev = v["traceEvents"]
        .as_array()
        .expect("the traceEvents object form");
    assert!(ev.iter().all(|e| e["pid"] == 1));
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "magpie"));
    let mut names: HashMap<u64, String> = HashMap::new();
    for e in ev
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        names.insert(
            e["tid"].as_u64().unwrap(),
            e["args"]["name"].as_str().unwrap().into(),
        );
    }
    assert_eq!(names.len(), workers);
    for w in 0..workers {
        assert!(
            names.values().any(|n| *n == format!("worker {w}")),
            "no track for worker {w}"
        );
    }
    let mut by_tid: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
    let mut busy_us = 0.0;
    for e in ev.iter().filter(|e| e["ph"] == "X") {
        let tid = e["tid"].as_u64().unwrap();
        assert!(names.contains_key(&tid), "a slice on an unnamed track: {e}");
        assert!(e["name"].is_string() && e["args"]["phase"].is_u64(), "{e}");
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(dur >= 0.0);
        busy_us += dur;
        by_tid.entry(tid).or_default().push((ts, dur));
    }
    for (tid, mut xs) in by_tid {
        xs.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in xs.windows(2) {
            assert!(
                pair[1].0 >= pair[0].0 + pair[0].1,
                "slices overlap on tid {tid}: {pair:?}"
            );
        }
    }
    // Touching slices lose a nanosecond each: the busy time survives within that.
    let busy_ns: u64 = t.busy_ns().iter().sum();
    let segments: usize = t.segments.iter().map(Vec::len).sum();
    assert!((busy_us * 1e3 - busy_ns as f64).abs() <= segments as f64 + 1.0);
    let flows =
        |ph: &str| -> Vec<&serde_json::Value> { ev.iter().filter(|e| e["ph"] == ph).collect() };
    let (starts, ends) = (flows("s"), flows("f"));
    assert_eq!(starts.len(), steals);
    assert_eq!(ends.len(), steals);
    for (a, b) in starts.iter().zip(&ends) {
        assert_eq!(
            (&a["id"], &a["cat"], &a["name"]),
            (&b["id"], &b["cat"], &b["name"])
        );
        assert_eq!(b["bp"], "e");
    }

    // CSV: Cilkscale's header, an install row, and the overall row whose work is the busy time.
    let csv = ok(&magpie(&["trace", "export", s(file), "--format", "csv"]));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "tag,work (seconds),span (seconds),parallelism,burdened_span (seconds),burdened_parallelism"
    );
    assert!(lines[1].starts_with("install-0,"), "{csv}");
    let last: Vec<&str> = lines.last().unwrap().split(',').collect();
    assert_eq!(last.len(), 6);
    assert_eq!(last[0], "", "the overall row has an empty tag");
    let num = |x: &str| {
        x.parse::<f64>()
            .unwrap_or_else(|_| panic!("not a number: {x}"))
    };
    let (work, span, par) = (num(last[1]), num(last[2]), num(last[3]));
    assert!(
        (work - busy_ns as f64 / 1e9).abs() < 1e-9,
        "work {work} vs busy {busy_ns} ns"
    );
    assert!(span > 0.0 && span <= work + 1e-9);
    assert!(
        (par - work / span).abs() <= 1e-6 * (work / span).max(1.0),
        "{par} vs {work}/{span}"
    );
    let (bspan, bpar) = (num(last[4]), num(last[5]));
    assert!(bspan >= span && (bpar - work / bspan).abs() <= 1e-6 * (work / bspan).max(1.0));

    // SVG: one lane per worker.
    let svg = ok(&magpie(&["trace", "export", s(file), "--format", "svg"]));
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("class=\"lane\"").count(), workers);
    for w in 0..workers {
        assert!(svg.contains(&format!("data-worker=\"{w}\"")));
    }
    assert!(svg.contains("class=\"utilisation mark\""));
}

#[test]
fn exports_agree_with_the_trace() {
    let dir = scratch("export");
    let file = dir.join("fib.mtrace");
    let (t, _) = traced(&["fib", "--size", "ci", "--workers", "2"], &file);
    check_exports(&t, &file, &dir);
    // uts with a task per node, help-first, on more workers than cores: steals to draw (a busy
    // machine may still schedule a run without any, so a few tries).
    let file = dir.join("uts.mtrace");
    let mut stolen = false;
    for _ in 0..5 {
        let (t, _) = traced(
            &[
                "uts",
                "--size",
                "ci",
                "--workers",
                "3",
                "--policy",
                "help-first",
            ],
            &file,
        );
        check_exports(&t, &file, &dir);
        if t.steal_count() > 0 {
            stolen = true;
            break;
        }
    }
    assert!(
        stolen,
        "five traced uts runs on 3 workers and not one steal"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn ev(worker: u32, index: u32) -> EventId {
    EventId {
        phase: PhaseId { worker, index },
        seq: 1,
        half: 0,
    }
}

/// A small valid trace: a root, a thief, a resumption.
fn sample() -> Trace {
    Trace {
        policy: magpie::Policy::HelpFirst,
        duration_ns: 10_000,
        spawns: 5,
        phases: vec![
            vec![Phase {
                origin: Origin::Root { ordinal: 0 },
                start_ns: 100,
            }],
            vec![
                Phase {
                    origin: Origin::Stolen {
                        from: ev(0, 0),
                        taken: Taken::Child,
                        level: 2,
                    },
                    start_ns: 300,
                },
                Phase {
                    origin: Origin::Resumed { sync: ev(0, 0) },
                    start_ns: 2_000,
                },
            ],
        ],
        schedules: vec![],
        segments: vec![
            vec![Segment {
                phase: 0,
                start_ns: 100,
                end_ns: 1_500,
            }],
            vec![
                Segment {
                    phase: 0,
                    start_ns: 300,
                    end_ns: 1_800,
                },
                Segment {
                    phase: 1,
                    start_ns: 2_000,
                    end_ns: 2_400,
                },
            ],
        ],
    }
}

#[test]
fn bad_trace_files_exit_2_with_one_line_naming_the_problem() {
    let dir = scratch("bad");
    let good = sample().to_bytes();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x5a;
    let mut version = good.clone();
    version[8..12].copy_from_slice(&99u32.to_le_bytes());
    // Origins that loop (each phase stolen from the other): the file checks out, the tree does not.
    let mut looped = sample();
    looped.phases[0][0].origin = Origin::Stolen {
        from: ev(1, 0),
        taken: Taken::Continuation,
        level: 1,
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() - 7].to_vec(), "truncated"),
        ("magic-only", good[..4].to_vec(), "truncated"),
        ("flipped", flipped, "corrupted"),
        ("version", version, "version 99"),
        (
            "text",
            b"tag,work (seconds)\ninstall-0,1,1\n".to_vec(),
            "not a magpie trace",
        ),
        ("empty", vec![], "not a magpie trace"),
        ("loop", looped.to_bytes(), "corrupted"),
    ];
    let mut paths = vec![];
    for (name, bytes, needle) in &cases {
        let p = dir.join(format!("{name}.mtrace"));
        std::fs::write(&p, bytes).unwrap();
        paths.push((p, *needle));
    }
    paths.push((dir.join("missing.mtrace"), "cannot read"));
    let valid = dir.join("valid.mtrace");
    std::fs::write(&valid, &good).unwrap();
    let commands: [&[&str]; 4] = [
        &["export", "--format", "perfetto"],
        &["export", "--format", "csv"],
        &["export", "--format", "svg"],
        &["summary"],
    ];
    let check = |args: &[&str], needle: &str| {
        let o = magpie(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err} lacks {needle}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    };
    for (path, needle) in &paths {
        for cmd in commands {
            let mut args = vec!["trace"];
            args.extend_from_slice(&cmd[..1]);
            args.push(s(path));
            args.extend_from_slice(&cmd[1..]);
            check(&args, needle);
            // The message names the file.
            let name = path.file_name().unwrap().to_str().unwrap();
            check(&args, name);
        }
    }
    // The valid file exports; an unknown format is a usage error.
    ok(&magpie(&["trace", "export", s(&valid), "--format", "csv"]));
    check(
        &["trace", "export", s(&valid), "--format", "png"],
        "unknown format",
    );
    check(
        &["trace", "export", s(&valid), "--burden-us", "lots"],
        "burden",
    );
    // Bad runs are refused before anything runs.
    check(&["trace"], "KERNEL");
    check(&["trace", "fibonacci"], "unknown kernel");
    check(
        &["trace", "fib", "--grain", "0", "--size", "ci"],
        "invalid grain",
    );
    check(&["trace", "fib", "--workers", "0"], "workers");
    let _ = std::fs::remove_dir_all(&dir);
}
