//! Load balancing over a callee's replicas (SPEC section 11): which
//! replica each attempt of a call goes to.
//!
//! Each edge balances on its own, as a client-side balancer in the caller
//! does: `round-robin` gives each call's first attempt the next replica in
//! turn and draws a retry's replica (so retries do not shift the rotation:
//! every replica gets 1/N of the first attempts, and bad replicas side by
//! side are not met together), `random` draws one,
//! `p2c` draws two and takes the one with fewer of this edge's attempts in
//! flight. With `retry_other_host` a retry skips the replicas its call
//! already tried while one is left, as Envoy's `previous_hosts` retry
//! predicate does; without it a retry may land on the host that just
//! failed it.
//!
//! Under outlier detection (SPEC section 17) no attempt goes to a replica
//! the edge has ejected: round-robin's rotation steps over it (the others
//! share its turns evenly), a draw draws among the rest. The edge's
//! detector ([`super::edge::EdgeState`]) decides who is out and until when
//! and tells the balancer ([`Balancer::eject`]); a pick reads that
//! without a lock, and an ejection ends with time, on its own. When every
//! replica is out the balancer sends to all of them as if none were:
//! Envoy's panic mode, which its load balancer enters when fewer than
//! `healthy_panic_threshold` (50%) of the hosts are healthy. The lab
//! enters it only when none is, so that while one replica is left,
//! ejected ones get no attempt. (Istio sets the threshold to 0 by
//! default, `minHealthPercent`, so there a call with every host out
//! fails with 503 "no healthy upstream" instead.)

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use error_ownership::policy::Lb;

/// Replicas a call remembers in a bit set; past these, in a list.
const REMEMBERED: usize = 64;

/// Draws a replica uniformly; a retry with `retry_other_host` draws again
/// this many times before it scans for an untried one.
const REDRAWS: usize = 16;

/// One edge's balancer over its callee's replicas.
#[derive(Debug)]
pub struct Balancer {
    urls: Vec<String>,
    lb: AtomicU8,
    other_host: AtomicBool,
    next: AtomicUsize,
    in_flight: Box<[AtomicU32]>,
    /// Per replica: until when it is ejected, in nanoseconds on the
    /// balancer's clock (0: never ejected).
    out_until: Box<[AtomicU64]>,
    /// The latest of `out_until`: past it no replica is out, and a pick
    /// reads no clock.
    any_out_until: AtomicU64,
    /// Per replica: how many times it was ejected, ever.
    ejections: Box<[AtomicU64]>,
    /// The zero of the balancer's clock ([`Balancer::now`]).
    epoch: Instant,
}

/// The replicas one call has tried: a bit set for the first
/// [`REMEMBERED`], a list past them (allocated only for such a replica).
#[derive(Debug, Default, Clone)]
pub struct Tried {
    mask: u64,
    beyond: Vec<usize>,
    count: usize,
}

impl Tried {
    fn has(&self, r: usize) -> bool {
        if r < REMEMBERED {
            self.mask & (1 << r) != 0
        } else {
            self.beyond.contains(&r)
        }
    }

    /// Remembers replica `r`.
    pub fn add(&mut self, r: usize) {
        if self.has(r) {
            return;
        }
        if r < REMEMBERED {
            self.mask |= 1 << r;
        } else {
            self.beyond.push(r);
        }
        self.count += 1;
    }

    /// Whether it has tried none.
    fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The replicas in this set or in `other`.
    fn union(&self, other: &Tried) -> Tried {
        let mut u = self.clone();
        u.count = 0;
        u.mask |= other.mask;
        for &r in &other.beyond {
            if !u.beyond.contains(&r) {
                u.beyond.push(r);
            }
        }
        u.count = u.mask.count_ones() as usize + u.beyond.len();
        u
    }
}

/// An attempt in flight on a replica: counted for `p2c` until dropped.
#[derive(Debug)]
pub struct Picked<'a> {
    /// The replica.
    pub replica: usize,
    /// Its URL.
    pub url: &'a str,
    in_flight: &'a AtomicU32,
}

impl Drop for Picked<'_> {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

fn lb_code(lb: Lb) -> u8 {
    match lb {
        Lb::RoundRobin => 0,
        Lb::Random => 1,
        Lb::P2c => 2,
    }
}

