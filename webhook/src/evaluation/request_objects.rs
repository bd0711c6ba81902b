//! The request's objects as borrowed JSON trees, built without `metadata.managedFields`.
//!
//! The API server sends each object with its server-side-apply bookkeeping: per field manager, a
//! `fieldsV1` map that mirrors the fields that manager owns, often as large as the spec itself and
//! sent twice on an UPDATE (object and oldObject). No admission rule reads it and no patch
//! addresses it, so it is skipped while parsing instead of being built into the tree. Everything
//! else is kept as sent, in order, with strings and keys pointing into the body.
//!
//! Only [`super::wire`] uses this, as the `deserialize_with` of `object` and `oldObject`. The tree
//! type itself, and the accessors the admission logic reads it with, are `promotion_shared::tree`.

use std::borrow::Cow;
use std::fmt;

use promotion_shared::tree::Tree;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// `deserialize_with` for an optional object: `null` or absent is `None`.
pub fn optional_object<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Tree<'de>>, D::Error> {
    deserializer.deserialize_option(Optional)
}

struct Optional;

impl<'de> Visitor<'de> for Optional {
    type Value = Option<Tree<'de>>;

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

impl Node {
    /// The names the API server sends at this level. The borrowed tree keeps keys as slices of
    /// the body, so a key written with escapes (which the API server never does for these
    /// field names) is matched against them; any other escaped key at these two levels is not a
    /// field of a ClusterPromotion, is read by no rule, and is left out.
    fn known(self) -> &'static [&'static str] {
        match self {
            Node::Root => &["apiVersion", "kind", "metadata", "spec", "status"],
            Node::Metadata => &crd_schema::OBJECT_META_FIELDS,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node {
    type Value = Tree<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tree<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node {
    type Value = Tree<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Tree<'de>, A::Error> {
        let mut entries: Vec<(&'de str, Tree<'de>)> = Vec::new();
        while let Some(key) = access.next_key_seed(Key)? {
            let key = match key {
                Cow::Borrowed(key) => key,
                Cow::Owned(key) => match self.known().iter().find(|k| **k == key) {
                    Some(known) => known,
                    None => {
                        access.next_value::<IgnoredAny>()?;
                        continue;
                    }
                },
            };
            let value = match (self, key) {
                (Node::Root, "metadata") => access.next_value_seed(Node::Metadata)?,
                (Node::Metadata, "managedFields") => {
                    access.next_value::<IgnoredAny>()?;
                    continue;
                }
                _ => access.next_value::<Tree<'de>>()?,
            };
            entries.push((key, value));
        }
        Ok(Tree::Object(entries.into_iter().collect()))
    }

    // Anything but an object is kept as it is; the engine reports it.
    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Tree<'de>, A::Error> {
        let mut list = Vec::new();
        while let Some(item) = access.next_element::<Tree<'de>>()? {
            list.push(item);
        }
        Ok(Tree::Array(list))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Tree<'de>, E> {
        Ok(Tree::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Tree<'de>, E> {
        // As the borrowed tree's own parser: non-negative integers are unsigned.
        Ok(match u64::try_from(v) {
            Ok(u) => Tree::from(u),
            Err(_) => Tree::from(v),
        })
    }

    fn visit_u64<E>(self, v: u64) -> Result<Tree<'de>, E> {
        Ok(Tree::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Tree<'de>, E> {
        Ok(Tree::from(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Tree<'de>, E> {
        Ok(Tree::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Tree<'de>, E> {
        Ok(Tree::Str(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Tree<'de>, E> {
        Ok(Tree::Str(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Tree<'de>, E> {
        Ok(Tree::Null)
    }

    fn visit_none<E>(self) -> Result<Tree<'de>, E> {
        Ok(Tree::Null)
    }
}

/// An object key, borrowed from the body unless it had to be unescaped.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promotion_shared::tree::{to_owned_value, tree_of};
    use serde::Deserialize;
    use serde_json::{json, Value};

    #[derive(Deserialize)]
    struct Holder<'a> {
        #[serde(default, borrow, deserialize_with = "optional_object")]
        object: Option<Tree<'a>>,
    }

    fn parse(text: &str) -> Option<Value> {
        serde_json::from_str::<Holder>(text)
            .unwrap()
            .object
            .map(|tree| to_owned_value(&tree))
    }

    #[test]
    fn managed_fields_of_the_object_are_left_out_and_the_rest_kept_in_order() {
        let object = parse(
            r#"{"object": {"metadata": {"name": "p", "managedFields": [{"manager": "kubectl",
                "fieldsV1": {"f:spec": {}}}], "uid": "1"}, "spec": {"z": 1, "a": [true, null, 1.5,
                "s\n", -2], "managedFields": "kept"}}}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&object).unwrap(),
            r#"{"metadata":{"name":"p","uid":"1"},"spec":{"z":1,"a":[true,null,1.5,"s\n",-2],"managedFields":"kept"}}"#
        );
    }

    #[test]
    fn trees_equal_what_the_borrowed_parser_builds() {
        let text = r#"{"metadata": {"name": "p", "labels": {"a\"b": "c\u00e9"}}, "spec": {"n": 5, "m": -5, "f": 0.5}}"#;
        let holder = format!(r#"{{"object": {text}}}"#);
        let ours = serde_json::from_str::<Holder>(&holder)
            .unwrap()
            .object
            .unwrap();
        let theirs: Tree = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs);
        let owned: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, tree_of(&owned));
    }

    #[test]
    fn escaped_keys_at_the_top_levels_are_matched_to_the_field_names() {
        let object = parse(
            r#"{"object": {"\u0073pec": {"a": 1}, "metadata": {"n\u0061me": "p", "x\"y": 1}, "odd\"key": 2}}"#,
        );
        assert_eq!(
            object,
            Some(json!({"spec": {"a": 1}, "metadata": {"name": "p"}}))
        );
    }

    #[test]
    fn null_absent_and_non_objects_decode_as_json() {
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
