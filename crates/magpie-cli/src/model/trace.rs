//! What a steal-tree trace says: how each phase began ([`Kind`], [`origin_name`]), the summary
//! of a trace file or a traced run ([`Summary`]), and the work and span of its install regions
//! from its steal tree ([`analyse`]), also written as OpenCilk Cilkscale's CSV ([`csv`]).
//!
//! Every phase descends from a root: follow its origin to the phase it names (the victim of a
//! steal, the phase an early continuation came from, the phase that opened the sync point a
//! resumed task waited at) until a phase whose origin is `Root { ordinal }` (region
//! `install-<ordinal>`) or `External` (region `external`). Those links are the edges of the
//! region's phase graph, a tree (each phase has one origin).
//!
//! - **work**: the sum of the region's segment durations (the time workers spent running it).
//! - **span**: the heaviest path from the region's root along those edges, each phase a serial
//!   strand weighing its busy time (the sum of its segments). An edge leaves its parent phase where
//!   the child began: a path through a phase into one of its thieves counts the parent's busy time
//!   *before* the steal, then the thief's, not the whole parent (which ran on, in parallel with
//!   the thief). So a phase's path length is `start(parent) + busy(parent before the child began) +
//!   busy(child)`, and the span is the longest of these.
//! - **burdened span**: the same with a burden (`--burden-us`, [`BURDEN_US`] =
//!   15 µs by default) added for each steal edge on the path, an estimate of what moving work to
//!   another worker costs (the role of Cilkscale's burden). Early and resumed edges carry no
//!   burden: neither is a steal.
//! - **parallelism** = work / span; **burdened parallelism** = work / burdened span.
//!
//! The span is measured on the *observed* steal tree with phases as serial strands, not on the
//! program's task DAG as Cilkscale measures it: the tasks inside a phase count as one chain though
//! many were independent, and the joins (a child's end before its parent resumes) are not in the
//! trace. It is an estimate at the granularity of phases, upper-bound-ish, and it depends on the
//! schedule: with one worker there is one phase per install, so the span equals the work, and
//! the parallelism it reports is at most about the number of workers that ran.
//!
//! The overall row: work is the total; the regions are composed in time, those whose busy
//! intervals overlap in parallel (the largest span counts) and the others in series (spans add).

use magpie::trace::{Origin, PhaseId, Taken, Trace};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The burden (µs) `trace export --format csv` adds to a span for each steal edge on its path:
/// an estimate of what migrating work to another worker costs (a steal's synchronisation, the
/// cache misses of running the task's data on another core). OpenCilk's Cilkscale uses a burden of
/// the same order (about 15,000 instructions per spawn's continuation).
pub(crate) const BURDEN_US: f64 = 15.0;

/// The CSV header, exactly Cilkscale's.
pub(crate) const CSV_HEADER: &str =
    "tag,work (seconds),span (seconds),parallelism,burdened_span (seconds),burdened_parallelism";

/// One region (or the whole trace).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Region {
    /// `install-<ordinal>`, `external`, or empty for the whole trace.
    pub tag: String,
    /// Phases in the region.
    pub phases: usize,
    /// Busy nanoseconds.
    pub work_ns: u64,
    /// Heaviest path, nanoseconds.
    pub span_ns: u64,
    /// Heaviest path with the steal burden, nanoseconds.
    pub burdened_span_ns: u64,
    /// The first segment's start and the last one's end, when the region has segments.
    pub busy_interval: Option<(u64, u64)>,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl Region {
    /// work / span (`None` when the span is 0: nothing ran).
    pub(crate) fn parallelism(&self) -> Option<f64> {
        ratio(self.work_ns, self.span_ns)
    }

    /// work / burdened span.
    pub(crate) fn burdened_parallelism(&self) -> Option<f64> {
        ratio(self.work_ns, self.burdened_span_ns)
    }
}

