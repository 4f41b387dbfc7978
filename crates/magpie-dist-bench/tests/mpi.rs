//! The MPI transport under `mpirun`: the split deque stolen from with one-sided operations at 2,
//! 3 and 4 ranks (on this machine's cores, oversubscribed), every task run exactly once. Needs
//! the `mpi` feature and `mpirun` (scripts/install-mpi.sh); without `mpirun` it says so and
//! passes, as the test script only runs it after installing MPI.
#![cfg(feature = "mpi")]

use std::process::Command;

fn mpirun(ranks: usize, args: &[&str]) -> Option<std::process::Output> {
    mpirun_with(ranks, args, &[])
}

/// [`mpirun`] with more variables in the ranks' environment.
fn mpirun_with(ranks: usize, args: &[&str], vars: &[(&str, &str)]) -> Option<std::process::Output> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("mpirun not found: the MPI tests are skipped (scripts/install-mpi.sh)");
        return None;
    }
    Some(
        Command::new("mpirun")
            .arg("-n")
            .arg(ranks.to_string())
            .arg(env!("CARGO_BIN_EXE_magpie-dist"))
            .args(args)
            // mpirun's own settings: as root, and more ranks than cores.
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .envs(vars.iter().copied())
            .output()
            .expect("run mpirun"),
    )
}

/// `magpie-dist` under `mpirun -n ranks` with `args`: rank 0's one JSON object, after
/// checking the run succeeded (`None` without mpirun).
fn run_json(ranks: usize, args: &[&str], what: &str) -> Option<serde_json::Value> {
    let o = mpirun(ranks, args)?;
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{what}: exit {:?}\n{out}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(
        serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{what}: not one JSON object ({e}): {out}")),
    )
}

#[test]
fn one_sided_steals_run_every_task_once() {
    for ranks in [2, 3, 4] {
        let Some(o) = mpirun(ranks, &["selftest", "deque", "--tasks", "500"]) else {
            return;
        };
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{ranks} ranks: exit {:?}\n{out}\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(out.contains("ok: every task ran exactly once"), "{out}");
        // Rank 0 held every task at first: the others ran only what they stole.
        let stolen: u64 = out
            .lines()
            .filter(|l| l.trim_start().starts_with("rank ") && !l.contains("rank 0:"))
            .map(|l| {
                let t = l.split("took ").nth(1).unwrap();
                t.split(' ').next().unwrap().parse::<u64>().unwrap()
            })
            .sum();
        assert!(stolen > 0, "{ranks} ranks: nothing was stolen\n{out}");
    }
}

/// Every kernel under every strategy, at 2, 3 or 4 ranks: every rank checks every iteration's
/// answer (UTS T1XS's node count, the synthetic kernels' checksum and task count), so no task
/// was lost or run twice, and rank 0's JSON says so. The rank count turns with each pair, so
/// that every kernel and every strategy also run at each of the three counts (every pair of the
/// three factors is covered; all 63 combinations, one mpirun each, took nearly a minute of a
/// 2-core CI).
#[test]
fn every_kernel_under_every_strategy_at_2_to_4_ranks() {
    let kernels = [
        ("uts", ["--tree", "T1XS"], "16000 nodes"),
        ("hf", ["--n", "40"], "1600 tasks"),
        ("tce", ["--n", "40"], "1600 tasks"),
    ];
    let strategies = [
        "no-balance",
        "steal",
        "steal-retentive",
        "plb-centralized",
        "plb-hierarchical",
        "plb-centralized+steal",
        "plb-hierarchical+steal",
    ];
    let mut covered = std::collections::BTreeSet::new();
    for (k, (kernel, size, result)) in kernels.into_iter().enumerate() {
        for (s, strategy) in strategies.into_iter().enumerate() {
            let ranks = 2 + (k + s) % 3;
            covered.insert((kernel, ranks));
            covered.insert((strategy, ranks));
            let what = format!("{kernel}, {strategy}, {ranks} ranks");
            let args = [
                "run",
                kernel,
                size[0],
                size[1],
                "--strategy",
                strategy,
                "--iterations",
                "3",
                "--json",
            ];
            let Some(v) = run_json(ranks, &args, &what) else {
                return;
            };
            assert_eq!(v["ranks"], ranks, "{what}");
            assert_eq!(v["strategy"], strategy, "{what}");
            assert_eq!(v["verified"], true, "{what}");
            assert!(
                v["result"].as_str().unwrap().starts_with(result),
                "{what}: {v}"
            );
            assert_eq!(v["iterations"].as_array().unwrap().len(), 3, "{what}");
        }
    }
    // Each kernel and each strategy ran at 2, 3 and 4 ranks.
    assert_eq!(covered.len(), (kernels.len() + strategies.len()) * 3);
}

