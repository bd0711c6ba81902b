//! `kubectl promotion undo` against the stand-in: one guarded merge patch of the spec back to an
//! earlier revision (with the request annotation the webhook records), its refusals, dry runs, a
//! conflict retried, the abort of the replaced rollout removed in the same write, a promotion a
//! GitOps tool manages refused (and its manifest printed to commit), `history` showing an undo,
//! completion and the help's promises.

mod plugin_common;

use std::sync::atomic::Ordering;

use plugin_common::*;
use promotion_e2e::fixtures::World;
use promotion_shared::abort::{AbortRequest, ABORT_ANNOTATION};
use promotion_shared::admission::UNDO_ANNOTATION;
use promotion_shared::history::{
    Record, DEFAULT_NAMESPACE, PROMOTION_UID_LABEL, RECORD_ANNOTATION,
};
use promotion_shared::rollout::identity_of;
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";
const AUTO: &str = "kyverno-rollout-auto";
const RESOURCE: &str = "clusterpromotion.config.projectsveltos.io";

fn world() -> World {
    let mut world = example_world("kyverno-manual-gate.yaml");
    world.objects.push(example("kyverno-rollout-auto.yaml"));
    world
}

/// `GATE`'s spec as stored, with its chart at `version`.
fn spec_at(env: &Env, version: &str) -> Value {
    let mut spec = env.promotion(GATE)["spec"].clone();
    spec["profileSpec"]["helmCharts"][0]["chartVersion"] = json!(version);
    spec
}

/// A revision of `GATE` whose data is `spec`, as promotion-controller keeps it.
fn revision(env: &Env, number: i64, spec: &Value, record: Record) -> Value {
    let uid = env.promotion(GATE)["metadata"]["uid"].clone();
    let id = identity_of(&json!({ "spec": spec })).unwrap().id;
    let record = Record {
        stages_hash: id.stages_hash,
        profile_spec_hash: id.profile_spec_hash,
        started: format!("2026-02-16T0{number}:00:00Z"),
        ..record
    };
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("{GATE}-{number}"), "namespace": DEFAULT_NAMESPACE,
                     "labels": {PROMOTION_UID_LABEL: uid},
                     "annotations": {RECORD_ANNOTATION: serde_json::to_string(&record).unwrap()}},
        "revision": number,
        "data": {"profileSpec": spec["profileSpec"], "stages": spec["stages"]},
    })
}

/// `GATE`'s history: 1 rolled kyverno 3.6.0, 2 rolled 3.6.1, 3 is the spec (3.6.2).
fn with_history(env: &Env) {
    for (number, version) in [(1, "3.6.0"), (2, "3.6.1"), (3, "3.6.2")] {
        let spec = spec_at(env, version);
        env.put(revision(env, number, &spec, Record::default()));
    }
}

fn sent(env: &Env) -> Vec<Value> {
    env.requests("PATCH", &format!("/clusterpromotions/{GATE}"))
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

fn version_of(p: &Value) -> &str {
    p["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"]
        .as_str()
        .unwrap()
}

/// The promotion without what an undo writes, for comparing what else it changed.
fn untouched(mut p: Value) -> Value {
    let meta = p["metadata"].as_object_mut().unwrap();
    for key in [
        "resourceVersion",
        "managedFields",
        "annotations",
        "generation",
    ] {
        meta.remove(key);
    }
    p["spec"].as_object_mut().unwrap().remove("profileSpec");
    p
}

#[test]
fn undo_writes_the_previous_revisions_profile_spec_and_the_request_annotation() {
    let env = Env::start(world());
    with_history(&env);
    let before = env.promotion(GATE);
    let out = env.run(&["undo", GATE]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} undone to revision 2\n")
    );
    assert!(
        out.stderr.contains(&format!(
            "warning: {GATE}: the spec change carries no record of who made it nor that it \
             restores revision 2: no mutating admission webhook is registered for \
             ClusterPromotions"
        )) && out.stderr.contains(&format!(
            "{GATE}: promotion-controller starts a new rollout of revision 2's configuration \
             from the first stage, through every gate\n"
        )),
        "{}",
        out.stderr
    );
    // One merge patch: the chart version (all that differs in profileSpec) and the annotation,
    // guarded by the resourceVersion read; the stages are not sent.
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].content_type, "application/merge-patch+json");
    let mut charts = before["spec"]["profileSpec"]["helmCharts"].clone();
    charts[0]["chartVersion"] = json!("3.6.1");
    assert_eq!(
        sent(&env),
        [
            json!({"metadata": {"resourceVersion": before["metadata"]["resourceVersion"],
                             "annotations": {UNDO_ANNOTATION: "2"}},
                "spec": {"profileSpec": {"helmCharts": charts}}})
        ]
    );
    let after = env.promotion(GATE);
    assert_eq!(
        after["spec"]["profileSpec"],
        spec_at(&env, "3.6.1")["profileSpec"]
    );
    assert_eq!(after["metadata"]["annotations"][UNDO_ANNOTATION], "2");
    assert_eq!(untouched(after), untouched(before));
}

