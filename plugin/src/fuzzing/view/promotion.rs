//! A ClusterPromotion generated from choices: a spec shaped like the examples' with its stages
//! mutated (names from a pool with collisions, duplicates, empty and non-ASCII names, every kind
//! of trigger and selector) and a status anywhere between none and what Sveltos writes, through
//! statuses Sveltos never writes (stages out of order or unknown, descriptions cut short, the
//! licence failure, hashes that do not match), plus the webhook's audit annotations and now and
//! then the pause annotation with or without its record. Now and then one field gets a value of
//! the wrong type, which the view must refuse with an error.

use serde_json::{json, Map, Value};

use promotion_shared::admission::{APPROVALS_ANNOTATION, SPEC_CHANGE_ANNOTATION};
use promotion_shared::model::{API_VERSION, FINALIZER, KIND};
use promotion_shared::pause::{PAUSED_ANNOTATION, PAUSE_RECORD_ANNOTATION};
use promotion_shared::rollout::stages_hash;
use promotion_shared::status::{descriptions, failures};
use promotion_shared::tree::tree_of;

use crate::fuzzing::choices::Choices;

/// Promotion names; `web` + stage `eu-prod` and `web-eu` + `prod` give the same profile name.
pub const PROMOTION_NAMES: &[&str] = &[
    "kyverno-rollout",
    "web",
    "web-eu",
    "p",
    "",
    "wéb-rollout",
    "a-promotion-name-that-is-exactly-sixty-three-characters-long-xx",
];

/// Stage names: the usual ones first, then names the API server or lint would refuse.
pub const STAGE_NAMES: &[&str] = &[
    "dev",
    "staging",
    "production",
    "prod",
    "eu-prod",
    "eu",
    "qa",
    "",
    "Dev",
    "stäge",
    "dev.1",
    "dev ",
    "a-stage-name-that-is-exactly-sixty-three-characters-long-xxxxxx",
    "\u{202e}ved",
    "line\nbreak",
    "[x]",
    // Valid stage names that YAML 1.1 (go-yaml v2, so kubectl) reads as other types unquoted.
    "on",
    "y",
    "no",
    "null",
    "0777",
    "1e3",
];

/// Times as the API server writes them, and some it does not.
pub const TIMES: &[&str] = &[
    "2026-02-16T07:27:41Z",
    "2026-02-16T07:38:02Z",
    "2026-02-16T07:00:00Z",
    "2026-02-16T09:30:00Z",
    "2026-02-16T08:00:00+01:00",
    "2026-02-16T07:27:41.123456789Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "yesterday",
    "",
];

/// What Sveltos writes into `failureMessage`, and more.
const FAILURE_MESSAGES: &[&str] = &[
    "ClusterSummary kyverno-rollout-dev-sveltos-dev01 is not yet provisioned.",
    failures::LICENSE_REQUIRED,
    "ClusterSummary HelmCharts p-dev-sveltos-c is not in sync.",
    "All matching clusters are successfully deployed.",
    "",
    "license is required to manage ClusterPromotion, and more",
];

const PROFILE_SPECS: &[&str] = &[
    r#"{"syncMode": "Continuous", "helmCharts": [{"repositoryURL": "https://kyverno.github.io/kyverno/",
        "repositoryName": "kyverno", "chartName": "kyverno/kyverno", "chartVersion": "3.6.2",
        "releaseName": "kyverno-latest", "releaseNamespace": "kyverno", "helmChartAction": "Install"}]}"#,
    r#"{"helmCharts": [{"chartName": "kyverno/kyverno", "chartVersion": "3.7.0",
        "releaseName": "kyverno-latest", "releaseNamespace": "kyverno"}]}"#,
    r#"{"policyRefs": [{"kind": "ConfigMap", "name": "cm", "namespace": "default"},
        {"kind": "Secret", "name": "s"}], "tier": 90}"#,
    r#"{"kustomizationRefs": [{"kind": "GitRepository", "name": "repo", "namespace": "flux"}],
        "syncMode": "OneTime"}"#,
    r#"{"validateHealths": [{"name": "pods", "featureID": "Helm", "group": "", "version": "v1",
        "kind": "Pod", "script": "function evaluate() return {healthy=true} end"}]}"#,
    "{}",
    r#"{"helmCharts": [{}, {"chartName": 7}], "policyRefs": "not a list"}"#,
];

