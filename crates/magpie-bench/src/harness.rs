//! The timing harness: runs a kernel a number of times, timing only the kernel (set-up of fresh
//! input and verification of each result happen outside the timed region), and turns a panic —
//! in particular magpie's work-first stack-limit stop — into a [`RunError`] instead of a crash.
//! The check of a result returns the kernel's answer ([`Measured::result`]): what a user can
//! compare with a known value, such as fib(n)'s value or a checksum.

use serde::{Deserialize, Serialize};
use std::any::Any;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

/// The `i`-th command-line argument of an example program as a number, or `default` when it is
/// not given; anything that does not parse exits with status 2 and says which argument it was.
pub fn example_arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("error: argument {i} ('{s}') is not a number of the kind expected here");
            std::process::exit(2)
        }),
    }
}

/// Wall times of the runs of one measurement, in seconds, in run order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// One entry per run.
    pub times_s: Vec<f64>,
}

impl Timing {
    /// The median (the mean of the middle two for an even count); `None` without runs.
    pub fn median(&self) -> Option<f64> {
        let mut v = self.times_s.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        Some(if v.len() % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]) / 2.0
        })
    }

    /// The fastest run.
    pub fn min(&self) -> Option<f64> {
        self.times_s.iter().copied().min_by(f64::total_cmp)
    }

    /// The slowest run.
    pub fn max(&self) -> Option<f64> {
        self.times_s.iter().copied().max_by(f64::total_cmp)
    }
}

/// The outcome of a measurement that ran to the end.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Wall times of the runs.
    pub timing: Timing,
    /// Whether every run's result passed its verifier.
    pub verified: bool,
    /// The first verification failure, as "run K: what was wrong".
    pub failure: Option<String>,
    /// The answer of the first run that verified: the value a user can compare with a known one
    /// (fib(n)'s value, the solutions counted, a checksum), as the check returned it; `None`
    /// when no run verified (or for a peer that does not report its answer).
    pub result: Option<String>,
    /// magpie's counters over the measured runs (after − before), for magpie measurements.
    pub stats: Option<magpie::Stats>,
}

/// Why a measurement stopped before its last run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// magpie stopped a work-first spawn at its stack limit (`magpie::Error::StackLimit`); the
    /// message is the error's one-line display.
    Stopped(String),
    /// The kernel panicked for another reason (a bug).
    Panicked(String),
    /// The runtime could not be set up.
    Setup(String),
}

impl RunError {
    /// Classifies a panic payload caught around a run.
    pub fn from_panic(payload: Box<dyn Any + Send>) -> RunError {
        if let Some(e) = magpie::Error::from_panic(&*payload) {
            return match e {
                magpie::Error::StackLimit { .. } => RunError::Stopped(e.to_string()),
                _ => RunError::Panicked(e.to_string()),
            };
        }
        let msg = if let Some(s) = payload.downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic with a non-text payload".to_string()
        };
        RunError::Panicked(msg)
    }

    /// The message without its kind.
    pub fn message(&self) -> &str {
        match self {
            RunError::Stopped(m) | RunError::Panicked(m) | RunError::Setup(m) => m,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Stopped(m) => write!(f, "stopped: {m}"),
            RunError::Panicked(m) => write!(f, "kernel panicked: {m}"),
            RunError::Setup(m) => write!(f, "cannot set up the runtime: {m}"),
        }
    }
}

/// Runs `run` `runs` times on fresh input from `setup`, timing `run` alone, and checks each
/// result with `check` (untimed), which returns the run's answer (see [`Measured::result`]) or
/// what was wrong. A panic in `run` ends the measurement with a [`RunError`].
pub fn measure<S, T>(
    runs: usize,
    mut setup: impl FnMut() -> S,
    mut run: impl FnMut(&mut S) -> T,
    mut check: impl FnMut(&S, T) -> Result<String, String>,
) -> Result<Measured, RunError> {
    let mut times_s = Vec::with_capacity(runs);
    let mut failure = None;
    let mut result = None;
    for i in 0..runs {
        let mut input = setup();
        let start = Instant::now();
        let out = panic::catch_unwind(AssertUnwindSafe(|| run(&mut input)))
            .map_err(RunError::from_panic)?;
        times_s.push(start.elapsed().as_secs_f64());
        match check(&input, out) {
            Ok(answer) => {
                result.get_or_insert(answer);
            }
            Err(e) => {
                failure.get_or_insert(format!("run {}: {e}", i + 1));
            }
        }
    }
    Ok(Measured {
        timing: Timing { times_s },
        verified: failure.is_none(),
        failure,
        result,
        stats: None,
    })
}

