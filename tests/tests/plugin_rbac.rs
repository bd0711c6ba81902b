//! The plugin as a user whose RBAC covers only part of what it reads: the stand-in's authorizer
//! evaluates the users table of `promotion_e2e::envtest::users` as the real RBAC authorizer
//! would (`promotion_e2e::backend::users_table_rbac`), and the admin impersonates the user
//! (`--as`/`--as-group`), as kubectl lets an operator check what someone else sees.

mod plugin_common;

use plugin_common::*;
use promotion_e2e::apiserver::DenyRule;
use promotion_e2e::envtest::users::User;

/// The example world, with the RBAC of the users table enforced.
fn rbac_env(example: &str) -> Env {
    let env = Env::start(example_world(example));
    env.server
        .set_authorizer(promotion_e2e::backend::users_table_rbac);
    env
}

/// `args` run as `user` (impersonated by the admin).
fn run_as(env: &Env, user: User, args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--as", user.name()]);
    for g in user.groups() {
        all.extend(["--as-group", g]);
    }
    env.run(&all)
}

const FAILED_DEV: &str = "kyverno-rollout-auto";

/// What the stand-in's RBAC says when the auditor lists ClusterSummaries.
const SUMMARIES_FORBIDDEN: &str = "ClusterSummaries: forbidden (User \"auditor\" cannot list \
     resource \"clustersummaries\" in API group \"config.projectsveltos.io\" at the cluster scope)";

#[test]
fn describe_without_clustersummaries_names_the_forbidden_read_and_claims_no_phase() {
    // STATES.md: dev of kyverno-failed-dev is failed once its ClusterSummaries are read.
    let env = rbac_env("kyverno-failed-dev.yaml");
    let admin = env.run(&["describe", FAILED_DEV]).expect(0).stdout;
    assert!(admin.contains("Phase:          degraded"), "{admin}");

    let out = run_as(&env, User::Auditor, &["describe", FAILED_DEV]).expect(0);
    let t = &out.stdout;
    assert!(
        t.contains(
            "Phase:          unknown (stage dev is provisioning, and whether its clusters are \
             failing is in the ClusterSummaries, which could not be read: see Warnings)\n"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "Clusters:       unknown (ClusterSummaries of kyverno-rollout-auto-dev not \
             readable: see Warnings)"
        ),
        "{t}"
    );
    // No cluster is said to have no ClusterSummary: it may have one the user cannot read.
    assert!(!t.contains("no ClusterSummary yet"), "{t}");
    assert!(!t.contains("offline"), "{t}");
    assert!(
        t.contains(&format!("Warnings:\n  {SUMMARIES_FORBIDDEN}\n")),
        "{t}"
    );

    // The model says the same.
    let json: serde_json::Value = serde_json::from_str(
        &run_as(&env, User::Auditor, &["describe", FAILED_DEV, "-o", "json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    assert_eq!(json["phase"], "unknown");
    assert_eq!(json["online"], true);
    assert_eq!(json["warnings"][0], SUMMARIES_FORBIDDEN);

    // list derives its STATE from the same view.
    let list = run_as(&env, User::Auditor, &["list"]).expect(0);
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with(FAILED_DEV))
        .unwrap_or_else(|| panic!("{}", list.stdout));
    assert!(row.contains(" unknown "), "{row}");
}

#[test]
fn describe_with_no_cluster_data_readable_is_online_and_says_why() {
    let env = rbac_env("kyverno-failed-dev.yaml");
    env.server.deny(DenyRule {
        resource: Some("clusterprofiles".into()),
        ..DenyRule::default()
    });
    let out = run_as(&env, User::Auditor, &["describe", FAILED_DEV]).expect(0);
    let t = &out.stdout;
    assert!(t.contains("Phase:          unknown (stage dev is provisioning, and whether its clusters are failing is in the ClusterProfiles"), "{t}");
    assert!(
        t.contains("Clusters:       unknown (ClusterProfiles not readable: see Warnings)"),
        "{t}"
    );
    assert!(!t.contains("offline"), "{t}");
    assert!(t.contains("\n  ClusterProfiles: forbidden ("), "{t}");
    assert!(t.contains(&format!("\n  {SUMMARIES_FORBIDDEN}\n")), "{t}");
}

#[test]
fn wait_without_clustersummaries_goes_on_from_what_it_can_read() {
    let env = rbac_env("kyverno-failed-dev.yaml");
    // Following (watches): the forbidden ClusterSummaries are followed without, and said once.
    let out = run_as(
        &env,
        User::Auditor,
        &["wait", FAILED_DEV, "--for=stage=dev", "--timeout=1m"],
    )
    .expect(0);
    assert_eq!(out.stdout, "stage dev reached: provisioning\n");
    assert_eq!(out.stderr, format!("warning: {SUMMARIES_FORBIDDEN}\n"));

    // Checking once: the failure only the summaries show cannot be seen, so no verdict of
    // "failed" and no false "progressing" either: still waiting, the phase unknown, exit 3.
    let out = run_as(
        &env,
        User::Auditor,
        &["wait", FAILED_DEV, "--for=complete", "--timeout=0"],
    )
    .expect(3);
    assert_eq!(
        out.stderr,
        format!(
            "warning: {SUMMARIES_FORBIDDEN}\nerror: timed out after 0s waiting for complete (still \
             phase unknown: stage dev is provisioning, and whether its clusters are failing is in \
             the ClusterSummaries, which could not be read)\n"
        )
    );
}

#[test]
fn describe_advises_an_approval_only_to_who_may_give_it() {
    let env = rbac_env("kyverno-manual-gate.yaml");
    let advice =
        "kubectl promotion approve kyverno-rollout-man --stage staging   (staging → production)";
    let out = run_as(
        &env,
        User::ReleaseManager,
        &["describe", "kyverno-rollout-man"],
    )
    .expect(0);
    assert!(
        out.stdout.contains(&format!("Next step:      {advice}\n")),
        "{}",
        out.stdout
    );
    let out = run_as(&env, User::Viewer, &["describe", "kyverno-rollout-man"]).expect(0);
    assert!(
        out.stdout.contains(&format!(
            "Next step:      you cannot approve (RBAC: no patch on \
             clusterpromotions.config.projectsveltos.io \"kyverno-rollout-man\"): someone who \
             may patch it runs: {advice}\n"
        )),
        "{}",
        out.stdout
    );
    // The server was asked, as the viewer.
    let reviews = env.requests("POST", "/selfsubjectaccessreviews");
    assert!(reviews.iter().any(|r| r.user == "viewer"), "{reviews:?}");
}

const MANUAL: &str = "kyverno-rollout-man";
const APPROVE: &str = "kubectl promotion approve kyverno-rollout-man --stage staging";

/// The approver rules as the install publishes them (`manifests/base/governance.yaml`).
fn publish_rules(env: &Env, groups: &str, four_eyes: bool) {
    publish(
        env,
        serde_json::json!({"approver-groups": groups, "forbid-self-approval": four_eyes.to_string()}),
    );
}

/// The ConfigMap of the approver rules with `data`, valid or not.
fn publish(env: &Env, data: serde_json::Value) {
    env.put(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "promotion-governance", "namespace": "kubectl-promotion-system"},
        "data": data,
    }));
}

