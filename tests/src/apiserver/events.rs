//! Events are stored once, in their core/v1 form, and served both as `v1 Event` and as
//! `events.k8s.io/v1 Event` (field renames as in `pkg/apis/events/v1` conversion), and validated
//! as `pkg/apis/core/validation/events.go` does: the legacy rules for every write (an Event about
//! a cluster-scoped object lives in `default` or, with `eventTime`, `kube-system`), and the
//! stricter ones for creates through `events.k8s.io`.

use serde_json::{json, Map, Value};

use super::names::{dns1123_subdomain_problem, is_dns1123_subdomain, qualified_name_problems};
use super::status::{go_quote, FieldError};

/// (core/v1 field, events.k8s.io/v1 field)
const RENAMES: [(&str, &str); 8] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
    ("related", "related"),
];

fn rename(obj: &Value, api_version: &str, to_new: bool) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    out.insert("apiVersion".into(), json!(api_version));
    for (k, v) in map {
        if k == "kind" || k == "apiVersion" {
            continue;
        }
        let renamed = RENAMES
            .iter()
            .find(|(core, new)| if to_new { core == k } else { new == k })
            .map(|(core, new)| if to_new { *new } else { *core })
            .unwrap_or(k.as_str());
        out.insert(renamed.to_string(), v.clone());
    }
    Value::Object(out)
}

pub fn to_events_v1(core: &Value) -> Value {
    let mut v = rename(core, "events.k8s.io/v1", true);
    if v.get("eventTime").is_none() {
        v["eventTime"] = Value::Null;
    }
    v
}

pub fn to_core(events_v1: &Value) -> Value {
    rename(events_v1, "v1", false)
}

const REPORTING_INSTANCE_LENGTH_LIMIT: usize = 128;
const ACTION_LENGTH_LIMIT: usize = 128;
const REASON_LENGTH_LIMIT: usize = 128;
const NOTE_LENGTH_LIMIT: usize = 1024;

/// `ValidateEventCreate` / `ValidateEventUpdate` for an Event in its stored core/v1 form.
/// `events_api` is a write through `events.k8s.io`; `creating` adds that API's strict create
/// rules (its update rules, which make fields immutable, are not modelled).
pub fn validate(event: &Value, events_api: bool, creating: bool) -> Vec<FieldError> {
    let mut errors = legacy(event, events_api);
    if events_api && creating {
        errors.extend(strict(event));
    }
    errors
}

fn text<'a>(event: &'a Value, pointer: &str) -> &'a str {
    event
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is_set(event: &Value, pointer: &str) -> bool {
    event
        .pointer(pointer)
        .is_some_and(|v| !v.is_null() && v != "" && v != 0 && v != &json!({}))
}

/// `legacyValidateEvent`. The reporting controller's field is named as the request's API
/// version names it.
fn legacy(event: &Value, events_api: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let namespace = text(event, "/metadata/namespace");
    let involved_namespace = text(event, "/involvedObject/namespace");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            go_quote(involved_namespace),
            "does not match event.namespace",
        )
    };
    if !is_set(event, "/eventTime") {
        let agrees = if involved_namespace.is_empty() {
            // Old clients record events of cluster-scoped objects in `default`.
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !agrees {
            errors.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            errors.push(mismatch());
        }
        let controller_field = if events_api {
            "reportingController"
        } else {
            "reportingComponent"
        };
        let controller = text(event, "/reportingComponent");
        if controller.is_empty() {
            errors.push(FieldError::required(controller_field, ""));
        }
        for problem in qualified_name_problems(controller) {
            errors.push(FieldError::invalid(
                controller_field,
                go_quote(controller),
                problem,
            ));
        }
        for (field, pointer, limit) in [
            (
                "reportingInstance",
                "/reportingInstance",
                REPORTING_INSTANCE_LENGTH_LIMIT,
            ),
            ("action", "/action", ACTION_LENGTH_LIMIT),
            ("reason", "/reason", REASON_LENGTH_LIMIT),
        ] {
            let value = text(event, pointer);
            if value.is_empty() {
                errors.push(FieldError::required(field, ""));
            }
            if value.len() > limit {
                errors.push(too_long(field, limit));
            }
        }
        if text(event, "/message").len() > NOTE_LENGTH_LIMIT {
            errors.push(too_long("message", NOTE_LENGTH_LIMIT));
        }
    }
    if !is_dns1123_subdomain(namespace) {
        errors.push(FieldError::invalid(
            "namespace",
            go_quote(namespace),
            dns1123_subdomain_problem(),
        ));
    }
    errors
}

