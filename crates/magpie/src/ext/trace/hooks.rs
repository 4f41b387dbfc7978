//! The recorder as the core's tracing hook (`hooks::Tracing`): what a worker records for the
//! steal tree (`ext/trace/record.rs`), and when: the tag of an event it publishes, the phase it
//! begins or resumes when it takes an item, and when it runs out of work; and the tag of an
//! install's root, sent from a plain thread. The core makes each call behind the worker's
//! tracing flag (`core/trace_points.rs`).

use crate::deque::Item;
use crate::hooks::Tracing;
use crate::job::Work;
use crate::trace::record::{Meaning, Recorder, Tag};
use crate::trace::{Origin, Taken};
use std::any::Any;

impl Tracing for Recorder {
    fn tag(&self, me: usize, events: u64, level: u32) -> Tag {
        self.cursor(me).tag(me, events, level)
    }

    fn tags(&self, me: usize, events: u64, level: u32) -> (Tag, Tag) {
        let tag = self.tag(me, events, level);
        (tag, tag.second())
    }

    fn phase(&self, me: usize) -> u32 {
        self.cursor(me).phase()
    }

    fn back_to(&self, me: usize, events: u64, phase: u32) {
        self.cursor(me).switch_to(self, me, events, phase);
    }

    fn idle(&self, me: usize, events: u64) {
        self.cursor(me).idle(self, me, events);
    }

    /// Starts or resumes the phase the item taken belongs to.
    fn took(&self, me: usize, events: u64, it: Item, popped: bool, serial: bool) {
        let cursor = self.cursor(me);
        let origin = |tag: Tag, taken: Taken| match (tag.root_ordinal(), tag.event()) {
            (Some(ordinal), _) => Origin::Root { ordinal },
            (None, Some(from)) => Origin::Stolen {
                from,
                taken,
                level: tag.level(),
            },
            (None, None) => Origin::External,
        };
        match Work::decode(it) {
            Work::Task { job, continuation } => {
                // SAFETY: in a tracing pool every task frame that goes on a deque starts with its
                // tag (see `JobRef::tag`), and the worker that took the item has not run it yet.
                let tag = unsafe { job.tag() };
                let taken = if continuation {
                    Taken::Continuation
                } else {
                    Taken::Child
                };
                match cursor.own_phase(me, tag) {
                    Some(idx) if popped => cursor.switch_to(self, me, events, idx),
                    // Stolen, queued from outside, or moved here in a batch from a victim.
                    _ => cursor.begin(self, me, events, origin(tag, taken)),
                }
            }
            Work::Resume(f) => {
                // SAFETY: a ready fiber's box stays alive until it is resumed; only the worker
                // that took its item reads it, and it has not resumed it yet.
                let fb = unsafe { f.get() };
                let tag = fb.tag.get();
                let own = cursor.own_phase(me, tag).filter(|_| popped);
                let o = if fb.at_sync.get() {
                    tag.event()
                        .map_or(Origin::External, |sync| Origin::Resumed { sync })
                } else if serial && popped {
                    // The child returned on the fiber that now pops its parent: the parent goes
                    // on in the phase the child ended in, as if the spawn had run in place.
                    return;
                } else if let (Some(_), Some(from)) = (own, tag.event()) {
                    Origin::Early { from }
                } else {
                    origin(tag, Taken::Continuation)
                };
                cursor.begin(self, me, events, o);
            }
            Work::Batch(_) => {}
        }
    }

    fn next_root(&self) -> Tag {
        Recorder::next_root(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
