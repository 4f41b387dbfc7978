//! `scope`: X10/HJ `finish`. Tasks spawned in a scope may spawn more tasks into it, including from
//! tasks whose spawner has already returned (terminally strict); `scope` returns when every one of
//! them has finished. The scope's [`CountLatch`] counts unfinished tasks, the body included.
//!
//! Spawning follows the scope's policy, or the one given to [`Scope::spawn_with`] (HJ's
//! `schedule(wf|hf|dyn)` clause):
//! * help-first: the child is boxed and pushed; the parent continues;
//! * work-first: the child runs now. If the worker already keeps `KEEP` items for thieves and none
//!   asked for more, it runs as a plain call (lazy publication, as in `join`). Otherwise a thief
//!   needs work, and it gets the child: the child is published (a closure that has not started)
//!   and the parent goes on, since a stack that has started running user code never moves to
//!   another thread. Only when the parent's stack is full is the parent preempted: the child
//!   starts on a fresh fiber and the parent waits on this worker's ready list, to resume here
//!   once the child has returned or suspended. With `Builder::allow_migration` (an `unsafe`
//!   opt-in) the parent is preempted instead and published as a continuation thieves may steal,
//!   as in SLAW (see `core/fiber/mod.rs`); its closure stays in the parent's frame until the child has
//!   moved it out, which happens before the continuation becomes stealable.

use crate::error::Error;
use crate::fiber::{Action, FiberLocal};
use crate::job::{HeapJob, JobRef, Lineage, Panic, Tag, Work};
use crate::latch::CountLatch;
use crate::policy::Policy;
use crate::position::Ticket;
use crate::registry::Registry;
use crate::sync::atomic::{AtomicPtr, Ordering};
use crate::sync_point::{pop_above, Popped, SyncMark};
use crate::worker::{self, WorkerThread};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};

/// A `finish` scope; see [`scope`].
pub struct Scope<'scope> {
    pub(crate) count: CountLatch,
    /// Tracing: the event that opened the scope, which names its sync point.
    sync_tag: Tag,
    panic: AtomicPtr<Panic>,
    policy: Policy,
    registry: *const Registry,
    /// The lineage of the scope's spawns (`leapfrog.rs`): waited for at the count's latch, by
    /// the task that opened the scope. Set where the scope will stay until it ends.
    node: std::cell::Cell<Lineage>,
    _marker: PhantomData<&'scope mut &'scope ()>,
}

// SAFETY: every field is shared through atomics but `node`, which is written once, before the
// scope is shared, and only read after; the registry pointer is only read, and the registry
// outlives the scope (the scope runs inside one of its workers).
unsafe impl Sync for Scope<'_> {}
// SAFETY: as for `Sync`: nothing in a scope is tied to the thread that made it.
unsafe impl Send for Scope<'_> {}

/// Creates a scope, runs `op` in it, and returns when `op` and every task spawned in the scope
/// (transitively) have finished. A panic in any of them reaches the caller after all finished.
/// Outside any pool, runs on the global pool.
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    match worker::current() {
        Some(wt) => scope_on(wt, op),
        None => crate::pool::outside(|| scope(op)),
    }
}

/// rayon's `in_place_scope`: a scope whose body runs on the calling thread, whatever it is. On a
/// worker this is [`scope`]; on any other thread the scope belongs to the global pool, its
/// spawns are queued there, and the calling thread blocks until they have finished (it runs none
/// of them). The body need not be `Send`: it never leaves the calling thread.
///
/// ```
/// use std::rc::Rc;
///
/// let here = Rc::new(std::thread::current().id()); // not Send: the body stays on this thread
/// let mut parts = [0u64; 4];
/// magpie::in_place_scope(|s| {
///     assert_eq!(*here, std::thread::current().id());
///     for (i, p) in parts.iter_mut().enumerate() {
///         s.spawn(move |_| *p = (i as u64 + 1) * 100);
///     }
/// });
/// assert_eq!(parts, [100, 200, 300, 400]);
/// ```
pub fn in_place_scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    match worker::current() {
        Some(wt) => scope_on(wt, op),
        None => {
            // On a thread lent to a pool (`Builder::use_current_thread`), the body runs inside
            // that pool, as its worker 0's.
            let mut op = Some(op);
            let lent =
                crate::caller_worker::run(|| in_place_scope(op.take().expect("taken once"))).ok();
            match lent {
                Some(r) => r,
                None => scope_outside(
                    crate::pool::global().registry(),
                    op.take().expect("not taken: the call did not enter"),
                ),
            }
        }
    }
}

