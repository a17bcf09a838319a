//! What any input must not do: the checks behind the fuzz targets.
//!
//! A topology or scenario file, a control-API body and the headers a peer
//! sends are input the lab does not control. Whatever the bytes, reading
//! them must end in a value or in an error a user can act on, never in a
//! panic, and what is accepted must keep the bounds the rest of the lab
//! relies on (an entry that exists, edges between services that exist,
//! rates between 0 and 1, workers and queues within their caps, finite
//! multiplicities).
//!
//! Each function here takes raw bytes and panics when a check fails, so
//! one body serves two drivers: the `cargo fuzz` targets in `fuzz/` (a
//! coverage-guided search, where a compiler that takes `-Z` flags is at
//! hand) and the property tests over generated YAML beside this file
//! (`yaml_gen.rs`), which run with every `cargo test`.
//!
//! ```
//! chaoslab::fuzzing::topology(b"name: t\nservices:\n  A: { calls: [B] }\n  B:\n");
//! chaoslab::fuzzing::scenario(b"steps:\n  - at: 1s\n    fail: D\n");
//! chaoslab::fuzzing::headers(b" TRUE \n8812-3\n250");
//! ```

use std::sync::OnceLock;
use std::time::Duration;

use crate::lab::state::{apply, LabState};
use crate::middleware::context::{
    deadline_from_headers, deadline_header_value, Trace, TraceHeader as _, DEADLINE, TRACE,
};
use crate::scenario::{actions_from_json, Scenario};
use crate::topology::{check::render_check, model, Topology, MAX_QUEUE, MAX_WORKERS};
use error_ownership::signal::{Advice, Signal};
use error_ownership::{one_value, Claim};

#[cfg(test)]
mod yaml_gen;

/// Topologies at most this large are also rendered as `chaoslab check`
/// does and run through the model; larger ones are only loaded, so a
/// fuzzer spends its time on the loader.
const RENDER_AT_MOST: usize = 64;

