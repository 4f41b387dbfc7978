//! The command line of `magpie` (clap derive): `suite` (also what `magpie` alone runs), `bench`,
//! `report`, `idle`, `topology`, `locality`, `trace`, `schedule`, `share` and `corun`, and the
//! parsers that
//! turn bad values into one-line errors.

use crate::measure::dist::{parse_dist, DistSpec};
use crate::measure::locality::{
    parse_strategies, Strategies, DEFAULT_PACE_US_PER_MIB, DEFAULT_STRATEGIES,
};
use crate::model::peer_parts;
use clap::{Args, Parser, Subcommand};
use magpie_bench::kernels;
use magpie_bench::{Kernel, Peer, Size};
use std::path::PathBuf;

/// The burden (µs) `trace export --format csv` adds to a span for each steal edge on its path:
/// an estimate of what migrating work to another worker costs (a steal's synchronisation, the
/// cache misses of running the task's data on another core). OpenCilk's Cilkscale uses a burden of
/// the same order (about 15,000 instructions per spawn's continuation).
pub(crate) const BURDEN_US: f64 = 15.0;

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
}

#[derive(Args, Debug)]
pub(crate) struct RaceArgs {
    /// The kernel: heat, matmul, nbody, lu or nqueens.
    #[arg(value_parser = parse_race_kernel)]
    pub kernel: magpie_bench::races::Facet,
    /// Problem size (default: the kernel's small checking size; every access is checked).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub n: Option<u64>,
    /// Workers of the checked pool, comma-separated for several runs (e.g. 1,2,16).
    #[arg(long, default_value = "2", value_parser = parse_workers_list)]
    pub workers: WorkersList,
    /// Declare the kernel's planted race (a bug of its kind: see the kernel's docs).
    #[arg(long)]
    pub plant: bool,
    /// The lowest-common-ancestor search: phases (the thesis's, from the steal tree's working
    /// phases) or plain (parent by parent).
    #[arg(long, default_value = "phases", value_parser = parse_search)]
    pub search: magpie::race::dpst::Search,
    /// Run both searches on every query, check that they agree, and report each one's tree
    /// traversals and the share the phase search saved (the thesis's Fig. 4.9).
    #[arg(long)]
    pub compare: bool,
    /// Also time the same run on a pool that does not check (the median of 3) and report the
    /// checker's slowdown against it.
    #[arg(long)]
    pub slowdown: bool,
    /// One JSON object per run instead of the report.
    #[arg(long)]
    pub json: bool,
}

fn parse_race_kernel(s: &str) -> Result<magpie_bench::races::Facet, String> {
    match s.parse::<Kernel>().ok().and_then(Kernel::race) {
        Some(f) => Ok(f),
        None => {
            let raced: Vec<&str> = Kernel::ALL
                .iter()
                .copied()
                .filter(|k| k.race().is_some())
                .map(Kernel::name)
                .collect();
            Err(format!(
                "unknown kernel `{s}` for race: expected one of {}",
                raced.join(", ")
            ))
        }
    }
}

fn parse_search(s: &str) -> Result<magpie::race::dpst::Search, String> {
    match s {
        "phases" => Ok(magpie::race::dpst::Search::Phases),
        "plain" => Ok(magpie::race::dpst::Search::Plain),
        _ => Err(format!("unknown search `{s}`: expected phases or plain")),
    }
}

#[derive(Args, Debug)]
pub(crate) struct LocalityArgs {
    /// The kernel (one whose leaf tasks declare their accesses: heat, fdtd-2d, floyd-warshall,
    /// cg, prefix-scan, sor, ge, mergesort).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    /// Problem size (default: from --size).
    #[arg(long)]
    pub n: Option<u64>,
    /// ci, default or paper: the size used when --n is not given.
    #[arg(long, default_value = "ci", value_parser = parse_size)]
    pub size: Size,
    /// The kernel's grain (default: the kernel's).
    #[arg(long)]
    pub grain: Option<u64>,
    /// Spawning policy (default: the pool's, adaptive).
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<magpie::Policy>,
    /// The modelled machine, SOCKETSxCORES:LLC; the pool gets one worker per core.
    #[arg(long, default_value = "4x4:6MiB")]
    pub topology: String,
    /// Strategies to compare, comma-separated: random (victims at random), numa (nearest
    /// victims first), places (SLAW's places, one per socket, with the kernel's hints; no
    /// cross-place stealing), places-cross (the same with cross-place stealing), cab (CAB's
    /// squads, the work split across squads down to Eq. 4's boundary level, each inter-socket
    /// task sent to the squad it names), cab-paper (the same, each inter-socket task left in its
    /// spawner's squad's pool, as in CAB's paper); for the kernels with a first-touch
    /// initialiser (heat, fdtd-2d, floyd-warshall, cg, prefix-scan) also relws (the thesis's
    /// §6.4 loop: Relaxed iterations re-placing the data until the schedule is stable, then
    /// Ordered), stows (the initialiser's schedule followed Ordered) and user (a user-specified
    /// halving partition, Unordered).
    #[arg(long, default_value = DEFAULT_STRATEGIES, value_parser = parse_strategies)]
    pub strategies: Strategies,
    /// For the kernels with a first-touch initialiser: iterations to run (default: the
    /// kernel's; floyd-warshall's is n).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub iterations: Option<u64>,
    /// With relws: percent of the template's cuts pruned before each relaxed iteration.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub prune: u32,
    /// With cab: use this boundary level instead of Eq. 4's (to sweep it).
    #[arg(long)]
    pub boundary_level: Option<u32>,
    /// Cache line size in bytes.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub line: u64,
    /// Runs per strategy; the misses reported are the median run's.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=101))]
    pub runs: u64,
    /// Each leaf also holds its worker, asleep, this many microseconds per MiB it touches, so
    /// that all the modelled cores' workers run side by side even on a machine with fewer cores
    /// (0: not at all; then the schedule is whatever the real cores allowed).
    #[arg(long, default_value_t = DEFAULT_PACE_US_PER_MIB, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub pace_us_per_mib: u64,
    /// One JSON array, one object per strategy, instead of a table.
    #[arg(long)]
    pub json: bool,
}

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

