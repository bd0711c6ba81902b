//! The audit records kept in annotations under [`super::AUDIT_PREFIX`].

use std::collections::BTreeMap;

use super::{
    groups, username, UserInfo, APPROVALS_ANNOTATION, CLOCK_SKEW_TOLERANCE, RESET_FLIPS_ANNOTATION,
    SPEC_CHANGE_ANNOTATION,
};
use crate::rollout::RolloutId;
use crate::tree::{pointer, tree_of, Object, Tree};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Who turned a stage's approval on, when, and why; or, [`ApprovalRecord::revoked`], who
/// withdrew it. Fields added since the first version are optional, so records written before
/// them still parse.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRecord {
    pub user: String,
    #[serde(default)]
    pub groups: Vec<String>,
    /// RFC 3339, second resolution, UTC (`2026-02-16T07:29:41Z`).
    pub time: String,
    pub reason: Option<String>,
    /// The rollout the approval was given in (the spec's hashes at the time): an approval
    /// belongs to that rollout. Absent in records written before it was recorded.
    pub rollout: Option<RolloutId>,
    /// The `metadata.generation` the recorded write produced (1 on CREATE, the stored
    /// generation + 1 on an UPDATE, as turning `approved` on changes the spec); the webhook
    /// carries it forward through later spec changes it admits while the approval stays on. The
    /// record names the author of the approval now set only while it equals the object's
    /// generation ([`credited`]): a different one means a spec write the webhook did not record
    /// came since. Absent in records written before it was recorded.
    pub generation: Option<i64>,
    /// The write withdrew the approval (`kubectl promotion approve --revoke`) instead of giving it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub revoked: bool,
    /// An approval given after this record, by a write the webhook did not see (so with no
    /// record of its own), was in effect and has gone since: the webhook marks the record when it
    /// sees such an approval removed, so that the history credits nobody with it instead of this
    /// record's author.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// Of a revocation: the record of the approval it withdrew, when the stage's record was
    /// that approval's ([`credited`]); `None` when the approval had no record of its own (or the
    /// revocation was recorded before this was kept). Kept because the revocation's record
    /// replaces the approval's: without it, who had approved would be lost.
    pub revoked_approval: Option<Box<ApprovalRecord>>,
    /// The approval this record is about (or, [`ApprovalRecord::superseded`], the unrecorded one
    /// given after it) was taken away by a write that did not revoke it: who wrote it, when, and
    /// how it took the approval away. Absent while the approval is in effect, and in records
    /// written before this was kept.
    pub removed: Option<RemovalRecord>,
}

/// Who took an approval away without revoking it, when, and how: a write that left `approved`
/// out (a client-side `kubectl apply` of a manifest without it, say), that removed the stage, or
/// on which the webhook reset the approval (used, or a new rollout).
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemovalRecord {
    /// The user of the write.
    pub user: String,
    /// RFC 3339, second resolution, UTC.
    pub time: String,
    pub how: RemovalHow,
    /// For [`RemovalHow::Reset`]: why the webhook reset it, in the words of its warning
    /// ([`super::ResetCause::describe`]).
    pub detail: Option<String>,
}

/// How a write took an approval away ([`super::RemovalCause`], as recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RemovalHow {
    /// The write left `approved` out (setting it `false` is a revocation, recorded as one).
    Update,
    /// The write removed the stage from `spec.stages`.
    StageRemoved,
    /// The webhook reset it on that write: it had been used, or the write started a new rollout.
    Reset,
}

impl RemovalRecord {
    /// The record of `removal`, by `user` at `now`.
    pub(crate) fn for_request(
        removal: &super::RemovalCause,
        user: &UserInfo,
        now: DateTime<Utc>,
    ) -> Self {
        let (how, detail) = match removal {
            super::RemovalCause::Update => (RemovalHow::Update, None),
            super::RemovalCause::StageRemoved => (RemovalHow::StageRemoved, None),
            super::RemovalCause::Reset(cause) => (RemovalHow::Reset, Some(cause.describe())),
        };
        RemovalRecord {
            user: username(user).to_string(),
            time: format_time(now),
            how,
            detail,
        }
    }

