//! `undo NAME [--to-revision N]`: set the promotion's spec back to an earlier revision of its
//! rollout history (`promotion_shared::history`), as `kubectl rollout undo` sets a Deployment's
//! template back. It is a spec change like any other: promotion-controller starts a new rollout
//! of that configuration from the first stage, through every gate (unlike `rollback`, which
//! applies a completed revision to the stages at once and leaves the spec alone).
//!
//! What is written, in one guarded merge patch:
//! - `spec.profileSpec`: revision N's, exactly (the members it lacks removed);
//! - `spec.stages`: only when revision N has other stages (names, order or cluster selectors:
//!   its `stagesHash` differs). Then the list is revision N's, except `approved`: each stage
//!   keeps the flag it has now (a stage the spec does not have gets none), so an undo never
//!   gives an approval; the webhook resets approvals as for any new rollout. Otherwise the
//!   stages are left as they are (triggers, soak times and approvals included);
//! - the request annotation [`UNDO_ANNOTATION`] = N, which the webhook moves into its record of
//!   the spec change (`history` shows "undo of N");
//! - the abort annotation removed, when there is one: it names the rollout the undo replaces,
//!   which promotion-controller would ignore from then on anyway.
//!
//! A promotion a GitOps tool manages ([`promotion_shared::gitops`]) is not written without
//! `--force`: the tool would set the spec back to git on its next sync. With `-o yaml|json` the
//! manifest to commit is printed instead.

use clap::Args;
use serde_json::{json, Map, Value};

use promotion_shared::abort::{aborted, ABORT_ANNOTATION};
use promotion_shared::admission::{spec_change_record, AUDIT_PREFIX, UNDO_ANNOTATION};
use promotion_shared::gitops::{managed_by, Managed, ARGO_TRACKING_ANNOTATION};
use promotion_shared::history::{Revision, DEFAULT_NAMESPACE};
use promotion_shared::patch::{self, merge_diff};
use promotion_shared::rollout::{identity_of, RolloutId};
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

use super::history::revisions_of;
use super::pause::{foreign_reconciler, WriteFlags, FORMATS};
use super::{note, warn, Ctx};
use crate::error::{exit::undo as exit, report, Error, Result};
use crate::render::output;
use crate::render::printers::OutputFormat;

#[derive(Args, Debug)]
#[command(
    about = "Set a promotion's spec back to an earlier revision: a new rollout through the gates",
    long_about = "\
Set the spec of a ClusterPromotion back to an earlier revision of its rollout history
(`kubectl promotion history`), as `kubectl rollout undo` does for a Deployment: by default the
revision before the spec's current one, else --to-revision N. It is a spec change like any other:
promotion-controller starts a new rollout of that configuration from the first stage, through
every gate and approval. (`kubectl promotion rollback` instead applies a completed revision to
the stages at once and leaves the spec alone.)

What is written: spec.profileSpec becomes revision N's. spec.stages is written only when
revision N has other stages (names, order or cluster selectors); then it is revision N's list,
but every stage keeps the approved flag it has now (an undo never gives an approval). Otherwise
the stages, their triggers and approvals are left as they are. The request annotation
kubectl-promotion.dev/undo-to: N goes with it; promotion-webhook records the spec change with
restoredRevision N and removes the annotation, and `history` shows the new rollout as an undo of
N. An abort or rollback of the rollout being replaced is removed in the same write: the request
named that rollout, and promotion-controller ignores it once the spec moves on.

The write is one JSON merge patch carrying the resourceVersion it was computed from (on a
conflict it reads the promotion and its history again and decides again, bounded).

Refused: a revision not in the history (the error lists those kept), the spec's current revision
itself, no previous revision, a promotion being deleted, one reconciled by another reconciler
than promotion-controller.

