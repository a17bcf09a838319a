//! The server side: a tower layer that claims or unclaims every error answer.
//!
//! [`OwnershipLayer`] wraps any service of `http::Request`s (an axum
//! `Router`, a hyper service, a tonic server). For every request it opens a
//! [`record`] and runs the inner service inside it (the
//! record kept in place, in the request's own future: no allocation, no
//! lock, until a call leaves the task); when the answer
//! is an error it decides the claim from what the request's outbound calls
//! recorded ([`error_ownership::claim::decide`]) and writes it:
//!
//! * on an HTTP answer (an error is a 5xx or a 429), in the claim header;
//! * on a gRPC answer (`content-type: application/grpc…` to a request
//!   over HTTP/2, which gRPC requires; an error is a `grpc-status` other
//!   than 0), beside `grpc-status`: in the headers of a *Trailers-Only*
//!   answer, in the trailers of an answer with a body. gRPC-Web
//!   (`application/grpc-web…`, its trailers in the body) is answered as
//!   HTTP.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use error_ownership::claim::{self, ClaimDecision};
use error_ownership::learn::Learner;
use error_ownership::{is_error_status, Attribution, Claim};
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, Version};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use crate::record::{self, Record, Scoped, Slot};
use crate::{NoObserver, Observer};

/// Uber's name for the claim header, for a service that talks to theirs:
/// `OwnershipLayer::new().header(UBER_CLAIM_HEADER)`.
pub static UBER_CLAIM_HEADER: HeaderName = HeaderName::from_static("x-uber-error-claim");

/// The default claim header, `x-error-claim`, as a header name.
pub static CLAIM_HEADER: HeaderName =
    HeaderName::from_static(error_ownership::DEFAULT_CLAIM_HEADER);

static GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");

/// Claim settings a whole fleet may share, changeable while it serves.
///
/// ```
/// use std::sync::Arc;
/// use tower_error_ownership::{Attribution, OwnershipLayer, Settings};
/// let settings = Arc::new(Settings::default());
/// let a = OwnershipLayer::new().with_settings(settings.clone());
/// let b = OwnershipLayer::new().with_settings(settings.clone());
/// // Later, from an admin endpoint: both services attribute as learned.
/// settings.set_attribution(Attribution::Learned);
/// assert_eq!(a.settings().attribution(), Attribution::Learned);
/// # let _ = b;
/// ```
#[derive(Debug)]
pub struct Settings {
    attribution: AtomicU8,
    at_least_once: AtomicBool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new(Attribution::Declared, true)
    }
}

impl Settings {
    /// Settings with this attribution, rule 5 on or off.
    pub fn new(attribution: Attribution, at_least_once: bool) -> Settings {
        Settings {
            attribution: AtomicU8::new(attribution as u8),
            at_least_once: AtomicBool::new(at_least_once),
        }
    }

    /// How a failed call's mode is known: `Declared` (the default) reads
    /// the mode the call declared ([`FailOpen`](crate::FailOpen)),
    /// `Simple` takes every failed call as fail-close, `Learned` uses what
    /// the service learned from its own answers.
    pub fn attribution(&self) -> Attribution {
        match self.attribution.load(Ordering::Relaxed) {
            0 => Attribution::Simple,
            2 => Attribution::Learned,
            _ => Attribution::Declared,
        }
    }

    /// Changes the attribution.
    pub fn set_attribution(&self, a: Attribution) {
        self.attribution.store(a as u8, Ordering::Relaxed);
    }

    /// Whether rule 5 is on (at-least-once: a failed call on an edge with
    /// no retries configured is claimed, so the caller above makes the one
    /// retry the chain is owed). On by default.
    pub fn at_least_once(&self) -> bool {
        self.at_least_once.load(Ordering::Relaxed)
    }

    /// Turns rule 5 on or off.
    pub fn set_at_least_once(&self, on: bool) {
        self.at_least_once.store(on, Ordering::Relaxed);
    }
}

