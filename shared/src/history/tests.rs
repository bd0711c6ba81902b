use serde_json::{json, Value};

use super::*;
use crate::rollout::identity_of;

pub(crate) const NOW: &str = "2026-03-02T10:00:00Z";

/// A promotion rolling chart `version`, its status at the stages `reached` (each deployed at
/// 09:00), the last one `promoted` (passed its gate) or not.
pub(crate) fn promotion(version: &str, reached: &[&str], promoted: bool) -> Value {
    let mut p = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "kyverno", "uid": "u-1"},
        "spec": {
            "profileSpec": {"helmCharts": [{"repositoryURL": "https://kyverno.github.io/kyverno/",
                "repositoryName": "kyverno", "chartName": "kyverno/kyverno",
                "chartVersion": version, "releaseName": "kyverno", "releaseNamespace": "kyverno",
                "helmChartAction": "Install"}]},
            "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}},
            ],
        },
    });
    let id = identity_of(&p).unwrap().id;
    let stages: Vec<Value> = reached
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let description = if i + 1 < reached.len() || promoted {
                "Successfully provisioned (2026-03-02T09:00:00Z)"
            } else {
                "Clusters are being provisioned (2026-03-02T09:00:00Z)"
            };
            json!({"name": name, "lastSuccessfulAppliedTime": "2026-03-02T09:00:00Z",
                   "currentStatusDescription": description})
        })
        .collect();
    p["status"] = json!({"stagesHash": id.stages_hash, "profileSpecHash": id.profile_spec_hash,
                         "currentStageName": reached.last().copied().unwrap_or("dev"),
                         "stages": stages});
    p
}

/// Carry `writes` out on `revisions`, as the API server would.
pub(crate) fn apply(revisions: &mut Vec<Revision>, writes: &[Write]) {
    for w in writes {
        match w {
            Write::Create(object) => revisions.push(Revision::decode(object).unwrap()),
            Write::Record {
                name,
                record,
                number,
            } => {
                let r = revisions.iter_mut().find(|r| &r.name == name).unwrap();
                r.record = Some((**record).clone());
                if let Some(n) = number {
                    r.number = *n;
                }
            }
            Write::Delete { name } => revisions.retain(|r| &r.name != name),
        }
    }
}

pub(crate) fn numbers(revisions: &[Revision]) -> Vec<i64> {
    let mut n: Vec<i64> = revisions.iter().map(|r| r.number).collect();
    n.sort();
    n
}

#[test]
fn a_rollout_gets_a_revision_that_records_its_progress() {
    let mut revisions = Vec::new();
    let p = promotion("3.6.2", &["dev"], false);
    let writes = plan(&p, &revisions, Vec::new(), 10, "ns", NOW);
    let [Write::Create(object)] = writes.as_slice() else {
        panic!("{writes:?}");
    };
    assert_eq!(object["kind"], "ControllerRevision");
    assert_eq!(object["metadata"]["namespace"], "ns");
    assert_eq!(object["metadata"]["labels"][PROMOTION_UID_LABEL], "u-1");
    assert_eq!(object["revision"], 1);
    assert_eq!(
        object["data"]["profileSpec"]["helmCharts"][0]["chartVersion"],
        "3.6.2"
    );
    apply(&mut revisions, &writes);
    let record = revisions[0].record.clone().unwrap();
    assert_eq!(record.outcome(), "in progress");
    assert_eq!(record.stages.len(), 1);
    assert_eq!(
        record.stages[0].deployed.as_deref(),
        Some("2026-03-02T09:00:00Z")
    );
    // Nothing new: nothing written.
    assert!(plan(&p, &revisions, Vec::new(), 10, "ns", NOW).is_empty());
    // prod reached and passed: complete.
    let done = promotion("3.6.2", &["dev", "prod"], true);
    let writes = plan(
        &done,
        &revisions,
        Vec::new(),
        10,
        "ns",
        "2026-03-02T10:05:00Z",
    );
    apply(&mut revisions, &writes);
    let record = revisions[0].record.clone().unwrap();
    assert_eq!(record.outcome(), "complete");
    assert_eq!(
        (
            record.stages[0].reached.as_str(),
            record.stages[1].reached.as_str()
        ),
        (NOW, "2026-03-02T10:05:00Z"),
        "each stage when it was first seen reached"
    );
}

