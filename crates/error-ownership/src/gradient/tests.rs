use std::time::Duration;

use proptest::prelude::*;

use super::{GradientConfig, GradientLimit, MAX_SAMPLES};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A controller past its first minRTT (`min_rtt`), its limit grown to about
/// `limit` by intervals at minRTT.
fn running(min_rtt: Duration, limit: u32) -> (GradientLimit, Duration) {
    let mut g = GradientLimit::new(GradientConfig::ENVOY);
    // Requests that started at 0, when the first measurement began.
    for _ in 0..50 {
        g.sample(min_rtt, min_rtt);
    }
    let mut now = min_rtt;
    while g.limit() < limit {
        now += ms(100);
        g.sample(now, min_rtt);
        g.update(now);
    }
    (g, now)
}

#[test]
fn the_limit_is_pinned_while_min_rtt_is_measured_and_again_each_interval() {
    let (mut g, mut now) = running(ms(10), 100);
    assert!(g.limit() >= 100);
    // 60 s after the first minRTT: measured again, the limit pinned.
    while now < Duration::from_secs(60) {
        now += ms(100);
        g.sample(now, ms(10));
        g.update(now);
    }
    assert_eq!(g.limit(), 3);
    // A request that started before the measurement is not sampled.
    g.sample(now + ms(1), ms(2));
    for _ in 0..49 {
        g.sample(now + ms(40), ms(40));
        assert_eq!(g.limit(), 3);
    }
    g.sample(now + ms(40), ms(40));
    assert_eq!(g.min_rtt(), Some(ms(40)));
    // The limit it had comes back, and moves from there.
    assert!(g.limit() >= 100);
}

#[test]
fn the_limit_falls_when_latency_exceeds_min_rtt_plus_the_buffer() {
    let (mut g, mut now) = running(ms(10), 200);
    let before = g.limit();
    let exact = f64::from(g.limit);
    // 20 ms against 12.5: a gradient of 0.625.
    now += ms(100);
    g.sample(now, ms(20));
    g.update(now);
    let l = 0.625 * exact;
    assert_eq!(g.limit(), (l + l.sqrt()) as u32);
    assert!(g.limit() < before);
    // Held there, it falls to where the headroom balances the cut:
    // 0.625 L + √(0.625 L) = L, L = 0.625 / 0.375² = 4.4.
    for _ in 0..100 {
        now += ms(100);
        g.sample(now, ms(20));
        g.update(now);
    }
    assert_eq!(g.limit(), 4);
}

#[test]
fn the_limit_grows_by_the_root_of_itself_at_min_rtt_plus_the_buffer() {
    let (mut g, mut now) = running(ms(8), 50);
    for _ in 0..200 {
        let before = g.limit();
        now += ms(100);
        g.sample(now, ms(10)); // exactly 8 + 25%: a gradient of 1
        g.update(now);
        // Envoy keeps the limit a whole number: the sum is truncated.
        let want = ((f64::from(before) + f64::from(before).sqrt()) as u32).min(1000);
        assert_eq!(g.limit(), want, "from {before}");
    }
    assert_eq!(g.limit(), 1000, "capped at max_concurrency_limit");
}

#[test]
fn an_interval_without_samples_keeps_the_limit() {
    let (mut g, mut now) = running(ms(10), 20);
    let before = g.limit();
    now += ms(100);
    g.update(now);
    assert_eq!(g.limit(), before);
}

proptest! {
    /// The gradient's two directions, and the bounds, for any minRTT,
    /// sample and limit: above minRTT + B the limit never grows by more
    /// than √ of the cut limit, and falls whenever the limit is above
    /// g / (1 − g)², where the headroom no longer outweighs the cut; at
    /// or under it, it grows by at least √limit (before the ceiling).
    #[test]
    fn the_gradient_moves_the_limit_as_envoy_says(
        min_rtt_us in 100u64..1_000_000,
        factor in 0.2f64..5.0,
        steps in 1usize..40,
    ) {
        let min_rtt = Duration::from_micros(min_rtt_us);
        let (mut g, mut now) = running(min_rtt, 3);
        let target = min_rtt.as_secs_f64() * 1.25;
        let sample = Duration::from_secs_f64(target * factor);
        for _ in 0..steps {
            let before = f64::from(g.limit());
            let exact = f64::from(g.limit);
            now += ms(100);
            g.sample(now, sample);
            g.update(now);
            let after = f64::from(g.limit);
            prop_assert!((3.0..=1000.0).contains(&after));
            let gradient = (1.0 / factor).clamp(0.5, 2.0);
            if sample.as_secs_f64() > target * (1.0 + 1e-9) {
                prop_assert!(gradient < 1.0);
                // (Not below the floor, min_concurrency.)
                if exact > gradient / (1.0 - gradient).powi(2) + 1e-6 && exact > 3.0 + 1e-6 {
                    prop_assert!(after < exact, "{exact} → {after} at gradient {gradient}");
                }
            } else if exact < 1000.0 {
                prop_assert!(
                    after >= (exact + exact.sqrt()).min(1000.0).floor() - 1e-6,
                    "{before} → {after} at gradient {gradient}"
                );
            }
        }
    }
}

#[test]
fn samples_are_bounded() {
    let (mut g, now) = running(ms(10), 3);
    for _ in 0..(MAX_SAMPLES * 3) {
        g.sample(now, ms(10));
    }
    assert!(g.samples.len() <= MAX_SAMPLES);
    assert!(g.samples.capacity() <= MAX_SAMPLES * 2);
}

/// Five intervals in a row that set the limit to its floor read as a
/// minRTT measured wrong: it is measured again, well before its interval.
#[test]
fn five_intervals_at_the_floor_measure_min_rtt_again() {
    let (mut g, mut now) = running(ms(10), 3);
    let interval = |g: &mut GradientLimit, now: &mut Duration| {
        *now += ms(100);
        g.sample(*now, ms(40)); // a gradient of 0.5: 1.5 + 1.2, the floor
        g.update(*now);
    };
    // The first interval leaves the floor at the floor: it counts from
    // there.
    for _ in 0..5 {
        interval(&mut g, &mut now);
        assert_eq!(g.min_rtt(), Some(ms(10)));
    }
    // Measuring now: 50 requests started after it began set minRTT.
    for _ in 0..50 {
        g.sample(now + ms(40), ms(40));
    }
    assert_eq!(g.min_rtt(), Some(ms(40)));
    assert!(now < Duration::from_secs(60));
}
