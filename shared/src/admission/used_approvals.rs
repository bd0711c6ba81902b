//! Which approval promotion-controller used to pass each manual gate, kept on the promotion so
//! that the history credits the person whose approval opened the gate.
//!
//! The webhook keeps one record per stage, of the last write that gave (or revoked) its approval
//! (`crate::admission::APPROVALS_ANNOTATION`). Between the controller's commit (`approved`
//! removed, [`crate::promoting`]) and its status write, the stage still shows as awaiting
//! approval, so a second approval can be given; its record replaces the first one's, and once the
//! status shows the stage past the gate the stage's record names the second approver, whose
//! approval opened nothing. So the commit ([`crate::patch::commit`]) also writes, in the same
//! guarded patch, this annotation: stage → the webhook's record of the approval it used, as
//! credited at the version it read ([`crate::admission::credited`]), or `null` when no record was
//! the approval's (given while the webhook was not called, or an install without it): who
//! approved is then unknown, and no name is put in its place. Entries of other stages are kept;
//! a stage's entry is replaced by the next use of its gate.
//!
//! Only the controller may write it: the webhook refuses anyone else's change to it
//! (`crate::admission`), as for the committed step.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{approval_records, credited, ApprovalRecord};
use crate::rollout::{self, RolloutId};
use crate::tree::tree_of;

/// `metadata.annotations` key of the used approvals.
pub const USED_APPROVALS_ANNOTATION: &str =
    "promotion-controller.kubectl-promotion.dev/used-approvals";

/// The approval the controller used to pass a stage's gate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsedApproval {
    /// The webhook's record of the approval used, as it was when the controller read the
    /// promotion; `null` when no record was the approval's: who approved is unknown.
    #[serde(default)]
    pub approval: Option<ApprovalRecord>,
    /// The rollout the approval was used for (the spec's hashes when it was used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutId>,
    /// `metadata.generation` of the promotion as the controller read it when it used the
    /// approval; the commit's write produces the next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

impl UsedApproval {
    /// Whether `record` (a stage's approval record) was written after this use: a record whose
    /// generation is later than the one read, or, for records without generations, one that is
    /// not the record used. The commit removes the approval it uses, so any approval given since
    /// is another write with a record of its own.
    pub fn predates(&self, record: &ApprovalRecord) -> bool {
        match (record.generation, self.generation) {
            (Some(written), Some(read)) => written > read,
            _ => self.approval.as_ref().is_some_and(|used| used != record),
        }
    }
}

/// The used approvals of a promotion, by stage.
pub type UsedApprovals = BTreeMap<String, UsedApproval>;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("annotation {USED_APPROVALS_ANNOTATION} is not a valid record of used approvals: {0}")]
pub struct ParseError(pub String);

/// The used approvals recorded on `promotion` (empty when the annotation is absent), or why they
/// cannot be read.
pub fn recorded(promotion: &Value) -> Result<UsedApprovals, ParseError> {
    let Some(value) = promotion
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(USED_APPROVALS_ANNOTATION))
    else {
        return Ok(UsedApprovals::new());
    };
    let text = value
        .as_str()
        .ok_or_else(|| ParseError("annotation values are strings".into()))?;
    serde_json::from_str(text).map_err(|e| ParseError(e.to_string()))
}

/// The annotation's value.
pub fn to_annotation(used: &UsedApprovals) -> String {
    serde_json::to_string(used).unwrap_or_default()
}

