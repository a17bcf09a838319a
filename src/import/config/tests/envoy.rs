//! `chaoslab import envoy`: an Istio sidecar's `/config_dump` against what
//! Envoy's documentation says it does (router filter, RetryPolicy,
//! CircuitBreakers, OutlierDetection).

use super::super::{onto, read, ConfigFormat, File};
use super::{call, check_rules, fixture, noted, Want};

const DUMP: &str = "tests/fixtures/config/envoy/config_dump.json";

#[test]
fn a_sidecar_dump_gives_each_route_and_cluster_its_policy() {
    let read = read(ConfigFormat::Envoy, &[fixture("envoy/config_dump.json")]).unwrap();
    let pp = Some("productpage");
    let want: &[Want<'_>] = &[
        // routes[1]: num_retries 2 is three tries; retriable-status-codes
        // with its list; previous_hosts; no retry_back_off: the 25 ms base.
        (
            "reviews.default.svc.cluster.local",
            pp,
            143,
            "{ preset: envoy, attempts: 3, backoff: 25ms, retry_other_host: true,
               retry_on: [connect-failure, refused-stream, unavailable, cancelled,
                          { retriable-status-codes: [503] }] }",
        ),
        // The virtual host's policy, no route's: num_retries absent is one
        // retry; no host predicate, so a retry may return to the same host.
        (
            "details.default.svc.cluster.local",
            pp,
            175,
            "{ preset: envoy, attempts: 2, timeout: 250ms, backoff: 100ms, retry_other_host: false,
               retry_on: [5xx, { retriable-headers: [{ name: x-error-claim, exact: 'true' }] }] }",
        ),
        // No retry_policy anywhere: Envoy does not retry.
        ("ratings.default.svc.cluster.local", pp, 196, "{ attempts: 1 }"),
        // max_retries 10; outlier detection with Envoy's defaults filled in
        // (gateway failures not enforced, 30 s base, 300 s cap, 10%).
        (
            "reviews.default.svc.cluster.local",
            pp,
            37,
            "{ budget_model: concurrency, budget_percent: 0, min_retry_concurrency: 10,
               outlier: { consecutive_5xx: 3, consecutive_gateway: 0, interval: 5000ms,
                          base_ejection: 30000ms, max_ejection: 300000ms, max_ejection_percent: 10 } }",
        ),
        // The retry budget replaces max_retries: 25%, min_retry_concurrency 3;
        // the cap is the base when the base is longer than 300 s.
        (
            "ratings.default.svc.cluster.local",
            pp,
            65,
            "{ budget_model: concurrency, budget_percent: 25, min_retry_concurrency: 3,
               outlier: { consecutive_5xx: 5, consecutive_gateway: 2, interval: 10000ms,
                          base_ejection: 600000ms, max_ejection: 600000ms, max_ejection_percent: 50 } }",
        ),
        // No circuit_breakers: Envoy's 3 retries in flight.
        (
            "details.default.svc.cluster.local",
            pp,
            81,
            "{ budget_model: concurrency, budget_percent: 0, min_retry_concurrency: 3 }",
        ),
        // Istio's 2^32 - 1: as many as the lab allows.
        (
            "productpage.default.svc.cluster.local",
            pp,
            91,
            "{ budget_model: concurrency, budget_percent: 0, min_retry_concurrency: 1000000 }",
        ),
    ];
    check_rules(DUMP, &read, want);
    noted(&read, 1, "productpage's proxy");
    noted(
        &read,
        135,
        "routes[0]: not taken: its match asks for headers",
    );
    noted(&read, 142, "overall timeout is not mapped");
    noted(&read, 154, "host_selection_retry_max_attempts: not mapped");
    noted(&read, 161, "routes[2]: never reached");
    noted(&read, 181, "max_interval: not mapped");
    noted(&read, 192, "not taken: its match asks for a path");
    noted(&read, 38, "thresholds[1]: not the DEFAULT priority");
    noted(&read, 42, "success-rate ejection");
    noted(&read, 50, "subset v2");
    noted(
        &read,
        65,
        "Envoy applies the retry budget and ignores max_retries",
    );
    noted(&read, 91, "is no limit");
    noted(&read, 1, "prometheus_stats, BlackHoleCluster");
    assert_eq!(read.notes.len(), 13, "{:#?}", read.notes);
    let skipped: Vec<(&str, usize)> = read.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(skipped, [("envoy.admin.v3.ListenersConfigDump", 1)]);
}

