//! Integration tests: real binaries, real fleets on loopback.
//!
//! Tests that start a fleet take `common::fleet_lock()` so two fleets never
//! share the machine's cores.

mod access;
mod bounds;
mod common;
mod control;
mod defences;
mod docs;
mod endpoints;
mod generate;
mod hostile;
mod html;
mod import;
mod incident;
mod industry;
mod input_bounds;
mod k8s;
mod limits;
mod lint;
mod mechanism;
mod meshes;
mod metastable;
mod netns;
mod nodes;
mod outliers;
mod outside;
mod overload;
mod papercuts;
mod processes;
mod retriers;
mod saturation;
mod scale;
mod scenario;
mod shards;
mod sidecars;
mod signals;
mod sweep;
mod tables;
mod telemetry;
mod topology_errors;
mod tour;
mod tui;
mod wire;
