//! `magpie race KERNEL`: a kernel whose tasks declare their accesses, run under the race
//! checker (`magpie::race`, Lifflander's thesis §4.5.1) at each worker count given, as written
//! or with its planted race (`magpie_bench::races`). Prints each run's report (or one JSON
//! object per run): the kernel's answer (checked against its serial twin), the races found
//! with both accesses' positions in the program's tree, and what the checker's searches cost.
//! Exit code 3 when any run found a race, 0 when none did, 1 when an answer was wrong, 2 on
//! bad arguments.

use crate::args::{parse_workers_list, WorkersList};
use crate::failure::Failure;
use clap::Args;
use magpie::race::dpst::Search;
use magpie::race::{Options, Report};
use magpie_bench::Kernel;

#[derive(Args, Debug)]
pub(crate) struct RaceArgs {
    /// The kernel: heat, matmul, nbody, lu or nqueens.
    #[arg(value_parser = parse_race_kernel)]
    pub kernel: magpie_bench::races::Facet,
    /// Problem size (default: the kernel's small checking size; every access is checked).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub n: Option<u64>,
    /// Workers of the checked pool, comma-separated for several runs (e.g. 1,2,16).
    #[arg(long, default_value = "2", value_parser = parse_workers_list)]
    pub workers: WorkersList,
    /// Declare the kernel's planted race (a bug of its kind: see the kernel's docs).
    #[arg(long)]
    pub plant: bool,
    /// The lowest-common-ancestor search: phases (the thesis's, from the steal tree's working
    /// phases) or plain (parent by parent).
    #[arg(long, default_value = "phases", value_parser = parse_search)]
    pub search: magpie::race::dpst::Search,
    /// Run both searches on every query, check that they agree, and report each one's tree
    /// traversals and the share the phase search saved (the thesis's Fig. 4.9).
    #[arg(long)]
    pub compare: bool,
    /// Also time the same run on a pool that does not check (the median of 3) and report the
    /// checker's slowdown against it.
    #[arg(long)]
    pub slowdown: bool,
    /// One JSON object per run instead of the report.
    #[arg(long)]
    pub json: bool,
}

fn parse_race_kernel(s: &str) -> Result<magpie_bench::races::Facet, String> {
    match s.parse::<Kernel>().ok().and_then(Kernel::race) {
        Some(f) => Ok(f),
        None => {
            let raced: Vec<&str> = Kernel::ALL
                .iter()
                .copied()
                .filter(|k| k.race().is_some())
                .map(Kernel::name)
                .collect();
            Err(format!(
                "unknown kernel `{s}` for race: expected one of {}",
                raced.join(", ")
            ))
        }
    }
}

fn parse_search(s: &str) -> Result<magpie::race::dpst::Search, String> {
    match s {
        "phases" => Ok(magpie::race::dpst::Search::Phases),
        "plain" => Ok(magpie::race::dpst::Search::Plain),
        _ => Err(format!("unknown search `{s}`: expected phases or plain")),
    }
}

pub(crate) fn run(a: RaceArgs) -> Result<(), Failure> {
    let n = a.n.unwrap_or(a.kernel.default_n);
    let options = Options {
        search: a.search,
        compare: a.compare,
    };
    let mut raced = 0;
    for &workers in &a.workers.0 {
        let failure = |e: String| {
            if e.starts_with("invalid") {
                Failure::Usage(e)
            } else {
                Failure::Failed(e)
            }
        };
        let (answer, report, secs) =
            magpie_bench::races::check_timed(a.kernel, n, workers, a.plant, options)
                .map_err(failure)?;
        let plain = match a.slowdown {
            true => Some(
                magpie_bench::races::time_unchecked(a.kernel, n, workers, 3).map_err(failure)?,
            ),
            false => None,
        };
        if report.race_count > 0 {
            raced += 1;
        }
        let t = Timing { secs, plain };
        if a.json {
            println!("{}", json(&a, n, workers, &answer, &report, t));
        } else {
            print!("{}", text(&a, n, workers, &answer, &report, t));
        }
    }
    if raced > 0 {
        return Err(Failure::Raced(format!(
            "{}: races found in {raced} of {} run(s)",
            a.kernel.name,
            a.workers.0.len()
        )));
    }
    Ok(())
}

fn search_name(s: Search) -> &'static str {
    match s {
        Search::Plain => "plain",
        Search::Phases => "phases",
    }
}

/// The checked call's seconds, and the unchecked call's median when asked for (each call: the
/// kernel, then the check of its answer against the serial twin).
#[derive(Clone, Copy)]
struct Timing {
    secs: f64,
    plain: Option<f64>,
}

impl Timing {
    fn slowdown(self) -> Option<f64> {
        self.plain.filter(|&p| p > 0.0).map(|p| self.secs / p)
    }
}

fn text(a: &RaceArgs, n: u64, workers: usize, answer: &str, r: &Report, t: Timing) -> String {
    let mut o = format!(
        "{} n={n}{} at {workers} worker(s), {} search: {answer}\n{r}",
        a.kernel.name,
        if a.plant { " (planted race)" } else { "" },
        search_name(r.search)
    );
    o += &format!(
        "  {} queries; tree traversals: plain {}, phases {}{}; {:.3} s checked{}\n",
        r.queries,
        r.plain_traversals.map_or("-".into(), |t| t.to_string()),
        r.phase_traversals.map_or("-".into(), |t| t.to_string()),
        r.saved()
            .map_or(String::new(), |s| format!(" ({:.1}% saved)", 100.0 * s)),
        t.secs,
        match (t.plain, t.slowdown()) {
            (Some(p), Some(x)) => format!(", {p:.4} s unchecked: {x:.0}x"),
            _ => String::new(),
        }
    );
    o
}

fn json(a: &RaceArgs, n: u64, workers: usize, answer: &str, r: &Report, t: Timing) -> String {
    let races: Vec<serde_json::Value> = r
        .races
        .iter()
        .map(|x| {
            let site = |s: &magpie::race::Site| {
                serde_json::json!({
                    "access": format!("{:?}", s.access).to_lowercase(),
                    "path": s.path,
                    "shape": s.shape,
                    "worker": s.worker,
                    "phase": s.phase.0,
                    "phase_began_with_steal": s.phase.1,
                })
            };
            serde_json::json!({
                "addr": x.addr,
                "first": site(&x.first),
                "second": site(&x.second),
                "overlapped": x.overlapped(),
                "text": x.to_string(),
            })
        })
        .collect();
    serde_json::json!({
        "kernel": a.kernel.name,
        "n": n,
        "workers": workers,
        "planted": a.plant,
        "answer": answer,
        "search": search_name(r.search),
        "race_count": r.race_count,
        "races": races,
        "accesses": r.accesses,
        "locations": r.locations,
        "steps": r.steps,
        "stolen_phases": r.stolen_phases,
        "queries": r.queries,
        "plain_traversals": r.plain_traversals,
        "phase_traversals": r.phase_traversals,
        "saved": r.saved(),
        "seconds": t.secs,
        "unchecked_seconds": t.plain,
        "slowdown": t.slowdown(),
    })
    .to_string()
}
