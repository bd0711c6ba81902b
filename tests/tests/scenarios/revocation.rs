//! Revocations through the real webhook, plugin and API server (issue "Every screen true…",
//! items 5 and 16).
//!
//! - The record of a revocation keeps the approval it withdrew: the release manager approves,
//!   the admin revokes, and `describe` shows both, the revocation as the admin's revocation of
//!   the release manager's approval, never as an approval by the admin.
//! - Who may revoke is the webhook's approver rule: under approver groups, withdrawing another
//!   user's approval takes the right to approve, and whoever gave an approval may always
//!   withdraw their own (even once no longer an approver). The webhook refuses the rest, naming
//!   the stage, the user and the rule; `describe` tells each caller whether they may revoke.
//!
//! The published ConfigMap `describe` reads is cluster-wide, and the real server is shared by
//! every scenario of this binary: it is published on the stand-in only (a fresh server per
//! scenario), where `describe`'s advice is checked. The webhook's rules come from its own
//! folder (`--governance-dir`) on both.

use promotion_e2e::backend::{BackendKind, Cluster};
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::{User, WebhookServer};
use promotion_shared::admission::{approval_records, ApprovalRecord};
use serde_json::json;

use super::bound::{awaiting, store, Gate};
use super::support::{assert_contains, kubectl, manual_gate, read_back, Expect};

/// `kubectl promotion approve NAME --stage staging` as `user`, `--revoke` or not, with `reason`.
fn approve(
    cluster: &Cluster,
    user: User,
    name: &str,
    revoke: bool,
    reason: &str,
) -> promotion_e2e::bins::Output {
    let mut args = vec!["promotion", "approve", name, "--stage", "staging"];
    if revoke {
        args.push("--revoke");
    }
    args.extend(["--reason", reason]);
    kubectl(cluster, user, &args)
}

/// Like [`approve`], and it must succeed.
fn approve_ok(cluster: &Cluster, user: User, name: &str, revoke: bool, reason: &str) {
    let out = approve(cluster, user, name, revoke, reason);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, ""),
        "[{}] {} {}: {out}",
        cluster.kind().name(),
        user.name(),
        if revoke { "revoking" } else { "approving" }
    );
}

/// The stored record of staging.
fn staging_record(cluster: &Cluster, name: &str) -> ApprovalRecord {
    approval_records(&read_back(cluster, name))
        .or_fail(cluster, "reading the approval records")
        .remove("staging")
        .unwrap_or_else(|| panic!("[{}] no record of staging", cluster.kind().name()))
}

/// The rows of the Approvals table of `describe` (as the viewer), header included.
fn approvals_table(describe: &str) -> Vec<String> {
    describe
        .lines()
        .skip_while(|l| *l != "Approvals:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

pub fn a_revocation_shows_the_approval_it_withdrew(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let gate = Gate::new(cluster);
    let name = gate.name.clone();
    approve_ok(cluster, User::ReleaseManager, &name, false, "CAB-7");
    let given = staging_record(cluster, &name);
    approve_ok(cluster, User::Admin, &name, true, "wrong build");

    let record = staging_record(cluster, &name);
    assert_eq!(
        (
            record.user.as_str(),
            record.revoked,
            record.reason.as_deref()
        ),
        ("admin", true, Some("wrong build")),
        "[{backend}] {record:?}"
    );
    assert_eq!(
        record.revoked_approval.as_deref(),
        Some(&given),
        "[{backend}] the revocation keeps the release manager's approval"
    );

    let out = kubectl(cluster, User::Viewer, &["promotion", "describe", &name]);
    assert_eq!(out.code, 0, "[{backend}] describe: {out}");
    assert_contains(
        &out.stdout,
        &[&format!(
            "     Last approval:  revoked by admin at {}: \"wrong build\" (withdrew \
             release-manager's approval given at {}: \"CAB-7\")\n",
            record.time, given.time
        )],
        &format!("[{backend}] describe"),
    );
    assert_eq!(
        approvals_table(&out.stdout),
        [
            "STAGE ACTION BY AT REASON".to_string(),
            format!("staging approved release-manager {} CAB-7", given.time),
            format!("staging revoked admin {} wrong build", record.time),
        ],
        "[{backend}] {}",
        out.stdout
    );
    // Nothing is in effect any more: nothing to withdraw.
    assert!(
        !out.stdout.contains("Revoke:"),
        "[{backend}] {}",
        out.stdout
    );
}

/// The approver rules of the webhook: a folder holding `approver-groups` (as the kubelet mounts
/// the ConfigMap), and the webhook started with it and registered for this scenario.
fn governed_webhook(cluster: &Cluster, groups: &str) -> (WebhookServer, tempfile::TempDir) {
    let folder = tempfile::tempdir().or_fail(cluster, "a folder for the approver rules");
    std::fs::write(folder.path().join("approver-groups"), groups)
        .or_fail(cluster, "writing the approver rules");
    let dir = folder.path().to_string_lossy().into_owned();
    let webhook = cluster
        .start_webhook(&["--governance-dir", &dir])
        .or_fail(cluster, "starting promotion-webhook with approver rules");
    let configs = webhook
        .configurations()
        .or_fail(cluster, "rendering manifests/");
    cluster
        .register_webhooks(configs)
        .or_fail(cluster, "registering the webhook");
    (webhook, folder)
}

/// Publish the approver rules as the install does (`manifests/base/governance.yaml`), for
/// `describe` to read: on the stand-in only (see the module documentation).
fn publish(cluster: &Cluster, groups: &str) {
    cluster
        .put(&json!({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "kubectl-promotion-system"}}))
        .or_fail(cluster, "creating the install's namespace");
    cluster
        .put(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "promotion-governance", "namespace": "kubectl-promotion-system"},
            "data": {"approver-groups": groups},
        }))
        .or_fail(cluster, "publishing the approver rules");
}

