//! Admission logic for ClusterPromotion, shared by the webhook (which enforces it) and the plugin
//! (which predicts it, e.g. `diff` shows which approvals the webhook will reset).
//!
//! Everything here works on the raw JSON of the request objects, never on a typed round trip, so
//! that a patch addresses exactly what the client sent. The `_tree` functions take the borrowed
//! trees the webhook parses requests into ([`crate::tree`]); the others take `serde_json::Value`s
//! and convert. Nothing here does I/O or reads the clock:
//! the caller passes `now`, which makes every function deterministic.
//!
//! Three concerns live here:
//! - [`plan_mutation`]: what the mutating webhook changes (approvals consumed or invalidated by a
//!   new rollout are removed; audit annotations record who approved and who changed the rollout);
//! - [`check_audit_integrity`]: audit annotations may only change the way [`plan_mutation`]
//!   changes them, for the user making the request; anything else is a forgery;
//! - [`check_governance`]: who may approve (approver groups, four eyes) and who may revoke an
//!   approval, with the rules as the install publishes them ([`PublishedGovernance`]).
//!
//! [`used_approvals`] is the record of whose approval the controller used to pass a gate, which
//! only the controller may write.

mod audit;
mod gates;
mod governance;
mod integrity;
mod mutation;
mod published;
mod removed;
#[cfg(test)]
mod test_support;
pub mod used_approvals;

pub use audit::{
    approval_records, credited, recorded_for_another_rollout, reset_flip_records,
    spec_change_record, ApprovalRecord, AuditParseError, RemovalHow, RemovalRecord,
    ResetFlipRecord, SpecChangeRecord, StageRecords,
};
pub use gates::{is_deleting, newly_approved_stages};
pub use governance::{
    approver_refusals, check_governance, check_governance_tree, group_list, revoker_refusal,
    ApproverRefusal, GovernanceOutcome, GovernancePolicy, RevokerRefusal,
};
pub use integrity::{check_audit_integrity, check_audit_integrity_tree};
pub use k8s_openapi::api::authentication::v1::UserInfo;
pub use mutation::{plan_mutation, plan_mutation_tree, ApprovalReset, MutationPlan, ResetCause};
pub use published::{
    PublishedError, PublishedGovernance, APPROVER_GROUPS_KEY, FORBID_SELF_APPROVAL_KEY,
    GOVERNANCE_CONFIGMAP, GOVERNANCE_NAMESPACE,
};
pub use removed::{removed_approvals, removed_approvals_tree, RemovalCause, RemovedApproval};

use std::fmt;

use chrono::TimeDelta;
use serde::Serialize;

/// Every annotation under this prefix is written by the mutating webhook only.
pub const AUDIT_PREFIX: &str = "audit.kubectl-promotion.dev/";

/// JSON object: stage name → [`ApprovalRecord`] of the last time that stage's `approved` was
/// turned on (or withdrawn with `approved: false`, [`ApprovalRecord::revoked`], keeping the
/// record of the approval withdrawn), marked with who took the approval away otherwise
/// ([`ApprovalRecord::removed`]).
pub const APPROVALS_ANNOTATION: &str = "audit.kubectl-promotion.dev/approvals";

/// JSON [`SpecChangeRecord`] of the last request that changed `spec.profileSpec`.
pub const SPEC_CHANGE_ANNOTATION: &str = "audit.kubectl-promotion.dev/spec-change";

/// JSON object: stage name → [`ResetFlipRecord`] of the last write that turned the stage's
/// `automaticReset` from `false` to `true` (or left it out).
pub const RESET_FLIPS_ANNOTATION: &str = "audit.kubectl-promotion.dev/automatic-reset-flips";

/// Request annotation through which a client (`kubectl promotion approve --reason`) passes the
/// reason for an approval. The mutation moves it into the approval record and removes it.
pub const APPROVAL_REASON_ANNOTATION: &str = "kubectl-promotion.dev/approval-reason";

/// Request annotation through which a client (`kubectl promotion undo`) says that its spec
/// change sets the spec back to this revision of the rollout history (its number, e.g. `"3"`).
/// The mutation moves it into the spec-change record ([`SpecChangeRecord::restored_revision`])
/// and removes it; on a request that starts no new rollout it is removed with a warning, as a
/// stray approval reason is.
pub const UNDO_ANNOTATION: &str = "kubectl-promotion.dev/undo-to";

/// Longer reasons are cut (with a warning): the whole annotation map of an object is limited to
/// 256 KiB by the API server, and the record is kept per stage.
pub const MAX_REASON_CHARS: usize = 1024;

/// How far an audit record's time may be from the request time and still be this request's own
/// record. Covers clock skew between webhook replicas (mutating on one, validating on another).
pub const CLOCK_SKEW_TOLERANCE: TimeDelta = TimeDelta::minutes(5);

/// A request that breaks an admission rule, with the field it concerns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Stable identifier, e.g. `audit-forged`, `approver-not-in-group`, `self-approval`.
    pub code: &'static str,
    /// Field path as the API server writes it, e.g. `spec.stages[1].trigger.manual.approved` or
    /// `metadata.annotations[audit.kubectl-promotion.dev/approvals]`.
    pub path: String,
    pub message: String,
}

impl Violation {
    pub(crate) fn new(
        code: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Violation {
            code,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Field path of an annotation, in the bracket form the API server uses for map keys.
pub fn annotation_path(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

/// Field path of a stage's `approved` flag.
pub fn approved_path(index: usize) -> String {
    format!("spec.stages[{index}].trigger.manual.approved")
}

pub(crate) fn username(user: &UserInfo) -> &str {
    user.username.as_deref().unwrap_or("")
}

pub(crate) fn groups(user: &UserInfo) -> &[String] {
    user.groups.as_deref().unwrap_or(&[])
}
