//! A service's listeners: serving its endpoints until shutdown, closing
//! and reopening while it is down, and counting the connections it could
//! not accept for want of file descriptors.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use axum::serve::Listener as _;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::Layer;

use super::{router, ServiceRuntime};
use crate::metrics::Metrics;
use crate::middleware::server::OwnershipLayer;
use crate::observe::is_out_of_files;

/// One endpoint a listener serves: its path, its runtime, its layer.
pub(in crate::fleet) type Route = (String, Arc<ServiceRuntime>, OwnershipLayer);

/// Serves until shutdown; while the service is down its listener is
/// closed, so callers get connection refused. A service without
/// endpoints answers any path; one with endpoints routes `GET /E` to
/// endpoint E, each behind its own ownership layer, and answers any other
/// path 404.
pub(in crate::fleet) async fn serve(
    routes: Vec<Route>,
    listener: TcpListener,
    streams: u32,
    shutdown: watch::Receiver<bool>,
) {
    let Some((_, rt, layer)) = routes.first().cloned() else {
        return;
    };
    if rt.endpoint.is_none() {
        let app = router(rt.clone());
        // The layer wraps the whole router, as middleware that sees every
        // request does, rather than being boxed into each route.
        if rt.plain.is_some() {
            serve_with(rt, (listener, streams), app, shutdown).await;
        } else {
            serve_with(rt, (listener, streams), layer.layer(app), shutdown).await;
        }
        return;
    }
    let known: Vec<String> = routes.iter().map(|(p, _, _)| p.clone()).collect();
    let mut app = Router::new();
    for (path, rt, layer) in routes {
        app = if rt.plain.is_some() {
            app.route_service(&path, router(rt))
        } else {
            app.route_service(&path, layer.layer(router(rt)))
        };
    }
    let app = app.fallback(move |req: Request| async move {
        (
            StatusCode::NOT_FOUND,
            format!(
                "no endpoint {}: this service serves {}\n",
                req.uri().path(),
                known.join(", ")
            ),
        )
    });
    serve_with(rt, (listener, streams), app, shutdown).await;
}

/// HTTP/2 streams a connection may open at once at the least.
const MIN_STREAMS: u32 = 256;

/// Serves `app` on `listener` until the fleet shuts down, closing and
/// binding again as the service goes down and up: over HTTP/1.1 (no
/// `streams`) with axum's own server, over HTTP/2 with hyper's, told how
/// many streams to allow.
async fn serve_with<S>(
    rt: Arc<ServiceRuntime>,
    (listener, streams): (TcpListener, u32),
    app: S,
    mut shutdown: watch::Receiver<bool>,
) where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
{
    let addr = rt.addr;
    let mut listener = Some(listener);
    let mut down = rt.down.subscribe();
    loop {
        if *shutdown.borrow() {
            return;
        }
        if *down.borrow_and_update() {
            listener = None;
            tokio::select! {
                r = down.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
            continue;
        }
        let l = match listener.take() {
            Some(l) => l,
            None => match addr {
                Some(a) => match bind_again(a).await {
                    Some(l) => l,
                    None => continue,
                },
                None => return,
            },
        };
        let l = Accepting {
            inner: l,
            metrics: rt.metrics.clone(),
        };
        let stop = || stopping(down.clone(), shutdown.clone());
        if streams == 0 {
            serve_http1(l, app.clone(), stop).await;
        } else {
            serve_http2(l, streams, app.clone(), stop).await;
        }
    }
}

/// One listening period over HTTP/1.1, until `stop` ends: axum's server,
/// whose connections keep the buffers a long soak measured flat (hyper's
/// own loop below grew the live heap by steps of 4 to 8 MiB on the chain
/// at 500 rps).
async fn serve_http1<S, F>(l: Accepting, app: S, stop: impl Fn() -> F)
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let make = axum::ServiceExt::<Request>::into_make_service(app);
    let server = axum::serve(l, make).with_graceful_shutdown(stop());
    // A connection that never finishes its request (a client sending
    // its headers a byte a second) would hold a graceful shutdown
    // forever: the run past its end, a service that went down from
    // coming back up. Open connections get `SHUTDOWN_GRACE` to finish;
    // after that the loop goes on without waiting for them (their
    // tasks end with the runtime).
    let grace = async {
        stop().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        _ = server => {}
        _ = grace => {}
    }
}

/// One listening period over HTTP/2 (and HTTP/1.1, told by the
/// connection's first bytes), until `stop` ends: hyper's server, with
/// room for every stream the callers' edges may have in flight, where
/// hyper's default of 200 would queue the rest out of sight in the
/// callers' connection. Open connections get `SHUTDOWN_GRACE`, as above.
async fn serve_http2<S, F>(mut l: Accepting, streams: u32, app: S, stop: impl Fn() -> F)
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http2()
        .max_concurrent_streams(streams.max(MIN_STREAMS));
    let open = GracefulShutdown::new();
    let stopped = stop();
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            (io, _) = l.accept() => {
                let app = app.clone();
                let answer = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let mut app = app.clone();
                    async move {
                        std::future::poll_fn(|cx| app.poll_ready(cx)).await?;
                        app.call(req.map(Body::new)).await
                    }
                });
                let conn = open.watch(http.serve_connection(TokioIo::new(io), answer).into_owned());
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            _ = &mut stopped => break,
        }
    }
    // Closed: callers now get connection refused.
    drop(l);
    tokio::select! {
        _ = open.shutdown() => {}
        _ = tokio::time::sleep(SHUTDOWN_GRACE) => {}
    }
}

/// A service's listener: accepts as axum's own does, but counts a failure
/// for want of file descriptors as the machine's limit (the run is then
/// saturated, not an outage of the service), and tries again after
/// `ACCEPT_BACKOFF` rather than axum's second, so a brief shortage does
/// not stall the service for a whole second.
struct Accepting {
    inner: TcpListener,
    metrics: Arc<Metrics>,
}

/// How long a listener waits after an accept failed for want of
/// resources.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

impl axum::serve::Listener for Accepting {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((s, a)) => {
                    let _ = s.set_nodelay(true);
                    return (s, a);
                }
                // The peer gave up before it was accepted: nothing to wait for.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => {
                    if is_out_of_files(&e) {
                        self.metrics.fd_error();
                    }
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// How long a closing listener waits for its open connections to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Ends when the service goes down or the fleet shuts down.
async fn stopping(mut d: watch::Receiver<bool>, mut s: watch::Receiver<bool>) {
    loop {
        if *d.borrow_and_update() || *s.borrow_and_update() {
            return;
        }
        tokio::select! {
            r = d.changed() => if r.is_err() { return },
            r = s.changed() => if r.is_err() { return },
        }
    }
}

/// Reopens a closed listener on its old port. A port can linger briefly
/// after close; give up after a second and let the serve loop ask again.
async fn bind_again(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..20 {
        if let Ok(l) = TcpListener::bind(addr).await {
            return Some(l);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}
