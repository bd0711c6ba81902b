//! `require("sprig")`: lua-utils glua-sprig, Masterminds/sprig functions wrapped for Lua. The
//! deterministic, side-effect-free ones are ported with sprig's semantics; the rest (random,
//! crypto, and the case-conversion helpers whose word rules are not reproduced) raise a clear
//! "not available in the local runner" error naming the function.

use mlua::{Lua, MultiValue, Table, Value};
use sha1::Digest;

use super::args::{bytes, lua_number, one, ret, type_name, values_in_order, Args};
use super::globals::GO_STD;
use super::module_table;
use super::strings::go_runes;

use super::Func;

/// Functions glua-sprig exports that the local runner does not provide.
pub const NOT_AVAILABLE: [&str; 20] = [
    "bcrypt",
    "camelcase",
    "decryptAES",
    "derivePassword",
    "encryptAES",
    "genPrivateKey",
    "htpasswd",
    "initials",
    "kebabcase",
    "randInt",
    "semverCompare",
    "seq",
    "shuffle",
    "snakecase",
    "swapcase",
    "untitle",
    "urlJoin",
    "urlParse",
    "wrap",
    "wrapWith",
];

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let funcs: &[(&'static str, Func)] = &[
        ("abbrev", abbrev),
        ("abbrevboth", abbrevboth),
        ("adler32sum", adler32sum),
        ("ago", ago),
        ("all", |l, a| all_any(l, a, true)),
        ("any", |l, a| all_any(l, a, false)),
        ("b32dec", b32dec),
        ("b32enc", b32enc),
        ("b64dec", b64dec),
        ("b64enc", b64enc),
        ("base", |l, a| {
            path_fn(l, a, 1, "base", |p| path_base(p).into_bytes())
        }),
        ("cat", cat),
        ("clean", |l, a| {
            path_fn(l, a, 1, "clean", |p| path_clean(p).into_bytes())
        }),
        ("coalesce", coalesce),
        ("compact", compact),
        ("dir", |l, a| {
            path_fn(l, a, 1, "dir", |p| path_dir(p).into_bytes())
        }),
        ("duration", duration),
        ("durationRound", duration_round),
        ("empty", empty),
        ("ext", |l, a| {
            path_fn(l, a, 1, "ext", |p| path_ext(p).into_bytes())
        }),
        ("indent", |l, a| indent(l, a, false)),
        ("isAbs", is_abs),
        ("nindent", |l, a| indent(l, a, true)),
        ("nospace", nospace),
        ("osBase", |l, a| {
            path_fn(l, a, 1, "osBase", |p| path_base(p).into_bytes())
        }),
        ("osClean", |l, a| {
            path_fn(l, a, 1, "osClean", |p| path_clean(p).into_bytes())
        }),
        ("osDir", |l, a| {
            path_fn(l, a, 1, "osDir", |p| path_dir(p).into_bytes())
        }),
        ("osExt", |l, a| {
            path_fn(l, a, 1, "osExt", |p| path_ext(p).into_bytes())
        }),
        ("osIsAbs", is_abs),
        ("plural", plural),
        ("quote", quote),
        ("regexFind", regex_find),
        ("regexFindAll", regex_find_all),
        ("regexMatch", regex_match),
        ("regexReplaceAll", |l, a| regex_replace(l, a, false)),
        ("regexReplaceAllLiteral", |l, a| regex_replace(l, a, true)),
        ("regexSplit", regex_split),
        ("round", round),
        ("sha1sum", |l, a| digest::<sha1::Sha1>(l, a, "sha1sum")),
        ("sha256sum", |l, a| {
            digest::<sha2::Sha256>(l, a, "sha256sum")
        }),
        ("sha512sum", |l, a| {
            digest::<sha2::Sha512>(l, a, "sha512sum")
        }),
        ("sortAlpha", sort_alpha),
        ("squote", squote),
        ("substr", substr),
        ("ternary", ternary),
        ("toDecimal", to_decimal),
        ("trunc", trunc),
        ("uniq", uniq),
    ];
    let t = module_table(lua, funcs)?;
    for name in NOT_AVAILABLE {
        t.raw_set(
            name,
            lua.create_function(move |_, _: MultiValue| -> mlua::Result<()> {
                Err(mlua::Error::runtime(format!(
                    "sprig.{name} is not available in the local runner"
                )))
            })?,
        )?;
    }
    Ok(t)
}

fn need(a: &Args, n: usize, what: &str) -> mlua::Result<()> {
    if a.top() < n {
        return Err(a.arg_error(1, &format!("{what} requires {n} arguments")));
    }
    Ok(())
}

