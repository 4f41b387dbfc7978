//! A pool's configuration: the settings `pool::Builder` validated, read by every part of the
//! runtime through the registry (`registry.config`) and never changed while the pool lives.

use crate::policy::{Policy, Thresholds};

/// A pool's settings, validated by the builder.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub workers: usize,
    /// The workers' thread names, one per worker (`ThreadPoolBuilder::thread_name`); `None`:
    /// `magpie-<index>`.
    pub thread_names: Option<Vec<String>>,
    pub policy: Policy,
    pub thresholds: Thresholds,
    pub stack_size: usize,
    pub max_fibers: usize,
    /// Whether workers time the costs of steals (`Builder::measure_overheads`).
    pub overheads: bool,
    /// Whether a thief's request is answered with a batch (`Builder::steal_half`).
    pub steal_half: bool,
    /// Whether a worker publishes its oldest pending in-place join half rather than the join it
    /// is making (`Builder::oldest_first`).
    pub oldest_first: bool,
    /// Whether workers record a steal tree (`Builder::trace`).
    pub trace: bool,
    /// Per worker, the CPU it is pinned to (`Builder::pin`: the topology's core of that index);
    /// `None`: workers run where the OS puts them.
    pub pin_cpus: Option<Vec<usize>>,
    /// Per worker, its `(socket, NUMA node)` in the pool's topology, from which a worker
    /// orders its victims nearest first (`Builder::victims(Victims::Numa)`); `None`: random
    /// victims.
    pub numa_locations: Option<Vec<(usize, usize)>>,
    /// CAB's squads (`Builder::squads`): places whose mailboxes are inter-socket task pools,
    /// served by each squad's head worker one task at a time.
    pub squads: bool,
    /// Whether `Scope::inter_spawn_at` honours its squad (`Builder::squad_hints`).
    pub squad_hints: bool,
    /// A boundary level that overrides Eq. 4 (`Builder::boundary_level`).
    pub boundary_level: Option<u32>,
    /// Whether an idle worker yields its core after every failed steal round and never blocks
    /// (ABP's thieves: `Builder::share(SharingMode::Abp)`).
    pub never_block: bool,
    /// Whether a started task's stack may move to another worker (`Builder::allow_migration`,
    /// an `unsafe` opt-in): ready fibers go on the setter's deque and work-first parents are
    /// published as stealable continuations, as in SLAW. Off: every fiber is resumed by its home.
    pub migrate: bool,
    /// Whether worker 0 is the thread that built the pool (`Builder::use_current_thread`,
    /// `caller_worker.rs`) rather than a thread of the pool's own.
    pub lent: bool,
}
