//! Go's text forms of numbers, durations and quoted strings, where Sveltos' output depends on them:
//! gopher-lua's `tostring` of a number, `encoding/json`'s float encoding, `time.Duration.String`
//! and `strconv.Quote` (the `%q` in "is not healthy %q").

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
    go_float_g(f)
}

/// `strconv.FormatFloat(f, 'g', -1, 64)` (what `%v` prints): shortest digits, exponent form when
/// the decimal exponent is below -4 or at least 6.
pub fn go_float_g(f: f64) -> String {
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
    let (digits, exp) = shortest(f);
    let neg = f.is_sign_negative() && f != 0.0;
    // strconv: with the shortest precision, `%e` is used when exp < -4 || exp >= 6.
    let x = exp - 1;
    let body = if !(-4..6).contains(&x) {
        exp_form(&digits, x)
    } else {
        fixed_form(&digits, exp)
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// `encoding/json` float64 encoding: `'f'` unless the magnitude is below 1e-6 or at least 1e21,
/// then `'e'` with a two-digit exponent trimmed as Go does (`1e-07`).
pub fn json_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (digits, exp) = shortest(f);
        let body = exp_form(&digits, exp - 1);
        return Some(if f < 0.0 { format!("-{body}") } else { body });
    }
    let (digits, exp) = shortest(f);
    let body = fixed_form(&digits, exp);
    Some(if f < 0.0 && f != 0.0 {
        format!("-{body}")
    } else {
        body
    })
}

/// Shortest round-trip decimal digits of |f| and the decimal point position (value =
/// 0.d1d2… × 10^exp).
fn shortest(f: f64) -> (String, i32) {
    if f == 0.0 {
        return ("0".into(), 1);
    }
    // Rust's `{:e}` is the shortest round-trip form: "1.2345e6".
    let text = format!("{:e}", f.abs());
    let (mantissa, e) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let e: i32 = e.parse().unwrap_or(0);
    (digits, e + 1)
}

fn exp_form(digits: &str, x: i32) -> String {
    let mut out = String::new();
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if x < 0 { '-' } else { '+' });
    let a = x.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
    out
}

fn fixed_form(digits: &str, exp: i32) -> String {
    if exp <= 0 {
        format!("0.{}{}", "0".repeat(exp.unsigned_abs() as usize), digits)
    } else if exp as usize >= digits.len() {
        format!("{}{}", digits, "0".repeat(exp as usize - digits.len()))
    } else {
        let (a, b) = digits.split_at(exp as usize);
        format!("{a}.{b}")
    }
}

/// Go `time.Duration.String()` for nanoseconds: `1h2m3s`, `1.5s`, `2ms`, `0s`.
pub fn duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let body = if u < 1_000_000_000 {
        let (unit, scale) = if u < 1_000 {
            ("ns", 1u64)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        format!("{}{unit}", fraction(u, scale))
    } else {
        let secs_total = u / 1_000_000_000;
        let frac_ns = u % 1_000_000_000;
        let h = secs_total / 3600;
        let m = (secs_total % 3600) / 60;
        let s = secs_total % 60;
        let seconds = fraction(s * 1_000_000_000 + frac_ns, 1_000_000_000);
        if h > 0 {
            format!("{h}h{m}m{seconds}s")
        } else if m > 0 {
            format!("{m}m{seconds}s")
        } else {
            format!("{seconds}s")
        }
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// `v/scale` with the remainder as decimals, trailing zeros dropped.
fn fraction(v: u64, scale: u64) -> String {
    let whole = v / scale;
    let rem = v % scale;
    if rem == 0 {
        return whole.to_string();
    }
    let width = scale.to_string().len() - 1;
    let decimals = format!("{rem:0width$}");
    format!("{whole}.{}", decimals.trim_end_matches('0'))
}

/// `strconv.Quote`: double quotes, Go escapes, printable Unicode kept, invalid UTF-8 as `\x..`.
pub fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    let mut rest = bytes;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                push_escaped(&mut out, s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                push_escaped(&mut out, std::str::from_utf8(good).unwrap_or(""));
                let n = e.error_len().unwrap_or(bad.len()).max(1);
                for b in &bad[..n] {
                    out.push_str(&format!("\\x{b:02x}"));
                }
                rest = &bad[n..];
            }
        }
    }
    out.push('"');
    out
}

fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
}

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
pub fn is_go_printable(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    if c == ' ' {
        return true;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_gopher_lua_prints_them() {
        assert_eq!(lua_number(3.0), "3");
        assert_eq!(lua_number(-0.0), "0");
        assert_eq!(lua_number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(lua_number(1e15), "1000000000000000");
        assert_eq!(lua_number(2f64.powi(53)), "9007199254740992");
        assert_eq!(lua_number(1.5), "1.5");
        assert_eq!(lua_number(1e21), "1e+21");
        assert_eq!(lua_number(1.5e-7), "1.5e-07");
        assert_eq!(lua_number(123456.5), "123456.5");
        assert_eq!(lua_number(1234567.5), "1.2345675e+06");
        assert_eq!(lua_number(f64::NAN), "NaN");
        assert_eq!(lua_number(f64::INFINITY), "+Inf");
    }

    #[test]
    fn json_floats_follow_encoding_json() {
        assert_eq!(json_float(3.0).unwrap(), "3");
        assert_eq!(json_float(0.5).unwrap(), "0.5");
        assert_eq!(json_float(1e21).unwrap(), "1e+21");
        assert_eq!(json_float(1e20).unwrap(), "100000000000000000000");
        assert_eq!(json_float(1e-7).unwrap(), "1e-07");
        assert_eq!(json_float(-2.5).unwrap(), "-2.5");
        assert!(json_float(f64::NAN).is_none());
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(90 * 1_000_000_000), "1m30s");
        assert_eq!(duration(3_723 * 1_000_000_000), "1h2m3s");
        assert_eq!(duration(1_500_000_000), "1.5s");
        assert_eq!(duration(2_000_000), "2ms");
        assert_eq!(duration(-5 * 1_000_000_000), "-5s");
    }

    #[test]
    fn quoting_matches_strconv_quote() {
        assert_eq!(quote(b"plain"), "\"plain\"");
        assert_eq!(quote(b"a \"b\"\n"), "\"a \\\"b\\\"\\n\"");
        assert_eq!(quote("é ✓".as_bytes()), "\"é ✓\"");
        assert_eq!(quote(b"\xff"), "\"\\xff\"");
        assert_eq!(quote("\u{200b}".as_bytes()), "\"\\u200b\"");
    }
}
