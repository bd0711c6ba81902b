//! `meta.k8s.io/v1` Table output (what `kubectl get` asks for with
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the CRD table convertor
//! (`Name` + printer columns, or `Name` + `Age` without any) and the built-in printers of the
//! core types the stand-in serves.

use serde_json::{json, Map, Value};

use super::resources::{Printer, PrinterColumn, ResourceDef};

pub fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
    })
}

/// `duration.HumanDuration` from apimachinery.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// `ConvertToHumanReadableDateType`: age of an RFC 3339 timestamp.
fn age(ts: Option<&str>) -> Value {
    match ts {
        None | Some("") => json!("<unknown>"),
        Some(ts) => match chrono::DateTime::parse_from_rfc3339(ts) {
            Ok(t) => json!(human_duration(
                (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds()
            )),
            Err(_) => json!("<invalid>"),
        },
    }
}

fn column(name: &str, type_: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

fn crd_columns(columns: &[PrinterColumn]) -> Vec<PrinterColumn> {
    if columns.is_empty() {
        // serveDefaultColumnsIfEmpty
        vec![PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: AGE_DESCRIPTION.into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }]
    } else {
        columns.to_vec()
    }
}

pub fn column_definitions(def: &ResourceDef) -> Vec<Value> {
    match &def.printer {
        Printer::Crd(cols) => {
            let mut out = vec![column("Name", "string", "name", NAME_DESCRIPTION, 0)];
            for c in crd_columns(cols) {
                let desc = if c.description.is_empty() {
                    format!(
                        "Custom resource definition column (in JSONPath format): {}",
                        c.json_path
                    )
                } else {
                    c.description.clone()
                };
                out.push(column(&c.name, &c.type_, &c.format, &desc, c.priority));
            }
            out
        }
        Printer::Namespace => vec![
            column("Name", "string", "name", NAME_DESCRIPTION, 0),
            column("Status", "string", "", "The status of the namespace", 0),
            column("Age", "string", "", AGE_DESCRIPTION, 0),
        ],
        Printer::ConfigMap => vec![
            column("Name", "string", "name", NAME_DESCRIPTION, 0),
            column("Data", "string", "", "Data contains the configuration data.", 0),
            column("Age", "string", "", AGE_DESCRIPTION, 0),
        ],
        Printer::Secret => vec![
            column("Name", "string", "name", NAME_DESCRIPTION, 0),
            column("Type", "string", "", "Used to facilitate programmatic handling of secret data.", 0),
            column("Data", "string", "", "Data contains the secret data.", 0),
            column("Age", "string", "", AGE_DESCRIPTION, 0),
        ],
        Printer::Event => vec![
            column("Last Seen", "string", "", "Time when last this event was observed.", 0),
            column("Type", "string", "", "Type of this event (Normal, Warning), new types could be added in the future.", 0),
            column("Reason", "string", "", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", 0),
            column("Object", "string", "", "The object that this event is about.", 0),
            column("Subobject", "string", "", "The subobject that this event is about.", 1),
            column("Source", "string", "", "The component reporting this event. Should be a short machine understandable string.", 1),
            column("Message", "string", "", "A human-readable description of the status of this operation.", 0),
            column("First Seen", "string", "", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", 1),
            column("Count", "string", "", "The number of times this event has occurred.", 1),
            column("Name", "string", "name", NAME_DESCRIPTION, 1),
        ],
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// Cells for one object.
pub fn cells(def: &ResourceDef, obj: &Value) -> Vec<Value> {
    let name = json!(str_at(obj, "/metadata/name").unwrap_or_default());
    let created = str_at(obj, "/metadata/creationTimestamp");
    match &def.printer {
        Printer::Crd(cols) => {
            let mut out = vec![name];
            for c in crd_columns(cols) {
                out.push(crd_cell(&c, obj));
            }
            out
        }
        Printer::Namespace => vec![
            name,
            json!(str_at(obj, "/status/phase").unwrap_or("Active")),
            age(created),
        ],
        Printer::ConfigMap => {
            let n = count(obj, "/data") + count(obj, "/binaryData");
            vec![name, json!(n), age(created)]
        }
        Printer::Secret => vec![
            name,
            json!(str_at(obj, "/type").unwrap_or("Opaque")),
            json!(count(obj, "/data")),
            age(created),
        ],
        Printer::Event => {
            let last = str_at(obj, "/lastTimestamp")
                .or_else(|| str_at(obj, "/eventTime"))
                .or(created);
            let first = str_at(obj, "/firstTimestamp")
                .or_else(|| str_at(obj, "/eventTime"))
                .or(created);
            let object = format!(
                "{}/{}",
                str_at(obj, "/involvedObject/kind")
                    .unwrap_or_default()
                    .to_lowercase(),
                str_at(obj, "/involvedObject/name").unwrap_or_default()
            );
            let source = str_at(obj, "/source/component")
                .or_else(|| str_at(obj, "/reportingComponent"))
                .unwrap_or_default();
            vec![
                age(last),
                json!(str_at(obj, "/type").unwrap_or_default()),
                json!(str_at(obj, "/reason").unwrap_or_default()),
                json!(object),
                json!(str_at(obj, "/involvedObject/fieldPath").unwrap_or_default()),
                json!(source),
                json!(str_at(obj, "/message").unwrap_or_default()),
                age(first),
                json!(obj.get("count").and_then(Value::as_i64).unwrap_or(1)),
                name,
            ]
        }
    }
}

fn count(obj: &Value, pointer: &str) -> usize {
    obj.pointer(pointer)
        .and_then(Value::as_object)
        .map(Map::len)
        .unwrap_or(0)
}

fn crd_cell(c: &PrinterColumn, obj: &Value) -> Value {
    let Some(found) = jsonpath_first(obj, &c.json_path) else {
        return Value::Null;
    };
    match c.type_.as_str() {
        "string" => match found {
            Value::String(s) => json!(s),
            other => json!(other.to_string()),
        },
        "integer" => found.as_i64().map(|i| json!(i)).unwrap_or(Value::Null),
        "number" => found.as_f64().map(|f| json!(f)).unwrap_or(Value::Null),
        "boolean" => found.as_bool().map(|b| json!(b)).unwrap_or(Value::Null),
        "date" => match found {
            Value::String(s) => age(Some(s)),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

/// The simple JSONPath the CRDs' printer columns use: `.a.b`, `['dotted\.key']`, `[0]`,
/// `[?(@.k=="v")]`. Returns the first result.
pub fn jsonpath_first<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current: Vec<&Value> = vec![root];
    let mut rest = path.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let field = &r[..end];
            current = current.into_iter().filter_map(|v| v.get(field)).collect();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("[?(") {
            let end = r.find(")]")?;
            let cond = &r[..end];
            let (lhs, rhs) = cond.split_once("==")?;
            let key = lhs.trim().strip_prefix("@.")?;
            let want = rhs.trim().trim_matches(|c| c == '"' || c == '\'');
            current = current
                .into_iter()
                .filter_map(Value::as_array)
                .flatten()
                .filter(|item| item.get(key).and_then(Value::as_str) == Some(want))
                .collect();
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            if let Ok(i) = inner.parse::<usize>() {
                current = current.into_iter().filter_map(|v| v.get(i)).collect();
            } else {
                let key = inner
                    .trim_matches(|c| c == '\'' || c == '"')
                    .replace("\\.", ".");
                current = current.into_iter().filter_map(|v| v.get(&key)).collect();
            }
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    current.into_iter().next()
}

/// The row's `object`, per `includeObject` (default `Metadata`).
pub fn row_object(obj: &Value, include: &str) -> Value {
    match include {
        "None" => Value::Null,
        "Object" => obj.clone(),
        _ => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))
        }),
    }
}

pub fn row(def: &ResourceDef, obj: &Value, include: &str) -> Value {
    json!({"cells": cells(def, obj), "object": row_object(obj, include)})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_apimachinery() {
        for (s, want) in [
            (5, "5s"),
            (119, "119s"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
        ] {
            assert_eq!(human_duration(s), want);
        }
    }

    #[test]
    fn jsonpath_filters_and_escaped_keys() {
        let obj = json!({"status": {"featureSummaries": [
            {"featureID": "Resources", "status": "Provisioned"},
            {"featureID": "Helm", "status": "Failed"}
        ]}, "metadata": {"annotations": {"sharding.projectsveltos.io/key": "s1"}}});
        assert_eq!(
            jsonpath_first(
                &obj,
                ".status.featureSummaries[?(@.featureID==\"Helm\")].status"
            ),
            Some(&json!("Failed"))
        );
        assert_eq!(
            jsonpath_first(
                &obj,
                ".metadata.annotations['sharding\\.projectsveltos\\.io/key']"
            ),
            Some(&json!("s1"))
        );
    }
}
