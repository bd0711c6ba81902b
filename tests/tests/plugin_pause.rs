//! `kubectl promotion pause` and `resume` against the stand-in: one guarded merge patch of the
//! pause annotation per promotion, several names, `-l` and `--all`, dry runs, `-o`, idempotence,
//! the refusal for another reconciler; what describe, list, wait, plan --timeline and approve say
//! of a paused promotion; and, with the real webhook registered as installed, the record of who
//! paused, the brake working with the webhook down, and a resume refused naming the webhook.

mod plugin_common;

use plugin_common::*;
use promotion_e2e::backend::{BackendKind, Cluster};
use promotion_e2e::envtest::User;
use promotion_e2e::fixtures::WorldBuilder;
use promotion_shared::pause::{PAUSED_ANNOTATION, PAUSE_RECORD_ANNOTATION};
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";
const AUTO: &str = "kyverno-rollout-auto";
const RESOURCE: &str = "clusterpromotion.config.projectsveltos.io";

/// Said of every pause the webhook did not see.
const UNRECORDED: &str =
    "(who paused it is not recorded: the admission webhook did not see the pause)";

fn pause_annotation(p: &Value) -> Option<&str> {
    p["metadata"]["annotations"][PAUSED_ANNOTATION].as_str()
}

/// The manual gate (awaiting approval at staging) and the auto rollout (soaking at production).
fn two_promotions() -> Vec<Value> {
    let mut world: Vec<Value> = example_world("kyverno-manual-gate.yaml")
        .into_iter()
        .collect();
    world.push(example("kyverno-rollout-auto.yaml"));
    world
}

/// `GATE` paused as the webhook would have recorded it: by alice, with a reason.
fn recorded_pause(p: &mut Value) {
    p["metadata"]["annotations"][PAUSED_ANNOTATION] = json!("INC-4711");
    p["metadata"]["annotations"][PAUSE_RECORD_ANNOTATION] = json!(json!({
        "paused": true, "user": "alice", "time": "2026-02-16T07:40:00Z", "reason": "INC-4711"
    })
    .to_string());
}

#[test]
fn pause_and_resume_are_one_guarded_patch_each_and_idempotent() {
    let env = Env::start(two_promotions());
    let before = env.promotion(GATE);
    let out = env.run(&["pause", GATE, "--reason", "INC-4711"]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE} paused\n"));
    // No webhook in this stand-in: the pause went through, unrecorded, and the plugin says why.
    assert_eq!(
        out.stderr,
        format!(
            "warning: {GATE}: the pause carries no record of who made it: no mutating \
             admission webhook is registered for ClusterPromotions (promotion-webhook is not \
             installed)\n"
        )
    );
    assert_eq!(pause_annotation(&env.promotion(GATE)), Some("INC-4711"));
    // The annotation alone, guarded by the resourceVersion read.
    let patches = env.requests("PATCH", &format!("/clusterpromotions/{GATE}"));
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].content_type, "application/merge-patch+json");
    assert!(patches[0].query.contains("fieldManager=kubectl-promotion"));
    let sent: Value = serde_json::from_str(&patches[0].body).unwrap();
    assert_eq!(
        sent,
        json!({"metadata": {"resourceVersion": before["metadata"]["resourceVersion"],
                            "annotations": {PAUSED_ANNOTATION: "INC-4711"}}})
    );

    // Again, with or without the reason: nothing is written.
    for args in [
        &["pause", GATE][..],
        &["pause", GATE, "--reason", "INC-4711"],
    ] {
        let out = env.run(args).expect(0);
        assert_eq!(
            out.stdout,
            format!("{RESOURCE}/{GATE} unchanged: already paused {UNRECORDED}: \"INC-4711\"\n")
        );
    }
    assert_eq!(env.requests("PATCH", "/clusterpromotions/").len(), 1);
    // Another reason replaces it.
    env.run(&["pause", GATE, "--reason", "INC-4712"]).expect(0);
    assert_eq!(pause_annotation(&env.promotion(GATE)), Some("INC-4712"));

    env.server.clear_requests();
    let stored = env.promotion(GATE);
    let out = env.run(&["resume", GATE]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE} resumed\n"));
    assert_eq!(pause_annotation(&env.promotion(GATE)), None);
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    let sent: Value = serde_json::from_str(&patches[0].body).unwrap();
    assert_eq!(
        sent,
        json!({"metadata": {"resourceVersion": stored["metadata"]["resourceVersion"],
                            "annotations": {PAUSED_ANNOTATION: null}}})
    );
    let out = env.run(&["resume", GATE]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} unchanged: not paused\n")
    );
    assert_eq!(env.requests("PATCH", "/clusterpromotions/").len(), 1);

    // An empty reason is a usage error, not an empty annotation.
    let out = env.run(&["pause", GATE, "--reason", " "]).expect(1);
    assert_eq!(out.stderr, "error: --reason is empty\n");
}

