//! Error ownership for tower services: the failing service claims its
//! error, and only the caller right above it retries.
//!
//! # Why
//!
//! Retries multiply as they climb a call chain: with one retry per hop, a
//! service three hops below a failure sees 8× its normal load, exactly
//! when it can least afford it. Retry budgets tame that to 1.1× per level,
//! which still let a Core Entity service more than five levels deep take
//! 46% to 135% more traffic in Uber's incident of 18 November 2025. With
//! *error ownership* the service that caused an error claims it in a
//! response header (`x-error-claim: true`), a service that merely passed
//! an error up unclaims it (`false`), and callers retry only claimed or
//! unmarked errors: one hop retries, and the load below the failure stays
//! at 1.1× whatever the depth. Uber counted 9.5 million spurious requests
//! stopped across its mesh.
//!
//! # What is here
//!
//! * [`OwnershipLayer`]: the server side, for any tower service of
//!   `http::Request`s (axum, hyper, tonic). It keeps a [`record`] of the
//!   request's outbound calls and writes the claim on every error answer
//!   (for gRPC, beside `grpc-status`).
//! * [`OwnershipPolicy`]: a `tower::retry::Policy` for hyper and tonic
//!   clients that retries with ownership, a budget and backoff, and
//!   records each call. For reqwest, `reqwest-error-ownership` does the
//!   same as a `reqwest_middleware::Middleware`.
//! * [`Observer`]: a hook on every answer (its claim, its record), for
//!   metrics.
//!
//! A service adopts it in two lines, the layer on its router and the
//! middleware on its client:
//!
//! ```no_run
//! use axum::{Router, routing::get};
//! use tower_error_ownership::OwnershipLayer;
//! # async fn demo() {
//! let app = Router::new().route("/", get(|| async { "ok" })).layer(OwnershipLayer::new());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await.unwrap();
//! axum::serve(listener, app).await.unwrap();
//! # }
//! ```
//!
//! A call is fail-close unless it says otherwise: a call whose failure the
//! service survives (it answers without it) carries [`FailOpen`] in its
//! request's extensions, and its failure no longer unclaims the service's
//! own errors. Calls made from a spawned task are recorded only through
//! [`record::spawn`]; forgetting it is exactly the *dropped context* of
//! Uber's post (see [`record`]).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

// The README's examples are compiled with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod layer;
pub mod policy;
pub mod record;

pub use error_ownership::claim::{ClaimDecision, ClaimReason, Outbound};
pub use error_ownership::{Attribution, Claim, DependencyMode};
pub use layer::{
    Answer, GrpcOwnershipLayer, Ownership, OwnershipLayer, Settings, CLAIM_HEADER,
    UBER_CLAIM_HEADER,
};
pub use policy::{OwnershipPolicy, Unbudgeted};

/// In a request's extensions: the call is *fail-open*, the service answers
/// without it when it fails, so its failure does not make the service's
/// own errors someone else's.
///
/// ```
/// let mut req = http::Request::new(());
/// req.extensions_mut().insert(tower_error_ownership::FailOpen);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FailOpen;

/// In a request's extensions: which dependency the call goes to, as the
/// service numbers them. Only `Learned` attribution reads it (it learns a
/// mode per dependency); calls without it count as dependency 0.
///
/// ```
/// let mut req = http::Request::new(());
/// req.extensions_mut().insert(tower_error_ownership::Dependency(2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dependency(pub usize);

/// Told about every request the layer serves: when it arrives, and when
/// its answer (or its abandonment) is known. Attach one with
/// [`OwnershipLayer::observer`].
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use tower_error_ownership::{layer::Answer, Observer, OwnershipLayer};
///
/// #[derive(Default)]
/// struct Claims(AtomicU64);
///
/// impl Observer for Claims {
///     type Tag = std::time::Instant;
///     fn opened<B>(&self, _req: &mut http::Request<B>) -> std::time::Instant {
///         std::time::Instant::now()
///     }
///     fn answered(&self, _started: std::time::Instant, answer: &Answer<'_>) {
///         if answer.claim.is_some_and(|c| c.claimed) {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
/// let layer = OwnershipLayer::new().observer(Claims::default());
/// # let _ = layer;
/// ```
pub trait Observer: Send + Sync + 'static {
    /// What the observer keeps from a request until its answer.
    type Tag: Send + 'static;
    /// A request arrived.
    /// It may read the request, or tag it (an extension, a header)
    /// before the service sees it.
    fn opened<B>(&self, req: &mut http::Request<B>) -> Self::Tag;
    /// Its answer went out (or it was abandoned: `answer.status` is
    /// `None`). Called once per request, from the task that served it.
    fn answered(&self, tag: Self::Tag, answer: &Answer<'_>);
}

/// The observer that observes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    type Tag = ();
    fn opened<B>(&self, _req: &mut http::Request<B>) {}
    fn answered(&self, _tag: (), _answer: &Answer<'_>) {}
}
