//! `pause NAME... [-l SELECTOR | --all] [--reason TEXT]` and `resume NAME... [-l SELECTOR |
//! --all]`: set or remove the annotation [`PAUSED_ANNOTATION`] that holds a promotion where it is
//! (`promotion_shared::pause`).
//!
//! Each promotion is one guarded merge patch of that annotation alone (`promotion_shared::patch`,
//! re-read and decided again on a conflict, as `approve` writes): a request that changes nothing
//! else is what the webhook configurations let through with `failurePolicy: Ignore`, so a pause
//! never waits for the webhook, while a resume goes through it. Several promotions are handled
//! one after the other, each with its own line or error, as `kubectl annotate` does; the exit
//! status says whether any failed.

use std::collections::BTreeMap;

use clap::Args;
use serde_json::{json, Value};

use promotion_shared::patch::{self};
use promotion_shared::pause::{pause_record, paused, Paused, PAUSED_ANNOTATION};
use promotion_shared::status_writer::{
    reconciler_name, status_writer, take_over_requested, StatusWriter, CONTROLLER_FIELD_MANAGER,
};

use super::DryRun;
use super::{note, Ctx};
use crate::cluster::kube_client::Kube;
use crate::error::{self, Error, Result};
use crate::render::output;
use crate::render::printers::{FormatArg, FormatName, OutputFormat};

/// `-o` of pause and resume: the object as stored, or its name, as `kubectl annotate -o` prints.
pub(super) const FORMATS: &[FormatName] = &[FormatName::Json, FormatName::Yaml, FormatName::Name];

/// Which promotions: the names given, or those a selector (or `--all`) lists.
#[derive(Args, Debug)]
pub struct Targets {
    /// ClusterPromotion names
    #[arg(value_name = "NAME", required_unless_present_any = ["selector", "all"],
          conflicts_with_all = ["selector", "all"])]
    pub names: Vec<String>,
    /// Every ClusterPromotion matching this label selector (e.g. team=platform)
    #[arg(
        short = 'l',
        long = "selector",
        value_name = "SELECTOR",
        conflicts_with = "all"
    )]
    pub selector: Option<String>,
    /// Every ClusterPromotion
    #[arg(long)]
    pub all: bool,
}

/// How the write is made and shown.
#[derive(Args, Debug)]
pub struct WriteFlags {
    /// none: write; client: show the patch without sending it; server: let the server (and its
    /// admission webhooks) check it and show the result without storing it
    #[arg(long, value_enum, value_name = "MODE", default_value_t = DryRun::None,
          num_args = 0..=1, require_equals = true, default_missing_value = "client")]
    pub dry_run: DryRun,
    /// Print the object as stored by the server instead of the confirmation: json, yaml or name
    #[arg(short = 'o', long = "output", value_name = "FORMAT", value_parser = FormatArg(FORMATS))]
    pub output: Option<String>,
}

#[derive(Args, Debug)]
#[command(
    about = "Pause promotions: no stage starts and no approval is used until they are resumed",
    long_about = "\
Pause ClusterPromotions: set the annotation promotion-controller.kubectl-promotion.dev/paused
(its value is --reason, or empty). While it is there promotion-controller starts no stage, passes
no gate and uses no approval: a stage whose soak ends or whose approval arrives stays where it is,
and a spec change starts nothing. What Sveltos is deploying continues, and deployment and soak keep
being recorded. `kubectl promotion resume` removes the annotation.

The write is one JSON merge patch of that annotation alone, carrying the resourceVersion it was
computed from (on a conflict it reads the promotion again and retries, bounded). A request that
changes nothing but this annotation passes the admission webhooks with failurePolicy Ignore, so a
pause goes through while promotion-webhook is down, without the record of who paused; the
webhook records who paused, when and why when it answers, and describe shows it.

