//! `approve NAME [--stage S] [--reason TEXT] [--dry-run=…] [--pre-approve] [--wait]`, and
//! `approve NAME --stage S --revoke [--reason TEXT]`.
//!
//! Which stage may be approved, and every refusal, is decided by `promotion_shared::gate` from
//! the derived pipeline (this module words the refusals); the write itself is the guarded merge
//! patch of `promotion_shared::patch` at the gate's index, re-read and retried on a conflict.

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;

use serde_json::Value;

use promotion_shared::admission::{approval_records, APPROVAL_REASON_ANNOTATION};
use promotion_shared::api_error::{classify, Failure};
use promotion_shared::gate::{
    self, approval_target, revoke_target, Activity, Approvable, Gate, Refusal, RevokeRefusal,
};
use promotion_shared::model::ClusterPromotion;
use promotion_shared::patch;
use promotion_shared::pipeline::{Approval, Pipeline};

use super::wait::WaitFor;
use super::{note, wait, warn, Ctx, DryRun};
use crate::cluster::admission_webhooks;
use crate::cluster::kube_client::{self, Kube};
use crate::cluster::resources::PROMOTIONS;
use crate::duration;
use crate::error::{exit::approve as exit, Error, Request, Result};
use crate::render::output;
use crate::render::printers::{self, FormatArg, OutputFormat, PrintOptions, OBJECT_FORMATS};
use crate::view::{self, Snapshot};

#[derive(Args, Debug)]
#[command(
    about = "Approve a stage's manual gate so the pipeline promotes to the next stage",
    long_about = "\
Approve a stage's manual gate (spec.stages[i].trigger.manual.approved = true), which lets the
pipeline promote from that stage to the next one.

Without --stage, approves the stage that is awaiting approval. Refuses an unknown stage and a stage
whose trigger is auto or absent, listing the stages that can be approved. The last stage's gate
is approved like any other: approving it lets the pipeline complete.
Approving a stage the pipeline has not reached yet needs --pre-approve. A stage the current
rollout has already passed is refused: an approval there would count as used at once, and the next
rollout needs its own (unless the gate has automaticReset: false, which keeps an approval for later
rollouts: then --pre-approve). Approving an already approved stage changes nothing. A paused
promotion (kubectl promotion pause) is approved all the same: the approval is used once it is
resumed, and approve says so.

--revoke withdraws the approval of --stage before it is used (sets approved: false, with the same
guarded patch), and refuses a stage without an approval or whose approval was already used. The
admission webhook records who revoked it, when, and --reason; describe shows \"revoked by\".
Where the install publishes approver groups, the webhook lets whoever gave an approval withdraw
it, and otherwise only someone who may approve that stage; describe's Revoke: line says whether
you may.

The write is a single JSON merge patch carrying the resourceVersion it was computed from (the
server refuses it if the promotion changed meanwhile), so it can never approve a different stage
or undo a concurrent change; on a conflict it re-reads and retries (bounded). No other field is
touched
(automaticReset stays as it is). --reason travels in the same patch as the annotation
kubectl-promotion.dev/approval-reason, which the admission webhook records with your identity.",
    after_help = "\
Examples:
  kubectl promotion approve kyverno-rollout
  kubectl promotion approve kyverno-rollout --stage staging --reason \"CAB-1234\"
  kubectl promotion approve kyverno-rollout --stage staging --dry-run=server -o yaml
  kubectl promotion approve kyverno-rollout --stage staging --pre-approve
  kubectl promotion approve kyverno-rollout --stage staging --revoke --reason \"wrong build\"
  kubectl promotion approve kyverno-rollout --wait --timeout=10m

