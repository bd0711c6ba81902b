//! `promotion-controller run` at fleet scale on the stand-in API server:
//! 1,000 promotions over 20,000 SveltosClusters, one ClusterSummary per cluster and stage
//! (`cargo bench -p promotion-e2e --bench controller_fleet`; `-- --promotions N --clusters M` for
//! another size).
//!
//! Each promotion owns 20 clusters: 4 in its `canary` stage and all 20 in its `main` stage. The
//! seeded state is the one the controller itself would have written (its own decisions compute
//! it): every promotion at `main`, with 19 of main's 20 ClusterSummaries provisioned (24,000
//! ClusterSummaries in all). Reported, all from one run:
//! - the controller's resident memory once its caches are full and every promotion reconciled
//!   (goal ≤ 200 MiB);
//! - reconciles per second over that first pass;
//! - reaction: from the last ClusterSummary of a promotion's `main` stage turning `Provisioned`
//!   to the status write that records the stage provisioned (goal p99 ≤ 2 s), p50 and p99 over
//!   sampled promotions;
//! - the baseline: one LIST of all ClusterSummaries through the same server, and each figure as
//!   a ratio of it.

use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{json, Value};

use promotion_e2e::apiserver::{StandIn, StandInOptions, UserInfo};
use promotion_e2e::bench_support::{rss_mib, Flags};
use promotion_e2e::bins::Kubeconfig;
use promotion_e2e::controller_process::ControllerProcess;
use promotion_e2e::envtest::http;
use promotion_shared::model::CLUSTER_PROFILE_NAME_LABEL;
use promotion_shared::reconcile::{decide, Options, Snapshot};

const API: &str = "config.projectsveltos.io/v1beta1";
const NAMESPACE: &str = "fleet";
const PER_PROMOTION: usize = 20;
const CANARY: usize = 4;

struct Args {
    promotions: usize,
    samples: usize,
}

fn args() -> Args {
    let mut a = Args {
        promotions: 1000,
        samples: 200,
    };
    let flags = Flags::from_env();
    let value = |flag: &str| flags.value(flag).and_then(|v| v.parse::<usize>().ok());
    if let Some(p) = value("--promotions") {
        a.promotions = p;
    }
    if let Some(c) = value("--clusters") {
        a.promotions = (c / PER_PROMOTION).max(1);
    }
    if let Some(s) = value("--samples") {
        a.samples = s;
    }
    a.samples = a.samples.min(a.promotions);
    a
}

fn promotion(i: usize) -> Value {
    let group = format!("g{i}");
    json!({
        "apiVersion": API, "kind": "ClusterPromotion",
        "metadata": {"name": format!("p{i}"), "uid": format!("00000000-0000-0000-0000-{i:012}"),
                     "generation": 1,
                     "finalizers": ["config.projectsveltos.io/clusterpromotion"]},
        "spec": {
            "profileSpec": {"syncMode": "Continuous", "helmCharts": [{
                "repositoryURL": "https://charts.example", "repositoryName": "example",
                "chartName": "example/app", "chartVersion": "1.0.0",
                "releaseName": "app", "releaseNamespace": "app", "helmChartAction": "Install"}]},
            "stages": [
                {"name": "canary", "clusterSelector": {"matchLabels": {"group": group, "ring": "canary"}},
                 "trigger": {"auto": {}}},
                {"name": "main", "clusterSelector": {"matchLabels": {"group": group}}},
            ],
        },
    })
}

fn cluster(i: usize, k: usize) -> Value {
    let ring = if k < CANARY { "canary" } else { "main" };
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "metadata": {"name": format!("c{i}-{k}"), "namespace": NAMESPACE,
                     "labels": {"group": format!("g{i}"), "ring": ring}},
        "spec": {}, "status": {"ready": true},
    })
}

