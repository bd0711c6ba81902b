//! Watching promotions through watch events: the ClusterPromotions themselves (one by name, or
//! all matching a label selector), the ClusterProfiles Sveltos generates for promotions (the
//! first stage's tells whether a change was picked up; a colliding name must be told apart), and
//! the ClusterSummaries of their stage profiles. Used by `wait`, `describe --watch`,
//! `approve --wait` (one promotion) and `list --watch` (a fleet).
//!
//! Both streams come from `kube::runtime::watcher`, which lists, then watches from the list's
//! resourceVersion with bookmarks, re-watches when a watch ends, and re-lists when the server
//! says the version is gone (410). A dropped connection is retried with backoff; only errors that
//! retrying cannot fix (401, 403, 404) end the follow, except that ClusterProfiles or
//! ClusterSummaries the user may not read (or whose CRD is missing) are followed without, as
//! `describe` reads without them: the view says what could not be read. Each stream's objects
//! are kept in a `kube::runtime::reflector` store.

use std::pin::Pin;

use futures::{FutureExt, Stream, StreamExt};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::Value;
use tokio::time::Instant;

use promotion_shared::api_error::{classify, Failure};
use promotion_shared::model::PROMOTION_NAME_LABEL;

use crate::cluster::kube_client::{self, summaries_selector, Kube};
use crate::cluster::resources::{
    Resource, PROFILE, PROFILES, PROMOTION, PROMOTIONS, SUMMARIES, SUMMARY,
};
use crate::error::{Error, Request, Result};
use crate::view::{self, Snapshot};

/// The current state of the followed promotion, after a change.
#[derive(Clone)]
pub struct State {
    pub object: Value,
    /// `Err`: why they cannot be read.
    pub profiles: std::result::Result<Vec<Value>, String>,
    pub summaries: std::result::Result<Vec<Value>, String>,
    pub owners: view::Owners,
}

impl State {
    /// What the view model needs, with the Events read (or not) separately.
    pub fn snapshot(&self, events: std::result::Result<Vec<Value>, String>) -> Snapshot {
        Snapshot {
            object: self.object.clone(),
            profiles: self.profiles.clone(),
            summaries: self.summaries.clone(),
            events,
            owners: self.owners.clone(),
        }
    }
}

/// The current state of every followed promotion, after a change.
pub struct Fleet {
    pub objects: Vec<Value>,
    /// `Err`: why they cannot be read.
    pub profiles: std::result::Result<Vec<Value>, String>,
    pub summaries: std::result::Result<Vec<Value>, String>,
    /// Whether the owners of taken profiles exist: known when every promotion is followed.
    pub owners: view::Owners,
}

impl Fleet {
    /// What the view model needs for one of the promotions; the cluster data is shared.
    pub fn snapshot<'a>(&'a self, object: &'a Value) -> view::SnapshotRef<'a> {
        view::SnapshotRef {
            object,
            profiles: view::shared(&self.profiles),
            summaries: view::shared(&self.summaries),
            events: Err(""),
            owners: &self.owners,
        }
    }
}

/// What [`Follower::next`] and [`Follower::next_fleet`] report.
pub enum Update<T = State> {
    /// The promotions, their profiles or their clusters changed (the first one: the initial
    /// state).
    Changed(T),
    /// The connection to the server was lost; the watches retry with backoff, and the next
    /// `Changed` means they are back.
    ConnectionLost(String),
}

type EventStream = Pin<Box<dyn Stream<Item = watcher::Result<Event<DynamicObject>>> + Send>>;

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

fn promotion_stream(kube: &Kube, scope: &Scope) -> EventStream {
    let api: Api<DynamicObject> = Api::all_with(kube.client(), &PROMOTION.api_resource());
    let config = match scope {
        Scope::One(name) => config().fields(&format!("metadata.name={name}")),
        Scope::Selector(Some(selector)) => config().labels(selector),
        Scope::Selector(None) => config(),
    };
    watcher::watcher(api, config).default_backoff().boxed()
}

fn profile_stream(kube: &Kube) -> EventStream {
    let api: Api<DynamicObject> = Api::all_with(kube.client(), &PROFILE.api_resource());
    watcher::watcher(api, config().labels(PROMOTION_NAME_LABEL))
        .default_backoff()
        .boxed()
}

fn summary_stream(kube: &Kube, profiles: &[String]) -> EventStream {
    if profiles.is_empty() {
        // No stage profile, no summary to watch (and `in ()` is not a valid selector): an
        // empty list that stays empty.
        return futures::stream::iter([Ok(Event::Init), Ok(Event::InitDone)])
            .chain(futures::stream::pending())
            .boxed();
    }
    let api: Api<DynamicObject> = Api::all_with(kube.client(), &SUMMARY.api_resource());
    watcher::watcher(api, config().labels(&summaries_selector(profiles)))
        .default_backoff()
        .boxed()
}

