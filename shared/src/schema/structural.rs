//! Reading a node of a structural schema (`openAPIV3Schema` as a JSON value): its type, its
//! children and the `x-kubernetes-*` extensions the API server acts on.

use serde_json::{Map, Value};

/// The node's `type` (`""` when it has none, as for `x-kubernetes-int-or-string`).
pub fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

/// A boolean keyword or extension, `false` when absent.
pub fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// `additionalProperties` as a schema (`true` means anything goes and gives no schema).
pub fn additional(schema: &Value) -> Option<&Value> {
    match schema.get("additionalProperties") {
        Some(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

/// `additionalProperties: true`: a map of anything, kept as sent.
pub fn any_additional(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(true))
}

pub fn items(schema: &Value) -> Option<&Value> {
    schema.get("items")
}

pub fn required(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

pub fn int_or_string(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-int-or-string")
}

pub fn preserves_unknown(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-preserve-unknown-fields")
}

pub fn embedded_resource(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-embedded-resource")
}

/// The `x-kubernetes-validations` rules of this node.
pub fn rules(schema: &Value) -> &[Value] {
    schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Whether any node of the schema carries `x-kubernetes-validations` (the API server builds a
/// CEL validator only then).
pub fn has_rules(schema: &Value) -> bool {
    if !rules(schema).is_empty() {
        return true;
    }
    let nested = properties(schema)
        .into_iter()
        .flat_map(|p| p.values())
        .chain(items(schema))
        .chain(additional(schema));
    nested.into_iter().any(has_rules)
}

/// The names a user could have meant at this node: its declared properties.
pub fn property_names(schema: &Value) -> Vec<&str> {
    properties(schema)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}