/// The webhook's record: `user` made the change that started the current rollout.
fn started_by(env: &Env, user: &str) {
    let mut promotion = env.promotion(MANUAL);
    forget_version(&mut promotion);
    promotion["metadata"]["annotations"]["audit.kubectl-promotion.dev/spec-change"] =
        serde_json::json!({"user": user, "time": "2026-02-16T07:20:00Z"})
            .to_string()
            .into();
    env.put(promotion);
}

/// The next step and the stage's approve line, as `describe` prints them for `user`.
fn advice_for(env: &Env, user: User, extra: &[&str]) -> (String, String) {
    let mut args = vec!["describe", MANUAL];
    args.extend(extra);
    let out = run_as(env, user, &args).expect(0);
    let line = |label: &str| {
        out.stdout
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(label))
            .map(|rest| rest.trim_start().to_string())
            .unwrap_or_else(|| panic!("no {label} in:\n{}", out.stdout))
    };
    (line("Next step:"), line("Approve:"))
}

#[test]
fn describe_says_who_may_approve_by_the_rules_the_webhook_enforces() {
    let env = rbac_env("kyverno-manual-gate.yaml");
    publish_rules(&env, "release-managers", true);
    started_by(&env, "developer");
    let next = format!("{APPROVE}   (staging → production)");
    let stage = format!("{APPROVE}   (unblocks staging → production)");

    // A release manager who did not start the rollout: the command, as is.
    let (step, line) = advice_for(&env, User::ReleaseManager, &[]);
    assert_eq!(
        (step.as_str(), line.as_str()),
        (next.as_str(), stage.as_str())
    );

    // The admin: RBAC lets them, the rules do not; told who can, on both lines.
    let who = "a member of group \"release-managers\" other than \"developer\" who may patch it";
    let not_in_group = "the admission webhook admits approvals only from members of group \
                        \"release-managers\", and you (\"admin\") are in \"system:masters\", \
                        \"system:authenticated\"";
    let (step, line) = advice_for(&env, User::Admin, &[]);
    assert_eq!(
        step,
        format!("you cannot approve ({not_in_group}): {who} runs: {next}")
    );
    assert_eq!(
        line,
        format!("you cannot approve ({not_in_group}): {who} runs: {stage}")
    );

    // A viewer: neither RBAC nor the rules; both reasons.
    let (step, _) = advice_for(&env, User::Viewer, &[]);
    assert_eq!(
        step,
        format!(
            "you cannot approve (RBAC: no patch on clusterpromotions.config.projectsveltos.io \
             \"{MANUAL}\"; the admission webhook admits approvals only from members of group \
             \"release-managers\", and you (\"viewer\") are in \"viewers\", \
             \"system:authenticated\"): {who} runs: {next}"
        )
    );

    // Four eyes: the release manager who started the rollout may not approve it.
    started_by(&env, "release-manager");
    let (step, _) = advice_for(&env, User::ReleaseManager, &[]);
    assert_eq!(
        step,
        format!(
            "you cannot approve (four eyes: you (\"release-manager\") started this rollout, and \
             the admission webhook admits another user's approval only): a member of group \
             \"release-managers\" other than \"release-manager\" who may patch it runs: {next}"
        )
    );

    // The model says the same.
    let json: serde_json::Value = serde_json::from_str(
        &run_as(
            &env,
            User::ReleaseManager,
            &["describe", MANUAL, "-o", "json"],
        )
        .expect(0)
        .stdout,
    )
    .unwrap();
    assert_eq!(json["approvalRight"]["mayApprove"], false);
    assert_eq!(json["approvalRight"]["rulesRead"], true);
    assert_eq!(json["nextStep"], step.as_str());

    // Who the caller is was asked of the server, as the release manager.
    let reviews = env.requests("POST", "/selfsubjectreviews");
    assert!(
        reviews.iter().any(|r| r.user == "release-manager"),
        "{reviews:?}"
    );
}

