//! Outlier detection: a caller's passive health check of its callee's
//! hosts, as Envoy's `outlier_detection` (and Istio's DestinationRule
//! `outlierDetection` over it) runs it, one [`Outliers`] per edge.
//!
//! # Why it belongs beside retries
//!
//! A retry to another host heals a call that met one bad host; outlier
//! detection stops sending first attempts there at all. Both read the
//! same answers, and both misread the same thing: a healthy host in the
//! middle of a chain that passes up its callee's 5xx looks exactly like a
//! bad host. Under `count: all` (every 5xx counts, Envoy's rule) a
//! caller ejects every replica of a healthy middle service whose own
//! callee fails, and the outage looks like the middle tier's. Under
//! `count: claimed` only errors the host claims (or leaves unmarked)
//! count: ownership's claim header tells the caller which host is the bad
//! one, as it tells it which error to retry.
//!
//! # The rules (Envoy's, `source/common/upstream/outlier_detection_impl.cc`)
//!
//! * Each host keeps a streak of 5xx answers and a streak of gateway
//!   errors (502, 503, 504). An attempt with no answer (refused, reset,
//!   timed out) is a gateway error too: Envoy maps a failed connection to
//!   503 and a timeout to 504. Any other answer (a 2xx to 4xx, 429
//!   included) ends both streaks; a 5xx that is not a gateway error ends
//!   the gateway streak. Under [`Count::Claimed`] an error the host
//!   *unclaims* is not its failure: it ends both streaks as a success
//!   does (the host answered; the fault is below it), while a claimed or
//!   unmarked one counts.
//! * When a streak reaches `consecutive_5xx` (or `consecutive_gateway`;
//!   0 turns either rule off) the host is ejected **at once**, if the
//!   share of hosts ejected, counting it, stays within
//!   `max_ejection_percent`: `100 × (ejected + 1) / hosts ≤ max`. With
//!   Envoy's 10% a cluster of fewer than ten hosts ejects nothing. Envoy
//!   1.31's `always_eject_one_host` (off by default) lets one host be
//!   ejected whatever the share, which [`OutlierConfig::always_eject_one`]
//!   applies. (Envoy's documentation up to 1.10 said a first host was
//!   always ejectable; the code has long checked the share alone.)
//!   Either way the streak that fired starts again from 0.
//! * An ejected host is out for `base_ejection × k`, where `k` counts its
//!   ejections (capped at `max_ejection`, Envoy's `max_ejection_time`,
//!   300 s): `k` grows by one at each ejection while `base × k` is below
//!   `max + base`, and shrinks by one at each sweep at least an
//!   `interval` after the host came back, while it stays in service.
//! * Hosts come back only at a **sweep**, every `interval` from when the
//!   detector started: at the first sweep at or after the end of their
//!   time. A host back in service starts both streaks from 0.
//! * Answers from a host while it is ejected (attempts sent before, or
//!   sent anyway because every host is out) are counted but eject nothing.
//!
//! Envoy's jitter on the ejection time (`max_ejection_time_jitter`, 0 by
//! default), its success-rate and failure-percentage detectors and its
//! local-origin split are not modelled. What a balancer does when every
//! host is ejected (Envoy's panic mode) is the balancer's business: this
//! state only says who is out.
//!
//! The state is pure and bounded: one fixed slot per host, no allocation
//! after [`Outliers::new`], and the clock is passed in (a [`Duration`]
//! since any fixed epoch). Sweeps are not run by a timer: whether a host
//! is back, and by how much its `k` shrank, follow from the time.
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::Claim;
//! use error_ownership::outlier::{Answer, Count, OutlierConfig, Outliers};
//!
//! let s = Duration::from_secs;
//! let cfg = OutlierConfig { max_ejection_percent: 50.0, ..OutlierConfig::DEFAULT };
//! let mut o = Outliers::new(cfg, 4, Duration::ZERO);
//! for _ in 0..4 {
//!     assert_eq!(o.record(1, Answer::Status(500, Claim::Claimed), s(1)), None);
//! }
//! // The fifth error in a row ejects host 1 for 30 s, until the sweep at 40 s.
//! assert_eq!(o.record(1, Answer::Status(500, Claim::Claimed), s(1)), Some(s(40)));
//! assert!(o.is_ejected(1, s(39)) && !o.is_ejected(1, s(40)));
//! assert_eq!((o.ejected_now(s(20)), o.ejections(1)), (1, 1));
//!
//! // A host that only passes its callee's errors up unclaims them: under
//! // `count: claimed` it is never ejected.
//! let mut o = Outliers::new(OutlierConfig { count: Count::Claimed, ..cfg }, 4, Duration::ZERO);
//! for _ in 0..100 {
//!     assert_eq!(o.record(2, Answer::Status(500, Claim::Unclaimed), s(1)), None);
//! }
//! ```

