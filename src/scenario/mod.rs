//! Runs: the lab that owns fleet, load, metrics and model; the actions
//! that change it; the snapshots that show it; and scenarios, the actions
//! on a clock with expectations over windows of the run.

pub mod action;
pub mod lab;
pub mod record;
pub mod runner;
pub mod snapshot;
pub mod spec;

pub use action::{Action, Event};
pub use lab::{Lab, LabOptions};
pub use runner::{drive, Plan};
pub use snapshot::Snapshot;
pub use spec::{Scenario, ScenarioError};
