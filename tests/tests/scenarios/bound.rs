//! Approvals bound to a rollout (issue 23), through the real webhook, plugin and API server.
//!
//! Sveltos names the rollout its status describes by two hashes (`stagesHash`,
//! `profileSpecHash`); the webhook records the rollout every approval is given in. An approval is
//! used only once a status of *its* rollout shows the stage past the gate, so an approval for a
//! rollout Sveltos has not started is neither shown `(used)` nor removed by an unrelated update.
//! On a stage the current rollout has passed, `approve` refuses rather than advising an approval
//! that would count as used at once. `approve --revoke` withdraws an approval not used yet, and
//! the webhook records who did. An approval the webhook did not see is credited to nobody.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::{FailurePolicy, User, WebhookConfigurations, WebhookServer};
use promotion_shared::admission::approval_records;
use serde_json::{json, Value};

use super::support::{
    assert_contains, example, kubectl, manual_gate, name_of, read_back, reconciled_now,
    register_webhook, Expect,
};

/// Store the manual-gate example without status, and return its name.
pub fn store(cluster: &Cluster) -> String {
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    if let Some(map) = promotion.as_object_mut() {
        map.remove("status");
    }
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing the promotion");
    name_of(&promotion)
}

/// The example's status (awaiting approval at staging), moved to now.
pub fn awaiting() -> Value {
    reconciled_now(&example("kyverno-manual-gate.yaml")["status"])
}

/// The start of the approval scenarios: the webhook and the plugin installed, a promotion stored
/// awaiting approval at staging.
pub struct Gate {
    pub name: String,
    webhook: WebhookServer,
    /// Kept to play an outage with them still installed.
    configs: Option<WebhookConfigurations>,
}

impl Gate {
    pub fn new(cluster: &Cluster) -> Gate {
        let webhook = register_webhook(cluster);
        let configs = webhook
            .configurations()
            .or_fail(cluster, "rendering manifests/");
        cluster
            .install_plugin()
            .or_fail(cluster, "installing the plugin");
        let name = store(cluster);
        cluster
            .put_status(CLUSTER_PROMOTION, None, &name, &awaiting())
            .or_fail(cluster, "writing the status");
        Gate {
            name,
            webhook,
            configs: Some(configs),
        }
    }

    /// The release manager approves the gate, with `reason`.
    pub fn approved(self, cluster: &Cluster, reason: &str) -> Gate {
        let out = kubectl(
            cluster,
            User::ReleaseManager,
            &["promotion", "approve", &self.name, "--reason", reason],
        );
        assert_eq!(out.code, 0, "[{}] approving: {out}", cluster.kind().name());
        self
    }

    /// The webhook's outage under `failurePolicy: Ignore`: it stops, its configurations stay
    /// installed and fail open, so writes pass without it seeing them.
    pub fn webhook_down_under_ignore(&mut self, cluster: &Cluster) {
        self.webhook.stop();
        let configs = self
            .configs
            .take()
            .ok_or("one outage per scenario: the configurations were used")
            .or_fail(cluster, "the webhook's configurations");
        cluster
            .register_webhooks(configs.with_failure_policy(FailurePolicy::Ignore))
            .or_fail(cluster, "switching to failurePolicy Ignore");
    }
}

/// A status in which the rollout of `object`'s spec went past staging's gate to production,
/// carrying that rollout's hashes as Sveltos writes them.
fn past_the_gate(object: &Value) -> Value {
    let mut status = example("kyverno-manual-gate.yaml")["status"].clone();
    status["currentStageName"] = json!("production");
    status["stages"][1]["currentStatusDescription"] =
        json!("Successfully provisioned (2026-02-16T07:40:02Z)");
    if let Some(stages) = status["stages"].as_array_mut() {
        stages.push(json!({
            "name": "production",
            "lastUpdateReconciledTime": "2026-02-16T07:40:02Z",
        }));
    }
    let id = promotion_shared::rollout::identity_of(object)
        .expect("the stored spec hashes")
        .id;
    status["stagesHash"] = json!(id.stages_hash);
    status["profileSpecHash"] = json!(id.profile_spec_hash);
    reconciled_now(&status)
}

pub fn describe_json(cluster: &Cluster, name: &str) -> Value {
    let out = kubectl(
        cluster,
        User::Viewer,
        &["promotion", "describe", name, "-o", "json"],
    );
    assert_eq!(out.code, 0, "[{}] describe: {out}", cluster.kind().name());
    serde_json::from_str(&out.stdout).expect("describe -o json")
}

