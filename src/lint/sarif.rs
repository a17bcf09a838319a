//! The storm map as SARIF 2.1.0: a result per service over a threshold
//! (or, with no threshold given, per service a failure multiplies),
//! located at the configuration line whose retries multiply most on its
//! path, the path's other lines related, so code scanning shows it on the
//! pull request that changed a retry.

use serde_json::{json, Value};

use super::{render, Hop, Map, Options, Row};

const AMPLIFICATION: &str = "retry-amplification";
const RADIUS: &str = "storm-radius";

fn location(h: &Hop, message: &str) -> Value {
    json!({
        "physicalLocation": {
            "artifactLocation": { "uri": uri(&h.file) },
            "region": { "startLine": h.line },
        },
        "message": { "text": message },
    })
}

/// A relative path as a URI reference (forward slashes, spaces escaped).
fn uri(file: &str) -> String {
    file.replace('\\', "/").replace(' ', "%20")
}

/// The hop whose retries multiply most (the nearest the failing service
/// among equals): where a reviewer looks first.
fn culprit(r: &Row) -> Option<&Hop> {
    r.path
        .iter()
        .filter(|h| h.attempts > 1.0 + 1e-9)
        .max_by(|a, b| a.attempts.total_cmp(&b.attempts))
}

fn result(r: &Row, rule: &str, level: &str, text: String, file: &str) -> Value {
    let primary = culprit(r).or(r.path.last());
    let locations = match primary {
        Some(h) => vec![location(
            h,
            &format!("{} → {}: {} attempts per call", h.from, h.to, h.attempts),
        )],
        None => vec![json!({
            "physicalLocation": {
                "artifactLocation": { "uri": uri(file) },
                "region": { "startLine": 1 },
            }
        })],
    };
    let related: Vec<Value> = r
        .path
        .iter()
        .enumerate()
        .filter(|(_, h)| Some(*h) != primary)
        .map(|(i, h)| {
            let mut l = location(
                h,
                &format!("{} → {}: {} attempts per call", h.from, h.to, h.attempts),
            );
            l["id"] = json!(i);
            l
        })
        .collect();
    let mut v = json!({
        "ruleId": rule,
        "level": level,
        "message": { "text": text },
        "locations": locations,
        "properties": {
            "service": r.service,
            "amplification": r.amplification,
            "radius": r.radius,
            "steadyState": r.steady_state,
        },
    });
    if !related.is_empty() {
        v["relatedLocations"] = Value::Array(related);
    }
    v
}

/// The SARIF log.
pub fn sarif(map: &Map, o: &Options) -> String {
    let thresholds = o.max_amplification.is_some() || o.max_radius.is_some();
    let mut results = vec![];
    for r in &map.rows {
        let route = render::route(&r.path, &r.service);
        if thresholds {
            for e in &r.exceeds {
                let rule = if e.contains("--max-radius") {
                    RADIUS
                } else {
                    AMPLIFICATION
                };
                results.push(result(r, rule, "error", e.clone(), &map.file));
            }
        } else if r.amplification > 1.0 + 1e-9 {
            let text = format!(
                "{} receives {:.2}× its load when it fails, through {route}, retries set by {}",
                r.service,
                r.amplification,
                render::lines_of(&r.path)
            );
            results.push(result(r, AMPLIFICATION, "note", text, &map.file));
        }
    }
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "chaoslab lint",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": "https://github.com/chaoslab/chaoslab",
                    "rules": [
                        {
                            "id": AMPLIFICATION,
                            "name": "RetryAmplification",
                            "shortDescription": { "text": "A failing service receives more load than the threshold allows" },
                            "fullDescription": { "text": "When this service fails, the retries of the hops above it multiply its load: each hop's attempts per call, as its configuration sets them, times the load the hop itself receives." },
                            "defaultConfiguration": { "level": "error" },
                        },
                        {
                            "id": RADIUS,
                            "name": "StormRadius",
                            "shortDescription": { "text": "Too many hops retry above a failing service" },
                            "fullDescription": { "text": "The number of hops on the path that multiplies most whose callers retry the failing service's error or the error passed up from it." },
                            "defaultConfiguration": { "level": "error" },
                        }
                    ],
                }
            },
            "results": results,
        }],
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}
