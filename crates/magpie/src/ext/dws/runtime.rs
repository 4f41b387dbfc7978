//! A pool's side of core sharing: DWS's worker sleep and coordinator (Chen et al., "DWS:
//! Demand-aware Work-Stealing in multi-programmed multi-core architectures", §3.1-§3.4), and the
//! equal-partition baseline (EP, §4). ABP, the other baseline, needs no table: its workers only
//! yield between failed steals (`idle.rs`).
//!
//! Under DWS each worker belongs to one core of the pool's (its affinity mask and CPU quota:
//! first its free home cores, then cores no other program holds, see [`place_workers`]) and is
//! pinned there; it runs only while its program holds that core in the [`CoreTable`]. A worker
//! that fails T_SLEEP steal attempts in a row gives its core back (when it was the program's
//! last worker on it) and sleeps; so does a worker whose core its home program took back.
//! Workers are woken on cores the program may use:
//!
//! * by a producer that publishes work while workers sleep, on a free core or one the program
//!   holds (the first case of §3.3, without waiting for the coordinator: an improvement on the
//!   paper that keeps a lone program's wake-ups as prompt as without sharing);
//! * by the coordinator, every T: with `N_b` tasks queued and `N_a` workers active it wakes
//!   `N_w = N_b / N_a` sleepers, first on free cores, then on its own home cores (its share of the
//!   equal split) that another program is using, never on another program's core that has not
//!   been released;
//! * and, should the program have queued work, no active worker and no core it may take (more
//!   programs than cores, or home cores outside its mask), by the coordinator on its own core
//!   without claiming it, so that no program ever starves.
//!
//! A ready fiber is delivered to its home worker's inbox (`inbox.rs`), and only that worker can
//! resume it, so a sleeper with a delivery must be woken itself, not some other sleeper: the
//! deliverer wakes it on a free or held core, or on one of the program's home cores that another
//! program uses ([`Sharing::wake_worker`]); failing both, the coordinator tries again every
//! period, and after two periods runs it as a guest on its own core, so a delivery is never
//! stranded.
//!
//! Programs start from the equal split: at start each claims its home cores (taking them back
//! if another program holds them) and its other workers sleep.
//!
//! Per core, the program's active workers that hold it are counted under a lock, so that the
//! table's slot is claimed by the first and released by the last of them.

use super::{home_range, CoreTable, ProgramId, SharingMode};
use crate::sleep::Sleep;
use crate::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicUsize, Ordering};
use crate::sync::{lock, CachePadded, Condvar, Mutex};
use std::ops::Range;
use std::time::Duration;

/// Ticks of the coordinator between looks at who is alive (stale holders, the equal split).
const REFRESH_TICKS: u64 = 10;

/// Which core each of a program's `workers` belongs to, as indices into its `k` allowed cores:
/// the cores in the order a worker should take them, worker `w` getting the `w % k`-th, so that
/// every core has `workers / k` workers or one more, as under any order.
///
/// The order matters when the program has fewer workers than cores, the usual case when several
/// programs each ask for part of a machine: its workers should sit where the others' do not.
/// First come its `home` cores (its share of the equal split) that no other program holds, then
/// the other cores no other program holds, then its home cores that others hold, then the rest;
/// within each group the cores are taken in a ring from the start of the home range. (Placing
/// every program's workers on the first `workers` cores, as a plain `w % k` did, put two programs
/// of 8 workers on the same 8 cores of a 16-core machine, where they took turns on 8 cores and
/// left 8 idle.) `taken(c)` says whether another program holds core `c` now; the workers stay
/// on the cores they get here for the pool's life. A program that starts while another holds no
/// core (all its workers asleep) cannot see where that one's workers sit; the equal split, whose
/// order is by process id, still gives an earlier program the first cores, where it placed its
/// workers when it was alone.
fn place_workers(
    workers: usize,
    k: usize,
    home: &[usize],
    taken: impl Fn(usize) -> bool,
) -> Vec<usize> {
    // `k` is at least 1: `Sharing::start` runs without sharing when no allowed CPU is in the
    // table.
    let start = home.iter().copied().min().unwrap_or(0) % k;
    // Each core's group, read once: the table can change under us, and a sort whose keys change
    // between comparisons has no order to find.
    let group: Vec<u8> = (0..k)
        .map(|c| match (home.contains(&c), taken(c)) {
            (true, false) => 0,
            (false, false) => 1,
            (true, true) => 2,
            (false, true) => 3,
        })
        .collect();
    let mut order: Vec<usize> = (0..k).map(|i| (start + i) % k).collect();
    // A stable sort keeps the ring order within each group.
    order.sort_by_key(|&c| group[c]);
    (0..workers).map(|w| order[w % k]).collect()
}