/// `magpie splice`.
#[derive(Args, Debug)]
pub(crate) struct SpliceArgs {
    /// heat, jacobi, fdtd-2d (the suite's kernels) or seidel-2d (in place).
    #[arg(value_parser = ["heat", "jacobi", "fdtd-2d", "seidel-2d"])]
    pub kernel: String,
    /// Grid side.
    #[arg(long, default_value_t = 1024, value_parser = parse_splice_n)]
    pub n: usize,
    /// Time steps [default: the suite's: heat 20, jacobi 10, fdtd-2d 100; seidel-2d 20].
    #[arg(long, value_parser = parse_positive)]
    pub steps: Option<usize>,
    /// Time steps spliced together (1: unspliced).
    #[arg(long, default_value_t = 8, value_parser = parse_positive)]
    pub window: usize,
    /// Rows per step (the leaves of the row-halving recursion) [default: 8192 / n, at least 2:
    /// small blocks keep a window's band of rows in the cache (2 rows was the best at n = 4096
    /// here), and a step of about 8192 points keeps the scheduler's cost per step small where
    /// the grid fits in the cache anyway (scripts/splice-sweep.sh)].
    #[arg(long, value_parser = parse_positive)]
    pub grain: Option<usize>,
    /// Step pipelining: run each step in parts of this many rows, the window's phases taking
    /// turns a part at a time (0: whole steps). For the spliced walk (`--workers 1`); the
    /// dependence graph runs steps whole. With large steps (`--grain 16` and up) it keeps the
    /// band of rows small at a fraction of the steps' scheduling cost.
    #[arg(long, default_value_t = 0, value_parser = parse_slice)]
    pub slice: usize,
    /// Workers: 1 runs the spliced walk on one thread, more the dependence graph on a pool.
    #[arg(long, default_value_t = 1, value_parser = parse_workers)]
    pub workers: usize,
    /// Timed runs of each version (medians are reported).
    #[arg(long, default_value_t = 3, value_parser = parse_positive)]
    pub runs: usize,
    /// Run one version only, once, and print its time and checksum (for a profiler such as
    /// cachegrind; nothing to compare against in-process, so compare the two checksums);
    /// `setup` builds the grids and takes their checksum without running a step (what a
    /// profile of either version includes besides the steps).
    #[arg(long, value_parser = ["spliced", "unspliced", "setup"])]
    pub only: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_slice(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n <= 1_000_000 => Ok(n),
        _ => Err("expected rows per part, a whole number from 0 (whole steps) to 1000000".into()),
    }
}

fn parse_positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err("expected a whole number from 1 to 1000000".into()),
    }
}

fn parse_splice_n(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (3..=16384).contains(&n) => Ok(n),
        _ => Err("expected a grid side from 3 to 16384".into()),
    }
}

