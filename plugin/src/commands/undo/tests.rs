use super::*;
use promotion_shared::abort::AbortRequest;

/// A spec deploying kyverno `version`; 3.6.3 (the current one) also sets `tier`.
fn spec(version: &str, stages: Value) -> Value {
    let mut s = json!({"profileSpec": {"syncMode": "Continuous",
                           "helmCharts": [{"chartName": "kyverno/kyverno", "chartVersion": version}]},
           "stages": stages});
    if version == "3.6.3" {
        s["profileSpec"]["tier"] = json!(100);
    }
    s
}

fn two_stages(approved: Option<bool>) -> Value {
    let mut manual = json!({"automaticReset": true});
    if let Some(a) = approved {
        manual["approved"] = json!(a);
    }
    json!([{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
           {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}},
            "trigger": {"manual": manual}}])
}

fn promotion(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "uid": "u", "resourceVersion": "7"}, "spec": spec,
           "status": {"stages": [{"name": "dev"}]}})
}

fn revision(number: i64, spec: Value) -> Revision {
    Revision {
        name: format!("p-{number}"),
        number,
        data: spec,
        record: None,
    }
}

fn refusal(r: Result<Decision>) -> String {
    match r {
        Err(Error::Refused(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// 1: 3.6.1, 2: 3.6.2, 3: 3.6.3 (the spec).
fn history() -> Vec<Revision> {
    ["3.6.1", "3.6.2", "3.6.3"]
        .iter()
        .enumerate()
        .map(|(i, v)| revision(i as i64 + 1, spec(v, two_stages(None))))
        .collect()
}

#[test]
fn the_default_is_the_revision_before_the_spec_and_only_the_profile_spec_is_written() {
    let p = promotion(spec("3.6.3", two_stages(Some(true))));
    let d = decide(&p, &history(), None).unwrap();
    assert_eq!(d.to, 2);
    assert!(!d.stages);
    assert_eq!(
        d.patch,
        json!({"metadata": {"resourceVersion": "7", "annotations": {UNDO_ANNOTATION: "2"}},
               "spec": {"profileSpec": {"helmCharts": [{"chartName": "kyverno/kyverno",
                                                        "chartVersion": "3.6.2"}],
                                        "tier": null}}})
    );
    // The stages, the approval included, are as they were.
    assert_eq!(d.after["spec"]["stages"], two_stages(Some(true)));
    assert_eq!(
        d.after["spec"]["profileSpec"],
        spec("3.6.2", json!([]))["profileSpec"]
    );
    assert_eq!(
        d.next,
        ["promotion-controller starts a new rollout of revision 2's configuration from the first \
          stage, through every gate"]
    );
    assert_eq!(decide(&p, &history(), Some(1)).unwrap().to, 1);
}

#[test]
fn before_the_controller_recorded_the_spec_the_default_is_the_newest_revision() {
    let p = promotion(spec("4.0.0", two_stages(None)));
    assert_eq!(decide(&p, &history(), None).unwrap().to, 3);
}

#[test]
fn other_stages_are_restored_with_todays_approvals_never_the_revisions() {
    let old_stages = json!([
        {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
        {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
         "trigger": {"manual": {"approved": true, "automaticReset": false}}},
        {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}},
         "trigger": {"manual": {"approved": true, "automaticReset": true}}}
    ]);
    let revisions = vec![
        revision(1, spec("3.6.2", old_stages)),
        revision(2, spec("3.6.2", two_stages(None))),
    ];
    let p = promotion(spec("3.6.2", two_stages(Some(false))));
    let d = decide(&p, &revisions, None).unwrap();
    assert_eq!(d.to, 1);
    assert!(d.stages);
    // Same profileSpec: only the stages; staging (not in the spec) gets no approval, prod keeps
    // today's `false`.
    assert_eq!(
        d.patch["spec"],
        json!({"stages": [
            {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
            {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
             "trigger": {"manual": {"automaticReset": false}}},
            {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}},
             "trigger": {"manual": {"approved": false, "automaticReset": true}}}
        ]})
    );
    assert!(d.next[0].contains("every stage kept the approval it had"));
}

#[test]
fn refusals_name_the_promotion_the_revision_and_what_is_kept() {
    let p = promotion(spec("3.6.3", two_stages(None)));
    assert_eq!(
        refusal(decide(&p, &history(), Some(9))),
        "\"p\": cannot undo: revision 9 is not in its history (kept: 1, 2, 3; `kubectl promotion \
         history p` lists them)"
    );
    assert_eq!(
        refusal(decide(&p, &history(), Some(3))),
        "\"p\": cannot undo: revision 3 is the spec's current configuration already: there is \
         nothing to undo (kept: 1, 2, 3)"
    );
    assert_eq!(
        refusal(decide(&p, &history()[2..], None)),
        "\"p\": cannot undo: there is no previous revision to go back to (kept: 3; the spec is \
         revision 3)"
    );
    assert_eq!(
        refusal(decide(&p, &[], None)),
        "\"p\": cannot undo: there is no previous revision to go back to (kept: none)"
    );
    let mut deleting = p.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-03-01T10:00:00Z");
    assert_eq!(
        refusal(decide(&deleting, &history(), None)),
        "\"p\": cannot undo: it is being deleted (since 2026-03-01T10:00:00Z): no rollout starts \
         any more"
    );
    let mut foreign = p.clone();
    foreign["metadata"]["managedFields"] = json!([{"manager": "addon-controller",
        "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:stages": {}}}}]);
    assert!(refusal(decide(&foreign, &history(), None)).contains(
        "it is reconciled by another reconciler (addon-controller), not promotion-controller"
    ));
    let empty = vec![revision(1, json!({"stages": []}))];
    assert_eq!(
        refusal(decide(&p, &empty, Some(1))),
        "\"p\": cannot undo: revision 1 (p-1) holds no profileSpec in its data"
    );
}

