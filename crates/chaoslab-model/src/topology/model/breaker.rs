//! How much of the time a circuit breaker stands open, in the long run.
//!
//! With attempts failing independently with probability `p`:
//!
//! * at or above the breaker's `failure_ratio` the window fills with
//!   failures and the breaker opens as soon as `min_calls` are in; each
//!   probe after `open_for` most likely fails and reopens it: it is open
//!   (nearly) all the time;
//! * below it only a streak of `consecutive` failures opens it. Such a
//!   streak takes `(1/pⁿ − 1)/(1 − p)` attempts on average (the waiting
//!   time for a run of n), so at `a` attempts a second the breaker is
//!   closed for that long, then open for `open_for`.
//!
//! An open breaker's calls fail at the caller without reaching the callee;
//! the model counts them as the caller's own errors (claimed), as the lab
//! does.

use error_ownership::breaker::BreakerConfig;

/// The share of time the breaker is open, for attempts failing with
/// probability `p_fail` at `attempts_per_sec` (unknown: `None`, when only
/// the ratio rule and a certain failure can be judged).
pub(super) fn open_share(cfg: &BreakerConfig, p_fail: f64, attempts_per_sec: Option<f64>) -> f64 {
    let p = p_fail.clamp(0.0, 1.0);
    if p <= 0.0 {
        return 0.0;
    }
    let by_ratio = cfg.failure_ratio > 0.0 && p >= cfg.failure_ratio;
    if by_ratio || (cfg.consecutive > 0 && p >= 1.0) {
        return 1.0;
    }
    if cfg.consecutive == 0 {
        return 0.0;
    }
    let Some(rate) = attempts_per_sec.filter(|r| *r > 0.0) else {
        return 0.0;
    };
    let n = cfg.consecutive as i32;
    let attempts = (1.0 / p.powi(n) - 1.0) / (1.0 - p);
    let closed = attempts / rate;
    let open = cfg.open_for.as_secs_f64();
    open / (open + closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persistent_failure_keeps_it_open() {
        assert_eq!(open_share(&BreakerConfig::DEFAULT, 1.0, None), 1.0);
        assert_eq!(open_share(&BreakerConfig::DEFAULT, 0.5, None), 1.0);
    }

    #[test]
    fn rare_failures_rarely_open_it() {
        assert_eq!(open_share(&BreakerConfig::DEFAULT, 0.0, Some(100.0)), 0.0);
        // 10%: a streak of 5 takes 111,110 attempts, 1,111 s at 100/s;
        // open 5 s of every 1,116.
        let s = open_share(&BreakerConfig::DEFAULT, 0.1, Some(100.0));
        assert!((s - 5.0 / 1116.1).abs() < 1e-4, "{s}");
        // 40%: about 161 attempts, 1.6 s: open 5 s of 6.6.
        let s = open_share(&BreakerConfig::DEFAULT, 0.4, Some(100.0));
        assert!((0.75..0.76).contains(&s), "{s}");
    }
}
