//! One value met while executing a template, and how Go shows it in messages and columns.

use go_text::fmt::{float_v, sprint};
use go_text::json::{go_number, GoNumber};
use serde_json::Value;

/// One value produced while evaluating a template.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val<'a> {
    /// reflect's zero value: what a `range` hands over for a `null` item or an empty list.
    Invalid,
    /// A value of the document; `Value::Null` is a nil `interface{}`.
    Json(&'a Value),
    /// A quoted string or text of the template.
    Text(&'a str),
    /// An integer literal of the template (Go `int`).
    Int(i64),
    Float(f64),
    Bool(bool),
    /// One byte of a string, from `*` or `..` over it (Go `uint8`).
    Byte(u8),
}

impl Val<'_> {
    /// `fmt.Sprint` of the value, as custom-columns prints it (`map[a:b]`, `[x y]`, `<nil>`).
    pub(crate) fn sprint(&self) -> String {
        match self {
            // kubectl itself panics on this value; it only arises from a range over nothing.
            Val::Invalid => "<no value>".into(),
            Val::Json(j) => sprint(j),
            Val::Text(t) => (*t).to_string(),
            Val::Int(i) => i.to_string(),
            Val::Float(f) => float_v(*f),
            Val::Bool(b) => b.to_string(),
            Val::Byte(b) => b.to_string(),
        }
    }

    /// `fmt.Sprintf("%v", reflect.Value)`, as jsonpath error messages show a value.
    pub(crate) fn sprint_reflect(&self) -> String {
        match self {
            Val::Invalid => "<invalid reflect.Value>".into(),
            other => other.sprint(),
        }
    }

    /// Go's type name of a value after dereferencing, for "… is not array or slice".
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Val::Invalid => "<invalid reflect.Value>",
            Val::Json(Value::Null) => "interface {}",
            Val::Json(Value::Bool(_)) | Val::Bool(_) => "bool",
            Val::Json(Value::Number(n)) => match go_number(n) {
                GoNumber::Int(_) => "int64",
                GoNumber::Float(_) => "float64",
            },
            Val::Json(Value::String(_)) | Val::Text(_) => "string",
            Val::Json(Value::Array(_)) => "[]interface {}",
            Val::Json(Value::Object(_)) => "map[string]interface {}",
            Val::Int(_) => "int",
            Val::Float(_) => "float64",
            Val::Byte(_) => "uint8",
        }
    }
}
