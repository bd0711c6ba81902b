//! The stand-in API server, driven by the real `kubectl` (v1.32 on PATH): what kubectl prints
//! and exits with must be what it does against a real kube-apiserver.

use promotion_e2e::apiserver::{
    Decision, DenyRule, StandIn, StandInHandle, StandInOptions, UserInfo,
};
use promotion_e2e::bins::{KubeEnv, Output};
use promotion_e2e::fixtures;
use serde_json::Value;

fn server_with(files: &[&str]) -> StandInHandle {
    let mut builder = fixtures::WorldBuilder::new();
    for f in files {
        builder
            .add(fixtures::load_example(f).expect("example loads"))
            .expect("example admitted");
    }
    StandIn::start(StandInOptions::default().with_objects(builder.build().objects))
        .expect("stand-in starts")
}

fn kubectl(env: &KubeEnv, args: &[&str]) -> Output {
    env.kubectl(args).expect("kubectl runs")
}

fn get_json(env: &KubeEnv, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let out = kubectl(env, &all);
    assert!(out.success(), "{out}");
    serde_json::from_str(&out.stdout).expect("kubectl printed JSON")
}

#[test]
fn get_prints_name_and_age_table_and_yaml_round_trips_status() {
    let server = server_with(&["kyverno-manual-gate.yaml", "payment-four-stages.yaml"]);
    let env = KubeEnv::new(&server).expect("env");

    let out = kubectl(&env, &["get", "clusterpromotions"]);
    assert!(out.success(), "{out}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["NAME", "AGE"], "{out}");
    assert!(lines[1].starts_with("core-payment-processor-ci"), "{out}");
    assert!(lines[2].starts_with("kyverno-rollout-man"), "{out}");
    assert_eq!(lines.len(), 3, "{out}");

    let out = kubectl(
        &env,
        &[
            "get",
            "clusterpromotion",
            "kyverno-rollout-man",
            "-o",
            "yaml",
        ],
    );
    assert!(out.success(), "{out}");
    assert!(out.stdout.contains("currentStageName: staging"), "{out}");
    assert!(out.stdout.contains("automaticReset: true"), "{out}");
    assert!(
        out.stdout.contains("Paused: Awaiting Manual Approval"),
        "{out}"
    );

    // Short of the plural, kubectl resolves the singular from discovery too.
    let out = kubectl(
        &env,
        &[
            "get",
            "clustersummary",
            "-A",
            "-l",
            "projectsveltos.io/cluster-profile-name in (kyverno-rollout-man-dev)",
        ],
    );
    assert!(out.success(), "{out}");
    assert!(
        out.stdout.contains("kyverno-rollout-man-dev-sveltos-dev01"),
        "{out}"
    );
    assert!(!out.stdout.contains("staging01"), "{out}");
}

#[test]
fn json_patch_with_failing_test_is_rejected_and_changes_nothing() {
    let server = server_with(&["kyverno-manual-gate.yaml"]);
    let env = KubeEnv::new(&server).expect("env");
    let before = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);

    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/spec/stages/1/name","value":"production"},{"op":"add","path":"/spec/stages/1/trigger/manual/approved","value":true}]"#,
        ],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains("The request is invalid: the server rejected our request due to an error in our request"),
        "{out}"
    );
    let patch = server
        .requests()
        .into_iter()
        .rfind(|r| r.method == "PATCH")
        .expect("patch recorded");
    assert_eq!(patch.status, 422);
    assert_eq!(patch.content_type, "application/json-patch+json");

    let after = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);
    assert_eq!(
        before, after,
        "a failed test op must leave the object untouched"
    );

    // The same guard with the right stage name applies, and bumps generation.
    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/spec/stages/1/name","value":"staging"},{"op":"test","path":"/spec/stages/1/trigger/manual/approved","value":false},{"op":"add","path":"/spec/stages/1/trigger/manual/approved","value":true}]"#,
        ],
    );
    assert!(out.success(), "{out}");
    assert!(
        out.stdout
            .contains("clusterpromotion.config.projectsveltos.io/kyverno-rollout-man patched"),
        "{out}"
    );
    let after = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);
    assert_eq!(
        after.pointer("/spec/stages/1/trigger/manual/approved"),
        Some(&Value::Bool(true))
    );
    assert_eq!(
        after.pointer("/spec/stages/1/trigger/manual/automaticReset"),
        Some(&Value::Bool(true))
    );
    let gen = |v: &Value| {
        v.pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    assert_eq!(gen(&after), gen(&before) + 1);
    assert_ne!(
        after.pointer("/metadata/resourceVersion"),
        before.pointer("/metadata/resourceVersion")
    );
}

