//! The typed objects the stores of ClusterSummaries and clusters hold: each decoded straight from
//! the watch into what the decision reads ([`deployed::Kept`], [`Cluster`]), so that tens of
//! thousands of them keep strings, not JSON trees, and the stores key them without a per-object
//! copy of the resource's description (their dynamic type is `()`).

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use promotion_shared::api_resources::{self, CAPI_CLUSTER_V1BETA1, SUMMARY, SVELTOS_CLUSTER};
use promotion_shared::fleet::{Cluster, ClusterType};
use promotion_shared::reconcile::deployed;

/// `kube::Resource` for a kept type, from its entry in the one table of API resources.
macro_rules! resource_of {
    ($type:ty, $entry:expr) => {
        resource_of!(@[] $type, $entry);
    };
    (@[$($generics:tt)*] $type:ty, $entry:expr) => {
        impl<$($generics)*> Resource for $type {
            type DynamicType = ();
            type Scope = NamespaceResourceScope;

            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($entry.kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($entry.group)
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($entry.version)
            }
            fn api_version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($entry.api_version)
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($entry.plural)
            }
            fn meta(&self) -> &ObjectMeta {
                self.meta_ref()
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                self.meta_ref_mut()
            }
        }
    };
}

/// A ClusterSummary as the controller keeps it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptSummary(pub deployed::Kept);

impl KeptSummary {
    fn meta_ref(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn meta_ref_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }

    /// As the decision reads a ClusterSummary ([`deployed::retained`]).
    pub fn to_value(&self) -> Value {
        // A struct of strings serializes.
        serde_json::to_value(&self.0).unwrap_or(Value::Null)
    }
}

resource_of!(KeptSummary, SUMMARY);

impl<'de> Deserialize<'de> for KeptSummary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let whole = Value::deserialize(d)?;
        Ok(KeptSummary(deployed::Kept::of(&whole)))
    }
}

/// A SveltosCluster (`CAPI = false`) or a Cluster API Cluster as the controller keeps it: its
/// name, and the cluster Sveltos matches (`None` for one being deleted, which Sveltos does not
/// match, or one it cannot read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptCluster<const CAPI: bool> {
    pub metadata: ObjectMeta,
    pub cluster: Option<Cluster>,
}

impl<const CAPI: bool> KeptCluster<CAPI> {
    fn meta_ref(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_ref_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }

    const ENTRY: api_resources::Resource = if CAPI {
        CAPI_CLUSTER_V1BETA1
    } else {
        SVELTOS_CLUSTER
    };
}

pub type KeptSveltosCluster = KeptCluster<false>;
pub type KeptCapiCluster = KeptCluster<true>;

resource_of!(@[const CAPI: bool] KeptCluster<CAPI>, Self::ENTRY);

impl<'de, const CAPI: bool> Deserialize<'de> for KeptCluster<CAPI> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut whole = Value::deserialize(d)?;
        // A list's items may come without their kind; the type says which it is.
        let entry = Self::ENTRY;
        whole["apiVersion"] = entry.api_version.into();
        whole["kind"] = entry.kind.into();
        let text = |key: &str| {
            whole
                .pointer(&format!("/metadata/{key}"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        // The resourceVersion too: a watch resumes from the last one it saw (bookmarks are
        // objects with nothing else).
        let metadata = ObjectMeta {
            name: text("name"),
            namespace: text("namespace"),
            resource_version: text("resourceVersion"),
            ..ObjectMeta::default()
        };
        let cluster = Cluster::decode(&whole).ok().flatten();
        debug_assert!(cluster.as_ref().is_none_or(|c| c.cluster_type
            == if CAPI {
                ClusterType::Capi
            } else {
                ClusterType::Sveltos
            }));
        Ok(KeptCluster { metadata, cluster })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::ResourceExt;
    use serde_json::json;

    #[test]
    fn a_summary_is_kept_as_the_decision_reads_it() {
        let whole = json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
            "metadata": {"namespace": "a", "name": "s1", "uid": "u", "resourceVersion": "7",
                         "labels": {"projectsveltos.io/cluster-profile-name": "p-dev", "x": "y"}},
            "spec": {"clusterNamespace": "a", "clusterName": "c", "clusterType": "Sveltos",
                     "clusterProfileSpec": {"helmCharts": [{"values": "big"}]}},
            "status": {"featureSummaries": [{"featureID": "Helm", "status": "Provisioned",
                                             "hash": "h"}]}});
        let kept: KeptSummary = serde_json::from_value(whole.clone()).unwrap();
        assert_eq!(kept.to_value(), deployed::retained(&whole));
        assert_eq!(kept.meta().name.as_deref(), Some("s1"));
        // A bookmark is an object with a resourceVersion and nothing else: the watch resumes
        // from it.
        let bookmark: KeptSummary = serde_json::from_value(json!({
            "kind": "ClusterSummary", "apiVersion": "config.projectsveltos.io/v1beta1",
            "metadata": {"resourceVersion": "12"}}))
        .unwrap();
        assert_eq!(bookmark.resource_version().as_deref(), Some("12"));
        let bookmark: KeptSveltosCluster = serde_json::from_value(json!({
            "metadata": {"resourceVersion": "13"}}))
        .unwrap();
        assert_eq!(bookmark.resource_version().as_deref(), Some("13"));
    }

    #[test]
    fn a_cluster_is_kept_as_the_fleet_reads_it_whatever_its_list_item_says_of_its_kind() {
        let item = json!({"metadata": {"namespace": "n", "name": "c1", "labels": {"env": "dev"},
                                        "managedFields": [{"manager": "m"}]},
                          "status": {"ready": true}});
        let kept: KeptSveltosCluster = serde_json::from_value(item).unwrap();
        let cluster = kept.cluster.unwrap();
        assert_eq!(
            (cluster.cluster_type, cluster.ready),
            (ClusterType::Sveltos, true)
        );
        let capi: KeptCapiCluster = serde_json::from_value(json!({
            "metadata": {"namespace": "n", "name": "c2"},
            "status": {"controlPlaneReady": true}}))
        .unwrap();
        assert_eq!(capi.cluster.unwrap().cluster_type, ClusterType::Capi);
        let deleting: KeptSveltosCluster = serde_json::from_value(json!({
            "metadata": {"namespace": "n", "name": "c3", "deletionTimestamp": "2026-01-01T00:00:00Z"}}))
        .unwrap();
        assert_eq!(deleting.cluster, None);
        assert_eq!(deleting.metadata.name.as_deref(), Some("c3"));
    }
}
