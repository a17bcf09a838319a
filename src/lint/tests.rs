//! The storm map against the model run once per failing service (what
//! the one pass saves), and against the mechanism worked by hand.

use super::{lint, Format, Options};
use crate::topology::model::predict;
use crate::topology::{Fault, Phase, Topology};

fn options(max: Option<f64>) -> Options {
    Options {
        topology: "t.yaml".into(),
        max_amplification: max,
        max_radius: None,
        rate: 1.0,
        format: Format::Text,
        output: None,
    }
}

fn load(path: &str) -> (Topology, String) {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    (Topology::from_yaml(&text, path).unwrap(), text)
}

/// The model's load on `x` over its baseline with `x` failing every
/// request before its calls, every other fault lifted: the figure the
/// storm map must give, one model run per service.
fn by_the_model(t: &Topology, x: usize, rate: f64) -> f64 {
    let mut t = t.clone();
    for s in &mut t.services {
        s.fault = Fault::default();
    }
    t.services[x].fault = Fault {
        error_rate: rate,
        phase: Phase::Before,
        status: t.services[x].errors.own,
        ..Fault::default()
    };
    let p = predict(&t, &t.policy);
    p.services[x].amplification
}

#[test]
fn one_pass_gives_what_the_model_gives_run_once_per_failing_service() {
    for path in [
        "topologies/uber-chain.yaml",
        "topologies/three-node.yaml",
        "topologies/deep-chain.yaml",
        "topologies/fanout.yaml",
        "topologies/bookinfo.yaml",
        "topologies/context-drop.yaml",
        "topologies/at-least-once.yaml",
    ] {
        let (t, text) = load(path);
        for rate in [1.0, 0.5] {
            let o = Options {
                rate,
                ..options(None)
            };
            let map = lint(&t, &text, path, &o);
            for r in &map.rows {
                let x = t.service_id(&r.service).unwrap();
                let want = by_the_model(&t, x, rate);
                assert!(
                    (r.amplification - want).abs() < 1e-6 * want.max(1.0),
                    "{path} at {rate}: {} {} against the model's {want}",
                    r.service,
                    r.amplification
                );
            }
        }
    }
}

#[test]
fn a_chain_of_retrying_hops_multiplies_as_the_mechanism_says() {
    // Four hops retrying twice under `retry`: D gets 2^3; under a 10%
    // budget, 1.1 per hop in the steady state; under ownership only C.
    let yaml = |preset: &str| {
        format!(
            "name: chain\npolicy: {{ preset: {preset} }}\nservices:\n  A: {{ calls: [B] }}\n  B: {{ calls: [C] }}\n  C: {{ calls: [D] }}\n  D: {{}}\n"
        )
    };
    for (preset, d, radius, steady) in [
        ("retry", 8.0, 3, false),
        ("budget", 1.1f64.powi(3), 3, true),
        ("ownership", 1.1, 1, true),
        ("none", 1.0, 0, false),
    ] {
        let text = yaml(preset);
        let t = Topology::from_yaml(&text, "chain.yaml").unwrap();
        let map = lint(&t, &text, "chain.yaml", &options(None));
        let row = map.rows.iter().find(|r| r.service == "D").unwrap();
        assert!(
            (row.amplification - d).abs() < 1e-6,
            "{preset}: {}",
            row.amplification
        );
        assert_eq!(row.radius, radius, "{preset}");
        assert_eq!(row.steady_state, steady, "{preset}");
        let hops: Vec<String> = row
            .path
            .iter()
            .map(|h| format!("{}>{}", h.from, h.to))
            .collect();
        assert_eq!(hops, ["A>B", "B>C", "C>D"], "{preset}");
        // With no configuration, each hop points at the topology's line
        // of the call.
        assert_eq!(
            row.path.iter().map(|h| h.line).collect::<Vec<_>>(),
            [4, 5, 6],
            "{preset}"
        );
    }
}

#[test]
fn a_threshold_names_the_service_the_factor_the_path_and_the_lines() {
    let text = std::fs::read_to_string(format!(
        "{}/topologies/bookinfo.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace(
        "calls: [details, reviews]",
        "calls: [details, { to: reviews, policy: { preset: istio }, source: \"vs.yaml:12\" }]",
    )
    .replace(
        "calls: [ratings]",
        "calls: [{ to: ratings, policy: { preset: istio }, source: \"vs.yaml:40\" }]",
    );
    let t = Topology::from_yaml(&text, "b.yaml").unwrap();
    let map = lint(&t, &text, "b.yaml", &options(Some(4.0)));
    let over: Vec<_> = map.violations().collect();
    assert_eq!(over.len(), 1);
    assert_eq!(over[0].service, "ratings");
    assert!((over[0].amplification - 9.0).abs() < 1e-9);
    assert_eq!(
        over[0].exceeds,
        ["ratings receives 9.00× its load when it fails (over --max-amplification 4), through productpage →(3×) reviews →(3×) ratings, retries set by vs.yaml:12, vs.yaml:40"]
    );
    // Within 9: nothing over.
    assert_eq!(
        lint(&t, &text, "b.yaml", &options(Some(9.0)))
            .violations()
            .count(),
        0
    );
}

#[test]
fn rates_and_factors_are_read_or_refused_with_the_accepted_form() {
    assert_eq!(super::parse_rate("0.5"), Ok(0.5));
    assert_eq!(super::parse_rate("25%"), Ok(0.25));
    assert!(super::parse_rate("0")
        .unwrap_err()
        .contains("above 0 and at most 1"));
    assert!(super::parse_rate("1.5").unwrap_err().contains("at most 1"));
    assert!(super::parse_rate("half")
        .unwrap_err()
        .contains("a share of requests"));
}
