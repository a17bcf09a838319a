//! Uber's three amplification tables, measured from real traffic.
//!
//! Chain A→B→C→D→E→F→G, D fails every request after calling E, R=2,
//! B=0.1. `chaoslab compare` runs each policy on a fresh fleet for 8 s at
//! 200 root requests per second; every measured amplification must be
//! within 3% of the model, and the model must equal the seed's table.

use serde_json::Value;

use crate::common::{fleet_lock, succeed};

/// Requests that may be in flight at a window's edge.
pub const EDGE: f64 = 3.0;

const SEED: [(&str, [f64; 7]); 3] = [
    ("retry", [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0]),
    ("budget", [1.0, 1.1, 1.21, 1.331, 1.331, 1.331, 1.331]),
    ("ownership", [1.0, 1.0, 1.0, 1.1, 1.1, 1.1, 1.1]),
];

/// Runs `chaoslab run FILE --headless` with extra args; returns the report.
pub fn headless_report(file: &str, extra: &[&str]) -> Value {
    // A file of its own per call: runs side by side may share their flags.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "chaoslab-report-{}-{call}.json",
        std::process::id()
    ));
    let p = path.to_str().unwrap();
    let mut args = vec!["run", file, "--headless", "--report", p];
    args.extend_from_slice(extra);
    let (stdout, _) = succeed(&args);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("the report is JSON");
    let _ = std::fs::remove_file(&path);
    eprintln!("{stdout}");
    report
}

/// The node called `name`.
pub fn node<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// Every node below the roots of `report` at the model's amplification:
/// within its own interval (the report's 95% one, from the sampling
/// model, widened to 99.9%) or 4%, whichever is wider; a node whose
/// ratio the report withholds must have expected too few requests for
/// one. `what` says which run, on failure.
pub fn each_node_at_the_model(report: &Value, what: &str) {
    for n in report["nodes"].as_array().unwrap() {
        if num(n, "depth") == 0.0 {
            continue;
        }
        if n["amplification"].is_null() {
            assert!(
                num(n, "expected_requests") < 20.0,
                "{what}: {} withholds a ratio over enough requests: {n}",
                n["name"]
            );
            continue;
        }
        let (amp, want) = (num(n, "amplification"), num(n, "model_amplification"));
        let i = &n["amplification_interval"];
        let half = (num(i, "high") - num(i, "low")) / 2.0 * (3.29 / 1.96);
        let tol = half.max(0.04 * want);
        assert!(
            (amp - want).abs() <= tol,
            "{what}: {} at {amp:.3}×, the model says {want:.3}× (± {tol:.3})",
            n["name"]
        );
    }
}

/// A number field.
pub fn num(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {v}"))
}

/// One policy's run against the seed's row: the model equals the seed,
/// every measured amplification is within 3% of the model, enough
/// traffic flowed for the figures to mean something, and the live storm
/// radius (where the seed gives one) is the model's.
fn check_policy(r: &Value, policy: &str, seed: [f64; 7], radius: Option<u64>) {
    assert_eq!(r["policy"], policy);
    for (i, name) in ["A", "B", "C", "D", "E", "F", "G"].iter().enumerate() {
        let n = node(r, name);
        let measured = num(n, "amplification");
        let model = num(n, "model_amplification");
        assert!(
            (model - seed[i]).abs() < 1e-9,
            "{policy}: model for {name} is {model}, the seed says {}",
            seed[i]
        );
        assert!(
            (measured - model).abs() <= 0.03 * model,
            "{policy}: {name} measured {measured:.4}, model {model:.4}: off by more than 3%"
        );
    }
    // 8 s at 200 root requests a second.
    assert!(num(&r["root"], "requests") >= 1500.0, "{}", r["root"]);
    if let Some(radius) = radius {
        assert_eq!(r["storm_radius"]["max"].as_u64(), Some(radius), "{policy}");
        assert_eq!(
            r["storm_radius"]["model"].as_u64(),
            Some(radius),
            "{policy}"
        );
    }
}

/// SPEC section 2: C fails and claims; B retries C once and returns the
/// error unclaimed; A never retries.
#[test]
fn three_node_retries_once_and_unclaims() {
    let _fleet = fleet_lock();
    let r = headless_report(
        "topologies/three-node.yaml",
        &["--duration", "5s", "--warmup", "1s"],
    );
    let (a, b, c) = (node(&r, "A"), node(&r, "B"), node(&r, "C"));
    let b_requests = num(b, "requests");
    assert!(b_requests > 500.0);
    // C fails and claims every request.
    assert_eq!(num(c, "errors"), num(c, "requests"));
    assert_eq!(num(&c["claims_returned"], "true"), num(c, "errors"));
    // B retried C once per request: C saw two attempts per B request.
    // (Counters are read at one instant: requests in flight at the window's
    // edges may be counted at one service and not yet at another.)
    assert!((num(b, "retries_sent") - b_requests).abs() <= EDGE, "{b}");
    assert!((num(c, "requests") - 2.0 * b_requests).abs() <= 2.0 * EDGE);
    // B unclaims every error it passes up.
    assert_eq!(num(&b["claims_returned"], "false"), num(b, "errors"));
    assert_eq!(num(&b["claims_returned"], "true"), 0.0);
    // A never retries: each failed request is one suppressed retry.
    assert_eq!(num(a, "retries_sent"), 0.0);
    assert!((num(a, "retries_suppressed") - num(a, "errors")).abs() <= EDGE);
    assert!((num(a, "errors") - num(&r["root"], "errors")).abs() <= EDGE);
    assert_eq!(
        num(&r, "spurious_avoided"),
        num(a, "retries_suppressed"),
        "only A suppresses"
    );
}

/// `chaoslab compare` reproduces the three tables in one command, each
/// policy on a fresh fleet at its default settings (8 s after a 2 s
/// warm-up): retry amplifies two to the depth (radius 3), a budget 1.1 to
/// the depth, and ownership confines the retry to the hop above D
/// (radius 1). Each run is held to the seed's row by [`check_policy`],
/// and the printed table has a row per policy with the model under it.
#[test]
fn compare_reproduces_the_three_tables() {
    let _fleet = fleet_lock();
    let path = std::env::temp_dir().join(format!("chaoslab-{}-compare.json", std::process::id()));
    let page = path.with_extension("html");
    let (stdout, _) = succeed(&[
        "compare",
        "topologies/uber-chain.yaml",
        "--fail",
        "D",
        "--model",
        "--report",
        path.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    let runs = c["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let radius = [Some(3), None, Some(1)];
    for (((policy, seed), run), radius) in SEED.iter().zip(runs).zip(radius) {
        assert_eq!(run["policy"], *policy);
        check_policy(&run["report"], policy, *seed, radius);
    }
    // The printed table has a row per policy and the model under each.
    for policy in ["retry", "budget", "ownership"] {
        assert!(stdout.lines().any(|l| l.starts_with(policy)), "{stdout}");
    }
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("  model")).count(),
        3
    );
    // The page: the policies side by side (amplification per service and
    // policy, availability per policy), each policy named in it.
    let html = std::fs::read_to_string(&page).unwrap();
    let _ = std::fs::remove_file(&page);
    assert_eq!(html.matches("<svg").count(), 2, "{html}");
    for policy in ["retry", "budget", "ownership"] {
        assert!(html.contains(policy), "{policy} is on the page");
    }
}