#[test]
fn merge_patch_applies_strategic_is_unsupported_and_dry_run_does_not_persist() {
    let server = server_with(&["kyverno-manual-gate.yaml"]);
    let env = KubeEnv::new(&server).expect("env");

    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"team":"platform"}}}"#,
        ],
    );
    assert!(out.success(), "{out}");
    let obj = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);
    assert_eq!(
        obj.pointer("/metadata/labels/team"),
        Some(&Value::from("platform"))
    );
    assert_eq!(
        obj.pointer("/metadata/generation"),
        Some(&Value::from(1)),
        "labels do not bump generation"
    );

    // kubectl's default patch type is strategic merge, which custom resources refuse with 415.
    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "-p",
            r#"{"metadata":{"labels":{"team":"x"}}}"#,
        ],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"), "{out}");

    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--type=merge",
            "--dry-run=server",
            "-p",
            r#"{"spec":{"preserveClusterProfilesOnDelete":true}}"#,
            "-o",
            "jsonpath={.spec.preserveClusterProfilesOnDelete} {.metadata.generation}",
        ],
    );
    assert!(out.success(), "{out}");
    assert_eq!(out.stdout, "true 2");
    let patch = server
        .requests()
        .into_iter()
        .rfind(|r| r.method == "PATCH")
        .expect("recorded");
    assert!(patch.query.contains("dryRun=All"), "{patch:?}");
    let obj = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);
    assert_eq!(obj.pointer("/spec/preserveClusterProfilesOnDelete"), None);
    assert_eq!(obj.pointer("/metadata/generation"), Some(&Value::from(1)));
}

#[test]
fn status_subresource_changes_only_status_and_main_resource_ignores_status() {
    let server = server_with(&["kyverno-manual-gate.yaml"]);
    let env = KubeEnv::new(&server).expect("env");

    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--type=merge",
            "-p",
            r#"{"status":{"currentStageName":"production"},"spec":{"preserveClusterProfilesOnDelete":true}}"#,
        ],
    );
    assert!(out.success(), "{out}");
    let obj = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);
    assert_eq!(
        obj.pointer("/status/currentStageName"),
        Some(&Value::from("staging"))
    );
    assert_eq!(
        obj.pointer("/spec/preserveClusterProfilesOnDelete"),
        Some(&Value::Bool(true))
    );
    assert_eq!(obj.pointer("/metadata/generation"), Some(&Value::from(2)));

    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"currentStageName":"production"},"spec":{"preserveClusterProfilesOnDelete":false}}"#,
        ],
    );
    assert!(out.success(), "{out}");
    let obj = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);
    assert_eq!(
        obj.pointer("/status/currentStageName"),
        Some(&Value::from("production"))
    );
    assert_eq!(
        obj.pointer("/spec/preserveClusterProfilesOnDelete"),
        Some(&Value::Bool(true))
    );
    assert_eq!(obj.pointer("/metadata/generation"), Some(&Value::from(2)));
}

#[test]
fn create_defaults_from_the_crd_and_the_crd_rule_rejects_both_triggers() {
    let server = server_with(&[]);
    let env = KubeEnv::new(&server).expect("env");
    let file = fixtures::examples_dir().join("both-triggers.yaml");
    let out = kubectl(&env, &["apply", "-f", &file.to_string_lossy()]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains(
        r#"The ClusterPromotion "both-triggers" is invalid: spec.stages[1].trigger: Invalid value: "object": A trigger must have either a 'manual' or 'auto' field, but not both."#
    ), "{out}");

    let manifest = env.dir().join("manual.yaml");
    std::fs::write(&manifest, "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\nmetadata:\n  name: gate\nspec:\n  profileSpec: {}\n  stages:\n  - name: a\n    clusterSelector: {matchLabels: {env: a}}\n    trigger: {manual: {}}\n  - name: b\n").expect("write");
    let out = kubectl(&env, &["create", "-f", &manifest.to_string_lossy()]);
    assert!(out.success(), "{out}");
    let obj = get_json(&env, &["clusterpromotion", "gate"]);
    assert_eq!(
        obj.pointer("/spec/stages/0/trigger/manual/automaticReset"),
        Some(&Value::Bool(true))
    );
    assert_eq!(
        obj.pointer("/spec/profileSpec/syncMode"),
        Some(&Value::from("Continuous"))
    );
    assert_eq!(
        obj.pointer("/spec/profileSpec/tier"),
        Some(&Value::from(100))
    );
    assert!(obj.pointer("/metadata/uid").is_some());
}

