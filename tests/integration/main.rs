//! Integration tests: real binaries, real fleets on loopback.
//!
//! Tests that start a fleet take `common::fleet_lock()` so two fleets never
//! share the machine's cores.

mod bounds;
mod common;
mod control;
mod hostile;
mod industry;
mod mechanism;
mod metastable;
mod outside;
mod overload;
mod scale;
mod scenario;
mod tables;
mod telemetry;
mod topology_errors;
mod tui;
mod wire;
