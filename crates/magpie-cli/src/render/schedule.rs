//! What `magpie schedule` prints: a schedule, with what the run that took it did, as one JSON
//! object ([`describe`]) or as text ([`text`]); and `schedule bench`'s tables ([`cost_text`]).

use crate::format::count;
use crate::model::schedule::{Cost, Run};
use magpie::schedule::Schedule;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// A schedule (read from or written to `file`) and, for a run, what it did, as one JSON object.
pub(crate) fn describe(s: &Schedule, file: &Path, run: Option<&Run>) -> Value {
    let per_worker: Vec<usize> = s.per_worker().iter().map(Vec::len).collect();
    let mut d = json!({
        "file": file.display().to_string(),
        "workers": s.workers(),
        "root_worker": s.root_worker(),
        "cuts": s.cuts().len(),
        "cuts_per_worker": per_worker,
        "depth": s.depth(),
        "bytes": s.bytes(),
        "note": s.note(),
        "cut_list": s.cuts().iter().map(|c| json!({
            "path": c.path, "worker": c.worker, "rank": c.rank,
        })).collect::<Vec<_>>(),
    });
    if let Some(run) = run {
        d["mode"] = json!(run.mode);
        d["verified"] = json!(true);
        d["run_s"] = json!(run.run_s);
        if let Some(f) = &run.followed {
            d["deviations"] = json!(f.deviations);
            d["template_cuts_on_their_worker"] = json!(f.kept);
            d["template"] = json!(f.template);
            d["template_cuts"] = json!(f.template_cuts);
        }
    }
    d
}

/// The text form of [`describe`]: what the run did (if one did), the schedule's shape, its
/// note when no run is shown, and with `list` every cut.
pub(crate) fn text(s: &Schedule, file: &Path, run: Option<&Run>, list: bool) -> String {
    let mut t = String::new();
    if let Some(run) = run {
        let _ = writeln!(
            t,
            "{}: {} ({}), verified, {:.6} s",
            run.mode,
            s.note(),
            count(s.workers(), "worker"),
            run.run_s,
        );
        if let Some(f) = &run.followed {
            let _ = writeln!(
                t,
                "followed {} ({} cuts): {} deviations, {:.1}% of its cuts on their worker",
                f.template,
                f.template_cuts,
                f.deviations,
                100.0 * f.kept,
            );
        }
    }
    let _ = writeln!(
        t,
        "{}: {} workers, root on w{}, {} cuts (per worker {:?}), depth {}, {} bytes",
        file.display(),
        s.workers(),
        s.root_worker(),
        s.cuts().len(),
        s.per_worker().iter().map(Vec::len).collect::<Vec<_>>(),
        s.depth(),
        s.bytes(),
    );
    if run.is_none() {
        let note = if s.note().is_empty() {
            "(none)"
        } else {
            s.note()
        };
        let _ = writeln!(t, "note: {note}");
    }
    if list {
        for c in s.cuts() {
            let _ = writeln!(t, "  w{} rank {:>3}  {:?}", c.worker, c.rank, c.path);
        }
    }
    t
}

/// `schedule bench`'s text: what ran, the record/relax loop's iterations, then each mode's
/// median against plain stealing.
pub(crate) fn cost_text(c: &Cost) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} n={} ({}, {}), {} runs each, interleaved, every run verified; template: {} cuts, {} bytes",
        c.kernel,
        c.n,
        count(c.workers, "worker"),
        c.policy,
        c.runs,
        c.template_cuts,
        c.template_bytes
    );
    t += "the record/relax/follow loop (searching: seconds workers spent looking for work):\n";
    t += "| iteration | stage | cuts | bytes | cuts kept on their worker | s | searching s |\n";
    t += "|---|---|---|---|---|---|---|\n";
    for (i, r) in c.iterations.iter().enumerate() {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {:.2} | {:.4} | {:.4} |",
            i + 1,
            r.stage,
            r.cuts,
            r.bytes,
            r.same_worker,
            r.run_s,
            r.search_s,
        );
    }
    t += "| mode | median s | ÷ plain | deviations |\n";
    t += "|---|---|---|---|\n";
    for m in &c.modes {
        let _ = writeln!(
            t,
            "| {} | {:.6} | {:.3} | {} |",
            m.mode, m.median_s, m.ratio, m.deviations
        );
    }
    t
}