/// A scope of `wt`'s pool whose body runs here, on the running fiber (which stays on this
/// thread), so neither needs `Send`.
fn scope_on<'scope, OP, R>(wt: &worker::WorkerThread, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    let sync_tag = if wt.core.tracing {
        wt.trace_scope_open(wt.fiber_local().depth.get())
    } else {
        Tag::NONE
    };
    let s = Scope {
        sync_tag,
        count: CountLatch::new(),
        panic: AtomicPtr::new(std::ptr::null_mut()),
        policy: wt.core.registry.config.policy,
        registry: std::sync::Arc::as_ptr(&wt.core.registry),
        node: std::cell::Cell::new(Lineage::new(std::ptr::null(), std::ptr::null())),
        _marker: PhantomData,
    };
    let fl = wt.fiber_local();
    // `s` stays here until the scope has ended, so its count's latch names its sync point.
    s.node.set(Lineage::new(&s.count.latch, fl.lineage.get()));
    // A checked task's scope is a finish in its tree (`hooks::Structure`).
    let checked = match wt.core.checks {
        true => wt
            .core
            .registry
            .structure()
            .zip(Some(fl.checked.get()).filter(|c| !c.is_null())),
        false => None,
    };
    if let Some((st, c)) = checked {
        st.scope_open(crate::hooks::Ctx(c));
    }
    let mark = SyncMark::new(wt, fl);
    let r = panic::catch_unwind(AssertUnwindSafe(|| op(&s)));
    s.finish_one();
    s.wait(fl, &mark);
    if let Some((st, c)) = checked {
        st.scope_close(crate::hooks::Ctx(c));
    }
    s.finish(r)
}

impl crate::Pool {
    /// A scope of this pool whose body runs on the calling thread (rayon's
    /// `ThreadPool::in_place_scope`): on one of this pool's workers, [`crate::scope`]; on any
    /// other thread, the spawns are queued in this pool and the thread blocks until they have
    /// finished (see [`crate::in_place_scope`]).
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::Scope<'scope>) -> R,
    {
        match worker::current() {
            Some(wt) if std::sync::Arc::ptr_eq(&wt.core.registry, self.registry()) => {
                crate::in_place_scope(op)
            }
            Some(_) => scope_outside(self.registry(), op),
            None => {
                // Lent to this pool: the body runs inside it, as worker 0's.
                let mut op = Some(op);
                let inside = crate::caller_worker::run_in(self.registry(), || {
                    crate::in_place_scope(op.take().expect("taken once"))
                })
                .ok();
                match inside {
                    Some(r) => r,
                    None => scope_outside(
                        self.registry(),
                        op.take().expect("not taken: the call did not enter"),
                    ),
                }
            }
        }
    }
}

/// A scope of `registry`'s pool whose body runs on the calling thread, which is not one of that
/// pool's workers: its spawns are queued in the pool (`spawn_with`'s plain-thread path), and the
/// thread, having no fiber to suspend, waits for the count by polling it, with growing naps.
pub(crate) fn scope_outside<'scope, OP, R>(registry: &std::sync::Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    let s = Scope {
        sync_tag: Tag::NONE,
        count: CountLatch::new(),
        panic: AtomicPtr::new(std::ptr::null_mut()),
        policy: registry.config.policy,
        // The caller's `Arc` keeps the registry alive until the scope has ended.
        registry: std::sync::Arc::as_ptr(registry),
        node: std::cell::Cell::new(Lineage::new(std::ptr::null(), std::ptr::null())),
        _marker: PhantomData,
    };
    // A root: nothing in the pool waits for these spawns at a fiber's sync point.
    s.node.set(Lineage::new(&s.count.latch, std::ptr::null()));
    let r = panic::catch_unwind(AssertUnwindSafe(|| op(&s)));
    s.finish_one();
    let mut nap = std::time::Duration::from_micros(1);
    // `probe` acquires the count's last decrement, which every task makes after its effects.
    while !s.count.latch.probe() {
        if nap < std::time::Duration::from_micros(50) {
            std::hint::spin_loop();
            std::thread::yield_now();
        } else {
            std::thread::sleep(nap);
        }
        nap = (nap * 2).min(std::time::Duration::from_millis(1));
    }
    s.finish(r)
}

