//! `approve NAME [--stage S] [--reason TEXT] [--dry-run=…] [--pre-approve] [--wait]`.
//!
//! Which stage may be approved is decided here from the derived pipeline; the write itself is
//! the guarded JSON Patch of `promotion_shared::patch`, re-read and retried on conflict.

use std::time::Duration;

use clap::{Args, ValueEnum};

use serde_json::Value;

use promotion_shared::admission::{approval_records, APPROVAL_REASON_ANNOTATION};
use promotion_shared::model::ClusterPromotion;
use promotion_shared::patch;
use promotion_shared::pipeline::{Approval, StageState, TriggerKind};

use super::wait::WaitFor;
use super::{note, wait, warn, Ctx};
use crate::cluster::admission_webhooks;
use crate::cluster::fetch;
use crate::cluster::resources::PROMOTIONS;
use crate::error::{exit::approve as exit, Error, Request, Result};
use crate::render::duration;
use crate::render::output;
use crate::render::printers::{self, FormatArg, OutputFormat, PrintOptions, OBJECT_FORMATS};
use crate::view::{self, Description};

/// `--dry-run`, as kubectl spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    None,
    Client,
    Server,
}

#[derive(Args, Debug)]
#[command(
    about = "Approve a stage's manual gate so the pipeline promotes to the next stage",
    long_about = "\
Approve a stage's manual gate (spec.stages[i].trigger.manual.approved = true), which lets the
pipeline promote from that stage to the next one.

Without --stage, approves the stage that is awaiting approval. Refuses an unknown stage, a stage
whose trigger is auto or absent, and the last stage, listing the stages that can be approved.
Approving a stage the pipeline has not reached yet needs --pre-approve. Approving an already
approved stage changes nothing.

The write is a single JSON Patch guarded by `test` operations on the stage name at its index and
on the stage's current manual trigger, so it can never approve a different stage or undo a
concurrent change; on a conflict it re-reads and retries (bounded). No other field is touched
(automaticReset stays as it is). --reason travels in the same patch as the annotation
kubectl-promotion.dev/approval-reason, which the admission webhook records with your identity.",
    after_help = "\
Examples:
  kubectl promotion approve kyverno-rollout
  kubectl promotion approve kyverno-rollout --stage staging --reason \"CAB-1234\"
  kubectl promotion approve kyverno-rollout --stage staging --dry-run=server -o yaml
  kubectl promotion approve kyverno-rollout --stage staging --pre-approve
  kubectl promotion approve kyverno-rollout --wait --timeout=10m

Exit status: 0 approved (or already approved); 1 refused or error; with --wait, 2 if the pipeline
fails and 3 if the next stage has not started within --timeout."
)]
pub struct ApproveArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Stage whose gate to approve (default: the stage awaiting approval)
    #[arg(long, value_name = "STAGE")]
    pub stage: Option<String>,
    /// Why; recorded with your identity by the admission webhook
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// none: approve; client: show the patch without sending it; server: let the server
    /// validate and show the result without storing it
    #[arg(long, value_enum, value_name = "MODE", default_value_t = DryRun::None,
          num_args = 0..=1, require_equals = true, default_missing_value = "client")]
    pub dry_run: DryRun,
    /// Allow approving a stage the pipeline has not reached yet
    #[arg(long)]
    pub pre_approve: bool,
    /// Wait until the next stage has started
    #[arg(long)]
    pub wait: bool,
    /// With --wait: how long to wait (e.g. 10m)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration::parse_flag,
          requires = "wait")]
    pub timeout: Duration,
    /// Print the object as stored by the server instead of the confirmation: json, yaml, name,
    /// or a kubectl template (jsonpath=…, jsonpath-file=…, jsonpath-as-json=…, custom-columns=…,
    /// custom-columns-file=…)
    #[arg(short = 'o', long = "output", value_name = "FORMAT",
          value_parser = FormatArg(OBJECT_FORMATS))]
    pub output: Option<String>,
    /// With a jsonpath or custom-columns template, print nothing for a missing field instead of
    /// failing
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allow_missing_template_keys: bool,
}

/// Attempts before giving up when the object keeps changing under us.
pub const MAX_ATTEMPTS: u32 = 5;

