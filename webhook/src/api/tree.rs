//! The request's objects as JSON trees, built without `metadata.managedFields`.
//!
//! The API server sends each object with its server-side-apply bookkeeping: per field manager, a
//! `fieldsV1` map that mirrors the fields that manager owns, often as large as the spec itself and
//! sent twice on an UPDATE (object and oldObject). No admission rule reads it and no patch
//! addresses it, so it is skipped while parsing instead of being built into the tree and dropped.
//! Everything else is kept exactly as sent, in order.

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// `deserialize_with` for an optional object: `null` or absent is `None`.
pub fn optional_object<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    deserializer.deserialize_option(Optional)
}

struct Optional;

impl<'de> Visitor<'de> for Optional {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object or null")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(Node::Root).map(Some)
    }
}

/// Where in the object a value sits: only the object's own `metadata` has managed fields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Node {
    Root,
    Metadata,
}

impl<'de> serde::de::DeserializeSeed<'de> for Node {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let value = match (self, key.as_str()) {
                (Node::Root, "metadata") => access.next_value_seed(Node::Metadata)?,
                (Node::Metadata, "managedFields") => {
                    access.next_value::<IgnoredAny>()?;
                    continue;
                }
                _ => access.next_value::<Value>()?,
            };
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }

    // Anything but an object is kept as serde_json would build it; the engine reports it.
    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut list = Vec::new();
        while let Some(item) = access.next_element::<Value>()? {
            list.push(item);
        }
        Ok(Value::Array(list))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(default, deserialize_with = "optional_object")]
        object: Option<Value>,
    }

    fn parse(text: &str) -> Option<Value> {
        serde_json::from_str::<Holder>(text).unwrap().object
    }

    #[test]
    fn managed_fields_of_the_object_are_left_out_and_the_rest_kept_in_order() {
        let object = parse(
            r#"{"object": {"metadata": {"name": "p", "managedFields": [{"manager": "kubectl",
                "fieldsV1": {"f:spec": {}}}], "uid": "1"}, "spec": {"z": 1, "a": [true, null, 1.5,
                "s\n"], "managedFields": "kept"}}}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&object).unwrap(),
            r#"{"metadata":{"name":"p","uid":"1"},"spec":{"z":1,"a":[true,null,1.5,"s\n"],"managedFields":"kept"}}"#
        );
    }

    #[test]
    fn null_absent_and_non_objects_decode_as_serde_json_would() {
        assert_eq!(parse(r#"{"object": null}"#), None);
        assert_eq!(parse(r#"{}"#), None);
        for other in [
            json!("text"),
            json!(7),
            json!(-7),
            json!([1, {"a": 2}]),
            json!(false),
        ] {
            let text = format!(r#"{{"object": {other}}}"#);
            assert_eq!(parse(&text), Some(other));
        }
    }

    #[test]
    fn a_managed_fields_value_of_any_shape_is_skipped() {
        let object = parse(r#"{"object": {"metadata": {"managedFields": {"odd": [1, [2]]}}}}"#);
        assert_eq!(object, Some(json!({"metadata": {}})));
    }
}
