//! The suite's headline: is magpie faster than each peer, by how much overall, and where not.
//!
//! For each worker count and each peer runtime (rayon, chili, TBB, OpenMP), the geometric mean
//! over the kernels both ran of magpie's median time ÷ the peer's. magpie is its default policy
//! (adaptive) when the suite measured it, else the first policy measured; a peer with several
//! versions of a kernel (`rayon-join`, `rayon-scope`) counts with its fastest, so the comparison
//! is against the best that peer offers. Only verified medians count. The kernels where magpie is
//! slower than the peer are named with their ratios, slowest first.
//!
//! The same figures come out three ways: at the top of the terminal table, at the top of
//! `index.html`, and as `headline` in `results.json`.

use crate::model::{Headline, Results, Row, Versus};
use std::fmt::Write as _;

/// The policy the headline compares: adaptive (the default) when measured, else the first.
pub(crate) fn headline_policy(res: &Results) -> Option<&str> {
    res.policies
        .iter()
        .find(|p| *p == "adaptive")
        .or(res.policies.first())
        .map(String::as_str)
}

fn ok_median(r: &Row) -> Option<f64> {
    r.median_s.filter(|&m| r.verified && m > 0.0)
}

/// The worker counts measured, ascending.
pub(crate) fn worker_counts(res: &Results) -> Vec<usize> {
    let mut w = res.workers.clone();
    w.sort_unstable();
    w.dedup();
    w
}

/// The peer runtimes measured, in the order the suite ran them.
pub(crate) fn peer_runtimes(res: &Results) -> Vec<String> {
    let mut v: Vec<String> = vec![];
    for r in res.rows.iter().filter(|r| r.is_peer()) {
        if !v.contains(&r.runtime) {
            v.push(r.runtime.clone());
        }
    }
    v
}

/// Per kernel, magpie's time ÷ `peer`'s fastest version's at `workers`, for the kernels where
/// both have a verified median.
pub(crate) fn ratios(
    res: &Results,
    policy: &str,
    peer: &str,
    workers: usize,
) -> Vec<(String, f64)> {
    res.kernels
        .iter()
        .filter_map(|k| {
            let at = res
                .kernel_rows(k)
                .filter(|r| r.workers == workers)
                .collect::<Vec<_>>();
            let m = at
                .iter()
                .find(|r| r.runtime == "magpie" && r.policy.as_deref() == Some(policy))
                .and_then(|r| ok_median(r))?;
            let p = at
                .iter()
                .filter(|r| r.runtime == peer)
                .filter_map(|r| ok_median(r))
                .min_by(f64::total_cmp)?;
            Some((k.clone(), m / p))
        })
        .collect()
}

/// The geometric mean of positive values (`None` for none).
pub(crate) fn geomean(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for x in xs {
        sum += x.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

/// The headline, or `None` when no magpie policy or no peer was measured.
pub(crate) fn headline(res: &Results) -> Option<Headline> {
    let policy = headline_policy(res)?;
    let peers = peer_runtimes(res);
    let mut versus = vec![];
    for w in worker_counts(res) {
        for peer in &peers {
            let r = ratios(res, policy, peer, w);
            let Some(g) = geomean(r.iter().map(|x| x.1)) else {
                continue;
            };
            let mut behind: Vec<(String, f64)> = r.iter().filter(|x| x.1 > 1.0).cloned().collect();
            behind.sort_by(|a, b| b.1.total_cmp(&a.1));
            versus.push(Versus {
                workers: w,
                peer: peer.clone(),
                kernels: r.len(),
                geomean: g,
                behind,
            });
        }
    }
    (!versus.is_empty()).then(|| Headline {
        policy: policy.to_string(),
        versus,
    })
}

/// "faster" or "slower" and by how much, from a time ratio: 0.80 → "1.25× faster".
pub(crate) fn verdict(ratio: f64) -> String {
    if ratio <= 1.0 {
        format!("{:.2}× faster", 1.0 / ratio)
    } else {
        format!("{ratio:.2}× slower")
    }
}

/// The headline as plain text lines, for the terminal.
pub(crate) fn text(h: &Headline) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "headline: magpie ({}) time ÷ each peer's, geometric mean over the kernels both ran \
         (below 1: magpie faster)",
        h.policy
    );
    for v in &h.versus {
        let _ = write!(
            o,
            "  {:>2} worker{} vs {:<7} {:.2} ({}, {} kernel{})",
            v.workers,
            if v.workers == 1 { " " } else { "s" },
            v.peer,
            v.geomean,
            verdict(v.geomean),
            v.kernels,
            if v.kernels == 1 { "" } else { "s" }
        );
        if v.behind.is_empty() {
            let _ = writeln!(o, "; behind on none");
        } else {
            let _ = writeln!(o, "; behind on {}", behind_list(&v.behind, 6));
        }
    }
    o
}

