//! The `quota` budget model: the retry quota of the AWS SDKs' `standard`
//! retry mode, per edge.
//!
//! # Why a quota
//!
//! The AWS SDKs guard against retry storms with one shared pool of tokens
//! per client. A retry must first buy its way in: 5 tokens, or 10 when the
//! failure was a timeout (a timeout is the expensive kind: it held a
//! connection for the whole timeout). A retry that then succeeds gets its
//! cost back, and every call that succeeds on its first attempt adds 1, up
//! to the starting 500. When a callee fails persistently nothing refunds
//! the pool: a fresh quota pays for exactly 100 retries (500 / 5) and then
//! the client stops retrying until successes refill it, so amplification
//! under a long outage tends to 1×.
//!
//! Since November 2026 the SDKs default to updated numbers
//! ([`QuotaCosts::AWS_2026`], the `aws-2026` preset): a transient error's
//! retry costs 14 tokens and a throttling error's 5, so a fresh quota pays
//! for 35 transient retries; everything else stays as in standard mode.
//! (That preset also uses 3 attempts and a 50 ms base backoff, which are
//! the attempt loop's business, not the quota's.)
//!
//! The arithmetic is whole tokens, and the model needs no clock: the pool
//! moves only with outcomes, never with time.
//!
//! ```
//! use error_ownership::quota::{RetryKind, RetryQuota};
//!
//! let mut q = RetryQuota::standard();
//! let mut retries = 0;
//! while q.try_acquire(RetryKind::Transient).is_some() {
//!     retries += 1;
//! }
//! assert_eq!(retries, 100); // 500 tokens, 5 a retry, no success to refill them
//!
//! let mut q = RetryQuota::standard();
//! let cost = q.try_acquire(RetryKind::Timeout); // 10 tokens
//! assert_eq!(q.available(), 490);
//! q.on_success(cost); // the retry succeeded: its cost comes back
//! assert_eq!(q.available(), 500);
//! ```

/// What kind of failure a retry is for; it sets the retry's cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryKind {
    /// A transient error: a 5xx, a reset or refused connection.
    Transient,
    /// The callee throttled the call (429, or a throttling error code).
    Throttling,
    /// The attempt timed out without an answer.
    Timeout,
}

/// The numbers of one retry-quota configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaCosts {
    /// Tokens at the start, and the pool's cap.
    pub initial: u32,
    /// What a retry after a transient error costs.
    pub transient: u32,
    /// What a retry after a throttling error costs.
    pub throttling: u32,
    /// What a retry after a timeout costs.
    pub timeout: u32,
    /// What a call that succeeds without a retry adds.
    pub no_retry_increment: u32,
}

impl QuotaCosts {
    /// The SDKs' `standard` mode: 500 tokens, a retry 5, a timeout's 10,
    /// a success without a retry +1.
    pub const STANDARD: QuotaCosts = QuotaCosts {
        initial: 500,
        transient: 5,
        throttling: 5,
        timeout: 10,
        no_retry_increment: 1,
    };

    /// The defaults since November 2026: a transient retry 14, a
    /// throttling retry 5, the rest as in [`QuotaCosts::STANDARD`].
    pub const AWS_2026: QuotaCosts = QuotaCosts {
        transient: 14,
        throttling: 5,
        ..QuotaCosts::STANDARD
    };

    /// What a retry of this kind costs.
    pub fn cost(&self, kind: RetryKind) -> u32 {
        match kind {
            RetryKind::Transient => self.transient,
            RetryKind::Throttling => self.throttling,
            RetryKind::Timeout => self.timeout,
        }
    }
}

/// The tokens one retry paid; the caller keeps it with the request and
/// hands it back to [`RetryQuota::on_success`] if that retry succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryCost(u32);

impl RetryCost {
    /// The tokens paid.
    pub fn tokens(self) -> u32 {
        self.0
    }
}

/// One edge's retry quota (one SDK client's, in AWS terms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryQuota {
    costs: QuotaCosts,
    available: u32,
}

impl RetryQuota {
    /// A full quota with the given numbers.
    pub fn new(costs: QuotaCosts) -> RetryQuota {
        RetryQuota {
            costs,
            available: costs.initial,
        }
    }

    /// A full quota with the `standard` mode's numbers (the `aws` preset).
    pub fn standard() -> RetryQuota {
        RetryQuota::new(QuotaCosts::STANDARD)
    }

    /// A full quota with the November 2026 numbers (the `aws-2026` preset).
    pub fn aws_2026() -> RetryQuota {
        RetryQuota::new(QuotaCosts::AWS_2026)
    }

    /// Asks to retry after a failure of `kind`. `Some` takes the retry's
    /// cost from the pool; `None` (the pool holds less than the cost)
    /// means the retry is denied and nothing is taken.
    pub fn try_acquire(&mut self, kind: RetryKind) -> Option<RetryCost> {
        let cost = self.costs.cost(kind);
        if cost > self.available {
            return None;
        }
        self.available -= cost;
        Some(RetryCost(cost))
    }

    /// A call succeeded. `last_retry` is the cost its successful retry
    /// paid (refunded in full), or `None` if it succeeded on its first
    /// attempt (adds the no-retry increment). The pool never exceeds its
    /// initial size. A call that fails for good refunds nothing.
    pub fn on_success(&mut self, last_retry: Option<RetryCost>) {
        let credit = last_retry.map_or(self.costs.no_retry_increment, RetryCost::tokens);
        self.available = self
            .available
            .saturating_add(credit)
            .min(self.costs.initial);
    }

    /// Tokens left in the pool.
    pub fn available(&self) -> u32 {
        self.available
    }

