//! The retriers people run (SPEC section 17), through the lab's own
//! client: whether a hop retries depends on the status its callee
//! answered, and statuses travel up the chain as each service's `errors:`
//! says. Measured on real sockets from the headless report, beside the
//! model.

use serde_json::Value;

use crate::common::{fleet_lock, side_by_side};
use crate::overload::topology_file;
use crate::tables::{headless_report, node, num};

/// A four-service chain whose leaf D fails every request, each service
/// answering as `errors` says, under `policy`.
fn chain(name: &str, policy: &str, errors: &str, fault: &str) -> String {
    topology_file(
        name,
        &format!(
            "name: {name}
policy: {policy}
load: {{ rps: 30 }}
services:
  A: {{ calls: [B], errors: {errors} }}
  B: {{ calls: [C], errors: {errors} }}
  C: {{ calls: [D], errors: {errors} }}
  D: {{ fault: {fault}, errors: {errors} }}
"
        ),
    )
}

fn run(file: String) -> Value {
    headless_report(&file, &["--duration", "6s", "--warmup", "2s"])
}

/// Each node's measured amplification within `tol` (a fraction) of
/// `want`, and the model's within 1e-6.
fn amplified(r: &Value, label: &str, want: [f64; 4], tol: f64) {
    for (name, want) in ["A", "B", "C", "D"].into_iter().zip(want) {
        let n = node(r, name);
        let (measured, model) = (num(n, "amplification"), num(n, "model_amplification"));
        assert!(
            (model - want).abs() < 1e-6,
            "{label}: {name}'s model reads {model}, want {want}"
        );
        assert!(
            (measured - want).abs() <= tol * want,
            "{label}: {name} measured {measured:.3}×, want {want}× within {:.0}%",
            tol * 100.0
        );
    }
}

/// Istio's implicit retries (3 attempts on a 503 or a refused
/// connection): a 503 that every hop passes up as itself is retried at
/// every hop, 27× at the leaf of four; passed up as 500 it is retried only
/// right above the leaf.
#[test]
fn istio_multiplies_a_503_passed_as_itself_and_stops_where_it_becomes_a_500() {
    let _fleet = fleet_lock();
    let fault = "{ error_rate: 1.0, status: 503 }";
    let files = vec![
        chain("istio-same", "{ preset: istio }", "{ passed: same }", fault),
        chain("istio-500", "{ preset: istio }", "{ passed: 500 }", fault),
    ];
    let r = side_by_side(files, run);
    assert_eq!(r[0]["policy"], "istio");
    amplified(&r[0], "passed: same", [1.0, 3.0, 9.0, 27.0], 0.05);
    amplified(&r[1], "passed: 500", [1.0, 1.0, 1.0, 3.0], 0.05);
    // The statuses on the wire: the leaf's 503s, passed up as 503 or as
    // 500.
    for (report, above) in [(&r[0], "errors_503"), (&r[1], "errors_500")] {
        let d = node(report, "D");
        assert_eq!(num(d, "error_status"), 503.0, "{d}");
        let c = node(report, "C");
        assert!(
            num(&c["errors_by_status"], &above[7..]) > 0.0
                && num(&c["errors_by_status"], &above[7..]) == num(c, "errors"),
            "C's errors all carry {above}: {c}"
        );
    }
}

/// Ownership without code: the service that causes an error answers 503,
/// whoever passes one up answers 502, and a retrier of 503 alone retries
/// only at the hop above the owner. Envoy's `retriable-headers` on the
/// claim header does the same with the lab's middleware.
#[test]
fn ownership_without_code_retries_only_above_the_owner() {
    let _fleet = fleet_lock();
    let files = vec![
        chain(
            "by-status",
            "{ preset: retry, attempts: 2, retry_on: [503] }",
            "{ own: 503, passed: 502 }",
            "{ error_rate: 1.0 }",
        ),
        chain(
            "by-claim",
            "{ preset: retry, attempts: 2, retry_on: [{ retriable-headers: [{ name: x-error-claim, exact: \"true\" }] }] }",
            "{}",
            "{ error_rate: 1.0 }",
        ),
        chain(
            "every-5xx",
            "{ preset: retry, attempts: 2, retry_on: [5xx] }",
            "{ own: 503, passed: 502 }",
            "{ error_rate: 1.0 }",
        ),
    ];
    let r = side_by_side(files, run);
    amplified(&r[0], "retry_on 503", [1.0, 1.0, 1.0, 2.0], 0.03);
    amplified(&r[1], "retriable-headers", [1.0, 1.0, 1.0, 2.0], 0.03);
    amplified(&r[2], "retry_on 5xx", [1.0, 2.0, 4.0, 8.0], 0.03);
    // What is not retried is counted as suppressed, with its reason.
    let c = node(&r[0], "C");
    assert_eq!(num(c, "error_status"), 502.0, "{c}");
    assert_eq!(num(node(&r[0], "D"), "error_status"), 503.0);
    let b = node(&r[0], "B");
    assert!(num(b, "retries_suppressed") > 0.0, "{b}");
    assert_eq!(num(b, "retries_sent"), 0.0, "{b}");
}