/// How a sleeper's core may be obtained when it is woken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Only a free core, or one the program holds already.
    Free,
    /// Also one of the program's home cores that another program is using.
    TakeBack,
    /// Run without claiming (the no-starvation rule).
    Guest,
}

struct WorkerSlot {
    /// Whether the worker counts in its core's holders.
    held: AtomicBool,
    /// The worker thread's kernel thread id (for EP's re-pinning), 0 until it starts.
    tid: AtomicI32,
}

/// The sharing state of one pool under `SharingMode::Dws` or `SharingMode::Ep`.
pub(crate) struct Sharing {
    pub mode: SharingMode,
    table: CoreTable,
    me: ProgramId,
    /// The CPUs this pool may run on and claim, ascending.
    allowed: Vec<usize>,
    /// Per worker, its core as an index into `allowed`.
    core_of: Vec<usize>,
    workers: Vec<CachePadded<WorkerSlot>>,
    /// Per allowed core, this program's active workers that hold it.
    holders: Vec<Mutex<usize>>,
    /// The workers' sleep slots (`sleep.rs`).
    sleepers: Sleep,
    /// DWS's T_SLEEP, in failed steal attempts.
    pub sleep_after: u32,
    period: Duration,
    /// This program's share of the equal split, as indices into `allowed`.
    home: Mutex<Vec<usize>>,
    stop: Mutex<bool>,
    stop_cv: Condvar,
    /// Where the next wake-up scan starts (spreads wake-ups over the sleepers).
    next: AtomicUsize,
}

impl Sharing {
    /// Opens the table and takes this program's share of the cores for a pool of `workers`, or
    /// explains on stderr why the pool runs without sharing (`None`).
    pub(crate) fn start(config: &super::Settings, workers: usize) -> Option<Sharing> {
        let mode = config.mode;
        if !matches!(mode, SharingMode::Dws | SharingMode::Ep) {
            return None;
        }
        let warn = |why: String| {
            eprintln!(
                "magpie: warning: MAGPIE_SHARE={mode}: {why}; this pool runs without sharing (off)"
            );
        };
        let opened = match &config.table {
            Some(p) => CoreTable::open(p, super::cpu_slots()),
            None => CoreTable::open_default(),
        };
        let table = match opened {
            Ok(t) => t,
            Err(e) => {
                warn(e.to_string());
                return None;
            }
        };
        let me = table.me();
        if let Err(e) = table.register(me) {
            warn(e.to_string());
            return None;
        }
        let topo = crate::topology::Topology::detect();
        let mut allowed: Vec<usize> = topo
            .sockets
            .iter()
            .flat_map(|s| s.cores.iter().map(|c| c.cpu))
            .filter(|&c| c < table.cores())
            .collect();
        allowed.sort_unstable();
        allowed.dedup();
        if allowed.is_empty() {
            warn("no CPU of this process's affinity mask is in the table".into());
            table.unregister(me);
            return None;
        }
        let k = allowed.len();
        let mut s = Sharing {
            mode,
            me,
            // Placed below, once the program's home cores are known.
            core_of: Vec::new(),
            workers: (0..workers)
                .map(|_| {
                    CachePadded(WorkerSlot {
                        held: AtomicBool::new(false),
                        tid: AtomicI32::new(0),
                    })
                })
                .collect(),
            holders: (0..k).map(|_| Mutex::new(0)).collect(),
            sleepers: Sleep::new(workers),
            sleep_after: config.sleep_after.unwrap_or(k as u32).max(1),
            period: config.period,
            home: Mutex::new(Vec::new()),
            stop: Mutex::new(false),
            stop_cv: Condvar::new(),
            next: AtomicUsize::new(0),
            allowed,
            table,
        };
        s.refresh_home();
        let home = lock(&s.home).clone();
        let taken = |c: usize| matches!(s.table.owner(s.allowed[c]), Some(o) if o != me);
        s.core_of = place_workers(workers, k, &home, taken);
        if mode == SharingMode::Dws {
            // The equal split: workers on home cores hold them; the others go to sleep as they
            // start (`starts_asleep`).
            for w in 0..workers {
                if home.contains(&s.core_of[w]) {
                    s.hold(w, Claim::TakeBack);
                }
            }
        } else {
            s.claim_home_only();
        }
        Some(s)
    }

