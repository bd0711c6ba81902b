//! `kubectl promotion approve` against the stand-in: the default stage, every refusal, the
//! guarded merge patch (never another stage, nothing else touched), conflict retries under a
//! concurrent writer, dry runs, the reason annotation and `--wait`.

mod plugin_common;

use std::sync::atomic::{AtomicUsize, Ordering};

use plugin_common::*;
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";

/// Manual gate example with four stages so that `qa` is a gate the pipeline has not reached,
/// and `automaticReset: false` somewhere else to prove it is left alone.
fn four_stage_gate() -> Value {
    let mut p = example("kyverno-manual-gate.yaml");
    let stages = p["spec"]["stages"].as_array_mut().unwrap();
    stages.insert(
        2,
        json!({"name": "qa", "clusterSelector": {"matchLabels": {"env": "qa"}},
               "trigger": {"manual": {"automaticReset": false, "delay": "1m"}}}),
    );
    p
}

fn approved(p: &Value, stage: &str) -> Option<Value> {
    p["spec"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == stage)
        .and_then(|s| s.pointer("/trigger/manual/approved").cloned())
}

/// Everything but `approved` of the named stage and the server-managed metadata.
fn without(p: &Value, stage: &str) -> Value {
    let mut v = p.clone();
    for s in v["spec"]["stages"].as_array_mut().unwrap() {
        if s["name"] == stage {
            s["trigger"]["manual"]
                .as_object_mut()
                .unwrap()
                .remove("approved");
        }
    }
    for k in [
        "resourceVersion",
        "generation",
        "managedFields",
        "annotations",
    ] {
        v["metadata"].as_object_mut().unwrap().remove(k);
    }
    v
}

#[test]
fn approves_the_stage_awaiting_approval_and_nothing_else() {
    let env = Env::start(vec![four_stage_gate()]);
    let before = env.promotion(GATE);
    let out = env.run(&["approve", GATE]).expect(0);
    assert_eq!(
        out.stdout,
        "clusterpromotion.config.projectsveltos.io/kyverno-rollout-man approved (stage staging → qa)\n"
    );
    let after = env.promotion(GATE);
    assert_eq!(approved(&after, "staging"), Some(json!(true)));
    assert_eq!(approved(&after, "qa"), None);
    // Every other field, automaticReset included, is exactly as it was.
    assert_eq!(without(&after, "staging"), without(&before, "staging"));
    assert_eq!(
        after["spec"]["stages"][2]["trigger"]["manual"],
        json!({"automaticReset": false, "delay": "1m"})
    );
    // One merge patch, guarded by the resourceVersion read: the stage list as read, with the
    // one flag set.
    let patches = env.requests("PATCH", "/clusterpromotions/kyverno-rollout-man");
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].content_type, "application/merge-patch+json");
    let sent: Value = serde_json::from_str(&patches[0].body).unwrap();
    let mut stages = before["spec"]["stages"].clone();
    stages[1]["trigger"]["manual"]["approved"] = json!(true);
    assert_eq!(
        sent,
        json!({"metadata": {"resourceVersion": before["metadata"]["resourceVersion"]},
               "spec": {"stages": stages}})
    );
    assert!(patches[0].query.contains("fieldManager=kubectl-promotion"));
}

#[test]
fn refusals_name_what_can_be_approved_and_write_nothing() {
    let env = Env::start(vec![
        four_stage_gate(),
        example("kyverno-rollout-auto.yaml"),
    ]);
    let cases: [(&[&str], &str); 5] = [
        (&["approve", GATE, "--stage", "uat"], "has no stage \"uat\" (stages: dev, staging, qa, production); stages that can be approved: staging, qa"),
        (&["approve", GATE, "--stage", "dev"], "stage \"dev\" has an auto trigger: it promotes to \"staging\" by itself (auto: delay 2m)"),
        (&["approve", GATE, "--stage", "production"], "stage \"production\" has no trigger: it completes the pipeline as soon as its clusters are provisioned; stages that can be approved: staging, qa"),
        (&["approve", GATE, "--stage", "qa"], "the pipeline has not reached stage \"qa\" yet (it is awaiting approval at stage staging (awaiting approval)); pass --pre-approve"),
        (&["approve", "kyverno-rollout-auto"], "no stage of \"kyverno-rollout-auto\" is awaiting approval: it is progressing at stage production (soaking until 2026-02-16T06:36:24Z). Pass --stage to choose one (this promotion has no stage with a manual trigger, so nothing can be approved)"),
    ];
    for (args, message) in cases {
        let out = env.run(args).expect(1);
        assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
        assert!(out.stderr.contains(message), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.stderr);
        assert_eq!(out.stdout, "");
    }
    assert!(env.requests("PATCH", "").is_empty());
}

