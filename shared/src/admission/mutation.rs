//! What the mutating webhook changes, as a JSON Patch against the raw request object.
//!
//! Rules (see the crate README for the user-facing description):
//! - an approval that has been used (per the stored object's status the next stage is already
//!   reached) is removed on the next UPDATE, as Sveltos does when `automaticReset` is not false;
//! - when the change starts a new rollout ([`crate::rollout::restart`]: `spec.profileSpec`, or
//!   stage names, order or selectors), Sveltos restarts the pipeline: every approval that resets
//!   automatically is removed, unless this very request turns it on;
//! - turning an approval on records who, when and why; withdrawing it (`approved: false`)
//!   records who, when and why, with the record of the approval withdrawn; taking it away
//!   otherwise (left out, its stage removed, or reset as above) marks its record with who, when
//!   and how; starting a new rollout records who and when (a CREATE counts as one), and, when
//!   the request says so ([`UNDO_ANNOTATION`], removed like the approval reason), which revision
//!   of the history it set the spec back to.
//!
//! The plan is idempotent: applying it and planning again for the result gives an empty patch,
//! which keeps the webhook safe under `reinvocationPolicy: IfNeeded`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation, TestOperation};
use serde::Serialize;
use serde_json::{Map, Value};

use super::audit::{
    annotation, annotations, approval_records_in, credited, reset_flip_records_in,
    spec_change_record_in, steer_record_for, steer_record_in, steer_record_matches,
    steer_request_in, ApprovalRecord, RemovalRecord, ResetFlipRecord, SpecChangeRecord,
    SteerRecord,
};
use super::gates::{
    gates, gates_by_name, generation, is_deleting, newly_approved, newly_revoked, Gate,
};
use super::removed::{removed_approvals_tree, reset_cause, RemovalCause};
use super::{
    UserInfo, APPROVALS_ANNOTATION, APPROVAL_REASON_ANNOTATION, MAX_REASON_CHARS,
    RESET_FLIPS_ANNOTATION, SPEC_CHANGE_ANNOTATION, UNDO_ANNOTATION,
};
use crate::rollout::{self, Restart, RolloutId};
use crate::tree::{field, same, to_owned_value, tree_of, Tree};

/// Why an approval is removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ResetCause {
    /// The promotion it allowed has happened: `next_stage` is already in `status.stages`, or,
    /// for a gate on the last stage (`next_stage` absent), the pipeline completed.
    Consumed {
        #[serde(skip_serializing_if = "Option::is_none")]
        next_stage: Option<String>,
        /// This approval was given after promotion-controller had used an earlier one to open
        /// the gate ([`super::used_approvals`]): it opened nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        given_after_use: bool,
    },
    /// The request starts a new rollout: Sveltos restarts the pipeline and the old approval must
    /// not carry over into it.
    NewRollout { restart: Restart },
}

