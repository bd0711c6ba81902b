//! Validation engine benchmark (`cargo bench -p promotion-shared --bench engine`).
//!
//! Every number is reported next to a baseline measured in the same run, so the ratios hold on
//! any machine: the engine against parsing the same manifest, the big promotion against the
//! small one per check (linearity), and lint over 1,000 files against reading and parsing them
//! and, with the CRD schema pass, against the same run without it.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crd_schema::Crd;
use promotion_manifest::parse_documents;
use promotion_shared::validation::lint;
use promotion_shared::validation::{validate, VALIDATION_STACK_BYTES};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Median time per call over `rounds` rounds of `iters` calls.
fn time_per_call(rounds: usize, iters: usize, mut f: impl FnMut()) -> Duration {
    let mut samples: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            start.elapsed() / iters as u32
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

const LUA: &str = "function evaluate()\n  local hs = {healthy = false, message = \"waiting\"}\n  if obj.status and obj.status.availableReplicas ~= nil and obj.status.availableReplicas == obj.spec.replicas then\n    hs.healthy = true\n  end\n  return hs\nend\n";
const CEL: &str = "resource.status.succeeded >= 1 && resource.status.conditions.filter(c, c.type == 'Complete' && c.status == 'True').size() == 1";

/// A promotion with `stages` stages and `checks` Lua and `checks` CEL post-delay checks.
/// Every script and rule text is unique (`salt`, stage and check numbers), so nothing is
/// served from the engine's memo: this measures parsing cost.
fn generated(stages: usize, checks: usize, salt: usize) -> Value {
    let per_stage = checks.div_ceil(stages);
    let stage = |i: usize| {
        let health: Vec<Value> = (0..per_stage)
            .flat_map(|j| {
                [
                    json!({"name": format!("lua-{i}-{j}"), "featureID": "Helm", "group": "apps", "version": "v1",
                           "kind": "Deployment", "namespace": "default", "script": format!("{LUA}-- {salt} {i} {j}\n")}),
                    json!({"name": format!("cel-{i}-{j}"), "featureID": "Helm", "group": "batch", "version": "v1",
                           "kind": "Job", "namespace": "default", "evaluateCEL": [{"name": "ok", "rule": format!("{CEL} && {salt} != {i}{j}")}]}),
                ]
            })
            .collect();
        json!({"name": format!("stage-{i}"), "clusterSelector": {"matchLabels": {"env": format!("e{i}")}},
               "trigger": {"auto": {"delay": "5m", "postDelayHealthChecks": health,
                                    "promotionWindow": {"from": "0 9 * * 1-5", "to": "0 17 * * 1-5"}}}})
    };
    json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
           "metadata": {"name": "generated"},
           "spec": {"profileSpec": {"helmCharts": [{"repositoryURL": "https://charts.example.com", "repositoryName": "x",
                     "chartName": "x/y", "chartVersion": "1.0.0", "releaseName": "y", "releaseNamespace": "y"}]},
                    "stages": (0..stages).map(stage).collect::<Vec<_>>()}})
}

fn main() {
    // Run where the webhook and lint run validation: on a thread with the recommended stack.
    std::thread::Builder::new()
        .stack_size(VALIDATION_STACK_BYTES)
        .spawn(run)
        .expect("spawn bench thread")
        .join()
        .expect("bench thread");
}

fn run() {
    let text = std::fs::read_to_string(examples().join("cert-manager-lua-checks.yaml")).unwrap();
    let object = parse_documents(&text).unwrap().remove(0).value;

    let parse = time_per_call(15, 400, || {
        black_box(parse_documents(black_box(&text)).unwrap());
    });
    // Cold: the scripts change every call (a trailing comment), as on a first write.
    let mut variants: Vec<Value> = (0..6000)
        .map(|i| {
            let mut v = object.clone();
            for p in [
                "/spec/profileSpec/validateHealths/0/script",
                "/spec/stages/0/trigger/auto/postDelayHealthChecks/0/script",
            ] {
                let s = v.pointer_mut(p).unwrap();
                *s = Value::String(format!("{}-- {i}\n", s.as_str().unwrap()));
            }
            v
        })
        .collect();
    let mut next = 0;
    let cold = time_per_call(15, 400, || {
        black_box(validate(black_box(&variants[next])));
        next += 1;
    });
    variants.clear();
    // Warm: the same object again, as on the approvals and annotation updates that follow.
    let warm = time_per_call(15, 400, || {
        black_box(validate(black_box(&object)));
    });
    println!("cert-manager-lua-checks.yaml (2 Lua checks)");
    println!(
        "  YAML parse (baseline)      {:>9.1} µs",
        parse.as_secs_f64() * 1e6
    );
    println!(
        "  validate, new scripts      {:>9.1} µs   {:.2}× parse",
        cold.as_secs_f64() * 1e6,
        cold.as_secs_f64() / parse.as_secs_f64()
    );
    println!(
        "  validate, seen scripts     {:>9.1} µs   {:.2}× parse",
        warm.as_secs_f64() * 1e6,
        warm.as_secs_f64() / parse.as_secs_f64()
    );

    let mut salt = 0;
    let mut fresh = |stages, checks| {
        salt += 1;
        generated(stages, checks, salt)
    };
    let small: Vec<Value> = (0..9 * 20).map(|_| fresh(10, 40)).collect();
    let big: Vec<Value> = (0..9 * 5).map(|_| fresh(50, 200)).collect();
    let mut i = 0;
    let small_t = time_per_call(9, 20, || {
        black_box(validate(black_box(&small[i])));
        i += 1;
    });
    let mut i = 0;
    let big_t = time_per_call(9, 5, || {
        black_box(validate(black_box(&big[i])));
        i += 1;
    });
    let per_check_small = small_t.as_secs_f64() / 80.0;
    let per_check_big = big_t.as_secs_f64() / 400.0;
    println!("generated promotions (Lua + CEL post-delay checks, every text unique)");
    println!(
        "  10 stages,  40+40 checks  {:>9.2} ms   {:.1} µs/check",
        small_t.as_secs_f64() * 1e3,
        per_check_small * 1e6
    );
    println!(
        "  50 stages, 200+200 checks {:>9.2} ms   {:.1} µs/check",
        big_t.as_secs_f64() * 1e3,
        per_check_big * 1e6
    );
    println!(
        "  per-check cost ratio big/small: {:.2} (1.00 = linear)",
        per_check_big / per_check_small
    );

    lint_throughput();
}

