//! Impersonated groups decide an approval: the stand-in's authorizer lets only the group
//! `release-managers` patch ClusterPromotions, as an RBAC binding to a group would. `approve`
//! with `--as alice --as-group release-managers` succeeds and reaches the server as alice in that
//! group; without `--as-group` the same approval is refused with the server's RBAC message. The
//! same through the real kubectl, running the plugin and impersonating itself.

mod plugin_common;

use plugin_common::*;
use promotion_e2e::apiserver::{Attributes, Decision, RecordedRequest};
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";
const APPROVERS: &str = "release-managers";

/// What the plugin prints when alice, without the group, tries to approve.
const REFUSED: &str = "error: forbidden (403): you cannot patch clusterpromotions.config.projectsveltos.io \"kyverno-rollout-man\" (server said: clusterpromotions.config.projectsveltos.io \"kyverno-rollout-man\" is forbidden: User \"alice\" cannot patch resource \"clusterpromotions\" in API group \"config.projectsveltos.io\" at the cluster scope)\n";

/// The manual gate, with only `release-managers` allowed to patch ClusterPromotions. RBAC
/// denies without a reason when no rule matches, so the 403 carries none.
fn gated_env() -> Env {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    env.server.set_authorizer(|a: &Attributes| {
        let patch = a.verb == "patch" && a.resource == "clusterpromotions";
        if patch && !a.user.groups.iter().any(|g| g == APPROVERS) {
            Decision::Deny(None)
        } else {
            Decision::Allow
        }
    });
    env
}

fn approved(env: &Env) -> Value {
    env.promotion(GATE)["spec"]["stages"][1]["trigger"]["manual"]["approved"].clone()
}

fn patches(env: &Env) -> Vec<RecordedRequest> {
    env.requests("PATCH", "/clusterpromotions/")
}

#[test]
fn approve_as_a_member_of_the_allowed_group_succeeds_and_without_it_is_refused() {
    let env = gated_env();

    let out = env.run(&["approve", GATE, "--as", "alice"]).expect(1);
    assert_eq!(out.stderr, REFUSED);
    assert_eq!(out.stdout, "");
    assert_eq!(approved(&env), json!(false));
    let refused = patches(&env);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].status, 403);
    assert_eq!(refused[0].user, "alice");
    assert_eq!(refused[0].groups, vec!["system:authenticated"]);

    env.server.clear_requests();
    let out = env
        .run(&["approve", GATE, "--as", "alice", "--as-group", APPROVERS])
        .expect(0);
    assert!(
        out.stdout
            .contains("clusterpromotion.config.projectsveltos.io/kyverno-rollout-man approved"),
        "{out}"
    );
    assert_eq!(approved(&env), json!(true));
    let sent = patches(&env);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].status, 200);
    assert_eq!(sent[0].user, "alice");
    assert_eq!(sent[0].groups, vec![APPROVERS, "system:authenticated"]);
    // Every request of the command ran as alice in the group, not as the kubeconfig's admin.
    let all = env.server.requests();
    assert!(
        all.iter()
            .all(|r| r.user == "alice" && r.groups.iter().any(|g| g == APPROVERS)),
        "{all:?}"
    );
}

#[test]
fn kubectl_passes_the_impersonation_flags_to_the_plugin() {
    let env = gated_env();
    env.kube.install_plugin().expect("install the plugin");

    let out = env.kubectl(&["promotion", "approve", GATE, "--as", "alice"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stderr, REFUSED);
    assert_eq!(approved(&env), json!(false));

    let out = env.kubectl(&[
        "promotion",
        "approve",
        GATE,
        "--as",
        "alice",
        "--as-group",
        APPROVERS,
    ]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(approved(&env), json!(true));
    let sent = patches(&env);
    let last = sent.last().expect("a PATCH");
    assert_eq!(
        (last.status, last.user.as_str()),
        (200, "alice"),
        "{sent:?}"
    );
    assert_eq!(last.groups, vec![APPROVERS, "system:authenticated"]);
}

#[test]
fn kubectl_impersonating_with_the_group_may_approve_by_hand() {
    let env = gated_env();
    let approve = r#"[{"op":"test","path":"/spec/stages/1/name","value":"staging"},{"op":"replace","path":"/spec/stages/1/trigger/manual/approved","value":true}]"#;
    let patch = |extra: &[&str]| {
        let mut args = vec!["--as", "alice"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[
            "patch",
            "clusterpromotion",
            GATE,
            "--type=json",
            "-p",
            approve,
        ]);
        env.kubectl(&args)
    };

    let out = patch(&[]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): clusterpromotions.config.projectsveltos.io \"kyverno-rollout-man\" is forbidden: User \"alice\" cannot patch resource \"clusterpromotions\" in API group \"config.projectsveltos.io\" at the cluster scope\n"
    );
    assert_eq!(approved(&env), json!(false));

    let out = patch(&["--as-group", APPROVERS, "--as-uid", "alice-uid"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(approved(&env), json!(true));
    let sent = patches(&env);
    let last = sent.last().expect("a PATCH");
    assert_eq!(last.status, 200);
    assert_eq!(last.user, "alice");
    assert_eq!(last.groups, vec![APPROVERS, "system:authenticated"]);
    assert_eq!(last.uid, "alice-uid");
}
