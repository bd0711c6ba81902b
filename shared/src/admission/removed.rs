//! Approvals that an UPDATE takes away, each with the audit record of who had given it, so that
//! no approval vanishes silently.
//!
//! An approval can go three ways: the mutating webhook resets it ([`super::plan_mutation`]: it
//! has been used, or `spec.profileSpec` changed and the new rollout needs a new one), the request
//! turns `approved` off or leaves it out (a `kubectl apply` of a manifest without it, a merge
//! patch that replaces `spec.stages`), or the request removes the stage. An approval the webhook
//! would reset counts as reset even when the request already dropped it, so the answer is the
//! same when the webhook is called again on its own output (`reinvocationPolicy: IfNeeded`), and
//! the API server, which passes identical warnings on once, shows one warning per approval.
//!
//! [`removed_approvals`] lists every one of them once; the webhook warns with
//! [`RemovedApproval::warning`], and the plugin's `diff` can list the same consequences before
//! the request is sent.

use serde::Serialize;
use serde_json::Value;

use super::audit::{approval_records_in, credited};
use super::gates::{approval_used, gates, gates_by_name, generation, status_rollout, Gate};
use super::{is_deleting, ApprovalRecord, ResetCause};
use crate::approval::Used;
use crate::rollout::{self, Restart};
use crate::tree::{to_owned_value, tree_of, Tree};

/// How an approval is lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum RemovalCause {
    /// The mutating webhook resets it (see [`super::plan_mutation`]), or would have had the
    /// request kept it.
    Reset(ResetCause),
    /// The request sets `approved` to false or leaves it out.
    Update,
    /// The request removes the stage from `spec.stages`.
    StageRemoved,
}

/// One approval that the stored object has and the object after this request will not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemovedApproval {
    pub stage: String,
    /// Who gave the approval, when and why, from the stored object's
    /// [`APPROVALS_ANNOTATION`](super::APPROVALS_ANNOTATION). `None` when it has no readable
    /// record for the stage (approved before the webhook was installed, or the annotation is not
    /// valid), or its record is not the one of the write that set the approval (a write the
    /// webhook did not see came since: [`super::credited`]).
    pub record: Option<ApprovalRecord>,
    pub cause: RemovalCause,
}

impl RemovedApproval {
    /// One admission warning, e.g. `approval of stage "staging" (given by alice at
    /// 2026-03-01T12:00:00Z: "CAB-1") removed by this update`.
    pub fn warning(&self) -> String {
        let given = match &self.record {
            Some(record) => {
                let reason = record
                    .reason
                    .as_ref()
                    .map(|reason| format!(": {reason:?}"))
                    .unwrap_or_default();
                format!("given by {} at {}{reason}", record.user, record.time)
            }
            None => "no record of who gave it".to_string(),
        };
        let what = match &self.cause {
            RemovalCause::Reset(cause) => cause.describe(),
            RemovalCause::Update => "removed by this update".to_string(),
            RemovalCause::StageRemoved => {
                "removed with the stage, which this update takes out of spec.stages".to_string()
            }
        };
        format!("approval of stage {:?} ({given}) {what}", self.stage)
    }
}

/// Every approval `old` (the stored object) has that does not survive an UPDATE to `new` (the
/// request object), in the order of `old`'s stages, each stage once. The resets among them are
/// exactly the [`MutationPlan::reset_approvals`](super::MutationPlan::reset_approvals) of the
/// same request (a property test holds the two to it). Empty when `new` is not an object or is
/// being deleted, as the mutation plans nothing then.
pub fn removed_approvals(old: &Value, new: &Value) -> Vec<RemovedApproval> {
    removed_approvals_tree(&tree_of(old), &tree_of(new))
}

