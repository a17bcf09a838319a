//! The `concurrency` budget model: Envoy's `retry_budget`, per edge.
//!
//! # Why a concurrency budget
//!
//! Envoy bounds retries by what is *in flight*, not by a count over time:
//! an edge may have at most
//! `max(budget_percent × (active + pending requests), min_retry_concurrency)`
//! retries outstanding, with `budget_percent` 20% and
//! `min_retry_concurrency` 3 by default. A retry counts from the moment it
//! is scheduled (its backoff included, as Envoy takes the slot before
//! arming the backoff timer) until it ends, and a retry that would go past
//! the limit is not made (Envoy's `upstream_rq_retry_overflow`).
//!
//! Because the limit is on concurrency, how many retries per second it lets
//! through depends on how long a retry stays in flight. Against a slow
//! failure (timeouts) the budget binds hard; against a fast failure (an
//! immediate 503) each retry frees its slot almost at once and the budget
//! does little: by Little's law the retry rate it allows is about
//! `allowed / (backoff + retry latency)`, so a prediction needs the
//! measured latency.
//!
//! This is bookkeeping only: the edge reports requests and retries starting
//! and ending, and the model answers whether a retry may start. It needs no
//! clock. The percentage is kept exact, in thousandths of a percent, and
//! the product rounded down as Envoy's integer conversion does.
//!
//! ```
//! use error_ownership::concurrency::RetryConcurrency;
//!
//! let mut edge = RetryConcurrency::default(); // 20%, at least 3
//! for _ in 0..20 {
//!     edge.request_started();
//! }
//! assert_eq!(edge.allowed(), 4); // 20% of 20
//! let granted = (0..6).filter(|_| edge.try_start_retry()).count();
//! assert_eq!(granted, 4);
//! edge.retry_ended(); // one retry came back: a slot is free again
//! assert!(edge.try_start_retry());
//! ```

/// Thousandths of a percent in one whole (100%).
const WHOLE: u64 = 100_000;

/// The retries in flight on one edge and the requests they are measured
/// against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryConcurrency {
    /// `budget_percent` in thousandths of a percent.
    milli_percent: u64,
    min_retry_concurrency: u64,
    requests: u64,
    retries: u64,
}

impl Default for RetryConcurrency {
    /// Envoy's defaults: 20% and a floor of 3 (the `envoy` preset).
    fn default() -> RetryConcurrency {
        RetryConcurrency::new(
            RetryConcurrency::DEFAULT_BUDGET_PERCENT,
            RetryConcurrency::DEFAULT_MIN_RETRY_CONCURRENCY,
        )
    }
}

impl RetryConcurrency {
    /// Envoy's default `budget_percent`.
    pub const DEFAULT_BUDGET_PERCENT: f64 = 20.0;
    /// Envoy's default `min_retry_concurrency`.
    pub const DEFAULT_MIN_RETRY_CONCURRENCY: u32 = 3;

    /// A budget of `budget_percent` (0..=100, rounded to a thousandth of a
    /// percent; outside or not finite: clamped, NaN as 0) of the edge's
    /// requests, never below `min_retry_concurrency`.
    pub fn new(budget_percent: f64, min_retry_concurrency: u32) -> RetryConcurrency {
        let milli_percent = if budget_percent.is_nan() {
            0
        } else {
            (budget_percent.clamp(0.0, 100.0) * 1000.0).round() as u64
        };
        RetryConcurrency {
            milli_percent,
            min_retry_concurrency: u64::from(min_retry_concurrency),
            requests: 0,
            retries: 0,
        }
    }

    /// A request on the edge began: it is active or waiting for a
    /// connection (pending); both count alike.
    pub fn request_started(&mut self) {
        self.requests += 1;
    }

    /// A request on the edge ended (ignored if none is open).
    pub fn request_ended(&mut self) {
        self.requests = self.requests.saturating_sub(1);
    }

    /// Asks to schedule a retry. `true` takes a slot, held until
    /// [`RetryConcurrency::retry_ended`]; `false` means the edge already
    /// has [`RetryConcurrency::allowed`] retries in flight and this one is
    /// not made.
    pub fn try_start_retry(&mut self) -> bool {
        if self.retries < self.allowed() {
            self.retries += 1;
            true
        } else {
            false
        }
    }

    /// A retry that was granted ended (answered, failed, cancelled or its
    /// request gone); ignored if none is in flight.
    pub fn retry_ended(&mut self) {
        self.retries = self.retries.saturating_sub(1);
    }

    /// Retries that may be in flight now:
    /// `max(⌊budget_percent × requests⌋, min_retry_concurrency)`.
    pub fn allowed(&self) -> u64 {
        (self.requests.saturating_mul(self.milli_percent) / WHOLE).max(self.min_retry_concurrency)
    }

    /// Retries in flight now.
    pub fn retries_in_flight(&self) -> u64 {
        self.retries
    }

    /// Requests (active and pending) open on the edge now.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The budget percentage, as stored.
    pub fn budget_percent(&self) -> f64 {
        self.milli_percent as f64 / 1000.0
    }

