//! Linkerd's annotations and ServiceProfiles against a table written from
//! linkerd.io's reference ("Retries", "Service Profiles").

use serde_yaml::Value;

use super::{call_to as call, calls, has_note, row, table, yaml as map};
use crate::import::config::{onto, read, ConfigFormat, File, Read};

fn file(name: &str) -> File {
    super::fixture(&format!("linkerd/{name}"))
}

fn read_files(names: &[&str]) -> Read {
    let files: Vec<File> = names.iter().map(|n| file(n)).collect();
    read(ConfigFormat::Linkerd, &files).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn annotations_alone_map_limit_codes_and_timeout() {
    let r = read_files(&["annotations.yaml"]);
    assert_eq!(
        table(&r),
        vec![
            // gateway-error is 502 to 504 in Linkerd; limit 3 retries.
            row(
                "details.default",
                "{ preset: linkerd, attempts: 4, retry_on: [502, 503, 504] }",
                "annotations.yaml",
                9
            ),
            // 5xx and limit 2: the linkerd preset's 500-599, three tries.
            row(
                "reviews.default",
                "{ preset: linkerd, attempts: 3 }",
                "annotations.yaml",
                25
            ),
            // The route's annotations: a range, limit 2, a retry timeout
            // (a try that outlives it is retried).
            row(
                "ratings.default",
                "{ preset: linkerd, attempts: 3, timeout: 300ms, retry_on: [500, 501, 502, 503, 504, timeout] }",
                "annotations.yaml",
                53
            ),
        ]
    );
    assert!(
        has_note(
            &r,
            "annotations.yaml",
            40,
            "overridden by HTTPRoute ratings-retries"
        ),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(
            &r,
            "annotations.yaml",
            11,
            "timeout.linkerd.io/request: not mapped"
        ),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(&r, "annotations.yaml", 87, "GRPCRoute ratings-grpc"),
        "{:#?}",
        r.notes
    );
    assert_eq!(r.skipped.get("Deployment"), Some(&1));
    // Linkerd retries nothing unless configured.
    // A call nothing governs is not retried.
    assert_eq!(
        r.default
            .as_ref()
            .map(|(p, _)| p.get("preset").and_then(|v| v.as_str())),
        Some(Some("none"))
    );
}

#[test]
fn a_service_profile_wins_over_the_annotations() {
    let r = read_files(&["annotations.yaml", "profile.yaml"]);
    assert_eq!(
        table(&r),
        vec![
            row(
                "details.default",
                "{ preset: linkerd, attempts: 4, retry_on: [502, 503, 504] }",
                "annotations.yaml",
                9
            ),
            row(
                "ratings.default",
                "{ preset: linkerd, attempts: 3, timeout: 300ms, retry_on: [500, 501, 502, 503, 504, timeout] }",
                "annotations.yaml",
                53
            ),
            // routes[2] (GET /) is the first the lab's GET / takes; its
            // retries are bounded by the budget alone.
            row(
                "reviews.default.svc.cluster.local",
                "{ preset: linkerd, attempts: 100, budget_model: window, budget: 0.25, min_per_sec: 5, ttl: 20000ms }",
                "profile.yaml",
                25
            ),
        ]
    );
    assert!(
        has_note(&r, "annotations.yaml", 25, "ignored: ServiceProfile reviews.default.svc.cluster.local (tests/fixtures/config/linkerd/profile.yaml:25)"),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(
            &r,
            "profile.yaml",
            10,
            "routes[0] (POST /reviews): not taken"
        ),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(
            &r,
            "profile.yaml",
            15,
            "routes[1] (GET /reviews/{id}): not taken"
        ),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(
            &r,
            "profile.yaml",
            26,
            "routes[2] (GET /).timeout: not mapped"
        ),
        "{:#?}",
        r.notes
    );
    assert!(
        has_note(&r, "profile.yaml", 27, "never reached"),
        "{:#?}",
        r.notes
    );
}

#[test]
fn a_profile_without_a_taken_retryable_route_turns_retries_off() {
    let text = "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: ratings.default.svc.cluster.local\nspec:\n  routes:\n    - name: GET /ratings\n      condition:\n        method: GET\n        pathRegex: /ratings/.*\n      isRetryable: true\n";
    let f = File {
        name: "p.yaml".into(),
        text: text.into(),
    };
    let r = read(ConfigFormat::Linkerd, &[f]).unwrap();
    assert_eq!(
        table(&r),
        vec![row(
            "ratings.default.svc.cluster.local",
            "{ attempts: 1 }",
            "p.yaml",
            5
        )]
    );
    assert!(has_note(&r, "p.yaml", 7, "not taken"), "{:#?}", r.notes);
}

fn bad(name: &str) -> crate::import::config::BadInput {
    read(ConfigFormat::Linkerd, &[file(name)]).unwrap_err()
}

#[test]
fn a_retry_timeout_without_its_unit_is_bad_input_at_its_line() {
    let e = bad("bad-timeout.yaml");
    assert_eq!(e.at.line, 7, "{e}");
    assert!(e.to_string().contains("bad-timeout.yaml:7:"), "{e}");
    assert!(e.why.contains("such as 5s or 200ms"), "{e}");
}

#[test]
fn an_unknown_http_condition_is_bad_input_at_its_line() {
    let e = bad("bad-http.yaml");
    assert_eq!(e.at.line, 7, "{e}");
    assert!(e.why.contains("`6xx`"), "{e}");
}

#[test]
fn a_budget_ttl_in_words_is_bad_input_at_its_line() {
    let e = bad("bad-ttl.yaml");
    assert_eq!(e.at.line, 15, "{e}");
    assert!(e.why.contains("retryBudget.ttl"), "{e}");
}

#[test]
fn onto_bookinfo_puts_each_policy_on_its_calls() {
    let r = read_files(&["annotations.yaml", "profile.yaml"]);
    let graph = super::fixture_text("tests/fixtures/config/bookinfo.yaml");
    let w = onto(ConfigFormat::Linkerd, &r, &graph, "bookinfo.yaml").unwrap();
    crate::topology::Topology::from_yaml(&w.yaml, "out").unwrap();
    let doc: Value = serde_yaml::from_str(&w.yaml).unwrap();
    let pp = calls(&doc, "productpage");
    let details = call(&pp, "details");
    assert_eq!(
        details["policy"],
        Value::Mapping(map(
            "{ preset: linkerd, attempts: 4, retry_on: [502, 503, 504] }"
        ))
    );
    assert_eq!(
        details["source"].as_str(),
        Some("tests/fixtures/config/linkerd/annotations.yaml:9")
    );
    let reviews = call(&pp, "reviews");
    assert_eq!(reviews["policy"]["attempts"].as_u64(), Some(100));
    assert_eq!(
        reviews["source"].as_str(),
        Some("tests/fixtures/config/linkerd/profile.yaml:25")
    );
    let rv = calls(&doc, "reviews");
    let ratings = call(&rv, "ratings");
    assert_eq!(
        ratings["source"].as_str(),
        Some("tests/fixtures/config/linkerd/annotations.yaml:53")
    );
    assert!(w.yaml.contains("ignored: ServiceProfile"), "{}", w.yaml);
    assert!(
        w.yaml.contains(
            "annotations.yaml:53  # HTTPRoute ratings-retries retry.linkerd.io annotations"
        ),
        "{}",
        w.yaml
    );
}
