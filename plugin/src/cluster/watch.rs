//! Watching promotions through watch events: the ClusterPromotions themselves (one by name, or
//! all matching a label selector), the ClusterProfiles Sveltos generates for promotions (the
//! first stage's tells whether a change was picked up; a colliding name must be told apart), and
//! the ClusterSummaries of their stage profiles. Used by `wait`, `describe --watch`,
//! `approve --wait` (one promotion) and `list --watch` (a fleet).
//!
//! Each stream comes from `kube::runtime::watcher`, which lists, then watches from the list's
//! resourceVersion with bookmarks, re-watches when a watch ends, and re-lists when the server
//! says the version is gone (410). A dropped connection is retried with backoff; only errors that
//! retrying cannot fix (401, 403, 404) end the follow, except that ClusterProfiles or
//! ClusterSummaries the user may not read (or whose CRD is missing) are followed without, as
//! `describe` reads without them: the view says what could not be read.
//!
//! At fleet scale a rollout is thousands of ClusterSummary events. Each event only updates the
//! kept objects (a ClusterSummary decoded to what the view reads, [`WatchedSummary`]) and says
//! whether anything a view reads changed: a write that moves only what no view reads (the
//! resourceVersion; of a ClusterSummary, its managed fields or status details) is no change, and
//! hands out nothing. A burst of events is gathered
//! until the watches are quiet for [`QUIET`], or for [`GATHER_AT_MOST`] when they never are, and
//! only then is one state handed out, with what changed and when ([`Changes`]): so the views are
//! recomputed at most a few times a second however fast events come, and not at all when
//! nothing changes (no timer runs while no burst is being gathered).

use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::{Stream, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::Value;
use tokio::time::Instant;

use promotion_shared::api_error::{classify, Failure};
use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL};

use crate::cluster::kube_client::{self, summaries_selector, Kube};
use crate::cluster::resources::{PROFILE, PROFILES, PROMOTION, PROMOTIONS, SUMMARIES, SUMMARY};
use crate::cluster::summary_list::WatchedSummary;
use crate::error::{Error, Request, Result};
use crate::view::{self, Snapshot, SnapshotRef};

/// A burst of events is over once the watches have been quiet this long: long enough to take
/// in what a controller writes in one pass (the events of a burst arrive microseconds apart),
/// short enough not to be seen.
pub const QUIET: Duration = Duration::from_millis(100);

/// A burst that does not end (a rollout at 2,000 clusters reports all the time) is handed out
/// this long after its first event anyway, so that the views keep up with it: at most two
/// recomputes a second.
pub const GATHER_AT_MOST: Duration = Duration::from_millis(500);

/// A cluster-data read: the objects (shared, not copied, between the states handed out while
/// they do not change), or why they cannot be read.
pub type Read = std::result::Result<Arc<Vec<Value>>, String>;

/// The current state of the followed promotion, after a change.
#[derive(Clone)]
pub struct State {
    pub object: Value,
    /// `Err`: why they cannot be read.
    pub profiles: Read,
    pub summaries: Read,
    pub owners: view::Owners,
    /// What changed since the previous state, and when.
    pub changes: Changes,
}

impl State {
    /// What the view model needs, with the Events read (or not) separately.
    pub fn snapshot(&self, events: std::result::Result<Vec<Value>, String>) -> Snapshot {
        Snapshot {
            object: self.object.clone(),
            profiles: owned(&self.profiles),
            summaries: owned(&self.summaries),
            events,
            owners: self.owners.clone(),
        }
    }

    /// The same, without copying the cluster data.
    pub fn snapshot_ref<'a>(
        &'a self,
        events: std::result::Result<&'a [Value], &'a str>,
    ) -> SnapshotRef<'a> {
        SnapshotRef {
            object: &self.object,
            profiles: shared(&self.profiles),
            summaries: shared(&self.summaries),
            events,
            owners: &self.owners,
        }
    }
}

fn owned(read: &Read) -> std::result::Result<Vec<Value>, String> {
    read.as_ref().map(|v| v.to_vec()).map_err(String::clone)
}

fn shared(read: &Read) -> std::result::Result<&[Value], &str> {
    match read {
        Ok(v) => Ok(v.as_slice()),
        Err(e) => Err(e.as_str()),
    }
}

/// The current state of every followed promotion, after a change.
pub struct Fleet {
    pub objects: Vec<Value>,
    /// `Err`: why they cannot be read.
    pub profiles: Read,
    pub summaries: Read,
    /// Whether the owners of taken profiles exist: known when every promotion is followed.
    pub owners: view::Owners,
    /// Each promotion's stage profiles, by promotion name.
    pub stage_profiles: BTreeMap<String, Vec<String>>,
    /// What changed since the previous state, and when.
    pub changes: Changes,
}

impl Fleet {
    /// What the view model needs for one of the promotions; the cluster data is shared.
    pub fn snapshot<'a>(&'a self, object: &'a Value) -> SnapshotRef<'a> {
        SnapshotRef {
            object,
            profiles: shared(&self.profiles),
            summaries: shared(&self.summaries),
            events: Err(""),
            owners: &self.owners,
        }
    }