/// [`removed_approvals`] on parsed trees.
pub fn removed_approvals_tree(old: &Tree, new: &Tree) -> Vec<RemovedApproval> {
    if !new.is_object() || is_deleting(new) {
        return Vec::new();
    }
    let after = gates_by_name(new);
    let restart = rollout::restart(old, new);
    let mut lost: Vec<(&str, RemovalCause)> = Vec::new();
    for gate in gates(old).into_iter().filter(|g| g.approved) {
        if lost.iter().any(|(stage, _)| *stage == gate.name) {
            continue;
        }
        let Some(now) = after.get(gate.name) else {
            lost.push((gate.name, RemovalCause::StageRemoved));
            continue;
        };
        let cause = match reset_cause(old, now, restart.as_ref()) {
            Some(reset) => RemovalCause::Reset(reset),
            None if !now.approved => RemovalCause::Update,
            None => continue,
        };
        lost.push((gate.name, cause));
    }
    if lost.is_empty() {
        // The common UPDATE: no record annotation to parse.
        return Vec::new();
    }
    // An unreadable annotation is reported by the integrity check; here it only means no record.
    let records = approval_records_in(old).unwrap_or_default();
    let stored_generation = generation(old);
    lost.into_iter()
        .map(|(stage, cause)| RemovedApproval {
            stage: stage.to_string(),
            // Only the record of the write that set the approval names who gave it.
            record: records
                .get(stage)
                .filter(|r| credited(r, stored_generation))
                .cloned(),
            cause,
        })
        .collect()
}

/// Why the mutation resets the approval that `old` (the stored object) gives the stage of
/// `gate` (its gate in the request), if it does: unless `automaticReset` is false, a new rollout
/// resets it, and otherwise having been used does ([`approval_used`]). It lives here, not in
/// `mutation`, which reads the removals: the dependency goes one way.
pub(crate) fn reset_cause(
    old: &Tree,
    gate: &Gate,
    restart: Option<&Restart>,
) -> Option<ResetCause> {
    if !gate.resets {
        return None;
    }
    Some(match restart {
        Some(restart) => ResetCause::NewRollout {
            restart: restart.clone(),
        },
        None => ResetCause::Consumed {
            next_stage: match approval_used(old, gate.name)? {
                Used::PromotedTo(next) => Some(next.to_string()),
                Used::Completed => None,
            },
            given_after_use: given_after_use(old, gate.name),
        },
    })
}

