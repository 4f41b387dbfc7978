//! `magpie race`: every kernel with declared accesses is clean as written and its planted race
//! is found, at 1, 2 and 16 workers (detection does not depend on the schedule; 16 workers on
//! this machine's cores is still 16 workers' schedule), with exit codes 0 and 3; bad arguments
//! exit 2 with one line.

use std::process::{Command, Output};

fn magpie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_magpie"))
        .args(args)
        .output()
        .expect("runs")
}

/// Small sizes (every access is checked, in a debug build): each still has parallel leaves
/// on both sides of its planted race.
const KERNELS: [(&str, &str); 5] = [
    ("heat", "34"),
    ("matmul", "16"),
    ("nbody", "64"),
    ("lu", "32"),
    ("nqueens", "6"),
];

fn runs(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn every_kernel_is_clean_as_written_and_its_planted_race_is_found() {
    for (kernel, n) in KERNELS {
        let args = [
            "race",
            kernel,
            "--n",
            n,
            "--workers",
            "1,2,16",
            "--json",
            "--compare",
        ];
        let clean = magpie(&args);
        let err = String::from_utf8_lossy(&clean.stderr);
        assert_eq!(clean.status.code(), Some(0), "{kernel}: {err}");
        let clean = runs(&clean);
        assert_eq!(clean.len(), 3, "{kernel}");
        for r in &clean {
            assert_eq!(r["race_count"], 0, "{kernel}: {r}");
            assert!(r["accesses"].as_u64().unwrap() > 0, "{kernel}: {r}");
            // Both searches ran and agreed (the checker asserts it); the phase search never
            // follows more edges.
            let (p, q) = (
                r["plain_traversals"].as_u64(),
                r["phase_traversals"].as_u64(),
            );
            assert!(q.unwrap() <= p.unwrap(), "{kernel}: {r}");
        }
        let mut planted = args.to_vec();
        planted.push("--plant");
        let dirty = magpie(&planted);
        let err = String::from_utf8_lossy(&dirty.stderr).to_string();
        assert_eq!(dirty.status.code(), Some(3), "{kernel}: {err}");
        assert!(
            err.contains("races found in 3 of 3 run(s)"),
            "{kernel}: {err}"
        );
        let dirty = runs(&dirty);
        for (r, c) in dirty.iter().zip(&clean) {
            assert!(r["race_count"].as_u64().unwrap() >= 1, "{kernel}: {r}");
            // The same answer: the plant is declared, not performed.
            assert_eq!(r["answer"], c["answer"], "{kernel}");
            let race = &r["races"][0];
            assert!(
                race["text"].as_str().unwrap().contains("write by step"),
                "{race}"
            );
            assert!(race["first"]["path"]
                .as_array()
                .is_some_and(|p| !p.is_empty()));
        }
    }
}

#[test]
fn the_report_names_both_accesses_and_bad_arguments_exit_2() {
    let o = magpie(&["race", "heat", "--n", "34", "--plant", "--workers", "1"]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("race(s);") && out.contains("then write by step"),
        "{out}"
    );
    assert!(
        out.contains("one after the other"),
        "one worker overlaps nothing: {out}"
    );
    for (args, want) in [
        (&["race", "fib"][..], "unknown kernel `fib`"),
        (&["race", "heat", "--workers", "0"], "worker counts"),
        (
            &["race", "heat", "--search", "fast"],
            "expected phases or plain",
        ),
        (&["race", "heat", "--n", "2"], "invalid n"),
        (&["race", "nqueens", "--n", "40"], "invalid n"),
    ] {
        let o = magpie(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}
