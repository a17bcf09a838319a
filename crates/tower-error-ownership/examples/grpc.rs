//! A tonic pair over real HTTP/2 connections: `checkout` streams an
//! order's progress and charges it with `payments`, which fails. The claim
//! travels beside `grpc-status`:
//!
//! - `payments` fails on its own: its answer is *Trailers-Only* (no
//!   message, the status in the one header block) and claims the error:
//!   `grpc-status: 14`, `x-error-claim: true`;
//! - `checkout` has already streamed a message when the charge fails, so
//!   its status comes in the trailers, and so does its claim: it disowns
//!   an error that was not its own, `grpc-status: 13`, `x-error-claim:
//!   false`. `checkout`'s client, right above `payments`, retried the
//!   charge once; a client above `checkout` would not retry.
//!
//! `cargo run -p tower-error-ownership --example grpc`
//!
//! The services are what tonic-build generates, written out so that the
//! example needs no `protoc`: the messages are `prost` structs, each
//! service a `tower::Service` that hands its requests to
//! `tonic::server::Grpc`.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;
use tower::retry::Retry;
use tower::{Service, ServiceExt as _};
use tower_error_ownership::{OwnershipLayer, OwnershipPolicy};

/// `message Order { string id = 1; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct Order {
    /// The order's id.
    #[prost(string, tag = "1")]
    pub id: String,
}

/// `message Progress { string step = 1; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct Progress {
    /// What happened to the order.
    #[prost(string, tag = "1")]
    pub step: String,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Attempts `payments` has seen.
pub static PAYMENTS_SAW: AtomicU32 = AtomicU32::new(0);

/// `service Payments { rpc Charge(Order) returns (Progress); }`: the card
/// network is down, so every charge fails, on its own.
#[derive(Clone)]
pub struct Payments;

impl NamedService for Payments {
    const NAME: &'static str = "shop.Payments";
}

impl Service<http::Request<Body>> for Payments {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let charge = tower::service_fn(|_: Request<Order>| async {
            PAYMENTS_SAW.fetch_add(1, Relaxed);
            Err::<Response<Progress>, _>(Status::unavailable("card network down"))
        });
        Box::pin(async move {
            Ok(tonic::server::Grpc::new(ProstCodec::default())
                .unary(charge, req)
                .await)
        })
    }
}

/// `service Checkout { rpc Place(Order) returns (stream Progress); }`:
/// reserves the stock, then charges the order with `payments`.
#[derive(Clone)]
pub struct Checkout {
    /// The client of `payments`.
    pub payments: GrpcClient,
}

impl NamedService for Checkout {
    const NAME: &'static str = "shop.Checkout";
}

impl Service<http::Request<Body>> for Checkout {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let payments = self.payments.clone();
        let place = tower::service_fn(move |r: Request<Order>| {
            let mut payments = payments.clone();
            async move {
                let order = r.into_inner();
                // Charged before the answer starts, inside the request's
                // record: the layer sees the failed call when the status goes out.
                let charge = Request::new(order.clone());
                let path = "/shop.Payments/Charge".parse().unwrap();
                payments
                    .ready()
                    .await
                    .map_err(|e| Status::unknown(e.to_string()))?;
                let charged = payments
                    .unary::<_, Progress, _>(charge, path, ProstCodec::default())
                    .await;
                let reserved = Ok(Progress {
                    step: format!("stock reserved for {}", order.id),
                });
                let last = match charged {
                    Ok(_) => Ok(Progress {
                        step: "paid".into(),
                    }),
                    Err(s) => Err(Status::internal(format!("payment failed: {}", s.message()))),
                };
                Ok::<_, Status>(Response::new(futures_util::stream::iter([reserved, last])))
            }
        });
        Box::pin(async move {
            Ok(tonic::server::Grpc::new(ProstCodec::default())
                .server_streaming(place, req)
                .await)
        })
    }
}

/// A gRPC client over HTTP/2 whose calls retry with ownership: tonic's
/// request body is a stream, and a retry needs it again, so it is read
/// into memory first (as a proxy buffers a request it may retry).
#[derive(Clone)]
pub struct Buffered(Retry<OwnershipPolicy, Client<HttpConnector, Full<Bytes>>>);

impl Service<http::Request<Body>> for Buffered {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let mut retry = self.0.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let body = Full::new(body.collect().await?.to_bytes());
            let answer = retry
                .ready()
                .await?
                .call(http::Request::from_parts(parts, body))
                .await?;
            Ok(answer)
        })
    }
}

/// A gRPC client of the service at `addr`.
pub type GrpcClient = tonic::client::Grpc<Buffered>;

/// A client of `addr` that makes at most `attempts` attempts per call.
pub fn client(addr: SocketAddr, attempts: u32) -> GrpcClient {
    let http2 = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http();
    let retry = Retry::new(OwnershipPolicy::new().attempts(attempts), http2);
    let origin = format!("http://{addr}").parse().unwrap();
    tonic::client::Grpc::with_origin(Buffered(retry), origin)
}

/// Serves `svc` behind the ownership layer, on loopback.
pub async fn serve<S>(svc: S) -> SocketAddr
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tonic::transport::Server::builder()
        .layer(OwnershipLayer::new().grpc())
        .add_service(svc)
        .serve_with_incoming(incoming);
    tokio::spawn(server);
    addr
}

#[tokio::main]
async fn main() {
    let payments = serve(Payments).await;
    let checkout = serve(Checkout {
        payments: client(payments, 2),
    })
    .await;
    // A client that does not retry, as the end user's would not here.
    let mut shop = client(checkout, 1);
    shop.ready().await.unwrap();
    let order = Request::new(Order { id: "o-1".into() });
    let path = "/shop.Checkout/Place".parse().unwrap();
    let mut progress = shop
        .server_streaming::<_, Progress, _>(order, path, ProstCodec::default())
        .await
        .unwrap()
        .into_inner();
    loop {
        match progress.message().await {
            Ok(Some(p)) => println!("checkout: {}", p.step),
            Ok(None) => break,
            Err(status) => {
                let claim = status.metadata().get("x-error-claim");
                println!(
                    "checkout: {:?} {:?}, x-error-claim in the trailers: {claim:?}",
                    status.code(),
                    status.message()
                );
                break;
            }
        }
    }
    println!(
        "payments saw {} attempts for the one order",
        PAYMENTS_SAW.load(Relaxed)
    );
    let mut direct = client(payments, 1);
    direct.ready().await.unwrap();
    let path = "/shop.Payments/Charge".parse().unwrap();
    let charge = Request::new(Order { id: "o-2".into() });
    let status = direct
        .unary::<_, Progress, _>(charge, path, ProstCodec::default())
        .await
        .unwrap_err();
    let claim = status.metadata().get("x-error-claim");
    println!(
        "payments: {:?} {:?}, x-error-claim (Trailers-Only): {claim:?}",
        status.code(),
        status.message()
    );
}
