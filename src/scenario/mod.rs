//! Scenarios: the file format for a timeline of actions with expectations
//! over windows of the run ([`spec`]), and recordings, a session's actions
//! written back as a scenario file ([`record`]).

pub mod record;
pub mod spec;

pub use spec::{Scenario, ScenarioError};
