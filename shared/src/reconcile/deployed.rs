//! "Is the stage deployed?": addon-controller v1.13.0 `checkCurrentStageDeployment`
//! (`docs/reference/promotion-controller.md` §10), with three defects fixed:
//! - D4: a cluster the stage matches whose ClusterSummary Sveltos has not created yet is not
//!   deployed (upstream counts only the ClusterSummaries that exist, so a profile applied a
//!   moment ago passes at once);
//! - D13: "no matching clusters" is believed only when something says so — the fleet read from
//!   the cluster, or the profile's own `status.matchingClusters` — never merely because no
//!   ClusterSummary exists yet;
//! - D15: a profile name that cannot be a label value (ClusterSummaries are labelled with it)
//!   never deploys, and says why, where upstream sees zero ClusterSummaries and passes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fleet::Cluster;
use crate::model::Stage;
use crate::model::CLUSTER_PROFILE_NAME_LABEL;
use crate::selector::Selector;

/// What the check found: deployed (with upstream's message), or not (with the reason that goes
/// into the stage's `failureMessage`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deployment {
    Deployed(String),
    NotDeployed(String),
}

/// The ClusterSummaries Sveltos created for `profile_name`.
pub fn summaries_of<'a>(profile_name: &str, summaries: &'a [Value]) -> Vec<&'a Value> {
    let mut found: Vec<&Value> = summaries
        .iter()
        .filter(|s| {
            s.pointer("/metadata/labels")
                .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
                .and_then(Value::as_str)
                == Some(profile_name)
        })
        .collect();
    // The cache's order is not defined upstream; a fixed order makes the message stable.
    found.sort_by_key(|s| {
        (
            s.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            s.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
        )
    });
    found
}

/// The parts of a ClusterSummary this check reads, and nothing else: what a controller's cache
/// keeps ([`Kept`], as JSON). Each ClusterSummary carries a whole profile spec, Helm values
/// included, which the check only compares with the profile's: those lists are kept as digests
/// ([`list_digest`]). [`check`] gives the same answer on the result as on the whole object.
pub fn retained(summary: &Value) -> Value {
    // A struct of strings serializes.
    serde_json::to_value(Kept::of(summary)).unwrap_or(Value::Null)
}

