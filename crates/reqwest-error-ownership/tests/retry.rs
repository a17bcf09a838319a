//! The middleware against real servers: which answers it retries, how
//! often, and what it records for the request being served.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::routing::any;
use axum::Router;
use reqwest_error_ownership::{FailOpen, OwnershipRetry};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tower_error_ownership::record::{self, RequestRecord};
use tower_error_ownership::{Claim, DependencyMode};

/// A server that answers every request with `status` and `headers`, and
/// counts them.
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

fn client(retry: OwnershipRetry) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(retry)
        .build()
}

async fn attempts(
    retry: OwnershipRetry,
    status: u16,
    headers: &[(&'static str, &'static str)],
) -> u32 {
    let (url, seen) = server(status, headers).await;
    let r = client(retry).get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), status);
    seen.load(Ordering::SeqCst)
}

#[tokio::test]
async fn only_claimed_or_unmarked_errors_are_retried() {
    let fast = || OwnershipRetry::new().backoff(Duration::ZERO);
    assert_eq!(attempts(fast(), 200, &[]).await, 1);
    assert_eq!(attempts(fast(), 404, &[]).await, 1);
    assert_eq!(attempts(fast(), 500, &[("x-error-claim", "true")]).await, 2);
    assert_eq!(
        attempts(fast(), 503, &[]).await,
        2,
        "an unmarked error is retried"
    );
    assert_eq!(
        attempts(fast(), 429, &[("x-error-claim", "bogus")]).await,
        2
    );
    assert_eq!(
        attempts(fast(), 502, &[("x-error-claim", "false")]).await,
        1
    );
    // Two claims that disagree say nothing: retried as unmarked.
    let both = [("x-error-claim", "true"), ("x-error-claim", "false")];
    assert_eq!(attempts(fast(), 500, &both).await, 2);
    // Without ownership even a disowned error is retried: the storm.
    let plain = fast().ownership(false).attempts(3);
    assert_eq!(attempts(plain, 502, &[("x-error-claim", "false")]).await, 3);
    // Uber's header name, by one setting.
    let uber = fast().header(reqwest_error_ownership::UBER_CLAIM_HEADER.clone());
    assert_eq!(
        attempts(uber, 502, &[("x-uber-error-claim", "false")]).await,
        1
    );
}

#[tokio::test]
async fn retries_stay_within_the_budget() {
    // No floor, 10%: the first 10 calls earn one retry between them.
    let retry =
        OwnershipRetry::new()
            .backoff(Duration::ZERO)
            .budget(0.1, Duration::from_secs(10), 0.0);
    let (url, seen) = server(500, &[("x-error-claim", "true")]).await;
    let c = client(retry);
    for _ in 0..40 {
        c.get(&url).send().await.unwrap();
    }
    // 40 calls, 4 retries: 40 × (1 + 0.1) attempts, give or take the one
    // retry a partly filled token is worth.
    let n = seen.load(Ordering::SeqCst);
    assert!((43..=44).contains(&n), "{n} attempts for 40 calls");
    // Unbudgeted: every call retried.
    let (url, seen) = server(500, &[]).await;
    let c = client(OwnershipRetry::new().backoff(Duration::ZERO).unbudgeted());
    for _ in 0..10 {
        c.get(&url).send().await.unwrap();
    }
    assert_eq!(seen.load(Ordering::SeqCst), 20);
}

