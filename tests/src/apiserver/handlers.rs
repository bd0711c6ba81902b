//! Request handling: authentication, routing (`RequestInfoFactory` rules), authorization, and the
//! verbs (get, list, watch, create, update, patch, delete, deletecollection) with the registry
//! semantics of the real server: optimistic concurrency, status subresource, generation, dry run,
//! field validation, CRD defaulting and validation, admission webhooks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::watch as tokio_watch;

use super::admission::{AdmissionClient, AdmissionRequest};
use super::auth::{self, Attributes, Authorizer, Decision, DenyRule, UserInfo};
use super::discovery;
use super::events;
use super::resources::ResourceDef;
use super::selectors::{field_pointer, FieldSelector, LabelSelector};
use super::status::{go_quote, ApiError, FieldError};
use super::store::{self, now_rfc3339, Store, Stored};
use super::table;
use super::watch::{self, WatchRequest};

/// One request as the server saw it (tests assert on what a client actually sent).
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub user: String,
    pub content_type: String,
    pub body: String,
    pub status: u16,
}

pub(crate) struct AppState {
    pub store: Store,
    pub tokens: RwLock<BTreeMap<String, UserInfo>>,
    pub authorizer: RwLock<Option<Authorizer>>,
    pub deny_rules: RwLock<Vec<DenyRule>>,
    pub admission: RwLock<Option<Arc<AdmissionClient>>>,
    pub drop_watches: tokio_watch::Sender<u64>,
    pub bookmark_interval: Duration,
    pub git_version: String,
    pub server_address: RwLock<String>,
    pub requests: Mutex<Vec<RecordedRequest>>,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

impl AppState {
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

enum Reply {
    Json {
        code: u16,
        body: Bytes,
        content_type: &'static str,
        warnings: Vec<String>,
    },
    Text(&'static str),
    Stream(watch::BodyStream),
}

fn json_reply(code: u16, value: &Value, warnings: Vec<String>) -> Reply {
    Reply::Json {
        code,
        body: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        content_type: "application/json",
        warnings,
    }
}

/// Go's `warning.AddWarning` header form.
fn warning_header(text: &str) -> Option<HeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\"")).ok()
}

fn common_headers(headers: &mut HeaderMap) {
    headers.insert(
        "cache-control",
        HeaderValue::from_static("no-cache, private"),
    );
    if let Ok(v) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
        headers.insert("audit-id", v);
    }
}

fn error_response(err: &ApiError) -> Response<Body> {
    let mut response = match &err.plain_text {
        Some(text) => {
            let mut r = Response::new(Body::from(text.clone()));
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            r.headers_mut().insert(
                "x-content-type-options",
                HeaderValue::from_static("nosniff"),
            );
            r
        }
        None => {
            let mut r = Response::new(Body::from(
                serde_json::to_vec(&err.status).unwrap_or_default(),
            ));
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("application/json"));
            r
        }
    };
    *response.status_mut() =
        StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for w in &err.warnings {
        if let Some(v) = warning_header(w) {
            response.headers_mut().append("warning", v);
        }
    }
    common_headers(response.headers_mut());
    response
}

pub(crate) async fn handle(State(app): State<Arc<AppState>>, req: Request<Body>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, 64 * 1024 * 1024).await {
        Ok(b) => b,
        Err(e) => return error_response(&ApiError::bad_request(e.to_string())),
    };
    let mut user_name = String::new();
    let result = route(
        &app,
        &parts.method,
        &parts.uri,
        &parts.headers,
        &bytes,
        &mut user_name,
    )
    .await;
    let (response, code) = match result {
        Ok(Reply::Json {
            code,
            body,
            content_type,
            warnings,
        }) => {
            let mut r = Response::new(Body::from(body));
            *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static(content_type));
            for w in &warnings {
                if let Some(v) = warning_header(w) {
                    r.headers_mut().append("warning", v);
                }
            }
            common_headers(r.headers_mut());
            (r, code)
        }
        Ok(Reply::Text(text)) => {
            let mut r = Response::new(Body::from(text));
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            (r, 200)
        }
        Ok(Reply::Stream(stream)) => {
            let mut r = Response::new(Body::from_stream(stream));
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("application/json"));
            common_headers(r.headers_mut());
            (r, 200)
        }
        Err(err) => (error_response(&err), err.code),
    };
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
            user: user_name,
            content_type,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            status: code,
        });
    }
    response
}

type Query = BTreeMap<String, String>;

