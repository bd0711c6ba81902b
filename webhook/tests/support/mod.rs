//! Test support: the real `promotion-webhook` binary, started by `promotion_webhook::testing`
//! (certificates from its own `certs` subcommand), a TLS client that verifies the server against
//! the generated CA (HTTP/1.1 or HTTP/2 over ALPN), and AdmissionReviews built from the
//! repository's examples.
#![allow(dead_code, unused_imports)]

pub mod client;

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use promotion_webhook::testing;
use serde_json::{json, Value};

pub use client::{connect, http_get, raw_tls, tls_config, Conn, HttpResponse, TlsInfo};

pub const BIN: &str = env!("CARGO_BIN_EXE_promotion-webhook");

/// `promotion-webhook certs` into `dir`; extra args are appended (e.g. `--ca-cert`).
pub fn generate_certs(dir: &Path, extra: &[&str]) -> testing::CertFiles {
    testing::generate_certs(Path::new(BIN), dir, extra).unwrap_or_else(|e| panic!("{e}"))
}

/// How to start a test server: `serve` flags, environment, and optionally the certificate files
/// to serve instead of a fresh pair.
#[derive(Default)]
pub struct Options {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub shutdown_delay: Option<Duration>,
    /// Serve these (certificate, key, CA that verifies them) instead of a fresh pair.
    pub tls: Option<(PathBuf, PathBuf, String)>,
}

impl Options {
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn shutdown_delay(mut self, delay: Duration) -> Self {
        self.shutdown_delay = Some(delay);
        self
    }
}

/// A running `promotion-webhook serve` ([`testing::Webhook`]: addresses, CA, log, signals),
/// with the async TLS client on top. Killed when dropped.
pub struct Server(pub testing::Webhook);

impl std::ops::Deref for Server {
    type Target = testing::Webhook;

    fn deref(&self) -> &testing::Webhook {
        &self.0
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut testing::Webhook {
        &mut self.0
    }
}

/// Bounds every wait on the server's log: the line is normally there within milliseconds.
pub const LOG_WAIT: Duration = Duration::from_secs(20);

impl Server {
    pub fn start() -> Server {
        Server::start_with(Options::default())
    }

    pub fn start_with(options: Options) -> Server {
        let mut launch = testing::Launch::new(BIN)
            .args(&options.args)
            .shutdown_delay(options.shutdown_delay.unwrap_or_default());
        for (key, value) in &options.env {
            launch = launch.env(key, value);
        }
        if let Some((cert, key, ca)) = &options.tls {
            launch = launch.tls(cert, key, ca);
        }
        Server(launch.start().unwrap_or_else(|e| panic!("{e}")))
    }

    /// The first log line matching `wanted`, waiting (bounded) for it.
    #[track_caller]
    pub fn wait_for_log(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        self.0
            .wait_for_log("matching log line", LOG_WAIT, wanted)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[track_caller]
    pub fn sigterm(&self) {
        self.0.sigterm().unwrap_or_else(|e| panic!("{e}"));
    }

    /// Wait (bounded) for the process to exit by itself.
    #[track_caller]
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        self.0.wait_exit(limit).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn ca(&self) -> &[u8] {
        self.0.ca_pem.as_bytes()
    }

    pub async fn connect(&self) -> Conn {
        self.connect_with(&[b"http/1.1"]).await.0
    }

    pub async fn connect_h2(&self) -> Conn {
        let (conn, info) = self.connect_with(&[b"h2"]).await;
        assert_eq!(info.alpn.as_deref(), Some(&b"h2"[..]));
        conn
    }

    pub async fn connect_with(&self, alpn: &[&[u8]]) -> (Conn, TlsInfo) {
        let config = tls_config(self.ca(), alpn, None);
        connect(self.https, config, "localhost")
            .await
            .expect("TLS connection to the webhook")
    }

    /// POST a review on a fresh HTTP/1.1 connection; the parsed AdmissionReview answer.
    pub async fn review(&self, path: &str, review: &Value) -> Value {
        let mut conn = self.connect().await;
        let response = conn
            .post(path, serde_json::to_vec(review).unwrap())
            .await
            .expect("request");
        assert_eq!(response.status, 200, "{}", response.text());
        let answer = response.json();
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
        assert_eq!(
            answer["response"]["uid"], review["request"]["uid"],
            "uid must be echoed"
        );
        answer["response"].clone()
    }

    pub async fn metrics_text(&self) -> String {
        let (status, body) = http_get(self.metrics, "/metrics").await.expect("metrics");
        assert_eq!(status, 200);
        body
    }
}

/// A metric sample's value, 0 when absent.
pub fn metric(text: &str, sample: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// An example manifest as JSON.
pub fn example(file: &str) -> Value {
    let path = examples_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Every example manifest, by file name.
pub fn examples() -> Vec<(String, Value)> {
    let mut files: Vec<String> = std::fs::read_dir(examples_dir())
        .expect("examples directory")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| (f.clone(), example(&f)))
        .collect()
}

pub struct User<'a> {
    pub name: &'a str,
    pub groups: &'a [&'a str],
}

pub const ALICE: User<'static> = User {
    name: "alice",
    groups: &["system:authenticated", "release-managers"],
};
pub const BOB: User<'static> = User {
    name: "bob",
    groups: &["system:authenticated", "release-managers"],
};
pub const EVE: User<'static> = User {
    name: "eve",
    groups: &["system:authenticated"],
};

