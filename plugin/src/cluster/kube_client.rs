//! The API calls the plugin makes, as raw JSON (so that what is shown, diffed and patched is
//! exactly what the server stored), with every failure mapped to one clear [`Error`].

use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::core::Request as KubeRequest;
use serde_json::Value;

use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL};
use promotion_shared::patch::FIELD_MANAGER;

use crate::cluster::connection::ConnectionFlags;
use crate::cluster::request_log::RequestLog;
use crate::cluster::resources::{
    CORE_EVENT, CORE_EVENTS, EVENT, EVENTS, PROFILE, PROFILES, PROMOTION, PROMOTIONS, SUMMARIES,
    SUMMARY,
};
use crate::error::{Error, Request, Result};

#[derive(Clone)]
pub struct Kube {
    client: kube::Client,
    server: String,
    /// The proxy the connection goes through, named when it cannot be reached.
    proxy: Option<String>,
    /// `-v`, for the clients of managed clusters.
    verbosity: u8,
}

impl Kube {
    pub async fn connect(flags: &ConnectionFlags) -> Result<Kube> {
        let conn = flags.resolve().await?;
        let server = conn.server.clone();
        let proxy = conn.config.proxy_url.as_ref().map(|p| p.to_string());
        let builder = kube::client::ClientBuilder::try_from(conn.config).map_err(|e| match e {
            kube::Error::Auth(a) => credentials_error(&server, &a),
            other => Error::Kubeconfig(format!(
                "cannot build a client for {server}: {}",
                chain(&other)
            )),
        })?;
        let client = match RequestLog::new(flags.v, &server) {
            Some(log) => builder.with_layer(&log).build(),
            None => builder.build(),
        };
        Ok(Kube {
            client,
            server,
            proxy,
            verbosity: flags.v,
        })
    }

    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The `-v` level the management cluster's requests are logged at.
    pub fn verbosity(&self) -> u8 {
        self.verbosity
    }

    /// Why a connection failed, naming the proxy it went through.
    fn unreachable(&self, reason: String) -> Error {
        Error::Unreachable {
            server: self.server.clone(),
            reason: match &self.proxy {
                Some(p) => format!("through the proxy {}: {reason}", p.trim_end_matches('/')),
                None => reason,
            },
        }
    }

    /// Map a client error for `req` to the plugin's error.
    pub fn error(&self, err: kube::Error, req: &Request) -> Error {
        match err {
            kube::Error::Api(status) if admission_denial(&status.message).is_some() => {
                let (webhook, message) = admission_denial(&status.message).unwrap_or_default();
                Error::AdmissionDenied {
                    request: req.clone(),
                    webhook,
                    message,
                }
            }
            kube::Error::Api(status) => match status.code {
                401 => Error::Unauthorized {
                    server: self.server.clone(),
                },
                403 => Error::Forbidden {
                    request: req.clone(),
                    message: status.message.clone(),
                },
                404 if req.resource == PROMOTIONS && req.name.is_none() => Error::CrdMissing {
                    server: self.server.clone(),
                },
                404 if req.resource == PROMOTIONS => match req.name.clone() {
                    Some(name) => Error::NotFound(name),
                    None => Error::CrdMissing {
                        server: self.server.clone(),
                    },
                },
                // A list of a resource the server does not serve: its CRD is not installed.
                404 if req.name.is_none() => Error::NotServed {
                    resource: req.resource,
                },
                code => Error::Api {
                    request: req.clone(),
                    message: if status.message.is_empty() {
                        format!("HTTP {code} {}", status.reason)
                    } else {
                        format!("{} ({code})", status.message)
                    },
                },
            },
            kube::Error::Auth(e) => credentials_error(&self.server, &e),
            kube::Error::HyperError(e) => self.unreachable(chain(&e)),
            kube::Error::Service(e) => self.unreachable(chain(e.as_ref())),
            other => Error::Api {
                request: req.clone(),
                message: chain(&other),
            },
        }
    }

    async fn send(&self, req: http::Request<Vec<u8>>, what: &Request) -> Result<Value> {
        self.client
            .request::<Value>(req)
            .await
            .map_err(|e| self.error(e, what))
    }

    fn build(
        &self,
        req: std::result::Result<http::Request<Vec<u8>>, kube::core::request::Error>,
        what: &Request,
    ) -> Result<http::Request<Vec<u8>>> {
        req.map_err(|e| Error::Api {
            request: what.clone(),
            message: e.to_string(),
        })
    }

