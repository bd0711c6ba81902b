//! What the cluster reports about a promotion, generated from choices: the ClusterProfiles
//! Sveltos generates (with the right labels, annotation and owner, or another promotion's, or
//! none; with the current `profileSpec`, a previous one, or junk; with matching clusters), other
//! promotions' profiles whose names collide, the ClusterSummaries of those profiles (every
//! feature status, failure messages, missing parts), and Events. Each list may also be
//! unreadable, as when RBAC forbids it.

use serde_json::{json, Value};

use promotion_shared::model::{
    API_VERSION, CLUSTER_PROFILE_NAME_LABEL, KIND, PROMOTION_NAME_LABEL, STAGE_NAME_ANNOTATION,
};

use super::promotion::{PROMOTION_NAMES, STAGE_NAMES, TIMES};
use crate::fuzzing::choices::Choices;

/// Objects read, or why they could not be read (`""`: not read at all).
pub type Read = Result<Vec<Value>, String>;

const FORBIDDEN: &str = "forbidden (403): you cannot list them";

const CLUSTERS: &[(&str, &str)] = &[
    ("dev", "dev01"),
    ("dev", "dev02"),
    ("prod", "prod33"),
    ("staging", "stg01"),
    ("", ""),
];

const FEATURE_STATUSES: &[&str] = &[
    "Provisioned",
    "Provisioning",
    "Failed",
    "Provisioned",
    "Failed",
    "FailedNonRetriable",
    "FailedNonRetriable",
    "Removed",
    "",
];

/// The parts of a promotion object the cluster data refers to, read leniently (the object may
/// have any shape).
struct Facts<'a> {
    name: &'a str,
    uid: Option<&'a str>,
    stages: Vec<&'a Value>,
    profile_spec: Value,
}

impl<'a> Facts<'a> {
    fn of(object: &'a Value) -> Self {
        Facts {
            name: object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
            uid: object.pointer("/metadata/uid").and_then(Value::as_str),
            stages: object
                .pointer("/spec/stages")
                .and_then(Value::as_array)
                .map(|s| s.iter().collect())
                .unwrap_or_default(),
            profile_spec: object
                .pointer("/spec/profileSpec")
                .filter(|s| s.is_object())
                .cloned()
                .unwrap_or_else(|| json!({})),
        }
    }
}

