//! The plugin as a user whose RBAC covers only part of what it reads: the stand-in's authorizer
//! evaluates the users table of `promotion_e2e::envtest::users` (as the real RBAC authorizer
//! would), and the admin impersonates the user (`--as`/`--as-group`), as kubectl lets an
//! operator check what someone else sees.

mod plugin_common;

use plugin_common::*;
use promotion_e2e::apiserver::{Attributes, Decision, DenyRule};
use promotion_e2e::envtest::users::{self, User};

/// The example world, with the RBAC of the users table enforced.
fn rbac_env(example: &str) -> Env {
    let env = Env::start(example_world(example));
    env.server.set_authorizer(|a: &Attributes| {
        let allowed = users::allows(&users::Request {
            groups: &a.user.groups,
            verb: &a.verb,
            api_group: &a.api_group,
            resource: &a.resource,
            subresource: &a.subresource,
            resource_request: a.resource_request,
        });
        if allowed {
            Decision::Allow
        } else {
            Decision::Deny(None)
        }
    });
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
             can runs: {advice}\n"
        )),
        "{}",
        out.stdout
    );
    // The server was asked, as the viewer.
    let reviews = env.requests("POST", "/selfsubjectaccessreviews");
    assert!(reviews.iter().any(|r| r.user == "viewer"), "{reviews:?}");
}
