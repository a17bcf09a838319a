//! A `reqwest_middleware::Middleware` that retries with error ownership.
//!
//! # Why
//!
//! Retries multiply as they climb a call chain: with one retry per hop, a
//! service three hops below a failure sees 8× its normal load. Every
//! retry middleware for reqwest retries an error without asking whose it
//! is. [`OwnershipRetry`] asks: it reads the callee's claim header
//! (`x-error-claim`), retries only an error the callee claimed (or did not
//! mark), never one the callee passed up from further down, stays within
//! a retry budget (10% of calls over 10 s by default) and backs off. Only
//! the caller right above the failing service retries, and the load below
//! a failure stays at 1.1× whatever the depth, where budgets alone let
//! Uber's deep services take 46% to 135% more traffic.
//!
//! Each call, once its attempts are over, is recorded in the current
//! request's record (`tower-error-ownership`), where the server layer finds
//! it and decides whether the service's own error answer is its own. A
//! call the service survives failing says so with [`FailOpen`] in its
//! extensions.
//!
//! ```no_run
//! use reqwest_error_ownership::{FailOpen, OwnershipRetry};
//! use reqwest_middleware::ClientBuilder;
//! # async fn demo() -> reqwest_middleware::Result<()> {
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(OwnershipRetry::new())
//!     .build();
//! let payments = client.get("http://payments.internal/charge").send().await?;
//! // A call whose failure the service survives: its failure is not a reason
//! // to disown the service's own errors.
//! let recs = client
//!     .get("http://recommendations.internal/")
//!     .with_extension(FailOpen)
//!     .send()
//!     .await;
//! # let _ = (payments, recs); Ok(()) }
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

// The README's examples are compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use error_ownership::attempt::{AttemptMachine, CallOutcome, Next as Decision};
use error_ownership::budget::RetryBudget;
use error_ownership::signal::{read_retry_after, Advice};
use error_ownership::{is_error_status, Claim, Classified, DependencyMode};
use http::{Extensions, HeaderName};
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next, Result};

pub use tower_error_ownership::{Dependency, FailOpen, CLAIM_HEADER, UBER_CLAIM_HEADER};

/// The retry middleware. See the [crate docs](crate).
///
/// ```
/// use std::time::Duration;
/// use reqwest_error_ownership::OwnershipRetry;
///
/// // The defaults: 2 attempts, a 10% budget over 10 s with a floor of 10
/// // retries a second, claims honoured on `x-error-claim`, 10 ms backoff.
/// let retry = OwnershipRetry::new();
/// // Three attempts, 20% budget, Uber's header name.
/// let retry = OwnershipRetry::new()
///     .attempts(3)
///     .budget(0.2, Duration::from_secs(10), 10.0)
///     .header(reqwest_error_ownership::UBER_CLAIM_HEADER.clone());
/// # let _ = retry;
/// ```
#[derive(Debug)]
pub struct OwnershipRetry {
    header: HeaderName,
    attempts: u32,
    ownership: bool,
    backoff: Duration,
    max_retry_after: Duration,
    budget: Option<Budget>,
}

/// How many first attempts are dated at once: the budget's clock is read
/// once per this many calls (and on every retry asked for), not per call.
const DATED_TOGETHER: u32 = 16;

/// The retry budget every call through one middleware shares.
#[derive(Debug)]
struct Budget {
    bucket: Mutex<RetryBudget>,
    /// First attempts made since the budget was last dated. At most
    /// [`DATED_TOGETHER`] − 1 of them wait, so a quiet client's budget
    /// counts at most that many calls as made later than they were.
    undated: AtomicU32,
    /// The budget's clock starts a second before the middleware, so that a
    /// new client has its floor of retries at once.
    epoch: Instant,
}

impl Budget {
    fn new(ratio: f64, ttl: Duration, min_per_sec: f64) -> Budget {
        let now = Instant::now();
        Budget {
            bucket: Mutex::new(RetryBudget::new(ratio, ttl, min_per_sec)),
            undated: AtomicU32::new(0),
            epoch: now.checked_sub(Duration::from_secs(1)).unwrap_or(now),
        }
    }