    /// The pool's size (its initial and maximum level).
    pub fn capacity(&self) -> u32 {
        self.costs.initial
    }

    /// The numbers this quota was built with.
    pub fn costs(&self) -> QuotaCosts {
        self.costs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(q: &mut RetryQuota, kind: RetryKind) -> u32 {
        let mut n = 0;
        while q.try_acquire(kind).is_some() {
            n += 1;
        }
        n
    }

    #[test]
    fn a_fresh_quota_pays_for_exactly_100_retries() {
        let mut q = RetryQuota::standard();
        assert_eq!(drain(&mut q, RetryKind::Transient), 100);
        assert_eq!(q.available(), 0);
        assert_eq!(
            drain(&mut RetryQuota::standard(), RetryKind::Throttling),
            100
        );
        assert_eq!(drain(&mut RetryQuota::standard(), RetryKind::Timeout), 50);
    }

    #[test]
    fn the_2026_defaults_charge_14_for_a_transient_retry() {
        let mut q = RetryQuota::aws_2026();
        assert_eq!(drain(&mut q, RetryKind::Transient), 35);
        assert_eq!(q.available(), 10); // 500 − 35 × 14
        assert_eq!(drain(&mut q, RetryKind::Throttling), 2);
        assert_eq!(
            drain(&mut RetryQuota::aws_2026(), RetryKind::Throttling),
            100
        );
        assert_eq!(drain(&mut RetryQuota::aws_2026(), RetryKind::Timeout), 50);
        assert_eq!(QuotaCosts::AWS_2026.initial, 500);
        assert_eq!(QuotaCosts::AWS_2026.no_retry_increment, 1);
    }

    #[test]
    fn a_successful_retry_refunds_its_cost_and_a_failed_one_does_not() {
        let mut q = RetryQuota::standard();
        let _first = q.try_acquire(RetryKind::Transient); // its call fails for good
        let second = q.try_acquire(RetryKind::Timeout);
        assert_eq!(q.available(), 485);
        q.on_success(second); // the call's last retry (the timeout's) succeeded
        assert_eq!(q.available(), 495);
    }

    #[test]
    fn successes_without_a_retry_add_one_up_to_the_cap() {
        let mut q = RetryQuota::standard();
        for _ in 0..3 {
            q.try_acquire(RetryKind::Transient);
        }
        assert_eq!(q.available(), 485);
        for _ in 0..10 {
            q.on_success(None);
        }
        assert_eq!(q.available(), 495);
        for _ in 0..100 {
            q.on_success(None);
        }
        assert_eq!(q.available(), 500);
        q.on_success(Some(RetryCost(10)));
        assert_eq!(q.available(), 500);
    }

    #[test]
    fn a_denial_takes_nothing() {
        let mut q = RetryQuota::standard();
        drain(&mut q, RetryKind::Transient);
        q.on_success(None);
        q.on_success(None);
        assert_eq!(q.try_acquire(RetryKind::Transient), None);
        assert_eq!(q.available(), 2);
    }

    #[derive(Debug, Clone, Copy)]
    enum Step {
        /// A call fails and asks to retry; if granted, the retry succeeds or not.
        Retry(RetryKind, bool),
        /// A call succeeds on its first attempt.
        Success,
    }

    fn step() -> impl Strategy<Value = Step> {
        let kind = prop_oneof![
            Just(RetryKind::Transient),
            Just(RetryKind::Throttling),
            Just(RetryKind::Timeout)
        ];
        prop_oneof![
            (kind, any::<bool>()).prop_map(|(k, ok)| Step::Retry(k, ok)),
            Just(Step::Success),
        ]
    }

    proptest! {
        /// Over any run: the pool stays within [0, initial]; a retry is
        /// denied exactly when the pool holds less than its cost; and the
        /// tokens spent on retries never exceed the initial pool plus
        /// everything credited back (refunds and increments).
        #[test]
        fn the_pool_conserves_tokens(
            aws_2026 in any::<bool>(),
            run in proptest::collection::vec(step(), 0..600),
        ) {
            let costs = if aws_2026 { QuotaCosts::AWS_2026 } else { QuotaCosts::STANDARD };
            let mut q = RetryQuota::new(costs);
            let (mut spent, mut credited) = (0u64, 0u64);
            for s in run {
                match s {
                    Step::Retry(kind, succeeds) => {
                        let before = q.available();
                        match q.try_acquire(kind) {
                            Some(c) => {
                                prop_assert!(before >= costs.cost(kind));
                                prop_assert_eq!(c.tokens(), costs.cost(kind));
                                spent += u64::from(c.tokens());
                                if succeeds {
                                    q.on_success(Some(c));
                                    credited += u64::from(c.tokens());
                                }
                            }
                            None => {
                                prop_assert!(before < costs.cost(kind));
                                prop_assert_eq!(q.available(), before);
                            }
                        }
                    }
                    Step::Success => {
                        q.on_success(None);
                        credited += u64::from(costs.no_retry_increment);
                    }
                }
                prop_assert!(q.available() <= costs.initial);
                prop_assert!(spent <= u64::from(costs.initial) + credited);
            }
        }

        /// Without any success, the number of retries a fresh quota pays
        /// for is ⌊initial / cost⌋ for a run of one kind.
        #[test]
        fn without_success_retries_are_initial_over_cost(aws_2026 in any::<bool>(), k in 0usize..3) {
            let costs = if aws_2026 { QuotaCosts::AWS_2026 } else { QuotaCosts::STANDARD };
            let kind = [RetryKind::Transient, RetryKind::Throttling, RetryKind::Timeout][k];
            let mut q = RetryQuota::new(costs);
            prop_assert_eq!(drain(&mut q, kind), costs.initial / costs.cost(kind));
        }
    }
}
