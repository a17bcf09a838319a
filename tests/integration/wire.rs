//! The claim header is on the wire: a raw TCP client reads it from a
//! running fleet.

use std::sync::Arc;

use chaoslab::fleet::{Fleet, FleetOptions};
use chaoslab::topology::Topology;

use crate::common::{fleet_lock, raw_get, root};

#[test]
fn claim_headers_travel_on_real_sockets() {
    let _fleet = fleet_lock();
    let t = Topology::load(&root().join("topologies/three-node.yaml")).unwrap();
    let header = t.ownership.header.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fleet = rt
        .block_on(Fleet::spawn(Arc::new(t), FleetOptions::default()))
        .unwrap();
    let (a, b, c) = (fleet.url(0), fleet.url(1), fleet.url(2));
    // Blocking sockets off the runtime's threads.
    let heads = std::thread::spawn(move || (raw_get(&a), raw_get(&b), raw_get(&c)))
        .join()
        .unwrap();
    rt.block_on(fleet.shutdown());
    let (a, b, c) = heads;
    assert!(c.starts_with("http/1.1 500"), "{c}");
    assert!(
        c.contains(&format!("\r\n{header}: true")),
        "C owns its error:\n{c}"
    );
    assert!(b.starts_with("http/1.1 500"), "{b}");
    assert!(
        b.contains(&format!("\r\n{header}: false")),
        "B passes it up:\n{b}"
    );
    assert!(
        a.contains(&format!("\r\n{header}: false")),
        "A passes it up:\n{a}"
    );
}

#[test]
fn successes_carry_no_claim_header() {
    let _fleet = fleet_lock();
    let mut t = Topology::load(&root().join("topologies/three-node.yaml")).unwrap();
    for s in &mut t.services {
        s.fault = Default::default();
    }
    let header = t.ownership.header.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fleet = rt
        .block_on(Fleet::spawn(Arc::new(t), FleetOptions::default()))
        .unwrap();
    let a = fleet.url(0);
    let head = std::thread::spawn(move || raw_get(&a)).join().unwrap();
    rt.block_on(fleet.shutdown());
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains(&header), "{head}");
}