    /// A first attempt.
    fn deposit(&self) {
        if self.undated.fetch_add(1, Ordering::Relaxed) + 1 >= DATED_TOGETHER {
            self.with(|_| {});
        }
    }

    /// A retry, if the budget has one.
    fn try_withdraw(&self) -> bool {
        self.with(|(b, now)| b.try_withdraw(now))
    }

    /// `f` on the bucket, dated now, with every first attempt in it.
    fn with<R>(&self, f: impl FnOnce((&mut RetryBudget, Duration)) -> R) -> R {
        let now = self.epoch.elapsed();
        let mut bucket = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
        let undated = self.undated.swap(0, Ordering::Relaxed);
        if undated > 0 {
            bucket.deposit_many(now, undated);
        }
        f((&mut bucket, now))
    }
}

impl Default for OwnershipRetry {
    fn default() -> Self {
        OwnershipRetry::new()
    }
}

impl OwnershipRetry {
    /// The defaults: 2 attempts (R = 2); retries within 10% of calls over
    /// 10 s, plus 10 a second whatever the traffic (Finagle's floor);
    /// claims honoured on `x-error-claim`; exponential backoff with full
    /// jitter from 10 ms; a `Retry-After` honoured up to 10 s.
    pub fn new() -> OwnershipRetry {
        OwnershipRetry {
            header: CLAIM_HEADER.clone(),
            attempts: 2,
            ownership: true,
            backoff: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(10),
            budget: Some(Budget::new(0.1, Duration::from_secs(10), 10.0)),
        }
    }

    /// At most `n` attempts per call (at least 1).
    pub fn attempts(self, n: u32) -> OwnershipRetry {
        OwnershipRetry {
            attempts: n.max(1),
            ..self
        }
    }

    /// Exponential backoff with full jitter from `base`; zero retries at once.
    pub fn backoff(self, base: Duration) -> OwnershipRetry {
        OwnershipRetry {
            backoff: base,
            ..self
        }
    }

    /// Reads the claim on `header` instead (for example
    /// [`UBER_CLAIM_HEADER`]).
    pub fn header(self, header: HeaderName) -> OwnershipRetry {
        OwnershipRetry { header, ..self }
    }

    /// `false`: retry every error, claims ignored (for comparison only).
    pub fn ownership(self, on: bool) -> OwnershipRetry {
        OwnershipRetry {
            ownership: on,
            ..self
        }
    }

    /// Retries at most `ratio` × calls over any `ttl`, plus `min_per_sec`
    /// retries a second.
    pub fn budget(self, ratio: f64, ttl: Duration, min_per_sec: f64) -> OwnershipRetry {
        OwnershipRetry {
            budget: Some(Budget::new(ratio, ttl, min_per_sec)),
            ..self
        }
    }

    /// No budget: retries limited by the attempts alone.
    pub fn unbudgeted(self) -> OwnershipRetry {
        OwnershipRetry {
            budget: None,
            ..self
        }
    }

    /// A `Retry-After` longer than `max` ends the call instead of waiting.
    pub fn max_retry_after(self, max: Duration) -> OwnershipRetry {
        OwnershipRetry {
            max_retry_after: max,
            ..self
        }
    }

    fn classify(&self, res: &Result<Response>) -> (Classified, Advice) {
        let Ok(res) = res else {
            return (Classified::NoResponse, Advice::Silent);
        };
        let status = res.status().as_u16();
        if !is_error_status(status) {
            // A success: no header is looked up.
            return (Classified::Success, Advice::Silent);
        }
        let claims = res.headers().get_all(&self.header);
        let answer = Classified::Error {
            claim: Claim::parse_all(claims.iter().map(|v| v.as_bytes())),
        };
        let retry_after = res.headers().get(http::header::RETRY_AFTER);
        (
            answer,
            read_retry_after(status, retry_after.map(|v| v.as_bytes())),
        )
    }
}

/// Whether an error means the request never left (a bad URL, another
/// middleware's refusal): not an attempt, not retried, not recorded.
fn not_sent(res: &Result<Response>) -> bool {
    match res {
        Err(reqwest_middleware::Error::Reqwest(e)) => e.is_builder(),
        Err(reqwest_middleware::Error::Middleware(_)) => true,
        Ok(_) => false,
    }
}