/// Loads `data` as a topology file, as `chaoslab check` does: an error
/// must render, and a topology must keep its bounds, render, and feed the
/// model and its own `scenario:` key without a panic.
pub fn topology(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let t = match Topology::from_yaml(&text, "fuzz.yaml") {
        Ok(t) => t,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    check_bounds(&t);
    if t.services.len() <= RENDER_AT_MOST && t.edges.len() <= RENDER_AT_MOST {
        assert!(!render_check(&t).is_empty());
        let p = model::predict(&t, &t.policy);
        assert_eq!(p.services.len(), t.services.len());
    }
    match Scenario::from_topology_yaml(&text, "fuzz.yaml", &t) {
        Ok(Some(s)) => play(&s, &t),
        Ok(None) => {}
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// The bounds every accepted topology keeps.
fn check_bounds(t: &Topology) {
    let n = t.services.len();
    assert!(n > 0, "a topology has a service");
    assert!(t.load.entry < n, "the entry exists");
    assert!(!t.load.roots.is_empty(), "a topology has a root");
    for (k, r) in t.load.roots.iter().enumerate() {
        assert!(r.entry < n, "root {k} exists");
        // A root is reached by no path from itself (no cycle).
        assert_eq!(
            t.services[r.entry].root_multiplicity.get(k),
            Some(1.0),
            "root {k} gets each of its requests once"
        );
    }
    if !t.load.many_roots() {
        assert_eq!(t.entry().depth, 0);
        assert_eq!(
            t.entry().multiplicity,
            1.0,
            "the entry gets every root request once"
        );
    }
    assert!(
        t.load.rps.is_finite() && t.load.rps >= 0.0,
        "{}",
        t.load.rps
    );
    assert!(
        http::HeaderName::from_bytes(t.ownership.header.as_bytes()).is_ok(),
        "the claim header {:?} is a header name",
        t.ownership.header
    );
    for (i, e) in t.edges.iter().enumerate() {
        assert!(e.from < n && e.to < n, "edge {i} joins services that exist");
        assert!(t.services[e.from].calls.contains(&i), "edge {i} is a call");
        // A service the entry never reaches (allowed; `check` flags it)
        // stays at depth 0, so only the edges of reached ones must go
        // deeper.
        let reached = t.services[e.from].multiplicity > 0.0;
        assert!(
            !reached || t.services[e.to].depth > t.services[e.from].depth,
            "edge {i}: every edge from a reached service goes deeper (no cycle)"
        );
    }
    for (i, s) in t.services.iter().enumerate() {
        assert!(
            !t.services[..i].iter().any(|o| o.name == s.name),
            "{} is named once",
            s.name
        );
        assert!(s.calls.iter().all(|&c| c < t.edges.len()));
        assert!(s.depth < n, "{}: depth {} of {n}", s.name, s.depth);
        assert!(
            s.multiplicity.is_finite() && s.multiplicity >= 0.0,
            "{}: multiplicity {}",
            s.name,
            s.multiplicity
        );
        let f = &s.fault;
        assert!((0.0..=1.0).contains(&f.error_rate), "{}", f.error_rate);
        assert!(s.workers.is_none_or(|w| (1..=MAX_WORKERS).contains(&w)));
        assert!(s.queue <= MAX_QUEUE);
        assert!(s.capacity.is_none_or(|c| c.is_finite() && c > 0.0));
        assert!(
            s.url.is_none() || s.calls.is_empty(),
            "an outside service calls nothing"
        );
    }
}

/// Applies a scenario's steps to the state its topology describes: a step
/// the loader accepted may still be refused by the state (an action that
/// does not fit), never panic.
fn play(s: &Scenario, t: &Topology) {
    let _ = s.check_duration(Duration::from_secs(60), false);
    let mut state = LabState::of(t);
    for a in s.initial_actions() {
        let _ = apply(&mut state, &a);
    }
    let steps = s.plan_steps(Duration::from_secs(2));
    for w in steps.windows(2) {
        assert!(w[0].0 <= w[1].0, "steps are planned in time order");
    }
    for (_, a) in &steps {
        let _ = apply(&mut state, a);
    }
}

/// The topologies the scenario target plays against: the chain (every
/// policy, fault and expectation) and the metastable pair (workers,
/// queues, deadlines).
fn scenario_topologies() -> &'static [Topology] {
    static T: OnceLock<Vec<Topology>> = OnceLock::new();
    T.get_or_init(|| {
        [
            include_str!("../../topologies/uber-chain.yaml"),
            include_str!("../../topologies/metastable.yaml"),
        ]
        .iter()
        .map(|y| Topology::from_yaml(y, "seed.yaml").expect("the seed topologies load"))
        .collect()
    })
}

/// Loads `data` as a scenario file against the seed topologies, and as a
/// control-API body (`POST /actions`, the same parser over JSON).
pub fn scenario(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for t in scenario_topologies() {
        match Scenario::from_yaml(&text, "fuzz.yaml", t) {
            Ok(s) => play(&s, t),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        let faults: Vec<_> = t.services.iter().map(|s| s.fault.clone()).collect();
        match actions_from_json(data, "POST /actions", t, &faults) {
            Ok(actions) => {
                let mut state = LabState::of(t);
                for a in &actions {
                    let _ = apply(&mut state, a);
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

/// Reads `data` as the values of the headers a peer sends: the claim
/// header (each line one copy of it), the trace header and the deadline
/// header (the whole input), and every dialect's don't-retry header.
pub fn headers(data: &[u8]) {
    // The claim: one copy is read by its words alone; none, or several,
    // is missing.
    let copies: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let claim = Claim::parse_all(copies.iter().copied());
    if copies.len() == 1 {
        assert_eq!(claim, expected_claim(data), "{data:?}");
    } else {
        assert_eq!(claim, Claim::Missing, "{} copies", copies.len());
    }
    assert_eq!(
        one_value(copies.iter().copied()).is_some(),
        copies.len() == 1
    );
    for status in [200, 429, 500, 503] {
        for s in Signal::ALL {
            if let Advice::RetryAfter(d) = s.read(status, |_| Some(data)) {
                assert!(d < Duration::MAX);
            }
        }
    }
    let Ok(value) = http::HeaderValue::from_bytes(data) else {
        return; // a peer cannot send it: hyper refuses it first
    };
    let mut h = http::HeaderMap::new();
    h.insert(&TRACE, value.clone());
    h.insert(&DEADLINE, value);
    // The trace: what is read is written back the same.
    if let Some(t) = Trace::from_headers(&h) {
        let mut back = http::HeaderMap::new();
        back.insert(&TRACE, t.header_value());
        assert_eq!(Trace::from_headers(&back), Some(t));
        assert!(t.child().depth >= t.depth);
    }
    // The deadline: digits only, and what is read is written back the same.
    let digits = data.trim_ascii();
    match deadline_from_headers(&h) {
        Some(d) => {
            assert!(!digits.is_empty() && digits.iter().all(u8::is_ascii_digit));
            let ms = u64::try_from(d.as_millis()).expect("read from a u64");
            assert_eq!(
                deadline_header_value(d).to_str().ok(),
                Some(&*ms.to_string())
            );
            let _ = tokio::time::Instant::now().checked_add(d);
        }
        None => assert!(
            digits.is_empty()
                || !digits.iter().all(u8::is_ascii_digit)
                || std::str::from_utf8(digits).is_ok_and(|s| s.parse::<u64>().is_err()),
            "{data:?} is a deadline, read as none"
        ),
    }
}

/// The claim one header value carries, by the words SPEC section 1 names.
fn expected_claim(v: &[u8]) -> Claim {
    let w = v.trim_ascii().to_ascii_lowercase();
    match &w[..] {
        b"true" | b"claimed" => Claim::Claimed,
        b"false" | b"unclaimed" => Claim::Unclaimed,
        _ => Claim::Missing,
    }
}

#[cfg(test)]
mod tests {
    /// The fuzz targets' seeds include every shipped topology: each keeps
    /// the bounds the target checks, so a new one cannot fail the fuzz
    /// smoke on its first input.
    #[test]
    fn every_shipped_topology_keeps_the_fuzz_bounds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                super::topology(&std::fs::read(&path).unwrap());
                seen += 1;
            }
        }
        assert!(seen >= 10, "{seen} topologies read");
    }
}
