//! SPEC section 15 on real sockets: the defences that are not budgets.

use std::time::Duration;

use chaoslab::ownership::throttle::ThrottleConfig;
use chaoslab::topology::model::throttle::recovery_s;
use serde_json::Value;

use crate::common::fleet_lock;
use crate::tables::{headless_report, node, num};

/// One service's per-second series from a report: (time, amplification).
fn series(r: &Value, name: &str) -> Vec<(f64, f64)> {
    let s = &r["series"];
    let d = s["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap_or_else(|| panic!("no series for {name}"));
    s["t_s"]
        .as_array()
        .unwrap()
        .iter()
        .zip(d["amplification"].as_array().unwrap())
        .map(|(t, a)| (t.as_f64().unwrap(), a.as_f64().unwrap()))
        .collect()
}

/// When the timeline's event starting with `what` happened, seconds into
/// the run (the series' clock).
fn event(r: &Value, what: &str, nth: usize) -> f64 {
    r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"].as_str().unwrap().starts_with(what))
        .nth(nth)
        .map(|e| num(e, "t_s"))
        .unwrap_or_else(|| panic!("no event {what} #{nth}: {}", r["events"]))
}

/// The SRE preset on Uber's chain, D failing every request for 10 s with a
/// 2 s throttle window (`scenarios/sre-throttle.yaml`): within one window
/// (and the one-second sample that reports it) D's load is under 10% of
/// the entry rate, and stays there: D then sees about one request a window
/// from its one caller, as the book says of a dead backend. A's throttle
/// rejects most of its calls locally and A claims those errors. When D
/// heals the load climbs back in about the time the model gives,
/// (W/K)·ln(1 + rate·W) = 6 s.
#[test]
fn sre_throttling_starves_a_dead_service_and_lets_it_back() {
    let _fleet = fleet_lock();
    let r = headless_report(
        "topologies/uber-chain.yaml",
        &["--scenario", "scenarios/sre-throttle.yaml"],
    );
    let failed: Vec<&Value> = r["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["passed"] != true)
        .collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
    assert_eq!(r["policy"], "sre");

    let window = 2.0;
    let (fault, heal) = (event(&r, "D fails", 0), event(&r, "D healed", 1));
    let d = series(&r, "D");
    let period = num(&r["series"], "period_s");
    // Shut within a window of the fault, and shut until D heals.
    let shut: Vec<_> = d
        .iter()
        .filter(|(t, _)| *t >= fault + window + period && *t <= heal)
        .collect();
    assert!(shut.len() >= 5, "{shut:?}");
    for (t, a) in &shut {
        assert!(
            *a < 0.1,
            "D at {a} of the entry rate {:.1} s after the fault",
            t - fault
        );
    }
    // About one request a window reaches D while it is down: counted from
    // its per-second rates, at most two a window (and a couple at the
    // window's edges).
    let rate = 200.0;
    let seen: f64 = shut.iter().map(|(_, a)| a * rate * period).sum();
    let windows = shut.len() as f64 * period / window;
    assert!(
        seen <= 2.0 * windows + 2.0,
        "{seen} requests in {windows} windows"
    );

    // The phase D is down: A rejected most of its calls locally and owns
    // those errors; the model has D at (nearly) nothing.
    let down = &r["phases"][1];
    let a = node(down, "A");
    let requests = num(&down["root"], "requests");
    assert!(num(a, "throttled") >= 0.5 * requests, "{a}");
    assert!(num(&a["claims_returned"], "true") >= 0.5 * requests, "{a}");
    assert!(num(node(down, "D"), "model_amplification") < 0.01);

    // Back within twice the model's time after D heals, and not at once.
    let cfg = ThrottleConfig {
        k: 2.0,
        window: Duration::from_secs(2),
    };
    let model = recovery_s(&cfg, rate);
    let back = d
        .iter()
        .find(|(t, a)| *t > heal && *a >= 0.95)
        .map(|(t, _)| t - heal)
        .unwrap_or_else(|| panic!("D never came back: {d:?}"));
    assert!(
        back <= 2.0 * model + period && back >= 0.3 * model,
        "D back {back:.1} s after healing; the model says {model:.1} s"
    );
    eprintln!("sre: D back {back:.1} s after healing, model {model:.1} s");
}
