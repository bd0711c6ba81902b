//! `require("json")`: lua-utils glua-json. `encode` follows its `MarshalJSON` (an empty table is
//! `[]`, a table is a list only when its keys are exactly 1..n, a table met twice is "nested")
//! and then Go's `encoding/json` output (sorted keys, HTML-safe escapes, Go float text);
//! `decode` is `json.Unmarshal` into Go values then `DecodeValue` (numbers become Lua numbers,
//! nulls vanish from lists and maps); `fromYAML` reads YAML as sigs.k8s.io/yaml does.

use std::collections::{BTreeMap, HashSet};

use mlua::{Lua, MultiValue, Table, Value};

use super::args::{bytes, ret, Args};
use super::module_table;

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    module_table(
        lua,
        &[
            ("decode", decode),
            ("encode", encode),
            ("fromYAML", from_yaml),
            ("toYAML", to_yaml),
        ],
    )
}

fn encode(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() == 0 {
        return Err(a.arg_error(1, "value expected"));
    }
    match encode_value(&a.get(1), &mut HashSet::new()) {
        Ok(text) => ret(lua, [bytes(lua, text)?]),
        Err(e) => ret(lua, [Value::Nil, bytes(lua, e)?]),
    }
}

fn decode(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let text = a.string(1)?;
    match serde_json::from_slice::<serde_json::Value>(&text) {
        Ok(v) => ret(lua, [to_lua(lua, &v)?]),
        Err(e) => ret(lua, [Value::Nil, bytes(lua, e.to_string())?]),
    }
}

fn from_yaml(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let text = a.text(1)?;
    match promotion_manifest::parse_documents(&text) {
        Ok(docs) => {
            let v = docs
                .into_iter()
                .next()
                .map(|d| d.value)
                .unwrap_or(serde_json::Value::Null);
            ret(lua, [to_lua(lua, &v)?])
        }
        Err(e) => ret(
            lua,
            [
                Value::Nil,
                bytes(lua, format!("error converting YAML to JSON: {e}"))?,
            ],
        ),
    }
}

fn to_yaml(_: &Lua, _: Args) -> mlua::Result<MultiValue> {
    Err(mlua::Error::runtime(
        "json.toYAML is not available in the local runner (go-yaml's exact output is not reproduced)",
    ))
}

/// glua-json `DecodeValue` of what `json.Unmarshal` produced.
pub fn to_lua(lua: &Lua, v: &serde_json::Value) -> mlua::Result<Value> {
    Ok(match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => bytes(lua, s)?,
        serde_json::Value::Array(items) => {
            let t = lua.create_table()?;
            let mut i = 1;
            for item in items {
                let lv = to_lua(lua, item)?;
                // LTable.Append ignores nil.
                if !lv.is_nil() {
                    t.raw_set(i, lv)?;
                    i += 1;
                }
            }
            Value::Table(t)
        }
        serde_json::Value::Object(m) => {
            let t = lua.create_table()?;
            for (k, item) in m {
                t.raw_set(k.as_str(), to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

const ERR_NESTED: &str = "cannot encode recursively nested tables to JSON";
const ERR_SPARSE: &str = "cannot encode sparse array";
const ERR_KEYS: &str = "cannot encode mixed or invalid key types";

/// glua-json `Encode`, with its error texts (wrapped by `json.Marshal` as Go does).
pub fn encode_value(v: &Value, visited: &mut HashSet<usize>) -> Result<String, String> {
    let marshal_err =
        |e: &str| format!("json: error calling MarshalJSON for type json.jsonValue: {e}");
    match v {
        Value::Nil => Ok("null".into()),
        Value::Boolean(b) => Ok(b.to_string()),
        Value::Number(n) => go_text::json::format_float(*n)
            .ok_or_else(|| format!("json: unsupported value: {}", go_text::fmt::float_v(*n))),
        Value::Integer(n) => Ok(n.to_string()),
        Value::String(s) => Ok(go_text::json::quote_bytes(&s.as_bytes())),
        Value::Table(t) => {
            let ptr = t.to_pointer() as usize;
            if !visited.insert(ptr) {
                return Err(marshal_err(ERR_NESTED));
            }
            let pairs: Vec<(Value, Value)> = t
                .pairs::<Value, Value>()
                .collect::<mlua::Result<_>>()
                .map_err(|e| e.to_string())?;
            if pairs.is_empty() {
                return Ok("[]".into());
            }
            let all_numbers = pairs
                .iter()
                .all(|(k, _)| matches!(k, Value::Number(_) | Value::Integer(_)));
            let all_strings = pairs.iter().all(|(k, _)| matches!(k, Value::String(_)));
            if all_numbers {
                let n = pairs.len();
                let mut items: Vec<Option<Value>> = vec![None; n];
                for (k, val) in pairs {
                    let idx = match k {
                        Value::Integer(i) => i as f64,
                        Value::Number(f) => f,
                        _ => 0.0,
                    };
                    if idx.fract() != 0.0 || idx < 1.0 || idx > n as f64 {
                        return Err(marshal_err(ERR_SPARSE));
                    }
                    items[idx as usize - 1] = Some(val);
                }
                let mut parts = Vec::with_capacity(n);
                for item in items.into_iter().flatten() {
                    parts.push(encode_value(&item, visited)?);
                }
                Ok(format!("[{}]", parts.join(",")))
            } else if all_strings {
                let mut map = BTreeMap::new();
                for (k, val) in pairs {
                    if let Value::String(s) = k {
                        map.insert(String::from_utf8_lossy(&s.as_bytes()).into_owned(), val);
                    }
                }
                let mut parts = Vec::with_capacity(map.len());
                for (k, val) in map {
                    parts.push(format!(
                        "{}:{}",
                        go_text::json::quote(&k),
                        encode_value(&val, visited)?
                    ));
                }
                Ok(format!("{{{}}}", parts.join(",")))
            } else {
                Err(marshal_err(ERR_KEYS))
            }
        }
        Value::Function(_) => Err(marshal_err("cannot encode function to JSON")),
        Value::Thread(_) => Err(marshal_err("cannot encode thread to JSON")),
        _ => Err(marshal_err("cannot encode userdata to JSON")),
    }
}
