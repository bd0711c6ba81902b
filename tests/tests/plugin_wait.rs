//! `kubectl promotion wait` and `describe --watch`: exit codes 0/2/3/1, driven by watch events
//! (the promotion and its ClusterSummaries), surviving dropped watches and compaction.

mod plugin_common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use plugin_common::*;
use promotion_e2e::fixtures::Cluster;
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";

/// Spawn the plugin and return its output once it exits (bounded).
fn spawn(env: &Env, args: &[&str]) -> std::process::Child {
    env.cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl-promotion")
}

fn finish(child: std::process::Child) -> Output {
    child
        .wait_with_output()
        .expect("wait for kubectl-promotion")
        .into()
}

/// Wait until the plugin has opened its watches (so that what follows is seen as events).
fn watching(env: &Env) {
    eventually(Duration::from_secs(30), "the plugin to watch", || {
        let reqs = env.server.requests();
        let watches = |frag: &str| {
            reqs.iter().any(|r| {
                r.method == "GET" && r.path.contains(frag) && r.query.contains("watch=true")
            })
        };
        watches("/clusterpromotions") && watches("/clustersummaries")
    });
}

fn update(env: &Env, name: &str, change: impl FnOnce(&mut Value)) {
    let mut p = env.promotion(name);
    change(&mut p);
    forget_version(&mut p);
    env.put(p);
}

fn promote_to_production(p: &mut Value) {
    p["status"]["stages"].as_array_mut().unwrap().push(json!({
        "name": "production", "lastUpdateReconciledTime": "2026-02-16T08:00:00Z"}));
    p["status"]["currentStageName"] = json!("production");
}

#[test]
fn conditions_that_already_hold_exit_0() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let out = env
        .run(&["wait", GATE, "--for=approval", "--timeout=10s"])
        .expect(0);
    assert!(out.stdout.contains(
        "stage staging awaits approval (unblocks staging → production): kubectl promotion approve kyverno-rollout-man --stage staging"
    ), "{}", out.stdout);
    env.run(&["wait", GATE, "--for=stage=staging", "--timeout=0"])
        .expect(0);
    // --timeout=0 checks once: production has not started.
    let out = env
        .run(&["wait", GATE, "--for=stage=production", "--timeout=0"])
        .expect(3);
    assert!(out.stderr.contains("timed out after 0s waiting for stage=production (still at stage staging: awaiting approval)"), "{}", out.stderr);
}

#[test]
fn failed_pipeline_exits_2() {
    let env = Env::start(example_world("kyverno-failed-dev.yaml"));
    let out = env
        .run(&[
            "wait",
            "kyverno-rollout-auto",
            "--for=complete",
            "--timeout=10s",
        ])
        .expect(2);
    assert!(
        out.stderr.contains(
            "pipeline failed before complete: stage dev failed: cluster dev/dev01: Helm Failed"
        ),
        "{}",
        out.stderr
    );
    env.run(&[
        "wait",
        "kyverno-rollout-auto",
        "--for=complete",
        "--timeout=0",
    ])
    .expect(2);
}

#[test]
fn timeout_exits_3() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let start = Instant::now();
    let out = env
        .run(&["wait", GATE, "--for=complete", "--timeout=2s"])
        .expect(3);
    assert!(start.elapsed() >= Duration::from_secs(2));
    assert!(
        out.stderr
            .contains("timed out after 2s waiting for complete"),
        "{}",
        out.stderr
    );
}

#[test]
fn other_errors_exit_1() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let out = env
        .run(&["wait", GATE, "--for=stage=qa", "--timeout=5s"])
        .expect(1);
    assert!(out.stderr.contains("has no stage \"qa\""), "{}", out.stderr);
    let out = env.run(&["wait", "missing", "--for=complete"]).expect(1);
    assert!(
        out.stderr.contains("\"missing\" not found"),
        "{}",
        out.stderr
    );
    let out = env.run(&["wait", GATE, "--for=ready"]).expect(1);
    assert!(
        out.stderr
            .contains("expected complete, approval or stage=NAME"),
        "{}",
        out.stderr
    );
    let out = env.run(&["wait", GATE]).expect(1);
    assert!(out.stderr.contains("--for"), "{}", out.stderr);
}

