//! Lua health scripts, run the way addon-controller's `isHealthyBasedOnLua` runs them, in a
//! sandboxed LuaJIT (Lua 5.1 plus `goto`, as gopher-lua accepts).
//!
//! The sequence is Sveltos': a fresh state per evaluation with the preloads; the global `metrics`
//! table; `DoString(script)`; only then the global `obj` (the object through libsveltos'
//! `MapToTable`, or nil for metric-only checks); `evaluate(obj)` with one result, which must be a
//! table; that table through `ToGoValue`, `json.Marshal` and `json.Unmarshal` into
//! `{healthy bool, message string}`.
//!
//! What Sveltos does not have: a memory cap, an instruction budget and a wall-clock guard, so that
//! a runaway script ends with a clear result instead of hanging the terminal.

use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{HookTriggers, Lua, LuaOptions, StdLib, Table, Value as LuaValue, VmState};
use serde_json::{Map, Value};

use super::preload;

/// Limits of one evaluation. Sveltos has none; these only turn a runaway script into a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Bytes the script may allocate on top of the prepared state.
    pub memory_bytes: usize,
    /// VM instructions (LuaJIT bytecodes, counted with the JIT off) per evaluation.
    pub instructions: u64,
    /// Wall-clock time per evaluation.
    pub wall: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            memory_bytes: 64 * 1024 * 1024,
            instructions: 100_000_000,
            wall: Duration::from_secs(5),
        }
    }
}

/// Which limit a script hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Memory,
    Instructions,
    Time,
    /// LuaJIT's compiler refused a script gopher-lua compiles (LuaJIT caps syntax nesting at
    /// 200 levels, gopher-lua has no such cap).
    Compiler,
}

/// The Lua half of a verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum LuaOutcome {
    Healthy,
    /// `message` is what Sveltos puts inside the quotes of its error.
    Unhealthy {
        message: String,
    },
    /// Sveltos returns this error for the check (the script failed, or its result cannot be read).
    Error {
        message: String,
    },
    /// gopher-lua refuses the script before running anything (Sveltos' `DoString` parses and
    /// compiles it first): `reason` is its error, in the Lua checker's words. The script is not
    /// run in LuaJIT, which may accept what gopher-lua refuses.
    Refused {
        reason: String,
    },
    /// The local runner stopped the script; Sveltos would still be running it.
    Stopped {
        limit: Limit,
        message: String,
    },
}

/// Granularity of the budget hook; small enough that the wall clock is read often.
const HOOK_EVERY: u32 = 10_000;

/// Evaluate `script` against `object` (`None` for a metric-only check).
pub fn evaluate(
    script: &str,
    object: Option<&Value>,
    metrics: &BTreeMap<String, f64>,
    budget: &Budget,
) -> LuaOutcome {
    // Sveltos' `DoString` parses and compiles the script with gopher-lua before running it: a
    // script gopher-lua refuses fails there, whatever LuaJIT would make of it (`0x1p4`, a hex
    // float, is a number to LuaJIT and a syntax error to gopher-lua).
    let gopher = gopher_lua(script);
    if let GopherLua::Refuses(reason) = &gopher {
        return LuaOutcome::Refused {
            reason: reason.clone(),
        };
    }
    let tripped: Rc<Cell<Option<Limit>>> = Rc::new(Cell::new(None));
    let result = run(script, object, metrics, budget, &tripped);
    if let Some(limit) = tripped.get() {
        return stopped(limit, budget);
    }
    match result {
        Ok(outcome) => outcome,
        Err(e) if is_memory_error(&e) => stopped(Limit::Memory, budget),
        Err(mlua::Error::SyntaxError { message, .. }) if gopher == GopherLua::Compiles => {
            LuaOutcome::Stopped {
                limit: Limit::Compiler,
                message: format!(
                    "the local LuaJIT runtime cannot run this script: {}; Sveltos (gopher-lua) \
                     would run it",
                    message.trim_start_matches("[string \"<string>\"]:")
                ),
            }
        }
        Err(e) => LuaOutcome::Error {
            message: message_of(&e),
        },
    }
}

