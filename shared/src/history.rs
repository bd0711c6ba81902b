//! The rollout history of a promotion: one revision per rollout (each distinct `stagesHash`,
//! `profileSpecHash`), kept as `ControllerRevision`s (apps/v1, as DaemonSets and StatefulSets
//! keep theirs) in promotion-controller's namespace.
//!
//! A revision's `data` is what the rollout rolled, as it was stored when the controller first
//! saw it: `{"profileSpec": …, "stages": …}`; the API server keeps `data` immutable. Its
//! progress lives in one annotation, [`RECORD_ANNOTATION`] ([`Record`]): who started it and when
//! (the webhook's spec-change record of that rollout, when there is one), when each stage was
//! reached and reported deployed, and how it ended. Revisions are found by the promotion's UID
//! ([`PROMOTION_UID_LABEL`]): names can be longer than a label value may be.
//!
//! [`plan`] is the one decision, pure: from the promotion as stored and its revisions, the
//! writes that bring the history up to date — a revision for a rollout that has none (also for a
//! promotion adopted mid-rollout), the progress of the current one, "superseded" on the one it
//! replaced, and pruning beyond the limit, which never takes the current revision, a revision a
//! stage still runs, nor the last complete one (what a rollback goes back to by default).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use serde_with::skip_serializing_none;
use sha2::{Digest, Sha256};

use crate::admission::spec_change_record;
use crate::rollout::{identity_of, RolloutId};

/// The promotion's UID, on each of its revisions.
pub const PROMOTION_UID_LABEL: &str = "promotion-controller.kubectl-promotion.dev/promotion-uid";
/// The promotion's name, on each of its revisions (for people; it may be cut to fit a label).
pub const PROMOTION_NAME_ANNOTATION: &str =
    "promotion-controller.kubectl-promotion.dev/promotion-name";
/// The [`Record`] of the revision's rollout.
pub const RECORD_ANNOTATION: &str = "promotion-controller.kubectl-promotion.dev/rollout";
/// Where promotion-controller keeps revisions unless told otherwise.
pub const DEFAULT_NAMESPACE: &str = "kubectl-promotion-system";
/// Revisions kept per promotion unless told otherwise (as Deployments' `revisionHistoryLimit`).
pub const DEFAULT_LIMIT: usize = 10;

/// How a rollout went, as far as the controller saw it.
#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The rollout's hashes (`status.stagesHash`, `status.profileSpecHash`).
    pub stages_hash: String,
    pub profile_spec_hash: String,
    /// Who changed the spec to start it, by the webhook's record (absent when not recorded).
    pub started_by: Option<String>,
    /// When it started: the webhook's record of the change, else when the controller first
    /// saw it.
    pub started: String,
    /// The change that started it set the spec back to this revision (`kubectl promotion
    /// undo`), by the webhook's record of it.
    pub restored_revision: Option<i64>,
    /// The stages it reached, in order.
    #[serde(default)]
    pub stages: Vec<StageRecord>,
    /// When its last stage passed its gate (the promotion completed).
    pub completed: Option<String>,
    /// The revision that replaced it, and when it was first seen.
    pub superseded_by: Option<i64>,
    pub superseded: Option<String>,
    /// The last abort of this run ([`crate::abort`]).
    pub aborted: Option<AbortOutcome>,
}

/// An abort of a rollout, as the history keeps it.
#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbortOutcome {
    /// Who aborted it, by the webhook's record (absent when not recorded).
    pub by: Option<String>,
    /// When: the webhook's record, else when the controller first saw it.
    pub time: String,
    /// The revision it was rolled back to.
    pub rollback_to: Option<i64>,
    /// When every stage was seen running that revision, deployed.
    pub rolled_back: Option<String>,
    /// When the abort was lifted (`kubectl promotion retry`).
    pub retried: Option<String>,
}

