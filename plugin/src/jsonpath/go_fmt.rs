//! Go's `fmt` verbs applied to the values kubectl decodes from JSON (`map[string]interface{}`,
//! `[]interface{}`, int64, float64, string, bool, nil): `%v` is what custom-columns prints
//! (`map[a:b]`, `[x y]`, `<nil>`), `%#v` is the object dump in jsonpath error messages.

use serde_json::Value;

use super::go_json::{go_number, sorted_members, GoNumber};
use super::go_strconv::{format_float_v, quote};

fn number_v(n: &serde_json::Number) -> String {
    match go_number(n) {
        GoNumber::Int(i) => i.to_string(),
        GoNumber::Float(f) => format_float_v(f),
    }
}

/// `fmt.Sprint(v)` of a decoded JSON value.
pub(crate) fn sprint(v: &Value) -> String {
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

/// `fmt.Sprintf("%#v", v)` where `v` is the `interface{}` kubectl handed the jsonpath engine.
pub(crate) fn go_syntax(v: &Value) -> String {
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
}
