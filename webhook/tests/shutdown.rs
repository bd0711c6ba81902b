//! SIGTERM: readiness fails at once, serving goes on through the shutdown delay, in-flight
//! requests finish, and the process exits 0, with no failed request under load.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{
    connect, example, http_get, metric, raw_tls, review, tls_config, Options, Server, ALICE,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn body(uid: &str) -> Vec<u8> {
    serde_json::to_vec(&review(
        uid,
        "CREATE",
        Some(&example("cert-manager-lua-checks.yaml")),
        None,
        &ALICE,
    ))
    .unwrap()
}

/// Every wait below ends on evidence (a counter, a probe answer, a log line, a refused connection)
/// and is bounded by this.
const EVIDENCE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_drains_without_a_failed_request() {
    // The delay only has to outlast the evidence gathering below, which normally takes
    // milliseconds; nothing is timed against it.
    let mut server = Server::start_with(
        Options::default()
            .shutdown_delay(Duration::from_secs(3))
            .args(&["--shutdown-grace-period", "10s", "--request-timeout", "20s"]),
    );

    // A request whose body is only half sent when SIGTERM arrives.
    let slow_body = body("slow");
    let half = slow_body.len() / 2;
    let mut slow = raw_tls(server.https, tls_config(server.ca(), &[b"http/1.1"], None))
        .await
        .unwrap();
    let head = format!(
        "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        slow_body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&slow_body[..half]).await.unwrap();
    slow.flush().await.unwrap();

    // Load: HTTP/1.1 keep-alive clients that reconnect when told to close, and HTTP/2 clients.
    // They stop starting requests once the load balancer would have dropped the pod: after
    // /readyz fails and the server has shown it keeps serving (within the shutdown delay).
    let routed_away = Arc::new(AtomicBool::new(false));
    let terminated = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let served = Arc::new(AtomicUsize::new(0));
    let served_after_term = Arc::new(AtomicUsize::new(0));
    let closes_after_term = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for worker in 0..8 {
        let alpn: &[&[u8]] = if worker < 6 { &[b"http/1.1"] } else { &[b"h2"] };
        let config = tls_config(server.ca(), alpn, None);
        let addr = server.https;
        let (routed_away, terminated, failures, served, served_after, closes) = (
            routed_away.clone(),
            terminated.clone(),
            failures.clone(),
            served.clone(),
            served_after_term.clone(),
            closes_after_term.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut conn = None;
            for i in 0..100_000 {
                if routed_away.load(Ordering::SeqCst) {
                    break;
                }
                if conn.is_none() {
                    match connect(addr, config.clone(), "localhost").await {
                        Ok((c, _)) => conn = Some(c),
                        Err(e) => {
                            failures.lock().unwrap().push(format!("connect: {e}"));
                            break;
                        }
                    }
                }
                let after_term = terminated.load(Ordering::SeqCst);
                let Some(c) = conn.as_mut() else { break };
                match c.post("/validate", body(&format!("w{worker}-{i}"))).await {
                    Ok(response) if response.status == 200 => {
                        served.fetch_add(1, Ordering::SeqCst);
                        if after_term {
                            served_after.fetch_add(1, Ordering::SeqCst);
                        }
                        if response.closes() {
                            if after_term {
                                closes.fetch_add(1, Ordering::SeqCst);
                            }
                            conn = None;
                        }
                    }
                    Ok(response) => failures.lock().unwrap().push(format!(
                        "status {}: {}",
                        response.status,
                        response.text()
                    )),
                    Err(e) => {
                        failures.lock().unwrap().push(format!("request: {e}"));
                        conn = None;
                    }
                }
            }
        }));
    }

    eventually("the load running before SIGTERM", || {
        served.load(Ordering::SeqCst) >= 16
    })
    .await;
    assert_eq!(http_get(server.metrics, "/readyz").await.unwrap().0, 200);
    terminated.store(true, Ordering::SeqCst);
    server.sigterm();

    // /readyz fails at once.
    let deadline = Instant::now() + EVIDENCE;
    while http_get(server.metrics, "/readyz").await.unwrap().0 != 503 {
        assert!(Instant::now() < deadline, "/readyz never failed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Endpoint propagation takes a moment; the server keeps serving meanwhile, and tells
    // HTTP/1 clients to reconnect (elsewhere, once endpoints have moved on).
    eventually(
        "requests served and connections closed after SIGTERM",
        || {
            served_after_term.load(Ordering::SeqCst) > 0
                && closes_after_term.load(Ordering::SeqCst) > 0
        },
    )
    .await;
    routed_away.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }

    // After the shutdown delay the listener closes ...
    server.wait_for_log(|l| l["message"] == "closing the listener and draining connections");
    let deadline = Instant::now() + EVIDENCE;
    while tokio::net::TcpStream::connect(server.https).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "the listener still accepts after the shutdown delay"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // ... and the half-sent request still finishes.
    slow.write_all(&slow_body[half..]).await.unwrap();
    slow.flush().await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(EVIDENCE, slow.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "in-flight request lost: {text}"
    );
    assert!(text.contains("\"uid\":\"slow\""), "{text}");

    let status = server.wait_exit(EVIDENCE);
    assert_eq!(status.code(), Some(0), "exit status");
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    server.wait_for_log(|l| l["message"] == "shutdown complete");
}

#[tokio::test]
async fn a_request_that_never_finishes_does_not_block_exit() {
    let mut server = Server::start_with(
        Options::default()
            .shutdown_delay(Duration::from_millis(100))
            .args(&[
                "--shutdown-grace-period",
                "500ms",
                "--request-timeout",
                "60s",
            ]),
    );
    let mut stuck = raw_tls(server.https, tls_config(server.ca(), &[b"http/1.1"], None))
        .await
        .unwrap();
    stuck
        .write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{")
        .await
        .unwrap();
    stuck.flush().await.unwrap();
    // The handler has the request (and waits for the rest of its body).
    let deadline = Instant::now() + EVIDENCE;
    while metric(
        &server.metrics_text().await,
        "promotion_webhook_in_flight_requests",
    ) < 1.0
    {
        assert!(
            Instant::now() < deadline,
            "the request never reached a handler"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.sigterm();
    let status = server.wait_exit(EVIDENCE);
    assert_eq!(status.code(), Some(0));
    server.wait_for_log(|l| l["message"] == "shutdown complete");
}

/// Wait (bounded by [`EVIDENCE`]) until `check` holds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + EVIDENCE;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {EVIDENCE:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
