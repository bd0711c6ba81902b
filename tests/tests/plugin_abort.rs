//! `kubectl promotion abort`, `rollback` and `retry` against the stand-in: one guarded merge
//! patch of the abort annotation (nothing else written), the rollback target chosen and refused
//! by the shared rule, dry runs, a conflict retried, retry; and what describe, list, wait,
//! plan --timeline and completion say of an aborted or rolled back promotion, with the webhook's
//! record of who did it present and absent.

mod plugin_common;

use std::sync::atomic::Ordering;

use plugin_common::*;
use promotion_e2e::fixtures::WorldBuilder;
use promotion_shared::abort::{
    AbortRecord, AbortRequest, ABORT_ANNOTATION, ABORT_RECORD_ANNOTATION,
};
use promotion_shared::history::{
    rollback_target, Record, Revision, StageRecord, DEFAULT_NAMESPACE, PROMOTION_UID_LABEL,
    RECORD_ANNOTATION,
};
use promotion_shared::rollout::{identity_of, RolloutId};
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";
const AUTO: &str = "kyverno-rollout-auto";
const RESOURCE: &str = "clusterpromotion.config.projectsveltos.io";

/// Said of every request the webhook did not see.
const UNRECORDED: &str = "(who is not recorded: the admission webhook did not see the request)";

/// The manual gate (awaiting approval at staging) and the auto rollout (soaking at production).
fn two_promotions() -> Vec<Value> {
    let mut world: Vec<Value> = example_world("kyverno-manual-gate.yaml")
        .into_iter()
        .collect();
    world.push(example("kyverno-rollout-auto.yaml"));
    world
}

fn abort_annotation(p: &Value) -> Option<&str> {
    p["metadata"]["annotations"][ABORT_ANNOTATION].as_str()
}

fn current(env: &Env) -> RolloutId {
    identity_of(&env.promotion(GATE)).unwrap().id
}

fn request(id: &RolloutId, rollback_to: Option<i64>, reason: Option<&str>) -> String {
    AbortRequest {
        stages_hash: id.stages_hash.clone(),
        profile_spec_hash: id.profile_spec_hash.clone(),
        rollback_to,
        reason: reason.map(String::from),
    }
    .to_annotation()
}

/// A revision of `GATE` as promotion-controller keeps it: its rollout, the stages it reached,
/// and whether it completed.
fn revision(
    uid: &str,
    number: i64,
    rollout: &RolloutId,
    reached: &[&str],
    completed: bool,
) -> Value {
    let record = Record {
        stages_hash: rollout.stages_hash.clone(),
        profile_spec_hash: rollout.profile_spec_hash.clone(),
        started: "2026-02-16T06:00:00Z".into(),
        stages: reached
            .iter()
            .map(|s| StageRecord {
                name: s.to_string(),
                reached: "2026-02-16T06:10:00Z".into(),
                deployed: None,
            })
            .collect(),
        completed: completed.then(|| "2026-02-16T06:50:00Z".to_string()),
        ..Record::default()
    };
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("{GATE}-{number}"), "namespace": DEFAULT_NAMESPACE,
                     "labels": {PROMOTION_UID_LABEL: uid},
                     "annotations": {RECORD_ANNOTATION: serde_json::to_string(&record).unwrap()}},
        "revision": number,
        "data": {"profileSpec": {"syncMode": "Continuous"}},
    })
}