/// A ClusterSummary as a cache keeps it: typed, so that tens of thousands of them hold strings
/// rather than JSON maps. Serialized, it is what [`check`] reads ([`retained`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// Name, namespace, the profile label, and the resourceVersion (a watch resumes from the
    /// last one it saw, bookmarks included; the check reads none of it but the label).
    pub metadata: ObjectMeta,
    pub spec: KeptSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<KeptStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_namespace: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_type: Option<Value>,
    /// [`list_digest`] of each of [`SYNCED_LISTS`], under [`SPEC_DIGESTS`].
    #[serde(rename = "clusterProfileSpecDigests")]
    pub digests: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptStatus {
    pub feature_summaries: Vec<KeptFeature>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KeptFeature {
    #[serde(rename = "featureID", default, skip_serializing_if = "Option::is_none")]
    pub feature_id: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

impl Kept {
    /// What a cache keeps of `summary` (the whole object, as the API server sends it).
    pub fn of(summary: &Value) -> Kept {
        let text = |key: &str| {
            summary
                .pointer(&format!("/metadata/{key}"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let labels = summary
            .pointer("/metadata/labels")
            .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
            .and_then(Value::as_str)
            .map(|p| BTreeMap::from([(CLUSTER_PROFILE_NAME_LABEL.to_string(), p.to_string())]));
        let spec_field = |key: &str| summary.pointer(&format!("/spec/{key}")).cloned();
        // The lists compared with the profile's, as digests: a ClusterSummary's copies of the
        // Helm charts (values included), references and health checks are most of its size, and
        // the check only asks whether they equal the profile's.
        let digests = SYNCED_LISTS
            .iter()
            .map(|key| {
                let list = summary.pointer(&format!("/spec/clusterProfileSpec/{key}"));
                ((*key).to_string(), list_digest(as_list(list)))
            })
            .collect();
        let status = summary
            .pointer("/status/featureSummaries")
            .and_then(Value::as_array)
            .map(|features| KeptStatus {
                feature_summaries: features
                    .iter()
                    .map(|f| KeptFeature {
                        feature_id: f.get("featureID").cloned(),
                        status: f.get("status").cloned(),
                    })
                    .collect(),
            });
        Kept {
            metadata: ObjectMeta {
                name: text("name"),
                namespace: text("namespace"),
                labels,
                resource_version: text("resourceVersion"),
                ..ObjectMeta::default()
            },
            spec: KeptSpec {
                cluster_namespace: spec_field("clusterNamespace"),
                cluster_name: spec_field("clusterName"),
                cluster_type: spec_field("clusterType"),
                digests,
            },
            status,
        }
    }
}

/// How the ClusterSummaries of a stage fail, if any does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failing {
    /// A feature is `Failed`: Sveltos retries it.
    Retrying,
    /// A feature is `FailedNonRetriable`: nothing changes until the spec does.
    ForGood,
}

/// The worst failure among `summaries`' features (whole objects or [`retained`] ones).
pub fn failing(summaries: &[&Value]) -> Option<Failing> {
    let statuses = summaries.iter().flat_map(|s| {
        s.pointer("/status/featureSummaries")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("status").and_then(Value::as_str))
    });
    let mut worst = None;
    for status in statuses {
        match status {
            "FailedNonRetriable" => return Some(Failing::ForGood),
            "Failed" => worst = Some(Failing::Retrying),
            _ => {}
        }
    }
    worst
}

/// A ClusterProfile name is copied into the label `projectsveltos.io/cluster-profile-name` of
/// its ClusterSummaries: it must be a valid label value (at most 63 characters).
pub fn label_value_problem(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some(format!(
            "ClusterProfile {name} is {} characters long: Sveltos copies it into the label \
             {CLUSTER_PROFILE_NAME_LABEL} of its ClusterSummaries, whose values are limited to 63 \
             characters, so no ClusterSummary can be created and the stage can never deploy",
            name.len()
        ));
    }
    None
}

/// The check. `checks` also requires the ClusterSummaries to carry the profile's
/// `validateHealths` (so that post-delay checks that were just added are the ones that passed).
pub fn check(
    profile_name: &str,
    stage: &Stage,
    profile: Option<&Value>,
    summaries: &[Value],
    fleet: Option<&[Cluster]>,
    checks: bool,
) -> Deployment {
    if let Some(problem) = label_value_problem(profile_name) {
        return Deployment::NotDeployed(problem);
    }
    let Some(profile) = profile else {
        return Deployment::NotDeployed(format!(
            "ClusterProfile {profile_name} does not exist yet."
        ));
    };
    let found = summaries_of(profile_name, summaries);
    let wanted = Wanted::of(profile);
    for summary in &found {
        if let Some(reason) = out_of_sync(summary, &wanted, checks) {
            return Deployment::NotDeployed(reason);
        }
        if !provisioned(summary) {
            return Deployment::NotDeployed(format!(
                "ClusterSummary {} is not yet provisioned.",
                name_of(summary)
            ));
        }
    }
    let expected = expected_clusters(stage, profile, fleet);
    let Some(expected) = expected else {
        return Deployment::NotDeployed(format!(
            "Sveltos has not matched clusters to ClusterProfile {profile_name} yet."
        ));
    };
    for (kind, namespace, name) in &expected {
        let has = found.iter().any(|s| {
            s.pointer("/spec/clusterNamespace").and_then(Value::as_str) == Some(namespace)
                && s.pointer("/spec/clusterName").and_then(Value::as_str) == Some(name)
                && cluster_type_kind(s) == Some(*kind)
        });
        if !has {
            return Deployment::NotDeployed(format!(
                "ClusterSummary for {kind} {namespace}/{name} is not created yet."
            ));
        }
    }
    if found.is_empty() {
        return Deployment::Deployed(format!(
            "No matching clusters found for ClusterProfile {profile_name}. Deployment considered \
             complete."
        ));
    }
    Deployment::Deployed("All matching clusters are successfully deployed.".into())
}

fn name_of(summary: &Value) -> &str {
    summary
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn cluster_type_kind(summary: &Value) -> Option<&'static str> {
    match summary
        .pointer("/spec/clusterType")
        .and_then(Value::as_str)?
    {
        "Capi" => Some("Cluster"),
        "Sveltos" => Some("SveltosCluster"),
        _ => None,
    }
}

/// Which clusters must have a deployed ClusterSummary: the ones the fleet says the stage matches
/// (ready and not paused: Sveltos deploys nothing to the others), and the ones the profile's
/// status says Sveltos matched. `None` when neither is known.
fn expected_clusters(
    stage: &Stage,
    profile: &Value,
    fleet: Option<&[Cluster]>,
) -> Option<Vec<(&'static str, String, String)>> {
    let matched = profile
        .pointer("/status/matchingClusters")
        .and_then(Value::as_array);
    if fleet.is_none() && matched.is_none() {
        return None;
    }
    let mut out: Vec<(&'static str, String, String)> = Vec::new();
    if let Some(fleet) = fleet {
        if let Ok(selector) = Selector::compile(stage.cluster_selector.as_ref()) {
            // An empty selector matches nothing in Sveltos (libsveltos `getMatchingClusters`).
            if !selector.requirements().is_empty() {
                for c in fleet.iter().filter(|c| c.ready && !c.paused) {
                    if selector.matches(&c.labels) {
                        out.push((c.cluster_type.kind(), c.namespace.clone(), c.name.clone()));
                    }
                }
            }
        }
    }
    for r in matched.into_iter().flatten() {
        let kind = match r.get("kind").and_then(Value::as_str) {
            Some("SveltosCluster") => "SveltosCluster",
            Some("Cluster") => "Cluster",
            _ => continue,
        };
        let namespace = r
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = r
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let paused_or_not_ready = fleet.is_some_and(|f| {
            f.iter().any(|c| {
                c.cluster_type.kind() == kind
                    && c.namespace == namespace
                    && c.name == name
                    && (c.paused || !c.ready)
            })
        });
        let entry = (kind, namespace, name);
        if !paused_or_not_ready && !out.contains(&entry) {
            out.push(entry);
        }
    }
    Some(out)
}

/// The profile-spec lists a ClusterSummary must carry as the profile has them (upstream §10.2),
/// with what the check says when one differs.
const SYNCED_LISTS: [&str; 4] = [
    "helmCharts",
    "policyRefs",
    "kustomizationRefs",
    "validateHealths",
];

/// Where [`retained`] keeps [`list_digest`] of each of [`SYNCED_LISTS`] instead of the list: a
/// field Sveltos never writes (the name [`KeptSpec::digests`] serializes to).
const SPEC_DIGESTS: &str = "clusterProfileSpecDigests";

/// [`list_digest`] of the empty list: a retained ClusterSummary whose spec does not use a feature.
static EMPTY_LIST_DIGEST: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| list_digest(&[]));

/// A list as upstream reads it: anything but an array is an empty list.
fn as_list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// A digest two lists share exactly when they are equal as `serde_json` values: object keys in
/// any order (its maps compare as maps), numbers as written (`1` is not `1.0`), `-0.0` as `0.0`.
fn list_digest(list: &[Value]) -> String {
    fn array(items: &[Value], out: &mut String) {
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            canonical(item, out);
        }
        out.push(']');
    }
    fn canonical(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (key, value)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    // A string always serializes.
                    out.push_str(&serde_json::to_string(key).unwrap_or_default());
                    out.push(':');
                    canonical(value, out);
                }
                out.push('}');
            }
            Value::Array(items) => array(items, out),
            Value::Number(n) if n.as_f64() == Some(0.0) && n.is_f64() => out.push_str("0.0"),
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    array(list, &mut text);
    use sha2::Digest;
    base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        sha2::Sha256::digest(text.as_bytes()),
    )
}