use std::time::Duration;

use crate::Claim;

/// What counts as a host's failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Count {
    /// Every 5xx and every attempt with no answer (Envoy's rule).
    #[default]
    All,
    /// Only the errors the host claims or leaves unmarked, and every
    /// attempt with no answer: an error it unclaims passed through it.
    Claimed,
}

impl Count {
    /// `all` or `claimed`, as the topology file writes it.
    pub fn name(self) -> &'static str {
        match self {
            Count::All => "all",
            Count::Claimed => "claimed",
        }
    }

    /// Reads `all` or `claimed`.
    pub fn parse(word: &str) -> Option<Count> {
        match word {
            "all" => Some(Count::All),
            "claimed" => Some(Count::Claimed),
            _ => None,
        }
    }
}

/// An outlier detector's numbers: Envoy's `outlier_detection` fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutlierConfig {
    /// 5xx in a row that eject a host (`consecutive_5xx`; 0: off).
    pub consecutive_5xx: u32,
    /// Gateway errors in a row that eject a host
    /// (`consecutive_gateway_failure`; 0: off, Envoy's default, as
    /// Istio's `consecutiveGatewayErrors`).
    pub consecutive_gateway: u32,
    /// Time between sweeps, which bring ejected hosts back (`interval`).
    pub interval: Duration,
    /// A host's first ejection lasts this long, its k-th k times as long
    /// (`base_ejection_time`).
    pub base_ejection: Duration,
    /// The longest an ejection lasts (`max_ejection_time`; at least
    /// `base_ejection`).
    pub max_ejection: Duration,
    /// The largest share of the hosts ejected at once, in percent
    /// (`max_ejection_percent`, 0 to 100).
    pub max_ejection_percent: f64,
    /// Whether one host may be ejected whatever the share
    /// (`always_eject_one_host`, Envoy 1.31; off by default).
    pub always_eject_one: bool,
    /// What counts as a failure.
    pub count: Count,
}

impl OutlierConfig {
    /// Envoy's defaults, which Istio's DestinationRule keeps: 5 in a row,
    /// gateway errors off, a sweep every 10 s, 30 s × ejections (at most
    /// 300 s), at most 10% of the hosts, every 5xx counted.
    pub const DEFAULT: OutlierConfig = OutlierConfig {
        consecutive_5xx: 5,
        consecutive_gateway: 0,
        interval: Duration::from_secs(10),
        base_ejection: Duration::from_secs(30),
        max_ejection: Duration::from_secs(300),
        max_ejection_percent: 10.0,
        always_eject_one: false,
        count: Count::All,
    };

    /// How many of `hosts` may be ejected at once.
    pub fn ejectable(&self, hosts: u32) -> u32 {
        let by_share = (0..=hosts)
            .take_while(|&k| 100.0 * f64::from(k) <= self.max_ejection_percent * f64::from(hosts))
            .last()
            .unwrap_or(0);
        if self.always_eject_one && hosts > 0 {
            by_share.max(1)
        } else {
            by_share
        }
    }

