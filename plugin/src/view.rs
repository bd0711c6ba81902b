//! The computed model behind `describe` (and its `-o json|yaml`): the pipeline from
//! `promotion_shared::pipeline::derive`, joined with what the cluster reports per stage, the
//! webhook's audit records and the object's Events. Field names are part of the plugin's
//! interface; `plugin/docs/output.md` documents them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use promotion_shared::admission::{approval_records, spec_change_record, ApprovalRecord};
use promotion_shared::cluster_summary::ClusterState;
use promotion_shared::model::{
    stage_profile_name, ClusterPromotion, ProfileRole, CLUSTER_PROFILE_NAME_LABEL,
    STAGE_NAME_ANNOTATION,
};
use promotion_shared::pipeline::{self, Observations, Phase, Pipeline, StageView};

use crate::error::{Error, Result};
use crate::events::{event_view, EventView};

pub const API_VERSION: &str = "kubectl-promotion.dev/v1alpha1";

/// Everything read from the cluster for one promotion.
pub struct Snapshot {
    /// The ClusterPromotion exactly as stored.
    pub object: Value,
    /// Stage ClusterProfiles; `Err` says why they could not be read.
    pub profiles: std::result::Result<Vec<Value>, String>,
    pub summaries: std::result::Result<Vec<Value>, String>,
    pub events: std::result::Result<Vec<Value>, String>,
}

impl Snapshot {
    /// An offline manifest: nothing about clusters or events is known.
    pub fn offline(object: Value) -> Snapshot {
        Snapshot {
            object,
            profiles: Err(String::new()),
            summaries: Err(String::new()),
            events: Err(String::new()),
        }
    }
}

/// Deserialize the stored object into the shared model, naming what is wrong.
pub fn typed(object: &Value) -> Result<ClusterPromotion> {
    serde_json::from_value(object.clone()).map_err(|e| {
        Error::Invalid(format!(
            "the object does not match the ClusterPromotion schema: {e}"
        ))
    })
}