Exit status: 0 approved (or already approved) or revoked; 1 refused or error; with --wait, 2 if
the pipeline fails and 3 if the next stage has not started within --timeout."
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
    #[arg(long, conflicts_with = "revoke")]
    pub pre_approve: bool,
    /// Withdraw the approval of --stage instead (approved: false), before it is used
    #[arg(long, requires = "stage")]
    pub revoke: bool,
    /// Wait until the next stage has started
    #[arg(long, conflicts_with = "revoke")]
    pub wait: bool,
    /// With --wait: how long the command may take, the approval included (e.g. 10m)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration::parse_flag,
          requires = "wait")]
    pub timeout: Duration,
    /// Print the object as stored by the server instead of the confirmation: json, yaml, name,
    /// or a kubectl template (jsonpath=…, jsonpath-file=…, jsonpath-as-json=…, custom-columns=…,
    /// custom-columns-file=…)
    #[arg(short = 'o', long = "output", value_name = "FORMAT",
          value_parser = FormatArg(OBJECT_FORMATS))]
    pub output: Option<String>,
    /// With a jsonpath template, print nothing for a missing field instead of failing
    /// (custom-columns print <none> for it either way, as kubectl does)
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allow_missing_template_keys: bool,
}

/// Apply the refusal rules of `approve` ([`approval_target`]) to the derived pipeline; a refusal
/// becomes its message.
pub fn resolve(pipeline: &Pipeline, stage: Option<&str>, pre_approve: bool) -> Result<Gate> {
    approval_target(pipeline, stage, pre_approve)
        .map_err(|r| Error::Refused(refusal(&pipeline.name, &r)))
}

/// Apply the rules of `approve --revoke` ([`revoke_target`]); a refusal becomes its message.
pub fn resolve_revoke(pipeline: &Pipeline, stage: &str) -> Result<Gate> {
    revoke_target(pipeline, stage).map_err(|r| {
        Error::Refused(match r {
            RevokeRefusal::Gate(r) => refusal(&pipeline.name, &r),
            RevokeRefusal::NotApproved { stage } => format!(
                "stage {stage:?} of {:?} has no approval to revoke (approved is not true)",
                pipeline.name
            ),
            RevokeRefusal::Used { stage, transition } => format!(
                "the approval of stage {stage:?} was already used ({transition}); there is \
                 nothing left to revoke ({} removes it, or the next update does)",
                pipeline.reconciler
            ),
        })
    })
}

/// The message of a refusal to approve a gate of the promotion `name`.
pub fn refusal(name: &str, refusal: &Refusal) -> String {
    match refusal {
        Refusal::Deleting { since } => format!(
            "{name:?} is being deleted (since {since}): no stage starts and no approval is used \
             any more, so there is nothing to approve"
        ),
        Refusal::Stale {
            reason,
            requested,
            reconciler,
        } => {
            let stage_hint = requested.as_deref().unwrap_or("S");
            format!(
                "{reconciler} has not picked up the latest change to {name:?} yet ({reason}): the \
                 stage states are the previous rollout's, and approving now would approve the \
                 new rollout's gate ahead of time. Wait until the new rollout reaches the gate \
                 (kubectl promotion wait {name} --for=approval), or pass --stage {stage_hint} \
                 --pre-approve to approve it ahead of time on purpose"
            )
        }
        Refusal::NothingAwaiting {
            activity,
            approvable,
        } => format!(
            "no stage of {name:?} is awaiting approval: {}. Pass --stage to choose one ({})",
            doing(activity),
            approvable_hint(approvable)
        ),
        Refusal::UnknownStage {
            requested,
            stages,
            approvable,
        } => format!(
            "{name:?} has no stage {requested:?} (stages: {}); {}",
            stages.join(", "),
            approvable_hint(approvable)
        ),
        Refusal::AutoTrigger {
            stage,
            next,
            trigger,
            approvable,
        } => format!(
            "stage {stage:?} has an auto trigger: {} by itself ({}); {}",
            onward(next.as_deref()),
            trigger.summary(),
            approvable_hint(approvable)
        ),
        Refusal::NoTrigger {
            stage,
            next,
            approvable,
        } => format!(
            "stage {stage:?} has no trigger: {} as soon as its clusters are provisioned; {}",
            onward(next.as_deref()),
            approvable_hint(approvable)
        ),
        Refusal::BothTriggers { stage } => format!(
            "stage {stage:?} has both an auto and a manual trigger, which Sveltos rejects; fix \
             the manifest first (kubectl promotion lint -f FILE)"
        ),
        Refusal::NotReached { stage, activity } => format!(
            "the pipeline has not reached stage {stage:?} yet ({}); pass --pre-approve to \
             approve it ahead of time",
            doing(activity)
        ),
        Refusal::AlreadyPromoted {
            stage,
            next,
            persists: true,
        } => format!(
            "stage {stage:?} was already promoted ({}) in this rollout, so an approval now only \
             applies to a later rollout; pass --pre-approve to approve it ahead of time",
            gate::transition(stage, next.as_deref())
        ),
        Refusal::AlreadyPromoted {
            stage,
            next,
            persists: false,
        } => format!(
            "the current rollout of {name:?} has already passed stage {stage:?} ({}): there is \
             nothing left to approve there, and an approval given now would count as used at \
             once. The next rollout (a change of spec.profileSpec or of the stages) will need its \
             own approval of {stage:?}: give it once that rollout reaches the gate, or with \
             --pre-approve after the change is applied",
            gate::transition(stage, next.as_deref())
        ),
    }
}

