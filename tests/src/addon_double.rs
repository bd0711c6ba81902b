//! A test double of Sveltos' addon-controller, for the promotion-controller scenarios: what it
//! does with a ClusterProfile, played one step at a time so a scenario decides when Sveltos acts,
//! in the order Sveltos acts.
//!
//! [`AddonController::update_specs`] is the ClusterProfile reconciler's part:
//! - each ClusterProfile of the scenario gets `status.matchingClusters`: the scenario's
//!   SveltosClusters its `clusterSelector` matches and that are ready (libsveltos
//!   `GetMatchingClusters` skips a SveltosCluster without `status.ready`);
//! - each (profile, matching cluster) gets a ClusterSummary `<profile>-sveltos-<cluster>` in the
//!   cluster's namespace, labelled `projectsveltos.io/cluster-profile-name`, owned by the
//!   profile, whose `spec.clusterProfileSpec` is the profile's spec as it is now — written alone,
//!   its status left as it was (`updateClusterSummary`, a plain update);
//! - ClusterSummaries of profiles that are gone, or of clusters no longer matched, are deleted.
//!
//! [`AddonController::report`] is the ClusterSummary reconciler's part: each feature the spec uses
//! reports a state with the hash of the spec (`Provisioning` first, `Provisioned` with
//! `lastAppliedTime` once deployed), through `/status`, skipped when that status is already there
//! with that hash. [`AddonController::sync`] plays both, in that order, with the scenario's lag
//! ([`Cluster::addon_lag`]) between the spec update and `Provisioning` and between `Provisioning`
//! and `Provisioned`: in Sveltos these are separate reconciles of separate controllers, and a
//! deployment takes time, so a reconciler that reads in between must see the intermediate
//! states (the spec new, the status old; `Provisioning`). What it reported deployed is logged
//! ([`AddonController::deployed`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{json, Value};

use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, FINALIZER, PROMOTION_NAME_LABEL};
use promotion_shared::selector;

use crate::backend::{BackendError, Cluster, SESSION_LABEL};
use crate::envtest::objects::{
    CLUSTER_PROFILE, CLUSTER_PROMOTION, CLUSTER_SUMMARY, SVELTOS_CLUSTER,
};

const CONFIG_API_VERSION: &str = "config.projectsveltos.io/v1beta1";

pub struct AddonController<'a> {
    cluster: &'a Cluster,
    /// Every `Provisioned` this double reported: the summary, the hash of the spec it deployed,
    /// in order. Invariants are checked against it, not against the controller's own rule.
    deployed: std::sync::Mutex<Vec<Deployed>>,
    /// Profiles whose deployments fail for now, with the state their summaries report where they
    /// would report `Provisioned` ([`AddonController::fail`], [`AddonController::fail_for_good`]).
    failing: std::sync::Mutex<BTreeMap<String, &'static str>>,
}

/// One deployment the double reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deployed {
    /// `namespace/name` of the ClusterSummary.
    pub summary: String,
    /// The profile (stage) it belongs to.
    pub profile: String,
    /// The hash of the spec deployed (the double's own, from the summary's spec).
    pub hash: String,
    /// The first Helm chart's version in the spec deployed ("" without one).
    pub chart: String,
    /// When the double sent the `Provisioned` status (logged before the answer, also when none
    /// came): a decision taken on it is applied after this, so a write stamped earlier by the
    /// API server was decided without it.
    pub sent_at: std::time::SystemTime,
}

/// What one pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// ClusterSummaries written (`namespace/name`).
    pub written: Vec<String>,
    pub deleted: Vec<String>,
}

fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl<'a> AddonController<'a> {
    pub fn new(cluster: &'a Cluster) -> Self {
        AddonController {
            cluster,
            deployed: std::sync::Mutex::new(Vec::new()),
            failing: std::sync::Mutex::new(Default::default()),
        }
    }

    /// From now on, deployments of `profile` fail (`failed: true`): its summaries report
    /// `Failed` with a `failureMessage` and a growing `consecutiveFailures` where they would
    /// report `Provisioned`; `failed: false` lets them succeed again.
    pub fn fail(&self, profile: &str, failed: bool) {
        self.set_failure(profile, failed.then_some("Failed"));
    }

    /// From now on, deployments of `profile` fail for good (`failed: true`): its summaries report
    /// `FailedNonRetriable` with a `failureMessage` (a template that cannot be instantiated),
    /// written once per hash, as addon-controller does not retry it until the hash changes
    /// (controllers/clustersummary_deployer.go `handleDeployerError`, `shouldRedeploy`).
    pub fn fail_for_good(&self, profile: &str, failed: bool) {
        self.set_failure(profile, failed.then_some("FailedNonRetriable"));
    }

    fn set_failure(&self, profile: &str, state: Option<&'static str>) {
        let mut failing = self
            .failing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match state {
            Some(state) => failing.insert(profile.to_string(), state),
            None => failing.remove(profile),
        };
    }

    /// The state `profile`'s deployments end in instead of `Provisioned`, if they fail.
    fn failure(&self, profile: &str) -> Option<&'static str> {
        self.failing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(profile)
            .copied()
    }

    /// Sveltos' time between two steps of a deployment: the scenario's lag, spent (a simulated
    /// duration, not a wait for a condition).
    fn lag(&self) {
        let lag = self.cluster.addon_lag();
        if !lag.is_zero() {
            std::thread::sleep(lag);
        }
    }

    /// What the double has reported deployed so far.
    pub fn deployed(&self) -> Vec<Deployed> {
        self.deployed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn ours(&self, object: &Value) -> bool {
        labels_of(object).get(SESSION_LABEL).map(String::as_str) == Some(self.cluster.session())
    }

    /// The generated profiles of this scenario's promotions (those are labelled with the
    /// promotion's name, which carries the session).
    fn profiles(&self) -> Result<Vec<Value>, BackendError> {
        let session = self.cluster.session();
        Ok(self
            .cluster
            .list(CLUSTER_PROFILE, None)?
            .into_iter()
            .filter(|p| {
                labels_of(p)
                    .get(PROMOTION_NAME_LABEL)
                    .is_some_and(|n| n.ends_with(&format!("-{session}")))
            })
            .collect())
    }

    /// Open-source addon-controller ≥ v1.14 with this scenario's promotions that are being
    /// deleted: it no longer reconciles ClusterPromotions, yet keeps their finalizer
    /// `config.projectsveltos.io/clusterpromotion` and, in `reconcileDelete`, removes it at once
    /// when `preserveClusterProfilesOnDelete` is set — racing whoever else holds it — and
    /// otherwise deletes the promotion's ClusterProfiles first
    /// (projectsveltos/addon-controller@v1.14.0:controllers/clusterpromotion_controller.go,
    /// lines 145–170). Returns the promotions whose finalizer it removed.
    pub fn release_deleted_promotions(&self) -> Result<Vec<String>, BackendError> {
        let session = self.cluster.session();
        let mut released = Vec::new();
        for mut promotion in self.cluster.list(CLUSTER_PROMOTION, None)? {
            let name = text(&promotion, "/metadata/name").to_string();
            if !name.ends_with(&format!("-{session}"))
                || promotion.pointer("/metadata/deletionTimestamp").is_none()
            {
                continue;
            }
            let preserve =
                promotion.pointer("/spec/preserveClusterProfilesOnDelete") == Some(&json!(true));
            if !preserve {
                let theirs: Vec<Value> = self
                    .profiles()?
                    .into_iter()
                    .filter(|p| labels_of(p).get(PROMOTION_NAME_LABEL) == Some(&name))
                    .collect();
                for p in &theirs {
                    self.cluster
                        .delete(CLUSTER_PROFILE, None, text(p, "/metadata/name"))?;
                }
                if !theirs.is_empty() {
                    continue;
                }
            }
            if let Some(finalizers) = promotion["metadata"]["finalizers"].as_array_mut() {
                finalizers.retain(|f| f != FINALIZER);
            }
            self.cluster.put(&promotion)?;
            released.push(name);
        }
        Ok(released)
    }

    /// The garbage collector, which envtest does not run: every ClusterProfile of this scenario
    /// whose owner reference names a ClusterPromotion that no longer exists (by UID) is deleted
    /// (kube-controller-manager's background propagation). Returns the profiles deleted.
    pub fn collect_garbage(&self) -> Result<Vec<String>, BackendError> {
        let live: Vec<String> = self
            .cluster
            .list(CLUSTER_PROMOTION, None)?
            .iter()
            .map(|p| text(p, "/metadata/uid").to_string())
            .collect();
        let mut deleted = Vec::new();
        for profile in self.profiles()? {
            let orphaned = profile
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter().any(|r| {
                        r.get("kind").and_then(Value::as_str) == Some("ClusterPromotion")
                            && !live
                                .iter()
                                .any(|u| Some(u.as_str()) == r.get("uid").and_then(Value::as_str))
                    })
                });
            if orphaned {
                let name = text(&profile, "/metadata/name").to_string();
                self.cluster.delete(CLUSTER_PROFILE, None, &name)?;
                deleted.push(name);
            }
        }
        Ok(deleted)
    }

    /// One pass (see the module documentation), in Sveltos' order: the specs first (as the
    /// ClusterProfile reconciler's `updateClusterSummary`, a plain update that leaves `status`
    /// alone), then the status — `Provisioning` with the new hash, and, when `provisioned`,
    /// `Provisioned` — as the ClusterSummary reconciler writes it
    /// (projectsveltos/addon-controller@v1.14.0:controllers/profile_utils.go
    /// `updateClusterSummary`, controllers/clustersummary_deployer.go `proceedDeployingFeature`).
    pub fn sync(&self, provisioned: bool) -> Result<Pass, BackendError> {
        let mut pass = self.update_specs()?;
        self.lag();
        let reported = self.report("Provisioning")?;
        let reported = if provisioned {
            self.lag();
            self.report("Provisioned")?
        } else {
            reported
        };
        for key in reported {
            if !pass.written.contains(&key) {
                pass.written.push(key);
            }
        }
        Ok(pass)
    }

    /// The ClusterProfile reconciler's part: matching clusters, ClusterSummaries created or their
    /// spec updated (status untouched), stale ones deleted.
    pub fn update_specs(&self) -> Result<Pass, BackendError> {
        let namespace = self.cluster.namespace();
        let clusters: Vec<Value> = self
            .cluster
            .list(SVELTOS_CLUSTER, Some(&namespace))?
            .into_iter()
            .filter(|c| self.ours(c) && c.pointer("/status/ready") == Some(&json!(true)))
            .collect();
        let profiles = self.profiles()?;
        let mut pass = Pass::default();
        let mut wanted = Vec::new();
        for profile in &profiles {
            if profile.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let name = text(profile, "/metadata/name").to_string();
            let selector: LabelSelector = profile
                .pointer("/spec/clusterSelector")
                .cloned()
                .and_then(|s| serde_json::from_value(s).ok())
                .unwrap_or_default();
            let matching: Vec<&Value> = clusters
                .iter()
                .filter(|c| selector::matches(&selector, &labels_of(c)))
                .collect();
            let refs: Vec<Value> = matching
                .iter()
                .map(|c| {
                    json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                           "namespace": text(c, "/metadata/namespace"),
                           "name": text(c, "/metadata/name")})
                })
                .collect();
            let mut status = profile.get("status").cloned().unwrap_or_else(|| json!({}));
            status["matchingClusters"] = json!(refs);
            self.cluster
                .put_status(CLUSTER_PROFILE, None, &name, &status)?;
            for c in matching {
                let mut summary = summary(profile, c, self.cluster.session());
                let key = format!(
                    "{}/{}",
                    text(&summary, "/metadata/namespace"),
                    text(&summary, "/metadata/name")
                );
                let stored = self.cluster.get(
                    CLUSTER_SUMMARY,
                    Some(text(&summary, "/metadata/namespace")),
                    text(&summary, "/metadata/name"),
                )?;
                let same = stored
                    .as_ref()
                    .is_some_and(|s| s.pointer("/spec") == summary.pointer("/spec"));
                if !same {
                    // The spec only: a stored status stays as it was.
                    match stored.as_ref().and_then(|s| s.get("status")) {
                        Some(status) => summary["status"] = status.clone(),
                        None => {
                            if let Some(m) = summary.as_object_mut() {
                                m.remove("status");
                            }
                        }
                    }
                    self.cluster.put(&summary)?;
                    pass.written.push(key.clone());
                }
                wanted.push(key);
            }
        }
        for s in self.cluster.list(CLUSTER_SUMMARY, Some(&namespace))? {
            let key = format!(
                "{}/{}",
                text(&s, "/metadata/namespace"),
                text(&s, "/metadata/name")
            );
            if self.ours(&s) && !wanted.contains(&key) {
                self.cluster.delete(
                    CLUSTER_SUMMARY,
                    Some(text(&s, "/metadata/namespace")),
                    text(&s, "/metadata/name"),
                )?;
                pass.deleted.push(key);
            }
        }
        Ok(pass)
    }
}

