//! `self` as the API server binds it (`UnstructuredToVal`): declared properties by their escaped
//! CEL names (`my-key` as `my__dash__key`), `integer` nodes as `int`, `number` nodes as
//! `double`, map keys as written.
//!
//! A rule that only selects fields of `self` (`self.x`, `has(self.x)`) cannot observe the
//! others, so only the fields it reads are bound, and a field whose presence alone is tested is
//! bound to a placeholder: the same results for a fraction of the conversion.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr};
use serde_json::{Map, Value};

use crate::schema::structural::Node;

/// A field of `self` a rule reads, and whether it only tests its presence (`has(self.x)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelfField {
    pub name: String,
    pub presence_only: bool,
}

/// Add a field to a set, a value read winning over a presence test.
pub fn note(fields: &mut Vec<SelfField>, name: &str, presence_only: bool) {
    match fields.iter_mut().find(|f| f.name == name) {
        Some(f) => f.presence_only &= presence_only,
        None => fields.push(SelfField {
            name: name.to_string(),
            presence_only,
        }),
    }
}

/// The fields of `self` an expression reads, or `None` when it uses `self` other than by
/// selecting a field (compares it, iterates it, passes it to a function).
pub fn self_fields(e: &cel::IdedExpr) -> Option<Vec<SelfField>> {
    let mut fields = Vec::new();
    selects_only(e, &mut fields).then_some(fields)
}

fn selects_only(e: &cel::IdedExpr, fields: &mut Vec<SelfField>) -> bool {
    let entry = |en: &IdedEntryExpr, fields: &mut Vec<SelfField>| match &en.expr {
        EntryExpr::MapEntry(m) => selects_only(&m.key, fields) && selects_only(&m.value, fields),
        EntryExpr::StructField(f) => selects_only(&f.value, fields),
    };
    match &e.expr {
        Expr::Ident(name) => name != "self",
        Expr::Select(sel) => match &sel.operand.expr {
            Expr::Ident(name) if name == "self" => {
                note(fields, &sel.field, sel.test);
                true
            }
            _ => selects_only(&sel.operand, fields),
        },
        Expr::Call(call) => {
            call.target
                .as_deref()
                .is_none_or(|t| selects_only(t, fields))
                && call.args.iter().all(|a| selects_only(a, fields))
        }
        Expr::Comprehension(c) => {
            let rebinds = c.iter_var == "self"
                || c.accu_var == "self"
                || c.iter_var2.as_deref() == Some("self");
            !rebinds
                && [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .into_iter()
                .all(|x| selects_only(x, fields))
        }
        Expr::List(list) => list.elements.iter().all(|x| selects_only(x, fields)),
        Expr::Map(map) => map.entries.iter().all(|en| entry(en, fields)),
        Expr::Struct(st) => st.entries.iter().all(|en| entry(en, fields)),
        Expr::Literal(_) | Expr::Unspecified => true,
    }
}

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

const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// `cel.Escape` (apiserver/pkg/cel/escaping.go): how a property name is spelt in a rule;
/// `None` for a name rules cannot reach.
pub fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '-' | '/'));
    let rest_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'));
    if !first_ok || !rest_ok {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_property_names_as_the_api_server() {
        assert_eq!(escape("delay").as_deref(), Some("delay"));
        assert_eq!(escape("my-key").as_deref(), Some("my__dash__key"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }

    fn fields(rule: &str) -> Option<Vec<(String, bool)>> {
        let program = cel::Program::compile(rule).unwrap();
        self_fields(program.expression())
            .map(|f| f.into_iter().map(|f| (f.name, f.presence_only)).collect())
    }

    #[test]
    fn finds_the_fields_a_rule_reads() {
        assert_eq!(
            fields("has(self.manual) != has(self.auto)"),
            Some(vec![("manual".into(), true), ("auto".into(), true)])
        );
        assert_eq!(
            fields("self.repositoryURL.startsWith('http') ? size(self.chartName) >= 1 : true"),
            Some(vec![
                ("repositoryURL".into(), false),
                ("chartName".into(), false)
            ])
        );
        // Tested and read: the value is needed.
        assert_eq!(
            fields("!has(self.x) || self.x > 1"),
            Some(vec![("x".into(), false)])
        );
        assert_eq!(fields("self == oldSelf"), None);
        assert_eq!(fields("size(self) > 1"), None);
        assert_eq!(fields("self.all(k, k != 'x')"), None);
        assert_eq!(fields("[1].all(self, self > 0)"), None);
    }
}
