//! haproxy.cfg against a table written from HAProxy's configuration
//! manual (`retries` 3 by default, `retry-on` conn-failure by default,
//! `option redispatch`, `defaults [name]` and `from`) and
//! RETRY-CONFIGS.md.

use serde_yaml::Value;

use super::{noted as has_note, rules, yaml};
use crate::import::config::{onto, read, BadInput, ConfigFormat, File};

fn fixture(name: &str) -> File {
    super::short_fixture(&format!("haproxy/{name}"))
}

#[test]
fn haproxy_backends_inherit_the_defaults_before_them_and_override_them() {
    let r = read(ConfigFormat::Haproxy, &[fixture("haproxy.cfg")]).unwrap();
    let from = Some("productpage".to_string());
    let want = vec![
        // Everything from the unnamed defaults: retries 2 (line 13), the
        // three connection conditions (the lab's `reset`) and 503,
        // redispatch, timeout server 3s.
        (
            "details".to_string(),
            from.clone(),
            yaml("{ preset: retry, attempts: 3, retry_on: [reset, 503], retry_other_host: true, backoff: 0ms, timeout: 3s, lb: round-robin }"),
            13,
        ),
        // Its own retries 1, 500 and 503, no redispatch: the same server.
        (
            "reviews".to_string(),
            from.clone(),
            yaml("{ preset: retry, attempts: 2, retry_on: [500, 503], retry_other_host: false, backoff: 0ms, timeout: 800ms }"),
            32,
        ),
        // `from strict`: retry-on none, and strict sets no redispatch.
        (
            "ratings".to_string(),
            from,
            yaml("{ preset: retry, attempts: 1, retry_on: [], retry_other_host: false, backoff: 0ms }"),
            9,
        ),
    ];
    assert_eq!(rules(&r), want);
    assert_eq!(r.services.len(), 1);
    assert_eq!(
        (r.services[0].host.as_str(), r.services[0].source.line),
        ("productpage", 25)
    );
    assert_eq!(r.services[0].set, yaml("{ sidecar: { kind: haproxy } }"));
    has_note(&r, 27, "health checks (check, fall 3, rise 2)");
    has_note(&r, 37, "observe layer7, error-limit 5, on-error mark-down");
    has_note(&r, 16, "`timeout connect` 1s");
    has_note(&r, 36, "`balance leastconn`");
    has_note(&r, 39, "`backup`");
    has_note(&r, 31, "weights 10, 20, 1");
    assert!(!r.notes.iter().any(|n| n.text.contains("taken to be")));
}

#[test]
fn haproxy_listen_from_a_named_defaults_and_all_retryable_errors() {
    let r = read(ConfigFormat::Haproxy, &[fixture("reviews.cfg")]).unwrap();
    let want = vec![(
        "ratings".to_string(),
        Some("reviews".to_string()),
        yaml("{ preset: retry, attempts: 5, retry_on: [reset, 500, 502, 503, 504], retry_other_host: true, backoff: 0ms, lb: p2c }"),
        3,
    )];
    assert_eq!(rules(&r), want);
    has_note(&r, 1, "sidecar of reviews, from the file's name");
    has_note(&r, 11, "`junk-response`");
    has_note(&r, 11, "`0rtt-rejected`");
    has_note(&r, 4, "`option redispatch 2`");
    has_note(&r, 13, "option httpchk");
}

#[test]
fn haproxy_defaults_to_three_retries_on_connection_failures() {
    let r = read(
        ConfigFormat::Haproxy,
        &[File {
            name: "haproxy.cfg".into(),
            text: "frontend front\n  default_backend b\nbackend b\n  server s1 b:80\n".into(),
        }],
    )
    .unwrap();
    assert_eq!(
        rules(&r),
        vec![(
            "b".to_string(),
            Some("front".to_string()),
            yaml("{ preset: retry, attempts: 4, retry_on: [connect-failure], retry_other_host: false, backoff: 0ms }"),
            3,
        )]
    );
    has_note(&r, 1, "from its frontend's name");
}

fn bad(text: &str) -> BadInput {
    read(
        ConfigFormat::Haproxy,
        &[File {
            name: "a.cfg".into(),
            text: text.into(),
        }],
    )
    .unwrap_err()
}

#[test]
fn haproxy_a_keyword_outside_any_section_names_its_line() {
    let e = bad("# nothing yet\nretries 3\nbackend b\n");
    assert_eq!((e.at.file.as_str(), e.at.line), ("a.cfg", 2), "{e}");
    assert!(e.why.contains("outside any section"), "{e}");
}

#[test]
fn haproxy_bad_retries_and_retry_on_name_their_lines() {
    let e = bad("defaults\n  retries three\n");
    assert_eq!(e.at.line, 2, "{e}");
    let e = bad("backend b\n  server s b:80\n  retry-on 503 429\n");
    assert_eq!(e.at.line, 3, "{e}");
    assert!(e.why.contains("`429`"), "{e}");
    let e = bad("defaults\n  timeout server soon\n");
    assert_eq!(e.at.line, 2, "{e}");
}

#[test]
fn haproxy_from_an_unknown_defaults_and_a_nameless_backend_name_their_lines() {
    let e = bad("defaults a\n  retries 1\nbackend b from c\n");
    assert_eq!(e.at.line, 3, "{e}");
    assert!(e.why.contains("from c"), "{e}");
    let e = bad("global\nbackend\n");
    assert_eq!(e.at.line, 2, "{e}");
}

#[test]
fn haproxy_onto_bookinfo_puts_the_sidecar_and_policies_on_their_calls() {
    let graph = super::fixture_text("tests/fixtures/config/bookinfo.yaml");
    let r = read(ConfigFormat::Haproxy, &[fixture("haproxy.cfg")]).unwrap();
    let w = onto(ConfigFormat::Haproxy, &r, &graph, "bookinfo.yaml").unwrap();
    crate::topology::Topology::from_yaml(&w.yaml, "out.yaml").unwrap();
    let doc: Value = serde_yaml::from_str(&w.yaml).unwrap();
    let svc = |name: &str| doc["services"][name].clone();
    let call = |from: &str, to: &str| {
        svc(from)["calls"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|c| c["to"].as_str() == Some(to))
            .cloned()
            .unwrap_or_else(|| panic!("{from} -> {to} not in {}", w.yaml))
    };
    assert_eq!(svc("productpage")["sidecar"]["kind"], "haproxy");
    assert!(svc("reviews").get("sidecar").is_none());
    let pr = call("productpage", "reviews");
    assert_eq!(pr["policy"]["attempts"], 2);
    assert_eq!(pr["policy"]["retry_other_host"], false);
    assert_eq!(pr["source"], "haproxy/haproxy.cfg:32");
    let pd = call("productpage", "details");
    assert_eq!(pd["policy"]["attempts"], 3);
    assert_eq!(pd["source"], "haproxy/haproxy.cfg:13");
    // reviews -> ratings is reviews' own call, not productpage's sidecar's.
    assert!(call("reviews", "ratings").get("policy").is_none());
}
