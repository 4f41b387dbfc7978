//! The cache model's runs (`magpie locality`, `magpie suite --locality`): one kernel per
//! victim-selection strategy on a virtual topology, its leaves' declared accesses replayed
//! through one LRU cache per socket (`magpie::cachemodel`); the strategies and their names.

use crate::failure::Failure;
use crate::model::locality::Row;
use magpie::cachemodel::{simulate, simulate_each, Misses};
use magpie::Topology;
use magpie_bench::Kernel;

/// `--pace-us-per-mib`'s default: a leaf touching the 80 KiB of four rows of a 1024-wide grid
/// sleeps about 160 µs, long enough that 16 workers' leaves overlap on 2 CPUs.
pub(crate) const DEFAULT_PACE_US_PER_MIB: u64 = 2000;

/// A scheduling strategy for `magpie locality`: how thieves pick victims, and whether the pool
/// has places (`Some(cross_place_steal)`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strategy {
    pub victims: magpie::Victims,
    pub places: Option<bool>,
    /// CAB's squads.
    pub squads: bool,
    /// With squads: whether inter-socket tasks go to the squads they name.
    pub squad_hints: bool,
    /// relws, stows or user: the schedule the kernel's iterations follow.
    pub follow: Option<Follow>,
}

/// The schedule-following strategies of `magpie locality` (`magpie_bench::placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Follow {
    /// relws: the §6.4 loop.
    Relaxed,
    /// stows: the initialiser's schedule, Ordered.
    Ordered,
    /// user: `Schedule::halving`, Unordered.
    User,
}

/// Strategies, in the order given.
#[derive(Clone, Debug)]
pub(crate) struct Strategies(pub Vec<(String, Strategy)>);

/// `magpie locality`'s strategies when none are named, and the ones `magpie suite --locality`
/// compares.
pub(crate) const DEFAULT_STRATEGIES: &str = "random,numa,places,places-cross,cab,cab-paper";

/// The schedule-following strategies, parsed (for the kernels with a first-touch initialiser).
pub(crate) fn schedule_strategies() -> Strategies {
    parse_strategies("relws,stows,user").expect("the schedule strategies parse")
}

/// [`DEFAULT_STRATEGIES`], parsed.
pub(crate) fn default_strategies() -> Strategies {
    parse_strategies(DEFAULT_STRATEGIES).expect("the default strategies parse")
}

pub(crate) fn parse_strategies(s: &str) -> Result<Strategies, String> {
    let mut v = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let st = match name {
            "places" => Strategy {
                victims: magpie::Victims::Random,
                places: Some(false),
                squads: false,
                squad_hints: true,
                follow: None,
            },
            "places-cross" => Strategy {
                victims: magpie::Victims::Random,
                places: Some(true),
                squads: false,
                squad_hints: true,
                follow: None,
            },
            "cab" | "cab-paper" => Strategy {
                victims: magpie::Victims::Random,
                places: None,
                squads: true,
                squad_hints: name == "cab",
                follow: None,
            },
            "relws" | "stows" | "user" => Strategy {
                victims: magpie::Victims::Random,
                places: None,
                squads: false,
                squad_hints: true,
                follow: Some(match name {
                    "relws" => Follow::Relaxed,
                    "stows" => Follow::Ordered,
                    _ => Follow::User,
                }),
            },
            _ => Strategy {
                victims: name.parse::<magpie::Victims>().map_err(|_| {
                    format!(
                        "unknown strategy `{name}`: expected random, numa, places, \
                         places-cross, cab, cab-paper, relws, stows or user"
                    )
                })?,
                places: None,
                squads: false,
                squad_hints: true,
                follow: None,
            },
        };
        if !v.iter().any(|(n, _)| n == name) {
            v.push((name.to_string(), st));
        }
    }
    if v.is_empty() {
        return Err("no strategy given: expected a list such as random,numa".into());
    }
    Ok(Strategies(v))
}

/// How the model runs: the virtual machine, the strategies and the runs of each.
pub(crate) struct Settings<'a> {
    pub topology: &'a Topology,
    pub strategies: &'a [(String, Strategy)],
    pub runs: u64,
    pub line: u64,
    pub pace_us_per_mib: u64,
    pub boundary_level: Option<u32>,
    pub policy: Option<magpie::Policy>,
    /// Iterations of a first-touch program (default: the kernel's).
    pub iterations: Option<usize>,
    /// relws's pruning percentage.
    pub prune: u32,
}

/// The kernels that declare their leaves' accesses (the others give the model nothing).
pub(crate) fn kernels() -> Vec<Kernel> {
    Kernel::ALL
        .iter()
        .copied()
        .filter(|k| k.declares_leaves())
        .collect()
}

/// The names of the kernels for which `pick` holds, in report order.
fn names_where(pick: impl Fn(Kernel) -> bool) -> String {
    let names: Vec<&str> = Kernel::ALL
        .iter()
        .copied()
        .filter(|&k| pick(k))
        .map(|k| k.name())
        .collect();
    names.join(", ")
}

/// [`kernels`] in words.
pub(crate) fn kernels_in_words() -> String {
    let names: Vec<&str> = kernels().iter().map(|k| k.name()).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "none".into(),
    }
}

