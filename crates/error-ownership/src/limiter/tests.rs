use std::time::Duration;

use proptest::prelude::*;

use super::{Aimd, Vegas};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn aimd_grows_by_one_when_in_use_and_backs_off_on_a_drop_or_a_timeout() {
    let mut a = Aimd::default();
    for _ in 0..80 {
        a.sample(ms(5), 200, false);
    }
    assert_eq!(a.limit(), 100);
    // Not in use (under half in flight): it stays.
    a.sample(ms(5), 49, false);
    assert_eq!(a.limit(), 100);
    a.sample(ms(5), 50, false);
    assert_eq!(a.limit(), 101);
    a.sample(ms(5), 50, true);
    assert_eq!(a.limit(), 90); // 101 × 0.9 = 90.9
    a.sample(Duration::from_secs(6), 50, false);
    assert_eq!(a.limit(), 81);
    for _ in 0..300 {
        a.sample(ms(5), 1000, false);
    }
    assert_eq!(a.limit(), 200, "at most maxLimit");
    for _ in 0..100 {
        a.sample(ms(5), 1000, true);
    }
    assert_eq!(a.limit(), 20, "at least minLimit");
}

/// rtt_noload 10 ms at a limit of 100 (log10 = 2): a sample of latency
/// `rtt` reads a queue of ⌈100 × (1 − 10 / rtt)⌉.
fn vegas_at_100() -> Vegas {
    let mut v = Vegas {
        limit: 100.0,
        ..Vegas::default()
    };
    v.sample(ms(10), 100, false);
    assert_eq!(v.rtt_noload(), Some(ms(10)));
    v
}

#[test]
fn vegas_moves_the_limit_by_the_queue_it_reads() {
    // (latency, in flight, dropped, the limit after, why)
    let cases = [
        (ms(10), 100, false, 112, "no queue: + 6 × 2"),
        (
            Duration::from_micros(10_300),
            100,
            false,
            102,
            "a queue of 3, under 3 × 2: + 2",
        ),
        (
            ms(11),
            100,
            false,
            100,
            "a queue of 9, between 6 and 12: it stays",
        ),
        (ms(20), 100, false, 98, "a queue of 50, over 6 × 2: − 2"),
        (ms(10), 100, true, 98, "a drop: − 2, whatever the latency"),
        (
            ms(10),
            49,
            false,
            100,
            "not in use: it stays, even with no queue",
        ),
    ];
    for (rtt, in_flight, dropped, want, why) in cases {
        let mut v = vegas_at_100();
        v.sample(rtt, in_flight, dropped);
        assert_eq!(v.limit(), want, "{why}");
    }
    // A faster sample only lowers rtt_noload.
    let mut v = vegas_at_100();
    v.sample(ms(8), 100, false);
    assert_eq!((v.limit(), v.rtt_noload()), (100, Some(ms(8))));
}

#[test]
fn vegas_probes_rtt_noload_afresh_every_probe_times_limit_samples() {
    let mut v = Vegas {
        limit: 10.0,
        probe: 3,
        max: 10,
        ..Vegas::default()
    };
    v.sample(ms(10), 10, false);
    // The service gets slower for good: the limit falls (a queue of
    // ⌈10 × (1 − 10 / 40)⌉ = 8 at 40 ms, over 6 × 1) to where the queue
    // reads 6 ...
    for _ in 0..5 {
        v.sample(ms(40), 10, false);
    }
    assert_eq!(v.limit(), 8);
    assert_eq!(v.rtt_noload(), Some(ms(10)));
    // ... until the probe, on the 3 × 8 = 24th sample, takes 40 ms as
    // the latency with no queue, and the limit grows back.
    let mut probed_at = None;
    for sample in 7..60 {
        v.sample(ms(40), 10, false);
        if probed_at.is_none() && v.rtt_noload() == Some(ms(40)) {
            probed_at = Some(sample);
        }
    }
    assert_eq!(probed_at, Some(24));
    assert_eq!(v.limit(), 10);
}

proptest! {
    /// Any run of samples keeps both limits within their bounds.
    #[test]
    fn the_limits_stay_within_their_bounds(
        samples in proptest::collection::vec((0u64..10_000, 0u32..3_000, any::<bool>()), 0..500),
        smoothing in 0.0f64..=1.0,
    ) {
        let mut a = Aimd::default();
        let mut v = Vegas { smoothing, ..Vegas::default() };
        for (us, in_flight, dropped) in samples {
            let rtt = Duration::from_micros(us);
            a.sample(rtt, in_flight, dropped);
            v.sample(rtt, in_flight, dropped);
            prop_assert!((20..=200).contains(&a.limit()));
            prop_assert!((1..=1000).contains(&v.limit()));
        }
    }
}
