//! What `magpie corun` measured (`corun.json`, and the co-run of `magpie suite --corun`): one
//! row per sharing mode with each program's times alone and co-running, and the co-run's
//! timeline of cores held and used.

use magpie_bench::harness::Timing;
use magpie_bench::runner::Case;
use magpie_bench::Kernel;
use serde::{Deserialize, Serialize};

/// The two programs' names in the output.
pub(crate) const WHO: [&str; 2] = ["a", "b"];

/// The cores a program held and used at one moment of the co-run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Sample {
    /// Seconds since both programs were told to go.
    pub(crate) t_s: f64,
    /// Cores each program holds in the core table (`null`: the table could not be read).
    pub(crate) held: [Option<usize>; 2],
    /// Cores each program used since the sample before (the first: since go): its threads' CPU
    /// time over wall time (`null` when `/proc` could not be read).
    pub(crate) used: [Option<f64>; 2],
}

/// The mean of `v` (0 for none).
pub(crate) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// One program's figures under one mode.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ProgramRow {
    pub(crate) kernel: String,
    pub(crate) n: u64,
    pub(crate) grain: Option<u64>,
    /// Mean seconds of a run alone, under this mode.
    pub(crate) solo_s: f64,
    pub(crate) solo_median_s: f64,
    pub(crate) solo_runs: usize,
    /// Mean seconds of a run alone under `off`: the one baseline of every mode's slowdown.
    pub(crate) baseline_s: f64,
    /// Mean seconds of a run co-running (the paper's T_i).
    pub(crate) corun_s: f64,
    pub(crate) corun_median_s: f64,
    /// Runs counted co-running.
    pub(crate) runs: usize,
    /// corun_s / baseline_s.
    pub(crate) slowdown: f64,
}

impl ProgramRow {
    pub(crate) fn new(case: &Case, solo: &[f64], baseline: &[f64], corun: &[f64]) -> ProgramRow {
        let median = |v: &[f64]| {
            Timing {
                times_s: v.to_vec(),
            }
            .median()
            .unwrap_or(0.0)
        };
        ProgramRow {
            kernel: case.kernel.name().into(),
            n: case.n,
            grain: case.grain,
            solo_s: mean(solo),
            solo_median_s: median(solo),
            solo_runs: solo.len(),
            baseline_s: mean(baseline),
            corun_s: mean(corun),
            corun_median_s: median(corun),
            runs: corun.len(),
            slowdown: mean(corun) / mean(baseline),
        }
    }
}

/// One mode's figures: what `--json` prints, one per mode.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ModeRow {
    pub(crate) mode: String,
    pub(crate) workers: usize,
    pub(crate) a: ProgramRow,
    pub(crate) b: ProgramRow,
    /// a.slowdown + b.slowdown (2 when neither slows the other).
    pub(crate) combined_slowdown: f64,
    /// Seconds the co-run lasted.
    pub(crate) corun_wall_s: f64,
}

/// One mode's co-run over time, for the plot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Timeline {
    pub(crate) mode: String,
    pub(crate) pids: [u32; 2],
    pub(crate) samples: Vec<Sample>,
}

/// `corun.json`, and the co-run of `magpie suite --corun`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Report {
    /// The command line that reproduces it.
    pub(crate) command: String,
    /// "a (fib n=30 grain=15)" and the other.
    #[serde(default)]
    pub(crate) programs: [String; 2],
    pub(crate) size: String,
    pub(crate) workers: usize,
    pub(crate) cpus: usize,
    pub(crate) solo_runs: usize,
    pub(crate) runs: usize,
    pub(crate) min_seconds: f64,
    pub(crate) sample_ms: u64,
    pub(crate) rows: Vec<ModeRow>,
    pub(crate) timelines: Vec<Timeline>,
}

/// One program of `magpie corun`: a kernel, its size (`None`: from `--size`) and its grain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ProgramSpec {
    pub kernel: Kernel,
    pub n: Option<u64>,
    pub grain: Option<u64>,
}

impl std::fmt::Display for ProgramSpec {
    /// As it is written on the command line: `fib`, `fib:30`, `fib:30:15`, `fib::15`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kernel)?;
        match (self.n, self.grain) {
            (None, None) => Ok(()),
            (Some(n), None) => write!(f, ":{n}"),
            (n, Some(g)) => write!(f, ":{}:{g}", n.map_or(String::new(), |n| n.to_string())),
        }
    }
}

/// The two programs of `magpie suite --corun A,B`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ProgramPair(pub ProgramSpec, pub ProgramSpec);
