//! Rust types for `config.projectsveltos.io/v1beta1` `ClusterPromotion`.
//!
//! The parts this project reasons about are typed; everything else lands in an `extra` map
//! (`#[serde(flatten)]`) so that a round trip through these types never drops a field or invents a
//! default. Every optional field is an `Option` so "absent" stays distinct from `false`/empty,
//! which matters for `approved` (three-valued upstream) and `automaticReset` (defaulted to true by
//! the API server when absent). So every struct reads a missing field as its default
//! (`#[serde(default)]` on the struct) and writes no `None` (`skip_serializing_none`).

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

use crate::api_resources::PROMOTION;

/// The ClusterPromotion resource, as [`crate::api_resources`] names it.
pub const GROUP: &str = PROMOTION.group;
pub const VERSION: &str = PROMOTION.version;
pub const API_VERSION: &str = PROMOTION.api_version;
pub const KIND: &str = PROMOTION.kind;
pub const PLURAL: &str = PROMOTION.plural;
pub const FINALIZER: &str = "config.projectsveltos.io/clusterpromotion";

/// Label Sveltos puts on every ClusterProfile it generates for a promotion.
pub const PROMOTION_NAME_LABEL: &str = "config.projectsveltos.io/promotionname";
/// Annotation Sveltos puts on generated ClusterProfiles naming the stage.
pub const STAGE_NAME_ANNOTATION: &str = "config.projectsveltos.io/stagename";
/// Label on the preverification ClusterProfile.
pub const VERIFICATION_LABEL: &str = "config.projectsveltos.io/promotion-verification";
/// On a stage profile of a promotion with `preserveClusterProfilesOnDelete`, instead of an owner
/// reference (which would let the garbage collector delete it): the promotion's UID.
pub const PRESERVED_FOR_ANNOTATION: &str =
    "promotion-controller.kubectl-promotion.dev/preserved-for";
/// Label Sveltos puts on ClusterSummaries naming their ClusterProfile.
pub const CLUSTER_PROFILE_NAME_LABEL: &str = "projectsveltos.io/cluster-profile-name";

