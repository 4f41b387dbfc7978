//! A kernel's runs under a schedule: one recorded, one following a template, and what following
//! costs (`magpie schedule bench`): the record/relax loop that settles a template, then plain
//! stealing, recording and each constraint, interleaved. Every run is verified.

use crate::failure::Failure;
use crate::measure::run::run_once_verified;
use crate::model::schedule::{Cost, Iteration, ModeCost};
use magpie::schedule::{self, Constraint, Schedule};
use magpie::Pool;
use magpie_bench::harness::Timing;
use magpie_bench::runner::Case;
use std::time::Instant;

/// Runs `case` once on `pool` as a recorded region, verified: its seconds and the schedule it
/// took.
pub(crate) fn record(pool: &Pool, case: &Case) -> Result<(f64, Schedule), Failure> {
    let (run_s, taken) = pool.install(|| schedule::record(|| run_once_verified(pool, case)));
    Ok((run_s?, taken))
}

/// Runs `case` once on `pool` following `template` under `constraint`, verified: its seconds,
/// the schedule it took, and the deviations counted while it ran.
pub(crate) fn follow(
    pool: &Pool,
    case: &Case,
    template: &Schedule,
    constraint: Constraint,
) -> Result<(f64, Schedule, u64), Failure> {
    let before = pool.stats().deviations;
    let (run_s, taken) =
        pool.install(|| schedule::follow(template, constraint, || run_once_verified(pool, case)));
    let run_s = run_s?;
    Ok((run_s, taken, pool.stats().deviations - before))
}

/// What `schedule bench` runs: the kernel's case, the loop's iterations and pruning, and the
/// runs per mode.
pub(crate) struct CostPlan {
    pub case: Case,
    pub iterations: u32,
    /// Percent of the cuts the relaxed iterations prune from their template.
    pub prune: u32,
    pub runs: u32,
}

/// The modes `schedule bench` compares: plain stealing, recording, and following under each
/// constraint.
const MODES: [(&str, Option<Option<Constraint>>); 5] = [
    ("plain", None),
    ("record", Some(None)),
    ("ordered", Some(Some(Constraint::Ordered))),
    ("unordered", Some(Some(Constraint::Unordered))),
    ("relaxed", Some(Some(Constraint::Relaxed))),
];

/// What following a schedule costs on `plan.case`. The template comes from the record/relax loop
/// (at most 4 relaxed runs) on `clocked`, a pool like `pool` that also clocks the time its
/// workers spend looking for work; it is dropped before the timed runs, which take turns on
/// `pool`, one run of each mode a round.
pub(crate) fn cost(pool: &Pool, clocked: Pool, plan: &CostPlan) -> Result<Cost, Failure> {
    let case = &plan.case;
    let mut it = schedule::Iterate::new(plan.prune, 4);
    let mut iterations = Vec::new();
    for _ in 0..plan.iterations {
        let before = clocked.stats().search_ns;
        let t = Instant::now();
        clocked.install(|| it.run(|| run_once_verified(&clocked, case)))?;
        let run_s = t.elapsed().as_secs_f64();
        let step = it.steps().last().expect("a step").clone();
        iterations.push(Iteration {
            stage: format!("{:?}", step.stage).to_lowercase(),
            cuts: step.cuts,
            bytes: step.bytes,
            same_worker: step.same_worker,
            deviations: step.deviations,
            run_s,
            search_s: (clocked.stats().search_ns - before) as f64 * 1e-9,
        });
    }
    drop(clocked);
    let template = it.schedule().expect("an iteration ran").clone();
    let once = || run_once_verified(pool, case);
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); MODES.len()];
    let mut deviations = [0u64; MODES.len()];
    for _ in 0..plan.runs {
        for (i, (_, mode)) in MODES.iter().enumerate() {
            let before = pool.stats().deviations;
            let t = Instant::now();
            match mode {
                None => pool.install(once)?,
                Some(None) => pool.install(|| schedule::record(once)).0?,
                Some(Some(c)) => pool.install(|| schedule::follow(&template, *c, once)).0?,
            };
            times[i].push(t.elapsed().as_secs_f64());
            deviations[i] += pool.stats().deviations - before;
        }
    }
    let median = |v: &[f64]| {
        Timing {
            times_s: v.to_vec(),
        }
        .median()
        .unwrap_or(f64::NAN)
    };
    let plain = median(&times[0]);
    let modes = MODES
        .iter()
        .zip(&times)
        .zip(deviations)
        .map(|(((mode, _), t), deviations)| ModeCost {
            mode,
            median_s: median(t),
            ratio: median(t) / plain,
            deviations,
        })
        .collect();
    Ok(Cost {
        kernel: case.kernel.name().to_string(),
        n: case.n,
        grain: case.grain,
        workers: pool.workers(),
        policy: pool.policy().to_string(),
        runs: plan.runs as usize,
        verified: true,
        template_cuts: template.cuts().len(),
        template_bytes: template.bytes(),
        modes,
        iterations,
    })
}