    /// Whether the view of promotion `name` may differ from the previous state's: something it
    /// reads changed.
    pub fn affects(&self, name: &str) -> bool {
        let profiles = self
            .stage_profiles
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        self.changes.affects(name, profiles)
    }
}

/// What changed between two states handed out, and when each change happened: the time the API
/// server stamped on the object's last write (the latest `metadata.managedFields[].time`, whole
/// seconds), or, for an object that carries none and for a deletion, the time the change reached
/// this watch. These are the times the watch views print, never the time they print.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Everything may have changed (the first state, a promotion added or gone, or the cluster
    /// data became readable or unreadable): no view can be kept.
    pub everything: bool,
    promotions: BTreeMap<String, DateTime<Utc>>,
    profiles: BTreeMap<String, DateTime<Utc>>,
    /// ClusterSummaries, by the ClusterProfile they are for (their cluster-profile-name label).
    summaries: BTreeMap<String, DateTime<Utc>>,
}

impl Changes {
    fn note(&mut self, which: Which, object: &Value, at: DateTime<Utc>) {
        let (map, key) = match which {
            Which::Promotion => (&mut self.promotions, pointer(object, "/metadata/name")),
            Which::Profiles => (&mut self.profiles, pointer(object, "/metadata/name")),
            Which::Summaries => (
                &mut self.summaries,
                object
                    .pointer("/metadata/labels")
                    .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
                    .and_then(Value::as_str),
            ),
        };
        let slot = map.entry(key.unwrap_or_default().to_string()).or_insert(at);
        *slot = (*slot).max(at);
    }

    /// When the latest change happened.
    pub fn latest(&self) -> Option<DateTime<Utc>> {
        self.promotions
            .values()
            .chain(self.profiles.values())
            .chain(self.summaries.values())
            .max()
            .copied()
    }

    /// When the promotion object `name` changed, if it did.
    pub fn promotion(&self, name: &str) -> Option<DateTime<Utc>> {
        self.promotions.get(name).copied()
    }

    /// When the ClusterProfile `name` or one of its ClusterSummaries last changed, if any did.
    pub fn profile(&self, name: &str) -> Option<DateTime<Utc>> {
        self.profiles
            .get(name)
            .into_iter()
            .chain(self.summaries.get(name))
            .max()
            .copied()
    }

    /// Whether the view of promotion `name`, whose stage profiles are `profiles`, may have
    /// changed: its own object, or the ClusterSummaries of its stage profiles, or any
    /// ClusterProfile (another promotion's may hold one of its stage profile names).
    pub fn affects(&self, name: &str, profiles: &[String]) -> bool {
        self.everything
            || !self.profiles.is_empty()
            || self.promotions.contains_key(name)
            || profiles.iter().any(|p| self.summaries.contains_key(p))
    }
}

#[cfg(test)]
impl Changes {
    /// For the views' tests: the ClusterSummaries of `profile` changed, written at `at`.
    pub(crate) fn of_summaries(profile: &str, at: DateTime<Utc>) -> Changes {
        let mut c = Changes::default();
        c.summaries.insert(profile.to_string(), at);
        c
    }
}

fn pointer<'a>(v: &'a Value, p: &str) -> Option<&'a str> {
    v.pointer(p).and_then(Value::as_str)
}

/// What [`Follower::next`] and [`FleetFollower::next`] report.
pub enum Update<T = State> {
    /// The promotions, their profiles or their clusters changed (the first one: the initial
    /// state).
    Changed(T),
    /// The connection to the server was lost; the watches retry with backoff, and the next
    /// `Changed` means they are back.
    ConnectionLost(String),
}

/// An object's namespace and name.
type Key = (String, String);

/// A list coming in: each object, with when it was last written.
type Listing = BTreeMap<Key, (Value, Option<DateTime<Utc>>)>;

/// One watched object as it is kept: what the views read of it, and when it was last written.
struct Entry {
    key: Key,
    value: Value,
    written: Option<DateTime<Utc>>,
}

type EntryStream = Pin<Box<dyn Stream<Item = watcher::Result<Event<Entry>>> + Send>>;

fn entries<K: 'static>(
    stream: impl Stream<Item = watcher::Result<Event<K>>> + Send + 'static,
    entry: fn(K) -> Entry,
) -> EntryStream {
    stream
        .map(move |r| {
            r.map(|e| match e {
                Event::Apply(o) => Event::Apply(entry(o)),
                Event::Delete(o) => Event::Delete(entry(o)),
                Event::Init => Event::Init,
                Event::InitApply(o) => Event::InitApply(entry(o)),
                Event::InitDone => Event::InitDone,
            })
        })
        .boxed()
}

/// A promotion or a ClusterProfile: kept whole (the views read most of it, managed fields
/// included: who writes the status).
fn dynamic_entry(o: DynamicObject) -> Entry {
    let key = (
        o.metadata.namespace.clone().unwrap_or_default(),
        o.metadata.name.clone().unwrap_or_default(),
    );
    let value = serde_json::to_value(&o).unwrap_or(Value::Null);
    let written = latest_write(&value);
    Entry {
        key,
        value,
        written,
    }
}

