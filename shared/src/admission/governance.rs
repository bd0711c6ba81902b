//! Who may approve. Both rules are off unless configured.
//!
//! - the committed-step annotation of promotion-controller
//!   ([`crate::promoting::PROMOTING_ANNOTATION`]) opens a gate without an approval, and its
//!   used-approvals annotation ([`crate::admission::used_approvals::USED_APPROVALS_ANNOTATION`]) says whose
//!   approval passed each gate: only the controller's users may write, change or remove them
//!   (always on);
//! - approver groups: only members of one of these groups may turn a stage's `approved` on;
//! - four eyes (`forbid_self_approval`): the user who started the current rollout (last changed
//!   `spec.profileSpec`, or stage names, order or selectors) may not approve it. The changer is
//!   the requester when this request starts a new rollout
//!   (or creates the object), otherwise the one recorded in the stored object's audit record;
//! - revoking (`approved` turned from `true` to `false`, what `kubectl promotion approve
//!   --revoke` writes) takes the right to approve, under the approver groups: withdrawing
//!   someone's approval overrides their decision, which only another approver may do. Whoever
//!   gave the approval in effect (by its record) may always withdraw it, approver or no longer:
//!   saying "not any more" to one's own approval never opens a gate. Four eyes does not apply to
//!   a revocation, which promotes nothing. An approval taken away without `approved: false` (a
//!   manifest applied without it, Sveltos' own reset) is not a revocation and is not checked
//!   here: the mutation records who took it away.

use super::audit::{approval_records_in, credited, spec_change_record_in};
use super::gates::{generation, newly_approved, newly_revoked};
use super::{approved_path, groups, username, UserInfo, Violation};
use crate::tree::{tree_of, Tree};
use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GovernancePolicy {
    /// Empty: anyone allowed to update the object may approve.
    pub approver_groups: Vec<String>,
    pub forbid_self_approval: bool,
    /// The users promotion-controller runs as: only they may change its committed-step and
    /// used-approvals annotations.
    pub controller_users: Vec<String>,
    /// Empty: anyone allowed to update the object may abort, roll back and retry a rollout
    /// ([`crate::abort`]); otherwise only members of one of these groups (and the controller,
    /// whose automatic rollbacks are its own). Pausing stays open: it is the emergency brake.
    pub rollback_groups: Vec<String>,
}

