//! The plugin as a user whose RBAC covers only part of what it reads: the stand-in's authorizer
//! evaluates the users table of `promotion_e2e::envtest::users` as the real RBAC authorizer
//! would (`promotion_e2e::backend::users_table_rbac`), and the admin impersonates the user
//! (`--as`/`--as-group`), as kubectl lets an operator check what someone else sees.
//!
//! Then the install's user roles (`manifests/roles`, docs/roles.md) on a real kube-apiserver
//! (envtest): each bound to a user as the docs bind it, the real plugin run as that user for
//! every command the role is meant for. That test needs `KUBEBUILDER_ASSETS` (see
//! `scenarios.rs`): without it (and without `CI=true`) it is reported as ignored, never as
//! passed, which is why this file has its own harness (libtest-mimic, `harness = false`).

mod plugin_common;

use libtest_mimic::{Arguments, Trial};
use plugin_common::*;
use promotion_e2e::apiserver::DenyRule;
use promotion_e2e::envtest::users::User;
use promotion_e2e::envtest::{self as envtest_server, Gate};

/// The tests on the stand-in.
const STAND_IN: &[(&str, fn())] = &[
    (
        "describe_without_clustersummaries_names_the_forbidden_read_and_claims_no_phase",
        describe_without_clustersummaries_names_the_forbidden_read_and_claims_no_phase,
    ),
    (
        "describe_with_no_cluster_data_readable_is_online_and_says_why",
        describe_with_no_cluster_data_readable_is_online_and_says_why,
    ),
    (
        "wait_without_clustersummaries_goes_on_from_what_it_can_read",
        wait_without_clustersummaries_goes_on_from_what_it_can_read,
    ),
    (
        "describe_advises_an_approval_only_to_who_may_give_it",
        describe_advises_an_approval_only_to_who_may_give_it,
    ),
    (
        "describe_says_who_may_approve_by_the_rules_the_webhook_enforces",
        describe_says_who_may_approve_by_the_rules_the_webhook_enforces,
    ),
    (
        "approver_rules_that_cannot_be_read_leave_the_right_unknown_and_say_why",
        approver_rules_that_cannot_be_read_leave_the_right_unknown_and_say_why,
    ),
    (
        "describe_watch_and_file_advise_approvals_as_describe_does",
        describe_watch_and_file_advise_approvals_as_describe_does,
    ),
    (
        "describe_reads_events_only_where_kubernetes_records_them",
        describe_reads_events_only_where_kubernetes_records_them,
    ),
];

fn main() {
    let args = Arguments::from_args();
    let gate = envtest_server::gate();
    if let Gate::Skip(reason) = &gate {
        eprintln!("envtest test ignored: {reason}");
    }
    let skip_real = matches!(gate, Gate::Skip(_));
    let mut trials: Vec<Trial> = STAND_IN
        .iter()
        .map(|&(name, test)| {
            Trial::test(format!("standin::{name}"), move || {
                test();
                Ok(())
            })
        })
        .collect();
    trials.push(
        Trial::test(
            "envtest::each_user_role_runs_the_commands_it_is_for_and_no_more",
            || {
                roles::each_user_role_runs_the_commands_it_is_for_and_no_more();
                Ok(())
            },
        )
        .with_ignored_flag(skip_real),
    );
    libtest_mimic::run(&args, trials).exit();
}

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
             not an approver rule (the keys are \"approver-groups\", \
             \"forbid-self-approval\" and \"rollback-groups\")))"
        )
    );
}

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

/// The user roles of `manifests/roles` on a real kube-apiserver.
mod roles {
    use std::path::Path;
    use std::time::Duration;

    use promotion_e2e::backend::{BackendKind, Cluster, SESSION_LABEL};
    use promotion_e2e::bins::Output;
    use promotion_e2e::dashboard_client::{DashboardClient, DashboardProcess};
    use promotion_e2e::envtest::User;
    use promotion_e2e::fixtures::{self, Example, WorldBuilder};
    use serde_json::{json, Value};