    /// The longest an ejection lasts: `max_ejection`, never below
    /// `base_ejection` (Envoy refuses a maximum below the base).
    pub fn cap(&self) -> Duration {
        self.max_ejection.max(self.base_ejection)
    }

    /// How long the ejection of a host whose ejection multiplier is `k`
    /// (after its increment) lasts, before the sweep rounds it up.
    pub fn ejected_for(&self, k: u32) -> Duration {
        self.base_ejection.saturating_mul(k).min(self.cap())
    }

    /// The ejection multiplier after one more ejection of a host whose
    /// multiplier is `k` (Envoy's `ejectTimeBackoff`).
    pub fn next_multiplier(&self, k: u32) -> u32 {
        if self.base_ejection.saturating_mul(k) < self.cap() + self.base_ejection {
            k.saturating_add(1)
        } else {
            k
        }
    }
}

/// What one attempt on a host came back with, as the detector reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// An answer that is not a 5xx (a 429 included).
    Ok,
    /// A 5xx, with what its claim header said.
    Status(u16, Claim),
    /// No answer: refused, reset or timed out (a gateway error).
    NoResponse,
}

impl Answer {
    /// The answer of an attempt: its status (`None`: no answer) and, on
    /// an error, its claim.
    pub fn of(status: Option<u16>, claim: Claim) -> Answer {
        match status {
            None => Answer::NoResponse,
            Some(s) if s >= 500 => Answer::Status(s, claim),
            Some(_) => Answer::Ok,
        }
    }

    /// Whether it is one of the host's failures under `count`, and if so
    /// whether it is a gateway error.
    fn failure(self, count: Count) -> Option<bool> {
        match self {
            Answer::Ok => None,
            Answer::Status(_, Claim::Unclaimed) if count == Count::Claimed => None,
            Answer::Status(s, _) => Some(matches!(s, 502..=504)),
            Answer::NoResponse => Some(true),
        }
    }
}

/// One host's detector state.
#[derive(Debug, Clone, Copy, Default)]
struct Host {
    in_a_row: u32,
    gateway_in_a_row: u32,
    /// While ejected: the sweep that brings it back.
    until: Option<Duration>,
    /// The sweep that last brought it back.
    back_at: Option<Duration>,
    /// Envoy's ejection multiplier, as of `back_at`.
    multiplier: u32,
    ejections: u64,
}

/// One edge's outlier detector over its callee's hosts.
#[derive(Debug, Clone)]
pub struct Outliers {
    cfg: OutlierConfig,
    hosts: Vec<Host>,
    /// When it started: sweeps run every `interval` from here.
    start: Duration,
}

impl Outliers {
    /// A detector over `hosts` hosts (at least one), started at `now`:
    /// its sweeps run every `interval` from then, as Envoy's timer is
    /// armed when the cluster's detector is made.
    pub fn new(cfg: OutlierConfig, hosts: usize, now: Duration) -> Outliers {
        Outliers {
            cfg,
            hosts: vec![Host::default(); hosts.max(1)],
            start: now,
        }
    }

    /// Its numbers.
    pub fn config(&self) -> OutlierConfig {
        self.cfg
    }

    /// How many hosts it watches.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// The first sweep at or after `t` (`t` itself with no interval).
    pub fn sweep_at_or_after(&self, t: Duration) -> Duration {
        let i = self.cfg.interval.as_nanos();
        if i == 0 || t <= self.start {
            return t.max(self.start);
        }
        let since = (t - self.start).as_nanos();
        let k = since.div_ceil(i);
        self.start + nanos(k.saturating_mul(i))
    }

    /// Sweeps since the start, up to and including `t`.
    fn sweeps_by(&self, t: Duration) -> u128 {
        let i = self.cfg.interval.as_nanos();
        if i == 0 || t < self.start {
            return 0;
        }
        (t - self.start).as_nanos() / i
    }

    /// Whether `host` is ejected at `now`.
    pub fn is_ejected(&self, host: usize, now: Duration) -> bool {
        self.hosts
            .get(host)
            .and_then(|h| h.until)
            .is_some_and(|until| now < until)
    }