const SELECTORS: &[&str] = &[
    r#"{"matchLabels": {"env": "dev"}}"#,
    r#"{"matchLabels": {"env": "prod", "region": "eu"}}"#,
    "{}",
    r#"{"matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]},
        {"key": "legacy", "operator": "DoesNotExist"}]}"#,
    r#"{"matchExpressions": [{"key": "env", "operator": "Near", "values": []}]}"#,
];

const TRIGGERS: &[&str] = &[
    r#"{"auto": {"delay": "2m"}}"#,
    r#"{"manual": {"approved": false, "automaticReset": true}}"#,
    r#"{"manual": {"approved": true}}"#,
    r#"{"manual": {}}"#,
    r#"{"manual": {"approved": true, "automaticReset": false, "delay": "1h",
        "postDelayHealthChecks": [{"name": "ready", "evaluateCEL": [{"name": "r", "rule": "true"}]}]}}"#,
    r#"{"auto": {}}"#,
    r#"{"auto": {"delay": "5m", "promotionWindow": {"from": "0 9 * * 1-5", "to": "0 17 * * 1-5"}}}"#,
    r#"{"auto": {"postDelayHealthChecks": [{"name": "pods"}, {"name": "jobs"}],
        "preHealthCheckDeployment": [{"kind": "ConfigMap", "name": "job", "namespace": "default"}]}}"#,
    r#"{"auto": {"delay": "2m"}, "manual": {"approved": true}}"#,
    "{}",
];

/// The CRD lets any of these be missing; the view must cope.
const NO_TRIGGER: usize = TRIGGERS.len();

/// A generated ClusterPromotion, as the API server would return it (or nearly).
pub fn promotion(c: &mut Choices) -> Value {
    let name = *c.pick(PROMOTION_NAMES);
    let stages = stages(c);
    let names: Vec<String> = stages
        .iter()
        .map(|s| s["name"].as_str().unwrap_or_default().to_string())
        .collect();
    let mut metadata = json!({"name": name});
    if c.chance(70) {
        metadata["uid"] = json!("7d3c2a52-0000-4000-8000-000000000001");
    }
    if c.chance(60) {
        metadata["creationTimestamp"] = json!("2026-02-16T06:00:00Z");
        metadata["generation"] = json!(1 + c.below(9));
    }
    if c.chance(50) {
        metadata["finalizers"] = json!([FINALIZER]);
    }
    let annotations = annotations(c, &names);
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    let mut spec = json!({"stages": stages});
    if c.chance(85) {
        let text = *c.pick(PROFILE_SPECS);
        spec["profileSpec"] = serde_json::from_str(text).unwrap_or(Value::Null);
    }
    let mut object = json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": spec,
    });
    if let Some(status) = status(c, &names, &object) {
        object["status"] = status;
    }
    if c.rarely(8) {
        wrong_type(c, &mut object);
    }
    // Last, so that the choices before it decode as they did before pausing existed; `rarely`,
    // so that an input cut short is not paused.
    if c.rarely(8) {
        pause(c, &mut object);
    }
    object
}

/// The pause annotation (an empty reason or some text), with the webhook's record of this
/// pause, of another one (a resume, another reason), or none.
fn pause(c: &mut Choices, object: &mut Value) {
    let reason = if c.chance(30) {
        String::new()
    } else {
        c.text(20)
    };
    let mut annotations = Map::new();
    annotations.insert(PAUSED_ANNOTATION.into(), json!(reason));
    let record = match c.below(4) {
        0 => Some(
            json!({"paused": true, "user": "alice", "time": "2026-02-16T07:40:00Z",
                         "reason": (!reason.is_empty()).then_some(&reason)}),
        ),
        1 => Some(json!({"paused": false, "user": "bob", "time": "2026-02-16T07:41:00Z"})),
        2 => Some(
            json!({"paused": true, "user": "carol", "time": "2026-02-16T07:42:00Z",
                         "reason": "another reason"}),
        ),
        _ => None,
    };
    if let Some(record) = record {
        // Absent members, not nulls, as the webhook writes the record.
        let record: Map<String, Value> = record
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        annotations.insert(
            PAUSE_RECORD_ANNOTATION.into(),
            json!(Value::Object(record).to_string()),
        );
    }
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    // Annotations of the wrong type (`wrong_type`) stay so.
    if let Some(existing) = metadata
        .entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        existing.extend(annotations);
    }
}

