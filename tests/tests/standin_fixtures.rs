//! The fixtures built from the example manifests match `sveltos-clusterpromotion.md` §3.2/§4 and
//! `examples/STATES.md`, and the `standin-apiserver` binary serves them to the real kubectl.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use promotion_e2e::bins;
use promotion_e2e::fixtures::{self, Example, WorldBuilder};
use serde_json::{json, Value};

fn find<'a>(world: &'a fixtures::World, kind: &str, name: &str) -> &'a Value {
    world
        .of_kind(kind)
        .into_iter()
        .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[test]
fn default_world_leaves_out_only_what_a_cluster_cannot_hold() {
    let examples = fixtures::load_examples().expect("examples load");
    assert!(examples.len() >= 11, "{} examples", examples.len());
    let (world, skipped) = fixtures::default_world().expect("world");
    let skipped: Vec<&str> = skipped.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(skipped, ["both-triggers.yaml", "kyverno-rollout-auto.yaml"]);
    assert_eq!(world.of_kind("ClusterPromotion").len(), examples.len() - 2);
}

#[test]
fn manual_gate_has_profiles_summaries_and_events_of_its_reached_stages() {
    let world = fixtures::example_world("kyverno-manual-gate.yaml").expect("world");
    let promotion = find(&world, "ClusterPromotion", "kyverno-rollout-man");
    let uid = promotion["metadata"]["uid"].clone();
    assert_eq!(
        world.of_kind("ClusterProfile").len(),
        2,
        "dev and staging reached"
    );

    let profile = find(&world, "ClusterProfile", "kyverno-rollout-man-staging");
    assert_eq!(
        profile["metadata"]["labels"]["config.projectsveltos.io/promotionname"],
        "kyverno-rollout-man"
    );
    assert_eq!(
        profile["metadata"]["annotations"]["config.projectsveltos.io/stagename"],
        "staging"
    );
    assert_eq!(
        profile["metadata"]["ownerReferences"][0]["kind"],
        "ClusterPromotion"
    );
    assert_eq!(profile["metadata"]["ownerReferences"][0]["uid"], uid);
    assert!(profile["metadata"]["ownerReferences"][0]
        .get("controller")
        .is_none());
    assert_eq!(
        profile["spec"]["clusterSelector"],
        json!({"matchLabels": {"env": "staging"}})
    );
    assert_eq!(profile["spec"]["helmCharts"][0]["chartVersion"], "3.6.2");
    assert_eq!(
        profile["status"]["matchingClusters"],
        json!([{"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster", "namespace": "staging", "name": "staging01"}])
    );

    let summary = find(
        &world,
        "ClusterSummary",
        "kyverno-rollout-man-staging-sveltos-staging01",
    );
    assert_eq!(summary["metadata"]["namespace"], "staging");
    assert_eq!(
        summary["metadata"]["labels"]["projectsveltos.io/cluster-profile-name"],
        "kyverno-rollout-man-staging"
    );
    assert_eq!(
        summary["metadata"]["labels"]["config.projectsveltos.io/promotionname"],
        "kyverno-rollout-man"
    );
    assert_eq!(
        summary["metadata"]["ownerReferences"][0]["kind"],
        "ClusterProfile"
    );
    assert_eq!(summary["spec"]["clusterName"], "staging01");
    assert_eq!(summary["spec"]["clusterType"], "Sveltos");
    assert_eq!(summary["spec"]["clusterProfileSpec"], profile["spec"]);
    assert_eq!(
        summary["status"]["featureSummaries"][0]["featureID"],
        "Helm"
    );
    assert_eq!(
        summary["status"]["featureSummaries"][0]["status"],
        "Provisioned"
    );

    let cluster = find(&world, "SveltosCluster", "staging01");
    assert_eq!(cluster["metadata"]["labels"], json!({"env": "staging"}));

    let notes: Vec<&str> = world
        .of_kind("Event")
        .iter()
        .filter(|e| e["involvedObject"]["name"] == "kyverno-rollout-man")
        .map(|e| {
            assert_eq!(e["reason"], "Sveltos");
            assert_eq!(e["involvedObject"]["uid"], uid);
            e["message"].as_str().unwrap_or_default()
        })
        .collect();
    assert_eq!(
        notes,
        [
            "Provisioning stage dev",
            "Stage dev provisioned",
            "Provisioning stage staging",
            "Stage staging provisioned"
        ]
    );
}