type Extra = Map<String, Value>;

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterPromotion {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    pub spec: ClusterPromotionSpec,
    pub status: Option<ClusterPromotionStatus>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterPromotionSpec {
    pub profile_spec: Option<ProfileSpec>,
    pub stages: Vec<Stage>,
    pub preserve_cluster_profiles_on_delete: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `spec.profileSpec`: a ClusterProfile spec without selector. Feature lists are kept as raw JSON
/// (they are compared and copied, never interpreted); health checks are typed.
#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProfileSpec {
    pub sync_mode: Option<String>,
    pub max_update: Option<Value>,
    pub helm_charts: Option<Vec<Value>>,
    pub policy_refs: Option<Vec<Value>>,
    pub kustomization_refs: Option<Vec<Value>>,
    pub validate_healths: Option<Vec<ValidateHealth>>,
    pub pre_deploy_checks: Option<Vec<ValidateHealth>>,
    pub pre_delete_checks: Option<Vec<ValidateHealth>>,
    pub post_delete_checks: Option<Vec<ValidateHealth>>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Stage {
    pub name: String,
    pub cluster_selector: Option<LabelSelector>,
    pub trigger: Option<Trigger>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Trigger {
    pub auto: Option<AutoTrigger>,
    pub manual: Option<ManualTrigger>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AutoTrigger {
    pub delay: Option<String>,
    pub pre_health_check_deployment: Option<Vec<Value>>,
    pub post_delay_health_checks: Option<Vec<ValidateHealth>>,
    pub promotion_window: Option<TimeWindow>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ManualTrigger {
    pub delay: Option<String>,
    pub pre_health_check_deployment: Option<Vec<Value>>,
    pub post_delay_health_checks: Option<Vec<ValidateHealth>>,
    /// Absent, `false` and `true` are three different states upstream.
    pub approved: Option<bool>,
    /// The CRD defaults this to `true`; absent is kept absent so patches never write it.
    pub automatic_reset: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl ManualTrigger {
    /// Sveltos clears `approved` after promoting ([`crate::approval::resets_automatically`]).
    pub fn resets_automatically(&self) -> bool {
        crate::approval::resets_automatically(self.automatic_reset)
    }

    pub fn is_approved(&self) -> bool {
        self.approved == Some(true)
    }
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TimeWindow {
    pub from: String,
    pub to: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// libsveltos `ValidateHealth`.
#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ValidateHealth {
    pub name: String,
    #[serde(rename = "featureID")]
    pub feature_id: Option<String>,
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub script: Option<String>,
    #[serde(rename = "evaluateCEL")]
    pub evaluate_cel: Option<Vec<CelRule>>,
    pub job_check: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CelRule {
    pub name: String,
    pub rule: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Times are kept as the strings the API server wrote (RFC 3339, second resolution) so that a
/// round trip is byte-for-byte; [`crate::time`] parses them where arithmetic is needed.
#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterPromotionStatus {
    pub current_stage_name: Option<String>,
    pub last_promotion_time: Option<String>,
    pub profile_spec_hash: Option<String>,
    pub stages_hash: Option<String>,
    pub stages: Option<Vec<StageStatus>>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StageStatus {
    pub name: String,
    pub last_update_reconciled_time: Option<String>,
    pub last_successful_applied_time: Option<String>,
    pub last_status_check_time: Option<String>,
    pub failure_message: Option<String>,
    pub current_status_description: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl ClusterPromotion {
    pub fn new(name: &str, spec: ClusterPromotionSpec) -> Self {
        ClusterPromotion {
            api_version: Some(API_VERSION.to_string()),
            kind: Some(KIND.to_string()),
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..ObjectMeta::default()
            },
            spec,
            status: None,
            extra: Extra::new(),
        }
    }

    /// The typed view of a ClusterPromotion as the API server (or a manifest) holds it; the
    /// error names the field path that does not decode (`spec.stages[1].trigger: …`).
    pub fn decode(value: &Value) -> Result<ClusterPromotion, String> {
        serde_path_to_error::deserialize(value).map_err(|e| format!("{}: {}", e.path(), e.inner()))
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }

    pub fn stage_index(&self, stage: &str) -> Option<usize> {
        self.spec.stages.iter().position(|s| s.name == stage)
    }

    /// Status entries in order; empty when the pipeline has not started (or restarted).
    pub fn stage_statuses(&self) -> &[StageStatus] {
        self.status
            .as_ref()
            .and_then(|s| s.stages.as_deref())
            .unwrap_or(&[])
    }

    pub fn stage_status(&self, stage: &str) -> Option<&StageStatus> {
        self.stage_statuses().iter().find(|s| s.name == stage)
    }

    /// A stage is reached once Sveltos has appended it to `status.stages` in the current rollout.
    pub fn stage_reached(&self, stage: &str) -> bool {
        self.stage_status(stage).is_some()
    }

    /// The rollout identity the status carries, when it has both hashes.
    pub fn status_rollout(&self) -> Option<crate::rollout::RolloutId> {
        let status = self.status.as_ref()?;
        let text = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        Some(crate::rollout::RolloutId {
            stages_hash: text(&status.stages_hash)?,
            profile_spec_hash: text(&status.profile_spec_hash)?,
        })
    }

    /// The stage whose approval a reconciler has used and whose promotion it committed, in the
    /// rollout the status is at, not yet recorded in the status ([`crate::promoting`]): between
    /// the commit and the status write, that stage is promoting, not awaiting approval.
    pub fn committed_step(&self) -> Option<String> {
        let annotations = self.metadata.annotations.as_ref()?;
        let object = serde_json::json!({"metadata": {"annotations": annotations}});
        let step = crate::promoting::recorded(&object).0?;
        (Some(&step.rollout) == self.status_rollout().as_ref()).then_some(step.stage)
    }

    /// The webhook's record of the write that left stage `stage`'s approval as it is
    /// ([`crate::admission::credited`]), if there is one and it can be read.
    pub fn approval_record(&self, stage: &str) -> Option<crate::admission::ApprovalRecord> {
        let annotations = self.metadata.annotations.as_ref()?;
        let object = serde_json::json!({"metadata": {"annotations": annotations}});
        let record = crate::admission::approval_records(&object)
            .ok()?
            .remove(stage)?;
        crate::admission::credited(&record, self.metadata.generation).then_some(record)
    }

    /// What the approval on stage `index` has been used for, if it has
    /// ([`crate::approval::used`]). `status_is_specs`: the status describes the rollout in the
    /// spec ([`crate::freshness`]).
    pub fn approval_used(
        &self,
        index: usize,
        status_is_specs: bool,
    ) -> Option<crate::approval::Used<'_>> {
        let recorded = self.status_rollout().and_then(|_| {
            let stage = self.spec.stages.get(index)?;
            self.approval_record(&stage.name)?.rollout
        });
        self.gate_passed(index, recorded.as_ref(), status_is_specs)
    }

    /// What passing stage `index`'s gate in rollout `rollout` led to, if the status is of that
    /// rollout ([`crate::approval::same_rollout`]; `None`: not known, taken as the spec's) and
    /// shows it ([`crate::approval::used`]).
    pub fn gate_passed(
        &self,
        index: usize,
        rollout: Option<&crate::rollout::RolloutId>,
        status_is_specs: bool,
    ) -> Option<crate::approval::Used<'_>> {
        let status_id = self.status_rollout();
        let same_rollout =
            crate::approval::same_rollout(status_id.as_ref(), rollout, status_is_specs);
        let names: Vec<&str> = self.spec.stages.iter().map(|s| s.name.as_str()).collect();
        let reached: Vec<&str> = self
            .stage_statuses()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        let last = names
            .last()
            .and_then(|n| self.stage_status(n))
            .and_then(|s| s.current_status_description.as_deref());
        crate::approval::used(&names, index, same_rollout, &reached, last)
    }

    /// Names of the stages whose gate `approve` can open ([`crate::approval::approvable`]), in
    /// spec order.
    pub fn approvable_stages(&self) -> Vec<&str> {
        self.spec
            .stages
            .iter()
            .filter(|s| crate::approval::approvable(s.manual().is_some(), s.auto().is_some()))
            .map(|s| s.name.as_str())
            .collect()
    }

    /// The ClusterProfiles Sveltos generates for this promotion, stage by stage.
    pub fn generated_profiles(&self) -> Vec<GeneratedProfile> {
        self.spec
            .stages
            .iter()
            .flat_map(|s| GeneratedProfile::for_stage(self.name(), &s.name))
            .collect()
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(String::as_str)
    }
}

/// Name of the ClusterProfile Sveltos generates for a stage.
pub fn stage_profile_name(promotion: &str, stage: &str) -> String {
    // Concatenated rather than `format!`ed: the webhook's validation builds these names for
    // every stage of every review, and the formatting machinery cost several times the copying.
    [promotion, "-", stage].concat()
}

/// The ClusterProfile name of each stage of a stored promotion `object` named `promotion`, in
/// order, whether or not the profile exists yet: what a reconcile reads ClusterSummaries by.
/// Read from the JSON, so that a promotion the typed model cannot hold is still looked at.
pub fn stage_profile_names(object: &serde_json::Value, promotion: &str) -> Vec<String> {
    object
        .pointer("/spec/stages")
        .and_then(serde_json::Value::as_array)
        .map(|stages| {
            stages
                .iter()
                .filter_map(|s| s.get("name").and_then(serde_json::Value::as_str))
                .map(|s| stage_profile_name(promotion, s))
                .collect()
        })
        .unwrap_or_default()
}

/// Name of the ClusterProfile Sveltos generates for a stage's `preHealthCheckDeployment`.
pub fn preverification_profile_name(promotion: &str, stage: &str) -> String {
    ["preverification-", promotion, "-", stage].concat()
}

/// Which of a stage's generated ClusterProfiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ProfileRole {
    /// `<promotion>-<stage>`: deploys `profileSpec` to the stage's clusters.
    Stage,
    /// `preverification-<promotion>-<stage>`: deploys `preHealthCheckDeployment` after the delay.
    Preverification,
}

/// A ClusterProfile Sveltos generates for a promotion's stage (addon-controller
/// `mainDeploymentClusterProfileName` / `preCheckDeploymentClusterProfileName`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GeneratedProfile {
    pub stage: String,
    pub name: String,
    pub role: ProfileRole,
}

impl GeneratedProfile {
    pub fn for_stage(promotion: &str, stage: &str) -> [GeneratedProfile; 2] {
        [
            GeneratedProfile {
                stage: stage.to_string(),
                name: stage_profile_name(promotion, stage),
                role: ProfileRole::Stage,
            },
            GeneratedProfile {
                stage: stage.to_string(),
                name: preverification_profile_name(promotion, stage),
                role: ProfileRole::Preverification,
            },
        ]
    }
}

/// Whether a ClusterProfile belongs to `promotion`: Sveltos labels it with the promotion's name
/// and makes the promotion its owner (our controller names the promotion's UID in
/// [`PRESERVED_FOR_ANNOTATION`] instead, while it preserves the profiles). A profile whose name
/// merely looks generated (`web` + `eu-prod` and `web-eu` + `prod` both give `web-eu-prod`) is not
/// this promotion's.
pub fn profile_belongs_to(profile: &Value, promotion: &str, uid: Option<&str>) -> bool {
    let labelled = generated_for(profile, promotion);
    let same_uid = |other: Option<&str>| match (uid, other) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    let owners = profile
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array);
    let owned = match owners {
        Some(refs) => refs.iter().any(|r| {
            r.get("kind").and_then(Value::as_str) == Some(KIND)
                && r.get("name").and_then(Value::as_str) == Some(promotion)
                && same_uid(r.get("uid").and_then(Value::as_str))
        }),
        None => same_uid(preserved_for(profile)),
    };
    labelled && owned
}

/// Whether a ClusterProfile was generated for a promotion named `promotion` (this one, or an
/// earlier one of that name whose profiles were preserved): it carries the promotion-name label
/// Sveltos and our controller put on every generated profile. Such a profile is taken over by a
/// forced apply, as upstream does; any other of the same name (made by hand, or by another
/// tool) is not.
pub fn generated_for(profile: &Value, promotion: &str) -> bool {
    profile
        .pointer("/metadata/labels")
        .and_then(|l| l.get(PROMOTION_NAME_LABEL))
        .and_then(Value::as_str)
        == Some(promotion)
}

/// The promotion UID a preserved profile names ([`PRESERVED_FOR_ANNOTATION`]).
pub fn preserved_for(profile: &Value) -> Option<&str> {
    profile
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PRESERVED_FOR_ANNOTATION))
        .and_then(Value::as_str)
}

/// Whether a manifest document is a ClusterPromotion (any version of the group).
pub fn is_cluster_promotion(document: &Value) -> bool {
    document.get("kind").and_then(Value::as_str) == Some(KIND)
        && document
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.split_once('/'))
            .is_some_and(|(group, version)| group == GROUP && !version.is_empty())
}

impl Stage {
    pub fn manual(&self) -> Option<&ManualTrigger> {
        self.trigger.as_ref().and_then(|t| t.manual.as_ref())
    }

    pub fn auto(&self) -> Option<&AutoTrigger> {
        self.trigger.as_ref().and_then(|t| t.auto.as_ref())
    }
}

impl kube_core::Resource for ClusterPromotion {
    type DynamicType = ();
    type Scope = k8s_openapi::ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(KIND)
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(GROUP)
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(VERSION)
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(API_VERSION)
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(PLURAL)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stage_has_its_profile_name_even_when_the_object_is_not_a_valid_promotion() {
        let object = serde_json::json!({"spec": {"stages": [
            {"name": "dev"}, {"clusterSelector": {}}, {"name": "prod", "trigger": "nonsense"}
        ]}});
        assert_eq!(stage_profile_names(&object, "web"), ["web-dev", "web-prod"]);
        assert!(stage_profile_names(&serde_json::json!({}), "web").is_empty());
    }
}
