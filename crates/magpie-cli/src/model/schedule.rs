//! What `magpie schedule` reports: the run a schedule file was recorded on (its note), what a
//! run that recorded or followed a schedule did, and what following one costs (`schedule
//! bench`: the record/relax loop's iterations, then each mode's median against plain stealing).

use magpie_bench::runner::Case;
use magpie_bench::Kernel;
use serde::Serialize;

/// What a recorded schedule's note says: the run it was taken on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Recorded {
    pub kernel: Kernel,
    pub n: u64,
    pub grain: Option<u64>,
    pub tree: Option<String>,
    pub policy: magpie::Policy,
}

impl Recorded {
    /// The note: `kernel=fib n=30 grain=20 policy=work-first` (`tree=` for uts, quoted values
    /// never contain spaces but uts trees, which come last).
    pub(crate) fn note(&self) -> String {
        let mut s = format!("kernel={} n={}", self.kernel.name(), self.n);
        if let Some(g) = self.grain {
            s += &format!(" grain={g}");
        }
        s += &format!(" policy={}", self.policy);
        if let Some(t) = &self.tree {
            s += &format!(" tree={t}");
        }
        s
    }

    /// Parses a note written by [`note`](Self::note).
    pub(crate) fn parse(note: &str) -> Result<Recorded, String> {
        let (head, tree) = match note.find(" tree=") {
            Some(i) => (&note[..i], Some(note[i + 6..].to_string())),
            None => (note, None),
        };
        let (mut kernel, mut n, mut grain, mut policy) = (None, None, None, None);
        for kv in head.split_whitespace() {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("'{kv}' is not key=value"))?;
            match k {
                "kernel" => kernel = Some(v.parse::<Kernel>()?),
                "n" => n = Some(v.parse::<u64>().map_err(|e| format!("n={v}: {e}"))?),
                "grain" => grain = Some(v.parse::<u64>().map_err(|e| format!("grain={v}: {e}"))?),
                "policy" => policy = Some(v.parse::<magpie::Policy>().map_err(|e| e.to_string())?),
                _ => return Err(format!("unknown key '{k}'")),
            }
        }
        Ok(Recorded {
            kernel: kernel.ok_or("no kernel")?,
            n: n.ok_or("no n")?,
            grain,
            tree,
            policy: policy.ok_or("no policy")?,
        })
    }

    /// The kernel's run the note names, checked; what is wrong with it otherwise.
    pub(crate) fn case(&self) -> Result<Case, String> {
        let tree = match &self.tree {
            Some(t) => Some(t.parse()?),
            None => None,
        };
        let case = Case {
            kernel: self.kernel,
            n: if tree.is_some() { 0 } else { self.n },
            grain: self.grain,
            tree,
        };
        case.check()?;
        Ok(case)
    }
}

/// What one run that took a schedule did: recorded one, or followed a template.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    /// `record`, or the constraint it followed under.
    pub mode: &'static str,
    pub run_s: f64,
    /// When it followed a template: the template, and how closely the run kept to it.
    pub followed: Option<Followed>,
}

/// How closely a run kept to the template it followed.
#[derive(Clone, Debug)]
pub(crate) struct Followed {
    /// The template's file.
    pub template: String,
    pub template_cuts: usize,
    /// The template's cuts a worker stopped waiting for (`magpie::Stats::deviations`).
    pub deviations: u64,
    /// The share of the template's cuts that ran on their recorded worker.
    pub kept: f64,
}

/// One iteration of `schedule bench`'s record/relax loop.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Iteration {
    /// `record`, `relax`, `follow` or `place`: how the iteration ran
    /// (`magpie::schedule::Stage`).
    pub stage: String,
    pub cuts: usize,
    pub bytes: usize,
    /// The share of the previous iteration's cuts that ran on the same worker again.
    pub same_worker: f64,
    /// Deviations counted while it ran (`ordered` only).
    pub deviations: u64,
    pub run_s: f64,
    /// Seconds the workers spent looking for work.
    pub search_s: f64,
}

/// One mode of `schedule bench`: its median over the runs, against plain stealing's.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ModeCost {
    /// `plain`, `record`, or the constraint the runs followed under.
    pub mode: &'static str,
    pub median_s: f64,
    /// The median ÷ plain's.
    pub ratio: f64,
    /// Deviations over all the mode's runs (`magpie::Stats::deviations`).
    pub deviations: u64,
}

/// What `schedule bench` measured, as its JSON says it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Cost {
    pub kernel: String,
    pub n: u64,
    pub grain: Option<u64>,
    pub workers: usize,
    pub policy: String,
    pub runs: usize,
    /// Every run's answer was checked (a wrong one stops the command).
    pub verified: bool,
    pub template_cuts: usize,
    pub template_bytes: usize,
    pub modes: Vec<ModeCost>,
    pub iterations: Vec<Iteration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_round_trip_and_bad_notes_are_errors() {
        let r = Recorded {
            kernel: magpie_bench::kernels::fib::KERNEL,
            n: 30,
            grain: Some(20),
            tree: None,
            policy: magpie::Policy::HelpFirst,
        };
        assert_eq!(Recorded::parse(&r.note()), Ok(r));
        assert!(Recorded::parse("").is_err());
        assert!(Recorded::parse("kernel=nope n=3 policy=adaptive").is_err());
        assert!(Recorded::parse("kernel=fib n=x policy=adaptive").is_err());
        assert!(Recorded::parse("kernel=fib n=3").is_err());
        assert!(Recorded::parse("kernel=fib n=3 policy=adaptive colour=red").is_err());
    }
}
