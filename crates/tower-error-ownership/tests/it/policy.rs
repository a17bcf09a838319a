//! `OwnershipPolicy` around a hyper client, through tower's `Retry`,
//! against real servers.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::retry::Retry;
use tower::{Service, ServiceExt};
use tower_error_ownership::record::{self, RequestRecord};
use tower_error_ownership::{Claim, FailOpen, OwnershipPolicy, Unbudgeted};

async fn server(status: u16, headers: &[(&'static str, &'static str)]) -> (String, Arc<AtomicU32>) {
    let seen = Arc::new(AtomicU32::new(0));
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
    }
    let count = seen.clone();
    let app = Router::new().route(
        "/",
        any(move || {
            count.fetch_add(1, Ordering::SeqCst);
            let h = h.clone();
            async move { (StatusCode::from_u16(status).unwrap(), h) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, app).into_future());
    (url, seen)
}

fn hyper_client() -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn call<P>(policy: P, url: &str, fail_open: bool) -> u16
where
    P: tower::retry::Policy<
            Request<Full<Bytes>>,
            http::Response<hyper::body::Incoming>,
            hyper_util::client::legacy::Error,
        > + Clone,
{
    let mut svc = Retry::new(policy, hyper_client());
    let mut req = Request::get(url).body(Full::new(Bytes::new())).unwrap();
    if fail_open {
        req.extensions_mut().insert(FailOpen);
    }
    let res = svc.ready().await.unwrap().call(req).await.unwrap();
    res.status().as_u16()
}

#[tokio::test]
async fn a_hyper_client_retries_claimed_errors_only() {
    for (status, claim, want) in [
        (200, None, 1),
        (500, Some("true"), 2),
        (503, None, 2),
        (502, Some("false"), 1),
    ] {
        let headers: Vec<_> = claim.map(|c| ("x-error-claim", c)).into_iter().collect();
        let (url, seen) = server(status, &headers).await;
        let policy = OwnershipPolicy::new().budget(Unbudgeted);
        assert_eq!(call(policy, &url, false).await, status);
        assert_eq!(seen.load(Ordering::SeqCst), want, "{status} {claim:?}");
    }
    // Three attempts without ownership: a disowned error is retried twice.
    let (url, seen) = server(502, &[("x-error-claim", "false")]).await;
    let plain = OwnershipPolicy::new()
        .attempts(3)
        .ownership(false)
        .budget(Unbudgeted);
    call(plain, &url, false).await;
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn tower_s_budget_caps_the_retries() {
    // tower's TpsBudget at 10% with no floor: 40 failing calls earn about
    // 4 retries.
    let budget = tower::retry::budget::TpsBudget::new(std::time::Duration::from_secs(10), 0, 0.1);
    let policy = OwnershipPolicy::new().budget(budget);
    let (url, seen) = server(500, &[("x-error-claim", "true")]).await;
    for _ in 0..40 {
        call(policy.clone(), &url, false).await;
    }
    let n = seen.load(Ordering::SeqCst);
    assert!((43..=44).contains(&n), "{n} attempts for 40 calls");
}

#[tokio::test]
async fn each_call_is_recorded_with_its_mode() {
    let (bad, _) = server(500, &[("x-error-claim", "true")]).await;
    let (disowned, _) = server(502, &[("x-error-claim", "false")]).await;
    let rec = Arc::new(RequestRecord::new());
    record::scope(rec.clone(), async {
        call(OwnershipPolicy::new(), &bad, false).await;
        call(OwnershipPolicy::new(), &disowned, true).await;
    })
    .await;
    let calls = rec.take().outbound;
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].mode,
        tower_error_ownership::DependencyMode::FailClose
    );
    assert_eq!(calls[0].claim_seen, Some(Claim::Claimed));
    assert_eq!(
        calls[1].mode,
        tower_error_ownership::DependencyMode::FailOpen
    );
    assert_eq!(calls[1].claim_seen, Some(Claim::Unclaimed));
    assert!(calls.iter().all(|c| c.failed));
}
