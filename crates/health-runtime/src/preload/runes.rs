//! `require("runes")`: lua-utils glua-runes, Go's `unicode` and `unicode/utf8` on runes given as
//! numbers. Categories come from the Unicode general category, which is what Go's tables are.

use mlua::{Lua, MultiValue, Table, Value};
use unicode_general_category::{get_general_category, GeneralCategory as G};

use super::args::{bytes, one, values_in_order, Args};
use super::module_table;
use super::strings::{go_runes, lower, upper};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    module_table(
        lua,
        &[
            ("bytestorune", bytes_to_rune),
            ("bytetostring", bytes_to_string),
            ("containsrune", contains_rune),
            ("iscontrol", |l, a| {
                pred(l, a, |c| matches!(cat(c), Some(G::Control)))
            }),
            ("isdigit", |l, a| {
                pred(l, a, |c| matches!(cat(c), Some(G::DecimalNumber)))
            }),
            ("isgraphic", |l, a| pred(l, a, is_graphic)),
            ("isinrange", is_in_range),
            ("isletter", |l, a| pred(l, a, is_letter)),
            ("islower", |l, a| {
                pred(l, a, |c| matches!(cat(c), Some(G::LowercaseLetter)))
            }),
            ("ismark", |l, a| pred(l, a, is_mark)),
            ("isnumber", |l, a| pred(l, a, is_number)),
            ("isprint", |l, a| pred(l, a, is_print)),
            ("ispunct", |l, a| pred(l, a, is_punct)),
            ("isspace", |l, a| {
                pred(l, a, |c| c.is_some_and(char::is_whitespace))
            }),
            ("issymbol", |l, a| pred(l, a, is_symbol)),
            ("istitle", |l, a| {
                pred(l, a, |c| matches!(cat(c), Some(G::TitlecaseLetter)))
            }),
            ("isupper", |l, a| {
                pred(l, a, |c| matches!(cat(c), Some(G::UppercaseLetter)))
            }),
            ("isvalidutf8", is_valid_utf8),
            ("reverserunes", reverse_runes),
            ("runeat", rune_at),
            ("runecount", rune_count),
            ("runeindex", rune_index),
            ("runerange", rune_range),
            ("runeslice", rune_slice),
            ("runesplit", rune_split),
            ("runestring", rune_string),
            ("runetobytes", rune_to_bytes),
            ("runewidth", rune_width),
            ("stringtobytes", string_to_bytes),
            ("tolower", |l, a| map(l, a, lower)),
            ("totitle", |l, a| map(l, a, upper)),
            ("toupper", |l, a| map(l, a, upper)),
            ("validrune", valid_rune),
        ],
    )
}

/// `rune(L.CheckInt(i))`: Go's int → int32 conversion wraps.
fn rune_arg(a: &Args, i: usize) -> mlua::Result<i32> {
    Ok(a.int(i)? as i32)
}

fn as_char(r: i32) -> Option<char> {
    u32::try_from(r).ok().and_then(char::from_u32)
}

fn cat(c: Option<char>) -> Option<G> {
    c.map(get_general_category)
}

fn is_letter(c: Option<char>) -> bool {
    matches!(
        cat(c),
        Some(
            G::UppercaseLetter
                | G::LowercaseLetter
                | G::TitlecaseLetter
                | G::ModifierLetter
                | G::OtherLetter
        )
    )
}

fn is_mark(c: Option<char>) -> bool {
    matches!(
        cat(c),
        Some(G::NonspacingMark | G::SpacingMark | G::EnclosingMark)
    )
}

fn is_number(c: Option<char>) -> bool {
    matches!(
        cat(c),
        Some(G::DecimalNumber | G::LetterNumber | G::OtherNumber)
    )
}

fn is_punct(c: Option<char>) -> bool {
    matches!(
        cat(c),
        Some(
            G::ConnectorPunctuation
                | G::DashPunctuation
                | G::OpenPunctuation
                | G::ClosePunctuation
                | G::InitialPunctuation
                | G::FinalPunctuation
                | G::OtherPunctuation
        )
    )
}

fn is_symbol(c: Option<char>) -> bool {
    matches!(
        cat(c),
        Some(G::MathSymbol | G::CurrencySymbol | G::ModifierSymbol | G::OtherSymbol)
    )
}

fn is_graphic(c: Option<char>) -> bool {
    is_letter(c)
        || is_mark(c)
        || is_number(c)
        || is_punct(c)
        || is_symbol(c)
        || matches!(cat(c), Some(G::SpaceSeparator))
}

fn is_print(c: Option<char>) -> bool {
    c == Some(' ') || (is_graphic(c) && !matches!(cat(c), Some(G::SpaceSeparator)))
}

fn pred(lua: &Lua, a: Args, f: fn(Option<char>) -> bool) -> mlua::Result<MultiValue> {
    one(lua, f(as_char(rune_arg(&a, 1)?)))
}

