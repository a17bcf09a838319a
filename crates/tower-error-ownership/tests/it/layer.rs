//! The server layer on real sockets: the claim on the wire, for HTTP/1.1
//! answers and for gRPC answers over a real HTTP/2 connection.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::Mutex;

use axum::{http::StatusCode, routing::get, Router};
use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body_util::StreamBody;
use tower::Layer as _;
use tower_error_ownership::layer::Answer;
use tower_error_ownership::{
    record, Claim, DependencyMode, Observer, Outbound, OwnershipLayer, UBER_CLAIM_HEADER,
};

fn call(mode: DependencyMode, failed: bool) -> Outbound {
    Outbound {
        dependency: 0,
        mode,
        failed,
        claim_seen: failed.then_some(Claim::Claimed),
        criteria_satisfied: true,
    }
}

/// What the handler of `/` does: record these calls, answer this status.
fn app(calls: Vec<Outbound>, status: StatusCode) -> Router {
    Router::new().route(
        "/",
        get(move || async move {
            for c in calls {
                assert!(record::record(c), "the handler runs inside a record");
            }
            status
        }),
    )
}

async fn serve(app: Router, layer: OwnershipLayer<impl Observer>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, app.layer(layer)).into_future());
    url
}

async fn claim_of(url: &str, header: &str) -> (u16, Option<String>) {
    let r = reqwest::get(url).await.unwrap();
    let v = r
        .headers()
        .get(header)
        .map(|v| v.to_str().unwrap().to_owned());
    (r.status().as_u16(), v)
}

#[tokio::test]
async fn an_error_is_claimed_unless_a_fail_close_call_failed() {
    use DependencyMode::*;
    let cases = [
        // (calls recorded, status, claim on the wire)
        (vec![], StatusCode::INTERNAL_SERVER_ERROR, Some("true")),
        (
            vec![call(FailClose, false)],
            StatusCode::SERVICE_UNAVAILABLE,
            Some("true"),
        ),
        (
            vec![call(FailClose, true)],
            StatusCode::BAD_GATEWAY,
            Some("false"),
        ),
        (
            vec![call(FailOpen, true)],
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("true"),
        ),
        (
            vec![call(FailOpen, true), call(FailClose, true)],
            StatusCode::TOO_MANY_REQUESTS,
            Some("false"),
        ),
        // A success, or a client error, carries no claim.
        (vec![call(FailClose, true)], StatusCode::OK, None),
        (vec![], StatusCode::NOT_FOUND, None),
    ];
    for (calls, status, want) in cases {
        let url = serve(app(calls.clone(), status), OwnershipLayer::new()).await;
        let got = claim_of(&url, "x-error-claim").await;
        assert_eq!(
            got,
            (status.as_u16(), want.map(str::to_owned)),
            "{calls:?} {status}"
        );
    }
}

#[tokio::test]
async fn the_header_name_is_a_setting_and_claims_can_be_turned_off() {
    let layer = OwnershipLayer::new().header(UBER_CLAIM_HEADER.clone());
    let url = serve(
        app(vec![], StatusCode::INTERNAL_SERVER_ERROR),
        layer.clone(),
    )
    .await;
    assert_eq!(
        claim_of(&url, "x-uber-error-claim").await.1.as_deref(),
        Some("true")
    );
    assert_eq!(claim_of(&url, "x-error-claim").await.1, None);
    layer.set_enabled(false);
    assert_eq!(claim_of(&url, "x-uber-error-claim").await.1, None);
}

/// Keeps every answer it is told of.
#[derive(Default, Clone)]
struct Keep(Arc<Mutex<Vec<Heard>>>);

/// The path, the status, the claim and the number of calls recorded.
type Heard = (String, Option<u16>, Option<bool>, usize);

impl Observer for Keep {
    type Tag = String;
    fn opened<B>(&self, req: &mut Request<B>) -> String {
        req.uri().path().to_owned()
    }
    fn answered(&self, path: String, a: &Answer<'_>) {
        let claimed = a.claim.map(|c| c.claimed);
        self.0
            .lock()
            .unwrap()
            .push((path, a.status, claimed, a.record.outbound.len()));
    }
}

