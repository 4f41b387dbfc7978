//! `magpie suite` (also what `magpie` alone runs): every kernel under each magpie policy at each
//! worker count, with the serial twin and the peers, measured in interleaved rounds like `magpie
//! report` (one run of every runtime per round, see `runner::merge`); PDFS configurations run in
//! a child process so that each one's peak RSS is its own. While it runs, a progress bar (or, when
//! stderr is not a terminal, one line per finished configuration); at the end a table (or
//! results.json with `--json`) and a report folder with `results.json` and `index.html`. Until
//! then the folder's `results.partial.json` holds every kernel finished so far, in the same
//! format, so a suite stopped part-way loses only the kernel it was measuring. With
//! `--trace`, the kernels it names run once more, traced, at the suite's highest worker count, and
//! index.html shows their timelines (the trace files go to `traces/` in the report folder).

use crate::args::{
    parse_kernel_list, parse_peer_list, parse_policy_list, parse_program, parse_runs, parse_size,
    parse_suite_workers, KernelList, PeerList, PolicyList, WorkersList,
};
use crate::failure::Failure;
use crate::measure::dist::parse_dist;
use crate::measure::dist::DistSpec;
use crate::measure::suite::{
    available_cpus, corunning, machine, measure_all, modelled, spliced, traced, LocalityPlan, Plan,
};
use crate::model::corun::ProgramPair;
use crate::model::{derive, NotMeasured, Results, SmallInputInfo, POLICIES};
use crate::render::table::table;
use crate::render::trace::svg::timeline;
use crate::render::trace::title;
use clap::Args;
use magpie_bench::kernels;
use magpie_bench::{Kernel, Size};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug, Clone)]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub(crate) struct SuiteArgs {
    /// Kernels, comma-separated (`magpie bench --help` lists them all) [default: all].
    #[arg(long, value_parser = parse_kernel_list)]
    pub kernels: Option<KernelList>,
    /// magpie policies, comma-separated: work-first, help-first, adaptive [default: all three].
    #[arg(long, value_parser = parse_policy_list)]
    pub policies: Option<PolicyList>,
    /// Worker counts, comma-separated, 1 to 4096 [default: 1 and the available parallelism].
    #[arg(long, value_parser = parse_suite_workers)]
    pub workers: Option<WorkersList>,
    /// Peers, comma-separated: rayon, chili, tbb, openmp (or a variant: rayon-join, rayon-scope,
    /// rayon-iter, chili-join, tbb-task-group, openmp-task), or none [default: all].
    #[arg(long, value_parser = parse_peer_list)]
    pub peers: Option<PeerList>,
    /// Size preset: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Timed runs of each configuration (the median is reported). Three keeps the whole suite
    /// under 10 minutes on 2 cores; use 5 or more for figures you publish.
    #[arg(long, default_value_t = 3, value_parser = parse_runs)]
    pub runs: usize,
    /// Print results.json on stdout instead of the table (the report folder is still written).
    #[arg(long)]
    pub json: bool,
    /// The report folder (results.json and index.html; while the suite runs, results.partial.json
    /// holds the kernels finished so far, so a suite stopped part-way keeps them).
    #[arg(long, default_value = "magpie-report")]
    pub out: PathBuf,
    /// Kernels to trace, comma-separated: each runs once more, traced, at the highest worker
    /// count of the suite (adaptive, or the first policy selected), and index.html shows its
    /// per-worker timeline; the trace files go to <out>/traces/ [default: none].
    #[arg(long, value_parser = parse_kernel_list)]
    pub trace: Option<KernelList>,
    /// Kernels whose cache misses to model under each locality strategy, as `magpie locality`
    /// does: each runs at the suite's size on a pool shaped like --locality-topology, once per
    /// timed run and strategy, and index.html tables the modelled misses. Only kernels that
    /// declare their leaves' accesses can be modelled (heat, sor, ge, mergesort) [default: none].
    #[arg(long, value_parser = parse_kernel_list)]
    pub locality: Option<KernelList>,
    /// The virtual machine of --locality, SOCKETSxCORES:LLC.
    #[arg(long, default_value = "4x4:6MiB")]
    pub locality_topology: String,
    /// Also run the stencils among the kernels (heat, jacobi, fdtd-2d) spliced against the same
    /// steps unspliced (`magpie splice`, window 8, the suite's size and step count) at each
    /// worker count; the table and index.html show them beside the others.
    #[arg(long)]
    pub splice: bool,
    /// Also co-run two programs, A,B (each KERNEL[:N[:GRAIN]], as `magpie corun` takes them),
    /// as `magpie corun A B` does under every sharing mode (dws, abp, ep, off): each program with
    /// the suite's highest worker count, at the suite's size, each alone and co-running for the
    /// suite's runs (and at least a second); the table and index.html show the slowdowns and the
    /// cores each program held and used [default: none].
    #[arg(long, value_name = "A,B", value_parser = parse_program_pair)]
    pub corun: Option<ProgramPair>,
    /// Also simulate magpie-dist's task collections (thesis Ch. 5) on a synthetic kernel, hf or
    /// tce (KERNEL[:N], N × N tasks): every strategy (no balancing, stealing, retentive
    /// stealing, the two persistence-based balancers) at three rank counts for the suite's size
    /// (ci: 4 and 16; default: 16, 64, 256), four iterations each, in magpie-dist's simulator
    /// with this machine's MPI costs; the table and index.html show the efficiencies and the
    /// ranks' timelines [default: none].
    #[arg(long, value_name = "KERNEL", value_parser = parse_dist)]
    pub dist: Option<DistSpec>,
    /// The folder of the two builds that run the rayon programs, `magpie` (rayon on magpie's
    /// rayon-core) and `rayon` (on its own), made by scripts/build-rayon-compare.sh [default:
    /// target/rayon-compare/workspace, or .../dev for a debug magpie].
    #[arg(long, value_name = "DIR")]
    pub rayon_builds: Option<PathBuf>,
}

