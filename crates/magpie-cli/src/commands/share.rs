//! `magpie share status`: the core allocation table that co-running magpie programs share (DWS
//! §3.1, Table 1; `magpie::dws`), as text or one JSON object: the file, its version and slot
//! counts, the registered programs (pid, start time, heartbeat age, alive or stale, cores held)
//! and every core's holder. It only reads the table (`CoreTable::inspect`): no table yet is
//! reported and exit 0; a table magpie would refuse is an `error:` line and exit 2.

use crate::failure::Failure;
use clap::{Args, Subcommand};
use magpie::dws::{CoreEntry, CoreTable, ProgramEntry, Snapshot, STALE_MS};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

/// `magpie share`: the core allocation table of co-running programs.
#[derive(Args, Debug)]
#[command(arg_required_else_help = false)]
pub(crate) struct ShareArgs {
    #[command(subcommand)]
    pub action: ShareAction,
}

/// What `magpie share` does with the table.
#[derive(Subcommand, Debug)]
pub(crate) enum ShareAction {
    /// Print the table: its file and version, the registered programs (pid, start time,
    /// heartbeat age, alive or stale, cores held) and each core's holder. Only reads: it never
    /// creates or changes the table. No table yet is not an error; a table magpie would refuse is
    /// (exit 2).
    Status(ShareStatusArgs),
}

/// `magpie share status`.
#[derive(Args, Debug)]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub(crate) struct ShareStatusArgs {
    /// The table file to read [default: MAGPIE_SHARE_TABLE if set, else
    /// $XDG_RUNTIME_DIR/magpie-cores if that is your directory, else /dev/shm/magpie-cores-<uid>].
    #[arg(long)]
    pub table: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: ShareArgs) -> Result<(), Failure> {
    match a.action {
        ShareAction::Status(s) => status(s),
    }
}

fn status(a: ShareStatusArgs) -> Result<(), Failure> {
    let path = a.table.unwrap_or_else(magpie::dws::default_path);
    let snapshot = CoreTable::inspect(&path, magpie::dws::cpu_slots())
        .map_err(|e| Failure::Usage(e.to_string()))?;
    match (snapshot, a.json) {
        (None, false) => println!(
            "no core table at {}: no magpie program has shared this machine's cores yet",
            path.display()
        ),
        (None, true) => println!(
            "{}",
            json!({ "path": path.display().to_string(), "exists": false })
        ),
        (Some(s), false) => print!("{}", text(&s)),
        (Some(s), true) => println!("{}", to_json(&s)),
    }
    Ok(())
}

/// How long ago `beat` was at the snapshot's time (0 for a heartbeat in the future).
fn age(s: &Snapshot, beat: u64) -> u64 {
    s.now_ms.saturating_sub(beat)
}

/// The holder's state: alive, dead (its process is gone), or alive but silent for too long.
fn state(alive: bool, stale: bool) -> &'static str {
    match (alive, stale) {
        (false, _) => "dead",
        (true, true) => "stale",
        (true, false) => "alive",
    }
}

fn holder(raw: u64) -> String {
    match magpie::dws::ProgramId::from_u64(raw) {
        Some(id) => id.to_string(),
        None => format!("an invalid owner {raw:#x}"),
    }
}

fn list(cores: &[usize]) -> String {
    if cores.is_empty() {
        return "none".into();
    }
    cores
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn text(s: &Snapshot) -> String {
    let mut o = String::new();
    let free = s.cores.iter().filter(|c| c.raw_owner == 0).count();
    let _ = writeln!(
        o,
        "core table {}: version {}, {} cores ({free} free), {} program slots; a holder is stale \
         after {STALE_MS} ms without a heartbeat",
        s.path.display(),
        s.version,
        s.cores.len(),
        s.program_slots
    );
    let _ = writeln!(o, "programs: {} registered", s.programs.len());
    for p in &s.programs {
        let _ = writeln!(
            o,
            "  {}: heartbeat {} ms ago, {}, cores {}",
            holder(p.raw_id),
            age(s, p.heartbeat_ms),
            state(p.alive, p.stale),
            list(&p.cores)
        );
    }
    let _ = writeln!(o, "cores:");
    for c in &s.cores {
        if c.raw_owner == 0 {
            let _ = writeln!(o, "  {:>3}: free", c.core);
        } else {
            let _ = writeln!(
                o,
                "  {:>3}: {}, heartbeat {} ms ago, {}",
                c.core,
                holder(c.raw_owner),
                age(s, c.heartbeat_ms),
                state(c.alive, c.stale)
            );
        }
    }
    o
}

/// A program's identity as JSON: the packed id, its pid and its start time.
fn id_json(raw: u64) -> Value {
    json!({ "id": raw, "pid": raw >> 32, "start_time": raw & 0xffff_ffff })
}

fn program_json(s: &Snapshot, p: &ProgramEntry) -> Value {
    let mut v = id_json(p.raw_id);
    v["slot"] = json!(p.slot);
    v["heartbeat_age_ms"] = json!(age(s, p.heartbeat_ms));
    v["alive"] = json!(p.alive);
    v["stale"] = json!(p.stale);
    v["cores"] = json!(p.cores);
    v
}

fn core_json(s: &Snapshot, c: &CoreEntry) -> Value {
    if c.raw_owner == 0 {
        return json!({ "core": c.core, "owner": null, "heartbeat_age_ms": null,
                       "alive": false, "stale": false });
    }
    json!({
        "core": c.core,
        "owner": id_json(c.raw_owner),
        "heartbeat_age_ms": age(s, c.heartbeat_ms),
        "alive": c.alive,
        "stale": c.stale,
    })
}

fn to_json(s: &Snapshot) -> Value {
    json!({
        "path": s.path.display().to_string(),
        "exists": true,
        "version": s.version,
        "core_slots": s.cores.len(),
        "program_slots": s.program_slots,
        "stale_ms": STALE_MS,
        "free_cores": s.cores.iter().filter(|c| c.raw_owner == 0).map(|c| c.core).collect::<Vec<_>>(),
        "programs": s.programs.iter().map(|p| program_json(s, p)).collect::<Vec<_>>(),
        "cores": s.cores.iter().map(|c| core_json(s, c)).collect::<Vec<_>>(),
    })
}
