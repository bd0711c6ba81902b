//! Stage states for every example with a status, exactly as `examples/STATES.md` lists them.

use std::path::PathBuf;

use serde_json::json;

use promotion_manifest::parse_documents;
use promotion_shared::approval::Used;
use promotion_shared::cluster_summary::ClusterState;
use promotion_shared::freshness::{freshness, Freshness, StaleSignal};
use promotion_shared::model::ClusterPromotion;
use promotion_shared::pipeline::{derive, Approval, Observations, Phase, StageState};

fn load(file: &str) -> ClusterPromotion {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_value(parse_documents(&text).unwrap().remove(0).value).unwrap()
}

fn states(p: &ClusterPromotion, obs: Option<&Observations>) -> Vec<(String, StageState)> {
    derive(p, obs, &Freshness::Current)
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
    let pipeline = derive(&p, None, &Freshness::Current);
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
    let pipeline = derive(&p, None, &Freshness::Current);
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
    let pipeline = derive(&p, None, &Freshness::Current);
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
    let pipeline = derive(&p, None, &Freshness::Current);
    assert_eq!(pipeline.stages[1].state, StageState::Promoted);
    assert_eq!(pipeline.stages[1].approval, Approval::Consumed);
    assert_eq!(pipeline.stages[2].state, StageState::Provisioning);
    assert_eq!(
        p.approval_used(1, true),
        Some(Used::PromotedTo("production"))
    );
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
    let obs: Observations = [("dev".to_string(), vec![cluster.clone()])]
        .into_iter()
        .collect();
    let pipeline = derive(&p, Some(&obs), &Freshness::Current);
    // STATES.md: failed. The feature is `Failed`, which Sveltos retries: degraded, not lost.
    assert_eq!(pipeline.stages[0].state.label(), "failed (Sveltos retries)");
    assert_eq!(pipeline.phase, Phase::Degraded);
    match &pipeline.stages[0].state {
        StageState::Failed { message, retriable } => {
            assert!(retriable);
            assert_eq!(
                message,
                "1 cluster failing: dev/dev01 Helm Failed: values don't meet \
                 the specifications of the schema(s): replicas: Invalid type. Expected: \
                 integer, given: boolean"
            );
        }
        other => panic!("dev should be failed, is {other:?}"),
    }
    // A second cluster that Sveltos gave up on: the stage fails for good, and the summary names
    // it first.
    let mut worse = cluster;
    worse.name = "dev33".into();
    worse.features[0].status = "FailedNonRetriable".into();
    worse.features[0].failure_message = Some("template error".into());
    let obs: Observations = [("dev".to_string(), vec![obs["dev"][0].clone(), worse])]
        .into_iter()
        .collect();
    let pipeline = derive(&p, Some(&obs), &Freshness::Current);
    assert_eq!(pipeline.phase, Phase::Failed);
    assert_eq!(
        pipeline.stages[0].state,
        StageState::Failed {
            message: "2 clusters failed (1 non-retriable: dev/dev33 Helm FailedNonRetriable: \
                      template error)"
                .into(),
            retriable: false
        }
    );
    assert_eq!(pipeline.failed().map(|s| s.name.as_str()), Some("dev"));
}

#[test]
fn empty_status_is_not_started_and_says_why() {
    let p = load("payment-four-stages.yaml");
    let pipeline = derive(&p, None, &Freshness::Current);
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
    let note = derive(&with_finalizer, None, &Freshness::Current)
        .note
        .unwrap();
    assert!(note.contains("no ClusterPromotion reconciler"), "{note}");
    // What to install: promotion-controller on open-source Sveltos, or Sveltos Enterprise.
    assert!(
        note.contains("install promotion-controller (`kubectl apply -k manifests/`"),
        "{note}"
    );
    assert!(note.ends_with("or use Sveltos Enterprise"), "{note}");
}

#[test]
fn last_stage_without_trigger_completes_once_provisioned() {
    let mut p = load("kyverno-manual-gate.yaml");
    p.spec.stages.truncate(2);
    p.spec.stages[1].trigger = None;
    let pipeline = derive(&p, None, &Freshness::Current);
    assert_eq!(pipeline.stages[1].state, StageState::Complete);
    assert_eq!(pipeline.phase, Phase::Complete);
}