fn parse_program_pair(s: &str) -> Result<ProgramPair, String> {
    match s.split(',').collect::<Vec<_>>()[..] {
        [a, b] => Ok(ProgramPair(parse_program(a)?, parse_program(b)?)),
        _ => Err(format!(
            "`{s}`: expected two programs separated by a comma, A,B (each KERNEL[:N[:GRAIN]]), \
             e.g. fib,nqueens or fib:30,uts"
        )),
    }
}

/// The file in the report folder that holds what a suite has measured so far, kernel by kernel,
/// until `results.json` is written.
pub(crate) const PARTIAL: &str = "results.partial.json";

/// Writes `res` to `path` whole or not at all (a temporary file, then a rename), so a reader or
/// a stop never sees half a file. A failure is said and the suite goes on: the partial file is
/// a safeguard, and the run's own results are still to come.
fn write_partial(path: &Path, res: &Results) {
    let tmp = path.with_extension("json.tmp");
    let written = serde_json::to_string_pretty(res)
        .map_err(|e| e.to_string())
        .and_then(|j| std::fs::write(&tmp, j).map_err(|e| e.to_string()))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!(
            "magpie: cannot write {}: {e}; the suite goes on",
            path.display()
        );
    }
}

/// What the arguments ask the suite to run; a kernel named by an add-on that the suite does
/// not run, or a co-run program that cannot be built, is bad input.
fn plan_of(a: &SuiteArgs) -> Result<Plan, Failure> {
    let cpus = available_cpus();
    let workers = match &a.workers {
        Some(w) => w.0.clone(),
        None if cpus > 1 => vec![1, cpus],
        None => vec![1],
    };
    let mut plan = Plan {
        kernels: match &a.kernels {
            Some(k) => Kernel::ALL
                .iter()
                .copied()
                .filter(|x| k.0.contains(x))
                .collect(),
            None => Kernel::ALL.to_vec(),
        },
        policies: match &a.policies {
            Some(p) => POLICIES.into_iter().filter(|x| p.0.contains(x)).collect(),
            None => POLICIES.to_vec(),
        },
        workers,
        peers: match &a.peers {
            Some(p) => p.0.clone(),
            None => crate::model::all_peers(),
        },
        size: a.size,
        runs: a.runs,
        traces: vec![],
        locality: None,
        splice: a.splice,
        corun: a.corun,
        dist: a.dist,
        rayon_builds: a.rayon_builds.clone(),
    };
    // A co-run program that cannot be built fails now, not after the suite.
    if let Some(ProgramPair(x, y)) = &a.corun {
        for p in [x, y] {
            crate::measure::run::case_of(p.kernel, p.n, a.size, p.grain, None)
                .map_err(|e| Failure::Usage(format!("--corun {p}: {}", e.message())))?;
        }
    }
    if let Some(t) = &a.trace {
        for &k in &t.0 {
            if !plan.kernels.contains(&k) {
                return Err(Failure::Usage(format!(
                    "--trace names {k}, which --kernels leaves out: trace only kernels the \
                     suite runs"
                )));
            }
        }
        plan.traces = plan
            .kernels
            .iter()
            .copied()
            .filter(|k| t.0.contains(k))
            .collect();
    }
    if let Some(l) = &a.locality {
        for &k in &l.0 {
            if !plan.kernels.contains(&k) {
                return Err(Failure::Usage(format!(
                    "--locality names {k}, which --kernels leaves out: model only kernels \
                     the suite runs"
                )));
            }
            if !k.declares_leaves() {
                return Err(Failure::Usage(format!(
                    "--locality names {k}, which declares no leaf accesses: only {} can be \
                     modelled",
                    crate::measure::locality::kernels_in_words()
                )));
            }
        }
        plan.locality = Some(LocalityPlan {
            kernels: plan
                .kernels
                .iter()
                .copied()
                .filter(|k| l.0.contains(k))
                .collect(),
            topology: magpie::Topology::parse(&a.locality_topology).map_err(|e| {
                Failure::Usage(format!("--locality-topology {}: {e}", a.locality_topology))
            })?,
            spec: a.locality_topology.clone(),
        });
    }
    Ok(plan)
}