    /// The CPU of worker `w`'s core.
    fn cpu_of(&self, w: usize) -> usize {
        self.allowed[self.core_of[w]]
    }

    /// Called by worker `w`'s thread as it starts: records its thread id and pins it (DWS: to
    /// its core; EP: to the program's share).
    pub(crate) fn worker_started(&self, w: usize) {
        let tid = this_thread_id();
        // SeqCst (Relaxed would do): the id carries no other data, and under EP, the only mode
        // that re-pins, a re-pin that misses it is made up for by the `home` lock: the worker
        // reads its share under that lock just below, after this store, and `repin` reads the
        // ids after updating the share under it.
        self.workers[w].tid.store(tid, Ordering::SeqCst);
        match self.mode {
            SharingMode::Dws => crate::worker::pin_thread(0, &[self.cpu_of(w)]),
            _ => {
                let cpus = self.home_cpus();
                crate::worker::pin_thread(0, &cpus)
            }
        }
    }

    fn home_cpus(&self) -> Vec<usize> {
        let home = lock(&self.home);
        let cpus: Vec<usize> = home.iter().map(|&c| self.allowed[c]).collect();
        if cpus.is_empty() {
            self.allowed.clone()
        } else {
            cpus
        }
    }

    /// Recomputes this program's share of the equal split among the live programs; true if it
    /// changed. With more programs than cores a program whose share is empty gets one core, by
    /// its rank, so that EP never leaves it nowhere to run.
    fn refresh_home(&self) -> bool {
        let live = self.table.live_programs();
        let k = self.allowed.len();
        let i = live.iter().position(|&p| p == self.me).unwrap_or(0);
        let range: Range<usize> = home_range(i, live.len(), self.table.cores());
        let mut home: Vec<usize> = (0..k)
            .filter(|&c| range.contains(&self.allowed[c]))
            .collect();
        if home.is_empty() && self.mode == SharingMode::Ep {
            home.push(i % k);
        }
        let mut h = lock(&self.home);
        let changed = *h != home;
        *h = home;
        changed
    }

    /// EP: holds exactly the home cores in the table (visible to `magpie share status`).
    fn claim_home_only(&self) {
        let home = lock(&self.home).clone();
        for c in 0..self.allowed.len() {
            let cpu = self.allowed[c];
            if home.contains(&c) {
                match self.table.owner(cpu) {
                    Some(o) if o == self.me => {}
                    None => {
                        self.table.try_claim(cpu, self.me);
                    }
                    Some(o) => {
                        self.table.take_over(cpu, o, self.me);
                    }
                }
            } else {
                self.table.release(cpu, self.me);
            }
        }
    }

    /// Makes worker `w` one of its core's holders, claiming the core in the table if it is the
    /// first; false (and nothing changed) if the core cannot be had under `how`.
    fn hold(&self, w: usize, how: Claim) -> bool {
        if how == Claim::Guest {
            return true;
        }
        let c = self.core_of[w];
        let cpu = self.allowed[c];
        let mut n = lock(&self.holders[c]);
        if *n == 0 {
            let ok = match self.table.owner(cpu) {
                Some(o) if o == self.me => true,
                None => self.table.try_claim(cpu, self.me),
                Some(o) => {
                    how == Claim::TakeBack
                        && lock(&self.home).contains(&c)
                        && self.table.take_over(cpu, o, self.me)
                }
            };
            if !ok {
                return false;
            }
        }
        *n += 1;
        // SeqCst (any ordering would do): `held` is written by `start` before the workers run,
        // and then only by worker `w` itself or by the waker that holds `w` in `WAKING`, which
        // hands the worker over through the slot's state and lock (`sleep.rs`); those
        // orders make every read see the last write.
        self.workers[w].held.store(true, Ordering::SeqCst);
        true
    }

    /// Worker `w` stops holding its core, releasing it in the table if it was the last holder.
    fn unhold(&self, w: usize) {
        // SeqCst: as in `hold`; only worker `w` calls this, on its way to sleep.
        if self.workers[w].held.swap(false, Ordering::SeqCst) {
            let c = self.core_of[w];
            let mut n = lock(&self.holders[c]);
            *n -= 1;
            if *n == 0 {
                self.table.release(self.allowed[c], self.me);
            }
        }
    }

