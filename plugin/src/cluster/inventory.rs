//! The fleet as the management cluster holds it: every SveltosCluster and, when the Cluster API
//! CRD is served, every CAPI Cluster, read page by page straight into a plan inventory (the
//! pages are decoded into the few fields the plan needs, never into JSON trees).

use kube::api::ListParams;
use kube::core::Request as KubeRequest;
use serde_json::Value;

use promotion_shared::api_error::{classify, Failure};
use promotion_shared::fleet::{ClusterType, Inventory, CAPI_GROUP};

use crate::cluster::kube_client::Kube;
use crate::cluster::resources::{CAPI_CLUSTERS, SVELTOS_CLUSTER, SVELTOS_CLUSTERS};
use crate::error::{Error, Request, Result};

/// What kubectl asks for by default (`--chunk-size`): bounded pages keep a big fleet from
/// being one huge response for the API server to build.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// List the fleet in pages of `page_size` objects (0: one request per type). SveltosClusters
/// and CAPI Clusters are read concurrently.
pub async fn list_fleet(kube: &Kube, page_size: u32) -> Result<Inventory> {
    let sveltos = list_clusters(
        kube,
        SVELTOS_CLUSTER.path.to_string(),
        ClusterType::Sveltos,
        SVELTOS_CLUSTERS,
        page_size,
    );
    let capi = async {
        match capi_clusters_path(kube).await? {
            Some(path) => {
                list_clusters(kube, path, ClusterType::Capi, CAPI_CLUSTERS, page_size).await
            }
            None => Ok(Inventory::new()),
        }
    };
    let (sveltos, capi) = tokio::join!(sveltos, capi);
    let mut inventory = sveltos?;
    inventory.merge(capi?).map_err(|e| Error::Api {
        request: Request::new("list", CAPI_CLUSTERS),
        message: e.to_string(),
    })?;
    Ok(inventory)
}

/// Every page of one list, decoded as it arrives.
async fn list_clusters(
    kube: &Kube,
    path: String,
    cluster_type: ClusterType,
    resource: &'static str,
    page_size: u32,
) -> Result<Inventory> {
    let what = Request::new("list", resource);
    let source = format!("list {resource}");
    let mut inventory = Inventory::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default();
        if page_size > 0 {
            lp = lp.limit(page_size);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let req = KubeRequest::new(&path).list(&lp).map_err(|e| Error::Api {
            request: what.clone(),
            message: e.to_string(),
        })?;
        let page = kube.client().request_text(req).await.map_err(|e| match e {
            kube::Error::Api(s)
                if classify(&s) == Failure::NotFound && cluster_type == ClusterType::Sveltos =>
            {
                Error::Api {
                    request: what.clone(),
                    message: "the server does not serve it: is Sveltos installed on this \
                                  cluster? (or pass the inventory with --clusters FILE)"
                        .into(),
                }
            }
            other => kube.error(other, &what),
        })?;
        token = inventory
            .add_list_page(&source, cluster_type, &page)
            .map_err(|e| Error::Api {
                request: what.clone(),
                message: format!("the server's answer is not a list of clusters: {e}"),
            })?;
        if token.is_none() {
            return Ok(inventory);
        }
    }
}

/// `/apis/cluster.x-k8s.io/<preferred version>/clusters` when the Cluster API CRD is served;
/// `None` on a management cluster without Cluster API (Sveltos then matches SveltosClusters
/// only: libsveltos `isCAPIPresent`).
async fn capi_clusters_path(kube: &Kube) -> Result<Option<String>> {
    let what = Request::new("discover", CAPI_CLUSTERS);
    let group = format!("/apis/{CAPI_GROUP}");
    let req = http::Request::get(&group)
        .body(Vec::new())
        .map_err(|e| Error::Api {
            request: what.clone(),
            message: e.to_string(),
        })?;
    let doc: Value = match kube.client().request::<Value>(req).await {
        Ok(doc) => doc,
        Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => return Ok(None),
        Err(e) => return Err(kube.error(e, &what)),
    };
    let Some(version) = doc
        .pointer("/preferredVersion/version")
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let req = http::Request::get(format!("{group}/{version}"))
        .body(Vec::new())
        .map_err(|e| Error::Api {
            request: what.clone(),
            message: e.to_string(),
        })?;
    let resources: Value = match kube.client().request::<Value>(req).await {
        Ok(doc) => doc,
        Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => return Ok(None),
        Err(e) => return Err(kube.error(e, &what)),
    };
    let served = resources
        .get("resources")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|r| r["name"] == "clusters"));
    Ok(served.then(|| format!("{group}/{version}/clusters")))
}
