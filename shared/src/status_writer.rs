//! Who writes a promotion's `status`, read from `metadata.managedFields`: our controller, another
//! reconciler (the Sveltos Enterprise controller, a second installation) or a person — or nobody
//! yet. The controller leaves a promotion alone when another field manager wrote its status last
//! (two reconcilers would fight over it); `describe` says which one it is.

use serde_json::Value;

/// The field manager of every status and spec write of `promotion-controller`.
pub const CONTROLLER_FIELD_MANAGER: &str = "promotion-controller";

/// The annotation that lets `promotion-controller` take a promotion over from another status
/// writer (`"true"`); the flag `--take-over` does it for every promotion.
pub const TAKE_OVER_ANNOTATION: &str = "promotion-controller.kubectl-promotion.dev/take-over";

/// The last write of the status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatusWriter {
    /// The object carries no `managedFields` (`kubectl get -o yaml` leaves them out unless
    /// `--show-managed-fields`), or a status with no manager recorded for it: who writes it is
    /// not known.
    Unknown,
    /// The status was never written.
    Nobody,
    /// `promotion-controller` wrote it last.
    Us { time: Option<String> },
    /// Another field manager wrote it last (`operation` is `Update` or `Apply`).
    Other {
        manager: String,
        operation: String,
        time: Option<String>,
    },
}

impl StatusWriter {
    /// What `describe` says about it.
    pub fn describe(&self) -> String {
        match self {
            StatusWriter::Unknown => "not known: the object as read carries no managedFields \
                                      (kubectl get -o yaml leaves them out; add \
                                      --show-managed-fields)"
                .to_string(),
            // What to do about it is the empty status's note (`pipeline`), said once.
            StatusWriter::Nobody => "nothing has reconciled this promotion yet".to_string(),
            StatusWriter::Us { .. } => format!("{CONTROLLER_FIELD_MANAGER} (kubectl-promotion)"),
            StatusWriter::Other { manager, .. } if looks_like_a_person(manager) => format!(
                "a person's edit ({manager}) wrote the status last; promotion-controller leaves \
                 the promotion alone until it is taken over (annotation {TAKE_OVER_ANNOTATION}: \
                 \"true\")"
            ),
            StatusWriter::Other { manager, .. } => format!("another reconciler ({manager})"),
        }
    }
}

/// Who runs the promotion, named as `Reconciled by` names it, for every message that says who
/// acts ("promotion-controller promotes on its next pass"): the status writer; before the first
/// status, promotion-controller when it added the finalizer; otherwise, or when a person wrote
/// the status last, "the reconciler".
pub fn reconciler_name(promotion: &Value) -> String {
    match status_writer(promotion) {
        StatusWriter::Us { .. } => CONTROLLER_FIELD_MANAGER.to_string(),
        StatusWriter::Other { manager, .. } if !looks_like_a_person(&manager) => manager,
        StatusWriter::Nobody if finalizer_added_by_us(promotion) => {
            CONTROLLER_FIELD_MANAGER.to_string()
        }
        _ => "the reconciler".to_string(),
    }
}

/// Whether promotion-controller's field manager owns `metadata.finalizers`: it added the
/// finalizer, its first write to a new promotion, before the first status.
pub fn finalizer_added_by_us(promotion: &Value) -> bool {
    promotion
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_some_and(|entries| {
            entries.iter().any(|e| {
                e.get("manager").and_then(Value::as_str) == Some(CONTROLLER_FIELD_MANAGER)
                    && e.pointer("/fieldsV1/f:metadata/f:finalizers").is_some()
            })
        })
}

/// kubectl's own field managers: a status written by one of them is a person's edit.
fn looks_like_a_person(manager: &str) -> bool {
    manager.starts_with("kubectl")
}

/// The field manager that wrote `status` last. `status.stages` is an atomic list, so whoever
/// changed it last owns all of it: that owner is the writer (times in `managedFields` have
/// one-second resolution and cannot order two writes of the same second). Without an owner of
/// `status.stages`, the `status` entry with the latest time.
pub fn status_writer(promotion: &Value) -> StatusWriter {
    let Some(entries) = promotion
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
    else {
        return StatusWriter::Unknown;
    };
    let mut last: Option<&Value> = None;
    for entry in entries {
        let is_status = entry.get("subresource").and_then(Value::as_str) == Some("status")
            || (entry.get("subresource").is_none()
                && entry.pointer("/fieldsV1/f:status").is_some());
        if !is_status {
            continue;
        }
        let time = |e: &Value| {
            e.get("time")
                .and_then(Value::as_str)
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        };
        let owns_stages = |e: &Value| e.pointer("/fieldsV1/f:status/f:stages").is_some();
        let better = match last {
            None => true,
            Some(l) => (owns_stages(entry), time(entry)) >= (owns_stages(l), time(l)),
        };
        if better {
            last = Some(entry);
        }
    }
    let Some(entry) = last else {
        let has_status = promotion
            .get("status")
            .and_then(Value::as_object)
            .is_some_and(|s| !s.is_empty());
        return if has_status {
            StatusWriter::Unknown
        } else {
            StatusWriter::Nobody
        };
    };
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
    let manager = text("manager").unwrap_or_default();
    if manager == CONTROLLER_FIELD_MANAGER {
        StatusWriter::Us { time: text("time") }
    } else {
        StatusWriter::Other {
            manager,
            operation: text("operation").unwrap_or_default(),
            time: text("time"),
        }
    }
}

