//! Snapshots: what the dashboard and the headless progress line read.
//!
//! The runner publishes one [`Snapshot`] per tick. Front ends only read
//! snapshots and send actions; they never touch the fleet.

use std::time::Duration;

use crate::ownership::learn::Learned;
use crate::ownership::Attribution;
use crate::topology::{Fault, Policy};

use super::action::Event;

/// What a service is doing right now, for colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceState {
    /// Answering successfully.
    Healthy,
    /// Failing on its own and claiming: the owner.
    Owner,
    /// Passing errors from below up, unclaimed.
    Propagating,
    /// Its request context is dropped.
    ContextDropped,
    /// Listener closed.
    Down,
    /// Shedding over capacity.
    Shedding,
    /// No traffic in the window.
    Idle,
}

/// One service, live.
#[derive(Debug, Clone)]
pub struct ServiceView {
    /// Name.
    pub name: String,
    /// Depth from the entry.
    pub depth: usize,
    /// Requests per second over the window.
    pub rps: f64,
    /// Entry rate × baseline multiplicity.
    pub baseline_rps: f64,
    /// `rps / baseline_rps` (`None` when there is no baseline traffic).
    pub amplification: Option<f64>,
    /// What the model predicts under the current faults and policy.
    pub model_amplification: f64,
    /// Errors / requests over the window.
    pub error_rate: f64,
    /// Claims returned since the last reset: true, false, missing.
    pub claims_returned: [u64; 3],
    /// Claims seen since the last reset: true, false, missing.
    pub claims_seen: [u64; 3],
    /// Retries sent since the last reset.
    pub retries_sent: u64,
    /// Retries suppressed since the last reset.
    pub retries_suppressed: u64,
    /// Budget denials since the last reset.
    pub budget_denied: u64,
    /// Retries per second over the window.
    pub retry_rps: f64,
    /// Own errors, wrongly unclaimed, wrongly claimed since the last reset.
    pub attribution: (u64, u64, u64),
    /// Claims made by rule 5 since the last reset.
    pub at_least_once_claims: u64,
    /// The fault in force.
    pub fault: Fault,
    /// Context dropped.
    pub context_dropped: bool,
    /// Runs the ownership middleware.
    pub ownership: bool,
    /// An outside service.
    pub outside: bool,
    /// What it is doing.
    pub state: ServiceState,
    /// What its learned memory says about its dependencies (by service).
    pub learned: Vec<Learned>,
    /// Amplification per sample, oldest first (bounded).
    pub history: Vec<f64>,
}

/// One edge, live.
#[derive(Debug, Clone)]
pub struct EdgeView {
    /// Caller.
    pub from: usize,
    /// Callee.
    pub to: usize,
    /// Attempts per second.
    pub attempt_rps: f64,
    /// Retries per second.
    pub retry_rps: f64,
}

/// The end user's view.
#[derive(Debug, Clone, Default)]
pub struct RootView {
    /// Offered rate (the knob).
    pub offered_rps: f64,
    /// Sent per second over the window.
    pub rps: f64,
    /// Success fraction over the window.
    pub availability: f64,
    /// Latency p50 over the last sample, ms.
    pub p50_ms: f64,
    /// Latency p99 over the last sample, ms.
    pub p99_ms: f64,
    /// Sent since the last reset.
    pub sent: u64,
    /// Errors since the last reset.
    pub errors: u64,
    /// Dropped (in-flight bound) since the last reset.
    pub dropped: u64,
    /// Availability per sample, oldest first (bounded).
    pub availability_history: Vec<f64>,
    /// Sent per second per sample, oldest first (bounded).
    pub rps_history: Vec<f64>,
}

/// Everything a front end shows, at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Time since the run started.
    pub t: Duration,
    /// The topology's name.
    pub topology: String,
    /// The policy in force.
    pub policy: Policy,
    /// The attribution mode in force.
    pub attribution: Attribution,
    /// Whether rule 5 is on.
    pub at_least_once: bool,
    /// The window rates are measured over.
    pub window: Duration,
    /// Whether the load is paused.
    pub paused: bool,
    /// The end user's view.
    pub root: RootView,
    /// Storm radius over the window: max, and mean over roots with retries.
    pub radius_max: u64,
    /// See `radius_max`.
    pub radius_mean: f64,
    /// The model's radius for the faults and policy in force.
    pub radius_model: usize,
    /// The worst radius over every service failing, under this policy.
    pub radius_static: usize,
    /// Retries suppressed since the last reset.
    pub spurious_avoided: u64,
    /// Per service, topology order.
    pub services: Vec<ServiceView>,
    /// Per edge, topology order.
    pub edges: Vec<EdgeView>,
    /// The newest events, oldest first (bounded).
    pub events: Vec<Event>,
}