pub(crate) fn run(a: SuiteArgs) -> Result<(), Failure> {
    // Bad MAGPIE_* variables are bad input here too, though the suite sets workers and policy.
    magpie::Builder::default()
        .from_env()
        .map_err(Failure::from_magpie)?;
    let plan = plan_of(&a)?;
    // A report folder that cannot be made fails now, not after the suite.
    std::fs::create_dir_all(&a.out).map_err(|e| {
        Failure::Usage(format!(
            "cannot create {}: {e}; choose a folder you can write with --out",
            a.out.display()
        ))
    })?;
    let machine = machine();
    let started = Instant::now();
    // What is measured so far, rewritten after each kernel: a suite stopped part-way (Ctrl-C, a
    // time limit) leaves every kernel it finished, in results.json's format, rows and headline.
    let partial = a.out.join(PARTIAL);
    let mut done: Vec<String> = Vec::new();
    let (mut rows, mut not_measured) = measure_all(&plan, |k, rows, nm| {
        done.push(k.name().into());
        let mut rows = rows.to_vec();
        derive(&mut rows);
        let res = Results::measured(
            machine.clone(),
            &plan,
            done.clone(),
            started.elapsed().as_secs_f64(),
            rows,
            nm.to_vec(),
        );
        write_partial(&partial, &res);
    })?;
    derive(&mut rows);
    // Peers with no faithful version of a kernel (the kernel's own list), after those that
    // could not be set up here.
    for &k in &plan.kernels {
        for (name, reason) in k.unavailable_peers() {
            if plan
                .peers
                .iter()
                .any(|&p| crate::model::peer_parts(p).0 == *name)
            {
                not_measured.push(NotMeasured {
                    kernel: k.name().into(),
                    runtime: name.to_string(),
                    reason: reason.to_string(),
                });
            }
        }
    }
    let traces = if plan.traces.is_empty() {
        vec![]
    } else {
        let dir = a.out.join("traces");
        std::fs::create_dir_all(&dir).map_err(|e| {
            Failure::Failed(format!(
                "cannot create {}: {e}; choose a folder you can write with --out",
                dir.display()
            ))
        })?;
        plan.traces
            .iter()
            .map(|&k| {
                let n = k.size_n(plan.size);
                let (mut info, taken) =
                    traced(k, n, plan.trace_workers(), plan.trace_policy(), &a.out);
                if let Some((t, an)) = taken {
                    let what = format!("{k} (n = {n})");
                    info.svg = Some(timeline(&t, &title(&what, &t, &an)));
                }
                info
            })
            .collect()
    };
    let locality = plan.locality.as_ref().map_or_else(Vec::new, |l| {
        modelled(
            l,
            plan.size,
            plan.runs as u64,
            &crate::measure::locality::default_strategies(),
        )
    });
    let splice = if a.splice {
        spliced(&plan.kernels, &plan.workers, plan.size, plan.runs)
    } else {
        Vec::new()
    };
    let corun = plan
        .corun
        .map(|p| corunning(p, plan.trace_workers(), plan.size, plan.runs));
    let dist = plan
        .dist
        .map(|d| crate::measure::dist::simulated(d, plan.size));
    let small_input = plan.kernels.contains(&kernels::tree_sum::KERNEL).then(|| {
        eprintln!("small input: the 1,023-node tree sum entered from outside each pool");
        match kernels::tree_sum::small_input(&plan.workers, plan.runs) {
            Ok(f) => SmallInputInfo {
                figure: Some(f),
                error: None,
            },
            Err(e) => SmallInputInfo {
                figure: None,
                error: Some(e),
            },
        }
    });
    let res = Results {
        small_input,
        traces,
        locality,
        splice,
        corun,
        dist,
        ..Results::measured(
            machine,
            &plan,
            plan.kernels.iter().map(|k| k.name().into()).collect(),
            started.elapsed().as_secs_f64(),
            rows,
            not_measured,
        )
    };

    let json = serde_json::to_string_pretty(&res)
        .map_err(|e| Failure::Failed(format!("cannot serialize the results: {e}")))?;
    let write = |name: &str, text: &str| {
        let p = a.out.join(name);
        std::fs::write(&p, text).map_err(|e| {
            Failure::Failed(format!(
                "cannot write {}: {e}; choose a folder you can write with --out",
                p.display()
            ))
        })
    };
    write("results.json", &json)?;
    write("index.html", &crate::render::html::page(&res))?;
    // results.json has it all now.
    let _ = std::fs::remove_file(&partial);
    if a.json {
        println!("{json}");
    } else {
        print!("{}", table(&res));
    }
    eprintln!(
        "report written to {} (index.html, results.json)",
        a.out.display()
    );

    let failed: Vec<String> = res
        .rows
        .iter()
        .filter(|r| r.failed())
        .map(|r| format!("{} {} x{}", r.kernel, r.label(), r.workers))
        .chain(
            res.traces
                .iter()
                .filter(|t| t.failed())
                .map(|t| format!("{} traced run x{}", t.kernel, t.workers)),
        )
        .chain(
            res.locality
                .iter()
                .filter(|l| l.error.is_some())
                .map(|l| format!("{} locality model", l.kernel)),
        )
        .chain(
            res.splice
                .iter()
                .filter(|s| s.error.is_some())
                .map(|s| format!("{} spliced x{}", s.kernel, s.workers)),
        )
        .chain(
            res.corun
                .iter()
                .filter(|c| c.error.is_some())
                .map(|_| "the co-run".to_string()),
        )
        .chain(
            res.small_input
                .iter()
                .filter(|c| c.error.is_some())
                .map(|_| "the small-input figure".to_string()),
        )
        .chain(
            res.dist
                .iter()
                .filter(|d| d.error.is_some())
                .map(|_| "the distributed simulation".to_string()),
        )
        .collect();
    crate::failure::none_failed(&failed)
}
