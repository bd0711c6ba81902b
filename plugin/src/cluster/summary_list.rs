//! A ClusterSummary list decoded to the fields the live view reads (`ClusterState` and the
//! labels that tie a summary to its promotion). At fleet scale a full decode spends most of the
//! command's time building JSON trees for `managedFields`, `spec.clusterProfileSpec` and status
//! details nobody reads; these types let serde skip them without allocating. A watch's events are
//! decoded the same way ([`WatchedSummary`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ApiResource;
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

/// A ClusterSummary as a watch delivers it, decoded as [`decode`] decodes a list's items: what
/// the view reads (`view`), what the watch itself needs (name, namespace, resourceVersion) and
/// when the API server last wrote it (`written`, the latest time of its managed fields), without
/// building the JSON trees of its profile spec and managed fields, which are most of each event.
#[derive(Clone, Debug)]
pub struct WatchedSummary {
    meta: ObjectMeta,
    pub written: Option<DateTime<Utc>>,
    pub view: Value,
}

#[derive(Deserialize)]
struct Watched {
    #[serde(default)]
    metadata: WatchedMetadata,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WatchedMetadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    managed_fields: Vec<ManagedTime>,
}

/// Of a managed-fields entry, only its time (its `fieldsV1` tree is skipped unread).
#[derive(Deserialize)]
struct ManagedTime {
    #[serde(default)]
    time: Option<String>,
}

impl<'de> Deserialize<'de> for WatchedSummary {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Watched::deserialize(d)?;
        let written = w
            .metadata
            .managed_fields
            .iter()
            .filter_map(|m| m.time.as_deref())
            .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .max();
        let meta = ObjectMeta {
            name: w.metadata.name.clone(),
            namespace: w.metadata.namespace.clone(),
            resource_version: w.metadata.resource_version,
            ..ObjectMeta::default()
        };
        let view = serde_json::to_value(Summary {
            metadata: Metadata {
                name: w.metadata.name,
                namespace: w.metadata.namespace,
                labels: w.metadata.labels,
            },
            spec: w.spec,
            status: w.status,
        })
        .map_err(serde::de::Error::custom)?;
        Ok(WatchedSummary {
            meta,
            written,
            view,
        })
    }
}

/// Watched through an [`ApiResource`] (the ClusterSummary CRD's), as a `DynamicObject` is.
impl kube::Resource for WatchedSummary {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        Cow::from(dt.kind.as_str())
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        Cow::from(dt.group.as_str())
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        Cow::from(dt.version.as_str())
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        Cow::from(dt.api_version.as_str())
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        Cow::from(dt.plural.as_str())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
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

    #[test]
    fn a_watched_summary_is_the_listed_one_with_its_latest_write() {
        let full = json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
            "metadata": {
                "name": "web-prod-sveltos-prod01", "namespace": "prod", "resourceVersion": "12",
                "labels": {"projectsveltos.io/cluster-profile-name": "web-prod"},
                "managedFields": [
                    {"manager": "addon-controller", "time": "2026-02-16T07:29:41Z",
                     "fieldsV1": {"f:spec": {}}},
                    {"manager": "addon-controller", "subresource": "status",
                     "time": "2026-02-16T07:31:02Z", "fieldsV1": {"f:status": {}}}
                ]
            },
            "spec": {"clusterNamespace": "prod", "clusterName": "prod01", "clusterType": "Sveltos",
                     "clusterProfileSpec": {"helmCharts": [{"chartName": "kyverno/kyverno"}]}},
            "status": {"featureSummaries": [{"featureID": "Helm", "status": "Provisioned"}]}
        });
        let watched: WatchedSummary = serde_json::from_value(full.clone()).unwrap();
        let body = serde_json::to_vec(&json!({"items": [full]})).unwrap();
        assert_eq!(vec![watched.view.clone()], decode(&body).unwrap());
        assert_eq!(
            watched.written.map(|t| t.to_rfc3339()),
            Some("2026-02-16T07:31:02+00:00".to_string())
        );
        use kube::Resource;
        assert_eq!(watched.meta().resource_version.as_deref(), Some("12"));
        assert_eq!(
            watched.meta().name.as_deref(),
            Some("web-prod-sveltos-prod01")
        );
        let bare: WatchedSummary =
            serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        assert_eq!(bare.written, None);
    }
}