#[test]
fn json_model_has_stable_field_names() {
    let v = serde_json::to_value(derive(
        &load("kyverno-manual-gate.yaml"),
        None,
        &Freshness::Current,
    ))
    .unwrap();
    assert_eq!(v["phase"], "awaitingApproval");
    assert_eq!(v["stages"][1]["state"], "awaitingApproval");
    assert_eq!(v["stages"][1]["approval"], "notApproved");
    assert_eq!(v["stages"][1]["nextStage"], "production");
    assert_eq!(v["stages"][1]["trigger"]["kind"], "manual");
    assert_eq!(v["stages"][0]["selector"], "env=dev");
}

#[test]
fn a_licence_refusal_blocks_the_pipeline_and_says_why() {
    let mut p = load("kyverno-failed-dev.yaml");
    let status = p.status.as_mut().unwrap();
    status.stages.as_mut().unwrap()[0].failure_message =
        Some("license is required to manage ClusterPromotion".into());
    let pipeline = derive(&p, None, &Freshness::Current);
    assert_eq!(pipeline.phase, Phase::Blocked);
    assert!(matches!(
        &pipeline.stages[0].state,
        StageState::Blocked { message } if message.contains("first two ClusterPromotions")
    ));
}

#[test]
fn a_status_whose_hashes_differ_from_the_spec_is_stale() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/kyverno-rollout-auto.yaml"),
    )
    .unwrap();
    let stored = |object: &serde_json::Value| {
        crd_schema::Crd::embedded()
            .version("config.projectsveltos.io/v1beta1")
            .unwrap()
            .decoded(object)
    };
    let judge = |object: &serde_json::Value| {
        let p: ClusterPromotion = serde_json::from_value(object.clone()).unwrap();
        (freshness(object, &p, None), p)
    };
    let mut object = stored(&parse_documents(&text).unwrap().remove(0).value);
    // The example's status hashes are the ones a real addon-controller wrote for chart 3.5.2
    // (promotion-controller.md 7.6, oracle 2); its spec asks for 3.6.2, so Sveltos restarts it
    // on its next reconcile: the status is the previous rollout's.
    assert!(matches!(
        judge(&object).0,
        Freshness::Stale {
            signal: StaleSignal::ProfileSpecHash,
            ..
        }
    ));
    object["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = "3.5.2".into();
    assert_eq!(judge(&object).0, Freshness::Current);
    object["spec"]["stages"][2]["clusterSelector"]["matchLabels"]["env"] = "production".into();
    let (fresh, p) = judge(&object);
    assert!(matches!(
        fresh,
        Freshness::Stale {
            signal: StaleSignal::StagesHash,
            ..
        }
    ));
    let pipeline = derive(&p, None, &fresh);
    assert_eq!(pipeline.phase, Phase::Stale);
    assert!(pipeline.stale.is_some());
    assert!(pipeline.awaiting_approval().is_none());
}

/// Two stages of one name (the API server refuses them; `describe -f` can still read them). A
/// stage's status is found by its name, so it is the first stage's, and the later stage of that
/// name is never reached. Found by the `view` fuzz target: the later `dev` here used to read the
/// first one's "Successfully provisioned" and complete the pipeline, and `staging`, whose
/// successor it is, counted as promoted with its approval used.
#[test]
fn a_repeated_stage_name_is_reached_only_once() {
    let mut p = load("kyverno-manual-gate.yaml");
    p.spec.stages[2].name = "dev".into();
    let pipeline = derive(&p, None, &Freshness::Current);
    assert_eq!(
        states(&p, None),
        vec![
            st("dev", StageState::Promoted),
            st("staging", StageState::AwaitingApproval),
            st("dev", StageState::NotStarted),
        ]
    );
    assert_eq!(pipeline.phase, Phase::AwaitingApproval);

    p.spec.stages[1]
        .trigger
        .as_mut()
        .unwrap()
        .manual
        .as_mut()
        .unwrap()
        .approved = Some(true);
    let pipeline = derive(&p, None, &Freshness::Current);
    assert_eq!(pipeline.stages[1].state, StageState::ApprovedPending);
    assert_eq!(pipeline.stages[1].approval, Approval::Pending);
    assert_eq!(pipeline.phase, Phase::Progressing);
}
