//! The `magpie-dist` binary's bad input: a message and exit code 2, with or without MPI.

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_magpie-dist"))
        .args(args)
        .output()
        .expect("run magpie-dist")
}

#[test]
fn bad_input_exits_2_with_a_message() {
    for args in [
        &[][..],
        &["bogus"][..],
        &["selftest"][..],
        &["selftest", "nothing"][..],
        &["selftest", "deque", "--tasks"][..],
        &["selftest", "deque", "--tasks", "0"][..],
        &["selftest", "deque", "--tasks", "many"][..],
        &["selftest", "deque", "--what"][..],
        &["run"][..],
        &["run", "fib"][..],
        &["run", "uts", "--strategy", "steal-some"][..],
        &["run", "uts", "--tree", "T9"][..],
        &["run", "uts", "--iterations", "0"][..],
        &["run", "uts", "--ranks", "x"][..],
        &["run", "uts", "--transport", "tcp"][..],
        &["run", "uts", "--workers", "2"][..],
        &["run", "hf", "--workers", "0"][..],
        &["run", "hf", "--timeline"][..],
        &["balance", "--ranks", "0"][..],
        &["balance", "--ranks", "2,x"][..],
        &["balance", "--n", "1"][..],
        &["balance", "--what"][..],
        &["simulate"][..],
        &["simulate", "uts"][..],
        &["simulate", "hf", "--ranks", "0"][..],
        &["simulate", "hf", "--strategy", "steal,bogus"][..],
        &["simulate", "hf", "--iterations", "0"][..],
        &["simulate", "hf", "--model", "unit_ns"][..],
        &["simulate", "hf", "--model", "speed=3"][..],
        &["simulate", "hf", "--model", "unit_ns=-1"][..],
        &["simulate", "hf", "--calibrate", "/nonexistent/run.json"][..],
        &["simulate", "hf", "--calibrate", "Cargo.toml"][..],
        &["selftest", "latency", "--tasks", "0"][..],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains("usage: magpie-dist"), "{args:?}: {err}");
    }
    let o = run(&["--help"]);
    assert!(o.status.success());
}