/// The regions of a trace and the whole.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Analysis {
    /// Install regions by ordinal, then `external` if any.
    pub regions: Vec<Region>,
    /// The whole trace (tag empty).
    pub overall: Region,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Install(u64),
    External,
}

/// The phase an origin names, if any.
pub(crate) fn parent(origin: &Origin) -> Option<PhaseId> {
    match *origin {
        Origin::Stolen { from, .. } | Origin::Early { from } => Some(from.phase),
        Origin::Resumed { sync } => Some(sync.phase),
        Origin::Root { .. } | Origin::External => None,
    }
}

/// Groups the phases into regions and measures each. The error (one line) is for a trace whose
/// origins name a missing phase or loop back on themselves, which no pool writes.
pub(crate) fn analyse(t: &Trace, burden_ns: u64) -> Result<Analysis, String> {
    // Flat ids: worker w's phase i is offsets[w] + i.
    let mut offsets = Vec::with_capacity(t.phases.len());
    let mut total = 0usize;
    for ps in &t.phases {
        offsets.push(total);
        total += ps.len();
    }
    let id = |p: PhaseId| -> Option<usize> {
        let ps = t.phases.get(p.worker as usize)?;
        ((p.index as usize) < ps.len()).then(|| offsets[p.worker as usize] + p.index as usize)
    };
    let mut busy = vec![0u64; total];
    // Each phase's segments in time order (a worker's are), with running busy totals.
    let mut segs: Vec<Vec<(u64, u64)>> = vec![vec![]; total];
    for (w, ss) in t.segments.iter().enumerate() {
        for s in ss {
            let Some(i) = id(PhaseId {
                worker: w as u32,
                index: s.phase,
            }) else {
                return Err(format!(
                    "a segment of worker {w} names phase {}, which does not exist",
                    s.phase
                ));
            };
            busy[i] = busy[i].saturating_add(s.end_ns.saturating_sub(s.start_ns));
            segs[i].push((s.start_ns, s.end_ns));
        }
    }
    // Busy time of phase `p` before time `at`.
    let busy_before = |p: usize, at: u64| -> u64 {
        let ss = &segs[p];
        let k = ss.partition_point(|s| s.0 < at);
        ss[..k].iter().fold(0u64, |b, &(a, e)| {
            b.saturating_add(e.min(at).saturating_sub(a))
        })
    };
    let mut origin = Vec::with_capacity(total);
    let mut start_ns = Vec::with_capacity(total);
    let mut name = Vec::with_capacity(total);
    for (w, ps) in t.phases.iter().enumerate() {
        for (i, p) in ps.iter().enumerate() {
            origin.push(p.origin);
            start_ns.push(p.start_ns);
            name.push((w, i));
        }
    }
    let parent_of = |x: usize| -> Result<Option<usize>, String> {
        match parent(&origin[x]) {
            None => Ok(None),
            Some(p) => id(p).map(Some).ok_or_else(|| {
                let (w, i) = name[x];
                format!(
                    "phase {i} of worker {w} names phase {} of worker {}, which does not exist",
                    p.index, p.worker
                )
            }),
        }
    };

    // Walk up from each phase to a resolved ancestor or a root, then resolve downwards, so that
    // every phase is resolved after the phase it names; a phase met twice on one walk is a loop.
    // `from[x]`: the path length to where phase x begins (and `bfrom` with the burden).
    const NEW: u8 = 0;
    const WALKING: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; total];
    let mut key = vec![Key::External; total];
    let mut from = vec![0u64; total];
    let mut bfrom = vec![0u64; total];
    let mut stack = Vec::new();
    for first in 0..total {
        let mut cur = first;
        loop {
            match state[cur] {
                DONE => break,
                WALKING => {
                    let (w, i) = name[cur];
                    return Err(format!(
                        "phase {i} of worker {w} descends from itself (its origins form a loop)"
                    ));
                }
                _ => {}
            }
            state[cur] = WALKING;
            stack.push(cur);
            match parent_of(cur)? {
                Some(p) => cur = p,
                None => break,
            }
        }
        while let Some(x) = stack.pop() {
            match parent_of(x)? {
                None => {
                    key[x] = match origin[x] {
                        Origin::Root { ordinal } => Key::Install(ordinal),
                        _ => Key::External,
                    };
                }
                Some(p) => {
                    let burden = match origin[x] {
                        Origin::Stolen { .. } => burden_ns,
                        _ => 0,
                    };
                    let before = busy_before(p, start_ns[x]);
                    key[x] = key[p];
                    from[x] = from[p].saturating_add(before);
                    bfrom[x] = bfrom[p].saturating_add(before).saturating_add(burden);
                }
            }
            state[x] = DONE;
        }
    }

    let mut by_key: BTreeMap<Key, Region> = BTreeMap::new();
    for x in 0..total {
        let r = by_key.entry(key[x]).or_insert_with(|| Region {
            tag: match key[x] {
                Key::Install(o) => format!("install-{o}"),
                Key::External => "external".into(),
            },
            phases: 0,
            work_ns: 0,
            span_ns: 0,
            burdened_span_ns: 0,
            busy_interval: None,
        });
        r.phases += 1;
        r.work_ns = r.work_ns.saturating_add(busy[x]);
        r.span_ns = r.span_ns.max(from[x].saturating_add(busy[x]));
        r.burdened_span_ns = r.burdened_span_ns.max(bfrom[x].saturating_add(busy[x]));
        if let (Some(a), Some(b)) = (segs[x].first(), segs[x].last()) {
            r.busy_interval = Some(match r.busy_interval {
                None => (a.0, b.1),
                Some((lo, hi)) => (lo.min(a.0), hi.max(b.1)),
            });
        }
    }
    let regions: Vec<Region> = by_key.into_values().collect();
    let overall = compose(&regions);
    Ok(Analysis { regions, overall })
}