/// A promotion whose only manual gate the current rollout already passed is not one "with no
/// manual trigger": the refusal says the gate was passed and the next rollout needs its own.
#[test]
fn a_gate_the_rollout_passed_is_named_not_denied() {
    let mut p = example("kyverno-manual-gate.yaml");
    p["status"]["currentStageName"] = json!("production");
    p["status"]["stages"][1]["currentStatusDescription"] =
        json!("Successfully provisioned (2026-02-16T07:40:02Z)");
    p["status"]["stages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "production",
                     "currentStatusDescription": "Clusters are being provisioned (2026-02-16T07:40:02Z)",
                     "lastUpdateReconciledTime": "2026-02-16T07:40:02Z"}));
    let env = Env::start(vec![p]);
    let passed = "no manual gate is left to approve in the current rollout: it already passed \
                  staging; the next rollout needs its own approval";
    for args in [
        &["approve", "kyverno-rollout-man", "--stage", "dev"][..],
        &["approve", "kyverno-rollout-man", "--stage", "nope"][..],
    ] {
        let out = env.run(args).expect(1);
        assert!(out.stderr.contains(passed), "{args:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains("no stage with a manual trigger"),
            "{}",
            out.stderr
        );
    }
    assert!(env.requests("PATCH", "").is_empty());
}