#[test]
fn several_names_each_get_their_line_and_an_error_does_not_stop_the_others() {
    let env = Env::start(two_promotions());
    let out = env.run(&["pause", GATE, "nope", AUTO, "--reason", "freeze"]);
    let out = out.expect(1);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} paused\n{RESOURCE}/{AUTO} paused\n")
    );
    assert!(
        out.stderr
            .contains(&format!("error: {RESOURCE} \"nope\" not found\n")),
        "{}",
        out.stderr
    );
    for name in [GATE, AUTO] {
        assert_eq!(pause_annotation(&env.promotion(name)), Some("freeze"));
    }
    let out = env.run(&["resume", GATE, AUTO]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} resumed\n{RESOURCE}/{AUTO} resumed\n")
    );
}

#[test]
fn a_selector_or_all_choose_the_promotions() {
    let mut world = two_promotions();
    let gate = world
        .iter_mut()
        .find(|o| o["kind"] == "ClusterPromotion" && o["metadata"]["name"] == GATE)
        .unwrap();
    gate["metadata"]["labels"] = json!({"team": "platform"});
    let env = Env::start(world);
    let out = env.run(&["pause", "-l", "team=platform"]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE} paused\n"));
    assert_eq!(pause_annotation(&env.promotion(AUTO)), None);

    let out = env.run(&["resume", "--all"]).expect(0);
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            format!("{RESOURCE}/{AUTO} unchanged: not paused"),
            format!("{RESOURCE}/{GATE} resumed"),
        ]
    );
    assert_eq!(pause_annotation(&env.promotion(GATE)), None);

    let out = env.run(&["pause", "-l", "team=nobody"]).expect(1);
    assert_eq!(
        out.stderr,
        "error: no ClusterPromotion matches the selector \"team=nobody\"\n"
    );
    // Names and a selector do not mix, and something must be chosen.
    let out = env.run(&["pause", GATE, "-l", "team=platform"]).expect(1);
    assert!(out.stderr.contains("cannot be used with"), "{}", out.stderr);
    env.run(&["resume"]).expect(1);
    assert_eq!(env.requests("PATCH", "/clusterpromotions/").len(), 2);
}

