//! `require("strings")`: lua-utils glua-strings, a thin wrapper over Go's `strings` package, so
//! indexes are Go's (0-based byte offsets, -1 when absent), case mapping is Go's (one rune to
//! one rune) and invalid UTF-8 decodes as U+FFFD one byte at a time, as Go's `range` does.

use mlua::{Function, Lua, MultiValue, Table, Value};

use super::args::{bytes, one, string_list, values_in_order, Args};
use super::module_table;

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    module_table(
        lua,
        &[
            ("Compare", compare),
            ("Contains", contains),
            ("ContainsAny", contains_any),
            ("ContainsRune", contains_rune),
            ("Count", count),
            ("EqualFold", equal_fold),
            ("Fields", fields),
            ("FieldsFunc", fields_func),
            ("HasPrefix", has_prefix),
            ("HasSuffix", has_suffix),
            ("Index", index),
            ("IndexAny", index_any),
            ("IndexByte", index_byte),
            ("IndexFunc", index_func),
            ("IndexRune", index_rune),
            ("Join", join),
            ("LastIndex", last_index),
            ("LastIndexAny", last_index_any),
            ("LastIndexByte", last_index_byte),
            ("LastIndexFunc", last_index_func),
            ("Map", map),
            ("Repeat", repeat),
            ("Replace", replace),
            ("Split", split),
            ("SplitAfter", split_after),
            ("SplitAfterN", split_after_n),
            ("SplitN", split_n),
            ("Title", title),
            ("ToLower", to_lower),
            ("ToTitle", to_title),
            ("ToUpper", to_upper),
            ("Trim", trim),
            ("TrimFunc", trim_func),
            ("TrimLeft", trim_left),
            ("TrimLeftFunc", trim_left_func),
            ("TrimPrefix", trim_prefix),
            ("TrimRight", trim_right),
            ("TrimRightFunc", trim_right_func),
            ("TrimSpace", trim_space),
            ("TrimSuffix", trim_suffix),
        ],
    )
}

/// Go's `for i, r := range s`: (byte offset, rune, width); an invalid byte is U+FFFD, width 1.
pub fn go_runes(b: &[u8]) -> Vec<(usize, char, usize)> {
    let mut out = Vec::with_capacity(b.len());
    let mut offset = 0;
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            out.push((offset, c, c.len_utf8()));
            offset += c.len_utf8();
        }
        for _ in chunk.invalid() {
            out.push((offset, char::REPLACEMENT_CHARACTER, 1));
            offset += 1;
        }
    }
    out
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    if n.is_empty() {
        return Some(0);
    }
    h.windows(n.len()).position(|w| w == n)
}

fn rfind(h: &[u8], n: &[u8]) -> Option<usize> {
    if n.is_empty() {
        return Some(h.len());
    }
    h.windows(n.len()).rposition(|w| w == n)
}

fn idx(i: Option<usize>) -> i64 {
    i.map_or(-1, |i| i as i64)
}

/// `unicode.ToUpper`/`ToLower`: simple one-to-one mappings only.
pub fn upper(c: char) -> char {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

pub fn lower(c: char) -> char {
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

fn map_runes(b: &[u8], f: impl Fn(char) -> char) -> Vec<u8> {
    let mut out = String::with_capacity(b.len());
    for (_, c, _) in go_runes(b) {
        out.push(f(c));
    }
    out.into_bytes()
}

fn call_bool(f: &Function, r: char) -> mlua::Result<bool> {
    match f.call::<Value>(r as u32 as f64)? {
        Value::Boolean(b) => Ok(b),
        other => Err(mlua::Error::runtime(format!(
            "bad argument #-1 (boolean expected, got {})",
            super::args::type_name(&other)
        ))),
    }
}

fn compare(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let (x, y) = (a.string(1)?, a.string(2)?);
    one(lua, x.cmp(&y) as i64 as f64)
}

fn contains(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, find(&a.string(1)?, &a.string(2)?).is_some())
}

fn contains_any(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let chars: Vec<char> = go_runes(&a.string(2)?).into_iter().map(|r| r.1).collect();
    one(
        lua,
        go_runes(&a.string(1)?).iter().any(|r| chars.contains(&r.1)),
    )
}

fn contains_rune(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let r = a.int(2)?;
    one(lua, go_runes(&s).iter().any(|x| x.1 as i64 == r))
}

fn count(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let (s, sub) = (a.string(1)?, a.string(2)?);
    let n = if sub.is_empty() {
        go_runes(&s).len() + 1
    } else {
        let mut n = 0;
        let mut rest = &s[..];
        while let Some(i) = find(rest, &sub) {
            n += 1;
            rest = &rest[i + sub.len()..];
        }
        n
    };
    one(lua, n as f64)
}

/// `strings.EqualFold` under Unicode simple folding.
pub fn fold_eq(x: &[u8], y: &[u8]) -> bool {
    let fold = |c: char| match c {
        '\u{17f}' => 's',
        '\u{212a}' => 'k',
        '\u{212b}' => 'å',
        c => lower(upper(c)),
    };
    let (a, b) = (go_runes(x), go_runes(y));
    a.len() == b.len() && a.iter().zip(&b).all(|(p, q)| fold(p.1) == fold(q.1))
}

fn equal_fold(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, fold_eq(&a.string(1)?, &a.string(2)?))
}

