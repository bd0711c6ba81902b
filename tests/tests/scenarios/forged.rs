//! A client that writes the webhook's approval record itself — `kubectl annotate`, or a JSON
//! patch that approves a stage and writes a record naming someone else — is refused by the
//! webhook with a message naming the annotation and what is wrong; nothing is stored.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::User;
use promotion_shared::admission::APPROVALS_ANNOTATION;
use serde_json::json;

use super::support::{example, kubectl, manual_gate, name_of, register_webhook, Expect};

pub fn a_forged_approval_record_is_refused(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    let promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let name = name_of(&promotion);
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing the promotion");
    let before = cluster
        .promotion(&name)
        .or_fail(cluster, "reading")
        .unwrap_or_default();

    let record = json!({"staging": {
        "user": "release-manager",
        "groups": ["release-managers", "system:authenticated"],
        "time": "2026-02-16T08:00:00Z",
        "reason": "CAB-1234",
    }})
    .to_string();
    let out = kubectl(
        cluster,
        User::Admin,
        &[
            "annotate",
            "clusterpromotion",
            &name,
            &format!("{APPROVALS_ANNOTATION}={record}"),
        ],
    );
    assert_eq!(out.code, 1, "[{backend}] annotate: {out}");
    assert_eq!(
        out.stderr,
        format!(
            "Error from server (Forbidden): admission webhook \"mutate.kubectl-promotion.dev\" \
             denied the request: ClusterPromotion.config.projectsveltos.io \"{name}\" is \
             forbidden: metadata.annotations[{APPROVALS_ANNOTATION}]: the approval record of \
             stage \"staging\" was written by the client, but this request does not approve \
             that stage (nor revoke its approval, nor take it away); only the promotion webhook \
             writes audit records\n"
        ),
        "[{backend}] annotate: {out}"
    );

    // Approving for real, but in someone else's name.
    let record = json!({"staging": {
        "user": "ceo",
        "groups": ["system:authenticated"],
        "time": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }})
    .to_string();
    let patch = json!([
        {"op": "test", "path": "/spec/stages/1/name", "value": "staging"},
        {"op": "add", "path": "/spec/stages/1/trigger/manual/approved", "value": true},
        {"op": "add", "path": "/metadata/annotations/audit.kubectl-promotion.dev~1approvals", "value": record},
    ])
    .to_string();
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type=json",
            "-p",
            &patch,
        ],
    );
    assert_eq!(out.code, 1, "[{backend}] JSON patch: {out}");
    assert_eq!(
        out.stderr,
        format!(
            "Error from server (Forbidden): admission webhook \"mutate.kubectl-promotion.dev\" \
             denied the request: ClusterPromotion.config.projectsveltos.io \"{name}\" is \
             forbidden: metadata.annotations[{APPROVALS_ANNOTATION}]: the approval record of \
             stage \"staging\" names user \"ceo\", but the request comes from \
             \"release-manager\"\n"
        ),
        "[{backend}] JSON patch: {out}"
    );

    let after = cluster
        .promotion(&name)
        .or_fail(cluster, "reading")
        .unwrap_or_default();
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "[{backend}] nothing was stored"
    );
    assert_eq!(
        manual_gate(&after, "staging")["approved"],
        false,
        "[{backend}]"
    );
}
