//! Audit annotations may only change the way the mutation changes them, for the user making the
//! request. Anything else (a record written for another user, for a stage this request does not
//! approve, a backdated time, a removed or edited record, an unknown key under the prefix) is a
//! forgery and the request is rejected.
//!
//! The check accepts the mutation's own output, so it gives the same answer before the mutation
//! (mutating webhook, on the client's object) and after it (validating webhook, on the final
//! object), and under reinvocation.

use std::collections::BTreeSet;

use super::audit::{
    annotations, approval_records_in, reset_flip_records_in, spec_change_record_in,
    steer_record_in, steer_record_matches, steer_request_in, StageRecords, SteerRecord,
};
use super::gates::{generation, newly_approved, newly_revoked};
use super::mutation::{marked, marks, reset_flips, revoked_approval};
use super::removed::{removed_approvals_tree, RemovalCause};
use super::{
    annotation_path, groups, username, ApprovalRecord, UserInfo, Violation, APPROVALS_ANNOTATION,
    AUDIT_PREFIX, RESET_FLIPS_ANNOTATION, SPEC_CHANGE_ANNOTATION,
};
use crate::tree::{tree_of, Tree};
use chrono::{DateTime, Utc};

const FORGED: &str = "audit-forged";

/// Violations for every audit annotation that `new` changes compared with `old` (`None` on
/// CREATE) in a way the mutation for this `user` at `now` would not.
pub fn check_audit_integrity(
    old: Option<&serde_json::Value>,
    new: &serde_json::Value,
    user: &UserInfo,
    now: DateTime<Utc>,
) -> Vec<Violation> {
    let old = old.map(tree_of);
    check_audit_integrity_tree(old.as_ref(), &tree_of(new), user, now)
}

/// [`check_audit_integrity`] on parsed trees.
pub fn check_audit_integrity_tree(
    old: Option<&Tree>,
    new: &Tree,
    user: &UserInfo,
    now: DateTime<Utc>,
) -> Vec<Violation> {
    let before = old.and_then(annotations);
    let after = annotations(new);
    let keys: BTreeSet<&str> = [before, after]
        .into_iter()
        .flatten()
        .flat_map(|map| map.keys())
        .filter(|key| key.starts_with(AUDIT_PREFIX))
        .collect();

    let mut violations = Vec::new();
    for key in keys {
        let old_value = before.and_then(|m| m.get(key));
        let new_value = after.and_then(|m| m.get(key));
        if old_value == new_value {
            continue;
        }
        let mut check = Check {
            old,
            new,
            user,
            now,
            path: annotation_path(key),
            violations: &mut violations,
        };
        if new_value.is_none() {
            check.forged(format!(
                "the audit record was removed; annotations under {AUDIT_PREFIX} are kept by \
                 the promotion webhook and cannot be removed (keep them as read from the server)"
            ));
            continue;
        }
        match key {
            APPROVALS_ANNOTATION => check.approvals(),
            SPEC_CHANGE_ANNOTATION => check.spec_change(),
            RESET_FLIPS_ANNOTATION => check.reset_flips(),
            crate::pause::PAUSE_RECORD_ANNOTATION => check.steer::<crate::pause::PauseRecord>(),
            crate::abort::ABORT_RECORD_ANNOTATION => check.steer::<crate::abort::AbortRecord>(),
            _ => check.forged(format!(
                "unknown audit annotation; keys under {AUDIT_PREFIX} are written only by the promotion webhook"
            )),
        }
    }
    violations
}

/// The check of one audit annotation that a request changes: the request (the object before,
/// `None` on CREATE, and after; who makes it; when), the annotation's field path, and where its
/// violations go.
struct Check<'a, 'ctx> {
    old: Option<&'a Tree<'ctx>>,
    new: &'a Tree<'ctx>,
    user: &'a UserInfo,
    now: DateTime<Utc>,
    path: String,
    violations: &'a mut Vec<Violation>,
}

impl Check<'_, '_> {
    /// The annotation is not as the mutation writes it, for `problem`.
    fn forged(&mut self, problem: String) {
        self.violations
            .push(Violation::new(FORGED, self.path.clone(), problem));
    }

