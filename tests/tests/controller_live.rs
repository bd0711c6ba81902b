//! `promotion-controller run` on a real kube-apiserver (envtest), with the real webhook
//! installed, the real `kubectl` and plugin, and a test double of Sveltos' addon-controller
//! ([`promotion_e2e::addon_double`]) played step by step: the scenario decides when Sveltos
//! deploys, and waits for the controller's reaction by reading the cluster.
//!
//! Every controller runs with `--resync-period 1h` and the promotions have no delays: each
//! reaction within the scenarios' deadlines was caused by a watch event, never by a poll.
//!
//! Needs `KUBEBUILDER_ASSETS` (see `scenarios.rs`): without it (and without `CI=true`) the
//! scenarios are reported as ignored.

use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{json, Value};

use promotion_e2e::addon_double::AddonController;
use promotion_e2e::backend::{BackendKind, Cluster, SESSION_LABEL};
use promotion_e2e::controller_process::{eventually, ControllerProcess};
use promotion_e2e::envtest::objects::CLUSTER_PROFILE;
use promotion_e2e::envtest::webhook::WebhookServer;
use promotion_e2e::envtest::{self, Gate, User};
use promotion_e2e::fault_proxy::FaultProxy;
use promotion_shared::promoting::{Promoting, PROMOTING_ANNOTATION};
use promotion_shared::rollout::identity_of;

const WAIT: Duration = Duration::from_secs(60);

type Scenario = fn(&Cluster) -> Result<(), String>;

const SCENARIOS: &[(&str, Scenario)] = &[
    (
        "apply_approve_promote_complete_through_webhook_and_controller",
        mission,
    ),
    (
        "a_step_committed_before_a_crash_is_completed_without_a_new_approval",
        crash_after_commit,
    ),
    (
        "a_foreign_status_writer_is_left_alone_until_taken_over",
        foreign_writer,
    ),
    (
        "deletion_with_preserve_releases_the_profiles_and_without_deletes_them",
        deletion,
    ),
    ("a_standby_takes_over_when_the_leader_dies", failover),
    (
        "a_webhook_outage_under_fail_that_blocks_a_promotion_is_reported",
        webhook_outage,
    ),
    (
        "a_spec_change_restarts_and_a_removed_stage_loses_its_profile",
        spec_change,
    ),
    (
        "a_pause_holds_the_gate_and_brakes_with_the_webhook_down",
        pause_and_resume,
    ),
    (
        "each_rollout_is_a_revision_and_history_keeps_the_limit",
        history_of_rollouts,
    ),
    (
        "a_rollback_sets_the_stages_a_bad_upgrade_reached_back_at_once_through_crashes_a_retry_resumes_it_and_undo_restores_it",
        rollback_after_a_bad_upgrade,
    ),
    (
        "an_abort_holds_the_gate_until_retried_and_describe_says_who",
        abort_and_retry,
    ),
    (
        "a_stage_failing_past_the_grace_is_rolled_back_by_the_controller_when_asked_to",
        automatic_rollback,
    ),
    (
        "capi_clusters_are_watched_from_the_moment_their_crd_is_installed",
        capi_installed_later,
    ),
    ("a_deleted_or_edited_generated_profile_is_repaired", repair),
    (
        "describe_says_who_may_approve_by_the_published_rules_the_webhook_enforces",
        published_rules,
    ),
    (
        "the_lease_goes_to_the_kubeconfig_context_namespace_out_of_cluster",
        lease_namespace,
    ),
    (
        "a_leader_cut_off_from_the_api_server_stops_then_leads_again_when_it_returns",
        leader_partition,
    ),
    (
        "sigterm_ends_the_process_while_the_api_server_does_not_answer",
        sigterm_while_hanging,
    ),
    (
        "preserve_survives_open_source_addon_controller_and_the_garbage_collector",
        preserve_without_us,
    ),
    (
        "after_a_chart_upgrade_no_stage_is_passed_before_sveltos_deployed_it",
        upgrade_waits_for_the_deployment,
    ),
    (
        "no_stage_is_judged_before_the_capi_clusters_are_listed",
        capi_not_listed,
    ),
    (
        "a_hand_made_profile_with_a_stage_profiles_name_is_never_taken_over",
        hand_made_profile,
    ),
    (
        "an_approval_given_between_the_commit_and_the_status_is_not_credited_with_the_promotion",
        approval_after_the_commit,
    ),
    (
        "a_non_retriable_failure_is_for_good_only_for_the_spec_it_was_reported_for",
        non_retriable_until_the_spec_changes,
    ),
];