#[test]
fn other_stages_are_written_back_with_the_approvals_of_today() {
    let env = Env::start(world());
    let three = spec_at(&env, "3.6.2");
    // Revision 1 had only dev and production, production behind an approved manual gate.
    let mut one = three.clone();
    one["stages"] = json!([three["stages"][0].clone(), three["stages"][2].clone()]);
    one["stages"][1]["trigger"] = json!({"manual": {"approved": true, "automaticReset": true}});
    env.put(revision(&env, 1, &one, Record::default()));
    env.put(revision(&env, 2, &three, Record::default()));
    let out = env.run(&["undo", GATE]).expect(0);
    assert!(
        out.stderr
            .contains("(revision 1's stages too: every stage kept the approval it had)"),
        "{}",
        out.stderr
    );
    let after = env.promotion(GATE);
    let mut expected = one["stages"].clone();
    // production had no approval in the spec: the revision's is not given.
    expected[1]["trigger"] = json!({"manual": {"automaticReset": true}});
    assert_eq!(after["spec"]["stages"], expected);
    // Same profileSpec: not sent.
    assert_eq!(sent(&env)[0]["spec"].get("profileSpec"), None);
}

#[test]
fn refusals_say_why_and_what_is_kept_and_write_nothing() {
    let env = Env::start(world());
    with_history(&env);
    let cases: [(&[&str], String); 4] = [
        (
            &["--to-revision", "9"],
            format!(
                "error: \"{GATE}\": cannot undo: revision 9 is not in its history (kept: 1, 2, \
                 3; `kubectl promotion history {GATE}` lists them)\n"
            ),
        ),
        (
            &["--to-revision", "3"],
            format!(
                "error: \"{GATE}\": cannot undo: revision 3 is the spec's current configuration \
                 already: there is nothing to undo (kept: 1, 2, 3)\n"
            ),
        ),
        (
            &["--history-namespace", "elsewhere"],
            format!(
                "error: \"{GATE}\": cannot undo: there is no previous revision to go back to \
                 (kept: none)\n"
            ),
        ),
        (
            &["--to-revision", "0"],
            "error: --to-revision 0: revisions count from 1\n".to_string(),
        ),
    ];
    for (flags, error) in cases {
        let mut args = vec!["undo", GATE];
        args.extend_from_slice(flags);
        let out = env.run(&args).expect(1);
        assert_eq!(out.stderr, error, "{flags:?}");
        assert_eq!(out.stdout, "");
    }
    assert!(env.requests("PATCH", "/clusterpromotions/").is_empty());

    // Being deleted; reconciled by another reconciler.
    let mut world = world();
    let p = world.find_mut("ClusterPromotion", GATE).unwrap();
    p["metadata"]["deletionTimestamp"] = json!("2026-02-16T08:00:00Z");
    let auto = world.find_mut("ClusterPromotion", AUTO).unwrap();
    auto["metadata"]["managedFields"] = json!([{
        "manager": "addon-controller", "operation": "Update", "subresource": "status",
        "time": "2026-02-16T07:38:02Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:stages": {}}}}]);
    let env = Env::start(world);
    let out = env.run(&["undo", GATE]).expect(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: \"{GATE}\": cannot undo: it is being deleted (since 2026-02-16T08:00:00Z): \
             no rollout starts any more\n"
        )
    );
    let out = env.run(&["undo", AUTO]).expect(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: \"{AUTO}\": cannot undo: it is reconciled by another reconciler \
             (addon-controller), not promotion-controller: the rollout history is \
             promotion-controller's, and addon-controller does not keep it\n"
        )
    );
    assert!(env.requests("PATCH", "/clusterpromotions/").is_empty());
}

