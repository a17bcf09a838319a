//! Runs: the lab that owns fleet, load, metrics and model; the actions
//! that change it; the snapshots that show it.

pub mod action;
pub mod lab;
pub mod runner;
pub mod snapshot;

pub use action::{Action, Event};
pub use lab::{Lab, LabOptions};
pub use runner::{drive, Plan};
pub use snapshot::Snapshot;
