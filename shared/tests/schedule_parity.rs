//! Differential tests of the duration and cron checks against the Go parsers Sveltos runs, from
//! their own test suites and from the cases measured against the real parsers in
//! `docs/reference/lint-parity.md` (classes D1, C1–C3):
//! - Go `time.ParseDuration`: `parseDurationTests` (value included) and
//!   `parseDurationErrorTests` of `src/time/time_test.go` (the valid-UTF-8 ones: a manifest
//!   cannot hold anything else);
//! - robfig/cron v1.2.0 `ParseStandard`: the ranges and fields of `parser_test.go`
//!   (`TestRange`, `TestField`, `TestParseSchedule`, `TestParseScheduleErrors`) written as
//!   five-field specs, with v1.2.0's verdict (`parser.go` of that version read line by line
//!   where its tests do not say).
//!
//! And what lint makes of them: a Go-valid duration never gets `duration-invalid`, a negative
//! one gets the `duration-negative` warning.

use promotion_shared::validation::{parse_cron_standard, parse_go_duration, validate};
use serde_json::json;

const NS: i128 = 1;
const US: i128 = 1_000;
const MS: i128 = 1_000_000;
const S: i128 = 1_000_000_000;
const M: i128 = 60 * S;
const H: i128 = 60 * M;

/// `parseDurationTests`, plus lint-parity.md D1 (negative durations Go accepts).
const GO_VALID: &[(&str, i128)] = &[
    ("0", 0),
    ("5s", 5 * S),
    ("30s", 30 * S),
    ("1478s", 1478 * S),
    ("-5s", -5 * S),
    ("+5s", 5 * S),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * S),
    ("5.6s", 5 * S + 600 * MS),
    ("5.s", 5 * S),
    (".5s", 500 * MS),
    ("1.0s", S),
    ("1.00s", S),
    ("1.004s", S + 4 * MS),
    ("1.0040s", S + 4 * MS),
    ("100.00100s", 100 * S + MS),
    ("10ns", 10 * NS),
    ("11us", 11 * US),
    ("12µs", 12 * US),
    ("12μs", 12 * US),
    ("13ms", 13 * MS),
    ("14s", 14 * S),
    ("15m", 15 * M),
    ("16h", 16 * H),
    ("3h30m", 3 * H + 30 * M),
    ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
    (
        "1h2m3s4ms5us6ns",
        H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
    ),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    ("52763797000ns", 52_763_797_000),
    ("0.3333333333333333333h", 20 * M),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)),
    ("-9223372036s854ms775us808ns", -(1 << 63)),
    ("-2562047h47m16.854775808s", -(1 << 63)),
    ("0.100000000000000000000h", 6 * M),
    ("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827),
    // lint-parity.md D1.
    ("-5m", -5 * M),
    ("-1ns", -1),
    ("-.5s", -500 * MS),
];

/// `parseDurationErrorTests` (valid UTF-8), plus lint-parity.md's agreeing rejections.
const GO_INVALID: &[&str] = &[
    "",
    "3",
    "-",
    "s",
    ".",
    "-.",
    ".s",
    "+.s",
    "1d",
    "\u{FFFD}",
    "\u{FFFD} hello \u{FFFD} world",
    "9223372036854775810ns",
    "9223372036854775808ns",
    "-9223372036854775809ns",
    "9223372036854776us",
    "3000000h",
    "9223372036854775.808us",
    "9223372036854ms775us808ns",
    "1h 2m",
    "5 m",
    " 5m",
    "5m ",
    "1w",
];

#[test]
fn durations_get_go_s_verdict_and_value() {
    for (input, want) in GO_VALID {
        assert_eq!(parse_go_duration(input), Ok(*want), "{input:?}");
    }
    for input in GO_INVALID {
        assert!(
            parse_go_duration(input).is_err(),
            "{input:?} is not a Go duration"
        );
    }
}

#[test]
fn go_messages_name_the_problem() {
    assert_eq!(
        parse_go_duration("5").unwrap_err(),
        "time: missing unit in duration \"5\""
    );
    assert!(parse_go_duration("1d")
        .unwrap_err()
        .starts_with("time: unknown unit \"d\" in duration \"1d\""));
    assert_eq!(
        parse_go_duration("3000000h").unwrap_err(),
        "time: invalid duration \"3000000h\""
    );
}