GitOps: a promotion managed by Argo CD or Flux (their field managers argocd-controller,
argocd-application-controller, kustomize-controller or helm-controller owning spec fields, the
annotation argocd.argoproj.io/tracking-id, the label app.kubernetes.io/instance, or the labels
kustomize.toolkit.fluxcd.io/name|namespace and helm.toolkit.fluxcd.io/name|namespace) is not
written: the tool would set the spec back to what git holds on its next sync (self-heal), and
start yet another rollout. Commit the change to git instead: with -o yaml (or json) undo prints
the promotion as it would be after the undo, without status and server fields, for that.
`kubectl promotion rollback` sets the stages back now without touching the spec. --force
writes it all the same.",
    after_help = "\
Examples:
  kubectl promotion undo kyverno-rollout
  kubectl promotion undo kyverno-rollout --to-revision 3 --dry-run=server
  # Managed by Argo CD or Flux: the manifest to commit to git
  kubectl promotion undo kyverno-rollout -o yaml > promotions/kyverno-rollout.yaml

Exit status: 0 undone; 1 refused or error; 2 a GitOps tool manages the promotion and nothing was
written (with -o yaml or json the manifest to commit is printed)."
)]
pub struct UndoArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The revision to set the spec back to (`kubectl promotion history`); default: the one
    /// before the spec's current revision
    #[arg(long, value_name = "N")]
    pub to_revision: Option<i64>,
    /// Where promotion-controller keeps the history
    #[arg(long, value_name = "NS", default_value = DEFAULT_NAMESPACE)]
    pub history_namespace: String,
    /// Write even though a GitOps tool manages the promotion (it will set the spec back to git
    /// on its next sync)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

/// What an undo writes, and what it does in words.
#[derive(Debug, PartialEq)]
pub struct Decision {
    /// The revision restored.
    pub to: i64,
    /// The merge patch (guarded by the resourceVersion read).
    pub patch: Value,
    /// The promotion as the undo leaves it (before the webhook's mutation).
    pub after: Value,
    /// Whether `spec.stages` is written too.
    pub stages: bool,
    /// What follows, in words, one note each.
    pub next: Vec<String>,
}

/// Decide for the promotion `object` as read, with its rollout history `revisions`: refuse, or
/// write revision `to` (default: the one before the spec's) back into the spec.
pub fn decide(object: &Value, revisions: &[Revision], to: Option<i64>) -> Result<Decision> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let refused = |why: String| Error::Refused(format!("{name:?}: cannot undo: {why}"));
    if let Some(manager) = foreign_reconciler(object) {
        return Err(refused(format!(
            "it is reconciled by another reconciler ({manager}), not {CONTROLLER_FIELD_MANAGER}: \
             the rollout history is {CONTROLLER_FIELD_MANAGER}'s, and {manager} does not keep it"
        )));
    }
    if let Some(since) = object
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
    {
        return Err(refused(format!(
            "it is being deleted (since {since}): no rollout starts any more"
        )));
    }
    let current = identity_of(object).map(|i| i.id).map_err(|e| {
        refused(format!(
            "its spec cannot be decoded as Sveltos decodes it ({} is not {}), so its rollout \
             cannot be named",
            e.path, e.expected
        ))
    })?;
    let kept = kept(revisions);
    // The spec's own revision (absent until promotion-controller records it).
    let spec_at = revisions
        .iter()
        .filter(|r| rollout_of(r).as_ref() == Some(&current))
        .map(|r| r.number)
        .max();
    let target = match to {
        Some(n) => revisions.iter().find(|r| r.number == n).ok_or_else(|| {
            refused(format!(
                "revision {n} is not in its history (kept: {kept}; `kubectl promotion \
                     history {name}` lists them)"
            ))
        })?,
        None => revisions
            .iter()
            .filter(|r| spec_at.is_none_or(|at| r.number < at))
            .filter(|r| rollout_of(r).as_ref() != Some(&current))
            .max_by_key(|r| r.number)
            .ok_or_else(|| {
                refused(format!(
                    "there is no previous revision to go back to (kept: {kept}{})",
                    spec_at
                        .map(|at| format!("; the spec is revision {at}"))
                        .unwrap_or_default()
                ))
            })?,
    };
    let n = target.number;
    let Some(profile_spec) = target.profile_spec().filter(|p| p.is_object()) else {
        return Err(refused(format!(
            "revision {n} ({}) holds no profileSpec in its data",
            target.name
        )));
    };
    let Some(rollout) = rollout_of(target) else {
        return Err(refused(format!(
            "revision {n}'s data cannot be decoded as Sveltos decodes a spec"
        )));
    };
    if rollout == current {
        return Err(refused(format!(
            "revision {n} is the spec's current configuration already: there is nothing to undo \
             (kept: {kept})"
        )));
    }
    let stages_change = rollout.stages_hash != current.stages_hash;
    let mut spec = Map::new();
    let now_profile = object
        .pointer("/spec/profileSpec")
        .cloned()
        .unwrap_or(json!({}));
    let profile_patch = merge_diff(&now_profile, profile_spec);
    if profile_patch.as_object().is_some_and(|m| !m.is_empty()) {
        spec.insert("profileSpec".into(), profile_patch);
    }
    if stages_change {
        spec.insert(
            "stages".into(),
            restored_stages(
                target.data.get("stages").unwrap_or(&Value::Null),
                object.pointer("/spec/stages").unwrap_or(&Value::Null),
            ),
        );
    }
    let holding = aborted(object);
    let mut annotations = Map::new();
    annotations.insert(UNDO_ANNOTATION.into(), json!(n.to_string()));
    if holding.is_some() {
        annotations.insert(ABORT_ANNOTATION.into(), Value::Null);
    }
    let changes = json!({"metadata": {"annotations": annotations}, "spec": spec});
    let patch = patch::guarded(object, changes.clone())
        .map_err(|e| Error::Invalid(format!("cannot patch {name:?}: {e}")))?;
    let mut after = object.clone();
    json_patch::merge(&mut after, &changes);

    let mut next = vec![format!(
        "promotion-controller starts a new rollout of revision {n}'s configuration from the \
         first stage, through every gate{}",
        if stages_change {
            format!(" (revision {n}'s stages too: every stage kept the approval it had)")
        } else {
            String::new()
        }
    )];
    if let Some(a) = holding {
        next.push(format!(
            "the rollout it replaces was {}; that request belonged to it and is removed in the \
             same write",
            a.describe()
        ));
    }
    if let Some(p) = promotion_shared::pause::paused(object) {
        next.push(format!(
            "it is {}: the new rollout starts nothing until `kubectl promotion resume {name}`",
            p.describe()
        ));
    }
    Ok(Decision {
        to: n,
        patch,
        after,
        stages: stages_change,
        next,
    })
}