#[test]
fn dry_runs_store_nothing_and_output_shows_the_object() {
    let env = Env::start(two_promotions());
    let out = env
        .run(&["pause", GATE, "--reason", "x", "--dry-run=client"])
        .expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{GATE} paused (dry run)\n"));
    assert!(
        out.stderr.contains(&format!(
            "merge patch that would be sent to {GATE} (guarded by its resourceVersion):"
        )) && out
            .stderr
            .contains(&format!("\"{PAUSED_ANNOTATION}\": \"x\"")),
        "{}",
        out.stderr
    );
    assert!(env.requests("PATCH", "").is_empty());

    let out = env
        .run(&[
            "pause",
            GATE,
            "--reason",
            "x",
            "--dry-run=server",
            "-o",
            "json",
        ])
        .expect(0);
    let shown: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(pause_annotation(&shown), Some("x"));
    // A dry run is not checked for a record: nothing was stored.
    assert_eq!(out.stderr, "");
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    assert!(
        patches[0].query.contains("dryRun=All"),
        "{}",
        patches[0].query
    );
    assert_eq!(pause_annotation(&env.promotion(GATE)), None);
    let out = env.run(&["pause", GATE, "--dry-run=server"]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} paused (server dry run)\n")
    );
    assert_eq!(pause_annotation(&env.promotion(GATE)), None);

    // -o name prints each name; -o yaml separates the documents as kubectl does.
    env.server.clear_requests();
    let out = env.run(&["pause", GATE, AUTO, "-o", "name"]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE}\n{RESOURCE}/{AUTO}\n")
    );
    assert_eq!(env.requests("PATCH", "/clusterpromotions/").len(), 2);
    // Unchanged, the object as stored is printed, and stderr says it was left alone.
    let out = env.run(&["pause", GATE, AUTO, "-o", "yaml"]).expect(0);
    assert_eq!(out.stdout.matches("\n---\n").count(), 1, "{}", out.stdout);
    assert!(out.stdout.contains(PAUSED_ANNOTATION), "{}", out.stdout);
    assert!(
        out.stderr
            .contains(&format!("{GATE} unchanged: already paused {UNRECORDED}")),
        "{}",
        out.stderr
    );
    assert_eq!(env.requests("PATCH", "/clusterpromotions/").len(), 2);
}

#[test]
fn a_promotion_another_reconciler_runs_is_refused() {
    let mut world = two_promotions();
    let gate = world
        .iter_mut()
        .find(|o| o["kind"] == "ClusterPromotion" && o["metadata"]["name"] == GATE)
        .unwrap();
    gate["metadata"]["managedFields"] = json!([{
        "manager": "addon-controller", "operation": "Update", "subresource": "status",
        "time": "2026-02-16T07:38:02Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:stages": {}}}}]);
    let env = Env::start(world);
    let described = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        described.contains("Reconciled by:  another reconciler (addon-controller)"),
        "{described}"
    );
    let out = env.run(&["pause", GATE, "--reason", "x"]).expect(1);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        format!(
            "error: \"{GATE}\" is reconciled by another reconciler (addon-controller), not \
             promotion-controller: only promotion-controller honours the annotation \
             {PAUSED_ANNOTATION}, so pausing it would hold nothing\n"
        )
    );
    let out = env.run(&["resume", GATE]).expect(1);
    assert!(
        out.stderr.contains(&format!(
            "so removing it changes nothing for addon-controller (kubectl annotate \
             clusterpromotion {GATE} {PAUSED_ANNOTATION}- removes it all the same)"
        )),
        "{}",
        out.stderr
    );
    // The other promotion of the same run is still paused.
    let out = env.run(&["pause", GATE, AUTO]).expect(1);
    assert_eq!(out.stdout, format!("{RESOURCE}/{AUTO} paused\n"));
    assert!(env
        .requests("PATCH", &format!("/clusterpromotions/{GATE}"))
        .is_empty());
    // Annotated by other means, describe says the pause holds nothing here.
    let mut p = env.promotion(GATE);
    p["metadata"]["annotations"] = json!({PAUSED_ANNOTATION: "by hand"});
    forget_version(&mut p);
    env.put(p);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains(
            "(but only promotion-controller honours the pause, and it does not run this \
             promotion: see Reconciled by)"
        ),
        "{t}"
    );
}

