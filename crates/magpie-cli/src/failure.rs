//! How a command fails: one `error: ...` line on stderr and an exit code that says what kind of
//! failure it was (bad input, a failed run, a stop or a race).

/// A command's failure, printed as one `error: ...` line on stderr.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad arguments or environment (exit 2).
    Usage(String),
    /// A run failed verification, crashed, or the OS refused something (exit 1).
    Failed(String),
    /// magpie stopped a work-first spawn at its stack limit (exit 3).
    Stopped(String),
    /// `magpie race` found a race (exit 3).
    Raced(String),
}

impl Failure {
    pub(crate) fn code(&self) -> u8 {
        match self {
            Failure::Failed(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Stopped(_) | Failure::Raced(_) => 3,
        }
    }
    pub(crate) fn message(&self) -> &str {
        match self {
            Failure::Usage(m) | Failure::Failed(m) | Failure::Stopped(m) | Failure::Raced(m) => m,
        }
    }
    /// A magpie configuration error is bad input; anything else from magpie is a failure.
    pub(crate) fn from_magpie(e: magpie::Error) -> Failure {
        match e {
            magpie::Error::Config { .. } => Failure::Usage(e.to_string()),
            _ => Failure::Failed(e.to_string()),
        }
    }
}

/// The end of a command that wrote a report: success, or one failure naming every
/// configuration that failed (they are in the report too).
pub(crate) fn none_failed(failed: &[String]) -> Result<(), Failure> {
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Failed(format!(
            "{} configuration(s) failed (see the report): {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}
