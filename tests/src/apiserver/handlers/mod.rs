//! Request handling, laid out as kube-apiserver's `endpoints/` is:
//!
//! - this module is the handler chain (`DefaultBuildHandlerChain`): authentication, impersonation,
//!   request info, authorization, then the verb's handler; it also records every request;
//! - [`requestinfo`]: `RequestInfoFactory`, the URL → resource, name, subresource and verb;
//! - [`nonresource`]: the non-resource paths (`/version`, health, discovery, `/openapi/v3`);
//! - [`responsewriters`]: what a handler returns and how it is written (status, warnings);
//! - [`rest`]: `RequestScope`, what every verb handler shares, including the write preamble
//!   (`dryRun`, `fieldValidation`) and body decoding;
//! - one module per verb, as `endpoints/handlers/`: [`get`] (get, list), [`watch`], [`create`],
//!   [`update`] (also the update path PATCH ends in), [`patch`], [`delete`] (delete,
//!   deletecollection).
//!
//! The registry's part (`BeforeCreate`/`BeforeUpdate` and the type strategies) is in
//! [`super::strategy`], storage in [`super::store`].

mod create;
mod delete;
mod get;
mod nonresource;
mod patch;
mod requestinfo;
mod responsewriters;
mod rest;
mod update;
mod watch;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Request, Response};
use bytes::Bytes;
use tokio::sync::watch as tokio_watch;

use super::admission::AdmissionClient;
use super::auth::{self, Attributes, Authorizer, Decision, DenyRule, UserInfo};
use super::impersonation;
use super::status::ApiError;
use super::store::Store;
use requestinfo::{RequestInfo, Verb};
use responsewriters::Reply;
use rest::RequestScope;

/// One request as the server saw it (tests assert on what a client actually sent), with the
/// identity it ran as: the impersonated user when impersonation was asked for and allowed (the
/// audit log's `impersonatedUser`), the authenticated user otherwise, nobody when
/// authentication failed.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    /// Username; empty when authentication failed.
    pub user: String,
    /// Groups, with the `system:authenticated` the server adds.
    pub groups: Vec<String>,
    pub uid: String,
    pub extra: BTreeMap<String, Vec<String>>,
    pub content_type: String,
    pub body: String,
    pub status: u16,
}

pub(crate) struct AppState {
    pub store: Store,
    pub tokens: RwLock<BTreeMap<String, UserInfo>>,
    pub authorizer: RwLock<Option<Authorizer>>,
    pub deny_rules: RwLock<Vec<DenyRule>>,
    /// Requests that match one of these are accepted and never answered (a hung webhook or
    /// etcd, seen from the client).
    pub hangs: RwLock<Vec<HangRule>>,
    /// Answer every request 500 `etcdserver: leader changed`, as kube-apiserver does while its
    /// etcd restarts (a 503 would not do: clients retry it silently).
    pub unavailable: std::sync::atomic::AtomicBool,
    pub admission: RwLock<Option<Arc<AdmissionClient>>>,
    pub drop_watches: tokio_watch::Sender<u64>,
    pub bookmark_interval: Duration,
    pub git_version: String,
    pub server_address: RwLock<String>,
    pub requests: Mutex<Vec<RecordedRequest>>,
    /// Notified after each request is recorded, for tests that wait for one.
    pub request_recorded: std::sync::Condvar,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

/// A test's rule for requests to leave unanswered.
pub type HangRule = Arc<dyn Fn(&Attributes) -> bool + Send + Sync>;

impl AppState {
    fn hangs(&self, a: &Attributes) -> bool {
        read(&self.hangs).iter().any(|rule| rule(a))
    }

    pub fn decide(&self, a: &Attributes) -> Decision {
        if read(&self.deny_rules).iter().any(|r| r.matches(a)) {
            return Decision::Deny(None);
        }
        match read(&self.authorizer).as_ref() {
            Some(f) => f(a),
            None => Decision::Allow,
        }
    }
}

pub(crate) async fn handle(State(app): State<Arc<AppState>>, req: Request<Body>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, 64 * 1024 * 1024).await {
        Ok(b) => b,
        Err(e) => return responsewriters::error(&ApiError::bad_request(e.to_string())),
    };
    let mut identity = UserInfo::default();
    let result = serve(
        &app,
        &parts.method,
        &parts.uri,
        &parts.headers,
        &bytes,
        &mut identity,
    )
    .await;
    let (response, code) = responsewriters::write(result);
    let content_type = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if let Ok(mut log) = app.requests.lock() {
        log.push(RecordedRequest {
            method: parts.method.to_string(),
            path: parts.uri.path().to_string(),
            query: parts.uri.query().unwrap_or_default().to_string(),
            user: identity.username,
            groups: identity.groups,
            uid: identity.uid,
            extra: identity.extra,
            content_type,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            status: code,
        });
        app.request_recorded.notify_all();
    }
    response
}

/// The filter chain and the dispatch to the verb's handler. `identity` is set as soon as the
/// caller is known, so that a refused request is still recorded under a name.
async fn serve(
    app: &Arc<AppState>,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: &Bytes,
    identity: &mut UserInfo,
) -> Result<Reply, ApiError> {
    if app.unavailable.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(ApiError::internal("etcdserver: leader changed"));
    }
    let path = uri.path();
    let query = requestinfo::parse_query(uri.query());
    let tokens = read(&app.tokens).clone();
    let requestor = auth::authenticate(headers, &tokens)?;
    *identity = requestor.clone();
    let request_uri = uri.path_and_query().map_or(path, |p| p.as_str());
    let user = impersonation::impersonate(headers, &requestor, &|a| app.decide(a), request_uri)?;
    *identity = user.clone();
    let accept = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();

    let Some(resource_path) = requestinfo::resource_path(path) else {
        return nonresource::serve(app, method, path, &query, &accept, user);
    };
    let info = RequestInfo::resolve(&app.store, &resource_path)?;
    let verb = Verb::of(method, &query, info.name.is_some())?;
    let attributes = info.attributes(user.clone(), verb, path);
    if let Decision::Deny(reason) = app.decide(&attributes) {
        return Err(auth::forbidden(&attributes, reason.as_deref()));
    }
    if app.hangs(&attributes) {
        // Until the server shuts down, which drops this request with its connection.
        std::future::pending::<()>().await;
    }
    let scope = RequestScope {
        app,
        target: info,
        query,
        accept,
        headers,
        user,
    };
    if scope.def().review {
        return match verb {
            Verb::Create => scope.review(body),
            _ => Err(responsewriters::method_not_allowed()),
        };
    }
    match verb {
        Verb::Get => scope.get(),
        Verb::List => scope.list(),
        Verb::Watch => scope.watch(),
        Verb::Create => scope.create(body).await,
        Verb::Update => scope.update(body).await,
        Verb::Patch => scope.patch(body).await,
        Verb::Delete => scope.delete(body),
        Verb::DeleteCollection => scope.delete_collection(),
    }
}