/// glua-sprig `isEmptyLuaValue`.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Boolean(b) => !b,
        Value::Number(n) => *n == 0.0,
        Value::Integer(n) => *n == 0,
        Value::String(s) => s.as_bytes().is_empty(),
        Value::Table(t) => t.pairs::<Value, Value>().next().is_none(),
        _ => false,
    }
}

/// gopher-lua `LValue.String()`.
fn lvalue_string(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Number(n) => lua_number(*n),
        Value::Integer(n) => n.to_string(),
        Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        other => format!("{}: {:p}", type_name(other), other.to_pointer()),
    }
}

/// goutils `AbbreviateFull` (byte offsets, as the Go code slices).
fn abbreviate_full(s: &[u8], offset: i64, width: i64) -> Result<Vec<u8>, String> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    if width < 4 {
        return Err("stringutils illegal argument: Minimum abbreviation width is 4".into());
    }
    let len = s.len() as i64;
    if len <= width {
        return Ok(s.to_vec());
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    let marker = b"...";
    if offset <= 4 {
        return Ok([&s[..(width - 3) as usize], marker].concat());
    }
    if width < 7 {
        return Err(
            "stringutils illegal argument: Minimum abbreviation width with offset is 7".into(),
        );
    }
    if offset + width - 3 < len {
        let rest = abbreviate_full(&s[offset as usize..], 0, width - 3)?;
        return Ok([&marker[..], &rest].concat());
    }
    Ok([&marker[..], &s[(len - (width - 3)) as usize..]].concat())
}

fn abbrev(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 2, "abbrev")?;
    let width = a.number(1)? as i64;
    let s = a.string(2)?;
    if width < 4 {
        return one(lua, bytes(lua, s)?);
    }
    let out =
        abbreviate_full(&s, 0, width).map_err(|e| mlua::Error::runtime(format!("abbrev: {e}")))?;
    one(lua, bytes(lua, out)?)
}

fn abbrevboth(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 3, "abbrevboth")?;
    let left = a.number(1)? as i64;
    let right = a.number(2)? as i64;
    let s = a.string(3)?;
    if right < 4 || (left > 0 && right < 7) {
        return one(lua, bytes(lua, s)?);
    }
    let out = abbreviate_full(&s, left, right)
        .map_err(|e| mlua::Error::runtime(format!("abbrevboth: {e}")))?;
    one(lua, bytes(lua, out)?)
}

fn adler32sum(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "adler32sum")?;
    let (mut x, mut y) = (1u32, 0u32);
    for b in a.string(1)? {
        x = (x + u32::from(b)) % 65521;
        y = (y + x) % 65521;
    }
    one(lua, ((y << 16) | x).to_string())
}

fn ago(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "ago")?;
    if !matches!(a.get(1), Value::Number(_) | Value::Integer(_)) {
        return Err(a.arg_error(1, "ago requires a number (Unix timestamp)"));
    }
    let ts = a.number(1)? as i64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    let since = now - i128::from(ts) * 1_000_000_000;
    // Duration.Round(time.Second): halves away from zero.
    let rounded = ((since + since.signum() * 500_000_000) / 1_000_000_000) * 1_000_000_000;
    one(
        lua,
        go_text::duration::format(rounded.clamp(i64::MIN as i128, i64::MAX as i128) as i64),
    )
}

fn all_any(lua: &Lua, a: Args, all: bool) -> mlua::Result<MultiValue> {
    need(&a, 1, if all { "all" } else { "any" })?;
    let t = a.table(1)?;
    let values: Vec<Value> = values_in_order(&t)?.into_iter().map(|p| p.1).collect();
    one(
        lua,
        if all {
            values.iter().all(|v| !is_empty(v))
        } else {
            values.iter().any(|v| !is_empty(v))
        },
    )
}

fn b32dec(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "b32dec")?;
    let s: Vec<u8> = a
        .string(1)?
        .into_iter()
        .filter(|b| *b != b'\n' && *b != b'\r')
        .collect();
    match data_encoding::BASE32.decode(&s) {
        Ok(d) => ret(lua, [bytes(lua, d)?, Value::Nil]),
        Err(e) => ret(
            lua,
            [
                Value::Nil,
                bytes(
                    lua,
                    format!("b32dec: illegal base32 data at input byte {}", e.position),
                )?,
            ],
        ),
    }
}

fn b32enc(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "b32enc")?;
    one(lua, data_encoding::BASE32.encode(&a.string(1)?))
}