/// The stage to approve, once every refusal rule has passed.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub stage: String,
    /// The stage approving promotes to; `None` for a gate on the last stage, which completes the
    /// pipeline (Sveltos evaluates the last stage's trigger too).
    pub next: Option<String>,
    /// `staging → production`, or `production → complete`.
    pub transition: String,
    pub already_approved: bool,
    /// The pipeline has not reached the stage (or already went past it) in this rollout.
    pub ahead_of_time: bool,
    /// Plain words for an already-approved stage: pending or used.
    pub approval: Approval,
}

/// Stages whose gate can be approved ([`ClusterPromotion::approvable_stages`]).
pub fn approvable(p: &ClusterPromotion) -> Vec<String> {
    p.approvable_stages()
        .into_iter()
        .map(String::from)
        .collect()
}

fn approvable_hint(p: &ClusterPromotion) -> String {
    match approvable(p).as_slice() {
        [] => {
            "this promotion has no stage with a manual trigger, so nothing can be approved".into()
        }
        list => format!("stages that can be approved: {}", list.join(", ")),
    }
}

/// What the pipeline is doing, for refusals.
fn doing(d: &Description) -> String {
    if let Some(n) = &d.note {
        return format!("its status is empty ({n})");
    }
    match d
        .stages
        .iter()
        .rev()
        .find(|s| s.view.state != StageState::NotStarted)
    {
        Some(f) => format!(
            "it is {} at stage {} ({})",
            d.phase.label(),
            f.view.name,
            f.view.state.label()
        ),
        None => format!("it is {}", d.phase.label()),
    }
}

/// Apply the refusal rules of `approve` to the computed view of the promotion.
pub fn resolve(
    p: &ClusterPromotion,
    d: &Description,
    stage: Option<&str>,
    pre_approve: bool,
) -> Result<Target> {
    let name = p.name();
    if let (Some(why), false) = (&d.stale, pre_approve) {
        let stage_hint = stage.unwrap_or("S");
        return Err(Error::Refused(format!(
            "Sveltos has not picked up the latest change to {name:?} yet ({why}): the stage \
             states are the previous rollout's, and approving now would approve the new \
             rollout's gate ahead of time. Wait until the new rollout reaches the gate \
             (kubectl promotion wait {name} --for=approval), or pass --stage {stage_hint} \
             --pre-approve to approve it ahead of time on purpose"
        )));
    }
    let stage_name = match stage {
        Some(s) => s.to_string(),
        None => match d
            .stages
            .iter()
            .find(|s| s.approve_unblocks.is_some())
            .or_else(|| {
                // Approved but not yet used: approving "the waiting stage" again is a no-op.
                d.stages
                    .iter()
                    .find(|s| s.view.state == StageState::ApprovedPending)
            }) {
            Some(s) => s.view.name.clone(),
            None => {
                return Err(Error::Refused(format!(
                    "no stage of {name:?} is awaiting approval: {}. Pass --stage to choose one \
                     ({})",
                    doing(d),
                    approvable_hint(p)
                )))
            }
        },
    };
    let Some(detail) = d.stages.iter().find(|s| s.view.name == stage_name) else {
        let all: Vec<&str> = p.spec.stages.iter().map(|s| s.name.as_str()).collect();
        return Err(Error::Refused(format!(
            "{name:?} has no stage {stage_name:?} (stages: {}); {}",
            all.join(", "),
            approvable_hint(p)
        )));
    };
    let view = &detail.view;
    let transition = view::transition(view);
    let onward = match &view.next_stage {
        Some(next) => format!("it promotes to {next:?}"),
        None => "it completes the pipeline".to_string(),
    };
    match view.trigger.kind {
        TriggerKind::Manual => {}
        TriggerKind::Auto => {
            return Err(Error::Refused(format!(
                "stage {stage_name:?} has an auto trigger: {onward} by itself ({}); {}",
                view.trigger.summary(),
                approvable_hint(p)
            )))
        }
        TriggerKind::None => {
            return Err(Error::Refused(format!(
                "stage {stage_name:?} has no trigger: {onward} as soon as its clusters are \
                 provisioned; {}",
                approvable_hint(p)
            )))
        }
        TriggerKind::Both => {
            return Err(Error::Refused(format!(
                "stage {stage_name:?} has both an auto and a manual trigger, which Sveltos \
                 rejects; fix the manifest first (kubectl promotion lint -f FILE)"
            )))
        }
    }
    let already_approved = view.trigger.approved == Some(true);
    let ahead_of_time =
        d.stale.is_some() || matches!(view.state, StageState::NotStarted | StageState::Promoted);
    if ahead_of_time && !already_approved && !pre_approve {
        let why = if view.state == StageState::Promoted {
            format!(
                "stage {stage_name:?} was already promoted ({transition}) in this rollout, so an \
                 approval now only applies to a later rollout"
            )
        } else {
            format!(
                "the pipeline has not reached stage {stage_name:?} yet ({})",
                doing(d)
            )
        };
        return Err(Error::Refused(format!(
            "{why}; pass --pre-approve to approve it ahead of time"
        )));
    }
    Ok(Target {
        stage: stage_name,
        next: view.next_stage.clone(),
        transition,
        already_approved,
        ahead_of_time,
        approval: view.approval,
    })
}