    /// Whether active worker `w` holds a core another program has taken back: it must stop
    /// stealing and sleep. One load of the table.
    #[inline]
    pub(crate) fn lost_core(&self, w: usize) -> bool {
        // Relaxed: worker `w` reads its own flag, last written by itself, by `start` before the
        // worker began, or by its waker before the wake-up that ordered it (see `hold`).
        self.workers[w].held.load(Ordering::Relaxed)
            && self.table.owner(self.cpu_of(w)) != Some(self.me)
    }

    /// Whether worker `w`, starting, holds no core and must sleep before it runs anything.
    pub(crate) fn starts_asleep(&self, w: usize) -> bool {
        // SeqCst (any ordering would do): `start` wrote the flag before this worker's thread
        // was spawned, and no waker runs before the worker has slept (see `hold`).
        !self.workers[w].held.load(Ordering::SeqCst)
    }

    /// Workers asleep now.
    pub(crate) fn sleepers(&self) -> usize {
        self.sleepers.sleepers()
    }

    /// Algorithm 1, line 15: worker `w` gives its core back and sleeps until woken (or until
    /// `done()`, the pool's shutdown). Unless `has_work()`, evaluated after the sleep is
    /// announced, finds work and the worker can keep or retake its core: then it returns at once.
    /// The protocol is `sleep.rs`'s.
    pub(crate) fn sleep(
        &self,
        w: usize,
        restricted: bool,
        has_work: impl Fn() -> bool,
        done: impl Fn() -> bool,
    ) {
        self.sleepers.set_restricted(w, restricted);
        self.unhold(w);
        self.sleepers
            .sleep(w, has_work, || self.hold(w, Claim::Free), done);
    }

    /// Wakes sleeper `w` if it is asleep and its core can be had under `how`.
    fn activate(&self, w: usize, how: Claim) -> bool {
        self.sleepers.activate(w, || self.hold(w, how))
    }

    /// [`activate`](Sharing::activate), in the first pass of a search for a sleeper to take
    /// work anyone may take (`restricted_too` false) only a sleeper whose re-check looked at
    /// the deques (`Sleep::activate_unrestricted`), in the second any.
    fn activate_in_pass(&self, w: usize, how: Claim, restricted_too: bool) -> bool {
        let hold = || self.hold(w, how);
        match restricted_too {
            false => self.sleepers.activate_unrestricted(w, hold),
            true => self.sleepers.activate(w, hold),
        }
    }

    /// Wakes up to `n` sleepers: first on cores free or already the program's, then (with
    /// `take_back`) on home cores other programs use. Returns how many woke.
    fn wake(&self, n: usize, take_back: bool) -> usize {
        let total = self.workers.len();
        // Relaxed: only spreads wake-ups; any start is correct.
        let start = self.next.fetch_add(1, Ordering::Relaxed) % total;
        let mut woke = 0;
        let passes: &[Claim] = if take_back {
            &[Claim::Free, Claim::TakeBack]
        } else {
            &[Claim::Free]
        };
        for &how in passes {
            // Sleepers whose re-check looked at the deques first (`Sleep::activate_unrestricted`).
            for restricted_too in [false, true] {
                for k in 0..total {
                    if woke == n || self.sleepers.sleepers() == 0 {
                        return woke;
                    }
                    if self.activate_in_pass((start + k) % total, how, restricted_too) {
                        woke += 1;
                    }
                }
            }
        }
        woke
    }

    /// A producer published work: wake one sleeper on a free or held core, if any sleeps.
    #[inline]
    pub(crate) fn wake_for_work(&self) {
        // SeqCst fence: the producer's side of the handshake (see `sleep.rs`).
        fence(Ordering::SeqCst);
        if self.sleepers.sleepers() > 0 {
            self.wake(1, false);
        }
    }

    /// An item was delivered to worker `w`'s inbox: wake `w` if it sleeps, on a core the program
    /// may use (free, held, or a home core another program uses). If none can be had now, the
    /// coordinator retries every period (see `coordinate`).
    pub(crate) fn wake_worker(&self, w: usize) {
        // The fence in `wake` pairs with the sleeper's between its announcement and its
        // re-check, which reads the inbox: either the wake sees it asleep or it sees the item.
        if !self.sleepers.wake(w, || self.hold(w, Claim::Free)) {
            self.activate(w, Claim::TakeBack);
        }
    }

