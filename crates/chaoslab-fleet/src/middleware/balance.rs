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

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

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
        // Every replica tried (or none to avoid): any will do.
        let none = Tried::default();
        let avoid = if self.other_host.load(Ordering::Relaxed) && tried.count < n {
            tried
        } else {
            &none
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
            Lb::RoundRobin if tried.is_empty() => self.next.fetch_add(1, Ordering::Relaxed) % n,
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
}
