//! From request bytes to response bytes, without I/O: decode the AdmissionReview ([`wire`], whose
//! objects are parsed by `request_objects`), decide, and encode the answer. The decisions
//! themselves live in `promotion_shared` (validation engine and admission logic); this module
//! applies them to the admission protocol, and `messages` words the answers.
//!
//! Used by the HTTP handlers in [`crate::api`] (through [`Evaluator::decode_if_cheap`] and
//! [`Evaluator::answer_cheap`] on the async task, [`Evaluator::review`] on a blocking thread:
//! `cost` tells them apart), by the fuzz
//! harness [`crate::fuzzing`] and by the load benchmark; it depends on nothing in `api`, so all
//! of it is testable without HTTP.

mod cost;
mod messages;
mod request_objects;
pub mod wire;

pub use cost::INLINE_MAX_BODY_BYTES;
pub use messages::warnings;

use std::sync::{Arc, PoisonError, RwLock};

use chrono::{DateTime, SubsecRound, Utc};
use kube_core::admission::Operation;
use kube_core::Status;
use promotion_shared::admission::{
    check_audit_integrity_tree, check_governance_tree, is_deleting, plan_mutation_tree,
    removed_approvals_tree, ApprovalReset, GovernancePolicy, RemovedApproval, Violation,
};
use promotion_shared::model::{GROUP, PLURAL, VERSION};
use promotion_shared::tree::{pointer, Tree};
use promotion_shared::validation::{self, Finding};

use crate::metrics::{Endpoint, Verdict};
use messages::{denial, Denial, Problem};
use wire::{Answer, DecodeError, Request};

/// What the access log and the metrics need to know about an answered review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub uid: String,
    pub operation: &'static str,
    pub name: String,
    pub user: String,
    pub allowed: bool,
    /// The denial's status code; 0 when allowed.
    pub code: u16,
    pub patched: bool,
    pub dry_run: bool,
    pub warnings: usize,
}

impl Summary {
    pub fn verdict(&self) -> Verdict {
        match (self.allowed, self.patched) {
            (false, _) => Verdict::Denied,
            (true, true) => Verdict::Patched,
            (true, false) => Verdict::Allowed,
        }
    }
}

/// An answered review: the response body and its summary.
pub struct Review {
    pub body: Vec<u8>,
    pub summary: Summary,
}

/// Clones share one policy (`serve --governance-dir` replaces it while reviews run) and one
/// record of the Lua and CEL texts judged so far.
#[derive(Clone, Debug, Default)]
pub struct Evaluator {
    policy: Arc<RwLock<Arc<GovernancePolicy>>>,
    judged: Arc<cost::JudgedTexts>,
}

/// A decoded review that is cheap to answer ([`Evaluator::decode_if_cheap`]), borrowing from
/// its body.
pub struct Cheap<'b> {
    endpoint: Endpoint,
    request: Request<'b>,
}

/// The objects of a write this webhook judges.
struct Objects<'a> {
    old: Option<&'a Tree<'a>>,
    new: &'a Tree<'a>,
}

enum Scope<'a> {
    /// Not a write this webhook judges (other resource, subresource, DELETE/CONNECT, or an
    /// object being deleted, whose finalizer removal must never be blocked).
    Pass,
    Judge(Objects<'a>),
    /// A CREATE/UPDATE without the object(s) the protocol requires.
    Malformed(String),
}

impl Evaluator {
    pub fn new(policy: GovernancePolicy) -> Self {
        Evaluator {
            policy: Arc::new(RwLock::new(Arc::new(policy))),
            judged: Arc::default(),
        }
    }

    /// The approver rules for reviews from now on (every clone of this evaluator).
    pub fn set_policy(&self, policy: GovernancePolicy) {
        *self.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
    }