/// The promotion asks to be taken over by `promotion-controller`.
pub fn take_over_requested(promotion: &Value) -> bool {
    promotion
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(TAKE_OVER_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, subresource: Option<&str>, time: &str) -> Value {
        let mut e = json!({"manager": manager, "operation": "Update", "time": time,
                           "fieldsV1": {"f:status": {}}});
        if let Some(s) = subresource {
            e["subresource"] = json!(s);
        }
        e
    }

    #[test]
    fn the_latest_status_entry_names_the_writer() {
        let p = json!({"metadata": {"managedFields": [
            entry("kubectl-client-side-apply", None, "2026-01-01T00:00:00Z"),
            entry("promotion-controller", Some("status"), "2026-01-01T00:01:00Z"),
            entry("addon-controller", Some("status"), "2026-01-01T00:02:00Z"),
        ]}});
        assert_eq!(
            status_writer(&p),
            StatusWriter::Other {
                manager: "addon-controller".into(),
                operation: "Update".into(),
                time: Some("2026-01-01T00:02:00Z".into())
            }
        );
        let ours = json!({"metadata": {"managedFields": [
            entry("addon-controller", Some("status"), "2026-01-01T00:02:00Z"),
            entry("promotion-controller", Some("status"), "2026-01-01T00:03:00Z"),
        ]}});
        assert!(matches!(status_writer(&ours), StatusWriter::Us { .. }));
    }

    #[test]
    fn the_owner_of_the_stages_list_wins_a_tie_of_times() {
        let mut ours = entry(
            "promotion-controller",
            Some("status"),
            "2026-01-01T00:00:00Z",
        );
        ours["fieldsV1"] = json!({"f:status": {"f:stagesHash": {}}});
        let mut theirs = entry("addon-controller", Some("status"), "2026-01-01T00:00:00Z");
        theirs["fieldsV1"] = json!({"f:status": {"f:stages": {}}});
        let p = json!({"metadata": {"managedFields": [theirs, ours]}});
        assert!(
            matches!(status_writer(&p), StatusWriter::Other { manager, .. } if manager == "addon-controller")
        );
    }

    #[test]
    fn a_spec_only_history_means_nobody_wrote_the_status() {
        let mut spec_only = entry("kubectl-client-side-apply", None, "2026-01-01T00:00:00Z");
        spec_only["fieldsV1"] = json!({"f:spec": {}});
        let p = json!({"metadata": {"managedFields": [spec_only]}});
        assert_eq!(status_writer(&p), StatusWriter::Nobody);
        // Without managedFields (what `kubectl get -o yaml` prints) nothing can be said.
        assert_eq!(
            status_writer(&json!({"metadata": {}, "status": {"currentStageName": "dev"}})),
            StatusWriter::Unknown
        );
        assert_eq!(reconciler_name(&p), "the reconciler");
    }

    #[test]
    fn the_reconciler_is_named_as_reconciled_by_names_it() {
        let ours = json!({"metadata": {"managedFields": [
            entry("promotion-controller", Some("status"), "2026-01-01T00:03:00Z"),
        ]}});
        assert_eq!(reconciler_name(&ours), "promotion-controller");
        let theirs = json!({"metadata": {"managedFields": [
            entry("addon-controller", Some("status"), "2026-01-01T00:03:00Z"),
        ]}});
        assert_eq!(reconciler_name(&theirs), "addon-controller");
        // Before its first status write, the finalizer tells who took the promotion on.
        let mut finalizer = entry("promotion-controller", None, "2026-01-01T00:00:00Z");
        finalizer["fieldsV1"] = json!({"f:metadata": {"f:finalizers": {}}});
        let starting = json!({"metadata": {"managedFields": [finalizer]}});
        assert_eq!(status_writer(&starting), StatusWriter::Nobody);
        assert_eq!(reconciler_name(&starting), "promotion-controller");
        let person = json!({"metadata": {"managedFields": [
            entry("kubectl-edit", Some("status"), "2026-01-01T00:03:00Z"),
        ]}});
        assert_eq!(reconciler_name(&person), "the reconciler");
    }

    #[test]
    fn kubectl_edits_of_the_status_are_a_persons() {
        let p = json!({"metadata": {"managedFields": [
            entry("kubectl-edit", Some("status"), "2026-01-01T00:00:00Z")]}});
        assert!(status_writer(&p).describe().contains("a person's edit"));
    }
}
