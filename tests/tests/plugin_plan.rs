//! `kubectl promotion plan` against the stand-in API server: the fleet listed live gives the same
//! plan as the same fleet written by `kubectl get … -o yaml` and planned offline, every hazard is
//! reported where the generated fleet puts it, at 20,000 clusters × 20 stages too.

mod plugin_common;

use std::collections::{BTreeMap, BTreeSet};

use plugin_common::*;
use promotion_e2e::fixtures::{
    self, stage_name, Cluster, FleetCluster, WorldBuilder, FLEET_PROMOTION,
};
use serde_json::{json, Value};

/// Run the plugin and parse its `-o json` plan.
fn plan_json(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["plan"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let out = env.run(&all).expect(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The fleet written the way the issue asks for it, by the real kubectl, and the promotion as
/// stored, both to files in the env's directory.
fn offline_inputs(env: &Env, promotion: &str) -> (String, String) {
    let fleet = env
        .kubectl(&["get", "sveltosclusters", "-A", "-o", "yaml"])
        .expect(0);
    let fleet_path = env.path("fleet.yaml");
    std::fs::write(&fleet_path, &fleet.stdout).unwrap();
    let rollout = env
        .kubectl(&["get", "clusterpromotion", promotion, "-o", "yaml"])
        .expect(0);
    let rollout_path = env.path("rollout.yaml");
    std::fs::write(&rollout_path, &rollout.stdout).unwrap();
    (
        rollout_path.display().to_string(),
        fleet_path.display().to_string(),
    )
}

/// What the plan of [`fixtures::fleet`] must say, from the rules its module documents, written
/// out independently of the plugin's matcher.
struct Expected {
    /// Per stage: (cluster ids in order, paused, not ready).
    stages: Vec<(Vec<String>, usize, usize)>,
    unreached: usize,
    /// (code, stages, clusters) in the order the plan lists hazards.
    hazards: Vec<(String, Vec<String>, Vec<String>)>,
    /// Clusters the corrected last stage would reach.
    typo_fix_reach: usize,
}

fn expected(stages: usize, clusters: usize) -> Expected {
    let all = fixtures::fleet_clusters(stages, clusters);
    let mut sorted: Vec<&FleetCluster> = all.iter().collect();
    sorted.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let last = stages - 1;
    let in_stage = |c: &FleetCluster, k: usize| -> bool {
        match k {
            0 => c.canary,
            _ if k == last => false,
            2 => c.stage == 2 && !c.decommissioned && !c.canary,
            _ => c.stage == k && !c.decommissioned,
        }
    };
    let mut per_stage = Vec::new();
    let mut hazards = Vec::new();
    for k in 0..stages {
        let members: Vec<&&FleetCluster> = sorted.iter().filter(|c| in_stage(c, k)).collect();
        let ids: Vec<String> = members.iter().map(|c| c.id()).collect();
        let paused: Vec<String> = members
            .iter()
            .filter(|c| c.paused)
            .map(|c| c.id())
            .collect();
        let not_ready: Vec<String> = members
            .iter()
            .filter(|c| !c.ready)
            .map(|c| c.id())
            .collect();
        if k == last {
            hazards.push((
                "stage-matches-no-cluster".into(),
                vec![stage_name(k)],
                vec![],
            ));
            hazards.push(("selector-typo".into(), vec![stage_name(k)], vec![]));
        }
        if !paused.is_empty() {
            hazards.push(("cluster-paused".into(), vec![stage_name(k)], paused.clone()));
        }
        if !not_ready.is_empty() {
            hazards.push((
                "cluster-not-ready".into(),
                vec![stage_name(k)],
                not_ready.clone(),
            ));
        }
        if k == 0 {
            // Canary clusters also in their regular stage, grouped by that stage.
            let mut groups: BTreeMap<usize, Vec<String>> = BTreeMap::new();
            for c in &members {
                if (1..last).contains(&c.stage) && in_stage(c, c.stage) {
                    groups.entry(c.stage).or_default().push(c.id());
                }
            }
            for (stage, ids) in groups {
                hazards.push((
                    "cluster-in-several-stages".into(),
                    vec![stage_name(0), stage_name(stage)],
                    ids,
                ));
            }
        }
        per_stage.push((ids, paused.len(), not_ready.len()));
    }
    let unreached = all
        .iter()
        .filter(|c| (0..stages).all(|k| !in_stage(c, k)))
        .count();
    let typo_fix_reach = all
        .iter()
        .filter(|c| c.stage == last && !c.decommissioned)
        .count();
    Expected {
        stages: per_stage,
        unreached,
        hazards,
        typo_fix_reach,
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn check_against_rules(plan: &Value, stages: usize, clusters: usize) {
    let want = expected(stages, clusters);
    let got_stages = plan["stages"].as_array().unwrap();
    assert_eq!(got_stages.len(), stages);
    for (k, (stage, (ids, paused, not_ready))) in got_stages.iter().zip(&want.stages).enumerate() {
        assert_eq!(stage["name"], stage_name(k).as_str());
        let got_ids: Vec<String> = stage["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}/{}",
                    c["namespace"].as_str().unwrap(),
                    c["name"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(&got_ids, ids, "stage {k} clusters");
        assert_eq!(stage["count"], ids.len(), "stage {k}");
        assert_eq!(stage["paused"], *paused, "stage {k} paused");
        assert_eq!(stage["notReady"], *not_ready, "stage {k} not ready");
    }
    assert_eq!(plan["unreached"], want.unreached);
    assert_eq!(plan["inventory"], clusters);
    let got: Vec<(String, Vec<String>, Vec<String>)> = plan["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["code"].as_str().unwrap().to_string(),
                strings(&h["stages"]),
                strings(&h["clusters"]),
            )
        })
        .collect();
    assert_eq!(got.len(), want.hazards.len(), "hazard count");
    // The plan orders hazards by stage; within a stage the generated expectation uses the same
    // order, except that overlaps are listed after the stage's own hazards.
    let as_set = |v: &[(String, Vec<String>, Vec<String>)]| -> BTreeSet<String> {
        v.iter().map(|h| format!("{h:?}")).collect()
    };
    assert_eq!(as_set(&got), as_set(&want.hazards));
    let typo = plan["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["code"] == "selector-typo")
        .unwrap();
    assert_eq!(typo["suggestion"]["with"], "env=prod");
    assert_eq!(typo["suggestion"]["replaces"], "env=production");
    assert_eq!(typo["suggestion"]["carriers"], clusters);
    assert_eq!(typo["suggestion"]["clusters"], want.typo_fix_reach);
}

#[test]
fn live_and_offline_plans_agree_and_report_every_hazard() {
    let (stages, clusters) = (6, 1_200);
    let env = Env::start(fixtures::fleet(stages, clusters));
    let live = plan_json(&env, &[FLEET_PROMOTION]);
    check_against_rules(&live, stages, clusters);
    assert_eq!(live["kind"], "PromotionPlan");
    assert_eq!(live["name"], FLEET_PROMOTION);
    // The fleet is listed in pages, as kubectl would.
    let lists = env.requests("GET", "/sveltosclusters");
    assert_eq!(lists.len(), clusters.div_ceil(500), "{lists:?}");
    assert!(
        lists.iter().all(|r| r.query.contains("limit=500")),
        "{lists:?}"
    );

    let (rollout, fleet) = offline_inputs(&env, FLEET_PROMOTION);
    let before = env.server.requests().len();
    let offline = plan_json(&env, &["-f", &rollout, "--clusters", &fleet]);
    assert_eq!(offline, live, "offline plan differs from the live one");
    assert_eq!(
        env.server.requests().len(),
        before,
        "-f with --clusters must not contact the server"
    );
    // The promotion from the file, the fleet from the cluster: the same plan again.
    let mixed = plan_json(&env, &["-f", &rollout]);
    assert_eq!(mixed, live);
}

/// At fleet scale. The stand-in scans every remaining object to answer a page, so the fleet is
/// read in pages of 5,000 here (the default 500 is checked above); the offline run reads the
/// stored objects as one JSON `List`, what `kubectl get … -o json` prints (kubectl's own output
/// is compared on the smaller fleet above).
#[test]
fn twenty_thousand_clusters_twenty_stages() {
    let (stages, clusters) = (20, 20_000);
    let env = Env::start(fixtures::fleet(stages, clusters));
    let live = plan_json(&env, &[FLEET_PROMOTION, "--chunk-size", "5000"]);
    check_against_rules(&live, stages, clusters);
    let lists = env.requests("GET", "/sveltosclusters");
    assert_eq!(lists.len(), 4, "{lists:?}");

    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": env.server.store().list("sveltosclusters", None)
    });
    let fleet_path = env.path("fleet.json");
    std::fs::write(&fleet_path, list.to_string()).unwrap();
    let rollout_path = env.path("rollout.json");
    std::fs::write(&rollout_path, env.promotion(FLEET_PROMOTION).to_string()).unwrap();
    let offline = plan_json(
        &env,
        &[
            "-f",
            &rollout_path.display().to_string(),
            "--clusters",
            &fleet_path.display().to_string(),
        ],
    );
    assert_eq!(offline, live);
}

/// A promotion `name` rolling kyverno 3.6.2 through `stages`.
fn kyverno_promotion(name: &str, stages: Value) -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": name},
        "spec": {
            "profileSpec": {"helmCharts": [{
                "repositoryURL": "https://kyverno.github.io/kyverno/", "repositoryName": "kyverno",
                "chartName": "kyverno/kyverno", "chartVersion": "3.6.2",
                "releaseName": "kyverno-latest", "releaseNamespace": "kyverno",
                "helmChartAction": "Install"}]},
            "stages": stages,
        }
    })
}

/// The "done when": a label typo fails `--strict` and names the fix, live as offline.
#[test]
fn label_typo_fails_strict_and_names_the_fix() {
    let promotion = kyverno_promotion(
        "kyverno-rollout",
        json!([
            {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
             "trigger": {"auto": {"delay": "5m"}}},
            {"name": "production", "clusterSelector": {"matchLabels": {"env": "production"}}}
        ]),
    );
    let mut clusters = vec![Cluster::new("staging", "staging01", &[("env", "staging")])];
    for i in 1..=12 {
        clusters.push(Cluster::new(
            "prod",
            &format!("prod{i:02}"),
            &[("env", "prod")],
        ));
    }
    let mut builder = fixtures::WorldBuilder::new().with_clusters(clusters);
    builder
        .add(fixtures::Example {
            file: "typo.yaml".into(),
            promotion,
        })
        .unwrap();
    let env = Env::start(builder.build());
    env.kube.install_plugin().unwrap();

    let live = env
        .kubectl(&["promotion", "plan", "kyverno-rollout", "--strict"])
        .expect(1);
    let fix = "did you mean env=prod instead of env=production? 12 clusters carry it";
    assert!(live.stdout.contains(fix), "{}", live.stdout);
    assert!(live
        .stdout
        .contains("2. production   env=production   → no cluster"));
    assert!(live
        .stdout
        .contains("warning[stage-matches-no-cluster] stage production"));
    env.run(&["plan", "kyverno-rollout"]).expect(0);

    let (rollout, fleet) = offline_inputs(&env, "kyverno-rollout");
    let offline = env
        .run(&["plan", "-f", &rollout, "--clusters", &fleet, "--strict"])
        .expect(1);
    assert_eq!(offline.stdout, live.stdout);

    // The timeline shows the empty stage deployed at once, under its own name: the
    // simulation reads the decisions' steps, not their messages (the controller's Warning about
    // a stage that matches no cluster once leaked into the STAGE column).
    let timeline = env
        .run(&["plan", "-f", &rollout, "--clusters", &fleet, "--timeline"])
        .expect(0);
    let deployed: Vec<&str> = timeline
        .stdout
        .lines()
        .filter(|l| l.ends_with(" deployed"))
        .collect();
    assert_eq!(deployed.len(), 2, "{}", timeline.stdout);
    assert!(
        deployed[1].split_whitespace().collect::<Vec<_>>()[1..] == ["production", "deployed"],
        "{}",
        timeline.stdout
    );
}

#[test]
fn connection_and_lookup_errors_exit_2() {
    let env = Env::start(fixtures::fleet(3, 10));
    let missing = env.run(&["plan", "nope"]).expect(2);
    assert!(
        missing
            .stderr
            .contains("clusterpromotion.config.projectsveltos.io \"nope\" not found"),
        "{}",
        missing.stderr
    );
    let kubeconfig = env.kubeconfig().to_path_buf();
    drop(env.server);
    let mut cmd = env.kube.command(plugin_bin());
    cmd.args(["plan", FLEET_PROMOTION, "--kubeconfig"])
        .arg(&kubeconfig);
    let down = promotion_e2e::bins::run(&mut cmd).unwrap().expect(2);
    assert!(
        down.stderr.contains("unable to connect to the server"),
        "{}",
        down.stderr
    );
}

/// `describe` tells, for each stage not started, what `plan` says it will reach: the same
/// counts, from the same computation.
#[test]
fn describe_says_what_each_stage_not_started_will_reach() {
    let (stages, clusters) = (6, 300);
    let env = Env::start(fixtures::fleet(stages, clusters));
    let plan = plan_json(&env, &[FLEET_PROMOTION]);
    let out = env
        .run(&["describe", FLEET_PROMOTION, "-o", "json"])
        .expect(0);
    let described: Value = serde_json::from_str(&out.stdout).unwrap();
    let planned = plan["stages"].as_array().unwrap();
    let stages_described = described["stages"].as_array().unwrap();
    assert_eq!(stages_described.len(), stages);
    let mut reaching = 0;
    for (d, p) in stages_described.iter().zip(planned) {
        assert_eq!(d["state"], "notStarted", "{d}");
        let members = p["clusters"].as_array().unwrap();
        let count = |f: &dyn Fn(&Value) -> bool| members.iter().filter(|c| f(c)).count();
        assert_eq!(
            d["willReach"],
            json!({
                "clusters": members.len(),
                "paused": count(&|c| c["paused"] == true),
                "notReady": count(&|c| c["ready"] == false),
            }),
            "stage {}",
            d["name"]
        );
        reaching += usize::from(!members.is_empty());
    }
    assert!(reaching >= 2, "the fleet reaches several stages: {plan}");

    let text = env.run(&["describe", FLEET_PROMOTION]).expect(0).stdout;
    let first = planned[0]["clusters"].as_array().unwrap().len();
    assert!(
        text.contains(&format!("Will reach:     {first} cluster")),
        "{text}"
    );
    // The last stage's selector has a typo: it reaches nothing, and describe says what follows.
    assert!(
        text.contains(
            "no cluster of the fleet (the reconciler will count the stage as deployed at once"
        ),
        "{text}"
    );
}

/// `promotion` with the hashes of its spec in its status, as a reconciler writes them (the
/// examples' statuses carry none: a timeline of such a status starts the rollout over).
fn reconciled(mut promotion: Value) -> Value {
    promotion["status"]["stagesHash"] = json!("");
    fixtures::hash_status_as_sveltos(&mut promotion);
    promotion
}

/// `plan NAME --timeline` reads the promotion and the fleet from the cluster and continues the
/// rollout from the status: the manual-gate example waits at staging until it is approved.
#[test]
fn a_live_timeline_continues_from_the_status() {
    let file = "kyverno-manual-gate.yaml";
    let env = Env::start(world_of(
        WorldBuilder::new(),
        vec![(file, reconciled(example(file)))],
    ));
    let timeline = plan_json(
        &env,
        &[
            "kyverno-rollout-man",
            "--timeline",
            "--start",
            "2026-02-16T08:00:00Z",
        ],
    );
    assert_eq!(timeline["kind"], "PromotionTimeline");
    let steps = timeline["steps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s["stage"] == "staging" && s["what"] == "waitsForApproval"),
        "{timeline}"
    );
    assert!(
        steps.iter().all(|s| s["stage"] != "production"),
        "{timeline}"
    );
    assert_eq!(timeline.get("completes"), None);
    // dev passed before the start: dated by its status, not by the start.
    assert!(
        steps.iter().any(|s| s["stage"] == "dev"
            && s["what"] == "passes"
            && s["time"] == "2026-02-16T07:29:41Z"),
        "{timeline}"
    );
    let approved = plan_json(
        &env,
        &[
            "kyverno-rollout-man",
            "--timeline",
            "--start",
            "2026-02-16T08:00:00Z",
            "--approve-at",
            "staging=+1h",
        ],
    );
    assert_eq!(approved["completes"], "2026-02-16T09:00:00Z", "{approved}");
}

/// `plan NAME --timeline` on a promotion whose status shows it complete says since when, not
/// that it does not complete.
#[test]
fn a_complete_promotion_is_complete_since_its_last_stage_passed() {
    let file = "kyverno-manual-gate.yaml";
    let mut p = example(file);
    p["status"]["currentStageName"] = json!("production");
    p["status"]["stages"][1]["currentStatusDescription"] =
        json!("Successfully provisioned (2026-02-16T07:40:02Z)");
    p["status"]["stages"].as_array_mut().unwrap().push(json!({
        "name": "production",
        "currentStatusDescription": "Successfully provisioned (2026-02-16T07:45:00Z)",
        "lastSuccessfulAppliedTime": "2026-02-16T07:45:00Z",
        "lastUpdateReconciledTime": "2026-02-16T07:40:02Z"}));
    let env = Env::start(world_of(WorldBuilder::new(), vec![(file, reconciled(p))]));
    let args = [
        "kyverno-rollout-man",
        "--timeline",
        "--start",
        "2026-02-16T08:00:00Z",
    ];
    let timeline = plan_json(&env, &args);
    assert_eq!(timeline["completes"], "2026-02-16T07:45:00Z", "{timeline}");
    assert_eq!(timeline["alreadyComplete"], true, "{timeline}");
    let mut text = vec!["plan"];
    text.extend_from_slice(&args);
    let out = env.run(&text).expect(0);
    assert!(
        out.stdout.contains("Complete since 2026-02-16T07:45:00Z"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("Does not complete"), "{}", out.stdout);
}

/// Issue 32 item 9: prod deployed on a Saturday, then "waiting for window until Monday". `plan`
/// says, live and offline, that a window on the last stage holds back only the completion, and
/// its timeline shows exactly that: prod deployed at once, complete when the window opens.
#[test]
fn a_window_on_the_last_stage_is_a_hazard_that_names_where_it_belongs() {
    let promotion = kyverno_promotion(
        "weekday-prod",
        json!([
            {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
             "trigger": {"auto": {"delay": "1h"}}},
            {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}},
             "trigger": {"auto": {"promotionWindow": {"from": "0 9 * * 1", "to": "0 17 * * 5"}}}}
        ]),
    );
    let clusters = vec![
        Cluster::new("staging", "staging01", &[("env", "staging")]),
        Cluster::new("prod", "prod01", &[("env", "prod")]),
    ];
    let mut builder = WorldBuilder::new().with_clusters(clusters);
    builder
        .add(fixtures::Example {
            file: "weekday-prod.yaml".into(),
            promotion,
        })
        .unwrap();
    let env = Env::start(builder.build());

    let plan = plan_json(&env, &["weekday-prod"]);
    let hazards = plan["hazards"].as_array().unwrap();
    assert_eq!(hazards.len(), 1, "{plan}");
    assert_eq!(hazards[0]["code"], "last-stage-window");
    assert_eq!(hazards[0]["stages"], json!(["prod"]));
    let message = hazards[0]["message"].as_str().unwrap();
    for part in [
        "the window (from \"0 9 * * 1\" to \"0 17 * * 5\") is on the last stage, prod",
        "it does not hold back prod's deployment",
        "its clusters get the change as soon as stage staging lets the pipeline move on",
        "only delays marking the promotion complete until the window opens",
        "move it to stage staging's trigger (spec.stages[0].trigger.auto.promotionWindow)",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }

    let strict = env.run(&["plan", "weekday-prod", "--strict"]).expect(1);
    assert!(
        strict
            .stdout
            .contains("1 hazard:\n  warning[last-stage-window] the window"),
        "{}",
        strict.stdout
    );
    let (rollout, fleet) = offline_inputs(&env, "weekday-prod");
    let offline = env
        .run(&["plan", "-f", &rollout, "--clusters", &fleet, "--strict"])
        .expect(1);
    assert_eq!(offline.stdout, strict.stdout);

    // What the hazard says, as the timeline computes it: started on Saturday 10:00, prod is
    // deployed at 11:00 the same day, and the promotion completes on Monday at 09:00.
    let timeline = plan_json(
        &env,
        &[
            "-f",
            &rollout,
            "--clusters",
            &fleet,
            "--timeline",
            "--start",
            "2026-03-07T10:00:00Z",
        ],
    );
    let steps = timeline["steps"].as_array().unwrap();
    let prod = |what: &str| {
        steps
            .iter()
            .find(|s| s["stage"] == "prod" && s["what"] == what)
            .and_then(|s| s["time"].as_str())
            .unwrap_or_else(|| panic!("no prod {what} in {timeline}"))
    };
    assert_eq!(prod("deployed"), "2026-03-07T11:00:00Z", "{timeline}");
    assert!(
        timeline["completes"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-03-09T09:00")),
        "{timeline}"
    );
}