/// An AdmissionReview for a ClusterPromotion, as the API server sends it.
pub fn review(
    uid: &str,
    operation: &str,
    object: Option<&Value>,
    old: Option<&Value>,
    user: &User<'_>,
) -> Value {
    let name = object
        .or(old)
        .and_then(|o| o["metadata"]["name"].as_str())
        .unwrap_or("");
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "config.projectsveltos.io", "version": "v1beta1", "kind": "ClusterPromotion"},
            "resource": {"group": "config.projectsveltos.io", "version": "v1beta1", "resource": "clusterpromotions"},
            "requestKind": {"group": "config.projectsveltos.io", "version": "v1beta1", "kind": "ClusterPromotion"},
            "requestResource": {"group": "config.projectsveltos.io", "version": "v1beta1", "resource": "clusterpromotions"},
            "name": name,
            "operation": operation,
            "userInfo": {"username": user.name, "uid": format!("uid-{}", user.name), "groups": user.groups},
            "object": object,
            "oldObject": old,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": format!("{}Options", title(operation))}
        }
    })
}

fn title(operation: &str) -> String {
    let lower = operation.to_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The JSON Patch of a mutate answer (decoded from base64), or None without one. Checks that
/// `patch` and `patchType` come together and that `patch` is a string, as the API requires.
pub fn patch_of(response: &Value) -> Option<Value> {
    use base64::Engine;
    match (response.get("patch"), response.get("patchType")) {
        (None, None) => None,
        (Some(Value::String(encoded)), Some(kind)) => {
            assert_eq!(kind, "JSONPatch");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .expect("patch is base64");
            Some(serde_json::from_slice(&bytes).expect("patch is JSON"))
        }
        other => panic!("patch and patchType must come together, patch as a string: {other:?}"),
    }
}

/// Apply a mutate answer's patch (if any) to `object`.
pub fn apply(object: &Value, response: &Value) -> Value {
    let mut out = object.clone();
    if let Some(patch) = patch_of(response) {
        let patch: json_patch::Patch = serde_json::from_value(patch).expect("JSON Patch");
        json_patch::patch(&mut out, &patch.0).expect("patch applies");
    }
    out
}

pub fn warnings(response: &Value) -> Vec<String> {
    response["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The fields named by a denial's causes.
pub fn cause_fields(response: &Value) -> Vec<String> {
    response["status"]["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| c["field"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// What the API server does with a write: mutate, apply the patch, validate the result.
pub struct Chain {
    pub mutate: Value,
    /// The object after the mutation (the request object when the mutation denied).
    pub object: Value,
    /// `None` when the mutation already denied the request.
    pub validate: Option<Value>,
}

impl Chain {
    pub fn allowed(&self) -> bool {
        self.mutate["allowed"] == true
            && self.validate.as_ref().is_some_and(|v| v["allowed"] == true)
    }

    /// The denying answer (mutating or validating).
    pub fn denial(&self) -> &Value {
        if self.mutate["allowed"] != true {
            return &self.mutate;
        }
        self.validate.as_ref().expect("validated")
    }
}

pub async fn chain(
    server: &Server,
    uid: &str,
    new: &Value,
    old: Option<&Value>,
    user: &User<'_>,
) -> Chain {
    let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
    let mutate = server
        .review("/mutate", &review(uid, operation, Some(new), old, user))
        .await;
    if mutate["allowed"] != true {
        return Chain {
            mutate,
            object: new.clone(),
            validate: None,
        };
    }
    let object = apply(new, &mutate);
    let validate = server
        .review(
            "/validate",
            &review(uid, operation, Some(&object), old, user),
        )
        .await;
    Chain {
        mutate,
        object,
        validate: Some(validate),
    }
}