#[test]
fn describe_and_list_say_who_paused_it_and_that_resume_is_next() {
    let env = Env::start(two_promotions());
    env.run(&["pause", GATE, "--reason", "INC-4711"]).expect(0);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    for line in [
        "Phase:          paused\n".to_string(),
        format!(
            "Paused:         {UNRECORDED}: \"INC-4711\"; no stage starts and no approval is used \
             until `kubectl promotion resume {GATE}`\n"
        ),
        format!(
            "Next step:      kubectl promotion resume {GATE}   (while paused no stage starts \
             and no approval is used)\n"
        ),
    ] {
        assert!(t.contains(&line), "wanted {line:?} in\n{t}");
    }

    // As the webhook records it: who and when.
    let mut p = env.promotion(GATE);
    recorded_pause(&mut p);
    forget_version(&mut p);
    env.put(p);
    let t = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(
        t.contains(&format!(
            "Paused:         by alice at 2026-02-16T07:40:00Z: \"INC-4711\"; no stage starts and \
             no approval is used until `kubectl promotion resume {GATE}`\n"
        )),
        "{t}"
    );
    let json: Value =
        serde_json::from_str(&env.run(&["describe", GATE, "-o", "json"]).expect(0).stdout).unwrap();
    assert_eq!(json["phase"], "paused");
    assert_eq!(
        json["paused"],
        json!({"reason": "INC-4711", "stagesPhase": "awaitingApproval",
               "record": {"paused": true, "user": "alice", "time": "2026-02-16T07:40:00Z",
                          "reason": "INC-4711"}})
    );
    // Beneath the pause the gate still offers its approval.
    assert_eq!(json["awaitingApproval"], "staging");

    let list = env.run(&["list"]).expect(0).stdout;
    let row = list.lines().find(|l| l.starts_with(GATE)).unwrap();
    assert!(row.contains(" paused "), "{list}");
    let rows: Value =
        serde_json::from_str(&env.run(&["list", "-o", "json"]).expect(0).stdout).unwrap();
    let item = rows["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == GATE)
        .unwrap();
    assert_eq!(item["phase"], "paused");
    assert_eq!(
        item["message"],
        "paused by alice at 2026-02-16T07:40:00Z: \"INC-4711\"; Paused: Awaiting Manual \
         Approval (2026-02-16T07:38:02Z)"
    );
    let auto = rows["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == AUTO)
        .unwrap();
    assert_ne!(auto["phase"], "paused");
}

#[test]
fn approve_of_a_paused_promotion_approves_and_says_the_approval_waits() {
    let env = Env::start(two_promotions());
    env.run(&["pause", GATE, "--reason", "INC-4711"]).expect(0);
    let waits = format!(
        "{GATE} is paused {UNRECORDED}: \"INC-4711\": the approval is used once it is resumed \
         (kubectl promotion resume {GATE})"
    );
    let out = env.run(&["approve", GATE]).expect(0);
    assert_eq!(
        out.stdout,
        format!("{RESOURCE}/{GATE} approved (stage staging → production)\n")
    );
    assert!(out.stderr.contains(&waits), "{}", out.stderr);
    let stored = env.promotion(GATE);
    assert_eq!(
        stored["spec"]["stages"][1]["trigger"]["manual"]["approved"],
        true
    );
    assert_eq!(pause_annotation(&stored), Some("INC-4711"));
    let out = env.run(&["approve", GATE]).expect(0);
    assert!(out.stdout.contains("unchanged"), "{}", out.stdout);
    assert!(out.stderr.contains(&waits), "{}", out.stderr);
}

#[test]
fn wait_reports_the_pause_once_and_keeps_waiting() {
    let env = Env::start(two_promotions());
    env.run(&["pause", GATE, "--reason", "INC-4711"]).expect(0);
    // Paused now: --for=paused holds at once.
    let out = env
        .run(&["wait", GATE, "--for=paused", "--timeout=0"])
        .expect(0);
    assert_eq!(
        out.stdout,
        format!("{GATE} paused {UNRECORDED}: \"INC-4711\"\n")
    );
    // Not paused: it does not.
    env.run(&["wait", AUTO, "--for=paused", "--timeout=0"])
        .expect(3);

    let mut plugin = Running::start(
        &env,
        &["wait", GATE, "--for=stage=production", "--timeout=60s"],
    );
    // Said once the plugin follows the promotion (after the initial lists its watches go on
    // from), so the writes below reach it as watch events.
    plugin.expect_line(
        Stream::Stderr,
        &format!(
            "{GATE} is paused {UNRECORDED}: \"INC-4711\"; no stage starts and no approval is \
             used until `kubectl promotion resume {GATE}`; still waiting for stage=production"
        ),
    );
    env.run(&["approve", GATE]).expect(0);
    env.run(&["resume", GATE]).expect(0);
    plugin.expect_line(Stream::Stderr, &format!("{GATE} was resumed"));
    // Play the controller: the approval is used, production starts.
    let mut p = env.promotion(GATE);
    use_approval_and_reach(&mut p, "production");
    forget_version(&mut p);
    env.put(p);
    let out = plugin.finish().expect(0);
    assert!(
        out.stdout.contains("stage production reached"),
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stderr.matches(" is paused ").count(),
        1,
        "{}",
        out.stderr
    );
}

/// `promotion` with the hashes of its spec in its status, as a reconciler writes them (a
/// timeline of a status without them starts the rollout over).
fn reconciled(mut promotion: Value) -> Value {
    promotion["status"]["stagesHash"] = json!("");
    promotion_e2e::fixtures::hash_status_as_sveltos(&mut promotion);
    promotion
}

#[test]
fn plan_timeline_stops_at_the_pause() {
    let file = "kyverno-manual-gate.yaml";
    let mut p = reconciled(example(file));
    p["metadata"]["annotations"] = json!({PAUSED_ANNOTATION: "INC-4711"});
    let env = Env::start(world_of(WorldBuilder::new(), vec![(file, p)]));
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
            "\n2026-02-16T08:00:00Z   staging   paused: nothing starts until it is resumed\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.ends_with(&format!(
            "No estimate past the pause: the timeline stops at the pause ({GATE} is paused \
             {UNRECORDED}: \"INC-4711\"; no stage starts until `kubectl promotion resume \
             {GATE}`, then plan again)\n"
        )),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("production"), "{}", out.stdout);

    // An approval would be used only after the resume: it is not simulated.
    let mut json_args = args.to_vec();
    json_args.extend(["--approve-at", "staging=+1h", "-o", "json"]);
    let out = env.run(&json_args).expect(0);
    assert!(
        out.stderr.contains(&format!(
            "--approve-at is not simulated: {GATE} is paused, and no approval is used until it \
             is resumed"
        )),
        "{}",
        out.stderr
    );
    let timeline: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(timeline["paused"], json!({"reason": "INC-4711"}));
    assert_eq!(timeline.get("completes"), None, "{timeline}");
    assert!(
        timeline["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["stage"] != "production" && s["what"] != "approved"),
        "{timeline}"
    );
}

