//! The fleet: SveltosClusters and Cluster API Clusters, reduced to what Sveltos looks at when it
//! matches a stage (labels) and when it deploys (paused, ready, shard). `plan`, the reconcile
//! decision and the views all read it.
//!
//! Two sources give the same [`Cluster`]s: the documents of an inventory file, as
//! `kubectl get sveltosclusters,clusters.cluster.x-k8s.io -A -o yaml|json` writes it (a `List`,
//! or one object per document), and the API server's list pages. Both go through one typed
//! decoder that skips every field it does not need, so a page of thousands of clusters is never
//! built into a JSON tree. The upstream facts behind each field are in `plugin/docs/plan.md`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use promotion_manifest::json_type;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SVELTOS_GROUP: &str = crate::api_resources::SVELTOS_CLUSTER.group;
pub const CAPI_GROUP: &str = crate::api_resources::CAPI_CLUSTER_V1BETA1.group;
/// A cluster with this annotation is managed only by the Sveltos controllers started with the
/// same `--shard-key` (libsveltos `lib/sharding` `IsShardAMatch`).
pub const SHARD_ANNOTATION: &str = "sharding.projectsveltos.io/key";

/// Which object a cluster is (ClusterSummaries say `Sveltos` or `Capi` in `spec.clusterType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ClusterType {
    Sveltos,
    Capi,
}

impl ClusterType {
    /// The type of an object, from its `apiVersion` and `kind`; `None` for anything else.
    pub fn of(api_version: &str, kind: &str) -> Option<ClusterType> {
        let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
        match (group, kind) {
            (SVELTOS_GROUP, "SveltosCluster") => Some(ClusterType::Sveltos),
            (CAPI_GROUP, "Cluster") => Some(ClusterType::Capi),
            _ => None,
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            ClusterType::Sveltos => "SveltosCluster",
            ClusterType::Capi => "Cluster",
        }
    }
}

impl fmt::Display for ClusterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClusterType::Sveltos => "Sveltos",
            ClusterType::Capi => "Capi",
        })
    }
}

/// One cluster of the fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    pub cluster_type: ClusterType,
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// SveltosCluster or CAPI `spec.paused`: Sveltos keeps its ClusterSummary but deploys
    /// nothing (addon-controller `ClusterSummaryReconciler.isPaused`).
    pub paused: bool,
    /// SveltosCluster `status.ready`; for CAPI, the control plane is initialized
    /// (libsveltos `IsClusterReadyToBeConfigured`).
    pub ready: bool,
    /// The shard annotation, when set.
    pub shard: Option<String>,
}

impl Cluster {
    /// `namespace/name`, the way hazards and tables name a cluster.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// A test fleet's cluster: a SveltosCluster, ready, not paused, in no shard.
    #[cfg(test)]
    pub(crate) fn ready_sveltos(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Cluster {
        Cluster {
            cluster_type: ClusterType::Sveltos,
            namespace: namespace.into(),
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            paused: false,
            ready: true,
            shard: None,
        }
    }

    /// One SveltosCluster or CAPI Cluster object as the fleet reads it: `Ok(None)` for an object
    /// of another kind or one being deleted (Sveltos matches neither).
    pub fn decode(object: &Value) -> Result<Option<Cluster>, InventoryError> {
        let mut one = Inventory::new();
        one.add_object("object", "", object)?;
        Ok(one.clusters.pop())
    }

    /// The smallest object of the cluster's kind that [`Cluster::decode`] reads as this cluster:
    /// what a cache keeps of a cluster whose object carries much more (CAPI's whole topology).
    pub fn to_object(&self) -> Value {
        let mut metadata = serde_json::json!({"name": self.name, "namespace": self.namespace});
        if !self.labels.is_empty() {
            metadata["labels"] = serde_json::json!(self.labels);
        }
        if let Some(shard) = &self.shard {
            metadata["annotations"] = serde_json::json!({ SHARD_ANNOTATION: shard });
        }
        let (api_version, status) = match self.cluster_type {
            ClusterType::Sveltos => (
                format!("{SVELTOS_GROUP}/v1beta1"),
                serde_json::json!({"ready": self.ready}),
            ),
            ClusterType::Capi => (
                format!("{CAPI_GROUP}/v1beta1"),
                serde_json::json!({"controlPlaneReady": self.ready}),
            ),
        };
        serde_json::json!({
            "apiVersion": api_version,
            "kind": self.cluster_type.kind(),
            "metadata": metadata,
            "spec": {"paused": self.paused},
            "status": status,
        })
    }
}

/// Input that is not an inventory. `origin` names the file (or the list request), `item` the
/// object within it, `path` the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InventoryError {
    #[error("{origin}: {item}: {path}: {reason}")]
    Field {
        origin: String,
        item: String,
        path: String,
        reason: String,
    },
    #[error("{origin}: {reason}")]
    Document { origin: String, reason: String },
    #[error("{kind} {id} is defined twice: in {first} and in {second}")]
    Duplicate {
        kind: &'static str,
        id: String,
        first: String,
        second: String,
    },
}