impl Balancer {
    /// A balancer over `urls` (one per replica; at least one).
    pub fn new(urls: Vec<String>, lb: Lb, retry_other_host: bool) -> Balancer {
        let urls = if urls.is_empty() {
            vec![String::new()]
        } else {
            urls
        };
        Balancer {
            in_flight: urls.iter().map(|_| AtomicU32::new(0)).collect(),
            out_until: urls.iter().map(|_| AtomicU64::new(0)).collect(),
            any_out_until: AtomicU64::new(0),
            ejections: urls.iter().map(|_| AtomicU64::new(0)).collect(),
            epoch: Instant::now(),
            urls,
            lb: AtomicU8::new(lb_code(lb)),
            other_host: AtomicBool::new(retry_other_host),
            next: AtomicUsize::new(0),
        }
    }

    /// Replica 0's URL (the only one of a service without replicas).
    pub fn first_url(&self) -> &str {
        &self.urls[0]
    }

    /// How many replicas it balances over.
    pub fn replicas(&self) -> usize {
        self.urls.len()
    }

    /// Changes how it balances.
    pub fn set(&self, lb: Lb, retry_other_host: bool) {
        self.lb.store(lb_code(lb), Ordering::Relaxed);
        self.other_host.store(retry_other_host, Ordering::Relaxed);
    }

    /// How it balances now.
    pub fn lb(&self) -> Lb {
        match self.lb.load(Ordering::Relaxed) {
            1 => Lb::Random,
            2 => Lb::P2c,
            _ => Lb::RoundRobin,
        }
    }

