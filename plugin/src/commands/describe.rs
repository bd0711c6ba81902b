//! `describe [NAME...]` / `describe -f FILE` / `describe NAME --watch`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};

use clap::Args;
use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use promotion_manifest::Reader;
use promotion_shared::admission::{spec_change_record, PublishedGovernance};
use promotion_shared::pipeline::{Phase, StageState};

use super::Ctx;
use crate::cluster::fetch;
use crate::cluster::inventory;
use crate::cluster::kube_client::Kube;
use crate::cluster::watch::{Changes, Follower, Update};
use crate::error::{exit::describe as exit, Error, Result};
use crate::render::output;
use crate::render::printers::{FormatArg, OutputFormat, PrintOptions, Target, MODEL_FORMATS};
use crate::render::{self, describe::Options, terminal};
use crate::view::approver::{ApprovalRight, CallerFacts, RevokeRight};
use crate::view::{self, Description, Snapshot, StageDetail, API_VERSION};

#[derive(Args, Debug)]
#[command(
    about = "Show a ClusterPromotion's pipeline: stages, clusters, approvals and events",
    long_about = "\
Show a ClusterPromotion's pipeline at a glance: one block per stage in order with its derived
state (not started, provisioning, provisioned, soaking until T, running health checks, waiting
for window until T, awaiting approval, approved and pending, promoted, failed), selector, trigger,
the matching clusters with their per-feature status (from the generated ClusterProfile
<promotion>-<stage> and its ClusterSummaries), times and messages; then who approved what and
who last changed the spec (the admission webhook's audit annotations), and the object's Events.

When Sveltos has not picked up the latest change yet, the view says so first: the stage states
below it are then the previous rollout's, and no approval is proposed.

A proposed approval is worded for you: the server is asked whether RBAC lets you patch the
promotion and who you are, and the approver rules the install publishes (ConfigMap
kubectl-promotion-system/promotion-governance, which the admission webhook enforces) are read;
when you may not approve, it says why and who may; when that cannot be learnt, it says so.

Without NAME, describes every ClusterPromotion; with several names, each of them.
With -f, describes a manifest offline (no cluster needed; cluster status is then unknown).
With -o json|yaml (or a jsonpath template), prints the computed model instead (field reference: plugin/docs/output.md);
several promotions print as a PromotionDescriptionList.",
    after_help = "\
Examples:
  kubectl promotion describe kyverno-rollout
  kubectl promotion describe kyverno-rollout --all-clusters
  kubectl promotion describe                             # every ClusterPromotion
  kubectl promotion describe -f rollout.yaml             # offline, no cluster
  kubectl promotion describe kyverno-rollout -o json | jq '.stages[] | {name, state}'
  kubectl promotion describe kyverno-rollout -w          # follow until complete or failed

Exit status: 0; 1 on error. With -w: 0 when the pipeline completes, 2 when it fails for good
or Sveltos refuses it."
)]
pub struct DescribeArgs {
    /// ClusterPromotion names (none: every ClusterPromotion; omit with -f)
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Describe the ClusterPromotion in this manifest offline ("-" reads stdin)
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "watch"
    )]
    pub filename: Option<PathBuf>,
    /// Output format: the computed model as json or yaml, or a kubectl jsonpath template over
    /// it (jsonpath=…, jsonpath-file=…, jsonpath-as-json=…); default: human-readable
    #[arg(short = 'o', long = "output", value_name = "FORMAT",
          value_parser = FormatArg(MODEL_FORMATS))]
    pub output: Option<String>,
    /// With a jsonpath template, print nothing for a missing field instead of failing
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allow_missing_template_keys: bool,
    /// Keep watching one promotion: redraw in place on a terminal (about once a second), print
    /// changes otherwise; ends when the pipeline completes or fails
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// List every cluster of every stage (default: all of a stage's clusters up to 10; beyond
    /// that the ones not provisioned, at most 10, then how many more are provisioned)
    #[arg(long)]
    pub all_clusters: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DescriptionList<'a> {
    api_version: &'static str,
    kind: &'static str,
    items: &'a [Description],
}

