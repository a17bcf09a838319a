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
mod tests;