/// One layer's own state: whether it writes claims, what it learned.
#[derive(Debug)]
struct State {
    enabled: AtomicBool,
    learner: Learner,
}

/// What every request through one layer shares.
struct Shared<O> {
    header: HeaderName,
    settings: Arc<Settings>,
    state: Arc<State>,
    observer: Arc<O>,
}

impl<O> Shared<O> {
    /// The claim for an error answer with this record, written into
    /// `headers` when claims are on; `None` when they are off. Feeds the
    /// learner either way.
    fn decide(
        &self,
        record: &Record,
        error: bool,
        headers: &mut HeaderMap,
    ) -> Option<ClaimDecision> {
        let learner = &self.state.learner;
        let dependency_failed = record.outbound.iter().any(|o| o.failed);
        if error || dependency_failed {
            learner.observe(&record.outbound, error);
        }
        if !error || !self.state.enabled.load(Ordering::Relaxed) {
            return None;
        }
        let d = claim::decide(
            &record.outbound,
            self.settings.attribution(),
            self.settings.at_least_once(),
            |o| learner.mode(o.dependency),
        );
        headers.insert(
            self.header.clone(),
            HeaderValue::from_static(Claim::wire_value(d.claimed)),
        );
        Some(d)
    }
}

/// What the layer tells its [`Observer`] about one answer.
#[derive(Debug)]
pub struct Answer<'a> {
    /// The HTTP status; `None` when the request was abandoned (its future
    /// or its body dropped before the answer was complete).
    pub status: Option<u16>,
    /// The gRPC status, for a gRPC answer that carried one.
    pub grpc_status: Option<u32>,
    /// Whether the answer is an error.
    pub error: bool,
    /// The claim written, when one was.
    pub claim: Option<ClaimDecision>,
    /// What the request's outbound calls recorded.
    pub record: &'a Record,
}

/// The server-side ownership layer. See the [crate docs](crate).
///
/// It answers with the inner service's own response type, so it wraps a
/// whole axum `Router` as well as a route. For gRPC answers with a body,
/// whose status comes in the trailers, use [`OwnershipLayer::grpc`].
#[derive(Debug)]
pub struct OwnershipLayer<O = NoObserver> {
    header: HeaderName,
    settings: Arc<Settings>,
    state: Arc<State>,
    observer: Arc<O>,
}

impl<O> Clone for OwnershipLayer<O> {
    fn clone(&self) -> Self {
        OwnershipLayer {
            header: self.header.clone(),
            settings: self.settings.clone(),
            state: self.state.clone(),
            observer: self.observer.clone(),
        }
    }
}

impl Default for OwnershipLayer {
    fn default() -> Self {
        OwnershipLayer::new()
    }
}

impl OwnershipLayer {
    /// A layer writing `x-error-claim`, with `Declared` attribution and
    /// rule 5 on, and no observer.
    pub fn new() -> OwnershipLayer {
        OwnershipLayer {
            header: CLAIM_HEADER.clone(),
            settings: Arc::new(Settings::default()),
            state: Arc::new(State {
                enabled: AtomicBool::new(true),
                learner: Learner::default(),
            }),
            observer: Arc::new(NoObserver),
        }
    }
}

impl<O: Observer> OwnershipLayer<O> {
    /// The same layer writing `header` instead (for example
    /// [`UBER_CLAIM_HEADER`]).
    pub fn header(self, header: HeaderName) -> OwnershipLayer<O> {
        OwnershipLayer { header, ..self }
    }

    /// The same layer sharing `settings` (one switch for a whole fleet).
    pub fn with_settings(self, settings: Arc<Settings>) -> OwnershipLayer<O> {
        OwnershipLayer { settings, ..self }
    }

    /// The same layer reporting every request to `observer`.
    pub fn observer<P: Observer>(self, observer: P) -> OwnershipLayer<P> {
        OwnershipLayer {
            header: self.header,
            settings: self.settings,
            state: self.state,
            observer: Arc::new(observer),
        }
    }