pub async fn run(ctx: &Ctx, args: &ApproveArgs) -> Result<u8> {
    let format = OutputFormat::of_flag(args.output.as_deref(), OBJECT_FORMATS)?;
    if args.wait && args.dry_run != DryRun::None {
        return Err(Error::Usage(
            "--wait cannot be combined with --dry-run".into(),
        ));
    }
    let reason = args
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if args.reason.is_some() && reason.is_none() {
        return Err(Error::Usage("--reason is empty".into()));
    }
    let kube = ctx.kube().await?;
    let name = args.name.as_str();
    let what = Request::named("patch", PROMOTIONS, name);
    let mut attempt = 1;
    let (target, before, stored) = loop {
        let snap = fetch::state(&kube, name).await?;
        let object = snap.object.clone();
        let promotion = view::typed(&object)?;
        let d = Description::build(&snap)?;
        let target = resolve(&promotion, &d, args.stage.as_deref(), args.pre_approve)?;
        if target.already_approved {
            let transition = &target.transition;
            let state = match target.approval {
                Approval::Consumed => format!(
                    "the approval was already used ({transition}; automaticReset: false keeps \
                     it for later rollouts)"
                ),
                _ => format!("Sveltos acts on it on its next pass ({transition})"),
            };
            if matches!(format, OutputFormat::Default | OutputFormat::Wide) {
                println!(
                    "{} unchanged: stage {} is already approved; {state}",
                    output::resource_name(name),
                    target.stage
                );
            } else {
                // As `kubectl apply -o …` of an unchanged object: the object, as stored.
                print_result(name, &target, &object, args, &format)?;
                note(
                    ctx,
                    &format!(
                        "unchanged: stage {} is already approved; {state}",
                        target.stage
                    ),
                );
            }
            if reason.is_some() {
                note(ctx, "the reason was not recorded: nothing was changed");
            }
            if !args.wait {
                return Ok(exit::OK);
            }
            return wait_after(ctx, &kube, name, &target, args).await;
        }
        let annotations: Vec<(&str, &str)> = reason
            .map(|r| vec![(APPROVAL_REASON_ANNOTATION, r)])
            .unwrap_or_default();
        let built = patch::approve(&object, &target.stage, &annotations)
            .map_err(|e| Error::Refused(format!("cannot approve stage {:?}: {e}", target.stage)))?;
        if args.dry_run == DryRun::Client {
            let text =
                serde_json::to_string_pretty(&built.patch).map_err(|e| Error::Io(e.to_string()))?;
            note(ctx, &format!("JSON Patch that would be sent:\n{text}"));
            let mut patched = object.clone();
            json_patch::patch(&mut patched, &built.patch).map_err(|e| Error::Io(e.to_string()))?;
            break (target, object, patched);
        }
        match kube
            .json_patch(name, &built.patch, args.dry_run == DryRun::Server)
            .await
        {
            Ok(stored) => break (target, object, stored),
            // 409: resourceVersion conflict; 422: a `test` failed because the object changed
            // between our read and the write. Both mean: read again and decide again.
            Err(kube::Error::Api(s)) if matches!(s.code, 409 | 422) && attempt < MAX_ATTEMPTS => {
                let why = if s.code == 409 {
                    "resourceVersion conflict"
                } else {
                    "a guard `test` of the patch failed"
                };
                note(
                    ctx,
                    &format!(
                        "{name} changed while approving ({why}); reading it again (attempt {}/{MAX_ATTEMPTS})",
                        attempt + 1
                    ),
                );
                tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                attempt += 1;
            }
            Err(kube::Error::Api(s)) if matches!(s.code, 409 | 422) => {
                return Err(Error::Api {
                    request: what,
                    message: format!(
                    "the object kept changing; gave up after {MAX_ATTEMPTS} attempts (last: {})",
                    s.message
                ),
                })
            }
            Err(kube::Error::Api(s))
                if admission_webhooks::unreachable_webhook(&s.message).is_some() =>
            {
                let (webhook, cause) =
                    admission_webhooks::unreachable_webhook(&s.message).unwrap_or_default();
                let found = admission_webhooks::for_promotions(&kube, &labels_of(&object)).await;
                // The webhook's absence, and what its failurePolicy makes of it.
                let policy = admission_webhooks::refused_because(&webhook, &found);
                return Err(Error::Api {
                    request: what,
                    message: format!(
                        "admission webhook {webhook:?} did not answer ({cause}); {policy}"
                    ),
                });
            }
            Err(e) => return Err(kube.error(e, &what)),
        }
    };
    if args.dry_run == DryRun::None && !recorded(&before, &stored, &target.stage) {
        let found = admission_webhooks::for_promotions(&kube, &labels_of(&before)).await;
        warn(
            ctx,
            &format!(
                "the approval of stage {:?} carries no record of who gave it: {}",
                target.stage,
                admission_webhooks::unrecorded_because(&found)
            ),
        );
    }

    print_result(name, &target, &stored, args, &format)?;
    if args.wait {
        return wait_after(ctx, &kube, name, &target, args).await;
    }
    Ok(exit::OK)
}

