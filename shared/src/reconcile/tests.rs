//! Every branch of one reconcile (§12–§14 of `docs/reference/promotion-controller.md`),
//! every status string it writes, and each defect the decision fixes.

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::*;
use crate::fleet::Cluster;
use crate::rollout::identity_of;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

const NOW: &str = "2026-03-02T10:00:00Z";

fn stages() -> Value {
    json!([
        {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
         "trigger": {"auto": {"delay": "2m"}}},
        {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
         "trigger": {"manual": {"automaticReset": true}}},
        {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}},
    ])
}

fn promotion_with(stages: Value) -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "p", "uid": "u1", "finalizers": [FINALIZER]},
        "spec": {
            "profileSpec": {"syncMode": "Continuous", "tier": 100,
                "stopMatchingBehavior": "WithdrawPolicies",
                "helmCharts": [{"repositoryURL": "https://charts", "releaseName": "k",
                                "releaseNamespace": "k", "chartName": "k/k",
                                "chartVersion": "1.0.0", "helmChartAction": "Install"}]},
            "stages": stages,
        }
    })
}

/// A stage's status entry for [`at_stage`]: its name, when it succeeded (if it did), its
/// description.
type Entry = (&'static str, Option<&'static str>, &'static str);

/// dev, provisioned at 09:00 and promoted from.
const DEV_DONE: Entry = (
    "dev",
    Some("2026-03-02T09:00:00Z"),
    "Successfully provisioned",
);
/// staging, provisioned at 09:10 and promoted from.
const STAGING_DONE: Entry = (
    "staging",
    Some("2026-03-02T09:10:00Z"),
    "Successfully provisioned",
);

/// A promotion whose status is at `current` in the current rollout, each listed stage with
/// `applied` as its success time (or none).
fn at_stage(stages_v: Value, entries: &[(&str, Option<&str>, &str)]) -> Value {
    let mut p = promotion_with(stages_v);
    let id = identity_of(&p).unwrap().id;
    let list: Vec<Value> = entries
        .iter()
        .map(|(name, applied, description)| {
            let mut e = json!({"name": name, "lastUpdateReconciledTime": "2026-03-02T09:00:00Z",
                               "currentStatusDescription": format!("{description} (2026-03-02T09:00:00Z)")});
            if let Some(t) = applied {
                e["lastSuccessfulAppliedTime"] = json!(t);
            }
            e
        })
        .collect();
    p["status"] = json!({
        "stagesHash": id.stages_hash, "profileSpecHash": id.profile_spec_hash,
        "currentStageName": entries.last().unwrap().0,
        "lastPromotionTime": "2026-03-02T09:00:00Z",
        "stages": list,
    });
    p
}

/// A promotion at its first stage, dev, whose clusters are being provisioned.
fn provisioning_dev() -> Value {
    at_stage(stages(), &[("dev", None, "Clusters are being provisioned")])
}

/// A promotion at dev, deployed at 09:50 and soaking since (its trigger decides how long).
fn soaking_since_0950(stages_v: Value) -> Value {
    let soaking = "Delayed: Waiting for Time Window: x";
    at_stage(stages_v, &[("dev", Some("2026-03-02T09:50:00Z"), soaking)])
}

fn promotion_value(p: &Value) -> ClusterPromotion {
    serde_json::from_value(p.clone()).unwrap()
}

/// The stage's profile as Sveltos stores it: our body, with `status.matchingClusters`.
fn profile(p: &Value, stage: usize, matching: &[&str]) -> Value {
    let typed = promotion_value(p);
    let mut body = stage_profile(&typed, p, &typed.spec.stages[stage], &[]);
    body["status"] = json!({"matchingClusters": matching.iter().map(|c| json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "namespace": "fleet", "name": c})).collect::<Vec<_>>()});
    body
}

/// A ClusterSummary of `profile` for cluster `c`, copying the profile's spec as Sveltos does.
fn summary(profile: &Value, c: &str, feature_status: &str) -> Value {
    let name = profile["metadata"]["name"].as_str().unwrap();
    let mut spec = profile["spec"].clone();
    spec.as_object_mut().unwrap().remove("clusterSelector");
    json!({
        "metadata": {"name": format!("{name}-sveltos-{c}"), "namespace": "fleet",
                     "labels": {"projectsveltos.io/cluster-profile-name": name}},
        "spec": {"clusterName": c, "clusterNamespace": "fleet", "clusterType": "Sveltos",
                 "clusterProfileSpec": spec},
        "status": {"featureSummaries": [{"featureID": "Helm", "status": feature_status}]}
    })
}

fn cluster(name: &str, env: &str) -> Cluster {
    Cluster::ready_sveltos("fleet", name, &[("env", env)])
}

/// What one reconcile reads: the promotion, its stages' profiles and their ClusterSummaries,
/// with the fleet not read.
fn snapshot(promotion: Value, profiles: Vec<Value>, summaries: Vec<Value>) -> Snapshot {
    Snapshot {
        promotion,
        profiles,
        summaries,
        fleet: None,
        revisions: Vec::new(),
    }
}

fn decide_at(snapshot: &Snapshot, now: &str) -> Decision {
    decide(snapshot, at(now), &Options::default())
}

/// The decision at `NOW`, with the default options, over [`snapshot`]`(promotion, profiles,
/// summaries)`.
fn decide_now(promotion: Value, profiles: Vec<Value>, summaries: Vec<Value>) -> Decision {
    decide_at(&snapshot(promotion, profiles, summaries), NOW)
}

/// [`decide_now`] where the first stage's profile matched the one cluster `c1`, and Sveltos
/// provisioned it there.
fn decide_on_c1(promotion: Value) -> Decision {
    let prof = profile(&promotion, 0, &["c1"]);
    let sum = summary(&prof, "c1", "Provisioned");
    decide_now(promotion, vec![prof], vec![sum])
}

/// [`decide_now`] with the fleet read (`fleet`: every cluster there is) and no ClusterSummary.
fn decide_in_fleet(promotion: Value, profiles: Vec<Value>, fleet: Vec<Cluster>) -> Decision {
    let snapshot = Snapshot {
        fleet: Some(fleet.into()),
        ..snapshot(promotion, profiles, vec![])
    };
    decide_at(&snapshot, NOW)
}

fn stage_status<'a>(d: &'a Decision, name: &str) -> &'a Value {
    d.status
        .as_ref()
        .and_then(|s| s["stages"].as_array())
        .and_then(|l| l.iter().find(|s| s["name"] == name))
        .unwrap_or(&Value::Null)
}

/// The failure message the decision writes on dev's status ("" when none).
fn dev_failure(d: &Decision) -> &str {
    stage_status(d, "dev")["failureMessage"]
        .as_str()
        .unwrap_or("")
}

fn applied_names(d: &Decision) -> Vec<&str> {
    d.apply
        .iter()
        .map(|b| b["metadata"]["name"].as_str().unwrap())
        .collect()
}

fn deleted_names(d: &Decision) -> Vec<&str> {
    d.delete.iter().map(|k| k.name.as_str()).collect()
}

#[test]
fn a_first_reconcile_starts_the_first_stage() {
    let mut p = promotion_with(stages());
    p["metadata"].as_object_mut().unwrap().remove("finalizers");
    let d = decide_now(p.clone(), vec![], vec![]);
    assert_eq!(d.finalizer, Some(FinalizerChange::Add));
    assert_eq!(applied_names(&d), ["p-dev"]);
    let body = &d.apply[0];
    assert_eq!(body["kind"], "ClusterProfile");
    assert_eq!(
        body["metadata"]["labels"]["config.projectsveltos.io/promotionname"],
        "p"
    );
    assert_eq!(
        body["metadata"]["annotations"]["config.projectsveltos.io/stagename"],
        "dev"
    );
    assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "u1");
    assert_eq!(
        body["spec"]["clusterSelector"],
        json!({"matchLabels": {"env": "dev"}})
    );
    assert_eq!(body["spec"]["tier"], 100);
    assert_eq!(d.events[0].message, "Provisioning stage dev");
    assert_eq!(
        (d.events[0].event_type, d.events[0].reason),
        ("Normal", "Sveltos")
    );
    let status = d.status.as_ref().unwrap();
    let id = identity_of(&p).unwrap().id;
    assert_eq!(status["stagesHash"], id.stages_hash);
    assert_eq!(status["profileSpecHash"], id.profile_spec_hash);
    assert_eq!(status["currentStageName"], "dev");
    assert_eq!(status["lastPromotionTime"], NOW);
    assert_eq!(
        stage_status(&d, "dev")["currentStatusDescription"],
        "Clusters are being provisioned (2026-03-02T10:00:00Z)"
    );
    assert_eq!(d.wake_at, None);
    assert_eq!(d.rollout, Some(id));
}

