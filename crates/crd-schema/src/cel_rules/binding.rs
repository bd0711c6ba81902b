//! `self` as the API server binds it (`UnstructuredToVal`): declared properties by their escaped
//! CEL names (`my-key` as `my__dash__key`), `integer` nodes as `int`, `number` nodes as
//! `double`, map keys as written.
//!
//! A rule that only selects fields of `self` (`self.x`, `has(self.x)`) cannot observe the
//! others, so only the fields it reads are bound, and a field whose presence alone is tested is
//! bound to a placeholder: the same results for a fraction of the conversion.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::rule_reads::SelfField;
use crate::structural::Node;

/// The whole node as CEL sees it.
pub fn to_self(v: &Value, schema: &Node) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (schema.type_.as_str(), n.as_i64()) {
            ("number", _) | (_, None) => cel::Value::Float(n.as_f64().unwrap_or(0.0)),
            (_, Some(i)) => cel::Value::Int(i),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(list) => {
            let any = Node::default();
            let item_schema = schema.items.as_deref().unwrap_or(&any);
            cel::Value::List(Arc::new(
                list.iter().map(|item| to_self(item, item_schema)).collect(),
            ))
        }
        Value::Object(map) => object_to_self(map, schema, None),
    }
}

/// An object node as CEL sees it; with `only`, just those (CEL-named) fields.
pub fn object_to_self(
    map: &Map<String, Value>,
    schema: &Node,
    only: Option<&[SelfField]>,
) -> cel::Value {
    let any = Node::default();
    let mut out: HashMap<String, cel::Value> = HashMap::with_capacity(map.len());
    for (k, value) in map {
        let declared = schema.property_at(k);
        // Unescapable names are not visible to rules; map keys are used as written.
        let Some(name) = (match declared {
            Some((i, _)) => schema.cel_names.get(i).cloned().flatten(),
            None => Some(k.clone()),
        }) else {
            continue;
        };
        let declared = declared.map(|(_, n)| n);
        let wanted = match only {
            None => Some(false),
            Some(fields) => fields
                .iter()
                .find(|f| f.name == name)
                .map(|f| f.presence_only),
        };
        let Some(presence_only) = wanted else {
            continue;
        };
        let converted = if presence_only {
            cel::Value::Null
        } else {
            to_self(value, declared.or(schema.additional()).unwrap_or(&any))
        };
        out.insert(name, converted);
    }
    cel::Value::Map(out.into())
}

/// What a node's rules read of `self`, spelt out: each field with its presence only, or its
/// schema type and JSON value when that is a scalar. `None` when a field read is an object or a
/// list (its conversion depends on the schema below it).
pub fn memo_key(map: &Map<String, Value>, schema: &Node, fields: &[SelfField]) -> Option<String> {
    use std::fmt::Write;
    let mut key = String::new();
    for f in fields {
        let json_name = match schema.property_named_in_cel(&f.name) {
            Some(declared) => declared,
            // A map key, unless the name is a declared property's JSON name no rule can use.
            None if schema.property(&f.name).is_none() => f.name.as_str(),
            None => "",
        };
        let found = map.get_key_value(json_name);
        // Writing to a String cannot fail.
        let _ = match found {
            None => write!(key, "{}-;", f.name),
            Some(_) if f.presence_only => write!(key, "{}+;", f.name),
            Some((k, value)) if !value.is_object() && !value.is_array() => {
                let type_ = schema.property(k).map_or("", |n| n.type_.as_str());
                write!(key, "{}={type_}:{value};", f.name)
            }
            Some(_) => return None,
        };
    }
    Some(key)
}