    /// Could have been written by the mutation for this request, for `removal`.
    pub(crate) fn matches_request(
        &self,
        removal: &super::RemovalCause,
        user: &UserInfo,
        now: DateTime<Utc>,
    ) -> bool {
        let expected = RemovalRecord::for_request(removal, user, now);
        self.user == expected.user
            && self.how == expected.how
            && self.detail == expected.detail
            && is_current(&self.time, now)
    }
}

/// Whether `record` (a stage's approval record) is the record of the write that left the stage's
/// approval as it is in an object of `metadata.generation` `generation`: recorded at that very
/// generation, or, for a record written before generations were recorded, taken as before.
pub fn credited(record: &ApprovalRecord, generation: Option<i64>) -> bool {
    match record.generation {
        None => true,
        Some(recorded) => generation == Some(recorded),
    }
}

/// The rollout the approval now set on `stage` was recorded for, when that is not `current`: an
/// approval that resets automatically belongs to the rollout it was given in, and a new rollout
/// needs its own. Only a record that is the approval's own counts ([`credited`]: written by the
/// very write that left `approved` as it is, not revoked); an approval with no such record — given
/// while the webhook was not called, or on an install without it — is taken as given for the
/// rollout in the spec, as `approval::same_rollout` takes it. The webhook removes such approvals when a
/// new rollout starts; this is the reconciler's own check, for when the webhook was bypassed.
///
pub fn recorded_for_another_rollout(
    promotion: &serde_json::Value,
    stage: &str,
    current: &crate::rollout::RolloutId,
) -> Option<crate::rollout::RolloutId> {
    let generation = promotion
        .pointer("/metadata/generation")
        .and_then(serde_json::Value::as_i64);
    let record = approval_records(promotion).ok()?.remove(stage)?;
    if record.revoked || !credited(&record, generation) {
        return None;
    }
    record.rollout.filter(|r| r != current)
}

/// A stage's `automaticReset` went from `false` to `true` (or absent, which the CRD defaults to
/// `true`): who wrote it, when, and the approval the same write removed. Sveltos' own merge patch
/// of the whole `spec.stages` does this to every stage but the one it promotes from (upstream
/// defect D3), and a persistent approval is then reset like any other.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResetFlipRecord {
    pub user: String,
    /// RFC 3339, second resolution, UTC.
    pub time: String,
    /// The `metadata.generation` the write produced.
    pub generation: Option<i64>,
    /// The same write removed the stage's approval (the webhook reset it: with `automaticReset`
    /// true again, an approval already used is removed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval_removed: bool,
    /// The record of the approval it removed, when the record was that approval's
    /// ([`credited`]).
    pub approval: Option<ApprovalRecord>,
}

/// Who last changed `spec.profileSpec` (started a new rollout), and when.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecChangeRecord {
    pub user: String,
    /// RFC 3339, second resolution, UTC.
    pub time: String,
    /// The rollout the change started (the new spec's hashes). Absent in records written before
    /// it was recorded.
    pub rollout: Option<RolloutId>,
    /// The change set the spec back to this revision of the rollout history (`kubectl promotion
    /// undo`, through [`super::UNDO_ANNOTATION`]): the client's word, as an approval's reason
    /// is. Absent for any other change.
    #[serde(rename = "restoredRevision")]
    pub restored_revision: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("annotation {key} is not a valid audit record: {reason}")]
pub struct AuditParseError {
    pub key: &'static str,
    pub reason: String,
}

/// A per-stage audit annotation's records, by stage (empty when the annotation is absent), or
/// why they cannot be read.
pub type StageRecords<R> = Result<BTreeMap<String, R>, AuditParseError>;

