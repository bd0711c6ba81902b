//! Read-only views into the raw JSON of a ClusterPromotion. Every accessor tolerates any shape:
//! a field of the wrong type reads as absent, so admission logic never fails on odd input (the
//! validation engine is what reports such input).

use std::collections::HashMap;

use serde_json::{Map, Value};

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

fn stages(object: &Value) -> &[Value] {
    object
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Gates of every stage that has a string name, in spec order.
pub(crate) fn gates(object: &Value) -> Vec<Gate<'_>> {
    stages(object)
        .iter()
        .enumerate()
        .filter_map(|(index, stage)| {
            let name = stage.get("name")?.as_str()?;
            let manual = stage.pointer("/trigger/manual");
            Some(Gate {
                index,
                name,
                approved: manual.and_then(|m| m.get("approved")) == Some(&Value::Bool(true)),
                resets: manual.and_then(|m| m.get("automaticReset")) != Some(&Value::Bool(false)),
            })
        })
        .collect()
}

/// Gates by stage name; the first stage of a name wins (the API server rejects duplicates, since
/// `stages` is a list-map keyed by name).
pub(crate) fn gates_by_name(object: &Value) -> HashMap<&str, Gate<'_>> {
    let mut by_name = HashMap::new();
    for gate in gates(object) {
        by_name.entry(gate.name).or_insert(gate);
    }
    by_name
}

/// Stages whose `approved` is turned on by this request: true in `new`, not true in `old` (every
/// approved stage on CREATE).
pub(crate) fn newly_approved<'a>(old: Option<&Value>, new: &'a Value) -> Vec<Gate<'a>> {
    let before = old.map(gates_by_name).unwrap_or_default();
    gates(new)
        .into_iter()
        .filter(|gate| gate.approved && !before.get(gate.name).is_some_and(|g| g.approved))
        .collect()
}

/// Names of the stages whose approval this request turns on.
pub fn newly_approved_stages(old: Option<&Value>, new: &Value) -> Vec<String> {
    newly_approved(old, new)
        .into_iter()
        .map(|gate| gate.name.to_string())
        .collect()
}

fn profile_spec(object: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    match object.pointer("/spec/profileSpec") {
        // Absent, null and `{}` all mean "no profile fields" to Sveltos (and hash the same).
        Some(Value::Object(map)) if map.is_empty() => &EMPTY,
        Some(value) => value,
        None => &EMPTY,
    }
}

/// `spec.profileSpec` differs as JSON values (key order and formatting do not matter). A change
/// makes Sveltos restart the pipeline: a new rollout.
pub fn profile_spec_changed(old: &Value, new: &Value) -> bool {
    profile_spec(old) != profile_spec(new)
}

/// For the stage `name` in `object`: the stage after it, if `status.stages` says it is reached.
pub(crate) fn next_stage_reached<'a>(object: &'a Value, name: &str) -> Option<&'a str> {
    let stages = stages(object);
    let position = stages
        .iter()
        .position(|s| s.get("name").and_then(Value::as_str) == Some(name))?;
    let next = stages.get(position + 1)?.get("name")?.as_str()?;
    let reached = object
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .is_some_and(|list| {
            list.iter()
                .any(|s| s.get("name").and_then(Value::as_str) == Some(next))
        });
    reached.then_some(next)
}

pub(crate) fn annotations(object: &Value) -> Option<&Map<String, Value>> {
    object.pointer("/metadata/annotations")?.as_object()
}

pub(crate) fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    annotations(object)?.get(key)
}

/// `metadata.deletionTimestamp` is set: the object is being deleted and only finalizer removal is
/// left, which admission must never block.
pub fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
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
        let gates = gates(&object);
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
        assert_eq!(next_stage_reached(&object, "dev"), Some("staging"));
        assert_eq!(next_stage_reached(&object, "staging"), None);
        assert_eq!(next_stage_reached(&object, "prod"), None);
        assert_eq!(next_stage_reached(&object, "missing"), None);
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
