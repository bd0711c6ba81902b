//! Authentication (bearer tokens) and authorization (a hook tests set to turn chosen requests
//! into the real server's 403, with `responsewriters.Forbidden`'s message).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use serde_json::{json, Value};

use super::status::{go_quote, ApiError};

/// The group of `SelfSubjectReview`.
pub const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// `kubectl auth whoami`'s answer: the requester after authentication and impersonation.
pub fn self_subject_review(user: &UserInfo) -> serde_json::Value {
    let mut info = serde_json::json!({"username": user.username, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = user.uid.clone().into();
    }
    if !user.extra.is_empty() {
        info["extra"] = serde_json::json!(user.extra);
    }
    serde_json::json!({
        "kind": "SelfSubjectReview",
        "apiVersion": format!("{AUTHENTICATION_GROUP}/v1"),
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": info},
    })
}

/// Who a request runs as; becomes `userInfo` in AdmissionReviews.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn new(username: &str, groups: &[&str]) -> Self {
        UserInfo {
            username: username.to_string(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: BTreeMap::new(),
        }
    }

    /// `authentication.k8s.io/v1` UserInfo JSON.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"username": self.username});
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.groups.is_empty() {
            v["groups"] = json!(self.groups);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }

    fn with_authenticated(mut self) -> Self {
        if !self.groups.iter().any(|g| g == "system:authenticated") {
            self.groups.push("system:authenticated".into());
        }
        self
    }
}

/// What the authorizer is asked (`authorizer.Attributes`).
#[derive(Clone, Debug)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub resource_request: bool,
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Deny, with the optional reason the real server appends after `: `.
    Deny(Option<String>),
}

pub type Authorizer = Arc<dyn Fn(&Attributes) -> Decision + Send + Sync>;

/// A simple deny rule; `None` fields match anything.
#[derive(Clone, Debug, Default)]
pub struct DenyRule {
    pub user: Option<String>,
    pub verb: Option<String>,
    pub resource: Option<String>,
    pub subresource: Option<String>,
    pub name: Option<String>,
}

impl DenyRule {
    pub fn matches(&self, a: &Attributes) -> bool {
        let ok = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        ok(&self.user, &a.user.username)
            && ok(&self.verb, &a.verb)
            && ok(&self.resource, &a.resource)
            && ok(&self.subresource, &a.subresource)
            && ok(&self.name, &a.name)
    }
}

/// `forbiddenMessage` in `responsewriters/errors.go`.
pub fn forbidden(a: &Attributes, reason: Option<&str>) -> ApiError {
    let mut msg = if !a.resource_request {
        format!(
            "User {} cannot {} path {}",
            go_quote(&a.user.username),
            a.verb,
            go_quote(&a.path)
        )
    } else {
        let mut resource = a.resource.clone();
        if !a.subresource.is_empty() {
            resource = format!("{resource}/{}", a.subresource);
        }
        if a.namespace.is_empty() {
            format!(
                "User {} cannot {} resource {} in API group {} at the cluster scope",
                go_quote(&a.user.username),
                a.verb,
                go_quote(&resource),
                go_quote(&a.api_group)
            )
        } else {
            format!(
                "User {} cannot {} resource {} in API group {} in the namespace {}",
                go_quote(&a.user.username),
                a.verb,
                go_quote(&resource),
                go_quote(&a.api_group),
                go_quote(&a.namespace)
            )
        }
    };
    // The real server escapes what could look like HTML.
    msg = msg
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    if let Some(r) = reason.filter(|r| !r.is_empty()) {
        msg = format!("{msg}: {r}");
    }
    ApiError::forbidden(&a.api_group, &a.resource, &a.name, &msg)
}

/// Bearer token → user (with `system:authenticated`, as `AuthenticatedGroupAdder` adds it).
/// `Err` is the 401 to send. Impersonation comes after, in [`super::impersonation`].
pub fn authenticate(
    headers: &HeaderMap,
    tokens: &BTreeMap<String, UserInfo>,
) -> Result<UserInfo, ApiError> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
        .ok_or_else(ApiError::unauthorized)?;
    Ok(tokens
        .get(token)
        .cloned()
        .ok_or_else(ApiError::unauthorized)?
        .with_authenticated())
}
