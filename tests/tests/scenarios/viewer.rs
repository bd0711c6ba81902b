//! A viewer (RBAC like the built-in `view` role) reads promotions and core/v1 Events, but not
//! `events.k8s.io` Events, and cannot change a promotion.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::{CLUSTER_PROMOTION, EVENTS_K8S_IO_EVENT};
use promotion_e2e::envtest::{self, User};
use serde_json::json;

use super::support::{assert_contains, example, kubectl, Expect};

pub fn a_viewer_reads_promotions_and_core_events_but_not_events_k8s_io(cluster: &Cluster) {
    let promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let name = promotion["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing the promotion");
    // Events about a cluster-scoped object live in `default`, as Sveltos records them.
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{name}.provisioning"), "namespace": "default"},
        "involvedObject": {
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterPromotion",
            "name": name,
        },
        "reason": "Sveltos",
        "message": "Provisioning stage dev",
        "type": "Normal",
        "source": {"component": "addon-controller"},
        "firstTimestamp": "2026-02-16T07:25:37Z",
        "lastTimestamp": "2026-02-16T07:25:37Z",
        "count": 1,
    });
    cluster.put(&event).or_fail(cluster, "storing the event");
    let backend = cluster.kind().name();

    let out = kubectl(
        cluster,
        User::Viewer,
        &["get", "clusterpromotions", &name, "-o", "name"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("clusterpromotion.config.projectsveltos.io/{name}\n").as_str()
        ),
        "[{backend}] {out}"
    );

    let selector = format!("involvedObject.name={name}");
    let out = kubectl(
        cluster,
        User::Viewer,
        &[
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            &selector,
        ],
    );
    assert_eq!(out.code, 0, "[{backend}] {out}");
    assert_contains(
        &out.stdout,
        &["Sveltos", "Provisioning stage dev"],
        &format!("[{backend}]"),
    );

    let out = kubectl(
        cluster,
        User::Viewer,
        &[
            "get",
            "events.events.k8s.io",
            "-n",
            "default",
            "--field-selector",
            &format!("regarding.name={name}"),
        ],
    );
    assert_eq!(out.code, 1, "[{backend}] {out}");
    assert_eq!(
        out.stderr,
        "Error from server (Forbidden): events.events.k8s.io is forbidden: User \"viewer\" cannot list resource \"events\" in API group \"events.k8s.io\" in the namespace \"default\"\n",
        "[{backend}] {out}"
    );
    // The admin sees the same Event through events.k8s.io.
    let out = kubectl(
        cluster,
        User::Admin,
        &[
            "get",
            "events.events.k8s.io",
            "-n",
            "default",
            "--field-selector",
            &format!("regarding.name={name}"),
            "-o",
            "name",
        ],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!("event.events.k8s.io/{name}.provisioning\n").as_str()
        ),
        "[{backend}] {out}"
    );

    // The same answers through a kube-rs client of the viewer.
    let objects = cluster
        .objects_as(User::Viewer)
        .or_fail(cluster, "a client for the viewer");
    let (promotions, events) = envtest::block_on(async move {
        let promotions = objects.list(CLUSTER_PROMOTION, None).await;
        let events = objects.list(EVENTS_K8S_IO_EVENT, Some("default")).await;
        (promotions, events)
    });
    let promotions = promotions.or_fail(cluster, "the viewer lists promotions");
    assert!(
        promotions
            .iter()
            .any(|p| p["metadata"]["name"] == name.as_str()),
        "[{backend}] {name} among {} promotions",
        promotions.len()
    );
    let denied = events.expect_err("the viewer may not list events.k8s.io Events");
    assert_eq!(denied.code(), Some(403), "[{backend}] {denied}");

    let out = kubectl(
        cluster,
        User::Viewer,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"touched":"yes"}}}"#,
        ],
    );
    assert_eq!(out.code, 1, "[{backend}] {out}");
    assert_eq!(
        out.stderr,
        format!("Error from server (Forbidden): clusterpromotions.config.projectsveltos.io \"{name}\" is forbidden: User \"viewer\" cannot patch resource \"clusterpromotions\" in API group \"config.projectsveltos.io\" at the cluster scope\n"),
        "[{backend}] {out}"
    );
}
