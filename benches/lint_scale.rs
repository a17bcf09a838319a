//! How long `chaoslab lint` and `chaoslab import istio --onto` take on
//! meshes the size of real ones (SPEC section 18).
//!
//! - lint: a 5,000-service mesh drawn like Meta's (`generate --like
//!   meta`), under Istio's default on every call: the storm map of every
//!   service in one pass, beside one `model::predict` of the same mesh
//!   (the baseline, measured in the same run: the pass costs a handful of
//!   model runs, not one per service). It must stay under 2 s.
//! - import: an Istio configuration covering 1,000 services (a
//!   VirtualService with two routes and retries, and a DestinationRule
//!   with outlier detection, for each), read and written onto a 1,000-
//!   service graph, the output validated; beside reading the graph alone.
//!   It must stay under 1 s.
//!
//! `cargo bench --bench lint_scale`; under `cargo test`, one round at a
//! tenth of the size, checked for its counts.

use std::fmt::Write as _;

use chaoslab::import::config::{self, ConfigFormat, File};
use chaoslab::lint;
use chaoslab::topology::{generate, model, Topology};

#[path = "common/timing.rs"]
mod timing;
use timing::time;

/// An Istio configuration for services `S0`..`S{n-1}` (as
/// `generate::dag` names them).
fn istio(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let _ = write!(
            s,
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: S{i}\nspec:\n  hosts: [S{i}.default.svc.cluster.local]\n  http:\n  - match:\n    - headers: {{ end-user: {{ exact: jason }} }}\n    route: [{{ destination: {{ host: S{i}, subset: v2 }} }}]\n  - route: [{{ destination: {{ host: S{i} }} }}]\n    retries: {{ attempts: {}, perTryTimeout: 250ms, retryOn: \"5xx,connect-failure\" }}\n---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: S{i}\nspec:\n  host: S{i}\n  trafficPolicy:\n    outlierDetection: {{ consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s }}\n---\n",
            1 + i % 3
        );
    }
    s
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let runs = if bench { 5 } else { 1 };
    let (mesh, covered) = if bench { (5_000, 1_000) } else { (500, 100) };

    // lint on a mesh drawn like Meta's, Istio's default on every call.
    let drawn = chaoslab::generate::generate(&chaoslab::generate::Options {
        services: mesh,
        like: chaoslab::generate::Like::Meta,
        seed: 1,
        rps: 100.0,
        output: None,
    })
    .expect("a generated mesh");
    let mut t = Topology::from_yaml(&drawn, "mesh.yaml").expect("the mesh validates");
    t.policy.apply_preset(chaoslab::topology::Preset::Istio);
    let text = drawn;
    let o = lint::Options {
        topology: "mesh.yaml".into(),
        max_amplification: None,
        max_radius: None,
        rate: 1.0,
        format: lint::Format::Text,
        output: None,
    };
    let map = lint::lint(&t, &text, "mesh.yaml", &o);
    assert_eq!(map.rows.len(), t.services.len(), "a row per service");
    assert!(
        map.rows[0].amplification > 1.0,
        "Istio's default multiplies"
    );
    let linted = time(runs, || lint::lint(&t, &text, "mesh.yaml", &o));
    let predicted = time(runs, || model::predict(&t, &t.policy));
    println!("lint scale: medians of {runs} run(s), milliseconds");
    println!(
        "lint: {} services, {} calls: {linted:.1} ms; one model::predict {predicted:.1} ms; ratio {:.1}",
        t.services.len(),
        t.edges.len(),
        linted / predicted
    );
    if bench {
        assert!(linted < 2000.0, "lint took {linted:.0} ms, over 2 s");
    }

    // import istio --onto a graph of `covered` services.
    let graph = generate::dag(covered, 42);
    let files = vec![File {
        name: "istio.yaml".into(),
        text: istio(covered),
    }];
    let read = config::read(ConfigFormat::Istio, &files).expect("the configuration reads");
    assert_eq!(
        read.rules.len(),
        2 * covered,
        "a route and a pool per service"
    );
    let written = config::onto(ConfigFormat::Istio, &read, &graph, "graph.yaml").expect("writes");
    let governed = written.yaml.matches("source: istio.yaml:").count();
    assert!(governed > 0, "calls are governed");
    let imported = time(runs, || {
        let read = config::read(ConfigFormat::Istio, &files).expect("reads");
        config::onto(ConfigFormat::Istio, &read, &graph, "graph.yaml").expect("writes")
    });
    let graph_alone = time(runs, || {
        Topology::from_yaml(&graph, "graph.yaml").expect("validates")
    });
    println!(
        "import istio: {covered} services, {governed} calls governed: {imported:.1} ms; reading the graph alone {graph_alone:.1} ms; ratio {:.1}",
        imported / graph_alone
    );
    if bench {
        assert!(imported < 1000.0, "import took {imported:.0} ms, over 1 s");
    }
}