/// `magpie share status`.
#[derive(Args, Debug)]
pub(crate) struct ShareStatusArgs {
    /// The table file to read [default: MAGPIE_SHARE_TABLE if set, else
    /// $XDG_RUNTIME_DIR/magpie-cores if that is your directory, else /dev/shm/magpie-cores-<uid>].
    #[arg(long)]
    pub table: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One program of `magpie corun`: a kernel, its size (`None`: from `--size`) and its grain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ProgramSpec {
    pub kernel: Kernel,
    pub n: Option<u64>,
    pub grain: Option<u64>,
}

/// `KERNEL[:N[:GRAIN]]`; an empty N keeps the size preset's (`fib::15`).
fn parse_program(s: &str) -> Result<ProgramSpec, String> {
    let mut parts = s.trim().split(':');
    let kernel = parse_kernel(parts.next().unwrap_or(""))?;
    let number = |what: &str, v: Option<&str>| -> Result<Option<u64>, String> {
        match v.map(str::trim) {
            None | Some("") => Ok(None),
            Some(v) => v.parse::<u64>().map(Some).map_err(|_| {
                format!("bad {what} `{v}` in `{s}`: expected KERNEL[:N[:GRAIN]], e.g. fib:30:15")
            }),
        }
    };
    let n = number("size", parts.next())?;
    let grain = number("grain", parts.next())?;
    if parts.next().is_some() {
        return Err(format!(
            "too many `:` in `{s}`: expected KERNEL[:N[:GRAIN]], e.g. fib:30:15"
        ));
    }
    Ok(ProgramSpec { kernel, n, grain })
}

/// Sharing modes, in the order given, without repeats.
#[derive(Clone, Debug)]
pub(crate) struct ModeList(pub Vec<magpie::dws::SharingMode>);

fn parse_mode_list(s: &str) -> Result<ModeList, String> {
    let mut v = vec![];
    for m in s.split(',') {
        push_new(&mut v, m.parse::<magpie::dws::SharingMode>()?);
    }
    Ok(ModeList(v))
}

fn corun_help() -> String {
    format!(
        "Method (DWS §4, Fig. 3): for each mode, each program first runs alone for --solo-runs \
         runs; then both start together, each running its kernel over and over, until each has \
         completed at least --runs runs and at least --min-seconds have passed; then both are \
         killed at once, and the run each was in the middle of is discarded. Every counted run \
         thus ran while the other program was running too.\n\n\
         Each program is this binary in a process of its own (`magpie corun-child`), on a pool \
         of --workers workers built as `magpie bench` builds one (the MAGPIE_* variables apply), \
         with MAGPIE_SHARE set to the mode and MAGPIE_SHARE_TABLE to a fresh core table in a \
         private directory that corun creates (mode 0700) and removes at the end, so a table \
         left by other programs plays no part. Each run's result is verified; before its timed \
         runs each program does one verified warm-up run, untimed.\n\n\
         Columns: solo s = the mean time of a run alone; co-run s = the mean time of a run while \
         co-running (T_i of the paper's Eq. 2); runs = the runs counted co-running; slower = \
         co-run s ÷ solo s (`slowdown` in --json); combined = the sum of both programs' \
         slowdowns (2.00× = no interference).\n\n\
         While co-running, every --sample-ms corun records the cores each program holds in the \
         core table (only dws and ep hold cores) and the cores it uses (CPU time of all its \
         threads from /proc/<pid>/task/*/schedstat over wall time); --out DIR writes them with \
         the results to DIR/corun.json and plots them in DIR/index.html.\n\n\
         Example:\n  magpie corun fib::15 sort --mode dws,off --out corun-report\n\n{}",
        kernels_help()
    )
}

/// `magpie corun`.
#[derive(Args, Debug)]
#[command(after_long_help = corun_help())]
pub(crate) struct CorunArgs {
    /// The first program: KERNEL[:N[:GRAIN]], e.g. fib, fib:30, fib:30:15 or fib::15 (N from
    /// --size; `--help` lists the kernels, what N means and their grains).
    #[arg(value_parser = parse_program)]
    pub a: ProgramSpec,
    /// The second program, the same way.
    #[arg(value_parser = parse_program)]
    pub b: ProgramSpec,
    /// Sharing modes to compare, comma-separated: dws, abp, ep, off.
    #[arg(long, default_value = "dws,abp,ep,off", value_parser = parse_mode_list)]
    pub mode: ModeList,
    /// Size preset for the N not given: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Worker threads of each program's pool.
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Runs of each program alone, per mode (their mean is solo s).
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub solo_runs: usize,
    /// The co-run lasts until each program has completed at least this many runs ...
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// ... and at least this many seconds have passed since both started.
    #[arg(long, default_value_t = 1.0, value_parser = parse_min_seconds)]
    pub min_seconds: f64,
    /// Milliseconds between two samples of the cores held and used.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub sample_ms: u64,
    /// A phase (a program alone, or the co-run) that takes longer than this many seconds is
    /// stopped and reported as an error.
    #[arg(long, default_value_t = 600.0, value_parser = parse_seconds)]
    pub timeout: f64,
    /// Print one JSON array, one object per mode, instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write DIR/corun.json (the results and the samples) and DIR/index.html (a plot per mode)
    /// [default: no report folder].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `magpie corun-child`: one program of a co-run (see `corun::child`).
#[derive(Args, Debug)]
pub(crate) struct CorunChildArgs {
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    #[arg(long)]
    pub n: u64,
    #[arg(long)]
    pub grain: Option<u64>,
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Exit after this many timed runs (default: run until stdin closes).
    #[arg(long, value_parser = parse_runs)]
    pub max_runs: Option<usize>,
}

#[derive(Args, Debug)]
pub(crate) struct IdleArgs {
    /// Worker threads in the idle pool.
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Seconds to watch the idle pool.
    #[arg(long, default_value_t = 1.0, value_parser = parse_seconds)]
    pub seconds: f64,
    /// The pool's core-sharing mode: dws, abp, ep or off (dws and ep use the core table that
    /// MAGPIE_SHARE_TABLE names, else the user's default one).
    #[arg(long, default_value = "off")]
    pub share: magpie::dws::SharingMode,
    /// Print one JSON object instead of a line.
    #[arg(long)]
    pub json: bool,
}

/// The kernels, what `n` means for each, and their default grains, for `magpie bench --help`.
fn kernels_help() -> String {
    let mut s = String::from("Kernels (n: what it means; grain: the default):\n");
    for k in Kernel::ALL {
        let grain = match (k.default_grain(), k.grain_meaning()) {
            (Some(g), Some(meaning)) => format!("; grain {g} ({meaning})"),
            (None, Some(meaning)) => format!("; grain: none by default (G: {meaning})"),
            _ => String::new(),
        };
        s.push_str(&format!("  {:<17} n: {}{grain}\n", k.name(), k.n_meaning()));
    }
    s
}

#[derive(Args, Debug)]
#[command(after_long_help = kernels_help())]
pub(crate) struct BenchArgs {
    /// CAB's squads, one per socket of the machine (on one socket: plain work stealing through
    /// the squad code, to measure its overhead).
    #[arg(long)]
    pub squads: bool,
    /// The kernel (`--help` lists them all).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    /// Problem size (`--help` says what it means for each kernel; default: from --size).
    #[arg(long)]
    pub n: Option<u64>,
    /// Worker threads (default: MAGPIE_WORKERS, else available parallelism).
    #[arg(long, value_parser = parse_workers)]
    pub workers: Option<usize>,
    /// work-first, help-first or adaptive (default: MAGPIE_POLICY, else adaptive).
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<magpie::Policy>,
    /// Timed runs of each version.
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// Print exactly one JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Size preset for n: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Time the peers too (the default, for fib and fj).
    #[arg(long, overrides_with = "no_peers")]
    pub peers: bool,
    /// Do not time the peers.
    #[arg(long, overrides_with = "peers")]
    pub no_peers: bool,
    /// Do not time the serial twin (no ratio to serial).
    #[arg(long)]
    pub no_serial: bool,
    /// Most fibers (task stacks) alive at once in magpie's pool [magpie's default: 8192].
    #[arg(long, value_parser = parse_max_fibers)]
    pub max_fibers: Option<usize>,
    /// Bytes of stack per fiber in magpie's pool [magpie's default: 2 MiB; 65536 to 1073741824].
    #[arg(long, value_parser = parse_stack_size)]
    pub stack_size: Option<usize>,
    /// The grain (cutoff) for kernels that have one: fib (below fib(G) serial; default: no
    /// cutoff), uts (chunks of G nodes; default: a task per node) and the others that `--help`
    /// lists with a default grain.
    #[arg(long)]
    pub grain: Option<u64>,
    /// Time what steals cost (magpie's `measure_overheads`): the victims' time lost to steals and
    /// the thieves' time per steal, as shares of workers × run time.
    #[arg(long)]
    pub overheads: bool,
    /// magpie's thieves take one item per steal instead of half of a victim's unpublished tasks
    /// (magpie's `steal_half(false)`), to measure what batches do.
    #[arg(long)]
    pub steal_one: bool,
    /// uts only: a named tree (T1, T3, T1L, T3L, T1XS, T3XS) or the standard parameters in
    /// quotes, e.g. "-t 1 -a 3 -d 10 -b 4 -r 19" [default: the T1 family at depth n].
    #[arg(long, value_parser = parse_tree, allow_hyphen_values = true)]
    pub tree: Option<kernels::uts::Params>,
    /// The folder of the two builds that run the rayon programs, `magpie` (rayon on magpie's
    /// rayon-core) and `rayon` (on its own), made by scripts/build-rayon-compare.sh [default:
    /// target/rayon-compare/workspace, or .../dev for a debug magpie].
    #[arg(long, value_name = "DIR")]
    pub rayon_builds: Option<PathBuf>,
}

/// `magpie trace`: either a kernel to run traced, or one of the commands that read a trace file.
#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_long_help = trace_help()
)]
pub(crate) struct TraceArgs {
    #[command(subcommand)]
    pub action: Option<TraceAction>,
    #[command(flatten)]
    pub run: TraceRunArgs,
}

