//! What libsveltos' `LoadModulesAndRegisterMethods` gives a health script: the modules `json`,
//! `strings`, `runes` (projectsveltos/lua-utils) and `sprig` (glua-sprig) for `require`, and the
//! globals `base64Encode`, `base64Decode`, `getLabel`, `getAnnotation` and `getResource`; plus
//! gopher-lua's own `tostring` for numbers. Each is a port of the Go code it stands for, with the
//! Go library's semantics (0-based indexes from `strings.Index`, Go's case mapping, …).

mod args;
mod globals;
mod json;
mod runes;
mod sprig;
mod strings;

pub use args::{Args, MemoryCap};

use mlua::{Function, Lua, MultiValue, Table};

/// Register the preloads in a fresh state.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let preload: Table = lua
        .globals()
        .raw_get::<Table>("package")?
        .raw_get("preload")?;
    preload.raw_set("json", loader(lua, json::module)?)?;
    preload.raw_set("strings", loader(lua, strings::module)?)?;
    preload.raw_set("runes", loader(lua, runes::module)?)?;
    // glua-sprig's loader uses RegisterModule, which also sets the global `sprig`.
    preload.raw_set(
        "sprig",
        lua.create_function(|lua, ()| {
            let m = sprig::module(lua)?;
            lua.globals().raw_set("sprig", m.clone())?;
            Ok(m)
        })?,
    )?;
    globals::install(lua)
}

fn loader(lua: &Lua, build: fn(&Lua) -> mlua::Result<Table>) -> mlua::Result<Function> {
    lua.create_function(move |lua, ()| build(lua))
}

/// A preload function: the state and its arguments, returning its results.
pub(crate) type Func = fn(&Lua, Args) -> mlua::Result<MultiValue>;

/// A module table from `(name, function)` pairs.
pub(crate) fn module_table(lua: &Lua, funcs: &[(&'static str, Func)]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for (name, f) in funcs {
        let f = *f;
        let name = *name;
        t.raw_set(
            name,
            lua.create_function(move |lua, values: MultiValue| f(lua, Args::new(name, values)))?,
        )?;
    }
    Ok(t)
}