#[test]
fn the_abort_of_the_replaced_rollout_is_removed_in_the_same_write() {
    let mut p = promotion(spec("3.6.3", two_stages(None)));
    let id = identity_of(&p).unwrap().id;
    let request = AbortRequest {
        stages_hash: id.stages_hash,
        profile_spec_hash: id.profile_spec_hash,
        rollback_to: Some(1),
        reason: Some("INC-4711".into()),
    };
    p["metadata"]["annotations"] = json!({ABORT_ANNOTATION: request.to_annotation()});
    let d = decide(&p, &history(), None).unwrap();
    assert_eq!(
        d.patch["metadata"]["annotations"],
        json!({UNDO_ANNOTATION: "2", ABORT_ANNOTATION: null})
    );
    assert!(
        d.next[1].starts_with(
            "the rollout it replaces was rolled back to revision 1 (who is not recorded"
        ) && d.next[1].ends_with("that request belonged to it and is removed in the same write"),
        "{:?}",
        d.next
    );
    // As sent (the webhook then moves the undo annotation into its record).
    assert_eq!(
        d.after["metadata"]["annotations"],
        json!({UNDO_ANNOTATION: "2"})
    );
}

#[test]
fn the_manifest_to_commit_has_no_server_fields_records_or_tool_marks() {
    let mut p = promotion(spec("3.6.3", two_stages(None)));
    p["metadata"]["annotations"] = json!({
        "audit.kubectl-promotion.dev/spec-change": "{}",
        ARGO_TRACKING_ANNOTATION: "apps:config.projectsveltos.io/ClusterPromotion:/p",
        "team-docs": "https://wiki/p"});
    p["metadata"]["labels"] =
        json!({"kustomize.toolkit.fluxcd.io/name": "apps", "team": "platform"});
    p["metadata"]["managedFields"] = json!([]);
    p["metadata"]["generation"] = json!(4);
    p["metadata"]["finalizers"] = json!(["x"]);
    p["apiVersion"] = json!("config.projectsveltos.io/v1beta1");
    p["kind"] = json!("ClusterPromotion");
    let d = decide(&p, &history(), None).unwrap();
    assert_eq!(
        manifest(&d.after),
        json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
               "metadata": {"name": "p", "annotations": {"team-docs": "https://wiki/p"},
                            "labels": {"team": "platform"}},
               "spec": spec("3.6.2", two_stages(None))})
    );
}
