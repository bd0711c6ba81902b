//! `SelfSubjectAccessReview` (`authorization.k8s.io/v1`), as kube-apiserver's
//! `registry/authorization/selfsubjectaccessreview` answers it: the requester's own question is
//! put to the same authorizer that guards every request, and the review comes back with
//! `status.allowed`; nothing is stored. `kubectl auth can-i` is built on it.

use serde_json::{json, Value};

use super::auth::{Attributes, Decision, UserInfo};
use super::status::{go_quote, ApiError, FieldError};

pub const GROUP: &str = "authorization.k8s.io";

/// The review `body` asks about, answered for `user` by `decide`; `Err` is the 422 of
/// `ValidateSelfSubjectAccessReview`.
pub fn self_subject_access_review(
    body: &Value,
    user: &UserInfo,
    decide: &dyn Fn(&Attributes) -> Decision,
) -> Result<Value, ApiError> {
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let attributes = attributes(&spec, user)?;
    let mut status = json!({"allowed": false});
    match decide(&attributes) {
        Decision::Allow => status["allowed"] = json!(true),
        Decision::Deny(Some(reason)) if !reason.is_empty() => status["reason"] = json!(reason),
        Decision::Deny(_) => {}
    }
    Ok(json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    }))
}

/// `ResourceAttributesFrom` / `NonResourceAttributesFrom`, after the spec check: exactly one of
/// the two attribute sets.
fn attributes(spec: &Value, user: &UserInfo) -> Result<Attributes, ApiError> {
    let present = |key: &str| spec.get(key).filter(|v| v.is_object());
    let invalid = |error: FieldError| ApiError::invalid(GROUP, "", "", &[error]);
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match (
        present("resourceAttributes"),
        present("nonResourceAttributes"),
    ) {
        (Some(r), None) => Ok(Attributes {
            user: user.clone(),
            verb: text(r, "verb"),
            api_group: text(r, "group"),
            api_version: text(r, "version"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            namespace: text(r, "namespace"),
            name: text(r, "name"),
            resource_request: true,
            path: String::new(),
        }),
        (None, Some(n)) => Ok(Attributes {
            user: user.clone(),
            verb: text(n, "verb"),
            api_group: String::new(),
            api_version: String::new(),
            resource: String::new(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            resource_request: false,
            path: text(n, "path"),
        }),
        (Some(_), Some(n)) => Err(invalid(FieldError::invalid(
            "spec.nonResourceAttributes",
            format!(
                "authorization.NonResourceAttributes{{Path:{}, Verb:{}}}",
                go_quote(&text(n, "path")),
                go_quote(&text(n, "verb"))
            ),
            "cannot be specified in combination with resourceAttributes",
        ))),
        (None, None) => Err(invalid(FieldError::invalid(
            "spec.resourceAttributes",
            "\"null\"".into(),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only_pods(a: &Attributes) -> Decision {
        if a.resource_request && a.resource == "pods" && a.verb == "get" {
            Decision::Allow
        } else {
            Decision::Deny(None)
        }
    }

    #[test]
    fn answers_with_the_authorizer_decision_and_echoes_the_spec() {
        let user = UserInfo::new("alice", &["devs"]);
        let review = json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}});
        let answer = self_subject_access_review(&review, &user, &only_pods).expect("valid");
        assert_eq!(answer["status"], json!({"allowed": true}));
        assert_eq!(answer["spec"], review["spec"]);
        assert_eq!(answer["kind"], "SelfSubjectAccessReview");

        let review =
            json!({"spec": {"resourceAttributes": {"verb": "delete", "resource": "pods"}}});
        let answer = self_subject_access_review(&review, &user, &only_pods).expect("valid");
        assert_eq!(answer["status"], json!({"allowed": false}));

        let review =
            json!({"spec": {"nonResourceAttributes": {"path": "/version", "verb": "get"}}});
        let answer = self_subject_access_review(&review, &user, &|a| {
            Decision::Deny(Some(format!("no {}", a.path)))
        })
        .expect("valid");
        assert_eq!(
            answer["status"],
            json!({"allowed": false, "reason": "no /version"})
        );
    }

    #[test]
    fn exactly_one_attribute_set_as_the_real_validation_words_it() {
        let user = UserInfo::new("alice", &[]);
        let err = self_subject_access_review(&json!({"spec": {}}), &user, &only_pods)
            .expect_err("neither");
        assert_eq!(
            err.message(),
            ".authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
        );
        let both = json!({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}});
        let err = self_subject_access_review(&both, &user, &only_pods).expect_err("both");
        assert_eq!(
            err.message(),
            ".authorization.k8s.io \"\" is invalid: spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:\"/x\", Verb:\"get\"}: cannot be specified in combination with resourceAttributes"
        );
    }
}
