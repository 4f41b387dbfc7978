//! Progress of a long command on stderr.
//!
//! On a terminal: one bar, with the steps done, the time so far and an estimate of the time
//! left, and a message saying what runs now; lines that matter (a failure) are printed above it.
//! Anywhere else (a log file, CI, a test): no bar, and one plain line per finished step,
//! `[  12.3 s] 4/20 what finished: how it went`, so a log shows where a long run got to.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// A bar of `len` steps counted in `unit` (`runs`, `phases`), drawn on stderr with an estimate
/// of the time left; `None` when stderr is not a terminal.
pub fn bar(len: u64, unit: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let template = format!(
        "{{elapsed:>4}} [{{bar:36.cyan/blue}}] {{pos}}/{{len}} {unit}, about {{eta}} left  {{msg}}"
    );
    let style = ProgressStyle::with_template(&template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    Some(bar)
}

/// The progress of a command made of a known number of steps.
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    done: u64,
    total: u64,
    /// Prefixes plain lines (`corun`, `locality`).
    name: String,
}

impl Progress {
    /// Progress over `total` steps counted in `unit`; a bar only when stderr is a terminal.
    pub fn new(name: &str, total: u64, unit: &str) -> Progress {
        Progress {
            bar: bar(total, unit),
            started: Instant::now(),
            done: 0,
            total,
            name: name.to_string(),
        }
    }

    /// Says what runs now (on the bar; plain output says it when the step finishes).
    pub fn at(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    /// One step finished; `line` says which and how it went.
    pub fn step(&mut self, line: &str) {
        self.done += 1;
        match &self.bar {
            Some(b) => b.inc(1),
            None => eprintln!("{}", self.line(line)),
        }
    }

    /// A line shown in any case: above the bar on a terminal, as a plain line otherwise.
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(self.line(line)),
            None => eprintln!("{}", self.line(line)),
        }
    }

    /// `[  12.3 s] corun 4/20 line`.
    fn line(&self, line: &str) -> String {
        format!(
            "[{:>6.1} s] {} {}/{} {line}",
            self.started.elapsed().as_secs_f64(),
            self.name,
            self.done,
            self.total
        )
    }

    /// Steps finished so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Removes the bar (plain output has nothing to remove).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_counted() {
        // Under `cargo test` stderr is captured, not a terminal: plain lines.
        let mut p = Progress::new("test", 3, "steps");
        p.at("first");
        p.step("first: ok");
        p.step("second: ok");
        p.note("a failure");
        assert_eq!(p.done(), 2);
        assert!(p.line("x").ends_with("test 2/3 x"));
    }
}
