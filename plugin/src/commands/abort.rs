//! `abort NAME [--reason TEXT]`, `rollback NAME [--to-revision N] [--reason TEXT]` and `retry
//! NAME`: set or remove the annotation [`ABORT_ANNOTATION`] whose value, an [`AbortRequest`],
//! names the rollout it aborts (`promotion_shared::abort`).
//!
//! Each is one guarded merge patch of that annotation alone (re-read and decided again on a
//! conflict, as `pause` writes). `spec` is never written: a rollback sets the stages back to an
//! earlier revision through promotion-controller, without touching what a GitOps tool owns.
//! Which revision a rollback goes to, and every refusal of one, is
//! [`promotion_shared::history::rollback_target`]: the plugin refuses up front in its words, the
//! controller refuses what got past it in the same words.

use clap::Args;
use serde_json::{json, Value};

use promotion_shared::abort::{
    aborted, AbortRecord, AbortRequest, Aborted, ABORT_ANNOTATION, ABORT_RECORD_ANNOTATION,
};
use promotion_shared::history::{rollback_target, Revision, DEFAULT_NAMESPACE};
use promotion_shared::patch::{self};
use promotion_shared::rollout::{identity_of, RolloutId};
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

use super::pause::{foreign_reconciler, WriteFlags, FORMATS};
use super::{note, Ctx};
use crate::error::{exit, Error, Result};

use crate::render::printers::OutputFormat;

#[derive(Args, Debug)]
#[command(
    about = "Abort a promotion's current rollout: it stays where it is until retried",
    long_about = "\
Abort the current rollout of a ClusterPromotion: set the annotation
promotion-controller.kubectl-promotion.dev/abort to a request naming that rollout (the spec's
stagesHash and profileSpecHash) and --reason. While it names the current rollout,
promotion-controller starts no stage of it, passes no gate and uses no approval (phase aborted).
Unlike a pause it belongs to that rollout: a spec change starts the next rollout as usual.
`kubectl promotion retry` removes it, and the rollout resumes where it stopped;
`kubectl promotion rollback` also sets the stages back to an earlier revision.

The write is one JSON merge patch of that annotation alone, carrying the resourceVersion it was
computed from (on a conflict it reads the promotion again and retries, bounded). The spec is not
touched.

Refused: a promotion whose status lists no stage (no rollout started: `kubectl promotion pause`
holds it before it starts), one being deleted, one whose rollout is already aborted or rolled
back (the error says by whom; `kubectl promotion retry` resumes it), and one reconciled by
another reconciler than promotion-controller.",
    after_help = "\
Examples:
  kubectl promotion abort kyverno-rollout --reason \"INC-4711: kyverno denies pods in staging\"
  kubectl promotion abort kyverno-rollout --dry-run=server -o yaml

Exit status: 0 aborted; 1 refused or error."
)]
pub struct AbortArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Why: kept in the request, which the admission webhook records with your identity
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
#[command(
    about = "Abort a promotion's current rollout and set its stages back to a completed revision",
    long_about = "\
Abort the current rollout of a ClusterPromotion and roll its stages back to an earlier revision
of its history (`kubectl promotion history`): by default the newest revision that completed,
else --to-revision N. The annotation promotion-controller.kubectl-promotion.dev/abort is set to
a request naming the current rollout with rollbackTo: N. promotion-controller then applies
revision N's stage profiles at once to every stage whose profile differs (phase rolling back),
without walking the gates: revision N completed, so every stage ran it and passed its gate. Once
every stage runs it, deployed, the phase is rolled back.

The spec is left as it is: writing it back would restart the pipeline and fight a GitOps tool
that owns it. The promotion shows \"rolled back to N (spec still at M)\", M being the revision
of the spec's rollout. `kubectl promotion retry` removes the request and the spec's rollout
starts again from its first stage, through its gates; to stay on revision N, set the spec back
to it (`kubectl promotion history NAME --revision N -o yaml` prints it).

