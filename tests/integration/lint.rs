//! SPEC section 18's reference case, end to end: Bookinfo with Istio's own
//! routes (no retries set, so Istio's default retries a 503 twice at every
//! hop) imported onto its graph, `lint` naming ratings at 9× and the
//! lines, its thresholds as exit codes, its SARIF valid against the
//! SARIF 2.1.0 schema, and the fleet measuring what `lint` predicted.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::{chaoslab, root, succeed, text};

/// A scratch file under the system's temp directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(std::env::temp_dir().join(format!("chaoslab-lint-{}-{name}", std::process::id())))
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Bookinfo with Istio's configuration written onto it.
fn bookinfo_with_istio(graph: &str, out: &Scratch) {
    succeed(&[
        "import",
        "istio",
        "examples/istio/bookinfo.yaml",
        "--onto",
        graph,
        "-o",
        out.path(),
    ]);
}

/// The SARIF 2.1.0 schema `scripts/test` fetches, and the Python whose
/// jsonschema checks a document against it.
fn sarif_validator() -> (PathBuf, PathBuf) {
    let schema = std::env::var_os("CHAOSLAB_SARIF_SCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/sarif-schema-2.1.0.json"));
    let python = std::env::var_os("CHAOSLAB_KUBERNETES_VALIDATE")
        .map(|p| PathBuf::from(p).with_file_name("python"))
        .unwrap_or_else(|| root().join("target/k8s-venv/bin/python"));
    assert!(
        schema.is_file() && python.is_file(),
        "the SARIF schema ({}) or the venv's Python ({}) is missing: run scripts/test, which fetches the schema (tools/sarif-schema) and makes the venv",
        schema.display(),
        python.display()
    );
    (schema, python)
}