/// `approval` of the staging stage in `describe -o json`.
fn staging_approval(cluster: &Cluster, name: &str) -> Value {
    describe_json(cluster, name)["stages"][1]["approval"].clone()
}

/// `kubectl annotate` (an update the webhook sees that changes no spec); returns stderr.
fn annotate(cluster: &Cluster, name: &str, annotation: &str) -> String {
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["annotate", "clusterpromotion", name, annotation],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{name} annotated\n").as_str()
        ),
        "[{}] annotate {annotation}: {out}",
        cluster.kind().name()
    );
    out.stderr
}

fn chart_version_patch(version: &str, approve: bool) -> String {
    let mut ops = vec![json!({
        "op": "replace",
        "path": "/spec/profileSpec/helmCharts/0/chartVersion",
        "value": version,
    })];
    if approve {
        ops.push(json!({
            "op": "add",
            "path": "/spec/stages/1/trigger/manual/approved",
            "value": true,
        }));
    }
    Value::Array(ops).to_string()
}

pub fn an_approval_for_a_rollout_sveltos_has_not_started_is_not_used(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let name = store(cluster);
    let stored = read_back(cluster, &name);
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &past_the_gate(&stored))
        .or_fail(cluster, "writing the status of a rollout past the gate");
    assert_eq!(
        staging_approval(cluster, &name),
        "notApproved",
        "[{backend}]"
    );

    // Item 2: the current rollout passed staging. No advice to pre-approve, with or without it.
    for extra in [&[][..], &["--pre-approve"][..]] {
        let mut args = vec!["promotion", "approve", &name, "--stage", "staging"];
        args.extend_from_slice(extra);
        let out = kubectl(cluster, User::ReleaseManager, &args);
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (1, ""),
            "[{backend}] {args:?}: {out}"
        );
        assert_contains(
            &out.stderr,
            &[
                "has already passed stage \"staging\" (staging → production)",
                "The next rollout (a change of spec.profileSpec or of the stages) will need its \
                 own approval of \"staging\"",
            ],
            &format!("[{backend}] {args:?}"),
        );
        assert!(
            !out.stderr.contains("pass --pre-approve"),
            "[{backend}] {args:?}: {out}"
        );
    }

    // Item 1, first way: the approval travels with the spec change, in one request. Sveltos
    // has not picked the change up: the status is still the previous rollout's, past the gate.
    let out = kubectl(
        cluster,
        User::Admin,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type=json",
            "-p",
            &chart_version_patch("3.7.0", true),
        ],
    );
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, ""),
        "[{backend}] spec change with approval: {out}"
    );
    assert_eq!(staging_approval(cluster, &name), "pending", "[{backend}]");
    assert_eq!(
        annotate(cluster, &name, "team=platform"),
        "",
        "[{backend}] an unrelated update keeps the approval"
    );
    assert_eq!(
        manual_gate(&read_back(cluster, &name), "staging")["approved"],
        true,
        "[{backend}]"
    );

    // Second way: a spec change first (which resets that approval: a new rollout), then
    // `approve --pre-approve`.
    let out = kubectl(
        cluster,
        User::Admin,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type=json",
            "-p",
            &chart_version_patch("3.8.0", false),
        ],
    );
    assert_eq!(out.code, 0, "[{backend}] spec change: {out}");
    assert_contains(
        &out.stderr,
        &["reset: spec.profileSpec changed, the new rollout needs a new approval"],
        &format!("[{backend}] spec change"),
    );
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &[
            "promotion",
            "approve",
            &name,
            "--stage",
            "staging",
            "--pre-approve",
        ],
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            format!(
                "clusterpromotion.config.projectsveltos.io/{name} approved (stage staging → \
                 production), pre-approved ahead of the pipeline\n"
            )
            .as_str(),
            ""
        ),
        "[{backend}] pre-approve: {out}"
    );
    assert_eq!(staging_approval(cluster, &name), "pending", "[{backend}]");
    assert_eq!(
        annotate(cluster, &name, "reviewed=yes"),
        "",
        "[{backend}] an unrelated update keeps the pre-approval"
    );
    let stored = read_back(cluster, &name);
    assert_eq!(
        manual_gate(&stored, "staging")["approved"],
        true,
        "[{backend}]"
    );

    // Sveltos runs the new rollout past the gate: now the approval is used, and removed.
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &past_the_gate(&stored))
        .or_fail(cluster, "writing the new rollout's status");
    assert_eq!(staging_approval(cluster, &name), "consumed", "[{backend}]");
    assert_contains(
        &annotate(cluster, &name, "owner=platform-team"),
        &["removed: it was already used to promote to \"production\""],
        &format!("[{backend}] once used"),
    );
}

