//! `metav1.Status` error bodies, built the way `k8s.io/apimachinery/pkg/api/errors` builds them so
//! that clients (kubectl, kube-rs) classify them exactly as they classify the real server's.

use serde_json::{json, Map, Value};

/// An error answer: HTTP code plus the `metav1.Status` body the real server would send.
/// `plain_text` is for the few paths where the real server answers with Go's `http.NotFound`
/// (`404 page not found`) instead of a Status.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: u16,
    /// Boxed: a `Value` map is large and this travels in every `Result`.
    pub status: Box<Value>,
    pub plain_text: Option<String>,
    /// `Retry-After`-style hints are not needed; warnings raised before the failure still travel.
    pub warnings: Vec<String>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.plain_text {
            Some(text) => write!(f, "{} {}", self.code, text.trim_end()),
            None => write!(f, "{} {}", self.code, self.message()),
        }
    }
}

impl std::error::Error for ApiError {}

/// `<resource>.<group>`, or just `<resource>` for the core group (Go `GroupResource.String()`).
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

pub use crd_schema::{go_quote, go_value, FieldError, FieldErrorKind};

fn details(group: &str, kind: &str, name: &str) -> Value {
    let mut d = Map::new();
    if !name.is_empty() {
        d.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        d.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        d.insert("kind".into(), json!(kind));
    }
    Value::Object(d)
}

impl ApiError {
    pub fn new(
        code: u16,
        reason: &str,
        message: impl Into<String>,
        details: Option<Value>,
    ) -> Self {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(message.into()));
        if !reason.is_empty() {
            status.insert("reason".into(), json!(reason));
        }
        if let Some(d) = details {
            status.insert("details".into(), d);
        }
        status.insert("code".into(), json!(code));
        ApiError {
            code,
            status: Box::new(Value::Object(status)),
            plain_text: None,
            warnings: Vec::new(),
        }
    }

    /// A Status the server received from elsewhere (an admission webhook) and passes on.
    pub fn from_status(code: u16, status: Value) -> Self {
        ApiError {
            code,
            status: Box::new(status),
            plain_text: None,
            warnings: Vec::new(),
        }
    }

    pub fn message(&self) -> &str {
        self.status
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn reason(&self) -> &str {
        self.status
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }

    /// `errors.NewNotFound`: `clusterpromotions.config.projectsveltos.io "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!(
                "{} {} not found",
                qualified(group, resource),
                go_quote(name)
            ),
            Some(details(group, resource, name)),
        )
    }

    /// What the real server sends for a path nothing serves (for example the resource of a CRD
    /// that is not installed): Go's `http.NotFound`, plain text. Clients turn it into
    /// "the server could not find the requested resource".
    pub fn page_not_found() -> Self {
        ApiError {
            code: 404,
            status: Box::new(Value::Null),
            plain_text: Some("404 page not found\n".into()),
            warnings: Vec::new(),
        }
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} {} already exists",
                qualified(group, resource),
                go_quote(name)
            ),
            Some(details(group, resource, name)),
        )
    }

    /// `errors.NewConflict` with `OptimisticLockErrorMsg`.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict_with(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn conflict_with(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {}: {why}",
                qualified(group, resource),
                go_quote(name)
            ),
            Some(details(group, resource, name)),
        )
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized", None)
    }

    /// `responsewriters.Forbidden` + `errors.NewForbidden`.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = qualified(group, resource);
        let message = if resource.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {} is forbidden: {why}", go_quote(name))
        };
        Self::new(
            403,
            "Forbidden",
            message,
            Some(details(group, resource, name)),
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message, None)
    }

    /// `errors.NewGenericServerResponse(422, ...)` without resource: what a JSON patch that does
    /// not apply (a failed `test`, a missing path) gets from `patch.go`.
    pub fn patch_not_applicable() -> Self {
        Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            Some(json!({})),
        )
    }

    /// `errors.NewInvalid(GroupKind, name, field errors)`.
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let gk = qualified(group, kind);
        let aggregate = if errors.len() == 1 {
            errors[0].to_string()
        } else {
            format!(
                "[{}]",
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.kind.reason(), "message": e.body(), "field": e.field}))
            .collect();
        let mut d = details(group, kind, name);
        if let Value::Object(map) = &mut d {
            map.insert("causes".into(), Value::Array(causes));
        }
        Self::new(
            422,
            "Invalid",
            format!("{gk} {} is invalid: {aggregate}", go_quote(name)),
            Some(d),
        )
    }

    /// `negotiation.NewUnsupportedMediaTypeError`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    pub fn method_not_supported(group: &str, resource: &str, action: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{action} is not supported on resources of kind {}",
                go_quote(&qualified(group, resource))
            ),
            Some(details(group, resource, "")),
        )
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
            Some(json!({"causes": [{"message": message.to_string()}]})),
        )
    }

    /// `errors.NewResourceExpired`.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message, None)
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message, None)
    }
}
