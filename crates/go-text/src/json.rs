//! Go's `encoding/json` in text: how `json.Marshal` writes a string.

use std::fmt::Write;

/// A string as `json.Marshal` writes it (HTML escaping on, Go ≥ 1.22): `\"`, `\\`, the short
/// escapes `\n \r \t \b \f`, `\u00XX` for the other control characters, `\u003c \u003e \u0026`
/// for `< > &`, and `\u2028`/`\u2029`; every other character as UTF-8.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