/// What gopher-lua (Sveltos' Lua) makes of `script`, as the Lua checker ports its parser and
/// compiler.
#[derive(Clone, Debug, PartialEq, Eq)]
enum GopherLua {
    Compiles,
    /// The checker's first finding, which is gopher-lua's error.
    Refuses(String),
    /// The checker's own limits (`lua-too-large`, `lua-too-deep`) are not gopher-lua's and stop
    /// its reading early: the answer is unknown.
    Unknown,
}

fn gopher_lua(script: &str) -> GopherLua {
    let mut findings = Vec::new();
    lua_check::check_script(
        script,
        &promotion_findings::FieldPath::root("script"),
        &mut findings,
    );
    match findings.first() {
        Some(f) if f.code == "lua-syntax" => GopherLua::Refuses(f.message.clone()),
        Some(f) if matches!(f.code, "lua-too-deep" | "lua-too-large") => GopherLua::Unknown,
        _ => GopherLua::Compiles,
    }
}

fn stopped(limit: Limit, budget: &Budget) -> LuaOutcome {
    let message = match limit {
        Limit::Memory => format!(
            "the script needed more than {} MiB, the local runner's memory cap (Sveltos has no cap: \
             the controller's memory would grow instead)",
            budget.memory_bytes / (1024 * 1024)
        ),
        Limit::Instructions => format!(
            "the script ran more than {} Lua instructions, the local runner's budget (Sveltos has \
             no budget: this check would keep a controller worker busy)",
            budget.instructions
        ),
        Limit::Time => format!(
            "the script ran longer than {:?}, the local runner's time limit (Sveltos has no limit: \
             this check would keep a controller worker busy)",
            budget.wall
        ),
        Limit::Compiler => "the local LuaJIT compiler refused the script".to_string(),
    };
    LuaOutcome::Stopped { limit, message }
}

fn run(
    script: &str,
    object: Option<&Value>,
    metrics: &BTreeMap<String, f64>,
    budget: &Budget,
    tripped: &Rc<Cell<Option<Limit>>>,
) -> mlua::Result<LuaOutcome> {
    let lua = new_state(tripped)?;
    // The limits start once the state is prepared, so only the script's own use counts.
    lua.set_memory_limit(lua.used_memory().saturating_add(budget.memory_bytes))?;
    lua.set_app_data(preload::MemoryCap(budget.memory_bytes));
    install_budget(&lua, budget, tripped)?;

    let table = lua.create_table()?;
    for (k, v) in metrics {
        table.raw_set(k.as_str(), *v)?;
    }
    lua.globals().raw_set("metrics", table)?;

    lua.load(script).set_name("=<string>").exec()?;

    let obj = match object.and_then(Value::as_object) {
        Some(map) => LuaValue::Table(map_to_table(&lua, map)?),
        None => LuaValue::Nil,
    };
    lua.globals().raw_set("obj", obj.clone())?;
    let evaluate: LuaValue = lua.globals().raw_get("evaluate")?;
    let LuaValue::Function(evaluate) = evaluate else {
        return Ok(LuaOutcome::Error {
            message: format!(
                "attempt to call a {} value (global 'evaluate'): the script must define a global \
                 function evaluate",
                type_name(&evaluate)
            ),
        });
    };
    let returned: mlua::MultiValue = evaluate.call(obj)?;
    let first = returned.into_iter().next().unwrap_or(LuaValue::Nil);
    Ok(decide(&first, object))
}

/// A state with gopher-lua's libraries minus what a sandbox must not give, and the preloads.
fn new_state(tripped: &Rc<Cell<Option<Limit>>>) -> mlua::Result<Lua> {
    let libs =
        StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::PACKAGE | StdLib::OS | StdLib::JIT;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    let unavailable = lua.create_function(|_, name: String| -> mlua::Result<()> {
        Err(mlua::Error::runtime(format!(
            "{name} is not available in the local runner (it runs health checks sandboxed, \
             without files, processes or the network)"
        )))
    })?;
    let flag = tripped.clone();
    let is_tripped = lua.create_function(move |_, ()| Ok(flag.get().is_some()))?;
    lua.load(SANDBOX)
        .set_name("=sandbox")
        .call::<()>((unavailable, is_tripped))?;
    preload::install(&lua)?;
    Ok(lua)
}

