//! What the two crates cost on one hop: a plain axum + reqwest pair of
//! services against the same pair with `OwnershipLayer` on both routers
//! and `OwnershipRetry` (through `reqwest-middleware`) on the caller's
//! client. No faults: the cost every request pays.
//!
//! `cargo bench -p reqwest-error-ownership --bench hop` alternates the two
//! pairs, 5 rounds of 3 s each (`-- --rounds N`: N rounds of 1 s) of a
//! closed loop of 16 callers, and prints
//! each round's requests a second and the median ratio (wall clock, which
//! the machine's other load moves). For instruction counts, which it does
//! not: `--fixed plain|wrapped|noop|ownership N` sends 2,000 requests to warm up then
//! exactly N more, to run under `valgrind --tool=callgrind`; the cost of
//! one request is the difference of two such runs over the difference of
//! their N.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::{http::StatusCode, routing::get, Router};
use reqwest_error_ownership::OwnershipRetry;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::time::Instant;
use tower::Layer as _;
use tower_error_ownership::OwnershipLayer;

/// How the front service calls the back one.
#[derive(Clone)]
enum Caller {
    Plain(reqwest::Client),
    /// reqwest-middleware with no middleware: what the wrapper alone costs.
    Wrapped(ClientWithMiddleware),
    /// reqwest-middleware with one middleware that only passes the
    /// request on: what any middleware costs (the list copied into each
    /// request, the boxed future), before it does anything.
    Noop(ClientWithMiddleware),
    Ownership(ClientWithMiddleware),
}

/// A middleware that passes every request on, as the simplest one would.
struct PassOn;

impl reqwest_middleware::Middleware for PassOn {
    fn handle<'a, 'b, 'c, 'f>(
        &'a self,
        req: reqwest::Request,
        extensions: &'b mut http::Extensions,
        next: reqwest_middleware::Next<'c>,
    ) -> std::pin::Pin<
        Box<dyn Future<Output = reqwest_middleware::Result<reqwest::Response>> + Send + 'f>,
    >
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        Self: 'f,
    {
        // Its own future, boxed, as every middleware's is (`async_trait`).
        Box::pin(async move { next.run(req, extensions).await })
    }
}

/// The pairs compared.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Plain,
    Wrapped,
    Noop,
    Ownership,
}

impl Caller {
    async fn call(&self, url: &str) -> bool {
        let r = match self {
            Caller::Plain(c) => c.get(url).send().await.map_err(drop),
            Caller::Wrapped(c) | Caller::Noop(c) | Caller::Ownership(c) => {
                c.get(url).send().await.map_err(drop)
            }
        };
        match r {
            Ok(r) => {
                let ok = r.status().is_success();
                ok && r.bytes().await.is_ok()
            }
            Err(()) => false,
        }
    }
}

async fn serve(app: Router, ownership: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    if ownership {
        // Around the whole router, as a service that cares for its cost
        // wraps it (`Router::layer` boxes the layer into each route), with
        // its handlers made routes once, as `axum::serve` makes them for a
        // bare router (without `with_state`, every request clones its
        // handler into a route).
        let app = OwnershipLayer::new().layer(app.with_state(()));
        let make = axum::ServiceExt::<axum::extract::Request>::into_make_service(app);
        tokio::spawn(axum::serve(listener, make).into_future());
    } else {
        tokio::spawn(axum::serve(listener, app).into_future());
    }
    url
}

/// The pair; returns the front's URL.
async fn pair(side: Side) -> String {
    let ownership = side == Side::Ownership;
    let back = serve(Router::new().route("/", get(|| async { "ok" })), ownership).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let caller = match side {
        Side::Plain => Caller::Plain(http),
        Side::Wrapped => Caller::Wrapped(ClientBuilder::new(http).build()),
        Side::Noop => Caller::Noop(ClientBuilder::new(http).with(PassOn).build()),
        Side::Ownership => {
            Caller::Ownership(ClientBuilder::new(http).with(OwnershipRetry::new()).build())
        }
    };
    // One shared client per service, as a service keeps it (a
    // `reqwest-middleware` client's clone copies its middleware list).
    let to_back = Arc::new((caller, back));
    let front = Router::new().route(
        "/",
        get(move || {
            let to_back = to_back.clone();
            async move {
                let (caller, back) = &*to_back;
                if caller.call(back).await {
                    StatusCode::OK
                } else {
                    StatusCode::BAD_GATEWAY
                }
            }
        }),
    );
    serve(front, ownership).await
}

