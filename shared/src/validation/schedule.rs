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

/// robfig/cron v1.2.0 `ParseStandard`: five fields, or a descriptor ([`crate::cron`] parses it).
pub fn parse_cron_standard(spec: &str) -> Result<(), String> {
    crate::cron::Schedule::parse(spec).map(|_| ())
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
