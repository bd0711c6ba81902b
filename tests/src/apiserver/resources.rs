//! The resource types the stand-in serves: a few core/v1 ones, events.k8s.io/v1 events, and the
//! four Sveltos custom resources, whose CRDs (vendored verbatim in `crates/crd-schema/crds/`) supply schema,
//! defaults, validation rules and printer columns.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crd_schema::CrdSchema;

/// Verbs the real server lists for a custom resource (`crdHandler` discovery).
pub const CRD_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];
pub const STATUS_VERBS: &[&str] = &["get", "patch", "update"];
/// Verbs the real server lists for a built-in type (namespaces aside).
const BUILTIN_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// How rows of `kubectl get` are built for a type.
#[derive(Clone, Debug)]
pub enum Printer {
    /// A CRD: `Name` plus `additionalPrinterColumns` (or `Age` when there are none).
    Crd(Vec<PrinterColumn>),
    Namespace,
    ConfigMap,
    Secret,
    Event,
}

#[derive(Clone, Debug)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

#[derive(Debug)]
pub struct ResourceDef {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub verbs: &'static [&'static str],
    pub status_subresource: bool,
    /// Objects of several served types can share one storage (core and events.k8s.io events).
    pub storage: &'static str,
    pub printer: Printer,
    pub schema: Option<Arc<CrdSchema>>,
    pub is_crd: bool,
    /// A review (`SelfSubjectAccessReview`): only created, answered at once, never stored.
    pub review: bool,
}

impl ResourceDef {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Patch content types the real server accepts for this type. Custom resources have no Go
    /// struct, so strategic merge patch is refused (`crdHandler`).
    pub fn patch_types(&self) -> &'static [&'static str] {
        if self.is_crd {
            &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
        } else {
            &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
            ]
        }
    }

    /// The path prefix of this type's collection (without namespace part).
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
}

pub const CLUSTER_PROMOTIONS: &str = "clusterpromotions";

const CRD_FILES: [(&str, &str); 4] = [
    (
        "config.projectsveltos.io_clusterpromotions.yaml",
        include_str!(
            "../../../crates/crd-schema/crds/config.projectsveltos.io_clusterpromotions.yaml"
        ),
    ),
    (
        "config.projectsveltos.io_clusterprofiles.yaml",
        include_str!(
            "../../../crates/crd-schema/crds/config.projectsveltos.io_clusterprofiles.yaml"
        ),
    ),
    (
        "config.projectsveltos.io_clustersummaries.yaml",
        include_str!(
            "../../../crates/crd-schema/crds/config.projectsveltos.io_clustersummaries.yaml"
        ),
    ),
    (
        "lib.projectsveltos.io_sveltosclusters.yaml",
        include_str!("../../../crates/crd-schema/crds/lib.projectsveltos.io_sveltosclusters.yaml"),
    ),
];

/// Parsed CRDs, once per process (they are ~9,000 lines of YAML).
fn crds() -> &'static Vec<(String, Value)> {
    static CRDS: OnceLock<Vec<(String, Value)>> = OnceLock::new();
    CRDS.get_or_init(|| {
        CRD_FILES
            .iter()
            .map(|(file, text)| {
                let value: Value = serde_saphyr::from_str(text).unwrap_or_else(|e| {
                    panic!("vendored CRD crates/crd-schema/crds/{file} does not parse: {e}")
                });
                (file.to_string(), value)
            })
            .collect()
    })
}

/// The vendored CRD for a plural name (for tools that want the raw definition).
pub fn crd_for(plural: &str) -> Option<&'static Value> {
    crds()
        .iter()
        .map(|(_, v)| v)
        .find(|crd| crd.pointer("/spec/names/plural").and_then(Value::as_str) == Some(plural))
}

/// The CustomResourceDefinition objects of the custom resources `registry` serves, as the
/// real server stores them once installed: the vendored CRD with an `Established` condition.
pub fn installed_crds(registry: &[Arc<ResourceDef>]) -> Vec<Value> {
    registry
        .iter()
        .filter(|d| d.is_crd)
        .filter_map(|d| crd_for(d.plural))
        .map(|crd| {
            let mut crd = crd.clone();
            crd["status"] = serde_json::json!({
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"},
                ],
                "acceptedNames": crd["spec"]["names"].clone(),
                "storedVersions": [crd.pointer("/spec/versions/0/name").cloned()
                    .unwrap_or(Value::Null)],
            });
            crd
        })
        .collect()
}

