//! chaoslab's fleet: the part of the lab that runs.
//!
//! Why a crate of its own: everything here needs a runtime (tokio, axum,
//! reqwest, real sockets), and nothing in the model should. The fleet
//! reads the model's contract ([`chaoslab_model::topology`]), applies its
//! one fold of actions ([`chaoslab_model::lab`]) and fills its measured
//! values ([`chaoslab_model::metrics`]); front ends (the dashboard, the
//! headless runner, `compare`, `serve`) sit above it and only read
//! snapshots and send actions through a [`session::Session`].
//!
//! - [`middleware`]: the error-ownership middleware every service runs.
//! - [`fleet`]: the services themselves, bound on loopback.
//! - [`load`]: open- and closed-loop load into the roots.
//! - [`metrics`], [`observe`]: the live counters and the events that feed them.
//! - [`session`]: one run, its snapshots and its actions.
//! - [`endpoints`]: `/metrics` and the control API.
//! - [`sidecar`]: real nginx and HAProxy processes carrying a service's
//!   calls (SPEC section 17).
//! - [`signals`]: SIGINT and SIGTERM for the front ends without a terminal.

// The model's modules, named as this crate's code names them.
pub use chaoslab_model::{docs, error, format, lab, report, scenario, topology, yaml};

pub mod endpoints;
pub mod fleet;
pub mod load;
pub mod metrics;
pub mod middleware;
pub mod observe;
mod ports;
pub mod session;
pub mod sidecar;
pub mod signals;
