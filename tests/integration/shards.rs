//! `check --shards N` (SPEC section 19): where each service would run over
//! N shards, and what crosses them; nothing started.

use crate::common::{chaoslab, succeed, text};

#[test]
fn check_prints_the_placement_and_refuses_more_shards_than_services() {
    // Train Ticket: services with endpoints, which move with their service.
    let path = "topologies/trainticket.yaml";
    let (stdout, _) = succeed(&["check", path, "--shards", "3"]);
    let shards: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  shard "))
        .collect();
    assert_eq!(shards.len(), 3, "{stdout}");
    let services: usize = shards
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(2)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    let t = chaoslab::topology::Topology::load(&crate::common::root().join(path)).unwrap();
    assert_eq!(
        services,
        t.services.len(),
        "every service placed once: {stdout}"
    );
    // Callers beside their callees: far less crosses than round-robin.
    let line = stdout
        .lines()
        .find(|l| l.contains("calls crossing shards"))
        .unwrap();
    let pct = |s: &str| s.trim_end_matches(['%', ',']).parse::<f64>().unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let placed = pct(words[3]);
    let round_robin = pct(words.last().unwrap());
    assert!(placed < round_robin, "{line}");

    let out = chaoslab(&["check", "topologies/bookinfo.yaml", "--shards", "5"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--shards 5: the topology has 4 services to place"),
        "{stderr}"
    );
    let out = chaoslab(&["check", "topologies/bookinfo.yaml", "--shards", "0"]);
    assert_eq!(out.status.code(), Some(2));
}
