//! Events are stored once, in their core/v1 form, and served both as `v1 Event` and as
//! `events.k8s.io/v1 Event` (field renames as in `pkg/apis/events/v1` conversion).

use serde_json::{json, Map, Value};

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