    /// The settings, to change while the service runs.
    pub fn settings(&self) -> &Arc<Settings> {
        &self.settings
    }

    /// The observer.
    pub fn observer_ref(&self) -> &O {
        &self.observer
    }

    /// Whether this layer writes claims. Off, it still records and
    /// reports to its observer, as a service without the mechanism would
    /// be watched.
    pub fn enabled(&self) -> bool {
        self.state.enabled.load(Ordering::Relaxed)
    }

    /// Turns writing claims on or off, for this layer and its clones.
    pub fn set_enabled(&self, on: bool) {
        self.state.enabled.store(on, Ordering::Relaxed);
    }

    /// What the service learned about its dependencies (read in
    /// `Learned` attribution), shared by this layer and its clones.
    pub fn learner(&self) -> &Learner {
        &self.state.learner
    }

    /// The same layer for gRPC services whose answers carry their status
    /// in the trailers: it writes the claim there, beside `grpc-status`.
    /// Its services answer with a [`ClaimBody`] around the inner body.
    pub fn grpc(self) -> GrpcOwnershipLayer<O> {
        GrpcOwnershipLayer(self)
    }

    fn shared(&self) -> Arc<Shared<O>> {
        Arc::new(Shared {
            header: self.header.clone(),
            settings: self.settings.clone(),
            state: self.state.clone(),
            observer: self.observer.clone(),
        })
    }
}

impl<S, O: Observer> Layer<S> for OwnershipLayer<O> {
    type Service = Ownership<S, O>;
    fn layer(&self, inner: S) -> Ownership<S, O> {
        Ownership {
            inner,
            shared: self.shared(),
        }
    }
}

/// A service wrapped by [`OwnershipLayer`].
pub struct Ownership<S, O = NoObserver> {
    inner: S,
    shared: Arc<Shared<O>>,
}

impl<S: Clone, O> Clone for Ownership<S, O> {
    fn clone(&self) -> Self {
        Ownership {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: std::fmt::Debug, O> std::fmt::Debug for Ownership<S, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ownership")
            .field("inner", &self.inner)
            .field("header", &self.shared.header)
            .finish_non_exhaustive()
    }
}

impl<S, O: Observer> Ownership<S, O> {
    /// The request's future, built in place: it is moved no further
    /// than into the caller's.
    fn open<B>(&mut self, mut req: Request<B>) -> ResponseFuture<S::Future, O>
    where
        S: Service<Request<B>>,
    {
        let tag = self.shared.observer.opened(&mut req);
        let http2 = req.version() == Version::HTTP_2;
        ResponseFuture {
            pending: Some(Pending {
                shared: self.shared.clone(),
                tag,
                http2,
            }),
            inner: record::scope_in_place(self.inner.call(req)),
        }
    }
}

impl<S, O, B, R> Service<Request<B>> for Ownership<S, O>
where
    S: Service<Request<B>, Response = Response<R>>,
    O: Observer,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, O>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        self.open(req)
    }
}

/// [`OwnershipLayer`] for gRPC services: see [`OwnershipLayer::grpc`].
#[derive(Debug)]
pub struct GrpcOwnershipLayer<O = NoObserver>(OwnershipLayer<O>);

impl<O> Clone for GrpcOwnershipLayer<O> {
    fn clone(&self) -> Self {
        GrpcOwnershipLayer(self.0.clone())
    }
}

impl<S, O: Observer> Layer<S> for GrpcOwnershipLayer<O> {
    type Service = GrpcOwnership<S, O>;
    fn layer(&self, inner: S) -> GrpcOwnership<S, O> {
        GrpcOwnership(self.0.layer(inner))
    }
}

/// A service wrapped by [`GrpcOwnershipLayer`].
#[derive(Debug)]
pub struct GrpcOwnership<S, O = NoObserver>(Ownership<S, O>);

impl<S: Clone, O> Clone for GrpcOwnership<S, O> {
    fn clone(&self) -> Self {
        GrpcOwnership(self.0.clone())
    }
}