    pub fn policy(&self) -> Arc<GovernancePolicy> {
        self.policy
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Answer one AdmissionReview body. `now` stamps audit records (seconds are kept, as
    /// Kubernetes times have second resolution).
    pub fn review(
        &self,
        endpoint: Endpoint,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Review, DecodeError> {
        let body = wire::go_surrogates(body);
        let request = wire::decode(&body)?;
        let review = self.answer(endpoint, &request, now);
        // From now on the engine's memo holds the verdicts on these texts: the same scripts in
        // the next review are cheap. (Only /validate judges them.)
        if let (Endpoint::Validate, Scope::Judge(objects)) = (endpoint, scope(&request)) {
            self.judged.remember(objects.new);
        }
        Ok(review)
    }

    /// Decode `body` if answering it is cheap ([`INLINE_MAX_BODY_BYTES`] at most, and nothing
    /// for the engine to parse that it has not judged before), for [`Evaluator::answer_cheap`].
    /// `Ok(None)`: expensive, to be answered by [`Evaluator::review`] on a thread that may block
    /// (which decodes it again, a small part of an expensive review). A body that does not
    /// decode is cheap to refuse: that is the error.
    pub fn decode_if_cheap<'b>(
        &self,
        endpoint: Endpoint,
        body: &'b [u8],
    ) -> Result<Option<Cheap<'b>>, DecodeError> {
        if body.len() > INLINE_MAX_BODY_BYTES {
            return Ok(None);
        }
        // A body with lone UTF-16 surrogate escapes is rewritten before decoding, into a buffer
        // the decoded review would borrow from; the API server never sends one (Go decodes a
        // lone surrogate to U+FFFD and encodes that), so such a rare body takes the general path.
        let std::borrow::Cow::Borrowed(body) = wire::go_surrogates(body) else {
            return Ok(None);
        };
        let request = wire::decode(body)?;
        let cheap = match (endpoint, scope(&request)) {
            (Endpoint::Validate, Scope::Judge(objects)) => self.judged.all_judged(objects.new),
            // Mutation, and reviews that are not judged, parse no Lua or CEL.
            _ => true,
        };
        Ok(cheap.then_some(Cheap { endpoint, request }))
    }

    /// Answer a review [`Evaluator::decode_if_cheap`] found cheap; `now` as for
    /// [`Evaluator::review`].
    pub fn answer_cheap(&self, cheap: Cheap<'_>, now: DateTime<Utc>) -> Review {
        self.answer(cheap.endpoint, &cheap.request, now)
    }

    fn answer(&self, endpoint: Endpoint, request: &Request, now: DateTime<Utc>) -> Review {
        let now = now.trunc_subsecs(0);
        let scope = scope(request);
        let name = object_name(request, &scope);
        let answer = match (scope, endpoint) {
            (Scope::Pass, _) => Answer::allow(&request.uid),
            (Scope::Malformed(message), _) => malformed(Answer::allow(&request.uid), message),
            (Scope::Judge(objects), Endpoint::Validate) => {
                self.validate(request, &objects, &name, now)
            }
            (Scope::Judge(objects), Endpoint::Mutate) => self.mutate(request, &objects, &name, now),
        };
        let summary = Summary {
            uid: request.uid.clone().into_owned(),
            operation: wire::operation_name(&request.operation),
            name,
            user: request.user_info.username.clone().unwrap_or_default(),
            allowed: answer.allowed,
            code: match &answer.status {
                Some(status) if !answer.allowed => status.code,
                _ => 0,
            },
            patched: answer.allowed && answer.patch.is_some(),
            dry_run: request.is_dry_run(),
            warnings: answer.warnings.len(),
        };
        Review {
            body: wire::encode(&answer),
            summary,
        }
    }

    fn validate(
        &self,
        request: &Request,
        objects: &Objects<'_>,
        name: &str,
        now: DateTime<Utc>,
    ) -> Answer {
        let (old, new) = (objects.old, objects.new);
        let user = &request.user_info;
        let findings = match old {
            None => validation::validate_tree(new),
            Some(old) => validation::validate_update_tree(old, new),
        };
        let integrity = check_audit_integrity_tree(old, new, user, now);
        let governance = check_governance_tree(old, new, user, &self.policy());

        let mut answer = Answer::allow(&request.uid);
        let texts: Vec<String> = findings
            .iter()
            .filter(|f| !f.is_error())
            .map(|finding| format!("{}: {}", finding.path, finding.message))
            .chain(governance.warnings.iter().cloned())
            .collect();
        answer.warnings = warnings(&texts);

        let forbidden: Vec<Problem> = integrity
            .iter()
            .chain(&governance.violations)
            .map(forbidden_problem)
            .collect();
        let invalid: Vec<Problem> = findings
            .iter()
            .filter(|f| f.is_error())
            .map(invalid_problem)
            .collect();
        if !forbidden.is_empty() {
            // Report the validation errors too, so one round trip shows everything.
            let problems: Vec<Problem> = forbidden.into_iter().chain(invalid).collect();
            return answer.deny(denial(Denial::Forbidden, name, &problems));
        }
        if !invalid.is_empty() {
            return answer.deny(denial(Denial::Invalid, name, &invalid));
        }
        answer
    }

    fn mutate(
        &self,
        request: &Request,
        objects: &Objects<'_>,
        name: &str,
        now: DateTime<Utc>,
    ) -> Answer {
        let (old, new) = (objects.old, objects.new);
        let user = &request.user_info;
        let mut answer = Answer::allow(&request.uid);
        // Refuse forged audit records here already: the mutation would otherwise build on them.
        let forged = check_audit_integrity_tree(old, new, user, now);
        if !forged.is_empty() {
            let problems: Vec<Problem> = forged.iter().map(forbidden_problem).collect();
            return answer.deny(denial(Denial::Forbidden, name, &problems));
        }
        let plan = plan_mutation_tree(old, new, user, now);
        // Every approval this request takes away gets one warning naming who had given it, the
        // mutation's own resets included: their plain wording in the plan is replaced by it.
        // (Only here: the validating webhook sees the mutated object and cannot tell who removed
        // what, and one warning per approval is enough.)
        let removed = old
            .map(|old| removed_approvals_tree(old, new))
            .unwrap_or_default();
        let resets: Vec<String> = plan
            .reset_approvals
            .iter()
            .map(ApprovalReset::warning)
            .collect();
        let texts: Vec<String> = removed
            .iter()
            .map(RemovedApproval::warning)
            .chain(
                plan.warnings
                    .iter()
                    .filter(|w| !resets.contains(w))
                    .cloned(),
            )
            .collect();
        answer.warnings = warnings(&texts);
        if plan.is_empty() {
            return answer;
        }
        match serde_json::to_vec(&plan.patch) {
            Ok(patch) => Answer {
                patch: Some(patch),
                ..answer
            },
            Err(e) => {
                let mut status =
                    Status::failure(&format!("cannot encode the patch: {e}"), "InternalError");
                status.code = 500;
                answer.deny(status)
            }
        }
    }
}

fn scope<'a>(request: &'a Request) -> Scope<'a> {
    let resource = &request.resource;
    let ours =
        resource.group == GROUP && resource.resource == PLURAL && resource.version == VERSION;
    if !ours
        || request
            .sub_resource
            .as_deref()
            .is_some_and(|s| !s.is_empty())
    {
        return Scope::Pass;
    }
    let operation = wire::operation_name(&request.operation);
    let new = match (&request.operation, &request.object) {
        (Operation::Create | Operation::Update, Some(object)) => object,
        (Operation::Create | Operation::Update, None) => {
            return Scope::Malformed(format!(
                "request.object is missing from a {operation} request"
            ))
        }
        _ => return Scope::Pass,
    };
    let old = match (&request.operation, &request.old_object) {
        (Operation::Update, Some(old)) => Some(old),
        (Operation::Update, None) => {
            return Scope::Malformed("request.oldObject is missing from an UPDATE request".into())
        }
        _ => None,
    };
    if is_deleting(new) {
        return Scope::Pass;
    }
    Scope::Judge(Objects { old, new })
}