#[test]
fn an_empty_retry_policy_takes_envoys_defaults() {
    let read = read(ConfigFormat::Envoy, &[fixture("envoy/route_config.json")]).unwrap();
    // A bare RouteConfiguration, every field of its retry_policy absent:
    // one retry, on no condition, 25 ms base, any host; the domain `*`
    // names the route's cluster, which the file leaves at Envoy's
    // max_retries 3.
    let want: &[Want<'_>] = &[(
        "reviews",
        None,
        12,
        "{ preset: envoy, attempts: 2, retry_on: [], backoff: 25ms, retry_other_host: false,
           budget_model: concurrency, budget_percent: 0, min_retry_concurrency: 3 }",
    )];
    check_rules("tests/fixtures/config/envoy/route_config.json", &read, want);
    noted(&read, 12, "no retry_on: Envoy retries on no condition");
}

#[test]
fn input_that_is_no_config_dump_is_refused_at_its_line() {
    let e = read(ConfigFormat::Envoy, &[fixture("envoy/not-json.json")]).unwrap_err();
    assert_eq!(
        e.at.to_string(),
        "tests/fixtures/config/envoy/not-json.json:3",
        "{e}"
    );
    assert!(e.why.starts_with("not JSON (an Envoy /config_dump)"), "{e}");
    let e = read(ConfigFormat::Envoy, &[fixture("envoy/not-a-dump.json")]).unwrap_err();
    assert_eq!(e.at.line, 1, "{e}");
    assert!(e.why.contains("not an Envoy config dump"), "{e}");
    let bad = File {
        name: "d.json".into(),
        text: "{\"virtual_hosts\": [{\"domains\": [\"a\"], \"routes\": [{\"match\": {\"prefix\": \"/\"},\n \"route\": {\"retry_policy\": {\"per_try_timeout\": \"soon\"}}}]}]}".into(),
    };
    let e = read(ConfigFormat::Envoy, &[bad]).unwrap_err();
    assert_eq!(e.to_string().split(": ").next(), Some("d.json:2"), "{e}");
    assert!(e.why.contains("per_try_timeout"), "{e}");
}

#[test]
fn the_dump_onto_bookinfo_governs_productpages_calls() {
    let read = read(ConfigFormat::Envoy, &[fixture("envoy/config_dump.json")]).unwrap();
    let graph = fixture("bookinfo.yaml");
    let w = onto(ConfigFormat::Envoy, &read, &graph.text, &graph.name).unwrap();
    crate::topology::Topology::from_yaml(&w.yaml, "written").unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&w.yaml).unwrap();
    let reviews = call(&doc, "productpage", "reviews");
    assert_eq!(
        reviews["source"].as_str(),
        Some(format!("{DUMP}:143").as_str())
    );
    let p = &reviews["policy"];
    assert_eq!(p["attempts"].as_u64(), Some(3));
    assert_eq!(p["min_retry_concurrency"].as_u64(), Some(10));
    assert_eq!(p["outlier"]["consecutive_5xx"].as_u64(), Some(3));
    let details = call(&doc, "productpage", "details");
    assert_eq!(
        details["source"].as_str(),
        Some(format!("{DUMP}:175").as_str())
    );
    assert_eq!(details["policy"]["timeout"].as_str(), Some("250ms"));
    // The dump is productpage's: reviews' own call to ratings is not its.
    assert!(
        call(&doc, "reviews", "ratings").get("policy").is_none(),
        "{}",
        w.yaml
    );
    assert!(
        w.yaml.contains("# envoy.admin")
            || w.notes.iter().any(|n| n.contains("ListenersConfigDump"))
    );
    assert!(
        w.yaml.contains(&format!(
            "source: {DUMP}:143  # route_config 9080 virtual_hosts[0] routes[1].route.retry_policy"
        )),
        "{}",
        w.yaml
    );
}
