use super::*;
use crate::freshness::Freshness;

const REASON: &str = "kubectl-promotion.dev/approval-reason";

fn promotion() -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "p", "resourceVersion": "42"},
        "spec": {
            "profileSpec": {"syncMode": "Continuous"},
            "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {"delay": "2m"}}},
                {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
                 "trigger": {"manual": {"approved": false, "automaticReset": false}}},
                {"name": "production", "clusterSelector": {"matchLabels": {"env": "prod"}}}
            ]
        }
    })
}

/// The gate of `stage` as `approve` resolves it from the object read.
fn gate(object: &Value, stage: &str) -> Gate {
    let promotion = crate::model::ClusterPromotion::decode(object).unwrap();
    let pipeline = crate::pipeline::derive(&promotion, None, &Freshness::Current);
    crate::gate::approval_target(&pipeline, Some(stage), true).unwrap()
}

/// A gate that was not resolved from the object it is applied to.
fn foreign(index: usize, stage: &str) -> Gate {
    Gate {
        index,
        stage: stage.into(),
        next: None,
        already_approved: false,
        ahead_of_time: false,
        approval: crate::pipeline::Approval::NotApproved,
    }
}

/// What the API server does with a merge patch: applied to the stored object, then refused with
/// a conflict unless the result's resourceVersion is the stored one.
fn apply(stored: &Value, patch: &Value) -> Result<Value, &'static str> {
    let mut out = stored.clone();
    json_patch::merge(&mut out, patch);
    if out.pointer("/metadata/resourceVersion") != stored.pointer("/metadata/resourceVersion") {
        return Err("409 Conflict");
    }
    Ok(out)
}