pub async fn run(ctx: &Ctx, args: &DescribeArgs) -> Result<u8> {
    let format = OutputFormat::of_flag(args.output.as_deref(), MODEL_FORMATS)?;
    let format = &format;
    if let Some(path) = &args.filename {
        let object = super::manifests::promotion(&mut Reader::new(), path)?;
        let in_file = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(name) = args.names.iter().find(|n| *n != in_file) {
            return Err(Error::Usage(format!(
                "NAME {name:?} does not match the ClusterPromotion {in_file:?} in {}",
                path.display()
            )));
        }
        let mut d = Description::build(&Snapshot::offline(object))?;
        if d.proposes_approval() {
            d.set_approval_right(ApprovalRight::offline());
        }
        d.set_revoke_rights(|_| RevokeRight::offline());
        print(ctx, args, format, std::slice::from_ref(&d), false)?;
        return Ok(exit::OK);
    }
    let kube = ctx.kube().await?;
    if args.watch {
        let [name] = args.names.as_slice() else {
            return Err(Error::Usage(
                "describe --watch follows one ClusterPromotion: give exactly one NAME".into(),
            ));
        };
        return watch(ctx, args, format, &kube, name).await;
    }
    let all = args.names.is_empty();
    let names = if all {
        let mut names: Vec<String> = kube
            .list_promotions(None)
            .await?
            .iter()
            .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
            .map(String::from)
            .collect();
        names.sort();
        names
    } else {
        args.names.clone()
    };
    let snapshots =
        futures::future::join_all(names.iter().map(|n| fetch::snapshot(&kube, n))).await;
    let mut descriptions = Vec::new();
    let mut promotions = Vec::new();
    let mut profiles = Vec::new();
    // As `kubectl describe a b c`: the ones that exist are described, each missing one is an
    // error after them, and the command fails.
    let mut missing = Vec::new();
    for snap in snapshots {
        match snap {
            Ok(snap) => {
                descriptions.push(Description::build(&snap)?);
                profiles.push(snap.profiles.clone().unwrap_or_default());
                promotions.push(snap.object);
            }
            Err(e @ Error::NotFound(_)) if names.len() > 1 => missing.push(e),
            Err(e) => return Err(e),
        }
    }
    add_cluster_facts(&kube, &mut descriptions, &promotions, &profiles, true).await;
    advise_only_what_the_caller_can(&kube, &mut descriptions, &promotions).await;
    if descriptions.is_empty() && missing.is_empty() {
        eprintln!("No resources found");
    }
    if !descriptions.is_empty() {
        print(ctx, args, format, &descriptions, all || names.len() > 1)?;
    }
    if missing.is_empty() {
        return Ok(exit::OK);
    }
    for e in &missing {
        crate::error::report(e, ctx.err.color);
    }
    Ok(exit::FAILURE)
}

/// What `describe` adds to descriptions built from snapshots, asked of the cluster: what the
/// stages not started will reach (with `reach`: it reads the whole fleet), the revision each
/// stage runs, and whether promotion-controller can act. Also the dashboard's promotion page, so
/// that it says what `describe` says; what the caller may do is judged apart ([`judge`]), since
/// the dashboard asks it once per page.
pub(crate) async fn add_cluster_facts(
    kube: &Kube,
    descriptions: &mut [Description],
    objects: &[Value],
    profiles: &[Vec<Value>],
    reach: bool,
) {
    if reach {
        add_reach(kube, descriptions, objects).await;
    }
    name_revisions(kube, descriptions, objects, profiles).await;
    judge_the_reconciler(kube, descriptions).await;
}

/// The rollout history's revision each stage runs, from promotion-controller's revisions in the
/// install's namespace, read once for every promotion described. Without them (no controller
/// history, or not readable) the `Runs:` lines say what the stages run without a revision
/// number, which is still true.
async fn name_revisions(
    kube: &Kube,
    descriptions: &mut [Description],
    objects: &[Value],
    profiles: &[Vec<Value>],
) {
    use promotion_shared::history::{Revision, DEFAULT_NAMESPACE, PROMOTION_UID_LABEL};
    let uid = |object: &Value| {
        object
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(String::from)
    };
    let single = match objects {
        [one] => uid(one),
        _ => None,
    };
    let Ok(listed) = kube
        .list_revisions(DEFAULT_NAMESPACE, single.as_deref())
        .await
    else {
        return;
    };
    for ((d, object), profiles) in descriptions.iter_mut().zip(objects).zip(profiles) {
        let Some(uid) = uid(object) else {
            continue;
        };
        let revisions: Vec<Revision> = listed
            .iter()
            .filter(|r| {
                r.pointer("/metadata/labels")
                    .and_then(|l| l.get(PROMOTION_UID_LABEL))
                    .and_then(Value::as_str)
                    == Some(uid.as_str())
            })
            .filter_map(Revision::decode)
            .collect();
        d.name_revisions(profiles, &revisions);
    }
}

/// Whether promotion-controller can act on each promotion: its Lease is read once
/// ([`view::reconciler_health`]); one that cannot be read is a warning, not a verdict.
pub(crate) async fn judge_the_reconciler(kube: &Kube, descriptions: &mut [Description]) {
    use view::reconciler_health::LeaseRead;
    let lease = match kube.controller_lease().await {
        Ok(Some(lease)) => LeaseRead::Found(lease),
        Ok(None) => LeaseRead::Missing,
        Err(e) => LeaseRead::Unreadable(e.unreadable()),
    };
    let now = chrono::Utc::now();
    for d in descriptions.iter_mut() {
        if let LeaseRead::Unreadable(why) = &lease {
            d.warnings.push(format!(
                "promotion-controller's Lease: {why}: whether it runs is not known"
            ));
        }
        d.set_reconciler_health(&lease, now);
    }
}

