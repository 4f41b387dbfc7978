//! `index.html` of `magpie suite`: one self-contained page (inline CSS, inline SVG, no scripts).
//! From the top: the headline (magpie against each peer, see `headline`), a compact overview
//! table of every kernel, then per kernel a bar chart of the speedup over the serial twin of each
//! runtime and policy at each worker count, a bar chart of magpie's time relative to each peer's,
//! its timeline when traced (`trace::svg`), and the suite's table; last, the sections of
//! `--locality`, `--splice`, `--corun` and `--dist`. Every chart is drawn by
//! `magpie_view::chart`, the plotting layer all of magpie's pages share.

use crate::format::count;
use crate::format::{duration, result_line};
use crate::model::headline::{
    behind_list, headline, headline_policy, peer_runtimes, ratios, verdict, worker_counts,
};
use crate::model::{CorunInfo, Results, Row, SmallInputInfo, TraceInfo};
use crate::render::style::CSS;
use crate::render::table::{kernel_heading, kernel_note, table_cells, TABLE_HEAD};
use magpie_view::chart::{esc, Bar, Chart};
use std::fmt::Write;

const POLICY_COLORS: [(&str, &str); 3] = [
    ("work-first", "#2f6db5"),
    ("help-first", "#8e5cc9"),
    ("adaptive", "#2e9e48"),
];
const PEER_COLORS: [(&str, &str); 4] = [
    ("rayon", "#e8871e"),
    ("chili", "#cf3b33"),
    ("tbb", "#1a9fb0"),
    ("openmp", "#8a5a44"),
];
const OTHER_COLORS: [&str; 4] = ["#7f7f7f", "#bcbd22", "#17becf", "#8c564b"];

fn policy_color(p: &str) -> &'static str {
    POLICY_COLORS
        .iter()
        .find(|(n, _)| *n == p)
        .map_or(OTHER_COLORS[0], |c| c.1)
}

fn peer_color(runtime: &str, i: usize) -> &'static str {
    PEER_COLORS
        .iter()
        .find(|(n, _)| *n == runtime)
        .map_or(OTHER_COLORS[i % OTHER_COLORS.len()], |c| c.1)
}

fn workers_label(w: usize) -> String {
    if w == 1 {
        "1 worker".into()
    } else {
        format!("{w} workers")
    }
}

fn missing_word(r: &Row) -> &'static str {
    if r.stopped {
        "stopped"
    } else {
        "failed"
    }
}

/// The peers measured for a kernel, in measurement order, as (label, runtime).
fn peers_of(rows: &[&Row]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = vec![];
    for r in rows.iter().filter(|r| r.is_peer()) {
        if !v.iter().any(|(l, _)| *l == r.label()) {
            v.push((r.label(), r.runtime.clone()));
        }
    }
    v
}

fn speedup_chart(res: &Results, rows: &[&Row]) -> Chart {
    let mut series = vec![];
    for p in &res.policies {
        series.push((format!("magpie {p}"), policy_color(p).to_string(), None));
    }
    for (i, (label, runtime)) in peers_of(rows).into_iter().enumerate() {
        series.push((label, peer_color(&runtime, i).to_string(), None));
    }
    let bars = series
        .iter()
        .map(|(label, ..)| {
            res.workers
                .iter()
                .map(
                    |&w| match rows.iter().find(|r| r.workers == w && r.label() == *label) {
                        None => Bar::default(),
                        Some(r) => Bar {
                            value: r.speedup,
                            missing: r.speedup.is_none().then(|| missing_word(r)),
                            tip: match (r.speedup, r.median_s) {
                                (Some(s), Some(m)) => format!(
                                    "{}, {}: {s:.2}× the serial twin's speed (median {m:.6} s)",
                                    r.label(),
                                    workers_label(w)
                                ),
                                _ => format!(
                                    "{}, {}: {}",
                                    r.label(),
                                    workers_label(w),
                                    r.error.as_deref().unwrap_or("no time")
                                ),
                            },
                        },
                    },
                )
                .collect()
        })
        .collect();
    Chart {
        title: "Speedup over the serial twin (higher is better)".into(),
        y_label: "serial time ÷ time".into(),
        groups: res.workers.iter().map(|&w| workers_label(w)).collect(),
        series,
        bars,
        reference: Some((1.0, "serial".into())),
        log: false,
        supergroups: vec![],
    }
}

