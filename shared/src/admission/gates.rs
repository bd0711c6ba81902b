//! The manual gates of a ClusterPromotion as admission sees them, read from the raw JSON of the
//! request objects, and the few other object accessors admission needs. Every accessor tolerates
//! any shape: a field of the wrong type reads as absent, so admission logic never fails on odd
//! input (the validation engine is what reports such input). The rules themselves (when an
//! approval resets, when it has been used) are [`crate::approval`]'s.

use std::collections::HashMap;

use super::audit::{approval_records_in, credited};
use crate::approval::{self, Used};
use crate::rollout::{self, RolloutId};
use crate::tree::{field, pointer, tree_of, Tree};

/// A stage's manual gate as the admission logic needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gate<'a> {
    pub index: usize,
    pub name: &'a str,
    /// `trigger.manual.approved` is exactly `true`.
    pub approved: bool,
    /// `trigger.manual.approved` is exactly `false`: withdrawn, or never given.
    pub refused: bool,
    /// Sveltos clears `approved` after promoting ([`approval::resets_automatically`]).
    pub resets: bool,
}

fn stages<'a, 'ctx>(object: &'a Tree<'ctx>) -> &'a [Tree<'ctx>] {
    pointer(object, "/spec/stages")
        .and_then(Tree::as_array)
        .unwrap_or(&[])
}

fn name_of<'a>(stage: &'a Tree) -> Option<&'a str> {
    field(stage, "name")?.as_str()
}

/// Gates of every stage that has a string name, in spec order.
pub(crate) fn gates<'a>(object: &'a Tree) -> Vec<Gate<'a>> {
    stages(object)
        .iter()
        .enumerate()
        .filter_map(|(index, stage)| {
            let name = name_of(stage)?;
            let manual = pointer(stage, "/trigger/manual");
            let flag = |key| manual.and_then(|m| field(m, key)).and_then(Tree::as_bool);
            Some(Gate {
                index,
                name,
                approved: flag("approved") == Some(true),
                refused: flag("approved") == Some(false),
                resets: approval::resets_automatically(flag("automaticReset")),
            })
        })
        .collect()
}

/// Gates by stage name; the first stage of a name wins (the API server rejects duplicates, since
/// `stages` is a list-map keyed by name).
pub(crate) fn gates_by_name<'a>(object: &'a Tree) -> HashMap<&'a str, Gate<'a>> {
    let mut by_name = HashMap::new();
    for gate in gates(object) {
        by_name.entry(gate.name).or_insert(gate);
    }
    by_name
}

/// Stages whose `approved` is turned on by this request: true in `new`, not true in `old` (every
/// approved stage on CREATE).
pub(crate) fn newly_approved<'a>(old: Option<&Tree>, new: &'a Tree) -> Vec<Gate<'a>> {
    let before = old.map(gates_by_name).unwrap_or_default();
    gates(new)
        .into_iter()
        .filter(|gate| gate.approved && !before.get(gate.name).is_some_and(|g| g.approved))
        .collect()
}

/// Stages whose approval this request withdraws: `approved` true in `old`, exactly `false` in
/// `new` (what `kubectl promotion approve --revoke` writes). An approval left out (a manifest
/// applied without it, or Sveltos' own reset) is not a revocation: nobody said no.
pub(crate) fn newly_revoked<'a>(old: Option<&Tree>, new: &'a Tree) -> Vec<Gate<'a>> {
    let Some(old) = old else {
        return Vec::new();
    };
    let before = gates_by_name(old);
    gates(new)
        .into_iter()
        .filter(|gate| gate.refused && before.get(gate.name).is_some_and(|g| g.approved))
        .collect()
}

/// `metadata.generation`, when it is a number.
pub(crate) fn generation(object: &Tree) -> Option<i64> {
    pointer(object, "/metadata/generation").and_then(Tree::as_i64)
}

/// Names of the stages whose approval this request turns on.
pub fn newly_approved_stages(
    old: Option<&serde_json::Value>,
    new: &serde_json::Value,
) -> Vec<String> {
    let old = old.map(tree_of);
    newly_approved(old.as_ref(), &tree_of(new))
        .into_iter()
        .map(|gate| gate.name.to_string())
        .collect()
}