/// `GATE`'s history: 1 and 2 completed, 3 never did (it reached dev), 4 is the spec's rollout.
fn with_history(env: &Env) -> Vec<Revision> {
    let uid = env.promotion(GATE)["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let id = current(env);
    let earlier = |profile: &str| RolloutId {
        stages_hash: id.stages_hash.clone(),
        profile_spec_hash: profile.to_string(),
    };
    let objects = [
        revision(
            &uid,
            1,
            &earlier("one"),
            &["dev", "staging", "production"],
            true,
        ),
        revision(
            &uid,
            2,
            &earlier("two"),
            &["dev", "staging", "production"],
            true,
        ),
        revision(&uid, 3, &earlier("three"), &["dev"], false),
        revision(&uid, 4, &id, &["dev", "staging"], false),
    ];
    objects
        .iter()
        .map(|o| {
            env.put(o.clone());
            Revision::decode(o).unwrap()
        })
        .collect()
}

/// The promotion without what every write changes, for comparing what else a write changed.
fn untouched(mut p: Value) -> Value {
    let meta = p["metadata"].as_object_mut().unwrap();
    for key in ["resourceVersion", "managedFields", "annotations"] {
        meta.remove(key);
    }
    p
}

fn sent(env: &Env) -> Vec<Value> {
    env.requests("PATCH", &format!("/clusterpromotions/{GATE}"))
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

#[test]
fn abort_sets_the_annotation_alone_and_a_second_abort_is_refused() {
    let env = Env::start(two_promotions());
    let before = env.promotion(GATE);
    let id = current(&env);
    let out = env.run(&["abort", GATE, "--reason", "INC-4711"]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE} aborted\n"));
    assert!(
        out.stderr.contains(&format!(
            "warning: {GATE}: the abort carries no record of who made it: no mutating admission \
             webhook is registered for ClusterPromotions"
        )) && out.stderr.contains(&format!(
            "{GATE}: promotion-controller starts no stage of this rollout, passes no gate and \
             uses no approval until `kubectl promotion retry {GATE}`"
        )),
        "{}",
        out.stderr
    );
    // One merge patch of the annotation alone, guarded by the resourceVersion read.
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].content_type, "application/merge-patch+json");
    assert_eq!(
        sent(&env),
        [
            json!({"metadata": {"resourceVersion": before["metadata"]["resourceVersion"],
                             "annotations": {ABORT_ANNOTATION: request(&id, None, Some("INC-4711"))}}})
        ]
    );
    let after = env.promotion(GATE);
    assert_eq!(untouched(after.clone()), untouched(before.clone()));
    let mut annotations = before["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    annotations.insert(
        ABORT_ANNOTATION.into(),
        json!(request(&id, None, Some("INC-4711"))),
    );
    assert_eq!(after["metadata"]["annotations"], Value::Object(annotations));

    let out = env.run(&["abort", GATE]).expect(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: \"{GATE}\": its rollout is already aborted {UNRECORDED}: \"INC-4711\"; \
             `kubectl promotion retry {GATE}` resumes it where it stopped\n"
        )
    );
    assert_eq!(out.stdout, "");
    assert_eq!(env.requests("PATCH", "/clusterpromotions/").len(), 1);
    // An empty reason is a usage error.
    let out = env.run(&["abort", AUTO, "--reason", " "]).expect(1);
    assert_eq!(out.stderr, "error: --reason is empty\n");
}