fn summary_entry(o: WatchedSummary) -> Entry {
    let key = (
        pointer(&o.view, "/metadata/namespace")
            .unwrap_or_default()
            .to_string(),
        pointer(&o.view, "/metadata/name")
            .unwrap_or_default()
            .to_string(),
    );
    Entry {
        key,
        written: o.written,
        value: o.view,
    }
}

/// When the API server last wrote `object`: the latest time of its managed fields.
pub fn latest_write(object: &Value) -> Option<DateTime<Utc>> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("time").and_then(Value::as_str))
        .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .max()
}

fn config() -> watcher::Config {
    // One list request, whatever the server's support for pagination.
    watcher::Config {
        page_size: None,
        ..watcher::Config::default()
    }
}

/// Which promotions are followed.
enum Scope {
    One(String),
    Selector(Option<String>),
}

/// Where the watch streams come from: the API server ([`Kube`]), or a test's events.
trait Source: Send {
    fn promotions(&self, scope: &Scope) -> EntryStream;
    fn profiles(&self) -> EntryStream;
    /// The ClusterSummaries of these stage profiles.
    fn summaries(&self, profiles: &[String]) -> EntryStream;
    /// An error the watcher cannot fix by retrying, mapped for the user (`Ok`), or why a
    /// transient one happened (`Err`, the watcher retries it).
    fn fatal(&self, err: watcher::Error, what: &Request) -> std::result::Result<Error, String>;
}

impl Source for Kube {
    fn promotions(&self, scope: &Scope) -> EntryStream {
        let api: Api<DynamicObject> = Api::all_with(self.client(), &PROMOTION.api_resource());
        let config = match scope {
            Scope::One(name) => config().fields(&format!("metadata.name={name}")),
            Scope::Selector(Some(selector)) => config().labels(selector),
            Scope::Selector(None) => config(),
        };
        entries(
            watcher::watcher(api, config).default_backoff(),
            dynamic_entry,
        )
    }

    fn profiles(&self) -> EntryStream {
        let api: Api<DynamicObject> = Api::all_with(self.client(), &PROFILE.api_resource());
        entries(
            watcher::watcher(api, config().labels(PROMOTION_NAME_LABEL)).default_backoff(),
            dynamic_entry,
        )
    }

    fn summaries(&self, profiles: &[String]) -> EntryStream {
        if profiles.is_empty() {
            // No stage profile, no summary to watch (and `in ()` is not a valid selector): an
            // empty list that stays empty.
            return futures::stream::iter([Ok(Event::Init), Ok(Event::InitDone)])
                .chain(futures::stream::pending())
                .boxed();
        }
        let api: Api<WatchedSummary> = Api::all_with(self.client(), &SUMMARY.api_resource());
        entries(
            watcher::watcher(api, config().labels(&summaries_selector(profiles))).default_backoff(),
            summary_entry,
        )
    }

    fn fatal(&self, err: watcher::Error, what: &Request) -> std::result::Result<Error, String> {
        fatal(self, err, what)
    }
}

/// [`Source::fatal`] for the API server.
fn fatal(kube: &Kube, err: watcher::Error, what: &Request) -> std::result::Result<Error, String> {
    let inner = match err {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => e,
        watcher::Error::WatchError(s) => kube::Error::Api(s),
        watcher::Error::NoResourceVersion => {
            return Ok(Error::Api {
                request: what.clone(),
                message: "the server returned no resourceVersion (does it support watch?)".into(),
            })
        }
    };
    match &inner {
        // A refusal that retrying will not change ends the watch with the plugin's error.
        kube::Error::Api(s)
            if matches!(
                classify(s),
                Failure::Unauthorized | Failure::Forbidden | Failure::NotFound | Failure::Invalid
            ) =>
        {
            Ok(kube.error(inner, what))
        }
        kube::Error::Auth(_) => Ok(kube.error(inner, what)),
        // The server's own words (`Internal error occurred: etcdserver: leader changed`), not
        // the Status object's debug dump.
        kube::Error::Api(s) => Err(s.message.clone()),
        _ => Err(kube_client::chain(&inner)),
    }
}

/// Whether two kept objects read the same: equal but for `metadata.resourceVersion`, which
/// every write moves.
fn same(a: &Value, b: &Value) -> bool {
    fn versionless(
        m: &serde_json::Map<String, Value>,
    ) -> impl Iterator<Item = (&String, &Value)> + '_ {
        m.iter().filter(|(k, _)| *k != "resourceVersion")
    }
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| match (k.as_str(), b.get(k)) {
            (_, None) => false,
            ("metadata", Some(w)) => match (v.as_object(), w.as_object()) {
                (Some(vm), Some(wm)) => {
                    versionless(vm).count() == versionless(wm).count()
                        && versionless(vm).all(|(k, x)| wm.get(k) == Some(x))
                }
                _ => v == w,
            },
            (_, Some(w)) => v == w,
        })
}

