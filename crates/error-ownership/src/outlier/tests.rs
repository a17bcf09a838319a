use super::*;
use proptest::prelude::*;

const S: fn(u64) -> Duration = Duration::from_secs;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const ERR: Answer = Answer::Status(500, Claim::Claimed);

fn all(pct: f64) -> OutlierConfig {
    OutlierConfig {
        max_ejection_percent: pct,
        ..OutlierConfig::DEFAULT
    }
}

#[test]
fn defaults_are_envoys() {
    let d = OutlierConfig::DEFAULT;
    assert_eq!(
        (
            d.consecutive_5xx,
            d.consecutive_gateway,
            d.interval,
            d.base_ejection
        ),
        (5, 0, S(10), S(30))
    );
    assert_eq!((d.max_ejection, d.max_ejection_percent), (S(300), 10.0));
    assert_eq!((d.count, d.always_eject_one), (Count::All, false));
    for w in ["all", "claimed"] {
        assert_eq!(Count::parse(w).unwrap().name(), w);
    }
    assert_eq!(Count::parse("some"), None);
}

#[test]
fn the_share_caps_how_many_are_out() {
    // Envoy's 10%: nothing out of fewer than ten hosts.
    let d = OutlierConfig::DEFAULT;
    assert_eq!([5, 9, 10, 19, 20].map(|n| d.ejectable(n)), [0, 0, 1, 1, 2]);
    let one = OutlierConfig {
        always_eject_one: true,
        ..d
    };
    assert_eq!([1, 5, 20].map(|n| one.ejectable(n)), [1, 1, 2]);
    assert_eq!([2, 3, 4].map(|n| all(50.0).ejectable(n)), [1, 1, 2]);
    assert_eq!([1, 3].map(|n| all(100.0).ejectable(n)), [1, 3]);
    assert_eq!(all(0.0).ejectable(10), 0);
}

#[test]
fn the_fifth_error_in_a_row_ejects_and_a_success_breaks_the_streak() {
    let mut o = Outliers::new(all(100.0), 3, Duration::ZERO);
    for a in [ERR, ERR, ERR, ERR, Answer::Ok, ERR, ERR, ERR, ERR] {
        assert_eq!(o.record(0, a, S(1)), None);
    }
    assert!(!o.is_ejected(0, S(1)));
    // 30 s from 1 s ends at 31 s: the sweep at 40 s brings it back.
    assert_eq!(o.record(0, ERR, S(1)), Some(S(40)));
    assert_eq!(o.ejected_until(0, S(39)), Some(S(40)));
    assert_eq!(o.ejected_until(0, S(40)), None);
    assert_eq!((o.ejected_now(S(2)), o.ejected_now(S(40))), (1, 0));
    // A 429 and a 404 are not 5xx: they break a streak.
    for a in [ERR, ERR, ERR, ERR, Answer::of(Some(429), Claim::Claimed)] {
        o.record(1, a, S(2));
    }
    for _ in 0..4 {
        assert_eq!(o.record(1, ERR, S(2)), None);
    }
    assert!(o.record(1, ERR, S(2)).is_some());
}

#[test]
fn errors_while_ejected_eject_nothing_and_a_host_back_starts_afresh() {
    let mut o = Outliers::new(all(100.0), 2, Duration::ZERO);
    for _ in 0..5 {
        o.record(0, ERR, S(0));
    }
    assert_eq!(o.ejections(0), 1);
    for _ in 0..20 {
        assert_eq!(o.record(0, ERR, S(5)), None);
    }
    // Back at the sweep at 30 s; four errors are not five.
    for _ in 0..4 {
        assert_eq!(o.record(0, ERR, S(31)), None);
    }
    assert!(!o.is_ejected(0, S(31)));
    assert!(o.record(0, ERR, S(31)).is_some());
    assert_eq!(o.ejections(0), 2);
}