#[test]
fn a_new_rollout_restarts_and_removes_every_pre_verification_profile() {
    // D7: upstream deletes only the first stage's.
    let mut p = at_stage(
        stages(),
        &[
            (
                "dev",
                Some("2026-03-02T09:01:00Z"),
                "Successfully provisioned",
            ),
            ("staging", None, "Clusters are being provisioned"),
        ],
    );
    p["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("2.0.0");
    let mut pre = profile(&p, 1, &[]);
    pre["metadata"]["name"] = json!("preverification-p-staging");
    let d = decide_now(p, vec![pre], vec![]);
    assert_eq!(applied_names(&d), ["p-dev"]);
    assert_eq!(deleted_names(&d), ["preverification-p-staging"]);
    assert_eq!(d.events[0].message, "Provisioning stage dev (Restart)");
    let status = d.status.unwrap();
    assert_eq!(status["stages"].as_array().unwrap().len(), 1);
    assert!(d.explanation.contains("new rollout"), "{}", d.explanation);
}

#[test]
fn a_pre_verification_profile_left_by_a_crash_after_a_status_write_is_deleted() {
    // The restart's status was written (dev is current, the rollout's hashes stored), then the
    // process stopped before it deleted staging's and prod's pre-verification profiles: no later
    // reconcile restarts, so the repair deletes them.
    let p = provisioning_dev();
    let mut pres = Vec::new();
    for (i, stage) in ["staging", "prod"].iter().enumerate() {
        let mut pre = profile(&p, i + 1, &[]);
        pre["metadata"]["name"] = json!(format!("preverification-p-{stage}"));
        pres.push(pre);
    }
    let mut own = profile(&p, 0, &[]);
    own["metadata"]["name"] = json!("preverification-p-dev");
    pres.push(own);
    let d = decide_now(p, pres, vec![]);
    assert_eq!(
        deleted_names(&d),
        ["preverification-p-staging", "preverification-p-prod"]
    );
}

#[test]
fn a_stage_whose_profile_is_missing_is_not_deployed_and_says_so() {
    // D4's first case: upstream's check fails to fetch the profile and writes nothing.
    let d = decide_now(provisioning_dev(), vec![], vec![]);
    assert_eq!(dev_failure(&d), "ClusterProfile p-dev does not exist yet.");
    assert_eq!(applied_names(&d), ["p-dev"]);
}

#[test]
fn a_stage_profile_the_cache_holds_from_the_previous_rollout_is_not_deployed() {
    // The reconcile after a restart's status write can run before the watch delivers the
    // profile it applied: the cache still holds the previous rollout's profile, which its
    // ClusterSummary reports Provisioned. That is not this rollout's deployment.
    let p = provisioning_dev();
    let mut previous = p.clone();
    previous["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("0.9.0");
    let old = profile(&previous, 0, &["c1"]);
    let sum = summary(&old, "c1", "Provisioned");
    let d = decide_now(p.clone(), vec![old], vec![sum.clone()]);
    assert_eq!(
        dev_failure(&d),
        "ClusterProfile p-dev does not have this rollout's spec yet: it is being applied."
    );
    assert_eq!(
        stage_status(&d, "dev")["lastSuccessfulAppliedTime"],
        Value::Null
    );
    assert_eq!(applied_names(&d), ["p-dev"]);
    // Once the cache has this rollout's profile, the same ClusterSummary is out of sync with it.
    let new = profile(&p, 0, &["c1"]);
    let d = decide_now(p, vec![new], vec![sum]);
    assert_eq!(
        dev_failure(&d),
        "ClusterSummary HelmCharts p-dev-sveltos-c1 is not in sync."
    );
}

/// A controller without history of a ClusterSummary (it just started, or took over) whose
/// `Provisioned` provably predates the summary's spec update (the managed fields' times) waits
/// two minutes from that update for Sveltos to answer it; then counts it deployed, unconfirmed.
#[test]
fn a_provisioned_written_before_the_spec_update_waits_for_sveltos_to_answer_it() {
    let p = provisioning_dev();
    let prof = profile(&p, 0, &["c1"]);
    let mut sum = summary(&prof, "c1", "Provisioned");
    sum["status"]["featureSummaries"][0]["hash"] = json!("aGFzaA==");
    sum["metadata"]["managedFields"] = json!([
        {"manager": "addon-controller", "operation": "Update", "time": "2026-03-02T09:59:30Z"},
        {"manager": "addon-controller", "operation": "Update", "subresource": "status",
         "time": "2026-03-02T09:58:00Z"},
    ]);
    let snap = snapshot(p, vec![prof], vec![deployed::retained(&sum)]);
    let d = decide_at(&snap, NOW);
    assert!(
        dev_failure(&d).contains("waiting until 2026-03-02T10:01:30+00:00"),
        "{}",
        dev_failure(&d)
    );
    assert_eq!(d.wake_at, Some(at("2026-03-02T10:01:30Z")));
    let d = decide_at(&snap, "2026-03-02T10:01:30Z");
    assert_eq!(
        stage_status(&d, "dev")["lastSuccessfulAppliedTime"],
        "2026-03-02T10:01:30Z"
    );
    assert_eq!(d.unconfirmed, ["p-dev-sveltos-c1"]);
}

#[test]
fn a_status_without_current_stage_restarts() {
    // D1: upstream stores the hashes before the restart, so a failed first apply leaves a status
    // with equal hashes and no current stage, and the promotion never moves again.
    let mut p = provisioning_dev();
    p["status"]["currentStageName"] = json!("");
    p["status"]["stages"] = json!([]);
    let d = decide_now(p, vec![], vec![]);
    assert_eq!(applied_names(&d), ["p-dev"]);
    assert_eq!(d.status.unwrap()["currentStageName"], "dev");
}

#[test]
fn a_matched_cluster_without_cluster_summary_is_not_deployed() {
    // D4: upstream counts the ClusterSummaries that exist: none yet means "deployed".
    let p = provisioning_dev();
    let prof = profile(&p, 0, &["c1"]);
    let d = decide_now(p, vec![prof], vec![]);
    assert_eq!(
        dev_failure(&d),
        "ClusterSummary for SveltosCluster fleet/c1 is not created yet."
    );
    assert_eq!(stage_status(&d, "dev")["lastStatusCheckTime"], NOW);
    assert!(d.events.is_empty());
    assert!(d.apply.is_empty());
    assert!(
        d.explanation.starts_with("dev is being deployed"),
        "{}",
        d.explanation
    );
}

#[test]
fn the_fleet_says_which_clusters_must_deploy() {
    let p = provisioning_dev();
    let prof = profile(&p, 0, &[]);
    let fleet = vec![cluster("c1", "dev"), cluster("c2", "prod")];
    let d = decide_in_fleet(p, vec![prof], fleet);
    assert_eq!(
        dev_failure(&d),
        "ClusterSummary for SveltosCluster fleet/c1 is not created yet."
    );
}

#[test]
fn no_clusters_is_believed_only_when_something_says_so() {
    // D13: a profile Sveltos has not matched yet (no status) and no fleet: not deployed.
    let p = provisioning_dev();
    let mut prof = profile(&p, 0, &[]);
    prof.as_object_mut().unwrap().remove("status");
    let d = decide_now(p.clone(), vec![prof.clone()], vec![]);
    assert_eq!(
        dev_failure(&d),
        "Sveltos has not matched clusters to ClusterProfile p-dev yet."
    );
    // The fleet read says no cluster matches: upstream's "no matching clusters" path.
    let d = decide_in_fleet(p.clone(), vec![prof.clone()], vec![cluster("x", "prod")]);
    // A stage that deploys nothing is a Warning, not "provisioned".
    assert_eq!(d.events[0].event_type, "Warning");
    assert_eq!(d.events[0].reason, "StageMatchesNoCluster");
    assert_eq!(
        d.events[0].message,
        "Stage dev matches no cluster (selector env=dev): it counts as deployed with nothing \
         deployed"
    );
    // With a near miss in the fleet, the respelling `plan` suggests.
    let near = decide_in_fleet(p.clone(), vec![prof], vec![cluster("x", "deev")]);
    assert!(
        near.events[0].message.contains("did you mean"),
        "{}",
        near.events[0].message
    );
    assert_eq!(
        stage_status(&d, "dev")["currentStatusDescription"],
        "Delayed: Waiting for Time Window: 2026-03-02T10:02:00Z (2026-03-02T10:00:00Z)"
    );
}

#[test]
fn a_cluster_sveltos_failed_to_create_a_summary_for_says_why() {
    // The ClusterProfile's status.failedClusters names the cluster whose ClusterSummary Sveltos
    // could not create: the stage waits, and says why.
    let p = provisioning_dev();
    let mut prof = profile(&p, 0, &["c1"]);
    prof["status"]["failedClusters"] = json!([{
        "clusterRef": {"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                       "namespace": "fleet", "name": "c1"},
        "failureMessage": "admission webhook denied the request",
        "lastFailureTime": "2026-03-02T09:59:00Z"}]);
    let d = decide_now(p, vec![prof], vec![]);
    assert_eq!(
        dev_failure(&d),
        "ClusterSummary for SveltosCluster fleet/c1 is not created yet. Sveltos could not \
         create it: admission webhook denied the request"
    );
}

#[test]
fn out_of_sync_and_unprovisioned_summaries_say_so_in_upstream_words() {
    let p = provisioning_dev();
    let prof = profile(&p, 0, &["c1"]);
    let check = |summary: Value| {
        let d = decide_now(p.clone(), vec![prof.clone()], vec![summary]);
        dev_failure(&d).to_string()
    };
    let mut helm = summary(&prof, "c1", "Provisioned");
    helm["spec"]["clusterProfileSpec"]["helmCharts"][0]["chartVersion"] = json!("0.9");
    assert_eq!(
        check(helm),
        "ClusterSummary HelmCharts p-dev-sveltos-c1 is not in sync."
    );
    let mut policy = summary(&prof, "c1", "Provisioned");
    policy["spec"]["clusterProfileSpec"]["policyRefs"] = json!([{"name": "x"}]);
    assert_eq!(
        check(policy),
        "ClusterSummary PolicyRefs p-dev-sveltos-c1 is not in sync."
    );
    let mut kustomize = summary(&prof, "c1", "Provisioned");
    kustomize["spec"]["clusterProfileSpec"]["kustomizationRefs"] = json!([{"name": "x"}]);
    assert_eq!(
        check(kustomize),
        "ClusterSummaryKustomizationRefs p-dev-sveltos-c1 is not in sync."
    );
    assert_eq!(
        check(summary(&prof, "c1", "Provisioning")),
        "ClusterSummary p-dev-sveltos-c1 is not yet provisioned."
    );
    let mut no_helm_feature = summary(&prof, "c1", "Provisioned");
    no_helm_feature["status"]["featureSummaries"] = json!([]);
    assert_eq!(
        check(no_helm_feature),
        "ClusterSummary p-dev-sveltos-c1 is not yet provisioned."
    );
}

#[test]
fn a_deployed_stage_soaks_and_wakes_at_the_end_of_its_delay() {
    let p = provisioning_dev();
    let d = decide_on_c1(p);
    assert_eq!(d.events[0].message, "Stage dev provisioned");
    let dev = stage_status(&d, "dev");
    assert_eq!(dev["lastSuccessfulAppliedTime"], NOW);
    assert!(dev.get("failureMessage").is_none());
    assert_eq!(
        dev["currentStatusDescription"],
        "Delayed: Waiting for Time Window: 2026-03-02T10:02:00Z (2026-03-02T10:00:00Z)"
    );
    assert_eq!(d.wake_at, Some(at("2026-03-02T10:02:00Z")));
    assert!(d.explanation.contains("dev waits"), "{}", d.explanation);
}

#[test]
fn the_soak_time_is_written_in_the_window_zone() {
    let p = at_stage(
        stages(),
        &[(
            "dev",
            Some("2026-03-02T09:59:00Z"),
            "All matching clusters are successfully deployed.",
        )],
    );
    let prof = profile(&p, 0, &["c1"]);
    let sum = summary(&prof, "c1", "Provisioned");
    let options = Options {
        window_zone: chrono_tz::Europe::Paris,
    };
    let d = decide(&snapshot(p, vec![prof], vec![sum]), at(NOW), &options);
    assert_eq!(
        stage_status(&d, "dev")["currentStatusDescription"],
        "Delayed: Waiting for Time Window: 2026-03-02T11:01:00+01:00 (2026-03-02T10:00:00Z)"
    );
}

#[test]
fn after_the_soak_the_next_stage_is_provisioned() {
    let p = at_stage(
        stages(),
        &[(
            "dev",
            Some("2026-03-02T09:50:00Z"),
            "Delayed: Waiting for Time Window: 2026-03-02T09:52:00Z",
        )],
    );
    let d = decide_on_c1(p);
    assert_eq!(applied_names(&d), ["p-staging"]);
    assert_eq!(
        d.events
            .iter()
            .map(|e| e.message.as_str())
            .collect::<Vec<_>>(),
        ["Provisioning stage staging"]
    );
    let status = d.status.as_ref().unwrap();
    assert_eq!(status["currentStageName"], "staging");
    assert_eq!(status["lastPromotionTime"], NOW);
    let dev = stage_status(&d, "dev");
    assert_eq!(
        dev["currentStatusDescription"],
        "Successfully provisioned (2026-03-02T10:00:00Z)"
    );
    // When dev was first seen deployed, not the promotion time (D16).
    assert_eq!(dev["lastSuccessfulAppliedTime"], "2026-03-02T09:50:00Z");
    assert_eq!(stage_status(&d, "staging")["lastUpdateReconciledTime"], NOW);
    assert!(d.consume_approvals.is_empty());
    assert_eq!(d.explanation, "dev is done: promoting to staging");
}

fn at_staging(approved: Option<bool>, stages_v: Value) -> (Value, Vec<Value>, Vec<Value>) {
    let mut p = at_stage(
        stages_v,
        &[
            DEV_DONE,
            (
                "staging",
                Some("2026-03-02T09:10:00Z"),
                "All matching clusters are successfully deployed.",
            ),
        ],
    );
    if let Some(a) = approved {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(a);
    }
    let profs = vec![profile(&p, 0, &["c1"]), profile(&p, 1, &["c2"])];
    let sums = vec![
        summary(&profs[0], "c1", "Provisioned"),
        summary(&profs[1], "c2", "Provisioned"),
    ];
    (p, profs, sums)
}

#[test]
fn a_manual_gate_waits_for_its_approval() {
    let (p, profiles, summaries) = at_staging(Some(false), stages());
    let d = decide_now(p, profiles, summaries);
    assert_eq!(
        stage_status(&d, "staging")["currentStatusDescription"],
        "Paused: Awaiting Manual Approval (2026-03-02T10:00:00Z)"
    );
    assert_eq!(d.wake_at, None);
    assert!(d.consume_approvals.is_empty());
    assert_eq!(
        d.explanation,
        "staging waits: awaiting manual approval; nothing else blocks"
    );
}

#[test]
fn an_approval_is_consumed_by_name_in_the_step_that_promotes() {
    // D3: consumed by stage name, never by rewriting spec.stages.
    let (p, profiles, summaries) = at_staging(Some(true), stages());
    let d = decide_now(p, profiles, summaries);
    assert_eq!(d.consume_approvals, ["staging"]);
    assert_eq!(applied_names(&d), ["p-prod"]);
    assert_eq!(d.events[0].message, "Provisioning stage prod");
}

#[test]
fn a_manual_gate_honours_its_health_checks_first() {
    // D5: upstream consumes the approval once the checks are appended, whether they pass or not.
    let mut s = stages();
    s[1]["trigger"]["manual"]["postDelayHealthChecks"] = json!([{"name": "ready", "featureID": "Helm", "group": "apps", "version": "v1",
                "kind": "Deployment", "script": "function evaluate() return {healthy=true} end"}]);
    let (p, mut profiles, summaries) = at_staging(Some(true), s);
    // First pass: the checks are appended to the stage's profile.
    let d = decide_now(p.clone(), profiles.clone(), summaries.clone());
    assert_eq!(applied_names(&d), ["p-staging"]);
    assert_eq!(d.apply[0]["spec"]["validateHealths"][0]["name"], "ready");
    assert_eq!(
        stage_status(&d, "staging")["currentStatusDescription"],
        "Running Post-Promotion Health Checks (2026-03-02T10:00:00Z)"
    );
    assert!(d.consume_approvals.is_empty());
    // The profile has them (as stored, with its status), the cluster does not run them yet:
    // still no consumption.
    let status = profiles[1]["status"].clone();
    profiles[1] = d.apply[0].clone();
    profiles[1]["status"] = status;
    let mut p = p;
    p["status"] = d.status.clone().unwrap();
    let d = decide_now(p.clone(), profiles.clone(), summaries.clone());
    assert_eq!(
        stage_status(&d, "staging")["currentStatusDescription"],
        "Awaiting Health Checks to Pass (2026-03-02T10:00:00Z)"
    );
    assert_eq!(
        stage_status(&d, "staging")["failureMessage"],
        "ClusterSummary p-staging-sveltos-c2 does not run the stage's health checks yet."
    );
    assert!(d.consume_approvals.is_empty());
    // Sveltos has run them: the approval is used.
    let mut summaries = summaries;
    summaries[1] = summary(&profiles[1], "c2", "Provisioned");
    let d = decide_now(p, profiles, summaries);
    assert_eq!(d.consume_approvals, ["staging"]);
}

#[test]
fn a_post_delay_check_named_like_a_profile_check_is_still_appended() {
    // D11: upstream matches post-delay checks by name only.
    let mut p_stages = stages();
    p_stages[0]["trigger"]["auto"]["postDelayHealthChecks"] = json!([{"name": "ready", "featureID": "Helm", "script": "function evaluate() return {healthy=false} end"}]);
    let mut p = at_stage(
        p_stages,
        &[(
            "dev",
            Some("2026-03-02T09:00:00Z"),
            "Delayed: Waiting for Time Window: x",
        )],
    );
    p["spec"]["profileSpec"]["validateHealths"] = json!([{"name": "ready", "featureID": "Helm", "script": "function evaluate() return {healthy=true} end"}]);
    let id = identity_of(&p).unwrap().id;
    p["status"]["profileSpecHash"] = json!(id.profile_spec_hash);
    let d = decide_on_c1(p);
    let checks = d.apply[0]["spec"]["validateHealths"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "{checks:?}");
}

#[test]
fn a_pre_verification_profile_is_applied_then_removed_when_the_stage_advances() {
    let mut s = stages();
    s[0]["trigger"]["auto"]["preHealthCheckDeployment"] =
        json!([{"kind": "ConfigMap", "name": "job", "namespace": "default"}]);
    let p = soaking_since_0950(s);
    let prof = profile(&p, 0, &["c1"]);
    let sum = summary(&prof, "c1", "Provisioned");
    let d = decide_now(p.clone(), vec![prof.clone()], vec![sum.clone()]);
    // Nothing else holds dev: the stage advances in the same pass, so the profile is deleted,
    // not applied.
    assert_eq!(applied_names(&d), ["p-staging"]);
    assert!(deleted_names(&d).is_empty());
    // With the profile there (from an earlier pass), advancing deletes it.
    let typed = promotion_value(&p);
    let pre = bodies::preverification_profile(&typed, &p, &typed.spec.stages[0]).unwrap();
    assert_eq!(
        pre["metadata"]["labels"]["config.projectsveltos.io/promotion-verification"],
        "true"
    );
    assert_eq!(pre["spec"]["syncMode"], "Continuous");
    assert_eq!(pre["spec"]["policyRefs"][0]["name"], "job");
    let d = decide_now(p, vec![prof, pre], vec![sum]);
    assert_eq!(deleted_names(&d), ["preverification-p-dev"]);
}

#[test]
fn a_pre_verification_profile_is_applied_while_the_stage_waits() {
    let mut s = stages();
    s[0]["trigger"]["auto"]["preHealthCheckDeployment"] =
        json!([{"kind": "ConfigMap", "name": "job", "namespace": "default"}]);
    s[0]["trigger"]["auto"]["promotionWindow"] = json!({"from": "0 22 * * *", "to": "0 6 * * *"});
    let p = soaking_since_0950(s);
    let d = decide_on_c1(p);
    assert_eq!(applied_names(&d), ["preverification-p-dev"]);
    assert_eq!(
        stage_status(&d, "dev")["currentStatusDescription"],
        "Window Closed: Waiting for Next Schedule (2026-03-02T22:00:00Z). (2026-03-02T10:00:00Z)"
    );
    // Open from the second after its opening.
    assert_eq!(d.wake_at, Some(at("2026-03-02T22:00:01Z")));
}

/// The decision over dev, soaking since 09:50 on c1, under the promotion window `from`–`to`.
fn decide_in_dev_window(from: &str, to: &str) -> Decision {
    let mut s = stages();
    s[0]["trigger"]["auto"]["promotionWindow"] = json!({"from": from, "to": to});
    decide_on_c1(soaking_since_0950(s))
}

#[test]
fn an_open_window_lets_the_stage_advance() {
    let d = decide_in_dev_window("0 8 * * *", "0 18 * * *");
    assert_eq!(applied_names(&d), ["p-staging"]);
}

#[test]
fn a_window_that_never_opens_is_reported_not_waited_on() {
    // D12: upstream's worker spins forever on this window.
    let d = decide_in_dev_window("0 8 * * *", "0 0 30 2 *");
    assert_eq!(d.events[0].event_type, "Warning");
    assert!(
        d.events[0].message.contains("never fires"),
        "{:?}",
        d.events
    );
    assert_eq!(d.wake_at, None);
    assert!(d.apply.is_empty());
}

#[test]
fn a_window_that_never_opens_is_reported_too() {
    // 30 February: the window never opens; upstream waits for year 1.
    let d = decide_in_dev_window("0 0 30 2 *", "0 8 * * *");
    assert_eq!(d.events[0].event_type, "Warning");
    assert_eq!(d.events[0].reason, "TriggerError");
    assert!(
        d.events[0]
            .message
            .contains("from schedule \"0 0 30 2 *\" never fires"),
        "{:?}",
        d.events
    );
    assert_eq!(d.wake_at, None);
    assert!(d.apply.is_empty());
}

#[test]
fn a_completed_promotion_stays_complete() {
    // D6 / §14.3: upstream re-evaluates the last stage's trigger on every later reconcile.
    let mut s = stages();
    s[2]["trigger"] = json!({"manual": {}});
    let p = at_stage(
        s,
        &[
            DEV_DONE,
            STAGING_DONE,
            (
                "prod",
                Some("2026-03-02T09:20:00Z"),
                "Successfully provisioned",
            ),
        ],
    );
    let profiles: Vec<Value> = (0..3).map(|i| profile(&p, i, &[])).collect();
    let d = decide_now(p, profiles, vec![]);
    assert_eq!(d.status, None);
    assert!(d.apply.is_empty() && d.delete.is_empty() && d.events.is_empty());
    assert!(d.explanation.starts_with("complete"), "{}", d.explanation);
}

#[test]
fn the_last_stage_completes_the_promotion() {
    let p = at_stage(
        stages(),
        &[
            DEV_DONE,
            STAGING_DONE,
            ("prod", None, "Clusters are being provisioned"),
        ],
    );
    let profiles: Vec<Value> = (0..3).map(|i| profile(&p, i, &["c3"])).collect();
    let sums = vec![summary(&profiles[2], "c3", "Provisioned")];
    let d = decide_now(p, profiles, sums);
    assert_eq!(d.events[0].message, "Stage prod provisioned");
    assert_eq!(
        stage_status(&d, "prod")["currentStatusDescription"],
        "Successfully provisioned (2026-03-02T10:00:00Z)"
    );
    assert_eq!(
        d.explanation,
        "prod is done: the promotion is complete for this rollout"
    );
    assert!(d.apply.is_empty());
}

#[test]
fn missing_or_edited_profiles_of_reached_stages_are_applied_again() {
    // D10.
    let (p, profiles, summaries) = at_staging(Some(false), stages());
    let d = decide_now(p.clone(), vec![profiles[1].clone()], summaries.clone());
    assert_eq!(applied_names(&d), ["p-dev"]);
    let mut edited = profiles.clone();
    edited[1]["spec"]["helmCharts"][0]["chartVersion"] = json!("6.6.6");
    let d = decide_now(p.clone(), edited, summaries.clone());
    assert_eq!(applied_names(&d), ["p-staging"]);
    assert_eq!(d.apply[0]["spec"]["helmCharts"][0]["chartVersion"], "1.0.0");
    let d = decide_now(p, profiles, summaries);
    assert!(d.apply.is_empty(), "{:?}", applied_names(&d));
}

#[test]
fn only_profiles_owned_by_this_promotion_are_cleaned_up() {
    // D14: a profile of an earlier promotion of the same name (another UID) is not deleted.
    let p = provisioning_dev();
    let mut gone = profile(&p, 0, &[]);
    gone["metadata"]["name"] = json!("p-removed-stage");
    let mut foreign = gone.clone();
    foreign["metadata"]["name"] = json!("p-other");
    foreign["metadata"]["ownerReferences"][0]["uid"] = json!("u0");
    let d = decide_now(p, vec![gone, foreign], vec![]);
    assert_eq!(deleted_names(&d), ["p-removed-stage"]);
}

#[test]
fn a_profile_name_that_cannot_be_a_label_value_never_deploys() {
    // D15.
    let long = "s".repeat(70);
    let p = at_stage(
        json!([{"name": long, "clusterSelector": {"matchLabels": {"env": "dev"}}}]),
        &[(long.as_str(), None, "Clusters are being provisioned")],
    );
    let d = decide_now(p, vec![], vec![]);
    let msg = stage_status(&d, &long)["failureMessage"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("limited to 63 characters"), "{msg}");
}

#[test]
fn deletion_removes_owned_profiles_then_the_finalizer() {
    let mut p = at_stage(stages(), &[("dev", None, "x")]);
    p["metadata"]["deletionTimestamp"] = json!(NOW);
    let prof = profile(&p, 0, &[]);
    let d = decide_now(p.clone(), vec![prof.clone()], vec![]);
    assert_eq!(deleted_names(&d), ["p-dev"]);
    assert_eq!(d.finalizer, None);
    let mut going = prof;
    going["metadata"]["deletionTimestamp"] = json!(NOW);
    let d = decide_now(p.clone(), vec![going], vec![]);
    assert!(d.delete.is_empty());
    assert!(d.explanation.contains("waiting for 1"), "{}", d.explanation);
    let d = decide_now(p, vec![], vec![]);
    assert_eq!(d.finalizer, Some(FinalizerChange::Remove));
}

#[test]
fn preserving_profiles_releases_them_before_the_finalizer_goes() {
    // D8: the garbage collector would delete profiles that still name the promotion as owner.
    let mut p = at_stage(stages(), &[("dev", None, "x")]);
    p["metadata"]["deletionTimestamp"] = json!(NOW);
    // A profile applied before preserveClusterProfilesOnDelete was set names its owner.
    let owned = profile(&p, 0, &[]);
    assert!(owned["metadata"].get("ownerReferences").is_some());
    p["spec"]["preserveClusterProfilesOnDelete"] = json!(true);
    let d = decide_now(p.clone(), vec![owned], vec![]);
    assert!(d.delete.is_empty());
    assert_eq!(applied_names(&d), ["p-dev"]);
    assert!(d.apply[0]["metadata"].get("ownerReferences").is_none());
    assert_eq!(
        d.apply[0]["metadata"]["annotations"][PRESERVED_FOR_ANNOTATION],
        "u1"
    );
    assert_eq!(d.finalizer, None);
    // Released (or applied with the flag set): nothing holds the finalizer.
    let released = d.apply[0].clone();
    let d = decide_now(p.clone(), vec![released], vec![]);
    assert_eq!(d.finalizer, Some(FinalizerChange::Remove));
    assert!(d.apply.is_empty() && d.delete.is_empty());
    // A pre-verification profile verifies a rollout that ends with the promotion: deleted.
    let typed = promotion_value(&p);
    let mut stage = typed.spec.stages[0].clone();
    stage.trigger = serde_json::from_value(
        json!({"auto": {"preHealthCheckDeployment": [{"kind": "ConfigMap", "name": "c", "namespace": "n"}]}}),
    )
    .unwrap();
    let pre = bodies::preverification_profile(&typed, &p, &stage).unwrap();
    assert!(pre["metadata"].get("ownerReferences").is_some());
    let d = decide_now(p, vec![pre], vec![]);
    assert_eq!(deleted_names(&d), ["preverification-p-dev"]);
    assert_eq!(d.finalizer, None);
}

/// While preserveClusterProfilesOnDelete is set, stage profiles carry no owner reference (the
/// garbage collector cannot take them, whoever removes the finalizer, whatever the cascade), and
/// setting or clearing the flag re-applies them.
#[test]
fn owner_references_follow_the_preserve_flag() {
    let mut p = at_stage(stages(), &[("dev", None, "x")]);
    let owned = profile(&p, 0, &["c1"]);
    p["spec"]["preserveClusterProfilesOnDelete"] = json!(true);
    let d = decide_now(p.clone(), vec![owned], vec![]);
    assert_eq!(applied_names(&d), ["p-dev"]);
    assert!(d.apply[0]["metadata"].get("ownerReferences").is_none());
    let preserved = profile(&p, 0, &["c1"]);
    let d = decide_now(p.clone(), vec![preserved.clone()], vec![]);
    assert!(d.apply.is_empty(), "{:?}", applied_names(&d));
    p["spec"]["preserveClusterProfilesOnDelete"] = json!(false);
    let d = decide_now(p, vec![preserved], vec![]);
    assert_eq!(applied_names(&d), ["p-dev"]);
    assert!(d.apply[0]["metadata"].get("ownerReferences").is_some());
}

#[test]
fn nothing_new_writes_no_status() {
    // Upstream rewrites check times every two minutes; a reconcile that learns nothing writes
    // nothing.
    let (p, profiles, summaries) = at_staging(Some(false), stages());
    let mut p2 = p.clone();
    p2["status"]["stages"][1]["currentStatusDescription"] =
        json!("Paused: Awaiting Manual Approval (2026-03-02T09:30:00Z)");
    let d = decide_now(p2, profiles, summaries);
    assert_eq!(d.status, None);
    let _ = Duration::zero();
}

#[test]
fn consuming_a_resetting_approval_commits_the_step_on_the_promotion() {
    let (p, profiles, summaries) = at_staging(Some(true), stages());
    let id = identity_of(&p).unwrap().id;
    let d = decide_now(p, profiles, summaries);
    assert_eq!(
        d.promoting,
        Some(Promoting {
            stage: "staging".into(),
            rollout: id
        })
    );
    assert_eq!(d.clear_promoting, None);
}

#[test]
fn a_committed_step_passes_its_gate_once_without_the_approval() {
    // The crash case: `approved` was removed with the annotation, the status was never written.
    let (mut p, profiles, summaries) = at_staging(None, stages());
    let id = identity_of(&p).unwrap().id;
    let committed = Promoting {
        stage: "staging".into(),
        rollout: id.clone(),
    }
    .to_annotation();
    p["metadata"]["annotations"] = json!({ promoting::PROMOTING_ANNOTATION: committed.clone() });
    let snapshot = snapshot(p.clone(), profiles.clone(), summaries.clone());
    let d = decide_at(&snapshot, NOW);
    assert!(d.consume_approvals.is_empty());
    assert_eq!(d.promoting, None);
    assert_eq!(applied_names(&d), ["p-prod"]);
    assert_eq!(d.clear_promoting.as_deref(), Some(committed.as_str()));

    // Committed in another rollout (the spec changed since): worth nothing, and removed.
    let other = Promoting {
        stage: "staging".into(),
        rollout: RolloutId {
            stages_hash: "other".into(),
            profile_spec_hash: id.profile_spec_hash.clone(),
        },
    }
    .to_annotation();
    p["metadata"]["annotations"] = json!({ promoting::PROMOTING_ANNOTATION: other.clone() });
    let d = decide_now(p, profiles, summaries);
    assert!(d.apply.is_empty(), "{:?}", applied_names(&d));
    assert_eq!(
        d.explanation,
        "staging waits: awaiting manual approval; nothing else blocks"
    );
    assert_eq!(d.clear_promoting.as_deref(), Some(other.as_str()));
}

#[test]
fn the_summary_fields_a_cache_keeps_decide_the_same() {
    let (p, profiles, summaries) = at_staging(Some(true), stages());
    let mut fat = summaries.clone();
    for s in &mut fat {
        s["spec"]["clusterProfileSpec"]["helmCharts"][0]["values"] = json!("x: 1\n".repeat(100));
        s["metadata"]["annotations"] = json!({"big": "y".repeat(1000)});
    }
    // Keys in another order are the same lists; a changed chart, or a feature summary gone, is
    // not: the retained form must tell each apart exactly as the whole object does.
    let mut reordered = summaries.clone();
    let mut drifted = summaries.clone();
    let mut unreported = summaries.clone();
    for s in &mut reordered {
        let chart = &mut s["spec"]["clusterProfileSpec"]["helmCharts"][0];
        let mut keys: Vec<(String, Value)> = chart
            .as_object()
            .map(|m| m.clone().into_iter().collect())
            .unwrap_or_default();
        keys.reverse();
        *chart = Value::Object(keys.into_iter().collect());
    }
    for s in &mut drifted {
        s["spec"]["clusterProfileSpec"]["helmCharts"][0]["chartVersion"] = json!("0.0.1");
    }
    for s in &mut unreported {
        s["status"]["featureSummaries"] = json!([]);
    }
    let mut decisions = Vec::new();
    for summaries in [summaries, fat, reordered, drifted, unreported] {
        let whole = decide_now(p.clone(), profiles.clone(), summaries.clone());
        let kept = decide_now(
            p.clone(),
            profiles.clone(),
            summaries.iter().map(deployed::retained).collect(),
        );
        assert_eq!(whole, kept);
        decisions.push(whole.status);
    }
    assert_eq!(decisions[0], decisions[2], "key order changes nothing");
    assert_ne!(decisions[0], decisions[3], "a drifted chart is not in sync");
    assert_ne!(
        decisions[0], decisions[4],
        "a feature not reported is not provisioned"
    );
}

/// The phase the controller's metric reports is the decision's, read from the ClusterSummaries
/// as well as the status: a failing stage is `degraded` (Sveltos retries) or `failed`.
#[test]
fn the_phase_comes_from_the_decision_and_its_clusters() {
    let phase = |p: &Value, profiles: Vec<Value>, summaries: Vec<Value>| {
        decide_now(p.clone(), profiles, summaries).phase
    };
    let (p, profiles, summaries) = at_staging(Some(false), stages());
    assert_eq!(
        phase(&p, profiles.clone(), summaries),
        Some(Phase::AwaitingApproval)
    );
    let (approved, profiles, summaries) = at_staging(Some(true), stages());
    assert_eq!(
        phase(&approved, profiles.clone(), summaries),
        Some(Phase::Progressing)
    );
    let dev = provisioning_dev();
    let prof = profile(&dev, 0, &["c1"]);
    for (feature, want) in [
        ("Provisioning", Phase::Progressing),
        ("Failed", Phase::Degraded),
        ("FailedNonRetriable", Phase::Failed),
    ] {
        assert_eq!(
            phase(
                &dev,
                vec![prof.clone()],
                vec![summary(&prof, "c1", feature)]
            ),
            Some(want),
            "{feature}"
        );
    }
    let mut deleting = dev.clone();
    deleting["metadata"]["deletionTimestamp"] = json!(NOW);
    assert_eq!(phase(&deleting, vec![], vec![]), None);
}

/// The commit removes exactly the approvals that reset automatically, at their index.
#[test]
fn the_approvals_to_clear_are_named_by_their_index() {
    let decision = |stages_v: Value| {
        let (p, profiles, summaries) = at_staging(Some(true), stages_v);
        decide_now(p, profiles, summaries)
    };
    let d = decision(stages());
    assert_eq!(
        (d.consume_approvals.as_slice(), d.clear_approvals.as_slice()),
        (&["staging".to_string()][..], &[1][..])
    );
    let mut kept = stages();
    kept[1]["trigger"]["manual"]["automaticReset"] = json!(false);
    let d = decision(kept);
    assert_eq!(d.consume_approvals, ["staging"]);
    assert!(d.clear_approvals.is_empty());
}

/// An approval that resets automatically belongs to the rollout it was recorded for: with the
/// webhook bypassed, one left from an earlier rollout does not open this one's gate. Without a
/// record it is used (installs without the webhook); `automaticReset: false` keeps it for later
/// rollouts by design.
#[test]
fn an_approval_recorded_for_another_rollout_is_not_used() {
    let with_record = |stages_v: Value, rollout: Value| {
        let (mut p, profiles, summaries) = at_staging(Some(true), stages_v);
        p["metadata"]["annotations"] = json!({
            crate::admission::APPROVALS_ANNOTATION: json!({"staging": {
                "user": "alice", "groups": [], "time": "2026-03-01T00:00:00Z",
                "rollout": rollout}}).to_string()});
        let d = decide_at(
            &Snapshot {
                promotion: p.clone(),
                profiles,
                summaries,
                ..Snapshot::default()
            },
            NOW,
        );
        (d, identity_of(&p).unwrap().id)
    };
    let other = json!({"stagesHash": "old", "profileSpecHash": "old"});
    let (d, _) = with_record(stages(), other.clone());
    assert!(d.consume_approvals.is_empty(), "{d:?}");
    assert_eq!(d.phase, Some(Phase::AwaitingApproval));
    assert!(
        d.explanation
            .contains("the approval of staging was recorded for another rollout"),
        "{}",
        d.explanation
    );
    // Recorded for this rollout: used.
    let (p, _, _) = at_staging(Some(true), stages());
    let id = identity_of(&p).unwrap().id;
    let (d, _) = with_record(stages(), serde_json::to_value(&id).unwrap());
    assert_eq!(d.consume_approvals, ["staging"]);
    // automaticReset: false keeps an approval across rollouts.
    let mut kept = stages();
    kept[1]["trigger"]["manual"]["automaticReset"] = json!(false);
    let (d, _) = with_record(kept, other);
    assert_eq!(d.consume_approvals, ["staging"]);
}

/// A failing stage is a Warning Event naming the cluster and Sveltos' message, once per new
/// failure: a reconcile that finds the same failure again adds none.
#[test]
fn a_failing_stage_is_a_warning_once_per_failure() {
    let dev = provisioning_dev();
    let prof = profile(&dev, 0, &["c1"]);
    let mut failing = summary(&prof, "c1", "FailedNonRetriable");
    failing["status"]["featureSummaries"][0]["failureMessage"] =
        json!("chart kyverno/kyverno 9.9.9 not found");
    let d = decide_now(dev.clone(), vec![prof.clone()], vec![failing.clone()]);
    let warnings: Vec<_> = d
        .events
        .iter()
        .filter(|e| e.event_type == "Warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", d.events);
    assert_eq!(warnings[0].reason, "StageFailing");
    assert_eq!(
        warnings[0].message,
        "Stage dev is failing: fleet/c1 Helm FailedNonRetriable: chart kyverno/kyverno 9.9.9 not \
         found"
    );
    // The status written, the same failure found again: no second Warning.
    let mut again = dev.clone();
    again["status"] = d.status.clone().expect("a status");
    let d = decide_now(again, vec![prof], vec![failing]);
    assert!(
        d.events.iter().all(|e| e.event_type != "Warning"),
        "{:?}",
        d.events
    );
}

/// `p` paused by alice (the webhook's record with it) for "bad chart".
fn paused(mut p: Value) -> Value {
    p["metadata"]["annotations"] = json!({
        crate::pause::PAUSED_ANNOTATION: "bad chart",
        crate::pause::PAUSE_RECORD_ANNOTATION: json!({"paused": true, "user": "alice",
            "time": "2026-03-02T09:55:00Z", "reason": "bad chart"}).to_string(),
    });
    p
}

#[test]
fn a_paused_promotion_starts_no_stage_and_uses_no_approval() {
    // Not started yet: nothing starts, nothing is written but the finalizer.
    let mut fresh = paused(promotion_with(stages()));
    fresh["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("finalizers");
    let d = decide_now(fresh, vec![], vec![]);
    assert_eq!(d.finalizer, Some(FinalizerChange::Add));
    assert!(d.apply.is_empty() && d.status.is_none() && d.events.is_empty());
    assert_eq!(d.phase, Some(Phase::Paused));
    assert_eq!(
        d.explanation,
        "the spec's rollout starts at dev when the promotion is resumed: it is paused by alice \
         at 2026-03-02T09:55:00Z: \"bad chart\""
    );

    // Approved while paused: the approval stays unused, prod does not start.
    let (p, profiles, summaries) = at_staging(Some(true), stages());
    let d = decide_now(paused(p.clone()), profiles.clone(), summaries.clone());
    assert!(d.consume_approvals.is_empty() && d.clear_approvals.is_empty());
    assert_eq!(d.promoting, None);
    assert!(
        !applied_names(&d).contains(&"p-prod"),
        "{:?}",
        applied_names(&d)
    );
    assert_eq!(d.phase, Some(Phase::Paused));
    assert!(
        d.explanation
            .starts_with("staging may advance, but the promotion is paused by alice"),
        "{}",
        d.explanation
    );
    // Resumed: the same snapshot without the annotation uses it.
    let d = decide_now(p, profiles, summaries);
    assert_eq!(d.consume_approvals, ["staging"]);
    assert_eq!(applied_names(&d), ["p-prod"]);

    // Soaking while paused: the soak is still recorded and its end still wakes the
    // reconciler; when it ends, staging does not start.
    let soaking = paused(at_stage(
        stages(),
        &[("dev", None, "Clusters are being provisioned")],
    ));
    let s = snapshot(soaking.clone(), vec![profile(&soaking, 0, &["c1"])], vec![]);
    let mut s = s;
    s.summaries = vec![summary(&s.profiles[0], "c1", "Provisioned")];
    let d = decide_at(&s, NOW);
    assert_eq!(d.phase, Some(Phase::Paused));
    assert!(d.status.is_some(), "dev's deployment is recorded");
    assert_eq!(d.wake_at, Some(at("2026-03-02T10:02:00Z")));
    let d = decide_at(&s, "2026-03-02T10:05:00Z");
    assert!(!applied_names(&d).contains(&"p-staging"));
    assert_eq!(d.phase, Some(Phase::Paused));
}

#[test]
fn a_spec_change_while_paused_starts_nothing_until_resumed() {
    let (p, profiles, summaries) = at_staging(Some(false), stages());
    let mut changed = paused(p);
    changed["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("1.0.1");
    let d = decide_now(changed.clone(), profiles.clone(), summaries.clone());
    assert!(d.apply.is_empty() && d.status.is_none(), "{d:?}");
    assert_eq!(d.phase, Some(Phase::Paused));
    changed["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    let d = decide_now(changed, profiles, summaries);
    assert_eq!(applied_names(&d), ["p-dev"]);
}

/// Revision 1 rolled chart 1.0.0 through every stage; revision 2, chart 1.0.1, reached dev and
/// staging (each deployed there), and prod still runs 1.0.0. The snapshot of revision 2 at
/// staging, with its abort request (`rollback_to`).
fn bad_upgrade_at_staging(rollback_to: Option<i64>) -> (Value, Snapshot) {
    use crate::history::{Record, Revision};
    let good = promotion_with(stages());
    let mut bad = at_stage(
        stages(),
        &[
            DEV_DONE,
            (
                "staging",
                Some("2026-03-02T09:10:00Z"),
                "All matching clusters are successfully deployed.",
            ),
        ],
    );
    bad["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("1.0.1");
    let id = identity_of(&bad).unwrap().id;
    bad["status"]["stagesHash"] = json!(id.stages_hash);
    bad["status"]["profileSpecHash"] = json!(id.profile_spec_hash);
    let request = crate::abort::AbortRequest {
        stages_hash: id.stages_hash.clone(),
        profile_spec_hash: id.profile_spec_hash.clone(),
        rollback_to,
        reason: Some("bad chart".into()),
    };
    bad["metadata"]["annotations"] =
        json!({crate::abort::ABORT_ANNOTATION: request.to_annotation()});
    let revision = |number: i64, p: &Value, completed: bool| Revision {
        name: format!("p-{number}"),
        number,
        data: json!({"profileSpec": p["spec"]["profileSpec"], "stages": p["spec"]["stages"]}),
        record: Some(Record {
            completed: completed.then(|| "2026-03-01T00:00:00Z".to_string()),
            ..Record {
                stages_hash: identity_of(p).unwrap().id.stages_hash,
                profile_spec_hash: identity_of(p).unwrap().id.profile_spec_hash,
                ..Record::default()
            }
        }),
    };
    let profiles = vec![
        profile(&bad, 0, &["c1"]),
        profile(&bad, 1, &["c2"]),
        profile(&good, 2, &["c3"]),
    ];
    let summaries = profiles
        .iter()
        .zip(["c1", "c2", "c3"])
        .map(|(p, c)| summary(p, c, "Provisioned"))
        .collect();
    let mut s = snapshot(bad, profiles, summaries);
    s.revisions = vec![revision(1, &good, true), revision(2, &s.promotion, false)];
    (good, s)
}

#[test]
fn a_rollback_sets_every_stage_back_at_once_and_counts_it_only_once_deployed() {
    let (good, s) = bad_upgrade_at_staging(Some(1));
    let d = decide_at(&s, NOW);
    // dev and staging get revision 1's profiles at once; prod already runs it.
    assert_eq!(applied_names(&d), ["p-dev", "p-staging"]);
    for body in &d.apply {
        assert_eq!(
            body["spec"]["helmCharts"][0]["chartVersion"],
            json!("1.0.0")
        );
    }
    assert_eq!(d.phase, Some(Phase::RollingBack));
    assert!(d.consume_approvals.is_empty());
    let status = d.status.clone().expect("the status says so");
    // No current stage (the status write removes it): a retry starts from the first stage.
    assert_eq!(status.get("currentStageName"), None);
    let described: Vec<&str> = status["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| crate::status::strip_timestamp(st["currentStatusDescription"].as_str().unwrap()))
        .collect();
    assert_eq!(
        described,
        [
            "Rolling back to revision 1",
            "Rolling back to revision 1",
            "Rolled back to revision 1"
        ]
    );
    assert!(
        d.events
            .iter()
            .any(|e| e.reason == "RollingBack" && e.message.contains("p-dev, p-staging")),
        "{:?}",
        d.events
    );

    // Sveltos deploys them: rolled back, said once.
    let mut after = s.clone();
    after.promotion["status"] = status;
    after.profiles = (0..3)
        .map(|i| profile(&good, i, &[["c1", "c2", "c3"][i]]))
        .collect();
    after.summaries = after
        .profiles
        .iter()
        .zip(["c1", "c2", "c3"])
        .map(|(p, c)| summary(p, c, "Provisioned"))
        .collect();
    let d = decide_at(&after, NOW);
    assert!(d.apply.is_empty(), "{:?}", applied_names(&d));
    assert_eq!(d.phase, Some(Phase::RolledBack));
    assert!(
        d.explanation.starts_with("rolled back to revision 1"),
        "{}",
        d.explanation
    );
    assert!(d
        .events
        .iter()
        .any(|e| e.message.starts_with("Rolled back to revision 1")));
    let mut later = after.clone();
    later.promotion["status"] = d.status.clone().expect("rolled back, per stage");
    let d = decide_at(&later, "2026-03-02T10:10:00Z");
    assert!(d.events.is_empty() && d.status.is_none(), "{d:?}");
    assert_eq!(d.phase, Some(Phase::RolledBack));

    // Retried: the aborted rollout starts again from its first stage.
    let mut retried = later.clone();
    retried.promotion["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    let d = decide_at(&retried, "2026-03-02T10:10:00Z");
    assert_eq!(applied_names(&d), ["p-dev"]);
    assert_eq!(
        d.apply[0]["spec"]["helmCharts"][0]["chartVersion"],
        json!("1.0.1")
    );
    assert!(d
        .events
        .iter()
        .any(|e| e.message == "Provisioning stage dev (Restart)"));
}

#[test]
fn an_abort_holds_the_rollout_and_a_rollback_that_makes_no_sense_is_refused() {
    // Aborted without a rollback: staging's approval is not used, prod does not start.
    let (_, mut s) = bad_upgrade_at_staging(None);
    s.promotion["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    let request = crate::abort::AbortRequest {
        stages_hash: identity_of(&s.promotion).unwrap().id.stages_hash,
        profile_spec_hash: identity_of(&s.promotion).unwrap().id.profile_spec_hash,
        rollback_to: None,
        reason: None,
    };
    s.promotion["metadata"]["annotations"] =
        json!({crate::abort::ABORT_ANNOTATION: request.to_annotation()});
    let d = decide_at(&s, NOW);
    assert!(d.consume_approvals.is_empty() && !applied_names(&d).contains(&"p-prod"));
    assert_eq!(d.phase, Some(Phase::Aborted));
    assert!(
        d.explanation.contains("but the rollout is aborted") && d.explanation.ends_with("retried"),
        "{}",
        d.explanation
    );
    // The abort belongs to its rollout: a spec change starts the next one.
    let mut changed = s.clone();
    changed.promotion["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("1.0.2");
    let d = decide_at(&changed, NOW);
    assert_eq!(applied_names(&d), ["p-dev"]);
    assert_eq!(d.phase, Some(Phase::Progressing));

    // A rollback to the current rollout itself: refused, nothing applied, the rollout held.
    let (_, s) = bad_upgrade_at_staging(Some(2));
    let d = decide_at(&s, NOW);
    assert!(d.apply.is_empty(), "{:?}", applied_names(&d));
    assert_eq!(d.phase, Some(Phase::Aborted));
    assert!(
        d.events
            .iter()
            .any(|e| e.reason == "RollbackRefused" && e.message.contains("is the current rollout")),
        "{:?}",
        d.events
    );
}

/// The bad upgrade at staging, staging's cluster failing (`Failed`), with the failure policy
/// `annotations` and no abort.
fn failing_at_staging(annotations: Value) -> Snapshot {
    let (_, mut s) = bad_upgrade_at_staging(None);
    s.promotion["metadata"]["annotations"] = annotations;
    s.promotion["status"]["stages"][1] = json!({"name": "staging",
        "lastUpdateReconciledTime": "2026-03-02T09:10:00Z",
        "currentStatusDescription": "Clusters are being provisioned (2026-03-02T09:10:00Z)"});
    s.promotion["status"]["currentStageName"] = json!("staging");
    s.summaries[1] = summary(&s.profiles[1], "c2", "Failed");
    s
}

#[test]
fn a_stage_failing_past_the_grace_is_rolled_back_when_the_promotion_asks_for_it() {
    use crate::on_failure::*;
    let policy = json!({ON_FAILURE_ANNOTATION: "rollback", FAILURE_GRACE_ANNOTATION: "5m"});
    // Failing: noted now, acted on once the grace is over.
    let s = failing_at_staging(policy.clone());
    let d = decide_at(&s, NOW);
    let note = d.annotations[FAILING_ANNOTATION].clone().expect("noted");
    assert!(
        note.contains("\"since\":\"2026-03-02T10:00:00Z\""),
        "{note}"
    );
    assert!(!d.annotations.contains_key(crate::abort::ABORT_ANNOTATION));
    assert_eq!(d.wake_at, Some(at("2026-03-02T10:05:00Z")));
    assert!(d
        .explanation
        .contains("rolled back at 2026-03-02T10:05:00Z if it still fails"));
    // Within the grace: nothing more.
    let mut noted = s.clone();
    noted.promotion["metadata"]["annotations"][FAILING_ANNOTATION] = json!(note);
    let d = decide_at(&noted, "2026-03-02T10:04:00Z");
    assert!(d.annotations.is_empty(), "{:?}", d.annotations);
    // Past it: the rollback to the newest completed revision, its reason naming the failure.
    let d = decide_at(&noted, "2026-03-02T10:05:00Z");
    let request = crate::abort::AbortRequest::parse(
        d.annotations[crate::abort::ABORT_ANNOTATION]
            .as_deref()
            .expect("the rollback asked for"),
    )
    .unwrap();
    assert_eq!(request.rollback_to, Some(1));
    assert!(request
        .reason
        .unwrap()
        .starts_with("automatic rollback: stage staging failed on 1 of 1 clusters for 5m"));
    assert_eq!(d.annotations[FAILING_ANNOTATION], None);
    assert!(d.events.iter().any(|e| e.reason == "AutomaticRollback"));
    // Nothing completed to go back to: halted, and said.
    let mut alone = noted.clone();
    alone.revisions.retain(|r| r.number == 2);
    let d = decide_at(&alone, "2026-03-02T10:05:00Z");
    assert!(!d.annotations.contains_key(crate::abort::ABORT_ANNOTATION));
    assert!(d
        .events
        .iter()
        .any(|e| e.reason == "AutomaticRollbackImpossible"));
    // Recovered: the note goes.
    let mut recovered = noted.clone();
    recovered.summaries[1] = summary(&recovered.profiles[1], "c2", "Provisioned");
    let d = decide_at(&recovered, "2026-03-02T10:04:00Z");
    assert_eq!(d.annotations.get(FAILING_ANNOTATION), Some(&None));
    // Without the policy (halt, the default), a failing stage only waits.
    let d = decide_at(&failing_at_staging(json!({})), NOW);
    assert!(d.annotations.is_empty(), "{:?}", d.annotations);
    // Below a threshold of 2 clusters: said, nothing noted.
    let mut two = policy;
    two[FAILURE_THRESHOLD_ANNOTATION] = json!("2");
    let d = decide_at(&failing_at_staging(two), NOW);
    assert!(d.annotations.is_empty(), "{:?}", d.annotations);
    assert!(
        d.explanation.contains("below the threshold of 2 clusters"),
        "{}",
        d.explanation
    );
}

/// A stage that deployed and fails later, while it waits at its gate, counts for the failure
/// policy too.
#[test]
fn a_stage_failing_at_its_gate_is_noted_for_the_failure_policy() {
    use crate::on_failure::*;
    let (_, mut s) = bad_upgrade_at_staging(None);
    s.promotion["metadata"]["annotations"] = json!({ON_FAILURE_ANNOTATION: "rollback"});
    s.summaries[1] = summary(&s.profiles[1], "c2", "FailedNonRetriable");
    let d = decide_at(&s, NOW);
    assert!(
        d.annotations[FAILING_ANNOTATION].is_some(),
        "{:?}",
        d.annotations
    );
    assert!(
        d.explanation
            .contains("rolled back at 2026-03-02T10:10:00Z if it still fails"),
        "{}",
        d.explanation
    );
}