#[test]
fn approver_rules_that_cannot_be_read_leave_the_right_unknown_and_say_why() {
    let env = rbac_env("kyverno-manual-gate.yaml");
    publish_rules(&env, "release-managers", false);
    env.server.deny(DenyRule {
        user: Some("release-manager".into()),
        resource: Some("configmaps".into()),
        ..DenyRule::default()
    });
    let (step, _) = advice_for(&env, User::ReleaseManager, &[]);
    assert_eq!(
        step,
        format!(
            "{APPROVE}   (staging → production)   (whether you may approve is unknown: the \
             approver rules could not be read (ConfigMap \
             kubectl-promotion-system/promotion-governance: forbidden (User \"release-manager\" \
             cannot get resource \"configmaps\" in API group \"\" in the namespace \
             \"kubectl-promotion-system\")))"
        )
    );

    // Rules that do not parse are not guessed at either.
    publish(
        &env,
        serde_json::json!({"approver-group": "release-managers"}),
    );
    let (step, _) = advice_for(&env, User::Viewer, &[]);
    assert!(
        step.starts_with("you cannot approve (RBAC: no patch on"),
        "a known refusal wins: {step}"
    );
    let (step, _) = advice_for(&env, User::Admin, &[]);
    assert_eq!(
        step,
        format!(
            "{APPROVE}   (staging → production)   (whether you may approve is unknown: the \
             approver rules could not be read (ConfigMap \
             kubectl-promotion-system/promotion-governance: not valid: key \"approver-group\" is \
             not an approver rule (the keys are \"approver-groups\" and \
             \"forbid-self-approval\")))"
        )
    );
}

#[test]
fn describe_watch_and_file_advise_approvals_as_describe_does() {
    let env = rbac_env("kyverno-manual-gate.yaml");
    publish_rules(&env, "release-managers", false);
    // -w: the first view, printed whole, is judged as the one-shot describe is.
    let mut running = Running::start(
        &env,
        &[
            "describe",
            MANUAL,
            "-w",
            "--as",
            User::Viewer.name(),
            "--as-group",
            "viewers",
        ],
    );
    let line = running.expect_line(Stream::Stdout, "Next step:");
    assert!(
        line.contains(&format!(
            "you cannot approve (RBAC: no patch on clusterpromotions.config.projectsveltos.io \
             \"{MANUAL}\"; the admission webhook admits approvals only from members of group \
             \"release-managers\""
        )),
        "{line}"
    );
    drop(running);

    // -f: nothing is asked of a cluster, and the advice says so.
    let out = env
        .run(&[
            "describe",
            "-f",
            example_path("kyverno-manual-gate.yaml").to_str().unwrap(),
        ])
        .expect(0);
    assert!(
        out.stdout.contains(&format!(
            "{APPROVE}   (staging → production)   (whether you may approve is unknown: \
             described offline, nothing was asked of a cluster)\n"
        )),
        "{}",
        out.stdout
    );
}

/// `describe` lists the Events about a promotion in `default` only, where Kubernetes' recorders
/// put the Events of cluster-scoped objects (so a viewer needs Event reads there alone), through
/// `events.k8s.io` and, for a user who may read only core Events (the viewer of the users
/// table, like the built-in `view`), through core `v1`.
#[test]
fn describe_reads_events_only_where_kubernetes_records_them() {
    let env = rbac_env("kyverno-manual-gate.yaml");
    let out = env.run(&["describe", MANUAL]).expect(0);
    assert!(
        out.stdout.contains("Provisioning stage staging"),
        "{}",
        out.stdout
    );
    let out = run_as(&env, User::Viewer, &["describe", MANUAL]).expect(0);
    assert!(
        out.stdout.contains("Provisioning stage staging"),
        "{}",
        out.stdout
    );
    let lists = env.requests("GET", "/events");
    let paths: Vec<&str> = lists.iter().map(|r| r.path.as_str()).collect();
    assert!(
        paths.contains(&"/apis/events.k8s.io/v1/namespaces/default/events")
            && paths.contains(&"/api/v1/namespaces/default/events"),
        "{paths:?}"
    );
    assert!(
        paths.iter().all(|p| p.contains("/namespaces/default/")),
        "{paths:?}"
    );
}
