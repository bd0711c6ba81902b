//! Health-check runner benchmark (`cargo bench -p promotion-shared --features health-runtime
//! --bench health`).
//!
//! Evaluations per second of the cert-manager example's Lua check against a Deployment and of
//! the validation-job example's CEL rule against a Job, each next to the cost of only parsing
//! the same script or rule, measured in the same run: the ratio says what evaluation costs on
//! top of the parse that `lint` already pays, on any machine.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use health_runtime::{self as health, cel_eval, lua_runtime, Budget, LuaOutcome};
use promotion_manifest::parse_documents;

fn example_check(file: &str) -> health::Check {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("example");
    let doc = parse_documents(&text).expect("yaml").remove(0).value;
    health::checks(&doc, None).expect("checks").remove(0)
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

fn per_second(d: Duration) -> f64 {
    1.0 / d.as_secs_f64()
}

fn report(what: &str, eval: Duration, parse: Duration) {
    println!(
        "{what:<44} {:>10.0} evaluations/s ({:>8.1} µs)   parse only {:>10.0}/s ({:>7.1} µs)   \
         evaluation = {:.1}× parse",
        per_second(eval),
        eval.as_secs_f64() * 1e6,
        per_second(parse),
        parse.as_secs_f64() * 1e6,
        eval.as_secs_f64() / parse.as_secs_f64()
    );
}

fn main() {
    let deployment: Value = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cert-manager", "namespace": "cert-manager",
                     "labels": {"app.kubernetes.io/name": "cert-manager"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "cert-manager"}},
                 "template": {"spec": {"containers": [{"name": "c", "image": "quay.io/jetstack/cert-manager-controller:v1.19.1",
                                                        "args": ["--v=2", "--leader-elect=true"]}]}}},
        "status": {"replicas": 2, "availableReplicas": 2, "readyReplicas": 2,
                   "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]}
    });
    let job: Value = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "validate", "namespace": "default"},
        "spec": {"completions": 1, "backoffLimit": 3},
        "status": {"succeeded": 1, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}
    });

    let lua_check = example_check("cert-manager-lua-checks.yaml");
    let script = lua_check
        .script
        .clone()
        .expect("the example's first check is Lua");
    let budget = Budget::default();
    let metrics = BTreeMap::new();
    assert_eq!(
        lua_runtime::evaluate(&script, Some(&deployment), &metrics, &budget),
        LuaOutcome::Healthy
    );
    let lua_eval = time_per_call(7, 300, || {
        black_box(lua_runtime::evaluate(
            black_box(&script),
            Some(&deployment),
            &metrics,
            &budget,
        ));
    });
    // Parse only: a bare LuaJIT state compiling the same chunk (what a syntax check costs).
    let lua_parse = time_per_call(7, 300, || {
        let lua = mlua::Lua::new();
        black_box(lua.load(black_box(script.as_str())).into_function().is_ok());
    });
    report("Lua  cert-manager deployment-health", lua_eval, lua_parse);

    let cel_check = example_check("validation-job-cel.yaml");
    let rule = cel_check.rules[0].rule.clone();
    let resource = cel_eval::to_cel(&job);
    assert_eq!(cel_eval::evaluate_rule(&rule, &resource), Ok(true));
    let cel_eval_time = time_per_call(7, 2000, || {
        black_box(cel_eval::evaluate_rule(black_box(&rule), &resource).is_ok());
    });
    let cel_parse = time_per_call(7, 2000, || {
        black_box(cel::Program::compile(black_box(&rule)).is_ok());
    });
    report("CEL  validation-job success", cel_eval_time, cel_parse);

    // The whole check as the command runs it: selection, Lua or CEL, result model.
    let objects = vec![deployment.clone(), job.clone()];
    let mut lua_sel = lua_check.clone();
    lua_sel.namespace = "cert-manager".into();
    let check_lua = time_per_call(7, 300, || {
        black_box(health::run_check(
            &lua_sel,
            &objects,
            health::KindServed::Unknown,
            &health::Inputs::default(),
        ));
    });
    report(
        "check deployment-health (select + Lua)",
        check_lua,
        lua_parse,
    );
}
