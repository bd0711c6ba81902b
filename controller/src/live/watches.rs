//! The watches besides the promotions' own: each keeps its part of the [`Cache`] and asks for
//! the reconcile of the promotion a change concerns — a ClusterProfile by its promotion label,
//! a ClusterSummary through its profile, a cluster (whose labels decide what each stage matches)
//! every promotion. CAPI Clusters are watched from the moment their CRD exists: Sveltos runs
//! without Cluster API, and a management cluster may install it later.

use std::sync::Arc;

use futures::channel::mpsc::UnboundedSender;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use serde_json::Value;
use tracing::{info, warn};

use super::cache::{Cache, Source};
use super::reconciler::Context;
use promotion_shared::api_resources::{
    CAPI_CLUSTERS, CAPI_CLUSTER_V1BETA1, PROFILE, PROMOTION, SUMMARY, SVELTOS_CLUSTER,
};

/// Where watch changes go: one promotion, or all of them.
#[derive(Clone)]
pub struct Triggers {
    pub one: UnboundedSender<ObjectRef<DynamicObject>>,
    pub all: UnboundedSender<()>,
    pub ctx: Arc<Context>,
}

impl Triggers {
    fn promotion(&self, name: Option<String>) {
        if let Some(name) = name {
            self.ctx.asked_for(&name);
            let _ = self
                .one
                .unbounded_send(ObjectRef::<DynamicObject>::new_with(
                    &name,
                    PROMOTION.api_resource(),
                ));
        }
    }

    fn everything(&self) {
        let _ = self.all.unbounded_send(());
    }
}

/// Start every watch; they run until the process ends.
pub fn spawn_all(client: &Client, cache: Arc<Cache>, triggers: Triggers) {
    spawn(
        client,
        PROFILE.api_resource(),
        Source::Profiles,
        cache.clone(),
        triggers.clone(),
    );
    spawn(
        client,
        SUMMARY.api_resource(),
        Source::Summaries,
        cache.clone(),
        triggers.clone(),
    );
    spawn(
        client,
        SVELTOS_CLUSTER.api_resource(),
        Source::SveltosClusters,
        cache.clone(),
        triggers.clone(),
    );
    spawn_capi_when_installed(client.clone(), cache, triggers);
}

fn spawn(
    client: &Client,
    resource: ApiResource,
    source: Source,
    cache: Arc<Cache>,
    triggers: Triggers,
) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => handle(&cache, &triggers, source, &resource, event),
                Err(e) => warn!(watch = ?source, error = %e, "watch failed; retrying"),
            }
        }
    });
}

fn to_value(object: &DynamicObject, resource: &ApiResource) -> Value {
    let mut v = serde_json::to_value(object).unwrap_or(Value::Null);
    // Watch events of a dynamic type may lack apiVersion/kind; the fleet reads them.
    v["apiVersion"] = resource.api_version.clone().into();
    v["kind"] = resource.kind.clone().into();
    v
}

fn handle(
    cache: &Cache,
    triggers: &Triggers,
    source: Source,
    resource: &ApiResource,
    event: Event<DynamicObject>,
) {
    match event {
        Event::Init => cache.begin(source),
        Event::InitDone => {
            let affected = cache.end(source);
            let first = !cache.is_synced(&[source]);
            cache.mark_synced(source);
            if first {
                info!(watch = ?source, "listed");
            }
            match source {
                Source::SveltosClusters | Source::CapiClusters => triggers.everything(),
                _ => affected
                    .into_iter()
                    .for_each(|p| triggers.promotion(Some(p))),
            }
        }
        Event::Apply(object) | Event::InitApply(object) => {
            let value = to_value(&object, resource);
            match source {
                Source::Profiles => triggers.promotion(cache.put_profile(value)),
                Source::Summaries => triggers.promotion(cache.put_summary(&value)),
                Source::SveltosClusters | Source::CapiClusters => {
                    if cache.put_cluster(&value) && cache.is_synced(&[source]) {
                        triggers.everything();
                    }
                }
            }
        }
        Event::Delete(object) => {
            let value = to_value(&object, resource);
            match source {
                Source::Profiles => triggers.promotion(cache.delete_profile(&value)),
                Source::Summaries => triggers.promotion(cache.delete_summary(&value)),
                Source::SveltosClusters | Source::CapiClusters => {
                    if cache.delete_cluster(&value) {
                        triggers.everything();
                    }
                }
            }
        }
    }
}

/// Watch the CAPI Cluster CRD; start the Cluster watch once it is there.
fn spawn_capi_when_installed(client: Client, cache: Arc<Cache>, triggers: Triggers) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    tokio::spawn(async move {
        let config = watcher::Config::default().fields(&format!("metadata.name={}", CAPI_CLUSTERS));
        let mut stream = watcher::watcher(crds, config)
            .default_backoff()
            .applied_objects()
            .boxed();
        let mut started = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(crd) if !started && established(&crd) => {
                    started = true;
                    info!("CAPI Cluster CRD found: watching CAPI Clusters");
                    spawn(
                        &client,
                        CAPI_CLUSTER_V1BETA1.api_resource(),
                        Source::CapiClusters,
                        cache.clone(),
                        triggers.clone(),
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
