//! The API calls the plugin makes, as raw JSON (so that what is shown, diffed and patched is
//! exactly what the server stored), with every failure mapped to one clear [`Error`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::core::Request as KubeRequest;
use serde_json::Value;

pub use kube_connect::error_chain as chain;
use promotion_shared::admission::{UserInfo, GOVERNANCE_CONFIGMAP, GOVERNANCE_NAMESPACE};
use promotion_shared::api_error::{classify, Failure};
use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL};
use promotion_shared::patch::{Write, FIELD_MANAGER};

use crate::cluster::connection::ConnectionFlags;
use crate::cluster::request_log::RequestLog;
use crate::cluster::resources::{
    CONFIG_MAP, CONFIG_MAPS, CORE_EVENT, CORE_EVENTS, EVENT, EVENTS, LEASE, LEASES, PROFILE,
    PROFILES, PROMOTION, PROMOTIONS, SELF_SUBJECT_REVIEW, SELF_SUBJECT_REVIEWS, SUMMARIES, SUMMARY,
};
use crate::error::{Error, Request, Result};
use crate::view::events;

#[derive(Clone)]
pub struct Kube {
    client: kube::Client,
    server: String,
    /// The client's connect and read timeouts, to word a request that ran out of time.
    timeouts: Timeouts,
    /// The requests sent and not yet answered, for a command whose `--timeout` ends it while
    /// one is outstanding.
    in_flight: InFlight,
    /// The proxy the connection goes through, named when it cannot be reached.
    proxy: Option<String>,
    /// `-v`, for the clients of managed clusters.
    verbosity: u8,
}

/// The client's transport timeouts (kube's defaults, or `--request-timeout`).
#[derive(Clone, Copy, Debug, Default)]
struct Timeouts {
    connect: Option<Duration>,
    read: Option<Duration>,
}

/// A request sent and not (yet) answered: what it was, and for a write, how to find out whether
/// the server stored it.
#[derive(Clone, Debug)]
pub struct Pending {
    id: u64,
    pub request: Request,
    /// The API server it went to.
    pub server: String,
    /// For a write that is not a dry run: a command that shows whether it was stored.
    pub check: Option<String>,
}

/// The requests a command has outstanding. Shared between the [`Kube`] clients of a command and
/// whoever bounds the command in time: when a deadline drops the command's future, the entries
/// of the requests it was waiting on stay, and say what got no answer.
#[derive(Clone, Debug, Default)]
pub struct InFlight(Arc<Mutex<(u64, Vec<Pending>)>>);

impl InFlight {
    fn start(&self, server: &str, request: &Request, check: Option<String>) -> u64 {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (next, pending) = &mut *guard;
        *next += 1;
        pending.push(Pending {
            id: *next,
            request: request.clone(),
            server: server.to_string(),
            check,
        });
        *next
    }

    fn finish(&self, id: u64) {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        guard.1.retain(|p| p.id != id);
    }

    /// The outstanding requests in words, for a deadline's message: what got no answer and, for
    /// a write, that its outcome is unknown and how to check it; `None` when none is outstanding.
    pub fn describe(&self) -> Option<String> {
        let pending = self.pending();
        let write = pending.iter().find(|p| p.check.is_some());
        if let Some(w) = write {
            return Some(format!(
                "the request to {} was sent to {} and not answered, so whether it was stored is \
                 unknown; check with {}",
                w.request,
                w.server,
                w.check.as_deref().unwrap_or_default()
            ));
        }
        let first = pending.first()?;
        let others = match pending.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        Some(format!(
            "no answer from the server at {} to {}{others}",
            first.server, first.request
        ))
    }

    /// The requests still waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<Pending> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }
}

impl Kube {
    pub async fn connect(flags: &ConnectionFlags) -> Result<Kube> {
        let conn = flags.resolve().await?;
        let server = conn.server.clone();
        let timeouts = Timeouts {
            connect: conn.config.connect_timeout,
            read: conn.config.read_timeout,
        };
        let proxy = conn.config.proxy_url.as_ref().map(|p| p.to_string());
        let unbuildable = |e: kube::Error| match e {
            kube::Error::Auth(a) => credentials_error(&server, &a),
            other => Error::Kubeconfig(format!(
                "cannot build a client for {server}: {}",
                chain(&other)
            )),
        };
        let log = RequestLog::new(flags.v, &server, &conn.config).map_err(unbuildable)?;
        let builder = kube::client::ClientBuilder::try_from(conn.config).map_err(unbuildable)?;
        let client = match log {
            Some(log) => builder.with_layer(&log).build(),
            None => builder.build(),
        };
        Ok(Kube {
            client,
            server,
            timeouts,
            in_flight: InFlight::default(),
            proxy,
            verbosity: flags.v,
        })
    }