pub(crate) struct SendPtr<T>(pub(crate) *const T);
// SAFETY: used only to carry a `&Scope` (which is Sync) into a task that the scope outlives.
unsafe impl<T> Send for SendPtr<T> {}

impl<'scope> Scope<'scope> {
    /// Spawns `f` into this scope under the scope's policy (the pool's).
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.spawn_with(self.policy, f)
    }

    /// Spawns `f` into this scope under `policy`, overriding the pool's for this spawn.
    pub fn spawn_with<F>(&self, policy: Policy, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let Some(wt) = worker::current() else {
            // A plain thread holding a `&Scope` (through std::thread::scope, say): queue the task
            // in the scope's pool.
            self.count.increment();
            let reg = self.registry();
            reg.inject(
                Work::Task {
                    job: HeapJob::into_job_ref(
                        self.task(f),
                        reg.config.trace.then_some(Tag::NONE),
                        self.lineage(),
                    ),
                    continuation: false,
                }
                .encode(),
            );
            return;
        };
        let fl = wt.fiber_local();
        let depth = fl.depth.get();
        if policy == wt.core.policy
            && policy != Policy::HelpFirst
            && (wt.has_credit(depth, true) || wt.grant_credit(depth))
            && fl.has_reserve()
        {
            // The common case of the in-place spawn below, on the worker's join credit: no look
            // at the deque (whose thief-side line a busy thief keeps writing), nothing counted
            // until the credit is settled. Only for the pool's own policy, which is how the
            // settlement counts it.
            if fl.cursor().is_some() {
                // Credit under a cursor: a tracked region task (see `position.rs`).
                if let Some(lv) = fl.level(depth) {
                    wt.spend_credit();
                    lv.take(1);
                    self.run_in_place(fl, depth, move |s| {
                        lv.enter_child(1); // the one index it took
                        f(s)
                    });
                    return;
                }
                return self.spawn_slow(wt, fl, depth, policy, f);
            }
            if wt.core.promotes && crate::promote::spawn_may_hand_over(wt, fl, depth) {
                // Oldest-first hand-over (`promote.rs`, "Spawns"): a two-compare filter inline,
                // then decided out of line and not generic; a spawn it publishes or measures
                // goes type-erased to code that serves every closure type, so that a plain
                // pool's spawn keeps the code it had (a second instance of the spawn, or a probe
                // kept across the in-place call, made pdfs 1.4x and fj 1.1x slower with the
                // option off).
                let probe = crate::promote::probe_spawn(wt, fl, depth, policy);
                if probe.publishes() {
                    return self.publish_shallow(wt, Box::new(f), probe.child_level());
                }
                if probe.measures() {
                    // Type-erased without an allocation: the child waits in a slot on this
                    // frame, called once through `&mut dyn FnMut`.
                    let mut slot = Some(f);
                    let mut once = |s: &Scope<'scope>| {
                        if let Some(f) = slot.take() {
                            f(s)
                        }
                    };
                    return self.run_measured(wt, fl, depth, &mut once, probe);
                }
            }
            wt.spend_credit();
            self.run_in_place(fl, depth, f);
            return;
        }
        if wt.core.checks {
            // A pool that checks for races grants no credit, so its spawns all come here.
            return self.spawn_checked(wt, fl, depth, policy, Box::new(f));
        }
        self.spawn_slow(wt, fl, depth, policy, f)
    }

    /// A spawn in a pool that checks for races: the child carries its place in the program's
    /// tree, made now, in the spawner's (`hooks::Structure`), and runs in it wherever it runs.
    /// Boxed and out of line, so that one instance serves every closure type and a pool that
    /// does not check keeps its spawn's code and its tasks' size: carried by every published
    /// task (16 bytes and a thread-local read), the context made pdfs 1.10x slower at 1 worker
    /// and 1.15x at 2 in a pool without the checker; this way it runs at its old speed.
    #[cold]
    #[inline(never)]
    fn spawn_checked(
        &self,
        wt: &WorkerThread,
        fl: &FiberLocal,
        depth: u32,
        policy: Policy,
        f: BoxedChild<'scope>,
    ) {
        self.spawn_slow(wt, fl, depth, policy, with_checked_child(f))
    }

    /// The rest of [`spawn_with`](Self::spawn_with) for a worker without credit. Inlined: pdfs
    /// spawns most of its 20 million tasks here (past the stack bound's depth the credit is
    /// refused and the spawn decides in place), and out of line this call took pdfs from 0.077
    /// to 0.097 s at 1 worker and from 0.073 to 0.090 at 2 (`scripts/compare-builds.sh`). Out of
    /// line, fj at 1 worker was 8% and fj-rec 3% faster, their spawns being nearly all on credit
    /// in a smaller inlined body; against the build before issue 15 both are faster either way.
    #[inline(always)]
    fn spawn_slow<F>(&self, wt: &WorkerThread, fl: &FiberLocal, depth: u32, policy: Policy, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        if fl.in_region() {
            return self.spawn_in_region(wt, fl, depth, policy, f);
        }
        self.spawn_plain::<false, F>(wt, fl, depth, policy, f)
    }

    /// A spawn without credit by a schedule region's task: positioned if the task has a cursor,
    /// else plain with the child holding a ticket on the region (see `position.rs`).
    #[inline(always)]
    fn spawn_in_region<F>(
        &self,
        wt: &WorkerThread,
        fl: &FiberLocal,
        depth: u32,
        policy: Policy,
        f: F,
    ) where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        match fl.cursor() {
            Some(cur) => cur.at(depth, |cur| {
                self.spawn_positioned(wt, fl, cur, depth, policy, None, f)
            }),
            None => self.spawn_plain::<true, F>(wt, fl, depth, policy, f),
        }
    }

    /// A spawn by a region task whose fiber has a cursor (no credit is granted there, so every
    /// such spawn comes here): the child gets the next index and is wrapped in its position,
    /// then donated (to `designated`, or where the template cuts it), run in place (strict
    /// constraints), or spawned as any child.
    #[allow(clippy::too_many_arguments)]
    fn spawn_positioned<F>(
        &self,
        wt: &WorkerThread,
        fl: &FiberLocal,
        cur: &crate::position::RegionCursor,
        depth: u32,
        policy: Policy,
        designated: Option<usize>,
        f: F,
    ) where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let k = cur.take(1);
        let region = cur.region();
        let rules = region.rules();
        let node = rules.child(cur.node(), k);
        let to = match designated {
            Some(w) if w != wt.core.index => Some((w, rules.designated_rank(node, w))),
            // Designated to this worker: an ordinary child, which a thief may have taken
            // when it was recorded, so the template says where it goes.
            _ => rules.donee(node, wt.core.index),
        };
        let spec = cur.scope_child(k, node);
        let g = move |s: &Scope<'scope>| crate::position::run(spec, || f(s));
        match to {
            Some((w, rank)) => {
                let it = self.heap_item(wt, depth, g);
                rules.donate(&*wt.core.registry, w, rank, it);
            }
            // Under the strict constraints a child that stays here runs now, as a work-first
            // spawn would; a help-first one goes on the deque as when it was recorded (no
            // thief takes it there), so this worker creates its cuts in the recorded order.
            None if region.strict() && policy != Policy::HelpFirst && fl.has_reserve() => {
                wt.count_spawn(true);
                self.run_in_place(fl, depth, g);
            }
            None => self.spawn_plain::<false, _>(wt, fl, depth, policy, g),
        }
    }

    /// The registry of the scope's pool.
    pub(crate) fn registry(&self) -> &Registry {
        // SAFETY: the registry outlives the scope (the scope runs inside one of its workers,
        // or holds the pool's `Arc` from outside, `scope_outside`).
        unsafe { &*self.registry }
    }

    /// Workers of the scope's pool.
    pub(crate) fn workers(&self) -> usize {
        self.registry().config.workers
    }

    /// Whether the caller is a worker of the scope's pool.
    pub(crate) fn on_own_worker(&self) -> bool {
        worker::current().is_some_and(|wt| std::ptr::eq(&*wt.core.registry, self.registry))
    }

    /// Runs `f` on worker `worker` (modulo the pool's size): the child is donated to that worker
    /// whatever the policy or a followed template says (the thesis's §6.3.2; recording such a
    /// program gives its template). When `worker` is the spawner's own, or the spawner is not a
    /// worker of the scope's pool, this is [`spawn`](Self::spawn).
    pub fn spawn_designated<F>(&self, worker: usize, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.spawn_to(worker, false, f)
    }

    /// [`spawn_designated`](Self::spawn_designated); with `only_there`, a child designated to
    /// the spawner's own worker goes to its inbox too, so no thief can take it (a broadcast's
    /// call must run on its worker). The caller must be a worker of the scope's pool.
    pub(crate) fn spawn_to<F>(&self, worker: usize, only_there: bool, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let Some(wt) =
            worker::current().filter(|wt| std::ptr::eq(&*wt.core.registry, self.registry))
        else {
            debug_assert!(
                !only_there,
                "a spawn for one worker made off the scope's pool"
            );
            return self.spawn(f);
        };
        let w = worker % wt.core.registry.config.workers;
        let fl = wt.fiber_local();
        let depth = fl.depth.get();
        if let Some(cur) = fl.cursor() {
            return cur.at(depth, |cur| {
                self.spawn_positioned(wt, fl, cur, depth, self.policy, Some(w), f)
            });
        }
        if w == wt.core.index && !only_there {
            return self.spawn(f);
        }
        let f = holding(Ticket::for_spawn(fl), f);
        let it = match wt.core.checks {
            true => self.heap_item(wt, depth, with_checked_child(Box::new(f))),
            false => self.heap_item(wt, depth, f),
        };
        wt.core.registry.deliver(w, it);
    }

    /// `f` as a heap task of this scope, counted, as an item for a deque, inbox or held queue.
    fn heap_item<F>(&self, wt: &WorkerThread, depth: u32, f: F) -> crate::deque::Item
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let tag = wt.core.tracing.then(|| wt.trace_tag(depth));
        wt.count_spawn(false);
        wt.count_spawned(&self.count);
        Work::Task {
            job: HeapJob::into_job_ref(self.task(f), tag, self.lineage()),
            continuation: false,
        }
        .encode()
    }

    /// `f` as a heap job of this scope ([`task`](Self::task)), carrying its place in the
    /// program's tree in a pool that checks for races: for the spawns to another place or
    /// squad, which do not pass through [`spawn_checked`](Self::spawn_checked).
    pub(crate) fn job<F>(&self, f: F, tag: Option<Tag>) -> JobRef
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        match worker::current().is_some_and(|wt| wt.core.checks) {
            true => HeapJob::into_job_ref(
                self.task(with_checked_child(Box::new(f))),
                tag,
                self.lineage(),
            ),
            false => HeapJob::into_job_ref(self.task(f), tag, self.lineage()),
        }
    }

    /// The spawn of a child that needs no position of its own (see `spawn_slow`); `COUNTED`:
    /// the spawner is a schedule region's task without a cursor, so a child published or started
    /// on another fiber holds a ticket on the region (`position::Ticket`).
    #[inline(always)]
    fn spawn_plain<const COUNTED: bool, F>(
        &self,
        wt: &WorkerThread,
        fl: &FiberLocal,
        depth: u32,
        policy: Policy,
        f: F,
    ) where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let fresh = wt.core.deque.len() as isize;
        let wf = wt.decide(policy, depth, fresh);
        let stack_ok = fl.has_reserve();
        let in_place = stack_ok && fresh >= wt.core.keep && !wt.core.deque.wanted();
        // Adaptive runs in place whenever thieves are satisfied and the stack condition allows:
        // its heuristic decides how to publish when work must be published (a thief raising
        // `wanted` is what tells it so), not whether to publish work nobody asked for.
        let adaptive_in_place = policy == Policy::Adaptive && depth < wt.core.thresholds.stack;
        if (wf || adaptive_in_place) && in_place {
            wt.count_spawn(true);
            // Lazy publication (see `join`): thieves already have KEEP items and want no more,
            // so the child runs now as a plain call (SLAW's sequential-call work-first spawn)
            // and its continuation is not published. It finishes before we go on, so the scope's
            // count need not see it.
            self.run_in_place(fl, depth, f);
            return;
        }
        let fresh_bound = policy == Policy::Adaptive && fresh >= wt.core.thresholds.fresh as isize;
        if wf && stack_ok && fresh_bound && !wt.core.registry.config.migrate {
            // SLAW's fresh-task condition (F tasks published): a work-first spawn, which keeps
            // the heap bounded. Without migration it is a plain call; a thief's request is
            // answered from the F tasks already in the deque.
            wt.count_spawn(true);
            self.run_in_place(fl, depth, f);
            return;
        }
        // Whether the parent is preempted: suspended, and the child started on a fresh fiber.
        // An Adaptive spawn that the heuristic made work-first, below the fresh-task bound,
        // never is: in SLAW a work-first spawn is a sequential call, which the in-place path
        // above is; it could not be taken here (too little published, or a thief is asking),
        // and a preempting spawn costs a fiber switch where publishing the child costs a push.
        let preempt = wf
            && (policy != Policy::Adaptive || fresh_bound)
            && (wt.core.registry.config.migrate || !stack_ok);
        // Without migration a started stack never goes to a thief, so a work-first spawn that
        // cannot run its child in place with room on the stack publishes the child (a closure
        // that has not started) and the parent goes on: the thief that asked gets the child.
        // Only when the stack is full is the parent preempted, and then its continuation stays
        // on this worker's ready list (`publish_continuation`), so the child starts on a fresh
        // stack and the parent resumes here after it.
        if preempt && wt.fiber_limit_reached() {
            // A preempting spawn runs the child on a fresh fiber, so a full stack here is no
            // obstacle; only the cap on fibers is.
            if policy == Policy::WorkFirst {
                panic::panic_any(Error::StackLimit {
                    what: format!(
                        "{} fibers in use for pending work-first continuations (frame depth {})",
                        wt.core.registry.config.max_fibers, depth
                    ),
                    limit: format!(
                        "{} fibers of {} bytes",
                        wt.core.registry.config.max_fibers, wt.core.registry.config.stack_size
                    ),
                });
            }
            // Adaptive: the stack bound wins, as in SLAW's stack condition: publish the child.
        } else if preempt {
            let tag = wt.trace_tag(depth);
            wt.count_spawn(true);
            wt.count_spawned(&self.count);
            if COUNTED {
                let f = holding(Ticket::for_spawn(fl), f);
                let frame = WfFrame {
                    lineage: self.lineage(),
                    f: UnsafeCell::new(Some(self.task(f))),
                };
                crate::fiber::suspend(Action::SpawnWf(frame.as_job_ref(), tag));
                return;
            }
            let frame = WfFrame {
                lineage: self.lineage(),
                f: UnsafeCell::new(Some(self.task(f))),
            };
            crate::fiber::suspend(Action::SpawnWf(frame.as_job_ref(), tag));
            // Resumed as a continuation: the child has moved the closure out of `frame`.
            return;
        }
        let tag = wt.core.tracing.then(|| wt.trace_tag(depth));
        wt.count_spawn(false);
        wt.count_spawned(&self.count);
        if COUNTED {
            let f = holding(Ticket::for_spawn(fl), f);
            wt.push(Work::Task {
                job: HeapJob::into_job_ref(self.task(f), tag, self.lineage()),
                continuation: false,
            });
            return;
        }
        wt.push(Work::Task {
            job: HeapJob::into_job_ref(self.task(f), tag, self.lineage()),
            continuation: false,
        });
    }

    /// Runs the child of a sampled adaptive spawn in place and measures what it made
    /// (`promote.rs`, "Spawns"). Type-erased, so that one instance serves every closure type
    /// and a plain pool's spawn keeps its code; by `&mut dyn FnMut` over a slot in the spawn's
    /// frame rather than boxed, since one spawn in 16 near the root comes here and an allocation
    /// each made fj 1.13x slower at 2 workers.
    #[cold]
    #[inline(never)]
    fn run_measured(
        &self,
        wt: &WorkerThread,
        fl: &FiberLocal,
        depth: u32,
        f: &mut dyn FnMut(&Scope<'scope>),
        probe: crate::promote::Probe,
    ) {
        wt.spend_credit();
        self.run_in_place(fl, depth, f);
        crate::promote::after_measured_spawn(wt, probe);
    }

    /// Publishes the child of a shallow adaptive spawn (`promote.rs`, "Spawns") to run at
    /// spawn-tree level `level` wherever it runs. Boxed, so that one instance serves every
    /// closure type and a plain pool's spawn keeps its code; only the few shallow spawns come
    /// here.
    #[cold]
    #[inline(never)]
    fn publish_shallow(
        &self,
        wt: &WorkerThread,
        f: Box<dyn FnOnce(&Scope<'scope>) + Send + 'scope>,
        level: u32,
    ) {
        wt.count_spawn(false);
        wt.count_spawned(&self.count);
        let shallow = wt.lessons.shallow();
        let f = move |s: &Scope<'scope>| {
            let _at = crate::promote::AtLevel::enter(level, shallow);
            f(s)
        };
        wt.push(Work::Task {
            job: HeapJob::into_job_ref(self.task(f), None, self.lineage()),
            continuation: false,
        });
    }

    /// Runs a spawned closure now, as a plain call one frame deeper (lazy publication): it
    /// finishes before the spawner goes on, so the scope's count need not see it; a panic is
    /// recorded for the scope like any task's.
    #[inline(always)]
    fn run_in_place<F>(&self, fl: &FiberLocal, depth: u32, f: F)
    where
        F: FnOnce(&Scope<'scope>),
    {
        fl.depth.set(depth + 1);
        if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| f(self))) {
            self.record_panic(p);
        }
        fl.depth.set(depth);
    }

    /// Wraps a spawned closure as a task of this scope: catches its panic and counts it finished.
    pub(crate) fn task<F>(&self, f: F) -> impl FnOnce() + Send + 'scope
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let sp = SendPtr(self as *const Scope<'scope>);
        move || {
            let sp = sp;
            // SAFETY: the scope waits for this task before it is dropped.
            let s = unsafe { &*sp.0 };
            if let Some(wt) = worker::current() {
                wt.flush_finished_unless(&s.count);
            }
            if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| f(s))) {
                s.record_panic(p);
            }
            // The task may have moved to another worker: count it where it finished.
            match worker::current() {
                Some(wt) => wt.defer_finish(&s.count),
                None => s.finish_one(),
            }
        }
    }

    fn finish_one(&self) {
        if let Some(w) = self.count.decrement() {
            crate::fiber::make_ready(w);
        }
    }

    fn record_panic(&self, p: Panic) {
        let b = Box::into_raw(Box::new(p));
        if self
            .panic
            // AcqRel: the Release half publishes the boxed panic to `take_panic`'s swap (the
            // scope's count orders them too). Failure Acquire: more than needed, as the loser
            // only frees its own box, which was never published.
            .compare_exchange(std::ptr::null_mut(), b, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: `b` was not published; only the first panic is kept.
            drop(unsafe { Box::from_raw(b) });
        }
    }

    /// The end of a scope whose tasks have all finished: the body's result, or the first panic
    /// (the body's before any task's).
    fn finish<R>(&self, r: std::thread::Result<R>) -> R {
        if let Err(p) = r {
            panic::resume_unwind(p)
        }
        if let Some(p) = self.take_panic() {
            panic::resume_unwind(p)
        }
        r.unwrap_or_else(|_| unreachable!())
    }

    fn take_panic(&self) -> Option<Panic> {
        // AcqRel: the Acquire half pairs with `record_panic`'s Release, so the box is seen
        // whole; the Release half publishes nothing (only the scope's owner stores null).
        let p = self.panic.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: a non-null pointer was leaked by `record_panic` and is taken once.
        (!p.is_null()).then(|| *unsafe { Box::from_raw(p) })
    }

    /// The lineage of this scope's spawns (`leapfrog.rs`): alive until the scope has ended,
    /// which is after every spawn has finished.
    #[inline(always)]
    pub(crate) fn lineage(&self) -> *const Lineage {
        self.node.as_ptr()
    }

    /// The sync point: see [`wait_for_count`].
    fn wait(&self, fl: &FiberLocal, mark: &SyncMark) {
        wait_for_count(&self.count, fl, mark, self.sync_tag, true);
    }
}

