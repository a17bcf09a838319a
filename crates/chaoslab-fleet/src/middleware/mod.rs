//! The ownership middleware as the fleet runs it: `tower-error-ownership`'s
//! server layer ([`server`]) and a retry client around reqwest
//! ([`client`]).
//!
//! The server half is the crate's public API and nothing else: each
//! service's layer shares the fleet's settings, and a [`server::LabObserver`]
//! opens the lab's request context (the trace down the call tree and the
//! deadline) and feeds the fleet's counters. The client half drives
//! `error-ownership`'s attempt machine with what the lab measures beside
//! it: replicas and their balancer, breakers, the don't-retry dialects of
//! other stacks, the wire tap; it records each call in the crate's
//! per-request record, where the layer finds it. A service of your own
//! adopts the same mechanism with `tower-error-ownership` and
//! `reqwest-error-ownership` (see `crates/reqwest-error-ownership/README.md`,
//! whose example has both).

pub mod balance;
pub mod client;
pub mod context;
mod edge;
mod hedged;
pub mod server;
mod slots;
mod wire;

pub use crate::observe::{
    Attempted, CallFailed, NoopObserver, Observer, RetrySent, Served, Trace, ABANDONED,
};
