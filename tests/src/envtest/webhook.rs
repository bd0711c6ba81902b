//! The webhook under test: the real `promotion-webhook` binary (certificates from its own
//! `certs` command, trusted by the `ca.crt` it writes), and the webhook configuration objects a
//! user installs, rendered from `manifests/` with the Service reference replaced by the URL of
//! that process and its CA as `caBundle` (what cert-manager's cainjector would write).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use super::process::{self, Supervised};
use crate::bins;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(transparent)]
    Binary(#[from] bins::BinError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("promotion-webhook {0}; its log:\n{1}")]
    NotServing(String, String),
    #[error("rendering manifests/: {0}")]
    Render(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> WebhookError {
    let what = what.into();
    move |source| WebhookError::Io { what, source }
}

/// A running `promotion-webhook serve` on 127.0.0.1; killed by its PID when dropped.
pub struct WebhookServer {
    process: Supervised,
    https: SocketAddr,
    metrics: SocketAddr,
    ca_pem: String,
    logs: Arc<Mutex<Vec<String>>>,
    _certs: tempfile::TempDir,
}

/// How long the webhook may take to report its addresses and become ready.
const START_PATIENCE: Duration = Duration::from_secs(60);

impl WebhookServer {
    /// `promotion-webhook certs --ip 127.0.0.1`, then `serve` on free ports with `extra` flags;
    /// returns once its `/readyz` answers 200.
    pub fn start(extra: &[&str]) -> Result<WebhookServer, WebhookError> {
        let bin = bins::binary("promotion-webhook")?;
        let certs = tempfile::Builder::new()
            .prefix("promotion-webhook-certs-")
            .tempdir()
            .map_err(io("creating a folder for the webhook certificates"))?;
        let out = bins::run(
            Command::new(&bin)
                .args(["certs", "--ip", "127.0.0.1", "--dns", "localhost", "--out"])
                .arg(certs.path()),
        )?;
        if !out.success() {
            return Err(WebhookError::NotServing(
                "certs failed".into(),
                out.to_string(),
            ));
        }
        let ca_pem = std::fs::read_to_string(certs.path().join("ca.crt"))
            .map_err(io("reading the webhook's ca.crt"))?;
        let mut command = Command::new(&bin);
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(["--metrics-listen", "127.0.0.1:0", "--log-format", "json"])
            .arg("--tls-cert-file")
            .arg(certs.path().join("tls.crt"))
            .arg("--tls-key-file")
            .arg(certs.path().join("tls.key"))
            .args(extra)
            // As the manifests set it: promotion-controller is then
            // system:serviceaccount:kubectl-promotion-system:promotion-controller (User::Controller).
            .env("POD_NAMESPACE", "kubectl-promotion-system")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut process = process::spawn("promotion-webhook", command)
            .map_err(io("starting promotion-webhook"))?;
        let stderr = process.take_stderr();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (listening_tx, listening_rx) = mpsc::channel();
        let sink = logs.clone();
        // Drained for the whole life of the process so logging never blocks the server.
        std::thread::spawn(move || {
            let Some(stderr) = stderr else { return };
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if v["message"] == "listening" {
                        let _ = listening_tx.send(v);
                    }
                }
                sink.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        let log_text = |logs: &Arc<Mutex<Vec<String>>>| {
            logs.lock().unwrap_or_else(|p| p.into_inner()).join("\n")
        };
        let listening = listening_rx.recv_timeout(START_PATIENCE).map_err(|_| {
            WebhookError::NotServing("never said where it listens".into(), log_text(&logs))
        })?;
        let address = |field: &str| {
            listening[field]
                .as_str()
                .and_then(|a| a.parse::<SocketAddr>().ok())
                .ok_or_else(|| {
                    WebhookError::NotServing(
                        format!("logged no {field} address"),
                        listening.to_string(),
                    )
                })
        };
        let server = WebhookServer {
            https: address("https")?,
            metrics: address("metrics")?,
            process,
            ca_pem,
            logs,
            _certs: certs,
        };
        let deadline = Instant::now() + START_PATIENCE;
        while !matches!(super::http::get(server.metrics, "/readyz"), Ok((200, _))) {
            if Instant::now() > deadline {
                return Err(WebhookError::NotServing(
                    "never became ready".into(),
                    log_text(&server.logs),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// `https://127.0.0.1:PORT` (no path).
    pub fn base_url(&self) -> String {
        format!("https://{}", self.https)
    }

    /// The CA its serving certificate chains to: the webhook configurations' `caBundle`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The metrics listener (`/metrics`, `/readyz`).
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// What it logged so far (JSON lines).
    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Kill it (the webhook goes down; its port stops answering).
    pub fn stop(&mut self) {
        self.process.stop();
    }

    /// The configurations a user installs, pointing at this process.
    pub fn configurations(&self) -> Result<WebhookConfigurations, WebhookError> {
        WebhookConfigurations::rendered(&self.base_url(), &self.ca_pem)
    }
}

/// `failurePolicy` of every webhook in a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

impl FailurePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// The MutatingWebhookConfiguration and ValidatingWebhookConfiguration of the default install.
#[derive(Clone, Debug)]
pub struct WebhookConfigurations {
    pub mutating: Value,
    pub validating: Value,
}

impl WebhookConfigurations {
    /// `kubectl kustomize manifests/` (the default install), its two webhook configurations
    /// with `clientConfig.service` replaced by `<base_url><service.path>` and `caBundle` set.
    pub fn rendered(base_url: &str, ca_pem: &str) -> Result<WebhookConfigurations, WebhookError> {
        let manifests = bins::workspace_root().join("manifests");
        let out = bins::run(Command::new("kubectl").arg("kustomize").arg(&manifests))?;
        if !out.success() {
            return Err(WebhookError::Render(format!("kubectl kustomize: {out}")));
        }
        let documents: Vec<Value> = serde_saphyr::from_multiple(&out.stdout)
            .map_err(|e| WebhookError::Render(format!("the rendered YAML does not parse: {e}")))?;
        let pick = |kind: &str| -> Result<Value, WebhookError> {
            let mut found = documents
                .iter()
                .find(|d| d["kind"] == kind)
                .cloned()
                .ok_or_else(|| WebhookError::Render(format!("no {kind} in the default install")))?;
            point_at(&mut found, base_url, ca_pem)?;
            Ok(found)
        };
        Ok(WebhookConfigurations {
            mutating: pick("MutatingWebhookConfiguration")?,
            validating: pick("ValidatingWebhookConfiguration")?,
        })
    }

    /// Set the main webhooks' `failurePolicy` (an install that fails open, or closed). The pause
    /// webhooks keep `Ignore`: they are the brake that works with the webhook down.
    pub fn with_failure_policy(mut self, policy: FailurePolicy) -> Self {
        for config in [&mut self.mutating, &mut self.validating] {
            if let Some(main) = webhooks_mut(config).next() {
                main["failurePolicy"] = json!(policy.as_str());
            }
        }
        self
    }

    /// Give both objects their own name and make their webhooks see only objects labelled
    /// `key=value`, so that tests sharing one API server do not admit each other's objects.
    pub fn scoped(mut self, name: &str, key: &str, value: &str) -> Self {
        for config in [&mut self.mutating, &mut self.validating] {
            config["metadata"]["name"] = json!(name);
            for webhook in webhooks_mut(config) {
                webhook["objectSelector"] = json!({"matchLabels": {key: value}});
            }
        }
        self
    }

    pub fn objects(&self) -> [&Value; 2] {
        [&self.mutating, &self.validating]
    }

    /// Every webhook of both objects: `(mutating?, webhook)`.
    pub fn webhooks(&self) -> impl Iterator<Item = (bool, &Value)> {
        fn of(config: &Value) -> impl Iterator<Item = &Value> {
            config["webhooks"].as_array().into_iter().flatten()
        }
        of(&self.mutating)
            .map(|w| (true, w))
            .chain(of(&self.validating).map(|w| (false, w)))
    }
}

fn webhooks_mut(config: &mut Value) -> impl Iterator<Item = &mut Value> {
    config["webhooks"]
        .as_array_mut()
        .map(|a| a.iter_mut())
        .into_iter()
        .flatten()
}

fn point_at(config: &mut Value, base_url: &str, ca_pem: &str) -> Result<(), WebhookError> {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let kind = config["kind"]
        .as_str()
        .unwrap_or("webhook configuration")
        .to_string();
    let hooks: Vec<&mut Value> = webhooks_mut(config).collect();
    if hooks.is_empty() {
        return Err(WebhookError::Render(format!("{kind} has no webhooks")));
    }
    for webhook in hooks {
        let path = webhook["clientConfig"]["service"]["path"]
            .as_str()
            .ok_or_else(|| {
                WebhookError::Render(format!(
                    "{kind}: a webhook without clientConfig.service.path"
                ))
            })?
            .to_string();
        webhook["clientConfig"] = json!({"url": format!("{base_url}{path}"), "caBundle": bundle});
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_install_is_rendered_with_urls_and_the_ca() {
        let configs =
            WebhookConfigurations::rendered("https://127.0.0.1:1", "PEM").expect("render");
        let bundle = base64::engine::general_purpose::STANDARD.encode("PEM");
        let mut paths = Vec::new();
        for (mutating, webhook) in configs.webhooks() {
            assert_eq!(webhook["clientConfig"]["caBundle"], json!(bundle));
            assert!(
                webhook["clientConfig"].get("service").is_none(),
                "{webhook}"
            );
            let pause = webhook["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("pause."));
            let policy = if pause { "Ignore" } else { "Fail" };
            assert_eq!(webhook["failurePolicy"], policy, "what users install");
            assert_eq!(webhook["sideEffects"], "None");
            paths.push((mutating, webhook["clientConfig"]["url"].clone()));
        }
        assert_eq!(
            paths,
            vec![
                (true, json!("https://127.0.0.1:1/mutate")),
                (true, json!("https://127.0.0.1:1/mutate")),
                (false, json!("https://127.0.0.1:1/validate")),
                (false, json!("https://127.0.0.1:1/validate"))
            ]
        );
        let scoped =
            configs
                .with_failure_policy(FailurePolicy::Ignore)
                .scoped("t1", "e2e/session", "t1");
        for (_, webhook) in scoped.webhooks() {
            assert_eq!(webhook["failurePolicy"], "Ignore");
            assert_eq!(
                webhook["objectSelector"]["matchLabels"]["e2e/session"],
                "t1"
            );
        }
        assert_eq!(scoped.mutating["metadata"]["name"], "t1");
    }
}
