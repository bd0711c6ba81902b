//! The JSON tree the validation engine and the admission logic read.
//!
//! A borrowed tree (`serde_json_borrow`): strings and keys point into the text it was parsed
//! from, objects are vectors of entries in the order sent. The webhook parses every request into
//! one, which costs a fraction of building a `serde_json::Value` (no allocation per string, no
//! hashing per key). Callers holding a `serde_json::Value` get a tree of it with [`tree_of`],
//! which borrows its strings.

pub use serde_json_borrow::{ObjectAsVec as Object, Value as Tree};

/// A tree borrowing the strings of `value`.
///
/// Not `Tree::from`: serde_json_borrow 0.9 converts every integer that fits an i64 into its
/// negative-integer variant, so a converted `5` would neither equal a parsed `5` nor be a u64.
pub fn tree_of(value: &serde_json::Value) -> Tree<'_> {
    use serde_json::Value;
    match value {
        Value::Null => Tree::Null,
        Value::Bool(b) => Tree::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Tree::from(u),
            (None, Some(i)) => Tree::from(i),
            // Without serde_json's arbitrary_precision every number is one of the three.
            (None, None) => n.as_f64().map_or(Tree::Null, Tree::from),
        },
        Value::String(s) => Tree::Str(s.as_str().into()),
        Value::Array(items) => Tree::Array(items.iter().map(tree_of).collect()),
        Value::Object(map) => {
            Tree::Object(map.iter().map(|(k, v)| (k.as_str(), tree_of(v))).collect())
        }
    }
}

/// The member `key` of an object (`serde_json::Value::get` semantics: `None` when `value` is not
/// an object or has no such member; the borrowed tree's own `get` answers `Null` instead).
pub fn field<'a, 'ctx>(value: &'a Tree<'ctx>, key: &str) -> Option<&'a Tree<'ctx>> {
    match value {
        Tree::Object(map) => map.get(key),
        _ => None,
    }
}

/// The value at a JSON Pointer (RFC 6901), like `serde_json::Value::pointer`.
pub fn pointer<'a, 'ctx>(root: &'a Tree<'ctx>, pointer: &str) -> Option<&'a Tree<'ctx>> {
    if pointer.is_empty() {
        return Some(root);
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').try_fold(root, |node, token| {
        let token = match token.contains('~') {
            true => std::borrow::Cow::Owned(token.replace("~1", "/").replace("~0", "~")),
            false => std::borrow::Cow::Borrowed(token),
        };
        match node {
            Tree::Object(map) => map.get(&token),
            Tree::Array(list) => token.parse::<usize>().ok().and_then(|i| list.get(i)),
            _ => None,
        }
    })
}

/// Where an object holds the same key twice: the JSON Pointer of the second occurrence.
///
/// `serde_json` and the API server keep the last of duplicate keys, while the borrowed tree keeps
/// all of them and reads the first; a reader of this tree must refuse such input rather than
/// judge a different object than the API server would store. (The API server itself never sends
/// duplicates: it encodes objects from maps.)
pub fn duplicate_key(tree: &Tree) -> Option<String> {
    fn escape(key: &str) -> String {
        key.replace('~', "~0").replace('/', "~1")
    }
    match tree {
        Tree::Object(map) => {
            // Small objects (almost all) are checked pairwise; large ones through a set, so a
            // hostile object with many keys costs linear time.
            let duplicate = if map.len() <= 16 {
                map.keys()
                    .enumerate()
                    .find(|(i, key)| map.keys().take(*i).any(|other| other == *key))
                    .map(|(_, key)| key)
            } else {
                let mut seen = std::collections::HashSet::with_capacity(map.len());
                map.keys().find(|key| !seen.insert(*key))
            };
            if let Some(key) = duplicate {
                return Some(format!("/{}", escape(key)));
            }
            // The key is escaped only once a duplicate was found below it: escaping every key of
            // every object on the way (two `replace`s each) was most of this check's cost.
            map.iter().find_map(|(key, value)| {
                let below = duplicate_key(value)?;
                Some(format!("/{}{below}", escape(key)))
            })
        }
        Tree::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, value)| Some(format!("/{i}{}", duplicate_key(value)?))),
        _ => None,
    }
}