fn b64dec(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "b64dec")?;
    match super::globals::go_base64_decode(&a.string(1)?) {
        Some(d) => ret(lua, [bytes(lua, d)?, Value::Nil]),
        None => ret(
            lua,
            [Value::Nil, bytes(lua, "b64dec: illegal base64 data")?],
        ),
    }
}

fn b64enc(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    use base64::Engine;
    need(&a, 1, "b64enc")?;
    one(lua, GO_STD.encode(a.string(1)?))
}

fn path_fn(
    lua: &Lua,
    a: Args,
    n: usize,
    name: &str,
    f: fn(&str) -> Vec<u8>,
) -> mlua::Result<MultiValue> {
    need(&a, n, name)?;
    one(lua, bytes(lua, f(&a.text(1)?))?)
}

/// Go `path.Clean`.
pub fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// Go `path.Base`.
pub fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Go `path.Dir`.
pub fn path_dir(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    path_clean(dir)
}

/// Go `path.Ext`.
pub fn path_ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_string();
        }
    }
    String::new()
}

fn is_abs(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "isAbs")?;
    one(lua, a.string(1)?.starts_with(b"/"))
}

fn cat(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let parts: Vec<String> = (1..=a.top())
        .map(|i| a.get(i))
        .filter(|v| !v.is_nil())
        .map(|v| lvalue_string(&v))
        .collect();
    one(lua, parts.join(" "))
}

fn coalesce(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() < 1 {
        return Err(a.arg_error(1, "coalesce requires at least 1 argument"));
    }
    for i in 1..=a.top() {
        let v = a.get(i);
        if !is_empty(&v) {
            return one(lua, v);
        }
    }
    one(lua, Value::Nil)
}

fn compact(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "compact")?;
    let out = lua.create_table()?;
    let mut i = 1;
    for (_, v) in values_in_order(&a.table(1)?)? {
        if !is_empty(&v) {
            out.raw_set(i, v)?;
            i += 1;
        }
    }
    one(lua, out)
}

fn duration(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "duration")?;
    let n: i64 = match a.get(1) {
        Value::Number(f) => f as i64,
        Value::Integer(i) => i,
        Value::Nil => 0,
        other => lvalue_string(&other).parse().unwrap_or(0),
    };
    one(
        lua,
        go_text::duration::format(n.wrapping_mul(1_000_000_000)),
    )
}

fn duration_round(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "durationRound")?;
    let text = match a.get(1) {
        Value::Number(f) => format!("{}s", f as i64),
        Value::Integer(i) => format!("{i}s"),
        Value::Nil => "0s".into(),
        Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        other => format!("{}s", lvalue_string(&other)),
    };
    let d = go_text::duration::parse_go_duration(&text).unwrap_or(0);
    let u = d.unsigned_abs() as u128;
    let second: u128 = 1_000_000_000;
    let (minute, hour) = (60 * second, 3600 * second);
    let (day, month, year) = (24 * hour, 30 * 24 * hour, 365 * 24 * hour);
    let out = if u > year {
        format!("{}y", u / year)
    } else if u > month {
        format!("{}mo", u / month)
    } else if u > day {
        format!("{}d", u / day)
    } else if u > hour {
        format!("{}h", u / hour)
    } else if u > minute {
        format!("{}m", u / minute)
    } else if u > second {
        format!("{}s", u / second)
    } else {
        "0s".into()
    };
    one(lua, out)
}

fn empty(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() < 1 {
        return Err(a.arg_error(1, "empty requires 1 argument"));
    }
    one(lua, is_empty(&a.get(1)))
}

fn indent(lua: &Lua, a: Args, newline: bool) -> mlua::Result<MultiValue> {
    need(&a, 2, if newline { "nindent" } else { "indent" })?;
    let n = a.number(1)? as i64;
    let s = a.string(2)?;
    let pad = " ".repeat(n.max(0) as usize);
    let mut nl_pad = b"\n".to_vec();
    nl_pad.extend_from_slice(pad.as_bytes());
    let mut out = Vec::new();
    if newline {
        out.push(b'\n');
    }
    out.extend_from_slice(pad.as_bytes());
    out.extend(super::strings::go_replace(&s, b"\n", &nl_pad, -1));
    one(lua, bytes(lua, out)?)
}

fn nospace(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "nospace")?;
    let s: String = go_runes(&a.string(1)?)
        .into_iter()
        .map(|r| r.1)
        .filter(|c| !c.is_whitespace())
        .collect();
    one(lua, s)
}

fn plural(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() < 3 {
        return Err(a.arg_error(1, "plural requires 3 arguments: singular, plural, count"));
    }
    let (one_form, many) = (a.string(1)?, a.string(2)?);
    let n = a.number(3)? as i64;
    one(lua, bytes(lua, if n == 1 { one_form } else { many })?)
}