    /// Shutdown: stops the coordinator and wakes every sleeper (each sees the pool's flag).
    pub(crate) fn shutdown(&self) {
        *lock(&self.stop) = true;
        self.stop_cv.notify_all();
        self.sleepers.wake_all_for_shutdown();
    }

    /// Sleeps one period; false once the pool is shutting down.
    fn pause(&self) -> bool {
        let g = lock(&self.stop);
        if *g {
            return false;
        }
        let g = match self.stop_cv.wait_timeout(g, self.period) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        };
        !*g
    }

    /// The coordinator thread's body (§3.3), until shutdown. `queued()` counts the pool's
    /// queued tasks (`N_b`); `delivered(w)` says whether worker `w`'s inbox holds something
    /// only `w` can run.
    pub(crate) fn coordinate(&self, queued: impl Fn() -> usize, delivered: impl Fn(usize) -> bool) {
        let mut tick: u64 = 0;
        let mut starved = 0;
        // Per worker, periods it has slept with a delivery it could not be woken for.
        let mut stranded = vec![0u32; self.workers.len()];
        while self.pause() {
            tick += 1;
            if tick.is_multiple_of(REFRESH_TICKS) {
                self.table.reclaim_stale(super::now_ms());
                // Registers again if a long stop (SIGSTOP, a debugger) let others reclaim us.
                let _ = self.table.register(self.me);
                if self.refresh_home() && self.mode == SharingMode::Ep {
                    self.repin();
                }
            }
            self.table.beat(self.me);
            self.wake_delivered(&delivered, &mut stranded);
            if self.mode == SharingMode::Ep {
                self.claim_home_only();
                continue;
            }
            if self.balance(queued()) {
                starved += 1;
            } else {
                starved = 0;
            }
            // Work, no worker awake and no core to be had, for two periods in a row (not a
            // passing moment between a sleeper and its re-check): run one worker on its own
            // core without claiming it, rather than starve.
            if starved >= 2 {
                starved = 0;
                let total = self.workers.len();
                let passes = [false, true].into_iter();
                let order = passes.flat_map(|r| (0..total).map(move |w| (w, r)));
                for (w, restricted_too) in order {
                    if self.activate_in_pass(w, Claim::Guest, restricted_too) {
                        break;
                    }
                }
            }
        }
    }

    /// Sleepers with a delivery in their inbox: woken on a core the program may use, or, after
    /// two periods without one, as a guest on their own core (a ready fiber has only one worker
    /// that can run it, so waiting for a core could wait forever).
    fn wake_delivered(&self, delivered: &impl Fn(usize) -> bool, stranded: &mut [u32]) {
        for (w, n) in stranded.iter_mut().enumerate() {
            if !self.sleepers.is_asleep(w) || !delivered(w) {
                *n = 0;
                continue;
            }
            if self.activate(w, Claim::Free) || self.activate(w, Claim::TakeBack) {
                *n = 0;
            } else {
                *n += 1;
                if *n >= 2 && self.activate(w, Claim::Guest) {
                    *n = 0;
                }
            }
        }
    }

    /// One look of the DWS coordinator at `nb` queued tasks: wakes `N_w = N_b / N_a` sleepers
    /// on free cores, then on home cores others use. True if the program starves: work queued,
    /// every worker asleep, and none could be woken.
    fn balance(&self, nb: usize) -> bool {
        let total = self.workers.len();
        let asleep = self.sleepers.sleepers();
        if asleep == 0 || nb == 0 {
            return false;
        }
        let na = total.saturating_sub(asleep);
        let nw = nb.checked_div(na).unwrap_or(nb);
        if nw == 0 {
            return false;
        }
        self.wake(nw.min(asleep), true) == 0 && self.sleepers.sleepers() == total
    }

    /// EP: re-pins every started worker to the program's current share.
    fn repin(&self) {
        let cpus = self.home_cpus();
        for slot in &self.workers {
            // SeqCst: as the store in `worker_started` (see there).
            let tid = slot.tid.load(Ordering::SeqCst);
            if tid != 0 {
                crate::worker::pin_thread(tid, &cpus);
            }
        }
    }
}

