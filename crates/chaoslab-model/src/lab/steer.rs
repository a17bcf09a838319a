//! How a front end steers a running lab: it sends [`Action`]s, moves a
//! scripted timeline on, and asks for what has been measured so far.
//!
//! Why a trait here: a front end (the dashboard, a scenario's judge)
//! should depend on what it may do to a lab, not on the runtime that runs
//! it. The fleet's session implements it over its command queue; the
//! dashboard's crate knows only this, so it never links the fleet's HTTP
//! stack. Every method returns at once: a busy run loop drops a request
//! rather than block the sender.

use std::future::Future;
use std::pin::Pin;

use super::{Action, RunRecord};

/// What [`Steer::record_so_far`] returns: the record, once the run loop
/// has answered (`None` when the run is over).
pub type RecordSoFar = Pin<Box<dyn Future<Output = Option<RunRecord>> + Send>>;

/// A sender of a front end's requests to a running lab.
pub trait Steer: Send + Sync + 'static {
    /// Sends one action; `false` when the queue is full or the run is
    /// over (the action is dropped, never waited for).
    fn send(&self, action: Action) -> bool;
    /// Plays the timeline's next step now; `false` when the queue is full
    /// or the run is over.
    fn next_step(&self) -> bool;
    /// Holds the timeline (`on`) or lets it run again.
    fn hold(&self, on: bool) -> bool;
    /// What the run has measured so far.
    fn record_so_far(&self) -> RecordSoFar;
}