/// Every command has its own help; a tree that is not one names the ones there are; an output
/// path that cannot be written stops the run before it starts; under a launcher only rank 0
/// says what was wrong.
#[test]
fn help_names_and_paths_are_a_users_first_answers() {
    for (args, says) in [
        (&["--help"][..], "magpie-dist COMMAND --help"),
        (&["run", "--help"][..], "--strategy S"),
        (&["run", "hf", "--bogus", "--help"][..], "--timeline FILE"),
        (&["simulate", "--help"][..], "--calibrate RUN.json"),
        (&["balance", "--help"][..], "--ranks P,P"),
        (&["selftest", "--help"][..], "deque"),
    ] {
        let o = run(args);
        assert!(o.status.success(), "{args:?}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.starts_with("usage: ") || out.starts_with("magpie-dist: "),
            "{args:?}: {out}"
        );
        assert!(out.contains(says), "{args:?}: {out}");
    }
    let o = run(&["run", "uts", "--tree", "NOPE"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("T1, T2, T3") && err.contains("T1XS"), "{err}");
    let missing = std::env::temp_dir()
        .join(format!("magpie-dist-no-such-folder-{}", std::process::id()))
        .join("t.svg");
    for args in [
        vec!["run", "hf", "--timeline", missing.to_str().unwrap()],
        vec!["run", "hf", "--timeline", "/"],
        vec!["simulate", "hf", "--timeline", "/proc/self/status"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error: --timeline"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: it ran");
    }
    assert!(
        !missing.parent().unwrap().exists(),
        "a folder was made for a file"
    );
    // mpirun sets this for each rank: rank 1's copy of the message is left out.
    for (rank, silent) in [("0", false), ("1", true)] {
        let o = Command::new(env!("CARGO_BIN_EXE_magpie-dist"))
            .args(["run", "fib"])
            .env("OMPI_COMM_WORLD_RANK", rank)
            .output()
            .expect("run magpie-dist");
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(o.stderr.is_empty(), silent, "rank {rank}");
    }
}

/// Without MPI, `run` runs its ranks as threads of one process, and checks the tree.
#[cfg(not(feature = "mpi"))]
#[test]
fn run_on_threads_without_mpi() {
    for strategy in ["steal", "steal-retentive", "plb-hierarchical"] {
        let o = run(&[
            "run",
            "uts",
            "--tree",
            "T3XS",
            "--ranks",
            "3",
            "--strategy",
            strategy,
            "--json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["ranks"], 3);
        assert_eq!(v["verified"], true);
        assert!(
            v["result"].as_str().unwrap().starts_with("6213 nodes"),
            "{v}"
        );
        assert_eq!(v["iterations"].as_array().unwrap().len(), 3);
    }
    let o = run(&["run", "uts"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("16000 nodes"));
    // Stderr is not a terminal here: rank 0 writes a plain line per iteration.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("run 1/3 iteration 0: 16000 nodes"), "{err}");
    // A pool of 2 workers inside each of 2 ranks: the same checksum as the serial twin, and the
    // timeline of the first and last iteration written.
    let svg = std::env::temp_dir().join(format!("magpie-dist-run-{}.svg", std::process::id()));
    let o = run(&[
        "run",
        "tce",
        "--n",
        "40",
        "--ranks",
        "2",
        "--workers",
        "2",
        "--timeline",
        svg.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["verified"].clone(), v["workers"].clone()),
        (true.into(), 2.into())
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("iteration 0") && drawn.contains("iteration 2"));
    std::fs::remove_file(&svg).unwrap();
}

#[test]
fn balance_reports_both_balancers_over_the_grid() {
    let o = run(&["balance", "--ranks", "16,64", "--n", "60", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10 * 2);
    for r in rows {
        let before = r["before_pct"].as_f64().unwrap();
        let c = r["centralized_pct"].as_f64().unwrap();
        let h = r["hierarchical_pct"].as_f64().unwrap();
        assert!(c <= before + 1e-9 && h <= before + 1e-9, "{r}");
        assert!(c >= 0.0 && h >= 0.0);
    }
}

/// `simulate` runs the grid it is given, every cell checked (it exits 1 on a broken
/// invariant), and calibrates its model from a run's report; `--timeline` writes an SVG per
/// cell.
#[test]
fn simulate_runs_the_grid_and_calibrates_from_a_report() {
    let dir = std::env::temp_dir().join(format!("magpie-dist-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("run.json");
    // A real run's report (threads here; under MPI the same JSON).
    #[cfg(not(feature = "mpi"))]
    {
        let o = run(&[
            "run",
            "hf",
            "--n",
            "30",
            "--ranks",
            "2",
            "--iterations",
            "2",
            "--json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(&report, &o.stdout).unwrap();
    }
    #[cfg(feature = "mpi")]
    std::fs::write(
        &report,
        r#"{"kernel":"hf","tree":"n=30","per_rank":[{"iteration":0,"ranks":[{"tasks":900,"task_ns":2000000,"steals_attempted":4,"steal_ns":2000}]}]}"#,
    )
    .unwrap();
    let timelines = dir.join("svg");
    let o = run(&[
        "simulate",
        "tce",
        "--n",
        "40",
        "--ranks",
        "3,50",
        "--strategy",
        "all",
        "--iterations",
        "3",
        "--calibrate",
        report.to_str().unwrap(),
        "--timeline",
        timelines.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verified"], true);
    assert!(v["model_from"].as_str().unwrap().contains("calibrated"));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * magpie_dist::collection::Strategy::ALL.len());
    for r in rows {
        for it in r["iterations"].as_array().unwrap() {
            assert_eq!(it["tasks"], 1600, "{r}");
        }
    }
    let svgs = std::fs::read_dir(&timelines).unwrap().count();
    assert_eq!(svgs, 2 * magpie_dist::collection::Strategy::ALL.len());
    let one = std::fs::read_to_string(timelines.join("tce-steal-3.svg")).unwrap();
    assert!(one.contains("iteration 0") && one.contains("iteration 2"));
    std::fs::remove_dir_all(&dir).unwrap();
}