/// Whether the approval `old` gives `stage` was given after promotion-controller used an
/// earlier one to pass that gate in the rollout of `old`'s status: its own record (the one
/// credited with it) was written after the use the controller recorded. Unknown — no record
/// of its own, no record of the use, or one of another rollout — is `false`: the approval is
/// then taken as the one used, as before the controller kept that record.
fn given_after_use(old: &Tree, stage: &str) -> bool {
    let Some(record) = approval_records_in(old)
        .ok()
        .and_then(|mut r| r.remove(stage))
        .filter(|r| credited(r, generation(old)))
    else {
        return false;
    };
    let Ok(mut used) = super::used_approvals::recorded(&to_owned_value(old)) else {
        return false;
    };
    let Some(use_) = used.remove(stage) else {
        return false;
    };
    let same_rollout = match (&use_.rollout, status_rollout(old)) {
        (Some(used_in), Some(status)) => *used_in == status,
        _ => true,
    };
    same_rollout && use_.predates(&record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{plan_mutation, UserInfo, APPROVALS_ANNOTATION};
    use chrono::{TimeZone, Utc};
    use proptest::prelude::*;
    use serde_json::json;

    fn alice(reason: Option<&str>) -> ApprovalRecord {
        ApprovalRecord {
            user: "alice".into(),
            groups: vec!["release".into()],
            time: "2026-03-01T12:00:00Z".into(),
            reason: reason.map(String::from),
            rollout: None,
            generation: None,
            revoked: false,
            superseded: false,
            revoked_approval: None,
            removed: None,
        }
    }

    /// dev → staging (manual) → production (manual), with `approved` per manual stage, the
    /// stages reached in `status`, and approval records for `recorded` stages.
    fn promotion(approved: [Option<bool>; 2], reached: &[&str], recorded: &[&str]) -> Value {
        let manual = |a: Option<bool>| match a {
            Some(a) => json!({"manual": {"approved": a}}),
            None => json!({"manual": {}}),
        };
        let records: serde_json::Map<String, Value> = recorded
            .iter()
            .map(|s| (s.to_string(), json!(alice(Some("CAB-1")))))
            .collect();
        json!({
            "metadata": {"name": "p", "annotations": {
                APPROVALS_ANNOTATION: serde_json::to_string(&records).unwrap()
            }},
            "spec": {
                "profileSpec": {"helmCharts": [{"chartName": "kyverno", "chartVersion": "3.6.2"}]},
                "stages": [
                    {"name": "dev", "trigger": {"auto": {}}},
                    {"name": "staging", "trigger": manual(approved[0])},
                    {"name": "production", "trigger": manual(approved[1])}
                ]
            },
            "status": {"stages": reached.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}
        })
    }

    fn removals(old: &Value, new: &Value) -> Vec<RemovedApproval> {
        removed_approvals(old, new)
    }

    #[test]
    fn an_apply_without_approved_names_the_approval_it_removes() {
        let old = promotion([Some(true), None], &["dev", "staging"], &["staging"]);
        let new = promotion([None, None], &["dev", "staging"], &["staging"]);
        let removed = removals(&old, &new);
        assert_eq!(
            removed,
            [RemovedApproval {
                stage: "staging".into(),
                record: Some(alice(Some("CAB-1"))),
                cause: RemovalCause::Update,
            }]
        );
        assert_eq!(
            removed[0].warning(),
            r#"approval of stage "staging" (given by alice at 2026-03-01T12:00:00Z: "CAB-1") removed by this update"#
        );
        // `approved: false` is the same loss.
        let off = promotion([Some(false), None], &["dev", "staging"], &["staging"]);
        assert_eq!(removals(&old, &off)[0].cause, RemovalCause::Update);
    }

    #[test]
    fn a_merge_patch_that_replaces_the_stages_or_drops_one() {
        let old = promotion([Some(true), Some(true)], &["dev", "staging"], &["staging"]);
        // `kubectl patch --type=merge -p '{"spec":{"stages":[…]}}'` replaces the whole list.
        let mut new = old.clone();
        new["spec"]["stages"] = json!([
            {"name": "dev", "trigger": {"auto": {}}},
            {"name": "staging", "trigger": {"manual": {}}}
        ]);
        let removed = removals(&old, &new);
        let causes: Vec<(&str, &RemovalCause)> = removed
            .iter()
            .map(|r| (r.stage.as_str(), &r.cause))
            .collect();
        // Dropping a stage changes the stage list Sveltos hashes: a new rollout, which resets
        // the approval the request also left out.
        assert_eq!(
            causes,
            [
                (
                    "staging",
                    &RemovalCause::Reset(ResetCause::NewRollout {
                        restart: crate::rollout::Restart::Stages
                    })
                ),
                ("production", &RemovalCause::StageRemoved)
            ]
        );
        assert_eq!(removed[1].record, None);
        assert_eq!(
            removed[1].warning(),
            r#"approval of stage "production" (no record of who gave it) removed with the stage, which this update takes out of spec.stages"#
        );
    }

    #[test]
    fn the_webhooks_own_resets_are_listed_once_with_their_cause() {
        // Consumed: production is reached, so staging's approval has been used.
        let old = promotion(
            [Some(true), None],
            &["dev", "staging", "production"],
            &["staging"],
        );
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"team": "a"});
        let removed_now = removals(&old, &new);
        assert_eq!(
            removed_now[0].cause,
            RemovalCause::Reset(ResetCause::Consumed {
                next_stage: Some("production".into()),
                given_after_use: false,
            })
        );
        assert_eq!(
            removed_now[0].warning(),
            r#"approval of stage "staging" (given by alice at 2026-03-01T12:00:00Z: "CAB-1") removed: it was already used to promote to "production""#
        );

        // A new rollout: the approval kept in the request is reset by the webhook ...
        let old = promotion([Some(true), None], &["dev", "staging"], &["staging"]);
        let mut rollout = old.clone();
        rollout["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
        let reset = removals(&old, &rollout);
        assert_eq!(reset.len(), 1);
        assert!(matches!(
            reset[0].cause,
            RemovalCause::Reset(ResetCause::NewRollout { .. })
        ));
        // ... and one the request drops itself would have been reset all the same: the same
        // cause, so that a second call on the webhook's own output says the same thing.
        rollout["spec"]["stages"][1]["trigger"]["manual"] = json!({});
        assert_eq!(removals(&old, &rollout), reset);
    }

    #[test]
    fn kept_new_and_sticky_approvals_are_not_removals() {
        let old = promotion([Some(true), None], &["dev", "staging"], &["staging"]);
        assert!(removals(&old, &old).is_empty());
        let more = promotion([Some(true), Some(true)], &["dev", "staging"], &["staging"]);
        assert!(removals(&old, &more).is_empty());
        let mut sticky = old.clone();
        sticky["spec"]["stages"][1]["trigger"]["manual"]["automaticReset"] = json!(false);
        let mut rollout = sticky.clone();
        rollout["spec"]["profileSpec"] = json!({"tier": 1});
        assert!(removals(&sticky, &rollout).is_empty());
        let mut deleting = promotion([None, None], &[], &[]);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-03-02T09:00:00Z");
        assert!(removals(&old, &deleting).is_empty());
        assert!(removals(&old, &json!("not an object")).is_empty());
    }

    #[test]
    fn an_unreadable_record_annotation_means_no_record() {
        let mut old = promotion([Some(true), None], &["dev", "staging"], &[]);
        old["metadata"]["annotations"][APPROVALS_ANNOTATION] = json!("{not json");
        let new = promotion([None, None], &["dev", "staging"], &[]);
        let removed = removals(&old, &new);
        assert_eq!(removed[0].record, None);
        assert!(removed[0].warning().contains("no record of who gave it"));
    }

    fn flag() -> impl Strategy<Value = Option<bool>> {
        prop_oneof![Just(None), Just(Some(false)), Just(Some(true))]
    }

    fn approved_stages(object: &Value) -> Vec<String> {
        gates(&tree_of(object))
            .into_iter()
            .filter(|g| g.approved)
            .map(|g| g.name.to_string())
            .collect()
    }

    proptest! {
        #![proptest_config(promotion_examples::proptest_config::config())]

        /// Exactly the approvals the stored object has and the admitted object (the request
        /// after the webhook's patch) does not are listed, each once; the resets among those
        /// still on in the request are the plan's; and a second call on the admitted object (a
        /// reinvocation) lists the same.
        #[test]
        fn every_vanished_approval_is_listed_once_and_the_same_again(
            old_flags in prop::collection::vec((flag(), flag()), 1..5),
            new_flags in prop::collection::vec(flag(), 0..5),
            reached in 0usize..6,
            chart_changes in any::<bool>(),
        ) {
            let stages = |flags: &mut dyn Iterator<Item = (Option<bool>, Option<bool>)>| -> Vec<Value> {
                flags
                    .enumerate()
                    .map(|(i, (approved, reset))| {
                        let mut manual = json!({});
                        if let Some(a) = approved { manual["approved"] = json!(a); }
                        if let Some(r) = reset { manual["automaticReset"] = json!(r); }
                        json!({"name": format!("s{i}"), "trigger": {"manual": manual}})
                    })
                    .collect()
            };
            let old = json!({
                "metadata": {"name": "p"},
                "spec": {"profileSpec": {"tier": 0}, "stages": stages(&mut old_flags.iter().copied())},
                "status": {"stages": (0..reached.min(old_flags.len()))
                    .map(|i| json!({"name": format!("s{i}")})).collect::<Vec<_>>()}
            });
            // The request keeps the first `new_flags.len()` stages (dropping the rest), with
            // new `approved` values and the old `automaticReset`.
            let mut new_stages = new_flags.iter().zip(&old_flags).map(|(a, (_, r))| (*a, *r));
            let mut new = old.clone();
            new["spec"]["stages"] = json!(stages(&mut new_stages));
            if chart_changes {
                new["spec"]["profileSpec"] = json!({"tier": 1});
            }

            let user = UserInfo { username: Some("bob".into()), ..UserInfo::default() };
            let now = Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap();
            let plan = plan_mutation(Some(&old), &new, &user, now);
            let mut admitted = new.clone();
            json_patch::patch(&mut admitted, &plan.patch.0).expect("the plan applies");

            let removed = removed_approvals(&old, &new);
            let still = approved_stages(&admitted);
            let vanished: Vec<String> = approved_stages(&old)
                .into_iter()
                .filter(|s| !still.contains(s))
                .collect();
            let listed: Vec<String> = removed.iter().map(|r| r.stage.clone()).collect();
            prop_assert_eq!(listed, vanished);

            let on_in_request = approved_stages(&new);
            let resets: Vec<(String, RemovalCause)> = removed
                .iter()
                .filter(|r| on_in_request.contains(&r.stage))
                .map(|r| (r.stage.clone(), r.cause.clone()))
                .collect();
            let planned: Vec<(String, RemovalCause)> = plan
                .reset_approvals
                .iter()
                .map(|r| (r.stage.clone(), RemovalCause::Reset(r.cause.clone())))
                .collect();
            prop_assert_eq!(resets, planned);

            prop_assert_eq!(removed_approvals(&old, &admitted), removed);
        }
    }
}
