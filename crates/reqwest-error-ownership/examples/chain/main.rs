use axum::{http::StatusCode, routing::get, Router};
use reqwest_error_ownership::OwnershipRetry;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware as Client};
use std::sync::{atomic::AtomicU32, atomic::Ordering::Relaxed, LazyLock, OnceLock};
use tower_error_ownership::OwnershipLayer;

static HTTP: LazyLock<Client> = LazyLock::new(|| {
    let (http, retry) = (reqwest::Client::new(), OwnershipRetry::new()); // R = 2, 10% budget
    ClientBuilder::new(http).with(retry).build()
});
static PAYMENTS: OnceLock<String> = OnceLock::new();
static SEEN: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)]; // checkout, payments

async fn payments() -> StatusCode {
    SEEN[1].fetch_add(1, Relaxed);
    StatusCode::INTERNAL_SERVER_ERROR // its own fault: the layer claims it
}
async fn checkout() -> StatusCode {
    SEEN[0].fetch_add(1, Relaxed);
    match HTTP.get(PAYMENTS.get().unwrap()).send().await {
        Ok(r) if r.status().is_success() => StatusCode::OK,
        _ => StatusCode::BAD_GATEWAY, // payments' fault: the layer disowns it
    }
}
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, app.layer(OwnershipLayer::new())).into_future());
    url
}
#[tokio::main]
async fn main() {
    PAYMENTS.set(serve(Router::new().route("/", get(payments))).await).unwrap();
    let checkout_url = serve(Router::new().route("/", get(checkout))).await;
    for (name, url) in [("checkout", &checkout_url), ("payments", PAYMENTS.get().unwrap())] {
        let r = reqwest::get(url).await.unwrap(); // a plain client: no retry of its own
        let claim = &r.headers()["x-error-claim"];
        println!("{name}: {} x-error-claim: {claim:?} (seen: {SEEN:?})", r.status());
    }
}
