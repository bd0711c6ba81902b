//! The object store: etcd's part of the job. Objects are kept as JSON values (and their
//! serialized bytes, so a LIST of 20,000 objects is a concatenation) in a `BTreeMap` per storage,
//! keyed by (namespace, name) like etcd keys; one global resourceVersion counter; a bounded
//! history of changes that watches replay from, and a broadcast of new changes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::resources::ResourceDef;
use super::status::ApiError;

/// One stored object: the value and its JSON serialization (made once, at write time).
#[derive(Clone, Debug)]
pub struct Stored {
    pub value: Arc<Value>,
    pub json: Bytes,
}

impl Stored {
    pub fn new(value: Value) -> Self {
        let json = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Stored {
            value: Arc::new(value),
            json,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// A write, as watches see it. `previous` lets a watch with a selector turn a MODIFIED that
/// leaves (or enters) the selection into DELETED (or ADDED), as the watch cache does.
#[derive(Clone, Debug)]
pub struct Change {
    pub rv: u64,
    pub storage: &'static str,
    pub namespace: String,
    pub name: String,
    pub kind: ChangeKind,
    pub object: Stored,
    pub previous: Option<Stored>,
}

pub type Key = (String, String);

pub(crate) struct StoreState {
    pub rv: u64,
    pub objects: HashMap<&'static str, BTreeMap<Key, Stored>>,
    pub history: VecDeque<Arc<Change>>,
    pub history_limit: usize,
    /// Watches asking for a resourceVersion at or below this get `410 Gone` (etcd compaction).
    pub compacted: u64,
}

struct Shared {
    state: Mutex<StoreState>,
    changes: broadcast::Sender<Arc<Change>>,
    registry: Vec<Arc<ResourceDef>>,
}

/// Handle to the stand-in's storage. Cheap to clone; usable from any thread (tests seed and
/// inspect objects through it while the server runs).
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `metadata.resourceVersion`, empty when unset.
pub(crate) fn rv_of(v: &Value) -> String {
    v.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn set_rv(v: &mut Value, rv: &str) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), json!(rv));
    }
}

fn key_of(obj: &Value) -> Key {
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    (ns, name)
}