/// What each stage not started will reach: the fleet is read once, and only when some stage
/// needs it (a rollout under way at 2,000 clusters does not pay for it).
async fn add_reach(kube: &Kube, descriptions: &mut [Description], objects: &[Value]) {
    if !descriptions.iter().any(Description::has_stage_not_started) {
        return;
    }
    match inventory::list_fleet(kube, inventory::DEFAULT_PAGE_SIZE).await {
        Ok(fleet) => {
            for (d, object) in descriptions.iter_mut().zip(objects) {
                if let Ok(promotion) = view::typed(object) {
                    d.set_reach(&promotion, fleet.clusters());
                }
            }
        }
        Err(e) => {
            for d in descriptions
                .iter_mut()
                .filter(|d| d.has_stage_not_started())
            {
                d.warnings.push(format!(
                    "clusters the stages not started will reach: {}",
                    e.unreadable()
                ));
            }
        }
    }
}

/// A proposed approval (or revocation) is advice only to someone who may give it: the caller is
/// judged by the server's RBAC (a SelfSubjectAccessReview for patch on each promotion) and by the
/// approver rules the install publishes, and told when they cannot and who can
/// ([`ApprovalRight`], [`RevokeRight`]).
async fn advise_only_what_the_caller_can(
    kube: &Kube,
    descriptions: &mut [Description],
    objects: &[Value],
) {
    if !descriptions.iter().any(judges_the_caller) {
        return;
    }
    let caller = caller_facts(kube).await;
    let rbac = futures::future::join_all(descriptions.iter().map(|d| async move {
        if judges_the_caller(d) {
            Some(may_patch(kube, &d.name).await)
        } else {
            None
        }
    }))
    .await;
    for ((d, object), rbac) in descriptions.iter_mut().zip(objects).zip(rbac) {
        if let Some(rbac) = rbac {
            judge(d, object, &rbac, &caller);
        }
    }
}

/// What the server says about the caller, once per command: the approver rules first, and who
/// the caller is only when those rules depend on it.
pub(crate) async fn caller_facts(kube: &Kube) -> CallerFacts {
    let rules = match kube.published_governance().await {
        Ok(None) => Ok(None),
        Ok(Some(data)) => {
            let entries = data
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            PublishedGovernance::parse(entries)
                .map(Some)
                .map_err(|e| format!("not valid: {e}"))
        }
        Err(e) => Err(e.read_failure()),
    };
    let needs_identity = matches!(&rules, Ok(Some(r)) if r.policy(Vec::new()).is_enforcing());
    let identity = if needs_identity {
        kube.who_am_i().await.map_err(|e| e.read_failure())
    } else {
        Ok(Default::default())
    };
    CallerFacts { identity, rules }
}

pub(crate) async fn may_patch(kube: &Kube, name: &str) -> std::result::Result<bool, String> {
    kube.can_patch_promotion(name)
        .await
        .map_err(|e| e.read_failure())
}

/// Whether `d` proposes something only some callers may do: an approval, withdrawing one, or
/// retrying an aborted rollout.
pub(crate) fn judges_the_caller(d: &Description) -> bool {
    d.proposes_approval() || d.has_revocable_approval() || d.aborted.is_some()
}

/// Word `d`'s proposed approvals and revocations for the caller; the rollout's starter is the
/// one the webhook's record names, as the webhook judges four eyes.
pub(crate) fn judge(
    d: &mut Description,
    object: &Value,
    rbac: &std::result::Result<bool, String>,
    caller: &CallerFacts,
) {
    if d.proposes_approval() {
        let starter = spec_change_record(object).ok().flatten().map(|r| r.user);
        let right = ApprovalRight::judge(&d.name, rbac, caller, starter.as_deref());
        d.set_approval_right(right);
    }
    let name = d.name.clone();
    d.set_revoke_rights(|giver| RevokeRight::judge(&name, rbac, caller, giver));
    if let (Some(aborted), Ok(Some(rules))) = (d.aborted.as_mut(), &caller.rules) {
        aborted.retry_requires = rules.rollback_groups.clone();
    }
}

