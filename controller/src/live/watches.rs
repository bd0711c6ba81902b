//! The watches besides the promotions' own: each feeds its reflector store ([`super::stores`])
//! and asks for the reconcile of the promotion a change concerns — a ClusterProfile by its
//! promotion label, a ClusterSummary through its profile, a cluster (whose labels decide what
//! each stage matches) every promotion. CAPI Clusters are watched from the moment their CRD
//! exists: Sveltos runs without Cluster API, and a management cluster may install it later.
//!
//! ClusterProfiles are watched with the label selector of the profiles a promotion generates
//! (`config.projectsveltos.io/promotionname`), so the controller keeps none of the cluster's
//! other profiles.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use futures::channel::mpsc::UnboundedSender;
use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tracing::{info, warn};

use super::kept::{KeptCapiCluster, KeptCluster};
use super::reconciler::Context;
use super::stores::{self, Change, Feed, Feeds, Source, Stores};
use promotion_shared::api_resources::{CAPI_CLUSTERS, PROFILE, PROMOTION};
use promotion_shared::model::PROMOTION_NAME_LABEL;

/// Where watch changes go: one promotion, or all of them.
#[derive(Clone)]
pub struct Triggers {
    pub one: UnboundedSender<ObjectRef<DynamicObject>>,
    pub all: UnboundedSender<()>,
    pub ctx: Arc<Context>,
}

impl Triggers {
    fn promotion(&self, name: &str) {
        self.ctx.asked_for(name);
        let _ = self
            .one
            .unbounded_send(ObjectRef::<DynamicObject>::new_with(
                name,
                PROMOTION.api_resource(),
            ));
    }

    fn everything(&self) {
        let _ = self.all.unbounded_send(());
    }
}

/// Start every watch; they run until the process ends.
pub fn spawn_all(client: &Client, stores: Arc<Stores>, feeds: Feeds, triggers: Triggers) {
    let Feeds {
        profiles,
        summaries,
        sveltos_clusters,
        capi_clusters,
    } = feeds;
    let generated = watcher::Config::default().labels(PROMOTION_NAME_LABEL);
    let t = triggers.clone();
    spawn(
        Api::all_with(client.clone(), &PROFILE.api_resource()),
        generated,
        profiles,
        stores::project_profile,
        move |change, ask| {
            if !ask {
                return;
            }
            if let Change::Listed = change {
                return t.everything();
            }
            for promotion in Stores::profile_changed(&change) {
                t.promotion(&promotion);
            }
        },
    );
    let (t, s) = (triggers.clone(), stores.clone());
    spawn(
        Api::all(client.clone()),
        Default::default(),
        summaries,
        |_| {},
        move |change, ask| {
            let profiles = s.summary_changed(&change);
            if !ask {
                return;
            }
            if let Change::Listed = change {
                return t.everything();
            }
            for profile in profiles {
                if let Some(promotion) = s.promotion_of_profile(&profile) {
                    t.promotion(&promotion);
                }
            }
        },
    );
    spawn_clusters(client, sveltos_clusters, stores.clone(), triggers.clone());
    spawn_capi_when_installed(client.clone(), stores, capi_clusters, triggers);
}

/// A cluster watch: a change of what a stage can match asks for every promotion's reconcile.
fn spawn_clusters<const CAPI: bool>(
    client: &Client,
    feed: Feed<KeptCluster<CAPI>>,
    stores: Arc<Stores>,
    triggers: Triggers,
) {
    spawn(
        Api::all(client.clone()),
        Default::default(),
        feed,
        |_| {},
        move |change, ask| {
            if stores.cluster_changed(&change) && ask {
                triggers.everything();
            }
        },
    );
}

/// Run a watch: each event projected, stored, then handed to `changed` with whether it asks for
/// reconciles. The first list of a required watch asks for none (reconciles wait for it, then
/// read everything); CAPI's, which may come after the reconciles started, asks for all.
fn spawn<K>(
    api: Api<K>,
    config: watcher::Config,
    mut feed: Feed<K>,
    project: fn(&mut K),
    mut changed: impl FnMut(Change<K>, bool) + Send + 'static,
) where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    let first_list_asks = feed.source() == Source::CapiClusters;
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, config)
            .default_backoff()
            .modify(project)
            .boxed();
        let mut listed = false;
        while let Some(event) = stream.next().await {
            let event: Event<K> = match event {
                Ok(event) => event,
                Err(e) => {
                    warn!(watch = ?feed.source(), error = %describe(&e), "watch failed; retrying");
                    continue;
                }
            };
            let source = feed.source();
            feed.apply(event, |change| {
                let mut ask = true;
                if let Change::Listed = change {
                    if !listed {
                        listed = true;
                        info!(watch = ?source, "listed");
                        ask = first_list_asks;
                    }
                }
                changed(change, ask);
            });
        }
    });
}

/// Watch the CAPI Cluster CRD; start the Cluster watch once it is there. Its first list
/// says whether reconciles wait for CAPI Clusters: not when the CRD is absent; when it is
/// there (or is installed later), until the Clusters are listed.
fn spawn_capi_when_installed(
    client: Client,
    stores: Arc<Stores>,
    feed: Feed<KeptCapiCluster>,
    triggers: Triggers,
) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    tokio::spawn(async move {
        let config = watcher::Config::default().fields(&format!("metadata.name={}", CAPI_CLUSTERS));
        let mut stream = watcher::watcher(crds, config).default_backoff().boxed();
        let mut feed = Some(feed);
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Apply(crd) | Event::InitApply(crd)) if established(&crd) => {
                    let Some(feed) = feed.take() else { continue };
                    info!("CAPI Cluster CRD found: watching CAPI Clusters");
                    stores.capi_installed();
                    spawn_clusters(&client, feed, stores.clone(), triggers.clone());
                }
                Ok(Event::InitDone) if feed.is_some() => {
                    info!("no CAPI Cluster CRD: the fleet is the SveltosClusters");
                    stores.capi_absent();
                }
                Ok(_) => {}
                Err(e) => warn!(error = %describe(&e), "CRD watch failed; retrying"),
            }
        }
    });
}

/// A watch's failure in words: the API server's message and code, never a `Debug` dump.
fn describe(e: &watcher::Error) -> String {
    let api = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s)) => Some(s),
        watcher::Error::WatchError(s) => Some(s),
        _ => None,
    };
    match api {
        Some(s) => format!("{} ({})", s.message, s.code),
        None => kube_connect::error_chain(e),
    }
}

fn established(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}
