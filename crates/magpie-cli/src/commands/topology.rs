//! `magpie topology`: the machine as magpie sees it, or a virtual topology.

use crate::failure::Failure;
use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct TopologyArgs {
    /// A virtual topology to show instead of the detected one, `SOCKETSxCORES:LLC` (e.g.
    /// 4x4:6MiB); default: MAGPIE_TOPOLOGY if set, otherwise the machine.
    #[arg(long)]
    pub virtual_topology: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `magpie topology`: the detected machine, or the virtual topology given or in MAGPIE_TOPOLOGY.
pub(crate) fn run(a: TopologyArgs) -> Result<(), Failure> {
    let spec = a
        .virtual_topology
        .or_else(|| std::env::var("MAGPIE_TOPOLOGY").ok());
    let t = match spec {
        Some(s) => magpie::Topology::parse(&s).map_err(Failure::from_magpie)?,
        None => magpie::Topology::detect(),
    };
    if a.json {
        let sockets: Vec<serde_json::Value> = t
            .sockets
            .iter()
            .map(|s| {
                serde_json::json!({
                    "cpus": s.cores.iter().map(|c| c.cpu).collect::<Vec<_>>(),
                    "numa_nodes": s.cores.iter().map(|c| c.numa_node).collect::<Vec<_>>(),
                    "llc_bytes": s.llc_bytes,
                })
            })
            .collect();
        let v = serde_json::json!({
            "virtual": t.is_virtual,
            "detector": t.detector.to_string(),
            "sockets": sockets,
            "cores": t.cores(),
        });
        println!("{v}");
    } else {
        print!("{t}");
    }
    Ok(())
}
