//! How fast the analytical model answers for big topologies.
//!
//! Generates DAGs of 1,000 and 10,000 services and times, in one run,
//! parsing and validating the YAML (the baseline any command pays) against
//! `model::predict` and `model::static_radius`. Prints medians of 5 runs
//! and each figure as a ratio of the baseline.
//!
//! `cargo bench --bench model_scale`; under `cargo test` one quick round.

use chaoslab::topology::{generate, model, Topology};
use tokio::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time<T>(f: impl Fn() -> T) -> f64 {
    let t0 = Instant::now();
    std::hint::black_box(f());
    t0.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let runs = if bench { 5 } else { 1 };
    let sizes: &[usize] = if bench { &[1_000, 10_000] } else { &[1_000] };
    println!("model scale: medians of {runs} run(s), milliseconds");
    for &n in sizes {
        let yaml = generate::dag(n, 42);
        let t = Topology::from_yaml(&yaml, "generated").expect("generated DAG validates");
        let parse = median(
            (0..runs)
                .map(|_| time(|| Topology::from_yaml(&yaml, "g")))
                .collect(),
        );
        let predict = median(
            (0..runs)
                .map(|_| time(|| model::predict(&t, &t.policy)))
                .collect(),
        );
        let radius = median(
            (0..runs)
                .map(|_| time(|| model::static_radius(&t, &t.policy)))
                .collect(),
        );
        println!(
            "{n:>6} services: parse+validate {parse:>8.1}   predict {predict:>8.1} ({:.2}x)   static radius {radius:>8.1} ({:.2}x)",
            predict / parse,
            radius / parse
        );
    }
}
