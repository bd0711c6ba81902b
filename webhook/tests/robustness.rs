//! The real binary against garbage, oversized and slow requests, HTTP/2, concurrency, and the
//! metrics and probes that report on it.

mod support;

use std::time::Duration;

use hyper::Method;
use serde_json::{json, Value};
use support::{
    example, http_get, metric, raw_tls, review, tls_config, Conn, Options, Server, ALICE,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn valid_review(uid: &str) -> Vec<u8> {
    let object = example("kyverno-manual-gate.yaml");
    serde_json::to_vec(&review(uid, "CREATE", Some(&object), None, &ALICE)).unwrap()
}

fn assert_json_error(response: &support::HttpResponse, code: u16, needle: &str) {
    assert_eq!(response.status, code, "{}", response.text());
    assert_eq!(
        response.headers.get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    let body = response.json();
    assert_eq!(body["error"]["code"], code);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "{message}");
}

#[tokio::test]
async fn bodies_that_are_not_admission_reviews_get_400_saying_why() {
    let server = Server::start();
    let mut conn = server.connect().await;
    let mut no_request = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
    let mut old_version: Value = serde_json::from_slice(&valid_review("v1beta1")).unwrap();
    old_version["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let v1beta1 = serde_json::to_vec(&old_version).unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not json at all".to_vec(), "not valid JSON"),
        (Vec::new(), "not valid JSON"),
        (
            br#"{"kind": "Pod", "apiVersion": "v1"}"#.to_vec(),
            "expected apiVersion",
        ),
        (v1beta1, "admission.k8s.io/v1beta1"),
        (serde_json::to_vec(&no_request).unwrap(), "no \"request\""),
        (b"[1, 2, 3]".to_vec(), "not an AdmissionReview"),
    ];
    no_request["request"] = json!({"uid": "x"});
    let mut cases = cases;
    cases.push((serde_json::to_vec(&no_request).unwrap(), "missing field"));
    // A fuzz finding: one byte of invalid UTF-8 in a field the decoder skips.
    let not_utf8 = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/regressions/invalid-utf8-in-skipped-field.json"),
    )
    .unwrap();
    cases.push((not_utf8, "not valid JSON: it is not UTF-8"));
    for (body, needle) in cases {
        for path in ["/validate", "/mutate"] {
            let response = conn.post(path, body.clone()).await.expect("answered");
            assert_json_error(&response, 400, needle);
            assert_eq!(response.json()["error"]["reason"], "BadRequest");
        }
    }
    // The same keep-alive connection still serves real reviews.
    let response = conn.post("/validate", valid_review("after")).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["response"]["uid"], "after");

    let metrics = server.metrics_text().await;
    assert!(
        metric(
            &metrics,
            "promotion_webhook_http_errors_total{code=\"400\"}"
        ) >= 14.0
    );
    assert!(
        metric(
            &metrics,
            "promotion_webhook_admission_requests_total{endpoint=\"validate\",operation=\"unknown\",verdict=\"error\"}"
        ) >= 7.0
    );
}

/// A syntactically valid review padded to `size` bytes.
fn padded_review(size: usize) -> Vec<u8> {
    let mut object = example("kyverno-manual-gate.yaml");
    object["metadata"]["annotations"] = json!({"padding": ""});
    let base = serde_json::to_vec(&review("big", "CREATE", Some(&object), None, &ALICE))
        .unwrap()
        .len();
    object["metadata"]["annotations"]["padding"] = json!("x".repeat(size - base));
    let body = serde_json::to_vec(&review("big", "CREATE", Some(&object), None, &ALICE)).unwrap();
    assert_eq!(body.len(), size);
    body
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    const LIMIT: usize = 3 * 1024 * 1024;
    let server = Server::start();

    let mut h1 = server.connect().await;
    let response = h1.post("/validate", padded_review(LIMIT)).await.unwrap();
    assert_eq!(response.status, 200, "exactly the limit is fine");
    let response = h1
        .post("/validate", padded_review(LIMIT + 64 * 1024))
        .await
        .unwrap();
    assert_json_error(&response, 413, "larger than 3145728 bytes");
    assert!(response.closes(), "the connection must not be reused");

    let mut h2 = server.connect_h2().await;
    let response = h2.post("/mutate", padded_review(LIMIT + 1)).await.unwrap();
    assert_json_error(&response, 413, "larger than");
    // Announced far beyond the limit: refused without reading it all.
    let response = h2.post("/mutate", vec![b' '; 10 * LIMIT]).await.unwrap();
    assert_json_error(&response, 413, "larger than");
    // HTTP/2 streams are independent: the connection carries on.
    let response = h2.post("/validate", valid_review("next")).await.unwrap();
    assert_eq!(response.status, 200);

    let metrics = server.metrics_text().await;
    assert_eq!(
        metric(
            &metrics,
            "promotion_webhook_http_errors_total{code=\"413\"}"
        ),
        3.0
    );
}