/// What the stages that can be approved are, for refusals: "no manual trigger" only when no
/// stage has one; gates the current rollout already passed are named as such.
fn approvable_hint(approvable: &Approvable) -> String {
    match (approvable.open.as_slice(), approvable.passed.as_slice()) {
        ([], []) => {
            "this promotion has no stage with a manual trigger, so nothing can be approved".into()
        }
        ([], passed) => format!(
            "no manual gate is left to approve in the current rollout: it already passed {}; \
             the next rollout needs its own approval",
            passed.join(", ")
        ),
        (open, _) => format!("stages that can be approved: {}", open.join(", ")),
    }
}

/// What approving a stage's gate leads to, for refusals.
fn onward(next: Option<&str>) -> String {
    match next {
        Some(next) => format!("it promotes to {next:?}"),
        None => "it completes the pipeline".to_string(),
    }
}

/// What the pipeline is doing, for refusals.
fn doing(activity: &Activity) -> String {
    match activity {
        Activity::EmptyStatus(note) => format!("its status is empty ({note})"),
        Activity::AtStage {
            phase,
            stage,
            state,
        } => format!(
            "it is {} at stage {stage} ({})",
            phase.label(),
            state.label()
        ),
        Activity::Phase(phase) => format!("it is {}", phase.label()),
    }
}

