//! What the watches have seen, kept small and indexed the way a reconcile asks for it: profiles
//! by name, ClusterSummaries by the profile they belong to, and the fleet as the decision reads
//! it. Each object keeps only the fields the decision reads: a ClusterSummary carries a whole
//! profile spec (Helm values included) that the decision never looks at
//! ([`promotion_shared::reconcile::deployed::retained`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use serde_json::Value;
use tokio::sync::watch;

use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL};
use promotion_shared::plan::{Cluster, Inventory};
use promotion_shared::reconcile::deployed;

/// A keyed table fed by one watch, with the relist protocol of kube-runtime's watcher: after
/// `Init`, objects not seen again before `InitDone` are gone.
struct Table<V> {
    rows: HashMap<String, V>,
    relisting: Option<HashSet<String>>,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table {
            rows: HashMap::new(),
            relisting: None,
        }
    }
}

impl<V> Table<V> {
    fn begin(&mut self) {
        self.relisting = Some(HashSet::new());
    }

    fn put(&mut self, key: String, value: V) -> Option<V> {
        if let Some(seen) = &mut self.relisting {
            seen.insert(key.clone());
        }
        self.rows.insert(key, value)
    }

    fn remove(&mut self, key: &str) -> Option<V> {
        self.rows.remove(key)
    }

    /// The rows the relist did not see again, removed.
    fn end(&mut self) -> Vec<(String, V)> {
        let Some(seen) = self.relisting.take() else {
            return Vec::new();
        };
        let gone: Vec<String> = self
            .rows
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        gone.into_iter()
            .filter_map(|k| self.rows.remove(&k).map(|v| (k, v)))
            .collect()
    }
}

/// Which watch a change came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    Profiles,
    Summaries,
    SveltosClusters,
    CapiClusters,
}

#[derive(Default)]
struct Fleet {
    clusters: Table<Cluster>,
    /// The fleet handed to reconciles, rebuilt after a change.
    built: Option<Arc<[Cluster]>>,
}

pub struct Cache {
    profiles: RwLock<Table<Arc<Value>>>,
    summaries: RwLock<Table<Arc<Value>>>,
    /// profile name → summary key → summary.
    by_profile: RwLock<HashMap<String, BTreeMap<String, Arc<Value>>>>,
    fleet: RwLock<Fleet>,
    synced_tx: watch::Sender<HashSet<Source>>,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            profiles: RwLock::default(),
            summaries: RwLock::default(),
            by_profile: RwLock::default(),
            fleet: RwLock::default(),
            synced_tx: watch::channel(HashSet::new()).0,
        }
    }
}

