//! Watching one promotion through watch events: the ClusterPromotion itself and the
//! ClusterSummaries of its stage profiles. Used by `wait`, `describe --watch` and
//! `approve --wait`.
//!
//! Both streams come from `kube::runtime::watcher`, which lists, then watches from the list's
//! resourceVersion with bookmarks, re-watches when a watch ends, and re-lists when the server
//! says the version is gone (410). A dropped connection is retried with backoff; only errors that
//! retrying cannot fix (401, 403, 404) end the follow.

use std::collections::BTreeMap;
use std::pin::Pin;

use futures::{FutureExt, Stream, StreamExt};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::Value;
use tokio::time::Instant;

use promotion_shared::model::{API_VERSION, GROUP, KIND, PLURAL, VERSION};

use crate::error::{Error, Request, Result};
use crate::kube_client::{self, summaries_selector, Kube, PROMOTIONS, SUMMARIES};
use crate::view::{self, Snapshot};

/// The current state of the followed promotion, after a change.
pub struct State {
    pub object: Value,
    pub summaries: Vec<Value>,
}

impl State {
    pub fn snapshot(
        &self,
        profiles: std::result::Result<Vec<Value>, String>,
        events: std::result::Result<Vec<Value>, String>,
    ) -> Snapshot {
        Snapshot {
            object: self.object.clone(),
            profiles,
            summaries: Ok(self.summaries.clone()),
            events,
        }
    }
}

fn promotion_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        plural: PLURAL.into(),
    }
}

type EventStream = Pin<Box<dyn Stream<Item = watcher::Result<Event<DynamicObject>>> + Send>>;

fn config() -> watcher::Config {
    // One list request, whatever the server's support for pagination.
    watcher::Config {
        page_size: None,
        ..watcher::Config::default()
    }
}

fn promotion_stream(kube: &Kube, name: &str) -> EventStream {
    let api: Api<DynamicObject> = Api::all_with(kube.client(), &promotion_resource());
    watcher::watcher(api, config().fields(&format!("metadata.name={name}")))
        .default_backoff()
        .boxed()
}

fn summary_stream(kube: &Kube, profiles: &[String]) -> EventStream {
    let api: Api<DynamicObject> = Api::all_with(kube.client(), &kube_client::summary_resource());
    watcher::watcher(api, config().labels(&summaries_selector(profiles)))
        .default_backoff()
        .boxed()
}

