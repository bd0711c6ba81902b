//! A consumed approval is removed. Sveltos promotes past an approved gate and writes the next
//! stage into `status.stages` (through `/status`, which never reaches the webhook). The next
//! update the installed `matchConditions` send to the webhook (one that changes spec or
//! annotations) removes `approved`, with the webhook's warning; a label-only update skips the
//! webhook, so the used approval stays until then.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::User;
use serde_json::{json, Value};

use super::support::{
    approval_given, example, kubectl, manual_gate, name_of, read_back, reconciled_now,
    register_webhook, Expect,
};

pub fn a_consumed_approval_is_removed_on_the_next_update(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let name = name_of(&promotion);
    let status = promotion["status"].clone();
    let reconciled = reconciled_now(&status);
    if let Some(map) = promotion.as_object_mut() {
        map.remove("status");
    }
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing the promotion");
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &reconciled)
        .or_fail(cluster, "writing the status");
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name, "--reason", "CAB-7"],
    );
    assert_eq!(out.code, 0, "[{backend}] approving: {out}");
    let approved = read_back(cluster, &name);
    let given = approval_given(&approved, "staging");
    assert!(
        given.starts_with("given by release-manager at ") && given.ends_with(": \"CAB-7\""),
        "[{backend}] {given}"
    );

    // Sveltos promotes staging → production and records it in status.
    let mut promoted = status.clone();
    promoted["currentStageName"] = json!("production");
    promoted["lastPromotionTime"] = json!("2026-02-16T07:40:02Z");
    promoted["stages"][1]["currentStatusDescription"] =
        json!("Successfully provisioned (2026-02-16T07:40:02Z)");
    if let Some(stages) = promoted["stages"].as_array_mut() {
        stages.push(json!({
            "name": "production",
            "lastUpdateReconciledTime": "2026-02-16T07:40:02Z",
        }));
    }
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &reconciled_now(&promoted))
        .or_fail(cluster, "writing the promoted status");
    let stored = read_back(cluster, &name);
    assert_eq!(
        manual_gate(&stored, "staging")["approved"],
        true,
        "[{backend}] a status write never reaches the webhook"
    );
    let description = describe(cluster, &name);
    assert_eq!(
        description["stages"][1]["approval"], "consumed",
        "[{backend}] {description}"
    );

    // A label changes neither spec nor annotations: the installed matchConditions skip the
    // webhook, and the used approval stays.
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["label", "clusterpromotion", &name, "team=platform"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{name} labeled\n").as_str(),
            ""
        ),
        "[{backend}] label: {out}"
    );
    assert_eq!(
        manual_gate(&read_back(cluster, &name), "staging")["approved"],
        true,
        "[{backend}] label-only updates skip the webhook"
    );

    // An annotation reaches the webhook, which removes the used approval and says so.
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["annotate", "clusterpromotion", &name, "owner=platform-team"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{name} annotated\n").as_str(),
            format!(
                "Warning: approval of stage \"staging\" ({given}) removed: it was already used \
                 to promote to \"production\"\n"
            )
            .as_str()
        ),
        "[{backend}] annotate: {out}"
    );
    let stored = read_back(cluster, &name);
    let gate = manual_gate(&stored, "staging");
    assert!(
        gate.get("approved").is_none(),
        "[{backend}] removed, not set to false: {gate}"
    );
    assert_eq!(gate["automaticReset"], true, "[{backend}] {gate}");
    assert_eq!(
        approval_given(&stored, "staging"),
        given,
        "[{backend}] the record stays: it says who approved last"
    );
    let description = describe(cluster, &name);
    assert_eq!(
        (
            &description["stages"][1]["approval"],
            &description["stages"][1]["state"]
        ),
        (&Value::from("notApproved"), &Value::from("promoted")),
        "[{backend}] {description}"
    );
}

fn describe(cluster: &Cluster, name: &str) -> Value {
    let out = kubectl(
        cluster,
        User::Viewer,
        &["promotion", "describe", name, "-o", "json"],
    );
    assert_eq!(out.code, 0, "[{}] describe: {out}", cluster.kind().name());
    serde_json::from_str(&out.stdout).expect("describe -o json")
}
