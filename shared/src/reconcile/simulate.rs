//! A promotion's rollout on a simulated clock: [`super::decide`] run again and again, with
//! Sveltos played as if every cluster deployed at once and every health check passed, to tell
//! when each stage starts, soaks, waits for a window or an approval, and completes. `plan
//! --timeline` prints it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use serde_with::skip_serializing_none;

use crate::fleet::Cluster;
use crate::model::CLUSTER_PROFILE_NAME_LABEL;
use crate::selector::Selector;

use super::{decide, Decision, Options, Snapshot};

/// One thing that happens in the rollout.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub time: DateTime<Utc>,
    pub stage: String,
    pub what: StepKind,
    /// For waits: until when (a soak's end, a window's opening); absent when open-ended.
    pub until: Option<DateTime<Utc>>,
    /// The clusters the stage deploys to (for `starts`).
    pub clusters: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StepKind {
    /// The stage's ClusterProfile is applied.
    Starts,
    /// Every cluster of the stage is deployed.
    Deployed,
    Soaks,
    WaitsForWindow,
    WaitsForApproval,
    Approved,
    /// The stage's trigger is satisfied (the promotion moves on or completes).
    Passes,
    /// The last stage passed: the rollout is complete.
    Completes,
    /// Nothing more happens without someone acting (an approval that never comes), or the
    /// trigger cannot be satisfied.
    Blocked,
}

/// The simulated rollout.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    pub start: DateTime<Utc>,
    pub steps: Vec<Step>,
    /// When the rollout completes, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completes: Option<DateTime<Utc>>,
    /// The status already shows the rollout complete: `completes` is when it did.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already_complete: bool,
}

/// At most this many reconciles are simulated (a rollout takes a few per stage).
const MAX_RECONCILES: usize = 10_000;

/// Simulate `promotion` (its status, if any, is where it starts) from `start`, with `approvals`
/// giving when each manual gate is approved.
pub fn simulate(
    promotion: &Value,
    fleet: &[Cluster],
    start: DateTime<Utc>,
    approvals: &[(String, DateTime<Utc>)],
    options: &Options,
) -> Timeline {
    let mut snapshot = Snapshot {
        promotion: promotion.clone(),
        profiles: Vec::new(),
        summaries: Vec::new(),
        fleet: Some(fleet.into()),
        revisions: Vec::new(),
    };
    if let Some(meta) = snapshot
        .promotion
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
    {
        meta.entry("uid").or_insert_with(|| json!("simulated"));
    }
    let mut now = start;
    let mut steps: Vec<Step> = Vec::new();
    let mut completes = None;
    let mut already_complete = false;
    for reconcile in 0..MAX_RECONCILES {
        let d = decide(&snapshot, now, options);
        let progressed = play(&mut snapshot, &d, fleet);
        record(&mut steps, &d, &snapshot, now, fleet);
        if d.phase == Some(super::Phase::Complete) {
            let at = steps.last().map_or(now, |last| last.time);
            completes = Some(at);
            already_complete = reconcile == 0 && d.status.is_none();
            push(
                &mut steps,
                at,
                last_stage(&snapshot),
                StepKind::Completes,
                None,
            );
            break;
        }
        if progressed {
            continue;
        }
        let approval = waiting_for_approval(&snapshot).and_then(|stage| {
            approvals
                .iter()
                .find(|(s, _)| *s == stage)
                .map(|(_, t)| (stage, (*t).max(now)))
        });
        match (d.wake_at, approval) {
            (_, Some((stage, at))) if d.wake_at.is_none_or(|w| at <= w) => {
                now = at;
                approve(&mut snapshot, &stage);
                push(&mut steps, now, stage, StepKind::Approved, None);
            }
            (Some(wake), _) if wake > now => now = wake,
            _ => {
                let stage = current_stage(&snapshot).unwrap_or_default();
                push(&mut steps, now, stage, StepKind::Blocked, None);
                break;
            }
        }
    }
    Timeline {
        start,
        steps,
        completes,
        already_complete,
    }
}