fn trace_help() -> String {
    format!(
        "Examples:\n  \
         magpie trace fib --size ci --workers 2 -o fib.mtrace\n  \
         magpie trace export fib.mtrace --format perfetto -o fib.json   (open in ui.perfetto.dev)\n  \
         magpie trace export fib.mtrace --format csv                    (work, span, parallelism)\n  \
         magpie trace export fib.mtrace --format svg -o fib.svg         (per-worker timeline)\n  \
         magpie trace summary fib.mtrace\n\n{}",
        kernels_help()
    )
}

/// The commands that read a trace file.
#[derive(Subcommand, Debug)]
pub(crate) enum TraceAction {
    /// Convert a trace file: Perfetto / chrome://tracing JSON, Cilkscale-style CSV (work, span,
    /// parallelism per install region) or an SVG timeline with a utilisation curve.
    Export(ExportArgs),
    /// Print a trace file's summary (workers, phases, steals, storage per worker).
    Summary(SummaryArgs),
}

/// How one run of a kernel is set up: its input and its pool (`trace`, `schedule record`,
/// `schedule bench`).
#[derive(Args, Debug)]
pub(crate) struct RunOptions {
    /// Problem size (default: from --size).
    #[arg(long)]
    pub n: Option<u64>,
    /// Worker threads (default: MAGPIE_WORKERS, else available parallelism).
    #[arg(long, value_parser = parse_workers)]
    pub workers: Option<usize>,
    /// work-first, help-first or adaptive (default: MAGPIE_POLICY, else adaptive).
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<magpie::Policy>,
    /// Size preset for n: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// The grain (cutoff) for kernels that have one (see `magpie bench --help`).
    #[arg(long)]
    pub grain: Option<u64>,
    /// uts only: a named tree (T1, T3, T1L, T3L, T1XS, T3XS) or the standard parameters in
    /// quotes [default: the T1 family at depth n].
    #[arg(long, value_parser = parse_tree, allow_hyphen_values = true)]
    pub tree: Option<kernels::uts::Params>,
    /// Most fibers (task stacks) alive at once in magpie's pool [magpie's default: 8192].
    #[arg(long, value_parser = parse_max_fibers)]
    pub max_fibers: Option<usize>,
    /// Bytes of stack per fiber in magpie's pool [magpie's default: 2 MiB; 65536 to 1073741824].
    #[arg(long, value_parser = parse_stack_size)]
    pub stack_size: Option<usize>,
    /// Thieves take one item per steal instead of half of a victim's unpublished tasks.
    #[arg(long)]
    pub steal_one: bool,
}

