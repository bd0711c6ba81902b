//! Go's `time.Duration` in text: `time.ParseDuration` and `Duration.String`.

/// Go `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`. Returns nanoseconds, in
/// `time.Duration`'s range (negative durations are valid Go durations).
pub fn parse_go_duration(s: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {}", quote(s));
    let mut rest = s;
    let mut negative = false;
    if let Some(c) = rest.chars().next() {
        if c == '-' || c == '+' {
            negative = c == '-';
            rest = &rest[1..];
        }
    }
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u64 = 1 << 63;
    let mut total: u64 = 0;
    while !rest.is_empty() {
        // The next character must be [0-9.].
        let first = rest.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let before = rest.len();
        let (mut value, after_int) = leading_int(rest).ok_or_else(invalid)?;
        rest = after_int;
        let digits_before_point = before != rest.len();
        let mut fraction = 0u64;
        let mut scale = 1f64;
        let mut digits_after_point = false;
        if let Some(after_point) = rest.strip_prefix('.') {
            let before = after_point.len();
            let (f, sc, after) = leading_fraction(after_point);
            fraction = f;
            scale = sc;
            rest = after;
            digits_after_point = before != rest.len();
        }
        if !digits_before_point && !digits_after_point {
            return Err(invalid());
        }
        let unit_end = rest
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        if unit_end == 0 {
            return Err(format!("time: missing unit in duration {}", quote(s)));
        }
        let unit_name = &rest[..unit_end];
        rest = &rest[unit_end..];
        let unit: u64 = match unit_name {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => {
                let hint = match other {
                    "d" => " (Go durations have no day unit: write 24h)",
                    "w" => " (Go durations have no week unit: write 168h)",
                    "sec" | "min" | "hr" | "hour" | "hours" | "mins" | "secs" => {
                        " (Go writes the units h, m, s, ms, us, ns)"
                    }
                    _ => "",
                };
                return Err(format!(
                    "time: unknown unit {} in duration {}{hint}",
                    quote(other),
                    quote(s)
                ));
            }
        };
        if value > LIMIT / unit {
            return Err(invalid());
        }
        value *= unit;
        if fraction > 0 {
            // Go computes this in float64 to stay nanosecond-accurate for fractions of hours.
            value += (fraction as f64 * (unit as f64 / scale)) as u64;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        // uint64 arithmetic, wrapping as Go's does.
        total = total.wrapping_add(value);
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        return Ok(-i128::from(total));
    }
    if total > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(i128::from(total))
}

/// Go `time.quote`: double quotes, `"` and `\\` escaped, and every non-ASCII or control
/// character as its UTF-8 bytes in `\xNN` form (not `strconv.Quote`).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut tmp = [0u8; 4];
            for b in c.encode_utf8(&mut tmp).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Go `leadingInt`: the leading digits, or `None` past 2^63.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let mut x: u64 = 0;
    let end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    for c in s[..end].bytes() {
        if x > (1u64 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > 1 << 63 {
            return None;
        }
    }
    Some((x, &s[end..]))
}

/// Go `leadingFraction`: digits after the point as `x / scale`, ignoring digits past
/// precision instead of failing.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let mut x: u64 = 0;
    let mut scale = 1f64;
    let mut overflow = false;
    let end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    for c in s[..end].bytes() {
        if overflow {
            continue;
        }
        if x > ((1u64 << 63) - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[end..])
}

/// Go `time.Duration.String()` of a duration in nanoseconds: `1h2m3s`, `1.5s`, `2ms`, `1.1µs`
/// (U+00B5), `0s`.
pub fn format(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let u = nanos.unsigned_abs();
    let body = if u < 1_000_000_000 {
        let (unit, scale) = if u < 1_000 {
            ("ns", 1u64)
        } else if u < 1_000_000 {
            ("\u{b5}s", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        format!("{}{unit}", fraction(u, scale))
    } else {
        let secs_total = u / 1_000_000_000;
        let frac_ns = u % 1_000_000_000;
        let (h, m, s) = (secs_total / 3600, (secs_total % 3600) / 60, secs_total % 60);
        let seconds = fraction(s * 1_000_000_000 + frac_ns, 1_000_000_000);
        if h > 0 {
            format!("{h}h{m}m{seconds}s")
        } else if m > 0 {
            format!("{m}m{seconds}s")
        } else {
            format!("{seconds}s")
        }
    };
    if nanos < 0 {
        format!("-{body}")
    } else {
        body
    }
}

/// `v/scale` with the remainder as decimals, trailing zeros dropped (Go's `fmtFrac` + `fmtInt`).
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
