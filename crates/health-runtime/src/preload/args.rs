//! gopher-lua's argument checks (`CheckString`, `CheckInt`, …) with its error wording.

use mlua::{Function, IntoLua, Lua, MultiValue, Table, Value};

/// gopher-lua `LNumber.String()`: a whole number that fits an int64 prints as that integer,
/// anything else as Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn lua_number(f: f64) -> String {
    // `float64(int64(f)) == f` in Go; the bounds keep the conversion exact here.
    if f.is_finite()
        && f.fract() == 0.0
        && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f)
    {
        return format!("{}", f as i64);
    }
    go_text::fmt::float_v(f)
}

pub struct Args {
    name: &'static str,
    values: Vec<Value>,
}

impl Args {
    pub fn new(name: &'static str, values: MultiValue) -> Self {
        Args {
            name,
            values: values.into_iter().collect(),
        }
    }

    /// `L.GetTop()`.
    pub fn top(&self) -> usize {
        self.values.len()
    }

    /// `L.Get(i)`, 1-based; nil past the end.
    pub fn get(&self, i: usize) -> Value {
        self.values.get(i - 1).cloned().unwrap_or(Value::Nil)
    }

    fn bad(&self, i: usize, expected: &str) -> mlua::Error {
        mlua::Error::runtime(format!(
            "bad argument #{i} to {} ({expected} expected, got {})",
            self.name,
            type_name(&self.get(i))
        ))
    }

    /// `L.ArgError`.
    pub fn arg_error(&self, i: usize, message: &str) -> mlua::Error {
        mlua::Error::runtime(format!("bad argument #{i} to {} ({message})", self.name))
    }

    /// `L.CheckString`: strings, and numbers in gopher-lua's text form.
    pub fn string(&self, i: usize) -> mlua::Result<Vec<u8>> {
        match self.get(i) {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Number(n) => Ok(lua_number(n).into_bytes()),
            Value::Integer(n) => Ok(n.to_string().into_bytes()),
            _ => Err(self.bad(i, "string")),
        }
    }

    /// `L.CheckString` as text (invalid UTF-8 replaced, as Go's range over a string does).
    pub fn text(&self, i: usize) -> mlua::Result<String> {
        Ok(String::from_utf8_lossy(&self.string(i)?).into_owned())
    }

    /// `L.CheckNumber`.
    pub fn number(&self, i: usize) -> mlua::Result<f64> {
        match self.get(i) {
            Value::Number(n) => Ok(n),
            Value::Integer(n) => Ok(n as f64),
            Value::String(s) => s
                .to_str()
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .ok_or_else(|| self.bad(i, "number")),
            _ => Err(self.bad(i, "number")),
        }
    }

    /// `L.CheckInt`: a number truncated toward zero, as Go's `int(f)`.
    pub fn int(&self, i: usize) -> mlua::Result<i64> {
        match self.get(i) {
            Value::Number(n) => Ok(go_int(n)),
            Value::Integer(n) => Ok(n),
            _ => Err(self.bad(i, "number")),
        }
    }

    /// `L.OptInt`.
    pub fn opt_int(&self, i: usize, default: i64) -> mlua::Result<i64> {
        match self.get(i) {
            Value::Nil => Ok(default),
            _ => self.int(i),
        }
    }

    pub fn table(&self, i: usize) -> mlua::Result<Table> {
        match self.get(i) {
            Value::Table(t) => Ok(t),
            _ => Err(self.bad(i, "table")),
        }
    }

    pub fn function(&self, i: usize) -> mlua::Result<Function> {
        match self.get(i) {
            Value::Function(f) => Ok(f),
            _ => Err(self.bad(i, "function")),
        }
    }

    pub fn boolean(&self, i: usize) -> mlua::Result<bool> {
        match self.get(i) {
            Value::Boolean(b) => Ok(b),
            _ => Err(self.bad(i, "boolean")),
        }
    }
}

/// Go's `int(f)` on amd64: truncation, saturating where Go's result is undefined.
pub fn go_int(f: f64) -> i64 {
    if f.is_nan() {
        i64::MIN
    } else {
        f as i64
    }
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Number(_) | Value::Integer(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// Return values.
pub fn ret(lua: &Lua, values: impl IntoIterator<Item = Value>) -> mlua::Result<MultiValue> {
    let _ = lua;
    Ok(values.into_iter().collect())
}

pub fn one(lua: &Lua, v: impl IntoLua) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_iter([v.into_lua(lua)?]))
}

/// A Lua string from bytes.
pub fn bytes(lua: &Lua, b: impl AsRef<[u8]>) -> mlua::Result<Value> {
    Ok(Value::String(lua.create_string(b)?))
}

/// A list table from strings (`RetStringList`).
pub fn string_list(lua: &Lua, items: impl IntoIterator<Item = Vec<u8>>) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for (i, s) in items.into_iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(s)?)?;
    }
    Ok(Value::Table(t))
}

/// gopher-lua `ForEach` order over a table: the array part (1..n) first, then the other keys.
pub fn values_in_order(t: &Table) -> mlua::Result<Vec<(Value, Value)>> {
    let n = t.raw_len();
    let mut out = Vec::new();
    for i in 1..=n {
        let v: Value = t.raw_get(i)?;
        if !v.is_nil() {
            out.push((Value::Integer(i as i64), v));
        }
    }
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair?;
        let in_array = match k {
            Value::Integer(i) => i >= 1 && (i as usize) <= n,
            Value::Number(f) => f.fract() == 0.0 && f >= 1.0 && (f as usize) <= n,
            _ => false,
        };
        if !in_array {
            out.push((k, v));
        }
    }
    Ok(out)
}

/// The memory cap of the state, set by the runtime: preloads that build large values outside
/// Lua's allocator check it first, so that they fail like a Lua allocation would.
#[derive(Clone, Copy, Debug)]
pub struct MemoryCap(pub usize);

pub fn check_alloc(lua: &Lua, size: u128) -> mlua::Result<()> {
    let cap = lua.app_data_ref::<MemoryCap>().map_or(usize::MAX, |c| c.0);
    if size > cap as u128 {
        return Err(mlua::Error::MemoryError("not enough memory".into()));
    }
    Ok(())
}