/// Group ClusterSummaries by stage: the summary's `projectsveltos.io/cluster-profile-name` label
/// names the generated profile `<promotion>-<stage>`. Every stage whose profile exists gets an
/// entry (possibly empty: no matching clusters).
pub fn observations(
    promotion: &ClusterPromotion,
    profiles: &[Value],
    summaries: &[Value],
) -> Observations {
    let by_profile: BTreeMap<String, String> = promotion
        .generated_profiles()
        .into_iter()
        .filter(|p| p.role == ProfileRole::Stage)
        .map(|p| (p.name, p.stage))
        .collect();
    let mut obs = Observations::new();
    for p in profiles {
        if let Some(stage) = p
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .and_then(|n| by_profile.get(n))
        {
            obs.entry(stage.clone()).or_default();
        }
    }
    for s in summaries {
        let profile = s
            .pointer("/metadata/labels")
            .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
            .and_then(Value::as_str);
        let Some(stage) = profile.and_then(|p| by_profile.get(p)) else {
            continue;
        };
        if let Some(state) = ClusterState::from_cluster_summary(s) {
            obs.entry(stage.clone()).or_default().push(state);
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
    /// Neither provisioned nor failed yet.
    pub pending: usize,
}

impl ClusterCounts {
    pub fn of(clusters: &[ClusterState]) -> Self {
        let failed = clusters.iter().filter(|c| c.failure().is_some()).count();
        let provisioned = clusters.iter().filter(|c| c.is_provisioned()).count();
        ClusterCounts {
            total: clusters.len(),
            provisioned,
            failed,
            pending: clusters.len() - provisioned - failed,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageDetail {
    #[serde(flatten)]
    pub view: StageView,
    /// Name of the generated ClusterProfile, when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_profile: Option<String>,
    /// Clusters the ClusterProfile reports as matching (`status.matchingClusters`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matching_clusters: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_counts: Option<ClusterCounts>,
    /// The clusters shown belong to an earlier rollout (the stage has not been reached in
    /// the current one).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clusters_from_previous_rollout: bool,
    /// Set when the stage is awaiting approval: the transition approving it unblocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approve_unblocks: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_record: Option<ApprovalRecord>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalEntry {
    pub stage: String,
    #[serde(flatten)]
    pub record: ApprovalRecord,
}

/// What the profile spec deploys, in a few words per item.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deploys {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub helm_charts: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policy_refs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kustomization_refs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_mode: Option<String>,
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
    /// The stage whose manual gate blocks the pipeline now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub awaiting_approval: Option<String>,
    pub deploys: Deploys,
    pub stages: Vec<StageDetail>,
    pub approvals: Vec<ApprovalEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_spec_change: Option<promotion_shared::admission::SpecChangeRecord>,
    /// `null` when not read (offline) or not readable (see `warnings`).
    pub events: Option<Vec<EventView>>,
    /// Whether cluster data was read (false for `describe -f`).
    pub online: bool,
    /// Data that could not be read or parsed, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Description {
    pub fn build(snap: &Snapshot) -> Result<Description> {
        let promotion = typed(&snap.object)?;
        let online = snap.profiles.is_ok() || snap.summaries.is_ok();
        let mut warnings = Vec::new();
        for (what, r) in [
            ("ClusterProfiles", snap.profiles.as_ref().err()),
            ("ClusterSummaries", snap.summaries.as_ref().err()),
            ("Events", snap.events.as_ref().err()),
        ] {
            if let Some(e) = r.filter(|e| !e.is_empty()) {
                warnings.push(format!("{what} not shown: {e}"));
            }
        }
        let empty = Vec::new();
        let profiles = snap.profiles.as_ref().unwrap_or(&empty);
        let summaries = snap.summaries.as_ref().unwrap_or(&empty);
        let obs = observations(&promotion, profiles, summaries);
        let pipeline = pipeline::derive(
            &promotion,
            online.then_some(&obs),
            &promotion_shared::freshness::Freshness::Current,
        );

        let approvals = match approval_records(&snap.object) {
            Ok(m) => m,
            Err(e) => {
                warnings.push(e.to_string());
                BTreeMap::new()
            }
        };
        let last_spec_change = spec_change_record(&snap.object).unwrap_or_else(|e| {
            warnings.push(e.to_string());
            None
        });
        let stages = stage_details(&promotion, &pipeline, profiles, &approvals);
        let events = snap
            .events
            .as_ref()
            .ok()
            .map(|evs| evs.iter().map(event_view).collect());
        let awaiting_approval = pipeline.awaiting_approval().map(|s| s.name.clone());
        let Pipeline {
            name,
            phase,
            current_stage,
            note,
            ..
        } = pipeline;
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
            awaiting_approval,
            deploys: deploys(&snap.object),
            stages,
            approvals: approvals
                .into_iter()
                .map(|(stage, record)| ApprovalEntry { stage, record })
                .collect(),
            last_spec_change,
            events,
            online,
            warnings,
        })
    }
}

fn stage_details(
    promotion: &ClusterPromotion,
    pipeline: &Pipeline,
    profiles: &[Value],
    approvals: &BTreeMap<String, ApprovalRecord>,
) -> Vec<StageDetail> {
    let name = promotion.name();
    let by_name: BTreeMap<&str, &Value> = profiles
        .iter()
        .filter_map(|p| {
            p.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(|n| (n, p))
        })
        .collect();
    pipeline
        .stages
        .iter()
        .map(|view| {
            let profile_name = stage_profile_name(name, &view.name);
            let profile = by_name.get(profile_name.as_str()).copied().filter(|p| {
                // A profile with this name but another stage annotation is not this stage's.
                p.pointer("/metadata/annotations")
                    .and_then(|a| a.get(STAGE_NAME_ANNOTATION))
                    .and_then(Value::as_str)
                    .is_none_or(|s| s == view.name)
            });
            let matching = profile.and_then(|p| {
                p.pointer("/status/matchingClusters")
                    .and_then(Value::as_array)
                    .map(Vec::len)
            });
            let counts = view.clusters.as_deref().map(ClusterCounts::of);
            let from_previous = view.state == pipeline::StageState::NotStarted
                && view.clusters.as_ref().is_some_and(|c| !c.is_empty());
            StageDetail {
                approve_unblocks: (view.state == pipeline::StageState::AwaitingApproval)
                    .then(|| transition(view))
                    .flatten(),
                approval_record: approvals.get(&view.name).cloned(),
                cluster_profile: profile.map(|_| profile_name),
                matching_clusters: matching,
                cluster_counts: counts,
                clusters_from_previous_rollout: from_previous,
                view: view.clone(),
            }
        })
        .collect()
}

/// `staging → production`.
pub fn transition(view: &StageView) -> Option<String> {
    view.next_stage
        .as_ref()
        .map(|next| format!("{} → {next}", view.name))
}

fn deploys(object: &Value) -> Deploys {
    let spec = object.pointer("/spec/profileSpec");
    let list = |key: &str| -> Vec<Value> {
        spec.and_then(|s| s.get(key))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Deploys {
        helm_charts: list("helmCharts")
            .iter()
            .map(|c| {
                let version = s(c, "chartVersion");
                let release = format!("{}/{}", s(c, "releaseNamespace"), s(c, "releaseName"));
                let mut text = s(c, "chartName");
                if !version.is_empty() {
                    text.push_str(&format!(" {version}"));
                }
                format!("{text} as {release}")
            })
            .collect(),
        policy_refs: list("policyRefs").iter().map(reference).collect(),
        kustomization_refs: list("kustomizationRefs").iter().map(reference).collect(),
        sync_mode: spec
            .and_then(|s| s.get("syncMode"))
            .and_then(Value::as_str)
            .map(String::from),
    }
}

fn reference(r: &Value) -> String {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let ns = s("namespace");
    if ns.is_empty() {
        format!("{} {}", s("kind"), s("name"))
    } else {
        format!("{} {ns}/{}", s("kind"), s("name"))
    }
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

#[cfg(test)]
mod tests {
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
                json!({"metadata": {"name": "p-dev"}, "status": {"matchingClusters": [{}, {}]}}),
                json!({"metadata": {"name": "p-staging"}}),
            ]),
            summaries: Ok(vec![
                summary("p-dev", "a", "Provisioned"),
                summary("p-dev", "b", "Provisioned"),
                summary("p-staging", "c", "Provisioning"),
                summary("other-dev", "z", "Failed"),
            ]),
            events: Ok(vec![]),
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
                pending: 0
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
    fn a_failed_cluster_fails_the_frontier_stage() {
        let mut obj = manual_gate();
        obj["status"]["stages"] = json!([{"name": "dev"}]);
        let snap = Snapshot {
            object: obj,
            profiles: Ok(vec![json!({"metadata": {"name": "p-dev"}})]),
            summaries: Ok(vec![summary("p-dev", "a", "FailedNonRetriable")]),
            events: Ok(vec![]),
        };
        let d = Description::build(&snap).unwrap();
        assert_eq!(d.phase, Phase::Failed);
        assert_eq!(d.stages[0].cluster_counts.as_ref().unwrap().failed, 1);
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
    fn unreadable_parts_become_warnings() {
        let snap = Snapshot {
            object: manual_gate(),
            profiles: Ok(vec![]),
            summaries: Err("forbidden (403): you cannot list clustersummaries".into()),
            events: Ok(vec![]),
        };
        let d = Description::build(&snap).unwrap();
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0].starts_with("ClusterSummaries not shown"));
    }
}