/// A cell's background for a time ratio: green below 1 (magpie faster), red above, stronger
/// the further from 1 (full strength at 8× either way).
fn ratio_fill(r: f64) -> String {
    let t = (r.log2().abs() / 3.0).clamp(0.0, 1.0);
    let alpha = 0.12 + 0.55 * t;
    if r <= 1.0 {
        format!("rgba(46,158,72,{alpha:.2})")
    } else {
        format!("rgba(207,59,51,{alpha:.2})")
    }
}

/// The headline at the top of the page: per worker count, one card per peer with magpie's
/// geometric-mean time ratio and the kernels where magpie is behind.
fn headline_section(res: &Results) -> String {
    let Some(h) = headline(res) else {
        return "<section id=\"headline\">\n<h2>Headline</h2>\n<p class=\"note\">No peer was \
                measured, so there is nothing to compare magpie with.</p>\n</section>\n"
            .into();
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<section id=\"headline\">\n<h2>Headline <small>magpie {} against each peer: geometric \
         mean over the kernels both ran of magpie's time ÷ the peer's fastest version's (below \
         1: magpie faster)</small></h2>",
        esc(&h.policy)
    );
    let mut workers: Vec<usize> = h.versus.iter().map(|v| v.workers).collect();
    workers.dedup();
    for w in workers {
        let _ = writeln!(
            o,
            "<div class=\"cards\"><div class=\"cards-label\">{}</div>",
            workers_label(w)
        );
        for v in h.versus.iter().filter(|v| v.workers == w) {
            let behind = if v.behind.is_empty() {
                "behind on none".to_string()
            } else {
                format!("behind on {}", behind_list(&v.behind, 4))
            };
            let _ =
                writeln!(
                o,
                "<div class=\"card\" style=\"background:{}\" title=\"{}\"><div class=\"peer\">vs \
                 {}</div><div class=\"big\">{:.2}</div><div>{} over {}</div><div \
                 class=\"behind\">{}</div></div>",
                ratio_fill(v.geomean),
                esc(&format!("behind on: {}", behind_list(&v.behind, usize::MAX))),
                esc(&v.peer),
                v.geomean,
                esc(&verdict(v.geomean)),
                count(v.kernels, "kernel"),
                esc(&behind)
            );
        }
        let _ = writeln!(o, "</div>");
    }
    let _ = writeln!(o, "</section>");
    o
}

