//! Every write of a ClusterPromotion — the plugin's approval and revocation, the controller's
//! finalizer, commit, status and annotation clean-up — is built here, one way: a JSON merge patch
//! (RFC 7386) computed from the object exactly as it was read, carrying that object's
//! `metadata.resourceVersion`.
//!
//! The resourceVersion is the guard, and the only one. The API server applies a merge patch to
//! the object it holds and then requires the result's resourceVersion to be the current one, so a
//! write computed from an outdated read fails with `409 Conflict` (`reason: Conflict`, see
//! [`crate::api_error`]) and the writer reads again and decides again. A merge patch always
//! applies; JSON Patch `test` and `remove` operations fail *before* the version is checked, with a
//! `422 Invalid` that carries no cause and cannot be told from a real validation error.
//!
//! `spec.stages` is a list, which a merge patch replaces whole: the list written is the one read,
//! with the one change made, so nothing else is touched (every field is kept as stored, an
//! `automaticReset: false` elsewhere included), and the guard makes sure the list read is still
//! the stored one. The API server records as changed (and gives field ownership of) only the
//! fields whose values differ, so re-sending the others takes nothing from their owners.

use serde_json::{json, Map, Value};

use crate::admission::used_approvals::{self, USED_APPROVALS_ANNOTATION};
use crate::gate::Gate;
use crate::model::FINALIZER;
use crate::promoting::{Promoting, PROMOTING_ANNOTATION};

/// Field manager the plugin sends with its writes.
pub const FIELD_MANAGER: &str = "kubectl-promotion";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// Without the version read there is no guard, and an unguarded write is never sent.
    #[error("the object read has no metadata.resourceVersion to guard the write with")]
    NoResourceVersion,
    #[error("the object has no spec.stages list")]
    NoStages,
    #[error("spec.stages[{index}] is not stage {stage:?}")]
    NotAtIndex { stage: String, index: usize },
    #[error("stage {stage:?} (spec.stages[{index}]) has no trigger.manual to approve")]
    NotManual { stage: String, index: usize },
}

/// One guarded write: the merge patch, and what a read of the object shows once it is stored
/// (JSON Pointers and values), so that a write whose answer never came can be checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub patch: Value,
    pub shows: Vec<(String, Value)>,
}

/// `changes` (a merge patch, an object) guarded by the resourceVersion of `read`, which comes
/// first in the document (people read it in `--dry-run=client` and in logs).
pub fn guarded(read: &Value, changes: Value) -> Result<Value, PatchError> {
    let version = read
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or(PatchError::NoResourceVersion)?;
    let mut changes = match changes {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut metadata = Map::new();
    metadata.insert("resourceVersion".into(), Value::String(version.to_string()));
    if let Some(Value::Object(more)) = changes.remove("metadata") {
        metadata.extend(more);
    }
    let mut out = Map::new();
    out.insert("metadata".into(), Value::Object(metadata));
    out.extend(changes);
    Ok(Value::Object(out))
}

/// The merge patch that turns `old` into `new`: the members whose values differ (objects
/// recursively), `null` for members `new` no longer has; lists and scalars whole. `new`'s own
/// `null` members cannot be written by a merge patch (they mean "remove"): they are left out.
pub fn merge_diff(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut out = Map::new();
            for key in old.keys() {
                if new.get(key).is_none_or(Value::is_null) {
                    out.insert(key.clone(), Value::Null);
                }
            }
            for (key, value) in new {
                match old.get(key) {
                    _ if value.is_null() => {}
                    Some(before) if before == value => {}
                    Some(before) if before.is_object() && value.is_object() => {
                        out.insert(key.clone(), merge_diff(before, value));
                    }
                    _ => {
                        out.insert(key.clone(), without_nulls(value));
                    }
                }
            }
            Value::Object(out)
        }
        _ => without_nulls(new),
    }
}

/// A value written whole by a merge patch: its `null` members would mean "remove".
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The approval (or, `approved: false`, the revocation) and what it targets.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPatch {
    pub stage_index: usize,
    pub stage: String,
    /// `approved: true` already: the patch would change nothing but annotations.
    pub already_approved: bool,
    pub write: Write,
}

