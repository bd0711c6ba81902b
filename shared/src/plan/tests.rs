//! Plans of small fleets: what each stage reaches, and every hazard.

use serde_json::{json, Value};

use super::*;

fn promotion(stages: Value, profile_spec: Value) -> ClusterPromotion {
    serde_json::from_value(json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "rollout"},
        "spec": {"profileSpec": profile_spec, "stages": stages}
    }))
    .unwrap()
}

fn kyverno() -> Value {
    json!({"helmCharts": [{"releaseName": "kyverno", "releaseNamespace": "kyverno"}]})
}

fn stage(name: &str, match_labels: Value) -> Value {
    json!({"name": name, "clusterSelector": {"matchLabels": match_labels}})
}

/// Kyverno rolled out through `stages`, each `(name, env)` selecting the clusters labelled
/// `env: <env>`.
fn kyverno_by_env(stages: &[(&str, &str)]) -> ClusterPromotion {
    let stages = stages
        .iter()
        .map(|(name, env)| stage(name, json!({ "env": env })))
        .collect();
    promotion(Value::Array(stages), kyverno())
}

/// Three stages, each reaching its part of [`fleet`].
const DEV_STAGING_PRODUCTION: &[(&str, &str)] = &[
    ("dev", "dev"),
    ("staging", "staging"),
    ("production", "prod"),
];

fn cluster(ns: &str, name: &str, labels: &[(&str, &str)]) -> Cluster {
    Cluster::ready_sveltos(ns, name, labels)
}

fn fleet() -> Vec<Cluster> {
    let mut out = vec![
        cluster("dev", "dev01", &[("env", "dev")]),
        cluster("staging", "stg01", &[("env", "staging")]),
        cluster("staging", "stg02", &[("env", "staging")]),
    ];
    for i in 1..=12 {
        out.push(cluster("prod", &format!("prod{i:02}"), &[("env", "prod")]));
    }
    out.push(cluster("lab", "lab01", &[("env", "lab")]));
    out
}

fn codes(plan: &Plan) -> Vec<(HazardCode, Vec<String>)> {
    plan.hazards
        .iter()
        .map(|h| (h.code, h.stages.clone()))
        .collect()
}

#[test]
fn clean_pipeline_reaches_each_stage_and_has_no_hazard() {
    let p = kyverno_by_env(DEV_STAGING_PRODUCTION);
    let plan = plan(&p, &fleet());
    assert_eq!(plan.hazards, vec![]);
    let counts: Vec<(&str, usize)> = plan
        .stages
        .iter()
        .map(|s| (s.name.as_str(), s.count))
        .collect();
    assert_eq!(counts, vec![("dev", 1), ("staging", 2), ("production", 12)]);
    assert_eq!(plan.unreached, 1, "lab01 is in no stage");
    assert_eq!(plan.inventory, 16);
    let first = &plan.stages[2].clusters[0];
    assert_eq!(
        (first.namespace.as_str(), first.name.as_str()),
        ("prod", "prod01")
    );
    assert_eq!(
        first.matched_labels.get("env").map(String::as_str),
        Some("prod")
    );
    let reach = reach(&p, &fleet());
    assert_eq!(
        reach.iter().map(|r| r.clusters).collect::<Vec<_>>(),
        vec![1, 2, 12]
    );
}

/// The example: `env: production` against clusters labelled `env: prod`.
#[test]
fn label_typo_matches_no_cluster_and_names_the_fix() {
    let p = kyverno_by_env(&[("staging", "staging"), ("production", "production")]);
    let plan = plan(&p, &fleet());
    assert_eq!(plan.stages[1].count, 0);
    assert_eq!(
        codes(&plan),
        vec![
            (
                HazardCode::StageMatchesNoCluster,
                vec!["production".to_string()]
            ),
            (HazardCode::SelectorTypo, vec!["production".to_string()]),
        ]
    );
    assert!(
        plan.hazards[0]
            .message
            .contains("counts it as deployed at once"),
        "{}",
        plan.hazards[0].message
    );
    assert!(plan.hazards[0]
        .message
        .ends_with("the rollout completes without deploying anything at this stage"));
    assert_eq!(
        plan.hazards[1].message,
        "stage production matches no cluster: did you mean env=prod instead of env=production? \
         12 clusters carry it"
    );
    let fix = plan.hazards[1].suggestion.as_ref().unwrap();
    assert_eq!((fix.with.as_str(), fix.clusters), ("env=prod", 12));
}

