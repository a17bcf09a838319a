//! What each budget model lets through in the long run: the closed forms
//! of SPEC section 8, as retries allowed per first attempt on one edge.
//!
//! * **window** (Finagle): `ratio` per call plus `min_per_sec`, so per
//!   first attempt `ratio + min_per_sec / f` at `f` calls a second; the
//!   retries on a hop are `min((R−1)·f, ratio·f + min_per_sec)` when every
//!   call fails.
//! * **tokens** (gRPC A6): each failed attempt takes a token, each success
//!   gives `token_ratio`, whether or not a retry follows, so with attempts
//!   failing independently with probability `p` the bucket is a random walk
//!   of its own, bounded by 0 and `max_tokens`: +ratio with probability
//!   1 − p, −1 with probability p. A failure is retried when the bucket
//!   still holds more than half after paying for it; the share of failures
//!   retried is that probability under the walk's stationary distribution.
//!   Its drift `(1−p)·ratio − p` decides it in the large: under persistent
//!   failure the bucket drains and retries stop; near p = ratio/(1+ratio)
//!   (1 in 11 for gRPC's 0.1) the walk wanders and the bucket opens and
//!   shuts by turns.
//! * **quota** (AWS): a call that succeeds first time adds the increment,
//!   a retry costs `cost` and is refunded when it succeeds, so on average
//!   it costs `cost·p`. The quota is in balance at
//!   `(1−p)·increment / (cost·p)` retries per call; under persistent
//!   failure that is 0: the quota drains and retries stop.
//! * **concurrency** (Envoy) depends on latency, not on counts: retries
//!   in flight are capped at `max(percent × open requests, min)`. With
//!   each attempt taking `L` seconds, retries wanted at `λ` a second hold
//!   `A = λ·L` slots on average; the edge is a loss system with `c`
//!   slots. With Poisson arrivals the fraction refused is Erlang's
//!   B(c, A), whatever the latency's distribution. The lab's constant
//!   arrivals are smoother: their peakedness (variance over mean of the
//!   slots they would hold with no cap) is `z = 1/(1 − e^(−1/A)) − A`
//!   (regular arrivals, exponential holding times; tends to ½), and
//!   Hayward's approximation gives the refused fraction as
//!   B(c/z, A/z). Without a measured latency the model cannot say, and
//!   assumes the cap does not bind (true of fast failures: they hold no
//!   slot for long).

use error_ownership::edge_budget::BudgetModel;

/// What the model knows of an edge's traffic, once the loads are known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct EdgeRates {
    /// First attempts (calls) a second.
    pub first_per_sec: f64,
    /// How long one attempt takes, seconds, when measured.
    pub attempt_latency_s: Option<f64>,
    /// Whether calls arrive as a Poisson stream (`arrival: poisson`)
    /// rather than evenly spaced.
    pub poisson: bool,
}

/// Retries per first attempt the budget allows in the long run, for calls
/// whose attempts fail with probability `p_fail` and which would make
/// `wanted` retries per first attempt without a budget.
pub(super) fn allowance(
    model: &BudgetModel,
    p_fail: f64,
    wanted: f64,
    rates: Option<EdgeRates>,
) -> f64 {
    let p = p_fail.clamp(0.0, 1.0);
    match *model {
        BudgetModel::Window {
            ratio, min_per_sec, ..
        } => {
            let floor = match rates {
                Some(r) if r.first_per_sec > 0.0 => min_per_sec / r.first_per_sec,
                Some(_) if min_per_sec > 0.0 => f64::INFINITY,
                _ => 0.0,
            };
            ratio + floor
        }
        BudgetModel::Tokens { max, ratio } => wanted * token_grant_share(max, ratio, p),
        BudgetModel::Quota(c) => {
            let cost = f64::from(c.transient) * p;
            if cost <= 0.0 {
                f64::INFINITY
            } else {
                (1.0 - p) * f64::from(c.no_retry_increment) / cost
            }
        }
        BudgetModel::Concurrency { percent, min } => {
            let Some((f, l, poisson)) =
                rates.and_then(|r| Some((r.first_per_sec, r.attempt_latency_s?, r.poisson)))
            else {
                return f64::INFINITY;
            };
            let offered = f * wanted * l;
            let open = f * (1.0 + wanted) * l;
            let slots = ((percent / 100.0 * open).floor() as u64).max(u64::from(min));
            let z = if poisson { 1.0 } else { peakedness(offered) };
            wanted * (1.0 - erlang_b_real(slots as f64 / z, offered / z))
        }
    }
}

/// The share of failed attempts a gRPC bucket of `max` tokens earning
/// `ratio` per success lets retry, attempts failing with probability `p`:
/// the stationary distribution of the bucket's walk (in the A6 arithmetic:
/// thousandths of a token), found by iterating it.
pub(super) fn token_grant_share(max: u32, ratio: f64, p: f64) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    let cap = u64::from(max.clamp(1, 1000)) * 1000;
    let up = (ratio.clamp(0.0, 1.0) * 1000.0).round() as u64;
    let down = 1000u64;
    // States a whole number of `unit`s apart; at most about 2,000 of them.
    let mut unit = gcd(gcd(up, down), cap).max(1);
    while cap / unit > 2000 {
        unit *= 2;
    }
    let steps = |v: u64| (v + unit / 2) / unit;
    let (n, up, down) = (
        steps(cap) as usize,
        steps(up) as usize,
        steps(down) as usize,
    );
    let half = n / 2;
    // Start full, as a fresh bucket does.
    let mut pi = vec![0.0; n + 1];
    pi[n] = 1.0;
    let mut next = vec![0.0; n + 1];
    for _ in 0..50_000 {
        next.iter_mut().for_each(|x| *x = 0.0);
        for (s, &m) in pi.iter().enumerate() {
            if m == 0.0 {
                continue;
            }
            next[(s + up).min(n)] += m * (1.0 - p);
            next[s.saturating_sub(down)] += m * p;
        }
        let moved: f64 = pi.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
        std::mem::swap(&mut pi, &mut next);
        if moved < 1e-13 {
            break;
        }
    }
    // A failure at level s leaves s − 1: retried if that is above half.
    pi.iter()
        .enumerate()
        .filter(|(s, _)| s.saturating_sub(down) > half)
        .map(|(_, m)| m)
        .sum()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Erlang's B: the probability that an arrival finds all `c` slots busy
