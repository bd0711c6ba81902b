//! The pieces of Go's `strconv` that kubectl's output depends on: quoting (`%q`, `%#v`, `%#U`),
//! unquoting template string literals, and the two ways Go writes a float64 (`fmt`'s `%v` and
//! `encoding/json`'s). Rust's own formatting differs in each case (`1e23` vs `1e+23`, `1000000`
//! vs `1e+06`), and kubectl users compare these bytes.

/// Go's `unicode.IsPrint`, without Go's tables: controls, separators other than the ASCII space,
/// format characters, surrogates, private use and noncharacters are not printable. Unassigned
/// code points count as printable here (Go says they are not); they only show up in quoted text.
pub(crate) fn is_print(c: char) -> bool {
    let u = c as u32;
    if c == ' ' {
        return true;
    }
    if c.is_control() {
        return false;
    }
    !matches!(
        u,
        0xA0 | 0xAD
            | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x1680
            | 0x2000..=0x200F
            | 0x2028..=0x202F
            | 0x205F..=0x2064
            | 0x2066..=0x206F
            | 0x3000
            | 0xE000..=0xF8FF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xFFFE
            | 0xFFFF
            | 0x110BD
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xF0000..=0x10FFFF
    )
}

/// `strconv.Quote`: a double-quoted Go string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// `fmt`'s `%#U`: `U+002A '*'` (the character only when it is printable).
pub(crate) fn format_sharp_u(c: char) -> String {
    if is_print(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// `jsonpath.UnquoteExtend`: `strconv.Unquote` that also takes single-quoted strings. Escapes
/// that produce bytes which are not UTF-8 (`"\xff"`) become U+FFFD, as a Rust string must be UTF-8.
pub(crate) fn unquote_extend(s: &str) -> Result<String, &'static str> {
    const SYNTAX: &str = "invalid syntax";
    let bytes = s.as_bytes();
    let n = bytes.len();
    if n < 2 {
        return Err(SYNTAX);
    }
    let quote = bytes[0];
    if quote != bytes[n - 1] {
        return Err(SYNTAX);
    }
    if quote != b'"' && quote != b'\'' {
        return Err(SYNTAX);
    }
    let inner = &s[1..n - 1];
    if !inner.contains('\\') && !inner.contains(quote as char) {
        return Ok(inner.to_string());
    }
    let mut buf: Vec<u8> = Vec::with_capacity(inner.len());
    let mut rest = inner;
    while !rest.is_empty() {
        let (unit, tail) = unquote_char(rest, quote).ok_or(SYNTAX)?;
        match unit {
            Unit::Byte(b) => buf.push(b),
            Unit::Char(c) => {
                let mut tmp = [0u8; 4];
                buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
            }
        }
        rest = tail;
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

enum Unit {
    Byte(u8),
    Char(char),
}

/// `strconv.UnquoteChar`: one character (or one byte, for `\x` and octal escapes) and the rest.
fn unquote_char(s: &str, quote: u8) -> Option<(Unit, &str)> {
    let first = *s.as_bytes().first()?;
    if first == quote {
        return None;
    }
    if first >= 0x80 {
        let c = s.chars().next()?;
        return Some((Unit::Char(c), &s[c.len_utf8()..]));
    }
    if first != b'\\' {
        return Some((Unit::Byte(first), &s[1..]));
    }
    let escape = *s.as_bytes().get(1)?;
    if !escape.is_ascii() {
        return None;
    }
    let rest = &s[2..];
    let simple = |c: char| Some((Unit::Char(c), rest));
    match escape {
        b'a' => simple('\u{7}'),
        b'b' => simple('\u{8}'),
        b'f' => simple('\u{c}'),
        b'n' => simple('\n'),
        b'r' => simple('\r'),
        b't' => simple('\t'),
        b'v' => simple('\u{b}'),
        b'\\' => simple('\\'),
        b'\'' | b'"' if escape == quote => simple(escape as char),
        b'x' | b'u' | b'U' => {
            let len = match escape {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let digits = rest.get(..len)?;
            let value = u32::from_str_radix(digits, 16).ok()?;
            if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let tail = &rest[len..];
            if escape == b'x' {
                // A single byte, possibly not UTF-8 on its own.
                return Some((Unit::Byte(value as u8), tail));
            }
            Some((Unit::Char(char::from_u32(value)?), tail))
        }
        b'0'..=b'7' => {
            let digits = rest.as_bytes().get(..2)?;
            let mut value = u32::from(escape - b'0');
            for d in digits {
                if !(b'0'..=b'7').contains(d) {
                    return None;
                }
                value = (value << 3) | u32::from(d - b'0');
            }
            if value > 255 {
                return None;
            }
            Some((Unit::Byte(value as u8), &rest[2..]))
        }
        _ => None,
    }
}

/// The shortest decimal digits that read back as `f` (finite, non-zero) and where the decimal
/// point goes: 1.5 is ("15", 1), 0.001 is ("1", -2). Rust and Go both pick the shortest, closest
/// digit string, so only the layout around it differs between the two languages.
fn shortest_digits(f: f64) -> (String, i32) {
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    (digits, exponent + 1)
}

/// `%e` layout of shortest digits: `d.ddde±XX` (at least two exponent digits).
fn layout_e(negative: bool, digits: &str, point: i32) -> String {
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let exp = point - 1;
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    out.push_str(&format!("{:02}", exp.unsigned_abs()));
    out
}

/// `%f` layout of shortest digits with exactly the digits needed after the point.
fn layout_f(negative: bool, digits: &str, point: i32) -> String {
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let nd = digits.len() as i32;
    if point <= 0 {
        out.push('0');
    } else {
        for i in 0..point {
            out.push(digit_at(digits, i));
        }
    }
    let decimals = (nd - point).max(0);
    if decimals > 0 {
        out.push('.');
        for i in 0..decimals {
            out.push(digit_at(digits, point + i));
        }
    }
    out
}

fn digit_at(digits: &str, i: i32) -> char {
    if i < 0 {
        return '0';
    }
    digits
        .as_bytes()
        .get(i as usize)
        .map_or('0', |b| *b as char)
}

/// `fmt.Sprint(float64)`: `%g` with the shortest digits; exponent form from 1e+06 and below 1e-04.
pub(crate) fn format_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let negative = f.is_sign_negative();
    if f == 0.0 {
        return if negative { "-0".into() } else { "0".into() };
    }
    let (digits, point) = shortest_digits(f);
    let exp = point - 1;
    if !(-4..6).contains(&exp) {
        layout_e(negative, &digits, point)
    } else {
        layout_f(negative, &digits, point)
    }
}

/// `encoding/json`'s float64: plain digits, exponent form only below 1e-6 and from 1e21, with
/// `e-07` shortened to `e-7`.
pub(crate) fn format_float_json(f: f64) -> String {
    if !f.is_finite() {
        // encoding/json refuses these; a JSON document cannot hold them in the first place.
        return "null".into();
    }
    let negative = f.is_sign_negative();
    if f == 0.0 {
        return if negative { "-0".into() } else { "0".into() };
    }
    let (digits, point) = shortest_digits(f);
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        let text = layout_e(negative, &digits, point);
        let bytes = text.as_bytes();
        let n = bytes.len();
        if n >= 4 && bytes[n - 4] == b'e' && bytes[n - 3] == b'-' && bytes[n - 2] == b'0' {
            return format!("{}{}", &text[..n - 2], &text[n - 1..]);
        }
        text
    } else {
        layout_f(negative, &digits, point)
    }
}

/// `strconv.Atoi` as the jsonpath parser uses it: an optional sign and ASCII digits, 64-bit.
pub(crate) fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `strconv.ParseFloat(s, 64)` for what the jsonpath number scanner collects (sign, digits, dots):
/// overflow to infinity is an error in Go.
pub(crate) fn parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || body == "." || !body.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    if body.bytes().filter(|b| *b == b'.').count() > 1 {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_fmt_prints_them() {
        let cases = [
            (1.5, "1.5"),
            (1e6, "1e+06"),
            (100000.0, "100000"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0"),
            (0.0, "0"),
            (1e23, "1e+23"),
            (123456789012.5, "1.234567890125e+11"),
            (18446744073709551615.0, "1.8446744073709552e+19"),
            (8.95, "8.95"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float_v(f), want, "{f}");
        }
    }

    #[test]
    fn floats_encode_as_go_json_encodes_them() {
        let cases = [
            (1.5, "1.5"),
            (1e6, "1000000"),
            (1e-7, "1e-7"),
            (0.00001, "0.00001"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (-0.0, "-0"),
            (18446744073709551615.0, "18446744073709552000"),
            (123456789012.5, "123456789012.5"),
            (1.234e-10, "1.234e-10"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float_json(f), want, "{f}");
        }
    }

    #[test]
    fn quote_escapes_as_strconv_quote() {
        assert_eq!(
            quote("ctl\u{8}\u{c}\u{1}\u{2028}<é>\t\r\u{1b}[0m"),
            r#""ctl\b\f\x01\u2028<é>\t\r\x1b[0m""#
        );
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("{.x}\n"), r#""{.x}\n""#);
    }

    #[test]
    fn sharp_u_shows_printable_characters_only() {
        assert_eq!(format_sharp_u('*'), "U+002A '*'");
        assert_eq!(format_sharp_u('~'), "U+007E '~'");
        assert_eq!(format_sharp_u('\t'), "U+0009");
    }

    #[test]
    fn unquote_extend_reads_go_literals_in_both_quotes() {
        assert_eq!(unquote_extend(r#""\t""#).as_deref(), Ok("\t"));
        assert_eq!(unquote_extend("'Linux'").as_deref(), Ok("Linux"));
        assert_eq!(unquote_extend(r"'\\\''").as_deref(), Ok("\\'"));
        assert_eq!(unquote_extend(r#""(\"\")""#).as_deref(), Ok("(\"\")"));
        assert_eq!(unquote_extend(r#""\u00e9\x41\101""#).as_deref(), Ok("éAA"));
        assert_eq!(unquote_extend(r#""\xc3\xa9""#).as_deref(), Ok("é"));
        assert_eq!(unquote_extend(r#""it\'s""#), Err("invalid syntax"));
        assert_eq!(unquote_extend(r#""a"b""#), Err("invalid syntax"));
        assert_eq!(unquote_extend("\""), Err("invalid syntax"));
        assert_eq!(unquote_extend(r#""\q""#), Err("invalid syntax"));
        assert_eq!(unquote_extend(r#""\400""#), Err("invalid syntax"));
        // A backslash before a multi-byte character is a syntax error, not a split character.
        assert_eq!(unquote_extend("\"\\é\""), Err("invalid syntax"));
    }

    #[test]
    fn numbers_parse_as_strconv() {
        assert_eq!(atoi("+12"), Some(12));
        assert_eq!(atoi("-0"), Some(0));
        assert_eq!(atoi("12.5"), None);
        assert_eq!(atoi("99999999999999999999"), None);
        assert_eq!(parse_float("12."), Some(12.0));
        assert_eq!(parse_float("-.5"), Some(-0.5));
        assert_eq!(parse_float("+12.3.0"), None);
        assert_eq!(parse_float("-"), None);
        assert_eq!(parse_float(&"9".repeat(400)), None);
    }
}
