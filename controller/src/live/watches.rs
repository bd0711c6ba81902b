//! The watches besides the promotions' own: each feeds its reflector store ([`super::stores`])
//! and asks for the reconcile of the promotion a change concerns — a ClusterProfile by its
//! promotion label, a ClusterSummary through its profile, a cluster (whose labels decide what
//! each stage matches) every promotion. CAPI Clusters are watched from the moment their CRD
//! exists: Sveltos runs without Cluster API, and a management cluster may install it later.
//!
//! ClusterProfiles are watched with the label selector of the profiles a promotion generates
//! (`config.projectsveltos.io/promotionname`), so the controller keeps none of the cluster's
//! other profiles.

use std::sync::Arc;

use futures::channel::mpsc::UnboundedSender;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, TypeMeta};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use tracing::{info, warn};

use super::reconciler::Context;
use super::stores::{self, Change, Feed, Feeds, Source, Stores};
use promotion_shared::api_resources::{
    CAPI_CLUSTERS, CAPI_CLUSTER_V1BETA1, PROFILE, PROMOTION, SUMMARY, SVELTOS_CLUSTER,
};
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
        client,
        Watch::new(Source::Profiles, &PROFILE.api_resource(), generated),
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
        client,
        Watch::new(
            Source::Summaries,
            &SUMMARY.api_resource(),
            Default::default(),
        ),
        summaries,
        stores::project_summary,
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
    let (t, s) = (triggers.clone(), stores.clone());
    spawn(
        client,
        Watch::new(
            Source::SveltosClusters,
            &SVELTOS_CLUSTER.api_resource(),
            Default::default(),
        ),
        sveltos_clusters,
        stores::project_cluster,
        move |change, ask| {
            if s.cluster_changed(&change) && ask {
                t.everything();
            }
        },
    );
    spawn_capi_when_installed(client.clone(), stores, capi_clusters, triggers);
}

/// One watch: what it lists, and whether its first list asks for every reconcile (a watch that
/// starts after the reconciles did: CAPI's).
struct Watch {
    source: Source,
    resource: ApiResource,
    config: watcher::Config,
    first_list_triggers: bool,
}

impl Watch {
    fn new(source: Source, resource: &ApiResource, config: watcher::Config) -> Watch {
        Watch {
            source,
            resource: resource.clone(),
            config,
            first_list_triggers: false,
        }
    }
}

/// Run a watch: each event projected, stored, then handed to `changed` with whether it asks for
/// reconciles. The first list of a required watch asks for none: reconciles wait for it, then
/// read everything.
fn spawn(
    client: &Client,
    watch: Watch,
    mut feed: Feed,
    project: fn(&mut DynamicObject),
    mut changed: impl FnMut(Change, bool) + Send + 'static,
) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &watch.resource);
    // Watch events of a dynamic type may lack apiVersion/kind; the projections read them.
    let types = TypeMeta {
        api_version: watch.resource.api_version.clone(),
        kind: watch.resource.kind.clone(),
    };
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watch.config)
            .default_backoff()
            .modify(move |object: &mut DynamicObject| {
                object.types = Some(types.clone());
                project(object);
            })
            .boxed();
        let mut listed = false;
        while let Some(event) = stream.next().await {
            let event: Event<DynamicObject> = match event {
                Ok(event) => event,
                Err(e) => {
                    warn!(watch = ?watch.source, error = %e, "watch failed; retrying");
                    continue;
                }
            };
            let Some(change) = feed.apply(event) else {
                continue;
            };
            let mut ask = true;
            if let Change::Listed = change {
                if !listed {
                    listed = true;
                    info!(watch = ?watch.source, "listed");
                    ask = watch.first_list_triggers;
                }
            }
            changed(change, ask);
        }
    });
}

/// Watch the CAPI Cluster CRD; start the Cluster watch once it is there.
fn spawn_capi_when_installed(client: Client, stores: Arc<Stores>, feed: Feed, triggers: Triggers) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    tokio::spawn(async move {
        let config = watcher::Config::default().fields(&format!("metadata.name={}", CAPI_CLUSTERS));
        let mut stream = watcher::watcher(crds, config)
            .default_backoff()
            .applied_objects()
            .boxed();
        let mut feed = Some(feed);
        while let Some(event) = stream.next().await {
            match event {
                Ok(crd) if established(&crd) => {
                    let Some(feed) = feed.take() else { continue };
                    info!("CAPI Cluster CRD found: watching CAPI Clusters");
                    let (t, s) = (triggers.clone(), stores.clone());
                    let mut watch = Watch::new(
                        Source::CapiClusters,
                        &CAPI_CLUSTER_V1BETA1.api_resource(),
                        Default::default(),
                    );
                    watch.first_list_triggers = true;
                    spawn(
                        &client,
                        watch,
                        feed,
                        stores::project_cluster,
                        move |change, ask| {
                            if s.cluster_changed(&change) && ask {
                                t.everything();
                            }
                        },
                    );
                }
                Ok(_) => {}
                Err(e) => warn!(error = %e, "CRD watch failed; retrying"),
            }
        }
    });
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
