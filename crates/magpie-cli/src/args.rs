//! The values the commands' arguments share, and their parsers, which turn a bad value into a
//! one-line error: kernel, policy, peer and worker lists, sizes, counts and durations, a co-run's
//! program (`KERNEL[:N[:GRAIN]]`), and the options of one kernel's run ([`RunOptions`]).

use crate::failure::Failure;
use crate::measure::run::{case_of, pool_builder};
use crate::model::corun::ProgramSpec;
use crate::model::peer_parts;
use clap::Args;
use magpie_bench::kernels;
use magpie_bench::runner::Case;
use magpie_bench::{Kernel, Peer, Size};

/// `KERNEL[:N[:GRAIN]]`; an empty N keeps the size preset's (`fib::15`).
pub(crate) fn parse_program(s: &str) -> Result<ProgramSpec, String> {
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

/// The kernels, what `n` means for each, and their default grains, for `magpie bench --help`.
pub(crate) fn kernels_help() -> String {
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

/// How one run of a kernel is set up: its input and its pool (`trace`, `schedule record`,
/// `schedule bench`).
#[derive(Args, Debug)]
pub(crate) struct RunOptions {
    /// Problem size (`magpie bench --help` says what it means for each kernel; default: from
    /// --size).
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
    /// The grain (cutoff) for kernels that have one: fib (below fib(G) serial; default: no
    /// cutoff), uts (chunks of G nodes; default: a task per node) and the others that `magpie
    /// bench --help` lists with a default grain.
    #[arg(long)]
    pub grain: Option<u64>,
    /// uts only: a named tree (T1, T3, T1L, T3L, T1XS, T3XS) or the standard parameters in
    /// quotes, e.g. "-t 1 -a 3 -d 10 -b 4 -r 19" [default: the T1 family at depth n].
    #[arg(long, value_parser = parse_tree, allow_hyphen_values = true)]
    pub tree: Option<kernels::uts::Params>,
    /// Most fibers (task stacks) alive at once in magpie's pool [magpie's default: 8192].
    #[arg(long, value_parser = parse_max_fibers)]
    pub max_fibers: Option<usize>,
    /// Bytes of stack per fiber in magpie's pool [magpie's default: 2 MiB; 65536 to 1073741824].
    #[arg(long, value_parser = parse_stack_size)]
    pub stack_size: Option<usize>,
    /// magpie's thieves take one item per steal instead of half of a victim's unpublished tasks
    /// (magpie's `steal_half(false)`), to measure what batches do.
    #[arg(long)]
    pub steal_one: bool,
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

pub(crate) fn parse_kernel(s: &str) -> Result<Kernel, String> {
    s.parse()
}

pub(crate) fn parse_tree(s: &str) -> Result<kernels::uts::Params, String> {
    match kernels::uts::named(s.trim()) {
        Some(p) => Ok(p),
        None if s.trim_start().starts_with('-') => kernels::uts::Params::parse(s),
        None => Err(format!(
            "unknown tree `{s}`: expected T1, T3, T1L, T3L, T1XS, T3XS or parameters such as \
             \"-t 1 -a 3 -d 10 -b 4 -r 19\""
        )),
    }
}

pub(crate) fn parse_size(s: &str) -> Result<Size, String> {
    s.parse()
}

pub(crate) fn parse_policy(s: &str) -> Result<magpie::Policy, String> {
    s.parse().map_err(|e: magpie::Error| e.to_string())
}

pub(crate) fn parse_workers(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of workers ≥ 1".into()),
    }
}

pub(crate) fn parse_max_fibers(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of fibers ≥ 1".into()),
    }
}

pub(crate) fn parse_stack_size(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (64 << 10..=1 << 30).contains(&n) => Ok(n),
        _ => Err("expected a stack size in bytes between 65536 and 1073741824".into()),
    }
}

pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 3600.0 => Ok(x),
        _ => Err("expected a number of seconds in (0, 3600]".into()),
    }
}

pub(crate) fn parse_min_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=3600.0).contains(&x) => Ok(x),
        _ => Err("expected a number of seconds in [0, 3600]".into()),
    }
}

pub(crate) fn parse_runs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of runs ≥ 1".into()),
    }
}

pub(crate) fn parse_workers_list(s: &str) -> Result<WorkersList, String> {
    let v = s
        .split(',')
        .map(parse_workers)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "expected comma-separated worker counts ≥ 1, like 1,2".to_string())?;
    Ok(WorkersList(v))
}

pub(crate) fn push_new<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

pub(crate) fn parse_kernel_list(s: &str) -> Result<KernelList, String> {
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

pub(crate) const POLICY_NAMES: &str = "work-first, help-first, adaptive";

pub(crate) fn parse_policy_list(s: &str) -> Result<PolicyList, String> {
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

pub(crate) fn parse_peer_list(s: &str) -> Result<PeerList, String> {
    let all = crate::model::all_peers();
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

pub(crate) fn parse_suite_workers(s: &str) -> Result<WorkersList, String> {
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

impl RunOptions {
    /// The pool these options describe, over the environment's settings (`MAGPIE_*`).
    pub(crate) fn pool(&self) -> Result<magpie::Builder, Failure> {
        pool_builder(
            self.workers,
            self.policy,
            self.stack_size,
            self.max_fibers,
            self.steal_one,
        )
    }

    /// The run of `kernel` these options describe, checked.
    pub(crate) fn case(&self, kernel: Kernel) -> Result<Case, Failure> {
        case_of(kernel, self.n, self.size, self.grain, self.tree)
    }
}
