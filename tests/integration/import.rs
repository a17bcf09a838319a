//! `chaoslab import` (SPEC section 12): each format's fixture in
//! `tests/import/`, written by hand from the format's published schema
//! with its awkward cases (Kiali's string rates, hashed node ids and TCP
//! edges; Zipkin's missing `errorCount`; Jaeger's wrapper with `errors`;
//! the servicegraph connector's `user` client and `failed` label), imports
//! to the shop it describes; bad input is exit 2, naming the place, and
//! writes nothing.

use std::path::PathBuf;

use chaoslab::topology::Topology;

use crate::common::{chaoslab, fleet_lock, root, text};
use crate::tables::{headless_report, node, num};

/// The shop every fixture describes: frontend calls cart and catalog, cart
/// calls redis, catalog calls db.
const EDGES: [(&str, &str); 4] = [
    ("frontend", "cart"),
    ("frontend", "catalog"),
    ("cart", "redis"),
    ("catalog", "db"),
];

fn fixture(name: &str) -> String {
    root()
        .join("tests/import")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("chaoslab-import-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// Imports `file` as `format` to a file, checks it, and loads it.
fn imported(format: &str, file: &str, extra: &[&str]) -> (Topology, String) {
    let out_path = scratch(&format!("{format}.yaml"));
    let out = out_path.to_str().unwrap();
    let mut args = vec!["import", format, file, "-o", out];
    args.extend_from_slice(extra);
    let run = chaoslab(&args);
    let (stdout, stderr) = text(&run);
    assert_eq!(run.status.code(), Some(0), "{args:?}: {stdout}\n{stderr}");
    let check = chaoslab(&["check", out]);
    assert_eq!(check.status.code(), Some(0), "check: {}", text(&check).1);
    let yaml = std::fs::read_to_string(out).unwrap();
    (Topology::load(&out_path).unwrap(), yaml)
}

/// The calls per request (count × p) of each edge of the shop.
fn calls(t: &Topology) -> Vec<f64> {
    EDGES
        .iter()
        .map(|(a, b)| {
            let (a, b) = (t.service_id(a).unwrap(), t.service_id(b).unwrap());
            let e = t
                .edges
                .iter()
                .find(|e| e.from == a && e.to == b)
                .unwrap_or_else(|| panic!("no edge {a} -> {b}"));
            (e.expected_calls() * 1e4).round() / 1e4
        })
        .collect()
}

#[test]
fn every_format_imports_its_fixture_to_the_shop() {
    // Dependency links say nothing of the requests into the root, so
    // frontend's are its busiest edge's calls (3,000); the servicegraph's
    // `user` client and Kiali's unknown node say them (1,000; 10 a second).
    let cases: [(&str, &str, [f64; 4]); 6] = [
        ("jaeger", "jaeger.json", [0.4, 1.0, 2.0, 0.3]),
        ("jaeger", "jaeger-v2.json", [0.4, 1.0, 2.0, 0.3]),
        ("zipkin", "zipkin.json", [0.4, 1.0, 2.0, 0.3]),
        ("servicegraph", "servicegraph.prom", [1.2, 3.0, 2.0, 0.3]),
        (
            "servicegraph",
            "servicegraph-api.json",
            [1.2, 3.0, 2.0, 0.3],
        ),
        ("kiali", "kiali.json", [1.2, 3.0, 1.0, 0.3]),
    ];
    for (format, file, want) in cases {
        let (t, yaml) = imported(format, &fixture(file), &[]);
        let mut names: Vec<&str> = t.services.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["cart", "catalog", "db", "frontend", "redis"],
            "{file}"
        );
        assert_eq!(t.edges.len(), 4, "{file}: {yaml}");
        assert_eq!(calls(&t), want, "{file}:\n{yaml}");
        assert_eq!(t.load.roots.len(), 1, "{file}");
        assert_eq!(t.entry().name, "frontend", "{file}");
        assert_eq!(t.load.rps, 100.0, "{file}");
        // Observed errors are faults, commented out.
        if file.starts_with("zipkin")
            || file.starts_with("servicegraph")
            || file.starts_with("kiali")
        {
            assert!(
                yaml.contains("# fault: { error_rate: 0.05 }"),
                "{file}:\n{yaml}"
            );
        }
        assert!(t.services.iter().all(|s| !s.fault.is_active()), "{file}");
        assert!(yaml.contains("# Mapping:"), "{yaml}");
    }
    // --with-faults makes them live: db fails 45 of its 900 calls.
    let (t, _) = imported(
        "zipkin",
        &fixture("zipkin.json"),
        &["--with-faults", "--rps", "50"],
    );
    let db = &t.services[t.service_id("db").unwrap()];
    assert_eq!(db.fault.error_rate, 0.05);
    assert_eq!(t.load.rps, 50.0);
}

/// A service-level cycle with no operations to tell endpoints apart is
/// cut at its weakest edge (seat → travel, 400 calls), named in a comment.
#[test]
fn a_cycle_is_cut_at_its_weakest_edge_and_named() {
    let (t, yaml) = imported("zipkin", &fixture("cycle.json"), &[]);
    assert!(
        yaml.contains(
            "# Cycle travel -> seat -> travel cut at its weakest edge seat -> travel (400 calls)."
        ),
        "{yaml}"
    );
    let (seat, travel) = (
        t.service_id("seat").unwrap(),
        t.service_id("travel").unwrap(),
    );
    assert!(!t.edges.iter().any(|e| e.from == seat && e.to == travel));
    assert_eq!(t.edges.len(), 3);
}

/// The imported shop runs: under `retry` and `ownership`, with its
/// observed faults live, each service's amplification is the model's.
#[test]
fn an_imported_topology_runs_under_retry_and_ownership() {
    let _fleet = fleet_lock();
    let (_, yaml) = imported(
        "servicegraph",
        &fixture("servicegraph.prom"),
        &["--with-faults", "--rps", "200"],
    );
    let file = scratch("runs.yaml");
    std::fs::write(&file, yaml).unwrap();
    for policy in ["retry", "ownership"] {
        let r = headless_report(
            file.to_str().unwrap(),
            &["--duration", "3s", "--warmup", "1s", "--policy", policy],
        );
        for name in ["cart", "catalog", "db", "redis"] {
            let n = node(&r, name);
            let (amp, want) = (num(n, "amplification"), num(n, "model_amplification"));
            // cart's calls are drawn (p 0.6), and db's (0.3): three
            // relative spreads of a draw over the requests measured.
            let tol = 0.04 + 3.0 / num(n, "requests").sqrt();
            assert!(
                (amp - want).abs() <= tol * want,
                "{policy}: {name} at {amp:.3}×, model {want:.3}× (± {tol:.3})"
            );
        }
    }
}

#[test]
fn bad_sources_exit_2_naming_the_place_and_write_nothing() {
    let bad = |name: &str, body: &str, format: &str, says: &[&str]| {
        let src = scratch(name);
        std::fs::write(&src, body).unwrap();
        let out = scratch(&format!("{name}.out.yaml"));
        let run = chaoslab(&[
            "import",
            format,
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let (_, stderr) = text(&run);
        assert_eq!(run.status.code(), Some(2), "{name}: {stderr}");
        for s in says {
            assert!(stderr.contains(s), "{name}: no `{s}` in: {stderr}");
        }
        assert!(!out.exists(), "{name}: wrote {out:?}");
    };
    bad(
        "malformed.json",
        "{\"data\": [",
        "jaeger",
        &["line 1, column 10: not JSON"],
    );
    bad(
        "string-count.json",
        r#"{"data":[{"parent":"a","child":"b","callCount":"12"}]}"#,
        "jaeger",
        &["data[0].callCount: expected a JSON number ≥ 0, found the string \"12\""],
    );
    bad(
        "unknown-node.json",
        r#"{"elements":{"nodes":[{"data":{"id":"n1","service":"a"}}],"edges":[{"data":{"source":"n1","target":"n9","traffic":{"rates":{"http":"1"}}}}]}}"#,
        "kiali",
        &["elements.edges[0].data.target: `n9` is not the id of any node"],
    );
    bad("empty.json", "[]", "zipkin", &["no calls between services"]);
    bad(
        "bad-line.prom",
        "traces_service_graph_request_total{client=\"a\",server=\"b\"} many\n",
        "servicegraph",
        &["line 1: `many` is not a count"],
    );
    bad(
        "not-servicegraph.prom",
        "up{job=\"x\"} 1\n",
        "servicegraph",
        &["no traces_service_graph_request_total sample"],
    );
    // A URL nothing answers on: refused at once, named.
    let run = chaoslab(&["import", "jaeger", "http://127.0.0.1:9/"]);
    let (_, stderr) = text(&run);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("GET http://127.0.0.1:9/api/dependencies"),
        "{stderr}"
    );
    let run = chaoslab(&["import", "kiali", "no/such/file.json"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run)
        .1
        .contains("kiali no/such/file.json: cannot read it"));
}