/// An error the watcher cannot fix by retrying, mapped for the user; `None` for transient ones.
fn fatal(kube: &Kube, err: watcher::Error, what: &Request) -> Option<Error> {
    let inner = match err {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => e,
        watcher::Error::WatchError(s) => kube::Error::Api(s),
        watcher::Error::NoResourceVersion => {
            return Some(Error::Api {
                request: what.clone(),
                message: "the server returned no resourceVersion (does it support watch?)".into(),
            })
        }
    };
    match &inner {
        kube::Error::Api(s) if matches!(s.code, 401 | 403 | 404 | 400) => {
            Some(kube.error(inner, what))
        }
        kube::Error::Auth(_) => Some(kube.error(inner, what)),
        _ => None,
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

/// A list-then-watch mirror of one stream.
#[derive(Default)]
struct Mirror {
    items: BTreeMap<(String, String), Value>,
    buffer: BTreeMap<(String, String), Value>,
    synced: bool,
    relisting: bool,
}

impl Mirror {
    /// Apply an event; true when the visible contents changed.
    fn apply(&mut self, event: Event<DynamicObject>) -> bool {
        match event {
            Event::Init => {
                self.buffer.clear();
                self.relisting = true;
                false
            }
            Event::InitApply(o) => {
                self.buffer.insert(key(&o), to_value(&o));
                false
            }
            Event::InitDone => {
                self.items = std::mem::take(&mut self.buffer);
                self.relisting = false;
                self.synced = true;
                true
            }
            Event::Apply(o) => {
                let v = to_value(&o);
                let k = key(&o);
                let changed = self.items.get(&k) != Some(&v);
                self.items.insert(k, v);
                changed && !self.relisting
            }
            Event::Delete(o) => self.items.remove(&key(&o)).is_some() && !self.relisting,
        }
    }
}

/// Follows one promotion; [`Follower::next`] returns its state after each batch of changes.
pub struct Follower {
    kube: Kube,
    name: String,
    profiles: Vec<String>,
    promo_stream: EventStream,
    sum_stream: EventStream,
    promo: Mirror,
    sums: Mirror,
    promo_what: Request,
    sum_what: Request,
}

impl Follower {
    /// Start following. A plain GET comes first, so that a missing object, a missing CRD or an
    /// unreachable server is an immediate error rather than something retried until a timeout.
    pub async fn start(kube: &Kube, name: &str) -> Result<Follower> {
        let initial = kube.get_promotion(name).await?;
        let profiles = view::profile_names(&view::typed(&initial)?);
        Ok(Follower {
            kube: kube.clone(),
            name: name.to_string(),
            promo_stream: promotion_stream(kube, name),
            sum_stream: summary_stream(kube, &profiles),
            profiles,
            promo: Mirror::default(),
            sums: Mirror::default(),
            promo_what: Request::named("watch", PROMOTIONS, name),
            sum_what: Request::new("watch", SUMMARIES),
        })
    }

    /// Wait for the next change (the first call returns once the initial lists are complete).
    pub async fn next(&mut self) -> Result<State> {
        loop {
            let mut changed = false;
            // Wait for one event, then take whatever else is already there, so that a burst
            // of updates gives one evaluation.
            tokio::select! {
                ev = self.promo_stream.next() => {
                    changed |= handle(&self.kube, ev, &mut self.promo, &self.promo_what)?;
                }
                ev = self.sum_stream.next() => {
                    changed |= handle(&self.kube, ev, &mut self.sums, &self.sum_what)?;
                }
            }
            while let Some(Some(ev)) = self.promo_stream.next().now_or_never() {
                changed |= handle(&self.kube, Some(ev), &mut self.promo, &self.promo_what)?;
            }
            while let Some(Some(ev)) = self.sum_stream.next().now_or_never() {
                changed |= handle(&self.kube, Some(ev), &mut self.sums, &self.sum_what)?;
            }
            if !(changed && self.promo.synced && self.sums.synced) {
                continue;
            }
            let name = self.name.as_str();
            let Some(object) = self
                .promo
                .items
                .values()
                .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
            else {
                return Err(Error::Refused(format!(
                    "clusterpromotion.config.projectsveltos.io {name:?} was deleted"
                )));
            };
            // Stages renamed, added or removed: follow the new set of stage profiles.
            let now_profiles = view::profile_names(&view::typed(object)?);
            if now_profiles != self.profiles {
                self.profiles = now_profiles;
                self.sum_stream = summary_stream(&self.kube, &self.profiles);
                self.sums = Mirror::default();
                continue;
            }
            return Ok(State {
                object: object.clone(),
                summaries: self.sums.items.values().cloned().collect(),
            });
        }
    }

    /// Like [`Follower::next`], but gives up (returning `None`) at `deadline`.
    pub async fn next_until(&mut self, deadline: Option<Instant>) -> Result<Option<State>> {
        match deadline {
            Some(d) => match tokio::time::timeout_at(d, self.next()).await {
                Ok(r) => r.map(Some),
                Err(_) => Ok(None),
            },
            None => self.next().await.map(Some),
        }
    }
}

fn handle(
    kube: &Kube,
    ev: Option<watcher::Result<Event<DynamicObject>>>,
    mirror: &mut Mirror,
    what: &Request,
) -> Result<bool> {
    match ev {
        Some(Ok(e)) => Ok(mirror.apply(e)),
        Some(Err(e)) => match fatal(kube, e, what) {
            Some(err) => Err(err),
            None => Ok(false),
        },
        // The watcher streams never end; treat an end like a transient gap.
        None => Ok(false),
    }
}