    fn approvals(&mut self) {
        let Some(changed) = self.changed_stage_records(approval_records_in, "approval record")
        else {
            return;
        };
        let (old, new) = (self.old, self.new);
        let approving: BTreeSet<&str> = newly_approved(old, new).iter().map(|g| g.name).collect();
        let revoking: BTreeSet<&str> = newly_revoked(old, new).iter().map(|g| g.name).collect();
        let stored_generation = old.and_then(generation);
        let stored_records = old
            .and_then(|old| approval_records_in(old).ok())
            .unwrap_or_default();
        // The approvals this request takes away without revoking them, as the mutation marks
        // their records (the same list before and after the mutation: see `removed`).
        let removals: Vec<(String, RemovalCause)> = old
            .map(|old| removed_approvals_tree(old, new))
            .unwrap_or_default()
            .into_iter()
            .filter(|r| !revoking.contains(r.stage.as_str()))
            .map(|r| (r.stage, r.cause))
            .collect();
        for (stage, stored, record) in changed {
            let writes = approving.contains(stage.as_str()) || revoking.contains(stage.as_str());
            // The mutation carries the record of an approval that stays on to the next
            // generation; nothing else about it may change. (Only the webhook's credit of the
            // record depends on it, and a carried record that does not match the object's
            // generation credits nobody.)
            let carried = stored.as_ref().is_some_and(|stored| {
                stored.generation.is_some()
                    && stored.generation == stored_generation
                    && record.generation == stored_generation.map(|g| g + 1)
                    && ApprovalRecord {
                        generation: stored.generation,
                        ..record.clone()
                    } == *stored
            });
            // The mutation marks the record of a stage whose approval this request takes away
            // (who, when, how; superseded when the record was not the approval's); nothing
            // else about it may change.
            let marked = stored.as_ref().is_some_and(|stored| {
                removals.iter().any(|(removed, cause)| {
                    *removed == stage
                        && marks(stored, stored_generation)
                        && ApprovalRecord {
                            removed: stored.removed.clone(),
                            superseded: stored.superseded,
                            ..record.clone()
                        } == *stored
                        && record.superseded
                            == marked(stored, stored_generation, cause, self.user, self.now)
                                .superseded
                        && record
                            .removed
                            .as_ref()
                            .is_some_and(|r| r.matches_request(cause, self.user, self.now))
                })
            });
            if (carried || marked) && !writes {
                continue;
            }
            let problem = if !writes {
                Some(format!(
                    "the approval record of stage {stage:?} was written by the client, but this \
                     request does not approve that stage (nor revoke its approval, nor take it \
                     away); only the promotion webhook writes audit records"
                ))
            } else {
                let author = Author {
                    user: &record.user,
                    groups: Some(&record.groups),
                    time: &record.time,
                };
                author
                    .forged(
                        &format!("the approval record of stage {stage:?}"),
                        self.user,
                        self.now,
                    )
                    .or_else(|| {
                        let revokes = revoking.contains(stage.as_str());
                        let withdrawn = revokes
                            .then(|| revoked_approval(&stored_records, &stage, stored_generation))
                            .flatten();
                        written_fields(&stage, &record, revokes, withdrawn.as_ref())
                    })
            };
            if let Some(problem) = problem {
                self.forged(problem);
            }
        }
    }

    /// A steering record (pause, abort) may only be written by a request that changes its
    /// annotation, for the requesting user, now, saying what the request leaves.
    fn steer<R: SteerRecord>(&mut self) {
        let request = steer_request_in::<R>(self.new);
        if self.old.and_then(steer_request_in::<R>) == request {
            self.forged(format!(
                "the record was written by the client, but this request neither {}; only the \
                 promotion webhook writes audit records",
                R::WHAT
            ));
            return;
        }
        let record = match steer_record_in::<R>(self.new) {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(e) => {
                self.forged(e.to_string());
                return;
            }
        };
        if !steer_record_matches(&record, request, self.user, self.now) {
            self.forged(format!(
                "the record does not record this request (by {:?}, now, {} {}): only the \
                 promotion webhook writes audit records",
                username(self.user),
                if request.is_some() {
                    "setting"
                } else {
                    "removing"
                },
                R::REQUEST
            ));
        }
    }

    /// Flip records may only be written for a stage whose `automaticReset` this request turns
    /// back to `true`, for the requesting user, now.
    fn reset_flips(&mut self) {
        let Some(changed) =
            self.changed_stage_records(reset_flip_records_in, "automaticReset record")
        else {
            return;
        };
        let flipping: BTreeSet<&str> = self
            .old
            .map(|old| reset_flips(old, self.new).iter().map(|g| g.name).collect())
            .unwrap_or_default();
        for (stage, _, record) in changed {
            let problem = if !flipping.contains(stage.as_str()) {
                format!(
                    "the automaticReset record of stage {stage:?} was written by the client, but \
                     this request does not turn that stage's automaticReset from false to true; \
                     only the promotion webhook writes audit records"
                )
            } else if !record.matches_request(self.user, self.now) {
                format!(
                    "the automaticReset record of stage {stage:?} names user {:?} at {:?}, which \
                     is not the user and time of this request",
                    record.user, record.time
                )
            } else {
                continue;
            };
            self.forged(problem);
        }
    }