/// With the real webhook registered as installed (the rendered `manifests/`): the pause is
/// recorded (who, when, why) and describe shows it; with the webhook down a pause still goes
/// through (the pause webhooks fail open), unrecorded and said so, and a resume is refused
/// naming the webhook and its failurePolicy.
#[test]
fn the_webhook_records_the_pause_and_a_resume_needs_it() {
    let cluster = Cluster::new(BackendKind::StandIn).unwrap_or_else(|e| panic!("{e}"));
    let mut webhook = cluster.start_webhook(&[]).unwrap_or_else(|e| panic!("{e}"));
    let configs = webhook.configurations().unwrap_or_else(|e| panic!("{e}"));
    cluster
        .register_webhooks(configs)
        .unwrap_or_else(|e| panic!("{e}"));
    cluster.install_plugin().unwrap_or_else(|e| panic!("{e}"));
    let promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let name = promotion["metadata"]["name"].as_str().unwrap().to_string();
    cluster.put(&promotion).unwrap_or_else(|e| panic!("{e}"));
    let plugin = |args: &[&str]| {
        let mut all = vec!["promotion"];
        all.extend_from_slice(args);
        cluster
            .kubectl(User::Admin, &all)
            .unwrap_or_else(|e| panic!("{e}"))
    };

    let out = plugin(&["pause", &name, "--reason", "INC-4711"]).expect(0);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        (format!("{RESOURCE}/{name} paused\n").as_str(), "")
    );
    let t = plugin(&["describe", &name]).expect(0).stdout;
    let admin = User::Admin.name();
    assert!(
        t.contains(&format!("Paused:         by {admin} at "))
            && t.contains(&format!(
                ": \"INC-4711\"; no stage starts and no approval is used until `kubectl promotion \
             resume {name}`\n"
            )),
        "{t}"
    );

    webhook.stop();
    let url = webhook.base_url();
    let addr = url.trim_start_matches("https://").to_string();
    let configuration = format!("promotion-webhook-{}", cluster.session());
    let out = plugin(&["resume", &name]).expect(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: cannot patch clusterpromotions.config.projectsveltos.io {name:?}: admission \
             webhook \"mutate.kubectl-promotion.dev\" did not answer (failed to call webhook: \
             Post \"{url}/mutate?timeout=5s\": dial tcp {addr}: connect: connection refused); \
             its failurePolicy is Fail (MutatingWebhookConfiguration {configuration:?}), so the \
             API server refuses every change to ClusterPromotions until the webhook answers \
             again: check the promotion-webhook pods and their Service\n"
        )
    );
    // The brake works with the webhook down: unrecorded, and the plugin says which webhook
    // let it through.
    let out = plugin(&["pause", &name, "--reason", "INC-4712"]).expect(0);
    assert_eq!(out.stdout, format!("{RESOURCE}/{name} paused\n"));
    assert_eq!(
        out.stderr,
        format!(
            "warning: {name}: the pause carries no record of who made it: webhook \
             \"pause.mutate.kubectl-promotion.dev\" did not answer and its failurePolicy is \
             Ignore (MutatingWebhookConfiguration {configuration:?}), so the API server stored \
             the change without it\n"
        )
    );
    let t = plugin(&["describe", &name]).expect(0).stdout;
    assert!(
        t.contains(&format!("Paused:         {UNRECORDED}: \"INC-4712\";")),
        "{t}"
    );
}

