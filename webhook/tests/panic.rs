//! A panic in a request handler is caught by the same layer stack the admission routes run
//! behind: answered 500 with a JSON body, counted, and the server (and the connection) carry on.
//! In-process, because the shipped binary has no way to make a handler panic on purpose.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::Router;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper::Request;
use hyper_util::rt::TokioIo;
use promotion_webhook::api::{protect, AppState};
use promotion_webhook::config::Limits;
use promotion_webhook::evaluation::Evaluator;
use promotion_webhook::metrics::Metrics;

#[tokio::test]
async fn a_panicking_handler_is_answered_500_counted_and_survived() {
    let metrics = Arc::new(Metrics::new());
    let state = AppState::new(
        Evaluator::default(),
        metrics.clone(),
        Limits {
            max_body_bytes: 1024 * 1024,
            request_timeout: Duration::from_secs(5),
            header_read_timeout: Duration::from_secs(5),
            max_concurrent_evaluations: NonZeroUsize::MIN,
        },
    );
    let routes = Router::new()
        .route("/boom", post(boom))
        .route("/fine", post(|| async { "fine" }));
    let app = protect(routes, state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = http1::handshake(TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(connection);
    for (path, status) in [
        ("/boom", 500),
        ("/fine", 200),
        ("/boom", 500),
        ("/fine", 200),
    ] {
        let request = Request::post(path)
            .header("host", "localhost")
            .body(Full::new(Bytes::new()))
            .unwrap();
        sender.ready().await.unwrap();
        let response = sender.send_request(request).await.expect("same connection");
        assert_eq!(response.status().as_u16(), status, "{path}");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        if status == 500 {
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(json["error"]["code"], 500);
            assert_eq!(json["error"]["reason"], "InternalError");
        }
    }
    let text = metrics.render();
    assert!(
        text.contains("promotion_webhook_panics_total 2\n"),
        "{text}"
    );
    assert!(
        text.contains("promotion_webhook_http_errors_total{code=\"500\"} 2\n"),
        "{text}"
    );
    assert!(!server.is_finished());
    server.abort();
}

async fn boom() -> &'static str {
    panic!("handler bug")
}