fn parse_query(q: Option<&str>) -> Query {
    form_urlencoded::parse(q.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn truthy(q: &Query, key: &str) -> bool {
    matches!(q.get(key).map(String::as_str), Some("true" | "1"))
}

async fn route(
    app: &Arc<AppState>,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: &Bytes,
    user_name: &mut String,
) -> Result<Reply, ApiError> {
    let path = uri.path();
    let query = parse_query(uri.query());
    let tokens = read(&app.tokens).clone();
    let user = auth::authenticate(headers, &tokens, &|a| app.decide(a), path)?;
    *user_name = user.username.clone();
    let accept = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();

    let resource_path = matches!(
        segs.as_slice(),
        ["api", "v1", _, ..] | ["apis", _, _, _, ..]
    );
    if !resource_path {
        let a = Attributes {
            user: user.clone(),
            verb: method.as_str().to_lowercase(),
            api_group: String::new(),
            api_version: String::new(),
            resource: String::new(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            resource_request: false,
            path: path.to_string(),
        };
        if let Decision::Deny(reason) = app.decide(&a) {
            return Err(auth::forbidden(&a, reason.as_deref()));
        }
        if method != Method::GET {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ));
        }
        let defs = app.store.registry();
        return match segs.as_slice() {
            ["version"] => Ok(json_reply(
                200,
                &discovery::version(&app.git_version),
                vec![],
            )),
            ["healthz"] | ["readyz"] | ["livez"] => Ok(Reply::Text("ok")),
            ["api"] => {
                if discovery::wants_aggregated(&accept) {
                    Ok(aggregated_reply(&discovery::aggregated(defs, true)))
                } else {
                    let addr = read(&app.server_address).clone();
                    Ok(json_reply(200, &discovery::api_versions(&addr), vec![]))
                }
            }
            ["apis"] => {
                if discovery::wants_aggregated(&accept) {
                    Ok(aggregated_reply(&discovery::aggregated(defs, false)))
                } else {
                    Ok(json_reply(200, &discovery::api_group_list(defs), vec![]))
                }
            }
            ["api", "v1"] => discovery::api_resource_list(defs, "", "v1")
                .map(|v| json_reply(200, &v, vec![]))
                .ok_or_else(ApiError::page_not_found),
            ["apis", group] => discovery::api_group_doc(defs, group)
                .map(|v| json_reply(200, &v, vec![]))
                .ok_or_else(ApiError::page_not_found),
            ["apis", group, version] => discovery::api_resource_list(defs, group, version)
                .map(|v| json_reply(200, &v, vec![]))
                .ok_or_else(ApiError::page_not_found),
            ["openapi", rest @ ..] => super::openapi::serve(defs, rest, &query)
                .map(|v| json_reply(200, &v, vec![]))
                .ok_or_else(ApiError::page_not_found),
            _ => Err(ApiError::page_not_found()),
        };
    }

    let (group, version, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::page_not_found()),
    };
    let target = resolve(&app.store, group, version, rest)?;
    let verb = match *method {
        Method::GET | Method::HEAD => {
            if truthy(&query, "watch") {
                "watch"
            } else if target.name.is_some() {
                "get"
            } else {
                "list"
            }
        }
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => {
            if target.name.is_some() {
                "delete"
            } else {
                "deletecollection"
            }
        }
        _ => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ))
        }
    };
    let attributes = Attributes {
        user: user.clone(),
        verb: verb.to_string(),
        api_group: group.to_string(),
        api_version: version.to_string(),
        resource: target.def.plural.to_string(),
        subresource: target.subresource.clone(),
        namespace: target.namespace.clone().unwrap_or_default(),
        name: target.name.clone().unwrap_or_default(),
        resource_request: true,
        path: path.to_string(),
    };
    if let Decision::Deny(reason) = app.decide(&attributes) {
        return Err(auth::forbidden(&attributes, reason.as_deref()));
    }
    let req = Ctx {
        app,
        target,
        query,
        accept,
        headers,
        user,
    };
    match verb {
        "get" => req.get(),
        "list" => req.list(),
        "watch" => req.watch(),
        "create" => req.create(body).await,
        "update" => req.update(body).await,
        "patch" => req.patch(body).await,
        "delete" => req.delete(body),
        _ => req.delete_collection(),
    }
}

fn aggregated_reply(v: &Value) -> Reply {
    Reply::Json {
        code: 200,
        body: Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
        content_type: discovery::AGGREGATED_V2_CONTENT_TYPE,
        warnings: vec![],
    }
}

struct Target {
    def: Arc<ResourceDef>,
    namespace: Option<String>,
    name: Option<String>,
    subresource: String,
}

/// `RequestInfoFactory`: `[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]`.
fn resolve(store: &Store, group: &str, version: &str, rest: &[&str]) -> Result<Target, ApiError> {
    let mut parts: Vec<&str> = rest.to_vec();
    let mut namespace = None;
    if parts.first() == Some(&"namespaces") && parts.len() > 1 {
        let sub_of_namespace = parts.len() > 2 && matches!(parts[2], "status" | "finalize");
        if parts.len() > 2 && !sub_of_namespace {
            namespace = Some(parts[1].to_string());
            parts.drain(..2);
        }
    }
    let def = store
        .registry()
        .iter()
        .find(|d| d.group == group && d.version == version && Some(&d.plural) == parts.first())
        .cloned()
        .ok_or_else(ApiError::page_not_found)?;
    let name = parts.get(1).map(|s| s.to_string());
    let subresource = parts.get(2).map(|s| s.to_string()).unwrap_or_default();
    if parts.len() > 3 {
        return Err(ApiError::page_not_found());
    }
    if !(subresource.is_empty() || subresource == "status" && def.status_subresource) {
        return Err(ApiError::page_not_found());
    }
    if !def.namespaced && namespace.is_some() {
        return Err(ApiError::page_not_found());
    }
    if def.namespaced && namespace.is_none() && name.is_some() {
        return Err(ApiError::page_not_found());
    }
    Ok(Target {
        def,
        namespace,
        name,
        subresource,
    })
}

