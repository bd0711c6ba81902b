//! What a stage's clusters report, read from the ClusterSummaries of the stage's ClusterProfile.

use serde::Serialize;
use serde_json::Value;

/// `status.featureSummaries[].status` values that mean the feature did not deploy.
pub const FAILED_STATUSES: [&str; 2] = ["Failed", "FailedNonRetriable"];

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeatureState {
    #[serde(rename = "featureID")]
    pub feature_id: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_applied_time: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterState {
    /// Namespace of the cluster (and of its ClusterSummary).
    pub namespace: String,
    pub name: String,
    /// `Capi` or `Sveltos`.
    pub cluster_type: String,
    pub summary_name: String,
    pub features: Vec<FeatureState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

impl ClusterState {
    /// Read a ClusterSummary object (as returned by the API server). `None` when it is not one.
    pub fn from_cluster_summary(summary: &Value) -> Option<Self> {
        let str_at = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(String::from);
        let spec = summary.get("spec")?;
        let features = summary
            .pointer("/status/featureSummaries")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|f| FeatureState {
                        feature_id: str_at(f, "/featureID").unwrap_or_default(),
                        status: str_at(f, "/status").unwrap_or_default(),
                        failure_message: str_at(f, "/failureMessage"),
                        last_applied_time: str_at(f, "/lastAppliedTime"),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(ClusterState {
            namespace: str_at(spec, "/clusterNamespace")
                .or_else(|| str_at(summary, "/metadata/namespace"))
                .unwrap_or_default(),
            name: str_at(spec, "/clusterName").unwrap_or_default(),
            cluster_type: str_at(spec, "/clusterType").unwrap_or_default(),
            summary_name: str_at(summary, "/metadata/name").unwrap_or_default(),
            features,
            failure_message: str_at(summary, "/status/failureMessage"),
        })
    }

    /// The first failed feature, as "<feature>: <message>".
    pub fn failure(&self) -> Option<String> {
        self.features
            .iter()
            .find(|f| FAILED_STATUSES.contains(&f.status.as_str()))
            .map(|f| {
                let msg = f.failure_message.as_deref().unwrap_or("no message");
                format!(
                    "cluster {}/{}: {} {}: {msg}",
                    self.namespace, self.name, f.feature_id, f.status
                )
            })
    }

    /// Upstream `isCluterSummaryProvisioned`: every feature reports Provisioned.
    pub fn is_provisioned(&self) -> bool {
        !self.features.is_empty() && self.features.iter().all(|f| f.status == "Provisioned")
    }
}
