//! End-to-end tests of the `magpie` binary: JSON output of `bench`, exit codes and one-line
//! errors for bad input, the stack-limit stop, and `report` at `ci` size.

use std::process::{Command, Output};

fn magpie(args: &[&str]) -> Output {
    magpie_env(args, &[])
}

fn magpie_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_magpie"));
    c.args(args)
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY")
        .env_remove("MAGPIE_TOPOLOGY")
        .env_remove("MAGPIE_TRACE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run magpie")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

const REQUIRED: [&str; 14] = magpie_bench::runner::REQUIRED_KEYS;

#[test]
fn bench_fib_json_has_the_required_keys_and_verifies() {
    let o = magpie(&["bench", "fib", "--size", "ci", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    for k in REQUIRED {
        assert!(v.get(k).is_some(), "missing key {k} in {v}");
    }
    assert_eq!(v["kernel"], "fib");
    assert_eq!(v["n"], 20);
    assert_eq!(v["policy"], "adaptive");
    assert_eq!(v["runs"], 5);
    assert_eq!(v["verified"], true);
    // The answer, beside `verified`: magpie's, the serial twin's and the Rust peers' alike.
    assert_eq!(v["result"], "fib(20) = 6765");
    assert_eq!(v["serial_result"], "fib(20) = 6765");
    assert!(v["error"].is_null());
    assert!(v["stats"].is_object() && v["stats"]["spawns_work_first"].is_u64());
    assert!(v["median_s"].as_f64().unwrap() > 0.0);
    let peers: Vec<&str> = v["peers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    // The Rust peers always; the C++ ones when scripts/build-peers.sh has built them.
    assert_eq!(peers[..2], ["rayon-join", "chili-join"]);
    assert!(peers[2..]
        .iter()
        .all(|p| ["tbb-task-group", "openmp-task"].contains(p)));
    for p in v["peers"].as_array().unwrap() {
        for k in ["median_s", "min_s", "max_s", "ratio_to_serial"] {
            assert!(p[k].is_number(), "peer key {k} in {p}");
        }
    }
}

#[test]
fn bench_runs_a_rayon_program_against_its_rayon_build() {
    let o = magpie(&[
        "bench",
        "par-sort-by-key",
        "--size",
        "ci",
        "--workers",
        "2",
        "--runs",
        "3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(
        (v["n"].as_u64(), v["verified"].as_bool()),
        (Some(20_000), Some(true))
    );
    assert!(v["serial_median_s"].is_number());
    let peers = v["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 1, "{peers:?}");
    assert_eq!(peers[0]["name"], "rayon-iter");
    assert_eq!(peers[0]["verified"], true);
    let mut absent: Vec<&str> = v["peers_unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    absent.sort_unstable();
    assert_eq!(absent, ["chili", "openmp", "tbb"]);
    // The programs take no grain.
    let o = magpie(&["bench", "spmv", "--grain", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no grain"));
}

#[test]
fn a_rayon_program_runs_on_the_core_its_build_names() {
    // The two builds beside this magpie (target/rayon-compare/dev, made by the test command).
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_magpie"));
    let pair = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("rayon-compare/dev");
    // A policy reaches magpie's rayon-core through the child's MAGPIE_POLICY: the answer is the
    // same whichever policy splits the work.
    for policy in ["work-first", "help-first"] {
        let o = magpie(&[
            "bench",
            "word-count",
            "--size",
            "ci",
            "--workers",
            "2",
            "--runs",
            "2",
            "--policy",
            policy,
            "--json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v = json(&o);
        assert_eq!(v["policy"], policy);
        assert_eq!(v["verified"], true);
        assert_eq!(v["result"], v["serial_result"]);
    }
    // Swapped builds are refused, naming the one that runs on the wrong core.
    let dir = std::env::temp_dir().join(format!("magpie-swapped-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(pair.join("magpie"), dir.join("rayon")).unwrap();
    std::os::unix::fs::symlink(pair.join("rayon"), dir.join("magpie")).unwrap();
    let d = dir.to_str().unwrap();
    let o = magpie(&["bench", "spmv", "--size", "ci", "--rayon-builds", d]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("should run rayon on rayon's core but says `magpie`"),
        "{err}"
    );
    // A folder without them says how to make them.
    std::fs::remove_file(dir.join("rayon")).unwrap();
    let o = magpie(&["bench", "spmv", "--size", "ci", "--rayon-builds", d]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("scripts/build-rayon-compare.sh"), "{err}");
    // The suite lists magpie and rayon as not measured instead, and still runs the serial twin.
    let o = magpie(&[
        "suite",
        "--size",
        "ci",
        "--runs",
        "1",
        "--kernels",
        "spmv",
        "--workers",
        "1",
        "--rayon-builds",
        d,
        "--json",
        "--out",
        d,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["runtime"], "serial");
    for runtime in ["magpie", "rayon-iter"] {
        assert!(
            v["not_measured"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["kernel"] == "spmv"
                    && x["runtime"] == runtime
                    && x["reason"]
                        .as_str()
                        .unwrap()
                        .contains("build-rayon-compare")),
            "{runtime}: {}",
            v["not_measured"]
        );
    }
    // Options only magpie's own pool takes are refused for a rayon program.
    let o = magpie(&["bench", "spmv", "--size", "ci", "--steal-one"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--steal-one is not available for spmv"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_options_are_applied() {
    let o = magpie(&[
        "bench",
        "fj",
        "--n",
        "2",
        "--workers",
        "1",
        "--policy",
        "help-first",
        "--runs",
        "2",
        "--json",
        "--no-peers",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!((v["n"].as_u64(), v["workers"].as_u64()), (Some(2), Some(1)));
    assert_eq!(v["policy"], "help-first");
    assert_eq!(v["tasks_per_run"], 2048);
    assert_eq!(v["peers"].as_array().unwrap().len(), 0);
    assert_eq!(v["stats"]["spawns_work_first"], 0);

    // The environment sets the defaults.
    let o = magpie_env(
        &["bench", "fj-rec", "--size", "ci", "--runs", "1", "--json"],
        &[("MAGPIE_WORKERS", "1"), ("MAGPIE_POLICY", "work-first")],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(
        (v["workers"].as_u64(), v["policy"].as_str()),
        (Some(1), Some("work-first"))
    );

    // The human table.
    let o = magpie(&[
        "bench",
        "pdfs",
        "--size",
        "ci",
        "--runs",
        "1",
        "--workers",
        "2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("magpie adaptive") && out.contains("verified: yes"),
        "{out}"
    );
    assert!(
        out.contains("verified: yes\nresult: 4096 of 4096 vertices reached\n"),
        "{out}"
    );
}

#[test]
fn bench_prints_known_answers() {
    // The answer a user can check: 8 queens have 92 solutions, the T1XS tree (the T1 family at
    // depth 6) has 16,000 nodes.
    for (args, want) in [
        (&["nqueens", "--n", "8"][..], "92 solutions"),
        (&["uts", "--n", "6"][..], "16000 nodes, "),
    ] {
        let bench = |more: &[&str]| {
            let mut a = vec!["bench"];
            a.extend_from_slice(args);
            a.extend_from_slice(&["--runs", "1", "--no-peers"]);
            a.extend_from_slice(more);
            let o = magpie(&a);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            o
        };
        let out = String::from_utf8_lossy(&bench(&[]).stdout).into_owned();
        assert!(out.contains(&format!("\nresult: {want}")), "{out}");
        let v = json(&bench(&["--json"]));
        let got = v["result"].as_str().unwrap_or_default();
        assert!(got.starts_with(want), "{v}");
        assert_eq!(v["serial_result"].as_str(), Some(got));
    }
}

/// Arguments, environment, and a word the error line must contain.
type BadCase<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn bad_input_exits_2_with_one_line_on_stderr() {
    let cases: &[BadCase] = &[
        (&["bench", "fibonacci"], &[], "unknown kernel"),
        (&["bench", "fib", "--n", "0"], &[], "invalid n"),
        (&["bench", "pdfs", "--n", "100000"], &[], "invalid n"),
        (&["bench", "fib", "--n", "ten"], &[], "--n"),
        (&["bench", "fib", "--workers", "0"], &[], "workers"),
        (&["bench", "fib", "--workers", "99999"], &[], "workers"),
        (&["bench", "fib", "--policy", "fastest"], &[], "policy"),
        (&["bench", "fib", "--runs", "0"], &[], "runs"),
        (&["bench", "fib", "--size", "huge"], &[], "size"),
        (&["bench", "fib", "--frobnicate"], &[], "frobnicate"),
        (&["bench"], &[], "KERNEL"),
        (&["bench", "uts", "--tree", "T9"], &[], "unknown tree"),
        (&["bench", "uts", "--tree", "-t 1 -a 3 -d"], &[], "--tree"),
        (
            &["bench", "uts", "--tree", "T1", "--n", "4"],
            &[],
            "not both",
        ),
        (&["bench", "fib", "--tree", "T1"], &[], "uts only"),
        (&["bench", "fj", "--grain", "3"], &[], "no grain"),
        (&["bench", "nqueens", "--grain", "17"], &[], "invalid grain"),
        (&["bench", "sor", "--grain", "0"], &[], "invalid grain"),
        (&["bench", "fib", "--grain", "61"], &[], "invalid grain"),
        (
            &["bench", "fib", "--size", "ci"],
            &[("MAGPIE_WORKERS", "zero")],
            "MAGPIE_WORKERS",
        ),
        (
            &["bench", "fib", "--size", "ci"],
            &[("MAGPIE_WORKERS", "0")],
            "MAGPIE_WORKERS",
        ),
        (
            &["bench", "fib", "--size", "ci"],
            &[("MAGPIE_POLICY", "eager")],
            "MAGPIE_POLICY",
        ),
        (&["report", "--workers-list", "1,x"], &[], "workers-list"),
        (
            &["report", "--size", "ci"],
            &[("MAGPIE_POLICY", "eager")],
            "MAGPIE_POLICY",
        ),
    ];
    for (args, env, needle) in cases {
        let o = magpie_env(args, env);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?} {env:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err} lacks {needle}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn stack_limit_exits_3_and_still_prints_json() {
    let args = [
        "bench",
        "pdfs",
        "--size",
        "ci",
        "--workers",
        "1",
        "--policy",
        "work-first",
        "--runs",
        "1",
        "--max-fibers",
        "16",
        // 64 KiB stacks: no child can run in place, so every spawn takes a fiber.
        "--stack-size",
        "65536",
    ];
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let o = magpie(&with_json);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: stack limit reached"), "{err}");
    let v = json(&o);
    assert_eq!(v["verified"], false);
    assert_eq!(v["stopped"], true);
    assert!(v["error"].as_str().unwrap().contains("stack limit"));
    assert!(v["stats"].is_object());

    let o = magpie(&args);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: stack limit reached"));
}

#[test]
fn report_at_ci_size_writes_every_kernel() {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("magpie-report-{}.md", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let o = magpie(&[
        "report",
        "--size",
        "ci",
        "--workers-list",
        "1",
        "--runs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(&out).expect("report file");
    for k in ["## fib", "## fj ", "## fj-rec", "## pdfs"] {
        assert!(md.contains(k), "report lacks {k}:\n{md}");
    }
    for s in [
        "magpie work-first",
        "magpie help-first",
        "magpie adaptive",
        "rayon-join",
        "chili-join",
        "rayon-scope",
        "peak RSS",
        "Derived figures",
        "`magpie bench fib --n 20 --workers 1 --policy adaptive --runs 1`",
        "result: `fib(20) = 6765`",
        "result: `724 solutions`",
    ] {
        assert!(md.contains(s), "report lacks {s}:\n{md}");
    }
    // Every kernel's section gives its answer.
    assert_eq!(
        md.matches("\nresult: `").count(),
        magpie_bench::Kernel::ALL.len(),
        "{md}"
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), md);
    let _ = std::fs::remove_file(&out);
}

#[test]
fn idle_reports_cpu_share_as_json() {
    let o = magpie(&["idle", "--workers", "2", "--seconds", "0.2", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["workers"], 2);
    assert!(v["cpu_percent_of_one_core"]
        .as_f64()
        .is_some_and(|p| p >= 0.0));
    let bad = magpie(&["idle", "--seconds", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn uts_takes_a_tree_and_kernels_take_a_grain() {
    // A named tree, then the same tree by its parameters: the same record.
    let named = magpie(&[
        "bench",
        "uts",
        "--tree",
        "T3XS",
        "--runs",
        "1",
        "--json",
        "--no-peers",
    ]);
    assert!(
        named.status.success(),
        "{}",
        String::from_utf8_lossy(&named.stderr)
    );
    let v = json(&named);
    assert_eq!(v["verified"], true);
    let tree = v["tree"].as_str().unwrap().to_string();
    assert!(tree.starts_with("-t 0 "), "{tree}");
    let by_params = magpie(&[
        "bench",
        "uts",
        "--tree",
        &tree,
        "--runs",
        "1",
        "--json",
        "--no-peers",
    ]);
    assert!(by_params.status.success());
    let w = json(&by_params);
    assert_eq!(
        (w["tree"].as_str(), &w["verified"]),
        (Some(tree.as_str()), &v["verified"])
    );
    // fib with a cutoff, a workload's grain and a written-out kernel's; the grain is in the record.
    for (kernel, n, grain) in [
        ("fib", "24", "12"),
        ("sor", "64", "2"),
        ("nqueens", "9", "8"),
    ] {
        let o = magpie(&[
            "bench",
            kernel,
            "--n",
            n,
            "--grain",
            grain,
            "--runs",
            "1",
            "--json",
            "--no-peers",
        ]);
        assert!(
            o.status.success(),
            "{kernel}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = json(&o);
        assert_eq!(v["verified"], true, "{kernel}");
        assert_eq!(v["grain"].as_u64(), grain.parse().ok(), "{kernel}");
    }
}

#[test]
fn bench_overheads_reports_shares() {
    let o = magpie(&[
        "bench",
        "fib",
        "--n",
        "24",
        "--workers",
        "2",
        "--runs",
        "2",
        "--json",
        "--no-peers",
        "--overheads",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let h = &v["overheads"];
    for k in ["victim_share", "steal_share", "search_share"] {
        let x = h[k].as_f64().unwrap_or_else(|| panic!("no {k}: {h}"));
        assert!((0.0..=1.0).contains(&x), "{k} = {x}");
    }
    assert_eq!(
        h["steals"].as_u64(),
        Some(
            v["stats"]["steals_child"].as_u64().unwrap()
                + v["stats"]["steals_continuation"].as_u64().unwrap()
        )
    );
    // Off by default.
    let o = magpie(&[
        "bench",
        "fib",
        "--n",
        "20",
        "--runs",
        "1",
        "--json",
        "--no-peers",
    ]);
    let v = json(&o);
    assert!(
        v["overheads"].is_null() && v["stats"]["victim_ns"] == 0,
        "{v}"
    );
}

#[test]
fn bench_steal_one_is_recorded_and_verified() {
    for (flag, half) in [(None, true), (Some("--steal-one"), false)] {
        let mut args = vec![
            "bench",
            "fj",
            "--size",
            "ci",
            "--workers",
            "2",
            "--policy",
            "help-first",
            "--runs",
            "2",
            "--json",
            "--no-peers",
        ];
        args.extend(flag);
        let o = magpie(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v = json(&o);
        assert_eq!(v["steal_half"].as_bool(), Some(half), "{v}");
        assert_eq!(v["verified"].as_bool(), Some(true), "{v}");
    }
}

#[test]
fn topology_prints_the_machine_or_a_virtual_one_and_refuses_bad_specs() {
    let o = magpie_env(&["topology"], &[("MAGPIE_TOPOLOGY", "")]);
    // An empty MAGPIE_TOPOLOGY is not a topology: a clean error.
    assert_eq!(o.status.code(), Some(2));
    let o = magpie_env(&["topology", "--json"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["virtual"], false);
    assert!(v["cores"].as_u64().unwrap() >= 1);
    // The detector: sysfs (or its fallback) unless the CLI was built with hwloc.
    let want: &[&str] = if cfg!(feature = "hwloc") {
        &["hwloc"]
    } else {
        &["sysfs", "fallback"]
    };
    assert!(want.contains(&v["detector"].as_str().unwrap()), "{v}");
    let text = magpie(&["topology"]);
    let first = String::from_utf8_lossy(&text.stdout);
    let first = first.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "detected topology ({}): ",
            v["detector"].as_str().unwrap()
        )),
        "{first}"
    );
    let o = magpie_env(&["topology", "--json"], &[("MAGPIE_TOPOLOGY", "4x4:6MiB")]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["virtual"], true);
    assert_eq!(v["cores"], 16);
    assert_eq!(v["sockets"][3]["llc_bytes"], 6 << 20);
    let text = magpie(&["topology", "--virtual-topology", "2x2:1MiB"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("socket 1: 2 core(s)"));
    let bad = magpie(&["topology", "--virtual-topology", "4x"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("4x4:6MiB") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn locality_models_misses_per_strategy() {
    let o = magpie(&[
        "locality",
        "heat",
        "--topology",
        "2x2:64KiB",
        "--runs",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for (row, name) in rows.iter().zip([
        "random",
        "numa",
        "places",
        "places-cross",
        "cab",
        "cab-paper",
    ]) {
        assert_eq!(row["strategy"], name);
        let per: Vec<u64> = row["misses_per_socket"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_u64().unwrap())
            .collect();
        assert_eq!(per.len(), 2);
        assert_eq!(per.iter().sum::<u64>(), row["misses"].as_u64().unwrap());
        // Every leaf reads its rows at least once: the grid cannot be read in fewer lines.
        assert!(row["misses"].as_u64().unwrap() > 0);
        assert!(row["leaves"].as_u64().unwrap() > 0);
    }
    let none = magpie(&["locality", "fib"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("declares no leaf accesses"));
    let bad = magpie(&["locality", "heat", "--strategies", "squads"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = magpie(&["locality", "heat", "--topology", "2x"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn locality_follows_schedules_on_the_first_touch_kernels() {
    for (kernel, n, strategies) in [
        ("heat", "64", "random,places,relws,stows,user"),
        ("fdtd-2d", "48", "random,relws,stows,user"),
        ("floyd-warshall", "64", "random,relws,stows,user"),
        ("cg", "4096", "random,relws,stows,user"),
        ("prefix-scan", "40000", "random,relws,stows,user"),
    ] {
        let o = magpie(&[
            "locality",
            kernel,
            "--n",
            n,
            "--topology",
            "2x2:64KiB",
            "--runs",
            "1",
            "--iterations",
            "4",
            "--strategies",
            strategies,
            "--json",
        ]);
        assert!(
            o.status.success(),
            "{kernel}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), strategies.split(',').count(), "{kernel}");
        let answers: Vec<&str> = rows.iter().map(|r| r["answer"].as_str().unwrap()).collect();
        // Every strategy computes the same result (each run is also checked against the serial
        // twin inside).
        assert!(
            answers.iter().all(|a| *a == answers[0]),
            "{kernel}: {answers:?}"
        );
        for row in rows {
            let its = row["iterations"].as_array().unwrap();
            assert_eq!(its.len(), 4, "{kernel} {}", row["strategy"]);
            for it in its {
                let same = it["same_worker"].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&same), "{kernel}: {it}");
            }
            // The iterations' misses and the initialiser's add up to the run's.
            let in_its: u64 = its.iter().map(|i| i["misses"].as_u64().unwrap()).sum();
            assert_eq!(
                in_its + row["placing_misses"].as_u64().unwrap(),
                row["misses"].as_u64().unwrap(),
                "{kernel}"
            );
            let late: u64 = its[2..].iter().map(|i| i["misses"].as_u64().unwrap()).sum();
            assert_eq!(row["late_misses"].as_u64(), Some(late), "{kernel}");
            let strategy = row["strategy"].as_str().unwrap();
            if matches!(strategy, "stows" | "user") {
                // Strict schedules keep every leaf on its worker after the first iteration.
                for it in &its[1..] {
                    assert_eq!(
                        it["same_worker"].as_f64(),
                        Some(1.0),
                        "{kernel} {strategy}: {it}"
                    );
                    assert_eq!(
                        it["deviations"].as_u64(),
                        Some(0),
                        "{kernel} {strategy}: {it}"
                    );
                }
            }
            if strategy != "random" && strategy != "places" {
                assert!(its
                    .iter()
                    .all(|i| i["schedule_bytes"].as_u64().unwrap() > 0));
            }
        }
    }
    // The schedule strategies need a kernel with an initialiser; places a kernel with rows.
    let bad = magpie(&["locality", "sor", "--strategies", "random,relws"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("first-touch initialiser"));
    let bad = magpie(&["locality", "cg", "--strategies", "places"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("sweep rows"));
}

#[test]
fn bench_runs_with_squads() {
    let o = magpie(&[
        "bench", "fib", "--size", "ci", "--runs", "1", "--squads", "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&o)["verified"], true);
}
