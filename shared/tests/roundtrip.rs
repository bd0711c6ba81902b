//! The typed model preserves everything: every example, and an object with every field the CRD
//! schema defines, survive deserialize → serialize unchanged.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use promotion_manifest::parse_documents;
use promotion_shared::model::ClusterPromotion;

fn read_yaml(path: PathBuf) -> Vec<Value> {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_documents(&text)
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect()
}

fn roundtrip(v: &Value) -> Value {
    let typed: ClusterPromotion = serde_json::from_value(v.clone()).expect("deserializes");
    serde_json::to_value(&typed).expect("serializes")
}

#[test]
fn examples_roundtrip_unchanged() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            for v in read_yaml(path.clone()) {
                assert_eq!(roundtrip(&v), v, "{}", path.display());
                seen += 1;
            }
        }
    }
    assert!(seen >= 11);
}

/// A value for every property the schema declares.
fn populate(schema: &Value, depth: usize) -> Value {
    if depth > 40 {
        return Value::Null;
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return json!("10%");
    }
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    out.insert(k.clone(), populate(s, depth + 1));
                }
            }
            if let Some(extra) = schema.get("additionalProperties") {
                let v = if extra.is_object() {
                    populate(extra, depth + 1)
                } else {
                    json!("v")
                };
                out.insert("some-key".into(), v);
            }
            if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
                && out.is_empty()
            {
                out.insert("anything".into(), json!({"nested": [1, "two", null]}));
            }
            Value::Object(out)
        }
        Some("array") => json!([populate(
            schema.get("items").unwrap_or(&json!({})),
            depth + 1
        )]),
        Some("string") => match schema.get("format").and_then(Value::as_str) {
            Some("date-time") => json!("2026-02-16T07:29:41Z"),
            Some("byte") => json!("aGVsbG8="),
            _ => json!("s"),
        },
        Some("integer") => json!(7),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        _ => json!({"free": "form"}),
    }
}

#[test]
fn fully_populated_crd_object_roundtrips_unchanged() {
    let crd_path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/crd-schema/crds/config.projectsveltos.io_clusterpromotions.yaml");
    let crd = read_yaml(crd_path).remove(0);
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut obj = populate(schema, 0);
    obj["apiVersion"] = json!("config.projectsveltos.io/v1beta1");
    obj["kind"] = json!("ClusterPromotion");
    obj["metadata"] = json!({"name": "full", "labels": {"a": "b"}, "annotations": {"c": "d"},
        "finalizers": ["config.projectsveltos.io/clusterpromotion"], "resourceVersion": "12", "generation": 3,
        "uid": "0d9f4c7e-8f7a-4a43-9d6e-2d4c1f7b6a10", "creationTimestamp": "2026-02-16T07:25:37Z"});
    // Sanity: the schema walk reached the fields the model types.
    assert!(obj
        .pointer("/spec/stages/0/trigger/manual/automaticReset")
        .is_some());
    assert!(obj
        .pointer("/spec/profileSpec/validateHealths/0/evaluateCEL/0/rule")
        .is_some());
    assert!(obj
        .pointer("/status/stages/0/currentStatusDescription")
        .is_some());
    assert_eq!(roundtrip(&obj), obj);

    // Explicit false survives, and so does an absent flag (no default is invented).
    let manual = obj.pointer_mut("/spec/stages/0/trigger/manual").unwrap();
    manual["approved"] = json!(false);
    manual["automaticReset"] = json!(false);
    assert_eq!(roundtrip(&obj), obj);
    let manual = obj
        .pointer_mut("/spec/stages/0/trigger/manual")
        .unwrap()
        .as_object_mut()
        .unwrap();
    manual.remove("approved");
    manual.remove("automaticReset");
    assert_eq!(roundtrip(&obj), obj);
}
