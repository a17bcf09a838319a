//! The error every command returns, and the exit status it maps to
//! (SPEC section 4: 0 ok, 1 an expectation failed, 2 bad input or usage).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::scenario::ScenarioError;
use crate::session::SessionError;
use crate::topology::TopologyError;

/// Exit status: an expectation failed.
pub const EXIT_EXPECTATION: u8 = 1;
/// Exit status: bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;

/// An error that carries its exit status.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A flag or argument the user gave does not make sense.
    #[error("{0}")]
    Usage(String),
    /// The topology file is not valid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The scenario file is not valid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// An output file the user asked for cannot be written.
    #[error("writing the {what} to {}: {source}", path.display())]
    Output {
        /// What the file is ("report", "JUnit report", "recording").
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// One or more expectations failed (already reported).
    #[error("{0}")]
    ExpectationFailed(String),
    /// The session could not start or finish.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The terminal failed under the dashboard.
    #[error("the terminal failed: {0}")]
    Terminal(#[source] std::io::Error),
    /// The dashboard ended abnormally (a panic, the run loop gone).
    #[error("{0}")]
    Dashboard(&'static str),
}

impl RunError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            RunError::Usage(_)
            | RunError::Topology(_)
            | RunError::Scenario(_)
            | RunError::Output { .. } => ExitCode::from(EXIT_BAD_INPUT),
            RunError::ExpectationFailed(_) => ExitCode::from(EXIT_EXPECTATION),
            RunError::Session(_) | RunError::Terminal(_) | RunError::Dashboard(_) => {
                ExitCode::FAILURE
            }
        }
    }
}

/// Writes an output file the user asked for (`what` names it in the
/// message: "report", "JUnit report", "recording"); a path that cannot be
/// written is bad input.
pub fn write_output(path: &Path, contents: &str, what: &'static str) -> Result<(), RunError> {
    std::fs::write(path, contents).map_err(|source| RunError::Output {
        what,
        path: path.to_path_buf(),
        source,
    })
}