fn stage_name(stage: &Value) -> &str {
    stage.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The ClusterProfiles a `list` of profiles labelled with a promotion name would return.
pub fn profiles(c: &mut Choices, object: &Value) -> Read {
    match c.below(16) {
        14 => return Err(String::new()),
        15 => return Err(FORBIDDEN.into()),
        _ => {}
    }
    let facts = Facts::of(object);
    // Most promotions own every stage profile they have, as Sveltos writes them, and meet no
    // other's: a profile that is not the promotion's fails its stage, so without these a
    // pipeline would seldom get to complete.
    let faithful = c.chance(90);
    let mut out = Vec::new();
    for stage in &facts.stages {
        if c.chance(80) {
            out.push(stage_profile(c, &facts, stage, faithful));
        }
    }
    // Another promotion's profiles, whose names may collide with this one's (not for a
    // faithful promotion, whose profiles are all its own).
    let foreign = c.below(4).saturating_sub(1);
    for _ in 0..if faithful { 0 } else { foreign } {
        out.push(foreign_profile(c));
    }
    Ok(out)
}

fn stage_profile(c: &mut Choices, facts: &Facts, stage: &Value, faithful: bool) -> Value {
    let stage_name = stage_name(stage);
    let mut spec = facts.profile_spec.clone();
    // A faithful profile holds the promotion's current spec.
    match if faithful { 0 } else { c.below(8) } {
        0..=5 => {}
        // The previous rollout's spec, before a change.
        6 => {
            spec["helmCharts"] = json!([{"chartName": "kyverno/kyverno", "chartVersion": "3.0.0",
                                        "releaseName": "kyverno-latest", "releaseNamespace": "kyverno"}])
        }
        _ => spec = json!("junk"),
    }
    if let Value::Object(map) = &mut spec {
        map.insert(
            "clusterSelector".into(),
            stage.get("clusterSelector").cloned().unwrap_or(Value::Null),
        );
        if c.chance(50) {
            // The CRD's defaults, which the promotion's own profileSpec may lack.
            for (k, v) in [
                ("syncMode", json!("Continuous")),
                ("tier", json!(100)),
                ("continueOnConflict", json!(false)),
                ("stopMatchingBehavior", json!("WithdrawPolicies")),
            ] {
                map.entry(k).or_insert(v);
            }
        }
        // Sveltos appends a stage's post-delay health checks once the delay has passed.
        let checks = ["auto", "manual"].iter().find_map(|t| {
            stage
                .pointer(&format!("/trigger/{t}/postDelayHealthChecks"))
                .and_then(Value::as_array)
        });
        if let (Some(checks), true) = (checks, c.chance(50)) {
            let entry = map.entry("validateHealths").or_insert_with(|| json!([]));
            if let Value::Array(list) = entry {
                list.extend(checks.iter().cloned());
            }
        }
    }
    let mut metadata = json!({"name": format!("{}-{stage_name}", facts.name)});
    let owner = |name: &str, uid: Option<&str>| {
        json!({"apiVersion": API_VERSION, "kind": KIND, "name": name, "uid": uid,
               "controller": true})
    };
    if faithful {
        metadata["labels"] = json!({PROMOTION_NAME_LABEL: facts.name});
        metadata["annotations"] = json!({STAGE_NAME_ANNOTATION: stage_name});
        metadata["ownerReferences"] = json!([owner(facts.name, facts.uid)]);
        return profile_of(c, metadata, spec);
    }
    match c.below(8) {
        0..=5 => metadata["labels"] = json!({PROMOTION_NAME_LABEL: facts.name}),
        6 => metadata["labels"] = json!({PROMOTION_NAME_LABEL: c.pick(PROMOTION_NAMES)}),
        _ => {}
    }
    match c.below(8) {
        0..=5 => metadata["annotations"] = json!({STAGE_NAME_ANNOTATION: stage_name}),
        6 => metadata["annotations"] = json!({STAGE_NAME_ANNOTATION: c.pick(STAGE_NAMES)}),
        _ => {}
    }
    match c.below(10) {
        0..=6 => metadata["ownerReferences"] = json!([owner(facts.name, facts.uid)]),
        7 => metadata["ownerReferences"] = json!([owner(facts.name, Some("another-uid"))]),
        8 => {
            let other = *c.pick(PROMOTION_NAMES);
            metadata["ownerReferences"] = json!([owner(other, None)]);
        }
        _ => {}
    }
    profile_of(c, metadata, spec)
}

/// A stage ClusterProfile with this metadata and spec, matching a few clusters.
fn profile_of(c: &mut Choices, metadata: Value, spec: Value) -> Value {
    let matching: Vec<Value> = (0..c.below(4)).map(|_| cluster_reference(c)).collect();
    json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterProfile",
        "metadata": metadata,
        "spec": spec,
        "status": {"matchingClusters": matching},
    })
}

/// Another promotion's stage profile: its name may be the one this promotion's stage needs.
fn foreign_profile(c: &mut Choices) -> Value {
    let promotion = *c.pick(PROMOTION_NAMES);
    let stage = *c.pick(STAGE_NAMES);
    json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterProfile",
        "metadata": {
            "name": format!("{promotion}-{stage}"),
            "labels": {PROMOTION_NAME_LABEL: promotion},
            "annotations": {STAGE_NAME_ANNOTATION: stage},
            "ownerReferences": [{"apiVersion": API_VERSION, "kind": KIND, "name": promotion}],
        },
        "spec": {"clusterSelector": {"matchLabels": {"env": stage}}},
        "status": {"matchingClusters": [cluster_reference(c)]},
    })
}

/// An entry of `status.matchingClusters` (a `corev1.ObjectReference`).
fn cluster_reference(c: &mut Choices) -> Value {
    let (namespace, name) = *c.pick(CLUSTERS);
    let kind = *c.pick(&["SveltosCluster", "Cluster", "Secret"]);
    let mut r = json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": kind,
                       "namespace": namespace, "name": name});
    if c.rarely(5) {
        r = json!({"kind": kind});
    }
    r
}

