//! How a dashboard can fail, apart from the lab it draws.
//!
//! Why its own type: the dashboard knows the terminal, a cast file and
//! the signals that end it, and nothing of the fleet or the command line.
//! The front ends turn it into the lab's [`RunError`], whose exit status
//! the SPEC fixes.

use std::path::PathBuf;

use chaoslab_model::error::{Interrupted, RunError};

/// What ended a dashboard abnormally.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The terminal failed under the dashboard.
    #[error("the terminal failed: {0}")]
    Terminal(#[source] std::io::Error),
    /// The dashboard ended abnormally (a panic, the run loop gone).
    #[error("{0}")]
    Dashboard(&'static str),
    /// A signal ended the dashboard; what ran is printed and written.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// The asciicast file (`--cast`) could not be written.
    #[error("writing the asciicast to {}: {source}", path.display())]
    Cast {
        /// Where.
        path: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
}

impl From<Error> for RunError {
    fn from(e: Error) -> RunError {
        match e {
            Error::Terminal(e) => RunError::Terminal(e),
            Error::Dashboard(why) => RunError::Dashboard(why),
            Error::Interrupted(i) => RunError::Interrupted(i),
            Error::Cast { path, source } => RunError::Output {
                what: "asciicast",
                path,
                source,
            },
        }
    }
}
