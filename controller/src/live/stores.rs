//! What the watches have seen: one kube-runtime reflector [`Store`] per kind, each object kept
//! as what the decision reads — ClusterSummaries and clusters decoded straight into typed
//! forms ([`super::kept`]), ClusterProfiles cut down by a `modify` projection — and two side
//! indexes the stores cannot give:
//! - ClusterSummaries by the profile they belong to (the label
//!   `projectsveltos.io/cluster-profile-name`): a reconcile asks for a few profiles' summaries
//!   among tens of thousands;
//! - the fleet as the decision reads it ([`Cluster`]s), built once per change of a cluster that
//!   matters to it, and shared by every reconcile.
//!
//! A ClusterSummary carries a whole profile spec (Helm values included) that the decision only
//! compares with the profile's: [`promotion_shared::reconcile::deployed::Kept`] keeps it as digests. A ClusterProfile keeps its
//! spec and labels, not its managed fields nor the last-applied copy; a cluster keeps what
//! [`Cluster::decode`] reads.
//!
//! Each watch's task owns its store's writer and is the only one to change its side index, in the
//! order of the events: the object is stored, then indexed, then the reconciles it concerns are
//! asked for, so a reconcile never reads an index older than the event that asked for it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, RwLock};

use kube::api::{ApiResource, DynamicObject};
use kube::core::ObjectMeta;
use kube::runtime::reflector::{store::Writer, ObjectRef, Store};
use kube::runtime::watcher::Event;
use kube::Resource;
use serde_json::Value;
use tokio::sync::watch;

use super::kept::{KeptCapiCluster, KeptSummary, KeptSveltosCluster};
use promotion_shared::fleet::Cluster;
use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL};

/// Which watch an event came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    Profiles,
    Summaries,
    SveltosClusters,
    CapiClusters,
}

/// What an event changed, once stored.
pub enum Change<K> {
    /// Added or modified: the object stored now, and the one it replaced.
    Applied {
        old: Option<Arc<K>>,
        new: Arc<K>,
    },
    Deleted(Box<K>),
    /// A (re)list completed: the store holds exactly what it listed.
    Listed,
}

/// The watches a reconcile needs to have listed once. CAPI Clusters count as listed when their
/// CRD is known to be absent (Sveltos runs without Cluster API): a stage is never judged on a
/// fleet whose CAPI part has not been read, where "no matching clusters" and "every matching
/// cluster deployed" would both be guesses.
const REQUIRED: [Source; 4] = [
    Source::Profiles,
    Source::Summaries,
    Source::SveltosClusters,
    Source::CapiClusters,
];

/// One reflector store and its writer, fed by one watch task.
pub struct Feed<K: Resource + Clone + 'static>
where
    K::DynamicType: Clone + Eq + Hash,
{
    source: Source,
    writer: Writer<K>,
    reader: Store<K>,
    dyntype: K::DynamicType,
    /// What a new version of an object learns from the one it replaces (a ClusterSummary: what
    /// its feature statuses describe, `deployed::Kept::follow`).
    follow: fn(&mut K, &K),
    /// Which watches have listed once. A `watch` channel rather than the store's own
    /// `wait_until_ready`, whose one-shot receiver wakes only the last of many waiters (every
    /// reconcile that starts before the lists are done waits here).
    listed: watch::Sender<HashSet<Source>>,
}

