//! A mesh of many roots and replicas at scale (SPEC section 11): how long
//! a fleet of 1,000 services × 3 replicas (3,000 real listeners) takes to
//! start, and whether it then serves 200 root requests a second without
//! saturating the machine.
//!
//! Shape: `generate::mesh(99, 10, 10, 3, 200)`: 99 user-facing roots, each
//! a chain of 10 services whose last calls one of 10 shared backends, so a
//! root request makes 10 calls (2,000 calls a second at 200 rps). Timed:
//! `Session::start` (parse excluded: binding every listener, building every
//! client, the first sample), then the run's report over 10 s after a 2 s
//! warm-up: the root rate sent against offered, availability, the
//! saturation verdict, and the amplification of every service (all 1.00×
//! with no fault).
//!
//! `cargo bench --bench mesh_scale`; under `cargo test` a mesh of 100
//! services × 3 replicas for 2 s, whose start must take under 10 s too.

use std::time::Duration;

use chaoslab::report::Report;
use chaoslab::session::{Session, Setup};
use chaoslab::topology::{generate, Topology};
use tokio::time::Instant;

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (roots, depth, shared, measured) = if bench {
        (99, 10, 10, Duration::from_secs(10))
    } else {
        (9, 10, 10, Duration::from_secs(2))
    };
    let warmup = Duration::from_secs(2);
    let yaml = generate::mesh(roots, depth, shared, 3, 200.0);
    let t = Topology::from_yaml(&yaml, "mesh").expect("the generated mesh validates");
    let services = t.services.len();
    println!(
        "mesh_scale: {services} services × 3 replicas ({} listeners), {roots} roots at 200 rps in all",
        services * 3
    );
    let mut setup = Setup::new(t);
    setup.warmup = warmup;
    setup.until = Some(warmup + measured);
    let t0 = Instant::now();
    let session = Session::start(setup).expect("the fleet starts");
    let started = t0.elapsed();
    println!("  start: {:.2} s", started.as_secs_f64());
    let record = session.wait().expect("the run ends");
    let report = Report::of_run(&record, &[]);
    let v = serde_json::to_value(&report).expect("the report serialises");
    let root = &v["root"];
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let amps: Vec<f64> = v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| num(&n["amplification"]))
        .collect();
    let (lo, hi) = amps
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &a| (l.min(a), h.max(a)));
    println!(
        "  served: offered {:.1} rps, sent {:.1} rps, availability {:.4}, saturated {}{}",
        num(&root["offered_rps"]),
        num(&root["rps"]),
        num(&root["availability"]),
        report.saturated,
        if report.saturated {
            format!(" ({})", report.saturation.join("; "))
        } else {
            String::new()
        }
    );
    println!("  amplification over every service: {lo:.3}x to {hi:.3}x");
    assert!(
        started < Duration::from_secs(10),
        "the fleet took {started:?} to start"
    );
    assert!(!report.saturated, "saturated: {:?}", report.saturation);
    assert_eq!(num(&root["availability"]), 1.0, "{root}");
    assert_eq!(report.roots.len(), roots);
}
