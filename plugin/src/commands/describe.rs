//! `describe [NAME...]` / `describe -f FILE` / `describe NAME --watch`.

use std::path::PathBuf;
use std::time::Duration;

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
use crate::cluster::watch::{Follower, Update};
use crate::error::{exit::describe as exit, Error, Result};
use crate::render::output;
use crate::render::printers::{FormatArg, OutputFormat, PrintOptions, Target, MODEL_FORMATS};
use crate::render::{self, describe::Options, terminal};
use crate::view::approver::{ApprovalRight, CallerFacts, RevokeRight};
use crate::view::{self, Description, Snapshot, API_VERSION};

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
    // As `kubectl describe a b c`: the ones that exist are described, each missing one is an
    // error after them, and the command fails.
    let mut missing = Vec::new();
    for snap in snapshots {
        match snap {
            Ok(snap) => {
                descriptions.push(Description::build(&snap)?);
                promotions.push(snap.object);
            }
            Err(e @ Error::NotFound(_)) if names.len() > 1 => missing.push(e),
            Err(e) => return Err(e),
        }
    }
    add_reach(&kube, &mut descriptions, &promotions).await;
    advise_only_what_the_caller_can(&kube, &mut descriptions, &promotions).await;
    if descriptions.is_empty() && missing.is_empty() {
        eprintln!("No resources found");
    }
    judge_the_reconciler(&kube, &mut descriptions).await;
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

/// Whether promotion-controller can act on each promotion: its Lease is read once
/// ([`view::reconciler_health`]); one that cannot be read is a warning, not a verdict.
async fn judge_the_reconciler(kube: &Kube, descriptions: &mut [Description]) {
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
async fn caller_facts(kube: &Kube) -> CallerFacts {
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

async fn may_patch(kube: &Kube, name: &str) -> std::result::Result<bool, String> {
    kube.can_patch_promotion(name)
        .await
        .map_err(|e| e.read_failure())
}

/// Whether `d` proposes something only some callers may do: an approval, or withdrawing one.
fn judges_the_caller(d: &Description) -> bool {
    d.proposes_approval() || d.has_revocable_approval()
}

/// Word `d`'s proposed approvals and revocations for the caller; the rollout's starter is the
/// one the webhook's record names, as the webhook judges four eyes.
fn judge(
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
/// and every second anyway so that "in 26m" keeps counting; the top of the view stays on screen
/// when it is taller than the terminal; while the server is away the view says so. Otherwise
/// the first view is printed whole and then one line per change (stage states, cluster
/// progress, approvals), so a log stays readable.
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
    let mut last_draw: Option<Instant> = None;
    let mut tick = tokio::time::interval(REDRAW_EVERY);
    let mut access: Option<(std::result::Result<bool, String>, CallerFacts)> = None;
    loop {
        tokio::select! {
            update = follower.next() => match update? {
                Update::Changed(state) => {
                    if tty {
                        let uid = state.object.pointer("/metadata/uid").and_then(Value::as_str);
                        events = kube.list_events(name, uid).await.map_err(|e| e.read_failure());
                    }
                    let mut d = Description::build(&state.snapshot(events.clone()))?;
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
                }
                Update::ConnectionLost(reason) => lost = Some(reason),
            },
            // A tick redraws what a change arriving too soon after the last draw left undrawn,
            // and moves the relative times on.
            _ = tick.tick(), if tty => {}
        }
        let Some(d) = &current else { continue };
        if tty {
            if last_draw.is_none_or(|t| t.elapsed() >= REDRAW_EVERY) {
                draw(ctx, args, d, lost.as_deref())?;
                last_draw = Some(Instant::now());
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
                stamp(ctx)
            ))?;
        } else {
            match &previous {
                None => print(ctx, args, format, std::slice::from_ref(d), false)?,
                Some(prev) => ctx.write_out(&changes(prev, d, ctx))?,
            }
        }
        let done = match d.phase {
            Phase::Complete => Some(exit::OK),
            Phase::Failed | Phase::Blocked => Some(exit::PIPELINE_FAILED),
            _ => None,
        };
        previous = current.clone();
        if let Some(code) = done {
            if tty {
                draw(ctx, args, d, lost.as_deref())?;
            }
            return Ok(code);
        }
    }
}

/// Home, clear, draw: what `watch` and Argo Rollouts do; clipped to the terminal's height so
/// that the header (name, phase, next step) stays visible.
fn draw(ctx: &Ctx, args: &DescribeArgs, d: &Description, lost: Option<&str>) -> Result<()> {
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
    ctx.write_out(&format!("\x1b[H\x1b[2J{text}"))
}

fn stamp(ctx: &Ctx) -> String {
    ctx.now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// One line per change between two views, timestamped: the change being picked up, stage
/// states, cluster progress (`0 → 30 → 60/60 provisioned`), approvals given, and the phase.
pub fn changes(prev: &Description, now: &Description, ctx: &Ctx) -> String {
    let stamp = stamp(ctx);
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&format!("{stamp}  {text}\n"));
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
        let counts = |s: Option<&crate::view::StageDetail>| {
            s.and_then(|s| s.cluster_counts.as_ref())
                .map(|c| (c.provisioned, c.total))
        };
        if let (Some((was, was_total)), Some((is, total))) = (counts(before), counts(Some(stage))) {
            // Only what moved: `0 → 0/8` would read as no change when it is clusters matched.
            if was != is && was_total == total {
                line(format!(
                    "stage {name}: clusters {was} → {is}/{total} provisioned"
                ));
            } else if was_total != total {
                line(format!(
                    "stage {name}: clusters {was}/{was_total} → {is}/{total} provisioned"
                ));
            }
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
    }
    if prev.phase != now.phase {
        line(format!(
            "pipeline {}: {} → {}",
            now.name,
            prev.phase.label(),
            ctx.out.phase(&now.phase)
        ));
    }
    out
}
