//! Storms that hurt (SPEC section 7), measured over real sockets: requests
//! whose callers gave up are counted where they arrived.

use serde_json::Value;

use crate::common::{edge, fleet_lock, side_by_side};
use crate::tables::{headless_report, node, num};

/// Writes a topology to a file of its own and returns its path.
pub fn topology_file(name: &str, yaml: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chaoslab-overload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    path.to_str().unwrap().to_string()
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
        // Next to none is an error answered: nobody was there to answer.
        // (B's two attempts end at 200 ms, 50 ms after A gives up; a
        // loaded machine that delays A's timer past that lets a few of
        // B's answers come first: 4 of 600 in one run.)
        let errors = num(node(&r, callee), "errors");
        assert!(
            errors <= 0.01 * got + 2.0,
            "{callee} answered {errors} errors of {got} requests"
        );
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
    // Side by side: DB offered twice its capacity, and a quarter of it
    // (0.1 of a core together, measured).
    let [over, calm]: [Value; 2] = side_by_side(
        vec![("db-over", 320, "6s", "2s"), ("db-calm", 40, "4s", "1s")],
        |(name, rps, d, w)| {
            headless_report(
                &topology_file(name, &yaml(rps)),
                &["--duration", d, "--warmup", w],
            )
        },
    )
    .try_into()
    .unwrap();
    let r = over;
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

    let r = calm;
    let db = node(&r, "DB");
    // The latency histogram reports a bucket's middle, four buckets to a
    // power of two: one bucket's width (a quarter) on either side.
    let p50 = num(&db["latency_ms"], "p50");
    assert!(
        (p50 - 25.0).abs() <= 0.25 * 25.0,
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
    // Side by side: the two settings of `cancel`, 10 root requests a
    // second each (a hundredth of a core, measured).
    let [kept, cancelled]: [Value; 2] = side_by_side(
        vec![("w-kept", false), ("w-cancel", true)],
        |(name, cancel)| {
            headless_report(
                &topology_file(name, &yaml(cancel)),
                &["--duration", "8s", "--warmup", "2s"],
            )
        },
    )
    .try_into()
    .unwrap();
    let r = kept;
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

    let r = cancelled;
    let w = node(&r, "W");
    assert!(
        num(w, "skipped") > 0.3 * num(w, "requests"),
        "abandoned jobs skipped"
    );
    assert_eq!(num(w, "shed"), 0.0, "skipping keeps the queue short");
}

/// The end user waits 300 ms (`load.timeout`). S answers after 200 ms and
/// fails half the time, claimed; A retries it once (R = 2). A root whose
/// first attempt succeeds is answered at 200 ms; one whose first attempt
/// fails needs a second 200 ms and the user has gone by then: a root error,
/// and a request the entry counts as abandoned. Availability is thus
/// 1 − 0.5, where the same fleet without `load.timeout` reaches the model's
/// 1 − 0.5² = 0.75.
#[test]
fn the_end_user_gives_up_after_load_timeout() {
    let _fleet = fleet_lock();
    let yaml = |timeout: &str| {
        format!(
            "name: user-timeout\npolicy: {{ preset: retry, attempts: 2, timeout: 250ms }}\n\
             load: {{ rps: 40{timeout} }}\n\
             services:\n  A: {{ calls: [S] }}\n  S:\n    fault: {{ latency: 200ms, error_rate: 0.5 }}\n"
        )
    };
    let args = ["--duration", "5s", "--warmup", "1s", "--seed", "11"];
    // Side by side: a user who gives up, and one who waits, 40 root
    // requests a second each (a hundredth of a core, measured).
    let [gives_up, waits]: [Value; 2] = side_by_side(
        vec![("user-timeout", ", timeout: 300ms"), ("user-waits", "")],
        |(name, timeout)| headless_report(&topology_file(name, &yaml(timeout)), &args),
    )
    .try_into()
    .unwrap();
    let r = gives_up;
    let root = &r["root"];
    let (requests, errors) = (num(root, "requests"), num(root, "errors"));
    let gave_up = num(node(&r, "A"), "timeouts");
    assert!(requests >= 190.0, "only {requests} root requests");
    // Every root error is a request the user gave up on, and the entry
    // counted each of them as abandoned.
    assert!(
        (errors - gave_up).abs() <= 0.02 * errors + 2.0,
        "{errors} root errors, {gave_up} abandoned at A"
    );
    assert_eq!(num(node(&r, "A"), "errors"), 0.0, "A never answered late");
    let avail = num(root, "availability");
    assert!(
        (avail - (1.0 - errors / requests)).abs() < 1e-9,
        "availability {avail} against {errors} errors of {requests}"
    );
    assert!(
        (avail - 0.5).abs() <= 0.12,
        "availability {avail}, 0.5 expected"
    );
    // Nobody waits longer than the user's patience, a timer's slack
    // aside: about half the roots end on the 300 ms timer, so the p99 is
    // that timer as late as it fired. The histogram's 1% precision, and
    // 20 ms or four times the fleet's own measured event-loop lag.
    let p99 = num(&root["latency_ms"], "p99");
    let lag = num(&r["lab"], "lag_ms");
    assert!(
        p99 <= 300.0 * 1.01 + (4.0 * lag).max(20.0),
        "root p99 {p99} ms with a 300 ms timeout (event loop {lag} ms late)"
    );

    // The same fleet, with a user who waits: the retried roots succeed.
    let r = waits;
    let root = &r["root"];
    let (avail, model) = (num(root, "availability"), num(root, "model_availability"));
    assert!((model - 0.75).abs() < 1e-9, "model availability {model}");
    assert!(
        (avail - model).abs() <= 0.1,
        "availability {avail}, the model says {model}"
    );
    assert_eq!(num(node(&r, "A"), "timeouts"), 0.0);
}

/// A 3-deep chain whose bottom never answers in time: the user waits
/// 300 ms, every per-attempt timeout is 250 ms, R = 3, and A and B keep
/// working after their callers leave (workers). Without propagation A's
/// job sends its 2nd and 3rd attempts at 250 and 500 ms: both still in
/// flight after the root's deadline (2 late attempts per root), and C sees
/// every root 3 × 3 = 9 times. With `deadline: propagate` each attempt is
/// clipped to the time left (A: 250 ms, then the 50 ms left), B is told
/// and keeps to it, and no attempt anywhere outlives the root: C sees each
/// root twice, and no service counts a late attempt.
#[test]
fn propagated_deadlines_keep_every_attempt_within_the_root_deadline() {
    let _fleet = fleet_lock();
    let yaml = |deadline: &str| {
        format!(
            "name: deep-deadline\n\
             policy: {{ preset: retry, attempts: 3, timeout: 250ms, deadline: {deadline} }}\n\
             load: {{ rps: 20, timeout: 300ms }}\n\
             services:\n  A: {{ calls: [B], workers: 64 }}\n  B: {{ calls: [C], workers: 64 }}\n\
             \x20 C:\n    fault: {{ latency: 1s }}\n"
        )
    };
    let args = ["--duration", "5s", "--warmup", "1s"];
    // Side by side: without and with propagation, 20 root requests a
    // second each (a hundredth of a core, measured).
    let [off, on]: [Value; 2] = side_by_side(
        vec![("deep-off", "off"), ("deep-propagate", "propagate")],
        |(name, deadline)| headless_report(&topology_file(name, &yaml(deadline)), &args),
    )
    .try_into()
    .unwrap();
    let r = off;
    let roots = num(&r["root"], "requests");
    assert!(roots >= 95.0, "only {roots} root requests");
    let late = num(node(&r, "A"), "late_attempts");
    assert!(
        (late - 2.0 * roots).abs() <= 0.05 * 2.0 * roots + 3.0,
        "A: {late} late attempts for {roots} roots, 2 each expected"
    );
    let amp = num(node(&r, "C"), "amplification");
    assert!(
        (amp - 9.0).abs() <= 0.05 * 9.0,
        "C at {amp}× without deadlines"
    );

    let r = on;
    for name in ["A", "B", "C"] {
        assert_eq!(
            num(node(&r, name), "late_attempts"),
            0.0,
            "{name} had attempts in flight past their deadline"
        );
    }
    let amp = num(node(&r, "C"), "amplification");
    assert!(
        (amp - 2.0).abs() <= 0.05 * 2.0,
        "C at {amp}× with deadlines"
    );
    // A's third attempt is never sent: no time is left for it. (Against
    // this run's own root requests: two runs side by side on a busy
    // machine do not measure the same number of them.)
    let roots = num(&r["root"], "requests");
    let a_b = num(edge(&r, "A", "B"), "attempts");
    assert!(
        (a_b - 2.0 * roots).abs() <= 0.05 * 2.0 * roots + 3.0,
        "A→B: {a_b} attempts for about {roots} roots, 2 each expected"
    );
}

/// As above, W's 400 ms of work outlast its caller's 100 ms, with
/// `cancel: false`. Under `deadline: propagate` each job carries its
/// caller's 100 ms, and a job that reaches a worker after them is skipped
/// whatever `cancel` says: the two workers still run 2 / 0.4 s = 5 jobs a
/// second, the other 5 of the 10 offered are skipped, and the queue never
/// fills. Without propagation nothing is skipped and the queue sheds.
#[test]
fn a_queued_job_past_its_propagated_deadline_is_skipped() {
    let _fleet = fleet_lock();
    let yaml = |deadline: &str| {
        format!(
            "name: w\npolicy: {{ preset: none, timeout: 100ms, deadline: {deadline} }}\n\
             load: {{ rps: 10 }}\n\
             services:\n  A: {{ calls: [W] }}\n  W: {{ workers: 2, work: 400ms, queue: 10, cancel: false }}\n"
        )
    };
    let args = ["--duration", "8s", "--warmup", "2s"];
    // Side by side: with and without propagation, 10 root requests a
    // second each (a hundredth of a core, measured).
    let [on, off]: [Value; 2] = side_by_side(
        vec![("w-deadline", "propagate"), ("w-no-deadline", "off")],
        |(name, deadline)| headless_report(&topology_file(name, &yaml(deadline)), &args),
    )
    .try_into()
    .unwrap();
    let r = on;
    let w = node(&r, "W");
    let dt = r["duration_s"].as_f64().unwrap();
    let skipped = num(w, "skipped") / dt;
    assert!(
        (skipped - 5.0).abs() <= 0.5,
        "{skipped:.2} skipped jobs a second, 5 expected"
    );
    assert_eq!(num(w, "shed"), 0.0, "skipping keeps the queue short");
    assert!(num(w, "utilisation") >= 0.95);

    let r = off;
    let w = node(&r, "W");
    assert_eq!(num(w, "skipped"), 0.0);
    assert!(num(w, "shed") > 0.0, "the queue filled");
}
