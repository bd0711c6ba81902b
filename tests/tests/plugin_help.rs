//! The behaviours the `--help` of approve, wait, diff, list and describe state, each checked
//! twice: the sentence is in the help (whitespace-normalised, so that wrapping does not matter),
//! and the binary does what it says. A help text that drifts from the behaviour, or a behaviour
//! that drifts from its help, fails here.

mod plugin_common;

use plugin_common::*;
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";

/// The help of `command`, with every run of whitespace one space.
fn help(env: &Env, command: &str) -> String {
    let out = env.run(&[command, "--help"]).expect(0);
    out.stdout.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn says(help: &str, sentence: &str) {
    let sentence = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains(&sentence), "help lacks {sentence:?}:\n{help}");
}

fn write(env: &Env, name: &str, object: &Value) -> String {
    let path = env.path(name);
    std::fs::write(&path, serde_json::to_string(object).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn approve_help_refusals_and_exit_status_hold() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let h = help(&env, "approve");
    says(
        &h,
        "Refuses an unknown stage and a stage whose trigger is auto or absent, listing the \
         stages that can be approved.",
    );
    says(&h, "Approving an already approved stage changes nothing.");
    says(
        &h,
        "Exit status: 0 approved (or already approved) or revoked; 1 refused or error;",
    );
    for stage in ["uat", "dev", "production"] {
        let out = env.run(&["approve", GATE, "--stage", stage]).expect(1);
        assert!(
            out.stderr.contains("stages that can be approved: staging"),
            "{stage}: {}",
            out.stderr
        );
    }
    env.run(&["approve", GATE, "--stage", "staging"]).expect(0);
    let version = env.promotion(GATE)["metadata"]["resourceVersion"].clone();
    let again = env.run(&["approve", GATE, "--stage", "staging"]).expect(0);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert_eq!(
        env.promotion(GATE)["metadata"]["resourceVersion"],
        version,
        "an approval of an approved stage wrote"
    );
    env.run(&["approve", GATE, "--stage", "staging", "--revoke"])
        .expect(0);
}

#[test]
fn wait_help_exit_status_holds() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let h = help(&env, "wait");
    says(
        &h,
        "Exit status: 0 the condition holds; 2 the pipeline failed first; 3 the timeout elapsed; \
         1 any other error.",
    );
    says(&h, "--for=stage=production --timeout=0 # check once");
    env.run(&["wait", GATE, "--for=approval", "--timeout=0"])
        .expect(0);
    env.run(&["wait", GATE, "--for=stage=production", "--timeout=0"])
        .expect(3);
    env.run(&["wait", GATE, "--for=stage=nope", "--timeout=0"])
        .expect(1);
    env.run(&["wait", "nope", "--for=complete", "--timeout=0"])
        .expect(1);

    // "Failures Sveltos retries … keep it waiting too, unless --fail-fast"
    says(
        &h,
        "Failures Sveltos retries (a feature `Failed`) keep it waiting too, unless --fail-fast",
    );
    let env = Env::start(example_world("kyverno-failed-dev.yaml"));
    env.run(&[
        "wait",
        "kyverno-rollout-auto",
        "--for=complete",
        "--timeout=0",
    ])
    .expect(3);
    env.run(&[
        "wait",
        "kyverno-rollout-auto",
        "--for=complete",
        "--timeout=0",
        "--fail-fast",
    ])
    .expect(2);
}

#[test]
fn diff_help_exit_status_holds() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let h = help(&env, "diff");
    says(&h, "(exit 0: no differences, 1: differences, >1: error;");
    let same = example("kyverno-manual-gate.yaml");
    let file = write(&env, "same.json", &same);
    env.run(&["diff", "-f", &file]).expect(0);
    let mut changed = same.clone();
    changed["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    let file = write(&env, "changed.json", &changed);
    env.run(&["diff", "-f", &file]).expect(1);
    let missing = env.path("missing.yaml");
    let out = env.run(&["diff", "-f", missing.to_str().unwrap()]);
    assert!(out.code > 1, "{out}");
}