    /// This client, recording its outstanding requests in `in_flight`.
    pub fn tracked(mut self, in_flight: InFlight) -> Kube {
        self.in_flight = in_flight;
        self
    }

    /// The API server's URL, as messages show it.
    pub fn server(&self) -> &str {
        &self.server
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

    /// Map a client error for `req` to the plugin's error: the kind of failure from
    /// [`classify`] (the Status' reason, code and causes), the words from the server's message.
    pub fn error(&self, err: kube::Error, req: &Request) -> Error {
        match err {
            kube::Error::Api(status) => {
                let failure = classify(&status);
                let denied = match failure {
                    Failure::Denied(_) | Failure::Forbidden | Failure::Invalid => {
                        admission_denial(&status.message)
                    }
                    _ => None,
                };
                if let Some((webhook, message)) = denied {
                    return Error::AdmissionDenied {
                        request: req.clone(),
                        webhook,
                        message,
                    };
                }
                match failure {
                    Failure::Unauthorized => Error::Unauthorized {
                        server: self.server.clone(),
                    },
                    Failure::Forbidden => Error::Forbidden {
                        request: req.clone(),
                        message: status.message.clone(),
                    },
                    Failure::NotFound if req.resource == PROMOTIONS => match req.name.clone() {
                        Some(name) => Error::NotFound(name),
                        None => Error::CrdMissing {
                            server: self.server.clone(),
                        },
                    },
                    // A list of a resource the server does not serve: its CRD is not installed.
                    Failure::NotFound if req.name.is_none() => Error::NotServed {
                        resource: req.resource,
                    },
                    _ => Error::Api {
                        request: req.clone(),
                        message: said(&status),
                    },
                }
            }
            kube::Error::Auth(e) => credentials_error(&self.server, &e),
            kube::Error::HyperError(e) => self.transport_error(&e, req, None),
            kube::Error::Service(e) => self.transport_error(e.as_ref(), req, None),
            other => Error::Api {
                request: req.clone(),
                message: chain(&other),
            },
        }
    }

    /// Map a client error for the write `req` (not a dry run): as [`Kube::error`], except that a
    /// write the server received but did not answer is one whose outcome is unknown, and the
    /// message says how to find out (`check`, see [`write_check`]).
    pub fn write_error(&self, err: kube::Error, req: &Request, check: String) -> Error {
        match err {
            kube::Error::HyperError(e) => self.transport_error(&e, req, Some(check)),
            kube::Error::Service(e) => self.transport_error(e.as_ref(), req, Some(check)),
            other => self.error(other, req),
        }
    }

    /// A request that failed below HTTP. Before the request went out (no connection) the server
    /// is unreachable; after, the server got it and did not answer: for a write (`check` given)
    /// whether it was stored is unknown, which is not "unable to connect".
    fn transport_error(
        &self,
        err: &(dyn std::error::Error + 'static),
        req: &Request,
        check: Option<String>,
    ) -> Error {
        let connecting = before_sending(err);
        if connecting {
            let reason = if timed_out(err) {
                format!("no connection within {}", self.limit(self.timeouts.connect))
            } else {
                chain(err)
            };
            return self.unreachable(reason);
        }
        let sent = if timed_out(err) {
            format!(
                "was sent to {} and not answered within {}",
                self.server,
                self.limit(self.timeouts.read)
            )
        } else {
            format!(
                "was sent to {} and not answered ({})",
                self.server,
                chain(err)
            )
        };
        match check {
            Some(check) => Error::WriteUnknown {
                request: req.clone(),
                sent,
                check,
            },
            None => Error::NoAnswer {
                request: req.clone(),
                sent,
            },
        }
    }

    /// A transport timeout in words: `2s (--request-timeout)`, or the client's default.
    fn limit(&self, timeout: Option<Duration>) -> String {
        match timeout {
            Some(t) if Some(t) == self.timeouts.read => {
                format!("{} (--request-timeout)", crate::duration::format(t))
            }
            Some(t) => format!(
                "{} (the client's connect timeout; --request-timeout sets it)",
                crate::duration::format(t)
            ),
            None => "the client's timeout".to_string(),
        }
    }

    async fn send(&self, req: http::Request<Vec<u8>>, what: &Request) -> Result<Value> {
        let id = self.in_flight.start(&self.server, what, None);
        let answer = self.client.request::<Value>(req).await;
        self.in_flight.finish(id);
        answer.map_err(|e| self.error(e, what))
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
            Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => Error::CrdMissing {
                server: self.server.clone(),
            },
            Err(_) => Error::NotFound(name.to_string()),
        }
    }

    pub async fn get_promotion(&self, name: &str) -> Result<Value> {
        match self.find_promotion(name).await? {
            Some(object) => Ok(object),
            None => Err(self.classify_not_found(name).await),
        }
    }

    /// The ClusterPromotion `name`, or `None` when the server answers that it does not exist
    /// (for a promotion named as an owner, which may have been deleted).
    pub async fn find_promotion(&self, name: &str) -> Result<Option<Value>> {
        let what = Request::named("get", PROMOTIONS, name);
        let req = self.build(
            KubeRequest::new(PROMOTION.path).get(name, &Default::default()),
            &what,
        )?;
        match self.send(req, &what).await {
            Ok(object) => Ok(Some(object)),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the caller may `patch` the ClusterPromotion `name`, as `kubectl auth can-i`
    /// asks it: a SelfSubjectAccessReview, answered by the server's own authorizer (RBAC and
    /// any other), so that impersonation (`--as`) is asked about too. `Err` when the review
    /// itself fails.
    pub async fn can_patch_promotion(&self, name: &str) -> Result<bool> {
        let what = Request::new("create", "selfsubjectaccessreviews.authorization.k8s.io");
        let review = serde_json::json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                "verb": "patch",
                "group": PROMOTION.group,
                "version": PROMOTION.version,
                "resource": PROMOTION.plural,
                "name": name,
            }},
        });
        let answer = self
            .review(
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                &review,
                &what,
            )
            .await?;
        Ok(answer.pointer("/status/allowed").and_then(Value::as_bool) == Some(true))
    }

    /// POST a review (an access review, a SelfSubjectReview) to `path`: the server answers it
    /// for the caller and stores nothing.
    async fn review(&self, path: &str, review: &Value, what: &Request) -> Result<Value> {
        let body = serde_json::to_vec(review).map_err(|e| Error::Io(e.to_string()))?;
        let req = self.build(
            KubeRequest::new(path).create(&PostParams::default(), body),
            what,
        )?;
        self.send(req, what).await
    }

    /// Who the server says the caller is, as `kubectl auth whoami` asks it: a SelfSubjectReview
    /// (GA in Kubernetes 1.28), answered after authentication and impersonation (`--as`).
    pub async fn who_am_i(&self) -> Result<UserInfo> {
        let what = Request::new("create", SELF_SUBJECT_REVIEWS);
        let review = serde_json::json!({
            "apiVersion": SELF_SUBJECT_REVIEW.api_version,
            "kind": SELF_SUBJECT_REVIEW.kind,
        });
        let answer = self
            .review(SELF_SUBJECT_REVIEW.path, &review, &what)
            .await?;
        serde_json::from_value(
            answer
                .pointer("/status/userInfo")
                .cloned()
                .unwrap_or_default(),
        )
        .map_err(|e| Error::Api {
            request: what,
            message: format!("the answer is not a SelfSubjectReview: {e}"),
        })
    }

    /// The ConfigMap data of the approver rules the install publishes
    /// ([`GOVERNANCE_CONFIGMAP`] in [`GOVERNANCE_NAMESPACE`]); `None` when there is none.
    pub async fn published_governance(&self) -> Result<Option<Value>> {
        let what = Request::named("get", CONFIG_MAPS, GOVERNANCE_CONFIGMAP);
        let path = CONFIG_MAP.namespaced_object_path(GOVERNANCE_NAMESPACE, GOVERNANCE_CONFIGMAP);
        let config_map = self.get_if_exists(path, &what).await?;
        Ok(config_map.map(|c| c["data"].clone()))
    }

    /// GET `path`; `None` when the server answers that it does not exist.
    async fn get_if_exists(&self, path: String, what: &Request) -> Result<Option<Value>> {
        let req = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| Error::Io(e.to_string()))?;
        let id = self.in_flight.start(&self.server, what, None);
        let answer = self.client.request::<Value>(req).await;
        self.in_flight.finish(id);
        match answer {
            Ok(object) => Ok(Some(object)),
            Err(kube::Error::Api(status)) if classify(&status) == Failure::NotFound => Ok(None),
            Err(e) => Err(self.error(e, what)),
        }
    }

    /// promotion-controller's Lease ([`crate::view::reconciler_health`]): in the install's
    /// namespace, else wherever one of its name is (a controller run in another namespace);
    /// `None` when there is none.
    pub async fn controller_lease(&self) -> Result<Option<Value>> {
        use crate::view::reconciler_health::{CONTROLLER_NAMESPACE, LEASE_NAME};
        let what = Request::named("get", LEASES, LEASE_NAME);
        let path = LEASE.namespaced_object_path(CONTROLLER_NAMESPACE, LEASE_NAME);
        if let Some(lease) = self.get_if_exists(path, &what).await? {
            return Ok(Some(lease));
        }
        let what = Request::new("list", LEASES);
        let lp = ListParams::default().fields(&format!("metadata.name={LEASE_NAME}"));
        let req = self.build(KubeRequest::new(LEASE.path).list(&lp), &what)?;
        let listed = self.send(req, &what).await?;
        Ok(items(listed).into_iter().next())
    }

    /// promotion-controller's revisions in `namespace` ([`promotion_shared::history`]): of the
    /// promotion with UID `uid`, or (`None`) of every promotion, in one request.
    pub async fn list_revisions(&self, namespace: &str, uid: Option<&str>) -> Result<Vec<Value>> {
        use promotion_shared::api_resources::{CONTROLLER_REVISION, CONTROLLER_REVISIONS};
        use promotion_shared::history::PROMOTION_UID_LABEL;
        let what = Request::new("list", CONTROLLER_REVISIONS);
        let lp = ListParams::default().labels(&match uid {
            Some(uid) => format!("{PROMOTION_UID_LABEL}={uid}"),
            None => PROMOTION_UID_LABEL.to_string(),
        });
        let path = format!(
            "{}/namespaces/{namespace}/{}",
            CONTROLLER_REVISION.prefix, CONTROLLER_REVISION.plural
        );
        let req = self.build(KubeRequest::new(path).list(&lp), &what)?;
        Ok(items(self.send(req, &what).await?))
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
        let id = self.in_flight.start(&self.server, &what, None);
        let body = self.client.request_text(req).await;
        self.in_flight.finish(id);
        let body = body.map_err(|e| self.error(e, &what))?;
        crate::cluster::summary_list::decode(body.as_bytes()).map_err(|e| Error::Api {
            request: what,
            message: format!("the answer is not a ClusterSummary list: {e}"),
        })
    }

    /// Events about the promotion, oldest first, as `kubectl describe` reads them: from
    /// `events.k8s.io/v1`, and from core `v1` when that group is not readable (the built-in
    /// `view`, `edit` and `admin` roles grant core Events only) or not served. Only the namespace
    /// the recorders put them in is listed ([`events::NAMESPACE`]), so reading them needs no
    /// cluster-wide Event access.
    pub async fn list_events(&self, name: &str, uid: Option<&str>) -> Result<Vec<Value>> {
        let in_namespace = |prefix: &str, plural: &str| {
            format!("{prefix}/namespaces/{}/{plural}", events::NAMESPACE)
        };
        let what = Request::new("list", EVENTS);
        let lp = ListParams::default().fields(&format!(
            "regarding.kind={},regarding.name={name}",
            PROMOTION.kind
        ));
        let path = in_namespace(EVENT.prefix, EVENT.plural);
        let req = self.build(KubeRequest::new(&path).list(&lp), &what)?;
        let listed = match self.client.request::<Value>(req).await {
            Ok(list) => list,
            Err(kube::Error::Api(s))
                if matches!(classify(&s), Failure::Forbidden | Failure::NotFound) =>
            {
                let what = Request::new("list", CORE_EVENTS);
                let lp = ListParams::default().fields(&format!(
                    "involvedObject.kind={},involvedObject.name={name}",
                    PROMOTION.kind
                ));
                let path = in_namespace(CORE_EVENT.prefix, CORE_EVENT.plural);
                let req = self.build(KubeRequest::new(&path).list(&lp), &what)?;
                self.send(req, &what).await?
            }
            Err(e) => return Err(self.error(e, &what)),
        };
        let mut found: Vec<Value> = items(listed)
            .into_iter()
            .filter(|e| events::regards(e, name, uid))
            .collect();
        found.sort_by_key(|e| events::event_time(e).unwrap_or_default());
        Ok(found)
    }

    /// A guarded write of a ClusterPromotion ([`promotion_shared::patch`]): a merge patch that
    /// carries the resourceVersion it was computed from; `dry_run` asks the server to validate
    /// (admission included) without storing. The raw client error is returned so that the caller
    /// can tell a conflict from other failures ([`classify`]); map it with [`Kube::error`].
    pub async fn write(
        &self,
        name: &str,
        write: &Write,
        dry_run: bool,
    ) -> std::result::Result<Value, kube::Error> {
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            dry_run,
            ..PatchParams::default()
        };
        let req = KubeRequest::new(PROMOTION.path)
            .patch(name, &pp, &Patch::Merge(&write.patch))
            .map_err(kube::Error::BuildRequest)?;
        let what = Request::named("patch", PROMOTIONS, name);
        let check = (!dry_run).then(|| write_check(name, &write.shows));
        let id = self.in_flight.start(&self.server, &what, check);
        let answer = self.client.request::<Value>(req).await;
        self.in_flight.finish(id);
        answer
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

