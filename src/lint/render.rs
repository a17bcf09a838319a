//! The storm map as text, JSON and JUnit XML.

use std::fmt::Write as _;

use serde_json::json;

use super::{Hop, Map, Options};

/// `productpage →(3×) reviews →(3×) ratings`.
pub fn route(path: &[Hop], service: &str) -> String {
    let Some(first) = path.first() else {
        return service.to_string();
    };
    let mut s = first.from.clone();
    for h in path {
        let _ = write!(s, " →({}) {}", times(h.attempts), h.to);
    }
    s
}

fn times(a: f64) -> String {
    if (a - a.round()).abs() < 1e-9 {
        format!("{a:.0}×")
    } else {
        format!("{a:.2}×")
    }
}

/// The lines that set the path's retries, each once: `a.yaml:12, b.yaml:30`.
pub fn lines_of(path: &[Hop]) -> String {
    let mut seen: Vec<String> = vec![];
    for h in path.iter().filter(|h| h.attempts > 1.0 + 1e-9) {
        let l = format!("{}:{}", h.file, h.line);
        if !seen.contains(&l) {
            seen.push(l);
        }
    }
    if seen.is_empty() {
        "no retrying hop".into()
    } else {
        seen.join(", ")
    }
}

/// The table for people: the services a failure multiplies first.
pub fn text(map: &Map, o: &Options) -> String {
    let mut out = String::new();
    let share = if map.rate >= 1.0 {
        "every request".to_string()
    } else {
        format!("{:.0}% of its requests", map.rate * 100.0)
    };
    let _ = writeln!(
        out,
        "storm map of {} ({}): each service failing {share} with its own status, under the topology's policies",
        map.name, map.file
    );
    let width = map
        .rows
        .iter()
        .map(|r| r.service.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let _ = writeln!(
        out,
        "{:<width$}  {:>8}  {:>6}  path (the hops that multiply most)",
        "service", "load", "radius"
    );
    let shown: Vec<_> = map
        .rows
        .iter()
        .filter(|r| r.amplification > 1.0 + 1e-9 || !r.exceeds.is_empty())
        .collect();
    for r in &shown {
        let mark = if r.exceeds.is_empty() {
            ""
        } else {
            "  ← over"
        };
        let steady = if r.steady_state {
            " (steady state)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:>7.2}×  {:>6}  {}{steady}{mark}",
            r.service,
            r.amplification,
            r.radius,
            route(&r.path, &r.service)
        );
        for h in r.path.iter().filter(|h| h.attempts > 1.0 + 1e-9) {
            let whose = if h.configured {
                ""
            } else {
                " (the topology's policy)"
            };
            let _ = writeln!(
                out,
                "{:<width$}    {} → {}: {} attempts, set by {}:{}{whose}",
                "",
                h.from,
                h.to,
                times(h.attempts).trim_end_matches('×'),
                h.file,
                h.line
            );
        }
    }
    let calm = map.rows.len() - shown.len();
    if calm > 0 {
        let _ = writeln!(
            out,
            "{calm} other service{} receive no more than their baseline when they fail",
            if calm == 1 { "" } else { "s" }
        );
    }
    if map.rows.iter().any(|r| r.steady_state) {
        let _ = writeln!(out, "(steady state): a budget, throttle, breaker or hedge on the path has no closed form; its figure is the model's steady state at the healthy rates");
    }
    let over: Vec<_> = map.violations().collect();
    match (
        o.max_amplification.is_some() || o.max_radius.is_some(),
        over.is_empty(),
    ) {
        (false, _) => {}
        (true, true) => {
            let _ = writeln!(out, "within every threshold");
        }
        (true, false) => {
            for r in over {
                for e in &r.exceeds {
                    let _ = writeln!(out, "OVER: {e}");
                }
            }
        }
    }
    out
}

fn hop_json(h: &Hop) -> serde_json::Value {
    json!({
        "from": h.from,
        "to": h.to,
        "attempts": h.attempts,
        "file": h.file,
        "line": h.line,
        "configured": h.configured,
    })
}

/// One JSON document.
pub fn json(map: &Map, o: &Options) -> String {
    let v = json!({
        "topology": map.name,
        "file": map.file,
        "rate": map.rate,
        "thresholds": {
            "max_amplification": o.max_amplification,
            "max_radius": o.max_radius,
        },
        "violations": map.violations().count(),
        "services": map.rows.iter().map(|r| json!({
            "service": r.service,
            "amplification": r.amplification,
            "radius": r.radius,
            "steady_state": r.steady_state,
            "path": r.path.iter().map(hop_json).collect::<Vec<_>>(),
            "exceeds": r.exceeds,
        })).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one test case per service, failed when over a threshold.
pub fn junit(map: &Map) -> String {
    let failures = map.violations().count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"chaoslab lint\" tests=\"{}\" failures=\"{failures}\">",
        map.rows.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"storm map of {}\" tests=\"{}\" failures=\"{failures}\">",
        xml(&map.name),
        map.rows.len()
    );
    for r in &map.rows {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{} failing: {:.2}x, radius {}\"",
            xml(&map.file),
            xml(&r.service),
            r.amplification,
            r.radius
        );
        if r.exceeds.is_empty() {
            out.push_str("/>\n");
        } else {
            out.push_str(">\n");
            for e in &r.exceeds {
                let _ = writeln!(out, "      <failure message=\"{}\"/>", xml(e));
            }
            out.push_str("    </testcase>\n");
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