/// JSON equality: objects are equal when they hold the same keys with equal values, in any order
/// (the derived `==` of the borrowed tree compares entry order too).
pub fn same(a: &Tree, b: &Tree) -> bool {
    match (a, b) {
        (Tree::Object(a), Tree::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        (Tree::Array(a), Tree::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

/// The value as a `serde_json::Value`, for patches and records that outlive the request.
pub fn to_owned_value(tree: &Tree) -> serde_json::Value {
    serde_json::Value::from(tree)
}

/// "a string", "an object", …: for messages about a value of the wrong type. A whole number is
/// "an integer", as the API server names it (its schema types tell `integer` from `number`).
pub fn type_name(value: &Tree) -> &'static str {
    match value {
        Tree::Null => "null",
        Tree::Bool(_) => "a boolean",
        Tree::Number(n) if n.is_f64() => "a number",
        Tree::Number(_) => "an integer",
        Tree::Str(_) => "a string",
        Tree::Array(_) => "a list",
        Tree::Object(_) => "an object",
    }
}

/// The value at an API-server field path, if present.
pub fn lookup<'a, 'ctx>(root: &'a Tree<'ctx>, path: &str) -> Option<&'a Tree<'ctx>> {
    promotion_findings::segments(path)
        .iter()
        .try_fold(root, |v, seg| match (seg, v) {
            (promotion_findings::Segment::Key(k), _) => field(v, k),
            (promotion_findings::Segment::Index(i), Tree::Array(items)) => items.get(*i),
            (promotion_findings::Segment::Index(_), _) => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointer_follows_keys_indices_and_escapes() {
        let owned = json!({"a": [{"b/c": {"d~e": 1}}], "": 2});
        let tree = tree_of(&owned);
        assert_eq!(pointer(&tree, "/a/0/b~1c/d~0e"), Some(&Tree::from(1u64)));
        assert_eq!(pointer(&tree, "/"), Some(&Tree::from(2u64)));
        assert_eq!(pointer(&tree, ""), Some(&tree));
        assert_eq!(pointer(&tree, "/a/1"), None);
        assert_eq!(pointer(&tree, "/a/x"), None);
        assert_eq!(pointer(&tree, "a"), None);
    }

    #[test]
    fn same_ignores_key_order_but_not_list_order_or_number_kinds() {
        let a = json!({"x": 1, "y": {"p": [1, 2], "q": null}});
        let b = json!({"y": {"q": null, "p": [1, 2]}, "x": 1});
        assert!(same(&tree_of(&a), &tree_of(&b)));
        let c = json!({"y": {"q": null, "p": [2, 1]}, "x": 1});
        assert!(!same(&tree_of(&a), &tree_of(&c)));
        assert!(!same(&tree_of(&json!(1)), &tree_of(&json!(1.0))));
        assert!(!same(
            &tree_of(&json!({"a": 1})),
            &tree_of(&json!({"a": 1, "b": 2}))
        ));
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth_and_in_large_objects() {
        let parse = |text: &str| -> Option<String> {
            let tree: Tree = serde_json::from_str(text).unwrap();
            duplicate_key(&tree)
        };
        assert_eq!(parse(r#"{"a": 1, "b": {"c": [1, {"d": 1}]}}"#), None);
        assert_eq!(parse(r#"{"a": 1, "a": 2}"#), Some("/a".into()));
        assert_eq!(
            parse(r#"{"a": {"x/y": [0, {"k": 1, "j": 2, "k": 3}]}}"#),
            Some("/a/x~1y/1/k".into())
        );
        let mut large: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        assert_eq!(parse(&format!("{{{}}}", large.join(","))), None);
        large.push("\"k7\": 0".into());
        assert_eq!(
            parse(&format!("{{{}}}", large.join(","))),
            Some("/k7".into())
        );
    }

    #[test]
    fn converted_trees_equal_parsed_ones() {
        let text = r#"{"n": 5, "neg": -3, "f": 1.5, "big": 18446744073709551615, "s": "x\"y", "l": [true, null]}"#;
        let owned: serde_json::Value = serde_json::from_str(text).unwrap();
        let parsed: Tree = serde_json::from_str(text).unwrap();
        assert_eq!(tree_of(&owned), parsed);
        assert_eq!(
            pointer(&tree_of(&owned), "/n").and_then(Tree::as_u64),
            Some(5)
        );
        assert_eq!(to_owned_value(&parsed), owned);
    }
}
