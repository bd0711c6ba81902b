//! A ClusterSummary list decoded to the fields the live view reads (`ClusterState` and the
//! labels that tie a summary to its promotion). At fleet scale a full decode spends most of the
//! command's time building JSON trees for `managedFields`, `spec.clusterProfileSpec` and status
//! details nobody reads; these types let serde skip them without allocating.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Deserialize)]
struct List {
    #[serde(default)]
    items: Vec<Summary>,
}

#[derive(Deserialize, Serialize)]
struct Summary {
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    spec: Spec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
}

#[derive(Default, Deserialize, Serialize)]
struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster_profile_spec: Option<ProfileLists>,
}

/// The lists of the profile spec a ClusterSummary carries that tell whether Sveltos has copied
/// the ClusterProfile's current spec into it (`deployed::behind`): a summary still carrying the
/// previous spec is not counted as provisioned for the new one.
#[derive(Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileLists {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    helm_charts: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    policy_refs: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kustomization_refs: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    validate_healths: Option<Value>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feature_summaries: Option<Vec<Feature>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure_message: Option<String>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Feature {
    #[serde(rename = "featureID", default, skip_serializing_if = "Option::is_none")]
    feature_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_applied_time: Option<String>,
}

/// The items of a ClusterSummary list body, each reduced to what the view reads.
pub fn decode(body: &[u8]) -> serde_json::Result<Vec<Value>> {
    let list: List = serde_json::from_slice(body)?;
    list.items.into_iter().map(serde_json::to_value).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use promotion_shared::cluster_summary::ClusterState;
    use serde_json::json;

    #[test]
    fn the_view_reads_the_same_from_the_reduced_summary() {
        let full = json!({
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterSummary",
            "metadata": {
                "name": "web-prod-sveltos-prod01", "namespace": "prod",
                "labels": {"projectsveltos.io/cluster-profile-name": "web-prod"},
                "managedFields": [{"manager": "addon-controller", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {
                "clusterNamespace": "prod", "clusterName": "prod01", "clusterType": "Sveltos",
                "clusterProfileSpec": {"helmCharts": [{"chartName": "kyverno/kyverno"}]}
            },
            "status": {
                "featureSummaries": [
                    {"featureID": "Helm", "status": "Failed", "failureMessage": "boom",
                     "lastAppliedTime": "2026-02-16T07:29:41Z", "hash": "abc"}
                ],
                "helmReleaseSummaries": [{"releaseName": "x"}],
                "failureMessage": "outer"
            }
        });
        let body =
            serde_json::to_vec(&json!({"kind": "ClusterSummaryList", "items": [full.clone()]}))
                .unwrap();
        let reduced = decode(&body).unwrap();
        assert_eq!(reduced.len(), 1);
        assert_eq!(
            ClusterState::from_cluster_summary(&reduced[0]),
            ClusterState::from_cluster_summary(&full)
        );
        assert_eq!(reduced[0]["metadata"]["labels"], full["metadata"]["labels"]);
        assert!(reduced[0]["metadata"].get("managedFields").is_none());
        // What tells a summary still on the previous spec is kept.
        let profile = json!({"spec": full["spec"]["clusterProfileSpec"]});
        let behind = promotion_shared::reconcile::deployed::behind;
        assert!(!behind(&profile, &reduced[0]));
        let newer = json!({"spec": {"helmCharts": [{"chartName": "kyverno/kyverno",
                                                    "chartVersion": "3.6.3"}]}});
        assert!(behind(&newer, &reduced[0]));
        assert!(decode(b"{\"items\": 3}").is_err());
        assert_eq!(decode(b"{}").unwrap(), Vec::<Value>::new());
    }
}