fn split_by(
    s: &[u8],
    mut is_sep: impl FnMut(char) -> mlua::Result<bool>,
) -> mlua::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c, _) in go_runes(s) {
        if is_sep(c)? {
            if let Some(st) = start.take() {
                out.push(s[st..i].to_vec());
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(st) = start {
        out.push(s[st..].to_vec());
    }
    Ok(out)
}

fn fields(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let parts = split_by(&a.string(1)?, |c| Ok(c.is_whitespace()))?;
    one(lua, string_list(lua, parts)?)
}

fn fields_func(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let f = a.function(2)?;
    let parts = split_by(&s, |c| call_bool(&f, c))?;
    one(lua, string_list(lua, parts)?)
}

fn has_prefix(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, a.string(1)?.starts_with(&a.string(2)?))
}

fn has_suffix(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, a.string(1)?.ends_with(&a.string(2)?))
}

fn index(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, idx(find(&a.string(1)?, &a.string(2)?)) as f64)
}

fn index_any(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let chars: Vec<char> = go_runes(&a.string(2)?).into_iter().map(|r| r.1).collect();
    let i = go_runes(&a.string(1)?)
        .into_iter()
        .find(|r| chars.contains(&r.1))
        .map(|r| r.0);
    one(lua, idx(i) as f64)
}

fn index_byte(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let b = a.int(2)? as u8;
    one(lua, idx(s.iter().position(|x| *x == b)) as f64)
}

fn index_func(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let f = a.function(2)?;
    for (i, c, _) in go_runes(&s) {
        if call_bool(&f, c)? {
            return one(lua, i as f64);
        }
    }
    one(lua, -1.0)
}

fn index_rune(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let r = a.int(2)?;
    let i = go_runes(&s)
        .into_iter()
        .find(|x| x.1 as i64 == r)
        .map(|x| x.0);
    one(lua, idx(i) as f64)
}

fn join(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let t = a.table(1)?;
    let sep = a.string(2)?;
    let parts: Vec<Vec<u8>> = values_in_order(&t)?
        .into_iter()
        .filter_map(|(_, v)| match v {
            Value::String(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        })
        .collect();
    one(lua, bytes(lua, parts.join(&sep[..]))?)
}

fn last_index(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, idx(rfind(&a.string(1)?, &a.string(2)?)) as f64)
}

fn last_index_any(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let chars: Vec<char> = go_runes(&a.string(2)?).into_iter().map(|r| r.1).collect();
    let i = go_runes(&a.string(1)?)
        .into_iter()
        .rev()
        .find(|r| chars.contains(&r.1))
        .map(|r| r.0);
    one(lua, idx(i) as f64)
}

fn last_index_byte(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let b = a.int(2)? as u8;
    one(lua, idx(s.iter().rposition(|x| *x == b)) as f64)
}

fn last_index_func(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let f = a.function(2)?;
    for (i, c, _) in go_runes(&s).into_iter().rev() {
        if call_bool(&f, c)? {
            return one(lua, i as f64);
        }
    }
    one(lua, -1.0)
}