#[test]
fn bookinfo_under_istios_default_ratings_gets_nine_times_and_lint_says_which_lines() {
    let imported = Scratch::new("bookinfo.yaml");
    bookinfo_with_istio("topologies/bookinfo.yaml", &imported);
    let written = std::fs::read_to_string(&imported.0).unwrap();
    // Every call carries the line of the route that governs it.
    assert!(written.contains("source: examples/istio/bookinfo.yaml:27  # VirtualService reviews http[0] (no retries: Istio's default)"), "{written}");

    // No threshold: the map, ratings first at 3 × 3.
    let (stdout, _) = succeed(&["lint", imported.path()]);
    let first = stdout.lines().nth(2).unwrap();
    assert!(
        first.starts_with("ratings")
            && first.contains("9.00×")
            && first.contains("productpage →(3×) reviews →(3×) ratings"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("productpage → reviews: 3 attempts, set by examples/istio/bookinfo.yaml:27"),
        "{stdout}"
    );
    assert!(
        stdout.contains("reviews → ratings: 3 attempts, set by examples/istio/bookinfo.yaml:40"),
        "{stdout}"
    );

    // Over 4: exit 1, naming the service, the factor, the path, the lines.
    let out = chaoslab(&["lint", imported.path(), "--max-amplification", "4"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("ratings receives 9.00× its load when it fails (over --max-amplification 4), through productpage →(3×) reviews →(3×) ratings, retries set by examples/istio/bookinfo.yaml:27, examples/istio/bookinfo.yaml:40"),
        "{stderr}"
    );

    // Ratings and reviews answer 503 for their own errors and 502 for an
    // error they pass up: only reviews retries ratings' 503, and
    // productpage does not retry reviews' 502.
    let owned_graph = Scratch::new("owned-graph.yaml");
    let graph = std::fs::read_to_string(root().join("topologies/bookinfo.yaml"))
        .unwrap()
        .replace(
            "  reviews:\n    calls: [ratings]\n    errors: { passed: same }",
            "  reviews:\n    calls: [ratings]\n    errors: { own: 503, passed: 502 }",
        )
        .replace(
            "errors: { own: 503, passed: same }",
            "errors: { own: 503, passed: 502 }",
        );
    assert_eq!(graph.matches("passed: 502").count(), 2);
    std::fs::write(&owned_graph.0, graph).unwrap();
    let owned = Scratch::new("owned.yaml");
    bookinfo_with_istio(owned_graph.path(), &owned);
    let out = chaoslab(&[
        "lint",
        owned.path(),
        "--max-amplification",
        "4",
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let map: Value = serde_json::from_str(&stdout).unwrap();
    let ratings = map["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["service"] == "ratings")
        .unwrap();
    assert!(
        (ratings["amplification"].as_f64().unwrap() - 3.0).abs() < 1e-9,
        "{ratings}"
    );
    assert_eq!(map["violations"], 0);
}

#[test]
fn the_sarif_validates_against_the_schema_and_points_at_the_configuration() {
    let (schema, python) = sarif_validator();
    let imported = Scratch::new("sarif.yaml");
    bookinfo_with_istio("topologies/bookinfo.yaml", &imported);
    let sarif = Scratch::new("out.sarif");
    let out = chaoslab(&[
        "lint",
        imported.path(),
        "--max-amplification",
        "4",
        "--format",
        "sarif",
        "-o",
        sarif.path(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    let check = |doc: &str| {
        Command::new(&python)
            .args([
                "-c",
                "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1]))); print('valid')",
                schema.to_str().unwrap(),
                doc,
            ])
            .output()
            .unwrap()
    };
    let v = check(sarif.path());
    assert!(v.status.success(), "{:?}", text(&v));
    // The validator can fail: a result without its message is refused.
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif.0).unwrap()).unwrap();
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    let bad = Scratch::new("broken.sarif");
    std::fs::write(&bad.0, broken.to_string()).unwrap();
    assert!(!check(bad.path()).status.success());

    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{log:#}");
    let r = &results[0];
    assert_eq!(r["ruleId"], "retry-amplification");
    assert_eq!(r["level"], "error");
    // Located at the configuration's line, the path's other lines related.
    let at = &r["locations"][0]["physicalLocation"];
    assert_eq!(
        at["artifactLocation"]["uri"],
        "examples/istio/bookinfo.yaml"
    );
    assert_eq!(at["region"]["startLine"], 40);
    let related: Vec<u64> = r["relatedLocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(related, [27]);
}

#[test]
fn the_fleet_measures_what_lint_predicted_for_bookinfo() {
    let _fleet = crate::common::fleet_lock();
    let imported = Scratch::new("fleet.yaml");
    bookinfo_with_istio("topologies/bookinfo.yaml", &imported);
    let (stdout, _) = succeed(&["lint", imported.path(), "--format", "json"]);
    let map: Value = serde_json::from_str(&stdout).unwrap();
    let predicted = map["services"][0]["amplification"].as_f64().unwrap();
    assert_eq!(map["services"][0]["service"], "ratings");
    let report = Scratch::new("fleet.json");
    succeed(&[
        "run",
        imported.path(),
        "--headless",
        "--duration",
        "6s",
        "--warmup",
        "2s",
        "--report",
        report.path(),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report.0).unwrap()).unwrap();
    assert_eq!(r["saturated"], false, "{}", r["saturation"]);
    let node = r["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "ratings")
        .unwrap();
    let measured = node["amplification"].as_f64().unwrap();
    assert!(
        (measured / predicted - 1.0).abs() < 0.05,
        "ratings measured {measured}× against lint's {predicted}×"
    );
    assert!((predicted - 9.0).abs() < 1e-9);
}

#[test]
fn bad_input_exits_two_and_says_where() {
    for (args, says) in [
        (
            vec!["lint", "topologies/none.yaml"],
            "topologies/none.yaml: cannot read it",
        ),
        (
            vec!["lint", "topologies/bookinfo.yaml", "--rate", "0"],
            "above 0 and at most 1",
        ),
        (
            vec![
                "lint",
                "topologies/bookinfo.yaml",
                "--max-amplification",
                "0.5",
            ],
            "a factor of 1 or more",
        ),
        (
            vec!["import", "istio", "examples/istio/bookinfo.yaml"],
            "--onto GRAPH",
        ),
        (
            vec![
                "import",
                "istio",
                "topologies/bookinfo.yaml",
                "--onto",
                "topologies/bookinfo.yaml",
            ],
            "topologies/bookinfo.yaml:1: not an Istio object: no `kind:`",
        ),
        (
            vec![
                "import",
                "kiali",
                "a.json",
                "--onto",
                "topologies/bookinfo.yaml",
            ],
            "--onto: only a mesh's configuration",
        ),
        (
            vec![
                "import",
                "istio",
                "examples/istio/bookinfo.yaml",
                "--onto",
                "examples/istio/bookinfo.yaml",
            ],
            "examples/istio/bookinfo.yaml",
        ),
    ] {
        let out = chaoslab(&args);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}\n{stdout}\n{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