impl<S, O, B, R> Service<Request<B>> for GrpcOwnership<S, O>
where
    S: Service<Request<B>, Response = Response<R>>,
    O: Observer,
{
    type Response = Response<ClaimBody<R, O>>;
    type Error = S::Error;
    type Future = GrpcResponseFuture<S::Future, O>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        GrpcResponseFuture {
            inner: self.0.open(req),
        }
    }
}

/// What is left to do for one request once its answer is known.
struct Pending<O: Observer> {
    shared: Arc<Shared<O>>,
    tag: O::Tag,
    /// Whether the request came over HTTP/2: only then may the answer be
    /// gRPC (and its content type is looked at).
    http2: bool,
}

impl<O: Observer> Pending<O> {
    /// Decides and writes the claim into `headers`, and reports.
    fn finish(
        self,
        slot: &mut Slot,
        status: Option<u16>,
        grpc_status: Option<u32>,
        headers: Option<&mut HeaderMap>,
    ) {
        let error = match grpc_status {
            Some(code) => code != 0,
            None => status.is_some_and(is_error_status),
        };
        slot.read(|record| {
            let claim = headers.and_then(|h| self.shared.decide(record, error, h));
            self.shared.observer.answered(
                self.tag,
                &Answer {
                    status,
                    grpc_status,
                    error,
                    claim,
                    record,
                },
            );
        });
    }
}

pin_project! {
    /// The future of an [`Ownership`] service: the inner future run inside
    /// the request's record, then the claim.
    pub struct ResponseFuture<F, O>
    where
        O: Observer,
    {
        #[pin]
        inner: Scoped<F>,
        pending: Option<Pending<O>>,
    }

    impl<F, O> PinnedDrop for ResponseFuture<F, O>
    where
        O: Observer,
    {
        fn drop(this: Pin<&mut Self>) {
            // Dropped before the answer: the caller went away.
            let this = this.project();
            if let Some(p) = this.pending.take() {
                p.finish(this.inner.slot(), None, None, None);
            }
        }
    }
}

/// An answer whose claim waits for its trailers: the work left, the
/// record, and the answer's HTTP status.
type Deferred<O> = (Pending<O>, Slot, u16);

/// An answer, and what was made of its claim's work left, if it waits.
type Settled<R, E, D> = (Result<Response<R>, E>, Option<D>);

impl<F, O, R, E> ResponseFuture<F, O>
where
    F: Future<Output = Result<Response<R>, E>>,
    O: Observer,
{
    /// The answer, its claim written into it when its headers tell its
    /// status; when the claim waits for the trailers, what `defer` makes
    /// of the work left. The answer stays where it is: an axum response is
    /// some 100 bytes, and every move through the layers is a copy (so is
    /// the work left, some 150: `defer` finishes it, or boxes it).
    fn poll_settled<D>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        defer: impl FnOnce(Deferred<O>) -> D,
    ) -> Poll<Settled<R, E, D>> {
        let mut this = self.project();
        let mut res = ready!(this.inner.as_mut().poll(cx));
        let Some(p) = this.pending.take() else {
            return Poll::Ready((res, None));
        };
        let slot = this.inner.slot();
        let Ok(answer) = res.as_mut() else {
            p.finish(slot, None, None, None);
            return Poll::Ready((res, None));
        };
        let status = answer.status().as_u16();
        if !p.http2 || !is_grpc(answer.headers()) {
            p.finish(slot, Some(status), None, Some(answer.headers_mut()));
            return Poll::Ready((res, None));
        }
        if let Some(code) = grpc_status(answer.headers()) {
            // Trailers-Only: the status, and so the claim, in the headers.
            p.finish(slot, Some(status), Some(code), Some(answer.headers_mut()));
            return Poll::Ready((res, None));
        }
        let deferred = defer((p, std::mem::take(slot), status));
        Poll::Ready((res, Some(deferred)))
    }
}