fn too_long(field: &str, limit: usize) -> FieldError {
    FieldError::invalid(
        field,
        go_quote(""),
        format!("can have at most {limit} characters"),
    )
}

/// The create rules of `events.k8s.io` (after the legacy ones; the name is checked with every
/// object's metadata).
fn strict(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(series) = event.get("series").filter(|s| s.is_object()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            errors.push(FieldError::invalid(
                "series.count",
                go_quote(""),
                "should be at least 2",
            ));
        }
        if !is_set(series, "/lastObservedTime") {
            errors.push(FieldError::required("series.lastObservedTime", ""));
        }
    }
    if !is_set(event, "/eventTime") {
        errors.push(FieldError::required("eventTime", ""));
    }
    let kind = text(event, "/type");
    if kind != "Normal" && kind != "Warning" {
        errors.push(FieldError::invalid(
            "type",
            go_quote(""),
            format!("has invalid value: {kind}"),
        ));
    }
    for (field, pointer) in [
        ("firstTimestamp", "/firstTimestamp"),
        ("lastTimestamp", "/lastTimestamp"),
        ("count", "/count"),
    ] {
        if is_set(event, pointer) {
            errors.push(FieldError::invalid(
                field,
                go_quote(""),
                "needs to be unset",
            ));
        }
    }
    if !text(event, "/source/component").is_empty() || !text(event, "/source/host").is_empty() {
        errors.push(FieldError::invalid(
            "source",
            go_quote(""),
            "needs to be unset",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    fn about_cluster_scoped(namespace: &str) -> Value {
        json!({
            "metadata": {"name": "e", "namespace": namespace},
            "involvedObject": {"kind": "ClusterPromotion", "name": "x"},
            "reason": "Sveltos", "message": "hi", "type": "Normal"
        })
    }

    #[test]
    fn events_of_cluster_scoped_objects_belong_in_default() {
        assert!(validate(&about_cluster_scoped("default"), false, true).is_empty());
        assert_eq!(
            messages(&validate(&about_cluster_scoped("other"), false, true)),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
        let mut namespaced = about_cluster_scoped("other");
        namespaced["involvedObject"]["namespace"] = json!("other");
        assert!(validate(&namespaced, false, true).is_empty());
    }

    #[test]
    fn an_event_time_asks_for_the_reporting_fields_as_kube_apiserver_lists_them() {
        let mut event = about_cluster_scoped("other");
        event["eventTime"] = json!("2026-02-16T07:25:37.000000Z");
        event.as_object_mut().map(|m| m.remove("reason"));
        let qualified = "reportingComponent: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            messages(&validate(&event, false, true)),
            [
                "involvedObject.namespace: Invalid value: \"\": does not match event.namespace",
                "reportingComponent: Required value",
                "reportingComponent: Invalid value: \"\": name part must be non-empty",
                qualified,
                "reportingInstance: Required value",
                "action: Required value",
                "reason: Required value",
            ]
        );
    }

    #[test]
    fn events_k8s_io_creates_are_strict() {
        let event = json!({
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "ClusterPromotion", "name": "x"},
            "message": "hi", "type": "Normal", "count": 2
        });
        assert_eq!(
            messages(&validate(&event, true, true)),
            [
                "eventTime: Required value",
                "count: Invalid value: \"\": needs to be unset"
            ]
        );
        assert!(validate(&event, false, true).is_empty());
        assert!(validate(&event, true, false).is_empty());
    }
}