A promotion already paused is left as it is (a different --reason replaces the reason). A
promotion reconciled by another reconciler than promotion-controller (Sveltos Enterprise's
addon-controller) is refused: only promotion-controller honours the annotation.
Several promotions are paused one after the other, each with its own line or error.",
    after_help = "\
Examples:
  kubectl promotion pause kyverno-rollout --reason \"INC-4711: kyverno denies pods in staging\"
  kubectl promotion pause -l team=platform --reason \"change freeze\"
  kubectl promotion pause --all --dry-run=server -o name

Exit status: 0 every promotion was paused (or already was); 1 if one was refused or failed (the
others are still paused)."
)]
pub struct PauseArgs {
    #[command(flatten)]
    pub targets: Targets,
    /// Why: the annotation's value, which the admission webhook records with your identity
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
#[command(
    about = "Resume paused promotions",
    long_about = "\
Resume paused ClusterPromotions: remove the annotation promotion-controller.kubectl-promotion.dev/paused.
promotion-controller then carries on where each one stands: it starts the stage whose gate
passed, uses an approval given meanwhile, and picks up a spec change.

The write is one JSON merge patch removing that annotation, carrying the resourceVersion it was
computed from (on a conflict it reads the promotion again and retries, bounded). Unlike a pause, a
resume goes through the admission webhooks with their usual failurePolicy: while promotion-webhook
does not answer the API server refuses it, and the error names the webhook.

A promotion that is not paused is left as it is. A promotion reconciled by another reconciler
than promotion-controller is refused: only promotion-controller honours the annotation.
Several promotions are resumed one after the other, each with its own line or error.",
    after_help = "\
Examples:
  kubectl promotion resume kyverno-rollout
  kubectl promotion resume -l team=platform
  kubectl promotion resume --all --dry-run=client

Exit status: 0 every promotion was resumed (or was not paused); 1 if one was refused or failed
(the others are still resumed)."
)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub targets: Targets,
    #[command(flatten)]
    pub write: WriteFlags,
}

/// What is asked of each promotion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Pause; with `Some` reason, also replace another reason of a promotion already paused.
    Pause(Option<String>),
    Resume,
}

/// What a promotion's annotation is to become, or why nothing is written.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// The merge patch to send (guarded by the resourceVersion read).
    Write(Value),
    /// Nothing to write: why, in words ("already paused by …", "not paused").
    Unchanged(String),
}

/// Decide for the promotion `object` as read: refuse one another reconciler runs, leave one
/// already so, or patch the annotation alone.
pub fn decide(object: &Value, action: &Action) -> Result<Decision> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(manager) = foreign_reconciler(object) {
        let consequence = match action {
            Action::Pause(_) => "pausing it would hold nothing".to_string(),
            Action::Resume => format!(
                "removing it changes nothing for {manager} (kubectl annotate clusterpromotion \
                 {name} {PAUSED_ANNOTATION}- removes it all the same)"
            ),
        };
        return Err(Error::Refused(format!(
            "{name:?} is reconciled by another reconciler ({manager}), not \
             {CONTROLLER_FIELD_MANAGER}: only {CONTROLLER_FIELD_MANAGER} honours the annotation \
             {PAUSED_ANNOTATION}, so {consequence}"
        )));
    }
    let now = paused(object);
    let guarded = |value: Value| {
        patch::guarded(
            object,
            json!({"metadata": {"annotations": {PAUSED_ANNOTATION: value}}}),
        )
        .map_err(|e| Error::Invalid(format!("cannot patch {name:?}: {e}")))
    };
    Ok(match (action, now) {
        (Action::Pause(reason), Some(p)) if reason.is_none() || *reason == p.reason => {
            Decision::Unchanged(format!("already {}", p.describe()))
        }
        (Action::Pause(reason), _) => {
            Decision::Write(guarded(json!(reason.as_deref().unwrap_or_default()))?)
        }
        (Action::Resume, None) => Decision::Unchanged("not paused".to_string()),
        // `null` in a merge patch removes the annotation.
        (Action::Resume, Some(_)) => Decision::Write(guarded(Value::Null)?),
    })
}

