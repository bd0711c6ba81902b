//! `kubectl promotion diff -f` predicts what the webhook does when a manifest only reorders
//! `spec.profileSpec.helmCharts` (a list Sveltos sorts before hashing): no restart and no reset
//! of the approved staging gate, which is what `kubectl apply` of that manifest then shows.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::User;

use super::rollout::{approved_gate, consequences, reversed, without_status, NO_RESTART};
use super::support::{
    kubectl, manual_gate, name_of, read_back, reconciled_now, register_webhook, Expect,
};

pub fn diff_predicts_no_reset_for_a_sorted_reorder(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let original = approved_gate(cluster);
    let name = name_of(&original);
    let path = cluster
        .write_manifest("original.yaml", &without_status(original.clone()))
        .or_fail(cluster, "writing a manifest");
    let out = kubectl(
        cluster,
        User::Admin,
        &["apply", "-f", &path.to_string_lossy()],
    );
    assert_eq!(out.code, 0, "[{backend}] creating: {out}");
    cluster
        .put_status(
            CLUSTER_PROMOTION,
            None,
            &name,
            &reconciled_now(&original["status"]),
        )
        .or_fail(cluster, "writing the status as Sveltos would");

    let mut reordered = without_status(original);
    let charts = reversed(&reordered["spec"]["profileSpec"]["helmCharts"]);
    reordered["spec"]["profileSpec"]["helmCharts"] = charts;
    let path = cluster
        .write_manifest("charts-reordered.yaml", &reordered)
        .or_fail(cluster, "writing a manifest");
    let path = path.to_string_lossy();
    let diff = kubectl(cluster, User::Admin, &["promotion", "diff", "-f", &path]);
    let applied = kubectl(cluster, User::Admin, &["apply", "-f", &path]);
    let context = format!("[{backend}] diff {diff}\napply {applied}");
    assert_eq!(
        (applied.code, applied.stderr.as_str()),
        (0, ""),
        "no reset warning: {context}"
    );
    assert_eq!(
        manual_gate(&read_back(cluster, &name), "staging")["approved"],
        true,
        "the approval stays: {context}"
    );
    assert_eq!(
        consequences(&diff.stderr),
        [NO_RESTART],
        "diff predicts what the webhook did: {context}"
    );
}