/// The rollout a revision rolled, from its data (what the spec was): the same hashes as the
/// status had, computed the same way as the spec's.
fn rollout_of(revision: &Revision) -> Option<RolloutId> {
    identity_of(&json!({"spec": revision.data}))
        .ok()
        .map(|i| i.id)
}

/// "1, 2, 4" or "none".
fn kept(revisions: &[Revision]) -> String {
    let mut numbers: Vec<i64> = revisions.iter().map(|r| r.number).collect();
    numbers.sort_unstable();
    if numbers.is_empty() {
        return "none".to_string();
    }
    numbers
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Revision's stages, each with the `approved` flag its namesake has in the spec now (none when
/// the spec has no such stage or it has no flag): the approvals are today's, never the
/// revision's.
fn restored_stages(revision: &Value, now: &Value) -> Value {
    let now_approved = |name: &str| {
        now.as_array()?
            .iter()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name))?
            .pointer("/trigger/manual/approved")
            .cloned()
    };
    let stages = revision
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut stage| {
            let name = stage
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if let Some(manual) = stage
                .pointer_mut("/trigger/manual")
                .and_then(Value::as_object_mut)
            {
                manual.remove("approved");
                if let Some(flag) = now_approved(&name) {
                    manual.insert("approved".into(), flag);
                }
            }
            stage
        })
        .collect();
    Value::Array(stages)
}

/// The promotion as `after` shows it, as a manifest to commit to git: without status, the
/// server's fields, the webhook's audit records, request annotations, and the marks the GitOps
/// tools write themselves.
pub fn manifest(after: &Value) -> Value {
    let mut m = after.clone();
    if let Some(o) = m.as_object_mut() {
        o.remove("status");
    }
    if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "resourceVersion",
            "uid",
            "generation",
            "creationTimestamp",
            "managedFields",
            "selfLink",
            "finalizers",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            meta.remove(key);
        }
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.retain(|k, v| {
                !v.is_null()
                    && !k.starts_with(AUDIT_PREFIX)
                    && k != UNDO_ANNOTATION
                    && k != ARGO_TRACKING_ANNOTATION
                    && k != "kubectl.kubernetes.io/last-applied-configuration"
            });
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
        if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            labels.retain(|k, _| {
                !k.starts_with("kustomize.toolkit.fluxcd.io/")
                    && !k.starts_with("helm.toolkit.fluxcd.io/")
            });
            if labels.is_empty() {
                meta.remove("labels");
            }
        }
    }
    m
}