#[test]
fn each_ejection_lasts_longer_up_to_the_cap_and_hosts_come_back_at_sweeps() {
    let cfg = OutlierConfig {
        interval: S(1),
        base_ejection: S(2),
        max_ejection: S(5),
        ..all(100.0)
    };
    let mut o = Outliers::new(cfg, 2, ms(300));
    // Sweeps at 1.3, 2.3, ... The first: 2 s from 0.5 s = 2.5 s, so
    // back at the sweep at 3.3 s.
    let mut now = ms(500);
    let mut spans = vec![];
    for _ in 0..5 {
        let back = (0..5).find_map(|_| o.record(1, ERR, now)).unwrap();
        spans.push((back - now).as_millis());
        // It fails again at once on its return.
        now = back;
    }
    // 2 s, then 4 s, then the 5 s cap, each rounded up to a sweep (the
    // first from 0.5 s, the rest from a sweep, so exact).
    assert_eq!(spans, [2800, 4000, 5000, 5000, 5000]);
    assert_eq!(o.ejections(1), 5);
}

#[test]
fn the_multiplier_shrinks_while_the_host_stays_healthy() {
    let cfg = OutlierConfig {
        interval: S(1),
        base_ejection: S(2),
        ..all(100.0)
    };
    let eject = |o: &mut Outliers, now| (0..5).find_map(|_| o.record(0, ERR, now)).unwrap();
    let mut o = Outliers::new(cfg, 2, Duration::ZERO);
    assert_eq!(eject(&mut o, S(0)), S(2)); // k = 1
    assert_eq!(eject(&mut o, S(2)), S(6)); // k = 2: back at once, out for 4 s
                                           // Back at 6 s. The sweeps at 7 s and 8 s are an interval or more
                                           // after it: k drops to 0, so the next ejection is 2 s long again.
    assert_eq!(eject(&mut o, ms(8500)), S(11));
    // Back at 11 s; the sweep at 12 s takes k from 1 to 0 before 12.5 s.
    assert_eq!(eject(&mut o, ms(12_500)), S(15));
    // Back at 15 s, failing again before the next sweep: k = 2.
    assert_eq!(eject(&mut o, ms(15_500)), S(20));
}

#[test]
fn the_gateway_rule_counts_502_to_504_and_no_answer() {
    let cfg = OutlierConfig {
        consecutive_5xx: 0,
        consecutive_gateway: 3,
        ..all(100.0)
    };
    let mut o = Outliers::new(cfg, 2, Duration::ZERO);
    let g = |s| Answer::of(Some(s), Claim::Missing);
    // A 500 breaks the gateway streak.
    for a in [g(502), g(503), g(500), g(504), Answer::NoResponse] {
        assert_eq!(o.record(0, a, S(0)), None);
    }
    assert!(o.record(0, g(503), S(0)).is_some());
    // With the 5xx rule on too, either ejects.
    let both = OutlierConfig {
        consecutive_5xx: 4,
        ..cfg
    };
    let mut o = Outliers::new(both, 2, Duration::ZERO);
    for a in [g(500), g(500), g(500)] {
        assert_eq!(o.record(0, a, S(0)), None);
    }
    assert!(o.record(0, g(500), S(0)).is_some());
}

#[test]
fn a_blocked_ejection_starts_the_streak_again() {
    // Two of four hosts at most.
    let mut o = Outliers::new(all(50.0), 4, Duration::ZERO);
    for h in 0..2 {
        for _ in 0..5 {
            o.record(h, ERR, S(0));
        }
    }
    assert_eq!(o.ejected_now(S(0)), 2);
    for _ in 0..5 {
        assert_eq!(o.record(2, ERR, S(1)), None);
    }
    assert_eq!(o.ejections(2), 0);
    // Host 0 is back at 30 s, host 2 has four in a row since the block:
    // its fifth ejects it.
    for _ in 0..4 {
        o.record(2, ERR, S(31));
    }
    assert!(o.record(2, ERR, S(31)).is_some());
}