    fn spec_change(&mut self) {
        let record = match spec_change_record_in(self.new) {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(e) => return self.forged(e.reason),
        };
        let changing = self
            .old
            .is_none_or(|old| crate::rollout::restart(old, self.new).is_some());
        let problem = if !changing {
            Some(
                "the record of the last change that started a new rollout was edited, but this \
                 request does not start a new rollout (it changes neither spec.profileSpec nor \
                 stage names, order or selectors); only the promotion webhook writes audit records"
                    .to_string(),
            )
        } else {
            let author = Author {
                user: &record.user,
                groups: None,
                time: &record.time,
            };
            author.forged(
                "the record of the last change that started a new rollout",
                self.user,
                self.now,
            )
        };
        if let Some(problem) = problem {
            self.forged(problem);
        }
    }

    /// The records of a per-stage audit annotation, read by `read`, that the request writes or
    /// changes: each with its stage and the record stored before (if any). Records that do not
    /// parse, or a stage's record removed, are forgeries (reported here); `None` when the new
    /// records cannot be read at all.
    fn changed_stage_records<R: PartialEq>(
        &mut self,
        read: fn(&Tree) -> StageRecords<R>,
        what: &str,
    ) -> Option<Vec<(String, Option<R>, R)>> {
        let after = match read(self.new) {
            Ok(records) => records,
            Err(e) => {
                self.forged(e.reason);
                return None;
            }
        };
        let mut before = self.old.and_then(|old| read(old).ok()).unwrap_or_default();
        for stage in before.keys().filter(|stage| !after.contains_key(*stage)) {
            self.violations.push(Violation::new(
                FORGED,
                self.path.clone(),
                format!(
                    "the {what} of stage {stage:?} was removed; audit records cannot be removed"
                ),
            ));
        }
        let changed = after
            .into_iter()
            .filter_map(|(stage, record)| {
                let stored = before.remove(&stage);
                (stored.as_ref() != Some(&record)).then_some((stage, stored, record))
            })
            .collect();
        Some(changed)
    }
}

/// Why a record the mutation writes for a request that approves the stage (or, `revokes`,
/// withdraws its approval, `withdrawn` being the record of that approval) is not as it writes
/// it, in the fields beyond its author; `None` when it is.
fn written_fields(
    stage: &str,
    record: &ApprovalRecord,
    revokes: bool,
    withdrawn: Option<&ApprovalRecord>,
) -> Option<String> {
    let what = format!("the approval record of stage {stage:?}");
    if record.revoked != revokes {
        let (says, does) = if revokes {
            ("an approval", "withdraws it")
        } else {
            ("a revocation", "approves it")
        };
        Some(format!("{what} says {says}, but this request {does}"))
    } else if record.superseded || record.removed.is_some() {
        Some(format!(
            "{what} is written by this request, so it can be neither superseded nor removed yet"
        ))
    } else if record.revoked_approval.as_deref() != withdrawn {
        let named = |r: Option<&ApprovalRecord>| match r {
            Some(r) => format!("the approval given by {:?} at {:?}", r.user, r.time),
            None => "no recorded approval".to_string(),
        };
        Some(format!(
            "{what} says it withdraws {}, but the stored records show it withdraws {}",
            named(record.revoked_approval.as_deref()),
            named(withdrawn)
        ))
    } else {
        None
    }
}

/// Who and when a record says wrote it.
struct Author<'a> {
    user: &'a str,
    /// `None` for a record that does not keep the user's groups.
    groups: Option<&'a [String]>,
    time: &'a str,
}