    /// When `host` comes back into service, if it is ejected at `now`.
    pub fn ejected_until(&self, host: usize, now: Duration) -> Option<Duration> {
        self.hosts
            .get(host)
            .and_then(|h| h.until)
            .filter(|&until| now < until)
    }

    /// How many hosts are ejected at `now`.
    pub fn ejected_now(&self, now: Duration) -> usize {
        (0..self.hosts.len())
            .filter(|&h| self.is_ejected(h, now))
            .count()
    }

    /// How many times `host` has been ejected.
    pub fn ejections(&self, host: usize) -> u64 {
        self.hosts.get(host).map_or(0, |h| h.ejections)
    }

    /// Records what an attempt on `host` came back with at `now` (times
    /// never going back). Returns when the host comes back if this answer
    /// ejected it.
    pub fn record(&mut self, host: usize, answer: Answer, now: Duration) -> Option<Duration> {
        if host >= self.hosts.len() {
            return None;
        }
        self.come_back(host, now);
        let h = &mut self.hosts[host];
        let Some(gateway) = answer.failure(self.cfg.count) else {
            h.in_a_row = 0;
            h.gateway_in_a_row = 0;
            return None;
        };
        h.in_a_row = h.in_a_row.saturating_add(1);
        h.gateway_in_a_row = if gateway {
            h.gateway_in_a_row.saturating_add(1)
        } else {
            0
        };
        let (n5, ng) = (self.cfg.consecutive_5xx, self.cfg.consecutive_gateway);
        // Envoy checks the gateway streak first; a host ejected by one
        // rule is not judged by the other.
        if ng > 0 && h.gateway_in_a_row >= ng && h.until.is_none() {
            let out = self.try_eject(host, now);
            self.hosts[host].gateway_in_a_row = 0;
            if out.is_some() {
                return out;
            }
        }
        let h = &self.hosts[host];
        if n5 > 0 && h.in_a_row >= n5 && h.until.is_none() {
            let out = self.try_eject(host, now);
            self.hosts[host].in_a_row = 0;
            return out;
        }
        None
    }

    /// Brings `host` back if the sweep that ends its time has run by
    /// `now`: its streaks start again.
    fn come_back(&mut self, host: usize, now: Duration) {
        let h = &mut self.hosts[host];
        if let Some(until) = h.until.filter(|&u| now >= u) {
            h.until = None;
            h.back_at = Some(until);
            h.in_a_row = 0;
            h.gateway_in_a_row = 0;
        }
    }

    /// Ejects `host` at `now` if the share allows it.
    fn try_eject(&mut self, host: usize, now: Duration) -> Option<Duration> {
        let n = u32::try_from(self.hosts.len()).unwrap_or(u32::MAX);
        let out = u32::try_from(self.ejected_now(now)).unwrap_or(u32::MAX);
        if out >= self.cfg.ejectable(n) {
            return None;
        }
        // The multiplier shrank by one at each sweep at least an interval
        // after the host came back (the sweep that brought it back does
        // not count).
        let decayed = match self.hosts[host].back_at {
            Some(back) => self.sweeps_by(now).saturating_sub(self.sweeps_by(back)),
            None => 0,
        };
        let k = self.hosts[host]
            .multiplier
            .saturating_sub(u32::try_from(decayed).unwrap_or(u32::MAX));
        let k = self.cfg.next_multiplier(k);
        let until = self.sweep_at_or_after(now + self.cfg.ejected_for(k));
        let h = &mut self.hosts[host];
        h.multiplier = k;
        h.ejections += 1;
        h.until = Some(until);
        Some(until)
    }
}

fn nanos(n: u128) -> Duration {
    let secs = u64::try_from(n / 1_000_000_000).unwrap_or(u64::MAX);
    Duration::new(secs, (n % 1_000_000_000) as u32)
}

#[cfg(test)]
mod tests {
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
}
