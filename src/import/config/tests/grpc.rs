//! `chaoslab import grpc`: a service config against gRFC A6 and the
//! grpc.io retry and hedging guides.

use super::super::{onto, read, ConfigFormat, File};
use super::{call, check_rules, fixture, noted, Want};

const CONFIG: &str = "tests/fixtures/config/grpc/service_config.json";

/// retryThrottling { maxTokens: 10, tokenRatio: 0.1 }, on every rule.
const TOKENS: &str = "preset: grpc, budget_model: tokens, max_tokens: 10, token_ratio: 0.1";

#[test]
fn a_service_config_gives_each_service_its_retry_or_hedging() {
    let read = read(ConfigFormat::Grpc, &[fixture("grpc/service_config.json")]).unwrap();
    let want: &[Want<'_>] = &[
        // maxAttempts counts the first; UNAVAILABLE is 503,
        // RESOURCE_EXHAUSTED 429; CANCELLED is no callee's answer.
        (
            "ratings",
            None,
            6,
            &format!("{{ {TOKENS}, attempts: 4, backoff: 100ms, retry_on: [{{ retriable-status-codes: [429, 503] }}] }}"),
        ),
        // Hedging alone: maxAttempts 7 is gRPC's 5.
        (
            "reviews",
            None,
            20,
            &format!("{{ {TOKENS}, hedge: {{ delay: 50ms, max_attempts: 5, non_fatal: true }} }}"),
        ),
        // Go's decoder takes `RetryPolicy` and `MaxAttempts`; codes by
        // number (14 UNAVAILABLE) or name (DEADLINE_EXCEEDED, 504); the
        // service is its package's first label or its name lowercased.
        (
            "bookinfo",
            None,
            28,
            &format!("{{ {TOKENS}, attempts: 2, backoff: 250ms, retry_on: [{{ retriable-status-codes: [503, 504] }}] }}"),
        ),
        (
            "productpage",
            None,
            28,
            &format!("{{ {TOKENS}, attempts: 2, backoff: 250ms, retry_on: [{{ retriable-status-codes: [503, 504] }}] }}"),
        ),
    ];
    check_rules(CONFIG, &read, want);
    noted(&read, 11, "CANCELLED is no callee's HTTP answer");
    noted(
        &read,
        10,
        "backoffMultiplier 2 and maxBackoff are not mapped",
    );
    noted(&read, 13, "timeout: the call's deadline is not mapped");
    noted(&read, 21, "gRPC caps it at 5");
    noted(&read, 23, "[UNAVAILABLE, INTERNAL]");
    noted(&read, 16, "details.Details/GetDetails: not taken");
    noted(&read, 37, "the default for every method");
    assert_eq!(read.notes.len(), 7, "{:#?}", read.notes);
    assert!(
        read.rules[2].what.contains("package's first label"),
        "{}",
        read.rules[2].what
    );
    assert!(
        read.rules[3].what.contains("name lowercased"),
        "{}",
        read.rules[3].what
    );
}

#[test]
fn without_throttling_the_pushback_signal_and_no_bucket() {
    let f = File {
        name: "sc.json".into(),
        text: r#"{"methodConfig": [{"name": [{"service": "ratings.Ratings"}],
  "retry_policy": {"max_attempts": 3, "initial_backoff": "0.01s", "max_backoff": "0.01s",
    "backoff_multiplier": 1, "retryable_status_codes": ["UNAVAILABLE"]}}]}"#
            .into(),
    };
    let read = read(ConfigFormat::Grpc, &[f]).unwrap();
    let want: &[Want<'_>] = &[(
        "ratings",
        None,
        2,
        "{ preset: retry, signal: pushback, attempts: 3, backoff: 10ms,
           retry_on: [{ retriable-status-codes: [503] }] }",
    )];
    check_rules("sc.json", &read, want);
    assert!(read.notes.is_empty(), "{:#?}", read.notes);
}

#[test]
fn retry_and_hedging_together_are_refused_as_grpc_refuses_them() {
    let e = read(
        ConfigFormat::Grpc,
        &[fixture("grpc/retry_and_hedging.json")],
    )
    .unwrap_err();
    assert_eq!(
        e.at.to_string(),
        "tests/fixtures/config/grpc/retry_and_hedging.json:12",
        "{e}"
    );
    assert!(e.why.contains("both retryPolicy and hedgingPolicy"), "{e}");
}

#[test]
fn input_that_is_no_service_config_is_refused_at_its_line() {
    let e = read(ConfigFormat::Grpc, &[fixture("grpc/not-json.json")]).unwrap_err();
    assert_eq!(
        e.at.to_string(),
        "tests/fixtures/config/grpc/not-json.json:5",
        "{e}"
    );
    assert!(e.why.starts_with("not JSON (a gRPC service config)"), "{e}");
    let f = |text: &str| File {
        name: "sc.json".into(),
        text: text.into(),
    };
    let e = read(ConfigFormat::Grpc, &[f("{\"configs\": []}")]).unwrap_err();
    assert!(e.why.contains("not a gRPC service config"), "{e}");
    // maxAttempts 1 and an unknown status name: gRPC refuses the config.
    let e = read(
        ConfigFormat::Grpc,
        &[f("{\"methodConfig\": [{\"name\": [{\"service\": \"a.A\"}],\n\"retryPolicy\": {\n\"maxAttempts\": 1}}]}")],
    )
    .unwrap_err();
    assert_eq!(e.at.line, 3, "{e}");
    assert!(e.why.contains("2 or more"), "{e}");
    let e = read(
        ConfigFormat::Grpc,
        &[f("{\"methodConfig\": [{\"name\": [{\"service\": \"a.A\"}], \"retryPolicy\": {\"maxAttempts\": 2,
  \"initialBackoff\": \"1s\", \"maxBackoff\": \"1s\", \"backoffMultiplier\": 1,\n\"retryableStatusCodes\": [\"UNAVAILABL\"]}}]}")],
    )
    .unwrap_err();
    assert_eq!(e.at.line, 3, "{e}");
    assert!(e.why.contains("no gRPC status code"), "{e}");
}

#[test]
fn the_service_config_onto_bookinfo_governs_every_callers_calls() {
    let read = read(ConfigFormat::Grpc, &[fixture("grpc/service_config.json")]).unwrap();
    let graph = fixture("bookinfo.yaml");
    let w = onto(ConfigFormat::Grpc, &read, &graph.text, &graph.name).unwrap();
    crate::topology::Topology::from_yaml(&w.yaml, "written").unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&w.yaml).unwrap();
    let ratings = call(&doc, "reviews", "ratings");
    assert_eq!(
        ratings["source"].as_str(),
        Some(format!("{CONFIG}:6").as_str())
    );
    assert_eq!(ratings["policy"]["preset"].as_str(), Some("grpc"));
    assert_eq!(ratings["policy"]["attempts"].as_u64(), Some(4));
    let reviews = call(&doc, "productpage", "reviews");
    assert_eq!(
        reviews["source"].as_str(),
        Some(format!("{CONFIG}:20").as_str())
    );
    assert_eq!(reviews["policy"]["hedge"]["max_attempts"].as_u64(), Some(5));
    // Only a method of details is configured: its call is not governed.
    assert!(
        call(&doc, "productpage", "details").get("policy").is_none(),
        "{}",
        w.yaml
    );
    // `bookinfo` names no service of the graph: listed, not dropped.
    assert!(
        w.notes.iter().any(|n| n.contains("is the host bookinfo")),
        "{:#?}",
        w.notes
    );
}
