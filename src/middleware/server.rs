//! The server side: a tower layer that writes the claim header.
//!
//! [`OwnershipLayer`] wraps any service of `http::Request`s. For every
//! request it reads (or opens) the root trace, opens a
//! [`RequestContext`](super::context::RequestContext), runs the inner
//! service inside it, and — when the response is an error — decides the
//! claim from what the request's outbound calls recorded and writes it on
//! the response.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::ready;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderName, HeaderValue, Request, Response};
use pin_project_lite::pin_project;
use tokio::task::futures::TaskLocalFuture;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::context::{self, RequestContext, Trace, TraceHeader as _};
use super::{Observer, Served, ABANDONED};
use crate::ownership::learn::Learner;
use crate::ownership::{claim, is_error_status, Attribution, Claim};

/// Settings a whole fleet shares and may change while it runs.
#[derive(Debug)]
pub struct OwnershipControl {
    attribution: AtomicU8,
    at_least_once: AtomicBool,
    /// How long the end user waits for a root request, µs; `u64::MAX`
    /// when it waits for every answer.
    root_timeout_us: AtomicU64,
    /// Whether the end user's deadline is propagated to the entry.
    root_deadline_propagated: AtomicBool,
}

impl OwnershipControl {
    /// New settings.
    pub fn new(attribution: Attribution, at_least_once: bool) -> OwnershipControl {
        OwnershipControl {
            attribution: AtomicU8::new(attribution as u8),
            at_least_once: AtomicBool::new(at_least_once),
            root_timeout_us: AtomicU64::new(u64::MAX),
            root_deadline_propagated: AtomicBool::new(false),
        }
    }

    /// The attribution mode in force.
    pub fn attribution(&self) -> Attribution {
        match self.attribution.load(Ordering::Relaxed) {
            0 => Attribution::Simple,
            2 => Attribution::Learned,
            _ => Attribution::Declared,
        }
    }

    /// Changes the attribution mode.
    pub fn set_attribution(&self, a: Attribution) {
        self.attribution.store(a as u8, Ordering::Relaxed);
    }

    /// Whether rule 5 is on.
    pub fn at_least_once(&self) -> bool {
        self.at_least_once.load(Ordering::Relaxed)
    }

    /// Turns rule 5 on or off.
    pub fn set_at_least_once(&self, on: bool) {
        self.at_least_once.store(on, Ordering::Relaxed);
    }

