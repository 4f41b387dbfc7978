//! `magpie report`'s results: one section per kernel, built from the suite's rows, with each
//! configuration's outcome (done, stopped at the stack limit, failed), and the report around
//! them. `render::markdown` writes it.

use magpie::Policy;
use magpie_bench::{Kernel, Peer, Size};

/// The whole report: what was asked, the sections and the idle pool's figure.
pub(crate) struct Report {
    pub workers: Vec<usize>,
    pub runs: usize,
    pub size: Size,
    pub sections: Vec<Section>,
    /// CPU an idle pool of 2 workers used over one second, percent of one core.
    pub idle_pct: f64,
    /// How long measuring took, seconds.
    pub elapsed_s: f64,
}

impl Report {
    /// Every configuration that failed (the serial twin's included), in words.
    pub(crate) fn failed(&self) -> Vec<String> {
        self.sections
            .iter()
            .flat_map(|s| {
                let serial = s
                    .serial
                    .is_failure()
                    .then(|| format!("{} serial twin", s.kernel));
                serial.into_iter().chain(
                    s.rows
                        .iter()
                        .filter(|r| r.outcome.is_failure())
                        .map(move |r| format!("{} {} x{}", s.kernel, r.runtime.label(), r.workers)),
                )
            })
            .collect()
    }
}

/// How one configuration went.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Done {
        median: f64,
        min: f64,
        max: f64,
        stats: Option<magpie::Stats>,
        peak_rss_kib: Option<u64>,
    },
    /// magpie stopped the kernel at its stack limit (an expected outcome for work-first PDFS).
    Stopped(String),
    /// Failed verification or crashed.
    Failed(String),
}

impl Outcome {
    pub(crate) fn median(&self) -> Option<f64> {
        match self {
            Outcome::Done { median, .. } => Some(*median),
            _ => None,
        }
    }

    pub(crate) fn is_failure(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Outcome::Done { median, .. } => format!("{median:.6} s"),
            Outcome::Stopped(m) => format!("stopped: {m}"),
            Outcome::Failed(m) => format!("FAILED: {m}"),
        }
    }
}

/// Who ran a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    Magpie(Policy),
    Peer(Peer),
}

impl Runtime {
    pub(crate) fn label(self) -> String {
        match self {
            Runtime::Magpie(p) => format!("magpie {p}"),
            Runtime::Peer(p) => p.name().to_string(),
        }
    }
}

pub(crate) struct Row {
    pub runtime: Runtime,
    pub workers: usize,
    pub outcome: Outcome,
}

pub(crate) struct Section {
    pub kernel: Kernel,
    pub n: u64,
    /// The kernel's answer (`suite::kernel_answer`).
    pub result: Option<String>,
    pub serial: Outcome,
    pub rows: Vec<Row>,
}

impl Section {
    pub(crate) fn get(&self, rt: Runtime, w: usize) -> Option<&Outcome> {
        self.rows
            .iter()
            .find(|r| r.runtime == rt && r.workers == w)
            .map(|r| &r.outcome)
    }
    pub(crate) fn median(&self, rt: Runtime, w: usize) -> Option<f64> {
        self.get(rt, w)?.median()
    }
}

/// A measurement of the suite as one of the report's outcomes.
pub(crate) fn outcome_of(r: &crate::model::Row) -> Outcome {
    match (&r.error, r.median_s, r.min_s, r.max_s) {
        (Some(e), ..) if r.stopped => Outcome::Stopped(e.clone()),
        (Some(e), ..) => Outcome::Failed(e.clone()),
        (None, Some(median), Some(min), Some(max)) if r.verified => Outcome::Done {
            median,
            min,
            max,
            stats: r.stats,
            peak_rss_kib: r.peak_rss_kib,
        },
        _ => Outcome::Failed("failed verification".into()),
    }
}

/// The report's section of one kernel, from the suite's rows.
pub(crate) fn section_from(kernel: Kernel, n: u64, rows: &[crate::model::Row]) -> Section {
    let mine = rows.iter().filter(|r| r.kernel == kernel.name());
    let mut serial = Outcome::Failed("the serial twin did not run".into());
    let mut out = vec![];
    for r in mine {
        let runtime = match (r.runtime.as_str(), &r.policy) {
            ("serial", _) => {
                serial = outcome_of(r);
                continue;
            }
            ("magpie", Some(p)) => match p.parse::<Policy>() {
                Ok(p) => Runtime::Magpie(p),
                Err(_) => continue,
            },
            (rt, _) => match crate::model::all_peers()
                .into_iter()
                .find(|&p| crate::model::peer_parts(p) == (rt, r.variant.as_deref()))
            {
                Some(p) => Runtime::Peer(p),
                None => continue,
            },
        };
        out.push(Row {
            runtime,
            workers: r.workers,
            outcome: outcome_of(r),
        });
    }
    let result = crate::model::kernel_answer(rows.iter().filter(|r| r.kernel == kernel.name()))
        .map(str::to_string);
    Section {
        kernel,
        n,
        result,
        serial,
        rows: out,
    }
}