impl ResetCause {
    /// What happens to the approval and why, after "approval of stage X": "removed: it was
    /// already used to promote to \"production\"".
    pub fn describe(&self) -> String {
        match self {
            ResetCause::Consumed {
                next_stage: Some(next),
                given_after_use: false,
            } => format!("removed: it was already used to promote to {next:?}"),
            ResetCause::Consumed {
                next_stage: None,
                given_after_use: false,
            } => "removed: it was already used to complete the pipeline".to_string(),
            ResetCause::Consumed {
                next_stage: Some(next),
                given_after_use: true,
            } => format!(
                "removed: given after an earlier approval had promoted to {next:?}, it was never used"
            ),
            ResetCause::Consumed {
                next_stage: None,
                given_after_use: true,
            } => "removed: given after an earlier approval had completed the pipeline, it was \
                  never used"
                .to_string(),
            ResetCause::NewRollout { restart } => {
                let what = match restart {
                    Restart::ProfileSpec { .. } => "spec.profileSpec changed",
                    Restart::Stages => "stage names, order or cluster selectors changed",
                };
                format!("reset: {what}, the new rollout needs a new approval")
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalReset {
    pub stage: String,
    /// Index of the stage in the request object's `spec.stages`.
    pub index: usize,
    pub cause: ResetCause,
}

impl ApprovalReset {
    /// One line for an admission warning (kept under 120 characters for ordinary stage names).
    pub fn warning(&self) -> String {
        format!(
            "approval of stage {:?} {}",
            self.stage,
            self.cause.describe()
        )
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MutationPlan {
    /// Empty when nothing changes. Every `remove` is preceded by `test` ops, so the patch fails
    /// rather than removing the wrong thing if the document is not the one planned against.
    pub patch: Patch,
    /// For the admission response (kubectl prints them).
    pub warnings: Vec<String>,
    pub reset_approvals: Vec<ApprovalReset>,
    /// Stages whose approval this request turns on (and which get an audit record).
    pub recorded_approvals: Vec<String>,
    /// The request starts a new rollout, and why.
    pub restart: Option<Restart>,
}

impl MutationPlan {
    pub fn is_empty(&self) -> bool {
        self.patch.0.is_empty()
    }

    /// Names of the stages whose approval the webhook removes.
    pub fn reset_stage_names(&self) -> Vec<&str> {
        self.reset_approvals
            .iter()
            .map(|r| r.stage.as_str())
            .collect()
    }
}

/// Plan the mutation of `new` (the request object) for a CREATE (`old` is `None`) or an UPDATE
/// (`old` is the stored object). Never fails: input of an unexpected shape plans nothing for the
/// parts it cannot read.
pub fn plan_mutation(
    old: Option<&Value>,
    new: &Value,
    user: &UserInfo,
    now: DateTime<Utc>,
) -> MutationPlan {
    let old = old.map(tree_of);
    plan_mutation_tree(old.as_ref(), &tree_of(new), user, now)
}

/// [`plan_mutation`] on parsed trees.
pub fn plan_mutation_tree(
    old: Option<&Tree>,
    new: &Tree,
    user: &UserInfo,
    now: DateTime<Utc>,
) -> MutationPlan {
    let mut plan = MutationPlan::default();
    if !new.is_object() || is_deleting(new) {
        return plan;
    }
    plan.restart = old.and_then(|old| rollout::restart(old, new));

    let mut ops = Vec::new();
    if let Some(old) = old {
        for reset in resets(old, new, plan.restart.as_ref()) {
            ops.extend(remove_approval_ops(&reset));
            plan.warnings.push(reset.warning());
            plan.reset_approvals.push(reset);
        }
    }

    let approving = newly_approved(old, new);
    let revoking = newly_revoked(old, new);
    plan.recorded_approvals = approving.iter().map(|g| g.name.to_string()).collect();
    let mut annotation_edits = AnnotationEdits::default();
    let reason = take_reason(
        new,
        !approving.is_empty() || !revoking.is_empty(),
        &mut annotation_edits,
        &mut plan.warnings,
    );
    // Every record names the rollout it belongs to: the spec's hashes after this request.
    let rollout = (!approving.is_empty() || plan.restart.is_some() || old.is_none())
        .then(|| rollout::identity(new).ok().map(|i| i.id))
        .flatten();
    let writer = Writer {
        user,
        now,
        rollout,
        generation: produced_generation(old, new, !plan.reset_approvals.is_empty()),
    };
    record_approvals(
        old,
        new,
        &writer,
        &Changes {
            approving: &approving,
            revoking: &revoking,
            resets: &plan.reset_approvals,
        },
        reason,
        &mut annotation_edits,
    );
    let restored = take_undo(
        new,
        old.is_none(),
        plan.restart.is_some(),
        &mut annotation_edits,
        &mut plan.warnings,
    );
    if plan.restart.is_some() || old.is_none() {
        record_spec_change(old, new, &writer, restored, &mut annotation_edits);
    }
    if let Some(old) = old {
        record_reset_flips(
            old,
            new,
            &writer,
            &plan.reset_approvals,
            &mut annotation_edits,
            &mut plan.warnings,
        );
    }
    record_steer::<crate::pause::PauseRecord>(old, new, user, now, &mut annotation_edits);
    record_steer::<crate::abort::AbortRecord>(old, new, user, now, &mut annotation_edits);
    ops.extend(annotation_edits.into_ops(new));

    plan.patch = Patch(ops);
    plan
}

fn resets(old: &Tree, new: &Tree, restart: Option<&Restart>) -> Vec<ApprovalReset> {
    let before = gates_by_name(old);
    gates(new)
        .into_iter()
        .filter(|gate| gate.approved)
        // Only an approval that was already on can have been used or belong to the old rollout;
        // one this request turns on is for the rollout being submitted.
        .filter(|gate| before.get(gate.name).is_some_and(|g| g.approved))
        .filter_map(|gate| {
            Some(ApprovalReset {
                stage: gate.name.to_string(),
                index: gate.index,
                cause: reset_cause(old, &gate, restart)?,
            })
        })
        .collect()
}

fn remove_approval_ops(reset: &ApprovalReset) -> [PatchOperation; 3] {
    let index = reset.index.to_string();
    let stage = ["spec", "stages", index.as_str()];
    [
        PatchOperation::Test(TestOperation {
            path: PointerBuf::from_tokens(stage.iter().copied().chain(["name"])),
            value: Value::String(reset.stage.clone()),
        }),
        PatchOperation::Test(TestOperation {
            path: approved_pointer(&stage),
            value: Value::Bool(true),
        }),
        PatchOperation::Remove(RemoveOperation {
            path: approved_pointer(&stage),
        }),
    ]
}

fn approved_pointer(stage: &[&str; 3]) -> PointerBuf {
    PointerBuf::from_tokens(
        stage
            .iter()
            .copied()
            .chain(["trigger", "manual", "approved"]),
    )
}

/// The `metadata.generation` the API server gives the object this request writes: 1 on CREATE;
/// on UPDATE the stored one, plus one when the spec changes (the request's own change, or an
/// approval the mutation removes: the removed flag was on in the stored object).
fn produced_generation(old: Option<&Tree>, new: &Tree, removes_approvals: bool) -> Option<i64> {
    let Some(old) = old else {
        return Some(1);
    };
    let stored = generation(old)?;
    let spec_changes = removes_approvals
        || !match (field(old, "spec"), field(new, "spec")) {
            (Some(a), Some(b)) => same(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
    Some(if spec_changes { stored + 1 } else { stored })
}

/// The request's approval reason: always removed from the object (it is a request parameter, not
/// state), returned for the approval records when this request approves or revokes something.
fn take_reason(
    new: &Tree,
    recording: bool,
    edits: &mut AnnotationEdits,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let raw = annotation(new, APPROVAL_REASON_ANNOTATION)?;
    edits.remove(APPROVAL_REASON_ANNOTATION, to_owned_value(raw));
    if !recording {
        warnings.push(format!(
            "annotation {APPROVAL_REASON_ANNOTATION} removed: this request approves no stage"
        ));
        return None;
    }
    let text = match raw {
        Tree::Str(text) => text.to_string(),
        other => to_owned_value(other).to_string(),
    };
    if text.chars().count() > MAX_REASON_CHARS {
        warnings.push(format!(
            "approval reason cut to {MAX_REASON_CHARS} characters for the audit record"
        ));
        return Some(text.chars().take(MAX_REASON_CHARS).collect());
    }
    Some(text)
}

/// The revision the request says it restores ([`UNDO_ANNOTATION`]): always removed from the
/// object (a request parameter, not state), returned for the spec-change record when this request
/// starts a new rollout of a stored promotion and the value is a revision number.
fn take_undo(
    new: &Tree,
    creating: bool,
    restarting: bool,
    edits: &mut AnnotationEdits,
    warnings: &mut Vec<String>,
) -> Option<i64> {
    let raw = annotation(new, UNDO_ANNOTATION)?;
    edits.remove(UNDO_ANNOTATION, to_owned_value(raw));
    if creating {
        warnings.push(format!(
            "annotation {UNDO_ANNOTATION} removed: a promotion being created has no revision to \
             restore"
        ));
        return None;
    }
    if !restarting {
        warnings.push(format!(
            "annotation {UNDO_ANNOTATION} removed: this request starts no new rollout \
             (spec.profileSpec and the stages' names, order and selectors are unchanged), so it \
             restores no revision"
        ));
        return None;
    }
    let number = raw
        .as_str()
        .and_then(|text| text.parse::<i64>().ok())
        .filter(|n| *n >= 1);
    if number.is_none() {
        warnings.push(format!(
            "annotation {UNDO_ANNOTATION} removed: {} is not a revision number (revisions count \
             from 1); the spec change is recorded without it",
            to_owned_value(raw)
        ));
    }
    number
}

/// Who writes this request's records, when, for which rollout, and the generation the write
/// produces.
struct Writer<'a> {
    user: &'a UserInfo,
    now: DateTime<Utc>,
    rollout: Option<RolloutId>,
    generation: Option<i64>,
}

/// What this request does to approvals, for the records.
struct Changes<'r, 'a> {
    approving: &'r [Gate<'a>],
    revoking: &'r [Gate<'a>],
    resets: &'r [ApprovalReset],
}

/// Approval records: a new one for every approval this request gives or revokes (a revocation's
/// keeping the record of the approval it withdrew); for an approval that stays on through a spec
/// change, its record (when it is the approval's: [`credited`] at the stored generation) carried
/// forward to the generation this write produces; and, for an approval this request takes away
/// otherwise, its stage's record marked with who took it, when and how.
fn record_approvals(
    old: Option<&Tree>,
    new: &Tree,
    writer: &Writer<'_>,
    changes: &Changes<'_, '_>,
    reason: Option<String>,
    edits: &mut AnnotationEdits,
) {
    let (user, now) = (writer.user, writer.now);
    let before = old
        .and_then(|old| approval_records_in(old).ok())
        .unwrap_or_default();
    let stored_generation = old.and_then(generation);
    let carried: Vec<&str> = match old {
        Some(old) if writer.generation != stored_generation => {
            let was_on = gates_by_name(old);
            gates(new)
                .into_iter()
                .filter(|g| g.approved && was_on.get(g.name).is_some_and(|o| o.approved))
                .filter(|g| !changes.resets.iter().any(|r| r.stage == g.name))
                .map(|g| g.name)
                .filter(|name| {
                    before
                        .get(*name)
                        .is_some_and(|r| r.generation.is_some() && credited(r, stored_generation))
                })
                .collect()
        }
        _ => Vec::new(),
    };
    // Every approval this request takes away without revoking it is marked on its stage's
    // record with who took it and how, so that the history says who removed it instead of only
    // that it is gone. An approval the webhook did not record (the stage's record is not the
    // approval's) also marks that record superseded, so that the history does not credit the
    // record's author with the approval that was in effect.
    let removals: Vec<(String, RemovalCause)> = match old {
        Some(old) => removed_approvals_tree(old, new)
            .into_iter()
            .filter(|r| !changes.revoking.iter().any(|g| g.name == r.stage))
            .filter(|r| {
                before
                    .get(&r.stage)
                    .is_some_and(|record| marks(record, stored_generation))
            })
            .map(|r| (r.stage, r.cause))
            .collect(),
        None => Vec::new(),
    };
    if changes.approving.is_empty()
        && changes.revoking.is_empty()
        && carried.is_empty()
        && removals.is_empty()
    {
        return;
    }
    // An unreadable value is replaced; the integrity check decides whether the request may
    // carry it at all.
    let current = approval_records_in(new).unwrap_or_default();
    let mut desired: BTreeMap<String, ApprovalRecord> = current.clone();
    let written = changes
        .approving
        .iter()
        .map(|g| (g, false))
        .chain(changes.revoking.iter().map(|g| (g, true)));
    for (gate, revoked) in written {
        let existing = current.get(gate.name);
        // A record this request already got (reinvocation) is kept, so planning again is a no-op.
        let own = existing.is_some_and(|record| {
            reason.is_none()
                && record.matches_request(user, now)
                && record.revoked == revoked
                && before.get(gate.name) != Some(record)
        });
        if !own {
            let mut record = ApprovalRecord::for_request(
                user,
                now,
                reason.clone(),
                // A revocation withdraws, for whatever rollout; it belongs to none.
                (!revoked).then(|| writer.rollout.clone()).flatten(),
                writer.generation,
            );
            record.revoked = revoked;
            if revoked {
                record.revoked_approval =
                    revoked_approval(&before, gate.name, stored_generation).map(Box::new);
            }
            desired.insert(gate.name.to_string(), record);
        }
    }
    for name in carried {
        // Only a record the request left as stored is carried (on reinvocation it already is).
        if let (Some(stored), Some(record)) = (before.get(name), desired.get_mut(name)) {
            if stored == record {
                record.generation = writer.generation;
            }
        }
    }
    for (stage, cause) in removals {
        // Only a record the request left as stored is marked (on reinvocation it already is).
        if let (Some(stored), Some(record)) = (before.get(&stage), desired.get_mut(&stage)) {
            if stored == record {
                *record = marked(stored, stored_generation, &cause, user, now);
            }
        }
    }
    edits.set_json(new, APPROVALS_ANNOTATION, &desired);
}

/// The record of the approval a revocation of `stage` withdraws: the stage's stored record, when
/// it is that approval's ([`credited`] at the stored generation, and not itself a revocation).
pub(crate) fn revoked_approval(
    before: &BTreeMap<String, ApprovalRecord>,
    stage: &str,
    stored_generation: Option<i64>,
) -> Option<ApprovalRecord> {
    before
        .get(stage)
        .filter(|r| !r.revoked && credited(r, stored_generation))
        .cloned()
}

/// Whether the removal of a stage's approval marks the stage's stored `record`: the approval's
/// own record (not a revocation), or a record that is not the approval's (the approval had none).
/// A record written before generations were recorded that says "revoked" is neither: it is
/// credited with the approval state, so the approval now gone was never its.
pub(crate) fn marks(record: &ApprovalRecord, stored_generation: Option<i64>) -> bool {
    !(record.revoked && credited(record, stored_generation))
}

/// `stored` as the mutation marks it when `user`'s request at `now` takes the stage's approval
/// away by `cause`: the removal recorded, and a record that was not the approval's superseded.
pub(crate) fn marked(
    stored: &ApprovalRecord,
    stored_generation: Option<i64>,
    cause: &RemovalCause,
    user: &UserInfo,
    now: DateTime<Utc>,
) -> ApprovalRecord {
    ApprovalRecord {
        superseded: stored.superseded || !credited(stored, stored_generation),
        removed: Some(RemovalRecord::for_request(cause, user, now)),
        ..stored.clone()
    }
}

fn record_spec_change(
    old: Option<&Tree>,
    new: &Tree,
    writer: &Writer<'_>,
    restored: Option<i64>,
    edits: &mut AnnotationEdits,
) {
    let (user, now) = (writer.user, writer.now);
    let before = old.and_then(|old| spec_change_record_in(old).ok().flatten());
    let current = spec_change_record_in(new).ok().flatten();
    // Reinvocation: this request's record is already there (and its undo annotation gone).
    let own = current.as_ref().is_some_and(|record| {
        record.matches_request(user, now)
            && before.as_ref() != Some(record)
            && (restored.is_none() || record.restored_revision == restored)
    });
    if !own {
        edits.set_json(
            new,
            SPEC_CHANGE_ANNOTATION,
            &SpecChangeRecord::for_request(user, now, writer.rollout.clone(), restored),
        );
    }
}

/// A request that sets, changes or removes a steering annotation (a pause, an abort) is
/// recorded: who, when, what it left. The record of an earlier request stays as it was otherwise.
fn record_steer<R: SteerRecord>(
    old: Option<&Tree>,
    new: &Tree,
    user: &UserInfo,
    now: DateTime<Utc>,
    edits: &mut AnnotationEdits,
) {
    let request = steer_request_in::<R>(new);
    if old.and_then(steer_request_in::<R>) == request {
        return;
    }
    // A CREATE that does not set it has nothing to record.
    if old.is_none() && request.is_none() {
        return;
    }
    let before = old.and_then(|old| steer_record_in::<R>(old).ok().flatten());
    let current = steer_record_in::<R>(new).ok().flatten();
    // Reinvocation: this request's record is already there.
    let own = current.as_ref().is_some_and(|record| {
        before.as_ref() != Some(record) && steer_record_matches(record, request, user, now)
    });
    if !own {
        edits.set_json(new, R::RECORD, &steer_record_for::<R>(request, user, now));
    }
}

/// Stages whose `automaticReset` this request turns from `false` to `true` (or leaves out, which
/// the CRD defaults to `true`), in the request's order.
pub(crate) fn reset_flips<'a>(old: &Tree, new: &'a Tree) -> Vec<Gate<'a>> {
    let before = gates_by_name(old);
    gates(new)
        .into_iter()
        .filter(|gate| gate.resets && before.get(gate.name).is_some_and(|g| !g.resets))
        .collect()
}

/// A record, and a warning, for every stage whose `automaticReset` this request turns back to
/// `true`, with the approval the same request removes: otherwise only the writer (often Sveltos'
/// own merge patch, upstream defect D3) would ever know why a persistent approval went.
fn record_reset_flips(
    old: &Tree,
    new: &Tree,
    writer: &Writer<'_>,
    resets: &[ApprovalReset],
    edits: &mut AnnotationEdits,
    warnings: &mut Vec<String>,
) {
    let flips = reset_flips(old, new);
    if flips.is_empty() {
        return;
    }
    let before = reset_flip_records_in(old).unwrap_or_default();
    let current = reset_flip_records_in(new).unwrap_or_default();
    let approvals = approval_records_in(old).unwrap_or_default();
    let was = gates_by_name(old);
    let stored_generation = generation(old);
    let mut desired = current.clone();
    for gate in flips {
        let removed = resets.iter().any(|r| r.stage == gate.name)
            || (was.get(gate.name).is_some_and(|g| g.approved) && !gate.approved);
        warnings.push(format!(
            "automaticReset of stage {:?} is true again (this request sets it or leaves it out):              its approval no longer persists across promotions{}",
            gate.name,
            if removed { ", and this one is removed" } else { "" }
        ));
        // A record this request already got (reinvocation) is kept, so planning again is a no-op.
        let own = current.get(gate.name).is_some_and(|record| {
            record.matches_request(writer.user, writer.now) && before.get(gate.name) != Some(record)
        });
        if own {
            continue;
        }
        let approval = approvals
            .get(gate.name)
            .filter(|r| removed && !r.revoked && credited(r, stored_generation))
            .cloned();
        desired.insert(
            gate.name.to_string(),
            ResetFlipRecord {
                user: super::username(writer.user).to_string(),
                time: super::audit::format_time(writer.now),
                generation: writer.generation,
                approval_removed: removed,
                approval,
            },
        );
    }
    edits.set_json(new, RESET_FLIPS_ANNOTATION, &desired);
}

/// Annotation changes, turned into ops only where the object differs from the target.
#[derive(Default)]
struct AnnotationEdits {
    set: Vec<(&'static str, String)>,
    remove: Vec<(&'static str, Value)>,
}

impl AnnotationEdits {
    fn set_json<T: Serialize>(&mut self, new: &Tree, key: &'static str, value: &T) {
        let Ok(text) = serde_json::to_string(value) else {
            return;
        };
        if annotation(new, key).and_then(Tree::as_str) != Some(text.as_str()) {
            self.set.push((key, text));
        }
    }

    fn remove(&mut self, key: &'static str, current: Value) {
        self.remove.push((key, current));
    }

    fn into_ops(self, new: &Tree) -> Vec<PatchOperation> {
        let mut ops = Vec::new();
        if annotations(new).is_some() {
            for (key, value) in self.set {
                ops.push(PatchOperation::Add(AddOperation {
                    path: annotation_pointer(key),
                    value: Value::String(value),
                }));
            }
            for (key, current) in self.remove {
                ops.push(PatchOperation::Test(TestOperation {
                    path: annotation_pointer(key),
                    value: current,
                }));
                ops.push(PatchOperation::Remove(RemoveOperation {
                    path: annotation_pointer(key),
                }));
            }
        } else if !self.set.is_empty() {
            // Without an annotation map nothing can be removed, and keys cannot be added below a
            // missing parent: add the whole map (or the whole metadata).
            let map: Map<String, Value> = self
                .set
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::String(v)))
                .collect();
            let (path, value) = if field(new, "metadata").is_some_and(Tree::is_object) {
                (
                    PointerBuf::from_tokens(["metadata", "annotations"]),
                    Value::Object(map),
                )
            } else {
                let mut metadata = Map::new();
                metadata.insert("annotations".to_string(), Value::Object(map));
                (
                    PointerBuf::from_tokens(["metadata"]),
                    Value::Object(metadata),
                )
            };
            ops.push(PatchOperation::Add(AddOperation { path, value }));
        }
        ops
    }
}

fn annotation_pointer(key: &str) -> PointerBuf {
    PointerBuf::from_tokens(["metadata", "annotations", key])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::test_support::{self, now};
    use crate::admission::{approval_records, spec_change_record, RemovalHow};
    use chrono::TimeDelta;
    use serde_json::json;

    fn user(name: &str) -> UserInfo {
        test_support::user(name, &["system:authenticated", "release"])
    }

    /// dev → staging (manual gate) → production.
    fn promotion(approved: Option<bool>, reached: &[&str], chart: &str) -> Value {
        let mut manual = json!({"automaticReset": true});
        if let Some(a) = approved {
            manual["approved"] = json!(a);
        }
        json!({
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterPromotion",
            "metadata": {"name": "p", "creationTimestamp": null, "futureField": {"x": 1},
                         "generation": 4},
            "spec": {
                "profileSpec": {"helmCharts": [{"chartName": "kyverno", "chartVersion": chart}]},
                "stages": [
                    {"name": "dev", "trigger": {"auto": {"delay": "2m"}}},
                    {"name": "staging", "trigger": {"manual": manual}},
                    {"name": "production"}
                ]
            },
            "status": {"stages": reached.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}
        })
    }

    /// `object` with staging's `approved` left out.
    fn without_staging_approval(object: &Value) -> Value {
        let mut out = object.clone();
        out["spec"]["stages"][1]["trigger"]["manual"]
            .as_object_mut()
            .unwrap()
            .remove("approved");
        out
    }

    /// alice's record of an approval written at `generation`.
    fn alices_approval(generation: i64) -> ApprovalRecord {
        ApprovalRecord::for_request(&user("alice"), now(), None, None, Some(generation))
    }

    /// `object`'s approval records annotation, set to `records`.
    fn set_approval_records<K: Ord + Serialize>(
        object: &mut Value,
        records: &BTreeMap<K, ApprovalRecord>,
    ) {
        object["metadata"]["annotations"][APPROVALS_ANNOTATION] =
            json!(serde_json::to_string(records).unwrap());
    }

    fn apply(object: &Value, plan: &MutationPlan) -> Value {
        let mut out = object.clone();
        json_patch::patch(&mut out, &plan.patch.0).expect("plan applies to its own input");
        out
    }

    #[test]
    fn pausing_and_resuming_are_recorded_and_a_client_cannot_write_the_record() {
        use crate::admission::check_audit_integrity;
        use crate::pause::{paused, PAUSED_ANNOTATION, PAUSE_RECORD_ANNOTATION};
        let stored = promotion(None, &["dev"], "3.6.2");
        let mut pausing = stored.clone();
        pausing["metadata"]["annotations"] = json!({PAUSED_ANNOTATION: "bad chart"});
        let plan = plan_mutation(Some(&stored), &pausing, &user("alice"), now());
        let paused_object = apply(&pausing, &plan);
        let p = paused(&paused_object).expect("paused");
        assert_eq!(
            p.describe(),
            "paused by alice at 2026-03-01T12:00:00Z: \"bad chart\""
        );
        assert!(
            check_audit_integrity(Some(&stored), &paused_object, &user("alice"), now()).is_empty()
        );
        // Reinvocation and the validating webhook see the mutation's own output.
        let again = plan_mutation(Some(&stored), &paused_object, &user("alice"), now());
        assert!(again.is_empty(), "{:?}", again.patch);
        // Recorded for bob instead: a forgery.
        assert!(
            !check_audit_integrity(Some(&stored), &paused_object, &user("bob"), now()).is_empty()
        );
        // A request that does not pause cannot write the record.
        let mut forged = stored.clone();
        forged["metadata"]["annotations"] = json!({
            PAUSE_RECORD_ANNOTATION: paused_object["metadata"]["annotations"]
                [PAUSE_RECORD_ANNOTATION].clone()
        });
        let v = check_audit_integrity(Some(&stored), &forged, &user("alice"), now());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("neither pauses nor resumes"), "{v:?}");

        // bob resumes: the record says so; the promotion is no longer paused.
        let mut resuming = paused_object.clone();
        resuming["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(PAUSED_ANNOTATION);
        let later = now() + TimeDelta::minutes(5);
        let plan = plan_mutation(Some(&paused_object), &resuming, &user("bob"), later);
        let resumed = apply(&resuming, &plan);
        assert_eq!(paused(&resumed), None);
        let record = crate::pause::pause_record(&resumed).unwrap().unwrap();
        assert!(!record.paused);
        assert_eq!(
            (record.user.as_str(), record.time.as_str()),
            ("bob", "2026-03-01T12:05:00Z")
        );
        // Paused again without the webhook (its record is the resume's): who is not recorded.
        let mut unrecorded = resumed.clone();
        unrecorded["metadata"]["annotations"][PAUSED_ANNOTATION] = json!("");
        assert_eq!(paused(&unrecorded).unwrap().record, None);
        // A write that leaves the pause as it was records nothing.
        let mut relabel = paused_object.clone();
        relabel["metadata"]["labels"] = json!({"team": "a"});
        assert!(plan_mutation(Some(&paused_object), &relabel, &user("carol"), later).is_empty());
    }

    /// Abort requests are recorded by the same rule as pauses: who set it, changed it (a
    /// rollback) and removed it (a retry).
    #[test]
    fn aborting_and_retrying_are_recorded_and_a_client_cannot_write_the_record() {
        use crate::abort::{aborted, AbortRecord, ABORT_ANNOTATION, ABORT_RECORD_ANNOTATION};
        use crate::admission::check_audit_integrity;
        let stored = promotion(None, &["dev"], "3.6.2");
        let request = r#"{"stagesHash":"s","profileSpecHash":"p","rollbackTo":2}"#;
        let mut aborting = stored.clone();
        aborting["metadata"]["annotations"] = json!({ABORT_ANNOTATION: request});
        let plan = plan_mutation(Some(&stored), &aborting, &user("alice"), now());
        let aborted_object = apply(&aborting, &plan);
        assert_eq!(
            aborted(&aborted_object).unwrap().describe(),
            "rolled back to revision 2 by alice at 2026-03-01T12:00:00Z"
        );
        assert!(
            check_audit_integrity(Some(&stored), &aborted_object, &user("alice"), now()).is_empty()
        );
        assert!(plan_mutation(Some(&stored), &aborted_object, &user("alice"), now()).is_empty());
        assert!(
            !check_audit_integrity(Some(&stored), &aborted_object, &user("bob"), now()).is_empty()
        );
        let mut forged = stored.clone();
        forged["metadata"]["annotations"] = json!({
            ABORT_RECORD_ANNOTATION: aborted_object["metadata"]["annotations"]
                [ABORT_RECORD_ANNOTATION].clone()
        });
        let v = check_audit_integrity(Some(&stored), &forged, &user("alice"), now());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("neither aborts"), "{v:?}");
        // bob retries (removes the request): recorded as his.
        let mut retrying = aborted_object.clone();
        retrying["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(ABORT_ANNOTATION);
        let plan = plan_mutation(Some(&aborted_object), &retrying, &user("bob"), now());
        let retried = apply(&retrying, &plan);
        assert_eq!(aborted(&retried), None);
        let record: AbortRecord = serde_json::from_str(
            retried["metadata"]["annotations"][ABORT_RECORD_ANNOTATION]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!((record.aborted, record.user.as_str()), (false, "bob"));
    }

    fn assert_idempotent(old: Option<&Value>, new: &Value, user: &UserInfo) -> Value {
        let plan = plan_mutation(old, new, user, now());
        let mutated = apply(new, &plan);
        let again = plan_mutation(old, &mutated, user, now() + TimeDelta::seconds(3));
        assert!(again.is_empty(), "second plan not empty: {:?}", again.patch);
        mutated
    }

    #[test]
    fn an_approval_given_after_the_controller_used_another_is_removed_as_never_used() {
        // alice's approval (written at generation 1) opened staging → production; the
        // controller recorded that use at generation 2. bob approved staging again (generation
        // 4) before the status showed production: his approval opened nothing.
        let mut old = promotion(Some(true), &["dev", "staging", "production"], "3.6.2");
        let bob = ApprovalRecord::for_request(&user("bob"), now(), None, None, Some(4));
        set_approval_records(&mut old, &BTreeMap::from([("staging", bob)]));
        let used = BTreeMap::from([(
            "staging".to_string(),
            super::super::used_approvals::UsedApproval {
                approval: Some(alices_approval(1)),
                rollout: None,
                generation: Some(2),
            },
        )]);
        old["metadata"]["annotations"][super::super::used_approvals::USED_APPROVALS_ANNOTATION] =
            json!(super::super::used_approvals::to_annotation(&used));
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"team": "a"});
        let plan = plan_mutation(Some(&old), &new, &user("carol"), now());
        assert_eq!(
            plan.reset_approvals[0].cause,
            ResetCause::Consumed {
                next_stage: Some("production".into()),
                given_after_use: true,
            }
        );
        assert!(
            plan.warnings.iter().any(|w| w
                == "approval of stage \"staging\" removed: given after an earlier approval had \
                    promoted to \"production\", it was never used"),
            "{:?}",
            plan.warnings
        );
        // The record of the use names alice's approval: it is the one used, as before.
        let mut alices = old.clone();
        set_approval_records(
            &mut alices,
            &BTreeMap::from([("staging", alices_approval(4))]),
        );
        let used_alice = BTreeMap::from([(
            "staging".to_string(),
            super::super::used_approvals::UsedApproval {
                approval: Some(alices_approval(4)),
                rollout: None,
                generation: Some(4),
            },
        )]);
        alices["metadata"]["annotations"]
            [super::super::used_approvals::USED_APPROVALS_ANNOTATION] =
            json!(super::super::used_approvals::to_annotation(&used_alice));
        let mut new = alices.clone();
        new["metadata"]["labels"] = json!({"team": "a"});
        let plan = plan_mutation(Some(&alices), &new, &user("carol"), now());
        assert_eq!(
            plan.reset_approvals[0].cause,
            ResetCause::Consumed {
                next_stage: Some("production".into()),
                given_after_use: false,
            }
        );
    }

    #[test]
    fn consumed_approval_is_removed_on_next_update() {
        let old = promotion(Some(true), &["dev", "staging", "production"], "3.6.2");
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"team": "a"});
        let plan = plan_mutation(Some(&old), &new, &user("bob"), now());
        assert_eq!(
            plan.reset_approvals,
            [ApprovalReset {
                stage: "staging".into(),
                index: 1,
                cause: ResetCause::Consumed {
                    next_stage: Some("production".into()),
                    given_after_use: false,
                }
            }]
        );
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert_eq!(
            ops,
            json!([
                {"op": "test", "path": "/spec/stages/1/name", "value": "staging"},
                {"op": "test", "path": "/spec/stages/1/trigger/manual/approved", "value": true},
                {"op": "remove", "path": "/spec/stages/1/trigger/manual/approved"}
            ])
        );
        assert_eq!(plan.warnings.len(), 1);
        assert!(plan.warnings[0].contains("production"));
        let mutated = assert_idempotent(Some(&old), &new, &user("bob"));
        // Nothing but the approval changed: unknown metadata fields and nulls survive.
        let expected = without_staging_approval(&new);
        assert_eq!(mutated, expected);
    }

