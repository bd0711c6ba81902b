//! Go `time.ParseDuration` and robfig/cron v1.2.0 `ParseStandard`, ported step by step so that
//! lint gives the verdicts Sveltos gets at runtime (a typo fails at `kubectl apply`, not hours
//! later). The messages are ours (with hints); the verdicts are Go's, checked against Go's and
//! robfig/cron's own test tables and the cases of `lint-parity.md` (`shared/tests/schedule_parity.rs`).

use go_text::duration::parse_go_duration;

/// A non-negative Go duration as a [`std::time::Duration`], for command-line flags.
pub fn parse_std_duration(s: &str) -> Result<std::time::Duration, String> {
    let ns = parse_go_duration(s.trim())?;
    let ns = u64::try_from(ns).map_err(|_| format!("duration {s:?} must not be negative"))?;
    Ok(std::time::Duration::from_nanos(ns))
}

struct Bounds {
    name: &'static str,
    min: u64,
    max: u64,
    /// Names and the numbers they stand for (lower case).
    names: &'static [(&'static str, u64)],
}

const MONTHS: [(&str, u64); 12] = [
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DAYS: [(&str, u64); 7] = [
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

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
        // The rest goes to ParseDuration as is: `@every  5m` (two spaces) is an error.
        if let Some(d) = spec.strip_prefix("@every ") {
            return parse_go_duration(d)
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
        // `strings.FieldsFunc(field, ',')`: empty list elements are dropped, not errors.
        for part in field.split(',').filter(|p| !p.is_empty()) {
            parse_range(part, bounds)
                .map_err(|e| format!("{} field \"{field}\": {e}", bounds.name))?;
        }
    }
    Ok(())
}

/// `getRange`: `number | number "-" number [ "/" number ]`, `*` or `?` for the whole range.
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
            let step = parse_uint(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single {
                end = b.max;
            }
            step
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

fn int_or_name(s: &str, b: &Bounds) -> Result<u64, String> {
    let lower = s.to_lowercase();
    if let Some((_, n)) = b.names.iter().find(|(name, _)| *name == lower) {
        return Ok(*n);
    }
    parse_uint(s)
}

/// `mustParseInt`: Go `strconv.Atoi` (64-bit, optional sign), then no negatives.
fn parse_uint(s: &str) -> Result<u64, String> {
    match s.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {s}")),
        Ok(n) => Ok(n.unsigned_abs()),
        Err(_) => Err(format!("failed to parse int from {s:?}")),
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
            ", * * * *",
            "1,,2 * * * *",
            "*/4294967296 * * * *",
            "+5 * * * *",
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
            "@every  5m",
            "@every 5m ",
            "x * * * *",
        ] {
            assert!(
                parse_cron_standard(bad).is_err(),
                "{bad} should be rejected"
            );
        }
    }
}