fn crd_resource(
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    group: &'static str,
    namespaced: bool,
) -> ResourceDef {
    let crd = crd_for(plural).unwrap_or_else(|| panic!("no vendored CRD for {plural}"));
    let version = crd
        .pointer("/spec/versions/0")
        .cloned()
        .unwrap_or(Value::Null);
    let columns = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .map(|c| PrinterColumn {
                    name: str_of(c, "name"),
                    type_: str_of(c, "type"),
                    format: str_of(c, "format"),
                    description: str_of(c, "description"),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    json_path: str_of(c, "jsonPath"),
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let schema = version
        .pointer("/schema/openAPIV3Schema")
        .cloned()
        .map(|s| Arc::new(CrdSchema::new(s)));
    ResourceDef {
        group,
        version: "v1beta1",
        plural,
        singular,
        kind,
        namespaced,
        short_names: &[],
        verbs: CRD_VERBS,
        status_subresource: version.pointer("/subresources/status").is_some(),
        storage: plural,
        printer: Printer::Crd(columns),
        schema,
        is_crd: true,
        review: false,
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn core(
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    printer: Printer,
) -> ResourceDef {
    ResourceDef {
        group: "",
        version: "v1",
        plural,
        singular,
        kind,
        namespaced,
        short_names,
        verbs: if plural == "namespaces" {
            &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]
        } else {
            BUILTIN_VERBS
        },
        status_subresource: plural == "namespaces",
        storage: plural,
        printer,
        schema: None,
        is_crd: false,
        review: false,
    }
}

/// `admissionregistration.k8s.io/v1` webhook configurations: stored and served for reading
/// (what the plugin reads to tell a user the failurePolicy in force); the admission the
/// stand-in runs comes from its `AdmissionConfig`.
fn admission_configuration(
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
) -> ResourceDef {
    ResourceDef {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural,
        singular,
        kind,
        namespaced: false,
        short_names: &[],
        verbs: BUILTIN_VERBS,
        status_subresource: false,
        storage: plural,
        printer: Printer::Crd(Vec::new()),
        schema: None,
        is_crd: false,
        review: false,
    }
}

/// Every type served, in discovery order. `with_promotion_crd: false` leaves the
/// ClusterPromotion CRD out, as on a Sveltos install without it.
pub fn registry(with_promotion_crd: bool) -> Vec<Arc<ResourceDef>> {
    let mut all = vec![
        core(
            "namespaces",
            "namespace",
            "Namespace",
            false,
            &["ns"],
            Printer::Namespace,
        ),
        core("events", "event", "Event", true, &["ev"], Printer::Event),
        core(
            "configmaps",
            "configmap",
            "ConfigMap",
            true,
            &["cm"],
            Printer::ConfigMap,
        ),
        core("secrets", "secret", "Secret", true, &[], Printer::Secret),
        ResourceDef {
            group: "events.k8s.io",
            version: "v1",
            plural: "events",
            singular: "event",
            kind: "Event",
            namespaced: true,
            short_names: &["ev"],
            verbs: BUILTIN_VERBS,
            status_subresource: false,
            storage: "events",
            printer: Printer::Event,
            schema: None,
            is_crd: false,
            review: false,
        },
        // promotion-controller's rollout history, which `history` reads.
        ResourceDef {
            group: "apps",
            version: "v1",
            plural: "controllerrevisions",
            singular: "controllerrevision",
            kind: "ControllerRevision",
            namespaced: true,
            short_names: &[],
            verbs: BUILTIN_VERBS,
            status_subresource: false,
            storage: "controllerrevisions",
            printer: Printer::Crd(Vec::new()),
            schema: None,
            is_crd: false,
            review: false,
        },
        // promotion-controller's leader election, which `describe` reads.
        ResourceDef {
            group: "coordination.k8s.io",
            version: "v1",
            plural: "leases",
            singular: "lease",
            kind: "Lease",
            namespaced: true,
            short_names: &[],
            verbs: BUILTIN_VERBS,
            status_subresource: false,
            storage: "leases",
            printer: Printer::Crd(Vec::new()),
            schema: None,
            is_crd: false,
            review: false,
        },
        ResourceDef {
            group: super::authorization::GROUP,
            version: "v1",
            plural: "selfsubjectaccessreviews",
            singular: "selfsubjectaccessreview",
            kind: "SelfSubjectAccessReview",
            namespaced: false,
            short_names: &[],
            verbs: &["create"],
            status_subresource: false,
            storage: "selfsubjectaccessreviews",
            // Never listed: a review is only ever created.
            printer: Printer::Crd(Vec::new()),
            schema: None,
            is_crd: false,
            review: true,
        },
        ResourceDef {
            group: super::auth::AUTHENTICATION_GROUP,
            version: "v1",
            plural: "selfsubjectreviews",
            singular: "selfsubjectreview",
            kind: "SelfSubjectReview",
            namespaced: false,
            short_names: &[],
            verbs: &["create"],
            status_subresource: false,
            storage: "selfsubjectreviews",
            // Never listed: a review is only ever created.
            printer: Printer::Crd(Vec::new()),
            schema: None,
            is_crd: false,
            review: true,
        },
        // The CRDs the stand-in serves are stored as objects too, Established (see
        // `installed_crds`): a client that waits for a CRD (the controller, for CAPI's Cluster)
        // reads what the real server would say.
        ResourceDef {
            group: "apiextensions.k8s.io",
            version: "v1",
            plural: "customresourcedefinitions",
            singular: "customresourcedefinition",
            kind: "CustomResourceDefinition",
            namespaced: false,
            short_names: &["crd", "crds"],
            verbs: BUILTIN_VERBS,
            status_subresource: true,
            storage: "customresourcedefinitions",
            printer: Printer::Crd(Vec::new()),
            schema: None,
            is_crd: false,
            review: false,
        },
        admission_configuration(
            "mutatingwebhookconfigurations",
            "mutatingwebhookconfiguration",
            "MutatingWebhookConfiguration",
        ),
        admission_configuration(
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            "ValidatingWebhookConfiguration",
        ),
    ];
    if with_promotion_crd {
        all.push(crd_resource(
            CLUSTER_PROMOTIONS,
            "clusterpromotion",
            "ClusterPromotion",
            "config.projectsveltos.io",
            false,
        ));
    }
    all.push(crd_resource(
        "clusterprofiles",
        "clusterprofile",
        "ClusterProfile",
        "config.projectsveltos.io",
        false,
    ));
    all.push(crd_resource(
        "clustersummaries",
        "clustersummary",
        "ClusterSummary",
        "config.projectsveltos.io",
        true,
    ));
    all.push(crd_resource(
        "sveltosclusters",
        "sveltoscluster",
        "SveltosCluster",
        "lib.projectsveltos.io",
        true,
    ));
    all.into_iter().map(Arc::new).collect()
}
