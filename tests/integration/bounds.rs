//! Bounds that keep memory fixed under any load.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use chaoslab::middleware::client::{EdgeState, RetryClient, MAX_IN_FLIGHT_PER_EDGE};
use chaoslab::middleware::NoopObserver;
use chaoslab::topology::Policy;
use error_ownership::DependencyMode;

use crate::common::fleet_lock;

/// Each attempt's timeout.
const TIMEOUT: Duration = Duration::from_millis(400);

/// A callee that accepts connections and never answers: every attempt
/// would hold a connection until its timeout. Six hundred concurrent calls
/// on one edge must not open more than the edge's cap.
#[test]
fn an_edge_never_holds_more_than_its_cap_of_connections() {
    let _fleet = fleet_lock();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        // When each connection arrived. Until the first attempts time out
        // no slot can be released, so in that window the edge can have
        // opened at most its cap. (Counting "open at once" from the
        // server's side would lag: it sees a close only when it next runs.)
        let accepted: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let acc = accepted.clone();
        let start = Instant::now();
        let server = tokio::spawn(async move {
            let mut held = vec![];
            while let Ok((sock, _)) = listener.accept().await {
                acc.lock().unwrap().push(start.elapsed());
                held.push(sock);
            }
        });
        let mut policy = Policy::default().for_edge(&Default::default());
        policy.attempts = 1;
        policy.timeout = TIMEOUT;
        let edge = Arc::new(EdgeState::new(0, 1, DependencyMode::FailClose, url, policy));
        let client =
            Arc::new(RetryClient::new(0, "x-error-claim", Arc::new(NoopObserver), 1).unwrap());
        let calls: Vec<_> = (0..600)
            .map(|_| {
                let (c, e) = (client.clone(), edge.clone());
                tokio::spawn(async move { c.call(&e, None, None).await })
            })
            .collect();
        for c in calls {
            let out = c.await.unwrap();
            assert!(out.outbound.failed, "a silent callee fails every call");
        }
        server.abort();
        let times = accepted.lock().unwrap().clone();
        let first_window = times.iter().filter(|t| **t < TIMEOUT).count();
        assert!(first_window > 100, "the calls reached the callee: {first_window}");
        assert!(
            first_window <= MAX_IN_FLIGHT_PER_EDGE,
            "{first_window} connections opened before any attempt could time out; the cap is {MAX_IN_FLIGHT_PER_EDGE}"
        );
    });
}
