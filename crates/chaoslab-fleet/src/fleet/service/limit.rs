//! Server-side adaptive concurrency on one replica of a service (SPEC
//! section 15): requests over the limit are shed at once with a claimed
//! 503, and the limit moves with the latency the replica's requests take,
//! as Envoy's gradient controller or Netflix's Vegas and AIMD limits move
//! it (`error_ownership::gradient`, `error_ownership::limiter`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::topology::Concurrency;
use error_ownership::gradient::GradientLimit;
use error_ownership::limiter::{Aimd, Vegas};

/// The controller and its clock.
#[derive(Debug)]
enum Controller {
    /// Envoy's: sampled each request, moved once an interval.
    Gradient {
        limit: GradientLimit,
        interval: Duration,
        next_update: Duration,
    },
    /// Netflix's Vegas: moved on each sample.
    Vegas(Vegas),
    /// Netflix's AIMD: moved on each sample.
    Aimd(Aimd),
}

impl Controller {
    fn limit(&self) -> u32 {
        match self {
            Controller::Gradient { limit, .. } => limit.limit(),
            Controller::Vegas(v) => v.limit(),
            Controller::Aimd(a) => a.limit(),
        }
    }

    /// The latency with no queue, as the controller estimates it.
    fn no_load(&self) -> Option<Duration> {
        match self {
            Controller::Gradient { limit, .. } => limit.min_rtt(),
            Controller::Vegas(v) => v.rtt_noload(),
            Controller::Aimd(_) => None,
        }
    }
}

/// One replica's limit: what is in flight, and the controller that moves
/// the limit.
#[derive(Debug)]
pub(super) struct AdaptiveLimit {
    controller: Mutex<Controller>,
    /// The limit in force, read on every request without the lock.
    limit: AtomicU32,
    /// The controller's bounds: a limit it starts outside them (AIMD's
    /// 20 under a `max` of 10) is held within them from the start.
    bounds: (u32, u32),
    in_flight: AtomicU32,
    born: Instant,
}

/// A request let in: it holds its place until dropped. Its latency is a
/// sample only once it is [`answered`](Admitted::answered): a job skipped
/// or lost says nothing of how long it would have taken.
#[derive(Debug)]
pub(super) struct Admitted {
    limit: Arc<AdaptiveLimit>,
    start: Instant,
    in_flight: u32,
}

impl Admitted {
    /// The request was answered; `dropped`: it failed for want of
    /// capacity (shed by the queue, or its deadline passed).
    pub(super) fn answered(self, dropped: bool) {
        self.limit
            .sample(self.start.elapsed(), self.in_flight, dropped);
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.limit.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl AdaptiveLimit {
    /// A limit run by `spec`'s controller, from its starting limit.
    pub(super) fn new(spec: &Concurrency) -> AdaptiveLimit {
        let bounds = match *spec {
            Concurrency::Gradient(g) => (g.min_concurrency.max(1), g.max_limit.max(1)),
            Concurrency::Vegas { max, .. } => (1, max.max(1)),
            Concurrency::Aimd { min, max, .. } => (min.max(1), max.max(min).max(1)),
        };
        let controller = match *spec {
            Concurrency::Gradient(cfg) => Controller::Gradient {
                limit: GradientLimit::new(cfg),
                interval: cfg.interval,
                next_update: cfg.interval,
            },
            Concurrency::Vegas {
                max,
                smoothing,
                probe,
            } => {
                let mut v = Vegas::default();
                (v.max, v.smoothing, v.probe) = (max, smoothing, probe);
                Controller::Vegas(v)
            }
            Concurrency::Aimd {
                min,
                max,
                backoff,
                timeout,
            } => {
                let mut a = Aimd::default();
                (a.min, a.max, a.backoff, a.timeout) = (min, max, backoff, timeout);
                Controller::Aimd(a)
            }
        };
        AdaptiveLimit {
            limit: AtomicU32::new(controller.limit().clamp(bounds.0, bounds.1)),
            bounds,
            controller: Mutex::new(controller),
            in_flight: AtomicU32::new(0),
            born: Instant::now(),
        }
    }

    /// Lets a request in if fewer than the limit are in flight; `None`:
    /// shed it.
    pub(super) fn try_enter(self: &Arc<Self>) -> Option<Admitted> {
        let limit = self.limit.load(Ordering::Relaxed);
        let mut now = self.in_flight.load(Ordering::Relaxed);
        loop {
            if now >= limit {
                return None;
            }
            match self.in_flight.compare_exchange_weak(
                now,
                now + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Admitted {
                        limit: self.clone(),
                        start: Instant::now(),
                        in_flight: now + 1,
                    })
                }
                Err(seen) => now = seen,
            }
        }
    }

    /// A request let in was then shed for want of capacity (its queue was
    /// full): a drop, for the controllers that count them.
    pub(super) fn dropped(&self) {
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        self.sample(Duration::ZERO, in_flight, true);
    }

    /// A request that started with `in_flight` in flight (itself
    /// included) took `latency`.
    fn sample(&self, latency: Duration, in_flight: u32, dropped: bool) {
        let now = self.born.elapsed();
        let mut c = self.controller.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *c {
            Controller::Gradient {
                limit,
                interval,
                next_update,
            } => {
                if !dropped {
                    limit.sample(now, latency);
                }
                if now >= *next_update {
                    limit.update(now);
                    *next_update = now + *interval;
                }
            }
            Controller::Vegas(v) => v.sample(latency, in_flight, dropped),
            Controller::Aimd(a) => a.sample(latency, in_flight, dropped),
        }
        let (lo, hi) = self.bounds;
        self.limit.store(c.limit().clamp(lo, hi), Ordering::Relaxed);
    }

    /// The limit in force and the latency with no queue as the controller
    /// estimates it (the gauges).
    pub(super) fn live(&self) -> (u32, Option<Duration>) {
        let c = self.controller.lock().unwrap_or_else(|e| e.into_inner());
        (self.limit.load(Ordering::Relaxed), c.no_load())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_the_limit_is_shed_and_a_place_comes_back_when_one_is_answered() {
        let l = Arc::new(AdaptiveLimit::new(&Concurrency::Aimd {
            min: 2,
            max: 2,
            backoff: 0.9,
            timeout: Duration::from_secs(5),
        }));
        let a = l.try_enter().expect("first");
        let b = l.try_enter().expect("second");
        assert!(l.try_enter().is_none(), "a third over a limit of 2");
        a.answered(false);
        let c = l.try_enter().expect("a place came back");
        // A request its caller left gives its place back too.
        drop(b);
        let d = l.try_enter().expect("the left one's place");
        assert!(l.try_enter().is_none());
        c.answered(false);
        d.answered(false);
        assert_eq!(l.live(), (2, None));
        assert_eq!(l.in_flight.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_gradient_limit_starts_pinned_while_min_rtt_is_measured() {
        let l = Arc::new(AdaptiveLimit::new(&Concurrency::Gradient(
            error_ownership::gradient::GradientConfig::ENVOY,
        )));
        // Envoy's min_concurrency: 3 while 50 requests are sampled.
        let held: Vec<_> = (0..3).map(|_| l.try_enter().expect("in")).collect();
        assert!(l.try_enter().is_none());
        for a in held {
            a.answered(false);
        }
        assert_eq!(l.live().0, 3);
    }
}
