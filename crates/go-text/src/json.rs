//! Go's `encoding/json` output, byte for byte: string escaping as `json.Marshal` does it (HTML
//! escaping on: `<`, `>`, `&` → `\u003c`…; U+2028/U+2029 escaped; `\b` and `\f` short, as since
//! Go 1.22; invalid UTF-8 → `\ufffd` per byte), float64 text, `Marshal`/`MarshalIndent` of
//! decoded JSON (`map[string]interface{}`: keys sorted), and [`GoJson`], a writer for Go structs
//! (fields in declaration order) such as the ones Sveltos hashes.

use serde_json::{Map, Number, Value};

use crate::strconv::{format_float as strconv_float, FloatFormat};

/// A JSON number as Kubernetes' decoder (`k8s.io/apimachinery` `json.Unmarshal` into
/// `interface{}`) holds it: int64 when the literal is an integer that fits, float64 otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GoNumber {
    Int(i64),
    Float(f64),
}

/// The Go value behind a decoded JSON number.
pub fn go_number(n: &Number) -> GoNumber {
    match n.as_i64() {
        Some(i) => GoNumber::Int(i),
        None => GoNumber::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// Object members in the order Go ranges a map for printing and encoding (byte order of keys).
pub fn sorted_members(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    members
}

/// A string as `json.Marshal` writes it.
pub fn quote(s: &str) -> String {
    quote_bytes(s.as_bytes())
}

/// A Go string's bytes as `json.Marshal` writes them: a byte that is not part of valid UTF-8
/// becomes `\ufffd`, one per byte.
pub fn quote_bytes(bytes: &[u8]) -> String {
    crate::quoted(bytes, push_escaped, |out, _| out.push_str("\\ufffd"))
}

/// Append `s` quoted as `json.Marshal` writes a string.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    push_escaped(out, s);
    out.push('"');
}

/// encoding/json `appendString` with `escapeHTML` on (what `json.Marshal` uses).
fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

/// encoding/json's float64 encoder: `'f'` unless the magnitude is below 1e-6 or at least 1e21,
/// then `'e'` with `e-07` shortened to `e-7`. `None` for NaN and ±Inf (Go's
/// `UnsupportedValueError`).
pub fn format_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let mut text = strconv_float(f, FloatFormat::E);
        let n = text.len();
        let b = text.as_bytes();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            text.remove(n - 2);
        }
        return Some(text);
    }
    Some(strconv_float(f, FloatFormat::F))
}

/// The order in which [`GoJson::value`] writes an object's members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrder {
    /// A Go map: keys sorted bytewise (what `json.Marshal` of a `map[string]…` writes).
    Sorted,
    /// A Go struct: members in the order the `Value` holds them (the workspace builds
    /// serde_json with `preserve_order`), i.e. the declaration order the caller built.
    AsWritten,
}

/// `json.Marshal(v)` of a decoded JSON value (objects are Go maps: keys sorted).
pub fn marshal(v: &Value) -> String {
    let mut w = GoJson::new();
    w.value(v, KeyOrder::Sorted);
    w.finish()
}

/// `json.MarshalIndent(v, prefix, indent)` of a decoded JSON value.
pub fn marshal_indent(v: &Value, prefix: &str, indent: &str) -> String {
    let mut out = String::new();
    write_indented(&mut out, v, prefix, indent, 0);
    out
}

fn newline(out: &mut String, prefix: &str, indent: &str, depth: usize) {
    out.push('\n');
    out.push_str(prefix);
    for _ in 0..depth {
        out.push_str(indent);
    }
}

fn write_indented(out: &mut String, v: &Value, prefix: &str, indent: &str, depth: usize) {
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, prefix, indent, depth + 1);
                write_indented(out, item, prefix, indent, depth + 1);
            }
            newline(out, prefix, indent, depth);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (k, item)) in sorted_members(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, prefix, indent, depth + 1);
                write_string(out, k);
                out.push_str(": ");
                write_indented(out, item, prefix, indent, depth + 1);
            }
            newline(out, prefix, indent, depth);
            out.push('}');
        }
        other => out.push_str(&marshal(other)),
    }
}

/// A compact `json.Marshal` writer for values built piece by piece: a Go struct is
/// `begin_object`, then `field`s in declaration order (the caller leaves out `omitempty` fields
/// that are empty), then `end_object`.
#[derive(Debug, Default)]
pub struct GoJson {
    out: String,
    /// One entry per open object or array: whether it has a member yet.
    open: Vec<bool>,
    /// A key was just written; the next value belongs to it.
    after_key: bool,
}

impl GoJson {
    pub fn new() -> Self {
        Self::default()
    }