/// Clusters gathered from one or more sources. A cluster being deleted is left out: Sveltos
/// matches only clusters without a `deletionTimestamp` (libsveltos `getMatchingSveltosClusters`,
/// `getMatchingCAPIClusters`).
#[derive(Debug, Default)]
pub struct Inventory {
    clusters: Vec<Cluster>,
    seen: HashMap<(ClusterType, String, String), String>,
    deleting: usize,
}

impl Inventory {
    pub fn new() -> Self {
        Inventory::default()
    }

    /// Add the SveltosClusters and CAPI Clusters among `documents` (parsed YAML or JSON of one
    /// file: `List`s are opened, other kinds are skipped). Returns how many clusters it added.
    pub fn add_documents(
        &mut self,
        source: &str,
        documents: &[Value],
    ) -> Result<usize, InventoryError> {
        let before = self.clusters.len();
        for (d, doc) in documents.iter().enumerate() {
            let here = if documents.len() > 1 {
                format!("document {}", d + 1)
            } else {
                String::new()
            };
            match doc {
                Value::Null => continue,
                Value::Object(_) => {}
                other => {
                    return Err(InventoryError::Document {
                        origin: source.to_string(),
                        reason: format!(
                            "{}expected a Kubernetes object or List, found {}",
                            prefix(&here),
                            json_type(other)
                        ),
                    })
                }
            }
            if doc.get("kind").and_then(Value::as_str) == Some("List")
                || doc.get("items").is_some_and(Value::is_array)
            {
                let items = doc
                    .get("items")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                for (i, item) in items.iter().enumerate() {
                    let label = if here.is_empty() {
                        format!("items[{i}]")
                    } else {
                        format!("{here}, items[{i}]")
                    };
                    self.add_object(source, &label, item)?;
                }
            } else {
                let label = if here.is_empty() {
                    "the object".to_string()
                } else {
                    here.clone()
                };
                self.add_object(source, &label, doc)?;
            }
        }
        Ok(self.clusters.len() - before)
    }

