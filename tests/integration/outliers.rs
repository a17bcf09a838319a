//! Outlier detection (SPEC section 17) on real sockets: each caller's
//! edge ejects the callee replicas that fail too many attempts in a row,
//! sends them nothing while they are out, and takes them back at a sweep;
//! measured from the report and held against what the model predicts for
//! the same topology.

use serde_json::Value;

use crate::common::{edge, fleet_lock, side_by_side};
use crate::overload::topology_file;
use crate::tables::{headless_report, node, num};
use chaoslab::topology::model::{self, outlier::EdgeOutlook};
use chaoslab::topology::Topology;

/// What the model says outlier detection does on edge `e` of `yaml` over
/// `run_s` seconds from the detector's start.
fn outlook(yaml: &str, e: usize, run_s: f64) -> EdgeOutlook {
    let t = Topology::from_yaml(yaml, "t.yaml").unwrap();
    let p = model::predict(&t, &t.policy);
    model::outlier::edge(&t, &t.policy, &p, e, run_s).expect("the edge detects outliers")
}

/// The report's outlier row of `replica` on edge `from` → `to`.
fn row<'a>(r: &'a Value, from: &str, to: &str, replica: usize) -> &'a Value {
    &edge(r, from, to)["outliers"][replica]
}

/// api calls a store of five replicas round-robin, replica 0 failing
/// every request; R = 2 with retries to another host, outlier detection
/// after 5 errors in a row, a sweep a second, at most 20% out (one of
/// five: Envoy's 10% would eject none), ejected for `base`.
fn one_bad_of_five(base: &str) -> String {
    format!(
        "name: bad-of-five\npolicy: {{ preset: retry, attempts: 2, lb: round-robin, outlier: {{ consecutive_5xx: 5, interval: 1s, base_ejection: {base}, max_ejection_percent: 20 }} }}\nload: {{ rps: 200 }}\nservices:\n  api: {{ calls: [store] }}\n  store: {{ replicas: 5, fault: {{ error_rate: 1.0, replicas: [0] }} }}\n"
    )
}

/// The bad replica gets a fifth of 200 first attempts a second, 40: its
/// fifth error comes 0.125 s in (the model's first ejection, well within
/// the first 1 s interval) and ejects it.
///
/// Ejected for 30 s, it is out for the whole window after a 1 s warm-up:
/// over the window it gets no request at all (a first attempt's share of
/// exactly 0, the model's while it is out) and the other four share the
/// first attempts evenly (round-robin steps over it: a quarter each, to
/// one attempt of the window's 600).
///
/// Ejected for 2 s, it comes back at the sweep at 3 s (2.125 s rounded up)
/// and is ejected again 0.125 s later, for 4 s: two ejections in 4 s, the
/// model's count. The sweeps run from when the fleet was built, a few
/// milliseconds before the run's clock starts; a phase that far off an
/// interval would move the second ejection across the window's end, so a
/// count one off the model's is allowed. Each ejection takes exactly five
/// requests (an attempt is answered in about a millisecond, 25 ms before
/// the next one reaches the replica), and a last streak cut off by the
/// window's end fewer: between 5 and 10 requests for two. The replica's
/// share of the first attempts is then its five per ejection over the
/// window's: the model's duty cycle (in service 0.25 s of 4 s, a fifth
/// of the attempts then), within the model's five attempts per ejection
/// it may have counted one off, and two attempts for the window's edges.
#[test]
fn one_bad_replica_of_five_is_ejected_at_its_fifth_error_and_gets_nothing_while_out() {
    let _fleet = fleet_lock();
    let (long, cycle) = (one_bad_of_five("30s"), one_bad_of_five("2s"));
    let runs = vec![
        (
            topology_file("bad-of-five-long", &long),
            ["--duration", "3s", "--warmup", "1s"],
        ),
        (
            topology_file("bad-of-five-cycle", &cycle),
            ["--duration", "4s", "--warmup", "0s"],
        ),
    ];
    let [out, back]: [Value; 2] = side_by_side(runs, |(file, args)| headless_report(&file, &args))
        .try_into()
        .unwrap();

    // Out for the whole window.
    let (from, to) = (1.0, 1.0 + num(&out, "duration_s"));
    let o = outlook(&long, 0, to);
    let bad = &o.hosts[0];
    assert!(bad.schedule.first_ejection_s().unwrap() < 1.0, "{bad:?}");
    assert!(bad.schedule.ejected_at(to) && bad.ejections_between(from, to) == 0.0);
    assert_eq!(o.first_attempt_share(0, from, to), 0.0);
    let replicas = node(&out, "store")["replicas"].as_array().unwrap().clone();
    let r0 = &replicas[0];
    assert_eq!(
        (num(r0, "requests"), num(r0, "first_attempts")),
        (0.0, 0.0),
        "{r0}"
    );
    assert_eq!(num(r0, "first_attempt_share"), 0.0);
    let x = row(&out, "api", "store", 0);
    assert_eq!(
        (x["ejected_now"].as_bool(), num(x, "ejections")),
        (Some(true), 0.0),
        "{x}"
    );
    assert_eq!(num(r0, "ejected_now"), 1.0);
    let firsts: f64 = replicas.iter().map(|r| num(r, "first_attempts")).sum();
    for r in &replicas[1..] {
        let share = num(r, "first_attempt_share");
        assert!((share - 0.25).abs() <= 1.0 / firsts, "{r}");
        assert_eq!(num(r, "ejections"), 0.0, "{r}");
    }
    assert_eq!(num(&out["root"], "availability"), 1.0);

    // Out, back, out again.
    let to = num(&back, "duration_s");
    let o = outlook(&cycle, 0, to);
    let model_ejections = o.hosts[0].ejections_between(0.0, to);
    assert_eq!(model_ejections, 2.0, "{:?}", o.hosts[0]);
    let x = row(&back, "api", "store", 0);
    let ejections = num(x, "ejections");
    assert_eq!(num(x, "model_ejections"), model_ejections, "{x}");
    assert!(
        (ejections - model_ejections).abs() <= 1.0 && ejections >= 1.0,
        "{ejections} ejections, the model {model_ejections}"
    );
    assert_eq!(
        x["ejected_now"].as_bool(),
        Some(o.hosts[0].schedule.ejected_at(to))
    );
    let replicas = node(&back, "store")["replicas"].as_array().unwrap().clone();
    let requests = num(&replicas[0], "requests");
    // Five errors eject it; attempts already on their way when the fifth
    // came back still arrive: at 40 rps to it, up to 4 more per ejection
    // while an answer takes as long as 100 ms (a machine busy with other
    // tests).
    assert!(
        (5.0 * ejections..=5.0 * (ejections + 1.0) + 4.0 * ejections).contains(&requests),
        "{requests} requests to the bad replica for {ejections} ejections"
    );
    let firsts: f64 = replicas.iter().map(|r| num(r, "first_attempts")).sum();
    let (share, want) = (
        num(&replicas[0], "first_attempt_share"),
        o.first_attempt_share(0, 0.0, to),
    );
    let tolerance = (5.0 * (ejections - model_ejections).abs() + 2.0) / firsts;
    assert!(
        (share - want).abs() <= tolerance,
        "share {share:.4}, model {want:.4} ± {tolerance:.4}"
    );
    assert!(replicas[1..].iter().all(|r| num(r, "ejections") == 0.0));
}