fn main() {
    let args = Arguments::from_args();
    let gate = envtest::gate();
    if let Gate::Skip(reason) = &gate {
        eprintln!("controller scenarios ignored: {reason}");
    }
    let skip = matches!(gate, Gate::Skip(_));
    let lags = match addon_lags() {
        Ok(lags) => lags,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let trials = lags
        .into_iter()
        .flat_map(|lag| {
            SCENARIOS.iter().map(move |&(name, scenario)| {
                // At no lag the plain name; at another, the lag after it.
                let trial = match lag.as_millis() {
                    0 => format!("envtest::{name}"),
                    ms => format!("envtest::{name}::addon_lag_{ms}ms"),
                };
                Trial::test(trial, move || {
                    let cluster = Cluster::new(BackendKind::Envtest)
                        .map_err(|e| Failed::from(e.to_string()))?
                        .with_addon_lag(lag);
                    scenario(&cluster).map_err(Failed::from)
                })
                .with_ignored_flag(skip)
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// The lags of the addon-controller double every scenario runs at (`PROMOTION_E2E_ADDON_LAGS`,
/// milliseconds, comma separated; default `0,500`): Sveltos at once, and Sveltos taking half a
/// second between the spec update, `Provisioning` and `Provisioned`, so that the controller
/// reads the states in between. The long run sets `0,500,5000`.
fn addon_lags() -> Result<Vec<Duration>, String> {
    let text = std::env::var("PROMOTION_E2E_ADDON_LAGS").unwrap_or_else(|_| "0,500".into());
    text.split(',')
        .map(|ms| {
            ms.trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| {
                    format!("PROMOTION_E2E_ADDON_LAGS={text:?}: {ms:?} is not milliseconds")
                })
        })
        .collect()
}

fn e<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |err| format!("{what}: {err}")
}

/// Three SveltosClusters (dev, staging, prod) and a promotion over them: dev promotes at once,
/// staging waits for a manual approval, prod is last. Selectors carry the session so that other
/// scenarios' clusters on the shared server never match.
fn promotion(cluster: &Cluster, base: &str) -> Value {
    promotion_e2e::rollout::promotion(cluster, base, None)
}

fn clusters(cluster: &Cluster) -> Result<(), String> {
    promotion_e2e::rollout::stage_clusters(cluster).map_err(e("creating the SveltosClusters"))
}

fn webhook(cluster: &Cluster) -> Result<WebhookServer, String> {
    let webhook = cluster
        .start_webhook(&[])
        .map_err(e("starting the webhook"))?;
    let configs = webhook.configurations().map_err(e("rendering manifests"))?;
    cluster
        .register_webhooks(configs)
        .map_err(e("registering the webhook"))?;
    Ok(webhook)
}

fn controller(cluster: &Cluster, extra: &[&str]) -> Result<ControllerProcess, String> {
    controller_as(cluster, User::Admin, extra)
}

/// The install's RBAC for the controller (`manifests/controller/rbac.yaml`), in force.
fn install_rbac(cluster: &Cluster) -> Result<(), String> {
    install(cluster, "controller/rbac.yaml", |_| Ok(()))
}

/// `manifests/<file>` installed ([`promotion_e2e::rollout::install_manifest`]).
fn install(
    cluster: &Cluster,
    file: &str,
    edit: impl FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    promotion_e2e::rollout::install_manifest(cluster, file, edit)
}

fn controller_as(
    cluster: &Cluster,
    user: User,
    extra: &[&str],
) -> Result<ControllerProcess, String> {
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    cluster
        .install_plugin()
        .map_err(e("installing the plugin"))?;
    let mut args = vec!["--selector", &selector, "--resync-period", "1h"];
    args.extend_from_slice(extra);
    ControllerProcess::start(&cluster.kubeconfig(user), &args).map_err(e("controller"))
}

fn stored(cluster: &Cluster, name: &str) -> Result<Value, String> {
    cluster
        .promotion(name)
        .map_err(e("reading the promotion"))?
        .ok_or_else(|| format!("promotion {name} is gone"))
}

fn profile_exists(cluster: &Cluster, name: &str) -> bool {
    matches!(cluster.get(CLUSTER_PROFILE, None, name), Ok(Some(_)))
}

/// Wait until the generated profile `profile` exists.
fn until_profile(cluster: &Cluster, profile: &str, what: &str) -> Result<(), String> {
    eventually(what, WAIT, || {
        profile_exists(cluster, profile).then_some(())
    })
}

/// The common prologue: the fleet, the addon double, a controller (as admin), and a promotion
/// named `base` brought to staging's gate.
fn gated<'c>(
    cluster: &'c Cluster,
    base: &str,
) -> Result<(AddonController<'c>, ControllerProcess, String), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    let ctl = controller(cluster, &[])?;
    let name = to_the_gate(cluster, &addon, &promotion(cluster, base))?;
    Ok((addon, ctl, name))
}

/// A promotion manifest's name.
fn name_of(promotion: &Value) -> String {
    promotion["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The last `n` lines of `log`.
fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn current_stage(promotion: &Value) -> &str {
    promotion
        .pointer("/status/currentStageName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn description(promotion: &Value, stage: &str) -> String {
    promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .and_then(|l| {
            l.iter()
                .find(|s| s.get("name").and_then(Value::as_str) == Some(stage))
        })
        .and_then(|s| s.get("currentStatusDescription"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Wait until the stored promotion satisfies `check`.
fn until(
    cluster: &Cluster,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let mut last: Option<Value> = None;
    eventually(what, WAIT, || {
        let seen = cluster.promotion(name).ok().flatten()?;
        if check(&seen) {
            return Some(seen);
        }
        last = Some(seen);
        None
    })
    .map_err(|e| {
        // What was seen last says which step did not happen.
        let status = last.and_then(|p| p.get("status").cloned());
        format!(
            "{e}; the promotion's status last read: {}",
            status.unwrap_or(Value::Null)
        )
    })
}

/// `kubectl apply` (as the admin) of `manifest`, written to the scenario's folder as `file`.
fn apply(cluster: &Cluster, file: &str, manifest: &Value) -> Result<(), String> {
    let path = cluster
        .write_manifest(file, manifest)
        .map_err(e("writing the manifest"))?;
    kubectl_ok(
        cluster,
        User::Admin,
        &["apply", "-f", &path.to_string_lossy()],
    )?;
    Ok(())
}

/// The release manager approves staging, with a reason, through the plugin.
fn release_manager_approves_staging(cluster: &Cluster, name: &str) -> Result<(), String> {
    kubectl_ok(
        cluster,
        User::ReleaseManager,
        &[
            "promotion",
            "approve",
            name,
            "--stage",
            "staging",
            "--reason",
            "dev soaked",
        ],
    )?;
    Ok(())
}

fn kubectl_ok(cluster: &Cluster, user: User, args: &[&str]) -> Result<String, String> {
    cluster.kubectl_ok(user, args)
}

/// Sveltos deploys what is applied (one pass of the double); then the controller applies
/// `next`, the next stage's profile.
fn deployed_then(cluster: &Cluster, addon: &AddonController, next: &str) -> Result<(), String> {
    addon.sync(true).map_err(e("addon double"))?;
    until_profile(cluster, next, "the next stage's profile applied")
}

/// Bring a promotion to staging's gate: applied, dev deployed and promoted, staging deployed.
fn to_the_gate(
    cluster: &Cluster,
    addon: &AddonController,
    promotion: &Value,
) -> Result<String, String> {
    let name = name_of(promotion);
    apply(cluster, "promotion.yaml", promotion)?;
    until_profile(cluster, &format!("{name}-dev"), "the dev profile applied")?;
    deployed_then(cluster, addon, &format!("{name}-staging"))?;
    addon.sync(true).map_err(e("addon double"))?;
    until(cluster, &name, "staging awaiting approval", |p| {
        description(p, "staging").starts_with("Paused: Awaiting Manual Approval")
    })?;
    Ok(name)
}

fn mission(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let _webhook = webhook(cluster)?;
    // Exactly the install's permissions: a verb missing from rbac.yaml fails the mission.
    install_rbac(cluster)?;
    let mut ctl = controller_as(cluster, User::Controller, &[])?;
    let addon = AddonController::new(cluster);
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "mission"))?;

    let describe = kubectl_ok(cluster, User::Viewer, &["promotion", "describe", &name])?;
    assert_contains(
        &describe,
        &["awaiting approval", "staging"],
        "describe at the gate",
    )?;

    release_manager_approves_staging(cluster, &name)?;
    // The controller uses the approval and promotes: prod's profile exists, `approved` is gone,
    // and the committed step is cleared once the status records the promotion.
    until_profile(cluster, &format!("{name}-prod"), "prod's profile applied")?;
    let p = until(cluster, &name, "the approval used and the step done", |p| {
        p.pointer("/spec/stages/1/trigger/manual/approved")
            .is_none()
            && current_stage(p) == "prod"
            && p.pointer(&format!(
                "/metadata/annotations/{}",
                PROMOTING_ANNOTATION.replace('/', "~1")
            ))
            .is_none()
    })?;
    let approvals = p
        .pointer("/metadata/annotations/audit.kubectl-promotion.dev~1approvals")
        .and_then(Value::as_str)
        .unwrap_or("");
    assert_contains(
        approvals,
        &["release-manager", "dev soaked"],
        "the approval record",
    )?;

    addon.sync(true).map_err(e("addon double"))?;
    kubectl_ok(
        cluster,
        User::Viewer,
        &[
            "promotion",
            "wait",
            &name,
            "--for=complete",
            "--timeout=60s",
        ],
    )?;
    let history = kubectl_ok(cluster, User::Admin, &["promotion", "describe", &name])?;
    assert_contains(&history, &["release-manager"], "describe after completion")?;
    // Upstream's Events, from our controller (published right after the writes they describe).
    // The first rollout is not announced as a restart.
    let wanted = [
        "Provisioning stage dev",
        "Provisioning stage staging",
        "Provisioning stage prod",
        "Stage prod provisioned",
    ];
    let events = eventually("upstream's Events", WAIT, || {
        kubectl_ok(
            cluster,
            User::Admin,
            &[
                "get",
                "events",
                "-A",
                "--field-selector",
                &format!("involvedObject.name={name}"),
                "-o",
                "json",
            ],
        )
        .ok()
        .filter(|events| wanted.iter().all(|w| events.contains(w)))
    })?;
    if events.contains("(Restart)") {
        return Err(format!(
            "the first rollout announced as a restart: {events}"
        ));
    }
    // The phase gauge is set once the reconcile's writes are done.
    let metrics_addr = ctl.metrics.parse().map_err(e("metrics address"))?;
    let wanted = [
        "promotion_controller_reconciles_total{result=\"ok\"}",
        "promotion_controller_promotions{phase=\"complete\"} 1",
    ];
    let metrics = eventually("/metrics", WAIT, || {
        promotion_e2e::envtest::http::get(metrics_addr, "/metrics")
            .ok()
            .filter(|m| wanted.iter().all(|w| m.1.contains(w)))
    })?;
    // Reconciles that watch events asked for were timed (the promotion is within --selector).
    let timed = metrics
        .1
        .lines()
        .find_map(|l| l.strip_prefix("promotion_controller_lag_seconds_count "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if timed == 0 {
        return Err(format!(
            "no reconcile timed from its watch event:
{}",
            metrics.1
        ));
    }
    let ready = promotion_e2e::envtest::http::get(
        ctl.health.parse().map_err(e("health address"))?,
        "/readyz",
    )
    .map_err(e("GET /readyz"))?;
    if ready.0 != 200 {
        return Err(format!("/readyz: {ready:?}"));
    }
    // A log line names the promotion and the stage of what it did.
    ctl.wait_line("approval used, with promotion and stage", WAIT, |l| {
        l.get("message").and_then(Value::as_str) == Some("approval used")
            && l.get("stage").and_then(Value::as_str) == Some("staging")
            && l.pointer("/span/promotion").and_then(Value::as_str) == Some(name.as_str())
    })
    .map_err(|e| e.to_string())?;
    match ctl.terminate() {
        Some(s) if s.success() => Ok(()),
        other => Err(format!("SIGTERM: exit {other:?}\n{}", ctl.log())),
    }
}

/// The commit (approval removed, step recorded) happened, then the process died before the
/// status: the next controller completes the step without asking for a new approval.
fn crash_after_commit(cluster: &Cluster) -> Result<(), String> {
    let (_addon, mut ctl, name) = gated(cluster, "crash")?;
    ctl.kill();
    // What the dead controller's commit left: `approved` removed, the step recorded.
    let mut p = stored(cluster, &name)?;
    let id = identity_of(&p).map_err(|e| format!("{e:?}"))?.id;
    p["metadata"]["annotations"][PROMOTING_ANNOTATION] = json!(Promoting {
        stage: "staging".into(),
        rollout: id
    }
    .to_annotation());
    if let Some(status) = p.as_object_mut() {
        status.remove("status");
    }
    cluster.put(&p).map_err(e("writing the committed step"))?;
    let _ctl = controller(cluster, &[])?;
    until_profile(cluster, &format!("{name}-prod"), "prod's profile applied")?;
    until(cluster, &name, "the step done and cleared", |p| {
        current_stage(p) == "prod"
            && p.pointer("/metadata/annotations")
                .and_then(|a| a.get(PROMOTING_ANNOTATION))
                .is_none()
    })?;
    Ok(())
}

fn foreign_writer(cluster: &Cluster) -> Result<(), String> {
    let (_addon, mut ctl, name) = gated(cluster, "foreign")?;
    ctl.kill();
    // Someone else writes the status (as another reconciler would): kubectl as field manager
    // "addon-controller".
    let p = stored(cluster, &name)?;
    let mut status = p["status"].clone();
    status["stages"][1]["currentStatusDescription"] =
        json!("Paused: Awaiting Manual Approval (by them)");
    let patch = json!({"status": status}).to_string();
    kubectl_ok(
        cluster,
        User::Admin,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--subresource=status",
            "--type=merge",
            "--field-manager=addon-controller",
            "-p",
            &patch,
        ],
    )?;
    let mut ctl = controller(cluster, &[])?;
    ctl.wait_line("the foreign writer named", WAIT, |l| {
        l.get("manager").and_then(Value::as_str) == Some("addon-controller")
    })
    .map_err(|e| e.to_string())?;
    let describe = kubectl_ok(cluster, User::Admin, &["promotion", "describe", &name])?;
    assert_contains(
        &describe,
        &[
            "Reconciled by:  another reconciler (addon-controller)",
            "ForeignStatusWriter",
        ],
        "describe of a foreign promotion",
    )?;
    // Another replica (a new leader) warns again: the same Event, its series counted on, never a
    // second Event for one message.
    ctl.kill();
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    let mut ctl = ControllerProcess::start_with_env(
        &cluster.kubeconfig(User::Admin),
        &["--selector", &selector, "--resync-period", "1h"],
        &[("POD_NAME", "promotion-controller-replica-b")],
    )
    .map_err(e("controller"))?;
    ctl.wait_line("the foreign writer named again", WAIT, |l| {
        l.get("manager").and_then(Value::as_str) == Some("addon-controller")
    })
    .map_err(|e| e.to_string())?;
    let series = eventually("the warning's series continued", WAIT, || {
        let listed = kubectl_ok(
            cluster,
            User::Admin,
            &[
                "get",
                "events.events.k8s.io",
                "-n",
                "default",
                "--field-selector",
                &format!("regarding.name={name},reason=ForeignStatusWriter"),
                "-o",
                "json",
            ],
        )
        .ok()?;
        let listed: Value = serde_json::from_str(&listed).ok()?;
        let items = listed["items"].as_array()?.clone();
        // The repeat is recorded after the line: as a series, or (wrongly) a second Event.
        (items.len() > 1 || items.iter().any(|i| i.pointer("/series/count").is_some()))
            .then_some(items)
    })?;
    let [event] = series.as_slice() else {
        return Err(format!(
            "one Event per message, not {}: {series:?}",
            series.len()
        ));
    };
    if event.pointer("/series/count") != Some(&json!(2))
        || event["reportingInstance"] != json!("promotion-controller")
    {
        return Err(format!(
            "the series begun by the first replica counts the second's warning: {event}"
        ));
    }
    // An approval now is not acted on while the other writer owns the status: the reconcile
    // its watch event asks for is skipped (the controller's own evidence: its counter of
    // skipped reconciles of a foreign promotion goes up), and the stage has not moved.
    let foreign = "promotion_controller_foreign_status_writer_total{manager=\"addon-controller\"}";
    let before = metric(&ctl, foreign)?;
    kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    eventually("the approval's reconcile skipped", WAIT, || {
        metric(&ctl, foreign).ok().filter(|n| *n > before)
    })?;
    let left = stored(cluster, &name)?;
    if current_stage(&left) != "staging" {
        return Err(format!("a foreign promotion was advanced: {left}"));
    }
    // Taken over by annotation: the controller acts.
    kubectl_ok(
        cluster,
        User::Admin,
        &[
            "annotate",
            "clusterpromotion",
            &name,
            "promotion-controller.kubectl-promotion.dev/take-over=true",
        ],
    )?;
    until(cluster, &name, "promoted after the take-over", |p| {
        current_stage(p) == "prod"
    })?;
    Ok(())
}

fn deletion(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    let _ctl = controller(cluster, &[])?;
    let mut preserved = promotion(cluster, "keep");
    preserved["spec"]["preserveClusterProfilesOnDelete"] = json!(true);
    let keep = to_the_gate(cluster, &addon, &preserved)?;
    let gone = to_the_gate(cluster, &addon, &promotion(cluster, "drop"))?;
    for name in [&keep, &gone] {
        kubectl_ok(
            cluster,
            User::Admin,
            &["delete", "clusterpromotion", name, "--wait=false"],
        )?;
    }
    eventually("the preserving promotion gone", WAIT, || {
        matches!(cluster.promotion(&keep), Ok(None)).then_some(())
    })?;
    for stage in ["dev", "staging"] {
        let profile = cluster
            .get(CLUSTER_PROFILE, None, &format!("{keep}-{stage}"))
            .map_err(e("reading a profile"))?
            .ok_or_else(|| format!("{keep}-{stage} was not preserved"))?;
        if profile
            .pointer("/metadata/ownerReferences")
            .is_some_and(|o| o.as_array().is_some_and(|a| !a.is_empty()))
        {
            return Err(format!(
                "{keep}-{stage} still names its owner: the garbage collector would delete it"
            ));
        }
    }
    eventually("the other promotion and its profiles gone", WAIT, || {
        (matches!(cluster.promotion(&gone), Ok(None))
            && !profile_exists(cluster, &format!("{gone}-dev"))
            && !profile_exists(cluster, &format!("{gone}-staging")))
        .then_some(())
    })?;
    Ok(())
}

fn failover(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    // The install's RBAC: the Lease lives in its namespace.
    install_rbac(cluster)?;
    let lease = cluster.name("lease");
    let election = [
        "--leader-elect",
        "--leader-elect-namespace",
        "kubectl-promotion-system",
        "--leader-elect-lease-name",
        lease.as_str(),
        "--leader-elect-lease-duration",
        "3",
    ];
    let mut first = controller_as(cluster, User::Controller, &election)?;
    first
        .wait_line("leading", WAIT, |l| {
            l.get("message").and_then(Value::as_str) == Some("leading: reconciling every promotion")
        })
        .map_err(|e| e.to_string())?;
    let mut second = controller_as(cluster, User::Controller, &election)?;
    second
        .wait_line("standing by", WAIT, |l| {
            l.get("message").and_then(Value::as_str) == Some("not leading: standing by")
        })
        .map_err(|e| e.to_string())?;
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "failover"))?;
    first.kill();
    second
        .wait_line("the standby leads", WAIT, |l| {
            l.get("message").and_then(Value::as_str) == Some("leading: reconciling every promotion")
        })
        .map_err(|e| e.to_string())?;
    kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    until(cluster, &name, "promoted by the new leader", |p| {
        current_stage(p) == "prod"
    })?;
    // A clean shutdown hands the Lease over at once: no holder left behind.
    match second.terminate() {
        Some(status) if status.success() => {}
        other => return Err(format!("SIGTERM: exit {other:?}\n{}", second.log())),
    }
    let lease_kind = promotion_e2e::envtest::objects::Kind {
        api_version: "coordination.k8s.io/v1",
        kind: "Lease",
    };
    let stored = cluster
        .get(lease_kind, Some("kubectl-promotion-system"), &lease)
        .map_err(e("reading the Lease"))?
        .ok_or("the Lease is gone")?;
    if stored
        .pointer("/spec/holderIdentity")
        .is_some_and(|h| !h.is_null())
    {
        return Err(format!(
            "the Lease still has a holder after SIGTERM: {stored}"
        ));
    }
    Ok(())
}

/// The webhook down under `failurePolicy: Fail` refuses the controller's commit: reported as a
/// Warning Event that `describe` shows, and nothing is lost (the approval stays).
fn webhook_outage(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    install_rbac(cluster)?;
    let mut webhook = webhook(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller_as(cluster, User::Controller, &[])?;
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "outage"))?;
    ctl.kill();
    kubectl_ok(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    webhook.stop();
    let mut ctl = controller_as(cluster, User::Controller, &[])?;
    // The check at start says it before any promotion waits on it.
    ctl.wait_line("the admission check's refusal", WAIT, |l| {
        l.get("message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.starts_with("admission check: this controller's writes are refused"))
            && l.get("promotion").and_then(Value::as_str).is_some()
    })
    .map_err(|e| e.to_string())?;
    let describe = eventually("the blocked write reported", WAIT, || {
        kubectl_ok(cluster, User::Admin, &["promotion", "describe", &name])
            .ok()
            .filter(|d| d.contains("WriteBlocked"))
    })?;
    assert_contains(
        &describe,
        &[
            "could not write",
            "promotion-controller blocked: see Next step",
            "promotion-controller cannot write this promotion",
        ],
        "describe during the outage",
    )?;
    let p = stored(cluster, &name)?;
    if p.pointer("/spec/stages/1/trigger/manual/approved") != Some(&json!(true))
        || current_stage(&p) != "staging"
    {
        return Err(format!("the outage changed the promotion: {p}"));
    }
    Ok(())
}

/// Each rollout is recorded as a ControllerRevision in the controller's namespace, with the
/// install's RBAC: what it rolled, who started it, how it ended; beyond
/// `--revision-history-limit` the oldest goes, but never the current one.
/// The revisions of the promotion with UID `uid`, as `kubectl get controllerrevisions` lists
/// them in the controller's namespace (`None`: not readable now).
fn revisions_of(cluster: &Cluster, uid: &str) -> Option<Vec<promotion_shared::history::Revision>> {
    use promotion_shared::history::{Revision, PROMOTION_UID_LABEL};
    let listed = kubectl_ok(
        cluster,
        User::Admin,
        &[
            "get",
            "controllerrevisions",
            "-n",
            "kubectl-promotion-system",
            "-l",
            &format!("{PROMOTION_UID_LABEL}={uid}"),
            "-o",
            "json",
        ],
    )
    .ok()?;
    let listed: Value = serde_json::from_str(&listed).ok()?;
    Some(
        listed["items"]
            .as_array()?
            .iter()
            .filter_map(Revision::decode)
            .collect(),
    )
}

fn history_of_rollouts(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    install_rbac(cluster)?;
    let _webhook = webhook(cluster)?;
    let _ctl = controller_as(
        cluster,
        User::Controller,
        &[
            "--history-namespace",
            "kubectl-promotion-system",
            "--revision-history-limit",
            "2",
        ],
    )?;
    let mut manifest = promotion(cluster, "history");
    let name = name_of(&manifest);
    // The revisions as `kubectl get` lists them: (number, chart version, outcome), oldest first.
    let revisions = |uid: &str| -> Option<Vec<(i64, String, String)>> {
        let mut out: Vec<(i64, String, String)> = revisions_of(cluster, uid)?
            .into_iter()
            .map(|r| {
                let version = r.data["profileSpec"]["helmCharts"][0]["chartVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let outcome = r.record.map(|rec| rec.outcome()).unwrap_or_default();
                (r.number, version, outcome)
            })
            .collect();
        out.sort();
        Some(out)
    };
    let row = |n: i64, v: &str, o: &str| (n, v.to_string(), o.to_string());
    let mut uid = String::new();
    for (version, want) in [
        ("3.6.2", vec![row(1, "3.6.2", "in progress")]),
        (
            "3.6.3",
            vec![
                row(1, "3.6.2", "superseded by 2"),
                row(2, "3.6.3", "in progress"),
            ],
        ),
        (
            "3.6.4",
            vec![
                row(2, "3.6.3", "superseded by 3"),
                row(3, "3.6.4", "in progress"),
            ],
        ),
    ] {
        manifest["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!(version);
        apply(cluster, "promotion.yaml", &manifest)?;
        if uid.is_empty() {
            uid = stored(cluster, &name)?["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
        let found = eventually(&format!("the history after {version}"), WAIT, || {
            revisions(&uid).filter(|r| *r == want)
        });
        if let Err(why) = found {
            return Err(format!("{why}: {:?}", revisions(&uid)));
        }
    }
    // `history` as a viewer holding the roles of manifests/roles (promotion-viewer-controller
    // bound in the controller's namespace): one row per revision kept, the admin who changed the
    // spec (the webhook's record), what each changed.
    install(cluster, "roles/roles.yaml", |_| Ok(()))?;
    cluster
        .put(&json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "viewers-promotion-viewer-controller",
                         "namespace": "kubectl-promotion-system"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "promotion-viewer-controller"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                          "name": "viewers"}],
        }))
        .map_err(e("binding the viewers"))?;
    let table = kubectl_ok(cluster, User::Viewer, &["promotion", "history", &name])?;
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| {
            l.split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    let cells = |i: usize| -> Vec<&str> {
        let row = &lines[i];
        vec![row[0], row[2], row[3], row[4], row[5]]
    };
    if lines.len() != 3
        || lines[0] != ["REVISION", "STARTED", "BY", "OUTCOME", "REACHED", "CHANGE"]
        || cells(1)
            != [
                "2",
                "admin",
                "superseded by 3",
                "dev",
                "kyverno/kyverno 3.6.3 as kyverno/kyverno-latest (earlier revisions pruned)",
            ]
        || cells(2)
            != [
                "3",
                "admin",
                "in progress",
                "dev",
                "kyverno/kyverno 3.6.3 → 3.6.4",
            ]
    {
        return Err(format!("history as a viewer:\n{table}\n{lines:?}"));
    }
    let whole = kubectl_ok(
        cluster,
        User::Viewer,
        &[
            "promotion",
            "history",
            &name,
            "--revision",
            "3",
            "-o",
            "json",
        ],
    )?;
    let whole: Value = serde_json::from_str(&whole).map_err(e("history --revision -o json"))?;
    if whole["profileSpec"]["helmCharts"][0]["chartVersion"] != "3.6.4"
        || whole["record"]["startedBy"] != "admin"
    {
        return Err(format!("history --revision 3: {whole}"));
    }
    // describe names the revision each stage runs.
    let described = eventually("describe naming dev's revision", WAIT, || {
        kubectl_ok(cluster, User::Viewer, &["promotion", "describe", &name])
            .ok()
            .filter(|d| d.contains("(this rollout's configuration, revision 3)"))
    });
    if let Err(why) = described {
        let now = kubectl_ok(cluster, User::Viewer, &["promotion", "describe", &name]);
        return Err(format!("{why}: {now:?}"));
    }
    let out = cluster
        .kubectl(
            User::Viewer,
            &["promotion", "history", &name, "--revision", "1"],
        )
        .map_err(e("history --revision 1"))?;
    if out.code != 1 || !out.stderr.contains("has no revision 1 (recorded: 2, 3)") {
        return Err(format!("a pruned revision: {out}"));
    }
    Ok(())
}

/// Pausing holds the gate: an approval given while paused is not used and prod does not start
/// (the controller's own decision says why); resuming uses it. The webhook records who paused;
/// with the webhook down a pause still goes through, unrecorded, and a resume is refused.
fn pause_and_resume(cluster: &Cluster) -> Result<(), String> {
    use promotion_shared::pause::{pause_record, paused, PAUSED_ANNOTATION};
    clusters(cluster)?;
    install_rbac(cluster)?;
    let mut webhook = webhook(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller_as(cluster, User::Controller, &[])?;
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "pause"))?;
    let annotate = |user: User, value: Option<&str>| {
        let arg = match value {
            Some(v) => format!("{PAUSED_ANNOTATION}={v}"),
            None => format!("{PAUSED_ANNOTATION}-"),
        };
        cluster
            .kubectl(
                user,
                &["annotate", "--overwrite", "clusterpromotion", &name, &arg],
            )
            .map_err(e("kubectl annotate"))
    };
    let out = annotate(User::ReleaseManager, Some("bad chart"))?;
    if !out.success() {
        return Err(format!("pausing: {out}"));
    }
    let p = stored(cluster, &name)?;
    let by = paused(&p)
        .and_then(|p| p.record)
        .ok_or_else(|| format!("the pause is not recorded: {p}"))?;
    if by.user != "release-manager" || by.reason.as_deref() != Some("bad chart") {
        return Err(format!("the pause recorded as {by:?}"));
    }
    kubectl_ok(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    // The reconcile the approval asked for decided to hold.
    ctl.wait_line("the decision to hold the gate", WAIT, |l| {
        l.get("explanation")
            .and_then(Value::as_str)
            .is_some_and(|x| x.starts_with("staging may advance, but the promotion is paused"))
    })
    .map_err(|e| e.to_string())?;
    let p = stored(cluster, &name)?;
    if current_stage(&p) != "staging"
        || p.pointer("/spec/stages/1/trigger/manual/approved") != Some(&json!(true))
        || profile_exists(cluster, &format!("{name}-prod"))
    {
        return Err(format!(
            "a paused promotion advanced or used its approval: {p}"
        ));
    }
    eventually("the phase gauge says paused", WAIT, || {
        metric(&ctl, "promotion_controller_promotions{phase=\"paused\"}")
            .ok()
            .filter(|n| *n == 1.0)
    })?;

    // Resumed: the approval is used and prod starts.
    let out = annotate(User::ReleaseManager, None)?;
    if !out.success() {
        return Err(format!("resuming: {out}"));
    }
    until_profile(cluster, &format!("{name}-prod"), "prod started on resume")?;
    let record = pause_record(&stored(cluster, &name)?)?.ok_or("the resume is not recorded")?;
    if record.paused || record.user != "release-manager" {
        return Err(format!("the resume recorded as {record:?}"));
    }

    // The emergency brake with the webhook down: a pause goes through, unrecorded; a resume
    // (which governance may restrict) is refused until the webhook is back.
    webhook.stop();
    let out = annotate(User::ReleaseManager, Some("webhook outage"))?;
    if !out.success() {
        return Err(format!("pausing with the webhook down: {out}"));
    }
    let p = stored(cluster, &name)?;
    match paused(&p) {
        Some(pause) if pause.record.is_none() => {}
        other => return Err(format!("the unrecorded pause reads as {other:?}: {p}")),
    }
    let out = annotate(User::ReleaseManager, None)?;
    if out.success() || !out.stderr.contains("failed calling webhook") {
        return Err(format!("a resume with the webhook down: {out}"));
    }
    Ok(())
}

/// A completed rollout, then a manifest with a new chart version and without the last stage:
/// a new rollout (new hashes), restarted at the first stage with the new spec, and the removed
/// stage's profile deleted.
fn spec_change(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller(cluster, &[])?;
    let original = promotion(cluster, "change");
    let name = to_the_gate(cluster, &addon, &original)?;
    kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    until_profile(cluster, &format!("{name}-prod"), "prod's profile applied")?;
    addon.sync(true).map_err(e("addon double"))?;
    let before = until(cluster, &name, "complete", |p| {
        current_stage(p) == "prod" && description(p, "prod").starts_with("Successfully provisioned")
    })?;
    let mut changed = original.clone();
    changed["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.6.3");
    if let Some(stages) = changed["spec"]["stages"].as_array_mut() {
        stages.truncate(2);
    }
    apply(cluster, "changed.yaml", &changed)?;
    until(cluster, &name, "restarted at dev", |p| {
        current_stage(p) == "dev"
            && p.pointer("/status/stagesHash") != before.pointer("/status/stagesHash")
            && p.pointer("/status/profileSpecHash") != before.pointer("/status/profileSpecHash")
    })
    .map_err(|e| format!("{e}\ncontroller log:\n{}", tail(&ctl.log(), 40)))?;
    eventually("the removed stage's profile deleted", WAIT, || {
        (!profile_exists(cluster, &format!("{name}-prod"))).then_some(())
    })?;
    // The status is written first, the profile right after it (the controller's write order).
    eventually("dev restarted with the new spec", WAIT, || {
        cluster
            .get(CLUSTER_PROFILE, None, &format!("{name}-dev"))
            .ok()
            .flatten()
            .filter(|dev| dev.pointer("/spec/helmCharts/0/chartVersion") == Some(&json!("3.6.3")))
    })?;
    Ok(())
}

/// The controller starts without Cluster API; the Cluster CRD is installed later and a CAPI
/// Cluster joins the prod stage: the controller watches it from then on, and prod waits for its
/// ClusterSummary (which the addon double, knowing only SveltosClusters, never writes).
fn capi_installed_later(cluster: &Cluster) -> Result<(), String> {
    let (addon, mut ctl, name) = gated(cluster, "capi")?;
    install_capi_crd(cluster)?;
    ctl.wait_line("the CAPI watch started", WAIT, |l| {
        l.get("message").and_then(Value::as_str)
            == Some("CAPI Cluster CRD found: watching CAPI Clusters")
    })
    .map_err(|e| e.to_string())?;
    capi_cluster(cluster, "capi-1", "prod")?;
    kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    until_profile(cluster, &format!("{name}-prod"), "prod's profile applied")?;
    addon.sync(true).map_err(e("addon double"))?;
    until_waiting_for_capi(cluster, &name, "prod", "capi-1")?;
    Ok(())
}

/// The controller's profile watch sees only profiles labelled as a promotion's: a hand-made
/// ClusterProfile named `<promotion>-dev` is not in its cache, and a forced apply would take it
/// over (its spec replaced, the promotion made its owner, deleted with it). The apply is fenced:
/// the profile is read first, left as it is, and the block reported; once it is gone, dev's
/// profile is applied.
fn hand_made_profile(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let _ctl = controller(cluster, &[])?;
    let promotion = promotion(cluster, "handmade");
    let name = name_of(&promotion);
    let profile = format!("{name}-dev");
    let theirs = json!({"matchLabels": {"team": "someone-else"}});
    cluster
        .put(&json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
            "metadata": {"name": profile},
            "spec": {"clusterSelector": theirs},
        }))
        .map_err(e("creating the hand-made profile"))?;
    apply(cluster, "promotion.yaml", &promotion)?;
    eventually("the fenced apply reported", WAIT, || {
        kubectl_ok(
            cluster,
            User::Admin,
            &[
                "get",
                "events",
                "-A",
                "--field-selector",
                &format!("involvedObject.name={name},reason=WriteBlocked"),
                "-o",
                "json",
            ],
        )
        .ok()
        .filter(|events| events.contains("was not generated for promotion"))
    })?;
    let kept = cluster
        .get(CLUSTER_PROFILE, None, &profile)
        .map_err(e("reading the hand-made profile"))?
        .ok_or("the hand-made profile is gone")?;
    if kept.pointer("/spec/clusterSelector") != Some(&theirs)
        || kept.pointer("/metadata/ownerReferences").is_some()
        || kept.pointer("/metadata/labels").is_some()
    {
        return Err(format!("the hand-made profile was taken over: {kept}"));
    }
    kubectl_ok(
        cluster,
        User::Admin,
        &["delete", "clusterprofile", &profile],
    )?;
    eventually("dev's own profile applied", WAIT, || {
        cluster
            .get(CLUSTER_PROFILE, None, &profile)
            .ok()
            .flatten()
            .filter(|p| p.pointer("/metadata/ownerReferences/0/name") == Some(&json!(name)))
    })?;
    Ok(())
}

/// The value of one series of the controller's `/metrics` (0 while it has none).
fn metric(ctl: &ControllerProcess, series: &str) -> Result<f64, String> {
    let addr = ctl.metrics.parse().map_err(e("metrics address"))?;
    let (_, text) =
        promotion_e2e::envtest::http::get(addr, "/metrics").map_err(e("GET /metrics"))?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0))
}

/// The CAPI Cluster CRD (the shared server keeps it once a scenario installed it).
fn install_capi_crd(cluster: &Cluster) -> Result<(), String> {
    cluster
        .put(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusters.cluster.x-k8s.io"},
            "spec": {
                "group": "cluster.x-k8s.io", "scope": "Namespaced",
                "names": {"kind": "Cluster", "listKind": "ClusterList",
                          "plural": "clusters", "singular": "cluster"},
                "versions": [{"name": "v1beta1", "served": true, "storage": true,
                              "subresources": {"status": {}},
                              "schema": {"openAPIV3Schema": {"type": "object",
                                  "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        }))
        .map_err(e("installing the CAPI Cluster CRD"))?;
    Ok(())
}

/// Wait until `stage` of promotion `name` waits for the ClusterSummary of CAPI Cluster `capi`.
fn until_waiting_for_capi(
    cluster: &Cluster,
    name: &str,
    stage: &str,
    capi: &str,
) -> Result<(), String> {
    let waiting = format!(
        "ClusterSummary for Cluster {}/{capi} is not created yet.",
        cluster.namespace()
    );
    until(cluster, name, &format!("{stage} waiting for {capi}"), |p| {
        p.pointer("/status/stages")
            .and_then(Value::as_array)
            .and_then(|l| l.iter().find(|s| s["name"] == stage))
            .and_then(|s| s.get("failureMessage"))
            .and_then(Value::as_str)
            == Some(waiting.as_str())
    })?;
    Ok(())
}

/// A ready CAPI Cluster of this session labelled `env`.
fn capi_cluster(cluster: &Cluster, name: &str, env: &str) -> Result<(), String> {
    cluster
        .put(&json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": cluster.namespace(),
                         "labels": {"env": env, SESSION_LABEL: cluster.session()}},
            "spec": {},
            "status": {"conditions": [{"type": "ControlPlaneInitialized", "status": "True"}]},
        }))
        .map_err(e("creating a CAPI Cluster"))?;
    Ok(())
}

/// A fleet read without its CAPI Clusters would let dev pass with its SveltosCluster alone (or
/// as "no matching clusters"): while the controller may not list CAPI Clusters, no reconcile
/// decides anything and `/readyz` names the watch; once it may, dev waits for its CAPI
/// cluster's ClusterSummary.
fn capi_not_listed(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    install_capi_crd(cluster)?;
    capi_cluster(cluster, "capi-dev", "dev")?;
    // The install's ClusterRole without the CAPI rule, for a user of this scenario alone (the
    // install's own role is shared by the other scenarios).
    let user = format!("capi-blind-{}", cluster.session());
    let role_name = format!("promotion-e2e:{user}");
    let mut role = Value::Null;
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/controller/rbac.yaml"),
    )
    .map_err(e("reading the RBAC manifest"))?;
    let objects: Vec<Value> =
        serde_saphyr::from_multiple(&manifest).map_err(e("parsing the RBAC manifest"))?;
    for o in objects {
        if o["kind"] == "ClusterRole" {
            role = o;
        }
    }
    role["metadata"] = json!({"name": role_name});
    let all_rules = role["rules"].clone();
    let capi_rule = |r: &Value| r["apiGroups"][0] == "cluster.x-k8s.io";
    role["rules"] = json!(all_rules
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| !capi_rule(r))
        .collect::<Vec<_>>());
    cluster.put(&role).map_err(e("creating the role"))?;
    cluster
        .put(&json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": role_name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role_name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }))
        .map_err(e("binding the role"))?;
    let text = std::fs::read_to_string(cluster.kubeconfig(User::Admin)).map_err(e("reading"))?;
    let mut config: Value = serde_saphyr::from_str(&text).map_err(e("parsing the kubeconfig"))?;
    for u in config["users"].as_array_mut().into_iter().flatten() {
        u["user"]["as"] = json!(user);
    }
    let kubeconfig = cluster.dir().join("kubeconfig-capi-blind");
    std::fs::write(&kubeconfig, config.to_string()).map_err(e("writing the kubeconfig"))?;

    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    let mut ctl = ControllerProcess::start(
        &kubeconfig,
        &["--selector", &selector, "--resync-period", "1h"],
    )
    .map_err(e("controller"))?;
    let addon = AddonController::new(cluster);
    let promotion = promotion(cluster, "blind");
    let name = name_of(&promotion);
    apply(cluster, "promotion.yaml", &promotion)?;
    // Two failed lists of CAPI Clusters after the promotion was stored: a reconcile that did
    // not wait for them would have added the finalizer and applied dev's profile by now.
    for _ in 0..2 {
        ctl.wait_next_line("the CAPI watch refused", WAIT, |l| {
            l.get("watch").and_then(Value::as_str) == Some("CapiClusters")
                && l.get("message").and_then(Value::as_str) == Some("watch failed; retrying")
        })
        .map_err(|e| e.to_string())?;
    }
    let stored = stored(cluster, &name)?;
    if stored.pointer("/metadata/finalizers").is_some()
        || profile_exists(cluster, &format!("{name}-dev"))
    {
        return Err(format!(
            "the controller decided before the CAPI Clusters were listed: {stored}"
        ));
    }
    let ready = promotion_e2e::envtest::http::get(
        ctl.health.parse().map_err(e("health address"))?,
        "/readyz",
    )
    .map_err(e("GET /readyz"))?;
    if ready.0 != 503 || !ready.1.contains("CapiClusters") {
        return Err(format!(
            "/readyz while CAPI Clusters are not listed: {ready:?}"
        ));
    }
    // Allowed to list them: the watch's retry lists them, and dev waits for its CAPI cluster.
    role["rules"] = all_rules;
    cluster.put(&role).map_err(e("granting the CAPI rule"))?;
    until_profile(cluster, &format!("{name}-dev"), "the dev profile applied")?;
    addon.sync(true).map_err(e("addon double"))?;
    until_waiting_for_capi(cluster, &name, "dev", "capi-dev")?;
    Ok(())
}

/// D10: the generated profile of a stage the rollout reached, deleted or edited by hand, is
/// applied again with the spec the stage received (the rollout identity says it is the spec's).
fn repair(cluster: &Cluster) -> Result<(), String> {
    let (_addon, _ctl, name) = gated(cluster, "repair")?;
    let dev = format!("{name}-dev");
    let original = cluster
        .get(CLUSTER_PROFILE, None, &dev)
        .map_err(e("reading the dev profile"))?
        .ok_or("no dev profile")?;
    cluster
        .delete(CLUSTER_PROFILE, None, &dev)
        .map_err(e("deleting the dev profile"))?;
    let back = eventually("the dev profile re-applied", WAIT, || {
        cluster.get(CLUSTER_PROFILE, None, &dev).ok().flatten()
    })?;
    if back["spec"] != original["spec"] {
        return Err(format!(
            "re-applied with another spec: {back} vs {original}"
        ));
    }
    let mut edited = back.clone();
    edited["spec"]["helmCharts"][0]["chartVersion"] = json!("9.9.9");
    cluster.put(&edited).map_err(e("editing the dev profile"))?;
    eventually("the edit undone", WAIT, || {
        cluster
            .get(CLUSTER_PROFILE, None, &dev)
            .ok()
            .flatten()
            .filter(|p| p["spec"] == original["spec"])
    })?;
    Ok(())
}

/// The chart version of a stored profile (empty when it is missing).
fn chart_of(cluster: &Cluster, profile: &str) -> String {
    cluster
        .get(CLUSTER_PROFILE, None, profile)
        .ok()
        .flatten()
        .and_then(|p| {
            p.pointer("/spec/helmCharts/0/chartVersion")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// After a chart upgrade of a complete rollout, addon-controller updates dev's ClusterSummaries'
/// spec first and their status later: in between they carry the new spec and the old
/// `Provisioned`. The controller must not take that for dev deployed — staging receives the new
/// chart only after the double reports it deployed on dev (its log is the oracle). (Our watch
/// reacts within milliseconds, so it lands in that window almost every time: upstream polled
/// every 2 minutes.)
fn upgrade_waits_for_the_deployment(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller(cluster, &[])?;
    let original = promotion(cluster, "upgrade");
    let name = to_the_gate(cluster, &addon, &original)?;
    kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    until_profile(cluster, &format!("{name}-prod"), "prod's profile applied")?;
    addon.sync(true).map_err(e("addon double"))?;
    until(cluster, &name, "complete", |p| {
        current_stage(p) == "prod" && description(p, "prod").starts_with("Successfully provisioned")
    })?;
    let mut upgraded = original.clone();
    upgraded["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    apply(cluster, "upgrade.yaml", &upgraded)?;
    let dev = format!("{name}-dev");
    eventually("dev's profile upgraded", WAIT, || {
        (chart_of(cluster, &dev) == "3.7.0").then_some(())
    })?;
    // The first rollout's decisions (dev was done then) are read and set aside.
    let _ = ctl.log();
    // Sveltos' ClusterProfile reconciler: dev's summaries get the new spec, status untouched.
    addon.update_specs().map_err(e("addon double"))?;
    let decided = ctl
        .wait_next_line("the decision on dev's updated summaries", WAIT, |l| {
            // Either verdict on dev once its summaries carry the new spec: waiting for the new
            // deployment, or (wrongly) done. Earlier "not in sync" decisions match neither.
            l.get("explanation")
                .and_then(Value::as_str)
                .is_some_and(|x| {
                    x.contains("provisioned for an earlier spec") || x.starts_with("dev is done")
                })
                && l.get("message").and_then(Value::as_str) == Some("decided")
        })
        .map_err(|e| e.to_string())?;
    let explanation = decided["explanation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if !explanation.contains("provisioned for an earlier spec")
        || chart_of(cluster, &format!("{name}-staging")) != "3.6.2"
    {
        let decisions: Vec<String> = ctl
            .log()
            .lines()
            .filter(|l| l.contains("\"decided\""))
            .map(str::to_string)
            .collect();
        return Err(format!(
            "dev taken for deployed before Sveltos deployed the new chart: {explanation}\n{}",
            decisions.join("\n")
        ));
    }
    // The ClusterSummary reconciler: Provisioning with the new hash, then Provisioned.
    addon.report("Provisioning").map_err(e("addon double"))?;
    addon.report("Provisioned").map_err(e("addon double"))?;
    eventually("staging upgraded once dev deployed it", WAIT, || {
        (chart_of(cluster, &format!("{name}-staging")) == "3.7.0").then_some(())
    })?;
    // The oracle: dev's new deployment was reported before staging got the chart.
    let dev_reports = addon.deployed().iter().filter(|d| d.profile == dev).count();
    if dev_reports < 2 {
        return Err(format!(
            "the double reported dev deployed {dev_reports} time(s): {:?}",
            addon.deployed()
        ));
    }
    Ok(())
}

/// `kubectl promotion abort` holds a rollout at its gate: an approval given meanwhile is not
/// used, `describe` says who aborted it; `kubectl promotion retry` lets it go on with that
/// approval.
fn abort_and_retry(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let _webhook = webhook(cluster)?;
    install_rbac(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller_as(cluster, User::Controller, &[])?;
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "abort"))?;
    kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "abort", &name, "--reason", "looks wrong"],
    )?;
    let _ = ctl.log();
    release_manager_approves_staging(cluster, &name)?;
    ctl.wait_next_line("the decision on the approval", WAIT, |l| {
        l.get("message").and_then(Value::as_str) == Some("decided")
            && l.get("explanation")
                .and_then(Value::as_str)
                .is_some_and(|x| x.starts_with("staging may advance, but the rollout is aborted"))
    })
    .map_err(|e| e.to_string())?;
    if profile_exists(cluster, &format!("{name}-prod")) {
        return Err("prod started while the rollout was aborted".into());
    }
    let describe = kubectl_ok(cluster, User::Viewer, &["promotion", "describe", &name])?;
    assert_contains(
        &describe,
        &[
            "aborted by admin",
            "\"looks wrong\"",
            &format!("kubectl promotion retry {name}"),
        ],
        "describe while aborted",
    )?;
    kubectl_ok(cluster, User::Admin, &["promotion", "retry", &name])?;
    until_profile(
        cluster,
        &format!("{name}-prod"),
        "prod started after the retry",
    )
}

/// `original` (chart 3.6.2) rolled to completion — revision 1 — then upgraded to 3.7.0: dev
/// deploys it and staging receives it (its profile has 3.7.0; Sveltos has not deployed it there
/// yet). Its name.
fn upgraded_to_staging(
    cluster: &Cluster,
    addon: &AddonController,
    original: &Value,
) -> Result<String, String> {
    let name = to_the_gate(cluster, addon, original)?;
    release_manager_approves_staging(cluster, &name)?;
    until_profile(cluster, &format!("{name}-prod"), "prod's profile applied")?;
    addon.sync(true).map_err(e("addon double"))?;
    until(cluster, &name, "revision 1 complete", |p| {
        current_stage(p) == "prod" && description(p, "prod").starts_with("Successfully provisioned")
    })?;
    let chart = |stage: &str| chart_of(cluster, &format!("{name}-{stage}"));
    let mut upgraded = original.clone();
    upgraded["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    apply(cluster, "upgrade.yaml", &upgraded)?;
    eventually("dev upgraded", WAIT, || {
        (chart("dev") == "3.7.0").then_some(())
    })?;
    addon.sync(true).map_err(e("addon double"))?;
    eventually("staging upgraded", WAIT, || {
        (chart("staging") == "3.7.0").then_some(())
    })?;
    Ok(name)
}

/// With `on-failure: rollback`, a stage of the bad upgrade that keeps failing past the grace is
/// rolled back by the controller itself, to the last complete revision, recorded as the
/// controller's with the failure in its reason, counted in the metric.
fn automatic_rollback(cluster: &Cluster) -> Result<(), String> {
    use promotion_shared::on_failure::{FAILURE_GRACE_ANNOTATION, ON_FAILURE_ANNOTATION};
    clusters(cluster)?;
    let _webhook = webhook(cluster)?;
    install_rbac(cluster)?;
    let addon = AddonController::new(cluster);
    let ctl = controller_as(
        cluster,
        User::Controller,
        &["--history-namespace", "kubectl-promotion-system"],
    )?;
    let mut original = promotion(cluster, "auto");
    original["metadata"]["annotations"] = json!({
        ON_FAILURE_ANNOTATION: "rollback",
        FAILURE_GRACE_ANNOTATION: "3s",
    });
    let name = upgraded_to_staging(cluster, &addon, &original)?;
    let chart = |stage: &str| chart_of(cluster, &format!("{name}-{stage}"));
    let staging = format!("{name}-staging");
    addon.fail(&staging, true);
    addon.sync(true).map_err(e("addon double"))?;
    // The grace passes (the controller wakes at its end); the rollback is asked for.
    let asked = until(
        cluster,
        &name,
        "the controller asked for the rollback",
        |p| promotion_shared::abort::aborted(p).is_some_and(|a| a.rollback_to() == Some(1)),
    )?;
    let aborted = promotion_shared::abort::aborted(&asked).ok_or("no abort")?;
    let described = aborted.describe();
    if !described.contains(&format!("by {}", User::Controller.name()))
        || !described.contains("automatic rollback: stage staging failed on")
    {
        return Err(format!(
            "the automatic rollback is not recorded as the controller's: {described}"
        ));
    }
    // Counted (prometheus-client names a counter's series `_total`).
    eventually("the automatic rollback counted once", WAIT, || {
        (metric(&ctl, "promotion_controller_automatic_rollbacks_total ").ok()? == 1.0).then_some(())
    })?;
    addon.fail(&staging, false);
    eventually("dev and staging set back to 3.6.2", WAIT, || {
        (chart("dev") == "3.6.2" && chart("staging") == "3.6.2").then_some(())
    })?;
    addon.sync(true).map_err(e("addon double"))?;
    until(cluster, &name, "every stage rolled back", |p| {
        ["dev", "staging", "prod"]
            .iter()
            .all(|s| description(p, s).starts_with("Rolled back to revision 1"))
    })?;
    Ok(())
}

/// A bad chart upgrade reached dev and staging (prod still runs the last complete rollout).
/// A rollback, asked through the webhook, sets both back to revision 1 at once — without
/// walking a gate — and counts each rolled back only once Sveltos reports it deployed, although
/// the controller crashes after every one of its writes; they stay on it while the spec still
/// holds the bad chart; the history says who rolled back; a retry starts the upgrade again from
/// dev.
fn rollback_after_a_bad_upgrade(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let _webhook = webhook(cluster)?;
    install_rbac(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller_as(
        cluster,
        User::Controller,
        &["--history-namespace", "kubectl-promotion-system"],
    )?;
    let name = upgraded_to_staging(cluster, &addon, &promotion(cluster, "rollback"))?;
    let chart = |stage: &str| chart_of(cluster, &format!("{name}-{stage}"));
    addon.sync(true).map_err(e("addon double"))?;
    let bad = until(cluster, &name, "staging deployed the bad chart", |p| {
        description(p, "staging").starts_with("Paused: Awaiting Manual Approval")
    })?;
    // The rollback is carried out by controllers that each stop right after one write (the
    // fault injection of `controller/src/live/fault.rs`), each replaced by a new one, as a
    // crash-looping Pod: every position between two writes is a crash point.
    ctl.kill();
    // `kubectl promotion rollback`: the newest complete revision, through the webhook.
    let said = kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "rollback", &name, "--reason", "bad chart"],
    )?;
    if !said.contains("rolled back to revision 1") {
        return Err(format!("rollback said: {said}"));
    }
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    let args = [
        "--selector",
        selector.as_str(),
        "--resync-period",
        "1h",
        "--history-namespace",
        "kubectl-promotion-system",
    ];
    let kubeconfig = cluster.kubeconfig(User::Controller);
    let rolled_back = |p: &Value| {
        ["dev", "staging", "prod"]
            .iter()
            .all(|s| description(p, s).starts_with("Rolled back to revision 1"))
    };
    let (mut crashes, mut synced) = (0, false);
    loop {
        let mut faulty = ControllerProcess::start_with_env(
            &kubeconfig,
            &args,
            &[("PROMOTION_CONTROLLER_FAULT", "after:1")],
        )
        .map_err(e("controller"))?;
        let crashed = eventually("a write and a crash, or the rollback done", WAIT, || {
            if faulty.exited().is_some() {
                return Some(true);
            }
            let p = cluster.promotion(&name).ok().flatten()?;
            rolled_back(&p).then_some(false)
        })?;
        let p = stored(cluster, &name)?;
        // Nothing counted rolled back on dev or staging before Sveltos deployed it there.
        if !synced
            && ["dev", "staging"]
                .iter()
                .any(|s| description(&p, s).starts_with("Rolled back"))
        {
            return Err(format!(
                "rolled back before Sveltos deployed it: {}",
                p["status"]
            ));
        }
        if !crashed {
            faulty.kill();
            break;
        }
        crashes += 1;
        if crashes > 20 {
            return Err(format!("no end after 20 crashes: {}", p["status"]));
        }
        // Once both stages have revision 1's profile, Sveltos deploys it.
        if !synced && chart("dev") == "3.6.2" && chart("staging") == "3.6.2" {
            if chart("prod") != "3.6.2" {
                return Err("prod left revision 1".into());
            }
            addon.sync(true).map_err(e("addon double"))?;
            synced = true;
        }
    }
    if crashes < 3 {
        return Err(format!(
            "the rollback took {crashes} write(s): the crash points were not exercised"
        ));
    }
    let mut ctl = controller_as(
        cluster,
        User::Controller,
        &["--history-namespace", "kubectl-promotion-system"],
    )?;
    // They stay on it: the next decision (caused by a label) keeps them there.
    let _ = ctl.log();
    kubectl_ok(
        cluster,
        User::Admin,
        &["label", "clusterpromotion", &name, "touched=yes"],
    )?;
    ctl.wait_next_line("a decision after the label", WAIT, |l| {
        l.get("message").and_then(Value::as_str) == Some("decided")
            && l.get("phase").and_then(Value::as_str) == Some("rolled back")
    })
    .map_err(|e| e.to_string())?;
    if chart("dev") != "3.6.2" || chart("staging") != "3.6.2" {
        return Err(format!(
            "the rollback did not hold: dev {}, staging {}",
            chart("dev"),
            chart("staging")
        ));
    }
    // The history: revision 2 was rolled back to 1, by the admin (the webhook's record).
    let uid = bad["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    eventually("the history says so", WAIT, || {
        revisions_of(cluster, &uid)?
            .into_iter()
            .find(|r| r.number == 2)?
            .record
            .filter(|r| r.outcome() == "rolled back to 1 by admin")
    })?;
    // Retried: the upgrade starts again from dev; staging keeps revision 1 until it is reached.
    kubectl_ok(cluster, User::Admin, &["promotion", "retry", &name])?;
    eventually("dev upgraded again", WAIT, || {
        (chart("dev") == "3.7.0").then_some(())
    })?;
    if chart("staging") != "3.6.2" {
        return Err(format!(
            "staging left revision 1 before dev deployed: {}",
            chart("staging")
        ));
    }
    // To make it permanent: `kubectl promotion undo` sets the spec back to revision 1, a new
    // rollout through the gates; the webhook records which revision it restored.
    kubectl_ok(
        cluster,
        User::Admin,
        &["promotion", "undo", &name, "--to-revision", "1"],
    )?;
    let undone = stored(cluster, &name)?;
    let record = promotion_shared::admission::spec_change_record(&undone)
        .map_err(|e| e.to_string())?
        .ok_or("no spec-change record after the undo")?;
    if record.restored_revision != Some(1) || record.user != User::Admin.name() {
        return Err(format!(
            "the undo is not recorded as the admin's of revision 1: {record:?}"
        ));
    }
    eventually("dev back on 3.6.2 by the undo's rollout", WAIT, || {
        (chart("dev") == "3.6.2").then_some(())
    })?;
    Ok(())
}

/// `preserveClusterProfilesOnDelete` holds even when our controller is not there at the moment
/// of deletion: open-source addon-controller ≥ v1.14 removes the shared finalizer at once, the
/// promotion is gone, and the garbage collector runs — the stage profiles carry no owner
/// reference while the flag is set, so they stay. Without the flag they go.
fn preserve_without_us(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller(cluster, &[])?;
    let mut preserved = promotion(cluster, "keep");
    preserved["spec"]["preserveClusterProfilesOnDelete"] = json!(true);
    let keep = to_the_gate(cluster, &addon, &preserved)?;
    let gone = to_the_gate(cluster, &addon, &promotion(cluster, "drop"))?;
    // Our controller stopped at the moment of deletion (a crash, an uninstall).
    ctl.kill();
    for name in [&keep, &gone] {
        kubectl_ok(
            cluster,
            User::Admin,
            &["delete", "clusterpromotion", name, "--wait=false"],
        )?;
    }
    // Open-source addon-controller releases what it holds; the garbage collector follows.
    eventually("both promotions gone", WAIT, || {
        addon.release_deleted_promotions().ok()?;
        (matches!(cluster.promotion(&keep), Ok(None))
            && matches!(cluster.promotion(&gone), Ok(None)))
        .then_some(())
    })?;
    let collected = addon.collect_garbage().map_err(e("garbage collector"))?;
    for stage in ["dev", "staging"] {
        let name = format!("{keep}-{stage}");
        if !profile_exists(cluster, &name) || collected.contains(&name) {
            return Err(format!(
                "{name} was not preserved (collected: {collected:?})"
            ));
        }
        if profile_exists(cluster, &format!("{gone}-{stage}")) {
            return Err(format!("{gone}-{stage} outlived its promotion"));
        }
    }
    Ok(())
}

/// A kubeconfig of `user` whose server is `proxy`: that replica's connection alone can fail.
fn through(
    cluster: &Cluster,
    user: User,
    proxy: &FaultProxy,
) -> Result<std::path::PathBuf, String> {
    let text = std::fs::read_to_string(cluster.kubeconfig(user)).map_err(e("reading"))?;
    let mut config: Value = serde_saphyr::from_str(&text).map_err(e("parsing the kubeconfig"))?;
    for c in config["clusters"].as_array_mut().into_iter().flatten() {
        c["cluster"]["server"] = json!(proxy.url());
    }
    let path = cluster
        .dir()
        .join(format!("kubeconfig-{}-proxied", user.name()));
    std::fs::write(&path, config.to_string()).map_err(e("writing the kubeconfig"))?;
    Ok(path)
}

fn proxy_to(cluster: &Cluster) -> Result<FaultProxy, String> {
    let url = cluster.backend().url().trim_start_matches("https://");
    let addr = url.parse().map_err(e("the API server's address"))?;
    FaultProxy::start(addr).map_err(e("starting the fault proxy"))
}

const LEADING: &str = "leading: reconciling every promotion";

fn message_is(text: &'static str) -> impl Fn(&Value) -> bool {
    move |l: &Value| l.get("message").and_then(Value::as_str) == Some(text)
}

/// One replica cut off from the API server (its renewals fail) stops acting within its renew
/// deadline, and, when the API server is back, takes its Lease again and carries on: the
/// approval given meanwhile is used. (With kube-lease-manager's `changed()`, the replica
/// published "not leading" on the first failed renewal and, still the Lease's holder, never
/// heard it was leading again.)
fn leader_partition(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    install_rbac(cluster)?;
    let proxy = proxy_to(cluster)?;
    let kubeconfig = through(cluster, User::Controller, &proxy)?;
    let lease = cluster.name("lease");
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    cluster
        .install_plugin()
        .map_err(e("installing the plugin"))?;
    let mut ctl = ControllerProcess::start(
        &kubeconfig,
        &[
            "--selector",
            &selector,
            "--resync-period",
            "1h",
            "--leader-elect",
            "--leader-elect-namespace",
            "kubectl-promotion-system",
            "--leader-elect-lease-name",
            &lease,
            "--leader-elect-lease-duration",
            "3",
        ],
    )
    .map_err(e("controller"))?;
    ctl.wait_line("leading", WAIT, message_is(LEADING))
        .map_err(|e| e.to_string())?;
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "partition"))?;
    proxy.cut();
    ctl.wait_next_line("stops leading", WAIT, |l| {
        l.get("message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.starts_with("leadership lost: no renewal within the renew deadline"))
    })
    .map_err(|e| e.to_string())?;
    // Alive, not ready: a restart would not help, and nothing may route to it.
    let health: std::net::SocketAddr = ctl.health.parse().map_err(e("health address"))?;
    let probe = |path: &str| envtest::http::get(health, path).map(|r| r.0).unwrap_or(0);
    if (probe("/healthz"), probe("/readyz")) != (200, 503) {
        return Err(format!(
            "cut off: /healthz {} and /readyz {} (want 200, 503)",
            probe("/healthz"),
            probe("/readyz")
        ));
    }
    kubectl_ok(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name, "--stage", "staging"],
    )?;
    proxy.heal();
    ctl.wait_next_line("leads again", WAIT, message_is(LEADING))
        .map_err(|e| e.to_string())?;
    if probe("/readyz") != 200 {
        return Err(format!("leading again, /readyz {}", probe("/readyz")));
    }
    until(cluster, &name, "promoted once the leader is back", |p| {
        current_stage(p) == "prod"
    })?;
    Ok(())
}

/// SIGTERM ends the process within its shutdown timeout even while the API server does not
/// answer (its watches and its Lease renewal hang).
fn sigterm_while_hanging(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    install_rbac(cluster)?;
    let proxy = proxy_to(cluster)?;
    let kubeconfig = through(cluster, User::Controller, &proxy)?;
    let lease = cluster.name("lease");
    let mut ctl = ControllerProcess::start(
        &kubeconfig,
        &[
            "--leader-elect",
            "--leader-elect-namespace",
            "kubectl-promotion-system",
            "--leader-elect-lease-name",
            &lease,
            "--leader-elect-lease-duration",
            "3",
            "--shutdown-timeout",
            "2s",
        ],
    )
    .map_err(e("controller"))?;
    ctl.wait_line("leading", WAIT, message_is(LEADING))
        .map_err(|e| e.to_string())?;
    proxy.hang();
    // Exit 0 within a generous liveness bound (the shutdown timeout, then at most the Lease
    // release's 5 s), not a timing assertion.
    match ctl.terminate_within(WAIT) {
        Some(status) if status.success() => Ok(()),
        other => Err(format!(
            "SIGTERM while the API server hangs: {other:?}\n{}",
            ctl.log()
        )),
    }
}

/// Without `--leader-elect-namespace`, out of a cluster, the Lease goes to the namespace of the
/// kubeconfig's context, as kubectl would pick it (kube's `Client::default_namespace`).
fn lease_namespace(cluster: &Cluster) -> Result<(), String> {
    let admin = cluster.kubeconfig(User::Admin);
    let text = std::fs::read_to_string(&admin).map_err(e("reading the kubeconfig"))?;
    let mut config: Value = serde_saphyr::from_str(&text).map_err(e("parsing the kubeconfig"))?;
    let namespace = cluster.namespace().to_string();
    for context in config["contexts"].as_array_mut().into_iter().flatten() {
        context["context"]["namespace"] = json!(namespace);
    }
    let path = cluster.dir().join("kubeconfig-admin-in-namespace");
    std::fs::write(&path, config.to_string()).map_err(e("writing the kubeconfig"))?;
    let lease = cluster.name("lease");
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    let mut ctl = ControllerProcess::start(
        &path,
        &[
            "--selector",
            &selector,
            "--leader-elect",
            "--leader-elect-lease-name",
            &lease,
        ],
    )
    .map_err(e("controller"))?;
    ctl.wait_line("leading", WAIT, |l| {
        l.get("message").and_then(Value::as_str) == Some("leading: reconciling every promotion")
    })
    .map_err(|e| e.to_string())?;
    let lease_kind = promotion_e2e::envtest::objects::Kind {
        api_version: "coordination.k8s.io/v1",
        kind: "Lease",
    };
    let stored = cluster
        .get(lease_kind, Some(&namespace), &lease)
        .map_err(e("reading the Lease"))?
        .ok_or_else(|| format!("no Lease {lease} in {namespace}\n{}", ctl.log()))?;
    if stored
        .pointer("/spec/holderIdentity")
        .is_none_or(Value::is_null)
    {
        return Err(format!("the Lease has no holder: {stored}"));
    }
    Ok(())
}

fn assert_contains(haystack: &str, needles: &[&str], context: &str) -> Result<(), String> {
    for needle in needles {
        if !haystack.contains(needle) {
            return Err(format!("{context}: wanted {needle:?} in:\n{haystack}"));
        }
    }
    Ok(())
}

/// The approver rules as the install publishes them (`manifests/base/governance.yaml`: the
/// ConfigMap, and the Role and RoleBinding that let every signed-in user read it), with
/// `approver-groups` set; the webhook reads the same data from a folder, as the kubelet mounts
/// it. Real RBAC decides that the auditor, who may read no ConfigMap otherwise, reads this one,
/// and the real SelfSubjectReview says who each caller is.
fn published_rules(cluster: &Cluster) -> Result<(), String> {
    let folder = tempfile::tempdir().map_err(e("a folder for the mounted rules"))?;
    install(cluster, "base/governance.yaml", |object| {
        if object["kind"] == "ConfigMap" {
            object["data"]["approver-groups"] = json!("release-managers");
            for (key, value) in object["data"].as_object().into_iter().flatten() {
                std::fs::write(folder.path().join(key), value.as_str().unwrap_or_default())
                    .map_err(e("writing the mounted rules"))?;
            }
        }
        Ok(())
    })?;
    clusters(cluster)?;
    let dir = folder.path().to_string_lossy().into_owned();
    let webhook = cluster
        .start_webhook(&["--governance-dir", &dir])
        .map_err(e("starting the webhook"))?;
    let configs = webhook.configurations().map_err(e("rendering manifests"))?;
    cluster
        .register_webhooks(configs)
        .map_err(e("registering the webhook"))?;
    let _ctl = controller(cluster, &[])?;
    let addon = AddonController::new(cluster);
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "governed"))?;
    let next = |stdout: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("Next step:"))
            .map(|s| s.trim_start().to_string())
            .unwrap_or_default()
    };
    let approve = format!("kubectl promotion approve {name} --stage staging   (staging → prod)");
    let who = "a member of group \"release-managers\" who may patch it";

    let auditor = kubectl_ok(cluster, User::Auditor, &["promotion", "describe", &name])?;
    let expected = format!(
        "you cannot approve (RBAC: no patch on clusterpromotions.config.projectsveltos.io \
         \"{name}\"; the admission webhook admits approvals only from members of group \
         \"release-managers\", and you (\"auditor\") are in \"auditors\", \
         \"system:authenticated\"): {who} runs: {approve}"
    );
    if next(&auditor) != expected {
        return Err(format!(
            "the auditor's next step: wanted\n{expected}\nin:\n{auditor}"
        ));
    }

    // What describe tells the admin is what the webhook does.
    let admin = kubectl_ok(cluster, User::Admin, &["promotion", "describe", &name])?;
    if !next(&admin).starts_with(
        "you cannot approve (the admission webhook admits approvals only from members of group \
         \"release-managers\", and you (\"admin\") are in \"system:masters\"",
    ) {
        return Err(format!("the admin's next step:\n{admin}"));
    }
    let refused = cluster
        .kubectl(User::Admin, &["promotion", "approve", &name])
        .map_err(e("running kubectl"))?;
    if refused.code != 1 || !refused.stderr.contains("\"release-managers\"") {
        return Err(format!(
            "the admin's approval was not refused as said: {refused:?}"
        ));
    }

    let manager = kubectl_ok(
        cluster,
        User::ReleaseManager,
        &["promotion", "describe", &name],
    )?;
    if next(&manager) != approve {
        return Err(format!("the release manager's next step:\n{manager}"));
    }
    kubectl_ok(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name],
    )?;
    Ok(())
}