/// The compact overview: one line per kernel; per worker count magpie's speedup over the serial
/// twin and its time ÷ each peer's (fastest version), coloured by who is faster.
fn overview_section(res: &Results) -> String {
    let Some(policy) = headline_policy(res) else {
        return String::new();
    };
    let peers = peer_runtimes(res);
    let workers = worker_counts(res);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<section id=\"overview\">\n<h2>Overview <small>magpie {}: speedup over the serial twin, \
         and time ÷ each peer's (green: magpie faster, red: slower; hover for the times)</small></h2>\n\
         <table class=\"grid\">\n<thead><tr><th rowspan=\"2\">kernel</th>",
        esc(policy)
    );
    for &w in &workers {
        let _ = write!(
            o,
            "<th class=\"group\" colspan=\"{}\">{}</th>",
            1 + peers.len(),
            workers_label(w)
        );
    }
    let _ = write!(o, "</tr>\n<tr>");
    for _ in &workers {
        let _ = write!(o, "<th class=\"num group\">speedup</th>");
        for p in &peers {
            let _ = write!(o, "<th class=\"num\">÷ {}</th>", esc(p));
        }
    }
    let _ = writeln!(o, "</tr></thead>\n<tbody>");
    let ratio_of: Vec<Vec<(String, f64)>> = workers
        .iter()
        .flat_map(|&w| peers.iter().map(move |p| (w, p.as_str())))
        .map(|(w, p)| ratios(res, policy, p, w))
        .collect();
    for k in &res.kernels {
        let _ = write!(o, "<tr><td><a href=\"#{0}\">{0}</a></td>", esc(k));
        for (wi, &w) in workers.iter().enumerate() {
            let m = res.kernel_rows(k).find(|r| {
                r.workers == w && r.runtime == "magpie" && r.policy.as_deref() == Some(policy)
            });
            match m {
                Some(r) => match (r.speedup, r.median_s) {
                    (Some(s), Some(t)) if r.verified => {
                        let _ = write!(
                            o,
                            "<td class=\"num group\" title=\"{}\">{s:.2}</td>",
                            esc(&format!("median {}", duration(t)))
                        );
                    }
                    _ => {
                        let _ = write!(
                            o,
                            "<td class=\"num group miss\" title=\"{}\">{}</td>",
                            esc(r.error.as_deref().unwrap_or("no time")),
                            missing_word(r)
                        );
                    }
                },
                None => {
                    let _ = write!(o, "<td class=\"num group\">–</td>");
                }
            }
            for (pi, p) in peers.iter().enumerate() {
                let found = ratio_of[wi * peers.len() + pi]
                    .iter()
                    .find(|(kk, _)| kk == k)
                    .map(|x| x.1);
                match found {
                    Some(r) => {
                        let _ = write!(
                            o,
                            "<td class=\"num\" style=\"background:{}\" title=\"{}\">{r:.2}</td>",
                            ratio_fill(r),
                            esc(&format!(
                                "magpie {policy} ÷ {p}, {}: {}",
                                workers_label(w),
                                verdict(r)
                            ))
                        );
                    }
                    None => {
                        let _ = write!(o, "<td class=\"num\">–</td>");
                    }
                }
            }
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(
        o,
        "</tbody>\n</table>\n<p class=\"note\">–: not measured, or not verified. Each kernel's \
         own section below has every policy and every peer version.</p>\n</section>"
    );
    o
}

fn ratio_chart(res: &Results, rows: &[&Row]) -> Option<Chart> {
    let peers = peers_of(rows);
    if peers.is_empty() || res.policies.is_empty() {
        return None;
    }
    let series = res
        .policies
        .iter()
        .map(|p| (format!("magpie {p}"), policy_color(p).to_string(), None))
        .collect();
    let mut bars: Vec<Vec<Bar>> = vec![vec![]; res.policies.len()];
    let mut groups = vec![];
    let mut supergroups = vec![];
    for &w in &res.workers {
        supergroups.push((workers_label(w), peers.len()));
        for (peer, _) in &peers {
            groups.push(peer.clone());
            for (line, p) in bars.iter_mut().zip(&res.policies) {
                let m = rows
                    .iter()
                    .find(|r| r.workers == w && r.policy.as_deref() == Some(p));
                let q = rows
                    .iter()
                    .find(|r| r.workers == w && r.is_peer() && r.label() == *peer);
                let (Some(m), Some(q)) = (m, q) else {
                    line.push(Bar::default());
                    continue;
                };
                line.push(match (m.median_s, q.median_s) {
                    (Some(a), Some(b)) if b > 0.0 && m.verified && q.verified => Bar {
                        value: Some(a / b),
                        missing: None,
                        tip: format!(
                            "magpie {p} ÷ {peer}, {}: {:.2} ({} vs {})",
                            workers_label(w),
                            a / b,
                            duration(a),
                            duration(b)
                        ),
                    },
                    _ => {
                        let bad = if m.verified { q } else { m };
                        Bar {
                            value: None,
                            missing: Some(missing_word(bad)),
                            tip: format!(
                                "{}, {}: {}",
                                bad.label(),
                                workers_label(w),
                                bad.error.as_deref().unwrap_or("no time")
                            ),
                        }
                    }
                });
            }
        }
    }
    Some(Chart {
        title: "magpie's time ÷ each peer's (lower is better)".into(),
        y_label: "magpie time ÷ peer time (log scale)".into(),
        groups,
        series,
        bars,
        reference: Some((1.0, "parity".into())),
        log: true,
        supergroups,
    })
}

/// The whole report page.
pub(crate) fn page(res: &Results) -> String {
    let m = &res.machine;
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>magpie suite: {} size, {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&res.size),
        esc(&m.date_utc)
    );
    let _ = writeln!(o, "<h1>magpie suite</h1>");
    let meta: Vec<(&str, String)> = vec![
        (
            "machine",
            format!(
                "{} — {} CPUs available, {}/{}",
                m.hostname.as_deref().unwrap_or("(unknown host)"),
                m.cpus,
                m.os,
                m.arch
            ),
        ),
        ("CPU", m.cpu_model.clone().unwrap_or_else(|| "–".into())),
        (
            "run",
            format!(
                "{} (UTC), magpie-cli {}, {:.1} s",
                m.date_utc, m.magpie_cli_version, res.elapsed_s
            ),
        ),
        (
            "size",
            format!(
                "{}, {} timed run{} per configuration",
                res.size,
                res.runs,
                if res.runs == 1 { "" } else { "s" }
            ),
        ),
    ];
    let _ = writeln!(o, "<dl class=\"meta\">");
    for (k, v) in meta {
        let _ = writeln!(o, "<dt>{k}</dt><dd>{}</dd>", esc(&v));
    }
    let _ = writeln!(
        o,
        "<dt>command</dt><dd><code>{}</code></dd>\n</dl>",
        esc(&res.command)
    );
    let _ = writeln!(
        o,
        "<p class=\"note\">Times are wall-clock medians of the timed runs; every run is verified \
         against its serial twin or a known answer. Runtimes are measured in interleaved rounds \
         (one run of each per round). <b>Speedup</b> = the serial twin's median ÷ the median. \
         <b>vs best peer</b> = the median ÷ the fastest peer's median at the same worker count \
         (below 1: faster than every peer). A work-first run that magpie stops at its stack \
         limit is an expected outcome, shown as “stopped”. Hover a bar or a cell for its numbers; the \
         raw data is in <code>results.json</code>.</p>"
    );

    o.push_str(&headline_section(res));
    o.push_str(&overview_section(res));
    for k in &res.kernels {
        let rows: Vec<&Row> = res.kernel_rows(k).collect();
        let heading = kernel_heading(res, k);
        let (name, rest) = heading.split_once(' ').unwrap_or((&heading, ""));
        let _ = writeln!(
            o,
            "<section id=\"{0}\">\n<h2>{0} <small>{1}</small></h2>",
            esc(name),
            esc(rest)
        );
        // The kernel's answer, what a reader can compare with a known value.
        let answer = match res.kernel_result(k) {
            Some(a) => format!("result: <code>{}</code>", esc(a)),
            None => esc(&result_line(None)),
        };
        if let Some(note) = kernel_note(k) {
            let _ = writeln!(o, "<p class=\"note\">{}</p>", esc(note));
        }
        let _ = writeln!(o, "<p class=\"result\">{answer}</p>");
        let _ = writeln!(o, "<div class=\"charts\">");
        let serial_ok = rows
            .iter()
            .any(|r| r.runtime == "serial" && r.median_s.is_some() && r.verified);
        if serial_ok {
            let _ = writeln!(o, "<figure>{}</figure>", speedup_chart(res, &rows).svg());
        } else {
            let _ = writeln!(
                o,
                "<p class=\"note\">No speedup chart: the serial twin has no verified time.</p>"
            );
        }
        match ratio_chart(res, &rows) {
            Some(c) => {
                let _ = writeln!(o, "<figure>{}</figure>", c.svg());
            }
            None => {
                let _ = writeln!(
                    o,
                    "<p class=\"note\">No peer comparison: no selected peer has a version of \
                     {}.</p>",
                    esc(k)
                );
            }
        }
        let _ = writeln!(o, "</div>");
        if let Some(t) = res.traces.iter().find(|t| t.kernel == *k) {
            o.push_str(&timeline_section(t));
        }
        let _ = writeln!(o, "<table>\n<thead><tr>");
        for (i, h) in TABLE_HEAD.iter().enumerate() {
            let class = if (1..=4).contains(&i) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(o, "<th{class}>{}</th>", esc(h));
        }
        let _ = writeln!(o, "</tr></thead>\n<tbody>");
        for r in &rows {
            let class = if r.stopped {
                " class=\"stopped\""
            } else if r.failed() {
                " class=\"failed\""
            } else {
                ""
            };
            let _ = write!(o, "<tr{class}>");
            for (i, c) in table_cells(r).iter().enumerate() {
                let class = match i {
                    1..=4 => " class=\"num\"",
                    5 => " class=\"msg\"",
                    _ => "",
                };
                let _ = write!(o, "<td{class}>{}</td>", esc(c));
            }
            let _ = writeln!(o, "</tr>");
        }
        let _ = writeln!(o, "</tbody>\n</table>");
        for nm in res.not_measured.iter().filter(|x| x.kernel == *k) {
            let _ = writeln!(
                o,
                "<p class=\"note\">Not measured: {} — {}.</p>",
                esc(&nm.runtime),
                esc(&nm.reason)
            );
        }
        let _ = writeln!(o, "</section>");
    }
    if !res.locality.is_empty() {
        o.push_str(&locality_section(res));
    }
    if !res.splice.is_empty() {
        o.push_str(&splice_section(res));
    }
    if let Some(c) = &res.corun {
        o.push_str(&corun_section(c));
    }
    if let Some(d) = &res.dist {
        o.push_str(&crate::render::dist::section(d));
    }
    if let Some(si) = &res.small_input {
        o.push_str(&small_input_section(si));
    }
    o.push_str("</body>\n</html>\n");
    o
}

