//! Go `time.ParseDuration` and robfig/cron v1.2.0 `ParseStandard`, reimplemented to give the
//! same verdicts Sveltos gets at runtime (so a typo fails at `kubectl apply`, not hours later).

/// Go `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`. Returns nanoseconds.
pub fn parse_go_duration(s: &str) -> Result<i128, String> {
    let quoted = format!("time: invalid duration \"{s}\"");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(quoted);
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let int_part = &rest[..int_end];
        rest = &rest[int_end..];
        let mut frac_part = "";
        if let Some(after) = rest.strip_prefix('.') {
            let frac_end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            frac_part = &after[..frac_end];
            rest = &after[frac_end..];
            if int_part.is_empty() && frac_part.is_empty() {
                return Err(quoted);
            }
        } else if int_part.is_empty() {
            return Err(quoted);
        }
        let unit_end = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(format!("time: missing unit in duration \"{s}\"")),
            other => {
                let hint = if other == "d" {
                    " (Go durations have no day unit: write 24h)"
                } else {
                    ""
                };
                return Err(format!(
                    "time: unknown unit \"{other}\" in duration \"{s}\"{hint}"
                ));
            }
        };
        let int_value: i128 = if int_part.is_empty() {
            0
        } else {
            int_part
                .get(..int_part.len().min(30))
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| quoted.clone())?
        };
        let mut value = int_value.checked_mul(scale).ok_or_else(|| quoted.clone())?;
        let mut frac_scale = scale;
        for d in frac_part.bytes().take(30) {
            frac_scale /= 10;
            value += i128::from(d - b'0') * frac_scale;
        }
        total = total.checked_add(value).ok_or_else(|| quoted.clone())?;
        if total > i128::from(i64::MAX) + i128::from(negative) {
            return Err(quoted);
        }
    }
    Ok(if negative { -total } else { total })
}

/// A non-negative Go duration as a [`std::time::Duration`], for command-line flags.
pub fn parse_std_duration(s: &str) -> Result<std::time::Duration, String> {
    let ns = parse_go_duration(s.trim())?;
    let ns = u64::try_from(ns).map_err(|_| format!("duration {s:?} must not be negative"))?;
    Ok(std::time::Duration::from_nanos(ns))
}

struct Bounds {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const FIELDS: [Bounds; 5] = [
    Bounds {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Bounds {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Bounds {
        name: "day of month",
        min: 1,
        max: 31,
        names: &[],
    },
    Bounds {
        name: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    Bounds {
        name: "day of week",
        min: 0,
        max: 6,
        names: &DAYS,
    },
];

const DESCRIPTORS: [&str; 7] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// robfig/cron v1.2.0 `ParseStandard`: five fields, or a descriptor.
pub fn parse_cron_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty cron expression".into());
    }
    if spec.starts_with('@') {
        if DESCRIPTORS.contains(&spec) {
            return Ok(());
        }
        if let Some(d) = spec.strip_prefix("@every ") {
            return parse_go_duration(d.trim())
                .map(|_| ())
                .map_err(|e| format!("failed to parse duration {spec}: {e}"));
        }
        return Err(format!(
            "unrecognized descriptor: {spec} (expected one of {} or @every <duration>)",
            DESCRIPTORS.join(", ")
        ));
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields (minute hour day-of-month month day-of-week), found {}: {spec}",
            fields.len()
        ));
    }
    for (field, bounds) in fields.iter().zip(FIELDS.iter()) {
        for part in field.split(',') {
            parse_range(part, bounds)
                .map_err(|e| format!("{} field \"{field}\": {e}", bounds.name))?;
        }
    }
    Ok(())
}

fn parse_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = int_or_name(low_high[0], b)?;
        let end = match low_high.len() {
            1 => start,
            2 => int_or_name(low_high[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            if single {
                end = b.max;
            }
            parse_uint(range_and_step[1])?
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({})",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!("end of range ({end}) above maximum ({})", b.max));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end})"
        ));
    }
    if step == 0 {
        return Err("step of range should be a positive number".into());
    }
    Ok(())
}

fn int_or_name(s: &str, b: &Bounds) -> Result<u32, String> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = b.names.iter().position(|n| *n == lower) {
        return Ok(i as u32 + if b.names.len() == 12 { 1 } else { 0 });
    }
    parse_uint(s)
}

fn parse_uint(s: &str) -> Result<u32, String> {
    match s.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {s}")),
        Ok(n) => u32::try_from(n).map_err(|_| format!("number out of range: {s}")),
        Err(_) => Err(format!("failed to parse int from {s}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("5m"), Ok(300_000_000_000));
        assert_eq!(parse_go_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_go_duration("1.5h"), Ok(5_400_000_000_000));
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration("-2s"), Ok(-2_000_000_000));
        assert_eq!(parse_go_duration(".5s"), Ok(500_000_000));
        assert!(parse_go_duration("300µs").is_ok());
        assert_eq!(parse_go_duration("1.h"), Ok(3_600_000_000_000));
        for bad in [
            "",
            "1d",
            "5",
            "m",
            ".s",
            "1h 2m",
            "5 m",
            "10x",
            "-",
            "9999999999999h",
        ] {
            assert!(parse_go_duration(bad).is_err(), "{bad} should be rejected");
        }
        assert!(parse_go_duration("1d").unwrap_err().contains("24h"));
    }

    #[test]
    fn cron_standard() {
        for ok in [
            "0 9 * * 1-5",
            "*/15 * * * *",
            "0 17 * * mon-fri",
            "0 0 1 jan,jul *",
            "5 4 * * sun",
            "0 9-17/2 * * *",
            "? * * * ?",
            "@daily",
            "@every 1h30m",
        ] {
            assert!(
                parse_cron_standard(ok).is_ok(),
                "{ok}: {:?}",
                parse_cron_standard(ok)
            );
        }
        for bad in [
            "",
            "61 * * * *",
            "0 24 * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
            "0 0 * * 7",
            "* * * *",
            "0 0 * * * *",
            "5-1 * * * *",
            "*/0 * * * *",
            "1-2-3 * * * *",
            "@fortnightly",
            "@every 1d",
            "x * * * *",
        ] {
            assert!(
                parse_cron_standard(bad).is_err(),
                "{bad} should be rejected"
            );
        }
    }
}
