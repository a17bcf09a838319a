//! The rest of Uber's mechanism, measured over real sockets and compared
//! with the model and the seed's figures: context drop, coincidental
//! errors under each attribution mode, the at-least-once guarantee, the
//! one-edge availability table, and the static storm radius.

use chaoslab::topology::{model, Preset, Topology};
use serde_json::Value;

use crate::common::{fleet_lock, root, side_by_side};
use crate::tables::{headless_report, node, num};

fn amp(r: &Value, name: &str) -> f64 {
    num(node(r, name), "amplification")
}

/// Context drop, R=2, no budget, D failing: B, C, D see 1×, 2×, 4× —
/// half of what naive retries give them — A never retries, radius 2.
#[test]
fn context_drop_halves_the_storm() {
    let _fleet = fleet_lock();
    // Side by side: two four-service chains at 100 root requests a
    // second (0.2 of a core together, measured).
    let [owned, naive]: [Value; 2] = side_by_side(vec![&[][..], &["--policy", "retry"]], |p| {
        headless_report(
            "topologies/context-drop.yaml",
            &[&["--duration", "5s", "--warmup", "1s"][..], p].concat(),
        )
    })
    .try_into()
    .unwrap();
    for (name, want, naive_want) in [("B", 1.0, 2.0), ("C", 2.0, 4.0), ("D", 4.0, 8.0)] {
        let (m, n) = (amp(&owned, name), amp(&naive, name));
        assert!((m - want).abs() <= 0.03 * want, "{name}: {m} vs {want}");
        assert!(
            (n - naive_want).abs() <= 0.03 * naive_want,
            "{name} naive: {n}"
        );
        assert!((n / m - 2.0).abs() < 0.06, "{name}: half of naive");
        assert_eq!(num(node(&owned, name), "model_amplification"), want);
    }
    let a = node(&owned, "A");
    assert_eq!(num(a, "retries_sent"), 0.0, "A never retries");
    assert!((num(a, "retries_suppressed") - num(a, "errors")).abs() <= crate::tables::EDGE);
    // C claims errors it did not cause: the ground truth sees it.
    let c = node(&owned, "C");
    assert!(
        (num(&c["attribution"], "wrongly_claimed") - num(c, "errors")).abs() <= crate::tables::EDGE
    );
    assert_eq!(owned["storm_radius"]["max"].as_u64(), Some(2));
    assert_eq!(owned["storm_radius"]["model"].as_u64(), Some(2));
}

/// The run of `coincidental.yaml` under attribution `mode`: 800 root
/// requests a second for 12 s after a 2 s warm-up (a quarter of a core).
fn coincidental(mode: &str) -> Value {
    headless_report(
        "topologies/coincidental.yaml",
        &[
            "--duration",
            "12s",
            "--warmup",
            "2s",
            "--rps",
            "800",
            "--attribution",
            mode,
        ],
    )
}

/// S fails 10% on its own; two fail-open dependencies fail 10% each. In
/// `simple` attribution 1 − 0.9² = 19% of S's own failures are wrongly
/// unclaimed. At 800 root requests per second for 12 s S has about 960 own
/// failures: the binomial standard error of 19% is 1.3 points, so ±3
/// points is over two standard errors.
#[test]
fn coincidental_errors_are_unclaimed_in_simple_attribution() {
    let _fleet = fleet_lock();
    let simple = coincidental("simple");
    let s = &node(&simple, "S")["attribution"];
    let (own, wrong) = (num(s, "own_errors"), num(s, "wrongly_unclaimed"));
    assert!(own >= 800.0, "enough own failures to judge: {own}");
    let share = wrong / own;
    assert!(
        (share - 0.19).abs() <= 0.03,
        "simple: {:.1}% of own failures unclaimed, the seed says 19%",
        share * 100.0
    );
    assert_eq!(num(s, "wrongly_claimed"), 0.0);
}

/// The same failures in `declared` attribution: not one own failure is
/// unclaimed, nor a dependency's failure claimed.
#[test]
fn coincidental_errors_are_claimed_in_declared_attribution() {
    let _fleet = fleet_lock();
    let r = coincidental("declared");
    let a = &node(&r, "S")["attribution"];
    assert!(num(a, "own_errors") >= 800.0);
    assert_eq!(num(a, "wrongly_unclaimed"), 0.0);
    assert_eq!(num(a, "wrongly_claimed"), 0.0);
}

