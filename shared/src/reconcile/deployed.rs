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

/// How upstream's message for a stage that matches no cluster starts.
pub const NO_MATCHING_CLUSTERS: &str = "No matching clusters found";

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

/// `summary` in the form [`check`] reads: as it is when a cache kept it, else [`retained`].
pub fn retained_form(summary: &Value) -> Value {
    if summary.pointer(&format!("/spec/{SPEC_DIGESTS}")).is_some() {
        summary.clone()
    } else {
        retained(summary)
    }
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
    /// Per feature (`Helm`, `Resources`, `Kustomize`), a digest of the spec's part of what
    /// addon-controller hashes for it ([`feature_inputs`]).
    #[serde(rename = "featureInputDigests", default)]
    pub feature_inputs: BTreeMap<String, String>,
    /// When the API server last wrote anything but the status, if the status was written in an
    /// earlier second (its managed fields' latest times, whole seconds): a spec update the status
    /// provably predates, which [`unconfirmed_until`] gives Sveltos time to answer. Writes in
    /// the same second cannot be ordered and leave it unset.
    #[serde(
        rename = "specWrittenAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub written_at: Option<String>,
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
    /// The hash addon-controller computed when it last wrote this feature's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<Value>,
    /// Why it failed, kept for a failed feature only (the Warning Event names it).
    #[serde(
        rename = "failureMessage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub failure_message: Option<Value>,
    /// The feature inputs ([`KeptSpec::feature_inputs`]) this status was written for, when
    /// known ([`Kept::follow`]); `None`: unknown (no history, and the object's managed fields
    /// cannot order its status after its spec). A status without a hash is taken as written for
    /// the spec the object has: there is nothing to follow.
    #[serde(
        rename = "describesInputs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub describes: Option<String>,
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
        let feature_inputs = feature_inputs(summary);
        // Without history, only the API server's own clock can say the status was written after
        // the spec: its managed fields' times (whole seconds; equal times cannot be ordered).
        let after_spec = status_written_after_spec(summary);
        let status = summary
            .pointer("/status/featureSummaries")
            .and_then(Value::as_array)
            .map(|features| KeptStatus {
                feature_summaries: features
                    .iter()
                    .map(|f| {
                        let feature_id = f.get("featureID").cloned();
                        // A status without a hash (Sveltos builds before hashes, hand-made
                        // objects) cannot be followed: it is taken as describing the spec.
                        let hashless = f.get("hash").is_none_or(Value::is_null);
                        let describes = (after_spec || hashless)
                            .then(|| {
                                feature_id
                                    .as_ref()
                                    .and_then(Value::as_str)
                                    .and_then(|id| feature_inputs.get(id).cloned())
                            })
                            .flatten();
                        let status = f.get("status").cloned();
                        let failed = matches!(
                            status.as_ref().and_then(Value::as_str),
                            Some("Failed" | "FailedNonRetriable")
                        );
                        KeptFeature {
                            feature_id,
                            status,
                            hash: f.get("hash").cloned(),
                            failure_message: f.get("failureMessage").cloned().filter(|_| failed),
                            describes,
                        }
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
                feature_inputs,
                written_at: status_predates_spec(summary).map(|t| t.to_rfc3339()),
            },
            status,
        }
    }

    /// What this object's feature statuses describe, from the version it replaces (the watch's
    /// history, in order): a status written with a new hash describes the spec the object has
    /// now — addon-controller writes `Provisioning` with the hash of the spec it read before it
    /// deploys, and skips the status write when the hash is unchanged
    /// (projectsveltos/addon-controller@v1.14.0:controllers/clustersummary_deployer.go,
    /// `proceedDeployingFeature`); a status whose hash did not change describes what it
    /// described before. So after a spec update that changes a feature's inputs, the old
    /// `Provisioned` no longer counts until a status of the new hash is written.
    pub fn follow(&mut self, previous: &Kept) {
        let Some(status) = self.status.as_mut() else {
            return;
        };
        let before: Vec<&KeptFeature> = previous
            .status
            .iter()
            .flat_map(|s| &s.feature_summaries)
            .collect();
        for feature in &mut status.feature_summaries {
            let id = feature.feature_id.as_ref().and_then(Value::as_str);
            let prev = before
                .iter()
                .find(|p| p.feature_id.as_ref().and_then(Value::as_str) == id);
            let current = id.and_then(|id| self.spec.feature_inputs.get(id).cloned());
            let before = id.and_then(|id| previous.spec.feature_inputs.get(id).cloned());
            feature.describes = match prev {
                _ if feature.hash.as_ref().is_none_or(Value::is_null) => current,
                // No status write: it describes what it described. Unknown before, it is known
                // now not to describe inputs that changed since.
                Some(prev) if prev.hash == feature.hash => prev
                    .describes
                    .clone()
                    .or_else(|| before.filter(|b| Some(b) != current.as_ref())),
                _ => current,
            };
        }
    }
}

/// Which spec lists feed which feature's hash, and the features' names.
const FEATURES: [(&str, &str); 3] = [
    ("Helm", "helmCharts"),
    ("Resources", "policyRefs"),
    ("Kustomize", "kustomizationRefs"),
];

/// The members of a ClusterSummary's `clusterProfileSpec` that addon-controller hashes for every
/// feature (`getClusterProfileSpecHash`: syncMode, reloader, tier, continueOnConflict, the
/// template resources, patches, drift exclusions).
const SHARED_INPUTS: [&str; 7] = [
    "syncMode",
    "reloader",
    "tier",
    "continueOnConflict",
    "templateResourceRefs",
    "patches",
    "driftExclusions",
];

/// Per feature, a digest of the spec's part of the feature's hash inputs: the shared members,
/// the feature's own list, and the health checks of that feature
/// (projectsveltos/addon-controller@v1.14.0:controllers/handlers_helm.go `helmHash`,
/// handlers_utils.go `getClusterProfileSpecHash`). The hash also covers what the spec only
/// references (the content of ConfigMaps, Secrets, templates): those changes are seen only
/// through the hash itself.
fn feature_inputs(summary: &Value) -> BTreeMap<String, String> {
    let spec = summary.pointer("/spec/clusterProfileSpec");
    let shared: Vec<Value> = SHARED_INPUTS
        .iter()
        .map(|k| spec.and_then(|s| s.get(*k)).cloned().unwrap_or(Value::Null))
        .collect();
    FEATURES
        .iter()
        .map(|(feature, list)| {
            let checks: Vec<Value> = as_list(spec.and_then(|s| s.get("validateHealths")))
                .iter()
                .filter(|c| c.get("featureID").and_then(Value::as_str) == Some(*feature))
                .cloned()
                .collect();
            let inputs = [
                Value::Array(shared.clone()),
                Value::Array(as_list(spec.and_then(|s| s.get(*list))).to_vec()),
                Value::Array(checks),
            ];
            ((*feature).to_string(), list_digest(&inputs))
        })
        .collect()
}

/// Whether the object's managed fields show its status written after its spec: the latest time
/// of an entry on the status subresource is later than that of every entry on the main resource
/// (the API server's clock, whole seconds).
fn status_written_after_spec(summary: &Value) -> bool {
    match (latest_write(summary, true), latest_write(summary, false)) {
        (Some(status), Some(main)) => status > main,
        _ => false,
    }
}

/// The time of the object's latest spec write when its latest status write was in an earlier
/// second ([`KeptSpec::written_at`]).
fn status_predates_spec(summary: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    match (latest_write(summary, true), latest_write(summary, false)) {
        (Some(status), Some(main)) if status < main => Some(main),
        _ => None,
    }
}

/// The latest time the managed fields record for the status (`on_status`) or the rest.
fn latest_write(summary: &Value, on_status: bool) -> Option<chrono::DateTime<chrono::Utc>> {
    summary
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| (e.get("subresource").and_then(Value::as_str) == Some("status")) == on_status)
        .filter_map(|e| e.get("time").and_then(Value::as_str))
        .filter_map(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
        .max()
}

/// How long after a ClusterSummary's spec update an unconfirmed `Provisioned` (no known history:
/// [`unconfirmed`]) written before that update is not yet taken for a deployment of that spec.
/// addon-controller answers a spec update that changes a feature's hash with `Provisioning` of
/// the new hash (its ClusterSummary reconciler watches the spec), and writes nothing when the
/// hash did not change: a status still unchanged this long after the update is one Sveltos kept
/// on purpose. Before, the old `Provisioned` may be the previous spec's, which a controller that
/// just started (or took over without having watched the summary change) cannot tell — taking it
/// for deployed promoted stages Sveltos had not deployed (found by the chaos suite's long run).
/// A status written in the same second as the spec cannot be ordered after or before it and is
/// not held back: a deployment that quick is the common case, and holding it would delay every
/// stage a restarted controller finds deployed by two minutes.
pub const UNCONFIRMED_GRACE: chrono::TimeDelta = chrono::TimeDelta::minutes(2);

/// When the unconfirmed ClusterSummaries among `summaries` ([`retained`] ones) may be taken for
/// deployed: [`UNCONFIRMED_GRACE`] after the latest spec update their status provably predates
/// ([`KeptSpec::written_at`]); `None` when none is unconfirmed or none has such an update.
pub fn unconfirmed_until(summaries: &[&Value]) -> Option<chrono::DateTime<chrono::Utc>> {
    summaries
        .iter()
        .filter(|s| is_unconfirmed(s))
        .filter_map(|s| s.pointer("/spec/specWrittenAt").and_then(Value::as_str))
        .filter_map(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&chrono::Utc) + UNCONFIRMED_GRACE)
        .max()
}

