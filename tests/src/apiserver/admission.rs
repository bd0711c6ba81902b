//! Calling admission webhooks the way the apiserver's webhook admission plugins do: an
//! `admission.k8s.io/v1` AdmissionReview POSTed over HTTPS (certificate verified against the
//! configured CA bundle), mutating first (its base64 JSONPatch applied), validating last; a
//! denial becomes `admission webhook "<name>" denied the request: <message>`. A webhook whose
//! `matchConditions` do not all hold is not called ([`super::matchconditions`]). Beside the
//! main pair, more webhooks ([`AdmissionConfig::more`]) with their own failure policy and
//! conditions: mutating ones run after the main one, in order, each on the previous one's
//! output, as kube-apiserver runs the webhooks of one configuration.

use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::{json, Value};

use super::auth::UserInfo;
use super::matchconditions::{self, MatchCondition, MatchResult};
use super::resources::ResourceDef;
use super::status::{go_quote, ApiError};
use super::tls;

/// Which webhooks to call, where, and how much to trust them.
#[derive(Clone, Debug)]
pub struct AdmissionConfig {
    /// `https://127.0.0.1:PORT/mutate` (or `None` for no mutating webhook).
    pub mutate_url: Option<String>,
    pub validate_url: Option<String>,
    /// PEM bundle the webhook's serving certificate must chain to (`clientConfig.caBundle`).
    pub ca_pem: String,
    pub mutating_name: String,
    pub validating_name: String,
    /// `timeoutSeconds` (default 10 s, like the API's default).
    pub timeout: Duration,
    /// `failurePolicy: Ignore` when true; `Fail` (the default) otherwise.
    pub ignore_failures: bool,
    /// Resources intercepted (plural names); default `["clusterpromotions"]`.
    pub resources: Vec<String>,
    /// Also intercept writes to `<resource>/status` (webhook rules must list it explicitly).
    pub include_status: bool,
    /// `matchConditions` of both webhooks (none: always call).
    pub match_conditions: Vec<MatchCondition>,
    /// Further webhooks of the same configurations, on the same resources and timeout.
    pub more: Vec<Hook>,
}

/// One more webhook ([`AdmissionConfig::more`]).
#[derive(Clone, Debug)]
pub struct Hook {
    pub mutating: bool,
    pub name: String,
    pub url: String,
    pub ignore_failures: bool,
    pub match_conditions: Vec<MatchCondition>,
}

/// The webhook a call goes to: where, its name, its failure policy and conditions.
struct Target<'a> {
    url: &'a str,
    name: &'a str,
    ignore_failures: bool,
    match_conditions: &'a [MatchCondition],
}

impl AdmissionConfig {
    pub fn new(ca_pem: &str) -> Self {
        AdmissionConfig {
            mutate_url: None,
            validate_url: None,
            ca_pem: ca_pem.to_string(),
            mutating_name: "mutate.clusterpromotions.config.projectsveltos.io".into(),
            validating_name: "validate.clusterpromotions.config.projectsveltos.io".into(),
            timeout: Duration::from_secs(10),
            ignore_failures: false,
            resources: vec!["clusterpromotions".into()],
            include_status: false,
            match_conditions: Vec::new(),
            more: Vec::new(),
        }
    }

    pub fn intercepts(&self, def: &ResourceDef, subresource: &str) -> bool {
        self.resources.iter().any(|r| r == def.plural)
            && (subresource.is_empty() || (subresource == "status" && self.include_status))
    }
}

pub struct AdmissionClient {
    config: AdmissionConfig,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
}

/// What the request being admitted is.
pub struct AdmissionRequest<'a> {
    pub def: &'a ResourceDef,
    pub subresource: &'a str,
    pub operation: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub user: &'a UserInfo,
    pub object: &'a Value,
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
    pub options: Value,
}

impl AdmissionClient {
    pub fn new(config: AdmissionConfig) -> Result<Self, tls::TlsError> {
        let tls = tls::client_config(&config.ca_pem)?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .build();
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
        Ok(AdmissionClient { config, client })
    }

    pub fn config(&self) -> &AdmissionConfig {
        &self.config
    }

