//! End-to-end tests of `magpie suite` at `ci` size with one run per configuration: the JSON rows,
//! the report folder, bad filters, and `magpie` alone being the suite.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn magpie_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_magpie"))
        .args(args)
        .current_dir(dir)
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY")
        .output()
        .expect("run magpie")
}

/// `magpie suite --size ci --runs 1 --peers none` and then `args`, in `dir`: the quickest suite
/// run, which the tests of one option or add-on each start from.
fn quick_suite(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["suite", "--size", "ci", "--runs", "1", "--peers", "none"];
    all.extend_from_slice(args);
    magpie_in(dir, &all)
}

/// A fresh, empty folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("suite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

const ROW_KEYS: [&str; 14] = [
    "kernel", "size", "n", "runtime", "variant", "policy", "workers", "median_s", "min_s", "max_s",
    "verified", "speedup", "error", "stats",
];

#[test]
fn json_has_magpie_serial_and_peer_rows() {
    let dir = scratch("json");
    let o = magpie_in(
        &dir,
        &[
            "suite",
            "--size",
            "ci",
            "--runs",
            "1",
            "--kernels",
            "fib,nqueens",
            "--workers",
            "1,2",
            "--json",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&o.stdout)
        )
    });
    assert_eq!(v["size"], "ci");
    assert_eq!(v["runs"], 1);
    for k in [
        "hostname",
        "cpus",
        "os",
        "arch",
        "magpie_cli_version",
        "unix_time",
    ] {
        assert!(
            v["machine"].get(k).is_some(),
            "machine lacks {k}: {}",
            v["machine"]
        );
    }
    assert!(v["machine"]["cpus"].as_u64().unwrap() >= 1);
    let rows = v["rows"].as_array().expect("rows");
    for r in rows {
        for k in ROW_KEYS {
            assert!(r.get(k).is_some(), "row lacks {k}: {r}");
        }
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["error"].is_null(), "{r}");
        assert!(r["median_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["speedup"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["size"], "ci");
    }
    let has = |kernel: &str, runtime: &str, policy: Option<&str>, workers: u64| {
        rows.iter().any(|r| {
            r["kernel"] == kernel
                && r["runtime"] == runtime
                && r["policy"].as_str() == policy
                && r["workers"] == workers
        })
    };
    for kernel in ["fib", "nqueens"] {
        assert!(has(kernel, "serial", None, 1), "{kernel} serial");
        for w in [1, 2] {
            for p in ["work-first", "help-first", "adaptive"] {
                assert!(has(kernel, "magpie", Some(p), w), "{kernel} {p} x{w}");
            }
            assert!(has(kernel, "rayon", None, w), "{kernel} rayon x{w}");
            assert!(has(kernel, "chili", None, w), "{kernel} chili x{w}");
        }
    }
    // One row per configuration, and each peer at every worker count.
    let key = |r: &serde_json::Value| {
        format!(
            "{} {} {} {} {}",
            r["kernel"], r["runtime"], r["variant"], r["policy"], r["workers"]
        )
    };
    let mut keys: Vec<String> = rows.iter().map(key).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), rows.len(), "repeated rows");
    let count = |w: u64| rows.iter().filter(|r| r["workers"] == w).count();
    assert_eq!(count(1), count(2) + 2, "serial rows are at 1 worker");
    for r in rows {
        let magpie = r["runtime"] == "magpie";
        assert_eq!(r["stats"].is_object(), magpie, "{r}");
        assert_eq!(r["policy"].is_string(), magpie, "{r}");
        if r["runtime"] == "serial" {
            assert_eq!(r["workers"], 1);
            assert_eq!(r["speedup"], 1.0);
        }
        if r["runtime"] == "rayon" || r["runtime"] == "chili" {
            assert!(r["variant"].is_string(), "{r}");
        }
    }
    let fib_rayon = rows
        .iter()
        .find(|r| r["kernel"] == "fib" && r["runtime"] == "rayon")
        .unwrap();
    assert_eq!(fib_rayon["variant"], "join");
    // Every row's answer, the C++ peers' aside (their programs do not report it).
    for r in rows
        .iter()
        .filter(|r| r["runtime"] != "tbb" && r["runtime"] != "openmp")
    {
        let want = if r["kernel"] == "fib" {
            "fib(20) = 6765"
        } else {
            "724 solutions"
        };
        assert_eq!(r["result"], want, "{r}");
    }
    // The report folder is written in the working directory by default.
    assert!(dir.join("magpie-report/results.json").is_file());
    assert!(dir.join("magpie-report/index.html").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_folder_has_results_and_charts() {
    let dir = scratch("out");
    let out = dir.join("report");
    let o = magpie_in(
        &dir,
        &[
            "suite",
            "--size",
            "ci",
            "--runs",
            "1",
            "--kernels",
            "fib",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Stderr is not a terminal here: one progress line per finished configuration.
    assert!(err.contains("fib n=20 serial x1"), "{err}");
    let table = String::from_utf8_lossy(&o.stdout);
    for s in [
        "fib (n = 20",
        "\n  result: fib(20) = 6765\n",
        "serial",
        "magpie adaptive",
        "rayon-join",
        "speedup",
    ] {
        assert!(table.contains(s), "table lacks {s}:\n{table}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
            .expect("results.json is JSON");
    assert!(json["rows"].as_array().is_some_and(|r| !r.is_empty()));
    assert!(json.get("traces").is_none(), "no --trace, no traces");
    assert!(
        !out.join("results.partial.json").exists(),
        "a finished suite leaves no partial results"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg"), "no chart");
    assert_eq!(
        html.matches("<svg").count(),
        2,
        "the kernel's speedup and peer charts (the headline and overview are tables)"
    );
    // The headline first: a card per peer at each worker count, then the overview table.
    let (head, over) = (
        html.find("id=\"headline\"").unwrap(),
        html.find("id=\"overview\"").unwrap(),
    );
    assert!(head < over && over < html.find("id=\"fib\"").unwrap());
    // rayon and chili (and TBB and OpenMP where the peers are built) at each worker count.
    let cards = html.matches("class=\"card\"").count();
    let versus = json["headline"]["versus"].as_array().map_or(0, Vec::len);
    assert!(
        cards >= 2 && cards == versus,
        "{cards} cards, {versus} in results.json"
    );
    assert!(html.contains("vs rayon") && html.contains("÷ chili"));
    assert!(table.contains("headline: magpie (adaptive)"), "{table}");
    assert!(html.contains("magpie adaptive") && html.contains("chili-join"));
    assert!(html.contains("<p class=\"result\">result: <code>fib(20) = 6765</code></p>"));
    // Self-contained: no scripts, style sheets, images or fonts from elsewhere.
    for s in ["<script", "<link", " src=", "url("] {
        assert!(!html.contains(s), "index.html has {s}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_suite_stopped_part_way_keeps_the_kernels_it_finished() {
    // fj finishes in a fraction of a second; uts at the default size then takes seconds, during
    // which the suite is killed, as a time limit or Ctrl-C would stop it.
    let dir = scratch("stopped");
    let out = dir.join("report");
    let mut child = Command::new(env!("CARGO_BIN_EXE_magpie"))
        .args([
            "suite",
            "--size",
            "default",
            "--runs",
            "1",
            "--kernels",
            "fj,uts",
            "--workers",
            "1",
            "--policies",
            "adaptive",
            "--peers",
            "none",
            "--out",
            out.to_str().unwrap(),
        ])
        .current_dir(&dir)
        .env_remove("MAGPIE_WORKERS")
        .env_remove("MAGPIE_POLICY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start magpie suite");
    let partial = out.join("results.partial.json");
    let waited = std::time::Instant::now();
    while !partial.exists() {
        if let Some(status) = child.try_wait().expect("poll magpie suite") {
            panic!(
                "the suite ended ({status}) before writing {}",
                partial.display()
            );
        }
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(120),
            "no partial results after fj"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().expect("stop magpie suite");
    child.wait().expect("reap magpie suite");
    assert!(
        !out.join("results.json").exists(),
        "the suite was not stopped in uts"
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&partial).unwrap())
        .expect("results.partial.json is JSON, whole");
    assert_eq!(json["kernels"], serde_json::json!(["fj"]), "{json}");
    let rows = json["rows"].as_array().expect("rows");
    let runtimes: Vec<&str> = rows.iter().filter_map(|r| r["runtime"].as_str()).collect();
    assert_eq!(runtimes, ["serial", "magpie"], "{json}");
    for r in rows {
        assert_eq!(r["kernel"], "fj");
        assert_eq!(r["verified"], true, "{r}");
    }
    assert!(
        rows[1]["speedup"].as_f64().is_some(),
        "derived like results.json"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trace_option_embeds_timelines_and_keeps_the_trace_files() {
    let dir = scratch("trace");
    let out = dir.join("report");
    let o = quick_suite(
        &dir,
        &[
            "--kernels",
            "fib,nqueens",
            "--policies",
            "help-first",
            "--workers",
            "1,2",
            "--trace",
            "nqueens",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("tracing nqueens"), "{err}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    // One timeline, in nqueens's section, with a lane per worker of the highest count.
    assert_eq!(html.matches("class=\"timeline\"").count(), 1);
    let nqueens = html.find("id=\"nqueens\"").expect("nqueens section");
    let timeline = html.find("class=\"timeline\"").unwrap();
    assert!(timeline > nqueens && nqueens > html.find("id=\"fib\"").unwrap());
    assert_eq!(html.matches("class=\"lane\"").count(), 2);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(json["command"]
        .as_str()
        .unwrap()
        .ends_with("--trace nqueens"));
    let t = &json["traces"][0];
    assert_eq!(t["kernel"], "nqueens");
    assert_eq!(t["workers"], 2);
    assert_eq!(t["policy"], "help-first");
    assert!(
        t["error"].is_null() && t["parallelism"].as_f64().unwrap() > 0.0,
        "{t}"
    );
    let bytes = std::fs::read(out.join(t["file"].as_str().unwrap())).unwrap();
    let trace = magpie::trace::Trace::from_bytes(&bytes).expect("a trace file");
    assert_eq!(trace.workers(), 2);

    // A kernel the suite does not run cannot be traced.
    let o = magpie_in(
        &dir,
        &[
            "suite",
            "--size",
            "ci",
            "--kernels",
            "fib",
            "--trace",
            "uts",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: ") && err.contains("uts"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_filters_exit_2_naming_the_valid_values() {
    let dir = scratch("bad");
    let cases: &[(&[&str], &[&str])] = &[
        (&["--kernels", "fib,fibo"], &["fibo", "fj-rec", "matmul"]),
        (&["--size", "huge"], &["huge", "ci", "default", "paper"]),
        (
            &["--policies", "adaptive,eager"],
            &["eager", "work-first", "help-first", "adaptive"],
        ),
        (
            &["--peers", "rayon,tbx"],
            &["tbx", "rayon", "chili", "none"],
        ),
        (&["--workers", "1,0"], &["0", "between 1 and 4096"]),
        (&["--workers", "5000"], &["5000", "between 1 and 4096"]),
        (&["--runs", "0"], &["runs"]),
        (
            &["--size", "ci", "--kernels", "fib", "--locality", "fib"],
            &["fib", "leaf"],
        ),
        (
            &["--size", "ci", "--kernels", "fib", "--locality", "heat"],
            &["heat", "--kernels"],
        ),
        (
            &[
                "--size",
                "ci",
                "--kernels",
                "heat",
                "--locality",
                "heat",
                "--locality-topology",
                "4x",
            ],
            &["4x", "SOCKETSxCORES"],
        ),
    ];
    for (args, needles) in cases {
        // Bad values fail while parsing; `--size ci` keeps a mistaken case short.
        let mut all = vec!["suite"];
        all.extend_from_slice(args);
        if !args.contains(&"--size") {
            all.extend(["--size", "ci", "--runs", "1", "--kernels", "fib"]);
        }
        let o = magpie_in(&dir, &all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        for n in *needles {
            assert!(err.contains(n), "{args:?}: {err} lacks {n}");
        }
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // Nothing was measured, so no report folder.
    assert!(!dir.join("magpie-report").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_names_suite_as_the_default() {
    let dir = scratch("help");
    let o = magpie_in(&dir, &["--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("suite"), "{help}");
    assert!(help.contains("Without a command"), "{help}");
    let o = magpie_in(&dir, &["suite", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    for opt in [
        "--kernels",
        "--policies",
        "--workers",
        "--peers",
        "--size",
        "--runs",
        "--json",
        "--out",
        "--trace",
    ] {
        assert!(help.contains(opt), "suite --help lacks {opt}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn locality_models_each_strategy_and_says_it_is_a_model() {
    let dir = scratch("locality");
    let o = quick_suite(
        &dir,
        &[
            "--kernels",
            "heat",
            "--workers",
            "1",
            "--policies",
            "adaptive",
            "--locality",
            "heat",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["command"]
        .as_str()
        .unwrap()
        .contains("--locality heat --locality-topology 4x4:6MiB"));
    let l = &v["locality"][0];
    assert_eq!(l["kernel"], "heat");
    assert_eq!(l["error"], serde_json::Value::Null);
    let rows = l["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "random",
            "numa",
            "places",
            "places-cross",
            "cab",
            "cab-paper",
            "relws",
            "stows",
            "user"
        ]
    );
    let misses = |name: &str| {
        let r = rows.iter().find(|r| r["strategy"] == name).unwrap();
        let per: Vec<u64> = r["misses_per_socket"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_u64().unwrap())
            .collect();
        assert_eq!(per.len(), 4, "{name}: one count per modelled socket");
        assert_eq!(per.iter().sum::<u64>(), r["misses"].as_u64().unwrap());
        r["misses"].as_u64().unwrap()
    };
    // Places keep each socket's rows in its cache from step to step; random stealing moves
    // them, and a write on one socket invalidates the other sockets' copies.
    assert!(misses("places") < misses("random"));
    // heat has a first-touch initialiser: per-iteration rows, and the first-touch page map.
    for name in ["random", "relws", "stows", "user"] {
        let r = rows.iter().find(|r| r["strategy"] == name).unwrap();
        assert_eq!(r["iterations"].as_array().unwrap().len(), 20, "{name}");
        assert!(r["answer"].as_str().unwrap().starts_with("sum "), "{name}");
    }
    let html = std::fs::read_to_string(dir.join("magpie-report/index.html")).unwrap();
    assert!(html.contains("id=\"locality\""));
    assert!(html.contains("wall-clock gains from locality need a machine with several"));
    assert!(html.contains("remote MB"));
    assert!(html.contains("relws same"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn splice_runs_the_stencils_spliced_beside_the_others() {
    let dir = scratch("splice");
    let o = quick_suite(
        &dir,
        &[
            "--kernels",
            "heat,fib",
            "--workers",
            "1,2",
            "--policies",
            "adaptive",
            "--splice",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["command"].as_str().unwrap().ends_with(" --splice"));
    // heat at both worker counts; fib is no stencil.
    let s = v["splice"].as_array().unwrap();
    assert_eq!(s.len(), 2, "{s:?}");
    for (row, workers) in s.iter().zip([1, 2]) {
        assert_eq!(row["kernel"], "heat");
        assert_eq!(row["workers"], workers);
        assert_eq!(row["error"], serde_json::Value::Null);
        assert_eq!(row["outcome"]["verified"], true);
        assert_eq!(row["outcome"]["window"], 8);
    }
    let html = std::fs::read_to_string(dir.join("magpie-report/index.html")).unwrap();
    assert!(html.contains("id=\"splice\"") && html.contains("unspliced ÷ spliced"));
}

#[test]
fn the_rayon_programs_run_beside_their_rayon_build() {
    let programs = [
        "mandelbrot",
        "par-sort-unstable",
        "par-sort-by-key",
        "nbody-step",
        "word-count",
        "fine-sum",
        "spmv",
    ];
    let dir = scratch("programs");
    let kernels = programs.join(",");
    let o = magpie_in(
        &dir,
        &[
            "suite",
            "--size",
            "ci",
            "--runs",
            "1",
            "--kernels",
            &kernels,
            "--workers",
            "1,2",
            "--policies",
            "adaptive",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    for k in programs {
        let mine: Vec<&serde_json::Value> = rows.iter().filter(|r| r["kernel"] == k).collect();
        // serial; magpie adaptive and rayon's parallel iterators at 1 and 2 workers.
        assert_eq!(mine.len(), 5, "{k}: {mine:?}");
        for r in &mine {
            assert_eq!(r["verified"], true, "{r}");
        }
        for w in [1, 2] {
            assert!(
                mine.iter().any(|r| r["runtime"] == "rayon"
                    && r["variant"] == "iter"
                    && r["workers"] == w),
                "{k} rayon-iter x{w}"
            );
        }
        for peer in ["chili", "tbb", "openmp"] {
            assert!(
                v["not_measured"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x["kernel"] == k && x["runtime"] == peer),
                "{k}: {peer} not listed as not measured"
            );
        }
    }
    let html = std::fs::read_to_string(dir.join("magpie-report/index.html")).unwrap();
    for k in programs {
        assert!(html.contains(&format!("<section id=\"{k}\">")), "{k}");
    }
    assert!(html.contains("rayon-iter"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_kernel_answers() {
    // Every kernel at ci size, once on the serial twin and once on magpie (no peers): each row
    // of results.json has a non-empty answer, and each kernel's section of index.html shows it.
    let dir = scratch("answers");
    let o = quick_suite(
        &dir,
        &["--workers", "1", "--policies", "adaptive", "--json"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kernels = v["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 34);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        2 * kernels.len(),
        "serial and magpie per kernel"
    );
    for r in rows {
        let answer = r["result"].as_str().unwrap_or_default();
        assert!(!answer.is_empty() && !answer.contains('\n'), "{r}");
    }
    let html = std::fs::read_to_string(dir.join("magpie-report/index.html")).unwrap();
    assert_eq!(
        html.matches("<p class=\"result\">result: <code>").count(),
        kernels.len(),
        "{html}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corun_option_embeds_the_co_run_under_every_mode() {
    let dir = scratch("corun");
    let out = dir.join("report");
    let o = quick_suite(
        &dir,
        &[
            "--kernels",
            "fib",
            "--policies",
            "adaptive",
            "--workers",
            "2",
            "--corun",
            "fib,nqueens:8",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Not a terminal: a plain line per co-run phase (both alone under off, then per mode).
    assert!(err.contains("corun 12/12 off: co-running"), "{err}");
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("co-run (magpie corun, every sharing mode):"),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
            .expect("results.json is JSON");
    let report = &json["corun"]["report"];
    let modes: Vec<&str> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["mode"].as_str().expect("a mode"))
        .collect();
    assert_eq!(modes, ["dws", "abp", "ep", "off"]);
    assert_eq!(report["rows"][0]["b"]["n"], 8);
    assert!(report["command"]
        .as_str()
        .is_some_and(|c| c.starts_with("magpie corun fib nqueens:8 --size ci --workers 2")));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"corun\">"));
    // The kernel's speedup chart, then one co-run plot per mode.
    assert_eq!(html.matches("<svg").count(), 5, "{html}");
    assert!(html.contains("dws: the cores each program held and used while co-running"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_corun_option_is_a_usage_error_before_anything_runs() {
    let dir = scratch("corun-bad");
    for (arg, says) in [
        ("fib", "expected two programs separated by a comma"),
        (
            "fib,nqueens,uts",
            "expected two programs separated by a comma",
        ),
        ("fib:x,uts", "bad size `x`"),
        ("nope,uts", "nope"),
    ] {
        let o = magpie_in(&dir, &["suite", "--size", "ci", "--corun", arg]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--corun {arg}: {err}");
        assert!(err.contains(says), "--corun {arg}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_report_folder_that_cannot_be_made_fails_before_anything_runs() {
    let dir = scratch("bad-out");
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let out = blocker.join("report");
    let o = magpie_in(
        &dir,
        &[
            "suite",
            "--size",
            "ci",
            "--kernels",
            "fib",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("choose a folder you can write with --out"),
        "{err}"
    );
    // Nothing ran: no progress line.
    assert!(!err.contains("fib n="), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dist_option_embeds_the_simulated_collections() {
    let dir = scratch("dist");
    let out = dir.join("report");
    let o = quick_suite(
        &dir,
        &[
            "--kernels",
            "fib",
            "--policies",
            "adaptive",
            "--workers",
            "1",
            "--dist",
            "tce:12",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("dist 14/14 tce 16 ranks plb-hierarchical+steal"),
        "{err}"
    );
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("distributed task collections, simulated"),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
            .expect("results.json is JSON");
    let rows = json["dist"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 14, "7 strategies at 4 and 16 ranks");
    assert!(rows
        .iter()
        .all(|r| r["last_efficiency"].as_f64().is_some_and(|e| e > 0.0)));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"dist\">"));
    // The kernel's speedup chart, then a rank timeline per strategy at 16 ranks.
    assert_eq!(html.matches("<svg").count(), 1 + 7);
    let o = magpie_in(&dir, &["suite", "--size", "ci", "--dist", "uts"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected hf or tce"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tree_sum_brings_the_small_input_figure_and_other_kernels_do_not() {
    let dir = scratch("small-input");
    let o = quick_suite(
        &dir,
        &[
            "--kernels",
            "tree-sum",
            "--workers",
            "1,2",
            "--policies",
            "adaptive",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["small_input"];
    assert_eq!(s["error"], serde_json::Value::Null);
    let f = &s["figure"];
    assert_eq!(f["nodes"], 1023);
    assert_eq!(f["answer"], "sum of 1023 nodes = 523776");
    let rows: Vec<(String, u64)> = f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["runtime"].as_str().unwrap().to_string(),
                r["workers"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [1, 2]
        .iter()
        .flat_map(|&w| ["magpie", "rayon", "chili"].map(|r| (r.to_string(), w)))
        .collect();
    assert_eq!(rows, want);
    let html = std::fs::read_to_string(dir.join("magpie-report/index.html")).unwrap();
    assert!(html.contains("id=\"small-input\"") && html.contains("× serial"));

    let dir = scratch("no-small-input");
    let o = quick_suite(&dir, &["--kernels", "fib", "--workers", "1", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("small_input").is_none());
}