impl<F, O, R, E> Future for ResponseFuture<F, O>
where
    F: Future<Output = Result<Response<R>, E>>,
    O: Observer,
{
    type Output = Result<Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A gRPC answer with a body, through the HTTP layer: its status
        // comes in trailers this layer does not read (see `grpc`).
        let (res, _) = ready!(self.poll_settled(cx, |(p, mut slot, status)| {
            p.finish(&mut slot, Some(status), None, None)
        }));
        Poll::Ready(res)
    }
}

pin_project! {
    /// The future of a [`GrpcOwnership`] service.
    pub struct GrpcResponseFuture<F, O>
    where
        O: Observer,
    {
        #[pin]
        inner: ResponseFuture<F, O>,
    }
}

impl<F, O, R, E> Future for GrpcResponseFuture<F, O>
where
    F: Future<Output = Result<Response<R>, E>>,
    O: Observer,
{
    type Output = Result<Response<ClaimBody<R, O>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (res, grpc) = ready!(self.project().inner.poll_settled(cx, Box::new));
        Poll::Ready(res.map(|res| res.map(|inner| ClaimBody { inner, grpc })))
    }
}

/// Whether the answer is gRPC's: `application/grpc`, alone or with a
/// `+format` or parameters; not gRPC-Web (`application/grpc-web…`), whose
/// trailers come in the body, so that it is answered as HTTP.
fn is_grpc(headers: &HeaderMap) -> bool {
    headers.get(http::header::CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes()
            .strip_prefix(b"application/grpc")
            .is_some_and(|rest| matches!(rest.first(), None | Some(b'+' | b';')))
    })
}

/// A `grpc-status` value; one that is not a number reads as 2 (UNKNOWN),
/// as gRPC clients read it.
fn grpc_status(headers: &HeaderMap) -> Option<u32> {
    let v = headers.get(&GRPC_STATUS)?;
    Some(
        std::str::from_utf8(v.as_bytes())
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(2),
    )
}

pin_project! {
    /// The body of an answer through the layer: the inner body unchanged,
    /// except that a gRPC answer's trailers get the claim beside
    /// `grpc-status`.
    pub struct ClaimBody<B, O>
    where
        O: Observer,
    {
        #[pin]
        inner: B,
        grpc: Option<Box<Deferred<O>>>,
    }

    impl<B, O> PinnedDrop for ClaimBody<B, O>
    where
        O: Observer,
    {
        fn drop(this: Pin<&mut Self>) {
            // A gRPC body dropped before its trailers: abandoned.
            if let Some(p) = this.project().grpc.take() {
                let (p, mut slot, _) = *p;
                p.finish(&mut slot, None, None, None);
            }
        }
    }
}

impl<B: Body, O: Observer> Body for ClaimBody<B, O> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let mut frame = ready!(this.inner.poll_frame(cx));
        if this.grpc.is_some() {
            match frame.as_mut() {
                Some(Ok(f)) => {
                    if let Some(trailers) = f.trailers_mut() {
                        let (p, mut slot, status) = *this.grpc.take().expect("checked above");
                        let code = grpc_status(trailers);
                        p.finish(&mut slot, Some(status), code, Some(trailers));
                    }
                }
                // The end without trailers: a gRPC answer with no status.
                None => {
                    let (p, mut slot, status) = *this.grpc.take().expect("checked above");
                    p.finish(&mut slot, Some(status), None, None);
                }
                Some(Err(_)) => {}
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_is_its_content_type_and_its_variants_but_not_grpc_web() {
        let is = |ct: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(ct));
            is_grpc(&h)
        };
        assert!(is("application/grpc"));
        assert!(is("application/grpc+proto"));
        assert!(is("application/grpc;charset=utf-8"));
        assert!(!is("application/grpc-web"));
        assert!(!is("application/grpc-web+proto"));
        assert!(!is("application/grpcx"));
        assert!(!is("application/json"));
        assert!(!is_grpc(&HeaderMap::new()));
    }
}
