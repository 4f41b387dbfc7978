//! The command line of `magpie` (clap derive): the commands and where each one runs. Each
//! command is one file in `commands/` with its arguments and its `run`; what several share is
//! in `args.rs`.

use crate::commands::corun::child::CorunChildArgs;
use crate::commands::corun::CorunArgs;
use crate::commands::{
    bench, corun, idle, locality, race, report, schedule, share, splice, suite, topology, trace,
};
use crate::failure::Failure;
use bench::BenchArgs;
use clap::{Parser, Subcommand};
use idle::IdleArgs;
use locality::LocalityArgs;
use race::RaceArgs;
use report::ReportArgs;
use schedule::ScheduleArgs;
use share::ShareArgs;
use splice::SpliceArgs;
use suite::SuiteArgs;
use topology::TopologyArgs;
use trace::TraceArgs;

/// Benchmarks of the magpie work-stealing runtime: 26 kernels from the SLAW, CAB, DWS and
/// Friendly Barriers papers and Lifflander's thesis, chili's and Spice's tree sum, and 7 ordinary
/// rayon programs (rayon's iterators, run on magpie's rayon-core against rayon's own), timed
/// against their serial twins and peers.
#[derive(Parser, Debug)]
#[command(
    name = "magpie",
    version,
    about,
    after_help = "Without a command, `magpie` runs `magpie suite` (default size, every kernel, \
                  policy and peer at 1 and all available workers)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run every kernel, policy and peer at 1 and all workers; print a table and write
    /// results.json and index.html with charts (the default command).
    Suite(SuiteArgs),
    /// Time one kernel on magpie, its serial twin and its peers (rayon, chili).
    Bench(BenchArgs),
    /// Run every kernel under every policy and worker count and write a Markdown report.
    Report(ReportArgs),
    /// Measure the CPU an idle pool uses (workers sleep when there is nothing to steal).
    Idle(IdleArgs),
    /// Print the machine as magpie sees it: sockets, cores, last-level caches, NUMA nodes
    /// (restricted to this process's affinity mask and CPU quota), and the virtual topology
    /// MAGPIE_TOPOLOGY gives, if set. The first line names the detector: sysfs, or hwloc in a
    /// build with `--features hwloc`.
    Topology(TopologyArgs),
    /// Model the last-level cache misses of one kernel run under each victim-selection strategy,
    /// on a virtual topology: record what each leaf task read and wrote, and replay it through
    /// one LRU cache per socket (see docs/RESULTS.md: wall-clock locality gains need a multi-socket
    /// machine).
    Locality(LocalityArgs),
    /// Run one kernel once with steal-tree tracing and write the trace file; `trace export`
    /// turns a trace file into Perfetto JSON, Cilkscale-style CSV or an SVG timeline.
    Trace(TraceArgs),
    /// Schedules as data (Lifflander's thesis, Ch. 6): `schedule record` runs a kernel once
    /// and writes where its work moved between workers; `schedule follow` runs it again on that
    /// schedule under a constraint (ordered, unordered, relaxed); `schedule show` prints a file.
    Schedule(ScheduleArgs),
    /// The core allocation table that co-running magpie programs share (DWS): `share status`
    /// shows which program holds which core, and their heartbeats.
    Share(ShareArgs),
    /// Run two kernels as separate processes side by side, under each sharing mode (DWS §4):
    /// each program's mean time co-running against its mean time alone, and a plot of the cores
    /// each one held and used.
    Corun(CorunArgs),
    /// Data-effect splicing (Lifflander's thesis, Ch. 7): one stencil run with a window of time
    /// steps spliced (interleaved at run time from the rows each step declares) against the
    /// same steps one after another, and rayon running the suite's unspliced recursion; the
    /// spliced grid must equal the unspliced one bit for bit on every run.
    Splice(SpliceArgs),
    /// Determinacy-race detection (Lifflander's thesis §4.5.1): run a kernel whose tasks
    /// declare their accesses (heat, matmul, nbody, lu, nqueens) under the race checker, as
    /// written or with its planted race, and report every pair of tasks that may touch one
    /// location in parallel, whatever the schedule. Exit code 3 when a race is found, 0 when
    /// none.
    Race(RaceArgs),
    /// One program of `magpie corun` (internal): runs a kernel over and over on a pool built from
    /// the environment, printing one JSON line per run, until stdin closes.
    #[command(hide = true)]
    CorunChild(CorunChildArgs),
}

impl Command {
    /// `magpie suite` with every option at its default (what `magpie` alone runs).
    pub(crate) fn default_suite() -> Command {
        match Cli::parse_from(["magpie", "suite"]).command {
            Some(c) => c,
            None => unreachable!("`magpie suite` parses to a command"),
        }
    }

    /// Runs the command.
    pub(crate) fn run(self) -> Result<(), Failure> {
        match self {
            Command::Suite(a) => suite::run(a),
            Command::Bench(a) => bench::run(a),
            Command::Report(a) => report::run(a),
            Command::Idle(a) => idle::run(a),
            Command::Trace(a) => trace::run(a),
            Command::Schedule(a) => schedule::run(a),
            Command::Topology(a) => topology::run(a),
            Command::Locality(a) => locality::run(a),
            Command::Share(a) => share::run(a),
            Command::Corun(a) => corun::run(a),
            Command::Splice(a) => splice::run(a),
            Command::Race(a) => race::run(a),
            Command::CorunChild(a) => corun::child::run(a),
        }
    }
}