fn push(
    steps: &mut Vec<Step>,
    time: DateTime<Utc>,
    stage: String,
    what: StepKind,
    until: Option<DateTime<Utc>>,
) {
    let repeat = steps
        .iter()
        .rev()
        .find(|s| s.stage == stage)
        .is_some_and(|s| s.what == what && s.until == until);
    if !repeat {
        steps.push(Step {
            time,
            stage,
            what,
            until,
            clusters: None,
        });
    }
}

fn current_stage(snapshot: &Snapshot) -> Option<String> {
    snapshot
        .promotion
        .pointer("/status/currentStageName")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn last_stage(snapshot: &Snapshot) -> String {
    snapshot
        .promotion
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .and_then(|s| s.last())
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn description(snapshot: &Snapshot, stage: &str) -> String {
    snapshot
        .promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|s| s["name"] == stage))
        .and_then(|s| s.get("currentStatusDescription"))
        .and_then(Value::as_str)
        .map(|d| crate::status::strip_timestamp(d).to_string())
        .unwrap_or_default()
}

fn waiting_for_approval(snapshot: &Snapshot) -> Option<String> {
    let stage = current_stage(snapshot)?;
    (description(snapshot, &stage) == crate::status::descriptions::AWAITING_APPROVAL)
        .then_some(stage)
}

fn approve(snapshot: &mut Snapshot, stage: &str) {
    if let Some(stages) = snapshot
        .promotion
        .pointer_mut("/spec/stages")
        .and_then(Value::as_array_mut)
    {
        if let Some(s) = stages.iter_mut().find(|s| s["name"] == stage) {
            s["trigger"]["manual"]["approved"] = json!(true);
        }
    }
}

/// Carry a decision out as the controller and Sveltos would, every cluster deploying at once.
/// Returns whether anything changed.
fn play(snapshot: &mut Snapshot, d: &Decision, fleet: &[Cluster]) -> bool {
    let mut changed = false;
    if let Some(status) = &d.status {
        snapshot.promotion["status"] = status.clone();
        changed = true;
    }
    for stage in &d.consume_approvals {
        if let Some(stages) = snapshot
            .promotion
            .pointer_mut("/spec/stages")
            .and_then(Value::as_array_mut)
        {
            for s in stages.iter_mut().filter(|s| s["name"] == stage.as_str()) {
                let reset = s.pointer("/trigger/manual/automaticReset") != Some(&json!(false));
                if let (true, Some(m)) = (
                    reset,
                    s.pointer_mut("/trigger/manual")
                        .and_then(Value::as_object_mut),
                ) {
                    m.remove("approved");
                }
            }
        }
        changed = true;
    }
    for key in &d.delete {
        let before = snapshot.profiles.len();
        snapshot
            .profiles
            .retain(|p| p["metadata"]["name"] != key.name.as_str());
        changed |= snapshot.profiles.len() != before;
    }
    for body in &d.apply {
        let name = body["metadata"]["name"].as_str().unwrap_or("").to_string();
        let selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> =
            serde_json::from_value(body["spec"]["clusterSelector"].clone()).ok();
        let matched: Vec<&Cluster> = match Selector::compile(selector.as_ref()) {
            Ok(sel) if !sel.requirements().is_empty() => fleet
                .iter()
                .filter(|c| c.ready && !c.paused && sel.matches(&c.labels))
                .collect(),
            _ => Vec::new(),
        };
        let mut stored = body.clone();
        stored["status"] = json!({"matchingClusters": matched.iter().map(|c| json!({
            "kind": c.cluster_type.kind(), "namespace": c.namespace, "name": c.name,
        })).collect::<Vec<_>>()});
        snapshot
            .profiles
            .retain(|p| p["metadata"]["name"] != name.as_str());
        snapshot.profiles.push(stored);
        snapshot.summaries.retain(|s| {
            s.pointer(&format!(
                "/metadata/labels/{}",
                CLUSTER_PROFILE_NAME_LABEL.replace('/', "~1")
            )) != Some(&json!(name))
        });
        let mut spec = body["spec"].clone();
        if let Some(m) = spec.as_object_mut() {
            m.remove("clusterSelector");
        }
        let features: Vec<Value> = [
            ("helmCharts", "Helm"),
            ("policyRefs", "Resources"),
            ("kustomizationRefs", "Kustomize"),
        ]
        .iter()
        .filter(|(k, _)| {
            spec.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|l| !l.is_empty())
        })
        .map(|(_, f)| json!({"featureID": f, "status": "Provisioned"}))
        .collect();
        for c in matched {
            snapshot.summaries.push(json!({
                "metadata": {"namespace": c.namespace, "name": format!("{name}-{}-{}", c.cluster_type.kind(), c.name),
                             "labels": {CLUSTER_PROFILE_NAME_LABEL: name}},
                "spec": {"clusterName": c.name, "clusterNamespace": c.namespace,
                         "clusterType": if c.cluster_type.kind() == "Cluster" { "Capi" } else { "Sveltos" },
                         "clusterProfileSpec": spec},
                "status": {"featureSummaries": features},
            }));
        }
        changed = true;
    }
    changed
}