/// sprig `strval` then `%v`, as the glua wrapper hands values over.
fn sprig_text(v: &Value) -> String {
    match v {
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 9.2e18 => (*n as i64).to_string(),
        Value::Number(n) => go_text::fmt::float_v(*n),
        other => lvalue_string(other),
    }
}

fn quote(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "quote")?;
    let parts: Vec<String> = values_in_order(&a.table(1)?)?
        .into_iter()
        .map(|(_, v)| go_text::strconv::quote(&sprig_text(&v)))
        .collect();
    one(lua, parts.join(" "))
}

fn squote(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "squote")?;
    let parts: Vec<String> = values_in_order(&a.table(1)?)?
        .into_iter()
        .map(|(_, v)| format!("'{}'", sprig_text(&v)))
        .collect();
    one(lua, parts.join(" "))
}

fn compile(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| format!("error parsing regexp: {e}"))
}

fn regex_find(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 2, "regexFind")?;
    let (p, s) = (a.text(1)?, a.text(2)?);
    match compile(&p) {
        Ok(re) => ret(
            lua,
            [
                bytes(lua, re.find(&s).map_or("", |m| m.as_str()))?,
                Value::Nil,
            ],
        ),
        Err(e) => ret(lua, [Value::Nil, bytes(lua, e)?]),
    }
}

fn regex_find_all(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 3, "regexFindAll")?;
    let (p, s, n) = (a.text(1)?, a.text(2)?, a.number(3)? as i64);
    match compile(&p) {
        Ok(re) => {
            let t = lua.create_table()?;
            if n != 0 {
                let limit = if n < 0 { usize::MAX } else { n as usize };
                for (i, m) in re.find_iter(&s).take(limit).enumerate() {
                    t.raw_set(i + 1, m.as_str())?;
                }
            }
            ret(lua, [Value::Table(t), Value::Nil])
        }
        Err(e) => ret(lua, [Value::Nil, bytes(lua, e)?]),
    }
}

fn regex_match(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 2, "regexMatch")?;
    let (p, s) = (a.text(1)?, a.text(2)?);
    match compile(&p) {
        Ok(re) => ret(lua, [Value::Boolean(re.is_match(&s)), Value::Nil]),
        Err(e) => ret(lua, [Value::Nil, bytes(lua, e)?]),
    }
}

fn regex_replace(lua: &Lua, a: Args, literal: bool) -> mlua::Result<MultiValue> {
    need(
        &a,
        3,
        if literal {
            "regexReplaceAllLiteral"
        } else {
            "regexReplaceAll"
        },
    )?;
    let (p, s, r) = (a.text(1)?, a.text(2)?, a.text(3)?);
    match compile(&p) {
        Ok(re) => {
            let out = if literal {
                re.replace_all(&s, regex::NoExpand(&r)).into_owned()
            } else {
                re.replace_all(&s, r.as_str()).into_owned()
            };
            ret(lua, [bytes(lua, out)?, Value::Nil])
        }
        Err(e) => ret(lua, [Value::Nil, bytes(lua, e)?]),
    }
}

/// Go `Regexp.Split`.
fn go_regex_split(re: &regex::Regex, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    let mut out = Vec::new();
    let (mut beg, mut end) = (0usize, 0usize);
    for m in re.find_iter(s).take(limit) {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = m.start();
        if m.end() != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = m.end();
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    out
}

fn regex_split(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() < 3 {
        return Err(a.arg_error(1, "mustRegexSplit requires 3 arguments"));
    }
    let (p, s, n) = (a.text(1)?, a.text(2)?, a.number(3)? as i64);
    match compile(&p) {
        Ok(re) => {
            let t = lua.create_table()?;
            for (i, part) in go_regex_split(&re, &s, n).into_iter().enumerate() {
                t.raw_set(i + 1, part)?;
            }
            ret(lua, [Value::Table(t), Value::Nil])
        }
        Err(e) => ret(lua, [Value::Nil, bytes(lua, e)?]),
    }
}

fn round(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() < 2 {
        return Err(a.arg_error(
            1,
            "round requires at least 2 arguments: value and precision",
        ));
    }
    let value = match a.get(1) {
        Value::Number(n) => n,
        Value::Integer(n) => n as f64,
        other => lvalue_string(&other).trim().parse().unwrap_or(0.0),
    };
    let precision = a.number(2)? as i32;
    let round_on = if a.top() >= 3 { a.number(3)? } else { 0.5 };
    let pow = 10f64.powi(precision);
    let digit = pow * value;
    let div = digit.fract();
    let rounded = if div.copysign(value) >= round_on.copysign(value) {
        digit.ceil()
    } else {
        digit.floor()
    };
    one(lua, rounded / pow)
}

fn digest<D: Digest>(lua: &Lua, a: Args, name: &str) -> mlua::Result<MultiValue> {
    need(&a, 1, name)?;
    let hash = D::digest(a.string(1)?);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    one(lua, hex)
}

fn sort_alpha(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 1, "sortAlpha")?;
    let mut items: Vec<Vec<u8>> = match a.get(1) {
        Value::Table(t) => values_in_order(&t)?
            .into_iter()
            .map(|(_, v)| match v {
                Value::String(s) => s.as_bytes().to_vec(),
                other => lvalue_string(&other).into_bytes(),
            })
            .collect(),
        Value::String(s) => vec![s.as_bytes().to_vec()],
        other => vec![lvalue_string(&other).into_bytes()],
    };
    items.sort();
    one(lua, super::args::string_list(lua, items)?)
}

