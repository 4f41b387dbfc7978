//! Chrome trace-event JSON (the `{"traceEvents": [...]}` object form) that Perfetto
//! (ui.perfetto.dev) and chrome://tracing open.
//!
//! - Process 1, named `magpie`; one thread per worker, tid = worker + 1 (tid 0 is the idle task on
//!   Linux, which some viewers treat specially), named `worker N`, sorted by worker.
//! - A complete (`X`) slice per segment, named after its phase's origin (`root`, `stolen from w1
//!   (child, level 3)`, `resumed`, `early`, `external`), with the phase and its origin in `args`.
//!   Times are microseconds with three decimals (exact nanoseconds). A segment that ends where the
//!   next one begins is written one nanosecond shorter, so that no two slices of a track touch or
//!   overlap once the viewer has rounded them; empty segments are left out.
//! - A flow arrow per steal, from the victim's track to the thief's: an `s` event at the thief
//!   phase's start (moved into a slice of the victim phase when the victim's worker was not running
//!   anything then) and an `f` event with `"bp":"e"` at the same time on the thief's track, so each
//!   binds to the slice that encloses it. The flow events come after every slice in the file.

use crate::model::trace::{origin_args, origin_name};
use magpie::trace::Trace;
use std::fmt::Write as _;

/// A slice as written: start and duration in nanoseconds, and its phase.
#[derive(Clone, Copy, Debug)]
struct Slice {
    start: u64,
    dur: u64,
    phase: u32,
}

impl Slice {
    /// A time strictly inside the slice when it is at least 2 ns long (one before its end), else
    /// its start.
    fn inside_end(&self) -> u64 {
        if self.dur >= 2 {
            self.start + self.dur - 1
        } else {
            self.start
        }
    }

    fn contains(&self, t: u64) -> bool {
        self.start <= t && (t < self.start + self.dur || (self.dur == 0 && t == self.start))
    }
}

/// Microseconds with three decimals, exactly.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Each worker's slices: its non-empty segments, each ending before the next one begins.
fn slices(t: &Trace) -> Vec<Vec<Slice>> {
    t.segments
        .iter()
        .map(|segs| {
            let kept: Vec<_> = segs.iter().filter(|s| s.end_ns > s.start_ns).collect();
            let mut out = Vec::with_capacity(kept.len());
            for (k, s) in kept.iter().enumerate() {
                let mut end = s.end_ns;
                if let Some(next) = kept.get(k + 1) {
                    if end >= next.start_ns {
                        end = next.start_ns.saturating_sub(1);
                    }
                }
                if end >= s.start_ns {
                    out.push(Slice {
                        start: s.start_ns,
                        dur: end - s.start_ns,
                        phase: s.phase,
                    });
                }
            }
            out
        })
        .collect()
}

/// The slice of `track` that contains `t`, if one does (slices are in time order).
fn enclosing(track: &[Slice], t: u64) -> Option<&Slice> {
    let k = track.partition_point(|s| s.start <= t);
    track[..k].last().filter(|s| s.contains(t))
}

/// Where the flow leaves the victim: `t` if the victim's worker was running a slice then, else a
/// time inside the victim phase's slice nearest before `t` (or the first after), else inside the
/// worker's slice nearest before `t` (or the first after), else `t`.
fn victim_time(track: &[Slice], phase: u32, t: u64) -> u64 {
    if enclosing(track, t).is_some() {
        return t;
    }
    let nearest = |keep: &dyn Fn(&Slice) -> bool| -> Option<u64> {
        let k = track.partition_point(|s| s.start <= t);
        track[..k]
            .iter()
            .rev()
            .find(|s| keep(s))
            .map(Slice::inside_end)
            .or_else(|| track[k..].iter().find(|s| keep(s)).map(|s| s.start))
    };
    nearest(&|s| s.phase == phase)
        .or_else(|| nearest(&|_| true))
        .unwrap_or(t)
}

