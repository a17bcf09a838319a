//! Bounds that keep memory fixed under any load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chaoslab::middleware::client::{EdgeState, RetryClient, MAX_IN_FLIGHT_PER_EDGE};
use chaoslab::middleware::NoopObserver;
use chaoslab::ownership::DependencyMode;
use chaoslab::topology::Policy;

use crate::common::fleet_lock;

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
        // Connections open at once, and the most ever open together.
        let open = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (o, p) = (open.clone(), peak.clone());
        let server = tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let now = o.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                let o = o.clone();
                tokio::spawn(async move {
                    // Read and never answer, until the caller hangs up.
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = tokio::io::AsyncReadExt::read(&mut sock, &mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                    o.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        let mut policy = Policy::default().for_edge(&Default::default());
        policy.attempts = 1;
        policy.timeout = Duration::from_millis(400);
        let edge = Arc::new(EdgeState::new(0, 1, DependencyMode::FailClose, url, policy));
        let client =
            Arc::new(RetryClient::new(0, "x-error-claim", Arc::new(NoopObserver), 1).unwrap());
        let calls: Vec<_> = (0..600)
            .map(|_| {
                let (c, e) = (client.clone(), edge.clone());
                tokio::spawn(async move { c.call(&e, None).await })
            })
            .collect();
        for c in calls {
            let out = c.await.unwrap();
            assert!(out.failed, "a silent callee fails every call");
        }
        server.abort();
        let n = peak.load(Ordering::SeqCst);
        assert!(n > 100, "the calls reached the callee: peak {n}");
        assert!(
            n <= MAX_IN_FLIGHT_PER_EDGE,
            "{n} connections open at once, the cap is {MAX_IN_FLIGHT_PER_EDGE}"
        );
    });
}