/// One modelled run: the misses, the leaves' count, and for a first-touch program its
/// iterations and answer.
struct Modelled {
    misses: Misses,
    leaves: usize,
    iterations: Vec<magpie_bench::placement::Iteration>,
    answer: Option<String>,
}

/// Runs `case` `m.runs` times per strategy, each run verified, and models each run's misses;
/// one row per strategy, with the median run's misses.
pub(crate) fn model(case: &magpie_bench::runner::Case, m: &Settings) -> Result<Vec<Row>, Failure> {
    use magpie_bench::placement;
    let topo = m.topology;
    let facet = case.kernel.placement();
    let program = facet.is_some();
    let mut rows = Vec::new();
    let mut progress = magpie_view::progress::Progress::new(
        "locality",
        m.strategies.len() as u64 * m.runs,
        "runs",
    );
    for (name, st) in m.strategies {
        if st.follow.is_some() && !program {
            return Err(Failure::Usage(format!(
                "the strategy {name} needs a kernel with a first-touch initialiser ({}), not {}",
                names_where(|k| k.placement().is_some()),
                case.kernel.name()
            )));
        }
        if facet.is_some_and(|f| !f.banded) && (st.places.is_some() || st.squads) {
            return Err(Failure::Usage(format!(
                "the strategy {name} needs a kernel whose phases sweep rows ({}), not {}; leave \
                 it out",
                names_where(|k| k.placement().is_some_and(|f| f.banded)),
                case.kernel.name()
            )));
        }
        let mut results: Vec<Modelled> = Vec::new();
        for run in 0..m.runs {
            progress.at(&format!("{} {name}, run {}", case.kernel.name(), run + 1));
            let pace = std::time::Duration::from_micros(m.pace_us_per_mib);
            let pool =
                crate::measure::run::pool_builder(Some(topo.cores()), m.policy, None, None, false)?
                    .topology(topo.clone())
                    .victims(st.victims)
                    .places(st.places.is_some())
                    .cross_place_steal(st.places == Some(true))
                    .squads(st.squads)
                    .squad_hints(st.squad_hints)
                    .boundary_level(m.boundary_level)
                    .record_leaves(true)
                    .pace_leaves(pace)
                    .build()
                    .map_err(Failure::from_magpie)?;
            let (leaves, mut iterations, answer, spans) = if program {
                let strategy = match st.follow {
                    None => placement::Strategy::Plain,
                    Some(Follow::Relaxed) => placement::Strategy::Relaxed {
                        prune: m.prune,
                        max_relaxed: 4,
                    },
                    Some(Follow::Ordered) => placement::Strategy::Ordered,
                    Some(Follow::User) => placement::Strategy::User,
                };
                let r = case
                    .kernel
                    .run_placed(&pool, case.n, case.grain, m.iterations, strategy, pace)
                    .map_err(Failure::Failed)?;
                (r.leaves, r.iterations, Some(r.answer), r.spans)
            } else {
                crate::measure::run::run_once_verified(&pool, case)?;
                (pool.take_leaves(), Vec::new(), None, Vec::new())
            };
            if leaves.is_empty() {
                return Err(Failure::Usage(format!(
                    "{} declares no leaf accesses, so there is nothing to model ({} do)",
                    case.kernel.name(),
                    kernels_in_words()
                )));
            }
            let (misses, each) = if program {
                simulate_each(topo, m.line, &leaves)
            } else {
                (simulate(topo, m.line, &leaves), Vec::new())
            };
            for (it, span) in iterations.iter_mut().zip(&spans) {
                it.misses = each[span.clone()].iter().map(|c| c.misses).sum();
                it.remote_bytes = each[span.clone()].iter().map(|c| c.remote_bytes).sum();
            }
            progress.step(&format!(
                "{} {name}, run {}: {} modelled misses",
                case.kernel.name(),
                run + 1,
                misses.total()
            ));
            results.push(Modelled {
                misses,
                leaves: leaves.len(),
                iterations,
                answer,
            });
        }
        let runs: Vec<u64> = results.iter().map(|r| r.misses.total()).collect();
        let mut order: Vec<usize> = (0..results.len()).collect();
        order.sort_by_key(|&i| runs[i]);
        let r = &results[order[order.len() / 2]];
        let late = &r.iterations[r.iterations.len() / 2..];
        let in_iterations: u64 = r.iterations.iter().map(|i| i.misses).sum();
        rows.push(Row {
            late_misses: late.iter().map(|i| i.misses).sum(),
            late_remote_bytes: late.iter().map(|i| i.remote_bytes).sum(),
            placing_misses: if r.iterations.is_empty() {
                0
            } else {
                r.misses.total().saturating_sub(in_iterations)
            },
            strategy: name.clone(),
            misses: r.misses.total(),
            misses_per_socket: r.misses.per_socket.clone(),
            bytes: r.misses.bytes(),
            leaves: r.leaves,
            runs,
            remote_bytes: r.misses.remote_bytes,
            remote_misses: r.misses.remote_misses,
            iterations: r.iterations.clone(),
            answer: r.answer.clone(),
        });
    }
    Ok(rows)
}