    fn targets(&self, mutating: bool) -> Vec<Target<'_>> {
        let main = if mutating {
            self.config
                .mutate_url
                .as_deref()
                .map(|url| (url, self.config.mutating_name.as_str()))
        } else {
            self.config
                .validate_url
                .as_deref()
                .map(|url| (url, self.config.validating_name.as_str()))
        };
        main.map(|(url, name)| Target {
            url,
            name,
            ignore_failures: self.config.ignore_failures,
            match_conditions: &self.config.match_conditions,
        })
        .into_iter()
        .chain(
            self.config
                .more
                .iter()
                .filter(|h| h.mutating == mutating)
                .map(|h| Target {
                    url: &h.url,
                    name: &h.name,
                    ignore_failures: h.ignore_failures,
                    match_conditions: &h.match_conditions,
                }),
        )
        .collect()
    }

    /// Run the mutating webhooks; returns the (possibly patched) object.
    pub async fn mutate(
        &self,
        req: &AdmissionRequest<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let mut object = req.object.clone();
        for target in self.targets(true) {
            let req = AdmissionRequest {
                object: &object,
                options: req.options.clone(),
                ..*req
            };
            object = self.mutate_with(&target, &req, warnings).await?;
        }
        Ok(object)
    }

    async fn mutate_with(
        &self,
        target: &Target<'_>,
        req: &AdmissionRequest<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let name = target.name;
        if !Self::matches(target, req)? {
            return Ok(req.object.clone());
        }
        let response = match self.call(target.url, name, req, true).await {
            Ok(r) => r,
            Err(_) if target.ignore_failures => return Ok(req.object.clone()),
            Err(e) => return Err(e),
        };
        collect_warnings(&response, warnings);
        if !allowed(&response) {
            return Err(denied(name, &response).with_warnings(warnings.clone()));
        }
        let Some(patch_bytes) = patch_bytes(&response).map_err(|e| call_failed(name, &e))? else {
            return Ok(req.object.clone());
        };
        let patch: json_patch::Patch = serde_json::from_slice(&patch_bytes)
            .map_err(|e| call_failed(name, &format!("received invalid webhook response: {e}")))?;
        let mut patched = req.object.clone();
        json_patch::patch(&mut patched, &patch).map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(patched)
    }

    pub async fn validate(
        &self,
        req: &AdmissionRequest<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        for target in self.targets(false) {
            let name = target.name;
            if !Self::matches(&target, req)? {
                continue;
            }
            let response = match self.call(target.url, name, req, false).await {
                Ok(r) => r,
                Err(_) if target.ignore_failures => continue,
                Err(e) => return Err(e),
            };
            collect_warnings(&response, warnings);
            if !allowed(&response) {
                return Err(denied(name, &response).with_warnings(warnings.clone()));
            }
        }
        Ok(())
    }

    /// Whether the `matchConditions` let this request through to the webhook; an evaluation
    /// error under `failurePolicy: Fail` refuses the request (`NewForbidden`, as
    /// `ShouldCallHook` does).
    fn matches(target: &Target<'_>, req: &AdmissionRequest<'_>) -> Result<bool, ApiError> {
        if target.match_conditions.is_empty() {
            return Ok(true);
        }
        let review = review(req, "");
        match matchconditions::evaluate(
            target.match_conditions,
            &review["request"],
            target.ignore_failures,
        ) {
            MatchResult::Matches => Ok(true),
            MatchResult::Skip => Ok(false),
            MatchResult::Error(e) => Err(ApiError::forbidden(
                req.def.group,
                req.def.plural,
                req.name,
                &e,
            )),
        }
    }

    async fn call(
        &self,
        url: &str,
        name: &str,
        req: &AdmissionRequest<'_>,
        mutating: bool,
    ) -> Result<Value, ApiError> {
        let uid = uuid::Uuid::new_v4().to_string();
        let review = review(req, &uid);
        let timeout = self.config.timeout;
        let sep = if url.contains('?') { '&' } else { '?' };
        let full_url = format!("{url}{sep}timeout={}s", timeout.as_secs().max(1));
        let body = serde_json::to_vec(&review).map_err(ApiError::internal)?;
        let request = hyper::Request::post(&full_url)
            .header("content-type", "application/json")
            .header("accept", "application/json, */*")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| call_failed(name, &format!("failed to call webhook: {e}")))?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                format!(
                    "failed to call webhook: Post {}: {}",
                    go_quote(&full_url),
                    transport_error(&e, &full_url)
                )
            })?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("failed to call webhook: {e}"))?
                .to_bytes();
            if !status.is_success() {
                return Err(format!(
                    "failed to call webhook: the server responded with the status code {} but did not return more information",
                    status.as_u16()
                ));
            }
            serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| format!("received invalid webhook response: {e}"))
        };
        let reply = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| {
                call_failed(
                    name,
                    &format!(
                        "failed to call webhook: Post {}: context deadline exceeded",
                        go_quote(&full_url)
                    ),
                )
            })?
            .map_err(|e| call_failed(name, &e))?;
        verify(&reply, &uid, mutating).map_err(|e| call_failed(name, &e))?;
        Ok(reply.get("response").cloned().unwrap_or(Value::Null))
    }
}

/// A failed exchange in the words of Go's `net/http` client, which is what the API server's
/// message carries: a refused connection is `dial tcp ADDR: connect: connection refused`.
/// Anything else keeps the Rust client's error chain.
fn transport_error(e: &(dyn std::error::Error + 'static), url: &str) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return format!("dial tcp {}: connect: connection refused", host_port(url));
            }
        }
        source = s.source();
    }
    error_chain(e)
}