struct Ctx<'a> {
    app: &'a Arc<AppState>,
    target: Target,
    query: Query,
    accept: String,
    headers: &'a HeaderMap,
    user: UserInfo,
}

/// The continue token: base64 JSON like the real one (`{"v":…,"rv":…,"start":…}`).
fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{ns}/{name}\u{0}")});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<(u64, String, String), ApiError> {
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token}"));
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .trim_end_matches('\u{0}');
    let (ns, name) = start.split_once('/').ok_or_else(bad)?;
    Ok((rv, ns.to_string(), name.to_string()))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl Ctx<'_> {
    fn def(&self) -> &ResourceDef {
        &self.target.def
    }

    fn events_view(&self) -> bool {
        self.def().group == "events.k8s.io"
    }

    /// Present a stored object in the served representation.
    fn present(&self, v: &Value) -> Value {
        if self.events_view() {
            events::to_events_v1(v)
        } else {
            v.clone()
        }
    }

    fn include_object(&self) -> String {
        self.query
            .get("includeObject")
            .cloned()
            .unwrap_or_else(|| "Metadata".into())
    }

    fn key(&self) -> store::Key {
        (
            self.target.namespace.clone().unwrap_or_default(),
            self.target.name.clone().unwrap_or_default(),
        )
    }

    fn not_found(&self) -> ApiError {
        ApiError::not_found(
            self.def().group,
            self.def().plural,
            self.target.name.as_deref().unwrap_or_default(),
        )
    }

    fn lookup(&self) -> Option<Stored> {
        let state = self.app.store.lock();
        state
            .objects
            .get(self.def().storage)
            .and_then(|m| m.get(&self.key()))
            .cloned()
    }

    fn get(&self) -> Result<Reply, ApiError> {
        let stored = self.lookup().ok_or_else(|| self.not_found())?;
        if table::wants_table(&self.accept) {
            let obj = self.present(&stored.value);
            let t = json!({
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))},
                "columnDefinitions": table::column_definitions(self.def()),
                "rows": [table::row(self.def(), &obj, &self.include_object())]
            });
            return Ok(json_reply(200, &t, vec![]));
        }
        if self.events_view() {
            return Ok(json_reply(200, &self.present(&stored.value), vec![]));
        }
        Ok(Reply::Json {
            code: 200,
            body: stored.json,
            content_type: "application/json",
            warnings: vec![],
        })
    }

    fn selectors(&self) -> Result<(LabelSelector, FieldSelector), ApiError> {
        let labels = LabelSelector::parse(
            self.query
                .get("labelSelector")
                .map(String::as_str)
                .unwrap_or_default(),
        )?;
        let storage = self.def().storage;
        let fields = FieldSelector::parse(
            self.query
                .get("fieldSelector")
                .map(String::as_str)
                .unwrap_or_default(),
            &|f| field_pointer(storage, f),
        )?;
        Ok((labels, fields))
    }

    fn list(&self) -> Result<Reply, ApiError> {
        let (labels, fields) = self.selectors()?;
        let limit: usize = self
            .query
            .get("limit")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let continuing = match self.query.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => Some(decode_continue(token)?),
            None => None,
        };
        let mut items: Vec<Stored> = Vec::new();
        let mut next: Option<(String, String)> = None;
        let mut remaining = 0u64;
        let list_rv;
        {
            let state = self.app.store.lock();
            if let Some((rv, _, _)) = &continuing {
                if *rv <= state.compacted {
                    return Err(ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."));
                }
            }
            if let (Some(rv), Some("Exact")) = (
                self.query
                    .get("resourceVersion")
                    .and_then(|r| r.parse::<u64>().ok()),
                self.query.get("resourceVersionMatch").map(String::as_str),
            ) {
                if rv <= state.compacted {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        state.compacted + 1
                    )));
                }
            }
            list_rv = continuing.as_ref().map(|c| c.0).unwrap_or(state.rv);
            if let Some(objects) = state.objects.get(self.def().storage) {
                let range: Box<dyn Iterator<Item = (&store::Key, &Stored)>> = match &continuing {
                    Some((_, ns, name)) => Box::new(objects.range((
                        std::ops::Bound::Excluded((ns.clone(), name.clone())),
                        std::ops::Bound::Unbounded,
                    ))),
                    None => Box::new(objects.iter()),
                };
                let ns_filter = self.target.namespace.as_deref();
                for ((ns, name), stored) in range {
                    if ns_filter.is_some_and(|f| f != ns) {
                        continue;
                    }
                    if !labels.matches(&stored.value) || !fields.matches(&stored.value) {
                        continue;
                    }
                    if limit > 0 && items.len() >= limit {
                        if next.is_none() {
                            next = Some((ns.clone(), name.clone()));
                        }
                        remaining += 1;
                        continue;
                    }
                    items.push(stored.clone());
                }
            }
        }
        let continue_token = next.as_ref().map(|_| {
            let last = items.last().map(|s| {
                (
                    s.value
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    s.value
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                )
            });
            let (ns, name) = last.unwrap_or_default();
            encode_continue(list_rv, &ns, &name)
        });
        let mut metadata = Map::new();
        if let Some(c) = &continue_token {
            metadata.insert("continue".into(), json!(c));
        }
        metadata.insert("resourceVersion".into(), json!(list_rv.to_string()));
        if continue_token.is_some() && labels.is_empty() && fields.is_empty() {
            metadata.insert("remainingItemCount".into(), json!(remaining));
        }
        if table::wants_table(&self.accept) {
            let include = self.include_object();
            let rows: Vec<Value> = items
                .iter()
                .map(|s| table::row(self.def(), &self.present(&s.value), &include))
                .collect();
            let t = json!({
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": Value::Object(metadata),
                "columnDefinitions": table::column_definitions(self.def()),
                "rows": rows
            });
            return Ok(json_reply(200, &t, vec![]));
        }
        // Serialize once: the items are concatenated from their stored bytes.
        let mut out: Vec<u8> =
            Vec::with_capacity(items.iter().map(|s| s.json.len() + 1).sum::<usize>() + 256);
        out.extend_from_slice(b"{\"kind\":");
        out.extend_from_slice(go_quote(&self.def().list_kind()).as_bytes());
        out.extend_from_slice(b",\"apiVersion\":");
        out.extend_from_slice(go_quote(&self.def().api_version()).as_bytes());
        out.extend_from_slice(b",\"metadata\":");
        out.extend_from_slice(&serde_json::to_vec(&Value::Object(metadata)).unwrap_or_default());
        out.extend_from_slice(b",\"items\":[");
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            if self.events_view() {
                out.extend_from_slice(
                    &serde_json::to_vec(&self.present(&s.value)).unwrap_or_default(),
                );
            } else {
                out.extend_from_slice(&s.json);
            }
        }
        out.extend_from_slice(b"]}");
        Ok(Reply::Json {
            code: 200,
            body: Bytes::from(out),
            content_type: "application/json",
            warnings: vec![],
        })
    }

    fn watch(&self) -> Result<Reply, ApiError> {
        let (labels, mut fields) = self.selectors()?;
        if let Some(name) = &self.target.name {
            let storage = self.def().storage;
            fields = FieldSelector::parse(&format!("metadata.name={name}"), &|f| {
                field_pointer(storage, f)
            })?;
        }
        let req = WatchRequest {
            def: self.target.def.clone(),
            namespace: self.target.namespace.clone(),
            labels,
            fields,
            resource_version: self.query.get("resourceVersion").cloned(),
            bookmarks: truthy(&self.query, "allowWatchBookmarks"),
            send_initial_events: truthy(&self.query, "sendInitialEvents"),
            timeout: self
                .query
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .filter(|t| *t > 0)
                .map(Duration::from_secs),
            as_table: table::wants_table(&self.accept),
            include_object: self.include_object(),
            bookmark_interval: self.app.bookmark_interval,
        };
        let stream = watch::start(&self.app.store, req, self.app.drop_watches.subscribe())?;
        Ok(Reply::Stream(stream))
    }

    fn dry_run(&self) -> Result<bool, ApiError> {
        match self.query.get("dryRun").map(String::as_str) {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {}: supported values: \"All\"",
                go_quote(other)
            ))),
        }
    }

    fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        match self.query.get("fieldValidation").map(String::as_str) {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: {}: supported values: \"Ignore\", \"Warn\", \"Strict\"",
                go_quote(other)
            ))),
        }
    }

    fn options(&self, kind: &str, dry_run: bool) -> Value {
        let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
        if dry_run {
            o["dryRun"] = json!(["All"]);
        }
        if let Some(fm) = self.query.get("fieldManager") {
            o["fieldManager"] = json!(fm);
        }
        if let Some(fv) = self.query.get("fieldValidation") {
            o["fieldValidation"] = json!(fv);
        }
        o
    }

    fn decode_body(&self, body: &Bytes) -> Result<Value, ApiError> {
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json");
        let base = content_type.split(';').next().unwrap_or_default().trim();
        let value: Value = match base {
            "application/yaml" => serde_saphyr::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
            "application/json" | "" | "*/*" => serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "Object 'Kind' is missing in '{}': {e}",
                    String::from_utf8_lossy(body)
                ))
            })?,
            _ => {
                return Err(ApiError::unsupported_media_type(&[
                    "application/json",
                    "application/yaml",
                ]))
            }
        };
        if !value.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request is not an object",
            ));
        }
        Ok(if self.events_view() {
            events::to_core(&value)
        } else {
            value
        })
    }

    /// Fill in / check `apiVersion`, `kind` and the namespace against the URL.
    fn check_identity(&self, obj: &mut Value) -> Result<(), ApiError> {
        let def = self.def();
        let api_version = if self.events_view() {
            "v1".to_string()
        } else {
            def.api_version()
        };
        let map = obj
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("the body of the request is not an object"))?;
        let have_kind = map
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !have_kind.is_empty() && have_kind != def.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({have_kind}) does not match the expected kind ({})",
                def.kind
            )));
        }
        let have_av = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !have_av.is_empty() && have_av != api_version && !self.events_view() {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({have_av}) does not match the expected API version ({api_version})"
            )));
        }
        map.insert("kind".into(), json!(def.kind));
        map.insert("apiVersion".into(), json!(api_version));
        let meta = map
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        if def.namespaced {
            let url_ns = self.target.namespace.clone().unwrap_or_default();
            match meta.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() && ns != url_ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {
                    meta.insert("namespace".into(), json!(url_ns));
                }
            }
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    /// Decode-time schema handling: prune (reporting unknown fields per `fieldValidation`) and
    /// default.
    fn decode_schema(
        &self,
        obj: &mut Value,
        validation: FieldValidation,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let Some(schema) = &self.def().schema else {
            return Ok(());
        };
        let unknown = schema.prune(obj);
        if !unknown.is_empty() {
            match validation {
                FieldValidation::Strict => {
                    let list: Vec<String> = unknown
                        .iter()
                        .map(|u| format!("unknown field {}", go_quote(u)))
                        .collect();
                    return Err(ApiError::bad_request(format!(
                        "{} in version {} cannot be handled as a {}: strict decoding error: {}",
                        self.def().kind,
                        go_quote(self.def().version),
                        self.def().kind,
                        list.join(", ")
                    )));
                }
                FieldValidation::Warn => {
                    warnings.extend(
                        unknown
                            .iter()
                            .map(|u| format!("unknown field {}", go_quote(u))),
                    );
                }
                FieldValidation::Ignore => {}
            }
        }
        schema.default(obj);
        Ok(())
    }

    fn admission(&self) -> Option<Arc<AdmissionClient>> {
        read(&self.app.admission)
            .clone()
            .filter(|a| a.config().intercepts(self.def(), &self.target.subresource))
    }

    async fn create(&self, body: &Bytes) -> Result<Reply, ApiError> {
        if self.target.name.is_some() || !self.target.subresource.is_empty() {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ));
        }
        let dry_run = self.dry_run()?;
        let validation = self.field_validation()?;
        let mut warnings = Vec::new();
        let mut obj = self.decode_body(body)?;
        self.check_identity(&mut obj)?;
        self.decode_schema(&mut obj, validation, &mut warnings)?;
        generate_name(&mut obj);
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if self.def().namespaced {
            let ns = self.target.namespace.clone().unwrap_or_default();
            if self.app.store.get("namespaces", None, &ns).is_none() {
                return Err(ApiError::not_found("", "namespaces", &ns));
            }
        }
        let options = self.options("CreateOptions", dry_run);
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: "",
                operation: "CREATE",
                name: &name,
                namespace: self.target.namespace.as_deref().unwrap_or_default(),
                user: &self.user,
                object: &obj,
                old_object: None,
                dry_run,
                options: options.clone(),
            };
            obj = adm.mutate(&req, &mut warnings).await?;
            self.decode_schema(&mut obj, FieldValidation::Ignore, &mut Vec::new())?;
        }
        prepare_create(self.def(), &mut obj);
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.validate(&obj, &name, &warnings)?;
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: "",
                operation: "CREATE",
                name: &name,
                namespace: self.target.namespace.as_deref().unwrap_or_default(),
                user: &self.user,
                object: &obj,
                old_object: None,
                dry_run,
                options,
            };
            adm.validate(&req, &mut warnings).await?;
        }
        let key = (
            self.target.namespace.clone().unwrap_or_default(),
            name.clone(),
        );
        let result = {
            let mut state = self.app.store.lock();
            let exists = state
                .objects
                .get(self.def().storage)
                .is_some_and(|m| m.contains_key(&key));
            if exists {
                return Err(
                    ApiError::already_exists(self.def().group, self.def().plural, &name)
                        .with_warnings(warnings),
                );
            }
            if dry_run {
                obj
            } else {
                store::commit(
                    &mut state,
                    self.app.store.broadcast(),
                    self.def(),
                    obj,
                    false,
                )
            }
        };
        Ok(json_reply(201, &self.present(&result), warnings))
    }

    /// Name format and schema validation → 422.
    fn validate(&self, obj: &Value, name: &str, warnings: &[String]) -> Result<(), ApiError> {
        let mut errors = Vec::new();
        if name.is_empty() {
            errors.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        } else if let Some(problem) = name_problem(self.def(), name) {
            errors.push(FieldError::invalid(
                "metadata.name",
                go_quote(name),
                problem,
            ));
        }
        if errors.is_empty() {
            if let Some(schema) = &self.def().schema {
                errors.extend(schema.validate(obj));
            }
        }
        if errors.is_empty() {
            return Ok(());
        }
        let (group, kind) = if self.def().is_crd {
            (self.def().group, self.def().kind)
        } else {
            ("", self.def().kind)
        };
        Err(ApiError::invalid(group, kind, name, &errors).with_warnings(warnings.to_vec()))
    }

    async fn update(&self, body: &Bytes) -> Result<Reply, ApiError> {
        if self.target.name.is_none() {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ));
        }
        let dry_run = self.dry_run()?;
        let validation = self.field_validation()?;
        let mut warnings = Vec::new();
        let mut obj = self.decode_body(body)?;
        self.check_identity(&mut obj)?;
        let name = self.target.name.clone().unwrap_or_default();
        let body_name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        self.decode_schema(&mut obj, validation, &mut warnings)?;
        let current = self.lookup().ok_or_else(|| self.not_found())?;
        let requested_rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if requested_rv.is_empty() {
            // Custom resources and the types served here do not allow unconditional updates.
            let errors = [FieldError::invalid(
                "metadata.resourceVersion",
                "0x0".into(),
                "must be specified for an update",
            )];
            return Err(ApiError::invalid(
                self.def().group,
                self.def().plural,
                &name,
                &errors,
            ));
        }
        let current_rv = rv_of(&current.value);
        if requested_rv != current_rv {
            return Err(self.conflict().with_warnings(warnings));
        }
        let result = self
            .write_update(obj, &current, dry_run, "UpdateOptions", warnings.clone())
            .await?;
        Ok(json_reply(200, &self.present(&result.0), result.1))
    }

    fn conflict(&self) -> ApiError {
        ApiError::conflict(
            self.def().group,
            self.def().plural,
            self.target.name.as_deref().unwrap_or_default(),
        )
    }

    /// The update path shared by PUT and PATCH: mutating admission, strategy (status handling,
    /// generation), validation, validating admission, then commit guarded by resourceVersion.
    async fn write_update(
        &self,
        mut obj: Value,
        current: &Stored,
        dry_run: bool,
        options_kind: &str,
        mut warnings: Vec<String>,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let name = self.target.name.clone().unwrap_or_default();
        let options = self.options(options_kind, dry_run);
        let namespace = self.target.namespace.clone().unwrap_or_default();
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: &self.target.subresource,
                operation: "UPDATE",
                name: &name,
                namespace: &namespace,
                user: &self.user,
                object: &obj,
                old_object: Some(&current.value),
                dry_run,
                options: options.clone(),
            };
            obj = adm.mutate(&req, &mut warnings).await?;
            self.decode_schema(&mut obj, FieldValidation::Ignore, &mut Vec::new())?;
        }
        prepare_update(
            self.def(),
            &self.target.subresource,
            &mut obj,
            &current.value,
        );
        self.validate(&obj, &name, &warnings)?;
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: &self.target.subresource,
                operation: "UPDATE",
                name: &name,
                namespace: &namespace,
                user: &self.user,
                object: &obj,
                old_object: Some(&current.value),
                dry_run,
                options,
            };
            adm.validate(&req, &mut warnings).await?;
        }
        let expected = rv_of(&current.value);
        let mut state = self.app.store.lock();
        let latest = state
            .objects
            .get(self.def().storage)
            .and_then(|m| m.get(&self.key()))
            .cloned()
            .ok_or_else(|| self.not_found())?;
        if rv_of(&latest.value) != expected {
            return Err(self.conflict().with_warnings(warnings));
        }
        if dry_run {
            return Ok((obj, warnings));
        }
        let finishing = obj.pointer("/metadata/deletionTimestamp").is_some()
            && obj
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        let committed = store::commit(
            &mut state,
            self.app.store.broadcast(),
            self.def(),
            obj,
            true,
        );
        if finishing {
            store::commit_delete(
                &mut state,
                self.app.store.broadcast(),
                self.def(),
                &self.key(),
            );
        }
        Ok((committed, warnings))
    }

    async fn patch(&self, body: &Bytes) -> Result<Reply, ApiError> {
        if self.target.name.is_none() {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ));
        }
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let patch_type = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let accepted = self.def().patch_types();
        if !accepted.contains(&patch_type.as_str()) {
            return Err(ApiError::unsupported_media_type(accepted));
        }
        let dry_run = self.dry_run()?;
        let validation = self.field_validation()?;
        let apply = patch_type == "application/apply-patch+yaml";
        if apply && self.query.get("fieldManager").is_none_or(String::is_empty) {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                &[FieldError::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            ));
        }
        // GuaranteedUpdate: retry when another writer got in between.
        for _ in 0..5 {
            let mut warnings = Vec::new();
            let current = match self.lookup() {
                Some(c) => c,
                None if apply => return self.apply_create(body, dry_run, validation).await,
                None => return Err(self.not_found()),
            };
            let mut obj = (*current.value).clone();
            if self.events_view() {
                obj = events::to_events_v1(&obj);
            }
            apply_patch(&patch_type, &mut obj, body)?;
            if self.events_view() {
                obj = events::to_core(&obj);
            }
            let current_rv = rv_of(&current.value);
            let patched_rv = rv_of(&obj);
            if !patched_rv.is_empty() && patched_rv != current_rv {
                return Err(self.conflict());
            }
            set_rv(&mut obj, &current_rv);
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name != self.target.name.as_deref().unwrap_or_default() {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({name}) does not match the name on the URL ({})",
                    self.target.name.as_deref().unwrap_or_default()
                )));
            }
            self.check_identity(&mut obj)?;
            self.decode_schema(&mut obj, validation, &mut warnings)?;
            match self
                .write_update(obj, &current, dry_run, "UpdateOptions", warnings)
                .await
            {
                Ok((result, warnings)) => {
                    return Ok(json_reply(200, &self.present(&result), warnings))
                }
                Err(e) if e.code == 409 && e.reason() == "Conflict" && patched_rv.is_empty() => {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
        Err(self.conflict())
    }

    /// Server-side apply of an object that does not exist yet: a create.
    async fn apply_create(
        &self,
        body: &Bytes,
        dry_run: bool,
        validation: FieldValidation,
    ) -> Result<Reply, ApiError> {
        let mut obj: Value = serde_saphyr::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        self.check_identity(&mut obj)?;
        let mut warnings = Vec::new();
        self.decode_schema(&mut obj, validation, &mut warnings)?;
        prepare_create(self.def(), &mut obj);
        let name = self.target.name.clone().unwrap_or_default();
        self.validate(&obj, &name, &warnings)?;
        let mut state = self.app.store.lock();
        let result = if dry_run {
            obj
        } else {
            store::commit(
                &mut state,
                self.app.store.broadcast(),
                self.def(),
                obj,
                false,
            )
        };
        Ok(json_reply(201, &self.present(&result), warnings))
    }

    fn delete(&self, body: &Bytes) -> Result<Reply, ApiError> {
        let dry_run = self.dry_run()?;
        let options: Value = if body.is_empty() {
            json!({})
        } else {
            serde_json::from_slice(body).unwrap_or(json!({}))
        };
        let mut state = self.app.store.lock();
        let current = state
            .objects
            .get(self.def().storage)
            .and_then(|m| m.get(&self.key()))
            .cloned()
            .ok_or_else(|| self.not_found())?;
        if let Some(want) = options
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
        {
            let have = rv_of(&current.value);
            if want != have {
                return Err(ApiError::conflict_with(
                    self.def().group,
                    self.def().plural,
                    self.target.name.as_deref().unwrap_or_default(),
                    &format!("Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {have}"),
                ));
            }
        }
        if let Some(want) = options
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
        {
            let have = current
                .value
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if want != have {
                return Err(ApiError::conflict_with(
                    self.def().group,
                    self.def().plural,
                    self.target.name.as_deref().unwrap_or_default(),
                    &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {have}"),
                ));
            }
        }
        let has_finalizers = current
            .value
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            let mut obj = (*current.value).clone();
            if obj.pointer("/metadata/deletionTimestamp").is_none() {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
                    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
                if !dry_run {
                    obj = store::commit(
                        &mut state,
                        self.app.store.broadcast(),
                        self.def(),
                        obj,
                        true,
                    );
                }
            }
            return Ok(json_reply(200, &self.present(&obj), vec![]));
        }
        if !dry_run {
            store::commit_delete(
                &mut state,
                self.app.store.broadcast(),
                self.def(),
                &self.key(),
            );
            if self.def().plural == "namespaces" && self.def().group.is_empty() {
                let ns = self.target.name.clone().unwrap_or_default();
                let namespaced: Vec<Arc<ResourceDef>> = self
                    .app
                    .store
                    .registry()
                    .iter()
                    .filter(|d| d.namespaced)
                    .cloned()
                    .collect();
                for d in namespaced {
                    let keys: Vec<store::Key> = state
                        .objects
                        .get(d.storage)
                        .map(|m| m.keys().filter(|(n, _)| *n == ns).cloned().collect())
                        .unwrap_or_default();
                    for k in keys {
                        store::commit_delete(&mut state, self.app.store.broadcast(), &d, &k);
                    }
                }
            }
        }
        let mut details = json!({
            "name": self.target.name.clone().unwrap_or_default(),
            "kind": self.def().plural,
            "uid": current.value.pointer("/metadata/uid").cloned().unwrap_or(json!(""))
        });
        if !self.def().group.is_empty() {
            details["group"] = json!(self.def().group);
        }
        let status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details
        });
        Ok(json_reply(200, &status, vec![]))
    }

    fn delete_collection(&self) -> Result<Reply, ApiError> {
        let dry_run = self.dry_run()?;
        let (labels, fields) = self.selectors()?;
        let mut state = self.app.store.lock();
        let keys: Vec<(store::Key, Stored)> = state
            .objects
            .get(self.def().storage)
            .map(|m| {
                m.iter()
                    .filter(|((ns, _), s)| {
                        self.target.namespace.as_deref().is_none_or(|n| n == ns)
                            && labels.matches(&s.value)
                            && fields.matches(&s.value)
                    })
                    .map(|(k, s)| (k.clone(), s.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut items = Vec::new();
        for (k, s) in keys {
            items.push(self.present(&s.value));
            if !dry_run {
                store::commit_delete(&mut state, self.app.store.broadcast(), self.def(), &k);
            }
        }
        let list = json!({
            "kind": self.def().list_kind(),
            "apiVersion": self.def().api_version(),
            "metadata": {"resourceVersion": state.rv.to_string()},
            "items": items
        });
        Ok(json_reply(200, &list, vec![]))
    }
}

fn rv_of(v: &Value) -> String {
    v.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn set_rv(v: &mut Value, rv: &str) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), json!(rv));
    }
}