    /// A 404 on a named ClusterPromotion is either the object or the whole CRD missing; the
    /// group's discovery document tells them apart.
    async fn classify_not_found(&self, name: &str) -> Error {
        let path = PROMOTION.prefix;
        let req = http::Request::get(path).body(Vec::new());
        let Ok(req) = req else {
            return Error::NotFound(name.to_string());
        };
        match self.client.request::<Value>(req).await {
            Ok(list) => {
                let served = list
                    .get("resources")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|r| r["name"] == PROMOTION.plural));
                if served {
                    Error::NotFound(name.to_string())
                } else {
                    Error::CrdMissing {
                        server: self.server.clone(),
                    }
                }
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Error::CrdMissing {
                server: self.server.clone(),
            },
            Err(_) => Error::NotFound(name.to_string()),
        }
    }

    pub async fn get_promotion(&self, name: &str) -> Result<Value> {
        let what = Request::named("get", PROMOTIONS, name);
        let req = self.build(
            KubeRequest::new(PROMOTION.path).get(name, &Default::default()),
            &what,
        )?;
        match self.send(req, &what).await {
            Err(Error::NotFound(n)) => Err(self.classify_not_found(&n).await),
            other => other,
        }
    }

    pub async fn list_promotions(&self, selector: Option<&str>) -> Result<Vec<Value>> {
        let what = Request::new("list", PROMOTIONS);
        let mut lp = ListParams::default();
        if let Some(s) = selector {
            lp = lp.labels(s);
        }
        let req = self.build(KubeRequest::new(PROMOTION.path).list(&lp), &what)?;
        Ok(items(self.send(req, &what).await?))
    }

    /// The ClusterProfiles Sveltos generated for any promotion: a profile whose generated name
    /// collides (`web` + `eu-prod`, `web-eu` + `prod`) shows up under the promotion that wrote
    /// it last, and a caller can tell it from its own.
    pub async fn list_promotion_profiles(&self) -> Result<Vec<Value>> {
        let what = Request::new("list", PROFILES);
        let lp = ListParams::default().labels(PROMOTION_NAME_LABEL);
        let req = self.build(KubeRequest::new(PROFILE.path).list(&lp), &what)?;
        Ok(items(self.send(req, &what).await?))
    }

    /// ClusterSummaries (all namespaces) of the given ClusterProfiles, in one request.
    pub async fn list_summaries(&self, profiles: &[String]) -> Result<Vec<Value>> {
        if profiles.is_empty() {
            return Ok(Vec::new());
        }
        let what = Request::new("list", SUMMARIES);
        let lp = ListParams::default().labels(&summaries_selector(profiles));
        let req = self.build(KubeRequest::new(SUMMARY.path).list(&lp), &what)?;
        let body = self
            .client
            .request_text(req)
            .await
            .map_err(|e| self.error(e, &what))?;
        crate::cluster::summary_list::decode(body.as_bytes()).map_err(|e| Error::Api {
            request: what,
            message: format!("the answer is not a ClusterSummary list: {e}"),
        })
    }

    /// Events about the promotion, oldest first, as `kubectl describe` reads them: from
    /// `events.k8s.io/v1`, and from core `v1` when that group is not readable (the built-in
    /// `view`, `edit` and `admin` roles grant core Events only) or not served. client-go records
    /// the Events of cluster-scoped objects in `default`, so all namespaces are listed.
    pub async fn list_events(&self, name: &str, uid: Option<&str>) -> Result<Vec<Value>> {
        let what = Request::new("list", EVENTS);
        let lp = ListParams::default().fields(&format!(
            "regarding.kind={},regarding.name={name}",
            PROMOTION.kind
        ));
        let req = self.build(KubeRequest::new(EVENT.path).list(&lp), &what)?;
        let listed = match self.client.request::<Value>(req).await {
            Ok(list) => list,
            Err(kube::Error::Api(s)) if matches!(s.code, 403 | 404) => {
                let what = Request::new("list", CORE_EVENTS);
                let lp = ListParams::default().fields(&format!(
                    "involvedObject.kind={},involvedObject.name={name}",
                    PROMOTION.kind
                ));
                let req = self.build(KubeRequest::new(CORE_EVENT.path).list(&lp), &what)?;
                self.send(req, &what).await?
            }
            Err(e) => return Err(self.error(e, &what)),
        };
        let mut events: Vec<Value> = items(listed)
            .into_iter()
            .filter(|e| crate::view::events::regards(e, name, uid))
            .collect();
        events.sort_by_key(|e| crate::view::events::event_time(e).unwrap_or_default());
        Ok(events)
    }

    /// A JSON Patch on a ClusterPromotion; `dry_run` asks the server to validate (admission
    /// included) without storing. The raw client error is returned so that the caller can tell
    /// a conflict (409) or a failed `test` (422) from other failures; map it with [`Kube::error`].
    pub async fn json_patch(
        &self,
        name: &str,
        patch: &json_patch::Patch,
        dry_run: bool,
    ) -> std::result::Result<Value, kube::Error> {
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            dry_run,
            ..PatchParams::default()
        };
        let req = KubeRequest::new(PROMOTION.path)
            .patch(name, &pp, &Patch::<()>::Json(patch.clone()))
            .map_err(kube::Error::BuildRequest)?;
        self.client.request::<Value>(req).await
    }

    /// A JSON merge patch, server-side dry run only (for `diff -f`).
    pub async fn merge_patch_dry_run(&self, name: &str, body: &Value) -> Result<Value> {
        let what = Request::named("patch", PROMOTIONS, name);
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            dry_run: true,
            ..PatchParams::default()
        };
        let req = self.build(
            KubeRequest::new(PROMOTION.path).patch(name, &pp, &Patch::Merge(body)),
            &what,
        )?;
        self.send(req, &what).await
    }

    /// A create, server-side dry run only (for `diff -f` of an object that does not exist).
    pub async fn create_dry_run(&self, body: &Value) -> Result<Value> {
        let name = body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let what = Request::named("create", PROMOTIONS, name);
        let pp = PostParams {
            dry_run: true,
            field_manager: Some(FIELD_MANAGER.into()),
        };
        let data = serde_json::to_vec(body).map_err(|e| Error::Io(e.to_string()))?;
        let req = self.build(KubeRequest::new(PROMOTION.path).create(&pp, data), &what)?;
        self.send(req, &what).await
    }
}

