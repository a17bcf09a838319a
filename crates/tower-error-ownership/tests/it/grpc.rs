//! The tonic example's services, read by a plain h2 client: the claim in
//! the trailers of a real HTTP/2 answer, beside `grpc-status`.

#[allow(dead_code)]
#[path = "../../examples/grpc.rs"]
mod example;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::{HeaderMap, Request};

/// One gRPC call of `path` with an `Order { id: "o-1" }`, by hand: the
/// answer's headers, its messages' bytes and its trailers.
async fn call(addr: SocketAddr, path: &str) -> (HeaderMap, Vec<u8>, Option<HeaderMap>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    let req = Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (answer, mut send) = client.send_request(req, false).unwrap();
    // A length-prefixed message: field 1, a string of 3 bytes.
    let order = b"\x00\x00\x00\x00\x05\x0a\x03o-1";
    send.send_data(Bytes::from_static(order), true).unwrap();
    let (parts, mut body) = answer.await.unwrap().into_parts();
    let mut data = vec![];
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
        data.extend_from_slice(&chunk);
    }
    (parts.headers, data, body.trailers().await.unwrap())
}

#[tokio::test]
async fn the_tonic_pair_carries_the_claim_beside_grpc_status() {
    let payments = example::serve(example::Payments).await;
    let checkout = example::serve(example::Checkout {
        payments: example::client(payments, 2),
    })
    .await;

    // checkout streamed a message, then its status and claim came in the
    // trailers: it disowns the failure of payments.
    let before = example::PAYMENTS_SAW.load(Ordering::SeqCst);
    let (headers, data, trailers) = call(checkout, "/shop.Checkout/Place").await;
    assert_eq!(headers["content-type"], "application/grpc");
    assert!(headers.get("grpc-status").is_none(), "{headers:?}");
    assert!(
        headers.get("x-error-claim").is_none(),
        "the claim waits for the status"
    );
    assert!(String::from_utf8_lossy(&data).contains("stock reserved for o-1"));
    let trailers = trailers.expect("an answer with a message ends in trailers");
    assert_eq!(trailers["grpc-status"], "13");
    assert_eq!(trailers["x-error-claim"], "false");
    // The hop right above payments retried it once.
    assert_eq!(example::PAYMENTS_SAW.load(Ordering::SeqCst) - before, 2);

    // payments failed on its own and answered Trailers-Only: the status
    // and the claim in its one header block, which ends the stream.
    let (headers, data, trailers) = call(payments, "/shop.Payments/Charge").await;
    assert_eq!(headers["grpc-status"], "14");
    assert_eq!(headers["x-error-claim"], "true");
    assert!(data.is_empty());
    assert!(trailers.is_none());
}