/// A verifier's verdict with the answer it verified: `answer()` when `verdict` is `Ok`, else the
/// verdict's error (the answer is then not computed).
pub fn answered(
    verdict: Result<(), String>,
    answer: impl FnOnce() -> String,
) -> Result<String, String> {
    verdict.map(|()| answer())
}

/// A float to 12 significant digits (`1.23456789012e3`): the precision of the checksums that the
/// float kernels answer with, enough to compare with a known value.
pub fn sig12(x: f64) -> String {
    format!("{x:.11e}")
}

/// The sum of `v` in index order, to 12 significant digits ([`sig12`]).
pub fn sum12(v: &[f64]) -> String {
    sig12(v.iter().sum::<f64>())
}

/// The sum of the absolute values of `v` in index order, to 12 significant digits: the checksum
/// of values whose plain sum cancels (velocities of bodies that pull each other).
pub fn abs_sum12(v: &[f64]) -> String {
    sig12(v.iter().map(|x| x.abs()).sum::<f64>())
}

/// This process's peak resident set size in KiB (`VmHWM` in `/proc/self/status`); `None` where
/// that file is not available.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let t = Timing {
            times_s: vec![3.0, 1.0, 2.0],
        };
        assert_eq!(
            (t.median(), t.min(), t.max()),
            (Some(2.0), Some(1.0), Some(3.0))
        );
        let t = Timing {
            times_s: vec![4.0, 1.0, 2.0, 3.0],
        };
        assert_eq!(t.median(), Some(2.5));
        assert_eq!(Timing::default().median(), None);
    }

    #[test]
    fn measure_counts_runs_and_failures() {
        let mut k = 0;
        let m = measure(
            4,
            || (),
            |_| {
                k += 1;
                k
            },
            |_, v| {
                if v == 3 {
                    Err("three".into())
                } else {
                    Ok(format!("answer {v}"))
                }
            },
        )
        .unwrap();
        assert_eq!(m.timing.times_s.len(), 4);
        assert!(!m.verified);
        assert_eq!(m.failure.as_deref(), Some("run 3: three"));
        // The first verified run's answer.
        assert_eq!(m.result.as_deref(), Some("answer 1"));
        let m = measure(2, || (), |_| (), |_, ()| Err("no".into())).unwrap();
        assert_eq!((m.verified, m.result), (false, None));
        assert_eq!(sig12(6765.0), "6.76500000000e3");
        assert_eq!(sum12(&[0.5, 0.25]), "7.50000000000e-1");
        assert_eq!(abs_sum12(&[0.5, -0.25]), "7.50000000000e-1");
        assert_eq!(answered(Ok(()), || "a".into()), Ok("a".into()));
        assert_eq!(
            answered(Err("e".into()), || unreachable!()),
            Err("e".into())
        );
    }

    #[test]
    fn panics_become_errors() {
        let e = measure(1, || (), |_| panic!("boom"), |_, _: ()| Ok(String::new())).unwrap_err();
        assert_eq!(e, RunError::Panicked("boom".into()));
        let e = measure(
            1,
            || (),
            |_| {
                std::panic::panic_any(magpie::Error::StackLimit {
                    what: "w".into(),
                    limit: "l".into(),
                })
            },
            |_, _: ()| Ok(String::new()),
        )
        .unwrap_err();
        assert!(
            matches!(e, RunError::Stopped(ref m) if m.contains("stack limit")),
            "{e:?}"
        );
    }

    #[test]
    fn peak_rss_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss_kib().is_some_and(|k| k > 0));
        }
    }
}