/// And in `learned` attribution, with the memory agreeing with what the
/// YAML declares.
#[test]
fn coincidental_errors_are_claimed_in_learned_attribution() {
    let _fleet = fleet_lock();
    let r = coincidental("learned");
    let s = node(&r, "S");
    let a = &s["attribution"];
    assert!(num(a, "own_errors") >= 800.0);
    assert_eq!(num(a, "wrongly_unclaimed"), 0.0);
    assert_eq!(num(a, "wrongly_claimed"), 0.0);
    // The memory warmed up during the 2 s warm-up (20 failures of each
    // dependency: about 0.25 s at 800 rps × 10%) and agrees with what the
    // YAML declares.
    let learned = s["learned"].as_array().expect("learned classification");
    assert_eq!(learned.len(), 2, "{learned:?}");
    for l in learned {
        assert_eq!(l["declared"], "fail-open", "{l}");
        assert_eq!(l["learned"], l["declared"], "{l}");
        assert!(num(l, "confidence") > 0.5, "{l}");
    }
}

/// D fails 30% at random below an `attempts: 1` edge. With the guarantee
/// C claims D's error so B makes the one retry: availability 1 − 0.3² =
/// 91% and D at 1.3×. Without it nobody retries: 70% and 1×. No retry is
/// added anywhere else.
#[test]
fn at_least_once_moves_the_retry_up_one_hop() {
    let _fleet = fleet_lock();
    // Side by side: two four-service chains at 500 root requests a second
    // (0.3 of a core together, measured).
    let [on, off]: [Value; 2] = side_by_side(vec!["on", "off"], |rule| {
        headless_report(
            "topologies/at-least-once.yaml",
            &[
                "--duration",
                "8s",
                "--warmup",
                "1s",
                "--rps",
                "500",
                "--at-least-once",
                rule,
            ],
        )
    })
    .try_into()
    .unwrap();
    // n = 4000 roots: the standard error of 91% is 0.45 points.
    let avail = |r: &Value| num(&r["root"], "availability");
    assert!((avail(&on) - 0.91).abs() <= 0.015, "on: {}", avail(&on));
    assert!((avail(&off) - 0.70).abs() <= 0.02, "off: {}", avail(&off));
    assert!(
        (amp(&on, "D") - 1.3).abs() <= 0.04,
        "on: D {}",
        amp(&on, "D")
    );
    assert!(
        (amp(&off, "D") - 1.0).abs() <= 0.01,
        "off: D {}",
        amp(&off, "D")
    );
    let c = node(&on, "C");
    assert!(num(c, "at_least_once_claims") > 0.0);
    for r in [&on, &off] {
        assert_eq!(num(node(r, "A"), "retries_sent"), 0.0);
        assert_eq!(num(node(r, "C"), "retries_sent"), 0.0);
    }
    assert_eq!(num(node(&off, "B"), "retries_sent"), 0.0);
    assert!(num(node(&on, "B"), "retries_sent") > 0.0);
}

/// The seed's one-edge availability table (R=2, B=0.1, independent
/// failures): 1 − (p − min(p, B)·(1 − p)). 8,000 root requests per p: the
/// standard error is at most 0.47 points, so 1.5 points is over three.
#[test]
fn availability_table() {
    let _fleet = fleet_lock();
    let rows = [(0.05, 0.9975), (0.1, 0.99), (0.2, 0.88), (0.3, 0.77)];
    // Side by side: four two-service fleets at 1,000 root requests a
    // second (0.7 of a core together, measured).
    let reports = side_by_side(rows.to_vec(), |(p, _)| {
        let fail = format!("B={p}");
        headless_report(
            "topologies/availability.yaml",
            &[
                "--duration",
                "8s",
                "--warmup",
                "2s",
                "--rps",
                "1000",
                "--fail",
                &fail,
            ],
        )
    });
    for ((p, seed), r) in rows.into_iter().zip(&reports) {
        let root = &r["root"];
        assert!(num(root, "requests") >= 7500.0);
        let (measured, model) = (num(root, "availability"), num(root, "model_availability"));
        assert!((model - seed).abs() < 1e-9, "p={p}: model {model}");
        assert!(
            (measured - seed).abs() <= 0.015,
            "p={p}: measured {:.2}%, seed {:.2}%",
            measured * 100.0,
            seed * 100.0
        );
    }
}

/// The static radius: the worst radius over every service failing.
#[test]
fn static_radius_of_the_shipped_chains() {
    for (file, retry, ownership) in [
        ("topologies/uber-chain.yaml", 6, 1),
        ("topologies/deep-chain.yaml", 24, 1),
    ] {
        let t = Topology::load(&root().join(file)).unwrap();
        let mut p = t.policy.clone();
        p.apply_preset(Preset::Retry);
        assert_eq!(model::static_radius(&t, &p), retry, "{file} retry");
        p.apply_preset(Preset::Ownership);
        assert_eq!(model::static_radius(&t, &p), ownership, "{file} ownership");
    }
}
