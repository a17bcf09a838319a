//! What a run is made of, apart from the machinery that runs it: the
//! [`Action`]s that change a lab and the one fold that applies them
//! ([`state::apply`]), the catalogue of every figure ([`figures`]), the
//! [`Snapshot`] a running lab publishes, the [`RunRecord`] a finished one
//! hands back, and the expectations judged over its windows.
//!
//! The session (`chaoslab_fleet::session`) runs a lab with these, and a
//! front end steers it through [`Steer`]; the scenario
//! loader ([`crate::scenario`]) writes actions and expectations in them;
//! the reports ([`crate::report`]) read records through the catalogue.
//! None of them needs the others, so they stand side by side over this
//! module.

pub mod action;
pub mod expect;
pub mod figures;
pub mod record;
pub mod replicas;
pub mod roots;
pub mod snapshot;
mod snapshot_json;
pub mod state;
pub mod steer;
pub mod step;
pub mod stops;
pub mod timeline;

pub use action::{Action, Event, Origin};
pub use record::RunRecord;
pub use snapshot::Snapshot;
pub use state::{apply, fold, ActionError, Change, LabState};
pub use steer::Steer;