/// A→B→C with C failing every request and B's two replicas healthy: B
/// passes C's errors up, as 5xx, unclaimed. Under `count: all` A's edge
/// takes them for B's own and ejects both replicas (at most 100% out;
/// with both out the balancer sends to both anyway, Envoy's panic mode):
/// each gets 50 attempts a second, so its fifth error comes 0.1 s in and
/// it is back at the sweep at 3 s, out again 0.1 s later: two ejections
/// each in 4 s, as the model says (one off allowed for the sweeps' phase,
/// as above). Under `count: claimed` the same answers are not B's
/// failures: no replica is ever ejected, and the model says so.
#[test]
fn a_middle_tier_passing_errors_up_is_ejected_only_when_every_5xx_counts() {
    let _fleet = fleet_lock();
    let chain = |count: &str| {
        format!(
            "name: chain-{count}\npolicy: {{ preset: ownership, outlier: {{ consecutive_5xx: 5, interval: 1s, base_ejection: 2s, max_ejection_percent: 100, count: {count} }} }}\nload: {{ rps: 100 }}\nservices:\n  A: {{ calls: [B] }}\n  B: {{ replicas: 2, calls: [C] }}\n  C: {{ fault: {{ error_rate: 1.0 }} }}\n"
        )
    };
    let (all, claimed) = (chain("all"), chain("claimed"));
    let runs = vec![
        topology_file("chain-all", &all),
        topology_file("chain-claimed", &claimed),
    ];
    let [by_all, by_claimed]: [Value; 2] = side_by_side(runs, |file| {
        headless_report(&file, &["--duration", "4s", "--warmup", "0s"])
    })
    .try_into()
    .unwrap();

    let to = num(&by_all, "duration_s");
    let o = outlook(&all, 0, to);
    for r in 0..2 {
        let h = &o.hosts[r];
        assert_eq!(h.q, 1.0, "{h:?}");
        let want = h.ejections_between(0.0, to);
        assert_eq!(want, 2.0, "{h:?}");
        let x = row(&by_all, "A", "B", r);
        let got = num(x, "ejections");
        assert!(
            (got - want).abs() <= 1.0 && got >= 1.0,
            "B/{r}: {got} ejections, the model {want}: {x}"
        );
        assert_eq!(
            x["ejected_now"].as_bool(),
            Some(h.schedule.ejected_at(to)),
            "{x}"
        );
    }
    // B unclaims C's errors: A retries none of them, ejected or not.
    assert_eq!(num(edge(&by_all, "A", "B"), "retries"), 0.0);

    let to = num(&by_claimed, "duration_s");
    let o = outlook(&claimed, 0, to);
    for r in 0..2 {
        assert!(
            o.hosts[r].q == 0.0 && !o.hosts[r].ejected(),
            "{:?}",
            o.hosts[r]
        );
        let x = row(&by_claimed, "A", "B", r);
        assert_eq!(
            (num(x, "ejections"), x["ejected_now"].as_bool()),
            (0.0, Some(false)),
            "{x}"
        );
    }
    // The claims are what tells them apart: B unclaimed every error.
    let b = node(&by_claimed, "B");
    assert!(num(b, "errors") > 0.0, "{b}");
    assert_eq!(num(&b["claims_returned"], "false"), num(b, "errors"), "{b}");
}
