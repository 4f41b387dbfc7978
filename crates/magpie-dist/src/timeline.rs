//! Per-rank utilisation timelines (the thesis's Fig. 5.12): what each rank was doing over one
//! iteration, running tasks, stealing, or neither (waiting in termination waves), and the share
//! of ranks in each state over time.
//!
//! A rank records [`Spans`] relative to the start of its `process` (a real run, opted in with
//! `TaskCollection::with_timeline`) or of a simulated iteration (the simulator of
//! crates/magpie-dist-bench). Spans of one state that touch, or are less than
//! [`MERGE_GAP_NS`] apart, are merged, so a run of tasks is one span and a spell of failed
//! steal attempts is one span (the polls between attempts are too short to draw). Under MPI each rank's clock starts at its own `process` call; the ranks
//! enter it together (after the previous iteration's gather), so the rows line up to within
//! that collective's skew.
//!
//! [`utilisation`] turns the spans into the share of ranks running tasks and stealing over time;
//! the `magpie-dist` tool (crates/magpie-dist-bench) draws them.

use serde::{Deserialize, Serialize};

/// What a rank is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// Running tasks (taking them from its deque included).
    Task,
    /// Trying to steal, or waiting for stolen tasks to arrive.
    Steal,
    /// Neither: no task, no steal in flight (termination waves, waiting for the others).
    Idle,
}

/// One stretch of one state, in nanoseconds from the start of the iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// Start.
    pub start_ns: u64,
    /// End (after the start).
    pub end_ns: u64,
    /// What the rank did.
    pub state: State,
}

/// Spans of one state closer than this are one span.
pub const MERGE_GAP_NS: u64 = 2_000;

/// One rank's spans over one iteration, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spans(pub Vec<Span>);

impl Spans {
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Records `[start, end)` in `state`, merging it into the last span when that is of the same
    /// state and ends less than [`MERGE_GAP_NS`] before `start`. Empty spans are dropped.
    pub fn add(&mut self, start_ns: u64, end_ns: u64, state: State) {
        if end_ns <= start_ns {
            return;
        }
        if let Some(last) = self.0.last_mut() {
            if last.state == state && start_ns <= last.end_ns + MERGE_GAP_NS {
                last.end_ns = last.end_ns.max(end_ns);
                return;
            }
        }
        self.0.push(Span {
            start_ns,
            end_ns,
            state,
        });
    }

    /// Nanoseconds spent in `state`.
    pub fn total(&self, state: State) -> u64 {
        self.0
            .iter()
            .filter(|s| s.state == state)
            .map(|s| s.end_ns - s.start_ns)
            .sum()
    }
}

/// The share of ranks running tasks and stealing in each of `bins` equal bins of `[0, wall)`;
/// the rest of each bin's ranks were idle.
#[derive(Clone, Debug, PartialEq)]
pub struct Utilisation {
    /// A bin's width, nanoseconds.
    pub bin_ns: f64,
    /// Per bin, the share of rank-time running tasks (0 to 1).
    pub task: Vec<f64>,
    /// Per bin, the share of rank-time stealing.
    pub steal: Vec<f64>,
}

/// The utilisation of `ranks` over `[0, wall_ns)` in `bins` bins (spans past `wall_ns` are
/// cut there).
pub fn utilisation(ranks: &[Spans], wall_ns: u64, bins: usize) -> Utilisation {
    let bins = bins.max(1);
    let bin_ns = (wall_ns.max(1)) as f64 / bins as f64;
    let mut task = vec![0.0; bins];
    let mut steal = vec![0.0; bins];
    for s in ranks.iter().flat_map(|r| r.0.iter()) {
        let into = match s.state {
            State::Task => &mut task,
            State::Steal => &mut steal,
            State::Idle => continue,
        };
        let (a, b) = (s.start_ns as f64, s.end_ns.min(wall_ns) as f64);
        if b <= a {
            continue;
        }
        let first = ((a / bin_ns) as usize).min(bins - 1);
        let last = ((b / bin_ns) as usize).min(bins - 1);
        for (i, v) in into.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (i as f64 * bin_ns, (i + 1) as f64 * bin_ns);
            *v += (b.min(hi) - a.max(lo)).max(0.0);
        }
    }
    let per_bin = bin_ns * ranks.len().max(1) as f64;
    for v in task.iter_mut().chain(steal.iter_mut()) {
        *v /= per_bin;
    }
    Utilisation {
        bin_ns,
        task,
        steal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_merge_when_close_and_of_one_state() {
        let mut s = Spans::default();
        s.add(0, 100, State::Task);
        s.add(100 + MERGE_GAP_NS, 5_000, State::Task);
        s.add(5_000, 5_000, State::Steal); // empty: dropped
        s.add(5_000, 6_000, State::Steal);
        s.add(20_000, 21_000, State::Steal);
        assert_eq!(s.0.len(), 3);
        assert_eq!(s.total(State::Task), 5_000);
        assert_eq!(s.total(State::Steal), 2_000);
    }

    #[test]
    fn utilisation_is_the_share_of_rank_time_per_bin() {
        // Rank 0 runs tasks for the whole 1000 ns; rank 1 steals in the first half.
        let a = Spans(vec![Span {
            start_ns: 0,
            end_ns: 1000,
            state: State::Task,
        }]);
        let b = Spans(vec![Span {
            start_ns: 0,
            end_ns: 500,
            state: State::Steal,
        }]);
        let u = utilisation(&[a, b], 1000, 4);
        assert_eq!(u.task, vec![0.5; 4]);
        assert_eq!(u.steal, vec![0.5, 0.5, 0.0, 0.0]);
    }
}