/// How the ClusterSummaries of a stage fail, if any does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failing {
    /// A feature is `Failed`: Sveltos retries it.
    Retrying,
    /// A feature is `FailedNonRetriable`: nothing changes until the spec does.
    ForGood,
}

/// The worst failure among `summaries`' features (whole objects or [`retained`] ones) that report
/// on `profile`'s spec. A failure reported for an earlier spec — the summary does not carry the
/// profile's spec yet, or [`Kept::follow`] knows the status describes other inputs — is not one:
/// addon-controller deploys again when a feature's hash changed, `FailedNonRetriable` included
/// (projectsveltos/addon-controller controllers/clustersummary_deployer.go `shouldRedeploy`:
/// only an unchanged hash keeps a non-retriable failure), so it is a deployment in progress.
pub fn failing(profile: Option<&Value>, summaries: &[&Value]) -> Option<Failing> {
    failures(profile, summaries).0
}

/// [`failing`], with the names of the ClusterSummaries that fail (in `summaries`' order).
pub fn failures(profile: Option<&Value>, summaries: &[&Value]) -> (Option<Failing>, Vec<Failed>) {
    let wanted = profile.map(Wanted::of);
    let mut worst = None;
    let mut names = Vec::new();
    for s in summaries {
        let kept = retained_form(s);
        if wanted
            .as_ref()
            .is_some_and(|w| out_of_sync(&kept, w, false).is_some())
        {
            continue;
        }
        let features = features_in_use(&kept);
        let mut failed: Option<Failed> = None;
        for f in features.iter().filter(|f| !f.of_an_earlier_spec()) {
            let for_good = match f.status {
                Some("FailedNonRetriable") => true,
                Some("Failed") => false,
                _ => continue,
            };
            worst = if for_good {
                Some(Failing::ForGood)
            } else {
                worst.or(Some(Failing::Retrying))
            };
            // The worst feature of the summary is the one named.
            if failed
                .as_ref()
                .is_none_or(|x| for_good && x.status == "Failed")
            {
                let text = |p: &str| kept.pointer(p).and_then(Value::as_str).unwrap_or("");
                failed = Some(Failed {
                    summary: name_of(s).to_string(),
                    cluster: format!(
                        "{}/{}",
                        text("/spec/clusterNamespace"),
                        text("/spec/clusterName")
                    ),
                    feature: f.id.to_string(),
                    status: f.status.unwrap_or_default().to_string(),
                    message: f.message.map(str::to_string),
                });
            }
        }
        names.extend(failed);
    }
    (worst, names)
}