/// ClusterSummaries of the stage profiles (and of some other profiles), whether or not the
/// profiles themselves were readable.
pub fn summaries(c: &mut Choices, object: &Value, profiles: &Read) -> Read {
    if c.below(16) == 15 {
        return Err(FORBIDDEN.into());
    }
    let facts = Facts::of(object);
    let mut names: Vec<String> = facts
        .stages
        .iter()
        .map(|s| format!("{}-{}", facts.name, stage_name(s)))
        .collect();
    if let Ok(profiles) = profiles {
        names.extend(
            profiles
                .iter()
                .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
                .map(String::from),
        );
    }
    names.dedup();
    let mut out = Vec::new();
    for profile in &names {
        for _ in 0..c.below(4) {
            out.push(summary(c, &facts, profile));
        }
    }
    Ok(out)
}

fn summary(c: &mut Choices, facts: &Facts, profile: &str) -> Value {
    let (namespace, cluster) = *c.pick(CLUSTERS);
    let mut labels = json!({CLUSTER_PROFILE_NAME_LABEL: profile});
    match c.below(4) {
        0 | 1 => labels[PROMOTION_NAME_LABEL] = json!(facts.name),
        2 => labels[PROMOTION_NAME_LABEL] = json!(c.pick(PROMOTION_NAMES)),
        _ => {}
    }
    let features: Vec<Value> = (0..c.below(4))
        .map(|_| {
            let mut f = json!({
                "featureID": c.pick(&["Helm", "Resources", "Kustomize"]),
                "status": c.pick(FEATURE_STATUSES),
            });
            if c.rarely(30) {
                f["failureMessage"] = json!(c.pick(&[
                    "replicas: Invalid value: \"string\": must be an integer",
                    "",
                    "chart not found"
                ]));
            }
            if c.chance(30) {
                f["lastAppliedTime"] = json!(c.pick(TIMES));
            }
            if c.rarely(5) {
                f["status"] = json!(3);
            }
            f
        })
        .collect();
    let mut status = json!({"featureSummaries": features});
    if c.rarely(15) {
        status["failureMessage"] = json!("cluster unreachable");
        status["failureCount"] = json!(c.below(5));
    }
    let mut s = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterSummary",
        "metadata": {"name": format!("{profile}-sveltos-{cluster}"), "namespace": namespace,
                     "labels": labels},
        "spec": {"clusterNamespace": namespace, "clusterName": cluster,
                 "clusterType": c.pick(&["Sveltos", "Capi"])},
        "status": status,
    });
    if c.rarely(5) {
        if let Some(map) = s.as_object_mut() {
            map.remove(if c.chance(50) { "spec" } else { "status" });
        }
    }
    s
}

/// Events about the promotion, in the events.k8s.io or the core v1 shape.
pub fn events(c: &mut Choices, object: &Value) -> Read {
    match c.below(12) {
        10 => return Err(String::new()),
        11 => return Err(FORBIDDEN.into()),
        _ => {}
    }
    let name = Facts::of(object).name;
    Ok((0..c.below(4))
        .map(|_| {
            let mut e = json!({
                "type": c.pick(&["Normal", "Warning"]),
                "reason": "Sveltos",
                "regarding": {"kind": KIND, "name": name},
            });
            let message = format!("Provisioning stage {}", c.pick(STAGE_NAMES));
            if c.chance(50) {
                e["note"] = json!(message);
                e["eventTime"] = json!(c.pick(TIMES));
                e["reportingController"] = json!("addon-controller");
            } else {
                e["message"] = json!(message);
                e["lastTimestamp"] = json!(c.pick(TIMES));
                e["count"] = json!(c.below(5));
                e["source"] = json!({"component": "clusterpromotion"});
            }
            if c.rarely(20) {
                e["series"] = json!({"count": 3, "lastObservedTime": c.pick(TIMES)});
            }
            e
        })
        .collect())
}
