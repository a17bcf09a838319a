//! What the scenario tests share: a four-service chain, and helpers that
//! parse against it and check where an error points.

use super::Scenario;
use crate::topology::Topology;

pub(super) fn chain() -> Topology {
    Topology::from_yaml(
        "name: chain\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { calls: [D] }\n  D:\n    fault: { error_rate: 1.0, phase: before, status: 503 }\n",
        "chain.yaml",
    )
    .unwrap()
}

pub(super) fn ok(yaml: &str) -> Scenario {
    Scenario::from_yaml(yaml, "s.yaml", &chain()).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn err(yaml: &str) -> String {
    match Scenario::from_yaml(yaml, "s.yaml", &chain()) {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e.to_string(),
    }
}

/// Asserts the message starts at `s.yaml:LINE:` and holds `text`.
pub(super) fn at(msg: &str, line: u32, text: &str) {
    assert!(
        msg.starts_with(&format!("s.yaml:{line}:")),
        "expected line {line}: {msg}"
    );
    assert!(msg.contains(text), "expected `{text}` in: {msg}");
}
