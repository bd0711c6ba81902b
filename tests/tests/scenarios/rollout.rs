//! A new rollout needs a new approval. With `approved: true` on the staging gate, `kubectl
//! apply` of a manifest that changes `spec.profileSpec` shows the webhook's reset as kubectl's
//! `Warning:` line and the stored gate loses `approved`. Reordering `helmCharts` (Sveltos sorts
//! that list before hashing, so no new rollout) keeps the approval and warns nothing;
//! reordering `preDeployChecks` (hashed in order) resets it. `kubectl promotion diff -f` on the
//! same manifests predicts exactly that, before anything is applied.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::User;
use serde_json::{json, Value};

use super::support::{
    approval_given, example, kubectl, manual_gate, name_of, read_back, reconciled_now,
    register_webhook, Expect,
};

/// `diff -f`'s consequence when the pipeline does not restart.
pub const NO_RESTART: &str = "the pipeline does not restart (only triggers, the order of lists \
                              Sveltos sorts, or other fields change)";

/// The manual-gate example with two charts and two pre-deploy checks to reorder, and the
/// staging gate approved.
pub fn approved_gate(cluster: &Cluster) -> Value {
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let spec = &mut promotion["spec"]["profileSpec"];
    let charts = spec["helmCharts"].as_array_mut().expect("helmCharts");
    charts.push(json!({
        "repositoryURL": "https://kyverno.github.io/kyverno/",
        "repositoryName": "kyverno",
        "chartName": "kyverno/kyverno-policies",
        "chartVersion": "3.6.2",
        "releaseName": "kyverno-policies",
        "releaseNamespace": "kyverno",
        "helmChartAction": "Install",
    }));
    spec["preDeployChecks"] = json!([
        check("kyverno-admission-ready", "kyverno-admission-controller"),
        check("kyverno-background-ready", "kyverno-background-controller"),
    ]);
    promotion["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    promotion
}

fn check(name: &str, deployment: &str) -> Value {
    json!({
        "name": name,
        "featureID": "Helm",
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
        "namespace": "kyverno",
        "evaluateCEL": [{
            "name": format!("{deployment}-available"),
            "rule": "has(resource.status.availableReplicas) && resource.status.availableReplicas > 0",
        }],
    })
}

pub fn without_status(mut promotion: Value) -> Value {
    if let Some(map) = promotion.as_object_mut() {
        map.remove("status");
    }
    promotion
}

pub fn reversed(list: &Value) -> Value {
    let mut items = list.as_array().cloned().unwrap_or_default();
    items.reverse();
    Value::Array(items)
}

/// The "What applying this does" bullets of `diff -f` (stderr), one per line.
pub fn consequences(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .skip_while(|l| *l != "What applying this does:")
        .skip(1)
        .filter_map(|l| l.strip_prefix("  • "))
        .map(String::from)
        .collect()
}

pub fn a_new_rollout_resets_the_approval_and_a_sorted_reorder_does_not(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let original = approved_gate(cluster);
    let name = name_of(&original);
    let apply = |file: &str, manifest: &Value| {
        let path = cluster
            .write_manifest(file, manifest)
            .or_fail(cluster, "writing a manifest");
        let path = path.to_string_lossy().into_owned();
        let diff = kubectl(cluster, User::Admin, &["promotion", "diff", "-f", &path]);
        let applied = kubectl(cluster, User::Admin, &["apply", "-f", &path]);
        (diff, applied)
    };

    let (_, out) = apply("original.yaml", &without_status(original.clone()));
    assert_eq!(out.code, 0, "[{backend}] creating: {out}");
    cluster
        .put_status(
            CLUSTER_PROMOTION,
            None,
            &name,
            &reconciled_now(&original["status"]),
        )
        .or_fail(cluster, "writing the status as Sveltos would");
    let stored = read_back(cluster, &name);
    assert_eq!(
        manual_gate(&stored, "staging")["approved"],
        true,
        "[{backend}]"
    );
    let given = approval_given(&stored, "staging");
    assert!(
        given.starts_with("given by admin at "),
        "[{backend}] {given}"
    );
    let reset = |given: &str| {
        format!(
            "approval of stage \"staging\" ({given}) reset: spec.profileSpec changed, the new \
             rollout needs a new approval"
        )
    };
    let reset_warning = format!("Warning: {}\n", reset(&given));

    // helmCharts is sorted by Sveltos before hashing: no new rollout.
    let mut charts_reordered = without_status(original.clone());
    let charts = reversed(&charts_reordered["spec"]["profileSpec"]["helmCharts"]);
    charts_reordered["spec"]["profileSpec"]["helmCharts"] = charts;
    let (diff, out) = apply("charts-reordered.yaml", &charts_reordered);
    let context = format!("[{backend}] helmCharts reordered: diff {diff}\napply {out}");
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{name} configured\n").as_str(),
            ""
        ),
        "{context}"
    );
    let stored = read_back(cluster, &name);
    assert_eq!(
        manual_gate(&stored, "staging")["approved"],
        true,
        "the approval stays: {context}"
    );
    assert_eq!(
        stored["spec"]["profileSpec"]["helmCharts"][0]["releaseName"], "kyverno-policies",
        "the new order is stored: {context}"
    );

    assert_eq!(diff.code, 1, "the order shows as a difference: {context}");
    assert_eq!(
        consequences(&diff.stderr).first().map(String::as_str),
        Some(NO_RESTART),
        "{context}"
    );
    // preDeployChecks is hashed in the order written: a new rollout.
    let mut checks_reordered = charts_reordered.clone();
    let checks = reversed(&checks_reordered["spec"]["profileSpec"]["preDeployChecks"]);
    checks_reordered["spec"]["profileSpec"]["preDeployChecks"] = checks;
    let (diff, out) = apply("checks-reordered.yaml", &checks_reordered);
    let context = format!("[{backend}] preDeployChecks reordered: diff {diff}\napply {out}");
    assert_eq!(diff.code, 1, "{context}");
    assert_eq!(
        consequences(&diff.stderr),
        [
            "the pipeline restarts from the first stage (dev): spec.profileSpec changes \
             (preDeployChecks reordered (Sveltos hashes this list in order)); later stages keep \
             the current spec until they are promoted again"
                .to_string(),
            reset(&given),
        ],
        "{context}"
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{name} configured\n").as_str(),
            reset_warning.as_str()
        ),
        "{context}"
    );
    let stored = read_back(cluster, &name);
    assert!(
        manual_gate(&stored, "staging").get("approved").is_none(),
        "the approval is removed, not set to false: {context}\n{stored}"
    );

    // Approve again with the plugin, then change the chart version: reset again.
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
    assert_eq!(out.code, 0, "[{backend}] approving again: {out}");
    let given = approval_given(&read_back(cluster, &name), "staging");
    assert!(
        given.starts_with("given by release-manager at "),
        "[{backend}] {given}"
    );
    let mut upgraded = checks_reordered;
    upgraded["spec"]["profileSpec"]["helmCharts"][1]["chartVersion"] = json!("3.6.3");
    let (diff, out) = apply("upgraded.yaml", &upgraded);
    let context = format!("[{backend}] chart upgraded: diff {diff}\napply {out}");
    let bullets = consequences(&diff.stderr);
    assert!(
        bullets.first().is_some_and(|b| b.starts_with(
            "the pipeline restarts from the first stage (dev): spec.profileSpec changes"
        )),
        "{context}"
    );
    assert!(bullets.contains(&reset(&given)), "{context}");
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, format!("Warning: {}\n", reset(&given)).as_str()),
        "{context}"
    );
    let stored = read_back(cluster, &name);
    assert!(
        manual_gate(&stored, "staging").get("approved").is_none(),
        "{context}"
    );
}