/// One watch stream's objects, as the views read them, by namespace and name; and whether an
/// event changed them.
struct Kept {
    which: Which,
    objects: BTreeMap<Key, Value>,
    /// Between `Init` and `InitDone`: the new list so far (the previous one is shown until it is
    /// complete).
    relist: Option<Listing>,
    /// The first list is complete.
    synced: bool,
    /// The user may not read these (or they are not served): why. The stream is then left.
    unreadable: Option<String>,
    /// `objects` as a list, made once per change and shared by the states handed out.
    listed: Option<Arc<Vec<Value>>>,
}

impl Kept {
    fn new(which: Which) -> Kept {
        Kept {
            which,
            objects: BTreeMap::new(),
            relist: None,
            synced: false,
            unreadable: None,
            listed: None,
        }
    }

    /// Whether the kept objects are a complete list.
    fn ready(&self) -> bool {
        self.synced && self.relist.is_none()
    }

    /// The stream is replaced by one that will list again: until that list is complete, the
    /// objects kept are shown.
    fn relist_pending(&mut self) {
        self.relist = Some(BTreeMap::new());
        self.unreadable = None;
    }

    /// The objects (sorted by namespace and name), or why they cannot be read.
    fn read(&mut self) -> Read {
        if let Some(why) = &self.unreadable {
            return Err(why.clone());
        }
        let objects = &self.objects;
        Ok(self
            .listed
            .get_or_insert_with(|| Arc::new(objects.values().cloned().collect()))
            .clone())
    }

    /// Apply an event received at `received`; true when what the views read changed, each
    /// object changed noted in `changes` with when it changed.
    fn apply(
        &mut self,
        event: Event<Entry>,
        received: DateTime<Utc>,
        changes: &mut Changes,
    ) -> bool {
        let which = self.which;
        let changed = match event {
            Event::Init => {
                self.relist = Some(BTreeMap::new());
                false
            }
            Event::InitApply(e) => {
                self.relist
                    .get_or_insert_with(BTreeMap::new)
                    .insert(e.key, (e.value, e.written));
                false
            }
            Event::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                let mut changed = !self.synced;
                self.synced = true;
                for (key, old) in &self.objects {
                    if !listed.contains_key(key) {
                        changes.note(which, old, received);
                        changed = true;
                    }
                }
                let mut objects = BTreeMap::new();
                for (key, (value, written)) in listed {
                    let old = self.objects.get(&key);
                    if old.is_none_or(|old| !same(old, &value)) {
                        if let Some(old) = old {
                            changes.note(which, old, written.unwrap_or(received));
                        }
                        changes.note(which, &value, written.unwrap_or(received));
                        changed = true;
                    }
                    objects.insert(key, value);
                }
                self.objects = objects;
                changed
            }
            Event::Apply(e) => {
                if let Some(relist) = &mut self.relist {
                    relist.insert(e.key, (e.value, e.written));
                    return false;
                }
                let at = e.written.unwrap_or(received);
                match self.objects.get(&e.key) {
                    Some(old) if same(old, &e.value) => false,
                    old => {
                        // A summary moved to another profile changes both.
                        if let Some(old) = old {
                            changes.note(which, old, at);
                        }
                        changes.note(which, &e.value, at);
                        self.objects.insert(e.key, e.value);
                        true
                    }
                }
            }
            Event::Delete(e) => {
                if let Some(relist) = &mut self.relist {
                    relist.remove(&e.key);
                    return false;
                }
                match self.objects.remove(&e.key) {
                    Some(old) => {
                        changes.note(which, &old, received);
                        true
                    }
                    None => false,
                }
            }
        };
        if changed {
            self.listed = None;
        }
        changed
    }
}

/// Follows one promotion; [`Follower::next`] returns its state after each burst of changes.
pub struct Follower {
    watches: Watches,
    name: String,
}

/// Follows every promotion matching a selector; [`FleetFollower::next`] returns their state
/// after each burst of changes.
pub struct FleetFollower {
    watches: Watches,
}

/// The three watches, each stream's objects kept.
struct Watches {
    source: Box<dyn Source>,
    scope: Scope,
    stage_profiles: Vec<String>,
    promo_stream: EntryStream,
    prof_stream: EntryStream,
    sum_stream: EntryStream,
    promo: Kept,
    profs: Kept,
    sums: Kept,
    /// A transient error was reported and nothing has come since.
    lost: bool,
    /// Something changed that no state handed out shows yet.
    dirty: bool,
    /// What changed since the last state handed out.
    changes: Changes,
    /// The promotions of the last state handed out: one added or gone changes whose profiles
    /// are whose, so every view.
    names: Option<BTreeSet<String>>,
}

impl Follower {
    /// Start following. A plain GET comes first, so that a missing object, a missing CRD or an
    /// unreachable server is an immediate error rather than something retried until a timeout.
    pub async fn start(kube: &Kube, name: &str) -> Result<Follower> {
        let initial = kube.get_promotion(name).await?;
        let stage_profiles = view::profile_names(&view::typed(&initial)?);
        Ok(Follower {
            watches: Watches::new(kube, Scope::One(name.to_string()), stage_profiles),
            name: name.to_string(),
        })
    }