/// An error the watcher cannot fix by retrying, mapped for the user (`Ok`), or why a transient
/// one happened (`Err`, the watcher retries it).
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

fn key(o: &DynamicObject) -> (String, String) {
    (
        o.metadata.namespace.clone().unwrap_or_default(),
        o.metadata.name.clone().unwrap_or_default(),
    )
}

fn to_value(o: &DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

/// One watch stream's objects, kept by a kube-runtime reflector store (which buffers a relist
/// from `Init` to `InitDone` and then swaps it in whole), and whether an event changed what the
/// store shows.
struct Reflected {
    writer: Writer<DynamicObject>,
    store: Store<DynamicObject>,
    resource: ApiResource,
    /// The first list is complete.
    synced: bool,
    /// Between `Init` and `InitDone`: the store still shows the previous list.
    relisting: bool,
    /// The user may not read these (or they are not served): why. The stream is then left.
    unreadable: Option<String>,
}

impl Reflected {
    fn new(resource: &Resource) -> Reflected {
        let resource = resource.api_resource();
        let writer = Writer::new(resource.clone());
        Reflected {
            store: writer.as_reader(),
            writer,
            resource,
            synced: false,
            relisting: false,
            unreadable: None,
        }
    }

    /// The objects, or why they cannot be read.
    fn read(&self) -> std::result::Result<Vec<Value>, String> {
        match &self.unreadable {
            Some(why) => Err(why.clone()),
            None => Ok(self.values()),
        }
    }

    /// Apply an event; true when the visible contents changed (an update that leaves an
    /// object as it was, as a resync does, is no change).
    fn apply(&mut self, event: Event<DynamicObject>) -> bool {
        let stored = |o: &DynamicObject| {
            self.store
                .get(&ObjectRef::from_obj_with(o, self.resource.clone()))
        };
        let changed = match &event {
            Event::Init => {
                self.relisting = true;
                false
            }
            Event::InitApply(_) => false,
            Event::InitDone => {
                self.relisting = false;
                self.synced = true;
                true
            }
            Event::Apply(o) => {
                let changed = stored(o).is_none_or(|old| to_value(&old) != to_value(o));
                changed && !self.relisting
            }
            Event::Delete(o) => stored(o).is_some() && !self.relisting,
        };
        self.writer.apply_watcher_event(&event);
        changed
    }

    /// The objects, by namespace and name.
    fn values(&self) -> Vec<Value> {
        let mut objects = self.store.state();
        objects.sort_by_cached_key(|o| key(o));
        objects.iter().map(|o| to_value(o)).collect()
    }
}

/// Follows one promotion; [`Follower::next`] returns its state after each batch of changes.
pub struct Follower {
    watches: Watches,
    name: String,
}

/// Follows every promotion matching a selector; [`FleetFollower::next`] returns their state
/// after each batch of changes.
pub struct FleetFollower {
    watches: Watches,
}

/// The three watches, each kept in a reflector store.
struct Watches {
    kube: Kube,
    scope: Scope,
    stage_profiles: Vec<String>,
    promo_stream: EventStream,
    prof_stream: EventStream,
    sum_stream: EventStream,
    promo: Reflected,
    profs: Reflected,
    sums: Reflected,
    /// A transient error was reported and nothing has come since.
    lost: bool,
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
        let stage_profiles = all_profile_names(&initial)?;
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

impl Watches {
    fn new(kube: &Kube, scope: Scope, stage_profiles: Vec<String>) -> Watches {
        Watches {
            kube: kube.clone(),
            promo_stream: promotion_stream(kube, &scope),
            prof_stream: profile_stream(kube),
            sum_stream: summary_stream(kube, &stage_profiles),
            scope,
            stage_profiles,
            promo: Reflected::new(&PROMOTION),
            profs: Reflected::new(&PROFILE),
            sums: Reflected::new(&SUMMARY),
            lost: false,
        }
    }

    async fn next(&mut self) -> Result<Update<Fleet>> {
        loop {
            let mut changed = false;
            let mut trouble: Option<String> = None;
            // Wait for one event, then take whatever else is already there, so that a burst
            // of updates gives one evaluation.
            tokio::select! {
                ev = self.promo_stream.next() => {
                    changed |= self.handle(Which::Promotion, ev, &mut trouble)?;
                }
                ev = self.prof_stream.next() => {
                    changed |= self.handle(Which::Profiles, ev, &mut trouble)?;
                }
                ev = self.sum_stream.next() => {
                    changed |= self.handle(Which::Summaries, ev, &mut trouble)?;
                }
            }
            while let Some(Some(ev)) = self.promo_stream.next().now_or_never() {
                changed |= self.handle(Which::Promotion, Some(ev), &mut trouble)?;
            }
            while let Some(Some(ev)) = self.prof_stream.next().now_or_never() {
                changed |= self.handle(Which::Profiles, Some(ev), &mut trouble)?;
            }
            while let Some(Some(ev)) = self.sum_stream.next().now_or_never() {
                changed |= self.handle(Which::Summaries, Some(ev), &mut trouble)?;
            }
            if let Some(reason) = trouble.filter(|_| !self.lost && !changed) {
                self.lost = true;
                return Ok(Update::ConnectionLost(reason));
            }
            if !(changed && self.promo.synced && self.profs.synced && self.sums.synced) {
                continue;
            }
            self.lost = false;
            let objects: Vec<Value> = self.promo.values();
            // Stages renamed, added or removed (or promotions added): follow the new set of
            // stage profiles.
            let now_profiles = all_profile_names(&objects)?;
            if now_profiles != self.stage_profiles {
                self.stage_profiles = now_profiles;
                self.sum_stream = summary_stream(&self.kube, &self.stage_profiles);
                self.sums = Reflected::new(&SUMMARY);
                continue;
            }
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
            }));
        }
    }

    fn handle(
        &mut self,
        which: Which,
        ev: Option<watcher::Result<Event<DynamicObject>>>,
        trouble: &mut Option<String>,
    ) -> Result<bool> {
        let (reflected, what) = match which {
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
            Some(Ok(e)) => Ok(reflected.apply(e)),
            Some(Err(e)) => match fatal(&self.kube, e, &what) {
                // What the view can go without: followed without, and said so in the view.
                Ok(err @ (Error::Forbidden { .. } | Error::NotServed { .. }))
                    if !matches!(which, Which::Promotion) =>
                {
                    reflected.unreadable = Some(err.read_failure());
                    reflected.synced = true;
                    let stream = match which {
                        Which::Profiles => &mut self.prof_stream,
                        _ => &mut self.sum_stream,
                    };
                    *stream = futures::stream::pending().boxed();
                    Ok(true)
                }
                Ok(err) => Err(err),
                Err(reason) => {
                    *trouble = Some(reason);
                    Ok(false)
                }
            },
            // The watcher streams never end; treat an end like a transient gap.
            None => Ok(false),
        }
    }
}