/// Issue 31, item 9. The release manager approves staging and the controller commits (the
/// approval removed, the step and whose approval it used recorded), then stops before the status;
/// the status still shows staging awaiting approval. `kubectl promotion approve` reads the
/// committed step and refuses (the gate is passed in this rollout); the admin sets `approved`
/// directly instead, and the webhook's record of staging now names the admin. The next controller completes the step:
/// `describe` credits the release manager's approval with opening staging → prod, and shows the
/// admin's as not used (the webhook removed it with the controller's next write, as an approval
/// whose stage the status shows passed).
fn approval_after_the_commit(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let _webhook = webhook(cluster)?;
    install_rbac(cluster)?;
    let mut ctl = controller_as(cluster, User::Controller, &[])?;
    let addon = AddonController::new(cluster);
    let name = to_the_gate(cluster, &addon, &promotion(cluster, "credit"))?;
    // Stopped at the gate, so that the commit below is the only one.
    ctl.kill();
    release_manager_approves_staging(cluster, &name)?;
    // The commit the controller makes of that approval, built by the function it uses and sent
    // as the controller's user (the webhook admits these annotations from it alone).
    let read = stored(cluster, &name)?;
    let step = Promoting {
        stage: "staging".into(),
        rollout: identity_of(&read).map_err(|e| format!("{e:?}"))?.id,
    };
    let commit = promotion_shared::patch::commit(&read, &[1], Some(&step))
        .map_err(e("building the commit"))?;
    kubectl_ok(
        cluster,
        User::Controller,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type",
            "merge",
            "-p",
            &commit.to_string(),
        ],
    )?;
    // The plugin reads the committed step: the gate is passed in this rollout, and an approval
    // now is refused.
    let refused = cluster
        .kubectl(
            User::Admin,
            &["promotion", "approve", &name, "--stage", "staging"],
        )
        .map_err(e("kubectl promotion approve"))?;
    if refused.code == 0
        || !refused
            .stderr
            .contains("has already passed stage \"staging\"")
    {
        return Err(format!(
            "approve during the committed step: exit {}\n{}",
            refused.code, refused.stderr
        ));
    }
    // A second approver who sets the field directly, while the status still shows staging
    // awaiting approval: the webhook admits and records it.
    kubectl_ok(
        cluster,
        User::Admin,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type",
            "json",
            "-p",
            r#"[{"op": "add", "path": "/spec/stages/1/trigger/manual/approved", "value": true}]"#,
        ],
    )?;

    let _ctl = controller_as(cluster, User::Controller, &[])?;
    until_profile(cluster, &format!("{name}-prod"), "prod's profile applied")?;
    let p = until(cluster, &name, "the step done and cleared", |p| {
        current_stage(p) == "prod"
            && p.pointer("/metadata/annotations")
                .and_then(|a| a.get(PROMOTING_ANNOTATION))
                .is_none()
    })?;
    if let Some(approved) = p.pointer("/spec/stages/1/trigger/manual/approved") {
        return Err(format!(
            "the admin's approval is still set ({approved}) after the controller's write"
        ));
    }

    let text = kubectl_ok(cluster, User::Viewer, &["promotion", "describe", &name])?;
    let line = |label: &str| {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(label))
            .unwrap_or_default()
            .to_string()
    };
    let used = line("Used approval:");
    if !(used.starts_with("Used approval:  release-manager at ")
        && used.ends_with(": \"dev soaked\" (used: opened staging → prod in this rollout)"))
    {
        return Err(format!("staging's used approval:\n{text}"));
    }
    let last = line("Last approval:");
    if !(last.starts_with("Last approval:  admin at ")
        && last.ends_with(
            " (not used: given after the used approval above had opened this gate, it opens \
             nothing in this rollout)",
        ))
    {
        return Err(format!("staging's last approval:\n{text}"));
    }

    let json = kubectl_ok(
        cluster,
        User::Viewer,
        &["promotion", "describe", &name, "-o", "json"],
    )?;
    let d: Value = serde_json::from_str(&json).map_err(e("describe -o json"))?;
    let staging = &d["stages"][1];
    let credited = (
        staging["name"].as_str(),
        staging
            .pointer("/usedApproval/approval/user")
            .and_then(Value::as_str),
        staging
            .pointer("/usedApproval/approval/reason")
            .and_then(Value::as_str),
        staging["approvalNotUsed"].as_bool(),
        staging
            .pointer("/approvalRecord/user")
            .and_then(Value::as_str),
    );
    if credited
        != (
            Some("staging"),
            Some("release-manager"),
            Some("dev soaked"),
            Some(true),
            Some("admin"),
        )
    {
        return Err(format!("staging in describe -o json: {staging:#}"));
    }
    Ok(())
}