/// What the decision at `now` tells about the stages.
fn record(
    steps: &mut Vec<Step>,
    d: &Decision,
    snapshot: &Snapshot,
    now: DateTime<Utc>,
    fleet: &[Cluster],
) {
    use crate::status::descriptions as text;
    for s in snapshot
        .promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = s["name"].as_str().unwrap_or_default();
        if crate::status::trigger_satisfied(s["currentStatusDescription"].as_str()) {
            // A stage the status already shows passed is dated by its status, not the clock.
            push(
                steps,
                passed_at(s).unwrap_or(now),
                name.to_string(),
                StepKind::Passes,
                None,
            );
        }
    }
    for e in &d.events {
        let Some((step, stage)) = &e.step else {
            continue;
        };
        let stage = stage.as_str();
        let kind = match step {
            super::StageStep::Started => StepKind::Starts,
            super::StageStep::Deployed => StepKind::Deployed,
        };
        steps.push(Step {
            time: now,
            stage: stage.to_string(),
            what: kind,
            until: None,
            clusters: (kind == StepKind::Starts).then(|| stage_clusters(snapshot, stage, fleet)),
        });
    }
    let Some(stage) = current_stage(snapshot) else {
        return;
    };
    let desc = description(snapshot, &stage);
    if desc.starts_with(text::SOAKING) {
        push(steps, now, stage, StepKind::Soaks, d.wake_at);
    } else if desc.starts_with(text::WINDOW_CLOSED) {
        push(steps, now, stage, StepKind::WaitsForWindow, d.wake_at);
    } else if desc == text::AWAITING_APPROVAL {
        push(steps, now, stage, StepKind::WaitsForApproval, None);
    }
}