/// Read the promotion and what its stage states need (as [`crate::fetch::state`] does), decoding
/// the object once: the typed model then serves the stage profiles to list, the pipeline, the
/// approval and the labels the webhook is looked up by.
async fn read(kube: &Kube, name: &str) -> Result<(Snapshot, ClusterPromotion)> {
    let object = kube.get_promotion(name).await?;
    let promotion = view::typed(&object)?;
    let stage_profiles = view::profile_names(&promotion);
    let (profiles, summaries) = tokio::join!(
        kube.list_promotion_profiles(),
        kube.list_summaries(&stage_profiles),
    );
    let owners =
        crate::cluster::fetch::owners(kube, &[&promotion], profiles.as_deref().unwrap_or_default())
            .await;
    let snap = Snapshot {
        object,
        profiles: profiles.map_err(|e| e.read_failure()),
        summaries: summaries.map_err(|e| e.read_failure()),
        events: Err(String::new()),
        owners,
    };
    Ok((snap, promotion))
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
    let (gate, before, stored, promotion) = loop {
        // Decoded once per attempt: the pipeline, the gate, the patch and the output all read
        // this one object.
        let (snap, promotion) = read(&kube, name).await?;
        let pipeline = view::pipeline_of(snap.borrow(), &promotion);
        let gate = match (args.revoke, args.stage.as_deref()) {
            (true, Some(stage)) => resolve_revoke(&pipeline, stage)?,
            _ => resolve(&pipeline, args.stage.as_deref(), args.pre_approve)?,
        };
        let object = snap.object;
        if gate.already_approved && !args.revoke {
            let transition = gate.transition();
            let state = match gate.approval {
                Approval::Consumed => format!(
                    "the approval was already used ({transition}; automaticReset: false keeps \
                     it for later rollouts)"
                ),
                _ => format!(
                    "{} acts on it on its next pass ({transition})",
                    pipeline.reconciler
                ),
            };
            if matches!(format, OutputFormat::Default | OutputFormat::Wide) {
                ctx.write_out(&format!(
                    "{} unchanged: stage {} is already approved; {state}\n",
                    output::resource_name(name),
                    gate.stage
                ))?;
            } else {
                // As `kubectl apply -o …` of an unchanged object: the object, as stored.
                print_result(ctx, name, &gate, &object, args, &format)?;
                note(
                    ctx,
                    &format!(
                        "unchanged: stage {} is already approved; {state}",
                        gate.stage
                    ),
                );
            }
            if reason.is_some() {
                note(ctx, "the reason was not recorded: nothing was changed");
            }
            if let Some(paused) = super::pause::approval_while_paused(name, &object) {
                note(ctx, &paused);
            }
            if !args.wait {
                return Ok(exit::OK);
            }
            return wait_after(ctx, &kube, name, &gate, args).await;
        }
        let annotations: Vec<(&str, &str)> = reason
            .map(|r| vec![(APPROVAL_REASON_ANNOTATION, r)])
            .unwrap_or_default();
        let built = patch::approve(&object, &gate, !args.revoke, &annotations)
            .map_err(|e| Error::Refused(format!("cannot approve stage {:?}: {e}", gate.stage)))?;
        if args.dry_run == DryRun::Client {
            let text = serde_json::to_string_pretty(&built.write.patch)
                .map_err(|e| Error::Io(e.to_string()))?;
            note(
                ctx,
                &format!(
                    "merge patch that would be sent (guarded by its resourceVersion):\n{text}"
                ),
            );
            let mut patched = object.clone();
            json_patch::merge(&mut patched, &built.write.patch);
            break (gate, object, patched, promotion);
        }
        match kube
            .write(name, &built.write, args.dry_run == DryRun::Server)
            .await
        {
            Ok(stored) => break (gate, object, stored, promotion),
            // The object changed between our read and the write: read again and decide again.
            Err(kube::Error::Api(s)) if classify(&s) == Failure::Conflict => {
                let doing = if args.revoke { "revoking" } else { "approving" };
                super::after_conflict(ctx, name, doing, &mut attempt, &what, &s).await?;
            }
            Err(e) => {
                let check = (args.dry_run == DryRun::None)
                    .then(|| kube_client::write_check(name, &built.write.shows));
                return Err(admission_webhooks::write_error(
                    &kube,
                    e,
                    &what,
                    &labels(&promotion),
                    check,
                )
                .await);
            }
        }
    };
    if args.dry_run == DryRun::None && !recorded(&before, &stored, &gate.stage) {
        let found = admission_webhooks::for_promotions(&kube, &labels(&promotion)).await;
        let what = if args.revoke {
            "revocation"
        } else {
            "approval"
        };
        warn(
            ctx,
            &format!(
                "the {what} of stage {:?} carries no record of who gave it: {}",
                gate.stage,
                admission_webhooks::unrecorded_because(&found)
            ),
        );
    }

    print_result(ctx, name, &gate, &stored, args, &format)?;
    // The approval is stored; a paused promotion uses it only once resumed.
    if !args.revoke {
        if let Some(paused) = super::pause::approval_while_paused(name, &stored) {
            note(ctx, &paused);
        }
    }
    if args.wait {
        return wait_after(ctx, &kube, name, &gate, args).await;
    }
    Ok(exit::OK)
}