/// Sveltos does not retry a `FailedNonRetriable` until the feature's hash changes, and then
/// deploys again (addon-controller `shouldRedeploy`): the stage is `failed` for the spec it failed
/// on, and `progressing` — not `failed` — from the moment the promotion's spec changes, while
/// Sveltos has neither updated the summary's spec nor answered the update; the new deployment
/// then passes the stage. The phase is the one each decision logs (the metric's, set from it
/// once the decision's writes are done).
fn non_retriable_until_the_spec_changes(cluster: &Cluster) -> Result<(), String> {
    clusters(cluster)?;
    let addon = AddonController::new(cluster);
    let mut ctl = controller(cluster, &[])?;
    let original = promotion(cluster, "forgood");
    let name = name_of(&original);
    let dev = format!("{name}-dev");
    apply(cluster, "promotion.yaml", &original)?;
    until_profile(cluster, &dev, "the dev profile applied")?;
    addon.fail_for_good(&dev, true);
    addon.sync(true).map_err(e("addon double"))?;
    let metrics = ctl.metrics.parse().map_err(e("metrics address"))?;
    eventually("the promotion failed", WAIT, || {
        promotion_e2e::envtest::http::get(metrics, "/metrics")
            .ok()
            .filter(|m| {
                m.1.contains("promotion_controller_promotions{phase=\"failed\"} 1")
            })
    })?;
    let mut fixed = original.clone();
    fixed["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.6.3");
    apply(cluster, "fixed.yaml", &fixed)?;
    // The summary still carries the previous spec and reports its failure.
    let phase = decided_phase(&mut ctl, "is not in sync")?;
    // Sveltos' ClusterProfile reconciler: the summary gets the new spec, its status untouched.
    addon.update_specs().map_err(e("addon double"))?;
    let updated = decided_phase(&mut ctl, "is not yet provisioned")?;
    if phase != "progressing" || updated != "progressing" {
        return Err(format!(
            "a FailedNonRetriable of the previous spec counted for the new one: phase {phase} \
             before Sveltos updated the summary, {updated} after"
        ));
    }
    addon.fail_for_good(&dev, false);
    deployed_then(cluster, &addon, &format!("{name}-staging"))?;
    Ok(())
}

/// The phase of the next decision on dev whose explanation contains `reason`.
fn decided_phase(ctl: &mut ControllerProcess, reason: &str) -> Result<String, String> {
    let line = ctl
        .wait_next_line(&format!("a decision on dev: {reason}"), WAIT, |l| {
            l.get("message").and_then(Value::as_str) == Some("decided")
                && l.get("explanation")
                    .and_then(Value::as_str)
                    .is_some_and(|x| x.starts_with("dev is being deployed") && x.contains(reason))
        })
        .map_err(|e| e.to_string())?;
    Ok(line["phase"].as_str().unwrap_or_default().to_string())
}