pub fn an_approval_is_revoked_and_the_revocation_recorded(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let gate = Gate::new(cluster);
    let name = gate.name.clone();
    let revoke = |user: User, reason: Option<&str>| {
        let mut args = vec![
            "promotion",
            "approve",
            &name,
            "--stage",
            "staging",
            "--revoke",
        ];
        if let Some(reason) = reason {
            args.extend(["--reason", reason]);
        }
        kubectl(cluster, user, &args)
    };

    let out = revoke(User::ReleaseManager, None);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            format!(
                "error: stage \"staging\" of {name:?} has no approval to revoke (approved is not \
                 true)\n"
            )
            .as_str()
        ),
        "[{backend}] nothing to revoke: {out}"
    );

    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name, "--reason", "CAB-7"],
    );
    assert_eq!(out.code, 0, "[{backend}] approving: {out}");

    let out = revoke(User::Developer, None);
    assert_eq!(out.code, 1, "[{backend}] a developer cannot patch: {out}");
    assert_contains(
        &out.stderr,
        &["forbidden", "cannot patch resource \"clusterpromotions\""],
        &format!("[{backend}] developer"),
    );

    let out = revoke(User::ReleaseManager, Some("wrong build"));
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            format!(
                "clusterpromotion.config.projectsveltos.io/{name} approval of stage staging \
                 revoked (staging → production waits for a new approval)\n"
            )
            .as_str(),
            ""
        ),
        "[{backend}] revoking: {out}"
    );
    let stored = read_back(cluster, &name);
    assert_eq!(
        manual_gate(&stored, "staging")["approved"],
        false,
        "[{backend}]"
    );
    let record = approval_records(&stored).expect("records")["staging"].clone();
    assert!(record.revoked, "[{backend}] {record:?}");
    assert_eq!(
        (record.user.as_str(), record.reason.as_deref()),
        ("release-manager", Some("wrong build")),
        "[{backend}]"
    );
    // The revocation keeps the approval it withdrew (here the revoker's own).
    let given = record
        .revoked_approval
        .as_deref()
        .unwrap_or_else(|| panic!("[{backend}] the approval withdrawn: {record:?}"));
    assert_eq!(
        (given.user.as_str(), given.reason.as_deref()),
        ("release-manager", Some("CAB-7")),
        "[{backend}]"
    );
    let out = kubectl(cluster, User::Viewer, &["promotion", "describe", &name]);
    assert_contains(
        &out.stdout,
        &[&format!(
            "Last approval:  revoked by release-manager at {}: \"wrong build\" (withdrew \
             release-manager's approval given at {}: \"CAB-7\")\n",
            record.time, given.time
        )],
        &format!("[{backend}] describe"),
    );
    let out = revoke(User::ReleaseManager, None);
    assert_eq!(out.code, 1, "[{backend}] revoked twice: {out}");
    assert_contains(
        &out.stderr,
        &["has no approval to revoke"],
        &format!("[{backend}]"),
    );
}

pub fn an_approval_the_webhook_did_not_see_is_credited_to_nobody(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let mut gate = Gate::new(cluster).approved(cluster, "first");
    let name = gate.name.clone();
    // The approval goes (as Sveltos' reset or a manifest without it would take it), seen by
    // the webhook.
    let out = kubectl(
        cluster,
        User::Admin,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type=json",
            "-p",
            r#"[{"op": "remove", "path": "/spec/stages/1/trigger/manual/approved"}]"#,
        ],
    );
    assert_eq!(out.code, 0, "[{backend}] removing the approval: {out}");

    gate.webhook_down_under_ignore(cluster);
    let out = kubectl(cluster, User::Admin, &["promotion", "approve", &name]);
    assert_eq!(out.code, 0, "[{backend}] approving unseen: {out}");
    assert_contains(
        &out.stderr,
        &["carries no record of who gave it"],
        &format!("[{backend}]"),
    );

    let description = describe_json(cluster, &name);
    let staging = &description["stages"][1];
    assert_eq!(
        (
            &staging["approvalUnrecorded"],
            &staging["approvalRecord"],
            &staging["approval"]
        ),
        (&Value::Bool(true), &Value::Null, &Value::from("pending")),
        "[{backend}] {staging}"
    );
    let out = kubectl(cluster, User::Viewer, &["promotion", "describe", &name]);
    assert_contains(
        &out.stdout,
        &["Last approval:  approved without a record (who: unknown) (pending"],
        &format!("[{backend}] describe"),
    );
    assert!(
        !out.stdout.contains("release-manager at"),
        "[{backend}] nobody is credited: {}",
        out.stdout
    );
}
