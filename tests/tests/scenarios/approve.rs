//! `kubectl promotion approve` with the webhook registered as installed: a release manager
//! (RBAC may patch promotions) approves, the patch lands and the webhook's approval record names
//! them and their reason; a developer (promotions read-only) is refused with RBAC's reason, and
//! nothing changes. `kubectl auth can-i` tells the two apart beforehand.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::User;
use promotion_shared::admission::{APPROVALS_ANNOTATION, APPROVAL_REASON_ANNOTATION};
use serde_json::Value;

use super::support::{
    example, kubectl, manual_gate, name_of, read_back, reconciled_now, register_webhook, Expect,
};

pub fn a_release_manager_approves_and_a_developer_is_refused(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    promotion["status"] = reconciled_now(&promotion["status"]);
    let name = name_of(&promotion);
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing the promotion and its status");

    for (user, answer, code) in [
        (User::ReleaseManager, "yes\n", 0),
        (User::Developer, "no\n", 1),
    ] {
        let out = kubectl(
            cluster,
            user,
            &[
                "auth",
                "can-i",
                "patch",
                "clusterpromotions.config.projectsveltos.io",
            ],
        );
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (code, answer),
            "[{backend}] can-i as {}: {out}",
            user.name()
        );
    }

    let out = kubectl(
        cluster,
        User::Developer,
        &[
            "promotion",
            "approve",
            &name,
            "--reason",
            "looks fine to me",
        ],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (1, ""),
        "[{backend}] developer: {out}"
    );
    assert_eq!(
        out.stderr,
        format!(
            "error: forbidden (403): you cannot patch clusterpromotions.config.projectsveltos.io \
             {name:?} (server said: clusterpromotions.config.projectsveltos.io {name:?} is \
             forbidden: User \"developer\" cannot patch resource \"clusterpromotions\" in API \
             group \"config.projectsveltos.io\" at the cluster scope)\n"
        ),
        "[{backend}] developer: {out}"
    );
    let stored = read_back(cluster, &name);
    assert_eq!(
        manual_gate(&stored, "staging")["approved"],
        false,
        "[{backend}] nothing changed"
    );
    assert!(stored["metadata"]["annotations"][APPROVALS_ANNOTATION].is_null());

    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &[
            "promotion",
            "approve",
            &name,
            "--reason",
            "CAB-1234 signed off",
        ],
    );
    assert_eq!(out.code, 0, "[{backend}] release manager: {out}");
    assert_eq!(
        out.stdout,
        format!("clusterpromotion.config.projectsveltos.io/{name} approved (stage staging → production)\n"),
        "[{backend}] release manager: {out}"
    );
    let stored = read_back(cluster, &name);
    assert_eq!(
        manual_gate(&stored, "staging")["approved"],
        true,
        "[{backend}]"
    );
    assert_eq!(
        manual_gate(&stored, "staging")["automaticReset"],
        true,
        "[{backend}] automaticReset untouched"
    );
    let annotations = &stored["metadata"]["annotations"];
    assert!(
        annotations[APPROVAL_REASON_ANNOTATION].is_null(),
        "[{backend}] the reason moved into the record: {annotations}"
    );
    let records: Value = serde_json::from_str(
        annotations[APPROVALS_ANNOTATION]
            .as_str()
            .unwrap_or_else(|| panic!("[{backend}] no approval record: {annotations}")),
    )
    .expect("the approval record is JSON");
    let staging = &records["staging"];
    assert_eq!(staging["user"], "release-manager", "[{backend}] {records}");
    assert_eq!(
        staging["groups"],
        serde_json::json!(["release-managers", "system:authenticated"]),
        "[{backend}] {records}"
    );
    assert_eq!(
        staging["reason"], "CAB-1234 signed off",
        "[{backend}] {records}"
    );
    let time = staging["time"].as_str().unwrap_or_default();
    assert!(
        chrono::DateTime::parse_from_rfc3339(time).is_ok() && time.ends_with('Z'),
        "[{backend}] RFC 3339 in UTC: {records}"
    );
    assert_eq!(
        records.as_object().map(|r| r.len()),
        Some(1),
        "[{backend}] one record: {records}"
    );

    // describe reads the record back.
    let out = kubectl(
        cluster,
        User::Viewer,
        &["promotion", "describe", &name, "-o", "json"],
    );
    assert_eq!(out.code, 0, "[{backend}] {out}");
    let description: Value = serde_json::from_str(&out.stdout).expect("describe -o json");
    assert_eq!(
        description["approvals"][0]["stage"], "staging",
        "[{backend}] {description}"
    );
    assert_eq!(
        description["approvals"][0]["user"], "release-manager",
        "[{backend}] {description}"
    );
    let staging = &description["stages"][1];
    assert_eq!(
        (&staging["state"], &staging["approval"]),
        (&Value::from("approvedPending"), &Value::from("pending")),
        "[{backend}] {staging}"
    );
}
