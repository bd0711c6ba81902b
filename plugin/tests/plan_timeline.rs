//! `kubectl promotion plan --timeline` through the real binary, offline: when each stage of a
//! rollout would start, soak, wait for its window or an approval, and complete.

use std::process::{Command, Output};

use serde_json::{json, Value};

const ROLLOUT: &str = "\
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterPromotion
metadata:
  name: shop
spec:
  profileSpec:
    helmCharts:
    - repositoryURL: https://charts.example
      releaseName: shop
      releaseNamespace: shop
  stages:
  - name: dev
    clusterSelector: {matchLabels: {env: dev}}
    trigger: {auto: {delay: 30m}}
  - name: staging
    clusterSelector: {matchLabels: {env: staging}}
    trigger:
      auto:
        delay: 1h
        promotionWindow: {from: \"0 22 * * *\", to: \"0 6 * * *\"}
  - name: prod
    clusterSelector: {matchLabels: {env: prod}}
    trigger: {manual: {}}
";

const FLEET: &str = "\
apiVersion: v1
kind: List
items:
- {apiVersion: lib.projectsveltos.io/v1beta1, kind: SveltosCluster, metadata: {namespace: fleet, name: d1, labels: {env: dev}}, spec: {}, status: {ready: true}}
- {apiVersion: lib.projectsveltos.io/v1beta1, kind: SveltosCluster, metadata: {namespace: fleet, name: s1, labels: {env: staging}}, spec: {}, status: {ready: true}}
- {apiVersion: lib.projectsveltos.io/v1beta1, kind: SveltosCluster, metadata: {namespace: fleet, name: s2, labels: {env: staging}}, spec: {}, status: {ready: true}}
- {apiVersion: lib.projectsveltos.io/v1beta1, kind: SveltosCluster, metadata: {namespace: fleet, name: p1, labels: {env: prod}}, spec: {}, status: {ready: true}}
";

fn plan(dir: &std::path::Path, extra: &[&str]) -> Output {
    let rollout = dir.join("rollout.yaml");
    let fleet = dir.join("fleet.yaml");
    std::fs::write(&rollout, ROLLOUT).unwrap();
    std::fs::write(&fleet, FLEET).unwrap();
    let mut args = vec![
        "plan".to_string(),
        "-f".into(),
        rollout.display().to_string(),
        "--clusters".into(),
        fleet.display().to_string(),
        "--timeline".into(),
        "--start".into(),
        "2026-03-02T10:00:00Z".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    Command::new(env!("CARGO_BIN_EXE_kubectl-promotion"))
        .args(&args)
        .env("NO_COLOR", "1")
        .output()
        .expect("kubectl-promotion runs")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_timeline_says_when_each_stage_starts_soaks_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    let o = plan(dir.path(), &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Columns are aligned with runs of spaces; compare the words.
    let out: Vec<String> = text(&o)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for line in [
        "Timeline of shop (assuming every cluster deploys at once and every check passes; times in UTC)",
        "2026-03-02T10:00:00Z dev starts (1 cluster)",
        "2026-03-02T10:00:00Z dev soaks until 2026-03-02T10:30:00Z",
        "2026-03-02T10:30:00Z staging starts (2 clusters)",
        "2026-03-02T11:30:00Z staging waits for its promotion window until 2026-03-02T22:00:01Z",
        "2026-03-02T22:00:01Z prod waits for an approval",
        "Does not complete: prod waits for an approval (explore with --approve-at prod=TIME)",
    ] {
        assert!(out.iter().any(|l| l == line), "missing {line:?} in:\n{}", out.join("\n"));
    }
}

#[test]
fn an_approval_time_completes_the_rollout_and_json_carries_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let o = plan(dir.path(), &["--approve-at", "prod=+24h", "-o", "json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_str(&text(&o)).unwrap();
    assert_eq!(v["kind"], "PromotionTimeline");
    assert_eq!(v["windowTimeZone"], "UTC");
    assert_eq!(v["completes"], "2026-03-03T10:00:00Z");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(
        steps[0],
        json!({"time": "2026-03-02T10:00:00Z", "stage": "dev", "what": "starts", "clusters": 1})
    );
    assert!(steps
        .iter()
        .any(|s| s["what"] == "approved" && s["stage"] == "prod"));
    assert_eq!(steps.last().unwrap()["what"], "completes");
}

#[test]
fn the_window_zone_moves_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let o = plan(
        dir.path(),
        &["--window-time-zone", "Europe/Paris", "-o", "json"],
    );
    let v: Value = serde_json::from_str(&text(&o)).unwrap();
    let window = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["what"] == "waitsForWindow")
        .unwrap()
        .clone();
    // 22:00 in Paris is 21:00 UTC in March.
    assert_eq!(window["until"], "2026-03-02T21:00:01Z");
}

#[test]
fn mistakes_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            vec!["--approve-at", "qa=+1h"],
            "the promotion has no stage \"qa\"",
        ),
        (vec!["--approve-at", "prod"], "expected STAGE=TIME"),
        (
            vec!["--window-time-zone", "Mars/Olympus"],
            "not an IANA time zone name",
        ),
    ] {
        let o = plan(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
