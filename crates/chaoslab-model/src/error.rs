//! The error every command returns, and the exit status it maps to
//! (SPEC section 4: 0 ok, 1 an expectation failed, 2 bad input or usage;
//! and 3 when the machine refused to start the fleet).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::topology::TopologyError;

/// Exit status: an expectation failed.
pub const EXIT_EXPECTATION: u8 = 1;
/// Exit status: bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status: the environment refused what the lab needs (an OS resource
/// limit such as open files or loopback ports); running again after
/// changing the limit, or with a smaller topology, can succeed.
pub const EXIT_ENVIRONMENT: u8 = 3;
/// Exit status: a shard process of the mesh died during the run (SPEC
/// section 19); the results up to the end were printed and written, and
/// the report's `shards_lost` says which shard and when.
pub const EXIT_SHARD_LOST: u8 = 4;

/// An error that carries its exit status:
///
/// | status | variant |
/// |---|---|
/// | [`EXIT_EXPECTATION`] (1) | [`RunError::ExpectationFailed`] |
/// | [`EXIT_BAD_INPUT`] (2) | [`RunError::Usage`], [`RunError::Topology`], [`RunError::Input`], [`RunError::Output`] |
/// | [`EXIT_SHARD_LOST`] (4) | [`RunError::ShardLost`]: a shard process died mid-run |
/// | [`EXIT_ENVIRONMENT`] (3) | [`RunError::Session`] when the machine refused what the fleet needs (see [`crate::fleet::FleetError::is_environment`]): a port could not be bound, an HTTP client could not be built |
/// | 1 (failure) | any other [`RunError::Session`], [`RunError::Terminal`], [`RunError::Dashboard`] |
///
/// A session's error says which of these it is itself
/// ([`crate::session::SessionError::exit_status`]): it is converted with
/// its status, so this module needs nothing of the session.
/// | 130, 143 | [`RunError::Interrupted`]: SIGINT, SIGTERM (128 + the signal's number) |
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A flag or argument the user gave does not make sense.
    #[error("{0}")]
    Usage(String),
    /// The topology file is not valid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A file the user gave (a scenario) is not valid; the error names
    /// the file and the line.
    #[error(transparent)]
    Input(Box<dyn std::error::Error + Send + Sync>),
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
    /// A shard process died during the run (its results kept and
    /// reported).
    #[error("{0}")]
    ShardLost(String),
    /// The session could not start or finish ([`crate::session::SessionError`],
    /// converted with the exit status it calls for).
    #[error("{source}")]
    Session {
        /// The exit status the error calls for.
        status: u8,
        /// What went wrong.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The terminal failed under the dashboard.
    #[error("the terminal failed: {0}")]
    Terminal(#[source] std::io::Error),
    /// The dashboard ended abnormally (a panic, the run loop gone).
    #[error("{0}")]
    Dashboard(&'static str),
    /// A signal ended the run early; what ran is printed and written,
    /// marked interrupted.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

impl RunError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            RunError::Usage(_)
            | RunError::Topology(_)
            | RunError::Input(_)
            | RunError::Output { .. } => ExitCode::from(EXIT_BAD_INPUT),
            RunError::ExpectationFailed(_) => ExitCode::from(EXIT_EXPECTATION),
            RunError::ShardLost(_) => ExitCode::from(EXIT_SHARD_LOST),
            RunError::Session { status, .. } => ExitCode::from(*status),
            RunError::Terminal(_) | RunError::Dashboard(_) => ExitCode::FAILURE,
            RunError::Interrupted(i) => ExitCode::from(i.code),
        }
    }
}

impl RunError {
    /// A flag that does not make sense.
    pub fn usage(e: impl std::fmt::Display) -> RunError {
        RunError::Usage(e.to_string())
    }

