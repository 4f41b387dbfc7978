//! Where the core tells the tracing hook (`hooks::Tracing`, the steal tree's recorder in
//! `ext/trace/`) what a worker did: the tag of an event it publishes, a scope it opens, the
//! phase it runs and goes back to, an item it takes, and a round in which it found nothing.
//! Each call point is behind the worker's `tracing` flag (`Core::tracing`), so a pool that does
//! not trace pays one branch there and no call; the calls themselves are out of line, so the
//! spawn and join functions that make them keep a small fast path.

use crate::hooks::Tracing;
use crate::job::{Tag, Work};
use crate::steal::Took;
use crate::worker::WorkerThread;

impl WorkerThread {
    /// Spawns and scope openings this worker has run (scopes are counted only when tracing): the
    /// event count tracing numbers a phase's events by (exact at any time: in-place joins not yet
    /// settled are `granted - credit`).
    #[inline]
    pub(crate) fn event_count(&self) -> u64 {
        let st = self.stats();
        st.spawns_wf.get() + st.spawns_hf.get() + st.scopes.get() + self.unsettled() as u64
    }

    /// The pool's tracing hook: called only where the worker's `tracing` flag is set, which the
    /// worker takes from a pool that has one.
    fn tracer(&self) -> &dyn Tracing {
        self.core
            .registry
            .tracer()
            .expect("a worker that traces runs in a pool with a tracing hook")
    }

    /// The tag of the event about to run at frame depth `level` (none unless the pool traces).
    /// The check is inline; the tag is computed out of line.
    #[inline(always)]
    pub(crate) fn trace_tag(&self, level: u32) -> Tag {
        if !self.core.tracing {
            return Tag::NONE;
        }
        self.trace_tag_now(level)
    }

    #[cold]
    #[inline(never)]
    fn trace_tag_now(&self, level: u32) -> Tag {
        self.tracer()
            .tag(self.core.index, self.event_count(), level)
    }

    /// The tags of an event's two published items (both halves of a join), none unless the
    /// pool traces.
    #[inline(always)]
    pub(crate) fn trace_tags(&self, level: u32) -> (Tag, Tag) {
        if !self.core.tracing {
            return (Tag::NONE, Tag::NONE);
        }
        self.trace_tags_now(level)
    }

    #[cold]
    #[inline(never)]
    fn trace_tags_now(&self, level: u32) -> (Tag, Tag) {
        self.tracer()
            .tags(self.core.index, self.event_count(), level)
    }

    /// Tracing: a scope opens at frame depth `level`; returns the tag of its opening event,
    /// which names its sync point. Scope openings are events only when tracing.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_scope_open(&self, level: u32) -> Tag {
        let tag = self.trace_tag_now(level);
        self.stats().scopes.bump();
        tag
    }

    /// Tracing: the phase this worker runs now, for [`trace_back_to`](Self::trace_back_to).
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_phase(&self) -> u32 {
        self.tracer().phase(self.core.index)
    }

    /// Tracing: the worker goes back to running its phase `phase`, as when it pops an item that
    /// phase published: an in-place join whose first half suspended runs its second half in
    /// the join's phase, where a published half popped back by this worker would run
    /// (`join::join_traced`).
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_back_to(&self, phase: u32) {
        self.tracer()
            .back_to(self.core.index, self.event_count(), phase);
    }

    /// Tracing: the worker found no work of its own.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_idle(&self) {
        self.tracer().idle(self.core.index, self.event_count());
    }

    /// Tracing: the worker took `w` (`took`: how); the hook starts or resumes the phase it
    /// belongs to.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_take(&self, w: Work, took: Took) {
        let serial = self.fibers.take_serial_cont();
        let serial = matches!(w, Work::Resume(f) if serial == Some(f));
        self.tracer().took(
            self.core.index,
            self.event_count(),
            w.encode(),
            took == Took::Popped,
            serial,
        );
    }
}