/// The field manager of another reconciler that writes the promotion's status, unless the
/// promotion asks promotion-controller to take it over: the one `describe` names under
/// "Reconciled by" (a person's edit of the status is not a reconciler).
pub(super) fn foreign_reconciler(object: &Value) -> Option<String> {
    match status_writer(object) {
        StatusWriter::Other { manager, .. }
            if reconciler_name(object) == manager && !take_over_requested(object) =>
        {
            Some(manager)
        }
        _ => None,
    }
}

pub async fn run_pause(ctx: &Ctx, args: &PauseArgs) -> Result<u8> {
    let reason = match args.reason.as_deref().map(str::trim) {
        Some("") => return Err(Error::Usage("--reason is empty".into())),
        reason => reason.map(str::to_string),
    };
    run(ctx, &args.targets, &args.write, &Action::Pause(reason)).await
}

pub async fn run_resume(ctx: &Ctx, args: &ResumeArgs) -> Result<u8> {
    run(ctx, &args.targets, &args.write, &Action::Resume).await
}

async fn run(ctx: &Ctx, targets: &Targets, flags: &WriteFlags, action: &Action) -> Result<u8> {
    let format = OutputFormat::of_flag(flags.output.as_deref(), FORMATS)?;
    let kube = ctx.kube().await?;
    // Named promotions are read one by one (a missing one is its own error); selected ones come
    // from one list, each read again only after a conflict.
    let todo: Vec<(String, Option<Value>)> = if targets.names.is_empty() {
        let listed = kube.list_promotions(targets.selector.as_deref()).await?;
        if listed.is_empty() {
            return Err(Error::Refused(match &targets.selector {
                Some(s) => format!("no ClusterPromotion matches the selector {s:?}"),
                None => "there is no ClusterPromotion".to_string(),
            }));
        }
        listed.into_iter().map(|o| (name_of(&o), Some(o))).collect()
    } else {
        targets.names.iter().map(|n| (n.clone(), None)).collect()
    };
    let mut failed = false;
    let mut printed = 0;
    for (name, listed) in todo {
        match one(ctx, &kube, &name, listed, action, flags).await {
            Ok(done) => {
                let text = shown(&name, &done, action, flags.dry_run, &format, printed)?;
                ctx.write_out(&text)?;
                printed += 1;
                if !matches!(format, OutputFormat::Default) {
                    if let Done::Unchanged { why, .. } = &done {
                        note(ctx, &format!("{name} unchanged: {why}"));
                    }
                }
            }
            Err(e) => {
                error::report(&e, ctx.err.color);
                failed = true;
            }
        }
    }
    Ok(match (action, failed) {
        (Action::Pause(_), false) => error::exit::pause::OK,
        (Action::Pause(_), true) => error::exit::pause::FAILURE,
        (Action::Resume, false) => error::exit::resume::OK,
        (Action::Resume, true) => error::exit::resume::FAILURE,
    })
}

