use std::time::Duration;

use proptest::prelude::*;

use super::{AdaptiveThrottle, ThrottleConfig, BUCKETS};

/// A small deterministic source of uniform numbers in [0, 1) (SplitMix64).
struct Uniform(u64);

impl Uniform {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_backend_that_accepts_everything_is_never_throttled() {
    let mut t = AdaptiveThrottle::new(ThrottleConfig::SRE);
    let mut u = Uniform(1);
    for i in 0..100_000 {
        assert!(t.try_pass(ms(i), u.next()), "request {i} was rejected");
        t.record(ms(i), true);
    }
}

#[test]
fn with_no_accepts_the_probability_approaches_one() {
    let mut t = AdaptiveThrottle::new(ThrottleConfig::SRE);
    for n in 0..10_000u64 {
        let p = t.rejection_probability(ms(n));
        assert_eq!(p, n as f64 / (n as f64 + 1.0), "after {n} requests");
        t.try_pass(ms(n), 1.0 - f64::EPSILON);
    }
    assert!(t.rejection_probability(ms(10_000)) > 0.9999);
}

/// With no accepts, the i-th request of a window passes with probability
/// 1 / (i + 1): of n requests the backend sees the harmonic number H(n),
/// about ln n + 0.58. At 200 requests a second over the book's two
/// minutes that is 10.7 of 24,000.
#[test]
fn with_no_accepts_the_backend_sees_a_handful_a_window() {
    let n = 24_000u64;
    let harmonic: f64 = (1..=n).map(|i| 1.0 / i as f64).sum();
    let runs = 400;
    let mut total = 0u64;
    let mut most = 0u64;
    for seed in 0..runs {
        let mut t = AdaptiveThrottle::new(ThrottleConfig::SRE);
        let mut u = Uniform(seed);
        // 200 a second: one every 5 ms, all inside one window.
        let sent = (0..n).filter(|i| t.try_pass(ms(i * 5), u.next())).count() as u64;
        total += sent;
        most = most.max(sent);
    }
    let mean = total as f64 / runs as f64;
    // The sum's standard deviation is about √H = 3.3; over 400 runs the
    // mean's is 0.16: within 0.8 is five of them.
    assert!(
        (mean - harmonic).abs() < 0.8,
        "mean {mean:.2} sent of {n}, H(n) = {harmonic:.2}"
    );
    assert!(most < 40, "one run sent {most} of {n}");
}

/// The book's equilibrium: a backend that accepts its capacity C a second
/// and rejects the rest receives about K × C once the client throttles,
/// whatever it is offered above that.
#[test]
fn an_overloaded_backend_receives_about_k_times_what_it_accepts() {
    for (offered, capacity) in [(1_000u64, 100u64), (1_000, 300), (500, 50)] {
        let config = ThrottleConfig {
            k: 2.0,
            window: Duration::from_secs(10),
        };
        let mut t = AdaptiveThrottle::new(config);
        let mut u = Uniform(offered * capacity);
        let step = 1_000_000 / offered; // µs between requests
        let (mut received, mut accepted) = (0u64, 0u64);
        let mut this_second = (0u64, 0u64);
        let seconds = 120;
        for i in 0..offered * seconds {
            let now = Duration::from_micros(i * step);
            let second = now.as_secs();
            if second != this_second.0 {
                this_second = (second, 0);
            }
            if t.try_pass(now, u.next()) {
                let accept = this_second.1 < capacity;
                this_second.1 += u64::from(accept);
                t.record(now, accept);
                // The last minute: the steady state.
                if second >= seconds - 60 {
                    received += 1;
                    accepted += u64::from(accept);
                }
            }
        }
        let ratio = received as f64 / accepted as f64;
        assert!(
            (ratio - 2.0).abs() < 0.1,
            "offered {offered}/s to a capacity of {capacity}/s: received {received}, \
             accepted {accepted} in the last minute ({ratio:.3}×)"
        );
        assert_eq!(accepted, capacity * 60, "the backend is kept busy");
    }
}

/// Below K × its capacity the client never throttles: a backend accepting
/// 60% of what it gets is never spared a request at K = 2 once the window
/// holds enough of both.
#[test]
fn a_backend_that_accepts_over_one_in_k_is_sent_everything() {
    let mut t = AdaptiveThrottle::new(ThrottleConfig::SRE);
    let mut u = Uniform(7);
    let mut rejected = 0;
    for i in 0..200_000u64 {
        if t.try_pass(ms(i), u.next()) {
            t.record(ms(i), u.next() < 0.6);
        } else if i > 1_000 {
            rejected += 1;
        }
    }
    assert!(rejected < 20, "{rejected} rejected after the first second");
}

#[test]
fn the_window_forgets_and_time_going_back_is_the_newest_bucket() {
    let config = ThrottleConfig {
        k: 2.0,
        window: Duration::from_secs(64),
    };
    let mut t = AdaptiveThrottle::new(config);
    for i in 0..64u64 {
        t.try_pass(Duration::from_secs(i), 0.0);
    }
    assert_eq!(t.counts(Duration::from_secs(63)), (64, 0));
    // One bucket a second: at 64 s the first has left.
    assert_eq!(t.counts(Duration::from_secs(64)), (63, 0));
    // Back in time: counted in the newest bucket, not lost, no panic.
    t.try_pass(Duration::from_secs(1), 0.0);
    t.record(Duration::ZERO, true);
    assert_eq!(t.counts(Duration::from_secs(64)), (64, 1));
    // A jump far ahead empties it.
    assert_eq!(t.counts(Duration::from_secs(100_000)), (0, 0));
    assert_eq!(t.rejection_probability(Duration::from_secs(100_000)), 0.0);
}

#[derive(Debug, Clone)]
enum Op {
    Ask { at: u64, u: f64 },
    Answer { at: u64, accepted: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..5_000, 0.0f64..1.0).prop_map(|(at, u)| Op::Ask { at, u }),
        (0u64..5_000, any::<bool>()).prop_map(|(at, accepted)| Op::Answer { at, accepted }),
    ]
}