#[test]
fn stale_replace_is_a_conflict() {
    let server = server_with(&["kyverno-manual-gate.yaml"]);
    let env = KubeEnv::new(&server).expect("env");
    let stale = kubectl(
        &env,
        &[
            "get",
            "clusterpromotion",
            "kyverno-rollout-man",
            "-o",
            "json",
        ],
    );
    assert!(stale.success(), "{stale}");
    let stale_file = env.dir().join("stale.json");
    std::fs::write(&stale_file, &stale.stdout).expect("write");
    let out = kubectl(
        &env,
        &[
            "label",
            "clusterpromotion",
            "kyverno-rollout-man",
            "moved=on",
        ],
    );
    assert!(out.success(), "{out}");

    let out = kubectl(&env, &["replace", "-f", &stale_file.to_string_lossy()]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains(
        r#"Operation cannot be fulfilled on clusterpromotions.config.projectsveltos.io "kyverno-rollout-man": the object has been modified; please apply your changes to the latest version and try again"#
    ), "{out}");
    let put = server
        .requests()
        .into_iter()
        .rfind(|r| r.method == "PUT")
        .expect("recorded");
    assert_eq!(put.status, 409);
}

#[test]
fn unauthenticated_and_forbidden_requests_get_the_real_messages() {
    let server = server_with(&["kyverno-manual-gate.yaml"]);
    let env = KubeEnv::new(&server).expect("env");

    let bad = env
        .kubeconfig_for(&server, "not-a-token", "mallory")
        .expect("kubeconfig");
    let bad = bad.to_string_lossy();
    // Discovery fails first; client-go's discovery reads the body raw, so kubectl 1.32 prints the
    // generic 401 text (as against a real cluster).
    let out = kubectl(&env, &["--kubeconfig", &bad, "get", "clusterpromotions"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("error: You must be logged in to the server (the server has asked for the client to provide credentials)"), "{out}");
    // A plain request decodes the Status body the server sent.
    let out = kubectl(
        &env,
        &[
            "--kubeconfig",
            &bad,
            "get",
            "--raw",
            "/apis/config.projectsveltos.io/v1beta1/clusterpromotions",
        ],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "{out}"
    );

    server.add_token("alice-token", UserInfo::new("alice", &["dev"]));
    server.deny(DenyRule {
        user: Some("alice".into()),
        verb: Some("patch".into()),
        resource: Some("clusterpromotions".into()),
        ..DenyRule::default()
    });
    let alice = env
        .kubeconfig_for(&server, "alice-token", "alice")
        .expect("kubeconfig");
    let alice = alice.to_string_lossy();
    let out = kubectl(&env, &["--kubeconfig", &alice, "get", "clusterpromotions"]);
    assert!(out.success(), "alice may read: {out}");
    let out = kubectl(
        &env,
        &[
            "--kubeconfig",
            &alice,
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"a":"b"}}}"#,
        ],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains(
        r#"Error from server (Forbidden): clusterpromotions.config.projectsveltos.io "kyverno-rollout-man" is forbidden: User "alice" cannot patch resource "clusterpromotions" in API group "config.projectsveltos.io" at the cluster scope"#
    ), "{out}");

    // Impersonating alice from the admin kubeconfig hits the same rule.
    let out = kubectl(
        &env,
        &[
            "--as",
            "alice",
            "label",
            "clusterpromotion",
            "kyverno-rollout-man",
            "a=b",
        ],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains(r#"User "alice" cannot patch resource"#),
        "{out}"
    );
}