/// `heat 1.31, sor 1.05 and 3 more`: the first `max` kernels, then a count.
pub(crate) fn behind_list(behind: &[(String, f64)], max: usize) -> String {
    let mut parts: Vec<String> = behind
        .iter()
        .take(max)
        .map(|(k, r)| format!("{k} {r:.2}"))
        .collect();
    if behind.len() > max {
        parts.push(format!("{} more", behind.len() - max));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_means_and_verdicts() {
        assert_eq!(geomean([]), None);
        let g = geomean([0.5, 2.0]).expect("two values");
        assert!((g - 1.0).abs() < 1e-12);
        let g = geomean([0.25, 1.0]).expect("two values");
        assert!((g - 0.5).abs() < 1e-12);
        assert_eq!(verdict(0.5), "2.00× faster");
        assert_eq!(verdict(1.25), "1.25× slower");
        let b: Vec<(String, f64)> = (0..8).map(|i| (format!("k{i}"), 2.0)).collect();
        assert_eq!(behind_list(&b[..2], 6), "k0 2.00, k1 2.00");
        assert_eq!(
            behind_list(&b, 6),
            "k0 2.00, k1 2.00, k2 2.00, k3 2.00, k4 2.00, k5 2.00, 2 more"
        );
    }

    /// A verified (or, with `None`, failed) row of `kernel` as results.json has it.
    fn row(
        kernel: &str,
        runtime: &str,
        who: Option<&str>,
        w: usize,
        m: Option<f64>,
    ) -> serde_json::Value {
        let (variant, policy) = match runtime {
            "magpie" => (None, who),
            "serial" => (None, None),
            _ => (who, None),
        };
        serde_json::json!({
            "kernel": kernel, "size": "ci", "n": 1, "runtime": runtime, "variant": variant,
            "policy": policy, "workers": w, "runs": 1, "median_s": m, "min_s": m, "max_s": m,
            "times_s": m.into_iter().collect::<Vec<_>>(), "verified": m.is_some(),
            "stopped": false, "speedup": null, "ratio_to_best_peer": null, "best_peer": null,
            "error": if m.is_none() { Some("failed verification") } else { None },
            "stats": null, "peak_rss_kib": null
        })
    }

    pub(crate) fn results(rows: Vec<serde_json::Value>, policies: &[&str]) -> Results {
        serde_json::from_value(serde_json::json!({
            "machine": {
                "hostname": null, "cpus": 2, "os": "linux", "arch": "x86_64", "cpu_model": null,
                "magpie_cli_version": "0", "unix_time": 0, "date_utc": "1970-01-01T00:00:00Z"
            },
            "size": "ci", "runs": 1, "command": "magpie suite", "kernels": ["a", "b", "c"],
            "workers": [2, 1], "policies": policies, "peers": ["rayon-join", "rayon-scope", "chili-join"],
            "elapsed_s": 1.0, "rows": rows, "not_measured": []
        }))
        .expect("a well-formed results.json")
    }

    #[test]
    fn compares_the_default_policy_with_each_peers_fastest_version() {
        let rows = vec![
            // a: magpie 1.0; rayon's fastest version 2.0 (scope), chili 0.5.
            row("a", "magpie", Some("adaptive"), 1, Some(1.0)),
            row("a", "magpie", Some("work-first"), 1, Some(0.1)),
            row("a", "rayon", Some("join"), 1, Some(4.0)),
            row("a", "rayon", Some("scope"), 1, Some(2.0)),
            row("a", "chili", Some("join"), 1, Some(0.5)),
            // b: magpie 3.0 against rayon 1.5; chili failed, so b does not count for chili.
            row("b", "magpie", Some("adaptive"), 1, Some(3.0)),
            row("b", "rayon", Some("join"), 1, Some(1.5)),
            row("b", "chili", Some("join"), 1, None),
            // c: magpie failed: c counts for no peer.
            row("c", "magpie", Some("adaptive"), 1, None),
            row("c", "rayon", Some("join"), 1, Some(1.0)),
            // At 2 workers only rayon ran, on a: magpie twice as fast.
            row("a", "magpie", Some("adaptive"), 2, Some(1.0)),
            row("a", "rayon", Some("join"), 2, Some(2.0)),
        ];
        let h = headline(&results(rows, &["work-first", "adaptive"])).expect("peers ran");
        assert_eq!(h.policy, "adaptive");
        let got: Vec<(usize, &str, usize)> = h
            .versus
            .iter()
            .map(|v| (v.workers, v.peer.as_str(), v.kernels))
            .collect();
        assert_eq!(got, [(1, "rayon", 2), (1, "chili", 1), (2, "rayon", 1)]);
        // rayon at 1 worker: a 0.5, b 2.0: geomean 1, behind on b.
        assert!((h.versus[0].geomean - 1.0).abs() < 1e-12);
        assert_eq!(h.versus[0].behind, [("b".to_string(), 2.0)]);
        // chili at 1 worker: a 2.0.
        assert!((h.versus[1].geomean - 2.0).abs() < 1e-12);
        assert!((h.versus[2].geomean - 0.5).abs() < 1e-12);
        assert!(h.versus[2].behind.is_empty());
        let t = text(&h);
        assert!(
            t.contains("vs rayon   1.00 (1.00× faster, 2 kernels); behind on b 2.00"),
            "{t}"
        );
        assert!(
            t.contains(" 2 workers vs rayon   0.50 (2.00× faster, 1 kernel); behind on none"),
            "{t}"
        );

        // Without adaptive, the first policy measured; without peers, no headline.
        let rows = vec![
            row("a", "magpie", Some("work-first"), 1, Some(1.0)),
            row("a", "rayon", Some("join"), 1, Some(4.0)),
        ];
        let h = headline(&results(rows, &["work-first"])).expect("rayon ran");
        assert_eq!(
            (h.policy.as_str(), h.versus[0].geomean),
            ("work-first", 0.25)
        );
        let rows = vec![row("a", "magpie", Some("adaptive"), 1, Some(1.0))];
        assert_eq!(headline(&results(rows, &["adaptive"])), None);
    }
}
