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

/// DB has 4 workers and 25 ms of work: 160 requests per second at most.
/// Offered twice that, it serves 160 within 3%, sheds the rest with a
/// claimed 503, and its workers are busy all the time. At a quarter of its
/// capacity an answer takes its work time.
#[test]
fn finite_workers_serve_their_capacity_and_shed_the_rest() {
    let _fleet = fleet_lock();
    let yaml = |rps: u32| {
        format!(
            "name: db\npolicy: {{ preset: none }}\nload: {{ rps: {rps} }}\n\
             services:\n  A: {{ calls: [DB] }}\n  DB: {{ workers: 4, work: 25ms, queue: 8 }}\n"
        )
    };
    let r = headless_report(
        &topology_file("db-over", &yaml(320)),
        &["--duration", "6s", "--warmup", "2s"],
    );
    let db = node(&r, "DB");
    let dt = r["duration_s"].as_f64().unwrap();
    let served = (num(db, "requests") - num(db, "shed")) / dt;
    assert!(
        (served - 160.0).abs() <= 0.03 * 160.0,
        "DB served {served:.1} rps"
    );
    assert!(
        num(db, "shed") > 0.3 * num(db, "requests"),
        "DB sheds the rest"
    );
    assert!(
        num(db, "utilisation") >= 0.97,
        "utilisation {}",
        num(db, "utilisation")
    );
    assert_eq!(num(db, "capacity_rps"), 160.0);
    assert_eq!(db["queue_depth"]["max"].as_u64(), Some(8));
    // A shed is DB's own error, claimed.
    assert!(num(&db["claims_returned"], "true") >= num(db, "shed"));

    let r = headless_report(
        &topology_file("db-calm", &yaml(40)),
        &["--duration", "4s", "--warmup", "1s"],
    );
    let db = node(&r, "DB");
    let p50 = num(&db["latency_ms"], "p50");
    assert!(
        (p50 - 25.0).abs() <= 2.0,
        "p50 {p50} ms against 25 ms of work"
    );
    assert_eq!(num(db, "shed"), 0.0);
    let u = num(db, "utilisation");
    assert!(
        (u - 0.25).abs() <= 0.03,
        "utilisation {u} at a quarter of capacity"
    );
}

/// W's work takes 400 ms, its caller waits 100 ms: every caller is gone
/// before its answer. Without `cancel` every job still holds a worker for
/// its full 400 ms and its answer is thrown away (`work_wasted`), so the
/// two workers serve 5 jobs a second, the queue fills and the rest is
/// shed. With `cancel: true` a job whose caller has gone is skipped when it
/// reaches a worker, and nothing is shed.
#[test]
fn work_nobody_waits_for_still_holds_a_worker_unless_cancelled() {
    let _fleet = fleet_lock();
    let yaml = |cancel: bool| {
        format!(
            "name: w\npolicy: {{ preset: none, timeout: 100ms }}\nload: {{ rps: 10 }}\n\
             services:\n  A: {{ calls: [W] }}\n  W: {{ workers: 2, work: 400ms, queue: 10, cancel: {cancel} }}\n"
        )
    };
    let r = headless_report(
        &topology_file("w-kept", &yaml(false)),
        &["--duration", "8s", "--warmup", "2s"],
    );
    let w = node(&r, "W");
    let dt = r["duration_s"].as_f64().unwrap();
    let wasted = num(w, "work_wasted") / dt;
    assert!(
        (wasted - 5.0).abs() <= 0.5,
        "{wasted:.2} wasted jobs a second, 5 expected"
    );
    assert!(
        num(w, "utilisation") >= 0.95,
        "utilisation {}",
        num(w, "utilisation")
    );
    assert!(num(w, "shed") > 0.0, "the queue filled");
    assert_eq!(num(w, "skipped"), 0.0);
    // Every request W received was shed at once or abandoned by its caller.
    let (timeouts, shed) = (num(w, "timeouts"), num(w, "shed"));
    assert!((timeouts + shed - num(w, "requests")).abs() <= 2.0);

    let r = headless_report(
        &topology_file("w-cancel", &yaml(true)),
        &["--duration", "8s", "--warmup", "2s"],
    );
    let w = node(&r, "W");
    assert!(
        num(w, "skipped") > 0.3 * num(w, "requests"),
        "abandoned jobs skipped"
    );
    assert_eq!(num(w, "shed"), 0.0, "skipping keeps the queue short");
}