#[skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StageRecord {
    pub name: String,
    /// When the controller first saw the stage reached (its status entry).
    pub reached: String,
    /// When the stage was reported deployed (`lastSuccessfulAppliedTime`).
    pub deployed: Option<String>,
}

impl Record {
    pub fn rollout(&self) -> RolloutId {
        RolloutId {
            stages_hash: self.stages_hash.clone(),
            profile_spec_hash: self.profile_spec_hash.clone(),
        }
    }

    /// "complete", "superseded by 4", "rolled back to 2 by alice", "aborted", "in progress".
    pub fn outcome(&self) -> String {
        let aborted = self.aborted.as_ref().filter(|a| a.retried.is_none());
        match (self.superseded_by, aborted, &self.completed) {
            (Some(n), _, _) => format!("superseded by {n}"),
            (None, Some(a), _) => {
                let what = match (a.rollback_to, &a.rolled_back) {
                    (Some(n), Some(_)) => format!("rolled back to {n}"),
                    (Some(n), None) => format!("rolling back to {n}"),
                    (None, _) => "aborted".to_string(),
                };
                match &a.by {
                    Some(by) => format!("{what} by {by}"),
                    None => what,
                }
            }
            (None, None, Some(_)) => "complete".to_string(),
            (None, None, None) => "in progress".to_string(),
        }
    }
}

/// One revision as read from its ControllerRevision.
#[derive(Clone, Debug, PartialEq)]
pub struct Revision {
    pub name: String,
    pub number: i64,
    /// `data`: `{"profileSpec", "stages"}`.
    pub data: Value,
    /// `None` when the annotation is missing or unreadable.
    pub record: Option<Record>,
}

impl Revision {
    /// A ControllerRevision as the API server returns it.
    pub fn decode(object: &Value) -> Option<Revision> {
        Some(Revision {
            name: object.pointer("/metadata/name")?.as_str()?.to_string(),
            number: object.get("revision")?.as_i64()?,
            data: object.get("data").cloned().unwrap_or(Value::Null),
            record: object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(RECORD_ANNOTATION))
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str(text).ok()),
        })
    }

    pub fn profile_spec(&self) -> Option<&Value> {
        self.data.get("profileSpec")
    }
}

/// A write [`plan`] asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// Create this ControllerRevision.
    Create(Value),
    /// Set the record annotation of revision `name` (a merge patch); with `number`, also its
    /// `revision` (a rollout that comes back is renumbered as the newest, as Deployments do).
    Record {
        name: String,
        record: Box<Record>,
        number: Option<i64>,
    },
    /// Delete revision `name` (pruned).
    Delete { name: String },
}

/// The name of the revision of `rollout` of the promotion `name` with UID `uid`: the promotion's
/// name and a digest of its UID and the rollout, so that creating it twice finds it.
pub fn revision_name(name: &str, uid: &str, rollout: &RolloutId) -> String {
    let digest = Sha256::digest(
        format!(
            "{uid}\n{}\n{}",
            rollout.stages_hash, rollout.profile_spec_hash
        )
        .as_bytes(),
    );
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    // A DNS subdomain (253 characters); the promotion's name is one already.
    let prefix: String = name.chars().take(240).collect();
    format!("{}-{hex}", prefix.trim_end_matches(['-', '.']))
}

