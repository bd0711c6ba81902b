//! A manual gate on the last stage: Sveltos evaluates the trigger there too and, once approved,
//! completes the pipeline (there is nothing to promote to). `approve` approves it and says the
//! pipeline completes; `approve --wait` on the stage already approved changes nothing and
//! waits until Sveltos has acted on it, here until the pipeline is complete.

use std::process::Stdio;
use std::time::{Duration, Instant};

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::User;
use serde_json::{json, Value};

use super::support::{
    example, kubectl, manual_gate, name_of, read_back, reconciled_now, register_webhook, Expect,
};

/// kyverno-manual-gate.yaml without its production stage: the staging gate is the last stage,
/// and Sveltos paused there awaiting approval.
fn gate_on_the_last_stage(cluster: &Cluster) -> Value {
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let stages = promotion["spec"]["stages"]
        .as_array_mut()
        .expect("the example has stages");
    stages.retain(|s| s["name"] != "production");
    assert_eq!(stages.last().map(|s| &s["name"]), Some(&json!("staging")));
    promotion["status"] = reconciled_now(&promotion["status"]);
    promotion
}

pub fn a_gate_on_the_last_stage_is_approved_and_approve_wait_sees_it_complete(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let promotion = gate_on_the_last_stage(cluster);
    let name = name_of(&promotion);
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing the promotion and its status");

    let out = kubectl(cluster, User::Viewer, &["promotion", "describe", &name]);
    assert_eq!(out.code, 0, "[{backend}] describe: {out}");
    assert!(
        out.stdout.contains(&format!(
            "Next step:      kubectl promotion approve {name} --stage staging   (staging → \
             complete)"
        )),
        "[{backend}] describe proposes approving the last stage: {out}"
    );

    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!(
                "clusterpromotion.config.projectsveltos.io/{name} approved (stage staging → \
                 complete)\n"
            )
            .as_str()
        ),
        "[{backend}] approving the last stage: {out}"
    );
    assert_eq!(
        manual_gate(&read_back(cluster, &name), "staging")["approved"],
        true,
        "[{backend}]"
    );

    // Already approved: approve --wait writes nothing and follows the pipeline.
    let mut waiter = cluster.command(User::ReleaseManager, "kubectl");
    waiter
        .args(["promotion", "approve", &name, "--wait", "--timeout", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let waiter = waiter.spawn().or_fail(cluster, "starting approve --wait");
    let resource_version = read_back(cluster, &name)["metadata"]["resourceVersion"].clone();

    // Play Sveltos after a moment: consume the approval (automaticReset) and complete.
    std::thread::sleep(Duration::from_millis(1500));
    let mut consumed = read_back(cluster, &name);
    assert_eq!(
        consumed["metadata"]["resourceVersion"], resource_version,
        "[{backend}] approve --wait on an approved stage wrote nothing"
    );
    // Sveltos clears `approved` (automaticReset) with a merge patch of spec.stages.
    if let Some(manual) = consumed["spec"]["stages"][1]["trigger"]["manual"].as_object_mut() {
        manual.remove("approved");
    }
    let patch = json!({"spec": {"stages": consumed["spec"]["stages"]}}).to_string();
    let out = kubectl(
        cluster,
        User::Admin,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type",
            "merge",
            "-p",
            &patch,
        ],
    );
    assert_eq!(
        out.code, 0,
        "[{backend}] consuming the approval as Sveltos does: {out}"
    );
    let stored = read_back(cluster, &name);
    assert!(
        manual_gate(&stored, "staging").get("approved").is_none(),
        "[{backend}] consumed: {stored}"
    );
    let mut status = stored["status"].clone();
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    status["stages"][1]["currentStatusDescription"] =
        json!(format!("Successfully provisioned ({now})"));
    status["stages"][1]["lastStatusCheckTime"] = json!(now);
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &status)
        .or_fail(cluster, "completing the pipeline as Sveltos does");

    let started = Instant::now();
    let out = waiter
        .wait_with_output()
        .or_fail(cluster, "waiting for approve --wait");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let context = format!(
        "[{backend}] approve --wait (ended {:?} after the status): {stdout}{stderr}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(0), "{context}");
    assert!(
        stdout.starts_with(&format!(
            "clusterpromotion.config.projectsveltos.io/{name} unchanged: stage staging is \
             already approved; Sveltos acts on it on its next pass (staging → complete)\n"
        )),
        "{context}"
    );
    assert!(stdout.ends_with(&format!("{name} complete\n")), "{context}");
    assert!(
        stderr.contains("waiting up to 60s for the pipeline to complete"),
        "{context}"
    );
}