#[test]
fn dry_runs_store_nothing() {
    let env = Env::start(world());
    with_history(&env);
    let out = env.run(&["undo", GATE, "--dry-run=client"]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} undone to revision 2 (dry run)\n")
    );
    assert!(
        out.stderr.contains(&format!(
            "merge patch that would be sent to {GATE} (guarded by its resourceVersion):"
        )) && out.stderr.contains("\"chartVersion\": \"3.6.1\""),
        "{}",
        out.stderr
    );
    assert!(env.requests("PATCH", "").is_empty());

    let out = env
        .run(&[
            "undo",
            GATE,
            "--to-revision",
            "1",
            "--dry-run=server",
            "-o",
            "json",
        ])
        .expect(0);
    let shown: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(version_of(&shown), "3.6.0");
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    assert!(
        patches[0].query.contains("dryRun=All"),
        "{}",
        patches[0].query
    );
    assert_eq!(version_of(&env.promotion(GATE)), "3.6.2");
    let out = env.run(&["undo", GATE, "-o", "name"]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE}\n"));
    assert_eq!(version_of(&env.promotion(GATE)), "3.6.1");
}

#[test]
fn a_conflict_is_read_again_and_decided_again() {
    let env = Env::start(world());
    with_history(&env);
    // Once, before the first PATCH is applied: another writer labels the promotion.
    let count = interfere(&env, GATE, 1, |p| {
        p["metadata"]["labels"] = json!({"team": "platform"});
    });
    let out = env.run(&["undo", GATE]).expect(0);
    assert!(
        out.stderr.contains(&format!(
            "{GATE} changed while undoing (resourceVersion conflict); reading it again \
             (attempt 2/5)"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(count.load(Ordering::SeqCst), 2);
    let sent = sent(&env);
    assert_ne!(
        sent[0]["metadata"]["resourceVersion"], sent[1]["metadata"]["resourceVersion"],
        "the second patch is guarded by the version read again"
    );
    let after = env.promotion(GATE);
    assert_eq!(after["metadata"]["labels"], json!({"team": "platform"}));
    assert_eq!(version_of(&after), "3.6.1");
}

#[test]
fn the_abort_of_the_replaced_rollout_is_removed_in_the_same_write() {
    let env = Env::start(world());
    with_history(&env);
    let id = identity_of(&env.promotion(GATE)).unwrap().id;
    env.run(&["abort", GATE, "--reason", "INC-4711"]).expect(0);
    let request = AbortRequest {
        stages_hash: id.stages_hash,
        profile_spec_hash: id.profile_spec_hash,
        rollback_to: None,
        reason: Some("INC-4711".into()),
    };
    assert_eq!(
        env.promotion(GATE)["metadata"]["annotations"][ABORT_ANNOTATION],
        request.to_annotation()
    );
    env.server.clear_requests();
    let out = env.run(&["undo", GATE]).expect(0);
    assert!(
        out.stderr.contains(&format!(
            "{GATE}: the rollout it replaces was aborted (who is not recorded: the admission \
             webhook did not see the request): \"INC-4711\"; that request belonged to it and is \
             removed in the same write\n"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        sent(&env)[0]["metadata"]["annotations"],
        json!({UNDO_ANNOTATION: "2", ABORT_ANNOTATION: null})
    );
    let after = env.promotion(GATE);
    assert_eq!(after["metadata"]["annotations"].get(ABORT_ANNOTATION), None);
}

/// Argo CD syncs the promotion (server-side apply): undo writes nothing without --force, and
/// `-o yaml` prints the manifest to commit.
#[test]
fn a_promotion_a_gitops_tool_manages_is_refused_and_its_manifest_printed() {
    let mut world = world();
    let p = world.find_mut("ClusterPromotion", GATE).unwrap();
    p["metadata"]["managedFields"] = json!([{
        "manager": "argocd-controller", "operation": "Apply",
        "apiVersion": "config.projectsveltos.io/v1beta1", "time": "2026-02-16T07:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:profileSpec": {"f:helmCharts": {}}, "f:stages": {}}}}]);
    p["metadata"]["annotations"] = json!({
        "argocd.argoproj.io/tracking-id":
            "platform:config.projectsveltos.io/ClusterPromotion:/kyverno-rollout-man"});
    let env = Env::start(world);
    with_history(&env);
    let argo = "Argo CD (managedFields manager \"argocd-controller\" owns spec fields; annotation \
                argocd.argoproj.io/tracking-id \
                \"platform:config.projectsveltos.io/ClusterPromotion:/kyverno-rollout-man\")";
    let out = env.run(&["undo", GATE]).expect(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        format!(
            "error: \"{GATE}\" is managed by {argo}: it would set the spec back to what git \
             holds on its next sync (self-heal) and start yet another rollout, so undo writes \
             nothing; commit revision 2's spec to git instead (`kubectl promotion undo {GATE} \
             --to-revision 2 -o yaml` prints the manifest). `kubectl promotion rollback {GATE}` \
             sets the stages back now and leaves the spec alone; --force writes the undo all \
             the same\n"
        )
    );
    assert!(env.requests("PATCH", "").is_empty());

    let out = env
        .run(&["undo", GATE, "--to-revision", "2", "-o", "yaml"])
        .expect(2);
    assert!(
        out.stderr.contains(
            "commit the manifest printed (the promotion with revision 2's spec) to git instead"
        ),
        "{}",
        out.stderr
    );
    assert!(env.requests("PATCH", "").is_empty());
    // What kubectl reads back: the promotion with revision 2's spec and nothing the server,
    // the webhook or Argo CD writes.
    let manifest: Value = serde_saphyr::from_str(&out.stdout).unwrap();
    let stored = env.promotion(GATE);
    let mut expected = json!({
        "apiVersion": stored["apiVersion"], "kind": stored["kind"],
        "metadata": {"name": GATE},
        "spec": stored["spec"].clone(),
    });
    expected["spec"]["profileSpec"] = spec_at(&env, "3.6.1")["profileSpec"].clone();
    assert_eq!(manifest, expected);

    // --force: written, with a warning that the next sync takes it back.
    let out = env.run(&["undo", GATE, "--force"]).expect(0);
    assert!(
        out.stderr.contains(&format!(
            "warning: {GATE} is managed by {argo} (--force): its next sync sets the spec back to \
             what git holds unless git has revision 2's spec by then"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(version_of(&env.promotion(GATE)), "3.6.1");
}

#[test]
fn history_shows_a_revision_an_undo_started_as_one() {
    let env = Env::start(world());
    for (number, version, restored) in [(2, "3.6.1", None), (3, "3.6.0", Some(1))] {
        let record = Record {
            started_by: restored.map(|_| "dora".to_string()),
            restored_revision: restored,
            ..Record::default()
        };
        let spec = spec_at(&env, version);
        env.put(revision(&env, number, &spec, record));
    }
    let out = env.run(&["history", GATE]).expect(0);
    let row = out.stdout.lines().find(|l| l.starts_with("3 ")).unwrap();
    assert!(
        row.contains(" dora ") && row.ends_with("undo of 1: kyverno/kyverno 3.6.1 → 3.6.0"),
        "{}",
        out.stdout
    );
    let rows: Value =
        serde_json::from_str(&env.run(&["history", GATE, "-o", "json"]).expect(0).stdout).unwrap();
    assert_eq!(rows[1]["restoredRevision"], 1, "{rows}");
    assert!(rows[0].get("restoredRevision").is_none(), "{rows}");
}

#[test]
fn completion_and_help_know_undo() {
    let env = Env::start(world());
    let first_fields = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["__complete"];
        all.extend_from_slice(args);
        let out = env.run(&all).expect(0);
        out.stdout
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(first_fields(&["und"]), ["undo", ":4"]);
    let mut names = first_fields(&["undo", ""]);
    names.sort_unstable();
    assert_eq!(names, [":4", AUTO, GATE]);
    let flags = first_fields(&["undo", GATE, "--"]);
    for flag in [
        "--to-revision",
        "--history-namespace",
        "--force",
        "--dry-run",
        "--output",
    ] {
        assert!(flags.iter().any(|f| f == flag), "{flag}: {flags:?}");
    }
    let help = env.run(&["undo", "--help"]).expect(0).stdout;
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for sentence in [
        "by default the revision before the spec's current one, else --to-revision N",
        "every stage keeps the approved flag it has now (an undo never gives an approval)",
        "Exit status: 0 undone; 1 refused or error; 2 a GitOps tool manages the promotion and \
         nothing was written (with -o yaml or json the manifest to commit is printed).",
    ] {
        let sentence = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains(&sentence), "help lacks {sentence:?}:\n{help}");
    }
}