/// The promotion's labels, which select the admission webhooks that apply to it.
pub fn labels(promotion: &ClusterPromotion) -> BTreeMap<String, String> {
    promotion.metadata.labels.clone().unwrap_or_default()
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
    kube: &Kube,
    name: &str,
    gate: &Gate,
    args: &ApproveArgs,
) -> Result<u8> {
    let (cond, what) = match &gate.next {
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
    ctx: &Ctx,
    name: &str,
    gate: &Gate,
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
        OutputFormat::Default | OutputFormat::Wide if args.revoke => {
            let mut line = format!(
                "{} approval of stage {} revoked ({} waits for a new approval)",
                output::resource_name(name),
                gate.stage,
                gate.transition()
            );
            line.push_str(args.dry_run.suffix());
            line + "\n"
        }
        OutputFormat::Default | OutputFormat::Wide => {
            let mut line = format!(
                "{} approved (stage {})",
                output::resource_name(name),
                gate.transition()
            );
            if gate.ahead_of_time {
                line.push_str(", pre-approved ahead of the pipeline");
            }
            line.push_str(args.dry_run.suffix());
            line + "\n"
        }
    };
    ctx.write_out(&text)
}

#[cfg(test)]
mod tests {
    //! The choice of the gate is `promotion_shared::gate`'s (tested there); these pin the
    //! wording of every refusal, byte for byte.
    use super::*;
    use promotion_shared::pipeline::Phase;
    use serde_json::json;

    const AWAITING: &str = "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)";

    fn pipeline(stages: Value, status: Value) -> Pipeline {
        let snap = Snapshot::offline(json!({
            "metadata": {"name": "p"},
            "spec": {"stages": stages},
            "status": status
        }));
        let promotion = view::typed(&snap.object).unwrap();
        view::pipeline_of(snap.borrow(), &promotion)
    }