#[tokio::test]
async fn unknown_paths_and_methods_get_json_errors() {
    let server = Server::start();
    let mut conn = server.connect().await;
    let response = conn
        .send(Method::GET, "/validate", Vec::new())
        .await
        .unwrap();
    assert_json_error(&response, 405, "use POST");
    let response = conn.post("/admit", valid_review("x")).await.unwrap();
    assert_json_error(&response, 404, "/admit");
}

#[tokio::test]
async fn slow_clients_are_cut_off() {
    let server = Server::start_with(Options::default().args(&[
        "--header-read-timeout",
        "1s",
        "--request-timeout",
        "1s",
    ]));
    let config = tls_config(server.ca(), &[b"http/1.1"], None);
    // Bounds only keep a broken server from hanging the test; the server's own timeouts end
    // these connections long before.
    let bound = Duration::from_secs(20);

    // Headers that never finish: cut off, and not before the header-read timeout.
    let mut stream = raw_tls(server.https, config.clone()).await.unwrap();
    stream
        .write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let sent = std::time::Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(bound, stream.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "server kept a half-sent request open");
    assert!(
        sent.elapsed() >= Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );

    // A keep-alive connection that sends nothing after its first answer: the same timeout,
    // started again while the connection waits for the next request, closes it.
    let mut stream = raw_tls(server.https, config.clone()).await.unwrap();
    let body = valid_review("then-silent");
    let mut request = format!(
        "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    stream.write_all(&request).await.unwrap();
    let sent = std::time::Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(bound, stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "server kept an idle keep-alive connection open"
    );
    assert!(
        sent.elapsed() >= Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("then-silent"), "{text}");

    // A body that never finishes: 408 with a JSON reason.
    let mut stream = raw_tls(server.https, config.clone()).await.unwrap();
    stream
        .write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\"")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(bound, stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "server kept a half-sent body open");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"reason\":\"Timeout\""), "{text}");

    // A TCP connection that never starts TLS.
    let mut tcp = tokio::net::TcpStream::connect(server.https).await.unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(bound, tcp.read(&mut buf)).await;
    assert!(read.is_ok(), "server kept a silent connection open");

    // Meanwhile others are served normally.
    let mut conn = server.connect().await;
    assert_eq!(
        conn.post("/validate", valid_review("ok"))
            .await
            .unwrap()
            .status,
        200
    );
}

#[tokio::test]
async fn http2_over_alpn() {
    let server = Server::start();
    let (mut conn, info) = server.connect_with(&[b"h2", b"http/1.1"]).await;
    assert_eq!(info.alpn.as_deref(), Some(&b"h2"[..]));
    let response = conn.post("/validate", valid_review("h2")).await.unwrap();
    assert_eq!(response.version, hyper::Version::HTTP_2);
    assert_eq!(response.json()["response"]["uid"], "h2");
    let (_, info) = server.connect_with(&[b"http/1.1"]).await;
    assert_eq!(info.alpn.as_deref(), Some(&b"http/1.1"[..]));
}

