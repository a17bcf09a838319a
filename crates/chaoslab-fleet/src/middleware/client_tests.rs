use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;
use error_ownership::conditions::Failure;

/// A server that refuses every HTTP/2 stream it is sent
/// (`RST_STREAM(REFUSED_STREAM)`): returns its URL and the streams it saw.
async fn refusing() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let streams = Arc::new(AtomicUsize::new(0));
    let seen = streams.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(socket).await else {
                    return;
                };
                while let Some(Ok((_, mut respond))) = conn.accept().await {
                    seen.fetch_add(1, Ordering::SeqCst);
                    respond.send_reset(h2::Reason::REFUSED_STREAM);
                }
            });
        }
    });
    (url, streams)
}

#[tokio::test]
async fn a_refused_stream_is_sent_once_and_reaches_the_caller() {
    let (url, streams) = refusing().await;
    let err = http2_client().get(&url).send().await.unwrap_err();
    assert_eq!(
        streams.load(Ordering::SeqCst),
        1,
        "the client sent the refused request again by itself"
    );
    // The edge sees the refusal, for its own `refused-stream` condition.
    assert_eq!(wire::failure_of(&err), Failure::RefusedStream, "{err:?}");
}

#[tokio::test]
async fn a_closed_port_is_a_refused_connection() {
    let port = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let err = http1_client()
        .get(format!("http://127.0.0.1:{port}/"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(wire::failure_of(&err), Failure::Refused, "{err:?}");
}

#[tokio::test]
async fn reqwests_default_client_would_have_sent_it_three_times() {
    // The control: what `no_hidden_retries` turns off.
    let (url, streams) = refusing().await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    assert!(http.get(&url).send().await.is_err());
    assert_eq!(streams.load(Ordering::SeqCst), 3);
}