    /// Add the object if it is a SveltosCluster or a CAPI Cluster (anything else is skipped);
    /// `label` says where it is in `source` (`items[3]`, `document 2`), for messages.
    pub fn add_object(
        &mut self,
        source: &str,
        label: &str,
        object: &Value,
    ) -> Result<(), InventoryError> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let Some(cluster_type) = ClusterType::of(api_version, kind) else {
            return Ok(());
        };
        let named = describe_item(label, cluster_type, object);
        let raw: RawObject =
            serde_path_to_error::deserialize(object).map_err(|e| InventoryError::Field {
                origin: source.to_string(),
                item: named.clone(),
                path: e.path().to_string(),
                reason: e.inner().to_string(),
            })?;
        match raw
            .into_cluster(cluster_type)
            .map_err(|(path, reason)| InventoryError::Field {
                origin: source.to_string(),
                item: named,
                path,
                reason,
            })? {
            Some(cluster) => self.add(source, cluster),
            None => {
                self.deleting += 1;
                Ok(())
            }
        }
    }

    /// Add one cluster; the same type, namespace and name twice is an error naming both sources.
    pub fn add(&mut self, source: &str, cluster: Cluster) -> Result<(), InventoryError> {
        let key = (
            cluster.cluster_type,
            cluster.namespace.clone(),
            cluster.name.clone(),
        );
        if let Some(first) = self.seen.get(&key) {
            return Err(InventoryError::Duplicate {
                kind: cluster.cluster_type.kind(),
                id: cluster.id(),
                first: first.clone(),
                second: source.to_string(),
            });
        }
        self.seen.insert(key, source.to_string());
        self.clusters.push(cluster);
        Ok(())
    }

    /// Add a page of an API list (`GET …/sveltosclusters` or `…/clusters`); returns the
    /// `continue` token when more pages follow.
    pub fn add_list_page(
        &mut self,
        source: &str,
        cluster_type: ClusterType,
        json: &str,
    ) -> Result<Option<String>, InventoryError> {
        let mut de = serde_json::Deserializer::from_str(json);
        let page: RawPage =
            serde_path_to_error::deserialize(&mut de).map_err(|e| InventoryError::Field {
                origin: source.to_string(),
                item: "the list".to_string(),
                path: e.path().to_string(),
                reason: e.inner().to_string(),
            })?;
        for (i, raw) in page.items.into_iter().enumerate() {
            let item = format!("items[{i}]");
            match raw.into_cluster(cluster_type).map_err(|(path, reason)| {
                InventoryError::Field {
                    origin: source.to_string(),
                    item,
                    path,
                    reason,
                }
            })? {
                Some(cluster) => self.add(source, cluster)?,
                None => self.deleting += 1,
            }
        }
        Ok(page
            .metadata
            .and_then(|m| m.continue_token)
            .filter(|t| !t.is_empty()))
    }

    /// Take in the clusters of another inventory (one read concurrently, say).
    pub fn merge(&mut self, other: Inventory) -> Result<(), InventoryError> {
        self.deleting += other.deleting;
        let mut sources = other.seen;
        for cluster in other.clusters {
            let key = (
                cluster.cluster_type,
                cluster.namespace.clone(),
                cluster.name.clone(),
            );
            let source = sources.remove(&key).unwrap_or_default();
            self.add(&source, cluster)?;
        }
        Ok(())
    }

    /// Clusters left out because they are being deleted.
    pub fn deleting(&self) -> usize {
        self.deleting
    }

    pub fn len(&self) -> usize {
        self.clusters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
    }

    pub fn clusters(&self) -> &[Cluster] {
        &self.clusters
    }

    pub fn into_clusters(self) -> Vec<Cluster> {
        self.clusters
    }
}

fn prefix(here: &str) -> String {
    if here.is_empty() {
        String::new()
    } else {
        format!("{here}: ")
    }
}

/// `items[3] (SveltosCluster prod/eu-1)`: where the bad object is, and which one it is.
fn describe_item(label: &str, cluster_type: ClusterType, object: &Value) -> String {
    let meta = object.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str);
    let namespace = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str);
    match (namespace, name) {
        (Some(ns), Some(n)) => format!("{label} ({} {ns}/{n})", cluster_type.kind()),
        (None, Some(n)) => format!("{label} ({} {n})", cluster_type.kind()),
        _ => format!("{label} ({})", cluster_type.kind()),
    }
}

#[derive(Deserialize)]
struct RawPage {
    #[serde(default)]
    items: Vec<RawObject>,
    #[serde(default)]
    metadata: Option<RawListMeta>,
}

#[derive(Deserialize)]
struct RawListMeta {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// The fields of a SveltosCluster or CAPI Cluster that matter here; serde skips the rest.
#[derive(Deserialize)]
struct RawObject {
    #[serde(default)]
    metadata: Option<RawMeta>,
    #[serde(default)]
    spec: Option<RawSpec>,
    #[serde(default)]
    status: Option<RawStatus>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    deletion_timestamp: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct RawSpec {
    #[serde(default)]
    paused: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStatus {
    /// SveltosCluster.
    #[serde(default)]
    ready: Option<bool>,
    /// CAPI v1beta1.
    #[serde(default)]
    control_plane_ready: Option<bool>,
    /// CAPI v1beta2.
    #[serde(default)]
    initialization: Option<RawInitialization>,
    #[serde(default)]
    conditions: Option<Vec<RawCondition>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawInitialization {
    #[serde(default)]
    control_plane_initialized: Option<bool>,
}

#[derive(Deserialize)]
struct RawCondition {
    #[serde(default, rename = "type")]
    type_: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

impl RawObject {
    /// `None` for a cluster being deleted; `Err((path, reason))` for a missing name or namespace.
    fn into_cluster(self, cluster_type: ClusterType) -> Result<Option<Cluster>, (String, String)> {
        let meta = self.metadata.unwrap_or_default();
        if meta.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let name = meta
            .name
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ("metadata.name".to_string(), "is required".to_string()))?;
        let namespace = meta.namespace.filter(|n| !n.is_empty()).ok_or_else(|| {
            (
                "metadata.namespace".to_string(),
                format!(
                    "is required: {} is namespaced (write the inventory with `kubectl get … -A`, \
                     which includes it)",
                    cluster_type.kind()
                ),
            )
        })?;
        let ready = match (&cluster_type, &self.status) {
            (_, None) => false,
            (ClusterType::Sveltos, Some(s)) => s.ready == Some(true),
            (ClusterType::Capi, Some(s)) => capi_control_plane_initialized(s),
        };
        let shard = meta
            .annotations
            .and_then(|mut a| a.remove(SHARD_ANNOTATION))
            .filter(|s| !s.is_empty());
        Ok(Some(Cluster {
            cluster_type,
            namespace,
            name,
            labels: meta.labels.unwrap_or_default(),
            paused: self.spec.and_then(|s| s.paused).unwrap_or(false),
            ready,
            shard,
        }))
    }
}

/// libsveltos `isCAPIClusterReady`: the `ControlPlaneInitialized` condition is True, or
/// (v1beta1) `status.controlPlaneReady`; v1beta2 reports it as
/// `status.initialization.controlPlaneInitialized`.
fn capi_control_plane_initialized(status: &RawStatus) -> bool {
    let condition = status.conditions.iter().flatten().any(|c| {
        c.type_.as_deref() == Some("ControlPlaneInitialized") && c.status.as_deref() == Some("True")
    });
    condition
        || status.control_plane_ready == Some(true)
        || status
            .initialization
            .as_ref()
            .and_then(|i| i.control_plane_initialized)
            == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sveltos(ns: &str, name: &str, labels: Value, ready: bool) -> Value {
        json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"kubeconfigName": format!("{name}-kubeconfig")},
            "status": {"ready": ready, "version": "v1.33.1"}
        })
    }