proptest! {
    /// Against a log of every event: the counts are those of the events
    /// in the window's buckets, the probability is the formula over them
    /// and in [0, 1), and a request passes exactly when `u` ≥ it.
    #[test]
    fn the_counts_are_the_windows_events(
        window_ms in 1u64..2_000,
        k in 0.5f64..4.0,
        steps in proptest::collection::vec((0u64..50, op()), 0..400),
    ) {
        let config = ThrottleConfig { k, window: ms(window_ms) };
        let mut t = AdaptiveThrottle::new(config);
        let width = (ms(window_ms).as_nanos() / BUCKETS as u128).max(1);
        let mut clock = 0u64;
        let mut newest = 0u128;
        // (bucket, is a request) of every event, in the bucket it was
        // counted in.
        let mut log: Vec<(u128, bool)> = vec![];
        for (advance, op) in steps {
            clock += advance;
            let (at, is_request) = match op {
                Op::Ask { at, .. } => (clock.saturating_sub(at % 3), true),
                Op::Answer { at, accepted } => {
                    if !accepted {
                        t.record(ms(clock.saturating_sub(at % 3)), false);
                        continue;
                    }
                    (clock.saturating_sub(at % 3), false)
                }
            };
            let now = ms(at);
            newest = newest.max(now.as_nanos() / width);
            let live = |b: u128| b + BUCKETS as u128 > newest;
            let requests = log.iter().filter(|(b, r)| *r && live(*b)).count() as u64;
            let accepts = log.iter().filter(|(b, r)| !*r && live(*b)).count() as u64;
            match op {
                Op::Ask { u, .. } => {
                    let p = ((requests as f64 - k * accepts as f64) / (requests as f64 + 1.0)).max(0.0);
                    prop_assert!((0.0..1.0).contains(&p));
                    prop_assert_eq!(t.rejection_probability(now), p);
                    prop_assert_eq!(t.try_pass(now, u), u >= p);
                }
                Op::Answer { .. } => t.record(now, true),
            }
            log.push((newest, is_request));
            let requests = log.iter().filter(|(b, r)| *r && live(*b)).count() as u64;
            let accepts = log.iter().filter(|(b, r)| !*r && live(*b)).count() as u64;
            prop_assert_eq!(t.counts(now), (requests, accepts));
        }
    }
}