    /// The comma before a value or key, where one is due.
    fn separate(&mut self) {
        if self.after_key {
            self.after_key = false;
            return;
        }
        if let Some(has_member) = self.open.last_mut() {
            if *has_member {
                self.out.push(',');
            }
            *has_member = true;
        }
    }

    pub fn begin_object(&mut self) -> &mut Self {
        self.separate();
        self.out.push('{');
        self.open.push(false);
        self
    }

    pub fn end_object(&mut self) -> &mut Self {
        self.open.pop();
        self.out.push('}');
        self
    }

    pub fn begin_array(&mut self) -> &mut Self {
        self.separate();
        self.out.push('[');
        self.open.push(false);
        self
    }

    pub fn end_array(&mut self) -> &mut Self {
        self.open.pop();
        self.out.push(']');
        self
    }

    /// A member name; the next value written is its value.
    pub fn field(&mut self, name: &str) -> &mut Self {
        self.separate();
        write_string(&mut self.out, name);
        self.out.push(':');
        self.after_key = true;
        self
    }

    pub fn string(&mut self, s: &str) -> &mut Self {
        self.separate();
        write_string(&mut self.out, s);
        self
    }

    pub fn int(&mut self, i: i64) -> &mut Self {
        self.separate();
        self.out.push_str(&i.to_string());
        self
    }

    pub fn uint(&mut self, u: u64) -> &mut Self {
        self.separate();
        self.out.push_str(&u.to_string());
        self
    }

    pub fn bool(&mut self, b: bool) -> &mut Self {
        self.separate();
        self.out.push_str(if b { "true" } else { "false" });
        self
    }

    pub fn null(&mut self) -> &mut Self {
        self.separate();
        self.out.push_str("null");
        self
    }

    /// A float64; NaN and ±Inf, which `json.Marshal` refuses, are written as `null` (a decoded
    /// JSON document cannot hold them).
    pub fn float(&mut self, f: f64) -> &mut Self {
        self.separate();
        self.out
            .push_str(format_float(f).as_deref().unwrap_or("null"));
        self
    }

    /// A decoded JSON number with the Go type Kubernetes' decoder gives it.
    pub fn number(&mut self, n: &Number) -> &mut Self {
        match go_number(n) {
            GoNumber::Int(i) => self.int(i),
            GoNumber::Float(f) => self.float(f),
        }
    }

    /// A whole JSON value, objects in `order`.
    pub fn value(&mut self, v: &Value, order: KeyOrder) -> &mut Self {
        match v {
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Number(n) => self.number(n),
            Value::String(s) => self.string(s),
            Value::Array(items) => {
                self.begin_array();
                for item in items {
                    self.value(item, order);
                }
                self.end_array()
            }
            Value::Object(map) => {
                self.begin_object();
                let members: Vec<(&String, &Value)> = match order {
                    KeyOrder::Sorted => sorted_members(map),
                    KeyOrder::AsWritten => map.iter().collect(),
                };
                for (k, item) in members {
                    self.field(k);
                    self.value(item, order);
                }
                self.end_object()
            }
        }
    }

    /// The text written so far.
    pub fn finish(self) -> String {
        self.out
    }
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
            marshal_indent(&v, "", "    "),
            "[\n    {\n        \"x\": \"1\",\n        \"y\": \"2\"\n    },\n    [],\n    {},\n    [\n        1\n    ]\n]"
        );
    }

    #[test]
    fn numbers_keep_the_int64_and_float64_split() {
        let v: Value =
            serde_json::from_str(r#"[3, 1.0, 18446744073709551615, -9223372036854775808]"#)
                .unwrap();
        assert_eq!(
            marshal(&v),
            "[3,1,18446744073709552000,-9223372036854775808]"
        );
    }

    #[test]
    fn structs_keep_declaration_order_and_maps_sort() {
        let mut w = GoJson::new();
        w.begin_array();
        w.begin_object();
        w.field("name").string("b<");
        w.field("labels")
            .value(&json!({"z": "1", "a": "2"}), KeyOrder::Sorted);
        w.field("spec")
            .value(&json!({"z": 1, "a": [true]}), KeyOrder::AsWritten);
        w.end_object();
        w.begin_object().end_object();
        w.end_array();
        assert_eq!(
            w.finish(),
            r#"[{"name":"b\u003c","labels":{"a":"2","z":"1"},"spec":{"z":1,"a":[true]}},{}]"#
        );
    }

    #[test]
    fn invalid_utf8_becomes_one_replacement_per_byte() {
        assert_eq!(quote_bytes(b"a\xe0\xa0z\xff"), r#""a\ufffd\ufffdz\ufffd""#);
    }
}