/// `magpie trace <kernel>`: one traced run.
#[derive(Args, Debug)]
pub(crate) struct TraceRunArgs {
    /// The kernel (`magpie bench --help` lists them all).
    #[arg(value_parser = parse_kernel, required = true)]
    pub kernel: Option<Kernel>,
    /// Where to write the trace file [default: <kernel>.mtrace].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub opts: RunOptions,
    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `magpie schedule`: record, follow and show schedules.
#[derive(Args, Debug)]
#[command(
    arg_required_else_help = true,
    after_long_help = "Examples:\n  \
        magpie schedule record heat --size ci --workers 2 -o heat.msched\n  \
        magpie schedule follow heat.msched --constraint relaxed -o heat2.msched\n  \
        magpie schedule show heat.msched --json"
)]
pub(crate) struct ScheduleArgs {
    #[command(subcommand)]
    pub action: ScheduleAction,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ScheduleAction {
    /// Run a kernel once as a recorded region (verified) and write the schedule it took.
    Record(ScheduleRecordArgs),
    /// Run the kernel a schedule file was recorded on again, following it (verified); print the
    /// deviations and the share of its cuts that ran on their recorded worker.
    Follow(ScheduleFollowArgs),
    /// Print a schedule file: workers, cuts per worker, depth, bytes, note and every cut.
    Show(ScheduleShowArgs),
    /// What following costs on a kernel: plain stealing, recording, and each constraint on the
    /// schedule the record/relax loop settled on; medians of interleaved verified runs.
    Bench(ScheduleBenchArgs),
}

/// `magpie schedule bench <kernel>`.
#[derive(Args, Debug)]
pub(crate) struct ScheduleBenchArgs {
    /// The kernel (`magpie bench --help` lists them all).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    #[command(flatten)]
    pub opts: RunOptions,
    /// Runs per mode (at least 1).
    #[arg(long, default_value = "7", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Iterations of the record/relax/follow loop that settles the template (each reported).
    #[arg(long, default_value = "10", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub iterations: u32,
    /// Percent of the cuts the relaxed iterations prune from their template (0 to 100).
    #[arg(long, default_value = "0", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub prune: u32,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `magpie schedule record <kernel>`.
#[derive(Args, Debug)]
pub(crate) struct ScheduleRecordArgs {
    /// The kernel (`magpie bench --help` lists them all).
    #[arg(value_parser = parse_kernel)]
    pub kernel: Kernel,
    /// Where to write the schedule [default: <kernel>.msched].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub opts: RunOptions,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `magpie schedule follow <file>`.
#[derive(Args, Debug)]
pub(crate) struct ScheduleFollowArgs {
    /// A schedule file written by `magpie schedule record` (or by `follow -o`).
    pub schedule: PathBuf,
    /// ordered (StOWS), unordered (StUWS) or relaxed (RelWS).
    #[arg(long, value_parser = parse_constraint)]
    pub constraint: magpie::schedule::Constraint,
    /// Worker threads [default: the schedule's; other counts follow it remapped].
    #[arg(long, value_parser = parse_workers)]
    pub workers: Option<usize>,
    /// Spawning policy [default: the one recorded].
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<magpie::Policy>,
    /// Write the schedule this run took here (the template of a next iteration).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Most fibers (task stacks) alive at once [magpie's default: 8192].
    #[arg(long, value_parser = parse_max_fibers)]
    pub max_fibers: Option<usize>,
    /// Bytes of stack per fiber [magpie's default: 2 MiB].
    #[arg(long, value_parser = parse_stack_size)]
    pub stack_size: Option<usize>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `magpie schedule show <file>`.
#[derive(Args, Debug)]
pub(crate) struct ScheduleShowArgs {
    /// A schedule file.
    pub schedule: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_constraint(s: &str) -> Result<magpie::schedule::Constraint, String> {
    s.parse()
}

/// What `magpie trace export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Chrome trace-event JSON for Perfetto and chrome://tracing.
    Perfetto,
    /// OpenCilk Cilkscale's CSV columns.
    Csv,
    /// A hand-drawn SVG timeline.
    Svg,
}

fn parse_format(s: &str) -> Result<Format, String> {
    match s.trim() {
        "perfetto" | "json" | "chrome" => Ok(Format::Perfetto),
        "csv" | "cilkscale" => Ok(Format::Csv),
        "svg" => Ok(Format::Svg),
        other => Err(format!(
            "unknown format `{other}`: expected perfetto, csv or svg"
        )),
    }
}

fn parse_burden(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=1e6).contains(&x) => Ok(x),
        _ => Err("expected a burden in microseconds between 0 and 1000000".into()),
    }
}

/// `magpie trace export`.
#[derive(Args, Debug)]
#[command(
    after_long_help = "The csv columns are OpenCilk Cilkscale's, one row per install \
    region (install-N) and an overall row with an empty tag. work = the time workers spent running \
    the region's phases. span = the heaviest path through the observed steal tree, each phase a \
    serial strand weighing its busy time, a thief's path counting its victim's busy time up to \
    the steal: an estimate at the granularity of phases that depends on the schedule, not \
    Cilkscale's per-task DAG span. burdened span = the same path plus --burden-us (default 15 \
    µs) per steal edge on it, an estimate of what a migration costs. parallelism = work / span."
)]
pub(crate) struct ExportArgs {
    /// The trace file (written by `magpie trace <kernel>` or by a pool with MAGPIE_TRACE set).
    pub trace: PathBuf,
    /// perfetto (Chrome trace-event JSON: one track per worker, a slice per segment, a flow
    /// arrow per steal), csv (Cilkscale's columns: work, span, parallelism, burdened span and
    /// burdened parallelism per install region and overall) or svg (per-worker timeline and
    /// utilisation curve).
    #[arg(long, default_value = "perfetto", value_parser = parse_format)]
    pub format: Format,
    /// Where to write it [default: stdout].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// csv only: the burden added to the span for each steal edge on a path, in microseconds
    /// (an estimate of what migrating a task to another worker costs; Cilkscale's burden is of
    /// the same order).
    #[arg(long, default_value_t = BURDEN_US, value_parser = parse_burden)]
    pub burden_us: f64,
}

