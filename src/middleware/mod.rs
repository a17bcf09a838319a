//! The ownership middleware: a tower layer for the server side and a retry
//! client around reqwest for the client side.
//!
//! Both halves work for any axum service and any reqwest caller, not only
//! the fleet. The server layer opens a per-request context, runs the
//! service, and writes the claim header on error responses from what the
//! client recorded into that context. It wraps the *whole* router, as one
//! service, the way the fleet runs it: every request passes through it
//! once, before routing. Given to `Router::layer` instead, it would be
//! boxed into each route, and each request would pay for cloning those
//! boxed services.
//!
//! ```no_run
//! use std::sync::Arc;
//! use axum::{extract::Request, http::StatusCode, routing::get, Router};
//! use chaoslab::middleware::{client::{EdgeState, RetryClient}, server::OwnershipLayer, NoopObserver};
//! use chaoslab::ownership::{edge_budget::BudgetModel, policy::EdgePolicy, DependencyMode};
//! use tower::Layer as _;
//!
//! # async fn demo() {
//! let observer = Arc::new(NoopObserver);
//! let client = Arc::new(RetryClient::new(0, "x-error-claim", observer.clone(), 7).unwrap());
//! // Two attempts, a 10% budget, claims honoured.
//! let policy = EdgePolicy {
//!     attempts: 2,
//!     budget: Some(BudgetModel::Window {
//!         ratio: 0.1,
//!         min_per_sec: 0.0,
//!         ttl: std::time::Duration::from_secs(10),
//!     }),
//!     ownership: true,
//!     signal: None,
//!     breaker: None,
//!     backoff: std::time::Duration::ZERO,
//!     timeout: std::time::Duration::from_secs(1),
//!     deadline_propagate: false,
//! };
//! let payments = Arc::new(EdgeState::new(
//!     0, 1, DependencyMode::FailClose, "http://127.0.0.1:8081/", policy,
//! ));
//! let router = Router::new().route("/", get(move || {
//!     let (client, payments) = (client.clone(), payments.clone());
//!     async move {
//!         // Recorded into this request's context: if payments fails,
//!         // this service's 500 goes out with `x-error-claim: false`.
//!         let out = client.call(&payments, None).await;
//!         if out.failed { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::OK }
//!     }
//! }));
//! // The layer wraps the router itself: `app` is an `Ownership<Router>`.
//! let app = OwnershipLayer::new(0, "x-error-claim", observer)
//!     .unwrap()
//!     .layer(router);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let make = axum::ServiceExt::<Request>::into_make_service(app);
//! axum::serve(listener, make).await.unwrap();
//! # }
//! ```

pub mod balance;
pub mod client;
pub mod context;
pub mod server;
mod slots;

pub use crate::ownership::observe::{
    Attempted, CallFailed, NoopObserver, Observer, RetrySent, Served, Trace, ABANDONED,
};