#[test]
fn a_new_rollout_supersedes_the_last_and_history_keeps_the_limit() {
    let mut revisions = Vec::new();
    for i in 0..12 {
        let p = promotion(&format!("3.6.{i}"), &["dev", "prod"], true);
        let writes = plan(&p, &revisions, Vec::new(), 10, "ns", NOW);
        apply(&mut revisions, &writes);
    }
    assert_eq!(numbers(&revisions), (3..=12).collect::<Vec<_>>());
    let eleven = revisions.iter().find(|r| r.number == 11).unwrap();
    assert_eq!(
        eleven.record.as_ref().unwrap().outcome(),
        "superseded by 12"
    );
    // A rollout stopped at dev: prod still runs revision 12, which stays with the newest
    // complete one whatever the limit.
    let p = promotion("4.0.0", &["dev"], false);
    let writes = plan(&p, &revisions, Vec::new(), 1, "ns", NOW);
    apply(&mut revisions, &writes);
    assert_eq!(numbers(&revisions), [12, 13]);
}

#[test]
fn a_rollout_that_comes_back_is_renumbered_as_the_newest() {
    let mut revisions = Vec::new();
    for version in ["3.6.2", "3.6.3", "3.6.2"] {
        let p = promotion(version, &["dev"], false);
        let writes = plan(&p, &revisions, Vec::new(), 10, "ns", NOW);
        apply(&mut revisions, &writes);
    }
    assert_eq!(numbers(&revisions), [2, 3]);
    let back = revisions.iter().find(|r| r.number == 3).unwrap();
    assert_eq!(
        back.data["profileSpec"]["helmCharts"][0]["chartVersion"],
        "3.6.2"
    );
    assert_eq!(back.record.as_ref().unwrap().outcome(), "in progress");
    let two = revisions.iter().find(|r| r.number == 2).unwrap();
    assert_eq!(two.record.as_ref().unwrap().outcome(), "superseded by 3");
}

/// An undo sets the spec back to an earlier revision: that rollout comes back, renumbered, and
/// its new run says which revision it restored (the webhook's spec-change record of the undo).
#[test]
fn an_undo_is_a_new_run_that_says_which_revision_it_restored() {
    use crate::admission::{SpecChangeRecord, SPEC_CHANGE_ANNOTATION};
    let mut revisions = Vec::new();
    for version in ["3.6.2", "3.6.3"] {
        let p = promotion(version, &["dev"], false);
        let writes = plan(&p, &revisions, Vec::new(), 10, "ns", NOW);
        apply(&mut revisions, &writes);
    }
    let mut undone = promotion("3.6.2", &["dev"], false);
    let change = |restored: Option<i64>| SpecChangeRecord {
        user: "dora".into(),
        time: "2026-03-02T09:30:00Z".into(),
        rollout: Some(identity_of(&undone).unwrap().id),
        restored_revision: restored,
    };
    undone["metadata"]["annotations"] =
        json!({SPEC_CHANGE_ANNOTATION: serde_json::to_string(&change(Some(1))).unwrap()});
    let writes = plan(&undone, &revisions, Vec::new(), 10, "ns", NOW);
    apply(&mut revisions, &writes);
    assert_eq!(numbers(&revisions), [2, 3]);
    let back = revisions.iter().find(|r| r.number == 3).unwrap();
    let record = back.record.as_ref().unwrap();
    assert_eq!(
        (
            record.started_by.as_deref(),
            record.started.as_str(),
            record.restored_revision
        ),
        (Some("dora"), "2026-03-02T09:30:00Z", Some(1))
    );
    // A run started by an ordinary change restores nothing.
    let two = revisions.iter().find(|r| r.number == 2).unwrap();
    assert_eq!(two.record.as_ref().unwrap().restored_revision, None);
    let text = serde_json::to_value(record).unwrap();
    assert_eq!(text["restoredRevision"], 1, "{text}");
}

#[test]
fn nothing_is_recorded_before_the_status_follows_the_spec() {
    let mut p = promotion("3.6.2", &["dev"], false);
    p["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.6.3");
    assert!(plan(&p, &[], Vec::new(), 10, "ns", NOW).is_empty());
    let mut fresh = promotion("3.6.2", &[], false);
    fresh.as_object_mut().unwrap().remove("status");
    assert!(plan(&fresh, &[], Vec::new(), 10, "ns", NOW).is_empty());
}