impl<K> Feed<K>
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash,
{
    fn new(
        source: Source,
        dyntype: K::DynamicType,
        follow: fn(&mut K, &K),
        listed: &watch::Sender<HashSet<Source>>,
    ) -> Feed<K> {
        let writer = Writer::new(dyntype.clone());
        let reader = writer.as_reader();
        Feed {
            source,
            writer,
            reader,
            dyntype,
            follow,
            listed: listed.clone(),
        }
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// Store an event and hand what it changed to `changed` (nothing while a relist is still
    /// being buffered: the store swaps its contents at once when the list is complete). A
    /// completed list counts towards readiness only after `changed` returned: `changed` builds
    /// the side indexes, and a reconcile that starts once the stores are ready must find them
    /// built (it was woken before the index of ClusterSummaries was, read none, and — the first
    /// list asking for no reconcile — waited for the resync).
    pub fn apply(&mut self, mut event: Event<K>, changed: impl FnOnce(Change<K>)) {
        let old = match &mut event {
            Event::Apply(o) | Event::InitApply(o) => {
                let old = self.reader.get(&self.key(o));
                if let Some(old) = &old {
                    (self.follow)(o, old);
                }
                old
            }
            _ => None,
        };
        self.writer.apply_watcher_event(&event);
        match event {
            Event::Apply(o) => {
                let new = self
                    .reader
                    .get(&self.key(&o))
                    .unwrap_or_else(|| Arc::new(o));
                changed(Change::Applied { old, new });
            }
            Event::Delete(o) => changed(Change::Deleted(Box::new(o))),
            Event::InitDone => {
                changed(Change::Listed);
                let source = self.source;
                self.listed.send_if_modified(|s| s.insert(source));
            }
            Event::Init | Event::InitApply(_) => {}
        }
    }

    fn key(&self, object: &K) -> ObjectRef<K> {
        ObjectRef::from_obj_with(object, self.dyntype.clone())
    }
}

pub struct Stores {
    profiles: Store<DynamicObject>,
    summaries: Store<KeptSummary>,
    sveltos_clusters: Store<KeptSveltosCluster>,
    capi_clusters: Store<KeptCapiCluster>,
    profile_resource: ApiResource,
    listed: watch::Sender<HashSet<Source>>,
    /// profile name → `namespace/name` → summary (the store's own `Arc`s).
    by_profile: RwLock<HashMap<String, BTreeMap<String, Arc<KeptSummary>>>>,
    /// The fleet handed to reconciles, rebuilt after a change that matters to it.
    fleet: RwLock<Option<Arc<[Cluster]>>>,
}

/// The four feeds, one per watch task.
pub struct Feeds {
    pub profiles: Feed<DynamicObject>,
    pub summaries: Feed<KeptSummary>,
    pub sveltos_clusters: Feed<KeptSveltosCluster>,
    pub capi_clusters: Feed<KeptCapiCluster>,
}

impl Stores {
    pub fn new(profile: &ApiResource) -> (Arc<Stores>, Feeds) {
        let listed = watch::Sender::new(HashSet::new());
        let feeds = Feeds {
            profiles: Feed::new(Source::Profiles, profile.clone(), |_, _| {}, &listed),
            summaries: Feed::new(
                Source::Summaries,
                (),
                |new, old| new.0.follow(&old.0),
                &listed,
            ),
            sveltos_clusters: Feed::new(Source::SveltosClusters, (), |_, _| {}, &listed),
            capi_clusters: Feed::new(Source::CapiClusters, (), |_, _| {}, &listed),
        };
        let stores = Stores {
            profiles: feeds.profiles.reader.clone(),
            summaries: feeds.summaries.reader.clone(),
            sveltos_clusters: feeds.sveltos_clusters.reader.clone(),
            capi_clusters: feeds.capi_clusters.reader.clone(),
            profile_resource: profile.clone(),
            listed,
            by_profile: RwLock::default(),
            fleet: RwLock::default(),
        };
        (Arc::new(stores), feeds)
    }

    /// Whether every watch a reconcile needs has listed once.
    pub fn is_ready(&self) -> bool {
        self.unlisted().is_empty()
    }

    /// The watches a reconcile still waits for.
    pub fn unlisted(&self) -> Vec<Source> {
        let listed = self.listed.borrow();
        REQUIRED
            .iter()
            .filter(|s| !listed.contains(s))
            .copied()
            .collect()
    }

    /// The CAPI Cluster CRD's first list found no established CRD: there are no CAPI Clusters
    /// to wait for.
    pub fn capi_absent(&self) {
        self.listed
            .send_if_modified(|s| s.insert(Source::CapiClusters));
    }

    /// The CAPI Cluster CRD is (now) established: reconciles wait until its Clusters are listed.
    pub fn capi_installed(&self) {
        self.listed
            .send_if_modified(|s| s.remove(&Source::CapiClusters));
    }

    /// Wait until every watch a reconcile needs has listed once.
    pub async fn ready(&self) {
        let mut rx = self.listed.subscribe();
        // The sender lives in `self`: the channel cannot close while this waits.
        let _ = rx
            .wait_for(|listed| REQUIRED.iter().all(|s| listed.contains(s)))
            .await;
    }

    /// A profile change: the promotion it belongs to (by its label).
    pub fn profile_changed(change: &Change<DynamicObject>) -> Vec<String> {
        match change {
            Change::Applied { old, new } => {
                let mut promotions: Vec<String> = old
                    .iter()
                    .filter_map(|o| label(o.meta(), PROMOTION_NAME_LABEL))
                    .chain(label(new.meta(), PROMOTION_NAME_LABEL))
                    .map(str::to_string)
                    .collect();
                promotions.dedup();
                promotions
            }
            Change::Deleted(o) => label(o.meta(), PROMOTION_NAME_LABEL)
                .map(str::to_string)
                .into_iter()
                .collect(),
            Change::Listed => Vec::new(),
        }
    }

    /// A summary change: index it, and say which profiles it concerns (the one it left too).
    pub fn summary_changed(&self, change: &Change<KeptSummary>) -> Vec<String> {
        fn profile_of(s: &KeptSummary) -> Option<&str> {
            label(s.meta(), CLUSTER_PROFILE_NAME_LABEL)
        }
        let mut index = write(&self.by_profile);
        match change {
            Change::Applied { old, new } => {
                let key = key_of(new.meta());
                let before = old.as_deref().and_then(profile_of);
                let after = profile_of(new);
                if let Some(before) = before.filter(|b| Some(*b) != after) {
                    unindex(&mut index, before, &key);
                }
                if let Some(after) = after {
                    index
                        .entry(after.to_string())
                        .or_default()
                        .insert(key, new.clone());
                }
                before
                    .into_iter()
                    .chain(after)
                    .map(str::to_string)
                    .collect()
            }
            Change::Deleted(o) => match profile_of(o) {
                Some(profile) => {
                    unindex(&mut index, profile, &key_of(o.meta()));
                    vec![profile.to_string()]
                }
                None => Vec::new(),
            },
            Change::Listed => {
                index.clear();
                for s in self.summaries.state() {
                    if let Some(profile) = profile_of(&s) {
                        index
                            .entry(profile.to_string())
                            .or_default()
                            .insert(key_of(s.meta()), s.clone());
                    }
                }
                Vec::new()
            }
        }
    }

    /// A cluster change: whether the fleet as the decision reads it changed.
    pub fn cluster_changed<const CAPI: bool>(
        &self,
        change: &Change<super::kept::KeptCluster<CAPI>>,
    ) -> bool {
        let changed = match change {
            Change::Applied { old, new } => old.as_ref().map(|o| &o.cluster) != Some(&new.cluster),
            Change::Deleted(_) | Change::Listed => true,
        };
        if changed {
            *write(&self.fleet) = None;
        }
        changed
    }

    /// The promotion a profile belongs to, by its label.
    pub fn promotion_of_profile(&self, profile: &str) -> Option<String> {
        self.profiles
            .get(&ObjectRef::new_with(profile, self.profile_resource.clone()))
            .and_then(|p| label(p.meta(), PROMOTION_NAME_LABEL).map(str::to_string))
    }

    /// The UID and resourceVersion of a cached profile (the preconditions of its writes).
    pub fn profile_version(&self, name: &str) -> Option<(String, String)> {
        self.profiles
            .get(&ObjectRef::new_with(name, self.profile_resource.clone()))
            .and_then(|p| {
                Some((
                    p.metadata.uid.clone()?,
                    p.metadata.resource_version.clone()?,
                ))
            })
    }

    /// The profiles labelled with `promotion`'s name.
    pub fn profiles_of(&self, promotion: &str) -> Vec<Value> {
        self.profiles
            .state_filter(|p| label(p.meta(), PROMOTION_NAME_LABEL) == Some(promotion))
            .iter()
            .map(|p| {
                // A DynamicObject is JSON it was decoded from: serializing it cannot fail.
                serde_json::to_value(p.as_ref()).unwrap_or(Value::Null)
            })
            .collect()
    }

    /// The ClusterSummaries of each named profile, as the decision reads them.
    pub fn summaries_of(&self, profiles: &[String]) -> Vec<Value> {
        let index = read(&self.by_profile);
        profiles
            .iter()
            .filter_map(|p| index.get(p))
            .flat_map(|rows| rows.values().map(|s| s.to_value()))
            .collect()
    }

    /// The fleet: every SveltosCluster and CAPI Cluster Sveltos matches, shared by all
    /// reconciles.
    pub fn fleet(&self) -> Arc<[Cluster]> {
        if let Some(built) = read(&self.fleet).clone() {
            return built;
        }
        let mut fleet = write(&self.fleet);
        let mut clusters: Vec<Cluster> = self
            .sveltos_clusters
            .state()
            .iter()
            .filter_map(|c| c.cluster.clone())
            .chain(
                self.capi_clusters
                    .state()
                    .iter()
                    .filter_map(|c| c.cluster.clone()),
            )
            .collect();
        clusters.sort_by(|a, b| {
            (a.cluster_type, &a.namespace, &a.name).cmp(&(b.cluster_type, &b.namespace, &b.name))
        });
        let built: Arc<[Cluster]> = clusters.into();
        *fleet = Some(built.clone());
        built
    }

    /// Sizes, for the log line once listed.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.profiles.len(),
            self.summaries.len(),
            self.sveltos_clusters.len() + self.capi_clusters.len(),
        )
    }
}

/// The projection of a ClusterProfile: what the decision reads (no managed fields, no
/// last-applied copy, of the status only `matchingClusters` and `failedClusters`).
pub fn project_profile(profile: &mut DynamicObject) {
    profile.metadata.managed_fields = None;
    if let Some(a) = profile.metadata.annotations.as_mut() {
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    if let Some(status) = profile
        .data
        .get_mut("status")
        .and_then(Value::as_object_mut)
    {
        status.retain(|k, _| k == "matchingClusters" || k == "failedClusters");
    }
}

fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// `namespace/name` (or `name`).
fn key_of(meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or("");
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

fn unindex(
    index: &mut HashMap<String, BTreeMap<String, Arc<KeptSummary>>>,
    profile: &str,
    key: &str,
) {
    if let Some(rows) = index.get_mut(profile) {
        rows.remove(key);
        if rows.is_empty() {
            index.remove(profile);
        }
    }
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
mod tests;