/// What the next attempt is made from, kept before this one leaves.
///
/// A request with a body is copied whole (`Request::try_clone`). A
/// bodiless one, every GET, keeps everything but its URL, which the answer
/// (or reqwest's error, which carries it) gives back when a retry is
/// decided on: the first attempt, on the path of every call, leaves
/// without a copy of the URL (a string to allocate, copy and free), and
/// only a retry pays for one. `Request::try_clone` would also store an
/// empty timeout in the copy's extensions (a map and a box, made and
/// thrown away) before copying the original's; reqwest keeps a request's
/// extensions private, and the timeout is the only one its API sets, so
/// it is the one carried over.
enum Spare {
    /// Not one: the last attempt the call may make is on its way.
    None,
    /// The request to send: the call's own before its first attempt, or
    /// a copy.
    Ready(Request),
    /// A bodiless request's all but its URL.
    Resend {
        method: http::Method,
        headers: http::HeaderMap,
        timeout: Option<Duration>,
        version: http::Version,
    },
}

impl Spare {
    /// What another attempt of `req` needs; nothing when its body is a
    /// stream.
    fn of(req: &Request) -> Spare {
        if req.body().is_some() {
            return req.try_clone().map_or(Spare::None, Spare::Ready);
        }
        Spare::Resend {
            method: req.method().clone(),
            headers: req.headers().clone(),
            timeout: req.timeout().copied(),
            version: req.version(),
        }
    }

    /// Makes ready for a retry after `res`, which goes to the URL its
    /// answer came from (after any redirect reqwest followed). Whether
    /// there is a request to send.
    fn aim(&mut self, res: &Result<Response>) -> bool {
        if !matches!(self, Spare::Resend { .. }) {
            return !matches!(self, Spare::None);
        }
        let url = match res {
            Ok(r) => Some(r.url()),
            Err(reqwest_middleware::Error::Reqwest(e)) => e.url(),
            Err(reqwest_middleware::Error::Middleware(_)) => None,
        };
        let (
            Some(url),
            Spare::Resend {
                method,
                headers,
                timeout,
                version,
            },
        ) = (url, std::mem::replace(self, Spare::None))
        else {
            return false;
        };
        let mut r = Request::new(method, url.clone());
        if let Some(t) = timeout {
            *r.timeout_mut() = Some(t);
        }
        *r.headers_mut() = headers;
        *r.version_mut() = version;
        *self = Spare::Ready(r);
        true
    }

    /// The request for the next attempt, leaving nothing behind.
    fn take(&mut self) -> Option<Request> {
        match std::mem::replace(self, Spare::None) {
            Spare::Ready(r) => Some(r),
            Spare::None | Spare::Resend { .. } => None,
        }
    }
}

type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<Response>> + Send + 'a>>;

// Written out rather than through `#[async_trait]`, whose `async fn` keeps
// a copy of every argument beside the body's own variables: the request
// twice over, which took the boxed future past the size an allocator's
// per-thread cache serves (1,192 bytes; glibc caches up to 1,032).
impl Middleware for OwnershipRetry {
    fn handle<'a, 'b, 'c, 'f>(
        &'a self,
        req: Request,
        extensions: &'b mut Extensions,
        next: Next<'c>,
    ) -> CallFuture<'f>
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        Self: 'f,
    {
        // reqwest keeps a request's own extensions private: the call's
        // marks travel in reqwest-middleware's (`with_extension`).
        let mode = if extensions.get::<FailOpen>().is_some() {
            DependencyMode::FailOpen
        } else {
            DependencyMode::FailClose
        };
        let dependency = extensions.get::<Dependency>().map_or(0, |d| d.0);
        // A body that cannot be cloned (a stream) is sent once; the hop
        // above then makes the retry the chain is owed (rule 5).
        let clonable = req.body().is_none_or(|b| b.as_bytes().is_some());
        let attempts = if clonable { self.attempts } else { 1 };
        if let Some(b) = &self.budget {
            b.deposit();
        }
        let mut call = Call {
            machine: AttemptMachine::new(attempts, self.ownership, self.backoff),
            spare: Spare::Ready(req),
            attempts,
            dependency,
            mode,
        };
        Box::pin(async move {
            loop {
                let res = next.clone().run(call.attempt(), extensions).await;
                match call.answered(self, res) {
                    ControlFlow::Break(res) => return res,
                    // Boxed: a timer held in place would take its room in
                    // every call's future, retried or not.
                    ControlFlow::Continue(Some(delay)) => Box::pin(tokio::time::sleep(delay)).await,
                    ControlFlow::Continue(None) => {}
                }
            }
        })
    }
}

