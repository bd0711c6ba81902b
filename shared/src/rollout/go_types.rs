//! The Go types Sveltos hashes, field by field in Go declaration order, with their `json` tags:
//! addon-controller v1.13.0 (`api/v1beta1/clusterpromotion_types.go`, `spec.go`), libsveltos
//! v1.13.0 (`api/v1beta1/common_types.go`) and the Kubernetes types they embed
//! (`docs/reference/promotion-controller.md` §7.5). `json.Marshal` writes an object's
//! members in exactly this order; [`super::marshal`] reads these tables.

/// A Go type as `encoding/json` sees it.
#[derive(Debug)]
pub enum Go {
    Str,
    /// Any Go integer type: written in decimal.
    Int,
    Bool,
    /// `metav1.Duration`: parsed with `time.ParseDuration`, written with `Duration.String`.
    Duration,
    /// `intstr.IntOrString`: a number stays a number, a string a string.
    IntOrString,
    /// `map[string]string`: keys written sorted bytewise.
    StrMap,
    List(&'static Go),
    Struct(&'static [Field]),
}

/// How a field's tag and Go type decide whether it is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// No `omitempty`: always written, as its zero value when absent (`""`, `0`, `false`,
    /// `null` for a nil slice or map, `{}` for a struct).
    Always,
    /// `omitempty` on a value type: left out when `false`, `0`, `""`, or a nil or empty slice or
    /// map. A struct-typed field is never left out (Go does not consider structs empty).
    OmitEmpty,
    /// `omitempty` on a pointer: written whenever it is set, even to a zero value.
    Pointer,
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub tag: Tag,
    pub ty: Go,
}

const fn always(name: &'static str, ty: Go) -> Field {
    Field {
        name,
        tag: Tag::Always,
        ty,
    }
}

const fn omit(name: &'static str, ty: Go) -> Field {
    Field {
        name,
        tag: Tag::OmitEmpty,
        ty,
    }
}

const fn ptr(name: &'static str, ty: Go) -> Field {
    Field {
        name,
        tag: Tag::Pointer,
        ty,
    }
}

use Go::{Bool, Duration, Int, IntOrString, List, Str, StrMap, Struct};

/// `corev1.ObjectReference`.
const OBJECT_REFERENCE: &[Field] = &[
    omit("kind", Str),
    omit("namespace", Str),
    omit("name", Str),
    omit("uid", Str),
    omit("apiVersion", Str),
    omit("resourceVersion", Str),
    omit("fieldPath", Str),
];

/// `corev1.SecretReference`.
const SECRET_REFERENCE: &[Field] = &[omit("name", Str), omit("namespace", Str)];

/// `metav1.LabelSelectorRequirement`.
const LABEL_SELECTOR_REQUIREMENT: &[Field] = &[
    always("key", Str),
    always("operator", Str),
    omit("values", List(&Str)),
];

/// libsveltos `Selector`, which inlines `metav1.LabelSelector`.
pub const SELECTOR: &[Field] = &[
    omit("matchLabels", StrMap),
    omit(
        "matchExpressions",
        List(&Struct(LABEL_SELECTOR_REQUIREMENT)),
    ),
];

/// addon-controller `StageHashable`: what `stagesHash` covers of a stage.
pub const STAGE_HASHABLE: &[Field] = &[
    always("name", Str),
    omit("clusterSelector", Struct(SELECTOR)),
];

const TEMPLATE_RESOURCE_REF: &[Field] = &[
    always("resource", Struct(OBJECT_REFERENCE)),
    always("identifier", Str),
    omit("optional", Bool),
    omit("ignoreStatusChanges", Bool),
    omit("watchFields", List(&Str)),
];

const REMOTE_URL: &[Field] = &[
    always("url", Str),
    ptr("interval", Duration),
    ptr("secretRef", Struct(SECRET_REFERENCE)),
    omit("template", Bool),
];

pub const POLICY_REF: &[Field] = &[
    omit("namespace", Str),
    omit("name", Str),
    omit("kind", Str),
    omit("path", Str),
    omit("deploymentType", Str),
    omit("optional", Bool),
    omit("tier", Int),
    omit("skipNamespaceCreation", Bool),
    omit("force", Bool),
    ptr("remoteURL", Struct(REMOTE_URL)),
];

const VALUE_FROM: &[Field] = &[
    omit("namespace", Str),
    always("name", Str),
    always("kind", Str),
    omit("optional", Bool),
];

const HELM_INSTALL_OPTIONS: &[Field] = &[
    ptr("createNamespace", Bool),
    ptr("replace", Bool),
    omit("disableHooks", Bool),
    omit("takeOwnership", Bool),
];

const HELM_UPGRADE_OPTIONS: &[Field] = &[
    omit("force", Bool),
    omit("resetValues", Bool),
    omit("reuseValues", Bool),
    omit("resetThenReuseValues", Bool),
    omit("recreate", Bool),
    omit("maxHistory", Int),
    omit("cleanupOnFail", Bool),
    omit("subNotes", Bool),
    omit("upgradeCRDs", Bool),
    omit("disableHooks", Bool),
    omit("takeOwnership", Bool),
];

const HELM_UNINSTALL_OPTIONS: &[Field] = &[
    omit("keepHistory", Bool),
    omit("deletionPropagation", Str),
    omit("disableHooks", Bool),
];

const HELM_OPTIONS: &[Field] = &[
    omit("skipCRDs", Bool),
    omit("skipSchemaValidation", Bool),
    omit("wait", Bool),
    omit("waitForJobs", Bool),
    ptr("timeout", Duration),
    omit("disableHooks", Bool),
    omit("disableOpenAPIValidation", Bool),
    omit("atomic", Bool),
    omit("dependencyUpdate", Bool),
    omit("labels", StrMap),
    omit("enableClientCache", Bool),
    omit("description", Str),
    omit("passCredentialsAll", Bool),
    omit("runTests", Bool),
    omit("postRenderStrategy", Str),
    omit("installOptions", Struct(HELM_INSTALL_OPTIONS)),
    omit("upgradeOptions", Struct(HELM_UPGRADE_OPTIONS)),
    omit("uninstallOptions", Struct(HELM_UNINSTALL_OPTIONS)),
];

const REGISTRY_CREDENTIALS_CONFIG: &[Field] = &[
    ptr("credentials", Struct(SECRET_REFERENCE)),
    omit("key", Str),
    ptr("ca", Struct(SECRET_REFERENCE)),
    omit("insecureSkipTLSVerify", Bool),
    omit("plainHTTP", Bool),
];

const OIDC_IDENTITY_MATCHER: &[Field] = &[always("issuer", Str), always("subject", Str)];

const COSIGN_VERIFICATION: &[Field] = &[
    always("provider", Str),
    ptr("secretRef", Struct(SECRET_REFERENCE)),
    omit("matchOIDCIdentity", List(&Struct(OIDC_IDENTITY_MATCHER))),
];

const PROVENANCE_VERIFICATION: &[Field] = &[always("keyringSecretRef", Struct(SECRET_REFERENCE))];

const HELM_CHART: &[Field] = &[
    always("repositoryURL", Str),
    omit("repositoryName", Str),
    omit("chartName", Str),
    omit("chartVersion", Str),
    always("releaseName", Str),
    always("releaseNamespace", Str),
    omit("values", Str),
    omit("valuesFrom", List(&Struct(VALUE_FROM))),
    omit("helmChartAction", Str),
    ptr("options", Struct(HELM_OPTIONS)),
    ptr(
        "registryCredentialsConfig",
        Struct(REGISTRY_CREDENTIALS_CONFIG),
    ),
    ptr("signatureVerification", Struct(COSIGN_VERIFICATION)),
    ptr("provenanceVerification", Struct(PROVENANCE_VERIFICATION)),
];

const REMOTE_KUSTOMIZE_URL: &[Field] = &[
    always("url", Str),
    ptr("interval", Duration),
    ptr("secretRef", Struct(SECRET_REFERENCE)),
];

const KUSTOMIZATION_REF: &[Field] = &[
    omit("namespace", Str),
    omit("name", Str),
    omit("kind", Str),
    omit("path", Str),
    omit("components", List(&Str)),
    omit("optional", Bool),
    omit("targetNamespace", Str),
    omit("deploymentType", Str),
    omit("values", StrMap),
    omit("valuesFrom", List(&Struct(VALUE_FROM))),
    omit("tier", Int),
    omit("skipNamespaceCreation", Bool),
    omit("force", Bool),
    ptr("remoteURL", Struct(REMOTE_KUSTOMIZE_URL)),
];

const LABEL_FILTER: &[Field] = &[
    always("key", Str),
    always("operation", Str),
    omit("value", Str),
];

const METRIC_SOURCE: &[Field] = &[
    always("url", Str),
    omit("path", Str),
    ptr("secretRef", Struct(SECRET_REFERENCE)),
];

const METRIC_QUERY: &[Field] = &[always("name", Str), always("query", Str)];

const CEL_RULE: &[Field] = &[always("name", Str), always("rule", Str)];

/// libsveltos v1.13.0 `ValidateHealth`. `jobCheck` came later: Sveltos v1.13.0 drops it when
/// decoding, so it is not hashed (see [`super::Identity::unhashed`]).
pub const VALIDATE_HEALTH: &[Field] = &[
    always("name", Str),
    always("featureID", Str),
    omit("group", Str),
    omit("version", Str),
    omit("kind", Str),
    omit("labelFilters", List(&Struct(LABEL_FILTER))),
    omit("namespace", Str),
    ptr("metricSource", Struct(METRIC_SOURCE)),
    omit("metricQueries", List(&Struct(METRIC_QUERY))),
    omit("script", Str),
    omit("evaluateCEL", List(&Struct(CEL_RULE))),
];

const PATCH_SELECTOR: &[Field] = &[
    omit("version", Str),
    omit("group", Str),
    omit("kind", Str),
    omit("namespace", Str),
    omit("name", Str),
    omit("annotationSelector", Str),
    omit("labelSelector", Str),
];

const PATCH: &[Field] = &[always("patch", Str), ptr("target", Struct(PATCH_SELECTOR))];

const DRIFT_EXCLUSION: &[Field] = &[
    always("paths", List(&Str)),
    ptr("target", Struct(PATCH_SELECTOR)),
];

/// addon-controller v1.13.0 `ProfileSpec` (the ClusterPromotion's `spec.profileSpec`).
pub const PROFILE_SPEC: &[Field] = &[
    omit("syncMode", Str),
    omit("tier", Int),
    omit("continueOnConflict", Bool),
    omit("continueOnError", Bool),
    ptr("maxUpdate", IntOrString),
    omit("stopMatchingBehavior", Str),
    omit("reloader", Bool),
    omit("templateResourceRefs", List(&Struct(TEMPLATE_RESOURCE_REF))),
    omit("dependsOn", List(&Str)),
    omit("policyRefs", List(&Struct(POLICY_REF))),
    omit("helmCharts", List(&Struct(HELM_CHART))),
    omit("kustomizationRefs", List(&Struct(KUSTOMIZATION_REF))),
    omit("preDeployChecks", List(&Struct(VALIDATE_HEALTH))),
    omit("validateHealths", List(&Struct(VALIDATE_HEALTH))),
    omit("patches", List(&Struct(PATCH))),
    omit("patchesFrom", List(&Struct(VALUE_FROM))),
    omit("driftExclusions", List(&Struct(DRIFT_EXCLUSION))),
    ptr("maxConsecutiveFailures", Int),
    omit("preDeleteChecks", List(&Struct(VALIDATE_HEALTH))),
    omit("postDeleteChecks", List(&Struct(VALIDATE_HEALTH))),
];