/// The whole trace from its regions: work adds up; spans compose in series between regions that
/// ran at different times and in parallel (the largest) among regions whose intervals overlap.
fn compose(regions: &[Region]) -> Region {
    let mut timed: Vec<&Region> = regions
        .iter()
        .filter(|r| r.busy_interval.is_some())
        .collect();
    timed.sort_by_key(|r| r.busy_interval.map(|i| i.0));
    let (mut span, mut bspan) = (0u64, 0u64);
    // The cluster being built: its end, span and burdened span.
    let mut cluster: Option<(u64, u64, u64)> = None;
    for r in timed {
        let (a, b) = r.busy_interval.unwrap_or_default();
        cluster = match cluster {
            Some((end, s, bs)) if a < end => {
                Some((end.max(b), s.max(r.span_ns), bs.max(r.burdened_span_ns)))
            }
            done => {
                if let Some((_, s, bs)) = done {
                    span = span.saturating_add(s);
                    bspan = bspan.saturating_add(bs);
                }
                Some((b, r.span_ns, r.burdened_span_ns))
            }
        };
    }
    if let Some((_, s, bs)) = cluster {
        span = span.saturating_add(s);
        bspan = bspan.saturating_add(bs);
    }
    let interval = regions
        .iter()
        .filter_map(|r| r.busy_interval)
        .reduce(|x, y| (x.0.min(y.0), x.1.max(y.1)));
    Region {
        tag: String::new(),
        phases: regions.iter().map(|r| r.phases).sum(),
        work_ns: regions
            .iter()
            .fold(0u64, |w, r| w.saturating_add(r.work_ns)),
        span_ns: span,
        burdened_span_ns: bspan,
        busy_interval: interval,
    }
}

/// Nanoseconds as seconds with all nine decimals (exact).
pub(crate) fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

fn cell(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| format!("{x:.6}"))
}

