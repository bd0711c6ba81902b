//! Structural pruning (`structuralpruning.PruneWithOptions`): fields the schema does not
//! declare are dropped, and their paths are what strict field validation reports as
//! `unknown field "spec.foo"`.

use serde_json::Value;

use super::structural::{
    additional, any_additional, embedded_resource, flag, items, preserves_unknown, properties,
    property_names,
};
use super::SchemaPath;

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
pub fn prune(root: &Value, obj: &mut Value) -> Vec<UnknownField> {
    let mut unknown = Vec::new();
    if let (Value::Object(map), Some(props)) = (obj, properties(root)) {
        let keys: Vec<String> = map.keys().cloned().collect();
        for k in keys {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match props.get(&k) {
                Some(sub) => {
                    if let Some(v) = map.get_mut(&k) {
                        if v.is_null() && !flag(sub, "nullable") {
                            map.remove(&k);
                            continue;
                        }
                        prune_value(v, sub, &SchemaPath::root(&k), &mut unknown);
                    }
                }
                None => {
                    if !preserves_unknown(root) {
                        map.remove(&k);
                        unknown.push(UnknownField {
                            declared: names(root),
                            path: k.clone(),
                            key: k,
                        });
                    }
                }
            }
        }
    }
    unknown
}

fn names(schema: &Value) -> Vec<String> {
    property_names(schema)
        .into_iter()
        .map(str::to_string)
        .collect()
}

fn prune_value(v: &mut Value, schema: &Value, path: &SchemaPath, unknown: &mut Vec<UnknownField>) {
    match v {
        Value::Object(map) => {
            let props = properties(schema);
            let extra = additional(schema);
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let declared = props.and_then(|p| p.get(&k));
                match declared.or(extra) {
                    Some(sub) => {
                        let child = if declared.is_some() {
                            path.child(&k)
                        } else {
                            path.key(&k)
                        };
                        if let Some(value) = map.get_mut(&k) {
                            if value.is_null() && !flag(sub, "nullable") {
                                map.remove(&k);
                                continue;
                            }
                            prune_value(value, sub, &child, unknown);
                        }
                    }
                    None => {
                        // apiVersion/kind/metadata of an embedded object are always kept.
                        let embedded_meta = embedded_resource(schema)
                            && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
                        if !preserves_unknown(schema) && !embedded_meta && !any_additional(schema) {
                            map.remove(&k);
                            unknown.push(UnknownField {
                                path: path.child(&k).into_string(),
                                declared: names(schema),
                                key: k,
                            });
                        }
                    }
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for (i, item) in list.iter_mut().enumerate() {
                    prune_value(item, item_schema, &path.index(i), unknown);
                }
            }
        }
        _ => {}
    }
}