    /// How long the end user waits for a root request, if it gives up.
    pub fn root_timeout(&self) -> Option<Duration> {
        match self.root_timeout_us.load(Ordering::Relaxed) {
            u64::MAX => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// Whether the end user's deadline is propagated to the entry.
    pub fn root_deadline_propagated(&self) -> bool {
        self.root_deadline_propagated.load(Ordering::Relaxed)
    }

    /// Sets the end user's patience (`load.timeout`): a request that opens
    /// a root request has that long before its caller gives up. The entry
    /// always knows it (late attempts are measured against it); with
    /// `propagated` it also acts on it, as on a deadline a caller
    /// propagated (`deadline: propagate`).
    pub fn set_root_deadline(&self, timeout: Option<Duration>, propagated: bool) {
        let us = timeout.map_or(u64::MAX, |t| {
            u64::try_from(t.as_micros()).unwrap_or(u64::MAX - 1)
        });
        self.root_timeout_us.store(us, Ordering::Relaxed);
        self.root_deadline_propagated
            .store(propagated, Ordering::Relaxed);
    }
}

impl Default for OwnershipControl {
    fn default() -> Self {
        OwnershipControl::new(Attribution::Declared, true)
    }
}

/// What one service's server layer needs.
pub struct ServerConfig {
    service: usize,
    header: HeaderName,
    enabled: AtomicBool,
    control: Arc<OwnershipControl>,
    learner: Learner,
    observer: Arc<dyn Observer>,
    roots: Arc<AtomicU64>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("service", &self.service)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl ServerConfig {
    /// Whether this service writes claim headers.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// What this service has learned about its dependencies.
    pub fn learner(&self) -> &Learner {
        &self.learner
    }
}

/// The server-side ownership layer.
#[derive(Debug, Clone)]
pub struct OwnershipLayer {
    config: Arc<ServerConfig>,
}

/// An invalid claim header name.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a valid HTTP header name")]
pub struct BadHeaderName(pub String);

impl OwnershipLayer {
    /// A layer for service number `service`, writing `header`, reporting to
    /// `observer`, with default settings and its own root-id source.
    pub fn new(
        service: usize,
        header: &str,
        observer: Arc<dyn Observer>,
    ) -> Result<OwnershipLayer, BadHeaderName> {
        OwnershipLayer::with_control(
            service,
            header,
            true,
            Arc::new(OwnershipControl::default()),
            observer,
            Arc::new(AtomicU64::new(1)),
        )
    }

    /// A layer sharing fleet-wide settings and a fleet-wide root-id source.
    /// `enabled: false` runs the layer for observation only: no claim
    /// header is written, as for a service without the middleware.
    pub fn with_control(
        service: usize,
        header: &str,
        enabled: bool,
        control: Arc<OwnershipControl>,
        observer: Arc<dyn Observer>,
        roots: Arc<AtomicU64>,
    ) -> Result<OwnershipLayer, BadHeaderName> {
        let header =
            HeaderName::from_bytes(header.as_bytes()).map_err(|_| BadHeaderName(header.into()))?;
        Ok(OwnershipLayer {
            config: Arc::new(ServerConfig {
                service,
                header,
                enabled: AtomicBool::new(enabled),
                control,
                learner: Learner::default(),
                observer,
                roots,
            }),
        })
    }

    /// The layer's configuration, shared with every service it wraps.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.config.clone()
    }
}

impl<S> Layer<S> for OwnershipLayer {
    type Service = Ownership<S>;
    fn layer(&self, inner: S) -> Ownership<S> {
        Ownership {
            inner,
            config: self.config.clone(),
        }
    }
}

/// A service wrapped by [`OwnershipLayer`].
#[derive(Debug, Clone)]
pub struct Ownership<S> {
    inner: S,
    config: Arc<ServerConfig>,
}

pin_project! {
    /// The future of an [`Ownership`] service: the inner service's future
    /// run inside the request context, then the claim decision.
    pub struct OwnershipFuture<F> {
        #[pin]
        inner: TaskLocalFuture<Arc<RequestContext>, F>,
        ctx: Arc<RequestContext>,
        cfg: Arc<ServerConfig>,
        started: Instant,
        answered: bool,
    }

    impl<F> PinnedDrop for OwnershipFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if !*this.answered {
                abandoned(this.cfg, this.ctx, this.started.elapsed());
            }
        }
    }
}

impl<F, R, E> Future for OwnershipFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = Result<Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let res = ready!(this.inner.poll(cx));
        *this.answered = true;
        let mut res = res?;
        finish(this.cfg, this.ctx, this.started.elapsed(), &mut res);
        Poll::Ready(Ok(res))
    }
}

/// The caller went away before the answer (its attempt timed out, or it
/// disconnected), and the server dropped the request: it was received all
/// the same, and is reported as abandoned, with no status and no claim.
fn abandoned(cfg: &ServerConfig, ctx: &RequestContext, elapsed: std::time::Duration) {
    let record = ctx.take();
    cfg.observer.served(&Served {
        service: cfg.service,
        trace: ctx.trace,
        is_root: ctx.is_root,
        status: ABANDONED,
        claim: None,
        own_fault: false,
        dependency_failed: record.outbound.iter().any(|o| o.failed),
        elapsed,
    });
}

/// A request's deadline, arriving at `now`, and whether it was propagated:
/// the one its caller sent in the deadline header (propagated), and for a
/// request that opens a root the end user's patience (propagated when the
/// fleet says so); the earlier of the two when both are known. A deadline
/// beyond the clock's range is no deadline.
fn deadline(
    control: &OwnershipControl,
    headers: &http::HeaderMap,
    is_root: bool,
    now: Instant,
) -> (Option<Instant>, bool) {
    let sent = context::deadline_from_headers(headers).and_then(|d| now.checked_add(d));
    let user = if is_root {
        control.root_timeout().and_then(|t| now.checked_add(t))
    } else {
        None
    };
    match (sent, user) {
        (None, None) => (None, false),
        (Some(s), None) => (Some(s), true),
        (None, Some(u)) => (Some(u), control.root_deadline_propagated()),
        (Some(s), Some(u)) => (Some(s.min(u)), true),
    }
}