/// The co-run of `--corun`: two programs sharing the machine under each sharing mode, as
/// `magpie corun --out` shows it.
fn corun_section(c: &CorunInfo) -> String {
    use crate::model::corun::WHO;
    use crate::render::corun as html;
    let mut o = String::from(
        "<section id=\"corun\">\n<h2>Co-running <small>two programs sharing this machine under \
         each sharing mode (magpie corun)</small></h2>\n",
    );
    match (&c.report, &c.error) {
        (Some(r), _) => {
            o.push_str(&html::meta(r, &WHO));
            o.push_str(&html::body(r, &WHO, "h3"));
        }
        (None, e) => {
            let _ = writeln!(
                o,
                "<p class=\"note\">The co-run failed: {}.</p>",
                esc(e.as_deref().unwrap_or("unknown"))
            );
        }
    }
    o.push_str("</section>\n");
    o
}

/// The small-input figure: the smallest tree entered from outside each runtime's pool, once
/// per call, in µs and × the serial twin.
fn small_input_section(si: &SmallInputInfo) -> String {
    let mut o = String::from(
        "<section id=\"small-input\">\n<h2>Small input <small>a parallel call on a tiny tree, \
         entered from outside the pool</small></h2>\n",
    );
    let f = match (&si.figure, &si.error) {
        (Some(f), _) => f,
        (None, e) => {
            let _ = writeln!(
                o,
                "<p class=\"note\">The figure failed: {}.</p>\n</section>",
                esc(e.as_deref().unwrap_or("unknown"))
            );
            return o;
        }
    };
    let _ = writeln!(
        o,
        "<p class=\"note\">The {}-node tree sum (one join per node) called from a thread outside \
         the pool, one entry per call (<code>Pool::install</code>, rayon's \
         <code>ThreadPool::install</code>, chili's <code>ThreadPool::scope</code>), as a library \
         calls a parallel function on a small input. Every sum checked ({}). Medians of {} \
         runs of 5,000 calls each; the serial twin took {:.2} µs per call.</p>",
        f.nodes,
        esc(&f.answer),
        f.runs,
        f.serial_us
    );
    let _ = writeln!(
        o,
        "<table>\n<thead><tr><th>runtime</th><th class=\"num\">workers</th>\
         <th class=\"num\">µs per call</th><th class=\"num\">× serial</th></tr></thead>\n<tbody>"
    );
    for r in &f.rows {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}</td>\
             <td class=\"num\">{:.2}×</td></tr>",
            esc(&r.runtime),
            r.workers,
            r.us,
            r.x_serial
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</section>");
    o
}

