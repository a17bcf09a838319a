//! The start every serving front end shares (`serve`, `node`, `load`,
//! `tap`): who may call the endpoints, SIGINT and SIGTERM watched before
//! the fleet binds, the session started, and `--metrics` and `--control`
//! listening over it.
//!
//! Why one helper: the order matters (a signal that comes while the fleet
//! binds must still stop it and keep what ran), and four copies of it had
//! begun to drift in the flags they read.

use crate::endpoints::Endpoints;
use crate::error::RunError;
use crate::options;
use crate::session::{Session, Setup};
use crate::signals::Interrupts;

/// A session started for a serving front end.
pub struct Launched {
    /// The running session.
    pub session: Session,
    /// The process's signals, attached to the session: the first stops it.
    pub interrupts: Interrupts,
    /// What `--metrics` and `--control` print: where they listen.
    pub listening: Vec<String>,
}

/// Starts `setup` with the access and endpoints `endpoints` ask for.
pub fn launch(endpoints: &options::Endpoints, setup: Setup) -> Result<Launched, RunError> {
    let access = endpoints.access().map_err(RunError::usage)?;
    let served = Endpoints::parse(&endpoints.metrics, &endpoints.control, &access)?;
    let interrupts = Interrupts::watch();
    let session = Session::start(Setup { access, ..setup })?;
    interrupts.attach(session.stopper());
    let listening = served.start(&session, vec![])?;
    Ok(Launched {
        session,
        interrupts,
        listening,
    })
}
