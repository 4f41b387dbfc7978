//! `magpie idle`: how much CPU an idle pool burns. Idle workers sleep after a bounded number of
//! failed steal rounds (DWS §3.1); rayon's idle spinning is the long-standing complaint this
//! measures against. The pool runs a small job, then sits idle while the CPU time of every thread
//! of this process is read from `/proc/self/task/*/schedstat` (nanoseconds) before and after.

use crate::args::{parse_seconds, parse_workers};
use crate::failure::Failure;
use crate::measure::idle::measure;
use clap::Args;
use std::time::Duration;

#[derive(Args, Debug)]
pub(crate) struct IdleArgs {
    /// Worker threads in the idle pool.
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Seconds to watch the idle pool.
    #[arg(long, default_value_t = 1.0, value_parser = parse_seconds)]
    pub seconds: f64,
    /// The pool's core-sharing mode: dws, abp, ep or off (dws and ep use the core table that
    /// MAGPIE_SHARE_TABLE names, else the user's default one).
    #[arg(long, default_value = "off")]
    pub share: magpie::dws::SharingMode,
    /// Print one JSON object instead of a line.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: IdleArgs) -> Result<(), Failure> {
    let pct = measure(a.workers, a.share, a.seconds, Duration::from_millis(100))?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "workers": a.workers,
                "share": a.share.name(),
                "seconds": a.seconds,
                "cpu_percent_of_one_core": pct,
            })
        );
    } else {
        println!(
            "idle pool of {} workers (share {}) over {:.2} s: {:.3}% of one core",
            a.workers, a.share, a.seconds, pct
        );
    }
    Ok(())
}
