use super::*;
use promotion_shared::history::Record;

fn promotion(annotations: Value) -> Value {
    json!({"metadata": {"name": "p", "resourceVersion": "7", "annotations": annotations},
           "spec": {"profileSpec": {"syncMode": "Continuous"},
                    "stages": [{"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}}}]},
           "status": {"stages": [{"name": "staging"}]}})
}

fn current(p: &Value) -> RolloutId {
    identity_of(p).unwrap().id
}

fn revision(number: i64, rollout: &RolloutId, completed: bool) -> Revision {
    Revision {
        name: format!("p-{number}"),
        number,
        data: json!({}),
        record: Some(Record {
            stages_hash: rollout.stages_hash.clone(),
            profile_spec_hash: rollout.profile_spec_hash.clone(),
            started: "2026-02-16T07:00:00Z".into(),
            completed: completed.then(|| "2026-02-16T08:00:00Z".to_string()),
            ..Record::default()
        }),
    }
}

fn earlier(p: &Value, profile: &str) -> RolloutId {
    RolloutId {
        stages_hash: current(p).stages_hash,
        profile_spec_hash: profile.into(),
    }
}

fn request(p: &Value, rollback_to: Option<i64>, reason: Option<&str>) -> String {
    let id = current(p);
    AbortRequest {
        stages_hash: id.stages_hash,
        profile_spec_hash: id.profile_spec_hash,
        rollback_to,
        reason: reason.map(String::from),
    }
    .to_annotation()
}

fn refusal(r: Result<Decision>) -> String {
    match r {
        Err(Error::Refused(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_abort_names_the_current_rollout_in_one_guarded_patch() {
    let p = promotion(json!({}));
    let d = decide(
        &p,
        &Action::Abort {
            reason: Some("bad chart".into()),
        },
        &[],
    )
    .unwrap();
    assert_eq!(
        d.patch,
        json!({"metadata": {"resourceVersion": "7",
            "annotations": {ABORT_ANNOTATION: request(&p, None, Some("bad chart"))}}})
    );
    assert_eq!(d.done, "aborted");
}

#[test]
fn an_abort_is_refused_before_a_rollout_while_deleted_and_when_already_aborted() {
    let mut not_started = promotion(json!({}));
    not_started["status"] = json!({});
    let abort = Action::Abort { reason: None };
    assert_eq!(
        refusal(decide(&not_started, &abort, &[])),
        "\"p\": it has not started a rollout (its status lists no stage): there is nothing to \
         abort (`kubectl promotion pause p` holds it before it starts)"
    );
    let mut deleting = promotion(json!({}));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-02-16T09:00:00Z");
    assert!(refusal(decide(&deleting, &abort, &[])).contains("it is being deleted"));
    let p = promotion(json!({}));
    let aborted = promotion(json!({ABORT_ANNOTATION: request(&p, None, Some("x"))}));
    assert_eq!(
        refusal(decide(&aborted, &abort, &[])),
        "\"p\": its rollout is already aborted (who is not recorded: the admission webhook did \
         not see the request): \"x\"; `kubectl promotion retry p` resumes it where it stopped"
    );
    // A request for an earlier rollout holds nothing: the abort replaces it.
    let stale = AbortRequest {
        stages_hash: "s".into(),
        profile_spec_hash: "old".into(),
        rollback_to: None,
        reason: None,
    };
    let old = promotion(json!({ABORT_ANNOTATION: stale.to_annotation()}));
    assert!(decide(&old, &abort, &[]).is_ok());
}

#[test]
fn a_rollback_goes_to_the_newest_completed_revision_or_is_refused_in_the_shared_words() {
    let p = promotion(json!({}));
    let id = current(&p);
    let revisions = [
        revision(1, &earlier(&p, "one"), true),
        revision(2, &earlier(&p, "two"), true),
        revision(3, &earlier(&p, "three"), false),
        revision(4, &id, false),
    ];
    let rollback = |to| Action::Rollback { to, reason: None };
    let d = decide(&p, &rollback(None), &revisions).unwrap();
    assert_eq!(
        d.patch["metadata"]["annotations"][ABORT_ANNOTATION],
        json!(request(&p, Some(2), None))
    );
    assert_eq!(d.done, "rolled back to revision 2");
    assert!(
        d.next.contains("the spec is left as it is (revision 4)"),
        "{}",
        d.next
    );
    for (to, why) in [
        (
            Some(3),
            rollback_target(&revisions, &id, Some(3)).unwrap_err(),
        ),
        (
            Some(4),
            rollback_target(&revisions, &id, Some(4)).unwrap_err(),
        ),
        (
            Some(9),
            rollback_target(&revisions, &id, Some(9)).unwrap_err(),
        ),
    ] {
        assert_eq!(
            refusal(decide(&p, &rollback(to), &revisions)),
            format!("\"p\": cannot roll back: {why}")
        );
    }
    assert!(refusal(decide(&p, &rollback(None), &[])).contains("no earlier rollout"));
}

#[test]
fn a_rollback_replaces_an_abort_of_the_same_rollout_keeping_its_reason() {
    let p = promotion(json!({}));
    let revisions = [revision(1, &earlier(&p, "one"), true)];
    let rollback = Action::Rollback {
        to: None,
        reason: None,
    };
    let aborted = promotion(json!({ABORT_ANNOTATION: request(&p, None, Some("bad chart"))}));
    let d = decide(&aborted, &rollback, &revisions).unwrap();
    assert_eq!(
        d.patch["metadata"]["annotations"][ABORT_ANNOTATION],
        json!(request(&p, Some(1), Some("bad chart")))
    );
    // Already rolled back there: refused, saying what retry does.
    let rolled = promotion(json!({ABORT_ANNOTATION: request(&p, Some(1), None)}));
    assert_eq!(
        refusal(decide(&rolled, &rollback, &revisions)),
        "\"p\": its rollout is already rolled back to revision 1 (who is not recorded: the \
         admission webhook did not see the request); `kubectl promotion retry p` starts it again \
         from its first stage"
    );
}

#[test]
fn a_retry_removes_the_request_and_says_what_follows() {
    let p = promotion(json!({}));
    assert_eq!(
        refusal(decide(&p, &Action::Retry, &[])),
        "\"p\": there is nothing to retry: no rollout of it is aborted (it has no \
         promotion-controller.kubectl-promotion.dev/abort annotation)"
    );
    let aborted = promotion(json!({ABORT_ANNOTATION: request(&p, None, None)}));
    let d = decide(&aborted, &Action::Retry, &[]).unwrap();
    assert_eq!(
        d.patch,
        json!({"metadata": {"resourceVersion": "7", "annotations": {ABORT_ANNOTATION: null}}})
    );
    assert_eq!(
        d.next,
        "promotion-controller resumes the rollout where it stopped"
    );
    let rolled = promotion(json!({ABORT_ANNOTATION: request(&p, Some(1), None)}));
    assert!(decide(&rolled, &Action::Retry, &[])
        .unwrap()
        .next
        .starts_with("promotion-controller starts the spec's rollout again from its first stage"));
}

#[test]
fn another_reconciler_is_refused() {
    let mut p = promotion(json!({}));
    p["metadata"]["managedFields"] = json!([{"manager": "addon-controller", "operation": "Update",
        "subresource": "status", "time": "2026-02-16T07:00:00Z",
        "fieldsV1": {"f:status": {"f:stages": {}}}}]);
    assert!(refusal(decide(&p, &Action::Abort { reason: None }, &[]))
        .contains("reconciled by another reconciler (addon-controller)"));
}

#[test]
fn a_write_is_recorded_only_by_a_new_record_of_its_kind() {
    let before = promotion(json!({}));
    let record = |aborted: bool| {
        serde_json::to_string(&AbortRecord {
            aborted,
            user: "alice".into(),
            time: "2026-02-16T07:40:00Z".into(),
            request: None,
        })
        .unwrap()
    };
    let with = |r: String| promotion(json!({ABORT_RECORD_ANNOTATION: r}));
    let abort = Action::Abort { reason: None };
    assert!(recorded(&before, &with(record(true)), &abort));
    assert!(!recorded(&before, &before, &abort));
    assert!(!recorded(&with(record(true)), &with(record(true)), &abort));
    assert!(recorded(&before, &with(record(false)), &Action::Retry));
    assert!(!recorded(&before, &with(record(true)), &Action::Retry));
}
