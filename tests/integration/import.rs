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
use crate::tables::{each_node_at_the_model, headless_report};

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
    // Tests import side by side: each import its own file.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out_path = scratch(&format!("{format}-{k}.yaml"));
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
        // Kiali's rates are per second: its root is written at the
        // rate it saw; counts share 100 root requests a second.
        let rps = if format == "kiali" { 10.0 } else { 100.0 };
        assert_eq!(t.load.rps, rps, "{file}");
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
    // Every format's fixture: the dependency graphs, and the endpoints
    // and parallel calls of Jaeger's traces.
    for (format, file) in [
        ("servicegraph", "servicegraph.prom"),
        ("jaeger-trace", "jaeger-trace.json"),
        ("jaeger", "jaeger.json"),
        ("zipkin", "zipkin.json"),
        ("kiali", "kiali.json"),
    ] {
        let (_, yaml) = imported(format, &fixture(file), &["--with-faults", "--rps", "200"]);
        let path = scratch(&format!("runs-{format}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        for policy in ["retry", "ownership"] {
            let r = headless_report(
                path.to_str().unwrap(),
                &["--duration", "2s", "--warmup", "1s", "--policy", policy],
            );
            let nodes = r["nodes"].as_array().unwrap();
            assert!(nodes.len() >= 5, "{format}: {} nodes", nodes.len());
            each_node_at_the_model(&r, &format!("{format}, {policy}"));
        }
    }
}