#[test]
fn list_help_on_missing_template_keys_holds() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let h = help(&env, "list");
    let flag = "With a jsonpath template, print nothing for a missing field instead of failing \
                (custom-columns print <none> for it either way, as kubectl does)";
    says(&h, flag);
    says(&help(&env, "approve"), flag);
    let out = env
        .run(&["list", "-o", "jsonpath={.items[0].nope}"])
        .expect(0);
    assert_eq!(out.stdout, "");
    env.run(&[
        "list",
        "-o",
        "jsonpath={.items[0].nope}",
        "--allow-missing-template-keys=false",
    ])
    .expect(1);
    for allow in ["true", "false"] {
        let out = env
            .run(&[
                "list",
                "-o",
                "custom-columns=NAME:.name,X:.nope",
                &format!("--allow-missing-template-keys={allow}"),
            ])
            .expect(0);
        assert_eq!(
            out.stdout,
            format!("NAME                  X\n{GATE}   <none>\n")
        );
    }
}

#[test]
fn describe_help_exit_status_and_names_hold() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let h = help(&env, "describe");
    says(
        &h,
        "Without NAME, describes every ClusterPromotion; with several names, each of them.",
    );
    says(&h, "Exit status: 0; 1 on error.");
    let all = env.run(&["describe"]).expect(0);
    assert!(
        all.stdout.starts_with(&format!("Name:           {GATE}\n")),
        "{all}"
    );
    let out = env.run(&["describe", GATE, "nope"]).expect(1);
    assert!(
        out.stdout.starts_with(&format!("Name:           {GATE}\n")),
        "{out}"
    );
    assert_eq!(
        out.stderr,
        "error: clusterpromotion.config.projectsveltos.io \"nope\" not found\n"
    );
    // With -f, offline: no cluster needed, cluster status unknown.
    says(
        &h,
        "With -f, describes a manifest offline (no cluster needed; cluster status is then unknown).",
    );
    let file = example_path("kyverno-manual-gate.yaml");
    let out = env
        .run(&[
            "describe",
            "-f",
            file.to_str().unwrap(),
            "--server",
            &format!("https://127.0.0.1:{}", closed_port()),
        ])
        .expect(0);
    assert!(
        out.stdout.contains("Clusters:       not read (offline)"),
        "{out}"
    );

    // The proposed approval is judged by RBAC and the published approver rules.
    says(
        &h,
        "A proposed approval is worded for you: the server is asked whether RBAC lets you patch the \
         promotion and who you are, and the approver rules the install publishes (ConfigMap \
         kubectl-promotion-system/promotion-governance, which the admission webhook enforces) are \
         read; when you may not approve, it says why and who may; when that cannot be learnt, it \
         says so.",
    );
    env.put(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "promotion-governance", "namespace": "kubectl-promotion-system"},
        "data": {"approver-groups": "release-managers"},
    }));
    let out = env.run(&["describe", GATE]).expect(0);
    assert!(
        out.stdout.contains(
            "Next step:      you cannot approve (the admission webhook admits approvals only from \
             members of group \"release-managers\""
        ),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("who may patch it runs: kubectl promotion approve"),
        "{out}"
    );
}

#[test]
fn pause_and_resume_help_hold() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let h = help(&env, "pause");
    says(
        &h,
        "A promotion already paused is left as it is (a different --reason replaces the reason).",
    );
    says(
        &h,
        "Exit status: 0 every promotion was paused (or already was); 1 if one was refused or \
         failed (the others are still paused).",
    );
    env.run(&["pause", GATE, "--reason", "a"]).expect(0);
    let version = env.promotion(GATE)["metadata"]["resourceVersion"].clone();
    let again = env.run(&["pause", GATE]).expect(0);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert_eq!(
        env.promotion(GATE)["metadata"]["resourceVersion"],
        version,
        "a pause of a paused promotion wrote"
    );
    env.run(&["pause", GATE, "--reason", "b"]).expect(0);
    assert_eq!(
        env.promotion(GATE)["metadata"]["annotations"]
            ["promotion-controller.kubectl-promotion.dev/paused"],
        "b"
    );
    env.run(&["pause", GATE, "nope"]).expect(1);

    let h = help(&env, "resume");
    says(&h, "A promotion that is not paused is left as it is.");
    says(
        &h,
        "Exit status: 0 every promotion was resumed (or was not paused); 1 if one was refused or \
         failed (the others are still resumed).",
    );
    env.run(&["resume", GATE]).expect(0);
    let again = env.run(&["resume", GATE]).expect(0);
    assert!(
        again.stdout.contains("unchanged: not paused"),
        "{}",
        again.stdout
    );
    env.run(&["resume", "nope"]).expect(1);

    // wait's help on a pause: said once, and the wait goes on.
    says(
        &help(&env, "wait"),
        "A paused promotion (no stage starts until `kubectl promotion resume`) is said once on \
         stderr and the wait goes on",
    );
}
