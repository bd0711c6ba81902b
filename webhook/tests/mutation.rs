//! POST /mutate through the real binary: approvals consumed, new rollouts, audit records,
//! idempotency under reinvocation, and forged audit annotations.

mod support;

use serde_json::{json, Value};
use support::{apply, chain, example, examples, patch_of, review, warnings, Server, ALICE, BOB};

const APPROVALS: &str = "audit.kubectl-promotion.dev/approvals";
const SPEC_CHANGE: &str = "audit.kubectl-promotion.dev/spec-change";
const REASON: &str = "kubectl-promotion.dev/approval-reason";

/// kyverno-manual-gate with the staging gate set as given, and production reached or not.
fn gate(approved: Option<bool>, production_reached: bool) -> Value {
    let mut object = example("kyverno-manual-gate.yaml");
    let manual = &mut object["spec"]["stages"][1]["trigger"]["manual"];
    match approved {
        Some(value) => manual["approved"] = json!(value),
        None => {
            manual.as_object_mut().unwrap().remove("approved");
        }
    }
    if production_reached {
        object["status"]["stages"].as_array_mut().unwrap().push(
            json!({"name": "production", "lastUpdateReconciledTime": "2026-02-16T08:00:00Z"}),
        );
        object["status"]["currentStageName"] = json!("production");
    }
    object
}

fn labelled(object: &Value) -> Value {
    let mut out = object.clone();
    out["metadata"]["labels"] = json!({"team": "platform"});
    out
}

fn approved(object: &Value) -> Option<&Value> {
    object["spec"]["stages"][1]["trigger"]["manual"].get("approved")
}

fn annotation(object: &Value, key: &str) -> Option<Value> {
    let text = object["metadata"]["annotations"].get(key)?.as_str()?;
    Some(serde_json::from_str(text).expect("audit annotations hold JSON"))
}

/// Send the mutated object again (as under `reinvocationPolicy: IfNeeded`): nothing more to do,
/// and nothing new to say (the API server passes identical warnings of one request on once).
async fn assert_idempotent(
    server: &Server,
    old: Option<&Value>,
    first: &Value,
    mutated: &Value,
    user: &support::User<'_>,
) {
    let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
    let again = server
        .review(
            "/mutate",
            &review("again", operation, Some(mutated), old, user),
        )
        .await;
    assert_eq!(again["allowed"], true, "{again}");
    assert_eq!(
        patch_of(&again),
        None,
        "second pass must not patch: {again}"
    );
    let said = warnings(first);
    for warning in warnings(&again) {
        assert!(
            said.contains(&warning),
            "new warning {warning:?} after {said:?}"
        );
    }
}

#[tokio::test]
async fn consumed_approval_is_removed_on_the_next_update() {
    let server = Server::start();
    let old = gate(Some(true), true);
    let new = labelled(&old);
    let response = server
        .review(
            "/mutate",
            &review("c1", "UPDATE", Some(&new), Some(&old), &BOB),
        )
        .await;
    assert_eq!(response["allowed"], true);
    assert_eq!(
        patch_of(&response),
        Some(json!([
            {"op": "test", "path": "/spec/stages/1/name", "value": "staging"},
            {"op": "test", "path": "/spec/stages/1/trigger/manual/approved", "value": true},
            {"op": "remove", "path": "/spec/stages/1/trigger/manual/approved"}
        ]))
    );
    assert_eq!(
        warnings(&response),
        [
            r#"approval of stage "staging" (no record of who gave it) removed: it was already used to promote to "production""#
        ]
    );

    // Computed against the raw object: only `approved` goes, everything else stays as sent.
    let mutated = apply(&new, &response);
    let mut expected = new.clone();
    expected["spec"]["stages"][1]["trigger"]["manual"]
        .as_object_mut()
        .unwrap()
        .remove("approved");
    assert_eq!(mutated, expected);
    assert_idempotent(&server, Some(&old), &response, &mutated, &BOB).await;
}

