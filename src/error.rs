//! The error every command returns, and the exit status it maps to
//! (SPEC section 4: 0 ok, 1 an expectation failed, 2 bad input or usage;
//! and 3 when the machine refused to start the fleet).

use std::process::ExitCode;

use crate::fleet::FleetError;
use crate::topology;

/// Exit status: an expectation failed.
pub const EXIT_EXPECTATION: u8 = 1;
/// Exit status: bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status: the environment refused what the lab needs (an OS resource
/// limit such as open files or loopback ports); running again after
/// changing the limit, or with a smaller topology, can succeed.
pub const EXIT_ENVIRONMENT: u8 = 3;

/// An error that carries its exit status:
///
/// | status | variant |
/// |---|---|
/// | [`EXIT_EXPECTATION`] (1) | [`RunError::ExpectationFailed`] |
/// | [`EXIT_BAD_INPUT`] (2) | [`RunError::BadInput`] |
/// | [`EXIT_ENVIRONMENT`] (3) | [`RunError::Fleet`] when the machine refused (see [`FleetError::is_environment`]): a port could not be bound, an HTTP client could not be built |
/// | 1 (failure) | [`RunError::Other`], and any other [`RunError::Fleet`] (a topology that skipped validation) |
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input: a topology, scenario, flag or file the user gave.
    #[error("{0}")]
    BadInput(String),
    /// One or more expectations failed (already reported).
    #[error("{0}")]
    ExpectationFailed(String),
    /// The fleet could not start; the message names the service and, for an
    /// OS resource limit, what to raise.
    #[error(transparent)]
    Fleet(#[from] FleetError),
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
            RunError::Fleet(e) if e.is_environment() => ExitCode::from(EXIT_ENVIRONMENT),
            RunError::Fleet(_) => ExitCode::FAILURE,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::server::BadHeaderName;

    #[test]
    fn a_fleet_the_machine_refuses_exits_3() {
        let emfile = FleetError::bind("z4066", std::io::Error::from_raw_os_error(24));
        let e = RunError::from(emfile);
        assert_eq!(e.exit_code(), ExitCode::from(EXIT_ENVIRONMENT));
        assert!(e.to_string().contains("service `z4066`"), "{e}");
        let header = RunError::from(FleetError::ClaimHeader {
            service: "A".into(),
            source: BadHeaderName("x bad".into()),
        });
        assert_eq!(header.exit_code(), ExitCode::FAILURE);
    }
}