#[test]
fn completion_offers_the_commands_and_the_promotions_each_one_changes() {
    let env = Env::start(two_promotions());
    env.run(&["pause", GATE]).expect(0);
    let first_fields = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["__complete"];
        all.extend_from_slice(args);
        let out = env.run(&all).expect(0);
        out.stdout
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(first_fields(&["resume", ""]), [GATE, ":4"]);
    assert_eq!(first_fields(&["pause", ""]), [AUTO, ":4"]);
    // A name already typed is not offered again.
    assert_eq!(first_fields(&["pause", AUTO, ""]), [":4"]);
    assert_eq!(first_fields(&["res"]), ["resume", ":4"]);
    assert_eq!(
        first_fields(&["wait", GATE, "--for=pa"]),
        ["--for=paused", ":4"]
    );
    let flags = first_fields(&["pause", GATE, "--"]);
    for flag in ["--reason", "--selector", "--all", "--dry-run", "--output"] {
        assert!(flags.iter().any(|f| f == flag), "{flag}: {flags:?}");
    }
}

/// A pipeline complete beneath its pause is complete: `describe -w` and `wait --for=complete`
/// end on it (exit 0), the pause shown.
#[test]
fn a_pipeline_complete_beneath_the_pause_ends_the_watches() {
    let mut p = example("kyverno-manual-gate.yaml");
    p["status"]["currentStageName"] = json!("production");
    p["status"]["stages"][1]["currentStatusDescription"] =
        json!("Successfully provisioned (2026-02-16T07:40:02Z)");
    p["status"]["stages"].as_array_mut().unwrap().push(json!({
        "name": "production",
        "currentStatusDescription": "All matching clusters are successfully deployed. (2026-02-16T07:45:00Z)",
        "lastSuccessfulAppliedTime": "2026-02-16T07:45:00Z",
        "lastUpdateReconciledTime": "2026-02-16T07:40:02Z"}));
    p["metadata"]["annotations"] = json!({PAUSED_ANNOTATION: "after the fact"});
    let env = Env::start(vec![p]);
    let json: Value =
        serde_json::from_str(&env.run(&["describe", GATE, "-o", "json"]).expect(0).stdout).unwrap();
    assert_eq!(
        (&json["phase"], &json["paused"]["stagesPhase"]),
        (&json!("paused"), &json!("complete"))
    );
    let out = env.run(&["describe", GATE, "-w"]).expect(0);
    assert!(
        out.stdout.contains("Phase:          paused\n"),
        "{}",
        out.stdout
    );
    let out = env
        .run(&["wait", GATE, "--for=complete", "--timeout=60s"])
        .expect(0);
    assert_eq!(out.stdout, format!("{GATE} complete\n"));
}