/// The `Revoke:` line of `describe` as `user`.
fn revoke_advice(cluster: &Cluster, user: User, name: &str) -> String {
    let out = kubectl(cluster, user, &["promotion", "describe", name]);
    assert_eq!(out.code, 0, "[{}] describe: {out}", cluster.kind().name());
    out.stdout
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("Revoke:"))
        .map(|l| l.trim_start().to_string())
        .unwrap_or_else(|| {
            panic!(
                "[{}] no Revoke line:\n{}",
                cluster.kind().name(),
                out.stdout
            )
        })
}

pub fn revoking_takes_the_right_to_approve_or_ones_own_approval(cluster: &Cluster) {
    let backend = cluster.kind().name();
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let name = store(cluster);
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &awaiting())
        .or_fail(cluster, "writing the status");
    let approved = || manual_gate(&read_back(cluster, &name), "staging")["approved"].clone();

    // The admin approves while system:masters are approvers ...
    let (first, _rules) = governed_webhook(cluster, "release-managers\nsystem:masters");
    approve_ok(cluster, User::Admin, &name, false, "hotfix window");
    // ... then the rules change: only release managers approve. The admin may still withdraw
    // the approval they gave.
    let (_webhook, _rules) = governed_webhook(cluster, "release-managers");
    drop(first);
    approve_ok(cluster, User::Admin, &name, true, "mine, withdrawn");
    assert_eq!(
        approved(),
        false,
        "[{backend}] the admin withdrew their own"
    );
    let record = staging_record(cluster, &name);
    assert_eq!(
        (
            record.user.as_str(),
            record.revoked_approval.as_ref().map(|r| r.user.as_str())
        ),
        ("admin", Some("admin")),
        "[{backend}] {record:?}"
    );

    // The release manager approves; the admin, no approver, may not withdraw that.
    approve_ok(cluster, User::ReleaseManager, &name, false, "CAB-8");
    if cluster.kind() == BackendKind::StandIn {
        publish(cluster, "release-managers");
        assert_eq!(
            revoke_advice(cluster, User::Admin, &name),
            format!(
                "you cannot revoke it (the admission webhook admits a revocation of another \
                 user's approval only from members of group \"release-managers\" (the right to \
                 approve), and you (\"admin\") are in \"system:masters\", \
                 \"system:authenticated\"): a member of group \"release-managers\" or \
                 \"release-manager\" (who gave it) who may patch it runs: kubectl promotion \
                 approve {name} --stage staging --revoke"
            ),
            "[{backend}] describe as the admin"
        );
        assert_eq!(
            revoke_advice(cluster, User::ReleaseManager, &name),
            format!("kubectl promotion approve {name} --stage staging --revoke"),
            "[{backend}] describe as the release manager"
        );
    }
    let out = approve(cluster, User::Admin, &name, true, "not yours");
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (1, ""),
        "[{backend}] the admin revokes the release manager's approval: {out}"
    );
    assert_contains(
        &out.stderr,
        &[
            "admission webhook \"validate.kubectl-promotion.dev\" denied the request",
            "spec.stages[1].trigger.manual.approved",
            "user \"admin\" may not revoke the approval of stage \"staging\" (given by \
             \"release-manager\"): revoking another user's approval requires the right to \
             approve, membership in group \"release-managers\"; whoever gave an approval may \
             always withdraw their own",
        ],
        &format!("[{backend}] the webhook's denial"),
    );
    assert_eq!(approved(), true, "[{backend}] the approval stays");
    assert_eq!(
        staging_record(cluster, &name).user,
        "release-manager",
        "[{backend}] and its record"
    );

    // The release manager withdraws their own.
    approve_ok(
        cluster,
        User::ReleaseManager,
        &name,
        true,
        "CAB-8 withdrawn",
    );
    assert_eq!(approved(), false, "[{backend}]");
    let record = staging_record(cluster, &name);
    assert_eq!(
        (
            record.user.as_str(),
            record.revoked,
            record.revoked_approval.as_ref().map(|r| r.user.as_str())
        ),
        ("release-manager", true, Some("release-manager")),
        "[{backend}] {record:?}"
    );
}