/// The writes that bring `revisions` (this promotion's) up to date with `promotion` as stored,
/// at `now` (RFC 3339), keeping at most `limit` revisions in `namespace`. A promotion seen for
/// the first time (adopted mid-rollout, no revision yet) also gets `adopted`: a revision for
/// each configuration its stage profiles run other than its spec's
/// (`crate::reconcile::adoption::adopted`).
pub fn plan(
    promotion: &Value,
    revisions: &[Revision],
    adopted: Vec<Revision>,
    limit: usize,
    namespace: &str,
    now: &str,
) -> Vec<Write> {
    let mut writes = Vec::new();
    let (Some(name), Some(uid)) = (
        promotion.pointer("/metadata/name").and_then(Value::as_str),
        promotion.pointer("/metadata/uid").and_then(Value::as_str),
    ) else {
        return writes;
    };
    // The rollout the status is at: nothing is recorded before the controller started it.
    let Some(rollout) = RolloutId::in_status(promotion) else {
        return writes;
    };
    if identity_of(promotion).ok().map(|i| i.id).as_ref() != Some(&rollout) {
        // The spec moved on and the status has not followed yet: the next reconcile restarts.
        return writes;
    }
    let mut adopted_writes = Vec::new();
    let mut revisions: Vec<Revision> = revisions.to_vec();
    if revisions.is_empty() {
        for revision in adopted {
            adopted_writes.push(Write::Create(controller_revision(
                promotion,
                &revision.name,
                namespace,
                revision.number,
                revision.record.as_ref().unwrap_or(&Record::default()),
                revision.data.clone(),
            )));
            revisions.push(revision);
        }
    }
    writes.extend(adopted_writes);
    let newest = revisions.iter().map(|r| r.number).max().unwrap_or(0);
    let current = revisions
        .iter()
        .position(|r| r.record.as_ref().map(Record::rollout).as_ref() == Some(&rollout));
    let (current_name, current_number) = match current {
        Some(i) => {
            // A rollout that comes back (the spec set back to it) is a new run of that
            // revision, renumbered as the newest, as Deployments renumber theirs.
            let comes_back = revisions[i].number < newest;
            let before = revisions[i].record.clone().unwrap_or_default();
            let base = if comes_back {
                fresh_record(promotion, &rollout, now)
            } else {
                before.clone()
            };
            let record = progress(promotion, base, &rollout, now);
            let number = comes_back.then_some(newest + 1);
            let r = &mut revisions[i];
            if record != before || number.is_some() {
                writes.push(Write::Record {
                    name: r.name.clone(),
                    record: Box::new(record.clone()),
                    number,
                });
            }
            r.record = Some(record);
            if let Some(n) = number {
                r.number = n;
            }
            (r.name.clone(), r.number)
        }
        None => {
            let number = newest + 1;
            let record = progress(
                promotion,
                fresh_record(promotion, &rollout, now),
                &rollout,
                now,
            );
            let revision_name = revision_name(name, uid, &rollout);
            writes.push(Write::Create(controller_revision(
                promotion,
                &revision_name,
                namespace,
                number,
                &record,
                revision_data(promotion),
            )));
            revisions.push(Revision {
                name: revision_name.clone(),
                number,
                data: revision_data(promotion),
                record: Some(record),
            });
            (revision_name, number)
        }
    };
    // Every other rollout still open was replaced by this one.
    for r in revisions.iter_mut().filter(|r| r.name != current_name) {
        let Some(record) = r.record.as_mut() else {
            continue;
        };
        if record.superseded_by.is_none() && r.number < current_number {
            record.superseded_by = Some(current_number);
            record.superseded = Some(now.to_string());
            writes.push(Write::Record {
                name: r.name.clone(),
                record: Box::new(record.clone()),
                number: None,
            });
        }
    }
    writes.extend(prune(&revisions, &current_name, limit));
    writes
}

/// The oldest revisions beyond `limit`, but never the current one, one a stage still runs (the
/// newest that reached it), nor the newest complete one.
fn prune(revisions: &[Revision], current: &str, limit: usize) -> Vec<Write> {
    let mut by_age: Vec<&Revision> = revisions.iter().collect();
    by_age.sort_by_key(|r| std::cmp::Reverse(r.number));
    let mut protected: BTreeSet<&str> = BTreeSet::new();
    protected.insert(current);
    if let Some(complete) = by_age
        .iter()
        .find(|r| r.record.as_ref().is_some_and(|rec| rec.completed.is_some()))
    {
        protected.insert(&complete.name);
    }
    let mut stages_seen: BTreeSet<&str> = BTreeSet::new();
    for r in &by_age {
        for stage in r.record.iter().flat_map(|rec| rec.stages.iter()) {
            if stages_seen.insert(&stage.name) {
                protected.insert(&r.name);
            }
        }
    }
    let mut kept = 0;
    let mut writes = Vec::new();
    for r in by_age {
        if kept < limit || protected.contains(r.name.as_str()) {
            kept += 1;
            continue;
        }
        writes.push(Write::Delete {
            name: r.name.clone(),
        });
    }
    writes
}

