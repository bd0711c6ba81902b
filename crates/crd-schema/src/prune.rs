//! Structural pruning (`structuralpruning.PruneWithOptions`): fields the schema does not
//! declare are dropped, and their paths are what strict field validation reports as
//! `unknown field "spec.foo"`.

use serde_json::Value;

use super::structural::{Additional, Node};

/// A field the schema does not declare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// The API server's path of the field (`spec.stages[0].trigger.auto.dealy`).
    pub path: String,
    /// The key as written.
    pub key: String,
    /// The property names the schema declares where the key was found, for suggestions.
    pub declared: Vec<String>,
}

/// Prune `obj` (the whole object) against the root schema; returns the unknown fields in the
/// order met. `apiVersion`, `kind` and `metadata` at the root are left to the generic machinery.
pub fn prune(root: &Node, obj: &mut Value) -> Vec<UnknownField> {
    let mut unknown = Vec::new();
    let Value::Object(map) = obj else {
        return unknown;
    };
    if root.properties.is_none() {
        return unknown;
    }
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        match root.property(&k) {
            Some(sub) => {
                if let Some(v) = map.get_mut(&k) {
                    if v.is_null() && !sub.nullable {
                        map.remove(&k);
                        continue;
                    }
                    let mut path = k.clone();
                    prune_value(v, sub, &mut path, &mut unknown);
                }
            }
            None => {
                if !root.preserve_unknown {
                    map.remove(&k);
                    unknown.push(UnknownField {
                        declared: root.property_names(),
                        path: k.clone(),
                        key: k,
                    });
                }
            }
        }
    }
    unknown
}

/// `path` is the field path of `v`, extended and restored as the walk goes down.
fn prune_value(v: &mut Value, schema: &Node, path: &mut String, unknown: &mut Vec<UnknownField>) {
    let len = path.len();
    match v {
        Value::Object(map) => {
            // Nothing to prune below a node that keeps everything and declares nothing.
            let declares_nothing =
                schema.properties.is_none() && !matches!(schema.additional, Additional::Schema(_));
            let keeps_everything =
                schema.preserve_unknown || matches!(schema.additional, Additional::Any);
            if declares_nothing && keeps_everything {
                return;
            }
            map.retain(|k, value| {
                let declared = schema.property(k);
                match declared.or(schema.additional()) {
                    Some(sub) => {
                        if value.is_null() && !sub.nullable {
                            return false;
                        }
                        if declared.is_some() {
                            path.push('.');
                            path.push_str(k);
                        } else {
                            path.push('[');
                            path.push_str(k);
                            path.push(']');
                        }
                        prune_value(value, sub, path, unknown);
                        path.truncate(len);
                        true
                    }
                    None => {
                        // apiVersion/kind/metadata of an embedded object are always kept.
                        let embedded_meta = schema.embedded_resource
                            && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
                        let any_map = matches!(schema.additional, Additional::Any);
                        if schema.preserve_unknown || embedded_meta || any_map {
                            return true;
                        }
                        unknown.push(UnknownField {
                            path: format!("{path}.{k}"),
                            declared: schema.property_names(),
                            key: k.clone(),
                        });
                        false
                    }
                }
            });
        }
        Value::Array(list) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in list.iter_mut().enumerate() {
                    use std::fmt::Write;
                    // Writing to a String cannot fail.
                    let _ = write!(path, "[{i}]");
                    prune_value(item, item_schema, path, unknown);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}