Refused up front, in the words promotion-controller would use: a revision that never completed,
one not in the history, one with other stages than the spec, the current rollout itself, and no
completed revision to go back to. Also refused: a promotion being deleted, one already rolled
back to that revision, one reconciled by another reconciler than promotion-controller. An
aborted rollout is rolled back by replacing its abort (same rollout; its reason is kept unless
--reason gives another).

The write is one JSON merge patch of that annotation alone, carrying the resourceVersion it was
computed from (on a conflict it reads the promotion and its history again and retries,
bounded).",
    after_help = "\
Examples:
  kubectl promotion rollback kyverno-rollout --reason \"INC-4711\"
  kubectl promotion rollback kyverno-rollout --to-revision 3
  kubectl promotion rollback kyverno-rollout --dry-run=client

Exit status: 0 rolled back; 1 refused or error."
)]
pub struct RollbackArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The revision to go back to (`kubectl promotion history`); default: the newest completed
    #[arg(long, value_name = "N")]
    pub to_revision: Option<i64>,
    /// Why: kept in the request, which the admission webhook records with your identity
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Where promotion-controller keeps the history
    #[arg(long, value_name = "NS", default_value = DEFAULT_NAMESPACE)]
    pub history_namespace: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
#[command(
    about = "Retry an aborted or rolled back rollout",
    long_about = "\
Retry the aborted or rolled back rollout of a ClusterPromotion: remove the annotation
promotion-controller.kubectl-promotion.dev/abort. An aborted rollout resumes where it stopped;
a rolled back one starts again from its first stage, through its gates (the stages it had
reached run the revision it was rolled back to now).

The write is one JSON merge patch removing that annotation, carrying the resourceVersion it was
computed from (on a conflict it reads the promotion again and retries, bounded).

Refused: a promotion without the annotation (nothing to retry), and one reconciled by another
reconciler than promotion-controller.",
    after_help = "\
Examples:
  kubectl promotion retry kyverno-rollout
  kubectl promotion retry kyverno-rollout --dry-run=server

Exit status: 0 retried; 1 refused or error."
)]
pub struct RetryArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

/// What is asked of the promotion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Abort {
        reason: Option<String>,
    },
    /// To revision `to`, or by default the newest completed one.
    Rollback {
        to: Option<i64>,
        reason: Option<String>,
    },
    Retry,
}

/// The patch to send, and what it does in words (for the confirmation and the note after it).
#[derive(Debug, PartialEq)]
pub struct Decision {
    /// The merge patch (guarded by the resourceVersion read).
    pub patch: Value,
    /// "aborted", "rolled back to revision 3", "retried".
    pub done: String,
    /// What promotion-controller does next, in words.
    pub next: String,
}

