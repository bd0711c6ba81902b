//! Benchmark (not a test): `kubectl promotion describe` end to end against the stand-in API
//! server, compared with `kubectl get clusterpromotion NAME -o yaml` on the same server in the
//! same run (at 60 and at 2,000 clusters), and how `describe` grows with the number of clusters.
//!
//! Run: `cargo run --release -p promotion-e2e --example plugin_bench`
//! (`-- --quick` for a smaller run). Prints medians and ratios; asserts nothing.

use std::time::{Duration, Instant};

use promotion_e2e::apiserver::{StandIn, StandInHandle, StandInOptions};
use promotion_e2e::bins::{self, KubeEnv, Output};
use promotion_e2e::fixtures::{self, GENERATED_PROMOTION as NAME};

/// A stand-in holding one promotion with `stages` stages, all reached, and `clusters` clusters
/// spread over them, each with a ClusterSummary of its stage's profile; the last stage soaks.
struct Bench {
    _server: StandInHandle,
    kube: KubeEnv,
}

fn start(stages: usize, clusters: usize) -> Bench {
    let world = fixtures::generate(stages, clusters);
    let server = StandIn::start(StandInOptions::default().with_objects(world))
        .unwrap_or_else(|e| panic!("stand-in: {e}"));
    let kube = KubeEnv::new(&server).unwrap_or_else(|e| panic!("{e}"));
    Bench {
        _server: server,
        kube,
    }
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

fn check(out: Result<Output, bins::BinError>, what: &str) {
    match out {
        Ok(out) if out.success() => {}
        Ok(out) => panic!("{what} failed: {out}"),
        Err(e) => panic!("{what}: {e}"),
    }
}

fn describe_time(bench: &Bench, runs: usize) -> Duration {
    time(runs, || {
        check(bench.kube.plugin(&["describe", NAME]), "describe")
    })
}

fn kubectl_get_time(bench: &Bench, runs: usize) -> Duration {
    time(runs, || {
        check(
            bench
                .kube
                .kubectl(&["get", "clusterpromotion", NAME, "-o", "yaml"]),
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
    let bin = bins::binary("kubectl-promotion").unwrap_or_else(|e| panic!("{e}"));
    println!("kubectl-promotion: {}", bin.display());
    println!("median of {runs} runs each, after one warm-up run\n");

    println!("1) describe against kubectl get -o yaml of the same promotion (same run)");
    for (stages, clusters) in [(3, 60), (20, 2_000)] {
        let bench = start(stages, clusters);
        let describe = describe_time(&bench, runs);
        let get = kubectl_get_time(&bench, runs);
        println!("   {stages} stages, {clusters} clusters:");
        println!(
            "     kubectl promotion describe          {:8.1} ms",
            ms(describe)
        );
        println!(
            "     kubectl get clusterpromotion -o yaml {:7.1} ms",
            ms(get)
        );
        println!(
            "     ratio describe / kubectl get        {:8.2}   (target: <= 0.50)",
            describe.as_secs_f64() / get.as_secs_f64()
        );
    }

    println!("\n2) growth: 20 stages, describe time by number of clusters");
    let sizes: &[usize] = if quick {
        &[200, 2_000]
    } else {
        &[200, 2_000, 20_000]
    };
    let mut results = Vec::new();
    for &n in sizes {
        let t0 = Instant::now();
        let bench = start(20, n);
        let load = t0.elapsed();
        let d = describe_time(&bench, runs);
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