impl Store {
    pub(crate) fn new(registry: Vec<Arc<ResourceDef>>, history_limit: usize) -> Self {
        let (changes, _) = broadcast::channel(16_384);
        Store {
            shared: Arc::new(Shared {
                state: Mutex::new(StoreState {
                    rv: 1,
                    objects: HashMap::new(),
                    history: VecDeque::new(),
                    history_limit,
                    compacted: 0,
                }),
                changes,
                registry,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, StoreState> {
        // A panic while holding the lock cannot leave a half-written map behind (every write is
        // a single insert), so a poisoned lock is still consistent.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.shared.changes.subscribe()
    }

    pub(crate) fn registry(&self) -> &[Arc<ResourceDef>] {
        &self.shared.registry
    }

    /// The served type for an `apiVersion` + `kind`.
    pub fn resource_for(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        self.shared
            .registry
            .iter()
            .find(|d| d.api_version() == api_version && d.kind == kind)
            .cloned()
    }

    /// The served type by plural (core/v1 first, so "events" is the core one).
    pub fn resource(&self, plural: &str) -> Option<Arc<ResourceDef>> {
        self.shared
            .registry
            .iter()
            .find(|d| d.plural == plural)
            .cloned()
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    pub fn get(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let def = self.resource(plural)?;
        let state = self.lock();
        state
            .objects
            .get(def.storage)?
            .get(&(namespace.unwrap_or_default().to_string(), name.to_string()))
            .map(|s| (*s.value).clone())
    }

    /// Every object of a type, in etcd key order; `namespace: None` means all namespaces.
    pub fn list(&self, plural: &str, namespace: Option<&str>) -> Vec<Value> {
        let Some(def) = self.resource(plural) else {
            return Vec::new();
        };
        let state = self.lock();
        state
            .objects
            .get(def.storage)
            .map(|m| {
                m.iter()
                    .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
                    .map(|(_, s)| (*s.value).clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Store an object as if it had been written long ago: the type comes from its
    /// `apiVersion`/`kind`; the CRD schema's defaults are applied (as the real server does on
    /// every write), no admission or validation runs. A `uid`/`creationTimestamp` it carries is
    /// kept (fixtures use this for realistic ages); missing ones are filled in. Creates or
    /// replaces.
    pub fn put(&self, mut obj: Value) -> Result<Value, ApiError> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let def = self.resource_for(&api_version, &kind).ok_or_else(|| {
            ApiError::bad_request(format!(
                "no kind {kind:?} is registered for version {api_version:?}"
            ))
        })?;
        if let Some(schema) = &def.schema {
            schema.prune(&mut obj);
            schema.default(&mut obj);
        }
        let (ns, name) = key_of(&obj);
        if name.is_empty() {
            return Err(ApiError::bad_request("metadata.name is required"));
        }
        if def.namespaced == ns.is_empty() {
            return Err(ApiError::bad_request(format!(
                "{} {name:?}: namespace must be {}",
                def.kind,
                if def.namespaced { "set" } else { "empty" }
            )));
        }
        let existing = self
            .lock()
            .objects
            .get(def.storage)
            .and_then(|m| m.get(&(ns.clone(), name.clone())).cloned());
        let meta = obj
            .as_object_mut()
            .and_then(|o| o.get_mut("metadata"))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        let old_meta = existing
            .as_ref()
            .and_then(|e| e.value.get("metadata").cloned());
        for field in ["uid", "creationTimestamp"] {
            if !meta.contains_key(field) {
                let v = old_meta
                    .as_ref()
                    .and_then(|m| m.get(field).cloned())
                    .unwrap_or_else(|| match field {
                        "uid" => json!(uuid::Uuid::new_v4().to_string()),
                        _ => json!(now_rfc3339()),
                    });
                meta.insert(field.into(), v);
            }
        }
        if def.is_crd && !meta.contains_key("generation") {
            let g = old_meta
                .as_ref()
                .and_then(|m| m.get("generation").cloned())
                .unwrap_or(json!(1));
            meta.insert("generation".into(), g);
        }
        let mut state = self.lock();
        let committed = commit(
            &mut state,
            &self.shared.changes,
            &def,
            obj,
            existing.is_some(),
        );
        Ok(committed)
    }

    /// Remove an object at once (no finalizers, no admission). Returns what was removed.
    pub fn remove(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let def = self.resource(plural)?;
        let mut state = self.lock();
        let key = (namespace.unwrap_or_default().to_string(), name.to_string());
        commit_delete(&mut state, &self.shared.changes, &def, &key).map(|s| (*s.value).clone())
    }

    /// Forget the change history: every resourceVersion seen so far becomes too old to watch
    /// from (like an etcd compaction), so clients must relist.
    pub fn compact(&self) {
        let mut state = self.lock();
        state.history.clear();
        state.compacted = state.rv;
    }

    pub(crate) fn broadcast(&self) -> &broadcast::Sender<Arc<Change>> {
        &self.shared.changes
    }
}

/// Write `obj` (create or update) at a new resourceVersion, record and broadcast the change.
pub(crate) fn commit(
    state: &mut StoreState,
    changes: &broadcast::Sender<Arc<Change>>,
    def: &ResourceDef,
    mut obj: Value,
    exists: bool,
) -> Value {
    state.rv += 1;
    let rv = state.rv;
    set_rv(&mut obj, &rv.to_string());
    let key = key_of(&obj);
    let stored = Stored::new(obj);
    let previous = state
        .objects
        .entry(def.storage)
        .or_default()
        .insert(key.clone(), stored.clone());
    let change = Arc::new(Change {
        rv,
        storage: def.storage,
        namespace: key.0,
        name: key.1,
        kind: if exists && previous.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        },
        object: stored.clone(),
        previous,
    });
    record(state, changes, change);
    (*stored.value).clone()
}

pub(crate) fn commit_delete(
    state: &mut StoreState,
    changes: &broadcast::Sender<Arc<Change>>,
    def: &ResourceDef,
    key: &Key,
) -> Option<Stored> {
    let removed = state.objects.get_mut(def.storage)?.remove(key)?;
    state.rv += 1;
    let rv = state.rv;
    // The DELETED event carries the object at the deletion's resourceVersion.
    let mut last = (*removed.value).clone();
    set_rv(&mut last, &rv.to_string());
    let stored = Stored::new(last);
    let change = Arc::new(Change {
        rv,
        storage: def.storage,
        namespace: key.0.clone(),
        name: key.1.clone(),
        kind: ChangeKind::Deleted,
        object: stored.clone(),
        previous: Some(removed),
    });
    record(state, changes, change);
    Some(stored)
}

fn record(state: &mut StoreState, changes: &broadcast::Sender<Arc<Change>>, change: Arc<Change>) {
    state.history.push_back(change.clone());
    while state.history.len() > state.history_limit {
        if let Some(dropped) = state.history.pop_front() {
            state.compacted = dropped.rv;
        }
    }
    // No receivers is fine: nobody is watching.
    let _ = changes.send(change);
}