/// The object's name for messages and logs: from the object being judged, else the request.
fn object_name(request: &Request, scope: &Scope) -> String {
    let from_object = match scope {
        Scope::Judge(objects) => pointer(objects.new, "/metadata/name").and_then(Tree::as_str),
        _ => None,
    };
    from_object
        .or(request.name.as_deref())
        .unwrap_or_default()
        .to_string()
}

fn invalid_problem(finding: &Finding) -> Problem {
    Problem {
        path: finding.path.clone(),
        message: finding.message.clone(),
        reason: promotion_shared::api_error::DENIED_INVALID,
    }
}

fn forbidden_problem(violation: &Violation) -> Problem {
    Problem {
        path: violation.path.clone(),
        message: violation.message.clone(),
        reason: promotion_shared::api_error::DENIED_FORBIDDEN,
    }
}

fn malformed(answer: Answer, message: String) -> Answer {
    let mut status = Status::failure(&message, "BadRequest");
    status.code = 400;
    answer.deny(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn body(operation: &str, object: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": GROUP, "version": VERSION, "kind": "ClusterPromotion"},
                "resource": {"group": GROUP, "version": VERSION, "resource": PLURAL},
                "operation": operation,
                "userInfo": {"username": "alice"},
                "object": object,
            }
        }))
        .unwrap()
    }

    fn with_script(script: &str) -> Value {
        json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
            "metadata": {"name": "p"},
            "spec": {"profileSpec": {"validateHealths": [
                {"name": "h", "featureID": "Helm", "group": "apps", "version": "v1",
                 "kind": "Deployment", "script": script}]},
             "stages": [{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}}]}})
    }

    fn cheap(evaluator: &Evaluator, endpoint: Endpoint, body: &[u8]) -> bool {
        evaluator
            .decode_if_cheap(endpoint, body)
            .expect("decodes")
            .is_some()
    }

    #[test]
    fn a_review_is_cheap_once_its_scripts_were_judged_and_answers_the_same_either_way() {
        let evaluator = Evaluator::default();
        let now = Utc::now();
        let review = body("CREATE", with_script("function evaluate() return {} end"));
        assert!(!cheap(&evaluator, Endpoint::Validate, &review));
        // Mutation parses no script.
        assert!(cheap(&evaluator, Endpoint::Mutate, &review));
        let general = evaluator.review(Endpoint::Validate, &review, now).unwrap();
        let cheap_review = evaluator
            .decode_if_cheap(Endpoint::Validate, &review)
            .unwrap()
            .expect("cheap once judged");
        let inline = evaluator.answer_cheap(cheap_review, now);
        assert_eq!(inline.body, general.body);
        assert_eq!(inline.summary, general.summary);
        // Clones share the record.
        assert!(cheap(&evaluator.clone(), Endpoint::Validate, &review));
    }

    #[test]
    fn large_bodies_and_bodies_with_lone_surrogates_take_the_general_path() {
        let evaluator = Evaluator::default();
        let mut object = with_script("x");
        object["metadata"]["annotations"] = json!({"pad": "x".repeat(INLINE_MAX_BODY_BYTES)});
        let large = body("CREATE", object);
        evaluator
            .review(Endpoint::Validate, &large, Utc::now())
            .unwrap();
        assert!(!cheap(&evaluator, Endpoint::Mutate, &large));

        let plain = String::from_utf8(body("DELETE", json!(null))).unwrap();
        assert!(cheap(&evaluator, Endpoint::Validate, plain.as_bytes()));
        let surrogate = plain.replace("\"u-1\"", "\"u-\\ud800\"");
        assert!(!cheap(&evaluator, Endpoint::Validate, surrogate.as_bytes()));
    }

    #[test]
    fn a_body_that_does_not_decode_is_refused_on_the_spot() {
        let evaluator = Evaluator::default();
        let err = evaluator
            .decode_if_cheap(Endpoint::Validate, b"{\"kind\": 5")
            .err()
            .expect("a decode error");
        let general = evaluator
            .review(Endpoint::Validate, b"{\"kind\": 5", Utc::now())
            .err()
            .expect("a decode error");
        assert_eq!(err, general);
    }
}