fn labels_of(object: &Value) -> std::collections::BTreeMap<String, String> {
    serde_json::from_value(object["metadata"]["labels"].clone()).unwrap_or_default()
}

/// Whether promotion-webhook wrote (or rewrote) the stage's approval record in this write.
fn recorded(before: &Value, stored: &Value, stage: &str) -> bool {
    let record = |object: &Value| {
        approval_records(object)
            .ok()
            .and_then(|mut records| records.remove(stage))
    };
    let after = record(stored);
    after.is_some() && after != record(before)
}

/// `--wait`: until the stage approving promotes to has started (or, for a gate on the last
/// stage, the pipeline has completed), whether this run approved it or it already was.
async fn wait_after(
    ctx: &Ctx,
    kube: &crate::cluster::kube_client::Kube,
    name: &str,
    target: &Target,
    args: &ApproveArgs,
) -> Result<u8> {
    let (cond, what) = match &target.next {
        Some(next) => (
            WaitFor::Stage(next.clone()),
            format!("stage {next} to start"),
        ),
        None => (WaitFor::Complete, "the pipeline to complete".to_string()),
    };
    note(
        ctx,
        &format!("waiting up to {:?} for {what}…", args.timeout),
    );
    wait::wait_for(ctx, kube, name, &cond, args.timeout, false).await
}

