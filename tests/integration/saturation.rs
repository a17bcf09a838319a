//! When the machine cannot carry the load, the lab says so: the report is
//! marked saturated with its reasons, and an expectation on a measured
//! figure fails with that reason rather than pass or fail on a wrong
//! number. At a rate the machine carries, nothing is marked.

use serde_json::Value;

use crate::common::{chaoslab, fleet_lock, text};

fn run(rps: &str, name: &str) -> (Option<i32>, Value, String) {
    let dir = std::env::temp_dir();
    let scenario = dir.join(format!("chaoslab-sat-{}-{name}.yaml", std::process::id()));
    let report = dir.join(format!("chaoslab-sat-{}-{name}.json", std::process::id()));
    std::fs::write(
        &scenario,
        "duration: 6s\nwarmup: 1s\nexpect:\n  - during: 2s..6s\n    service: D\n    amplification: { approx: 8, tolerance: 0.1 }\n",
    )
    .unwrap();
    let o = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--policy",
        "retry",
        "--rps",
        rps,
        "--scenario",
        scenario.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let (out, _) = text(&o);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&scenario);
    let _ = std::fs::remove_file(&report);
    (o.status.code(), r, out)
}

#[test]
fn past_the_machines_limit_the_figures_are_marked_lower_bounds() {
    let _fleet = fleet_lock();
    // Naive retries at 4,000 rps ask D..G for 32,000 requests a second
    // each: far past two cores.
    let (code, r, out) = run("4000", "over");
    assert_eq!(code, Some(1), "the expectation fails\n{out}");
    assert_eq!(r["saturated"], true, "{}", r["saturation"]);
    let reasons = r["saturation"].as_array().unwrap();
    assert!(
        reasons
            .iter()
            .any(|s| s.as_str().unwrap().contains("were not sent")),
        "{reasons:?}"
    );
    let e = &r["expectations"][0];
    assert_eq!(e["passed"], false);
    assert!(
        e["note"]
            .as_str()
            .unwrap()
            .contains("the lab was saturated in this window"),
        "{e}"
    );
    assert!(
        out.contains("SATURATED: the measured figures are lower bounds"),
        "{out}"
    );
    // The header's rate is consistent with its count.
    let sent = r["root"]["sent"].as_f64().unwrap();
    let rps = r["root"]["rps"].as_f64().unwrap();
    let dt = r["duration_s"].as_f64().unwrap();
    assert!(
        (sent / dt - rps).abs() < 0.01 * rps,
        "{sent} in {dt} s vs {rps} rps"
    );
}

#[test]
fn at_a_rate_the_machine_carries_nothing_is_marked() {
    let _fleet = fleet_lock();
    let (code, r, out) = run("200", "calm");
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(r["saturated"], false, "{}", r["saturation"]);
    assert_eq!(r["expectations"][0]["passed"], true);
    assert!(!out.contains("SATURATED"), "{out}");
}