fn name_of(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// What was done to one promotion.
enum Done {
    /// Written (or, in a dry run, what would be): the object as stored.
    Written {
        stored: Value,
    },
    Unchanged {
        object: Value,
        why: String,
    },
}

/// Pause or resume the promotion `name` (`listed`: as a list returned it), re-reading it after
/// a conflict.
async fn one(
    ctx: &Ctx,
    kube: &Kube,
    name: &str,
    mut listed: Option<Value>,
    action: &Action,
    flags: &WriteFlags,
) -> Result<Done> {
    let mut attempt = 1;
    loop {
        let object = match listed.take() {
            Some(object) => object,
            None => kube.get_promotion(name).await?,
        };
        let patch = match decide(&object, action)? {
            Decision::Unchanged(why) => return Ok(Done::Unchanged { object, why }),
            Decision::Write(patch) => patch,
        };
        // A read shows the annotation, which a jsonpath of `.spec` cannot: `describe` is the
        // check of a write whose answer never came.
        let says = super::Guarded {
            doing: match action {
                Action::Pause(_) => "pausing",
                Action::Resume => "resuming",
            },
            unrecorded: match action {
                Action::Pause(_) => "the pause carries no record of who made it",
                Action::Resume => "the resume carries no record of who made it",
            },
            check: &format!("kubectl promotion describe {name}"),
        };
        let recorded = |stored: &Value| recorded(&object, stored, action);
        let sent = super::send_guarded(
            ctx,
            kube,
            name,
            &object,
            patch,
            flags.dry_run,
            &mut attempt,
            recorded,
            &says,
        )
        .await?;
        if let Some(stored) = sent {
            return Ok(Done::Written { stored });
        }
    }
}

/// The promotion's labels, which select the admission webhooks that apply to it.
pub(super) fn labels(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|l| {
            l.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether promotion-webhook recorded this write: a pause record of its kind that the object
/// read did not carry.
fn recorded(before: &Value, stored: &Value, action: &Action) -> bool {
    let after = pause_record(stored).ok().flatten();
    after
        .as_ref()
        .is_some_and(|r| r.paused == matches!(action, Action::Pause(_)))
        && after != pause_record(before).ok().flatten()
}

/// The output for one promotion: the confirmation (kubectl's `<resource>/<name> <verb>`), or the
/// object as `-o` asks (YAML documents separated as kubectl separates them).
fn shown(
    name: &str,
    done: &Done,
    action: &Action,
    dry_run: DryRun,
    format: &OutputFormat,
    printed: usize,
) -> Result<String> {
    let object = match done {
        Done::Written { stored } => stored,
        Done::Unchanged { object, .. } => object,
    };
    Ok(match format {
        OutputFormat::Json => output::to_json(&output::without_managed_fields(object))?,
        OutputFormat::Yaml => {
            let separator = if printed > 0 { "---\n" } else { "" };
            separator.to_string() + &output::to_yaml(&output::without_managed_fields(object))?
        }
        OutputFormat::Name => format!("{}\n", output::resource_name(name)),
        _ => confirmation(name, done, action, dry_run),
    })
}

/// `clusterpromotion.config.projectsveltos.io/NAME paused`, `… resumed`, `… unchanged: why`.
fn confirmation(name: &str, done: &Done, action: &Action, dry_run: DryRun) -> String {
    let resource = output::resource_name(name);
    match done {
        Done::Unchanged { why, .. } => format!("{resource} unchanged: {why}\n"),
        Done::Written { .. } => {
            let verb = match action {
                Action::Pause(_) => "paused",
                Action::Resume => "resumed",
            };
            format!("{resource} {verb}{}\n", dry_run.suffix())
        }
    }
}

/// For `approve` of a paused promotion: that the approval waits for the resume, or `None` when
/// the promotion is not paused.
pub fn approval_while_paused(name: &str, object: &Value) -> Option<String> {
    let p: Paused = paused(object)?;
    Some(format!(
        "{name} is {}: the approval is used once it is resumed (kubectl promotion resume {name})",
        p.describe()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use promotion_shared::pause::{PauseRecord, PAUSE_RECORD_ANNOTATION};

    fn promotion(annotations: Value, managed: Value) -> Value {
        json!({"metadata": {"name": "p", "resourceVersion": "7", "annotations": annotations,
                            "managedFields": managed}})
    }

    fn status_entry(manager: &str) -> Value {
        json!({"manager": manager, "operation": "Update", "subresource": "status",
               "time": "2026-02-16T07:00:00Z", "fieldsV1": {"f:status": {"f:stages": {}}}})
    }

    fn record(reason: Option<&str>) -> String {
        serde_json::to_string(&PauseRecord {
            paused: true,
            user: "alice".into(),
            time: "2026-02-16T07:40:00Z".into(),
            reason: reason.map(String::from),
        })
        .unwrap()
    }

    #[test]
    fn a_pause_is_one_guarded_patch_of_the_annotation_alone() {
        let p = promotion(json!({"other": "x"}), json!([]));
        assert_eq!(
            decide(&p, &Action::Pause(Some("bad chart".into()))).unwrap(),
            Decision::Write(json!({"metadata": {"resourceVersion": "7",
                "annotations": {PAUSED_ANNOTATION: "bad chart"}}}))
        );
        assert_eq!(
            decide(&p, &Action::Pause(None)).unwrap(),
            Decision::Write(json!({"metadata": {"resourceVersion": "7",
                "annotations": {PAUSED_ANNOTATION: ""}}}))
        );
        assert_eq!(
            decide(&p, &Action::Resume).unwrap(),
            Decision::Unchanged("not paused".into())
        );
    }

    #[test]
    fn a_paused_promotion_keeps_its_pause_unless_the_reason_changes() {
        let p = promotion(
            json!({PAUSED_ANNOTATION: "bad chart", PAUSE_RECORD_ANNOTATION: record(Some("bad chart"))}),
            json!([status_entry("promotion-controller")]),
        );
        let same = Decision::Unchanged(
            "already paused by alice at 2026-02-16T07:40:00Z: \"bad chart\"".into(),
        );
        assert_eq!(decide(&p, &Action::Pause(None)).unwrap(), same);
        assert_eq!(
            decide(&p, &Action::Pause(Some("bad chart".into()))).unwrap(),
            same
        );
        assert_eq!(
            decide(&p, &Action::Pause(Some("worse".into()))).unwrap(),
            Decision::Write(json!({"metadata": {"resourceVersion": "7",
                "annotations": {PAUSED_ANNOTATION: "worse"}}}))
        );
        // Resuming sets it to null: a merge patch removes it.
        assert_eq!(
            decide(&p, &Action::Resume).unwrap(),
            Decision::Write(json!({"metadata": {"resourceVersion": "7",
                "annotations": {PAUSED_ANNOTATION: null}}}))
        );
    }

    #[test]
    fn another_reconciler_is_refused_unless_taken_over() {
        let enterprise = json!([status_entry("addon-controller")]);
        let p = promotion(json!({PAUSED_ANNOTATION: ""}), enterprise.clone());
        let refused = |action: &Action| match decide(&p, action) {
            Err(Error::Refused(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(
            refused(&Action::Pause(None)),
            "\"p\" is reconciled by another reconciler (addon-controller), not \
             promotion-controller: only promotion-controller honours the annotation \
             promotion-controller.kubectl-promotion.dev/paused, so pausing it would hold nothing"
        );
        assert!(
            refused(&Action::Resume).ends_with(
                "so removing it changes nothing for addon-controller (kubectl annotate \
                 clusterpromotion p promotion-controller.kubectl-promotion.dev/paused- removes \
                 it all the same)"
            ),
            "{}",
            refused(&Action::Resume)
        );
        // A person's edit of the status, or a promotion taken over, is promotion-controller's.
        let person = promotion(json!({}), json!([status_entry("kubectl-edit")]));
        assert!(decide(&person, &Action::Pause(None)).is_ok());
        let taken_over = promotion(
            json!({promotion_shared::status_writer::TAKE_OVER_ANNOTATION: "true"}),
            enterprise,
        );
        assert!(decide(&taken_over, &Action::Pause(None)).is_ok());
    }

    #[test]
    fn a_write_is_recorded_only_by_a_new_record_of_its_kind() {
        let before = promotion(json!({}), json!([]));
        let with = |r: String| promotion(json!({PAUSE_RECORD_ANNOTATION: r}), json!([]));
        let pause = Action::Pause(None);
        assert!(recorded(&before, &with(record(None)), &pause));
        assert!(!recorded(&before, &before, &pause));
        assert!(!recorded(&with(record(None)), &with(record(None)), &pause));
        assert!(!recorded(&before, &with(record(None)), &Action::Resume));
    }
}