/// Set `approved` of `gate`'s stage, resolved from `object` (the ClusterPromotion exactly as the
/// server returned it), to `approved`, and `annotations` (the approval reason) in the same write,
/// so that the webhook sees reason and approval together. `false` rather than removed for a
/// revocation: the webhook records an explicit `false` as one, and tells it from a manifest
/// applied without the field.
pub fn approve(
    object: &Value,
    gate: &Gate,
    approved: bool,
    annotations: &[(&str, &str)],
) -> Result<ApprovalPatch, PatchError> {
    let (index, stage) = (gate.index, gate.stage.as_str());
    let mut stages = stages_of(object)?.clone();
    // The gate was resolved from this object, so this only fails for a gate of another object.
    let at_index = stages
        .get_mut(index)
        .filter(|s| s.get("name").and_then(Value::as_str) == Some(stage))
        .ok_or_else(|| PatchError::NotAtIndex {
            stage: stage.to_string(),
            index,
        })?;
    let manual = at_index
        .pointer_mut("/trigger/manual")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| PatchError::NotManual {
            stage: stage.to_string(),
            index,
        })?;
    let already_approved = manual.get("approved") == Some(&Value::Bool(true));
    manual.insert("approved".into(), Value::Bool(approved));
    let mut changes = json!({"spec": {"stages": stages}});
    if !annotations.is_empty() {
        let map: Map<String, Value> = annotations
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        changes["metadata"] = json!({ "annotations": map });
    }
    let base = format!("/spec/stages/{index}");
    Ok(ApprovalPatch {
        stage_index: index,
        stage: stage.to_string(),
        already_approved,
        write: Write {
            patch: guarded(object, changes)?,
            shows: vec![
                (format!("{base}/name"), json!(stage)),
                (format!("{base}/trigger/manual/approved"), json!(approved)),
            ],
        },
    })
}

fn stages_of(object: &Value) -> Result<&Vec<Value>, PatchError> {
    object
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .ok_or(PatchError::NoStages)
}

/// The controller's commit point: the approvals it uses removed (stage indices, each checked to
/// hold an approval), the step recorded ([`crate::promoting`]) and, for each stage used, the
/// webhook's record of the approval used ([`crate::admission::used_approvals`], from `object`), in one
/// write.
pub fn commit(
    object: &Value,
    used: &[usize],
    promoting: Option<&Promoting>,
) -> Result<Value, PatchError> {
    let mut changes = json!({});
    let mut annotations = Map::new();
    if let Some(p) = promoting {
        annotations.insert(PROMOTING_ANNOTATION.into(), json!(p.to_annotation()));
    }
    if let Some(text) = used_approvals::after_commit(object, used, promoting.map(|p| &p.rollout)) {
        annotations.insert(USED_APPROVALS_ANNOTATION.into(), json!(text));
    }
    if !annotations.is_empty() {
        changes["metadata"] = json!({ "annotations": annotations });
    }
    if !used.is_empty() {
        let mut stages = stages_of(object)?.clone();
        for &index in used {
            if let Some(manual) = stages
                .get_mut(index)
                .and_then(|s| s.pointer_mut("/trigger/manual"))
                .and_then(Value::as_object_mut)
            {
                manual.remove("approved");
            }
        }
        changes["spec"] = json!({ "stages": stages });
    }
    guarded(object, changes)
}

/// The whole new `status`, written to the status subresource as the difference from the status
/// read.
pub fn status(object: &Value, status: &Value) -> Result<Value, PatchError> {
    let before = object.get("status").cloned().unwrap_or_else(|| json!({}));
    guarded(object, json!({ "status": merge_diff(&before, status) }))
}

/// Annotations set (`Some`) or removed (`None`), in one write guarded by the version read.
pub fn annotations(
    object: &Value,
    edits: &std::collections::BTreeMap<String, Option<String>>,
) -> Result<Value, PatchError> {
    let edits: Map<String, Value> = edits
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
        .collect();
    guarded(object, json!({"metadata": {"annotations": edits}}))
}

/// An annotation removed.
pub fn remove_annotation(object: &Value, key: &str) -> Result<Value, PatchError> {
    guarded(object, json!({"metadata": {"annotations": { key: null }}}))
}

/// Sveltos' finalizer added (`true`) or removed (`false`); the others kept in their order.
pub fn finalizer(object: &Value, present: bool) -> Result<Value, PatchError> {
    let mut finalizers: Vec<Value> = object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    finalizers.retain(|f| f != FINALIZER);
    if present {
        finalizers.push(json!(FINALIZER));
    }
    guarded(object, json!({"metadata": {"finalizers": finalizers}}))
}

#[cfg(test)]
mod tests;