/// Whether a transport error happened before the request went out: no connection could be made
/// (hyper-util reports those as connect errors).
fn before_sending(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(err);
    while let Some(e) = source {
        if let Some(e) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            return e.is_connect();
        }
        source = e.source();
    }
    false
}

/// Whether a transport error is a timeout (hyper-timeout's connect and read timeouts are
/// `io::ErrorKind::TimedOut`; its connect timeout's own message is a bare "deadline has
/// elapsed", which is why it is worded here instead).
fn timed_out(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(err);
    while let Some(e) = source {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// How to find out whether a write of the ClusterPromotion `name` was stored: a
/// `kubectl get -o jsonpath` of the fields it shows once stored ([`Write::shows`]: the guarded
/// stage name and the value set), and what it prints if the write was stored, or `describe` when
/// the write shows nothing such a template can print.
pub fn write_check(name: &str, shows: &[(String, Value)]) -> String {
    let describe = format!("kubectl promotion describe {name}");
    let mut fields = Vec::new();
    let mut expected = Vec::new();
    for (pointer, value) in shows {
        let shown = match value {
            Value::String(s) => s.clone(),
            Value::Bool(_) | Value::Number(_) => value.to_string(),
            _ => continue,
        };
        let Some(spec) = pointer.strip_prefix("/spec/") else {
            continue;
        };
        let mut field = String::from(".spec");
        for token in spec.split('/') {
            if token.parse::<usize>().is_ok() {
                field.push_str(&format!("[{token}]"));
            } else if token.chars().all(|c| c.is_ascii_alphanumeric()) {
                field.push('.');
                field.push_str(token);
            } else {
                // Keys a jsonpath would need escaping for: describe shows them.
                return describe;
            }
        }
        fields.push(format!("{{{field}}}"));
        expected.push(shown);
    }
    if fields.is_empty() {
        return describe;
    }
    format!(
        "kubectl get clusterpromotion {name} -o jsonpath='{}{{\"\\n\"}}' (it prints \"{}\" if it \
         was stored), or {describe}",
        fields.join("{\" \"}"),
        expected.join(" ")
    )
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

/// What the server said, for a message: its words and the HTTP code, or (no words) the code and
/// the reason.
fn said(status: &kube::core::Status) -> String {
    match (status.message.is_empty(), status.code) {
        (false, 0) => status.message.clone(),
        (false, code) => format!("{} ({code})", status.message),
        (true, 0) => format!("the server answered {:?} with no message", status.reason),
        (true, code) => format!("HTTP {code} {}", status.reason),
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
