//! The computed model behind `describe`, `list`, `wait` and shell completion (and their
//! `-o json|yaml`): the pipeline from `promotion_shared::pipeline::derive`, joined with what the
//! cluster reports per stage, the webhook's audit records and the object's Events, computed from
//! the objects of a [`Snapshot`] and never read from the cluster here. Field names are part of
//! the plugin's interface; `plugin/docs/output.md` documents them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use promotion_shared::admission::used_approvals::{self, UsedApproval, UsedApprovals};
use promotion_shared::admission::{
    approval_records, credited, reset_flip_records, spec_change_record, ApprovalRecord,
    RemovalRecord, ResetFlipRecord,
};
use promotion_shared::approval;
use promotion_shared::cluster_summary::ClusterState;
use promotion_shared::fleet::Cluster;
use promotion_shared::freshness::freshness;
use promotion_shared::gate::{self, approval_target};
use promotion_shared::model::{
    profile_belongs_to, ClusterPromotion, ProfileRole, CLUSTER_PROFILE_NAME_LABEL, KIND,
    PROMOTION_NAME_LABEL, STAGE_NAME_ANNOTATION,
};
use promotion_shared::pipeline::{self, Observations, Phase, Pipeline, StageView};
use promotion_shared::reconcile::deployed;
use promotion_shared::revision::{self, Deploys};
use promotion_shared::rollout::{self, RolloutId};

pub mod abort;
pub mod approver;
pub mod events;
pub mod history;
pub mod reconciler_health;

use crate::error::{Error, Result};
use events::{event_view, EventView};

pub const API_VERSION: &str = "kubectl-promotion.dev/v1alpha1";

/// Everything read from the cluster for one promotion.
pub struct Snapshot {
    /// The ClusterPromotion exactly as stored.
    pub object: Value,
    /// Stage ClusterProfiles; `Err` says why they could not be read.
    pub profiles: std::result::Result<Vec<Value>, String>,
    pub summaries: std::result::Result<Vec<Value>, String>,
    pub events: std::result::Result<Vec<Value>, String>,
    /// Whether the ClusterPromotions that own profiles taken from this promotion exist.
    pub owners: Owners,
}

impl Snapshot {
    /// An offline manifest: nothing about clusters or events is known.
    pub fn offline(object: Value) -> Snapshot {
        Snapshot {
            object,
            profiles: Err(String::new()),
            summaries: Err(String::new()),
            events: Err(String::new()),
            owners: Owners::default(),
        }
    }

    pub fn borrow(&self) -> SnapshotRef<'_> {
        SnapshotRef {
            object: &self.object,
            profiles: shared(&self.profiles),
            summaries: shared(&self.summaries),
            events: shared(&self.events),
            owners: &self.owners,
        }
    }
}

/// What was read of the ClusterPromotions named as owners of ClusterProfiles: by name, the UID
/// of the one that exists, or `None` when the server answered that none of that name exists. A
/// name not here was not read, and then whether its owner exists is unknown, unless the names
/// are every ClusterPromotion there is (`complete`, from an unfiltered list).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Owners {
    pub found: BTreeMap<String, Option<String>>,
    pub complete: bool,
}

impl Owners {
    /// From a list of every ClusterPromotion: a name not among them does not exist.
    pub fn of_all(promotions: &[Value]) -> Owners {
        let found = promotions
            .iter()
            .filter_map(|p| {
                let name = p.pointer("/metadata/name").and_then(Value::as_str)?;
                let uid = p.pointer("/metadata/uid").and_then(Value::as_str);
                Some((name.to_string(), Some(uid.unwrap_or_default().to_string())))
            })
            .collect();
        Owners {
            found,
            complete: true,
        }
    }

    /// Whether the ClusterPromotion `name` (with `uid` when the reference gives one) exists:
    /// `None` when it was not read.
    fn exists(&self, name: &str, uid: Option<&str>) -> Option<bool> {
        let found = match self.found.get(name) {
            Some(found) => found,
            None if self.complete => &None,
            None => return None,
        };
        Some(match (found, uid) {
            (None, _) => false,
            (Some(found), Some(uid)) => found == uid,
            (Some(_), None) => true,
        })
    }
}

/// The ClusterPromotion a ClusterProfile names as its owner: its first owner reference of that
/// kind (name, UID), else the promotion-name label Sveltos sets (name only).
pub fn profile_owner(profile: &Value) -> Option<(&str, Option<&str>)> {
    let meta = profile.get("metadata")?;
    let reference = meta
        .get("ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("kind").and_then(Value::as_str) == Some(KIND));
    if let Some(r) = reference {
        if let Some(name) = r.get("name").and_then(Value::as_str) {
            return Some((name, r.get("uid").and_then(Value::as_str)));
        }
    }
    meta.get("labels")
        .and_then(|l| l.get(PROMOTION_NAME_LABEL))
        .and_then(Value::as_str)
        .map(|n| (n, None))
}

/// Read objects (or why they could not be read), borrowed.
pub fn shared(
    read: &std::result::Result<Vec<Value>, String>,
) -> std::result::Result<&[Value], &str> {
    match read {
        Ok(v) => Ok(v.as_slice()),
        Err(e) => Err(e.as_str()),
    }
}

/// A [`Snapshot`] whose cluster data is shared: `list` and `list --watch` describe every
/// promotion from one set of ClusterProfiles and ClusterSummaries without copying it.
#[derive(Clone, Copy)]
pub struct SnapshotRef<'a> {
    pub object: &'a Value,
    pub profiles: std::result::Result<&'a [Value], &'a str>,
    pub summaries: std::result::Result<&'a [Value], &'a str>,
    pub events: std::result::Result<&'a [Value], &'a str>,
    pub owners: &'a Owners,
}

/// Deserialize the stored object into the shared model, naming what is wrong and where
/// (`status.stages[0].name: invalid type: …`).
pub fn typed(object: &Value) -> Result<ClusterPromotion> {
    ClusterPromotion::decode(object).map_err(|e| {
        Error::Invalid(format!(
            "the object does not match the ClusterPromotion schema: {e}"
        ))
    })
}

/// The stage ClusterProfiles of a promotion found among `profiles`: by stage name, the profile
/// Sveltos generated for it when it belongs to this promotion ([`profile_belongs_to`]), or why
/// the generated name is taken.
pub struct StageProfiles<'a> {
    pub owned: BTreeMap<String, &'a Value>,
    /// Stage name → what holds the profile name instead.
    pub taken: BTreeMap<String, String>,
}

impl<'a> StageProfiles<'a> {
    pub fn of(
        promotion: &ClusterPromotion,
        profiles: &'a [Value],
        owners: &Owners,
    ) -> StageProfiles<'a> {
        let by_name: BTreeMap<&str, &Value> = profiles
            .iter()
            .filter_map(|p| {
                p.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(|n| (n, p))
            })
            .collect();
        let uid = promotion.metadata.uid.as_deref();
        let mut owned = BTreeMap::new();
        let mut taken = BTreeMap::new();
        for generated in promotion.generated_profiles() {
            if generated.role != ProfileRole::Stage {
                continue;
            }
            let Some(profile) = by_name.get(generated.name.as_str()) else {
                continue;
            };
            let stage_matches = profile
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(STAGE_NAME_ANNOTATION))
                .and_then(Value::as_str)
                .is_none_or(|s| s == generated.stage);
            if profile_belongs_to(profile, promotion.name(), uid) && stage_matches {
                owned.insert(generated.stage, *profile);
            } else {
                taken.insert(
                    generated.stage,
                    taken_because(profile, &generated.name, promotion, owners),
                );
            }
        }
        StageProfiles { owned, taken }
    }
}