/// `magpie trace summary`.
#[derive(Args, Debug)]
pub(crate) struct SummaryArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Worker counts to measure, comma-separated.
    #[arg(long, default_value = "1,2", value_parser = parse_workers_list)]
    pub workers_list: WorkersList,
    /// Timed runs of each configuration.
    #[arg(long, default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// Size preset: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Where to write the Markdown report (it is also printed on stdout).
    #[arg(long, default_value = "target/magpie-report.md")]
    pub out: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct SuiteArgs {
    /// Kernels, comma-separated (`magpie bench --help` lists them all) [default: all].
    #[arg(long, value_parser = parse_kernel_list)]
    pub kernels: Option<KernelList>,
    /// magpie policies, comma-separated: work-first, help-first, adaptive [default: all three].
    #[arg(long, value_parser = parse_policy_list)]
    pub policies: Option<PolicyList>,
    /// Worker counts, comma-separated, 1 to 4096 [default: 1 and the available parallelism].
    #[arg(long, value_parser = parse_suite_workers)]
    pub workers: Option<WorkersList>,
    /// Peers, comma-separated: rayon, chili, tbb, openmp (or a variant: rayon-join, rayon-scope,
    /// rayon-iter, chili-join, tbb-task-group, openmp-task), or none [default: all].
    #[arg(long, value_parser = parse_peer_list)]
    pub peers: Option<PeerList>,
    /// Size preset: ci, default or paper.
    #[arg(long, default_value = "default", value_parser = parse_size)]
    pub size: Size,
    /// Timed runs of each configuration (the median is reported). Three keeps the whole suite
    /// under 10 minutes on 2 cores; use 5 or more for figures you publish.
    #[arg(long, default_value_t = 3, value_parser = parse_runs)]
    pub runs: usize,
    /// Print results.json on stdout instead of the table (the report folder is still written).
    #[arg(long)]
    pub json: bool,
    /// The report folder (results.json and index.html; while the suite runs, results.partial.json
    /// holds the kernels finished so far, so a suite stopped part-way keeps them).
    #[arg(long, default_value = "magpie-report")]
    pub out: PathBuf,
    /// Kernels to trace, comma-separated: each runs once more, traced, at the highest worker
    /// count of the suite (adaptive, or the first policy selected), and index.html shows its
    /// per-worker timeline; the trace files go to <out>/traces/ [default: none].
    #[arg(long, value_parser = parse_kernel_list)]
    pub trace: Option<KernelList>,
    /// Kernels whose cache misses to model under each locality strategy, as `magpie locality`
    /// does: each runs at the suite's size on a pool shaped like --locality-topology, once per
    /// timed run and strategy, and index.html tables the modelled misses. Only kernels that
    /// declare their leaves' accesses can be modelled (heat, sor, ge, mergesort) [default: none].
    #[arg(long, value_parser = parse_kernel_list)]
    pub locality: Option<KernelList>,
    /// The virtual machine of --locality, SOCKETSxCORES:LLC.
    #[arg(long, default_value = "4x4:6MiB")]
    pub locality_topology: String,
    /// Also run the stencils among the kernels (heat, jacobi, fdtd-2d) spliced against the same
    /// steps unspliced (`magpie splice`, window 8, the suite's size and step count) at each
    /// worker count; the table and index.html show them beside the others.
    #[arg(long)]
    pub splice: bool,
    /// Also co-run two programs, A,B (each KERNEL[:N[:GRAIN]], as `magpie corun` takes them),
    /// as `magpie corun A B` does under every sharing mode (dws, abp, ep, off): each program with
    /// the suite's highest worker count, at the suite's size, each alone and co-running for the
    /// suite's runs (and at least a second); the table and index.html show the slowdowns and the
    /// cores each program held and used [default: none].
    #[arg(long, value_name = "A,B", value_parser = parse_program_pair)]
    pub corun: Option<ProgramPair>,
    /// Also simulate magpie-dist's task collections (thesis Ch. 5) on a synthetic kernel, hf or
    /// tce (KERNEL[:N], N × N tasks): every strategy (no balancing, stealing, retentive
    /// stealing, the two persistence-based balancers) at three rank counts for the suite's size
    /// (ci: 4 and 16; default: 16, 64, 256), four iterations each, in magpie-dist's simulator
    /// with this machine's MPI costs; the table and index.html show the efficiencies and the
    /// ranks' timelines [default: none].
    #[arg(long, value_name = "KERNEL", value_parser = parse_dist)]
    pub dist: Option<DistSpec>,
    /// The folder of the two builds that run the rayon programs, `magpie` (rayon on magpie's
    /// rayon-core) and `rayon` (on its own), made by scripts/build-rayon-compare.sh [default:
    /// target/rayon-compare/workspace, or .../dev for a debug magpie].
    #[arg(long, value_name = "DIR")]
    pub rayon_builds: Option<PathBuf>,
}