/// Runs once per state, before the script. `jit.off()` because count hooks do not fire inside
/// JIT-compiled traces; the interpreter is also what gopher-lua is. Then every library function
/// that reaches outside the process is replaced by one that says so, and `pcall`/`xpcall`/
/// `coroutine.resume` re-raise once a budget is exhausted, so a script cannot swallow its own
/// termination.
const SANDBOX: &str = r#"
local unavailable, tripped = ...
jit.off()
jit.flush()
jit = nil
local function stub(lib, keep)
  local real = _G[lib] or {}
  local t = {}
  for _, k in ipairs(keep) do t[k] = real[k] end
  setmetatable(t, {__index = function(_, k) unavailable(lib .. "." .. tostring(k)) end})
  _G[lib] = t
end
stub("os", {"time", "clock", "date", "difftime"})
stub("io", {})
stub("debug", {})
stub("channel", {})
for _, name in ipairs({"dofile", "loadfile", "newproxy"}) do
  _G[name] = function() unavailable(name) end
end
string.dump = function() unavailable("string.dump") end
local real_load = load
load = function(chunk, name) return real_load(chunk, name, "t") end
loadstring = function(chunk, name) return real_load(chunk, name, "t") end
package.loadlib = function() unavailable("package.loadlib") end
package.searchpath = nil
package.path = ""
package.cpath = ""
local real_require = require
require = function(name)
  if package.loaded[name] ~= nil or package.preload[name] ~= nil then
    return real_require(name)
  end
  unavailable("module '" .. tostring(name) .. "'")
end
local function reraise(ok, ...)
  if tripped() then error("budget exhausted", 0) end
  return ok, ...
end
local real_pcall, real_xpcall = pcall, xpcall
pcall = function(...) return reraise(real_pcall(...)) end
xpcall = function(...) return reraise(real_xpcall(...)) end
local real_resume = coroutine.resume
coroutine.resume = function(...) return reraise(real_resume(...)) end
local real_wrap, create = coroutine.wrap, coroutine.create
coroutine.wrap = function(f)
  local co = create(f)
  return function(...)
    local res = {reraise(real_resume(co, ...))}
    if not res[1] then error(res[2], 0) end
    return select(2, unpack(res))
  end
end
"#;

fn install_budget(
    lua: &Lua,
    budget: &Budget,
    tripped: &Rc<Cell<Option<Limit>>>,
) -> mlua::Result<()> {
    let start = Instant::now();
    let max = budget.instructions;
    let wall = budget.wall;
    let flag = tripped.clone();
    let count = Cell::new(0u64);
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, _| {
            count.set(count.get() + u64::from(HOOK_EVERY));
            if flag.get().is_none() {
                if count.get() > max {
                    flag.set(Some(Limit::Instructions));
                } else if start.elapsed() > wall {
                    flag.set(Some(Limit::Time));
                }
            }
            match flag.get() {
                Some(_) => Err(mlua::Error::runtime("budget exhausted")),
                None => Ok(VmState::Continue),
            }
        },
    )
}

/// libsveltos `MapToTable`: numbers, strings, booleans and maps become Lua values; inside lists
/// only maps, non-integral numbers, strings and booleans survive (the Kubernetes decoder makes
/// whole numbers int64, and `MapToTable` has no int64 case for list items); nulls vanish.
pub fn map_to_table(lua: &Lua, map: &Map<String, Value>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for (k, v) in map {
        match v {
            Value::Number(n) => t.raw_set(k.as_str(), n.as_f64().unwrap_or(0.0))?,
            Value::String(s) => t.raw_set(k.as_str(), s.as_str())?,
            Value::Bool(b) => t.raw_set(k.as_str(), *b)?,
            Value::Object(m) => t.raw_set(k.as_str(), map_to_table(lua, m)?)?,
            Value::Array(items) => {
                let list = lua.create_table()?;
                let mut i = 1;
                for item in items {
                    let lv = match item {
                        Value::Object(m) => LuaValue::Table(map_to_table(lua, m)?),
                        Value::Number(n) if !n.is_i64() => {
                            LuaValue::Number(n.as_f64().unwrap_or(0.0))
                        }
                        Value::String(s) => LuaValue::String(lua.create_string(s)?),
                        Value::Bool(b) => LuaValue::Boolean(*b),
                        _ => continue,
                    };
                    list.raw_set(i, lv)?;
                    i += 1;
                }
                t.raw_set(k.as_str(), list)?;
            }
            Value::Null => {}
        }
    }
    Ok(t)
}

