//! `magpie bench`'s text: one kernel's record as a table, and magpie's counters in one line.

use crate::format::{nanos, result_line, secs, times};
use magpie_bench::runner::BenchRecord;

/// magpie's counters in one line.
pub(crate) fn stats_line(s: &magpie::Stats) -> String {
    format!(
        "spawns {} work-first + {} help-first; steals {} child + {} continuation ({} failed); \
         fenced pops {}; suspensions {}; policy switches {}; max fresh {}; max frames {}; \
         fibers created {} ({} spares trimmed); sleeps {}",
        s.spawns_work_first,
        s.spawns_help_first,
        s.steals_child,
        s.steals_continuation,
        s.failed_steals,
        s.fenced_pops,
        s.suspensions,
        s.policy_switches,
        s.max_fresh,
        s.max_frames,
        s.fibers_created,
        s.fibers_trimmed,
        s.sleeps
    )
}

/// `magpie bench`'s table: magpie's figure, the serial twin's and each peer's, with the
/// ratios, the answer and magpie's counters.
pub(crate) fn table(r: &BenchRecord) -> String {
    use std::fmt::Write;
    let fj = r.tasks_per_run.is_some();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} {}{} workers={} policy={}{} runs={}\n",
        r.kernel,
        match &r.tree {
            Some(t) => format!("tree {t}"),
            None => format!("n={}", r.n),
        },
        r.grain.map_or(String::new(), |g| format!(" grain={g}")),
        r.workers,
        r.policy,
        if r.steal_half { "" } else { " steals=one" },
        r.runs
    );
    let _ = write!(
        o,
        "{:<20} {:>12} {:>12} {:>12} {:>10}",
        "runtime", "median s", "min s", "max s", "÷ serial"
    );
    let _ = writeln!(
        o,
        "{}",
        if fj {
            format!(" {:>10}", "ns/task")
        } else {
            String::new()
        }
    );
    let mut line = |name: &str, med, min, max, ratio, per_task: Option<f64>| {
        let _ = write!(
            o,
            "{:<20} {:>12} {:>12} {:>12} {:>10}",
            name,
            secs(med),
            secs(min),
            secs(max),
            times(ratio)
        );
        let _ = writeln!(
            o,
            "{}",
            if fj {
                format!(" {:>10}", nanos(per_task))
            } else {
                String::new()
            }
        );
    };
    if r.serial_median_s.is_some() {
        let per = r
            .tasks_per_run
            .and_then(|t| Some(r.serial_median_s? / t as f64 * 1e9));
        line(
            "serial twin",
            r.serial_median_s,
            r.serial_min_s,
            r.serial_max_s,
            Some(1.0),
            per,
        );
    }
    line(
        &format!("magpie {}", r.policy),
        r.median_s,
        r.min_s,
        r.max_s,
        r.ratio_to_serial,
        r.per_task_ns,
    );
    for p in &r.peers {
        line(
            &p.name,
            p.median_s,
            p.min_s,
            p.max_s,
            p.ratio_to_serial,
            p.per_task_ns,
        );
    }
    let _ = writeln!(o);
    for u in &r.peers_unavailable {
        let _ = writeln!(o, "not measured: {}: {}", u.name, u.reason);
    }
    if is_program(&r.kernel) {
        let _ = writeln!(
            o,
            "magpie stats: none (a rayon program runs in the process of its rayon build)"
        );
    } else {
        let _ = writeln!(o, "magpie stats: {}", stats_line(&r.stats));
    }
    if let Some(h) = &r.overheads {
        let _ = writeln!(
            o,
            "overheads (share of {} workers × run time): victims lost {:.3}% ({:.6} s) to steals; \
             thieves spent {:.3}% stealing ({} steals, {} per steal) and {:.3}% searching",
            r.workers,
            h.victim_share * 100.0,
            h.victim_s,
            h.steal_share * 100.0,
            h.steals,
            h.ns_per_steal.map_or("–".into(), |x| format!("{x:.0} ns")),
            h.search_share * 100.0
        );
    }
    if let Some(k) = r.peak_rss_kib {
        let _ = writeln!(o, "peak RSS: {k} KiB");
    }
    let _ = writeln!(o, "verified: {}", if r.verified { "yes" } else { "NO" });
    let _ = writeln!(o, "{}", result_line(r.result.as_deref()));
    // The serial twin's answer only where it differs (fine-sum's float sum is verified within
    // 1e-9, so its last digits may; any other difference comes with a verification failure).
    if let Some(s) = r
        .serial_result
        .as_ref()
        .filter(|s| Some(*s) != r.result.as_ref())
    {
        let _ = writeln!(o, "serial twin's result: {s}");
    }
    if let Some(e) = &r.error {
        let _ = writeln!(o, "error: {e}");
    }
    o
}

/// Whether `kernel` names one of the rayon programs.
fn is_program(kernel: &str) -> bool {
    kernel
        .parse::<magpie_bench::Kernel>()
        .is_ok_and(|k| k.is_program())
}