    /// Wait for the next change (the first call returns once the initial lists are complete),
    /// or for the connection to be lost.
    pub async fn next(&mut self) -> Result<Update> {
        Ok(match self.watches.next().await? {
            Update::ConnectionLost(reason) => Update::ConnectionLost(reason),
            Update::Changed(fleet) => {
                let name = self.name.as_str();
                let Some(object) = fleet
                    .objects
                    .into_iter()
                    .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
                else {
                    return Err(Error::Refused(format!(
                        "clusterpromotion.config.projectsveltos.io {name:?} was deleted"
                    )));
                };
                Update::Changed(State {
                    object,
                    profiles: fleet.profiles,
                    summaries: fleet.summaries,
                    owners: fleet.owners,
                    changes: fleet.changes,
                })
            }
        })
    }

    /// The next state, skipping connection reports (for callers that only judge states), or
    /// `None` at `deadline`.
    pub async fn next_until(&mut self, deadline: Option<Instant>) -> Result<Option<State>> {
        loop {
            let update = match deadline {
                Some(d) => match tokio::time::timeout_at(d, self.next()).await {
                    Ok(r) => r?,
                    Err(_) => return Ok(None),
                },
                None => self.next().await?,
            };
            if let Update::Changed(state) = update {
                return Ok(Some(state));
            }
        }
    }
}

impl FleetFollower {
    /// Start following every promotion matching `selector` (all without one). A plain LIST
    /// comes first, for the same reason as in [`Follower::start`].
    pub async fn start(kube: &Kube, selector: Option<&str>) -> Result<FleetFollower> {
        let initial = kube.list_promotions(selector).await?;
        let stage_profiles = union(&profiles_by_promotion(&initial)?);
        Ok(FleetFollower {
            watches: Watches::new(
                kube,
                Scope::Selector(selector.map(str::to_string)),
                stage_profiles,
            ),
        })
    }

    /// Wait for the next change to any followed promotion, its profiles or its clusters (the
    /// first call returns once the initial lists are complete), or for the connection to be
    /// lost.
    pub async fn next(&mut self) -> Result<Update<Fleet>> {
        self.watches.next().await
    }
}

/// Sleep until `at`, or forever without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Watches {
    fn new(kube: &Kube, scope: Scope, stage_profiles: Vec<String>) -> Watches {
        Watches::with_source(Box::new(kube.clone()), scope, stage_profiles)
    }

    fn with_source(source: Box<dyn Source>, scope: Scope, stage_profiles: Vec<String>) -> Watches {
        Watches {
            promo_stream: source.promotions(&scope),
            prof_stream: source.profiles(),
            sum_stream: source.summaries(&stage_profiles),
            source,
            scope,
            stage_profiles,
            promo: Kept::new(Which::Promotion),
            profs: Kept::new(Which::Profiles),
            sums: Kept::new(Which::Summaries),
            lost: false,
            dirty: false,
            changes: Changes::default(),
            names: None,
        }
    }

    async fn next(&mut self) -> Result<Update<Fleet>> {
        loop {
            let mut changed = false;
            let mut trouble: Option<String> = None;
            // Wait for an event for as long as it takes (no timer runs meanwhile), then gather
            // the burst it starts: every event is applied as it comes, the state is made once.
            let mut burst: Option<Instant> = None;
            loop {
                let gathered =
                    burst.map(|first| (Instant::now() + QUIET).min(first + GATHER_AT_MOST));
                let (which, ev) = tokio::select! {
                    ev = self.promo_stream.next() => (Which::Promotion, ev),
                    ev = self.prof_stream.next() => (Which::Profiles, ev),
                    ev = self.sum_stream.next() => (Which::Summaries, ev),
                    () = until(gathered) => break,
                };
                changed |= self.handle(which, ev, &mut trouble)?;
                burst.get_or_insert_with(Instant::now);
                // The first state, the initial lists, is handed out as soon as they are in:
                // what comes after them is a change to it (`list --watch-only` prints those).
                if self.names.is_none() && self.ready() {
                    break;
                }
            }
            self.dirty |= changed;
            if let Some(reason) = trouble.filter(|_| !self.lost && !changed) {
                self.lost = true;
                return Ok(Update::ConnectionLost(reason));
            }
            if !(self.dirty && self.ready()) {
                continue;
            }
            self.lost = false;
            let objects: Vec<Value> = self.promo.objects.values().cloned().collect();
            let stage_profiles = profiles_by_promotion(&objects)?;
            // Stages renamed, added or removed (or promotions added): follow the new set of
            // stage profiles; the ClusterSummaries kept are shown until the new list is in.
            let now_profiles = union(&stage_profiles);
            if now_profiles != self.stage_profiles {
                self.stage_profiles = now_profiles;
                self.sum_stream = self.source.summaries(&self.stage_profiles);
                self.sums.relist_pending();
                continue;
            }
            let names: BTreeSet<String> = stage_profiles.keys().cloned().collect();
            let mut changes = std::mem::take(&mut self.changes);
            if self.names.as_ref() != Some(&names) {
                changes.everything = true;
                self.names = Some(names);
            }
            self.dirty = false;
            // Only an unfiltered watch sees every promotion, and so which owners are gone.
            let owners = match self.scope {
                Scope::Selector(None) => view::Owners::of_all(&objects),
                _ => view::Owners::default(),
            };
            return Ok(Update::Changed(Fleet {
                owners,
                objects,
                profiles: self.profs.read(),
                summaries: self.sums.read(),
                stage_profiles,
                changes,
            }));
        }
    }

    /// Whether every stream's objects are a complete list.
    fn ready(&self) -> bool {
        self.promo.ready() && self.profs.ready() && self.sums.ready()
    }

    fn handle(
        &mut self,
        which: Which,
        ev: Option<watcher::Result<Event<Entry>>>,
        trouble: &mut Option<String>,
    ) -> Result<bool> {
        let (kept, what) = match which {
            Which::Promotion => (
                &mut self.promo,
                match &self.scope {
                    Scope::One(name) => Request::named("watch", PROMOTIONS, name),
                    Scope::Selector(_) => Request::new("watch", PROMOTIONS),
                },
            ),
            Which::Profiles => (&mut self.profs, Request::new("watch", PROFILES)),
            Which::Summaries => (&mut self.sums, Request::new("watch", SUMMARIES)),
        };
        match ev {
            Some(Ok(e)) => Ok(kept.apply(e, Utc::now(), &mut self.changes)),
            Some(Err(e)) => match self.source.fatal(e, &what) {
                // What the view can go without: followed without, and said so in the view.
                Ok(err @ (Error::Forbidden { .. } | Error::NotServed { .. }))
                    if !matches!(which, Which::Promotion) =>
                {
                    kept.unreadable = Some(err.read_failure());
                    kept.synced = true;
                    kept.relist = None;
                    kept.listed = None;
                    self.changes.everything = true;
                    *self.stream(which) = futures::stream::pending().boxed();
                    Ok(true)
                }
                Ok(err) => Err(err),
                Err(reason) => {
                    *trouble = Some(reason);
                    Ok(false)
                }
            },
            // The watcher streams never end; should one, it is started again (it lists again).
            None => {
                let stream = match which {
                    Which::Promotion => self.source.promotions(&self.scope),
                    Which::Profiles => self.source.profiles(),
                    Which::Summaries => self.source.summaries(&self.stage_profiles),
                };
                *self.stream(which) = stream;
                Ok(false)
            }
        }
    }

    fn stream(&mut self, which: Which) -> &mut EntryStream {
        match which {
            Which::Promotion => &mut self.promo_stream,
            Which::Profiles => &mut self.prof_stream,
            Which::Summaries => &mut self.sum_stream,
        }
    }
}