/// The result as Go sees it after `ToGoValue` (before `json.Marshal`).
#[derive(Clone, Debug, PartialEq)]
enum GoValue {
    Nil,
    Bool(bool),
    Number(f64),
    Str(Vec<u8>),
    Map(BTreeMap<String, GoValue>),
    List(Vec<GoValue>),
    /// A function, coroutine or userdata: `json.Marshal` refuses it.
    Unsupported(&'static str),
}

/// Sveltos' reading of the value `evaluate` returned.
fn decide(result: &LuaValue, object: Option<&Value>) -> LuaOutcome {
    let LuaValue::Table(t) = result else {
        return LuaOutcome::Error {
            message: "lua script output is not a lua table".into(),
        };
    };
    let go = match to_go(&LuaValue::Table(t.clone()), &mut HashSet::new(), 0) {
        Ok(v) => v,
        Err(message) => return LuaOutcome::Error { message },
    };
    if let Err(message) = marshal_check(&go) {
        return LuaOutcome::Error { message };
    }
    let status = match unmarshal_health(&go) {
        Ok(s) => s,
        Err(message) => return LuaOutcome::Error { message },
    };
    if status.healthy {
        return LuaOutcome::Healthy;
    }
    let message = match object {
        Some(o) => format!(
            "resource {}/{} is not healthy: {}",
            super::select::namespace_of(o),
            super::select::name_of(o),
            status.message
        ),
        None => status.message,
    };
    LuaOutcome::Unhealthy { message }
}

const MAX_RESULT_DEPTH: usize = 200;

/// libsveltos `ToGoValue`: a table with a positive `MaxN` is a list of its first MaxN items,
/// any other table a map keyed by `fmt.Sprint` of the key.
fn to_go(v: &LuaValue, path: &mut HashSet<usize>, depth: usize) -> Result<GoValue, String> {
    Ok(match v {
        LuaValue::Nil => GoValue::Nil,
        LuaValue::Boolean(b) => GoValue::Bool(*b),
        LuaValue::Integer(i) => GoValue::Number(*i as f64),
        LuaValue::Number(n) => GoValue::Number(*n),
        LuaValue::String(s) => GoValue::Str(s.as_bytes().to_vec()),
        LuaValue::Table(t) => {
            let ptr = t.to_pointer() as usize;
            if depth > MAX_RESULT_DEPTH || !path.insert(ptr) {
                return Err(
                    "the result table contains itself; Sveltos' ToGoValue would recurse \
                            until the controller's stack overflows"
                        .into(),
                );
            }
            let maxn = t.raw_len();
            let out = if maxn > 0 {
                let mut list = Vec::with_capacity(maxn);
                for i in 1..=maxn {
                    let item: LuaValue = t.raw_get(i).map_err(|e| e.to_string())?;
                    list.push(to_go(&item, path, depth + 1)?);
                }
                GoValue::List(list)
            } else {
                let mut map = BTreeMap::new();
                for pair in t.pairs::<LuaValue, LuaValue>() {
                    let (k, val) = pair.map_err(|e| e.to_string())?;
                    let key = key_string(&to_go(&k, path, depth + 1)?);
                    map.insert(key, to_go(&val, path, depth + 1)?);
                }
                GoValue::Map(map)
            };
            path.remove(&ptr);
            out
        }
        LuaValue::Function(_) => GoValue::Unsupported("lua.LGFunction"),
        LuaValue::Thread(_) => GoValue::Unsupported("*lua.LState"),
        _ => GoValue::Unsupported("*lua.LUserData"),
    })
}

/// `fmt.Sprint` of a converted key.
fn key_string(v: &GoValue) -> String {
    match v {
        GoValue::Nil => "<nil>".into(),
        GoValue::Bool(b) => b.to_string(),
        GoValue::Number(n) => go_text::fmt::float_v(*n),
        GoValue::Str(s) => String::from_utf8_lossy(s).into_owned(),
        GoValue::Map(_) => "map[]".into(),
        GoValue::List(_) => "[]".into(),
        GoValue::Unsupported(t) => format!("<{t}>"),
    }
}

/// The errors `json.Marshal` returns for a converted result.
fn marshal_check(v: &GoValue) -> Result<(), String> {
    match v {
        GoValue::Number(n) if n.is_nan() => Err("json: unsupported value: NaN".into()),
        GoValue::Number(n) if n.is_infinite() => Err(format!(
            "json: unsupported value: {}",
            if *n > 0.0 { "+Inf" } else { "-Inf" }
        )),
        GoValue::Unsupported(t) => Err(format!("json: unsupported type: {t}")),
        GoValue::Map(m) => m.values().try_for_each(marshal_check),
        GoValue::List(l) => l.iter().try_for_each(marshal_check),
        _ => Ok(()),
    }
}

struct HealthStatus {
    healthy: bool,
    message: String,
}

/// `json.Unmarshal` into `healthStatus{Healthy bool "healthy"; Message string "message"}`:
/// keys in marshalled (sorted) order, matched exactly or case-insensitively, the last match wins;
/// a wrong type is an error (the first one is reported), `null` leaves the field alone.
fn unmarshal_health(v: &GoValue) -> Result<HealthStatus, String> {
    let map = match v {
        GoValue::Map(m) => m,
        GoValue::List(_) => {
            return Err(
                "json: cannot unmarshal array into Go value of type clusterops.healthStatus".into(),
            )
        }
        _ => {
            return Err(
                "json: cannot unmarshal into Go value of type clusterops.healthStatus".into(),
            )
        }
    };
    let mut status = HealthStatus {
        healthy: false,
        message: String::new(),
    };
    let mut first_error: Option<String> = None;
    for (key, value) in map {
        let field = if key == "healthy" || fold_eq(key, "healthy") {
            "healthy"
        } else if key == "message" || fold_eq(key, "message") {
            "message"
        } else {
            continue;
        };
        let wrong = |want: &str| {
            format!(
                "json: cannot unmarshal {} into Go struct field healthStatus.{field} of type {want}",
                json_kind(value)
            )
        };
        match (field, value) {
            (_, GoValue::Nil) => {}
            ("healthy", GoValue::Bool(b)) => status.healthy = *b,
            ("message", GoValue::Str(s)) => {
                status.message = String::from_utf8_lossy(s).into_owned()
            }
            ("healthy", _) => {
                first_error.get_or_insert_with(|| wrong("bool"));
            }
            _ => {
                first_error.get_or_insert_with(|| wrong("string"));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(status),
    }
}

fn json_kind(v: &GoValue) -> &'static str {
    match v {
        GoValue::Nil => "null",
        GoValue::Bool(_) => "bool",
        GoValue::Number(_) => "number",
        GoValue::Str(_) => "string",
        GoValue::Map(_) => "object",
        GoValue::List(_) => "array",
        GoValue::Unsupported(_) => "value",
    }
}

/// `bytes.EqualFold` restricted to what can match an ASCII field name: ASCII case, plus the two
/// non-ASCII runes Unicode folds onto ASCII letters (ſ → s, K (Kelvin) → k).
fn fold_eq(key: &str, field: &str) -> bool {
    let fold = |c: char| match c {
        '\u{17f}' => 's',
        '\u{212a}' => 'k',
        c => c.to_ascii_lowercase(),
    };
    key.chars().map(fold).eq(field.chars().map(fold))
}

fn is_memory_error(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } => is_memory_error(cause),
        mlua::Error::RuntimeError(m) => m.contains("not enough memory"),
        _ => false,
    }
}

/// The error text a script author recognises: Lua's own message, without mlua's wrapping.
pub fn message_of(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => message_of(cause),
        mlua::Error::WithContext { cause, .. } => message_of(cause),
        mlua::Error::ExternalError(e) => e.to_string(),
        other => other.to_string(),
    }
}

fn type_name(v: &LuaValue) -> &'static str {
    match v {
        LuaValue::Nil => "nil",
        LuaValue::Boolean(_) => "boolean",
        LuaValue::Number(_) | LuaValue::Integer(_) => "number",
        LuaValue::String(_) => "string",
        LuaValue::Table(_) => "table",
        LuaValue::Function(_) => "function",
        LuaValue::Thread(_) => "thread",
        _ => "userdata",
    }
}