#[test]
fn bad_sources_exit_2_naming_the_place_and_write_nothing() {
    let bad = refused;
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

/// Runs `chaoslab import` on `body` and expects exit 2, each of `says` in
/// its message, and nothing written.
fn refused(name: &str, body: &str, format: &str, says: &[&str]) {
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
}

/// Each root's node and rate.
fn roots_of(t: &Topology) -> Vec<(&str, f64)> {
    t.load
        .roots
        .iter()
        .map(|r| (t.services[r.entry].name.as_str(), r.rps))
        .collect()
}

/// Expected calls per request (count × p) on the edge `from -> to`, by
/// node name (`S` or `S/E`).
fn per_request(t: &Topology, from: &str, to: &str) -> Option<f64> {
    let node = |n: &str| t.services.iter().position(|s| s.name == n);
    let (a, b) = (node(from)?, node(to)?);
    t.edges
        .iter()
        .find(|e| e.from == a && e.to == b)
        .map(|e| (e.expected_calls() * 1e4).round() / 1e4)
}

/// The fixture's five traces (tests/import/jaeger-trace.json): three of
/// `GET /product` (catalog and cart called at once below an internal
/// span in the first two, catalog alone in the third; catalog queries db
/// once, twice, once; two of the four queries fail, tagged `true` and
/// `"true"`), two of `POST /cart` (cart writes redis twice, the second
/// without waiting, FOLLOWS_FROM, then once).
#[test]
fn jaeger_traces_import_to_the_shop_with_endpoints() {
    let (t, yaml) = imported("jaeger-trace", &fixture("jaeger-trace.json"), &[]);
    let mut services: Vec<&str> = t.services.iter().map(|s| s.service_name()).collect();
    services.sort_unstable();
    services.dedup();
    assert_eq!(services, ["cart", "catalog", "db", "frontend", "redis"]);
    // Two inbound operations each: endpoints; one: a plain service.
    let mut nodes: Vec<&str> = t.services.iter().map(|s| s.name.as_str()).collect();
    nodes.sort_unstable();
    assert_eq!(
        nodes,
        [
            "cart/AddItem",
            "cart/GetCart",
            "catalog",
            "db",
            "frontend/GET_product",
            "frontend/POST_cart",
            "redis"
        ],
        "{yaml}"
    );
    assert!(
        yaml.contains("GET_product:   # operation \"GET /product\""),
        "{yaml}"
    );
    let want = [
        ("frontend/GET_product", "catalog", 1.0),
        ("frontend/GET_product", "cart/GetCart", 0.6667),
        ("frontend/POST_cart", "cart/AddItem", 1.0),
        ("cart/GetCart", "redis", 1.0),
        ("cart/AddItem", "redis", 1.5),
        // 4 over 3: count 2, p 0.6667 (p is written to 4 places).
        ("catalog", "db", 1.3334),
    ];
    for (a, b, x) in want {
        assert_eq!(per_request(&t, a, b), Some(x), "{a} -> {b}:\n{yaml}");
    }
    assert_eq!(t.edges.len(), want.len(), "{yaml}");
    // 3 and 2 root spans: 60 and 40 of 100 root requests a second.
    let roots = roots_of(&t);
    assert_eq!(
        roots,
        [("frontend/GET_product", 60.0), ("frontend/POST_cart", 40.0)]
    );
    // Only GET /product's calls overlapped (cart's two writes did not).
    let parallel: Vec<&str> = t
        .services
        .iter()
        .filter(|s| s.parallel)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(parallel, ["frontend/GET_product"]);
    assert!(
        yaml.contains("# fault: { error_rate: 0.5 }   # 2 of 4 calls into it failed"),
        "{yaml}"
    );
    assert!(!yaml.contains("# Cycle"), "{yaml}");
    let (t, _) = imported(
        "jaeger-trace",
        &fixture("jaeger-trace.json"),
        &["--with-faults"],
    );
    let db = &t.services[t.service_id("db").unwrap()];
    assert_eq!(db.fault.error_rate, 0.5);
}

/// travel/trip -> seat/reserve -> travel/detail: travel and seat call
/// each other, but no request loops; the trace makes travel's two
/// operations endpoints and nothing is cut.
#[test]
fn a_service_cycle_the_traces_resolve_becomes_endpoints() {
    let (t, yaml) = imported("jaeger-trace", &fixture("jaeger-trace-cycle.json"), &[]);
    assert!(!yaml.contains("# Cycle"), "{yaml}");
    assert_eq!(per_request(&t, "travel/trip", "seat"), Some(1.0), "{yaml}");
    assert_eq!(
        per_request(&t, "seat", "travel/detail"),
        Some(1.0),
        "{yaml}"
    );
    assert_eq!(t.edges.len(), 2);
    assert_eq!(t.entry().name, "travel/trip");
}

/// A Prometheus range (a matrix): each counter's increase over the time
/// between its first and last samples, a fall taken as a reset (user →
/// frontend: 1000, 1150, 1300, 150, 300 over 60 s is 600, 10 a second;
/// cart → redis falls too). A series of one sample gives no rate.
#[test]
fn a_prometheus_range_gives_the_roots_their_observed_rates() {
    let (t, yaml) = imported("servicegraph", &fixture("servicegraph-matrix.json"), &[]);
    let roots = roots_of(&t);
    assert_eq!(roots, [("frontend", 10.0), ("catalog", 2.0)], "{yaml}");
    // cart → redis: 1,440 over 60 s with its reset, over cart's 12 a second.
    assert_eq!(calls(&t), [1.2, 3.0, 2.0, 0.3], "{yaml}");
    assert!(yaml.contains("# fault: { error_rate: 0.05 }"), "{yaml}");
    assert!(
        yaml.contains("at the rate per second the source observed"),
        "{yaml}"
    );
    // --rps scales them to a total, each keeping its share.
    let (t, _) = imported(
        "servicegraph",
        &fixture("servicegraph-matrix.json"),
        &["--rps", "60"],
    );
    let rps: Vec<f64> = t.load.roots.iter().map(|r| r.rps).collect();
    assert_eq!(rps, [50.0, 10.0]);
}

/// `chaoslab import servicegraph http://HOST:PORT` asks Prometheus for a
/// one-minute range of the connector's counters, and reads the rates.
#[test]
fn a_prometheus_address_alone_is_asked_for_a_range() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let body = std::fs::read_to_string(fixture("servicegraph-matrix.json")).unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
        }
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        line
    });
    let url = format!("http://127.0.0.1:{port}");
    let run = chaoslab(&["import", "servicegraph", &url]);
    let (stdout, stderr) = text(&run);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let asked = server.join().unwrap();
    assert_eq!(
        asked.trim(),
        "GET /api/v1/query?query=%7B__name__%3D~%22traces_service_graph_request_(failed_)%3Ftotal%22%7D%5B1m%5D HTTP/1.1"
    );
    let t = Topology::from_yaml(&stdout, "stdout").unwrap();
    let rps: Vec<f64> = t.load.roots.iter().map(|r| r.rps).collect();
    assert_eq!(rps, [10.0, 2.0]);
}

