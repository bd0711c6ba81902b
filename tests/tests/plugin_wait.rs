//! `kubectl promotion wait` and `describe --watch`: exit codes 0/2/3/1, driven by watch events
//! (the promotion and its ClusterSummaries), surviving dropped watches and compaction.
//!
//! A test that changes the world while the plugin runs first waits for evidence that the plugin
//! has seen the world as it was (the progress note of `wait`, the first view of `describe -w`)
//! and, between two changes that must be seen apart, for the transition the first one prints.
//! Nothing is ordered by sleeping, so no result depends on how fast the machine is; the only
//! clock is [`PATIENCE`], after which a test fails with everything the plugin printed.

mod plugin_common;

use std::time::{Duration, Instant};

use plugin_common::*;
use promotion_e2e::fixtures::Cluster;
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";

/// The plugin's own `--timeout` where a test is not about timing out: as long as [`PATIENCE`],
/// so that a slow machine cannot turn an expected exit 0, 1 or 2 into a 3.
const PATIENT: &str = "--timeout=120s";

/// Wait until the plugin has opened its watches, for a test about what happens to open watches.
fn watching(env: &Env) {
    eventually(PATIENCE, "the plugin to watch", || {
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
        .run(&["wait", GATE, "--for=approval", PATIENT])
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
    // dev01's Helm feature is `Failed`: Sveltos retries it, so `wait` keeps waiting (exit 3 at
    // the timeout) unless told to stop at the first failure.
    let env = Env::start(example_world("kyverno-failed-dev.yaml"));
    let pending = env
        .run(&[
            "wait",
            "kyverno-rollout-auto",
            "--for=complete",
            "--timeout=0",
        ])
        .expect(3);
    assert!(
        pending.stderr.contains(
            "stage dev failed (Sveltos retries): 1 cluster failing: dev/dev01 Helm Failed: "
        ),
        "{}",
        pending.stderr
    );
    let out = env
        .run(&[
            "wait",
            "kyverno-rollout-auto",
            "--for=complete",
            "--fail-fast",
            PATIENT,
        ])
        .expect(2);
    assert!(
        out.stderr
            .contains("dev/dev01 Helm Failed: failed to install release kyverno-latest"),
        "{}",
        out.stderr
    );
    // A failure Sveltos does not retry ends the wait without --fail-fast.
    env.set_features(
        "dev",
        "kyverno-rollout-auto-dev-sveltos-dev01",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
    );
    let out = env
        .run(&["wait", "kyverno-rollout-auto", "--for=complete", PATIENT])
        .expect(2);
    assert!(
        out.stderr
            .contains("dev/dev01 Helm FailedNonRetriable: template error"),
        "{}",
        out.stderr
    );
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
        .run(&["wait", GATE, "--for=stage=qa", PATIENT])
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
            .contains("expected complete, approval, paused, aborted, rolled-back or stage=NAME"),
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
    let mut plugin = Running::start(&env, &["wait", GATE, "--for=stage=production", PATIENT]);
    plugin.expect_line(
        Stream::Stderr,
        "waiting for stage=production: at stage staging: awaiting approval",
    );
    watching(&env);
    // The server forgets its history and ends every watch: the plugin must re-watch, get 410
    // Gone, re-list, and still see the change made meanwhile.
    env.server.clear_requests();
    env.put(Cluster::new("dr", "dr01", &[("env", "dr")]).to_object());
    env.server.compact();
    env.server.drop_watches();
    update(&env, GATE, promote_to_production);
    let out = plugin.finish().expect(0);
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
    let mut plugin = Running::start(
        &env,
        &[
            "wait",
            "kyverno-rollout-auto",
            "--for=complete",
            "--fail-fast",
            PATIENT,
        ],
    );
    // Progress is reported once the plugin has the rollout's state.
    plugin.expect_line(
        Stream::Stderr,
        "waiting for complete: at stage production: soaking until 2026-02-16T06:36:24Z",
    );
    env.set_features(
        "prod",
        "kyverno-rollout-auto-production-sveltos-prod02",
        &[(
            "Helm",
            "Failed",
            Some("health check 'kyverno-ready' for feature Helm failed"),
        )],
    );
    let out = plugin.finish().expect(2);
    assert!(
        out.stderr
            .contains("prod/prod02 Helm Failed: health check 'kyverno-ready'"),
        "{}",
        out.stderr
    );
}

#[test]
fn describe_watch_appends_changes_and_ends_when_complete() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut plugin = Running::start(&env, &["describe", GATE, "-w"]);
    plugin.expect_line(Stream::Stdout, "Stages:");
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    // The approval is seen on its own before the promotion that uses it happens.
    plugin.expect_line(
        Stream::Stdout,
        "stage staging: awaiting approval → approved and pending",
    );
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
    let out = plugin.finish().expect(0);
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
    let mut plugin = Running::start(&env, &["describe", "kyverno-rollout-auto", "--watch"]);
    plugin.expect_line(Stream::Stdout, "Stages:");
    env.set_features(
        "prod",
        "kyverno-rollout-auto-production-sveltos-prod01",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
    );
    let out = plugin.finish().expect(2);
    assert!(out.stdout.contains("stage production: soaking until 2026-02-16T06:36:24Z → failed: 1 cluster failed (1 non-retriable: prod/prod01 Helm FailedNonRetriable: template error)"), "{}", out.stdout);
}

#[test]
fn list_watch_prints_a_row_again_each_time_it_changes() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut plugin = Running::start(&env, &["list", "--watch"]);
    let header = plugin.expect_line(Stream::Stdout, "AWAITING-APPROVAL");
    let first = plugin.expect_line(Stream::Stdout, GATE);
    assert!(first.contains("awaiting approval"), "{first}");
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    let second = plugin.expect_line(Stream::Stdout, GATE);
    assert!(!second.contains("awaiting approval"), "{second}");
    // Later rows line up with the table printed first.
    let state_at = header.find("STATE").unwrap();
    assert_eq!(
        second[state_at..].chars().next().map(char::is_whitespace),
        Some(false),
        "{header}{second}"
    );
    assert!(second[..state_at].ends_with("   "), "{header}{second}");
    // Sveltos' finalizer goes first (as its controller removes it), or the object stays.
    env.kubectl(&[
        "patch",
        "clusterpromotion",
        GATE,
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .expect(0);
    env.kubectl(&["delete", "clusterpromotion", GATE]).expect(0);
    let last = plugin.expect_line(Stream::Stdout, "deleted");
    assert!(last.starts_with(GATE), "{last}");
    assert_eq!(
        plugin.stdout.matches("AWAITING-APPROVAL").count(),
        1,
        "{}",
        plugin.stdout
    );
}

#[test]
fn list_watch_only_prints_changes_only() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut plugin = Running::start(&env, &["list", "--watch-only", "-o", "name"]);
    watching(&env);
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    let line = plugin.expect_line(Stream::Stdout, GATE);
    assert_eq!(
        line,
        format!("clusterpromotion.config.projectsveltos.io/{GATE}\n")
    );
    assert_eq!(plugin.stdout, line, "the initial listing is not printed");
}

/// `describe -w -o yaml` writes one YAML document per change, separated as `kubectl get -w -o
/// yaml` separates them, so the stream parses as a multi-document YAML file.
#[test]
fn describe_watch_yaml_is_one_document_per_change() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let mut plugin = Running::start(
        &env,
        &["describe", "kyverno-rollout-auto", "--watch", "-o", "yaml"],
    );
    plugin.expect_line(Stream::Stdout, "kind: PromotionDescription");
    env.set_features(
        "prod",
        "kyverno-rollout-auto-production-sveltos-prod01",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
    );
    let out = plugin.finish().expect(2);
    let documents: Vec<&str> = out
        .stdout
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .collect();
    assert_eq!(documents.len(), 2, "{}", out.stdout);
    assert!(out.stdout.starts_with("---\n"), "{}", out.stdout);
    let phases: Vec<String> = documents
        .iter()
        .map(|d| {
            let v: Value = serde_saphyr::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}"));
            v["phase"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(
        phases.last().map(String::as_str),
        Some("failed"),
        "{phases:?}"
    );
}

/// Issue 25, item 6: against a server that accepts connections and never answers, `wait` and
/// `approve --wait` end at their `--timeout` (which bounds the whole command: connecting and
/// reading too) with exit 3, saying which request got no answer. (`finish` kills the plugin
/// after [`PATIENCE`]: only a guard against a hang, not a timing assertion.)
#[test]
fn a_hung_server_ends_wait_and_approve_wait_at_their_timeout_with_exit_3() {
    let env = Env::start(Vec::new());
    let url = hung_server();
    let kubeconfig = kubeconfig_for(&env, "hung", &url);
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path");
    let unanswered = format!(
        "no answer from the server at {url} to get clusterpromotions.config.projectsveltos.io \"{GATE}\""
    );

    let wait = Running::start(
        &env,
        &[
            "wait",
            GATE,
            "--for=complete",
            "--timeout=3s",
            "--kubeconfig",
            kubeconfig,
        ],
    )
    .finish()
    .expect(3);
    assert!(
        wait.stderr.contains(&format!(
            "error: timed out after 3s (--timeout) waiting for complete: {unanswered}"
        )),
        "{}",
        wait.stderr
    );

    let approve = Running::start(
        &env,
        &[
            "approve",
            GATE,
            "--wait",
            "--timeout=3s",
            "--kubeconfig",
            kubeconfig,
        ],
    )
    .finish()
    .expect(3);
    assert!(
        approve.stderr.contains(&format!(
            "error: timed out after 3s (--timeout) approving {GATE} and waiting for what it \
             unblocks: {unanswered}"
        )),
        "{}",
        approve.stderr
    );
}

#[test]
fn list_watch_prints_a_row_only_when_its_text_changes() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut plugin = Running::start(&env, &["list", "--watch"]);
    let first = plugin.expect_line(Stream::Stdout, GATE);
    // A change only LAST-PROMOTION shows (a -o wide column): the default row reads the same.
    update(&env, GATE, |p| {
        p["status"]["lastPromotionTime"] = json!("2026-02-16T07:40:00Z");
    });
    // Then one the row shows; it arrives after the first, so a repeat would be printed before.
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    let second = plugin.expect_line(Stream::Stdout, GATE);
    assert_ne!(first, second);
    assert!(!second.contains("awaiting approval"), "{second}");
    assert_eq!(plugin.stdout.matches(GATE).count(), 2, "{}", plugin.stdout);
}

#[test]
fn describe_watch_prints_cluster_counts_only_when_they_move() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let mut plugin = Running::start(&env, &["describe", "kyverno-rollout-auto", "--watch"]);
    plugin.expect_line(Stream::Stdout, "Stages:");
    // A second production cluster, still provisioning: the count of provisioned ones stays 1.
    let store = env.server.store();
    let mut third = store
        .get(
            "clustersummaries",
            Some("prod"),
            "kyverno-rollout-auto-production-sveltos-prod01",
        )
        .expect("the production summary");
    third["metadata"]["name"] = json!("kyverno-rollout-auto-production-sveltos-prod03");
    third["spec"]["clusterName"] = json!("prod03");
    set_features(&mut third, &[("Helm", "Provisioning", None)]);
    forget_version(&mut third);
    if let Some(m) = third["metadata"].as_object_mut() {
        m.remove("uid");
    }
    env.put(third);
    let line = plugin.expect_line(Stream::Stdout, "stage production: clusters");
    assert!(
        line.ends_with("stage production: clusters 1/1 → 1/2 provisioned\n"),
        "{line}"
    );
    env.set_features(
        "prod",
        "kyverno-rollout-auto-production-sveltos-prod03",
        &[("Helm", "Provisioned", None)],
    );
    let line = plugin.expect_line(Stream::Stdout, "stage production: clusters");
    assert!(
        line.ends_with("stage production: clusters 1 → 2/2 provisioned\n"),
        "{line}"
    );
    env.set_features(
        "prod",
        "kyverno-rollout-auto-production-sveltos-prod01",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
    );
    let out = plugin.finish().expect(2);
    // Every cluster line says a count that moved.
    for l in out.stdout.lines().filter(|l| l.contains(": clusters ")) {
        let (from, to) = l
            .split_once(": clusters ")
            .and_then(|(_, t)| t.split_once(" → "))
            .unwrap_or_else(|| panic!("{l}"));
        assert_ne!(Some(from), to.split(' ').next(), "{l}");
        assert_ne!(Some(from), to.split('/').next(), "{l}");
    }
}

#[test]
fn list_watch_says_when_it_reconnects_after_the_server_comes_back() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut plugin = Running::start(&env, &["list", "--watch"]);
    plugin.expect_line(Stream::Stdout, GATE);
    // The API server's storage restarts: watches end, and requests fail until it is back.
    env.server.set_unavailable(true);
    let lost = plugin.expect_line(Stream::Stderr, "connection lost");
    assert_eq!(
        lost,
        "warning: connection lost, retrying… (Internal error occurred: etcdserver: leader changed)\n"
    );
    env.server.set_unavailable(false);
    // A watch resumed says nothing until something comes: the first change says it is back.
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    let back = plugin.expect_line(Stream::Stderr, "reconnected");
    assert_eq!(back, "reconnected: watching again\n");
    let row = plugin.expect_line(Stream::Stdout, GATE);
    assert!(!row.contains("awaiting approval"), "{row}");
}