fn substr(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 3, "substr")?;
    let mut start = a.number(1)? as i64;
    let mut end = a.number(2)? as i64;
    let s = a.string(3)?;
    let len = s.len() as i64;
    start = start.max(0);
    end = end.min(len);
    if start >= len || start >= end {
        return one(lua, "");
    }
    one(lua, bytes(lua, &s[start as usize..end as usize])?)
}

fn ternary(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 3, "ternary")?;
    let cond = a.boolean(3)?;
    one(lua, if cond { a.get(1) } else { a.get(2) })
}

fn to_decimal(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() < 1 {
        return Err(a.arg_error(1, "toDecimal requires 1 argument"));
    }
    let text = match a.get(1) {
        Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Value::Number(n) => lua_number(n),
        Value::Integer(n) => n.to_string(),
        Value::Boolean(true) => "1".into(),
        Value::Boolean(false) | Value::Nil => "0".into(),
        other => lvalue_string(&other),
    };
    // sprig's toDecimal reads octal.
    let digits = text.strip_prefix('+').unwrap_or(&text);
    let v = i64::from_str_radix(digits, 8).unwrap_or(0);
    one(lua, v as f64)
}

fn trunc(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    need(&a, 2, "trunc")?;
    let c = a.number(1)? as i64;
    let s = a.string(2)?;
    let len = s.len() as i64;
    let out = if c < 0 && len + c > 0 {
        &s[(len + c) as usize..]
    } else if c >= 0 && len > c {
        &s[..c as usize]
    } else {
        &s[..]
    };
    one(lua, bytes(lua, out)?)
}

fn uniq(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    if a.top() < 1 {
        return Err(a.arg_error(1, "uniq requires 1 argument"));
    }
    let out = lua.create_table()?;
    let mut seen = std::collections::HashSet::new();
    let mut i = 1;
    for (_, v) in values_in_order(&a.table(1)?)? {
        let key = match &v {
            Value::Table(t) => format!("{:p}", t.to_pointer()),
            other => lvalue_string(other),
        };
        if seen.insert(key) {
            out.raw_set(i, v)?;
            i += 1;
        }
    }
    one(lua, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_go() {
        assert_eq!(path_clean("a//b/../c/."), "a/c");
        assert_eq!(path_clean("/../a"), "/a");
        assert_eq!(path_clean(""), ".");
        assert_eq!(path_base("/a/b/"), "b");
        assert_eq!(path_base("/"), "/");
        assert_eq!(path_dir("/a/b"), "/a");
        assert_eq!(path_dir("b"), ".");
        assert_eq!(path_ext("a/b.tar.gz"), ".gz");
        assert_eq!(path_ext("a.b/c"), "");
    }

    #[test]
    fn abbreviation_follows_goutils() {
        assert_eq!(abbreviate_full(b"hello world", 0, 5).unwrap(), b"he...");
        assert_eq!(abbreviate_full(b"hello", 0, 5).unwrap(), b"hello");
        assert_eq!(
            abbreviate_full(b"abcdefghijklmno", 10, 10).unwrap(),
            b"...ijklmno"
        );
    }

    #[test]
    fn regex_split_follows_go() {
        let re = regex::Regex::new("a").unwrap();
        assert_eq!(go_regex_split(&re, "banana", -1), ["b", "n", "n", ""]);
        assert_eq!(go_regex_split(&re, "banana", 2), ["b", "nana"]);
        assert!(go_regex_split(&re, "banana", 0).is_empty());
    }
}
