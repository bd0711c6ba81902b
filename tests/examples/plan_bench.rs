//! Benchmark (not a test): `kubectl promotion plan` end to end against the stand-in API server,
//! compared with `kubectl get sveltosclusters -A -o json` on the same server in the same run,
//! and how the plan's cost grows with clusters and stages.
//!
//! Run: `cargo run --release -p promotion-e2e --example plan_bench`
//! (`-- --quick` for a smaller run). Prints the fastest of several runs and ratios; asserts
//! nothing.

use std::time::{Duration, Instant};

use promotion_e2e::apiserver::{StandIn, StandInHandle, StandInOptions};
use promotion_e2e::bins::{self, KubeEnv, Output};
use promotion_e2e::fixtures::{self, FLEET_PROMOTION as NAME};
use promotion_shared::fleet::Inventory;
use promotion_shared::model::ClusterPromotion;
use promotion_shared::plan;

/// A stand-in holding the generated fleet: one promotion with `stages` stages over `clusters`
/// SveltosClusters (see `fixtures::fleet` for where its hazards sit).
struct Bench {
    _server: StandInHandle,
    kube: KubeEnv,
}

fn start(stages: usize, clusters: usize) -> Bench {
    let server =
        StandIn::start(StandInOptions::default().with_objects(fixtures::fleet(stages, clusters)))
            .unwrap_or_else(|e| panic!("stand-in: {e}"));
    let kube = KubeEnv::new(&server).unwrap_or_else(|e| panic!("{e}"));
    Bench {
        _server: server,
        kube,
    }
}

/// The fastest of `runs` timings after one warm-up run (kubectl's discovery cache, page
/// cache): on a machine shared with other work, the minimum is the timing least disturbed by it,
/// for both sides of a comparison alike.
fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn check(out: Result<Output, bins::BinError>, what: &str) {
    match out {
        Ok(out) if out.success() => {}
        Ok(out) => panic!("{what} failed: {out}"),
        Err(e) => panic!("{what}: {e}"),
    }
}

fn plan_time(bench: &Bench, runs: usize) -> Duration {
    time(runs, || check(bench.kube.plugin(&["plan", NAME]), "plan"))
}

fn kubectl_get_time(bench: &Bench, runs: usize) -> Duration {
    time(runs, || {
        check(
            bench
                .kube
                .kubectl(&["get", "sveltosclusters", "-A", "-o", "json"]),
            "kubectl get",
        )
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The in-process part of `plan`, without the network, so its growth is the algorithm's and
/// not the server's: decoding the fleet (per cluster), and the plan (per cluster x stage).
fn compute_times(stages: usize, clusters: usize, runs: usize) -> (Duration, Duration) {
    let world = fixtures::fleet(stages, clusters);
    let promotion: ClusterPromotion = world
        .find("ClusterPromotion", NAME)
        .and_then(|p| ClusterPromotion::decode(p).ok())
        .unwrap_or_else(|| panic!("generated promotion missing"));
    let list = serde_json::json!({"kind": "List", "items": world.of_kind("SveltosCluster")});
    let decode = || {
        let mut inventory = Inventory::new();
        if let Err(e) = inventory.add_documents("fleet", std::slice::from_ref(&list)) {
            panic!("{e}");
        }
        inventory
    };
    let decoding = time(runs, || {
        std::hint::black_box(decode());
    });
    let inventory = decode();
    let planning = time(runs, || {
        std::hint::black_box(plan::plan(&promotion, inventory.clusters()));
    });
    (decoding, planning)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 3 } else { 7 };
    let bin = bins::binary("kubectl-promotion").unwrap_or_else(|e| panic!("{e}"));
    println!("kubectl-promotion: {}", bin.display());
    println!("fastest of {runs} runs each, after one warm-up run\n");

    let big = if quick { 5_000 } else { 20_000 };
    println!("1) 20 stages, {big} clusters (one stand-in, same run)");
    let bench = start(20, big);
    let plan = plan_time(&bench, runs);
    let get = kubectl_get_time(&bench, runs);
    println!(
        "   kubectl promotion plan                  {:8.1} ms",
        ms(plan)
    );
    println!(
        "   kubectl get sveltosclusters -A -o json  {:8.1} ms",
        ms(get)
    );
    println!(
        "   ratio plan / kubectl get                {:8.2}   (target: <= 1.00)",
        plan.as_secs_f64() / get.as_secs_f64()
    );
    drop(bench);

    println!("\n2) end to end by number of clusters (20 stages; both read every cluster in pages of 500)");
    let sizes: &[usize] = if quick {
        &[1_250, 2_500, 5_000]
    } else {
        &[5_000, 10_000, 20_000]
    };
    let mut results = Vec::new();
    for &n in sizes {
        let t0 = Instant::now();
        let bench = start(20, n);
        let load = t0.elapsed();
        let p = plan_time(&bench, runs);
        let g = kubectl_get_time(&bench, runs);
        println!(
            "   {n:>6} clusters: plan {:8.1} ms   kubectl get {:8.1} ms   ratio {:.2}   (stand-in loaded in {:.1} s)",
            ms(p),
            ms(g),
            p.as_secs_f64() / g.as_secs_f64(),
            load.as_secs_f64()
        );
        results.push((n, p));
    }
    for w in results.windows(2) {
        let ((n0, d0), (n1, d1)) = (w[0], w[1]);
        println!(
            "   {n0} → {n1}: plan time x{:.2} for clusters x{:.0}",
            d1.as_secs_f64() / d0.as_secs_f64(),
            n1 as f64 / n0 as f64
        );
    }

    println!(
        "   (the stand-in scans every remaining object to answer each page of 500, so paging \
         through N clusters costs it ~N^2: kubectl's growth shows it too; 3) is the plan's own cost)"
    );

    println!("\n3) in-process decode + plan (no network): cost per cluster x stage");
    let grid: &[(usize, usize)] = if quick {
        &[
            (20, 1_250),
            (20, 2_500),
            (20, 5_000),
            (5, 5_000),
            (10, 5_000),
        ]
    } else {
        &[
            (20, 5_000),
            (20, 10_000),
            (20, 20_000),
            (5, 20_000),
            (10, 20_000),
        ]
    };
    for &(stages, clusters) in grid {
        let (decode, planning) = compute_times(stages, clusters, runs);
        println!(
            "   {stages:>2} stages x {clusters:>6} clusters: decode {:7.2} ms ({:4.0} ns/cluster)   \
             plan {:7.2} ms ({:5.1} ns per cluster x stage)",
            ms(decode),
            decode.as_secs_f64() * 1e9 / clusters as f64,
            ms(planning),
            planning.as_secs_f64() * 1e9 / (stages * clusters) as f64
        );
    }
}
