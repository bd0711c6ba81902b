//! What a failed request's answer means, read the one way every binary reads it: from the
//! `Status` the API server returned — its `reason`, its `code` when the reason is not one the
//! client knows (as client-go's `ReasonForError` does), and `details.causes`. The message is for
//! people: nothing here decides from its words.
//!
//! Our admission webhook's denials carry causes of their own type ([`DENIED_INVALID`],
//! [`DENIED_FORBIDDEN`]), which the API server passes through unchanged
//! (`webhookerrors.ToStatusErr` only prefixes the message), so a denial by our webhook is told
//! apart from RBAC's 403 and from the CRD schema's 422 without parsing text. `kubectl` prints a
//! cause as `field: message`, never its type, so this changes nothing users read.

use kube_core::response::reason;
use kube_core::Status;

/// The prefix of the cause types our admission webhook writes.
pub const DENIAL_CAUSE_PREFIX: &str = "kubectl-promotion.dev/";
/// The cause type of a field our webhook finds invalid (in Kubernetes' words `FieldValueInvalid`).
pub const DENIED_INVALID: &str = "kubectl-promotion.dev/FieldValueInvalid";
/// The cause type of a change our webhook forbids this user (`FieldValueForbidden`).
pub const DENIED_FORBIDDEN: &str = "kubectl-promotion.dev/FieldValueForbidden";

/// What a failed request means for the one who sent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 409 `Conflict`: the object changed since it was read (a `resourceVersion` precondition
    /// failed, or a UID precondition of a delete): read again and decide again.
    Conflict,
    /// 409 `AlreadyExists`.
    AlreadyExists,
    /// 404: the object (or, for a list, the resource) does not exist.
    NotFound,
    /// 410 `Expired`/`Gone`: a watch or list continuation too old to serve.
    Expired,
    /// 401: the credentials were refused.
    Unauthorized,
    /// 403 from the authorizer (RBAC) or from another admission webhook.
    Forbidden,
    /// Our admission webhook refused the object ([`Denial`]).
    Denied(Denial),
    /// 400 or 422 from the API server (schema, CRD rules) or from another admission webhook.
    Invalid,
    /// The server could not handle it now (429, a timeout, 5xx — a webhook it could not call
    /// under `failurePolicy: Fail` included): the same request may succeed later.
    Unavailable,
    /// Anything else (415, 405, …): a request the server will never accept as sent.
    Other,
}

/// Why our webhook refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denial {
    /// The object breaks a rule Sveltos would fail on at runtime (422).
    Invalid,
    /// This user may not make this change: an audit record, governance (403).
    Forbidden,
}

/// Read a failed request's `Status`.
pub fn classify(status: &Status) -> Failure {
    if let Some(denial) = our_denial(status) {
        return Failure::Denied(denial);
    }
    // client-go's `ReasonForError` trusts a reason it knows; for the others the code decides.
    match status.reason.as_str() {
        reason::CONFLICT => return Failure::Conflict,
        reason::ALREADY_EXISTS => return Failure::AlreadyExists,
        reason::NOT_FOUND => return Failure::NotFound,
        reason::EXPIRED | reason::GONE => return Failure::Expired,
        reason::UNAUTHORIZED => return Failure::Unauthorized,
        reason::FORBIDDEN => return Failure::Forbidden,
        reason::INVALID | reason::BAD_REQUEST => return Failure::Invalid,
        reason::TOO_MANY_REQUESTS
        | reason::SERVER_TIMEOUT
        | reason::TIMEOUT
        | reason::INTERNAL_ERROR
        | reason::SERVICE_UNAVAILABLE
        | reason::STORAGE_READ_ERROR => return Failure::Unavailable,
        _ => {}
    }
    match status.code {
        409 => Failure::Conflict,
        404 => Failure::NotFound,
        410 => Failure::Expired,
        401 => Failure::Unauthorized,
        403 => Failure::Forbidden,
        400 | 422 => Failure::Invalid,
        429 | 500..=599 => Failure::Unavailable,
        _ => Failure::Other,
    }
}

