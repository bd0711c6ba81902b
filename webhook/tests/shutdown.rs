//! SIGTERM: readiness fails at once, serving goes on through the shutdown delay, in-flight
//! requests finish, and the process exits 0, with no failed request under load.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{connect, example, http_get, raw_tls, review, tls_config, Options, Server, ALICE};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_drains_without_a_failed_request() {
    let mut server = Server::start_with(Options::default().args(&[
        "--shutdown-delay",
        "1500ms",
        "--shutdown-grace-period",
        "10s",
        "--request-timeout",
        "20s",
    ]));

    // A request whose body is only half sent when SIGTERM arrives.
    let slow_body = body("slow");
    let half = slow_body.len() / 2;
    let mut slow = raw_tls(server.https, tls_config(&server.ca, &[b"http/1.1"], None))
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
    // They stop starting requests once the load balancer would have dropped the pod: a while
    // after /readyz fails (well within the shutdown delay).
    let routed_away = Arc::new(AtomicBool::new(false));
    let terminated = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let served_after_term = Arc::new(AtomicUsize::new(0));
    let closes_after_term = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for worker in 0..8 {
        let alpn: &[&[u8]] = if worker < 6 { &[b"http/1.1"] } else { &[b"h2"] };
        let config = tls_config(&server.ca, alpn, None);
        let addr = server.https;
        let (routed_away, terminated, failures, served, closes) = (
            routed_away.clone(),
            terminated.clone(),
            failures.clone(),
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
                        if after_term {
                            served.fetch_add(1, Ordering::Relaxed);
                        }
                        if response.closes() {
                            if after_term {
                                closes.fetch_add(1, Ordering::Relaxed);
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

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(http_get(server.metrics, "/readyz").await.unwrap().0, 200);
    let signalled = Instant::now();
    terminated.store(true, Ordering::SeqCst);
    server.sigterm();

    // /readyz fails at once (bounded wait only to keep a broken server from hanging the test).
    loop {
        let (status, _) = http_get(server.metrics, "/readyz").await.unwrap();
        if status == 503 {
            break;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "/readyz never failed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Endpoint propagation takes a moment; the server keeps serving meanwhile.
    tokio::time::sleep(Duration::from_millis(500)).await;
    routed_away.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }

    // The half-sent request finishes after the listener has closed.
    tokio::time::sleep(
        Duration::from_millis(1500).saturating_sub(signalled.elapsed())
            + Duration::from_millis(300),
    )
    .await;
    assert!(
        tokio::net::TcpStream::connect(server.https).await.is_err(),
        "the listener is closed after the shutdown delay"
    );
    slow.write_all(&slow_body[half..]).await.unwrap();
    slow.flush().await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), slow.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "in-flight request lost: {text}"
    );
    assert!(text.contains("\"uid\":\"slow\""), "{text}");

    let status = server.wait_exit(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "exit status");
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(
        served_after_term.load(Ordering::Relaxed) > 0,
        "kept serving after SIGTERM"
    );
    assert!(
        closes_after_term.load(Ordering::Relaxed) > 0,
        "HTTP/1 clients were told to close while draining"
    );
    let logs = server.logs();
    assert!(
        logs.iter().any(|l| l["message"] == "shutdown complete"),
        "{logs:?}"
    );
}

#[tokio::test]
async fn a_request_that_never_finishes_does_not_block_exit() {
    let mut server = Server::start_with(Options::default().args(&[
        "--shutdown-delay",
        "100ms",
        "--shutdown-grace-period",
        "500ms",
        "--request-timeout",
        "60s",
    ]));
    let mut stuck = raw_tls(server.https, tls_config(&server.ca, &[b"http/1.1"], None))
        .await
        .unwrap();
    stuck
        .write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{")
        .await
        .unwrap();
    stuck.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.sigterm();
    let status = server.wait_exit(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
}
