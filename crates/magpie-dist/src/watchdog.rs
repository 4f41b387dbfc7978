//! The watchdog: a run whose ranks stop hearing from one of them ends, with one message naming
//! that rank, instead of hanging until an outside timeout.
//!
//! A rank that dies ends an MPI job by itself (`mpirun` kills the others when one exits with
//! an error), but a rank that stops without dying (SIGSTOP, a node that hangs, a task that
//! never returns) leaves every other rank waiting for it: in the termination waves, in a
//! steal, in the gather at the end of an iteration. So each rank keeps a *heartbeat*, a counter
//! in its part of the collection's window that it raises while it works and while it waits
//! (at most every [`BEAT`]), and a waiting rank reads the others' counters (at most every
//! [`LOOK`]). A rank whose counter has not moved for the limit is *silent*: the first rank to
//! see it says so and ends the job. To make that one message rather than one per rank, rank
//! `r` waits `r ×` [`LOOK`] longer than the limit before it speaks, and the job is gone by
//! then.
//!
//! The limit is `MAGPIE_DIST_WATCHDOG` in seconds (default 60; 0 turns the watchdog off), or
//! `rma::World::with_watchdog`. A rank runs no check while inside one task, so a single task
//! longer than the limit makes it look silent: the limit must exceed the longest task.
//!
//! [`Watch`] is the bookkeeping alone, with the counters read through a closure, so that it is
//! tested without MPI.

use std::time::{Duration, Instant};

/// How often a rank raises its own counter, at most.
pub const BEAT: Duration = Duration::from_millis(50);

/// How often a waiting rank reads the others' counters, at most.
pub const LOOK: Duration = Duration::from_millis(200);

/// The default limit.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(60);

/// The limit `MAGPIE_DIST_WATCHDOG` sets: `Ok(None)` for 0 (off), the default when unset, an
/// error in words for anything that is not a whole number of seconds.
pub fn limit_from_env() -> Result<Option<Duration>, String> {
    parse_limit(std::env::var("MAGPIE_DIST_WATCHDOG").ok())
}

/// The limit a value of `MAGPIE_DIST_WATCHDOG` sets (`None`: unset).
fn parse_limit(value: Option<String>) -> Result<Option<Duration>, String> {
    match value {
        None => Ok(Some(DEFAULT_LIMIT)),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(0) => Ok(None),
            Ok(s) => Ok(Some(Duration::from_secs(s))),
            Err(_) => Err(format!(
                "MAGPIE_DIST_WATCHDOG='{v}': expected whole seconds (0 turns the watchdog off)"
            )),
        },
    }
}

/// One rank's view of the others' heartbeats.
pub struct Watch {
    me: usize,
    limit: Option<Duration>,
    /// Per rank, its counter when last read and when it last moved.
    seen: Vec<(u64, Instant)>,
    last_beat: Option<Instant>,
    last_look: Option<Instant>,
}

impl Watch {
    /// Rank `me` of `ranks`, with `limit` (`None`: never silent), from `now`.
    pub fn new(me: usize, ranks: usize, limit: Option<Duration>, now: Instant) -> Watch {
        Watch {
            me,
            limit,
            seen: vec![(0, now); ranks],
            last_beat: None,
            last_look: None,
        }
    }

    /// The limit.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// Whether this rank should raise its counter now (at most every [`BEAT`]); if so, notes
    /// that it did.
    pub fn beat_due(&mut self, now: Instant) -> bool {
        if self.limit.is_none() || self.last_beat.is_some_and(|t| now - t < BEAT) {
            return false;
        }
        self.last_beat = Some(now);
        true
    }

    /// Reads the other ranks' counters through `read` (at most every [`LOOK`]) and returns a
    /// rank whose counter has not moved for the limit, plus this rank's turn (`me ×` [`LOOK`]),
    /// with how long it has been silent.
    pub fn look(&mut self, now: Instant, read: impl Fn(usize) -> u64) -> Option<(usize, Duration)> {
        let limit = self.limit?;
        if self.last_look.is_some_and(|t| now - t < LOOK) {
            return None;
        }
        self.last_look = Some(now);
        let turn = LOOK * self.me as u32;
        let mut silent = None;
        for r in (0..self.seen.len()).filter(|&r| r != self.me) {
            let v = read(r);
            let (last, since) = &mut self.seen[r];
            if v != *last {
                *last = v;
                *since = now;
            } else if now - *since > limit + turn && silent.is_none() {
                silent = Some((r, now - *since));
            }
        }
        silent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_rank_whose_counter_stops_is_named_after_the_limit_and_its_turn() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Rank 1 of 3, limit 1 s: it speaks after 1 s plus one LOOK (its turn).
        let mut w = Watch::new(1, 3, Some(Duration::from_secs(1)), t0);
        let counters = [Cell::new(0u64), Cell::new(0), Cell::new(0)];
        let mut named = None;
        for step in 1..=40u64 {
            counters[0].set(step); // rank 0 keeps beating
            if step <= 3 {
                counters[2].set(step); // rank 2 beats three times, then stops
            }
            if let Some(s) = w.look(at(step * 100), |r| counters[r].get()) {
                named = Some((step, s));
                break;
            }
        }
        let (step, (rank, silent)) = named.expect("the stopped rank was never named");
        assert_eq!(rank, 2);
        assert!(silent > Duration::from_millis(1200), "{silent:?}");
        // It stopped at 300 ms: named at the first look past 300 + 1000 + 200 ms.
        assert!((15..=17).contains(&step), "named at step {step}");
    }

    #[test]
    fn looks_and_beats_are_rate_limited_and_off_means_never() {
        let t0 = Instant::now();
        let mut w = Watch::new(0, 2, Some(Duration::from_millis(10)), t0);
        assert!(w.beat_due(t0));
        assert!(!w.beat_due(t0 + BEAT / 2));
        assert!(w.beat_due(t0 + BEAT));
        let reads = Cell::new(0);
        let read = |_: usize| {
            reads.set(reads.get() + 1);
            0
        };
        w.look(t0, read);
        w.look(t0 + LOOK / 2, read);
        assert_eq!(reads.get(), 1, "a second look within LOOK read again");
        let mut off = Watch::new(0, 2, None, t0);
        assert!(!off.beat_due(t0));
        assert_eq!(off.look(t0 + Duration::from_secs(3600), |_| 0), None);
    }

    #[test]
    fn the_environment_sets_the_limit_or_says_what_is_wrong() {
        // The variable's values, parsed as `limit_from_env` parses them (without setting the
        // process's environment, which other threads may be reading).
        let limit = |v: Option<&str>| parse_limit(v.map(String::from));
        assert_eq!(limit(Some("0")), Ok(None));
        assert_eq!(limit(Some("7")), Ok(Some(Duration::from_secs(7))));
        assert!(limit(Some("soon")).unwrap_err().contains("whole seconds"));
        assert_eq!(limit(None), Ok(Some(DEFAULT_LIMIT)));
    }
}
