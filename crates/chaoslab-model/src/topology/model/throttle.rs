//! What the SRE book's client-side adaptive throttling lets through in the
//! long run.
//!
//! A client asks for `r` requests over its window (rate × window) and
//! rejects each locally with probability max(0, (r − K·a)/(r + 1)), where
//! `a` are the requests the backend accepted. With attempts failing with
//! probability `p`, a share `s` of the asked requests is sent and
//! `a = (1 − p)·s·r` accepted, so in balance
//!
//! s = (1 + K·a)/(r + 1)  ⇒  s = 1 / (r·(1 − K·(1 − p)) + 1)
//!
//! whenever K·(1 − p) < 1, and s = 1 otherwise. Two things follow, both as
//! the book says: the throttle never binds while more than 1/K of the
//! attempts succeed (half, at K = 2), and past that the backend receives
//! about K × accepts + 1 requests a window. Under a persistent failure
//! (p = 1) that is one request a window: nearly nothing.
//!
//! # Recovery
//!
//! When the callee heals, each request that gets through is accepted and
//! makes room for more: while the window still holds the failure's
//! requests (r = rate × window), the accepts grow as
//! da/dt = rate·(1 + K·a)/r = (1 + K·a)/window, so 1 + K·a = e^(K·t/window),
//! and the throttle is open again (K·a = r) after
//!
//! t = (window / K) · ln(1 + rate · window)
//!
//! (6 s for a 2 s window at 200 requests a second; nearly 10 minutes for
//! the book's two minutes at 100 a second). A chain of throttles recovers
//! in about the time of the busiest: the ones below it see only what it
//! lets through, so their windows hold few requests.
//!
//! An attempt the throttle rejects fails at the caller without reaching
//! the callee; the model counts it as the caller's own error (claimed), as
//! the lab does.

use crate::topology::{Policy, Topology};
use error_ownership::throttle::ThrottleConfig;

/// The share of asked attempts sent, for attempts failing with probability
/// `p_fail` asked at `asked_per_sec` (unknown: `None`, when only whether
/// the throttle binds can be judged; a binding throttle then sends none).
pub(super) fn pass_share(cfg: &ThrottleConfig, p_fail: f64, asked_per_sec: Option<f64>) -> f64 {
    let accepted = 1.0 - p_fail.clamp(0.0, 1.0);
    let slack = 1.0 - cfg.k * accepted;
    if slack <= 0.0 {
        return 1.0;
    }
    match asked_per_sec.filter(|r| *r > 0.0) {
        Some(rate) => 1.0 / (rate * cfg.window.as_secs_f64() * slack + 1.0),
        None => 0.0,
    }
}

/// Seconds a throttle that shut on a dead callee takes to open again once
/// the callee heals, for requests asked at `rate` a second (see the module
/// docs).
pub fn recovery_s(cfg: &ThrottleConfig, rate: f64) -> f64 {
    let w = cfg.window.as_secs_f64();
    w / cfg.k * (1.0 + rate.max(0.0) * w).ln()
}