/// The approval records of an object.
pub fn approval_records(object: &serde_json::Value) -> StageRecords<ApprovalRecord> {
    approval_records_in(&tree_of(object))
}

pub(crate) fn approval_records_in(object: &Tree) -> StageRecords<ApprovalRecord> {
    stage_records_in(object, APPROVALS_ANNOTATION)
}

/// The record of the last `profileSpec` change; `None` when the annotation is absent.
pub fn spec_change_record(
    object: &serde_json::Value,
) -> Result<Option<SpecChangeRecord>, AuditParseError> {
    spec_change_record_in(&tree_of(object))
}

pub(crate) fn spec_change_record_in(
    object: &Tree,
) -> Result<Option<SpecChangeRecord>, AuditParseError> {
    annotation(object, SPEC_CHANGE_ANNOTATION)
        .map(|value| parse(SPEC_CHANGE_ANNOTATION, value))
        .transpose()
}

/// An annotation users set to steer a rollout (pause, abort), and the record the webhook keeps of
/// the last request that set, changed or removed it: who, when, and what it left.
pub(crate) trait SteerRecord:
    Serialize + for<'de> Deserialize<'de> + Clone + PartialEq
{
    /// The annotation users set.
    const REQUEST: &'static str;
    /// The audit annotation the webhook writes.
    const RECORD: &'static str;
    /// What a request that changes it does, for refusals ("pauses nor resumes the promotion").
    const WHAT: &'static str;
    /// The record of a request by `user` at `time` that leaves the annotation at `request`
    /// (`None`: removed).
    fn for_request(request: Option<&str>, user: &str, time: String) -> Self;
    fn time(&self) -> &str;
}

impl SteerRecord for crate::pause::PauseRecord {
    const REQUEST: &'static str = crate::pause::PAUSED_ANNOTATION;
    const RECORD: &'static str = crate::pause::PAUSE_RECORD_ANNOTATION;
    const WHAT: &'static str = "pauses nor resumes the promotion";
    fn for_request(request: Option<&str>, user: &str, time: String) -> Self {
        crate::pause::PauseRecord {
            paused: request.is_some(),
            user: user.to_string(),
            time,
            reason: request.filter(|r| !r.is_empty()).map(String::from),
        }
    }
    fn time(&self) -> &str {
        &self.time
    }
}

impl SteerRecord for crate::abort::AbortRecord {
    const REQUEST: &'static str = crate::abort::ABORT_ANNOTATION;
    const RECORD: &'static str = crate::abort::ABORT_RECORD_ANNOTATION;
    const WHAT: &'static str = "aborts, rolls back nor retries the rollout";
    fn for_request(request: Option<&str>, user: &str, time: String) -> Self {
        crate::abort::AbortRecord {
            aborted: request.is_some(),
            user: user.to_string(),
            time,
            request: request.map(String::from),
        }
    }
    fn time(&self) -> &str {
        &self.time
    }
}

/// The steering record `R` of a parsed object.
pub(crate) fn steer_record_in<R: SteerRecord>(object: &Tree) -> Result<Option<R>, AuditParseError> {
    annotation(object, R::RECORD)
        .map(|value| parse(R::RECORD, value))
        .transpose()
}

/// The value of `R`'s request annotation in a parsed object (`None`: not set).
pub(crate) fn steer_request_in<'a, R: SteerRecord>(object: &'a Tree) -> Option<&'a str> {
    annotation(object, R::REQUEST).and_then(Tree::as_str)
}

/// Whether `record` could have been written by the mutation for a request by `user` at `now`
/// that leaves `R`'s annotation at `request`.
pub(crate) fn steer_record_matches<R: SteerRecord>(
    record: &R,
    request: Option<&str>,
    user: &UserInfo,
    now: DateTime<Utc>,
) -> bool {
    is_current(record.time(), now)
        && R::for_request(request, username(user), record.time().to_string()) == *record
}