    /// dev (auto) → staging (manual, awaiting approval) → qa (manual) → production (manual).
    fn gates() -> Pipeline {
        pipeline(
            json!([
                {"name": "dev", "trigger": {"auto": {"delay": "2m"}}},
                {"name": "staging", "trigger": {"manual": {"approved": false}}},
                {"name": "qa", "trigger": {"manual": {}}},
                {"name": "production", "trigger": {"manual": {}}}
            ]),
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t"},
                {"name": "staging", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": AWAITING}
            ]}),
        )
    }

    fn refused(r: Result<Gate>) -> String {
        match r {
            Err(Error::Refused(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn the_gate_awaiting_approval_is_approved() {
        let g = resolve(&gates(), None, false).unwrap();
        assert_eq!((g.index, g.transition()), (1, "staging → qa".to_string()));
    }

    #[test]
    fn stage_refusals_name_the_stages_and_what_can_be_approved() {
        let p = gates();
        assert_eq!(
            refused(resolve(&p, Some("uat"), false)),
            "\"p\" has no stage \"uat\" (stages: dev, staging, qa, production); stages that can \
             be approved: staging, qa, production"
        );
        assert_eq!(
            refused(resolve(&p, Some("dev"), false)),
            "stage \"dev\" has an auto trigger: it promotes to \"staging\" by itself (auto: delay \
             2m); stages that can be approved: staging, qa, production"
        );
        assert_eq!(
            refused(resolve(&p, Some("qa"), false)),
            "the pipeline has not reached stage \"qa\" yet (it is awaiting approval at stage \
             staging (awaiting approval)); pass --pre-approve to approve it ahead of time"
        );
    }

    #[test]
    fn trigger_refusals() {
        let p = pipeline(
            json!([
                {"name": "a"},
                {"name": "b", "trigger": {"auto": {}, "manual": {}}},
                {"name": "c"}
            ]),
            json!({"stages": [{"name": "a"}]}),
        );
        assert_eq!(
            refused(resolve(&p, Some("a"), false)),
            "stage \"a\" has no trigger: it promotes to \"b\" as soon as its clusters are \
             provisioned; this promotion has no stage with a manual trigger, so nothing can be \
             approved"
        );
        assert_eq!(
            refused(resolve(&p, Some("c"), false)),
            "stage \"c\" has no trigger: it completes the pipeline as soon as its clusters are \
             provisioned; this promotion has no stage with a manual trigger, so nothing can be \
             approved"
        );
        assert_eq!(
            refused(resolve(&p, Some("b"), false)),
            "stage \"b\" has both an auto and a manual trigger, which Sveltos rejects; fix the \
             manifest first (kubectl promotion lint -f FILE)"
        );
    }

    #[test]
    fn a_promoted_stage_is_refused_for_this_rollout() {
        let p = pipeline(
            json!([{"name": "dev", "trigger": {"manual": {}}}, {"name": "prod"}]),
            json!({"stages": [{"name": "dev"}, {"name": "prod"}]}),
        );
        let passed = "the current rollout of \"p\" has already passed stage \"dev\" (dev → prod): \
                      there is nothing left to approve there, and an approval given now would \
                      count as used at once. The next rollout (a change of spec.profileSpec or of \
                      the stages) will need its own approval of \"dev\": give it once that rollout \
                      reaches the gate, or with --pre-approve after the change is applied";
        assert_eq!(refused(resolve(&p, Some("dev"), false)), passed);
        assert_eq!(refused(resolve(&p, Some("dev"), true)), passed);
        let p = pipeline(
            json!([{"name": "dev", "trigger": {"manual": {"automaticReset": false}}}, {"name": "prod"}]),
            json!({"stages": [{"name": "dev"}, {"name": "prod"}]}),
        );
        assert_eq!(
            refused(resolve(&p, Some("dev"), false)),
            "stage \"dev\" was already promoted (dev → prod) in this rollout, so an approval now \
             only applies to a later rollout; pass --pre-approve to approve it ahead of time"
        );
    }

    #[test]
    fn nothing_awaiting_says_what_the_pipeline_does() {
        let p = pipeline(
            json!([{"name": "dev", "trigger": {"manual": {}}}, {"name": "prod"}]),
            json!({"stages": [{"name": "dev"}]}),
        );
        assert_eq!(
            refused(resolve(&p, None, false)),
            "no stage of \"p\" is awaiting approval: it is progressing at stage dev \
             (provisioning). Pass --stage to choose one (stages that can be approved: dev)"
        );
        let p = pipeline(
            json!([{"name": "dev", "trigger": {"manual": {}}}]),
            json!({}),
        );
        assert_eq!(
            refused(resolve(&p, None, false)),
            "no stage of \"p\" is awaiting approval: its status is empty (not reconciled yet: no \
             reconciler has taken this promotion on (on open-source Sveltos, is \
             promotion-controller installed and running? see docs/controller.md; with Sveltos \
             Enterprise, is the addon-controller running?)). Pass --stage to choose one (stages \
             that can be approved: dev)"
        );
        let no_stage_reached = Refusal::NothingAwaiting {
            activity: Activity::Phase(Phase::Progressing),
            approvable: Approvable::default(),
        };
        assert_eq!(
            refusal("p", &no_stage_reached),
            "no stage of \"p\" is awaiting approval: it is progressing. Pass --stage to choose \
             one (this promotion has no stage with a manual trigger, so nothing can be approved)"
        );
    }

    #[test]
    fn a_stale_status_is_never_approved_by_default() {
        let mut p = gates();
        p.stale = Some("spec.profileSpec changed".into());
        let stale =
            "the reconciler has not picked up the latest change to \"p\" yet (spec.profileSpec \
                     changed): the stage states are the previous rollout's, and approving now \
                     would approve the new rollout's gate ahead of time. Wait until the new \
                     rollout reaches the gate (kubectl promotion wait p --for=approval), or pass \
                     --stage";
        assert_eq!(
            refused(resolve(&p, None, false)),
            format!("{stale} S --pre-approve to approve it ahead of time on purpose")
        );
        assert_eq!(
            refused(resolve(&p, Some("qa"), false)),
            format!("{stale} qa --pre-approve to approve it ahead of time on purpose")
        );
        assert!(resolve(&p, Some("staging"), true).unwrap().ahead_of_time);
    }
}