/// `record` with its abort, the stages the status shows reached, and completion. While the
/// run is rolled back the status describes the rollback, not the run: its stages stay as they
/// were.
fn progress(promotion: &Value, mut record: Record, rollout: &RolloutId, now: &str) -> Record {
    let aborted = crate::abort::aborted(promotion).filter(|a| a.applies_to(rollout));
    match (&aborted, record.aborted.as_mut()) {
        (Some(a), previous) => {
            let fresh =
                previous.is_none_or(|p| p.retried.is_some() || p.rollback_to != a.rollback_to());
            if fresh {
                record.aborted = Some(AbortOutcome {
                    by: a.record.as_ref().map(|r| r.user.clone()),
                    time: a
                        .record
                        .as_ref()
                        .map_or_else(|| now.to_string(), |r| r.time.clone()),
                    rollback_to: a.rollback_to(),
                    ..AbortOutcome::default()
                });
            }
            if let (Some(outcome), Some(n)) = (record.aborted.as_mut(), a.rollback_to()) {
                if outcome.rolled_back.is_none() && rolled_back(promotion, n) {
                    outcome.rolled_back = Some(now.to_string());
                }
                return record;
            }
        }
        (None, Some(previous)) if previous.retried.is_none() => {
            previous.retried = Some(now.to_string());
        }
        (None, _) => {}
    }
    let statuses = promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let known: BTreeMap<String, StageRecord> = record
        .stages
        .drain(..)
        .map(|s| (s.name.clone(), s))
        .collect();
    for stage in &statuses {
        let Some(name) = stage.get("name").and_then(Value::as_str) else {
            continue;
        };
        let deployed = stage
            .get("lastSuccessfulAppliedTime")
            .and_then(Value::as_str)
            .map(String::from);
        let mut entry = known.get(name).cloned().unwrap_or(StageRecord {
            name: name.to_string(),
            reached: now.to_string(),
            deployed: None,
        });
        if entry.deployed.is_none() {
            entry.deployed = deployed;
        }
        record.stages.push(entry);
    }
    if record.completed.is_none() && complete(promotion) {
        record.completed = Some(now.to_string());
    }
    record
}

/// Every stage the status lists runs revision `n`, deployed.
fn rolled_back(promotion: &Value, n: i64) -> bool {
    let stages = promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    crate::abort::all_rolled_back(
        stages.map(|s| s.get("currentStatusDescription").and_then(Value::as_str)),
        n,
    )
}

/// The last stage passed its gate: the status says the promotion is complete (upstream's
/// "Successfully provisioned" on the last stage, which it writes once that stage is done).
fn complete(promotion: &Value) -> bool {
    let last = promotion
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .and_then(|s| s.last())
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str);
    let Some(last) = last else {
        return false;
    };
    promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| {
            s.get("name").and_then(Value::as_str) == Some(last)
                && s.get("currentStatusDescription")
                    .and_then(Value::as_str)
                    .is_some_and(|d| d.starts_with(crate::status::descriptions::PROMOTED))
        })
}

/// The record of a run of `rollout` that starts now: started by whom the webhook recorded
/// changing the spec to it (then, at that time), else at `now` by someone unrecorded.
fn fresh_record(promotion: &Value, rollout: &RolloutId, now: &str) -> Record {
    let change = spec_change_record(promotion)
        .ok()
        .flatten()
        .filter(|r| r.rollout.as_ref() == Some(rollout));
    Record {
        stages_hash: rollout.stages_hash.clone(),
        profile_spec_hash: rollout.profile_spec_hash.clone(),
        started_by: change.as_ref().map(|c| c.user.clone()),
        restored_revision: change.as_ref().and_then(|c| c.restored_revision),
        started: change.map_or_else(|| now.to_string(), |c| c.time),
        ..Record::default()
    }
}