/// The record the mutation writes for a request by `user` at `now` that leaves `R`'s annotation
/// at `request`.
pub(crate) fn steer_record_for<R: SteerRecord>(
    request: Option<&str>,
    user: &UserInfo,
    now: DateTime<Utc>,
) -> R {
    R::for_request(request, username(user), format_time(now))
}

/// The records of `automaticReset` flips.
pub fn reset_flip_records(object: &serde_json::Value) -> StageRecords<ResetFlipRecord> {
    reset_flip_records_in(&tree_of(object))
}

pub(crate) fn reset_flip_records_in(object: &Tree) -> StageRecords<ResetFlipRecord> {
    stage_records_in(object, RESET_FLIPS_ANNOTATION)
}

fn stage_records_in<R: for<'de> Deserialize<'de>>(
    object: &Tree,
    key: &'static str,
) -> StageRecords<R> {
    match annotation(object, key) {
        None => Ok(BTreeMap::new()),
        Some(value) => parse(key, value),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(
    key: &'static str,
    value: &Tree,
) -> Result<T, AuditParseError> {
    let text = value.as_str().ok_or_else(|| AuditParseError {
        key,
        reason: "annotation values are strings".to_string(),
    })?;
    serde_json::from_str(text).map_err(|e| AuditParseError {
        key,
        reason: e.to_string(),
    })
}

pub(crate) fn format_time(now: DateTime<Utc>) -> String {
    now.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The record's time is a valid RFC 3339 time close enough to `now` to be this request's.
pub(crate) fn is_current(time: &str, now: DateTime<Utc>) -> bool {
    DateTime::parse_from_rfc3339(time)
        .map(|t| (t.with_timezone(&Utc) - now).abs() <= CLOCK_SKEW_TOLERANCE)
        .unwrap_or(false)
}

impl ApprovalRecord {
    pub(crate) fn for_request(
        user: &UserInfo,
        now: DateTime<Utc>,
        reason: Option<String>,
        rollout: Option<RolloutId>,
        generation: Option<i64>,
    ) -> Self {
        ApprovalRecord {
            user: username(user).to_string(),
            groups: groups(user).to_vec(),
            time: format_time(now),
            reason,
            rollout,
            generation,
            revoked: false,
            superseded: false,
            revoked_approval: None,
            removed: None,
        }
    }

    /// Could have been written by the mutation for this request (reason aside, which is the
    /// client's to choose).
    pub(crate) fn matches_request(&self, user: &UserInfo, now: DateTime<Utc>) -> bool {
        self.user == username(user) && self.groups == groups(user) && is_current(&self.time, now)
    }
}

impl ResetFlipRecord {
    pub(crate) fn matches_request(&self, user: &UserInfo, now: DateTime<Utc>) -> bool {
        self.user == username(user) && is_current(&self.time, now)
    }
}

impl SpecChangeRecord {
    pub(crate) fn for_request(
        user: &UserInfo,
        now: DateTime<Utc>,
        rollout: Option<RolloutId>,
        restored_revision: Option<i64>,
    ) -> Self {
        SpecChangeRecord {
            user: username(user).to_string(),
            time: format_time(now),
            rollout,
            restored_revision,
        }
    }

    pub(crate) fn matches_request(&self, user: &UserInfo, now: DateTime<Utc>) -> bool {
        self.user == username(user) && is_current(&self.time, now)
    }
}

/// `metadata.annotations`, where the audit records live.
pub(crate) fn annotations<'a, 'ctx>(object: &'a Tree<'ctx>) -> Option<&'a Object<'ctx>> {
    pointer(object, "/metadata/annotations")?.as_object()
}

pub(crate) fn annotation<'a, 'ctx>(object: &'a Tree<'ctx>, key: &str) -> Option<&'a Tree<'ctx>> {
    annotations(object)?.get(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::test_support;
    use chrono::TimeZone;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 2, 16, 7, 29, 41).unwrap()
    }

    #[test]
    fn records_round_trip_through_annotations() {
        let user = test_support::user("alice", &["ops"]);
        let rollout = RolloutId {
            stages_hash: "s".into(),
            profile_spec_hash: "p".into(),
        };
        let record = ApprovalRecord::for_request(
            &user,
            now(),
            Some("CAB-12".into()),
            Some(rollout),
            Some(3),
        );
        assert_eq!(record.time, "2026-02-16T07:29:41Z");
        let text = serde_json::to_string(&BTreeMap::from([("staging", &record)])).unwrap();
        let object = json!({"metadata": {"annotations": {APPROVALS_ANNOTATION: text}}});
        let records = approval_records(&object).unwrap();
        assert_eq!(records["staging"], record);
        assert!(record.matches_request(&user, now()));
        assert!(!record.matches_request(&user, now() + chrono::TimeDelta::minutes(6)));
        assert!(credited(&record, Some(3)));
        assert!(!credited(&record, Some(4)));
        let legacy = ApprovalRecord {
            generation: None,
            ..record
        };
        assert!(credited(&legacy, Some(4)));
    }

    #[test]
    fn records_written_before_the_new_fields_still_parse() {
        // A revocation as recorded before it kept the approval it withdrew, and an approval
        // before removals were recorded.
        let old = r#"{"staging":{"user":"bob","groups":[],"time":"2026-02-16T07:29:41Z","revoked":true},
                      "prod":{"user":"alice","time":"2026-02-16T07:00:00Z","generation":3}}"#;
        let object = json!({"metadata": {"annotations": {APPROVALS_ANNOTATION: old}}});
        let records = approval_records(&object).unwrap();
        assert!(records["staging"].revoked);
        assert_eq!(records["staging"].revoked_approval, None);
        assert_eq!(
            (
                records["prod"].removed.as_ref(),
                records["prod"].groups.len()
            ),
            (None, 0)
        );
        // The new fields, as they are written: camelCase, left out when empty.
        let revocation = ApprovalRecord {
            revoked: true,
            revoked_approval: Some(Box::new(records["prod"].clone())),
            ..records["staging"].clone()
        };
        let text = serde_json::to_value(&revocation).unwrap();
        assert_eq!(text["revokedApproval"]["user"], "alice");
        assert!(text.get("removed").is_none(), "{text}");
        let removed = ApprovalRecord {
            removed: Some(RemovalRecord {
                user: "carol".into(),
                time: "2026-02-16T08:00:00Z".into(),
                how: RemovalHow::StageRemoved,
                detail: None,
            }),
            ..records["prod"].clone()
        };
        let text = serde_json::to_value(&removed).unwrap();
        assert_eq!(
            text["removed"],
            json!({"user": "carol", "time": "2026-02-16T08:00:00Z", "how": "stageRemoved"})
        );
        assert_eq!(
            serde_json::from_value::<ApprovalRecord>(text).unwrap(),
            removed
        );
    }

    #[test]
    fn malformed_records_are_errors_naming_the_key() {
        let object = json!({"metadata": {"annotations": {SPEC_CHANGE_ANNOTATION: "{not json"}}});
        let err = spec_change_record(&object).unwrap_err();
        assert_eq!(err.key, SPEC_CHANGE_ANNOTATION);
        assert!(err.to_string().contains(SPEC_CHANGE_ANNOTATION));
        assert_eq!(spec_change_record(&json!({})).unwrap(), None);
        assert!(approval_records(&json!({})).unwrap().is_empty());
    }

    #[test]
    fn time_check_rejects_garbage_and_distance() {
        assert!(is_current("2026-02-16T07:30:41Z", now()));
        assert!(is_current("2026-02-16T08:29:41+01:00", now()));
        assert!(!is_current("2026-02-16T07:40:41Z", now()));
        assert!(!is_current("yesterday", now()));
    }
}