/// `host:port` of an `https://` URL (port 443 when none is given).
fn host_port(url: &str) -> String {
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split(['/', '?'])
        .next()
        .unwrap_or_default();
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        && !authority.ends_with(']');
    if has_port {
        authority.to_string()
    } else {
        format!("{authority}:443")
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// `VerifyAdmissionResponse` for v1.
fn verify(reply: &Value, uid: &str, mutating: bool) -> Result<(), String> {
    let api_version = reply
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = reply
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(response) = reply.get("response") else {
        return Err("received invalid webhook response: webhook response was absent".into());
    };
    let got = response
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if got != uid {
        return Err(format!(
            "received invalid webhook response: expected response.uid={}, got {}",
            go_quote(uid),
            go_quote(got)
        ));
    }
    let has_patch = response.get("patch").is_some_and(|p| !p.is_null());
    let patch_type = response.get("patchType").and_then(Value::as_str);
    if has_patch || patch_type.is_some() {
        if !mutating {
            return Err(
                "received invalid webhook response: validating webhook may not return response.patch"
                    .into(),
            );
        }
        match patch_type {
            None => {
                return Err("received invalid webhook response: webhook returned response.patch but not response.patchType".into())
            }
            Some("JSONPatch") => {}
            Some(other) => {
                return Err(format!(
                    "received invalid webhook response: webhook returned invalid response.patchType of {}",
                    go_quote(other)
                ))
            }
        }
        if !has_patch {
            return Err("received invalid webhook response: webhook returned response.patchType but not response.patch".into());
        }
    }
    Ok(())
}

/// `[]byte` decodes from a base64 string (the spec) or, as Go's decoder also accepts, from an
/// array of numbers (what kube-rs emits).
fn patch_bytes(response: &Value) -> Result<Option<Vec<u8>>, String> {
    match response.get("patch") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map(Some)
            .map_err(|e| format!("received invalid webhook response: {e}")),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_u64()
                    .and_then(|n| u8::try_from(n).ok())
                    .ok_or_else(|| {
                        "received invalid webhook response: patch is not bytes".to_string()
                    })
            })
            .collect::<Result<Vec<u8>, String>>()
            .map(Some),
        Some(_) => Err("received invalid webhook response: patch is not bytes".into()),
    }
}

fn allowed(response: &Value) -> bool {
    response
        .get("allowed")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn collect_warnings(response: &Value, warnings: &mut Vec<String>) {
    if let Some(list) = response.get("warnings").and_then(Value::as_array) {
        warnings.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
    }
}

fn call_failed(name: &str, reason: &str) -> ApiError {
    ApiError::internal(format!(
        "failed calling webhook {}: {reason}",
        go_quote(name)
    ))
}

/// `webhookerrors.ToStatusErr`: the webhook's Status, code forced to ≥ 400, message prefixed.
fn denied(name: &str, response: &Value) -> ApiError {
    let mut status = response
        .get("status")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let denied_by = format!("admission webhook {} denied the request", go_quote(name));
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| *c >= 400 && *c < 600)
        .unwrap_or(400) as u16;
    let message = status
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reason = status
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let full = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let mut out = serde_json::Map::new();
    out.insert("kind".into(), json!("Status"));
    out.insert("apiVersion".into(), json!("v1"));
    out.insert(
        "metadata".into(),
        status.get("metadata").cloned().unwrap_or(json!({})),
    );
    let st = status
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert(
        "status".into(),
        json!(if st.is_empty() || st == "Success" {
            "Failure"
        } else {
            st
        }),
    );
    out.insert("message".into(), json!(full));
    if !reason.is_empty() {
        out.insert("reason".into(), json!(reason));
    }
    if let Some(details) = status.get_mut("details").map(Value::take) {
        out.insert("details".into(), details);
    }
    out.insert("code".into(), json!(code));
    ApiError::from_status(code, Value::Object(out))
}

fn review(req: &AdmissionRequest<'_>, uid: &str) -> Value {
    let gvk = json!({"group": req.def.group, "version": req.def.version, "kind": req.def.kind});
    let gvr =
        json!({"group": req.def.group, "version": req.def.version, "resource": req.def.plural});
    let mut request = json!({
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": req.name,
        "operation": req.operation,
        "userInfo": req.user.to_json(),
        "object": req.object,
        "oldObject": req.old_object.cloned().unwrap_or(Value::Null),
        "dryRun": req.dry_run,
        "options": req.options,
    });
    if !req.subresource.is_empty() {
        request["subResource"] = json!(req.subresource);
        request["requestSubResource"] = json!(req.subresource);
    }
    if !req.namespace.is_empty() {
        request["namespace"] = json!(req.namespace);
    }
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_names_the_address_it_dialled() {
        assert_eq!(
            host_port("https://127.0.0.1:8443/mutate?timeout=5s"),
            "127.0.0.1:8443"
        );
        assert_eq!(
            host_port("https://webhook.example/validate"),
            "webhook.example:443"
        );
        assert_eq!(host_port("https://[::1]:9443/x"), "[::1]:9443");
        assert_eq!(host_port("https://[::1]/x"), "[::1]:443");
    }

    #[test]
    fn a_refused_connection_reads_as_go_reports_it() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(
            transport_error(&refused, "https://127.0.0.1:1/mutate?timeout=5s"),
            "dial tcp 127.0.0.1:1: connect: connection refused"
        );
        let other = std::io::Error::other("tls handshake eof");
        assert_eq!(
            transport_error(&other, "https://127.0.0.1:1/"),
            "tls handshake eof"
        );
    }
}