/// The profile's lists, read once per check: each ClusterSummary is compared with them, as a
/// list or, for one [`retained`] by a cache, as a digest.
struct Wanted<'a> {
    lists: [&'a [Value]; 4],
    digests: std::cell::OnceCell<[String; 4]>,
}

impl<'a> Wanted<'a> {
    fn of(profile: &'a Value) -> Wanted<'a> {
        Wanted {
            lists: SYNCED_LISTS.map(|key| as_list(profile.pointer(&format!("/spec/{key}")))),
            digests: std::cell::OnceCell::new(),
        }
    }

    /// Whether `summary`'s list `i` of [`SYNCED_LISTS`] differs from the profile's.
    fn differs(&self, summary: &Value, i: usize) -> bool {
        let key = SYNCED_LISTS[i];
        match summary
            .pointer(&format!("/spec/{SPEC_DIGESTS}/{key}"))
            .and_then(Value::as_str)
        {
            Some(digest) => {
                let wanted = self.digests.get_or_init(|| self.lists.map(list_digest));
                digest != wanted[i]
            }
            None => {
                as_list(summary.pointer(&format!("/spec/clusterProfileSpec/{key}")))
                    != self.lists[i]
            }
        }
    }
}

/// Upstream §10.2: the three feature lists of the ClusterSummary against the profile's (and, with
/// `checks`, the health checks), in upstream's order and words.
fn out_of_sync(summary: &Value, wanted: &Wanted<'_>, checks: bool) -> Option<String> {
    let name = name_of(summary);
    if wanted.differs(summary, 0) {
        return Some(format!("ClusterSummary HelmCharts {name} is not in sync."));
    }
    if wanted.differs(summary, 1) {
        return Some(format!("ClusterSummary PolicyRefs {name} is not in sync."));
    }
    if wanted.differs(summary, 2) {
        return Some(format!(
            "ClusterSummaryKustomizationRefs {name} is not in sync."
        ));
    }
    if checks && wanted.differs(summary, 3) {
        return Some(format!(
            "ClusterSummary {name} does not run the stage's health checks yet."
        ));
    }
    None
}

/// Upstream `isCluterSummaryProvisioned` (§10.3): every feature summary is Provisioned, and each
/// feature the spec uses has one.
fn provisioned(summary: &Value) -> bool {
    let features: Vec<(&str, &str)> = summary
        .pointer("/status/featureSummaries")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|f| {
                    (
                        f.get("featureID").and_then(Value::as_str).unwrap_or(""),
                        f.get("status").and_then(Value::as_str).unwrap_or(""),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if features.iter().any(|(_, status)| *status != "Provisioned") {
        return false;
    }
    let uses = |key: &str| match summary
        .pointer(&format!("/spec/{SPEC_DIGESTS}/{key}"))
        .and_then(Value::as_str)
    {
        Some(digest) => *digest != *EMPTY_LIST_DIGEST,
        None => !as_list(summary.pointer(&format!("/spec/clusterProfileSpec/{key}"))).is_empty(),
    };
    [
        ("helmCharts", "Helm"),
        ("policyRefs", "Resources"),
        ("kustomizationRefs", "Kustomize"),
    ]
    .iter()
    .all(|(key, feature)| !uses(key) || features.iter().any(|(f, _)| f == feature))
}

#[cfg(test)]
mod digest_tests {
    use super::*;
    use serde_json::json;

    /// The digest agrees with `serde_json`'s equality, which the whole-object comparison uses.
    #[test]
    fn lists_share_a_digest_exactly_when_they_are_equal() {
        let pairs = [
            (
                json!([{"a": 1, "b": [2, {"c": "x"}]}]),
                json!([{"b": [2, {"c": "x"}], "a": 1}]),
            ),
            (json!([1, 2]), json!([2, 1])),
            (json!([1]), json!([1.0])),
            (json!([0.0]), json!([-0.0])),
            (json!([{"a": null}]), json!([{}])),
            (json!(["a,b"]), json!(["a", "b"])),
        ];
        for (a, b) in pairs {
            let (a, b) = (as_list(Some(&a)), as_list(Some(&b)));
            assert_eq!(list_digest(a) == list_digest(b), a == b, "{a:?} vs {b:?}");
        }
        assert_eq!(as_list(Some(&json!("not a list"))), as_list(None));
    }
}