#[test]
fn bad_traces_exit_2_naming_the_path_and_write_nothing() {
    let trace = |spans: &str| {
        format!(
            r#"{{"data":[{{"traceID":"t1","spans":[{spans}],"processes":{{"p1":{{"serviceName":"web"}},"p2":{{"serviceName":"api"}}}}}}],"errors":null}}"#
        )
    };
    let span = |id: &str, p: &str, refs: &str| {
        format!(
            r#"{{"traceID":"t1","spanID":"{id}","operationName":"GET /","references":[{refs}],"startTime":1764680000000000,"duration":10,"tags":[],"processID":"{p}"}}"#
        )
    };
    let ok = [
        span("a", "p1", ""),
        span("b", "p1", ""),
        span("c", "p2", ""),
    ]
    .join(",");
    refused(
        "ref-type.json",
        &trace(&format!(
            "{ok},{}",
            span(
                "d",
                "p2",
                r#"{"refType":"CHILD_OF","traceID":"t1","spanID":7}"#
            )
        )),
        "jaeger-trace",
        &["data[0].spans[3].references[0].spanID: expected a name, found the number 7"],
    );
    // A parent the traces do not hold (a trace cut short) is no mistake:
    // the span is a root, and the header says so.
    let orphan = scratch("unknown-span.json");
    std::fs::write(
        &orphan,
        trace(&format!(
            "{ok},{},{}",
            span(
                "d",
                "p1",
                r#"{"refType":"CHILD_OF","traceID":"t1","spanID":"zz"}"#
            ),
            span(
                "e",
                "p2",
                r#"{"refType":"CHILD_OF","traceID":"t1","spanID":"d"}"#
            )
        )),
    )
    .unwrap();
    let (_, yaml) = imported("jaeger-trace", orphan.to_str().unwrap(), &[]);
    assert!(
        yaml.contains("# 1 span named a parent the traces do not hold (first data[0].spans[3].references[0].spanID: \"zz\""),
        "{yaml}"
    );
    refused(
        "unknown-process.json",
        &trace(&span("a", "p7", "")),
        "jaeger-trace",
        &["data[0].spans[0].processID: \"p7\" is not in data[0].processes"],
    );
    refused(
        "no-spans.json",
        r#"{"data":[],"errors":null}"#,
        "jaeger-trace",
        &["no spans"],
    );
    refused(
        "short-series.json",
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"client":"a","server":"b"},"values":[[1764680000,"3"]]}]}}"#,
        "servicegraph",
        &["each of the 1 series has fewer than 2 samples"],
    );
    refused(
        "backwards.json",
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"client":"a","server":"b"},"values":[[1764680010,"3"],[1764680000,"5"]]}]}}"#,
        "servicegraph",
        &["data.result[0].values[1][0]: the time 1764680000 is not after"],
    );
    // `/api/traces` needs the service: an address alone is refused.
    let run = chaoslab(&["import", "jaeger-trace", "http://127.0.0.1:9"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        text(&run).1.contains("/api/traces?service="),
        "{}",
        text(&run).1
    );
}

/// A service named `user` (tests/import/servicegraph-user.prom, a social
/// network like DeathStarBench's): something calls it, so it is a
/// service of the mesh; only the calls the connector marks
/// `connection_type="virtual_node"` enter from outside. Its calls stay
/// calls (auth and social-graph are no roots), the cycle social-graph ⇄
/// user is cut with the comment the cycle rule promises, and the header
/// says how `user` was read.
#[test]
fn a_service_named_user_is_a_service_not_the_outside_world() {
    let (t, yaml) = imported("servicegraph", &fixture("servicegraph-user.prom"), &[]);
    assert_eq!(roots_of(&t), [("nginx", 100.0)], "{yaml}");
    // 400 calls over the 400 requests compose-post sends it (the 50 of
    // social-graph's are the cycle's cut edge).
    assert_eq!(per_request(&t, "user", "auth"), Some(1.0), "{yaml}");
    assert!(per_request(&t, "compose-post", "user").is_some(), "{yaml}");
    assert!(
        yaml.contains("# Cycle user -> social-graph -> user cut at its weakest edge social-graph -> user (50 calls)."),
        "{yaml}"
    );
    assert!(
        yaml.contains("`user` is also a service of the mesh (compose-post, social-graph call it)"),
        "{yaml}"
    );
    assert!(!yaml.contains("Warning"), "{yaml}");
}