/// One call's state between its attempts.
///
/// Its steps are functions of their own, which take the attempt's
/// request and answer by value: a variable the call's future borrows is
/// kept in it across every await (the compiler cannot tell when the
/// borrow ends), and the request and the answer (264 and 136 bytes) then
/// took half of the boxed future, copied in whole when it is made.
struct Call {
    machine: AttemptMachine,
    spare: Spare,
    attempts: u32,
    dependency: usize,
    mode: DependencyMode,
}

impl Call {
    /// The next attempt's request, a copy of it kept when another
    /// attempt may follow.
    fn attempt(&mut self) -> Request {
        let attempt = self.spare.take().expect("a request for every attempt");
        if self.machine.attempt() + 1 < self.attempts {
            self.spare = Spare::of(&attempt);
        }
        attempt
    }

    /// What an attempt's answer makes of the call: its end (the answer
    /// returned, the call recorded), or another attempt, after a delay
    /// or at once.
    fn answered(
        &mut self,
        retry: &OwnershipRetry,
        res: Result<Response>,
    ) -> ControlFlow<Result<Response>, Option<Duration>> {
        if not_sent(&res) {
            return ControlFlow::Break(res);
        }
        let (answer, advice) = retry.classify(&res);
        let (advice, too_long) = match advice {
            Advice::RetryAfter(d) if d > retry.max_retry_after => (Advice::Silent, true),
            a => (a, false),
        };
        let budget = || retry.budget.as_ref().is_none_or(Budget::try_withdraw);
        let decision =
            self.machine
                .on_advised_answer(answer, advice, too_long, budget, fastrand::f64);
        let delay = match decision {
            Decision::RetryNow => None,
            Decision::RetryAfter(d) => Some(d),
            Decision::Stop(outcome) => {
                self.ended(outcome);
                return ControlFlow::Break(res);
            }
        };
        // An answer carries its URL, and so does every error of
        // reqwest's that a request was sent for: a retry always has
        // its request, but a call that could not make one stops
        // there, owed a retry by the hop above (rule 5).
        if !self.spare.aim(&res) {
            let outcome = self.machine.cannot_retry();
            self.ended(outcome);
            return ControlFlow::Break(res);
        }
        ControlFlow::Continue(delay)
    }

    /// Records the call's outcome in the request's record.
    fn ended(&self, outcome: CallOutcome) {
        tower_error_ownership::record::record(outcome.outbound(self.dependency, self.mode));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn calls_dated_in_batches_are_all_in_the_budget_when_a_retry_is_asked() {
        let b = Budget::new(0.1, Duration::from_secs(10), 0.0);
        // 25 calls: one batch of 16 dated, 9 waiting.
        for _ in 0..25 {
            b.deposit();
        }
        assert_eq!(b.undated.load(Ordering::Relaxed), 9);
        // Asking for a retry dates the 9: 2.5 tokens, two retries.
        assert!(b.try_withdraw());
        assert_eq!(b.undated.load(Ordering::Relaxed), 0);
        assert!(b.try_withdraw());
        assert!(!b.try_withdraw());
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_dated_late_expires_with_the_window() {
        let b = Budget::new(0.1, Duration::from_secs(10), 0.0);
        for _ in 0..DATED_TOGETHER {
            b.deposit();
        }
        tokio::time::advance(Duration::from_secs(11)).await;
        assert!(!b.try_withdraw(), "deposits older than the window expired");
        // At most 15 calls wait undated: 1.5 tokens, one retry, late.
        for _ in 0..DATED_TOGETHER - 1 {
            b.deposit();
        }
        tokio::time::advance(Duration::from_secs(11)).await;
        assert!(b.try_withdraw());
        assert!(!b.try_withdraw());
    }
}