fn map(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let f = a.function(1)?;
    let s = a.string(2)?;
    let mut out = String::new();
    for (_, c, _) in go_runes(&s) {
        let r = match f.call::<Value>(c as u32 as f64)? {
            Value::Number(n) => super::args::go_int(n),
            Value::Integer(n) => n,
            _ => return Err(mlua::Error::runtime("bad argument #-1 (number expected)")),
        };
        if r >= 0 {
            out.push(char::from_u32(r as u32).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
    }
    one(lua, out)
}

fn repeat(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let n = a.int(2)?;
    if n < 0 {
        return Err(mlua::Error::runtime("strings: negative Repeat count"));
    }
    let total = (s.len() as u128) * (n as u128);
    if total > isize::MAX as u128 {
        return Err(mlua::Error::runtime(
            "strings: Repeat output length overflow",
        ));
    }
    super::args::check_alloc(lua, total)?;
    one(lua, bytes(lua, s.repeat(n as usize))?)
}

/// `strings.Replace`.
pub fn go_replace(s: &[u8], old: &[u8], new: &[u8], n: i64) -> Vec<u8> {
    if old == new || n == 0 {
        return s.to_vec();
    }
    let mut out = Vec::with_capacity(s.len());
    let mut done = 0i64;
    if old.is_empty() {
        let runes = go_runes(s);
        let mut last = 0;
        for (i, _, w) in runes.iter().copied() {
            if n >= 0 && done >= n {
                break;
            }
            out.extend_from_slice(&s[last..i]);
            out.extend_from_slice(new);
            out.extend_from_slice(&s[i..i + w]);
            last = i + w;
            done += 1;
        }
        if n < 0 || done < n {
            out.extend_from_slice(&s[last..]);
            out.extend_from_slice(new);
            return out;
        }
        out.extend_from_slice(&s[last..]);
        return out;
    }
    let mut rest = s;
    while n < 0 || done < n {
        match find(rest, old) {
            Some(i) => {
                out.extend_from_slice(&rest[..i]);
                out.extend_from_slice(new);
                rest = &rest[i + old.len()..];
                done += 1;
            }
            None => break,
        }
    }
    out.extend_from_slice(rest);
    out
}

fn replace(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let out = go_replace(&a.string(1)?, &a.string(2)?, &a.string(3)?, a.int(4)?);
    one(lua, bytes(lua, out)?)
}

/// `strings.genSplit`: `keep` bytes of the separator stay with each piece (SplitAfter).
pub fn go_split(s: &[u8], sep: &[u8], keep: bool, n: i64) -> Vec<Vec<u8>> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let runes = go_runes(s);
        let limit = if n < 0 || n as usize > runes.len() {
            runes.len()
        } else {
            n as usize
        };
        let mut out: Vec<Vec<u8>> = Vec::with_capacity(limit);
        for (k, (i, _, w)) in runes.iter().copied().enumerate() {
            if k + 1 == limit {
                out.push(s[i..].to_vec());
                break;
            }
            out.push(s[i..i + w].to_vec());
        }
        return out;
    }
    let mut out = Vec::new();
    let mut rest = s;
    while n < 0 || (out.len() as i64) < n - 1 {
        match find(rest, sep) {
            Some(i) => {
                let end = if keep { i + sep.len() } else { i };
                out.push(rest[..end].to_vec());
                rest = &rest[i + sep.len()..];
            }
            None => break,
        }
    }
    out.push(rest.to_vec());
    out
}

fn split(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(
        lua,
        string_list(lua, go_split(&a.string(1)?, &a.string(2)?, false, -1))?,
    )
}

fn split_after(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(
        lua,
        string_list(lua, go_split(&a.string(1)?, &a.string(2)?, true, -1))?,
    )
}

fn split_n_common(lua: &Lua, a: Args, keep: bool) -> mlua::Result<MultiValue> {
    let (s, sep, n) = (a.string(1)?, a.string(2)?, a.int(3)?);
    if n == 0 {
        return one(lua, Value::Nil);
    }
    one(lua, string_list(lua, go_split(&s, &sep, keep, n))?)
}

fn split_after_n(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    split_n_common(lua, a, true)
}

fn split_n(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    split_n_common(lua, a, false)
}

/// `strings.Title`'s word boundaries.
fn is_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphanumeric() {
        return false;
    }
    c.is_whitespace()
}

fn title(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let mut prev = ' ';
    let mut out = String::new();
    for (_, c, _) in go_runes(&s) {
        out.push(if is_separator(prev) { upper(c) } else { c });
        prev = c;
    }
    one(lua, out)
}

fn to_lower(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, bytes(lua, map_runes(&a.string(1)?, lower))?)
}

fn to_title(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, bytes(lua, map_runes(&a.string(1)?, upper))?)
}

fn to_upper(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(lua, bytes(lua, map_runes(&a.string(1)?, upper))?)
}

