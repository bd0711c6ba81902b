//! Benchmark (not a test): `kubectl promotion describe` end to end against the stand-in API
//! server, compared with `kubectl get clusterpromotion NAME -o yaml` on the same server in the
//! same run, and how `describe` grows with the number of clusters.
//!
//! Run: `cargo run --release -p promotion-e2e --example plugin_bench`
//! (`-- --quick` for a smaller run). Prints medians and ratios; asserts nothing.

#[path = "../tests/plugin_common/mod.rs"]
mod plugin_common;

use std::process::Command;
use std::time::{Duration, Instant};

use plugin_common::*;
use serde_json::{json, Value};

const NAME: &str = "bench-rollout";

/// A promotion with `stages` stages, all reached, and `clusters` clusters spread over them, each
/// with a ClusterSummary of its stage's profile; the last stage soaks.
fn world(stages: usize, clusters: usize) -> Vec<Value> {
    let stage_names: Vec<String> = (0..stages).map(|i| format!("stage{i:02}")).collect();
    let mut promotion = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": NAME, "finalizers": ["config.projectsveltos.io/clusterpromotion"]},
        "spec": {
            "profileSpec": {"syncMode": "Continuous", "helmCharts": [{
                "repositoryURL": "https://kyverno.github.io/kyverno/", "repositoryName": "kyverno",
                "chartName": "kyverno/kyverno", "chartVersion": "3.6.2",
                "releaseName": "kyverno-latest", "releaseNamespace": "kyverno",
                "helmChartAction": "Install"}]},
            "stages": stage_names.iter().map(|s| json!({
                "name": s, "clusterSelector": {"matchLabels": {"stage": s}},
                "trigger": {"auto": {"delay": "2m"}}})).collect::<Vec<_>>()
        },
        "status": {
            "currentStageName": stage_names.last(),
            "lastPromotionTime": "2026-02-16T06:32:24Z",
            "stages": stage_names.iter().map(|s| json!({
                "name": s,
                "lastUpdateReconciledTime": "2026-02-16T06:25:17Z",
                "lastSuccessfulAppliedTime": "2026-02-16T06:28:24Z",
                "lastStatusCheckTime": "2026-02-16T06:28:24Z",
                "currentStatusDescription": "Successfully provisioned (2026-02-16T06:28:24Z)"
            })).collect::<Vec<_>>()
        }
    });
    promotion["status"]["stages"][stages - 1]["currentStatusDescription"] =
        json!("Delayed: Waiting for Time Window: 2026-02-16T06:36:24Z (2026-02-16T06:34:24Z)");
    let mut objects = vec![promotion.clone()];
    let per_stage: Vec<Vec<(String, String)>> = stage_names
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (0..clusters)
                .filter(|c| c % stages == i)
                .map(|c| (format!("ns-{s}"), format!("cluster-{c:05}")))
                .collect()
        })
        .collect();
    for (s, clusters) in stage_names.iter().zip(&per_stage) {
        let refs: Vec<(&str, &str)> = clusters
            .iter()
            .map(|(ns, c)| (ns.as_str(), c.as_str()))
            .collect();
        objects.push(profile(&promotion, s, &refs));
        for (ns, c) in &refs {
            objects.push(summary(
                &promotion,
                s,
                (ns, c),
                &[
                    ("Helm", "Provisioned", None),
                    ("Resources", "Provisioned", None),
                ],
            ));
        }
    }
    objects
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm-up (kubectl's discovery cache, page cache)
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn check(out: std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn describe_time(env: &Env, runs: usize) -> Duration {
    time(runs, || {
        check(
            env.cmd().args(["describe", NAME]).output().unwrap(),
            "describe",
        )
    })
}

fn kubectl_get_time(env: &Env, runs: usize) -> Duration {
    time(runs, || {
        check(
            Command::new("kubectl")
                .args(["get", "clusterpromotion", NAME, "-o", "yaml"])
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", env.path("home"))
                .env("KUBECONFIG", &env.kubeconfig)
                .output()
                .unwrap(),
            "kubectl get",
        )
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 3 } else { 7 };
    let bin = plugin_bin();
    println!("kubectl-promotion: {}", bin.display());
    println!("median of {runs} runs each, after one warm-up run\n");

    println!("1) 20 stages, 2,000 matching clusters (one stand-in, same run)");
    let env = Env::start(world(20, 2000));
    let describe = describe_time(&env, runs);
    let get = kubectl_get_time(&env, runs);
    println!(
        "   kubectl promotion describe        {:8.1} ms",
        ms(describe)
    );
    println!("   kubectl get clusterpromotion -o yaml {:5.1} ms", ms(get));
    println!(
        "   ratio describe / kubectl get      {:8.2}   (target: <= 1.00)",
        describe.as_secs_f64() / get.as_secs_f64()
    );
    drop(env);

    println!("\n2) growth: 20 stages, describe time by number of clusters");
    let sizes: &[usize] = if quick {
        &[200, 2_000]
    } else {
        &[200, 2_000, 20_000]
    };
    let mut results = Vec::new();
    for &n in sizes {
        let t0 = Instant::now();
        let env = Env::start(world(20, n));
        let load = t0.elapsed();
        let d = describe_time(&env, runs);
        println!(
            "   {n:>6} clusters: {:8.1} ms   ({:.3} ms per 100 clusters; stand-in loaded in {:.1} s)",
            ms(d),
            ms(d) / (n as f64 / 100.0),
            load.as_secs_f64()
        );
        results.push((n, d));
    }
    for w in results.windows(2) {
        let ((n0, d0), (n1, d1)) = (w[0], w[1]);
        println!(
            "   {n0} → {n1}: time x{:.2} for clusters x{:.0} (linear would be <= x{:.0})",
            d1.as_secs_f64() / d0.as_secs_f64(),
            n1 as f64 / n0 as f64,
            n1 as f64 / n0 as f64
        );
    }
}
