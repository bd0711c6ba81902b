//! `kubectl promotion plan -f … --clusters …` as CI runs it: the real binary, no cluster, the
//! inventory in the forms kubectl writes, exit codes and both output formats.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const ROLLOUT: &str = "\
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterPromotion
metadata:
  name: kyverno-rollout
spec:
  profileSpec:
    helmCharts:
    - repositoryURL: https://kyverno.github.io/kyverno/
      repositoryName: kyverno
      chartName: kyverno/kyverno
      chartVersion: \"3.6.2\"
      releaseName: kyverno-latest
      releaseNamespace: kyverno
      helmChartAction: Install
  stages:
  - name: staging
    clusterSelector:
      matchLabels:
        env: staging
    trigger:
      auto:
        delay: 5m
  - name: production
    clusterSelector:
      matchLabels:
        env: production
";

/// One SveltosCluster as `kubectl get -o yaml` lists it.
fn sveltos_item(ns: &str, name: &str, env: &str) -> String {
    format!(
        "- apiVersion: lib.projectsveltos.io/v1beta1
  kind: SveltosCluster
  metadata:
    creationTimestamp: \"2026-02-16T07:00:00Z\"
    generation: 1
    labels:
      env: {env}
    name: {name}
    namespace: {ns}
    resourceVersion: \"42\"
    uid: 5a8c4e0e-0000-4000-8000-000000000001
  spec:
    kubeconfigName: {name}-sveltos-kubeconfig
    paused: false
  status:
    connectionStatus: Healthy
    ready: true
    version: v1.33.1
"
    )
}