/// What the model says of the topology's throttles, in words, when its
/// policy throttles (`sre`, `throttle: on`): where they bind, what a dead
/// callee then sees, and how long the busiest edge's throttle takes to
/// reopen once its callee heals (at the rate the model gives that edge,
/// healthy). `None` without a throttle.
pub fn describe(t: &Topology, policy: &Policy) -> Option<String> {
    if !policy.mode.throttle {
        return None;
    }
    let cfg = policy.throttle_config;
    let healthy = {
        let mut h = t.clone();
        for s in &mut h.services {
            s.fault = Default::default();
        }
        super::predict(&h, policy)
    };
    let (busiest, rate) = t
        .edges
        .iter()
        .zip(&healthy.edges)
        .map(|(e, p)| (e, p.first_attempts * t.load.rps))
        // The first of the busiest.
        .min_by(|a, b| b.1.total_cmp(&a.1))?;
    let window = crate::format::fmt_duration(cfg.window);
    Some(format!(
        "throttle (K = {k}, window {window}): binds once more than {bend:.0}% of an edge's attempts fail; a callee failing every request then sees about one request a window from each caller; once it heals, a throttle reopens in about (W/K)·ln(1 + rate·W): {secs:.1} s on {from} → {to} at {rate:.0} rps",
        k = cfg.k,
        bend = 100.0 * (1.0 - 1.0 / cfg.k).max(0.0),
        secs = recovery_s(&cfg, rate),
        from = t.services[busiest.from].name,
        to = t.services[busiest.to].name,
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn check_says_where_it_binds_and_how_long_it_takes_to_reopen() {
        let t = crate::topology::Topology::from_yaml(
            "name: t\nload: { rps: 200 }\npolicy: { preset: sre, throttle: { window: 2s } }\nservices:\n  A: { calls: [B] }\n  B: { fault: { error_rate: 1.0 } }\n",
            "t.yaml",
        )
        .unwrap();
        let line = describe(&t, &t.policy).expect("sre throttles");
        assert!(line.contains("more than 50%"), "{line}");
        // At the healthy rate, 200 a second: ln(401) = 6.0 s.
        assert!(line.contains("6.0 s on A → B at 200 rps"), "{line}");
        let mut p = t.policy.clone();
        p.apply_preset(crate::topology::Preset::Ownership);
        assert_eq!(describe(&t, &p), None);
    }

    #[test]
    fn recovery_takes_window_over_k_times_the_log_of_the_window_s_requests() {
        let w = |s| ThrottleConfig {
            k: 2.0,
            window: Duration::from_secs(s),
        };
        assert!((recovery_s(&w(2), 200.0) - 401f64.ln()).abs() < 1e-12);
        // The book's two minutes at 100 a second: 9.4 minutes.
        let t = recovery_s(&ThrottleConfig::SRE, 100.0);
        assert!((560.0..570.0).contains(&t), "{t}");
        assert_eq!(recovery_s(&w(2), 0.0), 0.0);
    }

    #[test]
    fn it_binds_only_when_fewer_than_one_in_k_succeed() {
        let sre = ThrottleConfig::SRE;
        for p in [0.0, 0.1, 0.3, 0.5] {
            assert_eq!(pass_share(&sre, p, Some(100.0)), 1.0, "{p}");
            assert_eq!(pass_share(&sre, p, None), 1.0, "{p}");
        }
        // K = 1.5: one in 1.5 must succeed, so 40% failures bind.
        let k = ThrottleConfig { k: 1.5, ..sre };
        assert!(pass_share(&k, 0.4, Some(100.0)) < 1.0);
        assert!(pass_share(&sre, 0.51, Some(100.0)) < 1.0);
    }

    #[test]
    fn a_dead_backend_gets_one_request_a_window() {
        let cfg = ThrottleConfig {
            k: 2.0,
            window: Duration::from_secs(10),
        };
        // 100 asked a second over 10 s: 1,000 asked, one sent.
        let s = pass_share(&cfg, 1.0, Some(100.0));
        assert!((s * 100.0 * 10.0 - 1000.0 / 1001.0).abs() < 1e-9, "{s}");
        assert_eq!(pass_share(&cfg, 1.0, None), 0.0);
    }

    #[test]
    fn past_the_bend_the_backend_sees_about_k_times_its_accepts() {
        let cfg = ThrottleConfig::SRE;
        let (rate, p) = (50.0, 0.8);
        let s = pass_share(&cfg, p, Some(rate));
        let r = rate * cfg.window.as_secs_f64();
        let (sent, accepts) = (s * r, (1.0 - p) * s * r);
        // sent − K·accepts = r·slack / (r·slack + 1): one, less a sliver.
        let gap = sent - cfg.k * accepts;
        assert!(gap < 1.0 && gap > 0.999, "{sent} {accepts}");
    }
}
