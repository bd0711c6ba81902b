//! What GitOps-style writes of a manifest without `approved` do to a pending approval and to the
//! webhook's records (issue 23, item 8), with the real kubectl, webhook and API server.
//!
//! - client-side `kubectl apply` sends the whole `spec.stages` list (a JSON merge patch for a
//!   custom resource): it removes the approval, every time, and the webhook warns who had given it;
//! - an Argo CD–style sync that ignores the approvals and the webhook's annotations applies the
//!   manifest with the live values of those fields: the approval and the records stay;
//! - server-side apply (kubectl's own field manager, or a Flux-style one) owns only the fields in
//!   the manifest: the approval, written by another manager, stays (the stand-in API server merges
//!   an apply patch as a plain merge patch, so this part runs on the real API server only);
//! - `kubectl replace` of the manifest would drop the approval and the records: the webhook
//!   refuses it, as it refuses every removal of an audit record.

use promotion_e2e::backend::{BackendKind, Cluster};
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::User;
use promotion_shared::admission::{
    approval_records, ApprovalRecord, RemovalHow, APPROVALS_ANNOTATION,
};
use serde_json::Value;

use super::bound::awaiting;
use super::support::{
    assert_contains, example, kubectl, manual_gate, name_of, read_back, register_webhook, Expect,
};

/// The manual-gate example as kept in git: no status, no `approved`, no Sveltos finalizer.
fn manifest(cluster: &Cluster) -> Value {
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    if let Some(map) = promotion.as_object_mut() {
        map.remove("status");
    }
    if let Some(metadata) = promotion["metadata"].as_object_mut() {
        metadata.remove("finalizers");
    }
    if let Some(manual) = promotion
        .pointer_mut("/spec/stages/1/trigger/manual")
        .and_then(Value::as_object_mut)
    {
        manual.remove("approved");
    }
    promotion
}

fn approve(cluster: &Cluster, name: &str) {
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", name, "--reason", "CAB-9"],
    );
    assert_eq!(out.code, 0, "[{}] approving: {out}", cluster.kind().name());
}

/// `kubectl ARGS -f manifest` as admin; returns stderr.
fn write(cluster: &Cluster, args: &[&str], file: &str, manifest: &Value) -> String {
    let path = cluster
        .write_manifest(file, manifest)
        .or_fail(cluster, "writing the manifest");
    let path = path.to_string_lossy();
    let mut all = args.to_vec();
    all.extend(["-f", &path]);
    let out = kubectl(cluster, User::Admin, &all);
    assert_eq!(out.code, 0, "[{}] {all:?}: {out}", cluster.kind().name());
    out.stderr
}

fn approved(cluster: &Cluster, name: &str) -> Value {
    manual_gate(&read_back(cluster, name), "staging")["approved"].clone()
}

fn records(cluster: &Cluster, name: &str) -> Value {
    read_back(cluster, name)["metadata"]["annotations"][APPROVALS_ANNOTATION].clone()
}