/// Where the flow arrives: `t` if a slice of the thief's worker contains it, else the start of the
/// thief phase's first slice, else `t`.
fn thief_time(track: &[Slice], phase: u32, t: u64) -> u64 {
    if enclosing(track, t).is_some() {
        return t;
    }
    track
        .iter()
        .find(|s| s.phase == phase)
        .map_or(t, |s| s.start)
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The whole JSON document.
pub(crate) fn export(t: &Trace) -> String {
    let tracks = slices(t);
    let mut o = String::with_capacity(64 + tracks.iter().map(Vec::len).sum::<usize>() * 160);
    let steals = t.steals();
    o.push_str("{\"traceEvents\":[\n");
    o.push_str(
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"magpie\"}}",
    );
    for w in 0..t.workers() {
        let tid = w + 1;
        let _ = write!(
            o,
            ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\
             \"args\":{{\"name\":\"worker {w}\"}}}}\
             ,\n{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\
             \"args\":{{\"sort_index\":{w}}}}}"
        );
    }
    for (w, track) in tracks.iter().enumerate() {
        for s in track {
            let Some(phase) = t.phases[w].get(s.phase as usize) else {
                continue;
            };
            let args = serde_json::Value::Object(origin_args(s.phase, &phase.origin));
            let _ = write!(
                o,
                ",\n{{\"name\":{},\"cat\":\"phase\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\
                 \"ts\":{},\"dur\":{},\"args\":{}}}",
                json_str(&origin_name(&phase.origin)),
                w + 1,
                us(s.start),
                us(s.dur),
                args
            );
        }
    }
    for (id, (victim, thief)) in steals.iter().enumerate() {
        let Some(tp) = t.phase(*thief) else { continue };
        let (vw, tw) = (victim.worker as usize, thief.worker as usize);
        let (Some(vtrack), Some(ttrack)) = (tracks.get(vw), tracks.get(tw)) else {
            continue;
        };
        let at_victim = victim_time(vtrack, victim.index, tp.start_ns);
        let at_thief = thief_time(ttrack, thief.index, tp.start_ns);
        let _ = write!(
            o,
            ",\n{{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"s\",\"id\":{id},\"pid\":1,\
             \"tid\":{},\"ts\":{}}}\
             ,\n{{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\
             \"pid\":1,\"tid\":{},\"ts\":{}}}",
            vw + 1,
            us(at_victim),
            tw + 1,
            us(at_thief)
        );
    }
    let other = serde_json::json!({
        "generator": concat!("magpie ", env!("CARGO_PKG_VERSION")),
        "policy": t.policy.name(),
        "workers": t.workers(),
        "phases": t.phases.iter().map(Vec::len).sum::<usize>(),
        "steals": steals.len(),
        "spawns": t.spawns,
        "duration_ns": t.duration_ns,
    });
    let _ = write!(o, "\n],\n\"otherData\":{other}}}\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use magpie::trace::{EventId, Origin, Phase, PhaseId, Segment, Taken};

    #[test]
    fn touching_segments_are_shortened_and_flows_clamped() {
        let seg = |phase, start_ns, end_ns| Segment {
            phase,
            start_ns,
            end_ns,
        };
        let t = Trace {
            policy: magpie::Policy::WorkFirst,
            duration_ns: 5_000,
            spawns: 1,
            phases: vec![
                vec![
                    Phase {
                        origin: Origin::Root { ordinal: 0 },
                        start_ns: 0,
                    },
                    Phase {
                        origin: Origin::Early {
                            from: EventId {
                                phase: PhaseId {
                                    worker: 0,
                                    index: 0,
                                },
                                seq: 0,
                                half: 0,
                            },
                        },
                        start_ns: 1_000,
                    },
                ],
                vec![Phase {
                    origin: Origin::Stolen {
                        from: EventId {
                            phase: PhaseId {
                                worker: 0,
                                index: 0,
                            },
                            seq: 2,
                            half: 1,
                        },
                        taken: Taken::Continuation,
                        level: 4,
                    },
                    start_ns: 2_500,
                }],
            ],
            // Worker 0 is idle when worker 1 steals at 2500.
            schedules: vec![],
            segments: vec![
                vec![seg(0, 0, 1_000), seg(1, 1_000, 2_000), seg(0, 2_000, 2_000)],
                vec![seg(0, 2_500, 4_000)],
            ],
        };
        let s = slices(&t);
        assert_eq!(s[0].len(), 2);
        assert_eq!((s[0][0].start, s[0][0].dur), (0, 999));
        assert_eq!((s[0][1].start, s[0][1].dur), (1_000, 1_000));
        assert_eq!(victim_time(&s[0], 0, 2_500), 998);
        assert_eq!(victim_time(&s[0], 7, 2_500), 1_999);
        assert_eq!(victim_time(&s[0], 0, 500), 500);
        assert_eq!(thief_time(&s[1], 0, 2_500), 2_500);
        let v: serde_json::Value = serde_json::from_str(&export(&t)).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        let named = |n: &str| ev.iter().filter(|e| e["name"] == n).count();
        assert_eq!(named("thread_name"), 2);
        assert_eq!(named("steal"), 2);
        let x: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 3);
        assert_eq!(x[2]["name"], "stolen from w0 (continuation, level 4)");
        assert_eq!(x[1]["name"], "early");
        assert_eq!(x[0]["ts"].as_f64(), Some(0.0));
        assert_eq!(x[0]["dur"].as_f64(), Some(0.999));
        assert_eq!(v["otherData"]["steals"], 1);
    }
}