/// The two programs of `magpie suite --corun A,B`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ProgramPair(pub ProgramSpec, pub ProgramSpec);

fn parse_program_pair(s: &str) -> Result<ProgramPair, String> {
    match s.split(',').collect::<Vec<_>>()[..] {
        [a, b] => Ok(ProgramPair(parse_program(a)?, parse_program(b)?)),
        _ => Err(format!(
            "`{s}`: expected two programs separated by a comma, A,B (each KERNEL[:N[:GRAIN]]), \
             e.g. fib,nqueens or fib:30,uts"
        )),
    }
}

impl std::fmt::Display for ProgramSpec {
    /// As it is written on the command line: `fib`, `fib:30`, `fib:30:15`, `fib::15`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kernel)?;
        match (self.n, self.grain) {
            (None, None) => Ok(()),
            (Some(n), None) => write!(f, ":{n}"),
            (n, Some(g)) => write!(f, ":{}:{g}", n.map_or(String::new(), |n| n.to_string())),
        }
    }
}

/// A list of kernels, without repeats.
#[derive(Clone, Debug)]
pub(crate) struct KernelList(pub Vec<Kernel>);

/// A list of magpie policies, without repeats.
#[derive(Clone, Debug)]
pub(crate) struct PolicyList(pub Vec<magpie::Policy>);

