//! Go's `fmt` verbs applied to decoded JSON values (`map[string]interface{}`, `[]interface{}`,
//! int64, float64, string, bool, nil, as Kubernetes decodes them): `%v` (`map[a:b]`, `[x y]`,
//! `<nil>`), `%#v` (`map[string]interface {}{"a":1}`), and `%#U` of a rune.

use serde_json::Value;

use crate::json::{go_number, sorted_members, GoNumber};
use crate::strconv::{format_float, is_print, quote, FloatFormat};

/// `%v` of a float64: `strconv.FormatFloat(f, 'g', -1, 64)`.
pub fn float_v(f: f64) -> String {
    format_float(f, FloatFormat::G)
}

/// `%v` of a decoded JSON number (int64 or float64).
pub fn number_v(n: &serde_json::Number) -> String {
    match go_number(n) {
        GoNumber::Int(i) => i.to_string(),
        GoNumber::Float(f) => float_v(f),
    }
}

/// `fmt.Sprint(v)` of a decoded JSON value.
pub fn sprint(v: &Value) -> String {
    let mut out = String::new();
    write_v(&mut out, v);
    out
}

fn write_v(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_v(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_v(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("map[");
            for (i, (k, item)) in sorted_members(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_v(out, item);
            }
            out.push(']');
        }
    }
}

/// `fmt.Sprintf("%#v", v)` where `v` is an `interface{}` holding a decoded JSON value (a nil
/// interface prints `<nil>`).
pub fn go_syntax(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Null => out.push_str("<nil>"),
        other => write_sharp_v(&mut out, other),
    }
    out
}

fn write_sharp_v(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("interface {}(nil)"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_v(n)),
        Value::String(s) => out.push_str(&quote(s)),
        Value::Array(items) => {
            out.push_str("[]interface {}{");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_sharp_v(out, item);
            }
            out.push('}');
        }
        Value::Object(map) => {
            out.push_str("map[string]interface {}{");
            for (i, (k, item)) in sorted_members(map).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&quote(k));
                out.push(':');
                write_sharp_v(out, item);
            }
            out.push('}');
        }
    }
}

/// `%#U`: `U+002A '*'` (the character only when it is printable).
pub fn format_sharp_u(c: char) -> String {
    if is_print(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sprint_prints_maps_and_slices_as_go() {
        let v = json!({"stages": [{"name": "dev"}, {"name": "prod"}], "f": 1.5, "n": null, "e": [], "m": {}});
        assert_eq!(
            sprint(&v),
            "map[e:[] f:1.5 m:map[] n:<nil> stages:[map[name:dev] map[name:prod]]]"
        );
        assert_eq!(sprint(&json!(["", "a"])), "[ a]");
        assert_eq!(sprint(&Value::Null), "<nil>");
    }

    #[test]
    fn go_syntax_matches_kubectls_object_dump() {
        let v: Value = serde_json::from_str(
            r#"{"kind":"List","items":[{"n":3,"f":1e23,"nul":null,"s":"x<y>&\u0001","b":true,"e":[],"m":{}}]}"#,
        )
        .unwrap();
        assert_eq!(
            go_syntax(&v),
            r#"map[string]interface {}{"items":[]interface {}{map[string]interface {}{"b":true, "e":[]interface {}{}, "f":1e+23, "m":map[string]interface {}{}, "n":3, "nul":interface {}(nil), "s":"x<y>&\x01"}}, "kind":"List"}"#
        );
    }

    #[test]
    fn sharp_u_shows_printable_characters_only() {
        assert_eq!(format_sharp_u('*'), "U+002A '*'");
        assert_eq!(format_sharp_u('~'), "U+007E '~'");
        assert_eq!(format_sharp_u('\t'), "U+0009");
    }
}
