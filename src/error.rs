//! The error every command returns, and the exit status it maps to
//! (SPEC section 4: 0 ok, 1 an expectation failed, 2 bad input or usage).

use std::process::ExitCode;

use crate::topology;

/// Exit status: an expectation failed.
pub const EXIT_EXPECTATION: u8 = 1;
/// Exit status: bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;

/// An error that carries its exit status.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input: a topology, scenario, flag or file the user gave.
    #[error("{0}")]
    BadInput(String),
    /// One or more expectations failed (already reported).
    #[error("{0}")]
    ExpectationFailed(String),
    /// Anything else: the lab itself failed.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<topology::TopologyError> for RunError {
    fn from(e: topology::TopologyError) -> Self {
        RunError::BadInput(e.to_string())
    }
}

impl RunError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            RunError::BadInput(_) => ExitCode::from(EXIT_BAD_INPUT),
            RunError::ExpectationFailed(_) => ExitCode::from(EXIT_EXPECTATION),
            RunError::Other(_) => ExitCode::FAILURE,
        }
    }
}

/// Writes an output file the user asked for (`what` names it in the
/// message: "report", "JUnit report", "recording"); a path that cannot be
/// written is bad input.
pub fn write_output(path: &std::path::Path, contents: &str, what: &str) -> Result<(), RunError> {
    std::fs::write(path, contents)
        .map_err(|e| RunError::BadInput(format!("writing the {what} to {}: {e}", path.display())))
}