/// The rollout identity `object`'s status carries, when it has both hashes.
pub(crate) fn status_rollout(object: &Tree) -> Option<RolloutId> {
    let text = |key: &str| {
        pointer(object, "/status")
            .and_then(|status| field(status, key))
            .and_then(Tree::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Some(RolloutId {
        stages_hash: text("stagesHash")?,
        profile_spec_hash: text("profileSpecHash")?,
    })
}

/// What the approval on the stage `name` of `object` has been used for, per `object`'s status
/// and the rollout the approval was recorded in ([`approval::same_rollout`]).
pub(crate) fn approval_used<'a>(object: &'a Tree, name: &str) -> Option<Used<'a>> {
    let names: Vec<&str> = stages(object).iter().filter_map(name_of).collect();
    let index = names.iter().position(|n| *n == name)?;
    let status_id = status_rollout(object);
    let same_rollout = match &status_id {
        None => true,
        Some(status_id) => {
            let records = approval_records_in(object).unwrap_or_default();
            let recorded = records
                .get(name)
                .filter(|record| credited(record, generation(object)))
                .and_then(|record| record.rollout.as_ref());
            // Hashed only when the record does not decide.
            let status_is_specs =
                recorded.is_none() && rollout::identity(object).is_ok_and(|i| i.id == *status_id);
            approval::same_rollout(Some(status_id), recorded, status_is_specs)
        }
    };
    let statuses = pointer(object, "/status/stages")
        .and_then(Tree::as_array)
        .unwrap_or(&[]);
    let reached: Vec<&str> = statuses.iter().filter_map(name_of).collect();
    let last_description = names.last().and_then(|last| {
        statuses
            .iter()
            .find(|s| name_of(s) == Some(*last))
            .and_then(|s| field(s, "currentStatusDescription"))
            .and_then(Tree::as_str)
    });
    approval::used(&names, index, same_rollout, &reached, last_description)
}

/// `metadata.deletionTimestamp` is set: the object is being deleted and only finalizer removal is
/// left, which admission must never block.
pub fn is_deleting(object: &Tree) -> bool {
    pointer(object, "/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gates_read_raw_values_only() {
        let object = json!({"spec": {"stages": [
            {"name": "a", "trigger": {"manual": {"approved": true}}},
            {"name": "b", "trigger": {"manual": {"approved": "true", "automaticReset": false}}},
            {"name": 7},
            {"name": "c", "trigger": {"auto": {}}},
        ]}});
        let tree = tree_of(&object);
        let gates = gates(&tree);
        assert_eq!(gates.len(), 3);
        assert!(gates[0].approved && gates[0].resets);
        assert!(!gates[1].approved && !gates[1].resets);
        assert_eq!((gates[2].index, gates[2].name), (3, "c"));
    }

    #[test]
    fn approval_use_follows_spec_order_and_status() {
        let object = json!({
            "spec": {"stages": [{"name": "dev"}, {"name": "staging"}, {"name": "prod"}]},
            "status": {"stages": [{"name": "dev"}, {"name": "staging"}]}
        });
        let tree = tree_of(&object);
        assert_eq!(
            approval_used(&tree, "dev"),
            Some(Used::PromotedTo("staging"))
        );
        assert_eq!(approval_used(&tree, "staging"), None);
        assert_eq!(approval_used(&tree, "prod"), None);
        assert_eq!(approval_used(&tree, "missing"), None);
        let done = json!({
            "spec": {"stages": [{"name": "dev"}, {"name": "prod"}]},
            "status": {"stages": [{"name": "dev"}, {"name": "prod",
                "currentStatusDescription": "Successfully provisioned (2026-02-16T07:38:02Z)"}]}
        });
        assert_eq!(
            approval_used(&tree_of(&done), "prod"),
            Some(Used::Completed)
        );
    }

    #[test]
    fn newly_approved_compares_by_name() {
        let old = json!({"spec": {"stages": [
            {"name": "a", "trigger": {"manual": {"approved": true}}},
            {"name": "b", "trigger": {"manual": {"approved": false}}},
        ]}});
        let new = json!({"spec": {"stages": [
            {"name": "b", "trigger": {"manual": {"approved": true}}},
            {"name": "a", "trigger": {"manual": {"approved": true}}},
            {"name": "c", "trigger": {"manual": {"approved": true}}},
        ]}});
        assert_eq!(newly_approved_stages(Some(&old), &new), ["b", "c"]);
        assert_eq!(newly_approved_stages(None, &new), ["b", "a", "c"]);
    }
}