/// The annotation a commit writes when it uses the approvals of `used` (indices in
/// `spec.stages`) of `promotion`, exactly as read, for `rollout` (`None`: the spec's): the
/// entries read, each used stage's replaced by the record credited for it. Entries that cannot
/// be read are not kept. `None` when nothing is used.
pub fn after_commit(
    promotion: &Value,
    used: &[usize],
    rollout: Option<&RolloutId>,
) -> Option<String> {
    let stages = promotion
        .pointer("/spec/stages")
        .and_then(Value::as_array)?;
    let names: Vec<&str> = used
        .iter()
        .filter_map(|&i| stages.get(i)?.get("name")?.as_str())
        .collect();
    if names.is_empty() {
        return None;
    }
    let generation = promotion
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let rollout = rollout
        .cloned()
        .or_else(|| rollout::identity(&tree_of(promotion)).ok().map(|i| i.id));
    // An unreadable record credits nobody.
    let records = approval_records(promotion).unwrap_or_default();
    let mut entries = recorded(promotion).unwrap_or_default();
    for name in names {
        let approval = records
            .get(name)
            .filter(|r| !r.revoked && credited(r, generation))
            .cloned();
        entries.insert(
            name.to_string(),
            UsedApproval {
                approval,
                rollout: rollout.clone(),
                generation,
            },
        );
    }
    Some(to_annotation(&entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::APPROVALS_ANNOTATION;
    use serde_json::json;

    fn record(user: &str, generation: i64) -> ApprovalRecord {
        ApprovalRecord {
            user: user.into(),
            groups: vec!["release-managers".into()],
            time: "2026-02-16T07:29:41Z".into(),
            reason: Some("dev soaked".into()),
            rollout: Some(id()),
            generation: Some(generation),
            revoked: false,
            superseded: false,
            revoked_approval: None,
            removed: None,
        }
    }

    fn id() -> RolloutId {
        RolloutId {
            stages_hash: "s".into(),
            profile_spec_hash: "p".into(),
        }
    }

    fn promotion(generation: i64, records: Value, used: Option<&str>) -> Value {
        let mut annotations = json!({ APPROVALS_ANNOTATION: records.to_string() });
        if let Some(used) = used {
            annotations[USED_APPROVALS_ANNOTATION] = json!(used);
        }
        json!({
            "metadata": {"name": "p", "generation": generation, "annotations": annotations},
            "spec": {"stages": [
                {"name": "dev", "trigger": {"manual": {"approved": true}}},
                {"name": "staging", "trigger": {"manual": {"approved": true}}},
                {"name": "prod"}
            ]}
        })
    }

    #[test]
    fn the_record_credited_at_the_version_read_is_kept_for_the_stage_used() {
        let alice = record("alice", 4);
        let read = promotion(4, json!({ "staging": alice }), None);
        let text = after_commit(&read, &[1], Some(&id())).expect("a use");
        let used = recorded(&json!({"metadata": {"annotations": {
            USED_APPROVALS_ANNOTATION: text}}}))
        .unwrap();
        assert_eq!(
            used,
            UsedApprovals::from([(
                "staging".to_string(),
                UsedApproval {
                    approval: Some(alice.clone()),
                    rollout: Some(id()),
                    generation: Some(4),
                }
            )])
        );
        // Nothing used, nothing written.
        assert_eq!(after_commit(&read, &[], Some(&id())), None);
    }

    #[test]
    fn an_approval_without_its_own_record_is_used_by_nobody_known() {
        // The record is of an earlier write (generation 2): the approval now set was given
        // without the webhook.
        let read = promotion(4, json!({ "staging": record("alice", 2) }), None);
        let text = after_commit(&read, &[1], Some(&id())).expect("a use");
        assert!(text.contains("\"approval\":null"), "{text}");
        let used = recorded(&json!({"metadata": {"annotations": {
            USED_APPROVALS_ANNOTATION: text}}}))
        .unwrap();
        assert_eq!(used["staging"].approval, None);
        // No records at all (an install without the webhook), or records that do not parse.
        for records in [json!({}), json!("not a map")] {
            let read = promotion(4, records, None);
            let text = after_commit(&read, &[1], Some(&id())).expect("a use");
            assert!(text.contains("\"approval\":null"), "{text}");
        }
    }

    #[test]
    fn other_stages_entries_are_kept_and_the_used_stage_replaced() {
        let earlier = UsedApprovals::from([
            (
                "dev".to_string(),
                UsedApproval {
                    approval: Some(record("carol", 1)),
                    rollout: Some(id()),
                    generation: Some(1),
                },
            ),
            (
                "staging".to_string(),
                UsedApproval {
                    approval: None,
                    rollout: None,
                    generation: Some(1),
                },
            ),
        ]);
        let read = promotion(
            6,
            json!({ "staging": record("alice", 6) }),
            Some(&to_annotation(&earlier)),
        );
        let text = after_commit(&read, &[1], None).expect("a use");
        let used = recorded(&json!({"metadata": {"annotations": {
            USED_APPROVALS_ANNOTATION: text}}}))
        .unwrap();
        assert_eq!(used["dev"], earlier["dev"]);
        assert_eq!(used["staging"].approval, Some(record("alice", 6)));
        assert_eq!(used["staging"].generation, Some(6));
        // No rollout given: the spec's, as the reconcile computes it.
        let spec = rollout::identity(&tree_of(&read)).unwrap().id;
        assert_eq!(used["staging"].rollout, Some(spec));
        // Entries that cannot be read are not kept.
        let garbage = promotion(6, json!({}), Some("{not json"));
        let text = after_commit(&garbage, &[1], None).expect("a use");
        let used = recorded(&json!({"metadata": {"annotations": {
            USED_APPROVALS_ANNOTATION: text}}}))
        .unwrap();
        assert_eq!(used.keys().collect::<Vec<_>>(), ["staging"]);
    }

    #[test]
    fn a_record_written_after_the_use_is_told_from_the_one_used() {
        let used = UsedApproval {
            approval: Some(record("alice", 4)),
            rollout: Some(id()),
            generation: Some(4),
        };
        assert!(!used.predates(&record("alice", 4)));
        // The commit produced generation 5; the next approval's write produces 6.
        assert!(used.predates(&record("bob", 6)));
        let unknown = UsedApproval {
            approval: None,
            ..used.clone()
        };
        assert!(unknown.predates(&record("bob", 6)));
        assert!(!unknown.predates(&record("mallory", 2)));
        // Records without generations (older webhooks): any other record is a later write.
        let legacy = |user: &str| ApprovalRecord {
            generation: None,
            ..record(user, 0)
        };
        let used = UsedApproval {
            approval: Some(legacy("alice")),
            ..used
        };
        assert!(!used.predates(&legacy("alice")));
        assert!(used.predates(&legacy("bob")));
        assert!(!unknown.predates(&legacy("bob")));
    }

    #[test]
    fn unreadable_annotations_are_errors_naming_the_key() {
        assert_eq!(recorded(&json!({})), Ok(UsedApprovals::new()));
        let bad = json!({"metadata": {"annotations": {USED_APPROVALS_ANNOTATION: "[1]"}}});
        let err = recorded(&bad).unwrap_err();
        assert!(err.to_string().contains(USED_APPROVALS_ANNOTATION), "{err}");
    }
}
