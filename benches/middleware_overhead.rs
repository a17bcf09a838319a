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
//! under `cargo test` it runs one short round as a smoke test. With
//! `-- --fixed plain|traced|ownership N` it sends exactly N root requests
//! to one fleet, for a profile under callgrind (see
//! `fixed::fixed_from_args`); `traced` is the plain fleet carrying the
//! lab's trace header on every call and bounding each call with its
//! timeout, as a chain that traces its requests and times out its calls
//! does (`FleetOptions::plain_traced`).

use std::sync::Arc;

#[path = "common/drive.rs"]
mod drive;
use drive::{alternate, Side, CHAIN};

#[path = "common/fixed.rs"]
mod fixed;

use chaoslab::fleet::FleetOptions;
use chaoslab::topology::Topology;

/// The same allocator as the `chaoslab` binary.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let topology = Arc::new(Topology::from_yaml(CHAIN, "bench-chain").expect("valid chain"));
    let side = |name, plain, plain_traced| Side {
        name,
        topology: topology.clone(),
        opts: FleetOptions {
            seed: 1,
            plain,
            plain_traced,
            ..FleetOptions::default()
        },
    };
    let [plain, traced, ownership] = [
        side("plain", true, false),
        side("traced", true, true),
        side("ownership", false, false),
    ];
    if fixed::fixed_from_args(&[plain.clone(), traced, ownership.clone()]) {
        return;
    }
    alternate("middleware overhead", [plain, ownership]);
}