/// Decide for the promotion `object` as read, with its rollout history `revisions` (read for a
/// rollback only): refuse, or patch the annotation alone.
pub fn decide(object: &Value, action: &Action, revisions: &[Revision]) -> Result<Decision> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let refused = |why: String| Error::Refused(format!("{name:?}: {why}"));
    if let Some(manager) = foreign_reconciler(object) {
        return Err(refused(format!(
            "it is reconciled by another reconciler ({manager}), not {CONTROLLER_FIELD_MANAGER}: \
             only {CONTROLLER_FIELD_MANAGER} honours the annotation {ABORT_ANNOTATION}"
        )));
    }
    let now = aborted(object);
    let guarded = |value: Value| {
        patch::guarded(
            object,
            json!({"metadata": {"annotations": {ABORT_ANNOTATION: value}}}),
        )
        .map_err(|e| Error::Invalid(format!("cannot patch {name:?}: {e}")))
    };
    if action == &Action::Retry {
        let Some(a) = now else {
            let paused = promotion_shared::pause::paused(object)
                .map(|p| {
                    format!(
                        " (it is {}: `kubectl promotion resume {name}` resumes it)",
                        p.describe()
                    )
                })
                .unwrap_or_default();
            return Err(refused(format!(
                "there is nothing to retry: no rollout of it is aborted (it has no \
                 {ABORT_ANNOTATION} annotation){paused}"
            )));
        };
        let next = match (current_rollout(object), a.rollback_to()) {
            (Ok(id), _) if !a.applies_to(&id) => "the abort request named an earlier rollout \
                 and held nothing: the current rollout goes on as it was"
                .to_string(),
            (_, Some(n)) => format!(
                "promotion-controller starts the spec's rollout again from its first stage, \
                 through its gates (the stages it had reached run revision {n} until then)"
            ),
            (_, None) => "promotion-controller resumes the rollout where it stopped".to_string(),
        };
        return Ok(Decision {
            patch: guarded(Value::Null)?,
            done: "retried".to_string(),
            next,
        });
    }
    if let Some(since) = object
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
    {
        return Err(refused(format!(
            "it is being deleted (since {since}): no stage starts any more, so there is no \
             rollout to abort or roll back"
        )));
    }
    let current = current_rollout(object).map_err(refused)?;
    // The request of this rollout, if it has a readable one (an unreadable one is replaced).
    let holding = now
        .as_ref()
        .filter(|a| a.request.is_ok() && a.applies_to(&current));
    match action {
        Action::Abort { reason } => {
            let reached = object
                .pointer("/status/stages")
                .and_then(Value::as_array)
                .is_some_and(|s| !s.is_empty());
            if !reached {
                return Err(refused(format!(
                    "it has not started a rollout (its status lists no stage): there is nothing \
                     to abort (`kubectl promotion pause {name}` holds it before it starts)"
                )));
            }
            if let Some(a) = holding {
                return Err(refused(already(name, a)));
            }
            let request = AbortRequest {
                stages_hash: current.stages_hash,
                profile_spec_hash: current.profile_spec_hash,
                rollback_to: None,
                reason: reason.clone(),
            };
            Ok(Decision {
                patch: guarded(json!(request.to_annotation()))?,
                done: "aborted".to_string(),
                next: format!(
                    "promotion-controller starts no stage of this rollout, passes no gate and \
                     uses no approval until `kubectl promotion retry {name}`"
                ),
            })
        }
        Action::Rollback { to, reason } => {
            let target = rollback_target(revisions, &current, *to)
                .map_err(|why| refused(format!("cannot roll back: {why}")))?;
            let n = target.number;
            if let Some(a) = holding.filter(|a| a.rollback_to() == Some(n)) {
                return Err(refused(already(name, a)));
            }
            let request = AbortRequest {
                stages_hash: current.stages_hash.clone(),
                profile_spec_hash: current.profile_spec_hash.clone(),
                rollback_to: Some(n),
                // Replacing this rollout's abort keeps its reason unless another is given.
                reason: reason
                    .clone()
                    .or_else(|| holding.and_then(|a| a.reason().map(String::from))),
            };
            let spec_at = crate::view::abort::spec_revision(revisions, &current)
                .map(|m| format!(" (revision {m})"))
                .unwrap_or_default();
            Ok(Decision {
                patch: guarded(json!(request.to_annotation()))?,
                done: format!("rolled back to revision {n}"),
                next: format!(
                    "promotion-controller applies revision {n}'s stage profiles to every stage \
                     not running it; the spec is left as it is{spec_at}, and `kubectl promotion \
                     retry {name}` starts it again from its first stage"
                ),
            })
        }
        Action::Retry => unreachable!("decided above"),
    }
}

/// "its rollout is already aborted by … : `kubectl promotion retry NAME` resumes it …".
fn already(name: &str, a: &Aborted) -> String {
    let resumes = match a.rollback_to() {
        Some(_) => "starts it again from its first stage",
        None => "resumes it where it stopped",
    };
    format!(
        "its rollout is already {}; `kubectl promotion retry {name}` {resumes}",
        a.describe()
    )
}