/// Cilkscale's CSV: the header, one row per region, and the overall row (empty tag). A
/// parallelism is empty when its span is 0 (nothing ran).
pub(crate) fn csv(a: &Analysis) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{CSV_HEADER}");
    for r in a.regions.iter().chain([&a.overall]) {
        let _ = writeln!(
            o,
            "{},{},{},{},{},{}",
            r.tag,
            seconds(r.work_ns),
            seconds(r.span_ns),
            cell(r.parallelism()),
            seconds(r.burdened_span_ns),
            cell(r.burdened_parallelism())
        );
    }
    o
}

/// How a phase began, as the timeline colours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Root,
    External,
    StolenChild,
    StolenContinuation,
    Resumed,
    Early,
}

impl Kind {
    /// In legend order.
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Root,
        Kind::StolenChild,
        Kind::StolenContinuation,
        Kind::Resumed,
        Kind::Early,
        Kind::External,
    ];

    pub(crate) fn of(o: &Origin) -> Kind {
        match o {
            Origin::Root { .. } => Kind::Root,
            Origin::External => Kind::External,
            Origin::Stolen {
                taken: Taken::Child,
                ..
            } => Kind::StolenChild,
            Origin::Stolen {
                taken: Taken::Continuation,
                ..
            } => Kind::StolenContinuation,
            Origin::Resumed { .. } => Kind::Resumed,
            Origin::Early { .. } => Kind::Early,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Root => "root",
            Kind::StolenChild => "stolen child",
            Kind::StolenContinuation => "stolen continuation",
            Kind::Resumed => "resumed",
            Kind::Early => "early",
            Kind::External => "external",
        }
    }
}

fn taken_word(t: Taken) -> &'static str {
    match t {
        Taken::Child => "child",
        Taken::Continuation => "continuation",
    }
}

/// A phase's origin in words: `root`, `stolen from w1 (child, level 3)`, `resumed`, `early`,
/// `external`.
pub(crate) fn origin_name(o: &Origin) -> String {
    match *o {
        Origin::Root { .. } => "root".into(),
        Origin::External => "external".into(),
        Origin::Stolen { from, taken, level } => format!(
            "stolen from w{} ({}, level {level})",
            from.phase.worker,
            taken_word(taken)
        ),
        Origin::Resumed { .. } => "resumed".into(),
        Origin::Early { .. } => "early".into(),
    }
}

/// A phase and its origin's details, as JSON fields.
pub(crate) fn origin_args(phase: u32, o: &Origin) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::json;
    let mut m = serde_json::Map::new();
    m.insert("phase".into(), json!(phase));
    let event = |m: &mut serde_json::Map<String, serde_json::Value>,
                 prefix: &str,
                 e: magpie::trace::EventId| {
        m.insert(format!("{prefix}_worker"), json!(e.phase.worker));
        m.insert(format!("{prefix}_phase"), json!(e.phase.index));
        m.insert("event".into(), json!(e.seq));
        m.insert("half".into(), json!(e.half));
    };
    match *o {
        Origin::Root { ordinal } => {
            m.insert("origin".into(), json!("root"));
            m.insert("install".into(), json!(ordinal));
        }
        Origin::External => {
            m.insert("origin".into(), json!("external"));
        }
        Origin::Stolen { from, taken, level } => {
            m.insert("origin".into(), json!("stolen"));
            event(&mut m, "victim", from);
            m.insert("taken".into(), json!(taken_word(taken)));
            m.insert("level".into(), json!(level));
        }
        Origin::Resumed { sync } => {
            m.insert("origin".into(), json!("resumed"));
            event(&mut m, "sync", sync);
        }
        Origin::Early { from } => {
            m.insert("origin".into(), json!("early"));
            event(&mut m, "from", from);
        }
    }
    m
}

/// What a traced run was, for its summary.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunInfo {
    pub kernel: String,
    pub n: u64,
    pub grain: Option<u64>,
    pub tree: Option<String>,
    pub verified: bool,
    /// Wall time of the run, seconds.
    pub run_s: f64,
}