/// A failed credential source (exec plugin, token file), without the Debug dump kube includes.
fn credentials_error(server: &str, err: &kube::client::AuthError) -> Error {
    let reason = match err {
        kube::client::AuthError::AuthExecRun { out, .. } => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            match stderr.lines().rev().find(|l| !l.trim().is_empty()) {
                Some(l) => format!(
                    "the exec credential plugin failed ({}): {}",
                    out.status,
                    l.trim()
                ),
                None => format!("the exec credential plugin failed ({})", out.status),
            }
        }
        other => chain(other),
    };
    Error::Kubeconfig(format!("cannot get credentials for {server}: {reason}"))
}

/// `projectsveltos.io/cluster-profile-name in (a,b,…)`.
pub fn summaries_selector(profiles: &[String]) -> String {
    format!("{CLUSTER_PROFILE_NAME_LABEL} in ({})", profiles.join(","))
}

fn items(list: Value) -> Vec<Value> {
    match list {
        Value::Object(mut m) => match m.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// An error's message followed by its causes, without repeats.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let msg = s.to_string();
        if !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        source = s.source();
    }
    // The innermost causes say what actually happened ("connection refused"); outer layers
    // ("client error (Connect)") add little.
    let useful: Vec<&String> = parts
        .iter()
        .filter(|p| !p.starts_with("client error") && !p.starts_with("error trying to connect"))
        .collect();
    if useful.is_empty() {
        parts.join(": ")
    } else {
        useful
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(": ")
    }
}

/// The API server reports a webhook denial as `admission webhook "<name>" denied the request:
/// <message>`; split it so the user sees which webhook refused and why.
fn admission_denial(message: &str) -> Option<(String, String)> {
    let rest = message.split_once("admission webhook ")?.1;
    let (name, reason) = rest.split_once(" denied the request")?;
    let reason = reason.trim_start_matches(':').trim();
    Some((name.to_string(), reason.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_lists_every_profile() {
        assert_eq!(
            summaries_selector(&["p-dev".into(), "p-prod".into()]),
            "projectsveltos.io/cluster-profile-name in (p-dev,p-prod)"
        );
    }

    #[test]
    fn webhook_denials_name_the_webhook_and_the_reason() {
        let msg = "admission webhook \"validate.kubectl-promotion.dev\" denied the request: user \"dave\" may not approve";
        assert_eq!(
            admission_denial(msg),
            Some((
                "\"validate.kubectl-promotion.dev\"".to_string(),
                "user \"dave\" may not approve".to_string()
            ))
        );
        assert_eq!(
            admission_denial("clusterpromotions is forbidden: User \"x\" cannot patch"),
            None
        );
    }
}