#[test]
fn approves_only_the_named_stage_and_keeps_everything_else() {
    let before = promotion();
    let p = approve(&before, &gate(&before, "staging"), true, &[]).unwrap();
    assert_eq!(p.stage_index, 1);
    assert!(!p.already_approved);
    let after = apply(&before, &p.write.patch).unwrap();
    let mut expected = before.clone();
    expected["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    assert_eq!(after, expected);
    assert_eq!(
        after.pointer("/spec/stages/1/trigger/manual/automaticReset"),
        Some(&json!(false))
    );
    assert_eq!(
        p.write.shows,
        vec![
            ("/spec/stages/1/name".to_string(), json!("staging")),
            (
                "/spec/stages/1/trigger/manual/approved".to_string(),
                json!(true)
            ),
        ]
    );
}

#[test]
fn the_patch_carries_the_version_read_and_nothing_but_the_change() {
    let read = promotion();
    let p = approve(&read, &gate(&read, "staging"), true, &[]).unwrap();
    let mut stages = read["spec"]["stages"].clone();
    stages[1]["trigger"]["manual"]["approved"] = json!(true);
    assert_eq!(
        p.write.patch,
        json!({"metadata": {"resourceVersion": "42"}, "spec": {"stages": stages}})
    );
}

#[test]
fn any_change_since_the_read_is_a_conflict_never_another_stage_approved() {
    let read = promotion();
    let p = approve(&read, &gate(&read, "staging"), true, &[]).unwrap();
    // Reordered, approved meanwhile, or the approval used by the controller: each is a newer
    // version, so the write fails as a whole.
    for change in [
        |s: &mut Value| s["spec"]["stages"].as_array_mut().unwrap().swap(0, 1),
        |s: &mut Value| s["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true),
        |s: &mut Value| {
            s["spec"]["stages"][1]["trigger"]["manual"]
                .as_object_mut()
                .unwrap()
                .remove("approved");
        },
    ] {
        let mut live = read.clone();
        change(&mut live);
        live["metadata"]["resourceVersion"] = json!("43");
        assert_eq!(apply(&live, &p.write.patch), Err("409 Conflict"));
    }
}

#[test]
fn absent_approved_is_added_and_revocation_writes_false() {
    let mut read = promotion();
    read["spec"]["stages"][1]["trigger"]["manual"] = json!({});
    let p = approve(&read, &gate(&read, "staging"), true, &[]).unwrap();
    let after = apply(&read, &p.write.patch).unwrap();
    assert_eq!(
        after.pointer("/spec/stages/1/trigger/manual"),
        Some(&json!({"approved": true}))
    );
    let revoke = approve(&after, &foreign(1, "staging"), false, &[]).unwrap();
    assert!(revoke.already_approved);
    let after = apply(&after, &revoke.write.patch).unwrap();
    assert_eq!(
        after.pointer("/spec/stages/1/trigger/manual"),
        Some(&json!({"approved": false}))
    );
}

#[test]
fn a_gate_of_another_object_is_refused() {
    let read = promotion();
    let refused = |g: Gate, object: &Value| approve(object, &g, true, &[]).unwrap_err();
    assert_eq!(
        refused(foreign(1, "qa"), &read),
        PatchError::NotAtIndex {
            stage: "qa".into(),
            index: 1
        }
    );
    assert_eq!(
        refused(foreign(3, "staging"), &read),
        PatchError::NotAtIndex {
            stage: "staging".into(),
            index: 3
        }
    );
    assert_eq!(
        refused(foreign(0, "dev"), &read),
        PatchError::NotManual {
            stage: "dev".into(),
            index: 0
        }
    );
    assert_eq!(
        refused(foreign(0, "dev"), &json!({"spec": {}})),
        PatchError::NoStages
    );
}

#[test]
fn a_write_without_the_version_read_is_never_built() {
    let mut read = promotion();
    read["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(
        approve(&read, &foreign(1, "staging"), true, &[]).unwrap_err(),
        PatchError::NoResourceVersion
    );
    assert_eq!(finalizer(&read, true), Err(PatchError::NoResourceVersion));
    assert_eq!(
        status(&read, &json!({})),
        Err(PatchError::NoResourceVersion)
    );
}

#[test]
fn the_resolved_index_is_patched_when_a_name_repeats() {
    // A later stage of the same name (which the API server refuses, a manifest can hold) is
    // never the one approved: the gate is the first of the name, and its index is pinned.
    let mut read = promotion();
    read["spec"]["stages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "staging", "trigger": {"manual": {}}}));
    let g = gate(&read, "staging");
    assert_eq!(g.index, 1);
    let after = apply(&read, &approve(&read, &g, true, &[]).unwrap().write.patch).unwrap();
    assert_eq!(
        after.pointer("/spec/stages/1/trigger/manual/approved"),
        Some(&json!(true))
    );
    assert_eq!(
        after.pointer("/spec/stages/3/trigger/manual"),
        Some(&json!({}))
    );
}

#[test]
fn the_reason_travels_in_the_same_write_and_keeps_other_annotations() {
    let mut read = promotion();
    read["metadata"]["annotations"] = json!({"team": "platform", REASON: "old"});
    let p = approve(&read, &gate(&read, "staging"), true, &[(REASON, "new")]).unwrap();
    let after = apply(&read, &p.write.patch).unwrap();
    assert_eq!(
        after.pointer("/metadata/annotations"),
        Some(&json!({"team": "platform", REASON: "new"}))
    );
    assert_eq!(
        after["spec"]["stages"][1]["trigger"]["manual"]["approved"],
        true
    );
}

#[test]
fn the_commit_removes_exactly_the_approvals_used_and_records_the_step() {
    let mut read = promotion();
    read["spec"]["stages"][1]["trigger"]["manual"] = json!({"approved": true});
    read["spec"]["stages"][2]["trigger"] =
        json!({"manual": {"approved": true, "automaticReset": false}});
    let step = Promoting {
        stage: "staging".into(),
        rollout: crate::rollout::RolloutId {
            stages_hash: "s".into(),
            profile_spec_hash: "p".into(),
        },
    };
    let after = apply(&read, &commit(&read, &[1], Some(&step)).unwrap()).unwrap();
    assert_eq!(after["spec"]["stages"][1]["trigger"]["manual"], json!({}));
    assert_eq!(
        after["spec"]["stages"][2]["trigger"]["manual"],
        json!({"approved": true, "automaticReset": false})
    );
    assert_eq!(crate::promoting::recorded(&after).0.as_ref(), Some(&step));
    let cleared = apply(
        &after,
        &remove_annotation(&after, PROMOTING_ANNOTATION).unwrap(),
    )
    .unwrap();
    assert_eq!(crate::promoting::recorded(&cleared), (None, None));
}

#[test]
fn the_commit_records_whose_approval_it_used_in_the_same_write() {
    use crate::admission::used_approvals::{self, USED_APPROVALS_ANNOTATION};
    use crate::admission::APPROVALS_ANNOTATION;
    let mut read = promotion();
    read["metadata"]["generation"] = json!(4);
    read["spec"]["stages"][1]["trigger"]["manual"] = json!({"approved": true});
    let alice = json!({"user": "alice", "groups": ["release-managers"],
                       "time": "2026-02-16T07:40:00Z", "reason": "dev soaked", "generation": 4});
    let dev = json!({"approval": null, "generation": 1});
    read["metadata"]["annotations"] = json!({
        APPROVALS_ANNOTATION: json!({"staging": alice}).to_string(),
        USED_APPROVALS_ANNOTATION: json!({"dev": dev}).to_string(),
    });
    let step = Promoting {
        stage: "staging".into(),
        rollout: crate::rollout::RolloutId {
            stages_hash: "s".into(),
            profile_spec_hash: "p".into(),
        },
    };
    let patch = commit(&read, &[1], Some(&step)).unwrap();
    assert_eq!(patch["metadata"]["resourceVersion"], "42");
    let after = apply(&read, &patch).unwrap();
    let used = used_approvals::recorded(&after).unwrap();
    assert_eq!(
        serde_json::to_value(&used).unwrap(),
        json!({
            "dev": dev,
            "staging": {"approval": alice, "rollout": {"stagesHash": "s", "profileSpecHash": "p"},
                        "generation": 4}
        })
    );
    assert_eq!(crate::promoting::recorded(&after).0.as_ref(), Some(&step));
    assert_eq!(after["spec"]["stages"][1]["trigger"]["manual"], json!({}));
    // The webhook's records are left as they are.
    assert_eq!(
        after["metadata"]["annotations"][APPROVALS_ANNOTATION],
        read["metadata"]["annotations"][APPROVALS_ANNOTATION]
    );
    // A commit that uses no approval records none.
    let none = commit(&read, &[], None).unwrap();
    assert_eq!(none, json!({"metadata": {"resourceVersion": "42"}}));
}

#[test]
fn finalizers_are_added_at_the_end_and_removed_in_place() {
    let mut read = promotion();
    read["metadata"]["finalizers"] = json!(["a", "b"]);
    let added = apply(&read, &finalizer(&read, true).unwrap()).unwrap();
    assert_eq!(
        added["metadata"]["finalizers"],
        json!(["a", "b", FINALIZER])
    );
    let mut middle = read.clone();
    middle["metadata"]["finalizers"] = json!(["a", FINALIZER, "b"]);
    let removed = apply(&middle, &finalizer(&middle, false).unwrap()).unwrap();
    assert_eq!(removed["metadata"]["finalizers"], json!(["a", "b"]));
}

#[test]
fn the_status_write_turns_the_status_read_into_the_new_one() {
    let mut read = promotion();
    read["status"] = json!({"currentStageName": "dev", "stages": [{"name": "dev"}],
                            "stagesHash": "a", "lastMessage": "old"});
    let new = json!({"currentStageName": "staging",
                     "stages": [{"name": "dev"}, {"name": "staging"}], "stagesHash": "a"});
    let patch = status(&read, &new).unwrap();
    assert_eq!(patch["status"]["lastMessage"], Value::Null);
    assert!(patch["status"].get("stagesHash").is_none(), "{patch}");
    assert_eq!(apply(&read, &patch).unwrap()["status"], new);
}

/// `merge(old, merge_diff(old, new)) == new` for documents without `null` members, whatever
/// their shape (generated from a fixed seed, as every property test of the workspace).
#[test]
fn a_diff_applied_to_its_old_document_gives_the_new_one() {
    use proptest::prelude::*;
    fn doc() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Value::from),
            (0i64..4).prop_map(Value::from),
            "[ab]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("[abc]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
    let mut runner =
        proptest::test_runner::TestRunner::new(promotion_examples::proptest_config::config());
    runner
        .run(&(doc(), doc()), |(old, new)| {
            let mut patched = old.clone();
            json_patch::merge(&mut patched, &merge_diff(&old, &new));
            prop_assert_eq!(patched, new);
            Ok(())
        })
        .unwrap();
}