/// `kubectl get sveltosclusters -A -o yaml` of one staging cluster and twelve labelled `env: prod`.
fn fleet_yaml() -> String {
    let mut text = String::from("apiVersion: v1\nitems:\n");
    text.push_str(&sveltos_item("staging", "staging01", "staging"));
    for i in 1..=12 {
        text.push_str(&sveltos_item("prod", &format!("prod{i:02}"), "prod"));
    }
    text.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    text
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn plan(args: &[&str]) -> Output {
    plan_with_stdin(args, None)
}

fn plan_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    // No kubeconfig anywhere: an offline plan must not need one.
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-promotion"))
        .arg("plan")
        .args(args)
        .env_clear()
        .env("NO_COLOR", "1")
        .env("HOME", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(pipe);
    child.wait_with_output().expect("finishes")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

#[test]
fn label_typo_fails_strict_in_ci_and_names_the_fix() {
    let f = Files::new();
    let rollout = f.write("rollout.yaml", ROLLOUT);
    let fleet = f.write("fleet.yaml", &fleet_yaml());
    let o = plan(&["-f", &rollout, "--clusters", &fleet, "--strict"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with(
        "ClusterPromotion kyverno-rollout: 2 stages, 13 clusters in the inventory (13 SveltosClusters, 0 Cluster API Clusters)\n"
    ), "{out}");
    assert!(
        out.contains("1. staging   env=staging   → 1 cluster\n"),
        "{out}"
    );
    assert!(
        out.contains("   staging/staging01   Sveltos   env=staging   ready\n"),
        "{out}"
    );
    assert!(
        out.contains("2. production   env=production   → no cluster\n"),
        "{out}"
    );
    assert!(out.contains("12 clusters of the inventory are reached by no stage."));
    assert!(
        out.contains(
            "  warning[selector-typo] stage production matches no cluster: did you mean env=prod \
         instead of env=production? 12 clusters carry it\n"
        ),
        "{out}"
    );
    assert_eq!(stderr(&o), "");
    // Without --strict the same plan exits 0: hazards are reported, not failures.
    let o = plan(&["-f", &rollout, "--clusters", &fleet]);
    assert_eq!(code(&o), 0);
    assert_eq!(stdout(&o), out);
}

#[test]
fn a_clean_plan_passes_strict_and_prints_json_and_yaml() {
    let f = Files::new();
    let rollout = f.write(
        "rollout.yaml",
        &ROLLOUT.replace("env: production", "env: prod"),
    );
    let fleet = f.write("fleet.yaml", &fleet_yaml());
    let o = plan(&[
        "-f",
        &rollout,
        "--clusters",
        &fleet,
        "--strict",
        "-o",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["apiVersion"], "kubectl-promotion.dev/v1alpha1");
    assert_eq!(v["kind"], "PromotionPlan");
    assert_eq!(v["name"], "kyverno-rollout");
    assert_eq!(v["hazards"], serde_json::json!([]));
    assert_eq!(v["unreached"], 0);
    assert_eq!(v["stages"][1]["count"], 12);
    assert_eq!(
        v["stages"][1]["clusters"][0],
        serde_json::json!({"type": "Sveltos", "namespace": "prod", "name": "prod01",
                           "paused": false, "ready": true, "matchedLabels": {"env": "prod"}})
    );
    let o = plan(&["-f", &rollout, "--clusters", &fleet, "-o", "yaml"]);
    assert_eq!(code(&o), 0);
    let y: Value = serde_saphyr::from_str(&stdout(&o)).expect("YAML");
    assert_eq!(y, v);
    let o = plan(&["-f", &rollout, "--clusters", &fleet]);
    assert!(stdout(&o).ends_with("\nNo hazards.\n"), "{}", stdout(&o));
}

#[test]
fn capi_clusters_from_several_documents_and_a_directory() {
    let f = Files::new();
    let rollout = f.write(
        "rollout.yaml",
        &ROLLOUT.replace("env: production", "env: prod"),
    );
    f.write("fleet/sveltos.yaml", &fleet_yaml());
    f.write(
        "fleet/capi.yaml",
        "apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: capi-eu
  namespace: capi
  labels: {env: prod}
spec:
  paused: true
status:
  controlPlaneReady: true
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: capi-us
  namespace: capi
  labels: {env: prod}
  annotations: {sharding.projectsveltos.io/key: shard-us}
status:
  initialization: {controlPlaneInitialized: false}
",
    );
    f.write("fleet/README.md", "not an inventory");
    let dir = f.path("fleet").display().to_string();
    let o = plan(&["-f", &rollout, "--clusters", &dir, "--strict"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("15 clusters in the inventory (13 SveltosClusters, 2 Cluster API Clusters)"),
        "{out}"
    );
    assert!(
        out.contains("2. production   env=prod   → 14 clusters: 1 paused, 1 not ready\n"),
        "{out}"
    );
    assert!(
        out.contains("   capi/capi-eu   Capi      env=prod   paused      -\n"),
        "{out}"
    );
    assert!(
        out.contains("   capi/capi-us   Capi      env=prod   not ready   shard-us\n"),
        "{out}"
    );
    assert!(out.contains(
        "warning[cluster-paused] 1 of stage production's 14 clusters is paused (capi/capi-eu)"
    ));
    assert!(out.contains(
        "warning[cluster-not-ready] 1 of stage production's 14 clusters is not ready (capi/capi-us; \
         the Cluster API control plane is not initialized)"
    ), "{out}");
}

#[test]
fn the_fleet_can_come_from_stdin() {
    let f = Files::new();
    let rollout = f.write("rollout.yaml", ROLLOUT);
    let o = plan_with_stdin(
        &["-f", &rollout, "--clusters", "-", "-o", "json"],
        Some(&fleet_yaml()),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["inventory"], 13);
    let o = plan_with_stdin(&["-f", "-", "--clusters", "-"], Some(""));
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: -f - and --clusters - cannot both read stdin\n"
    );
}

#[test]
fn input_errors_exit_2_and_name_the_file_and_the_field() {
    let f = Files::new();
    let rollout = f.write("rollout.yaml", ROLLOUT);
    let fleet = f.write("fleet.yaml", &fleet_yaml());

    let bad_field = f.write(
        "bad.yaml",
        &fleet_yaml().replacen("paused: false", "paused: sometimes", 1),
    );
    let o = plan(&["-f", &rollout, "--clusters", &bad_field]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "error: {bad_field}: items[0] (SveltosCluster staging/staging01): spec.paused: invalid type: string \"sometimes\", expected a boolean"
        )
    );
    assert_eq!(stdout(&o), "", "nothing half-written");

    let not_yaml = f.write("broken.yaml", "items: [\n");
    let o = plan(&["-f", &rollout, "--clusters", &not_yaml]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).starts_with(&format!("error: {not_yaml}: invalid YAML")),
        "{}",
        stderr(&o)
    );

    let missing = f.path("missing.yaml").display().to_string();
    let o = plan(&["-f", &rollout, "--clusters", &missing]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).starts_with(&format!("error: {missing}: ")),
        "{}",
        stderr(&o)
    );

    let twice = f.write(
        "twice.yaml",
        &format!("{}---\n{}", fleet_yaml(), fleet_yaml()),
    );
    let o = plan(&["-f", &rollout, "--clusters", &twice]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("SveltosCluster staging/staging01 is defined twice"),
        "{}",
        stderr(&o)
    );

    let bad_promotion = f.write(
        "bad-rollout.yaml",
        &ROLLOUT.replace("env: production", "env: [production]"),
    );
    let o = plan(&["-f", &bad_promotion, "--clusters", &fleet]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).starts_with(&format!(
        "error: {bad_promotion}: not a ClusterPromotion the plan can read: spec.stages[1].clusterSelector.matchLabels.env: invalid type: sequence"
    )), "{}", stderr(&o));

    let o = plan(&["other-name", "-f", &rollout, "--clusters", &fleet]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("does not match the ClusterPromotion \"kyverno-rollout\""));

    // Usage errors are input errors too: exit 2, never the 1 that --strict gives hazards.
    let o = plan(&[]);
    assert_eq!(code(&o), 2);
    let o = plan(&["-f", &rollout, "--clusters", &fleet, "--no-such-flag"]);
    assert_eq!(code(&o), 2);
}

#[test]
fn an_empty_inventory_warns_and_every_stage_matches_nothing() {
    let f = Files::new();
    let rollout = f.write("rollout.yaml", ROLLOUT);
    let empty = f.write("empty.yaml", "apiVersion: v1\nkind: List\nitems: []\n");
    let o = plan(&["-f", &rollout, "--clusters", &empty, "-o", "json"]);
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).contains(&format!(
        "warning: no SveltosCluster or Cluster API Cluster in {empty}: every stage matches no cluster"
    )), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let codes: Vec<&str> = v["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        vec!["stage-matches-no-cluster", "stage-matches-no-cluster"]
    );
    assert!(Path::new(&empty).exists());
}
