//! Typed errors of the library. The CLI prints them on one line and exits non-zero.

use std::fmt;

/// Everything that can go wrong when configuring or running a pool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A builder setting or environment variable has a value magpie cannot use.
    Config {
        /// The setting (`workers`, `MAGPIE_POLICY`, ...).
        setting: String,
        /// The value given.
        value: String,
        /// What was expected instead.
        expected: String,
    },
    /// The operating system refused a thread or a stack.
    Os(String),
    /// A work-first spawn would have grown the stack beyond its limit. Raised (as a panic payload
    /// that reaches the caller of `install`, `scope` or `join`) instead of overflowing the stack.
    StackLimit {
        /// What ran out: fibers in use, or bytes left on the current fiber's stack.
        what: String,
        /// The limit in force.
        limit: String,
    },
    /// `Builder::use_current_thread` on a thread that is already a worker of a pool, or lent
    /// to one that is still live.
    CurrentThreadInPool,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config {
                setting,
                value,
                expected,
            } => write!(f, "invalid {setting} `{value}`: expected {expected}"),
            Error::Os(e) => write!(f, "operating system error: {e}"),
            Error::CurrentThreadInPool => f.write_str(
                "use_current_thread: the calling thread is already a worker of a pool, or lent to \
                 one that has not been dropped",
            ),
            Error::StackLimit { what, limit } => write!(
                f,
                "stack limit reached: {what} (limit {limit}); work-first spawning needs stack for every \
                 pending continuation, use Policy::Adaptive or Policy::HelpFirst, or raise the limit"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    pub(crate) fn config(setting: &str, value: impl fmt::Display, expected: &str) -> Error {
        Error::Config {
            setting: setting.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }

    /// Recovers a magpie error from a panic payload (as caught by `catch_unwind` around
    /// `install`), so a program can report a stack-limit stop as an error, not a crash.
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Option<&Error> {
        payload.downcast_ref::<Error>()
    }
}
