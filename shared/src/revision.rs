//! Which add-on configuration a stage runs: the spec of its ClusterProfile, told apart from the
//! promotion's `spec.profileSpec`. After a spec change restarts the pipeline, every stage keeps
//! the profile of the rollout that last reached it until the new rollout gets there, so stages run
//! different versions at once; `describe` shows each stage's, and the rollout history reuses the
//! same words for what changed between two revisions.
//!
//! A configuration is compared as Sveltos hashes `spec.profileSpec` (the CRD's defaults applied,
//! lists sorted as Sveltos sorts them, `docs/reference/promotion-controller.md` §5), leaving out
//! what the reconciler adds per stage: the cluster selector and the health checks
//! (`validateHealths`, to which post-delay checks are appended).

use serde::Serialize;
use serde_json::Value;

use crate::tree::tree_of;

/// What a configuration deploys, in a few words per item.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deploys {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub helm_charts: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policy_refs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kustomization_refs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_mode: Option<String>,
}

impl Deploys {
    /// What the profile spec `spec` (a promotion's `spec.profileSpec`, or a ClusterProfile's
    /// `spec`) deploys.
    pub fn of(spec: Option<&Value>) -> Deploys {
        let list = |key: &str| -> Vec<Value> {
            spec.and_then(|s| s.get(key))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        Deploys {
            helm_charts: list("helmCharts").iter().map(chart).collect(),
            policy_refs: list("policyRefs").iter().map(reference).collect(),
            kustomization_refs: list("kustomizationRefs").iter().map(reference).collect(),
            sync_mode: spec
                .and_then(|s| s.get("syncMode"))
                .and_then(Value::as_str)
                .map(String::from),
        }
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `kyverno/kyverno 3.6.2 as kyverno/kyverno-latest`.
fn chart(c: &Value) -> String {
    let mut out = text(c, "chartName").to_string();
    let version = text(c, "chartVersion");
    if !version.is_empty() {
        out.push(' ');
        out.push_str(version);
    }
    format!(
        "{out} as {}/{}",
        text(c, "releaseNamespace"),
        text(c, "releaseName")
    )
}

/// `ConfigMap ns/name`, or `Kind name` without a namespace.
fn reference(r: &Value) -> String {
    let ns = text(r, "namespace");
    if ns.is_empty() {
        format!("{} {}", text(r, "kind"), text(r, "name"))
    } else {
        format!("{} {ns}/{}", text(r, "kind"), text(r, "name"))
    }
}

/// A profile spec as Sveltos hashes it, without the per-stage members. `None` when it cannot be
/// encoded as Sveltos would (a member of the wrong type).
fn identity(spec: Option<&Value>) -> Option<String> {
    let mut spec = spec.cloned().unwrap_or(Value::Null);
    if let Some(map) = spec.as_object_mut() {
        map.remove("clusterSelector");
        map.remove("validateHealths");
    }
    let spec = crate::freshness::with_defaults(spec);
    let object = serde_json::json!({"spec": {"profileSpec": spec}});
    crate::rollout::profile_spec_json(&tree_of(&object))
        .ok()
        .map(|(json, _)| json)
}

/// Whether the ClusterProfile `profile` deploys the promotion's `spec.profileSpec`; `None` when
/// either cannot be compared.
pub fn runs_the_spec(profile: &Value, promotion: &Value) -> Option<bool> {
    Some(identity(profile.get("spec"))? == identity(promotion.pointer("/spec/profileSpec"))?)
}

/// What differs between two configurations, in one line: chart versions first
/// (`kyverno/kyverno 3.6.2 → 3.6.1`), then charts and references added (`+`) or removed (`-`),
/// then the sync mode; "other settings" when they differ only elsewhere (values, patches, …);
/// empty when they deploy the same.
pub fn change(from: Option<&Value>, to: Option<&Value>) -> String {
    let charts = |spec: Option<&Value>| -> Vec<(String, String, String)> {
        spec.and_then(|s| s.get("helmCharts"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    format!("{}/{}", text(c, "releaseNamespace"), text(c, "releaseName")),
                    text(c, "chartName").to_string(),
                    text(c, "chartVersion").to_string(),
                )
            })
            .collect()
    };
    let (before, after) = (charts(from), charts(to));
    let mut parts = Vec::new();
    for (release, name, version) in &after {
        match before.iter().find(|(r, _, _)| r == release) {
            Some((_, old_name, old)) if old_name == name && old != version => {
                parts.push(format!("{name} {old} → {version}"))
            }
            Some((_, old_name, old)) if old_name != name => {
                parts.push(format!("{old_name} {old} → {name} {version}"))
            }
            Some(_) => {}
            None => parts.push(format!("+{name} {version}").trim_end().to_string()),
        }
    }
    for (release, name, version) in &before {
        if !after.iter().any(|(r, _, _)| r == release) {
            parts.push(format!("-{name} {version}").trim_end().to_string());
        }
    }
    let (a, b) = (Deploys::of(from), Deploys::of(to));
    for (old, new) in [
        (&a.policy_refs, &b.policy_refs),
        (&a.kustomization_refs, &b.kustomization_refs),
    ] {
        parts.extend(
            new.iter()
                .filter(|r| !old.contains(r))
                .map(|r| format!("+{r}")),
        );
        parts.extend(
            old.iter()
                .filter(|r| !new.contains(r))
                .map(|r| format!("-{r}")),
        );
    }
    if a.sync_mode != b.sync_mode {
        parts.push(format!(
            "syncMode {} → {}",
            a.sync_mode.as_deref().unwrap_or("(default)"),
            b.sync_mode.as_deref().unwrap_or("(default)")
        ));
    }
    if parts.is_empty() && identity(from) != identity(to) {
        parts.push("other settings".into());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(version: &str) -> Value {
        json!({"syncMode": "Continuous", "helmCharts": [{
            "repositoryURL": "https://kyverno.github.io/kyverno/", "repositoryName": "kyverno",
            "chartName": "kyverno/kyverno", "chartVersion": version,
            "releaseName": "kyverno-latest", "releaseNamespace": "kyverno",
            "helmChartAction": "Install"}]})
    }

    #[test]
    fn a_stage_profile_runs_the_spec_whatever_the_reconciler_adds_per_stage() {
        let promotion = json!({"spec": {"profileSpec": spec("3.6.2")}});
        let mut profile = json!({"spec": spec("3.6.2")});
        profile["spec"]["clusterSelector"] = json!({"matchLabels": {"env": "dev"}});
        profile["spec"]["validateHealths"] = json!([{"name": "post", "featureID": "Helm"}]);
        // The API server's defaults on the stored profile change nothing.
        profile["spec"]["tier"] = json!(100);
        profile["spec"]["stopMatchingBehavior"] = json!("WithdrawPolicies");
        assert_eq!(runs_the_spec(&profile, &promotion), Some(true));
        let older = json!({"spec": spec("3.6.1")});
        assert_eq!(runs_the_spec(&older, &promotion), Some(false));
        let values = json!({"spec": {"helmCharts": [{"chartName": "kyverno/kyverno",
            "chartVersion": "3.6.2", "releaseName": "kyverno-latest", "releaseNamespace": "kyverno",
            "repositoryURL": "https://kyverno.github.io/kyverno/", "repositoryName": "kyverno",
            "helmChartAction": "Install", "values": "replicas: 3"}], "syncMode": "Continuous"}});
        assert_eq!(runs_the_spec(&values, &promotion), Some(false));
    }

    #[test]
    fn a_change_is_said_in_one_line() {
        let (a, b) = (spec("3.6.1"), spec("3.6.2"));
        assert_eq!(change(Some(&a), Some(&b)), "kyverno/kyverno 3.6.1 → 3.6.2");
        assert_eq!(change(Some(&a), Some(&a)), "");
        let mut refs = b.clone();
        refs["policyRefs"] = json!([{"kind": "ConfigMap", "namespace": "default", "name": "p"}]);
        refs["syncMode"] = json!("ContinuousWithDriftDetection");
        assert_eq!(
            change(Some(&a), Some(&refs)),
            "kyverno/kyverno 3.6.1 → 3.6.2, +ConfigMap default/p, syncMode Continuous → \
             ContinuousWithDriftDetection"
        );
        assert_eq!(
            change(Some(&b), Some(&json!({}))),
            "-kyverno/kyverno 3.6.2, syncMode Continuous → (default)"
        );
        let mut values = a.clone();
        values["helmCharts"][0]["values"] = json!("replicas: 3");
        assert_eq!(change(Some(&a), Some(&values)), "other settings");
    }
}
