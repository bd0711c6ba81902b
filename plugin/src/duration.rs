//! Go-style durations (`30s`, `5m`, `1h30m`, `250ms`), as kubectl's `--timeout` and
//! `--request-timeout` take them, plus kubectl's human ages (`45s`, `3m`, `5h`, `2d4h`). Used by
//! the flags of `cluster` and `commands` and by `render`, so it belongs to none of them.

use std::time::Duration;

/// Parse a Go duration (the engine's parser, so flags and manifests agree). A bare number is
/// seconds, as `--request-timeout=30` is in kubectl.
pub fn parse(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    promotion_shared::validation::parse_std_duration(s)
        .map_err(|e| format!("{e} (e.g. 30s, 5m, 1h30m)"))
}

/// clap value parser for duration flags.
pub fn parse_flag(text: &str) -> Result<Duration, String> {
    parse(text)
}

/// A timeout as the flags take it: `5m`, `1h`, `45s`, `1500ms`.
pub fn format(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_millis() != 0 && s < 10 {
        format!("{}ms", d.as_millis())
    } else if s.is_multiple_of(3600) && s > 0 {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) && s > 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// kubectl's `HumanDuration`: the age column format.
pub fn human(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    if secs < 0 {
        return "<invalid>".into();
    }
    let (m, h, day) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        let mm = m % 60;
        if mm == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{mm}m")
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        let hh = h % 24;
        if hh == 0 {
            format!("{day}d")
        } else {
            format!("{day}d{hh}h")
        }
    } else if h < 24 * 365 * 2 {
        format!("{day}d")
    } else if h < 24 * 365 * 8 {
        let y = day / 365;
        let dd = day % 365;
        if dd == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{dd}d")
        }
    } else {
        format!("{}y", day / 365)
    }
}

/// Age of an RFC 3339 timestamp relative to now (`-` when absent or unparsable).
pub fn age(rfc3339: Option<&str>, now: chrono::DateTime<chrono::Utc>) -> String {
    rfc3339
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| human(now.signed_duration_since(t)))
        .unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("45").unwrap(), Duration::from_secs(45));
        assert!(parse("5x").unwrap_err().contains("unknown unit"));
        assert!(parse("m").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn human_ages_match_kubectl() {
        let d = chrono::Duration::seconds;
        assert_eq!(human(d(45)), "45s");
        assert_eq!(human(d(150)), "2m30s");
        assert_eq!(human(d(3600)), "60m");
        assert_eq!(human(d(4 * 3600 + 120)), "4h2m");
        assert_eq!(human(d(30 * 3600)), "30h");
        assert_eq!(human(d(3 * 86400 + 3600)), "3d1h");
        assert_eq!(human(d(40 * 86400)), "40d");
        assert_eq!(human(d(-1)), "<invalid>");
    }
}