/// Each promotion's stage profiles, by promotion name.
fn profiles_by_promotion(objects: &[Value]) -> Result<BTreeMap<String, Vec<String>>> {
    let mut by = BTreeMap::new();
    for o in objects {
        let promotion = view::typed(o)?;
        by.insert(
            promotion.name().to_string(),
            view::profile_names(&promotion),
        );
    }
    Ok(by)
}

/// The stage profiles of every promotion, sorted and without repeats.
fn union(by_promotion: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut names: Vec<String> = by_promotion.values().flatten().cloned().collect();
    names.sort();
    names.dedup();
    names
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Promotion,
    Profiles,
    Summaries,
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::channel::mpsc;
    use serde_json::json;
    use std::sync::Mutex;

    fn at(t: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(t)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    /// A ClusterSummary as the watch keeps it (what the view reads), of profile `profile`.
    fn summary(name: &str, profile: &str, phase: &str, written: Option<&str>) -> Entry {
        Entry {
            key: ("ns".into(), name.into()),
            value: json!({"metadata": {"name": name, "namespace": "ns",
                                       "labels": {CLUSTER_PROFILE_NAME_LABEL: profile}},
                          "spec": {"clusterNamespace": "ns", "clusterName": name},
                          "status": {"featureSummaries": [{"featureID": "Helm", "status": phase}]}}),
            written: written.map(at),
        }
    }

    fn names(k: &mut Kept) -> Vec<String> {
        k.read()
            .unwrap_or_default()
            .iter()
            .map(|v| {
                format!(
                    "{}/{}",
                    v["metadata"]["namespace"].as_str().unwrap_or_default(),
                    v["metadata"]["name"].as_str().unwrap_or_default()
                )
            })
            .collect()
    }

    const RECEIVED: &str = "2026-02-16T09:00:00Z";

    fn apply(k: &mut Kept, e: Event<Entry>, changes: &mut Changes) -> bool {
        k.apply(e, at(RECEIVED), changes)
    }

    #[test]
    fn a_list_shows_once_complete_sorted_by_namespace_and_name() {
        let mut k = Kept::new(Which::Summaries);
        let mut c = Changes::default();
        assert!(!apply(&mut k, Event::Init, &mut c));
        assert!(!apply(
            &mut k,
            Event::InitApply(summary("x", "p", "Ok", None)),
            &mut c
        ));
        let mut y = summary("y", "p", "Ok", None);
        y.key.0 = "a".into();
        y.value["metadata"]["namespace"] = json!("a");
        assert!(!apply(&mut k, Event::InitApply(y), &mut c));
        assert!(!k.ready() && names(&mut k).is_empty());
        assert!(apply(&mut k, Event::InitDone, &mut c));
        assert!(k.ready());
        assert_eq!(names(&mut k), ["a/y", "ns/x"]);
    }

    #[test]
    fn only_what_the_views_read_counts_and_each_change_has_its_write_time() {
        let mut k = Kept::new(Which::Summaries);
        let mut c = Changes::default();
        apply(&mut k, Event::Init, &mut c);
        apply(
            &mut k,
            Event::InitApply(summary("x", "p-dev", "Provisioning", None)),
            &mut c,
        );
        apply(&mut k, Event::InitDone, &mut c);
        let mut c = Changes::default();
        // A write that moves only the resourceVersion reads the same.
        let mut again = summary("x", "p-dev", "Provisioning", Some("2026-02-16T08:00:00Z"));
        again.value["metadata"]["resourceVersion"] = json!("42");
        assert!(!apply(&mut k, Event::Apply(again), &mut c), "same object");
        assert_eq!(c, Changes::default());
        let provisioned = summary("x", "p-dev", "Provisioned", Some("2026-02-16T08:01:00Z"));
        assert!(apply(&mut k, Event::Apply(provisioned), &mut c));
        // The API server's time of the write, not when it arrived.
        assert_eq!(c.profile("p-dev"), Some(at("2026-02-16T08:01:00Z")));
        assert_eq!(c.profile("p-prod"), None);
        assert!(c.affects("p", &["p-dev".into()]) && !c.affects("q", &["q-dev".into()]));
        // Without a write time (and for a deletion), the time it arrived.
        let mut c = Changes::default();
        assert!(apply(
            &mut k,
            Event::Apply(summary("z", "p-prod", "Provisioned", None)),
            &mut c
        ));
        assert!(
            !apply(
                &mut k,
                Event::Delete(summary("gone", "p-prod", "Ok", None)),
                &mut c
            ),
            "never seen"
        );
        assert!(apply(
            &mut k,
            Event::Delete(summary("x", "p-dev", "Ok", None)),
            &mut c
        ));
        assert_eq!(c.profile("p-prod"), Some(at(RECEIVED)));
        assert_eq!(c.profile("p-dev"), Some(at(RECEIVED)));
        assert_eq!(names(&mut k), ["ns/z"]);
    }

    #[test]
    fn a_relist_replaces_the_contents_at_its_end_and_notes_only_what_differs() {
        let mut k = Kept::new(Which::Summaries);
        let mut c = Changes::default();
        apply(&mut k, Event::Init, &mut c);
        apply(
            &mut k,
            Event::InitApply(summary("x", "p-dev", "Ok", None)),
            &mut c,
        );
        apply(
            &mut k,
            Event::InitApply(summary("y", "p-prod", "Ok", None)),
            &mut c,
        );
        apply(&mut k, Event::InitDone, &mut c);
        let mut c = Changes::default();
        assert!(!apply(&mut k, Event::Init, &mut c));
        assert!(!apply(
            &mut k,
            Event::InitApply(summary("x", "p-dev", "Ok", None)),
            &mut c
        ));
        assert!(!apply(
            &mut k,
            Event::InitApply(summary("w", "p-stage", "Ok", Some("2026-02-16T08:30:00Z"))),
            &mut c
        ));
        assert_eq!(
            names(&mut k),
            ["ns/x", "ns/y"],
            "the previous list until the relist is done"
        );
        assert!(apply(&mut k, Event::InitDone, &mut c));
        assert_eq!(names(&mut k), ["ns/w", "ns/x"]);
        assert_eq!(c.profile("p-stage"), Some(at("2026-02-16T08:30:00Z")));
        assert_eq!(c.profile("p-prod"), Some(at(RECEIVED)), "y is gone");
        assert_eq!(c.profile("p-dev"), None, "x is as it was");
        // A relist that finds everything as it was is no change.
        let mut c = Changes::default();
        apply(&mut k, Event::Init, &mut c);
        apply(
            &mut k,
            Event::InitApply(summary("x", "p-dev", "Ok", None)),
            &mut c,
        );
        apply(
            &mut k,
            Event::InitApply(summary("w", "p-stage", "Ok", None)),
            &mut c,
        );
        assert!(!apply(&mut k, Event::InitDone, &mut c));
    }

    /// Test streams: what each watch delivers is sent through a channel.
    struct Fake {
        streams: Mutex<Vec<(Which, EntryStream)>>,
    }

    type Sender = mpsc::UnboundedSender<watcher::Result<Event<Entry>>>;

    fn fake() -> (Box<dyn Source>, [Sender; 3]) {
        let mut streams = Vec::new();
        let senders = [Which::Promotion, Which::Profiles, Which::Summaries].map(|which| {
            let (tx, rx) = mpsc::unbounded();
            streams.push((which, rx.boxed()));
            tx
        });
        (
            Box::new(Fake {
                streams: Mutex::new(streams),
            }),
            senders,
        )
    }

    impl Fake {
        fn take(&self, which: Which) -> EntryStream {
            let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
            match streams.iter().position(|(w, _)| *w == which) {
                Some(i) => streams.remove(i).1,
                None => futures::stream::pending().boxed(),
            }
        }
    }

    impl Source for Fake {
        fn promotions(&self, _: &Scope) -> EntryStream {
            self.take(Which::Promotion)
        }
        fn profiles(&self) -> EntryStream {
            self.take(Which::Profiles)
        }
        fn summaries(&self, _: &[String]) -> EntryStream {
            self.take(Which::Summaries)
        }
        fn fatal(&self, _: watcher::Error, _: &Request) -> std::result::Result<Error, String> {
            Err("transient".into())
        }
    }

    fn promotion() -> Entry {
        Entry {
            key: (String::new(), "p".into()),
            value: json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
                          "metadata": {"name": "p"},
                          "spec": {"profileSpec": {}, "stages": [
                              {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                               "trigger": {"auto": {}}},
                              {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}]}}),
            written: None,
        }
    }

    fn send(tx: &Sender, events: impl IntoIterator<Item = Event<Entry>>) {
        for e in events {
            tx.unbounded_send(Ok(e)).expect("the watches listen");
        }
    }

    /// Watches over test streams, past their first state (the three lists).
    async fn started(summaries: Vec<Entry>) -> (Watches, [Sender; 3]) {
        let (source, senders) = fake();
        let stage_profiles =
            union(&profiles_by_promotion(&[promotion().value]).unwrap_or_default());
        let mut w = Watches::with_source(source, Scope::One("p".into()), stage_profiles);
        send(
            &senders[0],
            [Event::Init, Event::InitApply(promotion()), Event::InitDone],
        );
        send(&senders[1], [Event::Init, Event::InitDone]);
        send(
            &senders[2],
            [Event::Init]
                .into_iter()
                .chain(summaries.into_iter().map(Event::InitApply))
                .chain([Event::InitDone]),
        );
        match w.next().await {
            Ok(Update::Changed(first)) => assert!(first.changes.everything),
            _ => panic!("no first state"),
        }
        (w, senders)
    }

    /// A burst of per-cluster events is one state, which says when the latest one was written.
    #[tokio::test(start_paused = true)]
    async fn a_burst_of_events_is_one_state() {
        let clusters: Vec<String> = (0..50).map(|i| format!("c{i:02}")).collect();
        let (mut w, tx) = started(
            clusters
                .iter()
                .map(|c| summary(c, "p-dev", "Provisioning", None))
                .collect(),
        )
        .await;
        for (i, c) in clusters.iter().enumerate() {
            let t = format!("2026-02-16T08:00:{i:02}Z");
            send(
                &tx[2],
                [Event::Apply(summary(c, "p-dev", "Provisioned", Some(&t)))],
            );
        }
        let Ok(Update::Changed(fleet)) = w.next().await else {
            panic!("no state")
        };
        let provisioned = fleet
            .summaries
            .as_deref()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|s| s["status"]["featureSummaries"][0]["status"] == "Provisioned")
            .count();
        assert_eq!(
            provisioned, 50,
            "every event of the burst is in the one state"
        );
        assert!(!fleet.changes.everything);
        assert_eq!(
            fleet.changes.profile("p-dev"),
            Some(at("2026-02-16T08:00:49Z"))
        );
        assert!(fleet.affects("p"));
        // And nothing more is pending.
        assert!(tokio::time::timeout(Duration::from_secs(3600), w.next())
            .await
            .is_err());
    }

    /// Events that change nothing a view reads hand out no state: nothing is recomputed, and
    /// no timer is left running.
    #[tokio::test(start_paused = true)]
    async fn a_watch_with_no_changes_hands_out_nothing() {
        let (mut w, tx) = started(vec![summary("c1", "p-dev", "Provisioned", None)]).await;
        let mut again = summary("c1", "p-dev", "Provisioned", Some("2026-02-16T08:00:00Z"));
        again.value["metadata"]["resourceVersion"] = json!("7");
        send(&tx[2], [Event::Apply(again)]);
        let mut p = promotion();
        p.value["metadata"]["resourceVersion"] = json!("8");
        send(&tx[0], [Event::Apply(p)]);
        assert!(tokio::time::timeout(Duration::from_secs(3600), w.next())
            .await
            .is_err());
        // A real change after that is handed out, alone.
        send(
            &tx[2],
            [Event::Apply(summary("c1", "p-dev", "Failed", None))],
        );
        let Ok(Ok(Update::Changed(fleet))) =
            tokio::time::timeout(Duration::from_secs(3600), w.next()).await
        else {
            panic!("the change was not handed out")
        };
        assert_eq!(fleet.changes.promotion("p"), None);
        assert!(fleet.changes.profile("p-dev").is_some());
    }
}
