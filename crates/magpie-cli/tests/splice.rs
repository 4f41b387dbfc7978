//! `magpie splice`: every kernel, spliced and unspliced, checked bit for bit on every run; the
//! JSON has the fields the issue names; bad input exits 2 with one line.

use std::process::{Command, Output};

fn magpie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_magpie"))
        .args(args)
        .output()
        .expect("run magpie")
}

#[test]
fn every_kernel_splices_and_verifies() {
    for (kernel, rayon) in [
        ("heat", true),
        ("jacobi", true),
        ("fdtd-2d", false),
        ("seidel-2d", false),
    ] {
        for workers in ["1", "2"] {
            let steps = if rayon { vec![] } else { vec!["--steps", "6"] };
            let mut args = vec![
                "splice",
                kernel,
                "--n",
                "40",
                "--window",
                "4",
                "--grain",
                "3",
                "--runs",
                "2",
                "--workers",
                workers,
                "--json",
            ];
            args.extend(steps);
            let o = magpie(&args);
            assert!(
                o.status.success(),
                "{kernel}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            for key in [
                "kernel",
                "n",
                "steps",
                "window",
                "workers",
                "spliced_median_s",
                "unspliced_median_s",
                "verified",
                "result",
            ] {
                assert!(!v[key].is_null(), "{kernel}: no {key} in {v}");
            }
            assert_eq!(v["verified"], true);
            assert_eq!(v["rayon_median_s"].is_null(), !rayon, "{v}");
            assert!(v["stats"]["steps"].as_u64().unwrap() > 0);
            if workers == "1" {
                assert!(v["stats"]["switches"].as_u64().unwrap() > 0, "{v}");
            }
        }
    }
    let o = magpie(&["splice", "heat", "--n", "30", "--runs", "1"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("verified, checksum 0x") && out.contains("thread switches"),
        "{out}"
    );
}

/// `--slice`: step pipelining, every kernel verified against its unspliced twin, the parts
/// counted in the JSON and the text.
#[test]
fn every_kernel_pipelines_and_verifies() {
    for kernel in ["heat", "jacobi", "fdtd-2d", "seidel-2d"] {
        let o = magpie(&[
            "splice", kernel, "--n", "40", "--steps", "6", "--window", "4", "--grain", "6",
            "--slice", "2", "--runs", "2", "--json",
        ]);
        assert!(
            o.status.success(),
            "{kernel}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["verified"], true);
        assert_eq!(v["slice"], 2);
        let (steps, parts) = (
            v["stats"]["steps"].as_u64().unwrap(),
            v["stats"]["slices"].as_u64().unwrap(),
        );
        assert!(parts > steps, "{kernel}: {steps} steps in {parts} parts");
    }
    let o = magpie(&[
        "splice", "heat", "--n", "30", "--grain", "8", "--slice", "1", "--runs", "1",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("slice=1") && out.contains(" parts,"), "{out}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["splice"][..],
        &["splice", "lud"][..],
        &["splice", "heat", "--n", "2"][..],
        &["splice", "heat", "--window", "0"][..],
        &["splice", "heat", "--steps", "x"][..],
        &["splice", "heat", "--workers", "0"][..],
        &["splice", "heat", "--slice", "x"][..],
        &["splice", "heat", "--slice", "-1"][..],
        // Pipelining is the one-worker walk's.
        &["splice", "heat", "--slice", "2", "--workers", "2"][..],
    ] {
        let o = magpie(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
