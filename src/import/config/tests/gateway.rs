//! Gateway API's HTTPRoutes (GEP-1731) and BackendTrafficPolicies
//! (GEP-3388) against a table written from the GEPs.

use serde_yaml::Value;

use super::{call_to as call, calls, has_note, row, table, yaml as map};
use crate::import::config::{onto, read, ConfigFormat, File, Read};

fn file(name: &str) -> File {
    super::fixture(&format!("gateway-api/{name}"))
}

fn read_files(names: &[&str]) -> Read {
    let files: Vec<File> = names.iter().map(|n| file(n)).collect();
    read(ConfigFormat::GatewayApi, &files).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn routes_and_budgets_map_as_the_geps_say() {
    let r = read_files(&["routes.yaml", "budget.yaml"]);
    assert_eq!(
        table(&r),
        vec![
            // rules[1]: attempts 2 are retries after the first try (3 in
            // the lab's R); connection failures and tries past
            // backendRequest are retried too.
            row(
                "reviews.default",
                "{ preset: gateway-api, attempts: 3, retry_on: [500, 502, 503, 504, connect-failure, timeout], timeout: 250ms, backoff: 100ms }",
                "routes.yaml",
                32
            ),
            // No retry stanza: no retries.
            row("ratings.default", "{ attempts: 1 }", "routes.yaml", 56),
            // Exact / with GET outranks the prefix; no attempts: the
            // topology's R (implementation-specific).
            row(
                "details.default",
                "{ preset: gateway-api, retry_on: [503, connect-failure] }",
                "routes.yaml",
                79
            ),
            // 25% over 10 s, 5 retries a second.
            row(
                "reviews.default",
                "{ budget_model: window, budget: 0.25, min_per_sec: 5, ttl: 10000ms }",
                "budget.yaml",
                14
            ),
            // retryConstraint: {} takes GEP-3388's defaults.
            row(
                "ratings.default",
                "{ budget_model: window, budget: 0.2, min_per_sec: 10, ttl: 10000ms }",
                "budget.yaml",
                32
            ),
        ]
    );
    assert!(
        has_note(
            &r,
            "routes.yaml",
            22,
            "rules[0]: not taken: its match asks for headers"
        ),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(&r, "routes.yaml", 41, "timeouts.request"),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(&r, "routes.yaml", 79, "no `attempts`"),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(&r, "routes.yaml", 88, "rules[1]: never reached"),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(
            &r,
            "routes.yaml",
            97,
            "attached only to Gateway bookinfo-gateway"
        ),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(&r, "budget.yaml", 40, "HTTPRoute bookinfo is not a Service"),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(&r, "budget.yaml", 44, "Envoy Gateway's own retry policy"),
        "{:#?}",
        r.notes
    );
    assert_eq!(r.skipped.get("Gateway"), Some(&1));
    // A call nothing governs is not retried.
    assert_eq!(
        r.default
            .as_ref()
            .map(|(p, _)| p.get("preset").and_then(|v| v.as_str())),
        Some(Some("none"))
    );
}

#[test]
fn durations_follow_gep_2257() {
    use super::super::gateway::gep2257;
    use std::time::Duration;
    assert_eq!(gep2257("100ms"), Some(Duration::from_millis(100)));
    assert_eq!(gep2257("1h30m"), Some(Duration::from_secs(5400)));
    assert_eq!(gep2257("10s"), Some(Duration::from_secs(10)));
    for bad in ["10 seconds", "1.5s", "5", "", "123456s", "1h1m1s1ms1s"] {
        assert_eq!(gep2257(bad), None, "{bad}");
    }
}

#[test]
fn path_regexes_are_matched_against_the_labs_path() {
    use super::super::gateway::regex_matches_slash as m;
    assert_eq!(m(".*"), Some(true));
    assert_eq!(m("/.*"), Some(true));
    assert_eq!(m("^/$"), Some(true));
    assert_eq!(m("/[^/]*"), Some(true));
    assert_eq!(m("/reviews/[^/]*"), Some(false));
    assert_eq!(m("/api/.+"), Some(false));
    assert_eq!(m("/(a|b)"), None);
}

fn bad(name: &str) -> crate::import::config::BadInput {
    read(ConfigFormat::GatewayApi, &[file(name)]).unwrap_err()
}

#[test]
fn a_backoff_in_words_is_bad_input_at_its_line() {
    let e = bad("bad-backoff.yaml");
    assert_eq!(e.at.line, 13, "{e}");
    assert!(e.to_string().contains("bad-backoff.yaml:13:"), "{e}");
    assert!(e.why.contains("GEP-2257"), "{e}");
    assert!(e.why.contains("10 seconds"), "{e}");
}

#[test]
fn attempts_in_words_are_bad_input_at_their_line() {
    let e = bad("bad-attempts.yaml");
    assert_eq!(e.at.line, 15, "{e}");
    assert!(e.why.contains("retry.attempts"), "{e}");
}

#[test]
fn a_fractional_budget_interval_is_bad_input_at_its_line() {
    let e = bad("bad-interval.yaml");
    assert_eq!(e.at.line, 12, "{e}");
    assert!(e.why.contains("budget.interval"), "{e}");
}

#[test]
fn onto_bookinfo_puts_routes_and_budgets_on_the_right_calls() {
    let r = read_files(&["routes.yaml", "budget.yaml"]);
    let graph = super::fixture_text("tests/fixtures/config/bookinfo.yaml");
    let w = onto(ConfigFormat::GatewayApi, &r, &graph, "bookinfo.yaml").unwrap();
    crate::topology::Topology::from_yaml(&w.yaml, "out").unwrap();
    let doc: Value = serde_yaml::from_str(&w.yaml).unwrap();
    let pp = calls(&doc, "productpage");
    let reviews = call(&pp, "reviews");
    // The route's retries with the budget merged in.
    assert_eq!(
        reviews["policy"],
        Value::Mapping(map(
            "{ preset: gateway-api, attempts: 3, retry_on: [500, 502, 503, 504, connect-failure, timeout], timeout: 250ms, backoff: 100ms, budget_model: window, budget: 0.25, min_per_sec: 5, ttl: 10000ms }"
        ))
    );
    assert_eq!(
        reviews["source"].as_str(),
        Some("tests/fixtures/config/gateway-api/routes.yaml:32")
    );
    let details = call(&pp, "details");
    assert_eq!(
        details["source"].as_str(),
        Some("tests/fixtures/config/gateway-api/routes.yaml:79")
    );
    let rv = calls(&doc, "reviews");
    let ratings = call(&rv, "ratings");
    assert_eq!(ratings["policy"]["attempts"].as_u64(), Some(1));
    assert_eq!(ratings["policy"]["budget"].as_f64(), Some(0.2));
    assert_eq!(
        ratings["source"].as_str(),
        Some("tests/fixtures/config/gateway-api/routes.yaml:56")
    );
    assert!(w.yaml.contains("(3 calls governed)"), "{}", w.yaml);
    assert!(
        w.yaml.contains("attached only to Gateway bookinfo-gateway"),
        "{}",
        w.yaml
    );
}