fn stages(c: &mut Choices) -> Vec<Value> {
    let count = match c.below(10) {
        0..=3 => 3,
        4..=5 => 2,
        6 => 1,
        7 => 4,
        8 => 6,
        _ => 0,
    };
    let mut stages: Vec<Value> = Vec::with_capacity(count);
    for i in 0..count {
        // Mostly the usual pipeline; sometimes a name from anywhere in the pool, or a repeat.
        let name = match c.below(8) {
            0..=4 => ["dev", "staging", "production", "eu-prod", "qa", "canary"][i].to_string(),
            5 if i > 0 => stages[c.below(i)]["name"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            _ => c.pick(STAGE_NAMES).to_string(),
        };
        let mut stage = json!({"name": name});
        if c.chance(90) {
            let selector = *c.pick(SELECTORS);
            stage["clusterSelector"] = parse(selector);
        }
        let trigger = c.below(TRIGGERS.len() + 1);
        if trigger != NO_TRIGGER && (i + 1 < count || c.rarely(30)) {
            stage["trigger"] = parse(TRIGGERS[trigger]);
        }
        stages.push(stage);
    }
    stages
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The webhook's audit records: approvals of some stages, the last spec change, or text that
/// is not a record at all.
fn annotations(c: &mut Choices, stages: &[String]) -> Map<String, Value> {
    let mut out = Map::new();
    if c.chance(40) {
        let value = match c.below(4) {
            0 | 1 => {
                let mut records = Map::new();
                for stage in stages {
                    if c.chance(50) {
                        let mut record = json!({"user": "alice", "groups": ["ops"],
                                                "time": c.pick(TIMES)});
                        if c.chance(50) {
                            record["reason"] = json!(c.text(40));
                        }
                        records.insert(stage.clone(), record);
                    }
                }
                Value::Object(records).to_string()
            }
            2 => r#"{"dev": {"user": 5}}"#.to_string(),
            _ => c.text(30),
        };
        out.insert(APPROVALS_ANNOTATION.into(), Value::String(value));
    }
    if c.chance(50) {
        let value = match c.below(3) {
            0 | 1 => json!({"user": "carol", "time": c.pick(TIMES)}).to_string(),
            _ => c.text(30),
        };
        out.insert(SPEC_CHANGE_ANNOTATION.into(), Value::String(value));
    }
    out
}

/// `status`: absent, empty, or the stages Sveltos has reached with their times, descriptions
/// and failures; mostly a prefix of the spec's stages in order, as Sveltos appends them.
fn status(c: &mut Choices, stages: &[String], object: &Value) -> Option<Value> {
    match c.below(10) {
        8 => return None,
        9 => return Some(json!({})),
        _ => {}
    }
    let reached: Vec<String> = match c.below(8) {
        0..=5 => {
            let n = c
                .below(stages.len() + 1)
                .max(usize::from(!stages.is_empty()));
            stages[..n].to_vec()
        }
        6 => Vec::new(),
        _ => (0..1 + c.below(4))
            .map(|_| match c.below(3) {
                0 if !stages.is_empty() => c.pick(stages).clone(),
                _ => c.pick(STAGE_NAMES).to_string(),
            })
            .collect(),
    };
    let last = reached.len().saturating_sub(1);
    let entries: Vec<Value> = reached
        .iter()
        .enumerate()
        .map(|(i, name)| stage_status(c, name, i == last))
        .collect();
    let mut status = json!({"stages": entries});
    match c.below(5) {
        0 | 1 => status["currentStageName"] = json!(reached.last()),
        2 => status["currentStageName"] = json!(c.pick(STAGE_NAMES)),
        _ => {}
    }
    if c.chance(60) {
        status["lastPromotionTime"] = json!(c.pick(TIMES));
    }
    if c.chance(50) {
        status["profileSpecHash"] = json!("q1bY2x3b5w8p3vU0aY3yXkqS6V3WjVQ3V5b6ZcYt7mA=");
    }
    match c.below(6) {
        0..=2 => {
            if let Some(hash) = stages_hash(&tree_of(object)) {
                status["stagesHash"] = json!(hash);
            }
        }
        3 => status["stagesHash"] = json!("bm90IHRoZSBoYXNoIG9mIHRoZXNlIHN0YWdlcw=="),
        _ => {}
    }
    Some(status)
}

fn stage_status(c: &mut Choices, name: &str, frontier: bool) -> Value {
    let mut s = json!({"name": name});
    if c.chance(85) {
        s["lastUpdateReconciledTime"] = json!(c.pick(TIMES));
    }
    // Stages before the frontier are provisioned (Sveltos moved on); the frontier may not be.
    if !frontier || c.chance(70) {
        s["lastSuccessfulAppliedTime"] = json!(c.pick(TIMES));
        s["lastStatusCheckTime"] = json!(c.pick(TIMES));
    }
    if c.rarely(if frontier { 25 } else { 5 }) {
        s["failureMessage"] = json!(c.pick(FAILURE_MESSAGES));
    }
    if c.chance(if frontier { 85 } else { 60 }) {
        s["currentStatusDescription"] = json!(description(c, frontier));
    }
    s
}

/// A `currentStatusDescription`: the texts of addon-controller with their time, and the ways a
/// text can be cut or padded.
fn description(c: &mut Choices, frontier: bool) -> String {
    use descriptions::*;
    let time = *c.pick(TIMES);
    let text = if !frontier && c.chance(80) {
        PROMOTED.to_string()
    } else {
        match c.below(14) {
            0 => PROVISIONING.to_string(),
            1 => ALL_DEPLOYED.to_string(),
            2 => format!("{NO_MATCHING_CLUSTERS}p-dev. Deployment considered complete."),
            3 | 4 => format!("{SOAKING}{time}"),
            5 => RUNNING_CHECKS.to_string(),
            6 => AWAITING_CHECKS.to_string(),
            7 => format!("{WINDOW_CLOSED}{time})."),
            8 | 9 => AWAITING_APPROVAL.to_string(),
            10 => PROMOTED.to_string(),
            11 => SOAKING.to_string(),
            12 => WINDOW_CLOSED.to_string(),
            _ => c.text(24),
        }
    };
    match c.below(6) {
        0..=3 => format!("{text} (2026-02-16T07:38:02Z)"),
        4 => text,
        _ => format!("{text} ({})", c.text(22)),
    }
}

/// One field replaced by a value of another type (or removed), where the typed model reads it.
fn wrong_type(c: &mut Choices, object: &mut Value) {
    const AT: &[&str] = &[
        "/status/stages",
        "/status/stages/0",
        "/status/stages/0/name",
        "/status/stages/0/lastSuccessfulAppliedTime",
        "/status/currentStageName",
        "/status/stagesHash",
        "/status",
        "/spec/stages",
        "/spec/stages/0/name",
        "/spec/stages/0/trigger/manual/approved",
        "/spec/stages/0/clusterSelector",
        "/spec/profileSpec",
        "/metadata/creationTimestamp",
        "/metadata/annotations",
        "/metadata/name",
    ];
    let at = *c.pick(AT);
    let value = c
        .pick(&[
            json!(5),
            json!("x"),
            json!([]),
            json!({}),
            Value::Null,
            json!(true),
            json!(-1.5),
        ])
        .clone();
    let (parent, key) = at.rsplit_once('/').unwrap_or(("", at));
    match object.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key.to_string(), value);
        }
        Some(Value::Array(items)) => {
            if let Some(slot) = key.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                *slot = value;
            }
        }
        _ => {}
    }
}
