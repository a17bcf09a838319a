//! Istio, against the VirtualService and DestinationRule references
//! (istio.io/latest/docs/reference/config/networking/): `attempts` counts
//! retries, `attempts: 0` turns them off, a route without `retries` gets
//! pilot's default, the first route a request satisfies is taken, and a
//! subset's traffic policy replaces the host's setting by setting.

use super::{flow, read_fixture as fixture, text};
use crate::import::config::onto::onto;
use crate::import::config::ConfigFormat::Istio;

#[test]
fn the_awkward_routes_map_to_the_table_from_istios_reference() {
    let r = fixture(Istio, &["tests/fixtures/config/istio/routes.yaml"]);
    let got: Vec<String> = r
        .rules
        .iter()
        .map(|x| {
            format!(
                "{} from {} {} @{}",
                x.host,
                x.from.as_deref().unwrap_or("*"),
                flow(&x.policy),
                x.source.line
            )
        })
        .collect();
    let want = [
        // http[1]: productpage's own route, 4 retries.
        "reviews.bookinfo.svc.cluster.local from productpage {attempts: 5, preset: istio, retry_on: [gateway-error,connect-failure,409], timeout: 500ms} @31",
        // http[2]: every other caller, retries off.
        "reviews.bookinfo.svc.cluster.local from * {attempts: 1} @39",
        // 3 retries; the codes carry retriable-status-codes.
        "ratings from * {attempts: 4, preset: istio, retry_on: [5xx,503,504], timeout: 2000ms} @63",
        // The host has no route of its own: Istio's default.
        "detials from * {preset: istio} @123",
        // The pool: 3 retries in flight; outlier detection.
        "ratings.default.svc.cluster.local from * {budget_model: concurrency, budget_percent: 0, min_retry_concurrency: 3, outlier: {consecutive_5xx:7,interval:5000ms,base_ejection:900000ms,max_ejection_percent:50}} @94",
        // Subset v1 takes every request: its outlier detection replaces the host's.
        "ratings.default.svc.cluster.local from * {outlier: {consecutive_5xx:2}} @105",
    ];
    assert_eq!(got, want);
    let notes: Vec<String> = r
        .notes
        .iter()
        .map(|n| format!("{}: {}", n.source.line, n.text))
        .collect();
    for (line, what) in [
        (20, "http[0]: not taken: its match asks for `headers`"),
        (41, "http[3]: never reached"),
        (
            62,
            "http[0].timeout: the route's overall timeout is not mapped",
        ),
        (76, "binds only gateways (bookinfo-gateway)"),
        (
            110,
            "subsets[1] (v2) trafficPolicy: no route sends every request",
        ),
    ] {
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(&format!("{line}: ")) && n.contains(what)),
            "{line} {what}: {notes:#?}"
        );
    }
    assert_eq!(r.skipped.get("Deployment"), Some(&1));
    assert_eq!(
        r.default.as_ref().map(|(p, _)| flow(p)),
        Some("{preset: istio}".into())
    );
}

#[test]
fn onto_bookinfo_every_call_takes_its_route_or_istios_default() {
    let r = fixture(Istio, &["tests/fixtures/config/istio/routes.yaml"]);
    let graph = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/topologies/bookinfo.yaml"
    ))
    .unwrap();
    let w = onto(Istio, &r, &graph, "topologies/bookinfo.yaml").unwrap();
    let t = crate::topology::Topology::from_yaml(&w.yaml, "written").unwrap();
    let call = |from: &str, to: &str| {
        let (a, b) = (t.service_id(from).unwrap(), t.service_id(to).unwrap());
        t.edges
            .iter()
            .find(|e| e.from == a && e.to == b)
            .unwrap()
            .clone()
    };
    let pr = call("productpage", "reviews");
    assert_eq!(pr.policy.attempts, Some(5));
    assert_eq!(
        pr.source.as_deref(),
        Some("tests/fixtures/config/istio/routes.yaml:31")
    );
    let rr = call("reviews", "ratings");
    assert_eq!(rr.policy.attempts, Some(4));
    assert_eq!(
        rr.source.as_deref(),
        Some("tests/fixtures/config/istio/routes.yaml:63")
    );
    let pd = call("productpage", "details");
    assert!(pd
        .source
        .as_deref()
        .unwrap()
        .starts_with("Istio's default retry policy"));
    // What was not mapped is at the top, the misspelt host with a guess.
    assert!(
        w.yaml.contains(
            "no service of topologies/bookinfo.yaml is the host detials (did you mean details?)"
        ),
        "{}",
        w.yaml
    );
    assert!(w.yaml.contains("source: tests/fixtures/config/istio/routes.yaml:31  # VirtualService reviews http[1].retries\n"), "{}", w.yaml);
}

#[test]
fn bad_input_names_the_file_and_line() {
    let e = text(Istio, "vs.yaml", "kind: VirtualService\nspec: [\n").unwrap_err();
    assert!(
        e.starts_with("vs.yaml:3: not YAML: did not find expected node content"),
        "{e}"
    );
    let e = text(Istio, "x.yaml", "apiVersion: v1\nmetadata: { name: a }\n").unwrap_err();
    assert_eq!(e, "x.yaml:1: not an Istio object: no `kind:` (istio reads VirtualServices and DestinationRules)");
    let vs = "kind: VirtualService\nmetadata: { name: r }\nspec:\n  hosts: [ratings]\n  http:\n  - route: [{ destination: { host: ratings } }]\n    retries:\n      attempts: 2\n      perTryTimeout: 2 seconds\n";
    let e = text(Istio, "vs.yaml", vs).unwrap_err();
    assert_eq!(e, "vs.yaml:7: VirtualService r http[0].retries.perTryTimeout: a duration such as 2s or 250ms, got 2 seconds");
    let e = text(
        Istio,
        "vs.yaml",
        &vs.replace("attempts: 2", "attempts: three"),
    )
    .unwrap_err();
    assert!(e.starts_with("vs.yaml:7: VirtualService r http[0].retries.attempts: a number of retries from 0 to 99, got three"), "{e}");
    let e = text(
        Istio,
        "vs.yaml",
        "kind: VirtualService\nmetadata: { name: r }\nspec:\n  http: []\n",
    )
    .unwrap_err();
    assert_eq!(e, "vs.yaml:3: VirtualService r: no `hosts:`");
}
