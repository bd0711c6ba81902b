//! What a stage's clusters report, read from the ClusterSummaries of the stage's ClusterProfile
//! (and, for a cluster the profile matches that has no ClusterSummary yet, from the profile's
//! `status.matchingClusters`).

use serde::Serialize;
use serde_json::Value;
use serde_with::skip_serializing_none;

/// `status.featureSummaries[].status`: Sveltos retries the feature.
pub const FAILED: &str = "Failed";
/// `status.featureSummaries[].status`: Sveltos gave up (a template error, or
/// `maxConsecutiveFailures` reached) until the profile or cluster changes.
pub const FAILED_NON_RETRIABLE: &str = "FailedNonRetriable";

#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeatureState {
    #[serde(rename = "featureID")]
    pub feature_id: String,
    pub status: String,
    pub failure_message: Option<String>,
    pub last_applied_time: Option<String>,
}

#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterState {
    /// Namespace of the cluster (and of its ClusterSummary).
    pub namespace: String,
    pub name: String,
    /// `Capi` or `Sveltos`.
    pub cluster_type: String,
    /// `None`: the ClusterProfile matches the cluster, but Sveltos has not created its
    /// ClusterSummary yet.
    pub summary_name: Option<String>,
    pub features: Vec<FeatureState>,
    pub failure_message: Option<String>,
    /// The ClusterSummary does not deploy its ClusterProfile's spec yet: Sveltos has not copied
    /// the spec into it, or its status reports on an earlier spec
    /// ([`crate::reconcile::deployed::behind`]). What it reports is the previous configuration's,
    /// so it is neither provisioned nor failed for this one. Set by the reader that knows the
    /// profile.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub previous_spec: bool,
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
            summary_name: Some(str_at(summary, "/metadata/name").unwrap_or_default()),
            features,
            failure_message: str_at(summary, "/status/failureMessage"),
            previous_spec: false,
        })
    }

    /// A cluster the ClusterProfile matches (an entry of `status.matchingClusters`, a
    /// `corev1.ObjectReference`) that has no ClusterSummary yet. `None` for a reference that
    /// names no cluster.
    pub fn without_summary(reference: &Value) -> Option<Self> {
        let str_at = |p: &str| reference.get(p).and_then(Value::as_str);
        let cluster_type = match str_at("kind")? {
            "SveltosCluster" => "Sveltos",
            "Cluster" => "Capi",
            _ => return None,
        };
        Some(ClusterState {
            namespace: str_at("namespace").unwrap_or_default().to_string(),
            name: str_at("name")?.to_string(),
            cluster_type: cluster_type.to_string(),
            summary_name: None,
            features: Vec::new(),
            failure_message: None,
            previous_spec: false,
        })
    }

    /// The feature that failed worst (non-retriable before retriable), if any. A failure
    /// reported for an earlier spec is none: Sveltos deploys again when the spec changes.
    pub fn failure(&self) -> Option<ClusterFailure> {
        if self.previous_spec {
            return None;
        }
        let worst = self
            .features
            .iter()
            .find(|f| f.status == FAILED_NON_RETRIABLE)
            .or_else(|| self.features.iter().find(|f| f.status == FAILED))?;
        Some(ClusterFailure {
            cluster: format!("{}/{}", self.namespace, self.name),
            feature: worst.feature_id.clone(),
            retriable: worst.status == FAILED,
            message: worst
                .failure_message
                .clone()
                .unwrap_or_else(|| "no message".into()),
        })
    }

    /// Upstream `isCluterSummaryProvisioned`: every feature reports Provisioned — for the
    /// profile's spec, not an earlier one.
    pub fn is_provisioned(&self) -> bool {
        !self.previous_spec
            && !self.features.is_empty()
            && self.features.iter().all(|f| f.status == "Provisioned")
    }
}

/// A cluster whose feature did not deploy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFailure {
    /// `namespace/name`.
    pub cluster: String,
    pub feature: String,
    /// `Failed` (Sveltos retries) rather than `FailedNonRetriable`.
    pub retriable: bool,
    pub message: String,
}

impl ClusterFailure {
    /// `prod/prod33 Helm FailedNonRetriable: <message>`.
    pub fn describe(&self) -> String {
        let status = if self.retriable {
            FAILED
        } else {
            FAILED_NON_RETRIABLE
        };
        format!(
            "{} {} {status}: {}",
            self.cluster, self.feature, self.message
        )
    }
}

/// The one-line summary of a stage's failed clusters, worst first: "2 clusters failed (1
/// non-retriable: prod/prod33 Helm FailedNonRetriable: …)", or for retriable failures only "1
/// cluster failing: dev/dev01 Helm Failed: …" (Sveltos retries those); with several, the line
/// names the first and says how many more there are (a colon before one cluster never stands for
/// several). `None` when no cluster failed.
pub fn failure_summary(clusters: &[ClusterState]) -> Option<(bool, String)> {
    let failures: Vec<ClusterFailure> = clusters.iter().filter_map(ClusterState::failure).collect();
    let plural = |n: usize| if n == 1 { "cluster" } else { "clusters" };
    let non_retriable: Vec<&ClusterFailure> = failures.iter().filter(|f| !f.retriable).collect();
    let worst = non_retriable.first().copied().or(failures.first())?;
    let n = failures.len();
    Some(if non_retriable.is_empty() {
        let more = match n - 1 {
            0 => String::new(),
            k => format!(" (and {k} more)"),
        };
        (
            true,
            format!("{n} {} failing: {}{more}", plural(n), worst.describe()),
        )
    } else {
        (
            false,
            format!(
                "{n} {} failed ({} non-retriable: {})",
                plural(n),
                non_retriable.len(),
                worst.describe()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(name: &str) -> ClusterState {
        ClusterState {
            namespace: "dev".into(),
            name: name.into(),
            cluster_type: "Sveltos".into(),
            summary_name: Some(format!("p-dev-sveltos-{name}")),
            features: vec![FeatureState {
                feature_id: "Helm".into(),
                status: FAILED.into(),
                failure_message: Some("boom".into()),
                last_applied_time: None,
            }],
            failure_message: None,
            previous_spec: false,
        }
    }

    #[test]
    fn several_failing_clusters_are_counted_not_hidden_behind_one() {
        let (retriable, text) = failure_summary(&[failing("dev01"), failing("dev02")]).unwrap();
        assert!(retriable);
        assert_eq!(
            text,
            "2 clusters failing: dev/dev01 Helm Failed: boom (and 1 more)"
        );
        let (_, one) = failure_summary(&[failing("dev01")]).unwrap();
        assert_eq!(one, "1 cluster failing: dev/dev01 Helm Failed: boom");
    }
}