    use super::plugin_common::{eventually, plugin_bin};

    /// The controller's namespace in the install, where its Lease and revisions live.
    const CONTROLLER_NAMESPACE: &str = "kubectl-promotion-system";

    /// How long RBAC may take to see a new binding (its authorizer reads through informers).
    const RBAC_PATIENCE: Duration = Duration::from_secs(30);

    /// The objects of the default install (`kubectl kustomize manifests`) this test applies:
    /// the user roles, and the approver rules every signed-in user may read (with their
    /// namespace). The rest (Deployments, webhook configurations) needs cert-manager and images.
    fn install_objects() -> Vec<Value> {
        let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
        let out = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(&manifests)
            .output()
            .expect("run `kubectl kustomize` (kubectl must be on PATH)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("UTF-8");
        let objects: Vec<Value> = serde_saphyr::from_multiple(&text).expect("YAML");
        let wanted = |o: &Value| {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            o["metadata"]["labels"]["app.kubernetes.io/component"] == "user-roles"
                || (o["kind"] == "Namespace" && name == CONTROLLER_NAMESPACE)
                || name.starts_with("promotion-governance")
        };
        objects.into_iter().filter(wanted).collect()
    }

    /// The manual-gate example and what Sveltos made around it (ClusterProfiles,
    /// ClusterSummaries, SveltosClusters and the Events, in `default`), plus a CAPI Cluster, all
    /// this session's. Returns the promotion's name.
    fn write_world(cluster: &Cluster) -> String {
        let namespace = cluster.namespace();
        let clusters = ["dev", "staging", "prod"]
            .iter()
            .map(|env| fixtures::Cluster::new(&namespace, &format!("{env}01"), &[("env", env)]))
            .collect();
        let mut promotion = fixtures::load_example("kyverno-manual-gate.yaml")
            .unwrap_or_else(|e| panic!("{e}"))
            .promotion;
        let name = cluster.name("kyverno-rollout-man");
        promotion["metadata"]["name"] = json!(name);
        // No finalizer: nothing here would remove it when the author deletes promotions.
        promotion["metadata"]
            .as_object_mut()
            .map(|m| m.remove("finalizers"));
        let mut builder = WorldBuilder::new().with_clusters(clusters);
        builder
            .add(Example {
                file: "kyverno-manual-gate.yaml".into(),
                promotion,
            })
            .unwrap_or_else(|e| panic!("{e}"));
        cluster
            .seed(builder.build())
            .unwrap_or_else(|e| panic!("{e}"));
        // A Cluster API cluster too, so that reading the fleet covers both kinds.
        cluster
            .put(&json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "clusters.cluster.x-k8s.io"},
                "spec": {
                    "group": "cluster.x-k8s.io", "scope": "Namespaced",
                    "names": {"kind": "Cluster", "listKind": "ClusterList",
                              "plural": "clusters", "singular": "cluster"},
                    "versions": [{"name": "v1beta1", "served": true, "storage": true,
                                  "subresources": {"status": {}},
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                      "x-kubernetes-preserve-unknown-fields": true}}}],
                },
            }))
            .expect("installing the CAPI Cluster CRD");
        cluster
            .put(&json!({
                "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                "metadata": {"name": "capi-prod01", "namespace": namespace,
                             "labels": {"env": "prod", SESSION_LABEL: cluster.session()}},
                "spec": {},
                "status": {"conditions": [{"type": "ControlPlaneInitialized", "status": "True"}]},
            }))
            .expect("creating a CAPI Cluster");
        name
    }

    /// promotion-controller's Lease and a revision it keeps (`history`), as it writes them.
    fn write_controller_state(cluster: &Cluster) {
        cluster
            .put(&json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "promotion-controller", "namespace": CONTROLLER_NAMESPACE},
                "spec": {"holderIdentity": "promotion-controller-0", "leaseDurationSeconds": 15},
            }))
            .expect("writing the Lease");
        cluster
            .put(&json!({
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": cluster.name("kyverno-rollout-man-1"),
                             "namespace": CONTROLLER_NAMESPACE},
                "revision": 1,
                "data": {"profileSpec": {"syncMode": "Continuous"}},
            }))
            .expect("writing a ControllerRevision");
    }

    /// `args` of `program` as `user`, impersonated by the admin (the user needs no credentials).
    fn as_user(cluster: &Cluster, program: &Path, user: &str, args: &[&str]) -> Output {
        let mut cmd = cluster.command(User::Admin, program);
        cmd.args(args).args(["--as", user]);
        promotion_e2e::bins::run(&mut cmd).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn kubectl(cluster: &Cluster, user: &str, args: &[&str]) -> Output {
        as_user(cluster, Path::new("kubectl"), user, args)
    }

    fn plugin(cluster: &Cluster, user: &str, args: &[&str]) -> Output {
        as_user(cluster, &plugin_bin(), user, args)
    }

    fn admin(cluster: &Cluster, args: &[&str]) -> String {
        cluster
            .kubectl_ok(User::Admin, args)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `kubectl auth can-i VERB RESOURCE [-n NS]` for `user`.
    fn can_i(cluster: &Cluster, user: &str, verb: &str, resource: &str, ns: Option<&str>) -> bool {
        let mut args = vec!["auth", "can-i", verb, resource];
        if let Some(ns) = ns {
            args.extend(["-n", ns]);
        }
        kubectl(cluster, user, &args).stdout.trim() == "yes"
    }

    /// `kubectl promotion dashboard --as VIEWER`: with the viewer's bindings both pages read
    /// everything they show (the Events, the Lease, the revisions: no "not readable"), the
    /// approve button is disabled with the RBAC reason, and an approval sent anyway is refused
    /// by the API server (the action runs as the same user).
    fn viewer_dashboard(cluster: &Cluster, viewer: &str, name: &str) {
        let mut cmd = cluster.command(User::Admin, plugin_bin());
        cmd.args(["dashboard", "--port", "0", "--as", viewer]);
        let dash =
            DashboardProcess::start(cmd, Duration::from_secs(60)).unwrap_or_else(|e| panic!("{e}"));
        let mut client = DashboardClient::new(&dash.url, None).unwrap();
        client.login().unwrap();
        let fleet = client.get("/").unwrap();
        assert_eq!(fleet.status, 200, "{}", fleet.body);
        assert!(
            fleet.body.contains(&format!("id=\"p-{name}\"")),
            "{}",
            fleet.body
        );
        assert!(!fleet.body.contains("not readable"), "{}", fleet.body);
        let page = client.get(&format!("/promotions/{name}")).unwrap();
        assert_eq!(page.status, 200, "{}", page.body);
        for unread in ["not readable", "Not readable", "class=\"warning"] {
            assert!(!page.body.contains(unread), "{unread}: {}", page.body);
        }
        assert!(
            page.body.contains("Provisioning stage staging"),
            "{}",
            page.body
        );
        assert!(
            page.body.contains(&format!(
                "RBAC: no patch on clusterpromotions.config.projectsveltos.io &quot;{name}&quot;"
            )),
            "{}",
            page.body
        );
        let sent = client
            .post_form(&format!("/promotions/{name}/approve"), "stage=staging")
            .unwrap();
        assert_eq!(sent.status, 422, "{}", sent.body);
        assert!(sent.body.contains("forbidden (403)"), "{}", sent.body);
        drop(dash);
    }

    /// `role` bound to `user` as docs/roles.md binds it: the ClusterRole cluster-wide, the Event
    /// reads in `default` and the controller's Lease and revisions in its namespace; then wait
    /// until the authorizer has seen all three bindings.
    fn bind(cluster: &Cluster, user: &str, role: &str) {
        admin(
            cluster,
            &[
                "create",
                "clusterrolebinding",
                &format!("{user}-{role}"),
                &format!("--clusterrole={role}"),
                &format!("--user={user}"),
            ],
        );
        for (ns, namespaced) in [
            ("default", "promotion-viewer-events"),
            (CONTROLLER_NAMESPACE, "promotion-viewer-controller"),
        ] {
            admin(
                cluster,
                &[
                    "create",
                    "rolebinding",
                    &format!("{user}-{namespaced}"),
                    "-n",
                    ns,
                    &format!("--clusterrole={namespaced}"),
                    &format!("--user={user}"),
                ],
            );
        }
        eventually(
            RBAC_PATIENCE,
            &format!("{user}'s bindings in effect"),
            || {
                can_i(cluster, user, "list", "clusterpromotions", None)
                    && can_i(
                        cluster,
                        user,
                        "list",
                        "events.events.k8s.io",
                        Some("default"),
                    )
                    && can_i(cluster, user, "get", "leases", Some(CONTROLLER_NAMESPACE))
            },
        );
    }

    /// What kube-controller-manager's ClusterRole aggregation controller does, which a lone
    /// kube-apiserver lacks: the built-in `target`'s rules become those of every ClusterRole its
    /// `aggregationRule` selects (`view` first, then `edit`, which aggregates `view`).
    fn aggregate(cluster: &Cluster, target: &str) {
        let roles: Value =
            serde_json::from_str(&admin(cluster, &["get", "clusterroles", "-o", "json"])).unwrap();
        let roles = roles["items"].as_array().unwrap();
        let mut role = roles
            .iter()
            .find(|r| r["metadata"]["name"] == target)
            .unwrap_or_else(|| panic!("no built-in ClusterRole {target}"))
            .clone();
        let selectors = role["aggregationRule"]["clusterRoleSelectors"]
            .as_array()
            .unwrap()
            .clone();
        let selected = |r: &Value| {
            selectors.iter().any(|sel| {
                sel["matchLabels"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| r["metadata"]["labels"][k] == *v)
            })
        };
        let mut rules: Vec<Value> = Vec::new();
        for r in roles
            .iter()
            .filter(|r| r["metadata"]["name"] != target && selected(r))
        {
            for rule in r["rules"].as_array().into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
        role["rules"] = json!(rules);
        role["metadata"]
            .as_object_mut()
            .map(|m| m.remove("resourceVersion"));
        cluster.put(&role).expect("aggregating");
    }

    /// Exit 0 (or `code`), nothing refused on the way.
    fn fine(out: Output, code: i32, what: &str) -> Output {
        assert_eq!(out.code, code, "{what}: {out}");
        let text = format!("{}{}", out.stdout, out.stderr).to_lowercase();
        assert!(!text.contains("forbidden"), "{what}: {out}");
        out
    }

    /// Refused by RBAC (the API server's 403, in kubectl's or the plugin's words).
    fn refused(out: Output, what: &str) -> Output {
        assert_ne!(out.code, 0, "{what}: {out}");
        assert!(
            out.stderr.contains("forbidden") || out.stderr.contains("Forbidden"),
            "{what}: {out}"
        );
        out
    }

    /// A promotion of this session the author creates, edits (diff -f) and deletes.
    fn authored(cluster: &Cluster, chart_version: &str) -> Value {
        json!({
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterPromotion",
            "metadata": {"name": cluster.name("authored")},
            "spec": {
                "profileSpec": {"helmCharts": [{
                    "repositoryURL": "https://kyverno.github.io/kyverno/",
                    "repositoryName": "kyverno", "chartName": "kyverno/kyverno",
                    "chartVersion": chart_version, "releaseName": "kyverno-latest",
                    "releaseNamespace": "kyverno", "helmChartAction": "Install"}]},
                "stages": [{"name": "dev", "clusterSelector": {"matchLabels": {"env": "none"}}}]
            }
        })
    }

    pub fn each_user_role_runs_the_commands_it_is_for_and_no_more() {
        let cluster = Cluster::new(BackendKind::Envtest).unwrap_or_else(|e| panic!("{e}"));
        for object in install_objects() {
            cluster
                .put(&object)
                .unwrap_or_else(|e| panic!("applying {}: {e}", object["metadata"]["name"]));
        }
        let name = write_world(&cluster);
        write_controller_state(&cluster);
        let session = cluster.session().to_string();
        let (viewer, approver, author, viewing) = (
            format!("viewer-{session}"),
            format!("approver-{session}"),
            format!("author-{session}"),
            format!("view-{session}"),
        );
        bind(&cluster, &viewer, "promotion-viewer");
        bind(&cluster, &approver, "promotion-approver");
        bind(&cluster, &author, "promotion-author");

        // The viewer: every read command works, and nothing is left unread.
        let v = viewer.as_str();
        let list = fine(plugin(&cluster, v, &["list"]), 0, "list");
        let row = list
            .stdout
            .lines()
            .find(|l| l.starts_with(&name))
            .unwrap_or_else(|| panic!("no row for {name}: {list}"));
        assert!(row.contains("awaiting approval"), "{row}");
        let described = fine(plugin(&cluster, v, &["describe", &name]), 0, "describe");
        assert!(
            described.stdout.contains("Provisioning stage staging"),
            "the Events, read in default: {described}"
        );
        assert!(!described.stdout.contains("Warnings:"), "{described}");
        assert!(
            described.stdout.contains(&format!(
                "you cannot approve (RBAC: no patch on clusterpromotions.config.projectsveltos.io \
                 \"{name}\")"
            )),
            "{described}"
        );
        let json: Value = serde_json::from_str(
            &fine(
                plugin(&cluster, v, &["describe", &name, "-o", "json"]),
                0,
                "describe -o json",
            )
            .stdout,
        )
        .unwrap();
        assert_eq!(json.get("warnings"), None, "{json}");
        assert_eq!(json["phase"], "awaitingApproval", "{json}");
        let waited = fine(
            plugin(
                &cluster,
                v,
                &["wait", &name, "--for=stage=staging", "--timeout=1m"],
            ),
            0,
            "wait",
        );
        assert_eq!(waited.stderr, "", "{waited}");
        fine(
            plugin(&cluster, v, &["diff", &name, "--stage", "staging"]),
            1,
            "diff --stage",
        );
        let plan: Value = serde_json::from_str(
            &fine(
                plugin(&cluster, v, &["plan", &name, "-o", "json"]),
                0,
                "plan",
            )
            .stdout,
        )
        .unwrap();
        let prod = &plan["stages"][2]["clusters"];
        assert!(
            prod.as_array()
                .is_some_and(|c| c.iter().any(|c| c["name"] == "capi-prod01")),
            "the CAPI cluster read: {plan}"
        );
        fine(
            plugin(&cluster, v, &["health", &name, "--stage", "dev"]),
            0,
            "health",
        );
        for resource in ["leases", "controllerrevisions"] {
            let out = fine(
                kubectl(
                    &cluster,
                    v,
                    &["get", resource, "-n", CONTROLLER_NAMESPACE, "-o", "name"],
                ),
                0,
                resource,
            );
            assert!(!out.stdout.is_empty(), "{resource}: {out}");
        }
        // No role reads Secrets (the managed clusters' kubeconfigs, which `health` reads for a
        // stage with checks), nor Events outside `default`.
        let ns = cluster.namespace();
        for user in [&viewer, &approver, &author] {
            assert!(
                !can_i(&cluster, user, "get", "secrets", Some(&ns)),
                "{user}"
            );
            assert!(
                !can_i(&cluster, user, "list", "events", Some(&ns)),
                "{user}"
            );
        }
        // ... and may not approve.
        refused(
            plugin(&cluster, v, &["approve", &name, "--stage", "staging"]),
            "the viewer approving",
        );
        viewer_dashboard(&cluster, v, &name);

        // The approver: approve, the reads it needs, and no create, update or delete.
        let a = approver.as_str();
        let described = fine(plugin(&cluster, a, &["describe", &name]), 0, "describe");
        assert!(
            described.stdout.contains(&format!(
                "Next step:      kubectl promotion approve {name} --stage staging"
            )),
            "{described}"
        );
        fine(
            plugin(&cluster, a, &["approve", &name, "--stage", "staging"]),
            0,
            "approve",
        );
        let stored: Value = serde_json::from_str(&admin(
            &cluster,
            &["get", "clusterpromotion", &name, "-o", "json"],
        ))
        .unwrap();
        assert_eq!(
            stored["spec"]["stages"][1]["trigger"]["manual"]["approved"], true,
            "{stored}"
        );
        let file = cluster
            .write_manifest("authored.json", &authored(&cluster, "3.6.2"))
            .unwrap();
        let file = file.display().to_string();
        refused(
            kubectl(&cluster, a, &["create", "-f", &file]),
            "the approver creating",
        );
        let mut replaced = stored.clone();
        replaced["spec"]["profileSpec"]["tier"] = json!(90);
        let replaced_file = cluster.write_manifest("replaced.json", &replaced).unwrap();
        refused(
            kubectl(
                &cluster,
                a,
                &["replace", "-f", &replaced_file.display().to_string()],
            ),
            "the approver replacing",
        );
        refused(
            kubectl(&cluster, a, &["delete", "clusterpromotion", &name]),
            "the approver deleting",
        );
        // RBAC cannot limit a patch to `approved`: a patch of the spec is the API server's to
        // admit (docs/roles.md says so, and what records it).
        fine(
            kubectl(
                &cluster,
                a,
                &[
                    "patch",
                    "clusterpromotion",
                    &name,
                    "--type=merge",
                    "-p",
                    r#"{"spec":{"profileSpec":{"tier":90}}}"#,
                ],
            ),
            0,
            "the approver's merge patch of the spec",
        );

        // The author: create, diff -f against the server, delete.
        let w = author.as_str();
        fine(
            plugin(&cluster, w, &["diff", "-f", &file]),
            1,
            "diff -f of a new promotion",
        );
        fine(kubectl(&cluster, w, &["create", "-f", &file]), 0, "create");
        let bumped = cluster
            .write_manifest("bumped.json", &authored(&cluster, "3.7.0"))
            .unwrap();
        let diff = fine(
            plugin(&cluster, w, &["diff", "-f", &bumped.display().to_string()]),
            1,
            "diff -f",
        );
        assert!(diff.stdout.contains("3.7.0"), "{diff}");
        fine(
            kubectl(
                &cluster,
                w,
                &["delete", "clusterpromotion", &cluster.name("authored")],
            ),
            0,
            "delete",
        );

        // The built-in `view`, once aggregated: ClusterPromotions only; `edit` adds no approval.
        aggregate(&cluster, "view");
        aggregate(&cluster, "edit");
        let viewing_edit = format!("{viewing}-edit");
        for (user, role) in [(&viewing, "view"), (&viewing_edit, "edit")] {
            admin(
                &cluster,
                &[
                    "create",
                    "clusterrolebinding",
                    &format!("{user}-{role}"),
                    &format!("--clusterrole={role}"),
                    &format!("--user={user}"),
                ],
            );
            eventually(RBAC_PATIENCE, &format!("{user} may {role}"), || {
                can_i(&cluster, user, "list", "clusterpromotions", None)
            });
            for (resource, granted) in [
                ("clustersummaries", false),
                ("clusterprofiles", false),
                ("sveltosclusters", false),
            ] {
                assert_eq!(
                    can_i(&cluster, user, "list", resource, None),
                    granted,
                    "{role}: {resource}"
                );
            }
            assert!(
                !can_i(&cluster, user, "patch", "clusterpromotions", None),
                "{role} may approve"
            );
            fine(
                kubectl(&cluster, user, &["get", "clusterpromotion", &name]),
                0,
                role,
            );
            refused(
                kubectl(&cluster, user, &["get", "clustersummaries", "-A"]),
                &format!("{role} reading ClusterSummaries"),
            );
        }
    }
}