#[test]
fn failed_dev_reports_the_helm_failure_on_its_cluster() {
    let world = fixtures::example_world("kyverno-failed-dev.yaml").expect("world");
    let promotion = find(&world, "ClusterPromotion", "kyverno-rollout-auto");
    let pending = promotion
        .pointer("/status/stages/0/failureMessage")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let summary_name = "kyverno-rollout-auto-dev-sveltos-dev01";
    assert_eq!(
        pending,
        format!("ClusterSummary {summary_name} is not yet provisioned.")
    );
    let summary = find(&world, "ClusterSummary", summary_name);
    let helm = &summary["status"]["featureSummaries"][0];
    assert_eq!(helm["featureID"], "Helm");
    assert_eq!(helm["status"], "Failed");
    assert!(
        helm["failureMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot unmarshal bool"),
        "{helm}"
    );
    assert_eq!(
        world.of_kind("ClusterProfile").len(),
        1,
        "only dev was reached"
    );
    let notes: Vec<&str> = world
        .of_kind("Event")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(notes, ["Provisioning stage dev"]);
}

#[test]
fn post_delay_checks_are_appended_once_the_stage_is_past_its_delay() {
    let mut promotion = fixtures::load_example("cert-manager-lua-checks.yaml")
        .expect("example")
        .promotion;
    promotion["status"] = json!({
        "currentStageName": "staging",
        "stages": [
            {"name": "dev", "lastUpdateReconciledTime": "2026-02-16T06:25:17Z", "lastSuccessfulAppliedTime": "2026-02-16T06:28:24Z",
             "currentStatusDescription": "Successfully provisioned (2026-02-16T06:32:24Z)"},
            {"name": "staging", "lastUpdateReconciledTime": "2026-02-16T06:32:24Z", "lastSuccessfulAppliedTime": "2026-02-16T06:34:24Z",
             "currentStatusDescription": "Delayed: Waiting for Time Window: 2026-02-16T06:36:24Z (2026-02-16T06:34:24Z)"}
        ]
    });
    let mut b = WorldBuilder::new();
    b.add(Example {
        file: "inline".into(),
        promotion,
    })
    .expect("admitted");
    let world = b.build();
    let dev = find(&world, "ClusterProfile", "cert-manager-rollout-auto-dev");
    let names: Vec<&str> = dev["spec"]["validateHealths"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["deployment-health", "cert-manager-resources-health"]
    );
    let staging = find(
        &world,
        "ClusterProfile",
        "cert-manager-rollout-auto-staging",
    );
    assert_eq!(
        staging["spec"]["validateHealths"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn generated_world_spreads_clusters_over_stages() {
    let world = fixtures::generate(20, 2000);
    assert_eq!(world.of_kind("ClusterPromotion").len(), 1);
    assert_eq!(world.of_kind("ClusterProfile").len(), 20);
    assert_eq!(world.of_kind("SveltosCluster").len(), 2000);
    assert_eq!(world.of_kind("ClusterSummary").len(), 2000);
    for profile in world.of_kind("ClusterProfile") {
        assert_eq!(
            profile["status"]["matchingClusters"]
                .as_array()
                .map(Vec::len),
            Some(100)
        );
    }
    let promotion = find(&world, "ClusterPromotion", fixtures::GENERATED_PROMOTION);
    assert_eq!(
        promotion["status"]["stages"].as_array().map(Vec::len),
        Some(20)
    );
}

#[test]
fn the_binary_serves_the_examples_to_kubectl() {
    let exe = bins::binary("standin-apiserver").expect("binary builds");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(exe)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--example",
            "kyverno-manual-gate.yaml",
            "--generate-stages",
            "3",
            "--generate-clusters",
            "6",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut first);
    }
    let out = bins::run(
        Command::new("kubectl")
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECACHEDIR", dir.path().join("cache"))
            .args(["get", "clusterpromotions", "-o", "name"]),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        first.starts_with("https://127.0.0.1:"),
        "first line was {first:?}"
    );
    let out = out.expect("kubectl runs");
    assert!(out.success(), "{out}");
    assert_eq!(
        out.stdout,
        "clusterpromotion.config.projectsveltos.io/bench-rollout\nclusterpromotion.config.projectsveltos.io/kyverno-rollout-man\n"
    );
}