/// Why the ClusterProfile `name`, generated for a stage of `promotion`, is not this promotion's:
/// left over from a deleted promotion of the same name (its owner reference names this promotion
/// with another UID), left over from a deleted promotion of another name (`a` + `b-c` and `a-b` +
/// `c` both generate `a-b-c`: its owner no longer exists), or a collision with a promotion that
/// exists.
fn taken_because(
    profile: &Value,
    name: &str,
    promotion: &ClusterPromotion,
    owners: &Owners,
) -> String {
    let holder = profile
        .pointer("/metadata/labels")
        .and_then(|l| l.get(PROMOTION_NAME_LABEL))
        .and_then(Value::as_str);
    let old_owner = profile
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("kind").and_then(Value::as_str) == Some(KIND))
        .find(|r| r.get("name").and_then(Value::as_str) == Some(promotion.name()))
        .and_then(|r| r.get("uid").and_then(Value::as_str));
    let uid = promotion.metadata.uid.as_deref();
    let delete = format!(
        "delete it (kubectl delete clusterprofile {name}) so that Sveltos creates this \
         promotion's"
    );
    if let (Some(old), Some(uid)) = (old_owner, uid) {
        if old != uid && holder.is_none_or(|h| h == promotion.name()) {
            return format!(
                "the ClusterProfile {name:?} is left over from a deleted ClusterPromotion of the \
                 same name (its owner has UID {old}, this one {uid}), not a collision with \
                 another promotion: {delete}"
            );
        }
    }
    let owner = profile_owner(profile).filter(|(n, _)| *n != promotion.name());
    if let Some((owner, owner_uid)) = owner {
        match owners.exists(owner, owner_uid) {
            Some(false) => {
                let was = owner_uid.map(|u| format!(" (UID {u})")).unwrap_or_default();
                return format!(
                    "the ClusterProfile {name:?} is left over from ClusterPromotion {owner:?}{was}, \
                     which no longer exists, not a collision with a live promotion: {delete}"
                );
            }
            Some(true) => {
                return format!(
                    "the ClusterProfile name {name:?} is taken by ClusterPromotion {owner:?}: \
                     `<promotion>-<stage>` names collide, rename a stage or a promotion"
                );
            }
            None => {
                return format!(
                    "the ClusterProfile name {name:?} is held by ClusterPromotion {owner:?}: if \
                     that promotion exists, `<promotion>-<stage>` names collide (rename a stage \
                     or a promotion); if it was deleted, {delete}"
                );
            }
        }
    }
    let holder = holder
        .map(|p| format!("ClusterPromotion {p:?}"))
        .unwrap_or_else(|| "another object".to_string());
    format!(
        "the ClusterProfile name {name:?} is taken by {holder}: `<promotion>-<stage>` \
         names collide, rename a stage or a promotion"
    )
}