impl Author<'_> {
    /// Why the mutation for `user` at `now` would not have written this author: the first of
    /// user, groups and time that differs, said of `record` (the record as a message names it);
    /// `None` when none does.
    fn forged(&self, record: &str, user: &UserInfo, now: DateTime<Utc>) -> Option<String> {
        if self.user != username(user) {
            Some(format!(
                "{record} names user {:?}, but the request comes from {:?}",
                self.user,
                username(user)
            ))
        } else if let Some(written) = self.groups.filter(|g| *g != groups(user)) {
            Some(format!(
                "{record} lists groups {written:?}, but the requesting user has {:?}",
                groups(user)
            ))
        } else if !super::audit::is_current(self.time, now) {
            Some(format!(
                "{record} has time {:?}, which is not the time of this request",
                self.time
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::test_support::{self, now};
    use crate::admission::{plan_mutation, APPROVAL_REASON_ANNOTATION};
    use serde_json::{json, Value};

    fn user(name: &str) -> UserInfo {
        test_support::user(name, &["ops"])
    }

    fn promotion(approved: bool, chart: &str, annotations: Value) -> Value {
        json!({
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {
                "profileSpec": {"helmCharts": [{"chartVersion": chart}]},
                "stages": [
                    {"name": "staging", "trigger": {"manual": {"approved": approved}}},
                    {"name": "production"}
                ]
            }
        })
    }

    fn record(user: &str, time: &str) -> Value {
        json!({"user": user, "groups": ["ops"], "time": time})
    }

    fn approvals(stage: &str, record: Value) -> String {
        json!({stage: record}).to_string()
    }

    #[test]
    fn the_mutations_own_output_passes() {
        let old = promotion(false, "1", json!({}));
        let new = promotion(true, "2", json!({APPROVAL_REASON_ANNOTATION: "ok"}));
        let plan = plan_mutation(Some(&old), &new, &user("alice"), now());
        let mut mutated = new.clone();
        json_patch::patch(&mut mutated, &plan.patch.0).unwrap();
        assert_eq!(
            check_audit_integrity(Some(&old), &new, &user("alice"), now()),
            []
        );
        assert_eq!(
            check_audit_integrity(Some(&old), &mutated, &user("alice"), now()),
            []
        );
        // A later, unrelated update keeps the records as they are.
        let mut later = mutated.clone();
        later["metadata"]["labels"] = json!({"x": "y"});
        assert_eq!(
            check_audit_integrity(Some(&mutated), &later, &user("bob"), now()),
            []
        );
    }

    #[test]
    fn records_for_someone_else_or_another_stage_are_forged() {
        // alice's request, on an unapproved promotion with no record, that approves staging (or
        // not) and writes a record of its approval by `author` at `time`.
        let check = |approving: bool, author: &str, time: &str| {
            let old = promotion(false, "1", json!({}));
            let trail = approvals("staging", record(author, time));
            let new = promotion(approving, "1", json!({ APPROVALS_ANNOTATION: trail }));
            check_audit_integrity(Some(&old), &new, &user("alice"), now())
        };
        let v = check(true, "bob", "2026-03-01T12:00:00Z");
        assert_eq!(v.len(), 1);
        assert!(v[0].message.contains("\"bob\""), "{}", v[0].message);
        assert_eq!(
            v[0].path,
            "metadata.annotations[audit.kubectl-promotion.dev/approvals]"
        );

        let not_approving = check(false, "alice", "2026-03-01T12:00:00Z");
        assert!(not_approving[0].message.contains("does not approve"));

        let backdated = check(true, "alice", "2025-01-01T00:00:00Z");
        assert!(backdated[0].message.contains("not the time"));
    }

    #[test]
    fn removing_editing_and_unknown_keys_are_forged() {
        let trail = approvals("staging", record("bob", "2026-02-01T00:00:00Z"));
        let old = promotion(false, "1", json!({APPROVALS_ANNOTATION: trail}));
        let removed = promotion(false, "1", json!({}));
        let v = check_audit_integrity(Some(&old), &removed, &user("alice"), now());
        assert!(v[0].message.contains("removed"));

        let emptied = promotion(false, "1", json!({APPROVALS_ANNOTATION: "{}"}));
        let v = check_audit_integrity(Some(&old), &emptied, &user("alice"), now());
        assert!(v[0].message.contains("stage \"staging\" was removed"));

        let garbage = promotion(false, "1", json!({APPROVALS_ANNOTATION: "[1,2]"}));
        assert_eq!(
            check_audit_integrity(Some(&old), &garbage, &user("alice"), now()).len(),
            1
        );

        let unknown = promotion(false, "1", json!({"audit.kubectl-promotion.dev/x": "1"}));
        let v = check_audit_integrity(None, &unknown, &user("alice"), now());
        assert!(v[0].message.contains("unknown audit annotation"));

        let spec = json!({"user": "alice", "time": "2026-03-01T12:00:00Z"}).to_string();
        let edited = promotion(false, "1", json!({SPEC_CHANGE_ANNOTATION: spec.clone()}));
        let v = check_audit_integrity(Some(&removed), &edited, &user("alice"), now());
        assert!(v[0].message.contains("does not start a new rollout"));
        let changed = promotion(false, "2", json!({SPEC_CHANGE_ANNOTATION: spec}));
        assert_eq!(
            check_audit_integrity(Some(&removed), &changed, &user("alice"), now()),
            []
        );
        let v = check_audit_integrity(Some(&removed), &changed, &user("mallory"), now());
        assert!(v[0].message.contains("\"mallory\""));
    }
}