/// On the way out: decide and write the claim, feed the learner, report.
fn finish<R>(
    cfg: &ServerConfig,
    ctx: &RequestContext,
    elapsed: std::time::Duration,
    res: &mut Response<R>,
) {
    let record = ctx.take();
    let status = res.status().as_u16();
    let dependency_failed = record.outbound.iter().any(|o| o.failed);
    let error = is_error_status(status);
    if error {
        cfg.learner.observe(&record.outbound, true);
    } else if dependency_failed {
        cfg.learner.observe(&record.outbound, false);
    }
    let claim = if error && cfg.enabled() {
        let d = claim::decide(
            &record.outbound,
            cfg.control.attribution(),
            cfg.control.at_least_once(),
            |o| cfg.learner.mode(o.dependency),
        );
        res.headers_mut().insert(
            cfg.header.clone(),
            HeaderValue::from_static(Claim::wire_value(d.claimed)),
        );
        Some((d.claimed, d.reason))
    } else {
        None
    };
    cfg.observer.served(&Served {
        service: cfg.service,
        trace: ctx.trace,
        is_root: ctx.is_root,
        status,
        claim,
        own_fault: error && record.own_fault,
        dependency_failed,
        elapsed,
    });
}

impl<S, B, R> Service<Request<B>> for Ownership<S>
where
    S: Service<Request<B>, Response = Response<R>> + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
    R: Send + 'static,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = OwnershipFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let cfg = self.config.clone();
        let (trace, is_root) = match Trace::from_headers(req.headers()) {
            Some(t) => (t, false),
            None => (
                Trace {
                    root: cfg.roots.fetch_add(1, Ordering::Relaxed),
                    depth: 0,
                },
                true,
            ),
        };
        let started = Instant::now();
        let (deadline, propagated) = deadline(&cfg.control, req.headers(), is_root, started);
        let ctx = Arc::new(RequestContext::new(trace, is_root).with_deadline(deadline, propagated));
        // The inner future owns what it needs, so the service that was
        // made ready is called in place: no clone per request.
        OwnershipFuture {
            inner: context::scope(ctx.clone(), self.inner.call(req)),
            ctx,
            cfg,
            started,
            answered: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(deadline: Option<&str>) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        if let Some(v) = deadline {
            h.insert(context::DEADLINE_HEADER, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_request_knows_its_deadline_from_its_caller_or_its_end_user() {
        let ms = Duration::from_millis;
        let now = Instant::now();
        let c = OwnershipControl::default();
        // Nothing known: no deadline, whether root or not.
        assert_eq!(deadline(&c, &headers(None), true, now), (None, false));
        // A caller's header is a propagated deadline; garbage is none.
        assert_eq!(
            deadline(&c, &headers(Some("80")), false, now),
            (Some(now + ms(80)), true)
        );
        assert_eq!(
            deadline(&c, &headers(Some("-80")), false, now),
            (None, false)
        );
        // The farthest a header can say is still a deadline, far away.
        let far = u64::MAX.to_string();
        assert!(deadline(&c, &headers(Some(&far)), false, now).0 > Some(now + ms(1 << 40)));
        // The end user's patience: known at a root, acted on when propagated.
        c.set_root_deadline(Some(ms(300)), false);
        assert_eq!(
            deadline(&c, &headers(None), true, now),
            (Some(now + ms(300)), false)
        );
        assert_eq!(deadline(&c, &headers(None), false, now), (None, false));
        c.set_root_deadline(Some(ms(300)), true);
        assert_eq!(
            deadline(&c, &headers(None), true, now),
            (Some(now + ms(300)), true)
        );
        // Both: the earlier.
        assert_eq!(
            deadline(&c, &headers(Some("120")), true, now),
            (Some(now + ms(120)), true)
        );
        c.set_root_deadline(None, true);
        assert_eq!(c.root_timeout(), None);
        assert_eq!(deadline(&c, &headers(None), true, now), (None, false));
    }
}