    #[test]
    fn a_cluster_written_back_decodes_to_itself() {
        let objects = [
            json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                   "metadata": {"name": "a", "namespace": "n", "labels": {"env": "dev"},
                                "annotations": {SHARD_ANNOTATION: "s1", "other": "x"}},
                   "spec": {"paused": true, "kubeconfigName": "k"},
                   "status": {"ready": true, "version": "v1.32"}}),
            json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                   "metadata": {"name": "b", "namespace": "n"},
                   "status": {"initialization": {"controlPlaneInitialized": true}}}),
            json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                   "metadata": {"name": "c", "namespace": "n"},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        ];
        for object in objects {
            let cluster = Cluster::decode(&object).unwrap().unwrap();
            assert_eq!(
                Cluster::decode(&cluster.to_object()).unwrap(),
                Some(cluster.clone()),
                "{object}"
            );
        }
        let deleting = json!({"apiVersion": "lib.projectsveltos.io/v1beta1",
            "kind": "SveltosCluster",
            "metadata": {"name": "d", "namespace": "n", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(Cluster::decode(&deleting).unwrap(), None);
    }

    #[test]
    fn reads_a_kubectl_list_of_both_types() {
        let list = json!({
            "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [
                sveltos("prod", "eu-1", json!({"env": "prod"}), true),
                {
                    "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                    "metadata": {"name": "eu-2", "namespace": "prod",
                                 "annotations": {SHARD_ANNOTATION: "shard-a", "other": "x"}},
                    "spec": {"paused": true}
                },
                {
                    "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                    "metadata": {"name": "capi-1", "namespace": "capi", "labels": {"env": "prod"}},
                    "spec": {"paused": false},
                    "status": {"conditions": [{"type": "ControlPlaneInitialized", "status": "True"}]}
                },
                {
                    "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                    "metadata": {"name": "capi-2", "namespace": "capi"},
                    "status": {"initialization": {"controlPlaneInitialized": true}}
                },
                {
                    "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                    "metadata": {"name": "capi-3", "namespace": "capi"},
                    "status": {"controlPlaneReady": false,
                               "conditions": [{"type": "Ready", "status": "True"}]}
                },
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}},
                {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "db", "namespace": "y"}}
            ]
        });
        let mut inv = Inventory::new();
        assert_eq!(inv.add_documents("fleet.yaml", &[list]).unwrap(), 5);
        let c = inv.clusters();
        assert_eq!(c[0].id(), "prod/eu-1");
        assert_eq!(c[0].labels["env"], "prod");
        assert!(c[0].ready && !c[0].paused && c[0].shard.is_none());
        assert!(c[1].paused && !c[1].ready);
        assert_eq!(c[1].shard.as_deref(), Some("shard-a"));
        assert_eq!(c[2].cluster_type, ClusterType::Capi);
        assert!(c[2].ready, "ControlPlaneInitialized condition");
        assert!(c[3].ready, "v1beta2 initialization");
        assert!(!c[4].ready, "only Ready=True, no initialized control plane");
    }

    #[test]
    fn multi_document_files_and_deleting_clusters() {
        let mut deleting = sveltos("dev", "gone", json!({}), true);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-02-16T07:00:00Z");
        let docs = vec![
            sveltos("dev", "a", json!({}), true),
            Value::Null,
            deleting,
            sveltos("dev", "b", json!({}), false),
        ];
        let mut inv = Inventory::new();
        assert_eq!(inv.add_documents("f", &docs).unwrap(), 2);
        assert_eq!(inv.deleting(), 1);
    }

    #[test]
    fn errors_name_the_source_the_object_and_the_field() {
        let mut bad = sveltos("prod", "eu-1", json!({"env": 5}), true);
        let e = Inventory::new()
            .add_documents(
                "fleet.yaml",
                &[json!({"kind": "List", "items": [bad.clone()]})],
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "fleet.yaml: items[0] (SveltosCluster prod/eu-1): metadata.labels.env: invalid type: integer `5`, expected a string"
        );
        bad["metadata"]["labels"] = json!({});
        bad["spec"]["paused"] = json!("yes");
        let e = Inventory::new()
            .add_documents(
                "fleet.yaml",
                &[json!({"kind": "List", "items": [bad.clone()]}), json!({})],
            )
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("fleet.yaml: document 1, items[0] (SveltosCluster prod/eu-1): spec.paused: invalid type: string"), "{e}");
        let mut no_ns = sveltos("x", "eu-1", json!({}), true);
        no_ns["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
        let e = Inventory::new()
            .add_documents("f", &[no_ns])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f: the object (SveltosCluster eu-1): metadata.namespace: is required"),
            "{e}"
        );
        let e = Inventory::new()
            .add_documents("f", &[json!("text")])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "f: expected a Kubernetes object or List, found a string");
    }

    #[test]
    fn duplicates_name_both_sources() {
        let mut inv = Inventory::new();
        inv.add_documents("a.yaml", &[sveltos("prod", "eu-1", json!({}), true)])
            .unwrap();
        let e = inv
            .add_documents("b.yaml", &[sveltos("prod", "eu-1", json!({}), true)])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "SveltosCluster prod/eu-1 is defined twice: in a.yaml and in b.yaml"
        );
        // The same namespace/name as a CAPI Cluster is another cluster.
        let capi = json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                          "metadata": {"name": "eu-1", "namespace": "prod"}});
        assert_eq!(inv.add_documents("c.yaml", &[capi]).unwrap(), 1);
        let mut other = Inventory::new();
        other
            .add_documents("d.yaml", &[sveltos("prod", "eu-2", json!({}), true)])
            .unwrap();
        inv.merge(other).unwrap();
        assert_eq!(inv.len(), 3);
        let mut again = Inventory::new();
        again
            .add_documents("e.yaml", &[sveltos("prod", "eu-2", json!({}), true)])
            .unwrap();
        assert_eq!(
            inv.merge(again).unwrap_err().to_string(),
            "SveltosCluster prod/eu-2 is defined twice: in d.yaml and in e.yaml"
        );
    }

    #[test]
    fn list_pages_from_the_api_server() {
        let page = json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosClusterList",
            "metadata": {"resourceVersion": "12", "continue": "next-page"},
            "items": [
                {"metadata": {"name": "a", "namespace": "n", "labels": {"env": "dev"},
                              "managedFields": [{"manager": "x"}]},
                 "spec": {"paused": false}, "status": {"ready": true}}
            ]
        });
        let mut inv = Inventory::new();
        let token = inv
            .add_list_page(
                "list sveltosclusters",
                ClusterType::Sveltos,
                &page.to_string(),
            )
            .unwrap();
        assert_eq!(token.as_deref(), Some("next-page"));
        assert_eq!(inv.len(), 1);
        let last = json!({"metadata": {"continue": ""}, "items": []}).to_string();
        assert_eq!(
            inv.add_list_page("l", ClusterType::Sveltos, &last).unwrap(),
            None
        );
        let e = inv
            .add_list_page(
                "l",
                ClusterType::Sveltos,
                "{\"items\": [{\"metadata\": {\"name\": 3}}]}",
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("l: the list: items[0].metadata.name: invalid type"),
            "{e}"
        );
    }
}