/// A denial by our webhook: every cause of its own type (the API server adds none).
fn our_denial(status: &Status) -> Option<Denial> {
    let causes = &status.details.as_ref()?.causes;
    if causes.is_empty()
        || !causes
            .iter()
            .all(|c| c.reason.starts_with(DENIAL_CAUSE_PREFIX))
    {
        return None;
    }
    Some(if causes.iter().any(|c| c.reason == DENIED_FORBIDDEN) {
        Denial::Forbidden
    } else {
        Denial::Invalid
    })
}

impl Failure {
    /// Whether the same request may succeed later without anyone changing anything.
    pub fn is_transient(self) -> bool {
        matches!(self, Failure::Unavailable | Failure::Expired)
    }

    /// A short stable name: the label of the controller's error metric.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Conflict => "conflict",
            Failure::AlreadyExists => "already_exists",
            Failure::NotFound => "not_found",
            Failure::Expired => "expired",
            Failure::Unauthorized => "unauthorized",
            Failure::Forbidden => "forbidden",
            Failure::Denied(_) => "denied",
            Failure::Invalid => "invalid",
            Failure::Unavailable => "unavailable",
            Failure::Other => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_core::response::{StatusCause, StatusDetails};

    fn status(code: u16, reason: &str, causes: &[&str]) -> Status {
        let mut s = Status::failure("any words at all", reason).with_code(code);
        if !causes.is_empty() {
            s.details = Some(StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                retry_after_seconds: 0,
                causes: causes
                    .iter()
                    .map(|r| StatusCause {
                        reason: r.to_string(),
                        message: "m".into(),
                        field: "spec".into(),
                    })
                    .collect(),
            });
        }
        s
    }

    /// The answers the real kube-apiserver gives, each as the scenarios met them.
    #[test]
    fn each_answer_is_read_from_its_reason_code_and_causes() {
        let cases = [
            // A merge patch whose resourceVersion is stale.
            (status(409, "Conflict", &[]), Failure::Conflict),
            (status(409, "AlreadyExists", &[]), Failure::AlreadyExists),
            // A failed JSON-patch `test`: 422 Invalid with no cause at all.
            (status(422, "Invalid", &[]), Failure::Invalid),
            // The CRD's schema.
            (
                status(422, "Invalid", &["FieldValueInvalid"]),
                Failure::Invalid,
            ),
            (status(403, "Forbidden", &[]), Failure::Forbidden),
            (
                status(422, "Invalid", &[DENIED_INVALID]),
                Failure::Denied(Denial::Invalid),
            ),
            (
                status(403, "Forbidden", &[DENIED_FORBIDDEN, DENIED_INVALID]),
                Failure::Denied(Denial::Forbidden),
            ),
            // A webhook it could not call under failurePolicy: Fail.
            (status(500, "InternalError", &[""]), Failure::Unavailable),
            (status(429, "TooManyRequests", &[]), Failure::Unavailable),
            (status(410, "Expired", &[]), Failure::Expired),
            (status(404, "NotFound", &[]), Failure::NotFound),
            (status(401, "Unauthorized", &[]), Failure::Unauthorized),
            // A reason the client does not know: the code decides.
            (status(409, "SomethingNew", &[]), Failure::Conflict),
            (status(503, "", &[]), Failure::Unavailable),
            (status(415, "UnsupportedMediaType", &[]), Failure::Other),
            // Another webhook's causes are not ours, even mixed with ours.
            (
                status(403, "Forbidden", &[DENIED_FORBIDDEN, "FieldValueForbidden"]),
                Failure::Forbidden,
            ),
        ];
        for (s, want) in cases {
            assert_eq!(classify(&s), want, "{s:?}");
        }
    }

    #[test]
    fn the_message_decides_nothing() {
        let mut s = status(422, "Invalid", &[]);
        s.message = "the server rejected our request: test operation failed; \
                     admission webhook \"x\" denied the request"
            .into();
        assert_eq!(classify(&s), Failure::Invalid);
    }
}