const CALLERS: usize = 16;

/// Sends `n` requests to `url` from `CALLERS` tasks; every one must succeed.
async fn fixed(url: &str, n: u64) {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let left = Arc::new(AtomicU64::new(n));
    let mut tasks = vec![];
    for _ in 0..CALLERS {
        let (http, url, left) = (http.clone(), url.to_owned(), left.clone());
        tasks.push(tokio::spawn(async move {
            while left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| l.checked_sub(1))
                .is_ok()
            {
                let r = http.get(&url).send().await.unwrap();
                assert!(r.status().is_success());
                r.bytes().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Requests a second over `secs`, from `CALLERS` tasks.
async fn rate(url: &str, secs: f64) -> f64 {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = vec![];
    for _ in 0..CALLERS {
        let (http, url, done) = (http.clone(), url.to_owned(), done.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                let r = http.get(&url).send().await.unwrap();
                assert!(r.status().is_success());
                r.bytes().await.unwrap();
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / secs
}

pub fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fixed_mode = args.iter().position(|a| a == "--fixed");
    // Counted on one thread: under valgrind, which runs one thread at a
    // time, a multi-threaded runtime's order of wake-ups (and so its pool
    // look-ups and parks) changes from run to run, and moved a side's
    // count per request by up to 1.4% between two runs of the same build.
    let rt = match fixed_mode {
        Some(_) => tokio::runtime::Builder::new_current_thread(),
        None => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .unwrap();
    if let Some(i) = fixed_mode {
        let usage = "--fixed plain|wrapped|noop|ownership N";
        let side = args.get(i + 1).expect(usage);
        let n: u64 = args.get(i + 2).and_then(|n| n.parse().ok()).expect(usage);
        let pick = match side.as_str() {
            "plain" => Side::Plain,
            "wrapped" => Side::Wrapped,
            "noop" => Side::Noop,
            "ownership" => Side::Ownership,
            _ => panic!("{usage}"),
        };
        rt.block_on(async {
            let url = pair(pick).await;
            fixed(&url, 2_000).await;
            fixed(&url, n).await;
        });
        println!("{side}: {n} requests after 2,000 to warm up");
        return;
    }
    // Under `cargo test` (`--bench` absent): one short round, a smoke test.
    // `--rounds N`: more, shorter rounds, for a machine whose speed moves
    // from one second to the next.
    let rounds_flag = args.iter().position(|a| a == "--rounds").map(|i| {
        args.get(i + 1)
            .and_then(|n| n.parse().ok())
            .expect("--rounds N")
    });
    let (rounds, secs) = match (args.iter().any(|a| a == "--bench"), rounds_flag) {
        (_, Some(n)) => (n, 1.0),
        (true, None) => (5, 3.0),
        (false, None) => (1, 0.3),
    };
    let mut ratios = vec![];
    rt.block_on(async {
        let plain = pair(Side::Plain).await;
        let ownership = pair(Side::Ownership).await;
        fixed(&plain, 500).await;
        fixed(&ownership, 500).await;
        for round in 1..=rounds {
            // Alternate which goes first, so drift hits both alike.
            let (p, o) = if round % 2 == 1 {
                let p = rate(&plain, secs).await;
                (p, rate(&ownership, secs).await)
            } else {
                let o = rate(&ownership, secs).await;
                (rate(&plain, secs).await, o)
            };
            println!(
                "round {round}: plain {p:.0} req/s, ownership {o:.0} req/s, ratio {:.3}",
                o / p
            );
            ratios.push(o / p);
        }
    });
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    println!(
        "median ratio (ownership / plain): {:.3} (quartiles {:.3} to {:.3}, {} rounds)",
        at(0.5),
        at(0.25),
        at(0.75),
        ratios.len()
    );
}
