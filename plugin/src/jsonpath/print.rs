//! Writing results, ported from client-go's `PrintResults` and `evalToText`: maps and lists as
//! compact JSON, scalars as Go's `fmt` prints them, values of one group separated by a space; with
//! `jsonpath-as-json`, each group as an indented JSON array on its own line.

use go_text::fmt::{float_v, number_v};
use go_text::json::marshal;
use serde_json::{Number, Value};

use super::value::Val;

/// One group in the plain jsonpath output.
pub(crate) fn group_text(group: &[Val<'_>]) -> String {
    let mut out = String::new();
    for (i, value) in group.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&text(value));
    }
    out
}

/// One group in the `jsonpath-as-json` output.
pub(crate) fn group_json(group: &[Val<'_>]) -> String {
    let array = Value::Array(group.iter().map(to_value).collect());
    let mut out = go_text::json::marshal_indent(&array, "", "    ");
    out.push('\n');
    out
}

fn text(value: &Val<'_>) -> String {
    match value {
        Val::Invalid => "<no value>".into(),
        Val::Json(Value::Null) => "null".into(),
        Val::Json(v @ (Value::Object(_) | Value::Array(_))) => marshal(v),
        Val::Json(Value::String(s)) => s.clone(),
        Val::Json(Value::Bool(b)) | Val::Bool(b) => b.to_string(),
        Val::Json(Value::Number(n)) => number_v(n),
        Val::Text(t) => (*t).to_string(),
        Val::Int(i) => i.to_string(),
        Val::Float(f) => float_v(*f),
        Val::Byte(b) => b.to_string(),
    }
}

fn to_value(value: &Val<'_>) -> Value {
    match value {
        // kubectl panics marshalling this value; null is the honest rendering of "nothing".
        Val::Invalid => Value::Null,
        Val::Json(v) => (*v).clone(),
        Val::Text(t) => Value::String((*t).to_string()),
        Val::Int(i) => Value::Number((*i).into()),
        Val::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Val::Bool(b) => Value::Bool(*b),
        Val::Byte(b) => Value::Number((*b).into()),
    }
}