/// A spawned closure, boxed: what a pool that checks for races spawns.
type BoxedChild<'scope> = Box<dyn FnOnce(&Scope<'scope>) + Send + 'scope>;

/// `f` as a child in a pool that checks for races: with the context the pool's structure
/// (`hooks::Structure`) gives the spawner's child, made now, and run in it wherever it runs;
/// `f` itself where there is none (no worker, or no pool that checks).
fn with_checked_child(f: BoxedChild<'_>) -> BoxedChild<'_> {
    match worker::checked_child() {
        Some(c) => Box::new(move |s: &Scope<'_>| worker::run_in(c, || f(s))),
        None => f,
    }
}

/// `f`, holding `ticket` (if any) until it has run or is dropped unrun: a heap task of a
/// schedule region's task that has no cursor keeps the region open (`position::Ticket`).
#[inline(always)]
fn holding<'scope, F>(ticket: Option<Ticket>, f: F) -> impl FnOnce(&Scope<'scope>) + Send + 'scope
where
    F: FnOnce(&Scope<'scope>) + Send + 'scope,
{
    move |s| match ticket {
        Some(t) => t.run(|| f(s)),
        None => f(s),
    }
}

/// A finish's sync point (a scope's, or a schedule region's end): runs the tasks pushed above
/// `mark` while nothing else ran here, then suspends until `count` reaches zero. The caller has
/// already taken back the count that stood for its own body.
///
/// `named`: the tasks counted name the count's latch in their lineage (a scope's spawns), so
/// the thread may start only those while it waits (`leapfrog.rs`). A schedule region's end also
/// waits for what its tasks spawned into enclosing scopes, which name those scopes: it waits
/// open ([`OPEN`](crate::leapfrog::OPEN)), as a wait did before the rule.
pub(crate) fn wait_for_count(
    count: &CountLatch,
    fl: &FiberLocal,
    mark: &SyncMark,
    tag: Tag,
    named: bool,
) {
    let key = match named {
        true => &count.latch as *const _ as usize,
        false => crate::leapfrog::OPEN,
    };
    while !count.latch.probe() {
        match pop_above(fl, mark, None, key) {
            Popped::RanOther => continue,
            Popped::Mine | Popped::Stop => break,
        }
    }
    // Our own deferred completions may be the last ones this count waits for.
    if let Some(wt) = worker::current() {
        wt.flush_finished();
    }
    // Whatever is still counted was taken by thieves (or is suspended elsewhere).
    crate::fiber::suspend_until_keyed(&count.latch, tag, Some(mark.bottom), key);
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        drop(self.take_panic());
    }
}

/// The frame of a work-first spawn, in the preempted parent's stack.
#[repr(C, align(8))]
struct WfFrame<F> {
    /// The scope's node (first, see `JobRef::lineage`).
    lineage: *const Lineage,
    f: UnsafeCell<Option<F>>,
}

impl<F: FnOnce() + Send> WfFrame<F> {
    fn as_job_ref(&self) -> JobRef {
        // SAFETY: the parent stays suspended (so the frame stays alive) until `entry` has moved the
        // closure out and published the parent as a continuation.
        unsafe { JobRef::new(self as *const Self as *const (), Self::entry) }
    }
    /// # Safety
    /// `data` came from `as_job_ref`, and this is the frame's one run, on the child's fiber,
    /// while the parent that holds the frame is suspended.
    unsafe fn entry(data: *const ()) {
        // SAFETY: the dispatcher runs this frame once, on the child's fiber, while the parent
        // (whose stack holds the frame) stays suspended.
        let f = unsafe { (*(*(data as *const Self)).f.get()).take() }
            .expect("work-first child run twice");
        // Only now may the parent continue (and drop the frame).
        worker::current()
            .expect("work-first child outside a worker")
            .publish_continuation();
        f()
    }
}