    /// The floor on allowed retries.
    pub fn min_retry_concurrency(&self) -> u64 {
        self.min_retry_concurrency
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_quiet_edge_still_gets_three() {
        let mut e = RetryConcurrency::default();
        assert_eq!(e.allowed(), 3);
        assert!(e.try_start_retry());
        assert!(e.try_start_retry());
        assert!(e.try_start_retry());
        assert!(!e.try_start_retry());
        assert_eq!(e.retries_in_flight(), 3);
    }

    #[test]
    fn twenty_percent_of_requests_rounded_down() {
        let mut e = RetryConcurrency::default();
        for _ in 0..24 {
            e.request_started();
        }
        assert_eq!(e.allowed(), 4); // 4.8 → 4
        e.request_started();
        assert_eq!(e.allowed(), 5);
        for _ in 0..100 {
            e.request_started();
        }
        assert_eq!(e.allowed(), 25);
    }

    #[test]
    fn a_retry_holds_its_slot_until_it_ends() {
        let mut e = RetryConcurrency::default();
        for _ in 0..3 {
            assert!(e.try_start_retry()); // scheduled: backing off counts too
        }
        assert!(!e.try_start_retry());
        e.retry_ended();
        assert!(e.try_start_retry());
        assert!(!e.try_start_retry());
    }

    #[test]
    fn the_percentage_is_exact() {
        // 15% of 20 is 3 exactly, 0.1% of 1000 is 1 exactly.
        let mut e = RetryConcurrency::new(15.0, 0);
        let mut f = RetryConcurrency::new(0.1, 0);
        for _ in 0..20 {
            e.request_started();
        }
        for _ in 0..1000 {
            f.request_started();
        }
        assert_eq!(e.allowed(), 3);
        assert_eq!(f.allowed(), 1);
        assert_eq!(RetryConcurrency::new(150.0, 3).budget_percent(), 100.0);
        assert_eq!(RetryConcurrency::new(f64::NAN, 3).budget_percent(), 0.0);
    }

    #[test]
    fn unmatched_ends_are_ignored() {
        let mut e = RetryConcurrency::default();
        e.request_ended();
        e.retry_ended();
        assert_eq!((e.requests(), e.retries_in_flight()), (0, 0));
    }

    #[derive(Debug, Clone, Copy)]
    enum Event {
        RequestStarted,
        RequestEnded,
        TryRetry,
        RetryEnded,
    }

    fn events() -> impl Strategy<Value = Vec<Event>> {
        proptest::collection::vec(
            prop_oneof![
                3 => Just(Event::RequestStarted),
                2 => Just(Event::RequestEnded),
                3 => Just(Event::TryRetry),
                2 => Just(Event::RetryEnded),
            ],
            0..800,
        )
    }

    /// Drives `e` through `run`, tracking the counts independently, and
    /// checks Envoy's rule against `limit(requests)` at every step.
    fn check(
        mut e: RetryConcurrency,
        run: Vec<Event>,
        limit: impl Fn(u64) -> u64,
    ) -> Result<(), TestCaseError> {
        let (mut requests, mut retries) = (0u64, 0u64);
        for ev in run {
            match ev {
                Event::RequestStarted => {
                    e.request_started();
                    requests += 1;
                }
                Event::RequestEnded if requests > 0 => {
                    e.request_ended();
                    requests -= 1;
                }
                Event::RetryEnded if retries > 0 => {
                    e.retry_ended();
                    retries -= 1;
                }
                Event::TryRetry => {
                    let granted = e.try_start_retry();
                    // Granted exactly when a slot is free under the limit,
                    // so a grant never takes the count past it.
                    prop_assert_eq!(granted, retries < limit(requests));
                    if granted {
                        retries += 1;
                        prop_assert!(retries <= limit(requests));
                    }
                }
                Event::RequestEnded | Event::RetryEnded => {}
            }
            prop_assert_eq!(e.retries_in_flight(), retries);
            prop_assert_eq!(e.requests(), requests);
            prop_assert_eq!(e.allowed(), limit(requests));
        }
        Ok(())
    }

    proptest! {
        /// With Envoy's defaults, over any interleaving of request and retry
        /// starts and ends, a retry is only ever granted while fewer than
        /// max(⌊20% of requests⌋, 3) are in flight, and never takes the
        /// count past that.
        #[test]
        fn defaults_never_exceed_twenty_percent_or_three(run in events()) {
            check(RetryConcurrency::default(), run, |r| (r / 5).max(3))?;
        }

        /// The same for any whole percentage and floor.
        #[test]
        fn any_budget_never_exceeds_its_limit(
            pct in 0u64..=100,
            min in 0u32..10,
            run in events(),
        ) {
            check(
                RetryConcurrency::new(pct as f64, min),
                run,
                move |r| (r * pct / 100).max(u64::from(min)),
            )?;
        }

        /// While no request ends, retries in flight never exceed the limit
        /// at any instant (requests only grow, so the limit only grows).
        #[test]
        fn without_request_ends_the_bound_holds_at_every_instant(run in events()) {
            let mut e = RetryConcurrency::default();
            for ev in run {
                match ev {
                    Event::RequestStarted => e.request_started(),
                    Event::TryRetry => {
                        e.try_start_retry();
                    }
                    Event::RetryEnded => e.retry_ended(),
                    Event::RequestEnded => {}
                }
                prop_assert!(e.retries_in_flight() <= (e.requests() / 5).max(3));
            }
        }
    }
}
