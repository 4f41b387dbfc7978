//! The one door through which the runtime's concurrent structures reach atomics, mutexes and
//! condition variables: `std` in normal builds, `loom` under `RUSTFLAGS="--cfg loom"`, so the deque,
//! the latches and the sleep protocol can be model-checked without changing a line of them.

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic;
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex};

/// Pads and aligns a value to a cache line so that fields written by different threads do not
/// share one (false sharing is the main cost of a deque's thief-side counters).
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Locks a mutex, ignoring poisoning: the runtime's own critical sections never panic, and a
/// panic in user code never happens while one of these locks is held.
pub(crate) fn lock<T>(m: &Mutex<T>) -> crate::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;
#[cfg(not(loom))]
pub(crate) use std::sync::MutexGuard;