fn print_result(
    name: &str,
    target: &Target,
    stored: &Value,
    args: &ApproveArgs,
    format: &OutputFormat,
) -> Result<()> {
    let text = match format {
        OutputFormat::Json => output::to_json(&output::without_managed_fields(stored))?,
        OutputFormat::Yaml => output::to_yaml(&output::without_managed_fields(stored))?,
        OutputFormat::Name => format!("{}\n", output::resource_name(name)),
        OutputFormat::JsonPath { .. } | OutputFormat::CustomColumns(_) => format
            .print(
                printers::Target::Object(stored),
                PrintOptions {
                    allow_missing_template_keys: args.allow_missing_template_keys,
                    no_headers: false,
                },
            )?
            .unwrap_or_default(),
        OutputFormat::Default | OutputFormat::Wide => {
            let mut line = format!(
                "{} approved (stage {})",
                output::resource_name(name),
                target.transition
            );
            if target.ahead_of_time {
                line.push_str(", pre-approved ahead of the pipeline");
            }
            match args.dry_run {
                DryRun::Client => line.push_str(" (dry run)"),
                DryRun::Server => line.push_str(" (server dry run)"),
                DryRun::None => {}
            }
            line + "\n"
        }
    };
    print!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Snapshot;
    use serde_json::json;

    fn promotion(stages: Value, status: Value) -> (ClusterPromotion, Description) {
        let object = json!({
            "metadata": {"name": "p"},
            "spec": {"stages": stages},
            "status": status
        });
        let p: ClusterPromotion = serde_json::from_value(object.clone()).unwrap();
        let d = Description::build(&Snapshot::offline(object)).unwrap();
        (p, d)
    }

    fn gate(approved: Option<bool>) -> (ClusterPromotion, Description) {
        let mut manual = json!({});
        if let Some(a) = approved {
            manual["approved"] = json!(a);
        }
        promotion(
            json!([
                {"name": "dev", "trigger": {"auto": {"delay": "2m"}}},
                {"name": "staging", "trigger": {"manual": manual}},
                {"name": "qa", "trigger": {"manual": {}}},
                {"name": "production", "trigger": {"manual": {}}}
            ]),
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t"},
                {"name": "staging", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}
            ]}),
        )
    }

    fn refusal(r: Result<Target>) -> String {
        match r {
            Err(Error::Refused(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn default_stage_is_the_one_awaiting_approval() {
        let (p, d) = gate(Some(false));
        let t = resolve(&p, &d, None, false).unwrap();
        assert_eq!(
            (t.stage.as_str(), t.next.as_deref()),
            ("staging", Some("qa"))
        );
        assert_eq!(t.transition, "staging → qa");
        assert!(!t.already_approved && !t.ahead_of_time);
    }

    #[test]
    fn nothing_awaiting_says_what_the_pipeline_does() {
        let (p, d) = promotion(
            json!([{"name": "dev", "trigger": {"manual": {}}}, {"name": "prod"}]),
            json!({"stages": [{"name": "dev"}]}),
        );
        let m = refusal(resolve(&p, &d, None, false));
        assert!(m.contains("no stage of \"p\" is awaiting approval"), "{m}");
        assert!(m.contains("at stage dev (provisioning)"), "{m}");
        assert!(m.contains("stages that can be approved: dev"), "{m}");
    }

    #[test]
    fn refusals_list_what_can_be_approved() {
        let (p, d) = gate(Some(false));
        let unknown = refusal(resolve(&p, &d, Some("uat"), false));
        assert!(unknown.contains("no stage \"uat\" (stages: dev, staging, qa, production)"));
        assert!(unknown.contains("stages that can be approved: staging, qa, production"));
        let auto = refusal(resolve(&p, &d, Some("dev"), false));
        assert!(
            auto.contains("has an auto trigger: it promotes to \"staging\""),
            "{auto}"
        );
    }

    #[test]
    fn a_gate_on_the_last_stage_can_be_approved_and_completes_the_pipeline() {
        let (p, d) = promotion(
            json!([
                {"name": "dev"},
                {"name": "prod", "trigger": {"manual": {}}}
            ]),
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t"},
                {"name": "prod", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}
            ]}),
        );
        let t = resolve(&p, &d, None, false).unwrap();
        assert_eq!(t.stage, "prod");
        assert_eq!(t.next, None);
        assert_eq!(t.transition, "prod → complete");
    }

    #[test]
    fn stage_without_trigger_is_refused() {
        let (p, d) = promotion(
            json!([{"name": "a"}, {"name": "b"}]),
            json!({"stages": [{"name": "a"}]}),
        );
        let m = refusal(resolve(&p, &d, Some("a"), false));
        assert!(m.contains("has no trigger"), "{m}");
        assert!(m.contains("no stage with a manual trigger"), "{m}");
    }

    #[test]
    fn unreached_stage_needs_pre_approve() {
        let (p, d) = gate(Some(false));
        let m = refusal(resolve(&p, &d, Some("qa"), false));
        assert!(m.contains("has not reached stage \"qa\" yet"), "{m}");
        assert!(m.contains("--pre-approve"), "{m}");
        let t = resolve(&p, &d, Some("qa"), true).unwrap();
        assert!(t.ahead_of_time);
        assert_eq!(t.next.as_deref(), Some("production"));
    }

    #[test]
    fn already_approved_is_a_no_op_target() {
        let (p, d) = gate(Some(true));
        let t = resolve(&p, &d, Some("staging"), false).unwrap();
        assert!(t.already_approved);
        assert_eq!(t.approval, Approval::Pending);
    }

    #[test]
    fn a_stale_status_is_never_approved_by_default() {
        let (p, mut d) = gate(Some(false));
        d.stale = Some("spec.profileSpec changed".into());
        let m = refusal(resolve(&p, &d, None, false));
        assert!(m.contains("has not picked up the latest change"), "{m}");
        assert!(m.contains("--pre-approve"), "{m}");
        let t = resolve(&p, &d, Some("staging"), true).unwrap();
        assert!(t.ahead_of_time);
    }
}