/// One worker's storage (or the total, `worker` null).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct WorkerStorage {
    pub worker: Option<usize>,
    pub phases: usize,
    /// Bytes of the worker's section of the trace file.
    pub file_bytes: u64,
    /// Of those, timestamps.
    pub timestamp_bytes: u64,
    /// The thesis's b_w (work-first) for the worker's phases, without timestamps.
    pub b_w: u64,
    /// The thesis's b_h (help-first).
    pub b_h: u64,
    /// Storing the worker of every task instead: 4 bytes per task, split evenly over workers.
    pub enumeration_bytes: f64,
    /// enumeration_bytes / file_bytes.
    pub enumeration_over_file: Option<f64>,
}

/// `magpie trace`'s summary (also `--json`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Summary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunInfo>,
    /// The trace file.
    pub file: String,
    /// Its size in bytes (the sections plus header, counts and checksum).
    pub file_bytes: u64,
    pub policy: String,
    pub workers: usize,
    pub phases: usize,
    pub steals: usize,
    /// Spawns while tracing.
    pub spawns: u64,
    /// From the pool's start to when the trace was taken, seconds.
    pub duration_s: f64,
    /// Busy time of every worker, seconds (the sum of the segments).
    pub busy_s: Vec<f64>,
    /// The steal tree's work, span and parallelism overall (see `trace export --format csv`).
    pub work_s: f64,
    pub span_s: f64,
    pub parallelism: Option<f64>,
    pub burdened_span_s: f64,
    pub burdened_parallelism: Option<f64>,
    /// The burden per steal edge, µs.
    pub burden_us: f64,
    pub storage: Vec<WorkerStorage>,
    pub storage_total: WorkerStorage,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Summary {
    pub(crate) fn new(t: &Trace, file: &Path, an: &Analysis, run: Option<RunInfo>) -> Summary {
        let st = t.storage();
        let file_bytes = t.to_bytes().len() as u64;
        let ratio = |e: f64, f: u64| (f > 0).then(|| e / f as f64);
        let storage: Vec<WorkerStorage> = (0..t.workers())
            .map(|w| {
                let f = st.file_bytes.get(w).copied().unwrap_or(0);
                WorkerStorage {
                    worker: Some(w),
                    phases: t.phases[w].len(),
                    file_bytes: f,
                    timestamp_bytes: st.timestamp_bytes.get(w).copied().unwrap_or(0),
                    b_w: st.b_w.get(w).copied().unwrap_or(0),
                    b_h: st.b_h.get(w).copied().unwrap_or(0),
                    enumeration_bytes: st.enumeration_per_worker,
                    enumeration_over_file: ratio(st.enumeration_per_worker, f),
                }
            })
            .collect();
        let f: u64 = storage.iter().map(|s| s.file_bytes).sum();
        let e = st.enumeration_per_worker * t.workers() as f64;
        let storage_total = WorkerStorage {
            worker: None,
            phases: storage.iter().map(|s| s.phases).sum(),
            file_bytes: f,
            timestamp_bytes: storage.iter().map(|s| s.timestamp_bytes).sum(),
            b_w: storage.iter().map(|s| s.b_w).sum(),
            b_h: storage.iter().map(|s| s.b_h).sum(),
            enumeration_bytes: e,
            enumeration_over_file: ratio(e, f),
        };
        let o = &an.overall;
        Summary {
            run,
            file: file.display().to_string(),
            file_bytes,
            policy: t.policy.name().into(),
            workers: t.workers(),
            phases: storage_total.phases,
            steals: t.steal_count(),
            spawns: t.spawns,
            duration_s: secs(t.duration_ns),
            busy_s: t.busy_ns().into_iter().map(secs).collect(),
            work_s: secs(o.work_ns),
            span_s: secs(o.span_ns),
            parallelism: o.parallelism(),
            burdened_span_s: secs(o.burdened_span_ns),
            burdened_parallelism: o.burdened_parallelism(),
            burden_us: BURDEN_US,
            storage,
            storage_total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magpie::trace::{EventId, Phase, Segment, Taken};
    use magpie::Policy;

    fn ev(worker: u32, index: u32) -> EventId {
        EventId {
            phase: PhaseId { worker, index },
            seq: 0,
            half: 0,
        }
    }

    fn seg(phase: u32, start_ns: u64, end_ns: u64) -> Segment {
        Segment {
            phase,
            start_ns,
            end_ns,
        }
    }

    fn stolen(w: u32, i: u32, start_ns: u64) -> Phase {
        Phase {
            origin: Origin::Stolen {
                from: ev(w, i),
                taken: Taken::Child,
                level: 1,
            },
            start_ns,
        }
    }

    /// Two installs in series; the first has a steal and a resumption.
    fn sample() -> Trace {
        Trace {
            policy: Policy::HelpFirst,
            duration_ns: 10_000,
            spawns: 3,
            phases: vec![
                vec![
                    Phase {
                        origin: Origin::Root { ordinal: 0 },
                        start_ns: 0,
                    },
                    Phase {
                        origin: Origin::Root { ordinal: 1 },
                        start_ns: 5_000,
                    },
                ],
                vec![
                    stolen(0, 0, 100),
                    Phase {
                        origin: Origin::Resumed { sync: ev(0, 0) },
                        start_ns: 1_500,
                    },
                ],
            ],
            schedules: vec![],
            segments: vec![
                vec![seg(0, 0, 1_000), seg(1, 5_000, 5_400)],
                vec![seg(0, 100, 1_200), seg(1, 1_500, 1_650)],
            ],
        }
    }

    #[test]
    fn regions_work_and_span() {
        let a = analyse(&sample(), 50).unwrap();
        assert_eq!(a.regions.len(), 2);
        let r0 = &a.regions[0];
        assert_eq!(r0.tag, "install-0");
        assert_eq!(r0.phases, 3);
        assert_eq!(r0.work_ns, 1_000 + 1_100 + 150);
        // The thief began 100 ns into the root: 100 + 1100. The resumed phase began after all
        // of the root: 1000 + 150.
        assert_eq!(r0.span_ns, 1_200);
        assert_eq!(r0.burdened_span_ns, 1_250);
        assert_eq!(r0.busy_interval, Some((0, 1_650)));
        let r1 = &a.regions[1];
        assert_eq!(
            (r1.tag.as_str(), r1.work_ns, r1.span_ns),
            ("install-1", 400, 400)
        );
        // Two regions in series.
        assert_eq!(a.overall.work_ns, 2_650);
        assert_eq!(a.overall.span_ns, 1_600);
        assert_eq!(a.overall.burdened_span_ns, 1_650);
        let text = csv(&a);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(
            lines[1],
            "install-0,0.000002250,0.000001200,1.875000,0.000001250,1.800000"
        );
        assert_eq!(lines[3].split(',').next(), Some(""));
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn overlapping_regions_compose_in_parallel() {
        let mut t = sample();
        // The second install now runs while the first does.
        t.segments[0][1] = seg(1, 1_000, 1_400);
        let a = analyse(&t, 0).unwrap();
        assert_eq!(a.overall.span_ns, 1_200);
    }

    #[test]
    fn loops_and_missing_phases_are_errors() {
        let mut t = sample();
        t.phases[0][0] = stolen(1, 0, 0);
        let e = analyse(&t, 0).unwrap_err();
        assert!(e.contains("loop"), "{e}");
        let mut t = sample();
        t.phases[1][0] = stolen(0, 9, 100);
        let e = analyse(&t, 0).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn an_empty_trace_has_an_empty_overall_row() {
        let t = Trace {
            policy: Policy::Adaptive,
            duration_ns: 0,
            spawns: 0,
            phases: vec![vec![]],
            segments: vec![vec![]],
            schedules: vec![],
        };
        let a = analyse(&t, 15_000).unwrap();
        assert!(a.regions.is_empty());
        assert_eq!(
            csv(&a).lines().nth(1),
            Some(",0.000000000,0.000000000,,0.000000000,")
        );
    }
}