    /// A file the user gave is not valid.
    pub fn input(e: impl std::error::Error + Send + Sync + 'static) -> RunError {
        RunError::Input(Box::new(e))
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

/// Writes `contents` to `path`, or to standard output without one (a
/// reader that stops early, `| head`, is not an error).
pub fn write_or_print(
    path: Option<&Path>,
    contents: &str,
    what: &'static str,
) -> Result<(), RunError> {
    use std::io::Write as _;
    if let Some(path) = path {
        return write_output(path, contents, what);
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(contents.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(RunError::Output {
            what,
            path: "stdout".into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// The same file whatever way the path names it: canonical where it
/// exists, else its canonical folder and its name.
fn identity(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (parent.canonicalize(), p.file_name()) {
        (Ok(d), Some(n)) => d.join(n),
        _ => p.to_path_buf(),
    }
}

/// Checks, before anything runs, that each output the user asked for
/// (`--report`, `--junit`, `--record`: the flag and the path) can be
/// written: not a folder, in a folder that exists, writable, not one of
/// the `inputs` (the topology, the scenario), and not the same file as
/// another output. A path that fails is bad input, with the reason.
pub fn check_outputs(outputs: &[(&str, &Path)], inputs: &[&Path]) -> Result<(), RunError> {
    let refuse = |flag: &str, p: &Path, why: String| {
        RunError::Usage(format!("{flag} {}: {why}", p.display()))
    };
    let mut seen: Vec<(&str, PathBuf)> = vec![];
    for &(flag, p) in outputs {
        if p.as_os_str().is_empty() {
            return Err(refuse(flag, p, "an empty path".into()));
        }
        if p.is_dir() {
            return Err(refuse(flag, p, "is a folder: give a file name".into()));
        }
        let id = identity(p);
        if let Some(input) = inputs.iter().find(|i| identity(i) == id) {
            return Err(refuse(
                flag,
                p,
                format!(
                    "is the input file {}: writing it would overwrite it",
                    input.display()
                ),
            ));
        }
        if let Some((other, _)) = seen.iter().find(|(_, o)| *o == id) {
            return Err(refuse(
                flag,
                p,
                format!("is also given to {other}: one would overwrite the other"),
            ));
        }
        seen.push((flag, id));
        if p.exists() {
            std::fs::OpenOptions::new()
                .append(true)
                .open(p)
                .map_err(|e| refuse(flag, p, format!("cannot be written: {e}")))?;
            continue;
        }
        let folder = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !folder.is_dir() {
            return Err(refuse(
                flag,
                p,
                format!("its folder {} does not exist", folder.display()),
            ));
        }
        // Created and removed again: the run writes it at its end.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .map_err(|e| refuse(flag, p, format!("cannot be created: {e}")))?;
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// A signal ended the run early; what ran is printed and written, marked
/// interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by {signal}: the table and reports cover the part that ran")]
pub struct Interrupted {
    /// `SIGINT` or `SIGTERM` (`SIGHUP` when a dashboard's terminal hung up).
    pub signal: &'static str,
    /// The exit status: 128 + the signal's number (130, 143, 129).
    pub code: u8,
}

impl Interrupted {
    /// The signal whose exit status is `code` (130 SIGINT, 143 SIGTERM,
    /// 129 SIGHUP).
    pub fn by_code(code: u8) -> Interrupted {
        let signal = match code {
            143 => "SIGTERM",
            129 => "SIGHUP",
            _ => "SIGINT",
        };
        Interrupted { signal, code }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_checked_before_the_run() {
        let dir = std::env::temp_dir().join(format!("chaoslab-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("t.yaml");
        std::fs::write(&input, "x").unwrap();
        let ok = dir.join("r.json");
        let why = |outputs: &[(&str, &Path)]| {
            check_outputs(outputs, &[&input]).map_err(|e| e.to_string())
        };
        assert_eq!(
            why(&[("--report", &ok), ("--junit", &dir.join("j.xml"))]),
            Ok(())
        );
        assert!(!ok.exists(), "the check leaves nothing behind");
        assert!(why(&[("--report", &dir)])
            .unwrap_err()
            .contains("is a folder"));
        assert!(why(&[("--report", &dir.join("no/r.json"))])
            .unwrap_err()
            .contains("does not exist"));
        let same = dir.join(".").join("t.yaml");
        assert!(why(&[("--report", &same)])
            .unwrap_err()
            .contains("is the input file"));
        let e = why(&[("--report", &ok), ("--junit", &dir.join("./r.json"))]).unwrap_err();
        assert!(
            e.starts_with("--junit ") && e.contains("is also given to --report"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