/// What lint reports for a delay: nothing for a Go duration, `duration-negative` (a warning)
/// for a negative one, `duration-invalid` for what Go refuses.
fn delay_codes(delay: &str) -> Vec<(&'static str, String)> {
    let object = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
        "metadata": {"name": "p"},
        "spec": {"stages": [
            {"name": "a", "clusterSelector": {"matchLabels": {"env": "a"}},
             "trigger": {"auto": {"delay": delay}}},
            {"name": "b", "clusterSelector": {"matchLabels": {"env": "b"}}}
        ]}
    });
    validate(&object)
        .into_iter()
        .map(|f| (f.code, f.severity.to_string()))
        .collect()
}

#[test]
fn lint_never_calls_a_go_duration_invalid() {
    for (input, want) in GO_VALID {
        let expected = if *want < 0 {
            vec![("duration-negative", "warning".to_string())]
        } else {
            vec![]
        };
        assert_eq!(delay_codes(input), expected, "{input:?}");
    }
    for input in GO_INVALID {
        assert_eq!(
            delay_codes(input),
            vec![("duration-invalid", "error".to_string())],
            "{input:?}"
        );
    }
}

/// robfig/cron v1.2.0 `ParseStandard` accepts these.
const CRON_VALID: &[&str] = &[
    // TestRange / TestField, in the minute field.
    "5 * * * *",
    "0 * * * *",
    "5-5 * * * *",
    "5-6 * * * *",
    "5-7 * * * *",
    "5-6/2 * * * *",
    "5-7/2 * * * *",
    "5-7/1 * * * *",
    "* * * * *",
    "*/2 * * * *",
    "5,6 * * * *",
    "5,6,7 * * * *",
    "1,5-7/2,3 * * * *",
    // TestParseSchedule (standard parser), descriptors, `?` in any field.
    "@every 5m",
    "@midnight",
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@hourly",
    "* * * * ?",
    "? ? ? ? ?",
    // Names, case-insensitive.
    "0 0 1 jan-dec sun-sat",
    "0 0 1 JAN,Jul *",
    "0 9 * * MON-FRI",
    // `*` ignores what follows a hyphen; `N/step` runs to the maximum; Atoi takes a sign.
    "*-5 * * * *",
    "*-5-6 * * * *",
    "30/15 * * * *",
    "+5 * * * *",
    "@every -5m",
    "@every 0",
    // Unicode white space separates fields, as in Go's strings.Fields.
    "0\u{a0}9 * * *",
    // lint-parity.md C1: empty list elements are dropped.
    ", * * * *",
    "1,,2 * * * *",
    "0 9 * * 1,",
    "0 9 * * ,1",
    "0 0 * * *,",
    // C3: steps are 64-bit.
    "*/4294967296 * * * *",
    "5/4294967296 * * * *",
    "*/9223372036854775807 * * * *",
    "*/4294967295 * * * *",
];

/// ... and refuses these.
const CRON_INVALID: &[&str] = &[
    // TestParseScheduleErrors.
    "* 5 j * *",
    "@every Xm",
    "@unrecognized",
    "* * * *",
    "",
    // Six fields (v1.2.0's ParseStandard knows no seconds and no TZ= prefix).
    "0 5 * * * *",
    "TZ=UTC 5 * * * *",
    "* * * * * * *",
    // Bounds and syntax.
    "60 * * * *",
    "* 24 * * *",
    "* * 0 * *",
    "* * * 13 *",
    "* * * * 7",
    "5-1 * * * *",
    "*/0 * * * *",
    "a * * * *",
    "* * * foo *",
    "1-2-3 * * * *",
    "1/2/3 * * * *",
    // A leading `-` splits off an empty low bound.
    "-1 * * * *",
    "-0 * * * *",
    "5/-1 * * * *",
    "9223372036854775808 * * * *",
    "*/9223372036854775808 * * * *",
    "@every",
    "@often",
    "@Daily",
    "@every 1d",
    // lint-parity.md C2: `@every ` hands the rest to ParseDuration untrimmed.
    "@every  5m",
    "@every 5m ",
    "@every 1h ",
    "@every 5m\n",
];

#[test]
fn cron_specs_get_robfig_v1_2_0_s_verdict() {
    for spec in CRON_VALID {
        assert_eq!(parse_cron_standard(spec), Ok(()), "{spec:?}");
    }
    for spec in CRON_INVALID {
        assert!(parse_cron_standard(spec).is_err(), "{spec:?} is refused");
    }
}