/// The gate with staging approved by alice (with `reason`), as the mutation recorded it.
fn approved_by_alice(reason: &str) -> Value {
    let mut object = gate(Some(true), false);
    let records = json!({"staging": {
        "user": "alice",
        "groups": ["system:authenticated", "release-managers"],
        "time": "2026-03-01T12:00:00Z",
        "reason": reason
    }});
    object["metadata"]["annotations"] = json!({APPROVALS: records.to_string()});
    object
}

#[tokio::test]
async fn an_update_that_drops_an_approval_warns_once_naming_who_gave_it() {
    let server = Server::start();
    let old = approved_by_alice("CAB-1");
    // `kubectl apply` of the manifest kept in git, which has no `approved`.
    let mut new = old.clone();
    new["spec"]["stages"][1]["trigger"]["manual"]
        .as_object_mut()
        .unwrap()
        .remove("approved");
    let result = chain(&server, "drop", &new, Some(&old), &BOB).await;
    assert!(result.allowed(), "{}", result.denial());
    // The only change: alice's record says who took her approval away, when and how.
    let mutated = apply(&new, &result.mutate);
    let record = &annotation(&mutated, APPROVALS).expect("records")["staging"];
    assert_eq!(
        (
            &record["user"],
            &record["removed"]["user"],
            &record["removed"]["how"]
        ),
        (&json!("alice"), &json!("bob"), &json!("update")),
        "{record}"
    );
    let mut unmarked = mutated.clone();
    unmarked["metadata"]["annotations"] = old["metadata"]["annotations"].clone();
    assert_eq!(unmarked, new);
    assert_idempotent(&server, Some(&old), &result.mutate, &mutated, &BOB).await;
    assert_eq!(
        warnings(&result.mutate),
        [
            r#"approval of stage "staging" (given by alice at 2026-03-01T12:00:00Z: "CAB-1") removed by this update"#
        ]
    );
    // The validating webhook sees the same loss and does not say it again.
    let validated = result.validate.as_ref().expect("validated");
    assert!(
        !warnings(validated)
            .iter()
            .any(|w| w.contains("approval of stage")),
        "{validated}"
    );
}