#[test]
fn under_count_claimed_unclaimed_errors_are_not_the_hosts() {
    let cfg = OutlierConfig {
        count: Count::Claimed,
        ..all(100.0)
    };
    let mut o = Outliers::new(cfg, 2, Duration::ZERO);
    let un = Answer::Status(502, Claim::Unclaimed);
    // Four claimed, an unclaimed one (a success to the detector), four more.
    for a in [ERR, ERR, ERR, ERR, un, ERR, ERR, ERR, ERR] {
        assert_eq!(o.record(0, a, S(0)), None);
    }
    // Unmarked errors and no answer count.
    assert!(o
        .record(0, Answer::Status(503, Claim::Missing), S(0))
        .is_some());
    for _ in 0..4 {
        o.record(1, Answer::NoResponse, S(0));
    }
    assert!(o.record(1, Answer::NoResponse, S(0)).is_some());
    // Under count: all the same unclaimed errors eject.
    let mut o = Outliers::new(all(100.0), 2, Duration::ZERO);
    for _ in 0..4 {
        assert_eq!(o.record(0, un, S(0)), None);
    }
    assert!(o.record(0, un, S(0)).is_some());
}

#[test]
fn always_eject_one_ejects_one_host_of_few() {
    let one = OutlierConfig {
        always_eject_one: true,
        ..OutlierConfig::DEFAULT
    };
    let mut o = Outliers::new(one, 3, Duration::ZERO);
    for h in 0..2 {
        for _ in 0..5 {
            o.record(h, ERR, S(0));
        }
    }
    assert_eq!((o.ejections(0), o.ejections(1)), (1, 0));
    let mut o = Outliers::new(OutlierConfig::DEFAULT, 3, Duration::ZERO);
    for _ in 0..50 {
        assert_eq!(o.record(0, ERR, S(0)), None);
    }
}

#[test]
fn off_rules_and_unknown_hosts_do_nothing() {
    let off = OutlierConfig {
        consecutive_5xx: 0,
        ..all(100.0)
    };
    let mut o = Outliers::new(off, 2, Duration::ZERO);
    for _ in 0..100 {
        assert_eq!(o.record(0, Answer::NoResponse, S(0)), None);
    }
    assert_eq!(o.record(7, ERR, S(0)), None);
    assert!(!o.is_ejected(7, S(0)));
    assert_eq!(o.ejections(7), 0);
}

#[test]
fn sweeps_run_from_the_start() {
    let o = Outliers::new(all(100.0), 1, ms(250));
    assert_eq!(o.sweep_at_or_after(ms(100)), ms(250));
    assert_eq!(o.sweep_at_or_after(ms(250)), ms(250));
    assert_eq!(o.sweep_at_or_after(ms(251)), ms(10_250));
    assert_eq!(o.sweep_at_or_after(ms(20_250)), ms(20_250));
    let none = Outliers::new(
        OutlierConfig {
            interval: Duration::ZERO,
            ..all(100.0)
        },
        1,
        Duration::ZERO,
    );
    assert_eq!(none.sweep_at_or_after(ms(1234)), ms(1234));
}

proptest! {
    /// Whatever the answers, no more hosts are out than the share
    /// allows, an ejection never ends before `base_ejection` nor
    /// lasts past the cap and an interval, and it ends on a sweep.
    #[test]
    fn the_share_and_the_times_hold(
        hosts in 1usize..8,
        pct in 0.0f64..=100.0,
        ops in prop::collection::vec((0usize..8, 0u8..4, 0u64..300), 1..400),
    ) {
        let cfg = OutlierConfig {
            consecutive_5xx: 3,
            consecutive_gateway: 2,
            interval: ms(1000),
            base_ejection: ms(1500),
            max_ejection: ms(4000),
            max_ejection_percent: pct,
            always_eject_one: false,
            count: Count::All,
        };
        let start = ms(123);
        let mut o = Outliers::new(cfg, hosts, start);
        let cap = cfg.ejectable(hosts as u32) as usize;
        let mut now = start;
        for (h, a, dt) in ops {
            now += ms(dt);
            let answer = match a {
                0 => Answer::Ok,
                1 => Answer::Status(500, Claim::Claimed),
                2 => Answer::Status(503, Claim::Missing),
                _ => Answer::NoResponse,
            };
            if let Some(back) = o.record(h % hosts, answer, now) {
                prop_assert!(back >= now + ms(1500));
                prop_assert!(back < now + ms(5000));
                prop_assert_eq!((back - start).as_millis() % 1000, 0);
            }
            prop_assert!(o.ejected_now(now) <= cap);
        }
    }
}
