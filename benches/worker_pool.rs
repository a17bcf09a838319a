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
use drive::{driver, median, wrk, wrk_available, CONNECTIONS};

use chaoslab::fleet::{Fleet, FleetOptions};
use chaoslab::topology::Topology;

/// The same allocator as the `chaoslab` binary.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CHAIN: &str = r#"
name: bench-chain
description: seven services, no faults
policy: { preset: ownership, attempts: 2, budget: 0.1 }
services:
  A: { calls: [B] }
  B: { calls: [C] }
  C: { calls: [D] }
  D: { calls: [E] }
  E: { calls: [F] }
  F: { calls: [G] }
  G: {}
"#;

/// The same chain, every service with workers it never runs out of.
fn with_workers() -> String {
    CHAIN
        .replace("{ calls:", "{ workers: 256, calls:")
        .replace("G: {}", "G: { workers: 256 }")
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, secs) = if bench { (5, 5) } else { (1, 1) };
    let use_wrk = wrk_available();
    let unbounded = Arc::new(Topology::from_yaml(CHAIN, "bench-chain").expect("valid chain"));
    let pooled =
        Arc::new(Topology::from_yaml(&with_workers(), "bench-chain").expect("valid chain"));
    assert!(pooled.services.iter().all(|s| s.workers == Some(256)));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "worker pool: 7-service chain, no faults, {} for {secs} s per run, {rounds} round(s)",
        if use_wrk {
            format!("wrk -t1 -c{CONNECTIONS}")
        } else {
            format!("in-process closed loop, {CONNECTIONS} connections (wrk not found)")
        }
    );
    let (mut plain, mut pool, mut ratios) = (vec![], vec![], vec![]);
    for round in 1..=rounds {
        let mut pair = [0.0; 2];
        for (i, topology) in [&unbounded, &pooled].into_iter().enumerate() {
            let fleet = rt
                .block_on(Fleet::spawn(
                    topology.clone(),
                    FleetOptions {
                        seed: 1,
                        plain: false,
                    },
                ))
                .unwrap();
            let url = fleet.entry_url();
            // Warm the connection pools.
            rt.block_on(driver(url.clone(), 1));
            pair[i] = if use_wrk {
                wrk(&url, secs)
            } else {
                rt.block_on(driver(url, secs))
            };
            rt.block_on(fleet.shutdown());
        }
        let ratio = pair[1] / pair[0];
        println!(
            "round {round}: unbounded {:>8.0} root req/s   workers {:>8.0} root req/s   ratio {:.3}",
            pair[0], pair[1], ratio
        );
        plain.push(pair[0]);
        pool.push(pair[1]);
        ratios.push(ratio);
    }
    let r = median(&mut ratios);
    println!(
        "median: unbounded {:.0}, workers {:.0} root req/s; workers/unbounded = {:.3} (cost {:.1}%)",
        median(&mut plain),
        median(&mut pool),
        r,
        (1.0 - r) * 100.0
    );
}
