//! Admission through the stand-in: a webhook served over HTTPS (by this test, with a certificate
//! from the stand-in's CA) receives real AdmissionReviews; mutations, denials, warnings and
//! failures reach `kubectl` as they would from a real API server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::Json;
use base64::Engine;
use promotion_e2e::apiserver::tls::{self, TestCa};
use promotion_e2e::apiserver::{AdmissionConfig, StandIn, StandInHandle, StandInOptions};
use promotion_e2e::bins::KubeEnv;
use promotion_e2e::fixtures;
use serde_json::{json, Value};

/// A webhook for the tests: `/mutate` adds an annotation (base64 patch, or a byte array as
/// kube-rs sends it when `?bytes=array`), `/validate` denies objects labelled `deny=true`.
struct TestWebhook {
    url: String,
    reviews: Arc<Mutex<Vec<Value>>>,
    handle: axum_server::Handle<SocketAddr>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn response(review: &Value, body: Value) -> Json<Value> {
    let mut response = body;
    response["uid"] = review["request"]["uid"].clone();
    Json(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
    )
}

impl TestWebhook {
    fn start(ca: &TestCa) -> TestWebhook {
        let cert = ca.issue(&["127.0.0.1"]).expect("webhook cert");
        let config = Arc::new(tls::server_config(&cert).expect("tls config"));
        let reviews: Arc<Mutex<Vec<Value>>> = Arc::default();
        let handle = axum_server::Handle::<SocketAddr>::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread_reviews = reviews.clone();
        let thread_handle = handle.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let seen = thread_reviews.clone();
                let mutate = move |axum::extract::RawQuery(q): axum::extract::RawQuery, Json(review): Json<Value>| {
                    let seen = seen.clone();
                    async move {
                        seen.lock().expect("lock").push(review.clone());
                        let has_annotations = review["request"]["object"]["metadata"]["annotations"].is_object();
                        let patch = if has_annotations {
                            json!([{"op": "add", "path": "/metadata/annotations/e2e~1mutated", "value": "true"}])
                        } else {
                            json!([{"op": "add", "path": "/metadata/annotations", "value": {"e2e/mutated": "true"}}])
                        };
                        let bytes = serde_json::to_vec(&patch).expect("patch");
                        let encoded = if q.as_deref().unwrap_or_default().contains("bytes=array") {
                            json!(bytes)
                        } else {
                            json!(base64::engine::general_purpose::STANDARD.encode(bytes))
                        };
                        response(&review, json!({"allowed": true, "patchType": "JSONPatch", "patch": encoded, "warnings": ["mutated by the e2e webhook"]}))
                    }
                };
                let seen = thread_reviews.clone();
                let validate = move |Json(review): Json<Value>| {
                    let seen = seen.clone();
                    async move {
                        seen.lock().expect("lock").push(review.clone());
                        if review["request"]["object"]["metadata"]["labels"]["deny"] == "true" {
                            response(&review, json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "label deny=true is not allowed"}}))
                        } else {
                            response(&review, json!({"allowed": true}))
                        }
                    }
                };
                let app = axum::Router::new()
                    .route("/mutate", post(mutate))
                    .route("/validate", post(validate));
                let notify = thread_handle.clone();
                tokio::spawn(async move {
                    if let Some(addr) = notify.listening().await {
                        let _ = tx.send(addr);
                    }
                });
                let rustls = axum_server::tls_rustls::RustlsConfig::from_config(config);
                let bind: SocketAddr = ([127, 0, 0, 1], 0).into();
                let _ = axum_server::bind_rustls(bind, rustls)
                    .handle(thread_handle)
                    .serve(app.into_make_service())
                    .await;
            });
        });
        let addr = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("webhook listening");
        TestWebhook {
            url: format!("https://{addr}"),
            reviews,
            handle,
            thread: Some(thread),
        }
    }

    fn reviews(&self) -> Vec<Value> {
        self.reviews.lock().expect("lock").clone()
    }
}