/// When a stage's status entry says its trigger was satisfied: the time its description was
/// written with.
fn passed_at(stage: &Value) -> Option<DateTime<Utc>> {
    let description = stage["currentStatusDescription"].as_str()?;
    let time = crate::status::description_time(description)?;
    DateTime::parse_from_rfc3339(time)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn stage_clusters(snapshot: &Snapshot, stage: &str, fleet: &[Cluster]) -> usize {
    let selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> = snapshot
        .promotion
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|s| s["name"] == stage))
        .and_then(|s| s.get("clusterSelector"))
        .and_then(|s| serde_json::from_value(s.clone()).ok());
    match Selector::compile(selector.as_ref()) {
        Ok(sel) if !sel.requirements().is_empty() => fleet
            .iter()
            .filter(|c| c.ready && !c.paused && sel.matches(&c.labels))
            .count(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn cluster(name: &str, env: &str) -> Cluster {
        Cluster::ready_sveltos("fleet", name, &[("env", env)])
    }

    fn promotion() -> Value {
        json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
            "metadata": {"name": "p"},
            "spec": {
                "profileSpec": {"syncMode": "Continuous", "tier": 100,
                    "helmCharts": [{"repositoryURL": "https://c", "releaseName": "r",
                                    "releaseNamespace": "n"}]},
                "stages": [
                    {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                     "trigger": {"auto": {"delay": "30m"}}},
                    {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
                     "trigger": {"auto": {"delay": "1h",
                        "promotionWindow": {"from": "0 22 * * *", "to": "0 6 * * *"}}}},
                    {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}},
                     "trigger": {"manual": {}}},
                ]
            }
        })
    }

    fn fleet() -> Vec<Cluster> {
        vec![
            cluster("d1", "dev"),
            cluster("s1", "staging"),
            cluster("s2", "staging"),
            cluster("p1", "prod"),
        ]
    }

    /// The timeline of [`promotion`] over [`fleet`] from 10:00.
    fn timeline(approvals: &[(String, DateTime<Utc>)], options: &Options) -> Timeline {
        simulate(
            &promotion(),
            &fleet(),
            at("2026-03-02T10:00:00Z"),
            approvals,
            options,
        )
    }

    fn kinds(t: &Timeline) -> Vec<(String, &str, StepKind)> {
        t.steps
            .iter()
            .map(|s| (s.time.format("%H:%M").to_string(), s.stage.as_str(), s.what))
            .collect()
    }

    #[test]
    fn stages_start_soak_wait_for_their_window_and_their_approval() {
        let t = timeline(&[], &Options::default());
        use StepKind::*;
        // A stage's steps at one time, in order.
        let expected: Vec<_> = [
            ("10:00", "dev", &[Starts, Deployed, Soaks][..]),
            ("10:30", "dev", &[Passes]),
            ("10:30", "staging", &[Starts, Deployed, Soaks]),
            ("11:30", "staging", &[WaitsForWindow]),
            ("22:00", "staging", &[Passes]),
            (
                "22:00",
                "prod",
                &[Starts, Deployed, WaitsForApproval, Blocked],
            ),
        ]
        .into_iter()
        .flat_map(|(h, s, steps)| steps.iter().map(move |&w| (h.to_string(), s, w)))
        .collect();
        assert_eq!(kinds(&t), expected);
        assert_eq!(t.steps[0].clusters, Some(1));
        assert_eq!(t.steps[4].clusters, Some(2));
        assert_eq!(t.steps[2].until, Some(at("2026-03-02T10:30:00Z")));
        assert_eq!(t.steps[7].until, Some(at("2026-03-02T22:00:01Z")));
        assert_eq!(t.completes, None);
    }

    #[test]
    fn an_approval_at_a_time_completes_the_rollout() {
        let approvals = [("prod".to_string(), at("2026-03-03T09:00:00Z"))];
        let t = timeline(&approvals, &Options::default());
        let tail: Vec<_> = kinds(&t).into_iter().rev().take(3).collect();
        assert_eq!(
            tail,
            vec![
                ("09:00".to_string(), "prod", StepKind::Completes),
                ("09:00".to_string(), "prod", StepKind::Passes),
                ("09:00".to_string(), "prod", StepKind::Approved),
            ]
        );
        assert_eq!(t.completes, Some(at("2026-03-03T09:00:00Z")));
    }

    #[test]
    fn an_approval_given_early_is_used_when_the_gate_is_reached() {
        let approvals = [("prod".to_string(), at("2026-03-02T10:05:00Z"))];
        let t = timeline(&approvals, &Options::default());
        assert_eq!(t.completes, Some(at("2026-03-02T22:00:01Z")));
    }

    #[test]
    fn windows_follow_the_time_zone() {
        let options = Options {
            window_zone: chrono_tz::Europe::Paris,
        };
        let t = timeline(&[], &options);
        let window = t
            .steps
            .iter()
            .find(|s| s.what == StepKind::WaitsForWindow)
            .unwrap();
        // 22:00 in Paris (UTC+1 in March) is 21:00 UTC; open from the second after.
        assert_eq!(window.until, Some(at("2026-03-02T21:00:01Z")));
    }
}