/// A ClusterSummary that fails, with its worst feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    pub summary: String,
    /// `namespace/name` of the cluster.
    pub cluster: String,
    pub feature: String,
    /// `Failed` or `FailedNonRetriable`.
    pub status: String,
    pub message: Option<String>,
}

impl Failed {
    /// `dev/dev01 Helm FailedNonRetriable: <message>`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {}: {}",
            self.cluster,
            self.feature,
            self.status,
            self.message.as_deref().unwrap_or("no message")
        )
    }
}

/// Whether `summary` (a whole object or a [`retained`] one) does not deploy `profile`'s spec
/// yet: it does not carry that spec (Sveltos has not updated the ClusterSummary), or its status
/// reports a feature provisioned for an earlier spec. What it reports is then the previous
/// configuration's.
pub fn behind(profile: &Value, summary: &Value) -> bool {
    let summary = retained_form(summary);
    out_of_sync(&summary, &Wanted::of(profile), false).is_some()
        || reports_an_earlier_spec(&summary).is_some()
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
    let found: Vec<Value> = summaries_of(profile_name, summaries)
        .into_iter()
        .map(retained_form)
        .collect();
    let found: Vec<&Value> = found.iter().collect();
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
        if let Some(feature) = reports_an_earlier_spec(summary) {
            return Deployment::NotDeployed(format!(
                "ClusterSummary {} reports feature {feature} provisioned for an earlier spec: \
                 Sveltos has not deployed the current one yet.",
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
            let mut why =
                format!("ClusterSummary for {kind} {namespace}/{name} is not created yet.");
            if let Some(failure) = failed_cluster(profile, kind, namespace, name) {
                why.push_str(&format!(" Sveltos could not create it: {failure}"));
            }
            return Deployment::NotDeployed(why);
        }
    }
    if found.is_empty() {
        return Deployment::Deployed(format!(
            "{NO_MATCHING_CLUSTERS} for ClusterProfile {profile_name}. Deployment considered \
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

/// The ClusterProfile's `status.failedClusters` entry for a cluster — Sveltos could not create
/// or update its ClusterSummary (docs/reference/sveltos-clusterpromotion.md §4) — as its
/// `failureMessage`.
fn failed_cluster(profile: &Value, kind: &str, namespace: &str, name: &str) -> Option<String> {
    profile
        .pointer("/status/failedClusters")
        .and_then(Value::as_array)?
        .iter()
        .find(|f| {
            let r = &f["clusterRef"];
            r.get("kind").and_then(Value::as_str) == Some(kind)
                && r.get("namespace").and_then(Value::as_str).unwrap_or("") == namespace
                && r.get("name").and_then(Value::as_str) == Some(name)
        })
        .map(|f| {
            f.get("failureMessage")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_string()
        })
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

/// The first feature the summary uses whose `Provisioned` status was written for other inputs
/// than the spec's ([`Kept::follow`]): the deployment it reports is of an earlier spec.
fn reports_an_earlier_spec(summary: &Value) -> Option<String> {
    features_in_use(summary)
        .into_iter()
        .find(Feature::of_an_earlier_spec)
        .map(|f| f.id.to_string())
}

/// The ClusterSummaries among `summaries` ([`retained`] ones) whose deployment of the current spec
/// cannot be confirmed: a feature in use whose status has no known history (the controller
/// started after it was written, and the managed fields cannot order it after the spec). The
/// stage counts as deployed, as upstream counts it; the decision says it is unconfirmed.
pub fn unconfirmed(summaries: &[&Value]) -> Vec<String> {
    summaries
        .iter()
        .filter(|s| is_unconfirmed(s))
        .map(|s| name_of(s).to_string())
        .collect()
}

/// One summary of [`unconfirmed`].
fn is_unconfirmed(summary: &Value) -> bool {
    features_in_use(summary)
        .iter()
        .any(|f| f.describes.is_none())
}

/// A feature a retained summary reports on.
struct Feature<'a> {
    id: &'a str,
    status: Option<&'a str>,
    message: Option<&'a str>,
    /// The inputs its status was written for, when known ([`Kept::follow`]).
    describes: Option<&'a str>,
    /// The summary's current inputs for it.
    inputs: Option<&'a str>,
}

impl Feature<'_> {
    /// Its status is known to describe other inputs than the summary's current ones.
    fn of_an_earlier_spec(&self) -> bool {
        self.describes.is_some_and(|d| Some(d) != self.inputs)
    }
}

/// The features a retained summary uses, with what each status describes and the current inputs.
fn features_in_use(summary: &Value) -> Vec<Feature<'_>> {
    summary
        .pointer("/status/featureSummaries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let id = f.get("featureID").and_then(Value::as_str)?;
            let inputs = summary
                .pointer(&format!("/spec/featureInputDigests/{id}"))
                .and_then(Value::as_str);
            Some(Feature {
                id,
                status: f.get("status").and_then(Value::as_str),
                message: f.get("failureMessage").and_then(Value::as_str),
                describes: f.get("describesInputs").and_then(Value::as_str),
                inputs,
            })
        })
        .collect()
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

#[cfg(test)]
mod follow_tests {
    use super::*;
    use serde_json::json;

    fn stage() -> Stage {
        serde_json::from_value(json!({"name": "dev",
            "clusterSelector": {"matchLabels": {"env": "dev"}}}))
        .unwrap()
    }

    fn profile(version: &str) -> Value {
        json!({"metadata": {"name": "p-dev"},
               "spec": {"helmCharts": [{"chartName": "k/k", "chartVersion": version}],
                        "validateHealths": [{"name": "r", "featureID": "Resources"}]},
               "status": {"matchingClusters": [{"kind": "SveltosCluster",
                                                "namespace": "fleet", "name": "c1"}]}})
    }

    /// A ClusterSummary of `profile`, its Helm feature in `status` with `hash`.
    fn summary(profile: &Value, status: &str, hash: &str) -> Value {
        json!({"metadata": {"name": "p-dev-sveltos-c1", "namespace": "fleet",
                            "labels": {CLUSTER_PROFILE_NAME_LABEL: "p-dev"}},
               "spec": {"clusterNamespace": "fleet", "clusterName": "c1", "clusterType": "Sveltos",
                        "clusterProfileSpec": profile["spec"].clone()},
               "status": {"featureSummaries": [{"featureID": "Helm", "status": status,
                                                "hash": hash}]}})
    }

    /// The watch's history: each object kept, following the one before.
    fn kept_in_order(objects: &[Value]) -> Value {
        let mut previous: Option<Kept> = None;
        for o in objects {
            let mut kept = Kept::of(o);
            if let Some(p) = &previous {
                kept.follow(p);
            }
            previous = Some(kept);
        }
        serde_json::to_value(previous.unwrap()).unwrap()
    }

    fn judge(profile: &Value, kept: Value) -> Deployment {
        check("p-dev", &stage(), Some(profile), &[kept], None, false)
    }

    /// A `FailedNonRetriable` of the spec before the update is not a failure for good: Sveltos
    /// deploys again when the hash changes. Once it reports the new hash, it is.
    #[test]
    fn a_non_retriable_failure_of_an_earlier_spec_is_a_deployment_in_progress() {
        let (old, new) = (profile("1.0"), profile("2.0"));
        let failed = summary(&old, "FailedNonRetriable", "h1");
        let spec_updated = summary(&new, "FailedNonRetriable", "h1");
        // Before Sveltos updated the summary's spec: it reports on the previous profile.
        assert_eq!(failing(Some(&old), &[&failed]), Some(Failing::ForGood));
        assert_eq!(failing(Some(&new), &[&failed]), None);
        let window = kept_in_order(&[failed.clone(), spec_updated.clone()]);
        assert_eq!(failing(Some(&new), &[&window]), None);
        let again = kept_in_order(&[
            failed,
            spec_updated,
            summary(&new, "FailedNonRetriable", "h2"),
        ]);
        assert_eq!(failing(Some(&new), &[&again]), Some(Failing::ForGood));
        // Without history it cannot be told apart: reported as it stands.
        let fresh = retained(&summary(&new, "FailedNonRetriable", "h1"));
        assert_eq!(failing(Some(&new), &[&fresh]), Some(Failing::ForGood));
    }

    /// Pull mode (projectsveltos/addon-controller controllers/clustersummary_deployer.go
    /// `proceedDeployingFeature`, `proceedDeployingFeatureInPullMode`): the deployer's
    /// `Provisioned` only means the agent's configuration is ready, so addon-controller writes
    /// `Provisioning` (again, same hash) and `Provisioned` only once the agent in the managed
    /// cluster reports it deployed. The same signals as push mode: nothing counts before that.
    #[test]
    fn pull_mode_counts_only_the_agents_provisioned() {
        let (old, new) = (profile("1.0"), profile("2.0"));
        let mut history = vec![
            summary(&old, "Provisioned", "h1"),
            summary(&new, "Provisioned", "h1"),
        ];
        for step in [
            summary(&new, "Provisioning", "h2"),
            summary(&new, "Provisioning", "h2"),
        ] {
            history.push(step);
            let kept = kept_in_order(&history);
            assert!(matches!(judge(&new, kept), Deployment::NotDeployed(_)));
        }
        history.push(summary(&new, "Provisioned", "h2"));
        assert!(matches!(
            judge(&new, kept_in_order(&history)),
            Deployment::Deployed(_)
        ));
    }

    /// addon-controller updates a ClusterSummary's spec first and its status later: in between,
    /// the old `Provisioned` is no deployment of the new spec.
    #[test]
    fn a_status_written_before_the_spec_changed_is_not_a_deployment_of_it() {
        let (old, new) = (profile("1.0"), profile("2.0"));
        let deployed = summary(&old, "Provisioned", "h1");
        let spec_updated = summary(&new, "Provisioned", "h1");
        let provisioning = summary(&new, "Provisioning", "h2");
        let provisioned = summary(&new, "Provisioned", "h2");
        let window = kept_in_order(&[deployed.clone(), spec_updated.clone()]);
        assert_eq!(
            judge(&new, window),
            Deployment::NotDeployed(
                "ClusterSummary p-dev-sveltos-c1 reports feature Helm provisioned for an earlier \
                 spec: Sveltos has not deployed the current one yet."
                    .into()
            )
        );
        let deploying =
            kept_in_order(&[deployed.clone(), spec_updated.clone(), provisioning.clone()]);
        assert!(matches!(judge(&new, deploying), Deployment::NotDeployed(_)));
        let done = kept_in_order(&[deployed, spec_updated, provisioning, provisioned]);
        assert!(matches!(judge(&new, done.clone()), Deployment::Deployed(_)));
        assert!(unconfirmed(&[&done]).is_empty());
    }

    /// A spec change outside a feature's hash inputs writes no status for it (the hash did not
    /// change): its `Provisioned` still describes the spec.
    #[test]
    fn a_change_outside_a_features_inputs_keeps_its_deployment() {
        let old = profile("1.0");
        let mut new = old.clone();
        new["spec"]["validateHealths"][0]["name"] = json!("renamed");
        let kept = kept_in_order(&[
            summary(&old, "Provisioned", "h1"),
            summary(&new, "Provisioned", "h1"),
        ]);
        assert!(matches!(judge(&new, kept), Deployment::Deployed(_)));
    }

    /// Without history (a controller that just started), a hashed status is confirmed only when
    /// the API server's managed fields put it after the spec; otherwise it counts as deployed, as
    /// upstream counts it, and is reported unconfirmed.
    #[test]
    fn without_history_the_managed_fields_decide_or_it_is_unconfirmed() {
        let p = profile("1.0");
        let mut s = summary(&p, "Provisioned", "h1");
        let entry = |subresource: Option<&str>, time: &str| {
            let mut e = json!({"manager": "addon-controller", "operation": "Update", "time": time});
            if let Some(sub) = subresource {
                e["subresource"] = json!(sub);
            }
            e
        };
        let kept = retained(&s);
        assert!(matches!(judge(&p, kept.clone()), Deployment::Deployed(_)));
        assert_eq!(unconfirmed(&[&kept]), ["p-dev-sveltos-c1"]);
        s["metadata"]["managedFields"] = json!([
            entry(None, "2026-03-01T10:00:00Z"),
            entry(Some("status"), "2026-03-01T10:00:01Z")
        ]);
        assert!(unconfirmed(&[&retained(&s)]).is_empty());
        // The same second cannot be ordered.
        s["metadata"]["managedFields"] = json!([
            entry(None, "2026-03-01T10:00:00Z"),
            entry(Some("status"), "2026-03-01T10:00:00Z")
        ]);
        assert_eq!(unconfirmed(&[&retained(&s)]), ["p-dev-sveltos-c1"]);
    }

    /// An unconfirmed status written before the summary's latest spec update is not taken for
    /// deployed until two minutes after that update: until then it may be the previous spec's (a
    /// controller that started, or took over, while Sveltos had not answered the update yet).
    #[test]
    fn an_unconfirmed_status_waits_two_minutes_from_the_spec_update() {
        let p = profile("1.0");
        let mut s = summary(&p, "Provisioned", "h1");
        s["metadata"]["managedFields"] = json!([
            {"manager": "addon-controller", "operation": "Update", "time": "2026-03-01T10:00:00Z"},
            {"manager": "addon-controller", "operation": "Update", "subresource": "status",
             "time": "2026-03-01T09:59:00Z"},
        ]);
        let kept = retained(&s);
        assert_eq!(unconfirmed(&[&kept]), ["p-dev-sveltos-c1"]);
        assert_eq!(
            unconfirmed_until(&[&kept]).map(|t| t.to_rfc3339()),
            Some("2026-03-01T10:02:00+00:00".to_string())
        );
        // Written in the same second as the spec: not ordered, not held back (unconfirmed).
        s["metadata"]["managedFields"][1]["time"] = json!("2026-03-01T10:00:00Z");
        assert_eq!(unconfirmed(&[&retained(&s)]), ["p-dev-sveltos-c1"]);
        assert_eq!(unconfirmed_until(&[&retained(&s)]), None);
        // Confirmed (the status written after the spec): nothing to wait for.
        s["metadata"]["managedFields"][1]["time"] = json!("2026-03-01T10:00:01Z");
        assert_eq!(unconfirmed_until(&[&retained(&s)]), None);
        // No managed fields: nothing says when the spec changed; deployed, unconfirmed.
        let bare = retained(&summary(&p, "Provisioned", "h1"));
        assert_eq!(unconfirmed(&[&bare]), ["p-dev-sveltos-c1"]);
        assert_eq!(unconfirmed_until(&[&bare]), None);
    }
}
