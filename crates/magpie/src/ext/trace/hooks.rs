//! What a worker records for the steal tree (`ext/trace/record.rs`), and when: the tag of an event
//! it publishes, the phase it begins or resumes when it takes an item, and when it runs out of
//! work; and the tag of an install's root, sent from a plain thread. Every hook is behind
//! `Core::tracing` (or the pool's recorder, for an install), so a pool that does not trace pays
//! one branch on its publishing paths.

use crate::job::Work;
use crate::registry::Registry;
use crate::steal::Took;
use crate::trace::record::{Recorder, Tag};
use crate::trace::{Origin, Taken};
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

    /// The tag of the event about to run at frame depth `level` (none unless the pool traces).
    /// The check is inline; the tag is computed out of line, so that the spawn functions whose
    /// publishing branches call this keep a small fast path when tracing is off.
    #[inline(always)]
    pub(crate) fn trace_tag(&self, level: u32) -> Tag {
        if !self.core.tracing {
            return Tag::NONE;
        }
        self.trace_tag_now(level)
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn trace_tag_now(&self, level: u32) -> Tag {
        self.recorder()
            .cursor(self.core.index)
            .tag(self.core.index, self.event_count(), level)
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
        self.recorder().cursor(self.core.index).phase()
    }

    /// Tracing: the worker goes back to running its phase `idx`, as when it pops an item that
    /// phase published: an in-place join whose first half suspended runs its second half in
    /// the join's phase, where a published half popped back by this worker would run
    /// (`join::join_traced`).
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_back_to(&self, idx: u32) {
        let rec = self.recorder();
        rec.cursor(self.core.index)
            .switch_to(rec, self.core.index, self.event_count(), idx);
    }

    /// The pool's recorder, kept among its extensions (`hooks.rs`).
    pub(crate) fn recorder(&self) -> &Recorder {
        self.core
            .registry
            .extensions
            .get::<Recorder>()
            .expect("tracing without a recorder")
    }

    /// Tracing: the worker found no work of its own.
    pub(crate) fn trace_idle(&self) {
        let rec = self.recorder();
        rec.cursor(self.core.index)
            .idle(rec, self.core.index, self.event_count());
    }

    /// Tracing: the worker took `w`; start or resume the phase it belongs to.
    pub(crate) fn trace_take(&self, w: Work, took: Took) {
        let rec = self.recorder();
        let count = self.event_count();
        let serial = self.fibers.take_serial_cont();
        let me = self.core.index;
        let cursor = rec.cursor(me);
        let origin = |tag: Tag, taken: Taken| match (tag.root_ordinal(), tag.event()) {
            (Some(ordinal), _) => Origin::Root { ordinal },
            (None, Some(from)) => Origin::Stolen {
                from,
                taken,
                level: tag.level(),
            },
            (None, None) => Origin::External,
        };
        match w {
            Work::Task { job, continuation } => {
                // SAFETY: in a tracing pool every task frame that goes on a deque starts with its
                // tag (see `JobRef::tag`).
                let tag = unsafe { job.tag() };
                let taken = if continuation {
                    Taken::Continuation
                } else {
                    Taken::Child
                };
                match cursor.own_phase(me, tag) {
                    Some(idx) if took == Took::Popped => cursor.switch_to(rec, me, count, idx),
                    // Stolen, queued from outside, or moved here in a batch from a victim.
                    _ => cursor.begin(rec, me, count, origin(tag, taken)),
                }
            }
            Work::Resume(f) => {
                // SAFETY: a ready fiber's box stays alive until it is resumed; only the worker
                // that took its item reads it.
                let fb = unsafe { f.get() };
                let tag = fb.tag.get();
                let own = cursor.own_phase(me, tag).filter(|_| took == Took::Popped);
                let o = if fb.at_sync.get() {
                    tag.event()
                        .map_or(Origin::External, |sync| Origin::Resumed { sync })
                } else if serial == Some(f) && took == Took::Popped {
                    // The child returned on the fiber that now pops its parent: the parent goes
                    // on in the phase the child ended in, as if the spawn had run in place.
                    return;
                } else if let (Some(_), Some(from)) = (own, tag.event()) {
                    Origin::Early { from }
                } else {
                    origin(tag, Taken::Continuation)
                };
                cursor.begin(rec, me, count, o);
            }
            Work::Batch(_) => {}
        }
    }
}

impl Registry {
    /// The tag of an install's root sent from a plain thread: the next root of the trace, or
    /// none unless the pool traces.
    pub(crate) fn install_tag(&self) -> Tag {
        self.extensions
            .get::<Recorder>()
            .map_or(Tag::NONE, Recorder::next_root)
    }
}