    #[test]
    fn approval_not_yet_used_or_not_resetting_is_kept() {
        let pending = promotion(Some(true), &["dev", "staging"], "3.6.2");
        assert!(plan_mutation(Some(&pending), &pending, &user("bob"), now()).is_empty());

        let mut sticky = promotion(Some(true), &["dev", "staging", "production"], "3.6.2");
        sticky["spec"]["stages"][1]["trigger"]["manual"]["automaticReset"] = json!(false);
        assert!(plan_mutation(Some(&sticky), &sticky, &user("bob"), now()).is_empty());
        let mut changed = sticky.clone();
        changed["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
        let plan = plan_mutation(Some(&sticky), &changed, &user("bob"), now());
        assert!(plan.reset_approvals.is_empty());
        assert!(matches!(plan.restart, Some(Restart::ProfileSpec { .. })));
    }

    #[test]
    fn new_rollout_resets_approvals_and_records_the_change() {
        let old = promotion(Some(true), &["dev", "staging"], "3.6.2");
        let new = promotion(Some(true), &["dev", "staging"], "3.7.0");
        let plan = plan_mutation(Some(&old), &new, &user("carol"), now());
        assert_eq!(plan.reset_stage_names(), ["staging"]);
        assert!(matches!(
            plan.reset_approvals[0].cause,
            ResetCause::NewRollout {
                restart: Restart::ProfileSpec { .. }
            }
        ));
        assert!(plan.warnings[0].contains("profileSpec changed"));
        let mutated = assert_idempotent(Some(&old), &new, &user("carol"));
        assert_eq!(
            spec_change_record(&mutated).unwrap(),
            Some(SpecChangeRecord {
                user: "carol".into(),
                time: "2026-03-01T12:00:00Z".into(),
                // The rollout the change started: the new spec's hashes.
                rollout: Some(crate::rollout::identity_of(&mutated).unwrap().id),
                restored_revision: None,
            })
        );
        assert!(mutated["spec"]["stages"][1]["trigger"]["manual"]
            .get("approved")
            .is_none());
    }

    #[test]
    fn approvals_reset_exactly_when_sveltos_hashes_differ() {
        let mut old = promotion(Some(true), &["dev", "staging"], "3.6.2");
        old["spec"]["profileSpec"]["preDeployChecks"] =
            json!([{"name": "a", "featureID": "Helm"}, {"name": "b", "featureID": "Helm"}]);
        old["spec"]["profileSpec"]["helmCharts"][0]["options"] = json!({"timeout": "90s"});
        // preDeployChecks are hashed in the order written: reordering them is a new rollout.
        let mut reordered = old.clone();
        reordered["spec"]["profileSpec"]["preDeployChecks"]
            .as_array_mut()
            .unwrap()
            .reverse();
        let plan = plan_mutation(Some(&old), &reordered, &user("bob"), now());
        assert_eq!(plan.reset_approvals.len(), 1);
        // A duration is hashed as Go prints it: 90s and 1m30s are the same rollout.
        let mut same = old.clone();
        same["spec"]["profileSpec"]["helmCharts"][0]["options"]["timeout"] = json!("1m30s");
        assert!(plan_mutation(Some(&old), &same, &user("bob"), now()).is_empty());
    }

    #[test]
    fn reordered_profile_spec_is_not_a_new_rollout() {
        let old = promotion(Some(true), &["dev", "staging"], "3.6.2");
        let mut new = old.clone();
        new["spec"]["profileSpec"] =
            json!({"helmCharts": [{"chartVersion": "3.6.2", "chartName": "kyverno"}]});
        assert!(plan_mutation(Some(&old), &new, &user("bob"), now()).is_empty());
    }

    #[test]
    fn approval_set_by_this_request_survives_a_new_rollout_and_is_recorded() {
        let old = promotion(Some(false), &["dev", "staging"], "3.6.2");
        let mut new = promotion(Some(true), &["dev", "staging"], "3.7.0");
        new["metadata"]["annotations"] = json!({APPROVAL_REASON_ANNOTATION: "CAB-42 signed off"});
        let plan = plan_mutation(Some(&old), &new, &user("dave"), now());
        assert!(plan.reset_approvals.is_empty());
        assert_eq!(plan.recorded_approvals, ["staging"]);
        let mutated = assert_idempotent(Some(&old), &new, &user("dave"));
        let records = approval_records(&mutated).unwrap();
        assert_eq!(
            records["staging"],
            ApprovalRecord {
                user: "dave".into(),
                groups: vec!["system:authenticated".into(), "release".into()],
                time: "2026-03-01T12:00:00Z".into(),
                reason: Some("CAB-42 signed off".into()),
                // Given in the rollout this request starts.
                rollout: Some(crate::rollout::identity_of(&mutated).unwrap().id),
                // The stored generation is 4; the write changes the spec.
                generation: Some(5),
                revoked: false,
                superseded: false,
                revoked_approval: None,
                removed: None,
            }
        );
        let annotations = mutated["metadata"]["annotations"].as_object().unwrap();
        assert!(!annotations.contains_key(APPROVAL_REASON_ANNOTATION));
        assert!(annotations.contains_key(SPEC_CHANGE_ANNOTATION));
        assert_eq!(
            mutated["spec"]["stages"][1]["trigger"]["manual"]["approved"],
            json!(true)
        );
    }

    /// `object` with the status hashes of the rollout `of` describes.
    fn status_of(mut object: Value, of: &Value) -> Value {
        let id = crate::rollout::identity_of(of).unwrap().id;
        object["status"]["stagesHash"] = json!(id.stages_hash);
        object["status"]["profileSpecHash"] = json!(id.profile_spec_hash);
        object
    }

    fn integrity(old: &Value, new: &Value, who: &UserInfo) -> Vec<crate::admission::Violation> {
        crate::admission::check_audit_integrity(Some(old), new, who, now())
    }

    #[test]
    fn an_approval_for_a_rollout_sveltos_has_not_started_is_not_used_by_the_previous_one() {
        // Rollout 3.6.2 went past staging; 3.7.0 is in the spec, approved in the same request.
        let previous = promotion(None, &["dev", "staging", "production"], "3.6.2");
        let old = status_of(
            promotion(None, &["dev", "staging", "production"], "3.6.2"),
            &previous,
        );
        let new = status_of(
            promotion(Some(true), &["dev", "staging", "production"], "3.7.0"),
            &previous,
        );
        let stored = assert_idempotent(Some(&old), &new, &user("dave"));
        assert_eq!(
            approval_records(&stored).unwrap()["staging"].rollout,
            Some(crate::rollout::identity_of(&new).unwrap().id)
        );
        // The API server's generation for the stored object.
        let mut stored = stored;
        stored["metadata"]["generation"] = json!(5);
        // An unrelated update: the status is still the previous rollout's, past the gate.
        let mut annotated = stored.clone();
        annotated["metadata"]["labels"] = json!({"team": "platform"});
        let plan = plan_mutation(Some(&stored), &annotated, &user("bob"), now());
        assert!(plan.reset_approvals.is_empty(), "{:?}", plan.warnings);
        // Once Sveltos runs the new rollout past the gate, the approval is used.
        let picked_up = status_of(stored.clone(), &stored);
        let plan = plan_mutation(Some(&picked_up), &picked_up, &user("bob"), now());
        assert_eq!(plan.reset_stage_names(), ["staging"]);
    }

    #[test]
    fn without_a_record_an_approval_belongs_to_the_spec_rollout() {
        let previous = promotion(None, &["dev", "staging", "production"], "3.6.2");
        // Approved with the webhook down: no record; the status is the previous rollout's.
        let old = status_of(
            promotion(Some(true), &["dev", "staging", "production"], "3.7.0"),
            &previous,
        );
        assert!(plan_mutation(Some(&old), &old, &user("bob"), now()).is_empty());
        let current = status_of(old.clone(), &old);
        assert_eq!(
            plan_mutation(Some(&current), &current, &user("bob"), now()).reset_stage_names(),
            ["staging"]
        );
    }

    #[test]
    fn a_revocation_is_recorded_with_its_reason() {
        let old = promotion(Some(true), &["dev", "staging"], "3.6.2");
        let mut new = promotion(Some(false), &["dev", "staging"], "3.6.2");
        new["metadata"]["annotations"] = json!({APPROVAL_REASON_ANNOTATION: "wrong build"});
        let mutated = assert_idempotent(Some(&old), &new, &user("erin"));
        let record = &approval_records(&mutated).unwrap()["staging"];
        assert!(record.revoked);
        assert_eq!(
            (
                record.user.as_str(),
                record.reason.as_deref(),
                record.generation
            ),
            ("erin", Some("wrong build"), Some(5))
        );
        // The approval had no record: nobody is named as having given it.
        assert_eq!(record.revoked_approval, None);
        assert!(integrity(&old, &mutated, &user("erin")).is_empty());
        // Leaving `approved` out is no revocation: nothing is recorded.
        let dropped = without_staging_approval(&old);
        assert!(plan_mutation(Some(&old), &dropped, &user("erin"), now()).is_empty());
    }

    #[test]
    fn a_revocation_keeps_the_record_of_the_approval_it_withdrew() {
        // alice's approval, recorded at the stored generation; bob revokes it.
        let mut old = promotion(Some(true), &["dev", "staging"], "3.6.2");
        let alice = ApprovalRecord {
            reason: Some("CAB-7".into()),
            ..alices_approval(4)
        };
        set_approval_records(&mut old, &BTreeMap::from([("staging", alice.clone())]));
        let mut new = old.clone();
        new["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(false);
        new["metadata"]["annotations"][APPROVAL_REASON_ANNOTATION] = json!("wrong build");
        let mutated = assert_idempotent(Some(&old), &new, &user("bob"));
        let record = &approval_records(&mutated).unwrap()["staging"];
        assert_eq!(
            (
                record.user.as_str(),
                record.revoked,
                record.reason.as_deref()
            ),
            ("bob", true, Some("wrong build"))
        );
        assert_eq!(record.revoked_approval.as_deref(), Some(&alice));
        assert!(integrity(&old, &mutated, &user("bob")).is_empty());
        // The client cannot name another approval as the one withdrawn, nor leave it out.
        for withdrawn in [
            Some(ApprovalRecord {
                user: "mallory".into(),
                ..alice.clone()
            }),
            None,
        ] {
            let mut forged = mutated.clone();
            let mut records = approval_records(&mutated).unwrap();
            records.get_mut("staging").unwrap().revoked_approval = withdrawn.map(Box::new);
            set_approval_records(&mut forged, &records);
            let violations = integrity(&old, &forged, &user("bob"));
            assert!(
                violations[0].message.contains(
                    "the stored records show it withdraws the \
                                                 approval given by \"alice\""
                ),
                "{violations:?}"
            );
        }
        // A record that is not the approval's (a write the webhook did not see came since)
        // names nobody.
        let mut unseen = old.clone();
        unseen["metadata"]["generation"] = json!(6);
        let mut new = unseen.clone();
        new["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(false);
        let mutated = assert_idempotent(Some(&unseen), &new, &user("bob"));
        assert_eq!(
            approval_records(&mutated).unwrap()["staging"].revoked_approval,
            None
        );
    }

    #[test]
    fn a_record_follows_its_approval_through_spec_changes_the_webhook_sees() {
        let old = promotion(Some(false), &["dev", "staging"], "3.6.2");
        let new = promotion(Some(true), &["dev", "staging"], "3.6.2");
        let mut stored = assert_idempotent(Some(&old), &new, &user("alice"));
        assert_eq!(
            approval_records(&stored).unwrap()["staging"].generation,
            Some(5)
        );
        stored["metadata"]["generation"] = json!(5);
        // A delay edit: the spec changes, the approval stays, its record follows.
        let mut edited = stored.clone();
        edited["spec"]["stages"][0]["trigger"]["auto"]["delay"] = json!("5m");
        let mutated = assert_idempotent(Some(&stored), &edited, &user("bob"));
        let record = &approval_records(&mutated).unwrap()["staging"];
        assert_eq!(
            (record.user.as_str(), record.generation),
            ("alice", Some(6))
        );
        assert!(integrity(&stored, &mutated, &user("bob")).is_empty());
        // A label changes no generation, and no record.
        let mut labelled = stored.clone();
        labelled["metadata"]["labels"] = json!({"team": "a"});
        assert!(plan_mutation(Some(&stored), &labelled, &user("bob"), now()).is_empty());
        // A record that does not match the stored generation is not carried: it is not the
        // approval's.
        let mut unseen = stored.clone();
        unseen["metadata"]["generation"] = json!(7);
        let mut edited = unseen.clone();
        edited["spec"]["stages"][0]["trigger"]["auto"]["delay"] = json!("5m");
        assert!(plan_mutation(Some(&unseen), &edited, &user("bob"), now()).is_empty());
        // A client cannot carry a record further than the webhook would.
        let mut forged = edited.clone();
        let mut records = approval_records(&stored).unwrap();
        records.get_mut("staging").unwrap().generation = Some(8);
        set_approval_records(&mut forged, &records);
        assert!(!integrity(&unseen, &forged, &user("bob")).is_empty());
    }

    #[test]
    fn an_automatic_reset_flip_is_recorded_with_the_approval_it_cost() {
        // dev's persistent approval was used (staging reached); Sveltos' merge patch of the whole
        // spec.stages leaves dev's automaticReset out, and the API server defaults it to true.
        let mut old = promotion(None, &["dev", "staging"], "3.6.2");
        old["spec"]["stages"][0]["trigger"] =
            json!({"manual": {"automaticReset": false, "approved": true}});
        set_approval_records(&mut old, &BTreeMap::from([("dev", alices_approval(4))]));
        let mut new = old.clone();
        new["spec"]["stages"][0]["trigger"]["manual"]["automaticReset"] = json!(true);
        let plan = plan_mutation(Some(&old), &new, &user("sveltos"), now());
        assert_eq!(plan.reset_stage_names(), ["dev"]);
        assert!(plan
            .warnings
            .iter()
            .any(|w| w.contains("automaticReset of stage \"dev\" is true again")));
        let mutated = assert_idempotent(Some(&old), &new, &user("sveltos"));
        let flip = &crate::admission::reset_flip_records(&mutated).unwrap()["dev"];
        assert_eq!(
            (flip.user.as_str(), flip.approval_removed, flip.generation),
            ("sveltos", true, Some(5))
        );
        assert_eq!(
            flip.approval.as_ref().map(|r| r.user.as_str()),
            Some("alice")
        );
        assert!(integrity(&old, &mutated, &user("sveltos")).is_empty());
        assert!(!integrity(&old, &mutated, &user("mallory")).is_empty());
        // Setting it true again is no flip.
        assert!(plan_mutation(Some(&mutated), &mutated, &user("bob"), now()).is_empty());
    }

    #[test]
    fn taking_away_an_unrecorded_approval_marks_the_earlier_record() {
        // alice's record is of generation 2; the approval now on came from an unseen write.
        let mut old = promotion(Some(true), &["dev", "staging"], "3.6.2");
        set_approval_records(&mut old, &BTreeMap::from([("staging", alices_approval(2))]));
        let removed = without_staging_approval(&old);
        let mutated = assert_idempotent(Some(&old), &removed, &user("sveltos"));
        let record = &approval_records(&mutated).unwrap()["staging"];
        assert!(record.superseded, "{record:?}");
        assert_eq!(record.user, "alice");
        // Who took the unrecorded approval away is known all the same.
        assert_eq!(
            record.removed.as_ref().map(|r| (r.user.as_str(), r.how)),
            Some(("sveltos", RemovalHow::Update))
        );
        assert!(integrity(&old, &mutated, &user("sveltos")).is_empty());
        // A record that is the approval's is not superseded, only marked removed.
        let mut credited_old = old.clone();
        credited_old["metadata"]["generation"] = json!(2);
        let removed = without_staging_approval(&credited_old);
        let mutated = assert_idempotent(Some(&credited_old), &removed, &user("x"));
        let record = &approval_records(&mutated).unwrap()["staging"];
        assert!(!record.superseded, "{record:?}");
        assert_eq!(record.removed.as_ref().map(|r| r.user.as_str()), Some("x"));
        // Nor may a client mark it.
        let mut forged = removed.clone();
        let mut records = approval_records(&credited_old).unwrap();
        records.get_mut("staging").unwrap().superseded = true;
        set_approval_records(&mut forged, &records);
        assert!(!integrity(&credited_old, &forged, &user("x")).is_empty());
    }

    #[test]
    fn an_approval_taken_away_is_marked_with_who_when_and_how() {
        // alice's approval, recorded at the stored generation (4): the record is the approval's.
        let mut old = promotion(Some(true), &["dev", "staging"], "3.6.2");
        set_approval_records(&mut old, &BTreeMap::from([("staging", alices_approval(4))]));
        let removal = |record: &ApprovalRecord| record.removed.clone().expect("marked removed");

        // A client-side apply of a manifest without `approved`.
        let left_out = without_staging_approval(&old);
        let mutated = assert_idempotent(Some(&old), &left_out, &user("carol"));
        let record = &approval_records(&mutated).unwrap()["staging"];
        assert_eq!(
            removal(record),
            RemovalRecord {
                user: "carol".into(),
                time: "2026-03-01T12:00:00Z".into(),
                how: RemovalHow::Update,
                detail: None,
            }
        );
        // The rest of the record is alice's, as stored: still the approval's author.
        assert_eq!(
            ApprovalRecord {
                removed: None,
                ..record.clone()
            },
            alices_approval(4)
        );
        assert!(integrity(&old, &mutated, &user("carol")).is_empty());
        // Only as the mutation writes it: for the requester, now, the way it went.
        for (who, at, how) in [
            ("mallory", now(), RemovalHow::Update),
            ("carol", now() - TimeDelta::hours(1), RemovalHow::Update),
            ("carol", now(), RemovalHow::StageRemoved),
        ] {
            let mut forged = mutated.clone();
            let mut records = approval_records(&mutated).unwrap();
            let marked = records
                .get_mut("staging")
                .unwrap()
                .removed
                .as_mut()
                .unwrap();
            (marked.user, marked.time, marked.how) =
                (who.to_string(), super::super::audit::format_time(at), how);
            set_approval_records(&mut forged, &records);
            assert!(
                !integrity(&old, &forged, &user("carol")).is_empty(),
                "{who} {at} {how:?}"
            );
        }
        // A request that keeps the approval may not mark its record.
        let mut kept = old.clone();
        set_approval_records(&mut kept, &approval_records(&mutated).unwrap());
        let violations = integrity(&old, &kept, &user("carol"));
        assert!(
            violations[0].message.contains("nor take it away"),
            "{violations:?}"
        );

        // A new rollout: the webhook resets it, and says why in the record.
        let mut rollout = old.clone();
        rollout["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
        let mutated = assert_idempotent(Some(&old), &rollout, &user("dave"));
        let marked = removal(&approval_records(&mutated).unwrap()["staging"]);
        assert_eq!(
            (marked.user.as_str(), marked.how, marked.detail.as_deref()),
            (
                "dave",
                RemovalHow::Reset,
                Some("reset: spec.profileSpec changed, the new rollout needs a new approval")
            )
        );
        assert!(integrity(&old, &mutated, &user("dave")).is_empty());
    }

    #[test]
    fn missing_annotations_and_metadata_get_created() {
        let old = promotion(Some(false), &[], "3.6.2");
        let new = promotion(Some(true), &[], "3.6.2");
        let plan = plan_mutation(Some(&old), &new, &user("erin"), now());
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert_eq!(ops[0]["op"], "add");
        assert_eq!(ops[0]["path"], "/metadata/annotations");
        assert_idempotent(Some(&old), &new, &user("erin"));

        let bare =
            json!({"spec": {"stages": [{"name": "a", "trigger": {"manual": {"approved": true}}}]}});
        let plan = plan_mutation(None, &bare, &user("erin"), now());
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert_eq!(ops[0]["path"], "/metadata");
        let mutated = assert_idempotent(None, &bare, &user("erin"));
        assert_eq!(approval_records(&mutated).unwrap()["a"].user, "erin");
    }

    #[test]
    fn create_records_the_author_and_escapes_keys() {
        let new = promotion(None, &[], "3.6.2");
        let plan = plan_mutation(None, &new, &user("frank"), now());
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert_eq!(ops.as_array().unwrap().len(), 1);
        let mut with_map = new.clone();
        with_map["metadata"]["annotations"] = json!({"other": "x"});
        let plan = plan_mutation(None, &with_map, &user("frank"), now());
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert_eq!(
            ops[0]["path"],
            "/metadata/annotations/audit.kubectl-promotion.dev~1spec-change"
        );
        assert_idempotent(None, &with_map, &user("frank"));
    }

    #[test]
    fn stray_reason_is_removed_with_a_warning() {
        let old = promotion(Some(false), &[], "3.6.2");
        let mut new = old.clone();
        new["metadata"]["annotations"] = json!({APPROVAL_REASON_ANNOTATION: "why"});
        let plan = plan_mutation(Some(&old), &new, &user("gus"), now());
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert_eq!(
            ops[0],
            json!({"op": "test", "path": "/metadata/annotations/kubectl-promotion.dev~1approval-reason", "value": "why"})
        );
        assert_eq!(ops[1]["op"], "remove");
        assert!(plan.warnings[0].contains("approves no stage"));
        assert_idempotent(Some(&old), &new, &user("gus"));
    }

    /// `kubectl promotion undo` sends the revision it restores with the spec change: the
    /// record keeps it, the request annotation goes, and planning again changes nothing.
    #[test]
    fn an_undo_is_recorded_with_the_revision_it_restored() {
        use crate::admission::check_audit_integrity;
        let old = promotion(None, &["dev"], "3.6.3");
        let mut new = promotion(None, &["dev"], "3.6.2");
        new["metadata"]["annotations"] = json!({UNDO_ANNOTATION: "2", "team": "platform"});
        let plan = plan_mutation(Some(&old), &new, &user("dora"), now());
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert!(
            ops.as_array().unwrap().iter().any(|op| op
                == &json!({"op": "test", "path":
                           "/metadata/annotations/kubectl-promotion.dev~1undo-to", "value": "2"})),
            "{ops}"
        );
        let mutated = assert_idempotent(Some(&old), &new, &user("dora"));
        assert_eq!(
            mutated["metadata"]["annotations"].get(UNDO_ANNOTATION),
            None,
            "{mutated}"
        );
        assert_eq!(mutated["metadata"]["annotations"]["team"], "platform");
        let record = spec_change_record(&mutated).unwrap().unwrap();
        assert_eq!(
            (record.user.as_str(), record.restored_revision),
            ("dora", Some(2))
        );
        assert_eq!(
            record.rollout,
            Some(crate::rollout::identity_of(&mutated).unwrap().id)
        );
        let text = mutated["metadata"]["annotations"][SPEC_CHANGE_ANNOTATION]
            .as_str()
            .unwrap();
        assert!(text.contains("\"restoredRevision\":2"), "{text}");
        assert!(plan.warnings.iter().all(|w| !w.contains(UNDO_ANNOTATION)));
        // The validating webhook accepts the mutation's output.
        assert!(check_audit_integrity(Some(&old), &mutated, &user("dora"), now()).is_empty());
        // A later spec change without the annotation is recorded without a revision.
        let mut later = promotion(None, &["dev"], "3.6.4");
        later["metadata"]["annotations"] = mutated["metadata"]["annotations"].clone();
        let again = assert_idempotent(Some(&mutated), &later, &user("erin"));
        let record = spec_change_record(&again).unwrap().unwrap();
        assert_eq!(
            (record.user.as_str(), record.restored_revision),
            ("erin", None)
        );
    }

    #[test]
    fn a_stray_or_unreadable_undo_annotation_is_removed_with_a_warning() {
        let old = promotion(None, &["dev"], "3.6.3");
        // No new rollout: only a label and the annotation.
        let mut relabel = old.clone();
        relabel["metadata"]["annotations"] = json!({UNDO_ANNOTATION: "2"});
        let plan = plan_mutation(Some(&old), &relabel, &user("gus"), now());
        let ops = serde_json::to_value(&plan.patch).unwrap();
        assert_eq!(
            ops,
            json!([{"op": "test", "path": "/metadata/annotations/kubectl-promotion.dev~1undo-to",
                    "value": "2"},
                   {"op": "remove", "path": "/metadata/annotations/kubectl-promotion.dev~1undo-to"}])
        );
        assert_eq!(
            plan.warnings,
            [format!(
                "annotation {UNDO_ANNOTATION} removed: this request starts no new rollout \
                 (spec.profileSpec and the stages' names, order and selectors are unchanged), so \
                 it restores no revision"
            )]
        );
        assert_idempotent(Some(&old), &relabel, &user("gus"));
        // A CREATE has no history.
        let plan = plan_mutation(None, &relabel, &user("gus"), now());
        assert!(
            plan.warnings[0].contains("a promotion being created has no revision"),
            "{:?}",
            plan.warnings
        );
        assert_eq!(
            spec_change_record(&apply(&relabel, &plan))
                .unwrap()
                .unwrap()
                .restored_revision,
            None
        );
        // Not a revision number: the change is recorded without it.
        for value in [json!("two"), json!("0"), json!("-3")] {
            let mut new = promotion(None, &["dev"], "3.6.2");
            new["metadata"]["annotations"] = json!({UNDO_ANNOTATION: value});
            let plan = plan_mutation(Some(&old), &new, &user("gus"), now());
            assert!(
                plan.warnings
                    .iter()
                    .any(|w| w.contains("is not a revision number")),
                "{value}: {:?}",
                plan.warnings
            );
            let mutated = assert_idempotent(Some(&old), &new, &user("gus"));
            assert_eq!(
                mutated["metadata"]["annotations"].get(UNDO_ANNOTATION),
                None
            );
            let record = spec_change_record(&mutated).unwrap().unwrap();
            assert_eq!(
                (record.user.as_str(), record.restored_revision),
                ("gus", None)
            );
        }
    }

    #[test]
    fn long_reason_is_cut() {
        let old = promotion(Some(false), &[], "3.6.2");
        let mut new = promotion(Some(true), &[], "3.6.2");
        new["metadata"]["annotations"] =
            json!({APPROVAL_REASON_ANNOTATION: "é".repeat(MAX_REASON_CHARS + 10)});
        let plan = plan_mutation(Some(&old), &new, &user("hal"), now());
        let mutated = apply(&new, &plan);
        let reason = approval_records(&mutated).unwrap()["staging"]
            .reason
            .clone()
            .unwrap();
        assert_eq!(reason.chars().count(), MAX_REASON_CHARS);
        assert!(plan.warnings.iter().any(|w| w.contains("cut")));
    }

    #[test]
    fn deleting_or_odd_objects_plan_nothing() {
        let mut deleting = promotion(Some(true), &["dev", "staging", "production"], "1");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-03-01T11:00:00Z");
        assert!(plan_mutation(Some(&deleting), &deleting, &user("x"), now()).is_empty());
        for odd in [json!(null), json!([]), json!("x"), json!({"spec": 5})] {
            let plan = plan_mutation(Some(&odd), &odd, &user("x"), now());
            assert!(plan.is_empty());
        }
    }
}
