//! `time.Duration.String` and `time.ParseDuration` against Go's own tables in
//! `src/time/time_test.go` (golang/go): `durationTests` (`TestDurationString`, negated rows
//! included), `parseDurationTests`, `parseDurationErrorTests` (the rows that are valid UTF-8: a
//! Rust `&str` cannot hold the others) and `TestParseDurationRoundTrip`'s extremes.

use go_text::duration::{format, parse_go_duration};

const NANOSECOND: i64 = 1;
const MICROSECOND: i64 = 1_000 * NANOSECOND;
const MILLISECOND: i64 = 1_000 * MICROSECOND;
const SECOND: i64 = 1_000 * MILLISECOND;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// `durationTests`: (str, d).
const DURATION_TESTS: &[(&str, i64)] = &[
    ("0s", 0),
    ("1ns", NANOSECOND),
    ("1.1µs", 1100 * NANOSECOND),
    ("2.2ms", 2200 * MICROSECOND),
    ("3.3s", 3300 * MILLISECOND),
    ("4m5s", 4 * MINUTE + 5 * SECOND),
    ("4m5.001s", 4 * MINUTE + 5001 * MILLISECOND),
    ("5h6m7.001s", 5 * HOUR + 6 * MINUTE + 7001 * MILLISECOND),
    ("8m0.000000001s", 8 * MINUTE + NANOSECOND),
    ("2562047h47m16.854775807s", i64::MAX),
    ("-2562047h47m16.854775808s", i64::MIN),
];

#[test]
fn duration_string_matches_go_duration_tests() {
    for (want, d) in DURATION_TESTS {
        assert_eq!(format(*d), *want, "Duration({d}).String()");
        if *d > 0 {
            assert_eq!(format(-d), format!("-{want}"), "Duration({}).String()", -d);
        }
    }
}

/// `parseDurationTests`: (in, want).
const PARSE_DURATION_TESTS: &[(&str, i64)] = &[
    // simple
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    // sign
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    // decimal
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600 * MILLISECOND),
    ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND),
    ("1.0s", SECOND),
    ("1.00s", SECOND),
    ("1.004s", SECOND + 4 * MILLISECOND),
    ("1.0040s", SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + MILLISECOND),
    // different units
    ("10ns", 10 * NANOSECOND),
    ("11us", 11 * MICROSECOND),
    ("12µs", 12 * MICROSECOND),
    ("12μs", 12 * MICROSECOND),
    ("13ms", 13 * MILLISECOND),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    // composite durations
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    (
        "1h2m3s4ms5us6ns",
        HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6 * NANOSECOND,
    ),
    (
        "39h9m14.425s",
        39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND,
    ),
    // large value
    ("52763797000ns", 52763797000 * NANOSECOND),
    // more than 9 digits after decimal point, see https://golang.org/issue/6617
    ("0.3333333333333333333h", 20 * MINUTE),
    // 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
    ("9007199254740993ns", ((1 << 53) + 1) * NANOSECOND),
    // largest duration that can be represented by int64 in nanoseconds
    ("9223372036854775807ns", i64::MAX),
    ("9223372036854775.807us", i64::MAX),
    ("9223372036s854ms775us807ns", i64::MAX),
    ("-9223372036854775808ns", i64::MIN),
    ("-9223372036854775.808us", i64::MIN),
    ("-9223372036s854ms775us808ns", i64::MIN),
    // largest negative value
    ("-9223372036854775808ns", i64::MIN),
    // largest negative round trip value, see https://golang.org/issue/48629
    ("-2562047h47m16.854775808s", i64::MIN),
    // huge string; issue 15011.
    ("0.100000000000000000000h", 6 * MINUTE),
    // This value tests the first overflow check in leadingFraction.
    (
        "0.830103483285477580700h",
        49 * MINUTE + 48 * SECOND + 372539827 * NANOSECOND,
    ),
];

#[test]
fn parse_duration_matches_go_parse_duration_tests() {
    for (input, want) in PARSE_DURATION_TESTS {
        assert_eq!(
            parse_go_duration(input),
            Ok(i128::from(*want)),
            "ParseDuration({input:?})"
        );
    }
}

/// `parseDurationErrorTests` that are valid UTF-8: (in, what the error contains).
const PARSE_DURATION_ERROR_TESTS: &[(&str, &str)] = &[
    // invalid
    ("", r#""""#),
    ("3", r#""3""#),
    ("-", r#""-""#),
    ("s", r#""s""#),
    (".", r#"".""#),
    ("-.", r#""-.""#),
    (".s", r#"".s""#),
    ("+.s", r#""+.s""#),
    ("1d", r#""1d""#),
    ("\u{FFFD}", r#""\xef\xbf\xbd""#),
    (
        "\u{FFFD} hello \u{FFFD} world",
        r#""\xef\xbf\xbd hello \xef\xbf\xbd world""#,
    ),
    // overflow
    ("9223372036854775810ns", r#""9223372036854775810ns""#),
    ("9223372036854775808ns", r#""9223372036854775808ns""#),
    ("-9223372036854775809ns", r#""-9223372036854775809ns""#),
    ("9223372036854776us", r#""9223372036854776us""#),
    ("3000000h", r#""3000000h""#),
    ("9223372036854775.808us", r#""9223372036854775.808us""#),
    (
        "9223372036854ms775us808ns",
        r#""9223372036854ms775us808ns""#,
    ),
];

#[test]
fn parse_duration_errors_match_go_parse_duration_error_tests() {
    for (input, expect) in PARSE_DURATION_ERROR_TESTS {
        match parse_go_duration(input) {
            Ok(d) => panic!("ParseDuration({input:?}) = {d}, want an error"),
            Err(e) => assert!(
                e.contains(expect),
                "ParseDuration({input:?}) = {e:?}, want {expect}"
            ),
        }
    }
}

#[test]
fn extremes_round_trip_as_test_parse_duration_round_trip() {
    for d in [i64::MAX, i64::MIN] {
        assert_eq!(parse_go_duration(&format(d)), Ok(i128::from(d)));
    }
}