/// when `a` slots' worth of work is offered.
pub(super) fn erlang_b(c: u64, a: f64) -> f64 {
    if a <= 0.0 {
        return if c == 0 { 1.0 } else { 0.0 };
    }
    let mut b = 1.0;
    for k in 1..=c.min(100_000) {
        b = a * b / (k as f64 + a * b);
    }
    b
}

/// Peakedness of evenly spaced arrivals offering `a` slots' worth of work
/// with exponential holding times: `1/(1 − e^(−1/a)) − a` (½ as `a`
/// grows, 1 for a trickle).
pub(super) fn peakedness(a: f64) -> f64 {
    if a <= 1e-9 {
        return 1.0;
    }
    (1.0 / (1.0 - (-1.0 / a).exp()) - a).clamp(1e-3, 1.0)
}

/// Erlang's B for a real number of slots, interpolated geometrically
/// between the whole numbers around it.
pub(super) fn erlang_b_real(c: f64, a: f64) -> f64 {
    let lo = c.floor().max(0.0);
    let f = c - lo;
    let b0 = erlang_b(lo as u64, a);
    if f <= 0.0 {
        return b0;
    }
    let b1 = erlang_b(lo as u64 + 1, a);
    if b0 <= 0.0 || b1 <= 0.0 {
        return b0 * (1.0 - f) + b1 * f;
    }
    (b0.ln() * (1.0 - f) + b1.ln() * f).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(f: f64) -> Option<EdgeRates> {
        Some(EdgeRates {
            first_per_sec: f,
            attempt_latency_s: None,
            poisson: false,
        })
    }

    #[test]
    fn the_finagle_window_adds_its_floor_per_call() {
        let w = BudgetModel::FINAGLE;
        // 200 calls a second: 0.2 + 10/200.
        assert!((allowance(&w, 1.0, 1.0, at(200.0)) - 0.25).abs() < 1e-12);
        // Not yet knowing the rate: the ratio alone.
        assert_eq!(allowance(&w, 1.0, 1.0, None), 0.2);
        let plain = BudgetModel::Window {
            ratio: 0.1,
            min_per_sec: 0.0,
            ttl: Duration::from_secs(10),
        };
        assert_eq!(allowance(&plain, 1.0, 1.0, at(0.0)), 0.1);
    }

    #[test]
    fn buckets_and_quotas_drain_under_persistent_failure() {
        assert_eq!(allowance(&BudgetModel::GRPC, 1.0, 1.0, None), 0.0);
        assert_eq!(allowance(&BudgetModel::AWS, 1.0, 1.0, None), 0.0);
        // One attempt in eleven failing is where gRPC's bucket tips: well
        // below it nearly every failure is retried, well above nearly none,
        // and near it the bucket opens and shuts by turns.
        let share = |p| token_grant_share(10, 0.1, p);
        assert!(share(0.03) > 0.99, "{}", share(0.03));
        assert!(share(0.3) < 0.01, "{}", share(0.3));
        assert!((0.1..0.5).contains(&share(0.1)), "{}", share(0.1));
        assert!(share(0.05) > share(0.1) && share(0.1) > share(0.15));
        // AWS at 10% failures: 0.9 / (5 × 0.1) = 1.8 retries per call.
        assert!((allowance(&BudgetModel::AWS, 0.1, 0.1, None) - 1.8).abs() < 1e-12);
    }

    #[test]
    fn erlang_b_matches_its_table() {
        assert!((erlang_b(1, 1.0) - 0.5).abs() < 1e-12);
        assert!((erlang_b(3, 2.0) - 4.0 / 19.0).abs() < 1e-12);
        assert_eq!(erlang_b(3, 0.0), 0.0);
        assert_eq!(erlang_b_real(3.0, 2.0), erlang_b(3, 2.0));
        let mid = erlang_b_real(3.5, 2.0);
        assert!(erlang_b(4, 2.0) < mid && mid < erlang_b(3, 2.0));
    }

    #[test]
    fn regular_arrivals_are_half_as_peaked_as_poisson() {
        assert!((peakedness(2.0) - 0.541).abs() < 1e-3);
        assert!((peakedness(100.0) - 0.5).abs() < 1e-3);
        assert!(peakedness(0.01) > 0.98);
    }

    #[test]
    fn a_concurrency_budget_binds_only_with_slow_retries() {
        let e = BudgetModel::ENVOY;
        let rates = |l| {
            Some(EdgeRates {
                first_per_sec: 200.0,
                attempt_latency_s: Some(l),
                poisson: false,
            })
        };
        // Fast failures (1 ms): 0.2 slots offered, 3 allowed: nearly all.
        assert!(allowance(&e, 1.0, 1.0, rates(0.001)) > 0.998);
        // Slow ones (100 ms): 20 slots offered, max(20% of 40, 3) = 8.
        assert!(allowance(&e, 1.0, 1.0, rates(0.1)) < 0.45);
        assert_eq!(allowance(&e, 1.0, 1.0, None), f64::INFINITY);
    }
}
