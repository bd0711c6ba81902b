//! The kinds the controller reads and writes, as dynamic API resources (Sveltos' CRDs have no
//! Rust types; the decision reads them as JSON).

use kube::api::ApiResource;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

pub fn promotions() -> ApiResource {
    resource(
        "config.projectsveltos.io",
        "v1beta1",
        "ClusterPromotion",
        "clusterpromotions",
    )
}

pub fn profiles() -> ApiResource {
    resource(
        "config.projectsveltos.io",
        "v1beta1",
        "ClusterProfile",
        "clusterprofiles",
    )
}

pub fn summaries() -> ApiResource {
    resource(
        "config.projectsveltos.io",
        "v1beta1",
        "ClusterSummary",
        "clustersummaries",
    )
}

pub fn sveltos_clusters() -> ApiResource {
    resource(
        "lib.projectsveltos.io",
        "v1beta1",
        "SveltosCluster",
        "sveltosclusters",
    )
}

pub fn capi_clusters() -> ApiResource {
    resource("cluster.x-k8s.io", "v1beta1", "Cluster", "clusters")
}

/// The CRD whose appearance starts the CAPI Cluster watch.
pub const CAPI_CLUSTER_CRD: &str = "clusters.cluster.x-k8s.io";