/// A list of peer versions (empty for `none`), without repeats.
#[derive(Clone, Debug)]
pub(crate) struct PeerList(pub Vec<Peer>);

/// A list of worker counts.
#[derive(Clone, Debug)]
pub(crate) struct WorkersList(pub Vec<usize>);

fn parse_kernel(s: &str) -> Result<Kernel, String> {
    s.parse()
}

fn parse_tree(s: &str) -> Result<kernels::uts::Params, String> {
    match kernels::uts::named(s.trim()) {
        Some(p) => Ok(p),
        None if s.trim_start().starts_with('-') => kernels::uts::Params::parse(s),
        None => Err(format!(
            "unknown tree `{s}`: expected T1, T3, T1L, T3L, T1XS, T3XS or parameters such as \
             \"-t 1 -a 3 -d 10 -b 4 -r 19\""
        )),
    }
}

fn parse_size(s: &str) -> Result<Size, String> {
    s.parse()
}

fn parse_policy(s: &str) -> Result<magpie::Policy, String> {
    s.parse().map_err(|e: magpie::Error| e.to_string())
}

fn parse_workers(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of workers ≥ 1".into()),
    }
}

fn parse_max_fibers(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of fibers ≥ 1".into()),
    }
}

fn parse_stack_size(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (64 << 10..=1 << 30).contains(&n) => Ok(n),
        _ => Err("expected a stack size in bytes between 65536 and 1073741824".into()),
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 3600.0 => Ok(x),
        _ => Err("expected a number of seconds in (0, 3600]".into()),
    }
}

fn parse_min_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=3600.0).contains(&x) => Ok(x),
        _ => Err("expected a number of seconds in [0, 3600]".into()),
    }
}

fn parse_runs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of runs ≥ 1".into()),
    }
}

fn parse_workers_list(s: &str) -> Result<WorkersList, String> {
    let v = s
        .split(',')
        .map(parse_workers)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "expected comma-separated worker counts ≥ 1, like 1,2".to_string())?;
    Ok(WorkersList(v))
}

fn push_new<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

fn parse_kernel_list(s: &str) -> Result<KernelList, String> {
    let mut v = vec![];
    for name in s.split(',') {
        let name = name.trim();
        let k = name.parse::<Kernel>().map_err(|_| {
            let names: Vec<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
            format!(
                "unknown kernel `{name}`: expected a comma-separated list of {}",
                names.join(", ")
            )
        })?;
        push_new(&mut v, k);
    }
    Ok(KernelList(v))
}

const POLICY_NAMES: &str = "work-first, help-first, adaptive";

fn parse_policy_list(s: &str) -> Result<PolicyList, String> {
    let mut v = vec![];
    for p in s.split(',') {
        let p = p.trim();
        let policy = p.parse::<magpie::Policy>().map_err(|_| {
            format!("unknown policy `{p}`: expected a comma-separated list of {POLICY_NAMES}")
        })?;
        push_new(&mut v, policy);
    }
    Ok(PolicyList(v))
}

/// Every peer version some kernel has, in kernel order.
pub(crate) fn all_peers() -> Vec<Peer> {
    let mut v = vec![];
    for k in Kernel::ALL {
        for &p in k.peers() {
            push_new(&mut v, p);
        }
    }
    v
}

fn parse_peer_list(s: &str) -> Result<PeerList, String> {
    let all = all_peers();
    if s.trim() == "none" {
        return Ok(PeerList(vec![]));
    }
    let mut v = vec![];
    for name in s.split(',') {
        let name = name.trim();
        let found: Vec<Peer> = all
            .iter()
            .copied()
            .filter(|&p| p.name() == name || peer_parts(p).0 == name)
            .collect();
        if found.is_empty() {
            let mut valid: Vec<&str> = vec![];
            for &p in &all {
                push_new(&mut valid, peer_parts(p).0);
            }
            for &p in &all {
                push_new(&mut valid, p.name());
            }
            return Err(format!(
                "unknown peer `{name}`: expected a comma-separated list of {}, or none",
                valid.join(", ")
            ));
        }
        for p in found {
            push_new(&mut v, p);
        }
    }
    Ok(PeerList(v))
}

fn parse_suite_workers(s: &str) -> Result<WorkersList, String> {
    let mut v = vec![];
    for w in s.split(',') {
        match w.trim().parse::<usize>() {
            Ok(n) if (1..=4096).contains(&n) => push_new(&mut v, n),
            _ => {
                return Err(format!(
                    "invalid worker count `{}`: expected comma-separated worker counts \
                     between 1 and 4096, like 1,2",
                    w.trim()
                ))
            }
        }
    }
    v.sort_unstable();
    Ok(WorkersList(v))
}