#[tokio::test]
async fn the_observer_hears_every_answer_and_every_abandoned_request() {
    let keep = Keep::default();
    let slow = Router::new().route(
        "/slow",
        get(|| async {
            record::record(call(DependencyMode::FailClose, true));
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            StatusCode::OK
        }),
    );
    let url = serve(
        app(
            vec![call(DependencyMode::FailClose, true)],
            StatusCode::BAD_GATEWAY,
        )
        .merge(slow),
        OwnershipLayer::new().observer(keep.clone()),
    )
    .await;
    claim_of(&url, "x-error-claim").await;
    // A caller that gives up: the server drops the request's future.
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(200))
        .build()
        .unwrap();
    assert!(client.get(format!("{url}slow")).send().await.is_err());
    for _ in 0..100 {
        if keep.0.lock().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let seen = keep.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            ("/".to_owned(), Some(502), Some(false), 1),
            ("/slow".to_owned(), None, None, 1),
        ]
    );
}

/// A gRPC server over HTTP/2 (h2c), behind the layer: its one method
/// records `calls`, then answers with a message and `grpc-status` in the
/// trailers, or Trailers-Only when `trailers_only`.
async fn grpc_server(calls: Vec<Outbound>, code: u32, trailers_only: bool) -> std::net::SocketAddr {
    type Frames = StreamBody<futures_stream::Iter<http_body::Frame<Bytes>>>;
    let svc = tower::service_fn(move |_req: Request<hyper::body::Incoming>| {
        let calls = calls.clone();
        async move {
            for c in calls {
                record::record(c);
            }
            let mut res = Response::new(Frames::new(futures_stream::iter(vec![])));
            res.headers_mut()
                .insert("content-type", "application/grpc".parse().unwrap());
            if trailers_only {
                res.headers_mut().insert("grpc-status", code.into());
                return Ok::<_, Infallible>(res);
            }
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", code.into());
            let frames = vec![
                http_body::Frame::data(Bytes::from_static(b"\0\0\0\0\0")),
                http_body::Frame::trailers(trailers),
            ];
            *res.body_mut() = Frames::new(futures_stream::iter(frames));
            Ok(res)
        }
    });
    let svc = OwnershipLayer::new().grpc().layer(svc);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let svc = hyper_util::service::TowerToHyperService::new(svc.clone());
            tokio::spawn(
                hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), svc),
            );
        }
    });
    addr
}

/// One gRPC call with a plain h2 client: the answer's headers and trailers.
async fn grpc_call(addr: std::net::SocketAddr) -> (HeaderMap, Option<HeaderMap>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let req = Request::post(format!("http://{addr}/shop.Payments/Charge"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (answer, mut send) = client.send_request(req, false).unwrap();
    send.send_data(Bytes::from_static(b"\0\0\0\0\0"), true)
        .unwrap();
    let (parts, mut body) = answer.await.unwrap().into_parts();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
    }
    (parts.headers, body.trailers().await.unwrap())
}

#[tokio::test]
async fn a_grpc_error_is_claimed_in_its_trailers_beside_grpc_status() {
    use DependencyMode::*;
    for (calls, code, want) in [
        (vec![], 13, Some("true")),
        (vec![call(FailClose, true)], 14, Some("false")),
        (vec![call(FailClose, true)], 0, None),
    ] {
        let addr = grpc_server(calls.clone(), code, false).await;
        let (headers, trailers) = grpc_call(addr).await;
        assert!(
            headers.get("x-error-claim").is_none(),
            "the claim waits for the status"
        );
        let trailers = trailers.expect("a gRPC answer ends with trailers");
        assert_eq!(trailers["grpc-status"], code.to_string().as_str());
        let got = trailers.get("x-error-claim").map(|v| v.to_str().unwrap());
        assert_eq!(got, want, "{calls:?} grpc-status {code}");
    }
}

#[tokio::test]
async fn a_trailers_only_grpc_error_is_claimed_in_its_one_header_block() {
    let addr = grpc_server(vec![call(DependencyMode::FailClose, true)], 14, true).await;
    let (headers, trailers) = grpc_call(addr).await;
    assert_eq!(headers["grpc-status"], "14");
    assert_eq!(headers["x-error-claim"], "false");
    assert!(trailers.is_none());
}

/// A stream of frames from a vector, without a stream crate.
mod futures_stream {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub struct Iter<T>(std::vec::IntoIter<T>);

    pub fn iter<T>(v: Vec<T>) -> Iter<T> {
        Iter(v.into_iter())
    }

    impl<T: Unpin> futures_core::Stream for Iter<T> {
        type Item = Result<T, std::convert::Infallible>;
        fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(self.0.next().map(Ok))
        }
    }
}

#[tokio::test]
async fn the_answer_body_is_passed_through_unchanged() {
    let url = serve(
        Router::new().route(
            "/",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "no stock") }),
        ),
        OwnershipLayer::new(),
    )
    .await;
    let r = reqwest::get(&url).await.unwrap();
    assert_eq!(r.headers()["x-error-claim"], "true");
    assert_eq!(r.text().await.unwrap(), "no stock");
}