#[test]
fn already_approved_changes_nothing() {
    let mut p = four_stage_gate();
    p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    let env = Env::start(vec![p]);
    let out = env
        .run(&["approve", GATE, "--stage", "staging", "--reason", "again"])
        .expect(0);
    assert!(
        out.stdout.contains("unchanged: stage staging is already approved; the reconciler acts on it on its next pass (staging → qa)"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("the reason was not recorded"));
    // Without --stage too: the approved-and-pending stage is "the one waiting".
    env.run(&["approve", GATE]).expect(0);
    // With -o, the object as stored (as `kubectl apply -o` prints an unchanged one).
    let out = env.run(&["approve", GATE, "-o", "name"]).expect(0);
    assert_eq!(
        out.stdout,
        format!("clusterpromotion.config.projectsveltos.io/{GATE}\n")
    );
    assert!(
        out.stderr
            .contains("unchanged: stage staging is already approved"),
        "{}",
        out.stderr
    );
    let out = env.run(&["approve", GATE, "-o", "json"]).expect(0);
    let stored: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(approved(&stored, "staging"), Some(json!(true)));
    assert!(env.requests("PATCH", "").is_empty());
}

#[test]
fn pre_approve_allows_a_stage_not_reached_yet() {
    let env = Env::start(vec![four_stage_gate()]);
    let out = env
        .run(&["approve", GATE, "--stage", "qa", "--pre-approve"])
        .expect(0);
    assert_eq!(
        out.stdout,
        "clusterpromotion.config.projectsveltos.io/kyverno-rollout-man approved (stage qa → production), pre-approved ahead of the pipeline\n"
    );
    let after = env.promotion(GATE);
    assert_eq!(
        after["spec"]["stages"][2]["trigger"]["manual"],
        json!({"approved": true, "automaticReset": false, "delay": "1m"})
    );
    assert_eq!(approved(&after, "staging"), Some(json!(false)));
}

#[test]
fn reason_travels_in_the_same_patch() {
    let env = Env::start(vec![four_stage_gate()]);
    env.run(&["approve", GATE, "--reason", "CAB-1234 signed off"])
        .expect(0);
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    let sent: Value = serde_json::from_str(&patches[0].body).unwrap();
    // The reason and the approval in one write, guarded by the resourceVersion read.
    assert!(sent["metadata"]["resourceVersion"].is_string(), "{sent}");
    assert_eq!(
        sent["metadata"]["annotations"],
        json!({"kubectl-promotion.dev/approval-reason": "CAB-1234 signed off"})
    );
    assert_eq!(
        sent["spec"]["stages"][1]["trigger"]["manual"]["approved"],
        json!(true)
    );
    let after = env.promotion(GATE);
    assert_eq!(
        after["metadata"]["annotations"]["kubectl-promotion.dev/approval-reason"],
        "CAB-1234 signed off"
    );
    assert_eq!(approved(&after, "staging"), Some(json!(true)));
}

#[test]
fn dry_runs_do_not_store_anything() {
    let env = Env::start(vec![four_stage_gate()]);
    let server = env
        .run(&["approve", GATE, "--dry-run=server", "-o", "json"])
        .expect(0);
    let shown: Value = serde_json::from_str(&server.stdout).unwrap();
    assert_eq!(approved(&shown, "staging"), Some(json!(true)));
    let patches = env.requests("PATCH", "/clusterpromotions/");
    assert_eq!(patches.len(), 1);
    assert!(
        patches[0].query.contains("dryRun=All"),
        "{}",
        patches[0].query
    );
    assert_eq!(
        approved(&env.promotion(GATE), "staging"),
        Some(json!(false))
    );

    let text = env.run(&["approve", GATE, "--dry-run=server"]).expect(0);
    assert!(text
        .stdout
        .ends_with("approved (stage staging → qa) (server dry run)\n"));

    env.server.clear_requests();
    let client = env.run(&["approve", GATE, "--dry-run=client"]).expect(0);
    assert!(client.stdout.ends_with("(dry run)\n"));
    assert!(
        client
            .stderr
            .contains("merge patch that would be sent (guarded by its resourceVersion):"),
        "{}",
        client.stderr
    );
    assert!(
        client.stderr.contains("\"resourceVersion\": "),
        "{}",
        client.stderr
    );
    assert!(env.requests("PATCH", "").is_empty());
    assert_eq!(
        approved(&env.promotion(GATE), "staging"),
        Some(json!(false))
    );
}

#[test]
fn reordered_stages_make_the_patch_fail_and_the_retry_finds_the_stage() {
    let env = Env::start(vec![four_stage_gate()]);
    // A concurrent writer moves qa in front of staging, so index 1 is no longer staging.
    let patches = interfere(&env, GATE, 1, |p| {
        let stages = p["spec"]["stages"].as_array_mut().unwrap();
        stages.swap(1, 2);
    });
    let out = env.run(&["approve", GATE, "--stage", "staging"]).expect(0);
    assert!(
        out.stderr.contains("changed while approving"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("attempt 2/5"), "{}", out.stderr);
    assert_eq!(patches.load(Ordering::SeqCst), 2);
    let after = env.promotion(GATE);
    assert_eq!(after["spec"]["stages"][2]["name"], "staging");
    assert_eq!(approved(&after, "staging"), Some(json!(true)));
    // qa, now at index 1, was never approved.
    assert_eq!(approved(&after, "qa"), None);
}

#[test]
fn a_concurrent_approval_turns_the_retry_into_a_no_op() {
    let env = Env::start(vec![four_stage_gate()]);
    interfere(&env, GATE, 1, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    let out = env.run(&["approve", GATE]).expect(0);
    assert!(
        out.stdout
            .contains("unchanged: stage staging is already approved"),
        "{}",
        out.stdout
    );
}

#[test]
fn an_object_that_keeps_changing_is_given_up_on() {
    let env = Env::start(vec![four_stage_gate()]);
    let n = AtomicUsize::new(0);
    interfere(&env, GATE, usize::MAX, move |p| {
        let i = n.fetch_add(1, Ordering::SeqCst);
        p["spec"]["stages"][1]["trigger"]["manual"]["delay"] = json!(format!("{}s", i + 1));
    });
    let out = env.run(&["approve", GATE]).expect(1);
    assert!(
        out.stderr.contains("gave up after 5 attempts"),
        "{}",
        out.stderr
    );
    assert_eq!(
        approved(&env.promotion(GATE), "staging"),
        Some(json!(false))
    );
}

#[test]
fn wait_follows_the_promotion_to_the_next_stage() {
    let env = Env::start(vec![four_stage_gate()]);
    let mut plugin = Running::start(&env, &["approve", GATE, "--wait", "--timeout", "60s"]);
    // Play the controller once the plugin follows the promotion: its first "waiting for
    // stage=qa: …" note comes after the approval and the initial list of its watches, which go
    // on from that list's resourceVersion, so the change below reaches it as a watch event.
    plugin.expect_line(Stream::Stderr, "waiting for stage=qa: ");
    let mut p = env.promotion(GATE);
    assert_eq!(approved(&p, "staging"), Some(json!(true)));
    use_approval_and_reach(&mut p, "qa");
    forget_version(&mut p);
    env.put(p);
    let out = plugin.finish().expect(0);
    assert!(
        out.stdout.contains("approved (stage staging → qa)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("stage qa reached"), "{}", out.stdout);

    // Nothing moves this time: exit 3 after the timeout.
    let env = Env::start(vec![four_stage_gate()]);
    let out = env
        .run(&["approve", GATE, "--wait", "--timeout", "2s"])
        .expect(3);
    assert!(
        out.stderr
            .contains("timed out after 2s waiting for stage=qa"),
        "{}",
        out.stderr
    );
    assert_eq!(approved(&env.promotion(GATE), "staging"), Some(json!(true)));
}

/// The stand-in leaves every PATCH of a ClusterPromotion unanswered (a webhook that hangs);
/// reads are answered.
fn hang_writes(env: &Env) {
    env.server
        .hang(|a| a.verb == "patch" && a.resource == "clusterpromotions");
}

/// The `-o jsonpath=…` template of the check command in `stderr`, and what it prints when the
/// write was stored.
fn check_of(stderr: &str) -> (String, String) {
    let template = stderr
        .split_once("-o jsonpath='")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map(|(t, _)| t.to_string())
        .unwrap_or_else(|| panic!("no jsonpath check in {stderr}"));
    let stored = stderr
        .split_once("(it prints \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(s, _)| s.to_string())
        .unwrap_or_else(|| panic!("no expected output in {stderr}"));
    (template, stored)
}

/// Issue 25, item 5: the reads succeed and the write hangs until `--request-timeout`: the error
/// says the write was sent and its outcome is unknown (not "unable to connect"), and gives a
/// check that runs as printed.
#[test]
fn a_write_the_server_does_not_answer_has_an_unknown_outcome_and_a_check() {
    let env = Env::start(vec![four_stage_gate()]);
    hang_writes(&env);
    let out = env
        .run(&["approve", GATE, "--request-timeout=2s"])
        .expect(1);
    let url = env.server.url();
    assert!(
        out.stderr.contains(&format!(
            "error: the request to patch clusterpromotions.config.projectsveltos.io \"{GATE}\" \
             was sent to {url} and not answered within 2s (--request-timeout): whether the \
             server stored it is unknown; check with kubectl get clusterpromotion {GATE} -o \
             jsonpath='{{.spec.stages[1].name}}{{\" \"}}{{.spec.stages[1].trigger.manual.approved}}{{\"\\n\"}}' \
             (it prints \"staging true\" if it was stored), or kubectl promotion describe {GATE}"
        )),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("unable to connect"), "{}", out.stderr);
    // The reads before it were answered.
    assert!(!env.requests("GET", GATE).is_empty());

    // The check, run as printed with the real kubectl, tells: the write was not stored here.
    let (template, stored) = check_of(&out.stderr);
    assert_eq!(stored, "staging true");
    let now = env
        .kubectl(&[
            "get",
            "clusterpromotion",
            GATE,
            "-o",
            &format!("jsonpath={template}"),
        ])
        .expect(0);
    assert_eq!(now.stdout, "staging false\n");
}

/// Issue 25, items 5 and 6: with `--wait`, `--timeout` ends a write that gets no answer too, and
/// says the same: the outcome is unknown, and how to check.
#[test]
fn approve_wait_timing_out_on_an_unanswered_write_says_its_outcome_is_unknown() {
    let env = Env::start(vec![four_stage_gate()]);
    hang_writes(&env);
    let out = Running::start(&env, &["approve", GATE, "--wait", "--timeout=3s"])
        .finish()
        .expect(3);
    let url = env.server.url();
    assert!(
        out.stderr.contains(&format!(
            "error: timed out after 3s (--timeout) approving {GATE} and waiting for what it \
             unblocks: the request to patch clusterpromotions.config.projectsveltos.io \
             \"{GATE}\" was sent to {url} and not answered, so whether it was stored is \
             unknown; check with kubectl get clusterpromotion {GATE} -o jsonpath="
        )),
        "{}",
        out.stderr
    );
    let (template, _) = check_of(&out.stderr);
    let now = env
        .kubectl(&[
            "get",
            "clusterpromotion",
            GATE,
            "-o",
            &format!("jsonpath={template}"),
        ])
        .expect(0);
    assert_eq!(now.stdout, "staging false\n");
}
