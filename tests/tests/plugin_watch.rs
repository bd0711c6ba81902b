//! `describe -w` and `list -w` as a rollout reports: each line of `describe -w` carries the time
//! of the change it reports (the API server's time of the write, from the object's managed
//! fields), not the time it is printed; a burst of per-cluster changes is one line; writes that
//! change nothing a view shows print nothing.
//!
//! The stand-in keeps the managed fields an object is stored with ([`Env::put`]), so a test
//! writes a change with a known time as the API server would stamp it. Nothing is ordered by
//! sleeping: a test waits for the line it expects, and a burst is written while the plugin is
//! stopped (SIGSTOP), so that it reaches the plugin whole whatever the machine's speed.

mod plugin_common;

use plugin_common::*;
use promotion_e2e::fixtures::WorldBuilder;
use serde_json::{json, Value};

const AUTO: &str = "kyverno-rollout-auto";

fn summary_name(cluster: &str) -> String {
    format!("{AUTO}-production-sveltos-{cluster}")
}

/// The stored ClusterSummary of a production cluster.
fn stored_summary(env: &Env, cluster: &str) -> Value {
    env.server
        .store()
        .get("clustersummaries", Some("prod"), &summary_name(cluster))
        .unwrap_or_else(|| panic!("the summary of prod/{cluster}"))
}

/// Managed fields as the API server leaves them after addon-controller wrote the status at
/// `time`.
fn written_at(summary: &mut Value, time: &str) {
    summary["metadata"]["managedFields"] = json!([
        {"manager": "addon-controller", "operation": "Update", "time": "2026-02-16T06:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
        {"manager": "addon-controller", "operation": "Update", "subresource": "status",
         "time": time, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}
    ]);
}

/// Play addon-controller: the features of a production cluster now report `features`, written
/// at `time` (as the API server stamps the status write in the managed fields), or, without a
/// time, with no managed fields at all.
fn report(env: &Env, cluster: &str, features: &[(&str, &str, Option<&str>)], time: Option<&str>) {
    let mut s = stored_summary(env, cluster);
    set_features(&mut s, features);
    forget_version(&mut s);
    match time {
        Some(t) => written_at(&mut s, t),
        None => {
            if let Some(m) = s["metadata"].as_object_mut() {
                m.remove("managedFields");
            }
        }
    }
    env.put(s);
}

fn pause(plugin: &Running, stopped: bool) {
    let signal = if stopped {
        libc::SIGSTOP
    } else {
        libc::SIGCONT
    };
    let pid = i32::try_from(plugin.pid()).expect("a pid");
    // SAFETY: signals one process this test started.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal the plugin");
}

/// A change written at a known time, long before the test runs: the lines that report it show
/// that time, not the time they are printed.
#[test]
fn a_line_carries_the_time_of_the_write_it_reports() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let mut plugin = Running::start(&env, &["describe", AUTO, "-w"]);
    plugin.expect_line(Stream::Stdout, "Stages:");
    report(
        &env,
        "prod01",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
        Some("2026-02-16T07:45:00Z"),
    );
    let out = plugin.finish().expect(2);
    let failed = out
        .stdout
        .lines()
        .find(|l| l.contains("stage production: soaking until"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert_eq!(
        failed,
        "2026-02-16T07:45:00Z  stage production: soaking until 2026-02-16T06:36:24Z → failed: 1 \
         cluster failed (1 non-retriable: prod/prod01 Helm FailedNonRetriable: template error)"
    );
    let count = out
        .stdout
        .lines()
        .find(|l| l.contains("stage production: clusters"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert_eq!(
        count,
        "2026-02-16T07:45:00Z  stage production: clusters 1 → 0/1 provisioned"
    );
    assert!(
        out.stdout
            .contains("2026-02-16T07:45:00Z  pipeline kyverno-rollout-auto: progressing → failed"),
        "{}",
        out.stdout
    );
}

/// Thirty clusters turn Provisioned, each in its own write: `describe -w` says so in one line
/// (and no other count line), stamped with the time of the last write.
#[test]
fn a_burst_of_per_cluster_changes_is_one_line() {
    let file = "kyverno-rollout-auto.yaml";
    let env = Env::start(world_of(
        WorldBuilder::new().clusters_per_label_set(30),
        vec![(file, example(file))],
    ));
    let clusters: Vec<String> = (1..=30).map(|n| format!("prod{n:02}")).collect();
    for c in &clusters {
        report(&env, c, &[("Helm", "Provisioning", None)], None);
    }
    let mut plugin = Running::start(&env, &["describe", AUTO, "-w"]);
    plugin.expect_line(Stream::Stdout, "Stages:");
    pause(&plugin, true);
    for (n, c) in clusters.iter().enumerate() {
        let t = format!("2026-02-16T07:50:{n:02}Z");
        report(&env, c, &[("Helm", "Provisioned", None)], Some(&t));
    }
    pause(&plugin, false);
    let line = plugin.expect_line(Stream::Stdout, "stage production: clusters");
    assert_eq!(
        line,
        "2026-02-16T07:50:29Z  stage production: clusters 0 → 30/30 provisioned\n"
    );
    // A last change ends the watch: every count line it printed is then known.
    report(
        &env,
        "prod07",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
        Some("2026-02-16T07:55:00Z"),
    );
    let out = plugin.finish().expect(2);
    let counts: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains(": clusters "))
        .collect();
    assert_eq!(
        counts,
        [
            "2026-02-16T07:50:29Z  stage production: clusters 0 → 30/30 provisioned",
            "2026-02-16T07:55:00Z  stage production: clusters 30 → 29/30 provisioned",
        ],
        "{}",
        out.stdout
    );
}

/// Writes that change nothing the views show (a ClusterSummary rewritten with a later time, the
/// promotion written again as it was) print nothing: the next line is the next real change's.
#[test]
fn writes_that_change_nothing_shown_print_nothing() {
    let env = Env::start(example_world("kyverno-rollout-auto.yaml"));
    let mut describe = Running::start(&env, &["describe", AUTO, "-w"]);
    let mut list = Running::start(&env, &["list", "-w"]);
    describe.expect_line(Stream::Stdout, "Stages:");
    list.expect_line(Stream::Stdout, AUTO);
    let listed = list.stdout.clone();
    // The summary written again as it is, at a later time.
    let mut s = stored_summary(&env, "prod01");
    written_at(&mut s, "2026-02-16T07:40:00Z");
    forget_version(&mut s);
    env.put(s);
    let mut p = env.promotion(AUTO);
    forget_version(&mut p);
    env.put(p);
    // The fence: a change both show.
    report(
        &env,
        "prod01",
        &[("Helm", "FailedNonRetriable", Some("template error"))],
        Some("2026-02-16T07:45:00Z"),
    );
    let row = list.expect_line(Stream::Stdout, AUTO);
    assert!(row.contains("failed"), "{row}");
    assert_eq!(
        list.stdout,
        format!("{listed}{row}"),
        "one row, the fence's"
    );
    let out = describe.finish().expect(2);
    // After the first view, only the fence's lines: each starts with its stamp.
    let stamped = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  ").expect("a pattern");
    let changes: Vec<&str> = out.stdout.lines().filter(|l| stamped.is_match(l)).collect();
    assert!(!changes.is_empty(), "{}", out.stdout);
    assert!(
        changes
            .iter()
            .all(|l| l.starts_with("2026-02-16T07:45:00Z  ")),
        "{}",
        out.stdout
    );
}