fn generate_name(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let has_name = meta
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if has_name {
        return;
    }
    if let Some(prefix) = meta
        .get("generateName")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let bytes = uuid::Uuid::new_v4().into_bytes();
        let suffix: String = bytes
            .iter()
            .take(5)
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect();
        meta.insert("name".into(), json!(format!("{prefix}{suffix}")));
    }
}

/// DNS-1123 checks as `ValidateObjectMeta` does (subdomain; label for namespaces).
fn name_problem(def: &ResourceDef, name: &str) -> Option<String> {
    let label_re = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
            && s.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric)
    };
    if def.plural == "namespaces" && def.group.is_empty() {
        if !label_re(name) {
            return Some("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into());
        }
        return None;
    }
    if name.len() > 253 || !name.split('.').all(label_re) {
        return Some("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
    }
    None
}

/// `PrepareForCreate` + `FillObjectMetaSystemFields`.
fn prepare_create(def: &ResourceDef, obj: &mut Value) {
    if def.is_crd && def.status_subresource {
        if let Some(map) = obj.as_object_mut() {
            map.remove("status");
        }
    }
    if def.plural == "namespaces" && def.group.is_empty() {
        obj["status"] = json!({"phase": "Active"});
        if obj.get("spec").is_none() {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
        }
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("managedFields");
        if def.is_crd {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        if def.plural == "namespaces" && def.group.is_empty() {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            labels["kubernetes.io/metadata.name"] = json!(name);
        }
    }
}

fn without_meta_and_status(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    v
}

/// `PrepareForUpdate` of the main resource or of the status subresource.
fn prepare_update(def: &ResourceDef, subresource: &str, obj: &mut Value, old: &Value) {
    if subresource == "status" {
        let status = obj.get("status").cloned();
        let rv = rv_of(obj);
        let mut next = old.clone();
        if let Some(map) = next.as_object_mut() {
            match status {
                Some(s) => {
                    map.insert("status".into(), s);
                }
                None => {
                    map.remove("status");
                }
            }
        }
        set_rv(&mut next, &rv);
        *obj = next;
        return;
    }
    if def.status_subresource {
        if let Some(map) = obj.as_object_mut() {
            match old.get("status") {
                Some(s) => {
                    map.insert("status".into(), s.clone());
                }
                None => {
                    map.remove("status");
                }
            }
        }
    }
    let spec_changed = without_meta_and_status(obj) != without_meta_and_status(old);
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match old.pointer(&format!("/metadata/{field}")) {
                Some(v) => {
                    meta.insert(field.into(), v.clone());
                }
                None => {
                    meta.remove(field);
                }
            }
        }
        meta.remove("managedFields");
        if def.is_crd {
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta.insert(
                "generation".into(),
                json!(if spec_changed {
                    generation + 1
                } else {
                    generation
                }),
            );
        }
    }
}

/// Apply a JSON patch / merge patch / (core types only) strategic merge patch / apply patch.
fn apply_patch(patch_type: &str, obj: &mut Value, body: &Bytes) -> Result<(), ApiError> {
    match patch_type {
        "application/json-patch+json" => {
            let raw: Value =
                serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            if !raw.is_array() {
                return Err(ApiError::bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
                ));
            }
            let patch: json_patch::Patch =
                serde_json::from_value(raw).map_err(|e| ApiError::bad_request(e.to_string()))?;
            if patch.0.len() > 10_000 {
                return Err(ApiError::new(
                    413,
                    "RequestEntityTooLarge",
                    format!(
                        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got {}",
                        patch.0.len()
                    ),
                    None,
                ));
            }
            json_patch::patch(obj, &patch).map_err(|_| ApiError::patch_not_applicable())
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            let patch: Value =
                serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("Invalid JSON Patch"));
            }
            json_patch::merge(obj, &patch);
            Ok(())
        }
        "application/apply-patch+yaml" => {
            let patch: Value = serde_saphyr::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("error decoding YAML: not an object"));
            }
            json_patch::merge(obj, &patch);
            Ok(())
        }
        _ => Err(ApiError::unsupported_media_type(&[patch_type])),
    }
}