/// What a revision keeps of the promotion: the configuration and the stages.
fn revision_data(promotion: &Value) -> Value {
    json!({
        "profileSpec": promotion.pointer("/spec/profileSpec").cloned().unwrap_or(Value::Null),
        "stages": promotion.pointer("/spec/stages").cloned().unwrap_or(Value::Null),
    })
}

fn controller_revision(
    promotion: &Value,
    name: &str,
    namespace: &str,
    number: i64,
    record: &Record,
    data: Value,
) -> Value {
    let promotion_name = promotion
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let uid = promotion
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {PROMOTION_UID_LABEL: uid},
            "annotations": {
                PROMOTION_NAME_ANNOTATION: promotion_name,
                RECORD_ANNOTATION: serde_json::to_string(record).unwrap_or_default(),
            },
        },
        "revision": number,
        "data": data,
    })
}

/// The revision a rollback of the rollout `current` goes back to: `to`, or by default the newest
/// revision that completed. The one rule, for the plugin (which refuses up front) and the
/// controller (which refuses a request that got past it).
///
/// Only a revision that **completed** is applied at once: its configuration passed every
/// stage's gate, so applying it again to every stage skips no verification. A revision that
/// never completed is refused (it would reach stages it was never verified on without their
/// gates); so is one with other stages (which clusters a stage means differs), the current
/// rollout itself, and one whose record is unreadable.
pub fn rollback_target<'a>(
    revisions: &'a [Revision],
    current: &RolloutId,
    to: Option<i64>,
) -> Result<&'a Revision, String> {
    let Some(n) = to else {
        return revisions
            .iter()
            .filter(|r| {
                r.record.as_ref().is_some_and(|rec| {
                    rec.completed.is_some()
                        && &rec.rollout() != current
                        && rec.stages_hash == current.stages_hash
                })
            })
            .max_by_key(|r| r.number)
            .ok_or_else(|| {
                "no earlier rollout of these stages completed: there is no verified \
                 configuration to roll back to (`kubectl promotion abort` stops the rollout \
                 where it is)"
                    .to_string()
            });
    };
    let Some(revision) = revisions.iter().find(|r| r.number == n) else {
        let mut kept: Vec<i64> = revisions.iter().map(|r| r.number).collect();
        kept.sort_unstable();
        return Err(format!(
            "revision {n} is not in this promotion's history (kept: {})",
            if kept.is_empty() {
                "none".to_string()
            } else {
                kept.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
    };
    let Some(record) = &revision.record else {
        return Err(format!(
            "revision {n}'s record cannot be read: whether it completed is unknown"
        ));
    };
    if &record.rollout() == current {
        return Err(format!(
            "revision {n} is the current rollout: there is nothing to roll back"
        ));
    }
    if record.stages_hash != current.stages_hash {
        return Err(format!(
            "revision {n} has other stages than the current spec (stagesHash {} instead of {}): \
             which clusters each stage means differs, so it cannot be applied stage by stage; \
             set the spec back to it instead (`kubectl promotion history NAME --revision {n} -o \
             yaml` prints it) and it walks the pipeline",
            record.stages_hash, current.stages_hash
        ));
    }
    if record.completed.is_none() {
        let reached: Vec<&str> = record.stages.iter().map(|s| s.name.as_str()).collect();
        return Err(format!(
            "revision {n} never completed (it reached {}): a rollback applies at once only a \
             configuration verified on every stage; set the spec back to it instead and it \
             walks the gates",
            if reached.is_empty() {
                "no stage".to_string()
            } else {
                reached.join(", ")
            }
        ));
    }
    Ok(revision)
}

#[cfg(test)]
pub(crate) mod tests;
