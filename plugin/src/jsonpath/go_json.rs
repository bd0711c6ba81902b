//! `encoding/json`'s `Marshal` and `MarshalIndent` for the values a jsonpath template prints:
//! keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped, Go's float layout. serde_json writes the
//! same documents differently (insertion order, `1e23`, raw `<`), and kubectl users diff bytes.

use serde_json::{Number, Value};

use super::go_strconv::format_float_json;

/// A JSON number as kubectl's decoder holds it: int64 when the literal fits, float64 otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum GoNumber {
    Int(i64),
    Float(f64),
}

pub(crate) fn go_number(n: &Number) -> GoNumber {
    match n.as_i64() {
        Some(i) => GoNumber::Int(i),
        None => GoNumber::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// Object members in Go's order (byte order of the keys).
pub(crate) fn sorted_members(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_by(|a, b| a.0.cmp(b.0));
    members
}

/// `json.Marshal(v)`.
pub(crate) fn marshal(v: &Value) -> String {
    let mut out = String::new();
    write_compact(&mut out, v);
    out
}

/// `json.MarshalIndent(v, "", "    ")`.
pub(crate) fn marshal_indent(v: &Value) -> String {
    let mut out = String::new();
    write_indented(&mut out, v, 0);
    out
}

fn write_compact(out: &mut String, v: &Value) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in sorted_members(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_compact(out, item);
            }
            out.push('}');
        }
        scalar => write_scalar(out, scalar),
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("    ");
    }
}

fn write_indented(out: &mut String, v: &Value, depth: usize) {
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, depth + 1);
                write_indented(out, item, depth + 1);
            }
            out.push('\n');
            indent(out, depth);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push_str("{\n");
            for (i, (k, item)) in sorted_members(map).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, depth + 1);
                write_string(out, k);
                out.push_str(": ");
                write_indented(out, item, depth + 1);
            }
            out.push('\n');
            indent(out, depth);
            out.push('}');
        }
        other => write_compact(out, other),
    }
}

fn write_scalar(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => out.push_str(&i.to_string()),
            GoNumber::Float(f) => out.push_str(&format_float_json(f)),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(_) | Value::Object(_) => write_compact(out, v),
    }
}

/// A JSON string as Go writes it with HTML escaping on (the default for `json.Marshal`).
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compact_output_sorts_keys_and_escapes_html() {
        let v = json!({"s": "x<y>&\u{2028}\u{8}\u{c}\u{1}é\t", "b": [1, 1.5, 1e23, null, true], "a": {}});
        assert_eq!(
            marshal(&v),
            r#"{"a":{},"b":[1,1.5,1e+23,null,true],"s":"x\u003cy\u003e\u0026\u2028\b\f\u0001é\t"}"#
        );
    }

    #[test]
    fn indented_output_matches_marshal_indent() {
        let v = json!([{"y": "2", "x": "1"}, [], {}, [1]]);
        assert_eq!(
            marshal_indent(&v),
            "[\n    {\n        \"x\": \"1\",\n        \"y\": \"2\"\n    },\n    [],\n    {},\n    [\n        1\n    ]\n]"
        );
    }

    #[test]
    fn numbers_keep_kubectls_int_and_float_split() {
        let v: Value =
            serde_json::from_str(r#"[3, 1.0, 18446744073709551615, -9223372036854775808]"#)
                .unwrap();
        assert_eq!(
            marshal(&v),
            "[3,1,18446744073709552000,-9223372036854775808]"
        );
    }
}