/// An abort and a rollback are the run's outcome; the stages the rollback lists are not taken
/// for the run's own progress; a retry lifts it.
#[test]
fn a_rollback_is_the_outcome_of_its_run_until_retried() {
    use crate::abort::{AbortRequest, ABORT_ANNOTATION, ABORT_RECORD_ANNOTATION};
    let mut revisions = Vec::new();
    let step = |revisions: &mut Vec<Revision>, p: &Value, now: &str| {
        let writes = plan(p, revisions, Vec::new(), 10, "ns", now);
        apply(revisions, &writes);
    };
    step(
        &mut revisions,
        &promotion("3.6.2", &["dev", "prod"], true),
        NOW,
    );
    let bad = promotion("3.7.0", &["dev"], false);
    step(&mut revisions, &bad, NOW);
    let id = identity_of(&bad).unwrap().id;
    let request = AbortRequest {
        stages_hash: id.stages_hash,
        profile_spec_hash: id.profile_spec_hash,
        rollback_to: Some(1),
        reason: None,
    }
    .to_annotation();
    let mut rolling = bad.clone();
    rolling["metadata"]["annotations"] = json!({
        ABORT_ANNOTATION: request,
        ABORT_RECORD_ANNOTATION: json!({"aborted": true, "user": "alice",
            "time": "2026-03-02T09:59:00Z", "request": request}).to_string(),
    });
    rolling["status"]["stages"] = json!([
        {"name": "dev", "currentStatusDescription": "Rolled back to revision 1 (2026-03-02T10:00:00Z)"},
        {"name": "prod", "currentStatusDescription": "Rolling back to revision 1 (2026-03-02T10:00:00Z)"},
    ]);
    step(&mut revisions, &rolling, NOW);
    let record = |revisions: &[Revision]| {
        revisions
            .iter()
            .find(|r| r.number == 2)
            .and_then(|r| r.record.clone())
            .unwrap()
    };
    let r = record(&revisions);
    assert_eq!(r.outcome(), "rolling back to 1 by alice");
    let reached: Vec<&str> = r.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(reached, ["dev"], "prod is the rollback's, not the run's");
    rolling["status"]["stages"][1]["currentStatusDescription"] =
        json!("Rolled back to revision 1 (2026-03-02T10:01:00Z)");
    step(&mut revisions, &rolling, "2026-03-02T10:01:00Z");
    assert_eq!(record(&revisions).outcome(), "rolled back to 1 by alice");
    // Retried: the run goes on; the rollback stays in its record, lifted.
    let mut retried = rolling.clone();
    retried["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(ABORT_ANNOTATION);
    step(&mut revisions, &retried, "2026-03-02T10:05:00Z");
    let r = record(&revisions);
    assert_eq!(r.outcome(), "in progress");
    assert_eq!(
        r.aborted.and_then(|a| a.retried).as_deref(),
        Some("2026-03-02T10:05:00Z")
    );
}

fn rollout(stages: &str, profile: &str) -> RolloutId {
    RolloutId {
        stages_hash: stages.into(),
        profile_spec_hash: profile.into(),
    }
}

fn revision(number: i64, run: &RolloutId, reached: &[&str], completed: bool) -> Revision {
    Revision {
        name: format!("p-{number}"),
        number,
        data: json!({}),
        record: Some(Record {
            stages_hash: run.stages_hash.clone(),
            profile_spec_hash: run.profile_spec_hash.clone(),
            started: "2026-11-01T00:00:00Z".into(),
            stages: reached
                .iter()
                .map(|s| StageRecord {
                    name: s.to_string(),
                    reached: "2026-11-01T00:00:00Z".into(),
                    deployed: Some("2026-11-01T00:01:00Z".into()),
                })
                .collect(),
            completed: completed.then(|| "2026-11-01T01:00:00Z".to_string()),
            ..Record::default()
        }),
    }
}

#[test]
fn the_default_target_is_the_newest_complete_revision_of_the_same_stages() {
    let current = rollout("s", "p4");
    let revisions = vec![
        revision(1, &rollout("s", "p1"), &["dev", "prod"], true),
        revision(2, &rollout("s", "p2"), &["dev", "prod"], true),
        revision(3, &rollout("s", "p3"), &["dev"], false),
        revision(4, &current, &["dev"], false),
        revision(5, &rollout("other", "p5"), &["dev", "prod"], true),
    ];
    assert_eq!(
        rollback_target(&revisions, &current, None).unwrap().number,
        2
    );
    assert_eq!(
        rollback_target(&revisions, &current, Some(1))
            .unwrap()
            .number,
        1
    );
}

#[test]
fn each_refusal_says_why() {
    let current = rollout("s", "p4");
    let revisions = vec![
        revision(2, &rollout("s", "p2"), &["dev"], false),
        revision(4, &current, &["dev"], false),
        revision(5, &rollout("other", "p5"), &["dev", "prod"], true),
    ];
    let refused = |to| rollback_target(&revisions, &current, to).unwrap_err();
    assert!(
        refused(None).contains("no earlier rollout"),
        "{}",
        refused(None)
    );
    assert!(refused(Some(9)).contains("not in this promotion's history (kept: 2, 4, 5)"));
    assert!(refused(Some(4)).contains("is the current rollout"));
    assert!(refused(Some(5)).contains("other stages"));
    assert!(refused(Some(2)).contains("never completed (it reached dev)"));
    let unreadable = vec![Revision {
        record: None,
        ..revision(1, &rollout("s", "p1"), &[], true)
    }];
    assert!(rollback_target(&unreadable, &current, Some(1))
        .unwrap_err()
        .contains("cannot be read"));
}