impl AddonController<'_> {
    /// The ClusterSummary reconciler's part: each ClusterSummary of the scenario whose features
    /// do not already report `state` with the hash of its current spec gets that status (one
    /// write each, through `/status`); `Provisioned` carries `lastAppliedTime` and is logged
    /// ([`AddonController::deployed`]). A status already at `state` with that hash is not
    /// written again, as addon-controller skips it. Returns the summaries written.
    pub fn report(&self, state: &str) -> Result<Vec<String>, BackendError> {
        let namespace = self.cluster.namespace();
        let mut written = Vec::new();
        for s in self.cluster.list(CLUSTER_SUMMARY, Some(&namespace))? {
            if !self.ours(&s) {
                continue;
            }
            let profile = labels_of(&s)
                .get(CLUSTER_PROFILE_NAME_LABEL)
                .cloned()
                .unwrap_or_default();
            let state = match self.failure(&profile) {
                Some(failed) if state == "Provisioned" => failed,
                _ => state,
            };
            let features = features(&s);
            let current = s
                .pointer("/status/featureSummaries")
                .cloned()
                .unwrap_or_else(|| json!([]));
            let unchanged = state != "Failed"
                && features.iter().all(|(id, hash)| {
                    current.as_array().is_some_and(|list| {
                        list.iter().any(|f| {
                            f["featureID"] == *id && f["hash"] == *hash && f["status"] == state
                        })
                    })
                });
            if unchanged {
                continue;
            }
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let list: Vec<Value> = features
                .iter()
                .map(|(id, hash)| {
                    let mut f = json!({"featureID": id, "status": state, "hash": hash});
                    if state == "Provisioned" {
                        f["lastAppliedTime"] = json!(now);
                    }
                    if state == "Failed" {
                        // addon-controller counts the failures of the same hash in a row.
                        let before = current
                            .as_array()
                            .and_then(|l| l.iter().find(|f| f["featureID"] == *id))
                            .filter(|f| f["hash"] == *hash && f["status"] == "Failed")
                            .and_then(|f| f["consecutiveFailures"].as_u64())
                            .unwrap_or(0);
                        f["failureMessage"] =
                            json!("chart install failed: context deadline exceeded");
                        f["consecutiveFailures"] = json!(before + 1);
                    }
                    if state == "FailedNonRetriable" {
                        f["failureMessage"] = json!(
                            "failed to instantiate template: map has no entry for key \"region\""
                        );
                    }
                    f
                })
                .collect();
            let name = text(&s, "/metadata/name").to_string();
            let key = format!("{namespace}/{name}");
            if state == "Provisioned" {
                // Logged when sent, before the answer: a write the server applied whose answer
                // was lost (a restart mid-request) is a deployment the controller may act on.
                let sent_at = std::time::SystemTime::now();
                let mut log = self
                    .deployed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for (_, hash) in &features {
                    log.push(Deployed {
                        summary: key.clone(),
                        profile: profile.clone(),
                        hash: hash.clone(),
                        chart: text(&s, "/spec/clusterProfileSpec/helmCharts/0/chartVersion")
                            .to_string(),
                        sent_at,
                    });
                }
            }
            self.cluster.put_status(
                CLUSTER_SUMMARY,
                Some(&namespace),
                &name,
                &json!({"featureSummaries": list}),
            )?;
            written.push(key);
        }
        Ok(written)
    }
}

