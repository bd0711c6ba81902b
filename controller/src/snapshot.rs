//! The inputs of one reconcile ([`Snapshot`]): from manifests (what `kubectl get -o yaml`
//! prints), or read from the cluster.

use std::path::Path;

use kube::api::{Api, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;

use promotion_shared::fleet::{ClusterType, Inventory};
use promotion_shared::history::{Revision, PROMOTION_UID_LABEL};
use promotion_shared::model::{
    is_cluster_promotion, stage_profile_names, CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL,
};
use promotion_shared::reconcile::Snapshot;

use crate::error::{Error, Result};
use promotion_shared::api_resources::{
    CAPI_CLUSTER_V1BETA1, PROFILE, PROMOTION, SUMMARY, SVELTOS_CLUSTER,
};

/// A snapshot from the objects of a manifest: the one ClusterPromotion (or the one named
/// `promotion`), every ClusterProfile and ClusterSummary, and the clusters. Clusters are the
/// fleet when at least one is there; otherwise the fleet is unknown.
pub fn from_objects(
    source: &str,
    objects: Vec<Value>,
    promotion: Option<&str>,
) -> Result<Snapshot> {
    let mut promotions = Vec::new();
    let mut profiles = Vec::new();
    let mut summaries = Vec::new();
    let mut clusters = Vec::new();
    let mut revisions = Vec::new();
    for object in objects {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        match kind {
            _ if is_cluster_promotion(&object) => promotions.push(object),
            "ClusterProfile" => profiles.push(object),
            "ClusterSummary" => summaries.push(object),
            "SveltosCluster" | "Cluster" => clusters.push(object),
            "ControllerRevision" => revisions.push(object),
            _ => {}
        }
    }
    let name_of = |p: &Value| {
        p.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let chosen = match promotion {
        Some(name) => promotions
            .into_iter()
            .find(|p| name_of(p) == name)
            .ok_or_else(|| Error::Input(format!("{source}: no ClusterPromotion named {name:?}")))?,
        None => match promotions.len() {
            0 => {
                return Err(Error::Input(format!(
                    "{source}: no ClusterPromotion (apiVersion config.projectsveltos.io/v1beta1)"
                )))
            }
            1 => promotions.remove(0),
            n => {
                let names: Vec<String> = promotions.iter().map(name_of).collect();
                return Err(Error::Input(format!(
                    "{source}: {n} ClusterPromotions ({}); choose one with --promotion",
                    names.join(", ")
                )));
            }
        },
    };
    let fleet = if clusters.is_empty() {
        None
    } else {
        let mut inventory = Inventory::new();
        inventory
            .add_documents(source, &clusters)
            .map_err(|e| Error::Input(e.to_string()))?;
        Some(inventory.into_clusters().into())
    };
    // The chosen promotion's revisions: those labelled with its UID.
    let uid = chosen.pointer("/metadata/uid").and_then(Value::as_str);
    let revisions = revisions
        .iter()
        .filter(|r| {
            uid.is_some()
                && r.pointer("/metadata/labels")
                    .and_then(|l| l.get(PROMOTION_UID_LABEL))
                    .and_then(Value::as_str)
                    == uid
        })
        .filter_map(Revision::decode)
        .collect();
    Ok(Snapshot {
        promotion: chosen,
        profiles,
        summaries,
        fleet,
        revisions,
    })
}

/// Read a snapshot (`-` is standard input; a directory gives its manifests) through the one
/// manifest reader every `-f` uses: documents, and the items of `List`s.
pub fn read(path: &Path, promotion: Option<&str>) -> Result<Snapshot> {
    let manifests = promotion_manifest::Reader::new()
        .manifests(&[path.to_path_buf()], false)
        .map_err(|e| Error::Input(e.to_string()))?;
    let mut objects = Vec::new();
    for manifest in &manifests {
        for entry in manifest.entries() {
            entry.object().map_err(|e| Error::Input(e.to_string()))?;
            objects.push(entry.value.clone());
        }
    }
    let source = match manifests.as_slice() {
        [one] => one.source.clone(),
        _ => path.display().to_string(),
    };
    from_objects(&source, objects, promotion)
}

/// A client as kubectl would connect: `--kubeconfig`, else `$KUBECONFIG` and `~/.kube/config`,
/// else the in-cluster service account; `--context` picks a context. Proxies as client-go
/// decides them (the cluster's `proxy-url`, else `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, never for
/// loopback): [`kube_connect`], the rule the plugin uses too.
/// A client for the kubeconfig's (or the in-cluster) server, sending the User-Agent
/// `promotion-controller/<version>`, followed by ` (<replica>)` when given: kube-rs sends none of
/// its own, and the API server's audit log tells writers apart by it (as client-go's
/// `<binary>/<version> (<os>/<arch>)`).
pub async fn client(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    replica: Option<&str>,
) -> Result<Client> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let connecting = |e: &dyn std::fmt::Display| Error::Cluster(format!("connecting: {e}"));
    let file = match kubeconfig {
        Some(path) => {
            // The file's own problem first, in kubectl's words, as the plugin says it (kube's
            // error quotes the path twice, the second time as Rust's Debug form).
            let read =
                |why: String| Error::Cluster(format!("--kubeconfig {}: {why}", path.display()));
            std::fs::File::open(path).map_err(|e| read(promotion_manifest::io_reason(&e)))?;
            Some(Kubeconfig::read_from(path).map_err(|e| read(kube_connect::error_chain(&e)))?)
        }
        None => match Kubeconfig::read() {
            Ok(file) => Some(file),
            // No kubeconfig at all: in-cluster, unless a context was asked for.
            Err(_) if context.is_none() => None,
            Err(e) => return Err(Error::Cluster(format!("reading the kubeconfig: {e}"))),
        },
    };
    let mut config = match file {
        Some(file) => kube_connect::from_kubeconfig(file, &options).map_err(|e| connecting(&e))?,
        None => Config::incluster().map_err(|e| connecting(&e))?,
    };
    config
        .headers
        .push((http::header::USER_AGENT, user_agent(replica)));
    Client::try_from(config).map_err(|e| Error::Cluster(format!("connecting: {e}")))
}

fn user_agent(replica: Option<&str>) -> http::HeaderValue {
    let plain = concat!("promotion-controller/", env!("CARGO_PKG_VERSION"));
    replica
        .and_then(|r| http::HeaderValue::from_str(&format!("{plain} ({r})")).ok())
        .unwrap_or(http::HeaderValue::from_static(plain))
}

/// The snapshot of promotion `name` as the cluster holds it now; its rollout history is read
/// from `history_namespace` while a rollback is requested.
pub async fn live(client: &Client, name: &str, history_namespace: &str) -> Result<Snapshot> {
    let read = |what: &str, e: kube::Error| Error::Cluster(format!("reading {what}: {e}"));
    let promotions: Api<DynamicObject> = Api::all_with(client.clone(), &PROMOTION.api_resource());
    let promotion = promotions
        .get(name)
        .await
        .map_err(|e| read(&format!("clusterpromotion {name}"), e))?;
    let promotion = serde_json::to_value(&promotion).map_err(|e| Error::Cluster(e.to_string()))?;
    let profiles_api: Api<DynamicObject> = Api::all_with(client.clone(), &PROFILE.api_resource());
    let profiles = profiles_api
        .list(&ListParams::default().labels(&format!("{PROMOTION_NAME_LABEL}={name}")))
        .await
        .map_err(|e| read("clusterprofiles", e))?;
    let profiles: Vec<Value> = profiles
        .items
        .iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .collect();
    // Each stage's profile name, whether or not the profile exists yet.
    let stage_names = stage_profile_names(&promotion, name);
    let summaries_api: Api<DynamicObject> = Api::all_with(client.clone(), &SUMMARY.api_resource());
    let summaries = if stage_names.is_empty() {
        Vec::new()
    } else {
        let selector = format!(
            "{CLUSTER_PROFILE_NAME_LABEL} in ({})",
            stage_names.join(",")
        );
        summaries_api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| read("clustersummaries", e))?
            .items
            .iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect()
    };
    let mut inventory = Inventory::new();
    for (cluster_type, resource) in [
        (ClusterType::Sveltos, SVELTOS_CLUSTER.api_resource()),
        (ClusterType::Capi, CAPI_CLUSTER_V1BETA1.api_resource()),
    ] {
        let plural = resource.plural.as_str();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        match api.list(&ListParams::default()).await {
            Ok(list) => {
                let docs: Vec<Value> = list
                    .items
                    .iter()
                    .filter_map(|c| serde_json::to_value(c).ok())
                    .map(|mut c| {
                        c["apiVersion"] = resource.api_version.clone().into();
                        c["kind"] = cluster_type.kind().into();
                        c
                    })
                    .collect();
                inventory
                    .add_documents(plural, &docs)
                    .map_err(|e| Error::Cluster(e.to_string()))?;
            }
            // CAPI is optional: without its CRD there are no CAPI clusters.
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(read(plural, e)),
        }
    }
    let revisions = match promotion_shared::on_failure::history_needed(&promotion) {
        Some(uid) => revisions_of(&Api::namespaced(client.clone(), history_namespace), uid)
            .await
            .map_err(|e| read("controllerrevisions", e))?,
        None => Vec::new(),
    };
    Ok(Snapshot {
        promotion,
        profiles,
        summaries,
        fleet: Some(inventory.into_clusters().into()),
        revisions,
    })
}

/// The revisions, in `api`'s namespace, of the promotion with UID `uid`.
pub async fn revisions_of(
    api: &Api<k8s_openapi::api::apps::v1::ControllerRevision>,
    uid: &str,
) -> std::result::Result<Vec<Revision>, kube::Error> {
    let listed = api
        .list(&ListParams::default().labels(&format!("{PROMOTION_UID_LABEL}={uid}")))
        .await?;
    Ok(listed
        .items
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .filter_map(|r| Revision::decode(&r))
        .collect())
}