/// The rollout the promotion's spec describes, or why it cannot be named.
fn current_rollout(object: &Value) -> std::result::Result<RolloutId, String> {
    identity_of(object).map(|i| i.id).map_err(|e| {
        format!(
            "its spec cannot be decoded as Sveltos decodes it ({} is not {}), so its rollout \
             cannot be named",
            e.path, e.expected
        )
    })
}

pub async fn run_abort(ctx: &Ctx, args: &AbortArgs) -> Result<u8> {
    let reason = reason(args.reason.as_deref())?;
    run(
        ctx,
        &args.name,
        &args.write,
        &Action::Abort { reason },
        None,
    )
    .await
}

pub async fn run_rollback(ctx: &Ctx, args: &RollbackArgs) -> Result<u8> {
    let reason = reason(args.reason.as_deref())?;
    if let Some(n) = args.to_revision.filter(|n| *n < 1) {
        return Err(Error::Usage(format!(
            "--to-revision {n}: revisions count from 1"
        )));
    }
    let action = Action::Rollback {
        to: args.to_revision,
        reason,
    };
    run(
        ctx,
        &args.name,
        &args.write,
        &action,
        Some(&args.history_namespace),
    )
    .await
}

pub async fn run_retry(ctx: &Ctx, args: &RetryArgs) -> Result<u8> {
    run(ctx, &args.name, &args.write, &Action::Retry, None).await
}

fn reason(given: Option<&str>) -> Result<Option<String>> {
    match given.map(str::trim) {
        Some("") => Err(Error::Usage("--reason is empty".into())),
        reason => Ok(reason.map(str::to_string)),
    }
}

/// Decide and write, re-reading the promotion (and, for a rollback, its history in
/// `history_namespace`) after a conflict; print what was done.
async fn run(
    ctx: &Ctx,
    name: &str,
    flags: &WriteFlags,
    action: &Action,
    history_namespace: Option<&str>,
) -> Result<u8> {
    let format = OutputFormat::of_flag(flags.output.as_deref(), FORMATS)?;
    let kube = ctx.kube().await?;
    let doing = match action {
        Action::Abort { .. } => "aborting",
        Action::Rollback { .. } => "rolling back",
        Action::Retry => "retrying",
    };
    let mut attempt = 1;
    let (stored, decision) = loop {
        let object = kube.get_promotion(name).await?;
        let revisions = match history_namespace {
            Some(ns) => super::history::revisions_of(&kube, ns, &object).await?,
            None => Vec::new(),
        };
        let decision = decide(&object, action, &revisions)?;
        let says = super::Guarded {
            doing,
            unrecorded: match action {
                Action::Abort { .. } => "the abort carries no record of who made it",
                Action::Rollback { .. } => "the rollback carries no record of who made it",
                Action::Retry => "the retry carries no record of who made it",
            },
            check: &format!("kubectl promotion describe {name}"),
        };
        let recorded = |stored: &Value| recorded(&object, stored, action);
        let sent = super::send_guarded(
            ctx,
            &kube,
            name,
            &object,
            decision.patch.clone(),
            flags.dry_run,
            &mut attempt,
            recorded,
            &says,
        )
        .await?;
        if let Some(stored) = sent {
            break (stored, decision);
        }
    };
    let text = super::written(format, name, &stored, &decision.done, flags.dry_run)?;
    ctx.write_out(&text)?;
    note(ctx, &format!("{name}: {}", decision.next));
    Ok(match action {
        Action::Abort { .. } => exit::abort::OK,
        Action::Rollback { .. } => exit::rollback::OK,
        Action::Retry => exit::retry::OK,
    })
}

/// Whether promotion-webhook recorded this write: an abort record of its kind that the object
/// read did not carry.
fn recorded(before: &Value, stored: &Value, action: &Action) -> bool {
    let record = |o: &Value| {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(ABORT_RECORD_ANNOTATION))
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<AbortRecord>(t).ok())
    };
    let after = record(stored);
    after
        .as_ref()
        .is_some_and(|r| r.aborted == (action != &Action::Retry))
        && after != record(before)
}

#[cfg(test)]
mod tests;
