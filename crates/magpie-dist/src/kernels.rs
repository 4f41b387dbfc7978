//! The kernels a task collection runs, each with its answer checked on every run.
//!
//! - `uts`: the Unbalanced Tree Search trees of the benchmark suite (`magpie_bench::uts`), a
//!   node per task (its 24-byte generator state), children spawned into the rank's deque; the
//!   node, leaf and depth counts are gathered over the ranks and checked against the published
//!   count or the serial search.

use crate::collection::{Comm, Entry, IterationReport, Strategy, TaskCollection};
use magpie_bench::uts;
use serde::{Deserialize, Serialize};

/// One run of a kernel over several iterations.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// The kernel's name.
    pub kernel: String,
    /// Ranks.
    pub ranks: usize,
    /// The strategy's name.
    pub strategy: String,
    /// The answer, in words (e.g. the node count), from the last iteration.
    pub result: String,
    /// Whether every iteration's answer was checked and right.
    pub verified: bool,
    /// Per iteration, every rank's figures.
    pub iterations: Vec<IterationReport>,
}

/// Runs UTS tree `p` for `iterations` iterations under `strategy` on the ranks of `comm`, a
/// rank's deque holding `comm`'s capacity; every iteration's counts are checked. An error is
/// one line (a wrong count).
pub fn uts<C: Comm<Entry<[u8; 24]>>>(
    comm: C,
    p: &uts::Params,
    strategy: Strategy,
    iterations: usize,
) -> Result<Outcome, String> {
    let expected = uts::expected_nodes(p);
    let mut tc = TaskCollection::new(comm, strategy);
    let ranks = tc.comm().size();
    if tc.comm().rank() == 0 {
        tc.push(uts::Node::root(p).to_bytes());
    }
    let mut reports = Vec::new();
    let mut result = String::new();
    for it in 0..iterations {
        let mut c = uts::Counts::default();
        let rep = tc.process(|t, s| {
            let node = uts::Node::from_bytes(t);
            let n = p.num_children(&node);
            c.nodes += 1;
            c.leaves += u64::from(n == 0);
            c.max_depth = c.max_depth.max(node.height());
            for i in 0..n {
                s.spawn(node.child(i, p).to_bytes());
            }
        });
        let all: Vec<(u64, u64, u32)> = tc.comm().all_gather((c.nodes, c.leaves, c.max_depth));
        let total = uts::Counts {
            nodes: all.iter().map(|a| a.0).sum(),
            leaves: all.iter().map(|a| a.1).sum(),
            max_depth: all.iter().map(|a| a.2).max().unwrap_or(0),
        };
        uts::verify(p, &total, expected).map_err(|e| format!("iteration {it}: {e}"))?;
        result = format!(
            "{} nodes, {} leaves, depth {}",
            total.nodes, total.leaves, total.max_depth
        );
        reports.push(rep);
        tc.restore();
    }
    Ok(Outcome {
        kernel: "uts".into(),
        ranks,
        strategy: strategy.name().into(),
        result,
        verified: true,
        iterations: reports,
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::collection::local::Cluster;

    #[test]
    fn uts_counts_match_the_serial_search_on_threads() {
        let p = uts::Params::parse("-t 1 -a 3 -b 4 -r 19 -d 7").unwrap();
        let want = uts::serial(&p);
        for strategy in Strategy::ALL {
            for ranks in [1, 3] {
                let hs: Vec<_> = Cluster::ranks::<[u8; 24]>(ranks, 256)
                    .into_iter()
                    .map(|r| std::thread::spawn(move || uts(r, &p, strategy, 2)))
                    .collect();
                for h in hs {
                    let o = h.join().unwrap().unwrap();
                    assert!(
                        o.result.starts_with(&format!("{} nodes", want.nodes)),
                        "{o:?}"
                    );
                    assert_eq!(o.iterations.len(), 2);
                    assert_eq!(o.iterations[1].tasks(), want.nodes);
                }
            }
        }
    }
}