/// What one lint run does per document.
#[derive(Clone, Copy)]
enum Pass {
    ParseOnly,
    Engine,
    /// The schema pass, then the engine, merged (`schema::lint`).
    SchemaAndEngine,
}

/// 1,000 manifest files on disk: read + parse (baseline), + the engine, + the schema pass.
fn lint_throughput() {
    let dir = std::env::temp_dir().join(format!("promotion-lint-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sources: Vec<String> = std::fs::read_dir(examples())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for i in 0..1000 {
        std::fs::write(
            dir.join(format!("p{i:04}.yaml")),
            &sources[i % sources.len()],
        )
        .unwrap();
    }
    let files: Vec<PathBuf> = (0..1000)
        .map(|i| dir.join(format!("p{i:04}.yaml")))
        .collect();
    let crd = Crd::embedded();
    let read_parse = |files: &[PathBuf], pass: Pass| {
        for f in files {
            let text = std::fs::read_to_string(f).unwrap();
            for d in parse_documents(&text).unwrap() {
                match pass {
                    Pass::ParseOnly => {}
                    Pass::Engine => {
                        black_box(validate(&d.value));
                    }
                    Pass::SchemaAndEngine => {
                        black_box(lint(crd, &d.value));
                    }
                }
            }
        }
    };
    // The three passes are timed in turns, round after round, and each ratio is the median of
    // the per-round ratios: load that drifts during the run (a shared machine) then weighs on
    // all three alike.
    let passes = [Pass::ParseOnly, Pass::Engine, Pass::SchemaAndEngine];
    let mut times: Vec<[f64; 3]> = Vec::new();
    for round in 0..9 {
        let mut t = [0f64; 3];
        for k in 0..3 {
            let i = (round + k) % 3;
            let start = Instant::now();
            read_parse(&files, passes[i]);
            t[i] = start.elapsed().as_secs_f64();
        }
        times.push(t);
    }
    let median = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let time_of = |i: usize| median(times.iter().map(|t| t[i]).collect());
    let ratio = |a: usize, b: usize| median(times.iter().map(|t| t[a] / t[b]).collect());
    let (baseline, engine, with_schema) = (time_of(0), time_of(1), time_of(2));
    println!("lint core over 1,000 files (examples repeated)");
    println!(
        "  read + parse (baseline)    {:>9.1} ms   {:>8.0} files/s",
        baseline * 1e3,
        1000.0 / baseline
    );
    println!(
        "  read + parse + validate    {:>9.1} ms   {:>8.0} files/s   {:.2}× baseline",
        engine * 1e3,
        1000.0 / engine,
        ratio(1, 0)
    );
    println!(
        "  + CRD schema pass          {:>9.1} ms   {:>8.0} files/s   {:.2}× baseline, {:.2}× without the schema pass (target ≤ 1.5×)",
        with_schema * 1e3,
        1000.0 / with_schema,
        ratio(2, 0),
        ratio(2, 1)
    );
    if let Some(bin) = release_binary() {
        let run = || {
            std::process::Command::new(&bin)
                .args(["lint", "-o", "json"])
                .arg(&dir)
                .output()
                .unwrap()
        };
        let cat = time_per_call(3, 1, || {
            black_box(
                std::process::Command::new("cat")
                    .args(&files)
                    .output()
                    .unwrap(),
            );
        });
        let bin_t = time_per_call(3, 1, || {
            black_box(run());
        });
        println!(
            "  kubectl-promotion lint DIR {:>9.1} ms   {:>8.0} files/s   (cat of the same files: {:.1} ms)",
            bin_t.as_secs_f64() * 1e3,
            1000.0 / bin_t.as_secs_f64(),
            cat.as_secs_f64() * 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn release_binary() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/kubectl-promotion");
    p.exists().then_some(p)
}