/// The clusters of every stage whose ClusterProfile belongs to this promotion: one per
/// ClusterSummary of the profile (the summary's `projectsveltos.io/cluster-profile-name` label,
/// and its copied promotion label when present), and one per cluster the profile matches
/// (`status.matchingClusters`) that has no ClusterSummary yet.
pub fn observations(
    promotion: &ClusterPromotion,
    profiles: &StageProfiles,
    summaries: &[Value],
) -> Observations {
    let by_profile: BTreeMap<String, String> = profiles
        .owned
        .iter()
        .filter_map(|(stage, p)| {
            let name = p.pointer("/metadata/name").and_then(Value::as_str)?;
            Some((name.to_string(), stage.clone()))
        })
        .collect();
    let mut obs = Observations::new();
    for stage in profiles.owned.keys() {
        obs.entry(stage.clone()).or_default();
    }
    for s in summaries {
        let labels = s.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        let Some(stage) = label(CLUSTER_PROFILE_NAME_LABEL).and_then(|p| by_profile.get(p)) else {
            continue;
        };
        if label(PROMOTION_NAME_LABEL).is_some_and(|p| p != promotion.name()) {
            continue;
        }
        if let Some(mut state) = ClusterState::from_cluster_summary(s) {
            // A summary without its copy of the spec (hand-made: Sveltos always writes one)
            // cannot be compared, and is taken as carrying it.
            state.previous_spec = s.pointer("/spec/clusterProfileSpec").is_some()
                && profiles
                    .owned
                    .get(stage)
                    .is_some_and(|profile| deployed::behind(profile, s));
            obs.entry(stage.clone()).or_default().push(state);
        }
    }
    for (stage, profile) in &profiles.owned {
        let clusters = obs.entry(stage.clone()).or_default();
        let matching = profile
            .pointer("/status/matchingClusters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for reference in matching {
            let Some(state) = ClusterState::without_summary(reference) else {
                continue;
            };
            let known = clusters
                .iter()
                .any(|c| c.namespace == state.namespace && c.name == state.name);
            if !known {
                clusters.push(state);
            }
        }
    }
    for clusters in obs.values_mut() {
        clusters.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    }
    obs
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCounts {
    pub total: usize,
    pub provisioned: usize,
    pub failed: usize,
    /// Neither provisioned nor failed yet (those without a ClusterSummary included).
    pub pending: usize,
    /// Matched by the ClusterProfile, but Sveltos has not created their ClusterSummary yet.
    pub without_summary: usize,
    /// Their ClusterSummary still reports the previous spec ([`ClusterState::previous_spec`]);
    /// counted in `pending`.
    pub previous_spec: usize,
}

impl ClusterCounts {
    pub fn of(clusters: &[ClusterState]) -> Self {
        let failed = clusters.iter().filter(|c| c.failure().is_some()).count();
        let provisioned = clusters.iter().filter(|c| c.is_provisioned()).count();
        let without_summary = clusters.iter().filter(|c| c.summary_name.is_none()).count();
        ClusterCounts {
            total: clusters.len(),
            provisioned,
            failed,
            pending: clusters.len() - provisioned - failed,
            without_summary,
            previous_spec: clusters.iter().filter(|c| c.previous_spec).count(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageDetail {
    #[serde(flatten)]
    pub view: StageView,
    /// Name of the generated ClusterProfile, when it exists and belongs to this promotion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_profile: Option<String>,
    /// The generated profile name is held by another promotion's profile (or another object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_profile_taken: Option<String>,
    /// Clusters the ClusterProfile reports as matching (`status.matchingClusters`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matching_clusters: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_counts: Option<ClusterCounts>,
    /// What the stage's ClusterProfile deploys, told apart from `spec.profileSpec`: the
    /// configuration the stage runs. Absent without a profile of this promotion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Running>,
    /// The clusters shown belong to an earlier rollout (the stage has not been reached in
    /// the current one).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clusters_from_previous_rollout: bool,
    /// Set when the stage is awaiting approval: the transition approving it unblocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approve_unblocks: Option<String>,
    /// The webhook's record of the last write that gave (or revoked) the stage's approval. While
    /// `approved` is true, only the record of the write that set it ([`credited`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_record: Option<ApprovalRecord>,
    /// The approval last in effect is gone, taken away by a write that did not revoke it: who
    /// wrote it, when and how, from the webhook's mark on the stage's record
    /// ([`ApprovalRecord::removed`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_removed: Option<RemovalRecord>,
    /// An approval is in effect that `approve --revoke` would withdraw
    /// ([`promotion_shared::gate::revoke_target`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub revocable: bool,
    /// With `revocable`: whether the caller may withdraw it, and who may; set by `describe`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoke_right: Option<approver::RevokeRight>,
    /// `approved` is true, and no record is the one of the write that set it (given while the
    /// webhook was not called); or the approval last in effect was such a one, now gone (the
    /// webhook marked the record [`ApprovalRecord::superseded`]): who approved is unknown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approval_unrecorded: bool,
    /// An approval without a record, on a stage that resets, whose stage's last record was given
    /// for another rollout than the spec's: the spec changed without the webhook (which resets
    /// approvals on a new rollout), so the approval was not given for this rollout, though
    /// Sveltos will still use it. The record of that earlier approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_for_earlier_rollout: Option<ApprovalRecord>,
    /// The approval promotion-controller used to pass this stage's gate, as it recorded it when
    /// it used it ([`promotion_shared::admission::used_approvals`]), while the status is of the rollout it
    /// was used for and shows the stage past the gate; its `approval` is `null` when no record
    /// was the approval's (who approved is unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_approval: Option<UsedApproval>,
    /// With `used_approval`: the stage's last approval (`approval_record`, or the approval now
    /// set without a record, `approval_unrecorded`) was given after the one used, so it opened
    /// nothing in this rollout.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approval_not_used: bool,
    /// While the stage's `automaticReset` is not `false`: the webhook's record of the write that
    /// turned it from `false` back to `true` (Sveltos' merge patch of `spec.stages` does so), with
    /// the approval that write removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automatic_reset_flip: Option<ResetFlipRecord>,
    /// For a stage not started: how many clusters of the fleet its selector reaches now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub will_reach: Option<WillReach>,
}

/// What a stage not started yet will reach, from the same computation as `plan`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WillReach {
    pub clusters: usize,
    /// Sveltos skips these (`spec.paused`).
    pub paused: usize,
    /// Sveltos skips these until they are ready.
    pub not_ready: usize,
}

/// A paused promotion: the pause as its annotations say, and what its stages show beneath it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseView {
    /// `reason` (the annotation's value, absent when empty) and `record` (the webhook's record
    /// of this very pause: who and when; absent when the webhook did not see it).
    #[serde(flatten)]
    pub pause: promotion_shared::pause::Paused,
    /// The phase the stages show, which the pause hides: a pipeline that failed or completed
    /// stays so while paused.
    pub stages_phase: Phase,
}

impl PauseView {
    /// What the pause holds, for `describe`'s `Paused:` line and `wait`: who, when, why, and
    /// that nothing starts until `resume`.
    pub fn explain(&self, name: &str) -> String {
        let why = match &self.pause.reason {
            Some(reason) => format!(": {reason:?}"),
            None => " (no reason given)".to_string(),
        };
        format!(
            "{}{why}; no stage starts and no approval is used until `kubectl promotion resume \
             {name}`",
            self.pause.by()
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalEntry {
    pub stage: String,
    #[serde(flatten)]
    pub record: ApprovalRecord,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    pub phase: Phase,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_stage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_promotion_time: Option<String>,
    /// Why the status is empty, in plain words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Set (phase `stale`) when Sveltos has not picked up the latest change: why we know. The
    /// stage states then describe the previous rollout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
    /// The rollout the spec describes and the one the status belongs to, by Sveltos' hashes.
    pub rollout: RolloutView,
    /// Which reconciler writes the status (`promotion-controller`, another field manager, a
    /// person, nobody), from `managedFields`.
    pub reconciled_by: String,
    /// Who runs the promotion, as messages name it ([`Pipeline::reconciler`]).
    pub reconciler: String,
    /// Nothing has written the status yet (whoever will, promotion-controller may).
    #[serde(skip)]
    pub reconciler_nobody: bool,
    /// Another field manager writes the status, so promotion-controller leaves it alone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub foreign_status_writer: bool,
    /// `metadata.deletionTimestamp`, while the promotion is being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleting: Option<String>,
    /// Set while the promotion is paused (annotation
    /// [`promotion_shared::pause::PAUSED_ANNOTATION`]): phase `paused`, unless it is being
    /// deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<PauseView>,
    /// Set while the current rollout is aborted (annotation
    /// [`promotion_shared::abort::ABORT_ANNOTATION`]): phase `aborted`, `rolling back` or
    /// `rolled back`, unless it is being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted: Option<abort::AbortView>,
    /// What deleting the promotion does (or, while `deleting`, is doing) to the clusters.
    pub on_delete: String,
    /// promotion-controller cannot act on this promotion now (blocked by the API server, no
    /// leader, not installed), and how to fix it; set by `describe` from its Lease and Events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciler_blocked: Option<reconciler_health::Blocked>,
    /// What to do next, as a command or in words; absent when nothing needs doing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// The stage whose manual gate blocks the pipeline now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub awaiting_approval: Option<String>,
    /// Whether the caller may approve, and who may; set by `describe` when an approval is
    /// proposed (`nextStep` and each stage's approve command are worded by it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_right: Option<approver::ApprovalRight>,
    pub deploys: Deploys,
    pub stages: Vec<StageDetail>,
    pub approvals: Vec<ApprovalEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_spec_change: Option<promotion_shared::admission::SpecChangeRecord>,
    /// The last spec-change record names another rollout than the spec's: the change that started
    /// the current rollout was made by someone the webhook did not see (outage under `Ignore`,
    /// or its configurations deleted), so the record names the author of an older change.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub spec_change_unseen: bool,
    /// `null` when not read (offline) or not readable (see `warnings`).
    pub events: Option<Vec<EventView>>,
    /// Whether cluster data was read (false for `describe -f`).
    pub online: bool,
    /// Data that could not be read or parsed, or stages that cannot be told apart, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Description {
    pub fn build(snap: &Snapshot) -> Result<Description> {
        Description::build_shared(snap.borrow())
    }

    /// Whether a stage is not started, so that what it will reach is worth reading the fleet.
    pub fn has_stage_not_started(&self) -> bool {
        self.stages
            .iter()
            .any(|s| s.view.state == pipeline::StageState::NotStarted)
    }

    /// Whether an approval is proposed: as the next step, or on a stage's gate.
    pub fn proposes_approval(&self) -> bool {
        self.next_step
            .as_deref()
            .is_some_and(|s| s.starts_with(APPROVE_COMMAND))
            || self.stages.iter().any(|s| s.approve_unblocks.is_some())
    }

    /// Whether an approval in effect could be withdrawn, so that who may is worth asking.
    pub fn has_revocable_approval(&self) -> bool {
        self.stages.iter().any(|s| s.revocable)
    }

    /// Word each withdrawable approval's revoke command for a caller: `judge` decides for the
    /// approval's giver (by its record; `None`: nobody known), as the webhook judges it.
    pub fn set_revoke_rights(&mut self, judge: impl Fn(Option<&str>) -> approver::RevokeRight) {
        for stage in self.stages.iter_mut().filter(|s| s.revocable) {
            let giver = stage
                .approval_record
                .as_ref()
                .filter(|r| !r.revoked)
                .map(|r| r.user.as_str());
            stage.revoke_right = Some(judge(giver));
        }
    }

    /// Word the proposed approvals for a caller: the next step now, each stage's command when
    /// rendered.
    /// Name the revision each stage runs: the newest of `revisions` whose configuration its
    /// ClusterProfile (among `profiles`) deploys.
    pub fn name_revisions(
        &mut self,
        profiles: &[Value],
        revisions: &[promotion_shared::history::Revision],
    ) {
        if let (Some(a), Some(spec)) = (self.aborted.as_mut(), self.rollout.spec.as_ref()) {
            a.spec_revision = abort::spec_revision(revisions, spec);
        }
        for stage in &mut self.stages {
            let (Some(runs), Some(name)) = (stage.runs.as_mut(), stage.cluster_profile.as_ref())
            else {
                continue;
            };
            let Some(profile) = profiles
                .iter()
                .find(|p| p.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
            else {
                continue;
            };
            runs.revision = revisions
                .iter()
                .filter(|r| {
                    let spec = serde_json::json!({"spec": {"profileSpec": r.profile_spec()}});
                    revision::runs_the_spec(profile, &spec) == Some(true)
                })
                .map(|r| r.number)
                .max();
        }
    }

    pub fn set_approval_right(&mut self, right: approver::ApprovalRight) {
        if let Some(step) = self
            .next_step
            .as_deref()
            .filter(|s| s.starts_with(APPROVE_COMMAND))
        {
            self.next_step = Some(right.advise(step));
        }
        self.approval_right = Some(right);
    }

    /// The command that approves stage `stage`, worded for the caller when they were judged.
    pub fn approve_advice(&self, stage: &str, unblocks: &str) -> String {
        let step = format!(
            "{APPROVE_COMMAND}{} --stage {stage}   (unblocks {unblocks})",
            self.name
        );
        match &self.approval_right {
            Some(right) => right.advise(&step),
            None => step,
        }
    }

    /// The command that withdraws the approval in effect on `stage`, worded for the caller when
    /// they were judged.
    pub fn revoke_advice(&self, stage: &StageDetail) -> String {
        let step = format!(
            "{APPROVE_COMMAND}{} --stage {} --revoke",
            self.name, stage.view.name
        );
        match &stage.revoke_right {
            Some(right) => right.advise(&step),
            None => step,
        }
    }

    /// Judge whether promotion-controller can act on this promotion
    /// ([`reconciler_health::judge`]); when it cannot, that is the next step.
    pub fn set_reconciler_health(
        &mut self,
        lease: &reconciler_health::LeaseRead,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        let written = !self.reconciler_nobody
            && self.reconciler == promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;
        let ours = written || self.reconciler_nobody;
        let blocked = reconciler_health::judge(ours, written, lease, self.events.as_deref(), now);
        if let Some(b) = &blocked {
            self.next_step = Some(format!("{}: {}", b.problem, b.fix));
        }
        self.reconciler_blocked = blocked;
    }

    /// Fill `willReach` of every stage not started from the fleet, as `plan` computes it.
    pub fn set_reach(&mut self, promotion: &ClusterPromotion, fleet: &[Cluster]) {
        let reach = promotion_shared::plan::reach(promotion, fleet);
        for (stage, r) in self.stages.iter_mut().zip(reach) {
            if stage.view.state == pipeline::StageState::NotStarted && stage.view.name == r.name {
                stage.will_reach = Some(WillReach {
                    clusters: r.clusters,
                    paused: r.paused,
                    not_ready: r.not_ready,
                });
            }
        }
    }

    pub fn build_shared(snap: SnapshotRef<'_>) -> Result<Description> {
        let promotion = typed(snap.object)?;
        let online = reads_clusters(snap);
        let mut warnings = Vec::new();
        for (what, r) in [
            ("ClusterProfiles", snap.profiles.err()),
            ("ClusterSummaries", snap.summaries.err()),
            ("Events", snap.events.err()),
        ] {
            if let Some(e) = r.filter(|e| !e.is_empty()) {
                warnings.push(format!("{what}: {e}"));
            }
        }
        let (pipeline, profiles, stages_phase) = derive(snap, &promotion);

        let approvals = match approval_records(snap.object) {
            Ok(m) => m,
            Err(e) => {
                warnings.push(e.to_string());
                BTreeMap::new()
            }
        };
        let last_spec_change = spec_change_record(snap.object).unwrap_or_else(|e| {
            warnings.push(e.to_string());
            None
        });
        let flips = reset_flip_records(snap.object).unwrap_or_else(|e| {
            warnings.push(e.to_string());
            BTreeMap::new()
        });
        let used = used_approvals::recorded(snap.object).unwrap_or_else(|e| {
            warnings.push(e.to_string());
            BTreeMap::new()
        });
        warnings.extend(duplicate_names(&pipeline));
        let rollout = RolloutView::of(&as_stored(snap.object));
        let records = Records {
            approvals: &approvals,
            flips: &flips,
            used: &used,
            generation: promotion.metadata.generation,
            rollout: rollout.spec.as_ref(),
        };
        let stages = stage_details(snap.object, &promotion, &pipeline, &profiles, &records);
        let spec_change_unseen = last_spec_change
            .as_ref()
            .and_then(|c| c.rollout.as_ref())
            .zip(rollout.spec.as_ref())
            .is_some_and(|(recorded, spec)| recorded != spec);
        let events = snap
            .events
            .ok()
            .map(|evs| evs.iter().map(event_view).collect());
        let awaiting_approval = pipeline.awaiting_approval().map(|s| s.name.clone());
        let preserve = promotion.spec.preserve_cluster_profiles_on_delete == Some(true);
        let next_step = next_step(&pipeline, preserve);
        let on_delete = on_delete(preserve, pipeline.deleting.is_some());
        let writer = promotion_shared::status_writer::status_writer(snap.object);
        let foreign_status_writer =
            matches!(
                writer,
                promotion_shared::status_writer::StatusWriter::Other { .. }
            ) && !promotion_shared::status_writer::take_over_requested(snap.object);
        let Pipeline {
            name,
            phase,
            current_stage,
            note,
            stale,
            deleting,
            reconciler,
            paused,
            aborted,
            ..
        } = pipeline;
        let paused = paused
            .zip(stages_phase)
            .map(|(pause, stages_phase)| PauseView {
                pause,
                stages_phase,
            });
        Ok(Description {
            api_version: API_VERSION,
            kind: "PromotionDescription",
            name,
            uid: promotion.metadata.uid.clone(),
            creation_timestamp: promotion
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string()),
            generation: promotion.metadata.generation,
            phase,
            current_stage,
            last_promotion_time: promotion
                .status
                .as_ref()
                .and_then(|s| s.last_promotion_time.clone()),
            note,
            stale,
            rollout,
            reconciled_by: writer.describe(),
            reconciler_nobody: writer == promotion_shared::status_writer::StatusWriter::Nobody,
            reconciler,
            foreign_status_writer,
            deleting,
            paused,
            aborted: aborted.map(abort::AbortView::of),
            on_delete,
            reconciler_blocked: None,
            next_step,
            awaiting_approval,
            approval_right: None,
            deploys: Deploys::of(snap.object.pointer("/spec/profileSpec")),
            stages,
            approvals: approvals
                .into_iter()
                .map(|(stage, record)| ApprovalEntry { stage, record })
                .collect(),
            last_spec_change,
            spec_change_unseen,
            events,
            online,
            warnings,
        })
    }
}

/// Why the phase is unknown, in words: the stage still provisioning whose clusters could not be
/// read, and what was not readable.
pub fn unknown_because(d: &Description) -> Option<String> {
    if d.phase != Phase::Unknown {
        return None;
    }
    let stage = d
        .stages
        .iter()
        .find(|s| s.view.state == pipeline::StageState::Provisioning)
        .map(|s| format!("stage {} is provisioning, and ", s.view.name))
        .unwrap_or_default();
    let what = if d.warnings.iter().any(|w| w.starts_with("ClusterProfiles:")) {
        "ClusterProfiles"
    } else {
        "ClusterSummaries"
    };
    Some(format!(
        "{stage}whether its clusters are failing is in the {what}, which could not be read"
    ))
}

/// The derived pipeline of `snap` alone, without the rest of a [`Description`], from the object
/// the caller has already decoded into `promotion`: `approve` and completion decide on it
/// ([`approval_target`]) without decoding the object again.
pub fn pipeline_of(snap: SnapshotRef<'_>, promotion: &ClusterPromotion) -> Pipeline {
    derive(snap, promotion).0
}

/// The object as the API server stores it: a manifest read with `-f` gets the CRD's defaults (and
/// loses the fields it prunes) first, since Sveltos hashes the stored object. An object read from
/// the cluster is already so.
pub fn as_stored(object: &Value) -> Value {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    crd_schema::Crd::embedded()
        .version(api_version)
        .map(|v| v.decoded(object))
        .unwrap_or_else(|| object.clone())
}

/// Whether cluster data was read, or tried and refused (false only for `describe -f`, whose
/// reads are `Err("")`).
fn reads_clusters(snap: SnapshotRef<'_>) -> bool {
    !matches!((snap.profiles, snap.summaries), (Err(""), Err("")))
}

/// Whether every stage's clusters are known: the profiles tell which clusters a stage has and
/// the summaries how they fare, so with either unreadable no stage's clusters are shown.
fn clusters_known(snap: SnapshotRef<'_>) -> bool {
    snap.profiles.is_ok() && snap.summaries.is_ok()
}

/// The pipeline from the promotion and the clusters of its stage profiles, and those profiles;
/// for a paused promotion also the phase its stages show beneath the pause.
fn derive<'a>(
    snap: SnapshotRef<'a>,
    promotion: &ClusterPromotion,
) -> (Pipeline, StageProfiles<'a>, Option<Phase>) {
    let paused = promotion_shared::pause::paused_meta(&promotion.metadata);
    // The pause hides the phase the stages show (failed, complete…), which `wait` still ends
    // on: derive it without the pause, then put the pause back as `pipeline::derive` does.
    let unpaused = paused.as_ref().map(|_| {
        let mut p = promotion.clone();
        if let Some(a) = p.metadata.annotations.as_mut() {
            a.remove(promotion_shared::pause::PAUSED_ANNOTATION);
        }
        p
    });
    let (mut pipeline, profiles) = derive_unpaused(snap, unpaused.as_ref().unwrap_or(promotion));
    let stages_phase = paused.as_ref().map(|_| pipeline.phase.clone());
    // An abort of the current rollout wins over a pause, as promotion-controller holds it: a
    // retry, not a resume, releases it.
    if paused.is_some() && pipeline.deleting.is_none() && pipeline.aborted.is_none() {
        pipeline.phase = Phase::Paused;
    }
    pipeline.paused = paused;
    (pipeline, profiles, stages_phase)
}

fn derive_unpaused<'a>(
    snap: SnapshotRef<'a>,
    promotion: &ClusterPromotion,
) -> (Pipeline, StageProfiles<'a>) {
    let profiles = StageProfiles::of(promotion, snap.profiles.unwrap_or_default(), snap.owners);
    let summaries = snap.summaries.unwrap_or_default();
    let obs = observations(promotion, &profiles, summaries);
    let first_profile = promotion
        .spec
        .stages
        .first()
        .and_then(|s| profiles.owned.get(&s.name))
        .copied();
    let fresh = freshness(&as_stored(snap.object), promotion, first_profile);
    let mut pipeline = pipeline::derive(promotion, clusters_known(snap).then_some(&obs), &fresh);
    // A reached stage whose ClusterProfile is another's deploys what that one holds, whatever
    // the status says: list, describe and wait all judge it from here.
    for (stage, why) in &profiles.taken {
        pipeline.fail_stage(stage, why);
    }
    // Read online without the clusters, a stage still provisioning may be failing: Sveltos'
    // status says "not yet provisioned" either way, and only the ClusterSummaries tell.
    if reads_clusters(snap)
        && !clusters_known(snap)
        && pipeline.phase == Phase::Progressing
        && pipeline
            .stages
            .iter()
            .any(|s| s.state == pipeline::StageState::Provisioning)
    {
        pipeline.phase = Phase::Unknown;
    }
    (pipeline, profiles)
}

/// The webhook's records, and what they are read against.
struct Records<'a> {
    approvals: &'a BTreeMap<String, ApprovalRecord>,
    flips: &'a BTreeMap<String, ResetFlipRecord>,
    /// promotion-controller's, of the approvals it used.
    used: &'a UsedApprovals,
    /// The object's `metadata.generation`.
    generation: Option<i64>,
    /// The spec's rollout identity.
    rollout: Option<&'a RolloutId>,
}

fn stage_details(
    object: &Value,
    promotion: &ClusterPromotion,
    pipeline: &Pipeline,
    profiles: &StageProfiles,
    records: &Records<'_>,
) -> Vec<StageDetail> {
    pipeline
        .stages
        .iter()
        .map(|view| {
            // A profile is found by stage name, so it is the first stage's of that name.
            let first = !pipeline.stages[..view.index]
                .iter()
                .any(|s| s.name == view.name);
            let profile = profiles.owned.get(&view.name).copied().filter(|_| first);
            let matching = profile.and_then(|p| {
                p.pointer("/status/matchingClusters")
                    .and_then(Value::as_array)
                    .map(Vec::len)
            });
            let counts = view.clusters.as_deref().map(ClusterCounts::of);
            let from_previous = view.state == pipeline::StageState::NotStarted
                && view.clusters.as_ref().is_some_and(|c| !c.is_empty());
            let awaiting = view.state == pipeline::StageState::AwaitingApproval
                && pipeline.stale.is_none()
                && pipeline.deleting.is_none();
            let record = records.approvals.get(&view.name);
            // An approval now set is credited only to the record of the write that set it; one
            // gone is credited to nobody when the webhook saw it go unrecorded.
            let approved = view.trigger.approved == Some(true);
            let unrecorded = (approved && !record.is_some_and(|r| credited(r, records.generation)))
                || (!approved && record.is_some_and(|r| r.superseded));
            let resets = approval::resets_automatically(view.trigger.automatic_reset);
            let earlier = record.filter(|r| {
                approved
                    && unrecorded
                    && resets
                    && r.rollout
                        .as_ref()
                        .zip(records.rollout)
                        .is_some_and(|(given, spec)| given != spec)
            });
            // The approval the controller used to pass this gate, while the status shows the
            // stage passed in the rollout it was used for. The use removed the approval: one set
            // now, or a record written since, came after it and opened nothing.
            let used = records
                .used
                .get(&view.name)
                .filter(|_| first && view.trigger.kind == pipeline::TriggerKind::Manual)
                .filter(|u| {
                    promotion
                        .gate_passed(view.index, u.rollout.as_ref(), pipeline.stale.is_none())
                        .is_some()
                });
            let not_used = used.is_some_and(|u| approved || record.is_some_and(|r| u.predates(r)));
            StageDetail {
                used_approval: used.cloned(),
                approval_not_used: not_used,
                approve_unblocks: awaiting.then(|| transition(view)),
                approval_record: record.filter(|_| !unrecorded).cloned(),
                approval_removed: record.filter(|_| !approved).and_then(|r| r.removed.clone()),
                revocable: first
                    && promotion_shared::gate::revoke_target(pipeline, &view.name).is_ok(),
                revoke_right: None,
                approval_unrecorded: unrecorded,
                approval_for_earlier_rollout: earlier.cloned(),
                automatic_reset_flip: records
                    .flips
                    .get(&view.name)
                    .filter(|_| resets && view.trigger.kind == pipeline::TriggerKind::Manual)
                    .cloned(),
                will_reach: None,
                cluster_profile: profile.and_then(|p| {
                    p.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .map(String::from)
                }),
                cluster_profile_taken: profiles.taken.get(&view.name).filter(|_| first).cloned(),
                runs: profile.map(|p| Running::of(p, object)),
                matching_clusters: matching,
                cluster_counts: counts,
                clusters_from_previous_rollout: from_previous,
                view: view.clone(),
            }
        })
        .collect()
}

/// The configuration a stage runs: its ClusterProfile's, the spec's or a previous rollout's
/// ([`revision`]). The one view of it every screen uses.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Running {
    /// The profile deploys `spec.profileSpec`; `null` when it cannot be compared.
    pub spec: Option<bool>,
    /// What the profile deploys, when that is not the spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploys: Option<Deploys>,
    /// From what the stage runs to the spec, in one line (`kyverno/kyverno 3.6.1 → 3.6.2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_spec: Option<String>,
    /// The rollout history's revision whose configuration the stage runs (the newest one), when
    /// the history was read and one matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

impl Running {
    fn of(profile: &Value, promotion: &Value) -> Running {
        let spec = revision::runs_the_spec(profile, promotion);
        let differs = spec != Some(true);
        Running {
            spec,
            deploys: differs.then(|| Deploys::of(profile.get("spec"))),
            to_spec: differs
                .then(|| {
                    revision::change(profile.get("spec"), promotion.pointer("/spec/profileSpec"))
                })
                .filter(|c| !c.is_empty()),
            revision: None,
        }
    }
}

/// A warning per stage whose name an earlier stage has: what is shown for the name is the
/// earlier stage's.
fn duplicate_names(pipeline: &Pipeline) -> Vec<String> {
    let stages = &pipeline.stages;
    stages
        .iter()
        .filter_map(|s| {
            let first = stages[..s.index].iter().find(|e| e.name == s.name)?;
            Some(format!(
                "spec.stages[{}].name: Duplicate value: {:?}: the API server refuses two stages \
                 of one name, and Sveltos finds a stage's status, ClusterProfile and clusters by \
                 its name, so they are shown under spec.stages[{}] only",
                s.index, s.name, first.index
            ))
        })
        .collect()
}

/// The rollout identity (`stagesHash`, `profileSpecHash`) of the spec, and the one the status
/// records.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutView {
    /// The spec's, as Sveltos computes it; `null` when the spec cannot be hashed (`specError`).
    pub spec: Option<RolloutId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_error: Option<String>,
    /// Members Sveltos v1.13.0 does not hash (a newer Sveltos build may).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unhashed: Vec<String>,
    /// The status's: the rollout Sveltos is running; `null` before its first reconcile.
    pub status: Option<RolloutId>,
}

impl RolloutView {
    fn of(object: &Value) -> RolloutView {
        let (spec, spec_error, unhashed) = match rollout::identity_of(object) {
            Ok(identity) => (Some(identity.id), None, identity.unhashed),
            Err(e) => (
                None,
                Some(format!("{}: not {}", e.path, e.expected)),
                Vec::new(),
            ),
        };
        RolloutView {
            spec,
            spec_error,
            unhashed,
            status: RolloutId::in_status(object),
        }
    }
}

/// How every proposed approval starts.
const APPROVE_COMMAND: &str = "kubectl promotion approve ";

/// What the operator should do next, from the derived pipeline: approve the gate that waits
/// (the one `approve` without `--stage` opens, [`approval_target`]; never one of a stale
/// status), run the health checks a stage waits on, fix what failed, or know that Sveltos will
/// not act.
fn next_step(pipeline: &Pipeline, preserve: bool) -> Option<String> {
    use pipeline::StageState;
    let name = &pipeline.name;
    if let Some(since) = &pipeline.deleting {
        return Some(format!(
            "none: {name} is being deleted (since {since}); {}",
            on_delete(preserve, true)
        ));
    }
    // While the rollout is aborted nothing moves but a rollback: retrying is what moves it.
    if let Some(a) = &pipeline.aborted {
        return Some(abort::AbortView::of(a.clone()).next_step(name));
    }
    // While paused nothing the other steps propose would move (a spec change is not picked up,
    // an approval is not used): resuming is what moves it.
    if pipeline.paused.is_some() {
        return Some(format!(
            "kubectl promotion resume {name}   (while paused no stage starts and no approval is \
             used)"
        ));
    }
    if pipeline.phase == Phase::Stale {
        return Some(format!(
            "wait for {} to restart the pipeline with the change (kubectl promotion wait \
             {name} --for=stage={} follows it); until then the stages below are the previous \
             rollout's",
            pipeline.reconciler,
            pipeline
                .stages
                .first()
                .map(|s| s.name.as_str())
                .unwrap_or_default()
        ));
    }
    // A gate approved and not yet used is chosen too, but approving it again changes nothing.
    if let Ok(gate) = approval_target(pipeline, None, false) {
        if !gate.already_approved {
            return Some(format!(
                "{APPROVE_COMMAND}{name} --stage {}   ({})",
                gate.stage,
                gate.transition()
            ));
        }
    }
    for stage in &pipeline.stages {
        match &stage.state {
            StageState::Blocked { message } => return Some(message.clone()),
            StageState::Failed {
                retriable: false, ..
            } => {
                return Some(format!(
                    "Sveltos has given up on a cluster of stage {} (FailedNonRetriable): fix the \
                     cause shown below, then change the profile or the cluster so Sveltos tries \
                     again; `kubectl promotion wait {name} --for=complete` follows it",
                    stage.name
                ))
            }
            StageState::Failed { .. } => {
                return Some(format!(
                    "Sveltos retries the failing clusters of stage {} (see below); fix the cause, \
                     and `kubectl promotion wait {name} --for=complete` follows the retry",
                    stage.name
                ))
            }
            StageState::RunningHealthChecks => {
                return Some(format!(
                    "kubectl promotion health {name} --stage {}   (run its health checks now, \
                     as Sveltos does)",
                    stage.name
                ))
            }
            _ => {}
        }
    }
    None
}

/// What deleting the promotion does to the clusters (the reconciler's deletion step,
/// docs/reference/promotion-controller.md §16): its stage ClusterProfiles are deleted, and
/// Sveltos withdraws their add-ons (`stopMatchingBehavior: WithdrawPolicies`), unless
/// `spec.preserveClusterProfilesOnDelete` keeps them. `now`: the deletion has begun.
fn on_delete(preserve: bool, now: bool) -> String {
    match (preserve, now) {
        (false, false) => "deleting this promotion deletes its stage ClusterProfiles, so Sveltos \
                           withdraws the add-on from every cluster of every stage at once; set \
                           spec.preserveClusterProfilesOnDelete: true first to keep them"
            .into(),
        (false, true) => "the reconciler deletes its stage ClusterProfiles, so Sveltos withdraws \
                          the add-on from every cluster of every stage, then removes its finalizer"
            .into(),
        (true, false) => "deleting this promotion keeps its stage ClusterProfiles \
                          (spec.preserveClusterProfilesOnDelete: true): the clusters keep the \
                          add-on"
            .into(),
        (true, true) => "the reconciler keeps its stage ClusterProfiles \
                         (spec.preserveClusterProfilesOnDelete: true), so the clusters keep the \
                         add-on, then removes its finalizer"
            .into(),
    }
}

/// What approving a stage's gate unblocks: `staging → production`, or for a gate on the last
/// stage `production → complete` (Sveltos evaluates the last stage's trigger too).
pub fn transition(view: &StageView) -> String {
    gate::transition(&view.name, view.next_stage.as_deref())
}

/// The names of the stage ClusterProfiles Sveltos generates for a promotion (the ones its
/// ClusterSummaries point at), deduplicated.
pub fn profile_names(promotion: &ClusterPromotion) -> Vec<String> {
    let set: BTreeSet<String> = promotion
        .generated_profiles()
        .into_iter()
        .filter(|p| p.role == ProfileRole::Stage)
        .map(|p| p.name)
        .collect();
    set.into_iter().collect()
}

/// Objects as Sveltos writes them, for the tests of the modules that build views.
#[cfg(test)]
pub mod fixtures {
    use serde_json::{json, Value};

    /// The ClusterProfile Sveltos generates for `stage` of the ClusterPromotion `object`: its
    /// name, promotion label, stage annotation and owner, the promotion's `profileSpec` with the
    /// stage's selector, and `matchingClusters` as `(namespace, name)` pairs.
    pub fn profile(object: &Value, stage: &str, matching: &[(&str, &str)]) -> Value {
        let promotion = object["metadata"]["name"].as_str().unwrap_or_default();
        let mut spec = object["spec"]["profileSpec"].clone();
        if !spec.is_object() {
            spec = json!({});
        }
        let selector = object["spec"]["stages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == stage)
            .map(|s| s["clusterSelector"].clone())
            .unwrap_or(Value::Null);
        spec["clusterSelector"] = selector;
        json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
            "metadata": {
                "name": format!("{promotion}-{stage}"),
                "labels": {"config.projectsveltos.io/promotionname": promotion},
                "annotations": {"config.projectsveltos.io/stagename": stage},
                "ownerReferences": [{"apiVersion": "config.projectsveltos.io/v1beta1",
                                     "kind": "ClusterPromotion", "name": promotion}]
            },
            "spec": spec,
            "status": {"matchingClusters": matching.iter().map(|(ns, name)| json!({
                "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                "namespace": ns, "name": name
            })).collect::<Vec<_>>()}
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::profile;
    use super::*;
    use serde_json::json;

    fn manual_gate() -> Value {
        json!({
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterPromotion",
            "metadata": {"name": "p", "uid": "u1",
                         "annotations": {"audit.kubectl-promotion.dev/approvals":
                            "{\"dev\":{\"user\":\"alice\",\"groups\":[\"ops\"],\"time\":\"2026-02-16T07:00:00Z\",\"reason\":\"ok\"}}"}},
            "spec": {
                "profileSpec": {"syncMode": "Continuous", "helmCharts": [
                    {"chartName": "kyverno/kyverno", "chartVersion": "3.6.2",
                     "releaseName": "kyverno-latest", "releaseNamespace": "kyverno"}]},
                "stages": [
                    {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
                    {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
                     "trigger": {"manual": {"approved": false}}},
                    {"name": "production", "clusterSelector": {"matchLabels": {"env": "prod"}}}
                ]
            },
            "status": {"currentStageName": "staging", "stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "2026-02-16T07:27:41Z"},
                {"name": "staging", "lastSuccessfulAppliedTime": "2026-02-16T07:34:02Z",
                 "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}
            ]}
        })
    }

    fn summary(profile: &str, cluster: &str, status: &str) -> Value {
        json!({
            "metadata": {"name": format!("{profile}-sveltos-{cluster}"), "namespace": "ns",
                         "labels": {CLUSTER_PROFILE_NAME_LABEL: profile}},
            "spec": {"clusterNamespace": "ns", "clusterName": cluster, "clusterType": "Sveltos"},
            "status": {"featureSummaries": [{"featureID": "Helm", "status": status}]}
        })
    }

    #[test]
    fn awaiting_approval_names_the_transition_and_counts_clusters() {
        let snap = Snapshot {
            object: manual_gate(),
            profiles: Ok(vec![
                profile(&manual_gate(), "dev", &[("ns", "a"), ("ns", "b")]),
                profile(&manual_gate(), "staging", &[]),
            ]),
            summaries: Ok(vec![
                summary("p-dev", "a", "Provisioned"),
                summary("p-dev", "b", "Provisioned"),
                summary("p-staging", "c", "Provisioning"),
                summary("other-dev", "z", "Failed"),
            ]),
            events: Ok(vec![]),
            owners: Default::default(),
        };
        let d = Description::build(&snap).unwrap();
        assert_eq!(d.phase, Phase::AwaitingApproval);
        assert_eq!(d.awaiting_approval.as_deref(), Some("staging"));
        assert_eq!(
            d.stages[1].approve_unblocks.as_deref(),
            Some("staging → production")
        );
        assert_eq!(d.stages[0].matching_clusters, Some(2));
        assert_eq!(
            d.stages[0].cluster_counts,
            Some(ClusterCounts {
                total: 2,
                provisioned: 2,
                failed: 0,
                pending: 0,
                without_summary: 0,
                previous_spec: 0,
            })
        );
        assert_eq!(d.stages[2].cluster_profile, None);
        assert_eq!(d.approvals[0].stage, "dev");
        assert_eq!(d.approvals[0].record.user, "alice");
        assert_eq!(
            d.deploys.helm_charts,
            vec!["kyverno/kyverno 3.6.2 as kyverno/kyverno-latest"]
        );
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["stages"][1]["state"], "awaitingApproval");
        assert_eq!(json["stages"][1]["approveUnblocks"], "staging → production");
        assert_eq!(json["kind"], "PromotionDescription");
    }

    #[test]
    fn the_next_step_approves_the_gate_approve_would_open_unless_it_is_approved() {
        let d = Description::build(&Snapshot::offline(manual_gate())).unwrap();
        assert_eq!(
            d.next_step.as_deref(),
            Some("kubectl promotion approve p --stage staging   (staging → production)")
        );
        let mut approved = manual_gate();
        approved["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
        let d = Description::build(&Snapshot::offline(approved)).unwrap();
        assert_eq!(
            d.stages[1].view.state,
            pipeline::StageState::ApprovedPending
        );
        assert_eq!(d.next_step, None);
    }

    #[test]
    fn a_failed_cluster_fails_the_frontier_stage() {
        let mut obj = manual_gate();
        obj["status"]["stages"] = json!([{"name": "dev"}]);
        let snap = Snapshot {
            profiles: Ok(vec![profile(&obj, "dev", &[])]),
            object: obj,
            summaries: Ok(vec![summary("p-dev", "a", "FailedNonRetriable")]),
            events: Ok(vec![]),
            owners: Default::default(),
        };
        let d = Description::build(&snap).unwrap();
        assert_eq!(d.phase, Phase::Failed);
        assert_eq!(d.stages[0].cluster_counts.as_ref().unwrap().failed, 1);
    }

    /// A profile generated for `p`'s dev stage but owned by `p-d` + `ev` (both `p-dev`): gone,
    /// alive, or not read (a watch of one promotion), the reason says what is known.
    #[test]
    fn a_profile_owned_under_another_name_is_judged_by_whether_its_owner_exists() {
        let mut obj = manual_gate();
        obj["status"]["stages"] = json!([{"name": "dev"}]);
        let mut taken = profile(&obj, "dev", &[]);
        taken["metadata"]["labels"][PROMOTION_NAME_LABEL] = json!("p-d");
        taken["metadata"]["ownerReferences"] =
            json!([{"kind": KIND, "name": "p-d", "uid": "u-old"}]);
        let reason = |owners: Owners| {
            let snap = Snapshot {
                profiles: Ok(vec![taken.clone()]),
                object: obj.clone(),
                summaries: Ok(vec![]),
                events: Ok(vec![]),
                owners,
            };
            let d = Description::build(&snap).unwrap();
            assert_eq!(d.phase, Phase::Failed);
            d.stages[0].cluster_profile_taken.clone().unwrap()
        };
        let with = |uid: Option<&str>| Owners {
            found: [("p-d".to_string(), uid.map(String::from))].into(),
            complete: false,
        };
        let gone = "the ClusterProfile \"p-dev\" is left over from ClusterPromotion \"p-d\" \
                    (UID u-old), which no longer exists";
        assert!(reason(with(None)).starts_with(gone));
        // A promotion of that name with another UID is a later namesake: the owner is gone.
        assert!(reason(with(Some("u-new"))).starts_with(gone));
        assert!(reason(Owners::of_all(&[])).starts_with(gone));
        assert!(reason(with(Some("u-old")))
            .starts_with("the ClusterProfile name \"p-dev\" is taken by ClusterPromotion \"p-d\""));
        assert!(reason(Owners::default()).starts_with(
            "the ClusterProfile name \"p-dev\" is held by ClusterPromotion \"p-d\": if that \
             promotion exists"
        ));
    }

    #[test]
    fn offline_has_no_clusters_and_no_warnings() {
        let d = Description::build(&Snapshot::offline(manual_gate())).unwrap();
        assert!(!d.online);
        assert!(d.warnings.is_empty());
        assert!(d.events.is_none());
        assert!(d.stages.iter().all(|s| s.view.clusters.is_none()));
    }

    #[test]
    fn a_repeated_stage_name_is_the_first_stages_with_a_warning() {
        let mut obj = manual_gate();
        obj["spec"]["stages"][2]["name"] = json!("dev");
        let snap = Snapshot {
            profiles: Ok(vec![profile(&obj, "dev", &[("ns", "a")])]),
            object: obj,
            summaries: Ok(vec![summary("p-dev", "a", "Provisioned")]),
            events: Ok(vec![]),
            owners: Default::default(),
        };
        let d = Description::build(&snap).unwrap();
        assert_eq!(d.stages[0].cluster_profile.as_deref(), Some("p-dev"));
        assert_eq!(d.stages[0].cluster_counts.as_ref().unwrap().provisioned, 1);
        assert_eq!(d.stages[2].view.state, pipeline::StageState::NotStarted);
        assert_eq!(d.stages[2].cluster_profile, None);
        assert!(d.stages[2].view.clusters.is_none());
        assert!(!d.stages[2].clusters_from_previous_rollout);
        assert_eq!(d.phase, Phase::AwaitingApproval);
        assert_eq!(
            d.warnings,
            vec![
                "spec.stages[2].name: Duplicate value: \"dev\": the API server refuses two stages \
                 of one name, and Sveltos finds a stage's status, ClusterProfile and clusters by \
                 its name, so they are shown under spec.stages[0] only"
            ]
        );
        let text = crate::render::describe::render(
            &d,
            &crate::render::Style::plain(),
            &crate::render::describe::Options {
                all_clusters: false,
                now: chrono::Utc::now(),
            },
        );
        assert!(text.contains("  3. dev  not started\n     Selector:"));
        assert!(text.contains("Clusters:       shown under stage 1 (the same name; see Warnings)"));
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let mut obj = manual_gate();
        obj["status"]["stages"][1]["lastSuccessfulAppliedTime"] = json!(5);
        let Err(e) = Description::build(&Snapshot::offline(obj)) else {
            panic!("a view of an object that does not fit the model");
        };
        assert_eq!(
            e.to_string(),
            "the object does not match the ClusterPromotion schema: \
             status.stages[1].lastSuccessfulAppliedTime: invalid type: integer `5`, expected a string"
        );
    }

    /// Staging's gate passed in the rollout the spec and status describe (prod reached), by the
    /// approval the controller recorded as used (`used`: alice's, read at generation 5), with
    /// the stage's webhook record `record` and `approved` as given.
    fn passed(
        used: Option<Value>,
        record: Value,
        approved: Option<bool>,
        generation: i64,
    ) -> Value {
        let mut obj = manual_gate();
        obj["metadata"]["generation"] = json!(generation);
        match approved {
            Some(a) => obj["spec"]["stages"][1]["trigger"]["manual"] = json!({"approved": a}),
            None => obj["spec"]["stages"][1]["trigger"]["manual"] = json!({}),
        }
        let id = rollout::identity_of(&as_stored(&obj)).unwrap().id;
        obj["status"] = json!({
        "currentStageName": "production",
        "stagesHash": id.stages_hash, "profileSpecHash": id.profile_spec_hash,
        "stages": [
            {"name": "dev", "lastSuccessfulAppliedTime": "2026-02-16T07:27:41Z"},
            {"name": "staging", "lastSuccessfulAppliedTime": "2026-02-16T07:34:02Z"},
            {"name": "production"}
        ]});
        let mut annotations = json!({
            "audit.kubectl-promotion.dev/approvals": json!({"staging": record}).to_string()
        });
        if let Some(used) = used {
            annotations[used_approvals::USED_APPROVALS_ANNOTATION] =
                json!(json!({"staging": used}).to_string());
        }
        obj["metadata"]["annotations"] = annotations;
        obj
    }

    fn approval(user: &str, time: &str, reason: Option<&str>, generation: i64) -> Value {
        let mut record = json!({"user": user, "groups": ["release-managers"], "time": time,
                                "generation": generation});
        if let Some(reason) = reason {
            record["reason"] = json!(reason);
        }
        record
    }

    fn alice() -> Value {
        approval("alice", "2026-02-16T07:40:00Z", Some("dev soaked"), 5)
    }

    fn used_by(approval: Value, obj: &Value) -> Value {
        let id = rollout::identity_of(&as_stored(obj)).unwrap().id;
        json!({"approval": approval, "rollout": id, "generation": 5})
    }

    fn text(d: &Description) -> String {
        crate::render::describe::render(
            d,
            &crate::render::Style::plain(),
            &crate::render::describe::Options {
                all_clusters: false,
                now: chrono::Utc::now(),
            },
        )
    }

    fn lines<'t>(text: &'t str, label: &str) -> Vec<&'t str> {
        text.lines()
            .map(str::trim)
            .filter(|l| l.starts_with(label))
            .collect()
    }

    /// Alice's approval was used (commit at generation 5 → 6); bob approved staging again before
    /// the status showed it passed (generation 7), and his record replaced hers.
    #[test]
    fn the_approval_used_is_credited_not_one_given_after_the_commit() {
        let bob = approval("bob", "2026-02-16T07:40:03Z", None, 7);
        let base = passed(None, bob.clone(), Some(true), 7);
        let used = used_by(alice(), &base);
        // Bob's approval still set (before the next update), and once the webhook removed it
        // with the controller's next write (generation 8).
        for (approved, generation) in [(Some(true), 7), (None, 8)] {
            let obj = passed(Some(used.clone()), bob.clone(), approved, generation);
            let d = Description::build(&Snapshot::offline(obj)).unwrap();
            let staging = &d.stages[1];
            assert_eq!(staging.view.state, pipeline::StageState::Promoted);
            // While bob's approval is set, its flag reads as past the gate.
            let flag = match approved {
                Some(true) => pipeline::Approval::Consumed,
                _ => pipeline::Approval::NotApproved,
            };
            assert_eq!(staging.view.approval, flag);
            let credited = staging.used_approval.as_ref().expect("the use");
            assert_eq!(
                credited.approval.as_ref().map(|r| r.user.as_str()),
                Some("alice")
            );
            assert!(staging.approval_not_used, "{approved:?}");
            assert_eq!(
                staging.approval_record.as_ref().map(|r| r.user.as_str()),
                Some("bob")
            );
            let json = serde_json::to_value(&d).unwrap();
            assert_eq!(
                json["stages"][1]["usedApproval"]["approval"]["user"],
                "alice"
            );
            assert_eq!(json["stages"][1]["approvalNotUsed"], true);
            let text = text(&d);
            assert_eq!(
                lines(&text, "Used approval:"),
                [
                    "Used approval:  alice at 2026-02-16T07:40:00Z: \"dev soaked\" (used: opened \
                  staging → production in this rollout)"
                ]
            );
            assert_eq!(
                lines(&text, "Last approval:"),
                [
                    "Last approval:  bob at 2026-02-16T07:40:03Z (not used: given after the used \
                  approval above had opened this gate, it opens nothing in this rollout)"
                ]
            );
        }
    }

    #[test]
    fn without_the_controllers_record_the_view_is_as_before() {
        let bob = approval("bob", "2026-02-16T07:40:03Z", None, 7);
        let d = Description::build(&Snapshot::offline(passed(None, bob, Some(true), 7))).unwrap();
        let staging = &d.stages[1];
        assert_eq!(staging.used_approval, None);
        assert!(!staging.approval_not_used);
        let json = serde_json::to_value(&d).unwrap();
        assert!(json["stages"][1].get("usedApproval").is_none());
        assert!(json["stages"][1].get("approvalNotUsed").is_none());
        let text = text(&d);
        assert!(lines(&text, "Used approval:").is_empty());
        assert_eq!(
            lines(&text, "Last approval:"),
            ["Last approval:  bob at 2026-02-16T07:40:03Z (used)"]
        );
    }

    #[test]
    fn the_use_of_the_last_approval_is_said_once() {
        let base = passed(None, alice(), None, 6);
        let d = Description::build(&Snapshot::offline(passed(
            Some(used_by(alice(), &base)),
            alice(),
            None,
            6,
        )))
        .unwrap();
        assert!(!d.stages[1].approval_not_used);
        let text = text(&d);
        assert_eq!(lines(&text, "Used approval:").len(), 1);
        assert!(lines(&text, "Last approval:").is_empty(), "{text}");
    }

    #[test]
    fn an_approval_used_without_a_record_credits_nobody() {
        let base = passed(None, json!({}), None, 6);
        let obj = passed(Some(used_by(Value::Null, &base)), alice(), None, 6);
        let d = Description::build(&Snapshot::offline(obj)).unwrap();
        let used = d.stages[1].used_approval.as_ref().expect("the use");
        assert_eq!(used.approval, None);
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["stages"][1]["usedApproval"]["approval"], Value::Null);
        assert_eq!(
            lines(&text(&d), "Used approval:"),
            [
                "Used approval:  approved without a record (who: unknown) (used: opened staging → \
              production in this rollout)"
            ]
        );
    }

    #[test]
    fn a_use_in_another_rollout_is_not_shown() {
        let base = passed(None, alice(), None, 6);
        let mut used = used_by(alice(), &base);
        used["rollout"]["profileSpecHash"] = json!("an earlier rollout");
        let d =
            Description::build(&Snapshot::offline(passed(Some(used), alice(), None, 6))).unwrap();
        assert_eq!(d.stages[1].used_approval, None);
        // Not passed yet in this rollout: nothing to credit.
        let mut waiting = passed(Some(used_by(alice(), &base)), alice(), None, 6);
        waiting["status"]["stages"] = json!([{"name": "dev"}, {"name": "staging"}]);
        let d = Description::build(&Snapshot::offline(waiting)).unwrap();
        assert_eq!(d.stages[1].used_approval, None);
    }

    #[test]
    fn an_unreadable_record_of_used_approvals_is_a_warning() {
        let mut obj = manual_gate();
        obj["metadata"]["annotations"][used_approvals::USED_APPROVALS_ANNOTATION] =
            json!("{not json");
        let d = Description::build(&Snapshot::offline(obj)).unwrap();
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0].contains(used_approvals::USED_APPROVALS_ANNOTATION));
    }

    #[test]
    fn unreadable_parts_become_warnings() {
        let snap = Snapshot {
            object: manual_gate(),
            profiles: Ok(vec![]),
            summaries: Err("forbidden (403): you cannot list clustersummaries".into()),
            events: Ok(vec![]),
            owners: Default::default(),
        };
        let d = Description::build(&snap).unwrap();
        assert_eq!(d.warnings.len(), 1);
        assert_eq!(
            d.warnings,
            ["ClusterSummaries: forbidden (403): you cannot list clustersummaries"]
        );
        assert!(d.online);
        assert!(d.stages.iter().all(|s| s.view.clusters.is_none()));
    }

    #[test]
    fn a_paused_promotion_says_who_paused_it_and_advises_the_resume() {
        use promotion_shared::pause::{PAUSED_ANNOTATION, PAUSE_RECORD_ANNOTATION};
        let mut object = manual_gate();
        object["metadata"]["annotations"][PAUSED_ANNOTATION] = json!("bad chart");
        object["metadata"]["annotations"][PAUSE_RECORD_ANNOTATION] = json!(
            "{\"paused\":true,\"user\":\"alice\",\"time\":\"2026-02-16T07:40:00Z\",\"reason\":\"bad chart\"}"
        );
        let d = Description::build(&Snapshot::offline(object.clone())).unwrap();
        assert_eq!(d.phase, Phase::Paused);
        let paused = d.paused.as_ref().expect("paused");
        // Beneath the pause the gate still awaits its approval, and approving it is offered
        // (the approval is used once resumed).
        assert_eq!(paused.stages_phase, Phase::AwaitingApproval);
        assert_eq!(d.awaiting_approval.as_deref(), Some("staging"));
        assert_eq!(
            paused.explain("p"),
            "by alice at 2026-02-16T07:40:00Z: \"bad chart\"; no stage starts and no approval is \
             used until `kubectl promotion resume p`"
        );
        assert_eq!(
            d.next_step.as_deref(),
            Some(
                "kubectl promotion resume p   (while paused no stage starts and no approval is \
                 used)"
            )
        );
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["phase"], "paused");
        assert_eq!(
            json["paused"],
            json!({"reason": "bad chart", "stagesPhase": "awaitingApproval",
                   "record": {"paused": true, "user": "alice", "time": "2026-02-16T07:40:00Z",
                              "reason": "bad chart"}})
        );

        // Paused without the webhook: no record, and the view says who paused it is unknown.
        object["metadata"]["annotations"][PAUSED_ANNOTATION] = json!("");
        let d = Description::build(&Snapshot::offline(object.clone())).unwrap();
        let paused = d.paused.as_ref().unwrap();
        assert_eq!(paused.pause.record, None);
        assert_eq!(
            paused.explain("p"),
            "(who paused it is not recorded: the admission webhook did not see the pause) (no \
             reason given); no stage starts and no approval is used until `kubectl promotion \
             resume p`"
        );

        // Deletion goes on while paused: the phase is the deletion's, the pause still shown.
        object["metadata"]["deletionTimestamp"] = json!("2026-02-16T07:50:00Z");
        let d = Description::build(&Snapshot::offline(object)).unwrap();
        assert_eq!(d.phase, Phase::Deleting);
        assert!(d.paused.is_some());
        assert!(d.next_step.unwrap().starts_with("none: p is being deleted"));
    }
}
