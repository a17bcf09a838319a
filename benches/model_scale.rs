//! How fast the analytical model answers for big topologies, shallow and
//! deep.
//!
//! Shapes: random DAGs (`generate::dag`: shallow, each service called once
//! and every third calling a later one twice) of 1,000, 10,000 and 100,000
//! services; layered DAGs (`generate::layered`: layers × width, each
//! service calling two in the next layer, every service reached by many
//! paths) of 100 × 100, 100 × 200 and 100 × 1,000; a 20,000-service chain.
//! Each is timed, in one run, parsing and validating the YAML (what every
//! command pays), `model::predict`, `model::static_radius` (under the
//! topology's policy), and all of `chaoslab check`'s text
//! (`render_check`: the static radius under the policy and under plain
//! retries, and the simulation where it runs). `model + check` is what
//! `chaoslab model` and `chaoslab check` compute past the parse. Medians
//! of 5 runs, milliseconds. Also `chaoslab generate --like meta` of 5,000
//! services (its time, then the same columns for the mesh it draws).
//!
//! `cargo bench --bench model_scale`; under `cargo test` one quick round of
//! the small shapes.

use chaoslab::topology::{check, generate, model, Topology};

#[path = "common/timing.rs"]
mod timing;
use timing::time;

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let runs = if bench { 5 } else { 1 };
    let own = "{ preset: ownership }";
    let mut shapes: Vec<(String, String)> = vec![
        ("random DAG 1,000".into(), generate::dag(1_000, 42)),
        ("layered 10 x 100".into(), generate::layered(10, 100, own)),
        ("chain 2,000".into(), generate::chain(2_000, own)),
    ];
    if bench {
        shapes = vec![
            ("random DAG 1,000".into(), generate::dag(1_000, 42)),
            ("random DAG 10,000".into(), generate::dag(10_000, 42)),
            ("random DAG 100,000".into(), generate::dag(100_000, 42)),
            ("layered 100 x 100".into(), generate::layered(100, 100, own)),
            ("layered 100 x 200".into(), generate::layered(100, 200, own)),
            (
                "layered 100 x 1,000".into(),
                generate::layered(100, 1_000, own),
            ),
            ("chain 20,000".into(), generate::chain(20_000, own)),
        ];
    }
    // A mesh shaped like production's (SPEC section 12): 650 roots, each
    // root's static radius its own search. `generate` and `check` on it
    // are each to take under 2 s.
    let like = |services: u32| chaoslab::generate::Options {
        services,
        like: chaoslab::generate::Like::Meta,
        seed: 1,
        rps: 100.0,
        output: None,
    };
    let size = if bench { 5_000 } else { 500 };
    let drawn = time(runs, || chaoslab::generate::generate(&like(size)).unwrap());
    println!("generate --services {size} --like meta: {drawn:.1} ms");
    shapes.push((
        format!("meta-like {size}"),
        chaoslab::generate::generate(&like(size)).unwrap(),
    ));
    println!("model scale: medians of {runs} run(s), milliseconds");
    println!(
        "{:<22} {:>8} {:>8} {:>14} {:>8} {:>8} {:>8} {:>14}",
        "shape",
        "services",
        "calls",
        "parse+validate",
        "predict",
        "radius",
        "check",
        "model + check"
    );
    for (name, yaml) in &shapes {
        let t = Topology::from_yaml(yaml, "generated").expect("generated topology validates");
        let parse = time(runs, || Topology::from_yaml(yaml, "g"));
        let predict = time(runs, || model::predict(&t, &t.policy));
        let radius = time(runs, || model::static_radius(&t, &t.policy));
        let render = time(runs, || check::render_check(&t));
        println!(
            "{name:<22} {:>8} {:>8} {parse:>14.1} {predict:>8.1} {radius:>8.1} {render:>8.1} {:>14.1}",
            t.services.len(),
            t.edges.len(),
            predict + radius + render
        );
    }
}