/// Why an undo of a GitOps-managed promotion writes nothing, and what to do instead.
fn gitops_words(name: &str, tools: &[Managed], n: i64, printing: bool) -> String {
    let which: Vec<String> = tools.iter().map(Managed::describe).collect();
    let instead = if printing {
        format!(
            "commit the manifest printed (the promotion with revision {n}'s spec) to git instead"
        )
    } else {
        format!(
            "commit revision {n}'s spec to git instead (`kubectl promotion undo {name} \
             --to-revision {n} -o yaml` prints the manifest)"
        )
    };
    format!(
        "{name:?} is managed by {}: it would set the spec back to what git holds on its next \
         sync (self-heal) and start yet another rollout, so undo writes nothing; {instead}. \
         `kubectl promotion rollback {name}` sets the stages back now and leaves the spec alone; \
         --force writes the undo all the same",
        which.join(" and ")
    )
}

pub async fn run(ctx: &Ctx, args: &UndoArgs) -> Result<u8> {
    let format = OutputFormat::of_flag(args.write.output.as_deref(), FORMATS)?;
    if let Some(n) = args.to_revision.filter(|n| *n < 1) {
        return Err(Error::Usage(format!(
            "--to-revision {n}: revisions count from 1"
        )));
    }
    let name = args.name.as_str();
    let flags = &args.write;
    let kube = ctx.kube().await?;
    let mut attempt = 1;
    let (stored, decision) = loop {
        let object = kube.get_promotion(name).await?;
        let revisions = revisions_of(&kube, &args.history_namespace, &object).await?;
        let decision = decide(&object, &revisions, args.to_revision)?;
        let tools = managed_by(&object);
        if !tools.is_empty() && !args.force {
            let printing = matches!(format, OutputFormat::Json | OutputFormat::Yaml);
            let words = gitops_words(name, &tools, decision.to, printing);
            if printing {
                let m = manifest(&decision.after);
                ctx.write_out(&match format {
                    OutputFormat::Json => output::to_json(&m)?,
                    _ => output::to_yaml(&m)?,
                })?;
                note(ctx, &words);
            } else {
                report(&Error::Refused(words), ctx.err.color);
            }
            return Ok(exit::GITOPS);
        }
        if !tools.is_empty() {
            let which: Vec<String> = tools.iter().map(Managed::describe).collect();
            warn(
                ctx,
                &format!(
                    "{name} is managed by {} (--force): its next sync sets the spec back to \
                     what git holds unless git has revision {}'s spec by then",
                    which.join(" and "),
                    decision.to
                ),
            );
        }
        let says = super::Guarded {
            doing: "undoing",
            unrecorded: &format!(
                "the spec change carries no record of who made it nor that it restores \
                 revision {}",
                decision.to
            ),
            check: &format!("kubectl promotion history {name}"),
        };
        let recorded = |stored: &Value| recorded(&object, stored, decision.to);
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
    let text = super::written(
        format,
        name,
        &stored,
        &format!("undone to revision {}", decision.to),
        flags.dry_run,
    )?;
    ctx.write_out(&text)?;
    for line in &decision.next {
        note(ctx, &format!("{name}: {line}"));
    }
    Ok(exit::OK)
}

/// Whether promotion-webhook recorded this write: a spec-change record of revision `n` that the
/// object read did not carry.
fn recorded(before: &Value, stored: &Value, n: i64) -> bool {
    let record = |o: &Value| spec_change_record(o).ok().flatten();
    let after = record(stored);
    after
        .as_ref()
        .is_some_and(|r| r.restored_revision == Some(n))
        && after != record(before)
}

#[cfg(test)]
mod tests;
