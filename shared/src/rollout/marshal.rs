//! `json.Marshal` of a Go value, from the JSON the API server stores for it: members in the Go
//! type's declaration order ([`super::go_types`]), `omitempty` as Go applies it, maps with sorted
//! keys, durations normalised, strings escaped as Go escapes them (`go_text::json`). Compact, as
//! Go writes it: no spaces, no trailing newline.

use crate::tree::Tree;

use super::go_types::{Field, Go, Tag};
use super::sorting;

/// A value that Go could not have decoded into its type (the API server stores only what the
/// CRD's schema allows, so this happens for files that `kubectl apply` would refuse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Where, as a JSON path below the hashed value (`helmCharts[0].options.timeout`).
    pub path: String,
    pub expected: &'static str,
}

/// Writes one value; records the members Go drops because its type has no such field.
pub struct Marshaler<'o> {
    pub out: &'o mut String,
    /// Paths of members present in the JSON that the Go type does not have (Go ignores them).
    pub dropped: Vec<String>,
    /// Sort the lists Sveltos sorts before hashing a `ProfileSpec` (`controllers/sort.go`).
    pub sort_profile_lists: bool,
}

impl<'o> Marshaler<'o> {
    /// Writes to `out`, dropping nothing yet.
    pub fn new(out: &'o mut String, sort_profile_lists: bool) -> Self {
        Marshaler {
            out,
            dropped: Vec::new(),
            sort_profile_lists,
        }
    }

    pub fn write_struct(
        &mut self,
        value: Option<&Tree>,
        fields: &[Field],
        path: &str,
        top_level: bool,
    ) -> Result<(), Mismatch> {
        let members = match value {
            None | Some(Tree::Null) => None,
            Some(Tree::Object(map)) => Some(map),
            Some(_) => return Err(mismatch(path, "an object")),
        };
        if let Some(members) = members {
            for (key, v) in members.iter() {
                if !v.is_null() && !fields.iter().any(|f| f.name == key) {
                    self.dropped.push(join(path, key));
                }
            }
        }
        self.out.push('{');
        let mut first = true;
        for field in fields {
            let v = members
                .and_then(|m| m.get(field.name))
                .filter(|v| !v.is_null());
            let write = match (field.tag, v) {
                (Tag::Pointer, None) => false,
                (Tag::OmitEmpty, None) => matches!(field.ty, Go::Struct(_)),
                (Tag::Always, None) => true,
                (Tag::OmitEmpty, Some(v)) => !is_empty(v, &field.ty),
                (_, Some(_)) => true,
            };
            if !write {
                continue;
            }
            if !first {
                self.out.push(',');
            }
            first = false;
            go_text::json::write_string(self.out, field.name);
            self.out.push(':');
            let here = join(path, field.name);
            let sort = (top_level && self.sort_profile_lists)
                .then(|| sorting::key_of(field.name))
                .flatten();
            match (v, sort) {
                (Some(Tree::Array(items)), Some(key)) => {
                    let Go::List(elem) = &field.ty else {
                        return Err(mismatch(&here, "a list"));
                    };
                    self.out.push('[');
                    for (n, (i, item)) in sorting::sorted(items, key).into_iter().enumerate() {
                        if n > 0 {
                            self.out.push(',');
                        }
                        self.write(Some(item), elem, &format!("{here}[{i}]"))?;
                    }
                    self.out.push(']');
                }
                _ => self.write(v, &field.ty, &here)?,
            }
        }
        self.out.push('}');
        Ok(())
    }

    /// One value of type `ty`; `None` is Go's zero value.
    pub fn write(&mut self, value: Option<&Tree>, ty: &Go, path: &str) -> Result<(), Mismatch> {
        let value = value.filter(|v| !v.is_null());
        match ty {
            Go::Struct(fields) => return self.write_struct(value, fields, path, false),
            Go::List(elem) => {
                let Some(value) = value else {
                    self.out.push_str("null");
                    return Ok(());
                };
                let Tree::Array(items) = value else {
                    return Err(mismatch(path, "a list"));
                };
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.write(Some(item), elem, &format!("{path}[{i}]"))?;
                }
                self.out.push(']');
                return Ok(());
            }
            _ => {}
        }
        match (ty, value) {
            (Go::Str, None) => self.out.push_str("\"\""),
            (Go::Str, Some(Tree::Str(s))) => go_text::json::write_string(self.out, s),
            (Go::Str, Some(_)) => return Err(mismatch(path, "a string")),
            (Go::Int | Go::IntOrString, None) => self.out.push('0'),
            (Go::Int | Go::IntOrString, Some(Tree::Number(n))) => {
                let text = n
                    .as_i64()
                    .map(|i| i.to_string())
                    .or_else(|| n.as_u64().map(|u| u.to_string()))
                    .ok_or_else(|| mismatch(path, "an integer"))?;
                self.out.push_str(&text);
            }
            (Go::IntOrString, Some(Tree::Str(s))) => go_text::json::write_string(self.out, s),
            (Go::Int, Some(_)) => return Err(mismatch(path, "an integer")),
            (Go::IntOrString, Some(_)) => return Err(mismatch(path, "an integer or a string")),
            (Go::Bool, None) => self.out.push_str("false"),
            (Go::Bool, Some(Tree::Bool(b))) => self.out.push_str(if *b { "true" } else { "false" }),
            (Go::Bool, Some(_)) => return Err(mismatch(path, "a boolean")),
            (Go::Duration, None) => self.out.push_str("\"0s\""),
            (Go::Duration, Some(Tree::Str(s))) => {
                let ns = go_text::duration::parse_go_duration(s)
                    .ok()
                    .and_then(|ns| i64::try_from(ns).ok())
                    .ok_or_else(|| mismatch(path, "a Go duration"))?;
                go_text::json::write_string(self.out, &go_text::duration::format(ns));
            }
            (Go::Duration, Some(_)) => return Err(mismatch(path, "a Go duration")),
            (Go::StrMap, None) => self.out.push_str("null"),
            (Go::StrMap, Some(Tree::Object(map))) => {
                let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(map.len());
                for (k, v) in map.iter() {
                    match v {
                        Tree::Str(s) => pairs.push((k, s)),
                        _ => return Err(mismatch(&join(path, k), "a string")),
                    }
                }
                // A JSON object with a repeated key decodes to the last value in Go.
                pairs.reverse();
                pairs.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                pairs.dedup_by(|later, earlier| later.0 == earlier.0);
                self.out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    go_text::json::write_string(self.out, k);
                    self.out.push(':');
                    go_text::json::write_string(self.out, v);
                }
                self.out.push('}');
            }
            (Go::StrMap, Some(_)) => return Err(mismatch(path, "a map of strings")),
            (Go::List(_) | Go::Struct(_), _) => unreachable!("handled above"),
        }
        Ok(())
    }
}

/// Go's `omitempty` test for a value that is present.
fn is_empty(value: &Tree, ty: &Go) -> bool {
    match (ty, value) {
        (Go::Str, Tree::Str(s)) => s.is_empty(),
        (Go::Int, Tree::Number(n)) => n.as_i64() == Some(0) || n.as_u64() == Some(0),
        (Go::Bool, Tree::Bool(b)) => !b,
        (Go::List(_), Tree::Array(items)) => items.is_empty(),
        (Go::StrMap, Tree::Object(map)) => map.is_empty(),
        _ => false,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn mismatch(path: &str, expected: &'static str) -> Mismatch {
    Mismatch {
        path: path.to_string(),
        expected,
    }
}