#[tokio::test]
async fn a_reset_by_the_webhook_is_one_warning_naming_who_gave_it() {
    let server = Server::start();
    let reason = "CAB-1042: canary in eu-west-1 clean for 24h, rollback plan in the change ticket";
    let old = approved_by_alice(reason);
    let mut new = old.clone();
    new["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    let response = server
        .review(
            "/mutate",
            &review("reset", "UPDATE", Some(&new), Some(&old), &BOB),
        )
        .await;
    let expected = format!(
        "approval of stage \"staging\" (given by alice at 2026-03-01T12:00:00Z: {reason:?}) reset: \
         spec.profileSpec changed, the new rollout needs a new approval"
    );
    // Longer than the 120 characters the API documentation suggests, and still one line.
    assert!(expected.chars().count() > 120);
    assert_eq!(warnings(&response), std::slice::from_ref(&expected));
    assert_eq!(approved(&apply(&new, &response)), None);

    // The same rollout with `approved` already dropped by the client (or by this webhook, called
    // again on its own output): the approval was going all the same, and is the same one warning.
    new["spec"]["stages"][1]["trigger"]["manual"]
        .as_object_mut()
        .unwrap()
        .remove("approved");
    let response = server
        .review(
            "/mutate",
            &review("dropped", "UPDATE", Some(&new), Some(&old), &BOB),
        )
        .await;
    assert_eq!(warnings(&response), [expected]);
}

#[tokio::test]
async fn pending_or_sticky_approvals_are_kept() {
    let server = Server::start();
    let pending = gate(Some(true), false);
    let response = server
        .review(
            "/mutate",
            &review(
                "p",
                "UPDATE",
                Some(&labelled(&pending)),
                Some(&pending),
                &BOB,
            ),
        )
        .await;
    assert_eq!(patch_of(&response), None, "{response}");

    let mut sticky = gate(Some(true), true);
    sticky["spec"]["stages"][1]["trigger"]["manual"]["automaticReset"] = json!(false);
    let response = server
        .review(
            "/mutate",
            &review("s", "UPDATE", Some(&labelled(&sticky)), Some(&sticky), &BOB),
        )
        .await;
    assert_eq!(patch_of(&response), None, "{response}");
}

#[tokio::test]
async fn a_new_rollout_resets_approvals_and_records_who_changed_it() {
    let server = Server::start();
    let old = gate(Some(true), false);
    let mut new = old.clone();
    new["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    let response = server
        .review(
            "/mutate",
            &review("r", "UPDATE", Some(&new), Some(&old), &ALICE),
        )
        .await;
    let warned = warnings(&response);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("\"staging\"") && w.contains("profileSpec changed")),
        "{warned:?}"
    );
    let mutated = apply(&new, &response);
    assert_eq!(approved(&mutated), None);
    let record = annotation(&mutated, SPEC_CHANGE).expect("spec-change record");
    assert_eq!(record["user"], "alice");
    assert!(record["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(mutated["spec"]["profileSpec"], new["spec"]["profileSpec"]);
    assert_idempotent(&server, Some(&old), &response, &mutated, &ALICE).await;
}

#[tokio::test]
async fn a_reordered_profile_spec_is_not_a_new_rollout() {
    let server = Server::start();
    let old = gate(Some(true), false);
    let mut new = old.clone();
    let chart = old["spec"]["profileSpec"]["helmCharts"][0]
        .as_object()
        .unwrap();
    let reversed: serde_json::Map<String, Value> = chart
        .iter()
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    new["spec"]["profileSpec"]["helmCharts"][0] = Value::Object(reversed);
    assert_ne!(
        serde_json::to_string(&new["spec"]["profileSpec"]).unwrap(),
        serde_json::to_string(&old["spec"]["profileSpec"]).unwrap()
    );
    let response = server
        .review(
            "/mutate",
            &review("o", "UPDATE", Some(&new), Some(&old), &ALICE),
        )
        .await;
    assert_eq!(patch_of(&response), None, "{response}");
}

#[tokio::test]
async fn an_approval_in_the_same_request_as_a_new_rollout_survives_and_is_recorded() {
    let server = Server::start();
    let old = gate(Some(false), false);
    let mut new = gate(Some(true), false);
    new["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    new["metadata"]["annotations"] = json!({REASON: "CHG-1234: canary looked good"});
    let result = chain(&server, "a", &new, Some(&old), &BOB).await;
    assert!(result.allowed(), "{}", result.denial());
    let mutated = &result.object;
    assert_eq!(approved(mutated), Some(&json!(true)));
    let records = annotation(mutated, APPROVALS).expect("approval records");
    assert_eq!(records["staging"]["user"], "bob");
    assert_eq!(
        records["staging"]["groups"],
        json!(["system:authenticated", "release-managers"])
    );
    assert_eq!(records["staging"]["reason"], "CHG-1234: canary looked good");
    assert!(mutated["metadata"]["annotations"].get(REASON).is_none());
    assert_eq!(annotation(mutated, SPEC_CHANGE).unwrap()["user"], "bob");
    assert_idempotent(&server, Some(&old), &result.mutate, mutated, &BOB).await;
}

#[tokio::test]
async fn approving_without_annotations_creates_the_map() {
    let server = Server::start();
    let old = gate(Some(false), false);
    let new = gate(Some(true), false);
    assert!(new["metadata"].get("annotations").is_none());
    let response = server
        .review(
            "/mutate",
            &review("m", "UPDATE", Some(&new), Some(&old), &ALICE),
        )
        .await;
    let patch = patch_of(&response).expect("a patch");
    assert_eq!(patch[0]["op"], "add");
    assert_eq!(patch[0]["path"], "/metadata/annotations");
    let mutated = apply(&new, &response);
    let records = annotation(&mutated, APPROVALS).unwrap();
    assert_eq!(records["staging"]["user"], "alice");
    assert!(records["staging"].get("reason").is_none());
    assert_idempotent(&server, Some(&old), &response, &mutated, &ALICE).await;
}

#[tokio::test]
async fn create_records_the_author_and_any_approval() {
    let server = Server::start();
    let mut object = gate(Some(true), false);
    object.as_object_mut().unwrap().remove("status");
    let result = chain(&server, "new", &object, None, &ALICE).await;
    assert!(result.allowed(), "{}", result.denial());
    assert_eq!(
        annotation(&result.object, SPEC_CHANGE).unwrap()["user"],
        "alice"
    );
    assert_eq!(
        annotation(&result.object, APPROVALS).unwrap()["staging"]["user"],
        "alice"
    );
    assert_idempotent(&server, None, &result.mutate, &result.object, &ALICE).await;
}

#[tokio::test]
async fn every_example_survives_the_mutate_then_validate_chain() {
    let server = Server::start();
    for (file, object) in examples() {
        let plain = server
            .review(
                "/validate",
                &review(&file, "CREATE", Some(&object), None, &ALICE),
            )
            .await;
        let result = chain(&server, &file, &object, None, &ALICE).await;
        assert_eq!(result.mutate["allowed"], true, "{file}: {}", result.mutate);
        let validated = result.validate.as_ref().unwrap();
        // The audit annotations the mutation adds change nothing in the verdict.
        assert_eq!(validated["allowed"], plain["allowed"], "{file}");
        assert_eq!(validated.get("warnings"), plain.get("warnings"), "{file}");
        assert_idempotent(&server, None, &result.mutate, &result.object, &ALICE).await;
    }
}

#[tokio::test]
async fn forged_audit_annotations_are_rejected() {
    let server = Server::start();
    let old = gate(Some(false), false);

    // An approval record for someone else.
    let mut forged = gate(Some(true), false);
    forged["metadata"]["annotations"] = json!({
        APPROVALS: json!({"staging": {"user": "bob", "groups": ["release-managers"], "time": "2026-02-16T07:40:00Z"}}).to_string()
    });
    // A spec-change record without a spec change.
    let mut spec_forged = labelled(&old);
    spec_forged["metadata"]["annotations"] =
        json!({SPEC_CHANGE: json!({"user": "carol", "time": "2026-02-16T07:40:00Z"}).to_string()});
    // An unknown key under the prefix.
    let mut unknown = labelled(&old);
    unknown["metadata"]["annotations"] =
        json!({"audit.kubectl-promotion.dev/approved-by": "alice"});

    for (what, new) in [
        ("record", &forged),
        ("spec-change", &spec_forged),
        ("unknown", &unknown),
    ] {
        for path in ["/mutate", "/validate"] {
            let response = server
                .review(path, &review(what, "UPDATE", Some(new), Some(&old), &ALICE))
                .await;
            assert_eq!(response["allowed"], false, "{what} {path}: {response}");
            let status = &response["status"];
            assert_eq!(status["code"], 403, "{what}: {status}");
            assert_eq!(status["reason"], "Forbidden");
            let message = status["message"].as_str().unwrap();
            assert!(
                message.contains("metadata.annotations[audit.kubectl-promotion.dev/"),
                "{message}"
            );
            assert!(response.get("patch").is_none());
        }
    }
}

#[tokio::test]
async fn audit_records_cannot_be_edited_or_removed() {
    let server = Server::start();
    // A stored object with a real record, made by the webhook itself.
    let old = gate(Some(false), false);
    let approving = {
        let mut o = gate(Some(true), false);
        o["metadata"]["annotations"] = json!({REASON: "first"});
        o
    };
    let stored = chain(&server, "store", &approving, Some(&old), &ALICE).await;
    assert!(stored.allowed());
    let stored = stored.object;

    let mut edited = labelled(&stored);
    let mut records = annotation(&stored, APPROVALS).unwrap();
    records["staging"]["reason"] = json!("rewritten history");
    edited["metadata"]["annotations"][APPROVALS] = json!(records.to_string());

    // What `kubectl replace` with a manifest lacking the annotations sends.
    let mut removed = labelled(&stored);
    removed["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");

    for (what, new, needle) in [
        ("edited", &edited, "does not approve"),
        ("removed", &removed, "removed"),
    ] {
        let result = chain(&server, what, new, Some(&stored), &BOB).await;
        assert!(!result.allowed(), "{what}");
        let message = result.denial()["status"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains(needle), "{what}: {message}");
        assert_eq!(result.denial()["status"]["code"], 403);
    }
    // Keeping them as read passes.
    let result = chain(&server, "kept", &labelled(&stored), Some(&stored), &BOB).await;
    assert!(result.allowed(), "{}", result.denial());
}
