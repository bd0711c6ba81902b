//! From request bytes to response bytes, without I/O: decode the AdmissionReview, decide, and
//! encode the answer. The decisions themselves live in `promotion_shared` (validation engine and
//! admission logic); this module applies them to the admission protocol.

mod messages;

pub use messages::warning_lines;

use chrono::{DateTime, SubsecRound, Utc};
use kube_core::admission::{AdmissionResponse, Operation};
use promotion_shared::admission::{
    check_audit_integrity, check_governance, is_deleting, plan_mutation, GovernancePolicy,
    UserInfo, Violation,
};
use promotion_shared::model::{GROUP, PLURAL, VERSION};
use promotion_shared::validation::{self, Finding};
use serde_json::Value;

use crate::api::wire::{self, DecodeError, Request};
use crate::metrics::{Endpoint, Verdict};
use messages::{denial, Denial, Problem};

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

#[derive(Clone, Debug, Default)]
pub struct Evaluator {
    policy: GovernancePolicy,
}

/// Which objects a request carries, once it is known to concern this webhook.
struct Objects<'a> {
    old: Option<&'a Value>,
    new: &'a Value,
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
        Evaluator { policy }
    }

    /// Answer one AdmissionReview body. `now` stamps audit records (seconds are kept, as
    /// Kubernetes times have second resolution).
    pub fn review(
        &self,
        endpoint: Endpoint,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Review, DecodeError> {
        let request = wire::decode(body)?;
        let now = now.trunc_subsecs(0);
        let response = match endpoint {
            Endpoint::Validate => self.validate(&request, now),
            Endpoint::Mutate => self.mutate(&request, now),
        };
        let summary = Summary {
            uid: request.uid.clone(),
            operation: wire::operation_name(&request.operation),
            name: object_name(&request),
            user: request.user_info.username.clone().unwrap_or_default(),
            allowed: response.allowed,
            code: if response.allowed {
                0
            } else {
                response.result.code
            },
            patched: response.allowed && response.patch.is_some(),
            dry_run: request.dry_run,
            warnings: response.warnings.as_ref().map_or(0, Vec::len),
        };
        Ok(Review {
            body: wire::encode(&response),
            summary,
        })
    }

    fn validate(&self, request: &Request, now: DateTime<Utc>) -> AdmissionResponse {
        let response = AdmissionResponse::from(request);
        let objects = match scope(request) {
            Scope::Pass => return response,
            Scope::Malformed(message) => return malformed(response, message),
            Scope::Judge(objects) => objects,
        };
        let user = &request.user_info;
        let findings = match objects.old {
            None => validation::validate(objects.new),
            Some(old) => validation::validate_update(old, objects.new),
        };
        let integrity = check_audit_integrity(objects.old, objects.new, user, now);
        let governance = check_governance(objects.old, objects.new, user, &self.policy);

        let mut warnings: Vec<String> = findings
            .iter()
            .filter(|f| !f.is_error())
            .flat_map(|f| warning_lines(&format!("{}: {}", f.path, f.message)))
            .collect();
        warnings.extend(governance.warnings.iter().flat_map(|w| warning_lines(w)));

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
        let name = object_name(request);
        let response = with_warnings(response, warnings);
        if !forbidden.is_empty() {
            // Report the validation errors too, so one round trip shows everything.
            let problems: Vec<Problem> = forbidden.into_iter().chain(invalid).collect();
            return deny(response, denial(Denial::Forbidden, &name, &problems));
        }
        if !invalid.is_empty() {
            return deny(response, denial(Denial::Invalid, &name, &invalid));
        }
        response
    }

    fn mutate(&self, request: &Request, now: DateTime<Utc>) -> AdmissionResponse {
        let response = AdmissionResponse::from(request);
        let objects = match scope(request) {
            Scope::Pass => return response,
            Scope::Malformed(message) => return malformed(response, message),
            Scope::Judge(objects) => objects,
        };
        let user: &UserInfo = &request.user_info;
        // Refuse forged audit records here already: the mutation would otherwise build on them.
        let forged = check_audit_integrity(objects.old, objects.new, user, now);
        if !forged.is_empty() {
            let problems: Vec<Problem> = forged.iter().map(forbidden_problem).collect();
            return deny(
                response,
                denial(Denial::Forbidden, &object_name(request), &problems),
            );
        }
        let plan = plan_mutation(objects.old, objects.new, user, now);
        let warnings = plan
            .warnings
            .iter()
            .flat_map(|w| warning_lines(w))
            .collect();
        let response = with_warnings(response, warnings);
        if plan.is_empty() {
            return response;
        }
        match response.clone().with_patch(plan.patch) {
            Ok(patched) => patched,
            Err(e) => {
                let mut status = kube_core::Status::failure(&e.to_string(), "InternalError");
                status.code = 500;
                deny(response, status)
            }
        }
    }
}

fn scope(request: &Request) -> Scope<'_> {
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
    let new = match (&request.operation, &request.object) {
        (Operation::Create | Operation::Update, Some(object)) => &object.value,
        (Operation::Create | Operation::Update, None) => {
            return Scope::Malformed(format!(
                "request.object is missing from a {} request",
                wire::operation_name(&request.operation)
            ))
        }
        _ => return Scope::Pass,
    };
    let old = match (&request.operation, &request.old_object) {
        (Operation::Update, Some(old)) => Some(&old.value),
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

fn object_name(request: &Request) -> String {
    request
        .object
        .as_ref()
        .or(request.old_object.as_ref())
        .and_then(|o| o.value.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| request.name.clone())
}

fn invalid_problem(finding: &Finding) -> Problem {
    Problem {
        path: finding.path.clone(),
        message: finding.message.clone(),
        reason: "FieldValueInvalid",
    }
}

fn forbidden_problem(violation: &Violation) -> Problem {
    Problem {
        path: violation.path.clone(),
        message: violation.message.clone(),
        reason: "FieldValueForbidden",
    }
}

fn with_warnings(mut response: AdmissionResponse, warnings: Vec<String>) -> AdmissionResponse {
    if !warnings.is_empty() {
        response.warnings = Some(warnings);
    }
    response
}

fn deny(response: AdmissionResponse, status: kube_core::Status) -> AdmissionResponse {
    let mut response = response.deny(&status.message);
    response.result = status;
    response
}

fn malformed(response: AdmissionResponse, message: String) -> AdmissionResponse {
    let mut status = kube_core::Status::failure(&message, "BadRequest");
    status.code = 400;
    deny(response, status)
}
