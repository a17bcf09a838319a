//! Storms that hurt (SPEC section 7), measured over real sockets: requests
//! whose callers gave up are counted where they arrived.

use serde_json::Value;

use crate::common::fleet_lock;
use crate::tables::{headless_report, node, num};

/// Writes a topology to a file of its own and returns its path.
pub fn topology_file(name: &str, yaml: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chaoslab-overload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    path.to_str().unwrap().to_string()
}

fn edge<'a>(r: &'a Value, from: &str, to: &str) -> &'a Value {
    r["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["from"] == from && e["to"] == to)
        .unwrap_or_else(|| panic!("no edge {from}->{to}"))
}

/// C answers after 1.5 s; B gives up on C after 100 ms and A on B after
/// 150 ms: every attempt on A→B and on B→C is abandoned. Each service still counts every
/// request it received, the moment its caller left, and each caller counts
/// an attempt dropped in flight when it is dropped, so B's and C's request
/// counts equal the attempts their callers sent (within 1%) and `timeouts`
/// counts them all.
#[test]
fn requests_whose_callers_gave_up_are_counted() {
    let _fleet = fleet_lock();
    let file = topology_file(
        "slow-c",
        "name: slow-c\n\
         policy: { preset: retry, attempts: 2, timeout: 100ms }\n\
         load: { rps: 50 }\n\
         services:\n  A: { calls: [{ to: B, policy: { timeout: 150ms } }] }\n  B: { calls: [C] }\n  C:\n    fault: { latency: 1500ms }\n",
    );
    let r = headless_report(&file, &["--duration", "6s", "--warmup", "1s"]);
    for (caller, callee) in [("A", "B"), ("B", "C")] {
        let sent = num(edge(&r, caller, callee), "attempts");
        let got = num(node(&r, callee), "requests");
        assert!(sent > 200.0, "{caller}→{callee}: only {sent} attempts");
        assert!(
            (got - sent).abs() <= 0.01 * sent + 2.0,
            "{callee} counted {got} requests, {caller} sent {sent} attempts"
        );
        let timeouts = num(node(&r, callee), "timeouts");
        assert!(
            (timeouts - got).abs() <= 0.01 * got + 2.0,
            "{callee}: {timeouts} timeouts of {got} requests"
        );
        // None of them is an error answered: nobody was there to answer.
        assert_eq!(num(node(&r, callee), "errors"), 0.0);
    }
    // The end users wait for A's own answer: A's two attempts end in a 500
    // well inside their patience.
    assert_eq!(num(node(&r, "A"), "timeouts"), 0.0);
    // B's first attempt on C ends at 100 ms, its retry is 50 ms on its way
    // when A gives up at 150 ms: C sees each root request four times, B
    // twice, every one abandoned.
    for (name, want) in [("B", 2.0), ("C", 4.0)] {
        let amp = num(node(&r, name), "amplification");
        assert!((amp - want).abs() <= 0.04 * want, "{name} at {amp}×");
    }
}