/// `namespace/name` (or `name`).
pub fn key_of(object: &Value) -> String {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// A ClusterProfile as the decision reads it: no managedFields, no last-applied copy.
pub fn retained_profile(mut profile: Value) -> Value {
    if let Some(meta) = profile.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    if let Some(status) = profile.get_mut("status").and_then(Value::as_object_mut) {
        status.retain(|k, _| k == "matchingClusters");
    }
    profile
}

impl Cache {
    /// Mark a watch's first full list as seen; reconciles start once every required watch has.
    pub fn mark_synced(&self, source: Source) {
        self.synced_tx.send_modify(|s| {
            s.insert(source);
        });
    }

    pub fn is_synced(&self, required: &[Source]) -> bool {
        let s = self.synced_tx.borrow();
        required.iter().all(|r| s.contains(r))
    }

    /// Wait until every required watch has listed once.
    pub async fn synced(&self, required: &[Source]) {
        let mut rx = self.synced_tx.subscribe();
        let _ = rx
            .wait_for(|s| required.iter().all(|r| s.contains(r)))
            .await;
    }

    pub fn begin(&self, source: Source) {
        match source {
            Source::Profiles => write(&self.profiles).begin(),
            Source::Summaries => write(&self.summaries).begin(),
            Source::SveltosClusters | Source::CapiClusters => write(&self.fleet).clusters.begin(),
        }
    }

    /// The relist is complete: what it did not see is gone. Returns the promotions affected.
    pub fn end(&self, source: Source) -> Vec<String> {
        let mut affected = Vec::new();
        match source {
            Source::Profiles => {
                for (_, p) in write(&self.profiles).end() {
                    affected.extend(label(&p, PROMOTION_NAME_LABEL).map(str::to_string));
                }
            }
            Source::Summaries => {
                let gone = write(&self.summaries).end();
                for (key, s) in gone {
                    if let Some(profile) = label(&s, CLUSTER_PROFILE_NAME_LABEL) {
                        self.unindex(profile, &key);
                        affected.extend(self.promotion_of_profile(profile));
                    }
                }
            }
            Source::SveltosClusters | Source::CapiClusters => {
                let mut fleet = write(&self.fleet);
                if !fleet.clusters.end().is_empty() {
                    fleet.built = None;
                }
            }
        }
        affected
    }

    /// A profile was added or changed; the promotion it belongs to.
    pub fn put_profile(&self, profile: Value) -> Option<String> {
        let profile = retained_profile(profile);
        let promotion = label(&profile, PROMOTION_NAME_LABEL).map(str::to_string);
        write(&self.profiles).put(key_of(&profile), Arc::new(profile));
        promotion
    }

    pub fn delete_profile(&self, profile: &Value) -> Option<String> {
        write(&self.profiles).remove(&key_of(profile));
        label(profile, PROMOTION_NAME_LABEL).map(str::to_string)
    }

    /// A ClusterSummary was added or changed; the promotion whose profile it belongs to.
    pub fn put_summary(&self, summary: &Value) -> Option<String> {
        let kept = Arc::new(deployed::retained(summary));
        let key = key_of(&kept);
        let previous = write(&self.summaries).put(key.clone(), kept.clone());
        if let Some(old) = previous
            .as_deref()
            .and_then(|p| label(p, CLUSTER_PROFILE_NAME_LABEL))
        {
            self.unindex(old, &key);
        }
        let profile = label(&kept, CLUSTER_PROFILE_NAME_LABEL)?.to_string();
        write(&self.by_profile)
            .entry(profile.clone())
            .or_default()
            .insert(key, kept);
        self.promotion_of_profile(&profile)
    }

    pub fn delete_summary(&self, summary: &Value) -> Option<String> {
        let key = key_of(summary);
        let old = write(&self.summaries).remove(&key)?;
        let profile = label(&old, CLUSTER_PROFILE_NAME_LABEL)?.to_string();
        self.unindex(&profile, &key);
        self.promotion_of_profile(&profile)
    }

    fn unindex(&self, profile: &str, key: &str) {
        let mut index = write(&self.by_profile);
        if let Some(rows) = index.get_mut(profile) {
            rows.remove(key);
            if rows.is_empty() {
                index.remove(profile);
            }
        }
    }

    /// The promotion a profile belongs to, by its label.
    pub fn promotion_of_profile(&self, profile: &str) -> Option<String> {
        read(&self.profiles)
            .rows
            .get(profile)
            .and_then(|p| label(p, PROMOTION_NAME_LABEL))
            .map(str::to_string)
    }

    /// A cluster was added or changed: whether the fleet as the decision sees it changed.
    pub fn put_cluster(&self, object: &Value) -> bool {
        let mut inventory = Inventory::new();
        if inventory
            .add_documents("watch", std::slice::from_ref(object))
            .is_err()
        {
            return false;
        }
        let Some(cluster) = inventory.into_clusters().pop() else {
            return false;
        };
        let key = format!("{}/{}", object_kind(object), key_of(object));
        let mut fleet = write(&self.fleet);
        let changed = fleet.clusters.rows.get(&key) != Some(&cluster);
        fleet.clusters.put(key, cluster);
        if changed {
            fleet.built = None;
        }
        changed
    }

    pub fn delete_cluster(&self, object: &Value) -> bool {
        let key = format!("{}/{}", object_kind(object), key_of(object));
        let mut fleet = write(&self.fleet);
        let gone = fleet.clusters.remove(&key).is_some();
        if gone {
            fleet.built = None;
        }
        gone
    }

    /// The UID of a cached profile (the precondition of its deletion).
    pub fn profile_uid(&self, name: &str) -> Option<String> {
        read(&self.profiles)
            .rows
            .get(name)
            .and_then(|p| p.pointer("/metadata/uid"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// The profiles labelled with `promotion`'s name.
    pub fn profiles_of(&self, promotion: &str) -> Vec<Value> {
        read(&self.profiles)
            .rows
            .values()
            .filter(|p| label(p, PROMOTION_NAME_LABEL) == Some(promotion))
            .map(|p| Value::clone(p))
            .collect()
    }

    /// The ClusterSummaries of each named profile.
    pub fn summaries_of(&self, profiles: &[String]) -> Vec<Value> {
        let index = read(&self.by_profile);
        profiles
            .iter()
            .filter_map(|p| index.get(p))
            .flat_map(|rows| rows.values().map(|s| Value::clone(s)))
            .collect()
    }

    /// The fleet: every SveltosCluster and CAPI Cluster seen, shared by all reconciles.
    pub fn fleet(&self) -> Arc<[Cluster]> {
        if let Some(built) = read(&self.fleet).built.clone() {
            return built;
        }
        let mut fleet = write(&self.fleet);
        let mut clusters: Vec<(&String, &Cluster)> = fleet.clusters.rows.iter().collect();
        clusters.sort_by(|a, b| a.0.cmp(b.0));
        let built: Arc<[Cluster]> = clusters.into_iter().map(|(_, c)| c.clone()).collect();
        fleet.built = Some(built.clone());
        built
    }

    /// Sizes, for the log line at start and the metrics.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            read(&self.profiles).rows.len(),
            read(&self.summaries).rows.len(),
            read(&self.fleet).clusters.rows.len(),
        )
    }
}

fn object_kind(object: &Value) -> &str {
    object.get("kind").and_then(Value::as_str).unwrap_or("")
}

// A poisoned lock means a panic while holding it; the data is still the last consistent write
// (every update is a single insert or remove), so it is used rather than cascading the panic.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(ns: &str, name: &str, profile: &str) -> Value {
        json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
               "metadata": {"namespace": ns, "name": name,
                            "labels": {CLUSTER_PROFILE_NAME_LABEL: profile}},
               "spec": {"clusterProfileSpec": {"helmCharts": [{"values": "big"}]}}})
    }

    #[test]
    fn summaries_are_indexed_by_profile_and_a_relist_drops_what_is_gone() {
        let cache = Cache::default();
        cache.put_profile(json!({"metadata": {"name": "p-dev",
            "labels": {PROMOTION_NAME_LABEL: "p"}}}));
        assert_eq!(
            cache.put_summary(&summary("a", "s1", "p-dev")).as_deref(),
            Some("p")
        );
        cache.put_summary(&summary("b", "s2", "p-dev"));
        assert_eq!(cache.summaries_of(&["p-dev".into()]).len(), 2);
        cache.begin(Source::Summaries);
        cache.put_summary(&summary("a", "s1", "p-dev"));
        assert_eq!(cache.end(Source::Summaries), ["p"]);
        let left = cache.summaries_of(&["p-dev".into()]);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0]["metadata"]["name"], "s1");
        // A summary moved to another profile leaves the first one's index.
        cache.put_summary(&summary("a", "s1", "p-prod"));
        assert!(cache.summaries_of(&["p-dev".into()]).is_empty());
    }

    #[test]
    fn the_fleet_is_rebuilt_only_after_a_change() {
        let cache = Cache::default();
        let c = json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                       "metadata": {"namespace": "ns", "name": "c1", "labels": {"env": "dev"}}});
        assert!(cache.put_cluster(&c));
        let first = cache.fleet();
        assert!(!cache.put_cluster(&c), "same labels: no change");
        assert!(Arc::ptr_eq(&first, &cache.fleet()));
        assert!(cache.delete_cluster(&c));
        assert!(cache.fleet().is_empty());
    }
}