#[test]
fn empty_and_invalid_selectors_match_nothing_and_say_why() {
    let p = promotion(
        json!([
            {"name": "canary"},
            {"name": "dev", "clusterSelector": {"matchExpressions": [
                {"key": "env", "operator": "in", "values": ["dev"]}]}},
            {"name": "staging", "clusterSelector": {}},
            stage("production", json!({"env": "prod"}))
        ]),
        kyverno(),
    );
    let plan = plan(&p, &fleet());
    assert_eq!(
        plan.stages[0].selector_error.as_deref(),
        Some("the clusterSelector is empty")
    );
    assert!(plan.stages[1]
        .selector_error
        .as_deref()
        .unwrap()
        .starts_with("matchExpressions[0].operator: \"in\" is not a valid"));
    let messages: Vec<&str> = plan.hazards.iter().map(|h| h.message.as_str()).collect();
    assert_eq!(plan.hazards.len(), 3, "{messages:#?}");
    assert!(messages[0].starts_with("stage canary has no clusterSelector"));
    assert!(messages[0].contains("moves on to dev"));
    assert!(messages[1].starts_with(
        "stage dev: clusterSelector.matchExpressions[0].operator \"in\" is not a valid label selector operator"
    ));
    assert!(messages[2].starts_with("stage staging has no clusterSelector (or an empty one)"));
    assert!(messages[2].contains("moves on to production"));
}