fn expected_allowed(file: &str) -> bool {
    !matches!(
        file,
        "both-triggers.yaml"
            | "lua-syntax-error.yaml"
            | "cel-syntax-error.yaml"
            | "validation-job-self.yaml"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_get_their_own_answers() {
    let server = Server::start();
    let examples = support::examples();
    let mut tasks = Vec::new();
    // 16 HTTP/1.1 keep-alive connections, and one HTTP/2 connection with 16 concurrent streams.
    let h2 = server.connect_h2().await;
    for worker in 0..32 {
        let mut conn: Conn = if worker < 16 {
            server.connect().await
        } else {
            h2.h2_clone().unwrap()
        };
        let examples = examples.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                let (file, object) = &examples[(worker + i) % examples.len()];
                let uid = format!("w{worker}-{i}");
                let path = if i % 2 == 0 { "/validate" } else { "/mutate" };
                let body = serde_json::to_vec(&review(&uid, "CREATE", Some(object), None, &ALICE))
                    .unwrap();
                let response = conn.post(path, body).await.expect("answered");
                assert_eq!(response.status, 200);
                let answer: Value = response.json();
                assert_eq!(answer["response"]["uid"], uid);
                let allowed = answer["response"]["allowed"] == true;
                if path == "/validate" {
                    assert_eq!(allowed, expected_allowed(file), "{file}");
                } else {
                    assert!(allowed, "{file}");
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("worker");
    }
    let metrics = server.metrics_text().await;
    let count = |endpoint: &str| {
        metric(
            &metrics,
            &format!(
                "promotion_webhook_admission_duration_seconds_count{{endpoint=\"{endpoint}\"}}"
            ),
        )
    };
    assert_eq!(count("validate") + count("mutate"), 640.0);
    assert_eq!(
        metric(&metrics, "promotion_webhook_in_flight_requests"),
        0.0
    );
}

#[tokio::test]
async fn metrics_and_probes() {
    let server = Server::start();
    let broken = example("both-triggers.yaml");
    let mut conn = server.connect().await;
    for (path, object) in [
        ("/validate", &broken),
        ("/mutate", &example("kyverno-manual-gate.yaml")),
    ] {
        let body = serde_json::to_vec(&review("m", "CREATE", Some(object), None, &ALICE)).unwrap();
        assert_eq!(conn.post(path, body).await.unwrap().status, 200);
    }
    let text = server.metrics_text().await;
    for sample in [
        "promotion_webhook_admission_requests_total{endpoint=\"validate\",operation=\"CREATE\",verdict=\"denied\"} 1",
        "promotion_webhook_admission_requests_total{endpoint=\"mutate\",operation=\"CREATE\",verdict=\"patched\"} 1",
        "promotion_webhook_admission_duration_seconds_bucket{endpoint=\"validate\",le=\"+Inf\"} 1",
        "promotion_webhook_panics_total 0",
        "promotion_webhook_certificate_reloads_total{result=\"success\"} 0",
        "# TYPE promotion_webhook_admission_duration_seconds histogram",
    ] {
        assert!(text.contains(sample), "missing {sample:?} in\n{text}");
    }
    assert!(
        metric(
            &text,
            "promotion_webhook_certificate_not_after_timestamp_seconds"
        ) > 1.7e9
    );
    assert_eq!(http_get(server.metrics, "/healthz").await.unwrap().0, 200);
    assert_eq!(http_get(server.metrics, "/readyz").await.unwrap().0, 200);
    assert_eq!(http_get(server.metrics, "/other").await.unwrap().0, 404);

    // One log line per admission with the fields an operator searches by.
    let line = server.wait_for_log(|l| l["message"] == "admission" && l["endpoint"] == "validate");
    for (field, value) in [
        ("uid", json!("m")),
        ("operation", json!("CREATE")),
        ("name", json!("both-triggers")),
        ("user", json!("alice")),
        ("allowed", json!(false)),
        ("code", json!(422)),
    ] {
        assert_eq!(line[field], value, "{line}");
    }
    assert!(line["duration_us"].as_u64().is_some(), "{line}");
}

#[tokio::test]
async fn bad_configuration_fails_fast_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(support::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .arg("--tls-cert-file")
        .arg(dir.path().join("missing.crt"))
        .arg("--tls-key-file")
        .arg(dir.path().join("missing.key"))
        // The namespace, as the manifests give it, so that the certificate is what is missing.
        .env("POD_NAMESPACE", promotion_webhook::testing::NAMESPACE)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("missing.crt"), "{stderr}");

    let output = std::process::Command::new(support::BIN)
        .args([
            "serve",
            "--tls-cert-file",
            "a",
            "--tls-key-file",
            "b",
            "--request-timeout",
            "soon",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid duration"));
}
