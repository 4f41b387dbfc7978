//! The crate's examples as a user runs them: each under `mpirun -n 2` and `-n 3`, its answer
//! checked (the examples check it too, and exit 1 if it is wrong). Needs the `mpi` feature and
//! `mpirun` (scripts/install-mpi.sh); without `mpirun` it says so and passes, as the test
//! script runs it only after installing MPI.
#![cfg(feature = "mpi")]

use std::path::PathBuf;
use std::process::Command;

/// Where cargo put example `name` for this test run (`target/<profile>/examples/`).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test binary lives in target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} not built (cargo test builds the examples)",
        path.display()
    );
    path
}

/// `mpirun -n ranks` of example `name` with `args`; its stdout, after checking it succeeded.
fn mpirun(ranks: usize, name: &str, args: &[&str]) -> Option<String> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("mpirun not found: the examples are not run (scripts/install-mpi.sh)");
        return None;
    }
    let o = Command::new("mpirun")
        .arg("-n")
        .arg(ranks.to_string())
        .arg(example(name))
        .args(args)
        // mpirun's own settings: as root, and more ranks than cores (docs/DISTRIBUTED.md).
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("run mpirun");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{name} on {ranks} ranks: exit {:?}\n{out}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(out)
}

#[test]
fn tree_search_finds_every_solution_on_2_and_3_ranks() {
    for ranks in [2, 3] {
        let Some(out) = mpirun(ranks, "tree_search", &["9"]) else {
            return;
        };
        let want = format!("9-queens on {ranks} ranks: 352 solutions (known: 352), verified");
        assert!(out.contains(&want), "{out}");
    }
}

#[test]
fn bag_of_tasks_sums_every_iteration_on_2_and_3_ranks() {
    for ranks in [2, 3] {
        let Some(out) = mpirun(ranks, "bag_of_tasks", &["3"]) else {
            return;
        };
        for strategy in ["steal-retentive", "plb-centralized"] {
            let lines = out
                .lines()
                .filter(|l| l.contains(strategy) && l.ends_with("verified"))
                .count();
            assert_eq!(lines, 3, "{strategy} on {ranks} ranks:\n{out}");
        }
        assert!(!out.contains("WRONG"), "{out}");
    }
}

#[test]
fn bad_arguments_exit_2() {
    for (name, arg) in [("tree_search", "99"), ("bag_of_tasks", "0")] {
        let o = Command::new(example(name))
            .arg(arg)
            .output()
            .expect("run the example");
        assert_eq!(o.status.code(), Some(2), "{name} {arg}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("usage:"));
    }
}
