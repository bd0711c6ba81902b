//! The live view tells only what is true now, through the real binary and the stand-in: a
//! generated ClusterProfile name taken by another promotion is not this stage's, a cluster the
//! profile matches without a ClusterSummary is pending, Sveltos' licence refusal is not a
//! cluster failure, `-v=6` logs requests as kubectl does, and a closed pipe ends a command
//! quietly.

mod plugin_common;

use std::process::Stdio;

use plugin_common::*;
use promotion_e2e::fixtures::{self, GENERATED_PROMOTION};
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";

fn describe_json(env: &Env, name: &str) -> Value {
    let out = env.run(&["describe", name, "-o", "json"]).expect(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// `kyverno-rollout` + stage `man-staging` generates `kyverno-rollout-man-staging`, the name of
/// `kyverno-rollout-man`'s staging profile: the profile (and its clusters) stay the other's.
#[test]
fn a_profile_name_taken_by_another_promotion_is_not_this_stages() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut other = example("kyverno-manual-gate.yaml");
    other["metadata"] = json!({"name": "kyverno-rollout"});
    other["spec"]["stages"] = json!([
        {"name": "man-staging", "clusterSelector": {"matchLabels": {"env": "staging"}}}
    ]);
    if let Some(o) = other.as_object_mut() {
        o.remove("status");
    }
    env.put(other);

    let owner = describe_json(&env, GATE);
    assert_eq!(
        owner["stages"][1]["clusterProfile"], "kyverno-rollout-man-staging",
        "{owner}"
    );
    assert!(
        owner["stages"][1]["clusterProfileTaken"].is_null(),
        "{owner}"
    );

    let d = describe_json(&env, "kyverno-rollout");
    let stage = &d["stages"][0];
    assert!(stage["clusterProfile"].is_null(), "{stage}");
    assert!(
        stage["clusterProfileTaken"].as_str().is_some_and(|t| t
            .contains("kyverno-rollout-man-staging")
            && t.contains("kyverno-rollout-man")),
        "{stage}"
    );
    assert!(
        stage["clusters"].is_null() && stage["clusterCounts"].is_null(),
        "another promotion's clusters are not this stage's: {stage}"
    );
    let text = env.run(&["describe", "kyverno-rollout"]).expect(0).stdout;
    assert!(
        text.contains("unknown (the stage's ClusterProfile name is taken)"),
        "{text}"
    );
}

/// A cluster in the profile's `status.matchingClusters` that has no ClusterSummary yet is
/// listed, and counted as pending.
#[test]
fn a_matched_cluster_without_a_cluster_summary_is_pending() {
    let mut world = example_world("kyverno-manual-gate.yaml");
    let profile = world
        .find_mut("ClusterProfile", "kyverno-rollout-man-staging")
        .expect("the staging profile");
    let matching = profile["status"]["matchingClusters"]
        .as_array_mut()
        .expect("matchingClusters");
    let before = matching.len();
    matching.push(json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1",
        "kind": "SveltosCluster",
        "namespace": "staging",
        "name": "staging-new"
    }));
    let env = Env::start(world);
    let d = describe_json(&env, GATE);
    let counts = &d["stages"][1]["clusterCounts"];
    assert_eq!(counts["total"], before + 1, "{counts}");
    assert_eq!(counts["withoutSummary"], 1, "{counts}");
    assert_eq!(counts["pending"], 1, "{counts}");
    let text = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(text.contains("1 with no ClusterSummary yet"), "{text}");
}

/// Sveltos without a licence manages only two ClusterPromotions; the others carry its refusal
/// in `failureMessage`. That is not a cluster failure to fix.
#[test]
fn the_licence_refusal_is_told_as_such() {
    let mut world = example_world("kyverno-manual-gate.yaml");
    let promotion = world
        .find_mut("ClusterPromotion", GATE)
        .expect("the promotion");
    promotion["status"]["stages"][1]["failureMessage"] =
        json!("license is required to manage ClusterPromotion");
    let env = Env::start(world);
    let d = describe_json(&env, GATE);
    assert_eq!(d["phase"], "blocked", "{d}");
    assert_eq!(d["stages"][1]["state"], "blocked", "{}", d["stages"][1]);
    let message = d["stages"][1]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "Sveltos refuses to run this ClusterPromotion: license is required to manage \
             ClusterPromotion"
        ),
        "{message}"
    );
    let text = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(!text.contains("fix the failing clusters"), "{text}");
    let out = env
        .run(&["wait", GATE, "--for=complete", "--timeout=5s"])
        .expect(2);
    assert!(out.stderr.contains("license is required"), "{}", out.stderr);
}

/// `-v=6`: one line per request on stderr, as kubectl's `round_trippers` logs it: method, URL,
/// status and latency; stdout unchanged.
#[test]
fn v6_logs_each_request_with_status_and_latency() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let quiet = env.run(&["list"]).expect(0);
    let out = env.run(&["list", "-v=6"]).expect(0);
    assert_eq!(out.stdout, quiet.stdout);
    let line = regex::Regex::new(
        r"^I\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ request_log\.rs\] (GET|POST|PATCH) https://127\.0\.0\.1:\d+/\S+ \d{3} [A-Za-z ]+ in \d+ milliseconds$",
    )
    .unwrap();
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(!lines.is_empty(), "no request logged");
    for l in &lines {
        assert!(line.is_match(l), "{l:?}");
    }
    assert!(
        lines.iter().any(|l| l
            .contains("/apis/config.projectsveltos.io/v1beta1/clusterpromotions ")
            && l.contains(" 200 OK ")),
        "{lines:?}"
    );
    // Below 6, nothing is logged.
    assert_eq!(env.run(&["list", "-v=5"]).expect(0).stderr, "");
}

/// `describe -o json | head -c 100`: the plugin meets a closed pipe long before it is done and
/// ends quietly, as every Unix tool does (killed by SIGPIPE), never with a panic or exit 101.
#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let env = Env::start(fixtures::generate(20, 2_000));
    for args in [
        vec!["describe", GENERATED_PROMOTION, "-o", "json"],
        vec!["describe", GENERATED_PROMOTION, "--all-clusters"],
        vec!["list", "-o", "yaml"],
    ] {
        let mut child = env
            .cmd()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 100];
        let _ = std::io::Read::read(&mut stdout, &mut first);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.success() || out.status.signal() == Some(SIGPIPE),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
}

/// Linux's signal number for SIGPIPE.
const SIGPIPE: i32 = 13;
