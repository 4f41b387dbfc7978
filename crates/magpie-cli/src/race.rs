//! `magpie race KERNEL`: a kernel whose tasks declare their accesses, run under the race
//! checker (`magpie::race`, Lifflander's thesis §4.5.1) at each worker count given, as written
//! or with its planted race (`magpie_bench::races`). Prints each run's report (or one JSON
//! object per run): the kernel's answer (checked against its serial twin), the races found
//! with both accesses' positions in the program's tree, and what the checker's searches cost.
//! Exit code 3 when any run found a race, 0 when none did, 1 when an answer was wrong, 2 on
//! bad arguments.

use crate::cli::RaceArgs;
use crate::failure::Failure;
use magpie::race::dpst::Search;
use magpie::race::{Options, Report};

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
