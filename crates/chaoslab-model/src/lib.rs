//! chaoslab's model: everything the lab knows that needs no runtime.
//!
//! Why a crate of its own: the rules that keep the lab layered (the model
//! imports no runtime, front ends only read snapshots and send actions)
//! held only by convention while the lab was one crate. Here the compiler
//! holds them: this crate cannot name tokio, axum, hyper, reqwest,
//! ratatui, crossterm or clap, so a topology can be checked, a storm
//! predicted, a scenario resolved and a report written by anything that
//! links it, a test, a fuzz target or another tool, without starting a
//! fleet.
//!
//! - [`yaml`], [`topology`]: the YAML contract, its validation, the
//!   analytical model, the static storm radius and the rule simulation.
//! - [`lab`]: the lab's [`Action`](lab::Action)s, the one fold that
//!   applies them, snapshots, the timeline and the figure catalogue.
//! - [`scenario`]: scripted timelines and their expectations.
//! - [`report`]: JSON, JUnit, tables and HTML over what was measured.
//! - [`metrics`]: the measured values themselves (counts, latency
//!   summaries, the storm radius) that the fleet's live counters fill.
//! - [`error`]: the error every command returns and its exit status.

pub mod docs;
pub mod error;
pub mod format;
pub mod lab;
pub mod metrics;
pub mod report;
pub mod scenario;
pub mod topology;
pub mod yaml;

pub use error::{RunError, EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_EXPECTATION};