/// Print descriptions: one model as an object, several (or "all") as a list.
fn print(
    ctx: &Ctx,
    args: &DescribeArgs,
    format: &OutputFormat,
    ds: &[Description],
    as_list: bool,
) -> Result<()> {
    let list = DescriptionList {
        api_version: API_VERSION,
        kind: "PromotionDescriptionList",
        items: ds,
    };
    let text = match (format, as_list, ds) {
        (OutputFormat::Json, false, [d]) => output::to_json(d)?,
        (OutputFormat::Yaml, false, [d]) => output::to_yaml(d)?,
        (OutputFormat::Json, _, _) => output::to_json(&list)?,
        (OutputFormat::Yaml, _, _) => output::to_yaml(&list)?,
        (OutputFormat::JsonPath { .. }, _, _) => {
            let options = PrintOptions {
                allow_missing_template_keys: args.allow_missing_template_keys,
                no_headers: false,
            };
            let json = |d: &Description| {
                serde_json::to_value(d).map_err(|e| Error::Io(format!("JSON: {e}")))
            };
            let printed = match (as_list, ds) {
                (false, [d]) => format.print(Target::Object(&json(d)?), options)?,
                _ => {
                    let items = ds.iter().map(json).collect::<Result<Vec<_>>>()?;
                    format.print(Target::List(items.into()), options)?
                }
            };
            printed.unwrap_or_default()
        }
        _ => ds
            .iter()
            .map(|d| human(ctx, args, d))
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    ctx.write_out(&text)
}

fn human(ctx: &Ctx, args: &DescribeArgs, d: &Description) -> String {
    render::describe::render(
        d,
        &ctx.out,
        &Options {
            all_clusters: args.all_clusters,
            now: ctx.now(),
        },
    )
}

/// How often a terminal view is redrawn at most, and how often its relative times tick.
const REDRAW_EVERY: Duration = Duration::from_secs(1);

/// Follow the pipeline until it completes (exit 0) or fails for good (exit 2).
///
/// On a terminal the view is redrawn in place, at most once a second however fast changes come,
/// and every second anyway so that "in 26m" keeps counting (a frame that would not change is
/// not written); the top of the view stays on screen when it is taller than the terminal; while
/// the server is away the view says so. Otherwise the first view is printed whole and then a
/// line per change, stamped with when it happened ([`ChangeLog`]), so a log stays readable.
/// The follower hands out a state once per burst of events ([`Follower`]), so the view is built
/// a few times a second at most during a rollout, and not at all while nothing changes.
async fn watch(
    ctx: &Ctx,
    args: &DescribeArgs,
    format: &OutputFormat,
    kube: &Kube,
    name: &str,
) -> Result<u8> {
    let structured = *format != OutputFormat::Default;
    let tty = ctx.out_is_tty && !structured;
    let mut follower = Follower::start(kube, name).await?;
    let mut events: std::result::Result<Vec<Value>, String> = Err(String::new());
    let mut current: Option<Description> = None;
    let mut previous: Option<Description> = None;
    let mut lost: Option<String> = None;
    let mut drawn: Option<(Instant, String)> = None;
    // Only on a terminal does a timer run while nothing changes: its relative times move on.
    let mut tick = tokio::time::interval(REDRAW_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut log = ChangeLog::default();
    let mut access: Option<(std::result::Result<bool, String>, CallerFacts)> = None;
    loop {
        let mut changes: Option<Changes> = None;
        // A count the log holds back until its burst is over.
        let due = log.due();
        tokio::select! {
            update = follower.next() => match update? {
                Update::Changed(state) => {
                    if tty {
                        let uid = state.object.pointer("/metadata/uid").and_then(Value::as_str);
                        events = kube.list_events(name, uid).await.map_err(|e| e.read_failure());
                    }
                    let mut d = Description::build_shared(state.snapshot_ref(view::shared(&events)))?;
                    if judges_the_caller(&d) {
                        // Asked once per watch: who the caller is and what RBAC and the rules
                        // say change far more rarely than the pipeline; the starter of the
                        // rollout is read from each new state.
                        if access.is_none() {
                            access = Some((may_patch(kube, name).await, caller_facts(kube).await));
                        }
                        if let Some((rbac, caller)) = &access {
                            judge(&mut d, &state.object, rbac, caller);
                        }
                    }
                    current = Some(d);
                    lost = None;
                    changes = Some(state.changes);
                }
                Update::ConnectionLost(reason) => lost = Some(reason),
            },
            // A tick redraws what a change arriving too soon after the last draw left undrawn,
            // and moves the relative times on.
            _ = tick.tick(), if tty => {}
            () = until(due) => {}
        }
        let Some(d) = &current else { continue };
        if tty {
            if drawn
                .as_ref()
                .is_none_or(|(t, _)| t.elapsed() >= REDRAW_EVERY)
            {
                draw(ctx, args, d, lost.as_deref(), &mut drawn)?;
            }
        } else if structured {
            if previous.as_ref() != Some(d) {
                // One YAML document per change, as `kubectl get -w -o yaml` separates them.
                if *format == OutputFormat::Yaml {
                    ctx.write_out("---\n")?;
                }
                print(ctx, args, format, std::slice::from_ref(d), false)?;
            }
        } else if let Some(reason) = lost.take() {
            ctx.write_out(&format!(
                "{}  connection lost, retrying… ({reason})\n",
                stamp(ctx.now())
            ))?;
        } else if log.told.is_none() {
            print(ctx, args, format, std::slice::from_ref(d), false)?;
            log.start(d);
        } else {
            ctx.write_out(&log.lines(d, changes.as_ref(), Instant::now(), false, ctx))?;
        }
        // Beneath a pause the stages still tell a pipeline complete or failed for good, as `wait`
        // reads them.
        let done = match d.paused.as_ref().map_or(&d.phase, |p| &p.stages_phase) {
            Phase::Complete => Some(exit::OK),
            Phase::Failed | Phase::Blocked => Some(exit::PIPELINE_FAILED),
            _ => None,
        };
        if structured {
            previous = current.clone();
        }
        if let Some(code) = done {
            if tty {
                draw(ctx, args, d, lost.as_deref(), &mut drawn)?;
            } else if !structured {
                // What the log held back, before it ends.
                ctx.write_out(&log.lines(d, None, Instant::now(), true, ctx))?;
            }
            return Ok(code);
        }
    }
}

/// Sleep until `at`, or forever without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Home, clear, draw: what `watch` and Argo Rollouts do; clipped to the terminal's height so
/// that the header (name, phase, next step) stays visible. A frame the same as the one on
/// screen (`drawn`) is not written again.
fn draw(
    ctx: &Ctx,
    args: &DescribeArgs,
    d: &Description,
    lost: Option<&str>,
    drawn: &mut Option<(Instant, String)>,
) -> Result<()> {
    let mut text = String::new();
    if let Some(reason) = lost {
        text.push_str(&ctx.out.paint(
            &format!("connection lost, retrying… ({reason})"),
            render::Tone::Waiting,
        ));
        text.push('\n');
    }
    text.push_str(&human(ctx, args, d));
    let text = match terminal::height() {
        Some(rows) => terminal::clip(&text, rows),
        None => text,
    };
    let unchanged = drawn
        .as_ref()
        .is_some_and(|(_, on_screen)| *on_screen == text);
    if !unchanged {
        ctx.write_out(&format!("\x1b[H\x1b[2J{text}"))?;
    }
    *drawn = Some((Instant::now(), text));
    Ok(())
}

fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A line of the log before its stamp: the stage it is about (`None`: the pipeline).
struct Said {
    stage: Option<String>,
    text: String,
}

/// What changed between two views, a line each: the change being picked up, stage states,
/// approvals given, and the phase (cluster counts and failing clusters: [`ChangeLog`]).
fn changes(prev: &Description, now: &Description, ctx: &Ctx) -> Vec<Said> {
    let said = RefCell::new(Vec::new());
    let line = |text: String| {
        said.borrow_mut().push(Said { stage: None, text });
    };
    match (&prev.stale, &now.stale) {
        (None, Some(why)) => line(format!(
            "{} has not picked up the latest change yet ({why})",
            now.reconciler
        )),
        (Some(_), None) => line(format!(
            "{} picked up the change: a new rollout",
            now.reconciler
        )),
        _ => {}
    }
    for stage in &now.stages {
        let first = said.borrow().len();
        let before = prev.stages.iter().find(|s| s.view.name == stage.view.name);
        let name = &stage.view.name;
        if before.map(|b| &b.view.state) != Some(&stage.view.state) {
            let from = before
                .map(|b| b.view.state.label())
                .unwrap_or_else(|| "-".into());
            let mut text = format!(
                "stage {name}: {from} → {}",
                ctx.out.state(&stage.view.state)
            );
            if let StageState::Failed { message, .. } | StageState::Blocked { message } =
                &stage.view.state
            {
                text.push_str(&format!(": {message}"));
            }
            line(text);
        }
        let approved = |s: Option<&crate::view::StageDetail>| {
            s.and_then(|s| s.view.trigger.approved) == Some(true)
        };
        if approved(Some(stage)) && !approved(before) {
            let by = stage
                .approval_record
                .as_ref()
                .map(|r| {
                    let reason = r
                        .reason
                        .as_ref()
                        .map(|x| format!(": {x:?}"))
                        .unwrap_or_default();
                    format!(" by {} at {}{reason}", r.user, r.time)
                })
                .unwrap_or_default();
            line(format!("stage {name}: approved{by}"));
        } else if approved(before) && !approved(Some(stage)) {
            // A reconciler that uses an approval removes it and commits the step in one write:
            // until its status write, the stage is promoting, not stripped of its approval.
            let used = matches!(
                stage.view.state,
                promotion_shared::pipeline::StageState::ApprovedPending
                    | promotion_shared::pipeline::StageState::Promoted
                    | promotion_shared::pipeline::StageState::Complete
            );
            match (used, stage.view.next_stage.as_deref()) {
                (true, Some(next)) => {
                    line(format!("stage {name}: approval used: promoting to {next}"))
                }
                (true, None) => line(format!("stage {name}: approval used: completing")),
                (false, _) => line(format!("stage {name}: approval removed")),
            }
        }
        for s in &mut said.borrow_mut()[first..] {
            s.stage = Some(name.clone());
        }
    }
    if prev.phase != now.phase {
        line(format!(
            "pipeline {}: {} → {}",
            now.name,
            prev.phase.label(),
            ctx.out.phase(&now.phase)
        ));
    }
    said.into_inner()
}

/// In the line log, a stage's count of provisioned clusters is told once its burst of movement
/// is over (no movement for this long)…
const BURST_GAP: Duration = Duration::from_secs(2);

/// … or this long after the first movement not told yet, while the burst goes on.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// How many failing clusters a line names (then how many more there are).
const NAMED: usize = 5;

/// `describe -w`'s line log, when stdout is not a terminal: the first view whole, then a line
/// per change. Each line is stamped with the time its change happened, not the time it is
/// printed: the API server's time of the write that made it (the object's latest
/// `managedFields` time, [`Changes`]): for a stage, its promotion's write if that changed, else
/// its ClusterProfile's or ClusterSummaries'; for the pipeline, the latest write; for a change
/// that carries no time (a deletion, an object without managed fields), the time the watch
/// received it. A stage's state, its approvals and the phase are said at once. Its count of
/// provisioned clusters is one line per burst (`stage dev: clusters 12 → 480/480
/// provisioned`, stamped with the latest write it counts): told once the burst is over
/// ([`BURST_GAP`]), every [`PROGRESS_EVERY`] while it goes on, and at once when the stage's
/// clusters are all provisioned, its state changes or a cluster starts or stops failing.
/// Clusters that start failing are named (those its state line does not name already).
#[derive(Default)]
struct ChangeLog {
    /// What the lines printed so far have told: `None` until the first view is printed.
    told: Option<Description>,
    counts: BTreeMap<String, Counted>,
}

/// A stage's clusters as the log has told them, and what it has not told yet.
#[derive(Default)]
struct Counted {
    /// Provisioned and total, as the last count line (or the first view) said.
    told: (usize, usize),
    /// As the last state seen.
    seen: (usize, usize),
    /// The clusters told failing, each with its failure in words.
    failing: BTreeMap<String, String>,
    /// A movement not told: since when, when it last moved, and the latest time of the writes
    /// that moved it.
    untold: Option<(Instant, Instant, DateTime<Utc>)>,
}

impl ChangeLog {
    /// The first view was printed: the log goes on from it.
    fn start(&mut self, d: &Description) {
        for stage in &d.stages {
            if let Some(c) = &stage.cluster_counts {
                let n = (c.provisioned, c.total);
                let counted = Counted {
                    told: n,
                    seen: n,
                    failing: failing(stage),
                    untold: None,
                };
                self.counts.insert(stage.view.name.clone(), counted);
            }
        }
        self.told = Some(d.clone());
    }

    /// When a count held back is to be told.
    fn due(&self) -> Option<Instant> {
        self.counts
            .values()
            .filter_map(|c| c.untold)
            .map(|(first, last, _)| (last + BURST_GAP).min(first + PROGRESS_EVERY))
            .min()
    }

    /// The lines for the state `now`, at `clock`: `changes` says what changed since the last
    /// state and when (`None`: no new state, a count fell due); `all` tells every count held
    /// back (the log ends).
    fn lines(
        &mut self,
        now: &Description,
        changes: Option<&Changes>,
        clock: Instant,
        all: bool,
        ctx: &Ctx,
    ) -> String {
        let Some(told) = self.told.take() else {
            return String::new();
        };
        let said = self::changes(&told, now, ctx);
        let latest = changes.and_then(Changes::latest);
        let seen = ctx.now();
        let promotion = changes.and_then(|c| c.promotion(&now.name));
        let mut out = String::new();
        let mut emit = |at: DateTime<Utc>, text: &str| {
            out.push_str(&format!("{}  {text}\n", stamp(at)));
        };
        let mut head = Vec::new();
        let mut tail = Vec::new();
        let mut by_stage: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in said {
            match s.stage {
                Some(stage) => by_stage.entry(stage).or_default().push(s.text),
                None if by_stage.is_empty() => head.push(s.text),
                None => tail.push(s.text),
            }
        }
        for text in &head {
            emit(promotion.or(latest).unwrap_or(seen), text);
        }
        for stage in &now.stages {
            let name = &stage.view.name;
            let stage_lines = by_stage.remove(name).unwrap_or_default();
            let of_stage = changes.and_then(|c| c.profile(stage.cluster_profile.as_deref()?));
            for text in &stage_lines {
                emit(promotion.or(of_stage).or(latest).unwrap_or(seen), text);
            }
            let Some(counts) = &stage.cluster_counts else {
                continue;
            };
            let n = (counts.provisioned, counts.total);
            // Counts first seen after the first view start from none provisioned.
            let entry = self.counts.entry(name.clone()).or_insert_with(|| Counted {
                told: (0, n.1),
                seen: (0, n.1),
                ..Counted::default()
            });
            let at = of_stage.or(latest).unwrap_or(seen);
            if n != entry.seen {
                let untold = entry.untold.get_or_insert((clock, clock, at));
                untold.1 = clock;
                untold.2 = untold.2.max(at);
                entry.seen = n;
            }
            let failing_now = failing(stage);
            let failures_moved = !failing_now.keys().eq(entry.failing.keys());
            if let Some((first, last, counted_at)) = entry.untold {
                let due = all
                    || n.0 == n.1
                    || failures_moved
                    || !stage_lines.is_empty()
                    || clock >= (last + BURST_GAP).min(first + PROGRESS_EVERY);
                if due {
                    if n != entry.told {
                        emit(counted_at, &count_line(name, entry.told, n));
                    }
                    entry.told = n;
                    entry.untold = None;
                }
            }
            let newly: Vec<&str> = failing_now
                .iter()
                .filter(|(cluster, _)| !entry.failing.contains_key(*cluster))
                .map(|(_, failure)| failure.as_str())
                .filter(|failure| !stage_lines.iter().any(|l| l.contains(failure)))
                .collect();
            if !newly.is_empty() {
                emit(at, &format!("stage {name}: failing now: {}", named(&newly)));
            }
            let recovered: Vec<&str> = entry
                .failing
                .keys()
                .filter(|cluster| !failing_now.contains_key(*cluster))
                .map(String::as_str)
                .collect();
            if !recovered.is_empty() {
                emit(
                    at,
                    &format!("stage {name}: no longer failing: {}", named(&recovered)),
                );
            }
            entry.failing = failing_now;
        }
        for text in &tail {
            emit(latest.unwrap_or(seen), text);
        }
        self.told = Some(now.clone());
        out
    }
}

/// A stage's failing clusters, by name, each with its failure in words.
fn failing(stage: &StageDetail) -> BTreeMap<String, String> {
    stage
        .view
        .clusters
        .iter()
        .flatten()
        .filter_map(|c| c.failure())
        .map(|f| (f.cluster.clone(), f.describe()))
        .collect()
}

/// `a; b; c (and 4 more)`.
fn named(items: &[&str]) -> String {
    let mut text = items
        .iter()
        .take(NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join("; ");
    if items.len() > NAMED {
        text.push_str(&format!(" (and {} more)", items.len() - NAMED));
    }
    text
}

/// `stage dev: clusters 12 → 480/480 provisioned`; with the total changed,
/// `clusters 1/1 → 1/2`: only what moved (`0 → 0/8` would read as no change when it is clusters
/// matched).
fn count_line(stage: &str, told: (usize, usize), now: (usize, usize)) -> String {
    let ((was, was_total), (is, total)) = (told, now);
    if was_total == total {
        format!("stage {stage}: clusters {was} → {is}/{total} provisioned")
    } else {
        format!("stage {stage}: clusters {was}/{was_total} → {is}/{total} provisioned")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::fixtures::profile;
    use serde_json::json;

    const CLUSTERS: usize = 30;

    fn promotion() -> Value {
        json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
            "metadata": {"name": "p"},
            "spec": {"profileSpec": {"helmCharts": [{"chartName": "x"}]}, "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}]},
            "status": {"currentStageName": "dev", "stages": [
                {"name": "dev", "lastUpdateReconciledTime": "2026-02-16T07:00:00Z"}]}
        })
    }

    /// The view with the first `provisioned` dev clusters provisioned and those in `failing`
    /// failing.
    fn view(provisioned: usize, failing: &[usize]) -> Description {
        let object = promotion();
        let names: Vec<String> = (0..CLUSTERS).map(|i| format!("dev{i:02}")).collect();
        let matching: Vec<(&str, &str)> = names.iter().map(|n| ("dev", n.as_str())).collect();
        let summaries = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let (status, message) = if failing.contains(&i) {
                    ("Failed", Some("boom"))
                } else if i < provisioned {
                    ("Provisioned", None)
                } else {
                    ("Provisioning", None)
                };
                json!({"metadata": {"name": format!("p-dev-sveltos-{n}"), "namespace": "dev",
                                    "labels": {"projectsveltos.io/cluster-profile-name": "p-dev"}},
                       "spec": {"clusterNamespace": "dev", "clusterName": n, "clusterType": "Sveltos"},
                       "status": {"featureSummaries": [{"featureID": "Helm", "status": status,
                                                        "failureMessage": message}]}})
            })
            .collect();
        let snap = Snapshot {
            profiles: Ok(vec![profile(&object, "dev", &matching)]),
            object,
            summaries: Ok(summaries),
            events: Err(String::new()),
            owners: Default::default(),
        };
        Description::build(&snap).expect("a view")
    }

    fn at(second: u32) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(&format!("2026-02-16T08:00:{second:02}Z"))
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    fn started() -> (ChangeLog, Ctx, Instant) {
        let mut log = ChangeLog::default();
        log.start(&view(0, &[]));
        (log, Ctx::in_memory(), Instant::now())
    }

    /// Thirty clusters reported one event each, a burst: one line, stamped with the write of the
    /// last one, not the time it is printed.
    #[test]
    fn a_burst_of_per_cluster_changes_is_one_line() {
        let (mut log, ctx, t0) = started();
        let mut out = String::new();
        for n in 1..=CLUSTERS {
            let clock = t0 + Duration::from_millis(100 * n as u64);
            let changes = Changes::of_summaries("p-dev", at(n as u32));
            out.push_str(&log.lines(&view(n, &[]), Some(&changes), clock, false, &ctx));
        }
        assert_eq!(
            out,
            "2026-02-16T08:00:30Z  stage dev: clusters 0 → 30/30 provisioned\n"
        );
        assert_eq!(log.due(), None, "nothing held back");
    }

    /// A burst that stops short is told once it is over; one that goes on, every
    /// PROGRESS_EVERY.
    #[test]
    fn a_count_is_told_when_its_burst_is_over_or_goes_on_too_long() {
        let (mut log, ctx, t0) = started();
        let changes = Changes::of_summaries("p-dev", at(5));
        assert_eq!(
            log.lines(&view(5, &[]), Some(&changes), t0, false, &ctx),
            ""
        );
        assert_eq!(log.due(), Some(t0 + BURST_GAP));
        // A state with nothing new (the timer) before then tells nothing.
        assert_eq!(
            log.lines(&view(5, &[]), None, t0 + BURST_GAP / 2, false, &ctx),
            ""
        );
        assert_eq!(
            log.lines(&view(5, &[]), None, t0 + BURST_GAP, false, &ctx),
            "2026-02-16T08:00:05Z  stage dev: clusters 0 → 5/30 provisioned\n"
        );
        assert_eq!(log.due(), None);
        // Movement every second for longer than PROGRESS_EVERY: one line per PROGRESS_EVERY.
        let mut lines = Vec::new();
        let start = t0 + Duration::from_secs(60);
        for k in 0..25u32 {
            let clock = start + Duration::from_secs(u64::from(k));
            let changes = Changes::of_summaries("p-dev", at(10 + k));
            let out = log.lines(
                &view(6 + k as usize, &[]),
                Some(&changes),
                clock,
                false,
                &ctx,
            );
            lines.extend(out.lines().map(String::from));
        }
        assert_eq!(
            lines,
            [
                "2026-02-16T08:00:20Z  stage dev: clusters 5 → 16/30 provisioned",
                "2026-02-16T08:00:31Z  stage dev: clusters 16 → 27/30 provisioned",
                // All provisioned: told at once.
                "2026-02-16T08:00:34Z  stage dev: clusters 27 → 30/30 provisioned",
            ]
        );
    }

    /// Clusters that start failing are named at once, the count that moved with them is told
    /// with them, and so are the ones that stop failing.
    #[test]
    fn failing_clusters_are_named() {
        let (mut log, ctx, t0) = started();
        let changes = Changes::of_summaries("p-dev", at(7));
        let out = log.lines(&view(10, &[12, 20]), Some(&changes), t0, false, &ctx);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("2026-02-16T08:00:07Z  ")),
            "{out}"
        );
        assert!(
            lines.contains(&"2026-02-16T08:00:07Z  stage dev: clusters 0 → 10/30 provisioned"),
            "{out}"
        );
        // Each failing cluster is named once: in the stage's state line, or in a line of its own.
        for cluster in ["dev/dev12 Helm Failed: boom", "dev/dev20 Helm Failed: boom"] {
            assert_eq!(out.matches(cluster).count(), 1, "{cluster}: {out}");
        }
        let changes = Changes::of_summaries("p-dev", at(9));
        let out = log.lines(&view(10, &[20]), Some(&changes), t0, false, &ctx);
        assert!(
            out.contains("2026-02-16T08:00:09Z  stage dev: no longer failing: dev/dev12\n"),
            "{out}"
        );
    }
}
