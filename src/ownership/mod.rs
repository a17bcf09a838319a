//! Error ownership: the rules come from the [`error_ownership`] crate
//! (re-exported here whole, so `chaoslab::ownership::retry` is
//! `error_ownership::retry`); what the lab's middleware reports as it
//! works, for its counters, is [`observe`].

pub use error_ownership::*;

pub mod observe;