pub fn gitops_flows_keep_or_lose_a_pending_approval_as_documented(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let git = manifest(cluster);
    let name = name_of(&git);
    write(cluster, &["apply"], "git.yaml", &git);
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &awaiting())
        .or_fail(cluster, "writing the status");
    approve(cluster, &name);
    let recorded = records(cluster, &name);
    assert!(recorded.is_string(), "[{backend}] recorded");

    // Client-side apply: the whole stages list, without `approved`.
    let warnings = write(cluster, &["apply"], "git.yaml", &git);
    assert_eq!(
        approved(cluster, &name),
        Value::Null,
        "[{backend}] client-side apply"
    );
    assert_contains(
        &warnings,
        &[
            "approval of stage \"staging\" (given by release-manager",
            "removed by this update",
        ],
        &format!("[{backend}] client-side apply"),
    );
    // The record is kept, and says who took the approval away (issue "Every screen true…",
    // item 17): the apply's user, now, by leaving `approved` out.
    let given = approval_records(&serde_json::json!({"metadata": {"annotations": {
        APPROVALS_ANNOTATION: recorded
    }}}))
    .or_fail(cluster, "reading the records before the apply")
    .remove("staging")
    .ok_or("missing")
    .or_fail(cluster, "the record of staging");
    let marked = approval_records(&read_back(cluster, &name))
        .or_fail(cluster, "reading the records after the apply")
        .remove("staging")
        .ok_or("missing")
        .or_fail(cluster, "the record of staging");
    let removal = marked
        .removed
        .clone()
        .ok_or("missing")
        .or_fail(cluster, "the record marked removed");
    assert_eq!(
        (removal.user.as_str(), removal.how),
        ("admin", RemovalHow::Update),
        "[{backend}] {marked:?}"
    );
    assert_eq!(
        ApprovalRecord {
            removed: None,
            ..marked
        },
        given,
        "[{backend}] records kept"
    );
    let out = kubectl(cluster, User::Viewer, &["promotion", "describe", &name]);
    assert_contains(
        &out.stdout,
        &[&format!(
            "     Last approval:  release-manager at {}: \"CAB-9\" (removed by admin's update at \
             {}, which left approved out)\n",
            given.time, removal.time
        )],
        &format!("[{backend}] describe after the apply"),
    );
    assert!(
        !out.stdout.contains("no longer in effect"),
        "[{backend}] {}",
        out.stdout
    );
    // Every time, not only the first apply after `approved` left git.
    approve(cluster, &name);
    write(cluster, &["apply"], "git.yaml", &git);
    assert_eq!(
        approved(cluster, &name),
        Value::Null,
        "[{backend}] second apply"
    );

    // Argo CD with ignoreDifferences (approvals, the webhook's annotations) and
    // RespectIgnoreDifferences: the live values of the ignored fields go into the applied manifest.
    approve(cluster, &name);
    let live = read_back(cluster, &name);
    let recorded = records(cluster, &name);
    let mut argo = git.clone();
    argo["spec"]["stages"][1]["trigger"]["manual"]["approved"] =
        manual_gate(&live, "staging")["approved"].clone();
    if let Some(annotations) = live["metadata"]["annotations"].as_object() {
        for (key, value) in annotations {
            if key.starts_with(promotion_shared::admission::AUDIT_PREFIX) {
                argo["metadata"]["annotations"][key] = value.clone();
            }
        }
    }
    let warnings = write(cluster, &["apply"], "argo.yaml", &argo);
    assert_eq!(
        approved(cluster, &name),
        true,
        "[{backend}] Argo CD-style: {warnings}"
    );
    assert_eq!(
        records(cluster, &name),
        recorded,
        "[{backend}] Argo CD-style"
    );

    if cluster.kind() == BackendKind::Envtest {
        // Server-side apply, kubectl's manager and a Flux-style one: the approval is not theirs.
        for args in [
            &["apply", "--server-side", "--force-conflicts"][..],
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=kustomize-controller",
            ][..],
        ] {
            let warnings = write(cluster, args, "git.yaml", &git);
            assert_eq!(
                approved(cluster, &name),
                true,
                "[{backend}] {args:?}: {warnings}"
            );
            assert_eq!(records(cluster, &name), recorded, "[{backend}] {args:?}");
        }
    }

    // Replace: the manifest has neither the approval nor the records; refused.
    let path = cluster
        .write_manifest("git.yaml", &git)
        .or_fail(cluster, "writing the manifest");
    let out = kubectl(
        cluster,
        User::Admin,
        &["replace", "-f", &path.to_string_lossy()],
    );
    assert_eq!(out.code, 1, "[{backend}] replace: {out}");
    assert_contains(
        &out.stderr,
        &["the audit record was removed"],
        &format!("[{backend}] replace"),
    );
    assert_eq!(approved(cluster, &name), true, "[{backend}] after replace");
    assert_eq!(
        records(cluster, &name),
        recorded,
        "[{backend}] after replace"
    );
}