/// Active-message stealing (the victim answers between its tasks) under the stealing
/// strategies at 2 and 3 ranks: every iteration's answer checked, and steals happened.
#[test]
fn active_message_stealing_at_2_and_3_ranks() {
    for (kernel, size, result) in [
        ("uts", ["--tree", "T1XS"], "16000 nodes"),
        ("hf", ["--n", "40"], "1600 tasks"),
    ] {
        for strategy in ["steal", "steal-retentive"] {
            for ranks in [2, 3] {
                let what = format!("{kernel}, {strategy}, am, {ranks} ranks");
                let args = [
                    "run",
                    kernel,
                    size[0],
                    size[1],
                    "--strategy",
                    strategy,
                    "--transport",
                    "am",
                    "--iterations",
                    "3",
                    "--json",
                ];
                let Some(v) = run_json(ranks, &args, &what) else {
                    return;
                };
                assert_eq!(v["transport"], "am", "{what}");
                assert_eq!(v["verified"], true, "{what}");
                assert!(
                    v["result"].as_str().unwrap().starts_with(result),
                    "{what}: {v}"
                );
            }
        }
    }
}

/// A magpie pool of 2 workers inside each rank (the rank's thread makes every MPI call, the
/// pool runs its tasks' insides): the checksum still matches the serial twin's; the timeline
/// of the first and last iteration is written; `selftest latency` measures both costs.
#[test]
fn a_pool_inside_each_rank_and_the_timeline_and_latency() {
    let svg = std::env::temp_dir().join(format!("magpie-dist-mpi-{}.svg", std::process::id()));
    let args = [
        "run",
        "hf",
        "--n",
        "40",
        "--workers",
        "2",
        "--strategy",
        "steal-retentive",
        "--timeline",
        svg.to_str().unwrap(),
        "--json",
    ];
    let Some(v) = run_json(2, &args, "hf with pools") else {
        return;
    };
    assert_eq!(v["verified"], true);
    assert_eq!(v["workers"], 2);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("2 ranks") && drawn.contains("iteration 2"));
    std::fs::remove_file(&svg).unwrap();
    let v = run_json(2, &["selftest", "latency", "--tasks", "200"], "latency").unwrap();
    assert!(v["message_ns"].as_f64().unwrap() > 0.0);
    assert!(v["empty_attempt_ns"].as_f64().unwrap() > 0.0);
    let o = mpirun(1, &["selftest", "latency"]).unwrap();
    assert_eq!(o.status.code(), Some(2), "one rank is a clear error");
}

/// The balancers place under MPI exactly as in one process, from the same measurements, at 2-4
/// ranks.
#[test]
fn the_balancers_place_under_mpi_as_in_one_process() {
    for ranks in [2, 3, 4] {
        let Some(o) = mpirun(ranks, &["selftest", "balance", "--tasks", "20"]) else {
            return;
        };
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{ranks} ranks: {out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.contains("ok: both balancers placed as in one process"),
            "{out}"
        );
        assert_eq!(out.matches("equals the in-process one").count(), 2, "{out}");
    }
}

/// A rank that stops without dying (SIGSTOP) no longer hangs the others: the watchdog ends the
/// job within its limit (2 s here) plus a little, with one message naming the stopped rank.
#[test]
fn the_watchdog_names_a_stopped_rank_and_ends_the_job() {
    for (ranks, stop) in [(2, 1), (3, 2)] {
        let start = std::time::Instant::now();
        let stop_rank = stop.to_string();
        let args = ["selftest", "watchdog", "--stop-rank", &stop_rank];
        let Some(o) = mpirun_with(ranks, &args, &[("MAGPIE_DIST_WATCHDOG", "2")]) else {
            return;
        };
        let took = start.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "{ranks} ranks: the job ended well?\n{err}"
        );
        let named = format!("rank {stop} has made no progress");
        assert_eq!(err.matches(&named).count(), 1, "{ranks} ranks:\n{err}");
        assert_eq!(err.matches("has made no progress").count(), 1, "{err}");
        // 2 s of silence, the turns of the ranks that look, and MPI's own start and end.
        assert!(took < std::time::Duration::from_secs(30), "{took:?}\n{err}");
    }
}