#[tokio::test]
async fn retry_after_is_honoured_up_to_a_limit() {
    let retry = OwnershipRetry::new().backoff(Duration::ZERO);
    let started = Instant::now();
    assert_eq!(attempts(retry, 503, &[("retry-after", "1")]).await, 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // Longer than the caller will wait: the call ends at once.
    let retry = OwnershipRetry::new().max_retry_after(Duration::from_millis(500));
    let started = Instant::now();
    assert_eq!(attempts(retry, 503, &[("retry-after", "1")]).await, 1);
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn a_streamed_body_is_sent_once() {
    let (url, seen) = server(500, &[("x-error-claim", "true")]).await;
    let stream = futures_stream();
    let body = reqwest::Body::wrap_stream(stream);
    let r = client(OwnershipRetry::new())
        .post(&url)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

fn futures_stream(
) -> impl futures_core::Stream<Item = Result<&'static str, std::io::Error>> + Send + Sync + 'static
{
    struct Once(bool);
    impl futures_core::Stream for Once {
        type Item = Result<&'static str, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            let first = std::mem::replace(&mut self.0, false);
            std::task::Poll::Ready(first.then_some(Ok("order")))
        }
    }
    Once(true)
}

#[tokio::test]
async fn each_call_is_recorded_for_the_request_being_served() {
    let (bad, _) = server(500, &[("x-error-claim", "true")]).await;
    let (good, _) = server(200, &[]).await;
    let (refused, _) = server(503, &[("x-error-claim", "false")]).await;
    let c = client(OwnershipRetry::new().backoff(Duration::ZERO));
    let rec = Arc::new(RequestRecord::new());
    record::scope(rec.clone(), async {
        c.get(&bad).send().await.unwrap();
        c.get(&good).send().await.unwrap();
        c.get(&refused)
            .with_extension(FailOpen)
            .send()
            .await
            .unwrap();
        // Outside the record: a bare spawn (the context drop).
        let c2 = c.clone();
        let b2 = bad.clone();
        tokio::spawn(async move { c2.get(&b2).send().await.unwrap() })
            .await
            .unwrap();
    })
    .await;
    let calls = rec.take().outbound;
    let seen: Vec<_> = calls
        .iter()
        .map(|o| (o.mode, o.failed, o.claim_seen))
        .collect();
    let (close, open) = (DependencyMode::FailClose, DependencyMode::FailOpen);
    assert_eq!(
        seen,
        vec![
            (close, true, Some(Claim::Claimed)),
            (close, false, None),
            (open, true, Some(Claim::Unclaimed)),
        ]
    );
    // The retried call satisfied the retry criteria; the disowned one
    // needed none.
    assert!(calls[0].criteria_satisfied && calls[2].criteria_satisfied);
}

#[tokio::test]
async fn a_refused_connection_is_retried_and_recorded_as_no_answer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let rec = Arc::new(RequestRecord::new());
    let c = client(OwnershipRetry::new().backoff(Duration::ZERO));
    let r = record::scope(rec.clone(), c.get(&url).send()).await;
    assert!(r.is_err());
    let calls = rec.take().outbound;
    assert_eq!(calls.len(), 1);
    assert!(calls[0].failed);
    assert_eq!(calls[0].claim_seen, Some(Claim::Missing));
    // A request that cannot even be built is neither sent nor recorded.
    let r = record::scope(rec.clone(), c.get("not a url").send()).await;
    assert!(r.is_err());
    assert!(rec.take().outbound.is_empty());
}

/// Every attempt is the request the caller made: its method, path and
/// query, its headers, its body. A bodiless request's retry is made from
/// the URL its answer gives back, and a request with a body is copied.
#[tokio::test]
async fn every_attempt_is_the_request_the_caller_made() {
    use std::sync::Mutex;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/{*path}",
        any(
            move |method: axum::http::Method, uri: axum::http::Uri, h: HeaderMap, body: String| {
                let tenant = h.get("x-tenant").map(|v| v.to_str().unwrap().to_owned());
                log.lock()
                    .unwrap()
                    .push(format!("{method} {uri} {tenant:?} {body:?}"));
                async { StatusCode::SERVICE_UNAVAILABLE }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, app).into_future());
    let c = client(OwnershipRetry::new().backoff(Duration::ZERO).attempts(3));
    let get = c
        .get(format!("{base}/orders/7?page=2"))
        .header("x-tenant", "acme")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 503);
    let put = c
        .put(format!("{base}/orders/7"))
        .body("qty=3")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 503);
    let get_line = r#"GET /orders/7?page=2 Some("acme") """#;
    let put_line = r#"PUT /orders/7 None "qty=3""#;
    assert_eq!(
        *seen.lock().unwrap(),
        [get_line, get_line, get_line, put_line, put_line, put_line]
    );
}

/// A refused connection carries its URL in reqwest's error: the retry goes
/// to the same place, and the call is recorded once, failed.
#[tokio::test]
async fn a_refused_attempt_is_retried_to_the_same_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/x", listener.local_addr().unwrap());
    drop(listener);
    let rec = Arc::new(RequestRecord::new());
    let c = client(OwnershipRetry::new().backoff(Duration::ZERO).attempts(3));
    let r = record::scope(rec.clone(), c.get(&url).send()).await;
    let e = r.unwrap_err();
    assert_eq!(e.url().map(|u| u.as_str()), Some(url.as_str()));
    let calls = rec.calls();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].failed);
}
