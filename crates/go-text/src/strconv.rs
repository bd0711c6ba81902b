//! Go's `strconv` text forms: `Quote` (what `%q` prints), `IsPrint`, `UnquoteChar`,
//! `FormatFloat` with the shortest precision (what `%v` of a float64 prints), and the `Atoi` /
//! `ParseFloat` subsets kubectl's jsonpath parser uses. Rust's own formatting differs in each
//! case (`1e23` vs `1e+23`, `1000000` vs `1e+06`, `\u{1}` vs `\x01`).

/// Go's `strconv.IsPrint` (= `unicode.IsPrint`): letters, marks, numbers, punctuation, symbols
/// and the ASCII space. The general categories come from `unicode-general-category` (Unicode
/// 16.0); Go 1.26's tables are Unicode 15.0, so a character first assigned in 16.0 prints raw
/// here where Go escapes it.
pub fn is_print(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    if c.is_ascii() {
        return (' '..'\u{7f}').contains(&c);
    }
    !matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
            | G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
    )
}

/// `strconv.Quote` of a (valid UTF-8) string: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    quote_bytes(s.as_bytes())
}

/// `strconv.Quote` of Go string bytes: each byte that is not part of valid UTF-8 becomes `\xNN`.
pub fn quote_bytes(bytes: &[u8]) -> String {
    crate::quoted(bytes, push_escaped, |out, b| {
        out.push_str(&format!("\\x{b:02x}"))
    })
}

/// `appendEscapedRune` with `"` as the quote, printable runes kept.
fn push_escaped(out: &mut String, s: &str) {
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
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
}

/// What [`unquote_char`] decodes: a character, or a single byte (`\x`, octal escapes and ASCII).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Byte(u8),
    Char(char),
}

/// `strconv.UnquoteChar(s, quote)`: the first character of an escaped string literal body and
/// the rest, or `None` for `ErrSyntax`.
pub fn unquote_char(s: &str, quote: u8) -> Option<(Unit, &str)> {
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
            if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let value = u32::from_str_radix(digits, 16).ok()?;
            let tail = &rest[len..];
            if escape == b'x' {
                // A single byte, possibly not UTF-8 on its own; two hex digits fit a u8.
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
            let byte = u8::try_from(value).ok()?;
            Some((Unit::Byte(byte), &rest[2..]))
        }
        _ => None,
    }
}

/// client-go `jsonpath.UnquoteExtend`: `strconv.Unquote` that also takes single-quoted strings of
/// any length. Escapes that produce bytes which are not UTF-8 (`"\xff"`) become U+FFFD, as a
/// Rust string must be UTF-8.
pub fn unquote_extend(s: &str) -> Result<String, &'static str> {
    const SYNTAX: &str = "invalid syntax";
    let bytes = s.as_bytes();
    let n = bytes.len();
    if n < 2 {
        return Err(SYNTAX);
    }
    let quote = bytes[0];
    if quote != bytes[n - 1] || (quote != b'"' && quote != b'\'') {
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

/// `strconv.Atoi` for what kubectl's jsonpath parser hands it: an optional sign and ASCII
/// digits, 64-bit.
pub fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `strconv.ParseFloat(s, 64)` for what the jsonpath number scanner collects (sign, digits,
/// dots): overflow to infinity is an error in Go.
pub fn parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || body == "." || !body.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    if body.bytes().filter(|b| *b == b'.').count() > 1 {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// The `fmt` byte of `strconv.FormatFloat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatFormat {
    /// `'e'`: `-d.ddddde±dd`.
    E,
    /// `'f'`: `-ddd.dddd`.
    F,
    /// `'g'`: `'e'` for exponents below -4 or from 6 on (with the shortest precision), `'f'`
    /// otherwise; what `%v` of a float64 prints.
    G,
}

/// `strconv.FormatFloat(f, fmt, -1, 64)`: the shortest digits that read back as `f`.
pub fn format_float(f: f64, fmt: FloatFormat) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let negative = f.is_sign_negative();
    let (digits, point) = shortest_digits(f);
    match fmt {
        FloatFormat::E => layout_e(negative, &digits, point),
        FloatFormat::F => layout_f(negative, &digits, point),
        FloatFormat::G => {
            // With the shortest precision Go decides with an exponent precision of 6.
            if !(-4..6).contains(&(point - 1)) {
                layout_e(negative, &digits, point)
            } else {
                layout_f(negative, &digits, point)
            }
        }
    }
}

/// The shortest decimal digits that read back as |f| and where the decimal point goes: 1.5 is
/// ("15", 1), 0.001 is ("1", -2), 0 is ("0", 1). Rust and Go both pick the shortest, closest
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
    usize::try_from(i)
        .ok()
        .and_then(|i| digits.as_bytes().get(i))
        .map_or('0', |b| *b as char)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn negative_zero_keeps_its_sign_as_in_go() {
        assert_eq!(format_float(-0.0, FloatFormat::G), "-0");
        assert_eq!(format_float(-0.0, FloatFormat::E), "-0e+00");
    }
}