#[test]
fn clusters_in_several_stages_are_grouped_and_receive_the_change_first() {
    let mut f = fleet();
    // Two production clusters also carry the canary ring.
    for c in f
        .iter_mut()
        .filter(|c| c.name == "prod01" || c.name == "prod02")
    {
        c.labels.insert("ring".into(), "canary".into());
    }
    let p = promotion(
        json!([
            stage("canary", json!({"ring": "canary"})),
            stage("staging", json!({"env": "staging"})),
            {"name": "production", "clusterSelector": {"matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "staging"]}]}}
        ]),
        json!({"tier": 50, "helmCharts": [{"releaseName": "x"}], "policyRefs": [{"name": "p"}]}),
    );
    let plan = plan(&p, &f);
    assert_eq!(
        codes(&plan),
        vec![
            (
                HazardCode::ClusterInSeveralStages,
                vec!["canary".to_string(), "production".to_string()]
            ),
            (
                HazardCode::ClusterInSeveralStages,
                vec!["staging".to_string(), "production".to_string()]
            ),
        ]
    );
    let canary = &plan.hazards[0];
    assert_eq!(canary.clusters, vec!["prod/prod01", "prod/prod02"]);
    assert!(canary.message.starts_with(
        "2 clusters (prod/prod01, prod/prod02) are selected by stages canary and production: \
         they receive the change at canary, the first of them."
    ));
    assert!(
        canary.message.contains(
            "the first of them. The ClusterProfile of production also targets them: every \
             stage profile has the same tier (50)"
        ),
        "{}",
        canary.message
    );
    assert!(canary
        .message
        .contains("keeps the Helm releases and resources"));
    assert!(canary.message.contains("FailedNonRetriable"));
    assert!(canary
        .message
        .ends_with("production never counts as provisioned: the pipeline stalls there"));
    let prod01 = plan.stages[2]
        .clusters
        .iter()
        .find(|c| c.name == "prod01")
        .unwrap();
    assert_eq!(prod01.reached_earlier_by, vec!["canary"]);
    assert!(plan.stages[0].clusters[0].reached_earlier_by.is_empty());
}

#[test]
fn paused_and_not_ready_clusters_are_counted_and_explained() {
    let mut f = fleet();
    for c in f.iter_mut() {
        match c.name.as_str() {
            "stg01" => c.paused = true,
            "prod03" | "prod04" => c.ready = false,
            "dev01" => c.ready = false,
            _ => {}
        }
    }
    f.push(Cluster {
        cluster_type: ClusterType::Capi,
        namespace: "prod".into(),
        name: "capi01".into(),
        labels: [("env".to_string(), "prod".to_string())].into(),
        paused: true,
        ready: false,
        shard: Some("shard-b".into()),
    });
    let p = kyverno_by_env(DEV_STAGING_PRODUCTION);
    let plan = plan(&p, &f);
    assert_eq!(
        codes(&plan),
        vec![
            (HazardCode::ClusterNotReady, vec!["dev".to_string()]),
            (HazardCode::ClusterPaused, vec!["staging".to_string()]),
            (HazardCode::ClusterPaused, vec!["production".to_string()]),
            (HazardCode::ClusterNotReady, vec!["production".to_string()]),
        ]
    );
    assert!(plan.hazards[0]
        .message
        .ends_with("with none of its clusters ready, the stage would count as deployed at once"));
    let paused = &plan.hazards[1];
    assert_eq!(paused.clusters, vec!["staging/stg01"]);
    assert!(paused.message.starts_with(
        "1 of stage staging's 2 clusters is paused (staging/stg01): Sveltos creates its \
         ClusterSummary but deploys nothing to a paused cluster, so stage staging is not \
         provisioned, and the pipeline does not move past it, until it is unpaused"
    ));
    let not_ready = &plan.hazards[3];
    assert_eq!(
        not_ready.clusters,
        vec!["prod/capi01", "prod/prod03", "prod/prod04"]
    );
    assert!(not_ready
        .message
        .contains("3 of stage production's 13 clusters are not ready"));
    assert!(not_ready.message.contains(
        "SveltosCluster status.ready is not true, or the Cluster API control plane is not \
         initialized): Sveltos neither matches nor deploys"
    ));
    let production = &plan.stages[2];
    assert_eq!(
        (production.count, production.paused, production.not_ready),
        (13, 1, 3)
    );
    assert_eq!(production.clusters[0].cluster_type, ClusterType::Capi);
    assert_eq!(production.clusters[0].shard.as_deref(), Some("shard-b"));
    let reach = reach(&p, &f);
    assert_eq!(
        (reach[2].clusters, reach[2].paused, reach[2].not_ready),
        (13, 1, 3)
    );
}

#[test]
fn json_shape_matches_the_documented_output() {
    let p = kyverno_by_env(&[("dev", "dev"), ("prod", "production")]);
    let value = serde_json::to_value(plan(&p, &fleet())).unwrap();
    assert_eq!(
        value["stages"][0]["clusters"][0],
        json!({"type": "Sveltos", "namespace": "dev", "name": "dev01", "paused": false,
               "ready": true, "matchedLabels": {"env": "dev"}})
    );
    assert_eq!(value["unreached"], 15);
    assert_eq!(value["hazards"][0]["code"], "stage-matches-no-cluster");
    assert_eq!(value["hazards"][0]["stages"], json!(["prod"]));
    assert_eq!(value["hazards"][0]["clusters"], json!([]));
    assert_eq!(value["hazards"][1]["code"], "selector-typo");
    assert_eq!(value["hazards"][1]["suggestion"]["with"], "env=prod");
}

#[test]
fn empty_fleet_and_no_stages() {
    let p = kyverno_by_env(&[("dev", "dev")]);
    let plan = plan(&p, &[]);
    assert_eq!(
        codes(&plan),
        vec![(HazardCode::StageMatchesNoCluster, vec!["dev".to_string()])]
    );
    assert_eq!((plan.unreached, plan.inventory), (0, 0));
    let none = promotion(json!([]), kyverno());
    assert_eq!(super::plan(&none, &fleet()).stages, vec![]);
}

#[test]
fn promotion_decoding_errors_name_the_field() {
    let bad = json!({"metadata": {"name": "p"}, "spec": {"stages": [
        {"name": "dev", "clusterSelector": {"matchLabels": {"env": 5}}}]}});
    let e = crate::model::ClusterPromotion::decode(&bad).unwrap_err();
    assert!(
        e.starts_with("spec.stages[0].clusterSelector.matchLabels.env: invalid type: integer `5`"),
        "{e}"
    );
}

#[test]
fn a_cluster_in_three_stages_and_a_profile_that_deploys_nothing() {
    let f = vec![cluster(
        "prod",
        "edge01",
        &[("env", "prod"), ("ring", "canary")],
    )];
    let p = promotion(
        json!([
            stage("canary", json!({"ring": "canary"})),
            stage("staging", json!({"env": "prod"})),
            {"name": "production", "clusterSelector": {"matchExpressions": [
                {"key": "env", "operator": "Exists"}]}}
        ]),
        json!({}),
    );
    let plan = plan(&p, &f);
    assert_eq!(
        codes(&plan),
        vec![(
            HazardCode::ClusterInSeveralStages,
            vec![
                "canary".to_string(),
                "staging".to_string(),
                "production".to_string()
            ]
        )]
    );
    assert_eq!(
        plan.hazards[0].message,
        "1 cluster (prod/edge01) is selected by stages canary, staging and production: it \
         receives the change at canary, the first of them. The ClusterProfiles of staging and \
         production also target it (the profile deploys no Helm chart or resource, so nothing \
         conflicts)"
    );
    assert_eq!(
        plan.stages[2].clusters[0].reached_earlier_by,
        vec!["canary", "staging"]
    );
}

#[test]
fn only_a_window_on_the_last_stage_is_a_hazard() {
    let window = json!({"auto": {"promotionWindow": {"from": "0 9 * * 1", "to": "0 17 * * 5"}}});
    let mut stages: Vec<Value> = DEV_STAGING_PRODUCTION
        .iter()
        .map(|(name, env)| stage(name, json!({ "env": env })))
        .collect();
    stages[1]["trigger"] = window.clone();
    let gated = promotion(Value::Array(stages.clone()), kyverno());
    assert_eq!(plan(&gated, &fleet()).hazards, vec![]);

    stages[2]["trigger"] = window;
    let late = plan(&promotion(Value::Array(stages), kyverno()), &fleet());
    assert_eq!(
        codes(&late),
        vec![(HazardCode::LastStageWindow, vec!["production".to_string()])]
    );
    assert!(
        late.hazards[0].message.contains(
            "move it to stage staging's trigger (spec.stages[1].trigger.auto.promotionWindow)"
        ),
        "{}",
        late.hazards[0].message
    );
}