/// The kernel's id of the calling thread, which `sched_setaffinity` takes.
#[cfg(target_os = "linux")]
fn this_thread_id() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Elsewhere there is no such id to pin by, and no core sharing: the builder refuses it
/// (`Builder::build`), so no sharing pool is made there.
#[cfg(not(target_os = "linux"))]
fn this_thread_id() -> i32 {
    0
}

/// The core's view of a sharing pool (`hooks.rs`): each call is the inherent method's.
impl crate::hooks::CoreSharing for Sharing {
    fn sleeps_workers(&self) -> bool {
        self.mode == SharingMode::Dws
    }
    fn worker_started(&self, w: usize) {
        Sharing::worker_started(self, w)
    }
    fn starts_asleep(&self, w: usize) -> bool {
        Sharing::starts_asleep(self, w)
    }
    fn sleep_after(&self) -> u32 {
        self.sleep_after
    }
    fn lost_core(&self, w: usize) -> bool {
        Sharing::lost_core(self, w)
    }
    fn sleep(
        &self,
        w: usize,
        restricted: bool,
        has_work: &dyn Fn() -> bool,
        done: &dyn Fn() -> bool,
    ) {
        Sharing::sleep(self, w, restricted, has_work, done)
    }
    fn wake_for_work(&self) {
        Sharing::wake_for_work(self)
    }
    fn wake_worker(&self, w: usize) {
        Sharing::wake_worker(self, w)
    }
    fn sleepers(&self) -> usize {
        Sharing::sleepers(self)
    }
    fn coordinate(&self, queued: &dyn Fn() -> usize, delivered: &dyn Fn(usize) -> bool) {
        Sharing::coordinate(self, queued, delivered)
    }
    fn shutdown(&self) {
        Sharing::shutdown(self)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for Sharing {
    fn drop(&mut self) {
        self.table.release_all(self.me);
        self.table.unregister(self.me);
    }
}

#[cfg(test)]
mod tests {
    use super::place_workers;

    /// How many workers each of `k` cores gets.
    fn per_core(cores: &[usize], k: usize) -> Vec<usize> {
        let mut n = vec![0; k];
        for &c in cores {
            n[c] += 1;
        }
        n
    }

    #[test]
    fn a_program_alone_fills_its_cores_from_the_first() {
        let home: Vec<usize> = (0..16).collect();
        assert_eq!(
            place_workers(8, 16, &home, |_| false),
            (0..8).collect::<Vec<_>>()
        );
        assert_eq!(place_workers(4, 4, &home[..4], |_| false), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_second_program_places_its_workers_where_the_first_ones_are_not() {
        // The first program's 8 workers hold cores 0-7 of 16.
        let held_by_first = |c: usize| c < 8;
        // The second program's share of the equal split is 8-15 ...
        let home: Vec<usize> = (8..16).collect();
        assert_eq!(
            place_workers(8, 16, &home, held_by_first),
            (8..16).collect::<Vec<_>>()
        );
        // ... and when the split gives it 0-7, which the first holds, it still takes 8-15.
        let home: Vec<usize> = (0..8).collect();
        assert_eq!(
            place_workers(8, 16, &home, held_by_first),
            (8..16).collect::<Vec<_>>()
        );
        // Two programs of one worker on two cores: the second takes the other core.
        assert_eq!(place_workers(1, 2, &[1], |c| c == 0), vec![1]);
        assert_eq!(place_workers(1, 2, &[0], |c| c == 0), vec![1]);
    }

    #[test]
    fn free_home_cores_come_first_then_free_ones_then_the_rest() {
        // Home 4-7 of 8; cores 0, 5 and 6 held by others.
        let taken = |c: usize| [0, 5, 6].contains(&c);
        let home = [4, 5, 6, 7];
        assert_eq!(
            place_workers(8, 8, &home, taken),
            vec![4, 7, 1, 2, 3, 5, 6, 0]
        );
    }

    #[test]
    fn every_core_gets_its_share_of_workers_under_any_order() {
        for k in 1..12 {
            for workers in 0..40 {
                for first in 0..k {
                    let home: Vec<usize> = (first..k).collect();
                    let cores = place_workers(workers, k, &home, |c| c % 3 == 0);
                    assert_eq!(cores.len(), workers);
                    for n in per_core(&cores, k) {
                        assert!(
                            n == workers / k || n == workers / k + 1,
                            "k={k} w={workers}"
                        );
                    }
                }
            }
        }
    }
}
