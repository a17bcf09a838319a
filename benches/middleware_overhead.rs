//! What the ownership middleware costs in throughput.
//!
//! Runs the 7-service chain with no faults at the highest rate the machine
//! sustains, alternating two fleets in one run: plain axum + reqwest (no
//! layer, no retry client, no headers) and the same fleet with the
//! ownership middleware on every hop. Load comes from `wrk` when it is
//! installed (a separate process, closed loop), otherwise from an
//! in-process closed-loop driver. Prints each round and the median ratio.
//!
//! `cargo bench --bench middleware_overhead` runs 5 rounds of 5 s each;
//! under `cargo test` it runs one short round as a smoke test.

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

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, secs) = if bench { (5, 5) } else { (1, 1) };
    let use_wrk = wrk_available();
    let topology = Arc::new(Topology::from_yaml(CHAIN, "bench-chain").expect("valid chain"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "middleware overhead: 7-service chain, no faults, {} for {secs} s per run, {rounds} round(s)",
        if use_wrk {
            format!("wrk -t1 -c{CONNECTIONS}")
        } else {
            format!("in-process closed loop, {CONNECTIONS} connections (wrk not found)")
        }
    );
    let (mut plain, mut owned, mut ratios) = (vec![], vec![], vec![]);
    for round in 1..=rounds {
        let mut pair = [0.0; 2];
        for (i, plain_mode) in [true, false].into_iter().enumerate() {
            let fleet = rt
                .block_on(Fleet::spawn(
                    topology.clone(),
                    FleetOptions {
                        seed: 1,
                        plain: plain_mode,
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
            "round {round}: plain {:>8.0} root req/s   ownership {:>8.0} root req/s   ratio {:.3}",
            pair[0], pair[1], ratio
        );
        plain.push(pair[0]);
        owned.push(pair[1]);
        ratios.push(ratio);
    }
    let r = median(&mut ratios);
    println!(
        "median: plain {:.0}, ownership {:.0} root req/s; ownership/plain = {:.3} (cost {:.1}%)",
        median(&mut plain),
        median(&mut owned),
        r,
        (1.0 - r) * 100.0
    );
}
