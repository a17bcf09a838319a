//! A metastable failure, live (SPEC section 7): a three-second spike
//! leaves the fleet down under naive retries long after it ends, while no
//! retries, a budget and ownership recover about when the model's fluid
//! queue says; and the model's recovery threshold holds on either side.

use serde_json::Value;

use crate::common::{chaoslab, fleet_lock, side_by_side, text};
use crate::overload::topology_file;
use crate::tables::{headless_report, node, num};

/// `chaoslab compare TOPOLOGY --scenario scenarios/metastable.yaml
/// --policies POLICY`, which must succeed: its one run, from the JSON
/// report, and what it printed.
pub fn compare_run(topology: &str, policy: &str) -> (Value, String) {
    compare_with(&[
        topology,
        "--scenario",
        "scenarios/metastable.yaml",
        "--policies",
        policy,
    ])
}

/// `chaoslab compare ARGS` (one policy), which must succeed: its one run,
/// from the JSON report, and what it printed.
pub fn compare_with(args: &[&str]) -> (Value, String) {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!("chaoslab-meta-{}-{call}.json", std::process::id()));
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    all.extend(["--report", path.to_str().unwrap()]);
    let out = chaoslab(&all);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stdout}\n{stderr}");
    eprintln!("{stdout}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    (c["runs"][0].clone(), stdout)
}

/// The shipped scenario under the topology's naive retries: every
/// expectation holds (availability under 10% for the 30 s after the
/// trigger, DB flat out on abandoned work).
#[test]
fn naive_retries_stay_down_thirty_seconds_after_the_trigger() {
    let _fleet = fleet_lock();
    let r = headless_report(
        "topologies/metastable.yaml",
        &["--scenario", "scenarios/metastable.yaml"],
    );
    let failed: Vec<&Value> = r["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["passed"] != true)
        .collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
    assert!(num(node(&r, "DB"), "work_wasted") > 1000.0);
}

/// Each other policy on a fresh fleet, same seed, same trigger. The
/// model's fluid queue (`model::capacity::recovery_after`) predicts 10 s
/// with no retries and 17 s with a 10% budget (ownership is the same: a
/// timeout has no claim to own); measured within 6 s of it. Deadlines
/// recover no slower than the budget alone.
#[test]
fn no_retries_budget_and_ownership_recover_as_the_model_says() {
    let _fleet = fleet_lock();
    // Each policy on its own fleet, the four side by side: two services
    // at 120 to 300 root requests a second each (0.4 of a core
    // together, measured), one `compare` a policy.
    let policies = ["none", "budget", "ownership", "budget+deadline"];
    let runs = side_by_side(policies.to_vec(), |policy| {
        let (run, stdout) = compare_run("topologies/metastable.yaml", policy);
        assert!(stdout.contains("recovered"), "{stdout}");
        run
    });
    let run = |policy: &str| -> Value {
        runs.iter()
            .find(|r| r["policy"] == policy)
            .unwrap_or_else(|| panic!("no run {policy}"))["recovery"]
            .clone()
    };
    let mut after = std::collections::HashMap::new();
    for policy in ["none", "budget", "ownership", "budget+deadline"] {
        let r = &run(policy);
        let measured = r["recovered_after_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("{policy} never recovered: {r}"));
        if policy != "budget+deadline" {
            let model = r["model_after_s"]
                .as_f64()
                .expect("the model predicts a recovery");
            assert!(
                (measured - model).abs() <= 6.0,
                "{policy}: recovered after {measured} s, the model says {model} s"
            );
        }
        after.insert(policy, measured);
    }
    assert!(
        after["none"] < after["budget"],
        "no retries recover first: {after:?}"
    );
    assert!(
        after["budget+deadline"] <= after["budget"] + 1.0,
        "deadlines recover no slower than the budget: {after:?}"
    );
}

/// The model's recovery threshold under naive retries (R = 3 at A, DB at
/// 160 rps: 53.3 rps), checked live with a short queue: after the same
/// spike, 15% below it the fleet recovers, 15% above it does not.
#[test]
fn the_recovery_threshold_divides_recovery_from_collapse() {
    let _fleet = fleet_lock();
    let topo = topology_file(
        "threshold",
        "name: threshold\npolicy: { preset: retry, attempts: 3, timeout: 250ms }\n\
         load: { rps: 40 }\nservices:\n  A: { calls: [DB] }\n  DB: { workers: 4, work: 25ms, queue: 100 }\n",
    );
    let out = chaoslab(&["check", &topo]);
    let (check, _) = text(&out);
    assert!(check.contains("retry      53.3 rps"), "{check}");
    let threshold = 160.0 / 3.0;
    let availability_after = |rate: f64| {
        let scenario = topology_file(
            &format!("threshold-{rate:.0}"),
            &format!(
                "duration: 22s\nwarmup: 2s\nsteps:\n  - at: 0s\n    rps: {rate}\n  - at: 2s\n    rps: 300\n  - at: 5s\n    rps: {rate}\n"
            ),
        );
        let r = headless_report(&topo, &["--scenario", &scenario]);
        // The last eight seconds of the run (a second in which no root
        // request ended has no availability: it would be a second in
        // which the fleet answered nobody, which counts as 0).
        let s = &r["series"];
        let avail: Vec<f64> = s["availability"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap_or(0.0))
            .collect();
        let tail = &avail[avail.len().saturating_sub(8)..];
        tail.iter().sum::<f64>() / tail.len() as f64
    };
    // Side by side: two two-service fleets at 45 to 300 root requests a
    // second (0.2 of a core together, measured).
    let [below, above]: [f64; 2] =
        side_by_side(vec![0.85 * threshold, 1.15 * threshold], availability_after)
            .try_into()
            .unwrap();
    assert!(below >= 0.95, "15% below the threshold: {below}");
    assert!(above <= 0.10, "15% above the threshold: {above}");
}
