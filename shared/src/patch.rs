//! Guarded RFC 6902 JSON Patches that approve a manual gate.
//!
//! `spec.stages` is a list, so a merge patch would replace it whole (and with it a concurrent
//! edit, or an `automaticReset: false` the writer did not know about). An approval is therefore
//! one JSON Patch whose `test` operations pin what the caller read:
//!
//! The stage is the [`Gate`] that [`crate::gate::approval_target`] resolved from the same
//! object: its index is used as is, never looked up again by name.
//!
//! 1. `test /spec/stages/N/name` — index N still holds the stage the operator named; a reordered
//!    or renamed stage list makes the server reject the patch (422) instead of approving another
//!    stage.
//! 2. `test /spec/stages/N/trigger/manual` against the whole `manual` object as read — JSON Patch
//!    cannot test that a member is absent, but it can test the parent's exact value, which pins
//!    `approved` (absent, `false` or `true`), `automaticReset` and every other field at once.
//! 3. `add /spec/stages/N/trigger/manual/approved: true` — `add` rather than `replace`, because
//!    the controller removes `approved` when it consumes an approval.
//! 4. The audit annotations (for example the approval reason) in the same request, so the
//!    webhook sees reason and approval together.
//!
//! Nothing else is written, so every other field stays byte-for-byte as stored.

use serde_json::{json, Map, Value};

use crate::gate::Gate;

/// Field manager the plugin sends with its writes.
pub const FIELD_MANAGER: &str = "kubectl-promotion";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error("the object has no spec.stages list")]
    NoStages,
    #[error("spec.stages[{index}] is not stage {stage:?}")]
    NotAtIndex { stage: String, index: usize },
    #[error("stage {stage:?} (spec.stages[{index}]) has no trigger.manual to approve")]
    NotManual { stage: String, index: usize },
}

/// The approval patch and what it targets.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPatch {
    pub stage_index: usize,
    pub stage: String,
    /// `approved: true` already: the patch would change nothing but annotations.
    pub already_approved: bool,
    pub patch: json_patch::Patch,
}

/// Escape one JSON Pointer reference token (RFC 6901 §3).
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Build the guarded approval patch for `gate`, resolved from `object`, the ClusterPromotion
/// exactly as the server returned it. `annotations` are written in the same patch (existing keys
/// are overwritten, others kept).
pub fn approve(
    object: &Value,
    gate: &Gate,
    annotations: &[(&str, &str)],
) -> Result<ApprovalPatch, PatchError> {
    let stages = object
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .ok_or(PatchError::NoStages)?;
    let (index, stage) = (gate.index, gate.stage.as_str());
    // The gate was resolved from this object, so this only fails for a gate of another object.
    let at_index = stages
        .get(index)
        .filter(|s| s.get("name").and_then(Value::as_str) == Some(stage))
        .ok_or_else(|| PatchError::NotAtIndex {
            stage: stage.to_string(),
            index,
        })?;
    let manual = at_index
        .pointer("/trigger/manual")
        .filter(|m| m.is_object())
        .ok_or_else(|| PatchError::NotManual {
            stage: stage.to_string(),
            index,
        })?;
    let already_approved = manual.get("approved") == Some(&Value::Bool(true));
    let base = format!("/spec/stages/{index}");
    let mut ops = vec![
        json!({"op": "test", "path": format!("{base}/name"), "value": stage}),
        json!({"op": "test", "path": format!("{base}/trigger/manual"), "value": manual}),
        json!({"op": "add", "path": format!("{base}/trigger/manual/approved"), "value": true}),
    ];
    ops.extend(annotation_ops(object, annotations));
    let patch = serde_json::from_value(Value::Array(ops))
        .expect("operations built above are well-formed JSON Patch");
    Ok(ApprovalPatch {
        stage_index: index,
        stage: stage.to_string(),
        already_approved,
        patch,
    })
}