fn map(lua: &Lua, a: Args, f: fn(char) -> char) -> mlua::Result<MultiValue> {
    let r = rune_arg(&a, 1)?;
    let out = as_char(r).map_or(r as f64, |c| f(c) as u32 as f64);
    one(lua, out)
}

/// The numbers of a table, as bytes (`byte(num)`), in ForEach order.
fn table_bytes(t: &Table) -> mlua::Result<Vec<u8>> {
    Ok(values_in_order(t)?
        .into_iter()
        .filter_map(|(_, v)| match v {
            Value::Number(n) => Some(n as i64 as u8),
            Value::Integer(n) => Some(n as u8),
            _ => None,
        })
        .collect())
}

fn bytes_to_rune(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let b = table_bytes(&a.table(1)?)?;
    match go_runes(&b).first() {
        Some((_, c, _)) if *c != char::REPLACEMENT_CHARACTER => one(lua, *c as u32 as f64),
        _ => one(lua, Value::Nil),
    }
}

fn bytes_to_string(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, bytes(lua, table_bytes(&a.table(1)?)?)?)
}

fn contains_rune(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let r = rune_arg(&a, 2)?;
    one(lua, go_runes(&s).iter().any(|x| x.1 as i64 == r as i64))
}

fn is_in_range(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let (r, lo, hi) = (rune_arg(&a, 1)?, rune_arg(&a, 2)?, rune_arg(&a, 3)?);
    one(lua, r >= lo && r <= hi)
}

fn is_valid_utf8(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, std::str::from_utf8(&a.string(1)?).is_ok())
}

fn chars_of(a: &Args, i: usize) -> mlua::Result<Vec<char>> {
    Ok(go_runes(&a.string(i)?).into_iter().map(|r| r.1).collect())
}

fn reverse_runes(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s: String = chars_of(&a, 1)?.into_iter().rev().collect();
    one(lua, s)
}

fn rune_at(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let pos = a.int(2)? - 1;
    if pos < 0 || pos as usize >= s.len() {
        return one(lua, Value::Nil);
    }
    match go_runes(&s[pos as usize..]).first() {
        Some((_, c, _)) if *c != char::REPLACEMENT_CHARACTER => one(lua, *c as u32 as f64),
        _ => one(lua, Value::Nil),
    }
}

fn rune_count(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, go_runes(&a.string(1)?).len() as f64)
}

fn rune_index(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let chars = chars_of(&a, 1)?;
    let search = rune_arg(&a, 2)?;
    let start = (a.opt_int(3, 1)? - 1).max(0) as usize;
    for (i, c) in chars.iter().enumerate().skip(start) {
        if *c as i64 == search as i64 {
            return one(lua, (i + 1) as f64);
        }
    }
    one(lua, Value::Nil)
}

fn rune_range(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let chars = chars_of(&a, 1)?;
    let len = chars.len() as i64;
    let start = (a.opt_int(2, 1)? - 1).clamp(0, len);
    let mut end = a.opt_int(3, -1)?;
    if end < 0 {
        end = len;
    } else {
        end = (end - 1).clamp(0, len);
    }
    if start > end {
        // Go panics on runes[start:end]; gopher-lua turns the panic into this error.
        return Err(mlua::Error::runtime(format!(
            "runtime error: slice bounds out of range [{start}:{end}]"
        )));
    }
    let s: String = chars[start as usize..end as usize].iter().collect();
    one(lua, s)
}

fn rune_slice(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let t = lua.create_table()?;
    for (i, c) in chars_of(&a, 1)?.into_iter().enumerate() {
        t.raw_set(i + 1, c as u32 as f64)?;
    }
    one(lua, t)
}

fn rune_split(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let chars = chars_of(&a, 1)?;
    let sep = rune_arg(&a, 2)?;
    let t = lua.create_table()?;
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in chars {
        if c as i64 == sep as i64 {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    parts.push(cur);
    for (i, p) in parts.into_iter().enumerate() {
        t.raw_set(i + 1, p)?;
    }
    one(lua, t)
}

fn rune_string(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let mut s = String::new();
    for i in 1..=a.top() {
        s.push(as_char(rune_arg(&a, i)?).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    one(lua, s)
}

fn rune_to_bytes(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let t = a.table(1)?;
    let mut buf = String::new();
    for (_, v) in values_in_order(&t)? {
        let r = match v {
            Value::Number(n) => n as i64 as i32,
            Value::Integer(n) => n as i32,
            _ => continue,
        };
        buf.push(as_char(r).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    let out = lua.create_table()?;
    for (i, b) in buf.bytes().enumerate() {
        out.raw_set(i + 1, b as f64)?;
    }
    one(lua, out)
}

fn rune_width(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    match as_char(rune_arg(&a, 1)?) {
        Some(c) => one(lua, c.len_utf8() as f64),
        None => one(lua, Value::Nil),
    }
}

fn string_to_bytes(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let t = lua.create_table()?;
    for (i, b) in a.string(1)?.into_iter().enumerate() {
        t.raw_set(i + 1, b as f64)?;
    }
    one(lua, t)
}

fn valid_rune(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, as_char(rune_arg(&a, 1)?).is_some())
}