#[test]
fn a_stage_reached_later_is_seen_through_the_watch_even_after_it_drops() {
    // No bookmarks during the test, so the plugin's last resourceVersion stays behind.
    let env = Env::with_options(
        promotion_e2e::apiserver::StandInOptions::default()
            .with_objects(example_world("kyverno-manual-gate.yaml"))
            .with_bookmark_interval(Duration::from_secs(3600)),
    );
    let child = spawn(
        &env,
        &["wait", GATE, "--for=stage=production", "--timeout=60s"],
    );
    watching(&env);
    // The server forgets its history and ends every watch: the plugin must re-watch, get 410
    // Gone, re-list, and still see the change made meanwhile.
    env.server.clear_requests();
    env.put(Cluster::new("dr", "dr01", &[("env", "dr")]).to_object());
    env.server.compact();
    env.server.drop_watches();
    update(&env, GATE, promote_to_production);
    let out = finish(child).expect(0);
    assert!(
        out.stdout.contains("stage production reached"),
        "{}",
        out.stdout
    );
    let relisted = env
        .requests("GET", "/clusterpromotions")
        .iter()
        .any(|r| !r.query.contains("watch=true"));
    let rewatched = env
        .requests("GET", "/clusterpromotions")
        .iter()
        .any(|r| r.query.contains("watch=true"));
    assert!(rewatched && relisted, "re-list and re-watch after the drop");
}

#[test]
fn a_cluster_failing_later_ends_the_wait_with_2() {
    let env = Env::start(auto_rollout_two_clusters_each());
    let child = spawn(
        &env,
        &[
            "wait",
            "kyverno-rollout-auto",
            "--for=complete",
            "--timeout=60s",
        ],
    );
    watching(&env);
    env.set_features(
        "prod",
        "kyverno-rollout-auto-production-sveltos-prod02",
        &[(
            "Helm",
            "Failed",
            Some("health check 'kyverno-ready' for feature Helm failed"),
        )],
    );
    let out = finish(child).expect(2);
    assert!(
        out.stderr
            .contains("cluster prod/prod02: Helm Failed: health check 'kyverno-ready'"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "waiting for complete: at stage production: soaking until 2026-02-16T06:36:24Z"
        ),
        "progress is reported: {}",
        out.stderr
    );
}

#[test]
fn describe_watch_appends_changes_and_ends_when_complete() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let child = spawn(&env, &["describe", GATE, "-w"]);
    watching(&env);
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    std::thread::sleep(Duration::from_millis(300));
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]
            .as_object_mut()
            .unwrap()
            .remove("approved");
        promote_to_production(p);
        let last = p["status"]["stages"]
            .as_array_mut()
            .unwrap()
            .last_mut()
            .unwrap();
        last["lastSuccessfulAppliedTime"] = json!("2026-02-16T08:02:00Z");
        last["currentStatusDescription"] =
            json!("All matching clusters are successfully deployed. (2026-02-16T08:02:00Z)");
    });
    let out = finish(child).expect(0);
    let t = &out.stdout;
    // The full view once, then one line per change (not a redraw: stdout is not a terminal).
    assert_eq!(t.matches("Stages:").count(), 1, "{t}");
    assert!(
        t.contains("stage staging: awaiting approval → approved and pending"),
        "{t}"
    );
    assert!(
        t.contains("stage staging: approved and pending → promoted"),
        "{t}"
    );
    assert!(
        t.contains("stage production: not started → complete"),
        "{t}"
    );
    assert!(
        t.contains("pipeline kyverno-rollout-man: progressing → complete"),
        "{t}"
    );
    assert!(!t.contains("\u{1b}[2J"));
}

#[test]
fn describe_watch_exits_2_when_the_pipeline_fails() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let child = spawn(&env, &["describe", "kyverno-rollout-auto", "--watch"]);
    watching(&env);
    env.set_features(
        "prod",
        "kyverno-rollout-auto-production-sveltos-prod01",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
    );
    let out = finish(child).expect(2);
    assert!(out.stdout.contains("stage production: soaking until 2026-02-16T06:36:24Z → failed (cluster prod/prod01: Helm FailedNonRetriable: template error)"), "{}", out.stdout);
}
