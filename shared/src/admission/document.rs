//! Read-only views into the raw JSON of a ClusterPromotion. Every accessor tolerates any shape:
//! a field of the wrong type reads as absent, so admission logic never fails on odd input (the
//! validation engine is what reports such input).

use std::collections::HashMap;

use crate::tree::{field, pointer, same, tree_of, Object, Tree};

/// A stage's manual gate as the admission logic needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gate<'a> {
    pub index: usize,
    pub name: &'a str,
    /// `trigger.manual.approved` is exactly `true`.
    pub approved: bool,
    /// `trigger.manual.automaticReset` is not exactly `false` (absent means the CRD default,
    /// `true`).
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
                resets: flag("automaticReset") != Some(false),
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

fn profile_spec<'a, 'ctx>(object: &'a Tree<'ctx>) -> Option<&'a Tree<'ctx>> {
    match pointer(object, "/spec/profileSpec") {
        // Absent, null and `{}` all mean "no profile fields" to Sveltos (and hash the same).
        Some(Tree::Object(map)) if map.is_empty() => None,
        Some(Tree::Null) | None => None,
        Some(value) => Some(value),
    }
}

/// `spec.profileSpec` differs as JSON values (key order and formatting do not matter). A change
/// makes Sveltos restart the pipeline: a new rollout.
pub fn profile_spec_changed(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    profile_spec_changed_tree(&tree_of(old), &tree_of(new))
}

/// [`profile_spec_changed`] on parsed trees.
pub fn profile_spec_changed_tree(old: &Tree, new: &Tree) -> bool {
    match (profile_spec(old), profile_spec(new)) {
        (None, None) => false,
        (Some(a), Some(b)) => !same(a, b),
        _ => true,
    }
}

/// For the stage `name` in `object`: the stage after it, if `status.stages` says it is reached.
pub(crate) fn next_stage_reached<'a>(object: &'a Tree, name: &str) -> Option<&'a str> {
    let stages = stages(object);
    let position = stages.iter().position(|s| name_of(s) == Some(name))?;
    let next = name_of(stages.get(position + 1)?)?;
    let reached = pointer(object, "/status/stages")
        .and_then(Tree::as_array)
        .is_some_and(|list| list.iter().any(|s| name_of(s) == Some(next)));
    reached.then_some(next)
}

pub(crate) fn annotations<'a, 'ctx>(object: &'a Tree<'ctx>) -> Option<&'a Object<'ctx>> {
    pointer(object, "/metadata/annotations")?.as_object()
}

pub(crate) fn annotation<'a, 'ctx>(object: &'a Tree<'ctx>, key: &str) -> Option<&'a Tree<'ctx>> {
    annotations(object)?.get(key)
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
    fn profile_spec_comparison_is_semantic() {
        let a = json!({"spec": {"profileSpec": {"syncMode": "Continuous", "tier": 100}}});
        let b = json!({"spec": {"profileSpec": {"tier": 100, "syncMode": "Continuous"}}});
        let c = json!({"spec": {"profileSpec": {"tier": 101, "syncMode": "Continuous"}}});
        assert!(!profile_spec_changed(&a, &b));
        assert!(profile_spec_changed(&a, &c));
        let absent = json!({"spec": {}});
        let empty = json!({"spec": {"profileSpec": {}}});
        let null = json!({"spec": {"profileSpec": null}});
        assert!(!profile_spec_changed(&absent, &empty));
        assert!(!profile_spec_changed(&null, &empty));
        assert!(profile_spec_changed(&absent, &a));
    }

    #[test]
    fn next_stage_reached_follows_spec_order_and_status() {
        let object = json!({
            "spec": {"stages": [{"name": "dev"}, {"name": "staging"}, {"name": "prod"}]},
            "status": {"stages": [{"name": "dev"}, {"name": "staging"}]}
        });
        let tree = tree_of(&object);
        assert_eq!(next_stage_reached(&tree, "dev"), Some("staging"));
        assert_eq!(next_stage_reached(&tree, "staging"), None);
        assert_eq!(next_stage_reached(&tree, "prod"), None);
        assert_eq!(next_stage_reached(&tree, "missing"), None);
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
