//! Which stored value a transition rule (`oldSelf`) compares with: the value at the same place
//! in the old object, where that place can be told. Object properties and map entries
//! correlate by name; items of an `x-kubernetes-list-type: map` list by their keys
//! (`common.MakeMapList`); items of any other list do not correlate, so their transition
//! rules do not run.

use serde_json::Value;

use crate::structural::Node;

/// The value a list-map key may take: `CompositeKeyFor` keys only scalars.
fn scalar(v: &Value) -> Option<&Value> {
    matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_)).then_some(v)
}

/// The key values of a list-map item, or `None` when it has no usable key.
fn key_of<'a>(item: &'a Value, keys: &[String]) -> Option<Vec<&'a Value>> {
    let map = item.as_object()?;
    keys.iter().map(|k| map.get(k).and_then(scalar)).collect()
}

/// The first item of `old` (a list under `schema`) with the same list-map keys as `item`.
pub fn correlated_item<'a>(old: &'a Value, item: &Value, schema: &Node) -> Option<&'a Value> {
    if schema.list_type.as_deref() != Some("map") || schema.list_map_keys.is_empty() {
        return None;
    }
    let key = key_of(item, &schema.list_map_keys)?;
    old.as_array()?
        .iter()
        .find(|candidate| key_of(candidate, &schema.list_map_keys).as_ref() == Some(&key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(list_type: &str, keys: &[&str]) -> Node {
        Node::compile(&json!({
            "type": "array",
            "x-kubernetes-list-type": list_type,
            "x-kubernetes-list-map-keys": keys,
            "items": {"type": "object"}
        }))
    }

    #[test]
    fn map_list_items_correlate_by_all_their_keys() {
        let schema = list("map", &["name", "port"]);
        let old = json!([
            {"name": "a", "port": 1, "v": "first"},
            {"name": "a", "port": 2, "v": "second"},
            {"name": "a", "port": 2, "v": "duplicate"}
        ]);
        let found = |item: Value| correlated_item(&old, &item, &schema).map(|v| v["v"].clone());
        assert_eq!(
            found(json!({"name": "a", "port": 2})),
            Some(json!("second"))
        );
        assert_eq!(
            found(json!({"name": "a", "port": 1, "x": 0})),
            Some(json!("first"))
        );
        assert_eq!(found(json!({"name": "b", "port": 1})), None);
        // Without every key, or with a key that is not a scalar, there is no correlation.
        assert_eq!(found(json!({"name": "a"})), None);
        assert_eq!(found(json!({"name": "a", "port": null})), None);
        assert_eq!(found(json!({"name": ["a"], "port": 1})), None);
        // 1 and 1.0 are different keys, as in Go's unstructured values.
        assert_eq!(found(json!({"name": "a", "port": 1.0})), None);
    }

    #[test]
    fn other_lists_do_not_correlate() {
        let old = json!([{"name": "a"}]);
        let item = json!({"name": "a"});
        assert_eq!(correlated_item(&old, &item, &list("set", &[])), None);
        assert_eq!(correlated_item(&old, &item, &list("atomic", &[])), None);
        assert_eq!(correlated_item(&old, &item, &list("map", &[])), None);
        assert_eq!(
            correlated_item(&json!({"name": "a"}), &item, &list("map", &["name"])),
            None
        );
    }
}
