//! `kubectl promotion diff`: `-f FILE` through a server-side dry run, and `--stage S` between the
//! generated ClusterProfiles, with kubectl-diff exit codes and `KUBECTL_EXTERNAL_DIFF`.

mod plugin_common;

use plugin_common::*;
use promotion_e2e::fixtures::{World, WorldBuilder};
use serde_json::{json, Value};

fn write(env: &Env, name: &str, v: &Value) -> String {
    let path = env.path(name);
    std::fs::write(&path, serde_saphyr::to_string(v).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

fn chart_version(p: &mut Value, version: &str) {
    p["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!(version);
}

#[test]
fn same_manifest_no_differences_exit_0() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let file = example_path("kyverno-manual-gate.yaml");
    let out = env.run(&["diff", "-f", file.to_str().unwrap()]).expect(0);
    assert_eq!(out.stdout, "");
    // It went through the server (dry run), not a local comparison.
    let dry = env.requests("PATCH", "/clusterpromotions/kyverno-rollout-man");
    assert_eq!(dry.len(), 1);
    assert!(dry[0].query.contains("dryRun=All"));
    assert_eq!(dry[0].content_type, "application/merge-patch+json");
}

#[test]
fn profile_change_shows_the_yaml_diff_and_the_restart() {
    let mut live = example("kyverno-manual-gate.yaml");
    live["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    let env = Env::start(vec![live.clone()]);
    let mut changed = live.clone();
    chart_version(&mut changed, "3.7.0");
    changed["spec"]["stages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "dr", "clusterSelector": {"matchLabels": {"env": "dr"}}}));
    let file = write(&env, "changed.yaml", &changed);
    let out = env
        .run(&["diff", "kyverno-rollout-man", "-f", &file])
        .expect(1);
    let d = &out.stdout;
    assert!(d.starts_with(
        "--- LIVE/config.projectsveltos.io.v1beta1.ClusterPromotion..kyverno-rollout-man\n+++ MERGED/config.projectsveltos.io.v1beta1.ClusterPromotion..kyverno-rollout-man\n"
    ), "{d}");
    assert!(
        d.contains("-      chartVersion: \"3.6.2\"\n+      chartVersion: \"3.7.0\"\n"),
        "{d}"
    );
    assert!(
        d.contains("+  - name: dr\n+    clusterSelector:\n+      matchLabels:\n+        env: dr\n"),
        "{d}"
    );
    // What the server changes shows too: the generation it bumps.
    assert!(d.contains("-  generation: 1\n+  generation: 2\n"), "{d}");
    let e = &out.stderr;
    assert!(e.contains("What applying this does:"), "{e}");
    assert!(e.contains(
        "the pipeline restarts from the first stage (dev): spec.profileSpec changes (helmCharts[kyverno/kyverno-latest].chartVersion: 3.6.2 → 3.7.0)"
    ), "{e}");
    assert!(e.contains("stages added: dr"), "{e}");
    assert!(e.contains("approval of stage \"staging\" (no record of who gave it) reset: spec.profileSpec changed, the new rollout needs a new approval"), "{e}");
    // Nothing was stored.
    assert_eq!(
        env.promotion("kyverno-rollout-man")["spec"]["profileSpec"]["helmCharts"][0]
            ["chartVersion"],
        "3.6.2"
    );
}

#[test]
fn fields_the_server_defaults_and_a_sorted_reorder_are_no_change() {
    let mut live = example("kyverno-manual-gate.yaml");
    live["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    let charts = live["spec"]["profileSpec"]["helmCharts"]
        .as_array_mut()
        .unwrap();
    let mut second = charts[0].clone();
    second["releaseName"] = json!("kyverno-policies");
    second["chartName"] = json!("kyverno/kyverno-policies");
    charts.push(second);
    let env = Env::start(vec![live.clone()]);
    // The manifest in git: the charts in another order (Sveltos sorts them before hashing) and
    // none of the fields the CRD defaults.
    let mut file = live.clone();
    file["spec"]["profileSpec"]["helmCharts"]
        .as_array_mut()
        .unwrap()
        .reverse();
    let profile = file["spec"]["profileSpec"].as_object_mut().unwrap();
    for defaulted in [
        "tier",
        "continueOnConflict",
        "continueOnError",
        "syncMode",
        "reloader",
        "stopMatchingBehavior",
    ] {
        profile.remove(defaulted);
    }
    let path = write(&env, "reordered.yaml", &file);
    let out = env
        .run(&["diff", "kyverno-rollout-man", "-f", &path])
        .expect(1);
    let e = &out.stderr;
    assert!(e.contains("the pipeline does not restart"), "{e}");
    assert!(!e.contains("reset"), "{e}");
    // The stored object keeps the approval: the prediction holds.
    env.kubectl(&["apply", "--server-side", "--force-conflicts", "-f", &path])
        .expect(0);
    assert_eq!(
        env.promotion("kyverno-rollout-man")["spec"]["stages"][1]["trigger"]["manual"]["approved"],
        true
    );
}

#[test]
fn removed_stage_and_new_object() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut fewer = example("kyverno-manual-gate.yaml");
    fewer["spec"]["stages"].as_array_mut().unwrap().remove(2);
    let file = write(&env, "fewer.yaml", &fewer);
    let out = env.run(&["diff", "-f", &file]).expect(1);
    assert!(out.stderr.contains("stages removed: production (Sveltos deletes their ClusterProfiles kyverno-rollout-man-production"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("stage names, order or selectors change"),
        "{}",
        out.stderr
    );

    let mut new = example("kyverno-replicas-pr.yaml");
    new["metadata"]["name"] = json!("brand-new");
    let file = write(&env, "new.yaml", &new);
    let out = env.run(&["diff", "-f", &file]).expect(1);
    assert!(out.stdout.contains("+  name: brand-new"), "{}", out.stdout);
    assert!(
        out.stderr.contains("brand-new does not exist yet"),
        "{}",
        out.stderr
    );
    assert!(env
        .requests("POST", "/clusterpromotions")
        .iter()
        .all(|r| r.query.contains("dryRun=All")));
    assert!(env
        .server
        .store()
        .get("clusterpromotions", None, "brand-new")
        .is_none());
}

#[test]
fn external_diff_program_is_used_with_its_exit_code() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let mut changed = example("kyverno-manual-gate.yaml");
    chart_version(&mut changed, "3.7.0");
    let file = write(&env, "changed.yaml", &changed);
    let out = env
        .run_env(
            &["diff", "-f", &file],
            &[("KUBECTL_EXTERNAL_DIFF", "diff -u -N")],
        )
        .expect(1);
    assert!(out.stdout.contains("/LIVE-"), "{}", out.stdout);
    assert!(out.stdout.contains("/MERGED-"), "{}", out.stdout);
    assert!(out
        .stdout
        .contains("config.projectsveltos.io.v1beta1.ClusterPromotion..kyverno-rollout-man"));
    assert!(
        out.stdout.contains("+      chartVersion: \"3.7.0\""),
        "{}",
        out.stdout
    );

    let same = example_path("kyverno-manual-gate.yaml");
    env.run_env(
        &["diff", "-f", same.to_str().unwrap()],
        &[("KUBECTL_EXTERNAL_DIFF", "diff -u -N")],
    )
    .expect(0);

    // A failing diff program is an error (>1), like kubectl's.
    let script = env.path("broken-diff");
    std::fs::write(&script, "#!/bin/sh\necho broken >&2\nexit 3\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .run_env(
            &["diff", "-f", &file],
            &[("KUBECTL_EXTERNAL_DIFF", script.to_str().unwrap())],
        )
        .expect(2);
    assert!(
        out.stderr.contains("failed (exit status 3)"),
        "{}",
        out.stderr
    );
}

#[test]
fn errors_exit_above_1() {
    let env = Env::with_options(
        promotion_e2e::apiserver::StandInOptions::default().without_promotion_crd(),
    );
    let file = example_path("kyverno-manual-gate.yaml");
    let out = env.run(&["diff", "-f", file.to_str().unwrap()]).expect(2);
    assert!(
        out.stderr.contains("is Sveltos installed?"),
        "{}",
        out.stderr
    );
    let out = env
        .run(&["diff", "x", "-f", file.to_str().unwrap()])
        .expect(2);
    assert!(
        out.stderr.contains("no ClusterPromotion \"x\" in "),
        "{}",
        out.stderr
    );
    let out = env.run(&["diff"]).expect(2);
    assert!(out.stderr.contains("required"), "{}", out.stderr);
}

/// The manual-gate promotion after staging received chart 3.7.0 (new rollout progressing), while
/// production still runs 3.6.2 from the previous rollout.
fn progressive_world() -> World {
    let file = "kyverno-manual-gate.yaml";
    let mut p = example(file);
    chart_version(&mut p, "3.7.0");
    p["spec"]["profileSpec"]["helmCharts"][0]["values"] =
        json!("admissionController:\n  replicas: 3\n");
    // Staging is past its delay, so Sveltos appended this check to its profile: not a difference.
    p["spec"]["stages"][1]["trigger"]["manual"]["postDelayHealthChecks"] = json!([{"name": "kyverno-ready", "featureID": "Helm", "group": "apps", "version": "v1",
                "kind": "Deployment", "namespace": "kyverno",
                "script": "function evaluate() return {healthy=true} end"}]);
    let mut world = world_of(WorldBuilder::new(), vec![(file, p)]);

    // The previous rollout, which reached production.
    let mut old = example(file);
    old["spec"]["profileSpec"]["helmCharts"][0]["values"] =
        json!("admissionController:\n  replicas: 1\n");
    old["status"]["stages"].as_array_mut().unwrap().push(json!({
        "name": "production",
        "lastUpdateReconciledTime": "2026-02-10T07:38:02Z",
        "lastSuccessfulAppliedTime": "2026-02-10T07:40:02Z",
        "currentStatusDescription": "Successfully provisioned (2026-02-10T07:40:02Z)"
    }));
    let previous = world_of(WorldBuilder::new(), vec![(file, old)]);
    let production = previous
        .find("ClusterProfile", "kyverno-rollout-man-production")
        .expect("the previous rollout's production profile")
        .clone();
    world.objects.push(production);
    world
}

#[test]
fn stage_diff_shows_what_the_next_stage_receives() {
    let env = Env::start(progressive_world());
    let out = env
        .run(&["diff", "kyverno-rollout-man", "--stage", "staging"])
        .expect(1);
    let e = &out.stderr;
    assert!(e.contains("Promoting staging → production changes production (ClusterProfile kyverno-rollout-man-production):"), "{e}");
    assert!(
        e.contains("~ helmCharts[kyverno/kyverno-latest].chartVersion: 3.6.2 → 3.7.0"),
        "{e}"
    );
    assert!(
        e.contains(
            "~ helmCharts[kyverno/kyverno-latest].values: (multi-line text) → (multi-line text)"
        ),
        "{e}"
    );
    assert!(
        !e.contains("clusterSelector") && !e.contains("validateHealths"),
        "{e}"
    );
    let d = &out.stdout;
    assert!(
        d.contains("--- kyverno-rollout-man-production/spec (stage production)"),
        "{d}"
    );
    assert!(
        d.contains("+++ kyverno-rollout-man/spec.profileSpec (what production receives)"),
        "{d}"
    );
    assert!(
        d.contains("-  chartVersion: \"3.6.2\"\n+  chartVersion: \"3.7.0\""),
        "{d}"
    );
    assert!(
        !d.contains("+stopMatchingBehavior") && !d.contains("-stopMatchingBehavior"),
        "key order is not a difference: {d}"
    );
    assert!(d.contains("-      replicas: 1\n+      replicas: 3"), "{d}");
    assert!(!d.contains("kyverno-ready"), "{d}");

    // dev → staging: staging already has dev's spec.
    let out = env
        .run(&["diff", "kyverno-rollout-man", "--stage", "dev"])
        .expect(0);
    assert!(
        out.stderr
            .contains("promoting dev → staging changes nothing"),
        "{}",
        out.stderr
    );

    let out = env
        .run(&["diff", "kyverno-rollout-man", "--stage", "production"])
        .expect(2);
    assert!(out.stderr.contains("is the last stage"), "{}", out.stderr);
    let out = env
        .run(&["diff", "kyverno-rollout-man", "--stage", "qa"])
        .expect(2);
    assert!(
        out.stderr
            .contains("has no stage \"qa\" (stages: dev, staging, production)"),
        "{}",
        out.stderr
    );
}

#[test]
fn stage_diff_when_the_next_stage_never_ran() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let out = env
        .run(&["diff", "kyverno-rollout-man", "--stage", "staging"])
        .expect(1);
    assert!(
        out.stderr
            .contains("stage production has no ClusterProfile yet: everything is new to it"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("+ helmCharts added"), "{}", out.stderr);
    assert!(out.stdout.contains("+helmCharts:"), "{}", out.stdout);
}

/// `diff` predicts a restart exactly when Sveltos' hashes differ: an unsorted list reordered is a
/// restart, the same duration written another way is not (a comparison of what was written says
/// the opposite of both).
#[test]
fn restarts_are_predicted_from_sveltos_hashes() {
    let mut live = example("kyverno-manual-gate.yaml");
    live["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    live["spec"]["profileSpec"]["preDeployChecks"] = json!([
        {"name": "crds", "featureID": "Helm", "group": "apiextensions.k8s.io", "version": "v1",
         "kind": "CustomResourceDefinition", "script": "function evaluate() return {healthy = true} end"},
        {"name": "ns", "featureID": "Helm", "group": "", "version": "v1", "kind": "Namespace",
         "script": "function evaluate() return {healthy = true} end"}
    ]);
    live["spec"]["profileSpec"]["helmCharts"][0]["options"] = json!({"timeout": "90s"});
    let env = Env::start(vec![live.clone()]);

    let mut reordered = live.clone();
    reordered["spec"]["profileSpec"]["preDeployChecks"]
        .as_array_mut()
        .unwrap()
        .reverse();
    let path = write(&env, "reordered.yaml", &reordered);
    let out = env
        .run(&["diff", "kyverno-rollout-man", "-f", &path])
        .expect(1);
    assert!(
        out.stderr
            .contains("preDeployChecks reordered (Sveltos hashes this list in order)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("approval of stage \"staging\""),
        "{}",
        out.stderr
    );

    let mut same_duration = live.clone();
    same_duration["spec"]["profileSpec"]["helmCharts"][0]["options"]["timeout"] = json!("1m30s");
    let path = write(&env, "duration.yaml", &same_duration);
    let out = env
        .run(&["diff", "kyverno-rollout-man", "-f", &path])
        .expect(1);
    assert!(
        out.stderr.contains("the pipeline does not restart"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("reset"), "{}", out.stderr);
}

/// Issue 25, item 9: a manifest `kubectl apply` would refuse (a misspelt field, which the dry
/// run drops instead of refusing) is said to be refused first, in lint's words (the same lines
/// `lint` prints), then diffed; the exit code is kubectl diff's for an error.
#[test]
fn a_manifest_apply_would_refuse_is_said_first_in_lints_words_then_diffed() {
    let live = example("kyverno-manual-gate.yaml");
    let env = Env::start(vec![live.clone()]);
    let mut changed = live.clone();
    chart_version(&mut changed, "3.7.0");
    changed["spec"]["stages"][1]["trigger"]["manual"]["dealy"] = json!("5m");
    let file = write(&env, "typo.yaml", &changed);

    let lint = env.run(&["lint", &file]).expect(1);
    let finding = lint
        .stdout
        .lines()
        .find(|l| l.contains("error[schema-unknown-field]"))
        .unwrap_or_else(|| panic!("lint finds the typo: {lint}"))
        .to_string();

    let out = env.run(&["diff", "-f", &file]).expect(2);
    let first = out.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "error: kubectl apply would refuse ClusterPromotion \"kyverno-rollout-man\" from \
             {file} (as `kubectl promotion lint {file}` reports); the diff shows the rest of it:"
        ),
        "{out}"
    );
    assert_eq!(
        out.stderr.lines().nth(1),
        Some(format!("  {finding}").as_str()),
        "{out}"
    );
    // Then the diff, of what the server keeps.
    assert!(
        out.stdout
            .contains("-      chartVersion: \"3.6.2\"\n+      chartVersion: \"3.7.0\"\n"),
        "{out}"
    );
    assert!(!out.stdout.contains("dealy"), "{out}");
}

/// After a spec change restarted the pipeline, a stage the new rollout has not reached still runs
/// the previous rollout's configuration; promoting past it brings the next stage
/// `spec.profileSpec`, not what it runs (issue: diff showed the previous rollout's version).
#[test]
fn stage_diff_after_a_restart_shows_the_spec_not_what_the_stage_ran_before() {
    let mut world = progressive_world();
    let staging = world
        .find_mut("ClusterProfile", "kyverno-rollout-man-staging")
        .expect("staging's profile");
    staging["spec"]["helmCharts"][0]["chartVersion"] = json!("3.6.5");
    let env = Env::start(world);
    let out = env
        .run(&["diff", "kyverno-rollout-man", "--stage", "staging"])
        .expect(1);
    let e = &out.stderr;
    assert!(
        e.contains(
            "stage staging runs a previous rollout's configuration (kyverno/kyverno 3.6.5 → \
             3.7.0): this rollout has not reached it yet; production receives spec.profileSpec, \
             shown below"
        ),
        "{e}"
    );
    assert!(
        e.contains("~ helmCharts[kyverno/kyverno-latest].chartVersion: 3.6.2 → 3.7.0"),
        "{e}"
    );
    assert!(
        out.stdout.contains("+  chartVersion: \"3.7.0\""),
        "{}",
        out.stdout
    );
}