/// A connector that marks no virtual node and names the outside
/// `outside` (tests/import/servicegraph-user-renamed.prom): with
/// `--virtual-client outside` its calls are the roots; without it, the
/// reading of `user` is ambiguous, which the header and standard error
/// say; a name no sample has is bad input.
#[test]
fn virtual_client_names_the_outside_and_an_ambiguous_user_is_warned_of() {
    let file = fixture("servicegraph-user-renamed.prom");
    let (t, yaml) = imported("servicegraph", &file, &["--virtual-client", "outside"]);
    assert_eq!(roots_of(&t), [("nginx", 100.0)], "{yaml}");
    assert!(t.service_id("outside").is_none(), "{yaml}");
    assert!(!yaml.contains("Warning"), "{yaml}");

    let run = chaoslab(&["import", "servicegraph", &file]);
    let (stdout, stderr) = text(&run);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: ambiguous: the servicegraph connector names callers outside the mesh `user` too"),
        "{stderr}"
    );
    assert!(stdout.contains("# Warning: ambiguous:"), "{stdout}");

    for (args, says) in [
        (
            vec!["--virtual-client", "ingress"],
            "--virtual-client ingress: no sample of",
        ),
        (
            vec!["--virtual-client", ""],
            "--virtual-client: give a name",
        ),
    ] {
        let mut all = vec!["import", "servicegraph", file.as_str()];
        all.extend(args);
        let run = chaoslab(&all);
        assert_eq!(run.status.code(), Some(2), "{all:?}");
        assert!(text(&run).1.contains(says), "{all:?}: {}", text(&run).1);
    }
    let run = chaoslab(&[
        "import",
        "zipkin",
        &fixture("zipkin.json"),
        "--virtual-client",
        "user",
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        text(&run).1.contains("only the servicegraph format"),
        "{}",
        text(&run).1
    );
}

/// tests/import/jaeger-trace-leaves.json, two checkouts: frontend calls
/// cart once per request, and in each the first attempt failed and the
/// same client span tried again after it; frontend calls the payment
/// provider and cart calls redis, neither of which sends spans. The
/// retries are the source's (one call per request, its retries in the
/// comment, frontend not `parallel`), and the uninstrumented callees are
/// leaves, marked so.
#[test]
fn retries_inside_a_client_span_and_uninstrumented_callees_are_read_as_such() {
    let (t, yaml) = imported("jaeger-trace", &fixture("jaeger-trace-leaves.json"), &[]);
    assert_eq!(per_request(&t, "frontend", "cart"), Some(1.0), "{yaml}");
    assert!(
        yaml.contains("# 2 calls over 2 requests; the source's own retries added 2 attempts, not counted as calls"),
        "{yaml}"
    );
    let frontend = t.service_id("frontend").unwrap();
    assert!(!t.services[frontend].parallel, "{yaml}");
    assert_eq!(
        per_request(&t, "frontend", "payment-provider"),
        Some(1.0),
        "{yaml}"
    );
    assert_eq!(per_request(&t, "cart", "redis"), Some(1.0), "{yaml}");
    for leaf in ["payment-provider", "redis"] {
        assert!(
            yaml.contains(&format!(
                "  {leaf}:   # uninstrumented: seen only as its callers' peer.service, a leaf here"
            )),
            "{leaf}: {yaml}"
        );
    }
    // One of the two charges failed: the provider's error ratio; cart
    // failed the first of each call's two attempts: its own.
    assert!(
        yaml.contains("# fault: { error_rate: 0.5 }   # 1 of 2 calls into it failed"),
        "{yaml}"
    );
    assert!(
        yaml.contains("# fault: { error_rate: 0.5 }   # 2 of 4 calls into it failed"),
        "{yaml}"
    );
}