/// The stage profiles of every promotion, sorted and without repeats.
fn all_profile_names(objects: &[Value]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for o in objects {
        names.extend(view::profile_names(&view::typed(o)?));
    }
    names.sort();
    names.dedup();
    Ok(names)
}

#[derive(Clone, Copy)]
enum Which {
    Promotion,
    Profiles,
    Summaries,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(ns: &str, name: &str, phase: &str) -> DynamicObject {
        DynamicObject::new(name, &SUMMARY.api_resource())
            .within(ns)
            .data(json!({"status": {"phase": phase}}))
    }

    fn names(r: &Reflected) -> Vec<String> {
        r.values()
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

    #[test]
    fn a_list_shows_once_complete_sorted_by_namespace_and_name() {
        let mut r = Reflected::new(&SUMMARY);
        assert!(!r.apply(Event::Init));
        assert!(!r.apply(Event::InitApply(summary("b", "x", "Ok"))));
        assert!(!r.apply(Event::InitApply(summary("a", "y", "Ok"))));
        assert!(!r.synced && r.values().is_empty());
        assert!(r.apply(Event::InitDone));
        assert!(r.synced);
        assert_eq!(names(&r), ["a/y", "b/x"]);
    }

    #[test]
    fn only_real_changes_count() {
        let mut r = Reflected::new(&SUMMARY);
        r.apply(Event::Init);
        r.apply(Event::InitApply(summary("a", "x", "Ok")));
        r.apply(Event::InitDone);
        assert!(
            !r.apply(Event::Apply(summary("a", "x", "Ok"))),
            "same object"
        );
        assert!(r.apply(Event::Apply(summary("a", "x", "Failed"))));
        assert!(
            r.apply(Event::Apply(summary("a", "z", "Ok"))),
            "a new object"
        );
        assert!(
            !r.apply(Event::Delete(summary("a", "gone", "Ok"))),
            "never seen"
        );
        assert!(r.apply(Event::Delete(summary("a", "z", "Ok"))));
        assert_eq!(names(&r), ["a/x"]);
        assert_eq!(r.values()[0]["status"]["phase"], "Failed");
    }

    #[test]
    fn a_relist_replaces_the_contents_at_its_end() {
        let mut r = Reflected::new(&SUMMARY);
        r.apply(Event::Init);
        r.apply(Event::InitApply(summary("a", "x", "Ok")));
        r.apply(Event::InitDone);
        assert!(!r.apply(Event::Init));
        assert!(!r.apply(Event::InitApply(summary("a", "w", "Ok"))));
        assert_eq!(
            names(&r),
            ["a/x"],
            "the previous list until the relist is done"
        );
        assert!(r.apply(Event::InitDone));
        assert_eq!(names(&r), ["a/w"]);
    }
}
