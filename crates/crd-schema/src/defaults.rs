//! Structural defaulting (`structuraldefaulting.Default`): an absent property (or a null one
//! that is not nullable) with a `default` gets it, recursively, including inside defaulted
//! values. `metadata` at the root is left alone.

use serde_json::Value;

use super::structural::Node;

pub fn default_root(root: &Node, obj: &mut Value) {
    let (Value::Object(map), Some(props)) = (obj, root.properties.as_ref()) else {
        return;
    };
    for (k, sub) in props {
        if k == "metadata" {
            continue;
        }
        if let Some(d) = &sub.default {
            if !map.contains_key(k) {
                map.insert(k.clone(), d.clone());
            }
        }
        if let Some(v) = map.get_mut(k) {
            default_value(v, sub);
        }
    }
}

fn default_value(v: &mut Value, schema: &Node) {
    if !schema.defaults_below {
        return;
    }
    match v {
        Value::Object(map) => {
            if let Some(props) = &schema.properties {
                for (k, sub) in props {
                    if let Some(d) = &sub.default {
                        let absent = match map.get(k) {
                            None => true,
                            Some(Value::Null) => !sub.nullable,
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
            } else if let Some(extra) = schema.additional() {
                for value in map.values_mut() {
                    default_value(value, extra);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for item in list {
                    default_value(item, item_schema);
                }
            }
        }
        _ => {}
    }
}
