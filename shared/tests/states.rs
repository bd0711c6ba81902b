//! Stage states for every example with a status, exactly as `examples/STATES.md` lists them.

use std::path::PathBuf;

use serde_json::json;

use promotion_shared::approval::Used;
use promotion_shared::cluster_summary::ClusterState;
use promotion_shared::model::ClusterPromotion;
use promotion_shared::pipeline::{derive, Approval, Observations, Phase, StageState};
use promotion_shared::source::parse_documents;

fn load(file: &str) -> ClusterPromotion {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_value(parse_documents(&text).unwrap().remove(0).value).unwrap()
}

fn states(p: &ClusterPromotion, obs: Option<&Observations>) -> Vec<(String, StageState)> {
    derive(p, obs)
        .stages
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect()
}

fn st(name: &str, state: StageState) -> (String, StageState) {
    (name.to_string(), state)
}

#[test]
fn auto_rollout_soaks_on_the_last_stage() {
    let p = load("kyverno-rollout-auto.yaml");
    assert_eq!(
        states(&p, None),
        vec![
            st("dev", StageState::Promoted),
            st("staging", StageState::Promoted),
            st(
                "production",
                StageState::Soaking {
                    until: Some("2026-02-16T06:36:24Z".into())
                }
            ),
        ]
    );
    let pipeline = derive(&p, None);
    assert_eq!(pipeline.phase, Phase::Progressing);
    assert_eq!(
        pipeline.frontier().map(|s| s.name.as_str()),
        Some("production")
    );
    assert_eq!(
        pipeline.stages[2].state.label(),
        "soaking until 2026-02-16T06:36:24Z"
    );
}

#[test]
fn manual_gate_awaits_approval_on_staging() {
    let p = load("kyverno-manual-gate.yaml");
    assert_eq!(
        states(&p, None),
        vec![
            st("dev", StageState::Promoted),
            st("staging", StageState::AwaitingApproval),
            st("production", StageState::NotStarted),
        ]
    );
    let pipeline = derive(&p, None);
    assert_eq!(pipeline.phase, Phase::AwaitingApproval);
    let gate = pipeline.awaiting_approval().unwrap();
    assert_eq!(
        (gate.name.as_str(), gate.next_stage.as_deref()),
        ("staging", Some("production"))
    );
    assert_eq!(gate.approval, Approval::NotApproved);
}

#[test]
fn approved_gate_is_pending_until_the_next_stage_is_reached() {
    let mut p = load("kyverno-manual-gate.yaml");
    p.spec.stages[1]
        .trigger
        .as_mut()
        .unwrap()
        .manual
        .as_mut()
        .unwrap()
        .approved = Some(true);
    let pipeline = derive(&p, None);
    assert_eq!(pipeline.stages[1].state, StageState::ApprovedPending);
    assert_eq!(pipeline.stages[1].approval, Approval::Pending);
    // Once production shows up in status, the approval has been consumed.
    let mut status = p.status.clone().unwrap();
    let mut next = status.stages.as_ref().unwrap()[1].clone();
    next.name = "production".into();
    next.current_status_description = None;
    next.last_successful_applied_time = None;
    status.stages.as_mut().unwrap().push(next);
    p.status = Some(status);
    let pipeline = derive(&p, None);
    assert_eq!(pipeline.stages[1].state, StageState::Promoted);
    assert_eq!(pipeline.stages[1].approval, Approval::Consumed);
    assert_eq!(pipeline.stages[2].state, StageState::Provisioning);
    assert_eq!(p.approval_used(1), Some(Used::PromotedTo("production")));
}

#[test]
fn failed_dev_is_provisioning_from_the_promotion_alone_and_failed_with_summaries() {
    let p = load("kyverno-failed-dev.yaml");
    assert_eq!(
        states(&p, None),
        vec![
            st("dev", StageState::Provisioning),
            st("staging", StageState::NotStarted),
            st("production", StageState::NotStarted),
        ]
    );
    let summary = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
        "metadata": {"name": "kyverno-rollout-auto-dev-sveltos-dev01", "namespace": "dev"},
        "spec": {"clusterNamespace": "dev", "clusterName": "dev01", "clusterType": "Sveltos"},
        "status": {"featureSummaries": [{"featureID": "Helm", "status": "Failed",
            "failureMessage": "values don't meet the specifications of the schema(s): replicas: Invalid type. Expected: integer, given: boolean"}]}
    });
    let cluster = ClusterState::from_cluster_summary(&summary).unwrap();
    let obs: Observations = [("dev".to_string(), vec![cluster])].into_iter().collect();
    let pipeline = derive(&p, Some(&obs));
    assert_eq!(pipeline.phase, Phase::Failed);
    match &pipeline.stages[0].state {
        StageState::Failed { message } => {
            assert!(message.contains("dev/dev01"), "{message}");
            assert!(message.contains("Expected: integer"), "{message}");
        }
        other => panic!("dev should be failed, is {other:?}"),
    }
    assert_eq!(pipeline.failed().map(|s| s.name.as_str()), Some("dev"));
}

#[test]
fn empty_status_is_not_started_and_says_why() {
    let p = load("payment-four-stages.yaml");
    let pipeline = derive(&p, None);
    assert_eq!(pipeline.phase, Phase::NotStarted);
    assert!(pipeline
        .stages
        .iter()
        .all(|s| s.state == StageState::NotStarted));
    assert!(pipeline
        .note
        .as_deref()
        .unwrap()
        .contains("not reconciled yet"));

    let mut with_finalizer = p.clone();
    with_finalizer.metadata.finalizers =
        Some(vec!["config.projectsveltos.io/clusterpromotion".into()]);
    let note = derive(&with_finalizer, None).note.unwrap();
    assert!(note.contains("no ClusterPromotion reconciler"), "{note}");
}

#[test]
fn last_stage_without_trigger_completes_once_provisioned() {
    let mut p = load("kyverno-manual-gate.yaml");
    p.spec.stages.truncate(2);
    p.spec.stages[1].trigger = None;
    let pipeline = derive(&p, None);
    assert_eq!(pipeline.stages[1].state, StageState::Complete);
    assert_eq!(pipeline.phase, Phase::Complete);
}

#[test]
fn json_model_has_stable_field_names() {
    let v = serde_json::to_value(derive(&load("kyverno-manual-gate.yaml"), None)).unwrap();
    assert_eq!(v["phase"], "awaitingApproval");
    assert_eq!(v["stages"][1]["state"], "awaitingApproval");
    assert_eq!(v["stages"][1]["approval"], "notApproved");
    assert_eq!(v["stages"][1]["nextStage"], "production");
    assert_eq!(v["stages"][1]["trigger"]["kind"], "manual");
    assert_eq!(v["stages"][0]["selector"], "env=dev");
}