/// The ClusterSummary addon-controller keeps for `profile` on `cluster` (no status yet).
fn summary(profile: &Value, cluster: &Value, session: &str) -> Value {
    let profile_name = text(profile, "/metadata/name");
    let cluster_name = text(cluster, "/metadata/name");
    let spec = profile.get("spec").cloned().unwrap_or_else(|| json!({}));
    json!({
        "apiVersion": CONFIG_API_VERSION,
        "kind": "ClusterSummary",
        "metadata": {
            "name": format!("{profile_name}-sveltos-{cluster_name}"),
            "namespace": text(cluster, "/metadata/namespace"),
            "labels": {
                CLUSTER_PROFILE_NAME_LABEL: profile_name,
                "projectsveltos.io/cluster-name": cluster_name,
                "projectsveltos.io/cluster-type": "Sveltos",
                SESSION_LABEL: session,
            },
            "ownerReferences": [{
                "apiVersion": CONFIG_API_VERSION, "kind": "ClusterProfile", "name": profile_name,
                "uid": text(profile, "/metadata/uid"),
            }],
        },
        "spec": {
            "clusterNamespace": text(cluster, "/metadata/namespace"),
            "clusterName": cluster_name,
            "clusterType": "Sveltos",
            "clusterProfileSpec": spec,
        },
    })
}

/// The features a ClusterSummary's spec uses, each with the double's hash of its spec part (as
/// addon-controller, which hashes the spec's shared members and the feature's list; the double's
/// hash is its own, and changes exactly when those change).
fn features(summary: &Value) -> Vec<(&'static str, String)> {
    let spec = summary
        .pointer("/spec/clusterProfileSpec")
        .cloned()
        .unwrap_or_else(|| json!({}));
    [
        ("helmCharts", "Helm"),
        ("policyRefs", "Resources"),
        ("kustomizationRefs", "Kustomize"),
    ]
    .iter()
    .filter(|(key, _)| {
        spec.get(*key)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
    })
    .map(|(key, feature)| {
        use sha2::Digest;
        let inputs = json!([
            spec.get("syncMode"),
            spec.get("tier"),
            spec.get(*key),
            spec.get("validateHealths")
        ]);
        let digest = sha2::Sha256::digest(inputs.to_string().as_bytes());
        let hash = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, digest);
        (*feature, hash)
    })
    .collect()
}
