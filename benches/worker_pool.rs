//! What finite workers cost when they are not the bottleneck.
//!
//! Runs the 7-service chain with no faults at the highest rate the machine
//! sustains, alternating two fleets in one run, both with the ownership
//! middleware: every service unbounded (as without SPEC section 7), and
//! every service with `workers: 256` and no service time, so each request
//! goes through the queue and a worker task but never waits for a worker.
//! Load comes from `wrk` when it is installed, otherwise from an
//! in-process closed-loop driver. Prints each round and the median ratio.
//!
//! `cargo bench --bench worker_pool` runs 5 rounds of 5 s each; under
//! `cargo test` it runs one short round as a smoke test.

use std::sync::Arc;

#[path = "common/drive.rs"]
mod drive;
use drive::{alternate, Side, CHAIN};

use chaoslab::fleet::FleetOptions;
use chaoslab::topology::Topology;

/// The same allocator as the `chaoslab` binary.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The same chain, every service with workers it never runs out of.
fn with_workers() -> String {
    CHAIN
        .replace("{ calls:", "{ workers: 256, calls:")
        .replace("G: {}", "G: { workers: 256 }")
}

fn main() {
    let unbounded = Arc::new(Topology::from_yaml(CHAIN, "bench-chain").expect("valid chain"));
    let pooled =
        Arc::new(Topology::from_yaml(&with_workers(), "bench-chain").expect("valid chain"));
    assert!(pooled.services.iter().all(|s| s.workers == Some(256)));
    let side = |name, topology: &Arc<Topology>| Side {
        name,
        topology: topology.clone(),
        opts: FleetOptions {
            seed: 1,
            ..FleetOptions::default()
        },
    };
    alternate(
        "worker pool",
        [side("unbounded", &unbounded), side("workers", &pooled)],
    );
}