fn trim_with(
    s: &[u8],
    left: bool,
    right: bool,
    mut cut: impl FnMut(char) -> mlua::Result<bool>,
) -> mlua::Result<Vec<u8>> {
    let runes = go_runes(s);
    let mut start = 0;
    let mut end = runes.len();
    if left {
        while start < end && cut(runes[start].1)? {
            start += 1;
        }
    }
    if right {
        while end > start && cut(runes[end - 1].1)? {
            end -= 1;
        }
    }
    if start == end {
        return Ok(Vec::new());
    }
    let from = runes[start].0;
    let to = runes[end - 1].0 + runes[end - 1].2;
    Ok(s[from..to].to_vec())
}

fn cutset(a: &Args, i: usize) -> mlua::Result<Vec<char>> {
    Ok(go_runes(&a.string(i)?).into_iter().map(|r| r.1).collect())
}

fn trim(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let set = cutset(&a, 2)?;
    one(
        lua,
        bytes(
            lua,
            trim_with(&a.string(1)?, true, true, |c| Ok(set.contains(&c)))?,
        )?,
    )
}

fn trim_left(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let set = cutset(&a, 2)?;
    one(
        lua,
        bytes(
            lua,
            trim_with(&a.string(1)?, true, false, |c| Ok(set.contains(&c)))?,
        )?,
    )
}

fn trim_right(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let set = cutset(&a, 2)?;
    one(
        lua,
        bytes(
            lua,
            trim_with(&a.string(1)?, false, true, |c| Ok(set.contains(&c)))?,
        )?,
    )
}

fn trim_func(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let f = a.function(2)?;
    one(
        lua,
        bytes(
            lua,
            trim_with(&a.string(1)?, true, true, |c| call_bool(&f, c))?,
        )?,
    )
}

fn trim_left_func(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let f = a.function(2)?;
    one(
        lua,
        bytes(
            lua,
            trim_with(&a.string(1)?, true, false, |c| call_bool(&f, c))?,
        )?,
    )
}

fn trim_right_func(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let f = a.function(2)?;
    one(
        lua,
        bytes(
            lua,
            trim_with(&a.string(1)?, false, true, |c| call_bool(&f, c))?,
        )?,
    )
}

fn trim_space(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    one(
        lua,
        bytes(
            lua,
            trim_with(&a.string(1)?, true, true, |c| Ok(c.is_whitespace()))?,
        )?,
    )
}

fn trim_prefix(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let (s, p) = (a.string(1)?, a.string(2)?);
    let out = s.strip_prefix(&p[..]).unwrap_or(&s).to_vec();
    one(lua, bytes(lua, out)?)
}

fn trim_suffix(lua: &Lua, a: Args) -> mlua::Result<MultiValue> {
    let (s, p) = (a.string(1)?, a.string(2)?);
    let out = s.strip_suffix(&p[..]).unwrap_or(&s).to_vec();
    one(lua, bytes(lua, out)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: Vec<Vec<u8>>) -> Vec<String> {
        v.into_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect()
    }

    #[test]
    fn split_follows_go() {
        assert_eq!(strs(go_split(b"a,b,c", b",", false, -1)), ["a", "b", "c"]);
        assert_eq!(strs(go_split(b"a,b,c", b",", false, 2)), ["a", "b,c"]);
        assert_eq!(strs(go_split(b"a,b,c", b",", true, -1)), ["a,", "b,", "c"]);
        assert_eq!(strs(go_split(b"", b",", false, -1)), [""]);
        assert_eq!(strs(go_split("aé".as_bytes(), b"", false, -1)), ["a", "é"]);
        assert_eq!(strs(go_split(b"abc", b"", false, 2)), ["a", "bc"]);
    }

    #[test]
    fn replace_follows_go() {
        assert_eq!(
            go_replace(b"oink oink oink", b"k", b"ky", 2),
            b"oinky oinky oink"
        );
        assert_eq!(
            go_replace(b"oink oink oink", b"oink", b"moo", -1),
            b"moo moo moo"
        );
        assert_eq!(go_replace(b"ab", b"", b"-", -1), b"-a-b-");
        assert_eq!(go_replace(b"ab", b"", b"-", 1), b"-ab");
    }

    #[test]
    fn invalid_utf8_is_one_replacement_per_byte() {
        let r = go_runes(b"a\xffb");
        assert_eq!(r, vec![(0, 'a', 1), (1, '\u{fffd}', 1), (2, 'b', 1)]);
    }

    #[test]
    fn case_folding() {
        assert!(fold_eq("Go".as_bytes(), "GO".as_bytes()));
        assert!(fold_eq("ſ".as_bytes(), "S".as_bytes()));
        assert!(!fold_eq(b"a", b"ab"));
        assert_eq!(upper('ß'), 'ß');
    }
}
