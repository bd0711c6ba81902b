//! Structural defaulting (`structuraldefaulting.Default`): an absent property (or a null one
//! that is not nullable) with a `default` gets it, recursively, including inside defaulted
//! values. `metadata` at the root is left alone.

use serde_json::Value;

use super::structural::{additional, flag, items, properties};

pub fn default_root(root: &Value, obj: &mut Value) {
    if let (Value::Object(map), Some(props)) = (obj, properties(root)) {
        for (k, sub) in props {
            if k == "metadata" {
                continue;
            }
            if let Some(d) = sub.get("default") {
                if !map.contains_key(k) {
                    map.insert(k.clone(), d.clone());
                }
            }
            if let Some(v) = map.get_mut(k) {
                default_value(v, sub);
            }
        }
    }
}

fn default_value(v: &mut Value, schema: &Value) {
    match v {
        Value::Object(map) => {
            if let Some(props) = properties(schema) {
                for (k, sub) in props {
                    if let Some(d) = sub.get("default") {
                        let absent = match map.get(k) {
                            None => true,
                            Some(Value::Null) => !flag(sub, "nullable"),
                            Some(_) => false,
                        };
                        if absent {
                            map.insert(k.clone(), d.clone());
                        }
                    }
                }
                for (k, sub) in props {
                    if let Some(value) = map.get_mut(k) {
                        default_value(value, sub);
                    }
                }
            } else if let Some(extra) = additional(schema) {
                for value in map.values_mut() {
                    default_value(value, extra);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for item in list {
                    default_value(item, item_schema);
                }
            }
        }
        _ => {}
    }
}