#[test]
fn rollback_goes_to_the_newest_completed_revision_and_leaves_the_spec_alone() {
    let env = Env::start(two_promotions());
    with_history(&env);
    let before = env.promotion(GATE);
    let id = current(&env);
    let out = env
        .run(&["rollback", GATE, "--reason", "INC-4711"])
        .expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} rolled back to revision 2\n")
    );
    assert!(
        out.stderr.contains(&format!(
            "{GATE}: promotion-controller applies revision 2's stage profiles to every stage not \
             running it; the spec is left as it is (revision 4), and `kubectl promotion retry \
             {GATE}` starts it again from its first stage\n"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        sent(&env),
        [
            json!({"metadata": {"resourceVersion": before["metadata"]["resourceVersion"],
                             "annotations": {ABORT_ANNOTATION: request(&id, Some(2), Some("INC-4711"))}}})
        ]
    );
    assert_eq!(untouched(env.promotion(GATE)), untouched(before));
    // The same rollback again is refused, saying what retry does.
    let out = env.run(&["rollback", GATE]).expect(1);
    assert!(
        out.stderr.contains(&format!(
            "its rollout is already rolled back to revision 2 {UNRECORDED}: \"INC-4711\"; \
             `kubectl promotion retry {GATE}` starts it again from its first stage"
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn an_aborted_rollout_is_rolled_back_by_replacing_its_abort() {
    let env = Env::start(two_promotions());
    with_history(&env);
    let id = current(&env);
    env.run(&["abort", GATE, "--reason", "INC-4711"]).expect(0);
    let out = env.run(&["rollback", GATE, "--to-revision", "1"]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} rolled back to revision 1\n")
    );
    assert_eq!(
        abort_annotation(&env.promotion(GATE)),
        Some(request(&id, Some(1), Some("INC-4711")).as_str())
    );
}

#[test]
fn rollback_refusals_are_the_shared_rule_in_its_words() {
    let env = Env::start(two_promotions());
    let revisions = with_history(&env);
    let id = current(&env);
    for n in [3, 4, 9] {
        let why = rollback_target(&revisions, &id, Some(n)).unwrap_err();
        let out = env
            .run(&["rollback", GATE, "--to-revision", &n.to_string()])
            .expect(1);
        assert_eq!(
            out.stderr,
            format!("error: \"{GATE}\": cannot roll back: {why}\n")
        );
        assert_eq!(out.stdout, "");
    }
    // Another history namespace holds nothing: no completed revision to go back to.
    let out = env
        .run(&["rollback", GATE, "--history-namespace", "elsewhere"])
        .expect(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: \"{GATE}\": cannot roll back: {}\n",
            rollback_target(&[], &id, None).unwrap_err()
        )
    );
    let out = env.run(&["rollback", GATE, "--to-revision", "0"]).expect(1);
    assert_eq!(
        out.stderr,
        "error: --to-revision 0: revisions count from 1\n"
    );
    assert!(env.requests("PATCH", "/clusterpromotions/").is_empty());
    assert_eq!(abort_annotation(&env.promotion(GATE)), None);
}

#[test]
fn dry_runs_store_nothing() {
    let env = Env::start(two_promotions());
    with_history(&env);
    let out = env.run(&["rollback", GATE, "--dry-run=client"]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} rolled back to revision 2 (dry run)\n")
    );
    assert!(
        out.stderr.contains(&format!(
            "merge patch that would be sent to {GATE} (guarded by its resourceVersion):"
        )),
        "{}",
        out.stderr
    );
    assert!(env.requests("PATCH", "").is_empty());

    let out = env
        .run(&["abort", GATE, "--dry-run=server", "-o", "json"])
        .expect(0);
    let shown: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(abort_annotation(&shown).is_some(), "{shown}");
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    assert!(
        patches[0].query.contains("dryRun=All"),
        "{}",
        patches[0].query
    );
    assert_eq!(abort_annotation(&env.promotion(GATE)), None);
    let out = env.run(&["abort", GATE, "-o", "name"]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE}\n"));
}

#[test]
fn a_conflict_is_read_again_and_retried() {
    let env = Env::start(two_promotions());
    with_history(&env);
    // Once, before the first PATCH is applied: another writer labels the promotion.
    let count = interfere(&env, GATE, 1, |p| {
        p["metadata"]["labels"] = json!({"team": "platform"});
    });
    let out = env.run(&["rollback", GATE]).expect(0);
    assert!(
        out.stderr.contains(&format!(
            "{GATE} changed while rolling back (resourceVersion conflict); reading it again \
             (attempt 2/5)"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(count.load(Ordering::SeqCst), 2);
    let after = env.promotion(GATE);
    assert_eq!(after["metadata"]["labels"], json!({"team": "platform"}));
    assert_eq!(
        abort_annotation(&after),
        Some(request(&current(&env), Some(2), None).as_str())
    );
}

#[test]
fn retry_removes_the_request_and_says_what_follows() {
    let env = Env::start(two_promotions());
    with_history(&env);
    let out = env.run(&["retry", GATE]).expect(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: \"{GATE}\": there is nothing to retry: no rollout of it is aborted (it has \
             no {ABORT_ANNOTATION} annotation)\n"
        )
    );
    env.run(&["rollback", GATE]).expect(0);
    env.server.clear_requests();
    let stored = env.promotion(GATE);
    let out = env.run(&["retry", GATE]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE} retried\n"));
    assert!(
        out.stderr.contains(&format!(
            "{GATE}: promotion-controller starts the spec's rollout again from its first stage, \
             through its gates (the stages it had reached run revision 2 until then)\n"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        sent(&env),
        [
            json!({"metadata": {"resourceVersion": stored["metadata"]["resourceVersion"],
                             "annotations": {ABORT_ANNOTATION: null}}})
        ]
    );
    assert_eq!(abort_annotation(&env.promotion(GATE)), None);

    env.run(&["abort", GATE]).expect(0);
    let out = env.run(&["retry", GATE]).expect(0);
    assert!(
        out.stderr
            .contains("promotion-controller resumes the rollout where it stopped"),
        "{}",
        out.stderr
    );
}

/// `GATE`'s abort request `value` as the webhook records it: by alice.
fn recorded(p: &mut Value, value: &str) {
    p["metadata"]["annotations"][ABORT_ANNOTATION] = json!(value);
    p["metadata"]["annotations"][ABORT_RECORD_ANNOTATION] =
        json!(serde_json::to_string(&AbortRecord {
            aborted: true,
            user: "alice".into(),
            time: "2026-02-16T07:40:00Z".into(),
            request: Some(value.to_string()),
        })
        .unwrap());
}

fn list_item(env: &Env, name: &str) -> Value {
    let rows: Value =
        serde_json::from_str(&env.run(&["list", "-o", "json"]).expect(0).stdout).unwrap();
    rows["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap()
        .clone()
}

#[test]
fn describe_and_list_show_the_abort_who_made_it_and_retry_next() {
    let env = Env::start(two_promotions());
    with_history(&env);
    let id = current(&env);
    env.run(&["abort", GATE, "--reason", "INC-4711"]).expect(0);
    // An abort wins over a pause: a retry, not a resume, releases it.
    env.run(&["pause", GATE]).expect(0);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    for line in [
        "Phase:          aborted\n".to_string(),
        format!(
            "Aborted:        aborted {UNRECORDED}: \"INC-4711\"; no stage of this rollout starts \
             and no approval is used until `kubectl promotion retry {GATE}`\n"
        ),
        format!(
            "Next step:      kubectl promotion retry {GATE}   (the rollout resumes where it \
             stopped)\n"
        ),
    ] {
        assert!(t.contains(&line), "wanted {line:?} in\n{t}");
    }
    let list = env.run(&["list"]).expect(0).stdout;
    let row = list.lines().find(|l| l.starts_with(GATE)).unwrap();
    assert!(row.contains(" aborted "), "{list}");
    assert_ne!(list_item(&env, AUTO)["phase"], "aborted");

    // As the webhook records it: who and when.
    let mut p = env.promotion(GATE);
    recorded(&mut p, &request(&id, None, Some("INC-4711")));
    forget_version(&mut p);
    env.put(p);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains(
            "Aborted:        aborted by alice at 2026-02-16T07:40:00Z: \"INC-4711\"; no stage"
        ),
        "{t}"
    );
    assert!(
        list_item(&env, GATE)["message"]
            .as_str()
            .unwrap()
            .starts_with("aborted by alice at 2026-02-16T07:40:00Z: \"INC-4711\"; "),
        "{}",
        list_item(&env, GATE)
    );

    // Rolled back to 2, recorded: rolling back until every stage says it runs revision 2.
    let mut p = env.promotion(GATE);
    recorded(&mut p, &request(&id, Some(2), Some("INC-4711")));
    forget_version(&mut p);
    env.put(p);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    for line in [
        "Phase:          rolling back\n".to_string(),
        format!(
            "Aborted:        rolled back to revision 2 by alice at 2026-02-16T07:40:00Z: \
             \"INC-4711\" (spec still at revision 4); `kubectl promotion retry {GATE}` starts \
             the spec's rollout again from its first stage\n"
        ),
    ] {
        assert!(t.contains(&line), "wanted {line:?} in\n{t}");
    }
    let mut p = env.promotion(GATE);
    for stage in p["status"]["stages"].as_array_mut().unwrap() {
        stage["currentStatusDescription"] =
            json!("Rolled back to revision 2 (2026-02-16T07:45:00Z)");
    }
    p["status"]["currentStageName"] = Value::Null;
    forget_version(&mut p);
    env.put(p);
    let json: Value =
        serde_json::from_str(&env.run(&["describe", GATE, "-o", "json"]).expect(0).stdout).unwrap();
    assert_eq!(json["phase"], "rolledBack");
    assert_eq!(
        json["aborted"],
        json!({"rollbackTo": 2, "reason": "INC-4711", "specRevision": 4,
               "record": {"aborted": true, "user": "alice", "time": "2026-02-16T07:40:00Z",
                          "request": request(&id, Some(2), Some("INC-4711"))}})
    );
    assert!(
        json["nextStep"].as_str().unwrap().starts_with(&format!(
            "kubectl promotion retry {GATE}   (starts the spec's rollout again"
        )),
        "{json}"
    );
    let list = env.run(&["list"]).expect(0).stdout;
    let row = list.lines().find(|l| l.starts_with(GATE)).unwrap();
    assert!(row.contains(" rolled back "), "{list}");
}

#[test]
fn wait_answers_aborted_and_rolled_back_and_reports_an_abort() {
    let env = Env::start(two_promotions());
    env.run(&["abort", GATE, "--reason", "INC-4711"]).expect(0);
    let out = env
        .run(&["wait", GATE, "--for=aborted", "--timeout=0"])
        .expect(0);
    assert_eq!(
        out.stdout,
        format!("{GATE} aborted {UNRECORDED}: \"INC-4711\"\n")
    );
    env.run(&["wait", GATE, "--for=rolled-back", "--timeout=0"])
        .expect(3);
    env.run(&["wait", AUTO, "--for=aborted", "--timeout=0"])
        .expect(3);
    let out = env
        .run(&["wait", GATE, "--for=complete", "--timeout=0"])
        .expect(3);
    assert!(
        out.stderr.contains(&format!(
            "{GATE}'s rollout is aborted {UNRECORDED}: \"INC-4711\"; no stage of this rollout \
             starts and no approval is used until `kubectl promotion retry {GATE}`; still \
             waiting for complete"
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn plan_timeline_stops_at_the_abort() {
    let file = "kyverno-manual-gate.yaml";
    let mut p = example(file);
    p["status"]["stagesHash"] = json!("");
    promotion_e2e::fixtures::hash_status_as_sveltos(&mut p);
    let env = Env::start(world_of(WorldBuilder::new(), vec![(file, p)]));
    // The request names the rollout of the promotion as stored (with the CRD's defaults).
    let mut p = env.promotion(GATE);
    p["metadata"]["annotations"] =
        json!({ABORT_ANNOTATION: request(&current(&env), None, Some("INC-4711"))});
    forget_version(&mut p);
    env.put(p);
    let args = [
        "plan",
        GATE,
        "--timeline",
        "--start",
        "2026-02-16T08:00:00Z",
    ];
    let out = env.run(&args).expect(0);
    assert!(
        out.stdout.contains(
            "\n2026-02-16T08:00:00Z   staging   aborted: nothing starts until it is retried\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.ends_with(&format!(
            "No estimate past the abort: the timeline stops at the abort ({GATE}'s rollout is \
             aborted {UNRECORDED}: \"INC-4711\"; no stage starts until `kubectl promotion retry \
             {GATE}`, then plan again)\n"
        )),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("production"), "{}", out.stdout);
    let mut json_args = args.to_vec();
    json_args.extend(["--approve-at", "staging=+1h", "-o", "json"]);
    let out = env.run(&json_args).expect(0);
    assert!(
        out.stderr.contains(&format!(
            "--approve-at is not simulated: {GATE}'s rollout is aborted, and no approval is used \
             until it is retried"
        )),
        "{}",
        out.stderr
    );
    let timeline: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        timeline["aborted"],
        format!("aborted {UNRECORDED}: \"INC-4711\"")
    );
    assert_eq!(timeline.get("completes"), None, "{timeline}");
}

#[test]
fn completion_offers_the_commands_and_the_promotions_each_one_applies_to() {
    let env = Env::start(two_promotions());
    env.run(&["abort", GATE]).expect(0);
    let first_fields = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["__complete"];
        all.extend_from_slice(args);
        let out = env.run(&all).expect(0);
        out.stdout
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(first_fields(&["ab"]), ["abort", ":4"]);
    assert_eq!(first_fields(&["rol"]), ["rollback", ":4"]);
    assert_eq!(first_fields(&["ret"]), ["retry", ":4"]);
    assert_eq!(first_fields(&["retry", ""]), [GATE, ":4"]);
    assert_eq!(first_fields(&["abort", ""]), [AUTO, ":4"]);
    let mut rollback = first_fields(&["rollback", ""]);
    rollback.sort_unstable();
    assert_eq!(rollback, [":4", AUTO, GATE]);
    assert_eq!(
        first_fields(&["wait", GATE, "--for=rol"]),
        ["--for=rolled-back", ":4"]
    );
    let flags = first_fields(&["rollback", GATE, "--"]);
    for flag in [
        "--to-revision",
        "--reason",
        "--history-namespace",
        "--dry-run",
        "--output",
    ] {
        assert!(flags.iter().any(|f| f == flag), "{flag}: {flags:?}");
    }
}
