//! The one table of the API resources the plugin and promotion-controller read, watch and
//! write: group, version, kind and plural are written here and nowhere else. Every other form
//! (the `ApiResource` of a watcher or a dynamic `Api`, a collection's or an object's URL path,
//! the `plural.group` name that error messages use, as kubectl does; the model's `GROUP`,
//! `KIND`, …, the fleet's groups, the generated profiles' `apiVersion`) is derived from an entry.
//! The end-to-end tests' stand-in API server keeps a table of its own: it plays the server, whose
//! resources must not be defined by the client they are checked against.
//! Data only: the binaries do the I/O.

use kube_core::discovery::ApiResource;

/// One API resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource {
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    /// `group/version` (`version` alone for the core group).
    pub api_version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    /// How kubectl names the resource in messages: `plural.group` (`plural` for core).
    pub name: &'static str,
    /// The collection across all namespaces (or of a cluster-scoped resource).
    pub path: &'static str,
    /// Where the group-version's paths start: `/apis/group/version` (`/api/version` for core).
    pub prefix: &'static str,
}

/// A resource of a named group; `concat!` keeps every derived string a `&'static str`, so
/// that an error naming a request can hold it without allocating.
macro_rules! grouped {
    ($group:literal, $version:literal, $kind:literal, $plural:literal) => {
        Resource {
            group: $group,
            version: $version,
            api_version: concat!($group, "/", $version),
            kind: $kind,
            plural: $plural,
            name: concat!($plural, ".", $group),
            path: concat!("/apis/", $group, "/", $version, "/", $plural),
            prefix: concat!("/apis/", $group, "/", $version),
        }
    };
}

/// A resource of Sveltos' configuration group, `config.projectsveltos.io/v1beta1`.
macro_rules! sveltos_config {
    ($kind:literal, $plural:literal) => {
        grouped!("config.projectsveltos.io", "v1beta1", $kind, $plural)
    };
}

/// A resource of the core (legacy, unnamed) group.
macro_rules! core {
    ($version:literal, $kind:literal, $plural:literal) => {
        Resource {
            group: "",
            version: $version,
            api_version: $version,
            kind: $kind,
            plural: $plural,
            name: $plural,
            path: concat!("/api/", $version, "/", $plural),
            prefix: concat!("/api/", $version),
        }
    };
}

pub const PROMOTION: Resource = sveltos_config!("ClusterPromotion", "clusterpromotions");
pub const PROFILE: Resource = sveltos_config!("ClusterProfile", "clusterprofiles");
pub const SUMMARY: Resource = sveltos_config!("ClusterSummary", "clustersummaries");
pub const SVELTOS_CLUSTER: Resource = grouped!(
    "lib.projectsveltos.io",
    "v1beta1",
    "SveltosCluster",
    "sveltosclusters"
);
/// Where Events about a ClusterPromotion are: Kubernetes' recorders (client-go's, which Sveltos'
/// addon-controller uses, and promotion-controller's) put the Events of a cluster-scoped object
/// in `default`, whichever namespace the recorder runs in. Reading this one namespace lets a
/// viewer need Event reads in it alone (docs/roles.md), not across the cluster.
pub const EVENTS_NAMESPACE: &str = "default";
pub const EVENT: Resource = grouped!("events.k8s.io", "v1", "Event", "events");
pub const CORE_EVENT: Resource = core!("v1", "Event", "events");
pub const SECRET: Resource = core!("v1", "Secret", "secrets");
pub const CONFIG_MAP: Resource = core!("v1", "ConfigMap", "configmaps");
pub const LEASE: Resource = grouped!("coordination.k8s.io", "v1", "Lease", "leases");
pub const CONTROLLER_REVISION: Resource =
    grouped!("apps", "v1", "ControllerRevision", "controllerrevisions");
pub const SELF_SUBJECT_REVIEW: Resource = grouped!(
    "authentication.k8s.io",
    "v1",
    "SelfSubjectReview",
    "selfsubjectreviews"
);

/// The Cluster API's Cluster: the plugin reads the version the server prefers (discovered), so
/// only its name is fixed there; promotion-controller watches `v1beta1`, as Sveltos v1.13.0 reads
/// it.
pub const CAPI_CLUSTERS: &str = "clusters.cluster.x-k8s.io";
pub const CAPI_CLUSTER_V1BETA1: Resource =
    grouped!("cluster.x-k8s.io", "v1beta1", "Cluster", "clusters");

/// The names error messages use, as constants (a `match` on a request's
/// resource needs them so).
pub const PROMOTIONS: &str = PROMOTION.name;
pub const PROFILES: &str = PROFILE.name;
pub const SUMMARIES: &str = SUMMARY.name;
pub const SVELTOS_CLUSTERS: &str = SVELTOS_CLUSTER.name;
pub const EVENTS: &str = EVENT.name;
pub const CORE_EVENTS: &str = CORE_EVENT.name;
pub const SECRETS: &str = SECRET.name;
pub const CONFIG_MAPS: &str = CONFIG_MAP.name;
pub const SELF_SUBJECT_REVIEWS: &str = SELF_SUBJECT_REVIEW.name;
pub const LEASES: &str = LEASE.name;
pub const CONTROLLER_REVISIONS: &str = CONTROLLER_REVISION.name;

impl Resource {
    /// What kube-runtime's watcher and `Api<DynamicObject>` take.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.into(),
            version: self.version.into(),
            api_version: self.api_version.into(),
            kind: self.kind.into(),
            plural: self.plural.into(),
        }
    }

    /// One object of a cluster-scoped resource.
    pub fn object_path(&self, name: &str) -> String {
        format!("{}/{name}", self.path)
    }

    /// One object of a namespaced resource.
    pub fn namespaced_object_path(&self, namespace: &str, name: &str) -> String {
        format!(
            "{}/namespaces/{namespace}/{}/{name}",
            self.prefix, self.plural
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_and_paths() {
        assert_eq!(PROFILES, "clusterprofiles.config.projectsveltos.io");
        assert_eq!(
            SUMMARY.path,
            "/apis/config.projectsveltos.io/v1beta1/clustersummaries"
        );
        assert_eq!(
            PROFILE.object_path("p"),
            "/apis/config.projectsveltos.io/v1beta1/clusterprofiles/p"
        );
        assert_eq!(
            SVELTOS_CLUSTER.namespaced_object_path("ns", "c"),
            "/apis/lib.projectsveltos.io/v1beta1/namespaces/ns/sveltosclusters/c"
        );
        assert_eq!(CORE_EVENT.path, "/api/v1/events");
        assert_eq!(CORE_EVENTS, "events");
        assert_eq!(EVENTS, "events.events.k8s.io");
        assert_eq!(
            SECRET.namespaced_object_path("ns", "s"),
            "/api/v1/namespaces/ns/secrets/s"
        );
        assert_eq!(CAPI_CLUSTER_V1BETA1.name, CAPI_CLUSTERS);
        let ar = SUMMARY.api_resource();
        assert_eq!(
            (ar.api_version.as_str(), ar.kind.as_str()),
            ("config.projectsveltos.io/v1beta1", "ClusterSummary")
        );
    }
}