#[test]
fn impersonated_groups_uid_and_extras_are_the_identity_and_each_is_authorized() {
    let server = server_with(&["kyverno-manual-gate.yaml"]);
    let env = KubeEnv::new(&server).expect("env");
    // client-go sends `as-user-extra` keys escaped (`acme.com%2Fproject`); the server unescapes.
    let kubeconfig = env.dir().join("impersonating");
    let admin = std::fs::read_to_string(env.kubeconfig()).expect("kubeconfig");
    let user = format!("    token: {}\n", server.token());
    assert!(admin.contains(&user), "{admin}");
    let impersonating = admin.replace(
        &user,
        &format!(
            "{user}    as: alice\n    as-groups: [release-managers]\n    as-uid: alice-uid\n    as-user-extra:\n      scopes: [view, approve]\n      acme.com/project: [rollouts]\n"
        ),
    );
    std::fs::write(&kubeconfig, impersonating).expect("write kubeconfig");
    let kubeconfig = kubeconfig.to_string_lossy();
    let raw = "/apis/config.projectsveltos.io/v1beta1/clusterpromotions/kyverno-rollout-man";

    server.clear_requests();
    let out = kubectl(&env, &["--kubeconfig", &kubeconfig, "get", "--raw", raw]);
    assert!(out.success(), "{out}");
    let seen = server.requests().pop().expect("recorded");
    assert_eq!(seen.user, "alice");
    assert_eq!(seen.groups, ["release-managers", "system:authenticated"]);
    assert_eq!(seen.uid, "alice-uid");
    assert_eq!(seen.extra["scopes"], ["view", "approve"]);
    assert_eq!(seen.extra["acme.com/project"], ["rollouts"]);

    // Each extra value needs its own `impersonate` permission; the refusal names the requestor,
    // and the request is recorded as the requestor's.
    server.set_authorizer(|a| {
        if a.verb == "impersonate" && a.resource == "userextras" && a.name == "approve" {
            Decision::Deny(None)
        } else {
            Decision::Allow
        }
    });
    server.clear_requests();
    let out = kubectl(&env, &["--kubeconfig", &kubeconfig, "get", "--raw", raw]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains(
        r#"userextras.authentication.k8s.io "approve" is forbidden: User "admin" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope"#
    ), "{out}");
    let refused = server.requests().pop().expect("recorded");
    assert_eq!((refused.status, refused.user.as_str()), (403, "admin"));
}

#[test]
fn missing_object_and_missing_crd_are_not_found() {
    let server = server_with(&[]);
    let env = KubeEnv::new(&server).expect("env");
    let out = kubectl(&env, &["get", "clusterpromotion", "nope"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains(r#"Error from server (NotFound): clusterpromotions.config.projectsveltos.io "nope" not found"#), "{out}");

    let bare = StandIn::start(StandInOptions::default().without_promotion_crd()).expect("starts");
    let env = KubeEnv::new(&bare).expect("env");
    let out = kubectl(&env, &["get", "clusterpromotions"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr
            .contains(r#"the server doesn't have a resource type "clusterpromotions""#),
        "{out}"
    );
    // The other Sveltos kinds stay served.
    let out = kubectl(&env, &["get", "clusterprofiles"]);
    assert!(out.success(), "{out}");
    let out = kubectl(
        &env,
        &[
            "get",
            "--raw",
            "/apis/config.projectsveltos.io/v1beta1/clusterpromotions/x",
        ],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr
            .contains("the server could not find the requested resource"),
        "{out}"
    );
}

#[test]
fn delete_waits_for_finalizers_then_the_object_is_gone() {
    let server = server_with(&["kyverno-manual-gate.yaml"]);
    let env = KubeEnv::new(&server).expect("env");
    let out = kubectl(
        &env,
        &[
            "delete",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--wait=false",
        ],
    );
    assert!(out.success(), "{out}");
    let obj = get_json(&env, &["clusterpromotion", "kyverno-rollout-man"]);
    assert!(
        obj.pointer("/metadata/deletionTimestamp").is_some(),
        "{obj}"
    );
    let out = kubectl(
        &env,
        &[
            "patch",
            "clusterpromotion",
            "kyverno-rollout-man",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ],
    );
    assert!(out.success(), "{out}");
    let out = kubectl(&env, &["get", "clusterpromotion", "kyverno-rollout-man"]);
    assert!(out.stderr.contains("not found"), "{out}");
}

#[test]
fn events_of_a_promotion_are_listed_by_field_selector() {
    let server = server_with(&["kyverno-manual-gate.yaml", "kyverno-failed-dev.yaml"]);
    let env = KubeEnv::new(&server).expect("env");
    let out = kubectl(
        &env,
        &[
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            "involvedObject.name=kyverno-rollout-man,involvedObject.kind=ClusterPromotion",
            "-o",
            "json",
        ],
    );
    assert!(out.success(), "{out}");
    let list: Value = serde_json::from_str(&out.stdout).expect("json");
    let messages: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "Provisioning stage dev",
            "Stage dev provisioned",
            "Provisioning stage staging",
            "Stage staging provisioned"
        ]
    );
    let out = kubectl(
        &env,
        &[
            "get",
            "events.v1.events.k8s.io",
            "-n",
            "default",
            "--field-selector",
            "regarding.name=kyverno-rollout-auto",
            "-o",
            "json",
        ],
    );
    assert!(out.success(), "{out}");
    let list: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(list["items"][0]["note"], "Provisioning stage dev");
    assert_eq!(list["items"][0]["reason"], "Sveltos");
}