/// The stencils of `--splice`: spliced against unspliced (and rayon on the suite's recursion)
/// per kernel and worker count.
fn splice_section(res: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<section id=\"splice\">\n<h2>Splicing <small>time steps interleaved from declared \
         effects</small></h2>\n<p class=\"note\">Each stencil ran with windows of 8 time steps \
         spliced (<code>magpie splice</code>: each step runs as soon as the rows it declared no \
         longer conflict with what earlier steps still have to do) and with the same steps one \
         after another, alternated; every spliced grid was checked bit for bit against the \
         unspliced one. Medians of {} runs.</p>",
        res.runs
    );
    let _ = writeln!(
        o,
        "<table>\n<thead><tr><th>kernel</th><th class=\"num\">workers</th>\
         <th class=\"num\">n</th><th class=\"num\">steps</th><th class=\"num\">grain</th>\
         <th class=\"num\">spliced</th><th class=\"num\">unspliced</th>\
         <th class=\"num\">unspliced ÷ spliced</th><th class=\"num\">rayon</th>\
         <th class=\"num\">delayed steps</th></tr></thead>\n<tbody>"
    );
    for s in &res.splice {
        match &s.outcome {
            Some(x) => {
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                     <td class=\"num\">{}</td><td class=\"num\">{}</td>\
                     <td class=\"num\">{}</td><td class=\"num\">{}</td>\
                     <td class=\"num\">{:.2}×</td><td class=\"num\">{}</td>\
                     <td class=\"num\">{}</td></tr>",
                    esc(&s.kernel),
                    s.workers,
                    x.n,
                    x.steps,
                    x.grain,
                    crate::format::duration(x.spliced_median_s),
                    crate::format::duration(x.unspliced_median_s),
                    x.speedup,
                    x.rayon_median_s.map_or("–".into(), crate::format::duration),
                    x.stats.delayed
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "<tr class=\"failed\"><td>{}</td><td class=\"num\">{}</td>\
                     <td colspan=\"8\">failed: {}</td></tr>",
                    esc(&s.kernel),
                    s.workers,
                    esc(s.error.as_deref().unwrap_or("unknown"))
                );
            }
        }
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</section>");
    o
}

