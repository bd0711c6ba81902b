//! Events about promotions, counted as series that outlive a replica.
//!
//! kube-runtime's `Recorder` keeps each series in memory only, keys it by the reporting instance
//! and not by the note: a restarted controller or a new leader began a new Event for a message
//! the previous one was counting, and two messages with one reason would have been one series.
//! Here a series is (object, type, reason, action, note), as `kubectl describe` groups them.
//! The first time this process repeats a message it looks the series up on the server (Events
//! of the object with the same reason from promotion-controller, last observed within
//! [`SERIES_WINDOW`], the window of kube-runtime's and client-go's recorders) and continues it:
//! a merge patch of `series` alone, so that the reporting instance, immutable once created,
//! stays the replica's that began it.
//!
//! Promotions are cluster-scoped: their Events live in `default` (where kube-apiserver records
//! Events about cluster-scoped objects, and where the roles of `manifests/roles` read them).

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tracing::{debug, warn};

use promotion_shared::api_resources::EVENTS_NAMESPACE;
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

/// Repeats within this long of the last are counted in one series (kube-runtime's `CACHE_TTL`,
/// client-go's series window).
pub const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Bound on the series remembered (each is forgotten [`SERIES_WINDOW`] after its last repeat).
const REMEMBERED: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    uid: String,
    type_: String,
    reason: String,
    action: String,
    note: String,
}

/// The stored Event a series continues: its name, count (1 before its first repeat) and when
/// it was last observed.
#[derive(Clone, Debug)]
struct Series {
    name: String,
    count: i32,
    last: Timestamp,
}

pub struct Events {
    api: Api<Event>,
    /// This replica's `reportingInstance` (its pod name; the controller's name without one).
    instance: String,
    series: Mutex<HashMap<Key, Series>>,
}

impl Events {
    pub fn new(client: kube::Client, instance: Option<String>) -> Events {
        Events {
            api: Api::namespaced(client, EVENTS_NAMESPACE),
            instance: instance.unwrap_or_else(|| CONTROLLER_FIELD_MANAGER.to_string()),
            series: Mutex::new(HashMap::new()),
        }
    }

    /// Forget every series: another replica may have continued them (called on gaining the
    /// Lease; the next repeat of each is looked up on the server).
    pub fn forget(&self) {
        self.remembered().clear();
    }

    fn remembered(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Series>> {
        self.series
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Record `note` about `regarding`: a repeat of a series still open is counted in it, anything
    /// else is a new Event. Failures are logged: an Event is never worth failing a reconcile.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: &str,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        let now = Timestamp::now();
        let key = Key {
            uid: regarding.uid.clone().unwrap_or_default(),
            type_: type_.to_string(),
            reason: reason.to_string(),
            action: action.to_string(),
            note: note.to_string(),
        };
        let known = {
            let mut remembered = self.remembered();
            remembered.retain(|_, s| s.last + SERIES_WINDOW > now);
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
            remembered.get(&key).cloned()
        };
        let open = match known {
            Some(series) => Some(series),
            None => self.stored_series(&key, now).await,
        };
        let recorded = match open {
            Some(series) => match self.repeat(&series, now).await {
                Ok(series) => Ok(series),
                // Deleted since (Events expire after an hour): a new one.
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    self.create(regarding, &key, now).await
                }
                Err(e) => Err(e),
            },
            None => self.create(regarding, &key, now).await,
        };
        match recorded {
            Ok(series) => {
                self.remembered().insert(key, series);
            }
            Err(e) => warn!(error = %e, reason, "cannot record an Event"),
        }
    }

    /// The open series of `key` stored on the server, if any: the one last observed, within
    /// [`SERIES_WINDOW`] of `now`.
    async fn stored_series(&self, key: &Key, now: Timestamp) -> Option<Series> {
        let selector = format!(
            "regarding.uid={},reason={},reportingController={CONTROLLER_FIELD_MANAGER}",
            key.uid, key.reason
        );
        let listed = match self
            .api
            .list(&ListParams::default().fields(&selector))
            .await
        {
            Ok(list) => list.items,
            Err(e) => {
                // Without `list` on Events (an older install's RBAC) a repeat is a new Event.
                debug!(error = %e, "cannot look up an Event series: recording a new Event");
                return None;
            }
        };
        listed
            .into_iter()
            .filter(|e| {
                e.type_.as_deref() == Some(key.type_.as_str())
                    && e.action.as_deref() == Some(key.action.as_str())
                    && e.note.as_deref() == Some(key.note.as_str())
            })
            .filter_map(|e| {
                let last = e
                    .series
                    .as_ref()
                    .map(|s| s.last_observed_time.0)
                    .or(e.event_time.as_ref().map(|t| t.0))?;
                Some(Series {
                    name: e.metadata.name?,
                    count: e.series.map_or(1, |s| s.count),
                    last,
                })
            })
            .filter(|s| s.last + SERIES_WINDOW > now)
            .max_by_key(|s| s.last)
    }

    async fn repeat(&self, series: &Series, now: Timestamp) -> Result<Series, kube::Error> {
        let count = series.count.saturating_add(1);
        let patch = json!({"series": EventSeries {
            count,
            last_observed_time: MicroTime(now),
        }});
        self.api
            .patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(Series {
            name: series.name.clone(),
            count,
            last: now,
        })
    }

    async fn create(
        &self,
        regarding: &ObjectReference,
        key: &Key,
        now: Timestamp,
    ) -> Result<Series, kube::Error> {
        // Named as kube-runtime names them: the object, then the time in nanoseconds.
        let name = format!(
            "{}.{:x}",
            regarding
                .name
                .as_deref()
                .unwrap_or(CONTROLLER_FIELD_MANAGER),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(EVENTS_NAMESPACE.to_string()),
                ..Default::default()
            },
            action: Some(key.action.clone()),
            reason: Some(key.reason.clone()),
            note: Some(key.note.clone()),
            type_: Some(key.type_.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(CONTROLLER_FIELD_MANAGER.to_string()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        self.api.create(&PostParams::default(), &event).await?;
        Ok(Series {
            name,
            count: 1,
            last: now,
        })
    }
}