    /// Time on the balancer's clock: what its ejections are dated in.
    pub fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    /// Takes replica `r` out until `until` on the balancer's clock (the
    /// edge's outlier detection ejected it).
    pub fn eject(&self, r: usize, until: Duration) {
        let Some(slot) = self.out_until.get(r) else {
            return;
        };
        let ns = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX).max(1);
        slot.store(ns, Ordering::Relaxed);
        self.any_out_until.fetch_max(ns, Ordering::Relaxed);
        self.ejections[r].fetch_add(1, Ordering::Relaxed);
    }

    /// Brings every replica back (the edge's outlier detection was
    /// replaced); their ejection counts stay.
    pub fn clear_ejections(&self) {
        for u in &self.out_until {
            u.store(0, Ordering::Relaxed);
        }
        self.any_out_until.store(0, Ordering::Relaxed);
    }

    /// Per replica: whether it is ejected at `now` (on the balancer's
    /// clock), and how many times it was ejected.
    pub fn outliers(&self, now: Duration) -> impl Iterator<Item = (bool, u64)> + '_ {
        let ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        self.out_until
            .iter()
            .zip(self.ejections.iter())
            .map(move |(u, e)| (ns < u.load(Ordering::Relaxed), e.load(Ordering::Relaxed)))
    }

    /// The replicas out now, when some are and not all of them (all out
    /// is as none out: the panic mode).
    fn ejected_now(&self) -> Option<Tried> {
        let latest = self.any_out_until.load(Ordering::Relaxed);
        if latest == 0 {
            return None;
        }
        let now = u64::try_from(self.now().as_nanos()).unwrap_or(u64::MAX);
        if now >= latest {
            return None;
        }
        let mut out = Tried::default();
        for (r, u) in self.out_until.iter().enumerate() {
            if now < u.load(Ordering::Relaxed) {
                out.add(r);
            }
        }
        (out.count > 0 && out.count < self.urls.len()).then_some(out)
    }

    /// Picks the replica for a call's next attempt, given those it has
    /// `tried`; `draw(n)` is a uniform draw from `0..n`.
    pub fn pick(&self, tried: &Tried, draw: &mut dyn FnMut(usize) -> usize) -> Picked<'_> {
        let r = self.choose(tried, draw);
        let in_flight = &self.in_flight[r];
        in_flight.fetch_add(1, Ordering::Relaxed);
        Picked {
            replica: r,
            url: &self.urls[r],
            in_flight,
        }
    }

    fn choose(&self, tried: &Tried, draw: &mut dyn FnMut(usize) -> usize) -> usize {
        let n = self.urls.len();
        if n == 1 {
            return 0;
        }
        // The replicas ejected, never to be picked; then, for a retry,
        // those it tried while one is left (every replica tried: any
        // will do).
        let ejected = self.ejected_now().unwrap_or_default();
        let with_tried;
        let tried_or_out = if ejected.is_empty() {
            tried
        } else {
            with_tried = tried.union(&ejected);
            &with_tried
        };
        let avoid = if self.other_host.load(Ordering::Relaxed) && tried_or_out.count < n {
            tried_or_out
        } else {
            &ejected
        };
        // A uniform draw among the replicas not avoided: rejection, then
        // (rarely) a scan from a drawn start; `avoid` leaves one at least.
        let untried = |avoid: &Tried, draw: &mut dyn FnMut(usize) -> usize| {
            for _ in 0..REDRAWS {
                let r = draw(n);
                if !avoid.has(r) {
                    return r;
                }
            }
            let start = draw(n);
            (0..n)
                .map(|k| (start + k) % n)
                .find(|&r| !avoid.has(r))
                .unwrap_or(start)
        };
        match self.lb() {
            Lb::RoundRobin if tried.is_empty() => {
                // The rotation steps over an ejected replica: the others
                // share its turns evenly.
                let mut r = self.next.fetch_add(1, Ordering::Relaxed) % n;
                for _ in 1..n {
                    if !ejected.has(r) {
                        break;
                    }
                    r = self.next.fetch_add(1, Ordering::Relaxed) % n;
                }
                r
            }
            Lb::RoundRobin | Lb::Random => untried(avoid, draw),
            Lb::P2c => {
                let a = untried(avoid, draw);
                // The second choice differs from the first while another
                // replica is left to choose.
                let mut without_a = avoid.clone();
                without_a.add(a);
                let b = if without_a.count < n {
                    untried(&without_a, draw)
                } else {
                    a
                };
                let load = |r: usize| self.in_flight[r].load(Ordering::Relaxed);
                if load(b) < load(a) {
                    b
                } else {
                    a
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{RngExt, SeedableRng};

    fn urls(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("http://127.0.0.1:{}/", 9000 + i))
            .collect()
    }

    #[test]
    fn round_robin_takes_each_replica_in_turn() {
        let b = Balancer::new(urls(3), Lb::RoundRobin, true);
        let mut never = |_: usize| unreachable!("round-robin draws nothing");
        let got: Vec<usize> = (0..6)
            .map(|_| b.pick(&Tried::default(), &mut never).replica)
            .collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn a_round_robin_retry_leaves_the_rotation_alone() {
        let b = Balancer::new(urls(4), Lb::RoundRobin, true);
        let first = b.pick(&Tried::default(), &mut |_| 0).replica;
        let mut tried = Tried::default();
        tried.add(first);
        // The retry is drawn (here the draw says replica 3) ...
        assert_eq!(b.pick(&tried, &mut |_| 3).replica, 3);
        // ... and the next call's first attempt is the rotation's next, as
        // if the retry had not been made.
        assert_eq!(
            b.pick(&Tried::default(), &mut |_| 0).replica,
            (first + 1) % 4
        );
    }

    #[test]
    fn past_sixty_four_replicas_a_retry_still_avoids_every_one_tried() {
        let mut rng = SmallRng::seed_from_u64(5);
        let mut draw = |n: usize| rng.random_range(0..n);
        let b = Balancer::new(urls(100), Lb::Random, true);
        let mut tried = Tried::default();
        for _ in 0..100 {
            let r = b.pick(&tried, &mut draw).replica;
            assert!(!tried.has(r), "went back to {r}");
            tried.add(r);
        }
        assert_eq!(tried.count, 100);
    }

    #[test]
    fn a_retry_avoids_the_replicas_tried_while_one_is_left() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut draw = |n: usize| rng.random_range(0..n);
        for lb in [Lb::RoundRobin, Lb::Random, Lb::P2c] {
            let b = Balancer::new(urls(4), lb, true);
            for _ in 0..200 {
                let mut tried = Tried::default();
                let mut seen = Vec::new();
                for _ in 0..4 {
                    let r = b.pick(&tried, &mut draw).replica;
                    assert!(!seen.contains(&r), "{lb:?} went back to {r}: {seen:?}");
                    seen.push(r);
                    tried.add(r);
                }
                // All four tried: a fifth attempt goes anywhere.
                assert!(b.pick(&tried, &mut draw).replica < 4);
            }
        }
    }

    #[test]
    fn without_retry_other_host_a_random_retry_returns_to_the_host_by_chance() {
        let mut rng = SmallRng::seed_from_u64(11);
        let mut draw = |n: usize| rng.random_range(0..n);
        let b = Balancer::new(urls(10), Lb::Random, false);
        let mut tried = Tried::default();
        tried.add(3);
        let back = (0..20_000)
            .filter(|_| b.pick(&tried, &mut draw).replica == 3)
            .count();
        // 1 in 10: 2,000 ± 3σ (σ = 42).
        assert!((1_870..=2_130).contains(&back), "{back}");
    }

    #[test]
    fn p2c_prefers_the_replica_with_fewer_attempts_in_flight() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut draw = |n: usize| rng.random_range(0..n);
        let b = Balancer::new(urls(2), Lb::P2c, true);
        // Replica 0 holds five attempts open: every pick goes to 1.
        let held: Vec<_> = (0..5)
            .map(|_| {
                let mut t = Tried::default();
                t.add(1);
                b.pick(&t, &mut draw)
            })
            .collect();
        assert!(held.iter().all(|p| p.replica == 0));
        for _ in 0..100 {
            assert_eq!(b.pick(&Tried::default(), &mut draw).replica, 1);
        }
        drop(held);
        assert_eq!(b.in_flight[0].load(Ordering::Relaxed), 0);
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn an_ejected_replica_gets_no_attempt_whatever_the_balancing() {
        let mut rng = SmallRng::seed_from_u64(13);
        let mut draw = |n: usize| rng.random_range(0..n);
        for lb in [Lb::RoundRobin, Lb::Random, Lb::P2c] {
            let b = Balancer::new(urls(5), lb, true);
            b.eject(2, b.now() + HOUR);
            let mut firsts = [0u32; 5];
            for _ in 0..4000 {
                firsts[b.pick(&Tried::default(), &mut draw).replica] += 1;
                // A retry after replica 0 goes to neither 0 nor 2.
                let mut t = Tried::default();
                t.add(0);
                let r = b.pick(&t, &mut draw).replica;
                assert!(r != 0 && r != 2, "{lb:?} retried on {r}");
            }
            assert_eq!(firsts[2], 0, "{lb:?}: {firsts:?}");
            if lb == Lb::RoundRobin {
                // The others share its turns evenly.
                assert_eq!(firsts, [1000, 1000, 0, 1000, 1000]);
            }
            let out: Vec<(bool, u64)> = b.outliers(b.now()).collect();
            assert_eq!(out[2], (true, 1));
            assert!(out
                .iter()
                .enumerate()
                .all(|(r, o)| r == 2 || *o == (false, 0)));
        }
    }

    #[test]
    fn an_ejection_ends_on_its_own_and_all_out_is_none_out() {
        let mut rng = SmallRng::seed_from_u64(17);
        let mut draw = |n: usize| rng.random_range(0..n);
        let b = Balancer::new(urls(3), Lb::Random, true);
        // Already over: replica 1 is back.
        b.eject(1, b.now());
        let got: Vec<usize> = (0..300)
            .map(|_| b.pick(&Tried::default(), &mut draw).replica)
            .collect();
        assert!(got.contains(&1));
        assert_eq!(b.outliers(b.now()).nth(1), Some((false, 1)));
        // Every replica out: Envoy's panic mode, every replica picked.
        for r in 0..3 {
            b.eject(r, b.now() + HOUR);
        }
        let mut seen = [false; 3];
        for _ in 0..300 {
            seen[b.pick(&Tried::default(), &mut draw).replica] = true;
        }
        assert_eq!(seen, [true; 3]);
        // A new detector brings them all back; the counts stay.
        b.clear_ejections();
        let out: Vec<(bool, u64)> = b.outliers(b.now()).collect();
        assert_eq!(out, [(false, 1), (false, 2), (false, 1)]);
    }

    #[test]
    fn a_retry_with_every_healthy_replica_tried_goes_to_a_healthy_one() {
        let mut rng = SmallRng::seed_from_u64(19);
        let mut draw = |n: usize| rng.random_range(0..n);
        let b = Balancer::new(urls(3), Lb::Random, true);
        b.eject(0, b.now() + HOUR);
        let mut t = Tried::default();
        t.add(1);
        t.add(2);
        for _ in 0..200 {
            assert_ne!(b.pick(&t, &mut draw).replica, 0);
        }
    }
}