/// The modelled cache misses of `--locality`: one table per kernel, strategies against the
/// first (random stealing), and a plain word on what the model is and is not.
fn locality_section(res: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<section id=\"locality\">\n<h2>Locality <small>modelled last-level cache misses</small></h2>"
    );
    let _ = writeln!(
        o,
        "<p class=\"note\">Each kernel ran on a pool shaped like a virtual multi-socket machine \
         (one worker per modelled core), once per run and strategy, verified; its leaf tasks' \
         declared reads and writes were replayed through one LRU last-level cache per modelled \
         socket, writes invalidating other sockets' copies (<code>magpie locality</code>). \
         The misses are the model's, not a measurement: this machine has {} socket{}, and \
         wall-clock gains from locality need a machine with several. Strategies: random \
         (random victims), numa (nearest victims first), places (SLAW's places, one per socket, \
         no cross-place steals), places-cross (with them), cab (CAB's squads, inter-socket \
         tasks sent to the squads they name), cab-paper (left in the spawner's squad's pool, as \
         in CAB's paper); for the kernels with a first-touch initialiser, relws (Relaxed \
         iterations re-placing the data until the schedule settles, then Ordered), stows (the \
         initialiser's schedule, Ordered) and user (one contiguous share per worker). Remote \
         bytes: what leaves read or wrote on pages that the model's first-touch page map put on \
         another socket (also a model).</p>",
        res.machine.sockets,
        if res.machine.sockets == 1 { "" } else { "s" }
    );
    for l in &res.locality {
        let _ = writeln!(
            o,
            "<h3>{} <small>n = {}, virtual {}, median of {} run{}</small></h3>",
            esc(&l.kernel),
            l.n,
            esc(&l.topology),
            l.runs,
            if l.runs == 1 { "" } else { "s" }
        );
        if let Some(e) = &l.error {
            let _ = writeln!(o, "<p class=\"note\">Not modelled: {}.</p>", esc(e));
            continue;
        }
        let _ = writeln!(
            o,
            "<table>\n<thead><tr><th>strategy</th><th class=\"num\">misses (lines)</th>\
             <th class=\"num\">MB from memory</th><th class=\"num\">÷ {0}</th>\
             <th class=\"num\">remote MB</th><th class=\"num\">÷ {0}</th>\
             <th>per socket</th></tr></thead>\n<tbody>",
            esc(l.rows.first().map_or("first", |r| &r.strategy))
        );
        let base = l.rows.first().map_or(1, |r| r.misses.max(1)) as f64;
        let remote_base = l.rows.first().map_or(1, |r| r.remote_bytes.max(1)) as f64;
        for r in &l.rows {
            let per: Vec<String> = r.misses_per_socket.iter().map(|m| m.to_string()).collect();
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}</td>\
                 <td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td>\
                 <td class=\"num\">{:.2}</td><td>{}</td></tr>",
                esc(&r.strategy),
                r.misses,
                r.bytes as f64 / 1e6,
                r.misses as f64 / base,
                r.remote_bytes as f64 / 1e6,
                r.remote_bytes as f64 / remote_base,
                esc(&per.join(", "))
            );
        }
        let _ = writeln!(o, "</tbody>\n</table>");
        o.push_str(&iteration_table(&l.rows));
    }
    let _ = writeln!(o, "</section>");
    o
}