impl Drop for TestWebhook {
    fn drop(&mut self) {
        self.handle.shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn admission(server: &StandInHandle, hook: &TestWebhook, mutate_query: &str) -> AdmissionConfig {
    let mut cfg = AdmissionConfig::new(server.ca_pem());
    cfg.mutate_url = Some(format!("{}/mutate{mutate_query}", hook.url));
    cfg.validate_url = Some(format!("{}/validate", hook.url));
    cfg
}

fn start() -> StandInHandle {
    let world = fixtures::example_world("kyverno-manual-gate.yaml").expect("world");
    StandIn::start(StandInOptions::default().with_objects(world.objects)).expect("stand-in")
}

#[test]
fn create_is_mutated_and_warnings_reach_kubectl() {
    let server = start();
    let hook = TestWebhook::start(server.ca());
    server
        .set_admission(Some(admission(&server, &hook, "")))
        .expect("admission");
    let env = KubeEnv::new(&server).expect("env");
    let file = fixtures::examples_dir().join("payment-four-stages.yaml");
    let out = env
        .kubectl(&["create", "-f", &file.to_string_lossy()])
        .expect("kubectl");
    assert!(out.success(), "{out}");
    assert!(
        out.stderr.contains("Warning: mutated by the e2e webhook"),
        "{out}"
    );
    let obj = env
        .kubectl(&[
            "get",
            "clusterpromotion",
            "core-payment-processor-ci",
            "-o",
            "jsonpath={.metadata.annotations.e2e/mutated}",
        ])
        .expect("kubectl");
    assert_eq!(obj.stdout, "true", "{obj}");

    let reviews = hook.reviews();
    let mutate = &reviews[0];
    assert_eq!(mutate["request"]["operation"], "CREATE");
    assert_eq!(mutate["request"]["kind"]["kind"], "ClusterPromotion");
    assert_eq!(
        mutate["request"]["resource"]["resource"],
        "clusterpromotions"
    );
    assert_eq!(mutate["request"]["userInfo"]["username"], "admin");
    assert_eq!(mutate["request"]["options"]["kind"], "CreateOptions");
    assert!(mutate["request"]["oldObject"].is_null());
    // The validating webhook sees the mutated (and CRD-defaulted) object.
    let validate = &reviews[1];
    assert_eq!(
        validate["request"]["object"]["metadata"]["annotations"]["e2e/mutated"],
        "true"
    );
    assert_eq!(
        validate["request"]["object"]["spec"]["profileSpec"]["tier"],
        100
    );
}

#[test]
fn denial_carries_the_webhook_status_and_dry_run_and_impersonation_are_reported() {
    let server = start();
    let hook = TestWebhook::start(server.ca());
    server
        .set_admission(Some(admission(&server, &hook, "?bytes=array")))
        .expect("admission");
    let env = KubeEnv::new(&server).expect("env");

    let out = env
        .kubectl(&[
            "label",
            "clusterpromotion",
            "kyverno-rollout-man",
            "deny=true",
        ])
        .expect("kubectl");
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains(
        r#"admission webhook "validate.clusterpromotions.config.projectsveltos.io" denied the request: label deny=true is not allowed"#
    ), "{out}");
    assert!(out.stderr.contains("(Forbidden)"), "{out}");
    let obj = env
        .kubectl(&[
            "get",
            "clusterpromotion",
            "kyverno-rollout-man",
            "-o",
            "json",
        ])
        .expect("kubectl");
    let obj: Value = serde_json::from_str(&obj.stdout).expect("json");
    assert!(obj["metadata"]["labels"]["deny"].is_null());
    assert!(obj["metadata"]["annotations"]["e2e/mutated"].is_null());

    let before = hook.reviews().len();
    let out = env
        .kubectl(&[
            "--as", "bob", "--as-group", "approvers", "--as-uid", "bob-uid",
            "patch", "clusterpromotion", "kyverno-rollout-man", "--type=json", "--dry-run=server",
            "-p", r#"[{"op":"test","path":"/spec/stages/1/name","value":"staging"},{"op":"add","path":"/spec/stages/1/trigger/manual/approved","value":true}]"#,
            "-o", "jsonpath={.spec.stages[1].trigger.manual.approved} {.metadata.annotations.e2e/mutated}",
        ])
        .expect("kubectl");
    assert!(out.success(), "{out}");
    // The mutation (sent as a byte array, like kube-rs does) was applied to the dry-run result.
    assert_eq!(out.stdout, "true true", "{out}");
    let reviews = hook.reviews();
    let review = &reviews[before];
    assert_eq!(review["request"]["operation"], "UPDATE");
    assert_eq!(review["request"]["dryRun"], true);
    assert_eq!(
        review["request"]["userInfo"],
        json!({"username": "bob", "uid": "bob-uid", "groups": ["approvers", "system:authenticated"]})
    );
    assert_eq!(
        review["request"]["oldObject"]["spec"]["stages"][1]["trigger"]["manual"]["approved"],
        false
    );
    assert_eq!(
        review["request"]["object"]["spec"]["stages"][1]["trigger"]["manual"]["approved"],
        true
    );
    let after = env
        .kubectl(&[
            "get",
            "clusterpromotion",
            "kyverno-rollout-man",
            "-o",
            "jsonpath={.spec.stages[1].trigger.manual.approved}",
        ])
        .expect("kubectl");
    assert_eq!(after.stdout, "false", "dry run must not persist: {after}");
}

#[test]
fn a_webhook_with_an_untrusted_certificate_fails_the_request() {
    let server = start();
    let other_ca = TestCa::new("somebody-else").expect("ca");
    let hook = TestWebhook::start(&other_ca);
    server
        .set_admission(Some(admission(&server, &hook, "")))
        .expect("admission");
    let env = KubeEnv::new(&server).expect("env");
    let out = env
        .kubectl(&["label", "clusterpromotion", "kyverno-rollout-man", "a=b"])
        .expect("kubectl");
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains(
        r#"Internal error occurred: failed calling webhook "mutate.clusterpromotions.config.projectsveltos.io": failed to call webhook: Post "https://127.0.0.1:"#
    ), "{out}");
    assert!(
        hook.reviews().is_empty(),
        "the TLS handshake must fail before any review is sent"
    );
}