fn summary(profile: &Value, i: usize, k: usize, state: &str) -> Value {
    let name = profile["metadata"]["name"].as_str().unwrap_or_default();
    json!({
        "apiVersion": API, "kind": "ClusterSummary",
        "metadata": {"name": format!("{name}-sveltos-c{i}-{k}"), "namespace": NAMESPACE,
                     "labels": {CLUSTER_PROFILE_NAME_LABEL: name}},
        "spec": {"clusterNamespace": NAMESPACE, "clusterName": format!("c{i}-{k}"),
                 "clusterType": "Sveltos", "clusterProfileSpec": profile["spec"].clone()},
        "status": {"featureSummaries": [{"featureID": "Helm", "status": state}]},
    })
}

/// The seeded world: what the controller's own reconciles write, and Sveltos' answers. Every
/// promotion is at `main`: canary provisioned and promoted, main's profile applied and all but
/// one of its 20 ClusterSummaries provisioned; so every cluster has one ClusterSummary per stage
/// that selects it (canary clusters two).
fn world(promotions: usize) -> Vec<Value> {
    let now = Utc::now();
    let mut objects = vec![json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": NAMESPACE}})];
    for i in 0..promotions {
        let mut p = promotion(i);
        let clusters: Vec<Value> = (0..PER_PROMOTION).map(|k| cluster(i, k)).collect();
        let fleet = {
            let mut inventory = promotion_shared::fleet::Inventory::new();
            inventory
                .add_documents("bench", &clusters)
                .expect("bench clusters are valid");
            inventory.into_clusters()
        };
        let restart = decide(
            &Snapshot {
                promotion: p.clone(),
                fleet: Some(fleet.clone().into()),
                ..Snapshot::default()
            },
            now,
            &Options::default(),
        );
        p["status"] = restart.status.clone().unwrap_or(Value::Null);
        let mut canary = restart.apply[0].clone();
        canary["metadata"]["uid"] = json!(format!("10000000-0000-0000-0000-{i:012}"));
        let canary_summaries: Vec<Value> = (0..CANARY)
            .map(|k| summary(&canary, i, k, "Provisioned"))
            .collect();
        // Canary deployed: provisioned, and (no delay) promoted to main at once.
        let promote = decide(
            &Snapshot {
                promotion: p.clone(),
                profiles: vec![canary.clone()],
                summaries: canary_summaries.clone(),
                fleet: Some(fleet.into()),
                ..Snapshot::default()
            },
            now,
            &Options::default(),
        );
        p["status"] = promote.status.clone().unwrap_or(Value::Null);
        assert_eq!(p["status"]["currentStageName"], "main", "seeded at main");
        let mut main = promote.apply[0].clone();
        main["metadata"]["uid"] = json!(format!("20000000-0000-0000-0000-{i:012}"));
        for k in 0..PER_PROMOTION {
            let state = if k + 1 == PER_PROMOTION {
                "Provisioning"
            } else {
                "Provisioned"
            };
            objects.push(summary(&main, i, k, state));
        }
        objects.extend(clusters);
        objects.extend(canary_summaries);
        objects.push(p);
        objects.push(canary);
        objects.push(main);
    }
    objects
}

fn counter(metrics: &str, line_prefix: &str) -> f64 {
    metrics
        .lines()
        .find(|l| l.starts_with(line_prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() {
    let args = args();
    let clusters = args.promotions * PER_PROMOTION;
    eprintln!(
        "controller_fleet: {} promotions, {clusters} SveltosClusters, {} ClusterSummaries seeded",
        args.promotions,
        args.promotions * (CANARY + PER_PROMOTION)
    );
    let token = "bench-admin-token";
    let server = StandIn::start(
        StandInOptions::default()
            .with_token(token, UserInfo::new("admin", &["system:masters"]))
            .with_objects(world(args.promotions)),
    )
    .expect("the stand-in starts with the seeded fleet");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let kubeconfig = dir.path().join("kubeconfig");
    Kubeconfig::new("admin", server.url(), token)
        .with_ca(server.ca_pem())
        .write(&kubeconfig)
        .expect("kubeconfig written");

    // Baseline: one LIST of all ClusterSummaries, through the same server.
    let (listed, list_time) =
        promotion_e2e::envtest::timed_summary_list(&kubeconfig).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed, args.promotions * (CANARY + PER_PROMOTION));

    // Built before the clock starts: startup is the process's, not cargo's.
    promotion_e2e::bins::binary("promotion-controller").expect("promotion-controller builds");
    let started = Instant::now();
    let mut ctl = ControllerProcess::start(
        &kubeconfig,
        &[
            "--resync-period",
            "1h",
            "--log-level",
            "warn,promotion_controller::commands::run=info",
        ],
    )
    .expect("promotion-controller starts");
    let health: std::net::SocketAddr = ctl.health.parse().expect("health address");
    let metrics: std::net::SocketAddr = ctl.metrics.parse().expect("metrics address");
    while http::get(health, "/readyz").map(|r| r.0).unwrap_or(0) != 200 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let ready = started.elapsed();
    let ok = "promotion_controller_reconciles_total{result=\"ok\"}";
    loop {
        let text = http::get(metrics, "/metrics")
            .map(|r| r.1)
            .unwrap_or_default();
        if counter(&text, ok) >= args.promotions as f64 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let first_pass = started.elapsed() - ready;
    let (rss, peak) = rss_mib(ctl.pid());

    // Reaction: the last main ClusterSummary of sampled promotions turns Provisioned.
    let store = server.store();
    let step = (args.promotions / args.samples.max(1)).max(1);
    let mut reactions = Vec::new();
    for i in (0..args.promotions).step_by(step).take(args.samples) {
        let profile = json!({"metadata": {"name": format!("p{i}-main")},
            "spec": store.get("clusterprofiles", None, &format!("p{i}-main"))
                .map(|p| p["spec"].clone()).unwrap_or(Value::Null)});
        let mut last = summary(&profile, i, PER_PROMOTION - 1, "Provisioned");
        if let Some(stored) = store.get(
            "clustersummaries",
            Some(NAMESPACE),
            last["metadata"]["name"].as_str().unwrap_or_default(),
        ) {
            last["metadata"] = stored["metadata"].clone();
        }
        let began = Instant::now();
        store.put(last).expect("the summary turns Provisioned");
        let deadline = began + Duration::from_secs(30);
        loop {
            // main recorded provisioned: its status entry has lastSuccessfulAppliedTime.
            let provisioned = store
                .get("clusterpromotions", None, &format!("p{i}"))
                .is_some_and(|p| {
                    p["status"]["stages"]
                        .as_array()
                        .and_then(|l| l.iter().find(|s| s["name"] == "main"))
                        .is_some_and(|s| s.get("lastSuccessfulAppliedTime").is_some())
                });
            if provisioned {
                reactions.push(began.elapsed());
                break;
            }
            assert!(
                Instant::now() < deadline,
                "p{i}'s main not recorded provisioned within 30 s; controller log:\n{}",
                ctl.log()
            );
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    reactions.sort();
    let p50 = percentile(&reactions, 50.0);
    let p99 = percentile(&reactions, 99.0);
    let ratio = |d: Duration| d.as_secs_f64() / list_time.as_secs_f64();
    println!(
        "baseline: one LIST of {} ClusterSummaries: {list_time:.1?}",
        args.promotions * (CANARY + PER_PROMOTION)
    );
    println!(
        "startup: ready (caches listed) in {ready:.1?} ({:.1}x the baseline LIST)",
        ratio(ready)
    );
    println!(
        "first pass: {} reconciles in {first_pass:.1?} = {:.0} reconciles/s",
        args.promotions,
        args.promotions as f64 / first_pass.as_secs_f64()
    );
    println!("memory: RSS {rss:.1} MiB after the first pass (peak {peak:.1} MiB); goal <= 200 MiB");
    println!(
        "reaction ({} samples): p50 {p50:.1?} ({:.2}x the LIST), p99 {p99:.1?} ({:.2}x the LIST); goal p99 <= 2 s",
        reactions.len(),
        ratio(p50),
        ratio(p99)
    );
    ctl.kill();
}