/// Per iteration of a first-touch program, per strategy: the share of leaves that stayed on
/// their worker, the idle share and the schedule's bytes (empty for other kernels).
fn iteration_table(rows: &[crate::model::locality::Row]) -> String {
    let rows: Vec<&crate::model::locality::Row> =
        rows.iter().filter(|r| !r.iterations.is_empty()).collect();
    let Some(count) = rows.iter().map(|r| r.iterations.len()).max() else {
        return String::new();
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<p class=\"note\">Per iteration (the median run's), modelled: same = leaves on the worker \
         that ran them the iteration before; idle = the workers' time outside paced leaves; \
         schedule = bytes of the schedule the iteration took; * = the initialiser re-placed the \
         data after it.</p>\n<table>\n<thead><tr><th>iteration</th>"
    );
    for r in &rows {
        let _ = write!(
            o,
            "<th class=\"num\">{0} same</th><th class=\"num\">{0} idle</th>\
             <th class=\"num\">{0} schedule B</th>",
            esc(&r.strategy)
        );
    }
    let _ = writeln!(o, "</tr></thead>\n<tbody>");
    for i in 0..count.min(12) {
        let _ = write!(o, "<tr><td>{i}</td>");
        for r in &rows {
            match r.iterations.get(i) {
                Some(it) => {
                    let _ = write!(
                        o,
                        "<td class=\"num\">{:.0}%{}</td><td class=\"num\">{:.0}%</td>\
                         <td class=\"num\">{}</td>",
                        100.0 * it.same_worker,
                        if it.placed_after { "*" } else { "" },
                        100.0 * it.idle,
                        it.schedule_bytes
                    );
                }
                None => o.push_str("<td></td><td></td><td></td>"),
            }
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    o
}

/// A traced kernel's timeline, with a line on what was traced and where the trace file is.
fn timeline_section(t: &TraceInfo) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<h3>Timeline: one traced run, magpie {} at {} worker{}</h3>",
        esc(&t.policy),
        t.workers,
        if t.workers == 1 { "" } else { "s" }
    );
    match (&t.svg, &t.error) {
        (Some(svg), None) => {
            let num = |x: Option<f64>| x.map_or("–".into(), |x| format!("{x:.2}"));
            let dur = |x: Option<f64>| x.map_or("–".into(), duration);
            let _ = writeln!(
                o,
                "<p class=\"note\">{}, {}, run {}. Steal tree: work {}, span {}, \
                 parallelism {} (span measured on the observed steal tree, phases as serial \
                 strands). Each lane is a worker, coloured by how the phase it ran began; lines \
                 join a victim to its thief. Trace file: <code>{}</code> (<code>magpie trace \
                 export</code> turns it into Perfetto JSON or Cilkscale's CSV).</p>",
                crate::format::count(t.phases, "phase"),
                crate::format::count(t.steals, "steal"),
                dur(t.run_s),
                dur(t.work_s),
                dur(t.span_s),
                num(t.parallelism),
                esc(t.file.as_deref().unwrap_or("–"))
            );
            let _ = writeln!(o, "<div class=\"charts\"><figure>{svg}</figure></div>");
        }
        (_, e) => {
            let _ = writeln!(
                o,
                "<p class=\"note\">No timeline: {}.</p>",
                esc(e.as_deref().unwrap_or("the trace could not be drawn"))
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        runtime: &str,
        variant: Option<&str>,
        policy: Option<&str>,
        w: usize,
        m: Option<f64>,
    ) -> serde_json::Value {
        serde_json::json!({
            "kernel": "pdfs", "size": "ci", "n": 64, "runtime": runtime, "variant": variant,
            "policy": policy, "workers": w, "runs": 1, "median_s": m, "min_s": m, "max_s": m,
            "times_s": m.into_iter().collect::<Vec<_>>(), "verified": m.is_some(),
            "stopped": m.is_none() && policy == Some("work-first"),
            "speedup": m.map(|m| 0.001 / m), "ratio_to_best_peer": null, "best_peer": null,
            "error": if m.is_none() { Some("stopped: stack limit reached <here>") } else { None },
            "stats": null, "peak_rss_kib": null
        })
    }

    #[test]
    fn page_shows_stopped_and_failed_runs() {
        let rows = vec![
            row("serial", None, None, 1, Some(0.001)),
            row("magpie", None, Some("work-first"), 1, None),
            row("magpie", None, Some("adaptive"), 1, Some(0.0005)),
            row("rayon", Some("join"), None, 1, None),
            row("magpie", None, Some("work-first"), 2, None),
            row("magpie", None, Some("adaptive"), 2, Some(0.0004)),
            row("rayon", Some("join"), None, 2, Some(0.0008)),
        ];
        let res: Results = serde_json::from_value(serde_json::json!({
            "machine": {
                "hostname": null, "cpus": 2, "os": "linux", "arch": "x86_64", "cpu_model": null,
                "magpie_cli_version": "0", "unix_time": 0, "date_utc": "1970-01-01T00:00:00Z"
            },
            "size": "ci", "runs": 1, "command": "magpie suite", "kernels": ["pdfs"],
            "workers": [1, 2], "policies": ["work-first", "adaptive"], "peers": ["rayon-join"],
            "elapsed_s": 1.0, "rows": rows, "not_measured": []
        }))
        .unwrap();
        let html = page(&res);
        // The kernel's two charts (the headline and the overview are tables).
        assert_eq!(html.matches("<svg").count(), 2);
        // The headline: adaptive against rayon at 2 workers only (rayon failed at 1): 0.5.
        assert_eq!(html.matches("class=\"card\"").count(), 1);
        assert!(html.contains("<div class=\"big\">0.50</div><div>2.00× faster over 1 kernel</div>"));
        // The overview: pdfs's speedup at both worker counts, its ratio at 2 only.
        assert!(
            html.contains(">2.00</td>")
                && html.contains(">2.50</td>")
                && html.contains(">0.50</td>")
        );
        // Two stopped work-first bars in each chart; the failed peer in the ratio chart.
        assert_eq!(html.matches(">stopped</text>").count(), 4);
        assert_eq!(html.matches(">failed</text>").count(), 2);
        assert!(html.contains("<tr class=\"stopped\">") && html.contains("<tr class=\"failed\">"));
        assert!(html.contains("&lt;here&gt;") && !html.contains("<here>"));
        assert!(!html.contains("Timeline"), "no --trace, no timeline");
        // Rows written before answers were recorded load without one, and say so.
        assert!(html.contains("<p class=\"result\">result: – (no run verified)</p>"));
        let mut res = res;
        res.rows[2].result = Some("4096 of 4096 vertices reached".into());
        assert!(page(&res).contains(
            "<p class=\"result\">result: <code>4096 of 4096 vertices reached</code></p>"
        ));

        // With a traced run: its timeline in the kernel's section; a failed one says why.
        let info = |svg: Option<&str>, error: Option<&str>| TraceInfo {
            kernel: "pdfs".into(),
            n: 64,
            workers: 2,
            policy: "adaptive".into(),
            file: Some("traces/pdfs.mtrace".into()),
            run_s: Some(0.001),
            phases: 3,
            steals: 1,
            work_s: Some(0.002),
            span_s: Some(0.001),
            parallelism: Some(2.0),
            stopped: false,
            error: error.map(str::to_string),
            svg: svg.map(str::to_string),
        };
        res.traces = vec![info(Some("<svg class=\"timeline\"></svg>"), None)];
        let html = page(&res);
        assert_eq!(html.matches("<svg").count(), 3);
        assert!(html.contains("1 steal,") && html.contains("traces/pdfs.mtrace"));
        res.traces = vec![info(None, Some("verification failed: <wrong>"))];
        let html = page(&res);
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(html.contains("No timeline: verification failed: &lt;wrong&gt;"));
    }
}
