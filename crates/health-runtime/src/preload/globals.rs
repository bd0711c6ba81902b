//! libsveltos' globals: `base64Encode`, `base64Decode`, `getLabel`, `getAnnotation`,
//! `getResource`; gopher-lua's `tostring` for numbers; `print` (Sveltos writes to the
//! controller's stdout; here the output is dropped so that it never mixes with results).

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use mlua::{Lua, MultiValue, Table, Value};

use super::args::{bytes, Args};

/// Go's `base64.StdEncoding`: padding required, trailing bits tolerated (it is not `Strict()`).
pub const GO_STD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// `base64.StdEncoding.DecodeString`: newlines are skipped, as Go's decoder does.
pub fn go_base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    let cleaned: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| *b != b'\n' && *b != b'\r')
        .collect();
    GO_STD.decode(cleaned).ok()
}

pub fn install(lua: &Lua) -> mlua::Result<()> {
    let g = lua.globals();
    g.raw_set(
        "base64Encode",
        lua.create_function(|lua, v: MultiValue| {
            let a = Args::new("base64Encode", v);
            let s = a.string(1)?;
            if s.is_empty() {
                return Ok((Value::Nil, bytes(lua, "provided string is empty")?));
            }
            Ok((bytes(lua, GO_STD.encode(s))?, Value::Nil))
        })?,
    )?;
    g.raw_set(
        "base64Decode",
        lua.create_function(|lua, v: MultiValue| {
            let a = Args::new("base64Decode", v);
            let s = a.string(1)?;
            if s.is_empty() {
                return Ok((Value::Nil, bytes(lua, "provided string is empty")?));
            }
            match go_base64_decode(&s) {
                Some(d) => Ok((bytes(lua, d)?, Value::Nil)),
                // libsveltos' wording, typo included.
                None => Ok((Value::Nil, bytes(lua, "deconding failed")?)),
            }
        })?,
    )?;
    for (name, section) in [("getLabel", "labels"), ("getAnnotation", "annotations")] {
        g.raw_set(
            name,
            lua.create_function(move |lua, v: MultiValue| {
                let a = Args::new(name, v);
                if a.top() != 2 {
                    return Ok((Value::Nil, bytes(lua, "expected 2 arguments (table, key)")?));
                }
                let t = a.table(1)?;
                let key = a.string(2)?;
                Ok((metadata_string(&t, section, &key)?, Value::Nil))
            })?,
        )?;
    }
    g.raw_set(
        "getResource",
        lua.create_function(|lua, v: MultiValue| {
            let a = Args::new("getResource", v);
            if a.top() != 2 {
                return Ok((Value::Nil, bytes(lua, "expected 2 arguments (table, key)")?));
            }
            let t = a.table(1)?;
            let key = lua.create_string(a.string(2)?)?;
            Ok((t.raw_get::<Value>(key)?, Value::Nil))
        })?,
    )?;
    let original: mlua::Function = g.raw_get("tostring")?;
    g.raw_set(
        "tostring",
        lua.create_function(move |lua, v: Value| match v {
            Value::Number(n) => bytes(lua, super::args::lua_number(n)),
            Value::Integer(n) => bytes(lua, n.to_string()),
            other => original.call::<Value>(other),
        })?,
    )?;
    g.raw_set("print", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    Ok(())
}

/// `obj.metadata.<section>[key]` when every step is a table and the value a string.
fn metadata_string(t: &Table, section: &str, key: &[u8]) -> mlua::Result<Value> {
    let Value::Table(meta) = t.raw_get::<Value>("metadata")? else {
        return Ok(Value::Nil);
    };
    let Value::Table(map) = meta.raw_get::<Value>(section)? else {
        return Ok(Value::Nil);
    };
    match map.raw_get::<Value>(mlua::String::wrap(key))? {
        v @ Value::String(_) => Ok(v),
        _ => Ok(Value::Nil),
    }
}
