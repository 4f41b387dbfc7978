//! `magpie suite --dist hf|tce[:N]`: the distributed task collections of `magpie-dist` (the
//! thesis's Ch. 5) in the suite's report. A synthetic kernel (hf or tce: the costs of the
//! thesis's Hartree-Fock and tensor contraction tasks) runs in `magpie_dist_bench::sim`, the
//! discrete-event simulator of the collection (no MPI needed; its costs are this machine's
//! loopback MPI, `sim::Model::default`), at three rank counts under each strategy (no
//! balancing, stealing, retentive stealing, and the two persistence-based balancers), for a few
//! iterations: the table shows each strategy's first and last iteration, so what retention and
//! the balancers gain after the first iteration shows. The report draws the ranks' timelines of
//! the first and last iteration at the rank count that still draws a row per rank.
//!
//! Real MPI runs are `mpirun -n P magpie-dist run ...` ([docs/DISTRIBUTED.md]).

use crate::model::dist::{DistInfo, DistRow};
use magpie_bench::Size;
use magpie_dist::collection::Strategy;
use magpie_dist_bench::kernels::Synthetic;
use magpie_dist_bench::sim;
use magpie_dist_bench::timeline_svg::MAX_ROWS;
use magpie_view::progress::Progress;

/// The side and rank counts of a size preset.
fn shape(size: Size) -> (u64, Vec<usize>) {
    match size {
        Size::Ci => (40, vec![4, 16]),
        Size::Default => (200, vec![16, 64, 256]),
        Size::Paper => (727, vec![256, 1024, 4096]),
    }
}

const ITERATIONS: usize = 4;

/// Simulates `spec` at the size's rank counts under every strategy.
pub(crate) fn simulated(spec: DistSpec, size: Size) -> DistInfo {
    let (n0, ranks) = shape(size);
    let n = spec.n.unwrap_or(n0);
    let kernel = if spec.hf {
        Synthetic::Hf(n)
    } else {
        Synthetic::Tce(n)
    };
    let mut info = DistInfo {
        kernel: kernel.name().into(),
        n,
        iterations: ITERATIONS,
        ranks: ranks.clone(),
        rows: vec![],
        error: None,
        timelines: vec![],
    };
    // Timelines at the most ranks that still get a row each.
    let drawn = ranks.iter().copied().filter(|&p| p <= MAX_ROWS).max();
    let mut progress = Progress::new(
        "dist",
        (ranks.len() * Strategy::ALL.len()) as u64,
        "simulations",
    );
    for &p in &ranks {
        for strategy in Strategy::ALL {
            progress.at(&format!("{} {p} ranks {}", kernel.name(), strategy.name()));
            let o = match sim::simulate(sim::Config {
                kernel,
                ranks: p,
                strategy,
                iterations: ITERATIONS,
                model: sim::Model::default(),
                params: Default::default(),
            }) {
                Ok(o) => o,
                Err(e) => {
                    let e = format!("{} at {p} ranks, {}: {e}", kernel.name(), strategy.name());
                    progress.note(&format!("FAILED: {e}"));
                    info.error = Some(e);
                    return info;
                }
            };
            let (first, last) = (&o.iterations[0], &o.iterations[o.iterations.len() - 1]);
            let row = DistRow {
                ranks: p,
                strategy: strategy.name().into(),
                first_s: first.wall_ns() as f64 * 1e-9,
                last_s: last.wall_ns() as f64 * 1e-9,
                ideal_s: o.ideal_ns * 1e-9,
                first_efficiency: first.efficiency(),
                last_efficiency: last.efficiency(),
                last_attempts_per_rank: last.ranks.iter().map(|r| r.steals_attempted).sum::<u64>()
                    as f64
                    / p as f64,
            };
            progress.step(&format!(
                "{} {p} ranks {}: efficiency {:.2} → {:.2}",
                kernel.name(),
                strategy.name(),
                row.first_efficiency,
                row.last_efficiency
            ));
            info.rows.push(row);
            if Some(p) == drawn {
                let title = format!(
                    "{} n={n}, {p} simulated ranks, {}",
                    kernel.name(),
                    strategy.name()
                );
                info.timelines
                    .push(magpie_dist_bench::timeline_svg::first_and_last(
                        &title,
                        &o.iterations,
                    ));
            }
        }
    }
    info
}

/// The kernel of `--dist`: hf or tce, and its side (`None`: from the suite's size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DistSpec {
    /// Hartree-Fock (`hf`) rather than tensor contraction (`tce`).
    pub hf: bool,
    /// The kernel's side: n × n tasks.
    pub n: Option<u64>,
}

impl std::fmt::Display for DistSpec {
    /// As `--dist` takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.hf { "hf" } else { "tce" })?;
        match self.n {
            Some(n) => write!(f, ":{n}"),
            None => Ok(()),
        }
    }
}

/// `hf`, `tce`, `hf:200`.
pub(crate) fn parse_dist(s: &str) -> Result<DistSpec, String> {
    let (k, n) = match s.split_once(':') {
        Some((k, n)) => (k, Some(n)),
        None => (s, None),
    };
    let hf = match k.trim() {
        "hf" => true,
        "tce" => false,
        other => {
            return Err(format!(
                "unknown kernel `{other}` for --dist: expected hf or tce (magpie-dist's \
                 synthetic kernels), optionally with a side, e.g. hf:200"
            ))
        }
    };
    let n = match n {
        None => None,
        Some(v) => Some(
            v.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (2..=4000).contains(n))
                .ok_or(format!(
                    "--dist {s}: the side `{v}` is not a whole number from 2 to 4000"
                ))?,
        ),
    };
    Ok(DistSpec { hf, n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::dist::{section, table};

    #[test]
    fn every_strategy_at_every_rank_count_with_timelines_where_rows_fit() {
        let d = simulated(
            DistSpec {
                hf: true,
                n: Some(12),
            },
            Size::Ci,
        );
        assert_eq!(d.error, None);
        assert_eq!(d.rows.len(), 2 * Strategy::ALL.len());
        for r in &d.rows {
            assert!(
                r.first_s > 0.0 && r.last_s > 0.0 && r.ideal_s > 0.0,
                "{r:?}"
            );
            assert!(r.ideal_s <= r.last_s * (1.0 + 1e-9), "{r:?}");
            assert!((0.0..=1.0 + 1e-9).contains(&r.last_efficiency), "{r:?}");
        }
        // 16 ranks still get a row each: a timeline per strategy there.
        assert_eq!(d.timelines.len(), Strategy::ALL.len());
        let html = section(&d);
        assert_eq!(html.matches("<svg").count(), Strategy::ALL.len());
        assert!(html.contains("steal-retentive") && table(&d).contains("plb-hierarchical"));
    }
}

#[cfg(test)]
mod dist_tests {
    use super::*;

    #[test]
    fn dist_specs_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!(parse_dist("hf"), Ok(DistSpec { hf: true, n: None }));
        assert_eq!(
            parse_dist("tce:30"),
            Ok(DistSpec {
                hf: false,
                n: Some(30)
            })
        );
        assert!(parse_dist("uts")
            .unwrap_err()
            .contains("expected hf or tce"));
        assert!(parse_dist("hf:1").unwrap_err().contains("from 2 to 4000"));
        assert!(parse_dist("hf:x").unwrap_err().contains("from 2 to 4000"));
    }
}