impl GovernancePolicy {
    pub fn is_enforcing(&self) -> bool {
        !self.approver_groups.is_empty() || self.forbid_self_approval
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GovernanceOutcome {
    pub violations: Vec<Violation>,
    pub warnings: Vec<String>,
}

/// Check every approval that `new` turns on (compared with `old`; `None` on CREATE).
pub fn check_governance(
    old: Option<&serde_json::Value>,
    new: &serde_json::Value,
    user: &UserInfo,
    policy: &GovernancePolicy,
) -> GovernanceOutcome {
    let old = old.map(tree_of);
    check_governance_tree(old.as_ref(), &tree_of(new), user, policy)
}

/// [`check_governance`] on parsed trees.
pub fn check_governance_tree(
    old: Option<&Tree>,
    new: &Tree,
    user: &UserInfo,
    policy: &GovernancePolicy,
) -> GovernanceOutcome {
    let mut outcome = GovernanceOutcome::default();
    committed_step(old, new, user, policy, &mut outcome);
    rollback_right(old, new, user, policy, &mut outcome);
    if !policy.is_enforcing() {
        return outcome;
    }
    revocations(old, new, user, policy, &mut outcome);
    let approving = newly_approved(old, new);
    if approving.is_empty() {
        return outcome;
    }
    let requester = username(user);
    let starter = match old {
        Some(old) if crate::rollout::restart(old, new).is_none() => spec_change_record_in(old)
            .ok()
            .flatten()
            .map(|record| record.user),
        _ => Some(requester.to_string()),
    };
    for refusal in approver_refusals(policy, user, starter.as_deref()) {
        for gate in &approving {
            let (rule, message) = match &refusal {
                ApproverRefusal::NotInGroup { approver_groups } => (
                    "approver-not-in-group",
                    format!(
                        "user {requester:?} may not approve stage {:?}: approving requires \
                         membership in {}",
                        gate.name,
                        group_list(approver_groups)
                    ),
                ),
                ApproverRefusal::SelfApproval => (
                    "self-approval",
                    format!(
                        "user {requester:?} may not approve stage {:?}: they made the last \
                         change that started this rollout, and another user must approve it (four eyes)",
                        gate.name
                    ),
                ),
            };
            outcome
                .violations
                .push(Violation::new(rule, approved_path(gate.index), message));
        }
    }
    if policy.forbid_self_approval && starter.is_none() {
        for gate in &approving {
            outcome.warnings.push(format!(
                "stage {:?} approved without a four-eyes check: no record of who started this rollout",
                gate.name
            ));
        }
    }
    outcome
}

/// Why an approval by `user` is refused under `policy`, for a rollout `starter` started (`None`:
/// no record of who did, which four eyes lets pass with a warning). The one rule the webhook
/// enforces and `describe` predicts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "camelCase")]
pub enum ApproverRefusal {
    /// `user` is in none of the approver groups.
    #[serde(rename_all = "camelCase")]
    NotInGroup { approver_groups: Vec<String> },
    /// `user` started the rollout, and four eyes are required.
    SelfApproval,
}

pub fn approver_refusals(
    policy: &GovernancePolicy,
    user: &UserInfo,
    starter: Option<&str>,
) -> Vec<ApproverRefusal> {
    let mut refusals = Vec::new();
    if !policy.approver_groups.is_empty()
        && !groups(user)
            .iter()
            .any(|g| policy.approver_groups.contains(g))
    {
        refusals.push(ApproverRefusal::NotInGroup {
            approver_groups: policy.approver_groups.clone(),
        });
    }
    if policy.forbid_self_approval && starter == Some(username(user)) {
        refusals.push(ApproverRefusal::SelfApproval);
    }
    refusals
}

/// Why `user` may not withdraw an approval under `policy`, where `giver` gave it (by its
/// record; `None`: no record of who did): the one rule the webhook enforces and `describe`
/// predicts. `None` when they may.
pub fn revoker_refusal(
    policy: &GovernancePolicy,
    user: &UserInfo,
    giver: Option<&str>,
) -> Option<RevokerRefusal> {
    let own = giver.is_some_and(|giver| giver == username(user));
    let approver = policy.approver_groups.is_empty()
        || groups(user)
            .iter()
            .any(|g| policy.approver_groups.contains(g));
    (!own && !approver).then(|| RevokerRefusal {
        approver_groups: policy.approver_groups.clone(),
        giver: giver.map(str::to_string),
    })
}

/// A revocation refused: the user is in none of the approver groups, and the approval is not
/// theirs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokerRefusal {
    pub approver_groups: Vec<String>,
    /// Who gave the approval, by its record; `None`: no record of who did.
    pub giver: Option<String>,
}

impl RevokerRefusal {
    /// The refusal of `user`'s revocation of `stage`'s approval, naming the stage, the user and
    /// the rule.
    pub fn message(&self, user: &str, stage: &str) -> String {
        let given = match &self.giver {
            Some(giver) => format!("given by {giver:?}"),
            None => "given without a record of who gave it".to_string(),
        };
        format!(
            "user {user:?} may not revoke the approval of stage {stage:?} ({given}): revoking \
             another user's approval requires the right to approve, membership in {}; whoever \
             gave an approval may always withdraw their own",
            group_list(&self.approver_groups)
        )
    }
}

/// Check every revocation `new` makes (compared with `old`) against [`revoker_refusal`], the
/// giver of each approval being the one its stored record names ([`credited`]: only the record
/// of the write that set the approval now in effect names who gave it).
fn revocations(
    old: Option<&Tree>,
    new: &Tree,
    user: &UserInfo,
    policy: &GovernancePolicy,
    outcome: &mut GovernanceOutcome,
) {
    let revoking = newly_revoked(old, new);
    let Some(old) = old.filter(|_| !revoking.is_empty()) else {
        return;
    };
    let records = approval_records_in(old).unwrap_or_default();
    let stored_generation = generation(old);
    for gate in revoking {
        let giver = records
            .get(gate.name)
            .filter(|r| !r.revoked && credited(r, stored_generation))
            .map(|r| r.user.as_str());
        if let Some(refusal) = revoker_refusal(policy, user, giver) {
            outcome.violations.push(Violation::new(
                "revoker-not-approver",
                approved_path(gate.index),
                refusal.message(username(user), gate.name),
            ));
        }
    }
}

/// promotion-controller's annotations that stand for approvals it used, each with the code of
/// its violation and what it records: only the controller may change them.
const CONTROLLER_ANNOTATIONS: [(&str, &str, &str); 3] = [
    (
        crate::promoting::PROMOTING_ANNOTATION,
        "committed-step-forged",
        "it records a promotion step promotion-controller committed (an approval already used)",
    ),
    (
        crate::admission::used_approvals::USED_APPROVALS_ANNOTATION,
        "used-approvals-forged",
        "it records whose approval promotion-controller used to pass each gate",
    ),
    (
        crate::on_failure::FAILING_ANNOTATION,
        "failing-note-forged",
        "it records since when a stage has failed, which starts an automatic rollback",
    ),
];

/// Only the controller may change its committed-step and used-approvals annotations: the first
/// passes a manual gate without `approved`, so anyone else writing it would approve without
/// being an approver; the second says whose approval passed a gate, so anyone else writing it
/// would rewrite who approved.
fn committed_step(
    old: Option<&Tree>,
    new: &Tree,
    user: &UserInfo,
    policy: &GovernancePolicy,
    outcome: &mut GovernanceOutcome,
) {
    let requester = username(user);
    if policy.controller_users.iter().any(|u| u == requester) {
        return;
    }
    for (key, code, records) in CONTROLLER_ANNOTATIONS {
        let value = |t: &Tree| {
            super::audit::annotation(t, key)
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        if old.and_then(value) == value(new) {
            continue;
        }
        let allowed = match policy.controller_users.as_slice() {
            [] => "no user (the webhook runs without --controller-user)".to_string(),
            users => users
                .iter()
                .map(|u| format!("{u:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        outcome.violations.push(Violation::new(
            code,
            super::annotation_path(key),
            format!(
                "user {requester:?} may not change this annotation: {records}, and only the \
                 controller may write it ({allowed})"
            ),
        ));
    }
}

/// With rollback groups set, only their members (and the controller) may set, change or remove
/// the abort request: abort, roll back, retry.
fn rollback_right(
    old: Option<&Tree>,
    new: &Tree,
    user: &UserInfo,
    policy: &GovernancePolicy,
    outcome: &mut GovernanceOutcome,
) {
    if policy.rollback_groups.is_empty() {
        return;
    }
    let requester = username(user);
    if policy.controller_users.iter().any(|u| u == requester) {
        return;
    }
    let key = crate::abort::ABORT_ANNOTATION;
    let value = |t: &Tree| {
        super::audit::annotation(t, key)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    if old.and_then(value) == value(new) {
        return;
    }
    if groups(user)
        .iter()
        .any(|g| policy.rollback_groups.contains(g))
    {
        return;
    }
    outcome.violations.push(Violation::new(
        "rollback-not-in-group",
        super::annotation_path(key),
        format!(
            "user {requester:?} may not abort, roll back or retry a rollout: that requires a \
             member of {} (the user's groups: {})",
            group_list(&policy.rollback_groups),
            match groups(user) {
                [] => "none".to_string(),
                g => g
                    .iter()
                    .map(|g| format!("{g:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        ),
    ));
}

/// `group "a"` / `one of the groups "a", "b"`: how refusals name approver groups.
pub fn group_list(groups: &[String]) -> String {
    let quoted: Vec<String> = groups.iter().map(|g| format!("{g:?}")).collect();
    match quoted.len() {
        1 => format!("group {}", quoted[0]),
        _ => format!("one of the groups {}", quoted.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::test_support::user;
    use crate::admission::SPEC_CHANGE_ANNOTATION;
    use serde_json::{json, Value};

    fn promotion(approved: bool, chart: &str, changer: Option<&str>) -> Value {
        let mut annotations = json!({});
        if let Some(changer) = changer {
            annotations[SPEC_CHANGE_ANNOTATION] =
                json!(json!({"user": changer, "time": "2026-03-01T11:00:00Z"}).to_string());
        }
        json!({
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {
                "profileSpec": {"tier": chart.parse::<u32>().unwrap_or(0)},
                "stages": [
                    {"name": "dev"},
                    {"name": "staging", "trigger": {"manual": {"approved": approved}}},
                    {"name": "production"}
                ]
            }
        })
    }

    fn groups_only() -> GovernancePolicy {
        GovernancePolicy {
            approver_groups: vec!["release-managers".into()],
            forbid_self_approval: false,
            controller_users: vec![],
            rollback_groups: vec![],
        }
    }

    fn four_eyes() -> GovernancePolicy {
        GovernancePolicy {
            approver_groups: vec![],
            forbid_self_approval: true,
            controller_users: vec![],
            rollback_groups: vec![],
        }
    }

    /// With rollback groups, only their members and the controller may abort, roll back or
    /// retry; pausing is not theirs to restrict; a request that leaves the abort alone passes.
    #[test]
    fn rollback_groups_restrict_abort_rollback_and_retry_only() {
        use crate::abort::ABORT_ANNOTATION;
        let policy = GovernancePolicy {
            rollback_groups: vec!["sre".into()],
            controller_users: vec!["system:serviceaccount:ns:promotion-controller".into()],
            ..GovernancePolicy::default()
        };
        let stored = json!({"metadata": {"name": "p", "annotations": {}}, "spec": {"stages": []}});
        let mut aborting = stored.clone();
        aborting["metadata"]["annotations"][ABORT_ANNOTATION] = json!("{}");
        let user = |name: &str, groups: &[&str]| UserInfo {
            username: Some(name.into()),
            groups: Some(groups.iter().map(|g| g.to_string()).collect()),
            ..UserInfo::default()
        };
        let refused = check_governance(Some(&stored), &aborting, &user("bob", &["dev"]), &policy);
        assert_eq!(refused.violations.len(), 1, "{refused:?}");
        assert_eq!(refused.violations[0].code, "rollback-not-in-group");
        assert!(refused.violations[0].message.contains("group \"sre\""));
        for allowed in [
            user("alice", &["sre"]),
            user("system:serviceaccount:ns:promotion-controller", &[]),
        ] {
            let outcome = check_governance(Some(&stored), &aborting, &allowed, &policy);
            assert!(outcome.violations.is_empty(), "{outcome:?}");
        }
        // A retry is a change too; a pause or a label is not the rules' business.
        let retried = check_governance(Some(&aborting), &stored, &user("bob", &[]), &policy);
        assert_eq!(retried.violations.len(), 1);
        let mut paused = stored.clone();
        paused["metadata"]["annotations"][crate::pause::PAUSED_ANNOTATION] = json!("");
        let pause = check_governance(Some(&stored), &paused, &user("bob", &[]), &policy);
        assert!(pause.violations.is_empty());
    }

    #[test]
    fn only_the_controller_writes_its_committed_step() {
        use crate::promoting::PROMOTING_ANNOTATION;
        let policy = GovernancePolicy {
            controller_users: vec!["system:serviceaccount:ns:promotion-controller".into()],
            ..GovernancePolicy::default()
        };
        let old = promotion(false, "1.0.0", None);
        let mut new = old.clone();
        new["metadata"]["annotations"][PROMOTING_ANNOTATION] = json!("{\"stage\":\"dev\"}");
        let by = |name: &str| {
            check_governance(
                Some(&old),
                &new,
                &user(name, &["release-managers"]),
                &policy,
            )
        };
        let refused = by("release-manager");
        assert_eq!(refused.violations.len(), 1);
        assert_eq!(refused.violations[0].code, "committed-step-forged");
        assert!(by("system:serviceaccount:ns:promotion-controller")
            .violations
            .is_empty());
        // Removing it is the controller's too.
        let removed = check_governance(Some(&new), &old, &user("release-manager", &[]), &policy);
        assert_eq!(removed.violations.len(), 1);
    }

    #[test]
    fn only_the_controller_writes_whose_approval_it_used() {
        use crate::admission::used_approvals::USED_APPROVALS_ANNOTATION;
        let controller = "system:serviceaccount:ns:promotion-controller";
        let policy = GovernancePolicy {
            controller_users: vec![controller.into()],
            ..GovernancePolicy::default()
        };
        let old = promotion(false, "1.0.0", None);
        let mut new = old.clone();
        new["metadata"]["annotations"][USED_APPROVALS_ANNOTATION] =
            json!("{\"staging\":{\"approval\":{\"user\":\"mallory\",\"time\":\"t\"}}}");
        let refused = check_governance(
            Some(&old),
            &new,
            &user("release-manager", &["release-managers"]),
            &policy,
        );
        assert_eq!(refused.violations.len(), 1);
        let violation = &refused.violations[0];
        assert_eq!(violation.code, "used-approvals-forged");
        assert_eq!(
            violation.path,
            format!("metadata.annotations[{USED_APPROVALS_ANNOTATION}]")
        );
        assert!(
            violation.message.contains(&format!(
                "user \"release-manager\" may not change this annotation: it records whose \
                 approval promotion-controller used to pass each gate, and only the controller \
                 may write it (\"{controller}\")"
            )),
            "{}",
            violation.message
        );
        assert!(
            check_governance(Some(&old), &new, &user(controller, &[]), &policy)
                .violations
                .is_empty()
        );
        // Created with it, edited, or removed: the controller's only.
        assert_eq!(
            check_governance(None, &new, &user("alice", &[]), &policy)
                .violations
                .len(),
            1
        );
        let mut edited = new.clone();
        edited["metadata"]["annotations"][USED_APPROVALS_ANNOTATION] = json!("{}");
        let by_alice = |old: &Value, new: &Value| {
            check_governance(Some(old), new, &user("alice", &[]), &policy)
                .violations
                .len()
        };
        assert_eq!(by_alice(&new, &edited), 1);
        assert_eq!(by_alice(&new, &old), 1);
        // Kept as read: anyone's write.
        assert_eq!(by_alice(&new, &new), 0);
    }

    #[test]
    fn off_by_default() {
        let old = promotion(false, "1", Some("alice"));
        let new = promotion(true, "1", Some("alice"));
        let outcome = check_governance(
            Some(&old),
            &new,
            &user("alice", &[]),
            &GovernancePolicy::default(),
        );
        assert_eq!(outcome, GovernanceOutcome::default());
    }

    #[test]
    fn approver_groups() {
        let old = promotion(false, "1", None);
        let new = promotion(true, "1", None);
        let member = user("bob", &["system:authenticated", "release-managers"]);
        assert!(check_governance(Some(&old), &new, &member, &groups_only())
            .violations
            .is_empty());
        let outsider = user("eve", &["system:authenticated"]);
        let outcome = check_governance(Some(&old), &new, &outsider, &groups_only());
        assert_eq!(outcome.violations.len(), 1);
        assert_eq!(
            outcome.violations[0].path,
            "spec.stages[1].trigger.manual.approved"
        );
        assert!(outcome.violations[0]
            .message
            .contains("group \"release-managers\""));
        // Not approving anything (approval already on) is not checked.
        assert!(
            check_governance(Some(&new), &new, &outsider, &groups_only())
                .violations
                .is_empty()
        );
    }

    /// staging approved by `giver` (recorded at the stored generation; `None`: approved without
    /// a record), as stored, and the same with the approval revoked.
    fn revocation(giver: Option<&str>) -> (Value, Value) {
        let mut old = promotion(true, "1", Some("alice"));
        old["metadata"]["generation"] = json!(3);
        if let Some(giver) = giver {
            let record = json!({"user": giver, "groups": [], "time": "2026-03-01T11:30:00Z",
                                "generation": 3});
            old["metadata"]["annotations"][crate::admission::APPROVALS_ANNOTATION] =
                json!(json!({ "staging": record }).to_string());
        }
        let mut new = old.clone();
        new["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(false);
        (old, new)
    }

    #[test]
    fn revoking_takes_the_right_to_approve_except_for_ones_own_approval() {
        let approvers = groups_only();
        let both = GovernancePolicy {
            forbid_self_approval: true,
            ..groups_only()
        };
        let manager = || user("rm", &["release-managers"]);
        let developer = || user("dev", &["developers"]);
        let former = || user("former", &["developers"]);
        // (policy, approval given by, revoker, refused)
        let table: [(&GovernancePolicy, Option<&str>, UserInfo, bool); 9] = [
            // No approver groups: anyone RBAC lets update the object may revoke.
            (&four_eyes(), Some("rm"), developer(), false),
            (&GovernancePolicy::default(), Some("rm"), developer(), false),
            // An approver may revoke anyone's approval.
            (&approvers, Some("other-rm"), manager(), false),
            (&approvers, None, manager(), false),
            // Someone else may not.
            (&approvers, Some("rm"), developer(), true),
            (&approvers, None, developer(), true),
            // Whoever gave the approval may withdraw it, approver or no longer.
            (&approvers, Some("former"), former(), false),
            // Four eyes does not apply: the starter (alice) withdraws as an approver.
            (
                &both,
                Some("rm"),
                user("alice", &["release-managers"]),
                false,
            ),
            (&both, Some("rm"), user("alice", &[]), true),
        ];
        for (policy, giver, revoker, refused) in table {
            let (old, new) = revocation(giver);
            let outcome = check_governance(Some(&old), &new, &revoker, policy);
            let name = revoker.username.clone().unwrap_or_default();
            assert_eq!(
                !outcome.violations.is_empty(),
                refused,
                "{giver:?} revoked by {name}: {outcome:?}"
            );
            // The plugin's prediction is the webhook's rule.
            assert_eq!(
                revoker_refusal(policy, &revoker, giver).is_some(),
                refused,
                "{giver:?} revoked by {name}"
            );
        }
        let (old, new) = revocation(Some("rm"));
        let outcome = check_governance(Some(&old), &new, &developer(), &approvers);
        assert_eq!(outcome.violations.len(), 1);
        let violation = &outcome.violations[0];
        assert_eq!(
            (violation.code, violation.path.as_str()),
            (
                "revoker-not-approver",
                "spec.stages[1].trigger.manual.approved"
            )
        );
        assert_eq!(
            violation.message,
            "user \"dev\" may not revoke the approval of stage \"staging\" (given by \"rm\"): \
             revoking another user's approval requires the right to approve, membership in group \
             \"release-managers\"; whoever gave an approval may always withdraw their own"
        );
        // Only the record of the approval in effect names its giver: a record of an earlier
        // generation (a write the webhook did not see came since) names nobody.
        let (mut old, mut new) = revocation(Some("former"));
        old["metadata"]["generation"] = json!(5);
        new["metadata"]["generation"] = json!(5);
        let outcome = check_governance(Some(&old), &new, &former(), &approvers);
        assert!(
            outcome.violations[0]
                .message
                .contains("(given without a record of who gave it)"),
            "{outcome:?}"
        );
        // Leaving `approved` out is not a revocation, and not this rule's.
        let mut dropped = old.clone();
        dropped["spec"]["stages"][1]["trigger"]["manual"] = json!({});
        assert!(
            check_governance(Some(&old), &dropped, &developer(), &approvers)
                .violations
                .is_empty()
        );
    }

    #[test]
    fn four_eyes_uses_the_recorded_changer_or_the_requester() {
        let old = promotion(false, "1", Some("alice"));
        let new = promotion(true, "1", Some("alice"));
        let alice = user("alice", &[]);
        let bob = user("bob", &[]);
        let outcome = check_governance(Some(&old), &new, &alice, &four_eyes());
        assert_eq!(outcome.violations[0].code, "self-approval");
        assert!(check_governance(Some(&old), &new, &bob, &four_eyes())
            .violations
            .is_empty());

        // Changing the rollout and approving it in one request: the requester is the changer.
        let changed = promotion(true, "2", Some("alice"));
        let outcome = check_governance(Some(&old), &changed, &bob, &four_eyes());
        assert_eq!(outcome.violations.len(), 1);
        // CREATE: the creator is the changer.
        assert_eq!(
            check_governance(None, &new, &bob, &four_eyes())
                .violations
                .len(),
            1
        );
        // No record: allowed, with a warning.
        let unknown_old = promotion(false, "1", None);
        let unknown_new = promotion(true, "1", None);
        let outcome = check_governance(Some(&unknown_old), &unknown_new, &bob, &four_eyes());
        assert!(outcome.violations.is_empty());
        assert_eq!(outcome.warnings.len(), 1);
    }
}