/// Operations that set `annotations` on the object's metadata.
///
/// When the object has no annotation map, `add /metadata/annotations` would replace whatever a
/// concurrent writer put there in the meantime, so that one case is additionally pinned to the
/// resourceVersion that was read (the server then rejects the patch and the caller re-reads).
pub fn annotation_ops(object: &Value, annotations: &[(&str, &str)]) -> Vec<Value> {
    if annotations.is_empty() {
        return Vec::new();
    }
    let has_map = object
        .pointer("/metadata/annotations")
        .is_some_and(Value::is_object);
    if has_map {
        return annotations
            .iter()
            .map(|(k, v)| {
                json!({
                    "op": "add",
                    "path": format!("/metadata/annotations/{}", escape_token(k)),
                    "value": v,
                })
            })
            .collect();
    }
    let mut ops = Vec::new();
    if let Some(rv) = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
    {
        ops.push(json!({"op": "test", "path": "/metadata/resourceVersion", "value": rv}));
    }
    let map: Map<String, Value> = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": map}));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    const REASON: &str = "kubectl-promotion.dev/approval-reason";

    fn promotion() -> Value {
        json!({
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterPromotion",
            "metadata": {"name": "p", "resourceVersion": "42"},
            "spec": {
                "profileSpec": {"syncMode": "Continuous"},
                "stages": [
                    {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                     "trigger": {"auto": {"delay": "2m"}}},
                    {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
                     "trigger": {"manual": {"approved": false, "automaticReset": false}}},
                    {"name": "production", "clusterSelector": {"matchLabels": {"env": "prod"}}}
                ]
            }
        })
    }

    /// The gate of `stage` as `approve` resolves it from the object read.
    fn gate(object: &Value, stage: &str) -> Gate {
        let promotion = crate::plan::promotion_from_json(object).unwrap();
        let pipeline =
            crate::pipeline::derive(&promotion, None, &crate::freshness::Freshness::Current);
        crate::gate::approval_target(&pipeline, Some(stage), true).unwrap()
    }

    /// A gate that was not resolved from the object it is applied to.
    fn foreign(index: usize, stage: &str) -> Gate {
        Gate {
            index,
            stage: stage.into(),
            next: None,
            already_approved: false,
            ahead_of_time: false,
            approval: crate::pipeline::Approval::NotApproved,
        }
    }

    fn apply(doc: &Value, p: &ApprovalPatch) -> Result<Value, json_patch::PatchError> {
        let mut doc = doc.clone();
        json_patch::patch(&mut doc, &p.patch)?;
        Ok(doc)
    }

    #[test]
    fn approves_only_the_named_stage_and_keeps_everything_else() {
        let before = promotion();
        let p = approve(&before, &gate(&before, "staging"), &[]).unwrap();
        assert_eq!(p.stage_index, 1);
        assert!(!p.already_approved);
        let after = apply(&before, &p).unwrap();
        let mut expected = before.clone();
        expected["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
        assert_eq!(after, expected);
        assert_eq!(
            after.pointer("/spec/stages/1/trigger/manual/automaticReset"),
            Some(&json!(false))
        );
    }

    #[test]
    fn patch_is_test_test_add_in_that_order() {
        let p = approve(&promotion(), &gate(&promotion(), "staging"), &[]).unwrap();
        let ops = serde_json::to_value(&p.patch).unwrap();
        let summary: Vec<(String, String)> = ops
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["op"].as_str().unwrap().to_string(),
                    o["path"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("test".into(), "/spec/stages/1/name".into()),
                ("test".into(), "/spec/stages/1/trigger/manual".into()),
                (
                    "add".into(),
                    "/spec/stages/1/trigger/manual/approved".into()
                ),
            ]
        );
    }

    #[test]
    fn reordered_stages_fail_the_test_instead_of_approving_another_stage() {
        let read = promotion();
        let p = approve(&read, &gate(&read, "staging"), &[]).unwrap();
        let mut live = read.clone();
        let stages = live["spec"]["stages"].as_array_mut().unwrap();
        stages.swap(0, 1);
        // Index 1 now holds `dev`; give it a manual trigger so only the name test protects it.
        stages[1]["trigger"] = json!({"manual": {"approved": false, "automaticReset": false}});
        assert!(apply(&live, &p).is_err());
    }

    #[test]
    fn concurrent_change_of_the_manual_trigger_fails_the_test() {
        let read = promotion();
        let p = approve(&read, &gate(&read, "staging"), &[]).unwrap();
        let mut approved_meanwhile = read.clone();
        approved_meanwhile["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
        assert!(apply(&approved_meanwhile, &p).is_err());

        // The controller removed `approved` (absent ≠ false): the test catches that too.
        let mut reset = read.clone();
        reset["spec"]["stages"][1]["trigger"]["manual"]
            .as_object_mut()
            .unwrap()
            .remove("approved");
        assert!(apply(&reset, &p).is_err());
    }

    #[test]
    fn absent_approved_is_added() {
        let mut read = promotion();
        read["spec"]["stages"][1]["trigger"]["manual"] = json!({});
        let p = approve(&read, &gate(&read, "staging"), &[]).unwrap();
        let after = apply(&read, &p).unwrap();
        assert_eq!(
            after.pointer("/spec/stages/1/trigger/manual"),
            Some(&json!({"approved": true}))
        );
    }

    #[test]
    fn already_approved_is_reported() {
        let mut read = promotion();
        read["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
        assert!(
            approve(&read, &gate(&read, "staging"), &[])
                .unwrap()
                .already_approved
        );
    }

    #[test]
    fn a_gate_of_another_object_is_refused() {
        let read = promotion();
        assert_eq!(
            approve(&read, &foreign(1, "qa"), &[]).unwrap_err(),
            PatchError::NotAtIndex {
                stage: "qa".into(),
                index: 1
            }
        );
        assert_eq!(
            approve(&read, &foreign(3, "staging"), &[]).unwrap_err(),
            PatchError::NotAtIndex {
                stage: "staging".into(),
                index: 3
            }
        );
        assert_eq!(
            approve(&read, &foreign(0, "dev"), &[]).unwrap_err(),
            PatchError::NotManual {
                stage: "dev".into(),
                index: 0
            }
        );
        assert_eq!(
            approve(&json!({"spec": {}}), &foreign(0, "dev"), &[]).unwrap_err(),
            PatchError::NoStages
        );
    }

    #[test]
    fn the_resolved_index_is_patched_when_a_name_repeats() {
        // A later stage of the same name (which the API server refuses, a manifest can hold) is
        // never the one approved: the gate is the first of the name, and its index is pinned.
        let mut read = promotion();
        read["spec"]["stages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "staging", "trigger": {"manual": {}}}));
        let g = gate(&read, "staging");
        assert_eq!(g.index, 1);
        let p = approve(&read, &g, &[]).unwrap();
        let after = apply(&read, &p).unwrap();
        assert_eq!(
            after.pointer("/spec/stages/1/trigger/manual/approved"),
            Some(&json!(true))
        );
        assert_eq!(
            after.pointer("/spec/stages/3/trigger/manual"),
            Some(&json!({}))
        );
        // A gate at the later index is pinned there too, not moved to the first of the name.
        let later = approve(&read, &foreign(3, "staging"), &[]).unwrap();
        assert_eq!(later.stage_index, 3);
    }

    #[test]
    fn reason_creates_the_annotation_map_guarded_by_resource_version() {
        let read = promotion();
        let p = approve(
            &read,
            &gate(&read, "staging"),
            &[(REASON, "CAB-1234 signed off")],
        )
        .unwrap();
        let after = apply(&read, &p).unwrap();
        assert_eq!(
            after.pointer("/metadata/annotations"),
            Some(&json!({REASON: "CAB-1234 signed off"}))
        );
        let mut bumped = read.clone();
        bumped["metadata"]["resourceVersion"] = json!("43");
        assert!(apply(&bumped, &p).is_err());
    }

    #[test]
    fn reason_joins_an_existing_annotation_map() {
        let mut read = promotion();
        read["metadata"]["annotations"] = json!({"team": "platform", REASON: "old"});
        let p = approve(&read, &gate(&read, "staging"), &[(REASON, "new")]).unwrap();
        let ops = serde_json::to_value(&p.patch).unwrap();
        assert_eq!(
            ops[3]["path"],
            json!("/metadata/annotations/kubectl-promotion.dev~1approval-reason")
        );
        let mut later = read.clone();
        later["metadata"]["resourceVersion"] = json!("99");
        later["metadata"]["annotations"]["added"] = json!("meanwhile");
        let after = apply(&later, &p).unwrap();
        assert_eq!(
            after.pointer("/metadata/annotations"),
            Some(&json!({"team": "platform", REASON: "new", "added": "meanwhile"}))
        );
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(escape_token("a/b~c"), "a~1b~0c");
    }
}
